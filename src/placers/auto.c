/*
 * auto.c - the default algorithm: a portfolio of every fast placer, the
 * best of them refined by local search.  Beyond the papers: each of them returns one
 * algorithm's answer; users want the best placement they can get in the
 * time they have.
 *
 * Options: --budget-seconds B (default 10): total time; refinement gets
 * what the portfolio leaves.  The portfolio
 * runs every fast placer unless the budget runs out first (only on graphs of
 * hundreds of thousands of ops): then the remaining placers are skipped.
 * Execution orders (opplace/search.h): each placer's result, while the
 * first half of the budget lasts, is also tried with its best priority
 * execution order.  Refinement then starts from the better of the best
 * ordered placement, judging candidates by that order's list schedule
 * (opplace/search.h), and the best placement as placed, judged
 * first-ready-first; the refined placement gets its best order again at
 * the end, and the result is the better of it and the other finalist.
 * Done when proven: graphs of at most OP_EXACT_MAX_OPS ops are solved
 * exactly before any search (the bound's ILP, opplace/bound.h, in at most a
 * quarter of what the portfolio leaves, after the portfolio's milliseconds;
 * "auto:exact" when its schedule wins), and every stage stops as soon as
 * the best placement fits and reaches the proven lower bound
 * (p->proven_bound_us, or the exact stage's own): nothing is faster.
 * --refine-seconds X caps refinement's time (0 skips it; the former
 * --no-refine) and --order none switches the order stage off.  The placement's
 * algorithm name records the winner, e.g. "auto:expert+order" or
 * "auto:celeritas+refine+order".
 *
 * Under MPI (core/parallel.h) placer i of the portfolio runs on rank
 * i mod N, and refinement runs independent streams (stream k uses
 * seed + k) spread over the ranks: one per rank when refinement is bounded
 * by time, one in all when it is bounded by --refine-iters (an answer that
 * does not depend on the rank count; time-bounded it depends on speed
 * anyway).  The winner is chosen by (memory overflow, step time, index) on
 * every rank and copied from its owner.  The portfolio's result does not
 * depend on the rank count.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bound/exact.h"
#include "core/parallel.h"
#include "opplace/bound.h"
#include "opplace/placer.h"
#include "opplace/search.h"
#include "opplace/simulate.h"
#include "placers/portfolio.h"
#include "search/search_internal.h"

typedef struct candidate {
    op_placement pl;
    double step, over;
    int have;
    int n_ops, n_dev;       /* for ranks that receive a placement */
    op_reorder_stats order; /* the order stage's stats of this placement as placed
                             * (priority FIFO: no order kept, or not run) */
    op_judged fifo;         /* it judged first-ready-first (without its own order) */
    char name[64];          /* the placer */
    op_stages stages;       /* what auto did to it since (opplace/search.h) */
} candidate;

static int beats(double step, double over, const candidate *best)
{
    if (!best->have)
        return 1;
    return op_sim_ranks_before(over, step, best->over, best->step);
}

/* Keep pl (consumed) in c if it ranks before what c holds.  Returns 1
 * when kept. */
static int offer(candidate *c, op_placement *pl, double step, double over, const char *name,
                 int ordered)
{
    if (!beats(step, over, c)) {
        op_placement_destroy(pl);
        return 0;
    }
    if (c->have)
        op_placement_destroy(&c->pl);
    c->pl = *pl;
    c->step = step;
    c->over = over;
    c->have = 1;
    snprintf(c->name, sizeof c->name, "%s", name);
    c->stages = (op_stages){{0}};
    if (ordered)
        op_stages_add(&c->stages, 'o');
    return 1;
}

/* The two best placements so far: as the placers returned them (refinement
 * starts from this one: it judges placements by first-ready-first), and
 * with their best execution order (opplace/search.h).  Indexes order the
 * candidates for the MPI election. */
typedef struct finalists {
    candidate plain, ordered;
    double plain_index, ordered_index;
} finalists;

/* Offer a placer's result to both finalists; with reorder, the ordered one
 * gets a copy with its best execution order, screened until `until` (<= 0:
 * no limit). */
