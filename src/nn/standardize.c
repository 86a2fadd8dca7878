/*
 * standardize.c - each column of a matrix standardised over its rows, and
 * its backward pass.  The learned placers' plain heads use it over the
 * graph's ops (rows), a normalisation over the graph (as GraphNorm) that is
 * the same for any graph size; SGDP over the ops that decide (a colocation
 * group's followers copy its leader), so the statistics are the decisions'.
 */
#include <math.h>

#include "nn/nn.h"

void nn_standardize_columns(const nn_tensor *x, const unsigned char *rows, nn_tensor *y,
                            double *inv_sd)
{
    int n = x->rows, k = 0;
    for (int t = 0; t < n; t++)
        k += !rows || rows[t];
    for (int j = 0; j < x->cols; j++) {
        double m = 0.0, v = 0.0;
        for (int t = 0; t < n; t++)
            if (!rows || rows[t])
                m += NN_AT(x, t, j);
        m /= k > 0 ? k : 1;
        for (int t = 0; t < n; t++)
            if (!rows || rows[t])
                v += (NN_AT(x, t, j) - m) * (NN_AT(x, t, j) - m);
        v /= k > 0 ? k : 1;
        inv_sd[j] = 1.0 / sqrt(v + 1e-10);
        for (int t = 0; t < n; t++)
            NN_AT(y, t, j) = (NN_AT(x, t, j) - m) * inv_sd[j];
    }
}

/* y_t = (x_t - m) s with m, s from the rows R: dx_u = s (dy_u - [u in R]
 * (sum_t dy_t + y_u sum_t dy_t y_t) / |R|), the sums over every row (each
 * row's output depends on m and s). */
void nn_standardize_columns_backward(const nn_tensor *y, const unsigned char *rows,
                                     const double *inv_sd, const nn_tensor *dy, nn_tensor *dx)
{
    int n = y->rows, k = 0;
    for (int t = 0; t < n; t++)
        k += !rows || rows[t];
    for (int j = 0; j < y->cols; j++) {
        double mg = 0.0, mgy = 0.0;
        for (int t = 0; t < n; t++) {
            mg += NN_AT(dy, t, j);
            mgy += NN_AT(dy, t, j) * NN_AT(y, t, j);
        }
        mg /= k > 0 ? k : 1;
        mgy /= k > 0 ? k : 1;
        for (int t = 0; t < n; t++)
            NN_AT(dx, t, j) = inv_sd[j] * (NN_AT(dy, t, j) -
                                           (!rows || rows[t] ? mg + NN_AT(y, t, j) * mgy : 0.0));
    }
}

void nn_center_columns(nn_tensor *x, const unsigned char *rows)
{
    int k = 0;
    for (int t = 0; t < x->rows; t++)
        k += !rows || rows[t];
    for (int d = 0; d < x->cols; d++) {
        double m = 0.0;
        for (int t = 0; t < x->rows; t++)
            if (!rows || rows[t])
                m += NN_AT(x, t, d);
        m /= k > 0 ? k : 1;
        for (int t = 0; t < x->rows; t++)
            NN_AT(x, t, d) -= m;
    }
}

void nn_center_columns_backward(nn_tensor *dx, const unsigned char *rows)
{
    int k = 0;
    for (int t = 0; t < dx->rows; t++)
        k += !rows || rows[t];
    for (int d = 0; d < dx->cols; d++) {
        double m = 0.0;
        for (int t = 0; t < dx->rows; t++)
            m += NN_AT(dx, t, d);
        m /= k > 0 ? k : 1;
        for (int t = 0; t < dx->rows; t++)
            if (!rows || rows[t])
                NN_AT(dx, t, d) -= m;
    }
}
