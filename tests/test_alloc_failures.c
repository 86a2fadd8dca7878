/*
 * test_alloc_failures.c - allocation-failure injection, the way
 * SQLite attacks itself: every op_malloc/op_calloc/op_realloc call of a
 * scenario is made to fail in turn (op_alloc_fail_after, opplace/error.h),
 * once alone and once with every later call failing too.  Each run must end
 * in OP_ENOMEM with a message, or succeed with exactly the result of the run
 * without injection - never a crash, an assertion, or (under ASan, whose
 * leak checker runs when each test's process exits) a leak.
 *
 * Scenarios: the three JSON readers (graph, cluster, placement), a writer
 * pair, the ONNX importer (tests/data/onnx/tiny_mlp.onnx: three nodes, two
 * of them named alike, one initializer), the simulator with a trace, and the
 * fast placers on the catalogue's good files.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_hooks.h"
#include "opplace/io.h"
#include "opplace/placer.h"
#include "opplace/problem.h"
#include "opplace/simulate.h"
#include "testkit.h"

#define DATA OPPLACE_TEST_DATA
#define MAX_POINTS 200000

/* A scenario returns its status and, on success, a number that
 * characterises the result (compared with the run without injection). */
typedef op_status (*scenario)(const void *arg, double *result, op_error *err);

static op_status read_inputs(op_graph **g, op_cluster **c, op_error *err)
{
    *g = op_graph_read(DATA "/good_graph.json", err);
    *c = *g ? op_cluster_read(DATA "/good_cluster.json", err) : NULL;
    if (*g && *c)
        return OP_OK;
    op_graph_free(*g);
    op_cluster_free(*c);
    *g = NULL;
    *c = NULL;
    return err->code ? err->code : OP_ENOMEM;
}

static op_status sc_readers(const void *arg, double *result, op_error *err)
{
    (void)arg;
    op_graph *g;
    op_cluster *c;
    op_status st = read_inputs(&g, &c, err);
    if (st)
        return st;
    op_placement pl = {0};
    st = op_placement_read(DATA "/good_placement.json", g, c, &pl, err);
    if (!st) {
        *result = g->n_ops + 1000.0 * g->n_edges + 1e6 * c->n_dev + 1e7 * pl.n_ops;
        op_placement_destroy(&pl);
    }
    op_graph_free(g);
    op_cluster_free(c);
    return st;
}

static op_status sc_simulate(const void *arg, double *result, op_error *err)
{
    (void)arg;
    op_graph *g;
    op_cluster *c;
    op_status st = read_inputs(&g, &c, err);
    if (st)
        return st;
    op_problem p;
    op_placement pl = {0};
    op_sim_result r;
    op_sim_trace t;
    int have_p = 0, have_pl = 0, have_r = 0, have_t = 0;
    if (!(st = op_problem_init(&p, g, c, err)))
        have_p = 1;
    if (!st && !(st = op_placement_read(DATA "/good_placement.json", g, c, &pl, err)))
        have_pl = 1;
    if (!st && !(st = op_sim_result_init(&r, &p, err)))
        have_r = 1;
    if (!st && !(st = op_sim_trace_init(&t, &p, err)))
        have_t = 1;
    if (!st && !(st = op_simulate(&p, &pl, &r, &t, err)))
        *result = r.step_time_us + 1e-3 * (double)r.comm_bytes + (double)t.n_transfers;
    if (have_t)
        op_sim_trace_destroy(&t);
    if (have_r)
        op_sim_result_destroy(&r);
    if (have_pl)
        op_placement_destroy(&pl);
    if (have_p)
        op_problem_destroy(&p);
    op_graph_free(g);
    op_cluster_free(c);
    return st;
}

static op_status sc_write(const void *arg, double *result, op_error *err)
{
    (void)arg;
    op_graph *g;
    op_cluster *c;
    op_status st = read_inputs(&g, &c, err);
    if (st)
        return st;
    char path[512];
    snprintf(path, sizeof path, "%s/alloc_cluster.json", tk_tmpdir());
    st = op_cluster_write(c, path, err);
    if (!st) {
        op_cluster *d = op_cluster_read(path, err);
        if (!d)
            st = err->code ? err->code : OP_ENOMEM;
        else
            *result = d->n_dev + 100.0 * d->n_links + 1e4 * d->n_named_chan;
        op_cluster_free(d);
    }
    op_graph_free(g);
    op_cluster_free(c);
    return st;
}

