/*
 * problem_util.h - internal: helpers on the cluster and the problem that
 * the library's layers use and a library user does not call (cluster.c,
 * problem.c).
 */
#ifndef OPPLACE_CORE_PROBLEM_UTIL_H
#define OPPLACE_CORE_PROBLEM_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "opplace/cluster.h"
#include "opplace/problem.h"

/* The mean link model over the ordered pairs s != d (zero for one device):
 * the communication estimate of the list-scheduling baselines and features. */
op_link_model op_cluster_mean_link(const op_cluster *c);
/* A channel's name: a named channel's own, else "src->dst"; written to buf. */
const char *op_cluster_chan_name(const op_cluster *c, int chan, char *buf, size_t cap);

/* Bytes resident on each device for the whole step (sum of param_bytes). */
void op_problem_param_bytes(const op_problem *p, const int *device_of, int64_t *out);

#endif
