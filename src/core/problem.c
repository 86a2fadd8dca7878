/*
 * problem.c - binding a graph to a cluster (see opplace/problem.h).
 *
 * Eligibility of op i on device d: the op's per-kind times name d's kind (or
 * it has one time for all kinds), its `kind` key (if any) equals d's kind,
 * and its `device` pin (if any) is d.  A colocation group may use a device
 * only if every member may.
 */
#include <stdlib.h>
#include <string.h>

#include "core/problem_util.h"
#include "opplace/placement.h"
#include "opplace/problem.h"

static double time_for_device(const op_graph *g, int op, const op_device *dev)
{
    if (g->kind[op] != OP_NONE && strcmp(g->kind_name[g->kind[op]], dev->kind) != 0)
        return -1;
    if (g->device[op] && strcmp(g->device[op], dev->name) != 0)
        return -1;
    for (int e = g->time_off[op]; e < g->time_off[op + 1]; e++) {
        int k = g->time_kind[e];
        if (k == OP_ANY_KIND || strcmp(g->kind_name[k], dev->kind) == 0)
            return g->time_val[e];
    }
    return -1;
}

/* Device pins must name devices of this cluster (a typo is bad input, not
 * an infeasible problem). */
static op_status check_pins(const op_graph *g, const op_cluster *c, op_error *err)
{
    for (int i = 0; i < g->n_ops; i++)
        if (g->device[i] && op_cluster_find(c, g->device[i]) < 0)
            return op_fail(err, OP_EINPUT,
                           "op '%s' is pinned to device '%s', which the cluster does not have",
                           g->op_name[i], g->device[i]);
    return OP_OK;
}

static op_status fill_exec(op_problem *p, op_error *err)
{
    const op_graph *g = p->g;
    const op_cluster *c = p->c;
    for (int i = 0; i < p->n; i++) {
        double best = OP_INELIGIBLE, work = OP_INELIGIBLE;
        for (int d = 0; d < p->nd; d++) {
            double t = time_for_device(g, i, &c->dev[d]);
            double x = t < 0 ? OP_INELIGIBLE : t / c->dev[d].speed;
            p->exec[(size_t)i * p->nd + d] = x;
            if (x < best)
                best = x;
            if (t >= 0 && t < work)
                work = t;
        }
        if (best == OP_INELIGIBLE)
            return op_fail(err, OP_EINFEASIBLE,
                           "op '%s' can run on no device of the cluster (check its kind, "
                           "device and time_us keys)", g->op_name[i]);
        p->min_exec[i] = best;
        p->work[i] = work;
    }
    return OP_OK;
}

static op_status build_groups(op_problem *p, op_error *err)
{
    const op_graph *g = p->g;
    int ng = g->n_groups, nd = p->nd;
    p->n_groups = ng;
    p->group_of = g->colocate;
    p->group_off = op_calloc((size_t)ng + 1, sizeof(int), err);
    p->group_ops = op_malloc((size_t)p->n * sizeof(int) + 1, err);
    p->group_ok = op_malloc((size_t)ng * nd + 1, err);
    if (!p->group_off || !p->group_ops || !p->group_ok)
        return OP_ENOMEM;
    for (int i = 0; i < p->n; i++)
        if (g->colocate[i] != OP_NONE)
            p->group_off[g->colocate[i] + 1]++;
    for (int k = 0; k < ng; k++)
        p->group_off[k + 1] += p->group_off[k];
    memset(p->group_ok, 1, (size_t)ng * nd);
    int *fill = op_malloc((size_t)ng * sizeof(int) + 1, err);
    if (!fill)
        return OP_ENOMEM;
    memcpy(fill, p->group_off, (size_t)ng * sizeof(int));
    for (int i = 0; i < p->n; i++) {
        int k = g->colocate[i];
        if (k == OP_NONE)
            continue;
        p->group_ops[fill[k]++] = i;
        for (int d = 0; d < nd; d++)
            if (!op_eligible(p, i, d))
                p->group_ok[(size_t)k * nd + d] = 0;
    }
    free(fill);
    for (int k = 0; k < ng; k++) {
        int any = 0;
        for (int d = 0; d < nd; d++)
            any |= p->group_ok[(size_t)k * nd + d];
        if (!any)
            return op_fail(err, OP_EINFEASIBLE,
                           "colocation group '%s' has no device on which all its ops can run",
                           g->group_name[k]);
    }
    return OP_OK;
}

