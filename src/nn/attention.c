/*
 * attention.c - multi-head attention with Transformer-XL segment recurrence
 * (nn_mha), the placement network of SGDP ("Placement Network": a
 * Transformer-XL without positional encoding over the GraphSAGE embeddings).
 *
 * A long node sequence is cut into segments.  For segment x [n x dim] with
 * memory mem [m x dim] (the previous segment's hidden states, or none):
 *   kv = [mem ; x],  Q = x Wq,  K = kv Wk,  V = kv Wv
 *   per head h (columns h*hd .. (h+1)*hd):
 *     P_h = softmax(Q_h K_h^T / sqrt(hd))   (row i may see keys 0..m+i if
 *                                             causal, all keys otherwise)
 *     ctx_h = P_h V_h
 *   y = ctx Wo
 * As in Transformer-XL (Dai et al., 2019) and SGDP, the memory is a
 * constant: no gradient flows into mem, only into the projections applied
 * to it.  Heads are column blocks of Q, K, V, multiplied in place with
 * strided dgemm calls (lda = dim), so no head is ever copied.  Differences
 * from Transformer-XL: no relative positional encoding (SGDP removes
 * positions on purpose) and no biases in the projections.
 */
#include "nn_internal.h"

#include <assert.h>
#include <cblas.h>
#include <math.h>

op_status nn_mha_init(nn_mha *a, nn_params *ps, const char *prefix, int dim, int heads,
                      nn_rng *rng, op_error *err)
{
    if (dim <= 0 || heads <= 0 || dim % heads != 0)
        return op_fail(err, OP_EINPUT,
                       "attention '%s': dimension %d is not a positive multiple of %d heads",
                       prefix, dim, heads);
    a->dim = dim;
    a->heads = heads;
    a->head_dim = dim / heads;
    nn_param **w[4] = {&a->wq, &a->wk, &a->wv, &a->wo};
    const char *names[4] = {"wq", "wk", "wv", "wo"};
    for (int i = 0; i < 4; i++) {
        op_status st = nn_add_named_param(ps, prefix, names[i], dim, dim, w[i], err);
        if (st != OP_OK)
            return st;
        nn_param_init_xavier(*w[i], rng);
    }
    return OP_OK;
}

/* Every buffer is overwritten before it is read (copies and dgemm with
 * beta 0; dkv's first product has beta 0), so none is zeroed. */
static op_status alloc_cache(nn_arena *ar, int n, int len, int dim, int heads, nn_mha_cache *c,
                             op_error *err)
{
    struct {
        nn_tensor *t;
        int rows, cols;
    } b[] = {{&c->kv, len, dim},  {&c->q, n, dim},    {&c->k, len, dim},
             {&c->v, len, dim},   {&c->probs, heads * n, len},
             {&c->ctx, n, dim},   {&c->dctx, n, dim}, {&c->dq, n, dim},
             {&c->dk, len, dim},  {&c->dv, len, dim}, {&c->dkv, len, dim},
             {&c->dprobs, n, len}};
    for (size_t i = 0; i < sizeof b / sizeof *b; i++) {
        op_status st = nn_arena_tensor_uninit(ar, b[i].rows, b[i].cols, b[i].t, err);
        if (st != OP_OK)
            return st;
    }
    return OP_OK;
}

/* P_h = softmax(scale Q_h K_h^T) with the causal mask, into probs rows h*n.. */
static void head_probs(const nn_mha *a, nn_mha_cache *c, int h, int n, int len)
{
    int d = a->dim, hd = a->head_dim;
    double scale = 1.0 / sqrt((double)hd);
    double *p = &NN_AT(&c->probs, h * n, 0);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, len, hd, scale, c->q.data + h * hd, d,
                c->k.data + h * hd, d, 0.0, p, len);
    for (int i = 0; i < n; i++) {
        double *row = p + (size_t)i * (size_t)len;
        if (c->causal)
            for (int j = c->mem_rows + i + 1; j < len; j++)
                row[j] = -INFINITY;
        nn_softmax_row_inplace(row, len); /* key 0..m+i always visible */
    }
}

