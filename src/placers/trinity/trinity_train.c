/*
 * trinity_train.c - joint PPO training of Trinity's partition and schedule
 * networks on the MDPE reward (the Trinity paper, section 4.2,
 * Algorithm 1, eqs. 12-15).
 *
 * One iteration has `slots` rollout batches (1 by default); each slot
 * draws one problem (at random when there are several) and:
 *   1. a sampling pass draws K placements: each op's group from the
 *      partition network (dropout on, its masks fixed for the iteration),
 *      then each rollout's device sequence from the schedule network, step
 *      by step; in the first noise_steps iterations the logits get uniform
 *      noise in [-noise_max, noise_max] (section 5.2: 500 steps, 0.1);
 *      the dropout masks and the sampling draws come from the slot's own
 *      generators, forked from the shared one;
 *   2. the K placements are simulated in parallel (one op_sim per worker,
 *      made once); worker w takes rollouts w, w+T, ..., every draw happened
 *      before in one thread, so results do not depend on the thread count;
 *   3. rewards R_k from MDPE (trinity_reward.c); advantages R_k - b with b
 *      the problem's exponential moving average of eq. 15 (period N: decay
 *      (N-1)/(N+1); slots in order), divided by the batch's reward
 *      deviation;
 *   4. `epochs` PPO epochs: per slot, a teacher-forced pass with the same
 *      dropout masks, the clipped surrogate (eq. 14) per decision (per op
 *      for the partition, per group for the schedule; learn/learn.h
 *      explains why the ratio is per decision), an entropy bonus; the
 *      slots' gradients are summed in slot order and divided by `slots`,
 *      then gradient clipping (norm 1.0) and one Adam step.  The two
 *      networks' losses are summed (joint optimisation).
 * The best placement ever simulated is kept by the constrained order of
 * trinity_reward.c (beyond the paper): within the tolerances first, then
 * no OOM, then the fastest (outside the tolerances: the highest reward);
 * so is a POOL of the cfg.pool best distinct placements (each slot's best
 * per iteration is offered), from which the placer makes its final choice.
 * THE JUDGE (beyond the paper, cfg.reward_order): a rollout's step time
 * and peak memory come from the simulator's first-ready-first schedule
 * (the paper) or from a priority list schedule of the rollout's own
 * placement (opplace/list_schedule.h: op_placement_priorities, O(V+E),
 * into the worker's buffer, then op_sim_dispatch_by_priority on the
 * worker's reused simulator, no allocation in the simulator) under a
 * per-device memory cap of 100, 95 or 90 % of M^; auto takes the
 * priority (or FIFO) and the cap that are best for the reference.  Peak
 * communication does not depend on the order.  Why: on these graphs the
 * list schedule cuts 11-38 % off first-ready-first (bench/RESULTS.md), and
 * a placement that is best first-ready-first need not be best ordered.
 * With a reference placement (cfg->heuristics, trinity_warm.c, beyond the
 * paper) the record starts with the reference, the priors are centred on
 * it, and the tolerances may be its peaks (comm/mem_from_reference), so
 * the result is never worse than the reference on step time, peak
 * communication or peak memory.
 *
 * MPI (core/parallel.h), as in sgdp_train.c and with the same
 * code (rollout_common.c, which also holds the worker threads): slot b
 * belongs to rank b mod size, which alone samples, simulates and
 * backpropagates it.  Every rank draws the same problems and generators (the
 * shared RNG advances identically), the slots' rewards, best placements and
 * gradients are exchanged with op_par_allreduce_sum over buffers in which
 * only the owner's entries are non-zero (so each sum is exact: x + 0), and
 * every rank then sums the slots in the same order and takes the same Adam
 * step: for a fixed iteration count the weights and placements are
 * bit-identical for any rank count, given the same BLAS thread count on
 * every rank (OpenBLAS with 1 and 2 threads differs in the last bits; mpirun
 * binds each rank to a core, so OpenBLAS runs one thread).  Rank 0 decides
 * when the time budget is spent and broadcasts it, so a budget-bounded run
 * is not reproducible (nor is it with one rank).  Ranks beyond `slots`
 * idle.  The final evaluation (trinity_trainer_evaluate) runs the same draws
 * on every rank.
 *
 * Differences from the paper: K = 16 rollouts per update; Adam's learning
 * rate 3e-3 (SGDP's setting for the same mean-over-decisions loss) instead
 * of the paper's 0.1, which we did not try; advantages are normalised; a
 * rollout that runs out of memory loses another 1.0 of reward on top of
 * the MDPE memory penalty; the logit noise is not counted in old_logp (the
 * behaviour policy differs from pi_old by at most the noise).  Beyond the
 * paper: cfg.explore (0 here, 1 in the placer and `opplace train`) draws
 * about that many decisions per rollout of each network uniformly among
 * the allowed choices (at most 10 % of them), so exploration survives
 * once PPO has converged on the reference; like the noise, these draws are
 * not counted in old_logp.  With a reference (trinity_warm.c) each task
 * has its own reward configuration: the tolerances may be the reference's
 * peaks.
 * RL fixes (--paper uses them, trinity_paper_settings; not the paper's):
 * cfg.marginal scores each op's partition decision by the probability of
 * the device its group was mapped to (trinity_marginal_loss), the
 * structure initialisation (structure_fit, below), the centred policy
 * (trinity_policy.c) with lr 3e-3 and no entropy bonus, and cfg.ppo_dropout
 * = 0: the sampling and update passes run the partition network without
 * its dropout (the structure fit keeps it).  With the paper's dropout in
 * those passes one mask per iteration, shared by every rollout, makes each
 * iteration sample a different sub-network: up to 10x the per-op
 * partition entropy, more scattered single ops per rollout, groups that
 * shift under the schedule network (GNMT-2 x 4, 150 iterations: 77.55 /
 * 82.19 / 82.38 ms with it, 68.97 / 70.74 / 80.54 without, seeds 1-3;
 * `git show a73efb8:bench/notes/s10-trinity.md`).
 * The logit noise of section 5.2 is the paper's (the first 500
 * iterations, U(-0.1, 0.1)) and on in every --paper run of <= 500
 * iterations.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/placer.h"
#include "opplace/list_schedule.h"
#include "core/parallel.h"
#include "opplace/search.h"
#include "placers/trinity/trinity_internal.h"
#include "learn/rollout_common.h"

#define SHARE_METRICS 5 /* step_us, peak_comm, peak_mem, oom, reward */

