/*
 * list_schedule.c - priority list scheduling of a fixed placement: the
 * per-device execution orders of opplace/list_schedule.h.
 *
 * Not from one of the papers: the classic list scheduler (HEFT's upward
 * rank, Topcuoglu et al. 2002, applied to a placement already made) run
 * on the simulator's model of formats.md section 5.  The event loop is the
 * simulator's (src/sim/simulate.c) without memory accounting: per device a
 * heap of ready ops, here ordered by (priority desc, ready time, index)
 * instead of (ready time, index); one transfer per (source op, destination
 * device) of the largest edge's bytes, issued when the op finishes and
 * queued on its channel first come first served (transfers issued at the
 * same instant by channel, source op, destination device, as the
 * simulator does).  Every op is appended to the start sequence when it
 * starts, which makes the sequence topological.
 *
 * Memory is kept as the simulator keeps it (rule 5: parameters for the
 * whole step, outputs from start to the last local consumer and outgoing
 * transfer, received tensors from transfer start to their last consumer,
 * scratch while running), so that an optional per-device cap can steer the
 * choice: a free device starts the highest-priority ready op whose output
 * and scratch fit under its cap, or, when none fits, the one that adds
 * least once finished (net_bytes).  Without a cap the memory is kept but
 * unused.  Critical-path-first orders run ahead and can hold more tensors
 * at once than first-ready-first (on the RNN models of bench/trinity.sh,
 * up to +37 % peak memory), hence the cap.
 *
 * Assumes a valid problem and a device_of whose every op is eligible on
 * its device (checked).  Colocation is not looked at: the placement is
 * fixed, only the order within each device is chosen.
 */
#include <stdlib.h>
#include <string.h>

#include "event_heap.h"
#include "opplace/list_schedule.h"
#include "opplace/orders.h"

const char *op_priority_name(op_priority k)
{
    switch (k) {
    case OP_PRIORITY_FIFO: return "fifo";
    case OP_PRIORITY_BLEVEL: return "blevel";
    case OP_PRIORITY_CPATH: return "cpath";
    case OP_PRIORITY_BLEVEL_W: return "blevel-w";
    default: return NULL;
    }
}

/* ------------------------------------------------------------ priorities */

op_status op_placement_priorities(const op_problem *p, const int *device_of, op_priority k,
                                  double *prio, op_error *err)
{
    const op_graph *g = p->g;
    if (k == OP_PRIORITY_FIFO) {
        memset(prio, 0, (size_t)p->n * sizeof *prio);
        return OP_OK;
    }
    if (!op_priority_name(k))
        return op_fail(err, OP_EINPUT, "unknown schedule priority %d", (int)k);
    double *w = op_malloc(((size_t)p->n + 1) * sizeof *w, err);
    double *c = op_calloc((size_t)g->n_edges + 1, sizeof *c, err);
    if (!w || !c) {
        free(w);
        free(c);
        return OP_ENOMEM;
    }
    for (int i = 0; i < p->n; i++)
        w[i] = op_exec_us(p, i, device_of[i]);
    if (k != OP_PRIORITY_BLEVEL_W)
        for (int e = 0; e < g->n_edges; e++) {
            int s = device_of[g->edge_src[e]], d = device_of[g->edge_dst[e]];
            if (s != d)
                c[e] = op_cluster_transfer_us(p->c, s, d, g->edge_bytes[e]);
        }
    op_levels lv;
    op_status st = op_levels_init_costs(&lv, g, w, c, err);
    free(w);
    free(c);
    if (st)
        return st;
    const double *src = k == OP_PRIORITY_CPATH ? lv.cpath : lv.blevel;
    memcpy(prio, src, (size_t)p->n * sizeof *prio);
    op_levels_destroy(&lv);
    return OP_OK;
}

/* ------------------------------------------------------- the list schedule */

typedef struct ls_xfer {
    int src, dst, chan, next;
    int64_t bytes;
} ls_xfer;

typedef struct ls {
    const op_problem *p;
    const int *dev;
    const double *prio;
    int n, nd, nch;
    int *pending, *rq, *rq_off, *rq_len, *running;
    double *ready_at;
    ls_xfer *xf;
    int n_xf, n_new, *new_xf;
    int *chan_head, *chan_tail;
    unsigned char *chan_busy;
    int *dev_count, *touched;
    int64_t *dev_bytes;
    /* memory (formats.md 5 rule 5), only with a cap */
    const int64_t *cap;
    int64_t *mem;
    int *out_refs, *xf_refs, *xfer_of_edge, *held;
    event_heap ev;
    int *seq, n_seq;
    double makespan;
} ls;

