/*
 * rollout_common.c - the policy-independent mechanics of the PPO trainers
 * (sgdp_train.c, trinity_train.c): threads per MPI rank, per-worker
 * simulators, the rollout thread pool, the exact MPI exchanges of slot
 * results and gradients, and the stop decision.  rollout_common.h says
 * what each piece guarantees; none of it draws random numbers except
 * rl_draw_task, so the trainers' results stay bit-identical for any
 * thread or rank count.
 */
#include "rollout_common.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/parallel.h"
#include "opplace/run_ctx.h"

double rl_now_seconds(void)
{
    return op_seconds_now();
}

/* ---------------------------------------------------------------- core */

static int threads_per_rank(int requested, int ranks)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int per_rank = online > 0 ? (int)(online / ranks) : 1;
    int threads = requested > 0 ? requested : (per_rank > 0 ? per_rank : 1);
    return threads > RL_MAX_THREADS ? RL_MAX_THREADS : threads;
}

static size_t count_params(const nn_params *ps)
{
    size_t n = 0;
    for (size_t i = 0; i < ps->count; i++)
        n += (size_t)ps->items[i]->grad.rows * (size_t)ps->items[i]->grad.cols;
    return n;
}

op_status rl_core_init(rl_core *c, nn_params *ps, int threads, int n_slots, double lr,
                       uint64_t seed, size_t arena_bytes, op_error *err)
{
    memset(c, 0, sizeof *c);
    c->rank = op_par_rank();
    c->size = op_par_size();
    c->n_slots = n_slots;
    c->threads = threads_per_rank(threads, c->size);
    c->adam = nn_adam_defaults(lr);
    nn_rng_seed(&c->rng, seed);
    c->n_params = count_params(ps);
    op_status st = nn_arena_init(&c->ar, arena_bytes, err);
    if (!st && !(c->grads = op_calloc((size_t)n_slots * c->n_params, sizeof *c->grads, err)))
        st = OP_ENOMEM;
    return st;
}

void rl_core_destroy(rl_core *c)
{
    nn_arena_destroy(&c->ar);
    free(c->grads);
    free(c->share);
    c->grads = c->share = NULL;
}

op_status rl_core_share_alloc(rl_core *c, size_t stride, op_error *err)
{
    free(c->share);
    c->share_stride = stride;
    if (!(c->share = op_calloc(stride * (size_t)c->n_slots, sizeof *c->share, err))) {
        c->share_stride = 0;
        return OP_ENOMEM;
    }
    return OP_OK;
}

int rl_owns(const rl_core *c, int b)
{
    return b % c->size == c->rank;
}

int rl_draw_task(rl_core *c, int n_tasks)
{
    return n_tasks == 1 ? 0 : (int)nn_rng_below(&c->rng, (uint64_t)n_tasks);
}

/* ------------------------------------------------------------ simulators */

op_status rl_sims_init(rl_sims *s, const op_problem *p, int threads, op_error *err)
{
    memset(s, 0, sizeof *s);
    for (int w = 0; w < threads; w++) {
        if (!(s->sims[w] = op_sim_new(p, err)))
            return err && err->code ? err->code : OP_ENOMEM;
        s->n_sims = w + 1;
        op_status st = op_sim_result_init(&s->res[w], p, err);
        if (st)
            return st;
        if ((st = op_placement_init(&s->pls[w], p->n, p->nd, err))) {
            op_sim_result_destroy(&s->res[w]);
            return st;
        }
        s->n_res = w + 1;
    }
    return OP_OK;
}

