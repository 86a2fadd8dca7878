/*
 * pesto_coarsen.c - Pesto's cycle-free coarsening (Hafeez et al.,
 * Middleware '21, section 3.3: Definition 3.4, Corollary 3.3, Theorem 3.5),
 * with a policy that keeps the graph's parallelism.
 *
 * The coarsening runs in rounds.  Each round merges a matching of vertex
 * pairs of the current coarse graph in one batch that provably creates no
 * cycle, then rebuilds the coarse graph from the original
 * (op_coarse_build, which also rejects a cyclic grouping).  Two kinds of
 * batch:
 *
 *  - Edge batches (the paper's).  H(v) is the height of v (most vertices
 *    on a path from a root; roots have height 1).  A matching M of edges
 *    (u, v) is cycle-free when (Theorem 3.5):
 *      (i)   M is a matching;
 *      (ii)  |succ(u)| = 1, or |prec(v)| = 1 (Corollary 3.3), or
 *            H(v) = H(u) + 1, or H(w) > H(v) for every other successor w of
 *            u (the paper's H(w) > H(u) + d with d = H(v) - H(u));
 *      (iii) no two pairs i != j with (u_i, v_j) in E and H(u_i) = H(u_j).
 *    The paper prints (iii) as "h(u_i) != h(v_j) + d_j", which never binds
 *    (an edge u_i -> v_j forces H(v_j) > H(u_i)) and does not exclude its
 *    own Figure 6; the sign must be a typo.  With "- d_j" the proof sketch
 *    goes through: around a cycle of the merged graph every backward step
 *    v_j -> u_j drops the height by d_j and the forward path that follows
 *    gains at least as much, with equality only for a single edge u_j ->
 *    v_k with H(u_k) = H(u_j), which (iii) forbids.
 *  - Sibling batches (beyond the paper): pairs of vertices of EQUAL height
 *    that share a predecessor or a successor.  Every vertex of such a
 *    batch's result has one height and every edge climbs in height, so
 *    the result is acyclic (two vertices of one height have no path
 *    between them).  Edge and sibling pairs never share a batch.
 * If op_coarse_build ever found a cycle (a bug in the arguments above) the
 * batch is halved and retried; pesto_coarsen_stats counts it so the tests
 * can assert it never happens.
 *
 * The policy: merging vertices serialises them, and a coarse vertex starts
 * when all of its inputs are ready and delivers its outputs when it ends,
 * so merging along heavy edges alone (the paper's priority) turns a wide
 * graph into a chain (GNMT, 4704 ops, to 40 vertices: a compute critical
 * path of 107.2 ms in 108.6 ms of work).  Here every candidate pair is
 * priced by the longest compute path through the vertex it makes,
 * L = (latest finish of its other predecessors) + w(a) + w(b) + (longest
 * tail of its other successors), and
 *  - a pair is allowed only while L <= (1 + slack) * the original graph's
 *    compute critical path; slack starts at cp_slack (default 0: no merge
 *    may lengthen the critical path) and grows (0.02, then doubling) only
 *    when a round merges nothing (or less than 1/128 of what is left to
 *    the target); past PESTO_CP_SLACK_OFF the bound is dropped and
 *    pairs are still taken by least lengthening (labels can force that:
 *    an incumbent whose devices alternate along the paths leaves few
 *    pairs); negative cp_slack is the paper's coarsening (edge batches by
 *    communication time, heaviest first, no bound);
 *  - pairs are taken by how much they lengthen the longest path through
 *    them (L minus the longer of the paths through a and through b): chain
 *    links (u's only successor is v and v's only predecessor is u) and
 *    merges with slack cost nothing and go first, smaller pairs first (so
 *    the vertices stay of similar size), then heavier communication;
 *  - sibling batches run when an edge batch merged too little: they merge
 *    parallel branches only when L stays within the bound, that is when
 *    the branches have the slack to run one after the other.
 * A merged vertex's compute may not exceed a cap (twice the mean work per
 * target vertex, doubled whenever a round merges nothing), so the target
 * is still reached (Corollary 3.6).
 *
 * Devices and colocation.  Two vertices merge only if they can share a
 * device (eligibility, kind/device pins and colocation groups
 * intersect), so coarsening never turns a feasible problem infeasible.
 * Colocation is a placement rule, not an edge: a group's members stay
 * separate coarse vertices that op_coarse_build marks colocated, so a
 * group that spans the step (the PyTorch export colocates each forward op
 * with its backward op and optimizer update) creates no cycle.  Merging
 * vertices of two groups unites them (every member of both must then share
 * a device), so the same cap bounds a united group's compute: groups stay
 * small enough to be spread over the devices.  (Never merging two groups
 * would stall: TF-style graphs colocate each variable with its update
 * op, and Inception-V3 would stop at 579 vertices.)
 *
 * Optional labels (pesto_coarsen_ex): ops merge only with ops of the same
 * label.  The placer labels ops by their device in its incumbent, so the
 * coarse graph can express that placement exactly (beyond the paper).
 * pesto_project_order carries the incumbent's order onto the coarse graph.
 *
 * pesto_coarse_comm gives the ILP a faithful cost for each coarse edge U->V:
 * the simulator (formats.md 5 rule 3) sends one transfer per (source op,
 * destination device), so the edge costs, per distinct source op u in U
 * with consumers in V, one latency plus the largest bytes from u into V.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/problem_util.h"
#include "placers/pesto/pesto_coarsen.h"

/* ---- heights ----------------------------------------------------------------- */

