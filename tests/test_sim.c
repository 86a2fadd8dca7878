/*
 * test_sim.c - the simulator against hand-computed steps (formats.md 5)
 * and against properties every run must have.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/simulate.h"
#include "testkit.h"

#define LAT 2.0
#define UPB 0.01 /* 100 bytes -> 1 us, plus LAT */
#define BIG ((int64_t)1 << 40)

Test(sim, chain_on_one_device)
{
    op_graph_builder *b = op_graph_builder_new("chain", NULL);
    int a = tk_op(b, "a", 10, 100), bb = tk_op(b, "b", 20, 100), c = tk_op(b, "c", 5, 0);
    tk_edge(b, a, bb, -1);
    tk_edge(b, bb, c, -1);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(2, LAT, UPB, BIG));
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 0, 0}, NULL, NULL, &o);
    cr_expect_float_eq(o.r.step_time_us, 35.0, 1e-9);
    cr_expect_eq(o.r.n_transfers, 0);
    cr_expect_float_eq(o.r.busy_us[0], 35.0, 1e-9);
    cr_expect_float_eq(o.t.start_us[c], 30.0, 1e-9);
    tk_sim_done(&o, &tp);
}

Test(sim, chain_across_devices_pays_latency_plus_bytes)
{
    op_graph_builder *b = op_graph_builder_new("chain2", NULL);
    int a = tk_op(b, "a", 10, 100), bb = tk_op(b, "b", 20, 0);
    tk_edge(b, a, bb, -1);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(2, LAT, UPB, BIG));
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 1}, NULL, NULL, &o);
    /* a 0-10, transfer 10-13 (2 + 100*0.01), b 13-33 */
    cr_expect_float_eq(o.r.step_time_us, 33.0, 1e-9);
    cr_expect_eq(o.r.n_transfers, 1);
    cr_expect_eq(o.r.comm_bytes, 100);
    cr_expect_float_eq(o.t.transfers[0].start_us, 10.0, 1e-9);
    cr_expect_float_eq(o.t.transfers[0].end_us, 13.0, 1e-9);
    tk_sim_done(&o, &tp);
}

static op_graph *diamond(void)
{
    op_graph_builder *b = op_graph_builder_new("diamond", NULL);
    int a = tk_op(b, "a", 10, 100), x = tk_op(b, "b", 20, 100), y = tk_op(b, "c", 30, 100),
        d = tk_op(b, "d", 5, 0);
    tk_edge(b, a, x, -1);
    tk_edge(b, a, y, -1);
    tk_edge(b, x, d, -1);
    tk_edge(b, y, d, -1);
    return tk_finish(b);
}

Test(sim, diamond_on_one_device_runs_ready_ops_by_index)
{
    tk_problem tp;
    tk_bind(&tp, diamond(), tk_cluster(2, LAT, UPB, BIG));
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 0, 0, 0}, NULL, NULL, &o);
    /* a 0-10; b and c ready at 10, b first (lower index) 10-30, c 30-60, d 60-65 */
    cr_expect_float_eq(o.t.start_us[1], 10.0, 1e-9);
    cr_expect_float_eq(o.t.start_us[2], 30.0, 1e-9);
    cr_expect_float_eq(o.r.step_time_us, 65.0, 1e-9);
    tk_sim_done(&o, &tp);
}

Test(sim, diamond_split_over_two_devices)
{
    tk_problem tp;
    tk_bind(&tp, diamond(), tk_cluster(2, LAT, UPB, BIG));
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 0, 1, 0}, NULL, NULL, &o);
    /* a 0-10; a->d1 10-13; b 10-30 on d0; c 13-43 on d1; c->d0 43-46; d 46-51 */
    cr_expect_float_eq(o.t.start_us[2], 13.0, 1e-9);
    cr_expect_float_eq(o.t.start_us[3], 46.0, 1e-9);
    cr_expect_float_eq(o.r.step_time_us, 51.0, 1e-9);
    cr_expect_eq(o.r.n_transfers, 2);
    tk_sim_done(&o, &tp);
}

