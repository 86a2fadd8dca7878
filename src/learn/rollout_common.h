/*
 * rollout_common.h - the mechanics SGDP's and Trinity's PPO trainers
 * (sgdp_train.c, trinity_train.c) share; internal, not a public API.
 *
 * An iteration has n_slots rollout batches; slot b belongs to MPI rank
 * b mod size, which alone samples, simulates and backpropagates it.  What
 * lives here is everything that does not depend on the policy:
 *   - rl_core: thread count per rank, arena, Adam, the shared RNG, the
 *     per-slot gradient rows and the share buffer for MPI exchanges;
 *   - rl_sims: one simulator, result and placement per worker thread;
 *   - rl_run_rollouts: rollouts 0..count-1 over the worker threads
 *     (worker w takes w, w+T, ...), so results do not depend on timing;
 *   - rl_exchange: owners pack their slots into the zeroed share buffer,
 *     one exact all-reduce (x + 0), every other rank unpacks;
 *   - rl_save_gradient / rl_reduce_gradients: the slots' gradients summed
 *     in slot order, identical on every rank;
 *   - rl_decide_stop: rank 0 decides when the run ends, broadcast.
 */
#ifndef OPPLACE_ROLLOUT_COMMON_H
#define OPPLACE_ROLLOUT_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "learn/learn.h"
#include "nn/nn.h"
#include "opplace/simulate.h"

#define RL_MAX_THREADS 64

double rl_now_seconds(void);

/* State every trainer holds, whatever its policy. */
typedef struct rl_core {
    int threads, rank, size; /* simulation threads on this rank; MPI rank and size */
    int n_slots;
    nn_arena ar;
    nn_adam adam;
    nn_rng rng;         /* advances identically on every rank */
    size_t n_params;    /* scalars in the policy */
    double *grads;      /* n_slots x n_params */
    double *share;      /* n_slots x share_stride, for rl_exchange */
    size_t share_stride;
} rl_core;

/* threads <= 0: online CPUs divided among the ranks (at least 1). */
op_status rl_core_init(rl_core *c, nn_params *ps, int threads, int n_slots, double lr,
                       uint64_t seed, size_t arena_bytes, op_error *err);
void rl_core_destroy(rl_core *c);
/* (Re)allocate the zeroed share buffer with `stride` doubles per slot. */
op_status rl_core_share_alloc(rl_core *c, size_t stride, op_error *err);
/* Does this rank own slot b? */
int rl_owns(const rl_core *c, int b);
/* The problem a slot draws: 0 with one problem, else uniform. */
int rl_draw_task(rl_core *c, int n_tasks);

/* One simulator, result and placement per worker thread of one problem. */
typedef struct rl_sims {
    op_sim *sims[RL_MAX_THREADS];
    op_sim_result res[RL_MAX_THREADS];
    op_placement pls[RL_MAX_THREADS];
    int n_sims, n_res; /* made; results and placements initialised */
} rl_sims;

op_status rl_sims_init(rl_sims *s, const op_problem *p, int threads, op_error *err);
void rl_sims_destroy(rl_sims *s);

/* Rollout k on worker `worker` (which owns the worker's rl_sims entries). */
typedef op_status (*rl_rollout_fn)(void *ctx, int worker, int k, op_error *err);
/* Rollouts 0..count-1 over min(threads, count) workers, the calling thread
 * being worker 0; a worker whose thread fails to start runs here.  The
 * first failing worker's error is returned; on success the wall time is
 * added to *seconds. */
op_status rl_run_rollouts(int threads, int count, rl_rollout_fn fn, void *ctx, double *seconds,
                          op_error *err);

/* Slot b's entries in the share buffer (c->share_stride doubles). */
typedef void (*rl_pack_fn)(void *ctx, int b, double *sh);
typedef void (*rl_unpack_fn)(void *ctx, int b, const double *sh);
/* With more than one rank: pack the owned slots, all-reduce, unpack the
 * others' slots on every rank.  Nothing with one rank. */
op_status rl_exchange(rl_core *c, rl_pack_fn pack, rl_unpack_fn unpack, void *ctx,
                      op_error *err);

/* The parameters' grads into slot b's gradient row. */
void rl_save_gradient(rl_core *c, nn_params *ps, int b);
/* Sum the slots' gradient rows (owners' rows filled, exchanged between
 * ranks) in slot order into the parameters' grads, divided by n_slots. */
op_status rl_reduce_gradients(rl_core *c, nn_params *ps, op_error *err);

/* *stop: the iteration count or the time budget (from t0) is spent, or an
 * interrupt came; decided on rank 0 and broadcast. */
op_status rl_decide_stop(long done, long iterations, double t0, double budget_seconds,
                         int *stop, op_error *err);
/* Should a progress line be printed now (rank 0, at most once a second
 * unless last)?  Updates *last_print when it says yes. */
int rl_report_due(const rl_core *c, const void *progress, double *last_print, int last);

#endif
