/*
 * trinity_train.c - joint PPO training of Trinity's partition and schedule
 * networks on the MDPE reward (papers/trinity.txt, section 4.2,
 * Algorithm 1, eqs. 12-15).
 *
 * One iteration, on one problem (drawn at random when there are several):
 *   1. a sampling pass draws K placements: each op's group from the
 *      partition network (dropout on, its masks fixed for the iteration),
 *      then each rollout's device sequence from the schedule network, step
 *      by step; in the first noise_steps iterations the logits get uniform
 *      noise in [-noise_max, noise_max] (section 5.2: 500 steps, 0.1);
 *   2. the K placements are simulated in parallel (one op_sim per worker,
 *      made once); worker w takes rollouts w, w+T, ..., every draw happened
 *      before in one thread, so results do not depend on the thread count;
 *   3. rewards R_k from MDPE (trinity_reward.c); advantages R_k - b with b
 *      the exponential moving average of eq. 15 (period N: decay
 *      (N-1)/(N+1)), divided by the batch's reward deviation;
 *   4. `epochs` PPO epochs: a teacher-forced pass with the same dropout
 *      masks, the clipped surrogate (eq. 14) per decision (per op for the
 *      partition, per group for the schedule; opplace/learn.h explains why
 *      the ratio is per decision), an entropy bonus, gradient clipping
 *      (norm 1.0) and an Adam step.  The two networks' losses are summed
 *      (joint optimisation).
 * The best placement ever simulated is kept: no OOM first, then the
 * highest reward (which folds in communication and memory).
 *
 * Differences from the paper: K = 16 rollouts per update; Adam's learning
 * rate 3e-3 (SGDP's setting for the same mean-over-decisions loss) instead
 * of the paper's 0.1, which we did not try; advantages are normalised; a
 * rollout that runs out of memory loses another 1.0 of reward on top of
 * the MDPE memory penalty; the logit noise is not counted in old_logp (the
 * behaviour policy differs from pi_old by at most the noise).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "opplace/trinity.h"

#define MAX_THREADS 64

typedef struct task {
    const op_problem *p;
    trinity_graph tg;
    trinity_batch batch;
    op_sim *sims[MAX_THREADS];
    op_sim_result res[MAX_THREADS];
    op_placement pls[MAX_THREADS];
    int n_res;
    trinity_metrics *m;   /* per rollout of the current batch */
    ppo_baseline base;
    int *best;            /* device_of of the best placement */
    int have_best;
    trinity_metrics best_m;
} task;

struct trinity_trainer {
    trinity_policy *pol;
    trinity_train_config cfg;
    int threads;
    task *tasks;
    int n_tasks;
    nn_arena ar;
    nn_adam adam;
    nn_rng rng;
    double *rewards, *adv;
    int cap;
    trinity_train_stats stats;
    double last_print;
    long noise_iter;  /* iterations done, for the noise schedule */
};

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

trinity_train_config trinity_train_defaults(void)
{
    ppo_config ppo = ppo_defaults();
    ppo.epochs = 4;
    ppo.lr = 3e-3;
    ppo.entropy_coef = 0.01;
    return (trinity_train_config){.ppo = ppo, .samples = 16, .iterations = 0,
                                  .budget_seconds = 60, .threads = 0, .seed = 1,
                                  .ema_period = 9, .noise_steps = 500, .noise_max = 0.1,
                                  .reward = trinity_reward_defaults(),
                                  .n2v = node2vec_defaults(), .progress = NULL};
}

/* ---------------------------------------------------------------- tasks */

static void task_destroy(task *tk, int threads)
{
    for (int w = 0; w < threads; w++)
        op_sim_free(tk->sims[w]);
    for (int w = 0; w < tk->n_res; w++) {
        op_sim_result_destroy(&tk->res[w]);
        op_placement_destroy(&tk->pls[w]);
    }
    trinity_batch_destroy(&tk->batch);
    trinity_graph_destroy(&tk->tg);
    free(tk->m);
    free(tk->best);
}

