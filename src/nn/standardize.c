/*
 * standardize.c - each column of a matrix standardised over its rows, and
 * its backward pass.  The learned placers' plain heads use it over the
 * graph's ops (rows), a normalisation over the graph (as GraphNorm) that is
 * the same for any graph size.
 */
#include <math.h>

#include "nn/nn.h"

void nn_standardize_columns(const nn_tensor *x, nn_tensor *y, double *inv_sd)
{
    int n = x->rows;
    for (int j = 0; j < x->cols; j++) {
        double m = 0.0, v = 0.0;
        for (int t = 0; t < n; t++)
            m += NN_AT(x, t, j);
        m /= n > 0 ? n : 1;
        for (int t = 0; t < n; t++)
            v += (NN_AT(x, t, j) - m) * (NN_AT(x, t, j) - m);
        v /= n > 0 ? n : 1;
        inv_sd[j] = 1.0 / sqrt(v + 1e-10);
        for (int t = 0; t < n; t++)
            NN_AT(y, t, j) = (NN_AT(x, t, j) - m) * inv_sd[j];
    }
}

void nn_standardize_columns_backward(const nn_tensor *y, const double *inv_sd,
                                     const nn_tensor *dy, nn_tensor *dx)
{
    int n = y->rows;
    for (int j = 0; j < y->cols; j++) {
        double mg = 0.0, mgy = 0.0;
        for (int t = 0; t < n; t++) {
            mg += NN_AT(dy, t, j);
            mgy += NN_AT(dy, t, j) * NN_AT(y, t, j);
        }
        mg /= n > 0 ? n : 1;
        mgy /= n > 0 ? n : 1;
        for (int t = 0; t < n; t++)
            NN_AT(dx, t, j) = inv_sd[j] * (NN_AT(dy, t, j) - mg - NN_AT(y, t, j) * mgy);
    }
}
