/*
 * coarsen/coarsen.h - shrinking a graph by merging ops into groups.
 *
 * Pesto (section 3.3) and Celeritas (section 5.1, Optimal Operation Fusion)
 * both place a coarse graph whose vertices are groups of original ops, then
 * map the placement back.  A coarsening is an assignment group_of[op] of
 * every original op to a coarse op; op_coarse_build turns it into a coarse
 * op_graph (and refuses one with a cycle), op_coarse_expand maps a coarse
 * placement back to the original ops.
 *
 * Coarse op costs: time = sum of member times (per kind; only kinds every
 * member can use), param_bytes = sum, temp_bytes = max, output_bytes = sum
 * over members with an edge leaving the group (what must be kept for other
 * groups).  Coarse edge bytes = sum over the original edges between the two
 * groups.  Colocation groups and kind/device pins carry over: coarse ops
 * sharing an original colocation group are colocated with each other.
 */
#ifndef OPPLACE_COARSEN_H
#define OPPLACE_COARSEN_H

#include "opplace/graph.h"
#include "opplace/options.h"
#include "opplace/placement.h"
#include "opplace/problem.h"

typedef struct op_coarse_map {
    op_graph *coarse;
    int n_orig;
    int *group_of; /* original op -> coarse op */
} op_coarse_map;

/* group_of values must cover 0..n_groups-1.  Fails with OP_EINPUT if the
 * grouping makes the coarse graph cyclic, or merges ops whose kind or device
 * pins disagree. */
op_status op_coarse_build(const op_graph *g, const int *group_of, int n_groups,
                          op_coarse_map *out, op_error *err);
void op_coarse_map_destroy(op_coarse_map *m);

/* device_of of the original ops from a coarse placement; when the coarse
 * placement has an order, each device runs its groups in that order and
 * the members of a group in the original graph's topological order. */
op_status op_coarse_expand(const op_coarse_map *m, const op_graph *orig,
                           const op_placement *coarse_pl, op_placement *fine, op_error *err);

/* A named coarsening method, listed in src/placers/coarseners.c. */
typedef op_status (*op_coarsen_fn)(const op_problem *p, op_options *opts, op_coarse_map *out,
                                   op_error *err);
typedef struct op_coarsener {
    const char *name, *summary, *source;
    op_coarsen_fn run;
} op_coarsener;

#endif
