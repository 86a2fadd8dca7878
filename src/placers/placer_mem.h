/*
 * placer_mem.h - the static memory estimate the memory-aware baselines use
 * while they place (m-TOPO, m-ETF, m-SCT, HEFT, METIS repair, expert).
 *
 * The estimate is conservative: a device is charged, for the whole step,
 *   - param_bytes + output_bytes of every op placed on it,
 *   - one received copy of each remote tensor its ops consume (the largest
 *     edge from that producer to the device, as the simulator sends it),
 *   - the largest temp_bytes of its ops (only one op runs at a time).
 * The simulator frees outputs after their last consumer (formats.md 5.5),
 * so its peak is never above this estimate: a placement that fits here
 * never runs out of memory in simulation, whatever the schedule.  The
 * price is pessimism on graphs whose activations are short-lived.
 *
 * Colocation: when the first member of a group is placed, the whole group's
 * params, outputs and largest temporary are charged at once (Baechi charged
 * only the first member, which the Celeritas paper, section 6.5.2, blames
 * for m-TOPO's OOM on NMT).
 *
 * The charge of placing op v on device d only grows as other ops are
 * placed (used[d] + need(v, d) is non-decreasing), so a device refused once
 * stays refused: list schedulers may drop such candidates for good.
 *
 * Ops must be placed in a topological order (every predecessor first); the
 * received-tensor charge is taken when the consumer is placed.
 */
#ifndef OPPLACE_PLACER_MEM_H
#define OPPLACE_PLACER_MEM_H

#include <stdint.h>

#include "opplace/problem.h"

typedef struct pmem {
    const op_problem *p;
    int64_t *cap;         /* per device: memory_bytes */
    int64_t *used;        /* per device: bytes charged so far */
    int64_t *max_temp;    /* per device: largest temp_bytes charged */
    int64_t *recv;        /* n x nd: bytes of op u's tensor charged on device d */
    int64_t *group_static; /* per group: sum of params + outputs */
    int64_t *group_temp;   /* per group: largest temp_bytes */
    unsigned char *group_charged;
} pmem;

op_status pmem_init(pmem *m, const op_problem *p, op_error *err);
void pmem_destroy(pmem *m);
void pmem_reset(pmem *m);

/* Extra bytes charged to dev if op went there now; device_of[u] < 0 marks
 * ops not placed yet. */
int64_t pmem_need(const pmem *m, int op, int dev, const int *device_of);
static inline int pmem_fits(const pmem *m, int op, int dev, const int *device_of)
{
    return m->used[dev] + pmem_need(m, op, dev, device_of) <= m->cap[dev];
}
/* Charge op to dev (call before or after setting device_of[op]). */
void pmem_commit(pmem *m, int op, int dev, const int *device_of);

/* Charge a complete placement in topological order; returns 1 if every
 * device fits.  used[] then holds the per-device estimate. */
int pmem_charge_all(pmem *m, const int *device_of);

/* The device with the most free bytes among those op may use (allowed
 * mask per device, or NULL for all eligible), or -1. */
int pmem_roomiest(const pmem *m, int op, const unsigned char *allowed);

#endif
