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
 *
 * Cheap cuts (cel_pass.cheap_cuts > 0; BEYOND THE PAPER, celeritas.c offers
 * it as one more candidate): the fill ends a device where the memory
 * estimate says it is full, which may fall inside a block whose large
 * activation then crosses to the next device (zoo and real CNNs: an
 * expanded activation of an inverted-residual block crossed where the
 * block's 4x smaller output was a few ops earlier).  In the spirit of the
 * paper's own min-communication breakpoints (Optimal Operation Fusion,
 * section 5.1), each device boundary is moved back to the cut of the
 * sequence that the fewest bytes cross (consumers more than one device's
 * run past the boundary left out, see cut_bytes), within a window of the
 * last 1/cheap_cuts of the device's run of the sequence (ties: the latest).
 * Boundaries are fixed one at a time, first to last: fill, move the first
 * boundary not yet fixed, fill again with it forced.  Moving a boundary
 * back only takes ops off the device it ends (its estimate can only go
 * down); the next device starts earlier, and the fill after it goes on by
 * memory as before.
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

/* One fill.  At the positions forced[0..nf-1] (ascending) the current
 * device moves on by one; elsewhere by memory.  *natural (may be NULL): the
 * first position after the last forced one where the fill moved on by
 * memory, or -1. */
static op_status fill(cel_pass *ps, const int *forced, int nf, int *natural, op_error *err)
{
    const op_problem *p = ps->p;
    cel_memory m;
    op_status st = cel_memory_init(&m, ps, err);
    if (st)
        return st;
    for (int v = 0; v < p->n; v++)
        ps->device_of[v] = -1;
    ps->n_fallback = ps->n_moved = 0;
    if (natural)
        *natural = -1;
    int cur = 0, f = 0;
    for (int k = 0; k < p->n; k++) {
        int v = ps->seq[k];
        if (f < nf && forced[f] == k) {
            f++;
            if (cur + 1 < p->nd)
                cur++;
        }
        int cur_allowed = cel_memory_allowed(&m, v, cur);
        int d = first_with_room(&m, ps->device_of, v, cur);
        if (d < 0) {
            d = cel_memory_fallback(&m, v);
            ps->n_fallback++;
        } else if (cur_allowed && d != cur && d > cur) {
            cur = d; /* the current device is full: move on */
            if (natural && *natural < 0 && f == nf)
                *natural = k;
        }
        ps->device_of[v] = d;
        cel_memory_commit(&m, ps->device_of, v, d);
    }
    cel_memory_destroy(&m);
    return OP_OK;
}

/* cut[j] (j = 0..n): bytes sent from the ops at positions < j of the
 * sequence to ops at positions >= j but before `horizon`; an op's output
 * counts once (its largest out-edge to such a consumer), as the simulator
 * sends it once per device.  Consumers at or after the horizon are left
 * out: in a training graph they are the backward ops, which a split by
 * layers runs on their forward op's device, so a saved activation does not
 * cross at the cut. */
static void cut_bytes(const cel_pass *ps, const int *pos, int horizon, int64_t *cut)
{
    const op_graph *g = ps->p->g;
    const int64_t *eb = ps->edge_bytes ? ps->edge_bytes : g->edge_bytes;
    int n = ps->p->n;
    for (int j = 0; j <= n + 1; j++)
        cut[j] = 0;
    for (int u = 0; u < n; u++) {
        int last = pos[u];
        int64_t w = 0;
        for (int j = g->succ_off[u]; j < g->succ_off[u + 1]; j++) {
            int q = pos[g->succ[j]];
            if (q >= horizon)
                continue;
            if (q > last)
                last = q;
            if (eb[g->succ_edge[j]] > w)
                w = eb[g->succ_edge[j]];
        }
        if (last > pos[u]) { /* crosses cuts pos[u]+1 .. last */
            cut[pos[u] + 1] += w;
            cut[last + 1] -= w;
        }
    }
    for (int j = 1; j <= n; j++)
        cut[j] += cut[j - 1];
}

op_status cel_place_sequential(cel_pass *ps, op_error *err)
{
    if (ps->cheap_cuts <= 0 || ps->p->nd < 2)
        return fill(ps, NULL, 0, NULL, err);
    int nd = ps->p->nd, n = ps->p->n;
    int *forced = op_malloc((size_t)nd * sizeof *forced, err);
    int *pos = op_malloc(((size_t)n + 1) * sizeof *pos, err);
    int64_t *cut = op_malloc(((size_t)n + 2) * sizeof *cut, err);
    op_status st = forced && pos && cut ? OP_OK : OP_ENOMEM;
    for (int k = 0; !st && k < n; k++)
        pos[ps->seq[k]] = k;
    int nf = 0, filled = 0;
    while (!st && nf < nd - 1) {
        int b;
        if ((st = fill(ps, forced, nf, &b, err)) || (filled = b < 0))
            break;
        int start = nf ? forced[nf - 1] : 0, len = b - start;
        int lo = b - len / ps->cheap_cuts;
        if (lo <= start)
            lo = start + 1;
        cut_bytes(ps, pos, b + len, cut);
        int best = b;
        for (int j = lo; j <= b; j++)
            if (cut[j] < cut[best] || (cut[j] == cut[best] && j > best))
                best = j;
        forced[nf++] = best;
    }
    if (!st && !filled)
        st = fill(ps, forced, nf, NULL, err);
    free(forced);
    free(pos);
    free(cut);
    return st;
}
