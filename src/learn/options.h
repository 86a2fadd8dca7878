/*
 * learn/options.h - the options both learned placers (SGDP, Trinity) and
 * `opplace train` share: declared once (LEARN_OPTION_DECLS, in each
 * placer's table) and read once (learn_options_read), so a concept has one
 * name and one range everywhere.
 *
 *   --paper             the paper's method: the options a placer lists as
 *                       beyond the paper are refused with it, and there is
 *                       no reference placement and no units
 *   --weights FILE      start from trained weights (zero-shot); placer only
 *   --save-weights FILE write the weights after training; placer only
 *   --finetune N        training iterations from --weights; placer only
 *   --iterations N      training iterations (0: the time budget); placer only
 *   --samples K         rollouts per iteration
 *   --threads T         simulation threads (0: one per core)
 *   --epochs E          PPO passes over each batch
 *   --lr, --entropy     Adam's rate and the entropy bonus
 *   --heuristics LIST   the reference placers (op_portfolio_best); none
 *   --units N           decision units built from the reference (0: per op)
 */
#ifndef OPPLACE_LEARN_OPTIONS_H
#define OPPLACE_LEARN_OPTIONS_H

#include "opplace/options.h"

/* The shared entries of a placer's op_opt_decl table; paper_help says what
 * --paper keeps, samples_def is --samples' default as text. */
#define LEARN_OPTION_DECLS(paper_help, samples_def)                                             \
    {"paper", OP_OPT_FLAG, 0, 0, NULL, NULL, paper_help},                                       \
        {"weights", OP_OPT_TEXT, 0, 0, NULL, NULL, "trained weights to start from (zero-shot)"}, \
        {"save-weights", OP_OPT_TEXT, 0, 0, NULL, NULL, "write the weights after training"},     \
        {"finetune", OP_OPT_INT, 0, 1000000, "0", NULL,                                         \
         "training iterations on this graph from --weights"},                                   \
        {"iterations", OP_OPT_INT, 0, 100000000, "0", NULL, "training iterations"},             \
        {"samples", OP_OPT_INT, 1, 4096, samples_def, NULL, "rollouts per iteration"},          \
        {"threads", OP_OPT_INT, 0, 64, "0", NULL, "worker threads (0: one per core)"},          \
        {"epochs", OP_OPT_INT, 1, 1000, NULL, NULL, "PPO epochs per iteration"},                \
        {"lr", OP_OPT_NUM, 0, 10, NULL, NULL, "learning rate"},                                 \
        {"entropy", OP_OPT_NUM, 0, 100, NULL, NULL, "entropy bonus"},                           \
        {"units", OP_OPT_INT, 0, 100000000, NULL, NULL, "coarsen to about this many units"},    \
        {"heuristics", OP_OPT_TEXT, 0, 0, NULL, NULL, "reference placers, comma-separated, or none"}

typedef struct learn_options {
    int paper;
    const char *weights, *save; /* NULL: not given (and always when not a placer) */
    long finetune, iterations;  /* 0: not given (and always when not a placer) */
    long samples, threads, epochs;
    double lr, entropy;     /* NAN when not given: the placer's default depends on
                               --paper and on whether it has a reference */
    const char *heuristics; /* NULL: none (--heuristics none, or --paper) */
    long units;             /* 0 with --paper */
} learn_options;

typedef struct learn_option_defaults {
    const char *who;            /* prefixes the messages: "sgdp", "train sgdp", ... */
    const char *const *beyond;  /* the options --paper refuses, NULL-terminated */
    const char *heuristics;     /* --heuristics' default */
    long samples, epochs;
} learn_option_defaults;

/* Read the shared options into out; placer: also --weights, --save-weights,
 * --finetune and --iterations (`opplace train` reads its own). */
op_status learn_options_read(op_options *o, const learn_option_defaults *d, int placer,
                             learn_options *out, op_error *err);

/* v, or def when v is NAN (an option not given). */
double learn_or(double v, double def);

#endif
