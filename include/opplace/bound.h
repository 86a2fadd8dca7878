/*
 * opplace/bound.h - a proven lower bound on the step time (formats.md 5):
 * no placement and order of the problem that fits in memory simulates to a
 * shorter step.  Used by `opplace bound`, and meant for `place` and the
 * HTML report to show the gap between an answer and what is provable.
 *
 * Methods (each valid alone; the bound is their maximum):
 *   trivial    formats.md 5.6: max(critical path, total work / total speed)
 *   energetic  for every set A = {ops with head >= h and tail >= t} (head,
 *              tail: longest compute-only paths before and after the op at
 *              the fastest eligible speed), A's work must be done between
 *              h and T - t: T >= h + t + work(A) / total speed
 *   one-machine  a colocation group runs on one device, one op at a time:
 *              an op's head is at least the least makespan, on one machine
 *              with release dates = heads, of its ancestors in its group
 *              (tails likewise over descendants), propagated along the
 *              edges so each group's serialised work pushes what follows;
 *              then the longest head + time + tail, per group Jackson's
 *              preemptive one-machine bound (release head, delivery tail)
 *              on the group's best device, and the energetic sets over
 *              these heads and tails
 *   transfer   one-machine's heads and tails with one more rule at each
 *              join: an input either runs on the op's device (the local
 *              inputs one at a time) or sends its tensor (at least the
 *              cluster's least latency + bytes x least us/byte):
 *              head(v) >= min over local sets L of max(makespan(L), the
 *              latest arrival of the others); tails likewise
 *   lp         the LP relaxation of placement + precedence + per-device load
 *              (fractional devices, no transfers) with the memory that is
 *              surely resident all step: sum of param_bytes <= memory_bytes
 *              per device, and no op on a device its own params + output +
 *              temporaries overflow (memory-forced splits)
 *   ilp        graphs of at most 60 ops: Pesto's ILP on the original graph
 *              (pesto_ilp.c, no memory rows) and CBC's proven bound; every
 *              simulated schedule is a solution of that model (its one
 *              transfer per edge is never longer than the simulator's one
 *              per source op and device, and its congestion rows are a
 *              subset of the simulator's channel rule)
 */
#ifndef OPPLACE_BOUND_H
#define OPPLACE_BOUND_H

#include "opplace/problem.h"

typedef struct op_bound {
    double lower_bound_us; /* the best of the methods below */
    const char *method;    /* the method that gave it */
    /* each method's bound; 0: not run */
    double trivial_us, energetic_us, one_machine_us, transfer_us, lp_us, ilp_us;
    int memory_rows;       /* the LP used memory rows (some device cannot hold all params) */
    int no_fit;            /* the memory rows are infeasible: no placement fits; the bound
                              then holds for every placement, fitting or not */
} op_bound;

/* Compute the bound within about `seconds` (<= 0: 10) of wall time; the LP
 * and ILP stop at Ctrl-C too.  A method cut short contributes what it
 * proved (nothing, at worst). */
op_status op_lower_bound(const op_problem *p, double seconds, op_bound *b, op_error *err);

/* The trivial, energetic, one-machine and transfer bounds only: no solver, no
 * child process, about a second at most on graphs of 10^5 ops.  What `place` and the HTML
 * report show; `opplace bound` tries the LP and ILP too. */
op_status op_lower_bound_quick(const op_problem *p, op_bound *b, op_error *err);

/* The bound a placement run affords before it searches (`place`): the
 * quick methods, and on graphs small enough for the exact model (at most
 * OP_EXACT_MAX_OPS ops) the LP and the ILP within `seconds`.  Raises
 * p->proven_bound_us (and proven_method) when it proves more; b (may be
 * NULL) receives every method's value. */
op_status op_problem_prove(op_problem *p, double seconds, op_bound *b, op_error *err);

/* Graphs of at most this many ops get the ILP (the bound's, and the exact
 * solve auto and pesto try first). */
#define OP_EXACT_MAX_OPS 60

/* (step - bound) / step, 0 when step <= 0. */
double op_bound_gap(double step_us, double bound_us);

#endif
