/*
 * celeritas_fusion.c - Optimal Operation Fusion (Celeritas section 5.1,
 * Algorithm 1): order the ops by CPD-TOPO, cut the sequence at the
 * breakpoints that minimize the communication leaving the clusters
 * (Kernighan's optimal sequential partition, equations 4-6), and merge each
 * run between two breakpoints into one coarse op.
 *
 * Why the result is a DAG (Lemma 2, generalized): the clusters are
 * contiguous runs of a topological order, so every edge between two
 * clusters goes from an earlier run to a later one.  cel_fuse checks exactly
 * that on the coarse graph it builds (and op_coarse_build refuses cycles).
 *
 * The DP: S(0) = 0, S(j) = min over i in [j-R, j-1] of S(i) + cost(i, j),
 * where cost(i, j) is the summed transfer time of edges from ops at
 * positions [i, j) to positions >= j (eq. 4).  It is computed by extending a
 * run one op at a time (eq. 5): adding v adds all of v's out-edges (they all
 * point later in the order) and removes the edges into v from the run.  Each
 * start i is extended at most R times, so the cost is O(n R deg); S(i) is
 * final when i is reached because only earlier starts relax it.
 *
 * Assumptions and differences from the paper:
 *  - Memory[v] = param + output + temp bytes of v; a run's memory is the sum
 *    (conservative: outputs consumed inside the run are freed early).  A run
 *    of one op is always allowed, even above M (there is no other choice).
 *  - Edge costs c_ij are transfer times on the reference link of
 *    core/stats.h (the CCR's link); compute times do not enter the DP.
 *  - Ties between equal costs take the longest run (fewest coarse ops).
 *  - A run may only hold ops that can share a device (kind, per-kind times,
 *    device pins, the devices of their colocation group), so the coarse ops
 *    stay placeable; the paper's TensorFlow graphs had no such pins.
 *  - A run holds ops of at most one colocation group (plus ungrouped ops).
 *    Coarse ops sharing a group must share a device, so a run spanning two
 *    groups would chain them, and on the zoo a few such runs tied half the
 *    coarse graph to one device.
 *  - --target N (used by `opplace coarsen`) sets R = ceil(n / N) when
 *    --fusion-range is not given: at least n/R clusters result.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "placers/celeritas/celeritas_fusion.h"
#include "core/orders.h"
#include "core/stats.h"
#include "opplace/run_ctx.h"

#define CEL_DEFAULT_RANGE 200
#define CEL_DEFAULT_MEMORY_FRACTION 0.25

/* Segment reconstruction: P[j] is the start of the run ending at j. */
static void assign_segments(const int *seq, int n, const int *P, int *group_of, int *n_groups)
{
    int count = 0;
    for (int k = n; k > 0; k = P[k])
        count++;
    int idx = count;
    for (int k = n; k > 0; k = P[k]) {
        idx--;
        for (int q = P[k]; q < k; q++)
            group_of[seq[q]] = idx;
    }
    *n_groups = count;
}

static int masks_meet(uint64_t *run, const uint64_t *op, int words)
{
    uint64_t any = 0;
    for (int w = 0; w < words; w++) {
        run[w] &= op[w];
        any |= run[w];
    }
    return any != 0;
}

