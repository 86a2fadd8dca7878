/*
 * placers/trinity/trinity.h - Trinity (Zhang et al., Algorithms 2022,
 * sections 3-4): a two-level RL placer.  A partition network
 * puts every op into one of G groups; a seq2seq schedule network reads the
 * groups in order and emits a device per group; both are trained jointly
 * with PPO on the MDPE reward (runtime, communication and memory).
 *
 *   node2vec.c          structure vectors of the op graph (learn/node2vec.h)
 *   trinity_features.c  per-op features (Table 1), colocation leaders, masks,
 *                       and the group features of a sampled partition (Table 2)
 *   trinity_policy.c    the networks: partition FFN 64-128 with dropout;
 *                       LSTM encoder over groups, LSTM decoder with additive
 *                       attention and trainable device embeddings, logits
 *                       C*tanh(u/T) (eq. 9); forward (sampling or given
 *                       actions) and backward
 *   trinity_reward.c    the MDPE reward (eq. 8) from a simulator result,
 *                       and the constrained order that picks the result
 *   trinity_warm.c      beyond the paper: a reference placement (a fast
 *                       heuristic, expert by default) that the priors centre
 *                       on, decision units, and tolerances taken from it
 *   trinity_train.c     PPO (eqs. 12-15): rollouts simulated in parallel
 *                       (beyond the paper: judged by a list schedule of
 *                       their placement, reward_order), clipped ratio, EMA
 *                       baseline, Adam, clipping, logit noise in the first
 *                       iterations, best placement and a pool kept;
 *                       --slots rollout batches per iteration shared by MPI
 *                       ranks (gradients all-reduced, core/parallel.h)
 *   trinity_final.c     beyond the paper: the placer's final choice tries
 *                       priority list-schedule orders (opplace/
 *                       list_schedule.h) on the pool and the reference and
 *                       keeps the fastest within the tolerances
 *   src/placers/trinity/trinity.c  the placer (--order-search off: no final
 *                       choice, no orders)
 *
 * HOW THE DEVICE COUNT ENTERS.  As in SGDP, the decoder always has
 * max_devices outputs (8); devices >= nd are masked, so one weights file
 * serves clusters of up to max_devices devices and graphs of any size
 * (G is fixed by the architecture, not by the graph).
 *
 * COLOCATION, ELIGIBILITY, PINS.  Members of an opplace colocation group
 * are forced into one Trinity group: the group's first op (topological
 * order) is the partition decision, the others copy its group (they are
 * not decisions).  A Trinity group's device mask is the intersection of its
 * members' allowed devices (op_eligible; problem->group_ok for colocation
 * groups); when that is empty (e.g. a CPU-only op grouped with a GPU-only
 * op) the mask is their union and, after sampling, every op whose group's
 * device it may not use is REPAIRED to its first allowed device (with its
 * whole colocation group).  Empty groups still get a device from the
 * decoder but are not decisions (no probability, no gradient).
 *
 * Files of src/placers/trinity/:
 *   trinity.c          the placer (options, zero-shot, fine-tuning)
 *   trinity_features.c the inputs (section 4.1.1), with node2vec (src/learn)
 *   trinity_anchor.c   each op's anchor group
 *   trinity_policy.c   the partition and schedule networks
 *   trinity_reward.c   the MDPE reward and the constrained order
 *   trinity_train.c    joint PPO training
 *   trinity_warm.c     the reference placement (beyond the paper)
 *   trinity_boundary.c layer-boundary moves around the reference (search,
 *                      not learning; beyond the paper)
 *   trinity_final.c    the final choice over pool, reference and orders
 *                      (search, not learning; beyond the paper)
 *   trinity_internal.h what these files share
 * The command `opplace train trinity`: src/cli/train_trinity.c.
 */
#ifndef OPPLACE_TRINITY_H
#define OPPLACE_TRINITY_H

#include <stdint.h>

#include "learn/learn.h"
#include "learn/options.h"
#include "nn/nn.h"
#include "learn/node2vec.h"
#include "opplace/placer.h"
#include "opplace/problem.h"
#include "opplace/simulate.h"

/* --------------------------------------------------------------- config */

