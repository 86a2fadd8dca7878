/*
 * core/orders.h - node levels and topological orders shared by placers.
 *
 * Levels (Celeritas section 5.1.3, after Wang & Sinnen 2018), with w_i an
 * op's compute time and c_ij an edge's transfer time:
 *   tlevel(v) = 0 for a source, else max over preds p of tlevel(p) + w_p + c_pv
 *   blevel(v) = w_v for a sink,  else w_v + max over succs s of c_vs + blevel(s)
 *   cpath(v)  = tlevel(v) + blevel(v)   (the longest path through v)
 * op_levels_init takes w = the op's fastest eligible time at speed 1 (the
 * problem's `work`, as the CCR of core/stats.h) and c = the edge's bytes
 * on the reference link of core/stats.h (the mean over device pairs).
 *
 * Orders (each a sequence listing every op once, sources before sinks):
 *   DFS-TOPO (Celeritas 4.2.2)  a queue of ready ops; the head is emitted and
 *       the children it makes ready are pushed to the HEAD of the queue, so
 *       the order follows one chain as deep as it goes.  Initial queue and
 *       children: smallest op index first.
 *   CPD-TOPO (Celeritas 5.1.3, Algorithm 1 lines 6-21)  the same with cpath
 *       priorities: the initial queue sorted by decreasing cpath; a node's
 *       children sorted by increasing cpath and each ready one pushed to the
 *       head in turn, so the child with the largest cpath comes out next.
 *       Equal cpath: the smaller op index is treated as the larger cpath.
 * Both run in O(V + E log deg).
 */
#ifndef OPPLACE_ORDERS_H
#define OPPLACE_ORDERS_H

#include "opplace/graph.h"
#include "opplace/problem.h"

typedef struct op_levels {
    int n;
    double *w;       /* per op: compute time used */
    double *c;       /* per edge: transfer time used */
    double *tlevel, *blevel, *cpath; /* per op */
} op_levels;

/* Levels with the problem's costs (see above). */
op_status op_levels_init(op_levels *l, const op_problem *p, op_error *err);
/* Levels with given costs: w per op, c per edge (both copied). */
op_status op_levels_init_costs(op_levels *l, const op_graph *g, const double *w, const double *c,
                               op_error *err);
void op_levels_destroy(op_levels *l);
/* The arrays of l sized for g, costs not set (op_levels_compute after
 * filling w and c): for callers that recompute levels without allocating. */
op_status op_levels_alloc(op_levels *l, const op_graph *g, op_error *err);
/* tlevel, blevel and cpath of l from its w and c. */
void op_levels_compute(const op_graph *g, op_levels *l);

/* seq receives n ops; pos (optional, may be NULL) the position of each op. */
op_status op_order_dfs_topo(const op_graph *g, int *seq, int *pos, op_error *err);
op_status op_order_cpd_topo(const op_graph *g, const double *cpath, int *seq, int *pos,
                            op_error *err);

/* Is seq (n ops) a topological order of g that lists every op once? */
int op_order_is_topological(const op_graph *g, const int *seq);

#endif
