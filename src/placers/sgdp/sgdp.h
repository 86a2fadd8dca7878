/*
 * placers/sgdp/sgdp.h - SGDP, the single-shot generalized device placer (Zhou et
 * al., IEEE Micro 2020; the SGDP paper): a policy that places every op of
 * a graph in one shot, trained with PPO on simulated step times, whose
 * weights transfer to graphs it has never seen.
 *
 *   features.c       per-op features, neighbour lists and action masks
 *                    (sgdp_graph), all independent of the policy's weights
 *   graphsage.c      GraphSAGE embedding, max-pool aggregator (eqs. 2-3)
 *   placement_net.c  Transformer-XL style segment-recurrent attention over
 *                    the topological order, no positional encoding
 *   sgdp_policy.c    the whole policy (Figure 1): features -> GraphSAGE ->
 *                    placement network -> per-op device distribution (eq. 4),
 *                    plus (beyond the paper) a learnt-gain skip from the
 *                    reference input's device to its logit
 *   sgdp_train.c     PPO training over one graph (SGDP-one) or many (batch),
 *                    rollouts simulated in parallel (and over MPI ranks),
 *                    best placement kept; in batch training the reference
 *                    inputs are varied (relabelled devices, perturbations)
 *                    and the policy acts through calibrated proposals (a
 *                    fixed number of moves off its input per sample, the
 *                    policy ranking which), as zero-shot placement does
 *   sgdp_warm.c      beyond the paper: the policy's view of a heuristic
 *                    reference placement, which it sees
 *                    as input and is first cloned to, and of the decision
 *                    units (fused ops split by the reference, learn/units.h)
 *   sgdp_search.c    beyond the paper: the zero-shot policy-guided search, a
 *                    steepest descent over the single moves the policy
 *                    ranks highest, its incumbent fed back as the input
 *
 * HOW THE DEVICE COUNT ENTERS.  The output head always has max_devices
 * logits (8 by default).  A cluster with nd <= max_devices devices masks
 * logits nd..max_devices-1 away, together with the devices an op may not
 * use (op_eligible), and every feature is normalised per graph, so no
 * weight's shape depends on the graph or the cluster: one weights file
 * serves every graph and every cluster of up to max_devices devices.  The
 * feature nd/max_devices tells the policy how many devices it has.
 *
 * COLOCATION.  The first op of a colocation group (in topological order) is
 * the group's decision, masked to the devices every member may use
 * (problem->group_ok); the other members copy its device and are not
 * decisions (they get no probability and no gradient).
 *
 * Files of src/placers/sgdp/:
 *   sgdp.c          the placer (options, zero-shot, fine-tuning)
 *   features.c      what the policy sees of a problem
 *   graphsage.c     the graph embedding network
 *   placement_net.c the placement network (Transformer-XL)
 *   sgdp_policy.c   the end-to-end policy; sgdp_internal.h its halves
 *   sgdp_train.c    PPO training on simulated step times
 *   sgdp_warm.c     reference features and decision units (beyond the paper)
 *   sgdp_search.c   policy-guided zero-shot search (beyond the paper)
 * Shared learning pieces: src/learn/ (learn.h).
 */
#ifndef OPPLACE_SGDP_H
#define OPPLACE_SGDP_H

#include <stdint.h>

#include "learn/learn.h"
#include "learn/units.h"
#include "nn/nn.h"
#include "opplace/placement.h"
#include "placers/portfolio.h"
#include "opplace/placer.h"
#include "opplace/problem.h"

/* ------------------------------------------------------------ features */

#define SGDP_TYPE_BUCKETS 16
/* the reference placement's device (one-hot over 8 slots, device d in slot
 * d mod 8), a has-reference flag, and four numbers about the op's decision
 * unit under the reference (sgdp_warm.c): the share of its members' edges
 * cut, its device's relative compute load, its compute work relative to
 * the mean unit's, and its members' queueing delay in the reference's
 * simulation; all 0 without a reference */
