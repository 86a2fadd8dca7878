/*
 * train_trinity.c - `opplace train trinity ...` (the Trinity paper): reads
 * the Trinity options, trains a new policy (or continues from --weights W.bin
 * when --save-weights OUT names the output) on
 * the graphs with PPO (src/placers/trinity/trinity_train.c), saves the weights and
 * prints, per graph, the best placement's step time, peak communication and
 * peak memory, the three columns of the paper's Table 4.  cmd_train.c loads
 * the graphs and the cluster and dispatches here.  Under mpirun the
 * --slots rollout batches of an iteration are shared by the ranks; only
 * rank 0 prints and writes the weights.  As in the placer
 * (src/placers/trinity/trinity.c), a reference placement (--heuristics, default
 * expert; src/placers/trinity/trinity_warm.c, beyond the paper) centres the priors
 * and gives decision units, and its peaks are the tolerances unless
 * --max-comm / --max-mem are given; rollouts are judged by the list
 * schedule best for the reference (--order-search judged, the default with
 * a reference; off: first-ready-first); --paper trains the paper's way with
 * the RL fixes (trinity_paper_settings).  The
 * options are read by trinity_options_read (src/placers/trinity/trinity_options.c),
 * shared with the placer.
 */
#include <stdio.h>
#include <string.h>

#include "cli/train_trinity.h"
#include "opplace/list_schedule.h"
#include "core/parallel.h"
#include "placers/trinity/trinity.h"

static void print_results(const trinity_trainer *t, const op_problem *const *problems,
                          op_graph *const *graphs, int n, const char *weights)
{
    char a[32], b[32];
    printf("%-28s %6s %12s %12s %14s %12s\n", "graph", "ops", "step", "lower bound",
           "peak comm", "peak mem");
    for (int i = 0; i < n; i++) {
        trinity_best bst = trinity_trainer_best(t, i);
        if (!bst.device_of) {
            printf("%-28s %6d %12s\n", graphs[i]->name, problems[i]->n, "(not sampled)");
            continue;
        }
        printf("%-28s %6d %12s %12s %10.1f MiB %8.2f GiB%s\n", graphs[i]->name, problems[i]->n,
               cli_time(a, sizeof a, bst.m.step_us),
               cli_time(b, sizeof b, problems[i]->lower_bound_us),
               (double)bst.m.peak_comm / 1048576.0, (double)bst.m.peak_mem / 1073741824.0,
               bst.m.oom ? "  OOM" : "");
    }
    for (int i = 0; i < n; i++) {
        double share;
        int judge = trinity_trainer_reward_order(t, i, &share);
        if (judge != OP_PRIORITY_FIFO) /* the step and memory above are that schedule's */
            printf("judged by    %s: the %s list schedule, memory cap %.0f%% of M^\n",
                   graphs[i]->name, trinity_reward_order_name(judge), 100 * share);
    }
    for (int i = 0; i < n; i++) {
        const trinity_reference *ref = trinity_trainer_reference(t, i);
        if (ref)
            printf("reference    %s: %s %s, %.1f MiB, %.2f GiB\n", graphs[i]->name, ref->name,
                   cli_time(a, sizeof a, ref->m.step_us), (double)ref->m.peak_comm / 1048576.0,
                   (double)ref->m.peak_mem / 1073741824.0);
    }
    trinity_train_stats s = trinity_trainer_stats(t);
    printf("trained      %ld iterations, %ld simulated rollouts in %.1f s (%.1f s simulating; "
           "%.1f s set-up: Node2vec, anchors)\n",
           s.iterations, s.rollouts, s.seconds, s.sim_seconds, s.setup_seconds);
    printf("weights      %s\n", weights);
}

op_status trinity_train_cli(cli_args *a, const op_problem *const *problems,
                            op_graph *const *graphs, int n, const char *init,
                            const char *weights, long iterations,
                            double budget_seconds, uint64_t seed, const op_place_ctx *ctx,
                            op_error *err)
{
    trinity_options to;
    op_status st = trinity_options_read(a->opts, 0, &to, err);
    if (st || (st = cli_check_unused(a, err)))
        return st;
    trinity_config pc = to.pc;
    trinity_train_config tc = to.tc;
    tc.iterations = iterations;
    tc.budget_seconds = budget_seconds;
    tc.seed = seed;
    tc.n2v.seed = seed;
    tc.progress = op_par_rank() == 0 ? ctx : NULL;
    if (ctx->deadline > 0) { /* the command's deadline bounds the set-up too */
        double now = op_seconds_now();
        tc.setup_deadline = now + 0.25 * (ctx->deadline - now);
        tc.deadline = ctx->deadline;
    }
    trinity_policy *pol = init ? trinity_policy_from_file(init, err)
                               : trinity_policy_new(&pc, seed, err);
    if (!pol)
        return err->code ? err->code : OP_ENOMEM;
    trinity_trainer *t = trinity_trainer_new(pol, problems, n, &tc, err);
    if (!t)
        st = err->code ? err->code : OP_ENOMEM;
    if (!st && (iterations > 0 || budget_seconds > 0)) /* neither: the untrained policy */
        st = trinity_trainer_run(t, err);
    if (!st && op_par_rank() == 0) /* only rank 0 prints and writes */
        st = trinity_policy_save(pol, weights, err);
    if (!st && op_par_rank() == 0)
        print_results(t, problems, graphs, n, weights);
    trinity_trainer_free(t);
    trinity_policy_free(pol);
    return st;
}
