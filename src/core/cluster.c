/*
 * cluster.c - building a cluster: devices, listed links, channels.
 *
 * Everything here is linear in the input (devices + listed links): names
 * resolve through a hash index, listed links are sorted once and looked up
 * by binary search in their source's row, and the channels of pairs with no
 * named channel are numbered by formula (opplace/cluster.h), so nothing is
 * stored per ordered pair.  Numbers follow opplace/limits.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/name_index.h"
#include "core/problem_util.h"
#include "core/strtab.h"
#include "opplace/cluster.h"
#include "opplace/limits.h"

void op_cluster_free(op_cluster *c)
{
    if (!c)
        return;
    if (c->name_ix) {
        op_name_index_destroy(c->name_ix);
        free(c->name_ix);
    }
    for (int i = 0; i < c->n_dev; i++) {
        free(c->dev[i].name);
        free(c->dev[i].kind);
    }
    for (int k = 0; k < c->n_named_chan; k++)
        free(c->named_chan[k]);
    for (int k = 0; k < c->n_share; k++)
        free(c->share[k].dev);
    free(c->share);
    free(c->share_of);
    free(c->dispatch_us);
    free(c->named_chan);
    free(c->dev);
    free(c->link);
    free(c->link_row);
    free(c);
}

int op_cluster_find(const op_cluster *c, const char *name)
{
    if (c->name_ix)
        return op_name_index_get(c->name_ix, name);
    for (int i = 0; i < c->n_dev; i++)
        if (strcmp(c->dev[i].name, name) == 0)
            return i;
    return -1;
}

const char *op_cluster_chan_name(const op_cluster *c, int ch, char *buf, size_t cap)
{
    if (ch >= 0 && ch < c->n_named_chan) {
        snprintf(buf, cap, "%s", c->named_chan[ch]);
        return buf;
    }
    int nd = c->n_dev, k = ch - c->n_named_chan;
    if (nd < 2 || k < 0 || k >= nd * (nd - 1)) {
        snprintf(buf, cap, "channel %d", ch);
        return buf;
    }
    int s = k / (nd - 1), d = k % (nd - 1);
    if (d >= s)
        d++;
    snprintf(buf, cap, "%s->%s", c->dev[s].name, c->dev[d].name);
    return buf;
}

op_link_model op_cluster_mean_link(const op_cluster *c)
{
    /* pair by pair, in the order the dense tables were summed, so the
     * baselines' rankings stay bit-identical */
    double lat = 0, upb = 0;
    long pairs = 0;
    for (int a = 0; a < c->n_dev; a++)
        for (int b = 0; b < c->n_dev; b++)
            if (a != b) {
                op_link_model m = op_cluster_link_model(c, a, b);
                lat += m.latency_us;
                upb += m.us_per_byte;
                pairs++;
            }
    if (pairs) {
        lat /= (double)pairs;
        upb /= (double)pairs;
    }
    return (op_link_model){.latency_us = lat, .us_per_byte = upb};
}

static op_status copy_devices(op_cluster *c, const op_device *devs, int n, const char *origin,
                              op_error *err)
{
    if (n <= 0)
        return op_fail(err, OP_EINPUT, "%s: devices: the cluster needs at least one device",
                       origin);
    if (n > OP_MAX_DEVICES)
        return op_fail(err, OP_EINPUT, "%s: devices: %d devices; opplace accepts at most %d",
                       origin, n, OP_MAX_DEVICES);
    c->dev = op_calloc((size_t)n, sizeof *c->dev, err);
    c->name_ix = op_calloc(1, sizeof(op_name_index), err);
    if (!c->dev || !c->name_ix)
        return OP_ENOMEM;
    if (op_name_index_init(c->name_ix, (size_t)n, err)) {
        free(c->name_ix);
        c->name_ix = NULL;
        return OP_ENOMEM;
    }
    for (int i = 0; i < n; i++) {
        const op_device *d = &devs[i];
        if (!d->name || !d->name[0] || !d->kind || !d->kind[0])
            return op_fail(err, OP_EINPUT, "%s: devices[%d]: name and kind must be non-empty",
                           origin, i);
        if (!(d->speed >= OP_MIN_SPEED && d->speed <= OP_MAX_SPEED))
            return op_fail(err, OP_EINPUT,
                           "%s: devices[%d].speed: must be a number from %g to %g (got %g)",
                           origin, i, OP_MIN_SPEED, OP_MAX_SPEED, d->speed);
        if (d->memory_bytes < 0 || d->memory_bytes > OP_MAX_BYTES)
            return op_fail(err, OP_EINPUT,
                           "%s: devices[%d].memory_bytes: must be a number from 0 to 2^50",
                           origin, i);
        c->dev[i].name = op_strdup(d->name, err);
        c->dev[i].kind = op_strdup(d->kind, err);
        c->n_dev = i + 1; /* so op_cluster_free releases what was copied */
        if (!c->dev[i].name || !c->dev[i].kind)
            return OP_ENOMEM;
        c->dev[i].memory_bytes = d->memory_bytes;
        c->dev[i].speed = d->speed;
        int old = op_name_index_put(c->name_ix, c->dev[i].name, i, err);
        if (old == -2)
            return OP_ENOMEM;
        if (old >= 0)
            return op_fail(err, OP_EINPUT, "%s: devices[%d]: duplicate device name '%s'",
                           origin, i, d->name);
    }
    return OP_OK;
}

