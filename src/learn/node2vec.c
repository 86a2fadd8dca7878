/*
 * node2vec.c - Node2vec (Grover and Leskovec, KDD 2016) over the undirected
 * view of an op graph: biased second-order random walks, then skip-gram
 * with negative sampling (Mikolov et al., 2013) trained by SGD.  Trinity
 * (the Trinity paper, section 4.1.1) uses the vectors as each op's
 * "structure" feature.  learn/node2vec.h states the method.
 *
 * Assumptions and differences from the reference implementation:
 *   - the transition weights are computed on the fly at each step instead
 *     of precomputed alias tables: no O(E * deg) set-up and no memory
 *     blow-up on ops with thousands of neighbours.  With p = q = 1 every
 *     weight is 1 and a step is one uniform draw; otherwise an op of at most
 *     SCAN_MAX neighbours scans them (a binary search in the previous op's
 *     sorted list each), and a larger one draws a neighbour uniformly and
 *     keeps it with probability weight / largest weight (rejection: the
 *     same distribution in max(1/p, 1, 1/q) / min(1/p, 1, 1/q) draws at
 *     most, on average), so that a step from a hub of 10^5 inputs does not
 *     scan them all;
 *   - the graph is unweighted (edge bytes are not used);
 *   - one thread, so a seed fixes the result exactly.
 */
#include "learn/node2vec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"
#include "opplace/run_ctx.h"

node2vec_config node2vec_defaults(void)
{
    return (node2vec_config){.dim = 16, .walks = 4, .length = 20, .window = 4,
                             .negatives = 4, .epochs = 1, .p = 1.0, .q = 1.0,
                             .lr = 0.025, .seed = 1};
}

/* Undirected adjacency: CSR, each list sorted and free of duplicates. */
typedef struct adjacency {
    int n;
    int *off, *nbr;
} adjacency;

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static op_status adjacency_build(adjacency *a, const op_graph *g, op_error *err)
{
    int n = g->n_ops;
    a->n = n;
    a->off = op_calloc((size_t)n + 1, sizeof(int), err);
    a->nbr = op_malloc(sizeof(int) * (2 * (size_t)g->n_edges + 1), err);
    if (!a->off || !a->nbr)
        return OP_ENOMEM;
    int k = 0;
    for (int v = 0; v < n; v++) {
        int start = k;
        for (int e = g->succ_off[v]; e < g->succ_off[v + 1]; e++)
            a->nbr[k++] = g->succ[e];
        for (int e = g->pred_off[v]; e < g->pred_off[v + 1]; e++)
            a->nbr[k++] = g->pred[e];
        qsort(a->nbr + start, (size_t)(k - start), sizeof(int), cmp_int);
        int w = start;
        for (int i = start; i < k; i++)
            if (a->nbr[i] != v && (w == start || a->nbr[w - 1] != a->nbr[i]))
                a->nbr[w++] = a->nbr[i];
        k = w;
        a->off[v + 1] = k;
    }
    return OP_OK;
}

static void adjacency_free(adjacency *a)
{
    free(a->off);
    free(a->nbr);
}

static int adjacent(const adjacency *a, int u, int x)
{
    int lo = a->off[u], hi = a->off[u + 1] - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (a->nbr[mid] == x)
            return 1;
        if (a->nbr[mid] < x)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return 0;
}

/* Out of time: c's deadline has passed, or Ctrl-C came. */
static int past_deadline(const node2vec_config *c)
{
    return (c->deadline > 0 && op_seconds_now() > c->deadline) || op_interrupted();
}

/* Ops with more neighbours than this draw a step by rejection, not a scan
 * (the scan's draws are kept where it is cheap: the same walks as before on
 * every graph whose ops have at most this many neighbours). */
#define SCAN_MAX 256

/* The weight of the step prev -> v -> x (node2vec's alpha). */
static double step_weight(const adjacency *a, int prev, int x, double inv_p, double inv_q)
{
    return x == prev ? inv_p : adjacent(a, prev, x) ? 1.0 : inv_q;
}

