/*
 * layernorm.c - layer normalisation over the feature axis (Ba et al., 2016),
 * as used around each attention and feed-forward block of the
 * Transformer-XL policy.
 *
 * Per row: xhat = (x - mean) / sqrt(var + eps) (biased variance),
 * y = gamma * xhat + beta.  The cache keeps mean and 1/std per row; xhat is
 * recomputed from x in backward, which uses the usual closed form
 *   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  g = dy * gamma.
 */
#include "nn_internal.h"

#include <assert.h>
#include <math.h>

op_status nn_layernorm_init(nn_layernorm *ln, nn_params *ps, const char *prefix, int dim,
                            op_error *err)
{
    ln->dim = dim;
    ln->eps = 1e-5;
    ln->gamma = ln->beta = NULL;
    op_status st = nn_add_named_param(ps, prefix, "gamma", 1, dim, &ln->gamma, err);
    if (st != OP_OK)
        return st;
    nn_tensor_fill(&ln->gamma->value, 1.0);
    return nn_add_named_param(ps, prefix, "beta", 1, dim, &ln->beta, err);
}

op_status nn_layernorm_forward(const nn_layernorm *ln, nn_arena *ar, const nn_tensor *x,
                               nn_tensor *y, nn_layernorm_cache *cache, op_error *err)
{
    assert(x->cols == ln->dim && nn_tensor_same_shape(x, y));
    cache->mean = nn_arena_alloc(ar, (size_t)x->rows * sizeof(double), err);
    cache->rstd = nn_arena_alloc(ar, (size_t)x->rows * sizeof(double), err);
    if (!cache->mean || !cache->rstd)
        return OP_ENOMEM;
    int d = ln->dim;
    const double *gamma = ln->gamma->value.data, *beta = ln->beta->value.data;
    for (int i = 0; i < x->rows; i++) {
        const double *xr = &NN_AT(x, i, 0);
        double mean = 0.0, var = 0.0;
        for (int c = 0; c < d; c++)
            mean += xr[c];
        mean /= d;
        for (int c = 0; c < d; c++)
            var += (xr[c] - mean) * (xr[c] - mean);
        var /= d;
        double rstd = 1.0 / sqrt(var + ln->eps);
        cache->mean[i] = mean;
        cache->rstd[i] = rstd;
        for (int c = 0; c < d; c++)
            NN_AT(y, i, c) = gamma[c] * (xr[c] - mean) * rstd + beta[c];
    }
    return OP_OK;
}

void nn_layernorm_backward(const nn_layernorm *ln, const nn_layernorm_cache *cache,
                           const nn_tensor *x, const nn_tensor *dy, nn_tensor *dx)
{
    assert(nn_tensor_same_shape(x, dy));
    int d = ln->dim;
    const double *gamma = ln->gamma->value.data;
    double *dgamma = ln->gamma->grad.data, *dbeta = ln->beta->grad.data;
    for (int i = 0; i < x->rows; i++) {
        double mean = cache->mean[i], rstd = cache->rstd[i];
        double mean_g = 0.0, mean_gx = 0.0;
        for (int c = 0; c < d; c++) {
            double xhat = (NN_AT(x, i, c) - mean) * rstd;
            double g = NN_AT(dy, i, c) * gamma[c];
            dgamma[c] += NN_AT(dy, i, c) * xhat;
            dbeta[c] += NN_AT(dy, i, c);
            mean_g += g;
            mean_gx += g * xhat;
        }
        mean_g /= d;
        mean_gx /= d;
        if (!dx)
            continue;
        for (int c = 0; c < d; c++) {
            double xhat = (NN_AT(x, i, c) - mean) * rstd;
            double g = NN_AT(dy, i, c) * gamma[c];
            NN_AT(dx, i, c) += rstd * (g - mean_g - xhat * mean_gx);
        }
    }
}
