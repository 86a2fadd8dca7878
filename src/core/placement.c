/* placement.c - the op -> device map and optional per-device order. */
#include <stdlib.h>
#include <string.h>

#include "core/strtab.h"
#include "opplace/placement.h"

op_status op_placement_init(op_placement *p, int n_ops, int n_dev, op_error *err)
{
    memset(p, 0, sizeof *p);
    p->n_ops = n_ops;
    p->n_dev = n_dev;
    p->device_of = op_calloc((size_t)n_ops, sizeof *p->device_of, err);
    return p->device_of ? OP_OK : OP_ENOMEM;
}

void op_placement_drop_order(op_placement *p)
{
    free(p->order_off);
    free(p->order);
    p->order_off = p->order = NULL;
    p->has_order = 0;
}

void op_placement_destroy(op_placement *p)
{
    free(p->device_of);
    free(p->algorithm);
    op_placement_drop_order(p);
    memset(p, 0, sizeof *p);
}

op_status op_placement_alloc_order(op_placement *p, op_error *err)
{
    op_placement_drop_order(p);
    p->order_off = op_calloc((size_t)p->n_dev + 1, sizeof *p->order_off, err);
    p->order = op_calloc((size_t)p->n_ops, sizeof *p->order, err);
    if (!p->order_off || !p->order) {
        op_placement_drop_order(p);
        return OP_ENOMEM;
    }
    p->has_order = 1;
    return OP_OK;
}

op_status op_placement_set_order_from_sequence(op_placement *p, const int *seq, op_error *err)
{
    if (op_placement_alloc_order(p, err))
        return OP_ENOMEM;
    for (int i = 0; i < p->n_ops; i++)
        p->order_off[p->device_of[i] + 1]++;
    for (int d = 0; d < p->n_dev; d++)
        p->order_off[d + 1] += p->order_off[d];
    int *fill = op_malloc((size_t)p->n_dev * sizeof *fill, err);
    if (!fill)
        return OP_ENOMEM;
    memcpy(fill, p->order_off, (size_t)p->n_dev * sizeof *fill);
    for (int k = 0; k < p->n_ops; k++)
        p->order[fill[p->device_of[seq[k]]]++] = seq[k];
    free(fill);
    return OP_OK;
}

op_status op_placement_copy(op_placement *dst, const op_placement *src, op_error *err)
{
    if (op_placement_init(dst, src->n_ops, src->n_dev, err))
        return OP_ENOMEM;
    memcpy(dst->device_of, src->device_of, (size_t)src->n_ops * sizeof *dst->device_of);
    if (src->algorithm && op_placement_set_algorithm(dst, src->algorithm, err))
        goto fail;
    if (src->has_order) {
        if (op_placement_alloc_order(dst, err))
            goto fail;
        memcpy(dst->order_off, src->order_off, ((size_t)src->n_dev + 1) * sizeof(int));
        memcpy(dst->order, src->order, (size_t)src->n_ops * sizeof(int));
    }
    return OP_OK;
fail:
    op_placement_destroy(dst);
    return OP_ENOMEM;
}

op_status op_placement_set_algorithm(op_placement *p, const char *name, op_error *err)
{
    char *copy = op_strdup(name, err);
    if (!copy)
        return OP_ENOMEM;
    free(p->algorithm);
    p->algorithm = copy;
    return OP_OK;
}
