/*
 * test_sim_host.c - the optional transfer host cost of formats.md 5.9
 * (a link's send_us, send_us_per_byte, recv_us, recv_us_per_byte) against
 * hand-computed steps, and the cluster file's keys that carry it.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "opplace/io.h"
#include "opplace/simulate.h"
#include "testkit.h"

#define BIG ((int64_t)1 << 40)

/* nd devices; every pair: latency 2 us + 0.01 us/B, and the host cost h. */
static op_cluster *host_cluster(int nd, op_link_host h)
{
    op_device devs[4];
    char names[4][8];
    for (int i = 0; i < nd; i++) {
        snprintf(names[i], sizeof names[i], "d%d", i);
        devs[i] = (op_device){names[i], "gpu", BIG, 1.0};
    }
    op_link_model def = {.latency_us = 2, .us_per_byte = 0.01, .host = h};
    op_error err = {0};
    op_cluster *c = op_cluster_new(devs, nd, NULL, 0, &def, "test", &err);
    cr_assert(c, "%s", err.msg);
    return c;
}

static const op_link_host HOST = {3, 0.001, 5, 0.002}; /* 1000 B: send 4 us, receive 7 us */

/* a (10, d0) -> b (20, d1), 1000 B; c (5, d0) after a.  a 0-10; the
 * transfer 10-22 (2 + 10); d0 sends 10-14, so c runs 14-19; b is ready at
 * 22, receives 22-29, computes 29-49. */
Test(host, send_after_the_producer_receive_before_the_consumer)
{
    op_graph_builder *b = op_graph_builder_new("host", NULL);
    int a = tk_op(b, "a", 10, 1000), bb = tk_op(b, "b", 20, 0), c = tk_op(b, "c", 5, 0);
    tk_edge(b, a, bb, 1000);
    tk_edge(b, a, c, 1000);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), host_cluster(2, HOST));
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 1, 0}, NULL, NULL, &o);
    cr_expect_float_eq(o.t.finish_us[a], 10.0, 1e-9);
    cr_expect_float_eq(o.t.start_us[c], 14.0, 1e-9);
    cr_expect_float_eq(o.t.start_us[bb], 22.0, 1e-9);
    cr_expect_float_eq(o.t.finish_us[bb], 49.0, 1e-9);
    cr_expect_float_eq(o.r.step_time_us, 49.0, 1e-9);
    cr_expect_float_eq(o.r.busy_us[0], 19.0, 1e-9); /* a, the send, c */
    cr_expect_float_eq(o.r.busy_us[1], 27.0, 1e-9); /* the receive, b */
    cr_expect_eq(o.t.n_transfers, 1);
    cr_expect_float_eq(o.t.transfers[0].issue_us, 10.0, 1e-9); /* the wire is unchanged */
    cr_expect_float_eq(o.t.transfers[0].end_us, 22.0, 1e-9);
    tk_sim_done(&o, &tp);
}

/* Two consumers of one received tensor on d1: only the first pays for it.
 * b1 receives 22-29 and computes 29-49; b2 computes 49-69. */
Test(host, a_tensor_is_received_once)
{
    op_graph_builder *b = op_graph_builder_new("host", NULL);
    int a = tk_op(b, "a", 10, 1000), b1 = tk_op(b, "b1", 20, 0), b2 = tk_op(b, "b2", 20, 0);
    tk_edge(b, a, b1, 1000);
    tk_edge(b, a, b2, 1000);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), host_cluster(2, HOST));
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 1, 1}, NULL, NULL, &o);
    cr_expect_float_eq(o.t.finish_us[b1], 49.0, 1e-9);
    cr_expect_float_eq(o.t.start_us[b2], 49.0, 1e-9);
    cr_expect_float_eq(o.r.step_time_us, 69.0, 1e-9);
    cr_expect_float_eq(o.r.busy_us[1], 47.0, 1e-9);
    tk_sim_done(&o, &tp);
}

/* One op sending to two devices pays both sends, in a row, before its
 * device's next op: a (10) -> b on d1 and c on d2 (1000 B each); d (1) on d0
 * after a starts at 10 + 4 + 4. */
