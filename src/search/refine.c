/*
 * refine.c - local search over placements (see opplace/search.h).
 *
 * Beyond the papers: every placer here returns one algorithm's answer;
 * refinement polishes any of them against the simulator itself, so it also
 * repairs what a placer's internal cost model gets wrong (congestion, the
 * FIFO order, memory over time).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opplace/search.h"
#include "opplace/simulate.h"
#include "sim/sim_util.h"

typedef struct units {
    int n;
    int *off, *ops; /* CSR: members of each unit */
    int *unit_of;   /* op -> unit */
} units;

static void units_free(units *u)
{
    free(u->off);
    free(u->ops);
    free(u->unit_of);
}

/* Colocation groups are units; other ops form chunks of consecutive ops in
 * topological order with one device and one layer scope, at most `cap` long. */
static op_status build_units(const op_problem *p, const int *dev, int max_units, units *u,
                             op_error *err)
{
    const op_graph *g = p->g;
    int n = p->n, cap = (n + max_units - 1) / max_units;
    if (cap < 1)
        cap = 1;
    u->unit_of = op_malloc((size_t)n * sizeof(int), err);
    u->off = op_malloc(((size_t)n + 1) * sizeof(int), err);
    u->ops = op_malloc((size_t)n * sizeof(int), err);
    int *group_unit = op_malloc(((size_t)p->n_groups + 1) * sizeof(int), err);
    if (!u->unit_of || !u->off || !u->ops || !group_unit) {
        free(group_unit);
        return OP_ENOMEM;
    }
    for (int k = 0; k < p->n_groups; k++)
        group_unit[k] = -1;
    int nu = 0, run_unit = -1, run_len = 0, prev = -1;
    for (int t = 0; t < n; t++) {
        int v = g->topo[t], grp = p->group_of[v];
        if (grp != OP_NONE) {
            if (group_unit[grp] < 0)
                group_unit[grp] = nu++;
            u->unit_of[v] = group_unit[grp];
            continue;
        }
        int extend = run_unit >= 0 && run_len < cap && prev >= 0 && dev[prev] == dev[v] &&
                     g->layer[prev] == g->layer[v];
        if (!extend) {
            run_unit = nu++;
            run_len = 0;
        }
        u->unit_of[v] = run_unit;
        run_len++;
        prev = v;
    }
    free(group_unit);
    u->n = nu;
    memset(u->off, 0, ((size_t)nu + 1) * sizeof(int));
    for (int v = 0; v < n; v++)
        u->off[u->unit_of[v] + 1]++;
    for (int k = 0; k < nu; k++)
        u->off[k + 1] += u->off[k];
    int *fill = op_malloc(((size_t)nu + 1) * sizeof(int), err);
    if (!fill)
        return OP_ENOMEM;
    memcpy(fill, u->off, (size_t)nu * sizeof(int));
    for (int v = 0; v < n; v++)
        u->ops[fill[u->unit_of[v]]++] = v;
    free(fill);
    return OP_OK;
}

static int unit_allowed(const op_problem *p, const units *u, int k, int d)
{
    for (int j = u->off[k]; j < u->off[k + 1]; j++)
        if (!op_eligible(p, u->ops[j], d))
            return 0;
    return 1;
}

static void move_unit(const units *u, int k, int d, int *dev)
{
    for (int j = u->off[k]; j < u->off[k + 1]; j++)
        dev[u->ops[j]] = d;
}

static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Is candidate r better than the incumbent (step, over)?  Fitting beats not
 * fitting; among non-fitting placements less overflow wins; a peak above
 * max_peak (> 0) never does. */
static int better(const op_problem *p, const op_sim_result *r, double step, double over,
                  int64_t max_peak)
{
    if (r->cut_off || (max_peak > 0 && op_sim_largest_peak(p, r) > max_peak))
        return 0;
    return op_sim_ranks_before(op_sim_overflow_bytes(p, r), r->step_time_us, over, step);
}