/* Section 5.1 (4) scaled down for a 2-core CPU (paper value in brackets). */
typedef struct trinity_config {
    int max_devices;    /* 8 [2, 4 or 8] decoder outputs */
    int groups;         /* G: 64 [256] */
    int n2v_dim;        /* 16 Node2vec width */
    int type_dim;       /* 8 op-type embedding width */
    int part_h1, part_h2; /* 64, 128 [64, 128] partition hidden layers */
    double dropout;     /* 0.3 [0.3] between them */
    int hidden;         /* 64 [256] LSTM width (encoder and decoder) */
    int dev_dim;        /* 16 device embedding width */
    int attn;           /* 32 additive-attention width */
    double temperature; /* T: 10 [10] */
    double tanh_c;      /* C: 5 [5] */
    double prior;       /* 1 [none]: order prior of the partition logits, see below */
    double sched_prior; /* 2 [none]: block prior of the schedule logits, see below */
    int centre;         /* 0 [none]: centred logits, see trinity_policy.c (--paper: 1) */
} trinity_config;

/* The centred policy's training constants (--paper): the paper's Adam rate
 * 3e-3 and no entropy bonus.  The structure initialisation below starts
 * the policy informed, and a larger rate destroys that in a few updates (at
 * 3e-2 on GNMT-2 x 4 the data edges inside a group fall from 76 to 12 %);
 * an entropy bonus holds the centred policy at the uniform saddle. */
#define TRINITY_CENTRED_LR 3e-3
#define TRINITY_CENTRED_ENTROPY 0.0
/* --paper's Node2vec (the paper gives no p, q or walk lengths): q = 0.25
 * (outward, DFS-like walks: vectors of neighbourhoods, not of structural
 * roles), walks of 40 ops, window 8.  With node2vec_defaults (q = 1, 20,
 * 4) a 64-way k-means of the vectors keeps 51 % of GNMT-2's data edges
 * inside a group, with these 83 % (METIS: 75 %). */
#define TRINITY_PAPER_N2V_Q 0.25
#define TRINITY_PAPER_N2V_LENGTH 40
#define TRINITY_PAPER_N2V_WINDOW 8
/* The structure initialisation (trinity_train_config.structure_init):
 * the mean probability of an op's k-means group the fit stops at. */
#define TRINITY_STRUCTURE_INIT 0.97

/* The ORDER PRIOR (not in the paper): op i's partition logit for group g
 * gets -prior * |anchor_i - g| added, anchor_i the op's part in a METIS
 * G-way min-cut partition whose parts are numbered in dataflow order
 * (trinity_anchor.c).  An untrained partition network then forms groups
 * that are cheaply-cut clusters, read by the schedule network roughly in
 * dataflow order, instead of scattering every group over the whole graph
 * (which makes every random schedule communicate on almost every edge and
 * drives the policy straight to "everything on one device"); the network
 * learns deviations from it.  prior = 0 gives the paper's network.
 *
 * The BLOCK PRIOR (not in the paper): the schedule logit of device
 * d = floor(t * nd / G) for group t gets +sched_prior, so the untrained
 * decoder mostly maps the hierarchical anchor blocks to devices (the METIS
 * split) and explores around it.  Without it, PPO from a random schedule
 * collapses every group onto one device within ~10 iterations on graphs
 * whose communication is expensive (every random split cuts gigabytes).
 * sched_prior = 0 gives the paper's network. */
trinity_config trinity_config_default(void);
op_status trinity_config_check(const trinity_config *cfg, op_error *err);

/* ------------------------------------------------------------- features */

/* Numeric op features before the Node2vec vector: z(runtime),
 * z(log output bytes), z(log param bytes), topological depth in [0,1]. */
#define TRINITY_N_SCALAR 4
/* Op-type vocabulary: a fixed list of common TensorFlow op names plus
 * hash buckets for the rest (trinity_type_id). */
int trinity_vocab_size(void);
int trinity_type_id(const char *type);

