/* cmd_info.c - `opplace info`: what a graph is, in numbers. */
#include <stdio.h>

#include "cli/cli.h"
#include "core/stats.h"

static const char HELP[] =
    "usage: opplace info GRAPH [--cluster FILE | --preset P --gpus N [--cpu]] [--json]\n"
    "\n"
    "Prints the graph's size, total compute, critical path, the lower bound on\n"
    "the step time for the cluster (formats.md 5.6), memory totals, and the\n"
    "communication-to-computation ratio (CCR, Celeritas eq. 1) with edge\n"
    "transfer times on the cluster's mean link.  Default cluster: 4 x v100-nvlink.\n";

static void print_json(const cli_problem *cp, const op_graph_stats *s)
{
    printf("{\"name\": \"%s\", \"ops\": %d, \"edges\": %d, \"layers\": %d, "
           "\"colocation_groups\": %d, \"total_compute_us\": %.6g, \"critical_path_us\": %.6g, "
           "\"lower_bound_us\": %.6g, \"ccr\": %.6g, \"param_bytes\": %lld, "
           "\"output_bytes\": %lld, \"temp_bytes\": %lld, \"edge_bytes\": %lld, "
           "\"devices\": %d}\n",
           cp->g->name, s->n_ops, s->n_edges, s->n_layers, s->n_groups, s->total_work_us,
           s->critical_path_us, s->lower_bound_us, s->ccr, (long long)s->param_bytes,
           (long long)s->output_bytes, (long long)s->temp_bytes, (long long)s->edge_bytes,
           cp->c->n_dev);
}

static void print_text(const cli_problem *cp, const op_graph_stats *s)
{
    char a[32], b[32], c[32];
    printf("graph             %s\n", cp->g->name);
    printf("ops / edges       %d / %d\n", s->n_ops, s->n_edges);
    printf("layers            %d scopes, %d colocation groups\n", s->n_layers, s->n_groups);
    if (cp->g->batch_size > 0)
        printf("batch size        %lld\n", (long long)cp->g->batch_size);
    printf("total compute     %s\n", cli_time(a, sizeof a, s->total_work_us));
    printf("critical path     %s\n", cli_time(a, sizeof a, s->critical_path_us));
    printf("lower bound       %s on %d devices\n", cli_time(a, sizeof a, s->lower_bound_us),
           cp->c->n_dev);
    printf("memory            params %s, outputs %s, temporaries %s\n",
           cli_bytes(a, sizeof a, (double)s->param_bytes),
           cli_bytes(b, sizeof b, (double)s->output_bytes),
           cli_bytes(c, sizeof c, (double)s->temp_bytes));
    printf("edge traffic      %s if every edge crossed devices\n",
           cli_bytes(a, sizeof a, (double)s->edge_bytes));
    printf("CCR               %.3f (link %.3g us + %.3g us/byte)\n", s->ccr, s->ref_latency_us,
           s->ref_us_per_byte);
}

int cmd_info(int argc, char **argv)
{
    static const char *const flags[] = {"json", "cpu", NULL};
    cli_args a;
    op_error err = {0};
    cli_problem cp = {0};
    int code = 0;
    if (cli_parse(&a, "info", argc, argv, flags, &err))
        goto fail;
    if (a.help) {
        fputs(HELP, stdout);
        goto done;
    }
    int json = op_options_has(a.opts, "json");
    if (a.n_pos != 1) {
        op_fail(&err, OP_EUSAGE, "expected one graph file (see 'opplace info --help')");
        goto fail;
    }
    if (cli_load_problem(&a, a.pos[0], &cp, &err) || cli_check_unused(&a, &err))
        goto fail;
    op_graph_stats s;
    op_graph_stats_compute(&cp.p, &s);
    if (json)
        print_json(&cp, &s);
    else
        print_text(&cp, &s);
    goto done;
fail:
    code = cli_report("info", &err);
done:
    cli_problem_destroy(&cp);
    cli_args_destroy(&a);
    return code;
}
