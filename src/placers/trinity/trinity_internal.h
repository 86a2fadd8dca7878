/*
 * trinity_internal.h - what Trinity's files share but nobody else needs:
 * the group features of a sampled partition (Table 2) and their backward,
 * and the group masks.  Rows of the group-feature tensor are step-major:
 * row t*k + r is group t of rollout r, which is what the encoder reads at
 * step t.
 */
#ifndef OPPLACE_TRINITY_INTERNAL_H
#define OPPLACE_TRINITY_INTERNAL_H

#include "opplace/list_schedule.h"
#include "placers/trinity/trinity.h"

/* gf [(G*k) x trinity_group_feature_dim]: from batch->group (rollouts
 * 0..k-1) and the ops' type embeddings temb [n x type_dim].  count [k*G]
 * receives the member counts (index r*G+t). */
void trinity_group_features(const trinity_graph *tg, const trinity_batch *b, int k,
                            const nn_tensor *temb, nn_tensor *gf, double *count);
/* dtemb += the gradient through the mean type embedding. */
void trinity_group_features_backward(const trinity_graph *tg, const trinity_batch *b, int k,
                                     const double *count, const nn_tensor *dgf,
                                     nn_tensor *dtemb);
/* batch->gmask and gdecides for rollouts 0..k-1 from batch->group. */
void trinity_group_masks(const trinity_graph *tg, trinity_batch *b, int k, const double *count);

/* anchor[i] in [0, G): op i's METIS cluster numbered in dataflow order
 * (trinity_anchor.c), the centre of the order prior. */
op_status trinity_anchor_groups(const op_problem *p, int G, uint64_t seed, int *anchor,
                                op_error *err);

/* STRUCTURE GROUPS (trinity_anchor.c): label[i] in [0, G), a k-means
 * clustering (k-means++ seeding from seed, at most 25 Lloyd iterations,
 * stopped early past deadline > 0) of the deciding ops' Node2vec vectors
 * (the structure feature of Table 1), clusters numbered by their members'
 * mean topological position; followers take their leader's.  Without
 * Node2vec columns: the topological position scaled to [0, G).  The
 * groups the partition network is fitted to before PPO
 * (trinity_train_config.structure_init). */
op_status trinity_structure_groups(const trinity_graph *tg, int G, uint64_t seed,
                                   double deadline, int *label, op_error *err);

/* Blocks of a reference placement ref (per op): block_dev[t] for every
 * group and anchor[i] within the block of ref[i] (trinity_anchor.c).
 * Leaves both unchanged when G is smaller than the devices ref uses. */
op_status trinity_anchor_blocks(const op_problem *p, int G, uint64_t seed, const int *ref,
                                int *anchor, int *block_dev, op_error *err);

/* The reference placement (trinity_warm.c): the best of the comma-separated
 * heuristics (op_portfolio_best); name receives the winner. */
op_status trinity_reference_place(const op_problem *p, const char *heuristics, uint64_t seed,
                                  int *device_of, char *name, size_t name_len, op_error *err);

/* A simulator, its result, a placement to fill and a per-op priority
 * buffer (trinity_reward.c): what the boundary moves and the final choice
 * judge their candidates on. */
typedef struct trinity_bench {
    op_sim *sim;
    op_sim_result r;
    op_placement pl;
    double *prio;  /* n */
    int64_t *cap;  /* nd + 1 */
    int have_r, have_pl;
} trinity_bench;
op_status trinity_bench_init(trinity_bench *b, const op_problem *p, op_error *err);
void trinity_bench_destroy(trinity_bench *b);

/* The one judge of a placement pl on sim (result into r): first-ready-first
 * (or pl's own order) when prio is NULL, else the list schedule of the
 * priorities prio under the per-device memory cap `cap` (opplace/
 * list_schedule.h); *m its metrics under rc.  The trainer's rollouts, the
 * boundary moves and the final choice all judge through it. */
op_status trinity_judge(const op_problem *p, op_sim *sim, const op_placement *pl,
                        op_sim_result *r, const double *prio, const int64_t *cap,
                        const trinity_reward_config *rc, trinity_metrics *m, op_error *err);

/* An op_order_visit (opplace/search.h) judging the placement pl by each
 * priority and cap the order search offers (OP_PRIORITY_FIFO: first-ready-
 * first), through trinity_judge; the placement's priorities are computed
 * once per priority into prio (prio_of: the priority it holds, start with
 * -1).  keep(arg, k, share, m) receives every variant's metrics.  Past
 * the deadline (or on Ctrl-C) the search stops after the current variant. */
typedef struct trinity_order_judge {
    const op_problem *p;
    op_sim *sim;
    op_placement *pl;
    op_sim_result *r;
    const trinity_reward_config *rc;
    double *prio;
    int prio_of;
    double deadline; /* op_seconds_now() time after which the order search stops (0: none) */
    void (*keep)(void *arg, op_priority k, double share, const trinity_metrics *m);
    void *arg;
} trinity_order_judge;
op_status trinity_order_judge_visit(void *arg, op_priority k, double share, const int64_t *cap,
                                    int *stop, op_error *err);

/* The partition's PPO loss with the device-marginal ratio (cfg.marginal,
 * trinity_train.c): rollout r's op i is scored by q_i(d) = the sum of its
 * group probabilities exp(lp[i][g]) over the groups g rollout r maps to d
 * (b->device), at d = the device of its group.  trinity_marginal_old writes
 * log q_i(d_i) of the sampling pass's lp into b->old_part; the loss adds
 * dL/dlp into d_part (the same shape as lp, n x G) and fills *out (its
 * loss and surrogate summed, the rest means over the rollouts). */
void trinity_marginal_old(const trinity_graph *tg, trinity_batch *b, int k, const nn_tensor *lp);
op_status trinity_marginal_loss(nn_arena *ar, const ppo_config *cfg, const trinity_graph *tg,
                                const trinity_batch *b, const double *adv, int k,
                                const nn_tensor *lp, nn_tensor *d_part, ppo_stats *out,
                                op_error *err);

#endif
