/*
 * etf_engine.c - memory-constrained Earliest-Time-First list scheduling,
 * the engine of Baechi's m-ETF and m-SCT (Jeon et al., SoCC 2020, section
 * 4; summarized in Celeritas section 2 and Pesto section 5.2).
 *
 * ETF (Hwang, Chow, Anger, Lee 1989): repeatedly pick, among every ready op
 * (all predecessors scheduled) and every device, the pair with the earliest
 * start time, start = max(device free, data arrival on that device); ties go
 * to the op with the larger static b-level, then the smaller op index, then
 * the smaller device index.  The "m-" part (Baechi): a device is a candidate
 * for an op only if the op fits in its memory (placer_mem.h's liveness
 * estimate, on a timeline of slots in decreasing static b-level, the order
 * ETF tends to run ops in); a colocation group goes where its first member
 * goes and its whole footprint is charged then.  Every run is checked by
 * the simulator (pmem_place_checked).
 *
 * m-SCT's favorite-child rule (Baechi's SCTDevice, from Hanen and Munier's
 * SCT): when a device's last op has a favorite child that is ready and this
 * device is where it can start earliest, the device is reserved ("awake")
 * for it: it runs the child next unless another ready op is already urgent
 * (its data could be on any device by the time this device is free).
 * Simplification: only the device's best ETF candidate is tested for
 * urgency, not every ready op.
 *
 * Data structures (so a 36,000-op graph takes well under a second): each
 * device keeps two heaps of ready ops, `pending` keyed by data arrival on
 * that device and `avail` (arrival <= device free time) keyed by b-level.
 * A device's best start is then the top of `avail` at its free time, or
 * the top of `pending` at its arrival.  Entries are deleted lazily: an op
 * scheduled elsewhere, or one that does not fit, is dropped when it
 * surfaces.  Memory can free up later (placer_mem.h), so an op every
 * device dropped is tested once more on every device before it counts as
 * unplaceable; it then goes to the fitting device where it starts first.
 * Cost: O(n * nd * log n) plus the in-degree work of the memory checks.
 *
 * No op fits anywhere: OP_EINFEASIBLE, or with best_effort the op goes to
 * the device with the most free memory (Celeritas's best-effort rule).
 * Communication in the estimate is per edge, without channel contention;
 * the simulator (which does model contention) gives the reported time.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "placers/baselines/etf_engine.h"
#include "placers/placer_heap.h"
#include "placers/placer_mem.h"
#include "placers/placer_util.h"

typedef struct etf_state {
    const op_problem *p;
    const etf_options *o;
    int best_effort, fits;
    int n, nd;
    int *device_of, *group_device, *preds_left, *alive, *seq, *last;
    int n_sched;
    unsigned char *scheduled;
    double *arr, *urgent, *finish, *start, *blevel, *dev_free;
    pheap *pending, *avail;
    int *stuck;
    int n_stuck;
    pmem mem;
} etf_state;

void etf_static_level(const op_problem *p, double *out)
{
    const op_graph *g = p->g;
    for (int t = p->n - 1; t >= 0; t--) {
        int v = g->topo[t];
        double best = 0;
        for (int k = g->succ_off[v]; k < g->succ_off[v + 1]; k++)
            if (out[g->succ[k]] > best)
                best = out[g->succ[k]];
        out[v] = p->min_exec[v] + best;
    }
}

static const etf_state *sort_state;

static int by_level_desc(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    const etf_state *s = sort_state;
    if (s->blevel[x] != s->blevel[y])
        return s->blevel[x] > s->blevel[y] ? -1 : 1;
    return s->p->g->topo_pos[x] - s->p->g->topo_pos[y];
}

static op_status state_init(etf_state *s, const op_place_ctx *ctx, const etf_options *o,
                            op_error *err)
{
    const op_problem *p = ctx->p;
    memset(s, 0, sizeof *s);
    s->p = p;
    s->o = o;
    s->best_effort = ctx->best_effort;
    s->n = p->n;
    s->nd = p->nd;
    size_t n = (size_t)p->n, nd = (size_t)p->nd;
    s->device_of = op_malloc(n * sizeof(int) + 1, err);
    s->group_device = op_malloc((size_t)p->n_groups * sizeof(int) + 1, err);
    s->preds_left = op_malloc(n * sizeof(int) + 1, err);
    s->alive = op_calloc(n + 1, sizeof(int), err);
    s->seq = op_malloc(n * sizeof(int) + 1, err);
    s->stuck = op_malloc(n * sizeof(int) + 1, err);
    s->last = op_malloc(nd * sizeof(int), err);
    s->scheduled = op_calloc(n + 1, 1, err);
    s->arr = op_malloc(n * nd * sizeof(double) + 1, err);
    s->urgent = op_malloc(n * sizeof(double) + 1, err);
    s->finish = op_malloc(n * sizeof(double) + 1, err);
    s->start = op_malloc(n * sizeof(double) + 1, err);
    s->blevel = op_malloc(n * sizeof(double) + 1, err);
    s->dev_free = op_calloc(nd, sizeof(double), err);
    s->pending = op_calloc(nd, sizeof(pheap), err);
    s->avail = op_calloc(nd, sizeof(pheap), err);
    if (!s->device_of || !s->group_device || !s->preds_left || !s->alive || !s->seq ||
        !s->stuck || !s->last || !s->scheduled || !s->arr || !s->urgent || !s->finish ||
        !s->start || !s->blevel || !s->dev_free || !s->pending || !s->avail)
        return OP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        s->device_of[i] = -1;
        s->preds_left[i] = p->g->pred_off[i + 1] - p->g->pred_off[i];
    }
    for (int k = 0; k < p->n_groups; k++)
        s->group_device[k] = -1;
    for (size_t d = 0; d < nd; d++)
        s->last[d] = -1;
    s->fits = 1;
    etf_static_level(p, s->blevel);
    /* memory slots: decreasing b-level (a topological order: ties keep
     * the graph's order); seq is free scratch until scheduling starts */
    for (size_t i = 0; i < n; i++)
        s->seq[i] = p->g->topo[i];
    sort_state = s;
    qsort(s->seq, n, sizeof *s->seq, by_level_desc);
    if (pmem_init(&s->mem, p, s->seq, o->margin, err))
        return OP_ENOMEM;
    return OP_OK;
}

