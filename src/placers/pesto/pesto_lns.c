/*
 * pesto_lns.c - Pesto's ILP where it can win: exactly on small windows of
 * the original graph, around an incumbent (large-neighbourhood search).
 *
 * One step:
 *   1. Simulate the incumbent (a placement with a per-device order); sort
 *      the ops by simulated start.  The critical chain is walked back from
 *      the op that finishes last, each time to the predecessor or the
 *      device-predecessor that finished latest.  Anchors: the chain's links
 *      that can shrink (not a DAG edge run back to back: a wait for the
 *      device, a transfer or idling) and ops not at their fastest speed,
 *      the longest waits first, then the links without a wait
 *      alternately from the chain's end and spread over it (a golden-ratio
 *      sequence of their positions); a window that does not help moves on
 *      to the next anchor.
 *      None: the chain is a DAG path at full speed from 0, the incumbent is
 *      optimal and the search stops (improvable_anchors).
 *   2. Window: a slice of the start-time order around an anchor, widened
 *      until it holds K ops of the free devices (two of three windows: the
 *      anchor's and the device least busy around it; the third: all):
 *      those K are free, the slice's ops on other devices stay where and
 *      when they are.  Every op before the slice starts no later than it
 *      and every op after no earlier, so paths between window ops run
 *      inside the slice; paths through its fixed ops (DAG edges and the
 *      fixed device orders) become S_b >= C_a rows, so the new per-device
 *      orders cannot deadlock.
 *   3. The window's ILP (the model of pesto_ilp.c restricted to the window;
 *      times in microseconds of the incumbent's step; starts in [t0, step],
 *      t0 the slice's first start, so every big-M is the window's horizon):
 *        x_vd one-hot (eligible devices of v and its colocation group),
 *        S_v, C_v = S_v + sum_d exec(v,d) x_vd; the window is closed under
 *        colocation: a group's members outside it (far members: the
 *        exporter colocates a forward op with its backward op and its
 *        update, far apart in time) follow the group's device, with no
 *        start column of their own; their work moves between the devices'
 *        load and tail rows and their fixed inputs and outputs get rows
 *        or penalties from the incumbent's schedule in the frame below
 *        (far_terms, far_member_rows: an approximation, the simulator
 *        judges); an edge between a window op and a far member pays a
 *        transfer only when their groups end up apart (dev_owner);
 *        the frame: ops before the slice keep their times, ops after it
 *        all move earlier by what the window gains (step - Cmax), which
 *        is what the rows to the tail below say;
 *        device release: S_v >= r_d x_vd, r_d the finish of the last op
 *        before the window on d;
 *        transfers as the simulator sends them (formats.md 5.3): one per
 *        (source op, destination device) of the largest edge to a consumer
 *        there.  sent_bytes() takes the consumers outside the window into
 *        the size; a window consumer with a larger edge from the same
 *        source adds a big-M row that holds when both are on t:
 *        the inputs from ops outside (fixed_arrival): S_v >= sum_t A_vt x_vt,
 *          A_vt the last arrival on t: a transfer the incumbent sends
 *          already arrives when it did; a new one is queued first come
 *          first served behind the channel's traffic (formats.md 5.4),
 *          and a device whose new transfers would delay the incumbent's
 *          traffic past what its consumers allow is closed (x_vt = 0);
 *        an input from u inside: S_v >= C_u + sum_{s != t} T(s, t) y_ust,
 *          y_ust >= x_us + x_vt - 1;
 *        an output to w outside (device dw, latest start L_w):
 *          Cmax >= C_v + sum_{s != dw} T(s, dw) x_vs + (step - L_w),
 *          where L_w is how late w could start, the rest as scheduled,
 *          without lengthening the step (slack(); with s_w instead, every
 *          successor would count as critical and no window could move an
 *          op whose consumers have slack; a transfer's delay there is the
 *          incumbent's, its queueing included);
 *        a window op's transfer is issued at C >= t0 and queues behind
 *          the channel's traffic issued before t0 (free_c, its last end):
 *          S_v >= sum y_ust (free_c(s,t) + T) for an input from a window
 *          op, Cmax >= sum_s x_vs (free_c(s,dw) + T) + (step - L_w) for an
 *          output to a fixed op;
 *        the ops after the window on device d (first latest start a_d):
 *          Cmax >= C_v + (step - a_d) - M (1 - x_vd), and the load row
 *          Cmax >= r_d + sum_v exec(v,d) x_vd + (step - a_d);
 *        one op at a time per device: the disjunction of pesto_ilp.c for
 *          every pair of the window not ordered by the DAG;
 *        objective: min Cmax.
 *      Channels enter only through the incumbent's queues above: the
 *      window's own transfers do not queue behind each other in the model
 *      (no congestion rows), and memory is not modelled: the simulator
 *      judges every candidate, and one that runs out of memory ranks after
 *      one that fits (op_sim_ranks_before).
 *   4. MIP start: the incumbent's devices and order.  The solution's devices
 *      and start order (ops before the window, the window by S, ops after)
 *      make the candidate; it replaces the incumbent when the simulator
 *      ranks it before.
 *   5. Window size adapts: a window solved to optimality grows by a quarter,
 *      one cut by the time limit shrinks by a fifth (within min..max); CBC
 *      gets an eighth of the time left per window (0.5..4 s).
 *   6. Work beside (pesto_lns_opts idle/sync, pesto.c's refinement): idle
 *      runs while CBC solves; after each window sync may hand over a
 *      placement it ranks before the incumbent, which the search takes
 *      (given its simulated order when it has none).
 * Counted (pesto_lns_stats): windows solved, kept, solved to optimality,
 * and of those the ones whose optimum is no better than the incumbent (the
 * incumbent is optimal within the window, in the model); with --progress,
 * the first window reports what the incumbent's critical chain is made of.
 */
#include "placers/pesto/pesto_lns.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solve/lp.h"
#include "core/sort.h"

typedef struct sched {
    double *start, *finish, *latest; /* latest: latest start keeping the step (see slack) */
    int *by_start, *rank, *prev_dev;
    double step, over;
    /* the incumbent's transfers (NULL before its first traced run): by
     * source op (src_off[u]..src_off[u+1] in src_ix) and by channel in
     * issue order (chan_off/chan_ix; a channel is first come first served,
     * so its start order is its issue order) */
    const op_sim_transfer *tr;
    int ntr, *src_off, *src_ix, *chan_off, *chan_ix;
} sched;

typedef struct by_start_key {
    const double *start;
    const int *topo;
} by_start_key;

static int by_start_cmp(const void *a, const void *b, const void *ctx)
{
    const by_start_key *k = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (k->start[x] != k->start[y])
        return k->start[x] < k->start[y] ? -1 : 1;
    return (k->topo[x] > k->topo[y]) - (k->topo[x] < k->topo[y]);
}

static void sort_ops(int *ops, int n, const double *key, const int *topo_pos)
{
    by_start_key k = {key, topo_pos};
    op_sort(ops, (size_t)n, sizeof *ops, by_start_cmp, &k);
}

/* One run of pl into the caller's trace t: start/finish times (either may
 * be NULL), step, overflow and oom (may be NULL). */
static op_status run_traced(const op_problem *p, op_sim *sim, const op_placement *pl,
                            op_sim_trace *t, double *start, double *finish, double *step_us,
                            double *overflow, int *oom, op_error *err)
{
    op_sim_result r;
    op_status st = op_sim_result_init(&r, p, err);
    if (st)
        return st;
    if (!(st = op_sim_run(sim, pl, &r, t, err))) {
        if (start)
            memcpy(start, t->start_us, (size_t)p->n * sizeof *start);
        if (finish)
            memcpy(finish, t->finish_us, (size_t)p->n * sizeof *finish);
        *step_us = r.step_time_us;
        *overflow = op_sim_overflow_bytes(p, &r);
        if (oom)
            *oom = r.oom;
    }
    op_sim_result_destroy(&r);
    return st;
}

op_status pesto_simulate(const op_problem *p, op_sim *sim, const op_placement *pl, double *start,
                         double *finish, double *step_us, double *overflow, int *oom,
                         op_error *err)
{
    op_sim_trace t;
    op_status st = op_sim_trace_init(&t, p, err);
    if (st)
        return st;
    st = run_traced(p, sim, pl, &t, start, finish, step_us, overflow, oom, err);
    op_sim_trace_destroy(&t);
    return st;
}

static op_status simulate(const op_problem *p, op_sim *sim, const op_placement *pl, sched *s,
                          op_error *err)
{
    return pesto_simulate(p, sim, pl, s->start, s->finish, &s->step, &s->over, NULL, err);
}

