/*
 * opplace/run_ctx.h - the context of one run: the problem, its options and
 * seed, the clock, the one deadline, the Ctrl-C flag and progress lines.
 *
 * Every long stage (placers, the search layer, the solvers, the learned
 * placers' training) takes an op_place_ctx and polls op_seconds_left, so
 * one deadline and one interrupt flag bound the whole command.  The
 * functions live in src/core/run_ctx.c.
 */
#ifndef OPPLACE_RUN_CTX_H
#define OPPLACE_RUN_CTX_H

#include <stdint.h>

#include "opplace/options.h"
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

#endif
