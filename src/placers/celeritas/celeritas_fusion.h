/*
 * celeritas_fusion.h - Optimal Operation Fusion (Celeritas section 5.1,
 * Algorithm 1), exposed for the placers and the tests.
 *
 * The registered coarsener "celeritas" (op_coarsener_celeritas) reads
 * --fusion-range R (default 200) and --target N; M is fixed at a quarter of
 * the smallest device memory, the paper's "M = 0.25*" (the former
 * --fusion-memory: no test, script or benchmark set it)
 * (when given without --fusion-range, R = ceil(n / N)).
 */
#ifndef OPPLACE_CELERITAS_FUSION_H
#define OPPLACE_CELERITAS_FUSION_H

#include <stdint.h>

#include "coarsen/coarsen.h"

extern const op_coarsener op_coarsener_celeritas;

/* Memory an op holds in the Celeritas accounting: param + output + temp. */
static inline int64_t cel_op_memory(const op_graph *g, int v)
{
    return g->param_bytes[v] + g->output_bytes[v] + g->temp_bytes[v];
}

/* OPTIMAL_BP (eqs. 4-6): cut seq[0..n) into contiguous segments of at most
 * `range` ops whose op_mem sum is <= mem_limit (a single op may exceed it),
 * minimizing the summed edge_cost of edges that leave a segment.  seq must be
 * a topological order of g.  elig (optional): per op, `words` 64-bit words of
 * the devices it may use; a segment's ops must share a device.  coloc
 * (optional): per op, its colocation group or OP_NONE; a segment holds at
 * most one group.  Fills
 * group_of[op] with the segment index (0.. in sequence order), *n_groups and
 * *cut_cost (S(v_n)). */
op_status cel_optimal_breakpoints(const op_graph *g, const int *seq, const double *edge_cost,
                                  const int64_t *op_mem, int64_t mem_limit, int range,
                                  const uint64_t *elig, int words, const int *coloc,
                                  int *group_of, int *n_groups, double *cut_cost, op_error *err);

typedef struct cel_fusion_opts {
    int range;         /* R */
    int64_t mem_limit; /* M */
} cel_fusion_opts;

/* Read R and M from opts (defaults above); p gives n and device memory. */
op_status cel_fusion_read_opts(const op_problem *p, op_options *opts, cel_fusion_opts *fo,
                               op_error *err);

/* Algorithm 1 on p's graph: CPD-TOPO, OPTIMAL_BP, op_coarse_build; fails
 * with OP_EINTERNAL if the coarse graph is not a DAG (it always is). */
op_status cel_fuse(const op_problem *p, const cel_fusion_opts *fo, op_coarse_map *out,
                   op_error *err);

#endif