static void slack(const op_problem *p, const op_placement *pl, sched *s, int *next_dev);
/* Simulate the incumbent with its transfers (into *tr, kept in s until
 * the next call) and index them. */
static op_status simulate_traced(const op_problem *p, op_sim *sim, const op_placement *pl,
                                 sched *s, op_sim_trace *tr, op_error *err)
{
    op_status st = run_traced(p, sim, pl, tr, s->start, s->finish, &s->step, &s->over, NULL, err);
    if (st)
        return st;
    int nt = tr->n_transfers, nc = p->c->n_chan;
    free(s->src_ix);
    free(s->chan_ix);
    s->src_ix = malloc(((size_t)nt + 1) * sizeof *s->src_ix);
    s->chan_ix = malloc(((size_t)nt + 1) * sizeof *s->chan_ix);
    if (!s->src_ix || !s->chan_ix)
        return op_fail(err, OP_ENOMEM, "pesto: out of memory indexing transfers");
    memset(s->src_off, 0, ((size_t)p->n + 2) * sizeof *s->src_off);
    memset(s->chan_off, 0, ((size_t)nc + 2) * sizeof *s->chan_off);
    for (int i = 0; i < nt; i++) {
        s->src_off[tr->transfers[i].src_op + 1]++;
        s->chan_off[tr->transfers[i].chan + 1]++;
    }
    for (int i = 0; i < p->n; i++)
        s->src_off[i + 1] += s->src_off[i];
    for (int i = 0; i < nc; i++)
        s->chan_off[i + 1] += s->chan_off[i];
    for (int i = 0; i < nt; i++) { /* stable: trace order kept */
        s->src_ix[s->src_off[tr->transfers[i].src_op]++] = i;
        s->chan_ix[s->chan_off[tr->transfers[i].chan]++] = i;
    }
    for (int i = p->n; i > 0; i--)
        s->src_off[i] = s->src_off[i - 1];
    s->src_off[0] = 0;
    for (int i = nc; i > 0; i--)
        s->chan_off[i] = s->chan_off[i - 1];
    s->chan_off[0] = 0;
    s->tr = tr->transfers;
    s->ntr = nt;
    return OP_OK;
}


/* Ranks, device-predecessors and latest starts of a simulated schedule. */
static void index_schedule(const op_problem *p, const op_placement *pl, sched *s, int *last)
{
    for (int i = 0; i < p->n; i++)
        s->by_start[i] = i;
    sort_ops(s->by_start, p->n, s->start, p->g->topo_pos);
    for (int d = 0; d < p->nd; d++)
        last[d] = -1;
    for (int k = 0; k < p->n; k++) {
        int v = s->by_start[k];
        s->rank[v] = k;
        s->prev_dev[v] = last[pl->device_of[v]];
        last[pl->device_of[v]] = v;
    }
    slack(p, pl, s, last);
}

/* Latest starts: how late each op could start, everything else as
 * scheduled, without lengthening the step (DAG successors with their
 * transfer, the next op on the device; channel queues ignored).  Ops in
 * reverse start order, so successors and device-successors come first. */
static void slack(const op_problem *p, const op_placement *pl, sched *s, int *next_dev)
{
    const op_graph *g = p->g;
    for (int d = 0; d < p->nd; d++)
        next_dev[d] = -1;
    for (int k = p->n - 1; k >= 0; k--) {
        int v = s->by_start[k], dv = pl->device_of[v];
        double len = s->finish[v] - s->start[v], lf = s->step;
        for (int e = g->succ_off[v]; e < g->succ_off[v + 1]; e++) {
            int w = g->succ[e], dw = pl->device_of[w];
            double x = dw == dv ? 0
                                : op_cluster_transfer_us(p->c, dv, dw, g->edge_bytes[g->succ_edge[e]]);
            /* the transfer as the incumbent ran it: its wait in the channel's queue
             * counts as part of the delay (otherwise a tail op behind a queued
             * transfer reads a latest start the step does not allow, and the
             * window model promises what the simulator cannot give) */
            for (int i = s->tr && dw != dv ? s->src_off[v] : 0; s->tr && dw != dv && i < s->src_off[v + 1]; i++)
                if (s->tr[s->src_ix[i]].dst_dev == dw && s->tr[s->src_ix[i]].end_us - s->finish[v] > x)
                    x = s->tr[s->src_ix[i]].end_us - s->finish[v];
            if (s->latest[w] - x < lf)
                lf = s->latest[w] - x;
        }
        if (next_dev[dv] >= 0 && s->latest[next_dev[dv]] < lf)
            lf = s->latest[next_dev[dv]];
        s->latest[v] = lf - len < s->start[v] ? s->start[v] : lf - len;
        next_dev[dv] = v;
    }
}

/* The critical chain, from the last op back; returns its length. */
static int critical_chain(const op_problem *p, const sched *s, int *chain)
{
    int v = 0, n = 0;
    for (int i = 1; i < p->n; i++)
        if (s->finish[i] > s->finish[v])
            v = i;
    while (v >= 0 && n < p->n) {
        chain[n++] = v;
        int next = -1;
        double best = -1;
        for (int k = p->g->pred_off[v]; k < p->g->pred_off[v + 1]; k++) {
            int u = p->g->pred[k];
            if (s->finish[u] > best) {
                best = s->finish[u];
                next = u;
            }
        }
        int q = s->prev_dev[v];
        if (q >= 0 && s->finish[q] >= best)
            next = q;
        v = next;
    }
    return n;
}

typedef struct window {
    int k, lo, hi;      /* the window's ops lie in the slice by_start[lo..hi) */
    int dev_a, dev_b;   /* the two devices whose ops in the slice are free (-1: all) */
    int *ops, *loc;     /* loc[v]: index in ops or -1 */
    int *S, *X, cmax;   /* columns */
    int *pair_a, *pair_b, *pair_delta;
    long npairs;
    int pinned;           /* ops whose colocation group has ops outside the window */
    unsigned char *reach; /* k x k: reach[a*k+b] when a ~> b inside the window */
} window;

static void completion(lp_model *m, const op_problem *p, const window *w, int a, double sign)
{
    lp_term(m, w->S[a], sign);
    for (int d = 0; d < p->nd; d++)
        if (w->X[a * p->nd + d] >= 0)
            lp_term(m, w->X[a * p->nd + d], sign * op_exec_us(p, w->ops[a], d));
}

static int free_dev(const window *w, int d)
{
    return w->dev_a < 0 || d == w->dev_a || d == w->dev_b;
}

/* The bytes u sends to device t (formats.md 5.3: one transfer per source
 * op and destination device, of the largest edge to a consumer there), as
 * far as the fixed ops tell: the largest of edge_bytes and u's edges to
 * consumers outside the window on t.  Window consumers with larger edges
 * get their own rows in build(). */
static int64_t sent_bytes(const op_graph *g, const op_placement *pl, const window *w, int u, int t,
                          int64_t edge_bytes)
{
    int64_t b = edge_bytes;
    for (int f = g->succ_off[u]; f < g->succ_off[u + 1]; f++) {
        int x = g->succ[f];
        if (w->loc[x] < 0 && pl->device_of[x] == t && g->edge_bytes[g->succ_edge[f]] > b)
            b = g->edge_bytes[g->succ_edge[f]];
    }
    return b;
}

/* The first window op of group grp (whose X columns stand for the group's
 * device: the colocation rows make every member's equal), or -1. */
static int group_head(const op_problem *p, const window *w, int grp)
{
    int head = -1;
    for (int t = p->group_off[grp]; t < p->group_off[grp + 1]; t++) {
        int a = w->loc[p->group_ops[t]];
        if (a >= 0 && (head < 0 || a < head))
            head = a;
    }
    return head;
}

/* Is op v outside the window but in a colocation group the window touches
 * (it moves with the group)? */
static int far_member(const op_problem *p, const window *w, int v)
{
    int grp = p->group_of[v];
    return w->loc[v] < 0 && grp != OP_NONE && group_head(p, w, grp) >= 0;
}

/* The far members' work in a row about device d's time: - exec(f, d) x_gd
 * for each far member f (all: in the load row; only those after the
 * window on d: in the rows of d's later ops); returns the work of those of
 * them on d now, which the caller takes off the row's constant: a far
 * member on d now that moves away frees its time (approximately: the tail
 * or release of d need not shrink by all of it), one moved onto d adds
 * its time (a far member after the window moved onto d counts in the load
 * row only). */
