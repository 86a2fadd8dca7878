/*
 * test_pesto_coarsen.c - Pesto's coarsening policy (pesto_coarsen.c): the
 * coarse graph stays acyclic with colocation groups that span the step,
 * work is conserved, chains contract, parallel branches stay apart while
 * the target allows it (hand-computed), and the incumbent's order carried
 * onto the coarse graph (pesto_project_order) is a topological order.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coarsen/coarsen.h"
#include "placers/pesto/pesto_coarsen.h"
#include "testkit.h"

/* A random DAG of n ops (edge i -> j, i < j, with probability prob) whose
 * ops belong, one in three, to colocation groups of three members drawn
 * far apart in the order (like an export's forward op, backward op and
 * optimizer update), with times 1..20 us. */
static op_graph *dag_with_groups(int n, double prob, uint64_t seed)
{
    uint64_t s = seed * 7919 + 1;
    op_graph_builder *b = op_graph_builder_new("groups", NULL);
    char name[16], grp[16];
    int n_groups = n / 9;
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "v%d", i);
        op_op_spec spec = {.name = name, .time_us = 1 + (double)(tk_rand(&s) % 20),
                           .output_bytes = 1000};
        /* group k holds ops k, k + n/3 and k + 2n/3 (when they exist) */
        int k = i % (n / 3 + 1);
        if (k < n_groups) {
            snprintf(grp, sizeof grp, "g%d", k);
            spec.colocate = grp;
        }
        tk_op_full(b, &spec);
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if ((double)(tk_rand(&s) % 10000) < prob * 10000)
                tk_edge(b, i, j, 100 + (int64_t)(tk_rand(&s) % 5000));
    return tk_finish(b);
}

/* The properties every coarsening must have: each op in one coarse op,
 * every original edge forward in the coarse topological order (the coarse
 * graph is a DAG), coarse work = the sum of its members' and the totals
 * equal, labels never mixed, members of one colocation group placed
 * together (one coarse op or one coarse colocation group). */
static void check_map(const op_problem *p, const op_coarse_map *m, const int *label,
                      const char *what)
{
    const op_graph *g = p->g, *cg = m->coarse;
    op_error err = {0};
    for (int e = 0; e < g->n_edges; e++) {
        int a = m->group_of[g->edge_src[e]], b = m->group_of[g->edge_dst[e]];
        cr_assert(a == b || cg->topo_pos[a] < cg->topo_pos[b], "%s: edge %d goes backwards",
                  what, e);
    }
    op_problem cp;
    cr_assert_eq(op_problem_init(&cp, cg, p->c, &err), OP_OK, "%s: %s", what, err.msg);
    double *sum = calloc((size_t)cg->n_ops, sizeof *sum);
    int *lab = malloc((size_t)cg->n_ops * sizeof *lab);
    int *coloc = malloc(((size_t)g->n_groups + 1) * sizeof *coloc);
    for (int k = 0; k < cg->n_ops; k++)
        lab[k] = -1;
    for (int k = 0; k < g->n_groups; k++)
        coloc[k] = -2;
    for (int i = 0; i < g->n_ops; i++) {
        int k = m->group_of[i];
        sum[k] += p->work[i];
        if (label) {
            cr_assert(lab[k] < 0 || lab[k] == label[i], "%s: coarse op %d mixes labels", what, k);
            lab[k] = label[i];
        }
        int c = g->colocate[i];
        if (c == OP_NONE)
            continue;
        /* the coarse colocation group (or, without one, the coarse op) */
        int where = cg->colocate[k] != OP_NONE ? cg->colocate[k] : -3 - k;
        cr_assert(coloc[c] == -2 || coloc[c] == where, "%s: group %d split", what, c);
        coloc[c] = where;
    }
    for (int k = 0; k < cg->n_ops; k++)
        cr_assert_float_eq(cp.work[k], sum[k], 1e-9 * (1 + sum[k]), "%s: coarse op %d", what, k);
    cr_assert_float_eq(cp.total_work_us, p->total_work_us, 1e-9 * p->total_work_us, "%s", what);
    free(sum);
    free(lab);
    free(coloc);
    op_problem_destroy(&cp);
}

