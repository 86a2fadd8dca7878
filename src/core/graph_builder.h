/* graph_builder.h - the builder's private layout, shared by graph_build.c
 * (adding ops and edges) and graph_finish.c (validation and freezing). */
#ifndef OPPLACE_GRAPH_BUILDER_H
#define OPPLACE_GRAPH_BUILDER_H

#include "core/strtab.h"
#include "opplace/graph.h"

struct op_graph_builder {
    char *name, *origin;
    int64_t batch_size;
    int n_ops;
    size_t cap_ops;
    char **op_name, **op_type, **device;
    int64_t *output_bytes, *param_bytes, *temp_bytes;
    int *layer, *colocate, *kind;
    int *time_off; /* n_ops + 1 entries once finished; grows with ops */
    size_t cap_time_off;
    int n_times;
    size_t cap_times;
    int *time_kind;
    double *time_val;
    int n_edges;
    size_t cap_edges;
    int *edge_src, *edge_dst;
    int64_t *edge_bytes;
    op_name_index names;
    op_strtab kinds, layers, groups;
};

/* For the readers and generators of the library, which build graphs from
 * named ops. */
/* Set the text prefixed to validation errors (e.g. the file name). */
void op_graph_builder_set_origin(op_graph_builder *b, const char *origin);
/* Index of an op already added, or -1. */
int op_graph_builder_find(const op_graph_builder *b, const char *name);

#endif