Test(sim, fan_out_sends_once_per_device_with_the_largest_edge)
{
    op_graph_builder *b = op_graph_builder_new("fan", NULL);
    int a = tk_op(b, "a", 10, 50), x = tk_op(b, "x", 1, 0), y = tk_op(b, "y", 1, 0),
        z = tk_op(b, "z", 1, 0);
    tk_edge(b, a, x, 100);
    tk_edge(b, a, y, 300);
    tk_edge(b, a, z, 200);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(3, LAT, UPB, BIG));
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 1, 1, 2}, NULL, NULL, &o);
    /* to d1: 300 bytes, 10-15; to d2: 200 bytes, 10-14 (own channel);
     * x 15-16, y 16-17 on d1; z 14-15 on d2 */
    cr_expect_eq(o.r.n_transfers, 2);
    cr_expect_eq(o.r.comm_bytes, 500);
    cr_expect_float_eq(o.t.start_us[x], 15.0, 1e-9);
    cr_expect_float_eq(o.t.start_us[y], 16.0, 1e-9);
    cr_expect_float_eq(o.t.start_us[z], 14.0, 1e-9);
    cr_expect_float_eq(o.r.step_time_us, 17.0, 1e-9);
    tk_sim_done(&o, &tp);
}

Test(sim, congested_channel_carries_one_transfer_at_a_time)
{
    op_graph_builder *b = op_graph_builder_new("congest", NULL);
    int a = tk_op(b, "a", 10, 1000), bb = tk_op(b, "b", 1, 1000), c = tk_op(b, "c", 1, 0),
        e = tk_op(b, "e", 1, 0);
    tk_edge(b, a, c, -1);
    tk_edge(b, bb, e, -1);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(2, 0.0, 0.1, BIG));
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 0, 1, 1}, NULL, NULL, &o);
    /* a 0-10, b 10-11; a's transfer 10-110, b's waits: 110-210; c 110-111, e 210-211 */
    cr_expect_float_eq(o.t.transfers[1].issue_us, 11.0, 1e-9);
    cr_expect_float_eq(o.t.transfers[1].start_us, 110.0, 1e-9);
    cr_expect_float_eq(o.r.step_time_us, 211.0, 1e-9);
    tk_sim_done(&o, &tp);
}

Test(sim, shared_channel_serializes_links_in_source_index_order)
{
    op_device devs[3] = {{"d0", "gpu", BIG, 1}, {"d1", "gpu", BIG, 1}, {"d2", "gpu", BIG, 1}};
    op_link_spec links[2] = {{.src = "d0", .dst = "d1", .channel = "bus", .us_per_byte = 0.1},
                             {.src = "d2", .dst = "d1", .channel = "bus", .us_per_byte = 0.1}};
    op_link_model def = {.latency_us = 0, .us_per_byte = 0.1};
    op_error err = {0};
    op_cluster *c = op_cluster_new(devs, 3, links, 2, &def, "test", &err);
    cr_assert(c, "%s", err.msg);
    cr_expect_eq(op_cluster_chan(c, 0, 1), op_cluster_chan(c, 2, 1));
    op_graph_builder *b = op_graph_builder_new("shared", NULL);
    int x = tk_op(b, "x", 10, 1000), y = tk_op(b, "y", 10, 1000), u = tk_op(b, "u", 1, 0),
        v = tk_op(b, "v", 1, 0);
    tk_edge(b, x, u, -1);
    tk_edge(b, y, v, -1);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), c);
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 2, 1, 1}, NULL, NULL, &o);
    /* both issued at 10; x (index 0) first: 10-110, then y's 110-210 */
    cr_expect_float_eq(o.t.start_us[u], 110.0, 1e-9);
    cr_expect_float_eq(o.t.start_us[v], 210.0, 1e-9);
    cr_expect_float_eq(o.r.step_time_us, 211.0, 1e-9);
    tk_sim_done(&o, &tp);
}