Test(host, an_op_s_sends_add_up)
{
    op_graph_builder *b = op_graph_builder_new("host", NULL);
    int a = tk_op(b, "a", 10, 1000), bb = tk_op(b, "b", 1, 0), c = tk_op(b, "c", 1, 0);
    int d = tk_op(b, "d", 1, 0);
    tk_edge(b, a, bb, 1000);
    tk_edge(b, a, c, 1000);
    tk_edge(b, a, d, 1000);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), host_cluster(3, HOST));
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 1, 2, 0}, NULL, NULL, &o);
    cr_expect_float_eq(o.t.start_us[d], 18.0, 1e-9);
    cr_expect_float_eq(o.t.start_us[bb], 22.0, 1e-9);
    cr_expect_float_eq(o.t.finish_us[c], 30.0, 1e-9); /* 22 + 7 + 1 */
    tk_sim_done(&o, &tp);
}

/* Without the keys nothing changes: the same graph as the first test on a
 * cluster whose host cost is zero runs a 0-10, the wire 10-22, b 22-42;
 * c 10-15 on d0. */
Test(host, zero_is_the_rule_without_it)
{
    op_graph_builder *b = op_graph_builder_new("host", NULL);
    int a = tk_op(b, "a", 10, 1000), bb = tk_op(b, "b", 20, 0), c = tk_op(b, "c", 5, 0);
    tk_edge(b, a, bb, 1000);
    tk_edge(b, a, c, 1000);
    tk_problem tp;
    op_cluster *cl = host_cluster(2, (op_link_host){0, 0, 0, 0});
    cr_expect_eq(cl->has_host, 0);
    tk_bind(&tp, tk_finish(b), cl);
    tk_sim_out o;
    tk_sim(&tp, (int[]){0, 1, 0}, NULL, NULL, &o);
    cr_expect_float_eq(o.t.start_us[c], 10.0, 1e-9);
    cr_expect_float_eq(o.r.step_time_us, 42.0, 1e-9);
    tk_sim_done(&o, &tp);
}

/* recv_idle_free: the first test's graph, and x (on d1, no inputs) of
 * time tx before b.  The transfer arrives at 22.  tx = 0 (d1 idle): b
 * computes 22-42, no receive.  tx = 22 (x ends as it arrives: idle once
 * every event of 22 is done): the same.  tx = 30 (x runs 0-30: busy): b
 * receives 30-37 and computes 37-57, as without the key. */
Test(host, a_receive_is_free_when_it_arrives_at_an_idle_device)
{
    double tx[3] = {0, 22, 30}, want[3] = {42, 42, 57}, busy1[3] = {20, 42, 57};
    for (int i = 0; i < 3; i++) {
        op_graph_builder *b = op_graph_builder_new("host", NULL);
        int a = tk_op(b, "a", 10, 1000), bb = tk_op(b, "b", 20, 0), c = tk_op(b, "c", 5, 0);
        int x = tk_op(b, "x", tx[i], 0);
        tk_edge(b, a, bb, 1000);
        tk_edge(b, a, c, 1000);
        tk_edge(b, x, bb, 0);
        op_cluster *cl = host_cluster(2, HOST);
        cl->recv_idle_free = 1;
        tk_problem tp;
        tk_bind(&tp, tk_finish(b), cl);
        tk_sim_out o;
        tk_sim(&tp, (int[]){0, 1, 0, 1}, NULL, NULL, &o);
        cr_expect_float_eq(o.t.start_us[c], 14.0, 1e-9, "tx %g", tx[i]); /* sends as before */
        cr_expect_float_eq(o.r.step_time_us, want[i], 1e-9, "tx %g", tx[i]);
        cr_expect_float_eq(o.r.busy_us[1], busy1[i], 1e-9,
                           "tx %g", tx[i]);
        tk_sim_done(&o, &tp);
    }
}