static op_status task_init(task *tk, const op_problem *p, const trinity_config *pc,
                           const trinity_train_config *cfg, int threads, int cap, op_error *err)
{
    memset(tk, 0, sizeof *tk);
    tk->p = p;
    int N = cfg->ema_period > 0 ? cfg->ema_period : 1;
    ppo_baseline_init(&tk->base, (double)(N - 1) / (double)(N + 1));
    op_status st = trinity_graph_init(&tk->tg, p, pc, &cfg->n2v, err);
    if (!st)
        st = trinity_batch_init(&tk->batch, &tk->tg, cap, err);
    if (!st && (!(tk->m = op_calloc((size_t)cap, sizeof *tk->m, err)) ||
                !(tk->best = op_calloc((size_t)p->n, sizeof(int), err))))
        st = OP_ENOMEM;
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

static op_status ensure_capacity(trinity_trainer *t, int k, op_error *err)
{
    if (k <= t->cap)
        return OP_OK;
    free(t->rewards);
    free(t->adv);
    t->rewards = op_calloc((size_t)k, sizeof(double), err);
    t->adv = op_calloc((size_t)k, sizeof(double), err);
    if (!t->rewards || !t->adv)
        return OP_ENOMEM;
    for (int i = 0; i < t->n_tasks; i++) {
        task *tk = &t->tasks[i];
        trinity_batch_destroy(&tk->batch);
        free(tk->m);
        tk->m = op_calloc((size_t)k, sizeof *tk->m, err);
        op_status st = trinity_batch_init(&tk->batch, &tk->tg, k, err);
        if (st || !tk->m)
            return st ? st : OP_ENOMEM;
    }
    t->cap = k;
    return OP_OK;
}

trinity_trainer *trinity_trainer_new(trinity_policy *pol, const op_problem *const *problems,
                                     int n, const trinity_train_config *cfg, op_error *err)
{
    if (n < 1 || cfg->samples < 1 || cfg->ppo.epochs < 1) {
        op_fail(err, OP_EUSAGE, "trinity: need a graph, samples >= 1 and epochs >= 1");
        return NULL;
    }
    trinity_trainer *t = op_calloc(1, sizeof *t, err);
    if (!t)
        return NULL;
    double t0 = now_seconds();
    t->pol = pol;
    t->cfg = *cfg;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    t->threads = cfg->threads > 0 ? cfg->threads : (online > 0 ? (int)online : 1);
    if (t->threads > MAX_THREADS)
        t->threads = MAX_THREADS;
    t->adam = nn_adam_defaults(cfg->ppo.lr);
    nn_rng_seed(&t->rng, cfg->seed);
    t->cap = cfg->samples + 1;
    op_status st = nn_arena_init(&t->ar, (size_t)1 << 22, err);
    if (!st && (!(t->rewards = op_calloc((size_t)t->cap, sizeof(double), err)) ||
                !(t->adv = op_calloc((size_t)t->cap, sizeof(double), err)) ||
                !(t->tasks = op_calloc((size_t)n, sizeof *t->tasks, err))))
        st = OP_ENOMEM;
    for (int i = 0; !st && i < n; i++) {
        st = task_init(&t->tasks[i], problems[i], trinity_policy_config(pol), cfg, t->threads,
                       t->cap, err);
        t->n_tasks = i + 1;
    }
    if (st) {
        trinity_trainer_free(t);
        return NULL;
    }
    t->stats.setup_seconds = now_seconds() - t0;
    return t;
}

void trinity_trainer_free(trinity_trainer *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n_tasks; i++)
        task_destroy(&t->tasks[i], t->threads);
    free(t->tasks);
    nn_arena_destroy(&t->ar);
    free(t->rewards);
    free(t->adv);
    free(t);
}

/* ------------------------------------------------------------ rollouts */

typedef struct worker {
    trinity_trainer *t;
    task *tk;
    int k, id;
    op_status st;
    op_error err;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    task *tk = w->tk;
    op_placement *pl = &tk->pls[w->id];
    op_sim_result *r = &tk->res[w->id];
    for (int k = w->id; k < w->k && !w->st; k += w->t->threads) {
        trinity_batch_placement(&tk->tg, &tk->batch, k, pl->device_of);
        w->st = op_sim_run(tk->sims[w->id], pl, r, NULL, &w->err);
        if (!w->st)
            tk->m[k] = trinity_measure(tk->p, r, &w->t->cfg.reward);
    }
    return NULL;
}

