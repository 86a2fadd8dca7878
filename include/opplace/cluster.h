/*
 * opplace/cluster.h - devices and the links between them.
 *
 * A transfer of b bytes from device s to device d takes
 *     op_cluster_latency(c, s, d) + op_cluster_us_per_byte(c, s, d) * b
 * microseconds on channel op_cluster_chan(c, s, d).  Each channel carries one
 * transfer at a time; every ordered pair has its own channel unless links
 * name a shared `channel` (formats.md section 2).  Pairs with no listed link
 * use the default link.
 *
 * Storage is linear in the input: per-pair state exists only for the listed
 * links (sorted by source, then destination, with a row index per source),
 * so a 4,000-device cluster with a default link costs kilobytes, not the
 * 16 million pairs' tables.  A lookup is a binary search in the source's
 * row (a few comparisons for real clusters).  Channel ids: the named
 * channels are 0..n_named_chan-1; the pair (s, d) that has no named channel
 * owns id n_named_chan + s * (n_dev - 1) + (d < s ? d : d - 1), so n_chan is
 * n_named_chan + n_dev * (n_dev - 1) (ids of pairs on a named channel stay
 * unused).
 */
#ifndef OPPLACE_CLUSTER_H
#define OPPLACE_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "opplace/error.h"

typedef struct op_device {
    char *name;
    char *kind;            /* "gpu", "cpu", ... */
    int64_t memory_bytes;  /* capacity for OOM checks */
    double speed;          /* op time = time_us[kind] / speed */
} op_device;

/* What a transfer costs the hosts at its two ends (formats.md 5.9): its
 * source device is occupied send_us + send_us_per_byte * bytes after the op
 * that produced it, its destination recv_us + recv_us_per_byte * bytes
 * before the first op there that reads it.  All 0 by default. */
typedef struct op_link_host {
    double send_us, send_us_per_byte, recv_us, recv_us_per_byte;
} op_link_host;

typedef struct op_link_model {
    double latency_us;
    double us_per_byte;
    op_link_host host;
} op_link_model;

/* A listed link, resolved to device indices. */
typedef struct op_cluster_link {
    int src, dst;
    double latency_us, us_per_byte;
    int chan;              /* its channel id (named or the pair's own) */
    int named;             /* 1 when it names a shared channel */
    op_link_host host;
} op_cluster_link;

/* Devices that share compute (formats.md 5.8): while m of the group's k
 * devices compute, each progresses at op_share_rate(g, m) of its own speed. */
typedef struct op_share_group {
    int n;                 /* its devices (at least 2) */
    int *dev;              /* their indices, in the file's order */
    double alone, all;     /* throughput of one computing alone, of each when all compute */
} op_share_group;

typedef struct op_cluster {
    int n_dev;
    op_device *dev;
    int n_links;
    op_cluster_link *link; /* sorted by (src, dst) */
    int *link_row;         /* n_dev + 1: source s's links are link[link_row[s] .. link_row[s+1]) */
    int n_chan;
    int n_named_chan;      /* channels 0..n_named_chan-1 are the links' named channels */
    char **named_chan;     /* their names */
    int has_default_link;
    op_link_model default_link;
    void *name_ix;         /* device name -> index (private) */
    int n_share;           /* shared-compute groups (0: every device computes alone) */
    op_share_group *share;
    int *share_of;         /* per device: its group, or -1; NULL when n_share == 0 */
    double *dispatch_us;   /* per device: host cost paid before each op starts
                              (formats.md 5.7); NULL when every device's is 0 */
    int has_host;          /* some link (or the default) has a host cost (5.9) */
    int recv_idle_free;    /* a transfer arriving at an idle device costs it no
                              receive host cost (formats.md 5.9, recv_idle_free) */
} op_cluster;

/* A link as given in a file or by a preset. channel may be NULL. */
typedef struct op_link_spec {
    const char *src, *dst, *channel;
    double latency_us, us_per_byte;
    op_link_host host;
} op_link_spec;

/* Build a cluster: devices are copied; links resolve by name.  With
 * default_link == NULL every ordered pair must be listed.  origin prefixes
 * error messages (a file name or "preset"). */
op_cluster *op_cluster_new(const op_device *devs, int n_dev, const op_link_spec *links,
                           int n_links, const op_link_model *default_link,
                           const char *origin, op_error *err);
