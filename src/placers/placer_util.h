/*
 * placer_util.h - small pieces many placers share.
 *
 * Colocation: a placer that decides op by op must put every member of a
 * group where the first member went; group_device tracks that choice.
 */
#ifndef OPPLACE_PLACER_UTIL_H
#define OPPLACE_PLACER_UTIL_H

#include "opplace/placer.h"

/* Devices op may use given earlier choices for its colocation group:
 * returns the forced device, or -1 if free to choose among eligible ones. */
static inline int placer_forced_device(const op_problem *p, const int *group_device, int op)
{
    int grp = p->group_of[op];
    return grp == OP_NONE ? -1 : group_device[grp];
}

/* May op go to dev (eligibility and the group's devices)? */
static inline int placer_allowed(const op_problem *p, const int *group_device, int op, int dev)
{
    int grp = p->group_of[op];
    if (grp != OP_NONE) {
        if (group_device[grp] >= 0)
            return group_device[grp] == dev;
        return p->group_ok[(size_t)grp * p->nd + dev];
    }
    return op_eligible(p, op, dev);
}

#endif
