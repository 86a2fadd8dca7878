/*
 * exact.h - the exact solve of small graphs, which shares the lower bound's
 * ILP (bound.c): what auto tries first.
 */
#ifndef OPPLACE_BOUND_EXACT_H
#define OPPLACE_BOUND_EXACT_H

#include "opplace/placement.h"
#include "opplace/problem.h"

/* The whole problem exactly, for graphs of at most OP_EXACT_MAX_OPS ops
 * (opplace/bound.h): the bound's ILP (no memory rows, every transfer pair)
 * within `seconds`.  *found: CBC returned a schedule, and out holds it
 * (each device's ops in the order of their start times); *bound: what CBC
 * proved (0: nothing), rounded down as op_lower_bound's.  The simulator
 * judges out: its step is at least *bound and may be above the model's. */
op_status pesto_ilp_exact(const op_problem *p, double seconds, op_placement *out, int *found,
                          double *bound, op_error *err);

#endif
