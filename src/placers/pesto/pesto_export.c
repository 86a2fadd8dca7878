/*
 * pesto_export.c - the files the TF-Pesto runtime reads (paper section 4:
 * tf.Node.set_assigned_device per op, tf.Node.add_control_dependency per
 * scheduling constraint).
 *
 *   DIR/part.json  [{"op": "device"}, ...]     one one-key object per op,
 *                                              in the graph's op order
 *   DIR/cdep.json  [{"op": ["pred", ...]}, ...] per op, the ops that must run
 *                                              before it on its device
 *
 * Choice for cdep: only the op's immediate predecessor in its device's
 * order (an empty list for the first op of a device).  Those control edges
 * chain each device's ops in the schedule's order, which is all the runtime
 * needs: the data dependencies are already edges of the TensorFlow graph
 * and TensorFlow enforces them itself, and listing them again (or the whole
 * transitive chain) would only grow the file.  Without an order, every
 * list is empty (placement only).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/file_util.h"
#include "placers/pesto/pesto_export.h"

static op_status write_part(const op_graph *g, const op_cluster *c, const op_placement *pl,
                            const char *path, op_error *err)
{
    op_atomic a;
    op_status st = op_atomic_open(&a, path, err);
    if (st)
        return st;
    fputs("[\n", a.f);
    for (int i = 0; i < g->n_ops; i++) {
        fputs("  {", a.f);
        op_json_put_string(a.f, g->op_name[i]);
        fputs(": ", a.f);
        op_json_put_string(a.f, c->dev[pl->device_of[i]].name);
        fputs(i + 1 < g->n_ops ? "},\n" : "}\n", a.f);
    }
    fputs("]\n", a.f);
    return op_atomic_commit(&a, err);
}

static op_status write_cdep(const op_graph *g, const op_placement *pl, const char *path,
                            op_error *err)
{
    int *prev = op_malloc((size_t)g->n_ops * sizeof *prev + 1, err);
    if (!prev)
        return OP_ENOMEM;
    for (int i = 0; i < g->n_ops; i++)
        prev[i] = -1;
    if (pl->has_order)
        for (int d = 0; d < pl->n_dev; d++)
            for (int k = pl->order_off[d] + 1; k < pl->order_off[d + 1]; k++)
                prev[pl->order[k]] = pl->order[k - 1];
    op_atomic a;
    op_status st = op_atomic_open(&a, path, err);
    if (st) {
        free(prev);
        return st;
    }
    fputs("[\n", a.f);
    for (int i = 0; i < g->n_ops; i++) {
        fputs("  {", a.f);
        op_json_put_string(a.f, g->op_name[i]);
        fputs(": [", a.f);
        if (prev[i] >= 0)
            op_json_put_string(a.f, g->op_name[prev[i]]);
        fputs(i + 1 < g->n_ops ? "]},\n" : "]}\n", a.f);
    }
    fputs("]\n", a.f);
    free(prev);
    return op_atomic_commit(&a, err);
}

op_status pesto_export_tf(const op_graph *g, const op_cluster *c, const op_placement *pl,
                          const char *dir, op_error *err)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return op_fail(err, OP_EIO, "%s: cannot create directory: %s", dir, strerror(errno));
    size_t len = strlen(dir) + 16;
    char *path = op_malloc(len, err);
    if (!path)
        return OP_ENOMEM;
    snprintf(path, len, "%s/part.json", dir);
    op_status st = write_part(g, c, pl, path, err);
    if (!st) {
        snprintf(path, len, "%s/cdep.json", dir);
        st = write_cdep(g, pl, path, err);
    }
    free(path);
    return st;
}
