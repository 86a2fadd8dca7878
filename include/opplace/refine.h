/*
 * opplace/refine.h - local search that improves any placement.
 *
 * Units are colocation groups and chunks of ops (single ops on small
 * graphs; on large graphs, runs of consecutive ops in topological order
 * that share a device and a layer scope).  A step tries moving one unit to
 * another device, moving a connected region of units that live on one
 * device (a chain or subgraph, grown breadth first to 2..64 units), or
 * swapping two units on different devices, and keeps a
 * change only when the simulated step time strictly improves without a
 * device running out of memory (first-improvement hill climbing, in the
 * spirit of Kernighan-Lin / Fiduccia-Mattheyses passes).  Candidates are
 * evaluated incrementally from simulator checkpoints, with the incumbent's
 * step time as cutoff, so a rejected move costs a fraction of a run.
 *
 * Candidates are judged by the simulator's first-ready-first schedule, or,
 * with `order` set, by their own priority list schedule
 * (opplace/list_schedule.h: each candidate's priorities from its own
 * devices, a whole run each, since snapshots of the incumbent's schedule
 * do not apply once the priorities change).  Ordered refinement improves
 * placements whose best schedule is a priority order (the RNN layer splits
 * of bench/RESULTS.md), which first-ready-first refinement cannot see; the
 * refined placement is returned with that order.
 *
 * Deterministic for a seed and an iteration limit; a time budget makes the
 * stopping point depend on the machine's speed.
 */
#ifndef OPPLACE_REFINE_H
#define OPPLACE_REFINE_H

#include "opplace/list_schedule.h"
#include "opplace/placer.h"

typedef struct op_refine_opts {
    double budget_seconds; /* stop after this long (<= 0: no time limit) */
    long max_iterations;   /* stop after this many candidates (<= 0: no limit) */
    int max_units;         /* how many units the graph is cut into (default 2000) */
    uint64_t seed;
    /* OP_PRIORITY_FIFO (the zero default): judge by first-ready-first.
     * Otherwise judge by the list schedule of this priority under the
     * per-device memory caps order_cap (NULL: none; n_dev values that
     * must outlive the call), and return the result with that order. */
    op_priority order;
    const int64_t *order_cap;
    /* > 0: reject candidates whose largest device peak memory exceeds it
     * (`--reorder peak`: keep the placement's peak). */
    int64_t max_peak;
} op_refine_opts;

typedef struct op_refine_stats {
    int units;
    long tried, accepted;
    double initial_us, final_us, seconds;
} op_refine_stats;

/* Improve pl in place.  The result replaces pl only when the simulator,
 * running it as returned (first-ready-first, or with its derived order),
 * ranks it strictly before pl as given, its own order included. */
op_status op_refine(const op_place_ctx *ctx, const op_refine_opts *o, op_placement *pl,
                    op_refine_stats *stats, op_error *err);

#endif
