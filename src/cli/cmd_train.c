/*
 * cmd_train.c - `opplace train ALGO ...`: train a learned placer's policy
 * on one or more graphs and save its weights.
 *
 * The command loads the graphs and the cluster (shared by every learned
 * placer) and hands them to the trainer named by ALGO, found in TRAINERS
 * below.  A new learned placer (e.g. Trinity) adds one function with the
 * signature of train_fn and one line to TRAINERS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "learn/options.h"
#include "opplace/io.h"
#include "core/parallel.h"
#include "opplace/placer.h"
#include "placers/sgdp/sgdp.h"
#include "cli/train_trinity.h"

static const char TRAIN_HELP[] =
    "usage: opplace train ALGO --graphs G1.json [G2.json ...] --weights OUT.bin\n"
    "       opplace train ALGO --graphs ... --weights START.bin --save-weights OUT.bin\n"
    "                     [--cluster FILE | --preset P --gpus N [--cpu]]\n"
    "                     [--iterations N] [--budget-seconds S] [--seed S] [--quiet]\n"
    "                     [algorithm options]\n"
    "\n"
    "Trains the policy of a learned placer on the graphs (one graph: SGDP-one;\n"
    "several: batch training, one graph drawn per iteration) against the\n"
    "simulated step time on the cluster, prints the best placement found for\n"
    "each graph and writes the weights for 'opplace place --algo ALGO --weights'.\n"
    "With --save-weights OUT, --weights names the policy to continue training\n"
    "and OUT where to write it (the names 'opplace place' uses).\n"
    "Progress (iteration, best step time, mean reward) goes to stderr.\n"
    "Ctrl-C stops training and still saves the weights.\n"
    "\n"
    "Algorithms:\n"
    "  sgdp   GraphSAGE + segment-recurrent attention, PPO (the SGDP paper)\n"
    "         options: --paper (exactly the paper's method: none of the additions\n"
    "         below) --samples K (rollouts per iteration, 32) --threads T --lr X\n"
    "         (3e-3; 3e-2 without a reference) --epochs E (4) --entropy B (0.01;\n"
    "         0 without a reference) --max-devices D (8) --hidden H (32);\n"
    "         beyond the paper: --heuristics LIST (expert,metis,m-topo,single; 'none': no\n"
    "         reference) reference placement, --units N (256) decision units,\n"
    "         --warm-start 0|1 (1 for a new policy) clone the reference first;\n"
    "         --slots B (1) rollout batches per iteration, shared by MPI ranks\n"
    "         (mpirun -np B opplace train ...)\n"
    TRINITY_TRAIN_HELP
    "Default: --budget-seconds 60 when no --iterations is given; --iterations 0\n"
    "(and no --budget-seconds) writes the untrained policy, the control of\n"
    "every transfer experiment.\n";

/* What every trainer gets: the bound problems and the common options. */
typedef struct train_inputs {
    int n;
    op_graph **graphs;
    op_problem *problems;
    const op_problem **probs; /* pointers into problems */
    op_cluster *cluster;
    const char *weights;      /* where to save */
    const char *start;        /* the policy to continue training, or NULL: a new one */
    long iterations;
    double budget_seconds;
    uint64_t seed;
    op_place_ctx ctx;         /* for op_progress */
} train_inputs;

typedef op_status (*train_fn)(cli_args *a, train_inputs *in, op_error *err);


/* ----------------------------------------------------------------- sgdp */

/* `opplace train sgdp`'s options: the learned placers' shared ones
 * (learn/options.h) and --max-devices, --hidden (a new policy's shape),
 * --slots B rollout batches per iteration (shared by MPI ranks) and
 * --warm-start 0|1 (1 for a new policy; beyond the paper, refused with
 * --paper as --heuristics and --units are). */