Test(sim, memory_timeline_of_a_chain)
{
    op_graph_builder *b = op_graph_builder_new("mem", NULL);
    int a = tk_op_full(b, &(op_op_spec){.name = "a", .time_us = 10, .output_bytes = 100,
                                         .param_bytes = 1000});
    int bb = tk_op_full(b, &(op_op_spec){.name = "b", .time_us = 20, .output_bytes = 50,
                                          .temp_bytes = 30});
    int c = tk_op(b, "c", 5, 0);
    tk_edge(b, a, bb, -1);
    tk_edge(b, bb, c, -1);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(2, LAT, UPB, BIG));
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 0, 0}, NULL, NULL, &o);
    /* params 1000 always; during b: a's output 100 + b's output 50 + temp 30 */
    cr_expect_eq(o.r.peak_mem[0], 1180);
    cr_expect_eq(o.r.peak_mem[1], 0);
    tk_sim_done(&o, &tp);
}

Test(sim, releases_come_before_allocations_at_equal_times)
{
    op_graph_builder *b = op_graph_builder_new("temps", NULL);
    tk_op_full(b, &(op_op_spec){.name = "a", .time_us = 10, .temp_bytes = 100});
    tk_op_full(b, &(op_op_spec){.name = "b", .time_us = 10, .temp_bytes = 100});
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(1, LAT, UPB, 150));
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 0}, NULL, NULL, &o);
    /* a's temp is freed at 10 before b's is taken at 10 */
    cr_expect_eq(o.r.peak_mem[0], 100);
    cr_expect_eq(o.r.oom, 0);
    tk_sim_done(&o, &tp);
}

Test(sim, received_tensor_and_sender_output_are_held_while_needed)
{
    op_graph_builder *b = op_graph_builder_new("remote", NULL);
    int a = tk_op(b, "a", 10, 100), bb = tk_op(b, "b", 20, 7);
    tk_edge(b, a, bb, -1);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(2, LAT, UPB, BIG));
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 1}, NULL, NULL, &o);
    /* d0 holds a's output until its transfer ends (13); d1 holds the received
     * 100 bytes from 10 to 33 plus b's output 7 while b runs */
    cr_expect_eq(o.r.peak_mem[0], 100);
    cr_expect_eq(o.r.peak_mem[1], 107);
    int saw_release_on_d0 = 0;
    for (int k = 0; k < o.t.n_mem; k++)
        if (o.t.mem[k].dev == 0 && o.t.mem[k].bytes == 0 && fabs(o.t.mem[k].t_us - 13.0) < 1e-9)
            saw_release_on_d0 = 1;
    cr_expect(saw_release_on_d0, "a's output should be freed when its transfer ends at 13");
    tk_sim_done(&o, &tp);
}

Test(sim, out_of_memory_is_flagged)
{
    op_graph_builder *b = op_graph_builder_new("oom", NULL);
    tk_op_full(b, &(op_op_spec){.name = "w1", .time_us = 1, .param_bytes = 600});
    tk_op_full(b, &(op_op_spec){.name = "w2", .time_us = 1, .param_bytes = 600});
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(2, LAT, UPB, 1000));
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 0}, NULL, NULL, &o);
    cr_expect_eq(o.r.peak_mem[0], 1200);
    cr_expect_eq(o.r.oom, 1);
    tk_sim_out_destroy(&o);
    tk_sim(&tp, (int[]){0, 1}, NULL, NULL, &o);
    cr_expect_eq(o.r.oom, 0);
    tk_sim_done(&o, &tp);
}

static op_graph *order_graph(void)
{
    op_graph_builder *b = op_graph_builder_new("order", NULL);
    int a = tk_op(b, "a", 10, 0), x = tk_op(b, "x", 10, 0);
    tk_op(b, "b", 10, 0);
    tk_edge(b, a, x, 0);
    return tk_finish(b);
}

