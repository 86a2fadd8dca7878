/*
 * test_expert.c - the layer-wise expert placement (src/placers/baselines/expert.c).
 *
 * Contiguous layer groups where splitting pays (a pipelined layer x time
 * grid), branches of a cell spread over the devices, never slower than one
 * device where the graph fits on one (a chain, random layered graphs:
 * an outside audit found expert 1.7-5.3x slower than one GPU on real CNNs), and a
 * split where one device lacks the memory.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "opplace/placer.h"
#include "opplace/simulate.h"
#include "placers/baselines/baselines.h"
#include "testkit.h"

static op_status run_placer(const char *name, const op_problem *p, op_placement *out,
                            op_error *err)
{
    const op_placer *pl = op_placer_find(name);
    cr_assert(pl, "placer %s is registered", name);
    op_place_ctx ctx = {.p = p, .seed = 1};
    return op_place(pl, &ctx, out, err);
}

static double step_of(const char *algo, const op_problem *p, op_placement *pl)
{
    op_error err = {0};
    cr_assert_eq(run_placer(algo, p, pl, &err), OP_OK, "%s: %s", algo, err.msg);
    return tk_step(p, pl->device_of);
}

/* Encoder and decoder of 4 layers unrolled over T steps (cell (l, t) after
 * (l-1, t) and (l, t-1)), embedding first, attention and softmax last:
 * layers on separate devices run as a wavefront, so the split pays. */
Test(expert, contiguous_layers_on_a_pipelined_grid)
{
    enum { L = 4, T = 6 };
    op_error err = {0};
    op_graph_builder *b = op_graph_builder_new("grid", &err);
    int emb = tk_op_full(b, &(op_op_spec){.name = "embedding/op", .time_us = 1,
                                          .layer = "embedding", .output_bytes = 10});
    int enc[L][T], dec[L][T];
    for (int part = 0; part < 2; part++)
        for (int l = 0; l < L; l++)
            for (int t = 0; t < T; t++) {
                char name[96], scope[32];
                snprintf(scope, sizeof scope, "%s/layer_%d", part ? "decoder" : "encoder", l);
                snprintf(name, sizeof name, "%s/t%d", scope, t);
                int v = tk_op_full(b, &(op_op_spec){.name = name, .time_us = 50, .layer = scope,
                                                    .output_bytes = 10});
                int(*grid)[T] = part ? dec : enc;
                grid[l][t] = v;
                if (l == 0)
                    tk_edge(b, emb, v, -1);
                else
                    tk_edge(b, grid[l - 1][t], v, -1);
                if (t > 0)
                    tk_edge(b, grid[l][t - 1], v, -1);
                else if (part)
                    tk_edge(b, enc[l][T - 1], v, -1); /* the encoder's state */
            }
    int att = tk_op_full(b, &(op_op_spec){.name = "decoder/attention/op", .time_us = 1,
                                          .layer = "decoder/attention", .output_bytes = 10});
    for (int t = 0; t < T; t++)
        tk_edge(b, dec[L - 1][t], att, -1);
    int soft = tk_op_full(b, &(op_op_spec){.name = "softmax/op", .time_us = 1,
                                           .layer = "softmax", .output_bytes = 10});
    tk_edge(b, att, soft, -1);
    int loose = tk_op_full(b, &(op_op_spec){.name = "loose", .time_us = 1});
    tk_edge(b, soft, loose, -1);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(4, 10, 1e-4, INT64_C(1) << 40));
    op_placement pl, one;
    double t_expert = step_of("expert", &tp.p, &pl);
    double t_single = step_of("single", &tp.p, &one);
    cr_assert_lt(t_expert, 0.7 * t_single, "the split pays: %.0f vs %.0f us", t_expert,
                 t_single);
    const int *d = pl.device_of;
    cr_assert_eq(d[emb], d[enc[0][0]], "embedding with the first layer");
    for (int l = 0; l < L; l++)
        for (int t = 0; t < T; t++) {
            cr_assert_eq(d[enc[l][t]], d[enc[l][0]], "a layer stays on one device");
            cr_assert_eq(d[dec[l][t]], d[enc[l][0]], "encoder and decoder layer %d together", l);
        }
    for (int l = 1; l < L; l++)
        cr_assert_eq(d[enc[l][0]], d[enc[l - 1][0]] + 1, "layer %d on the next device", l);
    cr_assert_eq(d[att], d[enc[L - 1][0]], "attention with the last layers");
    cr_assert_eq(d[soft], d[enc[L - 1][0]], "softmax with the last layers");
    cr_assert_eq(d[loose], d[soft], "an op without a layer follows its producer");
    op_placement_destroy(&pl);
    op_placement_destroy(&one);
    tk_unbind(&tp);
}

