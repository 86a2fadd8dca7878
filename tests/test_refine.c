/*
 * test_refine.c - local refinement (first-ready-first and judged by a
 * priority order) and the `auto` portfolio.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/placer.h"
#include "opplace/search.h"
#include "opplace/simulate.h"
#include "testkit.h"

static double simulate_pl(const op_problem *p, const op_placement *pl, int *oom)
{
    op_sim_result r;
    op_error err = {0};
    op_sim_result_init(&r, p, &err);
    cr_assert_eq(op_simulate(p, pl, &r, NULL, &err), OP_OK, "%s", err.msg);
    double s = r.step_time_us;
    if (oom)
        *oom = r.oom;
    op_sim_result_destroy(&r);
    return s;
}

/* Two independent heavy chains and costly links: the optimum puts one chain
 * on each device. */
static op_graph *two_chains(void)
{
    op_graph_builder *b = op_graph_builder_new("chains", NULL);
    char name[16];
    int prev[2] = {-1, -1};
    for (int k = 0; k < 10; k++)
        for (int c = 0; c < 2; c++) {
            snprintf(name, sizeof name, "c%d_%d", c, k);
            int v = tk_op(b, name, 10, 1000);
            if (prev[c] >= 0)
                tk_edge(b, prev[c], v, -1);
            prev[c] = v;
        }
    return tk_finish(b);
}

Test(refine, finds_the_one_chain_per_device_optimum)
{
    tk_problem tp;
    tk_bind(&tp, two_chains(), tk_cluster(2, 50, 0.1, (int64_t)1 << 40));
    op_placement pl;
    op_error err = {0};
    op_placement_init(&pl, tp.p.n, 2, &err); /* all on device 0: 200 us */
    op_place_ctx ctx = {.p = &tp.p, .seed = 3};
    op_refine_opts o = {.max_iterations = 4000, .seed = 3};
    op_refine_stats st;
    cr_assert_eq(op_refine(&ctx, &o, &pl, &st, &err), OP_OK, "%s", err.msg);
    cr_expect_float_eq(simulate_pl(&tp.p, &pl, NULL), 100.0, 1e-9);
    cr_expect_float_eq(st.final_us, 100.0, 1e-9);
    cr_expect_float_eq(st.initial_us, 200.0, 1e-9);
    /* 100 us is the critical path, the trivial bound: it stopped there */
    cr_expect_lt(st.tried, 4000, "tried %ld candidates past the proven optimum", st.tried);
    op_placement_destroy(&pl);
    tk_unbind(&tp);
}

static int stop_after(void *arg)
{
    int *left = arg;
    return (*left)-- <= 0;
}

/* The stop predicate ends the search between candidates: asked before
 * each one, it stops after 25 (the iteration limit alone would allow 4000;
 * without it the start of finds_the_one_chain_per_device_optimum shows
 * the search running on).  The proven bound is taken away: the search
 * would otherwise stop at the 100 us optimum on its own. */
Test(refine, stop_predicate_ends_the_search)
{
    tk_problem tp;
    tk_bind(&tp, two_chains(), tk_cluster(2, 50, 0.1, (int64_t)1 << 40));
    tp.p.proven_bound_us = 0;
    op_placement pl;
    op_error err = {0};
    op_placement_init(&pl, tp.p.n, 2, &err);
    op_place_ctx ctx = {.p = &tp.p, .seed = 3};
    int left = 25;
    op_refine_opts o = {.max_iterations = 4000, .seed = 3, .stop = stop_after, .stop_arg = &left};
    op_refine_stats st;
    cr_assert_eq(op_refine(&ctx, &o, &pl, &st, &err), OP_OK, "%s", err.msg);
    cr_expect_leq(st.tried, 25);
    cr_expect_eq(left, -1, "asked %d times", 25 - left);
    cr_expect_float_eq(simulate_pl(&tp.p, &pl, NULL), st.final_us, 1e-9);
    op_placement_destroy(&pl);
    tk_unbind(&tp);
}