static int valid_link(double lat, double upb)
{
    return op_valid_time(lat) && upb >= 0 && upb <= OP_MAX_US_PER_BYTE;
}

static int valid_host(const op_link_host *h)
{
    return op_valid_time(h->send_us) && op_valid_time(h->recv_us) && h->send_us_per_byte >= 0 &&
           h->send_us_per_byte <= OP_MAX_US_PER_BYTE && h->recv_us_per_byte >= 0 &&
           h->recv_us_per_byte <= OP_MAX_US_PER_BYTE;
}

static int has_host(const op_link_host *h)
{
    return h->send_us > 0 || h->send_us_per_byte > 0 || h->recv_us > 0 ||
           h->recv_us_per_byte > 0;
}

static int own_chan(const op_cluster *c, int s, int d)
{
    return c->n_named_chan + s * (c->n_dev - 1) + (d < s ? d : d - 1);
}

static int cmp_link(const void *a, const void *b)
{
    const op_cluster_link *x = a, *y = b;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return (x->dst > y->dst) - (x->dst < y->dst);
}

static op_status build_rows(op_cluster *c, op_error *err)
{
    free(c->link_row);
    c->link_row = op_calloc((size_t)c->n_dev + 1, sizeof *c->link_row, err);
    if (!c->link_row)
        return OP_ENOMEM;
    for (int l = 0; l < c->n_links; l++)
        c->link_row[c->link[l].src + 1]++;
    for (int s = 0; s < c->n_dev; s++)
        c->link_row[s + 1] += c->link_row[s];
    return OP_OK;
}

