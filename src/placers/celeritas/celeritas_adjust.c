/*
 * celeritas_adjust.c - Adjusting Placement (Celeritas section 5.2,
 * Algorithm 2).
 *
 * Ops are taken in sequence (CPD-TOPO of the fused graph).  For each op v
 * and device d with room (else EST = +inf):
 *     pre_t(v) = max over preds u of Fin_t[u] + (d_u != d) * c(u -> d)
 *     EST(d)   = the start of the earliest idle slot of d at or after pre_t
 *                that is long enough for v (insertion into idle slots, eq. 7)
 * v stays on d_k, the device of the previous op in the sequence, unless the
 * device d_1 with the smallest EST starts it earlier by more than
 *     back_cost = max over v's out-edges of the transfer time d_1 -> d_k (eq. 8)
 * (condition 9).  When d_k has no room the earliest device with room is
 * taken; when no device has room, the best-effort fallback (the allowed
 * device with the most memory left) is, and v is scheduled there at its
 * earliest slot.  The first op of the sequence has no d_k and takes d_1.
 *
 * Differences from the paper, all where it is silent:
 *  - transfer times use the cluster's actual link between the two devices
 *    (latency + bytes * us_per_byte);
 *  - with ps->contention (a departure: the paper's c_{p,i} is
 *    contention-free, which is ps->contention = 0), transfers are planned
 *    like the simulator moves them (formats.md 5.3-5.4): one per (source
 *    op, destination device), reused by later consumers on that device
 *    unless they need more bytes, each behind every transfer booked on its
 *    channel (first come, first served, as the simulator's channels), and
 *    an op's own inputs queue behind each other in its EST as
 *    commit_transfers books them, so estimate and commit agree.  On
 *    high-CCR graphs over PCIe the contention-free plan was off by up to
 *    10x from the simulator.  An earlier version inserted a transfer into
 *    the earliest gap of its channel (as ops go into device gaps): a
 *    transfer booked later in the sequence then overtook one issued
 *    before it, which FIFO channels never do, and the plan was
 *    unrealizable: on the Celeritas paper's NMT (4 x 2048, b512, 40 steps,
 *    4 x v100-pcie) it planned 2.01 s where the simulator, even given the
 *    planned per-device order, measured 3.10 s; with FIFO booking it plans
 *    2.77 s, the simulator measures 2.78 s with that order and 2.65 s
 *    first-ready-first (bench/RESULTS.md, "Expert and Celeritas");
 *  - memory: placer_mem.h's liveness estimate (celeritas_place.h);
 *  - colocation: an op whose group is already placed may only use that
 *    device; ties in EST go to the smaller device index.
 * The planned start times are returned in start_us so the caller may hand
 * the simulator the per-device order of this schedule.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_hooks.h"
#include "placers/celeritas/celeritas_place.h"

typedef struct slot {
    double start, end;
} slot;

/* Busy intervals of each device, sorted by start, non-overlapping; u, when
 * set, keeps their union (touching intervals merged), which answers the
 * same searches for a nonzero width without walking a run of back-to-back
 * intervals one by one (10^5 one-microsecond ops on a device: quadratic). */
typedef struct timeline {
    int nd;
    slot **iv;
    int *len, *cap;
    struct timeline *u;
} timeline;

static op_status timeline_init(timeline *t, int nd, op_error *err)
{
    t->nd = nd;
    t->u = NULL;
    t->iv = op_calloc((size_t)nd, sizeof *t->iv, err);
    t->len = op_calloc((size_t)nd, sizeof *t->len, err);
    t->cap = op_calloc((size_t)nd, sizeof *t->cap, err);
    return t->iv && t->len && t->cap ? OP_OK : OP_ENOMEM;
}

static void timeline_destroy(timeline *t)
{
    for (int d = 0; t->iv && d < t->nd; d++)
        free(t->iv[d]);
    free(t->iv);
    free(t->len);
    free(t->cap);
}

