/*
 * lifecycle.c - train, search, save and the final verdict of a learned
 * placer (learn/lifecycle.h).
 */
#include "learn/lifecycle.h"

int learn_training(const learn_options *lo)
{
    return !lo->weights || lo->finetune > 0;
}

void learn_train_limits(const op_place_ctx *ctx, const learn_options *lo, long *iterations,
                        double *budget_seconds)
{
    if (lo->weights) {
        *iterations = lo->finetune;
        *budget_seconds = ctx->budget_seconds; /* <= 0: no time limit */
        return;
    }
    *iterations = lo->iterations;
    *budget_seconds = ctx->budget_seconds > 0 ? ctx->budget_seconds
                                              : (lo->iterations > 0 ? 0 : LEARN_DEFAULT_BUDGET);
}

op_status learn_lifecycle(const learn_options *lo, const learn_stages *s, op_error *err)
{
    int training = learn_training(lo);
    op_status st = OP_OK;
    if (training)
        st = s->train(s->self, err);
    if (!st && !s->proven(s->self))
        st = s->search(s->self, err);
    if (!st && training && lo->save)
        st = s->save(s->self, lo->save, err);
    return st;
}

op_status learn_result(const op_place_ctx *ctx, const char *who, double step_us, int oom,
                       op_error *err)
{
    const op_problem *p = ctx->p;
    if (op_problem_at_bound(p, step_us, oom ? 1 : 0))
        op_progress(ctx, "%s: %.1f us reaches the proven bound (%s): optimal (proven)", who,
                    step_us, p->proven_method);
    if (oom && !ctx->best_effort)
        return op_fail(err, OP_EINFEASIBLE,
                       "%s: the best placement found runs out of memory "
                       "(train longer, or pass --best-effort)",
                       who);
    return OP_OK;
}
