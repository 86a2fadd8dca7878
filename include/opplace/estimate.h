/*
 * opplace/estimate.h - Celeritas's Standard Evaluation, first step (section
 * 4.2.1): estimate the graph of a large batch size from graphs of the same
 * model profiled at several small batch sizes.
 *
 * Each op (matched by name across the profiles) gets an ordinary least-
 * squares line against batch size for its output, param and temp bytes and
 * for each of its compute times; each edge (matched by its endpoints' names)
 * one for its bytes.  The lines are evaluated at the target batch size,
 * clamped at zero, and bytes rounded to the nearest integer.  Structure,
 * names and keys (type, layer, colocate, kind, device) come from the first
 * profile; every profile must have the same ops and edges.
 *
 *     const op_graph *prof[3] = {g8, g16, g32};
 *     op_graph *big = op_estimate_graph(prof, 3, 512, &err);
 *
 * Accuracy (the paper's Table 5 metric): for every op with a nonzero measured
 * value, |estimated - measured| / measured of its memory (output + param +
 * temp bytes) and of its compute time (the first time entry).
 */
#ifndef OPPLACE_ESTIMATE_H
#define OPPLACE_ESTIMATE_H

#include <stdint.h>

#include "opplace/graph.h"

/* Profiles need a batch_size each, at least two distinct values. */
op_graph *op_estimate_graph(const op_graph *const *profiles, int n_profiles, int64_t batch,
                            op_error *err);

typedef struct op_estimate_accuracy {
    int n_mem, n_time;           /* ops compared (measured value > 0) */
    double mem_mean, mem_max;    /* relative deviation of memory */
    double time_mean, time_max;  /* relative deviation of compute time */
    int mem_exact;               /* ops whose memory estimate is exact */
} op_estimate_accuracy;

/* Compares ops by name; fails if measured lacks an op of est. */
op_status op_estimate_accuracy_compute(const op_graph *est, const op_graph *measured,
                                       op_estimate_accuracy *acc, op_error *err);

#endif
