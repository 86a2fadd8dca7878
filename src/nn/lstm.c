/*
 * lstm.c - one step of an LSTM cell (Hochreiter and Schmidhuber, 1997) with
 * forward and backward, for Trinity's seq2seq schedule network (encoder
 * over groups, decoder over devices).
 *
 *   z = x Wx + h_prev Wh + b,   [i f g o] = [sig sig tanh sig](z)
 *   c = f * c_prev + i * g,     h = o * tanh(c)
 *
 * Only the step is here: backpropagation through time is the caller's loop
 * over steps in reverse (see nn.h), which keeps this file free of sequence
 * bookkeeping and lets a decoder feed its own samples back in.  The cache
 * keeps the activated gates and tanh(c), enough to differentiate without
 * recomputing; it also holds dz, the backward workspace, so backward never
 * allocates.  Weights are Glorot-uniform; the forget-gate bias starts at 1
 * (Jozefowicz et al., 2015) so early gradients flow through time.
 */
#include "nn_internal.h"

#include <assert.h>
#include <math.h>

op_status nn_lstm_init(nn_lstm *l, nn_params *ps, const char *prefix, int in, int hidden,
                       nn_rng *rng, op_error *err)
{
    l->in = in;
    l->hidden = hidden;
    l->wx = l->wh = l->b = NULL;
    op_status st = nn_add_named_param(ps, prefix, "wx", in, 4 * hidden, &l->wx, err);
    if (st == OP_OK)
        st = nn_add_named_param(ps, prefix, "wh", hidden, 4 * hidden, &l->wh, err);
    if (st == OP_OK)
        st = nn_add_named_param(ps, prefix, "b", 1, 4 * hidden, &l->b, err);
    if (st != OP_OK)
        return st;
    nn_param_init_xavier(l->wx, rng);
    nn_param_init_xavier(l->wh, rng);
    for (int j = hidden; j < 2 * hidden; j++)
        l->b->value.data[j] = 1.0;
    return OP_OK;
}

static double sigmoid(double x)
{
    if (x >= 0.0)
        return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

op_status nn_lstm_forward(const nn_lstm *l, nn_arena *ar, const nn_tensor *x,
                          const nn_tensor *h_prev, const nn_tensor *c_prev, nn_tensor *h,
                          nn_tensor *c, nn_lstm_cache *cache, op_error *err)
{
    int B = x->rows, H = l->hidden;
    assert(x->cols == l->in && h_prev->rows == B && h_prev->cols == H);
    assert(nn_tensor_same_shape(h_prev, c_prev) && nn_tensor_same_shape(h_prev, h) &&
           nn_tensor_same_shape(h_prev, c));
    op_status st = nn_arena_tensor(ar, B, 4 * H, &cache->gates, err);
    if (st == OP_OK)
        st = nn_arena_tensor(ar, B, H, &cache->tanh_c, err);
    if (st == OP_OK)
        st = nn_arena_tensor(ar, B, 4 * H, &cache->dz, err);
    if (st != OP_OK)
        return st;
    nn_tensor *z = &cache->gates;
    nn_matmul(x, false, &l->wx->value, false, 1.0, 0.0, z);
    nn_matmul(h_prev, false, &l->wh->value, false, 1.0, 1.0, z);
    for (int r = 0; r < B; r++) {
        double *zr = &NN_AT(z, r, 0);
        for (int j = 0; j < 4 * H; j++) {
            double v = zr[j] + l->b->value.data[j];
            zr[j] = (j >= 2 * H && j < 3 * H) ? tanh(v) : sigmoid(v);
        }
        for (int j = 0; j < H; j++) {
            double i = zr[j], f = zr[H + j], g = zr[2 * H + j], o = zr[3 * H + j];
            double cv = f * NN_AT(c_prev, r, j) + i * g;
            double tc = tanh(cv);
            NN_AT(c, r, j) = cv;
            NN_AT(&cache->tanh_c, r, j) = tc;
            NN_AT(h, r, j) = o * tc;
        }
    }
    return OP_OK;
}

void nn_lstm_backward(const nn_lstm *l, const nn_lstm_cache *cache, const nn_tensor *x,
                      const nn_tensor *h_prev, const nn_tensor *c_prev, const nn_tensor *dh,
                      const nn_tensor *dc, nn_tensor *dx, nn_tensor *dh_prev,
                      nn_tensor *dc_prev)
{
    int B = x->rows, H = l->hidden;
    nn_tensor dz = cache->dz; /* workspace owned by the cache */
    for (int r = 0; r < B; r++) {
        const double *gr = &NN_AT(&cache->gates, r, 0);
        double *dzr = &NN_AT(&dz, r, 0);
        for (int j = 0; j < H; j++) {
            double i = gr[j], f = gr[H + j], g = gr[2 * H + j], o = gr[3 * H + j];
            double tc = NN_AT(&cache->tanh_c, r, j);
            double dhv = dh ? NN_AT(dh, r, j) : 0.0;
            double dct = (dc ? NN_AT(dc, r, j) : 0.0) + dhv * o * (1.0 - tc * tc);
            double d_o = dhv * tc, d_i = dct * g, d_g = dct * i;
            double d_f = dct * NN_AT(c_prev, r, j);
            if (dc_prev)
                NN_AT(dc_prev, r, j) += dct * f;
            dzr[j] = d_i * i * (1.0 - i);
            dzr[H + j] = d_f * f * (1.0 - f);
            dzr[2 * H + j] = d_g * (1.0 - g * g);
            dzr[3 * H + j] = d_o * o * (1.0 - o);
        }
        for (int j = 0; j < 4 * H; j++)
            l->b->grad.data[j] += dzr[j];
    }
    nn_matmul(x, true, &dz, false, 1.0, 1.0, &l->wx->grad);
    nn_matmul(h_prev, true, &dz, false, 1.0, 1.0, &l->wh->grad);
    if (dx)
        nn_matmul(&dz, false, &l->wx->value, true, 1.0, 1.0, dx);
    if (dh_prev)
        nn_matmul(&dz, false, &l->wh->value, true, 1.0, 1.0, dh_prev);
}
