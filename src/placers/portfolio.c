/*
 * portfolio.c - run several placers on one problem and keep the best
 * (opplace/placer.h): the member runner auto's portfolio uses, and the
 * best-of-a-list that SGDP and Trinity take their reference from.
 */
#include <stdio.h>
#include <string.h>

#include "opplace/placer.h"
#include "opplace/simulate.h"

op_status op_portfolio_run(const op_place_ctx *ctx, const op_placer *pl, op_placement *out,
                           int *placed, op_error *err)
{
    op_place_ctx sub = *ctx;
    sub.opts = NULL;     /* each member with its defaults */
    sub.best_effort = 1; /* the portfolio judges memory itself */
    sub.progress = 0;
    sub.member = 1;      /* the portfolio runs the others itself */
    op_error perr = {0};
    double t0 = op_seconds_now();
    *placed = 0;
    if (op_place(pl, &sub, out, &perr) != OP_OK) {
        if (perr.code == OP_ENOMEM)
            return op_fail(err, OP_ENOMEM, "%s", perr.msg);
        op_progress(ctx, "%s failed: %s", pl->name, perr.msg);
        return OP_OK;
    }
    op_progress(ctx, "%s placed in %.2f s", pl->name, op_seconds_now() - t0);
    *placed = 1;
    return OP_OK;
}

/* The next name of the comma-separated list *s into name; 0 at the end. */
static int next_name(const char **s, char *name, size_t cap, const char *who, op_error *err,
                     op_status *st)
{
    while (**s) {
        size_t len = strcspn(*s, ",");
        if (len >= cap) {
            *st = op_fail(err, OP_EUSAGE, "%s: placer name too long in '%s'", who, *s);
            return 0;
        }
        memcpy(name, *s, len);
        name[len] = '\0';
        *s += len + ((*s)[len] == ',');
        if (len)
            return 1;
    }
    return 0;
}

op_status op_portfolio_best(const op_place_ctx *ctx, const char *names, int drop_order,
                            const char *who, op_placement *out, op_portfolio_winner *w,
                            op_error *err)
{
    const op_problem *p = ctx->p;
    memset(w, 0, sizeof *w);
    if (!names || !*names)
        return op_fail(err, OP_EUSAGE, "%s: no placer to take the reference from", who);
    op_sim *sim = op_sim_new(p, err);
    if (!sim)
        return err && err->code ? err->code : OP_ENOMEM;
    op_sim_result r;
    op_status st = op_sim_result_init(&r, p, err);
    if (st) {
        op_sim_free(sim);
        return st;
    }
    int found = 0;
    char name[64];
    const char *s = names;
    while (!st && next_name(&s, name, sizeof name, who, err, &st)) {
        const op_placer *placer = op_placer_find(name);
        if (!placer) {
            st = op_fail(err, OP_EUSAGE, "%s: unknown heuristic placer '%s'", who, name);
            break;
        }
        op_placement pl; /* op_place initialises it, and destroys it on failure */
        int placed;
        if ((st = op_portfolio_run(ctx, placer, &pl, &placed, err)) || !placed)
            continue; /* a placer that cannot place this graph is skipped */
        if (drop_order)
            op_placement_drop_order(&pl);
        if (!(st = op_sim_run(sim, &pl, &r, NULL, err))) {
            double over = op_sim_overflow_bytes(p, &r), step = r.step_time_us;
            if (!found || op_sim_ranks_before(over, step, w->over, w->step)) {
                memcpy(out->device_of, pl.device_of, (size_t)p->n * sizeof(int));
                w->over = over, w->step = step;
                w->oom = r.oom;
                snprintf(w->name, sizeof w->name, "%.31s", name);
                found = 1;
            }
        }
        op_placement_destroy(&pl);
    }
    if (!st && !found)
        st = op_fail(err, OP_EINFEASIBLE, "%s: none of the heuristics '%s' placed the graph", who,
                     names);
    op_sim_result_destroy(&r);
    op_sim_free(sim);
    return st;
}
