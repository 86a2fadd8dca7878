/*
 * opplace/problem.h - a graph bound to a cluster: the placement problem.
 *
 * Binding resolves everything that depends on both: each op's execution time
 * on each device (time_us of the device's kind / speed, or OP_INELIGIBLE when
 * the op's kind, per-kind times or device pin rule the device out), the
 * colocation groups as member lists, and the lower bound of formats.md 5.6.
 * Placers and the simulator read only this structure, so a rule about where
 * an op may run lives in one place.
 */
#ifndef OPPLACE_PROBLEM_H
#define OPPLACE_PROBLEM_H

#include <math.h>
#include <stdint.h>

#include "opplace/cluster.h"
#include "opplace/graph.h"
#include "opplace/placement.h"

#define OP_INELIGIBLE INFINITY

typedef struct op_problem {
    const op_graph *g;
    const op_cluster *c;
    int n, nd;
    double *exec;       /* n x nd: microseconds, or OP_INELIGIBLE */
    double *min_exec;   /* per op: fastest eligible execution time */
    double *work;       /* per op: min over eligible devices of exec * speed */
    /* colocation groups (graph's colocate names), CSR over member ops */
    int n_groups;
    int *group_off, *group_ops;
    /* per op: its group, or OP_NONE */
    const int *group_of;
    /* per group: devices every member may run on (n_groups x nd, 0/1) */
    unsigned char *group_ok;
    double critical_path_us; /* longest path of min_exec, no communication */
    double total_work_us;    /* sum of work */
    double total_speed;
    double lower_bound_us;   /* max(critical path, total work / total speed) */
    /* The best lower bound on the step proven for this problem so far
     * (opplace/bound.h): op_problem_init sets lower_bound_us ("trivial"),
     * op_problem_prove raises it.  A search stops as soon as its incumbent
     * reaches it (op_problem_at_bound): nothing that fits is faster. */
    double proven_bound_us;
    const char *proven_method; /* the method that proved it (a static string) */
} op_problem;

/* Fails with OP_EINPUT if a pinned device is unknown, OP_EINFEASIBLE if some
 * op (or colocation group) has no eligible device. */
op_status op_problem_init(op_problem *p, const op_graph *g, const op_cluster *c, op_error *err);
void op_problem_destroy(op_problem *p);

/* Relative tolerance of op_problem_at_bound: solver bounds are rounded down
 * by 1e-7 (bound.h), and a step that close to one is optimal for any use. */
#define OP_AT_BOUND_TOL 1e-6

/* Is a step of step_us with this memory overflow proven optimal, i.e. does
 * it fit and reach the proven bound?  Every search stops there. */
static inline int op_problem_at_bound(const op_problem *p, double step_us, double overflow)
{
    return overflow <= 0 && p->proven_bound_us > 0 &&
           step_us <= p->proven_bound_us * (1 + OP_AT_BOUND_TOL);
}

static inline int op_eligible(const op_problem *p, int op, int dev)
{
    return p->exec[(size_t)op * p->nd + dev] != OP_INELIGIBLE;
}
/* May op run on dev: eligible there, and its colocation group (if any) may
 * be there as a whole (every member eligible). */
static inline int op_allowed(const op_problem *p, int op, int dev)
{
    int grp = p->group_of[op];
    return op_eligible(p, op, dev) && (grp == OP_NONE || p->group_ok[(size_t)grp * p->nd + dev]);
}
static inline double op_exec_us(const op_problem *p, int op, int dev)
{
    return p->exec[(size_t)op * p->nd + dev];
}

/* Check a placement against the problem's hard rules (every op on an eligible
 * device, colocation groups together, a valid order if present). */
op_status op_problem_check_placement(const op_problem *p, const op_placement *pl,
                                     op_error *err);

#endif
