/*
 * test_api.c - the worked example at the top of opplace/opplace.h, run as
 * written (only opplace/opplace.h included): the placement it writes reads
 * back and simulates to the step it printed, which is no less than the
 * lower bound.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "opplace/opplace.h"
#include "testkit.h"

#define fail(msg) cr_assert_fail("%s", msg)

Test(api, the_header_example_places_simulates_and_writes)
{
    const char *dir = tk_tmpdir();
    char model[512], out[512], cmd[1200], *o = NULL;
    snprintf(model, sizeof model, "%s/model.json", dir);
    snprintf(out, sizeof out, "%s/placement.json", dir);
    snprintf(cmd, sizeof cmd, "%s zoo synthetic --ops 120 --width 6 -o %s", OPPLACE_BIN, model);
    cr_assert_eq(tk_run(cmd, &o), 0, "%s", o);
    free(o);

    op_error err = {0};
    op_graph *g = op_graph_read(model, &err);
    op_cluster *c = g ? op_cluster_preset("v100-nvlink", 4, 0, &err) : NULL;
    op_problem p;
    if (!c || op_problem_init(&p, g, c, &err))
        fail(err.msg);
    op_place_ctx ctx = {.p = &p, .seed = 1, .budget_seconds = 0.5};
    op_placement pl;
    if (op_place(op_placer_find("auto"), &ctx, &pl, &err))
        fail(err.msg);
    op_sim_result r;
    op_sim_result_init(&r, &p, &err);
    op_simulate(&p, &pl, &r, NULL, &err);
    cr_expect_geq(r.step_time_us, p.lower_bound_us * (1 - 1e-9));
    op_metrics m = {.step_time_us = r.step_time_us, .oom = r.oom,
                    .comm_bytes = r.comm_bytes, .peak_mem = r.peak_mem};
    cr_assert_eq(op_placement_write(&pl, g, c, &m, out, &err), OP_OK, "%s", err.msg);

    op_placement back = {0};
    op_sim_result r2;
    cr_assert_eq(op_placement_read(out, g, c, &back, &err), OP_OK, "%s", err.msg);
    op_sim_result_init(&r2, &p, &err);
    cr_assert_eq(op_simulate(&p, &back, &r2, NULL, &err), OP_OK, "%s", err.msg);
    cr_expect_eq(r2.step_time_us, r.step_time_us);
    op_sim_result_destroy(&r2);
    op_placement_destroy(&back);

    op_sim_result_destroy(&r);
    op_placement_destroy(&pl);
    op_problem_destroy(&p);
    op_cluster_free(c);
    op_graph_free(g);
}
