/*
 * pesto_bound.c - the lower bound of opplace/bound.h.
 */
#include "opplace/bound.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/placer.h"
#include "placers/pesto/pesto_ilp.h"
#include "placers/pesto/pesto_lp.h"

#define ILP_MAX_OPS 60
#define GRID 256

static int allowed(const op_problem *p, int i, int d)
{
    int grp = p->group_of[i];
    return op_eligible(p, i, d) && (grp == OP_NONE || p->group_ok[(size_t)grp * p->nd + d]);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Up to GRID thresholds from the sorted values (always including the
 * smallest); bucket(v) = the largest threshold index with thr <= v. */
static int thresholds(const double *v, int n, double *sorted, double *thr)
{
    memcpy(sorted, v, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
    int k = 0;
    for (int q = 0; q < GRID; q++) {
        double x = sorted[(size_t)((double)q / GRID * n)];
        if (k == 0 || x > thr[k - 1])
            thr[k++] = x;
    }
    return k;
}

static int bucket(const double *thr, int k, double v)
{
    int lo = 0, hi = k - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (thr[mid] <= v)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

static double energetic(const op_problem *p, op_error *err, int *fail)
{
    const op_graph *g = p->g;
    int n = p->n;
    double *head = calloc((size_t)n + 1, sizeof *head), *tail = calloc((size_t)n + 1, sizeof *tail);
    double *sorted = malloc(((size_t)n + 1) * sizeof *sorted);
    double *ht = malloc(GRID * sizeof *ht), *tt = malloc(GRID * sizeof *tt);
    double *cell = calloc((size_t)(GRID + 1) * (GRID + 1), sizeof *cell);
    double best = 0;
    if (!head || !tail || !sorted || !ht || !tt || !cell) {
        *fail = op_fail(err, OP_ENOMEM, "bound: out of memory");
        goto done;
    }
    for (int t = 0; t < n; t++) {
        int v = g->topo[t];
        for (int k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
            int u = g->pred[k];
            if (head[u] + p->min_exec[u] > head[v])
                head[v] = head[u] + p->min_exec[u];
        }
    }
    for (int t = n - 1; t >= 0; t--) {
        int v = g->topo[t];
        for (int k = g->succ_off[v]; k < g->succ_off[v + 1]; k++) {
            int w = g->succ[k];
            if (tail[w] + p->min_exec[w] > tail[v])
                tail[v] = tail[w] + p->min_exec[w];
        }
    }
    if (n == 0)
        goto done;
    int kh = thresholds(head, n, sorted, ht), kt = thresholds(tail, n, sorted, tt);
    for (int i = 0; i < n; i++)
        cell[(size_t)bucket(ht, kh, head[i]) * (GRID + 1) + bucket(tt, kt, tail[i])] += p->work[i];
    /* suffix sums: cell[a][b] = work of ops with head bucket >= a, tail bucket >= b */
    for (int a = kh - 1; a >= 0; a--)
        for (int b = kt - 1; b >= 0; b--) {
            double *c = &cell[(size_t)a * (GRID + 1) + b];
            *c += cell[(size_t)(a + 1) * (GRID + 1) + b] + cell[(size_t)a * (GRID + 1) + b + 1] -
                  cell[(size_t)(a + 1) * (GRID + 1) + b + 1];
        }
    for (int a = 0; a < kh; a++)
        for (int b = 0; b < kt; b++) {
            double w = cell[(size_t)a * (GRID + 1) + b];
            if (w <= 0)
                continue;
            double lb = ht[a] + tt[b] + w / p->total_speed;
            if (lb > best)
                best = lb;
        }
done:
    free(head);
    free(tail);
    free(sorted);
    free(ht);
    free(tt);
    free(cell);
    return best;
}

/* The LP relaxation; memory: 1 with the memory rows.  Returns its optimum
 * (0 when not solved), *infeasible when CBC proved it infeasible. */
static op_status lp_bound(const op_problem *p, int memory, double deadline, double *out,
                          int *infeasible, int *used_memory, op_error *err)
{
    const op_graph *g = p->g;
    int n = p->n, nd = p->nd;
    lp_model m = {0};
    *out = 0;
    *infeasible = 0;
    *used_memory = 0;
    int *X = malloc(((size_t)n * nd + 1) * sizeof *X), *S = malloc(((size_t)n + 1) * sizeof *S);
    if (!X || !S) {
        free(X);
        free(S);
        return op_fail(err, OP_ENOMEM, "bound: out of memory");
    }
    int T = lp_col(&m, 0, LP_INF, 1, 0);
    for (int i = 0; i < n; i++) {
        S[i] = lp_col(&m, 0, LP_INF, 0, 0);
        for (int d = 0; d < nd; d++) {
            int ok = allowed(p, i, d);
            if (ok && memory) {
                double own = (double)g->param_bytes[i] + (double)g->output_bytes[i] +
                             (double)g->temp_bytes[i];
                ok = own <= (double)p->c->dev[d].memory_bytes;
            }
            X[i * nd + d] = ok ? lp_col(&m, 0, 1, 0, 1) : -1;
        }
        for (int d = 0; d < nd; d++)
            if (X[i * nd + d] >= 0)
                lp_term(&m, X[i * nd + d], 1);
        lp_row_end(&m, 1, 1);
        lp_term(&m, T, 1); /* T >= C_i */
        lp_term(&m, S[i], -1);
        for (int d = 0; d < nd; d++)
            if (X[i * nd + d] >= 0)
                lp_term(&m, X[i * nd + d], -op_exec_us(p, i, d));
        lp_row_end(&m, 0, LP_INF);
    }
    for (int e = 0; e < g->n_edges; e++) { /* S_b >= C_a */
        int a = g->edge_src[e], b = g->edge_dst[e];
        lp_term(&m, S[b], 1);
        lp_term(&m, S[a], -1);
        for (int d = 0; d < nd; d++)
            if (X[a * nd + d] >= 0)
                lp_term(&m, X[a * nd + d], -op_exec_us(p, a, d));
        lp_row_end(&m, 0, LP_INF);
    }
    for (int d = 0; d < nd; d++) { /* load */
        lp_term(&m, T, 1);
        for (int i = 0; i < n; i++)
            if (X[i * nd + d] >= 0)
                lp_term(&m, X[i * nd + d], -op_exec_us(p, i, d));
        lp_row_end(&m, 0, LP_INF);
    }
    for (int grp = 0; grp < p->n_groups; grp++) { /* colocation */
        int first = p->group_ops[p->group_off[grp]];
        for (int k = p->group_off[grp] + 1; k < p->group_off[grp + 1]; k++)
            for (int d = 0; d < nd; d++) {
                int a = X[first * nd + d], b = X[p->group_ops[k] * nd + d];
                if (a >= 0)
                    lp_term(&m, a, 1);
                if (b >= 0)
                    lp_term(&m, b, -1);
                lp_row_end(&m, 0, 0);
            }
    }
    if (memory) { /* params stay resident all step */
        double total = 0;
        for (int i = 0; i < n; i++)
            total += (double)g->param_bytes[i];
        for (int d = 0; d < nd; d++) {
            if (total <= (double)p->c->dev[d].memory_bytes)
                continue;
            *used_memory = 1;
            for (int i = 0; i < n; i++)
                if (X[i * nd + d] >= 0)
                    lp_term(&m, X[i * nd + d], (double)g->param_bytes[i]);
            lp_row_end(&m, -LP_INF, (double)p->c->dev[d].memory_bytes);
        }
    }
    lp_solve_opts so = {.deadline = deadline, .relax = 1};
    lp_solution sol;
    op_status st = lp_solve(&m, &so, &sol, err);
    if (!st) {
        if (sol.status == LP_OPTIMAL)
            *out = sol.objective * (1 - 1e-7); /* solver tolerance */
        *infeasible = sol.status == LP_INFEASIBLE;
        free(sol.x);
    }
    free(X);
    free(S);
    lp_free(&m);
    return st;
}

static op_status ilp_bound(const op_problem *p, double deadline, double *out, op_error *err)
{
    pesto_ilp_opts o;
    pesto_ilp_default_opts(&o);
    o.memory_cap = 0;
    o.balance = -1;
    o.max_xfer_pairs = 0; /* keep every pair; a cap would only weaken the bound */
    o.max_binaries = 0;
    o.time_limit_s = 0;
    o.deadline = deadline;
    pesto_ilp_result r;
    *out = 0;
    op_status st = pesto_ilp_solve(p, &o, NULL, NULL, NULL, &r, err);
    if (st)
        return st;
    if (r.status != PESTO_INFEASIBLE && !r.stopped) {
        /* every schedule of at most H is in the model; longer ones exceed H */
        double b = r.bound < r.horizon ? r.bound : r.horizon;
        *out = b > 0 ? b * (1 - 1e-7) : 0;
    }
    pesto_ilp_result_destroy(&r);
    return OP_OK;
}

static void take(op_bound *b, double v, const char *method)
{
    if (v > b->lower_bound_us * (1 + 1e-9)) {
        b->lower_bound_us = v;
        b->method = method;
    }
}

op_status op_lower_bound_quick(const op_problem *p, op_bound *b, op_error *err)
{
    memset(b, 0, sizeof *b);
    b->trivial_us = p->lower_bound_us;
    b->lower_bound_us = p->lower_bound_us;
    b->method = "trivial";
    int fail = 0;
    b->energetic_us = energetic(p, err, &fail);
    if (fail)
        return (op_status)fail;
    take(b, b->energetic_us, "energetic");
    return OP_OK;
}

op_status op_lower_bound(const op_problem *p, double seconds, op_bound *b, op_error *err)
{
    double t0 = op_seconds_now(), deadline = t0 + (seconds > 0 ? seconds : 10);
    op_status st0 = op_lower_bound_quick(p, b, err);
    if (st0)
        return st0;
    int infeasible = 0, used = 0;
    double lp = 0;
    op_status st = lp_bound(p, 1, deadline, &lp, &infeasible, &used, err);
    if (!st && infeasible) {
        b->no_fit = 1;
        st = lp_bound(p, 0, deadline, &lp, &infeasible, &used, err);
    }
    if (st)
        return st;
    b->memory_rows = used;
    b->lp_us = lp;
    take(b, lp, used ? "lp+memory" : "lp");
    if (p->n <= ILP_MAX_OPS && !op_interrupted() && op_seconds_now() < deadline) {
        if ((st = ilp_bound(p, deadline, &b->ilp_us, err)))
            return st;
        take(b, b->ilp_us, "ilp");
    }
    return OP_OK;
}

double op_bound_gap(double step_us, double bound_us)
{
    return step_us > 0 ? (step_us - bound_us) / step_us : 0;
}
