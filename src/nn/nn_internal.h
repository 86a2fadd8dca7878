/*
 * nn_internal.h - helpers shared by the files of src/nn and by no one else.
 *
 * Layers register their weights as "prefix.suffix"; row-wise softmax is used
 * by the public softmax layer and by both attention layers, which mark
 * forbidden positions with -INFINITY before calling it.
 */
#ifndef OPPLACE_NN_INTERNAL_H
#define OPPLACE_NN_INTERNAL_H

#include "nn/nn.h"

/* nn_params_add with the name "prefix.suffix". */
op_status nn_add_named_param(nn_params *ps, const char *prefix, const char *suffix, int rows,
                             int cols, nn_param **out, op_error *err);

/* In place: z[j] <- softmax(z)[j], where entries equal to -INFINITY count as
 * masked and become exactly 0.  Returns the number of unmasked entries (0
 * means the row was left all 0). */
int nn_softmax_row_inplace(double *z, int n);

/* dz[j] += p[j] * (dp[j] - sum_k p[k] dp[k]) for one row. */
void nn_softmax_row_backward(const double *p, const double *dp, double *dz, int n);

#endif