Test(sim, explicit_order_overrides_first_ready_first)
{
    tk_problem tp;
    tk_bind(&tp, order_graph(), tk_cluster(2, 0, 0, BIG));
    tk_sim_out o;
    /* FIFO on d0: a (index 0) before b: a 0-10, x 10-20 on d1, b 10-20 */
    tk_sim(&tp, (int[]){0, 1, 0}, NULL, NULL, &o);
    cr_expect_float_eq(o.r.step_time_us, 20.0, 1e-9);
    tk_sim_out_destroy(&o);
    /* order d0: [b, a], d1: [x]: b 0-10, a 10-20, x 20-30 */
    tk_sim(&tp, (int[]){0, 1, 0}, (int[]){0, 2, 3}, (int[]){2, 0, 1}, &o);
    cr_expect_float_eq(o.t.start_us[0], 10.0, 1e-9);
    cr_expect_float_eq(o.r.step_time_us, 30.0, 1e-9);
    tk_sim_done(&o, &tp);
}

Test(sim, an_order_that_contradicts_dependencies_is_an_error)
{
    op_graph_builder *b = op_graph_builder_new("dead", NULL);
    int a = tk_op(b, "a", 1, 0), c = tk_op(b, "c", 1, 0);
    tk_edge(b, a, c, 0);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(1, 0, 0, BIG));
    op_error err = {0};
    op_placement pl;
    op_placement_init(&pl, 2, 1, &err);
    op_placement_alloc_order(&pl, &err);
    pl.order_off[1] = 2;
    pl.order[0] = c;
    pl.order[1] = a;
    op_sim_result r;
    op_sim_result_init(&r, &tp.p, &err);
    cr_expect_eq(op_simulate(&tp.p, &pl, &r, NULL, &err), OP_EINPUT);
    cr_expect(strstr(err.msg, "deadlock") != NULL, "message: %s", err.msg);
    op_sim_result_destroy(&r);
    op_placement_destroy(&pl);
    tk_unbind(&tp);
}

Test(sim, device_speed_scales_compute_time)
{
    op_device devs[2] = {{"slow", "gpu", BIG, 0.5}, {"fast", "gpu", BIG, 2.0}};
    op_link_model def = {.latency_us = 0, .us_per_byte = 0};
    op_cluster *c = op_cluster_new(devs, 2, NULL, 0, &def, "test", NULL);
    op_graph_builder *b = op_graph_builder_new("speed", NULL);
    tk_op(b, "a", 10, 0);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), c);
    tk_sim_out o;
    tk_sim(&tp, (int[]){0}, NULL, NULL, &o);
    cr_expect_float_eq(o.r.step_time_us, 20.0, 1e-9);
    tk_sim_out_destroy(&o);
    tk_sim(&tp, (int[]){1}, NULL, NULL, &o);
    cr_expect_float_eq(o.r.step_time_us, 5.0, 1e-9);
    /* max(critical path 10/2, total work 10 / total speed 2.5) */
    cr_expect_float_eq(tp.p.lower_bound_us, 5.0, 1e-9);
    tk_sim_done(&o, &tp);
}

/* Check a trace against the rules: no overlap per device and channel, data
 * available before an op starts. */
