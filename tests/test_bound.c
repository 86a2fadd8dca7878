/*
 * test_bound.c - opplace/bound.h: the lower bound is never above the true
 * optimum (exhaustive search over every placement and every order on tiny
 * graphs, judged by the simulator) and never below the trivial bound; and
 * on these graphs the ILP stage proves more than the trivial bound.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/bound.h"
#include "opplace/simulate.h"
#include "placers/pesto/pesto_lns.h"
#include "testkit.h"

Test(bound, never_above_the_exhaustive_optimum_never_below_trivial)
{
    int tighter = 0, room = 0;
    for (uint64_t seed = 1; seed <= 10; seed++) {
        int n = 4 + (int)(seed % 3), nd = seed % 4 == 0 ? 3 : 2;
        if (nd == 3 && n > 5)
            n = 5;
        tk_problem tp;
        /* 100 kB tensors at 1e-4 us/byte: 10 us transfers against 1-100 us ops */
        tk_bind(&tp, tk_random_dag(n, 0.25, seed), tk_cluster(nd, 5, 1e-4, 1LL << 40));
        double opt = tk_brute_optimum(&tp.p);
        op_bound b;
        op_error err = {0};
        cr_assert_eq(op_lower_bound(&tp.p, 20, &b, &err), OP_OK, "%s", err.msg);
        cr_assert_leq(b.lower_bound_us, opt * (1 + 1e-9) + 1e-6,
                      "seed %llu: bound %.6f (%s) above the optimum %.6f",
                      (unsigned long long)seed, b.lower_bound_us, b.method, opt);
        cr_assert_geq(b.lower_bound_us, tp.p.lower_bound_us * (1 - 1e-12),
                      "seed %llu: bound %.6f below the trivial %.6f", (unsigned long long)seed,
                      b.lower_bound_us, tp.p.lower_bound_us);
        cr_assert_leq(b.energetic_us, opt * (1 + 1e-9) + 1e-6);
        cr_assert_leq(b.transfer_us, opt * (1 + 1e-9) + 1e-6, "seed %llu: transfer %.6f above "
                      "the optimum %.6f", (unsigned long long)seed, b.transfer_us, opt);
        cr_assert_leq(b.lp_us, opt * (1 + 1e-9) + 1e-6);
        cr_assert_leq(b.ilp_us, opt * (1 + 1e-9) + 1e-6);
        cr_log_info("seed %llu n %d nd %d: opt %.3f trivial %.3f energetic %.3f lp %.3f ilp %.3f", (unsigned long long)seed, n, nd, opt, tp.p.lower_bound_us, b.energetic_us, b.lp_us, b.ilp_us);
        if (opt > tp.p.lower_bound_us * (1 + 1e-6)) { /* the trivial bound is not tight */
            room++;
            tighter += b.lower_bound_us > tp.p.lower_bound_us * (1 + 1e-6);
        }
        tk_unbind(&tp);
    }
    /* wherever transfers or integrality put the optimum above max(critical
     * path, work / devices), the bound proves more than the trivial one */
    cr_assert_gt(room, 0, "no graph where the trivial bound is loose: the test tests nothing");
    cr_assert_eq(tighter, room, "tighter than trivial on only %d of %d graphs", tighter, room);
}

/* A random DAG of n ops where each op is, by chance, in group "g0" (half),
 * "g1" (a quarter) or none: colocation groups of 1-6 members. */
static op_graph *grouped_dag(int n, double p, uint64_t seed)
{
    op_graph_builder *b = op_graph_builder_new("grouped", NULL);
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "v%d", i);
        uint64_t r = tk_rand(&seed) % 4;
        op_op_spec s = {.name = name, .time_us = 1 + (double)(tk_rand(&seed) % 100),
                        .output_bytes = (int64_t)(tk_rand(&seed) % 100000),
                        .colocate = r < 2 ? "g0" : r == 2 ? "g1" : NULL};
        tk_op_full(b, &s);
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if ((double)(tk_rand(&seed) % 1000000) < p * 1e6)
                tk_edge(b, i, j, -1);
    return tk_finish(b);
}

