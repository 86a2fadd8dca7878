/*
 * tensor.c - row-major matrix views and the BLAS call under every layer.
 *
 * An nn_tensor never owns its memory (nn_params or nn_arena do), so views of
 * row blocks are free and layers never have to think about lifetimes.  All
 * matrix products go through nn_matmul, one place that maps the row-major
 * convention onto cblas_dgemm and handles the empty cases BLAS rejects.
 */
#include "nn/nn.h"

#include <assert.h>
#include <cblas.h>
#include <string.h>

nn_tensor nn_tensor_view(double *data, int rows, int cols)
{
    assert(rows >= 0 && cols >= 0);
    nn_tensor t = {rows, cols, data};
    return t;
}

nn_tensor nn_tensor_rows(const nn_tensor *t, int row0, int nrows)
{
    assert(row0 >= 0 && nrows >= 0 && row0 + nrows <= t->rows);
    return nn_tensor_view(t->data + (size_t)row0 * (size_t)t->cols, nrows, t->cols);
}

size_t nn_tensor_size(const nn_tensor *t)
{
    return (size_t)t->rows * (size_t)t->cols;
}

bool nn_tensor_same_shape(const nn_tensor *a, const nn_tensor *b)
{
    return a->rows == b->rows && a->cols == b->cols;
}

void nn_tensor_fill(nn_tensor *t, double v)
{
    size_t n = nn_tensor_size(t);
    for (size_t i = 0; i < n; i++)
        t->data[i] = v;
}

void nn_tensor_copy(nn_tensor *dst, const nn_tensor *src)
{
    assert(nn_tensor_same_shape(dst, src));
    if (dst->data != src->data && nn_tensor_size(src))
        memmove(dst->data, src->data, nn_tensor_size(src) * sizeof(double));
}

void nn_tensor_axpy(nn_tensor *y, double alpha, const nn_tensor *x)
{
    assert(nn_tensor_same_shape(y, x));
    size_t n = nn_tensor_size(x);
    for (size_t i = 0; i < n; i++)
        y->data[i] += alpha * x->data[i];
}

void nn_tensor_scale(nn_tensor *t, double alpha)
{
    size_t n = nn_tensor_size(t);
    for (size_t i = 0; i < n; i++)
        t->data[i] *= alpha;
}

double nn_tensor_dot(const nn_tensor *a, const nn_tensor *b)
{
    assert(nn_tensor_same_shape(a, b));
    size_t n = nn_tensor_size(a);
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += a->data[i] * b->data[i];
    return s;
}

void nn_matmul(const nn_tensor *a, bool trans_a, const nn_tensor *b, bool trans_b,
               double alpha, double beta, nn_tensor *c)
{
    int m = trans_a ? a->cols : a->rows;
    int k = trans_a ? a->rows : a->cols;
    int kb = trans_b ? b->cols : b->rows;
    int n = trans_b ? b->rows : b->cols;
    assert(k == kb && c->rows == m && c->cols == n);
    (void)kb;
    if (m == 0 || n == 0)
        return;
    if (k == 0) { /* empty product: C = beta C */
        if (beta == 0.0)
            nn_tensor_fill(c, 0.0);
        else
            nn_tensor_scale(c, beta);
        return;
    }
    cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a->data, a->cols, b->data,
                b->cols, beta, c->data, c->cols);
}