op_status nn_mha_forward(const nn_mha *a, nn_arena *ar, const nn_tensor *x, const nn_tensor *mem,
                         bool causal, nn_tensor *y, nn_mha_cache *cache, op_error *err)
{
    int d = a->dim, n = x->rows, m = mem ? mem->rows : 0, len = m + n;
    assert(x->cols == d && nn_tensor_same_shape(x, y) && (!mem || mem->cols == d));
    cache->mem_rows = m;
    cache->causal = causal;
    op_status st = alloc_cache(ar, n, len, d, a->heads, cache, err);
    if (st != OP_OK || n == 0)
        return st;
    const nn_tensor *parts[2] = {mem, x};
    if (mem)
        nn_concat_rows_forward(parts, 2, &cache->kv);
    else
        nn_tensor_copy(&cache->kv, x);
    nn_matmul(x, false, &a->wq->value, false, 1.0, 0.0, &cache->q);
    nn_matmul(&cache->kv, false, &a->wk->value, false, 1.0, 0.0, &cache->k);
    nn_matmul(&cache->kv, false, &a->wv->value, false, 1.0, 0.0, &cache->v);
    int hd = a->head_dim;
    for (int h = 0; h < a->heads; h++) {
        head_probs(a, cache, h, n, len);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, hd, len, 1.0,
                    &NN_AT(&cache->probs, h * n, 0), len, cache->v.data + h * hd, d, 0.0,
                    cache->ctx.data + h * hd, d);
    }
    nn_matmul(&cache->ctx, false, &a->wo->value, false, 1.0, 0.0, y);
    return OP_OK;
}

/* Softmax backward in place over one head: dP <- P .* (dP - rowsum(P .* dP)). */
static void softmax_grad_inplace(const double *p, double *dp, int n, int len)
{
    for (int i = 0; i < n; i++) {
        const double *pr = p + (size_t)i * (size_t)len;
        double *dr = dp + (size_t)i * (size_t)len, dot = 0.0;
        for (int j = 0; j < len; j++)
            dot += pr[j] * dr[j];
        for (int j = 0; j < len; j++)
            dr[j] = pr[j] * (dr[j] - dot);
    }
}

static void head_backward(const nn_mha *a, const nn_mha_cache *c, int h, int n, int len)
{
    int d = a->dim, hd = a->head_dim;
    double scale = 1.0 / sqrt((double)hd);
    const double *p = &NN_AT(&c->probs, h * n, 0);
    double *dp = c->dprobs.data;
    int off = h * hd;
    /* ctx_h = P V_h */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, len, hd, 1.0, c->dctx.data + off, d,
                c->v.data + off, d, 0.0, dp, len);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, len, hd, n, 1.0, p, len,
                c->dctx.data + off, d, 0.0, c->dv.data + off, d);
    softmax_grad_inplace(p, dp, n, len);
    /* S = scale Q_h K_h^T */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, hd, len, scale, dp, len,
                c->k.data + off, d, 0.0, c->dq.data + off, d);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, len, hd, n, scale, dp, len,
                c->q.data + off, d, 0.0, c->dk.data + off, d);
}

void nn_mha_backward(const nn_mha *a, const nn_mha_cache *cache, const nn_tensor *x,
                     const nn_tensor *dy, nn_tensor *dx)
{
    int n = x->rows, m = cache->mem_rows, len = m + n;
    assert(nn_tensor_same_shape(x, dy));
    if (n == 0)
        return;
    nn_mha_cache c = *cache; /* workspaces are written through the copies */
    nn_matmul(&c.ctx, true, dy, false, 1.0, 1.0, &a->wo->grad);
    nn_matmul(dy, false, &a->wo->value, true, 1.0, 0.0, &c.dctx);
    for (int h = 0; h < a->heads; h++)
        head_backward(a, &c, h, n, len);
    nn_matmul(x, true, &c.dq, false, 1.0, 1.0, &a->wq->grad);
    nn_matmul(&c.kv, true, &c.dk, false, 1.0, 1.0, &a->wk->grad);
    nn_matmul(&c.kv, true, &c.dv, false, 1.0, 1.0, &a->wv->grad);
    if (!dx)
        return;
    assert(nn_tensor_same_shape(dx, x) && dx->data != dy->data);
    nn_matmul(&c.dq, false, &a->wq->value, true, 1.0, 1.0, dx);
    nn_matmul(&c.dk, false, &a->wk->value, true, 1.0, 0.0, &c.dkv);
    nn_matmul(&c.dv, false, &a->wv->value, true, 1.0, 1.0, &c.dkv);
    nn_tensor dkv_x = nn_tensor_rows(&c.dkv, m, n); /* rows of mem are dropped */
    nn_tensor_axpy(dx, 1.0, &dkv_x);
}