static double far_terms(lp_model *m, const op_problem *p, const op_placement *pl, const sched *s,
                        const window *w, int d, int all)
{
    double gone = 0;
    for (int a = 0; a < w->k; a++) {
        int grp = p->group_of[w->ops[a]], col = w->X[a * p->nd + d];
        if (grp == OP_NONE || group_head(p, w, grp) != a)
            continue;
        for (int t = p->group_off[grp]; t < p->group_off[grp + 1]; t++) {
            int f = p->group_ops[t];
            if (w->loc[f] >= 0 || (!all && (pl->device_of[f] != d || s->rank[f] < w->hi)))
                continue;
            double e = op_exec_us(p, f, d);
            if (col >= 0)
                lp_term(m, col, -e);
            if (pl->device_of[f] == d)
                gone += e;
        }
    }
    return gone;
}

/* The window op whose X columns say where v runs: v itself, the head of
 * its colocation group for a far member (it moves with the group), or -1
 * for a fixed op (it stays on pl->device_of[v]). */
static int dev_owner(const op_problem *p, const window *w, int v)
{
    if (w->loc[v] >= 0)
        return w->loc[v];
    int grp = p->group_of[v];
    return grp == OP_NONE ? -1 : group_head(p, w, grp);
}

/* When window op v runs on device t: the time its last input from a fixed
 * op (outside the window, not moving with a group) arrives there, with the
 * channels' queues (formats.md 5.4) of the incumbent's traffic; *harm set
 * when the transfers this needs that the incumbent does not send would
 * delay one of the incumbent's transfers from a fixed op past the time its
 * consumer on that device may start (its start if it runs before the
 * window ends, its latest start after; at all, for a window op, whose row
 * takes the incumbent's arrival).  Without the queues the model
 * read new transfers as free channels: a moved consumer of a 131 MB
 * parameter issued at 5 us held a channel for 13 ms, and the candidate
 * simulated 3-10 ms slower than the model said (zoo GNMT; bench/RESULTS.md,
 * Pesto).  Approximate: the window's own transfers move, and the
 * queue is the incumbent's. */
static double fixed_arrival(const op_problem *p, const op_placement *pl, const sched *s,
                            const window *w, int v, int t, int *harm)
{
    const op_graph *g = p->g;
    double arr = 0;
    *harm = 0;
    for (int e = g->pred_off[v]; e < g->pred_off[v + 1]; e++) {
        int u = g->pred[e], du = pl->device_of[u];
        if (w->loc[u] >= 0 || far_member(p, w, u))
            continue;
        if (du == t) {
            arr = s->finish[u] > arr ? s->finish[u] : arr;
            continue;
        }
        int64_t bytes = sent_bytes(g, pl, w, u, t, g->edge_bytes[g->pred_edge[e]]);
        double dur = op_cluster_transfer_us(p->c, du, t, bytes), cur = 0;
        if (s->tr) { /* the incumbent sends it already: its arrival */
            int found = 0;
            for (int i = s->src_off[u]; i < s->src_off[u + 1] && !found; i++) {
                const op_sim_transfer *x = &s->tr[s->src_ix[i]];
                if (x->dst_dev == t && x->bytes >= bytes) {
                    arr = x->end_us > arr ? x->end_us : arr;
                    found = 1;
                }
            }
            if (found)
                continue;
        }
        if (!s->tr) {
            cur = s->finish[u] + dur;
            arr = cur > arr ? cur : arr;
            continue;
        }
        /* a new transfer, issued at u's finish, queued first come first
         * served among the channel's transfers; the ones issued after it
         * move back by what it takes */
        int c = op_cluster_chan(p->c, du, t), mine = 0;
        double issue = s->finish[u];
        for (int i = s->chan_off[c]; i <= s->chan_off[c + 1]; i++) {
            const op_sim_transfer *x = i < s->chan_off[c + 1] ? &s->tr[s->chan_ix[i]] : NULL;
            if (!mine && (!x || x->issue_us > issue)) {
                cur = (cur > issue ? cur : issue) + dur;
                arr = cur > arr ? cur : arr;
                mine = 1;
            }
            if (!x)
                break;
            double st = cur > x->issue_us ? cur : x->issue_us, end = st + (x->end_us - x->start_us);
            cur = end;
            if (!mine || end <= x->end_us + 1e-6)
                continue;
            int src = x->src_op;
            if (w->loc[src] >= 0 || far_member(p, w, src))
                continue; /* moves with the window */
            for (int f = g->succ_off[src]; f < g->succ_off[src + 1]; f++) {
                int y = g->succ[f];
                if (pl->device_of[y] != x->dst_dev || far_member(p, w, y))
                    continue;
                /* a window consumer's row takes the incumbent's arrival */
                double lim = w->loc[y] >= 0 ? x->end_us
                           : s->rank[y] < w->hi ? s->start[y] : s->latest[y];
                if (end > lim + 1e-6)
                    *harm = 1;
            }
            if (cur <= x->end_us + 1e-6) /* the queue has caught up */
                break;
        }
    }
    return arr;
}

/* y[s*nd+t] >= x_as + x_bt - 1 for s != t (a on s, b on t): columns for a
 * transfer between two ops whose devices are both decided by the window
 * (ycol[] -1 where a or b cannot be on s or t).  Built before the row that
 * uses them: a row's terms cannot interleave with others.  Returns 0 or
 * -1 (out of memory). */
static int pair_cols(lp_model *m, const window *w, int nd, int a, int b, int *ycol)
{
    for (int s1 = 0; s1 < nd; s1++)
        for (int t = 0; t < nd; t++) {
            ycol[s1 * nd + t] = -1;
            if (s1 == t || w->X[a * nd + s1] < 0 || w->X[b * nd + t] < 0)
                continue;
            int y = lp_col(m, 0, 1, 0, 0);
            lp_term(m, y, 1);
            lp_term(m, w->X[a * nd + s1], -1);
            lp_term(m, w->X[b * nd + t], -1);
            lp_row_end(m, -1, LP_INF);
            ycol[s1 * nd + t] = y;
        }
    return m->oom ? -1 : 0;
}

/* Members of a window's colocation groups outside the window (a forward op's
 * backward op and optimizer update, far apart in time) move with their
 * group: they have no start column, and the model says what moving them
 * costs, approximately, from the incumbent's schedule (the simulator judges
 * every candidate): their work moves between the load and tail rows of
 * the devices (far_terms), and for such a member f (started at s_f, latest
 * start L_f, length l_f) on the group's device t, each edge to or from a
 * fixed op delays f or its consumer by
 *   an input from a fixed u (device du, finish f_u):
 *     D = f_u + T(du, t) [t != du] + exec(f, t) - (L_f + l_f);
 *   an output to a fixed x (device dx, latest start L_x):
 *     D = s_f + exec(f, t) + T(t, dx) [t != dx] - L_x.
 * The incumbent's D is at most 0 (its starts respect its transfers and
 * latest starts).  How D enters the model depends on which side of the
 * window f and its neighbour lie.  The model's frame: ops before the
 * window keep their times, ops after it (the tail) all move earlier by
 * what the window gains (step - Cmax; the window's rows to the tail say
 * Cmax >= C_v + T + (step - L_x)).
 *   - f and its neighbour on the same side (both before or both after the
 *     window): the neighbour moves with f, the window's gain cancels out of
 *     D, and a positive D is a delay of its own: a penalty column
 *     P_f >= D (P_f >= 0) in the objective, min Cmax + sum_f P_f.
 *   - f after the window, its input u before it or fixed in the slice: u
 *     keeps its time and f moves with the tail:
 *     Cmax >= f_u + T + exec(f, t) + (step - L_f - l_f).
 *   - f before the window, its consumer x after it:
 *     Cmax >= s_f + exec(f, t) + T + (step - L_x).
 * (Before, every edge got the absolute row: a far member on the
 * critical chain, in place, then gives Cmax >= step exactly, whatever the
 * window does, and CBC proved every window "optimal" at the incumbent's
 * step: bench/RESULTS.md, Pesto.)  Inputs and outputs from window ops or
 * other moving members are rows of the window ops (dev_owner).  Returns 0
 * or -1 (out of memory). */
