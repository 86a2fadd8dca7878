/*
 * trinity_anchor.c - the anchor group of every op, which Trinity's order
 * prior (placers/trinity/trinity.h) pulls the untrained partition network towards.
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
 *
 * With a reference placement (trinity_anchor_blocks, beyond the paper,
 * trinity_warm.c) the groups are cut into one block per device instead,
 * sized by the reference's work there, and the same METIS partition runs
 * on the ops the reference puts on that device, into that block's parts,
 * numbered by mean topological position.
 */
#include <math.h>
#include <metis.h>
#include <stdlib.h>
#include <string.h>

#include "placers/trinity/trinity_internal.h"

#define MAX_BLOCKS 1024 /* the most devices a policy has (trinity_config_check) */

static void anchors_by_position(const op_problem *p, int G, int *anchor)
{
    for (int i = 0; i < p->n; i++)
        anchor[i] = (int)((long)p->g->topo_pos[i] * G / p->n);
}

typedef struct csr {
    idx_t *xadj, *adj, *adjw, *vw, *part;
    size_t n_adj;
} csr;

static void csr_free(csr *c)
{
    free(c->xadj), free(c->adj), free(c->adjw), free(c->vw), free(c->part);
}

/* Both directions of every edge of the subgraph induced by ops[0..nl-1]
 * (local[op] = its index there, -1 outside; the graph's edges are already
 * merged). */
static op_status csr_build(const op_problem *p, const int *ops, const int *local, int nl,
                           csr *c, op_error *err)
{
    const op_graph *g = p->g;
    size_t m = 2 * (size_t)g->n_edges;
    c->xadj = op_calloc((size_t)nl + 1, sizeof(idx_t), err);
    c->adj = op_malloc(sizeof(idx_t) * (m + 1), err);
    c->adjw = op_malloc(sizeof(idx_t) * (m + 1), err);
    c->vw = op_malloc(sizeof(idx_t) * (size_t)nl, err);
    c->part = op_calloc((size_t)nl, sizeof(idx_t), err);
    if (!c->xadj || !c->adj || !c->adjw || !c->vw || !c->part)
        return OP_ENOMEM;
    double total_bytes = 1.0, total_work = 0.0;
    for (int e = 0; e < g->n_edges; e++)
        total_bytes += 2.0 * (double)g->edge_bytes[e];
    for (int l = 0; l < nl; l++)
        total_work += p->min_exec[ops[l]];
    double es = 1e8 / total_bytes, vs = total_work > 0 ? 1e8 / total_work : 1.0;
    size_t k = 0;
    for (int l = 0; l < nl; l++) {
        int v = ops[l];
        for (int x = g->succ_off[v]; x < g->succ_off[v + 1]; x++) {
            if (local[g->succ[x]] < 0)
                continue;
            c->adj[k] = local[g->succ[x]];
            double w = (double)g->edge_bytes[g->succ_edge[x]] * es;
            c->adjw[k++] = w < 1 ? 1 : (idx_t)w;
        }
        for (int x = g->pred_off[v]; x < g->pred_off[v + 1]; x++) {
            if (local[g->pred[x]] < 0)
                continue;
            c->adj[k] = local[g->pred[x]];
            double w = (double)g->edge_bytes[g->pred_edge[x]] * es;
            c->adjw[k++] = w < 1 ? 1 : (idx_t)w;
        }
        c->xadj[l + 1] = (idx_t)k;
        double w = p->min_exec[v] * vs;
        c->vw[l] = w < 1 ? 1 : (idx_t)w;
    }
    c->n_adj = k;
    return OP_OK;
}

/* part[l] in [0, parts) for ops[0..nl-1] (listed in topological order):
 * METIS recursive bisection of their subgraph, or by position in the list
 * when it cannot run. */
static op_status partition_ops(const op_problem *p, const int *ops, const int *local, int nl,
                               int parts, uint64_t seed, int *part, op_error *err)
{
    for (int l = 0; l < nl; l++)
        part[l] = (int)((long)l * parts / (nl > 0 ? nl : 1));
    if (parts < 2 || parts >= nl)
        return OP_OK;
    csr c = {0};
    op_status st = csr_build(p, ops, local, nl, &c, err);
    if (!st && c.n_adj > 0) {
        idx_t nv = nl, ncon = 1, nparts = parts, objval = 0;
        idx_t options[METIS_NOPTIONS];
        METIS_SetDefaultOptions(options);
        options[METIS_OPTION_SEED] = (idx_t)(seed & 0x7fffffff);
        options[METIS_OPTION_NUMBERING] = 0;
        options[METIS_OPTION_UFACTOR] = 100; /* 10% imbalance */
        int rc = METIS_PartGraphRecursive(&nv, &ncon, c.xadj, c.adj, c.vw, NULL, c.adjw,
                                          &nparts, NULL, NULL, options, &objval, c.part);
        if (rc == METIS_OK)
            for (int l = 0; l < nl; l++)
                part[l] = (int)c.part[l];
    }
    csr_free(&c);
    return st;
}

