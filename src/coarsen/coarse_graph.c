/*
 * coarse_graph.c - building the coarse graph of a grouping, and expanding a
 * coarse placement back to the original ops (see coarsen/coarsen.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/graph_builder.h"
#include "core/strtab.h"
#include "coarsen/coarsen.h"

void op_coarse_map_destroy(op_coarse_map *m)
{
    op_graph_free(m->coarse);
    free(m->group_of);
    memset(m, 0, sizeof *m);
}

/* Members of each group in topological order (CSR). */
static op_status members_by_group(const op_graph *g, const int *group_of, int ng, int **off_out,
                                  int **mem_out, op_error *err)
{
    int *off = op_calloc((size_t)ng + 1, sizeof *off, err);
    int *mem = op_malloc((size_t)g->n_ops * sizeof *mem, err);
    if (!off || !mem) {
        free(off);
        free(mem);
        return OP_ENOMEM;
    }
    for (int i = 0; i < g->n_ops; i++)
        off[group_of[i] + 1]++;
    for (int k = 0; k < ng; k++)
        off[k + 1] += off[k];
    for (int t = 0; t < g->n_ops; t++) {
        int v = g->topo[t];
        mem[off[group_of[v]]++] = v;
    }
    for (int k = ng; k > 0; k--) /* the fill advanced each start to its end */
        off[k] = off[k - 1];
    off[0] = 0;
    *off_out = off;
    *mem_out = mem;
    return OP_OK;
}

