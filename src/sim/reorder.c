/*
 * reorder.c - the best priority execution order for a fixed placement
 * (opplace/reorder.h).
 *
 * Candidates are judged on one reused simulator that dispatches by
 * priority (op_sim_dispatch_by_priority: one run each, no order built);
 * only the best one's order is derived and run again as the simulator's
 * judge of the placement it returns.  12 candidates (3 priorities x 4
 * caps) cost 14 simulator runs.
 */
#include <stdlib.h>
#include <string.h>

#include "opplace/reorder.h"
#include "opplace/placer.h"

static const op_priority PRIORITIES[] = {OP_PRIORITY_BLEVEL, OP_PRIORITY_CPATH,
                                         OP_PRIORITY_BLEVEL_W};
/* 0: the devices' capacities; otherwise a share of the initial peak */
static const double CAP_SHARES[] = {0, 1.0, 0.95, 0.9};
enum {
    N_PRIORITIES = sizeof PRIORITIES / sizeof *PRIORITIES,
    N_CAPS = sizeof CAP_SHARES / sizeof *CAP_SHARES
};

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
    return out;
}

typedef struct choice {
    int k, c; /* indexes into PRIORITIES and CAP_SHARES; k < 0: none */
    judged j;
} choice;

/* Screen every (priority, cap) on the dispatching simulator: best gets
 * the best that improves on the initial placement, top the best of all. */
static op_status screen(const op_problem *p, op_sim *sim, const op_placement *view,
                        double *const prio[N_PRIORITIES], int64_t *cap, const judged *initial,
                        int keep_peak, op_sim_result *r, choice *best, choice *top, int *runs,
                        op_error *err)
{
    op_status st = OP_OK;
    /* an interrupt (Ctrl-C) ends the screening: the best order so far stands */
    for (int c = 0; c < N_CAPS && !st && !op_interrupted(); c++) {
        fill_cap(p, CAP_SHARES[c], initial->peak, cap);
        for (int k = 0; k < N_PRIORITIES && !st && !op_interrupted(); k++) {
            judged j;
            op_sim_dispatch_by_priority(sim, prio[k], cap);
            st = run_judged(p, sim, view, r, &j, err);
            ++*runs;
            if (!st && improves(&j, &best->j, initial, keep_peak))
                *best = (choice){k, c, j};
            int within = !keep_peak || j.peak <= initial->peak;
            if (!st && within &&
                (top->k < 0 || op_sim_ranks_before(j.over, j.step, top->j.over, top->j.step)))
                *top = (choice){k, c, j};
        }
    }
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
    fill_cap(p, CAP_SHARES[ch->c], initial->peak, cap);
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
    if (!st)
        st = screen(p, sim, &view, prio, cap, &initial, keep_peak, &r, &best, &top, &runs,
                    err);
    if (!st && best.k >= 0)
        st = apply(p, sim, pl, &best, prio[best.k], cap, &initial, keep_peak, &r, &final, &runs,
                   &applied, err);
    if (!st && stats)
        *stats = (op_reorder_stats){
            .initial_us = initial.step, .final_us = final.step,
            .initial_peak = initial.peak, .final_peak = final.peak,
            .initial_over = initial.over, .final_over = final.over,
            .priority = applied ? PRIORITIES[best.k] : OP_PRIORITY_FIFO,
            .cap_share = applied ? CAP_SHARES[best.c] : 0, .runs = runs,
            .screened = top.k >= 0 ? PRIORITIES[top.k] : OP_PRIORITY_FIFO,
            .screened_cap_share = top.k >= 0 ? CAP_SHARES[top.c] : 0,
            .screened_us = top.j.step};
    for (int k = 0; k < N_PRIORITIES; k++)
        free(prio[k]);
    free(cap);
    if (have_r)
        op_sim_result_destroy(&r);
    op_sim_free(sim);
    return st;
}
