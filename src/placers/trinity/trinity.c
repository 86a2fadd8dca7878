/*
 * trinity.c - the Trinity placer (the Trinity paper; src/placers/trinity/,
 * placers/trinity/trinity.h): a partition network groups the ops, a seq2seq
 * schedule network maps groups to devices, both trained by PPO on the MDPE
 * reward (runtime, peak communication, peak memory).  Used like SGDP:
 *
 *   --weights W.bin               zero-shot: the trained policy's greedy
 *                                 placement and --samples sampled ones are
 *                                 simulated, the best is returned
 *   --weights W.bin --finetune N  N PPO iterations on this graph first
 *   (no weights)                  a fresh policy trained on this graph for
 *                                 --budget-seconds (default 60) or
 *                                 --iterations; the best placement seen wins
 *
 * --paper: the paper's method (no reference, priors, uniformly drawn
 * decisions, list-schedule orders or boundary moves; the result is the best
 * PPO sample, first-ready-first) with the RL fixes of trinity_paper_settings
 * (centred logits, the device-marginal partition ratio, the structure
 * initialisation, lr 3e-3, no entropy bonus); it refuses the options below
 * that tune an addition beyond the paper.
 * Options (read by trinity_options_read, shared with `opplace train
 * trinity`; those of every learned placer are learn/options.h's, their
 * run learn/lifecycle.h's): --samples K (16), --threads T, --lr, --epochs, --entropy,
 * --groups G (64), --max-comm BYTES and --max-mem BYTES (the user's
 * tolerances C^ and M^ of eqs. 6-7; default: the reference's peaks, or
 * 8 GiB each without one), --mdpe A,B,C (MDPE weights alpha, beta, gamma:
 * 0.5,0.3,0.2), --save-weights FILE, --slots B (1; rollout batches per
 * iteration, shared by MPI ranks under mpirun).
 * Beyond the paper (src/placers/trinity/trinity_warm.c): --heuristics LIST (default
 * expert; "none": no reference) picks a reference placement that seeds
 * the best-seen record and centres the order and block priors
 * (placers/trinity/trinity.h); --units N (256; 0 = per op) decision units split
 * by it; one decision per rollout of each network is drawn uniformly, so
 * exploration survives PPO's convergence; without --max-comm / --max-mem
 * the tolerances are the reference's peak communication and peak memory,
 * and the result is the fastest placement seen within the tolerances
 * (trinity_reward.c), so it is never worse than the reference on step
 * time, peak communication or peak memory.  With --weights the reference
 * is used too (zero-shot then returns at least the reference).
 * Also beyond the paper (opplace/list_schedule.h), per-device execution
 * orders by priority list scheduling (bottom level with transfers, tlevel
 * + blevel, bottom level of compute), chosen by --order-search
 * off|final|judged|all (each level adds to the one before; default all
 * with a reference, judged without), in three places:
 *   judged: the search judges each rollout by the list
 *       schedule of its own placement under a memory cap of 100/95/90 % of
 *       M^ (trinity_train.c), so PPO sees the step a placement reaches
 *       with an order, not only first-ready-first; auto takes the priority
 *       and cap best for the reference (first-ready-first included);
 *   final (off: the result has no order, as in the paper): the final
 *       choice (src/placers/trinity/trinity_final.c) takes the
 *       search's 4 best distinct placements and the reference,
 *       each first-ready-first and list-scheduled with every priority
 *       without and with memory caps, and returns the fastest variant that
 *       is within the tolerances (by default the reference's peaks) and no
 *       more out of memory than the best first-ready-first candidate.  So
 *       the result is never worse than the reference on step, peak
 *       communication or peak memory, and never slower than the
 *       reference's placement with any of these orders (communication
 *       does not depend on the order, memory may).  Progress lines report
 *       each candidate, the choice, and "reference + order" beside it.
 * Also beyond the paper (src/placers/trinity/trinity_boundary.c): --order-search
 * all (needs the reference; 4 chunks per layer scope) enumerates
 * layer-boundary moves around the reference after the search (each layer
 * scope cut into C chunks; whole scopes and prefixes / suffixes of chunks
 * move to a neighbouring device; device swaps; pairs among the 8 fastest
 * and least-communicating singles; up to 8 rounds of descent from the
 * best admissible one), judges each with every priority order, and gives
 * the final choice the 2 fastest admissible ones that beat the reference +
 * order.  PPO's moves around the reference rarely shift a stage boundary
 * (bench/RESULTS.md, Trinity).
 * --seed makes a run with a fixed --iterations reproducible, for any rank
 * count (given the same OpenBLAS thread count; bench/RESULTS.md, Trinity,
 * MPI).  Eligibility, pins and colocation are enforced by the policy's
 * masks (placers/trinity/trinity.h);
 * if the best placement runs out of memory the placer returns
 * OP_EINFEASIBLE unless --best-effort.  The final line on stderr reports
 * runtime, peak communication and peak memory as the paper's Table 4.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/list_schedule.h"
#include "core/parallel.h"
#include "learn/lifecycle.h"
#include "placers/trinity/trinity.h"
#include "placers/placer_util.h"

static trinity_policy *make_policy(const op_place_ctx *ctx, const trinity_options *s,
                                   op_error *err)
{
    if (s->lo.weights)
        return trinity_policy_from_file(s->lo.weights, err);
    trinity_config cfg = s->pc;
    if (ctx->p->nd > cfg.max_devices)
        cfg.max_devices = ctx->p->nd;
    return trinity_policy_new(&cfg, ctx->seed, err);
}

/* THE STAGES' DEADLINES.  With a deadline (the command's, which counts
 * loading the graph, or else now + the training budget) every stage ends
 * by its share of the time left when the placer starts: set-up (Node2vec,
 * the reference, the judge) by 25 %, training by 70 %, the final
 * evaluation starts only before 75 %, the boundary moves stop judging at
 * 90 %, the final choice stops ordering at 95 % (the command still simulates
 * and writes the result).  Without one (only
 * --iterations): no limit. */
