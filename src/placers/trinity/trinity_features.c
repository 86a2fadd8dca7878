/*
 * trinity_features.c - Trinity's inputs (the Trinity paper section 4.1.1):
 * per-op features (Table 1) and per-group features (Table 2), colocation
 * leaders and device masks.
 *
 * Op features (Table 1): runtime (fastest eligible execution time,
 * z-scored over the graph), structure (Node2vec, learn/node2vec.h), node
 * type (an index into a fixed vocabulary of common TensorFlow op names,
 * looked up in a trainable embedding by the policy; unknown names hash into
 * a few extra buckets), output size (output_bytes, log-scaled and
 * z-scored).  Additions, for the memory objective and the device order:
 * log param_bytes (z-scored) and the op's topological depth in [0, 1].
 *
 * Group features (Table 2): the mean type embedding of the members, the
 * group's summed output size, and its adjacency vector over the G groups.
 * Additions: the group's summed runtime, summed parameter bytes, member
 * count and position t/G in the sequence.  Sizes are shares of the graph's total, scaled by G and passed
 * through log1p, so they do not depend on the graph's scale.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "learn/features.h"
#include "placers/trinity/trinity_internal.h"

/* ----------------------------------------------------------- vocabulary */

static const char *const VOCAB[] = {
    "Op", "Conv2D", "DepthwiseConv2dNative", "MatMul", "BatchMatMul", "BiasAdd", "Add",
    "AddN", "Sub", "Mul", "RealDiv", "Relu", "Relu6", "Sigmoid", "Tanh", "Softmax",
    "LogSoftmax", "MaxPool", "AvgPool", "Mean", "Sum", "Rsqrt", "SquaredDifference",
    "FusedBatchNorm", "ConcatV2", "Split", "Reshape", "Transpose", "Pack", "Unpack",
    "Slice", "StridedSlice", "GatherV2", "UnsortedSegmentSum", "Fill", "Identity",
    "VariableV2", "ApplyAdam", "ApplyGradientDescent", "Grad", "GradWeight",
    "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits",
    "IteratorGetNext", "RandomUniform", "Floor", "Cast", "Shape", "Const", "Exp", "Log",
    "Square", "Sqrt", "Maximum", "Minimum", "Select", "Tile", "Pad", "OneHot", "Embedding",
    "LayerNorm", "Gelu", "Dropout", "NoOp",
};
#define N_VOCAB ((int)(sizeof VOCAB / sizeof *VOCAB))
#define HASH_BUCKETS 16

int trinity_vocab_size(void)
{
    return N_VOCAB + HASH_BUCKETS;
}

int trinity_type_id(const char *type)
{
    if (!type)
        return 0;
    for (int i = 0; i < N_VOCAB; i++)
        if (!strcmp(VOCAB[i], type))
            return i;
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *s = (const unsigned char *)type; *s; s++)
        h = (h ^ *s) * 16777619u;
    return N_VOCAB + (int)(h % HASH_BUCKETS);
}

/* ------------------------------------------------------------ op features */

static void zscore_column(double *x, int n, int stride)
{
    double mean = 0.0, var = 0.0;
    for (int i = 0; i < n; i++)
        mean += x[(size_t)i * stride] / n;
    for (int i = 0; i < n; i++)
        var += (x[(size_t)i * stride] - mean) * (x[(size_t)i * stride] - mean) / n;
    double sd = sqrt(var);
    for (int i = 0; i < n; i++)
        x[(size_t)i * stride] = sd > 1e-12 ? (x[(size_t)i * stride] - mean) / sd : 0.0;
}

static void shares(const double *v, int n, double *out)
{
    double total = 0.0;
    for (int i = 0; i < n; i++)
        total += v[i];
    for (int i = 0; i < n; i++)
        out[i] = total > 0 ? v[i] / total : 1.0 / n;
}

