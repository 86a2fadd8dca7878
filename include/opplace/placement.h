/*
 * opplace/placement.h - where each op runs and, optionally, in what order.
 *
 * device_of[op] is a device index of the cluster the placement was made for.
 * When has_order is set, device d runs exactly ops order[order_off[d] ..
 * order_off[d+1]-1] in that sequence (a joint placement and schedule, as
 * Pesto produces); otherwise each device runs its ready ops first-ready
 * first (formats.md section 5).
 */
#ifndef OPPLACE_PLACEMENT_H
#define OPPLACE_PLACEMENT_H

#include <stdint.h>

#include "opplace/error.h"

typedef struct op_placement {
    int n_ops, n_dev;
    int *device_of;
    int has_order;
    int *order_off; /* n_dev + 1 */
    int *order;     /* n_ops */
    char *algorithm; /* name of the placer that produced it, or NULL */
} op_placement;

op_status op_placement_init(op_placement *p, int n_ops, int n_dev, op_error *err);
void op_placement_destroy(op_placement *p);
op_status op_placement_copy(op_placement *dst, const op_placement *src, op_error *err);
/* Allocate order arrays (zeroed) so a scheduler can fill them. */
op_status op_placement_alloc_order(op_placement *p, op_error *err);
/* Derive the per-device order from a global op sequence (ops appear in seq
 * order on their device).  seq must list every op once. */
op_status op_placement_set_order_from_sequence(op_placement *p, const int *seq, op_error *err);
void op_placement_drop_order(op_placement *p);
op_status op_placement_set_algorithm(op_placement *p, const char *name, op_error *err);

#endif
