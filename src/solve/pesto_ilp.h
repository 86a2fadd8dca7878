/*
 * pesto_ilp.h - the Pesto ILP (Hafeez et al., Middleware '21, section
 * 3.2.2): joint placement and scheduling of a (coarse) graph, solved with
 * COIN-OR CBC through lp.h.  Used by the pesto placer (src/placers/pesto/),
 * the lower bound and the exact solve of small graphs (src/bound/) and the
 * tests; see pesto_ilp.c for the model and pesto_ilp_eval.c for the
 * makespan of a fixed placement and order in it.
 */
#ifndef OPPLACE_PESTO_ILP_H
#define OPPLACE_PESTO_ILP_H

#include "opplace/placement.h"
#include "opplace/run_ctx.h"

typedef struct pesto_ilp_opts {
    double time_limit_s;  /* CBC's wall-clock limit */
    double deadline;      /* absolute op_seconds_now() time the solve must end by (0: none);
                             the solve also ends at Ctrl-C (lp.h) */
    int congestion;       /* channel non-overlap (constraint 7); 0 = the paper's Fig. 5a */
    int memory_cap;       /* 1: sum of param_bytes <= memory_bytes per device (sound: params
                             are resident all step; the rest of the peak is the
                             simulator's to judge); 0: none */
    int symmetry;         /* 1: symmetry-breaking rows for identical devices (default) */
    double balance;       /* < 0 off; else footprint per device <= (1 + balance) * total / nd */
    long max_xfer_pairs;  /* cap on congestion pairs (a relaxation past it); 0 = none */
    long max_binaries;    /* larger models are not handed to CBC (no solution); 0 = none */
    int verbose;          /* CBC log on stdout (debugging only) */
    /* Communication model per edge of p->g (both NULL: one transfer of
     * edge_bytes per edge).  For a coarse graph, pesto_coarse_comm's
     * counts and bytes: edge e from s to t lasts
     * xfer_count[e] * latency(s,t) + xfer_bytes[e] * us_per_byte(s,t). */
    const int *xfer_count;
    const int64_t *xfer_bytes;
} pesto_ilp_opts;

/* Length of edge e's transfer from device s to device t in the model. */
double pesto_xfer_us(const op_problem *p, const pesto_ilp_opts *o, int e, int s, int t);

void pesto_ilp_default_opts(pesto_ilp_opts *o);

enum { PESTO_NO_SOLUTION = 0, PESTO_FEASIBLE = 1, PESTO_OPTIMAL = 2, PESTO_INFEASIBLE = 3 };

typedef struct pesto_ilp_result {
    int status;             /* PESTO_* */
    double objective;       /* incumbent makespan in the ILP's model, microseconds */
    double bound;           /* CBC's best bound: no schedule of the model is shorter */
    double gap;             /* (objective - bound) / objective */
    double horizon;         /* M: the upper bound every time variable is kept under */
    int *device_of;         /* per op */
    double *start;          /* per op: S_i */
    int n_cols, n_rows, n_binaries;
    long op_pairs, xfer_pairs, xfer_pairs_dropped;
    double seconds;
    int stopped;            /* the deadline or Ctrl-C cut the solve short */
    long symmetry_rows;     /* symmetry-breaking rows added (0: no identical devices) */
} pesto_ilp_result;

/* Build and solve the ILP for problem p (every op of p is one ILP vertex).
 * warm (may be NULL) is a placement with a per-device order: it becomes
 * CBC's MIP start and its makespan in the model tightens M.  warm_finish
 * (may be NULL) gives each op's finish time in the simulator, used to order
 * the warm start's transfers on each channel first come first served. */
op_status pesto_ilp_solve(const op_problem *p, const pesto_ilp_opts *o, const op_placement *warm,
                          const double *warm_finish, const op_place_ctx *ctx,
                          pesto_ilp_result *r, op_error *err);
void pesto_ilp_result_destroy(pesto_ilp_result *r);

/* Does device_of meet the ILP's memory rows (capacity and balance)? */
int pesto_ilp_memory_ok(const op_problem *p, const int *device_of, const pesto_ilp_opts *o);

/* The result as a placement with a per-device order (by start time, ties
 * by topological position). */
op_status pesto_ilp_to_placement(const op_problem *p, const pesto_ilp_result *r,
                                 op_placement *out, op_error *err);

/* Makespan of a placement with an order in the ILP's model (o may be
 * NULL: one transfer per edge of its bytes; else o's communication model; FIFO channels in the order of finish_hint, transfers from one
 * source allowed to overlap).  start_op (may be NULL) receives S_i. Returns
 * a negative makespan if the orders are inconsistent (a cycle). */
double pesto_model_makespan(const op_problem *p, const pesto_ilp_opts *o, const op_placement *pl,
                            const double *finish_hint, double *start_op, double *start_xfer,
                            op_error *err);

#endif
