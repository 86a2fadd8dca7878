/*
 * sgdp_internal.h - the two halves of SGDP's policy network, shared by
 * graphsage.c, placement_net.c and sgdp_policy.c (not a public API).
 *
 * Each half is a struct of layers (weights registered in the policy's
 * nn_params) plus a "pass" struct that keeps one forward pass's
 * activations and caches, all from the arena, for the backward pass.
 *
 * Also the trainer's state (sgdp_train.c), read by the policy-guided search
 * (sgdp_search.c), and the few trainer helpers that search calls.
 */
#ifndef OPPLACE_SGDP_INTERNAL_H
#define OPPLACE_SGDP_INTERNAL_H

#include "placers/sgdp/sgdp.h"
#include "core/parallel.h"
#include "opplace/run_ctx.h"
#include "opplace/simulate.h"
#include "learn/rollout_common.h"

#define SGDP_MAX_LAYERS 8

/* The placer's deadline for a pass (op_seconds_now() time; 0: none), set
 * by place_sgdp around its run (sgdp.c). */
extern double sgdp_pass_deadline;

/* Ctrl-C, or the placer's deadline, inside a pass of the policy (a forward
 * and backward over 10^5 ops take seconds, longer than the second a placer
 * has to answer): the pass ends with this error, checked between GraphSAGE
 * layers and attention segments, and the placer answers with its best so
 * far (sgdp.c).  With several MPI ranks every rank must run the same
 * passes, so the trainer decides the stop between iterations instead. */
static inline int sgdp_stopped(void)
{
    return op_par_size() == 1 &&
           (op_interrupted() || (sgdp_pass_deadline > 0 && op_seconds_now() > sgdp_pass_deadline));
}

static inline op_status sgdp_check_stop(op_error *err)
{
    return sgdp_stopped() ? op_fail(err, OP_EINTERNAL, "sgdp: stopped (%s)",
                                    op_interrupted() ? "Ctrl-C" : "out of time")
                          : OP_OK;
}

/* What a stage (training, evaluation, search) returns when that stop ended
 * one of its passes: no error, the trainer's best so far standing (no
 * update was half applied: the optimizer steps after a whole backward). */
static inline op_status sgdp_stop_ok(op_status st, op_error *err)
{
    if (st != OP_EINTERNAL || !sgdp_stopped())
        return st;
    op_error_clear(err);
    return OP_OK;
}

/* GraphSAGE with the max-pool aggregator (graphsage.c), per layer l:
 *   a = sigmoid(h W_l + b_l);  m = maxpool over neighbours(a)     (eq. 2)
 *   h' = relu([h | m] F_l + c_l)                                  (eq. 3) */
typedef struct sgdp_sage {
    int layers, dim;
    nn_linear agg[SGDP_MAX_LAYERS], fuse[SGDP_MAX_LAYERS];
} sgdp_sage;

typedef struct sgdp_sage_pass {
    nn_tensor h[SGDP_MAX_LAYERS + 1]; /* h[0] the input, h[layers] the embedding */
    nn_tensor a[SGDP_MAX_LAYERS], m[SGDP_MAX_LAYERS], c[SGDP_MAX_LAYERS];
    nn_maxpool_cache mp[SGDP_MAX_LAYERS];
} sgdp_sage_pass;

op_status sgdp_sage_init(sgdp_sage *s, nn_params *ps, const char *prefix, int dim, int layers,
                         nn_rng *rng, op_error *err);
/* h0 [n x dim] stays the caller's; the embedding is pass->h[layers]. */
op_status sgdp_sage_forward(const sgdp_sage *s, nn_arena *ar, const sgdp_graph *sg,
                            const nn_tensor *h0, sgdp_sage_pass *pass, op_error *err);
/* dh0 += d loss / d h0 given demb = d loss / d embedding. */
op_status sgdp_sage_backward(const sgdp_sage *s, nn_arena *ar, const sgdp_sage_pass *pass,
                             const nn_tensor *demb, nn_tensor *dh0, op_error *err);

/* Transformer-XL style placement network (placement_net.c): pre-norm
 * blocks  y = x + MHA(LN1(x), mem);  x' = y + FFN(LN2(y))  over segments of
 * the topological order; a block's memory is the previous segment's LN1(x)
 * at the same layer, a constant (no gradient), as in Transformer-XL. */
typedef struct sgdp_xl_layer {
    nn_layernorm ln1, ln2;
    nn_mha att;
    nn_linear ff1, ff2;
} sgdp_xl_layer;

