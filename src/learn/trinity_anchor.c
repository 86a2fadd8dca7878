/*
 * trinity_anchor.c - the anchor group of every op, which Trinity's order
 * prior (opplace/trinity.h) pulls the untrained partition network towards.
 * Not in the paper.
 *
 * Anchors are a METIS recursive-bisection partition (Karypis and Kumar
 * 1997, METIS_PartGraphRecursive) of the undirected op graph into G parts,
 * vertices weighted by compute time and edges by bytes: each anchor is a
 * cheaply-cut cluster of about 1/G of the work, and the numbering is
 * hierarchical, so parts [0, G/2) and [G/2, G) are a balanced min-cut
 * bisection, and so on down.  Contiguous runs of groups are therefore good
 * device blocks, which the schedule prior (trinity_policy.c) exploits.
 * When METIS cannot run (G >= n, or it fails) the anchor is the op's
 * topological position scaled to [0, G).  Deterministic for a seed.
 */
#include <metis.h>
#include <stdlib.h>
#include <string.h>

#include "learn/trinity_internal.h"

static void anchors_by_position(const op_problem *p, int G, int *anchor)
{
    for (int i = 0; i < p->n; i++)
        anchor[i] = (int)((long)p->g->topo_pos[i] * G / p->n);
}

typedef struct csr {
    idx_t *xadj, *adj, *adjw, *vw, *part;
} csr;

static void csr_free(csr *c)
{
    free(c->xadj), free(c->adj), free(c->adjw), free(c->vw), free(c->part);
}

/* Both directions of every edge (the graph's edges are already merged). */
static op_status csr_build(const op_problem *p, csr *c, op_error *err)
{
    const op_graph *g = p->g;
    int n = p->n;
    size_t m = 2 * (size_t)g->n_edges;
    c->xadj = op_calloc((size_t)n + 1, sizeof(idx_t), err);
    c->adj = op_malloc(sizeof(idx_t) * (m + 1), err);
    c->adjw = op_malloc(sizeof(idx_t) * (m + 1), err);
    c->vw = op_malloc(sizeof(idx_t) * (size_t)n, err);
    c->part = op_calloc((size_t)n, sizeof(idx_t), err);
    if (!c->xadj || !c->adj || !c->adjw || !c->vw || !c->part)
        return OP_ENOMEM;
    double total_bytes = 1.0, total_work = 0.0;
    for (int e = 0; e < g->n_edges; e++)
        total_bytes += 2.0 * (double)g->edge_bytes[e];
    for (int i = 0; i < n; i++)
        total_work += p->min_exec[i];
    double es = 1e8 / total_bytes, vs = total_work > 0 ? 1e8 / total_work : 1.0;
    size_t k = 0;
    for (int v = 0; v < n; v++) {
        for (int x = g->succ_off[v]; x < g->succ_off[v + 1]; x++, k++) {
            c->adj[k] = g->succ[x];
            double w = (double)g->edge_bytes[g->succ_edge[x]] * es;
            c->adjw[k] = w < 1 ? 1 : (idx_t)w;
        }
        for (int x = g->pred_off[v]; x < g->pred_off[v + 1]; x++, k++) {
            c->adj[k] = g->pred[x];
            double w = (double)g->edge_bytes[g->pred_edge[x]] * es;
            c->adjw[k] = w < 1 ? 1 : (idx_t)w;
        }
        c->xadj[v + 1] = (idx_t)k;
        double w = p->min_exec[v] * vs;
        c->vw[v] = w < 1 ? 1 : (idx_t)w;
    }
    return OP_OK;
}

op_status trinity_anchor_groups(const op_problem *p, int G, uint64_t seed, int *anchor,
                                op_error *err)
{
    if (G < 2 || G >= p->n || p->g->n_edges == 0) {
        anchors_by_position(p, G, anchor);
        return OP_OK;
    }
    csr c = {0};
    op_status st = csr_build(p, &c, err);
    if (!st) {
        idx_t nv = p->n, ncon = 1, nparts = G, objval = 0;
        idx_t options[METIS_NOPTIONS];
        METIS_SetDefaultOptions(options);
        options[METIS_OPTION_SEED] = (idx_t)(seed & 0x7fffffff);
        options[METIS_OPTION_NUMBERING] = 0;
        options[METIS_OPTION_UFACTOR] = 100; /* 10% imbalance */
        int rc = METIS_PartGraphRecursive(&nv, &ncon, c.xadj, c.adj, c.vw, NULL, c.adjw,
                                          &nparts, NULL, NULL, options, &objval, c.part);
        if (rc == METIS_OK)
            for (int i = 0; i < p->n; i++)
                anchor[i] = (int)c.part[i];
        else
            anchors_by_position(p, G, anchor);
    }
    csr_free(&c);
    return st;
}
