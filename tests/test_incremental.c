/*
 * test_incremental.c - incremental re-simulation must give exactly the
 * answer of a full simulation.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "opplace/simulate.h"
#include "testkit.h"

static void expect_same(const op_sim_result *a, const op_sim_result *b, int nd, int n_chan)
{
    cr_assert_eq(a->step_time_us, b->step_time_us, "step %.17g vs %.17g", a->step_time_us,
                 b->step_time_us);
    cr_assert_eq(a->comm_bytes, b->comm_bytes);
    cr_assert_eq(a->n_transfers, b->n_transfers);
    cr_assert_eq(a->oom, b->oom);
    for (int d = 0; d < nd; d++) {
        cr_assert_eq(a->peak_mem[d], b->peak_mem[d], "peak of device %d", d);
        cr_assert_eq(a->busy_us[d], b->busy_us[d]);
    }
    for (int c = 0; c < n_chan; c++)
        cr_assert_eq(a->chan_bytes[c], b->chan_bytes[c]);
}

Test(incremental, moves_evaluate_exactly_like_full_runs)
{
    uint64_t seed = 2024;
    for (int round = 0; round < 25; round++) {
        int n = 30 + (int)(tk_rand(&seed) % 150), nd = 2 + (int)(tk_rand(&seed) % 3);
        tk_problem tp;
        tk_bind(&tp, tk_random_dag(n, 0.06, seed), tk_cluster(nd, 4, 0.0005, (int64_t)1 << 40));
        op_error err = {0};
        op_sim *inc = op_sim_new(&tp.p, &err), *full = op_sim_new(&tp.p, &err);
        op_sim_result base_r, a, b;
        op_sim_result_init(&base_r, &tp.p, &err);
        op_sim_result_init(&a, &tp.p, &err);
        op_sim_result_init(&b, &tp.p, &err);
        op_placement base, cand;
        op_placement_init(&base, n, nd, &err);
        op_placement_init(&cand, n, nd, &err);
        for (int i = 0; i < n; i++)
            base.device_of[i] = (int)(tk_rand(&seed) % (uint64_t)nd);
        cr_assert_eq(op_sim_record(inc, &base, 8, &base_r, &err), OP_OK, "%s", err.msg);
        op_sim_run(full, &base, &a, NULL, &err);
        expect_same(&base_r, &a, nd, tp.c->n_chan);
        for (int move = 0; move < 20; move++) {
            memcpy(cand.device_of, base.device_of, (size_t)n * sizeof(int));
            int k = 1 + (int)(tk_rand(&seed) % 3);
            for (int j = 0; j < k; j++)
                cand.device_of[tk_rand(&seed) % (uint64_t)n] = (int)(tk_rand(&seed) % (uint64_t)nd);
            cr_assert_eq(op_sim_run_changed(inc, &cand, &a, &err), OP_OK, "%s", err.msg);
            cr_assert_eq(op_sim_run(full, &cand, &b, NULL, &err), OP_OK);
            expect_same(&a, &b, nd, tp.c->n_chan);
        }
        op_placement_destroy(&base);
        op_placement_destroy(&cand);
        op_sim_result_destroy(&base_r);
        op_sim_result_destroy(&a);
        op_sim_result_destroy(&b);
        op_sim_free(inc);
        op_sim_free(full);
        tk_unbind(&tp);
    }
}

Test(incremental, parameters_of_moved_ops_follow_them)
{
    op_graph_builder *bld = op_graph_builder_new("params", NULL);
    int a = tk_op(bld, "a", 10, 100);
    int w = tk_op_full(bld, &(op_op_spec){.name = "w", .time_us = 5, .param_bytes = 5000});
    tk_edge(bld, a, w, -1);
    tk_problem tp;
    tk_bind(&tp, tk_finish(bld), tk_cluster(2, 1, 0.001, 4000));
    op_error err = {0};
    op_sim *s = op_sim_new(&tp.p, &err);
    op_sim_result r, full;
    op_sim_result_init(&r, &tp.p, &err);
    op_sim_result_init(&full, &tp.p, &err);
    op_placement pl;
    op_placement_init(&pl, 2, 2, &err);
    op_sim_record(s, &pl, 4, &r, &err);
    cr_expect_eq(r.oom, 1); /* 5000 bytes of parameters on a 4000-byte device */
    pl.device_of[w] = 1;
    op_sim_run_changed(s, &pl, &r, &err);
    op_simulate(&tp.p, &pl, &full, NULL, &err);
    cr_expect_eq(r.peak_mem[0], full.peak_mem[0]);
    cr_expect_eq(r.peak_mem[1], full.peak_mem[1]);
    cr_expect_eq(r.peak_mem[1], 5000 + 100);
    op_placement_destroy(&pl);
    op_sim_result_destroy(&r);
    op_sim_result_destroy(&full);
    op_sim_free(s);
    tk_unbind(&tp);
}
