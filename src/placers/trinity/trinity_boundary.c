/*
 * trinity_boundary.c - layer-boundary moves around the reference placement
 * (BEYOND THE PAPER; Trinity's search, the Trinity paper section 4, only
 * samples placements from its networks).
 *
 * The reference (by default expert, src/placers/baselines/expert.c) gives contiguous
 * runs of layers to devices.  PPO's per-unit moves around it rarely shift
 * where one device's run ends and the next begins, so this file enumerates
 * that neighbourhood directly and judges every candidate with its best
 * priority list-schedule order, by the same admissibility rule as the
 * final choice (trinity_final.c).
 *
 * Blocks: every layer scope of the graph (formats.md section 1; ops
 * without one follow the producer sending them the most bytes, else the
 * consumer receiving the most, as expert does) cut into `chunks` runs of
 * equal op count in topological order; a block is a whole scope, or a
 * prefix or suffix of its chunks (2 * chunks - 1 per scope).  On an
 * unrolled RNN layer a prefix is its first time steps, so a prefix move
 * shifts a stage boundary in time; a whole-scope move shifts it by one
 * layer.
 * Candidates (each deduplicated by its device_of):
 *   - single moves: the ops of a block on device a go to device b, for
 *     every b holding a dataflow neighbour of them (a boundary);
 *   - swaps: devices a and b exchange all their ops;
 *   - pairs: two single moves of different blocks, among the `pair_top`
 *     fastest singles and the `pair_top` singles with the least
 *     communication (a move that saves communication may pay for one that
 *     costs it);
 *   - descent: while the best admissible candidate improves, it becomes the
 *     centre of the next round (at most `rounds`), so a few moves compose.
 * A move takes whole colocation groups and skips ops (and their groups)
 * not eligible on the target, so every candidate keeps the problem's
 * rules and places every op.
 * Judging: first-ready-first; when its peak communication is within the
 * bound (communication does not depend on the order), the list schedule
 * of every priority (opplace/list_schedule.h) without a memory cap and
 * capped at 100 / 95 / 90 % of the memory bound and at its own FIFO peak,
 * run on one reused simulator (op_sim_dispatch_by_priority; the final
 * choice derives and replays the winner's order).  ADMISSIBLE: no more
 * out of memory than the reference first-ready-first and, if the
 * reference is within the tolerances rc, within them, else no higher
 * peaks than the reference's.  The reference itself is judged the same
 * way ("reference + order").  Candidates rank by fewer out of memory,
 * then step ("ahead"): with an out-of-memory reference a candidate that
 * fits comes first; otherwise this is the step alone.
 *
 * Cost: one simulator run per candidate above the communication bound
 * (16 with order_all, for the experiment's report), 16 per candidate
 * within it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/list_schedule.h"
#include "opplace/placer.h"
#include "opplace/search.h"
#include "placers/trinity/trinity_internal.h"

typedef struct block {
    int scope, lo, hi; /* chunks [lo, hi) of the scope */
} block;

typedef struct move {
    int block, from, to; /* block < 0: swap devices from and to */
} move;

typedef struct single {
    move mv;
    trinity_metrics fifo, best; /* best: fastest admissible variant (step inf: none) */
    double best_any;            /* fastest variant within the comm bound, any memory */
    int comm_ok;                /* peak communication within the bound */
} single;

typedef struct boundary_search {
    const op_problem *p;
    const trinity_reward_config *rc;
    int chunks;
    int n_scopes;
    int *scope_off, *scope_ops; /* CSR: each scope's ops in topological order */
    int n_blocks;
    block *blocks;
    trinity_bench j;     /* simulator, result, candidate, priorities, caps */
    unsigned char *mark; /* per op */
    int *work;           /* per op: a candidate's device_of */
    trinity_metrics ref_fifo;
    int ref_within;
    double mem_bound, comm_bound;
    int order_all;       /* order candidates above the communication bound too */
    void (*visit)(void *, const int *, const trinity_metrics *, double);
    void *visit_arg;
    uint64_t *seen;      /* hashes of the candidates judged */
    int n_seen, cap_seen;
    double deadline;     /* cfg->deadline */
    int cut_short;       /* a candidate was skipped for it */
} boundary_search;