static int find_root(int *parent, int x)
{
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

/* Coarse ops that share an original colocation group must share a device:
 * union them and name each union after its smallest coarse op. */
static op_status coarse_colocation(const op_graph *g, const int *group_of, int ng, int **root_out,
                                   op_error *err)
{
    int *parent = op_malloc((size_t)ng * sizeof *parent, err);
    int *first = op_malloc(((size_t)g->n_groups + 1) * sizeof *first, err);
    if (!parent || !first) {
        free(parent);
        free(first);
        return OP_ENOMEM;
    }
    for (int k = 0; k < ng; k++)
        parent[k] = k;
    for (int k = 0; k < g->n_groups; k++)
        first[k] = -1;
    for (int i = 0; i < g->n_ops; i++) {
        int c = g->colocate[i];
        if (c == OP_NONE)
            continue;
        if (first[c] < 0) {
            first[c] = group_of[i];
            continue;
        }
        int a = find_root(parent, first[c]), b = find_root(parent, group_of[i]);
        if (a != b)
            parent[a > b ? a : b] = a < b ? a : b;
    }
    for (int k = 0; k < ng; k++)
        parent[k] = find_root(parent, k);
    free(first);
    *root_out = parent;
    return OP_OK;
}

typedef struct group_spec {
    op_op_spec s;
    op_kind_time kt[16];
    char name[32], coloc[32];
} group_spec;

/* Sum times per kind over members: kinds every member allows. */
static void group_times(const op_graph *g, const int *mem, int n, group_spec *gs)
{
    int any_only = 1;
    for (int m = 0; m < n; m++)
        if (g->time_kind[g->time_off[mem[m]]] != OP_ANY_KIND)
            any_only = 0;
    gs->s.time_us = 0;
    gs->s.n_kind_times = 0;
    if (any_only) {
        for (int m = 0; m < n; m++)
            gs->s.time_us += g->time_val[g->time_off[mem[m]]];
        return;
    }
    for (int k = 0; k < g->n_kinds && gs->s.n_kind_times < 16; k++) {
        double total = 0;
        int ok = 1;
        for (int m = 0; m < n && ok; m++) {
            double t = op_graph_time_on_kind(g, mem[m], g->kind_name[k]);
            if (t < 0)
                ok = 0;
            total += t;
        }
        if (ok)
            gs->kt[gs->s.n_kind_times++] = (op_kind_time){g->kind_name[k], total};
    }
    gs->s.kind_times = gs->kt;
}

static op_status group_pins(const op_graph *g, const int *mem, int n, int k, group_spec *gs,
                            op_error *err)
{
    for (int m = 0; m < n; m++) {
        int v = mem[m];
        const char *kind = g->kind[v] == OP_NONE ? NULL : g->kind_name[g->kind[v]];
        if (kind && gs->s.kind && strcmp(kind, gs->s.kind) != 0)
            return op_fail(err, OP_EINPUT, "coarsening merged ops of kinds '%s' and '%s' "
                           "into group %d", gs->s.kind, kind, k);
        if (kind)
            gs->s.kind = kind;
        if (g->device[v] && gs->s.device && strcmp(g->device[v], gs->s.device) != 0)
            return op_fail(err, OP_EINPUT, "coarsening merged ops pinned to '%s' and '%s' "
                           "into group %d", gs->s.device, g->device[v], k);
        if (g->device[v])
            gs->s.device = g->device[v];
    }
    return OP_OK;
}

static void group_bytes(const op_graph *g, const int *group_of, const int *mem, int n, int k,
                        group_spec *gs)
{
    for (int m = 0; m < n; m++) {
        int v = mem[m], leaves = 0;
        gs->s.param_bytes += g->param_bytes[v];
        if (g->temp_bytes[v] > gs->s.temp_bytes)
            gs->s.temp_bytes = g->temp_bytes[v];
        for (int j = g->succ_off[v]; j < g->succ_off[v + 1] && !leaves; j++)
            leaves = group_of[g->succ[j]] != k;
        if (leaves || g->succ_off[v] == g->succ_off[v + 1])
            gs->s.output_bytes += g->output_bytes[v];
    }
}

typedef struct coarse_edge {
    int src, dst;
    int64_t bytes;
} coarse_edge;

static int cmp_coarse_edge(const void *a, const void *b)
{
    const coarse_edge *x = a, *y = b;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return (x->dst > y->dst) - (x->dst < y->dst);
}

/* One coarse edge per pair of groups carrying the SUM of the original
 * edges' bytes (op_graph_add_edge would merge duplicates by max, the rule
 * for duplicate edges of one file, not for distinct edges fused together). */
static op_status add_coarse_edges(const op_graph *g, const int *group_of, op_graph_builder *b,
                                  op_error *err)
{
    coarse_edge *ce = op_malloc(((size_t)g->n_edges + 1) * sizeof *ce, err);
    if (!ce)
        return OP_ENOMEM;
    int m = 0;
    for (int e = 0; e < g->n_edges; e++) {
        int a = group_of[g->edge_src[e]], c = group_of[g->edge_dst[e]];
        if (a != c)
            ce[m++] = (coarse_edge){a, c, g->edge_bytes[e]};
    }
    qsort(ce, (size_t)m, sizeof *ce, cmp_coarse_edge);
    op_status st = OP_OK;
    for (int i = 0; i < m && !st;) {
        int j = i;
        int64_t sum = 0;
        for (; j < m && ce[j].src == ce[i].src && ce[j].dst == ce[i].dst; j++)
            sum += ce[j].bytes;
        st = op_graph_add_edge(b, ce[i].src, ce[i].dst, sum, err);
        i = j;
    }
    free(ce);
    return st;
}

op_status op_coarse_build(const op_graph *g, const int *group_of, int ng, op_coarse_map *out,
                          op_error *err)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < g->n_ops; i++)
        if (group_of[i] < 0 || group_of[i] >= ng)
            return op_fail(err, OP_EINTERNAL, "coarsening: op %d has group %d of %d", i,
                           group_of[i], ng);
    int *off = NULL, *mem = NULL, *root = NULL;
    op_graph_builder *b = NULL;
    op_status st = members_by_group(g, group_of, ng, &off, &mem, err);
    if (!st)
        st = coarse_colocation(g, group_of, ng, &root, err);
    if (!st && !(b = op_graph_builder_new(g->name, err)))
        st = OP_ENOMEM;
    if (!st)
        op_graph_builder_set_origin(b, "coarsened graph");
    for (int k = 0; k < ng && !st; k++) {
        int n = off[k + 1] - off[k];
        if (n == 0) {
            st = op_fail(err, OP_EINTERNAL, "coarsening: group %d is empty", k);
            break;
        }
        group_spec gs;
        memset(&gs, 0, sizeof gs);
        snprintf(gs.name, sizeof gs.name, "g%d", k);
        gs.s.name = gs.name;
        gs.s.type = n == 1 ? g->op_type[mem[off[k]]] : "Group";
        int first = mem[off[k]];
        gs.s.layer = g->layer[first] == OP_NONE ? NULL : g->layer_name[g->layer[first]];
        group_times(g, mem + off[k], n, &gs);
        group_bytes(g, group_of, mem + off[k], n, k, &gs);
        if ((st = group_pins(g, mem + off[k], n, k, &gs, err)))
            break;
        int has_coloc = 0;
        for (int m = off[k]; m < off[k + 1]; m++)
            has_coloc |= g->colocate[mem[m]] != OP_NONE;
        if (has_coloc) {
            snprintf(gs.coloc, sizeof gs.coloc, "c%d", root[k]);
            gs.s.colocate = gs.coloc;
        }
        if (op_graph_add_op(b, &gs.s, err) < 0)
            st = err && err->code ? err->code : OP_EINPUT; /* OP_ENOMEM stays itself */
    }
    if (!st)
        st = add_coarse_edges(g, group_of, b, err);
    free(off);
    free(mem);
    free(root);
    if (st) {
        op_graph_builder_free(b);
        return st;
    }
    op_graph_builder_set_batch_size(b, g->batch_size);
    out->coarse = op_graph_finish(b, err); /* rejects a cyclic grouping, naming the cycle */
    if (!out->coarse)
        return err && err->code ? err->code : OP_EINPUT;
    out->n_orig = g->n_ops;
    out->group_of = op_malloc((size_t)g->n_ops * sizeof *out->group_of, err);
    if (!out->group_of) {
        op_coarse_map_destroy(out);
        return OP_ENOMEM;
    }
    memcpy(out->group_of, group_of, (size_t)g->n_ops * sizeof *group_of);
    return OP_OK;
}

