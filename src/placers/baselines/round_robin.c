/*
 * round_robin.c - deal ops to devices in topological order, one each in turn.
 *
 * A deliberately naive baseline that exercises every path of the pipeline
 * (transfers on all channels).  Ineligible devices are skipped; colocated
 * ops follow the first member of their group.  It ignores memory.
 */
#include <stdlib.h>

#include "placers/placer_util.h"

static op_status place_round_robin(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    const op_problem *p = ctx->p;
    int *group_device = op_malloc((size_t)p->n_groups * sizeof(int) + 1, err);
    if (!group_device)
        return OP_ENOMEM;
    for (int k = 0; k < p->n_groups; k++)
        group_device[k] = -1;
    int next = 0;
    for (int t = 0; t < p->n; t++) {
        int op = p->g->topo[t];
        int d = placer_forced_device(p, group_device, op);
        for (int tries = 0; d < 0 && tries < p->nd; tries++) {
            int cand = (next + tries) % p->nd;
            if (placer_allowed(p, group_device, op, cand)) {
                d = cand;
                next = (cand + 1) % p->nd;
            }
        }
        out->device_of[op] = d; /* problem init guarantees some device is allowed */
        if (p->group_of[op] != OP_NONE)
            group_device[p->group_of[op]] = d;
    }
    free(group_device);
    return OP_OK;
}

const op_placer op_placer_round_robin = {
    .name = "round-robin",
    .summary = "ops dealt to devices in turn, in topological order (ignores memory)",
    .source = "baseline",
    .place = place_round_robin,
};
