/*
 * opplace/limits.h - the one rule for numbers read from files.
 *
 * Every number opplace reads is checked against these ranges when it is read
 * (graph, cluster, placement and ONNX readers, and op_graph_add_op /
 * op_cluster_new for programs that build inputs in memory).  The ranges are
 * wide enough for any real model and machine and narrow enough that every
 * sum opplace takes later stays finite and exact enough:
 *
 *   - a time (an op's time_us, a link's latency_us): 0 .. 1e12 us (11.6 days);
 *   - one byte count (output/param/temp/edge bytes, memory_bytes): 0 .. 2^50;
 *     the totals of a graph are bounded by 2^60 (checked by op_graph_finish);
 *   - a device speed: 1e-6 .. 1e6;
 *   - a link's us_per_byte: 0 .. 1e6.
 *
 * With these bounds the largest step time of any accepted input is below
 * 1e12 * 2^31 ops / 1e-6 + transfers ~ 1e28 us: finite, so no inf or nan is
 * ever computed, printed or written, and LP/ILP solvers (CLP asserts on
 * bounds of 1e100) never see an out-of-range coefficient.
 */
#ifndef OPPLACE_LIMITS_H
#define OPPLACE_LIMITS_H

#include <stdint.h>

#define OP_MAX_TIME_US 1e12
#define OP_MAX_BYTES ((int64_t)1 << 50)
#define OP_MAX_TOTAL_BYTES ((int64_t)1 << 60)
#define OP_MIN_SPEED 1e-6
#define OP_MAX_SPEED 1e6
#define OP_MAX_US_PER_BYTE 1e6
/* Devices in one cluster: channel ids (one per ordered pair) fit an int. */
#define OP_MAX_DEVICES 32768

/* 1 when x is a time opplace accepts (finite, 0 <= x <= OP_MAX_TIME_US). */
static inline int op_valid_time(double x)
{
    return x >= 0 && x <= OP_MAX_TIME_US; /* false for nan */
}

#endif
