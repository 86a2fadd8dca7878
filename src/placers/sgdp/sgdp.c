/*
 * sgdp.c - the SGDP placer (the SGDP paper): a learned, single-shot
 * placement policy (src/learn/, placers/sgdp/sgdp.h) used three ways:
 *
 *   --weights W.bin             zero-shot: the trained policy places the graph
 *                               without training on it, by the policy-guided
 *                               search below; the paper's "zero-shot" is
 *                               inference from the policy (--paper)
 *   --weights W.bin --finetune N  N PPO iterations on this graph first
 *                               (the paper's "fine-tuned")
 *   (no weights)                SGDP-one: a fresh policy trained on this graph
 *                               alone for --budget-seconds (default 60) or
 *                               --iterations, returning the best placement seen
 *
 * --paper: exactly the paper's method: no reference placement, units,
 * warm start or search; SGDP-one is PPO on the graph alone (the best
 * placement sampled wins) and zero-shot is one-shot inference, the
 * policy's most likely placement (one forward pass).  It refuses the
 * options below that switch on something beyond the paper.
 *
 * Options: --samples K (rollouts per PPO iteration and zero-shot samples,
 * default 32), --threads T (simulation threads, default: all cores),
 * --lr, --epochs, --entropy, --save-weights FILE (write the policy after
 * training or fine-tuning).  --seed makes every run reproducible (for a
 * fixed iteration count; a time budget stops after however many iterations
 * fit).  Memory: rollouts that run out of memory are penalised in the
 * reward; if the best placement found still does not fit, the placer
 * returns OP_EINFEASIBLE unless --best-effort.  Eligibility, pins and
 * colocation are enforced by the policy's action mask.
 *
 * Beyond the paper (src/placers/sgdp/sgdp_warm.c): --heuristics LIST (default
 * expert,metis,m-topo,single; "none": no reference) gives a reference
 * placement that the policy sees as input (then the best placement found
 * so far), --units N (256; 0 = per op) decision units built from it,
 * --warm-start 0|1 (default 1 without --weights, 0 with) clones the
 * reference before PPO and seeds the best-seen record with it, so SGDP-one
 * never returns worse than the reference; with --weights and no warm start
 * the result is the policy's own.  With --weights the samples come from
 * the policy calibrated to move 2 decisions off its input per sample on
 * average (src/placers/sgdp/sgdp_train.c, "calibrated proposals").
 *
 * The guided search (with --weights; beyond the paper;
 * src/placers/sgdp/sgdp_search.c): a steepest descent from the reference input
 * (after fine-tuning: the incumbent) whose candidate moves are the policy's
 * ranking: each of SGDP_DEFAULT_SEARCH_ROUNDS rounds (20) runs the policy on the
 * incumbent, simulates the 64 decision units it most wants to move (each
 * moved alone to its most likely other device), keeps the best if it
 * improves, adds the other improving single moves on top one by one, and
 * feeds the incumbent back as the policy's input; it stops at a local
 * optimum.  The result is never worse than the input placement.
 *
 * Without --weights (and with --paper): after training, one round of the
 * greedy placement + --samples samples (--paper: the greedy one alone), no
 * weight update; the policy's reference input is the best placement seen
 * so far.
 */
#include <string.h>

#include "core/parallel.h"
#include "learn/lifecycle.h"
#include "placers/sgdp/sgdp.h"
#include "placers/placer_util.h"

typedef struct sgdp_opts {
    learn_options lo;   /* the options shared with Trinity (learn/options.h) */
    const char *search; /* "guided" or "sample" */
    long warm, rounds;
} sgdp_opts;

/* options that switch on or tune something beyond the paper */
static const char *const BEYOND[] = {"heuristics", "units", "warm-start", NULL};

