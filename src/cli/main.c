/*
 * main.c - the opplace command: dispatch to subcommands.
 * With no arguments it runs the built-in demo (cmd_demo.c).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/file_util.h"
#include "core/parallel.h"
#include "opplace/placer.h"

/* Exit code of a command stopped by SIGINT/SIGTERM: 128 + SIGINT, as shells
 * report a Ctrl-C. */
#define OPPLACE_EXIT_INTERRUPTED 130

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command COMMANDS[] = {
    {"place", cmd_place, "place a graph on a cluster with one algorithm and simulate it"},
    {"simulate", cmd_simulate, "simulate a given placement (formats.md section 5)"},
    {"info", cmd_info, "size, compute, critical path, lower bound, memory and CCR of a graph"},
    {"bound", cmd_bound,
     "a proven lower bound on the step time (trivial, energetic, one-machine, transfer, LP, ILP)"},
    {"algos", cmd_algos, "list the placement algorithms"},
    {"zoo", cmd_zoo, "generate a benchmark model graph"},
    {"cluster", cmd_cluster, "write a preset cluster file"},
    {"import", cmd_import, "convert an ONNX model into a graph file"},
    {"coarsen", cmd_coarsen, "merge ops into groups; nodes and CCR before and after"},
    {"estimate", cmd_estimate, "estimate a large-batch graph from small-batch ones"},
    {"fit-comm", cmd_fit_comm, "fit link models from measured transfers (CSV)"},
    {"train", cmd_train, "train a learned placer's policy (sgdp) and save its weights"},
    {"bench", cmd_bench, "compare algorithms on models x clusters (Markdown/CSV table)"},
    {"demo", cmd_demo, "place a built-in model with every fast algorithm (the default)"},
};
#define N_COMMANDS ((int)(sizeof COMMANDS / sizeof COMMANDS[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: opplace [COMMAND [ARGS...]]\n\n"
               "Places the operations of a deep-learning dataflow graph on devices and\n"
               "orders them so one training step finishes early without running out of\n"
               "memory.  With no command, runs the built-in demo.\n\nCommands:\n");
    for (int i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
    fprintf(f, "\n'opplace COMMAND --help' describes one command.\n");
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2)
        return cmd_demo(0, NULL);
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(name, "--version")) {
        puts("opplace 0.1.0 (formats version 1)");
        return 0;
    }
    for (int i = 0; i < N_COMMANDS; i++)
        if (!strcmp(COMMANDS[i].name, name))
            return COMMANDS[i].run(argc - 2, argv + 2);
    fprintf(stderr, "opplace: unknown command '%s'\n\n", name);
    usage(stderr);
    return 2;
}

/* The Ctrl-C watchdog: a command still searching WATCHDOG_US after the first
 * signal (a stage that cannot look at the flag, e.g. one simulator run of
 * several seconds) ends at once with no result; one that has its result and
 * is writing it (op_output_results_begun) is let finish. */
static void on_watchdog(int sig)
{
    (void)sig;
    if (op_output_results_begun())
        return;
    static const char msg[] = "opplace: interrupted: no result within a second of the signal; "
                              "nothing written (exit code 130)\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
    _exit(OPPLACE_EXIT_INTERRUPTED);
}

/* 0.75 s: the exit itself (freeing a large problem) fits in the second.  A
 * sanitized build (OPPLACE_SANITIZE) runs every stage 3-5 times slower, and
 * its tests allow 2 s (tests/test_budgets.sh): its watchdog waits twice as
 * long, so that a result on its way is not thrown away. */
#ifdef OPPLACE_SANITIZED
#define WATCHDOG_US 1500000
#else
#define WATCHDOG_US 750000
#endif

/* One interrupt for every command: SIGINT or SIGTERM sets the flag that
 * op_seconds_left and op_interrupted report, so every long stage returns its
 * best result so far, within a second (the watchdog above); a second signal
 * stops at once. */
static void on_stop(int sig)
{
    (void)sig;
    if (op_interrupted())
        _exit(OPPLACE_EXIT_INTERRUPTED);
    op_set_interrupted(1);
    struct itimerval t = {.it_value = {.tv_sec = WATCHDOG_US / 1000000,
                                       .tv_usec = WATCHDOG_US % 1000000}};
    setitimer(ITIMER_REAL, &t, NULL);
}

int main(int argc, char **argv)
{
    op_par_init(&argc, &argv); /* a no-op unless started by mpirun */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = on_watchdog;
    sigaction(SIGALRM, &sa, NULL);
    /* all outputs of the command, or none (file_util.h) */
    op_output_begin();
    int code = dispatch(argc, argv);
    op_error err = {0};
    if (op_output_end(code == 0, &err)) {
        fprintf(stderr, "opplace: %s\n", err.msg);
        code = 1;
    }
    if (op_interrupted()) {
        fprintf(stderr, "opplace: interrupted (exit code %d)%s\n", OPPLACE_EXIT_INTERRUPTED,
                code == 0 ? "; the best result found so far was written" : "");
        code = OPPLACE_EXIT_INTERRUPTED;
    }
    op_par_finalize();
    return code;
}
