/*
 * test_model.c - the graph and cluster models, the readers and writers, the
 * presets and the link-model fit: properties that must hold on any input.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coarsen/coarsen.h"
#include "cost/commfit.h"
#include "opplace/io.h"
#include "core/stats.h"
#include "opplace/zoo.h"
#include "testkit.h"

#define DATA OPPLACE_TEST_DATA

Test(graph, csr_topo_and_duplicate_edges)
{
    op_graph_builder *b = op_graph_builder_new("g", NULL);
    int a = tk_op(b, "a", 1, 10), c = tk_op(b, "c", 1, 10), d = tk_op(b, "d", 1, 10);
    tk_edge(b, c, d, 5);
    tk_edge(b, a, c, 3);
    tk_edge(b, a, c, 7); /* duplicate: merged, max bytes */
    tk_edge(b, a, d, -1); /* default: a's output_bytes */
    op_graph *g = tk_finish(b);
    cr_expect_eq(g->n_edges, 3);
    cr_expect_eq(g->edge_bytes[op_graph_find_edge(g, a, c)], 7);
    cr_expect_eq(g->edge_bytes[op_graph_find_edge(g, a, d)], 10);
    cr_expect_eq(op_graph_find_edge(g, d, a), -1);
    cr_expect_eq(g->succ_off[a + 1] - g->succ_off[a], 2);
    cr_expect_eq(g->pred_off[d + 1] - g->pred_off[d], 2);
    for (int e = 0; e < g->n_edges; e++)
        cr_expect_lt(g->topo_pos[g->edge_src[e]], g->topo_pos[g->edge_dst[e]]);
    cr_expect_eq(op_graph_find(g, "c"), c);
    cr_expect_eq(op_graph_find(g, "zz"), -1);
    op_graph_free(g);
}

Test(graph, random_dags_have_valid_topological_orders)
{
    for (uint64_t seed = 1; seed <= 20; seed++) {
        op_graph *g = tk_random_dag(80, 0.05, seed);
        int *seen = calloc(80, sizeof *seen);
        for (int t = 0; t < g->n_ops; t++)
            seen[g->topo[t]]++;
        for (int i = 0; i < g->n_ops; i++)
            cr_assert_eq(seen[i], 1);
        for (int e = 0; e < g->n_edges; e++)
            cr_assert_lt(g->topo_pos[g->edge_src[e]], g->topo_pos[g->edge_dst[e]]);
        free(seen);
        op_graph_free(g);
    }
}

Test(graph, per_kind_times_decide_eligibility)
{
    op_graph_builder *b = op_graph_builder_new("kinds", NULL);
    op_kind_time kt[2] = {{"gpu", 10}, {"cpu", 200}};
    tk_op_full(b, &(op_op_spec){.name = "both", .kind_times = kt, .n_kind_times = 2});
    tk_op_full(b, &(op_op_spec){.name = "gpu_only", .kind_times = kt, .n_kind_times = 1});
    tk_op_full(b, &(op_op_spec){.name = "pinned", .time_us = 5, .device = "cpu:0"});
    tk_op_full(b, &(op_op_spec){.name = "any", .time_us = 5, .kind = "cpu"});
    op_error err = {0};
    op_cluster *c = op_cluster_preset("v100-nvlink", 2, 1, &err);
    cr_assert(c, "%s", err.msg);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), c);
    int cpu = op_cluster_find(c, "cpu:0");
    cr_expect_eq(cpu, 2);
    cr_expect_float_eq(op_exec_us(&tp.p, 0, 0), 10.0, 1e-12);
    cr_expect_float_eq(op_exec_us(&tp.p, 0, cpu), 200.0, 1e-12);
    cr_expect(op_eligible(&tp.p, 1, 0) && !op_eligible(&tp.p, 1, cpu));
    cr_expect(!op_eligible(&tp.p, 2, 0) && op_eligible(&tp.p, 2, cpu));
    cr_expect(!op_eligible(&tp.p, 3, 1) && op_eligible(&tp.p, 3, cpu));
    tk_unbind(&tp);
}

