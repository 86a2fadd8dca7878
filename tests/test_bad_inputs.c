/*
 * test_bad_inputs.c - the catalogue of malformed graph, cluster and
 * placement files in tests/data/bad (listed in MANIFEST.tsv with the message
 * each must produce).  Every one must make opplace exit with code 1 and a
 * single line that names the file and the problem - never a crash (this
 * suite also runs under ASan+UBSan).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testkit.h"

#define DATA OPPLACE_TEST_DATA

static char *command_for(const char *name, const char *kind, char *buf, size_t cap)
{
    const char *bin = OPPLACE_BIN;
    if (!strcmp(kind, "graph"))
        snprintf(buf, cap, "%s info %s/bad/%s.json --cluster %s/good_cluster.json", bin, DATA,
                 name, DATA);
    else if (!strcmp(kind, "cluster"))
        snprintf(buf, cap, "%s info %s/good_graph.json --cluster %s/bad/%s.json", bin, DATA, DATA,
                 name);
    else
        snprintf(buf, cap,
                 "%s simulate %s/good_graph.json --cluster %s/good_cluster.json "
                 "--placement %s/bad/%s.json", bin, DATA, DATA, DATA, name);
    return buf;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

Test(bad_inputs, every_catalogued_file_fails_cleanly_with_its_message)
{
    FILE *f = fopen(DATA "/bad/MANIFEST.tsv", "r");
    cr_assert(f, "cannot open the manifest");
    char line[1024], cmd[4096];
    int cases = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        line[strcspn(line, "\n")] = '\0';
        char *name = strtok(line, "\t"), *kind = strtok(NULL, "\t"), *expect = strtok(NULL, "\t");
        cr_assert(name && kind, "bad manifest line");
        char *out = NULL;
        int code = tk_run(command_for(name, kind, cmd, sizeof cmd), &out);
        cr_expect_eq(code, 1, "%s: exit code %d, output:\n%s", name, code, out);
        cr_expect_eq(count_lines(out), 1, "%s: expected one line, got:\n%s", name, out);
        if (expect)
            cr_expect(strstr(out, expect) != NULL, "%s: expected '%s' in:\n%s", name, expect, out);
        cr_expect(strstr(out, ".json") != NULL, "%s: the message names no file:\n%s", name, out);
        free(out);
        cases++;
    }
    fclose(f);
    cr_expect_geq(cases, 40, "the catalogue should hold at least 40 cases, has %d", cases);
}

Test(bad_inputs, good_files_are_accepted)
{
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s simulate %s/good_graph.json --cluster %s/good_cluster.json "
             "--placement %s/good_placement.json --json", OPPLACE_BIN, DATA, DATA, DATA);
    int code = tk_run(cmd, &out);
    cr_expect_eq(code, 0, "output:\n%s", out);
    cr_expect(strstr(out, "\"step_time_us\"") != NULL, "%s", out);
    free(out);
}

Test(bad_inputs, missing_file_and_directory_are_io_errors)
{
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s info /nonexistent/g.json", OPPLACE_BIN);
    cr_expect_eq(tk_run(cmd, &out), 1);
    cr_expect(strstr(out, "/nonexistent/g.json: cannot open") != NULL, "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s info %s", OPPLACE_BIN, DATA);
    cr_expect_eq(tk_run(cmd, &out), 1);
    cr_expect(strstr(out, "is a directory") != NULL, "%s", out);
    free(out);
}

Test(bad_inputs, usage_errors_exit_2)
{
    char cmd[4096], *out = NULL;
    const char *cases[] = {"info", "place", "simulate " DATA "/good_graph.json",
                           "place " DATA "/good_graph.json --algo nosuch",
                           "place " DATA "/good_graph.json --seed abc",
                           "place " DATA "/good_graph.json --algo single --frobnicate 3",
                           "nosuchcommand", "cluster --gpus 0"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(cmd, sizeof cmd, "%s %s", OPPLACE_BIN, cases[i]);
        int code = tk_run(cmd, &out);
        cr_expect_eq(code, 2, "'%s' exited %d:\n%s", cases[i], code, out);
        free(out);
    }
}

Test(bad_inputs, a_failed_write_leaves_no_partial_file)
{
    char cmd[4096], *out = NULL, path[512];
    snprintf(path, sizeof path, "%s/never.json", tk_tmpdir());
    /* the graph is bad, so nothing may be written */
    snprintf(cmd, sizeof cmd, "%s place %s/bad/graph_cycle.json -o %s", OPPLACE_BIN, DATA, path);
    cr_expect_eq(tk_run(cmd, &out), 1);
    free(out);
    FILE *f = fopen(path, "r");
    cr_expect_null(f, "a placement file was written for a bad graph");
    if (f)
        fclose(f);
    snprintf(cmd, sizeof cmd, "ls %s | grep -c tmp", tk_tmpdir());
    tk_run(cmd, &out);
    cr_expect(out && out[0] == '0', "temporary files left behind: %s", out);
    free(out);
}

#include "core/file_util.h"

static int file_holds(const char *path, const char *text)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char buf[64] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    return n == strlen(text) && memcmp(buf, text, n) == 0;
}

static op_status write_text(const char *path, const char *text, op_error *err)
{
    op_atomic a;
    if (op_atomic_open(&a, path, err))
        return err->code;
    fputs(text, a.f);
    return op_atomic_commit(&a, err);
}

/* The output transaction: between op_output_begin and
 * op_output_end, committed outputs land only at the end, all or none. */
Test(bad_inputs, outputs_of_one_command_land_together_or_not_at_all)
{
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/tx_a.txt", tk_tmpdir());
    snprintf(b, sizeof b, "%s/tx_b.txt", tk_tmpdir());
    op_error err = {0};
    cr_assert_eq(write_text(a, "old", &err), OP_OK, "%s", err.msg); /* no transaction: at once */
    cr_assert(file_holds(a, "old"));
    op_output_begin();
    cr_assert_eq(write_text(a, "new", &err), OP_OK, "%s", err.msg);
    cr_assert_eq(write_text(b, "new", &err), OP_OK, "%s", err.msg);
    cr_expect(file_holds(a, "old"), "a committed output landed before the end");
    cr_expect_eq(op_output_end(0, &err), OP_OK); /* the command failed: none */
    cr_expect(file_holds(a, "old"), "a failed command replaced an output");
    cr_expect(!file_holds(b, "new"), "a failed command created an output");
    op_output_begin();
    cr_assert_eq(write_text(a, "new", &err), OP_OK, "%s", err.msg);
    cr_assert_eq(write_text(b, "new", &err), OP_OK, "%s", err.msg);
    cr_expect_eq(op_output_end(1, &err), OP_OK, "%s", err.msg); /* success: all */
    cr_expect(file_holds(a, "new") && file_holds(b, "new"));
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd, "ls -a %s | grep -c '^\\.opplace-'", tk_tmpdir());
    tk_run(cmd, &out);
    cr_expect(out && out[0] == '0', "temporaries left behind: %s", out);
    free(out);
}
