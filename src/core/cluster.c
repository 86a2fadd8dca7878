/*
 * cluster.c - building a cluster: devices, per-pair link models, channels.
 *
 * Channel numbering: links that name a `channel` share that channel's queue;
 * every other ordered pair (listed without a channel, or falling back to the
 * default link) gets a channel of its own named "src->dst".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strtab.h"
#include "opplace/cluster.h"

void op_cluster_free(op_cluster *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n_dev; i++) {
        free(c->dev[i].name);
        free(c->dev[i].kind);
    }
    for (int k = 0; k < c->n_chan; k++)
        free(c->chan_name[k]);
    free(c->chan_name);
    free(c->dev);
    free(c->lat);
    free(c->upb);
    free(c->chan);
    free(c->listed);
    free(c);
}

int op_cluster_find(const op_cluster *c, const char *name)
{
    for (int i = 0; i < c->n_dev; i++)
        if (strcmp(c->dev[i].name, name) == 0)
            return i;
    return -1;
}

static op_status copy_devices(op_cluster *c, const op_device *devs, int n, const char *origin,
                              op_error *err)
{
    if (n <= 0)
        return op_fail(err, OP_EINPUT, "%s: devices: the cluster needs at least one device",
                       origin);
    c->dev = op_calloc((size_t)n, sizeof *c->dev, err);
    if (!c->dev)
        return OP_ENOMEM;
    for (int i = 0; i < n; i++) {
        const op_device *d = &devs[i];
        if (!d->name || !d->name[0] || !d->kind || !d->kind[0])
            return op_fail(err, OP_EINPUT, "%s: devices[%d]: name and kind must be non-empty",
                           origin, i);
        if (!(isfinite(d->speed) && d->speed > 0))
            return op_fail(err, OP_EINPUT, "%s: devices[%d].speed: must be a positive number",
                           origin, i);
        if (d->memory_bytes < 0)
            return op_fail(err, OP_EINPUT,
                           "%s: devices[%d].memory_bytes: must be a non-negative number", origin,
                           i);
        for (int j = 0; j < i; j++)
            if (strcmp(c->dev[j].name, d->name) == 0)
                return op_fail(err, OP_EINPUT, "%s: devices[%d]: duplicate device name '%s'",
                               origin, i, d->name);
        c->dev[i].name = op_strdup(d->name, err);
        c->dev[i].kind = op_strdup(d->kind, err);
        c->n_dev = i + 1; /* so op_cluster_free releases what was copied */
        if (!c->dev[i].name || !c->dev[i].kind)
            return OP_ENOMEM;
        c->dev[i].memory_bytes = d->memory_bytes;
        c->dev[i].speed = d->speed;
    }
    return OP_OK;
}

static int valid_link_number(double v)
{
    return isfinite(v) && v >= 0;
}

static op_status apply_links(op_cluster *c, const op_link_spec *links, int n_links,
                             op_strtab *shared, int *shared_chan, const char *origin,
                             op_error *err)
{
    int nd = c->n_dev;
    for (int l = 0; l < n_links; l++) {
        const op_link_spec *L = &links[l];
        int s = op_cluster_find(c, L->src), d = op_cluster_find(c, L->dst);
        if (s < 0 || d < 0)
            return op_fail(err, OP_EINPUT, "%s: links[%d].%s: unknown device '%s'", origin, l,
                           s < 0 ? "src" : "dst", s < 0 ? L->src : L->dst);
        if (s == d)
            return op_fail(err, OP_EINPUT, "%s: links[%d]: a link from '%s' to itself", origin,
                           l, L->src);
        if (!valid_link_number(L->latency_us) || !valid_link_number(L->us_per_byte))
            return op_fail(err, OP_EINPUT,
                           "%s: links[%d]: latency_us and us_per_byte must be finite and "
                           "non-negative", origin, l);
        int k = s * nd + d;
        if (c->listed[k])
            return op_fail(err, OP_EINPUT, "%s: links[%d]: a second link from '%s' to '%s'",
                           origin, l, L->src, L->dst);
        c->listed[k] = 1;
        c->lat[k] = L->latency_us;
        c->upb[k] = L->us_per_byte;
        c->chan[k] = -1;
        if (L->channel) {
            int id = op_strtab_intern(shared, L->channel, err);
            if (id < 0)
                return OP_ENOMEM;
            shared_chan[k] = id;
        }
    }
    return OP_OK;
}

