/*
 * sgdp_train.c - training SGDP's policy with PPO on simulated step times
 * (the SGDP paper, eq. 1, "individual training" = SGDP-one with one graph,
 * "batch training" with several; Table 4).
 *
 * One iteration has `slots` rollout batches (1 by default); each slot
 * draws one problem (at random when there are several) and:
 *   1. one forward pass gives every op's device distribution (eq. 4);
 *   2. K placements are sampled from it, plus the greedy (argmax) one, and
 *      simulated in parallel: worker w takes rollouts w, w+T, ...; rollout
 *      k draws from its own generator derived from (seed, iteration, slot,
 *      k) and writes only slot k, so results do not depend on the thread
 *      count or on timing;
 *   3. reward r_k = -ln(step_k / lower_bound) - [OOM] * penalty * (1 +
 *      worst overflow ratio), a log-ratio so graphs of any scale weigh the
 *      same in batch training;
 *   4. advantages against the batch's mean reward, over its deviation (in
 *      batch training with calibrated proposals, below: the residual after
 *      fitting the reward to the number of moves; with moving_baseline, the
 *      plain policy's old per-problem moving average, which made it converge
 *      prematurely: an improving policy's samples all beat the lagging
 *      baseline, so every sampled choice was reinforced and the entropy
 *      fell whatever the reward said; bench/RESULTS.md), then `epochs`
 *      PPO epochs: each slot's clipped surrogate
 *      (learn.h) is backpropagated separately, the slots' gradients are
 *      summed in slot order and divided by `slots`, clipped, one Adam step.
 *      The greedy rollout is judged but not learnt from.
 * The best placement ever simulated for each problem is kept (no OOM first,
 * then the shortest step), which is what the placer returns.
 *
 * MPI (core/parallel.h): slot b belongs to rank b mod size,
 * which alone samples, simulates and backpropagates it.  Every rank draws
 * the same problems and generators (the shared RNG advances identically),
 * the slots' rewards, best placements and gradients are exchanged with
 * op_par_allreduce_sum over buffers in which only the owner's entries are
 * non-zero (so each sum is exact: x + 0), and every rank then sums slots
 * in the same order and takes the same Adam step: for a fixed iteration
 * count the weights and placements are bit-identical for any rank count
 * (given a deterministic BLAS; see bench/RESULTS.md).  Rank 0 decides when
 * the time budget is spent and broadcasts it.  Ranks beyond `slots` idle.
 * These mechanics (worker threads, simulators per worker, the exchanges,
 * the gradient rows, the stop decision) live in rollout_common.c, shared
 * with trinity_train.c; this file keeps what is SGDP's own.
 *
 * BEYOND THE PAPER, when cfg->heuristics is set (sgdp_warm.c): a reference
 * placement per problem, decision units of fused ops split by it, and with
 * warm_start a behaviour-cloning phase before PPO: the policy is fitted to
 * a label-smoothed copy of the reference (target probability 1 - eps on the
 * reference's device, eps = min(0.05, 2/units), i.e. about two units moved
 * per sample) and the reference seeds the best-seen record, so training
 * returns nothing worse than the reference.  The policy's reference input
 * then follows the best placement sampled, once it beats the current input
 * (so without a warm start, e.g. zero-shot or fine-tuning, the input stays
 * the heuristic's until a sample beats it).  The reference skip's gain
 * (sgdp_policy.c) is fitted by cloning only (hold_ref_gain).  In batch
 * training the inputs are varied (relabelled and perturbed copies of the
 * incumbent, "varied inputs" below) so that the policy learns to read its
 * input instead of the training families' placements, and the policy acts
 * through "calibrated proposals" (below): a fixed expected number of
 * decisions moved off the input per sample, the policy choosing which, as
 * zero-shot placement samples it; advantages net of the number of moves,
 * no entropy bonus.  The input's queueing delays (a simulation with a
 * trace, task_timing) are features of the policy (sgdp_warm.c).
 *
 * Scaled from Table 4 for a 2-core machine: 32 rollouts per update (not
 * 800), one minibatch, 4 epochs (not 20), lr 3e-3 (Table 4 gives 0.5, which
 * suits a sum-over-ops loss; ours is a mean), entropy 0.01 on the mean
 * per-decision entropy.  Simulation uses op_sim (formats.md section 5), one
 * simulator per worker thread, allocated once.
 */
#include "opplace/placer.h"
#include "placers/sgdp/sgdp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "opplace/simulate.h"
#include "learn/rollout_common.h"
#include "placers/coarseners.h"
#include "sgdp_internal.h"

#define CLONE_LR_SCALE 3.0 /* cloning is supervised: a larger step is safe */

/* task, slot and struct sgdp_trainer: sgdp_internal.h (sgdp_search.c reads them) */
#define MAX_SLOTS SGDP_MAX_SLOTS
typedef sgdp_task task;
typedef sgdp_slot slot;

sgdp_train_config sgdp_train_defaults(void)
{
    return (sgdp_train_config){.ppo = ppo_defaults(), .samples = 32, .iterations = 0,
                               .budget_seconds = 60, .threads = 0, .seed = 1,
                               .reserve_iterations = 1.0,
                               .oom_penalty = 1.0, .progress = NULL, .heuristics = NULL,
                               .unit_target = 0, .warm_start = 0, .clone_steps = 150,
                               .clone_fraction = 0.3, .slots = 1, .input_variety = 0.5,
                               .proposal_moves = SGDP_DEFAULT_MOVES};
}

static void task_destroy(task *tk)
{
    if (tk->have_trace)
        op_sim_trace_destroy(&tk->trace);
    rl_sims_destroy(&tk->sim);
    if (tk->have_best)
        op_placement_destroy(&tk->best);
    free(tk->ref_row);
    free(tk->heur_row);
    sgdp_graph_destroy(&tk->sg);
}

/* The queueing delays of the placement in ref_row (a simulation with a
 * trace) into the task's features, effective at the next
 * sgdp_graph_set_reference. */
static op_status timing_of(task *tk, const int *row_dev, op_error *err)
{
    const op_problem *p = tk->p;
    op_status st;
    if (!tk->have_trace) {
        if ((st = op_sim_trace_init(&tk->trace, p, err)))
            return st;
        tk->have_trace = 1;
    }
    op_placement *pl = &tk->sim.pls[0];
    for (int r = 0; r < p->n; r++)
        pl->device_of[p->g->topo[r]] = row_dev[r];
    if ((st = op_sim_run(tk->sim.sims[0], pl, &tk->sim.res[0], &tk->trace, err)))
        return st;
    sgdp_graph_set_timing(&tk->sg, tk->trace.start_us, tk->trace.finish_us,
                          tk->sim.res[0].step_time_us);
    return OP_OK;
}

static op_status task_timing(task *tk, op_error *err)
{
    return timing_of(tk, tk->ref_row, err);
}

/* The reference placement, the units built from it, and (warm start) the
 * best-seen record seeded with it. */
