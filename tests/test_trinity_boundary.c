/*
 * test_trinity_boundary.c - Trinity's layer-boundary moves around the
 * reference placement (src/placers/trinity/trinity_boundary.c, beyond the paper):
 *   - every candidate judged keeps the problem's rules (eligibility, pins,
 *     colocation) and places every op, and differs from the reference;
 *   - the kept candidates are admissible (within expert's peaks, no more
 *     out of memory) and strictly faster than the reference with its best
 *     order, fastest first, and the search is deterministic;
 *   - the placer's result with boundary moves (the default) is never worse
 *     than expert on step, peak communication and peak memory, and never
 *     slower than the same run without them (--order-search judged);
 *   - boundary moves (--order-search all) need a reference.
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

/* Layered random DAG with colocation groups spanning layers, ops pinned
 * to d1, and ops without a layer. */
static op_graph *rules_graph(int n, uint64_t seed)
{
    op_error err = {0};
    op_graph_builder *b = op_graph_builder_new("rules", &err);
    char name[32], layer[32], group[32];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "v%d", i);
        snprintf(layer, sizeof layer, "layer_%d", i * 5 / n);
        snprintf(group, sizeof group, "g%d", (int)(tk_rand(&seed) % 6));
        int in_group = tk_rand(&seed) % 5 == 0;
        op_op_spec s = {.name = name, .time_us = 5 + (double)(tk_rand(&seed) % 100),
                        .output_bytes = 1 + (int64_t)(tk_rand(&seed) % 4000),
                        .param_bytes = (int64_t)(tk_rand(&seed) % 2000),
                        .layer = i % 11 == 7 ? NULL : layer,
                        .colocate = in_group ? group : NULL,
                        .device = !in_group && i % 13 == 5 ? "d1" : NULL};
        tk_op_full(b, &s);
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n && j < i + 12; j++)
            if (tk_rand(&seed) % 4 == 0)
                tk_edge(b, i, j, -1);
    return tk_finish(b);
}

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

/* Metrics of pl (its order included) by a plain simulation. */
static trinity_metrics judge_full(const op_problem *p, const op_placement *pl,
                                  const trinity_reward_config *rc)
{
    op_sim_result r;
    op_error err = {0};
    cr_assert_eq(op_sim_result_init(&r, p, &err), OP_OK);
    cr_assert_eq(op_simulate(p, pl, &r, NULL, &err), OP_OK, "%s", err.msg);
    trinity_metrics m = trinity_measure(p, &r, rc);
    op_sim_result_destroy(&r);
    return m;
}

typedef struct visits {
    const op_problem *p;
    const int *ref;
    const trinity_reward_config *rc;
    int count, admissible;
} visits;

static void check_candidate(void *arg, const int *dev, const trinity_metrics *fifo,
                            double best_admissible_us)
{
    visits *v = arg;
    const op_problem *p = v->p;
    op_error err = {0};
    op_placement pl;
    cr_assert_eq(op_placement_init(&pl, p->n, p->nd, &err), OP_OK);
    for (int i = 0; i < p->n; i++)
        cr_assert(dev[i] >= 0 && dev[i] < p->nd, "op %d unplaced", i);
    memcpy(pl.device_of, dev, sizeof(int) * (size_t)p->n);
    cr_assert_eq(op_problem_check_placement(p, &pl, &err), OP_OK, "candidate %d: %s", v->count,
                 err.msg);
    cr_assert(memcmp(dev, v->ref, sizeof(int) * (size_t)p->n), "candidate is the reference");
    /* first-ready-first metrics are the simulator's */
    trinity_metrics m = judge_full(p, &pl, v->rc);
    cr_assert_eq(m.step_us, fifo->step_us);
    cr_assert_eq(m.peak_comm, fifo->peak_comm);
    cr_assert_eq(m.peak_mem, fifo->peak_mem);
    if (isfinite(best_admissible_us)) {
        v->admissible++;
        cr_assert_leq(fifo->peak_comm, (int64_t)v->rc->max_comm_bytes,
                      "admissible above the communication bound");
    }
    v->count++;
    op_placement_destroy(&pl);
}

