/*
 * features.c - what SGDP's policy sees of a placement problem (the SGDP
 * paper, "Graph Embedding Network": nodes are "the concatenation of
 * their meta features (e.g., operation type, output shape, adjacent node
 * ids)").
 *
 * Per op, in topological order (row t = op g->topo[t]), SGDP_N_FEATURES
 * numbers, each normalised per graph so that graphs of any size and time
 * scale look alike to the network:
 *   0..15  op type: one-hot of an FNV-1a hash of the type name into 16 buckets
 *   16,17  compute time (fastest eligible, at speed 1): log(1 + x/mean) /
 *          log(1 + max/mean) with the graph's mean and largest (so the unit
 *          and the graph's overall scale drop out), and log(1 + x/mean)
 *   18,19  output bytes, the same two ways
 *   20     parameter bytes, scaled as the first of those
 *   21,22  in- and out-degree, log-scaled
 *   23     topological position t/(n-1)
 *   24     top level (longest compute path ending at the op) / critical path
 *   25     criticality: (top level + bottom level - own time) / critical path
 *   26     cost of sending the op's output over the cluster's average link,
 *          relative to its compute time (log-scaled)
 *   27     bytes the op receives, scaled as parameter bytes
 *   28     fraction of the cluster's devices the op may use
 *   29     nd / max_devices (how many devices there are)
 *   30     member of a colocation group
 *   31     parameter bytes relative to the mean device memory, times nd
 *   32,33  the op's layer (graph file's "layer") as a fraction of the layer
 *          count, and whether it has one: the structure a human expert uses
 *   34..46 the reference placement's device (one-hot), a flag, and the
 *          op's decision unit's cut share, device load, work and queueing
 *          delay under it (0 here; filled by sgdp_graph_set_reference,
 *          sgdp_warm.c, beyond the paper)
 * Features 16..33 and 42..46 are unchanged when every compute time, or
 * every byte count, of the graph is multiplied by one constant, except 26
 * (communication vs compute) and 31 (parameters vs device memory), which
 * compare the graph with the cluster (tests/test_sgdp.c).
 * Neighbours for GraphSAGE's aggregation are the op's predecessors and
 * successors, at most knn of them, those joined by the largest edges first
 * (GraphSAGE samples a fixed-size neighbourhood; we keep the heaviest, so
 * the result is deterministic).  Masks and colocation leaders are described
 * in placers/sgdp/sgdp.h.
 */
#include "placers/sgdp/sgdp.h"
#include "learn/features.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/problem_util.h"

static unsigned type_bucket(const char *type)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *s = (const unsigned char *)type; s && *s; s++)
        h = (h ^ *s) * 16777619u;
    return h % SGDP_TYPE_BUCKETS;
}

/* log(1 + x/mean) / log(1 + max/mean): in [0, 1], and the same whatever the
 * unit of x (us or ms, bytes or MB) or the graph's overall scale. */
static double log_scaled(double x, double mean, double max)
{
    return mean > 0 && max > 0 ? log1p(x / mean) / log1p(max / mean) : 0.0;
}

/* Longest compute path ending at each op (top) and starting at it (bottom). */
static void compute_levels(const op_problem *p, double *top, double *bottom)
{
    const op_graph *g = p->g;
    for (int t = 0; t < p->n; t++) {
        int op = g->topo[t];
        double best = 0.0;
        for (int k = g->pred_off[op]; k < g->pred_off[op + 1]; k++)
            best = fmax(best, top[g->pred[k]]);
        top[op] = best + p->work[op];
    }
    for (int t = p->n - 1; t >= 0; t--) {
        int op = g->topo[t];
        double best = 0.0;
        for (int k = g->succ_off[op]; k < g->succ_off[op + 1]; k++)
            best = fmax(best, bottom[g->succ[k]]);
        bottom[op] = best + p->work[op];
    }
}

static void average_link(const op_cluster *c, double *lat, double *upb)
{
    op_link_model m = op_cluster_mean_link(c);
    *lat = m.latency_us;
    *upb = m.us_per_byte;
}

