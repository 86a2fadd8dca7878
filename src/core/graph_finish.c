/*
 * graph_finish.c - validating and freezing a graph (op_graph_finish).
 *
 * Steps, each O(ops + edges):
 *   1. sort edges by (src, dst) with two counting-sort passes and merge
 *      duplicates, keeping the largest byte count (formats.md section 1);
 *   2. build CSR successor and predecessor lists;
 *   3. Kahn's algorithm for a topological order; if ops remain, walk
 *      predecessors inside the remainder to report one cycle by name;
 *   4. check that colocation groups can be honoured: one device pin and one
 *      kind per group, and per-kind times that leave some kind for all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_hooks.h"
#include "core/graph_builder.h"

/* Stable counting sort of perm[0..m) by key[perm[i]] in [0, n). */
static op_status counting_sort(int *perm, const int *key, int m, int n, op_error *err)
{
    int *count = op_calloc((size_t)n + 1, sizeof *count, err);
    int *out = op_malloc((size_t)m * sizeof *out + 1, err);
    if (!count || !out) {
        free(count);
        free(out);
        return OP_ENOMEM;
    }
    for (int i = 0; i < m; i++)
        count[key[perm[i]] + 1]++;
    for (int k = 0; k < n; k++)
        count[k + 1] += count[k];
    for (int i = 0; i < m; i++)
        out[count[key[perm[i]]]++] = perm[i];
    memcpy(perm, out, (size_t)m * sizeof *perm);
    free(count);
    free(out);
    return OP_OK;
}

static op_status sort_and_merge_edges(op_graph_builder *b, op_graph *g, op_error *err)
{
    int m = b->n_edges, n = b->n_ops;
    int *perm = op_malloc((size_t)m * sizeof *perm + 1, err);
    if (!perm)
        return OP_ENOMEM;
    for (int i = 0; i < m; i++)
        perm[i] = i;
    if (counting_sort(perm, b->edge_dst, m, n, err) || counting_sort(perm, b->edge_src, m, n, err)) {
        free(perm);
        return OP_ENOMEM;
    }
    g->edge_src = op_malloc((size_t)m * sizeof(int) + 1, err);
    g->edge_dst = op_malloc((size_t)m * sizeof(int) + 1, err);
    g->edge_bytes = op_malloc((size_t)m * sizeof(int64_t) + 1, err);
    if (!g->edge_src || !g->edge_dst || !g->edge_bytes) {
        free(perm);
        return OP_ENOMEM;
    }
    int k = 0;
    for (int i = 0; i < m; i++) {
        int e = perm[i], s = b->edge_src[e], d = b->edge_dst[e];
        if (s == d) {
            free(perm);
            return op_fail(err, OP_EINPUT, "%s: the graph has a cycle: %s -> %s", b->origin,
                           b->op_name[s], b->op_name[d]);
        }
        if (k > 0 && g->edge_src[k - 1] == s && g->edge_dst[k - 1] == d) {
            if (b->edge_bytes[e] > g->edge_bytes[k - 1])
                g->edge_bytes[k - 1] = b->edge_bytes[e];
            continue;
        }
        g->edge_src[k] = s;
        g->edge_dst[k] = d;
        g->edge_bytes[k] = b->edge_bytes[e];
        k++;
    }
    g->n_edges = k;
    free(perm);
    return OP_OK;
}

