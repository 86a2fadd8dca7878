/* placement_io.c - reading and writing opplace-placement files (formats.md section 3). */
#include <stdlib.h>
#include <string.h>

#include "core/file_util.h"
#include "core/strtab.h"
#include "io/json_in.h"
#include "opplace/io.h"

static op_status read_device_of(const json_doc *d, const op_graph *g, const op_cluster *c,
                                op_placement *out)
{
    json_step at[1] = {{"device_of", 0}};
    json_t *m = json_object_get(d->root, "device_of");
    if (!m || json_is_null(m))
        return json_fail(d, at, 1, "required key is missing");
    if (!json_is_object(m))
        return json_fail(d, at, 1, "must be an object mapping op names to device names");
    for (int i = 0; i < g->n_ops; i++)
        out->device_of[i] = -1;
    const char *name;
    json_t *v;
    json_object_foreach(m, name, v) {
        json_step kp[2] = {{"device_of", 0}, {name, 0}};
        int op = op_graph_find(g, name);
        if (op < 0)
            return json_fail(d, kp, 2, "unknown op '%s' (not in the graph)", name);
        if (!json_is_string(v))
            return json_fail(d, kp, 2, "must be a device name (a string)");
        int dev = op_cluster_find(c, json_string_value(v));
        if (dev < 0)
            return json_fail(d, kp, 2, "unknown device '%s' (not in the cluster)",
                             json_string_value(v));
        out->device_of[op] = dev;
    }
    for (int i = 0; i < g->n_ops; i++)
        if (out->device_of[i] < 0)
            return json_fail(d, at, 1, "has no device for op '%s'; it must cover every op",
                             g->op_name[i]);
    return OP_OK;
}

static op_status read_order(const json_doc *d, const op_graph *g, const op_cluster *c,
                            op_placement *out)
{
    json_step at[1] = {{"order", 0}};
    json_t *o = json_object_get(d->root, "order");
    if (!o || json_is_null(o))
        return OP_OK;
    if (!json_is_object(o))
        return json_fail(d, at, 1, "must be an object mapping device names to op lists");
    if (op_placement_alloc_order(out, d->err))
        return OP_ENOMEM;
    const char *dev_name;
    json_t *list;
    json_object_foreach(o, dev_name, list) {
        json_step kp[2] = {{"order", 0}, {dev_name, 0}};
        int dev = op_cluster_find(c, dev_name);
        if (dev < 0)
            return json_fail(d, kp, 2, "unknown device '%s'", dev_name);
        if (!json_is_array(list))
            return json_fail(d, kp, 2, "must be an array of op names");
        out->order_off[dev + 1] = (int)json_array_size(list);
    }
    long total = 0;
    for (int k = 0; k < c->n_dev; k++) {
        total += out->order_off[k + 1];
        out->order_off[k + 1] = (int)total;
    }
    if (total != g->n_ops)
        return json_fail(d, at, 1, "lists %ld ops but the graph has %d; each op must appear "
                         "exactly once", total, g->n_ops);
    json_object_foreach(o, dev_name, list) {
        int dev = op_cluster_find(c, dev_name);
        size_t j;
        json_t *v;
        json_array_foreach(list, j, v) {
            json_step ip[3] = {{"order", 0}, {dev_name, 0}, {NULL, (long)j}};
            int op = json_is_string(v) ? op_graph_find(g, json_string_value(v)) : -1;
            if (op < 0)
                return json_fail(d, ip, 3, "must name an op of the graph");
            if (out->device_of[op] != dev)
                return json_fail(d, ip, 3, "op '%s' is placed on '%s', not here",
                                 g->op_name[op], c->dev[out->device_of[op]].name);
            out->order[out->order_off[dev] + (int)j] = op;
        }
    }
    return OP_OK;
}

op_status op_placement_read(const char *path, const op_graph *g, const op_cluster *c,
                            op_placement *out, op_error *err)
{
    json_doc d;
    memset(out, 0, sizeof *out);
    op_status st = json_doc_load(&d, path, err);
    const char *algo = NULL;
    if (!st)
        st = json_check_header(&d, "opplace-placement");
    if (!st)
        st = json_get_string(&d, d.root, NULL, 0, "algorithm", 0, &algo);
    if (!st)
        st = op_placement_init(out, g->n_ops, c->n_dev, err);
    if (!st && algo)
        st = op_placement_set_algorithm(out, algo, err);
    if (!st)
        st = read_device_of(&d, g, c, out);
    if (!st)
        st = read_order(&d, g, c, out);
    json_doc_destroy(&d);
    if (st)
        op_placement_destroy(out);
    return st;
}

