/*
 * test_proven.c - done when proven (issue 33): on a graph small enough for
 * the exact model, auto and pesto return the optimum (exhaustive search)
 * well under a second and say it is proven; every search stops once its
 * incumbent reaches the proven bound; the placement file states the bound
 * and the certified gap.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/bound.h"
#include "opplace/io.h"
#include "opplace/placer.h"
#include "opplace/search.h"
#include "testkit.h"

/* Six ops on two devices, 5 us + 1e-4 us/byte links:
 *   a (10 us) -> b (20) -> d (6) -> f (10);  a -> c (20) -> e (8) -> f
 * a, b, c send 100 kB (15 us on the link), d and e 1 kB (5.1 us).  On one
 * device: 74 us.  Critical path 48 us; trivial bound max(48, 74 / 2) = 48.
 * The optimum, 61 us: a c e on d0 (0-10, 10-30, 30-38; e's 1 kB reaches d1
 * at 43.1), b d f on d1 (b waits for a's tensor: 25-45, 45-51, 51-61).  A
 * chain that leaves a's device pays the 15 us transfer (10 + 15 + 20 + 6 +
 * 10 = 61); keeping b and c with a serialises 10 + 20 + 20 before d or e
 * (at least 66).  The exhaustive search below agrees. */
static op_graph *six(void)
{
    op_graph_builder *b = op_graph_builder_new("six", NULL);
    int a = tk_op(b, "a", 10, 100000), vb = tk_op(b, "b", 20, 100000);
    int c = tk_op(b, "c", 20, 100000), d = tk_op(b, "d", 6, 1000);
    int e = tk_op(b, "e", 8, 1000), f = tk_op(b, "f", 10, 1000);
    tk_edge(b, a, vb, -1);
    tk_edge(b, a, c, -1);
    tk_edge(b, vb, d, -1);
    tk_edge(b, c, e, -1);
    tk_edge(b, d, f, -1);
    tk_edge(b, e, f, -1);
    return tk_finish(b);
}

/* Wall-clock limits hold natively and under ASan; valgrind (bench/valgrind.sh)
 * runs every process, CBC's included, tens of times slower: there only the
 * answers are checked. */
static int timed(void)
{
    const char *pre = getenv("LD_PRELOAD");
    return !(pre && strstr(pre, "vgpreload"));
}

static void bind_six(tk_problem *tp)
{
    tk_bind(tp, six(), tk_cluster(2, 5, 1e-4, 1LL << 40));
}

Test(proven, the_six_op_graph_optimum_by_hand_and_by_exhaustive_search)
{
    tk_problem tp;
    bind_six(&tp);
    cr_assert_float_eq(tp.p.lower_bound_us, 48, 1e-9);
    double opt = tk_brute_optimum(&tp.p);
    int split[6] = {0, 1, 0, 1, 0, 1};
    double s = tk_step(&tp.p, split);
    cr_assert_float_eq(opt, 61, 1e-9, "opt %.6f split %.6f", opt, s);
    cr_assert_float_eq(s, 61, 1e-9);
    op_bound b;
    op_error err = {0};
    cr_assert_eq(op_problem_prove(&tp.p, 10, &b, &err), OP_OK, "%s", err.msg);
    cr_assert_float_eq(tp.p.proven_bound_us, 61, 61e-6, "proven %.6f (%s)", tp.p.proven_bound_us,
                       tp.p.proven_method);
    cr_assert_leq(tp.p.proven_bound_us, 61 * (1 + 1e-9));
    tk_unbind(&tp);
}

/* Run `name` on the six-op graph with a `budget` s budget; returns the
 * simulated step, *seconds the wall time. */
static double place(tk_problem *tp, const char *name, double budget, double *seconds,
                    char *algo, size_t cap)
{
    op_error err = {0};
    op_place_ctx ctx = {.p = &tp->p, .seed = 1, .budget_seconds = budget};
    ctx.deadline = op_seconds_now() + budget;
    op_placement pl;
    double t0 = op_seconds_now();
    cr_assert_eq(op_place(op_placer_find(name), &ctx, &pl, &err), OP_OK, "%s", err.msg);
    *seconds = op_seconds_now() - t0;
    snprintf(algo, cap, "%s", pl.algorithm ? pl.algorithm : "?");
    op_sim_result r; /* judged with its own order, if any */
    cr_assert_eq(op_sim_result_init(&r, &tp->p, &err), OP_OK);
    cr_assert_eq(op_simulate(&tp->p, &pl, &r, NULL, &err), OP_OK, "%s", err.msg);
    double step = r.step_time_us;
    op_sim_result_destroy(&r);
    op_placement_destroy(&pl);
    return step;
}

/* auto solves the graph exactly before searching; it needs no bound from
 * its caller (the exact stage proves its own, here 61 us where the trivial
 * bound is 48: no placer's answer could be called optimal without it). */
Test(proven, auto_returns_the_optimum_at_once)
{
    tk_problem tp;
    bind_six(&tp);
    double s;
    char algo[128];
    double step = place(&tp, "auto", 10, &s, algo, sizeof algo);
    cr_assert_float_eq(step, 61, 1e-9, "auto %.3f us (%s)", step, algo);
    if (timed())
        cr_assert_lt(s, 1.0, "auto took %.2f s of its 10 s on a proven optimum", s);
    cr_assert(strncmp(algo, "auto:", 5) == 0, "%s", algo); /* exact, or a placer at the bound */
    tk_unbind(&tp);
}

