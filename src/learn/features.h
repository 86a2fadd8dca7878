/*
 * learn/features.h - what both learned policies (SGDP, Trinity) see of a
 * problem's hard rules.  The first op of a colocation group in topological
 * order is the group's decision; the other members copy its device and are
 * not decisions.  A decision may use the devices its op (or its whole
 * colocation group: problem->group_ok) is eligible for.
 */
#ifndef OPPLACE_LEARN_FEATURES_H
#define OPPLACE_LEARN_FEATURES_H

#include "opplace/problem.h"

/* leader[op] for every op: -1 when the op decides (no colocation group,
 * or the group's first member in topological order), else that member. */
op_status learn_coloc_leaders(const op_problem *p, int *leader, op_error *err);

/* row[d] for d < D: whether op's decision may use device d (0 for d >=
 * p->nd). */
void learn_allowed_row(const op_problem *p, int op, int D, unsigned char *row);

#endif