Test(refine, never_worse_and_deterministic)
{
    uint64_t seed = 99;
    for (int round = 0; round < 12; round++) {
        int n = 20 + (int)(tk_rand(&seed) % 60), nd = 2 + (int)(tk_rand(&seed) % 3);
        tk_problem tp;
        tk_bind(&tp, tk_random_dag(n, 0.08, seed), tk_cluster(nd, 5, 0.0002, (int64_t)1 << 40));
        op_error err = {0};
        op_placement a, b;
        op_placement_init(&a, n, nd, &err);
        op_placement_init(&b, n, nd, &err);
        for (int i = 0; i < n; i++)
            a.device_of[i] = b.device_of[i] = (int)(tk_rand(&seed) % (uint64_t)nd);
        double before = simulate_pl(&tp.p, &a, NULL);
        op_place_ctx ctx = {.p = &tp.p};
        op_refine_opts o = {.max_iterations = 300, .seed = 11};
        op_refine_stats sa, sb;
        cr_assert_eq(op_refine(&ctx, &o, &a, &sa, &err), OP_OK);
        cr_assert_eq(op_refine(&ctx, &o, &b, &sb, &err), OP_OK);
        double after = simulate_pl(&tp.p, &a, NULL);
        cr_expect_leq(after, before);
        cr_expect_eq(after, sa.final_us);
        cr_expect_eq(memcmp(a.device_of, b.device_of, (size_t)n * sizeof(int)), 0);
        op_placement_destroy(&a);
        op_placement_destroy(&b);
        tk_unbind(&tp);
    }
}

Test(refine, moves_out_of_memory_when_it_can)
{
    op_graph_builder *b = op_graph_builder_new("mem", NULL);
    for (int i = 0; i < 6; i++) {
        char name[16];
        snprintf(name, sizeof name, "w%d", i);
        tk_op_full(b, &(op_op_spec){.name = name, .time_us = 1, .param_bytes = 400});
    }
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(3, 1, 0, 1000)); /* 2400 bytes, 3 x 1000 */
    op_error err = {0};
    op_placement pl;
    op_placement_init(&pl, 6, 3, &err);
    int oom;
    simulate_pl(&tp.p, &pl, &oom);
    cr_assert_eq(oom, 1);
    op_place_ctx ctx = {.p = &tp.p};
    op_refine_opts o = {.max_iterations = 2000, .seed = 5};
    cr_assert_eq(op_refine(&ctx, &o, &pl, NULL, &err), OP_OK);
    simulate_pl(&tp.p, &pl, &oom);
    cr_expect_eq(oom, 0);
    op_placement_destroy(&pl);
    tk_unbind(&tp);
}

Test(refine, colocation_groups_move_together)
{
    op_graph_builder *b = op_graph_builder_new("coloc", NULL);
    int prev = -1;
    for (int i = 0; i < 12; i++) {
        char name[16];
        snprintf(name, sizeof name, "o%d", i);
        int v = tk_op_full(b, &(op_op_spec){.name = name, .time_us = 5 + i,
                                             .colocate = i % 3 == 0 ? "g" : NULL});
        if (prev >= 0 && i % 2)
            tk_edge(b, prev, v, 10);
        prev = v;
    }
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(3, 1, 0.01, (int64_t)1 << 40));
    op_error err = {0};
    op_placement pl;
    op_placement_init(&pl, 12, 3, &err);
    op_place_ctx ctx = {.p = &tp.p};
    op_refine_opts o = {.max_iterations = 1000, .seed = 1};
    cr_assert_eq(op_refine(&ctx, &o, &pl, NULL, &err), OP_OK);
    cr_expect_eq(op_problem_check_placement(&tp.p, &pl, &err), OP_OK, "%s", err.msg);
    cr_expect_eq(pl.device_of[0], pl.device_of[3]);
    cr_expect_eq(pl.device_of[3], pl.device_of[9]);
    op_placement_destroy(&pl);
    tk_unbind(&tp);
}

static int64_t largest_peak(const op_problem *p, const op_placement *pl)
{
    op_sim_result r;
    op_error err = {0};
    op_sim_result_init(&r, p, &err);
    cr_assert_eq(op_simulate(p, pl, &r, NULL, &err), OP_OK, "%s", err.msg);
    int64_t m = 0;
    for (int d = 0; d < p->nd; d++)
        m = r.peak_mem[d] > m ? r.peak_mem[d] : m;
    op_sim_result_destroy(&r);
    return m;
}