static op_status task_reference(task *tk, const sgdp_train_config *cfg, op_error *err)
{
    const op_problem *p = tk->p;
    op_placement ref;
    op_status st = op_placement_init(&ref, p->n, p->nd, err);
    if (st)
        return st;
    int *unit_of = NULL, n_units = 0;
    /* the policy places ops only: the heuristics judged by their devices */
    op_place_ctx hctx = {.p = p, .seed = cfg->seed};
    if ((st = op_portfolio_best(&hctx, cfg->heuristics, 1, "sgdp", &ref, &tk->ref, err)))
        goto done;
    if (!(tk->ref_row = op_malloc((size_t)p->n * sizeof *tk->ref_row, err)) ||
        !(unit_of = op_malloc((size_t)p->n * sizeof *unit_of, err))) {
        st = OP_ENOMEM;
        goto done;
    }
    for (int r = 0; r < p->n; r++)
        tk->ref_row[r] = ref.device_of[p->g->topo[r]];
    tk->have_ref = 1;
    if (!(tk->heur_row = op_malloc((size_t)p->n * sizeof *tk->heur_row, err))) {
        st = OP_ENOMEM;
        goto done;
    }
    if (cfg->unit_target > 0 &&
        (!(st = learn_units_build(p, &ref, op_coarsener_find("celeritas"), cfg->unit_target,
                                             unit_of, &n_units, err))))
        st = sgdp_graph_set_units(&tk->sg, unit_of, n_units, err);
    if (!st)
        st = task_timing(tk, err);
    memcpy(tk->heur_row, tk->ref_row, (size_t)p->n * sizeof *tk->heur_row);
    sgdp_graph_set_reference(&tk->sg, tk->ref_row); /* after the units: unit cut shares */
    tk->follow_best = 1;
    tk->input_time = tk->ref.step;
    tk->input_oom = tk->ref.oom;
    if (!st && cfg->warm_start) {
        if ((st = op_placement_init(&tk->best, p->n, p->nd, err)))
            goto done;
        memcpy(tk->best.device_of, ref.device_of, (size_t)p->n * sizeof(int));
        tk->have_best = 1;
        tk->best_time = tk->ref.step;
        tk->best_oom = tk->ref.oom;
    }
done:
    free(unit_of);
    op_placement_destroy(&ref);
    return st;
}

static op_status task_init(task *tk, const op_problem *p, const sgdp_config *pc,
                           const sgdp_train_config *cfg, int threads, op_error *err)
{
    memset(tk, 0, sizeof *tk);
    tk->p = p;
    ppo_baseline_init(&tk->base, cfg->ppo.baseline_decay);
    op_status st = sgdp_graph_init(&tk->sg, p, pc->max_devices, pc->gs_knn, err);
    if (!st)
        st = rl_sims_init(&tk->sim, p, threads, err);
    if (st)
        return st;
    if (cfg->heuristics && *cfg->heuristics)
        st = task_reference(tk, cfg, err);
    return st;
}

static void slot_free(slot *s)
{
    free(s->actions), free(s->old_logp), free(s->rewards), free(s->adv), free(s->step);
    free(s->oom), free(s->overflow), free(s->input), free(s->moves);
    memset(s, 0, sizeof *s);
}

static op_status ensure_capacity(sgdp_trainer *t, int k, op_error *err)
{
    if (k <= t->cap)
        return OP_OK;
    size_t rows = (size_t)k * (size_t)t->n_max;
    t->cap = 0;
    for (int b = 0; b < t->c.n_slots; b++) {
        slot *s = &t->slots[b];
        slot_free(s);
        s->actions = op_calloc(rows, sizeof *s->actions, err);
        s->old_logp = op_calloc(rows, sizeof *s->old_logp, err);
        s->rewards = op_calloc((size_t)k, sizeof(double), err);
        s->adv = op_calloc((size_t)k, sizeof(double), err);
        s->step = op_calloc((size_t)k, sizeof(double), err);
        s->oom = op_calloc((size_t)k, sizeof(int), err);
        s->overflow = op_calloc((size_t)k, sizeof(double), err);
        s->input = op_calloc((size_t)t->n_max, sizeof *s->input, err);
        s->moves = op_calloc((size_t)k, sizeof(double), err);
        if (!s->actions || !s->old_logp || !s->rewards || !s->adv || !s->step || !s->oom ||
            !s->overflow || !s->input || !s->moves)
            return OP_ENOMEM;
    }
    op_status st = rl_core_share_alloc(&t->c, (size_t)k + 2 + (size_t)t->n_max, err);
    if (st)
        return st;
    t->cap = k;
    return OP_OK;
}

sgdp_trainer *sgdp_trainer_new(sgdp_policy *pol, const op_problem *const *problems, int n,
                               const sgdp_train_config *cfg, op_error *err)
{
    if (n < 1) {
        op_fail(err, OP_EUSAGE, "sgdp: no graph to train on");
        return NULL;
    }
    if (cfg->samples < 1 || cfg->ppo.epochs < 1) {
        op_fail(err, OP_EUSAGE, "sgdp: samples and epochs must be at least 1");
        return NULL;
    }
    if (cfg->slots < 1 || cfg->slots > MAX_SLOTS) {
        op_fail(err, OP_EUSAGE, "sgdp: rollout batches per iteration must lie in [1, %d]",
                MAX_SLOTS);
        return NULL;
    }
    sgdp_trainer *t = op_calloc(1, sizeof *t, err);
    if (!t)
        return NULL;
    t->pol = pol;
    t->cfg = *cfg;
    op_status st = rl_core_init(&t->c, sgdp_policy_params(pol), cfg->threads, cfg->slots,
                                cfg->ppo.lr, cfg->seed, (size_t)1 << 20, err);
    if (!st && !(t->tasks = op_calloc((size_t)n, sizeof *t->tasks, err)))
        st = OP_ENOMEM;
    for (int i = 0; !st && i < n; i++) {
        st = task_init(&t->tasks[i], problems[i], sgdp_policy_config(pol), cfg, t->c.threads,
                       err);
        t->n_tasks = i + 1;
        if (problems[i]->n > t->n_max)
            t->n_max = problems[i]->n;
    }
    if (!st)
        st = ensure_capacity(t, cfg->samples + 1, err);
    if (st) {
        sgdp_trainer_free(t);
        return NULL;
    }
    return t;
}

void sgdp_trainer_free(sgdp_trainer *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n_tasks; i++)
        task_destroy(&t->tasks[i]);
    free(t->tasks);
    for (int b = 0; b < t->c.n_slots; b++)
        slot_free(&t->slots[b]);
    rl_core_destroy(&t->c);
    free(t);
}

/* ------------------------------------------------------------ rollouts */

/* What every rollout of one slot reads. */
typedef struct rollout_ctx {
    task *tk;
    slot *s;
    const nn_tensor *logp;
    int greedy_slot;
} rollout_ctx;

/* Rollout k of the slot on worker w: its own generator, derived from the
 * slot's and k, writes only entry k. */