/* Number the channels: shared ones first (in order of first mention), then
 * one per remaining ordered pair. */
static op_status number_channels(op_cluster *c, op_strtab *shared, const int *shared_chan,
                                 op_error *err)
{
    int nd = c->n_dev, n_shared = shared->n;
    int total = n_shared + nd * (nd - 1);
    c->n_named_chan = n_shared;
    c->chan_name = op_calloc((size_t)total + 1, sizeof *c->chan_name, err);
    if (!c->chan_name)
        return OP_ENOMEM;
    for (int k = 0; k < n_shared; k++) {
        c->chan_name[k] = op_strdup(shared->names[k], err);
        c->n_chan = k + 1;
        if (!c->chan_name[k])
            return OP_ENOMEM;
    }
    for (int s = 0; s < nd; s++)
        for (int d = 0; d < nd; d++) {
            int k = s * nd + d;
            if (s == d) {
                c->chan[k] = -1;
                continue;
            }
            if (shared_chan[k] >= 0) {
                c->chan[k] = shared_chan[k];
                continue;
            }
            char buf[512];
            snprintf(buf, sizeof buf, "%s->%s", c->dev[s].name, c->dev[d].name);
            c->chan_name[c->n_chan] = op_strdup(buf, err);
            if (!c->chan_name[c->n_chan])
                return OP_ENOMEM;
            c->chan[k] = c->n_chan++;
        }
    return OP_OK;
}

static op_status fill_defaults(op_cluster *c, const op_link_model *def, const char *origin,
                               op_error *err)
{
    int nd = c->n_dev;
    if (def) {
        if (!valid_link_number(def->latency_us) || !valid_link_number(def->us_per_byte))
            return op_fail(err, OP_EINPUT,
                           "%s: default_link: latency_us and us_per_byte must be finite and "
                           "non-negative", origin);
        c->has_default_link = 1;
        c->default_link = *def;
    }
    for (int s = 0; s < nd; s++)
        for (int d = 0; d < nd; d++) {
            int k = s * nd + d;
            if (s == d || c->listed[k])
                continue;
            if (!def)
                return op_fail(err, OP_EINPUT,
                               "%s: no link from '%s' to '%s' and no default_link; add one "
                               "of them", origin, c->dev[s].name, c->dev[d].name);
            c->lat[k] = def->latency_us;
            c->upb[k] = def->us_per_byte;
        }
    return OP_OK;
}

op_cluster *op_cluster_new(const op_device *devs, int n_dev, const op_link_spec *links,
                           int n_links, const op_link_model *default_link, const char *origin,
                           op_error *err)
{
    op_cluster *c = op_calloc(1, sizeof *c, err);
    if (!c)
        return NULL;
    op_strtab shared;
    int *shared_chan = NULL;
    if (op_strtab_init(&shared, err)) {
        free(c);
        return NULL;
    }
    if (copy_devices(c, devs, n_dev, origin, err))
        goto fail;
    size_t nn = (size_t)n_dev * (size_t)n_dev;
    c->lat = op_calloc(nn, sizeof *c->lat, err);
    c->upb = op_calloc(nn, sizeof *c->upb, err);
    c->chan = op_malloc(nn * sizeof *c->chan, err);
    c->listed = op_calloc(nn, 1, err);
    shared_chan = op_malloc(nn * sizeof *shared_chan, err);
    if (!c->lat || !c->upb || !c->chan || !c->listed || !shared_chan)
        goto fail;
    for (size_t k = 0; k < nn; k++)
        shared_chan[k] = -1;
    if (apply_links(c, links, n_links, &shared, shared_chan, origin, err) ||
        fill_defaults(c, default_link, origin, err) ||
        number_channels(c, &shared, shared_chan, err))
        goto fail;
    free(shared_chan);
    op_strtab_destroy(&shared);
    return c;
fail:
    free(shared_chan);
    op_strtab_destroy(&shared);
    op_cluster_free(c);
    return NULL;
}
