/*
 * m_sct.c - Baechi's m-SCT: memory-constrained Small Communication Time
 * scheduling with the favorite-child rule (Jeon et al., SoCC 2020, section
 * 4.3, after Hanen and Munier's SCT algorithm; the Celeritas paper,
 * section 6.2, and Pesto, section 5.2, compare against it).
 *
 * Favorite children come from the LP relaxation Baechi solves (its
 * FavoriteChildLPSolver; here solved with COIN-OR CBC/Clp instead of
 * MOSEK).  Variables: x_e in [0,1] per edge (0: the child is the parent's
 * favorite, so no transfer), s_v >= 0 per op, makespan w.  Minimize w s.t.
 *     s_i + p_i + c_ij x_ij <= s_j              for every edge i -> j
 *     sum_j x_ij >= outdeg(i) - 1                at most one favorite child
 *     sum_i x_ij >= indeg(j) - 1                 at most one favorite parent
 *     s_i + p_i <= w                             for every exit op
 * with p_i the fastest execution time and c_ij the mean transfer time of
 * the edge over all ordered device pairs.  Rounding as Baechi: x_e < 0.5
 * makes the child favorite; processing edges in order, a later favorite
 * replaces an earlier one of the same parent, and a child keeps only its
 * last favorite parent.
 *
 * The LP has edges + ops + 1 columns; on large graphs it takes long (the
 * Celeritas paper measured Baechi's m-SCT at 129 s on a 36k-op
 * Transformer).  The LP runs when the graph has at most M_SCT_LP_MAX_EDGES
 * (4000) edges, else greedy (the former options --lp-max-edges and
 * --favorite).  The solver's time limit is M_SCT_LP_SECONDS (60 s), or
 * --budget-seconds when one is given, and never beyond the command's
 * deadline (the former --lp-seconds); an unfinished LP falls back to
 * greedy.  The LP runs in the killable solver child every exact method
 * shares (solve/lp.h), so the deadline and Ctrl-C reach it.  Greedy (not in the paper): in rank order each op
 * picks as favorite the child with the costliest edge that has no favorite
 * parent yet.  The LP's columns and rows, the rounding's edge order and
 * greedy's op order follow op_rank_order, so no op order of the file
 * changes the favorites (a degenerate LP has several optima, and the
 * solver's pick followed the column order).
 *
 * Scheduling is etf_engine.c with the favorite-child rule (a device whose
 * last op's favorite child is ready and starts earliest there waits for
 * it unless another op is urgent), Baechi's communication model (one
 * channel per device, tensors cached per device), ties by op_rank_order
 * with both sibling orders as m-ETF (bench/RESULTS.md, "Baechi ports side
 * by side"), memory by placer_mem.h's liveness estimate, checked by the
 * simulator.
 */
#include <stdlib.h>
#include <string.h>

#include "core/problem_util.h"
#include "placers/baselines/baselines.h"
#include "placers/baselines/etf_engine.h"
#include "solve/lp.h"

/* Mean transfer time model over ordered device pairs. */
static void mean_link(const op_problem *p, double *lat, double *upb)
{
    op_link_model m = op_cluster_mean_link(p->c);
    *lat = m.latency_us;
    *upb = m.us_per_byte;
}

static double edge_comm(const op_problem *p, int e, double lat, double upb)
{
    return p->nd > 1 ? lat + upb * (double)p->g->edge_bytes[e] : 0;
}

/* The order the favorites are decided in, so no op order of the file
 * changes them: ops by op_rank_order (longest first), edges by the ranks
 * of their ends (op_rank_edges), and each edge's position in it. */
typedef struct sct_order {
    int *rank, *by_rank, *eorder, *epos;
} sct_order;

static void sct_order_free(sct_order *o)
{
    free(o->rank);
    free(o->by_rank);
    free(o->eorder);
    free(o->epos);
}

