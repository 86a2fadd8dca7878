/* placer_mem.c - the conservative static memory estimate (see placer_mem.h). */
#include <stdlib.h>
#include <string.h>

#include "placers/placer_mem.h"

op_status pmem_init(pmem *m, const op_problem *p, op_error *err)
{
    memset(m, 0, sizeof *m);
    m->p = p;
    size_t nd = (size_t)p->nd, ng = (size_t)p->n_groups;
    m->cap = op_malloc(nd * sizeof *m->cap, err);
    m->used = op_calloc(nd, sizeof *m->used, err);
    m->max_temp = op_calloc(nd, sizeof *m->max_temp, err);
    m->recv = op_calloc((size_t)p->n * nd + 1, sizeof *m->recv, err);
    m->group_static = op_calloc(ng + 1, sizeof *m->group_static, err);
    m->group_temp = op_calloc(ng + 1, sizeof *m->group_temp, err);
    m->group_charged = op_calloc(ng + 1, 1, err);
    if (!m->cap || !m->used || !m->max_temp || !m->recv || !m->group_static || !m->group_temp ||
        !m->group_charged) {
        pmem_destroy(m);
        return OP_ENOMEM;
    }
    for (size_t d = 0; d < nd; d++)
        m->cap[d] = p->c->dev[d].memory_bytes;
    const op_graph *g = p->g;
    for (int i = 0; i < p->n; i++) {
        int k = p->group_of[i];
        if (k == OP_NONE)
            continue;
        m->group_static[k] += g->param_bytes[i] + g->output_bytes[i];
        if (g->temp_bytes[i] > m->group_temp[k])
            m->group_temp[k] = g->temp_bytes[i];
    }
    return OP_OK;
}

void pmem_destroy(pmem *m)
{
    free(m->cap);
    free(m->used);
    free(m->max_temp);
    free(m->recv);
    free(m->group_static);
    free(m->group_temp);
    free(m->group_charged);
    memset(m, 0, sizeof *m);
}

void pmem_reset(pmem *m)
{
    const op_problem *p = m->p;
    memset(m->used, 0, (size_t)p->nd * sizeof *m->used);
    memset(m->max_temp, 0, (size_t)p->nd * sizeof *m->max_temp);
    memset(m->recv, 0, (size_t)p->n * p->nd * sizeof *m->recv);
    memset(m->group_charged, 0, (size_t)p->n_groups);
}

/* Params, outputs and temporary of op itself (or of its whole group). */
static int64_t own_need(const pmem *m, int op, int dev)
{
    const op_graph *g = m->p->g;
    int k = m->p->group_of[op];
    int64_t stat, temp;
    if (k == OP_NONE) {
        stat = g->param_bytes[op] + g->output_bytes[op];
        temp = g->temp_bytes[op];
    } else if (!m->group_charged[k]) {
        stat = m->group_static[k];
        temp = m->group_temp[k];
    } else {
        stat = 0;
        temp = 0;
    }
    return stat + (temp > m->max_temp[dev] ? temp - m->max_temp[dev] : 0);
}

int64_t pmem_need(const pmem *m, int op, int dev, const int *device_of)
{
    const op_graph *g = m->p->g;
    int nd = m->p->nd;
    int64_t need = own_need(m, op, dev);
    for (int k = g->pred_off[op]; k < g->pred_off[op + 1]; k++) {
        int u = g->pred[k];
        if (device_of[u] < 0 || device_of[u] == dev)
            continue;
        int64_t b = g->edge_bytes[g->pred_edge[k]], have = m->recv[(size_t)u * nd + dev];
        if (b > have)
            need += b - have;
    }
    return need;
}

void pmem_commit(pmem *m, int op, int dev, const int *device_of)
{
    const op_graph *g = m->p->g;
    int nd = m->p->nd;
    m->used[dev] += own_need(m, op, dev);
    int k = m->p->group_of[op];
    int64_t temp = k == OP_NONE ? g->temp_bytes[op] : m->group_temp[k];
    if (temp > m->max_temp[dev])
        m->max_temp[dev] = temp;
    if (k != OP_NONE)
        m->group_charged[k] = 1;
    for (int e = g->pred_off[op]; e < g->pred_off[op + 1]; e++) {
        int u = g->pred[e];
        if (device_of[u] < 0 || device_of[u] == dev)
            continue;
        int64_t b = g->edge_bytes[g->pred_edge[e]], *have = &m->recv[(size_t)u * nd + dev];
        if (b > *have) {
            m->used[dev] += b - *have;
            *have = b;
        }
    }
}

int pmem_charge_all(pmem *m, const int *device_of)
{
    const op_problem *p = m->p;
    pmem_reset(m);
    for (int t = 0; t < p->n; t++) {
        int v = p->g->topo[t];
        pmem_commit(m, v, device_of[v], device_of);
    }
    for (int d = 0; d < p->nd; d++)
        if (m->used[d] > m->cap[d])
            return 0;
    return 1;
}

int pmem_roomiest(const pmem *m, int op, const unsigned char *allowed)
{
    int best = -1;
    for (int d = 0; d < m->p->nd; d++) {
        if (allowed ? !allowed[d] : !op_eligible(m->p, op, d))
            continue;
        if (best < 0 || m->cap[d] - m->used[d] > m->cap[best] - m->used[best])
            best = d;
    }
    return best;
}