/* A problem prepared for the policy (independent of the weights). */
typedef struct trinity_graph {
    const op_problem *p;
    int n, nd, max_devices, groups;
    int n_num;             /* TRINITY_N_SCALAR + n2v_dim */
    double *num;           /* n x n_num, op index order */
    int *type_id;          /* per op */
    int *leader;           /* per op: the op whose group it copies, or -1 */
    unsigned char *decides; /* per op: leader < 0 */
    unsigned char *allowed; /* n x max_devices: devices the op (its colocation group) may use */
    int *first_allowed;    /* per op: the repair device */
    int *anchor;           /* per op: centre of the order prior (trinity_anchor.c) */
    int *block_dev;        /* per group: the device the block prior favours */
    double *out_share, *time_share, *param_share; /* per op: fraction of the graph's total */
} trinity_graph;

/* Computes Node2vec (n2v, its dim overridden by cfg->n2v_dim).  Fails with
 * OP_EINPUT when the cluster has more than cfg->max_devices devices. */
op_status trinity_graph_init(trinity_graph *tg, const op_problem *p, const trinity_config *cfg,
                             const node2vec_config *n2v, op_error *err);
void trinity_graph_destroy(trinity_graph *tg);

/* Width of a group's feature row (Table 2): mean type embedding, log-scaled
 * output, runtime, parameter and member shares, adjacency over G groups. */
int trinity_group_feature_dim(const trinity_config *cfg);

/* BEYOND THE PAPER (trinity_warm.c): centre the priors on a reference
 * placement ref_device_of (per op).  The G groups are split into one
 * contiguous block per device, sized by the reference's work on it; the
 * ops the reference puts on device d are partitioned (METIS) into d's
 * block, those parts become the anchors of the order prior and block_dev
 * maps the block to d, so the untrained policy samples placements around
 * the reference.  unit_target > 0: decisions are made per unit (about
 * unit_target Celeritas fusion groups split by the reference's devices,
 * learn_units_build): a unit's first op decides its group, the others copy
 * it, as colocation does.  Call once, right after trinity_graph_init. */
op_status trinity_graph_set_reference(trinity_graph *tg, const int *ref_device_of,
                                      int unit_target, uint64_t seed, op_error *err);

/* --------------------------------------------------------------- policy */

typedef struct trinity_policy trinity_policy;
typedef struct trinity_pass trinity_pass; /* one forward pass, in an arena */

trinity_policy *trinity_policy_new(const trinity_config *cfg, uint64_t seed, op_error *err);
void trinity_policy_free(trinity_policy *pol);
const trinity_config *trinity_policy_config(const trinity_policy *pol);
/* 1 the first time it is asked about a policy made by trinity_policy_new
 * (not loaded from a file), then 0: the trainer initialises such a policy
 * from the graph's structure once (trinity_train_config.structure_init). */
int trinity_policy_take_fresh(trinity_policy *pol);
nn_params *trinity_policy_params(trinity_policy *pol);
/* Weights files: nn_params files holding the architecture as "trinity.arch". */
op_status trinity_policy_save(const trinity_policy *pol, const char *path, op_error *err);
trinity_policy *trinity_policy_from_file(const char *path, op_error *err);

/* The actions of K rollouts and what PPO needs about them. */
typedef struct trinity_batch {
    int k, cap, n, groups, max_devices;
    int *group;               /* k x n: each op's group */
    int *device;              /* k x G: each group's device */
    unsigned char *gmask;     /* k x G x max_devices: the decoder's mask */
    unsigned char *gdecides;  /* k x G: the group has members */
    double *old_part;         /* k x n: log-probability of group[] when sampled */
    double *old_sched;        /* k x G: log-probability of device[] when sampled */
    unsigned char *scratch;   /* G x max_devices, for the masks */
} trinity_batch;

op_status trinity_batch_init(trinity_batch *b, const trinity_graph *tg, int cap, op_error *err);
void trinity_batch_destroy(trinity_batch *b);
/* Rollout r's device per op (repairs applied, colocation followed). */
void trinity_batch_placement(const trinity_graph *tg, const trinity_batch *b, int r,
                             int *device_of);