static void state_destroy(etf_state *s)
{
    free(s->device_of);
    free(s->group_device);
    free(s->preds_left);
    free(s->alive);
    free(s->seq);
    free(s->stuck);
    free(s->last);
    free(s->scheduled);
    free(s->arr);
    free(s->urgent);
    free(s->finish);
    free(s->start);
    free(s->blevel);
    free(s->dev_free);
    for (int d = 0; s->pending && d < s->nd; d++)
        pheap_free(&s->pending[d]);
    for (int d = 0; s->avail && d < s->nd; d++)
        pheap_free(&s->avail[d]);
    free(s->pending);
    free(s->avail);
    pmem_destroy(&s->mem);
}

/* Data arrival time of ready op v on device d. */
static double arrival(const etf_state *s, int v, int d)
{
    const op_graph *g = s->p->g;
    double t = 0;
    for (int k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
        int u = g->pred[k], du = s->device_of[u];
        double a = s->finish[u];
        if (du != d)
            a += op_cluster_transfer_us(s->p->c, du, d, g->edge_bytes[g->pred_edge[k]]);
        if (a > t)
            t = a;
    }
    return t;
}

static op_status make_ready(etf_state *s, int v, op_error *err)
{
    double latest = 0;
    for (int d = 0; d < s->nd; d++) {
        double *a = &s->arr[(size_t)v * s->nd + d];
        *a = INFINITY;
        if (!placer_allowed(s->p, s->group_device, v, d))
            continue;
        *a = arrival(s, v, d);
        if (*a > latest)
            latest = *a;
        if (pheap_push(&s->pending[d], *a, -s->blevel[v], v, err))
            return OP_ENOMEM;
        s->alive[v]++;
    }
    s->urgent[v] = latest;
    return OP_OK;
}

