/*
 * test_reorder.c - the best priority execution order of a fixed placement
 * (opplace/search.h, src/search/order_search.c) and `opplace place --order`:
 *   - on random DAGs and placements, with roomy and tight memory, the
 *     result keeps device_of, simulates to the reported step, never ranks
 *     after the input, and with keep_peak never raises the largest peak;
 *     when nothing is kept the placement is untouched; the best screened
 *     order is reported, kept or not;
 *   - on a hand-built graph it finds the bottom-level order (115 us against
 *     first-ready-first's 125 us, computed by hand);
 *   - an input whose own order is already optimal keeps it;
 *   - the CLI writes an ordered placement that `opplace simulate` runs in
 *     the printed step time, and refuses an unknown mode.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/search.h"
#include "opplace/simulate.h"
#include "testkit.h"

static int64_t largest(const op_problem *p, const op_sim_result *r)
{
    int64_t m = 0;
    for (int d = 0; d < p->nd; d++)
        m = r->peak_mem[d] > m ? r->peak_mem[d] : m;
    return m;
}

static void check_one(const op_problem *p, const op_placement *in, int keep_peak, int dag)
{
    op_error err = {0};
    op_sim_result r;
    cr_assert_eq(op_sim_result_init(&r, p, &err), OP_OK);
    cr_assert_eq(op_simulate(p, in, &r, NULL, &err), OP_OK);
    double step0 = r.step_time_us, over0 = op_sim_overflow_bytes(p, &r);
    int64_t peak0 = largest(p, &r);
    op_placement pl;
    cr_assert_eq(op_placement_copy(&pl, in, &err), OP_OK);
    op_reorder_stats rs;
    cr_assert_eq(op_placement_reorder(p, &pl, keep_peak, &rs, &err), OP_OK, "%s", err.msg);
    cr_assert_arr_eq(pl.device_of, in->device_of, sizeof(int) * (size_t)p->n);
    cr_assert_eq(rs.initial_us, step0);
    cr_assert_eq(op_simulate(p, &pl, &r, NULL, &err), OP_OK, "dag %d: %s", dag, err.msg);
    double over = op_sim_overflow_bytes(p, &r);
    cr_assert_eq(r.step_time_us, rs.final_us, "dag %d: the simulator is the judge", dag);
    cr_assert_eq(over, rs.final_over);
    if (rs.priority == OP_PRIORITY_FIFO) {
        cr_assert_eq(pl.has_order, in->has_order, "dag %d: untouched when nothing is kept", dag);
        cr_assert_eq(r.step_time_us, step0);
    } else {
        cr_assert(pl.has_order);
        cr_assert(op_sim_ranks_before(over, r.step_time_us, over0, step0),
                  "dag %d: kept an order that does not rank first (%.3f vs %.3f)", dag,
                  r.step_time_us, step0);
    }
    if (keep_peak)
        cr_assert_leq(largest(p, &r), peak0, "dag %d: peak memory rose", dag);
    /* the best screened order is the kept one when one is kept, and
     * without a peak limit there always is one */
    if (rs.priority != OP_PRIORITY_FIFO) {
        cr_assert_eq(rs.screened, rs.priority, "dag %d", dag);
        cr_assert_eq(rs.screened_cap_share, rs.cap_share, "dag %d", dag);
    }
    if (!keep_peak)
        cr_assert_neq(rs.screened, OP_PRIORITY_FIFO, "dag %d", dag);
    op_placement_destroy(&pl);
    op_sim_result_destroy(&r);
}