static void compute_heights(const op_graph *g, int *height)
{
    for (int t = 0; t < g->n_ops; t++) {
        int v = g->topo[t], h = 1;
        for (int j = g->pred_off[v]; j < g->pred_off[v + 1]; j++)
            if (height[g->pred[j]] + 1 > h)
                h = height[g->pred[j]] + 1;
        height[v] = h;
    }
}

/* ---- Theorem 3.5 ----------------------------------------------------------- */

static int out_degree(const op_graph *g, int v)
{
    return g->succ_off[v + 1] - g->succ_off[v];
}

static int in_degree(const op_graph *g, int v)
{
    return g->pred_off[v + 1] - g->pred_off[v];
}

/* Condition (ii) for one edge u -> v. */
static int pair_condition(const op_graph *g, const int *height, int u, int v)
{
    if (out_degree(g, u) == 1 || in_degree(g, v) == 1 || height[v] == height[u] + 1)
        return 1;
    for (int j = g->succ_off[u]; j < g->succ_off[u + 1]; j++) {
        int w = g->succ[j];
        if (w != v && height[w] <= height[v])
            return 0;
    }
    return 1;
}

/* Condition (iii) between the candidate (u, v) and the pairs already chosen:
 * mate[x] >= 0 marks chosen vertices; is_src[x] says x is a pair's u. */
static int cross_condition(const op_graph *g, const int *height, const int *mate,
                           const unsigned char *is_src, int u, int v)
{
    /* candidate as i: an edge u -> v_j of a chosen pair j with H(u_j) = H(u) */
    for (int j = g->succ_off[u]; j < g->succ_off[u + 1]; j++) {
        int w = g->succ[j];
        if (w != v && mate[w] >= 0 && !is_src[w] && height[mate[w]] == height[u])
            return 0;
    }
    /* candidate as j: an edge u_i -> v of a chosen pair i with H(u_i) = H(u) */
    for (int j = g->pred_off[v]; j < g->pred_off[v + 1]; j++) {
        int w = g->pred[j];
        if (w != u && mate[w] >= 0 && is_src[w] && height[w] == height[u])
            return 0;
    }
    return 1;
}

/* Colocation groups of one batch: a union-find over the graph's group
 * ids, with each set's devices (every member's mask, shrinking as merges
 * pin members, so two members never end up pinned apart) and compute. */
typedef struct batch_groups_uf {
    int *parent;
    uint64_t *mask;
    double *work;
} batch_groups_uf;

