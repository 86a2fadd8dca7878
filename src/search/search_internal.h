/*
 * search_internal.h - internal: what the search layer's own files and the
 * placers use of it beyond opplace/search.h.
 */
#ifndef OPPLACE_SEARCH_INTERNAL_H
#define OPPLACE_SEARCH_INTERNAL_H

#include "opplace/search.h"

/* op_placement_reorder, ending its screening at `deadline` (absolute
 * op_seconds_now() time; <= 0: none) or Ctrl-C, at most one simulator run
 * late, with the best order screened so far. */
op_status op_placement_reorder_until(const op_problem *p, op_placement *pl, int keep_peak,
                                     double deadline, op_reorder_stats *stats, op_error *err);

/* stats with the best screened order in place of the kept one (priority,
 * cap, final step and overflow), in *out, for judging by it (a placement
 * that carries its own order, e.g. celeritas's, which first-ready-first
 * judging would drop); NULL when nothing was screened. */
const op_reorder_stats *op_reorder_as_screened(const op_reorder_stats *stats,
                                               op_reorder_stats *out);

#endif