static op_status build_csr(op_graph *g, op_error *err)
{
    int n = g->n_ops, m = g->n_edges;
    g->succ_off = op_calloc((size_t)n + 1, sizeof(int), err);
    g->pred_off = op_calloc((size_t)n + 1, sizeof(int), err);
    g->succ = op_malloc((size_t)m * sizeof(int) + 1, err);
    g->succ_edge = op_malloc((size_t)m * sizeof(int) + 1, err);
    g->pred = op_malloc((size_t)m * sizeof(int) + 1, err);
    g->pred_edge = op_malloc((size_t)m * sizeof(int) + 1, err);
    if (!g->succ_off || !g->pred_off || !g->succ || !g->succ_edge || !g->pred || !g->pred_edge)
        return OP_ENOMEM;
    for (int e = 0; e < m; e++) {
        g->succ_off[g->edge_src[e] + 1]++;
        g->pred_off[g->edge_dst[e] + 1]++;
    }
    for (int i = 0; i < n; i++) {
        g->succ_off[i + 1] += g->succ_off[i];
        g->pred_off[i + 1] += g->pred_off[i];
    }
    int *sfill = op_malloc((size_t)n * sizeof(int) + 1, err);
    int *pfill = op_malloc((size_t)n * sizeof(int) + 1, err);
    if (!sfill || !pfill) {
        free(sfill);
        free(pfill);
        return OP_ENOMEM;
    }
    memcpy(sfill, g->succ_off, (size_t)n * sizeof(int));
    memcpy(pfill, g->pred_off, (size_t)n * sizeof(int));
    /* edges are sorted by (src, dst), so both lists come out sorted */
    for (int e = 0; e < m; e++) {
        int s = g->edge_src[e], d = g->edge_dst[e];
        g->succ[sfill[s]] = d;
        g->succ_edge[sfill[s]++] = e;
        g->pred[pfill[d]] = s;
        g->pred_edge[pfill[d]++] = e;
    }
    free(sfill);
    free(pfill);
    return OP_OK;
}

/* Report one cycle among the ops Kahn's algorithm could not order
 * (indeg[v] > 0).  Every such op has a predecessor that is also left, so
 * walking predecessors must revisit an op. */
