/*
 * pesto_ilp_eval.c - the makespan of a fixed placement and order in the
 * Pesto ILP's own model (pesto_ilp.h), so a heuristic's solution can become
 * the ILP's MIP start and its makespan the big-M horizon.
 *
 * With every decision fixed the ILP's schedule is the longest path of a
 * disjunctive graph: ops and per-edge transfer vertices (the augmented DAG
 * of section 3.2.2), plus arcs that chain the ops of each device in their
 * order and the transfers of each channel first come first served (by the
 * source's finish time in finish_hint, then the source index).  Transfers
 * with the same source may overlap (they model the simulator's single
 * transfer per (source op, device)), so the chain joins groups of
 * same-source transfers.  A transfer between ops on one device lasts 0.
 */
#include <stdlib.h>
#include <string.h>

#include "solve/pesto_ilp.h"

typedef struct arc_list {
    int n, cap;
    int *from, *to;
} arc_list;

static int arc_add(arc_list *a, int from, int to)
{
    if (a->n == a->cap) {
        int cap = a->cap ? 2 * a->cap : 256;
        int *f = realloc(a->from, (size_t)cap * sizeof *f);
        if (!f)
            return -1;
        a->from = f;
        int *t = realloc(a->to, (size_t)cap * sizeof *t);
        if (!t)
            return -1;
        a->to = t;
        a->cap = cap;
    }
    a->from[a->n] = from;
    a->to[a->n] = to;
    a->n++;
    return 0;
}

typedef struct xfer_key {
    double t;
    int src, edge;
} xfer_key;

static int by_issue(const void *a, const void *b)
{
    const xfer_key *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return (x->edge > y->edge) - (x->edge < y->edge);
}

/* Chain the transfers of each channel: every transfer after every transfer
 * of the previous same-source group. */
static int channel_arcs(const op_problem *p, const int *dev, const double *hint, arc_list *arcs)
{
    const op_graph *g = p->g;
    int n = p->n, m = g->n_edges;
    xfer_key *keys = malloc((size_t)m * sizeof *keys + 1);
    if (!keys)
        return -1;
    int rc = 0;
    for (int ch = 0; ch < p->c->n_chan && !rc; ch++) {
        int k = 0;
        for (int e = 0; e < m; e++) {
            int a = g->edge_src[e], b = g->edge_dst[e];
            if (dev[a] == dev[b] || op_cluster_chan(p->c, dev[a], dev[b]) != ch)
                continue;
            keys[k++] = (xfer_key){hint ? hint[a] : (double)g->topo_pos[a], a, e};
        }
        qsort(keys, (size_t)k, sizeof *keys, by_issue);
        int prev_lo = 0, prev_hi = 0, cur_lo = 0; /* previous group [prev_lo, prev_hi) */
        for (int i = 0; i < k && !rc; i++) {
            if (i > 0 && keys[i].src != keys[i - 1].src) {
                prev_lo = cur_lo;
                prev_hi = i;
                cur_lo = i;
            }
            for (int j = prev_lo; j < prev_hi && !rc; j++)
                rc = arc_add(arcs, n + keys[j].edge, n + keys[i].edge);
        }
    }
    free(keys);
    return rc;
}

static int build_arcs(const op_problem *p, const op_placement *pl, const double *hint,
                      arc_list *arcs)
{
    const op_graph *g = p->g;
    int n = p->n;
    for (int e = 0; e < g->n_edges; e++)
        if (arc_add(arcs, g->edge_src[e], n + e) || arc_add(arcs, n + e, g->edge_dst[e]))
            return -1;
    for (int d = 0; d < p->nd; d++)
        for (int k = pl->order_off[d] + 1; k < pl->order_off[d + 1]; k++)
            if (arc_add(arcs, pl->order[k - 1], pl->order[k]))
                return -1;
    return channel_arcs(p, pl->device_of, hint, arcs);
}

/* Longest path (node weights dur) over the arcs; -1 on a cycle. */
static double longest_path(int nv, const arc_list *arcs, const double *dur, double *start)
{
    int *indeg = calloc((size_t)nv + 1, sizeof *indeg);
    int *off = calloc((size_t)nv + 2, sizeof *off);
    int *adj = malloc((size_t)arcs->n * sizeof *adj + 1);
    int *queue = malloc((size_t)nv * sizeof *queue + 1);
    double span = -1;
    if (!indeg || !off || !adj || !queue)
        goto done;
    for (int k = 0; k < arcs->n; k++) {
        off[arcs->from[k] + 1]++;
        indeg[arcs->to[k]]++;
    }
    for (int v = 0; v < nv; v++)
        off[v + 1] += off[v];
    int *fill = queue; /* reuse as a cursor array before the queue is needed */
    for (int v = 0; v < nv; v++)
        fill[v] = off[v];
    for (int k = 0; k < arcs->n; k++)
        adj[fill[arcs->from[k]]++] = arcs->to[k];
    int head = 0, tail = 0;
    for (int v = 0; v < nv; v++) {
        start[v] = 0;
        if (indeg[v] == 0)
            queue[tail++] = v;
    }
    span = 0;
    while (head < tail) {
        int v = queue[head++];
        double fin = start[v] + dur[v];
        if (fin > span)
            span = fin;
        for (int k = off[v]; k < off[v + 1]; k++) {
            int w = adj[k];
            if (fin > start[w])
                start[w] = fin;
            if (--indeg[w] == 0)
                queue[tail++] = w;
        }
    }
    if (tail < nv)
        span = -1;
done:
    free(indeg);
    free(off);
    free(adj);
    free(queue);
    return span;
}

double pesto_xfer_us(const op_problem *p, const pesto_ilp_opts *o, int e, int s, int t)
{
    if (s == t)
        return 0;
    if (!o || !o->xfer_count || !o->xfer_bytes)
        return op_cluster_transfer_us(p->c, s, t, p->g->edge_bytes[e]);
    op_link_model m = op_cluster_link_model(p->c, s, t);
    return o->xfer_count[e] * m.latency_us + m.us_per_byte * (double)o->xfer_bytes[e];
}

double pesto_model_makespan(const op_problem *p, const pesto_ilp_opts *o, const op_placement *pl,
                            const double *finish_hint, double *start_op, double *start_xfer,
                            op_error *err)
{
    const op_graph *g = p->g;
    int n = p->n, m = g->n_edges, nv = n + m;
    if (!pl->has_order) {
        op_fail(err, OP_EINTERNAL, "pesto: the model's makespan needs an order");
        return -1;
    }
    double *dur = op_malloc((size_t)nv * sizeof *dur + 1, err);
    double *start = op_malloc((size_t)nv * sizeof *start + 1, err);
    arc_list arcs = {0};
    double span = -1;
    if (!dur || !start)
        goto done;
    for (int i = 0; i < n; i++)
        dur[i] = op_exec_us(p, i, pl->device_of[i]);
    for (int e = 0; e < m; e++) {
        int s = pl->device_of[g->edge_src[e]], t = pl->device_of[g->edge_dst[e]];
        dur[n + e] = pesto_xfer_us(p, o, e, s, t);
    }
    if (build_arcs(p, pl, finish_hint, &arcs)) {
        op_fail(err, OP_ENOMEM, "pesto: out of memory");
        goto done;
    }
    span = longest_path(nv, &arcs, dur, start);
    if (start_op)
        memcpy(start_op, start, (size_t)n * sizeof *start);
    if (start_xfer)
        memcpy(start_xfer, start + n, (size_t)m * sizeof *start);
done:
    free(dur);
    free(start);
    free(arcs.from);
    free(arcs.to);
    return span;
}