Test(graph, an_op_no_device_can_run_is_infeasible)
{
    op_graph_builder *b = op_graph_builder_new("tpu", NULL);
    op_kind_time kt[1] = {{"tpu", 1}};
    tk_op_full(b, &(op_op_spec){.name = "x", .kind_times = kt, .n_kind_times = 1});
    op_graph *g = tk_finish(b);
    op_cluster *c = tk_cluster(2, 1, 0, 100);
    op_problem p;
    op_error err = {0};
    cr_expect_eq(op_problem_init(&p, g, c, &err), OP_EINFEASIBLE);
    cr_expect(strstr(err.msg, "'x'") != NULL, "%s", err.msg);
    op_graph_free(g);
    op_cluster_free(c);
}

Test(graph, write_then_read_gives_the_same_graph)
{
    op_error err = {0};
    op_graph *g = op_graph_read(DATA "/good_graph.json", &err);
    cr_assert(g, "%s", err.msg);
    char path[512];
    snprintf(path, sizeof path, "%s/round.json", tk_tmpdir());
    cr_assert_eq(op_graph_write(g, path, &err), OP_OK, "%s", err.msg);
    op_graph *h = op_graph_read(path, &err);
    cr_assert(h, "%s", err.msg);
    cr_expect_eq(h->n_ops, g->n_ops);
    cr_expect_eq(h->n_edges, g->n_edges);
    for (int i = 0; i < g->n_ops; i++) {
        cr_expect_str_eq(h->op_name[i], g->op_name[i]);
        cr_expect_str_eq(h->op_type[i], g->op_type[i]);
        cr_expect_eq(h->output_bytes[i], g->output_bytes[i]);
        cr_expect_eq(h->param_bytes[i], g->param_bytes[i]);
        cr_expect_eq(h->time_off[i + 1] - h->time_off[i], g->time_off[i + 1] - g->time_off[i]);
        cr_expect_eq(op_graph_time_on_kind(h, i, "cpu"), op_graph_time_on_kind(g, i, "cpu"));
        cr_expect_eq(h->colocate[i] == OP_NONE, g->colocate[i] == OP_NONE);
        cr_expect_eq(h->kind[i] == OP_NONE, g->kind[i] == OP_NONE);
    }
    for (int e = 0; e < g->n_edges; e++)
        cr_expect_eq(h->edge_bytes[e], g->edge_bytes[e]);
    op_graph_free(g);
    op_graph_free(h);
}

Test(graph, unknown_keys_are_ignored)
{
    char path[512];
    snprintf(path, sizeof path, "%s/extra.json", tk_tmpdir());
    FILE *f = fopen(path, "w");
    fputs("{\"format\": \"opplace-graph\", \"version\": 1, \"future\": {\"x\": [1]},\n"
          " \"ops\": [{\"name\": \"a\", \"time_us\": 1, \"shape\": [2, 3]}], \"edges\": []}\n", f);
    fclose(f);
    op_error err = {0};
    op_graph *g = op_graph_read(path, &err);
    cr_assert(g, "%s", err.msg);
    cr_expect_str_eq(g->name, "extra.json");
    op_graph_free(g);
}

Test(graph, large_synthetic_graph_round_trips)
{
    op_error err = {0};
    op_graph *g = op_zoo_synthetic(5000, 20, 3, 9, &err);
    cr_assert(g, "%s", err.msg);
    char path[512];
    snprintf(path, sizeof path, "%s/big.json", tk_tmpdir());
    cr_assert_eq(op_graph_write(g, path, &err), OP_OK, "%s", err.msg);
    op_graph *h = op_graph_read(path, &err);
    cr_assert(h, "%s", err.msg);
    cr_expect_eq(h->n_ops, 5000);
    cr_expect_eq(h->n_edges, g->n_edges);
    for (int i = 0; i < 5000; i += 97)
        cr_expect_eq(h->time_val[h->time_off[i]], g->time_val[g->time_off[i]]);
    op_graph_free(g);
    op_graph_free(h);
}

