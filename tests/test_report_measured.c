/*
 * test_report_measured.c - a measured trace (the layout of --report t.json,
 * as opplace.torch writes it) read against a problem, and the HTML
 * report's "Measured vs simulated" section, against hand-computed values.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/report.h"
#include "opplace/simulate.h"
#include "testkit.h"

#define BIG ((int64_t)1 << 40)

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

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

/* a (10 us, 1000 B) on d0 feeds b (30 us) on d1; the link takes 10 us +
 * 0.01 us/B: simulated a 0-10, transfer 10-30, b 30-60. */
static void setup(tk_problem *tp, op_placement *pl)
{
    op_graph_builder *b = op_graph_builder_new("ab", NULL);
    int a = tk_op(b, "a", 10, 1000), bb = tk_op(b, "b", 30, 0);
    tk_edge(b, a, bb, -1);
    tk_bind(tp, tk_finish(b), tk_cluster(2, 10, 0.01, BIG));
    op_error err = {0};
    cr_assert_eq(op_placement_init(pl, 2, 2, &err), OP_OK);
    pl->device_of[0] = 0;
    pl->device_of[1] = 1;
}

#define META "{\"ph\": \"M\", \"pid\": 1, \"tid\": 0, \"name\": \"thread_name\", " \
             "\"args\": {\"name\": \"d0\"}},\n" \
             "{\"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"name\": \"thread_name\", " \
             "\"args\": {\"name\": \"d1\"}},\n"

/* measured: a 100-112 on d0, sent 112-137, rank 1 waits 110-140 (recv),
 * b 140-176; an op the graph lacks; a "send" event on a device track named
 * like an op (left out, though earliest); times shift by 100. */
static const char MEASURED[] =
    "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n" META
    "{\"ph\": \"X\", \"pid\": 1, \"tid\": 0, \"ts\": 100, \"dur\": 12, \"name\": \"a\", "
    "\"cat\": \"MatMul\", \"args\": {}},\n"
    "{\"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": 110, \"dur\": 30, \"name\": \"a\", "
    "\"cat\": \"recv\", \"args\": {\"peer\": 0}},\n"
    "{\"ph\": \"X\", \"pid\": 1, \"tid\": 0, \"ts\": 99, \"dur\": 1, \"name\": \"b\", "
    "\"cat\": \"send\", \"args\": {}},\n"
    "{\"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": 140, \"dur\": 36, \"name\": \"b\", "
    "\"cat\": \"Op\", \"args\": {}},\n"
    "{\"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": 300, \"dur\": 5, \"name\": \"zzz\", "
    "\"cat\": \"Op\", \"args\": {}},\n"
    "{\"ph\": \"X\", \"pid\": 2, \"tid\": 0, \"ts\": 112, \"dur\": 25, \"name\": \"a\", "
    "\"cat\": \"transfer\", \"args\": {\"bytes\": 1000, \"to\": \"d1\"}}\n]}\n";

Test(measured, read_matches_ops_by_name_and_shifts_to_zero)
{
    tk_problem tp;
    op_placement pl;
    setup(&tp, &pl);
    op_sim_trace m;
    op_error err = {0};
    cr_assert_eq(op_measured_read(&tp.p, &pl, write_tmp("m.json", MEASURED), &m, &err), OP_OK,
                 "%s", err.msg);
    cr_expect_float_eq(m.start_us[0], 0.0, 1e-12);
    cr_expect_float_eq(m.finish_us[0], 12.0, 1e-12);
    cr_expect_float_eq(m.start_us[1], 40.0, 1e-12);
    cr_expect_float_eq(m.finish_us[1], 76.0, 1e-12);
    cr_expect_eq(m.dev[0], 0);
    cr_expect_eq(m.dev[1], 1);
    cr_assert_eq(m.n_transfers, 1);
    cr_expect_eq(m.transfers[0].src_op, 0);
    cr_expect_eq(m.transfers[0].dst_dev, 1);
    cr_expect_eq(m.transfers[0].bytes, 1000);
    cr_expect_float_eq(m.transfers[0].start_us, 12.0, 1e-12);
    cr_expect_float_eq(m.transfers[0].end_us, 37.0, 1e-12);
    op_sim_trace_destroy(&m);
    op_placement_destroy(&pl);
    tk_unbind(&tp);
}

