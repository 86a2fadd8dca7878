/*
 * test_report.c - the reports of opplace/report.h: the HTML page has one
 * timeline track per device and per channel used, a memory chart per
 * device and the metrics; the SVGs are well-formed XML even for hostile op
 * names; the DOT file has one node per (coarse) op filled with its device's
 * color; large graphs stay small; a failed write leaves nothing behind.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "opplace/io.h"
#include "opplace/report.h"
#include "testkit.h"

typedef struct run {
    tk_problem tp;
    op_placement pl;
    op_sim_result r;
    op_sim_trace t;
} run;

/* Place ops on devices by a fixed rule and simulate with a trace. */
static void simulate_run(run *x, op_graph *g, int nd)
{
    op_error err = {0};
    tk_bind(&x->tp, g, tk_cluster(nd, 5, 1e-4, (int64_t)1 << 30));
    cr_assert_eq(op_placement_init(&x->pl, g->n_ops, nd, &err), OP_OK, "%s", err.msg);
    for (int i = 0; i < g->n_ops; i++)
        x->pl.device_of[i] = (i / 3) % nd;
    cr_assert_eq(op_placement_set_algorithm(&x->pl, "by-thirds", &err), OP_OK);
    cr_assert_eq(op_sim_result_init(&x->r, &x->tp.p, &err), OP_OK);
    cr_assert_eq(op_sim_trace_init(&x->t, &x->tp.p, &err), OP_OK);
    cr_assert_eq(op_simulate(&x->tp.p, &x->pl, &x->r, &x->t, &err), OP_OK, "%s", err.msg);
}

static void run_destroy(run *x)
{
    op_sim_trace_destroy(&x->t);
    op_sim_result_destroy(&x->r);
    op_placement_destroy(&x->pl);
    tk_unbind(&x->tp);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    cr_assert(s);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = 0;
    fclose(f);
    if (len)
        *len = (size_t)n;
    return s;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static int channels_used(const run *x)
{
    int used[256] = {0}, n = 0;
    for (int k = 0; k < x->t.n_transfers; k++)
        if (!used[x->t.transfers[k].chan]++)
            n++;
    return n;
}

/* Well-formed XML, checked by Python's parser when there is a python3. */
static void expect_xml(const char *path)
{
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "command -v python3 >/dev/null || exit 99; python3 -c \"import sys, "
             "xml.dom.minidom as m; m.parse(sys.argv[1])\" '%s'", path);
    int rc = tk_run(cmd, &out);
    if (rc == 99)
        cr_log_warn("python3 missing: %s not parsed", path);
    else
        cr_expect_eq(rc, 0, "%s is not well-formed XML: %s", path, out ? out : "");
    free(out);
}

static op_graph *hostile_graph(void)
{
    op_graph_builder *b = op_graph_builder_new("evil</script>&<g>", NULL);
    const char *names[] = {"</script><script>alert(1)</script>", "a&b<c>\"d\"'e'",
                           "bad\x01\x1f utf8 \xff\xfe end", "\xe2\x80\xa8line sep",
                           "trunc\xc3", "ok/normal"};
    int ids[6];
    for (int i = 0; i < 6; i++)
        ids[i] = tk_op_full(b, &(op_op_spec){.name = names[i], .type = "<T&>", .time_us = 10 + i,
                                              .output_bytes = 1000, .layer = "l</script>"});
    for (int i = 0; i + 1 < 6; i++)
        tk_edge(b, ids[i], ids[i + 1], -1);
    tk_edge(b, ids[0], ids[3], -1);
    return tk_finish(b);
}

