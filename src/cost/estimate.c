/*
 * estimate.c - Standard Evaluation, first step (Celeritas section 4.2.1):
 * per-op least-squares lines of memory and time against batch size, fitted
 * on small-batch profiles and evaluated at a large batch (opplace/estimate.h).
 *
 * The paper fits memory this way and notes that time only gets a rough
 * estimate; both use the same line here.  Edge bytes are fitted too (the
 * paper takes communication from the fitted link model and the tensor sizes,
 * which are the edges' bytes).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost/commfit.h"
#include "opplace/estimate.h"

typedef struct fit_ctx {
    const op_graph *const *prof;
    int np;
    int64_t batch;
    int *index;  /* np x n: op of the template in each profile */
    double *x, *y;
} fit_ctx;

static op_status fit_at(fit_ctx *f, double *out, op_error *err)
{
    double a, b, r2;
    op_status st = op_linear_fit(f->x, f->y, f->np, &a, &b, &r2, err);
    if (st)
        return st;
    double v = a + b * (double)f->batch;
    *out = v > 0 && isfinite(v) ? v : 0;
    return OP_OK;
}

static int64_t round_bytes(double v)
{
    return v >= 9.2e18 ? INT64_MAX : (int64_t)llround(v);
}

static op_status fit_bytes(fit_ctx *f, int v, const int64_t *(*field)(const op_graph *),
                           int64_t *out, op_error *err)
{
    int n = f->prof[0]->n_ops;
    for (int k = 0; k < f->np; k++)
        f->y[k] = (double)field(f->prof[k])[f->index[(size_t)k * n + v]];
    double e = 0;
    op_status st = fit_at(f, &e, err);
    if (!st)
        *out = round_bytes(e);
    return st;
}

static const int64_t *out_field(const op_graph *g) { return g->output_bytes; }
static const int64_t *param_field(const op_graph *g) { return g->param_bytes; }
static const int64_t *temp_field(const op_graph *g) { return g->temp_bytes; }

/* Time entry t of template op v (kind k or any) in every profile. */
static op_status fit_time(fit_ctx *f, int v, int t, double *out, op_error *err)
{
    const op_graph *g0 = f->prof[0];
    int n = g0->n_ops, kind = g0->time_kind[t];
    for (int k = 0; k < f->np; k++) {
        const op_graph *g = f->prof[k];
        int u = f->index[(size_t)k * n + v];
        double y = kind == OP_ANY_KIND ? g->time_val[g->time_off[u]]
                                       : op_graph_time_on_kind(g, u, g0->kind_name[kind]);
        if (kind == OP_ANY_KIND && g->time_kind[g->time_off[u]] != OP_ANY_KIND)
            y = -1;
        if (y < 0)
            return op_fail(err, OP_EINPUT, "op '%s': its time_us keys differ between the "
                           "profiles", g0->op_name[v]);
        f->y[k] = y;
    }
    return fit_at(f, out, err);
}

static op_status add_op(fit_ctx *f, op_graph_builder *b, int v, op_error *err)
{
    const op_graph *g0 = f->prof[0];
    op_kind_time kt[64];
    op_op_spec s = {
        .name = g0->op_name[v],
        .type = g0->op_type[v],
        .layer = g0->layer[v] == OP_NONE ? NULL : g0->layer_name[g0->layer[v]],
        .colocate = g0->colocate[v] == OP_NONE ? NULL : g0->group_name[g0->colocate[v]],
        .kind = g0->kind[v] == OP_NONE ? NULL : g0->kind_name[g0->kind[v]],
        .device = g0->device[v],
    };
    op_status st;
    if ((st = fit_bytes(f, v, out_field, &s.output_bytes, err)) ||
        (st = fit_bytes(f, v, param_field, &s.param_bytes, err)) ||
        (st = fit_bytes(f, v, temp_field, &s.temp_bytes, err)))
        return st;
    int t0 = g0->time_off[v], nt = g0->time_off[v + 1] - t0;
    if (g0->time_kind[t0] == OP_ANY_KIND)
        return (st = fit_time(f, v, t0, &s.time_us, err)) ? st
               : op_graph_add_op(b, &s, err) < 0 ? OP_EINPUT : OP_OK;
    if (nt > 64)
        return op_fail(err, OP_EINPUT, "op '%s' has more than 64 device kinds", s.name);
    for (int t = 0; t < nt; t++) {
        kt[t].kind = g0->kind_name[g0->time_kind[t0 + t]];
        if ((st = fit_time(f, v, t0 + t, &kt[t].time_us, err)))
            return st;
    }
    s.kind_times = kt;
    s.n_kind_times = nt;
    return op_graph_add_op(b, &s, err) < 0 ? OP_EINPUT : OP_OK;
}