typedef struct task {
    const op_problem *p;
    trinity_graph tg;
    trinity_batch batch[TRINITY_MAX_SLOTS]; /* per slot, made on the owner's first use */
    rl_sims sim; /* one simulator per worker thread */
    ppo_baseline base;
    trinity_reward_config reward; /* the configured one, tolerances maybe from the reference */
    int *best;            /* device_of of the best placement */
    int have_best;
    trinity_metrics best_m;
    int have_ref;
    trinity_reference ref; /* ref.device_of points at ref_dev */
    int *ref_dev;
    int order;             /* the judge: OP_PRIORITY_FIFO or a priority (auto resolved) */
    int64_t *cap;          /* per device: the list schedule's memory cap, cap_share x M^ */
    double cap_share;
    double *prio;          /* threads x n: each worker's priorities */
    int *pool_dev;         /* pool_cap x n: distinct best placements, best first */
    trinity_metrics *pool_m;
    int pool_n, pool_cap;
} task;

/* One rollout batch: K rollouts of one problem. */
typedef struct slot {
    int task;
    nn_rng dropout, sample; /* drawn by every rank */
    trinity_metrics *m;     /* cap, per rollout (the owner's) */
    double *rewards, *adv;  /* cap */
    int *best_dev;          /* n_max: the slot's best placement */
    trinity_metrics best_m;
    double groups_used, devices_used; /* mean over the sampled rollouts (the progress line) */
} slot;

struct trinity_trainer {
    trinity_policy *pol;
    trinity_train_config cfg;
    rl_core c; /* threads, ranks, arena, Adam, RNG, gradient rows; share:
                  slots x (cap + SHARE_METRICS + n_max) */
    task *tasks;
    int n_tasks, n_max;
    int cap;
    slot slots[TRINITY_MAX_SLOTS];
    trinity_train_stats stats;
    double last_print;
    long noise_iter;  /* iterations done, for the noise schedule */
    double ents[2];   /* the last update's mean entropy: partition, schedule */
    int cut_short;    /* an iteration's rollouts were cut by the deadline: training ends */
};

trinity_train_config trinity_train_defaults(void)
{
    ppo_config ppo = ppo_defaults();
    ppo.epochs = 4;
    ppo.lr = 3e-3;
    ppo.entropy_coef = 0.01;
    return (trinity_train_config){.ppo = ppo, .samples = 16, .iterations = 0,
                                  .budget_seconds = 60, .threads = 0, .seed = 1,
                                  .ema_period = 9, .ppo_dropout = 1, .noise_steps = 500,
                                  .noise_max = 0.1,
                                  .reward = trinity_reward_defaults(),
                                  .n2v = node2vec_defaults(), .progress = NULL, .slots = 1,
                                  .explore = 0.0, .heuristics = NULL, .unit_target = 0,
                                  .comm_from_reference = 0, .mem_from_reference = 0,
                                  .reward_order = OP_PRIORITY_FIFO,
                                  .pool = TRINITY_DEFAULT_POOL};
}

/* ---------------------------------------------------------------- tasks */

static void task_destroy(task *tk)
{
    rl_sims_destroy(&tk->sim);
    for (int b = 0; b < TRINITY_MAX_SLOTS; b++)
        trinity_batch_destroy(&tk->batch[b]);
    trinity_graph_destroy(&tk->tg);
    free(tk->best);
    free(tk->ref_dev);
    free(tk->cap);
    free(tk->prio);
    free(tk->pool_dev);
    free(tk->pool_m);
}

/* ------------------------------------------------------------- the judge */

/* Simulate the placement in worker w's pl (no order of its own) with the
 * schedule `order`: first-ready-first, or the list schedule of that
 * priority under the memory cap M^ (opplace/list_schedule.h); the
 * priorities are the placement's own (O(V+E)), in the worker's buffer. */
static op_status judge_run(task *tk, int w, int order, trinity_metrics *m, op_error *err)
{
    op_placement *pl = &tk->sim.pls[w];
    double *prio = NULL;
    if (order != OP_PRIORITY_FIFO) {
        prio = tk->prio + (size_t)w * (size_t)tk->p->n;
        op_status st = op_placement_priorities(tk->p, pl->device_of, (op_priority)order, prio, err);
        if (st)
            return st;
    }
    return trinity_judge(tk->p, tk->sim.sims[w], pl, &tk->sim.res[w], prio, tk->cap, &tk->reward,
                         m, err);
}

/* ------------------------------------------------------------------ pool */

/* Offer a placement to the pool: kept, in rank order, when it is not
 * there yet and ranks among the pool_cap best by the constrained order. */
static void pool_offer(task *tk, const int *dev, const trinity_metrics *m)
{
    size_t n = (size_t)tk->p->n;
    for (int j = 0; j < tk->pool_n; j++)
        if (!memcmp(tk->pool_dev + (size_t)j * n, dev, n * sizeof *dev))
            return;
    int pos = tk->pool_n;
    while (pos > 0 && trinity_metrics_better(m, &tk->pool_m[pos - 1], &tk->reward))
        pos--;
    if (pos >= tk->pool_cap)
        return;
    int last = tk->pool_n < tk->pool_cap ? tk->pool_n : tk->pool_cap - 1;
    memmove(tk->pool_dev + (size_t)(pos + 1) * n, tk->pool_dev + (size_t)pos * n,
            (size_t)(last - pos) * n * sizeof *dev);
    memmove(tk->pool_m + pos + 1, tk->pool_m + pos, (size_t)(last - pos) * sizeof *m);
    memcpy(tk->pool_dev + (size_t)pos * n, dev, n * sizeof *dev);
    tk->pool_m[pos] = *m;
    if (tk->pool_n < tk->pool_cap)
        tk->pool_n++;
}

/* The reference placement of cfg->heuristics (trinity_warm.c) into
 * tk->ref_dev; have_ref stays 0 when no heuristic could place the graph. */
static op_status find_reference(task *tk, const trinity_train_config *cfg, op_error *err)
{
    if (!cfg->heuristics || !*cfg->heuristics)
        return OP_OK;
    if (!(tk->ref_dev = op_calloc((size_t)tk->p->n, sizeof(int), err)))
        return OP_ENOMEM;
    op_error e = {0};
    op_status st = trinity_reference_place(tk->p, cfg->heuristics, cfg->seed, tk->ref_dev,
                                           tk->ref.name, sizeof tk->ref.name, &e);
    if (st == OP_EINFEASIBLE) /* none placed it: train without a reference */
        return OP_OK;
    if (st) {
        if (err)
            *err = e;
        return st;
    }
    tk->have_ref = 1;
    tk->ref.device_of = tk->ref_dev;
    return OP_OK;
}

/* Simulate the reference first-ready-first; its peaks become the
 * tolerances the config asks for. */
