/*
 * metis.c - k-way graph partitioning with the real METIS library
 * (Karypis and Kumar 1997, METIS_PartGraphKway), the "Metis" baseline of
 * the Celeritas paper (section 6.2): minimize the bytes cut between
 * devices while balancing compute, then let each device run its ops
 * first-ready-first (no order is produced).
 *
 * Graph given to METIS: one vertex per op, except that each colocation
 * group is contracted into one vertex (so a group is never split); vertex
 * weight = compute time at speed 1 (work), edge weight = bytes of the
 * (merged, undirected) edges.  Both are scaled into METIS's 32-bit idx_t
 * range (totals at most 10^8, every weight at least 1).  Part k becomes
 * device k, with target part weights proportional to device speed;
 * METIS_UFACTOR (30, METIS's own default for k-way; formerly `--ufactor`)
 * is METIS's load imbalance tolerance in thousandths: the heaviest part
 * may weigh 1.03 x its target.
 *
 * METIS knows neither pins nor memory, so both are repaired afterwards:
 * a vertex on a device it may not use moves to the least-loaded allowed
 * device; while a device exceeds its memory (placer_mem.h's liveness
 * estimate over the graph's topological order) the ops holding the most
 * bytes at its peak move to the allowed device with the most room
 * (pmem_repair).  The simulator then checks the result; if it runs out of
 * memory, the repair runs again with a tighter margin (pmem_place_checked;
 * METIS itself runs once).  If repair fails: OP_EINFEASIBLE, or the
 * repaired placement with best_effort.  Repairs may break the balance
 * METIS found.
 */
#include <metis.h>
#include <stdlib.h>
#include <string.h>

#include "placers/placer_mem.h"
#include "placers/placer_util.h"

#define METIS_UFACTOR 30 /* load imbalance tolerance, thousandths (see above) */

typedef struct metis_graph {
    idx_t nv;
    idx_t *xadj, *adjncy, *vwgt, *adjwgt, *part;
    int *vertex_of; /* per op */
    int *rep;       /* per vertex: one member op */
    double *work;   /* per vertex: compute at speed 1 */
} metis_graph;

static void metis_graph_free(metis_graph *m)
{
    free(m->xadj);
    free(m->adjncy);
    free(m->vwgt);
    free(m->adjwgt);
    free(m->part);
    free(m->vertex_of);
    free(m->rep);
    free(m->work);
}

typedef struct vpair {
    int a, b;
    int64_t bytes;
} vpair;

static int by_pair(const void *x, const void *y)
{
    const vpair *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

/* Vertices: one per colocation group, one per other op. */
static op_status contract(const op_problem *p, metis_graph *m, op_error *err)
{
    m->vertex_of = op_malloc((size_t)p->n * sizeof(int) + 1, err);
    m->rep = op_malloc((size_t)p->n * sizeof(int) + 1, err);
    m->work = op_calloc((size_t)p->n + 1, sizeof(double), err);
    int *group_vertex = op_malloc((size_t)p->n_groups * sizeof(int) + 1, err);
    if (!m->vertex_of || !m->rep || !m->work || !group_vertex) {
        free(group_vertex);
        return OP_ENOMEM;
    }
    for (int k = 0; k < p->n_groups; k++)
        group_vertex[k] = -1;
    int nv = 0;
    for (int i = 0; i < p->n; i++) {
        int k = p->group_of[i], v;
        if (k != OP_NONE && group_vertex[k] >= 0) {
            v = group_vertex[k];
        } else {
            v = nv++;
            m->rep[v] = i;
            if (k != OP_NONE)
                group_vertex[k] = v;
        }
        m->vertex_of[i] = v;
        m->work[v] += p->work[i];
    }
    m->nv = nv;
    free(group_vertex);
    return OP_OK;
}

/* Symmetric CSR with merged edges and scaled weights. */
static op_status build_csr(const op_problem *p, metis_graph *m, op_error *err)
{
    const op_graph *g = p->g;
    vpair *pairs = op_malloc((size_t)g->n_edges * 2 * sizeof(vpair) + 1, err);
    m->xadj = op_calloc((size_t)m->nv + 1, sizeof(idx_t), err);
    m->vwgt = op_malloc((size_t)m->nv * sizeof(idx_t) + 1, err);
    m->part = op_malloc((size_t)m->nv * sizeof(idx_t) + 1, err);
    if (!pairs || !m->xadj || !m->vwgt || !m->part) {
        free(pairs);
        return OP_ENOMEM;
    }
    size_t np = 0;
    double total_bytes = 0, total_work = 0;
    for (int e = 0; e < g->n_edges; e++) {
        int a = m->vertex_of[g->edge_src[e]], b = m->vertex_of[g->edge_dst[e]];
        if (a == b)
            continue;
        pairs[np++] = (vpair){a, b, g->edge_bytes[e]};
        pairs[np++] = (vpair){b, a, g->edge_bytes[e]};
        total_bytes += 2.0 * (double)g->edge_bytes[e];
    }
    qsort(pairs, np, sizeof *pairs, by_pair);
    size_t nu = 0; /* merge duplicates (sum of bytes) */
    for (size_t i = 0; i < np; i++) {
        if (nu && pairs[nu - 1].a == pairs[i].a && pairs[nu - 1].b == pairs[i].b)
            pairs[nu - 1].bytes += pairs[i].bytes;
        else
            pairs[nu++] = pairs[i];
    }
    m->adjncy = op_malloc(nu * sizeof(idx_t) + 1, err);
    m->adjwgt = op_malloc(nu * sizeof(idx_t) + 1, err);
    if (!m->adjncy || !m->adjwgt) {
        free(pairs);
        return OP_ENOMEM;
    }
    double escale = total_bytes > 0 ? 1e8 / total_bytes : 1;
    for (size_t i = 0; i < nu; i++) {
        m->xadj[pairs[i].a + 1]++;
        m->adjncy[i] = pairs[i].b;
        double w = (double)pairs[i].bytes * escale;
        m->adjwgt[i] = w < 1 ? 1 : (idx_t)w;
    }
    for (idx_t v = 0; v < m->nv; v++)
        m->xadj[v + 1] += m->xadj[v];
    for (idx_t v = 0; v < m->nv; v++)
        total_work += m->work[v];
    double vscale = total_work > 0 ? 1e8 / total_work : 1;
    for (idx_t v = 0; v < m->nv; v++) {
        double w = m->work[v] * vscale;
        m->vwgt[v] = w < 1 ? 1 : (idx_t)w;
    }
    free(pairs);
    return OP_OK;
}

static op_status run_metis(const op_place_ctx *ctx, metis_graph *m, long ufactor, op_error *err)
{
    const op_problem *p = ctx->p;
    idx_t ncon = 1, nparts = p->nd, objval = 0;
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_UFACTOR] = (idx_t)ufactor;
    options[METIS_OPTION_SEED] = (idx_t)(ctx->seed & 0x7fffffff);
    options[METIS_OPTION_NUMBERING] = 0;
    real_t *tpwgts = op_malloc((size_t)p->nd * sizeof(real_t), err);
    if (!tpwgts)
        return OP_ENOMEM;
    for (int d = 0; d < p->nd; d++)
        tpwgts[d] = (real_t)(p->c->dev[d].speed / p->total_speed);
    int rc = METIS_PartGraphKway(&m->nv, &ncon, m->xadj, m->adjncy, m->vwgt, NULL, m->adjwgt,
                                 &nparts, tpwgts, NULL, options, &objval, m->part);
    free(tpwgts);
    if (rc != METIS_OK)
        return op_fail(err, rc == METIS_ERROR_MEMORY ? OP_ENOMEM : OP_EINTERNAL,
                       "metis: METIS_PartGraphKway failed (code %d)", rc);
    return OP_OK;
}

