/*
 * test_search.c - the search layer's pieces (opplace/search.h): the one
 * comparator in its two uses, the one priorities x caps loop, and the
 * stages a finished placement records.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "opplace/search.h"
#include "testkit.h"

Test(search, plain_ranking_puts_fitting_then_less_overflow_then_faster_first)
{
    op_judged fits_slow = {.over = 0, .step = 200}, fits_fast = {.over = 0, .step = 100},
              over_small = {.over = 10, .step = 50}, over_big = {.over = 20, .step = 1};
    cr_expect(op_judged_before(&fits_fast, &fits_slow, NULL));
    cr_expect(op_judged_before(&fits_slow, &over_small, NULL));
    cr_expect(op_judged_before(&over_small, &over_big, NULL));
    cr_expect_not(op_judged_before(&fits_fast, &fits_fast, NULL), "strict");
}

Test(search, tolerance_rule_puts_placements_within_the_tolerances_first)
{
    op_tolerance tol = {.max_comm = 100, .max_mem = 1000};
    op_judged in_slow = {.step = 300, .comm = 100, .peak = 1000},
              out_fast = {.step = 10, .comm = 101, .peak = 10, .reward = 5},
              out_better_reward = {.step = 20, .comm = 500, .peak = 10, .reward = 6},
              in_fast_more_comm = {.step = 300, .comm = 90, .peak = 1000};
    cr_expect(op_judged_within(&in_slow, &tol));
    cr_expect_not(op_judged_within(&out_fast, &tol));
    cr_expect(op_judged_before(&in_slow, &out_fast, &tol));
    /* outside: the reward decides, not the step */
    cr_expect(op_judged_before(&out_better_reward, &out_fast, &tol));
    /* inside, equal steps: less communication first */
    cr_expect(op_judged_before(&in_fast_more_comm, &in_slow, &tol));
}

typedef struct seen {
    int n, stop_after;
    op_priority k[32];
    double share[32];
    int64_t cap0[32];
    int null_cap[32];
} seen;

static op_status record(void *arg, op_priority k, double share, const int64_t *cap, int *stop,
                        op_error *err)
{
    seen *s = arg;
    (void)err;
    s->k[s->n] = k, s->share[s->n] = share;
    s->null_cap[s->n] = cap == NULL;
    s->cap0[s->n] = cap ? cap[0] : -1;
    if (++s->n == s->stop_after)
        *stop = 1;
    return OP_OK;
}

Test(search, order_search_visits_the_table_once_each)
{
    tk_problem tp;
    tk_bind(&tp, tk_random_dag(10, 0.3, 1), tk_cluster(2, 1, 1e4, 1000));
    int64_t cap[2];
    op_error err = {0};
    /* clip, own peak = base: capacity, 100, 95, 90 % (the -1 entry would repeat 100 %) */
    seen s = {0};
    op_order_space sp = {.caps = OP_CAPS_ALL, .base = 2000, .own_peak = 2000, .clip = 1};
    cr_assert_eq(op_order_search(&tp.p, &sp, cap, record, &s, &err), OP_OK);
    cr_expect_eq(s.n, 12);
    cr_expect_eq(s.k[0], OP_PRIORITY_BLEVEL);
    cr_expect_eq(s.k[1], OP_PRIORITY_CPATH);
    cr_expect_eq(s.k[2], OP_PRIORITY_BLEVEL_W);
    cr_expect_eq(s.cap0[0], 1000, "share 0 with clip: the capacity");
    cr_expect_eq(s.cap0[3], 1000, "100 %% of 2000 clipped at 1000");
    cr_expect_eq(s.cap0[9], 1000, "90 %% of 2000 = 1800, clipped");
    /* no clip, own peak apart: no cap, 3 shares, own peak; priorities outside */
    s = (seen){0};
    sp = (op_order_space){.caps = OP_CAPS_ALL, .base = 2000, .own_peak = 500, .prio_outer = 1};
    cr_assert_eq(op_order_search(&tp.p, &sp, cap, record, &s, &err), OP_OK);
    cr_expect_eq(s.n, 15);
    cr_expect(s.null_cap[0]);
    cr_expect_eq(s.cap0[1], 2000);
    cr_expect_eq(s.cap0[3], 1800);
    cr_expect_eq(s.cap0[4], 500);
    cr_expect_eq(s.k[4], OP_PRIORITY_BLEVEL);
    cr_expect_eq(s.k[5], OP_PRIORITY_CPATH);
    /* a visitor may stop the search */
    s = (seen){.stop_after = 2};
    cr_assert_eq(op_order_search(&tp.p, &sp, cap, record, &s, &err), OP_OK);
    cr_expect_eq(s.n, 2);
    tk_unbind(&tp);
}