/* ------------------------------------------------------------- blocks */

/* Each op's scope: its layer, else its heaviest producer's, else its
 * heaviest consumer's, else the catch-all scope n_layers. */
static void assign_scopes(const op_problem *p, int *scope_of)
{
    const op_graph *g = p->g;
    for (int i = 0; i < p->n; i++)
        scope_of[i] = g->layer[i] == OP_NONE ? -1 : g->layer[i];
    for (int t = 0; t < p->n; t++) {
        int v = g->topo[t], pick = -1;
        int64_t best = -1;
        if (scope_of[v] >= 0)
            continue;
        for (int k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
            if (scope_of[g->pred[k]] >= 0 && g->edge_bytes[g->pred_edge[k]] > best)
                best = g->edge_bytes[g->pred_edge[k]], pick = scope_of[g->pred[k]];
        scope_of[v] = pick;
    }
    for (int t = p->n - 1; t >= 0; t--) {
        int v = g->topo[t];
        int64_t best = -1;
        int pick = -1;
        if (scope_of[v] >= 0)
            continue;
        for (int k = g->succ_off[v]; k < g->succ_off[v + 1]; k++)
            if (scope_of[g->succ[k]] >= 0 && g->edge_bytes[g->succ_edge[k]] > best)
                best = g->edge_bytes[g->succ_edge[k]], pick = scope_of[g->succ[k]];
        scope_of[v] = pick >= 0 ? pick : g->n_layers;
    }
}

static op_status build_blocks(boundary_search *b, op_error *err)
{
    const op_problem *p = b->p;
    const op_graph *g = p->g;
    int ns = g->n_layers + 1, c = b->chunks;
    int *scope_of = op_malloc((size_t)p->n * sizeof(int) + 1, err);
    b->scope_off = op_calloc((size_t)ns + 1, sizeof(int), err);
    b->scope_ops = op_malloc((size_t)p->n * sizeof(int) + 1, err);
    b->blocks = op_malloc((size_t)ns * (size_t)(2 * c) * sizeof(block), err);
    if (!scope_of || !b->scope_off || !b->scope_ops || !b->blocks) {
        free(scope_of);
        return OP_ENOMEM;
    }
    assign_scopes(p, scope_of);
    for (int i = 0; i < p->n; i++)
        b->scope_off[scope_of[i] + 1]++;
    for (int s = 0; s < ns; s++)
        b->scope_off[s + 1] += b->scope_off[s];
    int *fill = b->work; /* scratch: per-scope cursor */
    for (int s = 0; s < ns; s++)
        fill[s] = b->scope_off[s];
    for (int t = 0; t < p->n; t++) {
        int v = g->topo[t];
        b->scope_ops[fill[scope_of[v]]++] = v;
    }
    free(scope_of);
    b->n_scopes = ns;
    b->n_blocks = 0;
    for (int s = 0; s < ns; s++) {
        int cnt = b->scope_off[s + 1] - b->scope_off[s];
        if (!cnt)
            continue;
        int cs = cnt < c ? 1 : c;
        b->blocks[b->n_blocks++] = (block){s, 0, cs};
        for (int j = 1; j < cs; j++) {
            b->blocks[b->n_blocks++] = (block){s, 0, j};
            b->blocks[b->n_blocks++] = (block){s, j, cs};
        }
    }
    return OP_OK;
}

/* The ops of block k: scope_ops[*first .. *last). */
static void block_range(const boundary_search *b, int k, int *first, int *last)
{
    const block *bl = &b->blocks[k];
    int off = b->scope_off[bl->scope], cnt = b->scope_off[bl->scope + 1] - off;
    int cs = cnt < b->chunks ? 1 : b->chunks;
    *first = off + (int)((long)bl->lo * cnt / cs);
    *last = off + (int)((long)bl->hi * cnt / cs);
}

/* ---------------------------------------------------------------- moves */

/* Apply mv to dev: the block's ops on mv.from (with their whole colocation
 * groups) go to mv.to, except those (groups) not eligible there.
 * Returns the number of ops moved. */
static int apply_move(boundary_search *b, const move *mv, int *dev)
{
    const op_problem *p = b->p;
    int moved = 0;
    if (mv->block < 0) {
        for (int i = 0; i < p->n; i++)
            if ((dev[i] == mv->from && !op_eligible(p, i, mv->to)) ||
                (dev[i] == mv->to && !op_eligible(p, i, mv->from)))
                return 0;
        for (int i = 0; i < p->n; i++)
            if (dev[i] == mv->from || dev[i] == mv->to) {
                dev[i] = dev[i] == mv->from ? mv->to : mv->from;
                moved++;
            }
        return moved;
    }
    int first, last;
    block_range(b, mv->block, &first, &last);
    for (int k = first; k < last; k++) {
        int i = b->scope_ops[k];
        if (dev[i] != mv->from)
            continue;
        int grp = p->group_of[i];
        if (grp == OP_NONE) {
            if (op_eligible(p, i, mv->to))
                dev[i] = mv->to, moved++;
            continue;
        }
        if (!p->group_ok[(size_t)grp * p->nd + mv->to])
            continue;
        for (int m = p->group_off[grp]; m < p->group_off[grp + 1]; m++)
            if (dev[p->group_ops[m]] != mv->to)
                dev[p->group_ops[m]] = mv->to, moved++;
    }
    return moved;
}

/* Devices other than `from` holding a dataflow neighbour of block k's ops
 * on `from`: bit d of the result. */
static unsigned long boundary_targets(const boundary_search *b, int k, int from, const int *dev)
{
    const op_graph *g = b->p->g;
    unsigned long mask = 0;
    int first, last;
    block_range(b, k, &first, &last);
    for (int x = first; x < last; x++) {
        int i = b->scope_ops[x];
        if (dev[i] != from)
            continue;
        for (int e = g->pred_off[i]; e < g->pred_off[i + 1]; e++)
            if (dev[g->pred[e]] != from && dev[g->pred[e]] < 64)
                mask |= 1ul << dev[g->pred[e]];
        for (int e = g->succ_off[i]; e < g->succ_off[i + 1]; e++)
            if (dev[g->succ[e]] != from && dev[g->succ[e]] < 64)
                mask |= 1ul << dev[g->succ[e]];
    }
    return mask;
}

/* ---------------------------------------------------------------- judge */

static uint64_t hash_placement(const int *dev, int n)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint64_t)(unsigned)dev[i]) * 1099511628211ull;
    return h;
}