static void check_trace(const tk_problem *tp, const tk_sim_out *o)
{
    const op_graph *g = tp->g;
    const op_sim_trace *t = &o->t;
    for (int e = 0; e < g->n_edges; e++) {
        int u = g->edge_src[e], v = g->edge_dst[e];
        if (t->dev[u] == t->dev[v]) {
            cr_assert_geq(t->start_us[v], t->finish_us[u] - 1e-9);
            continue;
        }
        int found = 0;
        for (int x = 0; x < t->n_transfers; x++)
            if (t->transfers[x].src_op == u && t->transfers[x].dst_dev == t->dev[v]) {
                found = 1;
                cr_assert_geq(t->transfers[x].start_us, t->finish_us[u] - 1e-9);
                cr_assert_geq(t->start_us[v], t->transfers[x].end_us - 1e-9);
                cr_assert_geq(t->transfers[x].bytes, g->edge_bytes[e]);
            }
        cr_assert(found, "no transfer for edge %d", e);
    }
    for (int i = 0; i < g->n_ops; i++)
        for (int j = i + 1; j < g->n_ops; j++)
            if (t->dev[i] == t->dev[j] && t->finish_us[i] > t->start_us[i] &&
                t->finish_us[j] > t->start_us[j])
                cr_assert(t->finish_us[i] <= t->start_us[j] + 1e-9 ||
                              t->finish_us[j] <= t->start_us[i] + 1e-9,
                          "ops %d and %d overlap on a device", i, j);
    for (int x = 0; x < t->n_transfers; x++)
        for (int y = x + 1; y < t->n_transfers; y++)
            if (t->transfers[x].chan == t->transfers[y].chan)
                cr_assert(t->transfers[x].end_us <= t->transfers[y].start_us + 1e-9 ||
                              t->transfers[y].end_us <= t->transfers[x].start_us + 1e-9,
                          "transfers overlap on a channel");
}

Test(sim, random_graphs_obey_the_rules_and_the_lower_bound)
{
    uint64_t seed = 42;
    for (int round = 0; round < 40; round++) {
        int n = 5 + (int)(tk_rand(&seed) % 40), nd = 1 + (int)(tk_rand(&seed) % 4);
        tk_problem tp;
        tk_bind(&tp, tk_random_dag(n, 0.15, seed), tk_cluster(nd, 3, 0.001, BIG));
        int dev[64];
        for (int i = 0; i < n; i++)
            dev[i] = (int)(tk_rand(&seed) % (uint64_t)nd);
        tk_sim_out o, again;
        tk_sim(&tp, dev, NULL, NULL, &o);
        cr_assert_geq(o.r.step_time_us, tp.p.lower_bound_us - 1e-6);
        check_trace(&tp, &o);
        tk_sim(&tp, dev, NULL, NULL, &again);
        cr_assert_eq(memcmp(&o.r.step_time_us, &again.r.step_time_us, sizeof(double)), 0);
        cr_assert_eq(memcmp(o.t.start_us, again.t.start_us, (size_t)n * sizeof(double)), 0);
        cr_assert_eq(memcmp(o.r.peak_mem, again.r.peak_mem, (size_t)nd * sizeof(int64_t)), 0);
        tk_sim_out_destroy(&again);
        tk_sim_done(&o, &tp);
    }
}

Test(sim, reusing_one_simulator_gives_the_same_answers)
{
    tk_problem tp;
    tk_bind(&tp, tk_random_dag(60, 0.1, 7), tk_cluster(3, 3, 0.001, BIG));
    op_error err = {0};
    op_sim *s = op_sim_new(&tp.p, &err);
    op_sim_result r1, r2;
    op_sim_result_init(&r1, &tp.p, &err);
    op_sim_result_init(&r2, &tp.p, &err);
    op_placement a, b;
    op_placement_init(&a, 60, 3, &err);
    op_placement_init(&b, 60, 3, &err);
    for (int i = 0; i < 60; i++) {
        a.device_of[i] = i % 3;
        b.device_of[i] = (i / 7) % 3;
    }
    op_sim_run(s, &a, &r1, NULL, &err);
    op_sim_run(s, &b, &r2, NULL, &err);
    double second = r2.step_time_us;
    op_sim_run(s, &a, &r2, NULL, &err);
    cr_expect_eq(r1.step_time_us, r2.step_time_us);
    op_simulate(&tp.p, &b, &r1, NULL, &err);
    cr_expect_eq(r1.step_time_us, second);
    op_placement_destroy(&a);
    op_placement_destroy(&b);
    op_sim_result_destroy(&r1);
    op_sim_result_destroy(&r2);
    op_sim_free(s);
    tk_unbind(&tp);
}
