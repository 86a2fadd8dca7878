/*
 * embedding.c - a trainable lookup table (nn_embedding).
 *
 * Trinity embeds operator types and, in its decoder, the previously chosen
 * device ("each device has a trainable embedding").  Forward copies rows of
 * the table; backward scatters gradients back, adding up when an id repeats.
 */
#include "nn_internal.h"

#include <assert.h>
#include <string.h>

op_status nn_embedding_init(nn_embedding *e, nn_params *ps, const char *prefix, int vocab,
                            int dim, nn_rng *rng, op_error *err)
{
    e->vocab = vocab;
    e->dim = dim;
    e->table = NULL;
    op_status st = nn_add_named_param(ps, prefix, "table", vocab, dim, &e->table, err);
    if (st == OP_OK)
        nn_param_init_normal(e->table, rng, 1.0);
    return st;
}

op_status nn_embedding_forward(const nn_embedding *e, const int *ids, int n, nn_tensor *y,
                               op_error *err)
{
    assert(y->rows == n && y->cols == e->dim);
    for (int k = 0; k < n; k++) {
        if (ids[k] < 0 || ids[k] >= e->vocab)
            return op_fail(err, OP_EINPUT, "embedding: id %d at position %d outside [0, %d)",
                           ids[k], k, e->vocab);
        memcpy(&NN_AT(y, k, 0), &NN_AT(&e->table->value, ids[k], 0),
               (size_t)e->dim * sizeof(double));
    }
    return OP_OK;
}

void nn_embedding_backward(const nn_embedding *e, const int *ids, int n, const nn_tensor *dy)
{
    assert(dy->rows == n && dy->cols == e->dim);
    for (int k = 0; k < n; k++)
        for (int c = 0; c < e->dim; c++)
            NN_AT(&e->table->grad, ids[k], c) += NN_AT(dy, k, c);
}