Test(expert, spreads_the_branches_of_a_cell)
{
    op_error err = {0};
    op_graph_builder *b = op_graph_builder_new("cells", &err);
    int in = tk_op_full(b, &(op_op_spec){.name = "stem", .time_us = 1, .layer = "stem"});
    for (int c = 0; c < 2; c++) {
        char name[96], scope[32];
        int branch_ops[4];
        for (int br = 0; br < 4; br++) {
            snprintf(name, sizeof name, "cell_%d/branch_%d/conv", c, br);
            snprintf(scope, sizeof scope, "cell_%d/branch_%d", c, br);
            branch_ops[br] = tk_op_full(b, &(op_op_spec){.name = name, .time_us = 100,
                                                         .layer = scope});
            tk_edge(b, in, branch_ops[br], 8);
        }
        snprintf(name, sizeof name, "cell_%d/concat", c);
        snprintf(scope, sizeof scope, "cell_%d", c);
        int out = tk_op_full(b, &(op_op_spec){.name = name, .time_us = 1, .layer = scope});
        for (int br = 0; br < 4; br++)
            tk_edge(b, branch_ops[br], out, 8);
        in = out;
    }
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(4, 10, 1e-4, INT64_C(1) << 40));
    op_placement pl;
    step_of("expert", &tp.p, &pl);
    for (int c = 0; c < 2; c++) {
        int seen[4] = {0};
        for (int br = 0; br < 4; br++) {
            char name[64];
            snprintf(name, sizeof name, "cell_%d/branch_%d/conv", c, br);
            seen[pl.device_of[op_graph_find(tp.g, name)]]++;
        }
        for (int d = 0; d < 4; d++)
            cr_assert_eq(seen[d], 1, "cell %d: one branch per device", c);
    }
    op_placement_destroy(&pl);
    tk_unbind(&tp);
}

/* A chain of layers, as a CNN's training step is: forward and backward
 * run one after another, so layer groups on four devices only add
 * transfers (the old expert split it anyway, 1.2-2x slower than one
 * device on exported CNNs).  Expert must keep it on one device. */
Test(expert, never_slower_than_one_device_on_a_chain)
{
    op_error err = {0};
    op_graph_builder *b = op_graph_builder_new("chain", &err);
    int prev = -1;
    for (int s = 0; s < 16; s++) {
        char name[96], scope[32];
        snprintf(scope, sizeof scope, "layer_%d", s < 8 ? s : 15 - s); /* forward, backward */
        snprintf(name, sizeof name, "%s/%s", scope, s < 8 ? "fwd" : "bwd");
        int v = tk_op_full(b, &(op_op_spec){.name = name, .time_us = 50, .layer = scope,
                                            .output_bytes = 100000});
        if (prev >= 0)
            tk_edge(b, prev, v, -1);
        prev = v;
    }
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(4, 12, 1e-4, INT64_C(1) << 40));
    op_placement pl, one;
    double t_expert = step_of("expert", &tp.p, &pl);
    double t_single = step_of("single", &tp.p, &one);
    cr_assert_leq(t_expert, t_single, "expert %.1f us, one device %.1f us", t_expert, t_single);
    cr_assert_float_eq(t_expert, 16 * 50.0, 1e-6, "all on one device, no transfer");
    op_placement_destroy(&pl);
    op_placement_destroy(&one);
    tk_unbind(&tp);
}

