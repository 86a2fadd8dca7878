/*
 * sim_util.h - internal: what the search layer reads of a simulated
 * placement beyond opplace/simulate.h (simulate.c).
 */
#ifndef OPPLACE_SIM_UTIL_H
#define OPPLACE_SIM_UTIL_H

#include <stdint.h>

#include "opplace/simulate.h"

/* The largest device peak memory of a simulated placement. */
int64_t op_sim_largest_peak(const op_problem *p, const op_sim_result *r);

#endif