static op_status scalar_features(trinity_graph *tg, op_error *err)
{
    const op_problem *p = tg->p;
    const op_graph *g = p->g;
    int n = tg->n, w = tg->n_num;
    double *tmp = op_malloc(sizeof(double) * (size_t)(n > 0 ? n : 1), err);
    if (!tmp)
        return OP_ENOMEM;
    for (int i = 0; i < n; i++) {
        double *row = tg->num + (size_t)i * w;
        row[0] = p->min_exec[i];
        row[1] = log1p((double)g->output_bytes[i]);
        row[2] = log1p((double)g->param_bytes[i]);
        row[3] = n > 1 ? (double)g->topo_pos[i] / (n - 1) : 0.0;
    }
    for (int c = 0; c < 3; c++)
        zscore_column(tg->num + c, n, w);
    for (int i = 0; i < n; i++)
        tmp[i] = p->min_exec[i];
    shares(tmp, n, tg->time_share);
    for (int i = 0; i < n; i++)
        tmp[i] = (double)g->output_bytes[i];
    shares(tmp, n, tg->out_share);
    for (int i = 0; i < n; i++)
        tmp[i] = (double)g->param_bytes[i];
    shares(tmp, n, tg->param_share);
    free(tmp);
    return OP_OK;
}

static op_status structure_features(trinity_graph *tg, const node2vec_config *n2v, int dim,
                                    op_error *err)
{
    int n = tg->n;
    double *emb = op_malloc(sizeof(double) * (size_t)(n > 0 ? n : 1) * (size_t)dim, err);
    if (!emb)
        return OP_ENOMEM;
    node2vec_config c = *n2v;
    c.dim = dim;
    op_status st = node2vec_embed(tg->p->g, &c, emb, err);
    if (!st) {
        /* scale each coordinate to unit variance: SGNS vectors are small */
        for (int j = 0; j < dim; j++)
            zscore_column(emb + j, n, dim);
        for (int i = 0; i < n; i++)
            memcpy(tg->num + (size_t)i * tg->n_num + TRINITY_N_SCALAR, emb + (size_t)i * dim,
                   sizeof(double) * (size_t)dim);
    }
    free(emb);
    return st;
}

/* Per op: the op whose group it copies, its allowed devices and its repair
 * device (learn/features.h: colocation). */
static op_status decisions_and_masks(trinity_graph *tg, op_error *err)
{
    int md = tg->max_devices;
    op_status st = learn_coloc_leaders(tg->p, tg->leader, err);
    for (int i = 0; !st && i < tg->n; i++) {
        unsigned char *row = tg->allowed + (size_t)i * md;
        tg->decides[i] = tg->leader[i] < 0;
        learn_allowed_row(tg->p, i, md, row);
        tg->first_allowed[i] = -1;
        for (int d = 0; d < md && tg->first_allowed[i] < 0; d++)
            if (row[d])
                tg->first_allowed[i] = d;
    }
    return st;
}