Test(report, html_has_a_track_per_device_and_channel_memory_and_metrics)
{
    run x;
    simulate_run(&x, tk_random_dag(60, 0.08, 7), 3);
    char path[600];
    snprintf(path, sizeof path, "%s/r.html", tk_tmpdir());
    op_error err = {0};
    cr_assert_eq(op_report_html(&x.tp.p, &x.pl, &x.r, &x.t, NULL, path, &err), OP_OK, "%s",
                 err.msg);
    char *h = slurp(path, NULL);
    cr_expect_eq(count(h, "<g class=\"track\" data-kind=\"device\""), 3);
    int nch = channels_used(&x);
    cr_assert_gt(nch, 0, "the placement should communicate");
    cr_expect_eq(count(h, "<g class=\"track\" data-kind=\"channel\""), nch);
    cr_expect_eq(count(h, "<g class=\"mem\""), 3);
    cr_expect(strstr(h, "id=\"memchart\"") != NULL);
    cr_expect(strstr(h, "<table class=\"metrics\">") != NULL);
    cr_expect(strstr(h, "<td>step time</td>") != NULL);
    cr_expect(strstr(h, "<td>lower bound</td>") != NULL);
    cr_expect(strstr(h, "<td>out of memory</td>") != NULL);
    cr_expect_eq(count(h, "<tr class=\"device\">"), 3);
    cr_expect_eq(count(h, "<tr class=\"channel\">"), nch);
    cr_expect(strstr(h, "by-thirds") != NULL, "the algorithm falls back to pl->algorithm");
    /* the graph drawing: small graph, one node per op, in the device colors */
    cr_expect_eq(count(h, "<g class=\"node\""), 60);
    /* self-contained: nothing fetched from elsewhere */
    cr_expect(strstr(h, "http://") == NULL || count(h, "http://") == count(h, "http://www.w3.org/2000/svg"));
    cr_expect(strstr(h, "https://") == NULL);
    cr_expect(strstr(h, " src=") == NULL);
    free(h);
    run_destroy(&x);
}

Test(report, hostile_names_cannot_break_out_of_the_page_and_svg_stays_xml)
{
    run x;
    simulate_run(&x, hostile_graph(), 2);
    char html[600], svg[600], dot[600];
    snprintf(html, sizeof html, "%s/evil.html", tk_tmpdir());
    snprintf(svg, sizeof svg, "%s/evil.svg", tk_tmpdir());
    snprintf(dot, sizeof dot, "%s/evil.dot", tk_tmpdir());
    op_error err = {0};
    cr_assert_eq(op_report_html(&x.tp.p, &x.pl, &x.r, &x.t, "a</script>", html, &err), OP_OK);
    cr_assert_eq(op_report_svg_timeline(&x.tp.p, &x.t, svg, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(op_report_dot(&x.tp.p, &x.pl, dot, &err), OP_OK, "%s", err.msg);
    char *h = slurp(html, NULL);
    /* exactly the page's own script tags close */
    cr_expect_eq(count(h, "</script>"), count(h, "<script>"));
    cr_expect(strstr(h, "<script>alert") == NULL);
    cr_expect(strstr(h, "\x01") == NULL && strstr(h, "\xff") == NULL);
    free(h);
    expect_xml(svg);
    char *d = slurp(dot, NULL);
    cr_expect(strstr(d, "\"d\\\"") != NULL || strstr(d, "\\\"d\\\"") != NULL,
              "quotes are escaped in DOT");
    free(d);
    run_destroy(&x);
}

Test(report, svg_timeline_is_xml_with_a_track_per_device_and_channel)
{
    run x;
    simulate_run(&x, tk_random_dag(80, 0.05, 3), 4);
    char path[600];
    snprintf(path, sizeof path, "%s/t.svg", tk_tmpdir());
    op_error err = {0};
    cr_assert_eq(op_report_svg_timeline(&x.tp.p, &x.t, path, &err), OP_OK, "%s", err.msg);
    expect_xml(path);
    char *s = slurp(path, NULL);
    cr_expect_eq(count(s, "data-kind=\"device\""), 4);
    cr_expect_eq(count(s, "data-kind=\"channel\""), channels_used(&x));
    /* every op is drawn, alone or merged into a block */
    cr_expect_geq(count(s, "<rect class=\"op\"") + count(s, "<rect class=\"agg\""), 4);
    free(s);
    run_destroy(&x);
}

/* Parse "  nJ [fillcolor=\"#rrggbb\"" lines and the legend "devD" colors. */
Test(report, dot_has_one_node_per_op_in_its_device_color)
{
    run x;
    simulate_run(&x, tk_random_dag(50, 0.1, 11), 3);
    char path[600];
    snprintf(path, sizeof path, "%s/g.dot", tk_tmpdir());
    op_error err = {0};
    cr_assert_eq(op_report_dot(&x.tp.p, &x.pl, path, &err), OP_OK, "%s", err.msg);
    char *s = slurp(path, NULL);
    char devcol[3][8];
    for (int d = 0; d < 3; d++) {
        char key[32];
        snprintf(key, sizeof key, "dev%d [shape=box, fillcolor=\"", d);
        const char *p = strstr(s, key);
        cr_assert(p, "legend for device %d", d);
        memcpy(devcol[d], p + strlen(key), 7);
        devcol[d][7] = 0;
    }
    cr_expect_str_neq(devcol[0], devcol[1]);
    int nodes = 0;
    for (int i = 0; i < 50; i++) {
        char key[40];
        snprintf(key, sizeof key, "\n  n%d [fillcolor=\"", i);
        const char *p = strstr(s, key);
        if (!p)
            continue;
        nodes++;
        /* small graph: node i is op i (topological numbering of a random
         * DAG over v0..v49 keeps index order) */
        cr_expect_eq(strncmp(p + strlen(key), devcol[x.pl.device_of[i]], 7), 0, "node %d", i);
    }
    cr_expect_eq(nodes, 50);
    cr_expect_eq(count(s, " -> "), x.tp.g->n_edges);
    free(s);
    run_destroy(&x);
}

/* A layered graph of n ops: width w, each op fed by two of the layer before. */
static op_graph *layered(int n, int w)
{
    op_graph_builder *b = op_graph_builder_new("big", NULL);
    char name[32], layer[32];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "op%d", i);
        snprintf(layer, sizeof layer, "block%d", i / (n / 40));
        tk_op_full(b, &(op_op_spec){.name = name, .type = i % 3 ? "MatMul" : "Add",
                                    .time_us = 1 + i % 7, .output_bytes = 4096, .layer = layer});
        if (i >= w) {
            tk_edge(b, i - w, i, -1);
            tk_edge(b, i - w + (i * 7) % w, i, -1);
        }
    }
    return tk_finish(b);
}

