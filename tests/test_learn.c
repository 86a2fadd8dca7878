/*
 * test_learn.c - the learned placers' common lifecycle (src/learn/): done
 * when proven.  On a chain, where nothing beats one device and the
 * problem's proven bound (the critical path) says so, SGDP's and Trinity's
 * trainers stop before their first iteration once the reference reaches
 * the bound, and both placers asked for 10^6 iterations return at once
 * with that placement.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "opplace/placer.h"
#include "opplace/simulate.h"
#include "placers/sgdp/sgdp.h"
#include "placers/trinity/trinity.h"
#include "testkit.h"

#define MANY "1000000"

/* Four heavy ops in a chain with 1 MB outputs: one device is optimal. */
static op_graph *chain(void)
{
    op_graph_builder *b = op_graph_builder_new("chain", NULL);
    int prev = -1;
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "op%d", i);
        op_op_spec spec = {.name = name, .type = "MatMul", .time_us = 100.0,
                           .output_bytes = 1 << 20};
        int op = tk_op_full(b, &spec);
        if (prev >= 0)
            tk_edge(b, prev, op, -1);
        prev = op;
    }
    return tk_finish(b);
}

static void bind_chain(tk_problem *tp)
{
    tk_bind(tp, chain(), tk_cluster(2, 0.0, 1e-4, (int64_t)1 << 40));
    cr_assert_gt(tp->p.proven_bound_us, 0);
}

Test(learn, sgdp_training_stops_at_the_proven_bound)
{
    tk_problem tp;
    bind_chain(&tp);
    op_error err = {0};
    sgdp_config cfg = sgdp_config_default();
    sgdp_policy *pol = sgdp_policy_new(&cfg, 1, &err);
    cr_assert_not_null(pol, "%s", err.msg);
    sgdp_train_config tc = sgdp_train_defaults();
    tc.iterations = 1000000;
    tc.samples = 4;
    tc.threads = 1;
    tc.heuristics = "single";
    tc.warm_start = 1;
    tc.stop_at_bound = 1;
    const op_problem *probs[1] = {&tp.p};
    sgdp_trainer *t = sgdp_trainer_new(pol, probs, 1, &tc, &err);
    cr_assert_not_null(t, "%s", err.msg);
    cr_assert(sgdp_trainer_proven(t, 0)); /* the reference seeds the record */
    cr_assert_eq(sgdp_trainer_run(t, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(sgdp_trainer_stats(t).iterations, 0);
    sgdp_trainer_free(t);
    sgdp_policy_free(pol);
    tk_unbind(&tp);
}

Test(learn, trinity_training_stops_at_the_proven_bound)
{
    tk_problem tp;
    bind_chain(&tp);
    op_error err = {0};
    trinity_config cfg = trinity_config_default();
    cfg.groups = 2;
    trinity_policy *pol = trinity_policy_new(&cfg, 1, &err);
    cr_assert_not_null(pol, "%s", err.msg);
    trinity_train_config tc = trinity_train_defaults();
    tc.iterations = 1000000;
    tc.samples = 4;
    tc.threads = 1;
    tc.heuristics = "single";
    tc.stop_at_bound = 1;
    const op_problem *probs[1] = {&tp.p};
    trinity_trainer *t = trinity_trainer_new(pol, probs, 1, &tc, &err);
    cr_assert_not_null(t, "%s", err.msg);
    cr_assert(trinity_trainer_proven(t, 0));
    cr_assert_eq(trinity_trainer_run(t, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(trinity_trainer_stats(t).iterations, 0);
    trinity_trainer_free(t);
    trinity_policy_free(pol);
    tk_unbind(&tp);
}

/* The placer `name` asked for 10^6 iterations: it returns within seconds,
 * and its placement reaches the bound. */
static void placer_stops(const char *name, const char *groups)
{
    tk_problem tp;
    bind_chain(&tp);
    op_error err = {0};
    op_options *o = op_options_new(&err);
    op_options_set(o, "iterations", MANY, &err);
    op_options_set(o, "samples", "4", &err);
    op_options_set(o, "threads", "1", &err);
    op_options_set(o, "heuristics", "single", &err);
    if (groups)
        op_options_set(o, "groups", groups, &err);
    op_place_ctx ctx = {.p = &tp.p, .opts = o, .seed = 1};
    op_placement pl;
    double t0 = op_seconds_now();
    cr_assert_eq(op_place(op_placer_find(name), &ctx, &pl, &err), OP_OK, "%s", err.msg);
    cr_assert_lt(op_seconds_now() - t0, 30.0, "%s ran on past the proven bound", name);
    cr_assert_null(op_options_first_unused(o));
    op_sim_result r;
    cr_assert_eq(op_sim_result_init(&r, &tp.p, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(op_simulate(&tp.p, &pl, &r, NULL, &err), OP_OK, "%s", err.msg);
    cr_assert(op_problem_at_bound(&tp.p, r.step_time_us, r.oom), "%s: %.1f us, bound %.1f us",
              name, r.step_time_us, tp.p.proven_bound_us);
    op_sim_result_destroy(&r);
    op_placement_destroy(&pl);
    op_options_free(o);
    tk_unbind(&tp);
}

Test(learn, sgdp_placer_returns_once_proven, .timeout = 120)
{
    placer_stops("sgdp", NULL);
}

Test(learn, trinity_placer_returns_once_proven, .timeout = 120)
{
    placer_stops("trinity", "2");
}
