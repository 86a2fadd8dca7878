/*
 * test_list_schedule.c - priority orders of a fixed placement
 * (src/sim/list_schedule.c, opplace/list_schedule.h):
 *   - on random DAGs and random placements, every priority, with and
 *     without a memory cap, gives a start sequence that lists every op
 *     once in topological order, per-device orders that hold exactly each
 *     device's ops, and the simulator runs them without deadlock;
 *   - the list schedule models the simulator: with equal priorities it is
 *     the simulator's first-ready-first schedule (same step time), and
 *     the simulator runs a derived order in exactly the modelled makespan;
 *   - a hand-built graph where the bottom-level order beats first-ready-
 *     first by a hand-computed margin;
 *   - priorities are bottom levels with the placement's own costs;
 *   - a cap that can never bind changes nothing;
 *   - a reused priority workspace (op_placement_priorities_ws) carries
 *     nothing from one placement or priority to the next.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/list_schedule.h"
#include "core/orders.h"
#include "opplace/simulate.h"
#include "testkit.h"

static void random_placement(const op_problem *p, uint64_t seed, int *device_of)
{
    for (int i = 0; i < p->n; i++)
        device_of[i] = (int)(tk_rand(&seed) % (uint64_t)p->nd);
}

/* Step time of pl (with its order, if any); fails the test on a deadlock. */
static double simulate(const op_problem *p, const op_placement *pl, op_sim_result *r)
{
    op_error err = {0};
    cr_assert_eq(op_simulate(p, pl, r, NULL, &err), OP_OK, "%s", err.msg);
    return r->step_time_us;
}

static void check_order_valid(const op_problem *p, const op_placement *pl)
{
    op_error err = {0};
    cr_assert(pl->has_order);
    cr_assert_eq(pl->order_off[0], 0);
    cr_assert_eq(pl->order_off[p->nd], p->n);
    int *seen = calloc((size_t)p->n, sizeof *seen);
    for (int d = 0; d < p->nd; d++)
        for (int k = pl->order_off[d]; k < pl->order_off[d + 1]; k++) {
            int op = pl->order[k];
            cr_assert(op >= 0 && op < p->n);
            cr_assert_eq(pl->device_of[op], d, "op %d listed on device %d, placed on %d", op, d,
                         pl->device_of[op]);
            cr_assert_eq(seen[op]++, 0, "op %d listed twice", op);
        }
    free(seen);
    cr_assert_eq(op_problem_check_placement(p, pl, &err), OP_OK, "%s", err.msg);
}

Test(list_schedule, orders_are_valid_on_random_dags)
{
    op_error err = {0};
    for (int t = 0; t < 24; t++) {
        tk_problem tp;
        int nd = 2 + t % 3;
        tk_bind(&tp, tk_random_dag(40 + 7 * t, 0.03 + 0.01 * (t % 5), 100 + (uint64_t)t),
                tk_cluster(nd, 5.0, 1e-3, (int64_t)1 << 40));
        const op_problem *p = &tp.p;
        op_placement pl;
        cr_assert_eq(op_placement_init(&pl, p->n, nd, &err), OP_OK);
        random_placement(p, 7 + (uint64_t)t, pl.device_of);
        double *prio = malloc(sizeof(double) * (size_t)p->n);
        int *seq = malloc(sizeof(int) * (size_t)p->n);
        int64_t cap[4];
        op_sim_result r;
        cr_assert_eq(op_sim_result_init(&r, p, &err), OP_OK);
        simulate(p, &pl, &r);
        for (int d = 0; d < nd; d++)
            cap[d] = r.peak_mem[d] / 2; /* tight: the fallback has to act too */
        for (int k = 0; k < OP_PRIORITY_COUNT; k++)
            for (int capped = 0; capped < 2; capped++) {
                double makespan = -1;
                cr_assert_eq(op_placement_priorities(p, pl.device_of, (op_priority)k, prio, &err),
                             OP_OK, "%s", err.msg);
                cr_assert_eq(op_order_list_schedule(p, pl.device_of, prio, capped ? cap : NULL,
                                                    seq, &makespan, &err),
                             OP_OK, "%s", err.msg);
                cr_assert(op_order_is_topological(p->g, seq), "dag %d, %s: not topological", t,
                          op_priority_name((op_priority)k));
                cr_assert_eq(op_placement_set_order_from_sequence(&pl, seq, &err), OP_OK);
                check_order_valid(p, &pl);
                double step = simulate(p, &pl, &r);
                cr_assert(fabs(step - makespan) <= 1e-9 * fmax(1.0, step),
                          "dag %d, %s, cap %d: simulated %.6f, modelled %.6f", t,
                          op_priority_name((op_priority)k), capped, step, makespan);
                cr_assert_geq(step, p->lower_bound_us - 1e-9);
            }
        op_placement_destroy(&pl);
        op_sim_result_destroy(&r);
        free(prio), free(seq);
        tk_unbind(&tp);
    }
}

