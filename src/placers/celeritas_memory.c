/*
 * celeritas_memory.c - the memory book-keeping of the Celeritas placement
 * passes (Algorithm 2's Ava_m, the colocation rule of section 6.1 and the
 * best-effort fallback); the accounting is described in celeritas_place.h.
 */
#include <stdlib.h>
#include <string.h>

#include "placers/celeritas_place.h"
#include "placers/placer_util.h"

op_status cel_memory_init(cel_memory *m, const op_problem *p, const int64_t *mem,
                          const int64_t *edge_bytes, op_error *err)
{
    memset(m, 0, sizeof *m);
    m->p = p;
    m->mem = mem;
    m->edge_bytes = edge_bytes ? edge_bytes : p->g->edge_bytes;
    m->avail = op_malloc((size_t)p->nd * sizeof *m->avail, err);
    m->group_mem = op_calloc((size_t)p->n_groups + 1, sizeof *m->group_mem, err);
    m->group_device = op_malloc(((size_t)p->n_groups + 1) * sizeof *m->group_device, err);
    if (!m->avail || !m->group_mem || !m->group_device) {
        cel_memory_destroy(m);
        return OP_ENOMEM;
    }
    for (int d = 0; d < p->nd; d++)
        m->avail[d] = p->c->dev[d].memory_bytes;
    for (int k = 0; k < p->n_groups; k++)
        m->group_device[k] = -1;
    for (int v = 0; v < p->n; v++)
        if (p->group_of[v] != OP_NONE)
            m->group_mem[p->group_of[v]] += mem[v];
    return OP_OK;
}

void cel_memory_destroy(cel_memory *m)
{
    free(m->avail);
    free(m->group_mem);
    free(m->group_device);
    memset(m, 0, sizeof *m);
}

int64_t cel_memory_charge(const cel_memory *m, const int *device_of, int v, int d)
{
    const op_problem *p = m->p;
    const op_graph *g = p->g;
    int grp = p->group_of[v];
    int64_t charge = grp == OP_NONE ? m->mem[v] : m->group_device[grp] < 0 ? m->group_mem[grp] : 0;
    for (int j = g->pred_off[v]; j < g->pred_off[v + 1]; j++)
        if (device_of[g->pred[j]] != d)
            charge += m->edge_bytes[g->pred_edge[j]];
    return charge;
}

int cel_memory_allowed(const cel_memory *m, int v, int d)
{
    return placer_allowed(m->p, m->group_device, v, d);
}

void cel_memory_commit(cel_memory *m, const int *device_of, int v, int d)
{
    m->avail[d] -= cel_memory_charge(m, device_of, v, d);
    int grp = m->p->group_of[v];
    if (grp != OP_NONE && m->group_device[grp] < 0)
        m->group_device[grp] = d;
}

int cel_memory_fallback(const cel_memory *m, int v)
{
    int best = -1;
    for (int d = 0; d < m->p->nd; d++)
        if (cel_memory_allowed(m, v, d) && (best < 0 || m->avail[d] > m->avail[best]))
            best = d;
    return best; /* problem init guarantees some device is allowed */
}