static op_status measure_reference(task *tk, const trinity_train_config *cfg, op_error *err)
{
    op_placement *pl = &tk->sim.pls[0];
    op_sim_result *r = &tk->sim.res[0];
    memcpy(pl->device_of, tk->ref_dev, sizeof(int) * (size_t)tk->p->n);
    op_status st = op_sim_run(tk->sim.sims[0], pl, r, NULL, err);
    if (st)
        return st;
    trinity_metrics m = trinity_measure(tk->p, r, &tk->reward);
    if (cfg->comm_from_reference)
        tk->reward.max_comm_bytes = (double)m.peak_comm;
    if (cfg->mem_from_reference)
        tk->reward.max_mem_bytes = (double)m.peak_mem;
    tk->ref.m = trinity_measure(tk->p, r, &tk->reward);
    return OP_OK;
}

static void set_cap(task *tk, double share)
{
    tk->cap_share = share;
    for (int d = 0; d < tk->p->nd; d++)
        tk->cap[d] = (int64_t)fmin(share * tk->reward.max_mem_bytes, 9e18);
}

/* The judge of the task's rollouts: reward_order with auto resolved (the
 * best of FIFO and the three priorities for the reference; blevel without
 * one), and the memory cap: 100, 95 or 90 % of M^, the one best for the
 * reference (the cap is a target that received tensors may overshoot, so
 * 100 % can leave the reference's ordered peak above M^); the reference
 * judged so seeds the best-seen record and the pool. */
typedef struct judge_choice {
    task *tk;
    int order, first;
    double share;
} judge_choice;

/* The reference judged by priority k (trinity_order_judge's keep); keeps
 * the best. */
static void keep_reference(void *arg, op_priority k, double share, const trinity_metrics *m)
{
    judge_choice *c = arg;
    task *tk = c->tk;
    if (c->first || trinity_metrics_better(m, &tk->ref.judged, &tk->reward)) {
        tk->ref.judged = *m;
        c->order = (int)k, c->share = share, c->first = 0;
    }
}

static op_status set_judge(task *tk, const trinity_train_config *cfg, op_error *err)
{
    set_cap(tk, 1.0);
    tk->order = cfg->reward_order;
    if (!tk->have_ref) {
        if (tk->order == TRINITY_REWARD_ORDER_AUTO)
            tk->order = OP_PRIORITY_BLEVEL;
        return OP_OK;
    }
    memcpy(tk->sim.pls[0].device_of, tk->ref_dev, sizeof(int) * (size_t)tk->p->n);
    int lo = tk->order, hi = tk->order;
    judge_choice c = {tk, tk->order, 1, 1.0};
    trinity_order_judge oj = {tk->p,       tk->sim.sims[0], &tk->sim.pls[0],
                              &tk->sim.res[0], &tk->reward, tk->prio, -1,
                              op_par_size() == 1 ? cfg->setup_deadline : 0.0, keep_reference,
                              &c};
    if (tk->order == TRINITY_REWARD_ORDER_AUTO)
        lo = OP_PRIORITY_FIFO, hi = OP_PRIORITY_COUNT - 1;
    op_status st = OP_OK;
    if (lo == OP_PRIORITY_FIFO &&
        !(st = trinity_order_judge_visit(&oj, OP_PRIORITY_FIFO, 1.0, tk->cap, NULL, err)))
        lo++;
    op_priority prios[OP_PRIORITY_COUNT];
    for (int k = lo; k <= hi; k++)
        prios[k - lo] = (op_priority)k;
    /* the priorities x 100, 95 and 90 % of M^ (opplace/search.h) */
    op_order_space sp = {.caps = OP_CAPS_SHARES, .base = tk->reward.max_mem_bytes,
                         .prio_outer = 1, .priorities = prios, .n_priorities = hi - lo + 1};
    if (!st && lo <= hi)
        st = op_order_search(tk->p, &sp, tk->cap, trinity_order_judge_visit, &oj, err);
    if (st)
        return st;
    tk->order = c.order;
    set_cap(tk, c.share);
    memcpy(tk->best, tk->ref_dev, sizeof(int) * (size_t)tk->p->n);
    tk->best_m = tk->ref.judged;
    tk->have_best = 1;
    pool_offer(tk, tk->ref_dev, &tk->ref.judged);
    return OP_OK;
}

static op_status task_init(task *tk, const op_problem *p, const trinity_config *pc,
                           const trinity_train_config *cfg, int threads, op_error *err)
{
    memset(tk, 0, sizeof *tk);
    tk->p = p;
    tk->reward = cfg->reward;
    int N = cfg->ema_period > 0 ? cfg->ema_period : 1;
    ppo_baseline_init(&tk->base, (double)(N - 1) / (double)(N + 1));
    /* the set-up deadline on one rank only: ranks must compute the same
     * features and choose the same judge */
    double setup_deadline = op_par_size() == 1 ? cfg->setup_deadline : 0.0;
    node2vec_config n2v = cfg->n2v;
    n2v.deadline = setup_deadline;
    op_status st = trinity_graph_init(&tk->tg, p, pc, &n2v, err);
    if (!st && !(tk->best = op_calloc((size_t)p->n, sizeof(int), err)))
        st = OP_ENOMEM;
    if (!st)
        st = find_reference(tk, cfg, err);
    if (!st && tk->have_ref)
        st = trinity_graph_set_reference(&tk->tg, tk->ref_dev, cfg->unit_target, cfg->n2v.seed,
                                         err);
    if (!st)
        st = rl_sims_init(&tk->sim, p, threads, err);
    tk->pool_cap = cfg->pool > 0 ? cfg->pool : 1;
    if (!st && (!(tk->cap = op_calloc((size_t)p->nd, sizeof *tk->cap, err)) ||
                !(tk->prio = op_calloc((size_t)threads * (size_t)p->n, sizeof(double), err)) ||
                !(tk->pool_dev = op_calloc((size_t)tk->pool_cap * (size_t)p->n, sizeof(int),
                                           err)) ||
                !(tk->pool_m = op_calloc((size_t)tk->pool_cap, sizeof *tk->pool_m, err))))
        st = OP_ENOMEM;
    if (!st && tk->have_ref)
        st = measure_reference(tk, cfg, err);
    if (!st)
        st = set_judge(tk, cfg, err);
    return st;
}

/* Slot b's batch for task tk, holding t->cap rollouts. */
static op_status task_batch(trinity_trainer *t, task *tk, int b, trinity_batch **out,
                            op_error *err)
{
    trinity_batch *bt = &tk->batch[b];
    if (bt->cap < t->cap) {
        trinity_batch_destroy(bt);
        op_status st = trinity_batch_init(bt, &tk->tg, t->cap, err);
        if (st)
            return st;
    }
    *out = bt;
    return OP_OK;
}

static void slot_free(slot *s)
{
    free(s->m), free(s->rewards), free(s->adv), free(s->best_dev);
    memset(s, 0, sizeof *s);
}