/* Random layered training-like graphs (layer scopes, forward and
 * backward edges, random times and tensor sizes): whenever one device
 * holds the graph, expert is never slower than it. */
Test(expert, never_slower_than_one_device_on_random_layered_graphs)
{
    for (uint64_t seed = 1; seed <= 12; seed++) {
        uint64_t st = seed * 7919;
        op_error err = {0};
        op_graph_builder *b = op_graph_builder_new("layered", &err);
        int layers = 3 + (int)(tk_rand(&st) % 6), width = 1 + (int)(tk_rand(&st) % 4);
        int n = 0, prev_first = -1, prev_n = 0;
        for (int l = 0; l < layers; l++) {
            int first = n;
            for (int k = 0; k < width; k++) {
                char name[96], scope[32];
                snprintf(scope, sizeof scope, "layer_%d", l);
                snprintf(name, sizeof name, "%s/op%d", scope, k);
                tk_op_full(b, &(op_op_spec){.name = name,
                                            .time_us = 5 + (double)(tk_rand(&st) % 200),
                                            .layer = scope,
                                            .output_bytes = (int64_t)(tk_rand(&st) % 4000000)});
                for (int j = 0; j < prev_n; j++)
                    if (j == k % prev_n || tk_rand(&st) % 3 == 0)
                        tk_edge(b, prev_first + j, n, -1);
                n++;
            }
            prev_first = first;
            prev_n = width;
        }
        tk_problem tp;
        tk_bind(&tp, tk_finish(b), tk_cluster(2 + (int)(seed % 3), 12, 1e-4, INT64_C(1) << 40));
        op_placement pl, one;
        double t_expert = step_of("expert", &tp.p, &pl);
        double t_single = step_of("single", &tp.p, &one);
        cr_assert_leq(t_expert, t_single, "seed %d: expert %.1f us, one device %.1f us",
                      (int)seed, t_expert, t_single);
        op_placement_destroy(&pl);
        op_placement_destroy(&one);
        tk_unbind(&tp);
    }
}

/* A chain of n layers, one 50 us op each with 1000 bytes of parameters
 * and 10-byte outputs. */
static op_graph *heavy_chain(int n)
{
    op_error err = {0};
    op_graph_builder *b = op_graph_builder_new("heavy", &err);
    int prev = -1;
    for (int l = 0; l < n; l++) {
        char name[96], scope[32];
        snprintf(scope, sizeof scope, "layer_%d", l);
        snprintf(name, sizeof name, "%s/op", scope);
        int v = tk_op_full(b, &(op_op_spec){.name = name, .time_us = 50, .layer = scope,
                                            .output_bytes = 10, .param_bytes = 1000});
        if (prev >= 0)
            tk_edge(b, prev, v, -1);
        prev = v;
    }
    return tk_finish(b);
}

/* Where no single device holds the parameters, expert splits the layers
 * (and fits) while single refuses. */
Test(expert, splits_where_one_device_lacks_the_memory)
{
    op_error err = {0};
    tk_problem tp;
    tk_bind(&tp, heavy_chain(4), tk_cluster(4, 10, 1e-4, 1100));
    op_placement pl, one;
    cr_assert_eq(run_placer("single", &tp.p, &one, &err), OP_EINFEASIBLE);
    err = (op_error){0};
    cr_assert_eq(run_placer("expert", &tp.p, &pl, &err), OP_OK, "%s", err.msg);
    op_sim_result r;
    op_sim_result_init(&r, &tp.p, &err);
    tk_simulate(&tp.p, pl.device_of, &r);
    cr_assert(!r.oom, "expert's split fits");
    for (int l = 0; l < 4; l++)
        for (int m = 0; m < l; m++)
            cr_assert_neq(pl.device_of[l], pl.device_of[m], "one layer per device");
    op_sim_result_destroy(&r);
    op_placement_destroy(&pl);
    tk_unbind(&tp);
}

