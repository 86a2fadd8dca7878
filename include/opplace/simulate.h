/*
 * opplace/simulate.h - the discrete-event simulator that judges every placer.
 *
 * It implements formats.md section 5 to the letter: one op at a time per
 * device, first-ready-first (ties by op index) or a given per-device order;
 * one transfer per (source op, destination device) carrying the largest
 * edge's bytes; FIFO channels (ties by source op index, then destination
 * device index), optionally shared between links; compute and transfers
 * overlap; a per-device memory timeline with releases before allocations at
 * equal times; and the optional rules 5.7 (a device's dispatch_us before
 * each op) and 5.8 (devices that share compute progress at a rate set by
 * how many of their group compute; finishes are recomputed at each change).
 * Clusters without them take exactly the original code path.
 *
 * Set-up and run are split (as in ggml): op_sim_new allocates every work
 * array once for a problem, and op_sim_run does no allocation, so placers and
 * RL training can call it thousands of times.
 *
 *     op_sim *s = op_sim_new(&prob, &err);
 *     op_sim_result r;
 *     op_sim_result_init(&r, &prob, &err);
 *     op_sim_run(s, &placement, &r, NULL, &err);
 *     printf("%.1f us\n", r.step_time_us);
 */
#ifndef OPPLACE_SIMULATE_H
#define OPPLACE_SIMULATE_H

#include <stdint.h>

#include "opplace/placement.h"
#include "opplace/problem.h"

typedef struct op_sim_result {
    int nd, n_chan;
    double step_time_us;
    int oom;                  /* some device's peak exceeds its memory */
    int64_t comm_bytes;       /* total bytes of all transfers */
    int n_transfers;
    double *busy_us;          /* per device: sum of op execution times */
    int64_t *peak_mem;        /* per device */
    double *chan_busy_us;     /* per channel */
    int64_t *chan_bytes;      /* per channel */
    int cut_off;              /* the run stopped at the cutoff: step_time_us is
                                 INFINITY and the other fields are partial */
} op_sim_result;

/* A full record of one run, for traces and reports. */
typedef struct op_sim_transfer {
    int src_op, dst_dev, chan;
    int64_t bytes;
    double issue_us, start_us, end_us;
} op_sim_transfer;

typedef struct op_sim_mem_point {
    int dev;
    double t_us;
    int64_t bytes; /* level on dev after all changes at t_us */
} op_sim_mem_point;

typedef struct op_sim_trace {
    int n_ops;
    double *start_us, *finish_us; /* per op */
    int *dev;                     /* per op */
    int n_transfers;
    op_sim_transfer *transfers;   /* in order of start */
    int n_mem, cap_mem;
    op_sim_mem_point *mem;        /* memory timeline, time-ordered */
} op_sim_trace;

typedef struct op_sim op_sim;

op_sim *op_sim_new(const op_problem *p, op_error *err);
void op_sim_free(op_sim *s);

op_status op_sim_result_init(op_sim_result *r, const op_problem *p, op_error *err);
void op_sim_result_destroy(op_sim_result *r);
op_status op_sim_trace_init(op_sim_trace *t, const op_problem *p, op_error *err);
void op_sim_trace_destroy(op_sim_trace *t);

/* Simulate one step.  trace may be NULL.  Fails (OP_EINPUT) if the placement
 * is invalid for the problem or its order deadlocks. */
op_status op_sim_run(op_sim *s, const op_placement *pl, op_sim_result *r, op_sim_trace *trace,
                     op_error *err);

/* Incremental evaluation.  op_sim_record simulates a base placement (FIFO,
 * no order) and keeps up to max_checkpoints snapshots of the run.  Then
 * op_sim_run_changed evaluates a placement that differs from the base in a
 * few ops by resuming from the latest snapshot those ops cannot have
 * influenced: the result is identical to op_sim_run's, typically in a
 * fraction of the time.  Record again after accepting a change. */
op_status op_sim_record(op_sim *s, const op_placement *base, int max_checkpoints,
                        op_sim_result *r, op_error *err);
op_status op_sim_run_changed(op_sim *s, const op_placement *pl, op_sim_result *r,
                             op_error *err);

/* Bytes above capacity summed over devices (0 when the placement fits):
 * how far from fitting a simulated placement is. */
double op_sim_overflow_bytes(const op_problem *p, const op_sim_result *r);

/* The ranking of simulated placements every placer shares: one that fits
 * (overflow 0) first, then the smaller overflow (the best-effort answer
 * closest to running: the step time of a run that cannot happen is no
 * criterion), then the shorter step.  Nonzero when (over_a, step_a) ranks
 * strictly before (over_b, step_b). */
static inline int op_sim_ranks_before(double over_a, double step_a, double over_b,
                                      double step_b)
{
    return over_a < over_b || (over_a == over_b && step_a < step_b);
}

/* Stop runs early once the step time cannot be below cutoff_us (0: never).
 * A search that only needs to know whether a candidate beats its incumbent
 * sets the incumbent's step time here; rejected candidates then cost only
 * the simulated time up to the incumbent's finish. */
void op_sim_set_cutoff(op_sim *s, double cutoff_us);

/* Convenience: build a simulator, run once, free it. */
op_status op_simulate(const op_problem *p, const op_placement *pl, op_sim_result *r,
                      op_sim_trace *trace, op_error *err);

#endif