Test(cluster, presets_build_and_round_trip)
{
    int n;
    const op_preset_info *info = op_cluster_presets(&n);
    cr_expect_geq(n, 6);
    for (int i = 0; i < n; i++) {
        op_error err = {0};
        op_cluster *c = op_cluster_preset(info[i].name, 4, 1, &err);
        cr_assert(c, "%s: %s", info[i].name, err.msg);
        cr_expect_eq(c->n_dev, 5);
        cr_expect_eq(c->n_chan, 20); /* one per ordered pair */
        char path[512];
        snprintf(path, sizeof path, "%s/%s.json", tk_tmpdir(), info[i].name);
        cr_assert_eq(op_cluster_write(c, path, &err), OP_OK, "%s", err.msg);
        op_cluster *d = op_cluster_read(path, &err);
        cr_assert(d, "%s", err.msg);
        for (int s = 0; s < 5; s++)
            for (int t = 0; t < 5; t++)
                if (s != t) {
                    cr_expect_eq(op_cluster_latency(d, s, t), op_cluster_latency(c, s, t));
                    cr_expect_eq(op_cluster_us_per_byte(d, s, t), op_cluster_us_per_byte(c, s, t));
                }
        for (int k = 0; k < 5; k++)
            cr_expect_eq(d->dev[k].memory_bytes, c->dev[k].memory_bytes);
        op_cluster_free(c);
        op_cluster_free(d);
    }
}

Test(cluster, shared_channels_survive_a_round_trip)
{
    op_error err = {0};
    op_cluster *c = op_cluster_read(DATA "/good_cluster.json", &err);
    cr_assert(c, "%s", err.msg);
    cr_expect_eq(op_cluster_chan(c, 0, 1), op_cluster_chan(c, 1, 0)); /* both nvlink directions */
    cr_expect_neq(op_cluster_chan(c, 0, 2), op_cluster_chan(c, 2, 0));
    char path[512];
    snprintf(path, sizeof path, "%s/shared.json", tk_tmpdir());
    cr_assert_eq(op_cluster_write(c, path, &err), OP_OK);
    op_cluster *d = op_cluster_read(path, &err);
    cr_assert(d, "%s", err.msg);
    cr_expect_eq(d->n_chan, c->n_chan);
    cr_expect_eq(op_cluster_chan(d, 0, 1), op_cluster_chan(d, 1, 0));
    cr_expect_float_eq(op_cluster_latency(d, 0, 2), 10.0, 1e-12); /* from default_link */
    op_cluster_free(c);
    op_cluster_free(d);
}

