/*
 * sgdp_warm.c - what SGDP's policy sees of the reference placement and its
 * decision units (learn/units.h): each unit made one
 * decision (sgdp_graph_set_units), and the reference features of each row
 * (sgdp_graph_set_reference: the reference's device, the unit's cut share,
 * its device's load, its work and its queueing delay).  Neither is in the
 * SGDP paper, whose policy starts from a random one and places every op
 * independently (eq. 4).
 *
 * The trainer (sgdp_train.c) clones the reference (behaviour cloning with
 * label smoothing) before PPO and seeds its best-seen record with it, so
 * the placement it returns is never worse than the reference.  The policy
 * still places the whole graph in one shot from one forward pass.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "learn/units.h"
#include "placers/sgdp/sgdp.h"

op_status sgdp_graph_set_units(sgdp_graph *sg, const int *unit_of, int n_units, op_error *err)
{
    const op_graph *g = sg->p->g;
    int D = sg->max_devices, *lead;
    unsigned char *um;
    op_status st = learn_unit_leaders(g, unit_of, n_units, sg->mask, D, 1, &lead, &um, err);
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