op_status trinity_graph_init(trinity_graph *tg, const op_problem *p, const trinity_config *cfg,
                             const node2vec_config *n2v, op_error *err)
{
    memset(tg, 0, sizeof *tg);
    if (p->nd > cfg->max_devices)
        return op_fail(err, OP_EINPUT,
                       "trinity: the cluster has %d devices, the policy at most %d "
                       "(--max-devices)",
                       p->nd, cfg->max_devices);
    if (p->g->n_ops < 1)
        return op_fail(err, OP_EINPUT, "trinity: the graph has no ops");
    tg->p = p;
    tg->n = p->n;
    tg->nd = p->nd;
    tg->max_devices = cfg->max_devices;
    tg->groups = cfg->groups;
    tg->n_num = TRINITY_N_SCALAR + cfg->n2v_dim;
    size_t n = (size_t)tg->n;
    tg->num = op_calloc(n * (size_t)tg->n_num, sizeof(double), err);
    tg->type_id = op_calloc(n, sizeof(int), err);
    tg->leader = op_calloc(n, sizeof(int), err);
    tg->decides = op_calloc(n, 1, err);
    tg->allowed = op_calloc(n * (size_t)tg->max_devices, 1, err);
    tg->first_allowed = op_calloc(n, sizeof(int), err);
    tg->anchor = op_calloc(n, sizeof(int), err);
    tg->block_dev = op_calloc((size_t)tg->groups, sizeof(int), err);
    tg->out_share = op_calloc(n, sizeof(double), err);
    tg->time_share = op_calloc(n, sizeof(double), err);
    tg->param_share = op_calloc(n, sizeof(double), err);
    if (!tg->num || !tg->type_id || !tg->leader || !tg->decides || !tg->allowed ||
        !tg->first_allowed || !tg->anchor || !tg->block_dev || !tg->out_share ||
        !tg->time_share || !tg->param_share) {
        trinity_graph_destroy(tg);
        return OP_ENOMEM;
    }
    for (int i = 0; i < tg->n; i++)
        tg->type_id[i] = trinity_type_id(p->g->op_type[i]);
    for (int t = 0; t < tg->groups; t++)
        tg->block_dev[t] = (int)((long)t * tg->nd / tg->groups);
    op_status st = decisions_and_masks(tg, err);
    if (!st)
        st = scalar_features(tg, err);
    if (!st)
        st = trinity_anchor_groups(p, cfg->groups, n2v->seed, tg->anchor, err);
    if (!st && cfg->n2v_dim > 0)
        st = structure_features(tg, n2v, cfg->n2v_dim, err);
    if (st)
        trinity_graph_destroy(tg);
    return st;
}

void trinity_graph_destroy(trinity_graph *tg)
{
    free(tg->num);
    free(tg->type_id);
    free(tg->leader);
    free(tg->decides);
    free(tg->allowed);
    free(tg->first_allowed);
    free(tg->anchor);
    free(tg->block_dev);
    free(tg->out_share);
    free(tg->time_share);
    free(tg->param_share);
    memset(tg, 0, sizeof *tg);
}

/* --------------------------------------------------------- group features */

#define GROUP_SCALARS 5

int trinity_group_feature_dim(const trinity_config *cfg)
{
    return cfg->type_dim + GROUP_SCALARS + cfg->groups;
}

void trinity_group_features(const trinity_graph *tg, const trinity_batch *b, int k,
                            const nn_tensor *temb, nn_tensor *gf, double *count)
{
    int G = tg->groups, e = temb->cols, n = tg->n;
    const op_graph *g = tg->p->g;
    nn_tensor_fill(gf, 0.0);
    memset(count, 0, sizeof(double) * (size_t)k * (size_t)G);
    for (int r = 0; r < k; r++) {
        const int *grp = b->group + (size_t)r * n;
        for (int i = 0; i < n; i++) {
            int t = grp[i];
            double *row = gf->data + ((size_t)t * k + r) * gf->cols;
            count[(size_t)r * G + t] += 1.0;
            for (int j = 0; j < e; j++)
                row[j] += NN_AT(temb, i, j);
            row[e] += tg->out_share[i];
            row[e + 1] += tg->time_share[i];
            row[e + 2] += tg->param_share[i];
        }
        for (int x = 0; x < g->n_edges; x++) {
            int a = grp[g->edge_src[x]], c = grp[g->edge_dst[x]];
            if (a == c)
                continue;
            gf->data[((size_t)a * k + r) * gf->cols + e + GROUP_SCALARS + c] = 1.0;
            gf->data[((size_t)c * k + r) * gf->cols + e + GROUP_SCALARS + a] = 1.0;
        }
        for (int t = 0; t < G; t++) {
            double *row = gf->data + ((size_t)t * k + r) * gf->cols;
            double cnt = count[(size_t)r * G + t];
            for (int j = 0; j < e && cnt > 0; j++)
                row[j] /= cnt;
            for (int j = 0; j < 3; j++)
                row[e + j] = log1p(G * row[e + j]);
            row[e + 3] = log1p(G * cnt / n);
            row[e + 4] = (t + 0.5) / G;
        }
    }
}

