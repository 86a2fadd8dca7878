/*
 * test_sim_shared.c - the optional simulation rules of formats.md 5.7
 * (dispatch_us) and 5.8 (devices that share compute), against
 * hand-computed steps, and the cluster file's fields that carry them.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_hooks.h"
#include "opplace/io.h"
#include "opplace/simulate.h"
#include "testkit.h"

#define LAT 2.0
#define BIG ((int64_t)1 << 40)

/* nd devices (tk_cluster: latency LAT, 0 us per byte) with devices
 * 0..k-1 sharing compute at alone 1.0, all `all`. */
static op_cluster *shared_cluster(int nd, int k, double all)
{
    op_cluster *c = tk_cluster(nd, LAT, 0, BIG);
    int devs[16];
    for (int i = 0; i < k; i++)
        devs[i] = i;
    op_error err = {0};
    cr_assert_eq(op_cluster_add_share(c, devs, k, 1.0, all, "test", "shared[0]", &err), OP_OK,
                 "%s", err.msg);
    return c;
}

Test(shared, rate_interpolates_from_alone_to_all)
{
    op_cluster *c = shared_cluster(3, 3, 0.4);
    const op_share_group *g = &c->share[0];
    cr_expect_float_eq(op_share_rate(g, 1), 1.0, 1e-12);
    cr_expect_float_eq(op_share_rate(g, 2), 0.7, 1e-12); /* 1 - 0.6 * 1/2 */
    cr_expect_float_eq(op_share_rate(g, 3), 0.4, 1e-12);
    op_cluster_free(c);
}

/* formats.md 5.8 worked example: a (10 us) and b (30 us) start together at
 * rate 0.5: a finishes at 20 having done 10; b has done 10, runs its last
 * 20 alone: 40. */
Test(shared, two_ops_start_together)
{
    op_graph_builder *b = op_graph_builder_new("two", NULL);
    int a = tk_op(b, "a", 10, 0), bb = tk_op(b, "b", 30, 0);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), shared_cluster(2, 2, 0.5));
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 1}, NULL, NULL, &o);
    cr_expect_float_eq(o.t.finish_us[a], 20.0, 1e-9);
    cr_expect_float_eq(o.t.finish_us[bb], 40.0, 1e-9);
    cr_expect_float_eq(o.r.step_time_us, 40.0, 1e-9);
    cr_expect_float_eq(o.r.busy_us[0], 20.0, 1e-9);
    cr_expect_float_eq(o.r.busy_us[1], 40.0, 1e-9);
    tk_sim_done(&o, &tp);
}

/* Staggered starts: z (5 us) on d2, outside the group, feeds b on d1 over a
 * 2 us transfer, so b starts at 7.  a (10) on d0 runs alone 0-7 (7 done),
 * then both at 0.5: a's last 3 take 6 -> 13; b does 3 in 7-13, its last 27
 * alone -> 40. */
Test(shared, staggered_starts)
{
    op_graph_builder *b = op_graph_builder_new("stagger", NULL);
    int a = tk_op(b, "a", 10, 0), z = tk_op(b, "z", 5, 0), bb = tk_op(b, "b", 30, 0);
    tk_edge(b, z, bb, 0);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), shared_cluster(3, 2, 0.5));
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 2, 1}, NULL, NULL, &o);
    cr_expect_float_eq(o.t.start_us[bb], 7.0, 1e-9);
    cr_expect_float_eq(o.t.finish_us[z], 5.0, 1e-9);
    cr_expect_float_eq(o.t.finish_us[a], 13.0, 1e-9);
    cr_expect_float_eq(o.t.finish_us[bb], 40.0, 1e-9);
    tk_sim_done(&o, &tp);
}

/* One device of the group computing alone runs at full speed: a chain
 * a (10), c (20) on d0 takes 30, as without the field. */