/* The next op of a walk that came from prev (-1 at the start) to v. */
static int walk_step(const adjacency *a, int prev, int v, double inv_p, double inv_q,
                     nn_rng *rng)
{
    int lo = a->off[v], deg = a->off[v + 1] - lo;
    if (deg == 0)
        return -1;
    if (prev < 0)
        return a->nbr[lo + (int)nn_rng_below(rng, (uint64_t)deg)];
    if (inv_p == 1.0 && inv_q == 1.0) {
        /* every weight 1: the scan below with total = deg, in O(1) (its
         * subtractions of 1.0 are exact, so it picks floor(u * deg)) */
        int i = (int)(nn_rng_uniform(rng) * deg);
        return a->nbr[lo + (i < deg ? i : deg - 1)];
    }
    if (deg > SCAN_MAX) {
        double top = fmax(fmax(inv_p, 1.0), inv_q);
        for (;;) {
            int x = a->nbr[lo + (int)nn_rng_below(rng, (uint64_t)deg)];
            if (nn_rng_uniform(rng) * top < step_weight(a, prev, x, inv_p, inv_q))
                return x;
        }
    }
    double total = 0.0;
    for (int i = 0; i < deg; i++)
        total += step_weight(a, prev, a->nbr[lo + i], inv_p, inv_q);
    double r = nn_rng_uniform(rng) * total;
    for (int i = 0; i < deg; i++) {
        int x = a->nbr[lo + i];
        r -= step_weight(a, prev, x, inv_p, inv_q);
        if (r < 0.0)
            return x;
    }
    return a->nbr[lo + deg - 1];
}

/* walks[w * length + s]; a walk stuck at an isolated op ends early (-1).
 * 0, or 1 when stopped by Ctrl-C or the deadline (c->deadline). */
static int generate_walks(const adjacency *a, const node2vec_config *c, int *walks, nn_rng *rng)
{
    double inv_p = 1.0 / c->p, inv_q = 1.0 / c->q;
    size_t w = 0;
    for (int r = 0; r < c->walks; r++)
        for (int start = 0; start < a->n; start++, w++) {
            if ((w & 255) == 0 && past_deadline(c))
                return 1;
            int *walk = walks + w * (size_t)c->length;
            walk[0] = start;
            int prev = -1;
            for (int s = 1; s < c->length; s++) {
                int next = walk[s - 1] < 0 ? -1 : walk_step(a, prev, walk[s - 1], inv_p, inv_q, rng);
                prev = walk[s - 1];
                walk[s] = next;
            }
        }
    return 0;
}

/* Unigram^0.75 table of the walks' op frequencies (word2vec's sampler). */
static int *negative_table(const int *walks, size_t tokens, int n, size_t *size, op_error *err)
{
    double *count = op_calloc((size_t)n, sizeof(double), err);
    size_t cap = (size_t)n * 20 < 1000000 ? (size_t)n * 20 + 1 : 1000000;
    int *table = op_malloc(sizeof(int) * cap, err);
    if (!count || !table) {
        free(count);
        free(table);
        return NULL;
    }
    for (size_t i = 0; i < tokens; i++)
        if (walks[i] >= 0)
            count[walks[i]] += 1.0;
    double total = 0.0;
    for (int v = 0; v < n; v++)
        total += count[v] = pow(count[v], 0.75);
    int v = 0;
    double acc = n > 0 ? count[0] / total : 0.0;
    for (size_t i = 0; i < cap; i++) {
        table[i] = v;
        if ((double)(i + 1) / (double)cap > acc && v < n - 1)
            acc += count[++v] / total;
    }
    free(count);
    *size = cap;
    return table;
}

static double sigmoid(double x)
{
    if (x > 30.0)
        return 1.0;
    if (x < -30.0)
        return 0.0;
    return 1.0 / (1.0 + exp(-x));
}

/* One SGNS update for (centre, context): label 1 for context, 0 for the
 * negatives; the gradient for the centre's vector is gathered in work. */
static void sgns_pair(double *emb, double *ctx, int dim, int centre, int context,
                      const int *table, size_t tsize, int negatives, double lr, double *work,
                      nn_rng *rng)
{
    double *u = emb + (size_t)centre * (size_t)dim;
    memset(work, 0, sizeof(double) * (size_t)dim);
    for (int s = 0; s <= negatives; s++) {
        int target = context;
        double label = 1.0;
        if (s > 0) {
            target = table[nn_rng_below(rng, (uint64_t)tsize)];
            if (target == context)
                continue;
            label = 0.0;
        }
        double *c = ctx + (size_t)target * (size_t)dim, dot = 0.0;
        for (int j = 0; j < dim; j++)
            dot += u[j] * c[j];
        double gr = (label - sigmoid(dot)) * lr;
        for (int j = 0; j < dim; j++) {
            work[j] += gr * c[j];
            c[j] += gr * u[j];
        }
    }
    for (int j = 0; j < dim; j++)
        u[j] += work[j];
}