typedef struct sgdp_xl {
    int layers, dim, segment;
    sgdp_xl_layer l[SGDP_MAX_LAYERS];
} sgdp_xl;

typedef struct sgdp_xl_step {
    nn_tensor x, u, y, v, f1, f2, xn;
    nn_layernorm_cache c1, c2;
    nn_mha_cache mc;
} sgdp_xl_step;

typedef struct sgdp_xl_pass {
    int n_seg;
    sgdp_xl_step *steps; /* n_seg x layers, segment-major */
    nn_tensor out;       /* [n x dim] */
} sgdp_xl_pass;

op_status sgdp_xl_init(sgdp_xl *x, nn_params *ps, const char *prefix, int dim, int layers,
                       int heads, int ffn, int segment, nn_rng *rng, op_error *err);
op_status sgdp_xl_forward(const sgdp_xl *x, nn_arena *ar, const nn_tensor *in,
                          sgdp_xl_pass *pass, op_error *err);
/* din += d loss / d in given dout = d loss / d out. */
op_status sgdp_xl_backward(const sgdp_xl *x, nn_arena *ar, const sgdp_xl_pass *pass,
                           const nn_tensor *dout, nn_tensor *din, op_error *err);

/* ------------------------------------------------- trainer internals
 * The trainer's state (sgdp_train.c), shared with the policy-guided search
 * (sgdp_search.c), which evaluates moves on the trainer's problems with
 * its simulators and feeds its incumbent back as the policy's input. */
#define SGDP_MAX_SLOTS 64

typedef struct sgdp_task {
    const op_problem *p;
    sgdp_graph sg;
    rl_sims sim; /* one simulator per worker thread */
    ppo_baseline base;
    op_placement best;
    int have_best, best_oom;
    double best_time;
    /* reference placement (heuristics) and its per-row devices */
    int have_ref;
    op_portfolio_winner ref; /* the heuristic that won, its step and memory */
    int *ref_row; /* n: the reference's device per row */
    int *heur_row; /* n: the heuristic reference itself (ref_row follows the
                      best placement) */
    int cloned;   /* behaviour cloning reached its target */
    int follow_best; /* the reference features track the best placement seen */
    int input_oom;   /* the placement in ref_row: its simulated result */
    double input_time;
    op_sim_trace trace; /* of the placement in ref_row (its queueing delays) */
    int have_trace, timing_stale;
} sgdp_task;

/* One rollout batch: K + 1 rollouts of one problem. */
typedef struct sgdp_slot {
    int task;
    nn_rng base;
    int *input;   /* n_max: the reference input (per row) this slot's passes see */
    int varied;   /* input is a perturbed copy of the task's incumbent */
    double delta; /* calibrated acting policy's offset (calibrated proposals) */
    int *actions;
    double *old_logp, *rewards, *adv, *step, *overflow;
    double *moves; /* per rollout: decisions off the slot's input */
    int *oom;
    int best_k;
} sgdp_slot;

struct sgdp_trainer {
    sgdp_policy *pol;
    sgdp_train_config cfg;
    rl_core c; /* threads, ranks, arena, Adam, RNG, gradient rows; share:
                  slots x (cap + 2 + n_max): rewards, best step, oom, actions */
    sgdp_task *tasks;
    int n_tasks;
    int cap, n_max; /* slot buffers hold cap rollouts of n_max rows */
    sgdp_slot slots[SGDP_MAX_SLOTS];
    sgdp_train_stats stats;
    double last_print;
};

/* sgdp_train.c's helpers for sgdp_search.c: slot buffers for k rollouts;
 * "a is better than b" (no OOM first, then the shorter step); the best-seen
 * record of task tk from a placement given per row (which also becomes
 * the policy's input when it beats the current one); every task's features
 * back to its incumbent (re-simulating its queueing delays if it changed);
 * the acting policy of slot s (calibrated proposals at evaluation). */
op_status sgdp_tr_capacity(sgdp_trainer *t, int k, op_error *err);
int sgdp_tr_better(int oom_a, double time_a, int oom_b, double time_b);
op_status sgdp_tr_keep_best(sgdp_task *tk, int oom, double step, const int *row_dev,
                            op_error *err);
op_status sgdp_tr_refresh(sgdp_trainer *t, op_error *err);
op_status sgdp_tr_acting(sgdp_trainer *t, sgdp_task *tk, sgdp_slot *s, const nn_tensor *raw,
                         nn_tensor *eff, op_error *err);

#endif