/* The one-machine bound (and every other method) against exhaustive search
 * on graphs with colocation groups; it must prove more than the trivial
 * bound on some of them, or the test tests nothing. */
Test(bound, one_machine_never_above_the_exhaustive_optimum_with_colocation_groups)
{
    int tighter = 0;
    for (uint64_t seed = 1; seed <= 16; seed++) {
        int n = 4 + (int)(seed % 3), nd = seed % 4 == 0 ? 3 : 2;
        if (nd == 3 && n > 5)
            n = 5;
        tk_problem tp;
        tk_bind(&tp, grouped_dag(n, seed % 2 ? 0.2 : 0.4, seed),
                tk_cluster(nd, 5, 1e-4, 1LL << 40));
        double opt = tk_brute_optimum(&tp.p);
        op_bound q, b;
        op_error err = {0};
        cr_assert_eq(op_lower_bound_quick(&tp.p, &q, &err), OP_OK, "%s", err.msg);
        cr_assert_eq(op_lower_bound(&tp.p, 20, &b, &err), OP_OK, "%s", err.msg);
        cr_log_info("seed %llu n %d nd %d groups %d: opt %.3f trivial %.3f one-machine %.3f "
                    "transfer %.3f lp %.3f ilp %.3f", (unsigned long long)seed, n, nd,
                    tp.p.n_groups, opt, tp.p.lower_bound_us, q.one_machine_us, q.transfer_us,
                    b.lp_us, b.ilp_us);
        cr_assert_leq(q.one_machine_us, opt * (1 + 1e-9) + 1e-6,
                      "seed %llu: one-machine %.6f above the optimum %.6f",
                      (unsigned long long)seed, q.one_machine_us, opt);
        cr_assert_leq(q.transfer_us, opt * (1 + 1e-9) + 1e-6,
                      "seed %llu: transfer %.6f above the optimum %.6f",
                      (unsigned long long)seed, q.transfer_us, opt);
        cr_assert_geq(q.transfer_us, q.one_machine_us);
        cr_assert_float_eq(b.one_machine_us, q.one_machine_us, 1e-9);
        cr_assert_leq(b.lower_bound_us, opt * (1 + 1e-9) + 1e-6,
                      "seed %llu: bound %.6f (%s) above the optimum %.6f",
                      (unsigned long long)seed, b.lower_bound_us, b.method, opt);
        cr_assert_geq(q.lower_bound_us, tp.p.lower_bound_us * (1 - 1e-12));
        tighter += q.one_machine_us > tp.p.lower_bound_us * (1 + 1e-6);
        tk_unbind(&tp);
    }
    cr_assert_geq(tighter, 3, "one-machine beat the trivial bound on only %d graphs", tighter);
}

/* By hand: a and b (30 us each, independent) in one group, c (10 us) after
 * both, on two devices.  Trivial: max(path 40, work 70 / 2) = 40; a and b
 * share a device one at a time, so c starts at 60 at the earliest: 70,
 * which is the optimum (all three on one device). */
Test(bound, one_machine_serialises_a_colocation_group)
{
    op_graph_builder *gb = op_graph_builder_new("group", NULL);
    int a = tk_op_full(gb, &(op_op_spec){.name = "a", .time_us = 30, .output_bytes = 100,
                                          .colocate = "g"});
    int b = tk_op_full(gb, &(op_op_spec){.name = "b", .time_us = 30, .output_bytes = 100,
                                          .colocate = "g"});
    int c = tk_op(gb, "c", 10, 100);
    tk_edge(gb, a, c, 100);
    tk_edge(gb, b, c, 100);
    tk_problem tp;
    tk_bind(&tp, tk_finish(gb), tk_cluster(2, 5, 1e-4, 1LL << 40));
    cr_assert_float_eq(tp.p.lower_bound_us, 40, 1e-9);
    op_bound q;
    op_error err = {0};
    cr_assert_eq(op_lower_bound_quick(&tp.p, &q, &err), OP_OK, "%s", err.msg);
    cr_assert_float_eq(q.one_machine_us, 70, 1e-9);
    cr_assert_float_eq(q.lower_bound_us, 70, 1e-9);
    cr_assert_str_eq(q.method, "one-machine");
    cr_assert_float_eq(tk_brute_optimum(&tp.p), 70, 1e-9);
    tk_unbind(&tp);
}

