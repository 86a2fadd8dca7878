/*
 * order_search.c - the ranking of simulated placements, the one loop over
 * priorities x memory caps, and with them the best priority execution
 * order for a fixed placement (opplace/search.h).
 *
 * Reorder: candidates are judged on one reused simulator that dispatches by
 * priority (op_sim_dispatch_by_priority: one run each, no order built);
 * only the best one's order is derived and run again as the simulator's
 * judge of the placement it returns.  12 candidates (3 priorities x 4
 * caps) cost 14 simulator runs.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/run_ctx.h"
#include "opplace/search.h"
#include "search/search_internal.h"
#include "sim/sim_util.h"

const double op_cap_shares[OP_N_CAP_SHARES] = {0, 1.0, 0.95, 0.9, -1};

static const op_priority PRIORITIES[] = {OP_PRIORITY_BLEVEL, OP_PRIORITY_CPATH,
                                         OP_PRIORITY_BLEVEL_W};
enum { N_PRIORITIES = sizeof PRIORITIES / sizeof *PRIORITIES };

/* ---------------------------------------------------------------- ranking */

int op_judged_within(const op_judged *a, const op_tolerance *tol)
{
    return (double)a->comm <= tol->max_comm && (double)a->peak <= tol->max_mem;
}

int op_judged_before(const op_judged *a, const op_judged *b, const op_tolerance *tol)
{
    if (!tol)
        return op_sim_ranks_before(a->over, a->step, b->over, b->step);
    int wa = op_judged_within(a, tol), wb = op_judged_within(b, tol);
    if (wa != wb)
        return wa;
    if (a->over != b->over)
        return a->over < b->over;
    if (!wa)
        return a->reward > b->reward;
    if (a->step != b->step)
        return a->step < b->step;
    if (a->comm != b->comm)
        return a->comm < b->comm;
    return a->peak < b->peak;
}

/* ----------------------------------------------------------- order search */

/* The caps of entry v of op_cap_shares; NULL when it is "no cap". */
static const int64_t *caps_of(const op_problem *p, const op_order_space *sp, int v, int64_t *cap)
{
    double share = op_cap_shares[v];
    if (share == 0 && !sp->clip)
        return NULL;
    double bytes = share < 0 ? sp->own_peak : share * sp->base;
    for (int d = 0; d < p->nd; d++) {
        int64_t c = p->c->dev[d].memory_bytes > 0 ? p->c->dev[d].memory_bytes : INT64_MAX;
        int64_t s = (int64_t)fmin(bytes, 9e18);
        cap[d] = !sp->clip ? s : share != 0 && s < c ? s : c;
    }
    return cap;
}

static int wanted(const op_order_space *sp, int v)
{
    if (!(sp->caps & (1u << v)))
        return 0;
    return op_cap_shares[v] >= 0 || sp->own_peak != sp->base; /* -1 == 100 %: once */
}

op_status op_order_search(const op_problem *p, const op_order_space *sp, int64_t *cap_buf,
                          op_order_visit visit, void *arg, op_error *err)
{
    const op_priority *prio = sp->priorities ? sp->priorities : PRIORITIES;
    int np = sp->priorities ? sp->n_priorities : N_PRIORITIES;
    int outer = sp->prio_outer ? np : OP_N_CAP_SHARES;
    int inner = sp->prio_outer ? OP_N_CAP_SHARES : np;
    int stop = 0;
    op_status st = OP_OK;
    /* an interrupt (Ctrl-C) ends the search: the best order so far stands */
    for (int i = 0; i < outer && !st && !stop && !op_interrupted(); i++)
        for (int j = 0; j < inner && !st && !stop && !op_interrupted(); j++) {
            int v = sp->prio_outer ? j : i, k = sp->prio_outer ? i : j;
            if (wanted(sp, v))
                st = visit(arg, prio[k], op_cap_shares[v], caps_of(p, sp, v, cap_buf), &stop,
                           err);
        }
    return st;
}

/* ---------------------------------------------------------------- reorder */

typedef struct judged {
    double over, step;
    int64_t peak;
} judged;

