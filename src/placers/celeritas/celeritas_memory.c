/*
 * celeritas_memory.c - the memory check of the Celeritas placement passes
 * (Algorithm 2's "memory check" and Order-Place's fill, the colocation rule
 * of section 6.1 and the best-effort fallback) on placer_mem.h's liveness
 * estimate, and the memory view of a fused graph that the estimate reads
 * (celeritas_place.h describes both).
 *
 * The paper charges each op's whole footprint for the whole step (Ava_m
 * only decreases); that sum is a bound but far above the simulated peak of
 * a training graph, whose activations and gradients die long before the
 * step ends, so it refused placements that fit (and, once nothing fit by
 * the sum, the fallback placed blindly and ran out of memory).
 */
#include <stdlib.h>
#include <string.h>

#include "placers/celeritas/celeritas_place.h"
#include "placers/placer_util.h"

/* ------------------------------------------------------ the memory check */

op_status cel_memory_init(cel_memory *m, const cel_pass *ps, op_error *err)
{
    const op_problem *p = ps->p;
    memset(m, 0, sizeof *m);
    m->p = p;
    m->group_device = op_malloc(((size_t)p->n_groups + 1) * sizeof *m->group_device, err);
    if (!m->group_device)
        return OP_ENOMEM;
    op_status st = pmem_init(&m->live, ps->mem_p ? ps->mem_p : p, ps->slots ? ps->slots : ps->seq, ps->margin, err);
    if (st) {
        free(m->group_device);
        m->group_device = NULL;
        return st;
    }
    for (int k = 0; k < p->n_groups; k++)
        m->group_device[k] = -1;
    return OP_OK;
}

void cel_memory_destroy(cel_memory *m)
{
    if (m->group_device)
        pmem_destroy(&m->live);
    free(m->group_device);
    memset(m, 0, sizeof *m);
}

int cel_memory_allowed(const cel_memory *m, int v, int d)
{
    return placer_allowed(m->p, m->group_device, v, d);
}

int cel_memory_fits(cel_memory *m, const int *device_of, int v, int d)
{
    return pmem_fits(&m->live, v, d, device_of);
}

void cel_memory_commit(cel_memory *m, const int *device_of, int v, int d)
{
    pmem_commit(&m->live, v, d, device_of);
    int grp = m->p->group_of[v];
    if (grp != OP_NONE && m->group_device[grp] < 0)
        m->group_device[grp] = d;
}

int cel_memory_fallback(const cel_memory *m, int v)
{
    int best = -1;
    for (int d = 0; d < m->p->nd; d++)
        if (cel_memory_allowed(m, v, d) &&
            (best < 0 || pmem_room(&m->live, d) > pmem_room(&m->live, best)))
            best = d;
    return best; /* problem init guarantees some device is allowed */
}

/* ------------------------------------------------ the fused graph's view */

/* Members of each fused op in the fine graph's topological order (CSR). */
static op_status members_in_order(const op_graph *fine, const op_coarse_map *map, int nc,
                                  int **off_out, int **ops_out, op_error *err)
{
    int *off = op_calloc((size_t)nc + 2, sizeof *off, err);
    int *ops = op_malloc(((size_t)fine->n_ops + 1) * sizeof *ops, err);
    if (!off || !ops) {
        free(off);
        free(ops);
        return OP_ENOMEM;
    }
    for (int v = 0; v < fine->n_ops; v++)
        off[map->group_of[v] + 2]++;
    for (int k = 0; k < nc; k++)
        off[k + 2] += off[k + 1];
    for (int t = 0; t < fine->n_ops; t++) {
        int v = fine->topo[t];
        ops[off[map->group_of[v] + 1]++] = v;
    }
    *off_out = off; /* off[k] .. off[k+1]-1 now index group k's members */
    *ops_out = ops;
    return OP_OK;
}

/* Output and temporary of fused op k from its members mem[0..n): a level
 * over the member positions (diff array in level[0..n]). */
static void fused_bytes(const op_graph *fine, const op_coarse_map *map, int k, const int *mem,
                        int n, int *local, int64_t *level, int64_t *out, int64_t *temp)
{
    int64_t escaping = 0;
    for (int i = 0; i < n; i++)
        local[mem[i]] = i;
    for (int i = 0; i <= n; i++)
        level[i] = 0;
    for (int i = 0; i < n; i++) {
        int v = mem[i], end = i, leaves = 0;
        for (int j = fine->succ_off[v]; j < fine->succ_off[v + 1]; j++) {
            int w = fine->succ[j];
            if (map->group_of[w] != k)
                leaves = 1;
            else if (local[w] > end)
                end = local[w];
        }
        if (leaves) {
            end = n - 1;
            escaping += fine->output_bytes[v];
        }
        level[i] += fine->output_bytes[v];
        level[end + 1] -= fine->output_bytes[v];
    }
    int64_t run = 0, peak = 0;
    for (int i = 0; i < n; i++) {
        run += level[i];
        int64_t at = run + fine->temp_bytes[mem[i]];
        if (at > peak)
            peak = at;
    }
    *out = escaping;
    *temp = peak > escaping ? peak - escaping : 0;
}

op_status cel_mem_view_init(cel_mem_view *v, const op_graph *fine, const op_coarse_map *map,
                            const op_problem *coarse, const int64_t *edge_bytes, op_error *err)
{
    memset(v, 0, sizeof *v);
    int nc = coarse->n;
    int *off = NULL, *ops = NULL;
    int *local = op_malloc(((size_t)fine->n_ops + 1) * sizeof *local, err);
    int64_t *level = op_malloc(((size_t)fine->n_ops + 2) * sizeof *level, err);
    v->output_bytes = op_malloc(((size_t)nc + 1) * sizeof *v->output_bytes, err);
    v->temp_bytes = op_malloc(((size_t)nc + 1) * sizeof *v->temp_bytes, err);
    op_status st = !local || !level || !v->output_bytes || !v->temp_bytes
                       ? OP_ENOMEM
                       : members_in_order(fine, map, nc, &off, &ops, err);
    for (int k = 0; !st && k < nc; k++)
        fused_bytes(fine, map, k, ops + off[k], off[k + 1] - off[k], local, level,
                    &v->output_bytes[k], &v->temp_bytes[k]);
    free(local);
    free(level);
    free(off);
    free(ops);
    if (st) {
        cel_mem_view_destroy(v);
        return st;
    }
    v->g = *coarse->g;
    v->g.output_bytes = v->output_bytes;
    v->g.temp_bytes = v->temp_bytes;
    v->g.edge_bytes = (int64_t *)edge_bytes;
    v->p = *coarse;
    v->p.g = &v->g;
    return OP_OK;
}

void cel_mem_view_destroy(cel_mem_view *v)
{
    free(v->output_bytes);
    free(v->temp_bytes);
    memset(v, 0, sizeof *v);
}
