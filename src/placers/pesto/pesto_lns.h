/*
 * pesto_lns.h - large-neighbourhood search with Pesto's ILP on the original
 * (fine) graph: around an incumbent placement, free a window of ops on the
 * critical path of its simulated schedule, fix the rest, solve the window's
 * placement and order exactly with CBC warm-started from the incumbent, and
 * keep the result when the simulator says the step is faster.  See
 * pesto_lns.c for the window model.
 */
#ifndef OPPLACE_PESTO_LNS_H
#define OPPLACE_PESTO_LNS_H

#include "opplace/placer.h"
#include "opplace/simulate.h"

typedef struct pesto_lns_opts {
    int min_window, max_window; /* ops freed per window (start: max / 2, adapted) */
    double window_seconds;      /* CBC's limit per window */
    double deadline;            /* absolute op_seconds_now() time to stop by */
    int max_windows;            /* stop after this many windows (0: only the deadline) */
} pesto_lns_opts;

typedef struct pesto_lns_stats {
    int windows, improved, optimal, stopped; /* stopped: solves cut by deadline/Ctrl-C */
    double first_step_us, step_us;           /* simulated, before and after */
} pesto_lns_stats;

/* Improve *inc (a placement of ctx->p; given an order if it has none) in
 * place; *step_us and *overflow are its simulated score, updated. */
op_status pesto_lns(const op_place_ctx *ctx, op_sim *sim, const pesto_lns_opts *o,
                    op_placement *inc, double *step_us, double *overflow, pesto_lns_stats *stats,
                    op_error *err);

#endif
