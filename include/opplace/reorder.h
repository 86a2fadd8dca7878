/*
 * opplace/reorder.h - give any placement the best priority execution order
 * the simulator finds for it ("reorder"), keeping device_of.
 *
 * Every placer can leave each device's order to the simulator's
 * first-ready-first rule (formats.md section 5, rule 2), which on layer
 * splits of RNNs leaves 21-38 % of the pipelining unused
 * (bench/RESULTS.md).  op_placement_reorder tries the priority list
 * schedules of opplace/list_schedule.h (blevel, cpath, blevel-w), each
 * with the devices' capacities as memory cap and with caps of 100, 95 and
 * 90 % of the placement's own peak (capped at capacity: running ahead on
 * the critical path holds more tensors at once), screens them on a reused
 * simulator and gives pl the best one's per-device `order` when the
 * simulator, running that order, ranks it strictly before pl as it came
 * (op_sim_ranks_before: less overflow, then shorter step) and, with
 * keep_peak, its largest device peak is no higher than pl's.  Otherwise pl
 * is left exactly as it came (its own order, if any, included), so the
 * result is never worse.  Peak communication does not depend on the order.
 *
 * Not from one of the papers: HEFT-style list scheduling applied after
 * placement, available to every placer (`opplace place --reorder`, and
 * the last stage of auto).
 */
#ifndef OPPLACE_REORDER_H
#define OPPLACE_REORDER_H

#include <stdint.h>

#include "opplace/list_schedule.h"

typedef struct op_reorder_stats {
    double initial_us, final_us;     /* step time before and after */
    int64_t initial_peak, final_peak; /* largest device peak memory before and after */
    double initial_over, final_over; /* op_sim_overflow_bytes before and after */
    op_priority priority;            /* OP_PRIORITY_FIFO: pl left as it came */
    double cap_share;                /* the cap's share of the initial peak; 0: capacity */
    int runs;                        /* simulator runs spent */
    /* The best screened (priority, cap), kept or not (with keep_peak,
     * among those within the peak; OP_PRIORITY_FIFO: none qualified) and
     * its step as screened: what to judge other placements by when the
     * placement's own order beats every priority (opplace/refine.h). */
    op_priority screened;
    double screened_cap_share, screened_us;
} op_reorder_stats;

/* Reorder pl in place as described above; stats may be NULL. */
op_status op_placement_reorder(const op_problem *p, op_placement *pl, int keep_peak,
                               op_reorder_stats *stats, op_error *err);

/* The per-device memory caps (n_dev values) of the order stats chose, for
 * judging other placements by the same list schedule (opplace/refine.h). */
void op_reorder_caps(const op_problem *p, const op_reorder_stats *stats, int64_t *cap);

/* stats with the best screened order in place of the kept one, in *out,
 * for judging by it (a placement that carries its own order, e.g.
 * celeritas's, which first-ready-first judging would drop); NULL when
 * nothing was screened. */
const op_reorder_stats *op_reorder_as_screened(const op_reorder_stats *stats,
                                               op_reorder_stats *out);

#endif
