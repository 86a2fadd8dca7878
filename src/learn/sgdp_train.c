/*
 * sgdp_train.c - training SGDP's policy with PPO on simulated step times
 * (papers/sgdp.txt, eq. 1, "individual training" = SGDP-one with one graph,
 * "batch training" with several; Table 4).
 *
 * One iteration, on one problem (drawn at random when there are several):
 *   1. one forward pass gives every op's device distribution (eq. 4);
 *   2. K placements are sampled from it, plus the greedy (argmax) one, and
 *      simulated in parallel: worker w takes rollouts w, w+T, ...; rollout
 *      k draws from its own generator derived from (seed, iteration, k) and
 *      writes only slot k, so results do not depend on the thread count or
 *      on timing;
 *   3. reward r_k = -ln(step_k / lower_bound) - [OOM] * penalty * (1 +
 *      worst overflow ratio), a log-ratio so graphs of any scale weigh the
 *      same in batch training;
 *   4. advantages against a per-problem moving-average baseline, then
 *      `epochs` PPO epochs, each one forward/backward over the graph with
 *      the clipped surrogate of all K rollouts (learn.h), gradient clipping
 *      and an Adam step.  The greedy rollout is judged but not learnt from.
 * The best placement ever simulated for each problem is kept (no OOM first,
 * then the shortest step), which is what the placer returns.
 *
 * Scaled from Table 4 for a 2-core machine: 32 rollouts per update (not
 * 800), one minibatch, 4 epochs (not 20), lr 3e-3 (Table 4 gives 0.5, which
 * suits a sum-over-ops loss; ours is a mean), entropy 0.01 on the mean
 * per-op entropy.  Simulation uses op_sim (formats.md section 5), one
 * simulator per worker thread, allocated once.
 */
#include "opplace/sgdp.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "opplace/simulate.h"

#define MAX_THREADS 64

typedef struct task {
    const op_problem *p;
    sgdp_graph sg;
    op_sim *sims[MAX_THREADS];
    op_sim_result res[MAX_THREADS];
    op_placement pls[MAX_THREADS];
    int n_res; /* results and placements initialised */
    ppo_baseline base;
    op_placement best;
    int have_best, best_oom;
    double best_time;
} task;

struct sgdp_trainer {
    sgdp_policy *pol;
    sgdp_train_config cfg;
    int threads;
    task *tasks;
    int n_tasks;
    nn_arena ar;
    nn_adam adam;
    nn_rng rng;
    /* rollout buffers for up to cap rollouts of n_max rows */
    int cap, n_max;
    int *actions;
    double *old_logp, *rewards, *adv, *step;
    int *oom;
    double *overflow;
    sgdp_train_stats stats;
    double last_print;
};

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

sgdp_train_config sgdp_train_defaults(void)
{
    return (sgdp_train_config){.ppo = ppo_defaults(), .samples = 32, .iterations = 0,
                               .budget_seconds = 60, .threads = 0, .seed = 1,
                               .oom_penalty = 1.0, .progress = NULL};
}

static void task_destroy(task *tk, int threads)
{
    for (int w = 0; w < threads; w++)
        op_sim_free(tk->sims[w]);
    for (int w = 0; w < tk->n_res; w++) {
        op_sim_result_destroy(&tk->res[w]);
        op_placement_destroy(&tk->pls[w]);
    }
    if (tk->have_best)
        op_placement_destroy(&tk->best);
    sgdp_graph_destroy(&tk->sg);
}

static op_status task_init(task *tk, const op_problem *p, const sgdp_config *pc, int threads,
                           double decay, op_error *err)
{
    memset(tk, 0, sizeof *tk);
    tk->p = p;
    ppo_baseline_init(&tk->base, decay);
    op_status st = sgdp_graph_init(&tk->sg, p, pc->max_devices, pc->gs_knn, err);
    for (int w = 0; !st && w < threads; w++) {
        if (!(tk->sims[w] = op_sim_new(p, err)))
            return err && err->code ? err->code : OP_ENOMEM;
        if ((st = op_sim_result_init(&tk->res[w], p, err)))
            return st;
        if ((st = op_placement_init(&tk->pls[w], p->n, p->nd, err))) {
            op_sim_result_destroy(&tk->res[w]);
            return st;
        }
        tk->n_res = w + 1;
    }
    return st;
}