static op_status ensure_capacity(trinity_trainer *t, int k, op_error *err)
{
    if (k <= t->cap)
        return OP_OK;
    t->cap = 0;
    for (int b = 0; b < t->c.n_slots; b++) {
        slot *s = &t->slots[b];
        slot_free(s);
        s->m = op_calloc((size_t)k, sizeof *s->m, err);
        s->rewards = op_calloc((size_t)k, sizeof(double), err);
        s->adv = op_calloc((size_t)k, sizeof(double), err);
        s->best_dev = op_calloc((size_t)t->n_max, sizeof(int), err);
        if (!s->m || !s->rewards || !s->adv || !s->best_dev)
            return OP_ENOMEM;
    }
    t->cap = k; /* batches grow on their next use (task_batch) */
    op_status st = rl_core_share_alloc(&t->c, (size_t)k + SHARE_METRICS + (size_t)t->n_max, err);
    if (st)
        t->cap = 0;
    return st;
}

/* STRUCTURE INITIALISATION (trinity_train_config.structure_init; --paper
 * uses it).  The paper feeds Node2vec vectors
 * to the partition network so that its groups follow the graph's structure
 * (the Trinity paper, section 1 (2) and 4.1.1).  A randomly initialised
 * network does not do that: its group distributions are nearly uniform
 * (GNMT-2: mean largest probability 0.11 of 64 groups), so a sampled
 * partition puts each op in a random group (2.8 % of the data edges inside
 * a group, each group spanning 97 % of the topological order) and every
 * group move is a scattered per-op move, which from one device is always
 * slower (the one-device trap).  Here the partition network is first fitted,
 * by cross-entropy, to a k-means clustering of its own Node2vec inputs
 * (trinity_structure_groups), until the mean probability of an op's
 * cluster reaches structure_init (at most STRUCTURE_STEPS Adam steps, the
 * set-up deadline, Ctrl-C).  No placement, device or reward is used: the
 * policy then samples coherent groups, and PPO starts with the schedule
 * network placing them.  Adam's moments are cleared afterwards. */
#define STRUCTURE_STEPS 300
#define STRUCTURE_LR 1e-2

static op_status structure_fit(trinity_trainer *t, op_error *err)
{
    nn_params *ps = trinity_policy_params(t->pol);
    int G = trinity_policy_config(t->pol)->groups;
    int **label = op_calloc((size_t)t->n_tasks, sizeof *label, err);
    if (!label)
        return OP_ENOMEM;
    op_status st = OP_OK;
    /* ranks must fit alike: the set-up deadline on one rank only (task_init) */
    double deadline = op_par_size() == 1 ? t->cfg.setup_deadline : 0.0;
    double inside = 0.0; /* share of data edges inside a cluster, over the tasks */
    for (int i = 0; !st && i < t->n_tasks; i++) {
        const trinity_graph *tg = &t->tasks[i].tg;
        const op_graph *g = tg->p->g;
        if (!(label[i] = op_malloc(sizeof(int) * (size_t)(tg->n > 0 ? tg->n : 1), err)))
            st = OP_ENOMEM;
        if (!st)
            st = trinity_structure_groups(tg, G, t->cfg.seed, deadline, label[i],
                                          err);
        int in = 0;
        for (int x = 0; !st && x < g->n_edges; x++)
            in += label[i][g->edge_src[x]] == label[i][g->edge_dst[x]];
        inside += g->n_edges > 0 ? (double)in / g->n_edges / t->n_tasks : 0.0;
    }
    nn_adam adam = nn_adam_defaults(STRUCTURE_LR);
    nn_rng drop = nn_rng_fork(&t->c.rng, 3);
    double mean_p = 0.0;
    int steps = 0;
    /* no step past the deadline: one over 10^5 ops takes seconds */
    for (; !st && steps < STRUCTURE_STEPS && !(deadline > 0 && rl_now_seconds() > deadline);
         steps++) {
        nn_params_zero_grad(ps);
        mean_p = 0.0;
        for (int i = 0; !st && i < t->n_tasks; i++) {
            const trinity_graph *tg = &t->tasks[i].tg;
            trinity_run run = {.training = 1, .dropout_rng = nn_rng_fork(&drop, (uint64_t)i)};
            nn_tensor lp, dlp;
            trinity_pass *pass;
            nn_arena_reset(&t->c.ar);
            if ((st = trinity_policy_partition_forward(t->pol, &t->c.ar, tg, &run, &lp, &pass,
                                                       err)) ||
                (st = nn_arena_tensor(&t->c.ar, lp.rows, lp.cols, &dlp, err)))
                break;
            int m = 0;
            for (int j = 0; j < tg->n; j++)
                m += tg->decides[j] != 0;
            for (int j = 0; j < tg->n; j++)
                if (tg->decides[j]) {
                    NN_AT(&dlp, j, label[i][j]) = -1.0 / ((double)m * t->n_tasks);
                    mean_p += exp(NN_AT(&lp, j, label[i][j])) / ((double)m * t->n_tasks);
                }
            st = trinity_policy_backward(t->pol, &t->c.ar, tg, NULL, pass, &dlp, NULL, err);
        }
        if (st || mean_p >= t->cfg.structure_init || (op_par_size() == 1 && op_interrupted()) ||
            (deadline > 0 && rl_now_seconds() > deadline))
            break;
        nn_params_clip_grad_norm(ps, t->cfg.ppo.max_grad_norm);
        nn_adam_step(&adam, ps);
    }
    for (size_t j = 0; j < ps->count; j++) { /* PPO's Adam starts afresh */
        nn_tensor_fill(&ps->items[j]->m, 0.0);
        nn_tensor_fill(&ps->items[j]->v, 0.0);
    }
    for (int i = 0; i < t->n_tasks; i++)
        free(label[i]);
    free(label);
    if (!st)
        op_progress(t->cfg.progress,
                    "trinity: structure initialisation: %d k-means groups of the Node2vec "
                    "vectors (%.1f %% of the data edges inside a group), the partition network "
                    "fitted in %d steps (mean probability of an op's group %.3f)",
                    G, 100.0 * inside, steps, mean_p);
    return st;
}

