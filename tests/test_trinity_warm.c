/*
 * test_trinity_warm.c - what Trinity does beyond the paper
 * (src/placers/trinity/trinity_warm.c, trinity_reward.c, trinity_policy.c):
 *   - the constrained order: within the tolerances beats outside, then no
 *     OOM, then faster; outside, the higher reward;
 *   - the reference's blocks and units can express the reference exactly
 *     (anchor groups mapped by block_dev give back every op's device), and
 *     units never mix the reference's devices;
 *   - uniform exploration draws respect the masks and reach every choice;
 *   - the placer's result is never worse than its reference (expert) in
 *     step time, peak communication or peak memory, on a small RNN LM and a
 *     small WaveNet, 2 to 4 devices; explicit tolerances are respected;
 *   - with --order-search final (opplace/list_schedule.h) the result, order
 *     included, is never slower than without and never above expert's
 *     peaks (test_trinity_order.c covers the ordered reward).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/placer.h"
#include "opplace/simulate.h"
#include "placers/trinity/trinity.h"
#include "opplace/zoo.h"
#include "testkit.h"

/* ------------------------------------------------------ constrained order */

Test(trinity_warm, constrained_order_prefers_tolerances_then_memory_then_speed)
{
    trinity_reward_config rc = trinity_reward_defaults();
    rc.max_comm_bytes = 100;
    rc.max_mem_bytes = 1000;
    trinity_metrics in_slow = {.step_us = 50, .peak_comm = 100, .peak_mem = 1000, .reward = -1};
    trinity_metrics in_fast = {.step_us = 40, .peak_comm = 90, .peak_mem = 900, .reward = -2};
    trinity_metrics out_fast = {.step_us = 10, .peak_comm = 101, .peak_mem = 10, .reward = 3};
    trinity_metrics out_mem = {.step_us = 10, .peak_comm = 0, .peak_mem = 1001, .reward = 2};
    trinity_metrics in_oom = {.step_us = 5, .peak_comm = 0, .peak_mem = 10, .oom = 1, .reward = 9};
    cr_assert(trinity_within_tolerances(&in_slow, &rc), "the tolerances are inclusive");
    cr_assert_not(trinity_within_tolerances(&out_fast, &rc));
    cr_assert_not(trinity_within_tolerances(&out_mem, &rc));
    /* within beats outside, however fast or well rewarded */
    cr_assert(trinity_metrics_better(&in_slow, &out_fast, &rc));
    cr_assert_not(trinity_metrics_better(&out_fast, &in_slow, &rc));
    cr_assert(trinity_metrics_better(&in_slow, &out_mem, &rc));
    /* within: fitting beats OOM, then the faster wins, whatever the reward */
    cr_assert(trinity_metrics_better(&in_slow, &in_oom, &rc));
    cr_assert(trinity_metrics_better(&in_fast, &in_slow, &rc));
    cr_assert_not(trinity_metrics_better(&in_slow, &in_fast, &rc));
    /* equal step: less communication, then less memory */
    trinity_metrics tie = in_fast;
    tie.peak_comm = 80;
    cr_assert(trinity_metrics_better(&tie, &in_fast, &rc));
    tie = in_fast;
    tie.peak_mem = 800;
    cr_assert(trinity_metrics_better(&tie, &in_fast, &rc));
    cr_assert_not(trinity_metrics_better(&in_fast, &in_fast, &rc), "strict order");
    /* both outside: the higher MDPE reward */
    cr_assert(trinity_metrics_better(&out_fast, &out_mem, &rc));
}

/* --------------------------------------------------- blocks and units */

static node2vec_config tiny_n2v(void)
{
    node2vec_config n = node2vec_defaults();
    n.walks = 2;
    n.length = 8;
    return n;
}

static trinity_config small_config(int groups)
{
    trinity_config c = trinity_config_default();
    c.max_devices = 4;
    c.groups = groups;
    c.n2v_dim = 3;
    c.type_dim = 3;
    c.part_h1 = 6;
    c.part_h2 = 7;
    c.hidden = 5;
    c.dev_dim = 3;
    c.attn = 4;
    c.prior = TRINITY_REF_PRIOR;
    c.sched_prior = TRINITY_REF_SCHED_PRIOR;
    return c;
}

/* Blocks of `groups` groups and `units` units centred on ref: the anchors,
 * read through block_dev, rebuild ref exactly. */