/* Simulate rollouts 0..k-1 of the task's batch into tk->m. */
static op_status simulate(trinity_trainer *t, task *tk, int k, op_error *err)
{
    double t0 = now_seconds();
    int nthreads = t->threads < k ? t->threads : k;
    worker ws[MAX_THREADS];
    pthread_t tids[MAX_THREADS];
    for (int w = 0; w < t->threads; w++)
        ws[w] = (worker){.t = t, .tk = tk, .k = k, .id = w};
    int started = 1;
    for (int w = 1; w < nthreads; w++, started++)
        if (pthread_create(&tids[w], NULL, worker_main, &ws[w]) != 0)
            break;
    worker_main(&ws[0]);
    for (int w = 1; w < started; w++)
        pthread_join(tids[w], NULL);
    /* workers whose thread did not start: their rollouts run here */
    for (int w = started; w < nthreads; w++)
        worker_main(&ws[w]);
    for (int w = 0; w < nthreads; w++)
        if (ws[w].st) {
            if (err)
                *err = ws[w].err;
            return ws[w].st;
        }
    t->stats.sim_seconds += now_seconds() - t0;
    t->stats.rollouts += k;
    return OP_OK;
}

static int better(const trinity_metrics *a, const trinity_metrics *b)
{
    return a->oom != b->oom ? a->oom < b->oom : a->reward > b->reward;
}

static void record_best(task *tk, int k)
{
    int best_k = 0;
    for (int j = 1; j < k; j++)
        if (better(&tk->m[j], &tk->m[best_k]))
            best_k = j;
    if (tk->have_best && !better(&tk->m[best_k], &tk->best_m))
        return;
    trinity_batch_placement(&tk->tg, &tk->batch, best_k, tk->best);
    tk->best_m = tk->m[best_k];
    tk->have_best = 1;
}

/* ---------------------------------------------------------- PPO update */

/* Partition loss over all rollouts, schedule loss per rollout (its rows of
 * logp_sched are its own), both means over decisions; adds into dlogp. */
static void ppo_loss(const trinity_trainer *t, const task *tk, int k, const nn_tensor *lp_part,
                     const nn_tensor *lp_sched, nn_tensor *d_part, nn_tensor *d_sched,
                     ppo_stats *out)
{
    const trinity_batch *b = &tk->batch;
    int G = b->groups;
    ppo_stats sp = {0};
    ppo_factored_loss(&t->cfg.ppo, lp_part, b->group, b->old_part, t->adv, k, tk->tg.decides,
                      d_part, &sp);
    ppo_config one = t->cfg.ppo;
    one.entropy_coef /= k;
    double ent = 0.0;
    for (int r = 0; r < k; r++) {
        nn_tensor lp = nn_tensor_rows(lp_sched, r * G, G), dl = nn_tensor_rows(d_sched, r * G, G);
        double a = t->adv[r] / k;
        ppo_stats s = {0};
        ppo_factored_loss(&one, &lp, b->device + (size_t)r * G, b->old_sched + (size_t)r * G, &a,
                          1, b->gdecides + (size_t)r * G, &dl, &s);
        sp.loss += s.loss;
        ent += s.entropy / k;
    }
    sp.entropy = 0.5 * (sp.entropy + ent);
    *out = sp;
}

static op_status ppo_update(trinity_trainer *t, task *tk, int k, nn_rng dropout_rng,
                            ppo_stats *stats, op_error *err)
{
    nn_params *ps = trinity_policy_params(t->pol);
    trinity_run run = {.training = 1, .dropout_rng = dropout_rng, .sample = 0};
    for (int e = 0; e < t->cfg.ppo.epochs; e++) {
        nn_arena_reset(&t->ar);
        nn_tensor lp_part, lp_sched, d_part, d_sched;
        trinity_pass *pass;
        op_status st;
        if ((st = trinity_policy_forward(t->pol, &t->ar, &tk->tg, &tk->batch, k, &run, &lp_part,
                                         &lp_sched, &pass, err)) ||
            (st = nn_arena_tensor(&t->ar, lp_part.rows, lp_part.cols, &d_part, err)) ||
            (st = nn_arena_tensor(&t->ar, lp_sched.rows, lp_sched.cols, &d_sched, err)))
            return st;
        nn_params_zero_grad(ps);
        ppo_loss(t, tk, k, &lp_part, &lp_sched, &d_part, &d_sched, stats);
        if ((st = trinity_policy_backward(t->pol, &t->ar, &tk->tg, &tk->batch, pass, &d_part,
                                          &d_sched, err)))
            return st;
        nn_params_clip_grad_norm(ps, t->cfg.ppo.max_grad_norm);
        nn_adam_step(&t->adam, ps);
    }
    return OP_OK;
}