/* 1 when dev was judged before (else records it); -1 out of memory. */
static int seen_before(boundary_search *b, const int *dev, op_error *err)
{
    uint64_t h = hash_placement(dev, b->p->n);
    for (int k = 0; k < b->n_seen; k++)
        if (b->seen[k] == h)
            return 1;
    if (b->n_seen == b->cap_seen) {
        int cap = b->cap_seen ? 2 * b->cap_seen : 256;
        uint64_t *s = realloc(b->seen, (size_t)cap * sizeof *s);
        if (!s) {
            op_fail(err, OP_ENOMEM, "trinity: out of memory");
            return -1;
        }
        b->seen = s, b->cap_seen = cap;
    }
    b->seen[b->n_seen++] = h;
    return 0;
}

static int admissible(const boundary_search *b, const trinity_metrics *c)
{
    if (c->oom > b->ref_fifo.oom)
        return 0;
    if (b->ref_within)
        return trinity_within_tolerances(c, b->rc);
    return c->peak_comm <= b->ref_fifo.peak_comm && c->peak_mem <= b->ref_fifo.peak_mem;
}

/* a before c in the plain ranking (op_sim_ranks_before), an inadmissible
 * variant (infinite step) counting as the most overflow: admissible first,
 * then fewer out of memory, then faster. */
static double overflow_rank(const trinity_metrics *m)
{
    return isfinite(m->step_us) ? m->oom : INFINITY;
}

static int ahead(const trinity_metrics *a, const trinity_metrics *c)
{
    return op_sim_ranks_before(overflow_rank(a), a->step_us, overflow_rank(c), c->step_us);
}

static op_status run_once(boundary_search *b, const double *prio, const int64_t *cap,
                          trinity_metrics *m, op_error *err)
{
    return trinity_judge(b->p, b->j.sim, &b->j.pl, &b->j.r, prio, cap, b->rc, m, err);
}