/* May v still go to d?  Scheduled ops are stale entries, not refusals. */
static int still_fits(etf_state *s, int v, int d)
{
    int grp = s->p->group_of[v];
    if (grp != OP_NONE && s->group_device[grp] >= 0 && s->group_device[grp] != d)
        return 0;
    return pmem_fits(&s->mem, v, d, s->device_of);
}

/* Drop the top entry of h (for device d); an op refused by every device
 * becomes stuck. */
static void drop_top(etf_state *s, pheap *h)
{
    int v = h->a[0].id;
    pheap_pop(h);
    if (!s->scheduled[v] && --s->alive[v] == 0)
        s->stuck[s->n_stuck++] = v;
}

/* Best ETF candidate of device d: op in *v, start time returned; -1 if none. */
static double device_candidate(etf_state *s, int d, int *v, op_error *err)
{
    pheap *pend = &s->pending[d], *av = &s->avail[d];
    while (pend->n && pend->a[0].k1 <= s->dev_free[d]) {
        pheap_entry e = pend->a[0];
        pheap_pop(pend);
        if (pheap_push(av, e.k2, 0, e.id, err))
            return -2;
    }
    while (av->n) {
        int w = av->a[0].id;
        if (!s->scheduled[w] && still_fits(s, w, d)) {
            *v = w;
            return s->dev_free[d];
        }
        drop_top(s, av);
    }
    while (pend->n) {
        int w = pend->a[0].id;
        if (!s->scheduled[w] && still_fits(s, w, d)) {
            *v = w;
            return pend->a[0].k1;
        }
        drop_top(s, pend);
    }
    return -1;
}

/* m-SCT: the favorite child of d's last op, if d is reserved for it. */
static int awake_child(etf_state *s, int d)
{
    if (!s->o->favorite || s->last[d] < 0)
        return -1;
    int fc = s->o->favorite[s->last[d]];
    if (fc < 0 || s->scheduled[fc] || s->preds_left[fc] > 0)
        return -1;
    const double *a = &s->arr[(size_t)fc * s->nd];
    if (!isfinite(a[d]) || !still_fits(s, fc, d))
        return -1;
    for (int e = 0; e < s->nd; e++)
        if (a[e] < a[d] && still_fits(s, fc, e))
            return -1;
    return fc;
}

static op_status schedule_op(etf_state *s, int v, int d, double start, op_error *err)
{
    const op_graph *g = s->p->g;
    pmem_commit(&s->mem, v, d, s->device_of);
    s->device_of[v] = d;
    int grp = s->p->group_of[v];
    if (grp != OP_NONE)
        s->group_device[grp] = d;
    s->scheduled[v] = 1;
    s->start[v] = start;
    s->finish[v] = start + op_exec_us(s->p, v, d);
    s->dev_free[d] = s->finish[v];
    s->last[d] = v;
    s->seq[s->n_sched++] = v;
    for (int k = g->succ_off[v]; k < g->succ_off[v + 1]; k++) {
        int w = g->succ[k];
        if (--s->preds_left[w] == 0 && make_ready(s, w, err))
            return OP_ENOMEM;
    }
    return OP_OK;
}

/* Start of ready op v on d. */
static double start_on(const etf_state *s, int v, int d)
{
    double a = arrival(s, v, d);
    return a > s->dev_free[d] ? a : s->dev_free[d];
}

/* Ops every device dropped: the fitting device where they start first
 * (memory may have freed up since), else fail, or (best effort) the
 * roomiest device. */