typedef struct trinity_run {
    int training;       /* dropout on (masks drawn from dropout_rng) */
    nn_rng dropout_rng; /* the same state gives the same masks */
    int sample;         /* draw the k rollouts' actions into the batch; else use its actions */
    int greedy_last;    /* when sampling: rollout k-1 takes every argmax */
    nn_rng *rng;        /* for sampling */
    double noise;       /* when sampling: logits + U(-noise, noise) */
    double explore_part, explore_sched; /* when sampling (beyond the paper): the chance
                           that a partition (schedule) decision is drawn uniformly
                           among its allowed choices instead; old_logp stays the
                           policy's, as for the noise (trinity_train.c) */
    double deadline;    /* > 0 (when sampling on one rank): past this op_seconds_now()
                           time the pass stops between its stages with OP_EINTERNAL
                           ("out of time"; a pass over 10^5 ops takes seconds), and
                           the trainer simulates no rollout it has not started */
} trinity_run;

/* One forward pass for k rollouts (batch->k = k).  Outputs, from the
 * arena: logp_part [n x G] (op i's group distribution) and logp_sched
 * [(k*G) x max_devices] (row r*G+t: rollout r's device distribution for
 * group t, given its earlier devices; masked entries -INFINITY).  When
 * sampling, the batch's actions, masks and old log-probabilities are
 * filled. */
op_status trinity_policy_forward(trinity_policy *pol, nn_arena *ar, const trinity_graph *tg,
                                 trinity_batch *batch, int k, const trinity_run *run,
                                 nn_tensor *logp_part, nn_tensor *logp_sched,
                                 trinity_pass **pass, op_error *err);
/* The partition network alone (run->sample is ignored): logp_part [n x G];
 * its pass takes trinity_policy_backward with dlogp_sched NULL (and batch
 * NULL).  The structure initialisation (trinity_train.c) fits it. */
op_status trinity_policy_partition_forward(trinity_policy *pol, nn_arena *ar,
                                           const trinity_graph *tg, const trinity_run *run,
                                           nn_tensor *logp_part, trinity_pass **pass,
                                           op_error *err);
/* Adds the parameters' gradients of a loss with gradients dlogp_part,
 * dlogp_sched (same shapes as the outputs; either may be NULL). */
op_status trinity_policy_backward(trinity_policy *pol, nn_arena *ar, const trinity_graph *tg,
                                  const trinity_batch *batch, trinity_pass *pass,
                                  const nn_tensor *dlogp_part, const nn_tensor *dlogp_sched,
                                  op_error *err);

/* --------------------------------------------------------------- reward */

/* MDPE (eq. 8): R = -ln(alpha * step/LB + beta * q_comm + gamma * q_mem),
 * q_x = [x > tol] * (1 + (x - tol) / tol), x the peak over devices. */
typedef struct trinity_reward_config {
    double alpha, beta, gamma; /* 0.5, 0.3, 0.2 (section 5.2) */
    double max_comm_bytes;     /* C^: per-device communication tolerance (8 GiB; the placer:
                                  the reference's peak, trinity_warm.c) */
    double max_mem_bytes;      /* M^: per-device memory tolerance (8 GiB), and never
                                  above the device's memory_bytes */
} trinity_reward_config;

trinity_reward_config trinity_reward_defaults(void);

typedef struct trinity_metrics {
    double step_us;
    int64_t peak_comm;  /* max over devices of bytes sent + received (channels it uses) */
    int64_t peak_mem;   /* max over devices of peak memory */
    int oom;            /* above some device's memory_bytes */
    double reward;
} trinity_metrics;

/* Per-device communication load from r->chan_bytes: a device's load is the
 * traffic of every channel that carries one of its links. */
void trinity_comm_load(const op_problem *p, const op_sim_result *r, int64_t *per_device);
trinity_metrics trinity_measure(const op_problem *p, const op_sim_result *r,
                                const trinity_reward_config *rc);

/* The CONSTRAINED ORDER in which the trainer keeps its best placement and
 * the placer picks its result (beyond the paper, which returns the
 * highest-reward placement): a placement whose peak communication and peak
 * memory are within the tolerances (max_comm_bytes, max_mem_bytes, the
 * raw values) beats one that is not; then one that fits in memory beats
 * one that does not; then, within the tolerances, the faster wins (ties:
 * less communication, then less memory); outside them, the higher MDPE
 * reward.  Returns 1 when a is strictly better than b. */
int trinity_within_tolerances(const trinity_metrics *m, const trinity_reward_config *rc);
int trinity_metrics_better(const trinity_metrics *a, const trinity_metrics *b,
                           const trinity_reward_config *rc);