/* expert skips a device count k whose lower bounds rule it out
 * (expert_placement_bounds): the bounds must hold for every placement.
 * Random DAGs with params, outputs and temporaries, random placements on
 * 2-4 devices with little memory: the simulated overflow and step are
 * never below them. */
Test(expert, placement_bounds_never_exceed_the_simulator)
{
    int overflowing = 0, beyond_params = 0;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        uint64_t st = seed * 104729;
        op_graph *g = tk_random_dag(30 + (int)(seed % 20), 0.15, seed);
        for (int v = 0; v < g->n_ops; v++) {
            g->param_bytes[v] = (int64_t)(tk_rand(&st) % 1500);
            g->output_bytes[v] = (int64_t)(tk_rand(&st) % 1500);
            g->temp_bytes[v] = (int64_t)(tk_rand(&st) % 500);
        }
        tk_problem tp;
        tk_bind(&tp, g, tk_cluster(2 + (int)(seed % 3), 12, 1e-2, 9000));
        int device_of[64];
        for (int v = 0; v < tp.p.n; v++)
            device_of[v] = (int)(tk_rand(&st) % (uint64_t)tp.p.nd);
        op_error err = {0};
        double over, step;
        expert_waist w;
        cr_assert_eq(expert_waist_init(&tp.p, &w, &err), OP_OK);
        cr_assert_geq(w.op, 0, "a waist");
        cr_assert_eq(expert_placement_bounds(&tp.p, &w, device_of, &over, &step, &err), OP_OK);
        expert_waist_destroy(&w);
        op_sim_result r;
        cr_assert_eq(op_sim_result_init(&r, &tp.p, &err), OP_OK);
        double sim_step = tk_simulate(&tp.p, device_of, &r);
        double sim_over = op_sim_overflow_bytes(&tp.p, &r);
        cr_assert_leq(step, sim_step * (1 + 1e-12), "seed %d: step bound %.3f above %.3f",
                      (int)seed, step, sim_step);
        cr_assert_leq(over, sim_over, "seed %d: overflow bound %.0f above %.0f", (int)seed,
                      over, sim_over);
        double params_over;
        cr_assert_eq(expert_placement_bounds(&tp.p, NULL, device_of, &params_over, &step, &err),
                     OP_OK);
        overflowing += over > 0;
        beyond_params += over > params_over;
        op_sim_result_destroy(&r);
        tk_unbind(&tp);
    }
    cr_assert_gt(overflowing, 0, "some placements overflow (the bound is exercised)");
    cr_assert_gt(beyond_params, 0, "the waist adds to the params' bound somewhere");
}

/* The bounds only skip work: with memory for everything, expert's choice
 * is the best of the layer-wise placements over k = 1..n devices, which
 * on a chain is one device (the others only add transfers), and on the
 * pipelined grid above uses more than one.  Where only the k = n split
 * fits (params), the bounds rule out every smaller k and expert still
 * fits. */
Test(expert, skipping_by_bounds_keeps_the_fitting_split)
{
    op_error err = {0};
    tk_problem tp;
    /* two layers' params per device: only k = 4 holds the eight */
    tk_bind(&tp, heavy_chain(8), tk_cluster(4, 10, 1e-4, 2100));
    op_placement pl;
    for (int best_effort = 0; best_effort < 2; best_effort++) {
        const op_placer *ex = op_placer_find("expert");
        op_place_ctx ctx = {.p = &tp.p, .seed = 1, .best_effort = best_effort};
        cr_assert_eq(op_place(ex, &ctx, &pl, &err), OP_OK, "%s", err.msg);
        op_sim_result r;
        op_sim_result_init(&r, &tp.p, &err);
        tk_simulate(&tp.p, pl.device_of, &r);
        cr_assert(!r.oom, "best effort %d: expert's four-way split fits", best_effort);
        int used[4] = {0}, n_used = 0;
        for (int v = 0; v < tp.p.n; v++)
            n_used += !used[pl.device_of[v]]++;
        cr_assert_eq(n_used, 4, "all four devices hold layers");
        op_sim_result_destroy(&r);
        op_placement_destroy(&pl);
    }
    tk_unbind(&tp);
}
