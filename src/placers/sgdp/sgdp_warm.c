/*
 * sgdp_warm.c - a reference placement and decision units for SGDP's
 * policy.  BEYOND THE PAPER: the SGDP paper starts PPO from a random
 * policy and places every op independently (eq. 4).  On graphs of
 * thousands of ops that policy cuts thousands of edges per sample, and in a
 * budget of minutes on two cores the first (and last) thing PPO learns is
 * to put everything on one device.  Two changes fix the exploration:
 *
 *   1. a reference placement: the best (by simulated step time, placements
 *      that fit first) of a list of fast heuristics (expert, metis, m-topo,
 *      single by default), run through op_placer_find + op_place; a
 *      heuristic's per-device order, if any, is dropped (the policy places
 *      ops, the simulator orders them), so it is judged by its devices;
 *   2. decision units: Celeritas' Optimal Operation Fusion (coarsen.h,
 *      "celeritas", about `target` groups of consecutive ops in CPD-TOPO
 *      order cut at cheap edges), each group split by the reference's
 *      devices and merged with colocation groups.  A unit's first op in
 *      topological order is its decision; the other members copy it, the
 *      same mechanism as colocation (placers/sgdp/sgdp.h).  Any placement the
 *      reference can express, the units can express, and a sampled move
 *      shifts a whole fused chain instead of one op.
 *
 * The trainer (sgdp_train.c) then clones the reference (behaviour cloning
 * with label smoothing) before PPO and seeds its best-seen record with it,
 * so the placement it returns is never worse than the reference.  The
 * policy still places the whole graph in one shot from one forward pass.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "placers/coarseners.h"
#include "placers/portfolio.h"
#include "placers/sgdp/sgdp.h"
#include "opplace/placer.h"
#include "opplace/simulate.h"

op_status sgdp_reference(const op_problem *p, const char *heuristics, uint64_t seed,
                         op_placement *out, sgdp_reference_info *info, op_error *err)
{
    /* the policy places ops only: judge the heuristics' devices alone */
    op_place_ctx ctx = {.p = p, .seed = seed};
    op_portfolio_winner w;
    op_status st = op_portfolio_best(&ctx, heuristics, 1, "sgdp", out, &w, err);
    memset(info, 0, sizeof *info);
    if (!st) {
        snprintf(info->name, sizeof info->name, "%s", w.name);
        info->step_time_us = w.step;
        info->oom = w.oom;
    }
    return st;
}

/* ------------------------------------------------------------- units */

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

