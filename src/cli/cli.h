/*
 * cli.h - what the opplace subcommands share: argument parsing, loading the
 * graph/cluster pair, and turning an op_error into a message and exit code.
 *
 * Every `--name value` (or `--name=value`) goes into one op_options list;
 * a command reads the options it knows and the rest are reported as
 * unknown, so placer-specific options need no parser changes.
 */
#ifndef OPPLACE_CLI_H
#define OPPLACE_CLI_H

#include "opplace/cluster.h"
#include "opplace/graph.h"
#include "opplace/options.h"
#include "opplace/problem.h"

typedef struct cli_args {
    const char *cmd;
    int n_pos;
    const char **pos;  /* positional arguments */
    op_options *opts;
    int help;
} cli_args;

/* flags: NULL-terminated names of options that take no value. */
int cli_parse(cli_args *a, const char *cmd, int argc, char **argv, const char *const *flags,
              op_error *err);
void cli_args_destroy(cli_args *a);
/* Fails (usage) if an option was given that nobody read. */
op_status cli_check_unused(const cli_args *a, op_error *err);

/* Print "opplace CMD: message" to stderr and return the exit code. */
int cli_report(const char *cmd, const op_error *err);

/* Load a cluster from --cluster FILE, or a preset (--preset/--gpus/--cpu),
 * defaulting to 4 x v100-nvlink. */
op_cluster *cli_load_cluster(cli_args *a, op_error *err);

typedef struct cli_problem {
    op_graph *g;
    op_cluster *c;
    op_problem p;
    int bound;
} cli_problem;
op_status cli_load_problem(cli_args *a, const char *graph_path, cli_problem *cp, op_error *err);
void cli_problem_destroy(cli_problem *cp);

/* Seconds on a monotonic clock. */
double cli_now(void);

/* Human-readable sizes and times for tables. */
const char *cli_bytes(char *buf, size_t cap, double bytes);
const char *cli_time(char *buf, size_t cap, double us);

/* Subcommands. */
int cmd_info(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_place(int argc, char **argv);
int cmd_algos(int argc, char **argv);
int cmd_cluster(int argc, char **argv);
int cmd_fit_comm(int argc, char **argv);
int cmd_zoo(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_coarsen(int argc, char **argv);
int cmd_estimate(int argc, char **argv);
int cmd_bound(int argc, char **argv);

#endif