typedef struct variant_visit {
    boundary_search *b;
    single *s;
} variant_visit;

/* One ordered variant of the candidate (trinity_order_judge's keep). */
static void keep_variant(void *arg, op_priority k, double share, const trinity_metrics *c)
{
    variant_visit *v = arg;
    (void)k, (void)share;
    if (c->oom <= v->b->ref_fifo.oom && c->step_us < v->s->best_any)
        v->s->best_any = c->step_us;
    if (admissible(v->b, c) && ahead(c, &v->s->best))
        v->s->best = *c;
}

/* Judge the placement dev: s->fifo, s->best (fastest admissible variant,
 * step inf when none), s->best_any. */
static op_status judge(boundary_search *b, const int *dev, single *s, op_error *err)
{
    const op_problem *p = b->p;
    op_status st;
    memcpy(b->j.pl.device_of, dev, (size_t)p->n * sizeof(int));
    op_placement_drop_order(&b->j.pl);
    if ((st = run_once(b, NULL, NULL, &s->fifo, err)))
        return st;
    s->best = s->fifo;
    s->best_any = 1.0 / 0.0;
    if (!admissible(b, &s->fifo))
        s->best.step_us = 1.0 / 0.0;
    if ((double)s->fifo.peak_comm > b->comm_bound && !b->order_all)
        return OP_OK; /* no order changes communication */
    if (s->fifo.oom <= b->ref_fifo.oom)
        s->best_any = s->fifo.step_us;
    op_order_space sp = {.caps = OP_CAPS_ALL, .base = b->mem_bound,
                         .own_peak = (double)s->fifo.peak_mem, .prio_outer = 1};
    variant_visit v = {b, s};
    trinity_order_judge oj = {p,         b->j.sim, &b->j.pl,     &b->j.r, b->rc, b->j.prio,
                              -1,        b->deadline, keep_variant, &v};
    return op_order_search(p, &sp, b->j.cap, trinity_order_judge_visit, &oj, err);
}

/* ---------------------------------------------------------------- search */

/* Keep dev among the `keep` best admissible candidates ahead of the
 * reference + order (kept rows sorted by `ahead`). */
static void keep_best(trinity_boundary_result *res, int keep, const int *dev,
                      const trinity_metrics *m, int n)
{
    if (!ahead(m, &res->ref_best))
        return;
    int pos = res->n_kept;
    while (pos > 0 && ahead(m, &res->kept_m[pos - 1]))
        pos--;
    if (pos >= keep)
        return;
    int last = res->n_kept < keep ? res->n_kept : keep - 1;
    for (int k = last; k > pos; k--) {
        memcpy(res->kept + (size_t)k * (size_t)n, res->kept + (size_t)(k - 1) * (size_t)n,
               (size_t)n * sizeof(int));
        res->kept_m[k] = res->kept_m[k - 1];
    }
    memcpy(res->kept + (size_t)pos * (size_t)n, dev, (size_t)n * sizeof(int));
    res->kept_m[pos] = *m;
    if (res->n_kept < keep)
        res->n_kept++;
}