static void check_blocks(const op_problem *p, const int *ref, int groups, int units)
{
    op_error err = {0};
    trinity_config cfg = small_config(groups);
    node2vec_config n2v = tiny_n2v();
    trinity_graph tg;
    cr_assert_eq(trinity_graph_init(&tg, p, &cfg, &n2v, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(trinity_graph_set_reference(&tg, ref, units, 3, &err), OP_OK, "%s", err.msg);
    int used[4] = {0}, blocks[4] = {0}, decisions = 0;
    for (int i = 0; i < p->n; i++) {
        used[ref[i]] = 1;
        cr_assert(tg.anchor[i] >= 0 && tg.anchor[i] < groups);
        cr_assert_eq(tg.block_dev[tg.anchor[i]], ref[i], "op %d anchored outside its block", i);
        if (tg.leader[i] >= 0)
            cr_assert_eq(ref[tg.leader[i]], ref[i], "a unit mixes the reference's devices");
        decisions += tg.decides[i];
    }
    for (int t = 0; t < groups; t++) {
        blocks[tg.block_dev[t]]++;
        if (t)
            cr_assert_leq(tg.block_dev[t - 1], tg.block_dev[t], "blocks are contiguous");
    }
    for (int d = 0; d < p->nd; d++)
        cr_assert(!used[d] || blocks[d] > 0, "device %d has ops but no block", d);
    if (units > 0)
        cr_assert_lt(decisions, p->n, "units did not merge any decision");
    /* the reference is expressible: group = anchor, device = its block */
    trinity_batch b;
    cr_assert_eq(trinity_batch_init(&b, &tg, 1, &err), OP_OK);
    for (int i = 0; i < p->n; i++)
        b.group[i] = tg.anchor[tg.leader[i] >= 0 ? tg.leader[i] : i];
    for (int t = 0; t < groups; t++)
        b.device[t] = tg.block_dev[t];
    int *dev = malloc(sizeof(int) * (size_t)p->n);
    trinity_batch_placement(&tg, &b, 0, dev);
    for (int i = 0; i < p->n; i++)
        cr_assert_eq(dev[i], ref[i], "op %d: %d instead of the reference's %d", i, dev[i],
                     ref[i]);
    free(dev);
    trinity_batch_destroy(&b);
    trinity_graph_destroy(&tg);
}

Test(trinity_warm, reference_blocks_and_units_express_the_reference)
{
    tk_problem tp;
    tk_bind(&tp, tk_random_dag(80, 0.08, 11), tk_cluster(3, 5.0, 1e-4, (int64_t)1 << 40));
    int ref[80];
    uint64_t s = 5;
    for (int i = 0; i < 80; i++) /* contiguous runs, one device unused */
        ref[i] = tp.g->topo_pos[i] < 50 ? 0 : (tp.g->topo_pos[i] < 70 ? 2 : 0);
    check_blocks(&tp.p, ref, 8, 0);
    check_blocks(&tp.p, ref, 8, 12);
    for (int i = 0; i < 80; i++) /* scattered */
        ref[i] = (int)(tk_rand(&s) % 3);
    check_blocks(&tp.p, ref, 6, 0);
    check_blocks(&tp.p, ref, 16, 20);
    check_blocks(&tp.p, ref, 3, 30); /* one group per device */
    tk_unbind(&tp);
}

/* ------------------------------------------------------------ exploration */

Test(trinity_warm, uniform_exploration_respects_masks_and_reaches_every_choice)
{
    tk_problem tp;
    tk_bind(&tp, tk_random_dag(40, 0.1, 2), tk_cluster(3, 5.0, 1e-4, (int64_t)1 << 40));
    op_error err = {0};
    trinity_config cfg = small_config(6); /* 4 outputs, 3 devices: slot 3 is absent */
    trinity_policy *pol = trinity_policy_new(&cfg, 2, &err);
    cr_assert_not_null(pol, "%s", err.msg);
    node2vec_config n2v = tiny_n2v();
    trinity_graph tg;
    cr_assert_eq(trinity_graph_init(&tg, &tp.p, &cfg, &n2v, &err), OP_OK, "%s", err.msg);
    int k = 20;
    trinity_batch b;
    cr_assert_eq(trinity_batch_init(&b, &tg, k, &err), OP_OK);
    nn_arena ar;
    nn_arena_init(&ar, 1 << 16, &err);
    nn_rng rng;
    nn_rng_seed(&rng, 4);
    trinity_run run = {.training = 0, .sample = 1, .rng = &rng, .explore_part = 1.0,
                       .explore_sched = 1.0};
    nn_tensor lp_part, lp_sched;
    cr_assert_eq(trinity_policy_forward(pol, &ar, &tg, &b, k, &run, &lp_part, &lp_sched, NULL,
                                        &err),
                 OP_OK, "%s", err.msg);
    int groups_seen[6] = {0}, devs_seen[4] = {0};
    for (int r = 0; r < k; r++) {
        for (int i = 0; i < tp.p.n; i++) {
            int g = b.group[r * tp.p.n + i];
            groups_seen[g] = 1;
            cr_assert_float_eq(b.old_part[r * tp.p.n + i], NN_AT(&lp_part, i, g), 1e-12,
                               "old_part is the policy's log-probability");
        }
        for (int t = 0; t < cfg.groups; t++) {
            int d = b.device[r * cfg.groups + t];
            cr_assert(d >= 0 && d < tp.p.nd, "absent device %d chosen", d);
            cr_assert(b.gmask[(r * cfg.groups + t) * cfg.max_devices + d]);
            devs_seen[d] = 1;
        }
    }
    for (int g = 0; g < cfg.groups; g++)
        cr_assert(groups_seen[g], "group %d never drawn", g);
    for (int d = 0; d < tp.p.nd; d++)
        cr_assert(devs_seen[d], "device %d never drawn", d);
    nn_arena_destroy(&ar);
    trinity_batch_destroy(&b);
    trinity_graph_destroy(&tg);
    trinity_policy_free(pol);
    tk_unbind(&tp);
}

/* ------------------------------------------------- never worse than expert */

/* Step time, peak communication and peak memory of device_of. */
static trinity_metrics judge(const op_problem *p, const int *device_of)
{
    op_sim_result r;
    op_error err = {0};
    cr_assert_eq(op_sim_result_init(&r, p, &err), OP_OK);
    tk_simulate(p, device_of, &r);
    trinity_reward_config rc = trinity_reward_defaults();
    trinity_metrics m = trinity_measure(p, &r, &rc);
    op_sim_result_destroy(&r);
    return m;
}

/* Runs `algo` with the options kv (NULL-terminated name/value pairs); out
 * receives its devices; returns the metrics of the whole result, its
 * per-device order included. */
static trinity_metrics run_placer(const op_problem *p, const char *algo, const char *const *kv,
                                  int *out)
{
    op_error err = {0};
    op_options *o = op_options_new(&err);
    for (int i = 0; kv && kv[i]; i += 2)
        op_options_set(o, kv[i], kv[i + 1], &err);
    op_place_ctx ctx = {.p = p, .opts = o, .seed = 3, .best_effort = 1};
    op_placement pl;
    const op_placer *placer = op_placer_find(algo);
    cr_assert_not_null(placer);
    cr_assert_eq(op_place(placer, &ctx, &pl, &err), OP_OK, "%s: %s", algo, err.msg);
    cr_assert_null(op_options_first_unused(o));
    memcpy(out, pl.device_of, sizeof(int) * (size_t)p->n);
    op_sim_result r;
    cr_assert_eq(op_sim_result_init(&r, p, &err), OP_OK);
    cr_assert_eq(op_simulate(p, &pl, &r, NULL, &err), OP_OK, "%s", err.msg);
    trinity_reward_config rc = trinity_reward_defaults();
    trinity_metrics m = trinity_measure(p, &r, &rc);
    op_sim_result_destroy(&r);
    op_placement_destroy(&pl);
    op_options_free(o);
    return m;
}

static const char *const FAST[] = {"iterations", "4", "samples", "6", "groups", "8",
                                   "units", "24", "threads", "2", NULL};

static void check_never_worse(op_graph *g, int nd)
{
    tk_problem tp;
    tk_bind(&tp, g, tk_cluster(nd, 5.0, 1e-4, (int64_t)1 << 40));
    const op_problem *p = &tp.p;
    int *ref = malloc(sizeof(int) * (size_t)p->n), *got = malloc(sizeof(int) * (size_t)p->n);
    trinity_metrics e = run_placer(p, "expert", NULL, ref);
    trinity_metrics t = run_placer(p, "trinity", FAST, got);
    cr_assert(judge(p, ref).step_us == e.step_us, "expert has no order");
    cr_assert_leq(t.step_us, e.step_us, "%s x %d: step %.1f > expert's %.1f", g->name, nd,
                  t.step_us, e.step_us);
    cr_assert_leq(t.peak_comm, e.peak_comm, "%s x %d: comm %lld > expert's %lld", g->name, nd,
                  (long long)t.peak_comm, (long long)e.peak_comm);
    cr_assert_leq(t.peak_mem, e.peak_mem, "%s x %d: memory %lld > expert's %lld", g->name, nd,
                  (long long)t.peak_mem, (long long)e.peak_mem);
    /* explicit tolerances: twice expert's communication, expert's memory */
    char comm[32], mem[32];
    snprintf(comm, sizeof comm, "%lld", 2 * (long long)e.peak_comm + 1);
    snprintf(mem, sizeof mem, "%lld", (long long)e.peak_mem);
    const char *const tol[] = {"iterations", "4", "samples", "6", "groups", "8", "units", "24",
                               "threads", "2", "max-comm", comm, "max-mem", mem, NULL};
    t = run_placer(p, "trinity", tol, got);
    cr_assert_leq(t.step_us, e.step_us);
    cr_assert_leq((double)t.peak_comm, atof(comm), "comm tolerance broken");
    cr_assert_leq((double)t.peak_mem, atof(mem), "memory tolerance broken");
    free(ref), free(got);
    tk_unbind(&tp);
}

Test(trinity_warm, placer_is_never_worse_than_expert_on_a_small_rnn)
{
    const char *const kv[] = {"layers", "2", "hidden", "256", "batch", "16", "seq-len", "4",
                              NULL};
    check_never_worse(tk_zoo_graph("rnnlm", kv), 2);
    check_never_worse(tk_zoo_graph("rnnlm", kv), 3);
}

Test(trinity_warm, placer_is_never_worse_than_expert_on_a_small_wavenet)
{
    const char *const kv[] = {"stacks", "1", "layers", "4", "batch", "2", "seq-len", "64", NULL};
    check_never_worse(tk_zoo_graph("wavenet", kv), 2);
    check_never_worse(tk_zoo_graph("wavenet", kv), 4);
}

/* ------------------------------------ schedule orders (opplace/list_schedule.h) */

/* Runs trinity with FAST and the final choice's orders on (1, --order-search
 * final) or off (0, --order-search off), the search judged first-ready-first
 * in both, so that both see the same placements; pl keeps the whole result,
 * its order included. */
static void place_ordered(const op_problem *p, int orders, op_placement *pl)
{
    op_error err = {0};
    op_options *o = op_options_new(&err);
    for (int i = 0; FAST[i]; i += 2)
        op_options_set(o, FAST[i], FAST[i + 1], &err);
    op_options_set(o, "order-search", orders ? "final" : "off", &err);
    op_place_ctx ctx = {.p = p, .opts = o, .seed = 3, .best_effort = 1};
    cr_assert_eq(op_place(op_placer_find("trinity"), &ctx, pl, &err), OP_OK, "%s", err.msg);
    cr_assert_null(op_options_first_unused(o));
    op_options_free(o);
}

static trinity_metrics judge_full(const op_problem *p, const op_placement *pl)
{
    op_sim_result r;
    op_error err = {0};
    cr_assert_eq(op_sim_result_init(&r, p, &err), OP_OK);
    cr_assert_eq(op_simulate(p, pl, &r, NULL, &err), OP_OK, "%s", err.msg);
    trinity_reward_config rc = trinity_reward_defaults();
    trinity_metrics m = trinity_measure(p, &r, &rc);
    op_sim_result_destroy(&r);
    return m;
}

static void check_orders_never_worse(op_graph *g, int nd)
{
    tk_problem tp;
    tk_bind(&tp, g, tk_cluster(nd, 5.0, 1e-4, (int64_t)1 << 40));
    const op_problem *p = &tp.p;
    op_placement off, on;
    place_ordered(p, 0, &off);
    place_ordered(p, 1, &on);
    cr_assert_not(off.has_order, "--order-search off gives the paper's result, no order");
    trinity_metrics a = judge_full(p, &off), b = judge_full(p, &on);
    int *ref = malloc(sizeof(int) * (size_t)p->n);
    trinity_metrics e = run_placer(p, "expert", NULL, ref);
    free(ref);
    cr_assert_leq(b.step_us, a.step_us, "%s x %d: ordered step %.3f > %.3f", g->name, nd,
                  b.step_us, a.step_us);
    /* the final choice may take another placement of the pool, or an order
     * that holds more memory, within the tolerances: expert's peaks */
    cr_assert_leq(b.peak_comm, e.peak_comm, "%s x %d: ordered comm %lld > expert's %lld",
                  g->name, nd, (long long)b.peak_comm, (long long)e.peak_comm);
    cr_assert_leq(b.peak_mem, e.peak_mem, "%s x %d: ordered memory %lld > expert's %lld",
                  g->name, nd, (long long)b.peak_mem, (long long)e.peak_mem);
    cr_log_info("%s x %d: %.3f us without orders, %.3f us with%s", g->name, nd, a.step_us,
                b.step_us, on.has_order ? "" : " (no order kept)");
    if (!on.has_order) /* nothing beat first-ready-first: the same result */
        cr_assert_arr_eq(on.device_of, off.device_of, sizeof(int) * (size_t)p->n);
    else
        cr_assert_lt(b.step_us, a.step_us, "an order is kept only when strictly faster");
    op_placement_destroy(&off);
    op_placement_destroy(&on);
    tk_unbind(&tp);
}

Test(trinity_warm, schedule_orders_are_never_worse_than_without)
{
    const char *const rnn[] = {"layers", "2", "hidden", "256", "batch", "16", "seq-len", "4",
                               NULL};
    const char *const wave[] = {"stacks", "1", "layers", "4", "batch", "2", "seq-len", "64",
                                NULL};
    check_orders_never_worse(tk_zoo_graph("rnnlm", rnn), 2);
    check_orders_never_worse(tk_zoo_graph("wavenet", wave), 4);
}
