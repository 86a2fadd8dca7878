/*
 * pesto_coarsen.h - Pesto's cycle-free batch coarsening (paper section 3.3),
 * callable directly by the Pesto placer and the tests.
 */
#ifndef OPPLACE_PESTO_COARSEN_H
#define OPPLACE_PESTO_COARSEN_H

#include "opplace/coarsen.h"

typedef struct pesto_coarsen_stats {
    int iterations;        /* batches merged */
    int merged;            /* pairs merged in all batches */
    int cycle_fallbacks;   /* batches the DAG check had to shrink (0 if Theorem 3.5 holds) */
} pesto_coarsen_stats;

/* Coarsen p's graph until at most target coarse ops remain or no edge is
 * feasible.  stats may be NULL.  The result always is a DAG. */
op_status pesto_coarsen(const op_problem *p, int target, op_coarse_map *out,
                        pesto_coarsen_stats *stats, op_error *err);

/* One batch on graph g (exposed for the tests): choose a matching of edges
 * satisfying Theorem 3.5, highest communication time first, stopping when
 * n_ops - merges reaches target.  mask[v]: bitset of devices v may use (its
 * eligibility), merged pairs must share a device.  Writes pair partners to
 * mate[] (-1: unmatched) and returns the number of pairs. */
int pesto_select_batch(const op_graph *g, const double *edge_cost, const uint64_t *mask,
                       int target, int *height, int *mate, int *order_scratch);

#endif