/* Judge one candidate built by moves mv[0..nm) from ref. */
static op_status try_candidate(boundary_search *b, const int *ref, const move *mv, int nm,
                               trinity_boundary_result *res, int keep, single *out,
                               int *judged, op_error *err)
{
    int n = b->p->n;
    *judged = 0;
    memcpy(b->work, ref, (size_t)n * sizeof(int));
    for (int k = 0; k < nm; k++)
        if (!apply_move(b, &mv[k], b->work))
            return OP_OK;
    if ((b->deadline > 0 && op_seconds_now() > b->deadline) || op_interrupted()) {
        b->cut_short = 1; /* out of time: the candidates judged so far */
        return OP_OK;
    }
    int s = seen_before(b, b->work, err);
    if (s < 0)
        return OP_ENOMEM;
    if (s)
        return OP_OK;
    single c = {.mv = mv[0]};
    op_status st = judge(b, b->work, &c, err);
    if (st)
        return st;
    *judged = 1;
    if (b->visit)
        b->visit(b->visit_arg, b->work, &c.fifo, c.best.step_us);
    res->candidates++;
    res->comm_ok += (double)c.fifo.peak_comm <= b->comm_bound;
    if (isfinite(c.best.step_us)) {
        res->admissible++;
        if (ahead(&c.best, &res->best)) {
            res->best = c.best;
            snprintf(res->best_what, sizeof res->best_what, "%s", nm == 1 ? "single" : "pair");
            if (mv[0].block < 0)
                snprintf(res->best_what, sizeof res->best_what, "swap");
        }
        if (ahead(&c.best, &res->ref_best))
            res->faster++;
        keep_best(res, keep, b->work, &c.best, n);
    }
    int comm_ok = (double)c.fifo.peak_comm <= b->comm_bound;
    if (comm_ok && c.best_any < res->fastest_comm_ok)
        res->fastest_comm_ok = c.best_any;
    if (c.best_any < res->ref_best.step_us &&
        (!res->faster_any || c.fifo.peak_comm < res->least_comm_faster.peak_comm)) {
        res->least_comm_faster = c.fifo;
        res->least_comm_faster.step_us = c.best_any;
    }
    if (c.best_any < res->ref_best.step_us)
        res->faster_any++;
    c.comm_ok = comm_ok;
    if (out)
        *out = c;
    return OP_OK;
}

static int by_best_step(const void *x, const void *y)
{
    const single *a = x, *c = y;
    /* order_all (the report) must not change the search: above the bound
     * only the FIFO step counts, as without it */
    double sa = a->comm_ok && isfinite(a->best_any) ? a->best_any : a->fifo.step_us + 1e12;
    double sc = c->comm_ok && isfinite(c->best_any) ? c->best_any : c->fifo.step_us + 1e12;
    return sa < sc ? -1 : sa > sc;
}

static int by_comm(const void *x, const void *y)
{
    const single *a = x, *c = y;
    return a->fifo.peak_comm < c->fifo.peak_comm ? -1 : a->fifo.peak_comm > c->fifo.peak_comm;
}

static op_status search(boundary_search *b, const int *ref, const trinity_boundary_config *cfg,
                        trinity_boundary_result *res, op_error *err)
{
    const op_problem *p = b->p;
    int nd = p->nd, n_singles = 0;
    single *singles = op_malloc(((size_t)b->n_blocks * (size_t)nd * (size_t)nd + 1) *
                                    sizeof *singles, err);
    if (!singles)
        return OP_ENOMEM;
    op_status st = OP_OK;
    int judged;
    for (int k = 0; !st && k < b->n_blocks; k++)
        for (int from = 0; !st && from < nd; from++) {
            unsigned long to_mask = boundary_targets(b, k, from, ref);
            for (int to = 0; !st && to < nd && to < 64; to++) {
                if (!(to_mask >> to & 1))
                    continue;
                move mv = {k, from, to};
                st = try_candidate(b, ref, &mv, 1, res, cfg->keep, &singles[n_singles],
                                   &judged, err);
                n_singles += judged;
                res->singles += judged;
            }
        }
    for (int a = 0; !st && a < nd; a++)
        for (int c = a + 1; !st && c < nd; c++) {
            move mv = {-1, a, c};
            st = try_candidate(b, ref, &mv, 1, res, cfg->keep, NULL, &judged, err);
            res->swaps += judged;
        }
    /* pairs among the fastest and the least-communicating singles */
    int top = cfg->pair_top < n_singles ? cfg->pair_top : n_singles, n_pick = 0;
    move *pick = op_malloc((size_t)(2 * top + 1) * sizeof *pick, err);
    if (!st && !pick)
        st = OP_ENOMEM;
    if (!st) {
        qsort(singles, (size_t)n_singles, sizeof *singles, by_best_step);
        for (int k = 0; k < top; k++)
            pick[n_pick++] = singles[k].mv;
        qsort(singles, (size_t)n_singles, sizeof *singles, by_comm);
        for (int k = 0; k < top; k++) {
            int dup = 0;
            for (int j = 0; j < n_pick && !dup; j++)
                dup = !memcmp(&pick[j], &singles[k].mv, sizeof(move));
            if (!dup)
                pick[n_pick++] = singles[k].mv;
        }
    }
    for (int x = 0; !st && x < n_pick; x++)
        for (int y = x + 1; !st && y < n_pick; y++) {
            if (pick[x].block == pick[y].block)
                continue;
            move mv[2] = {pick[x], pick[y]};
            st = try_candidate(b, ref, mv, 2, res, cfg->keep, NULL, &judged, err);
            res->pairs += judged;
        }
    free(pick);
    free(singles);
    return st;
}