/* ------------------------------------------------------------- training */

typedef struct trinity_train_config {
    ppo_config ppo;
    int samples;           /* rollouts per iteration (16) */
    long iterations;       /* <= 0: until the budget runs out */
    double budget_seconds; /* <= 0: no time limit (then iterations must be > 0) */
    int threads;           /* simulation threads; <= 0: online CPUs */
    uint64_t seed;
    int ema_period;        /* N of eq. 15 (9: decay 0.8) */
    int marginal;          /* the partition's PPO ratio per op over the device its group was
                              mapped to, its group marginalised (trinity_train.c; --paper
                              keeps it) */
    double structure_init; /* > 0: before PPO, fit the partition network to k-means groups of
                              its Node2vec inputs until an op's group has this mean
                              probability (trinity_train.c; --paper keeps it); 0: off */
    int ppo_dropout;       /* 1 (the paper): PPO's sampling and update passes run the partition
                              network's dropout, one mask per iteration shared by its rollouts;
                              0: without it (trinity_train.c; --paper) */
    int noise_steps;       /* iterations with logit noise (500) */
    double noise_max;      /* 0.1 */
    double explore;        /* beyond the paper: decisions per rollout of each network
                              drawn uniformly (trinity_run), so exploration survives the
                              policy converging (0: none, the paper; the placer: 1) */
    trinity_reward_config reward;
    node2vec_config n2v;
    const op_place_ctx *progress; /* op_progress lines; may be NULL */
    int stop_at_bound;     /* training ends once every problem's best placement is
                              proven optimal (trinity_trainer_proven): the placer's
                              goal is the placement; 0 (training for the policy's
                              sake, `opplace train`): the iterations or budget */
    int slots;             /* rollout batches per iteration (1), split over MPI ranks:
                              batch b is sampled, simulated and backpropagated by rank
                              b mod size; same seed and iterations give the same
                              weights for any rank count (trinity_train.c) */
    /* BEYOND THE PAPER (trinity_warm.c); the defaults here are the paper's,
     * the placer and `opplace train trinity` turn them on. */
    const char *heuristics; /* reference placement: the best of these placers
                               (op_portfolio_best); NULL: none */
    int unit_target;        /* > 0 (with heuristics): decide per unit, about this many */
    int comm_from_reference, mem_from_reference; /* tolerance C^ (M^) := the reference's
                              peak communication (memory) instead of reward.max_* */
    int reward_order;       /* the schedule a rollout is judged by (beyond the paper):
                              OP_PRIORITY_FIFO (0, the paper: the simulator's
                              first-ready-first), an op_priority of opplace/
                              list_schedule.h (a list schedule of the rollout's own
                              placement with a per-device memory cap of 100, 95 or
                              90 % of M^, whichever is best for the reference; step
                              time and peak memory are that schedule's), or
                              TRINITY_REWARD_ORDER_AUTO: the one of these four that is
                              best for the reference under the constrained order
                              (blevel without a reference) */
    int pool;               /* distinct best placements kept for the placer's final
                              choice (trinity_trainer_pool; >= 1) */
    /* Deadlines (op_seconds_now() times; 0: none) of the set-up (Node2vec stops
     * early, the judge's order search ends; on one rank only, as ranks must
     * agree on both) and of training (iterations end, with or without an
     * iteration count; under MPI rank 0 decides, and a started iteration
     * finishes). */
    double setup_deadline, deadline;
} trinity_train_config;

#define TRINITY_REWARD_ORDER_AUTO (-1)
#define TRINITY_DEFAULT_POOL 4
#define TRINITY_DEFAULT_BOUNDARY_MOVES 4 /* chunks per layer scope; 0: off */
/* "none", "blevel", "cpath", "blevel-w", "auto" <-> the values above;
 * trinity_reward_order_parse returns -2 for an unknown name. */
int trinity_reward_order_parse(const char *name);
const char *trinity_reward_order_name(int order);

#define TRINITY_DEFAULT_HEURISTICS "expert"
#define TRINITY_DEFAULT_EXPLORE 1.0
/* Priors of a new policy centred on a reference: stronger than the plain
 * defaults, so that an untrained policy's samples stay near the reference
 * (about 1 group in 55 moves to another device on 2 devices). */