static int uf_root(int *parent, int x)
{
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

static int uf_init(batch_groups_uf *u, const op_graph *g, const uint64_t *mask, const double *work)
{
    size_t k = (size_t)g->n_groups + 1;
    u->parent = malloc(k * sizeof *u->parent);
    u->mask = malloc(k * sizeof *u->mask);
    u->work = calloc(k, sizeof *u->work);
    if (!u->parent || !u->mask || !u->work)
        return 0;
    for (int c = 0; c < g->n_groups; c++) {
        u->parent[c] = c;
        u->mask[c] = ~(uint64_t)0;
    }
    for (int v = 0; v < g->n_ops; v++)
        if (g->colocate[v] != OP_NONE) {
            u->mask[g->colocate[v]] &= mask[v];
            u->work[g->colocate[v]] += work ? work[v] : 0;
        }
    return 1;
}

static void uf_destroy(batch_groups_uf *u)
{
    free(u->parent);
    free(u->mask);
    free(u->work);
}

/* May u and v merge as far as colocation goes, and on which devices?
 * Returns the devices they may share (0: they may not).  Two different
 * groups merge only when work is given (the caller's cap applies to the
 * union: merging two vertices of groups A and B colocates all of A and B,
 * op_coarse_build unites them) and their union's compute stays within
 * cap.  An ungrouped vertex may always join a group (the vertex cap
 * bounds the merge itself), and adds its compute to the group's. */
static uint64_t colocation_devices(const op_graph *g, batch_groups_uf *uf, const uint64_t *mask,
                                   const double *work, double cap, int u, int v, int *ru_out,
                                   int *rv_out)
{
    int cu = g->colocate[u], cv = g->colocate[v];
    int ru = cu == OP_NONE ? -1 : uf_root(uf->parent, cu);
    int rv = cv == OP_NONE ? -1 : uf_root(uf->parent, cv);
    *ru_out = ru;
    *rv_out = rv;
    uint64_t both = mask[u] & mask[v];
    if (ru >= 0)
        both &= uf->mask[ru];
    if (rv >= 0)
        both &= uf->mask[rv];
    if (ru >= 0 && rv >= 0 && ru != rv &&
        (!work || uf->work[ru] + uf->work[rv] > cap))
        return 0;
    return both;
}

/* Record the merge of u and v in the batch's groups. */
static void colocation_merge(batch_groups_uf *uf, const double *work, int u, int v, int ru,
                             int rv, uint64_t both)
{
    if (ru < 0 && rv < 0)
        return;
    if (ru >= 0 && rv >= 0 && ru != rv) {
        uf->parent[rv] = ru;
        uf->work[ru] += uf->work[rv];
    } else if (work) {
        int r = ru >= 0 ? ru : rv;
        uf->work[r] += work[ru >= 0 ? v : u];
    }
    uf->mask[ru >= 0 ? ru : rv] = both;
}

/* Devices each original op may use: eligibility and its colocation group. */
static uint64_t *original_masks(const op_problem *p, op_error *err)
{
    uint64_t *mask = op_calloc((size_t)p->n + 1, sizeof *mask, err);
    if (!mask)
        return NULL;
    for (int i = 0; i < p->n; i++)
        for (int d = 0; d < p->nd && d < 64; d++) {
            if (op_allowed(p, i, d))
                mask[i] |= (uint64_t)1 << d;
        }
    return mask;
}

/* Group ids for one batch: pairs share the id of their smaller vertex. */
static int batch_groups(int n, const int *mate, int pairs_wanted, int *grp)
{
    int ng = 0, used = 0;
    for (int v = 0; v < n; v++)
        grp[v] = -1;
    for (int v = 0; v < n; v++) {
        if (grp[v] >= 0)
            continue;
        grp[v] = ng;
        if (mate[v] >= 0 && used < pairs_wanted) {
            grp[mate[v]] = ng;
            used++;
        }
        ng++;
    }
    return ng;
}

/* Compute-only top levels (longest path before v) and bottom levels
 * (longest path from v, v included) of the current coarse graph. */
static void compute_levels(const op_graph *g, const double *w, double *top, double *bottom)
{
    for (int t = 0; t < g->n_ops; t++) {
        int v = g->topo[t];
        double best = 0;
        for (int j = g->pred_off[v]; j < g->pred_off[v + 1]; j++) {
            int u = g->pred[j];
            if (top[u] + w[u] > best)
                best = top[u] + w[u];
        }
        top[v] = best;
    }
    for (int t = g->n_ops - 1; t >= 0; t--) {
        int v = g->topo[t];
        double best = 0;
        for (int j = g->succ_off[v]; j < g->succ_off[v + 1]; j++)
            if (bottom[g->succ[j]] > best)
                best = bottom[g->succ[j]];
        bottom[v] = w[v] + best;
    }
}

/* Longest compute path through the vertex that merging edge u -> v makes. */
static double merged_path(const op_graph *g, const double *w, const double *top,
                          const double *bottom, int u, int v)
{
    double start = top[u], tail = bottom[v] - w[v];
    for (int j = g->pred_off[v]; j < g->pred_off[v + 1]; j++) {
        int x = g->pred[j];
        if (x != u && top[x] + w[x] > start)
            start = top[x] + w[x];
    }
    for (int j = g->succ_off[u]; j < g->succ_off[u + 1]; j++) {
        int x = g->succ[j];
        if (x != v && bottom[x] > tail)
            tail = bottom[x];
    }
    return start + w[u] + w[v] + tail;
}

/* ---- candidate pairs ----------------------------------------------------------- */

typedef struct pair_cand {
    int a, b;          /* an edge a -> b, or two siblings */
    double k1, k2, k3; /* sort keys, ascending */
} pair_cand;

static int by_keys(const void *x, const void *y)
{
    const pair_cand *p = x, *q = y;
    if (p->k1 != q->k1)
        return p->k1 < q->k1 ? -1 : 1;
    if (p->k2 != q->k2)
        return p->k2 < q->k2 ? -1 : 1;
    if (p->k3 != q->k3)
        return p->k3 < q->k3 ? -1 : 1;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return (p->b > q->b) - (p->b < q->b);
}

/* One round's view of the current coarse graph. */
typedef struct round_view {
    const op_graph *g;
    const uint64_t *mask; /* devices each vertex may use */
    const double *work;   /* compute per vertex */
    const int *label;
    const double *top, *bottom; /* compute levels (priced) */
    double cap;                 /* most compute of a merged vertex or united group */
    int priced;                 /* pairs priced by lengthening (0: the paper's priority) */
    double bound;               /* most compute on a path through a merged vertex */
    double eps;                 /* lengthening below this is none */
    double lat, upb;            /* the cluster's mean link */
} round_view;

/* Longest compute path through the vertex that merging siblings a, b makes. */
static double sibling_path(const round_view *r, int a, int b)
{
    double ta = r->top[a], tb = r->top[b];
    double ra = r->bottom[a] - r->work[a], rb = r->bottom[b] - r->work[b];
    return (ta > tb ? ta : tb) + r->work[a] + r->work[b] + (ra > rb ? ra : rb);
}

/* How much merging a and b lengthens the longest path through them, 0 when
 * they have the slack (chain links always have). */
static double lengthening(const round_view *r, int a, int b, double through)
{
    double pa = r->top[a] + r->bottom[a], pb = r->top[b] + r->bottom[b];
    double d = through - (pa > pb ? pa : pb);
    return d <= r->eps ? 0 : d;
}

/* The filters every pair passes: one label, a shared device, under the cap. */
static int may_pair(const round_view *r, int a, int b)
{
    return r->label[a] == r->label[b] && (r->mask[a] & r->mask[b]) &&
           r->work[a] + r->work[b] <= r->cap;
}

/* An edge batch: Theorem 3.5's matching, cheapest lengthening first (the
 * paper's heaviest communication first when not priced).  Priced, while
 * chain links (u's only successor is v, v's only
 * predecessor u) can merge, the batch takes only those (*chains = 1), so
 * chains contract before anything else.  Returns the pairs written to
 * mate[]. */
static int select_edges(const round_view *r, int target, int *height, int *mate,
                        pair_cand *cand, int *chains)
{
    const op_graph *g = r->g;
    int n = g->n_ops, nc = 0, pairs = 0, links = 0;
    compute_heights(g, height);
    for (int v = 0; v < n; v++)
        mate[v] = -1;
    for (int e = 0; e < g->n_edges; e++) {
        int u = g->edge_src[e], v = g->edge_dst[e];
        if (!may_pair(r, u, v))
            continue;
        double comm = r->lat + r->upb * (double)g->edge_bytes[e];
        pair_cand c = {u, v, -comm, e, 0};
        if (r->priced) {
            int link = out_degree(g, u) == 1 && in_degree(g, v) == 1;
            double through = merged_path(g, r->work, r->top, r->bottom, u, v);
            if (through > r->bound)
                continue;
            /* k1 < 0 marks a chain link (it lengthens nothing) */
            c = (pair_cand){u, v, link ? -1 : lengthening(r, u, v, through),
                            r->work[u] + r->work[v], -comm};
            links += link;
        }
        cand[nc++] = c;
    }
    qsort(cand, (size_t)nc, sizeof *cand, by_keys);
    *chains = links > 0;
    if (links > 0)
        nc = links; /* the chain links sort first */
    unsigned char *is_src = calloc((size_t)n + 1, 1);
    batch_groups_uf uf = {0};
    if (!is_src || !uf_init(&uf, g, r->mask, r->work)) {
        free(is_src);
        uf_destroy(&uf);
        return 0;
    }
    for (int k = 0; k < nc && n - pairs > target; k++) {
        int u = cand[k].a, v = cand[k].b, ru, rv;
        if (mate[u] >= 0 || mate[v] >= 0)
            continue;
        uint64_t both = colocation_devices(g, &uf, r->mask, r->work, r->cap, u, v, &ru, &rv);
        if (!both)
            continue;
        if (!pair_condition(g, height, u, v) || !cross_condition(g, height, mate, is_src, u, v))
            continue;
        colocation_merge(&uf, r->work, u, v, ru, rv, both);
        mate[u] = v;
        mate[v] = u;
        is_src[u] = 1;
        pairs++;
    }
    free(is_src);
    uf_destroy(&uf);
    return pairs;
}

typedef struct nbr {
    int h, id;
    double w;
} nbr;

static int by_height_work(const void *x, const void *y)
{
    const nbr *p = x, *q = y;
    if (p->h != q->h)
        return p->h < q->h ? -1 : 1;
    if (p->w != q->w)
        return p->w < q->w ? -1 : 1;
    return (p->id > q->id) - (p->id < q->id);
}

/* A sibling batch: pairs of equal height that share a predecessor or a
 * successor (neighbours in that vertex's list sorted by height and work),
 * within the guard's bound; with free_only, only pairs that lengthen no
 * path through them. */
static int select_siblings(const round_view *r, int target, int free_only, int *height,
                           int *mate, pair_cand *cand, nbr *nb)
{
    const op_graph *g = r->g;
    int n = g->n_ops, nc = 0, pairs = 0;
    compute_heights(g, height);
    for (int v = 0; v < n; v++)
        mate[v] = -1;
    for (int x = 0; x < n; x++)
        for (int dir = 0; dir < 2; dir++) {
            const int *lst = dir ? g->pred : g->succ;
            int lo = dir ? g->pred_off[x] : g->succ_off[x];
            int hi = dir ? g->pred_off[x + 1] : g->succ_off[x + 1], k = 0;
            for (int j = lo; j < hi; j++)
                nb[k++] = (nbr){height[lst[j]], lst[j], r->work[lst[j]]};
            qsort(nb, (size_t)k, sizeof *nb, by_height_work);
            for (int j = 0; j + 1 < k; j++) {
                int a = nb[j].id, b = nb[j + 1].id;
                if (nb[j].h != nb[j + 1].h || !may_pair(r, a, b))
                    continue;
                double through = sibling_path(r, a, b), d = lengthening(r, a, b, through);
                if (through > r->bound || (free_only && d > 0))
                    continue;
                cand[nc++] = (pair_cand){a, b, d, r->work[a] + r->work[b], 0};
            }
        }
    qsort(cand, (size_t)nc, sizeof *cand, by_keys);
    batch_groups_uf uf = {0};
    if (!uf_init(&uf, g, r->mask, r->work)) {
        uf_destroy(&uf);
        return 0;
    }
    for (int k = 0; k < nc && n - pairs > target; k++) {
        int a = cand[k].a, b = cand[k].b, ra, rb;
        if (mate[a] >= 0 || mate[b] >= 0)
            continue;
        uint64_t both = colocation_devices(g, &uf, r->mask, r->work, r->cap, a, b, &ra, &rb);
        if (!both)
            continue;
        colocation_merge(&uf, r->work, a, b, ra, rb, both);
        mate[a] = b;
        mate[b] = a;
        pairs++;
    }
    uf_destroy(&uf);
    return pairs;
}

/* Merge the batch's pairs: op_coarse_build into *next, *ng_out coarse
 * vertices (g->n_ops when nothing merged).  A cycle halves the batch. */
static op_status apply_batch(const op_graph *g, const int *mate, int pairs, int *grp, int *ng_out,
                             op_coarse_map *next, pesto_coarsen_stats *st, op_error *err)
{
    op_status s = OP_OK;
    *ng_out = g->n_ops;
    while (pairs > 0) {
        int ng = batch_groups(g->n_ops, mate, pairs, grp);
        op_error local = {0};
        s = op_coarse_build(g, grp, ng, next, &local);
        if (s == OP_OK) {
            *ng_out = ng;
            st->merged += pairs;
            return OP_OK;
        }
        if (s == OP_ENOMEM || s == OP_EINTERNAL)
            return op_fail(err, s, "%s", local.msg);
        /* a cycle: the batch's argument failed; merge fewer pairs (in the
         * order batch_groups takes them) */
        st->cycle_fallbacks++;
        pairs /= 2;
    }
    return OP_OK;
}

/* ---- driver ------------------------------------------------------------------ */

op_status pesto_coarsen(const op_problem *p, int target, op_coarse_map *out,
                        pesto_coarsen_stats *stats, op_error *err)
{
    return pesto_coarsen_ex(p, target, PESTO_DEFAULT_CP_SLACK, NULL, out, stats, err);
}

/* Per coarse vertex: devices (every member's), compute, label. */
static void vertex_arrays(const op_problem *p, const uint64_t *omask, const int *label,
                          const int *group_of, int nc, uint64_t *mask, double *work, int *glabel)
{
    for (int v = 0; v < nc; v++) {
        mask[v] = ~(uint64_t)0;
        work[v] = 0;
        glabel[v] = 0;
    }
    for (int i = 0; i < p->n; i++) {
        mask[group_of[i]] &= omask[i];
        work[group_of[i]] += p->work[i];
        glabel[group_of[i]] = label ? label[i] : 0;
    }
}

static double next_slack(double slack)
{
    return slack > 0 ? 2 * slack : 0.02;
}

op_status pesto_coarsen_ex(const op_problem *p, int target, double cp_slack, const int *label,
                           op_coarse_map *out, pesto_coarsen_stats *stats, op_error *err)
{
    const op_graph *orig = p->g;
    pesto_coarsen_stats local_stats = {0};
    pesto_coarsen_stats *st = stats ? stats : &local_stats;
    memset(st, 0, sizeof *st);
    memset(out, 0, sizeof *out);
    if (target < 1)
        target = 1;
    int n = orig->n_ops;
    size_t nn = (size_t)n + 1, ncand = 2 * (size_t)orig->n_edges + 1;
    uint64_t *omask = original_masks(p, err);
    int *group_of = op_malloc(nn * sizeof *group_of, err);
    int *grp = op_malloc(nn * sizeof *grp, err);
    int *height = op_malloc(nn * sizeof *height, err);
    int *mate = op_malloc(nn * sizeof *mate, err);
    int *glabel = op_malloc(nn * sizeof *glabel, err);
    uint64_t *mask = op_malloc(nn * sizeof *mask, err);
    double *work = op_malloc(nn * sizeof *work, err);
    double *top = op_malloc(nn * sizeof *top, err);
    double *bottom = op_malloc(nn * sizeof *bottom, err);
    pair_cand *cand = op_malloc(ncand * sizeof *cand, err);
    nbr *nb = op_malloc(nn * sizeof *nb, err);
    op_coarse_map cur = {0};
    op_status s = OP_OK;
    if (!omask || !group_of || !grp || !height || !mate || !glabel || !mask || !work || !top ||
        !bottom || !cand || !nb) {
        s = OP_ENOMEM;
        goto done;
    }
    for (int i = 0; i < n; i++)
        group_of[i] = i;
    round_view r = {.mask = mask, .work = work, .label = glabel, .top = top, .bottom = bottom};
    r.lat = op_cluster_mean_link(p->c).latency_us;
    r.upb = op_cluster_mean_link(p->c).us_per_byte;
    const op_graph *g = orig;
    double biggest = 0, cp0 = 0;
    for (int i = 0; i < n; i++)
        biggest = p->work[i] > biggest ? p->work[i] : biggest;
    r.cap = 2 * p->total_work_us / target;
    if (r.cap < biggest)
        r.cap = biggest;
    double slack = cp_slack;
    compute_levels(orig, p->work, top, bottom);
    for (int i = 0; i < n; i++)
        cp0 = bottom[i] > cp0 ? bottom[i] : cp0;
    r.priced = cp_slack >= 0;
    r.eps = 1e-9 * (1 + cp0);
    while (g->n_ops > target) {
        int before = g->n_ops, guard = r.priced && slack < PESTO_CP_SLACK_OFF, chains = 0;
        r.bound = guard ? (1 + slack) * cp0 * (1 + 1e-12) : INFINITY;
        /* an edge batch, then (priced) a sibling batch on its result: only
         * free siblings when edges merged */
        for (int kind = 0; kind < 1 + r.priced && g->n_ops > target; kind++) {
            r.g = g;
            vertex_arrays(p, omask, label, group_of, g->n_ops, mask, work, glabel);
            if (r.priced)
                compute_levels(g, work, top, bottom);
            int pairs = kind ? select_siblings(&r, target, g->n_ops < before, height, mate, cand,
                                               nb)
                             : select_edges(&r, target, height, mate, cand, &chains);
            op_coarse_map next = {0};
            int ng;
            if (pairs == 0)
                continue;
            if ((s = apply_batch(g, mate, pairs, grp, &ng, &next, st, err)))
                goto done;
            if (ng == g->n_ops)
                continue;
            for (int i = 0; i < n; i++)
                group_of[i] = grp[group_of[i]];
            op_coarse_map_destroy(&cur);
            cur = next;
            g = cur.coarse;
            st->iterations++;
        }
        int merged = before - g->n_ops;
        if (merged == 0) {
            if (!guard && (r.cap >= p->total_work_us || p->total_work_us <= 0))
                break; /* no feasible pair left */
            r.cap *= 2;
            if (guard)
                slack = next_slack(slack);
        } else if (guard && !chains && (double)merged * 128 < before - target) {
            slack = next_slack(slack); /* too slow: a round merged < 1/128 of what is left */
        }
    }
    {
        int ng = g->n_ops;
        op_coarse_map_destroy(&cur);
        s = op_coarse_build(orig, group_of, ng, out, err); /* the final graph, from the original */
    }
done:
    op_coarse_map_destroy(&cur);
    free(omask);
    free(group_of);
    free(grp);
    free(height);
    free(mate);
    free(glabel);
    free(mask);
    free(work);
    free(top);
    free(bottom);
    free(cand);
    free(nb);
    if (!s)
        st->cp_slack = slack;
    return s;
}

/* ---- the incumbent's order on the coarse graph --------------------------------- */

/* Binary min-heap of coarse vertices keyed by key[] (ties by id). */
static int heap_less(const double *key, int a, int b)
{
    return key[a] != key[b] ? key[a] < key[b] : a < b;
}

static void heap_push(int *h, int *len, const double *key, int v)
{
    int i = (*len)++;
    h[i] = v;
    while (i > 0 && heap_less(key, h[i], h[(i - 1) / 2])) {
        int t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static int heap_pop(int *h, int *len, const double *key)
{
    int top = h[0], i = 0;
    h[0] = h[--(*len)];
    for (;;) {
        int l = 2 * i + 1, m = i;
        if (l < *len && heap_less(key, h[l], h[m]))
            m = l;
        if (l + 1 < *len && heap_less(key, h[l + 1], h[m]))
            m = l + 1;
        if (m == i)
            return top;
        int t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

op_status pesto_project_order(const op_coarse_map *m, const double *when, int *seq, op_error *err)
{
    const op_graph *cg = m->coarse;
    int nc = cg->n_ops, len = 0, done = 0;
    double *key = op_malloc((size_t)nc * sizeof *key + 1, err);
    int *indeg = op_malloc((size_t)nc * sizeof *indeg + 1, err);
    int *heap = op_malloc((size_t)nc * sizeof *heap + 1, err);
    if (!key || !indeg || !heap) {
        free(key);
        free(indeg);
        free(heap);
        return OP_ENOMEM;
    }
    for (int k = 0; k < nc; k++) {
        key[k] = INFINITY;
        indeg[k] = cg->pred_off[k + 1] - cg->pred_off[k];
    }
    for (int i = 0; i < m->n_orig; i++)
        if (when[i] < key[m->group_of[i]])
            key[m->group_of[i]] = when[i];
    for (int k = 0; k < nc; k++)
        if (indeg[k] == 0)
            heap_push(heap, &len, key, k);
    while (len > 0) {
        int v = heap_pop(heap, &len, key);
        seq[done++] = v;
        for (int j = cg->succ_off[v]; j < cg->succ_off[v + 1]; j++)
            if (--indeg[cg->succ[j]] == 0)
                heap_push(heap, &len, key, cg->succ[j]);
    }
    free(key);
    free(indeg);
    free(heap);
    return done == nc ? OP_OK
                      : op_fail(err, OP_EINTERNAL, "pesto: the coarse graph has a cycle");
}

op_status pesto_coarse_comm(const op_graph *orig, const op_coarse_map *m, int *xfer_count,
                            int64_t *xfer_bytes, op_error *err)
{
    const op_graph *cg = m->coarse;
    int nc = cg->n_ops;
    int *stamp = op_malloc((size_t)nc * sizeof *stamp + 1, err);
    int64_t *most = op_malloc((size_t)nc * sizeof *most + 1, err);
    int *seen = op_malloc((size_t)nc * sizeof *seen + 1, err);
    if (!stamp || !most || !seen) {
        free(stamp);
        free(most);
        free(seen);
        return OP_ENOMEM;
    }
    for (int k = 0; k < nc; k++)
        stamp[k] = -1;
    for (int e = 0; e < cg->n_edges; e++) {
        xfer_count[e] = 0;
        xfer_bytes[e] = 0;
    }
    op_status s = OP_OK;
    for (int u = 0; u < orig->n_ops && !s; u++) {
        int a = m->group_of[u], n_seen = 0;
        for (int j = orig->succ_off[u]; j < orig->succ_off[u + 1]; j++) {
            int c = m->group_of[orig->succ[j]];
            int64_t b = orig->edge_bytes[orig->succ_edge[j]];
            if (c == a)
                continue;
            if (stamp[c] != u) {
                stamp[c] = u;
                most[c] = b;
                seen[n_seen++] = c;
            } else if (b > most[c]) {
                most[c] = b;
            }
        }
        for (int k = 0; k < n_seen; k++) {
            int e = op_graph_find_edge(cg, a, seen[k]);
            if (e < 0) {
                s = op_fail(err, OP_EINTERNAL, "pesto: coarse edge %d -> %d missing", a, seen[k]);
                break;
            }
            xfer_count[e]++;
            xfer_bytes[e] += most[seen[k]];
        }
    }
    free(stamp);
    free(most);
    free(seen);
    return s;
}

/* ---- registry entry ------------------------------------------------------------ */

static op_status run_pesto_coarsen(const op_problem *p, op_options *opts, op_coarse_map *out,
                                   op_error *err)
{
    long target;
    op_status s = op_options_int(opts, "target", 200, 1, 1L << 30, &target, err);
    if (s)
        return s;
    return pesto_coarsen(p, (int)target, out, NULL, err);
}

const op_coarsener op_coarsener_pesto = {
    .name = "pesto",
    .summary = "cycle-free batch merging of edges by communication time (--target N, default 200)",
    .source = "Pesto (Middleware '21) section 3.3, Theorem 3.5",
    .run = run_pesto_coarsen,
};