/* Refine pl judged by the order op_placement_reorder gives it (if any);
 * returns 0 when no order beat first-ready-first. */
static int refine_by_its_order(const op_problem *p, op_placement *pl, long iters, int keep_peak,
                               op_refine_stats *st)
{
    op_error err = {0};
    op_reorder_stats rs;
    cr_assert_eq(op_placement_reorder(p, pl, keep_peak, &rs, &err), OP_OK, "%s", err.msg);
    if (rs.priority == OP_PRIORITY_FIFO)
        return 0;
    int64_t cap[8];
    op_reorder_caps(p, &rs, cap);
    op_place_ctx ctx = {.p = p};
    op_refine_opts o = {.max_iterations = iters, .seed = 7, .order = rs.priority,
                        .order_cap = cap, .max_peak = keep_peak ? rs.initial_peak : 0};
    cr_assert_eq(op_refine(&ctx, &o, pl, st, &err), OP_OK, "%s", err.msg);
    return 1;
}

/* Judged by an order: never worse than the ordered start, the result is
 * returned with the order it was judged by (it simulates to the reported
 * step), valid, and the same for the same seed; with a peak limit the
 * largest device peak never rises above the start's first-ready-first one. */
Test(refine, judged_by_an_order_never_worse_and_returns_that_order)
{
    uint64_t seed = 5;
    int ordered = 0, improved = 0;
    for (int round = 0; round < 16; round++) {
        int n = 30 + (int)(tk_rand(&seed) % 50), nd = 2 + (int)(tk_rand(&seed) % 3);
        int keep_peak = round % 2;
        tk_problem tp;
        tk_bind(&tp, tk_random_dag(n, 0.08, seed), tk_cluster(nd, 5, 0.002, (int64_t)1 << 40));
        op_error err = {0};
        op_placement a, b;
        op_placement_init(&a, n, nd, &err);
        for (int i = 0; i < n; i++)
            a.device_of[i] = (int)(tk_rand(&seed) % (uint64_t)nd);
        int64_t fifo_peak = largest_peak(&tp.p, &a);
        cr_assert_eq(op_placement_copy(&b, &a, &err), OP_OK);
        op_refine_stats sa, sb;
        if (!refine_by_its_order(&tp.p, &a, 400, keep_peak, &sa)) {
            op_placement_destroy(&a);
            op_placement_destroy(&b);
            tk_unbind(&tp);
            continue;
        }
        ordered++;
        cr_assert(refine_by_its_order(&tp.p, &b, 400, keep_peak, &sb));
        double after = simulate_pl(&tp.p, &a, NULL);
        cr_expect_eq(after, sa.final_us, "round %d: the simulator is the judge", round);
        cr_expect_leq(sa.final_us, sa.initial_us, "round %d", round);
        cr_expect(a.has_order, "round %d: an ordered start stays ordered", round);
        cr_expect_eq(op_problem_check_placement(&tp.p, &a, &err), OP_OK, "%s", err.msg);
        cr_expect_arr_eq(a.device_of, b.device_of, sizeof(int) * (size_t)n);
        cr_expect_arr_eq(a.order, b.order, sizeof(int) * (size_t)n);
        if (keep_peak)
            cr_expect_leq(largest_peak(&tp.p, &a), fifo_peak, "round %d: peak rose", round);
        improved += sa.final_us < sa.initial_us;
        op_placement_destroy(&a);
        op_placement_destroy(&b);
        tk_unbind(&tp);
    }
    cr_expect_geq(ordered, 4, "too few random placements got an order (%d)", ordered);
    cr_expect_geq(improved, 1, "refinement by the order never moved anything");
}

/* `place --order fit --refine`: refinement judged by the chosen order is
 * never slower than the order alone, and its written placement simulates
 * to the printed step. */
