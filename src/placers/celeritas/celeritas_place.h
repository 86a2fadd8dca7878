/*
 * celeritas_place.h - the placement passes of Celeritas, shared by the
 * placers dfs-topo, order-place and celeritas (src/placers/celeritas/celeritas.c).
 *
 * A pass walks a sequence of ops (DFS-TOPO or CPD-TOPO) once and gives each
 * op a device:
 *   cel_place_sequential  fill one device up to its memory, then the next
 *                         (Celeritas 4.2.1 second step with DFS-TOPO; and
 *                         Order-Place of section 6.2 on the fused graph)
 *   cel_place_adjusting   Adjusting Placement (section 5.2, Algorithm 2)
 *
 * Memory (both passes; the paper's "memory check" of Algorithm 2 and
 * Order-Place's fill): placer_mem.h's liveness estimate, with slots (by
 * default the pass's sequence) as its timeline.  A device takes op v when,
 * with v's charges added (params for the whole step, v's output until its last
 * local or unplaced consumer, received copies until their last local
 * consumer, v's temporary at its slot), its estimated peak stays within
 * memory_bytes x margin[d].  For the fused graph the estimate reads the
 * memory view of cel_mem_view_init: a fused op's output is what its
 * members send out of it, and its temporary is the peak of the members'
 * own intermediate tensors, run in order.  The estimate is not a bound
 * (the simulator's order differs from the slot order), so the placers run
 * under pmem_place_checked, which shrinks the margins when the simulator
 * measures an overflow.  Colocation (section 6.1): the first member of a
 * group decides the device for all of them and charges the whole group at
 * once.  When no allowed device has room, the op goes to the allowed device
 * with the most room left (the paper's best-effort fallback) and n_fallback
 * counts it.
 *
 * Files of src/placers/celeritas/ (Celeritas: placers celeritas,
 * order-place, dfs-topo):
 *   celeritas.c           the three placers and the search over R
 *   celeritas_fusion.c/.h Optimal Operation Fusion (section 5.1)
 *   celeritas_fill.c      memory-bounded sequential placement
 *   celeritas_adjust.c    Adjusting Placement (section 5.2)
 *   celeritas_memory.c    the memory check of the passes
 *   celeritas_pool.c      the few best placements, given orders at the end
 *   celeritas_place.h     this header
 */
#ifndef OPPLACE_CELERITAS_PLACE_H
#define OPPLACE_CELERITAS_PLACE_H

#include <stdint.h>

#include "coarsen/coarsen.h"
#include "opplace/problem.h"
#include "placers/placer_mem.h"

typedef struct cel_pass {
    const op_problem *p; /* the graph being placed (the coarse one for fused placers) */
    const int *seq;      /* every op once, a topological order */
    const op_problem *mem_p; /* the problem whose bytes the memory check reads
                                (a cel_mem_view's), or NULL for p */
    const int *slots;     /* the estimate's timeline (a topological order), or NULL
                             for seq */
    const double *margin; /* per device fraction of memory_bytes usable, or NULL for 1 */
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
    int cheap_cuts;      /* in (sequential): 0, or move each device boundary back to
                            the cheapest cut within the last 1/cheap_cuts of the
                            device's run (celeritas_fill.c) */
} cel_pass;

op_status cel_place_sequential(cel_pass *ps, op_error *err);
op_status cel_place_adjusting(cel_pass *ps, op_error *err);

/* Book-keeping both passes share (celeritas_memory.c). */
typedef struct cel_memory {
    const op_problem *p;  /* the graph being placed (colocation, eligibility) */
    pmem live;            /* the liveness estimate over the pass's sequence */
    int *group_device;    /* per colocation group: device or -1 */
} cel_memory;

op_status cel_memory_init(cel_memory *m, const cel_pass *ps, op_error *err);
void cel_memory_destroy(cel_memory *m);
/* May v go to d (eligibility, colocation)? */
int cel_memory_allowed(const cel_memory *m, int v, int d);
/* Would d's estimated peak stay within its capacity with v placed there?
 * device_of: -1 for ops not placed yet. */
int cel_memory_fits(cel_memory *m, const int *device_of, int v, int d);
/* Record v on d: charge it and fix its group's device. */
void cel_memory_commit(cel_memory *m, const int *device_of, int v, int d);
/* Best-effort choice: the allowed device with the most room left. */
int cel_memory_fallback(const cel_memory *m, int v);

/* The fused graph as the memory check sees it: a shallow copy of the
 * coarse graph and problem whose byte arrays are replaced (the copy shares
 * everything else and must not move once initialised):
 *   output_bytes[V]  summed outputs of V's members with a consumer outside V
 *                    (they live from V's slot to V's last consumer);
 *   temp_bytes[V]    the peak, over V's members run in topological order, of
 *                    the members' tensors alive inside V plus the running
 *                    member's temporary, less output_bytes[V];
 *   param_bytes[V]   summed params (as op_coarse_build);
 *   edge_bytes       edge_bytes (the traffic a cut fused edge causes).
 * Exact on the coarse timeline: V's level at its slot is its members' peak. */
typedef struct cel_mem_view {
    op_graph g;
    op_problem p;
    int64_t *output_bytes, *temp_bytes;
} cel_mem_view;

op_status cel_mem_view_init(cel_mem_view *v, const op_graph *fine, const op_coarse_map *map,
                            const op_problem *coarse, const int64_t *edge_bytes, op_error *err);
void cel_mem_view_destroy(cel_mem_view *v);

/* The cap best placements offered (celeritas_pool.c), best first. */
typedef struct cel_pool {
    int cap, len, n;  /* capacity, entries held, ops per placement */
    int *device_of;   /* (cap + 1) x n: the entries, then a spare row */
    double *overflow, *step_us;
    int *n_fallback;
} cel_pool;

op_status cel_pool_init(cel_pool *pool, int cap, int n, op_error *err);
void cel_pool_destroy(cel_pool *pool);
/* Keep device_of (n ops) when it ranks among the cap best offered so far. */
void cel_pool_offer(cel_pool *pool, const int *device_of, double overflow, double step_us,
                    int n_fallback);
const int *cel_pool_entry(const cel_pool *pool, int k);

#endif