static int far_member_rows(lp_model *m, const op_problem *p, const op_placement *pl,
                           const sched *s, const window *w)
{
    const op_graph *g = p->g;
    int nd = p->nd;
    for (int a = 0; a < w->k; a++) {
        int grp = p->group_of[w->ops[a]];
        if (grp == OP_NONE || group_head(p, w, grp) != a)
            continue;
        for (int t = p->group_off[grp]; t < p->group_off[grp + 1]; t++) {
            int f = p->group_ops[t];
            if (w->loc[f] >= 0)
                continue;
            int tail_f = s->rank[f] >= w->hi, pen = -1;
            double len = s->finish[f] - s->start[f];
            for (int dir = 0; dir < 2; dir++) {
                int lo = dir ? g->succ_off[f] : g->pred_off[f];
                int hi = dir ? g->succ_off[f + 1] : g->pred_off[f + 1];
                for (int e = lo; e < hi; e++) {
                    int y = dir ? g->succ[e] : g->pred[e];
                    if (w->loc[y] >= 0 || far_member(p, w, y))
                        continue;
                    int dy = pl->device_of[y];
                    int64_t bytes = g->edge_bytes[dir ? g->succ_edge[e] : g->pred_edge[e]];
                    int tail_y = s->rank[y] >= w->hi, before_y = s->rank[y] < w->lo;
                    int same = tail_f ? tail_y : before_y;
                    /* D = base + sum_t coef(t) x_gt */
                    double base = dir ? s->start[f] - s->latest[y]
                                      : s->finish[y] - s->latest[f] - len;
                    if (same) {
                        if (pen < 0)
                            pen = lp_col(m, 0, LP_INF, 1, 0);
                        lp_term(m, pen, 1);
                    } else {
                        lp_term(m, w->cmax, 1);
                    }
                    for (int d = 0; d < nd; d++)
                        if (w->X[a * nd + d] >= 0) {
                            double T = d == dy ? 0
                                     : dir ? op_cluster_transfer_us(p->c, d, dy, bytes)
                                           : op_cluster_transfer_us(p->c, dy, d, bytes);
                            lp_term(m, w->X[a * nd + d], -(op_exec_us(p, f, d) + T));
                        }
                    lp_row_end(m, same ? base : base + s->step, LP_INF);
                }
            }
        }
    }
    return m->oom ? -1 : 0;
}

