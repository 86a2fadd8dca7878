/*
 * placer_mem.h - the liveness-based memory estimate the memory-aware
 * baselines use while they place (m-TOPO, m-ETF, m-SCT, HEFT, METIS
 * repair, expert), and the simulator check that backs it.
 *
 * THE RULE.  Ops are laid on one timeline of slots, one op per slot, in a
 * topological order the placer chooses (pos[op]): the order it expects
 * the ops to run in (m-TOPO: its BFS order; m-ETF/m-SCT: decreasing static
 * b-level; HEFT: decreasing upward rank; METIS, expert: the graph's Kahn
 * order).  Device d's level at slot t is, following formats.md 5.5:
 *   - param_bytes of every op charged to d (the whole step);
 *   - output_bytes of op u on d over slots [pos(u), end(u)], where end(u)
 *     is the latest slot of a consumer that is on d or not placed yet
 *     (an unplaced consumer keeps the tensor alive), at least pos(u)+1 if
 *     some consumer is remote (the transfer completes after u), and
 *     pos(u) when u has no consumer;
 *   - one received copy of u's tensor on d (the largest edge bytes from u
 *     to d's consumers, as the simulator sends it) over [pos(u), the
 *     latest slot of u's consumers on d];
 *   - temp_bytes of op v at slot pos(v).
 * Op v fits on d when, with v's charges added, params(d) + the maximum
 * level over every slot stays within cap[d] (= memory_bytes x margin[d]).
 * The maximum is kept in a per-device segment tree with range add and
 * range maximum, so a check costs O((1 + in-degree) log n).
 *
 * Colocation: when the first member of a group is placed, every member's
 * params, output interval and temporary are charged at once (Baechi
 * charged only the first member, which the Celeritas paper, section
 * 6.5.2, blames for m-TOPO's OOM on NMT), and so are the copies its
 * other members will receive: of a producer outside the group placed
 * elsewhere, or not placed yet (a reservation, over [pos(u), pos(member)]
 * like any received copy; if u is then placed on the group's device its
 * own output interval replaces the reservation).  Without the
 * reservation a tied weight broke it: a GPT's embedding group (forward,
 * backward, update) was charged at the embedding, the device filled up,
 * and the update's copy of the head's 154 MB weight gradient then fit
 * nowhere, so m-ETF, m-SCT and HEFT refused a graph m-TOPO places.
 *
 * Placing ops may shrink an earlier charge (a consumer placed on another
 * device ends its producer's interval at pos(u)+1), so a refusal is not
 * final: m-ETF re-checks an op every device refused before declaring it
 * unplaceable.
 *
 * What it is not: a bound.  The simulator's real order differs from the
 * slot order (first-ready-first, or a list schedule whose starts shift
 * with channel contention), and a transfer that waits in a busy channel
 * holds its source longer than one slot.  So every memory-aware placer
 * runs under pmem_place_checked: after placing, it simulates once; when
 * the simulator measures a peak above a device's memory although the
 * estimate said the placement fits, the margin of that device shrinks by
 * the measured overshoot and the placer runs again (a few rounds); if it
 * still runs out of memory, the placer reports OP_EINFEASIBLE (or, with
 * best_effort, returns the placement, which the simulator marks oom).
 * Nor is a refusal final: when the estimate finds no device for an op, the
 * placer puts it on the device with the most room, goes on, and the
 * simulator decides; the placement is refused only if it overflows there
 * too (a GNMT's layer groups, charged whole while most consumers are not
 * placed yet, were refused by m-ETF, m-SCT and HEFT at 45 % of the
 * one-device peak where m-TOPO's placement peaks at 69 %).
 */
#ifndef OPPLACE_PLACER_MEM_H
#define OPPLACE_PLACER_MEM_H

#include <stdint.h>

#include "opplace/placer.h"
#include "opplace/simulate.h"

typedef struct pmem {
    const op_problem *p;
    int n, nd, size;      /* size: leaves per segment tree (power of two) */
    int64_t *cap;         /* per device: memory_bytes x margin */
    int64_t *params;      /* per device: param bytes charged */
    int64_t *mx, *add;    /* nd x 2*size: segment trees over slots */
    int *order;           /* the slot order */
    int *pos;             /* per op: its slot */
    int *out_dev;         /* per op: device its output is charged on, or -1 */
    int *out_end;         /* per op: last slot of its output interval */
    int *recv_end;        /* n x nd: last slot of u's received copy on d, -1 none */
    int64_t *recv_bytes;  /* n x nd: bytes of that copy */
    unsigned char *group_charged;
} pmem;

/* order: the slot order (a topological order of every op), or NULL for
 * the graph's Kahn order; margin: per device, NULL for 1. */
op_status pmem_init(pmem *m, const op_problem *p, const int *order, const double *margin,
                    op_error *err);
void pmem_destroy(pmem *m);
void pmem_reset(pmem *m);

/* Bytes placing op on dev would add, summed (params, output, temp, new
 * received bytes; a group's whole footprint for its first member): the
 * share m-TOPO balances.  device_of[u] < 0 marks ops not placed yet. */
int64_t pmem_need(const pmem *m, int op, int dev, const int *device_of);
/* Would the device's peak stay within cap with op placed there? */
int pmem_fits(pmem *m, int op, int dev, const int *device_of);
/* Charge op to dev; call before setting device_of[op] (or with it set to
 * dev).  Predecessors must be charged already. */
void pmem_commit(pmem *m, int op, int dev, const int *device_of);

/* Estimated peak of dev (params + maximum level) and room left. */
int64_t pmem_peak(const pmem *m, int dev);
static inline int64_t pmem_room(const pmem *m, int dev)
{
    return m->cap[dev] - pmem_peak(m, dev);
}

/* Charge a complete placement in slot order; returns 1 if every device
 * fits. */
int pmem_charge_all(pmem *m, const int *device_of);

/* The device with the most room among those op may use (allowed mask per
 * device, or NULL for all eligible), or -1. */
int pmem_roomiest(const pmem *m, int op, const unsigned char *allowed);

/* Move ops off devices whose estimate exceeds cap: each round, on every
 * such device, the ops holding the most bytes at its peak slot (params,
 * plus the output when it is live there) go to the allowed device with
 * the most room, whole colocation groups at a time; pinned and ineligible
 * moves are never made.  Returns 1 when the placement fits. */
int pmem_repair(pmem *m, int *device_of, int max_rounds, op_error *err);

/* One placement attempt under per-device margins; sets *fits to 0 when it
 * had to place beyond the estimate (and may say why in err, returning
 * OP_OK: the checked run below clears it if the simulator finds room). */
typedef op_status (*pmem_place_fn)(const op_place_ctx *ctx, void *arg, const double *margin,
                                   op_placement *out, int *fits, op_error *err);

/* Run fn, simulate, and shrink the margins of devices the simulator finds
 * out of memory until it does not (see the top comment). */
op_status pmem_place_checked(const op_place_ctx *ctx, const char *name, pmem_place_fn fn,
                             void *arg, op_placement *out, op_error *err);
/* The same with the caller's simulator `with` and result `res` (the
 * cutoff is cleared): *simulated is 1 when res holds the simulation of the
 * returned placement (it fit the estimate), 0 when none was run on it. */
op_status pmem_place_checked_sim(const op_place_ctx *ctx, const char *name, pmem_place_fn fn,
                                 void *arg, op_placement *out, op_sim *with, op_sim_result *res,
                                 int *simulated, op_error *err);

#endif