/* Jackson's preemptive bound by hand: x (10 us) before a (10 us); a, b (50
 * us) and c (20 us) in one group; a before y (40 us).  Every path is at
 * most 60 us and work 130 / 2 = 65.  On the group's device a cannot start
 * before 10 and y needs 40 after it; b and c need 70 of the device.  The
 * preemptive schedule runs b from 0, a at 10-20 (y could end at 60), then
 * b and c to 80: bound 80 (no subset {head >= h} gives more: 0 + 80 for
 * all, 10 + 10 + 40 for a).  The optimum reaches it: x on d1, c, a, b on
 * d0 (a at 20-30 after x's 5.01 us transfer), y on d1 at 35.01-75.01. */
Test(bound, one_machine_jackson_preemptive_bound_by_hand)
{
    op_graph_builder *gb = op_graph_builder_new("jackson", NULL);
    int x = tk_op(gb, "x", 10, 100);
    int a = tk_op_full(gb, &(op_op_spec){.name = "a", .time_us = 10, .output_bytes = 100,
                                          .colocate = "g"});
    tk_op_full(gb, &(op_op_spec){.name = "b", .time_us = 50, .output_bytes = 100,
                                  .colocate = "g"});
    tk_op_full(gb, &(op_op_spec){.name = "c", .time_us = 20, .output_bytes = 100,
                                  .colocate = "g"});
    int y = tk_op(gb, "y", 40, 100);
    tk_edge(gb, x, a, 100);
    tk_edge(gb, a, y, 100);
    tk_problem tp;
    tk_bind(&tp, tk_finish(gb), tk_cluster(2, 5, 1e-4, 1LL << 40));
    cr_assert_float_eq(tp.p.lower_bound_us, 65, 1e-9);
    op_bound q;
    op_error err = {0};
    cr_assert_eq(op_lower_bound_quick(&tp.p, &q, &err), OP_OK, "%s", err.msg);
    cr_assert_float_eq(q.one_machine_us, 80, 1e-9, "one-machine %.6f", q.one_machine_us);
    cr_assert_float_eq(tk_brute_optimum(&tp.p), 80, 1e-9);
    tk_unbind(&tp);
}

/* The transfer rule against exhaustive search where transfers matter:
 * random DAGs whose tensors (up to 100 kB at 1e-3 us/byte) take up to 100
 * us to send, as long as the ops; it must beat one-machine on some. */
Test(bound, transfer_never_above_the_exhaustive_optimum)
{
    int tighter = 0;
    for (uint64_t seed = 21; seed <= 36; seed++) {
        int n = 4 + (int)(seed % 3), nd = seed % 4 == 0 ? 3 : 2;
        if (nd == 3 && n > 5)
            n = 5;
        tk_problem tp;
        tk_bind(&tp, seed % 2 ? tk_random_dag(n, 0.45, seed) : grouped_dag(n, 0.45, seed),
                tk_cluster(nd, 5, 1e-3, 1LL << 40));
        double opt = tk_brute_optimum(&tp.p);
        op_bound q;
        op_error err = {0};
        cr_assert_eq(op_lower_bound_quick(&tp.p, &q, &err), OP_OK, "%s", err.msg);
        cr_log_info("seed %llu n %d nd %d: opt %.3f trivial %.3f one-machine %.3f transfer %.3f",
                    (unsigned long long)seed, n, nd, opt, tp.p.lower_bound_us, q.one_machine_us,
                    q.transfer_us);
        cr_assert_leq(q.transfer_us, opt * (1 + 1e-9) + 1e-6,
                      "seed %llu: transfer %.6f above the optimum %.6f",
                      (unsigned long long)seed, q.transfer_us, opt);
        tighter += q.transfer_us > q.one_machine_us * (1 + 1e-6);
        tk_unbind(&tp);
    }
    cr_assert_geq(tighter, 3, "transfer beat one-machine on only %d graphs", tighter);
}

