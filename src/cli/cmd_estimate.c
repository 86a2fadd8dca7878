/*
 * cmd_estimate.c - `opplace estimate`: Celeritas's Standard Evaluation,
 * first step (section 4.2.1; opplace/estimate.h).  Fits per-op lines against
 * batch size on several small-batch profiles of one model, writes the
 * estimated graph for the target batch, and with --measured reports the
 * per-op relative deviation (the paper's Table 5 metric).  The second step,
 * the memory-bounded DFS-TOPO placement, is `opplace place --algo dfs-topo`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "opplace/estimate.h"
#include "opplace/io.h"

static const char HELP[] =
    "usage: opplace estimate --profile G1.json --profile G2.json [...] --batch N\n"
    "                        [-o estimated.json] [--measured real.json] [--json]\n"
    "\n"
    "Fits, for every op (matched by name), a least-squares line of its output,\n"
    "param and temp bytes and of its compute time against batch size, over\n"
    "graphs of one model profiled at two or more batch sizes (each graph needs\n"
    "batch_size), and writes the graph estimated for batch N (stdout without -o).\n"
    "  --measured FILE  the measured graph at batch N: print the mean and max\n"
    "                   per-op relative deviation of memory and time\n"
    "  --json           print the deviation as one JSON object\n"
    "Then 'opplace place EST.json --algo dfs-topo' gives the memory-bounded\n"
    "sequential placement used to measure the large batch (Celeritas 4.2).\n";

/* --profile may repeat, which op_options (last value wins) cannot hold. */
static int collect_profiles(int argc, char **argv, const char **paths, int cap)
{
    int n = 0;
    for (int i = 0; i < argc && n < cap; i++) {
        if (!strcmp(argv[i], "--profile") && i + 1 < argc)
            paths[n++] = argv[++i];
        else if (!strncmp(argv[i], "--profile=", 10))
            paths[n++] = argv[i] + 10;
    }
    return n;
}

static void print_accuracy(const op_estimate_accuracy *a, int json)
{
    if (json) {
        printf("{\"ops_memory\": %d, \"memory_dev_mean\": %.6g, \"memory_dev_max\": %.6g, "
               "\"memory_exact\": %d, \"ops_time\": %d, \"time_dev_mean\": %.6g, "
               "\"time_dev_max\": %.6g}\n",
               a->n_mem, a->mem_mean, a->mem_max, a->mem_exact, a->n_time, a->time_mean,
               a->time_max);
        return;
    }
    printf("%-8s %6s %12s %12s\n", "", "ops", "mean dev", "max dev");
    printf("%-8s %6d %11.2f%% %11.2f%%   (%d exact)\n", "memory", a->n_mem, 100 * a->mem_mean,
           100 * a->mem_max, a->mem_exact);
    printf("%-8s %6d %11.2f%% %11.2f%%\n", "time", a->n_time, 100 * a->time_mean,
           100 * a->time_max);
}

static op_status run(cli_args *a, const char **paths, int np, op_error *err)
{
    (void)op_options_str(a->opts, "profile", NULL); /* collected from argv */
    long batch;
    op_status st = op_options_int(a->opts, "batch", 0, 1, 1L << 40, &batch, err);
    if (st)
        return st;
    if (batch <= 0)
        return op_fail(err, OP_EUSAGE, "--batch N is required");
    if (np < 2)
        return op_fail(err, OP_EUSAGE, "give at least two --profile graphs");
    if (a->n_pos)
        return op_fail(err, OP_EUSAGE, "unexpected argument '%s'", a->pos[0]);
    const char *out = op_options_str(a->opts, "output", NULL);
    const char *measured_path = op_options_str(a->opts, "measured", NULL);
    int json = op_options_has(a->opts, "json");
    if ((st = cli_check_unused(a, err)))
        return st;
    if (!out && !measured_path)
        out = "-";
    op_graph **prof = op_calloc((size_t)np, sizeof *prof, err);
    op_graph *est = NULL, *measured = NULL;
    if (!prof)
        return OP_ENOMEM;
    for (int k = 0; k < np && !st; k++)
        if (!(prof[k] = op_graph_read(paths[k], err)))
            st = err->code;
    if (!st && !(est = op_estimate_graph((const op_graph *const *)prof, np, batch, err)))
        st = err->code;
    if (!st && out)
        st = op_graph_write(est, out, err);
    if (!st && measured_path && !(measured = op_graph_read(measured_path, err)))
        st = err->code;
    if (!st && measured) {
        op_estimate_accuracy acc;
        if (!(st = op_estimate_accuracy_compute(est, measured, &acc, err)))
            print_accuracy(&acc, json);
    }
    for (int k = 0; k < np; k++)
        op_graph_free(prof[k]);
    free(prof);
    op_graph_free(est);
    op_graph_free(measured);
    return st;
}

int cmd_estimate(int argc, char **argv)
{
    static const char *const flags[] = {"json", NULL};
    cli_args a;
    op_error err = {0};
    int code = 0;
    const char **paths = op_calloc((size_t)argc + 1, sizeof *paths, &err);
    if (!paths)
        return cli_report("estimate", &err);
    int np = collect_profiles(argc, argv, paths, argc);
    if (cli_parse(&a, "estimate", argc, argv, flags, &err))
        code = cli_report("estimate", &err);
    else if (a.help)
        fputs(HELP, stdout);
    else if (run(&a, paths, np, &err))
        code = cli_report("estimate", &err);
    cli_args_destroy(&a);
    free(paths);
    return code;
}
