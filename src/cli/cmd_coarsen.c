/*
 * cmd_coarsen.c - `opplace coarsen`: shrink a graph with a registered
 * coarsening method (coarsen/coarsen.h) and report what it did: nodes,
 * edges and CCR (Celeritas eq. 1, on the cluster's reference link) before
 * and after, as in Celeritas's Table 2.  Writes the coarse graph and,
 * optionally, the mapping {"groups": {"op name": coarse index}}.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/file_util.h"
#include "coarsen/coarsen.h"
#include "opplace/io.h"
#include "placers/coarseners.h"
#include "core/stats.h"

static const char HELP[] =
    "usage: opplace coarsen GRAPH --algo NAME [--target N] [method options]\n"
    "                       [--cluster FILE | --preset P --gpus N] [-o coarse.json]\n"
    "                       [--map map.json] [--json]\n"
    "\n"
    "Merges the ops of GRAPH into groups and writes the coarse graph.  Prints\n"
    "the number of nodes and edges and the CCR (total transfer time of the\n"
    "edges on the cluster's reference link / total compute) before and after.\n"
    "  --algo NAME      a coarsening method (listed below; one name per concept\n"
    "                   with `place --algo`)\n"
    "  --target N       the number of coarse ops to aim for (method-specific)\n"
    "  --map FILE       write {\"groups\": {\"op\": group index}}\n"
    "  --json           print the numbers as one JSON object\n"
    "Method options (celeritas): --fusion-range R (default 200); fused runs hold\n"
    "  at most a quarter of the smallest device memory.\n"
    "Default cluster: 4 x v100-nvlink (it sets the link for CCR and device memory).\n";

static void print_methods(void)
{
    int n;
    const op_coarsener *const *all = op_coarseners(&n);
    printf("\nMethods:\n");
    for (int i = 0; i < n; i++)
        printf("  %-12s %s (%s)\n", all[i]->name, all[i]->summary, all[i]->source);
}

static op_status write_map(const op_coarse_map *m, const op_graph *g, const char *path,
                           op_error *err)
{
    op_atomic a;
    op_status st = op_atomic_open(&a, path, err);
    if (st)
        return st;
    fputs("{\"groups\": {", a.f);
    for (int i = 0; i < g->n_ops; i++) {
        fputs(i ? ",\n  " : "\n  ", a.f);
        op_json_put_string(a.f, g->op_name[i]);
        fprintf(a.f, ": %d", m->group_of[i]);
    }
    fputs("\n}}\n", a.f);
    return op_atomic_commit(&a, err);
}

static void report(const op_graph_stats *before, const op_graph_stats *after, const char *method,
                   double seconds, int json)
{
    if (json) {
        printf("{\"method\": \"%s\", \"nodes_before\": %d, \"nodes_after\": %d, "
               "\"edges_before\": %d, \"edges_after\": %d, \"ccr_before\": %.6g, "
               "\"ccr_after\": %.6g, \"seconds\": %.6f}\n",
               method, before->n_ops, after->n_ops, before->n_edges, after->n_edges, before->ccr,
               after->ccr, seconds);
        return;
    }
    printf("method       %s (%.3f s)\n", method, seconds);
    printf("%-12s %10s %10s\n", "", "before", "after");
    printf("%-12s %10d %10d\n", "nodes", before->n_ops, after->n_ops);
    printf("%-12s %10d %10d\n", "edges", before->n_edges, after->n_edges);
    printf("%-12s %10.3f %10.3f\n", "CCR", before->ccr, after->ccr);
}

static op_status run(cli_args *a, op_error *err)
{
    if (a->n_pos != 1)
        return op_fail(err, OP_EUSAGE, "expected one graph file (see 'opplace coarsen --help')");
    const char *name = op_options_str(a->opts, "algo", NULL);
    if (!name)
        return op_fail(err, OP_EUSAGE, "--algo NAME is required (see 'opplace coarsen --help')");
    const op_coarsener *method = op_coarsener_find(name);
    if (!method)
        return op_fail(err, OP_EUSAGE, "unknown coarsening method '%s'", name);
    const char *out = op_options_str(a->opts, "output", NULL);
    const char *map_path = op_options_str(a->opts, "map", NULL);
    int json = op_options_has(a->opts, "json");
    cli_problem cp;
    op_coarse_map m;
    memset(&m, 0, sizeof m);
    op_status st = cli_load_problem(a, a->pos[0], &cp, err);
    double t0 = cli_now(), seconds = 0;
    if (!st)
        st = method->run(&cp.p, a->opts, &m, err);
    seconds = cli_now() - t0;
    if (!st)
        st = cli_check_unused(a, err);
    op_problem coarse_p;
    int bound = 0;
    if (!st && !(st = op_problem_init(&coarse_p, m.coarse, cp.c, err)))
        bound = 1;
    if (!st) {
        op_graph_stats before, after;
        op_graph_stats_compute(&cp.p, &before);
        op_graph_stats_compute(&coarse_p, &after);
        report(&before, &after, method->name, seconds, json);
    }
    if (!st && out)
        st = op_graph_write(m.coarse, out, err);
    if (!st && map_path)
        st = write_map(&m, cp.g, map_path, err);
    if (bound)
        op_problem_destroy(&coarse_p);
    op_coarse_map_destroy(&m);
    cli_problem_destroy(&cp);
    return st;
}

int cmd_coarsen(int argc, char **argv)
{
    static const char *const flags[] = {"json", "cpu", NULL};
    cli_args a;
    op_error err = {0};
    int code = 0;
    if (cli_parse(&a, "coarsen", argc, argv, flags, &err))
        code = cli_report("coarsen", &err);
    else if (a.help) {
        fputs(HELP, stdout);
        print_methods();
    } else if (run(&a, &err))
        code = cli_report("coarsen", &err);
    cli_args_destroy(&a);
    return code;
}
