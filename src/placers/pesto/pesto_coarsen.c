/*
 * pesto_coarsen.c - Pesto's cycle-free batch coarsening (Hafeez et al.,
 * Middleware '21, section 3.3: Definition 3.4, Corollary 3.3, Theorem 3.5).
 *
 * Each iteration computes the height H(v) of every vertex (longest number of
 * vertices on a path from a root; roots have height 1), then walks the edges
 * in decreasing communication time (edge bytes on the cluster's mean link,
 * ties by edge id) and greedily builds a matching M of edges (u, v) that
 * satisfies Theorem 3.5:
 *   (i)   M is a matching (no vertex in two pairs);
 *   (ii)  |succ(u)| = 1, or |prec(v)| = 1 (Corollary 3.3), or
 *         H(v) = H(u) + 1, or H(w) > H(v) for every other successor w of u
 *         (the paper's H(w) > H(u) + d with d = H(v) - H(u));
 *   (iii) no two pairs i != j with (u_i, v_j) in E and H(u_i) = H(v_j) - d_j,
 *         i.e. H(u_i) = H(u_j).
 * The paper prints (iii) as "h(u_i) != h(v_j) + d_j", which never binds (an
 * edge u_i -> v_j forces H(v_j) > H(u_i)) and does not exclude its own
 * Figure 6; the sign must be a typo.  With "- d_j" the proof sketch goes
 * through: around a cycle of the merged graph every backward step v_j -> u_j
 * drops the height by d_j and the forward path that follows gains at least
 * as much, with equality only for a single edge u_j -> v_k with H(u_k) =
 * H(u_j), which (iii) forbids (pairs of the other kinds of (ii) give a
 * strictly positive gain or a shorter cycle).
 * All pairs of a batch are merged at once through op_coarse_build, which
 * rejects a cyclic result; if that ever happened (it would be a bug in the
 * argument above) the batch is halved and retried, and the fallback is
 * counted in pesto_coarsen_stats so the tests can assert it never occurs.
 *
 * Beyond the paper: to keep parallelism (the paper's "maintaining
 * parallelizability") a merge may not create a vertex with more compute
 * than a cap (twice the mean work per target vertex, doubled whenever no
 * edge qualifies, so the target is still reached).  Two vertices merge only
 * if they can share a device (their eligibility sets, which include
 * kind/device pins and colocation groups, intersect), so coarsening never
 * turns a feasible problem infeasible.  Vertices of two different
 * colocation groups may merge: op_coarse_build then unites the groups
 * (every member of both shares a device), so the same compute cap bounds
 * the united group's total compute.  (Never merging two groups would
 * stall on TF-style graphs where each variable is colocated
 * with its update op: Inception-V3 would stop at 579 vertices, one per
 * group member, far above any target the ILP can solve.)
 * Iteration stops at `target` vertices or when no edge is feasible.
 *
 * Also beyond the paper: a critical-path guard.  Merging ops into one
 * vertex serialises them and makes every successor wait for the whole
 * group, so merging along heavy edges alone (the paper's priority) can turn
 * a wide graph into a chain (rnnlm on 2 GPUs: the 40-vertex coarse graph's
 * best schedule was 110 ms where the original runs in 85 ms).  An edge
 * (u, v) is feasible only if the longest compute path through the merged
 * vertex, max(top(u), top of v's other predecessors) + w(u) + w(v) +
 * max(bottom of u's other successors, bottom(v) - w(v)), stays within
 * (1 + slack) times the original graph's compute critical path; slack
 * (--cp-slack, default 0.1; negative: off, the paper's behaviour) doubles
 * together with the compute cap whenever no edge qualifies.
 *
 * Optional labels (pesto_coarsen_ex): ops merge only with ops of the same
 * label.  The placer labels ops by their device in a reference placement
 * (its best fast heuristic), so the coarse graph can express that placement
 * exactly and the ILP searches around it instead of among groups that
 * every good placement would have to cut (beyond the paper).
 *
 * pesto_coarse_comm gives the ILP a faithful cost for each coarse edge U->V:
 * the simulator (formats.md 5 rule 3) sends one transfer per (source op,
 * destination device), so the edge costs, per distinct source op u in U
 * with consumers in V, one latency plus the largest bytes from u into V.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "placers/pesto/pesto_coarsen.h"

/* ---- heights and priorities ---------------------------------------------- */

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