trinity_trainer *trinity_trainer_new(trinity_policy *pol, const op_problem *const *problems,
                                     int n, const trinity_train_config *cfg, op_error *err)
{
    if (n < 1 || cfg->samples < 1 || cfg->ppo.epochs < 1) {
        op_fail(err, OP_EUSAGE, "trinity: need a graph, samples >= 1 and epochs >= 1");
        return NULL;
    }
    if (cfg->slots < 1 || cfg->slots > TRINITY_MAX_SLOTS) {
        op_fail(err, OP_EUSAGE, "trinity: rollout batches per iteration must lie in [1, %d]",
                TRINITY_MAX_SLOTS);
        return NULL;
    }
    trinity_trainer *t = op_calloc(1, sizeof *t, err);
    if (!t)
        return NULL;
    double t0 = rl_now_seconds();
    t->pol = pol;
    t->cfg = *cfg;
    op_status st = rl_core_init(&t->c, trinity_policy_params(pol), cfg->threads, cfg->slots,
                                cfg->ppo.lr, cfg->seed, (size_t)1 << 22, err);
    if (!st && !(t->tasks = op_calloc((size_t)n, sizeof *t->tasks, err)))
        st = OP_ENOMEM;
    for (int i = 0; !st && i < n; i++) {
        st = task_init(&t->tasks[i], problems[i], trinity_policy_config(pol), cfg, t->c.threads,
                       err);
        t->n_tasks = i + 1;
        if (problems[i]->n > t->n_max)
            t->n_max = problems[i]->n;
    }
    if (!st && cfg->structure_init > 0 && trinity_policy_take_fresh(pol))
        st = structure_fit(t, err);
    if (!st)
        st = ensure_capacity(t, cfg->samples + 1, err);
    if (st) {
        trinity_trainer_free(t);
        return NULL;
    }
    t->stats.setup_seconds = rl_now_seconds() - t0;
    return t;
}

void trinity_trainer_free(trinity_trainer *t)
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

/* What every rollout of one batch reads. */
typedef struct rollout_ctx {
    const trinity_trainer *t;
    task *tk;
    const trinity_batch *batch;
    trinity_metrics *m;
    double deadline; /* > 0: rollouts not started by then are not simulated */
} rollout_ctx;

/* A rollout the deadline left unsimulated (step +inf, reward -inf). */
static int rollout_cut(const trinity_metrics *m)
{
    return isinf(m->step_us) && m->reward == -INFINITY;
}

/* A rollout the deadline cut: not simulated (rollout_cut). */
static trinity_metrics cut_metrics(void)
{
    return (trinity_metrics){.step_us = INFINITY, .peak_comm = INT64_MAX, .peak_mem = INT64_MAX,
                             .oom = 1, .reward = -INFINITY};
}

/* Rollout k (drawn before, in one thread) simulated on worker w. */
static op_status run_rollout(void *arg, int w, int k, op_error *err)
{
    rollout_ctx *c = arg;
    task *tk = c->tk;
    if (c->deadline > 0 && rl_now_seconds() > c->deadline) {
        c->m[k] = cut_metrics();
        return OP_OK;
    }
    trinity_batch_placement(&tk->tg, c->batch, k, tk->sim.pls[w].device_of);
    return judge_run(tk, w, tk->order, &c->m[k], err);
}

/* Simulate rollouts 0..k-1 of the batch into m; those not started by
 * deadline (> 0) are cut instead. */
static op_status simulate(trinity_trainer *t, task *tk, const trinity_batch *batch,
                          trinity_metrics *m, int k, double deadline, op_error *err)
{
    rollout_ctx c = {.t = t, .tk = tk, .batch = batch, .m = m, .deadline = deadline};
    return rl_run_rollouts(t->c.threads, k, run_rollout, &c, &t->stats.sim_seconds, err);
}


/* The slot's best rollout (of k) into s->best_dev and s->best_m. */
static void slot_best(const task *tk, const trinity_batch *batch, slot *s, int k)
{
    int best_k = 0; /* a simulated one when there is one */
    for (int j = 1; j < k; j++)
        if (!rollout_cut(&s->m[j]) &&
            (rollout_cut(&s->m[best_k]) || trinity_metrics_better(&s->m[j], &s->m[best_k],
                                                                   &tk->reward)))
            best_k = j;
    trinity_batch_placement(&tk->tg, batch, best_k, s->best_dev);
    s->best_m = s->m[best_k];
}

/* The mean number of non-empty groups and of devices holding ops over the
 * batch's k rollouts (the progress line's learning curve). */
static void occupancy(task *tk, const trinity_batch *batch, slot *s, int k)
{
    int G = batch->groups, n = tk->p->n, nd = tk->p->nd;
    int *dev = tk->sim.pls[0].device_of; /* free between simulations */
    s->groups_used = s->devices_used = 0.0;
    for (int r = 0; r < k; r++) {
        int gu = 0, du = 0;
        for (int g = 0; g < G; g++)
            gu += batch->gdecides[(size_t)r * G + g] != 0;
        trinity_batch_placement(&tk->tg, batch, r, dev);
        unsigned char seen[1024] = {0};
        for (int i = 0; i < n; i++)
            if (dev[i] >= 0 && dev[i] < nd && dev[i] < 1024 && !seen[dev[i]])
                seen[dev[i]] = 1, du++;
        s->groups_used += (double)gu / k;
        s->devices_used += (double)du / k;
    }
}

/* The task's best-ever record and pool, from a slot's best. */
static void keep_best(task *tk, const slot *s)
{
    pool_offer(tk, s->best_dev, &s->best_m);
    if (tk->have_best && !trinity_metrics_better(&s->best_m, &tk->best_m, &tk->reward))
        return;
    memcpy(tk->best, s->best_dev, (size_t)tk->p->n * sizeof *tk->best);
    tk->best_m = s->best_m;
    tk->have_best = 1;
}

/* ---------------------------------------------------------- MPI shares */

typedef struct share_ctx {
    trinity_trainer *t;
    int k;
} share_ctx;

/* Slot b's rewards, best metrics and best placement. */
static void pack_slot(void *arg, int b, double *sh)
{
    share_ctx *c = arg;
    trinity_trainer *t = c->t;
    const slot *s = &t->slots[b];
    double *mt = sh + t->cap;
    memcpy(sh, s->rewards, (size_t)c->k * sizeof *sh);
    mt[0] = s->best_m.step_us;
    mt[1] = (double)s->best_m.peak_comm; /* exact below 2^53 bytes */
    mt[2] = (double)s->best_m.peak_mem;
    mt[3] = s->best_m.oom;
    mt[4] = s->best_m.reward;
    for (int i = 0; i < t->tasks[s->task].p->n; i++)
        mt[SHARE_METRICS + i] = s->best_dev[i];
}

static void unpack_slot(void *arg, int b, const double *sh)
{
    share_ctx *c = arg;
    trinity_trainer *t = c->t;
    slot *s = &t->slots[b];
    const double *mt = sh + t->cap;
    memcpy(s->rewards, sh, (size_t)c->k * sizeof *sh);
    s->best_m = (trinity_metrics){.step_us = mt[0], .peak_comm = (int64_t)mt[1],
                                  .peak_mem = (int64_t)mt[2], .oom = (int)mt[3],
                                  .reward = mt[4]};
    for (int i = 0; i < t->tasks[s->task].p->n; i++)
        s->best_dev[i] = (int)mt[SHARE_METRICS + i];
}