/* Build the window's model; returns 0 or -1 (out of memory). */
static int build(lp_model *m, const op_problem *p, const op_placement *pl, const sched *s,
                 window *w)
{
    const op_graph *g = p->g;
    int nd = p->nd, k = w->k;
    /* Starts lie in [t0, step]: t0 the slice's first start (no window op
     * starts earlier, a restriction of the neighbourhood the incumbent
     * meets), step the incumbent's (a later start cannot beat it).  The
     * big-M of every disjunction is then the window's horizon H, not the
     * whole step: CBC's relaxation is as tight as the span allows. */
    double t0 = s->start[s->by_start[w->lo]], maxexec = 0;
    for (int a = 0; a < k; a++)
        for (int d = 0; d < nd; d++)
            if (op_allowed(p, w->ops[a], d) && op_exec_us(p, w->ops[a], d) > maxexec)
                maxexec = op_exec_us(p, w->ops[a], d);
    double H = s->step - t0 + maxexec + 1;
    double *rel = calloc((size_t)nd, sizeof *rel), *tailq = calloc((size_t)nd, sizeof *tailq);
    int *ycol = malloc((size_t)nd * nd * sizeof *ycol + 1);
    if (!rel || !tailq || !ycol) {
        free(rel);
        free(tailq);
        free(ycol);
        return -1;
    }
    for (int r = 0; r < w->lo; r++) {
        int v = s->by_start[r];
        if (free_dev(w, pl->device_of[v]) && s->finish[v] > rel[pl->device_of[v]])
            rel[pl->device_of[v]] = s->finish[v];
    }
    /* each channel's queue from before the window: the last end of a
     * transfer issued before t0 by an op that stays (a window op's
     * transfer, issued at C >= t0, waits for it: formats.md 5.4) */
    double *chanfree = calloc((size_t)p->c->n_chan + 1, sizeof *chanfree);
    if (!chanfree) {
        free(rel);
        free(tailq);
        free(ycol);
        return -1;
    }
    for (int i = 0; s->tr && i < s->ntr; i++) {
        const op_sim_transfer *x = &s->tr[i];
        if (x->issue_us < t0 && x->end_us > chanfree[x->chan] && w->loc[x->src_op] < 0 &&
            !far_member(p, w, x->src_op))
            chanfree[x->chan] = x->end_us;
    }
    for (int d = 0; d < nd; d++)
        tailq[d] = -1;
    for (int r = w->hi; r < p->n; r++) {
        int v = s->by_start[r], d = pl->device_of[v];
        if (tailq[d] < 0)
            tailq[d] = s->step - s->latest[v];
    }
    w->cmax = lp_col(m, 0, H + s->step + maxexec, 1, 0);
    w->pinned = 0;
    for (int a = 0; a < k; a++) {
        int v = w->ops[a], grp = p->group_of[v], far = 0;
        if (grp != OP_NONE)
            for (int t = p->group_off[grp]; t < p->group_off[grp + 1]; t++)
                far |= w->loc[p->group_ops[t]] < 0;
        w->S[a] = lp_col(m, t0, s->step, 0, 0);
        for (int d = 0; d < nd; d++) {
            /* a colocation group is closed over: its members outside the
             * window move with it (far_member_rows), so the window may
             * re-place it on any device every member may use */
            int ok = op_allowed(p, v, d) && free_dev(w, d);
            w->X[a * nd + d] = ok ? lp_col(m, 0, 1, 0, 1) : -1;
        }
        w->pinned += far;
        for (int d = 0; d < nd; d++)
            if (w->X[a * nd + d] >= 0)
                lp_term(m, w->X[a * nd + d], 1);
        lp_row_end(m, 1, 1);
    }
    for (int a = 0; a < k; a++) { /* every window op's columns exist: rows may name any */
        int v = w->ops[a];
        for (int d = 0; d < nd; d++) /* device release */
            if (w->X[a * nd + d] >= 0 && rel[d] > 0) {
                lp_term(m, w->S[a], 1);
                lp_term(m, w->X[a * nd + d], -rel[d]);
                lp_row_end(m, 0, LP_INF);
            }
        lp_term(m, w->cmax, 1); /* Cmax >= C_v */
        completion(m, p, w, a, -1);
        lp_row_end(m, 0, LP_INF);
        for (int d = 0; d < nd; d++) /* the device's later ops */
            if (w->X[a * nd + d] >= 0 && tailq[d] > 0) {
                double M = H + tailq[d];
                lp_term(m, w->cmax, 1);
                completion(m, p, w, a, -1);
                lp_term(m, w->X[a * nd + d], -M);
                double gone = far_terms(m, p, pl, s, w, d, 0);
                lp_row_end(m, tailq[d] - M - gone, LP_INF);
            }
        /* inputs from fixed ops: S_v >= sum_t A_vt x_vt, A_vt their last
         * arrival on t with the channels' queues; a device whose new
         * transfers would delay the incumbent's traffic is closed */
        int any = 0;
        for (int t = 0; t < nd; t++) {
            int col = w->X[a * nd + t], harm = 0;
            if (col < 0)
                continue;
            double A = fixed_arrival(p, pl, s, w, v, t, &harm);
            if (t == pl->device_of[v]) { /* the incumbent meets its own row */
                A = A < s->start[v] ? A : s->start[v];
                harm = 0;
            }
            if (harm)
                m->ub[col] = 0;
            if (A > 0) {
                if (!any)
                    lp_term(m, w->S[a], 1);
                any = 1;
                lp_term(m, col, -A);
            }
        }
        if (any)
            lp_row_end(m, 0, LP_INF);
        for (int e = g->pred_off[v]; e < g->pred_off[v + 1]; e++) {
            int u = g->pred[e], edge = g->pred_edge[e], b = w->loc[u];
            int64_t bytes = g->edge_bytes[edge];
            if (b < 0 && far_member(p, w, u)) {
                /* u moves with its group (it ran before the slice): S_v >= f_u, plus the
                 * transfer when the two groups end up apart */
                int h = dev_owner(p, w, u), same = p->group_of[u] == p->group_of[v];
                if (!same && pair_cols(m, w, nd, h, a, ycol))
                    break;
                lp_term(m, w->S[a], 1);
                for (int s1 = 0; !same && s1 < nd; s1++)
                    for (int t = 0; t < nd; t++)
                        if (ycol[s1 * nd + t] >= 0)
                            lp_term(m, ycol[s1 * nd + t],
                                    -op_cluster_transfer_us(p->c, s1, t, bytes));
                lp_row_end(m, s->finish[u], LP_INF);
                continue;
            }
            if (b < 0) {
                int du = pl->device_of[u];
                /* (the input's own arrival: the row of fixed_arrival above) */
                /* a larger tensor of u to another window op on t is the transfer v waits for:
                 * S_v >= f_u + T(du, t, b_x) - M (2 - x_vt - x_xt) */
                for (int f = g->succ_off[u]; f < g->succ_off[u + 1]; f++) {
                    int c = w->loc[g->succ[f]];
                    int64_t bx = g->edge_bytes[g->succ_edge[f]];
                    if (c < 0 || c == a || bx <= bytes)
                        continue;
                    for (int t = 0; t < nd; t++) {
                        if (t == du || w->X[a * nd + t] < 0 || w->X[c * nd + t] < 0)
                            continue;
                        double T = op_cluster_transfer_us(p->c, du, t, bx), M = H + T;
                        lp_term(m, w->S[a], 1);
                        lp_term(m, w->X[a * nd + t], -M);
                        lp_term(m, w->X[c * nd + t], -M);
                        lp_row_end(m, s->finish[u] + T - 2 * M, LP_INF);
                    }
                }
                continue;
            }
            /* S_v >= C_u + transfer; y columns for the device pairs */
            if (pair_cols(m, w, nd, b, a, ycol))
                break;
            lp_term(m, w->S[a], 1);
            completion(m, p, w, b, -1);
            for (int s1 = 0; s1 < nd; s1++)
                for (int t = 0; t < nd; t++)
                    if (ycol[s1 * nd + t] >= 0)
                        lp_term(m, ycol[s1 * nd + t],
                                -op_cluster_transfer_us(p->c, s1, t,
                                                       sent_bytes(g, pl, w, u, t, bytes)));
            lp_row_end(m, 0, LP_INF);
            /* the transfer queues behind the channel's traffic from before the window:
             * S_v >= sum y_ust (free_c(s,t) + T(s, t)) */
            {
                int q = 0;
                for (int s1 = 0; s1 < nd; s1++)
                    for (int t = 0; t < nd; t++)
                        if (ycol[s1 * nd + t] >= 0 && chanfree[op_cluster_chan(p->c, s1, t)] > t0) {
                            if (!q)
                                lp_term(m, w->S[a], 1);
                            q = 1;
                            lp_term(m, ycol[s1 * nd + t],
                                    -(chanfree[op_cluster_chan(p->c, s1, t)] +
                                      op_cluster_transfer_us(p->c, s1, t, sent_bytes(g, pl, w, u, t, bytes))));
                        }
                if (q)
                    lp_row_end(m, 0, LP_INF);
            }
            /* S_v >= C_u + T(s, t, b_x) - M (3 - x_us - x_vt - x_xt) for a larger edge u -> x */
            for (int f = g->succ_off[u]; f < g->succ_off[u + 1]; f++) {
                int c = w->loc[g->succ[f]];
                int64_t bx = g->edge_bytes[g->succ_edge[f]];
                if (c < 0 || c == a || bx <= bytes)
                    continue;
                for (int s1 = 0; s1 < nd; s1++)
                    for (int t = 0; t < nd; t++) {
                        if (s1 == t || w->X[b * nd + s1] < 0 || w->X[a * nd + t] < 0 ||
                            w->X[c * nd + t] < 0)
                            continue;
                        double T = op_cluster_transfer_us(p->c, s1, t, bx), M = 2 * H + T;
                        lp_term(m, w->S[a], 1);
                        completion(m, p, w, b, -1);
                        lp_term(m, w->X[b * nd + s1], -M);
                        lp_term(m, w->X[a * nd + t], -M);
                        lp_term(m, w->X[c * nd + t], -M);
                        lp_row_end(m, T - 3 * M, LP_INF);
                    }
            }
        }
        for (int e = g->succ_off[v]; e < g->succ_off[v + 1]; e++) {
            int x = g->succ[e];
            if (w->loc[x] >= 0)
                continue;
            if (far_member(p, w, x)) {
                /* x moves with its group (after the slice, in the tail):
                 * Cmax >= C_v + transfer + (step - L_x) */
                int h = dev_owner(p, w, x), same = p->group_of[x] == p->group_of[v];
                int64_t bytes = g->edge_bytes[g->succ_edge[e]];
                if (!same && pair_cols(m, w, nd, a, h, ycol))
                    break;
                lp_term(m, w->cmax, 1);
                completion(m, p, w, a, -1);
                for (int s1 = 0; !same && s1 < nd; s1++)
                    for (int t = 0; t < nd; t++)
                        if (ycol[s1 * nd + t] >= 0)
                            lp_term(m, ycol[s1 * nd + t],
                                    -op_cluster_transfer_us(p->c, s1, t, bytes));
                lp_row_end(m, s->step - s->latest[x], LP_INF);
                continue;
            }
            int dx = pl->device_of[x];
            int64_t bytes = sent_bytes(g, pl, w, v, dx, g->edge_bytes[g->succ_edge[e]]);
            lp_term(m, w->cmax, 1);
            completion(m, p, w, a, -1);
            for (int d = 0; d < nd; d++)
                if (d != dx && w->X[a * nd + d] >= 0)
                    lp_term(m, w->X[a * nd + d], -op_cluster_transfer_us(p->c, d, dx, bytes));
            lp_row_end(m, s->step - s->latest[x], LP_INF);
            /* behind the channel's traffic from before the window:
             * Cmax >= sum_d x_vd (free_c(d,dx) + T(d, dx)) + (step - L_x) */
            {
                int q = 0;
                for (int d = 0; d < nd; d++)
                    if (d != dx && w->X[a * nd + d] >= 0 && chanfree[op_cluster_chan(p->c, d, dx)] > t0) {
                        if (!q)
                            lp_term(m, w->cmax, 1);
                        q = 1;
                        lp_term(m, w->X[a * nd + d],
                                -(chanfree[op_cluster_chan(p->c, d, dx)] +
                                  op_cluster_transfer_us(p->c, d, dx, bytes)));
                    }
                if (q)
                    lp_row_end(m, s->step - s->latest[x], LP_INF);
            }
            /* a larger tensor of v to a window op on dx: Cmax >= C_v + T(s, dx, b_c) + tail
             * - M (1 - x_c,dx) */
            for (int f = g->succ_off[v]; f < g->succ_off[v + 1]; f++) {
                int c = w->loc[g->succ[f]];
                int64_t bc = g->edge_bytes[g->succ_edge[f]];
                if (c < 0 || bc <= bytes || w->X[c * nd + dx] < 0)
                    continue;
                double M = 3 * H + s->step;
                for (int d = 0; d < nd; d++)
                    if (d != dx)
                        M += op_cluster_transfer_us(p->c, d, dx, bc);
                lp_term(m, w->cmax, 1);
                completion(m, p, w, a, -1);
                for (int d = 0; d < nd; d++)
                    if (d != dx && w->X[a * nd + d] >= 0)
                        lp_term(m, w->X[a * nd + d], -op_cluster_transfer_us(p->c, d, dx, bc));
                lp_term(m, w->X[c * nd + dx], -M);
                lp_row_end(m, s->step - s->latest[x] - M, LP_INF);
            }
        }
    }
    for (int d = 0; d < nd; d++) { /* load rows */
        if (!free_dev(w, d))
            continue;
        lp_term(m, w->cmax, 1);
        for (int a = 0; a < k; a++)
            if (w->X[a * nd + d] >= 0)
                lp_term(m, w->X[a * nd + d], -op_exec_us(p, w->ops[a], d));
        double gone = far_terms(m, p, pl, s, w, d, 1);
        lp_row_end(m, rel[d] + (tailq[d] > 0 ? tailq[d] : 0) - gone, LP_INF);
    }
    if (!m->oom)
        far_member_rows(m, p, pl, s, w);
    for (int grp = 0; grp < p->n_groups; grp++) { /* colocation inside the window */
        int first = -1;
        for (int t = p->group_off[grp]; t < p->group_off[grp + 1]; t++) {
            int a = w->loc[p->group_ops[t]];
            if (a < 0)
                continue;
            if (first < 0) {
                first = a;
                continue;
            }
            for (int d = 0; d < nd; d++)
                if (w->X[first * nd + d] >= 0 && w->X[a * nd + d] >= 0) {
                    lp_term(m, w->X[first * nd + d], 1);
                    lp_term(m, w->X[a * nd + d], -1);
                    lp_row_end(m, 0, 0);
                }
        }
    }
    /* paths through fixed ops of the slice keep their order (S_b >= C_a):
     * the new per-device orders then cannot deadlock */
    for (int a = 0; a < k; a++)
        for (int b = 0; b < k; b++)
            if (w->reach[(size_t)a * k + b] == 2) {
                lp_term(m, w->S[b], 1);
                completion(m, p, w, a, -1);
                lp_row_end(m, 0, LP_INF);
            }
    /* one op at a time: pairs not ordered by the DAG that may share a device */
    w->npairs = 0;
    for (int a = 0; a < k; a++)
        for (int b = a + 1; b < k; b++) {
            if (w->reach[(size_t)a * k + b] || w->reach[(size_t)b * k + a])
                continue;
            int common = 0;
            for (int d = 0; d < nd; d++)
                common |= w->X[a * nd + d] >= 0 && w->X[b * nd + d] >= 0;
            if (!common)
                continue;
            int delta = lp_col(m, 0, 1, 0, 1), q = lp_col(m, 0, 1, 0, 0);
            for (int d = 0; d < nd; d++)
                if (w->X[a * nd + d] >= 0 && w->X[b * nd + d] >= 0) {
                    lp_term(m, q, 1);
                    lp_term(m, w->X[a * nd + d], -1);
                    lp_term(m, w->X[b * nd + d], -1);
                    lp_row_end(m, -1, LP_INF);
                }
            /* a before b when delta = 1: S_b >= C_a - H(1-delta) - H(1-q) */
            lp_term(m, w->S[b], 1);
            completion(m, p, w, a, -1);
            lp_term(m, delta, -H);
            lp_term(m, q, -H);
            lp_row_end(m, -2 * H, LP_INF);
            /* b before a when delta = 0: S_a >= C_b - H delta - H(1-q) */
            lp_term(m, w->S[a], 1);
            completion(m, p, w, b, -1);
            lp_term(m, delta, H);
            lp_term(m, q, -H);
            lp_row_end(m, -H, LP_INF);
            w->pair_a[w->npairs] = a;
            w->pair_b[w->npairs] = b;
            w->pair_delta[w->npairs] = delta;
            w->npairs++;
        }
    free(rel);
    free(tailq);
    free(ycol);
    free(chanfree);
    return m->oom ? -1 : 0;
}

