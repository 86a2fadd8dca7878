/*
 * auto.c - the default algorithm: a portfolio of every fast placer, the
 * best of them refined by local search, and (when the budget allows) Pesto's
 * ILP warm-started from it.  Beyond the papers: each of them returns one
 * algorithm's answer; users want the best placement they can get in the
 * time they have.
 *
 * Options: --budget-seconds B (default 10): total time; refinement gets
 * what the portfolio leaves, split with Pesto when B >= 60 s.
 * --no-refine, --no-ilp switch stages off.  The placement's algorithm name
 * records the winner, e.g. "auto:celeritas+refine".
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "opplace/refine.h"
#include "opplace/simulate.h"

typedef struct candidate {
    op_placement pl;
    double step, over;
    int have;
    char name[96];
} candidate;

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double overflow_of(const op_problem *p, const op_sim_result *r)
{
    double o = 0;
    for (int d = 0; d < p->nd; d++)
        if (r->peak_mem[d] > p->c->dev[d].memory_bytes)
            o += (double)(r->peak_mem[d] - p->c->dev[d].memory_bytes);
    return o;
}

static int beats(double step, double over, const candidate *best)
{
    if (!best->have)
        return 1;
    return over < best->over || (over == best->over && step < best->step);
}

/* Run one placer; keep its result if it beats the best so far. */
static op_status try_placer(const op_place_ctx *ctx, const op_placer *pl, op_sim *sim,
                            op_sim_result *r, candidate *best, op_error *err)
{
    op_place_ctx sub = *ctx;
    sub.best_effort = 1; /* the portfolio judges memory itself */
    sub.progress = 0;
    op_placement out;
    op_error perr = {0};
    if (op_place(pl, &sub, &out, &perr) != OP_OK) {
        if (perr.code == OP_ENOMEM)
            return op_fail(err, OP_ENOMEM, "%s", perr.msg);
        op_progress(ctx, "auto: %s failed: %s", pl->name, perr.msg);
        return OP_OK;
    }
    op_status st = op_sim_run(sim, &out, r, NULL, err);
    if (st) {
        op_placement_destroy(&out);
        return st;
    }
    double over = overflow_of(ctx->p, r);
    op_progress(ctx, "auto: %-12s %12.1f us%s", pl->name, r->step_time_us, over > 0 ? " (OOM)" : "");
    if (beats(r->step_time_us, over, best)) {
        if (best->have)
            op_placement_destroy(&best->pl);
        best->pl = out;
        best->step = r->step_time_us;
        best->over = over;
        best->have = 1;
        snprintf(best->name, sizeof best->name, "%s", pl->name);
    } else {
        op_placement_destroy(&out);
    }
    return OP_OK;
}

static op_status run_portfolio(const op_place_ctx *ctx, op_sim *sim, op_sim_result *r,
                               candidate *best, op_error *err)
{
    int n;
    const op_placer *const *all = op_placers(&n);
    for (int i = 0; i < n && !op_interrupted(); i++) {
        if (all[i]->slow || !strcmp(all[i]->name, "auto"))
            continue;
        op_status st = try_placer(ctx, all[i], sim, r, best, err);
        if (st)
            return st;
    }
    return best->have ? OP_OK : op_fail(err, OP_EINFEASIBLE, "auto: every placer failed");
}

static op_status run_ilp(const op_place_ctx *ctx, double seconds, op_sim *sim, op_sim_result *r,
                         candidate *best, op_error *err)
{
    const op_placer *pesto = op_placer_find("pesto");
    if (!pesto || seconds < 20)
        return OP_OK;
    char limit[32];
    snprintf(limit, sizeof limit, "%.0f", seconds);
    op_place_ctx sub = *ctx;
    sub.opts = op_options_new(err);
    if (!sub.opts)
        return OP_ENOMEM;
    op_options_set(sub.opts, "time-limit", limit, err);
    char before[96];
    snprintf(before, sizeof before, "%s", best->name);
    op_status st = try_placer(&sub, pesto, sim, r, best, err);
    op_options_free(sub.opts);
    if (!st && strcmp(before, best->name) != 0)
        snprintf(best->name, sizeof best->name, "pesto (warm start: %.60s)", before);
    return st;
}

static op_status place_auto(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    const op_problem *p = ctx->p;
    double t0 = seconds_now(), budget = ctx->budget_seconds > 0 ? ctx->budget_seconds : 10.0;
    int refine = !op_options_has(ctx->opts, "no-refine");
    int ilp = !op_options_has(ctx->opts, "no-ilp");
    candidate best = {0};
    op_sim_result r;
    op_sim *sim = op_sim_new(p, err);
    op_status st = sim ? op_sim_result_init(&r, p, err) : OP_ENOMEM;
    if (!st)
        st = run_portfolio(ctx, sim, &r, &best, err);
    double left = budget - (seconds_now() - t0);
    if (!st && ilp && budget >= 60 && left > 0) {
        st = run_ilp(ctx, left * 0.5, sim, &r, &best, err);
        left = budget - (seconds_now() - t0);
    }
    if (!st && refine && left > 0.05) {
        op_refine_opts ro = {.budget_seconds = left, .seed = ctx->seed, .max_units = 2000};
        op_refine_stats rs;
        double before = best.step;
        st = op_refine(ctx, &ro, &best.pl, &rs, err);
        if (!st && rs.final_us < before) {
            best.step = rs.final_us;
            strncat(best.name, "+refine", sizeof best.name - strlen(best.name) - 1);
        }
        op_progress(ctx, "auto: refine tried %ld, kept %ld: %.1f -> %.1f us", rs.tried,
                    rs.accepted, before, rs.final_us);
    }
    if (!st && best.over > 0 && !ctx->best_effort)
        st = op_fail(err, OP_EINFEASIBLE, "auto: no placement found that fits in memory "
                     "(use --best-effort to get the best one anyway)");
    if (!st) {
        char name[128];
        snprintf(name, sizeof name, "auto:%s", best.name);
        op_progress(ctx, "auto: winner %s, %.1f us, %.3f x the lower bound", best.name, best.step,
                    best.step / p->lower_bound_us);
        memcpy(out->device_of, best.pl.device_of, (size_t)p->n * sizeof(int));
        if (best.pl.has_order) {
            st = op_placement_alloc_order(out, err);
            if (!st) {
                memcpy(out->order_off, best.pl.order_off, ((size_t)p->nd + 1) * sizeof(int));
                memcpy(out->order, best.pl.order, (size_t)p->n * sizeof(int));
            }
        }
        if (!st)
            st = op_placement_set_algorithm(out, name, err);
    }
    if (best.have)
        op_placement_destroy(&best.pl);
    if (sim) {
        op_sim_result_destroy(&r);
        op_sim_free(sim);
    }
    return st;
}

const op_placer op_placer_auto = {
    .name = "auto",
    .summary = "portfolio of every fast placer, best one refined by local search "
               "(and Pesto's ILP when --budget-seconds >= 60)",
    .source = "opplace (beyond the papers)",
    .place = place_auto,
};