static op_status run_judged(const op_problem *p, op_sim *sim, const op_placement *pl,
                            op_sim_result *r, judged *j, op_error *err)
{
    op_status st = op_sim_run(sim, pl, r, NULL, err);
    if (!st)
        *j = (judged){op_sim_overflow_bytes(p, r), r->step_time_us,
                      op_sim_largest_peak(p, r)};
    return st;
}

static int improves(const judged *c, const judged *inc, const judged *initial, int keep_peak)
{
    return op_sim_ranks_before(c->over, c->step, inc->over, inc->step) &&
           (!keep_peak || c->peak <= initial->peak);
}

static void fill_cap(const op_problem *p, double share, int64_t initial_peak, int64_t *cap)
{
    for (int d = 0; d < p->nd; d++) {
        int64_t c = p->c->dev[d].memory_bytes > 0 ? p->c->dev[d].memory_bytes : INT64_MAX;
        int64_t s = (int64_t)(share * (double)initial_peak);
        cap[d] = share > 0 && s < c ? s : c;
    }
}

void op_reorder_caps(const op_problem *p, const op_reorder_stats *stats, int64_t *cap)
{
    fill_cap(p, stats->cap_share, stats->initial_peak, cap);
}

const op_reorder_stats *op_reorder_as_screened(const op_reorder_stats *stats,
                                               op_reorder_stats *out)
{
    if (stats->screened == OP_PRIORITY_FIFO)
        return NULL;
    *out = *stats;
    out->priority = stats->screened;
    out->cap_share = stats->screened_cap_share;
    out->final_us = stats->screened_us;
    out->final_over = stats->screened_over;
    return out;
}

typedef struct choice {
    int k;        /* index into PRIORITIES; < 0: none */
    double share; /* entry of op_cap_shares */
    judged j;
} choice;

static int prio_index(op_priority k)
{
    for (int i = 0; i < N_PRIORITIES; i++)
        if (PRIORITIES[i] == k)
            return i;
    return -1;
}

typedef struct screening {
    const op_problem *p;
    op_sim *sim;
    const op_placement *view;
    double *const *prio;
    const judged *initial;
    int keep_peak;
    op_sim_result *r;
    choice *best, *top;
    int *runs;
    double deadline; /* <= 0: none */
} screening;

/* One (priority, cap) on the dispatching simulator (an op_order_visit). */
static op_status screen_one(void *arg, op_priority pk, double share, const int64_t *cap,
                            int *stop, op_error *err)
{
    screening *s = arg;
    int k = prio_index(pk);
    judged j;
    op_sim_dispatch_by_priority(s->sim, s->prio[k], cap);
    op_status st = run_judged(s->p, s->sim, s->view, s->r, &j, err);
    ++*s->runs;
    if (s->deadline > 0 && op_seconds_now() >= s->deadline)
        *stop = 1; /* the budget is spent: keep what was screened */
    if (!st && improves(&j, &s->best->j, s->initial, s->keep_peak))
        *s->best = (choice){k, share, j};
    int within = !s->keep_peak || j.peak <= s->initial->peak;
    if (!st && within &&
        (s->top->k < 0 || op_sim_ranks_before(j.over, j.step, s->top->j.over, s->top->j.step)))
        *s->top = (choice){k, share, j};
    return st;
}

/* Screen every (priority, cap) on the dispatching simulator: best gets
 * the best that improves on the initial placement, top the best of all. */
static op_status screen(const op_problem *p, op_sim *sim, const op_placement *view,
                        double *const prio[N_PRIORITIES], int64_t *cap, const judged *initial,
                        int keep_peak, op_sim_result *r, choice *best, choice *top, int *runs,
                        double deadline, op_error *err)
{
    screening s = {p, sim, view, prio, initial, keep_peak, r, best, top, runs, deadline};
    op_order_space sp = {.caps = OP_CAPS_ALL, .base = (double)initial->peak,
                         .own_peak = (double)initial->peak, .clip = 1};
    op_status st = op_order_search(p, &sp, cap, screen_one, &s, err);
    op_sim_dispatch_by_priority(sim, NULL, NULL);
    return st;
}