Test(shared, one_device_alone_runs_at_full_speed)
{
    op_graph_builder *b = op_graph_builder_new("alone", NULL);
    int a = tk_op(b, "a", 10, 0), c = tk_op(b, "c", 20, 0);
    tk_edge(b, a, c, 0);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), shared_cluster(2, 2, 0.25));
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 0}, NULL, NULL, &o);
    cr_expect_float_eq(o.t.start_us[c], 10.0, 1e-9);
    cr_expect_float_eq(o.r.step_time_us, 30.0, 1e-9);
    tk_sim_done(&o, &tp);
}

/* Three of three computing, then two: alone 1, all 0.4, so rates 0.4 and
 * 0.7.  a (4), b (10), c (10) start together at 0.4: a finishes at 10;
 * b and c have 6 left at 0.7: 10 + 6/0.7. */
Test(shared, three_devices_interpolated_rate)
{
    op_graph_builder *b = op_graph_builder_new("three", NULL);
    int a = tk_op(b, "a", 4, 0), bb = tk_op(b, "b", 10, 0), c = tk_op(b, "c", 10, 0);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), shared_cluster(3, 3, 0.4));
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 1, 2}, NULL, NULL, &o);
    cr_expect_float_eq(o.t.finish_us[a], 10.0, 1e-9);
    cr_expect_float_eq(o.t.finish_us[bb], 10.0 + 6.0 / 0.7, 1e-9);
    cr_expect_float_eq(o.t.finish_us[c], 10.0 + 6.0 / 0.7, 1e-9);
    tk_sim_done(&o, &tp);
}

/* Devices outside every group are never slowed: d2 beside a group {d0, d1}. */
Test(shared, device_outside_the_group_is_not_slowed)
{
    op_graph_builder *b = op_graph_builder_new("outside", NULL);
    int a = tk_op(b, "a", 10, 0), bb = tk_op(b, "b", 10, 0), c = tk_op(b, "c", 10, 0);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), shared_cluster(3, 2, 0.5));
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 1, 2}, NULL, NULL, &o);
    cr_expect_float_eq(o.t.finish_us[a], 20.0, 1e-9);
    cr_expect_float_eq(o.t.finish_us[bb], 20.0, 1e-9);
    cr_expect_float_eq(o.t.finish_us[c], 10.0, 1e-9);
    tk_sim_done(&o, &tp);
}

/* A group with all == alone simulates bit for bit like no group, on a
 * random DAG spread over 4 devices. */
Test(shared, all_equal_alone_is_exactly_no_group)
{
    for (uint64_t seed = 1; seed <= 3; seed++) {
        tk_problem plain0, grouped;
        tk_bind(&plain0, tk_random_dag(300, 0.02, seed), tk_cluster(4, LAT, 0, BIG));
        tk_bind(&grouped, tk_random_dag(300, 0.02, seed), shared_cluster(4, 4, 1.0));
        int *dev = malloc(300 * sizeof *dev);
        uint64_t st = seed;
        for (int i = 0; i < 300; i++)
            dev[i] = (int)(tk_rand(&st) % 4);
        tk_sim_out y, z;
        tk_sim(&plain0, dev, NULL, NULL, &z);
        tk_sim(&grouped, dev, NULL, NULL, &y);
        cr_expect_eq(z.r.step_time_us, y.r.step_time_us, "seed %llu", (unsigned long long)seed);
        for (int i = 0; i < 300; i++) {
            cr_expect_eq(z.t.start_us[i], y.t.start_us[i]);
            cr_expect_eq(z.t.finish_us[i], y.t.finish_us[i]);
        }
        for (int d = 0; d < 4; d++)
            cr_expect_eq(z.r.peak_mem[d], y.r.peak_mem[d]);
        free(dev);
        tk_sim_done(&y, &grouped);
        tk_sim_done(&z, &plain0);
    }
}

/* Every op of a random DAG on a 4-device group takes from its time (all
 * alone) to its time / 0.3 (all four computing the whole while); the run
 * is deterministic, and incremental re-simulation agrees with a full run.
 * Many rate changes exercise the event heap's compaction of stale events. */