static op_status offer_result(const op_place_ctx *ctx, op_placement *out, const char *name,
                              double index, int reorder, double until, op_sim *sim,
                              op_sim_result *r, finalists *f, op_error *err)
{
    op_status st = op_sim_run(sim, out, r, NULL, err);
    double step = r->step_time_us, over = op_sim_overflow_bytes(ctx->p, r);
    op_placement copy;
    op_reorder_stats rs = {.priority = OP_PRIORITY_FIFO, .screened = OP_PRIORITY_FIFO};
    op_judged fifo = {.over = over, .step = step};
    if (!st && reorder && out->has_order) {
        const op_placement view = {.n_ops = out->n_ops, .n_dev = out->n_dev,
                                   .device_of = out->device_of};
        if (!(st = op_sim_run(sim, &view, r, NULL, err)))
            fifo = (op_judged){.over = op_sim_overflow_bytes(ctx->p, r), .step = r->step_time_us};
    }
    if (!st && reorder && !(st = op_placement_copy(&copy, out, err)) &&
        (st = op_placement_reorder_until(ctx->p, &copy, 0, until, &rs, err)))
        op_placement_destroy(&copy);
    if (st) {
        op_placement_destroy(out);
        return st;
    }
    op_progress(ctx, "auto: %-12s %12.1f us%s", name, step, over > 0 ? " (OOM)" : "");
    if (offer(&f->plain, out, step, over, name, 0)) {
        f->plain_index = index;
        f->plain.order = rs;
        f->plain.fifo = fifo;
    }
    if (!reorder)
        return OP_OK;
    int ordered = rs.priority != OP_PRIORITY_FIFO;
    if (ordered)
        op_progress(ctx, "auto: %-12s %12.1f us%s with the %s order", name, rs.final_us,
                    rs.final_over > 0 ? " (OOM)" : "", op_priority_name(rs.priority));
    if (offer(&f->ordered, &copy, rs.final_us, rs.final_over, name, ordered)) {
        f->ordered_index = index;
        f->ordered.order = rs;
        f->ordered.fifo = fifo;
    }
    return OP_OK;
}

/* Run one placer (opplace/search.h, op_portfolio_run) and offer its result. */
static op_status try_placer(const op_place_ctx *ctx, const op_placer *pl, double index,
                            int reorder, double until, op_sim *sim, op_sim_result *r,
                            finalists *f, op_error *err)
{
    op_placement out;
    int placed;
    op_status st = op_portfolio_run(ctx, pl, &out, &placed, err);
    if (st || !placed)
        return st;
    return offer_result(ctx, &out, pl->name, index, reorder, until, sim, r, f, err);
}

/* Make every rank hold the placement of rank `root`. */
static op_status share_placement(op_placement *pl, int root, op_error *err)
{
    if (op_par_size() == 1)
        return OP_OK;
    int has_order = pl->has_order;
    op_status st = op_par_bcast(&has_order, sizeof has_order, root, err);
    if (!st)
        st = op_par_bcast(pl->device_of, (size_t)pl->n_ops * sizeof(int), root, err);
    if (!st && has_order && !pl->has_order)
        st = op_placement_alloc_order(pl, err);
    if (!st && !has_order)
        op_placement_drop_order(pl);
    if (!st && has_order) {
        st = op_par_bcast(pl->order_off, ((size_t)pl->n_dev + 1) * sizeof(int), root, err);
        if (!st)
            st = op_par_bcast(pl->order, (size_t)pl->n_ops * sizeof(int), root, err);
    }
    return st;
}

/* Pick the best (overflow, step, index) over all ranks; every rank ends with
 * it in best.  index orders candidates independently of the rank count. */
static op_status elect(candidate *best, double index, op_error *err)
{
    int P = op_par_size();
    if (P == 1)
        return OP_OK;
    double mine[3] = {best->have ? best->over : INFINITY, best->have ? best->step : INFINITY,
                      index};
    double all[3 * 64];
    if (P > 64)
        return op_fail(err, OP_EUSAGE, "auto: at most 64 MPI ranks");
    op_status st = op_par_allgather(mine, 3, all, err);
    if (st)
        return st;
    int win = 0;
    for (int r = 1; r < P; r++) {
        const double *a = all + 3 * r, *b = all + 3 * win;
        if (a[0] < b[0] || (a[0] == b[0] && (a[1] < b[1] || (a[1] == b[1] && a[2] < b[2]))))
            win = r;
    }
    if (!isfinite(all[3 * win + 1]))
        return OP_OK; /* nobody has anything */
    if (!best->have) {
        if ((st = op_placement_init(&best->pl, (int)best->n_ops, best->n_dev, err)))
            return st;
        best->have = 1;
    }
    if ((st = share_placement(&best->pl, win, err)) ||
        (st = op_par_bcast(best->name, sizeof best->name, win, err)) ||
        (st = op_par_bcast(&best->stages, sizeof best->stages, win, err)) ||
        (st = op_par_bcast(&best->order, sizeof best->order, win, err)) ||
        (st = op_par_bcast(&best->fifo, sizeof best->fifo, win, err)))
        return st;
    best->over = all[3 * win];
    best->step = all[3 * win + 1];
    return OP_OK;
}

