/*
 * core/stats.h - summary numbers of a problem, as `opplace info` prints
 * them and the benchmark tables report them.
 */
#ifndef OPPLACE_STATS_H
#define OPPLACE_STATS_H

#include <stdint.h>

#include "opplace/problem.h"

typedef struct op_graph_stats {
    int n_ops, n_edges, n_layers, n_groups, n_kinds;
    double total_work_us;     /* sum over ops of the fastest eligible time at speed 1 */
    double critical_path_us;  /* longest path of fastest execution times */
    double lower_bound_us;
    double total_comm_us;     /* sum over edges of the transfer time on the reference link */
    double ccr;               /* Celeritas eq. (1): total_comm_us / total_work_us */
    int64_t param_bytes, output_bytes, temp_bytes, edge_bytes;
    double ref_latency_us, ref_us_per_byte; /* the reference link used for CCR */
} op_graph_stats;

/* The reference link is the mean over the cluster's ordered device pairs
 * (a cluster of one device uses its default link, or zero). */
void op_graph_stats_compute(const op_problem *p, op_graph_stats *s);

#endif