typedef struct search {
    const op_place_ctx *ctx;
    const op_refine_opts *o;
    op_sim *sim;
    op_sim_result r;
    units u;
    int *dev, *cand;
    int *queue, *seen, stamp; /* region growing: BFS queue and visit stamps per unit */
    double step, over;
    double *prio; /* ordered judging: the candidate's priorities */
    op_priority_ws *pws; /* and their workspace (no allocation per candidate) */
    uint64_t rng;
} search;

static int judged_by_order(const search *S)
{
    return S->o->order != OP_PRIORITY_FIFO;
}

/* Simulate a candidate as the search judges it: under first-ready-first
 * incrementally from the incumbent's snapshots; under a priority order as
 * a whole run of its own list schedule (the simulator dispatches by
 * S->prio, set up in op_refine). */
static op_status judge(search *S, const op_placement *cand, op_error *err)
{
    if (!judged_by_order(S))
        return op_sim_run_changed(S->sim, cand, &S->r, err);
    op_status e = op_placement_priorities_ws(S->pws, cand->device_of, S->o->order, S->prio, err);
    return e ? e : op_sim_run(S->sim, cand, &S->r, NULL, err);
}

/* Make the incumbent (S->dev) the base of the next judgements: FIFO
 * judging snapshots its run; an ordered one runs it only for the start
 * (an accepted candidate's run was complete: it beat the cutoff). */
static op_status rebase(search *S, int checkpoints, int is_start, op_error *err)
{
    const op_problem *p = S->ctx->p;
    op_placement cur = {.n_ops = p->n, .n_dev = p->nd, .device_of = S->dev};
    op_sim_set_cutoff(S->sim, 0);
    op_status e = OP_OK;
    if (!judged_by_order(S))
        e = op_sim_record(S->sim, &cur, checkpoints, &S->r, err);
    else if (is_start)
        e = judge(S, &cur, err);
    if (!e) {
        S->step = S->r.step_time_us;
        S->over = op_sim_overflow_bytes(p, &S->r);
    }
    return e;
}

/* Units connected to unit k through edges that stay on device `from`,
 * breadth first, at most `limit` of them (k included); returns the count
 * and leaves them in S->queue. */
static int grow_region(search *S, int k, int from, int limit)
{
    const op_graph *g = S->ctx->p->g;
    const units *u = &S->u;
    int head = 0, tail = 0;
    S->stamp++;
    S->queue[tail++] = k;
    S->seen[k] = S->stamp;
    while (head < tail && tail < limit) {
        int cur = S->queue[head++];
        for (int j = u->off[cur]; j < u->off[cur + 1] && tail < limit; j++) {
            int v = u->ops[j];
            const int *nb[2] = {g->succ + g->succ_off[v], g->pred + g->pred_off[v]};
            int cnt[2] = {g->succ_off[v + 1] - g->succ_off[v], g->pred_off[v + 1] - g->pred_off[v]};
            for (int side = 0; side < 2; side++)
                for (int x = 0; x < cnt[side] && tail < limit; x++) {
                    int w = nb[side][x], uw = u->unit_of[w];
                    if (S->dev[w] == from && S->seen[uw] != S->stamp) {
                        S->seen[uw] = S->stamp;
                        S->queue[tail++] = uw;
                    }
                }
        }
    }
    return tail;
}

/* Propose into cand: move a unit, move a connected region of units (a
 * chain or subgraph living on one device), or swap two units.  Returns 0 if
 * the proposal is impossible. */