static op_status compute_bounds(op_problem *p, op_error *err)
{
    const op_graph *g = p->g;
    double *finish = op_malloc((size_t)p->n * sizeof *finish, err);
    if (!finish)
        return OP_ENOMEM;
    double cp = 0, total = 0;
    for (int t = 0; t < p->n; t++) {
        int v = g->topo[t];
        double start = 0;
        for (int k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
            if (finish[g->pred[k]] > start)
                start = finish[g->pred[k]];
        double f = start + p->min_exec[v];
        finish[v] = f;
        if (f > cp)
            cp = f;
        total += p->work[v];
    }
    free(finish);
    p->total_speed = 0;
    for (int d = 0; d < p->nd; d++)
        p->total_speed += p->c->dev[d].speed;
    p->critical_path_us = cp;
    p->total_work_us = total;
    double balance = total / p->total_speed;
    p->lower_bound_us = cp > balance ? cp : balance;
    p->proven_bound_us = p->lower_bound_us;
    p->proven_method = "trivial";
    return OP_OK;
}

op_status op_problem_init(op_problem *p, const op_graph *g, const op_cluster *c, op_error *err)
{
    memset(p, 0, sizeof *p);
    p->g = g;
    p->c = c;
    p->n = g->n_ops;
    p->nd = c->n_dev;
    if (check_pins(g, c, err))
        return OP_EINPUT;
    p->exec = op_malloc((size_t)p->n * p->nd * sizeof *p->exec, err);
    p->min_exec = op_malloc((size_t)p->n * sizeof *p->min_exec, err);
    p->work = op_malloc((size_t)p->n * sizeof *p->work, err);
    op_status st = OP_ENOMEM;
    if (p->exec && p->min_exec && p->work && !(st = fill_exec(p, err)) &&
        !(st = build_groups(p, err)) && !(st = compute_bounds(p, err)))
        return OP_OK;
    op_problem_destroy(p);
    return st;
}

void op_problem_destroy(op_problem *p)
{
    free(p->exec);
    free(p->min_exec);
    free(p->work);
    free(p->group_off);
    free(p->group_ops);
    free(p->group_ok);
    memset(p, 0, sizeof *p);
}

void op_problem_param_bytes(const op_problem *p, const int *device_of, int64_t *out)
{
    for (int d = 0; d < p->nd; d++)
        out[d] = 0;
    for (int i = 0; i < p->n; i++)
        out[device_of[i]] += p->g->param_bytes[i];
}

static op_status check_order(const op_problem *p, const op_placement *pl, op_error *err)
{
    const op_graph *g = p->g;
    if (pl->order_off[0] != 0 || pl->order_off[p->nd] != p->n)
        return op_fail(err, OP_EINPUT, "placement order lists %d ops, the graph has %d",
                       pl->order_off[p->nd] - pl->order_off[0], p->n);
    unsigned char *seen = calloc((size_t)p->n, 1);
    if (!seen)
        return op_fail(err, OP_ENOMEM, "out of memory");
    op_status st = OP_OK;
    for (int d = 0; d < p->nd && !st; d++)
        for (int k = pl->order_off[d]; k < pl->order_off[d + 1] && !st; k++) {
            int op = pl->order[k];
            if (op < 0 || op >= p->n)
                st = op_fail(err, OP_EINPUT, "placement order of '%s' has an invalid op",
                             p->c->dev[d].name);
            else if (seen[op]++)
                st = op_fail(err, OP_EINPUT, "op '%s' appears twice in the placement order",
                             g->op_name[op]);
            else if (pl->device_of[op] != d)
                st = op_fail(err, OP_EINPUT,
                             "op '%s' is in the order of '%s' but placed on '%s'",
                             g->op_name[op], p->c->dev[d].name,
                             p->c->dev[pl->device_of[op]].name);
        }
    free(seen);
    return st;
}

op_status op_problem_check_placement(const op_problem *p, const op_placement *pl, op_error *err)
{
    const op_graph *g = p->g;
    if (pl->n_ops != p->n || pl->n_dev != p->nd)
        return op_fail(err, OP_EINPUT, "placement is for %d ops on %d devices, problem has %d on %d",
                       pl->n_ops, pl->n_dev, p->n, p->nd);
    int *group_dev = p->n_groups ? malloc((size_t)p->n_groups * sizeof *group_dev) : NULL;
    if (p->n_groups && !group_dev)
        return op_fail(err, OP_ENOMEM, "out of memory");
    for (int k = 0; k < p->n_groups; k++)
        group_dev[k] = -1;
    op_status st = OP_OK;
    for (int i = 0; i < p->n && !st; i++) {
        int d = pl->device_of[i];
        if (d < 0 || d >= p->nd)
            st = op_fail(err, OP_EINPUT, "op '%s' has no valid device", g->op_name[i]);
        else if (!op_eligible(p, i, d))
            st = op_fail(err, OP_EINPUT, "op '%s' cannot run on '%s' (kind, device pin or "
                         "time_us rule it out)", g->op_name[i], p->c->dev[d].name);
        else if (g->colocate[i] != OP_NONE) {
            int k = g->colocate[i];
            if (group_dev[k] < 0)
                group_dev[k] = d;
            else if (group_dev[k] != d)
                st = op_fail(err, OP_EINPUT,
                             "colocation group '%s' is split across '%s' and '%s'",
                             g->group_name[k], p->c->dev[group_dev[k]].name, p->c->dev[d].name);
        }
    }
    free(group_dev);
    if (!st && pl->has_order)
        st = check_order(p, pl, err);
    return st;
}
