/* cluster_io.c - reading and writing opplace-cluster files (formats.md section 2). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file_util.h"
#include "core/name_index.h"
#include "io/json_in.h"
#include "opplace/io.h"

static op_status read_device(const json_doc *d, json_t *v, long i, op_device *out,
                             double *dispatch)
{
    json_step at[2] = {{"devices", 0}, {NULL, i}};
    if (!json_is_object(v))
        return json_fail(d, at, 2, "each device must be an object");
    const char *name = NULL, *kind = NULL;
    double speed = 1.0;
    int64_t mem = 0;
    op_status st;
    if ((st = json_get_string(d, v, at, 2, "name", 1, &name)) ||
        (st = json_get_string(d, v, at, 2, "kind", 1, &kind)) ||
        (st = json_get_bytes(d, v, at, 2, "memory_bytes", 1, &mem)) ||
        (st = json_get_amount(d, v, at, 2, "speed", 0, &speed)) ||
        (st = json_get_time(d, v, at, 2, "dispatch_us", 0, dispatch)))
        return st;
    if (speed <= 0 || speed < OP_MIN_SPEED || speed > OP_MAX_SPEED) {
        json_step sp[3] = {at[0], at[1], {"speed", 0}};
        return json_fail(d, sp, 3, "must be positive, from %g to %g (got %g)", OP_MIN_SPEED,
                         OP_MAX_SPEED, speed);
    }
    const char *named[2] = {name, kind}, *keys[2] = {"name", "kind"};
    for (int k = 0; k < 2; k++)
        if (!named[k][0]) {
            json_step np[3] = {at[0], at[1], {keys[k], 0}};
            return json_fail(d, np, 3, "must not be empty");
        }
    *out = (op_device){(char *)name, (char *)kind, mem, speed};
    return OP_OK;
}

static op_status read_link_numbers(const json_doc *d, json_t *v, const json_step *at, int n,
                                   op_link_model *out)
{
    op_status st;
    op_link_host *h = &out->host;
    *h = (op_link_host){0, 0, 0, 0};
    if ((st = json_get_time(d, v, at, n, "latency_us", 1, &out->latency_us)) ||
        (st = json_get_amount(d, v, at, n, "us_per_byte", 1, &out->us_per_byte)) ||
        (st = json_get_time(d, v, at, n, "send_us", 0, &h->send_us)) ||
        (st = json_get_amount(d, v, at, n, "send_us_per_byte", 0, &h->send_us_per_byte)) ||
        (st = json_get_time(d, v, at, n, "recv_us", 0, &h->recv_us)) ||
        (st = json_get_amount(d, v, at, n, "recv_us_per_byte", 0, &h->recv_us_per_byte)))
        return st;
    const char *keys[3] = {"us_per_byte", "send_us_per_byte", "recv_us_per_byte"};
    double vals[3] = {out->us_per_byte, h->send_us_per_byte, h->recv_us_per_byte};
    for (int k = 0; k < 3; k++)
        if (vals[k] > OP_MAX_US_PER_BYTE) {
            json_step path[8];
            memcpy(path, at, (size_t)n * sizeof *at);
            path[n] = (json_step){keys[k], 0};
            return json_fail(d, path, n + 1, "must be at most %g (got %g)", OP_MAX_US_PER_BYTE,
                             vals[k]);
        }
    return OP_OK;
}

static op_status read_link(const json_doc *d, json_t *v, long i, const op_name_index *ix,
                           op_link_spec *out)
{
    json_step at[2] = {{"links", 0}, {NULL, i}};
    if (!json_is_object(v))
        return json_fail(d, at, 2, "each link must be an object");
    op_link_model m;
    op_status st;
    if ((st = json_get_string(d, v, at, 2, "src", 1, &out->src)) ||
        (st = json_get_string(d, v, at, 2, "dst", 1, &out->dst)) ||
        (st = json_get_string(d, v, at, 2, "channel", 0, &out->channel)) ||
        (st = read_link_numbers(d, v, at, 2, &m)))
        return st;
    out->latency_us = m.latency_us;
    out->us_per_byte = m.us_per_byte;
    out->host = m.host;
    const char *ends[2] = {out->src, out->dst}, *keys[2] = {"src", "dst"};
    for (int e = 0; e < 2; e++) {
        if (op_name_index_get(ix, ends[e]) < 0) {
            json_step kp[3] = {at[0], at[1], {keys[e], 0}};
            return json_fail(d, kp, 3, "unknown device '%s'", ends[e]);
        }
    }
    return OP_OK;
}

/* shared[i]: {"devices": [names...], "alone": x, "all": y} (formats.md 5.8) */
static op_status read_share(const json_doc *d, json_t *v, long i, const op_name_index *ix,
                            op_cluster *c)
{
    json_step at[3] = {{"shared", 0}, {NULL, i}, {"devices", 0}};
    if (!json_is_object(v))
        return json_fail(d, at, 2, "each shared group must be an object with devices, alone "
                         "and all");
    json_t *devs = json_object_get(v, "devices");
    if (!devs || !json_is_array(devs))
        return json_fail(d, at, 3, "must be an array of device names");
    double alone, all;
    op_status st;
    if ((st = json_get_amount(d, v, at, 2, "alone", 1, &alone)) ||
        (st = json_get_amount(d, v, at, 2, "all", 1, &all)))
        return st;
    size_t n = json_array_size(devs);
    if (n < 2 || n > OP_MAX_DEVICES)
        return json_fail(d, at, 3, "a shared group needs from 2 to %d devices", OP_MAX_DEVICES);
    int *ids = op_malloc(n * sizeof *ids, d->err);
    if (!ids)
        return OP_ENOMEM;
    for (size_t k = 0; k < n && !st; k++) {
        json_t *e = json_array_get(devs, k);
        json_step ep[4] = {at[0], at[1], at[2], {NULL, (long)k}};
        if (!json_is_string(e))
            st = json_fail(d, ep, 4, "must be a device name");
        else if ((ids[k] = op_name_index_get(ix, json_string_value(e))) < 0)
            st = json_fail(d, ep, 4, "unknown device '%s'", json_string_value(e));
    }
    if (!st) {
        char where[48];
        snprintf(where, sizeof where, "shared[%ld]", i);
        st = op_cluster_add_share(c, ids, (int)n, alone, all, d->path, where, d->err);
    }
    free(ids);
    return st;
}