Test(shared, random_dag_durations_within_rates_and_repeatable)
{
    tk_problem tp;
    tk_bind(&tp, tk_random_dag(800, 0.01, 7), shared_cluster(4, 4, 0.3));
    int *dev = malloc(800 * sizeof *dev);
    uint64_t st = 99;
    for (int i = 0; i < 800; i++)
        dev[i] = (int)(tk_rand(&st) % 4);
    tk_sim_out o, o2;
    tk_sim(&tp, dev, NULL, NULL, &o);
    tk_sim(&tp, dev, NULL, NULL, &o2);
    cr_expect_eq(o.r.step_time_us, o2.r.step_time_us);
    double busy[4] = {0};
    for (int i = 0; i < 800; i++) {
        double t = op_exec_us(&tp.p, i, dev[i]), d = o.t.finish_us[i] - o.t.start_us[i];
        cr_expect(d >= t - 1e-9 * (1 + t) && d <= t / 0.3 + 1e-9 * (1 + t),
                  "op %d: ran %g us for %g us of work", i, d, t);
        busy[dev[i]] += d;
        cr_expect_eq(o.t.finish_us[i], o2.t.finish_us[i]);
    }
    for (int d = 0; d < 4; d++)
        cr_expect_float_eq(o.r.busy_us[d], busy[d], 1e-6);
    /* incremental evaluation falls back to a full run, same answer */
    op_error err = {0};
    op_sim *s = op_sim_new(&tp.p, &err);
    op_placement pl;
    op_placement_init(&pl, 800, 4, &err);
    memcpy(pl.device_of, dev, 800 * sizeof *dev);
    op_sim_result r;
    op_sim_result_init(&r, &tp.p, &err);
    cr_assert_eq(op_sim_record(s, &pl, 8, &r, &err), OP_OK);
    cr_expect_eq(r.step_time_us, o.r.step_time_us);
    pl.device_of[500] = (pl.device_of[500] + 1) % 4;
    cr_assert_eq(op_sim_run_changed(s, &pl, &r, &err), OP_OK);
    double changed = r.step_time_us;
    cr_assert_eq(op_sim_run(s, &pl, &r, NULL, &err), OP_OK);
    cr_expect_eq(changed, r.step_time_us);
    op_sim_result_destroy(&r);
    op_placement_destroy(&pl);
    op_sim_free(s);
    free(dev);
    tk_sim_out_destroy(&o2);
    tk_sim_done(&o, &tp);
}

/* formats.md 5.7: d0 pays 3 us before each op.  Chain a (10), b (20) on d0:
 * a occupies 0-13, b 13-36. */
Test(dispatch, paid_before_each_op)
{
    op_graph_builder *b = op_graph_builder_new("disp", NULL);
    int a = tk_op(b, "a", 10, 0), bb = tk_op(b, "b", 20, 0);
    tk_edge(b, a, bb, 0);
    op_cluster *c = tk_cluster(2, LAT, 0, BIG);
    op_error err = {0};
    cr_assert_eq(op_cluster_set_dispatch(c, 0, 3.0, "test", &err), OP_OK);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), c);
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 0}, NULL, NULL, &o);
    cr_expect_float_eq(o.t.finish_us[a], 13.0, 1e-9);
    cr_expect_float_eq(o.t.start_us[bb], 13.0, 1e-9);
    cr_expect_float_eq(o.r.step_time_us, 36.0, 1e-9);
    cr_expect_float_eq(o.r.busy_us[0], 36.0, 1e-9);
    tk_sim_done(&o, &tp);
    /* on d1, which has none: 30 */
    b = op_graph_builder_new("disp", NULL);
    a = tk_op(b, "a", 10, 0);
    bb = tk_op(b, "b", 20, 0);
    tk_edge(b, a, bb, 0);
    c = tk_cluster(2, LAT, 0, BIG);
    cr_assert_eq(op_cluster_set_dispatch(c, 0, 3.0, "test", &err), OP_OK);
    tk_bind(&tp, tk_finish(b), c);
    tk_sim(&tp, (int[]){1, 1}, NULL, NULL, &o);
    cr_expect_float_eq(o.r.step_time_us, 30.0, 1e-9);
    tk_sim_done(&o, &tp);
}