void op_cluster_free(op_cluster *c);

/* Add a shared-compute group of n devices (indices) with measured
 * throughputs alone and all (0 < all <= alone): at least 2 distinct devices,
 * none already in a group.  origin and at (e.g. "shared[0]") prefix errors. */
op_status op_cluster_add_share(op_cluster *c, const int *devs, int n, double alone, double all,
                               const char *origin, const char *at, op_error *err);

/* Set device d's dispatch_us (0 to 1e12 us, formats.md 5.7). */
op_status op_cluster_set_dispatch(op_cluster *c, int d, double dispatch_us, const char *origin,
                                  op_error *err);
static inline double op_cluster_dispatch_us(const op_cluster *c, int d)
{
    return c->dispatch_us ? c->dispatch_us[d] : 0.0;
}

/* The rate (a factor on the device's speed) at which each computing member
 * of group g progresses while m of its members compute (1 <= m <= n):
 * linear from 1 (m = 1) to all / alone (m = n). */
static inline double op_share_rate(const op_share_group *g, int m)
{
    if (m <= 1)
        return 1.0;
    return 1.0 - (1.0 - g->all / g->alone) * (double)(m - 1) / (double)(g->n - 1);
}

/* Device index by name (a hash lookup), or -1. */
int op_cluster_find(const op_cluster *c, const char *device_name);

/* The listed link from s to d, or NULL when the pair uses the default link. */
static inline const op_cluster_link *op_cluster_listed(const op_cluster *c, int s, int d)
{
    int lo = c->link_row[s], hi = c->link_row[s + 1];
    while (lo < hi) {
        int mid = (lo + hi) >> 1;
        int t = c->link[mid].dst;
        if (t == d)
            return &c->link[mid];
        if (t < d)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (const op_cluster_link *)0;
}
/* The link model of the ordered pair s != d (listed, else the default). */
static inline op_link_model op_cluster_link_model(const op_cluster *c, int s, int d)
{
    const op_cluster_link *l = op_cluster_listed(c, s, d);
    if (l)
        return (op_link_model){l->latency_us, l->us_per_byte, l->host};
    return c->default_link;
}

/* The host cost of a transfer of `bytes` over s -> d (formats.md 5.9) on
 * its source (send = 1) or its destination (send = 0). */
static inline double op_cluster_host_us(const op_cluster *c, int s, int d, int64_t bytes,
                                        int send)
{
    const op_cluster_link *l = op_cluster_listed(c, s, d);
    const op_link_host *h = l ? &l->host : &c->default_link.host;
    return send ? h->send_us + h->send_us_per_byte * (double)bytes
                : h->recv_us + h->recv_us_per_byte * (double)bytes;
}
static inline double op_cluster_latency(const op_cluster *c, int s, int d)
{
    return op_cluster_link_model(c, s, d).latency_us;
}
static inline double op_cluster_us_per_byte(const op_cluster *c, int s, int d)
{
    return op_cluster_link_model(c, s, d).us_per_byte;
}
/* The channel of the ordered pair s != d; -1 for s == d. */
static inline int op_cluster_chan(const op_cluster *c, int s, int d)
{
    if (s == d)
        return -1;
    const op_cluster_link *l = op_cluster_listed(c, s, d);
    if (l)
        return l->chan;
    return c->n_named_chan + s * (c->n_dev - 1) + (d < s ? d : d - 1);
}
static inline double op_cluster_transfer_us(const op_cluster *c, int s, int d, int64_t bytes)
{
    op_link_model m = op_cluster_link_model(c, s, d);
    return m.latency_us + m.us_per_byte * (double)bytes;
}
/* List (or re-list) the link s -> d with a model; it keeps a named channel
 * it already had, else it uses the pair's own channel.  O(listed links). */
op_status op_cluster_set_link(op_cluster *c, int s, int d, op_link_model m, op_error *err);

/* Presets: op_cluster_preset("v100-nvlink", 4, with_cpu, &err). */
typedef struct op_preset_info {
    const char *name;
    const char *summary; /* one line: GPU, memory, link, and the source of the numbers */
} op_preset_info;
const op_preset_info *op_cluster_presets(int *count);
op_cluster *op_cluster_preset(const char *preset, int n_gpus, int with_cpu, op_error *err);

#endif
