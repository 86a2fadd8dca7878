/*
 * units.c - the decision units of the learned placers (learn/units.h).
 */
#include "learn/units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coarsen/coarsen.h"

static int find_root(int *parent, int x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

static void unite(int *parent, int a, int b)
{
    a = find_root(parent, a);
    b = find_root(parent, b);
    if (a != b)
        parent[a < b ? b : a] = a < b ? a : b;
}

static void unite_colocated(const op_problem *p, int *parent)
{
    for (int grp = 0; grp < p->n_groups; grp++)
        for (int k = p->group_off[grp] + 1; k < p->group_off[grp + 1]; k++)
            unite(parent, p->group_ops[p->group_off[grp]], p->group_ops[k]);
}

/* Fusion groups (about target of them) by the coarsener cel, or NULL when
 * fusion fails. */
static int *fusion_groups(const op_problem *p, const op_coarsener *cel, int target,
                          int *n_groups)
{
    op_error err = {0};
    op_options *o = op_options_new(&err);
    if (!cel || !o) {
        op_options_free(o);
        return NULL;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%d", target);
    op_coarse_map m = {0};
    int *groups = NULL;
    if (!op_options_set(o, "target", buf, &err) && !cel->run(p, o, &m, &err)) {
        groups = malloc((size_t)p->n * sizeof *groups);
        if (groups) {
            memcpy(groups, m.group_of, (size_t)p->n * sizeof *groups);
            *n_groups = m.coarse->n_ops;
        }
    }
    op_coarse_map_destroy(&m);
    op_options_free(o);
    return groups;
}

op_status learn_units_build(const op_problem *p, const op_placement *ref,
                            const op_coarsener *fuse_by, int target, int *unit_of, int *n_units,
                            op_error *err)
{
    int n = p->n, nd = p->nd;
    int *coloc = op_malloc((size_t)n * sizeof *coloc, err);
    int *merged = op_malloc((size_t)n * sizeof *merged, err);
    unsigned char *ok = op_malloc((size_t)n * (size_t)nd, err);
    int *first = NULL, *fuse = NULL, n_fuse = 0;
    op_status st = OP_OK;
    if (!coloc || !merged || !ok) {
        st = OP_ENOMEM;
        goto done;
    }
    for (int i = 0; i < n; i++)
        coloc[i] = merged[i] = i;
    unite_colocated(p, coloc);
    unite_colocated(p, merged);
    if (target > 0 && target < n && (fuse = fusion_groups(p, fuse_by, target, &n_fuse))) {
        size_t slots = (size_t)n_fuse * (size_t)nd;
        if (!(first = op_malloc(slots * sizeof *first, err))) {
            st = OP_ENOMEM;
            goto done;
        }
        for (size_t k = 0; k < slots; k++)
            first[k] = -1;
        for (int i = 0; i < n; i++) {
            int d = ref ? ref->device_of[i] : 0;
            size_t key = (size_t)fuse[i] * (size_t)nd + (size_t)(d >= 0 && d < nd ? d : 0);
            if (first[key] < 0)
                first[key] = i;
            else
                unite(merged, first[key], i);
        }
    }
    /* a merged unit whose members share no device falls back to colocation */
    memset(ok, 1, (size_t)n * (size_t)nd);
    for (int i = 0; i < n; i++) {
        int r = find_root(merged, i);
        for (int d = 0; d < nd; d++)
            ok[(size_t)r * nd + d] &= (unsigned char)op_eligible(p, i, d);
    }
    for (int i = 0; i < n; i++) {
        int r = find_root(merged, i), any = 0;
        for (int d = 0; d < nd; d++)
            any |= ok[(size_t)r * nd + d];
        unit_of[i] = any ? r : find_root(coloc, i);
    }
    /* compact the roots to 0..U-1 (reusing coloc as the index) */
    for (int i = 0; i < n; i++)
        coloc[i] = -1;
    int u = 0;
    for (int i = 0; i < n; i++) {
        int r = unit_of[i];
        if (coloc[r] < 0)
            coloc[r] = u++;
        unit_of[i] = coloc[r];
    }
    *n_units = u;
done:
    free(coloc), free(merged), free(ok), free(first), free(fuse);
    return st;
}

op_status learn_unit_leaders(const op_graph *g, const int *unit_of, int n_units,
                             const unsigned char *mask, int D, int by_topo, int **lead,
                             unsigned char **um, op_error *err)
{
    *lead = op_malloc((size_t)n_units * sizeof **lead + 1, err);
    *um = op_malloc((size_t)n_units * (size_t)D + 1, err);
    if (!*lead || !*um) {
        free(*lead), free(*um);
        return OP_ENOMEM;
    }
    memset(*um, 1, (size_t)n_units * (size_t)D);
    for (int u = 0; u < n_units; u++)
        (*lead)[u] = -1;
    for (int t = 0; t < g->n_ops; t++) {
        int op = g->topo[t], u = unit_of[op];
        if (u < 0 || u >= n_units) {
            free(*lead), free(*um);
            return op_fail(err, OP_EINTERNAL, "unit %d of op %d out of range", u, op);
        }
        if ((*lead)[u] < 0)
            (*lead)[u] = op;
        const unsigned char *row = mask + (size_t)(by_topo ? t : op) * D;
        for (int d = 0; d < D; d++)
            (*um)[(size_t)u * D + d] &= row[d];
    }
    return OP_OK;
}