#define SGDP_REF_SLOTS 8
#define SGDP_REF_FEATURES (SGDP_REF_SLOTS + 5)
#define SGDP_N_FEATURES (SGDP_TYPE_BUCKETS + 18 + SGDP_REF_FEATURES)

/* A problem prepared for the policy.  Rows are positions in the graph's
 * topological order: row t is op g->topo[t]. */
typedef struct sgdp_graph {
    const op_problem *p;
    int n, nd, max_devices;
    double *feat;          /* n x SGDP_N_FEATURES, normalised */
    int *nbr_off, *nbr;    /* CSR over rows: up to knn neighbours (preds and succs) */
    unsigned char *mask;   /* n x max_devices: devices row t's decision may pick */
    int *leader;           /* per row: the row whose device it copies, or -1 */
    unsigned char *decides; /* per row: 1 when leader[t] < 0 */
    int *ref_dev;          /* per row: the reference input's device, or -1 (no
                              reference); read by the policy's reference skip */
    double *scratch;       /* 3n: sgdp_graph_set_reference's work space */
    double *wait;          /* per row: in the reference's simulation, the op's
                              start minus its inputs' latest finish, over the
                              step time; 0 until the trainer fills it
                              (sgdp_graph_set_timing) */
} sgdp_graph;

/* Fails with OP_EINPUT when the cluster has more than max_devices devices. */
op_status sgdp_graph_init(sgdp_graph *sg, const op_problem *p, int max_devices, int knn,
                          op_error *err);
void sgdp_graph_destroy(sgdp_graph *sg);

/* ------------------------------------------ reference and units (sgdp_warm.c)
 * Beyond the paper: a reference placement, the best of fast heuristics
 * (op_portfolio_best), and decision units split by it (learn/units.h), so
 * PPO explores around a sensible placement. */

/* What the placer and `opplace train` use unless told otherwise. */
#define SGDP_DEFAULT_HEURISTICS "expert,metis,m-topo,single"
/* decisions moved per sample by the calibrated acting policy (batch
 * training and zero-shot; sgdp_train_config.proposal_moves) */
#define SGDP_DEFAULT_MOVES 2.0

/* Fill the reference features (the last SGDP_REF_FEATURES columns) and
 * sg->ref_dev from ref_row[t], the reference's device of row t (or -1).
 * The cut share is the decision unit's (every member's edges), so call it
 * again after sgdp_graph_set_units. */
void sgdp_graph_set_reference(sgdp_graph *sg, const int *ref_row);

/* sg->wait from a simulation trace of the reference (trace->start_us and
 * finish_us per op) and its step time; takes effect at the next
 * sgdp_graph_set_reference. */
void sgdp_graph_set_timing(sgdp_graph *sg, const double *start_us, const double *finish_us,
                           double step_us);

/* Make each unit one decision: its first row decides, the others copy it,
 * and every member's mask becomes the intersection of the members' masks.
 * Call once, on a freshly initialised sgdp_graph. */
op_status sgdp_graph_set_units(sgdp_graph *sg, const int *unit_of, int n_units, op_error *err);

/* -------------------------------------------------------------- policy */

/* Table 3's sizes scaled down for a 2-core CPU (paper value in brackets). */
typedef struct sgdp_config {
    int max_devices; /* 8: width of the output head */
    int hidden;      /* 32 [gs_dim = trf_d_model = 128] */
    int gs_layers;   /* 2 [4] */
    int gs_knn;      /* 8 [5]: most neighbours aggregated per op */
    int trf_layers;  /* 2 [2] */
    int heads;       /* 4 [5 x 25] */
    int ffn;         /* 64 [trf_d_inner = 256] */
    int segment;     /* 64: ops per attention segment (and memory length) */
    double head_init; /* the output head's weights start at this multiple of Glorot:
                         0.1 (a nearly uniform first policy; around a reference);
                         SGDP_PLAIN_HEAD_INIT without one (not stored in weights) */
} sgdp_config;

sgdp_config sgdp_config_default(void);