static op_status place_stuck(etf_state *s, op_error *err)
{
    while (s->n_stuck) {
        int v = s->stuck[--s->n_stuck];
        if (s->scheduled[v])
            continue;
        int d = -1;
        for (int e = 0; e < s->nd; e++)
            if (placer_allowed(s->p, s->group_device, v, e) && still_fits(s, v, e) &&
                (d < 0 || start_on(s, v, e) < start_on(s, v, d)))
                d = e;
        if (d < 0 && !s->best_effort)
            return op_fail(err, OP_EINFEASIBLE,
                           "%s: op '%s' fits in the memory of no device (liveness estimate, "
                           "placer_mem.h; use --best-effort to place anyway)",
                           s->o->name, s->p->g->op_name[v]);
        if (d < 0) {
            s->fits = 0;
            for (int e = 0; e < s->nd; e++) /* the group's device, if set, is the only one allowed */
                if (placer_allowed(s->p, s->group_device, v, e) &&
                    (d < 0 || pmem_room(&s->mem, e) > pmem_room(&s->mem, d)))
                    d = e;
        }
        double a = arrival(s, v, d);
        if (schedule_op(s, v, d, a > s->dev_free[d] ? a : s->dev_free[d], err))
            return OP_ENOMEM;
    }
    return OP_OK;
}

static op_status run_schedule(etf_state *s, op_error *err)
{
    const op_graph *g = s->p->g;
    for (int t = 0; t < s->n; t++) {
        int v = g->topo[t];
        if (s->preds_left[v] == 0 && make_ready(s, v, err))
            return OP_ENOMEM;
    }
    while (s->n_sched < s->n) {
        op_status st = place_stuck(s, err);
        if (st)
            return st;
        if (s->n_sched == s->n)
            break;
        int best_v = -1, best_d = -1;
        double best_t = INFINITY;
        for (int d = 0; d < s->nd; d++) {
            int v = -1;
            double t = device_candidate(s, d, &v, err);
            if (t == -2)
                return OP_ENOMEM;
            int fc = awake_child(s, d);
            if (fc >= 0 && !(v >= 0 && t == s->dev_free[d] && s->urgent[v] <= t)) {
                v = fc;
                double a = s->arr[(size_t)fc * s->nd + d];
                t = a > s->dev_free[d] ? a : s->dev_free[d];
            }
            if (v < 0)
                continue;
            if (t < best_t || (t == best_t && s->blevel[v] > s->blevel[best_v]) ||
                (t == best_t && s->blevel[v] == s->blevel[best_v] && v < best_v)) {
                best_t = t;
                best_v = v;
                best_d = d;
            }
        }
        if (best_v >= 0) {
            if (schedule_op(s, best_v, best_d, best_t, err))
                return OP_ENOMEM;
        } else if (!s->n_stuck) {
            return op_fail(err, OP_EINTERNAL, "%s: no ready op although %d remain", s->o->name,
                           s->n - s->n_sched);
        }
    }
    return OP_OK;
}

op_status etf_schedule(const op_place_ctx *ctx, const etf_options *o, op_placement *out,
                       etf_trace *trace, op_error *err)
{
    etf_state s;
    op_status st = state_init(&s, ctx, o, err);
    if (!st)
        st = run_schedule(&s, err);
    if (!st) {
        memcpy(out->device_of, s.device_of, (size_t)s.n * sizeof(int));
        if (o->set_order)
            st = op_placement_set_order_from_sequence(out, s.seq, err);
        if (trace) {
            memcpy(trace->start, s.start, (size_t)s.n * sizeof(double));
            memcpy(trace->sequence, s.seq, (size_t)s.n * sizeof(int));
        }
    }
    if (o->estimate_fits)
        *o->estimate_fits = s.fits;
    state_destroy(&s);
    return st;
}

static op_status etf_attempt(const op_place_ctx *ctx, void *arg, const double *margin,
                             op_placement *out, int *fits, op_error *err)
{
    etf_options *o = arg;
    o->margin = margin;
    o->estimate_fits = fits;
    return etf_schedule(ctx, o, out, NULL, err);
}

op_status etf_schedule_checked(const op_place_ctx *ctx, etf_options *o, op_placement *out,
                               op_error *err)
{
    return pmem_place_checked(ctx, o->name, etf_attempt, o, out, err);
}
