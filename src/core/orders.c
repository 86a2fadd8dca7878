/*
 * orders.c - tlevel/blevel/cpath and the DFS-TOPO and CPD-TOPO orders
 * (Celeritas sections 4.2.2 and 5.1.3; see core/orders.h).
 *
 * The paper's queue only ever takes from and adds to its head, so it is a
 * stack: the initial ready ops are pushed lowest priority first, and each
 * emitted op's newly ready children are pushed in increasing priority, which
 * leaves the highest-priority child on top.  Priorities: a larger key first,
 * equal keys by the smaller op index (DFS-TOPO uses no key, so index only).
 */
#include <stdlib.h>
#include <string.h>

#include "core/orders.h"
#include "core/stats.h"

void op_levels_destroy(op_levels *l)
{
    free(l->w);
    free(l->c);
    free(l->tlevel);
    free(l->blevel);
    free(l->cpath);
    memset(l, 0, sizeof *l);
}

void op_levels_compute(const op_graph *g, op_levels *l)
{
    for (int t = 0; t < g->n_ops; t++) {
        int v = g->topo[t];
        double best = 0;
        for (int j = g->pred_off[v]; j < g->pred_off[v + 1]; j++) {
            int u = g->pred[j];
            double x = l->tlevel[u] + l->w[u] + l->c[g->pred_edge[j]];
            if (x > best)
                best = x;
        }
        l->tlevel[v] = best;
    }
    for (int t = g->n_ops - 1; t >= 0; t--) {
        int v = g->topo[t];
        double best = 0;
        for (int j = g->succ_off[v]; j < g->succ_off[v + 1]; j++) {
            double x = l->c[g->succ_edge[j]] + l->blevel[g->succ[j]];
            if (x > best)
                best = x;
        }
        l->blevel[v] = l->w[v] + best;
        l->cpath[v] = l->tlevel[v] + l->blevel[v];
    }
}

op_status op_levels_alloc(op_levels *l, const op_graph *g, op_error *err)
{
    memset(l, 0, sizeof *l);
    size_t n = (size_t)g->n_ops, m = (size_t)g->n_edges;
    l->n = g->n_ops;
    l->w = op_malloc((n + 1) * sizeof *l->w, err);
    l->c = op_malloc((m + 1) * sizeof *l->c, err);
    l->tlevel = op_malloc((n + 1) * sizeof *l->tlevel, err);
    l->blevel = op_malloc((n + 1) * sizeof *l->blevel, err);
    l->cpath = op_malloc((n + 1) * sizeof *l->cpath, err);
    if (!l->w || !l->c || !l->tlevel || !l->blevel || !l->cpath) {
        op_levels_destroy(l);
        return OP_ENOMEM;
    }
    return OP_OK;
}

op_status op_levels_init_costs(op_levels *l, const op_graph *g, const double *w, const double *c,
                               op_error *err)
{
    op_status st = op_levels_alloc(l, g, err);
    if (st)
        return st;
    size_t n = (size_t)g->n_ops, m = (size_t)g->n_edges;
    if (n)
        memcpy(l->w, w, n * sizeof *w);
    if (m)
        memcpy(l->c, c, m * sizeof *c);
    op_levels_compute(g, l);
    return OP_OK;
}

op_status op_levels_init(op_levels *l, const op_problem *p, op_error *err)
{
    const op_graph *g = p->g;
    op_graph_stats s;
    op_graph_stats_compute(p, &s);
    double *c = op_malloc(((size_t)g->n_edges + 1) * sizeof *c, err);
    if (!c)
        return OP_ENOMEM;
    for (int e = 0; e < g->n_edges; e++)
        c[e] = s.ref_latency_us + s.ref_us_per_byte * (double)g->edge_bytes[e];
    op_status st = op_levels_init_costs(l, g, p->work, c, err);
    free(c);
    return st;
}

/* a has priority over b: larger key, then smaller index */
static int before(const double *key, int a, int b)
{
    double ka = key ? key[a] : 0, kb = key ? key[b] : 0;
    if (ka != kb)
        return ka > kb;
    return a < b;
}

/* Sort v[0..n) by increasing priority (stable merge sort, tmp of n ints). */
static void sort_increasing(int *v, int n, const double *key, int *tmp)
{
    if (n < 2)
        return;
    if (n <= 16) {
        for (int i = 1; i < n; i++) {
            int x = v[i], j = i;
            while (j > 0 && before(key, v[j - 1], x)) {
                v[j] = v[j - 1];
                j--;
            }
            v[j] = x;
        }
        return;
    }
    int h = n / 2;
    sort_increasing(v, h, key, tmp);
    sort_increasing(v + h, n - h, key, tmp);
    int i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = before(key, v[i], v[j]) ? v[j++] : v[i++];
    while (i < h)
        tmp[k++] = v[i++];
    while (j < n)
        tmp[k++] = v[j++];
    memcpy(v, tmp, (size_t)n * sizeof *v);
}

static op_status head_queue_order(const op_graph *g, const double *key, int *seq, int *pos,
                                  op_error *err)
{
    int n = g->n_ops;
    int *indeg = op_malloc(((size_t)n + 1) * sizeof *indeg, err);
    int *stack = op_malloc(((size_t)n + 1) * sizeof *stack, err);
    int *buf = op_malloc(((size_t)n + 1) * sizeof *buf, err);
    int *tmp = op_malloc(((size_t)n + 1) * sizeof *tmp, err);
    if (!indeg || !stack || !buf || !tmp) {
        free(indeg);
        free(stack);
        free(buf);
        free(tmp);
        return OP_ENOMEM;
    }
    int top = 0, out = 0;
    for (int v = 0; v < n; v++) {
        indeg[v] = g->pred_off[v + 1] - g->pred_off[v];
        if (indeg[v] == 0)
            stack[top++] = v;
    }
    sort_increasing(stack, top, key, tmp);
    while (top > 0) {
        int v = stack[--top];
        if (pos)
            pos[v] = out;
        seq[out++] = v;
        int nb = 0;
        for (int j = g->succ_off[v]; j < g->succ_off[v + 1]; j++)
            if (--indeg[g->succ[j]] == 0)
                buf[nb++] = g->succ[j];
        sort_increasing(buf, nb, key, tmp);
        for (int k = 0; k < nb; k++)
            stack[top++] = buf[k];
    }
    free(indeg);
    free(stack);
    free(buf);
    free(tmp);
    if (out != n) /* finished graphs are acyclic, so this is a bug */
        return op_fail(err, OP_EINTERNAL, "topological order covered %d of %d ops", out, n);
    return OP_OK;
}

op_status op_order_dfs_topo(const op_graph *g, int *seq, int *pos, op_error *err)
{
    return head_queue_order(g, NULL, seq, pos, err);
}

op_status op_order_cpd_topo(const op_graph *g, const double *cpath, int *seq, int *pos,
                            op_error *err)
{
    return head_queue_order(g, cpath, seq, pos, err);
}

int op_order_is_topological(const op_graph *g, const int *seq)
{
    int n = g->n_ops, ok = 1;
    int *pos = malloc(((size_t)n + 1) * sizeof *pos);
    if (!pos)
        return 0;
    for (int v = 0; v < n; v++)
        pos[v] = -1;
    for (int k = 0; k < n && ok; k++) {
        if (seq[k] < 0 || seq[k] >= n || pos[seq[k]] >= 0)
            ok = 0;
        else
            pos[seq[k]] = k;
    }
    for (int e = 0; e < g->n_edges && ok; e++)
        if (pos[g->edge_src[e]] >= pos[g->edge_dst[e]])
            ok = 0;
    free(pos);
    return ok;
}