op_cluster *op_cluster_read(const char *path, op_error *err)
{
    json_doc d;
    json_t *devs_j, *links_j;
    op_device *devs = NULL;
    double *dispatch = NULL;
    op_link_spec *links = NULL;
    op_cluster *c = NULL;
    op_name_index ix = {0};
    if (json_doc_load(&d, path, err) || json_check_header(&d, "opplace-cluster") ||
        json_get_array(&d, "devices", 1, &devs_j) || json_get_array(&d, "links", 0, &links_j))
        goto done;
    size_t nd = json_array_size(devs_j), nl = links_j ? json_array_size(links_j) : 0;
    if (nd == 0) {
        json_step at[1] = {{"devices", 0}};
        json_fail(&d, at, 1, "the cluster needs at least one device");
        goto done;
    }
    if (nd > OP_MAX_DEVICES || nl > (size_t)INT32_MAX) {
        json_step at[1] = {{nd > OP_MAX_DEVICES ? "devices" : "links", 0}};
        json_fail(&d, at, 1, "too many entries (at most %d devices)", OP_MAX_DEVICES);
        goto done;
    }
    devs = op_calloc(nd, sizeof *devs, err);
    dispatch = op_calloc(nd, sizeof *dispatch, err);
    links = op_calloc(nl + 1, sizeof *links, err);
    if (!devs || !dispatch || !links || op_name_index_init(&ix, nd, err))
        goto done;
    /* names resolve through a hash index: linear in devices + links;
     * op_cluster_new refuses repeated links */
    for (size_t i = 0; i < nd; i++) {
        if (read_device(&d, json_array_get(devs_j, i), (long)i, &devs[i], &dispatch[i]))
            goto done;
        int old = op_name_index_put(&ix, devs[i].name, (int)i, err);
        if (old == -2)
            goto done;
        if (old >= 0) {
            json_step np[3] = {{"devices", 0}, {NULL, (long)i}, {"name", 0}};
            json_fail(&d, np, 3, "duplicate device name '%s'", devs[i].name);
            goto done;
        }
    }
    for (size_t i = 0; i < nl; i++) {
        if (read_link(&d, json_array_get(links_j, i), (long)i, &ix, &links[i]))
            goto done;
        json_step at[2] = {{"links", 0}, {NULL, (long)i}};
        if (!strcmp(links[i].src, links[i].dst)) {
            json_fail(&d, at, 2, "a link from '%s' to itself", links[i].src);
            goto done;
        }
    }
    op_link_model def, *defp = NULL;
    json_t *dl = json_object_get(d.root, "default_link");
    if (dl && !json_is_null(dl)) {
        json_step at[1] = {{"default_link", 0}};
        if (!json_is_object(dl)) {
            json_fail(&d, at, 1, "must be an object with latency_us and us_per_byte");
            goto done;
        }
        if (read_link_numbers(&d, dl, at, 1, &def))
            goto done;
        defp = &def;
    }
    c = op_cluster_new(devs, (int)nd, links, (int)nl, defp, path, err);
    for (size_t i = 0; c && i < nd; i++)
        if (op_cluster_set_dispatch(c, (int)i, dispatch[i], path, err)) {
            op_cluster_free(c);
            c = NULL;
        }
    json_t *ri = c ? json_object_get(d.root, "recv_idle_free") : NULL;
    if (ri && !json_is_null(ri)) {
        json_step at[1] = {{"recv_idle_free", 0}};
        if (!json_is_boolean(ri)) {
            json_fail(&d, at, 1, "must be true or false");
            op_cluster_free(c);
            c = NULL;
        } else {
            c->recv_idle_free = json_is_true(ri);
        }
    }
    json_t *sh = c ? json_object_get(d.root, "shared") : NULL;
    if (sh && !json_is_null(sh)) {
        json_step at[1] = {{"shared", 0}};
        op_status st = json_is_array(sh) ? OP_OK : json_fail(&d, at, 1, "must be an array");
        for (size_t i = 0; !st && i < json_array_size(sh); i++)
            st = read_share(&d, json_array_get(sh, i), (long)i, &ix, c);
        if (st) {
            op_cluster_free(c);
            c = NULL;
        }
    }
done:
    if (ix.keys)
        op_name_index_destroy(&ix);
    free(devs);
    free(dispatch);
    free(links);
    json_doc_destroy(&d);
    return c;
}