static int propose(search *S)
{
    const op_problem *p = S->ctx->p;
    int nd = p->nd, k = (int)(next_rand(&S->rng) % (uint64_t)S->u.n);
    int from = S->dev[S->u.ops[S->u.off[k]]];
    memcpy(S->cand, S->dev, (size_t)p->n * sizeof(int));
    uint64_t kind = next_rand(&S->rng) % 8;
    if (kind < 3) { /* region: 2..64 units grown from k */
        int limit = 2 << (next_rand(&S->rng) % 6);
        int d = (from + 1 + (int)(next_rand(&S->rng) % (uint64_t)(nd - 1))) % nd;
        int m = grow_region(S, k, from, limit);
        for (int i = 0; i < m; i++)
            if (!unit_allowed(p, &S->u, S->queue[i], d))
                return 0;
        for (int i = 0; i < m; i++)
            move_unit(&S->u, S->queue[i], d, S->cand);
        return 1;
    }
    if (kind < 6) { /* move */
        int d = (from + 1 + (int)(next_rand(&S->rng) % (uint64_t)(nd - 1))) % nd;
        if (!unit_allowed(p, &S->u, k, d))
            return 0;
        move_unit(&S->u, k, d, S->cand);
        return 1;
    }
    int k2 = (int)(next_rand(&S->rng) % (uint64_t)S->u.n); /* swap */
    int to = S->dev[S->u.ops[S->u.off[k2]]];
    if (to == from || !unit_allowed(p, &S->u, k, to) || !unit_allowed(p, &S->u, k2, from))
        return 0;
    move_unit(&S->u, k, to, S->cand);
    move_unit(&S->u, k2, from, S->cand);
    return 1;
}

static op_status search_loop(search *S, op_refine_stats *st, op_error *err)
{
    const op_problem *p = S->ctx->p;
    op_placement cand = {.n_ops = p->n, .n_dev = p->nd, .device_of = S->cand};
    double t0 = op_seconds_now(), last_report = t0;
    int checkpoints = p->n > 200000 ? 4 : 16;
    for (long it = 0;; it++) {
        if ((S->o->max_iterations > 0 && it >= S->o->max_iterations) || op_interrupted() ||
            op_problem_at_bound(p, S->step, S->over)) /* done when proven */
            break;
        double now = op_seconds_now();
        if ((S->o->budget_seconds > 0 && now - t0 >= S->o->budget_seconds) ||
            (S->o->stop && S->o->stop(S->o->stop_arg)))
            break;
        if (S->ctx->progress && now - last_report > 1.0) {
            op_progress(S->ctx, "refine: %ld candidates, %ld kept, step %.1f us", st->tried,
                        st->accepted, S->step);
            last_report = now;
        }
        if (!propose(S))
            continue;
        st->tried++;
        op_sim_set_cutoff(S->sim, S->over > 0 ? 0 : S->step);
        op_status e = judge(S, &cand, err);
        if (e)
            return e;
        if (!better(p, &S->r, S->step, S->over, S->o->max_peak))
            continue;
        memcpy(S->dev, S->cand, (size_t)p->n * sizeof(int));
        st->accepted++;
        if ((e = rebase(S, checkpoints, 0, err)))
            return e;
    }
    op_sim_set_cutoff(S->sim, 0);
    return OP_OK;
}

/* The refined placement as returned: device_of S->dev with, when judged
 * by an order, that list schedule's per-device order.  out is pl's copy. */
static op_status build_result(search *S, const op_placement *pl, op_placement *out,
                              op_error *err)
{
    const op_problem *p = S->ctx->p;
    op_status e = op_placement_copy(out, pl, err);
    if (e)
        return e;
    memcpy(out->device_of, S->dev, (size_t)p->n * sizeof(int));
    op_placement_drop_order(out);
    if (!judged_by_order(S))
        return OP_OK;
    int *seq = op_malloc(((size_t)p->n + 1) * sizeof *seq, err);
    e = seq ? op_placement_priorities_ws(S->pws, S->dev, S->o->order, S->prio, err) : OP_ENOMEM;
    if (!e)
        e = op_order_list_schedule(p, S->dev, S->prio, S->o->order_cap, seq, NULL, err);
    if (!e)
        e = op_placement_set_order_from_sequence(out, seq, err);
    free(seq);
    if (e)
        op_placement_destroy(out);
    return e;
}

