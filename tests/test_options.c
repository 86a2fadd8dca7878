/*
 * test_options.c - declared options (opplace/options.h): the check refuses
 * unknown names and bad values before any work, every placer reads only
 * the options its table declares, and `place --algo NAME --help` lists them.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/placer.h"
#include "testkit.h"

static const op_opt_decl TABLE[] = {
    {"n", OP_OPT_INT, 1, 10, "3", NULL, "a count"},
    {"x", OP_OPT_NUM, 0, 1, NULL, NULL, "a share"},
    {"mode", OP_OPT_TEXT, 0, 0, "a", "a|bb|c", "a mode"},
    {"on", OP_OPT_FLAG, 0, 0, NULL, NULL, "a flag"},
    {NULL, 0, 0, 0, NULL, NULL, NULL},
};

/* Status of op_options_check on one name/value pair against TABLE. */
static op_status check_one(const char *name, const char *value, op_error *err)
{
    *err = (op_error){0};
    op_options *o = op_options_new(err);
    cr_assert(o);
    cr_assert_eq(op_options_set(o, name, value, err), OP_OK);
    cr_assert_eq(op_options_declare(o, TABLE, err), OP_OK);
    op_status st = op_options_check(o, "the help", err);
    op_options_free(o);
    return st;
}

Test(options, check_accepts_declared_values_and_refuses_the_rest)
{
    op_error err = {0};
    cr_expect_eq(check_one("n", "10", &err), OP_OK, "%s", err.msg);
    cr_expect_eq(check_one("x", "0.5", &err), OP_OK, "%s", err.msg);
    cr_expect_eq(check_one("mode", "bb", &err), OP_OK, "%s", err.msg);
    cr_expect_eq(check_one("on", NULL, &err), OP_OK, "%s", err.msg);
    cr_expect_eq(check_one("n", "11", &err), OP_EUSAGE);
    cr_expect(strstr(err.msg, "--n") != NULL, "%s", err.msg);
    cr_expect_eq(check_one("n", "2.5", &err), OP_EUSAGE);
    cr_expect_eq(check_one("x", "-0.1", &err), OP_EUSAGE);
    cr_expect_eq(check_one("x", "abc", &err), OP_EUSAGE);
    cr_expect_eq(check_one("mode", "b", &err), OP_EUSAGE); /* a prefix of bb is not bb */
    cr_expect_eq(check_one("mode", NULL, &err), OP_EUSAGE);
    cr_expect_eq(check_one("nn", "3", &err), OP_EUSAGE);
    cr_expect(strstr(err.msg, "unknown option --nn") && strstr(err.msg, "the help"), "%s",
              err.msg);
}

Test(options, a_getter_for_an_undeclared_name_is_recorded)
{
    op_error err = {0};
    op_options *o = op_options_new(&err);
    long v;
    cr_assert_eq(op_options_declare(o, TABLE, &err), OP_OK);
    cr_assert_eq(op_options_int(o, "n", 3, 1, 10, &v, &err), OP_OK);
    cr_expect_null(op_options_first_undeclared(o));
    cr_assert_eq(op_options_int(o, "m", 3, 1, 10, &v, &err), OP_OK);
    cr_expect_str_eq(op_options_first_undeclared(o), "m");
    op_options_free(o);
}

/* Every fast placer, run on a small graph, asks only for options that
 * op_place_options or its own table declares. */
Test(options, every_fast_placer_reads_only_declared_options)
{
    tk_problem tp;
    tk_bind(&tp, tk_random_dag(60, 0.08, 7), tk_cluster(3, 5, 1e4, (int64_t)1 << 34));
    int n;
    const op_placer *const *all = op_placers(&n);
    for (int i = 0; i < n; i++) {
        if (all[i]->slow)
            continue;
        op_error err = {0};
        op_options *o = op_options_new(&err);
        cr_assert_eq(op_options_declare(o, op_place_options, &err), OP_OK);
        cr_assert_eq(op_options_declare(o, all[i]->options, &err), OP_OK);
        op_place_ctx ctx = {.p = &tp.p, .opts = o, .seed = 1, .budget_seconds = 0.5,
                            .best_effort = 1};
        op_placement pl;
        cr_assert_eq(op_place(all[i], &ctx, &pl, &err), OP_OK, "%s: %s", all[i]->name, err.msg);
        const char *u = op_options_first_undeclared(o);
        cr_expect_null(u, "%s reads --%s, which its table does not declare", all[i]->name, u);
        op_placement_destroy(&pl);
        op_options_free(o);
    }
    tk_unbind(&tp);
}

Test(options, place_refuses_an_unknown_option_before_placing)
{
    char cmd[1024], *out = NULL;
    /* auto with a budget of an hour: refused at once, or this test would hang */
    snprintf(cmd, sizeof cmd, "%s place %s/good_graph.json --budget-seconds 3600 --no-such 1",
             OPPLACE_BIN, OPPLACE_TEST_DATA);
    cr_assert_eq(tk_run(cmd, &out), 2, "%s", out);
    cr_expect(strstr(out, "unknown option --no-such") != NULL, "%s", out);
    cr_expect(strstr(out, "opplace place --algo auto --help") != NULL, "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s place %s/good_graph.json --algo m-topo --order half", OPPLACE_BIN,
             OPPLACE_TEST_DATA);
    cr_assert_eq(tk_run(cmd, &out), 2, "%s", out);
    cr_expect(strstr(out, "--order must be one of own|none|fit|peak") != NULL, "%s", out);
    free(out);
}

Test(options, place_help_lists_the_placers_options)
{
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s place --algo celeritas --help", OPPLACE_BIN);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    cr_expect(strstr(out, "Options of celeritas:") != NULL, "%s", out);
    cr_expect(strstr(out, "--fusion-range N") != NULL, "%s", out);
    cr_expect(strstr(out, "--order own|none|fit|peak") != NULL, "%s", out);
    free(out);
}
