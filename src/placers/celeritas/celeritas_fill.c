/*
 * celeritas_fill.c - memory-bounded sequential placement: walk the sequence
 * and keep putting ops on the current device until the next one does not
 * fit, then move on to the next device for good.
 *
 * This is the second step of Celeritas's Standard Evaluation (section
 * 4.2.1, with the DFS-TOPO order of 4.2.2: "place nodes on one device until
 * reaching its memory limit, then move on to the next device") and its
 * Order-Place baseline (section 6.2, on the fused graph in CPD-TOPO order).
 *
 * Details the paper leaves open: an op the current device may not run (kind,
 * pin) or that colocation sends elsewhere goes to its forced or first
 * allowed device with room without moving the current device; when the
 * devices from the current one on are full, earlier devices with room are
 * tried; when nothing has room, the best-effort fallback of
 * celeritas_place.h applies.
 */
#include <stdlib.h>

#include "placers/celeritas/celeritas_place.h"

/* First allowed device with room, scanning cur..nd-1 then 0..cur-1. */
static int first_with_room(cel_memory *m, const int *device_of, int v, int cur)
{
    int nd = m->p->nd;
    for (int s = 0; s < nd; s++) {
        int d = (cur + s) % nd;
        if (cel_memory_allowed(m, v, d) && cel_memory_fits(m, device_of, v, d))
            return d;
    }
    return -1;
}

op_status cel_place_sequential(cel_pass *ps, op_error *err)
{
    const op_problem *p = ps->p;
    cel_memory m;
    op_status st = cel_memory_init(&m, ps, err);
    if (st)
        return st;
    for (int v = 0; v < p->n; v++)
        ps->device_of[v] = -1;
    ps->n_fallback = ps->n_moved = 0;
    int cur = 0;
    for (int k = 0; k < p->n; k++) {
        int v = ps->seq[k];
        int cur_allowed = cel_memory_allowed(&m, v, cur);
        int d = first_with_room(&m, ps->device_of, v, cur);
        if (d < 0) {
            d = cel_memory_fallback(&m, v);
            ps->n_fallback++;
        } else if (cur_allowed && d != cur && d > cur) {
            cur = d; /* the current device is full: move on */
        }
        ps->device_of[v] = d;
        cel_memory_commit(&m, ps->device_of, v, d);
    }
    cel_memory_destroy(&m);
    return OP_OK;
}