static op_status add_edges(fit_ctx *f, op_graph_builder *b, op_error *err)
{
    const op_graph *g0 = f->prof[0];
    int n = g0->n_ops;
    for (int e = 0; e < g0->n_edges; e++) {
        int s = g0->edge_src[e], d = g0->edge_dst[e];
        for (int k = 0; k < f->np; k++) {
            const op_graph *g = f->prof[k];
            int pe = op_graph_find_edge(g, f->index[(size_t)k * n + s], f->index[(size_t)k * n + d]);
            if (pe < 0)
                return op_fail(err, OP_EINPUT, "edge %s -> %s is missing from profile %d ('%s')",
                               g0->op_name[s], g0->op_name[d], k + 1, g->name);
            f->y[k] = (double)g->edge_bytes[pe];
        }
        double bytes;
        op_status st = fit_at(f, &bytes, err);
        if (!st)
            st = op_graph_add_edge(b, s, d, round_bytes(bytes), err);
        if (st)
            return st;
    }
    return OP_OK;
}

static op_status check_profiles(fit_ctx *f, op_error *err)
{
    const op_graph *g0 = f->prof[0];
    int n = g0->n_ops;
    if (f->np < 2)
        return op_fail(err, OP_EUSAGE, "estimation needs at least two profiles");
    for (int k = 0; k < f->np; k++) {
        const op_graph *g = f->prof[k];
        if (g->batch_size <= 0)
            return op_fail(err, OP_EINPUT, "profile %d ('%s') has no batch_size", k + 1, g->name);
        if (g->n_ops != n || g->n_edges != g0->n_edges)
            return op_fail(err, OP_EINPUT, "profile %d ('%s') has %d ops and %d edges, profile "
                           "1 has %d and %d: they must be the same model", k + 1, g->name,
                           g->n_ops, g->n_edges, n, g0->n_edges);
        for (int v = 0; v < n; v++) {
            int u = op_graph_find(g, g0->op_name[v]);
            if (u < 0)
                return op_fail(err, OP_EINPUT, "op '%s' is missing from profile %d ('%s')",
                               g0->op_name[v], k + 1, g->name);
            f->index[(size_t)k * n + v] = u;
        }
        f->x[k] = (double)g->batch_size;
    }
    return OP_OK;
}

op_graph *op_estimate_graph(const op_graph *const *profiles, int n_profiles, int64_t batch,
                            op_error *err)
{
    if (n_profiles < 1 || batch <= 0) {
        op_fail(err, OP_EUSAGE, "estimation needs profiles and a positive batch size");
        return NULL;
    }
    fit_ctx f = {.prof = profiles, .np = n_profiles, .batch = batch};
    f.index = op_malloc((size_t)n_profiles * ((size_t)profiles[0]->n_ops + 1) * sizeof(int), err);
    f.x = op_malloc((size_t)n_profiles * sizeof(double), err);
    f.y = op_malloc((size_t)n_profiles * sizeof(double), err);
    op_graph_builder *b = NULL;
    op_status st = !f.index || !f.x || !f.y ? OP_ENOMEM : check_profiles(&f, err);
    char name[512];
    snprintf(name, sizeof name, "%s_est_b%lld", profiles[0]->name, (long long)batch);
    if (!st && !(b = op_graph_builder_new(name, err)))
        st = OP_ENOMEM;
    if (!st)
        op_graph_builder_set_batch_size(b, batch);
    for (int v = 0; !st && v < profiles[0]->n_ops; v++)
        st = add_op(&f, b, v, err);
    if (!st)
        st = add_edges(&f, b, err);
    free(f.index);
    free(f.x);
    free(f.y);
    if (st) {
        op_graph_builder_free(b);
        return NULL;
    }
    return op_graph_finish(b, err);
}

static void add_deviation(double est, double real, int *n, double *sum, double *max)
{
    if (!(real > 0))
        return;
    double dev = fabs(est - real) / real;
    (*n)++;
    *sum += dev;
    if (dev > *max)
        *max = dev;
}

op_status op_estimate_accuracy_compute(const op_graph *est, const op_graph *measured,
                                       op_estimate_accuracy *acc, op_error *err)
{
    memset(acc, 0, sizeof *acc);
    for (int v = 0; v < est->n_ops; v++) {
        int u = op_graph_find(measured, est->op_name[v]);
        if (u < 0)
            return op_fail(err, OP_EINPUT, "op '%s' of the estimate is missing from the "
                           "measured graph", est->op_name[v]);
        int64_t me = est->output_bytes[v] + est->param_bytes[v] + est->temp_bytes[v];
        int64_t mr = measured->output_bytes[u] + measured->param_bytes[u] +
                     measured->temp_bytes[u];
        int before = acc->n_mem;
        add_deviation((double)me, (double)mr, &acc->n_mem, &acc->mem_mean, &acc->mem_max);
        if (acc->n_mem > before && me == mr)
            acc->mem_exact++;
        add_deviation(est->time_val[est->time_off[v]], measured->time_val[measured->time_off[u]],
                      &acc->n_time, &acc->time_mean, &acc->time_max);
    }
    if (acc->n_mem)
        acc->mem_mean /= acc->n_mem;
    if (acc->n_time)
        acc->time_mean /= acc->n_time;
    return OP_OK;
}
