/*
 * lp.h - the one LP/ILP runner every exact method shares (the Pesto ILP of
 * pesto_ilp.c, Pesto's large-neighbourhood search, m-SCT's LP and the lower
 * bound of src/bound/): a column/row/triplet model builder and one way to
 * run CBC that ends at a deadline and at Ctrl-C.
 *
 * CBC 2.10's C interface has no callback that can stop a solve (its message
 * callback only sees printed messages, its cut callback cannot end the
 * search, and its own time limit is checked between nodes, so a root LP or
 * a heuristic can run far past it).  lp_solve therefore runs CBC in a
 * child process: the child solves and writes the best solution to a pipe;
 * the parent polls the deadline and op_interrupted() every 50 ms and kills
 * the child when either passes (a solve cut short that way returns no
 * solution; callers keep their incumbent).  CBC is given the same limit, so
 * a solve normally ends by itself with its best solution a little before.
 * While it waits, the parent may do other work (lp_solve_opts.idle).
 */
#ifndef OPPLACE_SOLVE_LP_H
#define OPPLACE_SOLVE_LP_H

#include <float.h>

#include "opplace/error.h"

#define LP_INF DBL_MAX /* CBC reads bounds at or beyond 1e30 as infinite */

typedef struct lp_model {
    int ncol, capcol;
    double *lb, *ub, *obj;
    char *isint;
    int nrow, caprow;
    double *rlb, *rub;
    long nnz, capnz;
    int *ti, *tj;
    double *tv;
    int oom;
} lp_model;

/* A new column; returns its index (0 and m->oom set when out of memory). */
int lp_col(lp_model *m, double lb, double ub, double obj, int is_int);
/* Append a term to the row being built; lp_row_end closes it with bounds. */
void lp_term(lp_model *m, int col, double v);
void lp_row_end(lp_model *m, double lo, double hi);
/* Drop the terms of the row being built. */
void lp_row_discard(lp_model *m);
void lp_free(lp_model *m);

enum { LP_NO_SOLUTION = 0, LP_FEASIBLE = 1, LP_OPTIMAL = 2, LP_INFEASIBLE = 3 };

typedef struct lp_solve_opts {
    double seconds;         /* CBC's limit (<= 0: none) */
    double deadline;        /* absolute op_seconds_now() time; <= 0: none */
    int relax;              /* 1: solve the LP relaxation only (integrality dropped) */
    int verbose;            /* CBC's log on stderr */
    int nstart;             /* MIP start: nstart (column, value) pairs */
    const int *start_cols;
    const double *start_vals;
    /* Non-NULL: the parent's work while the solver child runs, called once
     * per solve; it should return when answered(answered_arg) turns nonzero
     * (the child answered or exited, the deadline passed, or Ctrl-C). */
    void (*idle)(void *arg, int (*answered)(void *), void *answered_arg);
    void *idle_arg;
} lp_solve_opts;

typedef struct lp_solution {
    int status;      /* LP_* */
    int stopped;     /* the deadline or Ctrl-C ended the solve (the child was killed) */
    double objective, bound;
    double *x;       /* ncol values when status is FEASIBLE or OPTIMAL (caller frees) */
    double seconds;
} lp_solution;

/* Solve m (minimise) with CBC within the limits above. */
op_status lp_solve(const lp_model *m, const lp_solve_opts *o, lp_solution *s, op_error *err);

#endif
