/*
 * checkpoint.c - incremental evaluation: re-simulating a placement that
 * differs from a recorded one in a few ops, faster than a full run, with
 * exactly the same answer.
 *
 * op_sim_record runs the base placement once and keeps up to K snapshots of
 * the whole simulator state, each taken after a time step is complete.
 * Moving ops M to other devices cannot change anything before
 *     t0 = min over v in M of (finish of v's earliest-finishing predecessor,
 *                             or 0 for a source op),
 * because until then no input of v has been produced, so v is not ready,
 * no transfer to or from v exists, and every other op sees the same queues.
 * The only state that depends on M's devices before t0 is the resident
 * param_bytes, a constant shift of each device's memory level (and so of
 * its peak so far).  op_sim_run_changed therefore restores the latest
 * snapshot taken before t0, moves M's param_bytes, rebuilds the ready
 * queues for the new placement and runs the event loop to the end.
 * Only FIFO placements (no per-device order) are evaluated incrementally;
 * anything else falls back to a full run.
 */
#include <stdlib.h>
#include <string.h>

#include "sim/sim_internal.h"

typedef struct snapshot {
    double t;
    int done, n_xf, n_ev;
    int *pending, *out_refs, *xfer_of_edge, *chan_head, *chan_tail, *chan_busy, *running;
    double *ready_at, *start, *finish, *busy_us, *chan_busy_us;
    int64_t *mem, *peak, *chan_bytes, comm_bytes;
    transfer *xf;
    sim_event *ev;
} snapshot;

struct sim_checkpoints {
    int cap, n, recording, stride, next_at_done;
    snapshot *snap;
    int *base_dev;      /* the recorded placement */
    double *base_finish;
};

static void snapshot_free(snapshot *x)
{
    free(x->pending); free(x->out_refs); free(x->xfer_of_edge);
    free(x->chan_head); free(x->chan_tail); free(x->chan_busy); free(x->running);
    free(x->ready_at); free(x->start); free(x->finish); free(x->busy_us); free(x->chan_busy_us);
    free(x->mem); free(x->peak); free(x->chan_bytes); free(x->xf); free(x->ev);
}

void sim_checkpoints_free(struct sim_checkpoints *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++)
        snapshot_free(&c->snap[i]);
    free(c->snap);
    free(c->base_dev);
    free(c->base_finish);
    free(c);
}

static void *dup_array(const void *src, size_t bytes, int *ok)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        *ok = 0;
    else if (bytes)
        memcpy(p, src, bytes);
    return p;
}

#define DUP(field, count) x->field = dup_array(from->field, (size_t)(count) * sizeof *from->field, &ok)

static op_status take_snapshot(run *R, double t, snapshot *x)
{
    op_sim *s = R->s, *from = s;
    int ok = 1, n = s->n, m = s->p->g->n_edges, nd = s->nd, nc = s->n_chan;
    memset(x, 0, sizeof *x);
    x->t = t;
    x->done = R->done;
    x->n_xf = s->n_xf;
    x->n_ev = s->ev.n;
    DUP(pending, n); DUP(out_refs, n); DUP(ready_at, n); DUP(start, n); DUP(finish, n);
    DUP(xfer_of_edge, m); DUP(xf, s->n_xf);
    DUP(chan_head, nc); DUP(chan_tail, nc); DUP(chan_busy, nc);
    DUP(running, nd); DUP(mem, nd); DUP(peak, nd);
    x->ev = dup_array(s->ev.a, (size_t)s->ev.n * sizeof *s->ev.a, &ok);
    x->busy_us = dup_array(R->r->busy_us, (size_t)nd * sizeof(double), &ok);
    x->chan_busy_us = dup_array(R->r->chan_busy_us, (size_t)nc * sizeof(double), &ok);
    x->chan_bytes = dup_array(R->r->chan_bytes, (size_t)nc * sizeof(int64_t), &ok);
    x->comm_bytes = R->r->comm_bytes;
    if (!ok) {
        snapshot_free(x);
        return op_fail(R->err, OP_ENOMEM, "out of memory taking a simulator checkpoint");
    }
    return OP_OK;
}
#undef DUP

op_status sim_maybe_checkpoint(run *R, double t)
{
    struct sim_checkpoints *c = R->s->ckpt;
    if (!c || !c->recording || R->done < c->next_at_done || c->n >= c->cap)
        return OP_OK;
    c->next_at_done = R->done + c->stride;
    op_status st = take_snapshot(R, t, &c->snap[c->n]);
    if (!st)
        c->n++;
    return st;
}