Test(search, stages_name_what_changed_a_placement_in_order)
{
    op_stages st = {{0}};
    char name[64];
    op_stages_add(&st, 'r');
    op_stages_add(&st, 'o');
    op_stages_add(&st, 'o'); /* ordered once */
    op_stages_name("celeritas", &st, name, sizeof name);
    cr_expect_str_eq(name, "celeritas+refine+order");
}

/* The one rule refinement uses to pick the order it judges by
 * (op_finish_judge, for place --refine and auto alike): an order counts
 * only when, on the placement, it gains over first-ready-first: less
 * overflow or a step at least 1 % shorter. */
Test(search, refinement_judges_by_an_order_only_when_it_gains_one_percent)
{
    op_placement plain = {0}, own = {.has_order = 1};
    op_judged fifo = {.over = 0, .step = 1000};
    op_reorder_stats kept = {.priority = OP_PRIORITY_BLEVEL, .final_us = 990, .final_over = 0,
                             .screened = OP_PRIORITY_BLEVEL, .screened_us = 990},
                     tmp;
    cr_expect_eq(op_finish_judge(&plain, &kept, &fifo, &tmp), &kept, "exactly 1 %% faster");
    kept.final_us = 991;
    cr_expect_null(op_finish_judge(&plain, &kept, &fifo, &tmp), "0.9 %% is not enough");
    kept.final_us = 2000;
    fifo.over = 5;
    cr_expect_eq(op_finish_judge(&plain, &kept, &fifo, &tmp), &kept, "less overflow wins");
    fifo.over = 0, kept.final_over = 1, kept.final_us = 10;
    cr_expect_eq(op_finish_judge(&plain, &kept, &fifo, &tmp), &kept, "1 %% faster, even with "
                 "more overflow (refinement ranks overflow first anyway)");
    kept.final_us = 995;
    cr_expect_null(op_finish_judge(&plain, &kept, &fifo, &tmp), "more overflow, too little gain");
    cr_expect_null(op_finish_judge(&plain, NULL, &fifo, &tmp));

    /* nothing kept: the screened order, for a placement with its own order */
    op_reorder_stats none = {.priority = OP_PRIORITY_FIFO, .final_us = 1000,
                             .screened = OP_PRIORITY_CPATH, .screened_cap_share = 0.95,
                             .screened_us = 950, .screened_over = 0};
    cr_expect_null(op_finish_judge(&plain, &none, &fifo, &tmp), "no order of its own");
    const op_reorder_stats *j = op_finish_judge(&own, &none, &fifo, &tmp);
    cr_assert_eq(j, &tmp);
    cr_expect_eq(j->priority, OP_PRIORITY_CPATH);
    cr_expect_float_eq(j->cap_share, 0.95, 1e-12);
    none.screened_us = 995;
    cr_expect_null(op_finish_judge(&own, &none, &fifo, &tmp), "the same 1 %% for screened");
    none.screened = OP_PRIORITY_FIFO;
    cr_expect_null(op_finish_judge(&own, &none, &fifo, &tmp), "nothing screened");
}