static void ls_free(ls *s)
{
    free(s->pending);
    free(s->rq);
    free(s->rq_off);
    free(s->rq_len);
    free(s->running);
    free(s->ready_at);
    free(s->xf);
    free(s->new_xf);
    free(s->chan_head);
    free(s->chan_tail);
    free(s->chan_busy);
    free(s->dev_count);
    free(s->touched);
    free(s->dev_bytes);
    free(s->ev.a);
    free(s->mem);
    free(s->out_refs);
    free(s->xf_refs);
    free(s->xfer_of_edge);
    free(s->held);
}

static op_status ls_alloc(ls *s, op_error *err)
{
    size_t n = (size_t)s->n + 1, nd = (size_t)s->nd + 1, nch = (size_t)s->nch + 1;
    size_t nx = (size_t)s->n * (size_t)s->nd + 1;
    s->pending = op_malloc(n * sizeof(int), err);
    s->rq = op_malloc(n * sizeof(int), err);
    s->ready_at = op_malloc(n * sizeof(double), err);
    s->rq_off = op_calloc(nd, sizeof(int), err);
    s->rq_len = op_calloc(nd, sizeof(int), err);
    s->running = op_malloc(nd * sizeof(int), err);
    s->dev_count = op_calloc(nd, sizeof(int), err);
    s->touched = op_malloc(nd * sizeof(int), err);
    s->dev_bytes = op_calloc(nd, sizeof(int64_t), err);
    s->xf = op_malloc(nx * sizeof(ls_xfer), err);
    s->new_xf = op_malloc(nx * sizeof(int), err);
    s->chan_head = op_malloc(nch * sizeof(int), err);
    s->chan_tail = op_malloc(nch * sizeof(int), err);
    s->chan_busy = op_calloc(nch, 1, err);
    s->ev.a = op_malloc((nd + nch) * sizeof(sim_event), err);
    s->mem = op_calloc(nd, sizeof(int64_t), err);
    s->out_refs = op_calloc(n, sizeof(int), err);
    s->xf_refs = op_calloc(nx, sizeof(int), err);
    s->xfer_of_edge = op_calloc((size_t)s->p->g->n_edges + 1, sizeof(int), err);
    s->held = op_malloc(n * sizeof(int), err);
    if (!s->pending || !s->rq || !s->ready_at || !s->rq_off || !s->rq_len || !s->running ||
        !s->dev_count || !s->touched || !s->dev_bytes || !s->xf || !s->new_xf ||
        !s->chan_head || !s->chan_tail || !s->chan_busy || !s->ev.a || !s->mem ||
        !s->out_refs || !s->xf_refs || !s->xfer_of_edge || !s->held)
        return OP_ENOMEM;
    return OP_OK;
}

/* a runs before b: higher priority, then ready earlier, then smaller index */
static int rq_before(const ls *s, int a, int b)
{
    if (s->prio[a] != s->prio[b])
        return s->prio[a] > s->prio[b];
    if (s->ready_at[a] != s->ready_at[b])
        return s->ready_at[a] < s->ready_at[b];
    return a < b;
}

static void rq_push(ls *s, int op, double t)
{
    s->ready_at[op] = t;
    int d = s->dev[op];
    int *h = s->rq + s->rq_off[d];
    int i = s->rq_len[d]++;
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (!rq_before(s, op, h[parent]))
            break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = op;
}

static int rq_pop(ls *s, int d)
{
    int *h = s->rq + s->rq_off[d];
    int top = h[0], last = h[--s->rq_len[d]], n = s->rq_len[d], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && rq_before(s, h[c + 1], h[c]))
            c++;
        if (!rq_before(s, h[c], last))
            break;
        h[i] = h[c];
        i = c;
    }
    if (n > 0)
        h[i] = last;
    return top;
}

/* One transfer per remote destination device, of the largest edge. */
static void issue_transfers(ls *s, int op)
{
    const op_graph *g = s->p->g;
    int src_dev = s->dev[op], nt = 0;
    for (int k = g->succ_off[op]; k < g->succ_off[op + 1]; k++) {
        int d = s->dev[g->succ[k]];
        if (d == src_dev)
            continue;
        int64_t b = g->edge_bytes[g->succ_edge[k]];
        if (s->dev_count[d]++ == 0) {
            s->touched[nt++] = d;
            s->dev_bytes[d] = b;
        } else if (b > s->dev_bytes[d]) {
            s->dev_bytes[d] = b;
        }
    }
    for (int i = 0; i < nt; i++) {
        int d = s->touched[i], x = s->n_xf++;
        s->xf[x] = (ls_xfer){.src = op, .dst = d, .chan = s->p->c->chan[src_dev * s->nd + d],
                             .next = -1, .bytes = s->dev_bytes[d]};
        s->xf_refs[x] = s->dev_count[d];
        s->out_refs[op]++;
        s->new_xf[s->n_new++] = x;
        s->dev_count[d] = -1 - x; /* remembered below, then cleared */
    }
    for (int k = g->succ_off[op]; k < g->succ_off[op + 1]; k++) {
        int d = s->dev[g->succ[k]];
        if (d != src_dev)
            s->xfer_of_edge[g->succ_edge[k]] = -1 - s->dev_count[d];
    }
    for (int i = 0; i < nt; i++)
        s->dev_count[s->touched[i]] = 0;
}

