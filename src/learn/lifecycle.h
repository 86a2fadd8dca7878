/*
 * learn/lifecycle.h - how a learned placer (SGDP, Trinity) runs on one
 * graph, the same for both:
 *
 *   train   a fresh policy (no --weights) for --iterations or the time
 *           budget (LEARN_DEFAULT_BUDGET without either), or --finetune N
 *           iterations from --weights (none: zero-shot);
 *   search  the placer's search from the trained policy (SGDP: the guided
 *           search or a round of samples; Trinity: a round of samples);
 *           skipped when the incumbent is already proven optimal;
 *   save    --save-weights after any training;
 *   final   the placer's own (copy the incumbent, Trinity's final choice),
 *           then learn_result: "optimal (proven)" when the result reaches
 *           the problem's proven bound (op_problem_at_bound, the check
 *           every search stops at), OP_EINFEASIBLE when it does not fit.
 *
 * Training and search stop as soon as their incumbent reaches the proven
 * bound (done when proven; the trainers' stop_at_bound, which the placers
 * set and `opplace train`, training for the policy's sake, does not):
 * nothing that fits is faster.
 */
#ifndef OPPLACE_LEARN_LIFECYCLE_H
#define OPPLACE_LEARN_LIFECYCLE_H

#include "learn/options.h"
#include "opplace/run_ctx.h"

/* Seconds of training without --iterations or a budget. */
#define LEARN_DEFAULT_BUDGET 60.0

/* Does the run train (a fresh policy, or --finetune from --weights)? */
int learn_training(const learn_options *lo);

/* Training's iteration count and time budget (<= 0: none): --finetune and
 * the command's budget with --weights; else --iterations and the budget,
 * or LEARN_DEFAULT_BUDGET without either. */
void learn_train_limits(const op_place_ctx *ctx, const learn_options *lo, long *iterations,
                        double *budget_seconds);

/* The placer's stages, on its own state `self`. */
typedef struct learn_stages {
    void *self;
    op_status (*train)(void *self, op_error *err);
    op_status (*search)(void *self, op_error *err);
    op_status (*save)(void *self, const char *path, op_error *err);
    int (*proven)(const void *self); /* the incumbent fits and reaches the bound */
} learn_stages;

/* Train (when learn_training), search (unless proven), save (after
 * training, with --save-weights). */
op_status learn_lifecycle(const learn_options *lo, const learn_stages *s, op_error *err);

/* The final placement's verdict: a progress line "who: ... optimal
 * (proven)" when a step of step_us that fits reaches ctx->p's proven
 * bound; OP_EINFEASIBLE when it runs out of memory (unless best effort). */
op_status learn_result(const op_place_ctx *ctx, const char *who, double step_us, int oom,
                       op_error *err);

#endif