static op_status sc_place(const void *arg, double *result, op_error *err)
{
    const op_placer *placer = op_placer_find(arg);
    cr_assert(placer, "no placer %s", (const char *)arg);
    op_graph *g;
    op_cluster *c;
    op_status st = read_inputs(&g, &c, err);
    if (st)
        return st;
    op_problem p;
    if ((st = op_problem_init(&p, g, c, err))) {
        op_graph_free(g);
        op_cluster_free(c);
        return st;
    }
    op_place_ctx ctx = {.p = &p, .seed = 1};
    op_placement pl;
    if (!(st = op_place(placer, &ctx, &pl, err))) {
        double h = 0;
        for (int i = 0; i < pl.n_ops; i++)
            h = h * 7 + pl.device_of[i];
        *result = h;
        op_placement_destroy(&pl);
    }
    op_problem_destroy(&p);
    op_graph_free(g);
    op_cluster_free(c);
    return st;
}

static op_status sc_onnx(const void *arg, double *result, op_error *err)
{
    (void)arg;
    op_graph *g = op_onnx_import(DATA "/onnx/tiny_mlp.onnx", NULL, err);
    if (!g)
        return err->code ? err->code : OP_ENOMEM;
    *result = g->n_ops + 1000.0 * g->n_edges + (double)g->param_bytes[0];
    op_graph_free(g);
    return OP_OK;
}

/* Fail each allocation point of sc in turn (single failures, then sticky). */
static void drive(scenario sc, const void *arg, const char *what)
{
    op_error err = {0};
    double want = NAN;
    op_alloc_fail_after(0, 0);
    cr_assert_eq(sc(arg, &want, &err), OP_OK, "%s without injection: %s", what, err.msg);
    for (int sticky = 0; sticky <= 1; sticky++) {
        long n;
        for (n = 1; n < MAX_POINTS; n++) {
            op_error e = {0};
            double got = NAN;
            op_alloc_fail_after(n, sticky);
            op_status st = sc(arg, &got, &e);
            int failed = op_alloc_failed();
            op_alloc_fail_after(0, 0);
            if (!failed) { /* every allocation point was tried */
                cr_expect_eq(st, OP_OK, "%s: %s", what, e.msg);
                break;
            }
            if (st == OP_OK)
                cr_expect(got == want, "%s: allocation %ld failed%s, yet the run succeeded "
                          "with a different result (%g, not %g)", what, n,
                          sticky ? " (sticky)" : "", got, want);
            else
                cr_expect(e.code == OP_ENOMEM && e.msg[0],
                          "%s: allocation %ld failed%s: status %d, code %d, message '%s' "
                          "(want OP_ENOMEM with a message)", what, n, sticky ? " (sticky)" : "",
                          (int)st, (int)e.code, e.msg);
        }
        cr_expect_lt(n, MAX_POINTS, "%s: more than %d allocations", what, MAX_POINTS);
        cr_expect_gt(n, 1, "%s makes no checked allocation", what);
    }
}

Test(alloc_failures, readers)
{
    drive(sc_readers, NULL, "graph, cluster and placement readers");
}

Test(alloc_failures, writer_and_reader_round_trip)
{
    drive(sc_write, NULL, "cluster write + read");
}

Test(alloc_failures, onnx_import)
{
    drive(sc_onnx, NULL, "ONNX import of tests/data/onnx/tiny_mlp.onnx");
}

Test(alloc_failures, simulator_with_trace)
{
    drive(sc_simulate, NULL, "simulate with a trace");
}

Test(alloc_failures, fast_placers)
{
    static const char *const placers[] = {"single", "round-robin", "m-topo", "m-etf", "heft",
                                          "expert", "dfs-topo", "order-place", "celeritas"};
    for (size_t i = 0; i < sizeof placers / sizeof *placers; i++)
        drive(sc_place, placers[i], placers[i]);
}