static void report(trinity_trainer *t, const task *tk, const ppo_stats *s, double mean_r,
                   int last)
{
    double now = now_seconds();
    if (!t->cfg.progress || (!last && now - t->last_print < 1.0))
        return;
    t->last_print = now;
    const trinity_metrics *b = &tk->best_m;
    op_progress(t->cfg.progress,
                "trinity: iteration %ld  %s: best %.1f us (%.3f x lower bound%s), peak comm "
                "%.1f MiB, peak mem %.2f GiB  mean reward %.4f  entropy %.3f  %.1f rollouts/s",
                t->stats.iterations, tk->p->g->name, b->step_us,
                b->step_us / (tk->p->lower_bound_us > 0 ? tk->p->lower_bound_us : 1.0),
                b->oom ? ", OOM" : "", (double)b->peak_comm / 1048576.0,
                (double)b->peak_mem / 1073741824.0, mean_r, s->entropy,
                t->stats.seconds > 0 ? (double)t->stats.rollouts / t->stats.seconds : 0.0);
}

/* Sampling pass + simulation + best record for k rollouts of task tk. */
static op_status sample_and_score(trinity_trainer *t, task *tk, int k, const trinity_run *run,
                                  op_error *err)
{
    nn_arena_reset(&t->ar);
    op_status st = trinity_policy_forward(t->pol, &t->ar, &tk->tg, &tk->batch, k, run, NULL,
                                          NULL, NULL, err);
    if (!st)
        st = simulate(t, tk, k, err);
    if (!st)
        record_best(tk, k);
    return st;
}

static op_status iterate(trinity_trainer *t, op_error *err)
{
    int i = t->n_tasks == 1 ? 0 : (int)nn_rng_below(&t->rng, (uint64_t)t->n_tasks);
    task *tk = &t->tasks[i];
    int k = t->cfg.samples;
    nn_rng dropout_rng = nn_rng_fork(&t->rng, 1);
    trinity_run run = {.training = 1, .dropout_rng = dropout_rng, .sample = 1, .rng = &t->rng,
                       .noise = t->noise_iter < t->cfg.noise_steps ? t->cfg.noise_max : 0.0};
    op_status st = sample_and_score(t, tk, k, &run, err);
    if (st)
        return st;
    double mean_r = 0.0;
    for (int j = 0; j < k; j++) {
        t->rewards[j] = tk->m[j].oom ? tk->m[j].reward - 1.0 : tk->m[j].reward;
        mean_r += t->rewards[j] / k;
    }
    ppo_advantages(&tk->base, t->rewards, k, t->cfg.ppo.normalize_adv, t->adv);
    ppo_stats s = {0};
    if ((st = ppo_update(t, tk, k, dropout_rng, &s, err)))
        return st;
    t->noise_iter++;
    t->stats.iterations++;
    t->stats.last_mean_reward = mean_r;
    report(t, tk, &s, mean_r, 0);
    return OP_OK;
}

op_status trinity_trainer_run(trinity_trainer *t, op_error *err)
{
    if (t->cfg.iterations <= 0 && t->cfg.budget_seconds <= 0)
        return op_fail(err, OP_EUSAGE, "trinity: give an iteration count or a time budget");
    double t0 = now_seconds(), base_seconds = t->stats.seconds;
    long start = t->stats.iterations;
    op_status st = OP_OK;
    while (!st) {
        long done = t->stats.iterations - start;
        if (t->cfg.iterations > 0 && done >= t->cfg.iterations)
            break;
        if (t->cfg.budget_seconds > 0 && now_seconds() - t0 >= t->cfg.budget_seconds)
            break;
        if (op_interrupted())
            break;
        st = iterate(t, err);
        t->stats.seconds = base_seconds + now_seconds() - t0;
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
    double t0 = now_seconds();
    op_status st = ensure_capacity(t, samples + 1, err);
    if (st)
        return st;
    trinity_run run = {.training = 0, .sample = 1, .greedy_last = 1, .rng = &t->rng};
    st = sample_and_score(t, &t->tasks[i], samples + 1, &run, err);
    t->stats.seconds += now_seconds() - t0;
    return st;
}

trinity_best trinity_trainer_best(const trinity_trainer *t, int i)
{
    const task *tk = &t->tasks[i];
    return (trinity_best){.device_of = tk->have_best ? tk->best : NULL, .m = tk->best_m};
}

trinity_train_stats trinity_trainer_stats(const trinity_trainer *t)
{
    return t->stats;
}