/* Reachability between the window's ops: over the slice's ops (DAG edges,
 * and the incumbent's device order for the fixed ops, which the new orders
 * keep).  reach[a*k+b] = 1: a DAG edge or a path inside the window; 2: only
 * through fixed ops.  slice_pos and bits are scratch of the slice's size. */
static void window_reach(const op_problem *p, const op_placement *pl, const sched *s, window *w,
                         int *slice_pos, unsigned char *bits)
{
    int k = w->k, ns = w->hi - w->lo;
    size_t rb = ((size_t)ns + 7) / 8;
    for (int r = w->lo; r < w->hi; r++)
        slice_pos[s->by_start[r]] = r - w->lo;
    memset(bits, 0, (size_t)ns * rb);
    int *next_dev = malloc(((size_t)p->nd + 1) * sizeof *next_dev);
    if (!next_dev)
        return;
    for (int d = 0; d < p->nd; d++)
        next_dev[d] = -1;
    for (int r = w->hi - 1; r >= w->lo; r--) { /* successors come later in the slice */
        int v = s->by_start[r], i = r - w->lo;
        unsigned char *row = bits + (size_t)i * rb;
        for (int e = p->g->succ_off[v]; e < p->g->succ_off[v + 1]; e++) {
            int x = p->g->succ[e];
            int j = slice_pos[x];
            if (j < 0 || s->rank[x] < w->lo || s->rank[x] >= w->hi)
                continue;
            row[j >> 3] |= (unsigned char)(1u << (j & 7));
            for (size_t t = 0; t < rb; t++)
                row[t] |= bits[(size_t)j * rb + t];
        }
        int d = pl->device_of[v];
        if (w->loc[v] < 0 && next_dev[d] >= 0) { /* fixed: its device successor stays */
            int j = next_dev[d];
            row[j >> 3] |= (unsigned char)(1u << (j & 7));
            for (size_t t = 0; t < rb; t++)
                row[t] |= bits[(size_t)j * rb + t];
        }
        if (w->loc[v] < 0)
            next_dev[d] = i;
    }
    free(next_dev);
    memset(w->reach, 0, (size_t)k * k);
    for (int a = 0; a < k; a++) {
        int i = slice_pos[w->ops[a]];
        for (int b = 0; b < k; b++) {
            int j = slice_pos[w->ops[b]];
            if (a != b && (bits[(size_t)i * rb + (j >> 3)] >> (j & 7)) & 1)
                w->reach[(size_t)a * k + b] = 2;
        }
        int v = w->ops[a]; /* direct edges are modelled with their transfer */
        for (int e = p->g->succ_off[v]; e < p->g->succ_off[v + 1]; e++) {
            int b = w->loc[p->g->succ[e]];
            if (b >= 0)
                w->reach[(size_t)a * k + b] = 1;
        }
    }
    for (int r = w->lo; r < w->hi; r++)
        slice_pos[s->by_start[r]] = -1;
}

/* An anchor of a window: a chain op and the wait at its link. */
typedef struct anchor {
    int op, pos;
    double wait;
} anchor;

typedef struct lns_buf {
    sched s;
    op_sim_trace tr; /* the incumbent's (s.tr points into it) */
    int tr_ok;
    window w;
    int *slice_pos;
    unsigned char *bits;
    size_t bits_cap;
    int *chain, *last, *seq;
    anchor *anchors;
    double *key;
    int *cols;
    double *vals;
} lns_buf;

static void buf_free(lns_buf *b)
{
    free(b->s.start);
    free(b->s.finish);
    free(b->s.latest);
    free(b->s.by_start);
    free(b->s.rank);
    free(b->s.prev_dev);
    free(b->s.src_off);
    free(b->s.src_ix);
    free(b->s.chan_off);
    free(b->s.chan_ix);
    if (b->tr_ok)
        op_sim_trace_destroy(&b->tr);
    free(b->w.ops);
    free(b->w.loc);
    free(b->w.S);
    free(b->w.X);
    free(b->w.pair_a);
    free(b->w.pair_b);
    free(b->w.pair_delta);
    free(b->w.reach);
    free(b->chain);
    free(b->anchors);
    free(b->slice_pos);
    free(b->bits);
    free(b->last);
    free(b->seq);
    free(b->key);
    free(b->cols);
    free(b->vals);
}

static int buf_alloc(lns_buf *b, const op_problem *p, int maxk)
{
    size_t n = (size_t)p->n + 1, k = (size_t)maxk + 1, pairs = k * k / 2 + 1;
    b->s.start = malloc(n * sizeof(double));
    b->s.finish = malloc(n * sizeof(double));
    b->s.latest = malloc(n * sizeof(double));
    b->s.by_start = malloc(n * sizeof(int));
    b->s.rank = malloc(n * sizeof(int));
    b->s.prev_dev = malloc(n * sizeof(int));
    b->s.src_off = malloc((n + 1) * sizeof(int));
    b->s.chan_off = malloc(((size_t)p->c->n_chan + 2) * sizeof(int));
    b->w.ops = malloc(k * sizeof(int));
    b->w.loc = malloc(n * sizeof(int));
    b->w.S = malloc(k * sizeof(int));
    b->w.X = malloc(k * (size_t)p->nd * sizeof(int));
    b->w.pair_a = malloc(pairs * sizeof(int));
    b->w.pair_b = malloc(pairs * sizeof(int));
    b->w.pair_delta = malloc(pairs * sizeof(int));
    b->w.reach = malloc(k * k);
    b->chain = malloc(n * sizeof(int));
    b->anchors = malloc(6 * n * sizeof *b->anchors); /* 2n, and scratch */
    b->slice_pos = malloc(n * sizeof(int));
    b->last = malloc(((size_t)p->nd + 1) * sizeof(int));
    b->seq = malloc(n * sizeof(int));
    b->key = malloc(n * sizeof(double));
    b->cols = malloc((k * (size_t)p->nd + pairs) * sizeof(int));
    b->vals = malloc((k * (size_t)p->nd + pairs) * sizeof(double));
    if (!b->s.src_off || !b->s.chan_off)
        return -1;
    op_error e = {0};
    if (op_sim_trace_init(&b->tr, p, &e))
        return -1;
    b->tr_ok = 1;
    if (!b->s.start || !b->s.finish || !b->s.latest || !b->s.by_start || !b->s.rank || !b->s.prev_dev ||
        !b->w.ops || !b->w.loc || !b->w.S || !b->w.X || !b->w.pair_a || !b->w.pair_b ||
        !b->w.pair_delta || !b->w.reach || !b->chain || !b->anchors || !b->slice_pos || !b->last || !b->seq || !b->key ||
        !b->cols || !b->vals)
        return -1;
    for (int i = 0; i < p->n; i++)
        b->w.loc[i] = b->slice_pos[i] = -1;
    return 0;
}

/* The candidate of a solved window: inc's devices outside, the solution's
 * inside; order: before the window, the window by S, after. */
