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
    double window_seconds;      /* CBC's limit per window; 0: derived from the time left */
    double deadline;            /* absolute op_seconds_now() time to stop by */
    int max_windows;            /* stop after this many windows (0: only the deadline) */
    /* Optional work beside the search (pesto.c: refinement on the other
     * core).  idle runs while CBC solves a window (lp_solve_opts.idle);
     * after each window sync may replace *inc (simulated: step, over) by
     * a placement it ranks before it (kept: the window improved *inc).
     * arg is theirs. */
    void (*idle)(void *arg, int (*answered)(void *), void *answered_arg);
    op_status (*sync)(void *arg, op_placement *inc, double step, double over, int kept,
                      op_error *err);
    void *arg;
} pesto_lns_opts;

typedef struct pesto_lns_stats {
    int windows, improved, optimal, stopped; /* stopped: solves cut by deadline/Ctrl-C */
    int at_incumbent; /* solved to optimality, no better than the incumbent: proven there */
    int proven;                              /* the incumbent was proven optimal */
    int rejected; /* windows the model ranked better than the incumbent, the simulator not */
    double model_us, sim_us;                 /* last window: ILP objective, its candidate simulated */
    double first_step_us, step_us;           /* simulated, before and after */
} pesto_lns_stats;

/* The defaults: windows of 8..120 ops, CBC's time per window derived from
 * the time left (window_seconds 0), no cap on the number of windows. */
void pesto_lns_default_opts(pesto_lns_opts *o);

/* Simulate pl: per-op start and finish (either may be NULL), the step, the
 * bytes above capacity summed and the OOM flag (oom may be NULL). */
op_status pesto_simulate(const op_problem *p, op_sim *sim, const op_placement *pl, double *start,
                         double *finish, double *step_us, double *overflow, int *oom,
                         op_error *err);

/* Improve *inc (a placement of ctx->p; given an order if it has none) in
 * place; *step_us and *overflow are its simulated score, updated. */
op_status pesto_lns(const op_place_ctx *ctx, op_sim *sim, const pesto_lns_opts *o,
                    op_placement *inc, double *step_us, double *overflow, pesto_lns_stats *stats,
                    op_error *err);

#endif