/* Every rank gets every slot's rewards and best placement. */
static op_status exchange_results(trinity_trainer *t, int k, op_error *err)
{
    share_ctx c = {.t = t, .k = k};
    return rl_exchange(&t->c, pack_slot, unpack_slot, &c, err);
}

/* ---------------------------------------------------------- PPO update */

/* log sum_{g: dev[g] = d} exp(lp[g]) for every device d < D into lq (-INFINITY
 * where no group maps to d): an op's device distribution given the rollout's
 * group -> device map. */
static void device_marginal(const double *lp, const int *dev, int G, int D, double *lq)
{
    for (int d = 0; d < D; d++)
        lq[d] = -INFINITY;
    for (int g = 0; g < G; g++)
        if (lp[g] > lq[dev[g]])
            lq[dev[g]] = lp[g];
    double sum[1024] = {0}; /* D <= 1024 (trinity_config_check) */
    for (int g = 0; g < G; g++)
        if (isfinite(lp[g]))
            sum[dev[g]] += exp(lp[g] - lq[dev[g]]);
    for (int d = 0; d < D; d++)
        if (isfinite(lq[d]))
            lq[d] += log(sum[d]);
}

/* MARGINAL (cfg.marginal): the reward depends on each op's device, not on
 * which of the groups mapped to that device it joined.  So the partition's
 * decision for op i in rollout r is scored by q_i(d) = sum of p_i(g) over
 * the groups g the rollout maps to d, at d = the device of its group: the
 * conditional expectation of the per-group score given the rollout's
 * devices (Rao-Blackwell; exact when the schedule does not read the
 * partition, and one op moves the group features it reads by ~1/n).  The
 * expected gradient is the same, without the noise of the choice among a
 * device's ~G/nd groups.  old_part then holds log q_i(d_i) under the
 * sampling policy (marginal_old). */
void trinity_marginal_old(const trinity_graph *tg, trinity_batch *b, int k, const nn_tensor *lp)
{
    int n = tg->n, G = b->groups, D = b->max_devices;
    double lq[1024];
    for (int r = 0; r < k; r++) {
        const int *dev = b->device + (size_t)r * G;
        for (int i = 0; i < n; i++)
            if (tg->decides[i]) {
                device_marginal(&NN_AT(lp, i, 0), dev, G, D, lq);
                b->old_part[(size_t)r * n + i] = lq[dev[b->group[(size_t)r * n + i]]];
            }
    }
}

/* Rollout by rollout: the surrogate over q (above), its gradient taken back
 * to the group log-probabilities: dlp[g] += dlq[dev g] * p(g) / q(dev g). */
op_status trinity_marginal_loss(nn_arena *ar, const ppo_config *cfg, const trinity_graph *tg,
                                const trinity_batch *b, const double *adv, int k,
                                const nn_tensor *lp, nn_tensor *d_part, ppo_stats *out,
                                op_error *err)
{
    int n = tg->n, G = b->groups, D = b->max_devices;
    ppo_config one = *cfg;
    one.entropy_coef /= k;
    *out = (ppo_stats){0};
    nn_tensor lq, dlq;
    int *act = nn_arena_alloc(ar, sizeof(int) * (size_t)n, err);
    if (!act || nn_arena_tensor(ar, n, D, &lq, err) || nn_arena_tensor(ar, n, D, &dlq, err))
        return OP_ENOMEM;
    for (int r = 0; r < k; r++) {
        const int *dev = b->device + (size_t)r * G, *grp = b->group + (size_t)r * n;
        for (int i = 0; i < n; i++) {
            act[i] = dev[grp[i]];
            if (tg->decides[i])
                device_marginal(&NN_AT(lp, i, 0), dev, G, D, &NN_AT(&lq, i, 0));
        }
        nn_tensor_fill(&dlq, 0.0);
        double a = adv[r] / k;
        ppo_stats s = {0};
        ppo_factored_loss(&one, &lq, act, b->old_part + (size_t)r * n, &a, 1, tg->decides, &dlq,
                          &s);
        out->loss += s.loss;
        out->surrogate += s.surrogate;
        out->entropy += s.entropy / k;
        out->clip_frac += s.clip_frac / k;
        out->approx_kl += s.approx_kl / k;
        for (int i = 0; i < n; i++)
            if (tg->decides[i])
                for (int g = 0; g < G; g++) {
                    double dq = NN_AT(&dlq, i, dev[g]);
                    if (dq != 0.0)
                        NN_AT(d_part, i, g) += dq * exp(NN_AT(lp, i, g) - NN_AT(&lq, i, dev[g]));
                }
    }
    return OP_OK;
}

/* Partition loss over all rollouts (cfg.marginal: per rollout, above),
 * schedule loss per rollout (its rows of logp_sched are its own), both
 * means over decisions; adds into dlogp. */
static op_status ppo_loss(trinity_trainer *t, const task *tk, const trinity_batch *b,
                          const double *adv, int k, const nn_tensor *lp_part,
                          const nn_tensor *lp_sched, nn_tensor *d_part, nn_tensor *d_sched,
                          ppo_stats *out, double ents[2], op_error *err)
{
    int G = b->groups;
    ppo_stats sp = {0};
    ppo_config one = t->cfg.ppo;
    one.entropy_coef /= k;
    double ent_part;
    if (t->cfg.marginal) {
        op_status st = trinity_marginal_loss(&t->c.ar, &t->cfg.ppo, &tk->tg, b, adv, k, lp_part,
                                             d_part, &sp, err);
        if (st)
            return st;
        ent_part = sp.entropy;
    } else {
        ppo_factored_loss(&t->cfg.ppo, lp_part, b->group, b->old_part, adv, k, tk->tg.decides,
                          d_part, &sp);
        ent_part = sp.entropy;
    }
    double ent = 0.0;
    for (int r = 0; r < k; r++) {
        nn_tensor lp = nn_tensor_rows(lp_sched, r * G, G), dl = nn_tensor_rows(d_sched, r * G, G);
        double a = adv[r] / k;
        ppo_stats s = {0};
        ppo_factored_loss(&one, &lp, b->device + (size_t)r * G, b->old_sched + (size_t)r * G, &a,
                          1, b->gdecides + (size_t)r * G, &dl, &s);
        sp.loss += s.loss;
        ent += s.entropy / k;
    }
    sp.entropy = 0.5 * (sp.entropy + ent);
    *out = sp;
    ents[0] = ent_part, ents[1] = ent;
    return OP_OK;
}

