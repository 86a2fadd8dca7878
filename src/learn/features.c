/*
 * features.c - colocation leaders and allowed devices, as both learned
 * policies see them (learn/features.h).
 */
#include "learn/features.h"

#include <stdlib.h>

op_status learn_coloc_leaders(const op_problem *p, int *leader, op_error *err)
{
    int *first = op_malloc(sizeof *first * (size_t)(p->n_groups > 0 ? p->n_groups : 1), err);
    if (!first)
        return OP_ENOMEM;
    for (int grp = 0; grp < p->n_groups; grp++)
        first[grp] = -1;
    for (int t = 0; t < p->n; t++) {
        int op = p->g->topo[t], grp = p->group_of[op];
        leader[op] = -1;
        if (grp == OP_NONE)
            continue;
        if (first[grp] < 0)
            first[grp] = op;
        else
            leader[op] = first[grp];
    }
    free(first);
    return OP_OK;
}

void learn_allowed_row(const op_problem *p, int op, int D, unsigned char *row)
{
    int grp = p->group_of[op];
    for (int d = 0; d < D; d++)
        row[d] = (unsigned char)(d < p->nd && (grp != OP_NONE ? p->group_ok[(size_t)grp * p->nd + d]
                                                              : op_eligible(p, op, d)));
}
