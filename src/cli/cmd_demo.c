/*
 * cmd_demo.c - what a bare `opplace` does: place a built-in model on a
 * built-in cluster with every fast algorithm and print the comparison, so a
 * new user sees the tool work before writing any file.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "opplace/bound.h"
#include "opplace/placer.h"
#include "opplace/simulate.h"
#include "opplace/zoo.h"

static op_graph *default_graph(const char **model, op_error *err)
{
    static const char *const preferred[] = {"gnmt", "inception_v3", "transformer"};
    op_options *o = op_options_new(err);
    if (!o)
        return NULL;
    op_graph *g = NULL;
    for (size_t i = 0; i < sizeof preferred / sizeof *preferred && !g; i++) {
        const op_zoo_model *m = op_zoo_find(preferred[i]);
        if (m) {
            *model = preferred[i];
            if (!op_zoo_small_settings(o, preferred[i], err)) /* not the papers' scale */
                g = m->generate(o, err);
        }
    }
    op_options_free(o);
    if (!g && err->code == OP_OK) {
        *model = "synthetic (2000 ops)";
        g = op_zoo_synthetic(2000, 16, 3, 1, err);
    }
    return g;
}

static void print_row(const cli_problem *cp, double bound_us, const char *algo,
                      const op_sim_result *r, double seconds)
{
    char t[32], m[32], c[32];
    int64_t peak = 0;
    for (int d = 0; d < cp->p.nd; d++)
        if (r->peak_mem[d] > peak)
            peak = r->peak_mem[d];
    printf("| %-32s | %12s | %6.3f | %12s | %12s | %-3s | %8.3f |\n", algo,
           cli_time(t, sizeof t, r->step_time_us), r->step_time_us / bound_us,
           cli_bytes(m, sizeof m, (double)peak), cli_bytes(c, sizeof c, (double)r->comm_bytes),
           r->oom ? "yes" : "no", seconds);
}

static op_status compare_all(cli_problem *cp, double bound_us, op_error *err)
{
    op_sim_result r;
    if (op_sim_result_init(&r, &cp->p, err))
        return OP_ENOMEM;
    op_sim *sim = op_sim_new(&cp->p, err);
    if (!sim) {
        op_sim_result_destroy(&r);
        return OP_ENOMEM;
    }
    printf("| %-32s | %12s | %6s | %12s | %12s | %-3s | %8s |\n", "algorithm", "step time",
           "/bound", "max peak mem", "traffic", "OOM", "place s");
    printf("|----------------------------------|--------------|--------|--------------|--------------|-----|----------|\n");
    int n;
    const op_placer *const *all = op_placers(&n);
    for (int i = 0; i < n; i++) {
        if (all[i]->slow)
            continue;
        /* auto gets a short budget: the demo should answer in seconds */
        op_place_ctx ctx = {.p = &cp->p, .seed = 1, .best_effort = 1, .budget_seconds = 3};
        op_placement pl;
        op_error perr = {0};
        double t0 = cli_now();
        if (op_place(all[i], &ctx, &pl, &perr)) {
            printf("| %-32s | failed: %s\n", all[i]->name, perr.msg);
            continue;
        }
        double seconds = cli_now() - t0;
        if (op_sim_run(sim, &pl, &r, NULL, &perr))
            printf("| %-32s | simulation failed: %s\n", all[i]->name, perr.msg);
        else
            print_row(cp, bound_us, pl.algorithm ? pl.algorithm : all[i]->name, &r, seconds);
        op_placement_destroy(&pl);
    }
    op_sim_free(sim);
    op_sim_result_destroy(&r);
    return OP_OK;
}

int cmd_demo(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    op_error err = {0};
    cli_problem cp = {0};
    const char *model = "";
    int code = 0;
    cp.g = default_graph(&model, &err);
    if (!cp.g || !(cp.c = op_cluster_preset("v100-nvlink", 4, 0, &err)) ||
        op_problem_init(&cp.p, cp.g, cp.c, &err))
        goto fail;
    cp.bound = 1;
    char lb[32], tb[32];
    printf("opplace: placing the built-in %s graph (%d ops, %d edges) on 4 x V100 (NVLink)\n",
           model, cp.g->n_ops, cp.g->n_edges);
    /* the best bound proven without a solver, as `place` prints it (the
     * bound keeps what it proved, at least the trivial one, if it fails) */
    op_bound b;
    op_error berr = {0};
    op_lower_bound_quick(&cp.p, &b, &berr);
    printf("lower bound on the step time: %s (%s; trivial %s)\n\n",
           cli_time(lb, sizeof lb, b.lower_bound_us), b.method,
           cli_time(tb, sizeof tb, b.trivial_us));
    if (compare_all(&cp, b.lower_bound_us, &err))
        goto fail;
    printf("\nNext: 'opplace --help' lists the commands; 'opplace algos' the algorithms;\n"
           "'opplace place GRAPH --algo NAME --report t.json' places your own graph.\n");
    goto done;
fail:
    code = cli_report("demo", &err);
done:
    cli_problem_destroy(&cp);
    return code;
}
