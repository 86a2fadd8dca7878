/*
 * cmd_bound.c - `opplace bound`: the best lower bound on the step time that
 * opplace can prove for a graph on a cluster (opplace/bound.h).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "opplace/bound.h"
#include "opplace/placer.h"

static const char HELP[] =
    "usage: opplace bound GRAPH [--cluster FILE | --preset P --gpus N] [--budget-seconds S]\n"
    "                     [--json]\n"
    "\n"
    "Prints a lower bound on the step time of every placement and order of GRAPH\n"
    "that fits in memory (formats.md 5): the best of\n"
    "  trivial     max(critical path, total work / total speed), formats.md 5.6\n"
    "  energetic   ops that cannot start before h nor end after T - t need their\n"
    "              work done in between: T >= h + t + work / total speed\n"
    "  one-machine each colocation group runs on one device, one op at a time:\n"
    "              its ops' heads and tails include the group's serialised work,\n"
    "              and Jackson's preemptive bound per group on its best device\n"
    "  transfer    one-machine, and at each join an input either shares the op's\n"
    "              device (local inputs one at a time) or sends its tensor\n"
    "  lp          LP relaxation: fractional placement, precedence, per-device load,\n"
    "              params resident all step (memory-forced splits)\n"
    "  ilp         graphs of at most 60 ops: Pesto's ILP on the graph, CBC's bound\n"
    "  --budget-seconds S  wall-clock limit (default 10); Ctrl-C stops early\n"
    "  --json      print {\"lower_bound_us\": X, \"method\": \"...\", ...}\n"
    "Default cluster: 4 x v100-nvlink.\n";


static op_status run(cli_args *a, op_error *err)
{
    if (a->n_pos != 1)
        return op_fail(err, OP_EUSAGE, "expected one graph file (see 'opplace bound --help')");
    int json = op_options_has(a->opts, "json");
    double seconds;
    op_status st = op_options_double(a->opts, "budget-seconds", 10, 0.01, 1e7, &seconds, err);
    if (st)
        return st;
    cli_problem cp;
    if ((st = cli_load_problem(a, a->pos[0], &cp, err)))
        return st;
    if ((st = cli_check_unused(a, err))) {
        cli_problem_destroy(&cp);
        return st;
    }
    double t0 = cli_now();
    op_bound b;
    st = op_lower_bound(&cp.p, seconds, &b, err);
    double secs = cli_now() - t0;
    if (!st && json) {
        printf("{\"lower_bound_us\": %.6f, \"method\": \"%s\", \"trivial_us\": %.6f, "
               "\"energetic_us\": %.6f, \"one_machine_us\": %.6f, \"transfer_us\": %.6f, "
               "\"lp_us\": %.6f, \"ilp_us\": %.6f, "
               "\"memory_rows\": %s, \"no_placement_fits\": %s, \"seconds\": %.3f}\n",
               b.lower_bound_us, b.method, b.trivial_us, b.energetic_us, b.one_machine_us,
               b.transfer_us, b.lp_us, b.ilp_us,
               b.memory_rows ? "true" : "false", b.no_fit ? "true" : "false", secs);
    } else if (!st) {
        char buf[32];
        printf("lower bound  %s  (%s)\n", cli_time(buf, sizeof buf, b.lower_bound_us), b.method);
        printf("trivial      %s\n", cli_time(buf, sizeof buf, b.trivial_us));
        printf("energetic    %s\n", cli_time(buf, sizeof buf, b.energetic_us));
        printf("one-machine  %s\n", cli_time(buf, sizeof buf, b.one_machine_us));
        printf("transfer     %s\n", cli_time(buf, sizeof buf, b.transfer_us));
        printf("lp           %s%s\n", b.lp_us > 0 ? cli_time(buf, sizeof buf, b.lp_us) : "-",
               b.memory_rows ? " (with memory rows)" : "");
        printf("ilp          %s\n",
               b.ilp_us > 0 ? cli_time(buf, sizeof buf, b.ilp_us) : "- (not run or not proved)");
        if (b.no_fit)
            printf("note         no placement fits in memory; the bound holds for all of them\n");
        printf("time         %.3f s\n", secs);
    }
    cli_problem_destroy(&cp);
    return st;
}

int cmd_bound(int argc, char **argv)
{
    static const char *const flags[] = {"json", "cpu", NULL};
    cli_args a;
    op_error err = {0};
    int code = 0;
    if (cli_parse(&a, "bound", argc, argv, flags, &err))
        code = cli_report("bound", &err);
    else if (a.help)
        fputs(HELP, stdout);
    else if (run(&a, &err))
        code = cli_report("bound", &err);
    cli_args_destroy(&a);
    return code;
}
