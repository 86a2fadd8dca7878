/*
 * graph_read.c - reading an opplace-graph file (formats.md section 1).
 *
 * Every rule of the contract is checked here or in op_graph_finish, and
 * each error names the file, the line and the key, e.g.
 *   model.json:14: ops[3].time_us: must be a finite non-negative number
 */
#include <string.h>

#include "core/graph_builder.h"
#include "io/json_in.h"
#include "opplace/io.h"

#define MAX_KINDS_PER_OP 16

/* time_us: a number for every kind, or {"gpu": 12.0, "cpu": 300.0}. */
static op_status read_time(const json_doc *d, json_t *op, const json_step *at, op_op_spec *s,
                           op_kind_time *kt)
{
    json_step path[3] = {at[0], at[1], {"time_us", 0}};
    json_t *v = json_object_get(op, "time_us");
    if (!v || json_is_null(v))
        return json_fail(d, path, 3, "required key is missing");
    if (json_is_number(v))
        return json_check_time(d, path, 3, v, &s->time_us);
    if (!json_is_object(v))
        return json_fail(d, path, 3, "must be a number or an object like {\"gpu\": 12.0}");
    if (json_object_size(v) == 0)
        return json_fail(d, path, 3, "names no device kind");
    if (json_object_size(v) > MAX_KINDS_PER_OP)
        return json_fail(d, path, 3, "names more than %d device kinds", MAX_KINDS_PER_OP);
    const char *kind;
    json_t *t;
    int n = 0;
    json_object_foreach(v, kind, t) {
        json_step kpath[4] = {at[0], at[1], {"time_us", 0}, {kind, 0}};
        double x = -1;
        if (!kind[0])
            return json_fail(d, kpath, 4, "a device kind must not be empty");
        op_status st = json_check_time(d, kpath, 4, t, &x);
        if (st)
            return st;
        kt[n++] = (op_kind_time){kind, x};
    }
    s->kind_times = kt;
    s->n_kind_times = n;
    return OP_OK;
}

static op_status read_op(const json_doc *d, json_t *op, long i, op_graph_builder *b)
{
    json_step at[2] = {{"ops", 0}, {NULL, i}};
    if (!json_is_object(op))
        return json_fail(d, at, 2, "each op must be an object");
    op_op_spec s = {0};
    op_kind_time kt[MAX_KINDS_PER_OP];
    op_status st;
    if ((st = json_get_string(d, op, at, 2, "name", 1, &s.name)) ||
        (st = json_get_string(d, op, at, 2, "type", 0, &s.type)) ||
        (st = read_time(d, op, at, &s, kt)) ||
        (st = json_get_bytes(d, op, at, 2, "output_bytes", 0, &s.output_bytes)) ||
        (st = json_get_bytes(d, op, at, 2, "param_bytes", 0, &s.param_bytes)) ||
        (st = json_get_bytes(d, op, at, 2, "temp_bytes", 0, &s.temp_bytes)) ||
        (st = json_get_string(d, op, at, 2, "layer", 0, &s.layer)) ||
        (st = json_get_string(d, op, at, 2, "colocate", 0, &s.colocate)) ||
        (st = json_get_string(d, op, at, 2, "kind", 0, &s.kind)) ||
        (st = json_get_string(d, op, at, 2, "device", 0, &s.device)))
        return st;
    /* names are never empty: an empty kind would name a kind no device has */
    const char *named[4] = {s.name, s.kind, s.colocate, s.device};
    const char *keys[4] = {"name", "kind", "colocate", "device"};
    for (int k = 0; k < 4; k++)
        if (named[k] && !named[k][0]) {
            json_step np[3] = {at[0], at[1], {keys[k], 0}};
            return json_fail(d, np, 3, "must not be empty (leave the key out instead)");
        }
    if (op_graph_builder_find(b, s.name) >= 0) {
        json_step np[3] = {at[0], at[1], {"name", 0}};
        return json_fail(d, np, 3, "duplicate op name '%s'", s.name);
    }
    op_error local = {0};
    if (op_graph_add_op(b, &s, &local) < 0)
        return local.code == OP_ENOMEM ? op_fail(d->err, OP_ENOMEM, "%s", local.msg)
                                       : json_fail(d, at, 2, "%s", local.msg);
    return OP_OK;
}

static op_status read_edge(const json_doc *d, json_t *e, long i, op_graph_builder *b)
{
    json_step at[2] = {{"edges", 0}, {NULL, i}};
    if (!json_is_object(e))
        return json_fail(d, at, 2, "each edge must be an object");
    const char *src = NULL, *dst = NULL;
    int64_t bytes = -1;
    op_status st;
    if ((st = json_get_string(d, e, at, 2, "src", 1, &src)) ||
        (st = json_get_string(d, e, at, 2, "dst", 1, &dst)) ||
        (st = json_get_bytes(d, e, at, 2, "bytes", 0, &bytes)))
        return st;
    int s = op_graph_builder_find(b, src), t = op_graph_builder_find(b, dst);
    if (s < 0 || t < 0) {
        json_step kp[3] = {at[0], at[1], {s < 0 ? "src" : "dst", 0}};
        return json_fail(d, kp, 3, "unknown op '%s'", s < 0 ? src : dst);
    }
    return op_graph_add_edge(b, s, t, bytes, d->err);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static op_status read_batch(const json_doc *d, op_graph_builder *b)
{
    json_step at[1] = {{"batch_size", 0}};
    json_t *v = json_object_get(d->root, "batch_size");
    if (!v || json_is_null(v))
        return OP_OK;
    if (!json_is_integer(v) || json_integer_value(v) <= 0)
        return json_fail(d, at, 1, "must be a positive whole number");
    op_graph_builder_set_batch_size(b, json_integer_value(v));
    return OP_OK;
}

op_graph *op_graph_read(const char *path, op_error *err)
{
    json_doc d;
    op_graph_builder *b = NULL;
    json_t *ops, *edges;
    const char *name = NULL;
    if (json_doc_load(&d, path, err) || json_check_header(&d, "opplace-graph") ||
        json_get_string(&d, d.root, NULL, 0, "name", 0, &name) ||
        json_get_array(&d, "ops", 1, &ops) || json_get_array(&d, "edges", 0, &edges))
        goto fail;
    b = op_graph_builder_new(name ? name : base_name(path), err);
    if (!b || read_batch(&d, b))
        goto fail;
    op_graph_builder_set_origin(b, path);
    size_t i;
    json_t *v;
    json_array_foreach(ops, i, v) {
        if (read_op(&d, v, (long)i, b))
            goto fail;
    }
    if (edges) {
        json_array_foreach(edges, i, v) {
            if (read_edge(&d, v, (long)i, b))
                goto fail;
        }
    }
    json_doc_destroy(&d);
    return op_graph_finish(b, err);
fail:
    op_graph_builder_free(b);
    json_doc_destroy(&d);
    return NULL;
}
