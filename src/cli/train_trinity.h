/*
 * train_trinity.h - `opplace train trinity`: the Trinity trainer that
 * cmd_train.c's TRAINERS table dispatches to (train_trinity.c).
 */
#ifndef OPPLACE_CLI_TRAIN_TRINITY_H
#define OPPLACE_CLI_TRAIN_TRINITY_H

#include "cli/cli.h"
#include "opplace/graph.h"
#include "opplace/placer.h"

/* Trains a Trinity policy (from the file `init`, or a new one when NULL)
 * on problems[0..n-1] (graphs[i] names them),
 * saves it to `weights` and prints, per graph, the best placement's step
 * time, peak communication and peak memory (the paper's Table 4). */
op_status trinity_train_cli(cli_args *a, const op_problem *const *problems,
                            op_graph *const *graphs, int n, const char *init,
                            const char *weights, long iterations,
                            double budget_seconds, uint64_t seed, const op_place_ctx *ctx,
                            op_error *err);

#define TRINITY_TRAIN_HELP                                                                        \
    "  trinity partition FFN + seq2seq LSTM schedule network, PPO on runtime, peak\n"             \
    "         communication and peak memory (the Trinity paper); options:\n"                     \
    "         --paper (the paper's method with the RL fixes - centred logits, the\n"             \
    "         device-marginal partition ratio, the structure initialisation, no\n"              \
    "         dropout in PPO - and none of the additions below)\n"                             \
    "         --samples K (16) --threads T --lr X (3e-3) --epochs E (4)\n"                     \
    "         --entropy B (0.01; --paper 0) --groups G (64) --max-devices D (8)\n"              \
    "         --hidden H (64)\n"                                                                \
    "         --max-comm BYTES --max-mem BYTES (the reference's peaks; 8 GiB each\n"              \
    "         without one) --mdpe A,B,C (0.5,0.3,0.2); beyond the paper:\n"                      \
    "         --heuristics LIST (expert; 'none': no reference) reference\n"                      \
    "         placement centring the priors, --units N (256) decision units,\n"                \
    "         --order-search off|judged (judged with a reference) rollouts judged\n"           \
    "         by the list schedule best for it (opplace/list_schedule.h);\n"                   \
    "         --weights W.bin --save-weights OUT.bin continues training from W;\n"            \
    "         --slots B (1) rollout batches per iteration, shared by MPI ranks\n"              \
    "         (mpirun -np B opplace train ...)\n"

#endif