#define TRINITY_REF_PRIOR 2.0
#define TRINITY_REF_SCHED_PRIOR 4.0

#define TRINITY_MAX_SLOTS 64

trinity_train_config trinity_train_defaults(void);

/* The options of the placer (placer = 1) and of `opplace train trinity`
 * (0), read in one place (trinity_options.c) so their names and defaults
 * agree: the learned placers' shared ones (learn/options.h; --heuristics
 * defaults to TRINITY_DEFAULT_HEURISTICS, --samples to 16) and --groups
 * --slots --max-comm --max-mem --mdpe A,B,C, --order-search
 * off|final|judged|all (placer: all with a reference, training: judged);
 * training also --max-devices and --hidden (a new policy's shape).
 * --paper: the paper's method (no reference, priors, uniformly drawn
 * decisions, orders or boundary moves; options that tune those are usage
 * errors with it). */
struct op_options;
typedef struct trinity_options {
    learn_options lo;         /* the shared options (learn/options.h) */
    trinity_config pc;        /* a new policy's architecture and priors */
    trinity_train_config tc;  /* training (iterations, budget, seed, progress: the caller's) */
    int schedule_orders;      /* placer: the final choice orders its candidates */
    int boundary_moves;       /* placer: chunks per layer scope; 0 = off */
} trinity_options;
/* --paper's settings: the paper's networks and PPO (no priors, no uniformly
 * drawn decisions) with what makes its PPO learn here: centred logits
 * (trinity_config.centre), the device-marginal partition ratio
 * (trinity_train_config.marginal), the structure initialisation
 * (trinity_train_config.structure_init, with TRINITY_PAPER_N2V_*), Adam at
 * TRINITY_CENTRED_LR without an entropy bonus, and PPO's passes without the
 * partition network's dropout (trinity_train_config.ppo_dropout = 0).  The
 * learning test runs exactly these. */
void trinity_paper_settings(trinity_config *pc, trinity_train_config *tc);
op_status trinity_options_read(struct op_options *o, int placer, trinity_options *out,
                               op_error *err);

typedef struct trinity_trainer trinity_trainer;

trinity_trainer *trinity_trainer_new(trinity_policy *pol, const op_problem *const *problems,
                                     int n, const trinity_train_config *cfg, op_error *err);
void trinity_trainer_free(trinity_trainer *t);
op_status trinity_trainer_run(trinity_trainer *t, op_error *err);
/* Sample `samples` placements of problem i plus the greedy one, without
 * dropout or noise and without learning; the best joins the record. */
op_status trinity_trainer_evaluate(trinity_trainer *t, int i, int samples, op_error *err);

typedef struct trinity_best {
    const int *device_of;  /* NULL before any rollout */
    trinity_metrics m;
} trinity_best;
trinity_best trinity_trainer_best(const trinity_trainer *t, int i);
/* Does problem i's best placement fit and reach the problem's proven bound
 * (op_problem_at_bound), under the judge of its rollouts?  Training stops
 * there. */
int trinity_trainer_proven(const trinity_trainer *t, int i);
/* Problem i's pool: up to cfg.pool distinct placements, best first by the
 * constrained order under the search's judge (reward_order); entry 0 is
 * trinity_trainer_best.  The reference is in it while it ranks high
 * enough.  Identical on every MPI rank (fed from the exchanged slot bests). */
int trinity_trainer_pool_size(const trinity_trainer *t, int i);
trinity_best trinity_trainer_pool(const trinity_trainer *t, int i, int rank);
/* The schedule rollouts of problem i are judged by (auto resolved);
 * *cap_share (may be NULL) receives the list schedule's memory cap as a
 * share of M^ (100, 95 or 90 %: the best for the reference). */
int trinity_trainer_reward_order(const trinity_trainer *t, int i, double *cap_share);
/* Problem i's reference (NULL without heuristics or when none placed it):
 * its metrics and the placer that produced it. */
typedef struct trinity_reference {
    char name[32];
    trinity_metrics m;      /* first-ready-first (FIFO) */
    trinity_metrics judged; /* under the search's judge (= m with reward_order none) */
    const int *device_of;
} trinity_reference;
const trinity_reference *trinity_trainer_reference(const trinity_trainer *t, int i);
/* The reward configuration (tolerances included) problem i is trained and
 * judged with. */
