/*
 * opplace/placer.h - the one interface every placement algorithm implements.
 *
 * A placer gets the bound problem and its options and fills a placement
 * (device_of, and optionally a per-device order).  It must respect the hard
 * rules (eligibility, colocation, pins).  When it cannot fit the graph in
 * memory it returns OP_EINFEASIBLE unless ctx->best_effort is set, in which
 * case it returns its best placement anyway.  Reported step times always come
 * from the simulator, never from a placer's own estimate.
 *
 * Every placer is listed in the registry (src/placers/registry.c), which is
 * how the command line, the benchmark and the tests find them.
 */
#ifndef OPPLACE_PLACER_H
#define OPPLACE_PLACER_H

#include <stdint.h>

#include "opplace/options.h"
#include "opplace/placement.h"
#include "opplace/problem.h"

typedef struct op_place_ctx {
    const op_problem *p;
    op_options *opts;      /* algorithm-specific options, may be NULL */
    uint64_t seed;         /* --seed */
    double budget_seconds; /* --budget-seconds; <= 0 means the placer's default */
    double deadline;       /* absolute op_seconds_now() time by which the whole command must
                              end (set once by the caller from the budget); <= 0: none */
    int best_effort;       /* --best-effort: return a placement even if it does not fit */
    int progress;          /* print progress lines on stderr */
    int member;            /* run as a member of a portfolio, which runs the other placers
                              itself: a placer does not run other placers for comparison */
} op_place_ctx;

typedef op_status (*op_place_fn)(const op_place_ctx *ctx, op_placement *out, op_error *err);

typedef struct op_placer {
    const char *name;    /* --algo NAME */
    const char *summary; /* one line for `opplace algos` */
    const char *source;  /* paper / section it implements */
    op_place_fn place;
    int slow;            /* may take more than a few seconds (solvers, training):
                            the default run and quick benchmarks skip it */
    const op_opt_decl *options; /* the options it reads besides op_place_options
                                   (NULL: none); `place --algo NAME --help` prints them */
} op_placer;

/* The options every placement run accepts (--seed, --budget-seconds,
 * --best-effort, --order, --refine...): the finishing stage's and the
 * context's. */
extern const op_opt_decl op_place_options[];

/* Every registered placer, in display order. */
const op_placer *const *op_placers(int *count);
const op_placer *op_placer_find(const char *name);

/* Run a placer and check its output against the problem's hard rules. */
op_status op_place(const op_placer *pl, const op_place_ctx *ctx, op_placement *out,
                   op_error *err);

/* Cooperative interruption: set by the command's SIGINT handler; long-running
 * placers poll it and return their best result so far. */
int op_interrupted(void);
void op_set_interrupted(int on);

/* Seconds on a monotonic clock, for budgets and timings. */
double op_seconds_now(void);

/* Seconds left before ctx->deadline (a large number when there is none, 0
 * once it has passed or the run was interrupted).  Every long stage polls
 * this, so one deadline and one interrupt flag bound the whole command. */
double op_seconds_left(const op_place_ctx *ctx);

/* printf-style progress line on stderr, only when ctx->progress is set. */
void op_progress(const op_place_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* -------------------------------------------------------------- portfolio */

/* Run pl as a portfolio member: its default options, best effort, silent.
 * *placed = 0 when it could not place the graph (not an error; only
 * running out of memory is). */
op_status op_portfolio_run(const op_place_ctx *ctx, const op_placer *pl, op_placement *out,
                           int *placed, op_error *err);

/* What a run stopped before any answer (a deadline below what the graph
 * needs, Ctrl-C) still returns: the placement of the first of single and
 * round-robin that places the graph, run to its end whatever the deadline
 * or the interrupt (both take a few simulator runs).  *which: that placer. */
op_status op_portfolio_fallback(const op_place_ctx *ctx, op_placement *out,
                                const op_placer **which, op_error *err);

typedef struct op_portfolio_winner {
    char name[32]; /* the placer that won */
    double over, step; /* its overflow and step */
    int oom;
} op_portfolio_winner;

/* The best (plain ranking) of the comma-separated placers in names, e.g.
 * "expert,metis,m-topo,single", judged without their orders when
 * drop_order; its device_of into out (initialised for ctx->p).  who
 * prefixes the messages. */
op_status op_portfolio_best(const op_place_ctx *ctx, const char *names, int drop_order,
                            const char *who, op_placement *out, op_portfolio_winner *w,
                            op_error *err);

#endif