trinity_boundary_config trinity_boundary_defaults(void)
{
    return (trinity_boundary_config){.chunks = 4, .pair_top = 8, .keep = 2, .rounds = 8};
}

void trinity_boundary_result_destroy(trinity_boundary_result *res)
{
    free(res->kept);
    free(res->kept_m);
    res->kept = NULL;
    res->kept_m = NULL;
}

op_status trinity_boundary_search(const op_problem *p, const int *ref,
                                  const trinity_reward_config *rc,
                                  const trinity_boundary_config *cfg,
                                  trinity_boundary_result *res, op_error *err)
{
    double t0 = op_seconds_now();
    memset(res, 0, sizeof *res);
    int keep = cfg->keep > 0 ? cfg->keep : 1;
    res->kept = op_malloc((size_t)keep * (size_t)p->n * sizeof(int), err);
    res->kept_m = op_malloc((size_t)keep * sizeof *res->kept_m, err);
    res->best.step_us = res->ref_best.step_us = res->fastest_comm_ok = 1.0 / 0.0;
    snprintf(res->best_what, sizeof res->best_what, "none");
    boundary_search b = {.p = p, .rc = rc, .chunks = cfg->chunks > 0 ? cfg->chunks : 1,
                         .order_all = cfg->order_all, .visit = cfg->visit,
                         .visit_arg = cfg->visit_arg, .deadline = cfg->deadline};
    b.work = op_malloc(((size_t)p->n + (size_t)p->g->n_layers + 2) * sizeof(int), err);
    op_status st = res->kept && res->kept_m && b.work ? OP_OK : OP_ENOMEM;
    if (!st)
        st = trinity_bench_init(&b.j, p, err);
    if (!st)
        st = build_blocks(&b, err);
    if (!st) {
        /* the reference: first-ready-first fixes the bounds, then its orders */
        memcpy(b.j.pl.device_of, ref, (size_t)p->n * sizeof(int));
        op_placement_drop_order(&b.j.pl);
        st = run_once(&b, NULL, NULL, &b.ref_fifo, err);
    }
    if (!st) {
        b.ref_within = trinity_within_tolerances(&b.ref_fifo, rc);
        b.mem_bound = b.ref_within ? fmin(rc->max_mem_bytes, 9e18) : (double)b.ref_fifo.peak_mem;
        b.comm_bound = b.ref_within ? rc->max_comm_bytes : (double)b.ref_fifo.peak_comm;
        single r;
        st = judge(&b, ref, &r, err);
        if (!st) {
            res->ref_fifo = b.ref_fifo;
            res->ref_best = r.best;
            res->blocks = b.n_blocks;
            res->rounds = 1;
            int s = seen_before(&b, ref, err);
            st = s < 0 ? OP_ENOMEM : OP_OK;
        }
    }
    if (!st)
        st = search(&b, ref, cfg, res, err);
    /* descent: the best admissible candidate becomes the next centre */
    int *centre = NULL;
    trinity_metrics centre_m = res->ref_best;
    for (int round = 1; !st && !b.cut_short && round < cfg->rounds && res->n_kept &&
                        ahead(&res->kept_m[0], &centre_m);
         round++) {
        if (!centre && !(centre = op_malloc((size_t)p->n * sizeof(int), err))) {
            st = OP_ENOMEM;
            break;
        }
        memcpy(centre, res->kept, (size_t)p->n * sizeof(int));
        centre_m = res->kept_m[0];
        res->rounds = round + 1;
        st = search(&b, centre, cfg, res, err);
    }
    free(centre);
    res->seconds = op_seconds_now() - t0;
    res->cut_short = b.cut_short;
    trinity_bench_destroy(&b.j);
    free(b.work);
    free(b.scope_off);
    free(b.scope_ops);
    free(b.blocks);
    free(b.seen);
    if (st)
        trinity_boundary_result_destroy(res);
    return st;
}
