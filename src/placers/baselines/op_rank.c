/*
 * op_rank.c - an order of the ops that does not depend on the graph file's
 * op order, for the ties of the Baechi ports (m-TOPO's BFS, m-ETF's and
 * m-SCT's equal start times).
 *
 * The project's exports write ops in the order PyTorch ran them, and the
 * ports broke ties by that order; the same graph in another op order then
 * gave another placement (m-ETF on ResNet-50 with TensorFlow's colocation:
 * 74.0 ms in the exported order, 80.3 ms shuffled, bench/RESULTS.md,
 * "Baechi ports side by side").  The rank rebuilds a program order from
 * the graph alone: a depth-first topological order (Kahn's algorithm with
 * a stack: the ops an op makes ready are taken next, so a chain is followed
 * as a program runs it), the ops made ready together taken by b-level (the
 * longest path to an exit, fastest times; decreasing or increasing, the
 * caller's choice), then by name (names are unique).  A breadth-first or
 * t-level order breaks the tie between continuing a chain and starting a
 * sibling branch the other way, and m-ETF then moves the chain's next op
 * to another device (test_baselines.c, mini_cnn).  Which sibling goes
 * first matters as much and no one choice wins everywhere (m-ETF with
 * TensorFlow's colocation: longest first 76.5 ms on ResNet-50 and 109.0 on
 * Inception-V3, shortest first 80.3 and 98.9), so m-ETF and m-SCT try both
 * (etf_schedule_checked), and a breadth-first walk (Kahn's algorithm with
 * a queue, Baechi's own flavour, the same sibling keys) when neither fits
 * in memory: it keeps fewer tensors alive on a GNMT whose depth-first
 * schedules overflow (test_torch_examples.py).
 */
#include <stdlib.h>
#include <string.h>

#include "placers/baselines/baselines.h"
#include "placers/baselines/etf_engine.h"

typedef struct rank_keys {
    const op_graph *g;
    const double *blevel;
    int longest_first;
} rank_keys;

typedef struct rank_work {
    int *indeg, *stack, *ready, *tmp;
    int top, head; /* a stack (depth first) or a queue from head (breadth first) */
} rank_work;

/* Taken first: the higher b-level (the lower one when !longest_first),
 * then the smaller name. */
static int rank_cmp(const rank_keys *k, int x, int y)
{
    if (k->blevel[x] != k->blevel[y])
        return (k->blevel[x] > k->blevel[y]) == (k->longest_first != 0) ? -1 : 1;
    return strcmp(k->g->op_name[x], k->g->op_name[y]);
}

/* Stable merge sort of a[0..n) by rank_cmp, tmp of n entries. */
static void rank_sort(const rank_keys *k, int *a, int *tmp, int n)
{
    if (n < 2)
        return;
    int h = n / 2;
    rank_sort(k, a, tmp, h);
    rank_sort(k, a + h, tmp, n - h);
    int i = 0, j = h, o = 0;
    while (i < h || j < n)
        tmp[o++] = (j >= n || (i < h && rank_cmp(k, a[i], a[j]) <= 0)) ? a[i++] : a[j++];
    memcpy(a, tmp, (size_t)n * sizeof *a);
}

/* Sort the nr ready ops and add them so the first one is taken first:
 * pushed in reverse on the stack, or appended to the queue. */
static void push_ready(const rank_keys *k, rank_work *w, int nr, int breadth)
{
    rank_sort(k, w->ready, w->tmp, nr);
    for (int i = 0; i < nr; i++)
        w->stack[w->top++] = w->ready[breadth ? i : nr - 1 - i];
}

static void walk_rank(const op_graph *g, const rank_keys *k, rank_work *w, int breadth, int *rank)
{
    int nr = 0, pos = 0;
    for (int v = 0; v < g->n_ops; v++) {
        w->indeg[v] = g->pred_off[v + 1] - g->pred_off[v];
        if (!w->indeg[v])
            w->ready[nr++] = v;
    }
    push_ready(k, w, nr, breadth);
    while (breadth ? w->head < w->top : w->top > 0) {
        int v = breadth ? w->stack[w->head++] : w->stack[--w->top];
        rank[v] = pos++;
        nr = 0;
        for (int j = g->succ_off[v]; j < g->succ_off[v + 1]; j++)
            if (--w->indeg[g->succ[j]] == 0)
                w->ready[nr++] = g->succ[j];
        push_ready(k, w, nr, breadth);
    }
}

op_status op_rank_order(const op_problem *p, op_rank_walk walk, int *rank, op_error *err)
{
    size_t n = (size_t)p->n;
    double *bl = op_malloc(n * sizeof(double) + 1, err);
    int *buf = op_malloc(4 * n * sizeof(int) + 1, err);
    if (!bl || !buf) {
        free(bl);
        free(buf);
        return OP_ENOMEM;
    }
    etf_static_level(p, bl);
    rank_keys k = {p->g, bl, walk != OP_RANK_SHORTEST_FIRST};
    rank_work w = {buf, buf + n, buf + 2 * n, buf + 3 * n, 0, 0};
    walk_rank(p->g, &k, &w, walk == OP_RANK_BREADTH_FIRST, rank);
    free(bl);
    free(buf);
    return OP_OK;
}

op_status op_rank_edges(const op_graph *g, const int *rank, int *eorder, op_error *err)
{
    int n = g->n_ops;
    int *by_rank = op_malloc((size_t)n * sizeof(int) + 1, err);
    int *start = op_calloc((size_t)n + 1, sizeof(int), err);
    if (!by_rank || !start) {
        free(by_rank);
        free(start);
        return OP_ENOMEM;
    }
    for (int v = 0; v < n; v++) {
        by_rank[rank[v]] = v;
        start[rank[v] + 1] = g->succ_off[v + 1] - g->succ_off[v];
    }
    for (int i = 0; i < n; i++) /* the first slot of each source's edges */
        start[i + 1] += start[i];
    /* walking the destinations in rank order fills each source's slots in
     * destination rank order */
    for (int i = 0; i < n; i++) {
        int v = by_rank[i];
        for (int k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
            eorder[start[rank[g->pred[k]]]++] = g->pred_edge[k];
    }
    free(by_rank);
    free(start);
    return OP_OK;
}