/* Does c fit and reach the lower bound `proven` (opplace/problem.h,
 * op_problem_at_bound)? */
static int proven_optimal(const candidate *c, double proven)
{
    return c->have && c->over <= 0 && proven > 0 && c->step <= proven * (1 + OP_AT_BOUND_TOL);
}

static int finalists_done(const finalists *f, double proven)
{
    return proven_optimal(&f->plain, proven) || proven_optimal(&f->ordered, proven);
}

/* The exact stage (see the header): the ILP's schedule is offered as the
 * placer "exact" (index -1: it wins ties in the MPI election); *proven is
 * raised to what the ILP proved. */
static op_status exact_first(const op_place_ctx *ctx, double seconds, op_sim *sim,
                             op_sim_result *r, finalists *f, double *proven, op_error *err)
{
    op_placement pl;
    int found;
    double bound;
    op_status st = pesto_ilp_exact(ctx->p, seconds, &pl, &found, &bound, err);
    if (st)
        return st;
    if (bound > *proven)
        *proven = bound;
    if (found && (st = offer_result(ctx, &pl, "exact", -1, 0, 0, sim, r, f, err)))
        return st;
    /* under MPI every rank must agree on stopping here: rank 0's bound and
     * the best schedule of all */
    if (op_par_size() > 1 && !(st = elect(&f->plain, f->plain_index, err)))
        st = op_par_bcast(proven, sizeof *proven, 0, err);
    return st;
}

/* Every member was stopped at the deadline (a budget below what the graph
 * needs, a slow build such as ASan's) or at Ctrl-C: auto still answers,
 * with op_portfolio_fallback's placement.  Every MPI rank runs the same. */
static op_status fallback(const op_place_ctx *ctx, op_sim *sim, op_sim_result *r, finalists *f,
                          op_error *err)
{
    op_placement out;
    const op_placer *which;
    op_status st = op_portfolio_fallback(ctx, &out, &which, err);
    if (st)
        return st == OP_ENOMEM ? st : OP_OK; /* "every placer failed" below */
    op_progress(ctx, "auto: every placer was stopped at %s; %s, run to its end",
                op_interrupted() ? "Ctrl-C" : "the deadline", which->name);
    int n, i = 0;
    const op_placer *const *all = op_placers(&n);
    while (i < n && all[i] != which)
        i++;
    return offer_result(ctx, &out, which->name, i, 0, 0, sim, r, f, err);
}

/* Placers' results are reordered until reorder_until (0: never): on huge
 * graphs 14 simulator runs per placer would spend the budget.  The loop
 * ends once a finalist reaches the bound `proven`. */
static op_status run_portfolio(const op_place_ctx *ctx, double deadline, double reorder_until,
                               double proven, op_sim *sim, op_sim_result *r, finalists *f,
                               op_error *err)
{
    int n, k = 0, P = op_par_size(), me = op_par_rank(), skipped = 0;
    const op_placer *const *all = op_placers(&n);
    for (int i = 0; i < n && !op_interrupted() && !finalists_done(f, proven); i++) {
        if (all[i]->slow || !strcmp(all[i]->name, "auto"))
            continue;
        if (k++ % P != me)
            continue;
        if (f->plain.have && op_seconds_now() > deadline) { /* huge graphs: keep the budget */
            skipped++;
            continue;
        }
        int reorder = op_seconds_now() < reorder_until;
        double until = ctx->deadline > 0 && ctx->deadline < reorder_until ? ctx->deadline
                                                                          : reorder_until;
        op_status st = try_placer(ctx, all[i], i, reorder, until, sim, r, f, err);
        if (st)
            return st;
    }
    if (skipped)
        op_progress(ctx, "auto: budget spent, %d placer(s) skipped on this rank", skipped);
    op_status st = elect(&f->plain, f->plain_index, err);
    if (!st)
        st = elect(&f->ordered, f->ordered_index, err);
    if (st)
        return st;
    if (!f->plain.have && (st = fallback(ctx, sim, r, f, err)))
        return st;
    return f->plain.have ? OP_OK : op_fail(err, OP_EINFEASIBLE, "auto: every placer failed");
}

/* The refinement op_finish runs for auto: K streams from pl, spread over
 * ranks, each with its seed (seed + k) and a share of `seconds`; pl
 * becomes the best stream's result when it is faster (an op_refine_runner). */
typedef struct streams {
    int k;
    double seconds;
} streams;