typedef struct stages {
    double start, end; /* end 0: no deadline */
} stages;

static double stage_at(const stages *sg, double share)
{
    return sg->end > 0 ? sg->start + share * (sg->end - sg->start) : 0.0;
}

static int stage_passed(const stages *sg, double share)
{
    return sg->end > 0 && op_seconds_now() > stage_at(sg, share);
}

static trinity_train_config train_config(const op_place_ctx *ctx, const trinity_options *s,
                                         const stages *sg)
{
    trinity_train_config tc = s->tc;
    tc.setup_deadline = stage_at(sg, 0.25);
    tc.deadline = stage_at(sg, 0.70);
    tc.seed = ctx->seed;
    tc.n2v.seed = ctx->seed;
    tc.progress = op_par_rank() == 0 ? ctx : NULL;
    tc.stop_at_bound = 1; /* done when proven */
    learn_train_limits(ctx, &s->lo, &tc.iterations, &tc.budget_seconds);
    return tc;
}

/* ------------------------------------------------ priority orders (beyond the paper) */

/* Layer-boundary moves around the reference (trinity_boundary.c): the
 * admissible candidates faster than the reference + order join the final
 * choice.  res is left empty (n_kept 0) when there is no reference. */
static op_status boundary_moves(const op_place_ctx *ctx, const trinity_options *s,
                                const trinity_trainer *t, const trinity_reward_config *rc,
                                const stages *sg, trinity_boundary_result *res, op_error *err)
{
    const trinity_reference *ref = trinity_trainer_reference(t, 0);
    memset(res, 0, sizeof *res);
    if (!s->boundary_moves || !ref)
        return OP_OK;
    trinity_boundary_config bc = trinity_boundary_defaults();
    bc.chunks = s->boundary_moves;
    bc.deadline = stage_at(sg, 0.90);
    op_status st = trinity_boundary_search(ctx->p, ref->device_of, rc, &bc, res, err);
    if (!st)
        op_progress(ctx,
                    "trinity: boundary moves (%d chunks per layer, %d rounds): %d blocks, %d candidates "
                    "(%d single, %d swaps, %d pairs), %d within the communication bound, %d "
                    "admissible, %d faster than the reference + order (%.3f ms); best "
                    "admissible %s %.3f ms; fastest within the communication bound %.3f ms; "
                    "%.1f s%s",
                    bc.chunks, res->rounds, res->blocks, res->candidates, res->singles, res->swaps,
                    res->pairs, res->comm_ok, res->admissible, res->faster,
                    res->ref_best.step_us / 1000.0, res->best_what, res->best.step_us / 1000.0,
                    res->fastest_comm_ok / 1000.0, res->seconds,
                    res->cut_short ? " (cut short by the deadline)" : "");
    return st;
}