/* The first of iv[0..len) ending after x. */
static int first_ending_after(const slot *iv, int len, double x)
{
    int lo = 0, hi = len;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (iv[mid].end <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Earliest start >= ready where [start, start + w) fits between busy slots. */
static double earliest_slot(const timeline *t, int d, double ready, double w)
{
    if (w > 0 && t->u) /* the union blocks exactly what the intervals do */
        t = t->u;
    const slot *iv = t->iv[d];
    int lo = first_ending_after(iv, t->len[d], ready);
    double s = ready;
    for (int k = lo; k < t->len[d]; k++) {
        if (s + w <= iv[k].start)
            return s;
        if (iv[k].end > s)
            s = iv[k].end;
    }
    return s;
}

static op_status union_add(timeline *m, int d, double start, double end, op_error *err);

static op_status timeline_insert(timeline *t, int d, double start, double end, op_error *err)
{
    size_t cap = (size_t)t->cap[d];
    if (op_reserve((void **)&t->iv[d], sizeof(slot), &cap, (size_t)t->len[d] + 1, err))
        return OP_ENOMEM;
    t->cap[d] = (int)cap;
    slot *iv = t->iv[d];
    int k = t->len[d];
    while (k > 0 && iv[k - 1].start > start) {
        iv[k] = iv[k - 1];
        k--;
    }
    iv[k] = (slot){start, end};
    t->len[d]++;
    return t->u ? union_add(t->u, d, start, end, err) : OP_OK;
}

/* Add [start, end) to row d of the union m, merging it with every interval
 * it overlaps or touches (an empty one stays a point unless it touches an
 * interval, which then blocks whatever it did). */
static op_status union_add(timeline *m, int d, double start, double end, op_error *err)
{
    slot *iv = m->iv[d];
    int len = m->len[d], first = first_ending_after(iv, len, start);
    if (first > 0 && iv[first - 1].end == start) /* touching it: merged too */
        first--;
    int last = first;
    while (last < len && iv[last].start <= end)
        last++;
    if (first == last)
        return timeline_insert(m, d, start, end, err);
    double s = iv[first].start < start ? iv[first].start : start;
    double e = iv[last - 1].end > end ? iv[last - 1].end : end;
    iv[first] = (slot){s, e};
    memmove(iv + first + 1, iv + last, (size_t)(len - last) * sizeof *iv);
    m->len[d] -= last - first - 1;
    return OP_OK;
}

/* Transfers planned so far, per (source op, destination device): arrival
 * time (-1: none) and bytes sent. */
typedef struct xfer_book {
    double *arrive;
    int64_t *sent;
} xfer_book;

/* The transfers of one op's inputs planned so far (its EST books them on
 * top of the channel timelines in the order commit_transfers will): each
 * one's channel and slot, and per channel their union (touching slots
 * merged), on which a search skips a run of back-to-back transfers at once
 * (an op with 10^5 inputs over one channel: one step, not 10^5 each). */
typedef struct own_xfers {
    int n;
    int *chan;
    slot *at;
    timeline merged;
    int oom; /* set when the union could not grow: the pass fails with OP_ENOMEM */
} own_xfers;

/* Start of a transfer ready at `ready` on channel chan: behind every
 * transfer booked on the channel (first come, first served, as the
 * simulator's channels, formats.md 5.4; an earlier gap is not used: a
 * transfer booked later in the sequence but placed in a gap ahead of one
 * issued earlier would overtake it, which FIFO never does) and in the
 * earliest gap of the op's own inputs planned before it. */
static double earliest_channel_slot(const timeline *ch, const own_xfers *own, int chan,
                                    double ready, double w)
{
    if (ch->len[chan] && ch->iv[chan][ch->len[chan] - 1].end > ready)
        ready = ch->iv[chan][ch->len[chan] - 1].end; /* FIFO: behind every booked transfer */
    if (!own)
        return ready;
    if (w > 0) /* the union blocks exactly what its slots do */
        return earliest_slot(&own->merged, chan, ready, w);
    for (;;) { /* an empty transfer fits where two slots touch: the slots themselves */
        double later = ready;
        for (int i = 0; i < own->n; i++)
            if (own->chan[i] == chan && ready < own->at[i].end && own->at[i].start < ready + w &&
                own->at[i].end > later)
                later = own->at[i].end;
        if (later == ready)
            return ready;
        ready = later;
    }
}

/* Planned arrival on d of u's output (u already placed, not on d).  With
 * contention (ps->contention), one transfer per (u, d) as in the simulator
 * (formats.md 5.3): a transfer already planned is reused, else the earliest
 * gap of the channel after Fin_t[u] is taken (channels as device timelines),
 * behind the op's own inputs booked before it (own, NULL: none), which is
 * how commit_transfers books them: estimate and commit agree. */
static double arrival(const cel_pass *ps, const timeline *ch, const xfer_book *xb,
                      own_xfers *own, const double *fin, int u, int d, int64_t bytes)
{
    const op_cluster *c = ps->p->c;
    int du = ps->device_of[u];
    double w = op_cluster_transfer_us(c, du, d, bytes);
    if (!ps->contention)
        return fin[u] + w;
    size_t k = (size_t)u * ps->p->nd + d;
    if (xb->arrive[k] >= 0 && bytes <= xb->sent[k])
        return xb->arrive[k];
    int chan = op_cluster_chan(c, du, d);
    double s = earliest_channel_slot(ch, own, chan, fin[u], w);
    if (own) {
        own->chan[own->n] = chan;
        own->at[own->n++] = (slot){s, s + w};
        if (union_add(&own->merged, chan, s, s + w, NULL))
            own->oom = 1;
    }
    return s + w;
}

/* COMP_EST without the memory test. */
static double comp_est(const cel_pass *ps, const timeline *t, const timeline *ch,
                       const xfer_book *xb, own_xfers *own, const double *fin, int v, int d)
{
    const op_problem *p = ps->p;
    const op_graph *g = p->g;
    double pre = 0;
    for (int i = 0; own && i < own->n; i++)
        own->merged.len[own->chan[i]] = 0;
    if (own)
        own->n = 0;
    for (int j = g->pred_off[v]; j < g->pred_off[v + 1]; j++) {
        if ((j & 1023) == 0 && op_interrupted())
            return INFINITY; /* cel_place_adjusting stops at the next op */
        int u = g->pred[j];
        double x = ps->device_of[u] == d
                       ? fin[u]
                       : arrival(ps, ch, xb, own, fin, u, d, ps->edge_bytes[g->pred_edge[j]]);
        if (x > pre)
            pre = x;
    }
    return earliest_slot(t, d, pre, op_exec_us(p, v, d));
}

/* Book the transfers v on d needs (contention only). */
static op_status commit_transfers(cel_pass *ps, timeline *ch, xfer_book *xb,
                                  const double *fin, int v, int d, op_error *err)
{
    const op_problem *p = ps->p;
    const op_graph *g = p->g;
    const op_cluster *c = p->c;
    if (!ps->contention)
        return OP_OK;
    for (int j = g->pred_off[v]; j < g->pred_off[v + 1]; j++) {
        int u = g->pred[j], du = ps->device_of[u];
        size_t k = (size_t)u * p->nd + d;
        int64_t bytes = ps->edge_bytes[g->pred_edge[j]];
        if (du == d || (xb->arrive[k] >= 0 && bytes <= xb->sent[k]))
            continue;
        int chan = op_cluster_chan(c, du, d);
        double w = op_cluster_transfer_us(c, du, d, bytes);
        double s = earliest_channel_slot(ch, NULL, chan, fin[u], w);
        xb->arrive[k] = s + w;
        xb->sent[k] = bytes;
        if (timeline_insert(ch, chan, s, s + w, err))
            return OP_ENOMEM;
    }
    return OP_OK;
}

static double back_cost(const cel_pass *ps, int v, int from, int to)
{
    const op_problem *p = ps->p;
    const op_graph *g = p->g;
    if (from == to)
        return 0;
    int64_t most = -1;
    for (int j = g->succ_off[v]; j < g->succ_off[v + 1]; j++)
        if (ps->edge_bytes[g->succ_edge[j]] > most)
            most = ps->edge_bytes[g->succ_edge[j]];
    return most < 0 ? 0 : op_cluster_transfer_us(p->c, from, to, most);
}

/* Algorithm 2 lines 6-18 for one op: the chosen device. */
static int choose_device(cel_pass *ps, cel_memory *m, const timeline *t,
                         const timeline *ch, const xfer_book *xb, own_xfers *own,
                         const double *fin, int v, int prev, double *est)
{
    const op_problem *p = ps->p;
    int d1 = -1;
    for (int d = 0; d < p->nd; d++) {
        est[d] = INFINITY;
        if (cel_memory_allowed(m, v, d) && cel_memory_fits(m, ps->device_of, v, d))
            est[d] = comp_est(ps, t, ch, xb, own, fin, v, d);
        if (est[d] < INFINITY && (d1 < 0 || est[d] < est[d1]))
            d1 = d;
    }
    if (d1 < 0) {
        ps->n_fallback++;
        return cel_memory_fallback(m, v);
    }
    if (prev < 0 || prev == d1)
        return d1;
    if (est[prev] - est[d1] > back_cost(ps, v, d1, prev)) {
        ps->n_moved++;
        return d1;
    }
    return prev;
}

op_status cel_place_adjusting(cel_pass *ps, op_error *err)
{
    const op_problem *p = ps->p;
    if (!ps->edge_bytes)
        ps->edge_bytes = p->g->edge_bytes;
    cel_memory m;
    timeline t, tu, ch;
    memset(&t, 0, sizeof t);
    memset(&tu, 0, sizeof tu);
    memset(&ch, 0, sizeof ch);
    size_t n_arrive = ps->contention ? (size_t)p->n * (size_t)p->nd : 0;
    double *fin = op_malloc(((size_t)p->n + 1) * sizeof *fin, err);
    double *est = op_malloc((size_t)p->nd * sizeof *est, err);
    xfer_book xb = {op_malloc((n_arrive + 1) * sizeof *xb.arrive, err),
                    op_malloc((n_arrive + 1) * sizeof *xb.sent, err)};
    int max_in = 1;
    for (int v = 0; v < p->n; v++)
        if (p->g->pred_off[v + 1] - p->g->pred_off[v] > max_in)
            max_in = p->g->pred_off[v + 1] - p->g->pred_off[v];
    own_xfers own_buf = {0, op_malloc((size_t)max_in * sizeof(int), err),
                         op_malloc((size_t)max_in * sizeof(slot), err), {0}, 0};
    own_xfers *own = ps->contention ? &own_buf : NULL;
    op_status st = !fin || !est || !xb.arrive || !xb.sent || !own_buf.chan || !own_buf.at
                       ? OP_ENOMEM
                       : timeline_init(&own_buf.merged, p->c->n_chan, err);
    if (!st)
        st = cel_memory_init(&m, ps, err);
    if (st) {
        timeline_destroy(&own_buf.merged);
        free(own_buf.chan);
        free(own_buf.at);
        free(fin);
        free(est);
        free(xb.arrive);
        free(xb.sent);
        return st;
    }
    for (size_t k = 0; k < n_arrive; k++)
        xb.arrive[k] = -1;
    if ((st = timeline_init(&t, p->nd, err)) || (st = timeline_init(&tu, p->nd, err)) ||
        (st = timeline_init(&ch, p->c->n_chan, err)))
        goto done;
    t.u = &tu;
    for (int v = 0; v < p->n; v++)
        ps->device_of[v] = -1;
    ps->n_fallback = ps->n_moved = 0;
    ps->makespan_us = 0;
    int prev = -1;
    for (int k = 0; k < p->n && !st; k++) {
        if (op_interrupted()) { /* an op with 10^5 inputs takes seconds */
            st = op_fail(err, OP_EINTERNAL, "celeritas: stopped at Ctrl-C");
            break;
        }
        int v = ps->seq[k];
        int d = choose_device(ps, &m, &t, &ch, &xb, own, fin, v, prev, est);
        double start = est[d] < INFINITY ? est[d] : comp_est(ps, &t, &ch, &xb, own, fin, v, d);
        if (own && own->oom) {
            st = op_fail(err, OP_ENOMEM, "out of memory");
            break;
        }
        double w = op_exec_us(p, v, d);
        fin[v] = start + w;
        if (ps->start_us)
            ps->start_us[v] = start;
        if ((st = commit_transfers(ps, &ch, &xb, fin, v, d, err)))
            break;
        ps->device_of[v] = d;
        cel_memory_commit(&m, ps->device_of, v, d);
        st = timeline_insert(&t, d, start, fin[v], err);
        if (fin[v] > ps->makespan_us)
            ps->makespan_us = fin[v];
        prev = d;
    }
done:
    timeline_destroy(&t);
    timeline_destroy(&tu);
    timeline_destroy(&ch);
    cel_memory_destroy(&m);
    free(fin);
    free(est);
    free(xb.arrive);
    free(xb.sent);
    timeline_destroy(&own_buf.merged);
    free(own_buf.chan);
    free(own_buf.at);
    return st;
}
