/*
 * portfolio.h - internal: placers that run other placers (auto, celeritas,
 * SGDP's warm start) do it through portfolio.c.
 */
#ifndef OPPLACE_PLACERS_PORTFOLIO_H
#define OPPLACE_PLACERS_PORTFOLIO_H

#include "opplace/placer.h"

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