/* Give a copy of pl the chosen order; replace pl when the simulator's run
 * of that order confirms the improvement. */
static op_status apply(const op_problem *p, op_sim *sim, op_placement *pl, const choice *ch,
                       const double *prio, int64_t *cap, const judged *initial, int keep_peak,
                       op_sim_result *r, judged *final, int *runs, int *applied,
                       op_error *err)
{
    op_placement cand;
    op_status st = op_placement_copy(&cand, pl, err);
    if (st)
        return st;
    fill_cap(p, ch->share, initial->peak, cap);
    int *seq = op_malloc(((size_t)p->n + 1) * sizeof *seq, err);
    st = !seq ? OP_ENOMEM : op_order_list_schedule(p, pl->device_of, prio, cap, seq, NULL, err);
    if (!st)
        st = op_placement_set_order_from_sequence(&cand, seq, err);
    judged j = *initial;
    if (!st)
        st = run_judged(p, sim, &cand, r, &j, err);
    *runs += 2;
    if (!st && improves(&j, initial, initial, keep_peak)) {
        op_placement_destroy(pl);
        *pl = cand;
        *final = j;
        *applied = 1;
    } else {
        op_placement_destroy(&cand);
    }
    free(seq);
    return st;
}

op_status op_placement_reorder(const op_problem *p, op_placement *pl, int keep_peak,
                               op_reorder_stats *stats, op_error *err)
{
    return op_placement_reorder_until(p, pl, keep_peak, 0, stats, err);
}

op_status op_placement_reorder_until(const op_problem *p, op_placement *pl, int keep_peak,
                                     double deadline, op_reorder_stats *stats, op_error *err)
{
    op_sim *sim = op_sim_new(p, err);
    if (!sim)
        return err && err->code ? err->code : OP_ENOMEM;
    op_sim_result r;
    double *prio[N_PRIORITIES] = {0};
    int64_t *cap = op_malloc(((size_t)p->nd + 1) * sizeof *cap, err);
    op_status st = !cap ? OP_ENOMEM : op_sim_result_init(&r, p, err);
    int have_r = !st;
    for (int k = 0; k < N_PRIORITIES && !st; k++) {
        prio[k] = op_malloc(((size_t)p->n + 1) * sizeof(double), err);
        st = !prio[k] ? OP_ENOMEM
                      : op_placement_priorities(p, pl->device_of, PRIORITIES[k], prio[k], err);
    }
    judged initial = {0}, final;
    int runs = 1, applied = 0;
    if (!st)
        st = run_judged(p, sim, pl, &r, &initial, err);
    final = initial;
    choice best = {-1, 0, initial}, top = {-1, 0, initial};
    const op_placement view = {.n_ops = p->n, .n_dev = p->nd, .device_of = pl->device_of};
    int late = deadline > 0 && op_seconds_now() >= deadline;
    if (!st && !late)
        st = screen(p, sim, &view, prio, cap, &initial, keep_peak, &r, &best, &top, &runs,
                    deadline, err);
    if (!st && best.k >= 0 && !op_interrupted())
        st = apply(p, sim, pl, &best, prio[best.k], cap, &initial, keep_peak, &r, &final, &runs,
                   &applied, err);
    if (!st && stats)
        *stats = (op_reorder_stats){
            .initial_us = initial.step, .final_us = final.step,
            .initial_peak = initial.peak, .final_peak = final.peak,
            .initial_over = initial.over, .final_over = final.over,
            .priority = applied ? PRIORITIES[best.k] : OP_PRIORITY_FIFO,
            .cap_share = applied ? best.share : 0, .runs = runs,
            .screened = top.k >= 0 ? PRIORITIES[top.k] : OP_PRIORITY_FIFO,
            .screened_cap_share = top.k >= 0 ? top.share : 0,
            .screened_us = top.j.step, .screened_over = top.j.over};
    for (int k = 0; k < N_PRIORITIES; k++)
        free(prio[k]);
    free(cap);
    if (have_r)
        op_sim_result_destroy(&r);
    op_sim_free(sim);
    return st;
}
