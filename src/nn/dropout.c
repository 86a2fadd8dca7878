/*
 * dropout.c - inverted dropout (Srivastava et al., 2014) with a seeded rng.
 *
 * In training each element is kept with probability 1 - rate and scaled by
 * 1/(1 - rate), so evaluation is the identity and needs no rescaling.  The
 * mask (0 or the scale) is kept in the arena for backward; drawing it from
 * the caller's nn_rng makes a training run reproducible from its seed.
 */
#include "nn/nn.h"

#include <assert.h>

op_status nn_dropout_forward(double rate, bool training, nn_rng *rng, nn_arena *ar,
                             const nn_tensor *x, nn_tensor *y, nn_dropout_cache *cache,
                             op_error *err)
{
    assert(nn_tensor_same_shape(x, y));
    cache->mask = NULL;
    if (!(rate >= 0.0 && rate < 1.0))
        return op_fail(err, OP_EINPUT, "dropout rate %g is outside [0, 1)", rate);
    if (!training || rate == 0.0) {
        nn_tensor_copy(y, x);
        return OP_OK;
    }
    size_t n = nn_tensor_size(x);
    cache->mask = nn_arena_alloc(ar, n * sizeof(double), err);
    if (!cache->mask)
        return OP_ENOMEM;
    double scale = 1.0 / (1.0 - rate);
    for (size_t i = 0; i < n; i++) {
        cache->mask[i] = nn_rng_uniform(rng) < rate ? 0.0 : scale;
        y->data[i] = x->data[i] * cache->mask[i];
    }
    return OP_OK;
}

void nn_dropout_backward(const nn_dropout_cache *cache, const nn_tensor *dy, nn_tensor *dx)
{
    if (!dx)
        return;
    assert(nn_tensor_same_shape(dy, dx) && dx->data != dy->data);
    size_t n = nn_tensor_size(dy);
    for (size_t i = 0; i < n; i++)
        dx->data[i] += cache->mask ? cache->mask[i] * dy->data[i] : dy->data[i];
}