static op_status run_streams(void *arg, const op_place_ctx *ctx, const op_refine_opts *how,
                             op_placement *pl, op_refine_stats *out, op_error *err)
{
    const streams *ss = arg;
    int P = op_par_size(), me = op_par_rank();
    int mine = ss->k / P + (me < ss->k % P ? 1 : 0);
    candidate local = {.n_ops = pl->n_ops, .n_dev = pl->n_dev};
    double local_index = INFINITY, initial = INFINITY;
    long tried = 0, accepted = 0;
    op_status st = OP_OK;
    for (int s = me; s < ss->k && !st; s += P) {
        op_placement c;
        if ((st = op_placement_copy(&c, pl, err)))
            break;
        op_refine_opts ro = *how;
        ro.budget_seconds = how->max_iterations > 0 ? 0 : ss->seconds / (mine ? mine : 1);
        ro.seed = ctx->seed + (uint64_t)s;
        op_refine_stats rs;
        st = op_refine(ctx, &ro, &c, &rs, err);
        op_progress(ctx, "auto: refine stream %d tried %ld, kept %ld: %.1f -> %.1f us", s,
                    rs.tried, rs.accepted, rs.initial_us, rs.final_us);
        initial = rs.initial_us;
        tried += rs.tried, accepted += rs.accepted;
        if (!st && (!local.have || rs.final_us < local.step)) {
            if (local.have)
                op_placement_destroy(&local.pl);
            local.pl = c;
            local.have = 1;
            local.step = rs.final_us;
            local_index = s;
        } else {
            op_placement_destroy(&c);
        }
    }
    if (!st)
        st = elect(&local, local_index, err);
    if (!st && op_par_size() > 1)
        st = op_par_bcast(&initial, sizeof initial, 0, err);
    *out = (op_refine_stats){.tried = tried, .accepted = accepted, .initial_us = initial,
                             .final_us = initial};
    if (!st && local.have && local.step < initial) {
        op_placement_destroy(pl);
        *pl = local.pl;
        out->final_us = local.step;
    } else if (local.have) {
        op_placement_destroy(&local.pl);
    }
    return st;
}

/* Finish c (opplace/search.h, op_finish): refinement for `seconds` (or
 * iters per stream) judged by judge's order (NULL: first-ready-first),
 * then its best order unless it carries one it was refined by without
 * change; c's step and overflow are simulated again. */
static op_status finish_one(const op_place_ctx *ctx, candidate *c, const op_reorder_stats *judge,
                            int refine, double seconds, long iters, int n_streams, int reorder,
                            op_error *err)
{
    op_reorder_stats none = {.priority = OP_PRIORITY_FIFO, .screened = OP_PRIORITY_FIFO};
    streams ss = {n_streams, seconds};
    op_finish_opts fo = {.order = reorder, .refine = refine,
                         .refine_opts = {.max_iterations = iters, .max_units = 2000},
                         .run = run_streams, .run_arg = &ss, .ordered = judge ? judge : &none,
                         .is_ordered = strchr(c->stages.seq, 'o') != NULL,
                         .fifo = c->fifo};
    if (judge)
        op_progress(ctx, "auto: refining %s judged by the %s order", c->name,
                    op_priority_name(judge->priority));
    op_status st = op_finish(ctx, &fo, &c->pl, &c->stages, NULL, err);
    op_sim_result r;
    if (!st && !(st = op_sim_result_init(&r, ctx->p, err))) {
        if (!(st = op_simulate(ctx->p, &c->pl, &r, NULL, err))) {
            c->step = r.step_time_us;
            c->over = op_sim_overflow_bytes(ctx->p, &r);
        }
        op_sim_result_destroy(&r);
    }
    return st;
}

/* Refine the ordered finalist judged by its order when it ranks first and
 * that order passes op_finish_judge's rule (a kept order); else the plain
 * one, judged by the order screened for its own one when that passes the
 * rule, else first-ready-first; without refinement, give the plain one
 * its order. */
static op_status refine_best(const op_place_ctx *ctx, int refine, double seconds, long iters,
                             int streams, int reorder, finalists *f, op_error *err)
{
    const op_reorder_stats *o = &f->ordered.order;
    op_reorder_stats tmp;
    int ordered_first = reorder && f->ordered.have && o->priority != OP_PRIORITY_FIFO &&
                        op_finish_judge(&f->ordered.pl, o, &f->ordered.fifo, &tmp) == o &&
                        !beats(f->plain.step, f->plain.over, &f->ordered);
    if (refine && ordered_first)
        return finish_one(ctx, &f->ordered, o, 1, seconds, iters, streams, reorder, err);
    const op_reorder_stats *pj = NULL;
    if (refine && f->plain.pl.has_order) {
        op_reorder_stats screened_only = f->plain.order;
        screened_only.priority = OP_PRIORITY_FIFO;
        pj = op_finish_judge(&f->plain.pl, &screened_only, &f->plain.fifo, &tmp);
    }
    return finish_one(ctx, &f->plain, pj, refine, seconds, iters, streams, reorder, err);
}