static void release_output(ls *s, int op)
{
    if (--s->out_refs[op] == 0)
        s->mem[s->dev[op]] -= s->p->g->output_bytes[op];
}

static void finish_op(ls *s, int op, double t)
{
    const op_graph *g = s->p->g;
    int d = s->dev[op], local = 0;
    s->running[d] = -1;
    if (t > s->makespan)
        s->makespan = t;
    s->mem[d] -= g->temp_bytes[op];
    for (int k = g->pred_off[op]; k < g->pred_off[op + 1]; k++) {
        int u = g->pred[k];
        if (s->dev[u] == d) {
            release_output(s, u);
        } else {
            int x = s->xfer_of_edge[g->pred_edge[k]];
            if (--s->xf_refs[x] == 0)
                s->mem[d] -= s->xf[x].bytes;
        }
    }
    for (int k = g->succ_off[op]; k < g->succ_off[op + 1]; k++) {
        int v = g->succ[k];
        if (s->dev[v] == d) {
            local++;
            if (--s->pending[v] == 0)
                rq_push(s, v, t);
        }
    }
    s->out_refs[op] = local + 1; /* + the "running" hold dropped below */
    issue_transfers(s, op);
    release_output(s, op);
}

static void transfer_done(ls *s, int x, double t)
{
    const op_graph *g = s->p->g;
    const ls_xfer *tr = &s->xf[x];
    s->chan_busy[tr->chan] = 0;
    release_output(s, tr->src);
    for (int k = g->succ_off[tr->src]; k < g->succ_off[tr->src + 1]; k++) {
        int v = g->succ[k];
        if (s->dev[v] == tr->dst && --s->pending[v] == 0)
            rq_push(s, v, t);
    }
}

static int xf_before(const ls *s, int a, int b)
{
    const ls_xfer *x = &s->xf[a], *y = &s->xf[b];
    if (x->chan != y->chan)
        return x->chan < y->chan;
    if (x->src != y->src)
        return x->src < y->src;
    return x->dst < y->dst;
}

/* Queue the transfers issued at this instant, in the simulator's order. */
static void queue_new_transfers(ls *s)
{
    for (int i = 1; i < s->n_new; i++)
        for (int j = i; j > 0 && xf_before(s, s->new_xf[j], s->new_xf[j - 1]); j--) {
            int tmp = s->new_xf[j];
            s->new_xf[j] = s->new_xf[j - 1];
            s->new_xf[j - 1] = tmp;
        }
    for (int i = 0; i < s->n_new; i++) {
        int x = s->new_xf[i], c = s->xf[x].chan;
        if (s->chan_tail[c] < 0)
            s->chan_head[c] = x;
        else
            s->xf[s->chan_tail[c]].next = x;
        s->chan_tail[c] = x;
    }
    s->n_new = 0;
}

static void start_transfers(ls *s, double t)
{
    for (int ch = 0; ch < s->nch; ch++) {
        if (s->chan_busy[ch] || s->chan_head[ch] < 0)
            continue;
        int x = s->chan_head[ch];
        ls_xfer *tr = &s->xf[x];
        s->chan_head[ch] = tr->next;
        if (tr->next < 0)
            s->chan_tail[ch] = -1;
        s->chan_busy[ch] = 1;
        s->mem[tr->dst] += tr->bytes;
        double dur = op_cluster_transfer_us(s->p->c, s->dev[tr->src], tr->dst, tr->bytes);
        ev_push(&s->ev, (sim_event){t + dur, EV_TRANSFER_DONE, x});
    }
}

static int64_t start_bytes(const ls *s, int op)
{
    return s->p->g->output_bytes[op] + s->p->g->temp_bytes[op];
}

/* What starting op would add to its device once it has finished: its
 * output and scratch, less the inputs it is the last holder of. */
static int64_t net_bytes(const ls *s, int op)
{
    const op_graph *g = s->p->g;
    int d = s->dev[op];
    int64_t net = start_bytes(s, op);
    for (int k = g->pred_off[op]; k < g->pred_off[op + 1]; k++) {
        int u = g->pred[k];
        if (s->dev[u] == d) {
            if (s->out_refs[u] == 1)
                net -= g->output_bytes[u];
        } else {
            int x = s->xfer_of_edge[g->pred_edge[k]];
            if (s->xf_refs[x] == 1)
                net -= s->xf[x].bytes;
        }
    }
    return net;
}