Test(report, large_graphs_are_drawn_coarse_and_stay_small)
{
    run x;
    int n = 12000;
    simulate_run(&x, layered(n, 16), 4);
    char html[600], dot[600], svg[600];
    snprintf(html, sizeof html, "%s/big.html", tk_tmpdir());
    snprintf(dot, sizeof dot, "%s/big.dot", tk_tmpdir());
    snprintf(svg, sizeof svg, "%s/big.svg", tk_tmpdir());
    op_error err = {0};
    cr_assert_eq(op_report_html(&x.tp.p, &x.pl, &x.r, &x.t, NULL, html, &err), OP_OK);
    cr_assert_eq(op_report_dot(&x.tp.p, &x.pl, dot, &err), OP_OK);
    cr_assert_eq(op_report_svg_timeline(&x.tp.p, &x.t, svg, &err), OP_OK);
    size_t hl, sl;
    char *h = slurp(html, &hl), *s = slurp(svg, &sl);
    cr_expect_lt(hl, (size_t)n * 120 + 400000, "html of %zu bytes", hl);
    int nodes = count(h, "<g class=\"node\"");
    cr_expect_leq(nodes, OP_REPORT_MAX_GRAPH_NODES);
    cr_expect_geq(nodes, 4);
    /* the static timeline merges sub-pixel ops: far fewer rects than ops */
    cr_expect_lt(count(s, "<rect class="), n / 2, "svg of %zu bytes", sl);
    free(h);
    free(s);
    char *d = slurp(dot, NULL);
    int members = 0, dnodes = 0;
    for (const char *p = strstr(d, "tooltip=\""); p; p = strstr(p + 1, "tooltip=\"")) {
        int k;
        char c;
        if (sscanf(p, "tooltip=\"%d op%c", &k, &c) == 2) {
            members += k;
            dnodes++;
        }
    }
    cr_expect_eq(members, n, "every op belongs to exactly one coarse node");
    cr_expect_leq(dnodes, OP_REPORT_MAX_GRAPH_NODES);
    free(d);
    expect_xml(svg);
    run_destroy(&x);
}