static op_status run_rollout(void *arg, int w, int k, op_error *err)
{
    rollout_ctx *c = arg;
    task *tk = c->tk;
    slot *s = c->s;
    int n = tk->sg.n;
    nn_rng tmp = s->base, rng = nn_rng_fork(&tmp, (uint64_t)k);
    op_placement *pl = &tk->sim.pls[w];
    op_sim_result *r = &tk->sim.res[w];
    int *row_dev = s->actions + (size_t)k * (size_t)n;
    sgdp_sample(&tk->sg, c->logp, &rng, k == c->greedy_slot, row_dev, pl->device_of);
    op_status st = op_sim_run(tk->sim.sims[w], pl, r, NULL, err);
    if (st)
        return st;
    s->step[k] = r->step_time_us;
    s->oom[k] = r->oom;
    double worst = 0.0;
    for (int d = 0; d < tk->p->nd; d++) {
        double cap = (double)tk->p->c->dev[d].memory_bytes;
        if (cap > 0 && (double)r->peak_mem[d] > cap)
            worst = fmax(worst, ((double)r->peak_mem[d] - cap) / cap);
    }
    s->overflow[k] = worst;
    return OP_OK;
}

/* Sample and simulate k_total rollouts (the last one greedy) of slot s. */
static op_status rollouts(sgdp_trainer *t, slot *s, const nn_tensor *logp, int k_total,
                          op_error *err)
{
    rollout_ctx c = {.tk = &t->tasks[s->task], .s = s, .logp = logp, .greedy_slot = k_total - 1};
    return rl_run_rollouts(t->c.threads, k_total, run_rollout, &c, &t->stats.sim_seconds, err);
}


/* Rewards, old log-probabilities and the best rollout of slot s. */
static void score(sgdp_trainer *t, slot *s, const nn_tensor *logp, int k_total)
{
    task *tk = &t->tasks[s->task];
    int n = tk->sg.n;
    double lb = tk->p->lower_bound_us > 0 ? tk->p->lower_bound_us : 1.0;
    s->best_k = -1;
    for (int k = 0; k < k_total; k++) {
        const int *a = s->actions + (size_t)k * (size_t)n;
        double *old = s->old_logp + (size_t)k * (size_t)n;
        for (int r = 0; r < n; r++)
            old[r] = NN_AT(logp, r, a[r]);
        s->rewards[k] = -log(fmax(s->step[k], 1e-9) / lb);
        s->moves[k] = 0.0;
        for (int r = 0; tk->have_ref && r < n; r++)
            s->moves[k] += tk->sg.decides[r] && a[r] != s->input[r];
        if (s->oom[k])
            s->rewards[k] -= t->cfg.oom_penalty * (1.0 + s->overflow[k]);
        if (s->best_k < 0 || op_sim_ranks_before(s->oom[k], s->step[k], s->oom[s->best_k], s->step[s->best_k]))
            s->best_k = k;
    }
}

/* The best-seen record of slot s's problem, from the slot's best rollout. */
static op_status keep_best(task *tk, int oom, double step, const int *row_dev, op_error *err)
{
    if (tk->have_best && !op_sim_ranks_before(oom, step, tk->best_oom, tk->best_time))
        return OP_OK;
    if (!tk->have_best) {
        op_status st = op_placement_init(&tk->best, tk->p->n, tk->p->nd, err);
        if (st)
            return st;
        tk->have_best = 1;
    }
    for (int r = 0; r < tk->sg.n; r++)
        tk->best.device_of[tk->p->g->topo[r]] = row_dev[r];
    tk->best_time = step;
    tk->best_oom = oom;
    /* the policy will see the new incumbent, once it beats its current input
     * (without a warm start the best sample may still be worse than the
     * reference: the input stays the reference then) */
    if (tk->have_ref && tk->follow_best && op_sim_ranks_before(oom, step, tk->input_oom, tk->input_time)) {
        memcpy(tk->ref_row, row_dev, (size_t)tk->sg.n * sizeof *row_dev);
        tk->input_time = step;
        tk->input_oom = oom;
        tk->timing_stale = 1; /* refreshed after this iteration's update */
    }
    return OP_OK;
}

/* Every task's features back to its incumbent (ref_row), with the
 * incumbent's queueing delays re-simulated when it changed.  Applied after
 * the PPO update, so every pass of one iteration (the rollouts' and the
 * epochs') sees the same input: the slots' own copies (use_input).  Varied
 * inputs keep the incumbent's delays (exact for a relabelling, which
 * simulates the same; approximate for the perturbed ones). */
static op_status refresh_references(sgdp_trainer *t, op_error *err)
{
    for (int i = 0; i < t->n_tasks; i++) {
        task *tk = &t->tasks[i];
        if (!tk->have_ref)
            continue;
        if (tk->timing_stale) {
            op_status st = task_timing(tk, err);
            if (st)
                return st;
            tk->timing_stale = 0;
        }
        sgdp_graph_set_reference(&tk->sg, tk->ref_row);
    }
    return OP_OK;
}

/* ----------------------------------------------- varied inputs
 * BEYOND THE PAPER, batch training only (several problems, a reference).
 * If the policy only ever sees each training graph's incumbent as its
 * input, "reproduce this family's placement" (e.g. "early layers on device
 * 0") and "copy the input" explain the data equally well, and only the
 * second transfers to an unseen family.  Measured: trained that way, the
 * zero-shot policy on transformer_xl ignored expert's placement in its
 * input (+44 %, bench/RESULTS.md).  So a slot's input is, with probability
 * cfg->input_variety, the incumbent with its devices relabelled by a random
 * permutation of interchangeable devices (same kind, memory, speed, links
 * and channel structure: the relabelled placement has the same step time),
 * and half of those also get a few perturbations (VARY_MOVES_MAX runs of
 * 1..VARY_RUN_MAX consecutive decisions moved to another device).  The
 * only way to be right on a relabelled input is to read it; PPO then
 * rewards undoing the harmful perturbations relative to the input.  The
 * behaviour-cloning phase relabels the same way (warm_start).  Everything
 * is drawn from generators every MPI rank shares, so ranks agree. */
#define VARY_STREAM ((uint64_t)1 << 40) /* never a rollout's stream */
#define VARY_PERTURB 0.5
#define VARY_MOVES_MAX 8
#define VARY_RUN_MAX 4

/* Relabelling devices by perm leaves every simulated step time unchanged. */
static int interchangeable(const op_cluster *c, const int *perm)
{
    int nd = c->n_dev;
    for (int d = 0; d < nd; d++) {
        const op_device *a = &c->dev[d], *b = &c->dev[perm[d]];
        if (strcmp(a->kind, b->kind) || a->memory_bytes != b->memory_bytes || a->speed != b->speed)
            return 0;
    }
    for (int s1 = 0; s1 < nd; s1++)
        for (int d1 = 0; d1 < nd; d1++) {
            if (s1 == d1)
                continue;
            op_link_model m1 = op_cluster_link_model(c, s1, d1),
                          m2 = op_cluster_link_model(c, perm[s1], perm[d1]);
            int k = op_cluster_chan(c, s1, d1), pk = op_cluster_chan(c, perm[s1], perm[d1]);
            if (m1.latency_us != m2.latency_us || m1.us_per_byte != m2.us_per_byte)
                return 0;
            for (int s2 = 0; s2 < nd; s2++) /* links sharing a channel still do */
                for (int d2 = 0; d2 < nd; d2++)
                    if (s2 != d2 &&
                        (k == op_cluster_chan(c, s2, d2)) !=
                            (pk == op_cluster_chan(c, perm[s2], perm[d2])))
                        return 0;
        }
    return 1;
}

