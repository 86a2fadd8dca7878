/*
 * simulate.c - the discrete-event simulator of formats.md section 5.
 *
 * Time advances from one event time to the next.  At each time t the loop
 *   1. applies every event at t (op finishes, transfer arrivals), which may
 *      make ops ready and issue new transfers;
 *   2. appends the transfers issued at t to their channel queues, sorted by
 *      (source op index, destination device index) - issue time is t for all
 *      of them and later than anything already queued, so the queues stay in
 *      the order rule 4 demands;
 *   3. starts the head transfer of every idle channel and the next op on
 *      every idle device (first-ready first, ties by op index, or the next op
 *      of the device's order when it is ready);
 *   4. repeats while new events at the same t appear (zero-length ops or
 *      transfers), then records each device's memory level at t.
 * Because peak memory is taken from the level after all changes at a time,
 * releases and allocations at equal times net out, i.e. releases come first
 * (rule 5).
 *
 * Every array is allocated by op_sim_new; op_sim_run allocates nothing
 * unless a trace is requested (or, once, a capped dispatch's ready trees).
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/problem_util.h"
#include "opplace/simulate.h"
#include "sim/event_heap.h"
#include "sim/sim_util.h"

#include "sim/ready_heap.h"
#include "sim/sim_internal.h"

/* ---- set-up ------------------------------------------------------------ */

op_sim *op_sim_new(const op_problem *p, op_error *err)
{
    op_sim *s = op_calloc(1, sizeof *s, err);
    if (!s)
        return NULL;
    int n = p->n, nd = p->nd, m = p->g->n_edges, nc = p->c->n_chan;
    s->p = p;
    s->n = n;
    s->nd = nd;
    s->n_chan = nc;
#define ALLOC(field, count)                                                   \
    if (!(s->field = op_malloc((size_t)(count) * sizeof *s->field + 1, err))) \
        goto fail
    ALLOC(pending, n); ALLOC(out_refs, n);
    ALLOC(ready_at, n); ALLOC(start, n); ALLOC(finish, n);
    ALLOC(xfer_of_edge, m);
    ALLOC(xf, m); ALLOC(new_xf, m);
    ALLOC(chan_head, nc); ALLOC(chan_tail, nc); ALLOC(chan_busy, nc);
    ALLOC(running, nd); ALLOC(rq, n); ALLOC(rq_off, nd + 1); ALLOC(rq_len, nd);
    ALLOC(next_pos, nd);
    ALLOC(mem, nd); ALLOC(peak, nd); ALLOC(last_logged, nd);
    ALLOC(dev_bytes, nd); ALLOC(dev_count, nd); ALLOC(touched, nd);
    ALLOC(started, n);
    s->has_share = p->c->n_share > 0;
    s->has_host = p->c->has_host;
    /* live events: one per device and per channel; with shared compute as
     * many stale ones again before a compaction (push_event); a device
     * sending (5.9) has its EV_HOST_DONE instead of an op's finish */
    s->ev_cap = s->has_share ? 2 * (nd + nc) + 2 : nd + nc + 1;
    ALLOC(ev.a, s->ev_cap);
    if (s->has_host)
        ALLOC(host_until, nd);
    s->recv_idle_free = s->has_host && p->c->recv_idle_free;
    if (s->recv_idle_free)
        ALLOC(arrived, m);
    if (s->has_share) {
        int ng = p->c->n_share;
        ALLOC(rem, nd); ALLOC(upd, nd); ALLOC(rate, nd); ALLOC(sched, n);
        ALLOC(computing, nd); ALLOC(active, ng); ALLOC(dirty, ng); ALLOC(is_dirty, ng);
    }
#undef ALLOC
    return s;
fail:
    op_sim_free(s);
    return NULL;
}

