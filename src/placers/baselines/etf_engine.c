/*
 * etf_engine.c - memory-constrained Earliest-Time-First list scheduling,
 * the engine of Baechi's m-ETF and m-SCT (Jeon et al., SoCC 2020, section
 * 4; summarized in Celeritas section 2 and Pesto section 5.2).
 *
 * ETF (Hwang, Chow, Anger, Lee 1989): repeatedly pick, among every ready op
 * (all predecessors scheduled) and every device, the pair with the earliest
 * start time, start = max(device free, data arrival on that device); ties go
 * to the op earlier in a fixed order of the ops (o->tie: Baechi's
 * topo_order, the BFS topological order of the file, m_topo_bfs_order; or
 * op_rank_order, which no op order of the file changes), then the smaller
 * device index.
 *
 * Communication as Baechi's placer models it (placer_utils.ReadyOpManager,
 * device.DeviceWrapper): every device has ONE channel, busy while it sends
 * or receives; a tensor (one per source op) is sent once to a device and
 * then cached there.  A transfer of u's tensor from src to d goes
 *     send = max(finish(u), chan(src)), recv = max(send, chan(d)),
 *     arrival = recv + transfer_us(src, d, bytes),
 * moving chan(src) to send + transfer and chan(d) to the arrival; an op's
 * transfers go one by one in predecessor order (by the same fixed order),
 * and it starts at
 * max(device free, its last arrival).  One deliberate difference: Baechi
 * estimates a candidate's start with each transfer on its own (its dry
 * run) and queues them only when it commits, so an op with two large
 * remote inputs looks one transfer earlier than it can start (a CNN's
 * backward convolution moved to an idle GPU for a gain that was not
 * there, bench/RESULTS.md, "Baechi ports side by side"); here the estimate queues them as the
 * commit does, so estimate and commit agree.  The channel is what
 * keeps a CNN's activations on one device: without the channel, every
 * transfer looks free of queueing and ETF sends a branch to an idle device
 * whenever its lone transfer beats the busy device (ResNet-50
 * 7x slower than one GPU in the contract simulator).
 *
 * The "m-" part (Baechi): a device is a candidate
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
 * (urgent time: the latest of its start times over all devices, so by then
 * it could start anywhere; Baechi runs it once that time is reached).
 * Simplification: only the device's best ETF candidate is tested for
 * urgency, not every ready op.
 *
 * Data structures (so a 36,000-op graph takes well under a second): each
 * device keeps two heaps of ready ops, `pending` keyed by data arrival on
 * that device and `avail` (arrival <= device free time) keyed by topological
 * position.  A device's best start is then the top of `avail` at its free
 * time, or the top of `pending` at its arrival.  Channels only move later,
 * so a stored arrival is a lower bound: the top is recomputed when it
 * surfaces and pushed back if it grew (a tensor newly cached on d can make
 * an arrival earlier: the ready consumers of that tensor are pushed again
 * with their new arrival).  Entries are deleted lazily: an op
 * scheduled elsewhere, or one that does not fit, is dropped when it
 * surfaces.  Memory can free up later (placer_mem.h), so an op every
 * device dropped is tested once more on every device before it counts as
 * unplaceable; it then goes to the fitting device where it starts first.
 * Cost: O(n * nd * log n) plus the in-degree work of the memory checks.
 *
 * No op fits anywhere by the estimate: the op goes to the device with the
 * most free memory (Celeritas's best-effort rule) and the simulator decides
 * (pmem_place_checked: OP_EINFEASIBLE only if it overflows there too).
 * The simulator (one channel per ordered device pair, formats.md 5.4)
 * gives the reported time.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/run_ctx.h"
#include "placers/baselines/etf_engine.h"
#include "placers/baselines/baselines.h"
#include "core/pheap.h"
#include "core/sort.h"
#include "placers/placer_mem.h"
#include "placers/placer_util.h"

typedef struct etf_state {
    const op_problem *p;
    const etf_options *o;
    int fits;
    int n, nd;
    int *device_of, *group_device, *preds_left, *alive, *seq, *last;
    int n_sched;
    unsigned char *scheduled;
    double *finish, *start, *blevel, *dev_free;
    double *chan;      /* per device: its one channel is busy until */
    double *scratch;   /* per device: arrival()'s copy of chan */
    double *cached;    /* n x nd: arrival of u's tensor on d, or -1 */
    int *tpos;         /* per op: position in the tie order (o->tie) */
    int *pred_e;       /* per op, at g->pred_off: its in-edges, preds by tpos */
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