/* The lifecycle's stages (learn/lifecycle.h) on one trainer. */
typedef struct run {
    const op_place_ctx *ctx;
    const trinity_options *s;
    const stages *sg;
    trinity_policy *pol;
    trinity_trainer *t;
} run;

static op_status stage_train(void *self, op_error *err)
{
    return trinity_trainer_run(((run *)self)->t, err);
}

/* The final evaluation, a round of samples, if it starts before 75 %. */
static op_status stage_search(void *self, op_error *err)
{
    const run *r = self;
    if (!stage_passed(r->sg, 0.75))
        return trinity_trainer_evaluate(r->t, 0, r->s->tc.samples, err);
    op_progress(r->ctx, "trinity: no final evaluation (past 75 %% of the time)");
    return OP_OK;
}

static op_status stage_save(void *self, const char *path, op_error *err)
{
    return op_par_rank() == 0 ? trinity_policy_save(((run *)self)->pol, path, err) : OP_OK;
}

static int stage_proven(const void *self)
{
    return trinity_trainer_proven(((const run *)self)->t, 0);
}

/* The progress lines after the final choice: the judge, the reference,
 * and the result as the paper's Table 4. */
static void report(const op_place_ctx *ctx, const trinity_options *s, const trinity_trainer *t,
                   const trinity_metrics *fm)
{
    trinity_train_stats ts = trinity_trainer_stats(t);
    const trinity_reference *ref = trinity_trainer_reference(t, 0);
    trinity_reward_config rc = trinity_trainer_reward(t, 0);
    double share;
    int judge = trinity_trainer_reward_order(t, 0, &share);
    if (judge != OP_PRIORITY_FIFO)
        op_progress(ctx,
                    "trinity: rollouts judged by the %s list schedule, memory cap %.0f%% of "
                    "%.2f GiB (--order-search judged)",
                    trinity_reward_order_name(judge), 100 * share,
                    rc.max_mem_bytes / 1073741824.0);
    else
        op_progress(ctx, "trinity: rollouts judged first-ready-first%s",
                    s->tc.reward_order == OP_PRIORITY_FIFO ? "" : " (the best for the reference)");
    if (ref)
        op_progress(ctx,
                    "trinity: reference %s %.3f ms, peak communication %.1f MiB, peak "
                    "memory %.2f GiB; tolerances %.1f MiB, %.2f GiB",
                    ref->name, ref->m.step_us / 1000.0, (double)ref->m.peak_comm / 1048576.0,
                    (double)ref->m.peak_mem / 1073741824.0, rc.max_comm_bytes / 1048576.0,
                    rc.max_mem_bytes / 1073741824.0);
    op_progress(ctx,
                "trinity: runtime %.3f ms, peak communication %.1f MiB, peak memory "
                "%.2f GiB (%ld iterations, %ld rollouts, %.1f s + %.1f s set-up)",
                fm->step_us / 1000.0, (double)fm->peak_comm / 1048576.0,
                (double)fm->peak_mem / 1073741824.0, ts.iterations, ts.rollouts, ts.seconds,
                ts.setup_seconds);
}

/* The best placement into out, then (with orders) the boundary moves and
 * the final choice; *fm the result's metrics, ordered or not. */
static op_status final_choice(const op_place_ctx *ctx, const trinity_options *s,
                              const trinity_trainer *t, const stages *sg, op_placement *out,
                              trinity_metrics *fm, op_error *err)
{
    trinity_best b = trinity_trainer_best(t, 0);
    if (!b.device_of) /* no reference (--paper) and no rollout yet: the CLI falls back */
        return op_fail(err, OP_EINTERNAL, "trinity: %s before its first rollout",
                       op_interrupted() ? "stopped at Ctrl-C" : "out of time");
    trinity_reward_config rc = trinity_trainer_reward(t, 0);
    memcpy(out->device_of, b.device_of, (size_t)ctx->p->n * sizeof(int));
    op_placement_drop_order(out);
    *fm = b.m;
    if (!s->schedule_orders)
        return OP_OK;
    trinity_boundary_result br = {0};
    op_place_ctx fctx = *ctx; /* the final choice orders until 95 % (the rest: the
                                 command's own simulation and output) */
    fctx.deadline = stage_at(sg, 0.95);
    op_status st = boundary_moves(ctx, s, t, &rc, sg, &br, err);
    if (!st)
        st = trinity_final_choice(&fctx, t, &rc, br.kept, br.n_kept, out, fm, err);
    trinity_boundary_result_destroy(&br);
    return st;
}

