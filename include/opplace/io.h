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
    /* A proven lower bound on the step (opplace/bound.h; <= 0: none, and
     * the keys below are not written) and the method that proved it:
     * written as lower_bound_us, lower_bound_method, certified_gap
     * ((step - bound) / step) and proven_optimal (docs/formats.md). */
    double bound_us;
    const char *bound_method;
} op_metrics;

/* Placements refer to ops and devices by name, so reading needs both. */
op_status op_placement_read(const char *path, const op_graph *g, const op_cluster *c,
                            op_placement *out, op_error *err);
op_status op_placement_write(const op_placement *pl, const op_graph *g, const op_cluster *c,
                             const op_metrics *m, const char *path, op_error *err);
/* The "metrics" object alone, as `opplace simulate --json` prints it. */
void op_metrics_write_json(FILE *f, const op_metrics *m, const op_cluster *c);

/* ONNX import (src/io/onnx_import.c): a forward graph from an .onnx model.
 * One op per node; an edge from the node that produces a tensor to each node
 * that consumes it, of the tensor's size.  Sizes come from the shapes in the
 * model's value_info, graph inputs/outputs and initializers, so run ONNX
 * shape inference first (onnx.shape_inference.infer_shapes; torch.onnx.export
 * already does).  A tensor with no shape falls back to the size of its
 * node's largest input (counted in the report; op_onnx_import warns on
 * stderr); symbolic dimensions count as 1.  An op's param_bytes are the
 * initializers (weights) it reads, each counted once, at its first reader.
 * Time: the roofline model of opplace/profile.h on `profile` (NULL: "v100")
 * from FLOPs of Conv/ConvTranspose/Gemm/MatMul from shapes, one FLOP per
 * output element for other ops, and bytes read + written.  A file that is not
 * a well-formed ONNX model (truncated, another format) is OP_EINPUT. */
typedef struct op_onnx_report {
    int nodes, initializers;
    int missing_shapes;   /* node outputs with no shape: sizes were guessed */
    int symbolic_dims;    /* dimensions given by name (dim_param), taken as 1 */
    int subgraphs_skipped; /* If/Loop/Scan bodies are not expanded */
} op_onnx_report;
op_graph *op_onnx_import_report(const char *path, const char *profile, op_onnx_report *rep,
                                op_error *err);
op_graph *op_onnx_import(const char *path, const char *profile, op_error *err);

/* Chrome/Perfetto trace-event JSON: one track per device and per channel,
 * plus a memory counter per device. */
op_status op_trace_write(const op_sim_trace *t, const op_problem *p, const char *path,
                         op_error *err);

#endif