static op_status sct_order_init(const op_problem *p, sct_order *o, op_error *err)
{
    size_t n = (size_t)p->n, m = (size_t)p->g->n_edges;
    o->rank = op_malloc(n * sizeof(int) + 1, err);
    o->by_rank = op_malloc(n * sizeof(int) + 1, err);
    o->eorder = op_malloc(m * sizeof(int) + 1, err);
    o->epos = op_malloc(m * sizeof(int) + 1, err);
    if (!o->rank || !o->by_rank || !o->eorder || !o->epos ||
        op_rank_order(p, OP_RANK_LONGEST_FIRST, o->rank, err) || op_rank_edges(p->g, o->rank, o->eorder, err))
        return OP_ENOMEM;
    for (int v = 0; v < p->n; v++)
        o->by_rank[o->rank[v]] = v;
    for (int i = 0; i < p->g->n_edges; i++)
        o->epos[o->eorder[i]] = i;
    return OP_OK;
}

/* Baechi's assignment of rounded favorite edges (x_e == 0 favorite), the
 * edges in the order ord gives. */
static void assign_favorites(const op_problem *p, const sct_order *ord,
                             const unsigned char *fav_edge, int *favorite)
{
    const op_graph *g = p->g;
    int *parent = malloc((size_t)p->n * sizeof(int) + 1);
    for (int i = 0; i < p->n; i++)
        favorite[i] = -1;
    if (!parent)
        return; /* no favorites: plain m-ETF */
    for (int i = 0; i < p->n; i++)
        parent[i] = -1;
    for (int i = 0; i < g->n_edges; i++) {
        int e = ord->eorder[i];
        if (!fav_edge[e])
            continue;
        int a = g->edge_src[e], b = g->edge_dst[e];
        favorite[a] = b;
        if (parent[b] >= 0 && parent[b] != a)
            favorite[parent[b]] = -1;
        parent[b] = a;
    }
    /* a parent whose favorite was later claimed by another parent */
    for (int i = 0; i < p->n; i++)
        if (favorite[i] >= 0 && parent[favorite[i]] != i)
            favorite[i] = -1;
    free(parent);
}

static void greedy_favorites(const op_problem *p, const sct_order *ord, int *favorite)
{
    const op_graph *g = p->g;
    double lat, upb;
    mean_link(p, &lat, &upb);
    unsigned char *taken = calloc((size_t)p->n + 1, 1);
    for (int i = 0; i < p->n; i++)
        favorite[i] = -1;
    if (!taken)
        return; /* no favorites: plain m-ETF */
    for (int i = 0; i < g->n_edges;) { /* each source's edges, sources in rank order */
        int v = g->edge_src[ord->eorder[i]], best = -1;
        double best_c = -1;
        for (; i < g->n_edges && g->edge_src[ord->eorder[i]] == v; i++) {
            int e = ord->eorder[i];
            double c = edge_comm(p, e, lat, upb);
            if (!taken[g->edge_dst[e]] && c > best_c) {
                best_c = c;
                best = g->edge_dst[e];
            }
        }
        if (best >= 0) {
            favorite[v] = best;
            taken[best] = 1;
        }
    }
    free(taken);
}

/* Solve the LP through the runner every exact method shares
 * (solve/lp.h: CBC in a child process killed at the deadline
 * or Ctrl-C); returns 1 and fills fav_edge when it proved an optimum, 0
 * otherwise (cut short, or no memory). */
