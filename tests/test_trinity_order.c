/*
 * test_trinity_order.c - Trinity judged by list-scheduled step times
 * (--order-search judged, src/placers/trinity/trinity_train.c) and its final choice over the
 * search's pool (src/placers/trinity/trinity.c), both beyond the paper:
 *   - a rollout's metrics are exactly the priority list schedule's of its
 *     placement under the memory cap M^ (op_sim_dispatch_by_priority), for
 *     every pool entry and for the reference;
 *   - the pool holds distinct placements in the constrained order, the
 *     best-seen record first;
 *   - auto picks the judge that is best for the reference;
 *   - the placer's result with an ordered reward is never worse than
 *     expert on step time, peak communication or peak memory, and never
 *     slower than expert's placement with any of the orders the final
 *     choice tries on it ("expert + order");
 *   - --order-search takes off, final, judged or all; not with --paper.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/list_schedule.h"
#include "opplace/placer.h"
#include "opplace/simulate.h"
#include "placers/trinity/trinity.h"
#include "opplace/zoo.h"
#include "testkit.h"

static op_graph *small_rnn(void)
{
    const char *const kv[] = {"layers", "2", "hidden", "256", "batch", "16", "seq-len", "4",
                              NULL};
    return tk_zoo_graph("rnnlm", kv);
}

static op_graph *small_wavenet(void)
{
    const char *const kv[] = {"stacks", "1", "layers", "4", "batch", "2", "seq-len", "64", NULL};
    return tk_zoo_graph("wavenet", kv);
}

/* Metrics of pl (its order included) by a plain simulation. */
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

/* Metrics of the list schedule of priority k (cap per device, may be NULL)
 * of device_of, from a fresh simulator; *makespan from op_order_list_schedule. */
static trinity_metrics judge_listed(const op_problem *p, const int *device_of, op_priority k,
                                    const int64_t *cap, const trinity_reward_config *rc,
                                    double *makespan)
{
    op_error err = {0};
    op_placement pl;
    op_sim_result r;
    cr_assert_eq(op_placement_init(&pl, p->n, p->nd, &err), OP_OK);
    cr_assert_eq(op_sim_result_init(&r, p, &err), OP_OK);
    memcpy(pl.device_of, device_of, sizeof(int) * (size_t)p->n);
    double *prio = malloc(sizeof(double) * (size_t)p->n);
    int *seq = malloc(sizeof(int) * (size_t)p->n);
    cr_assert_eq(op_placement_priorities(p, device_of, k, prio, &err), OP_OK, "%s", err.msg);
    op_sim *sim = op_sim_new(p, &err);
    cr_assert_not_null(sim);
    if (k != OP_PRIORITY_FIFO)
        op_sim_dispatch_by_priority(sim, prio, cap);
    cr_assert_eq(op_sim_run(sim, &pl, &r, NULL, &err), OP_OK, "%s", err.msg);
    trinity_metrics m = trinity_measure(p, &r, rc);
    if (makespan)
        cr_assert_eq(op_order_list_schedule(p, device_of, prio, cap, seq, makespan, &err), OP_OK,
                     "%s", err.msg);
    op_sim_free(sim);
    free(prio), free(seq);
    op_sim_result_destroy(&r);
    op_placement_destroy(&pl);
    return m;
}