/* A random non-identity relabelling of p's devices that keeps step times,
 * or 0 when a few tries find none. */
static int draw_relabelling(const op_problem *p, nn_rng *rng, int *perm)
{
    int nd = p->nd;
    for (int attempt = 0; nd >= 2 && attempt < 4; attempt++) {
        for (int d = 0; d < nd; d++)
            perm[d] = d;
        nn_rng_shuffle_int(rng, perm, (size_t)nd);
        int moved = 0;
        for (int d = 0; d < nd; d++)
            moved |= perm[d] != d;
        if (moved && interchangeable(p->c, perm))
            return 1;
    }
    return 0;
}

/* input[r] <- perm[input[r]] where the row may use it. */
static void relabel(const sgdp_graph *sg, const int *perm, int *input)
{
    for (int r = 0; r < sg->n; r++)
        if (input[r] >= 0 && input[r] < sg->nd &&
            sg->mask[(size_t)r * sg->max_devices + perm[input[r]]])
            input[r] = perm[input[r]];
}

static void follow_leaders(const sgdp_graph *sg, int *input)
{
    for (int r = 0; r < sg->n; r++) /* a leader's row comes before its followers' */
        if (sg->leader[r] >= 0)
            input[r] = input[sg->leader[r]];
}

static void perturb_input(const sgdp_graph *sg, nn_rng *rng, int *input)
{
    int n = sg->n, D = sg->max_devices;
    int moves = 1 + (int)nn_rng_below(rng, VARY_MOVES_MAX);
    for (int m = 0; m < moves; m++) {
        int start = (int)nn_rng_below(rng, (uint64_t)n);
        int run = 1 + (int)nn_rng_below(rng, VARY_RUN_MAX);
        while (start < n && !sg->decides[start])
            start++;
        if (start >= n)
            continue;
        int to = (int)nn_rng_below(rng, (uint64_t)sg->nd);
        if (to == input[start])
            to = (to + 1) % sg->nd;
        for (int r = start, done = 0; r < n && done < run; r++) {
            if (!sg->decides[r])
                continue;
            if (sg->mask[(size_t)r * D + to])
                input[r] = to;
            done++;
        }
    }
}

/* A varied copy of the incumbent into input (already a copy of it):
 * relabelled, and perturbed with probability VARY_PERTURB; 0 when the
 * cluster has no interchangeable devices (input unchanged). */
static int vary_input(const task *tk, nn_rng *rng, int *input)
{
    int perm[1024];
    if (tk->sg.nd > (int)(sizeof perm / sizeof *perm) || !draw_relabelling(tk->p, rng, perm))
        return 0;
    relabel(&tk->sg, perm, input);
    if (nn_rng_uniform(rng) < VARY_PERTURB)
        perturb_input(&tk->sg, rng, input);
    follow_leaders(&tk->sg, input);
    return 1;
}

/* The input of slot s for this iteration: the incumbent, or (batch
 * training, with probability input_variety) a varied copy of it. */
static void choose_input(sgdp_trainer *t, slot *s)
{
    const task *tk = &t->tasks[s->task];
    s->varied = 0;
    if (!tk->have_ref)
        return;
    memcpy(s->input, tk->ref_row, (size_t)tk->sg.n * sizeof *s->input);
    if (t->n_tasks < 2 || t->cfg.input_variety <= 0.0)
        return;
    nn_rng tmp = s->base, rng = nn_rng_fork(&tmp, VARY_STREAM);
    if (nn_rng_uniform(&rng) < t->cfg.input_variety)
        s->varied = vary_input(tk, &rng, s->input);
}

/* Slot s's input into its task's features (before each of its passes). */
static void use_input(sgdp_trainer *t, const slot *s)
{
    task *tk = &t->tasks[s->task];
    if (tk->have_ref)
        sgdp_graph_set_reference(&tk->sg, s->input);
}

/* ----------------------------------------------- exploration floor
 * Around a reference the policy soon becomes nearly deterministic, and
 * PPO's clipped ratio lets a choice of probability 1e-3 grow by only ~20%
 * per update, so exploration would stop.  The acting policy is therefore
 * pi_eff = (1 - a) pi + a uniform(allowed devices), a = min(0.1, 2/U)
 * with U decisions (about one random move per sample); PPO's ratios and
 * gradients are taken through pi_eff. */
static double explore_alpha(const task *tk)
{
    if (!tk->have_ref)
        return 0.0;
    int u = 0;
    for (int r = 0; r < tk->sg.n; r++)
        u += tk->sg.decides[r];
    double a = 2.0 / (u > 0 ? u : 1);
    return a > 0.1 ? 0.1 : a;
}

/* logp <- log pi_eff in place (raw keeps log pi for the backward pass). */
static op_status mix_exploration(sgdp_trainer *t, const task *tk, const nn_tensor *raw,
                                 nn_tensor *eff, op_error *err)
{
    double a = explore_alpha(tk);
    if (a <= 0.0) {
        *eff = *raw;
        return OP_OK;
    }
    op_status st = nn_arena_tensor(&t->c.ar, raw->rows, raw->cols, eff, err);
    if (st)
        return st;
    int D = raw->cols;
    for (int r = 0; r < raw->rows; r++) {
        const unsigned char *m = tk->sg.mask + (size_t)r * D;
        int c = 0;
        for (int d = 0; d < D; d++)
            c += m[d];
        for (int d = 0; d < D; d++)
            NN_AT(eff, r, d) = m[d] ? log((1.0 - a) * exp(NN_AT(raw, r, d)) + a / c) : -INFINITY;
    }
    return OP_OK;
}

/* d loss / d log pi from d loss / d log pi_eff (in place on d). */
static void unmix_gradient(const task *tk, const nn_tensor *raw, const nn_tensor *eff,
                           nn_tensor *d)
{
    double a = explore_alpha(tk);
    if (a <= 0.0)
        return;
    for (int r = 0; r < raw->rows; r++)
        for (int k = 0; k < raw->cols; k++)
            if (tk->sg.mask[(size_t)r * raw->cols + k])
                NN_AT(d, r, k) *= (1.0 - a) * exp(NN_AT(raw, r, k) - NN_AT(eff, r, k));
            else
                NN_AT(d, r, k) = 0.0;
}

/* ----------------------------------------------- calibrated proposals
 * BEYOND THE PAPER.  Zero-shot placement keeps the best of its samples, so
 * what has to transfer is which decisions the policy would move off its
 * input, not how often it moves.  Plain PPO around a reference learns to
 * copy it almost surely: most moves hurt, so every deviation probability
 * is pushed down (measured after 180 s of batch training: ~1e-5 on the
 * held-out family, bench/RESULTS.md) and zero-shot's proposals all came
 * from the uniform exploration floor, as with an untrained policy.  With
 * proposal_moves = M > 0 the acting policy is the policy with every
 * decision's reference logit lowered by one offset delta, found by
 * bisection so that a sample moves M decisions off the input on average:
 * a decision moves with probability 1 / (1 + exp(logp_ref - delta - log
 * q)), q its probability of the other devices, and then to those in the
 * policy's proportions.  Only the policy's ranking of moves matters; the
 * level "move less everywhere" is taken out by delta.  Used by zero-shot
 * evaluation and batch training (which then learns on the same
 * distribution: PPO's ratios are taken through it with delta fixed per
 * iteration, and d loss / d logits = dEff - softmax(eff) sum(dEff)). */