static op_status fill_features(sgdp_graph *sg, op_error *err)
{
    const op_problem *p = sg->p;
    const op_graph *g = p->g;
    int n = p->n;
    double *top = op_calloc((size_t)n, sizeof *top, err);
    double *bottom = op_calloc((size_t)n, sizeof *bottom, err);
    double *in_bytes = op_calloc((size_t)n, sizeof *in_bytes, err);
    if (!top || !bottom || !in_bytes) {
        free(top), free(bottom), free(in_bytes);
        return OP_ENOMEM;
    }
    compute_levels(p, top, bottom);
    double max_w = 0, sum_w = 0, max_out = 0, sum_out = 0, max_par = 0, max_in = 0, cp = 0;
    double sum_par = 0, sum_in = 0;
    for (int e = 0; e < g->n_edges; e++)
        in_bytes[g->edge_dst[e]] += (double)g->edge_bytes[e];
    for (int op = 0; op < n; op++) {
        max_w = fmax(max_w, p->work[op]);
        sum_w += p->work[op];
        max_out = fmax(max_out, (double)g->output_bytes[op]);
        sum_out += (double)g->output_bytes[op];
        max_par = fmax(max_par, (double)g->param_bytes[op]);
        sum_par += (double)g->param_bytes[op];
        max_in = fmax(max_in, in_bytes[op]);
        sum_in += in_bytes[op];
        cp = fmax(cp, top[op]);
    }
    double mean_w = sum_w / n, mean_out = sum_out / n, mean_par = sum_par / n,
           mean_in = sum_in / n, lat, upb, mean_mem = 0;
    average_link(p->c, &lat, &upb);
    for (int d = 0; d < p->nd; d++)
        mean_mem += (double)p->c->dev[d].memory_bytes / p->nd;
    for (int t = 0; t < n; t++) {
        int op = g->topo[t];
        double *f = sg->feat + (size_t)t * SGDP_N_FEATURES;
        double w = p->work[op], out = (double)g->output_bytes[op];
        int indeg = g->pred_off[op + 1] - g->pred_off[op];
        int outdeg = g->succ_off[op + 1] - g->succ_off[op];
        int eligible = 0;
        for (int d = 0; d < p->nd; d++)
            eligible += op_eligible(p, op, d);
        f[type_bucket(g->op_type[op])] = 1.0;
        double *x = f + SGDP_TYPE_BUCKETS;
        x[0] = log_scaled(w, mean_w, max_w);
        x[1] = mean_w > 0 ? log1p(w / mean_w) : 0;
        x[2] = log_scaled(out, mean_out, max_out);
        x[3] = mean_out > 0 ? log1p(out / mean_out) : 0;
        x[4] = log_scaled((double)g->param_bytes[op], mean_par, max_par);
        x[5] = log1p(indeg) / 3.0;
        x[6] = log1p(outdeg) / 3.0;
        x[7] = n > 1 ? (double)t / (n - 1) : 0.0;
        x[8] = cp > 0 ? top[op] / cp : 0;
        x[9] = cp > 0 ? (top[op] + bottom[op] - w) / cp : 0;
        x[10] = outdeg > 0 ? log1p((lat + upb * out) / (w + 1.0)) / 5.0 : 0;
        x[11] = log_scaled(in_bytes[op], mean_in, max_in);
        x[12] = (double)eligible / p->nd;
        x[13] = (double)p->nd / sg->max_devices;
        x[14] = p->group_of[op] != OP_NONE;
        x[15] = mean_mem > 0 ? fmin(4.0, (double)g->param_bytes[op] * p->nd / mean_mem) : 0;
        x[16] = g->layer[op] != OP_NONE && g->n_layers > 1
                    ? (double)g->layer[op] / (g->n_layers - 1) : 0.0;
        x[17] = g->layer[op] != OP_NONE;
    }
    free(top), free(bottom), free(in_bytes);
    return OP_OK;
}

typedef struct nbr_cand {
    int64_t bytes;
    int row;
} nbr_cand;

static int by_bytes_desc(const void *a, const void *b)
{
    const nbr_cand *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->row - y->row;
}