static trinity_config small_config(void)
{
    trinity_config c = trinity_config_default();
    c.max_devices = 4;
    c.groups = 8;
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

static trinity_train_config small_train(int reward_order)
{
    trinity_train_config tc = trinity_train_defaults();
    tc.samples = 6;
    tc.iterations = 4;
    tc.budget_seconds = 0;
    tc.threads = 2;
    tc.seed = 5;
    tc.n2v.walks = 2;
    tc.n2v.length = 8;
    tc.heuristics = "expert";
    tc.unit_target = 24;
    tc.explore = 1.0;
    tc.comm_from_reference = tc.mem_from_reference = 1;
    tc.reward_order = reward_order;
    tc.pool = 3;
    return tc;
}

static int same_metrics(const trinity_metrics *a, const trinity_metrics *b)
{
    return a->step_us == b->step_us && a->peak_comm == b->peak_comm &&
           a->peak_mem == b->peak_mem && a->oom == b->oom;
}

/* Trains a small policy judged by `order`; checks every pool entry and the
 * reference against an independent list schedule. */
static void check_judge(op_graph *g, int nd, int order)
{
    tk_problem tp;
    tk_bind(&tp, g, tk_cluster(nd, 5.0, 1e-4, (int64_t)1 << 40));
    const op_problem *p = &tp.p;
    op_error err = {0};
    trinity_config cfg = small_config();
    trinity_policy *pol = trinity_policy_new(&cfg, 5, &err);
    cr_assert_not_null(pol, "%s", err.msg);
    trinity_train_config tc = small_train(order);
    const op_problem *probs[1] = {p};
    trinity_trainer *t = trinity_trainer_new(pol, probs, 1, &tc, &err);
    cr_assert_not_null(t, "%s", err.msg);
    cr_assert_eq(trinity_trainer_run(t, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(trinity_trainer_evaluate(t, 0, 4, &err), OP_OK, "%s", err.msg);
    trinity_reward_config rc = trinity_trainer_reward(t, 0);
    double share = 0;
    int k = trinity_trainer_reward_order(t, 0, &share);
    cr_assert(share == 1.0 || share == 0.95 || share == 0.9, "cap share %g", share);
    cr_assert(k >= OP_PRIORITY_FIFO && k < OP_PRIORITY_COUNT, "resolved judge %d", k);
    if (order != TRINITY_REWARD_ORDER_AUTO)
        cr_assert_eq(k, order);
    int64_t cap[4];
    for (int d = 0; d < nd; d++)
        cap[d] = (int64_t)(share * rc.max_mem_bytes);
    const trinity_reference *ref = trinity_trainer_reference(t, 0);
    cr_assert_not_null(ref);
    cr_assert_eq(rc.max_mem_bytes, (double)ref->m.peak_mem, "M^ is expert's peak memory");
    /* the reference, judged the search's way */
    double makespan;
    trinity_metrics listed = judge_listed(p, ref->device_of, k, cap, &rc, &makespan);
    cr_assert(same_metrics(&listed, &ref->judged), "reference: judged %.3f us, listed %.3f us",
              ref->judged.step_us, listed.step_us);
    if (k != OP_PRIORITY_FIFO)
        cr_assert_eq(makespan, listed.step_us, "op_order_list_schedule's makespan");
    trinity_metrics fifo = judge_listed(p, ref->device_of, OP_PRIORITY_FIFO, NULL, &rc, NULL);
    cr_assert(same_metrics(&fifo, &ref->m), "the reference's FIFO metrics");
    /* no other judge (auto) or cap (any) is better for the reference */
    static const double shares[] = {1.0, 0.95, 0.9};
    for (int j = OP_PRIORITY_FIFO; j < OP_PRIORITY_COUNT; j++)
        for (int v = 0; v < 3; v++) {
            if (order != TRINITY_REWARD_ORDER_AUTO && j != order)
                continue;
            int64_t cj[4];
            for (int d = 0; d < nd; d++)
                cj[d] = (int64_t)(shares[v] * rc.max_mem_bytes);
            trinity_metrics mj = judge_listed(p, ref->device_of, (op_priority)j, cj, &rc, NULL);
            cr_assert_not(trinity_metrics_better(&mj, &ref->judged, &rc),
                          "chose %s at %g but %s at %g is better for the reference",
                          op_priority_name((op_priority)k), share,
                          op_priority_name((op_priority)j), shares[v]);
        }
    /* the pool: distinct, in the constrained order, the record first, and
     * each entry's metrics are its list schedule's */
    int n_pool = trinity_trainer_pool_size(t, 0);
    cr_assert(n_pool >= 1 && n_pool <= tc.pool, "pool size %d", n_pool);
    trinity_best best = trinity_trainer_best(t, 0);
    trinity_best first = trinity_trainer_pool(t, 0, 0);
    cr_assert_arr_eq(first.device_of, best.device_of, sizeof(int) * (size_t)p->n);
    cr_assert(same_metrics(&first.m, &best.m));
    for (int i = 0; i < n_pool; i++) {
        trinity_best e = trinity_trainer_pool(t, 0, i);
        cr_assert_not_null(e.device_of);
        trinity_metrics m = judge_listed(p, e.device_of, (op_priority)k, cap, &rc, NULL);
        cr_assert(same_metrics(&m, &e.m), "pool entry %d: judged %.3f us, listed %.3f us", i,
                  e.m.step_us, m.step_us);
        for (int j = 0; j < i; j++) {
            trinity_best o = trinity_trainer_pool(t, 0, j);
            cr_assert(memcmp(o.device_of, e.device_of, sizeof(int) * (size_t)p->n),
                      "pool entries %d and %d are the same placement", j, i);
            cr_assert_not(trinity_metrics_better(&e.m, &o.m, &rc), "pool out of order");
        }
    }
    cr_assert_null(trinity_trainer_pool(t, 0, n_pool).device_of);
    cr_log_info("%s x %d, judge %s: reference %.1f us FIFO, %.1f us judged; best %.1f us; "
                "pool %d",
                g->name, nd, op_priority_name((op_priority)k), ref->m.step_us,
                ref->judged.step_us, best.m.step_us, n_pool);
    trinity_trainer_free(t);
    trinity_policy_free(pol);
    tk_unbind(&tp);
}

Test(trinity_order, rollouts_are_judged_by_the_list_schedule_of_their_placement)
{
    check_judge(small_rnn(), 2, OP_PRIORITY_BLEVEL);
    check_judge(small_wavenet(), 3, OP_PRIORITY_CPATH);
}

Test(trinity_order, auto_judge_is_the_best_for_the_reference)
{
    check_judge(small_rnn(), 3, TRINITY_REWARD_ORDER_AUTO);
    check_judge(small_wavenet(), 2, TRINITY_REWARD_ORDER_AUTO);
}

Test(trinity_order, reward_order_names_round_trip)
{
    cr_assert_eq(trinity_reward_order_parse("none"), OP_PRIORITY_FIFO);
    cr_assert_eq(trinity_reward_order_parse("auto"), TRINITY_REWARD_ORDER_AUTO);
    for (int k = OP_PRIORITY_FIFO; k < OP_PRIORITY_COUNT; k++)
        cr_assert_eq(trinity_reward_order_parse(trinity_reward_order_name(k)), k);
    cr_assert_lt(trinity_reward_order_parse("nonsense"), TRINITY_REWARD_ORDER_AUTO);
}

/* ------------------------------------------------------------- the placer */

static op_status place(const op_problem *p, const char *const *kv, op_placement *pl,
                       op_error *err)
{
    op_options *o = op_options_new(err);
    for (int i = 0; kv[i]; i += 2)
        op_options_set(o, kv[i], kv[i + 1], err);
    op_place_ctx ctx = {.p = p, .opts = o, .seed = 3, .best_effort = 1};
    op_status st = op_place(op_placer_find(*kv ? "trinity" : "expert"), &ctx, pl, err);
    if (!st)
        cr_assert_null(op_options_first_unused(o));
    op_options_free(o);
    return st;
}

/* The result with --order-search `order` against expert (FIFO) and expert
 * with each priority's order, uncapped and capped at its own peak. */
static void check_result(op_graph *g, int nd, const char *order)
{
    tk_problem tp;
    tk_bind(&tp, g, tk_cluster(nd, 5.0, 1e-4, (int64_t)1 << 40));
    const op_problem *p = &tp.p;
    op_error err = {0};
    op_placement ex, got;
    const char *const none[] = {NULL};
    cr_assert_eq(place(p, none, &ex, &err), OP_OK, "%s", err.msg);
    const char *const kv[] = {"iterations", "4", "samples", "6", "groups", "8", "units", "24",
                              "threads", "2", "order-search", order, NULL};
    cr_assert_eq(place(p, kv, &got, &err), OP_OK, "%s", err.msg);
    trinity_metrics e = judge_full(p, &ex), t = judge_full(p, &got);
    cr_assert_leq(t.step_us, e.step_us, "%s x %d: step %.1f > expert's %.1f", g->name, nd,
                  t.step_us, e.step_us);
    cr_assert_leq(t.peak_comm, e.peak_comm, "%s x %d: comm above expert's", g->name, nd);
    cr_assert_leq(t.peak_mem, e.peak_mem, "%s x %d: memory above expert's", g->name, nd);
    cr_assert_leq(t.oom, e.oom);
    /* expert + order, as the final choice tries it */
    double expert_ordered = e.step_us;
    int64_t cap[4];
    for (int d = 0; d < nd; d++)
        cap[d] = e.peak_mem;
    for (int k = OP_PRIORITY_FIFO + 1; k < OP_PRIORITY_COUNT; k++)
        for (int capped = 0; capped < 2; capped++) {
            op_placement c;
            cr_assert_eq(op_placement_copy(&c, &ex, &err), OP_OK);
            cr_assert_eq(op_placement_order_by_priority(p, &c, (op_priority)k,
                                                        capped ? cap : NULL, &err),
                         OP_OK, "%s", err.msg);
            trinity_metrics m = judge_full(p, &c);
            if (m.peak_comm <= e.peak_comm && m.peak_mem <= e.peak_mem && m.oom <= e.oom &&
                m.step_us < expert_ordered)
                expert_ordered = m.step_us;
            op_placement_destroy(&c);
        }
    cr_assert_leq(t.step_us, expert_ordered, "%s x %d: %.1f us > expert + order's %.1f us",
                  g->name, nd, t.step_us, expert_ordered);
    cr_log_info("%s x %d, --order-search %s: expert %.1f us, expert + order %.1f us, trinity "
                "%.1f us%s",
                g->name, nd, order, e.step_us, expert_ordered, t.step_us,
                got.has_order ? " (ordered)" : "");
    op_placement_destroy(&ex);
    op_placement_destroy(&got);
    tk_unbind(&tp);
}

Test(trinity_order, ordered_reward_result_is_never_worse_than_expert_or_expert_with_order)
{
    check_result(small_rnn(), 2, "all");
    check_result(small_wavenet(), 4, "judged");
    check_result(small_rnn(), 3, "judged");
}

Test(trinity_order, order_search_values_are_checked)
{
    tk_problem tp;
    tk_bind(&tp, small_rnn(), tk_cluster(2, 5.0, 1e-4, (int64_t)1 << 40));
    op_error err = {0};
    op_placement pl;
    const char *const kv[] = {"iterations", "1", "samples", "2", "groups", "4",
                              "paper", "", "order-search", "final", NULL};
    cr_assert_eq(place(&tp.p, kv, &pl, &err), OP_EUSAGE);
    const char *const bad[] = {"iterations", "1", "order-search", "sideways", NULL};
    cr_assert_eq(place(&tp.p, bad, &pl, &err), OP_EUSAGE);
    tk_unbind(&tp);
}