void op_metrics_write_json(FILE *f, const op_metrics *m, const op_cluster *c)
{
    fputs("{\"step_time_us\": ", f);
    op_json_put_number(f, m->step_time_us);
    if (m->placement_seconds >= 0) {
        /* wall time, so two runs with one seed differ only here; with
         * OPPLACE_REPRODUCIBLE=1 it is written as 0 and files compare
         * byte for byte (bench/RESULTS.md, "Hostile inputs and budgets") */
        const char *rep = getenv("OPPLACE_REPRODUCIBLE");
        int reproducible = rep && *rep && strcmp(rep, "0") != 0;
        fputs(", \"placement_seconds\": ", f);
        op_json_put_number(f, reproducible ? 0.0 : m->placement_seconds);
    }
    fputs(", \"peak_memory_bytes\": {", f);
    for (int d = 0; d < c->n_dev; d++) {
        if (d)
            fputs(", ", f);
        op_json_put_string(f, c->dev[d].name);
        fprintf(f, ": %lld", (long long)m->peak_mem[d]);
    }
    fprintf(f, "}, \"comm_bytes\": %lld, \"oom\": %s", (long long)m->comm_bytes,
            m->oom ? "true" : "false");
    if (m->bound_us > 0) {
        int optimal = !m->oom && m->step_time_us <= m->bound_us * (1 + OP_AT_BOUND_TOL);
        fputs(", \"lower_bound_us\": ", f);
        op_json_put_number(f, m->bound_us);
        fputs(", \"lower_bound_method\": ", f);
        op_json_put_string(f, m->bound_method ? m->bound_method : "?");
        fputs(", \"certified_gap\": ", f);
        op_json_put_number(f, optimal || m->step_time_us <= 0
                                  ? 0.0 : (m->step_time_us - m->bound_us) / m->step_time_us);
        fprintf(f, ", \"proven_optimal\": %s", optimal ? "true" : "false");
    }
    fputc('}', f);
}

static void put_order(FILE *f, const op_placement *pl, const op_graph *g, const op_cluster *c)
{
    fputs(",\n  \"order\": {", f);
    for (int d = 0; d < c->n_dev; d++) {
        fputs(d ? ",\n    " : "\n    ", f);
        op_json_put_string(f, c->dev[d].name);
        fputs(": [", f);
        for (int k = pl->order_off[d]; k < pl->order_off[d + 1]; k++) {
            if (k > pl->order_off[d])
                fputs(", ", f);
            op_json_put_string(f, g->op_name[pl->order[k]]);
        }
        fputc(']', f);
    }
    fputs("\n  }", f);
}

op_status op_placement_write(const op_placement *pl, const op_graph *g, const op_cluster *c,
                             const op_metrics *m, const char *path, op_error *err)
{
    op_atomic a;
    FILE *f = op_json_doc_open(&a, path, "opplace-placement", err);
    if (!f)
        return OP_EIO;
    fputs(",\n  \"graph\": ", f);
    op_json_put_string(f, g->name);
    fputs(",\n  \"algorithm\": ", f);
    op_json_put_string(f, pl->algorithm ? pl->algorithm : "unknown");
    fputs(",\n  \"device_of\": {", f);
    for (int i = 0; i < g->n_ops; i++) {
        fputs(i ? ",\n    " : "\n    ", f);
        op_json_put_string(f, g->op_name[i]);
        fputs(": ", f);
        op_json_put_string(f, c->dev[pl->device_of[i]].name);
    }
    fputs("\n  }", f);
    if (pl->has_order)
        put_order(f, pl, g, c);
    if (m) {
        fputs(",\n  \"metrics\": ", f);
        op_metrics_write_json(f, m, c);
    }
    fputs("\n}\n", f);
    return op_atomic_commit(&a, err);
}
