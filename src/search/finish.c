/*
 * finish.c - the finishing pipeline every result goes through: its best
 * priority order, refinement judged by that order, the order again
 * (opplace/search.h).  `opplace place` (--order, --refine) and auto share
 * it; auto hands it its multi-stream refinement and the order its
 * portfolio already found.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/search.h"
#include "search/search_internal.h"

/* An order that gains less than this share over first-ready-first is not
 * worth judging refinement by (op_finish_judge). */
static const double MIN_ORDER_GAIN = 0.01;

void op_stages_add(op_stages *s, char stage)
{
    size_t n = strlen(s->seq);
    if (stage == 'o' && strchr(s->seq, 'o'))
        return; /* a placement is "ordered" once, however often reordered */
    if (n + 1 < sizeof s->seq)
        s->seq[n] = stage, s->seq[n + 1] = '\0';
}

void op_stages_name(const char *base, const op_stages *s, char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "%s", base ? base : "?");
    for (const char *c = s->seq; *c && len < cap; c++)
        len += (size_t)snprintf(buf + len, cap - len, "%s", *c == 'o' ? "+order" : "+refine");
}

const op_reorder_stats *op_finish_judge(const op_placement *pl, const op_reorder_stats *o,
                                        const op_judged *fifo, op_reorder_stats *tmp)
{
    if (!o)
        return NULL;
    const op_reorder_stats *j = o->priority != OP_PRIORITY_FIFO ? o
                                : pl->has_order                 ? op_reorder_as_screened(o, tmp)
                                                                : NULL;
    if (!j)
        return NULL;
    int gains = j->final_over < fifo->over || j->final_us <= (1 - MIN_ORDER_GAIN) * fifo->step;
    return gains ? j : NULL;
}

/* pl judged first-ready-first: its device_of without an order. */
static op_status fifo_of(const op_problem *p, const op_placement *pl, op_judged *out,
                         op_error *err)
{
    op_sim_result r;
    op_status st = op_sim_result_init(&r, p, err);
    if (st)
        return st;
    const op_placement fifo = {.n_ops = pl->n_ops, .n_dev = pl->n_dev,
                               .device_of = pl->device_of};
    if (!(st = op_simulate(p, &fifo, &r, NULL, err)))
        *out = (op_judged){.over = op_sim_overflow_bytes(p, &r), .step = r.step_time_us};
    op_sim_result_destroy(&r);
    return st;
}

static op_status order_stage(const op_place_ctx *ctx, const op_finish_opts *fo,
                             op_placement *pl, op_reorder_stats *o, op_stages *stages,
                             op_error *err)
{
    op_status st = op_placement_reorder_until(ctx->p, pl, fo->order == 2, ctx->deadline, o, err);
    if (st)
        return st;
    if (o->priority == OP_PRIORITY_FIFO) {
        op_progress(ctx, "order: no priority order beats the result's own schedule (%.1f us)",
                    o->initial_us);
        return OP_OK;
    }
    char cap[64] = "capacity";
    if (o->cap_share > 0)
        snprintf(cap, sizeof cap, "%.0f%% of the peak", 100 * o->cap_share);
    op_progress(ctx, "order: %s, memory cap %s: %.1f -> %.1f us, peak memory %.2f -> %.2f GiB",
                op_priority_name(o->priority), cap, o->initial_us, o->final_us,
                (double)o->initial_peak / 1073741824.0, (double)o->final_peak / 1073741824.0);
    op_stages_add(stages, 'o');
    return OP_OK;
}

static op_status refine_stage(const op_place_ctx *ctx, const op_finish_opts *fo,
                              const op_reorder_stats *judge, int64_t max_peak,
                              op_placement *pl, op_stages *stages, op_refine_stats *rs,
                              op_error *err)
{
    int64_t *cap = op_malloc(((size_t)ctx->p->nd + 1) * sizeof *cap, err);
    if (!cap)
        return OP_ENOMEM;
    op_refine_opts ro = fo->refine_opts;
    ro.order = judge ? judge->priority : OP_PRIORITY_FIFO;
    ro.order_cap = judge ? cap : NULL;
    ro.max_peak = max_peak;
    if (judge)
        op_reorder_caps(ctx->p, judge, cap);
    op_stages before = *stages;
    if (judge) /* a refined result carries that order */
        op_stages_add(stages, 'o');
    op_status st = fo->run ? fo->run(fo->run_arg, ctx, &ro, pl, rs, err)
                           : op_refine(ctx, &ro, pl, rs, err);
    free(cap);
    if (st)
        return st;
    op_progress(ctx, "refine%s%s: %ld candidates, %ld kept, %.1f -> %.1f us in %.1f s",
                ro.order ? " by the order " : "", ro.order ? op_priority_name(ro.order) : "",
                rs->tried, rs->accepted, rs->initial_us, rs->final_us, rs->seconds);
    if (rs->final_us < rs->initial_us)
        op_stages_add(stages, 'r');
    else
        *stages = before; /* not refined: the placement as it was */
    return OP_OK;
}

op_status op_finish(const op_place_ctx *ctx, const op_finish_opts *fo, op_placement *pl,
                    op_stages *stages, op_refine_stats *rs, op_error *err)
{
    op_reorder_stats o = {.priority = OP_PRIORITY_FIFO, .screened = OP_PRIORITY_FIFO}, tmp;
    op_refine_stats local = {0};
    if (!rs)
        rs = &local;
    *rs = (op_refine_stats){0};
    int ordered = fo->ordered ? fo->is_ordered : 0;
    op_judged fifo = fo->fifo;
    op_status st = OP_OK;
    if (fo->refine && !fo->ordered && (st = fifo_of(ctx->p, pl, &fifo, err)))
        return st;
    if (fo->ordered) {
        o = *fo->ordered;
    } else if (fo->order) {
        st = order_stage(ctx, fo, pl, &o, stages, err);
        ordered = 1;
    } else if (fo->refine && pl->has_order) {
        /* a placement with its own order: screen the priorities for it */
        op_placement scratch;
        if (!(st = op_placement_copy(&scratch, pl, err))) {
            st = op_placement_reorder_until(ctx->p, &scratch, 0, ctx->deadline, &o, err);
            op_placement_destroy(&scratch);
        }
    }
    int refined = 0;
    if (!st && fo->refine) {
        const op_reorder_stats *judge = op_finish_judge(pl, &o, &fifo, &tmp);
        st = refine_stage(ctx, fo, judge, fo->order == 2 ? o.initial_peak : 0, pl, stages, rs,
                          err);
        refined = rs->final_us < rs->initial_us;
    }
    if (!st && fo->order && (refined || !ordered))
        st = order_stage(ctx, fo, pl, &o, stages, err);
    return st;
}