static int calibrated(const sgdp_trainer *t, const task *tk, int training)
{
    return t->cfg.proposal_moves > 0.0 && tk->have_ref && (!training || t->n_tasks > 1);
}

/* log of row r's probability of any allowed device but its reference's */
static double row_log_other(const nn_tensor *raw, const sgdp_graph *sg, int r)
{
    int D = raw->cols, ref = sg->ref_dev[r];
    double mx = -INFINITY, s = 0.0;
    for (int d = 0; d < D; d++)
        if (d != ref && sg->mask[(size_t)r * D + d])
            mx = fmax(mx, NN_AT(raw, r, d));
    if (mx == -INFINITY)
        return -INFINITY;
    for (int d = 0; d < D; d++)
        if (d != ref && sg->mask[(size_t)r * D + d])
            s += exp(NN_AT(raw, r, d) - mx);
    return mx + log(s);
}

/* log P(row r moves off its reference) under offset delta */
static double log_move(double logp_ref, double lq, double delta)
{
    double x = logp_ref - delta - lq;
    return x > 30.0 ? -x : -log1p(exp(x));
}

static int movable(const sgdp_graph *sg, int r)
{
    return sg->decides[r] && sg->ref_dev[r] >= 0;
}

double sgdp_calibrate_offset(const sgdp_graph *sg, const nn_tensor *logp, double moves)
{
    double *x = malloc((size_t)sg->n * sizeof *x); /* log-odds of staying at delta 0 */
    int m = 0;
    for (int r = 0; x && r < sg->n; r++) {
        double lq = movable(sg, r) ? row_log_other(logp, sg, r) : -INFINITY;
        if (lq > -INFINITY)
            x[m++] = NN_AT(logp, r, sg->ref_dev[r]) - lq;
    }
    if (!x || m == 0 || moves <= 0.0) {
        free(x);
        return -INFINITY;
    }
    double target = fmin(moves, 0.5 * m), lo = -300.0, hi = 300.0;
    for (int it = 0; it < 80; it++) {
        double mid = 0.5 * (lo + hi), e = 0.0;
        for (int i = 0; i < m; i++)
            e += exp(log_move(x[i], 0.0, mid));
        if (e < target)
            lo = mid;
        else
            hi = mid;
    }
    free(x);
    return 0.5 * (lo + hi);
}

void sgdp_apply_offset(const sgdp_graph *sg, const nn_tensor *logp, double delta,
                       nn_tensor *out)
{
    int D = logp->cols;
    for (int r = 0; r < logp->rows; r++) {
        int ref = sg->ref_dev[r];
        double lq = ref >= 0 && delta > -INFINITY ? row_log_other(logp, sg, r) : -INFINITY;
        if (lq == -INFINITY) {
            for (int d = 0; d < D; d++)
                NN_AT(out, r, d) = NN_AT(logp, r, d);
            continue;
        }
        double lm = log_move(NN_AT(logp, r, ref), lq, delta);
        double ls = log1p(-fmin(exp(lm), 1.0 - 1e-16)); /* log P(stay) */
        for (int d = 0; d < D; d++)
            NN_AT(out, r, d) = !sg->mask[(size_t)r * D + d] ? -INFINITY
                               : d == ref ? ls
                                          : lm + NN_AT(logp, r, d) - lq;
    }
}

/* d loss / d log pi from d loss / d log pi_eff (in place on d): eff is a
 * log-softmax of the logits with one entry shifted by the constant delta,
 * so d loss / d logits = d - softmax(eff) sum(d), and passing that as the
 * gradient w.r.t. log pi gives the same logits gradient (its row sum is 0). */
static void uncalibrate_gradient(const sgdp_graph *sg, double delta, const nn_tensor *eff,
                                 nn_tensor *d)
{
    int D = eff->cols;
    for (int r = 0; r < eff->rows; r++) {
        if (sg->ref_dev[r] < 0 || delta == -INFINITY)
            continue; /* eff = raw there */
        double sum = 0.0;
        for (int k = 0; k < D; k++)
            if (sg->mask[(size_t)r * D + k])
                sum += NN_AT(d, r, k);
        for (int k = 0; k < D; k++)
            NN_AT(d, r, k) = sg->mask[(size_t)r * D + k]
                                 ? NN_AT(d, r, k) - exp(NN_AT(eff, r, k)) * sum
                                 : 0.0;
    }
}

/* The acting policy of a slot's pass: calibrated (delta computed when
 * fresh, else the slot's) or mixed with the exploration floor. */
static op_status acting_policy(sgdp_trainer *t, task *tk, slot *s, int training, int fresh,
                               const nn_tensor *raw, nn_tensor *eff, op_error *err)
{
    if (!calibrated(t, tk, training))
        return mix_exploration(t, tk, raw, eff, err);
    if (fresh)
        s->delta = sgdp_calibrate_offset(&tk->sg, raw, t->cfg.proposal_moves);
    op_status st = nn_arena_tensor(&t->c.ar, raw->rows, raw->cols, eff, err);
    if (!st)
        sgdp_apply_offset(&tk->sg, raw, s->delta, eff);
    return st;
}

static void acting_gradient(const sgdp_trainer *t, const task *tk, const slot *s,
                            const nn_tensor *raw, const nn_tensor *eff, nn_tensor *d)
{
    if (calibrated(t, tk, 1))
        uncalibrate_gradient(&tk->sg, s->delta, eff, d);
    else
        unmix_gradient(tk, raw, eff, d);
}

/* ---------------------------------------------------------- MPI shares */

typedef struct share_ctx {
    sgdp_trainer *t;
    int k_total;
} share_ctx;

/* Slot b's rewards, best step, best oom and best actions. */
static void pack_slot(void *arg, int b, double *sh)
{
    share_ctx *c = arg;
    sgdp_trainer *t = c->t;
    const slot *s = &t->slots[b];
    int n = t->tasks[s->task].sg.n;
    memcpy(sh, s->rewards, (size_t)c->k_total * sizeof *sh);
    sh[t->cap] = s->step[s->best_k];
    sh[t->cap + 1] = s->oom[s->best_k];
    const int *a = s->actions + (size_t)s->best_k * (size_t)n;
    for (int r = 0; r < n; r++)
        sh[t->cap + 2 + r] = a[r];
}

static void unpack_slot(void *arg, int b, const double *sh)
{
    share_ctx *c = arg;
    sgdp_trainer *t = c->t;
    slot *s = &t->slots[b];
    int n = t->tasks[s->task].sg.n;
    memcpy(s->rewards, sh, (size_t)c->k_total * sizeof *sh);
    s->best_k = 0; /* the best rollout's entries go to row 0 */
    s->step[0] = sh[t->cap];
    s->oom[0] = (int)sh[t->cap + 1];
    for (int r = 0; r < n; r++)
        s->actions[r] = (int)sh[t->cap + 2 + r];
}

/* Every rank gets every slot's rewards and best rollout. */
static op_status exchange_results(sgdp_trainer *t, int k_total, op_error *err)
{
    share_ctx c = {.t = t, .k_total = k_total};
    return rl_exchange(&t->c, pack_slot, unpack_slot, &c, err);
}

