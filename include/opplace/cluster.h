/*
 * opplace/cluster.h - devices and the links between them.
 *
 * A transfer of b bytes from device s to device d takes
 *     lat[s][d] + upb[s][d] * b   microseconds
 * on channel chan[s][d].  Each channel carries one transfer at a time; every
 * ordered pair has its own channel unless links name a shared `channel`
 * (formats.md section 2).  Pairs with no listed link use the default link.
 */
#ifndef OPPLACE_CLUSTER_H
#define OPPLACE_CLUSTER_H

#include <stdint.h>

#include "opplace/error.h"

typedef struct op_device {
    char *name;
    char *kind;            /* "gpu", "cpu", ... */
    int64_t memory_bytes;  /* capacity for OOM checks */
    double speed;          /* op time = time_us[kind] / speed */
} op_device;

typedef struct op_link_model {
    double latency_us;
    double us_per_byte;
} op_link_model;

typedef struct op_cluster {
    int n_dev;
    op_device *dev;
    /* n_dev x n_dev, row = source device; the diagonal is unused */
    double *lat, *upb;
    int *chan;
    int n_chan;
    int n_named_chan;      /* channels 0..n_named_chan-1 are the links' named channels */
    char **chan_name;      /* a named channel's name, or "src->dst" */
    int has_default_link;
    op_link_model default_link;
    /* which ordered pairs were listed explicitly (1) or use the default (0) */
    unsigned char *listed;
} op_cluster;

/* A link as given in a file or by a preset. channel may be NULL. */
typedef struct op_link_spec {
    const char *src, *dst, *channel;
    double latency_us, us_per_byte;
} op_link_spec;

/* Build a cluster: devices are copied; links resolve by name.  With
 * default_link == NULL every ordered pair must be listed.  origin prefixes
 * error messages (a file name or "preset"). */
op_cluster *op_cluster_new(const op_device *devs, int n_dev, const op_link_spec *links,
                           int n_links, const op_link_model *default_link,
                           const char *origin, op_error *err);
void op_cluster_free(op_cluster *c);

int op_cluster_find(const op_cluster *c, const char *device_name);
static inline double op_cluster_transfer_us(const op_cluster *c, int s, int d, int64_t bytes)
{
    int k = s * c->n_dev + d;
    return c->lat[k] + c->upb[k] * (double)bytes;
}

/* Presets: op_cluster_preset("v100-nvlink", 4, with_cpu, &err). */
typedef struct op_preset_info {
    const char *name;
    const char *summary; /* one line: GPU, memory, link, and the source of the numbers */
} op_preset_info;
const op_preset_info *op_cluster_presets(int *count);
op_cluster *op_cluster_preset(const char *preset, int n_gpus, int with_cpu, op_error *err);

#endif