/* Dispatch is host work outside the shared units: d0 dispatches 2 us then
 * computes a (10); b (30) on d1 starts computing at 0.  0-2 b alone (2
 * done); 2-22 both at 0.5 (a done, b 12 done); b's last 18 alone: 40. */
Test(dispatch, not_slowed_by_sharing)
{
    op_graph_builder *b = op_graph_builder_new("two", NULL);
    int a = tk_op(b, "a", 10, 0), bb = tk_op(b, "b", 30, 0);
    op_cluster *c = shared_cluster(2, 2, 0.5);
    op_error err = {0};
    cr_assert_eq(op_cluster_set_dispatch(c, 0, 2.0, "test", &err), OP_OK);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), c);
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 1}, NULL, NULL, &o);
    cr_expect_float_eq(o.t.start_us[a], 0.0, 1e-9);
    cr_expect_float_eq(o.t.finish_us[a], 22.0, 1e-9);
    cr_expect_float_eq(o.t.finish_us[bb], 40.0, 1e-9);
    tk_sim_done(&o, &tp);
}

Test(shared, bad_groups_are_refused)
{
    op_cluster *c = tk_cluster(3, LAT, 0, BIG);
    op_error err = {0};
    err = (op_error){0};
    cr_expect_eq(op_cluster_add_share(c, (int[]){0}, 1, 1, 0.5, "t", "shared[0]", &err),
                 OP_EINPUT);
    err = (op_error){0};
    cr_expect_eq(op_cluster_add_share(c, (int[]){0, 0}, 2, 1, 0.5, "t", "shared[0]", &err),
                 OP_EINPUT);
    cr_expect(strstr(err.msg, "twice"), "%s", err.msg);
    err = (op_error){0};
    cr_expect_eq(op_cluster_add_share(c, (int[]){0, 1}, 2, 1, 1.5, "t", "shared[0]", &err),
                 OP_EINPUT);
    err = (op_error){0};
    cr_expect_eq(op_cluster_add_share(c, (int[]){0, 1}, 2, 1, 0, "t", "shared[0]", &err),
                 OP_EINPUT);
    err = (op_error){0};
    cr_expect_eq(op_cluster_add_share(c, (int[]){0, 1}, 2, 1, 0.5, "t", "shared[0]", &err),
                 OP_OK);
    err = (op_error){0};
    cr_expect_eq(op_cluster_add_share(c, (int[]){2, 1}, 2, 1, 0.5, "t", "shared[1]", &err),
                 OP_EINPUT);
    cr_expect(strstr(err.msg, "already in shared group 0"), "%s", err.msg);
    err = (op_error){0};
    cr_expect_eq(op_cluster_set_dispatch(c, 0, -1, "t", &err), OP_EINPUT);
    op_cluster_free(c);
}

static const char *write_tmp(const char *name, const char *text)
{
    static char path[4][512];
    static int k;
    char *p = path[k++ % 4];
    snprintf(p, 512, "%s/%s", tk_tmpdir(), name);
    FILE *f = fopen(p, "w");
    cr_assert(f);
    fputs(text, f);
    fclose(f);
    return p;
}

#define HEAD "{\"format\": \"opplace-cluster\", \"version\": 1, \"devices\": [" \
    "{\"name\": \"cpu:0\", \"kind\": \"cpu\", \"memory_bytes\": 100, \"dispatch_us\": 4.5}," \
    "{\"name\": \"cpu:1\", \"kind\": \"cpu\", \"memory_bytes\": 100}]," \
    "\"default_link\": {\"latency_us\": 10, \"us_per_byte\": 0.01}"