static op_status candidate_from(const op_problem *p, const op_placement *inc, lns_buf *b,
                                const double *x, op_placement *cand, op_error *err)
{
    window *w = &b->w;
    op_status st = op_placement_copy(cand, inc, err);
    if (st)
        return st;
    for (int a = 0; a < w->k; a++) {
        int best = -1;
        double bv = -1;
        for (int d = 0; d < p->nd; d++) {
            int c = w->X[a * p->nd + d];
            if (c >= 0 && x[c] > bv) {
                bv = x[c];
                best = d;
            }
        }
        cand->device_of[w->ops[a]] = best;
    }
    for (int a = 0; a < w->k; a++) { /* far members follow their group */
        int grp = p->group_of[w->ops[a]];
        if (grp != OP_NONE)
            for (int t = p->group_off[grp]; t < p->group_off[grp + 1]; t++)
                if (w->loc[p->group_ops[t]] < 0)
                    cand->device_of[p->group_ops[t]] = cand->device_of[w->ops[a]];
    }
    int n = 0;
    for (int r = 0; r < w->lo; r++)
        b->seq[n++] = b->s.by_start[r];
    for (int r = w->lo; r < w->hi; r++) { /* fixed ops keep their start */
        int v = b->s.by_start[r];
        b->key[v] = round(b->s.start[v] * 1e3) + (double)(r - w->lo) * 1e-6;
        b->seq[n + r - w->lo] = v;
    }
    for (int a = 0; a < w->k; a++)
        /* S rounded to 1e-3 us so solver round-off cannot swap equal times */
        b->key[w->ops[a]] = round(x[w->S[a]] * 1e3) + (double)a * 1e-6;
    sort_ops(b->seq + n, w->hi - w->lo, b->key, p->g->topo_pos);
    n += w->hi - w->lo;
    for (int r = w->hi; r < p->n; r++)
        b->seq[n++] = b->s.by_start[r];
    if ((st = op_placement_set_order_from_sequence(cand, b->seq, err)))
        op_placement_destroy(cand);
    return st;
}

/* The window: the ops of the free devices (all, or the anchor's and
 * another) in a slice of the start order around the anchor, widened on both
 * sides until it holds k of them. */
static void choose_window(const op_problem *p, const op_placement *inc, lns_buf *b, int anchor,
                          int other, int all, int k)
{
    window *w = &b->w;
    w->dev_a = -1;
    w->dev_b = -1;
    if (p->nd > 2 && !all) {
        w->dev_a = inc->device_of[anchor];
        w->dev_b = other;
    }
    int centre = b->s.rank[anchor], lo = centre, hi = centre + 1, got = 1;
    while (got < k && (lo > 0 || hi < p->n)) {
        if (lo > 0 && (hi >= p->n || centre - lo <= hi - centre)) {
            lo--;
            got += free_dev(w, inc->device_of[b->s.by_start[lo]]);
        } else {
            got += free_dev(w, inc->device_of[b->s.by_start[hi]]);
            hi++;
        }
    }
    w->lo = lo;
    w->hi = hi;
    w->k = 0;
    for (int r = lo; r < hi; r++) {
        int v = b->s.by_start[r];
        if (free_dev(w, inc->device_of[v])) {
            w->ops[w->k] = v;
            w->loc[v] = w->k++;
        }
    }
}

/* The device other than the anchor's that is busy least in the k ops of
 * the start order around the anchor: where its work could go. */
static int idlest_other(const op_problem *p, const op_placement *inc, const lns_buf *b, int anchor,
                        int k, uint64_t rng)
{
    double busy[64] = {0};
    int nd = p->nd < 64 ? p->nd : 64, c = b->s.rank[anchor];
    int lo = c - k > 0 ? c - k : 0, hi = c + k < p->n ? c + k : p->n;
    for (int r = lo; r < hi; r++) {
        int v = b->s.by_start[r], d = inc->device_of[v];
        if (d < nd)
            busy[d] += b->s.finish[v] - b->s.start[v];
    }
    int best = -1, da = inc->device_of[anchor];
    for (int t = 0; t < nd; t++) {
        int d = (int)((t + rng) % (uint64_t)nd); /* ties: a rotating first choice */
        if (d != da && (best < 0 || busy[d] < busy[best]))
            best = d;
    }
    return best < 0 ? (da + 1) % p->nd : best;
}

/* Where the critical chain can be shortened by moving ops: the chain's
 * links that are not a DAG edge without wait (chain[c] waited for its
 * device-predecessor, for a transfer, or idled), and ops that do not run
 * at their fastest eligible speed.  anchors[] gets the ops on both sides of
 * such links, the longest waits first (the chain's order, from its end,
 * among equal waits: a link without wait, a device-predecessor that
 * finished just as the op's input arrived, can only shrink by moving
 * work); returns their count.  With none, the chain is a DAG path run
 * back to back from time 0 at the fastest speeds: no placement and order
 * can finish before it, the incumbent is optimal. */