void op_sim_free(op_sim *s)
{
    if (!s)
        return;
    free(s->pending); free(s->out_refs);
    free(s->ready_at); free(s->start); free(s->finish);
    free(s->xfer_of_edge); free(s->xf); free(s->new_xf);
    free(s->chan_head); free(s->chan_tail); free(s->chan_busy);
    free(s->running); free(s->rq); free(s->rq_off); free(s->rq_len); free(s->next_pos);
    free(s->mem); free(s->peak); free(s->last_logged);
    free(s->dev_bytes); free(s->dev_count); free(s->touched);
    free(s->ev.a);
    free(s->started);
    free(s->rem); free(s->upd); free(s->rate); free(s->sched);
    free(s->computing); free(s->active); free(s->dirty); free(s->is_dirty);
    free(s->host_until);
    free(s->arrived);
    sim_rq_tree_free(s);
    sim_checkpoints_free(s->ckpt);
    free(s);
}

op_status op_sim_result_init(op_sim_result *r, const op_problem *p, op_error *err)
{
    memset(r, 0, sizeof *r);
    r->nd = p->nd;
    r->n_chan = p->c->n_chan;
    r->busy_us = op_calloc((size_t)p->nd, sizeof *r->busy_us, err);
    r->peak_mem = op_calloc((size_t)p->nd, sizeof *r->peak_mem, err);
    r->chan_busy_us = op_calloc((size_t)r->n_chan + 1, sizeof *r->chan_busy_us, err);
    r->chan_bytes = op_calloc((size_t)r->n_chan + 1, sizeof *r->chan_bytes, err);
    if (!r->busy_us || !r->peak_mem || !r->chan_busy_us || !r->chan_bytes) {
        op_sim_result_destroy(r);
        return OP_ENOMEM;
    }
    return OP_OK;
}

void op_sim_result_destroy(op_sim_result *r)
{
    free(r->busy_us);
    free(r->peak_mem);
    free(r->chan_busy_us);
    free(r->chan_bytes);
    memset(r, 0, sizeof *r);
}

op_status op_sim_trace_init(op_sim_trace *t, const op_problem *p, op_error *err)
{
    memset(t, 0, sizeof *t);
    t->n_ops = p->n;
    t->start_us = op_calloc((size_t)p->n, sizeof *t->start_us, err);
    t->finish_us = op_calloc((size_t)p->n, sizeof *t->finish_us, err);
    t->dev = op_calloc((size_t)p->n, sizeof *t->dev, err);
    t->transfers = op_calloc((size_t)p->g->n_edges + 1, sizeof *t->transfers, err);
    if (!t->start_us || !t->finish_us || !t->dev || !t->transfers) {
        op_sim_trace_destroy(t);
        return OP_ENOMEM;
    }
    return OP_OK;
}

void op_sim_trace_destroy(op_sim_trace *t)
{
    free(t->start_us);
    free(t->finish_us);
    free(t->dev);
    free(t->transfers);
    free(t->mem);
    memset(t, 0, sizeof *t);
}

/* ---- one run ------------------------------------------------------------ */

static op_status log_memory(run *R, double t)
{
    op_sim *s = R->s;
    for (int d = 0; d < s->nd; d++) {
        if (s->mem[d] > s->peak[d])
            s->peak[d] = s->mem[d];
        if (!R->trace || s->mem[d] == s->last_logged[d])
            continue;
        op_sim_trace *tr = R->trace;
        if (tr->n_mem == tr->cap_mem) {
            size_t cap = tr->cap_mem ? (size_t)tr->cap_mem * 2 : 1024;
            void *q = op_realloc(tr->mem, cap * sizeof *tr->mem, R->err);
            if (!q)
                return OP_ENOMEM;
            tr->mem = q;
            tr->cap_mem = (int)cap;
        }
        tr->mem[tr->n_mem++] = (op_sim_mem_point){d, t, s->mem[d]};
        s->last_logged[d] = s->mem[d];
    }
    return OP_OK;
}