Test(shared, file_fields_read_and_round_trip)
{
    op_error err = {0};
    const char *p = write_tmp("c.json", HEAD ", \"shared\": [{\"devices\": [\"cpu:1\", \"cpu:0\"], "
                              "\"alone\": 95, \"all\": 41.8}]}");
    op_cluster *c = op_cluster_read(p, &err);
    cr_assert(c, "%s", err.msg);
    cr_expect_eq(c->n_share, 1);
    cr_expect_eq(c->share[0].dev[0], 1);
    cr_expect_eq(c->share[0].dev[1], 0);
    cr_expect_float_eq(op_share_rate(&c->share[0], 2), 0.44, 1e-12);
    cr_expect_float_eq(op_cluster_dispatch_us(c, 0), 4.5, 1e-12);
    cr_expect_float_eq(op_cluster_dispatch_us(c, 1), 0.0, 1e-12);
    char out[512];
    snprintf(out, sizeof out, "%s/c2.json", tk_tmpdir());
    cr_assert_eq(op_cluster_write(c, out, &err), OP_OK, "%s", err.msg);
    op_cluster *d = op_cluster_read(out, &err);
    cr_assert(d, "%s", err.msg);
    cr_expect_eq(d->n_share, 1);
    cr_expect_float_eq(d->share[0].alone, 95, 1e-12);
    cr_expect_float_eq(d->share[0].all, 41.8, 1e-12);
    cr_expect_float_eq(op_cluster_dispatch_us(d, 0), 4.5, 1e-12);
    op_cluster_free(c);
    op_cluster_free(d);
    /* a file without the fields has none */
    c = op_cluster_read(write_tmp("c3.json", HEAD "}"), &err);
    cr_assert(c, "%s", err.msg);
    cr_expect_eq(c->n_share, 0);
    cr_expect_null(c->share_of);
    op_cluster_free(c);
}