/* A random DAG of 30 ops (the same for a seed) and a placement on 3 devices. */
static op_graph *random_graph(int seed, int *dev)
{
    op_graph_builder *b = op_graph_builder_new("rnd", NULL);
    unsigned x = (unsigned)seed * 2654435761u;
    int n = 30;
    for (int i = 0; i < n; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "o%d", i);
        x = x * 1103515245u + 12345u;
        tk_op(b, nm, 1 + (x >> 16) % 50, 100 + (x >> 8) % 5000);
        dev[i] = (int)((x >> 20) % 3);
    }
    for (int i = 1; i < n; i++)
        for (int k = 0; k < 2; k++) {
            x = x * 1103515245u + 12345u;
            tk_edge(b, (int)((x >> 16) % (unsigned)i), i, 100 + (x >> 4) % 5000);
        }
    return tk_finish(b);
}

/* Every transfer is paid once at each end, whatever the schedule: the
 * devices' busy time grows by exactly the transfers' host costs (the
 * transfers themselves depend only on the placement, formats.md 5.3); and
 * a run is repeatable. */
Test(host, never_shortens_a_step)
{
    for (int seed = 1; seed <= 20; seed++) {
        int dev[30];
        tk_problem plain, host, again;
        tk_bind(&plain, random_graph(seed, dev), host_cluster(3, (op_link_host){0, 0, 0, 0}));
        tk_bind(&host, random_graph(seed, dev), host_cluster(3, HOST));
        tk_bind(&again, random_graph(seed, dev), host_cluster(3, HOST));
        tk_sim_out p, h, h2;
        tk_sim(&plain, dev, NULL, NULL, &p);
        tk_sim(&host, dev, NULL, NULL, &h);
        tk_sim(&again, dev, NULL, NULL, &h2);
        double busy_p = 0, busy_h = 0, paid = 0;
        for (int d = 0; d < 3; d++) {
            busy_p += p.r.busy_us[d];
            busy_h += h.r.busy_us[d];
        }
        cr_assert_eq(h.t.n_transfers, p.t.n_transfers, "seed %d", seed);
        for (int x = 0; x < h.t.n_transfers; x++) {
            double b = (double)h.t.transfers[x].bytes;
            paid += HOST.send_us + HOST.send_us_per_byte * b + HOST.recv_us +
                    HOST.recv_us_per_byte * b;
        }
        cr_expect_float_eq(busy_h, busy_p + paid, 1e-6, "seed %d", seed);
        cr_expect_eq(h.r.step_time_us, h2.r.step_time_us, "seed %d", seed);
        /* recv_idle_free: every send is paid and no receive twice, so the
         * busy time lies between the sends' and all the host costs' */
        tk_problem idle;
        op_cluster *ci = host_cluster(3, HOST);
        ci->recv_idle_free = 1;
        tk_bind(&idle, random_graph(seed, dev), ci);
        tk_sim_out f;
        tk_sim(&idle, dev, NULL, NULL, &f);
        double busy_f = 0, sends = 0;
        for (int d = 0; d < 3; d++)
            busy_f += f.r.busy_us[d];
        for (int x = 0; x < f.t.n_transfers; x++)
            sends += HOST.send_us + HOST.send_us_per_byte * (double)f.t.transfers[x].bytes;
        cr_expect_geq(busy_f, busy_p + sends - 1e-6, "seed %d", seed);
        cr_expect_leq(busy_f, busy_p + paid + 1e-6, "seed %d", seed);
        tk_sim_done(&f, &idle);
        tk_sim_done(&p, &plain);
        tk_sim_done(&h, &host);
        tk_sim_done(&h2, &again);
    }
}

static const char *write_tmp(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tk_tmpdir(), name);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(text, f);
    fclose(f);
    return path;
}

#define HEAD "{\"format\": \"opplace-cluster\", \"version\": 1, \"devices\": [" \
    "{\"name\": \"cpu:0\", \"kind\": \"cpu\", \"memory_bytes\": 100}," \
    "{\"name\": \"cpu:1\", \"kind\": \"cpu\", \"memory_bytes\": 100}]"