static int by_wait(const void *x, const void *y)
{
    const anchor *a = x, *b = y;
    if (a->wait != b->wait)
        return a->wait > b->wait ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

/* Golden-ratio key of position pos in [0, 1): consecutive positions far
 * apart. */
static double spread_key(int pos)
{
    return fmod(pos * 0.6180339887498949, 1);
}

static int by_spread(const void *x, const void *y)
{
    const anchor *a = x, *b = y;
    double ka = spread_key(a->pos), kb = spread_key(b->pos);
    if (ka != kb)
        return ka < kb ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

static int improvable_anchors(const op_problem *p, const op_placement *inc, const sched *s,
                              const int *chain, int nchain, anchor *anchors)
{
    const op_graph *g = p->g;
    int n = 0;
    for (int c = 0; c < nchain; c++) {
        int v = chain[c], dv = inc->device_of[v];
        double fastest = -1, wait = 0;
        for (int d = 0; d < p->nd; d++)
            if (op_eligible(p, v, d) && (fastest < 0 || op_exec_us(p, v, d) < fastest))
                fastest = op_exec_us(p, v, d);
        int slow = op_exec_us(p, v, dv) > fastest * (1 + 1e-9) + 1e-9, link = 0;
        if (c + 1 < nchain) {
            int u = chain[c + 1], edge = 0;
            for (int e = g->pred_off[v]; e < g->pred_off[v + 1]; e++)
                edge |= g->pred[e] == u;
            wait = s->start[v] - s->finish[u];
            link = !edge || wait > 1e-6;
            if (link)
                anchors[n] = (anchor){u, n, wait}, n++;
        } else {
            wait = s->start[v];
            link = wait > 1e-6;
        }
        if (link || slow)
            anchors[n] = (anchor){v, n, wait}, n++;
    }
    qsort(anchors, (size_t)n, sizeof *anchors, by_wait);
    /* the anchors without a wait: alternately from the chain's end and
     * spread over it (scratch: the second half of anchors[]) */
    int z = 0;
    while (z < n && anchors[z].wait > 1e-6)
        z++;
    int nz = n - z;
    anchor *spread = anchors + n;
    memcpy(spread, anchors + z, (size_t)nz * sizeof *spread);
    qsort(spread, (size_t)nz, sizeof *spread, by_spread);
    anchor *end_first = spread + nz;
    memcpy(end_first, anchors + z, (size_t)nz * sizeof *end_first);
    unsigned char *used = calloc((size_t)n + 1, 1);
    if (!used) /* keep the end-first order */
        return n;
    for (int i = 0, e = 0, g = 0; i < nz; i++) {
        const anchor *from = i % 2 == 0 ? end_first : spread;
        int *at = i % 2 == 0 ? &e : &g;
        while (used[from[*at].pos]) /* nz unused remain, so both lists hold one */
            (*at)++;
        used[from[*at].pos] = 1;
        anchors[z + i] = from[(*at)++];
    }
    free(used);
    return n;
}

/* What the incumbent's critical chain (chain[0] last) is made of: busy
 * time, waits after a predecessor on another device (transfers), and waits
 * after one on the same device (the device or a channel queue). */
static void report_chain(const op_place_ctx *ctx, const op_placement *inc, const sched *s,
                         const int *chain, int nchain, int nanch)
{
    double busy = 0, wait_x = 0, wait_d = 0;
    for (int c = 0; c < nchain; c++) {
        int v = chain[c];
        busy += s->finish[v] - s->start[v];
        if (c + 1 == nchain)
            continue;
        int u = chain[c + 1];
        double gap = s->start[v] - s->finish[u];
        if (inc->device_of[u] != inc->device_of[v])
            wait_x += gap;
        else
            wait_d += gap;
    }
    op_progress(ctx, "pesto: LNS: critical chain of %d ops from %.1f us: busy %.1f us, waits %.1f "
                "us after another device's op, %.1f us after its own device's; %d anchors",
                nchain, s->start[chain[nchain - 1]], busy, wait_x, wait_d, nanch);
}

/* Solve one window; *improved when the candidate replaced *inc. */
static op_status one_window(const op_place_ctx *ctx, op_sim *sim, const pesto_lns_opts *o,
                            op_placement *inc, lns_buf *b, int *improved, int *optimal,
                            int *stopped, pesto_lns_stats *stats, op_error *err)
{
    const op_problem *p = ctx->p;
    window *w = &b->w;
    *improved = *optimal = *stopped = 0;
    size_t rb = ((size_t)(w->hi - w->lo) + 7) / 8, need = (size_t)(w->hi - w->lo) * rb + 1;
    if (need > b->bits_cap) {
        unsigned char *nb = realloc(b->bits, need);
        if (!nb)
            return op_fail(err, OP_ENOMEM, "pesto: out of memory for a window");
        b->bits = nb;
        b->bits_cap = need;
    }
    window_reach(p, inc, &b->s, w, b->slice_pos, b->bits);
    lp_model m = {0};
    op_status st = OP_OK;
    if (build(&m, p, inc, &b->s, w)) {
        st = op_fail(err, OP_ENOMEM, "pesto: out of memory building a window's ILP");
        goto done;
    }
    int ns = 0, nd = p->nd;
    for (int a = 0; a < w->k; a++)
        for (int d = 0; d < nd; d++)
            if (w->X[a * nd + d] >= 0) {
                b->cols[ns] = w->X[a * nd + d];
                b->vals[ns++] = inc->device_of[w->ops[a]] == d;
            }
    for (long t = 0; t < w->npairs; t++) {
        b->cols[ns] = w->pair_delta[t];
        b->vals[ns++] = b->s.rank[w->ops[w->pair_a[t]]] < b->s.rank[w->ops[w->pair_b[t]]];
    }
    lp_solve_opts so = {.seconds = o->window_seconds, .deadline = o->deadline, .nstart = ns,
                        .start_cols = b->cols, .start_vals = b->vals,
                        .idle = o->idle, .idle_arg = o->arg};
    lp_solution sol;
    if ((st = lp_solve(&m, &so, &sol, err)))
        goto done;
    *optimal = sol.status == LP_OPTIMAL;
    *stopped = sol.stopped;
    if (sol.x) {
        op_placement cand;
        if (!(st = candidate_from(p, inc, b, sol.x, &cand, err))) {
            sched cs = b->s; /* reuses the arrays: the loop re-simulates the incumbent */
            double old_step = b->s.step, old_over = b->s.over;
            st = simulate(p, sim, &cand, &cs, err);
            if (*optimal && sol.objective >= old_step - 1e-6 * old_step)
                stats->at_incumbent++; /* no better placement inside this window */
            stats->model_us = sol.objective;
            stats->sim_us = cs.step;
            if (!st && op_sim_ranks_before(cs.over, cs.step * (1 + 1e-9), old_over, old_step)) {
                op_placement tmp = *inc;
                *inc = cand;
                cand = tmp;
                b->s.step = cs.step;
                b->s.over = cs.over;
                *improved = 1;
            } else if (!st && sol.objective < old_step - 1e-6 * old_step) {
                stats->rejected++; /* the model said better, the simulator did not */
            }
            op_progress(ctx, "pesto: LNS window of %d ops (devices %d,%d) at %.1f us: ILP %s "
                        "%.1f us, simulated %.1f us%s", w->k, w->dev_a, w->dev_b,
                        b->s.start[w->ops[0]],
                        *optimal ? "optimal" : "incumbent", sol.objective, cs.step,
                        *improved ? " (kept)" : "");
            op_placement_destroy(&cand);
        }
        free(sol.x);
    }
done:
    for (int a = 0; a < w->k; a++)
        w->loc[w->ops[a]] = -1;
    lp_free(&m);
    return st;
}

/* Simulate inc into b->s and, when it has no order, give it the simulated
 * one, so windows can keep it. */
static op_status give_order(const op_problem *p, op_sim *sim, op_placement *inc, lns_buf *b,
                            op_error *err)
{
    op_status st = simulate(p, sim, inc, &b->s, err);
    if (st || inc->has_order)
        return st;
    for (int i = 0; i < p->n; i++)
        b->seq[i] = i;
    sort_ops(b->seq, p->n, b->s.start, p->g->topo_pos);
    if ((st = op_placement_set_order_from_sequence(inc, b->seq, err)))
        return st;
    return simulate(p, sim, inc, &b->s, err);
}

void pesto_lns_default_opts(pesto_lns_opts *o)
{
    *o = (pesto_lns_opts){.min_window = 8, .max_window = 120};
}

op_status pesto_lns(const op_place_ctx *ctx, op_sim *sim, const pesto_lns_opts *o,
                    op_placement *inc, double *step_us, double *overflow, pesto_lns_stats *stats,
                    op_error *err)
{
    const op_problem *p = ctx->p;
    memset(stats, 0, sizeof *stats);
    int maxk = o->max_window < p->n ? o->max_window : p->n;
    int mink = o->min_window < maxk ? o->min_window : maxk;
    if (maxk < 2)
        return OP_OK;
    lns_buf b;
    memset(&b, 0, sizeof b);
    op_status st = OP_OK;
    if (buf_alloc(&b, p, maxk)) {
        st = op_fail(err, OP_ENOMEM, "pesto: out of memory for the LNS");
        goto done;
    }
    if ((st = give_order(p, sim, inc, &b, err)))
        goto done;
    stats->first_step_us = b.s.step;
    int k = mink + (maxk - mink) / 4, next_anchor = 0, fails_here = 0, round = 0;
    uint64_t rng = ctx->seed * 6364136223846793005ULL + 1442695040888963407ULL;
    while (!op_interrupted() && (o->deadline <= 0 || op_seconds_now() < o->deadline) &&
           (o->max_windows <= 0 || stats->windows < o->max_windows)) {
        if ((st = simulate_traced(p, sim, inc, &b.s, &b.tr, err)))
            goto done;
        if (op_problem_at_bound(p, b.s.step, b.s.over)) { /* done when proven */
            stats->proven = 1;
            op_progress(ctx, "pesto: LNS: the incumbent reaches the proven bound (%s); it is "
                        "optimal", p->proven_method);
            break;
        }
        index_schedule(p, inc, &b.s, b.last);
        int nchain = critical_chain(p, &b.s, b.chain);
        int nanch = improvable_anchors(p, inc, &b.s, b.chain, nchain, b.anchors);
        if (stats->windows == 0 && nchain > 0)
            report_chain(ctx, inc, &b.s, b.chain, nchain, nanch);
        if (nanch == 0 && b.s.over > 0) { /* fastest, but out of memory: any chain op */
            for (int c = 0; c < nchain; c++)
                b.anchors[c] = (anchor){b.chain[c], c, 0};
            nanch = nchain;
        }
        if (nanch == 0) { /* the incumbent is optimal (improvable_anchors) */
            stats->proven = 1;
            op_progress(ctx, "pesto: LNS: the critical chain is a DAG path without waits at the "
                        "fastest speeds; the incumbent is optimal");
            break;
        }
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        if (fails_here > 0) /* the next improvable link after a window that did not help */
            next_anchor++;
        int centre_op = b.anchors[next_anchor % nanch].op;
        /* every third window frees all devices; the others two: the anchor's
         * and the one least busy around it */
        int all = p->nd > 2 && round % 3 == 2;
        round++;
        choose_window(p, inc, &b, centre_op, idlest_other(p, inc, &b, centre_op, k, rng >> 17),
                      all, k);
        pesto_lns_opts wo = *o;
        if (wo.window_seconds <= 0) { /* an eighth of the time left, 0.5..4 s */
            double left = o->deadline > 0 ? o->deadline - op_seconds_now() : 16;
            wo.window_seconds = left / 8 < 0.5 ? 0.5 : left / 8 > 4 ? 4 : left / 8;
        }
        int improved, optimal, stopped;
        if ((st = one_window(ctx, sim, &wo, inc, &b, &improved, &optimal, &stopped, stats, err)))
            goto done;
        /* b.s.step and b.s.over are inc's, kept or not (one_window) */
        if (o->sync && ((st = o->sync(o->arg, inc, b.s.step, b.s.over, improved, err)) ||
                        (!inc->has_order && (st = give_order(p, sim, inc, &b, err)))))
            goto done;
        stats->windows++;
        stats->improved += improved;
        stats->optimal += optimal;
        stats->stopped += stopped;
        if (stopped)
            break;
        fails_here = !improved;
        /* size adapts to what CBC solves in its time */
        if (optimal && k < maxk)
            k = k + (k + 3) / 4 < maxk ? k + (k + 3) / 4 : maxk;
        else if (!optimal && k > mink)
            k = k - k / 5 > mink ? k - k / 5 : mink;
    }
    if ((st = simulate(p, sim, inc, &b.s, err)))
        goto done;
    stats->step_us = b.s.step;
    *step_us = b.s.step;
    *overflow = b.s.over;
done:
    buf_free(&b);
    return st;
}