static op_status report_cycle(const op_graph *g, const int *indeg, const char *origin,
                              op_error *err)
{
    int n = g->n_ops, start = -1;
    for (int i = 0; i < n && start < 0; i++)
        if (indeg[i] > 0)
            start = i;
    int *seen_at = op_malloc((size_t)n * sizeof(int), err);
    int *path = op_malloc((size_t)n * sizeof(int), err);
    if (!seen_at || !path) {
        free(seen_at);
        free(path);
        return OP_ENOMEM;
    }
    for (int i = 0; i < n; i++)
        seen_at[i] = -1;
    int len = 0, v = start;
    while (seen_at[v] < 0) {
        seen_at[v] = len;
        path[len++] = v;
        int next = -1;
        for (int k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
            if (indeg[g->pred[k]] > 0) {
                next = g->pred[k];
                break;
            }
        v = next;
    }
    /* path[seen_at[v]..len) walks the cycle backwards; print it forwards */
    char msg[OP_ERROR_MSG_MAX];
    size_t used = 0;
    for (int i = len - 1; i >= seen_at[v] && used < sizeof msg - 64; i--)
        used += (size_t)snprintf(msg + used, sizeof msg - used, "%s -> ", g->op_name[path[i]]);
    if (used < sizeof msg)
        snprintf(msg + used, sizeof msg - used, "%s", g->op_name[path[len - 1]]);
    free(seen_at);
    free(path);
    return op_fail(err, OP_EINPUT, "%s: the graph has a cycle: %.900s", origin, msg);
}

static op_status topo_sort(op_graph *g, const char *origin, op_error *err)
{
    int n = g->n_ops;
    int *indeg = op_malloc((size_t)n * sizeof(int) + 1, err);
    g->topo = op_malloc((size_t)n * sizeof(int) + 1, err);
    g->topo_pos = op_malloc((size_t)n * sizeof(int) + 1, err);
    if (!indeg || !g->topo || !g->topo_pos) {
        free(indeg);
        return OP_ENOMEM;
    }
    int head = 0, tail = 0;
    for (int i = 0; i < n; i++) {
        indeg[i] = g->pred_off[i + 1] - g->pred_off[i];
        if (indeg[i] == 0)
            g->topo[tail++] = i;
    }
    while (head < tail) {
        int v = g->topo[head++];
        for (int k = g->succ_off[v]; k < g->succ_off[v + 1]; k++)
            if (--indeg[g->succ[k]] == 0)
                g->topo[tail++] = g->succ[k];
    }
    op_status st = OP_OK;
    if (tail < n)
        st = report_cycle(g, indeg, origin, err);
    else
        for (int i = 0; i < n; i++)
            g->topo_pos[g->topo[i]] = i;
    free(indeg);
    return st;
}

static int op_allows_kind(const op_graph *g, int op, int kind)
{
    if (g->kind[op] != OP_NONE && g->kind[op] != kind)
        return 0;
    for (int e = g->time_off[op]; e < g->time_off[op + 1]; e++)
        if (g->time_kind[e] == OP_ANY_KIND || g->time_kind[e] == kind)
            return 1;
    return 0;
}

static int op_has_any_kind_time(const op_graph *g, int op)
{
    return g->time_kind[g->time_off[op]] == OP_ANY_KIND;
}

/* Each op's own pins must agree: a kind pin needs a time for that kind. */
static op_status check_op_pins(const op_graph *g, const char *origin, op_error *err)
{
    for (int i = 0; i < g->n_ops; i++)
        if (g->kind[i] != OP_NONE && !op_allows_kind(g, i, g->kind[i]))
            return op_fail(err, OP_EINPUT,
                           "%s: op '%s' must run on kind '%s' but its time_us gives no time "
                           "for that kind", origin, g->op_name[i], g->kind_name[g->kind[i]]);
    return OP_OK;
}

/* A colocation group runs on one device, so its members must agree on the
 * device pin and the kind, and some kind must be allowed for every member. */
static op_status check_groups(const op_graph *g, const char *origin, op_error *err)
{
    int ng = g->n_groups;
    int *first = op_malloc((size_t)ng * sizeof(int) + 1, err);
    if (!first)
        return OP_ENOMEM;
    for (int k = 0; k < ng; k++)
        first[k] = -1;
    op_status st = OP_OK;
    for (int i = 0; i < g->n_ops && !st; i++) {
        int grp = g->colocate[i];
        if (grp == OP_NONE)
            continue;
        int f = first[grp];
        if (f < 0) {
            first[grp] = i;
            continue;
        }
        if (g->device[i] && g->device[f] && strcmp(g->device[i], g->device[f]) != 0)
            st = op_fail(err, OP_EINPUT,
                         "%s: colocation group '%s' pins op '%s' to '%s' but op '%s' to '%s'",
                         origin, g->group_name[grp], g->op_name[f], g->device[f], g->op_name[i],
                         g->device[i]);
        else if (g->kind[i] != OP_NONE && g->kind[f] != OP_NONE && g->kind[i] != g->kind[f])
            st = op_fail(err, OP_EINPUT,
                         "%s: colocation group '%s' needs kind '%s' for op '%s' but '%s' for "
                         "op '%s'", origin, g->group_name[grp], g->kind_name[g->kind[f]],
                         g->op_name[f], g->kind_name[g->kind[i]], g->op_name[i]);
    }
    /* some kind every member allows (ops with one time for all kinds allow
     * any kind, including ones the graph never names) */
    int *off = op_calloc((size_t)ng + 1, sizeof(int), err);
    int *members = op_malloc((size_t)g->n_ops * sizeof(int) + 1, err);
    if (!off || !members) {
        free(off);
        free(members);
        free(first);
        return OP_ENOMEM;
    }
    for (int i = 0; i < g->n_ops; i++)
        if (g->colocate[i] != OP_NONE)
            off[g->colocate[i] + 1]++;
    for (int k = 0; k < ng; k++)
        off[k + 1] += off[k];
    for (int i = 0; i < g->n_ops; i++)
        if (g->colocate[i] != OP_NONE)
            members[off[g->colocate[i]]++] = i;
    for (int k = ng; k > 0; k--) /* the fill advanced each start to its end */
        off[k] = off[k - 1];
    off[0] = 0;
    for (int grp = 0; grp < ng && !st; grp++) {
        int lo = off[grp], hi = off[grp + 1], first_c = -1, ok = 0;
        for (int m = lo; m < hi && first_c < 0; m++)
            if (g->kind[members[m]] != OP_NONE || !op_has_any_kind_time(g, members[m]))
                first_c = members[m];
        if (first_c < 0)
            continue;
        /* the kinds a common kind can be: those the first constrained member
         * allows (its pin, or the few kinds its time_us names), so the check
         * is linear in the group's size, not in (groups x kinds) */
        int cand[64], nc = 0;
        if (g->kind[first_c] != OP_NONE)
            cand[nc++] = g->kind[first_c];
        else
            for (int e = g->time_off[first_c]; e < g->time_off[first_c + 1] && nc < 64; e++)
                cand[nc++] = g->time_kind[e];
        for (int c = 0; c < nc && !ok; c++) {
            ok = 1;
            for (int m = lo; m < hi && ok; m++)
                ok = op_allows_kind(g, members[m], cand[c]);
        }
        if (!ok)
            st = op_fail(err, OP_EINPUT,
                         "%s: colocation group '%s' has no device kind on which all its ops "
                         "can run (check their kind and time_us keys)", origin,
                         g->group_name[grp]);
    }
    free(off);
    free(members);
    free(first);
    return st;
}

/* Totals of bytes must fit an int64 with room to spare, so every sum taken
 * later (per device, per channel, over a run) cannot overflow. */
static op_status check_totals(const op_graph *g, const char *origin, op_error *err)
{
    const int64_t limit = (int64_t)1 << 60;
    int64_t total = 0;
    for (int i = 0; i < g->n_ops; i++) {
        int64_t b[3] = {g->output_bytes[i], g->param_bytes[i], g->temp_bytes[i]};
        for (int k = 0; k < 3; k++) {
            if (b[k] > limit - total)
                return op_fail(err, OP_EINPUT, "%s: the ops' byte counts add up to more than "
                               "2^60 bytes (at op '%s')", origin, g->op_name[i]);
            total += b[k];
        }
    }
    total = 0;
    for (int e = 0; e < g->n_edges; e++) {
        if (g->edge_bytes[e] > limit - total)
            return op_fail(err, OP_EINPUT, "%s: the edges' byte counts add up to more than "
                           "2^60 bytes", origin);
        total += g->edge_bytes[e];
    }
    return OP_OK;
}

/* Move the per-op arrays from the builder into the graph. */
static void take_ops(op_graph_builder *b, op_graph *g)
{
#define MOVE(field) (g->field = b->field, b->field = NULL)
    g->n_ops = b->n_ops;
    g->batch_size = b->batch_size;
    MOVE(name), MOVE(op_name), MOVE(op_type), MOVE(device);    /* names */
    MOVE(output_bytes), MOVE(param_bytes), MOVE(temp_bytes);   /* memory */
    MOVE(layer), MOVE(colocate), MOVE(kind);                    /* scopes */
    MOVE(time_off), MOVE(time_kind), MOVE(time_val);            /* times */
#undef MOVE
    g->kind_name = op_strtab_take(&b->kinds, &g->n_kinds);
    g->layer_name = op_strtab_take(&b->layers, &g->n_layers);
    g->group_name = op_strtab_take(&b->groups, &g->n_groups);
    g->index = op_malloc(sizeof *g->index, NULL);
    if (g->index) {
        *g->index = b->names; /* keys point into op_name, which moved with it */
        memset(&b->names, 0, sizeof b->names);
    }
    b->n_ops = 0;
}

op_graph *op_graph_finish(op_graph_builder *b, op_error *err)
{
    op_graph *g = op_calloc(1, sizeof *g, err);
    if (!g) {
        op_graph_builder_free(b);
        return NULL;
    }
    if (b->n_ops == 0) {
        op_fail(err, OP_EINPUT, "%s: the graph has no ops", b->origin);
        goto fail;
    }
    if (!b->time_off && op_reserve((void **)&b->time_off, sizeof(int), &b->cap_time_off, 1, err))
        goto fail;
    if (sort_and_merge_edges(b, g, err))
        goto fail;
    take_ops(b, g);
    if (!g->index) {
        op_fail(err, OP_ENOMEM, "out of memory");
        goto fail;
    }
    if (check_totals(g, b->origin, err) || build_csr(g, err) || topo_sort(g, b->origin, err) ||
        check_op_pins(g, b->origin, err) ||
        check_groups(g, b->origin, err))
        goto fail;
    op_graph_builder_free(b);
    return g;
fail:
    op_graph_builder_free(b);
    op_graph_free(g);
    return NULL;
}