void rl_sims_destroy(rl_sims *s)
{
    for (int w = 0; w < s->n_sims; w++)
        op_sim_free(s->sims[w]);
    for (int w = 0; w < s->n_res; w++) {
        op_sim_result_destroy(&s->res[w]);
        op_placement_destroy(&s->pls[w]);
    }
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------- rollouts */

typedef struct rl_worker {
    rl_rollout_fn fn;
    void *ctx;
    int id, stride, count;
    op_status st;
    op_error err;
} rl_worker;

static void *worker_main(void *arg)
{
    rl_worker *w = arg;
    for (int k = w->id; k < w->count && !w->st; k += w->stride)
        w->st = w->fn(w->ctx, w->id, k, &w->err);
    return NULL;
}

op_status rl_run_rollouts(int threads, int count, rl_rollout_fn fn, void *ctx, double *seconds,
                          op_error *err)
{
    double t0 = rl_now_seconds();
    int nthreads = threads < count ? threads : count;
    if (nthreads < 1)
        return OP_OK;
    rl_worker ws[RL_MAX_THREADS];
    pthread_t tids[RL_MAX_THREADS];
    for (int w = 0; w < nthreads; w++)
        ws[w] = (rl_worker){.fn = fn, .ctx = ctx, .id = w, .stride = threads, .count = count};
    int started = 1;
    for (int w = 1; w < nthreads; w++, started++)
        if (pthread_create(&tids[w], NULL, worker_main, &ws[w]) != 0)
            break;
    /* the calling thread is worker 0; rollouts of workers that failed to
     * start run here too, so the result never depends on threads */
    worker_main(&ws[0]);
    for (int w = 1; w < started; w++)
        pthread_join(tids[w], NULL);
    for (int w = started; w < nthreads; w++)
        worker_main(&ws[w]);
    for (int w = 0; w < nthreads; w++)
        if (ws[w].st) {
            if (err)
                *err = ws[w].err;
            return ws[w].st;
        }
    *seconds += rl_now_seconds() - t0;
    return OP_OK;
}

/* ------------------------------------------------------------ MPI shares */

op_status rl_exchange(rl_core *c, rl_pack_fn pack, rl_unpack_fn unpack, void *ctx,
                      op_error *err)
{
    if (c->size == 1)
        return OP_OK;
    size_t stride = c->share_stride;
    memset(c->share, 0, stride * (size_t)c->n_slots * sizeof *c->share);
    for (int b = c->rank; b < c->n_slots; b += c->size)
        pack(ctx, b, c->share + (size_t)b * stride);
    op_status st = op_par_allreduce_sum(c->share, (int)(stride * (size_t)c->n_slots), err);
    if (st)
        return st;
    for (int b = 0; b < c->n_slots; b++)
        if (!rl_owns(c, b))
            unpack(ctx, b, c->share + (size_t)b * stride);
    return OP_OK;
}

void rl_save_gradient(rl_core *c, nn_params *ps, int b)
{
    double *dst = c->grads + (size_t)b * c->n_params;
    for (size_t i = 0; i < ps->count; i++) {
        nn_tensor *g = &ps->items[i]->grad;
        size_t len = (size_t)g->rows * (size_t)g->cols;
        memcpy(dst, g->data, len * sizeof *dst);
        dst += len;
    }
}

op_status rl_reduce_gradients(rl_core *c, nn_params *ps, op_error *err)
{
    size_t P = c->n_params;
    if (c->size > 1) {
        for (int b = 0; b < c->n_slots; b++)
            if (!rl_owns(c, b))
                memset(c->grads + (size_t)b * P, 0, P * sizeof *c->grads);
        op_status st = op_par_allreduce_sum(c->grads, (int)(P * (size_t)c->n_slots), err);
        if (st)
            return st;
    }
    size_t off = 0;
    for (size_t i = 0; i < ps->count; i++) {
        nn_tensor *g = &ps->items[i]->grad;
        size_t len = (size_t)g->rows * (size_t)g->cols;
        for (size_t j = 0; j < len; j++) {
            double sum = c->grads[off + j];
            for (int b = 1; b < c->n_slots; b++)
                sum += c->grads[(size_t)b * P + off + j];
            g->data[j] = c->n_slots > 1 ? sum / c->n_slots : sum;
        }
        off += len;
    }
    return OP_OK;
}

/* ------------------------------------------------------------- control */

op_status rl_decide_stop(long done, long iterations, double t0, double budget_seconds,
                         int *stop, op_error *err)
{
    *stop = (iterations > 0 && done >= iterations) ||
            (budget_seconds > 0 && rl_now_seconds() - t0 >= budget_seconds) || op_interrupted();
    return op_par_bcast(stop, sizeof *stop, 0, err);
}

int rl_report_due(const rl_core *c, const void *progress, double *last_print, int last)
{
    double now = rl_now_seconds();
    if (!progress || c->rank != 0 || (!last && now - *last_print < 1.0))
        return 0;
    *last_print = now;
    return 1;
}
