/*
 * trinity_final.c - the Trinity placer's final choice (BEYOND THE PAPER,
 * which returns the placement with the best MDPE reward, without an
 * execution order): which placement, and which per-device execution order
 * (opplace/list_schedule.h), the placer returns after the search.
 *
 * Candidates: the trainer's pool (its best distinct placements under the
 * search's judge, trinity_train.c), the reference, and the caller's extra
 * placements (the layer-boundary moves of trinity_boundary.c, labelled
 * "a boundary move" in the progress lines).  Each is simulated
 * first-ready-first (FIFO) and list-scheduled with every priority (bottom
 * level with transfers, tlevel + blevel, compute-only bottom level),
 * without a memory cap and with caps of 100 / 95 / 90 % of the memory
 * bound (M^ when the best FIFO candidate is within the tolerances) and
 * 100 % of the candidate's own FIFO peak: up to 15 list schedules per
 * candidate.  The simulator judges every variant, ordered ones by
 * replaying their `order`.  The list scheduler's cap is a target, not a
 * guarantee, hence several caps.
 *
 * base = the best FIFO candidate by the constrained order
 * (trinity_metrics_better: what the search alone would return).  A
 * variant is ADMISSIBLE when it is no more out of memory than base and,
 * if base is within the tolerances, within them too (by default they are
 * the reference's FIFO peaks), else no higher than base's peaks.  The
 * result is the fastest admissible variant (base unless one is strictly
 * faster).  So the result is never worse than the reference on step, peak
 * communication or peak memory, and never slower than the reference's
 * placement with any of these orders.  Peak communication does not depend
 * on the order; memory may, and an ordered variant may hold more than its
 * own FIFO run as long as it stays within the tolerance.
 *
 * Progress lines: every candidate (FIFO metrics, best admissible step),
 * the choice, and "reference + order" (the reference's best admissible
 * variant) beside it, so a run shows whether the learnt placement or the
 * order made the gain.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/list_schedule.h"
#include "opplace/search.h"
#include "placers/trinity/trinity_internal.h"

/* The state of one final choice: the current best variant, base, the bound. */
typedef struct final_choice {
    const op_problem *p;
    const trinity_reward_config *rc;
    trinity_bench j;   /* simulator, result, the candidate (j.pl), caps */
    double deadline;   /* the command's (ctx->deadline; 0: none): no order tried after it */
    trinity_metrics base, cur;
    int within;        /* base is within the tolerances */
    double mem_bound;  /* the cap's 100 % */
    int cur_entry, cur_prio;
    double cur_cap_share; /* 0: no cap; < 0: the own FIFO peak */
} final_choice;

static int admissible(const final_choice *f, const trinity_metrics *c)
{
    if (c->oom > f->base.oom)
        return 0;
    if (f->within)
        return trinity_within_tolerances(c, f->rc);
    return c->peak_comm <= f->base.peak_comm && c->peak_mem <= f->base.peak_mem;
}

static op_status measure_placement(final_choice *f, const op_placement *pl, trinity_metrics *m,
                                   op_error *err)
{
    return trinity_judge(f->p, f->j.sim, pl, &f->j.r, NULL, NULL, f->rc, m, err);
}

/* out becomes a copy of cand (devices and order), keeping out's name. */
static op_status keep_candidate(op_placement *out, const op_placement *cand, op_error *err)
{
    op_placement kept;
    if (op_placement_copy(&kept, cand, err))
        return OP_ENOMEM;
    if (out->algorithm && op_placement_set_algorithm(&kept, out->algorithm, err)) {
        op_placement_destroy(&kept);
        return OP_ENOMEM;
    }
    op_placement_destroy(out);
    *out = kept;
    return OP_OK;
}

typedef struct order_visit {
    final_choice *f;
    int e;
    const int *dev;
    trinity_metrics *best;
    op_placement *out;
} order_visit;

