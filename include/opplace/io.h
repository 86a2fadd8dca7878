/*
 * opplace/io.h - reading and writing the files of formats.md.
 *
 * Readers validate to the letter of the contract and report errors that name
 * the file, the key and the line ("graph.json:14: ops[3].time_us: must be a
 * non-negative number").  Writers never leave a half-written file: they write
 * to a temporary file beside the target and rename it into place.  A path of
 * "-" means standard output for writers.
 */
#ifndef OPPLACE_IO_H
#define OPPLACE_IO_H

#include <stdio.h>

#include "opplace/cluster.h"
#include "opplace/graph.h"
#include "opplace/placement.h"
#include "opplace/simulate.h"

#define OP_FORMAT_VERSION 1

op_graph *op_graph_read(const char *path, op_error *err);
op_status op_graph_write(const op_graph *g, const char *path, op_error *err);

op_cluster *op_cluster_read(const char *path, op_error *err);
op_status op_cluster_write(const op_cluster *c, const char *path, op_error *err);

/* Metrics as stored in a placement file (formats.md section 3). */
typedef struct op_metrics {
    double step_time_us;
    double placement_seconds; /* < 0: unknown */
    int oom;
    int64_t comm_bytes;
    const int64_t *peak_mem;  /* per device */
} op_metrics;

/* Placements refer to ops and devices by name, so reading needs both. */
op_status op_placement_read(const char *path, const op_graph *g, const op_cluster *c,
                            op_placement *out, op_error *err);
op_status op_placement_write(const op_placement *pl, const op_graph *g, const op_cluster *c,
                             const op_metrics *m, const char *path, op_error *err);
/* The "metrics" object alone, as `opplace simulate --json` prints it. */
void op_metrics_write_json(FILE *f, const op_metrics *m, const op_cluster *c);

/* Chrome/Perfetto trace-event JSON: one track per device and per channel,
 * plus a memory counter per device. */
op_status op_trace_write(const op_sim_trace *t, const op_problem *p, const char *path,
                         op_error *err);

#endif
