/*
 * maxpool.c - GraphSAGE's max-pooling aggregator over graph neighbors.
 *
 * SGDP eq. 2 aggregates a node's neighbors as
 *   h_N(v) = max_{u in N(v)} sigma(W h_u + b)   (elementwise max);
 * the linear layer and sigma are separate layers, this file is the max.
 * Neighbor lists come in CSR form (offsets + indices), the layout of the
 * graph model in src/core, so no per-node allocation happens.  A node with
 * no neighbors aggregates to the zero vector.  Backward routes each output
 * element's gradient to the neighbor that won the max (first one on ties),
 * remembered in the cache.
 */
#include "nn/nn.h"

#include <assert.h>

op_status nn_maxpool_forward(nn_arena *ar, const nn_tensor *h, const int *offsets,
                             const int *neighbors, nn_tensor *y, nn_maxpool_cache *cache,
                             op_error *err)
{
    assert(h->cols == y->cols);
    int d = y->cols;
    cache->argmax = nn_arena_alloc(ar, nn_tensor_size(y) * sizeof(int), err);
    if (!cache->argmax)
        return OP_ENOMEM;
    for (int i = 0; i < y->rows; i++) {
        int *arg = cache->argmax + (size_t)i * (size_t)d;
        if (offsets[i] > offsets[i + 1])
            return op_fail(err, OP_EINPUT, "max-pool: neighbor offsets decrease at node %d", i);
        for (int c = 0; c < d; c++) {
            arg[c] = -1;
            NN_AT(y, i, c) = 0.0;
        }
        for (int k = offsets[i]; k < offsets[i + 1]; k++) {
            int j = neighbors[k];
            if (j < 0 || j >= h->rows)
                return op_fail(err, OP_EINPUT,
                               "max-pool: node %d has neighbor %d outside [0, %d)", i, j,
                               h->rows);
            for (int c = 0; c < d; c++)
                if (arg[c] < 0 || NN_AT(h, j, c) > NN_AT(y, i, c)) {
                    NN_AT(y, i, c) = NN_AT(h, j, c);
                    arg[c] = j;
                }
        }
    }
    return OP_OK;
}

void nn_maxpool_backward(const nn_maxpool_cache *cache, const nn_tensor *dy, nn_tensor *dh)
{
    if (!dh)
        return;
    assert(dh->cols == dy->cols);
    int d = dy->cols;
    for (int i = 0; i < dy->rows; i++) {
        const int *arg = cache->argmax + (size_t)i * (size_t)d;
        for (int c = 0; c < d; c++)
            if (arg[c] >= 0)
                NN_AT(dh, arg[c], c) += NN_AT(dy, i, c);
    }
}