/* One ordered variant of entry e (an op_order_visit). */
static op_status try_order(void *arg, op_priority k, double share, const int64_t *cap,
                           int *stop, op_error *err)
{
    order_visit *v = arg;
    final_choice *f = v->f;
    trinity_metrics c;
    op_status st;
    if ((f->deadline > 0 && op_seconds_now() > f->deadline) || op_interrupted()) {
        *stop = 1; /* out of time: the variants tried so far */
        return OP_OK;
    }
    memcpy(f->j.pl.device_of, v->dev, (size_t)f->p->n * sizeof(int));
    if ((st = op_placement_order_by_priority(f->p, &f->j.pl, k, cap, err)) ||
        (st = measure_placement(f, &f->j.pl, &c, err)))
        return st;
    if (!admissible(f, &c))
        return OP_OK;
    if (c.step_us < v->best->step_us)
        *v->best = c;
    if (!(c.step_us < f->cur.step_us))
        return OP_OK;
    if ((st = keep_candidate(v->out, &f->j.pl, err)))
        return st;
    f->cur = c;
    f->cur_entry = v->e, f->cur_prio = (int)k, f->cur_cap_share = share;
    return OP_OK;
}

/* Every ordered variant of entry e (devices dev, FIFO metrics fifo);
 * *best receives the entry's fastest admissible variant (its FIFO one
 * when admissible, else step = +inf); out follows the overall fastest. */
static op_status try_orders_of(final_choice *f, int e, const int *dev,
                               const trinity_metrics *fifo, trinity_metrics *best,
                               op_placement *out, op_error *err)
{
    *best = *fifo;
    if (!admissible(f, fifo))
        best->step_us = 1.0 / 0.0;
    op_order_space sp = {.caps = OP_CAPS_ALL, .base = f->mem_bound,
                         .own_peak = (double)fifo->peak_mem};
    order_visit v = {f, e, dev, best, out};
    return op_order_search(f->p, &sp, f->j.cap, try_order, &v, err);
}

static void describe_order(char *buf, size_t len, int prio, double share, double mem_bound)
{
    if (!prio)
        snprintf(buf, len, "first-ready-first");
    else if (share == 0)
        snprintf(buf, len, "%s order", op_priority_name((op_priority)prio));
    else if (share < 0)
        snprintf(buf, len, "%s order, memory cap its own peak", op_priority_name((op_priority)prio));
    else
        snprintf(buf, len, "%s order, memory cap %.0f%% of %.2f GiB",
                 op_priority_name((op_priority)prio), 100 * share, mem_bound / 1073741824.0);
}

/* The candidates: the n_pool pool entries, then the reference when it is
 * not one of them.  out receives the result (ordered or not), *m its
 * metrics; the progress lines give the reference's best variant
 * ("expert + order") next to the result. */