Test(pesto_coarsen, random_dags_with_spanning_groups_stay_acyclic, .timeout = 300)
{
    for (uint64_t seed = 1; seed <= 60; seed++) {
        int n = 12 + (int)(seed * 53 % 230);
        double prob = 0.01 + 0.25 * (double)(seed % 6) / 6.0;
        tk_problem tp;
        tk_bind(&tp, dag_with_groups(n, prob, seed),
                tk_cluster(2 + (int)(seed % 3), 5, 1e-4, 1L << 40));
        int *label = malloc((size_t)n * sizeof *label);
        for (int i = 0; i < n; i++)
            label[i] = (int)((i * 2654435761u + seed) % 3);
        int targets[3] = {1, n / 4 + 1, n / 2 + 1};
        for (int t = 0; t < 3; t++)
            for (int labelled = 0; labelled < 2; labelled++)
                for (int guard = 0; guard < 2; guard++) {
                    char what[96];
                    snprintf(what, sizeof what, "seed %d n=%d p=%.2f target %d%s%s", (int)seed,
                             n, prob, targets[t], labelled ? " labelled" : "",
                             guard ? "" : " paper's priority");
                    op_coarse_map m;
                    pesto_coarsen_stats st;
                    op_error err = {0};
                    const int *lab = labelled ? label : NULL;
                    cr_assert_eq(pesto_coarsen_ex(&tp.p, targets[t], guard ? 0 : -1, lab, &m,
                                                  &st, &err),
                                 OP_OK, "%s: %s", what, err.msg);
                    cr_assert_eq(st.cycle_fallbacks, 0, "%s: a batch made a cycle", what);
                    check_map(&tp.p, &m, lab, what);
                    op_coarse_map_destroy(&m);
                }
        free(label);
        tk_unbind(&tp);
    }
}

/* A chain of 12 ops of 5 us: every link is a chain link (it lengthens no
 * path), so coarsening needs no slack, and to 3 vertices gives 3
 * contiguous runs of 4 ops (the cap, twice the mean work per target
 * vertex, is 40 us; pairs merge level by level: 6 pairs, then 3). */
Test(pesto_coarsen, chains_contract)
{
    op_graph_builder *b = op_graph_builder_new("chain", NULL);
    char name[16];
    int v[12];
    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "c%d", i);
        v[i] = tk_op(b, name, 5, 1000);
        if (i > 0)
            tk_edge(b, v[i - 1], v[i], 1000);
    }
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(2, 5, 1e-4, 1L << 40));
    op_error err = {0};
    for (int target = 1; target <= 3; target += 2) {
        op_coarse_map m;
        pesto_coarsen_stats st;
        cr_assert_eq(pesto_coarsen(&tp.p, target, &m, &st, &err), OP_OK, "%s", err.msg);
        cr_assert_eq(m.coarse->n_ops, target);
        cr_assert_float_eq(st.cp_slack, 0, 1e-12, "a chain needs no slack");
        int changes = 0;
        for (int i = 1; i < 12; i++)
            changes += m.group_of[v[i]] != m.group_of[v[i - 1]];
        cr_assert_eq(changes, target - 1, "coarse ops are not contiguous runs");
        if (target == 3)
            for (int i = 0; i < 12; i++)
                cr_assert_eq(m.group_of[v[i]], m.group_of[v[i / 4 * 4]], "runs of 4");
        check_map(&tp.p, &m, NULL, "chain");
        op_coarse_map_destroy(&m);
    }
    tk_unbind(&tp);
}

/* Fork-join: src (7 us) -> A = a1 -> a2 -> a3 (8 us each), B = b1 -> b2
 * (8 us each), C = c1 (6 us) -> sink (7 us).  Critical path 7 + 24 + 7 =
 * 38 us, work 60 us; the cap (twice the mean work per target vertex) is
 * 24 us at target 5 and 30 us at target 4.
 *   Target 5: chain links go first, so the branches contract to one
 *   vertex each and stay apart: {src} {A} {B} {C} {sink}, critical path
 *   still 38.
 *   Target 4: one more merge.  Merging src or sink into a branch makes the
 *   other branches wait for it (src + C, then A: 7 + 6 + 24 + 7 = 44 us),
 *   and A with another branch runs 24 + 6 or more in a row (>= 44 us); B
 *   and C, one after the other (16 + 6 = 22 <= 24 us), fit beside A:
 *   {src} {A} {B, C} {sink}, critical path 38. */