/* ---------------------------------------------------------- PPO update */

/* The reference skip's gain (sgdp_policy.c) is fitted by behaviour cloning
 * only: in PPO it is one scalar shared by every decision, so the entropy
 * bonus, summed over thousands of decisions, drives it down (the policy
 * forgets its input: measured, entropy rose 0.06 -> 0.14 in 20 iterations
 * on transformer_xl); PPO adjusts the per-op network instead. */
static void hold_ref_gain(sgdp_trainer *t)
{
    nn_param *g = nn_params_find(sgdp_policy_params(t->pol), "sgdp.ref_gain");
    if (g)
        g->grad.data[0] = 0.0;
}

/* One slot's loss gradient into the parameters' grads (zeroed first). */
static op_status slot_gradient(sgdp_trainer *t, slot *s, sgdp_pass *pass, nn_tensor logp,
                               int k, ppo_stats *stats, op_error *err)
{
    task *tk = &t->tasks[s->task];
    op_status st;
    use_input(t, s); /* the features this slot's passes saw (and backward reads) */
    if (!pass) {
        nn_arena_reset(&t->c.ar);
        if ((st = sgdp_policy_forward(t->pol, &t->c.ar, &tk->sg, &logp, &pass, err)))
            return st;
    }
    nn_tensor dlogp, eff;
    if ((st = acting_policy(t, tk, s, 1, 0, &logp, &eff, err)) ||
        (st = nn_arena_tensor(&t->c.ar, logp.rows, logp.cols, &dlogp, err)))
        return st;
    nn_params_zero_grad(sgdp_policy_params(t->pol));
    /* the calibrated policy explores by construction (M moves per sample),
     * so no entropy bonus there (measured once, 180 s of batch training:
     * held-out zero-shot, 10 rounds, 3 seeds, +3.6 % with it, +1.4 %
     * without; bench/RESULTS.md) */
    ppo_config pc = t->cfg.ppo;
    if (calibrated(t, tk, 1))
        pc.entropy_coef = 0.0;
    ppo_factored_loss(&pc, &eff, s->actions, s->old_logp, s->adv, k, tk->sg.decides,
                      &dlogp, stats);
    acting_gradient(t, tk, s, &logp, &eff, &dlogp);
    if ((st = sgdp_policy_backward(t->pol, &t->c.ar, &tk->sg, pass, &dlogp, err)))
        return st;
    hold_ref_gain(t);
    return OP_OK;
}

/* Past cfg.deadline after at least one epoch: a large graph's update
 * ends early rather than overrun the command's budget (one rank only, as
 * Ctrl-C: ranks must agree on the epoch count). */
static int past_deadline(const sgdp_trainer *t)
{
    return t->cfg.deadline > 0 && rl_now_seconds() >= t->cfg.deadline;
}

/* `epochs` PPO epochs over every slot.  The last slot this rank sampled
 * (kept) reuses its rollout forward pass in epoch 0. */
static op_status ppo_update(sgdp_trainer *t, int kept, sgdp_pass *kept_pass, nn_tensor kept_logp,
                            int k, ppo_stats *stats, op_error *err)
{
    nn_params *ps = sgdp_policy_params(t->pol);
    /* Ctrl-C ends the update between epochs on one rank (ranks must agree
     * on the epoch count, so under MPI the update finishes) */
    for (int e = 0;
         e < t->cfg.ppo.epochs && !(t->c.size == 1 && (op_interrupted() || past_deadline(t)));
         e++) {
        op_status st;
        if (kept >= 0) { /* the kept slot first, while its pass is in the arena */
            if ((st = slot_gradient(t, &t->slots[kept], e == 0 ? kept_pass : NULL, kept_logp, k,
                                    stats, err)))
                return st;
            rl_save_gradient(&t->c, ps, kept);
        }
        for (int b = t->c.rank; b < t->c.n_slots; b += t->c.size) {
            if (b == kept)
                continue;
            nn_tensor none = {0};
            if ((st = slot_gradient(t, &t->slots[b], NULL, none, k, stats, err)))
                return st;
            rl_save_gradient(&t->c, ps, b);
        }
        if ((st = rl_reduce_gradients(&t->c, ps, err)))
            return st;
        nn_params_clip_grad_norm(ps, t->cfg.ppo.max_grad_norm);
        nn_adam_step(&t->c.adam, ps);
    }
    return OP_OK;
}

static void report(sgdp_trainer *t, const task *tk, const ppo_stats *s, double mean_r, int last)
{
    if (!rl_report_due(&t->c, t->cfg.progress, &t->last_print, last))
        return;
    op_progress(t->cfg.progress,
                "sgdp: iteration %ld  %s: best %.1f us (%.3f x lower bound%s)  mean reward "
                "%.4f  entropy %.3f  kl %.2g  %.1f rollouts/s",
                t->stats.iterations, tk->p->g->name, tk->best_time,
                tk->best_time / (tk->p->lower_bound_us > 0 ? tk->p->lower_bound_us : 1.0),
                tk->best_oom ? ", OOM" : "", mean_r, s->entropy, s->approx_kl,
                t->stats.seconds > 0 ? (double)t->stats.rollouts / t->stats.seconds : 0.0);
}

/* Advantages against the batch's own mean (used around a reference): a
 * lagging moving average would make every sample of a policy that is
 * drifting away from the reference look bad, pushing the reference's own
 * choices down and the policy further away. */
static void batch_advantages(const double *rewards, int k, bool normalize, double *adv)
{
    ppo_baseline fresh;
    ppo_baseline_init(&fresh, 0.0);
    ppo_advantages(&fresh, rewards, k, normalize, adv); /* first use: b = batch mean */
}

/* Advantages for the calibrated acting policy: the residual of the reward
 * after a least-squares fit a + b * moves over the batch, over the
 * residuals' standard deviation.  Most moves hurt, so a sample with fewer
 * moves tends to do better; against the batch mean that would push every
 * decision's probability of moving down at once, a direction the
 * calibration removes again (measured: the log-odds of moving fell to
 * -130 on the held-out family while their spread, the ranking that
 * matters, stayed 0.2).  The residual keeps which moves did better than
 * moves usually do. */
static void moves_advantages(const double *rewards, const double *moves, int k, double *adv)
{
    double mr = 0.0, mm = 0.0, smm = 0.0, smr = 0.0;
    for (int i = 0; i < k; i++)
        mr += rewards[i] / k, mm += moves[i] / k;
    for (int i = 0; i < k; i++) {
        smm += (moves[i] - mm) * (moves[i] - mm);
        smr += (moves[i] - mm) * (rewards[i] - mr);
    }
    double b = smm > 1e-12 ? smr / smm : 0.0, var = 0.0;
    for (int i = 0; i < k; i++) {
        adv[i] = rewards[i] - mr - b * (moves[i] - mm);
        var += adv[i] * adv[i];
    }
    double sd = k > 2 ? sqrt(var / (k - 2)) : 0.0;
    for (int i = 0; i < k; i++)
        adv[i] = sd > 1e-12 ? adv[i] / sd : 0.0;
}