static void put_link(FILE *f, double lat, double upb, const op_link_host *h)
{
    fputs("\"latency_us\": ", f);
    op_json_put_number(f, lat);
    fputs(", \"us_per_byte\": ", f);
    op_json_put_number(f, upb);
    const char *keys[4] = {"send_us", "send_us_per_byte", "recv_us", "recv_us_per_byte"};
    double vals[4] = {h->send_us, h->send_us_per_byte, h->recv_us, h->recv_us_per_byte};
    for (int k = 0; k < 4; k++)
        if (vals[k] > 0) { /* formats.md 5.9: written only when set */
            fprintf(f, ", \"%s\": ", keys[k]);
            op_json_put_number(f, vals[k]);
        }
}

op_status op_cluster_write(const op_cluster *c, const char *path, op_error *err)
{
    op_atomic a;
    FILE *f = op_json_doc_open(&a, path, "opplace-cluster", err);
    if (!f)
        return OP_EIO;
    fputs(",\n  \"devices\": [\n", f);
    for (int i = 0; i < c->n_dev; i++) {
        fputs("    {\"name\": ", f);
        op_json_put_string(f, c->dev[i].name);
        fputs(", \"kind\": ", f);
        op_json_put_string(f, c->dev[i].kind);
        fprintf(f, ", \"memory_bytes\": %lld, \"speed\": ", (long long)c->dev[i].memory_bytes);
        op_json_put_number(f, c->dev[i].speed);
        if (op_cluster_dispatch_us(c, i) > 0) {
            fputs(", \"dispatch_us\": ", f);
            op_json_put_number(f, op_cluster_dispatch_us(c, i));
        }
        fputs(i + 1 < c->n_dev ? "},\n" : "}\n", f);
    }
    fputs("  ],\n  \"links\": [", f);
    int first = 1;
    for (int l = 0; l < c->n_links; l++) {
        const op_cluster_link *k = &c->link[l];
        fputs(first ? "\n    {\"src\": " : ",\n    {\"src\": ", f);
        first = 0;
        op_json_put_string(f, c->dev[k->src].name);
        fputs(", \"dst\": ", f);
        op_json_put_string(f, c->dev[k->dst].name);
        fputs(", ", f);
        put_link(f, k->latency_us, k->us_per_byte, &k->host);
        if (k->named) {
            fputs(", \"channel\": ", f);
            op_json_put_string(f, c->named_chan[k->chan]);
        }
        fputc('}', f);
    }
    fputs(first ? "]" : "\n  ]", f);
    if (c->has_default_link) {
        fputs(",\n  \"default_link\": {", f);
        put_link(f, c->default_link.latency_us, c->default_link.us_per_byte,
                 &c->default_link.host);
        fputc('}', f);
    }
    if (c->recv_idle_free)
        fputs(",\n  \"recv_idle_free\": true", f);
    if (c->n_share) {
        fputs(",\n  \"shared\": [", f);
        for (int k = 0; k < c->n_share; k++) {
            const op_share_group *g = &c->share[k];
            fputs(k ? ",\n    {\"devices\": [" : "\n    {\"devices\": [", f);
            for (int i = 0; i < g->n; i++) {
                if (i)
                    fputs(", ", f);
                op_json_put_string(f, c->dev[g->dev[i]].name);
            }
            fputs("], \"alone\": ", f);
            op_json_put_number(f, g->alone);
            fputs(", \"all\": ", f);
            op_json_put_number(f, g->all);
            fputc('}', f);
        }
        fputs("\n  ]", f);
    }
    fputs("\n}\n", f);
    return op_atomic_commit(&a, err);
}