static int by_level_desc(const void *a, const void *b, const void *ctx)
{
    int x = *(const int *)a, y = *(const int *)b;
    const etf_state *s = ctx;
    if (s->blevel[x] != s->blevel[y])
        return s->blevel[x] > s->blevel[y] ? -1 : 1;
    return s->tpos[x] - s->tpos[y];
}

/* pred_e: each op's in-edges, their sources in rank order (the order its
 * transfers are committed in, so no op order of the file changes it;
 * rank NULL: the file's order, as Baechi's in_edges); by_pos and fill: n
 * ints of scratch each. */
static void preds_by_tie(const op_graph *g, const int *rank, int *pred_e, int *by_pos, int *fill)
{
    int n = g->n_ops;
    for (int v = 0; v < n; v++) {
        by_pos[rank ? rank[v] : v] = v;
        fill[v] = g->pred_off[v];
    }
    for (int i = 0; i < n; i++) {
        int u = by_pos[i];
        for (int j = g->succ_off[u]; j < g->succ_off[u + 1]; j++)
            pred_e[fill[g->succ[j]]++] = g->succ_edge[j];
    }
}

static op_status state_init(etf_state *s, const op_place_ctx *ctx, const etf_options *o,
                            op_error *err)
{
    const op_problem *p = ctx->p;
    memset(s, 0, sizeof *s);
    s->p = p;
    s->o = o;
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
    s->chan = op_calloc(nd, sizeof(double), err);
    s->scratch = op_calloc(nd, sizeof(double), err);
    s->cached = op_malloc(n * nd * sizeof(double) + 1, err);
    s->tpos = op_malloc(n * sizeof(int) + 1, err);
    s->pred_e = op_malloc((size_t)p->g->n_edges * sizeof(int) + 1, err);
    s->finish = op_malloc(n * sizeof(double) + 1, err);
    s->start = op_malloc(n * sizeof(double) + 1, err);
    s->blevel = op_malloc(n * sizeof(double) + 1, err);
    s->dev_free = op_calloc(nd, sizeof(double), err);
    s->pending = op_calloc(nd, sizeof(pheap), err);
    s->avail = op_calloc(nd, sizeof(pheap), err);
    if (!s->device_of || !s->group_device || !s->preds_left || !s->alive || !s->seq ||
        !s->stuck || !s->last || !s->scheduled || !s->chan || !s->scratch || !s->cached || !s->tpos || !s->pred_e || !s->finish ||
        !s->start || !s->blevel || !s->dev_free || !s->pending || !s->avail)
        return OP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        s->device_of[i] = -1;
        s->preds_left[i] = p->g->pred_off[i + 1] - p->g->pred_off[i];
    }
    for (size_t i = 0; i < n * nd; i++)
        s->cached[i] = -1;
    for (int k = 0; k < p->n_groups; k++)
        s->group_device[k] = -1;
    for (size_t d = 0; d < nd; d++)
        s->last[d] = -1;
    s->fits = 1;
    etf_static_level(p, s->blevel);
    if (o->tie == ETF_TIE_BFS) {
        if (m_topo_bfs_order(p->g, NULL, s->seq, err))
            return OP_ENOMEM;
        for (size_t i = 0; i < n; i++)
            s->tpos[s->seq[i]] = (int)i;
    } else if (op_rank_order(p, o->walk, s->tpos, err)) {
        return OP_ENOMEM;
    }
    preds_by_tie(p->g, o->tie == ETF_TIE_BFS ? NULL : s->tpos, s->pred_e, s->seq, s->stuck);
    /* memory slots: decreasing b-level (a topological order: ties by the
     * tie order); seq is free scratch until scheduling starts */
    for (size_t i = 0; i < n; i++)
        s->seq[i] = p->g->topo[i];
    op_sort(s->seq, n, sizeof *s->seq, by_level_desc, s);
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
    free(s->chan);
    free(s->scratch);
    free(s->cached);
    free(s->tpos);
    free(s->pred_e);
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