Test(measured, html_section_compares_with_the_simulation)
{
    tk_problem tp;
    op_placement pl;
    setup(&tp, &pl);
    op_error err = {0};
    op_sim_result r;
    op_sim_trace t, m;
    cr_assert_eq(op_sim_result_init(&r, &tp.p, &err), OP_OK);
    cr_assert_eq(op_sim_trace_init(&t, &tp.p, &err), OP_OK);
    cr_assert_eq(op_simulate(&tp.p, &pl, &r, &t, &err), OP_OK);
    cr_assert_float_eq(r.step_time_us, 60.0, 1e-9);
    cr_assert_eq(op_measured_read(&tp.p, &pl, write_tmp("m.json", MEASURED), &m, &err), OP_OK);
    char out[512];
    snprintf(out, sizeof out, "%s/r.html", tk_tmpdir());
    cr_assert_eq(op_report_html_measured(&tp.p, &pl, &r, &t, &m, "test", out, &err), OP_OK,
                 "%s", err.msg);
    char *html = slurp(out);
    /* measured step 76, simulated 60: 60/76 = 0.789, error -21.1 % */
    cr_expect(strstr(html, "<td>measured step</td><td>76.0 us</td>"), "no measured step");
    cr_expect(strstr(html, "<td>simulated step</td><td>60.0 us</td>"), "no simulated step");
    cr_expect(strstr(html, "0.789 (error -21.1%)"), "no ratio");
    /* busy: d0 12 measured vs 10 simulated, d1 36 vs 30: 0.833 both */
    cr_expect(strstr(html, "<td>d0</td><td>12.0 us</td><td>10.0 us</td><td>0.833</td>"),
              "no d0 busy row");
    cr_expect(strstr(html, "<td>d1</td><td>36.0 us</td><td>30.0 us</td><td>0.833</td>"),
              "no d1 busy row");
    /* the largest difference first: b (6 us) before a (2 us) */
    char *rb = strstr(html, "<tr class=\"opdiff\"><td>b</td>");
    char *ra = strstr(html, "<tr class=\"opdiff\"><td>a</td>");
    cr_expect(rb && ra && rb < ra, "op rows not by difference");
    cr_expect(strstr(html, "measured: step 76.0 us") && strstr(html, "simulated: step 60.0 us"),
              "no static timelines");
    cr_expect(strstr(html, "id=\"measuredstatic\"") && strstr(html, "id=\"simstatic\""));
    free(html);
    /* without a measured trace the page has no such section */
    cr_assert_eq(op_report_html(&tp.p, &pl, &r, &t, "test", out, &err), OP_OK);
    html = slurp(out);
    cr_expect_null(strstr(html, "Measured vs simulated"));
    free(html);
    op_sim_trace_destroy(&m);
    op_sim_trace_destroy(&t);
    op_sim_result_destroy(&r);
    op_placement_destroy(&pl);
    tk_unbind(&tp);
}

Test(measured, bad_traces_are_refused_with_the_reason)
{
    tk_problem tp;
    op_placement pl;
    setup(&tp, &pl);
    struct { const char *text, *want; } bad[] = {
        {"{\"traceEvents\": [{\"ph\": \"M\", \"pid\": 1, \"tid\": 0, \"name\": \"thread_name\", "
         "\"args\": {\"name\": \"cpu:0\"}}]}", "the trace is of another cluster"},
        {"{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 1, \"tid\": 0, \"ts\": 0, \"dur\": 1, "
         "\"name\": \"q\"}]}", "no op of graph 'ab'"},
        {"{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 1, \"tid\": 5, \"ts\": 0, \"dur\": 1, "
         "\"name\": \"a\"}]}", "no device of the cluster"},
        {"{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 1, \"tid\": 0, \"ts\": 0, \"dur\": -1, "
         "\"name\": \"a\"}]}", "dur >= 0"},
        {"[1, 2]", "must be a JSON object"},
        {"{\"events\": []}", "no traceEvents"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        op_error err = {0};
        op_sim_trace m;
        cr_expect_eq(op_measured_read(&tp.p, &pl, write_tmp("bad.json", bad[i].text), &m, &err),
                     OP_EINPUT, "case %zu accepted", i);
        cr_expect(strstr(err.msg, bad[i].want), "case %zu: %s", i, err.msg);
    }
    op_placement_destroy(&pl);
    tk_unbind(&tp);
}

Test(measured, cli_needs_an_html_report)
{
    char cmd[2048], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s simulate %s/none.json --placement x.json --measured m.json "
             "2>&1", OPPLACE_BIN, tk_tmpdir());
    int rc = tk_run(cmd, &out);
    cr_expect_eq(rc, 2, "rc %d: %s", rc, out ? out : "");
    cr_expect(out && strstr(out, "add --report FILE.html"), "%s", out ? out : "");
    free(out);
}