static op_status ensure_capacity(sgdp_trainer *t, int k, op_error *err)
{
    if (k <= t->cap)
        return OP_OK;
    size_t rows = (size_t)k * (size_t)t->n_max;
    free(t->actions), free(t->old_logp), free(t->rewards), free(t->adv), free(t->step);
    free(t->oom), free(t->overflow);
    t->actions = op_calloc(rows, sizeof *t->actions, err);
    t->old_logp = op_calloc(rows, sizeof *t->old_logp, err);
    t->rewards = op_calloc((size_t)k, sizeof(double), err);
    t->adv = op_calloc((size_t)k, sizeof(double), err);
    t->step = op_calloc((size_t)k, sizeof(double), err);
    t->oom = op_calloc((size_t)k, sizeof(int), err);
    t->overflow = op_calloc((size_t)k, sizeof(double), err);
    if (!t->actions || !t->old_logp || !t->rewards || !t->adv || !t->step || !t->oom ||
        !t->overflow) {
        t->cap = 0;
        return OP_ENOMEM;
    }
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
    sgdp_trainer *t = op_calloc(1, sizeof *t, err);
    if (!t)
        return NULL;
    t->pol = pol;
    t->cfg = *cfg;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    t->threads = cfg->threads > 0 ? cfg->threads : (online > 0 ? (int)online : 1);
    if (t->threads > MAX_THREADS)
        t->threads = MAX_THREADS;
    t->adam = nn_adam_defaults(cfg->ppo.lr);
    nn_rng_seed(&t->rng, cfg->seed);
    op_status st = nn_arena_init(&t->ar, (size_t)1 << 20, err);
    if (!st && !(t->tasks = op_calloc((size_t)n, sizeof *t->tasks, err)))
        st = OP_ENOMEM;
    for (int i = 0; !st && i < n; i++) {
        st = task_init(&t->tasks[i], problems[i], sgdp_policy_config(pol), t->threads,
                       cfg->ppo.baseline_decay, err);
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
        task_destroy(&t->tasks[i], t->threads);
    free(t->tasks);
    nn_arena_destroy(&t->ar);
    free(t->actions), free(t->old_logp), free(t->rewards), free(t->adv), free(t->step);
    free(t->oom), free(t->overflow);
    free(t);
}

/* ------------------------------------------------------------ rollouts */

typedef struct worker {
    sgdp_trainer *t;
    task *tk;
    const nn_tensor *logp;
    nn_rng base;
    int k_total, greedy_slot, id;
    op_status st;
    op_error err;
} worker;

static void run_rollout(worker *w, int k)
{
    sgdp_trainer *t = w->t;
    task *tk = w->tk;
    int n = tk->sg.n;
    nn_rng tmp = w->base, rng = nn_rng_fork(&tmp, (uint64_t)k);
    op_placement *pl = &tk->pls[w->id];
    op_sim_result *r = &tk->res[w->id];
    int *row_dev = t->actions + (size_t)k * (size_t)n;
    sgdp_sample(&tk->sg, w->logp, &rng, k == w->greedy_slot, row_dev, pl->device_of);
    w->st = op_sim_run(tk->sims[w->id], pl, r, NULL, &w->err);
    if (w->st)
        return;
    t->step[k] = r->step_time_us;
    t->oom[k] = r->oom;
    double worst = 0.0;
    for (int d = 0; d < tk->p->nd; d++) {
        double cap = (double)tk->p->c->dev[d].memory_bytes;
        if (cap > 0 && (double)r->peak_mem[d] > cap)
            worst = fmax(worst, ((double)r->peak_mem[d] - cap) / cap);
    }
    t->overflow[k] = worst;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    for (int k = w->id; k < w->k_total && !w->st; k += w->t->threads)
        run_rollout(w, k);
    return NULL;
}

/* Sample and simulate k_total rollouts (the last one greedy) from logp. */
static op_status rollouts(sgdp_trainer *t, task *tk, const nn_tensor *logp, int k_total,
                          op_error *err)
{
    double t0 = now_seconds();
    nn_rng base = nn_rng_fork(&t->rng, 0);
    int nthreads = t->threads < k_total ? t->threads : k_total;
    worker ws[MAX_THREADS];
    pthread_t tids[MAX_THREADS];
    for (int w = 0; w < nthreads; w++)
        ws[w] = (worker){.t = t, .tk = tk, .logp = logp, .base = base, .k_total = k_total,
                         .greedy_slot = k_total - 1, .id = w};
    int started = 1;
    for (int w = 1; w < nthreads; w++, started++)
        if (pthread_create(&tids[w], NULL, worker_main, &ws[w]) != 0)
            break;
    /* the calling thread is worker 0; rollouts of workers that failed to
     * start run here too, so the result never depends on threads */
    worker_main(&ws[0]);
    for (int w = 1; w < started; w++)
        pthread_join(tids[w], NULL);
    for (int w = started; w < nthreads; w++) {
        ws[w].st = OP_OK;
        for (int k = w; k < k_total && !ws[w].st; k += t->threads) {
            ws[w].id = 0;
            run_rollout(&ws[w], k);
        }
    }
    for (int w = 0; w < nthreads; w++)
        if (ws[w].st) {
            if (err)
                *err = ws[w].err;
            return ws[w].st;
        }
    t->stats.sim_seconds += now_seconds() - t0;
    t->stats.rollouts += k_total;
    return OP_OK;
}

static int better(int oom_a, double time_a, int oom_b, double time_b)
{
    return oom_a != oom_b ? oom_a < oom_b : time_a < time_b;
}

/* Rewards, old log-probabilities and the best-seen record for k_total rollouts. */
static op_status score(sgdp_trainer *t, task *tk, const nn_tensor *logp, int k_total,
                       op_error *err)
{
    int n = tk->sg.n;
    double lb = tk->p->lower_bound_us > 0 ? tk->p->lower_bound_us : 1.0;
    int best_k = -1;
    for (int k = 0; k < k_total; k++) {
        const int *a = t->actions + (size_t)k * (size_t)n;
        double *old = t->old_logp + (size_t)k * (size_t)n;
        for (int r = 0; r < n; r++)
            old[r] = NN_AT(logp, r, a[r]);
        t->rewards[k] = -log(fmax(t->step[k], 1e-9) / lb);
        if (t->oom[k])
            t->rewards[k] -= t->cfg.oom_penalty * (1.0 + t->overflow[k]);
        if (best_k < 0 || better(t->oom[k], t->step[k], t->oom[best_k], t->step[best_k]))
            best_k = k;
    }
    if (tk->have_best && !better(t->oom[best_k], t->step[best_k], tk->best_oom, tk->best_time))
        return OP_OK;
    if (!tk->have_best) {
        op_status st = op_placement_init(&tk->best, tk->p->n, tk->p->nd, err);
        if (st)
            return st;
        tk->have_best = 1;
    }
    const int *a = t->actions + (size_t)best_k * (size_t)n;
    for (int r = 0; r < n; r++)
        tk->best.device_of[tk->p->g->topo[r]] = a[r];
    tk->best_time = t->step[best_k];
    tk->best_oom = t->oom[best_k];
    return OP_OK;
}

/* ---------------------------------------------------------- PPO update */

static op_status ppo_update(sgdp_trainer *t, task *tk, sgdp_pass *pass, nn_tensor logp, int k,
                            ppo_stats *stats, op_error *err)
{
    nn_params *ps = sgdp_policy_params(t->pol);
    ppo_advantages(&tk->base, t->rewards, k, t->cfg.ppo.normalize_adv, t->adv);
    for (int e = 0; e < t->cfg.ppo.epochs; e++) {
        op_status st;
        if (e > 0) { /* epoch 0 reuses the rollouts' forward pass */
            nn_arena_reset(&t->ar);
            if ((st = sgdp_policy_forward(t->pol, &t->ar, &tk->sg, &logp, &pass, err)))
                return st;
        }
        nn_tensor dlogp;
        if ((st = nn_arena_tensor(&t->ar, logp.rows, logp.cols, &dlogp, err)))
            return st;
        nn_params_zero_grad(ps);
        ppo_factored_loss(&t->cfg.ppo, &logp, t->actions, t->old_logp, t->adv, k,
                          tk->sg.decides, &dlogp, stats);
        if ((st = sgdp_policy_backward(t->pol, &t->ar, &tk->sg, pass, &dlogp, err)))
            return st;
        nn_params_clip_grad_norm(ps, t->cfg.ppo.max_grad_norm);
        nn_adam_step(&t->adam, ps);
    }
    return OP_OK;
}

static void report(sgdp_trainer *t, const task *tk, const ppo_stats *s, double mean_r, int last)
{
    double now = now_seconds();
    if (!t->cfg.progress || (!last && now - t->last_print < 1.0))
        return;
    t->last_print = now;
    op_progress(t->cfg.progress,
                "sgdp: iteration %ld  %s: best %.1f us (%.3f x lower bound%s)  mean reward "
                "%.4f  entropy %.3f  %.1f rollouts/s",
                t->stats.iterations, tk->p->g->name, tk->best_time,
                tk->best_time / (tk->p->lower_bound_us > 0 ? tk->p->lower_bound_us : 1.0),
                tk->best_oom ? ", OOM" : "", mean_r, s->entropy,
                t->stats.seconds > 0 ? (double)t->stats.rollouts / t->stats.seconds : 0.0);
}

static op_status iterate(sgdp_trainer *t, op_error *err)
{
    int i = t->n_tasks == 1 ? 0 : (int)nn_rng_below(&t->rng, (uint64_t)t->n_tasks);
    task *tk = &t->tasks[i];
    int k = t->cfg.samples;
    nn_tensor logp;
    sgdp_pass *pass;
    nn_arena_reset(&t->ar);
    op_status st;
    if ((st = sgdp_policy_forward(t->pol, &t->ar, &tk->sg, &logp, &pass, err)) ||
        (st = rollouts(t, tk, &logp, k + 1, err)) || (st = score(t, tk, &logp, k + 1, err)))
        return st;
    ppo_stats s = {0};
    double mean_r = 0.0;
    for (int j = 0; j < k; j++)
        mean_r += t->rewards[j] / k;
    if ((st = ppo_update(t, tk, pass, logp, k, &s, err)))
        return st;
    t->stats.iterations++;
    t->stats.last_mean_reward = mean_r;
    report(t, tk, &s, mean_r, 0);
    return OP_OK;
}

op_status sgdp_trainer_run(sgdp_trainer *t, op_error *err)
{
    if (t->cfg.iterations <= 0 && t->cfg.budget_seconds <= 0)
        return op_fail(err, OP_EUSAGE, "sgdp: give an iteration count or a time budget");
    double t0 = now_seconds(), base_seconds = t->stats.seconds;
    long start_iter = t->stats.iterations;
    op_status st = OP_OK;
    while (!st) {
        long done = t->stats.iterations - start_iter;
        if (t->cfg.iterations > 0 && done >= t->cfg.iterations)
            break;
        if (t->cfg.budget_seconds > 0 && now_seconds() - t0 >= t->cfg.budget_seconds)
            break;
        if (op_interrupted())
            break;
        st = iterate(t, err);
        t->stats.seconds = base_seconds + now_seconds() - t0;
    }
    if (!st && t->stats.iterations > start_iter) {
        ppo_stats none = {0};
        report(t, &t->tasks[0], &none, t->stats.last_mean_reward, 1);
    }
    return st;
}

op_status sgdp_trainer_evaluate(sgdp_trainer *t, int i, int samples, op_error *err)
{
    if (i < 0 || i >= t->n_tasks || samples < 0)
        return op_fail(err, OP_EINTERNAL, "sgdp: bad evaluation request");
    double t0 = now_seconds();
    task *tk = &t->tasks[i];
    nn_tensor logp;
    nn_arena_reset(&t->ar);
    op_status st;
    if ((st = ensure_capacity(t, samples + 1, err)) ||
        (st = sgdp_policy_forward(t->pol, &t->ar, &tk->sg, &logp, NULL, err)) ||
        (st = rollouts(t, tk, &logp, samples + 1, err)) ||
        (st = score(t, tk, &logp, samples + 1, err)))
        return st;
    t->stats.seconds += now_seconds() - t0;
    return OP_OK;
}

sgdp_best sgdp_trainer_best(const sgdp_trainer *t, int i)
{
    const task *tk = &t->tasks[i];
    return (sgdp_best){.placement = tk->have_best ? &tk->best : NULL,
                       .step_time_us = tk->best_time, .oom = tk->best_oom};
}

sgdp_train_stats sgdp_trainer_stats(const sgdp_trainer *t)
{
    return t->stats;
}