static op_status read_opts(op_options *o, sgdp_opts *s, op_error *err)
{
    sgdp_train_config d = sgdp_train_defaults();
    learn_option_defaults ld = {.who = "sgdp", .beyond = BEYOND,
                                .heuristics = SGDP_DEFAULT_HEURISTICS, .samples = d.samples,
                                .epochs = d.ppo.epochs};
    learn_options *lo = &s->lo;
    op_status st = learn_options_read(o, &ld, 1, lo, err);
    if (st)
        return st;
    /* without a reference, the plain policy's rate and bonus (sgdp.h) */
    lo->lr = learn_or(lo->lr, lo->heuristics ? d.ppo.lr : SGDP_PLAIN_LR);
    lo->entropy = learn_or(lo->entropy, lo->heuristics ? d.ppo.entropy_coef : SGDP_PLAIN_ENTROPY);
    if (lo->paper) { /* the paper: no reference, one-shot inference after any training */
        s->warm = 0;
        s->search = "sample";
        s->rounds = 1;
        return OP_OK;
    }
    /* with weights, the guided search (SGDP_DEFAULT_SEARCH_ROUNDS rounds);
     * without, the trained policy's greedy placement and one round of samples */
    s->search = lo->weights ? "guided" : "sample";
    s->rounds = lo->weights ? SGDP_DEFAULT_SEARCH_ROUNDS : 1;
    return op_options_int(o, "warm-start", lo->weights ? 0 : 1, 0, 1, &s->warm, err);
}

static sgdp_policy *make_policy(const op_place_ctx *ctx, const sgdp_opts *s, op_error *err)
{
    if (s->lo.weights)
        return sgdp_policy_from_file(s->lo.weights, err);
    sgdp_config cfg = sgdp_config_default();
    if (!s->lo.heuristics)
        cfg.head_init = SGDP_PLAIN_HEAD_INIT; /* sgdp.h */
    if (ctx->p->nd > cfg.max_devices)
        cfg.max_devices = ctx->p->nd;
    return sgdp_policy_new(&cfg, ctx->seed, err);
}

static sgdp_train_config train_config(const op_place_ctx *ctx, const sgdp_opts *s)
{
    const learn_options *lo = &s->lo;
    sgdp_train_config tc = sgdp_train_defaults();
    tc.samples = (int)lo->samples;
    tc.threads = (int)lo->threads;
    tc.seed = ctx->seed;
    tc.ppo.epochs = (int)lo->epochs;
    tc.ppo.lr = lo->lr;
    tc.ppo.entropy_coef = lo->entropy;
    tc.progress = ctx;
    tc.deadline = ctx->deadline; /* the command's: every stage obeys it */
    tc.stop_at_bound = 1;        /* done when proven */
    /* after training: the search below, greedy + samples rollouts, about
     * an iteration's (--paper: the greedy one alone) */
    tc.reserve_iterations = lo->paper ? 1.0 / (double)(lo->samples + 1) : 1.0;
    tc.heuristics = lo->heuristics;
    tc.unit_target = (int)lo->units;
    tc.warm_start = lo->heuristics && s->warm;
    /* calibrated proposals around the input: zero-shot and fine-tuning */
    tc.proposal_moves = lo->heuristics && lo->weights ? SGDP_DEFAULT_MOVES : 0;
    learn_train_limits(ctx, lo, &tc.iterations, &tc.budget_seconds);
    return tc;
}

/* The lifecycle's stages (learn/lifecycle.h) on one trainer. */
typedef struct run {
    const op_place_ctx *ctx;
    const sgdp_opts *s;
    sgdp_policy *pol;
    sgdp_trainer *t;
} run;

static op_status stage_train(void *self, op_error *err)
{
    return sgdp_trainer_run(((run *)self)->t, err);
}