/* Fusion groups (about target of them), or NULL when fusion fails. */
static int *fusion_groups(const op_problem *p, int target, int *n_groups)
{
    const op_coarsener *cel = op_coarsener_find("celeritas");
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

op_status sgdp_units_build(const op_problem *p, const op_placement *ref, int target,
                           int *unit_of, int *n_units, op_error *err)
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
    if (target > 0 && target < n && (fuse = fusion_groups(p, target, &n_fuse))) {
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

op_status sgdp_unit_leaders(const op_graph *g, const int *unit_of, int n_units,
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

op_status sgdp_graph_set_units(sgdp_graph *sg, const int *unit_of, int n_units, op_error *err)
{
    const op_graph *g = sg->p->g;
    int D = sg->max_devices, *lead;
    unsigned char *um;
    op_status st = sgdp_unit_leaders(g, unit_of, n_units, sg->mask, D, 1, &lead, &um, err);
    if (st)
        return st;
    for (int t = 0; t < sg->n; t++) {
        int u = unit_of[g->topo[t]], lt = g->topo_pos[lead[u]];
        memcpy(sg->mask + (size_t)t * D, um + (size_t)u * D, (size_t)D);
        sg->leader[t] = lt == t ? -1 : lt;
        sg->decides[t] = sg->leader[t] < 0;
    }
    free(lead), free(um);
    return OP_OK;
}

/* Per device, the compute work the placement in ref_row gives it (at the
 * device's speed), divided by the devices' mean: 1 = balanced. */
static void relative_loads(const sgdp_graph *sg, const int *ref_row, double *load)
{
    const op_problem *p = sg->p;
    double total = 0.0;
    for (int d = 0; d < sg->nd; d++)
        load[d] = 0.0;
    for (int t = 0; t < sg->n; t++) {
        int d = ref_row[t];
        if (d < 0 || d >= sg->nd)
            continue;
        double speed = p->c->dev[d].speed > 0 ? p->c->dev[d].speed : 1.0;
        double w = p->work[p->g->topo[t]] / speed;
        load[d] += w;
        total += w;
    }
    for (int d = 0; d < sg->nd; d++)
        load[d] = total > 0 ? load[d] * sg->nd / total : 1.0;
}

/* Per row, its decision's share of cut edges: over every member of the
 * row's decision unit (the rows that copy the same leader), the edges to
 * an op ref_row puts on another device, over all the members' edges. */
static void cut_shares(const sgdp_graph *sg, const int *ref_row, double *cut, double *deg)
{
    const op_graph *g = sg->p->g;
    for (int t = 0; t < sg->n; t++)
        cut[t] = deg[t] = 0.0;
    for (int t = 0; t < sg->n; t++) {
        int op = g->topo[t], u = sg->leader[t] >= 0 ? sg->leader[t] : t;
        for (int k = g->pred_off[op]; k < g->pred_off[op + 1]; k++, deg[u] += 1.0)
            cut[u] += ref_row[g->topo_pos[g->pred[k]]] != ref_row[t];
        for (int k = g->succ_off[op]; k < g->succ_off[op + 1]; k++, deg[u] += 1.0)
            cut[u] += ref_row[g->topo_pos[g->succ[k]]] != ref_row[t];
    }
    for (int t = 0; t < sg->n; t++) {
        int u = sg->leader[t] >= 0 ? sg->leader[t] : t;
        if (u == t)
            cut[t] = deg[t] > 0 ? cut[t] / deg[t] : 0.0;
    }
    for (int t = 0; t < sg->n; t++) /* a leader's row comes before its followers' */
        if (sg->leader[t] >= 0)
            cut[t] = cut[sg->leader[t]];
}

void sgdp_graph_set_timing(sgdp_graph *sg, const double *start_us, const double *finish_us,
                           double step_us)
{
    const op_graph *g = sg->p->g;
    for (int t = 0; t < sg->n; t++) {
        int op = g->topo[t];
        double ready = 0.0;
        for (int k = g->pred_off[op]; k < g->pred_off[op + 1]; k++)
            ready = fmax(ready, finish_us[g->pred[k]]);
        sg->wait[t] = step_us > 0 ? fmax(0.0, start_us[op] - ready) / step_us : 0.0;
    }
}

/* Per decision row (copied to its followers): the unit's compute work over
 * the mean unit's, log-scaled, and its members' summed queueing delay
 * (sg->wait) times the number of units, log-scaled: both 0 for an average
 * unit and independent of the graph's size and time unit. */
static void unit_work_and_wait(const sgdp_graph *sg, double *work, double *wait)
{
    const op_problem *p = sg->p;
    double total_w = 0.0, total_q = 0.0;
    int units = 0;
    for (int t = 0; t < sg->n; t++)
        work[t] = wait[t] = 0.0;
    for (int t = 0; t < sg->n; t++) {
        int u = sg->leader[t] >= 0 ? sg->leader[t] : t;
        work[u] += p->work[p->g->topo[t]];
        wait[u] += sg->wait[t];
        total_w += p->work[p->g->topo[t]];
        total_q += sg->wait[t];
        units += u == t;
    }
    for (int t = 0; t < sg->n; t++) {
        if (sg->leader[t] >= 0) {
            work[t] = work[sg->leader[t]];
            wait[t] = wait[sg->leader[t]];
            continue;
        }
        work[t] = total_w > 0 ? log1p(work[t] * units / total_w) - log(2.0) : 0.0;
        wait[t] = total_q > 0 ? log1p(wait[t] * units / total_q) - log(2.0) : 0.0;
    }
}

void sgdp_graph_set_reference(sgdp_graph *sg, const int *ref_row)
{
    int base = SGDP_N_FEATURES - SGDP_REF_FEATURES;
    double load[1024];
    int have_loads = sg->nd <= (int)(sizeof load / sizeof *load);
    if (have_loads)
        relative_loads(sg, ref_row, load);
    double *cut = sg->scratch, *deg = sg->scratch + sg->n;
    cut_shares(sg, ref_row, cut, deg);
    double *uwork = deg, *uwait = sg->scratch + 2 * (size_t)sg->n; /* deg is spent */
    unit_work_and_wait(sg, uwork, uwait);
    for (int t = 0; t < sg->n; t++) {
        double *f = sg->feat + (size_t)t * SGDP_N_FEATURES + base;
        int d = ref_row[t];
        for (int k = 0; k < SGDP_REF_FEATURES; k++)
            f[k] = 0.0;
        if (d >= 0)
            f[d % SGDP_REF_SLOTS] = 1.0;
        f[SGDP_REF_SLOTS] = 1.0;
        f[SGDP_REF_SLOTS + 1] = d >= 0 ? cut[t] : 0.0;
        f[SGDP_REF_SLOTS + 2] = d >= 0 && d < sg->nd && have_loads ? fmin(load[d], 3.0) - 1.0 : 0.0;
        f[SGDP_REF_SLOTS + 3] = d >= 0 ? uwork[t] : 0.0;
        f[SGDP_REF_SLOTS + 4] = d >= 0 ? uwait[t] : 0.0;
        sg->ref_dev[t] = d >= 0 && d < sg->max_devices ? d : -1;
    }
}