/* THE PLAIN POLICY (no reference; bench/RESULTS.md, "Learned placers",
 * has the curves and the ablation).  Without a reference the devices of a
 * homogeneous cluster are interchangeable, so at a uniform policy every
 * op's expected gradient is exactly zero (E[reward | op v on d] is the
 * same for every d) and the entropy bonus holds the policy there.  Once
 * the symmetry breaks, the steepest way up is the one direction every op
 * shares, a global preference for one device (fewer cut edges fastest), so
 * plain PPO converges to one device.  So without a reference
 * (sgdp_policy_forward):
 *   - each device's logits are centred over the graph's deciding ops (the
 *     mean over the rows that decide subtracted from every row, before the
 *     mask; a colocation group's followers copy its first member), which
 *     removes exactly that global preference: the policy can only prefer a
 *     device for some decisions over others, i.e. split the graph;
 *   - the head's input is standardised over the deciding ops (each hidden
 *     column to mean 0 and deviation 1 over them, a normalisation over the
 *     graph as GraphNorm): the network's last layer varies little between
 *     ops, and centred logits of unstandardised inputs are ~0, a policy
 *     that stays at entropy ln D; standardised, the untrained policy
 *     already prefers different devices for different ops.  Over the
 *     deciding ops only, because an export's few group leaders (forward
 *     ops among thousands of backward ops) would be outliers with sharp
 *     untrained logits;
 *   - the head starts at SGDP_PLAIN_HEAD_INIT x Glorot, the entropy bonus
 *     is SGDP_PLAIN_ENTROPY and Adam's rate SGDP_PLAIN_LR;
 *   - advantages are taken against the batch's mean reward, not a moving
 *     average (sgdp_train_config.moving_baseline): a lagging average makes
 *     the samples of an improving policy all look good, and the policy
 *     converges prematurely.
 * These are beyond the paper's text (which names neither), and --paper
 * uses them: they are how its policy learns here.  Their cost: a centred
 * policy cannot prefer one device for every op, so its greedy placement
 * always splits the graph, a handicap where one device is best. */
#define SGDP_PLAIN_HEAD_INIT 1.0
#define SGDP_PLAIN_ENTROPY 0.0
/* Adam's step does not depend on the loss's scale, so the paper's rate
 * (Table 4: 0.5) is not the 3e-3 of a mean-over-ops loss: on two
 * mirror-image chains (tests/test_sgdp.c) the plain policy's greedy
 * placement is optimal after 80 iterations at 1e-2 or more, at 3e-3 after
 * ~300. */
#define SGDP_PLAIN_LR 3e-2
op_status sgdp_config_check(const sgdp_config *cfg, op_error *err);

typedef struct sgdp_policy sgdp_policy;
typedef struct sgdp_pass sgdp_pass; /* one forward pass's caches, in an arena */

sgdp_policy *sgdp_policy_new(const sgdp_config *cfg, uint64_t seed, op_error *err);
void sgdp_policy_free(sgdp_policy *pol);
const sgdp_config *sgdp_policy_config(const sgdp_policy *pol);
nn_params *sgdp_policy_params(sgdp_policy *pol);

/* Weights files are nn_params files (nn/nn.h) that also hold the
 * architecture as the parameter "sgdp.arch".  Load fails with a message
 * naming both architectures when the file's differs from the policy's. */
op_status sgdp_policy_save(const sgdp_policy *pol, const char *path, op_error *err);
op_status sgdp_policy_load(sgdp_policy *pol, const char *path, op_error *err);
/* The architecture stored in a weights file, to build a matching policy. */
op_status sgdp_weights_config(const char *path, sgdp_config *cfg, op_error *err);
/* A new policy with the file's architecture and weights. */
sgdp_policy *sgdp_policy_from_file(const char *path, op_error *err);

/* logp [n x max_devices] (from the arena): masked log-probabilities of each
 * row's device.  *pass keeps what backward needs until the arena is reset. */
op_status sgdp_policy_forward(sgdp_policy *pol, nn_arena *ar, const sgdp_graph *sg,
                              nn_tensor *logp, sgdp_pass **pass, op_error *err);
/* Adds the parameters' gradients of a loss whose gradient w.r.t. logp is
 * dlogp. */