/* Slot b's loss gradient into the parameters' grads (zeroed first). */
static op_status slot_gradient(trinity_trainer *t, int b, int k, ppo_stats *stats,
                               op_error *err)
{
    slot *s = &t->slots[b];
    task *tk = &t->tasks[s->task];
    trinity_batch *batch;
    trinity_run run = {.training = t->cfg.ppo_dropout, .dropout_rng = s->dropout, .sample = 0};
    nn_tensor lp_part, lp_sched, d_part, d_sched;
    trinity_pass *pass;
    nn_arena_reset(&t->c.ar);
    op_status st;
    if ((st = task_batch(t, tk, b, &batch, err)) ||
        (st = trinity_policy_forward(t->pol, &t->c.ar, &tk->tg, batch, k, &run, &lp_part,
                                     &lp_sched, &pass, err)) ||
        (st = nn_arena_tensor(&t->c.ar, lp_part.rows, lp_part.cols, &d_part, err)) ||
        (st = nn_arena_tensor(&t->c.ar, lp_sched.rows, lp_sched.cols, &d_sched, err)))
        return st;
    nn_params_zero_grad(trinity_policy_params(t->pol));
    if ((st = ppo_loss(t, tk, batch, s->adv, k, &lp_part, &lp_sched, &d_part, &d_sched, stats,
                       t->ents, err)))
        return st;
    return trinity_policy_backward(t->pol, &t->c.ar, &tk->tg, batch, pass, &d_part, &d_sched,
                                   err);
}

/* `epochs` PPO epochs over every slot, each one Adam step. */
static op_status ppo_update(trinity_trainer *t, int k, ppo_stats *stats, op_error *err)
{
    nn_params *ps = trinity_policy_params(t->pol);
    int alone = t->c.size == 1 && t->c.n_slots == 1; /* the grads are already in place */
    /* Ctrl-C, and the deadline after the first epoch, end the update between
     * epochs on one rank (ranks must agree on the epoch count, so under MPI
     * the update finishes) */
    for (int e = 0; e < t->cfg.ppo.epochs &&
                    !(t->c.size == 1 && (op_interrupted() || (t->cfg.deadline > 0 && e > 0 &&
                                                              rl_now_seconds() > t->cfg.deadline)));
         e++) {
        op_status st;
        for (int b = t->c.rank; b < t->c.n_slots; b += t->c.size) {
            if ((st = slot_gradient(t, b, k, stats, err)))
                return st;
            if (!alone)
                rl_save_gradient(&t->c, ps, b);
        }
        if (!alone && (st = rl_reduce_gradients(&t->c, ps, err)))
            return st;
        nn_params_clip_grad_norm(ps, t->cfg.ppo.max_grad_norm);
        nn_adam_step(&t->c.adam, ps);
    }
    return OP_OK;
}

static void report(trinity_trainer *t, const task *tk, const ppo_stats *s, double mean_r,
                   int last)
{
    if (!rl_report_due(&t->c, t->cfg.progress, &t->last_print, last))
        return;
    const trinity_metrics *b = &tk->best_m;
    op_progress(t->cfg.progress,
                "trinity: iteration %ld  %s: best %.1f us (%.3f x lower bound%s), peak comm "
                "%.1f MiB, peak mem %.2f GiB  mean reward %.4f  entropy %.3f (partition %.3f, "
                "schedule %.3f)  groups used %.1f, devices used %.2f  %.1f rollouts/s",
                t->stats.iterations, tk->p->g->name, b->step_us,
                b->step_us / (tk->p->lower_bound_us > 0 ? tk->p->lower_bound_us : 1.0),
                b->oom ? ", OOM" : "", (double)b->peak_comm / 1048576.0,
                (double)b->peak_mem / 1073741824.0, mean_r, s->entropy, t->ents[0], t->ents[1],
                t->slots[0].groups_used, t->slots[0].devices_used,
                t->stats.seconds > 0 ? (double)t->stats.rollouts / t->stats.seconds : 0.0);
}

/* Sampling pass + simulation + the slot's best for k rollouts of slot b
 * (in batch b of the slot's task). */
static op_status sample_and_score(trinity_trainer *t, int b, int k, const trinity_run *run,
                                  op_error *err)
{
    slot *s = &t->slots[b];
    task *tk = &t->tasks[s->task];
    trinity_batch *batch;
    nn_arena_reset(&t->c.ar);
    op_status st = task_batch(t, tk, b, &batch, err);
    nn_tensor lp_part;
    if (!st)
        st = trinity_policy_forward(t->pol, &t->c.ar, &tk->tg, batch, k, run, &lp_part, NULL,
                                    NULL, err);
    if (st == OP_EINTERNAL && run->deadline > 0 && rl_now_seconds() > run->deadline) {
        /* the pass stopped at the deadline: every rollout cut (iterate) */
        op_error_clear(err);
        for (int j = 0; j < k; j++)
            s->m[j] = cut_metrics();
        s->best_m = cut_metrics();
        return OP_OK;
    }
    if (!st && t->cfg.marginal)
        trinity_marginal_old(&tk->tg, batch, k, &lp_part);
    if (!st)
        st = simulate(t, tk, batch, s->m, k, run->deadline, err);
    if (!st)
        slot_best(tk, batch, s, k);
    if (!st)
        occupancy(tk, batch, s, k);
    return st;
}

/* cfg.explore decisions per rollout of each network, at most 10 % of them. */
static void explore_rates(const trinity_trainer *t, const task *tk, trinity_run *run)
{
    if (!(t->cfg.explore > 0))
        return;
    int decisions = 0;
    for (int i = 0; i < tk->tg.n; i++)
        decisions += tk->tg.decides[i];
    run->explore_part = fmin(0.1, t->cfg.explore / (decisions > 0 ? decisions : 1));
    run->explore_sched = fmin(0.1, t->cfg.explore / tk->tg.groups);
}

