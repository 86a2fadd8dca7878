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

#include "opplace/options.h"
#include "opplace/placement.h"
#include "opplace/problem.h"
#include "opplace/run_ctx.h" /* op_place_ctx, the clock, the deadline, Ctrl-C */

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

#endif