op_status sgdp_policy_backward(sgdp_policy *pol, nn_arena *ar, const sgdp_graph *sg,
                               sgdp_pass *pass, const nn_tensor *dlogp, op_error *err);

/* One placement from the distributions: row_dev[t] per row and device_of
 * per op (followers copy their leader).  greedy: the most likely device. */
void sgdp_sample(const sgdp_graph *sg, const nn_tensor *logp, nn_rng *rng, int greedy,
                 int *row_dev, int *device_of);

/* Calibrated proposals (beyond the paper; sgdp_train.c): the offset delta
 * that, subtracted from every row's reference logit, makes the expected
 * number of decision rows sampled off the reference `moves` (at most half
 * the rows that can move; -INFINITY when none can or moves <= 0), and out =
 * logp with that offset applied (rows without a reference, or delta =
 * -INFINITY: logp itself).  Each row's non-reference devices keep their
 * proportions, and the rows' order by probability of moving is logp's. */
double sgdp_calibrate_offset(const sgdp_graph *sg, const nn_tensor *logp, double moves);
void sgdp_apply_offset(const sgdp_graph *sg, const nn_tensor *logp, double delta,
                       nn_tensor *out);

/* ------------------------------------------------------------ training */

typedef struct sgdp_train_config {
    ppo_config ppo;
    int samples;           /* rollouts per iteration: 32 [Table 4: 800 per update] */
    long iterations;       /* <= 0: until the budget runs out */
    double budget_seconds; /* <= 0: no time limit (then iterations must be > 0) */
    double deadline;       /* > 0: absolute op_seconds_now() time by which training
                              and what follows must be done: cloning stops there,
                              an update's epochs stop there, and no iteration starts
                              unless it and reserve_iterations more fit (by the last
                              one's duration) */
    double reserve_iterations; /* what follows training, in iterations (the placer:
                                  its evaluation's rollouts over an iteration's); 1 */
    int threads;           /* simulation threads; <= 0: online CPUs */
    uint64_t seed;
    double oom_penalty;    /* subtracted from the reward of a rollout that runs out of memory */
    const op_place_ctx *progress; /* op_progress lines go through it; may be NULL */
    /* BEYOND THE PAPER (sgdp_warm.c, sgdp_train.c); the defaults here are
     * the paper's plain PPO, the placer and `opplace train` turn them on. */
    const char *heuristics; /* reference placement from these placers; NULL: none */
    int unit_target;        /* > 0 (with heuristics): decide per unit, about this many */
    int warm_start;         /* clone the reference first and seed the best-seen with it */
    int clone_steps;        /* most behaviour-cloning steps (Adam updates) per problem */
    double clone_fraction;  /* cloning stops after this share of the time budget */
    int slots;              /* rollout batches per iteration (each K rollouts on one
                               problem), gradients summed; MPI ranks share them */
    double input_variety;   /* batch training (several problems, heuristics): share of
                               rollout batches (and cloning steps) whose reference
                               input is the incumbent with its devices relabelled
                               (half of those also perturbed; sgdp_train.c); 0.5 */
    double proposal_moves;  /* > 0 (with heuristics): calibrated proposals: sample
                               from the policy with its reference logits lowered
                               by one offset, chosen so that a sample moves this
                               many decisions off the input on average (the
                               policy's own ranking of moves, no uniform
                               exploration), in batch training and in
                               sgdp_trainer_evaluate; <= 0: the policy mixed
                               with the exploration floor, as SGDP-one trains;
                               2 */
    int stop_at_bound;    /* training ends once every problem's best placement is
                             proven optimal (sgdp_trainer_proven): the placer's
                             goal is the placement; 0 (training for the policy's
                             sake, `opplace train`): the iterations or budget */
    int moving_baseline;  /* plain policy: advantages against the moving-average
                             baseline (ppo_baseline) instead of the batch mean; 0:
                             the batch mean (a lagging baseline made every sample
                             of an improving policy look good: collapse) */
} sgdp_train_config;

sgdp_train_config sgdp_train_defaults(void);

typedef struct sgdp_trainer sgdp_trainer;

