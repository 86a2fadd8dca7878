/*
 * graph_build.c - accumulating ops and edges before a graph is frozen.
 *
 * Values are checked as they arrive (finite, non-negative, unique names) so
 * the error can name the offending op; whole-graph rules (acyclicity,
 * colocation consistency) are checked in graph_finish.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_hooks.h"
#include "core/graph_builder.h"
#include "opplace/limits.h"

op_graph_builder *op_graph_builder_new(const char *name, op_error *err)
{
    op_graph_builder *b = op_calloc(1, sizeof *b, err);
    if (!b)
        return NULL;
    b->batch_size = -1;
    b->name = op_strdup(name ? name : "graph", err);
    b->origin = op_strdup("graph", err);
    if (!b->name || !b->origin || op_name_index_init(&b->names, 1024, err) ||
        op_strtab_init(&b->kinds, err) || op_strtab_init(&b->layers, err) ||
        op_strtab_init(&b->groups, err)) {
        op_graph_builder_free(b);
        return NULL;
    }
    return b;
}

void op_graph_builder_set_batch_size(op_graph_builder *b, int64_t batch_size)
{
    b->batch_size = batch_size;
}

void op_graph_builder_set_origin(op_graph_builder *b, const char *origin)
{
    char *o = op_strdup(origin, NULL);
    if (o) {
        free(b->origin);
        b->origin = o;
    }
}

int op_graph_builder_find(const op_graph_builder *b, const char *name)
{
    return op_name_index_get(&b->names, name);
}

static op_status grow_ops(op_graph_builder *b, op_error *err)
{
    size_t need = (size_t)b->n_ops + 1;
    if (need <= b->cap_ops)
        return OP_OK;
    size_t cap = b->cap_ops ? b->cap_ops * 2 : 256;
#define GROW(field)                                                        \
    do {                                                                   \
        void *q = op_realloc(b->field, cap * sizeof *b->field, err);       \
        if (!q)                                                            \
            return OP_ENOMEM;                                              \
        b->field = q;                                                      \
    } while (0)
    GROW(op_name); GROW(op_type); GROW(device);
    GROW(output_bytes); GROW(param_bytes); GROW(temp_bytes);
    GROW(layer); GROW(colocate); GROW(kind);
#undef GROW
    b->cap_ops = cap;
    return op_reserve((void **)&b->time_off, sizeof *b->time_off, &b->cap_time_off, cap + 1, err);
}

static op_status add_time(op_graph_builder *b, int kind, double t, op_error *err)
{
    size_t old_cap = b->cap_times;
    if (op_reserve((void **)&b->time_kind, sizeof *b->time_kind, &b->cap_times,
                   (size_t)b->n_times + 1, err))
        return OP_ENOMEM;
    if (b->cap_times != old_cap) { /* time_val shares time_kind's capacity */
        void *q = op_realloc(b->time_val, b->cap_times * sizeof *b->time_val, err);
        if (!q)
            return OP_ENOMEM;
        b->time_val = q;
    }
    b->time_kind[b->n_times] = kind;
    b->time_val[b->n_times] = t;
    b->n_times++;
    return OP_OK;
}

static int valid_bytes(int64_t b)
{
    return b >= 0 && b <= OP_MAX_BYTES;
}

static op_status check_spec(const op_graph_builder *b, const op_op_spec *s, op_error *err)
{
    if (!s->name || !s->name[0])
        return op_fail(err, OP_EINPUT, "%s: an op has no name", b->origin);
    if (s->n_kind_times == 0 && !op_valid_time(s->time_us))
        return op_fail(err, OP_EINPUT, "%s: op '%s': time_us must be a number from 0 to %g",
                       b->origin, s->name, OP_MAX_TIME_US);
    for (int i = 0; i < s->n_kind_times; i++)
        if (!op_valid_time(s->kind_times[i].time_us) || !s->kind_times[i].kind ||
            !s->kind_times[i].kind[0])
            return op_fail(err, OP_EINPUT,
                           "%s: op '%s': time_us.%s must be a number from 0 to %g for a "
                           "non-empty kind", b->origin, s->name,
                           s->kind_times[i].kind ? s->kind_times[i].kind : "?", OP_MAX_TIME_US);
    if (!valid_bytes(s->output_bytes) || !valid_bytes(s->param_bytes) ||
        !valid_bytes(s->temp_bytes))
        return op_fail(err, OP_EINPUT, "%s: op '%s': byte counts must be from 0 to 2^50",
                       b->origin, s->name);
    if ((s->kind && !s->kind[0]) || (s->colocate && !s->colocate[0]) ||
        (s->device && !s->device[0]))
        return op_fail(err, OP_EINPUT, "%s: op '%s': kind, colocate and device must not be "
                       "empty strings", b->origin, s->name);
    return OP_OK;
}