op_status op_coarse_expand(const op_coarse_map *m, const op_graph *orig,
                           const op_placement *coarse_pl, op_placement *fine, op_error *err)
{
    if (op_placement_init(fine, orig->n_ops, coarse_pl->n_dev, err))
        return OP_ENOMEM;
    for (int i = 0; i < orig->n_ops; i++)
        fine->device_of[i] = coarse_pl->device_of[m->group_of[i]];
    if (!coarse_pl->has_order)
        return OP_OK;
    /* sequence: groups in coarse order position, members in topological order */
    int nc = m->coarse->n_ops;
    int *off = NULL, *mem = NULL, *seq = NULL;
    op_status st = members_by_group(orig, m->group_of, nc, &off, &mem, err);
    if (!st && !(seq = op_malloc((size_t)orig->n_ops * sizeof *seq, err)))
        st = OP_ENOMEM;
    if (!st) {
        int n = 0;
        for (int d = 0; d < coarse_pl->n_dev; d++)
            for (int k = coarse_pl->order_off[d]; k < coarse_pl->order_off[d + 1]; k++) {
                int grp = coarse_pl->order[k];
                for (int j = off[grp]; j < off[grp + 1]; j++)
                    seq[n++] = mem[j];
            }
        st = op_placement_set_order_from_sequence(fine, seq, err);
    }
    free(off);
    free(mem);
    free(seq);
    if (st)
        op_placement_destroy(fine);
    return st;
}