/* The transfer rule by hand: root (10 us) -> a, b (100 us each) -> sink
 * (10 us), 450 kB tensors (5 + 45 = 50 us transfers), two devices.
 * Trivial: max(path 120, work 220 / 2) = 120.  At sink, a and b both
 * local run one at a time (10 + 200 = 210), one of them remote arrives at
 * 10 + 100 + 50 = 160 at the earliest: head(sink) >= 160, bound 170,
 * which is the optimum: root and a on d0, b and sink on d1 (b's input
 * arrives at 60, b ends at 160 as a's tensor arrives). */
Test(bound, transfer_rule_at_a_join_by_hand)
{
    op_graph_builder *gb = op_graph_builder_new("join", NULL);
    int root = tk_op(gb, "root", 10, 450000), a = tk_op(gb, "a", 100, 450000);
    int b = tk_op(gb, "b", 100, 450000), sink = tk_op(gb, "sink", 10, 100);
    tk_edge(gb, root, a, 450000);
    tk_edge(gb, root, b, 450000);
    tk_edge(gb, a, sink, 450000);
    tk_edge(gb, b, sink, 450000);
    tk_problem tp;
    tk_bind(&tp, tk_finish(gb), tk_cluster(2, 5, 1e-4, 1LL << 40));
    cr_assert_float_eq(tp.p.lower_bound_us, 120, 1e-9);
    op_bound q;
    op_error err = {0};
    cr_assert_eq(op_lower_bound_quick(&tp.p, &q, &err), OP_OK, "%s", err.msg);
    cr_assert_float_eq(q.one_machine_us, 120, 1e-9, "one-machine %.6f", q.one_machine_us);
    cr_assert_float_eq(q.transfer_us, 170, 1e-6, "transfer %.6f", q.transfer_us);
    cr_assert_str_eq(q.method, "transfer");
    cr_assert_float_eq(tk_brute_optimum(&tp.p), 170, 1e-9);
    tk_unbind(&tp);
}

/* A hand-computed case: two independent 100 us ops and a 10 us op on two
 * devices.  Trivial: max(100, 210 / 2) = 105; no schedule beats 110 (the
 * two long ops apart, the short one after one of them), and the ILP proves
 * it. */
Test(bound, ilp_proves_the_integral_optimum)
{
    op_error err = {0};
    op_graph_builder *gb = op_graph_builder_new("three", &err);
    tk_op(gb, "a", 100, 0);
    tk_op(gb, "b", 100, 0);
    tk_op(gb, "c", 10, 0);
    tk_problem tp;
    tk_bind(&tp, tk_finish(gb), tk_cluster(2, 5, 1e-4, 1LL << 40));
    cr_assert_float_eq(tp.p.lower_bound_us, 105, 1e-9);
    op_bound b;
    cr_assert_eq(op_lower_bound(&tp.p, 20, &b, &err), OP_OK, "%s", err.msg);
    cr_assert_float_eq(b.lower_bound_us, 110, 1e-3, "bound %.6f (%s)", b.lower_bound_us,
                       b.method);
    cr_assert_str_eq(b.method, "ilp");
    cr_assert_float_eq(tk_brute_optimum(&tp.p), 110, 1e-9);
    tk_unbind(&tp);
}

/* Pesto's LNS against brute force: with one window freeing every op of a
 * two-device graph, the window's ILP is the whole problem, so the LNS must
 * reach the exhaustive optimum from a bad incumbent, and (no two transfers
 * share a channel at one time here) the ILP's objective must be the
 * simulated step of the placement it returns. */
