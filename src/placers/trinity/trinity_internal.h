/*
 * trinity_internal.h - what Trinity's files share but nobody else needs:
 * the group features of a sampled partition (Table 2) and their backward,
 * and the group masks.  Rows of the group-feature tensor are step-major:
 * row t*k + r is group t of rollout r, which is what the encoder reads at
 * step t.
 */
#ifndef OPPLACE_TRINITY_INTERNAL_H
#define OPPLACE_TRINITY_INTERNAL_H

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

/* Blocks of a reference placement ref (per op): block_dev[t] for every
 * group and anchor[i] within the block of ref[i] (trinity_anchor.c).
 * Leaves both unchanged when G is smaller than the devices ref uses. */
op_status trinity_anchor_blocks(const op_problem *p, int G, uint64_t seed, const int *ref,
                                int *anchor, int *block_dev, op_error *err);

/* The reference placement (trinity_warm.c): the best of the comma-separated
 * heuristics (sgdp_reference); name receives the winner. */
op_status trinity_reference_place(const op_problem *p, const char *heuristics, uint64_t seed,
                                  int *device_of, char *name, size_t name_len, op_error *err);

#endif