/* The search around expert's placement of g on nd devices. */
static void check_search(op_graph *g, int nd)
{
    tk_problem tp;
    tk_bind(&tp, g, tk_cluster(nd, 5.0, 1e-4, (int64_t)1 << 40));
    const op_problem *p = &tp.p;
    op_error err = {0};
    op_placement ex;
    const char *const none[] = {NULL};
    cr_assert_eq(place(p, none, &ex, &err), OP_OK, "%s", err.msg);
    trinity_reward_config rc = trinity_reward_defaults();
    trinity_metrics e = judge_full(p, &ex, &rc);
    rc.max_comm_bytes = (double)e.peak_comm, rc.max_mem_bytes = (double)e.peak_mem;
    visits v = {.p = p, .ref = ex.device_of, .rc = &rc};
    trinity_boundary_config cfg = trinity_boundary_defaults();
    cfg.keep = 6, cfg.order_all = 1, cfg.visit = check_candidate, cfg.visit_arg = &v;
    trinity_boundary_result res, again;
    cr_assert_eq(trinity_boundary_search(p, ex.device_of, &rc, &cfg, &res, &err), OP_OK, "%s",
                 err.msg);
    cr_assert_gt(v.count, 0, "no candidate judged");
    cr_assert_eq(v.count, res.candidates);
    cr_assert_eq(v.admissible, res.admissible);
    cr_assert_eq(res.candidates, res.singles + res.swaps + res.pairs);
    cr_assert_eq(res.ref_fifo.step_us, e.step_us);
    cr_assert_leq(res.ref_best.step_us, e.step_us, "reference + order slower than FIFO");
    cr_assert_leq(res.n_kept, cfg.keep);
    cr_assert_leq(res.n_kept, res.faster);
    for (int k = 0; k < res.n_kept; k++) {
        const trinity_metrics *m = &res.kept_m[k];
        cr_assert_lt(m->step_us, res.ref_best.step_us, "kept %d not faster", k);
        cr_assert(trinity_within_tolerances(m, &rc), "kept %d not within expert's peaks", k);
        cr_assert_leq(m->oom, e.oom);
        if (k)
            cr_assert_leq(res.kept_m[k - 1].step_us, m->step_us, "kept out of order");
        /* communication does not depend on the order */
        op_placement pl;
        cr_assert_eq(op_placement_init(&pl, p->n, p->nd, &err), OP_OK);
        memcpy(pl.device_of, res.kept + (size_t)k * (size_t)p->n, sizeof(int) * (size_t)p->n);
        cr_assert_eq(judge_full(p, &pl, &rc).peak_comm, m->peak_comm);
        op_placement_destroy(&pl);
    }
    if (res.n_kept) { /* the screen (dispatching simulator) against replayed orders */
        double replayed = 1.0 / 0.0;
        static const double shares[] = {0, 1.0, 0.95, 0.9};
        int64_t cap[8];
        for (int k = 1; k < OP_PRIORITY_COUNT; k++)
            for (int s = 0; s < 4; s++) {
                op_placement pl;
                cr_assert_eq(op_placement_init(&pl, p->n, p->nd, &err), OP_OK);
                memcpy(pl.device_of, res.kept, sizeof(int) * (size_t)p->n);
                for (int d = 0; d < nd; d++)
                    cap[d] = (int64_t)(shares[s] * rc.max_mem_bytes);
                cr_assert_eq(op_placement_order_by_priority(p, &pl, (op_priority)k,
                                                            s ? cap : NULL, &err), OP_OK);
                trinity_metrics m = judge_full(p, &pl, &rc);
                if (trinity_within_tolerances(&m, &rc) && m.step_us < replayed)
                    replayed = m.step_us;
                op_placement_destroy(&pl);
            }
        cr_log_info("%s x %d: best kept screened %.1f us, replayed %.1f us", g->name, nd,
                    res.kept_m[0].step_us, replayed);
    }
    /* deterministic (every MPI rank runs it) */
    cfg.visit = NULL;
    cr_assert_eq(trinity_boundary_search(p, ex.device_of, &rc, &cfg, &again, &err), OP_OK);
    cr_assert_eq(again.candidates, res.candidates);
    cr_assert_eq(again.n_kept, res.n_kept);
    cr_assert_eq(again.best.step_us, res.best.step_us);
    if (res.n_kept)
        cr_assert_arr_eq(again.kept, res.kept, sizeof(int) * (size_t)p->n * (size_t)res.n_kept);
    cr_log_info("%s x %d: %d blocks, %d candidates (%d admissible, %d faster), %d rounds; "
                "expert %.1f us, + order %.1f us, best admissible %.1f us",
                g->name, nd, res.blocks, res.candidates, res.admissible, res.faster, res.rounds,
                e.step_us, res.ref_best.step_us, res.best.step_us);
    trinity_boundary_result_destroy(&res);
    trinity_boundary_result_destroy(&again);
    /* a deadline already passed (op_seconds_now() time 1, long ago): no
     * candidate is judged, the search says it was cut short, and the
     * reference with its best order is still reported */
    trinity_boundary_config late = trinity_boundary_defaults();
    late.deadline = 1.0;
    cr_assert_eq(trinity_boundary_search(p, ex.device_of, &rc, &late, &res, &err), OP_OK, "%s",
                 err.msg);
    cr_assert_eq(res.candidates, 0);
    cr_assert_eq(res.n_kept, 0);
    cr_assert(res.cut_short);
    cr_assert_eq(res.ref_fifo.step_us, e.step_us);
    cr_assert_leq(res.ref_best.step_us, e.step_us);
    trinity_boundary_result_destroy(&res);
    op_placement_destroy(&ex);
    tk_unbind(&tp);
}

