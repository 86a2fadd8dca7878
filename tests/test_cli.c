/*
 * test_cli.c - the opplace command end to end: the default run, place ->
 * simulate round trips, traces that Perfetto can open, presets.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testkit.h"

#define DATA OPPLACE_TEST_DATA

Test(cli, bare_run_prints_the_comparison_table)
{
    char *out = NULL;
    cr_assert_eq(tk_run(OPPLACE_BIN, &out), 0, "%s", out);
    cr_expect(strstr(out, "| single") != NULL, "%s", out);
    /* the printed bound is proven: at least the trivial one, and no
     * algorithm's step is below it (every /bound column at least 1) */
    const char *lb = strstr(out, "lower bound on the step time: ");
    cr_assert(lb != NULL, "%s", out);
    double bound_ms = 0, trivial_ms = 0;
    const char *tr = strstr(lb, "trivial ");
    cr_assert(tr != NULL && sscanf(lb, "lower bound on the step time: %lf ms", &bound_ms) == 1 &&
                  sscanf(tr, "trivial %lf ms", &trivial_ms) == 1,
              "%s", out);
    cr_expect_geq(bound_ms, trivial_ms);
    int rows = 0;
    for (const char *l = strstr(out, "|---"); l && (l = strchr(l, '\n')) && l[1] == '|'; l++) {
        char algo[64];
        double step_ms, ratio;
        if (sscanf(l + 1, "| %63s | %lf ms | %lf |", algo, &step_ms, &ratio) != 3)
            continue;
        rows++;
        cr_expect_geq(ratio, 1.0, "%s: step %.3f ms below the bound %.3f ms", algo, step_ms,
                      bound_ms);
        cr_expect_float_eq(ratio, step_ms / bound_ms, 2e-3, "%s", algo);
    }
    cr_expect_geq(rows, 5, "%s", out);
    free(out);
}

Test(cli, placement_written_by_place_simulates_to_the_same_step_time)
{
    const char *dir = tk_tmpdir();
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s zoo synthetic --ops 400 --width 8 -o %s/g.json && "
             "%s cluster --preset v100-pcie --gpus 3 -o %s/c.json", OPPLACE_BIN, dir, OPPLACE_BIN,
             dir);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s place %s/g.json --cluster %s/c.json --algo round-robin "
             "-o %s/p.json --json", OPPLACE_BIN, dir, dir, dir);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    double placed = tk_json_number(out, "step_time_us");
    free(out);
    snprintf(cmd, sizeof cmd, "%s simulate %s/g.json --cluster %s/c.json --placement %s/p.json "
             "--json", OPPLACE_BIN, dir, dir, dir);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    cr_expect_eq(tk_json_number(out, "step_time_us"), placed);
    free(out);
    /* the file's own metrics agree too */
    json_error_t je;
    char path[600];
    snprintf(path, sizeof path, "%s/p.json", dir);
    json_t *p = json_load_file(path, 0, &je);
    cr_assert(p);
    cr_expect_str_eq(json_string_value(json_object_get(p, "format")), "opplace-placement");
    cr_expect_eq(json_object_size(json_object_get(p, "device_of")), 400);
    cr_expect_eq(json_number_value(json_object_get(json_object_get(p, "metrics"), "step_time_us")),
                 placed);
    json_decref(p);
}

Test(cli, trace_is_chrome_trace_json_with_a_track_per_device)
{
    const char *dir = tk_tmpdir();
    char cmd[4096], *out = NULL, path[600];
    snprintf(cmd, sizeof cmd, "%s place %s/good_graph.json --cluster %s/good_cluster.json "
             "--algo round-robin --report %s/t.json", OPPLACE_BIN, DATA, DATA, dir);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/t.json", dir);
    json_error_t je;
    json_t *t = json_load_file(path, 0, &je);
    cr_assert(t, "trace is not JSON: %s", je.text);
    json_t *ev = json_object_get(t, "traceEvents");
    cr_assert(json_is_array(ev));
    int threads = 0, ops = 0;
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        if (!strcmp(ph, "M") && !strcmp(name, "thread_name") &&
            json_integer_value(json_object_get(e, "pid")) == 1)
            threads++;
        if (!strcmp(ph, "X") && json_integer_value(json_object_get(e, "pid")) == 1) {
            ops++;
            cr_expect(json_is_number(json_object_get(e, "ts")));
            cr_expect_geq(json_number_value(json_object_get(e, "dur")), 0);
        }
    }
    cr_expect_eq(threads, 3);
    cr_expect_eq(ops, 4);
    json_decref(t);
}

Test(cli, help_everywhere)
{
    const char *cmds[] = {"--help", "place --help", "simulate --help", "info --help",
                          "zoo --help", "cluster --help", "fit-comm --help", "algos --help"};
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        char cmd[512], *out = NULL;
        snprintf(cmd, sizeof cmd, "%s %s", OPPLACE_BIN, cmds[i]);
        cr_expect_eq(tk_run(cmd, &out), 0, "%s", cmds[i]);
        cr_expect(strstr(out, "usage") != NULL, "%s: %s", cmds[i], out);
        free(out);
    }
}

Test(cli, single_reports_infeasible_with_exit_3)
{
    const char *dir = tk_tmpdir();
    char cmd[4096], *out = NULL;
    /* 6000 synthetic ops hold ~16 GiB of parameters: more than one K80 */
    snprintf(cmd, sizeof cmd, "%s zoo synthetic --ops 6000 -o %s/s.json && %s place %s/s.json "
             "--preset k80-pcie --gpus 2 --algo single", OPPLACE_BIN, dir, OPPLACE_BIN, dir);
    cr_expect_eq(tk_run(cmd, &out), 3, "%s", out);
    cr_expect(strstr(out, "--best-effort") != NULL, "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s place %s/s.json --preset k80-pcie --gpus 2 --algo single "
             "--best-effort", OPPLACE_BIN, dir);
    cr_expect_eq(tk_run(cmd, &out), 0, "%s", out);
    cr_expect(strstr(out, "OUT OF MEMORY") != NULL, "%s", out);
    free(out);
}