Test(commfit, recovers_exact_linear_models)
{
    char path[512];
    snprintf(path, sizeof path, "%s/calib.csv", tk_tmpdir());
    FILE *f = fopen(path, "w");
    fputs("src_kind,dst_kind,bytes,time_us\n", f);
    for (int k = 1; k <= 8; k++) {
        double bytes = 1024.0 * k * k;
        fprintf(f, "gpu,gpu,%.0f,%.10g\n", bytes, 5.0 + 4e-5 * bytes);
        fprintf(f, "gpu,cpu,%.0f,%.10g\n", bytes, 20.0 + 1e-4 * bytes);
    }
    fclose(f);
    op_comm_fit *fits;
    int n;
    op_error err = {0};
    cr_assert_eq(op_comm_fit_csv(path, &fits, &n, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(n, 2);
    cr_expect_float_eq(fits[0].latency_us, 5.0, 1e-6);
    cr_expect_float_eq(fits[0].us_per_byte, 4e-5, 1e-12);
    cr_expect_float_eq(fits[1].latency_us, 20.0, 1e-6);
    cr_expect_float_eq(fits[1].r2, 1.0, 1e-9);
    cr_expect_eq(fits[1].samples, 8);
    free(fits);
}

Test(commfit, noisy_data_gives_r2_below_one_and_bad_csv_fails)
{
    double x[6] = {0, 1, 2, 3, 4, 5}, y[6] = {1, 3.2, 4.9, 7.1, 9.0, 11.2}, a, b, r2;
    cr_assert_eq(op_linear_fit(x, y, 6, &a, &b, &r2, NULL), OP_OK);
    cr_expect(r2 < 1.0 && r2 > 0.99);
    cr_expect_float_eq(b, 2.0, 0.1);
    char path[512];
    snprintf(path, sizeof path, "%s/bad.csv", tk_tmpdir());
    FILE *f = fopen(path, "w");
    fputs("src_kind,dst_kind,bytes,time_us\ngpu,gpu,100,5\ngpu,gpu,abc,7\n", f);
    fclose(f);
    op_comm_fit *fits;
    int n;
    op_error err = {0};
    cr_expect_eq(op_comm_fit_csv(path, &fits, &n, &err), OP_EINPUT);
    cr_expect(strstr(err.msg, ":3:") != NULL, "%s", err.msg);
}

Test(stats, ccr_and_bounds_by_hand)
{
    op_graph_builder *b = op_graph_builder_new("s", NULL);
    int a = tk_op(b, "a", 10, 100), c = tk_op(b, "c", 30, 0), d = tk_op(b, "d", 20, 0);
    tk_edge(b, a, c, -1);
    tk_edge(b, a, d, -1);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(2, 2, 0.01, 1000));
    op_graph_stats s;
    op_graph_stats_compute(&tp.p, &s);
    cr_expect_float_eq(s.total_work_us, 60, 1e-9);
    cr_expect_float_eq(s.critical_path_us, 40, 1e-9);
    cr_expect_float_eq(s.lower_bound_us, 40, 1e-9);     /* max(40, 60/2) */
    cr_expect_float_eq(s.total_comm_us, 2 * 3.0, 1e-9); /* two edges of 2 + 1 us */
    cr_expect_float_eq(s.ccr, 6.0 / 60.0, 1e-12);
    tk_unbind(&tp);
}

Test(coarsen, coarse_graph_sums_edges_and_expands_back)
{
    op_graph_builder *b = op_graph_builder_new("c", NULL);
    int a = tk_op(b, "a", 1, 100), x = tk_op(b, "x", 2, 50), y = tk_op(b, "y", 3, 0),
        z = tk_op(b, "z", 4, 0);
    tk_edge(b, a, y, 100);
    tk_edge(b, x, y, 50);
    tk_edge(b, x, z, 50);
    op_graph *g = tk_finish(b);
    /* groups {a, x} and {y, z} */
    int group_of[4] = {0, 0, 1, 1};
    op_coarse_map m;
    op_error err = {0};
    cr_assert_eq(op_coarse_build(g, group_of, 2, &m, &err), OP_OK, "%s", err.msg);
    cr_expect_eq(m.coarse->n_ops, 2);
    cr_expect_eq(m.coarse->n_edges, 1);
    cr_expect_eq(m.coarse->edge_bytes[0], 200); /* 100 + 50 + 50, not the max */
    cr_expect_float_eq(m.coarse->time_val[0], 3.0, 1e-12);
    op_placement cp, fine;
    op_placement_init(&cp, 2, 2, &err);
    cp.device_of[1] = 1;
    cr_assert_eq(op_coarse_expand(&m, g, &cp, &fine, &err), OP_OK);
    cr_expect_eq(fine.device_of[a], 0);
    cr_expect_eq(fine.device_of[z], 1);
    op_placement_destroy(&cp);
    op_placement_destroy(&fine);
    /* a grouping that makes a cycle is refused: {a, z} and {x, y} */
    int cyclic[4] = {0, 1, 1, 0};
    op_coarse_map bad;
    cr_expect_neq(op_coarse_build(g, cyclic, 2, &bad, &err), OP_OK);
    op_coarse_map_destroy(&m);
    op_graph_free(g);
}