op_status op_sim_record(op_sim *s, const op_placement *base, int max_checkpoints,
                        op_sim_result *r, op_error *err)
{
    sim_checkpoints_free(s->ckpt);
    s->ckpt = NULL;
    /* shared compute and transfer host costs keep per-device state the
     * snapshots do not hold: such runs are always simulated in full */
    if (base->has_order || max_checkpoints < 1 || s->has_share || s->has_host)
        return op_sim_run(s, base, r, NULL, err);
    struct sim_checkpoints *c = op_calloc(1, sizeof *c, err);
    if (!c)
        return OP_ENOMEM;
    c->cap = max_checkpoints;
    c->snap = op_calloc((size_t)c->cap, sizeof *c->snap, err);
    c->base_dev = op_malloc((size_t)s->n * sizeof(int), err);
    c->base_finish = op_malloc((size_t)s->n * sizeof(double), err);
    if (!c->snap || !c->base_dev || !c->base_finish) {
        sim_checkpoints_free(c);
        return OP_ENOMEM;
    }
    memcpy(c->base_dev, base->device_of, (size_t)s->n * sizeof(int));
    c->stride = s->n / (c->cap + 1) > 0 ? s->n / (c->cap + 1) : 1;
    c->next_at_done = c->stride;
    c->recording = 1;
    s->ckpt = c;
    double cutoff = s->cutoff_us; /* the base run must go to the end */
    s->cutoff_us = 0;
    op_status st = op_sim_run(s, base, r, NULL, err);
    s->cutoff_us = cutoff;
    c->recording = 0;
    if (st) {
        sim_checkpoints_free(c);
        s->ckpt = NULL;
        return st;
    }
    memcpy(c->base_finish, s->finish, (size_t)s->n * sizeof(double));
    return OP_OK;
}

/* Earliest time a changed op can influence the run; +inf if none changed. */
static double first_affected_time(const op_sim *s, const int *dev, int *n_changed)
{
    const struct sim_checkpoints *c = s->ckpt;
    const op_graph *g = s->p->g;
    double t0 = INFINITY;
    *n_changed = 0;
    for (int v = 0; v < s->n; v++) {
        if (dev[v] == c->base_dev[v])
            continue;
        (*n_changed)++;
        if (g->pred_off[v] == g->pred_off[v + 1])
            return 0.0;
        for (int k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
            if (c->base_finish[g->pred[k]] < t0)
                t0 = c->base_finish[g->pred[k]];
    }
    return t0;
}

#define RESTORE(field, count) memcpy(s->field, x->field, (size_t)(count) * sizeof *s->field)

static void restore(run *R, const snapshot *x)
{
    op_sim *s = R->s;
    int n = s->n, m = s->p->g->n_edges, nd = s->nd, nc = s->n_chan;
    RESTORE(pending, n); RESTORE(out_refs, n); RESTORE(ready_at, n); RESTORE(start, n);
    RESTORE(finish, n); RESTORE(xfer_of_edge, m); RESTORE(xf, x->n_xf);
    RESTORE(chan_head, nc); RESTORE(chan_tail, nc); RESTORE(chan_busy, nc);
    RESTORE(running, nd); RESTORE(mem, nd); RESTORE(peak, nd);
    memcpy(s->ev.a, x->ev, (size_t)x->n_ev * sizeof *x->ev);
    s->ev.n = x->n_ev;
    s->n_xf = x->n_xf;
    s->n_new = 0;
    R->done = x->done;
    memcpy(R->r->busy_us, x->busy_us, (size_t)nd * sizeof(double));
    memcpy(R->r->chan_busy_us, x->chan_busy_us, (size_t)nc * sizeof(double));
    memcpy(R->r->chan_bytes, x->chan_bytes, (size_t)nc * sizeof(int64_t));
    R->r->comm_bytes = x->comm_bytes;
    /* moved ops' parameters are resident on their new device from time 0 */
    const int *base = s->ckpt->base_dev;
    for (int v = 0; v < n; v++) {
        int64_t pb = s->p->g->param_bytes[v];
        if (R->dev[v] == base[v] || pb == 0)
            continue;
        s->mem[base[v]] -= pb;
        s->peak[base[v]] -= pb;
        s->mem[R->dev[v]] += pb;
        s->peak[R->dev[v]] += pb;
    }
    sim_rq_clear(s);
    sim_requeue_ready(R);
}
#undef RESTORE

op_status op_sim_run_changed(op_sim *s, const op_placement *pl, op_sim_result *r,
                             op_error *err)
{
    if (!s->ckpt || pl->has_order || pl->n_ops != s->n)
        return op_sim_run(s, pl, r, NULL, err);
    int n_changed;
    double t0 = first_affected_time(s, pl->device_of, &n_changed);
    const snapshot *best = NULL;
    for (int i = 0; i < s->ckpt->n; i++)
        if (s->ckpt->snap[i].t < t0)
            best = &s->ckpt->snap[i];
    if (!best)
        return op_sim_run(s, pl, r, NULL, err);
    run R = {.s = s, .pl = pl, .dev = pl->device_of, .r = r, .err = err};
    op_status st = sim_reset(&R);
    if (st)
        return st;
    restore(&R, best);
    st = sim_event_loop(&R, best->t, 1);
    return st ? st : sim_finish_run(&R);
}