static int files_in(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

Test(report, a_failed_report_leaves_nothing_half_written)
{
    run x;
    simulate_run(&x, tk_random_dag(30, 0.1, 5), 2);
    char dir[600], path[700];
    snprintf(dir, sizeof dir, "%s/fail", tk_tmpdir());
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/r.html", dir);
    FILE *f = fopen(path, "w");
    fputs("old", f);
    fclose(f);
    /* a trace that does not belong to the problem */
    op_error err = {0};
    int saved = x.t.n_ops;
    x.t.n_ops = saved - 1;
    cr_expect_eq(op_report_html(&x.tp.p, &x.pl, &x.r, &x.t, NULL, path, &err), OP_EINPUT);
    cr_expect_eq(op_report_svg_timeline(&x.tp.p, &x.t, path, &err), OP_EINPUT);
    x.t.n_ops = saved;
    char *s = slurp(path, NULL);
    cr_expect_str_eq(s, "old");
    free(s);
    cr_expect_eq(files_in(dir), 1, "no temporary file left behind");
    /* a directory that does not exist */
    snprintf(path, sizeof path, "%s/no/such/dir/r.html", tk_tmpdir());
    err = (op_error){0};
    cr_expect_eq(op_report_html(&x.tp.p, &x.pl, &x.r, &x.t, NULL, path, &err), OP_EIO);
    cr_expect(strstr(err.msg, "r.html") != NULL, "%s", err.msg);
    cr_expect_neq(op_report_dot(&x.tp.p, &x.pl, path, &err), OP_OK);
    run_destroy(&x);
}

Test(report, bench_plot_has_a_panel_per_model_and_a_bar_per_result)
{
    op_report_bench_row rows[] = {
        {"rnnlm", "single", 5000, 1000, 0}, {"rnnlm", "m-etf", 1500, 1000, 0},
        {"rnnlm", "pesto", -1, 1000, 0},    {"nmt & <co>", "single", 2e6, 9e5, 1},
        {"nmt & <co>", "m-etf", 1e6, 9e5, 0}, {"inception", "m-etf", 300, 0, 0},
    };
    char path[600];
    snprintf(path, sizeof path, "%s/plot.svg", tk_tmpdir());
    op_error err = {0};
    cr_assert_eq(op_report_bench_plot_svg(rows, 6, NULL, path, &err), OP_OK, "%s", err.msg);
    expect_xml(path);
    char *s = slurp(path, NULL);
    cr_expect_eq(count(s, "<g class=\"panel\""), 3);
    cr_expect_eq(count(s, "<g class=\"bar\""), 6);
    cr_expect_eq(count(s, "<rect x="), 5 + 3, "5 bars with results + 3 legend swatches");
    cr_expect_eq(count(s, ">OOM<"), 1);
    cr_expect_eq(count(s, "class=\"bound\""), 2, "inception has no lower bound");
    free(s);
    op_report_bench_row bad = {NULL, "x", 1, 1, 0};
    cr_expect_eq(op_report_bench_plot_svg(&bad, 1, NULL, path, &err), OP_EINPUT);
    cr_expect_eq(op_report_bench_plot_svg(NULL, 0, "empty", path, &err), OP_OK);
}

Test(report, cli_place_and_simulate_write_the_reports)
{
    const char *dir = tk_tmpdir();
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "%s zoo synthetic --ops 300 --width 6 -o %s/cg.json && "
             "%s place %s/cg.json --preset v100-pcie --gpus 2 --algo round-robin -o %s/cp.json "
             "--report %s/c1.html,%s/c1.svg,%s/c1.dot --quiet && "
             "%s simulate %s/cg.json --preset v100-pcie --gpus 2 --placement %s/cp.json "
             "--report %s/c2.html --json",
             OPPLACE_BIN, dir, OPPLACE_BIN, dir, dir, dir, dir, dir, OPPLACE_BIN, dir, dir, dir);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    free(out);
    const char *files[] = {"c1.html", "c1.svg", "c1.dot", "c2.html"};
    for (int k = 0; k < 4; k++) {
        char path[700];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, files[k]);
        cr_expect(stat(path, &st) == 0 && st.st_size > 100, "%s", files[k]);
    }
    char a[700];
    snprintf(a, sizeof a, "%s/c2.html", dir);
    char *h = slurp(a, NULL);
    cr_expect_eq(count(h, "data-kind=\"device\""), 2);
    cr_expect(strstr(h, "round-robin") != NULL, "simulate names the placement's algorithm");
    free(h);
    /* an unwritable report path fails cleanly with exit code 1 */
    snprintf(cmd, sizeof cmd, "%s place %s/cg.json --algo single --report %s/nope/x.html --quiet",
             OPPLACE_BIN, dir, dir);
    cr_expect_eq(tk_run(cmd, &out), 1, "%s", out);
    free(out);
}