/* 1 when stopped early (c's deadline or Ctrl-C): the vectors as trained so far. */
static int skipgram(const node2vec_config *c, const int *walks, size_t n_walks, int n,
                    const int *table, size_t tsize, double *emb, double *ctx, double *work,
                    nn_rng *rng)
{
    double total = (double)c->epochs * (double)n_walks, done = 0.0;
    for (int e = 0; e < c->epochs; e++)
        for (size_t w = 0; w < n_walks; w++, done += 1.0) {
            if ((w & 255) == 0 && past_deadline(c))
                return 1;
            double lr = c->lr * fmax(1e-4, 1.0 - done / total);
            const int *walk = walks + w * (size_t)c->length;
            for (int i = 0; i < c->length && walk[i] >= 0; i++)
                for (int j = i - c->window; j <= i + c->window; j++) {
                    if (j < 0 || j == i || j >= c->length || walk[j] < 0)
                        continue;
                    sgns_pair(emb, ctx, c->dim, walk[i], walk[j], table, tsize, c->negatives,
                              lr, work, rng);
                }
        }
    (void)n;
    return 0;
}

static op_status check_config(const node2vec_config *c, op_error *err)
{
    if (c->dim < 1 || c->walks < 1 || c->length < 2 || c->window < 1 || c->negatives < 0 ||
        c->epochs < 1 || !(c->p > 0) || !(c->q > 0) || !(c->lr > 0))
        return op_fail(err, OP_EUSAGE, "node2vec: dim, walks, window, epochs >= 1, length "
                                       ">= 2, negatives >= 0, p, q, lr > 0");
    return OP_OK;
}

op_status node2vec_walks(const op_graph *g, const node2vec_config *c, int *walks, int *stopped,
                         op_error *err)
{
    op_status st = check_config(c, err);
    *stopped = 0;
    if (st || g->n_ops == 0)
        return st;
    nn_rng rng;
    nn_rng_seed(&rng, c->seed);
    adjacency a = {0};
    if (!(st = adjacency_build(&a, g, err)))
        *stopped = generate_walks(&a, c, walks, &rng);
    adjacency_free(&a);
    return st;
}

op_status node2vec_embed(const op_graph *g, const node2vec_config *c, double *emb,
                         op_error *err)
{
    op_status st = check_config(c, err);
    int n = g->n_ops;
    if (st || n == 0)
        return st;
    nn_rng rng;
    nn_rng_seed(&rng, c->seed);
    for (size_t i = 0; i < (size_t)n * (size_t)c->dim; i++)
        emb[i] = (nn_rng_uniform(&rng) - 0.5) / c->dim;
    adjacency a = {0};
    size_t n_walks = (size_t)n * (size_t)c->walks, tsize = 0;
    int *walks = NULL, *table = NULL;
    double *ctx = NULL, *work = NULL;
    st = adjacency_build(&a, g, err);
    if (!st && (!(walks = op_malloc(sizeof(int) * n_walks * (size_t)c->length, err)) ||
                !(ctx = op_calloc((size_t)n * (size_t)c->dim, sizeof(double), err)) ||
                !(work = op_calloc((size_t)c->dim, sizeof(double), err))))
        st = OP_ENOMEM;
    /* past the deadline: the vectors as trained so far (the initial ones
     * when the walks were not done); Ctrl-C: an error, so the caller stops */
    int stopped = !st && generate_walks(&a, c, walks, &rng);
    if (!st && !stopped &&
        !(table = negative_table(walks, n_walks * (size_t)c->length, n, &tsize, err)))
        st = OP_ENOMEM;
    if (!st && !stopped)
        stopped = skipgram(c, walks, n_walks, n, table, tsize, emb, ctx, work, &rng);
    if (!st && stopped && op_interrupted())
        st = op_fail(err, OP_EINTERNAL, "node2vec: stopped at Ctrl-C");
    adjacency_free(&a);
    free(walks);
    free(table);
    free(ctx);
    free(work);
    return st;
}