static op_status iterate(sgdp_trainer *t, op_error *err)
{
    int k = t->cfg.samples;
    /* every rank draws every slot's problem and generator */
    for (int b = 0; b < t->c.n_slots; b++) {
        slot *s = &t->slots[b];
        s->task = rl_draw_task(&t->c, t->n_tasks);
        s->base = nn_rng_fork(&t->c.rng, 0);
        choose_input(t, s);
    }
    int kept = -1;
    sgdp_pass *kept_pass = NULL;
    nn_tensor kept_logp = {0};
    op_status st;
    for (int b = t->c.rank; b < t->c.n_slots; b += t->c.size) {
        slot *s = &t->slots[b];
        nn_tensor eff;
        nn_arena_reset(&t->c.ar);
        use_input(t, s);
        if ((st = sgdp_policy_forward(t->pol, &t->c.ar, &t->tasks[s->task].sg, &kept_logp,
                                      &kept_pass, err)) ||
            (st = acting_policy(t, &t->tasks[s->task], s, 1, 1, &kept_logp, &eff, err)) ||
            (st = rollouts(t, s, &eff, k + 1, err)))
            return st;
        score(t, s, &eff, k + 1);
        kept = b;
    }
    if ((st = exchange_results(t, k + 1, err)))
        return st;
    double mean_r = 0.0;
    for (int b = 0; b < t->c.n_slots; b++) {
        slot *s = &t->slots[b];
        task *tk = &t->tasks[s->task];
        if (calibrated(t, tk, 1))
            moves_advantages(s->rewards, s->moves, k, s->adv);
        else if (tk->have_ref || !t->cfg.moving_baseline)
            batch_advantages(s->rewards, k, t->cfg.ppo.normalize_adv, s->adv);
        else
            ppo_advantages(&tk->base, s->rewards, k, t->cfg.ppo.normalize_adv, s->adv);
        const int *a = s->actions + (size_t)s->best_k * (size_t)tk->sg.n;
        if ((st = keep_best(tk, s->oom[s->best_k], s->step[s->best_k], a, err)))
            return st;
        for (int j = 0; j < k; j++)
            mean_r += s->rewards[j] / (k * t->c.n_slots);
    }
    t->stats.rollouts += (long)t->c.n_slots * (k + 1);
    ppo_stats s = {0};
    if ((st = ppo_update(t, kept, kept_pass, kept_logp, k, &s, err)))
        return st;
    if ((st = refresh_references(t, err)))
        return st;
    t->stats.iterations++;
    t->stats.last_mean_reward = mean_r;
    report(t, &t->tasks[t->slots[0].task], &s, mean_r, 0);
    return OP_OK;
}

/* ----------------------------------------------------- behaviour cloning */

/* One Adam step towards task tk's reference: cross-entropy of the decision
 * rows with a label-smoothed target; *match = mean probability of the
 * reference's device. */
static op_status clone_step(sgdp_trainer *t, task *tk, const int *target, double eps,
                            double *match, op_error *err)
{
    nn_params *ps = sgdp_policy_params(t->pol);
    const sgdp_graph *sg = &tk->sg;
    int D = sg->max_devices;
    nn_tensor logp, dlogp;
    sgdp_pass *pass;
    nn_arena_reset(&t->c.ar);
    op_status st;
    if ((st = sgdp_policy_forward(t->pol, &t->c.ar, sg, &logp, &pass, err)) ||
        (st = nn_arena_tensor(&t->c.ar, logp.rows, logp.cols, &dlogp, err)))
        return st;
    int m = 0;
    double p_sum = 0.0;
    for (int r = 0; r < sg->n; r++)
        m += sg->decides[r];
    for (int r = 0; r < sg->n; r++) {
        if (!sg->decides[r])
            continue;
        const unsigned char *mask = sg->mask + (size_t)r * D;
        int choices = 0, want = target[r];
        for (int d = 0; d < D; d++)
            choices += mask[d];
        p_sum += exp(NN_AT(&logp, r, want));
        if (choices < 2)
            continue;
        for (int d = 0; d < D; d++)
            if (mask[d]) {
                double q = d == want ? 1.0 - eps : eps / (choices - 1);
                NN_AT(&dlogp, r, d) = -q / m;
            }
    }
    *match = m ? p_sum / m : 1.0;
    nn_params_zero_grad(ps);
    if ((st = sgdp_policy_backward(t->pol, &t->c.ar, sg, pass, &dlogp, err)))
        return st;
    nn_params_clip_grad_norm(ps, t->cfg.ppo.max_grad_norm);
    nn_adam adam = t->c.adam;
    adam.lr = CLONE_LR_SCALE * t->c.adam.lr;
    nn_adam_step(&adam, ps);
    t->c.adam.step = adam.step;
    return OP_OK;
}

static double clone_eps(const task *tk)
{
    int u = 0;
    for (int r = 0; r < tk->sg.n; r++)
        u += tk->sg.decides[r];
    double eps = 2.0 / (u > 0 ? u : 1);
    return eps > 0.05 ? 0.05 : eps;
}

/* The reference to clone next (input and target): the task's own, or in
 * batch training, with probability input_variety, a relabelled copy of it
 * (varied inputs above; drawn from the shared generator, so every rank
 * draws the same), set as the task's input. */
static const int *clone_target(sgdp_trainer *t, task *tk)
{
    if (t->n_tasks < 2 || t->cfg.input_variety <= 0.0)
        return tk->ref_row;
    int *buf = t->slots[0].input, perm[1024];
    double u = nn_rng_uniform(&t->c.rng);
    if (u >= t->cfg.input_variety || tk->sg.nd > (int)(sizeof perm / sizeof *perm) ||
        !draw_relabelling(tk->p, &t->c.rng, perm))
        return tk->ref_row;
    memcpy(buf, tk->ref_row, (size_t)tk->sg.n * sizeof *buf);
    relabel(&tk->sg, perm, buf);
    follow_leaders(&tk->sg, buf);
    sgdp_graph_set_reference(&tk->sg, buf);
    return buf;
}

/* Clone every task's reference in turn until each matches to 1 - 2 eps,
 * clone_steps per task or the time share is spent.  Deterministic: the
 * stop test is decided on rank 0 and broadcast. */