Test(pesto_coarsen, fork_join_branches_stay_apart)
{
    op_graph_builder *b = op_graph_builder_new("fork", NULL);
    int src = tk_op(b, "src", 7, 100);
    int a1 = tk_op(b, "a1", 8, 100), a2 = tk_op(b, "a2", 8, 100), a3 = tk_op(b, "a3", 8, 100);
    int b1 = tk_op(b, "b1", 8, 100), b2 = tk_op(b, "b2", 8, 100);
    int c1 = tk_op(b, "c1", 6, 100), sink = tk_op(b, "sink", 7, 100);
    tk_edge(b, src, a1, 100);
    tk_edge(b, a1, a2, 100);
    tk_edge(b, a2, a3, 100);
    tk_edge(b, a3, sink, 100);
    tk_edge(b, src, b1, 100);
    tk_edge(b, b1, b2, 100);
    tk_edge(b, b2, sink, 100);
    tk_edge(b, src, c1, 100);
    tk_edge(b, c1, sink, 100);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(3, 5, 1e-4, 1L << 40));
    cr_assert_float_eq(tp.p.critical_path_us, 38, 1e-9);
    op_error err = {0};
    op_coarse_map m;
    pesto_coarsen_stats st;
    int *g;

    cr_assert_eq(pesto_coarsen(&tp.p, 5, &m, &st, &err), OP_OK, "%s", err.msg);
    g = m.group_of;
    cr_assert_eq(m.coarse->n_ops, 5);
    cr_assert(g[a1] == g[a2] && g[a2] == g[a3] && g[b1] == g[b2], "chains contract");
    int five[5] = {g[src], g[a1], g[b1], g[c1], g[sink]};
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++)
            cr_assert_neq(five[i], five[j], "vertices %d and %d merged", i, j);
    op_problem cp;
    cr_assert_eq(op_problem_init(&cp, m.coarse, tp.p.c, &err), OP_OK, "%s", err.msg);
    cr_assert_float_eq(cp.critical_path_us, 38, 1e-9);
    op_problem_destroy(&cp);
    op_coarse_map_destroy(&m);

    cr_assert_eq(pesto_coarsen(&tp.p, 4, &m, &st, &err), OP_OK, "%s", err.msg);
    g = m.group_of;
    cr_assert_eq(m.coarse->n_ops, 4);
    cr_assert(g[a1] == g[a3] && g[b1] == g[b2] && g[b1] == g[c1], "B and C share a vertex");
    cr_assert(g[a1] != g[b1] && g[src] != g[a1] && g[src] != g[b1] && g[sink] != g[a1] &&
              g[sink] != g[b1] && g[src] != g[sink]);
    cr_assert_eq(op_problem_init(&cp, m.coarse, tp.p.c, &err), OP_OK, "%s", err.msg);
    cr_assert_float_eq(cp.critical_path_us, 38, 1e-9);
    op_problem_destroy(&cp);
    op_coarse_map_destroy(&m);
    tk_unbind(&tp);
}

/* A training step in the PyTorch export's shape: forward f0..f(K-1), then
 * backward b(K-1)..b0, then updates u0..u(K-1); f_k, b_k and u_k share a
 * colocation group (it spans the step).  Coarsening must stay acyclic,
 * keep each group together, and never merge a forward op with its own
 * backward op without everything between them. */
Test(pesto_coarsen, step_spanning_groups)
{
    enum { K = 24 };
    op_graph_builder *b = op_graph_builder_new("step", NULL);
    int f[K], bw[K], u[K];
    char name[16], grp[16];
    for (int k = 0; k < K; k++) {
        snprintf(name, sizeof name, "f%d", k);
        snprintf(grp, sizeof grp, "L%d", k);
        f[k] = tk_op_full(b, &(op_op_spec){.name = name, .time_us = 10, .output_bytes = 4000,
                                           .colocate = grp});
    }
    for (int k = K - 1; k >= 0; k--) {
        snprintf(name, sizeof name, "b%d", k);
        snprintf(grp, sizeof grp, "L%d", k);
        bw[k] = tk_op_full(b, &(op_op_spec){.name = name, .time_us = 20, .output_bytes = 4000,
                                            .colocate = grp});
    }
    for (int k = 0; k < K; k++) {
        snprintf(name, sizeof name, "u%d", k);
        snprintf(grp, sizeof grp, "L%d", k);
        u[k] = tk_op_full(b, &(op_op_spec){.name = name, .time_us = 3, .output_bytes = 10,
                                           .colocate = grp});
    }
    for (int k = 0; k < K; k++) {
        if (k > 0)
            tk_edge(b, f[k - 1], f[k], 4000);
        tk_edge(b, f[k], bw[k], 4000); /* the activation saved for backward */
        if (k + 1 < K)
            tk_edge(b, bw[k + 1], bw[k], 4000);
        tk_edge(b, bw[k], u[k], 1000);
    }
    tk_edge(b, f[K - 1], bw[K - 1], 4000);
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(4, 5, 1e-4, 1L << 40));
    for (int target = 6; target <= 48; target *= 2) {
        op_coarse_map m;
        pesto_coarsen_stats st;
        op_error err = {0};
        cr_assert_eq(pesto_coarsen(&tp.p, target, &m, &st, &err), OP_OK, "%s", err.msg);
        cr_assert_eq(st.cycle_fallbacks, 0);
        cr_assert_leq(m.coarse->n_ops, target, "stalled at %d", m.coarse->n_ops);
        check_map(&tp.p, &m, NULL, "step");
        for (int k = 0; k + 1 < K; k++)
            cr_assert(m.group_of[f[k]] != m.group_of[bw[k]] ||
                          m.group_of[f[k + 1]] == m.group_of[f[k]],
                      "f%d and b%d merged without f%d between them", k, k, k + 1);
        op_coarse_map_destroy(&m);
    }
    tk_unbind(&tp);
}