op_status cel_optimal_breakpoints(const op_graph *g, const int *seq, const double *edge_cost,
                                  const int64_t *op_mem, int64_t mem_limit, int range,
                                  const uint64_t *elig, int words, const int *coloc,
                                  int *group_of, int *n_groups, double *cut_cost, op_error *err)
{
    int n = g->n_ops;
    if (range < 1)
        return op_fail(err, OP_EUSAGE, "fusion range must be at least 1");
    double *S = op_malloc(((size_t)n + 1) * sizeof *S, err);
    double *out_c = op_malloc(((size_t)n + 1) * sizeof *out_c, err);
    int *P = op_malloc(((size_t)n + 1) * sizeof *P, err);
    int *pos = op_malloc(((size_t)n + 1) * sizeof *pos, err);
    uint64_t *run = op_malloc(((size_t)words + 1) * sizeof *run, err);
    op_status st = OP_OK;
    if (!S || !out_c || !P || !pos || !run) {
        st = OP_ENOMEM;
        goto done;
    }
    for (int q = 0; q < n; q++)
        pos[seq[q]] = q;
    for (int v = 0; v < n; v++) {
        out_c[v] = 0;
        for (int j = g->succ_off[v]; j < g->succ_off[v + 1]; j++)
            out_c[v] += edge_cost[g->succ_edge[j]];
    }
    S[0] = 0;
    P[0] = 0;
    for (int j = 1; j <= n; j++)
        S[j] = INFINITY;
    for (int i = 0; i < n; i++) {
        if ((i & 4095) == 0 && op_interrupted()) { /* 10^5 ops under ASan: 0.3 s */
            st = op_fail(err, OP_EINTERNAL, "celeritas: fusion stopped at Ctrl-C");
            goto done;
        }
        double cost = 0;
        int64_t mem = 0;
        for (int w = 0; w < words; w++)
            run[w] = ~(uint64_t)0;
        int end = i + range < n ? i + range : n, run_group = OP_NONE;
        for (int j = i + 1; j <= end; j++) {
            int v = seq[j - 1];
            if (coloc && coloc[v] != OP_NONE) {
                if (run_group != OP_NONE && run_group != coloc[v])
                    break;
                run_group = coloc[v];
            }
            mem += op_mem[v];
            if (j - 1 > i && mem > mem_limit)
                break;
            if (elig && !masks_meet(run, elig + (size_t)v * words, words) && j - 1 > i)
                break;
            cost += out_c[v];
            for (int k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
                if (pos[g->pred[k]] >= i)
                    cost -= edge_cost[g->pred_edge[k]];
            if (S[i] + cost < S[j]) {
                S[j] = S[i] + cost;
                P[j] = i;
            }
        }
    }
    assign_segments(seq, n, P, group_of, n_groups);
    *cut_cost = n ? S[n] : 0;
done:
    free(S);
    free(out_c);
    free(P);
    free(pos);
    free(run);
    return st;
}

op_status cel_fusion_read_opts(const op_problem *p, op_options *opts, cel_fusion_opts *fo,
                               op_error *err)
{
    int64_t smallest = INT64_MAX;
    for (int d = 0; d < p->nd; d++)
        if (p->c->dev[d].memory_bytes < smallest)
            smallest = p->c->dev[d].memory_bytes;
    double mem = (double)smallest * CEL_DEFAULT_MEMORY_FRACTION;
    long range, target;
    op_status st;
    if ((st = op_options_int(opts, "target", 0, 0, 1L << 30, &target, err)))
        return st;
    long range_def = CEL_DEFAULT_RANGE;
    if (target > 0)
        range_def = (p->n + target - 1) / target;
    if (range_def < 1)
        range_def = 1;
    if ((st = op_options_int(opts, "fusion-range", range_def, 1, 1L << 30, &range, err)))
        return st;
    fo->range = (int)range;
    fo->mem_limit = (int64_t)mem;
    return OP_OK;
}

/* Per op, the devices it may use (its colocation group's, if any), or NULL
 * when every op may use every device. */
static op_status eligibility_masks(const op_problem *p, uint64_t **out, int *words_out,
                                   op_error *err)
{
    int words = (p->nd + 63) / 64, restricted = 0;
    *out = NULL;
    *words_out = words;
    for (int v = 0; v < p->n && !restricted; v++) {
        int grp = p->group_of[v];
        for (int d = 0; d < p->nd && !restricted; d++)
            restricted = grp == OP_NONE ? !op_eligible(p, v, d)
                                        : !p->group_ok[(size_t)grp * p->nd + d];
    }
    if (!restricted)
        return OP_OK;
    uint64_t *m = op_calloc((size_t)p->n * (size_t)words + 1, sizeof *m, err);
    if (!m)
        return OP_ENOMEM;
    for (int v = 0; v < p->n; v++) {
        int grp = p->group_of[v];
        for (int d = 0; d < p->nd; d++) {
            int ok = grp == OP_NONE ? op_eligible(p, v, d) : p->group_ok[(size_t)grp * p->nd + d];
            if (ok)
                m[(size_t)v * words + d / 64] |= (uint64_t)1 << (d % 64);
        }
    }
    *out = m;
    return OP_OK;
}

/* The coarse graph must be a DAG whose edges follow the run order. */
static op_status check_coarse_dag(const op_coarse_map *m, op_error *err)
{
    const op_graph *c = m->coarse;
    for (int e = 0; e < c->n_edges; e++)
        if (c->edge_src[e] >= c->edge_dst[e])
            return op_fail(err, OP_EINTERNAL,
                           "operation fusion: coarse edge %d -> %d goes backwards in the "
                           "CPD-TOPO order (a cycle is possible)", c->edge_src[e],
                           c->edge_dst[e]);
    if (!op_order_is_topological(c, c->topo))
        return op_fail(err, OP_EINTERNAL, "operation fusion: coarse graph is not a DAG");
    return OP_OK;
}

op_status cel_fuse(const op_problem *p, const cel_fusion_opts *fo, op_coarse_map *out,
                   op_error *err)
{
    const op_graph *g = p->g;
    memset(out, 0, sizeof *out);
    op_levels lv;
    op_status st = op_levels_init(&lv, p, err);
    if (st)
        return st;
    int *seq = op_malloc(((size_t)g->n_ops + 1) * sizeof *seq, err);
    int *group_of = op_malloc(((size_t)g->n_ops + 1) * sizeof *group_of, err);
    int64_t *mem = op_malloc(((size_t)g->n_ops + 1) * sizeof *mem, err);
    uint64_t *elig = NULL;
    int words = 1, ng = 0;
    double cut;
    if (!seq || !group_of || !mem)
        st = OP_ENOMEM;
    for (int v = 0; !st && v < g->n_ops; v++)
        mem[v] = cel_op_memory(g, v);
    if (!st)
        st = op_order_cpd_topo(g, lv.cpath, seq, NULL, err);
    if (!st)
        st = eligibility_masks(p, &elig, &words, err);
    if (!st)
        st = cel_optimal_breakpoints(g, seq, lv.c, mem, fo->mem_limit, fo->range, elig, words,
                                     p->group_of, group_of, &ng, &cut, err);
    if (!st && op_interrupted())
        st = op_fail(err, OP_EINTERNAL, "celeritas: fusion stopped at Ctrl-C");
    if (!st) {
        st = op_coarse_build(g, group_of, ng, out, err);
        if (st == OP_EINPUT && err)
            err->code = st = OP_EINTERNAL; /* contiguous runs cannot make a cycle: a bug */
    }
    if (!st && (st = check_coarse_dag(out, err)))
        op_coarse_map_destroy(out);
    op_levels_destroy(&lv);
    free(seq);
    free(group_of);
    free(mem);
    free(elig);
    return st;
}

static op_status coarsen_celeritas(const op_problem *p, op_options *opts, op_coarse_map *out,
                                   op_error *err)
{
    cel_fusion_opts fo;
    op_status st = cel_fusion_read_opts(p, opts, &fo, err);
    return st ? st : cel_fuse(p, &fo, out, err);
}

const op_coarsener op_coarsener_celeritas = {
    .name = "celeritas",
    .summary = "Optimal Operation Fusion: CPD-TOPO order cut at min-communication points",
    .source = "Celeritas section 5.1, Algorithm 1",
    .run = coarsen_celeritas,
};