trinity_reward_config trinity_trainer_reward(const trinity_trainer *t, int i);

/* The placer's final choice (trinity_final.c, beyond the paper): among
 * problem 0's pool and reference, each first-ready-first or with a
 * priority list-schedule order, the fastest variant within the tolerances
 * of rc (no more out of memory than the best first-ready-first one).  out
 * (n ops, nd devices) receives it, its `order` included when it has one;
 * *m its metrics.  extra (n_extra x n device_of rows, may be NULL) are
 * further candidates (layer-boundary moves).  Progress lines go to ctx. */
op_status trinity_final_choice(const op_place_ctx *ctx, const trinity_trainer *t,
                               const trinity_reward_config *rc, const int *extra, int n_extra,
                               op_placement *out, trinity_metrics *m, op_error *err);

/* Layer-boundary moves around a reference placement (trinity_boundary.c,
 * beyond the paper): every layer scope cut into `chunks` runs in
 * topological order; a whole scope or a prefix / suffix of its chunks
 * moves from one device to a neighbouring one; device swaps; pairs of two
 * single moves among the `pair_top` fastest and least-communicating ones;
 * then up to `rounds` - 1 more rounds around the best admissible one.
 * Each candidate is judged first-ready-first and with every priority list
 * schedule and memory cap, by the final choice's admissibility rule
 * (within rc when the reference is, else no higher peaks than it, never
 * more out of memory).  res->kept (keep x n, res->n_kept rows, best
 * first) receives the admissible candidates ahead of the reference with
 * its best order (res->ref_best): fewer out of memory, then faster (when
 * the reference fits: strictly faster). */
typedef struct trinity_boundary_config {
    double deadline; /* op_seconds_now() time after which no candidate is judged (0: none) */
    int chunks;   /* 4: chunks per layer scope */
    int pair_top; /* 8 */
    int keep;     /* 2 */
    int rounds;   /* 8: descent rounds (each from the best admissible so far) */
    int order_all; /* 0; 1: also order the candidates above the communication
                      bound (for the report: faster_any, least_comm_faster;
                      the search itself does not change) */
    /* NULL, or called with every candidate judged (tests): its device_of,
     * first-ready-first metrics and fastest admissible step (inf: none) */
    void (*visit)(void *arg, const int *device_of, const trinity_metrics *fifo,
                  double best_admissible_us);
    void *visit_arg;
} trinity_boundary_config;

typedef struct trinity_boundary_result {
    int blocks, singles, swaps, pairs; /* judged candidates by kind */
    int rounds;                        /* descent rounds run */
    int candidates, comm_ok, admissible;
    int faster;                         /* admissible and ahead of ref_best (fewer out of
                                           memory, then faster) */
    trinity_metrics ref_fifo, ref_best; /* the reference, FIFO and with its best order */
    trinity_metrics best;               /* the best admissible candidate (step inf: none) */
    char best_what[16];                 /* "single", "swap", "pair" or "none" */
    double fastest_comm_ok;             /* fastest candidate within the comm bound, any memory */
    int faster_any;                     /* candidates faster than ref_best at any peaks
                                           (above the comm bound: only with order_all) */
    trinity_metrics least_comm_faster;  /* of those, the least communication (FIFO peaks,
                                           its best step at any peaks) */
    double seconds;
    int cut_short;                      /* the deadline stopped it */
    int n_kept;
    int *kept;                          /* n_kept x n device_of rows */
    trinity_metrics *kept_m;
} trinity_boundary_result;

trinity_boundary_config trinity_boundary_defaults(void);
op_status trinity_boundary_search(const op_problem *p, const int *ref,
                                  const trinity_reward_config *rc,
                                  const trinity_boundary_config *cfg,
                                  trinity_boundary_result *res, op_error *err);
void trinity_boundary_result_destroy(trinity_boundary_result *res);

typedef struct trinity_train_stats {
    long iterations, rollouts;
    double seconds, sim_seconds, setup_seconds;
    double last_mean_reward;
} trinity_train_stats;
trinity_train_stats trinity_trainer_stats(const trinity_trainer *t);

#endif