static const double *sort_cost; /* qsort has no context argument */

static int by_cost_desc(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    if (sort_cost[x] != sort_cost[y])
        return sort_cost[x] > sort_cost[y] ? -1 : 1;
    return (x > y) - (x < y);
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

int pesto_select_batch(const op_graph *g, const double *edge_cost, const uint64_t *mask,
                       const double *work, double group_cap, int target, int *height, int *mate,
                       int *order)
{
    int n = g->n_ops, m = g->n_edges, pairs = 0;
    compute_heights(g, height);
    for (int v = 0; v < n; v++)
        mate[v] = -1;
    for (int e = 0; e < m; e++)
        order[e] = e;
    sort_cost = edge_cost;
    qsort(order, (size_t)m, sizeof *order, by_cost_desc);
    unsigned char *is_src = calloc((size_t)n + 1, 1);
    batch_groups_uf uf = {0};
    if (!is_src || !uf_init(&uf, g, mask, work)) {
        free(is_src);
        uf_destroy(&uf);
        return 0;
    }
    for (int k = 0; k < m && n - pairs > target; k++) {
        int e = order[k], u = g->edge_src[e], v = g->edge_dst[e], ru, rv;
        if (edge_cost[e] < 0 || mate[u] >= 0 || mate[v] >= 0)
            continue;
        uint64_t both = colocation_devices(g, &uf, mask, work, group_cap, u, v, &ru, &rv);
        if (!both)
            continue;
        if (!pair_condition(g, height, u, v) || !cross_condition(g, height, mate, is_src, u, v))
            continue;
        colocation_merge(&uf, work, u, v, ru, rv, both);
        mate[u] = v;
        mate[v] = u;
        is_src[u] = 1;
        pairs++;
    }
    free(is_src);
    uf_destroy(&uf);
    return pairs;
}

/* ---- driver ------------------------------------------------------------------ */

/* Devices each original op may use: eligibility and its colocation group. */
static uint64_t *original_masks(const op_problem *p, op_error *err)
{
    uint64_t *mask = op_calloc((size_t)p->n + 1, sizeof *mask, err);
    if (!mask)
        return NULL;
    for (int i = 0; i < p->n; i++)
        for (int d = 0; d < p->nd && d < 64; d++) {
            int grp = p->group_of[i];
            int ok = op_eligible(p, i, d) &&
                     (grp == OP_NONE || p->group_ok[(size_t)grp * p->nd + d]);
            if (ok)
                mask[i] |= (uint64_t)1 << d;
        }
    return mask;
}

static double mean_link(const op_cluster *c, double *upb)
{
    op_link_model m = op_cluster_mean_link(c);
    *upb = m.us_per_byte;
    return m.latency_us;
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

static op_status one_batch(const op_graph *g, const uint64_t *mask, const double *cost,
                           const double *work, double cap, int target, int *grp, int *ng_out,
                           op_coarse_map *next, pesto_coarsen_stats *st, op_error *err)
{
    int n = g->n_ops;
    int *height = op_malloc((size_t)n * sizeof *height + 1, err);
    int *mate = op_malloc((size_t)n * sizeof *mate + 1, err);
    int *order = op_malloc((size_t)g->n_edges * sizeof *order + 1, err);
    op_status s = OP_OK;
    *ng_out = n;
    if (!height || !mate || !order) {
        s = OP_ENOMEM;
        goto done;
    }
    int pairs = pesto_select_batch(g, cost, mask, work, cap, target, height, mate, order);
    while (pairs > 0) {
        int ng = batch_groups(n, mate, pairs, grp);
        op_error local = {0};
        s = op_coarse_build(g, grp, ng, next, &local);
        if (s == OP_OK) {
            *ng_out = ng;
            break;
        }
        if (s == OP_ENOMEM || s == OP_EINTERNAL) {
            op_fail(err, s, "%s", local.msg);
            break;
        }
        /* a cycle: Theorem 3.5 violated; merge fewer pairs (in the order
         * batch_groups takes them) */
        st->cycle_fallbacks++;
        if (getenv("PESTO_DEBUG"))
            fprintf(stderr, "pesto_coarsen: batch of %d pairs rejected: %s\n", pairs, local.msg);
        pairs /= 2;
        s = OP_OK;
    }
    if (pairs == 0)
        *ng_out = n;
    else if (!s)
        st->merged += pairs;
done:
    free(height);
    free(mate);
    free(order);
    return s;
}

op_status pesto_coarsen(const op_problem *p, int target, op_coarse_map *out,
                        pesto_coarsen_stats *stats, op_error *err)
{
    return pesto_coarsen_ex(p, target, PESTO_DEFAULT_CP_SLACK, NULL, out, stats, err);
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
    uint64_t *omask = original_masks(p, err);
    int *group_of = op_malloc((size_t)n * sizeof *group_of + 1, err);
    int *grp = op_malloc((size_t)n * sizeof *grp + 1, err);
    uint64_t *mask = op_malloc((size_t)n * sizeof *mask + 1, err);
    double *cost = op_malloc((size_t)orig->n_edges * sizeof *cost + 1, err);
    double *work = op_malloc((size_t)n * sizeof *work + 1, err);
    double *top = op_malloc((size_t)n * sizeof *top + 1, err);
    double *bottom = op_malloc((size_t)n * sizeof *bottom + 1, err);
    int *glabel = op_malloc((size_t)n * sizeof *glabel + 1, err);
    op_coarse_map cur = {0};
    op_status s = OP_OK;
    if (!omask || !group_of || !grp || !mask || !cost || !work || !top || !bottom || !glabel) {
        s = OP_ENOMEM;
        goto done;
    }
    for (int i = 0; i < n; i++)
        group_of[i] = i;
    double upb, lat = mean_link(p->c, &upb);
    const op_graph *g = orig;
    /* parallelism guard: a merged vertex's work may not exceed cap, which
     * starts at twice the mean work per target vertex and doubles whenever
     * no edge is feasible, so the target is still reached (Corollary 3.6) */
    double biggest = 0, cap;
    for (int i = 0; i < n; i++)
        biggest = p->work[i] > biggest ? p->work[i] : biggest;
    cap = 2 * p->total_work_us / target;
    if (cap < biggest)
        cap = biggest;
    double slack = cp_slack, cp0 = 0;
    compute_levels(orig, p->work, top, bottom);
    for (int i = 0; i < n; i++)
        cp0 = bottom[i] > cp0 ? bottom[i] : cp0;
    for (;;) {
        if (g->n_ops <= target)
            break;
        for (int v = 0; v < g->n_ops; v++) {
            mask[v] = ~(uint64_t)0;
            work[v] = 0;
        }
        for (int i = 0; i < n; i++) {
            mask[group_of[i]] &= omask[i];
            work[group_of[i]] += p->work[i];
            glabel[group_of[i]] = label ? label[i] : 0;
        }
        if (slack >= 0)
            compute_levels(g, work, top, bottom);
        for (int e = 0; e < g->n_edges; e++) {
            int u = g->edge_src[e], v = g->edge_dst[e];
            cost[e] = lat + upb * (double)g->edge_bytes[e];
            if (work[u] + work[v] > cap || glabel[u] != glabel[v])
                cost[e] = -1;
            else if (slack >= 0 && slack < PESTO_CP_SLACK_OFF &&
                     merged_path(g, work, top, bottom, u, v) > (1 + slack) * cp0 * (1 + 1e-12))
                cost[e] = -1;
        }
        op_coarse_map next = {0};
        int ng;
        if ((s = one_batch(g, mask, cost, work, cap, target, grp, &ng, &next, st, err)))
            break;
        if (ng == g->n_ops) {
            int guard_on = slack >= 0 && slack < PESTO_CP_SLACK_OFF;
            if ((cap >= p->total_work_us || p->total_work_us <= 0) && !guard_on)
                break; /* no feasible edge */
            cap *= 2;
            if (guard_on)
                slack = slack > 0 ? 2 * slack : 0.05;
            continue;
        }
        for (int i = 0; i < n; i++)
            group_of[i] = grp[group_of[i]];
        op_coarse_map_destroy(&cur);
        cur = next;
        g = cur.coarse;
        st->iterations++;
    }
    if (!s) {
        int ng = g->n_ops;
        op_coarse_map_destroy(&cur);
        s = op_coarse_build(orig, group_of, ng, out, err); /* the final graph, from the original */
    }
done:
    op_coarse_map_destroy(&cur);
    free(omask);
    free(group_of);
    free(grp);
    free(mask);
    free(cost);
    free(work);
    free(top);
    free(bottom);
    free(glabel);
    if (!s)
        st->cp_slack = slack;
    return s;
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
