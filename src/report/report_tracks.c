/*
 * report_tracks.c - a simulation trace cut into timeline tracks: one per
 * device (its ops) and one per channel that carried a transfer (Pesto,
 * Figure 5), each sorted by start time.  The simulator runs one op at a time
 * per device and one transfer at a time per channel, so within a track the
 * items never overlap and their ends are sorted too, which lets the page
 * find the visible items by binary search.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/sort.h"
#include "report/report_util.h"

static int by_start(const void *a, const void *b, const void *ctx)
{
    const double *start = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (start[x] != start[y])
        return start[x] < start[y] ? -1 : 1;
    return (x > y) - (x < y);
}

static op_status check_trace(const op_problem *p, const op_sim_trace *t, op_error *err)
{
    if (t->n_ops != p->n)
        return op_fail(err, OP_EINPUT, "report: the trace has %d ops, the graph %d", t->n_ops,
                       p->n);
    for (int i = 0; i < t->n_ops; i++)
        if (t->dev[i] < 0 || t->dev[i] >= p->nd)
            return op_fail(err, OP_EINPUT, "report: op %d ran on no device of the cluster", i);
    for (int x = 0; x < t->n_transfers; x++)
        if (t->transfers[x].chan < 0 || t->transfers[x].chan >= p->c->n_chan ||
            t->transfers[x].src_op < 0 || t->transfers[x].src_op >= p->n ||
            t->transfers[x].dst_dev < 0 || t->transfers[x].dst_dev >= p->nd)
            return op_fail(err, OP_EINPUT, "report: transfer %d does not fit the cluster", x);
    for (int k = 0; k < t->n_mem; k++)
        if (t->mem[k].dev < 0 || t->mem[k].dev >= p->nd)
            return op_fail(err, OP_EINPUT, "report: memory point %d names no device", k);
    return OP_OK;
}

op_status rp_tracks_build(rp_tracks *tr, const op_problem *p, const op_sim_trace *t,
                          op_error *err)
{
    memset(tr, 0, sizeof *tr);
    op_status st = check_trace(p, t, err);
    if (st)
        return st;
    int nd = p->nd, nc = p->c->n_chan, n = t->n_ops, nx = t->n_transfers;
    int *chan_slot = op_malloc(((size_t)nc + 1) * sizeof *chan_slot, err);
    double *xstart = op_malloc(((size_t)nx + 1) * sizeof *xstart, err);
    tr->dev_off = op_calloc((size_t)nd + 2, sizeof *tr->dev_off, err);
    tr->dev_ops = op_malloc(((size_t)n + 1) * sizeof *tr->dev_ops, err);
    tr->chan = op_malloc(((size_t)nc + 1) * sizeof *tr->chan, err);
    tr->chan_off = op_calloc((size_t)nc + 2, sizeof *tr->chan_off, err);
    tr->chan_xfers = op_malloc(((size_t)nx + 1) * sizeof *tr->chan_xfers, err);
    if (!chan_slot || !xstart || !tr->dev_off || !tr->dev_ops || !tr->chan || !tr->chan_off ||
        !tr->chan_xfers) {
        free(chan_slot);
        free(xstart);
        rp_tracks_destroy(tr);
        return OP_ENOMEM;
    }
    tr->n_dev = nd;
    /* devices: counting sort, then by start */
    for (int i = 0; i < n; i++)
        tr->dev_off[t->dev[i] + 1]++;
    for (int d = 0; d < nd; d++)
        tr->dev_off[d + 1] += tr->dev_off[d];
    int *cursor = op_malloc(((size_t)(nd > nc ? nd : nc) + 1) * sizeof *cursor, err);
    if (!cursor) {
        free(chan_slot);
        free(xstart);
        rp_tracks_destroy(tr);
        return OP_ENOMEM;
    }
    memcpy(cursor, tr->dev_off, (size_t)nd * sizeof *cursor);
    for (int i = 0; i < n; i++)
        tr->dev_ops[cursor[t->dev[i]]++] = i;
    for (int d = 0; d < nd; d++)
        op_sort(tr->dev_ops + tr->dev_off[d], (size_t)(tr->dev_off[d + 1] - tr->dev_off[d]),
                sizeof *tr->dev_ops, by_start, t->start_us);
    /* channels that carried something */
    for (int c = 0; c < nc; c++)
        chan_slot[c] = -1;
    for (int x = 0; x < nx; x++)
        chan_slot[t->transfers[x].chan] = 0;
    for (int c = 0; c < nc; c++)
        if (chan_slot[c] == 0) {
            chan_slot[c] = tr->n_chan;
            tr->chan[tr->n_chan++] = c;
        }
    for (int x = 0; x < nx; x++) {
        tr->chan_off[chan_slot[t->transfers[x].chan] + 1]++;
        xstart[x] = t->transfers[x].start_us;
    }
    for (int s = 0; s < tr->n_chan; s++)
        tr->chan_off[s + 1] += tr->chan_off[s];
    for (int s = 0; s < tr->n_chan; s++)
        cursor[s] = tr->chan_off[s];
    for (int x = 0; x < nx; x++)
        tr->chan_xfers[cursor[chan_slot[t->transfers[x].chan]]++] = x;
    free(cursor);
    for (int s = 0; s < tr->n_chan; s++)
        op_sort(tr->chan_xfers + tr->chan_off[s], (size_t)(tr->chan_off[s + 1] - tr->chan_off[s]),
                sizeof *tr->chan_xfers, by_start, xstart);
    double end = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(t->finish_us[i]) && t->finish_us[i] > end)
            end = t->finish_us[i];
    for (int x = 0; x < nx; x++)
        if (isfinite(t->transfers[x].end_us) && t->transfers[x].end_us > end)
            end = t->transfers[x].end_us;
    tr->end_us = end > 0 ? end : 1;
    free(chan_slot);
    free(xstart);
    return OP_OK;
}

void rp_tracks_destroy(rp_tracks *tr)
{
    free(tr->chan);
    free(tr->dev_off);
    free(tr->dev_ops);
    free(tr->chan_off);
    free(tr->chan_xfers);
    memset(tr, 0, sizeof *tr);
}