Test(shared, bad_files_name_the_key)
{
    op_error err = {0};
    struct { const char *tail, *want; } bad[] = {
        {", \"shared\": [{\"devices\": [\"cpu:0\", \"gpu:9\"], \"alone\": 1, \"all\": 0.5}]}",
         "shared[0].devices[1]: unknown device 'gpu:9'"},
        {", \"shared\": [{\"devices\": [\"cpu:0\", \"cpu:1\"], \"alone\": 1}]}", "shared[0].all"},
        {", \"shared\": [{\"devices\": [\"cpu:0\", \"cpu:1\"], \"alone\": 1, \"all\": 2}]}",
         "all <= alone"},
        {", \"shared\": [{\"devices\": [\"cpu:0\"], \"alone\": 1, \"all\": 0.5}]}",
         "shared[0].devices"},
        {", \"shared\": {}}", "shared: must be an array"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[1024];
        snprintf(text, sizeof text, "%s%s", HEAD, bad[i].tail);
        err = (op_error){0};
        op_cluster *c = op_cluster_read(write_tmp("bad.json", text), &err);
        cr_expect_null(c, "case %zu accepted", i);
        cr_expect(strstr(err.msg, bad[i].want), "case %zu: %s", i, err.msg);
        op_cluster_free(c);
    }
    char text[1024];
    snprintf(text, sizeof text, "%s", HEAD "}");
    char *at = strstr(text, "4.5");
    memcpy(at, "-45", 3);
    err = (op_error){0};
    cr_expect_null(op_cluster_read(write_tmp("bad.json", text), &err));
    cr_expect(strstr(err.msg, "devices[0].dispatch_us"), "%s", err.msg);
}

/* ---- allocation failures (as tests/test_alloc_failures.c): every checked
 * allocation of reading a cluster with both fields, simulating on it with a
 * trace, and reading a measured trace fails in turn; each run ends in
 * OP_ENOMEM with a message or succeeds with the same result, never a crash
 * or (under ASan) a leak. */

#include "opplace/report.h"

#define DATA OPPLACE_TEST_DATA

static char shared_path[512], measured_path[512];

static op_status sc_shared(double *result, op_error *err)
{
    op_graph *g = op_graph_read(DATA "/good_graph.json", err);
    if (!g)
        return err->code ? err->code : OP_ENOMEM;
    op_cluster *c = op_cluster_read(shared_path, err);
    if (!c) {
        op_graph_free(g);
        return err->code ? err->code : OP_ENOMEM;
    }
    op_problem p;
    op_placement pl = {0};
    op_sim_result r;
    op_sim_trace t, m;
    int have_p = 0, have_pl = 0, have_r = 0, have_t = 0, have_m = 0;
    op_status st = op_problem_init(&p, g, c, err);
    have_p = !st;
    if (!st && !(st = op_placement_read(DATA "/good_placement.json", g, c, &pl, err)))
        have_pl = 1;
    if (!st) {
        /* first-ready-first, so every device's op may overlap the others' */
        op_placement_drop_order(&pl);
    }
    if (!st && !(st = op_sim_result_init(&r, &p, err)))
        have_r = 1;
    if (!st && !(st = op_sim_trace_init(&t, &p, err)))
        have_t = 1;
    if (!st && !(st = op_simulate(&p, &pl, &r, &t, err)))
        *result = r.step_time_us + 1e-3 * (double)r.comm_bytes + (double)t.n_transfers;
    if (!st && !(st = op_measured_read(&p, &pl, measured_path, &m, err))) {
        have_m = 1;
        *result += 1e6 * m.finish_us[0];
    }
    if (have_m)
        op_sim_trace_destroy(&m);
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

Test(shared, allocation_failures)
{
    snprintf(shared_path, sizeof shared_path, "%s",
             write_tmp("alloc_shared.json",
                       "{\"format\": \"opplace-cluster\", \"version\": 1, \"devices\": ["
                       "{\"name\": \"gpu:0\", \"kind\": \"gpu\", \"memory_bytes\": 1000000, "
                       "\"dispatch_us\": 1.5},"
                       "{\"name\": \"gpu:1\", \"kind\": \"gpu\", \"memory_bytes\": 1000000},"
                       "{\"name\": \"cpu:0\", \"kind\": \"cpu\", \"memory_bytes\": 4000000}],"
                       "\"default_link\": {\"latency_us\": 10, \"us_per_byte\": 0.0001},"
                       "\"shared\": [{\"devices\": [\"gpu:0\", \"gpu:1\"], \"alone\": 2, "
                       "\"all\": 1}]}"));
    snprintf(measured_path, sizeof measured_path, "%s",
             write_tmp("alloc_measured.json",
                       "{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 1, \"tid\": 0, \"ts\": 5, "
                       "\"dur\": 7, \"name\": \"a\", \"cat\": \"Op\"}]}"));
    op_error err = {0};
    double want = NAN;
    op_alloc_fail_after(0, 0);
    cr_assert_eq(sc_shared(&want, &err), OP_OK, "without injection: %s", err.msg);
    for (int sticky = 0; sticky <= 1; sticky++) {
        long n;
        for (n = 1; n < 100000; n++) {
            op_error e = {0};
            double got = NAN;
            op_alloc_fail_after(n, sticky);
            op_status st = sc_shared(&got, &e);
            int failed = op_alloc_failed();
            op_alloc_fail_after(0, 0);
            if (!failed) {
                cr_expect_eq(st, OP_OK, "%s", e.msg);
                break;
            }
            if (st == OP_OK)
                cr_expect(got == want, "allocation %ld failed, yet a different result", n);
            else
                cr_expect(e.code == OP_ENOMEM && e.msg[0], "allocation %ld failed%s: code %d, "
                          "'%s'", n, sticky ? " (sticky)" : "", (int)e.code, e.msg);
        }
        cr_expect_gt(n, 10, "too few allocations tried");
    }
}
