/*
 * linear.c - the fully connected layer y = x W + b (nn_linear).
 *
 * W is stored [in x out] so the forward pass is one dgemm without a
 * transpose.  Used by GraphSAGE's per-neighbor transform and combine (SGDP
 * eq. 2-3), the attention feed-forward blocks, the policy heads and Trinity's
 * partition network.  Weights start Glorot-uniform, the bias at zero.
 */
#include "nn_internal.h"

#include <assert.h>

op_status nn_linear_init(nn_linear *l, nn_params *ps, const char *prefix, int in, int out,
                         bool bias, nn_rng *rng, op_error *err)
{
    l->in = in;
    l->out = out;
    l->w = l->b = NULL;
    op_status st = nn_add_named_param(ps, prefix, "w", in, out, &l->w, err);
    if (st != OP_OK)
        return st;
    nn_param_init_xavier(l->w, rng);
    if (bias)
        st = nn_add_named_param(ps, prefix, "b", 1, out, &l->b, err);
    return st;
}

void nn_linear_forward(const nn_linear *l, const nn_tensor *x, nn_tensor *y)
{
    assert(x->cols == l->in && y->cols == l->out && y->rows == x->rows);
    assert(y->data != x->data);
    nn_matmul(x, false, &l->w->value, false, 1.0, 0.0, y);
    if (!l->b)
        return;
    for (int i = 0; i < y->rows; i++)
        for (int j = 0; j < y->cols; j++)
            NN_AT(y, i, j) += l->b->value.data[j];
}

void nn_linear_backward(const nn_linear *l, const nn_tensor *x, const nn_tensor *dy,
                        nn_tensor *dx)
{
    assert(dy->rows == x->rows && dy->cols == l->out);
    nn_matmul(x, true, dy, false, 1.0, 1.0, &l->w->grad);
    if (l->b)
        for (int i = 0; i < dy->rows; i++)
            for (int j = 0; j < dy->cols; j++)
                l->b->grad.data[j] += NN_AT(dy, i, j);
    if (dx) {
        assert(nn_tensor_same_shape(dx, x) && dx->data != dy->data);
        nn_matmul(dy, false, &l->w->value, true, 1.0, 1.0, dx);
    }
}