static int lp_favorites(const op_problem *p, const sct_order *ord, double seconds,
                        double deadline, unsigned char *fav_edge, op_error *err)
{
    const op_graph *g = p->g;
    int E = g->n_edges, N = p->n, W = E + N;
    double lat, upb;
    mean_link(p, &lat, &upb);
    lp_model m = {0};
    for (int e = 0; e < E; e++) /* x_e */
        lp_col(&m, 0, 1, 0, 0);
    for (int v = 0; v < N; v++) /* s_v */
        lp_col(&m, 0, LP_INF, 0, 0);
    lp_col(&m, 0, LP_INF, 1, 0); /* w */
    /* columns and rows in ord's order: x_e is column epos[e], s_v E + rank[v] */
    const int *X = ord->epos, *S = ord->rank;
    for (int k = 0; k < E; k++) { /* s_j - s_i - c x_e >= p_i */
        int e = ord->eorder[k], i = g->edge_src[e], j = g->edge_dst[e];
        lp_term(&m, E + S[j], 1);
        lp_term(&m, E + S[i], -1);
        lp_term(&m, X[e], -edge_comm(p, e, lat, upb));
        lp_row_end(&m, p->min_exec[i], LP_INF);
    }
    for (int t = 0; t < N; t++) {
        int v = ord->by_rank[t];
        int out = g->succ_off[v + 1] - g->succ_off[v], in = g->pred_off[v + 1] - g->pred_off[v];
        if (out >= 2) {
            for (int k = g->succ_off[v]; k < g->succ_off[v + 1]; k++)
                lp_term(&m, X[g->succ_edge[k]], 1);
            lp_row_end(&m, out - 1, LP_INF);
        }
        if (in >= 2) {
            for (int k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
                lp_term(&m, X[g->pred_edge[k]], 1);
            lp_row_end(&m, in - 1, LP_INF);
        }
        if (out == 0) { /* w - s_v >= p_v */
            lp_term(&m, W, 1);
            lp_term(&m, E + S[v], -1);
            lp_row_end(&m, p->min_exec[v], LP_INF);
        }
    }
    int ok = 0;
    if (!m.oom) {
        lp_solve_opts o = {.seconds = seconds, .deadline = deadline, .relax = 1};
        lp_solution sol;
        if (!lp_solve(&m, &o, &sol, err)) {
            if (sol.status == LP_OPTIMAL && sol.x) {
                for (int e = 0; e < E; e++)
                    fav_edge[e] = sol.x[X[e]] < 0.5;
                ok = 1;
            }
            free(sol.x);
        }
    }
    lp_free(&m);
    return ok;
}

/* The LP's limits: graphs of more edges take the greedy rule (the LP on a
 * 4,000-edge graph takes about a second with CBC); the solver's time limit
 * when no --budget-seconds is given. */
#define M_SCT_LP_MAX_EDGES 4000
#define M_SCT_LP_SECONDS 60.0

/* Favorite child per op (-1 none): from the LP on graphs of at most
 * max_edges edges (M_SCT_LP_MAX_EDGES in the placer), else greedy. */
op_status m_sct_favorites(const op_place_ctx *ctx, long max_edges, int *favorite, op_error *err)
{
    const op_problem *p = ctx->p;
    double seconds = ctx->budget_seconds > 0 ? ctx->budget_seconds : M_SCT_LP_SECONDS;
    double left = op_seconds_left(ctx);
    if (seconds > left)
        seconds = left;
    if (seconds < 0.1)
        seconds = 0.1;
    int use_lp = p->g->n_edges <= max_edges;
    sct_order ord = {0};
    if (sct_order_init(p, &ord, err)) {
        sct_order_free(&ord);
        return OP_ENOMEM;
    }
    int ok = 0;
    if (use_lp && p->g->n_edges > 0) {
        unsigned char *fav_edge = op_calloc((size_t)p->g->n_edges, 1, err);
        if (!fav_edge) {
            sct_order_free(&ord);
            return OP_ENOMEM;
        }
        op_error lerr = {0}; /* a failed solve falls back to greedy, as a slow one */
        ok = lp_favorites(p, &ord, seconds, op_seconds_now() + seconds, fav_edge, &lerr);
        if (ok)
            assign_favorites(p, &ord, fav_edge, favorite);
        free(fav_edge);
        if (!ok)
            op_progress(ctx, "m-sct: the favorite-child LP did not finish; using the greedy rule");
    }
    if (!ok)
        greedy_favorites(p, &ord, favorite);
    sct_order_free(&ord);
    return OP_OK;
}

static op_status place_m_sct(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    etf_options o = {.name = "m-sct", .tie = ETF_TIE_RANK};
    if (placer_read_order_option(ctx, &o.set_order, err))
        return OP_EUSAGE;
    int *favorite = op_malloc((size_t)ctx->p->n * sizeof(int) + 1, err);
    if (!favorite)
        return OP_ENOMEM;
    op_status st = m_sct_favorites(ctx, M_SCT_LP_MAX_EDGES, favorite, err);
    o.favorite = favorite;
    if (!st)
        st = etf_schedule_checked(ctx, &o, out, err);
    free(favorite);
    return st;
}

const op_placer op_placer_m_sct = {
    .name = "m-sct",
    .summary = "Baechi m-SCT: ETF with LP-derived favorite children kept on their parent's device",
    .source = "Baechi (SoCC 2020) section 4.3; Hanen & Munier SCT; Celeritas 6.2",
    .place = place_m_sct,
};