static op_status stage_search(void *self, op_error *err)
{
    const run *r = self;
    const sgdp_opts *s = r->s;
    op_status st = OP_OK;
    if (op_par_size() == 1 && op_seconds_left(r->ctx) <= 0 &&
        sgdp_trainer_best(r->t, 0).placement) {
        /* a search of 10^5 ops takes seconds: out of time, the best so far
         * (one rank: MPI ranks must run the same passes) */
        op_progress(r->ctx, "sgdp: no final search (out of time)");
        return OP_OK;
    }
    if (!strcmp(s->search, "guided")) {
        sgdp_search_config sc = sgdp_search_defaults();
        sc.rounds = (int)s->rounds;
        return sgdp_trainer_search(r->t, 0, &sc, err);
    }
    /* the paper's inference: the policy's most likely placement, once */
    for (long k = 0; !st && k < s->rounds; k++)
        st = sgdp_trainer_evaluate(r->t, 0, s->lo.paper ? 0 : (int)s->lo.samples, err);
    return st;
}

static op_status stage_save(void *self, const char *path, op_error *err)
{
    return sgdp_policy_save(((run *)self)->pol, path, err);
}

static int stage_proven(const void *self)
{
    return sgdp_trainer_proven(((const run *)self)->t, 0);
}

static op_status train_and_place(const op_place_ctx *ctx, const sgdp_opts *s, sgdp_policy *pol,
                                 op_placement *out, op_error *err)
{
    sgdp_train_config tc = train_config(ctx, s);
    const op_problem *probs[1] = {ctx->p};
    double t0 = op_seconds_now();
    sgdp_trainer *t = sgdp_trainer_new(pol, probs, 1, &tc, err);
    if (!t)
        return err && err->code ? err->code : OP_ENOMEM;
    if (ctx->deadline > 0)
        op_progress(ctx, "sgdp: features%s of %d ops in %.1f s, %.1f s left",
                    s->lo.heuristics ? " and reference" : "", ctx->p->n, op_seconds_now() - t0,
                    op_seconds_left(ctx));
    run r = {ctx, s, pol, t};
    learn_stages ls = {&r, stage_train, stage_search, stage_save, stage_proven};
    op_status st = learn_lifecycle(&s->lo, &ls, err);
    sgdp_best b = sgdp_trainer_best(t, 0);
    if (!st && !b.placement) /* stopped before a first placement: the CLI falls back */
        st = op_fail(err, OP_EINTERNAL, "sgdp: %s before its first placement",
                     op_interrupted() ? "stopped at Ctrl-C" : "out of time");
    if (!st) {
        memcpy(out->device_of, b.placement->device_of, (size_t)ctx->p->n * sizeof(int));
        st = learn_result(ctx, "sgdp", b.step_time_us, b.oom, err);
    }
    sgdp_trainer_free(t);
    return st;
}

double sgdp_pass_deadline;

static op_status place_sgdp(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    sgdp_opts s;
    op_status st = read_opts(ctx->opts, &s, err);
    if (st)
        return st;
    sgdp_policy *pol = make_policy(ctx, &s, err);
    if (!pol)
        return err && err->code ? err->code : OP_ENOMEM;
    double was = sgdp_pass_deadline;
    sgdp_pass_deadline = ctx->deadline; /* its passes stop there too */
    st = train_and_place(ctx, &s, pol, out, err);
    sgdp_pass_deadline = was;
    sgdp_policy_free(pol);
    return st;
}

/* What read_opts reads. */
static const op_opt_decl SGDP_OPTIONS[] = {
    LEARN_OPTION_DECLS("exactly the paper's method (none of the additions)", "32"),
    {"warm-start", OP_OPT_INT, 0, 1, NULL, NULL, "imitate the heuristics first"},
    {NULL, 0, 0, 0, NULL, NULL, NULL},
};

const op_placer op_placer_sgdp = {
    .name = "sgdp",
    .summary = "learned one-shot policy (GraphSAGE + segment attention) trained by PPO; "
               "--weights for zero-shot, --finetune N",
    .source = "Zhou et al., SGDP, IEEE Micro 2020",
    .place = place_sgdp,
    .slow = 1,
    .options = SGDP_OPTIONS,
};