static op_status apply_links(op_cluster *c, const op_link_spec *links, int n_links,
                             const char *origin, op_error *err)
{
    op_strtab shared;
    if (op_strtab_init(&shared, err))
        return OP_ENOMEM;
    op_status st = OP_OK;
    c->link = op_calloc((size_t)n_links + 1, sizeof *c->link, err);
    if (!c->link) {
        op_strtab_destroy(&shared);
        return OP_ENOMEM;
    }
    for (int l = 0; l < n_links && !st; l++) {
        const op_link_spec *L = &links[l];
        int s = op_cluster_find(c, L->src), d = op_cluster_find(c, L->dst);
        if (s < 0 || d < 0)
            st = op_fail(err, OP_EINPUT, "%s: links[%d].%s: unknown device '%s'", origin, l,
                         s < 0 ? "src" : "dst", s < 0 ? L->src : L->dst);
        else if (s == d)
            st = op_fail(err, OP_EINPUT, "%s: links[%d]: a link from '%s' to itself", origin, l,
                         L->src);
        else if (!valid_link(L->latency_us, L->us_per_byte))
            st = op_fail(err, OP_EINPUT,
                         "%s: links[%d]: latency_us must be from 0 to %g and us_per_byte "
                         "from 0 to %g", origin, l, OP_MAX_TIME_US, OP_MAX_US_PER_BYTE);
        else if (!valid_host(&L->host))
            st = op_fail(err, OP_EINPUT, "%s: links[%d]: send_us and recv_us must be from 0 to "
                         "%g, send_us_per_byte and recv_us_per_byte from 0 to %g", origin, l,
                         OP_MAX_TIME_US, OP_MAX_US_PER_BYTE);
        else if (L->channel && !L->channel[0])
            st = op_fail(err, OP_EINPUT, "%s: links[%d].channel: must not be empty", origin, l);
        if (st)
            break;
        int id = -1;
        if (L->channel && (id = op_strtab_intern(&shared, L->channel, err)) < 0) {
            st = OP_ENOMEM;
            break;
        }
        /* chan holds the named id for now, or -1; the link's own index
         * rides in `named` until the duplicate check below */
        c->link[l] = (op_cluster_link){s, d, L->latency_us, L->us_per_byte, id, l, L->host};
    }
    c->n_links = st ? 0 : n_links;
    if (!st) {
        qsort(c->link, (size_t)n_links, sizeof *c->link, cmp_link);
        for (int l = 1; l < n_links && !st; l++)
            if (c->link[l].src == c->link[l - 1].src && c->link[l].dst == c->link[l - 1].dst) {
                int a = c->link[l - 1].named, b = c->link[l].named;
                st = op_fail(err, OP_EINPUT,
                             "%s: links[%d]: a second link from '%s' to '%s' (first: links[%d])",
                             origin, a > b ? a : b, links[a].src, links[a].dst, a < b ? a : b);
            }
    }
    if (!st) {
        c->n_named_chan = shared.n;
        c->named_chan = op_strtab_take(&shared, &c->n_named_chan);
        if (!c->named_chan && c->n_named_chan > 0)
            st = OP_ENOMEM;
    }
    op_strtab_destroy(&shared);
    if (st)
        return st;
    for (int l = 0; l < n_links; l++) {
        op_cluster_link *k = &c->link[l];
        k->named = k->chan >= 0;
        if (!k->named)
            k->chan = own_chan(c, k->src, k->dst);
    }
    return build_rows(c, err);
}

static op_status check_defaults(op_cluster *c, const op_link_model *def, const char *origin,
                                op_error *err)
{
    int nd = c->n_dev;
    if (def) {
        if (!valid_link(def->latency_us, def->us_per_byte))
            return op_fail(err, OP_EINPUT,
                           "%s: default_link: latency_us must be from 0 to %g and us_per_byte "
                           "from 0 to %g", origin, OP_MAX_TIME_US, OP_MAX_US_PER_BYTE);
        if (!valid_host(&def->host))
            return op_fail(err, OP_EINPUT, "%s: default_link: send_us and recv_us must be from "
                           "0 to %g, send_us_per_byte and recv_us_per_byte from 0 to %g",
                           origin, OP_MAX_TIME_US, OP_MAX_US_PER_BYTE);
        c->has_default_link = 1;
        c->default_link = *def;
        return OP_OK;
    }
    /* without a default every ordered pair must be listed: each row holds
     * every other device exactly once (duplicates were refused) */
    for (int s = 0; s < nd; s++) {
        int have = c->link_row[s + 1] - c->link_row[s];
        if (have == nd - 1)
            continue;
        for (int d = 0; d < nd; d++)
            if (d != s && !op_cluster_listed(c, s, d))
                return op_fail(err, OP_EINPUT,
                               "%s: no link from '%s' to '%s' and no default_link; add one "
                               "of them", origin, c->dev[s].name, c->dev[d].name);
    }
    return OP_OK;
}

op_status op_cluster_set_link(op_cluster *c, int s, int d, op_link_model m, op_error *err)
{
    if (s == d || s < 0 || d < 0 || s >= c->n_dev || d >= c->n_dev || !valid_link(m.latency_us, m.us_per_byte))
        return op_fail(err, OP_EINPUT, "a link from device %d to %d with latency %g us and %g "
                       "us per byte is not valid", s, d, m.latency_us, m.us_per_byte);
    op_cluster_link *l = (op_cluster_link *)op_cluster_listed(c, s, d);
    if (l) {
        l->latency_us = m.latency_us;
        l->us_per_byte = m.us_per_byte;
        return OP_OK;
    }
    op_cluster_link *q = op_realloc(c->link, ((size_t)c->n_links + 1) * sizeof *q, err);
    if (!q)
        return OP_ENOMEM;
    c->link = q;
    int at = c->link_row[s + 1];
    while (at > c->link_row[s] && c->link[at - 1].dst > d)
        at--;
    memmove(&c->link[at + 1], &c->link[at], (size_t)(c->n_links - at) * sizeof *q);
    c->link[at] = (op_cluster_link){s, d, m.latency_us, m.us_per_byte, own_chan(c, s, d), 0,
                                    m.host};
    c->has_host |= has_host(&m.host);
    c->n_links++;
    for (int t = s + 1; t <= c->n_dev; t++)
        c->link_row[t]++;
    return OP_OK;
}

