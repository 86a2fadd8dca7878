/*
 * additive_attention.c - Bahdanau (additive) attention, the attention of
 * Trinity's seq2seq schedule network: each decoder state looks at the
 * encoder's hidden states.
 *
 *   s_ij = v . tanh(q_i Wq + k_j Wk),  a_i = softmax_j(s_ij),
 *   context_i = sum_j a_ij k_j
 *
 * Keys double as values, as in Bahdanau et al. (2015).  The cache holds the
 * [m*n x hidden] tanh activations (m queries, n keys; a decoder step has
 * m = 1), the attention weights, and the workspaces for backward, all from
 * the arena.  Masked keys (e.g. padding) get weight exactly 0.
 */
#include "nn_internal.h"

#include <assert.h>
#include <math.h>

op_status nn_additive_attention_init(nn_additive_attention *at, nn_params *ps,
                                     const char *prefix, int query_dim, int key_dim,
                                     int hidden, nn_rng *rng, op_error *err)
{
    at->query_dim = query_dim;
    at->key_dim = key_dim;
    at->hidden = hidden;
    at->wq = at->wk = at->v = NULL;
    op_status st = nn_add_named_param(ps, prefix, "wq", query_dim, hidden, &at->wq, err);
    if (st == OP_OK)
        st = nn_add_named_param(ps, prefix, "wk", key_dim, hidden, &at->wk, err);
    if (st == OP_OK)
        st = nn_add_named_param(ps, prefix, "v", hidden, 1, &at->v, err);
    if (st != OP_OK)
        return st;
    nn_param_init_xavier(at->wq, rng);
    nn_param_init_xavier(at->wk, rng);
    nn_param_init_xavier(at->v, rng);
    return OP_OK;
}

static op_status alloc_cache(nn_arena *ar, int m, int n, int hidden,
                             nn_additive_attention_cache *c, op_error *err)
{
    op_status st = nn_arena_tensor(ar, m, n, &c->weights, err);
    if (st == OP_OK) st = nn_arena_tensor(ar, m, hidden, &c->qp, err);
    if (st == OP_OK) st = nn_arena_tensor(ar, n, hidden, &c->kp, err);
    if (st == OP_OK) st = nn_arena_tensor(ar, m * n, hidden, &c->t, err);
    if (st == OP_OK) st = nn_arena_tensor(ar, m, n, &c->da, err);
    if (st == OP_OK) st = nn_arena_tensor(ar, m, n, &c->ds, err);
    if (st == OP_OK) st = nn_arena_tensor(ar, m, hidden, &c->dqp, err);
    if (st == OP_OK) st = nn_arena_tensor(ar, n, hidden, &c->dkp, err);
    return st;
}

op_status nn_additive_attention_forward(const nn_additive_attention *at, nn_arena *ar,
                                        const nn_tensor *q, const nn_tensor *keys,
                                        const unsigned char *mask, nn_tensor *context,
                                        nn_additive_attention_cache *cache, op_error *err)
{
    int m = q->rows, n = keys->rows, H = at->hidden;
    assert(q->cols == at->query_dim && keys->cols == at->key_dim);
    assert(context->rows == m && context->cols == at->key_dim);
    op_status st = alloc_cache(ar, m, n, H, cache, err);
    if (st != OP_OK)
        return st;
    nn_matmul(q, false, &at->wq->value, false, 1.0, 0.0, &cache->qp);
    nn_matmul(keys, false, &at->wk->value, false, 1.0, 0.0, &cache->kp);
    const double *v = at->v->value.data;
    for (int i = 0; i < m; i++) {
        double *s = &NN_AT(&cache->weights, i, 0);
        for (int j = 0; j < n; j++) {
            double *t = &NN_AT(&cache->t, i * n + j, 0), dot = 0.0;
            for (int c = 0; c < H; c++) {
                t[c] = tanh(NN_AT(&cache->qp, i, c) + NN_AT(&cache->kp, j, c));
                dot += v[c] * t[c];
            }
            bool ok = !mask || mask[(size_t)i * (size_t)n + (size_t)j];
            s[j] = ok ? dot : -INFINITY;
        }
        if (n > 0 && nn_softmax_row_inplace(s, n) == 0)
            return op_fail(err, OP_EINPUT, "additive attention: query %d has every key masked",
                           i);
    }
    nn_matmul(&cache->weights, false, keys, false, 1.0, 0.0, context);
    return OP_OK;
}

void nn_additive_attention_backward(const nn_additive_attention *at,
                                    const nn_additive_attention_cache *cache,
                                    const nn_tensor *q, const nn_tensor *keys,
                                    const nn_tensor *dcontext, nn_tensor *dq, nn_tensor *dkeys)
{
    int m = q->rows, n = keys->rows, H = at->hidden;
    nn_tensor da = cache->da, ds = cache->ds;
    nn_tensor dqp = cache->dqp, dkp = cache->dkp;
    /* context = a keys */
    nn_matmul(dcontext, false, keys, true, 1.0, 0.0, &da);
    if (dkeys)
        nn_matmul(&cache->weights, true, dcontext, false, 1.0, 1.0, dkeys);
    nn_tensor_fill(&ds, 0.0);
    nn_softmax_backward(&cache->weights, &da, &ds);
    /* s_ij = v . t_ij,  t_ij = tanh(qp_i + kp_j) */
    const double *v = at->v->value.data;
    double *dv = at->v->grad.data;
    nn_tensor_fill(&dqp, 0.0);
    nn_tensor_fill(&dkp, 0.0);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double g = NN_AT(&ds, i, j);
            const double *t = &NN_AT(&cache->t, i * n + j, 0);
            for (int c = 0; c < H; c++) {
                double dpre = g * v[c] * (1.0 - t[c] * t[c]); /* d s / d (qp+kp) */
                dv[c] += g * t[c];
                NN_AT(&dqp, i, c) += dpre;
                NN_AT(&dkp, j, c) += dpre;
            }
        }
    nn_matmul(q, true, &dqp, false, 1.0, 1.0, &at->wq->grad);
    nn_matmul(keys, true, &dkp, false, 1.0, 1.0, &at->wk->grad);
    if (dq)
        nn_matmul(&dqp, false, &at->wq->value, true, 1.0, 1.0, dq);
    if (dkeys)
        nn_matmul(&dkp, false, &at->wk->value, true, 1.0, 1.0, dkeys);
}