Test(list_schedule, equal_priorities_reproduce_first_ready_first)
{
    op_error err = {0};
    for (int t = 0; t < 12; t++) {
        tk_problem tp;
        int nd = 2 + t % 3;
        tk_bind(&tp, tk_random_dag(60 + 5 * t, 0.05, 300 + (uint64_t)t),
                tk_cluster(nd, 3.0, 2e-3, (int64_t)1 << 40));
        const op_problem *p = &tp.p;
        op_placement pl;
        cr_assert_eq(op_placement_init(&pl, p->n, nd, &err), OP_OK);
        random_placement(p, 11 + (uint64_t)t, pl.device_of);
        op_sim_result r;
        cr_assert_eq(op_sim_result_init(&r, p, &err), OP_OK);
        double fifo = simulate(p, &pl, &r);
        double *zero = calloc((size_t)p->n, sizeof *zero);
        int *seq = malloc(sizeof(int) * (size_t)p->n);
        double makespan = -1;
        cr_assert_eq(op_order_list_schedule(p, pl.device_of, zero, NULL, seq, &makespan, &err),
                     OP_OK);
        cr_assert_float_eq(makespan, fifo, 1e-9 * fmax(1.0, fifo), "dag %d", t);
        /* FIFO as an explicit order, and dropping the order, give the same step */
        cr_assert_eq(op_placement_set_order_from_sequence(&pl, seq, &err), OP_OK);
        cr_assert_float_eq(simulate(p, &pl, &r), fifo, 1e-9 * fmax(1.0, fifo));
        cr_assert_eq(op_placement_order_by_priority(p, &pl, OP_PRIORITY_FIFO, NULL, &err), OP_OK);
        cr_assert_not(pl.has_order);
        op_placement_destroy(&pl);
        op_sim_result_destroy(&r);
        free(zero), free(seq);
        tk_unbind(&tp);
    }
}

/*
 * d0 runs A (10 us, a sink) and B (10 us, feeding C); d1 runs C (100 us).
 * A transfer takes the 5 us latency (0 bytes).  Both A and B are ready at 0.
 *   first-ready-first (tie: smaller index, A):  A 0-10, B 10-20, B->C 20-25,
 *                                               C 25-125: step 125 us
 *   bottom level (B: 10 + 5 + 100 = 115 > A: 10): B 0-10, A 10-20,
 *                                               B->C 10-15, C 15-115: 115 us
 */