/* Copy the winner into out and name it. */
static op_status emit(const op_problem *p, const candidate *best, op_placement *out,
                      op_error *err)
{
    char base[80], name[128];
    snprintf(base, sizeof base, "auto:%s", best->name);
    op_stages_name(base, &best->stages, name, sizeof name);
    memcpy(out->device_of, best->pl.device_of, (size_t)p->n * sizeof(int));
    op_status st = OP_OK;
    if (best->pl.has_order && !(st = op_placement_alloc_order(out, err))) {
        memcpy(out->order_off, best->pl.order_off, ((size_t)p->nd + 1) * sizeof(int));
        memcpy(out->order, best->pl.order, (size_t)p->n * sizeof(int));
    }
    return st ? st : op_placement_set_algorithm(out, name, err);
}

static op_status place_auto(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    const op_problem *p = ctx->p;
    double t0 = op_seconds_now(), budget = ctx->budget_seconds > 0 ? ctx->budget_seconds : 10.0;
    double cap;
    int reorder = strcmp(op_options_str(ctx->opts, "order", "own"), "none") != 0;
    finalists f = {.plain = {.n_ops = p->n, .n_dev = p->nd},
                   .ordered = {.n_ops = p->n, .n_dev = p->nd}};
    long iters;
    op_status ost;
    if ((ost = op_options_double(ctx->opts, "refine-seconds", INFINITY, 0, 1e9, &cap, err)) ||
        (ost = op_options_int(ctx->opts, "refine-iters", 0, 0, 1000000000L, &iters, err)))
        return ost;
    int streams = iters > 0 ? 1 : op_par_size(); /* see the header */
    op_sim_result r;
    op_sim *sim = op_sim_new(p, err);
    op_status st = sim ? op_sim_result_init(&r, p, err) : OP_ENOMEM;
    double proven = p->proven_bound_us;
    /* the budget ends with the command's deadline when that comes first */
    double end = ctx->deadline > 0 && ctx->deadline < t0 + budget ? ctx->deadline : t0 + budget;
    f.plain_index = f.ordered_index = INFINITY;
    if (!st)
        st = run_portfolio(ctx, end, reorder ? t0 + 0.5 * (end - t0) : 0, proven, sim, &r,
                           &f, err);
    /* the portfolio takes milliseconds on such graphs, and the exact stage
     * must not leave it without time when the ILP is slow (under ASan) */
    if (!st && p->n <= OP_EXACT_MAX_OPS && !finalists_done(&f, proven))
        st = exact_first(ctx, fmax(0, fmin(0.25 * (end - op_seconds_now()), op_seconds_left(ctx))),
                         sim, &r, &f, &proven, err);
    int done = finalists_done(&f, proven);
    double left = fmin(end - op_seconds_now(), cap);
    int refine = cap > 0 && (left > 0.05 || iters > 0);
    if (!st && !done && !op_interrupted() && (refine || reorder)) /* Ctrl-C: answer now */
        st = refine_best(ctx, refine, left, iters, streams, reorder, &f, err);
    /* the better of the two finalists, one of them refined */
    const candidate *best = &f.plain;
    if (f.ordered.have && !beats(f.plain.step, f.plain.over, &f.ordered))
        best = &f.ordered;
    if (!st && best->over > 0 && !ctx->best_effort)
        st = op_fail(err, OP_EINFEASIBLE, "auto: no placement found that fits in memory "
                     "(use --best-effort to get the best one anyway)");
    if (!st) {
        op_progress(ctx, "auto: winner %s%s, %.1f us, %.3f x the lower bound%s", best->name,
                    best->stages.seq, best->step, best->step / p->lower_bound_us,
                    proven_optimal(best, proven) ? ": optimal (proven)" : "");
        st = emit(p, best, out, err);
    }
    if (f.plain.have)
        op_placement_destroy(&f.plain.pl);
    if (f.ordered.have)
        op_placement_destroy(&f.ordered.pl);
    if (sim) {
        op_sim_result_destroy(&r);
        op_sim_free(sim);
    }
    return st;
}

const op_placer op_placer_auto = {
    .name = "auto",
    .summary = "portfolio of every fast placer, best one refined by local search",
    .source = "opplace (beyond the papers)",
    .place = place_auto,
};