/* Data arrival time of ready op v on device d: its transfers as they
 * would be committed (commit_transfers), one by one in predecessor order,
 * on a scratch copy of the channels. */
static double arrival(etf_state *s, int v, int d)
{
    const op_graph *g = s->p->g;
    double t = 0, *ch = NULL;
    for (int k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
        int e = s->pred_e[k], u = g->edge_src[e], du = s->device_of[u];
        double a = s->finish[u];
        if (du != d) {
            double c = s->cached[(size_t)u * s->nd + d];
            if (c >= 0) {
                a = c;
            } else {
                if (!ch) {
                    ch = s->scratch;
                    memcpy(ch, s->chan, (size_t)s->nd * sizeof *ch);
                }
                double w = op_cluster_transfer_us(s->p->c, du, d, g->edge_bytes[e]);
                double send = a > ch[du] ? a : ch[du];
                ch[du] = send + w;
                double recv = send > ch[d] ? send : ch[d];
                a = ch[d] = recv + w;
            }
        }
        if (a > t)
            t = a;
    }
    return t;
}

static double sched_time(etf_state *s, int v, int d)
{
    double a = arrival(s, v, d);
    return a > s->dev_free[d] ? a : s->dev_free[d];
}

static op_status make_ready(etf_state *s, int v, op_error *err)
{
    for (int d = 0; d < s->nd; d++) {
        if (!placer_allowed(s->p, s->group_device, v, d))
            continue;
        if (pheap_push(&s->pending[d], arrival(s, v, d), s->tpos[v], v, err))
            return OP_ENOMEM;
        s->alive[v]++;
    }
    return OP_OK;
}

/* The latest start of ready op v over the devices it may use: by then it
 * could start anywhere (Baechi's urgent_ts). */
static double urgent_time(etf_state *s, int v)
{
    double latest = 0;
    for (int e = 0; e < s->nd; e++)
        if (placer_allowed(s->p, s->group_device, v, e) && pmem_fits(&s->mem, v, e, s->device_of)) {
            double t = sched_time(s, v, e);
            if (t > latest)
                latest = t;
        }
    return latest;
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
    for (;;) {
        /* pending: stored arrivals are lower bounds; settle the top (the
         * memory check, the costly part, waits until an op is chosen) */
        while (pend->n) {
            pheap_entry e = pend->a[0];
            if (s->scheduled[e.id]) {
                drop_top(s, pend);
                continue;
            }
            double a = arrival(s, e.id, d);
            if (a <= s->dev_free[d]) {
                pheap_pop(pend);
                if (pheap_push(av, e.k2, 0, e.id, err))
                    return -2;
                continue;
            }
            if (a != e.k1) {
                pheap_pop(pend);
                if (pheap_push(pend, a, e.k2, e.id, err))
                    return -2;
                continue;
            }
            break;
        }
        if (av->n) {
            pheap_entry e = av->a[0];
            if (s->scheduled[e.id]) {
                drop_top(s, av);
                continue;
            }
            double a = arrival(s, e.id, d);
            if (a > s->dev_free[d]) { /* its channel got busy: back to pending */
                pheap_pop(av);
                if (pheap_push(pend, a, e.k1, e.id, err))
                    return -2;
                continue;
            }
            if (!still_fits(s, e.id, d)) {
                drop_top(s, av);
                continue;
            }
            *v = e.id;
            return s->dev_free[d];
        }
        if (!pend->n)
            return -1;
        if (!still_fits(s, pend->a[0].id, d)) {
            drop_top(s, pend);
            continue;
        }
        *v = pend->a[0].id;
        return pend->a[0].k1;
    }
}