Test(trinity_boundary, candidates_keep_the_rules_and_kept_ones_are_admissible_and_faster)
{
    check_search(rules_graph(120, 5), 3);
    check_search(rules_graph(90, 11), 2);
}

Test(trinity_boundary, search_on_layered_models)
{
    check_search(small_rnn(), 2);
    check_search(small_rnn(), 3);
    check_search(small_wavenet(), 4);
}

/* The placer with boundary moves (default) against expert and against
 * the same run without them. */
static void check_placer(op_graph *g, int nd)
{
    tk_problem tp;
    tk_bind(&tp, g, tk_cluster(nd, 5.0, 1e-4, (int64_t)1 << 40));
    const op_problem *p = &tp.p;
    op_error err = {0};
    op_placement ex, on, off;
    const char *const none[] = {NULL};
    cr_assert_eq(place(p, none, &ex, &err), OP_OK, "%s", err.msg);
    const char *const kv_on[] = {"iterations", "2", "samples", "4", "groups", "8", "units", "24",
                                 "threads", "2", NULL};
    const char *const kv_off[] = {"iterations", "2", "samples", "4", "groups", "8", "units", "24",
                                  "threads", "2", "order-search", "judged", NULL};
    cr_assert_eq(place(p, kv_on, &on, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(place(p, kv_off, &off, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(op_problem_check_placement(p, &on, &err), OP_OK, "%s", err.msg);
    trinity_reward_config rc = trinity_reward_defaults();
    trinity_metrics e = judge_full(p, &ex, &rc), a = judge_full(p, &on, &rc),
                    b = judge_full(p, &off, &rc);
    cr_assert_leq(a.step_us, e.step_us, "%s x %d: step above expert's", g->name, nd);
    cr_assert_leq(a.peak_comm, e.peak_comm, "%s x %d: comm above expert's", g->name, nd);
    cr_assert_leq(a.peak_mem, e.peak_mem, "%s x %d: memory above expert's", g->name, nd);
    cr_assert_leq(a.oom, e.oom);
    cr_assert_leq(a.step_us, b.step_us, "%s x %d: boundary moves made it slower (%.1f > %.1f)",
                  g->name, nd, a.step_us, b.step_us);
    cr_log_info("%s x %d: expert %.1f us, without boundary moves %.1f us, with %.1f us",
                g->name, nd, e.step_us, b.step_us, a.step_us);
    op_placement_destroy(&ex);
    op_placement_destroy(&on);
    op_placement_destroy(&off);
    tk_unbind(&tp);
}

Test(trinity_boundary, placer_result_is_never_worse_than_expert_or_without_moves)
{
    check_placer(rules_graph(120, 5), 3);
    check_placer(small_rnn(), 3);
    check_placer(small_wavenet(), 4);
}

Test(trinity_boundary, boundary_moves_need_a_reference)
{
    tk_problem tp;
    tk_bind(&tp, small_rnn(), tk_cluster(2, 5.0, 1e-4, (int64_t)1 << 40));
    op_error err = {0};
    op_placement pl;
    const char *const no_ref[] = {"iterations", "1", "samples", "2", "groups", "4",
                                  "heuristics", "none", "order-search", "all", NULL};
    cr_assert_eq(place(&tp.p, no_ref, &pl, &err), OP_EUSAGE);
    tk_unbind(&tp);
}
