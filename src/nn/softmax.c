/*
 * softmax.c - masked softmax, log-softmax, entropy and sampling: the policy
 * head of both learned placers.
 *
 * A mask marks the actions a state allows (e.g. devices without room);
 * masked logits are treated as -infinity, so their probability is exactly 0
 * and they receive no gradient.  Log-softmax is computed directly (max
 * shift, log-sum-exp) rather than as log(softmax), so log-probabilities of
 * unlikely actions stay accurate, which PPO's ratios need.  Entropy (the
 * PPO exploration bonus) is taken from log-probabilities for the same
 * reason.  Sampling draws through a seeded nn_rng.
 */
#include "nn_internal.h"

#include <assert.h>
#include <math.h>

int nn_softmax_row_inplace(double *z, int n)
{
    double mx = -INFINITY;
    int allowed = 0;
    for (int j = 0; j < n; j++)
        if (z[j] != -INFINITY) {
            allowed++;
            if (z[j] > mx)
                mx = z[j];
        }
    if (!allowed) {
        for (int j = 0; j < n; j++)
            z[j] = 0.0;
        return 0;
    }
    double sum = 0.0;
    for (int j = 0; j < n; j++) {
        z[j] = z[j] == -INFINITY ? 0.0 : exp(z[j] - mx);
        sum += z[j];
    }
    double inv = 1.0 / sum;
    for (int j = 0; j < n; j++)
        z[j] *= inv;
    return allowed;
}

void nn_softmax_row_backward(const double *p, const double *dp, double *dz, int n)
{
    double dot = 0.0;
    for (int j = 0; j < n; j++)
        dot += p[j] * dp[j];
    for (int j = 0; j < n; j++)
        dz[j] += p[j] * (dp[j] - dot);
}

/* Copy a row of logits into out with masked entries set to -INFINITY. */
static void masked_row(const nn_tensor *logits, const unsigned char *mask, int i, double *out)
{
    for (int j = 0; j < logits->cols; j++) {
        bool ok = !mask || mask[(size_t)i * (size_t)logits->cols + (size_t)j];
        out[j] = ok ? NN_AT(logits, i, j) : -INFINITY;
    }
}

op_status nn_softmax_forward(const nn_tensor *logits, const unsigned char *mask, nn_tensor *p,
                             op_error *err)
{
    assert(nn_tensor_same_shape(logits, p));
    for (int i = 0; i < logits->rows; i++) {
        double *row = &NN_AT(p, i, 0);
        masked_row(logits, mask, i, row);
        if (logits->cols > 0 && nn_softmax_row_inplace(row, logits->cols) == 0)
            return op_fail(err, OP_EINPUT, "softmax: row %d has every entry masked", i);
    }
    return OP_OK;
}

void nn_softmax_backward(const nn_tensor *p, const nn_tensor *dp, nn_tensor *dlogits)
{
    if (!dlogits)
        return;
    assert(nn_tensor_same_shape(p, dp) && nn_tensor_same_shape(p, dlogits));
    for (int i = 0; i < p->rows; i++)
        nn_softmax_row_backward(&NN_AT(p, i, 0), &NN_AT(dp, i, 0), &NN_AT(dlogits, i, 0),
                                p->cols);
}

op_status nn_log_softmax_forward(const nn_tensor *logits, const unsigned char *mask,
                                 nn_tensor *logp, op_error *err)
{
    assert(nn_tensor_same_shape(logits, logp));
    int n = logits->cols;
    for (int i = 0; i < logits->rows; i++) {
        double *row = &NN_AT(logp, i, 0);
        masked_row(logits, mask, i, row);
        double mx = -INFINITY;
        for (int j = 0; j < n; j++)
            if (row[j] > mx)
                mx = row[j];
        if (n > 0 && mx == -INFINITY)
            return op_fail(err, OP_EINPUT, "log-softmax: row %d has every entry masked", i);
        double sum = 0.0;
        for (int j = 0; j < n; j++)
            if (row[j] != -INFINITY)
                sum += exp(row[j] - mx);
        double lse = mx + log(sum);
        for (int j = 0; j < n; j++)
            if (row[j] != -INFINITY)
                row[j] -= lse;
    }
    return OP_OK;
}

void nn_log_softmax_backward(const nn_tensor *logp, const nn_tensor *dlogp, nn_tensor *dlogits)
{
    if (!dlogits)
        return;
    assert(nn_tensor_same_shape(logp, dlogp) && nn_tensor_same_shape(logp, dlogits));
    for (int i = 0; i < logp->rows; i++) {
        double total = 0.0;
        for (int j = 0; j < logp->cols; j++)
            if (NN_AT(logp, i, j) != -INFINITY)
                total += NN_AT(dlogp, i, j);
        for (int j = 0; j < logp->cols; j++) {
            double lp = NN_AT(logp, i, j);
            if (lp != -INFINITY)
                NN_AT(dlogits, i, j) += NN_AT(dlogp, i, j) - exp(lp) * total;
        }
    }
}

void nn_entropy_forward(const nn_tensor *logp, double *h)
{
    for (int i = 0; i < logp->rows; i++) {
        double s = 0.0;
        for (int j = 0; j < logp->cols; j++) {
            double lp = NN_AT(logp, i, j);
            if (lp != -INFINITY)
                s -= exp(lp) * lp;
        }
        h[i] = s;
    }
}

void nn_entropy_backward(const nn_tensor *logp, const double *dh, nn_tensor *dlogp)
{
    if (!dlogp)
        return;
    assert(nn_tensor_same_shape(logp, dlogp));
    for (int i = 0; i < logp->rows; i++)
        for (int j = 0; j < logp->cols; j++) {
            double lp = NN_AT(logp, i, j);
            if (lp != -INFINITY)
                NN_AT(dlogp, i, j) -= dh[i] * exp(lp) * (lp + 1.0);
        }
}

int nn_sample_categorical(const double *probs, int n, nn_rng *rng)
{
    double total = 0.0;
    int last = -1;
    for (int i = 0; i < n; i++)
        if (probs[i] > 0.0) {
            total += probs[i];
            last = i;
        }
    if (last < 0)
        return -1;
    double u = nn_rng_uniform(rng) * total, acc = 0.0;
    for (int i = 0; i < n; i++) {
        if (probs[i] <= 0.0)
            continue;
        acc += probs[i];
        if (u < acc)
            return i;
    }
    return last; /* rounding left u just past the sum */
}

int nn_argmax(const double *x, int n)
{
    int best = n > 0 ? 0 : -1;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}