static op_status fill_neighbours(sgdp_graph *sg, int knn, op_error *err)
{
    const op_graph *g = sg->p->g;
    int n = sg->n, max_deg = 0;
    for (int op = 0; op < n; op++) {
        int deg = g->pred_off[op + 1] - g->pred_off[op] + g->succ_off[op + 1] - g->succ_off[op];
        if (deg > max_deg)
            max_deg = deg;
    }
    sg->nbr_off = op_calloc((size_t)n + 1, sizeof(int), err);
    sg->nbr = op_calloc((size_t)n * (size_t)knn + 1, sizeof(int), err);
    nbr_cand *cand = op_calloc((size_t)max_deg + 1, sizeof *cand, err);
    if (!sg->nbr_off || !sg->nbr || !cand) {
        free(cand);
        return OP_ENOMEM;
    }
    int fill = 0;
    for (int t = 0; t < n; t++) {
        int op = g->topo[t], c = 0;
        for (int k = g->pred_off[op]; k < g->pred_off[op + 1]; k++)
            cand[c++] = (nbr_cand){g->edge_bytes[g->pred_edge[k]], g->topo_pos[g->pred[k]]};
        for (int k = g->succ_off[op]; k < g->succ_off[op + 1]; k++)
            cand[c++] = (nbr_cand){g->edge_bytes[g->succ_edge[k]], g->topo_pos[g->succ[k]]};
        qsort(cand, (size_t)c, sizeof *cand, by_bytes_desc);
        sg->nbr_off[t] = fill;
        for (int k = 0; k < c && k < knn; k++)
            sg->nbr[fill++] = cand[k].row;
    }
    sg->nbr_off[n] = fill;
    free(cand);
    return OP_OK;
}

/* Per row: its device mask and the row whose device it copies
 * (learn/features.h: colocation). */
static op_status fill_masks(sgdp_graph *sg, op_error *err)
{
    const op_problem *p = sg->p;
    const op_graph *g = p->g;
    int *lead = op_malloc((size_t)sg->n * sizeof *lead, err);
    op_status st = lead ? learn_coloc_leaders(p, lead, err) : OP_ENOMEM;
    for (int t = 0; !st && t < sg->n; t++) {
        int op = g->topo[t];
        learn_allowed_row(p, op, sg->max_devices, sg->mask + (size_t)t * sg->max_devices);
        sg->leader[t] = lead[op] < 0 ? -1 : g->topo_pos[lead[op]];
        sg->decides[t] = sg->leader[t] < 0;
    }
    free(lead);
    return st;
}

op_status sgdp_graph_init(sgdp_graph *sg, const op_problem *p, int max_devices, int knn,
                          op_error *err)
{
    memset(sg, 0, sizeof *sg);
    if (p->nd > max_devices)
        return op_fail(err, OP_EINPUT,
                       "the cluster has %d devices but the SGDP policy handles at most %d "
                       "(train one with a larger --max-devices)",
                       p->nd, max_devices);
    if (p->n < 1)
        return op_fail(err, OP_EINPUT, "the graph has no ops");
    sg->p = p;
    sg->n = p->n;
    sg->nd = p->nd;
    sg->max_devices = max_devices;
    size_t n = (size_t)p->n;
    sg->feat = op_calloc(n * SGDP_N_FEATURES, sizeof *sg->feat, err);
    sg->mask = op_calloc(n * (size_t)max_devices, 1, err);
    sg->leader = op_calloc(n, sizeof *sg->leader, err);
    sg->decides = op_calloc(n, 1, err);
    sg->ref_dev = op_malloc(n * sizeof *sg->ref_dev, err);
    sg->scratch = op_calloc(3 * n, sizeof *sg->scratch, err);
    sg->wait = op_calloc(n, sizeof *sg->wait, err);
    op_status st = OP_ENOMEM;
    if (sg->ref_dev)
        for (size_t t = 0; t < n; t++)
            sg->ref_dev[t] = -1; /* no reference until sgdp_graph_set_reference */
    if (sg->feat && sg->mask && sg->leader && sg->decides && sg->ref_dev && sg->scratch &&
        sg->wait &&
        !(st = fill_features(sg, err)) &&
        !(st = fill_neighbours(sg, knn, err)))
        st = fill_masks(sg, err);
    if (st)
        sgdp_graph_destroy(sg);
    return st;
}

void sgdp_graph_destroy(sgdp_graph *sg)
{
    free(sg->feat);
    free(sg->nbr_off);
    free(sg->nbr);
    free(sg->mask);
    free(sg->leader);
    free(sg->decides);
    free(sg->ref_dev);
    free(sg->scratch);
    free(sg->wait);
    memset(sg, 0, sizeof *sg);
}