void trinity_group_features_backward(const trinity_graph *tg, const trinity_batch *b, int k,
                                     const double *count, const nn_tensor *dgf,
                                     nn_tensor *dtemb)
{
    int G = tg->groups, e = dtemb->cols, n = tg->n;
    for (int r = 0; r < k; r++) {
        const int *grp = b->group + (size_t)r * n;
        for (int i = 0; i < n; i++) {
            int t = grp[i];
            const double *row = dgf->data + ((size_t)t * k + r) * dgf->cols;
            double inv = 1.0 / count[(size_t)r * G + t];
            for (int j = 0; j < e; j++)
                NN_AT(dtemb, i, j) += row[j] * inv;
        }
    }
}

void trinity_group_masks(const trinity_graph *tg, trinity_batch *b, int k, const double *count)
{
    int G = tg->groups, md = tg->max_devices, n = tg->n;
    for (int r = 0; r < k; r++) {
        unsigned char *m = b->gmask + (size_t)r * G * md;
        unsigned char *any = b->scratch;
        memset(any, 0, (size_t)G * md);
        memset(m, 1, (size_t)G * md);
        const int *grp = b->group + (size_t)r * n;
        for (int i = 0; i < n; i++) {
            const unsigned char *a = tg->allowed + (size_t)i * md;
            unsigned char *row = m + (size_t)grp[i] * md;
            for (int d = 0; d < md; d++) {
                row[d] &= a[d];
                any[(size_t)grp[i] * md + d] |= a[d];
            }
        }
        for (int t = 0; t < G; t++) {
            unsigned char *row = m + (size_t)t * md;
            int ok = 0, members = count[(size_t)r * G + t] > 0;
            for (int d = 0; d < md; d++)
                ok |= row[d];
            b->gdecides[(size_t)r * G + t] = (unsigned char)members;
            if (ok && members)
                continue;
            for (int d = 0; d < md; d++) /* empty group, or no common device */
                row[d] = members ? any[(size_t)t * md + d] : (unsigned char)(d < tg->nd);
        }
    }
}

/* ----------------------------------------------------------------- batch */

op_status trinity_batch_init(trinity_batch *b, const trinity_graph *tg, int cap, op_error *err)
{
    memset(b, 0, sizeof *b);
    b->cap = cap;
    b->n = tg->n;
    b->groups = tg->groups;
    b->max_devices = tg->max_devices;
    size_t c = (size_t)cap, G = (size_t)tg->groups;
    b->group = op_calloc(c * (size_t)tg->n, sizeof(int), err);
    b->device = op_calloc(c * G, sizeof(int), err);
    b->gmask = op_calloc(c * G * (size_t)tg->max_devices, 1, err);
    b->gdecides = op_calloc(c * G, 1, err);
    b->old_part = op_calloc(c * (size_t)tg->n, sizeof(double), err);
    b->old_sched = op_calloc(c * G, sizeof(double), err);
    b->scratch = op_calloc(G * (size_t)tg->max_devices, 1, err);
    if (!b->group || !b->device || !b->gmask || !b->gdecides || !b->old_part || !b->old_sched ||
        !b->scratch) {
        trinity_batch_destroy(b);
        return OP_ENOMEM;
    }
    return OP_OK;
}

void trinity_batch_destroy(trinity_batch *b)
{
    free(b->group);
    free(b->device);
    free(b->gmask);
    free(b->gdecides);
    free(b->old_part);
    free(b->old_sched);
    free(b->scratch);
    memset(b, 0, sizeof *b);
}

void trinity_batch_placement(const trinity_graph *tg, const trinity_batch *b, int r,
                             int *device_of)
{
    int n = tg->n, md = tg->max_devices;
    const int *grp = b->group + (size_t)r * n;
    const int *dev = b->device + (size_t)r * tg->groups;
    for (int i = 0; i < n; i++) {
        if (tg->leader[i] >= 0)
            continue;
        int d = dev[grp[i]];
        device_of[i] = tg->allowed[(size_t)i * md + d] ? d : tg->first_allowed[i];
    }
    for (int i = 0; i < n; i++)
        if (tg->leader[i] >= 0)
            device_of[i] = device_of[tg->leader[i]];
}
