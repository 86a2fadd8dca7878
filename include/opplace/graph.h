/*
 * opplace/graph.h - the dataflow graph every stage of opplace shares.
 *
 * A graph is built once (from JSON, a zoo generator, an importer or a
 * coarsener) through op_graph_builder and then frozen by op_graph_finish,
 * which validates it (unique names, known endpoints, no cycle, consistent
 * colocation/kind/device pins) and lays it out as compact arrays:
 *
 *   ops      0..n_ops-1 in input-file order (the simulator's tie-breaker)
 *   edges    0..n_edges-1, duplicates merged (max bytes), sorted by (src,dst)
 *   succ/pred CSR adjacency with the edge id beside each neighbour
 *   topo     one topological order (Kahn, smallest index first)
 *
 * Example:
 *     op_graph_builder *b = op_graph_builder_new("tiny", &err);
 *     int a = op_graph_add_op(b, &(op_op_spec){.name = "a", .time_us = 10,
 *                                              .output_bytes = 1024}, &err);
 *     int c = op_graph_add_op(b, &(op_op_spec){.name = "c", .time_us = 5}, &err);
 *     op_graph_add_edge(b, a, c, -1, &err);   // -1: bytes = a's output_bytes
 *     op_graph *g = op_graph_finish(b, &err); // consumes b
 *     ...
 *     op_graph_free(g);
 *
 * Compute times are per device kind: an op either has one time for every
 * kind (time_kind == OP_ANY_KIND) or a list of (kind, time) pairs and may run
 * only on those kinds (formats.md section 1).
 */
#ifndef OPPLACE_GRAPH_H
#define OPPLACE_GRAPH_H

#include <stdint.h>

#include "opplace/error.h"

#define OP_ANY_KIND (-1)
#define OP_NONE (-1)

typedef struct op_kind_time {
    const char *kind; /* device kind name, e.g. "gpu" */
    double time_us;
} op_kind_time;

/* Everything known about one op when it is added.  Strings are copied. */
typedef struct op_op_spec {
    const char *name;             /* required, unique */
    const char *type;             /* NULL: "Op" */
    double time_us;               /* used when n_kind_times == 0 */
    const op_kind_time *kind_times; /* per-kind times; the op runs only on these kinds */
    int n_kind_times;
    int64_t output_bytes, param_bytes, temp_bytes;
    const char *layer;            /* NULL: none */
    const char *colocate;         /* NULL: none */
    const char *kind;             /* NULL: any kind */
    const char *device;           /* NULL: not pinned */
} op_op_spec;

typedef struct op_graph {
    char *name;
    int64_t batch_size; /* -1 when the file gives none */
    int n_ops, n_edges;

    /* per op */
    char **op_name, **op_type;
    int64_t *output_bytes, *param_bytes, *temp_bytes;
    int *layer;    /* index into layer_name, or OP_NONE */
    int *colocate; /* index into group_name, or OP_NONE */
    int *kind;     /* required device kind (index into kind_name) or OP_NONE */
    char **device; /* pinned device name or NULL */
    /* per-op compute times, CSR: entries time_off[i] .. time_off[i+1]-1;
     * time_kind[e] is a kind index or OP_ANY_KIND (then it is the only entry) */
    int *time_off, *time_kind;
    double *time_val;

    /* per edge */
    int *edge_src, *edge_dst;
    int64_t *edge_bytes;

    /* adjacency (CSR); succ_edge/pred_edge give the edge id of each entry */
    int *succ_off, *succ, *succ_edge;
    int *pred_off, *pred, *pred_edge;
    int *topo;     /* topological order */
    int *topo_pos; /* position of each op in topo */

    /* interned names */
    int n_kinds, n_layers, n_groups;
    char **kind_name, **layer_name, **group_name;

    struct op_name_index *index; /* name -> op lookup */
} op_graph;

typedef struct op_graph_builder op_graph_builder;

op_graph_builder *op_graph_builder_new(const char *name, op_error *err);
void op_graph_builder_set_batch_size(op_graph_builder *b, int64_t batch_size);
/* Returns the new op's index, or -1 on error (duplicate name, bad number). */
int op_graph_add_op(op_graph_builder *b, const op_op_spec *spec, op_error *err);
/* bytes < 0: use the source op's output_bytes. */
op_status op_graph_add_edge(op_graph_builder *b, int src, int dst, int64_t bytes, op_error *err);
/* Validate and freeze; always consumes b.  NULL on error. */
op_graph *op_graph_finish(op_graph_builder *b, op_error *err);
void op_graph_builder_free(op_graph_builder *b);

void op_graph_free(op_graph *g);

/* Index of the op with this name, or -1. */
int op_graph_find(const op_graph *g, const char *name);
/* Index of a device kind name in the graph's kind table, or -1. */
int op_graph_find_kind(const op_graph *g, const char *kind);
/* Compute time of op on a device of this kind at speed 1, or a negative
 * number when the op cannot run on that kind. */
double op_graph_time_on_kind(const op_graph *g, int op, const char *kind);
/* Edge id of src->dst, or -1. */
int op_graph_find_edge(const op_graph *g, int src, int dst);

#endif