static void make_ready(run *R, int op, double t)
{
    op_sim *s = R->s;
    s->ready_at[op] = t;
    if (R->pl->has_order)
        return;
    if (s->pick_cap)
        sim_rq_push_capped(s, R->dev[op], op);
    else
        rq_heap_push(s, R->dev[op], op);
}

static void release_output(run *R, int op)
{
    assert(R->s->out_refs[op] > 0); /* released once per holder */
    if (--R->s->out_refs[op] == 0)
        R->s->mem[R->dev[op]] -= R->s->p->g->output_bytes[op];
    else if (R->s->out_refs[op] == 1 && R->s->rt.n_tree)
        sim_rq_sole_holder_of_output(R, op);
    assert(R->s->mem[R->dev[op]] >= 0);
}

/* Group op's remote consumers by device and issue one transfer per device. */
static void issue_transfers(run *R, int op, double t)
{
    op_sim *s = R->s;
    const op_graph *g = s->p->g;
    int src_dev = R->dev[op], nt = 0;
    for (int k = g->succ_off[op]; k < g->succ_off[op + 1]; k++) {
        int d = R->dev[g->succ[k]];
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
    /* lowest destination index first, so ids follow the tie-break rule */
    for (int i = 1; i < nt; i++)
        for (int j = i; j > 0 && s->touched[j - 1] > s->touched[j]; j--) {
            int tmp = s->touched[j];
            s->touched[j] = s->touched[j - 1];
            s->touched[j - 1] = tmp;
        }
    for (int i = 0; i < nt; i++) {
        int d = s->touched[i], x = s->n_xf++;
        s->xf[x] = (transfer){.src = op, .dst_dev = d,
                              .chan = op_cluster_chan(s->p->c, src_dev, d),
                              .refs = s->dev_count[d], .next = -1,
                              .bytes = s->dev_bytes[d], .issue = t};
        s->new_xf[s->n_new++] = x;
        s->out_refs[op]++;
        s->dev_count[d] = 0;
    }
    for (int k = g->succ_off[op]; k < g->succ_off[op + 1]; k++) {
        int v = g->succ[k];
        if (R->dev[v] != src_dev) {
            /* transfers of this op were numbered in destination order */
            int x = s->n_xf - nt;
            while (s->xf[x].dst_dev != R->dev[v])
                x++;
            s->xfer_of_edge[g->succ_edge[k]] = x;
        }
    }
}

/* ---- shared compute (formats.md 5.8) ----------------------------------- */

/* A finish event that a later rescheduling replaced, or of a finished op. */
static int ev_stale(const op_sim *s, const sim_event *e)
{
    return e->kind == EV_OP_FINISH && (s->finish[e->id] >= 0 || s->sched[e->id] != e->t);
}

/* Push an event; with shared compute, first drop the stale events when the
 * heap is full (at most devices + channels are live, half the capacity). */
static void push_event(op_sim *s, sim_event e)
{
    if (s->has_share && s->ev.n == s->ev_cap) {
        int n = s->ev.n;
        s->ev.n = 0;
        for (int i = 0; i < n; i++) {
            sim_event k = s->ev.a[i];
            if (!ev_stale(s, &k))
                ev_push(&s->ev, k); /* in place: the write index never passes i */
        }
    }
    assert(s->ev.n < s->ev_cap);
    ev_push(&s->ev, e);
}

static void mark_dirty(op_sim *s, int grp)
{
    if (!s->is_dirty[grp]) {
        s->is_dirty[grp] = 1;
        s->dirty[s->n_dirty++] = grp;
    }
}

/* d's op enters its compute phase at t with dur of work at its speed. */
static void begin_compute(run *R, int d, double dur, double t)
{
    op_sim *s = R->s;
    int grp = s->p->c->share_of[d];
    s->rem[d] = dur;
    s->upd[d] = t;
    s->rate[d] = 0; /* not scheduled yet */
    if (grp < 0 || dur <= 0) {
        /* alone, or no work: it cannot slow anyone down */
        int op = s->running[d];
        s->sched[op] = t + dur;
        push_event(s, (sim_event){s->sched[op], EV_OP_FINISH, op});
        return;
    }
    s->sched[s->running[d]] = -1; /* no event yet (times are never negative) */
    s->computing[d] = 1;
    s->active[grp]++;
    mark_dirty(s, grp);
}

/* Every group whose count of computing members changed at t: advance each
 * computing member's work at its old rate to t, then give it the new rate
 * and a new finish event (the old one goes stale).  Members whose rate did
 * not change keep their event. */
static void reschedule_shared(run *R, double t)
{
    op_sim *s = R->s;
    const op_cluster *c = s->p->c;
    for (int k = 0; k < s->n_dirty; k++) {
        int grp = s->dirty[k];
        const op_share_group *g = &c->share[grp];
        double r = op_share_rate(g, s->active[grp]);
        s->is_dirty[grp] = 0;
        for (int i = 0; i < g->n; i++) {
            int d = g->dev[i];
            if (!s->computing[d] || s->rate[d] == r)
                continue;
            double left = s->rem[d] - (t - s->upd[d]) * s->rate[d];
            s->rem[d] = left > 0 ? left : 0;
            s->upd[d] = t;
            s->rate[d] = r;
            int op = s->running[d];
            double at = t + s->rem[d] / r;
            if (at != s->sched[op]) {
                s->sched[op] = at;
                push_event(s, (sim_event){at, EV_OP_FINISH, op});
            }
        }
    }
    s->n_dirty = 0;
}

/* The dispatch of d's op ended at t: it starts computing. */
static void compute_begins(run *R, int op, double t)
{
    op_sim *s = R->s;
    int d = R->dev[op];
    begin_compute(R, d, op_exec_us(s->p, op, d), t);
}

/* formats.md 5.9: device d sends transfers first..n_xf-1 (issued at t by
 * its op): it is busy with them before it takes its next op. */
static void pay_sends(run *R, int d, int first, double t)
{
    op_sim *s = R->s;
    double us = 0;
    for (int x = first; x < s->n_xf; x++)
        us += op_cluster_host_us(s->p->c, d, s->xf[x].dst_dev, s->xf[x].bytes, 1);
    if (us <= 0)
        return;
    s->host_until[d] = t + us;
    R->r->busy_us[d] += us;
    push_event(s, (sim_event){t + us, EV_HOST_DONE, d});
}

/* formats.md 5.9, recv_idle_free: the transfers that arrived at t cost
 * their destination no receive host cost when, every event of t done, it
 * runs no op and no host work (the receive ran on the core it left idle). */
static void judge_arrivals(op_sim *s, double t)
{
    for (int i = 0; i < s->n_arrived; i++) {
        transfer *x = &s->xf[s->arrived[i]];
        if (s->running[x->dst_dev] < 0 && s->host_until[x->dst_dev] <= t)
            x->received = 1;
    }
    s->n_arrived = 0;
}

/* formats.md 5.9: the host cost on d of the tensors op is the first on d to
 * read (their transfers have arrived: op is ready). */
static double pay_receives(run *R, int op, int d)
{
    op_sim *s = R->s;
    const op_graph *g = s->p->g;
    double us = 0;
    for (int k = g->pred_off[op]; k < g->pred_off[op + 1]; k++) {
        int u = g->pred[k];
        if (R->dev[u] == d)
            continue;
        transfer *x = &s->xf[s->xfer_of_edge[g->pred_edge[k]]];
        if (!x->received) {
            x->received = 1;
            us += op_cluster_host_us(s->p->c, R->dev[u], d, x->bytes, 0);
        }
    }
    return us;
}

static void finish_op(run *R, int op, double t)
{
    op_sim *s = R->s;
    const op_graph *g = s->p->g;
    int d = R->dev[op];
    /* debug-build invariants (formats.md section 5): an op finishes once,
     * on the device that runs it, no earlier than it started */
    assert(s->running[d] == op && s->finish[op] < 0 && t >= s->start[op]);
    s->running[d] = -1;
    s->finish[op] = t;
    R->done++;
    if (s->has_share) {
        R->r->busy_us[d] += t - s->start[op];
        if (s->computing[d]) {
            int grp = s->p->c->share_of[d];
            s->computing[d] = 0;
            s->active[grp]--;
            mark_dirty(s, grp);
        }
    }
    s->mem[d] -= g->temp_bytes[op];
    /* inputs this op held: local producers' outputs and received tensors */
    for (int k = g->pred_off[op]; k < g->pred_off[op + 1]; k++) {
        int u = g->pred[k];
        if (R->dev[u] == d) {
            release_output(R, u);
        } else {
            int xi = s->xfer_of_edge[g->pred_edge[k]];
            transfer *x = &s->xf[xi];
            assert(x->refs > 0 && x->dst_dev == d);
            if (--x->refs == 0)
                s->mem[d] -= x->bytes;
            else if (x->refs == 1 && s->rt.n_tree)
                sim_rq_sole_holder_of_transfer(R, xi);
        }
    }
    int local = 0;
    for (int k = g->succ_off[op]; k < g->succ_off[op + 1]; k++) {
        int v = g->succ[k];
        if (R->dev[v] == d) {
            local++;
            if (--s->pending[v] == 0)
                make_ready(R, v, t);
        }
    }
    /* out_refs counted 1 for "running"; now count the real holders */
    s->out_refs[op] = local + 1;
    int first = s->n_xf;
    issue_transfers(R, op, t);
    if (s->has_host)
        pay_sends(R, d, first, t);
    release_output(R, op); /* drop the "running" hold: frees it if nobody holds it */
}

static void transfer_done(run *R, int x, double t)
{
    op_sim *s = R->s;
    const op_graph *g = s->p->g;
    transfer *tr = &s->xf[x];
    s->chan_busy[tr->chan] = 0;
    if (s->recv_idle_free)
        s->arrived[s->n_arrived++] = x;
    release_output(R, tr->src);
    for (int k = g->succ_off[tr->src]; k < g->succ_off[tr->src + 1]; k++) {
        int v = g->succ[k];
        if (R->dev[v] == tr->dst_dev && --s->pending[v] == 0)
            make_ready(R, v, t);
    }
}

static int cmp_new_xf(const void *a, const void *b, void *ctx)
{
    const transfer *xf = ctx;
    const transfer *x = &xf[*(const int *)a], *y = &xf[*(const int *)b];
    if (x->chan != y->chan)
        return x->chan < y->chan ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return (x->dst_dev > y->dst_dev) - (x->dst_dev < y->dst_dev);
}

/* Small insertion sort: batches of transfers issued together are short. */
static void sort_new_transfers(op_sim *s)
{
    for (int i = 1; i < s->n_new; i++)
        for (int j = i; j > 0 && cmp_new_xf(&s->new_xf[j - 1], &s->new_xf[j], s->xf) > 0; j--) {
            int tmp = s->new_xf[j];
            s->new_xf[j] = s->new_xf[j - 1];
            s->new_xf[j - 1] = tmp;
        }
}

static void queue_new_transfers(op_sim *s)
{
    sort_new_transfers(s);
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

static void start_transfers(run *R, double t)
{
    op_sim *s = R->s;
    const op_cluster *c = s->p->c;
    for (int ch = 0; ch < s->n_chan; ch++) {
        if (s->chan_busy[ch] || s->chan_head[ch] < 0)
            continue;
        int x = s->chan_head[ch];
        transfer *tr = &s->xf[x];
        s->chan_head[ch] = tr->next;
        if (tr->next < 0)
            s->chan_tail[ch] = -1;
        s->chan_busy[ch] = 1;
        tr->start = t;
        double dur = op_cluster_transfer_us(c, R->dev[tr->src], tr->dst_dev, tr->bytes);
        tr->end = t + dur;
        s->mem[tr->dst_dev] += tr->bytes;
        R->r->chan_busy_us[ch] += dur;
        R->r->chan_bytes[ch] += tr->bytes;
        R->r->comm_bytes += tr->bytes;
        push_event(s, (sim_event){tr->end, EV_TRANSFER_DONE, x});
    }
}

static int next_op_for(run *R, int d)
{
    op_sim *s = R->s;
    if (!R->pl->has_order && s->pick_cap)
        return sim_rq_pick_capped(R, d);
    if (!R->pl->has_order)
        return s->rq_len[d] ? rq_heap_pop(s, d) : -1;
    int k = R->pl->order_off[d] + s->next_pos[d];
    if (k >= R->pl->order_off[d + 1])
        return -1;
    int op = R->pl->order[k];
    if (s->pending[op] != 0)
        return -1;
    s->next_pos[d]++;
    return op;
}

static void start_ops(run *R, double t)
{
    op_sim *s = R->s;
    for (int d = 0; d < s->nd; d++) {
        if (s->running[d] >= 0 || (s->has_host && s->host_until[d] > t))
            continue;
        int op = next_op_for(R, d);
        if (op < 0)
            continue;
        double dur = op_exec_us(s->p, op, d), disp = op_cluster_dispatch_us(s->p->c, d);
        if (s->has_host)
            disp += pay_receives(R, op, d); /* 5.9: host work before the compute, as 5.7 */
        /* starts once, when every input has arrived; times are finite */
        assert(s->start[op] < 0 && s->pending[op] == 0 && dur >= 0 && isfinite(t + dur));
        s->running[d] = op;
        s->start[op] = t;
        s->out_refs[op] = 1;
        s->mem[d] += sim_start_bytes(s, op);
        if (s->prio)
            s->started[s->n_started++] = op;
        if (s->has_share) {
            /* busy time is added at the finish: sharing stretches it */
            if (disp > 0)
                push_event(s, (sim_event){t + disp, EV_COMPUTE_BEGIN, op});
            else
                begin_compute(R, d, dur, t);
            continue;
        }
        /* formats.md 5.7: the dispatch comes first (0 by default: then the
         * sums below are exactly those of a cluster without the field) */
        if (disp > 0)
            dur = disp + dur;
        R->r->busy_us[d] += dur;
        ev_push(&s->ev, (sim_event){t + dur, EV_OP_FINISH, op});
    }
}

op_status sim_reset(run *R)
{
    op_sim *s = R->s;
    const op_problem *p = s->p;
    const op_graph *g = p->g;
    const op_placement *pl = R->pl;
    if (pl->n_ops != p->n || pl->n_dev != p->nd)
        return op_fail(R->err, OP_EINPUT, "placement is for %d ops on %d devices, not %d on %d",
                       pl->n_ops, pl->n_dev, p->n, p->nd);
    for (int i = 0; i < p->n; i++) {
        int d = pl->device_of[i];
        if (d < 0 || d >= p->nd || !op_eligible(p, i, d))
            return op_fail(R->err, OP_EINPUT, "op '%s' is placed on a device it cannot run on",
                           g->op_name[i]);
    }
    op_sim_result *r = R->r;
    r->step_time_us = 0;
    r->oom = 0;
    r->comm_bytes = 0;
    r->n_transfers = 0;
    memset(r->busy_us, 0, (size_t)p->nd * sizeof *r->busy_us);
    memset(r->chan_busy_us, 0, (size_t)s->n_chan * sizeof *r->chan_busy_us);
    memset(r->chan_bytes, 0, (size_t)s->n_chan * sizeof *r->chan_bytes);
    s->n_xf = s->n_new = s->n_started = s->n_arrived = 0;
    s->ev.n = 0;
    if (s->has_share) {
        s->n_dirty = 0;
        for (int d = 0; d < p->nd; d++)
            s->computing[d] = 0;
        for (int k = 0; k < p->c->n_share; k++)
            s->active[k] = s->is_dirty[k] = 0;
    }
    R->done = 0;
    for (int c = 0; c < s->n_chan; c++) {
        s->chan_head[c] = s->chan_tail[c] = -1;
        s->chan_busy[c] = 0;
    }
    memset(s->rq_off, 0, ((size_t)p->nd + 1) * sizeof *s->rq_off);
    for (int i = 0; i < p->n; i++)
        s->rq_off[pl->device_of[i] + 1]++;
    if (s->pick_cap && !s->rt.node && sim_rq_tree_alloc(s, R->err))
        return OP_ENOMEM;
    sim_rq_clear(s);
    for (int d = 0; d < p->nd; d++) {
        s->rq_off[d + 1] += s->rq_off[d];
        s->running[d] = -1;
        if (s->has_host)
            s->host_until[d] = 0;
        s->next_pos[d] = 0;
        s->dev_count[d] = 0;
    }
    op_problem_param_bytes(p, pl->device_of, s->mem);
    for (int d = 0; d < p->nd; d++) {
        s->peak[d] = s->mem[d];
        s->last_logged[d] = -1;
    }
    for (int i = 0; i < p->n; i++) {
        s->pending[i] = g->pred_off[i + 1] - g->pred_off[i];
        s->start[i] = s->finish[i] = -1;
        if (s->pending[i] == 0)
            make_ready(R, i, 0.0);
    }
    return OP_OK;
}

static op_status report_deadlock(run *R)
{
    op_sim *s = R->s;
    const op_graph *g = s->p->g;
    for (int d = 0; d < s->nd; d++) {
        int k = R->pl->order_off[d] + s->next_pos[d];
        if (k >= R->pl->order_off[d + 1])
            continue;
        int op = R->pl->order[k];
        for (int j = g->pred_off[op]; j < g->pred_off[op + 1]; j++)
            if (s->finish[g->pred[j]] < 0)
                return op_fail(R->err, OP_EINPUT,
                               "placement order deadlocks: '%s' waits to run '%s', which needs "
                               "'%s' (not run yet: it is later in its device's order)",
                               s->p->c->dev[d].name, g->op_name[op], g->op_name[g->pred[j]]);
    }
    return op_fail(R->err, OP_EINPUT, "placement order leaves ops unrun (each device must list "
                   "exactly its own ops)");
}

static void fill_outputs(run *R)
{
    op_sim *s = R->s;
    op_sim_result *r = R->r;
    for (int i = 0; i < s->n; i++)
        if (s->finish[i] > r->step_time_us)
            r->step_time_us = s->finish[i];
    assert(isfinite(r->step_time_us)); /* opplace/limits.h keeps every sum finite */
    r->n_transfers = s->n_xf;
    for (int d = 0; d < s->nd; d++) {
        r->peak_mem[d] = s->peak[d];
        if (s->peak[d] > s->p->c->dev[d].memory_bytes)
            r->oom = 1;
    }
    op_sim_trace *tr = R->trace;
    if (!tr)
        return;
    memcpy(tr->start_us, s->start, (size_t)s->n * sizeof *s->start);
    memcpy(tr->finish_us, s->finish, (size_t)s->n * sizeof *s->finish);
    memcpy(tr->dev, R->dev, (size_t)s->n * sizeof *R->dev);
    tr->n_transfers = s->n_xf;
    for (int x = 0; x < s->n_xf; x++) {
        const transfer *t = &s->xf[x];
        tr->transfers[x] = (op_sim_transfer){t->src, t->dst_dev, t->chan, t->bytes,
                                             t->issue, t->start, t->end};
    }
}

op_status sim_event_loop(run *R, double t, int resume)
{
    op_sim *s = R->s;
    op_status st;
    for (;;) {
        if (!resume) {
            if (s->n_arrived)
                judge_arrivals(s, t);
            queue_new_transfers(s);
            start_transfers(R, t);
            start_ops(R, t);
        }
        resume = 0;
        if (s->has_share) {
            if (s->n_dirty)
                reschedule_shared(R, t);
            while (s->ev.n > 0 && ev_stale(s, &s->ev.a[0]))
                ev_pop(&s->ev);
        }
        if (s->ev.n == 0 || s->ev.a[0].t > t) {
            if ((st = log_memory(R, t)) || (st = sim_maybe_checkpoint(R, t)))
                return st;
            if (s->ev.n == 0)
                break;
            t = s->ev.a[0].t;
            if (s->cutoff_us > 0 && t >= s->cutoff_us && R->done < s->n) {
                R->cut = 1; /* every op left finishes at or after t */
                return OP_OK;
            }
        }
        while (s->ev.n > 0 && s->ev.a[0].t == t) {
            sim_event e = ev_pop(&s->ev);
            if (s->has_share && ev_stale(s, &e))
                continue;
            if (e.kind == EV_OP_FINISH)
                finish_op(R, e.id, t);
            else if (e.kind == EV_TRANSFER_DONE)
                transfer_done(R, e.id, t);
            else if (e.kind == EV_COMPUTE_BEGIN)
                compute_begins(R, e.id, t);
            /* EV_HOST_DONE: the device is free; start_ops gives it its next op */
        }
    }
    return OP_OK;
}

op_status sim_finish_run(run *R)
{
    R->r->cut_off = R->cut;
    if (R->cut) {
        R->r->step_time_us = INFINITY;
        return OP_OK;
    }
    if (R->done < R->s->n)
        return report_deadlock(R);
    fill_outputs(R);
    return OP_OK;
}

void sim_requeue_ready(run *R)
{
    op_sim *s = R->s;
    for (int i = 0; i < s->n; i++)
        if (s->pending[i] == 0 && s->start[i] < 0)
            make_ready(R, i, s->ready_at[i]);
}

op_status op_sim_run(op_sim *s, const op_placement *pl, op_sim_result *r, op_sim_trace *trace,
                     op_error *err)
{
    run R = {.s = s, .pl = pl, .dev = pl->device_of, .r = r, .trace = trace, .err = err};
    if (trace)
        trace->n_mem = 0;
    op_status st = sim_reset(&R);
    if (!st)
        st = sim_event_loop(&R, 0.0, 0);
    return st ? st : sim_finish_run(&R);
}

double op_sim_overflow_bytes(const op_problem *p, const op_sim_result *r)
{
    double o = 0;
    for (int d = 0; d < p->nd; d++)
        if (r->peak_mem[d] > p->c->dev[d].memory_bytes)
            o += (double)(r->peak_mem[d] - p->c->dev[d].memory_bytes);
    return o;
}

int64_t op_sim_largest_peak(const op_problem *p, const op_sim_result *r)
{
    int64_t m = 0;
    for (int d = 0; d < p->nd; d++)
        if (r->peak_mem[d] > m)
            m = r->peak_mem[d];
    return m;
}

void sim_set_dispatch(op_sim *s, const double *prio, const int64_t *cap)
{
    s->prio = prio;
    s->pick_cap = prio ? cap : NULL;
}

void op_sim_set_cutoff(op_sim *s, double cutoff_us)
{
    s->cutoff_us = cutoff_us > 0 ? cutoff_us : 0;
}

op_status op_simulate(const op_problem *p, const op_placement *pl, op_sim_result *r,
                      op_sim_trace *trace, op_error *err)
{
    op_sim *s = op_sim_new(p, err);
    if (!s)
        return OP_ENOMEM;
    op_status st = op_sim_run(s, pl, r, trace, err);
    op_sim_free(s);
    return st;
}
