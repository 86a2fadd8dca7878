/*
 * pesto_coarsen.h - Pesto's cycle-free coarsening (paper section 3.3) with a
 * policy that keeps the graph's parallelism, callable directly by the Pesto
 * placer and the tests.
 */
#ifndef OPPLACE_PESTO_COARSEN_H
#define OPPLACE_PESTO_COARSEN_H

#include "coarsen/coarsen.h"

typedef struct pesto_coarsen_stats {
    int iterations;        /* batches merged */
    int merged;            /* pairs merged in all batches */
    int cycle_fallbacks;   /* batches the DAG check had to shrink (0 if the batch rules hold) */
    double cp_slack;       /* the critical-path slack the guard ended at */
} pesto_coarsen_stats;

/* Critical-path guard (pesto_coarsen.c): a merge may make the longest
 * compute path through the merged vertex at most (1 + slack) times the
 * original graph's compute critical path; slack starts here and grows only
 * when the rounds stall.  Negative: no guard (the paper's coarsening). */
#define PESTO_DEFAULT_CP_SLACK 0.0
#define PESTO_CP_SLACK_OFF 1e6 /* beyond this the guard never binds: stop relaxing it */

/* Coarsen p's graph until at most target coarse ops remain or no pair is
 * feasible.  stats may be NULL.  The result always is a DAG. */
op_status pesto_coarsen(const op_problem *p, int target, op_coarse_map *out,
                        pesto_coarsen_stats *stats, op_error *err);

/* pesto_coarsen with an explicit initial critical-path slack (negative:
 * off) and optional per-op labels (NULL: none): only ops with equal labels
 * merge. */
op_status pesto_coarsen_ex(const op_problem *p, int target, double cp_slack, const int *label,
                           op_coarse_map *out, pesto_coarsen_stats *stats, op_error *err);

/* A topological order of m's coarse graph that follows a fine schedule:
 * when[i] is original op i's start (or its position in a fine order);
 * Kahn's algorithm takes, among the ready coarse ops, the one whose
 * earliest member starts first (ties: smaller coarse id).  seq gets
 * m->coarse->n_ops entries. */
op_status pesto_project_order(const op_coarse_map *m, const double *when, int *seq, op_error *err);

/* The simulator's cost of each coarse edge U -> V (formats.md 5 rule 3):
 * xfer_count[e] = distinct source ops u in U with a consumer in V,
 * xfer_bytes[e] = sum over them of the largest bytes from u into V, so the
 * edge takes xfer_count * latency + xfer_bytes * us_per_byte on a link.
 * Arrays are indexed by the coarse graph's edge ids. */
op_status pesto_coarse_comm(const op_graph *orig, const op_coarse_map *m, int *xfer_count,
                            int64_t *xfer_bytes, op_error *err);

#endif