op_status trinity_anchor_groups(const op_problem *p, int G, uint64_t seed, int *anchor,
                                op_error *err)
{
    if (G < 2 || G >= p->n || p->g->n_edges == 0) {
        anchors_by_position(p, G, anchor);
        return OP_OK;
    }
    int *local = op_malloc(sizeof(int) * (size_t)p->n, err);
    if (!local)
        return OP_ENOMEM;
    for (int i = 0; i < p->n; i++)
        local[i] = i;
    op_status st = partition_ops(p, local, local, p->n, G, seed, anchor, err);
    free(local);
    return st;
}

/* ------------------------------------------------- blocks of a reference */

/* Groups per device: at least one per device the reference uses, the rest
 * by largest remainder of its share of the work; 0 when G is too small. */
static int block_sizes(const op_problem *p, int G, const int *ref, int *size)
{
    int nd = p->nd, used = 0;
    double work[MAX_BLOCKS] = {0}, total = 0.0;
    for (int i = 0; i < p->n; i++)
        if (ref[i] < 0 || ref[i] >= nd)
            return 0;
    for (int i = 0; i < p->n; i++) {
        work[ref[i]] += p->min_exec[i] + 1e-9;
        total += p->min_exec[i] + 1e-9;
    }
    for (int d = 0; d < nd; d++)
        used += work[d] > 0;
    if (used > G)
        return 0;
    int given = 0;
    double rem[MAX_BLOCKS];
    for (int d = 0; d < nd; d++) {
        double share = work[d] > 0 ? (G - used) * work[d] / total : 0.0;
        size[d] = work[d] > 0 ? 1 + (int)share : 0;
        rem[d] = work[d] > 0 ? share - (int)share : -1.0;
        given += size[d];
    }
    while (given < G) {
        int best = 0;
        for (int d = 1; d < nd; d++)
            if (rem[d] > rem[best])
                best = d;
        size[best]++, rem[best] = -1.0, given++;
    }
    return 1;
}

typedef struct part_pos {
    double pos;
    int part;
} part_pos;

static int by_pos(const void *a, const void *b)
{
    const part_pos *x = a, *y = b;
    return x->pos < y->pos ? -1 : x->pos > y->pos ? 1 : x->part - y->part;
}

/* rank[q] for the parts q in [0, size), numbered by their members' mean
 * position (empty parts last): member l (0..nl-1) is op i = member[l] (l
 * when member is NULL), in part part_of[i], at position pos[i] (l when pos
 * is NULL). */
static op_status rank_parts_by_position(int size, int nl, const int *member, const int *part_of,
                                        const int *pos, int *rank, op_error *err)
{
    part_pos *pp = op_calloc((size_t)size, sizeof *pp, err);
    double *cnt = op_calloc((size_t)size, sizeof *cnt, err);
    op_status st = pp && cnt ? OP_OK : OP_ENOMEM;
    if (!st) {
        for (int q = 0; q < size; q++)
            pp[q].part = q;
        for (int l = 0; l < nl; l++) {
            int i = member ? member[l] : l;
            pp[part_of[i]].pos += pos ? pos[i] : l, cnt[part_of[i]] += 1.0;
        }
        for (int q = 0; q < size; q++)
            pp[q].pos = cnt[q] > 0 ? pp[q].pos / cnt[q] : 1e300;
        qsort(pp, (size_t)size, sizeof *pp, by_pos);
        for (int q = 0; q < size; q++)
            rank[pp[q].part] = q;
    }
    free(pp), free(cnt);
    return st;
}

/* Device d's ops (topological order) into its block [start, start+size),
 * parts numbered by their mean topological position. */
static op_status block_anchors(const op_problem *p, const int *ref, int d, int start, int size,
                               uint64_t seed, int *ops, int *local, int *part, int *anchor,
                               op_error *err)
{
    int nl = 0;
    for (int i = 0; i < p->n; i++)
        local[i] = -1;
    for (int t = 0; t < p->n; t++) {
        int i = p->g->topo[t];
        if (ref[i] == d)
            local[i] = nl, ops[nl++] = i;
    }
    op_status st = partition_ops(p, ops, local, nl, size, seed, part, err);
    int *rank = op_malloc(sizeof(int) * (size_t)size, err);
    if (!st && !rank)
        st = OP_ENOMEM;
    if (!st)
        st = rank_parts_by_position(size, nl, NULL, part, NULL, rank, err);
    if (!st)
        for (int l = 0; l < nl; l++)
            anchor[ops[l]] = start + rank[part[l]];
    free(rank);
    return st;
}

op_status trinity_anchor_blocks(const op_problem *p, int G, uint64_t seed, const int *ref,
                                int *anchor, int *block_dev, op_error *err)
{
    int size[MAX_BLOCKS];
    if (p->nd > MAX_BLOCKS || !block_sizes(p, G, ref, size))
        return OP_OK; /* keep the plain anchors and blocks */
    int *ops = op_malloc(sizeof(int) * (size_t)p->n, err);
    int *local = op_malloc(sizeof(int) * (size_t)p->n, err);
    int *part = op_malloc(sizeof(int) * (size_t)p->n, err);
    op_status st = ops && local && part ? OP_OK : OP_ENOMEM;
    for (int d = 0, start = 0; !st && d < p->nd; start += size[d], d++) {
        for (int q = 0; q < size[d]; q++)
            block_dev[start + q] = d;
        if (size[d] > 0)
            st = block_anchors(p, ref, d, start, size[d], seed, ops, local, part, anchor, err);
    }
    free(ops), free(local), free(part);
    return st;
}

