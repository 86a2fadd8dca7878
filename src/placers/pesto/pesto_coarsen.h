/*
 * pesto_coarsen.h - Pesto's cycle-free batch coarsening (paper section 3.3),
 * callable directly by the Pesto placer and the tests.
 */
#ifndef OPPLACE_PESTO_COARSEN_H
#define OPPLACE_PESTO_COARSEN_H

#include "coarsen/coarsen.h"

typedef struct pesto_coarsen_stats {
    int iterations;        /* batches merged */
    int merged;            /* pairs merged in all batches */
    int cycle_fallbacks;   /* batches the DAG check had to shrink (0 if Theorem 3.5 holds) */
    double cp_slack;       /* the critical-path slack the guard ended at */
} pesto_coarsen_stats;

/* Critical-path guard (pesto_coarsen.c): a merge may lengthen the compute
 * critical path to at most (1 + slack) times the original's; slack doubles
 * when no edge qualifies.  Negative: no guard (the paper's coarsening). */
#define PESTO_DEFAULT_CP_SLACK 0.1
#define PESTO_CP_SLACK_OFF 1e6 /* beyond this the guard never binds: stop relaxing it */

/* Coarsen p's graph until at most target coarse ops remain or no edge is
 * feasible.  stats may be NULL.  The result always is a DAG. */
op_status pesto_coarsen(const op_problem *p, int target, op_coarse_map *out,
                        pesto_coarsen_stats *stats, op_error *err);

/* pesto_coarsen with an explicit critical-path slack (negative: off) and
 * optional per-op labels (NULL: none): only ops with equal labels merge. */
op_status pesto_coarsen_ex(const op_problem *p, int target, double cp_slack, const int *label,
                           op_coarse_map *out, pesto_coarsen_stats *stats, op_error *err);

/* The simulator's cost of each coarse edge U -> V (formats.md 5 rule 3):
 * xfer_count[e] = distinct source ops u in U with a consumer in V,
 * xfer_bytes[e] = sum over them of the largest bytes from u into V, so the
 * edge takes xfer_count * latency + xfer_bytes * us_per_byte on a link.
 * Arrays are indexed by the coarse graph's edge ids. */
op_status pesto_coarse_comm(const op_graph *orig, const op_coarse_map *m, int *xfer_count,
                            int64_t *xfer_bytes, op_error *err);

/* One batch on graph g (exposed for the tests): choose a matching of edges
 * satisfying Theorem 3.5, highest communication time first, stopping when
 * n_ops - merges reaches target.  mask[v]: bitset of devices v may use (its
 * eligibility), merged pairs must share a device.  work: per vertex compute,
 * or NULL to never merge vertices of two different colocation groups; with
 * it, a merge may unite groups (or add an ungrouped vertex to one) while the
 * group's summed compute stays within group_cap.  Writes pair partners to
 * mate[] (-1: unmatched) and returns the number of pairs. */
int pesto_select_batch(const op_graph *g, const double *edge_cost, const uint64_t *mask,
                       const double *work, double group_cap, int target, int *height, int *mate,
                       int *order_scratch);

#endif