/* m-SCT: the favorite child of d's last op, if d is reserved for it. */
static int awake_child(etf_state *s, int d)
{
    if (!s->o->favorite || s->last[d] < 0)
        return -1;
    int fc = s->o->favorite[s->last[d]];
    if (fc < 0 || s->scheduled[fc] || s->preds_left[fc] > 0)
        return -1;
    if (!placer_allowed(s->p, s->group_device, fc, d) || !still_fits(s, fc, d))
        return -1;
    double here = sched_time(s, fc, d);
    for (int e = 0; e < s->nd; e++)
        if (e != d && placer_allowed(s->p, s->group_device, fc, e) &&
            sched_time(s, fc, e) < here && still_fits(s, fc, e))
            return -1;
    return fc;
}

/* Commit v's transfers to d one by one (Baechi's non-dry run); returns
 * the arrival of v's data on d.  Ready consumers of a tensor newly cached
 * on d are pushed again on d's pending heap with their (earlier) arrival. */
static double commit_transfers(etf_state *s, int v, int d, op_error *err, int *nomem)
{
    const op_graph *g = s->p->g;
    double t = 0;
    for (int k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
        int e = s->pred_e[k], u = g->edge_src[e], du = s->device_of[u];
        double a = s->finish[u];
        if (du != d) {
            double *c = &s->cached[(size_t)u * s->nd + d];
            if (*c < 0) {
                double w = op_cluster_transfer_us(s->p->c, du, d, g->edge_bytes[e]);
                double send = a > s->chan[du] ? a : s->chan[du];
                s->chan[du] = send + w;
                double recv = send > s->chan[d] ? send : s->chan[d];
                s->chan[d] = recv + w;
                *c = recv + w;
                for (int j = g->succ_off[u]; j < g->succ_off[u + 1]; j++) {
                    int x = g->succ[j];
                    if (x != v && !s->scheduled[x] && s->preds_left[x] == 0 &&
                        placer_allowed(s->p, s->group_device, x, d)) {
                        if (pheap_push(&s->pending[d], 0, s->tpos[x], x, err)) {
                            *nomem = 1;
                            return 0;
                        }
                        s->alive[x]++;
                    }
                }
            }
            a = *c;
        }
        if (a > t)
            t = a;
    }
    return t;
}