/* ------------------------------------------------ structure groups (k-means) */

/* Squared distance between two rows of width w. */
static double dist2(const double *a, const double *b, int w)
{
    double s = 0.0;
    for (int j = 0; j < w; j++)
        s += (a[j] - b[j]) * (a[j] - b[j]);
    return s;
}

op_status trinity_structure_groups(const trinity_graph *tg, int G, uint64_t seed,
                                   double deadline, int *label, op_error *err)
{
    int n = tg->n, w = tg->n_num - TRINITY_N_SCALAR, m = 0;
    if (w <= 0 || G < 1) { /* no Node2vec columns: dataflow order */
        for (int i = 0; i < n; i++)
            label[i] = G > 0 ? (int)((long)tg->p->g->topo_pos[i] * G / n) : 0;
        return OP_OK;
    }
    int *rows = op_malloc(sizeof(int) * (size_t)n, err);
    double *cen = op_calloc((size_t)G * (size_t)w, sizeof(double), err);
    double *d2 = op_malloc(sizeof(double) * (size_t)n, err);
    double *cnt = op_calloc((size_t)G, sizeof(double), err);
    int *rank = op_malloc(sizeof(int) * (size_t)G, err);
    op_status st = rows && cen && d2 && cnt && rank ? OP_OK : OP_ENOMEM;
    if (st)
        goto done;
    for (int i = 0; i < n; i++)
        if (tg->decides[i])
            rows[m++] = i;
#define EMB(i) (tg->num + (size_t)(i) * tg->n_num + TRINITY_N_SCALAR)
    /* k-means++ seeding */
    nn_rng rng;
    nn_rng_seed(&rng, seed ^ 0x6b6d65616e73ULL);
    int k0 = m < G ? m : G;
    memcpy(cen, EMB(rows[nn_rng_below(&rng, (uint64_t)m)]), sizeof(double) * (size_t)w);
    for (int l = 0; l < m; l++)
        d2[l] = dist2(EMB(rows[l]), cen, w);
    for (int c = 1; c < k0; c++) {
        double tot = 0.0;
        for (int l = 0; l < m; l++)
            tot += d2[l];
        double u = nn_rng_uniform(&rng) * tot;
        int pick = m - 1;
        for (int l = 0; l < m; l++)
            if ((u -= d2[l]) < 0) {
                pick = l;
                break;
            }
        memcpy(cen + (size_t)c * w, EMB(rows[pick]), sizeof(double) * (size_t)w);
        for (int l = 0; l < m; l++) {
            double d = dist2(EMB(rows[l]), cen + (size_t)c * w, w);
            if (d < d2[l])
                d2[l] = d;
        }
    }
    /* Lloyd's iterations (at most 25; stops at a fixed point, the deadline or Ctrl-C) */
    for (int l = 0; l < m; l++)
        label[rows[l]] = -1;
    for (int it = 0; it < 25; it++) {
        int moved = 0;
        for (int l = 0; l < m; l++) {
            int best = 0;
            double bd = INFINITY;
            for (int c = 0; c < k0; c++) {
                double d = dist2(EMB(rows[l]), cen + (size_t)c * w, w);
                if (d < bd)
                    bd = d, best = c;
            }
            moved += label[rows[l]] != best;
            label[rows[l]] = best;
        }
        if (!moved || op_interrupted() || (deadline > 0 && op_seconds_now() > deadline))
            break;
        memset(cnt, 0, sizeof(double) * (size_t)G);
        double *sum = cen; /* empty clusters keep their centre */
        for (int l = 0; l < m; l++)
            cnt[label[rows[l]]] += 1.0;
        for (int c = 0; c < k0; c++)
            if (cnt[c] > 0)
                memset(sum + (size_t)c * w, 0, sizeof(double) * (size_t)w);
        for (int l = 0; l < m; l++) {
            const double *e = EMB(rows[l]);
            double *s = sum + (size_t)label[rows[l]] * w;
            for (int j = 0; j < w; j++)
                s[j] += e[j] / cnt[label[rows[l]]];
        }
    }
#undef EMB
    /* clusters numbered by their members' mean topological position */
    if ((st = rank_parts_by_position(G, m, rows, label, tg->p->g->topo_pos, rank, err)))
        goto done;
    for (int l = 0; l < m; l++)
        label[rows[l]] = rank[label[rows[l]]];
    for (int i = 0; i < n; i++)
        if (!tg->decides[i])
            label[i] = label[tg->leader[i]];
done:
    free(rows), free(cen), free(d2), free(cnt), free(rank);
    return st;
}