static op_status iterate(trinity_trainer *t, op_error *err)
{
    int k = t->cfg.samples;
    /* every rank draws every slot's problem and generators */
    for (int b = 0; b < t->c.n_slots; b++) {
        slot *s = &t->slots[b];
        s->task = rl_draw_task(&t->c, t->n_tasks);
        s->dropout = nn_rng_fork(&t->c.rng, 1);
        s->sample = nn_rng_fork(&t->c.rng, 2);
    }
    double noise = t->noise_iter < t->cfg.noise_steps ? t->cfg.noise_max : 0.0;
    op_status st;
    for (int b = t->c.rank; b < t->c.n_slots; b += t->c.size) {
        slot *s = &t->slots[b];
        nn_rng draws = s->sample;
        trinity_run run = {.training = t->cfg.ppo_dropout, .dropout_rng = s->dropout,
                           .sample = 1, .rng = &draws, .noise = noise};
        explore_rates(t, &t->tasks[s->task], &run);
        /* one rank: rollouts not started by the deadline are not simulated,
         * and the sampling pass stops there */
        run.deadline = t->c.size == 1 ? t->cfg.deadline : 0.0;
        st = sample_and_score(t, b, k, &run, err);
        if (st)
            return st;
        for (int j = 0; j < k; j++)
            s->rewards[j] = s->m[j].oom ? s->m[j].reward - 1.0 : s->m[j].reward;
    }
    int cut = 0, simulated = 0;
    for (int b = 0; b < t->c.n_slots; b++)
        for (int j = 0; j < k; j++) {
            int c = rollout_cut(&t->slots[b].m[j]);
            cut += c, simulated += !c;
        }
    if (cut) { /* the deadline came: the simulated rollouts join the record, no update */
        for (int b = 0; b < t->c.n_slots; b++)
            if (!rollout_cut(&t->slots[b].best_m))
                keep_best(&t->tasks[t->slots[b].task], &t->slots[b]);
        t->stats.rollouts += simulated;
        t->cut_short = 1;
        op_progress(t->cfg.progress,
                    "trinity: iteration %ld cut by the deadline: %d of %d rollouts simulated, "
                    "no update",
                    t->stats.iterations + 1, simulated, simulated + cut);
        return OP_OK;
    }
    if ((st = exchange_results(t, k, err)))
        return st;
    double mean_r = 0.0;
    for (int b = 0; b < t->c.n_slots; b++) {
        slot *s = &t->slots[b];
        task *tk = &t->tasks[s->task];
        ppo_advantages(&tk->base, s->rewards, k, t->cfg.ppo.normalize_adv, s->adv);
        keep_best(tk, s);
        for (int j = 0; j < k; j++)
            mean_r += s->rewards[j] / ((double)k * t->c.n_slots);
    }
    t->stats.rollouts += (long)t->c.n_slots * k;
    ppo_stats ps = {0};
    if ((st = ppo_update(t, k, &ps, err)))
        return st;
    t->noise_iter++;
    t->stats.iterations++;
    t->stats.last_mean_reward = mean_r;
    report(t, &t->tasks[t->slots[0].task], &ps, mean_r, 0);
    return OP_OK;
}

int trinity_trainer_proven(const trinity_trainer *t, int i)
{
    const task *tk = &t->tasks[i];
    return tk->have_best && op_problem_at_bound(tk->p, tk->best_m.step_us, tk->best_m.oom);
}

/* Training stops at the proven bound (cfg.stop_at_bound) and every
 * problem's best placement reaches it. */
static int done_when_proven(const trinity_trainer *t)
{
    if (!t->cfg.stop_at_bound)
        return 0;
    for (int i = 0; i < t->n_tasks; i++)
        if (!trinity_trainer_proven(t, i))
            return 0;
    return 1;
}

op_status trinity_trainer_run(trinity_trainer *t, op_error *err)
{
    if (t->cfg.iterations <= 0 && t->cfg.budget_seconds <= 0)
        return op_fail(err, OP_EUSAGE, "trinity: give an iteration count or a time budget");
    double t0 = rl_now_seconds(), base_seconds = t->stats.seconds;
    double budget = t->cfg.budget_seconds;
    if (t->cfg.deadline > 0) { /* the deadline bounds a budget and an iteration count alike */
        double left = fmax(t->cfg.deadline - t0, 1e-9);
        budget = budget > 0 ? fmin(budget, left) : left;
    }
    long start = t->stats.iterations;
    op_status st = OP_OK;
    double last = 0.0; /* the last iteration's seconds */
    while (!st && !done_when_proven(t)) {
        long done = t->stats.iterations - start;
        int stop;
        /* with a deadline, no iteration starts after it, nor one that would
         * end after it at the last one's pace (rank 0 decides for all) */
        double b = t->cfg.deadline > 0 && done > 0 ? fmax(budget - last, 1e-9) : budget;
        if (t->cut_short ||
            (st = rl_decide_stop(done, t->cfg.iterations, t0, b, &stop, err)) || stop)
            break;
        double i0 = rl_now_seconds();
        st = iterate(t, err);
        last = rl_now_seconds() - i0;
        t->stats.seconds = base_seconds + rl_now_seconds() - t0;
    }
    if (!st && t->stats.iterations > start) {
        ppo_stats none = {0};
        report(t, &t->tasks[0], &none, t->stats.last_mean_reward, 1);
    }
    return st;
}

op_status trinity_trainer_evaluate(trinity_trainer *t, int i, int samples, op_error *err)
{
    if (i < 0 || i >= t->n_tasks || samples < 0)
        return op_fail(err, OP_EINTERNAL, "trinity: bad evaluation request");
    double t0 = rl_now_seconds();
    op_status st = ensure_capacity(t, samples + 1, err);
    if (st)
        return st;
    /* every rank runs the same draws with slot 0's buffers; on one rank the
     * deadline stops the sampling pass and the rollouts, as in an iteration */
    t->slots[0].task = i;
    trinity_run run = {.training = 0, .sample = 1, .greedy_last = 1, .rng = &t->c.rng,
                       .deadline = t->c.size == 1 ? t->cfg.deadline : 0.0};
    st = sample_and_score(t, 0, samples + 1, &run, err);
    if (!st && !rollout_cut(&t->slots[0].best_m))
        keep_best(&t->tasks[i], &t->slots[0]);
    for (int j = 0; !st && j <= samples; j++)
        t->stats.rollouts += !rollout_cut(&t->slots[0].m[j]);
    t->stats.seconds += rl_now_seconds() - t0;
    return st;
}

trinity_best trinity_trainer_best(const trinity_trainer *t, int i)
{
    const task *tk = &t->tasks[i];
    return (trinity_best){.device_of = tk->have_best ? tk->best : NULL, .m = tk->best_m};
}

int trinity_trainer_pool_size(const trinity_trainer *t, int i)
{
    return t->tasks[i].pool_n;
}

trinity_best trinity_trainer_pool(const trinity_trainer *t, int i, int rank)
{
    const task *tk = &t->tasks[i];
    if (rank < 0 || rank >= tk->pool_n)
        return (trinity_best){.device_of = NULL};
    return (trinity_best){.device_of = tk->pool_dev + (size_t)rank * (size_t)tk->p->n,
                          .m = tk->pool_m[rank]};
}

int trinity_trainer_reward_order(const trinity_trainer *t, int i, double *cap_share)
{
    if (cap_share)
        *cap_share = t->tasks[i].cap_share;
    return t->tasks[i].order;
}

const trinity_reference *trinity_trainer_reference(const trinity_trainer *t, int i)
{
    return t->tasks[i].have_ref ? &t->tasks[i].ref : NULL;
}

trinity_reward_config trinity_trainer_reward(const trinity_trainer *t, int i)
{
    return t->tasks[i].reward;
}

trinity_train_stats trinity_trainer_stats(const trinity_trainer *t)
{
    return t->stats;
}