/* The ready op device d starts: the highest-priority one; with a cap, the
 * highest-priority one whose start keeps d within it, or, when none does,
 * the one whose start and finish add least (net_bytes). */
static int pick_op(ls *s, int d)
{
    if (!s->cap)
        return rq_pop(s, d);
    int n_held = 0, pick = -1;
    while (s->rq_len[d] > 0) {
        int op = rq_pop(s, d);
        if (s->mem[d] + start_bytes(s, op) <= s->cap[d]) {
            pick = op;
            break;
        }
        s->held[n_held++] = op;
    }
    if (pick < 0) {
        int best = 0;
        int64_t best_net = net_bytes(s, s->held[0]);
        for (int i = 1; i < n_held; i++) {
            int64_t net = net_bytes(s, s->held[i]);
            if (net < best_net) {
                best = i;
                best_net = net;
            }
        }
        pick = s->held[best];
        s->held[best] = s->held[--n_held];
    }
    for (int i = 0; i < n_held; i++)
        rq_push(s, s->held[i], s->ready_at[s->held[i]]);
    return pick;
}

static void start_ops(ls *s, double t)
{
    for (int d = 0; d < s->nd; d++) {
        if (s->running[d] >= 0 || s->rq_len[d] == 0)
            continue;
        int op = pick_op(s, d);
        s->running[d] = op;
        s->out_refs[op] = 1;
        s->mem[d] += start_bytes(s, op);
        s->seq[s->n_seq++] = op;
        ev_push(&s->ev, (sim_event){t + op_exec_us(s->p, op, d), EV_OP_FINISH, op});
    }
}

static void run_events(ls *s)
{
    double t = 0.0;
    for (;;) {
        queue_new_transfers(s);
        start_transfers(s, t);
        start_ops(s, t);
        if (s->ev.n == 0)
            break;
        t = s->ev.a[0].t;
        while (s->ev.n > 0 && s->ev.a[0].t == t) {
            sim_event e = ev_pop(&s->ev);
            if (e.kind == EV_OP_FINISH)
                finish_op(s, e.id, t);
            else
                transfer_done(s, e.id, t);
        }
    }
}

op_status op_order_list_schedule(const op_problem *p, const int *device_of, const double *prio,
                                 const int64_t *mem_cap, int *seq, double *makespan_us,
                                 op_error *err)
{
    const op_graph *g = p->g;
    for (int i = 0; i < p->n; i++)
        if (device_of[i] < 0 || device_of[i] >= p->nd || !op_eligible(p, i, device_of[i]))
            return op_fail(err, OP_EINPUT,
                           "list schedule: op '%s' is placed on a device it cannot run on",
                           g->op_name[i]);
    ls s = {.p = p, .dev = device_of, .prio = prio, .n = p->n, .nd = p->nd,
            .nch = p->c->n_chan, .seq = seq, .cap = mem_cap};
    op_status st = ls_alloc(&s, err);
    if (st) {
        ls_free(&s);
        return st;
    }
    for (int i = 0; i < p->n; i++)
        s.rq_off[device_of[i] + 1]++;
    for (int d = 0; d < p->nd; d++) {
        s.rq_off[d + 1] += s.rq_off[d];
        s.running[d] = -1;
    }
    for (int c = 0; c < s.nch; c++)
        s.chan_head[c] = s.chan_tail[c] = -1;
    op_problem_param_bytes(p, device_of, s.mem);
    for (int i = 0; i < p->n; i++) {
        s.pending[i] = g->pred_off[i + 1] - g->pred_off[i];
        if (s.pending[i] == 0)
            rq_push(&s, i, 0.0);
    }
    run_events(&s);
    if (s.n_seq != p->n)
        st = op_fail(err, OP_EINPUT, "list schedule: only %d of %d ops ran", s.n_seq, p->n);
    else if (makespan_us)
        *makespan_us = s.makespan;
    ls_free(&s);
    return st;
}

op_status op_placement_order_by_priority(const op_problem *p, op_placement *pl, op_priority k,
                                         const int64_t *mem_cap, op_error *err)
{
    if (k == OP_PRIORITY_FIFO) {
        op_placement_drop_order(pl);
        return OP_OK;
    }
    double *prio = op_malloc(((size_t)p->n + 1) * sizeof *prio, err);
    int *seq = op_malloc(((size_t)p->n + 1) * sizeof *seq, err);
    op_status st = !prio || !seq ? OP_ENOMEM : OP_OK;
    if (!st)
        st = op_placement_priorities(p, pl->device_of, k, prio, err);
    if (!st)
        st = op_order_list_schedule(p, pl->device_of, prio, mem_cap, seq, NULL, err);
    if (!st)
        st = op_placement_set_order_from_sequence(pl, seq, err);
    free(prio);
    free(seq);
    return st;
}
