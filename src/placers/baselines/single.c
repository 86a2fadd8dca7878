/*
 * single.c - the single-device baseline: every op on one device.
 *
 * Picks the device that runs the whole graph fastest (sum of execution
 * times) among those where it fits.  "Fits" is the contract's own memory
 * model (formats.md 5.5, liveness): the placement is simulated, and the
 * simulator's peak must stay within the device's memory.  (It used to be
 * the static sum params + outputs + temporaries, which refused graphs that
 * fit: GPT-12's training graph "needs 21.3 GB" by that sum, while its
 * simulated peak on one device is 11.4 GB.)  Devices are tried
 * fastest first, so usually one simulation is enough.  If no device can
 * run every op (kinds, pins), or the graph fits on none, it reports the
 * problem as infeasible (with --best-effort: the fastest device anyway,
 * which the simulator marks oom).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/placer.h"
#include "opplace/simulate.h"

static op_status place_single(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    const op_problem *p = ctx->p;
    double *total = op_malloc((size_t)p->nd * sizeof *total, err);
    if (!total)
        return OP_ENOMEM;
    int best_any = -1;
    for (int d = 0; d < p->nd; d++) {
        total[d] = 0;
        for (int i = 0; i < p->n && isfinite(total[d]); i++)
            total[d] += op_exec_us(p, i, d);
        if (isfinite(total[d]) && (best_any < 0 || total[d] < total[best_any]))
            best_any = d;
    }
    if (best_any < 0) {
        free(total);
        return op_fail(err, OP_EINFEASIBLE,
                       "single: no device can run every op (kinds or device pins differ)");
    }
    op_sim *sim = op_sim_new(p, err);
    op_sim_result r;
    memset(&r, 0, sizeof r);
    if (!sim || op_sim_result_init(&r, p, err)) {
        op_sim_free(sim);
        free(total);
        return OP_ENOMEM;
    }
    /* candidates fastest first; the first one the simulator fits wins */
    unsigned char *tried = op_calloc((size_t)p->nd, 1, err);
    op_status st = tried ? OP_OK : OP_ENOMEM;
    int chosen = -1;
    int64_t least_peak = -1;
    while (!st && chosen < 0) {
        int d = -1;
        for (int e = 0; e < p->nd; e++)
            if (!tried[e] && isfinite(total[e]) && (d < 0 || total[e] < total[d]))
                d = e;
        if (d < 0)
            break;
        tried[d] = 1;
        for (int i = 0; i < p->n; i++)
            out->device_of[i] = d;
        if ((st = op_sim_run(sim, out, &r, NULL, err)))
            break;
        if (!r.oom)
            chosen = d;
        else if (least_peak < 0 || r.peak_mem[d] < least_peak)
            least_peak = r.peak_mem[d];
    }
    if (!st && chosen < 0) {
        if (ctx->best_effort)
            chosen = best_any;
        else
            st = op_fail(err, OP_EINFEASIBLE,
                         "single: the graph fits on no single device (its simulated peak is at "
                         "least %lld bytes; use --best-effort to place it anyway)",
                         (long long)least_peak);
    }
    if (!st)
        for (int i = 0; i < p->n; i++)
            out->device_of[i] = chosen;
    free(tried);
    op_sim_result_destroy(&r);
    op_sim_free(sim);
    free(total);
    return st;
}

const op_placer op_placer_single = {
    .name = "single",
    .summary = "every op on the fastest single device where the simulator says it fits",
    .source = "baseline (all papers)",
    .place = place_single,
};
