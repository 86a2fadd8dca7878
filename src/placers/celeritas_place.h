/*
 * celeritas_place.h - the placement passes of Celeritas, shared by the
 * placers dfs-topo, order-place and celeritas (src/placers/celeritas.c).
 *
 * A pass walks a sequence of ops (DFS-TOPO or CPD-TOPO) once and gives each
 * op a device:
 *   cel_place_sequential  fill one device up to its memory, then the next
 *                         (Celeritas 4.2.1 second step with DFS-TOPO; and
 *                         Order-Place of section 6.2 on the fused graph)
 *   cel_place_adjusting   Adjusting Placement (section 5.2, Algorithm 2)
 *
 * Memory accounting (both passes): placing op v on device d charges
 *     mem[v] + the bytes of v's in-edges from ops on other devices
 * against the device's capacity.  mem is param + output + temp bytes (for a
 * coarse op: summed over its original members), and a received tensor is
 * held on the receiver (formats.md 5.5), so the charged total bounds the
 * simulator's peak from above: a pass that never falls back cannot run out
 * of memory.  Colocation (section 6.1): the first member of a group decides
 * the device for all of them and charges the whole group's mem at once.
 * When no allowed device has room, the op goes to the allowed device with the
 * most memory left (the paper's best-effort fallback) and n_fallback counts it.
 */
#ifndef OPPLACE_CELERITAS_PLACE_H
#define OPPLACE_CELERITAS_PLACE_H

#include <stdint.h>

#include "opplace/problem.h"

typedef struct cel_pass {
    const op_problem *p; /* the graph being placed (the coarse one for fused placers) */
    const int *seq;      /* every op once, a topological order */
    const int64_t *mem;  /* per op memory charge */
    const int64_t *edge_bytes; /* per edge bytes a cut edge moves, or NULL for the
                                  graph's own (celeritas.c: the fused graph's
                                  edges carry the summed traffic of their members) */
    int *device_of;      /* out: per op */
    double *start_us;    /* out (adjusting only; may be NULL): planned start times */
    int n_fallback;      /* out: ops placed on a device without room */
    int n_moved;         /* out (adjusting): ops moved off the previous op's device */
    int contention;      /* in (adjusting): plan transfers on FIFO channels (see
                            celeritas_adjust.c); 0 = the paper's contention-free EST */
    double makespan_us;  /* out (adjusting): the planned step time */
} cel_pass;

op_status cel_place_sequential(cel_pass *ps, op_error *err);
op_status cel_place_adjusting(cel_pass *ps, op_error *err);

/* Book-keeping both passes share (celeritas_memory.c). */
typedef struct cel_memory {
    const op_problem *p;
    const int64_t *mem;
    const int64_t *edge_bytes; /* as cel_pass's, never NULL */
    int64_t *avail;       /* per device: capacity minus charges */
    int64_t *group_mem;   /* per colocation group: summed mem of its members */
    int *group_device;    /* per colocation group: device or -1 */
} cel_memory;

op_status cel_memory_init(cel_memory *m, const op_problem *p, const int64_t *mem,
                          const int64_t *edge_bytes, op_error *err);
void cel_memory_destroy(cel_memory *m);
/* Bytes placing v on d would charge, given device_of of earlier ops. */
int64_t cel_memory_charge(const cel_memory *m, const int *device_of, int v, int d);
/* May v go to d (eligibility, colocation)? */
int cel_memory_allowed(const cel_memory *m, int v, int d);
/* Record v on d: charge it and fix its group's device. */
void cel_memory_commit(cel_memory *m, const int *device_of, int v, int d);
/* Best-effort choice: the allowed device with the most memory left. */
int cel_memory_fallback(const cel_memory *m, int v);

#endif