Test(list_schedule, bottom_level_beats_first_ready_first_on_a_hand_built_graph)
{
    op_error err = {0};
    int id[3];
    tk_problem tp;
    op_placement pl;
    tk_order_matters_setup(&tp, &pl, id);
    int a = id[0], bb = id[1], c = id[2];
    const op_problem *p = &tp.p;
    op_sim_result r;
    cr_assert_eq(op_sim_result_init(&r, p, &err), OP_OK);
    cr_assert_float_eq(simulate(p, &pl, &r), 125.0, 1e-9);

    double prio[3];
    cr_assert_eq(op_placement_priorities(p, pl.device_of, OP_PRIORITY_BLEVEL, prio, &err), OP_OK);
    cr_assert_float_eq(prio[a], 10.0, 1e-9);
    cr_assert_float_eq(prio[bb], 115.0, 1e-9);
    cr_assert_float_eq(prio[c], 100.0, 1e-9);
    cr_assert_eq(op_placement_priorities(p, pl.device_of, OP_PRIORITY_BLEVEL_W, prio, &err),
                 OP_OK);
    cr_assert_float_eq(prio[bb], 110.0, 1e-9, "compute only: no transfer");

    cr_assert_eq(op_placement_order_by_priority(p, &pl, OP_PRIORITY_BLEVEL, NULL, &err), OP_OK);
    check_order_valid(p, &pl);
    cr_assert_eq(pl.order[pl.order_off[0]], bb, "B runs first on d0");
    cr_assert_float_eq(simulate(p, &pl, &r), 115.0, 1e-9);
    /* transfers are unchanged by the order */
    cr_assert_eq(r.n_transfers, 1);
    op_placement_destroy(&pl);
    op_sim_result_destroy(&r);
    tk_unbind(&tp);
}

/* The workspace reused across placements and priorities: the hand-built
 * graph's bottom levels (10, 115, 100) after a run with every op on one
 * device (no transfers) and after blevel-w (transfers ignored), and on a
 * random DAG the values of a fresh computation for every placement. */
Test(list_schedule, a_reused_priority_workspace_keeps_no_state)
{
    op_error err = {0};
    int id[3];
    tk_problem tp;
    op_placement pl;
    tk_order_matters_setup(&tp, &pl, id);
    const op_problem *p = &tp.p;
    op_priority_ws *ws = op_priority_ws_new(p, &err);
    cr_assert_not_null(ws);
    double prio[3];
    int same[3] = {pl.device_of[0], pl.device_of[0], pl.device_of[0]};
    cr_assert_eq(op_placement_priorities_ws(ws, same, OP_PRIORITY_BLEVEL, prio, &err), OP_OK);
    cr_assert_eq(op_placement_priorities_ws(ws, pl.device_of, OP_PRIORITY_BLEVEL_W, prio, &err),
                 OP_OK);
    cr_assert_float_eq(prio[id[1]], 110.0, 1e-9);
    cr_assert_eq(op_placement_priorities_ws(ws, pl.device_of, OP_PRIORITY_BLEVEL, prio, &err),
                 OP_OK);
    cr_assert_float_eq(prio[id[0]], 10.0, 1e-9);
    cr_assert_float_eq(prio[id[1]], 115.0, 1e-9);
    cr_assert_float_eq(prio[id[2]], 100.0, 1e-9);
    op_priority_ws_free(ws);
    op_placement_destroy(&pl);
    tk_unbind(&tp);

    tk_bind(&tp, tk_random_dag(150, 0.05, 31), tk_cluster(3, 5.0, 1e-3, (int64_t)1 << 40));
    p = &tp.p;
    ws = op_priority_ws_new(p, &err);
    cr_assert_not_null(ws);
    int *dev = malloc(sizeof(int) * (size_t)p->n);
    double *a = malloc(sizeof(double) * (size_t)p->n), *b = malloc(sizeof(double) * (size_t)p->n);
    for (int t = 0; t < 12; t++) {
        random_placement(p, 100 + (uint64_t)t, dev);
        op_priority k = (op_priority)(t % OP_PRIORITY_COUNT);
        cr_assert_eq(op_placement_priorities_ws(ws, dev, k, a, &err), OP_OK);
        cr_assert_eq(op_placement_priorities(p, dev, k, b, &err), OP_OK);
        cr_assert_arr_eq(a, b, sizeof(double) * (size_t)p->n, "placement %d, priority %d", t,
                         (int)k);
    }
    free(dev), free(a), free(b);
    op_priority_ws_free(ws);
    tk_unbind(&tp);
}