static void lns_to_optimum(tk_problem *tp, double want_gain)
{
    op_error err = {0};
    op_placement pl;
    cr_assert_eq(op_placement_init(&pl, tp->p.n, tp->p.nd, &err), OP_OK); /* all on d0 */
    op_sim *sim = op_sim_new(&tp->p, &err);
    op_sim_result r;
    cr_assert_eq(op_sim_result_init(&r, &tp->p, &err), OP_OK);
    cr_assert_eq(op_sim_run(sim, &pl, &r, NULL, &err), OP_OK);
    double before = r.step_time_us, opt = tk_brute_optimum(&tp->p);
    cr_assert_gt(before, opt + want_gain, "the incumbent %.3f is already near the optimum %.3f",
                 before, opt);
    op_place_ctx ctx = {.p = &tp->p, .seed = 1};
    pesto_lns_opts o;
    pesto_lns_default_opts(&o);
    o.min_window = o.max_window = tp->p.n;
    o.window_seconds = 30;
    o.deadline = op_seconds_now() + 120;
    o.max_windows = 1;
    pesto_lns_stats s;
    double step = before, over = 0;
    cr_assert_eq(pesto_lns(&ctx, sim, &o, &pl, &step, &over, &s, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(s.windows, 1);
    cr_assert_eq(s.optimal, 1);
    cr_assert_float_eq(step, opt, 1e-3, "LNS %.6f, exhaustive optimum %.6f", step, opt);
    cr_assert_float_eq(s.model_us, s.sim_us, 1e-3, "window ILP %.6f, simulated %.6f", s.model_us,
                       s.sim_us);
    cr_assert_eq(op_sim_run(sim, &pl, &r, NULL, &err), OP_OK);
    cr_assert_float_eq(r.step_time_us, step, 1e-9);
    op_sim_result_destroy(&r);
    op_sim_free(sim);
    op_placement_destroy(&pl);
}

/* root -> branches of 40, 30, 20, 10 us -> sink on two devices, 100-byte
 * tensors (5.1 us transfers); all on d0: 120 us. */
Test(bound, lns_window_reaches_the_exhaustive_optimum)
{
    op_graph_builder *b = op_graph_builder_new("fork4", NULL);
    int root = tk_op(b, "root", 10, 100), sink = tk_op(b, "sink", 10, 100);
    const double len[4] = {40, 30, 20, 10};
    for (int k = 0; k < 4; k++) {
        char name[16];
        snprintf(name, sizeof name, "b%d", k);
        int v = tk_op(b, name, len[k], 100);
        tk_edge(b, root, v, 100);
        tk_edge(b, v, sink, 100);
    }
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(2, 5, 1e-3, 1LL << 40));
    lns_to_optimum(&tp, 20);
    tk_unbind(&tp);
}

/* One transfer per (source op, destination device), of the largest edge
 * (formats.md 5.3).  a sends 100 B to b (100 us) and e (150 us) and 100 kB
 * (105 us on the link) to c (20 us).  A model with one transfer per edge
 * sees b and c on d1 finishing at 170 us (b starting after 5.1 us); the
 * simulator makes b wait for the one 100 kB transfer.  With that model the
 * LNS returned 250.1 us; the exhaustive optimum is 175.1 us.  The window
 * ILP must price transfers as the simulator does to reach it. */
Test(bound, lns_window_sends_one_transfer_per_source_and_device)
{
    op_graph_builder *b = op_graph_builder_new("fanout", NULL);
    int a = tk_op(b, "a", 10, 100000), z = tk_op(b, "z", 10, 100);
    int vb = tk_op(b, "b", 100, 100), vc = tk_op(b, "c", 20, 100), ve = tk_op(b, "e", 150, 100);
    tk_edge(b, a, vb, 100);
    tk_edge(b, a, vc, 100000);
    tk_edge(b, a, ve, 100);
    tk_edge(b, vb, z, 100);
    tk_edge(b, vc, z, 100);
    tk_edge(b, ve, z, 100);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(2, 5, 1e-3, 1LL << 40));
    lns_to_optimum(&tp, 100);
    tk_unbind(&tp);
}
