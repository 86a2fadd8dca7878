/*
 * ppo.c - Proximal Policy Optimization pieces for factored policies
 * (Schulman et al., 2017; SGDP Table 4; reusable by Trinity).
 *
 * What it implements: the moving-average reward baseline, advantages, and
 * the clipped surrogate objective with an entropy bonus, as a loss and its
 * gradient with respect to the policy's log-probabilities (learn/learn.h
 * has the formula).  The network and its backward pass belong to the
 * caller.
 *
 * Differences from textbook PPO: the ratio is per decision (per op), not
 * per whole placement, because a product of thousands of per-op ratios
 * leaves the clipping range at once; every decision of a rollout shares the
 * rollout's advantage (one reward per placement, no value network, as SGDP).
 */
#include "learn/learn.h"

#include <math.h>

ppo_config ppo_defaults(void)
{
    return (ppo_config){
        .clip_eps = 0.2,
        .entropy_coef = 0.01,
        .baseline_decay = 0.8,
        .normalize_adv = true,
        .epochs = 4,
        .lr = 3e-3,
        .max_grad_norm = 1.0,
    };
}

void ppo_baseline_init(ppo_baseline *b, double decay)
{
    b->value = 0.0;
    b->decay = decay;
    b->initialized = false;
}

static double mean_of(const double *x, int k)
{
    double s = 0.0;
    for (int i = 0; i < k; i++)
        s += x[i];
    return k > 0 ? s / k : 0.0;
}

void ppo_advantages(ppo_baseline *b, const double *rewards, int k, bool normalize, double *adv)
{
    double mean = mean_of(rewards, k);
    if (!b->initialized) {
        b->value = mean;
        b->initialized = true;
    }
    double var = 0.0;
    for (int i = 0; i < k; i++)
        var += (rewards[i] - mean) * (rewards[i] - mean);
    double sd = k > 1 ? sqrt(var / (k - 1)) : 0.0;
    double scale = normalize && sd > 1e-9 ? 1.0 / sd : 1.0;
    for (int i = 0; i < k; i++)
        adv[i] = (rewards[i] - b->value) * scale;
    b->value = b->decay * b->value + (1.0 - b->decay) * mean;
}

/* One decision's clipped-surrogate term and d(term)/d(logp). */
static double clipped_term(double logp, double old_logp, double adv, double eps, double *dterm,
                           int *clipped)
{
    double ratio = exp(logp - old_logp);
    double lo = 1.0 - eps, hi = 1.0 + eps;
    double unclipped = ratio * adv;
    double r_clip = ratio < lo ? lo : ratio > hi ? hi : ratio;
    double clipped_v = r_clip * adv;
    /* min(unclipped, clipped): the gradient flows only through the
     * unclipped branch when it is the smaller one */
    if (unclipped <= clipped_v) {
        *dterm = unclipped; /* d(ratio*adv)/dlogp = ratio*adv */
        *clipped = 0;
        return unclipped;
    }
    *dterm = 0.0;
    *clipped = 1;
    return clipped_v;
}

void ppo_factored_loss(const ppo_config *cfg, const nn_tensor *logp, const int *actions,
                       const double *old_logp, const double *adv, int k,
                       const unsigned char *decides, nn_tensor *dlogp, ppo_stats *stats)
{
    int rows = logp->rows;
    int m = 0;
    for (int i = 0; i < rows; i++)
        m += !decides || decides[i];
    ppo_stats s = {0};
    if (m == 0 || k == 0) {
        if (stats)
            *stats = s;
        return;
    }
    double w = 1.0 / ((double)k * (double)m);
    long n_clipped = 0;
    for (int r = 0; r < k; r++) {
        const int *act = actions + (size_t)r * (size_t)rows;
        const double *old = old_logp + (size_t)r * (size_t)rows;
        for (int i = 0; i < rows; i++) {
            if (decides && !decides[i])
                continue;
            int a = act[i];
            double lp = NN_AT(logp, i, a), dterm;
            int clipped;
            double term = clipped_term(lp, old[i], adv[r], cfg->clip_eps, &dterm, &clipped);
            s.surrogate -= w * term;
            NN_AT(dlogp, i, a) -= w * dterm;
            n_clipped += clipped;
            s.approx_kl += w * (old[i] - lp);
        }
    }
    /* entropy bonus: loss -= beta * mean_i H_i */
    double hsum = 0.0;
    for (int i = 0; i < rows; i++) {
        if (decides && !decides[i])
            continue;
        nn_tensor row = nn_tensor_rows(logp, i, 1), drow = nn_tensor_rows(dlogp, i, 1);
        double h, g = -cfg->entropy_coef / m;
        nn_entropy_forward(&row, &h);
        hsum += h;
        if (cfg->entropy_coef != 0.0)
            nn_entropy_backward(&row, &g, &drow);
    }
    s.entropy = hsum / m;
    s.loss = s.surrogate - cfg->entropy_coef * s.entropy;
    s.clip_frac = (double)n_clipped / ((double)k * (double)m);
    if (stats)
        *stats = s;
}