Test(list_schedule, a_cap_that_never_binds_changes_nothing)
{
    op_error err = {0};
    tk_problem tp;
    tk_bind(&tp, tk_random_dag(120, 0.04, 77), tk_cluster(3, 5.0, 1e-3, (int64_t)1 << 40));
    const op_problem *p = &tp.p;
    int *dev = malloc(sizeof(int) * (size_t)p->n);
    random_placement(p, 5, dev);
    double *prio = malloc(sizeof(double) * (size_t)p->n);
    int *s1 = malloc(sizeof(int) * (size_t)p->n), *s2 = malloc(sizeof(int) * (size_t)p->n);
    int64_t cap[3] = {INT64_MAX / 4, INT64_MAX / 4, INT64_MAX / 4};
    cr_assert_eq(op_placement_priorities(p, dev, OP_PRIORITY_CPATH, prio, &err), OP_OK);
    cr_assert_eq(op_order_list_schedule(p, dev, prio, NULL, s1, NULL, &err), OP_OK);
    cr_assert_eq(op_order_list_schedule(p, dev, prio, cap, s2, NULL, &err), OP_OK);
    cr_assert_arr_eq(s1, s2, sizeof(int) * (size_t)p->n);
    /* an ineligible device is refused */
    dev[0] = 7;
    cr_assert_eq(op_order_list_schedule(p, dev, prio, NULL, s1, NULL, &err), OP_EINPUT);
    free(dev), free(prio), free(s1), free(s2);
    tk_unbind(&tp);
}

/* op_sim_dispatch_by_priority judges a placement by its list schedule on
 * a reused simulator: same step time as the derived order, and clearing
 * it restores first-ready-first. */
Test(list_schedule, a_reused_simulator_runs_the_list_schedule)
{
    op_error err = {0};
    for (int t = 0; t < 8; t++) {
        tk_problem tp;
        int nd = 2 + t % 3;
        tk_bind(&tp, tk_random_dag(60 + 11 * t, 0.04, 300 + (uint64_t)t),
                tk_cluster(nd, 5.0, 1e-3, (int64_t)1 << 40));
        const op_problem *p = &tp.p;
        op_placement pl;
        cr_assert_eq(op_placement_init(&pl, p->n, nd, &err), OP_OK);
        random_placement(p, 17 + (uint64_t)t, pl.device_of);
        op_sim_result r;
        cr_assert_eq(op_sim_result_init(&r, p, &err), OP_OK);
        op_sim *sim = op_sim_new(p, &err);
        cr_assert(sim);
        cr_assert_eq(op_sim_run(sim, &pl, &r, NULL, &err), OP_OK);
        double fifo = r.step_time_us;
        double *prio = malloc(sizeof(double) * (size_t)p->n);
        int64_t cap[4];
        for (int d = 0; d < nd; d++)
            cap[d] = r.peak_mem[d] / 2;
        for (int k = OP_PRIORITY_BLEVEL; k < OP_PRIORITY_COUNT; k++) {
            cr_assert_eq(op_placement_priorities(p, pl.device_of, (op_priority)k, prio, &err),
                         OP_OK);
            op_placement ordered;
            cr_assert_eq(op_placement_copy(&ordered, &pl, &err), OP_OK);
            cr_assert_eq(op_placement_order_by_priority(p, &ordered, (op_priority)k, cap, &err),
                         OP_OK);
            double want = simulate(p, &ordered, &r);
            op_sim_dispatch_by_priority(sim, prio, cap);
            cr_assert_eq(op_sim_run(sim, &pl, &r, NULL, &err), OP_OK, "%s", err.msg);
            cr_assert(fabs(r.step_time_us - want) <= 1e-9 * fmax(1.0, want),
                      "dag %d, %s: dispatch %.6f, derived order %.6f", t,
                      op_priority_name((op_priority)k), r.step_time_us, want);
            op_sim_dispatch_by_priority(sim, NULL, NULL);
            cr_assert_eq(op_sim_run(sim, &pl, &r, NULL, &err), OP_OK);
            cr_assert_eq(r.step_time_us, fifo, "dag %d: first-ready-first not restored", t);
            op_placement_destroy(&ordered);
        }
        free(prio);
        op_sim_free(sim);
        op_sim_result_destroy(&r);
        op_placement_destroy(&pl);
        tk_unbind(&tp);
    }
}
