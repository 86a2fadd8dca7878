/*
 * concat.c - joining tensors side by side (features) or stacked (rows).
 *
 * Column concat is GraphSAGE's combine step, CONCAT(h_v, h_N(v)) in SGDP
 * eq. 3, and Trinity's [decoder state ; context]; row concat builds
 * Transformer-XL's [memory ; segment].  Backward splits the gradient back.
 */
#include "nn/nn.h"

#include <assert.h>
#include <string.h>

void nn_concat_cols_forward(const nn_tensor *const *parts, int n, nn_tensor *y)
{
    int col0 = 0;
    for (int k = 0; k < n; k++) {
        const nn_tensor *p = parts[k];
        assert(p->rows == y->rows && col0 + p->cols <= y->cols);
        for (int i = 0; i < p->rows; i++)
            memcpy(&NN_AT(y, i, col0), &NN_AT(p, i, 0), (size_t)p->cols * sizeof(double));
        col0 += p->cols;
    }
    assert(col0 == y->cols);
}

void nn_concat_cols_backward(const nn_tensor *dy, nn_tensor *const *dparts, int n)
{
    int col0 = 0;
    for (int k = 0; k < n; k++) {
        nn_tensor *d = dparts[k];
        assert(d && "nn_concat_cols_backward: NULL part has unknown width");
        assert(d->rows == dy->rows && col0 + d->cols <= dy->cols);
        for (int i = 0; i < d->rows; i++)
            for (int j = 0; j < d->cols; j++)
                NN_AT(d, i, j) += NN_AT(dy, i, col0 + j);
        col0 += d->cols;
    }
}

void nn_concat_rows_forward(const nn_tensor *const *parts, int n, nn_tensor *y)
{
    int row0 = 0;
    for (int k = 0; k < n; k++) {
        const nn_tensor *p = parts[k];
        assert(p->cols == y->cols && row0 + p->rows <= y->rows);
        if (nn_tensor_size(p))
            memcpy(&NN_AT(y, row0, 0), p->data, nn_tensor_size(p) * sizeof(double));
        row0 += p->rows;
    }
    assert(row0 == y->rows);
}

void nn_concat_rows_backward(const nn_tensor *dy, nn_tensor *const *dparts, int n)
{
    int row0 = 0;
    for (int k = 0; k < n; k++) {
        nn_tensor *d = dparts[k];
        assert(d && "nn_concat_rows_backward: NULL part has unknown height");
        nn_tensor src = nn_tensor_rows(dy, row0, d->rows);
        nn_tensor_axpy(d, 1.0, &src);
        row0 += d->rows;
    }
}
