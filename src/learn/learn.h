/*
 * learn/learn.h - reinforcement-learning pieces shared by the learned
 * placers (SGDP now, Trinity later): Proximal Policy Optimization (Schulman
 * et al., 2017) for policies that factor into many independent decisions.
 *
 * A placement policy emits one categorical decision per op (SGDP, eq. 4) or
 * per group (Trinity).  A rollout k is a whole placement with one scalar
 * reward r_k; every decision i of that rollout shares its advantage A_k.
 * PPO's probability ratio is taken per decision, rho_ki = pi(a_ki) /
 * pi_old(a_ki), so a graph of 10^4 ops does not turn the product of 10^4
 * ratios into 0 or infinity:
 *
 *   L = -1/(K M) sum_k sum_i min(rho_ki A_k, clip(rho_ki, 1-eps, 1+eps) A_k)
 *       - beta/M sum_i H(pi_i)
 *
 * (M = number of decision rows).  The caller owns the network: it runs the
 * forward pass to get log-probabilities logp [rows x actions], asks
 * ppo_factored_loss for the loss and dL/dlogp, and backpropagates that.
 * With K rollouts from one policy this needs one forward and one backward
 * pass per PPO epoch, whatever K is.
 *
 *   ppo_baseline b;  ppo_baseline_init(&b, 0.8);
 *   ppo_advantages(&b, rewards, K, true, adv);
 *   for (epoch...) { forward -> logp; zero dlogp; nn_params_zero_grad;
 *                    ppo_factored_loss(&cfg, &logp, actions, old_logp, adv, K,
 *                                      decides, &dlogp, &stats);
 *                    backward(dlogp); clip; adam step; }
 */
#ifndef OPPLACE_LEARN_H
#define OPPLACE_LEARN_H

#include <stdbool.h>

#include "nn/nn.h"

typedef struct ppo_config {
    double clip_eps;       /* 0.2 (Table 4) */
    double entropy_coef;   /* beta; Table 4's 0.5 is for a sum over ops, ours is a mean */
    double baseline_decay; /* moving-average baseline: b <- decay b + (1-decay) mean(r) */
    bool normalize_adv;    /* divide advantages by the batch's reward std */
    int epochs;            /* passes over each batch of rollouts (Table 4: 20) */
    double lr;             /* Adam learning rate */
    double max_grad_norm;  /* global gradient clipping */
} ppo_config;

ppo_config ppo_defaults(void);

/* A moving average of past mean rewards, the REINFORCE/PPO baseline. */
typedef struct ppo_baseline {
    double value, decay;
    bool initialized;
} ppo_baseline;

void ppo_baseline_init(ppo_baseline *b, double decay);
/* adv[k] = rewards[k] - b (b = the batch mean the first time), then b
 * moves towards the batch mean.  With normalize, advantages are divided by
 * the batch's reward standard deviation (when it is not ~0). */
void ppo_advantages(ppo_baseline *b, const double *rewards, int k, bool normalize, double *adv);

typedef struct ppo_stats {
    double loss;       /* surrogate + entropy term, the minimised value */
    double surrogate;  /* the clipped-surrogate part */
    double entropy;    /* mean entropy of the decision rows */
    double clip_frac;  /* fraction of decisions whose ratio was clipped */
    double approx_kl;  /* mean of old_logp - logp over decisions */
} ppo_stats;

/* logp [rows x A]: current log-probabilities (masked entries -INFINITY).
 * actions[k*rows + i], old_logp[k*rows + i]: rollout k's choice at row i and
 * its log-probability under the policy that sampled it.  decides[i] != 0
 * marks the rows that are decisions (rows copied from another decision,
 * e.g. colocated ops, are not); NULL = every row.  Adds dL/dlogp into dlogp
 * and fills stats. */
void ppo_factored_loss(const ppo_config *cfg, const nn_tensor *logp, const int *actions,
                       const double *old_logp, const double *adv, int k,
                       const unsigned char *decides, nn_tensor *dlogp, ppo_stats *stats);

#endif