static op_status choose_final(final_choice *f, const op_place_ctx *ctx, const int *const *entries,
                              int n_entries, int ref_entry, int first_extra, op_placement *out,
                              trinity_metrics *m, op_error *err)
{
    const op_problem *p = ctx->p;
    trinity_metrics *fifo = op_calloc((size_t)n_entries, sizeof *fifo, err);
    if (!fifo)
        return OP_ENOMEM;
    op_status st = OP_OK;
    int b = 0;
    for (int e = 0; !st && e < n_entries; e++) {
        memcpy(f->j.pl.device_of, entries[e], (size_t)p->n * sizeof(int));
        op_placement_drop_order(&f->j.pl);
        st = measure_placement(f, &f->j.pl, &fifo[e], err);
        if (!st && e > 0 && trinity_metrics_better(&fifo[e], &fifo[b], f->rc))
            b = e;
    }
    if (!st) {
        f->base = f->cur = fifo[b];
        f->cur_entry = b, f->cur_prio = 0, f->cur_cap_share = 0;
        f->within = trinity_within_tolerances(&f->base, f->rc);
        f->mem_bound = f->within ? fmin(f->rc->max_mem_bytes, 9e18) : (double)f->base.peak_mem;
        memcpy(out->device_of, entries[b], (size_t)p->n * sizeof(int));
        op_placement_drop_order(out);
    }
    trinity_metrics ref_best = {.step_us = 1.0 / 0.0};
    for (int e = 0; !st && e < n_entries; e++) {
        trinity_metrics best;
        if (admissible(f, &fifo[e]) && fifo[e].step_us < f->cur.step_us) { /* not base */
            memcpy(out->device_of, entries[e], (size_t)p->n * sizeof(int));
            op_placement_drop_order(out);
            f->cur = fifo[e];
            f->cur_entry = e, f->cur_prio = 0, f->cur_cap_share = 0;
        }
        st = try_orders_of(f, e, entries[e], &fifo[e], &best, out, err);
        if (e == ref_entry)
            ref_best = best;
        if (!st)
            op_progress(ctx,
                        "trinity: candidate %d%s: first-ready-first %.3f ms, %.1f MiB, %.2f GiB%s; "
                        "best admissible %.3f ms",
                        e, e == ref_entry ? " (the reference)"
                           : e >= first_extra ? " (a boundary move)" : "",
                        fifo[e].step_us / 1000.0,
                        (double)fifo[e].peak_comm / 1048576.0,
                        (double)fifo[e].peak_mem / 1073741824.0, fifo[e].oom ? ", OOM" : "",
                        best.step_us / 1000.0);
    }
    if (!st) {
        char how[96];
        describe_order(how, sizeof how, f->cur_prio, f->cur_cap_share, f->mem_bound);
        int learnt = f->cur_entry != ref_entry;
        op_progress(ctx,
                    "trinity: final choice among %d placements (the search's pool and the "
                    "reference): %s placement (first-ready-first %.3f ms) with %s: %.3f ms, "
                    "peak communication %.1f MiB, peak memory %.2f GiB",
                    n_entries,
                    !learnt ? "the reference's"
                    : f->cur_entry >= first_extra ? "a boundary-move"
                                                  : "a learnt",
                    fifo[f->cur_entry].step_us / 1000.0,
                    how, f->cur.step_us / 1000.0, (double)f->cur.peak_comm / 1048576.0,
                    (double)f->cur.peak_mem / 1073741824.0);
        const char *whose = f->cur_entry >= first_extra ? "boundary-move" : "learnt";
        if (ref_entry >= 0 && isinf(ref_best.step_us))
            op_progress(ctx,
                        "trinity: reference + order: none admissible (first-ready-first %.3f "
                        "ms%s); %s placement better",
                        fifo[ref_entry].step_us / 1000.0, fifo[ref_entry].oom ? ", OOM" : "",
                        whose);
        else if (ref_entry >= 0)
            op_progress(ctx,
                        "trinity: reference + order: %.3f ms (first-ready-first %.3f ms); "
                        "%s placement %s",
                        ref_best.step_us / 1000.0, fifo[ref_entry].step_us / 1000.0,
                        learnt ? whose : "learnt",
                        !learnt ? "not better"
                        : f->cur.step_us < ref_best.step_us ? "better"
                                                            : "equal");
        *m = f->cur;
    }
    free(fifo);
    return st;
}

op_status trinity_final_choice(const op_place_ctx *ctx, const trinity_trainer *t,
                               const trinity_reward_config *rc, const int *extra, int n_extra,
                               op_placement *out, trinity_metrics *m, op_error *err)
{
    const op_problem *p = ctx->p;
    const trinity_reference *ref = trinity_trainer_reference(t, 0);
    int n_pool = trinity_trainer_pool_size(t, 0), n = 0, ref_entry = -1;
    if (!extra || n_extra < 0)
        n_extra = 0;
    const int **entries = op_calloc((size_t)n_pool + (size_t)n_extra + 2, sizeof *entries, err);
    final_choice f = {.p = p, .rc = rc, .deadline = ctx->deadline};
    if (!entries)
        return OP_ENOMEM;
    for (int i = 0; i < n_pool; i++) {
        entries[n] = trinity_trainer_pool(t, 0, i).device_of;
        if (ref && ref_entry < 0 &&
            !memcmp(entries[n], ref->device_of, (size_t)p->n * sizeof(int)))
            ref_entry = n;
        n++;
    }
    if (ref && ref_entry < 0)
        ref_entry = n, entries[n++] = ref->device_of;
    int first_extra = n;
    for (int k = 0; k < n_extra; k++)
        entries[n++] = extra + (size_t)k * (size_t)p->n;
    if (!n) {
        trinity_best b = trinity_trainer_best(t, 0);
        entries[n++] = b.device_of;
    }
    op_status st = trinity_bench_init(&f.j, p, err);
    if (!st)
        st = choose_final(&f, ctx, entries, n, ref_entry, first_extra, out, m, err);
    trinity_bench_destroy(&f.j);
    free(entries);
    return st;
}