static op_status warm_start(sgdp_trainer *t, double deadline, op_error *err)
{
    double t0 = rl_now_seconds();
    long steps = 0, limit = (long)t->cfg.clone_steps * t->n_tasks;
    int pending = 0;
    for (int i = 0; i < t->n_tasks; i++)
        pending += t->tasks[i].have_ref && !t->tasks[i].cloned;
    /* no step once the time share is spent (a step on 10^5 ops takes seconds) */
    int late = op_interrupted() || (deadline > 0 && t0 >= deadline);
    op_status st = pending > 0 ? op_par_bcast(&late, sizeof late, 0, err) : OP_OK;
    for (int i = 0; !st && !late && pending > 0 && steps < limit; i = (i + 1) % t->n_tasks) {
        task *tk = &t->tasks[i];
        if (!tk->have_ref || tk->cloned)
            continue;
        double eps = clone_eps(tk), match;
        const int *target = clone_target(t, tk);
        st = clone_step(t, tk, target, eps, &match, err);
        sgdp_graph_set_reference(&tk->sg, tk->ref_row);
        if (st)
            break;
        steps++;
        int stop[2] = {match >= 1.0 - 2.0 * eps,
                       op_interrupted() || (deadline > 0 && rl_now_seconds() >= deadline)};
        if ((st = op_par_bcast(stop, sizeof stop, 0, err)))
            break;
        if (stop[0]) {
            tk->cloned = 1;
            pending--;
        }
        if (stop[1])
            break;
    }
    for (int i = 0; i < t->n_tasks; i++)
        t->tasks[i].cloned = 1; /* once, whatever was reached */
    t->stats.clone_steps += steps;
    t->stats.clone_seconds += rl_now_seconds() - t0;
    if (t->cfg.progress && t->c.rank == 0 && steps > 0) {
        int u = 0;
        for (int r = 0; r < t->tasks[0].sg.n; r++)
            u += t->tasks[0].sg.decides[r];
        op_progress(t->cfg.progress,
                    "sgdp: cloned the reference (%s, %.1f us, %d decisions, eps %.4f) in %ld "
                    "steps, %.1f s%s",
                    t->tasks[0].ref.name, t->tasks[0].ref.step, u,
                    clone_eps(&t->tasks[0]), steps, rl_now_seconds() - t0,
                    op_interrupted() ? " (stopped at Ctrl-C)"
                    : sgdp_stopped() ? " (stopped: out of time)" : "");
    }
    return st;
}

int sgdp_trainer_proven(const sgdp_trainer *t, int i)
{
    const task *tk = &t->tasks[i];
    return tk->have_best && op_problem_at_bound(tk->p, tk->best_time, tk->best_oom);
}

/* Training stops at the proven bound (cfg.stop_at_bound) and every
 * problem's best-seen placement reaches it. */
static int done_when_proven(const sgdp_trainer *t)
{
    if (!t->cfg.stop_at_bound)
        return 0;
    for (int i = 0; i < t->n_tasks; i++)
        if (!sgdp_trainer_proven(t, i))
            return 0;
    return 1;
}

op_status sgdp_trainer_run(sgdp_trainer *t, op_error *err)
{
    if (t->cfg.iterations <= 0 && t->cfg.budget_seconds <= 0)
        return op_fail(err, OP_EUSAGE, "sgdp: give an iteration count or a time budget");
    double t0 = rl_now_seconds(), base_seconds = t->stats.seconds;
    long start_iter = t->stats.iterations;
    op_status st = OP_OK;
    int need_clone = 0;
    for (int i = 0; i < t->n_tasks; i++)
        need_clone |= t->cfg.warm_start && t->tasks[i].have_ref && !t->tasks[i].cloned;
    if (need_clone && !done_when_proven(t)) {
        double frac = t->cfg.clone_fraction > 0 ? t->cfg.clone_fraction : 1.0;
        double until = t->cfg.budget_seconds > 0 ? t0 + frac * t->cfg.budget_seconds : 0;
        if (t->cfg.deadline > 0) {
            double d = t0 + frac * (t->cfg.deadline - t0);
            until = until > 0 && until < d ? until : d;
        }
        st = warm_start(t, until, err);
    }
    double last = 0.0; /* the last iteration's duration */
    while (!st && !done_when_proven(t)) {
        long done = t->stats.iterations - start_iter;
        /* the deadline as a budget from t0, less the next iteration and
         * what follows (rank 0's value is broadcast) */
        double budget = t->cfg.budget_seconds;
        if (t->cfg.deadline > 0) {
            double b = t->cfg.deadline - (1.0 + t->cfg.reserve_iterations) * last - t0;
            b = b > 1e-9 ? b : 1e-9;
            budget = budget > 0 && budget < b ? budget : b;
        }
        int stop;
        if ((st = rl_decide_stop(done, t->cfg.iterations, t0, budget, &stop, err)) || stop)
            break;
        double t1 = rl_now_seconds();
        st = iterate(t, err);
        last = rl_now_seconds() - t1;
        t->stats.seconds = base_seconds + rl_now_seconds() - t0;
    }
    t->stats.seconds = base_seconds + rl_now_seconds() - t0;
    if (!st && t->stats.iterations > start_iter) {
        ppo_stats none = {0};
        report(t, &t->tasks[0], &none, t->stats.last_mean_reward, 1);
    }
    return sgdp_stop_ok(st, err);
}

op_status sgdp_trainer_evaluate(sgdp_trainer *t, int i, int samples, op_error *err)
{
    if (i < 0 || i >= t->n_tasks || samples < 0)
        return op_fail(err, OP_EINTERNAL, "sgdp: bad evaluation request");
    double t0 = rl_now_seconds();
    task *tk = &t->tasks[i];
    slot *s = &t->slots[0];
    s->task = i;
    s->base = nn_rng_fork(&t->c.rng, 0);
    nn_tensor raw, logp;
    nn_arena_reset(&t->c.ar);
    op_status st;
    if ((st = ensure_capacity(t, samples + 1, err)) ||
        (st = sgdp_policy_forward(t->pol, &t->c.ar, &tk->sg, &raw, NULL, err)) ||
        (st = acting_policy(t, tk, s, 0, 1, &raw, &logp, err)) ||
        (st = rollouts(t, s, &logp, samples + 1, err)))
        return sgdp_stop_ok(st, err);
    score(t, s, &logp, samples + 1);
    st = keep_best(tk, s->oom[s->best_k], s->step[s->best_k],
                   s->actions + (size_t)s->best_k * (size_t)tk->sg.n, err);
    if (!st)
        st = refresh_references(t, err);
    t->stats.rollouts += samples + 1;
    t->stats.seconds += rl_now_seconds() - t0;
    return st;
}

sgdp_best sgdp_trainer_best(const sgdp_trainer *t, int i)
{
    const task *tk = &t->tasks[i];
    return (sgdp_best){.placement = tk->have_best ? &tk->best : NULL,
                       .step_time_us = tk->best_time, .oom = tk->best_oom};
}

const op_portfolio_winner *sgdp_trainer_reference(const sgdp_trainer *t, int i)
{
    return t->tasks[i].have_ref ? &t->tasks[i].ref : NULL;
}

sgdp_train_stats sgdp_trainer_stats(const sgdp_trainer *t)
{
    return t->stats;
}

/* ------------------------------------------ for sgdp_search.c (internal) */

op_status sgdp_tr_capacity(sgdp_trainer *t, int k, op_error *err)
{
    return ensure_capacity(t, k, err);
}

int sgdp_tr_better(int oom_a, double time_a, int oom_b, double time_b)
{
    return op_sim_ranks_before(oom_a, time_a, oom_b, time_b);
}

op_status sgdp_tr_keep_best(sgdp_task *tk, int oom, double step, const int *row_dev,
                            op_error *err)
{
    return keep_best(tk, oom, step, row_dev, err);
}

op_status sgdp_tr_refresh(sgdp_trainer *t, op_error *err)
{
    return refresh_references(t, err);
}

op_status sgdp_tr_acting(sgdp_trainer *t, sgdp_task *tk, sgdp_slot *s, const nn_tensor *raw,
                         nn_tensor *eff, op_error *err)
{
    return acting_policy(t, tk, s, 0, 1, raw, eff, err);
}