static op_status sgdp_options(cli_args *a, int fresh, sgdp_config *pc,
                              sgdp_train_config *tc, op_error *err)
{
    static const char *const beyond[] = {"heuristics", "units", "warm-start", NULL};
    op_options *o = a->opts;
    learn_option_defaults ld = {.who = "train sgdp", .beyond = beyond,
                                .heuristics = SGDP_DEFAULT_HEURISTICS,
                                .samples = tc->samples, .epochs = tc->ppo.epochs};
    learn_options lo;
    long maxd, hidden, slots, warm = 0;
    op_status st;
    if ((st = learn_options_read(o, &ld, 0, &lo, err)) ||
        (st = op_options_int(o, "max-devices", pc->max_devices, 1, 1024, &maxd, err)) ||
        (st = op_options_int(o, "hidden", pc->hidden, 4, 4096, &hidden, err)) ||
        (st = op_options_int(o, "slots", tc->slots, 1, 64, &slots, err)))
        return st;
    if (!lo.paper && (st = op_options_int(o, "warm-start", fresh, 0, 1, &warm, err)))
        return st;
    tc->samples = (int)lo.samples;
    tc->threads = (int)lo.threads;
    tc->ppo.epochs = (int)lo.epochs;
    tc->slots = (int)slots;
    pc->max_devices = (int)maxd;
    pc->hidden = (int)hidden;
    tc->heuristics = lo.heuristics;
    if (!tc->heuristics) /* the plain policy (placers/sgdp/sgdp.h) */
        pc->head_init = SGDP_PLAIN_HEAD_INIT;
    tc->ppo.lr = learn_or(lo.lr, tc->heuristics ? tc->ppo.lr : SGDP_PLAIN_LR);
    tc->ppo.entropy_coef =
        learn_or(lo.entropy, tc->heuristics ? tc->ppo.entropy_coef : SGDP_PLAIN_ENTROPY);
    tc->unit_target = (int)lo.units;
    tc->warm_start = tc->heuristics && warm;
    if (lo.paper)
        tc->proposal_moves = 0; /* the policy itself samples */
    return OP_OK;
}

static void sgdp_print(const train_inputs *in, const sgdp_trainer *t)
{
    char a[32], b[32];
    printf("%-28s %6s %14s %14s %7s\n", "graph", "ops", "best step", "lower bound", "ratio");
    for (int i = 0; i < in->n; i++) {
        sgdp_best bst = sgdp_trainer_best(t, i);
        const op_problem *p = in->probs[i];
        if (!bst.placement) {
            printf("%-28s %6d %14s\n", in->graphs[i]->name, p->n, "(not sampled)");
            continue;
        }
        printf("%-28s %6d %14s %14s %7.3f%s\n", in->graphs[i]->name, p->n,
               cli_time(a, sizeof a, bst.step_time_us), cli_time(b, sizeof b, p->lower_bound_us),
               p->lower_bound_us > 0 ? bst.step_time_us / p->lower_bound_us : 1.0,
               bst.oom ? "  OOM" : "");
    }
    for (int i = 0; i < in->n; i++) {
        const op_portfolio_winner *ref = sgdp_trainer_reference(t, i);
        if (ref)
            printf("reference    %s: %s %s%s\n", in->graphs[i]->name, ref->name,
                   cli_time(a, sizeof a, ref->step), ref->oom ? "  OOM" : "");
    }
    sgdp_train_stats s = sgdp_trainer_stats(t);
    double ppo_s = s.seconds - s.clone_seconds;
    printf("trained      %ld iterations, %ld simulated rollouts in %.1f s "
           "(%.1f rollouts/s; %.1f s simulating)\n",
           s.iterations, s.rollouts, s.seconds, ppo_s > 0 ? s.rollouts / ppo_s : 0.0,
           s.sim_seconds);
    if (s.clone_steps)
        printf("cloned       %ld steps in %.1f s (of the time above)\n", s.clone_steps,
               s.clone_seconds);
    printf("weights      %s\n", in->weights);
}

static op_status train_sgdp(cli_args *a, train_inputs *in, op_error *err)
{
    sgdp_config pc = sgdp_config_default();
    sgdp_train_config tc = sgdp_train_defaults();
    const char *init = in->start;
    op_status st = sgdp_options(a, !init, &pc, &tc, err);
    if (st || (st = cli_check_unused(a, err)))
        return st;
    tc.iterations = in->iterations;
    tc.budget_seconds = in->budget_seconds;
    tc.deadline = in->ctx.deadline;
    tc.seed = in->seed;
    tc.progress = op_par_rank() == 0 ? &in->ctx : NULL;
    sgdp_policy *pol =
        init ? sgdp_policy_from_file(init, err) : sgdp_policy_new(&pc, in->seed, err);
    if (!pol)
        return err->code ? err->code : OP_ENOMEM;
    sgdp_trainer *t = sgdp_trainer_new(pol, in->probs, in->n, &tc, err);
    if (!t)
        st = err->code ? err->code : OP_ENOMEM;
    /* --iterations 0 (no budget): the untrained policy, the control of
     * every transfer experiment */
    if (!st && (tc.iterations > 0 || tc.budget_seconds > 0))
        st = sgdp_trainer_run(t, err);
    if (!st && op_par_rank() == 0) /* only rank 0 prints and writes */
        st = sgdp_policy_save(pol, in->weights, err);
    if (!st && op_par_rank() == 0)
        sgdp_print(in, t);
    sgdp_trainer_free(t);
    sgdp_policy_free(pol);
    return st;
}

/* -------------------------------------------------------------- trinity */

