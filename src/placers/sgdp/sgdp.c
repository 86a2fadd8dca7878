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
#include <stdlib.h>
#include <string.h>

#include "placers/sgdp/sgdp.h"
#include "placers/placer_util.h"

typedef struct sgdp_opts {
    int paper;
    const char *weights, *save, *heuristics;
    const char *search; /* "guided" or "sample" */
    long finetune, iterations, samples, threads, epochs, units, warm, rounds;
    double lr, entropy;
} sgdp_opts;

/* options that switch on or tune something beyond the paper */
static const char *const BEYOND[] = {"heuristics", "units", "warm-start", NULL};

static op_status read_opts(op_options *o, sgdp_opts *s, op_error *err)
{
    op_status st;
    s->paper = op_options_has(o, "paper");
    if (s->paper)
        for (int i = 0; BEYOND[i]; i++)
            if (op_options_has(o, BEYOND[i]))
                return op_fail(err, OP_EUSAGE,
                               "sgdp: --%s is beyond the paper; drop it or drop --paper",
                               BEYOND[i]);
    s->weights = op_options_str(o, "weights", NULL);
    s->save = op_options_str(o, "save-weights", NULL);
    sgdp_train_config d = sgdp_train_defaults();
    if ((st = op_options_int(o, "finetune", 0, 0, 1000000, &s->finetune, err)) ||
        (st = op_options_int(o, "iterations", 0, 0, 100000000, &s->iterations, err)) ||
        (st = op_options_int(o, "samples", d.samples, 1, 4096, &s->samples, err)) ||
        (st = op_options_int(o, "threads", 0, 0, 64, &s->threads, err)) ||
        (st = op_options_int(o, "epochs", d.ppo.epochs, 1, 1000, &s->epochs, err)) ||
        (st = op_options_double(o, "lr", d.ppo.lr, 0, 10, &s->lr, err)) ||
        (st = op_options_double(o, "entropy", d.ppo.entropy_coef, 0, 100, &s->entropy, err)))
        return st;
    if (s->paper || !strcmp(op_options_str(o, "heuristics", ""), "none")) {
        /* without a reference (opplace/sgdp.h) */
        if (!op_options_has(o, "entropy"))
            s->entropy = SGDP_PLAIN_ENTROPY;
        if (!op_options_has(o, "lr"))
            s->lr = SGDP_PLAIN_LR;
    }
    if (s->finetune && !s->weights)
        return op_fail(err, OP_EUSAGE, "sgdp: --finetune needs --weights FILE");
    if (s->paper) { /* the paper: no reference, one-shot inference after any training */
        s->heuristics = NULL;
        s->units = 0;
        s->warm = 0;
        s->search = "sample";
        s->rounds = 1;
        return OP_OK;
    }
    if ((st = op_options_int(o, "units", SGDP_DEFAULT_UNITS, 0, 100000000, &s->units, err)) ||
        (st = op_options_int(o, "warm-start", s->weights ? 0 : 1, 0, 1, &s->warm, err)))
        return st;
    /* with weights, the guided search (SGDP_DEFAULT_SEARCH_ROUNDS rounds);
     * without, the trained policy's greedy placement and one round of samples */
    s->search = s->weights ? "guided" : "sample";
    s->rounds = s->weights ? SGDP_DEFAULT_SEARCH_ROUNDS : 1;
    s->heuristics = op_options_str(o, "heuristics", SGDP_DEFAULT_HEURISTICS);
    if (!strcmp(s->heuristics, "none"))
        s->heuristics = NULL;
    return OP_OK;
}

static sgdp_policy *make_policy(const op_place_ctx *ctx, const sgdp_opts *s, op_error *err)
{
    if (s->weights)
        return sgdp_policy_from_file(s->weights, err);
    sgdp_config cfg = sgdp_config_default();
    if (!s->heuristics)
        cfg.head_init = SGDP_PLAIN_HEAD_INIT; /* opplace/sgdp.h */
    if (ctx->p->nd > cfg.max_devices)
        cfg.max_devices = ctx->p->nd;
    return sgdp_policy_new(&cfg, ctx->seed, err);
}