Test(refine, cli_refines_judged_by_the_chosen_order)
{
    const char *dir = tk_tmpdir();
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s zoo rnnlm --layers 2 --seq-len 8 --hidden 256 -o %s/g.json",
             OPPLACE_BIN, dir);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s place %s/g.json --preset v100-nvlink --gpus 2 --algo expert "
             "--json --order fit 2>/dev/null", OPPLACE_BIN, dir);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    double ordered = tk_json_number(out, "step_time_us");
    free(out);
    snprintf(cmd, sizeof cmd, "%s place %s/g.json --preset v100-nvlink --gpus 2 --algo expert "
             "--json --order fit --refine --refine-iters 300 -o %s/p.json", OPPLACE_BIN, dir,
             dir);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    double refined = tk_json_number(out, "step_time_us");
    cr_expect(strstr(out, "refine by the order") != NULL, "not judged by the order: %s", out);
    free(out);
    cr_expect_leq(refined, ordered);
    snprintf(cmd, sizeof cmd, "%s simulate %s/g.json --preset v100-nvlink --gpus 2 --placement "
             "%s/p.json --json", OPPLACE_BIN, dir, dir);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    cr_expect_eq(tk_json_number(out, "step_time_us"), refined);
    free(out);
}

/* auto --refine-seconds 0 skips its refinement (even with --refine-iters),
 * and refinement never makes auto's answer slower. */
Test(auto_placer, refine_seconds_zero_skips_refinement)
{
    const char *dir = tk_tmpdir();
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s zoo rnnlm --layers 2 --seq-len 8 --hidden 256 -o %s/ga.json",
             OPPLACE_BIN, dir);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    free(out);
    double step[2];
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "%s place %s/ga.json --preset v100-nvlink --gpus 2 --algo auto "
                 "--budget-seconds 5 --refine-iters 200 %s --quiet "
                 "-o %s/pa.json > /dev/null && grep '\"algorithm\"' %s/pa.json && "
                 "%s simulate %s/ga.json --preset v100-nvlink --gpus 2 --placement %s/pa.json "
                 "--json", OPPLACE_BIN, dir, k ? "" : "--refine-seconds 0", dir, dir,
                 OPPLACE_BIN, dir, dir);
        cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
        if (k == 0)
            cr_expect(strstr(out, "refine") == NULL, "refined anyway: %s", out);
        step[k] = tk_json_number(out, "step_time_us");
        free(out);
    }
    cr_expect_leq(step[1], step[0]);
}

Test(auto_placer, at_least_as_good_as_every_fast_placer)
{
    const op_placer *autop = op_placer_find("auto");
    cr_assert(autop);
    for (uint64_t seed = 1; seed <= 4; seed++) {
        tk_problem tp;
        tk_bind(&tp, tk_random_dag(60, 0.07, seed), tk_cluster(3, 10, 0.0005, (int64_t)1 << 40));
        op_error err = {0};
        op_place_ctx ctx = {.p = &tp.p, .seed = 1, .budget_seconds = 1.0, .best_effort = 1};
        op_placement best;
        cr_assert_eq(op_place(autop, &ctx, &best, &err), OP_OK, "%s", err.msg);
        double auto_step = simulate_pl(&tp.p, &best, NULL);
        cr_expect(strncmp(best.algorithm, "auto:", 5) == 0, "%s", best.algorithm);
        int n;
        const op_placer *const *all = op_placers(&n);
        for (int i = 0; i < n; i++) {
            if (all[i]->slow || all[i] == autop)
                continue;
            op_placement pl;
            op_error perr = {0};
            if (op_place(all[i], &ctx, &pl, &perr) != OP_OK)
                continue;
            int oom;
            double s = simulate_pl(&tp.p, &pl, &oom);
            if (!oom)
                cr_expect_leq(auto_step, s + 1e-9, "auto %.3f worse than %s %.3f", auto_step,
                              all[i]->name, s);
            /* and than the placer with its best execution order (auto
             * reorders every result within the first half of its budget,
             * a few ms here) */
            op_reorder_stats rs;
            cr_assert_eq(op_placement_reorder(&tp.p, &pl, 0, &rs, &err), OP_OK);
            if (rs.final_over == 0)
                cr_expect_leq(auto_step, rs.final_us + 1e-9, "auto %.3f worse than %s+order %.3f",
                              auto_step, all[i]->name, rs.final_us);
            op_placement_destroy(&pl);
        }
        op_placement_destroy(&best);
        tk_unbind(&tp);
    }
}