static int intern_or_none(op_strtab *t, const char *s, op_error *err)
{
    return s ? op_strtab_intern(t, s, err) : OP_NONE;
}

int op_graph_add_op(op_graph_builder *b, const op_op_spec *s, op_error *err)
{
    if (check_spec(b, s, err) || grow_ops(b, err))
        return -1;
    if (op_name_index_get(&b->names, s->name) >= 0) {
        op_fail(err, OP_EINPUT, "%s: duplicate op name '%s'", b->origin, s->name);
        return -1;
    }
    int i = b->n_ops, n_times = b->n_times; /* restored on failure: time_off[i] may be unset */
    b->op_name[i] = op_strdup(s->name, err);
    b->op_type[i] = op_strdup(s->type ? s->type : "Op", err);
    b->device[i] = s->device ? op_strdup(s->device, err) : NULL;
    if (!b->op_name[i] || !b->op_type[i] || (s->device && !b->device[i]))
        goto oom;
    b->output_bytes[i] = s->output_bytes;
    b->param_bytes[i] = s->param_bytes;
    b->temp_bytes[i] = s->temp_bytes;
    b->layer[i] = intern_or_none(&b->layers, s->layer, err);
    b->colocate[i] = intern_or_none(&b->groups, s->colocate, err);
    b->kind[i] = intern_or_none(&b->kinds, s->kind, err);
    if ((s->layer && b->layer[i] < 0) || (s->colocate && b->colocate[i] < 0) ||
        (s->kind && b->kind[i] < 0))
        goto oom;
    b->time_off[i] = b->n_times;
    if (s->n_kind_times == 0) {
        if (add_time(b, OP_ANY_KIND, s->time_us, err))
            goto oom;
    }
    for (int k = 0; k < s->n_kind_times; k++) {
        int kid = op_strtab_intern(&b->kinds, s->kind_times[k].kind, err);
        if (kid < 0 || add_time(b, kid, s->kind_times[k].time_us, err))
            goto oom;
    }
    b->time_off[i + 1] = b->n_times;
    if (op_name_index_put(&b->names, b->op_name[i], i, err) == -2)
        goto oom;
    b->n_ops++;
    return i;
oom:
    free(b->op_name[i]);
    free(b->op_type[i]);
    free(b->device[i]);
    b->n_times = n_times;
    return -1;
}

op_status op_graph_add_edge(op_graph_builder *b, int src, int dst, int64_t bytes, op_error *err)
{
    if (src < 0 || src >= b->n_ops || dst < 0 || dst >= b->n_ops)
        return op_fail(err, OP_EINPUT, "%s: edge refers to an unknown op", b->origin);
    if (bytes > OP_MAX_BYTES)
        return op_fail(err, OP_EINPUT, "%s: edge from '%s': bytes above 2^50", b->origin,
                       b->op_name[src]);
    size_t need = (size_t)b->n_edges + 1;
    if (need > b->cap_edges) {
        size_t cap = b->cap_edges ? b->cap_edges * 2 : 256;
        void *p1 = op_realloc(b->edge_src, cap * sizeof *b->edge_src, err);
        if (!p1)
            return OP_ENOMEM;
        b->edge_src = p1;
        void *p2 = op_realloc(b->edge_dst, cap * sizeof *b->edge_dst, err);
        if (!p2)
            return OP_ENOMEM;
        b->edge_dst = p2;
        void *p3 = op_realloc(b->edge_bytes, cap * sizeof *b->edge_bytes, err);
        if (!p3)
            return OP_ENOMEM;
        b->edge_bytes = p3;
        b->cap_edges = cap;
    }
    b->edge_src[b->n_edges] = src;
    b->edge_dst[b->n_edges] = dst;
    b->edge_bytes[b->n_edges] = bytes < 0 ? b->output_bytes[src] : bytes;
    b->n_edges++;
    return OP_OK;
}

void op_graph_builder_free(op_graph_builder *b)
{
    if (!b)
        return;
    for (int i = 0; i < b->n_ops; i++) {
        free(b->op_name[i]);
        free(b->op_type[i]);
        free(b->device[i]);
    }
    free(b->op_name); free(b->op_type); free(b->device);
    free(b->output_bytes); free(b->param_bytes); free(b->temp_bytes);
    free(b->layer); free(b->colocate); free(b->kind);
    free(b->time_off); free(b->time_kind); free(b->time_val);
    free(b->edge_src); free(b->edge_dst); free(b->edge_bytes);
    op_name_index_destroy(&b->names);
    op_strtab_destroy(&b->kinds);
    op_strtab_destroy(&b->layers);
    op_strtab_destroy(&b->groups);
    free(b->name);
    free(b->origin);
    free(b);
}