/* Replace pl by the refined placement when the simulator, running it as
 * returned, ranks it strictly before pl as given (given_*) within max_peak. */
static op_status keep_if_better(search *S, op_placement *pl, double given_step,
                                double given_over, op_refine_stats *st, op_error *err)
{
    const op_problem *p = S->ctx->p;
    st->final_us = given_step;
    /* nothing moved and nothing to derive: the result would be pl itself */
    if (st->accepted == 0 && !judged_by_order(S) && !pl->has_order)
        return OP_OK;
    op_placement out;
    op_status e = build_result(S, pl, &out, err);
    if (e)
        return e;
    op_sim_dispatch_by_priority(S->sim, NULL, NULL);
    op_sim_set_cutoff(S->sim, 0);
    if ((e = op_sim_run(S->sim, &out, &S->r, NULL, err))) {
        op_placement_destroy(&out);
        return e;
    }
    if (better(p, &S->r, given_step, given_over, S->o->max_peak)) {
        op_placement_destroy(pl);
        *pl = out;
        st->final_us = S->r.step_time_us;
    } else {
        op_placement_destroy(&out);
    }
    return OP_OK;
}

/* Allocate the search's buffers and judge the start (device_of of pl). */
static op_status start_search(search *S, const op_placement *pl, op_error *err)
{
    const op_problem *p = S->ctx->p;
    S->dev = op_malloc((size_t)p->n * sizeof(int), err);
    S->cand = op_malloc((size_t)p->n * sizeof(int), err);
    if (!S->dev || !S->cand)
        return OP_ENOMEM;
    memcpy(S->dev, pl->device_of, (size_t)p->n * sizeof(int));
    op_status e = build_units(p, S->dev, S->o->max_units > 0 ? S->o->max_units : 2000, &S->u, err);
    if (e)
        return e;
    S->queue = op_malloc(((size_t)S->u.n + 1) * sizeof(int), err);
    S->seen = op_calloc((size_t)S->u.n + 1, sizeof(int), err);
    if (!S->queue || !S->seen)
        return OP_ENOMEM;
    if (judged_by_order(S)) {
        if (!(S->prio = op_malloc(((size_t)p->n + 1) * sizeof *S->prio, err)) ||
            !(S->pws = op_priority_ws_new(p, err)))
            return OP_ENOMEM;
        op_sim_dispatch_by_priority(S->sim, S->prio, S->o->order_cap);
    }
    return rebase(S, 16, 1, err);
}

op_status op_refine(const op_place_ctx *ctx, const op_refine_opts *o, op_placement *pl,
                    op_refine_stats *stats, op_error *err)
{
    const op_problem *p = ctx->p;
    op_refine_stats st = {0};
    search S = {.ctx = ctx, .o = o, .rng = o->seed};
    double t0 = op_seconds_now();
    op_status e = OP_ENOMEM;
    S.sim = op_sim_new(p, err);
    if (!S.sim || op_sim_result_init(&S.r, p, err))
        goto out;
    /* the incumbent as given, order included */
    if ((e = op_sim_run(S.sim, pl, &S.r, NULL, err)))
        goto out;
    double given_step = S.r.step_time_us, given_over = op_sim_overflow_bytes(p, &S.r);
    if ((e = start_search(&S, pl, err)))
        goto out;
    st.units = S.u.n;
    st.initial_us = given_step;
    if (p->nd > 1 && S.u.n > 0 && (e = search_loop(&S, &st, err)))
        goto out;
    e = keep_if_better(&S, pl, given_step, given_over, &st, err);
out:
    st.seconds = op_seconds_now() - t0;
    if (stats)
        *stats = st;
    units_free(&S.u);
    free(S.queue);
    free(S.seen);
    free(S.dev);
    free(S.cand);
    free(S.prio);
    op_priority_ws_free(S.pws);
    op_sim_result_destroy(&S.r);
    op_sim_free(S.sim);
    return e;
}
