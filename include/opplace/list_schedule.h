/*
 * opplace/list_schedule.h - per-device execution orders for a FIXED
 * placement by priority list scheduling ("priority orders").
 *
 * A placement's step time depends on device_of and on the order in which
 * each device runs its ops (formats.md sections 3 and 5: without `order`
 * the simulator runs ready ops first-ready-first, FIFO; with `order` each
 * device runs exactly its listed ops).  Peak communication (rule 3) depends
 * on device_of alone, so a better order cuts the step time at equal
 * communication; peak memory may change with the order either way.
 *
 * op_order_list_schedule replays the simulator's rules (one op at a time
 * per device, one transfer per (source op, destination device) of the
 * largest edge's bytes, FIFO channels, compute and transfers overlapping)
 * but, whenever a device is free, starts its READY op of HIGHEST PRIORITY
 * (ties: the earlier ready, then the smaller op index) instead of the
 * first-ready one.  The start sequence it returns is a topological order
 * (an op starts only after its predecessors finished), so the per-device
 * orders derived from it (op_placement_set_order_from_sequence) never
 * deadlock the simulator, and each device's list holds exactly its ops.
 * The modelled makespan is reported; the simulator remains the judge (ties
 * of transfers issued at the same instant may be queued differently).
 *
 * Priorities (op_placement_priorities), levels of core/orders.h with the
 * placement's own costs: w_v = the op's time on its device, c_uv = the
 * transfer time of the edge on the link between the two devices (0 when
 * both run on one device):
 *   OP_PRIORITY_BLEVEL    bottom level: the longest path from the op to a
 *                         sink, transfers included (HEFT's upward rank,
 *                         the classic critical-path-first list schedule)
 *   OP_PRIORITY_CPATH     tlevel + blevel: the longest path through the op
 *   OP_PRIORITY_BLEVEL_W  bottom level of compute alone (transfers ignored)
 * OP_PRIORITY_FIFO means "no order": the simulator's own first-ready-first
 * schedule, the baseline the others are compared with.
 *
 *     double *prio = ...;  int *seq = ...;  (n each)
 *     op_placement_priorities(p, pl->device_of, OP_PRIORITY_BLEVEL, prio, &err);
 *     op_order_list_schedule(p, pl->device_of, prio, NULL, seq, NULL, &err);
 *     op_placement_set_order_from_sequence(pl, seq, &err);
 * or in one call: op_placement_order_by_priority(p, pl, OP_PRIORITY_BLEVEL, NULL, &err).
 *
 * Running ahead along the critical path can hold more tensors at once than
 * first-ready-first does (on the RNNs here, +2..+37 % peak memory), so a
 * per-device memory cap can be given (op_order_list_schedule).
 */
#ifndef OPPLACE_LIST_SCHEDULE_H
#define OPPLACE_LIST_SCHEDULE_H

#include <stdint.h>

#include "opplace/placement.h"
#include "opplace/problem.h"
#include "opplace/simulate.h"

typedef enum op_priority {
    OP_PRIORITY_FIFO = 0,
    OP_PRIORITY_BLEVEL,
    OP_PRIORITY_CPATH,
    OP_PRIORITY_BLEVEL_W,
    OP_PRIORITY_COUNT
} op_priority;

/* "fifo", "blevel", "cpath", "blevel-w"; NULL for an unknown value. */
const char *op_priority_name(op_priority k);

/* prio receives n values (larger runs first).  OP_PRIORITY_FIFO gives 0
 * for every op (the list schedule then degenerates to first-ready-first). */
op_status op_placement_priorities(const op_problem *p, const int *device_of, op_priority k,
                                   double *prio, op_error *err);

/* The same with a workspace sized for p once (the levels' arrays), for
 * searches that compute priorities for every candidate placement: no
 * allocation per call.  Values are identical to op_placement_priorities. */
typedef struct op_priority_ws op_priority_ws;
op_priority_ws *op_priority_ws_new(const op_problem *p, op_error *err);
void op_priority_ws_free(op_priority_ws *ws);
op_status op_placement_priorities_ws(op_priority_ws *ws, const int *device_of, op_priority k,
                                     double *prio, op_error *err);

/* The start sequence (n ops) of the priority list schedule of device_of;
 * makespan_us (may be NULL) receives the modelled step time.  mem_cap
 * (per device, or NULL for none) makes it MEMORY-AWARE: the schedule keeps
 * the memory of rule 5 of formats.md and a free device starts the
 * highest-priority ready op whose output and scratch bytes keep it within
 * its cap, or, when none does, the ready op that adds least once it has
 * finished (its output and scratch less the inputs it is the last holder
 * of), so it never stalls; a cap is a target, not a guarantee: received tensors are
 * allocated when their transfer starts, whatever the cap).  Fails
 * (OP_EINPUT) when an op is placed on a device it cannot run on. */
op_status op_order_list_schedule(const op_problem *p, const int *device_of, const double *prio,
                                 const int64_t *mem_cap, int *seq, double *makespan_us,
                                 op_error *err);

/* Give pl (device_of kept) the per-device order of priority k (mem_cap as
 * above, may be NULL); OP_PRIORITY_FIFO drops any order. */
op_status op_placement_order_by_priority(const op_problem *p, op_placement *pl, op_priority k,
                                         const int64_t *mem_cap, op_error *err);

/* Make the reusable simulator s run list schedules: until called again
 * with prio NULL, every op_sim_run of s dispatches by prio (and mem_cap,
 * as above) instead of first-ready-first, and reports that schedule's
 * step time and memory, without deriving the order.  For searches that
 * judge each candidate placement by its list-scheduled step (no
 * allocation per run).  Both arrays must outlive the runs; a placement
 * run this way must have no `order` of its own. */
void op_sim_dispatch_by_priority(op_sim *s, const double *prio, const int64_t *mem_cap);

#endif