Test(reorder, never_worse_on_random_dags)
{
    op_error err = {0};
    int kept = 0;
    for (int t = 0; t < 20; t++) {
        tk_problem tp;
        int nd = 2 + t % 3;
        /* every fourth cluster has room for a fraction of the graph only */
        int64_t mem = t % 4 == 3 ? (int64_t)1 << 16 : (int64_t)1 << 40;
        tk_bind(&tp, tk_random_dag(50 + 9 * t, 0.03 + 0.01 * (t % 4), 500 + (uint64_t)t),
                tk_cluster(nd, 5.0, 1e-3, mem));
        const op_problem *p = &tp.p;
        op_placement pl;
        cr_assert_eq(op_placement_init(&pl, p->n, nd, &err), OP_OK);
        uint64_t s = 31 + (uint64_t)t;
        for (int i = 0; i < p->n; i++)
            pl.device_of[i] = (int)(tk_rand(&s) % (uint64_t)nd);
        for (int keep_peak = 0; keep_peak < 2; keep_peak++)
            check_one(p, &pl, keep_peak, t);
        op_reorder_stats rs;
        cr_assert_eq(op_placement_reorder(p, &pl, 0, &rs, &err), OP_OK);
        kept += rs.priority != OP_PRIORITY_FIFO;
        check_one(p, &pl, 0, t); /* an ordered input */
        op_placement_destroy(&pl);
        tk_unbind(&tp);
    }
    cr_assert_gt(kept, 0, "no order beat first-ready-first on any of 20 random placements");
}

/* A and B on d0, C on d1 after B, 5 us transfer: first-ready-first runs A
 * first, 10 + 10 + 5 + 100 = 125 us; B first gives 10 + 5 + 100 = 115 us. */
Test(reorder, finds_the_critical_path_order_on_a_hand_built_graph)
{
    op_error err = {0};
    int id[3];
    tk_problem tp;
    op_placement pl;
    tk_order_matters_setup(&tp, &pl, id);
    int bb = id[1];
    const op_problem *p = &tp.p;
    op_reorder_stats rs;
    cr_assert_eq(op_placement_reorder(p, &pl, 1, &rs, &err), OP_OK);
    cr_assert_float_eq(rs.initial_us, 125.0, 1e-9);
    cr_assert_float_eq(rs.final_us, 115.0, 1e-9);
    cr_assert_neq(rs.priority, OP_PRIORITY_FIFO);
    cr_assert_eq(pl.order[pl.order_off[0]], bb, "B runs first on d0");
    /* already optimal: a second pass keeps the order it has */
    int first = pl.order[pl.order_off[0]];
    cr_assert_eq(op_placement_reorder(p, &pl, 0, &rs, &err), OP_OK);
    cr_assert_eq(rs.priority, OP_PRIORITY_FIFO);
    cr_assert_float_eq(rs.final_us, 115.0, 1e-9);
    cr_assert(pl.has_order);
    cr_assert_eq(pl.order[pl.order_off[0]], first);
    op_placement_destroy(&pl);
    tk_unbind(&tp);
}

Test(reorder, cli_writes_an_order_that_simulates_to_the_printed_step)
{
    const char *dir = tk_tmpdir();
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s zoo rnnlm --layers 2 --seq-len 8 --hidden 256 -o %s/g.json", OPPLACE_BIN, dir);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    free(out);
    const char *place = "%s place %s/g.json --preset v100-nvlink --gpus 2 --algo expert --json";
    snprintf(cmd, sizeof cmd, place, OPPLACE_BIN, dir);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    double fifo = tk_json_number(out, "step_time_us");
    free(out);
    snprintf(cmd, sizeof cmd, "%s --order peak -o %s/p.json 2>/dev/null", place, dir);
    char full[4200];
    snprintf(full, sizeof full, cmd, OPPLACE_BIN, dir, dir);
    cr_assert_eq(tk_run(full, &out), 0, "%s", out);
    double ordered = tk_json_number(out, "step_time_us");
    free(out);
    cr_assert_lt(ordered, fifo, "expert's layer split pipelines better with an order");
    snprintf(cmd, sizeof cmd, "%s simulate %s/g.json --preset v100-nvlink --gpus 2 --placement "
             "%s/p.json --json", OPPLACE_BIN, dir, dir);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    cr_assert_eq(tk_json_number(out, "step_time_us"), ordered);
    free(out);
    snprintf(cmd, sizeof cmd, "%s place %s/g.json --algo expert --order sideways", OPPLACE_BIN,
             dir);
    cr_assert_eq(tk_run(cmd, &out), 2, "%s", out);
    cr_assert(strstr(out, "--order must be one of own|none|fit|peak") != NULL, "%s", out);
    free(out);
}