/* pesto_project_order: a topological order of the coarse graph, and with
 * no merging (target = n) exactly the fine order it was given. */
Test(pesto_coarsen, projected_order_is_topological)
{
    for (uint64_t seed = 1; seed <= 30; seed++) {
        int n = 20 + (int)(seed * 31 % 120);
        tk_problem tp;
        tk_bind(&tp, dag_with_groups(n, 0.08, seed), tk_cluster(3, 5, 1e-4, 1L << 40));
        const op_graph *g = tp.p.g;
        /* a fine order: a random topological order (Kahn, random ready op) */
        uint64_t s = seed;
        double *when = malloc((size_t)n * sizeof *when);
        int *indeg = malloc((size_t)n * sizeof *indeg), *ready = malloc((size_t)n * sizeof *ready);
        int nr = 0;
        for (int v = 0; v < n; v++)
            if ((indeg[v] = g->pred_off[v + 1] - g->pred_off[v]) == 0)
                ready[nr++] = v;
        for (int t = 0; t < n; t++) {
            int k = (int)(tk_rand(&s) % (uint64_t)nr), v = ready[k];
            ready[k] = ready[--nr];
            when[v] = 3.0 * t;
            for (int j = g->succ_off[v]; j < g->succ_off[v + 1]; j++)
                if (--indeg[g->succ[j]] == 0)
                    ready[nr++] = g->succ[j];
        }
        int targets[3] = {n, n / 3 + 1, 2};
        for (int t = 0; t < 3; t++) {
            op_coarse_map m;
            op_error err = {0};
            cr_assert_eq(pesto_coarsen(&tp.p, targets[t], &m, NULL, &err), OP_OK, "%s", err.msg);
            int nc = m.coarse->n_ops;
            int *seq = malloc((size_t)nc * sizeof *seq), *pos = malloc((size_t)nc * sizeof *pos);
            cr_assert_eq(pesto_project_order(&m, when, seq, &err), OP_OK, "%s", err.msg);
            for (int k = 0; k < nc; k++)
                pos[k] = -1;
            for (int k = 0; k < nc; k++) {
                cr_assert(seq[k] >= 0 && seq[k] < nc && pos[seq[k]] < 0, "not a permutation");
                pos[seq[k]] = k;
            }
            for (int e = 0; e < m.coarse->n_edges; e++)
                cr_assert_lt(pos[m.coarse->edge_src[e]], pos[m.coarse->edge_dst[e]],
                             "seed %d target %d: coarse edge %d backwards", (int)seed,
                             targets[t], e);
            if (nc == n) /* nothing merged: the fine order itself */
                for (int k = 1; k < nc; k++) {
                    int prev = -1, cur = -1;
                    for (int i = 0; i < n; i++) {
                        if (m.group_of[i] == seq[k - 1])
                            prev = i;
                        if (m.group_of[i] == seq[k])
                            cur = i;
                    }
                    cr_assert_lt(when[prev], when[cur]);
                }
            free(seq);
            free(pos);
            op_coarse_map_destroy(&m);
        }
        free(when);
        free(indeg);
        free(ready);
        tk_unbind(&tp);
    }
}