static op_status schedule_op(etf_state *s, int v, int d, double start, op_error *err)
{
    const op_graph *g = s->p->g;
    int nomem = 0;
    double ready = commit_transfers(s, v, d, err, &nomem);
    if (nomem)
        return OP_ENOMEM;
    start = ready > s->dev_free[d] ? ready : s->dev_free[d];
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
                (d < 0 || sched_time(s, v, e) < sched_time(s, v, d)))
                d = e;
        if (d < 0) {
            if (s->fits) /* the first refusal, for the message if the simulator agrees */
                op_fail(err, OP_EINFEASIBLE, "%s: op '%s' fits in the memory of no device by "
                        "the liveness estimate (placer_mem.h)", s->o->name, s->p->g->op_name[v]);
            s->fits = 0;
            for (int e = 0; e < s->nd; e++) /* the group's device, if set, is the only one allowed */
                if (placer_allowed(s->p, s->group_device, v, e) &&
                    (d < 0 || pmem_room(&s->mem, e) > pmem_room(&s->mem, d)))
                    d = e;
        }
        if (schedule_op(s, v, d, sched_time(s, v, d), err))
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
        if (op_interrupted()) /* a fan-in of 10^5 ops takes seconds */
            return op_fail(err, OP_EINTERNAL, "%s: stopped at Ctrl-C", s->o->name);
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
            if (fc >= 0 && fc != v) {
                /* awake: the favorite child, unless v is urgent first */
                double tf = sched_time(s, fc, d);
                double tu = v >= 0 ? urgent_time(s, v) : INFINITY;
                if (tu <= tf) {
                    t = tu;
                } else {
                    v = fc;
                    t = tf;
                }
            }
            if (v < 0)
                continue;
            if (t < best_t || (t == best_t && s->tpos[v] < s->tpos[best_v])) {
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

/* One run under the simulator check into cand; *over and *step from the
 * simulation of the placement it returns, or *checked 0 (nothing
 * simulated) when Ctrl-C came before the check. */
static op_status etf_checked_run(const op_place_ctx *ctx, etf_options *o, op_placement *cand,
                                 op_sim *sim, op_sim_result *r, double *over, double *step,
                                 int *checked, op_error *err)
{
    int simulated = 0;
    op_status st = pmem_place_checked_sim(ctx, o->name, etf_attempt, o, cand, sim, r,
                                          &simulated, err);
    *checked = simulated || !op_interrupted();
    if (!st && !*checked)
        return OP_OK;
    if (!st && !simulated)
        st = op_sim_run(sim, cand, r, NULL, err);
    *over = op_sim_overflow_bytes(ctx->p, r);
    *step = r->step_time_us;
    return st;
}

/* out := cand (same sizes; out's order replaced by cand's or dropped). */
static op_status keep_candidate(op_placement *out, const op_placement *cand, op_error *err)
{
    op_placement_destroy(out);
    return op_placement_copy(out, cand, err);
}

/* The best placement over the walks tried so far; first: the refusal of
 * the first walk that did not fit. */
typedef struct etf_best {
    double over, step;
    int have;
    op_error first;
} etf_best;

/* Schedule with walk w into cand and keep it in out when the simulator
 * ranks it first so far; a walk that does not fit is noted, not an error. */
static op_status try_walk(const op_place_ctx *ctx, etf_options *o, op_rank_walk w,
                          op_placement *cand, op_sim *sim, op_sim_result *r, etf_best *b,
                          op_placement *out, op_error *err)
{
    double over, step;
    int checked;
    op_error e = {.code = OP_OK};
    o->walk = w;
    op_status st = etf_checked_run(ctx, o, cand, sim, r, &over, &step, &checked, &e);
    if (st == OP_EINFEASIBLE) {
        if (!b->first.code)
            b->first = e;
        return OP_OK;
    }
    if (st && st != OP_ENOMEM && b->have && op_interrupted())
        return OP_OK; /* Ctrl-C within this walk: the best walk before it stands */
    if (st) {
        if (err)
            *err = e;
        return st;
    }
    if (!checked) { /* Ctrl-C before the check: a checked walk before it wins */
        if (b->have)
            return OP_OK;
        b->over = 0;
        b->step = INFINITY;
        b->have = 1;
        return keep_candidate(out, cand, err);
    }
    if (b->have && !op_sim_ranks_before(over, step, b->over, b->step))
        return OP_OK;
    b->over = over;
    b->step = step;
    b->have = 1;
    return keep_candidate(out, cand, err);
}

op_status etf_schedule_checked(const op_place_ctx *ctx, etf_options *o, op_placement *out,
                               op_error *err)
{
    if (o->tie != ETF_TIE_RANK)
        return pmem_place_checked(ctx, o->name, etf_attempt, o, out, err);
    const op_problem *p = ctx->p;
    op_sim *sim = op_sim_new(p, err);
    op_sim_result r = {0};
    op_placement cand = {0};
    op_status st = OP_ENOMEM;
    etf_best b = {.first = {.code = OP_OK}};
    if (sim && !op_sim_result_init(&r, p, err) && !op_placement_init(&cand, p->n, p->nd, err)) {
        st = try_walk(ctx, o, OP_RANK_LONGEST_FIRST, &cand, sim, &r, &b, out, err);
        if (!st && !(b.have && op_interrupted()))
            st = try_walk(ctx, o, OP_RANK_SHORTEST_FIRST, &cand, sim, &r, &b, out, err);
        if (!st && !(b.have && op_interrupted()) && (!b.have || b.over > 0))
            /* neither fits: breadth first too */
            st = try_walk(ctx, o, OP_RANK_BREADTH_FIRST, &cand, sim, &r, &b, out, err);
        if (!st && !b.have) {
            st = b.first.code;
            if (err)
                *err = b.first;
        }
    }
    op_placement_destroy(&cand);
    op_sim_result_destroy(&r);
    op_sim_free(sim);
    return st;
}
