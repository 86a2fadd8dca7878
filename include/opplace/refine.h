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
 * Deterministic for a seed and an iteration limit; a time budget makes the
 * stopping point depend on the machine's speed.
 */
#ifndef OPPLACE_REFINE_H
#define OPPLACE_REFINE_H

#include "opplace/placer.h"

typedef struct op_refine_opts {
    double budget_seconds; /* stop after this long (<= 0: no time limit) */
    long max_iterations;   /* stop after this many candidates (<= 0: no limit) */
    int max_units;         /* how many units the graph is cut into (default 2000) */
    uint64_t seed;
} op_refine_opts;

typedef struct op_refine_stats {
    int units;
    long tried, accepted;
    double initial_us, final_us, seconds;
} op_refine_stats;

/* Improve pl in place.  A placement with a per-device order is compared
 * with its refined FIFO version and kept if that is not strictly better. */
op_status op_refine(const op_place_ctx *ctx, const op_refine_opts *o, op_placement *pl,
                    op_refine_stats *stats, op_error *err);

#endif