Test(host, file_keys_read_and_round_trip)
{
    op_error err = {0};
    const char *p = write_tmp("c.json", HEAD ", \"links\": [{\"src\": \"cpu:0\", \"dst\": "
                              "\"cpu:1\", \"latency_us\": 10, \"us_per_byte\": 0.01, "
                              "\"send_us\": 20, \"recv_us_per_byte\": 0.5}], \"default_link\": "
                              "{\"latency_us\": 1, \"us_per_byte\": 0, \"recv_us\": 7}}");
    op_cluster *c = op_cluster_read(p, &err);
    cr_assert(c, "%s", err.msg);
    cr_expect_eq(c->has_host, 1);
    cr_expect_float_eq(op_cluster_host_us(c, 0, 1, 10, 1), 20.0, 1e-12);
    cr_expect_float_eq(op_cluster_host_us(c, 0, 1, 10, 0), 5.0, 1e-12);
    cr_expect_float_eq(op_cluster_host_us(c, 1, 0, 10, 1), 0.0, 1e-12); /* the default's */
    cr_expect_float_eq(op_cluster_host_us(c, 1, 0, 10, 0), 7.0, 1e-12);
    char out[512];
    snprintf(out, sizeof out, "%s/c2.json", tk_tmpdir());
    cr_assert_eq(op_cluster_write(c, out, &err), OP_OK, "%s", err.msg);
    op_cluster *d = op_cluster_read(out, &err);
    cr_assert(d, "%s", err.msg);
    cr_expect_float_eq(op_cluster_host_us(d, 0, 1, 10, 1), 20.0, 1e-12);
    cr_expect_float_eq(op_cluster_host_us(d, 0, 1, 10, 0), 5.0, 1e-12);
    cr_expect_float_eq(op_cluster_host_us(d, 1, 0, 10, 0), 7.0, 1e-12);
    cr_expect_eq(d->recv_idle_free, 0); /* written only when set */
    op_cluster_free(c);
    op_cluster_free(d);
    c = op_cluster_read(write_tmp("c4.json", HEAD ", \"recv_idle_free\": true, \"default_link\": "
                                              "{\"latency_us\": 1, \"us_per_byte\": 0, "
                                              "\"recv_us\": 7}}"), &err);
    cr_assert(c, "%s", err.msg);
    cr_expect_eq(c->recv_idle_free, 1);
    cr_assert_eq(op_cluster_write(c, out, &err), OP_OK, "%s", err.msg);
    d = op_cluster_read(out, &err);
    cr_assert(d, "%s", err.msg);
    cr_expect_eq(d->recv_idle_free, 1);
    op_cluster_free(c);
    op_cluster_free(d);
    c = op_cluster_read(write_tmp("c3.json", HEAD ", \"default_link\": {\"latency_us\": 1, "
                                                "\"us_per_byte\": 0}}"), &err);
    cr_assert(c, "%s", err.msg);
    cr_expect_eq(c->has_host, 0);
    op_cluster_free(c);
}

Test(host, bad_keys_are_named)
{
    struct { const char *tail, *want; } bad[] = {
        {", \"default_link\": {\"latency_us\": 1, \"us_per_byte\": 0, \"send_us\": -1}}",
         "default_link.send_us"},
        {", \"default_link\": {\"latency_us\": 1, \"us_per_byte\": 0, \"recv_us_per_byte\": 1e9}}",
         "default_link.recv_us_per_byte: must be at most"},
        {", \"links\": [{\"src\": \"cpu:0\", \"dst\": \"cpu:1\", \"latency_us\": 1, "
         "\"us_per_byte\": 0, \"send_us_per_byte\": \"x\"}]}", "links[0].send_us_per_byte"},
        {", \"recv_idle_free\": 1, \"default_link\": {\"latency_us\": 1, \"us_per_byte\": 0}}",
         "recv_idle_free: must be true or false"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[1024];
        snprintf(text, sizeof text, "%s%s", HEAD, bad[i].tail);
        op_error err = {0};
        op_cluster *c = op_cluster_read(write_tmp("bad.json", text), &err);
        cr_expect_null(c, "case %zu accepted", i);
        cr_expect(strstr(err.msg, bad[i].want), "case %zu: %s", i, err.msg);
        op_cluster_free(c);
    }
}