static op_status train_and_place(const op_place_ctx *ctx, const sgdp_opts *s, sgdp_policy *pol,
                                 op_placement *out, op_error *err)
{
    sgdp_train_config tc = sgdp_train_defaults();
    tc.samples = (int)s->samples;
    tc.threads = (int)s->threads;
    tc.seed = ctx->seed;
    tc.ppo.epochs = (int)s->epochs;
    tc.ppo.lr = s->lr;
    tc.ppo.entropy_coef = s->entropy;
    tc.progress = ctx;
    tc.deadline = ctx->deadline; /* the command's: every stage obeys it */
    /* after training: the evaluation below, greedy + samples rollouts, about
     * an iteration's (--paper: the greedy one alone) */
    tc.reserve_iterations = s->paper ? 1.0 / (double)(s->samples + 1) : 1.0;
    tc.heuristics = s->heuristics;
    tc.unit_target = (int)s->units;
    tc.warm_start = s->heuristics && s->warm;
    /* calibrated proposals around the input: zero-shot and fine-tuning */
    tc.proposal_moves = s->heuristics && s->weights ? SGDP_DEFAULT_MOVES : 0;
    int training = !s->weights || s->finetune > 0;
    if (s->weights) {
        tc.iterations = s->finetune;
        tc.budget_seconds = ctx->budget_seconds; /* <= 0: no time limit */
    } else {
        tc.iterations = s->iterations;
        tc.budget_seconds = ctx->budget_seconds > 0 ? ctx->budget_seconds
                                                    : (s->iterations > 0 ? 0 : 60);
    }
    const op_problem *probs[1] = {ctx->p};
    double t0 = op_seconds_now();
    sgdp_trainer *t = sgdp_trainer_new(pol, probs, 1, &tc, err);
    if (!t)
        return err && err->code ? err->code : OP_ENOMEM;
    if (ctx->deadline > 0)
        op_progress(ctx, "sgdp: features%s of %d ops in %.1f s, %.1f s left",
                    s->heuristics ? " and reference" : "", ctx->p->n, op_seconds_now() - t0,
                    op_seconds_left(ctx));
    op_status st = OP_OK;
    if (training)
        st = sgdp_trainer_run(t, err);
    if (!strcmp(s->search, "guided")) {
        sgdp_search_config sc = sgdp_search_defaults();
        sc.rounds = (int)s->rounds;
        if (!st)
            st = sgdp_trainer_search(t, 0, &sc, err);
    } else {
        /* the paper's inference: the policy's most likely placement, once */
        for (long r = 0; !st && r < s->rounds; r++)
            st = sgdp_trainer_evaluate(t, 0, s->paper ? 0 : (int)s->samples, err);
    }
    if (!st && training && s->save)
        st = sgdp_policy_save(pol, s->save, err);
    if (!st) {
        sgdp_best b = sgdp_trainer_best(t, 0);
        memcpy(out->device_of, b.placement->device_of, (size_t)ctx->p->n * sizeof(int));
        if (b.oom && !ctx->best_effort)
            st = op_fail(err, OP_EINFEASIBLE,
                         "sgdp: the best placement found runs out of memory "
                         "(train longer, or pass --best-effort)");
    }
    sgdp_trainer_free(t);
    return st;
}

static op_status place_sgdp(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    sgdp_opts s;
    op_status st = read_opts(ctx->opts, &s, err);
    if (st)
        return st;
    sgdp_policy *pol = make_policy(ctx, &s, err);
    if (!pol)
        return err && err->code ? err->code : OP_ENOMEM;
    st = train_and_place(ctx, &s, pol, out, err);
    sgdp_policy_free(pol);
    return st;
}

/* What read_opts reads. */
static const op_opt_decl SGDP_OPTIONS[] = {
    {"paper", OP_OPT_FLAG, 0, 0, NULL, NULL, "exactly the paper's method (none of the additions)"},
    {"weights", OP_OPT_TEXT, 0, 0, NULL, NULL, "trained weights to start from (zero-shot)"},
    {"save-weights", OP_OPT_TEXT, 0, 0, NULL, NULL, "write the weights after training"},
    {"finetune", OP_OPT_INT, 0, 1000000, "0", NULL,
     "training iterations on this graph from --weights"},
    {"iterations", OP_OPT_INT, 0, 100000000, "0", NULL, "training iterations"},
    {"samples", OP_OPT_INT, 1, 4096, "32", NULL, "placements sampled per iteration"},
    {"threads", OP_OPT_INT, 0, 64, "0", NULL, "worker threads (0: one per core)"},
    {"epochs", OP_OPT_INT, 1, 1000, NULL, NULL, "PPO epochs per iteration"},
    {"lr", OP_OPT_NUM, 0, 10, NULL, NULL, "learning rate"},
    {"entropy", OP_OPT_NUM, 0, 100, NULL, NULL, "entropy bonus"},
    {"units", OP_OPT_INT, 0, 100000000, NULL, NULL, "coarsen to about this many units"},
    {"warm-start", OP_OPT_INT, 0, 1, NULL, NULL, "imitate the heuristics first"},
    {"heuristics", OP_OPT_TEXT, 0, 0, NULL, NULL, "reference placers, comma-separated, or none"},
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