/* Training tasks: one per problem (SGDP-one with one, batch training with
 * several: each iteration trains on one problem drawn at random). */
sgdp_trainer *sgdp_trainer_new(sgdp_policy *pol, const op_problem *const *problems, int n,
                               const sgdp_train_config *cfg, op_error *err);
void sgdp_trainer_free(sgdp_trainer *t);
/* Run PPO iterations until cfg's iterations or budget (or op_interrupted). */
op_status sgdp_trainer_run(sgdp_trainer *t, op_error *err);
/* Sample `samples` placements of problem i (plus the greedy one) without
 * updating the policy; the best joins the best-seen record. */
op_status sgdp_trainer_evaluate(sgdp_trainer *t, int i, int samples, op_error *err);

/* ------------------------------------- policy-guided search (sgdp_search.c)
 * BEYOND THE PAPER: a steepest descent from problem i's input
 * placement (its reference, or the incumbent after training) whose moves
 * are ranked by the policy: each round one forward pass, the top_k
 * decisions by the policy's log-odds of moving off the input, each moved
 * alone to the policy's most likely other device, plus `samples`
 * calibrated samples, simulated in parallel; the best replaces the
 * incumbent when better, the other improving single moves are added on top
 * one by one when they still improve, and the incumbent is the next
 * round's input.  Moves that did not improve are not tried again until a
 * neighbouring unit moves; when none is left (a local optimum) it stops,
 * or (kick_samples > 0) the best of kick_samples calibrated samples that
 * moves something becomes the incumbent even if worse and the descent
 * resumes.  Never worse than the input (it seeds the
 * best-seen record), within the action mask, deterministic for a seed.
 * Without a reference (heuristics none) it runs `rounds` of
 * sgdp_trainer_evaluate instead. */
#define SGDP_DEFAULT_SEARCH_ROUNDS 20
#define SGDP_DEFAULT_TOP_K 64
#define SGDP_DEFAULT_SEARCH_SAMPLES 0
#define SGDP_DEFAULT_KICK_SAMPLES 0

/* Defaults chosen on a validation family (gnmt held out of training, not
 * the family reported as held out; bench/RESULTS.md). */
typedef struct sgdp_search_config {
    int rounds;  /* at most this many rounds (forward passes); 20 */
    int top_k;   /* single moves per round; 64 */
    int samples; /* calibrated samples per round besides; 0 */
    int kick_samples; /* > 0: at a local optimum (no single move left to try),
                         the best of this many calibrated samples that moves
                         something becomes the incumbent even if worse (a kick, as in iterated local
                         search; the best-seen record keeps the best); 0 (the
                         default): stop there */
} sgdp_search_config;

/* The guided search's defaults (SGDP_DEFAULT_SEARCH_ROUNDS and friends). */
sgdp_search_config sgdp_search_defaults(void);
op_status sgdp_trainer_search(sgdp_trainer *t, int i, const sgdp_search_config *sc,
                              op_error *err);

typedef struct sgdp_best {
    const op_placement *placement; /* NULL before any rollout */
    double step_time_us;
    int oom;
} sgdp_best;
sgdp_best sgdp_trainer_best(const sgdp_trainer *t, int i);
/* Does problem i's best-seen placement fit and reach the problem's proven
 * bound (op_problem_at_bound)?  Training and the search stop there. */
int sgdp_trainer_proven(const sgdp_trainer *t, int i);
/* The reference placement of problem i (NULL without heuristics). */
const op_portfolio_winner *sgdp_trainer_reference(const sgdp_trainer *t, int i);

typedef struct sgdp_train_stats {
    long iterations, rollouts; /* rollouts of all MPI ranks together */
    long clone_steps;      /* behaviour-cloning updates done */
    double clone_seconds;  /* of the wall time below */
    double seconds;        /* wall time inside run/evaluate */
    double sim_seconds;    /* of which simulating rollouts */
    double last_mean_reward;
} sgdp_train_stats;
sgdp_train_stats sgdp_trainer_stats(const sgdp_trainer *t);

#endif