op_cluster *op_cluster_new(const op_device *devs, int n_dev, const op_link_spec *links,
                           int n_links, const op_link_model *default_link, const char *origin,
                           op_error *err)
{
    op_cluster *c = op_calloc(1, sizeof *c, err);
    if (!c)
        return NULL;
    if (copy_devices(c, devs, n_dev, origin, err) ||
        apply_links(c, links, n_links < 0 ? 0 : n_links, origin, err) ||
        check_defaults(c, default_link, origin, err)) {
        op_cluster_free(c);
        return NULL;
    }
    c->n_chan = c->n_named_chan + n_dev * (n_dev - 1);
    c->has_host = c->has_default_link && has_host(&c->default_link.host);
    for (int l = 0; l < c->n_links; l++)
        c->has_host |= has_host(&c->link[l].host);
    return c;
}

op_status op_cluster_add_share(op_cluster *c, const int *devs, int n, double alone, double all,
                               const char *origin, const char *at, op_error *err)
{
    if (n < 2)
        return op_fail(err, OP_EINPUT, "%s: %s.devices: a shared group needs at least 2 devices",
                       origin, at);
    if (!(alone > 0 && alone <= OP_MAX_TIME_US && all > 0 && all <= alone))
        return op_fail(err, OP_EINPUT,
                       "%s: %s: alone and all must be positive numbers with all <= alone "
                       "(sharing never speeds a device up; got alone %g, all %g)",
                       origin, at, alone, all);
    if (!c->share_of) {
        c->share_of = op_malloc((size_t)c->n_dev * sizeof *c->share_of, err);
        if (!c->share_of)
            return OP_ENOMEM;
        for (int d = 0; d < c->n_dev; d++)
            c->share_of[d] = -1;
    }
    for (int i = 0; i < n; i++) {
        int d = devs[i];
        if (d < 0 || d >= c->n_dev)
            return op_fail(err, OP_EINPUT, "%s: %s.devices[%d]: unknown device", origin, at, i);
        for (int j = 0; j < i; j++)
            if (devs[j] == d)
                return op_fail(err, OP_EINPUT, "%s: %s.devices[%d]: '%s' is listed twice",
                               origin, at, i, c->dev[d].name);
        if (c->share_of[d] >= 0)
            return op_fail(err, OP_EINPUT,
                           "%s: %s.devices[%d]: '%s' is already in shared group %d; a device "
                           "shares compute with one group at most", origin, at, i,
                           c->dev[d].name, c->share_of[d]);
    }
    op_share_group *q = op_realloc(c->share, ((size_t)c->n_share + 1) * sizeof *q, err);
    if (!q)
        return OP_ENOMEM;
    c->share = q;
    op_share_group *g = &c->share[c->n_share];
    g->dev = op_malloc((size_t)n * sizeof *g->dev, err);
    if (!g->dev)
        return OP_ENOMEM;
    memcpy(g->dev, devs, (size_t)n * sizeof *devs);
    g->n = n;
    g->alone = alone;
    g->all = all;
    for (int i = 0; i < n; i++)
        c->share_of[devs[i]] = c->n_share;
    c->n_share++;
    return OP_OK;
}

op_status op_cluster_set_dispatch(op_cluster *c, int d, double dispatch_us, const char *origin,
                                  op_error *err)
{
    if (d < 0 || d >= c->n_dev || !op_valid_time(dispatch_us))
        return op_fail(err, OP_EINPUT,
                       "%s: devices[%d].dispatch_us: must be a number from 0 to %g (got %g)",
                       origin, d, OP_MAX_TIME_US, dispatch_us);
    if (!c->dispatch_us) {
        if (dispatch_us == 0)
            return OP_OK;
        c->dispatch_us = op_calloc((size_t)c->n_dev, sizeof *c->dispatch_us, err);
        if (!c->dispatch_us)
            return OP_ENOMEM;
    }
    c->dispatch_us[d] = dispatch_us;
    return OP_OK;
}
