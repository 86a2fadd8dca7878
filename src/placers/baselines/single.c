/*
 * single.c - the single-device baseline: every op on one device.
 *
 * Picks the device that runs the whole graph fastest (sum of execution
 * times) among those whose memory holds the graph's total footprint (params
 * + outputs + temporaries, an upper bound on any schedule's peak).  If no
 * device can run every op (kinds, pins), or none has the memory, it reports
 * the problem as infeasible (with --best-effort: the fastest device anyway).
 */
#include <math.h>

#include "opplace/placer.h"

static op_status place_single(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    const op_problem *p = ctx->p;
    const op_graph *g = p->g;
    int64_t footprint = 0;
    for (int i = 0; i < p->n; i++)
        footprint += g->param_bytes[i] + g->output_bytes[i] + g->temp_bytes[i];
    int best = -1, best_any = -1;
    double best_t = INFINITY, best_any_t = INFINITY;
    for (int d = 0; d < p->nd; d++) {
        double total = 0;
        for (int i = 0; i < p->n && isfinite(total); i++)
            total += op_exec_us(p, i, d);
        if (!isfinite(total))
            continue;
        if (total < best_any_t) {
            best_any_t = total;
            best_any = d;
        }
        if (footprint <= p->c->dev[d].memory_bytes && total < best_t) {
            best_t = total;
            best = d;
        }
    }
    if (best_any < 0)
        return op_fail(err, OP_EINFEASIBLE,
                       "single: no device can run every op (kinds or device pins differ)");
    if (best < 0 && !ctx->best_effort)
        return op_fail(err, OP_EINFEASIBLE,
                       "single: the graph needs %lld bytes, more than any single device has "
                       "(use --best-effort to place it anyway)", (long long)footprint);
    int d = best >= 0 ? best : best_any;
    for (int i = 0; i < p->n; i++)
        out->device_of[i] = d;
    return OP_OK;
}

const op_placer op_placer_single = {
    .name = "single",
    .summary = "every op on the fastest single device that holds the whole graph",
    .source = "baseline (all papers)",
    .place = place_single,
};