static int vertex_allowed(const op_problem *p, const metis_graph *m, int v, int d)
{
    int op = m->rep[v], k = p->group_of[op];
    return k != OP_NONE ? p->group_ok[(size_t)k * p->nd + d] : op_eligible(p, op, d);
}

/* Vertices on devices they may not use go to the least-loaded allowed one. */
static void repair_pins(const op_problem *p, metis_graph *m, double *load)
{
    for (int d = 0; d < p->nd; d++)
        load[d] = 0;
    for (idx_t v = 0; v < m->nv; v++)
        load[m->part[v]] += m->work[v];
    for (idx_t v = 0; v < m->nv; v++) {
        if (vertex_allowed(p, m, (int)v, (int)m->part[v]))
            continue;
        int best = -1;
        for (int d = 0; d < p->nd; d++)
            if (vertex_allowed(p, m, (int)v, d) && (best < 0 || load[d] < load[best]))
                best = d;
        load[m->part[v]] -= m->work[v];
        load[best] += m->work[v];
        m->part[v] = best;
    }
}

static void apply(const op_problem *p, const metis_graph *m, int *device_of)
{
    for (int i = 0; i < p->n; i++)
        device_of[i] = (int)m->part[m->vertex_of[i]];
}

/* The partition, then the memory repair under the given margins. */
static op_status metis_attempt(const op_place_ctx *ctx, void *arg, const double *margin,
                               op_placement *out, int *fits, op_error *err)
{
    const op_problem *p = ctx->p;
    pmem mem;
    apply(p, arg, out->device_of);
    if (pmem_init(&mem, p, NULL, margin, err))
        return OP_ENOMEM;
    *fits = pmem_repair(&mem, out->device_of, 30, err);
    pmem_destroy(&mem);
    if (*fits < 0)
        return OP_ENOMEM;
    if (!*fits && !ctx->best_effort)
        return op_fail(err, OP_EINFEASIBLE,
                       "metis: the partition does not fit in device memory even after moving "
                       "ops (liveness estimate, placer_mem.h; use --best-effort to place "
                       "anyway)");
    return OP_OK;
}

static op_status place_metis(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    const op_problem *p = ctx->p;
    metis_graph m = {0};
    double *load = op_malloc((size_t)p->nd * sizeof(double), err);
    op_status st = load ? contract(p, &m, err) : OP_ENOMEM;
    if (!st && p->nd > 1)
        st = build_csr(p, &m, err);
    if (!st && p->nd > 1)
        st = run_metis(ctx, &m, METIS_UFACTOR, err);
    if (!st && p->nd == 1) {
        m.part = op_calloc((size_t)m.nv + 1, sizeof(idx_t), err);
        st = m.part ? OP_OK : OP_ENOMEM;
    }
    if (!st) {
        repair_pins(p, &m, load);
        st = pmem_place_checked(ctx, "metis", metis_attempt, &m, out, err);
    }
    metis_graph_free(&m);
    free(load);
    return st;
}

const op_placer op_placer_metis = {
    .name = "metis",
    .summary = "METIS k-way partition: minimum bytes cut, balanced compute; then memory repair",
    .source = "Karypis & Kumar 1997; Celeritas section 6.2",
    .place = place_metis,
};