/* Is the result's step the one the command will simulate?  With an order
 * it is; without one, only when rollouts are judged first-ready-first. */
static int step_is_fifo_or_ordered(const trinity_trainer *t, const op_placement *out)
{
    return out->has_order || trinity_trainer_reward_order(t, 0, NULL) == OP_PRIORITY_FIFO;
}

static op_status train_and_place(const op_place_ctx *ctx, const trinity_options *s,
                                 trinity_policy *pol, op_placement *out, op_error *err)
{
    stages sg = {op_seconds_now(), ctx->deadline};
    if (sg.end <= 0 && ctx->budget_seconds <= 0 && !s->lo.weights && s->lo.iterations <= 0)
        sg.end = sg.start + LEARN_DEFAULT_BUDGET;
    trinity_train_config tc = train_config(ctx, s, &sg);
    const op_problem *probs[1] = {ctx->p};
    trinity_trainer *t = trinity_trainer_new(pol, probs, 1, &tc, err);
    if (!t)
        return err && err->code ? err->code : OP_ENOMEM;
    run r = {ctx, s, &sg, pol, t};
    learn_stages ls = {&r, stage_train, stage_search, stage_save, stage_proven};
    op_status st = learn_lifecycle(&s->lo, &ls, err);
    trinity_metrics fm;
    if (!st)
        st = final_choice(ctx, s, t, &sg, out, &fm, err);
    if (!st) {
        report(ctx, s, t, &fm);
        /* a step the command would not reproduce proves nothing */
        double step = step_is_fifo_or_ordered(t, out) ? fm.step_us : INFINITY;
        st = learn_result(ctx, "trinity", step, fm.oom, err);
    }
    trinity_trainer_free(t);
    return st;
}

/* What trinity_options_read reads for the placer. */
static const op_opt_decl TRINITY_OPTIONS[] = {
    LEARN_OPTION_DECLS("the paper's method with the RL fixes (none of the additions)", NULL),
    {"max-devices", OP_OPT_INT, 1, 1024, NULL, NULL, "devices the policy can address"},
    {"hidden", OP_OPT_INT, 1, 4096, NULL, NULL, "hidden width of the networks"},
    {"groups", OP_OPT_INT, 1, 4096, NULL, NULL, "partition groups"},
    {"slots", OP_OPT_INT, 1, TRINITY_MAX_SLOTS, NULL, NULL, "decision slots"},
    {"max-comm", OP_OPT_NUM, 0, 1e18, NULL, NULL, "reward: communication bound, bytes"},
    {"max-mem", OP_OPT_NUM, 0, 1e18, NULL, NULL, "reward: memory bound, bytes"},
    {"mdpe", OP_OPT_TEXT, 0, 0, NULL, NULL,
     "reward weights A,B,C of runtime, communication, memory (0.5,0.3,0.2)"},
    {"order-search", OP_OPT_TEXT, 0, 0, NULL, "off|final|judged|all",
     "priority orders in the search: off, final choice, + rollouts judged by one, + "
     "boundary moves"},
    {NULL, 0, 0, 0, NULL, NULL, NULL},
};

static op_status place_trinity(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    trinity_options s;
    op_status st = trinity_options_read(ctx->opts, 1, &s, err);
    if (st)
        return st;
    trinity_policy *pol = make_policy(ctx, &s, err);
    if (!pol)
        return err && err->code ? err->code : OP_ENOMEM;
    st = train_and_place(ctx, &s, pol, out, err);
    trinity_policy_free(pol);
    return st;
}

const op_placer op_placer_trinity = {
    .name = "trinity",
    .summary = "learned partition + seq2seq placer networks, PPO on runtime, comm. and memory",
    .source = "Zeng et al., Trinity, Algorithms 2022 (sections 3-4)",
    .place = place_trinity,
    .slow = 1,
    .options = TRINITY_OPTIONS,
};