Test(proven, pesto_stops_at_the_proven_bound)
{
    tk_problem tp;
    bind_six(&tp);
    op_error err = {0};
    cr_assert_eq(op_problem_prove(&tp.p, 10, NULL, &err), OP_OK, "%s", err.msg);
    double s;
    char algo[128];
    double step = place(&tp, "pesto", 60, &s, algo, sizeof algo);
    cr_assert_float_eq(step, 61, 1e-9, "pesto %.3f us (%s)", step, algo);
    cr_assert(op_problem_at_bound(&tp.p, step, 0));
    if (timed())
        cr_assert_lt(s, 1.0, "pesto took %.2f s of its 60 s on a proven optimum", s);
    tk_unbind(&tp);
}

/* Refinement from the optimum with a 20 s budget returns at once, having
 * tried nothing; from a worse start it stops when it reaches the bound. */
Test(proven, refinement_stops_at_the_proven_bound)
{
    tk_problem tp;
    bind_six(&tp);
    op_error err = {0};
    cr_assert_eq(op_problem_prove(&tp.p, 10, NULL, &err), OP_OK, "%s", err.msg);
    op_place_ctx ctx = {.p = &tp.p, .seed = 1};
    op_placement pl;
    cr_assert_eq(op_placement_init(&pl, tp.p.n, tp.p.nd, &err), OP_OK);
    const int split[6] = {0, 1, 0, 1, 0, 1};
    memcpy(pl.device_of, split, sizeof split);
    op_refine_opts ro = {.budget_seconds = 20, .seed = 1};
    op_refine_stats rs;
    double t0 = op_seconds_now();
    cr_assert_eq(op_refine(&ctx, &ro, &pl, &rs, &err), OP_OK, "%s", err.msg);
    if (timed())
        cr_assert_lt(op_seconds_now() - t0, 1.0);
    cr_assert_eq(rs.tried, 0);
    cr_assert_float_eq(rs.final_us, 61, 1e-9);
    memset(pl.device_of, 0, sizeof split); /* all on d0: 74 us */
    t0 = op_seconds_now();
    cr_assert_eq(op_refine(&ctx, &ro, &pl, &rs, &err), OP_OK, "%s", err.msg);
    double took = op_seconds_now() - t0;
    cr_assert_float_eq(rs.initial_us, 74, 1e-9);
    if (rs.final_us <= 61 + 1e-6 && timed()) /* found the optimum: stopped there */
        cr_assert_lt(took, 19.0, "refinement reached the optimum and went on (%.1f s)", took);
    op_placement_destroy(&pl);
    tk_unbind(&tp);
}

/* The command: "optimal (proven)" in the printed output, the bound, its
 * method, the certified gap and proven_optimal in the placement file; for
 * `single` (74 us) the gap is (74 - 61) / 74. */
Test(proven, place_prints_and_writes_the_certified_gap)
{
    tk_problem tp;
    bind_six(&tp);
    const char *dir = tk_tmpdir();
    char g[512], c[512], out[512], cmd[2048], *o = NULL;
    snprintf(g, sizeof g, "%s/six.json", dir);
    snprintf(c, sizeof c, "%s/two.json", dir);
    snprintf(out, sizeof out, "%s/p.json", dir);
    op_error err = {0};
    cr_assert_eq(op_graph_write(tp.g, g, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(op_cluster_write(tp.c, c, &err), OP_OK, "%s", err.msg);
    snprintf(cmd, sizeof cmd, "%s place %s --cluster %s -o %s", OPPLACE_BIN, g, c, out);
    double t0 = op_seconds_now();
    cr_assert_eq(tk_run(cmd, &o), 0, "%s", o);
    if (timed())
        cr_assert_lt(op_seconds_now() - t0, 1.0, "place took %.2f s", op_seconds_now() - t0);
    cr_assert(strstr(o, "optimal (proven)") != NULL, "%s", o);
    free(o);
    snprintf(cmd, sizeof cmd, "cat %s", out);
    cr_assert_eq(tk_run(cmd, &o), 0);
    cr_assert_float_eq(tk_json_number(strstr(o, "\"metrics\""), "step_time_us"), 61, 1e-9);
    cr_assert_float_eq(tk_json_number(strstr(o, "\"metrics\""), "lower_bound_us"), 61, 61e-6);
    cr_assert_float_eq(tk_json_number(strstr(o, "\"metrics\""), "certified_gap"), 0, 1e-12);
    cr_assert(strstr(o, "\"proven_optimal\": true") != NULL, "%s", o);
    free(o);

    snprintf(cmd, sizeof cmd, "%s place %s --cluster %s --algo single --json", OPPLACE_BIN, g, c);
    cr_assert_eq(tk_run(cmd, &o), 0, "%s", o);
    cr_assert_float_eq(tk_json_number(o, "step_time_us"), 74, 1e-9);
    double bound = tk_json_number(o, "lower_bound_us");
    cr_assert_float_eq(bound, 61, 61e-6);
    cr_assert_float_eq(tk_json_number(o, "certified_gap"), (74 - bound) / 74, 1e-12);
    cr_assert(strstr(o, "\"proven_optimal\": false") != NULL, "%s", o);
    free(o);
    tk_unbind(&tp);
}