static op_status train_trinity(cli_args *a, train_inputs *in, op_error *err)
{
    return trinity_train_cli(a, in->probs, in->graphs, in->n, in->start, in->weights,
                             in->iterations,
                             in->budget_seconds, in->seed, &in->ctx, err);
}

/* ---------------------------------------------------------- dispatcher */

typedef struct trainer_entry {
    const char *name;
    train_fn run;
} trainer_entry;

static const trainer_entry TRAINERS[] = {
    {"sgdp", train_sgdp},
    {"trinity", train_trinity},
};

static void free_inputs(train_inputs *in)
{
    for (int i = 0; i < in->n; i++) {
        if (in->probs && in->probs[i])
            op_problem_destroy(&in->problems[i]);
        op_graph_free(in->graphs[i]);
    }
    free(in->graphs);
    free(in->problems);
    free(in->probs);
    op_cluster_free(in->cluster);
}

/* Graphs: the value of --graphs followed by every further positional
 * argument (so `--graphs a.json b.json c.json` works). */
static op_status load_inputs(cli_args *a, train_inputs *in, op_error *err)
{
    const char *first = op_options_str(a->opts, "graphs", NULL);
    int total = (first ? 1 : 0) + a->n_pos - 1;
    if (total < 1)
        return op_fail(err, OP_EUSAGE, "no graphs: give --graphs G1.json [G2.json ...]");
    in->graphs = op_calloc((size_t)total, sizeof *in->graphs, err);
    in->problems = op_calloc((size_t)total, sizeof *in->problems, err);
    in->probs = op_calloc((size_t)total, sizeof *in->probs, err);
    if (!in->graphs || !in->problems || !in->probs)
        return OP_ENOMEM;
    if (!(in->cluster = cli_load_cluster(a, err)))
        return err->code;
    for (int i = 0; i < total; i++) {
        const char *path = first ? (i == 0 ? first : a->pos[i]) : a->pos[i + 1];
        in->n = i + 1;
        if (!(in->graphs[i] = op_graph_read(path, err)))
            return err->code;
        op_status st = op_problem_init(&in->problems[i], in->graphs[i], in->cluster, err);
        if (st)
            return st;
        in->probs[i] = &in->problems[i];
    }
    return OP_OK;
}

static op_status run_train(cli_args *a, op_error *err)
{
    if (a->n_pos < 1)
        return op_fail(err, OP_EUSAGE, "expected an algorithm: opplace train sgdp ...");
    const trainer_entry *tr = NULL;
    for (size_t i = 0; i < sizeof TRAINERS / sizeof *TRAINERS; i++)
        if (!strcmp(TRAINERS[i].name, a->pos[0]))
            tr = &TRAINERS[i];
    if (!tr)
        return op_fail(err, OP_EUSAGE, "no trainer for '%s' (known: sgdp, trinity)", a->pos[0]);
    double t_cmd = op_seconds_now();
    train_inputs in = {0};
    /* --weights OUT: a new policy into OUT; --weights START --save-weights
     * OUT: continue START, write OUT (the names 'opplace place' uses) */
    const char *save = op_options_str(a->opts, "save-weights", NULL);
    in.weights = op_options_str(a->opts, "weights", NULL);
    if (!in.weights)
        return op_fail(err, OP_EUSAGE, "--weights FILE (where to save the policy) is required");
    if (save) {
        in.start = in.weights;
        in.weights = save;
    }
    op_status st;
    int quiet = op_options_has(a->opts, "quiet");
    if ((st = op_options_int(a->opts, "iterations", 0, 0, 100000000, &in.iterations, err)) ||
        (st = op_options_double(a->opts, "budget-seconds",
                                in.iterations > 0 || op_options_has(a->opts, "iterations") ? 0
                                                                                         : 60,
                                0, 1e9,
                                &in.budget_seconds, err)) ||
        (st = op_options_u64(a->opts, "seed", 1, &in.seed, err)))
        return st;
    in.ctx = (op_place_ctx){.seed = in.seed, .budget_seconds = in.budget_seconds,
                            .progress = !quiet};
    if (in.budget_seconds > 0) /* one deadline for the whole command, loading included */
        in.ctx.deadline = t_cmd + in.budget_seconds;
    if (!(st = load_inputs(a, &in, err))) {
        st = tr->run(a, &in, err);
    }
    free_inputs(&in);
    return st;
}

int cmd_train(int argc, char **argv)
{
    static const char *const flags[] = {"quiet", "cpu", "paper", NULL};
    cli_args a;
    op_error err = {0};
    int code = 0;
    if (cli_parse(&a, "train", argc, argv, flags, &err))
        code = cli_report("train", &err);
    else if (a.help)
        fputs(TRAIN_HELP, stdout);
    else if (run_train(&a, &err))
        code = cli_report("train", &err);
    cli_args_destroy(&a);
    return code;
}
