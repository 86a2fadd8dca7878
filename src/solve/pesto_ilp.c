/*
 * pesto_ilp.c - the Pesto ILP (Hafeez et al., Middleware '21, section
 * 3.2.2) for any number of devices, built in memory and solved with COIN-OR
 * CBC through its C interface.
 *
 * Augmented DAG: every edge e = (a, b) whose ends may land on different
 * devices gets a communication vertex with start TS_e.  Variables (all times
 * in microseconds, continuous in [0, H]):
 *   Cmax                  makespan, the objective (min)
 *   S_i                   start of op i; C_i = S_i + sum_d exec(i,d) x_id
 *   x_id in {0,1}         op i on device d (one-hot; only eligible devices)
 *   TS_e                  start of e's transfer
 *   y_est in [0,1]        e's transfer goes s -> t, y >= x_as + x_bt - 1;
 *                         its length sum_st T_st(bytes_e) y_est is the
 *                         paper's z_k p_k: z = "different devices" (the XOR
 *                         of constraint 5 generalised to k devices, split by
 *                         direction so the length may depend on the link)
 *   delta_ij in {0,1}     order of a pair that may share a device/channel
 *   q_ij, r_kl in [0,1]   "same device" / "same channel" indicators
 * Constraints: (1) C_a <= TS_e, TS_e + len_e <= S_b; (3) C_i <= Cmax;
 * one device per op; colocation x_id = x_jd; (4)/(10) non-overlap of ops i, j
 * on one device: S_j >= C_i - M(1-delta) - M(1-q), S_i >= C_j - M delta -
 * M(1-q), q >= x_id + x_jd - 1; (7) the same for two transfers sharing a
 * channel (cluster channel ids, so shared named channels and per-direction
 * queues are both right), r >= u_kc + u_lc - 1 with u_kc = sum of y over the
 * device pairs of channel c; (8) memory: sum_i param_bytes_i x_id <=
 * memory_bytes, sound for formats.md 5.5 (params are resident all step, so
 * no placement that fits is cut off) and honest about what it bounds: only
 * the params, the rest of the peak is the simulator's to judge - and
 * optionally the paper's balanced footprint.  Beyond the paper: per-device
 * load rows Cmax >= sum_i exec(i,d) x_id (without them the LP bound stays
 * at the critical path), and symmetry breaking for identical devices
 * (add_symmetry; the warm start is relabelled to meet it).  Congestion
 * pairs past --max-pairs keep the largest transfers; the number dropped is
 * reported (pesto_ilp_result.xfer_pairs_dropped).
 *
 * Why one-hot rather than the paper's binary encoding {x_i, y_i}: exec time,
 * eligibility (kind and device pins), per-pair link costs and per-link
 * channels are then linear in the variables, any device count works (no
 * forbidden codes when nd is not a power of two) and the LP relaxation is
 * tighter; the cost is nd instead of log2(nd) binaries per op.
 *
 * Big-M: M = H, an upper bound on every time variable of the schedules we
 * want: the makespan of the warm start in this model when one is given
 * (Cmax <= H then keeps it feasible and cuts worse ones), else the serial
 * schedule (sum of the slowest eligible exec times plus the slowest transfer
 * of every edge).  Every disjunction is then valid with M = H because all
 * times lie in [0, H].  H also prunes pairs: an op's window is [est_i,
 * H - tail_i] (longest compute-only paths to and from it); pairs whose
 * windows cannot overlap, and pairs ordered by the DAG, get no indicator.
 *
 * Transfer lengths come from pesto_xfer_us: by default one transfer of the
 * edge's bytes, or (pesto_ilp_opts.xfer_count/xfer_bytes, set by the placer
 * on a coarse graph) one latency per original source op, which is what the
 * simulator charges for the ops behind a coarse edge.
 *
 * Differences from the simulator's model (formats.md 5), stated so results
 * are read right: the ILP sends one transfer per edge, not per (source op,
 * device); a coarse vertex waits for all its inputs (the original's members
 * may start as theirs arrive); transfers from the same source may overlap each other on a
 * channel (so the channel time they take is that of the largest, as in the
 * simulator); the ILP may order a channel's transfers freely, the simulator
 * serves them first come first served; memory is the params-only row above.
 * Each of these makes the model a relaxation of the simulator's schedules on
 * the original graph (its transfer of an edge's bytes is never longer than
 * the simulator's transfer of the largest edge to that device), which is
 * why opplace bound may use its proven bound (src/bound/bound.c).
 * Reported step times always come from the simulator.
 */
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/sort.h"
#include "opplace/run_ctx.h"
#include "solve/lp.h"
#include "solve/pesto_ilp.h"

void pesto_ilp_default_opts(pesto_ilp_opts *o)
{
    *o = (pesto_ilp_opts){.time_limit_s = 30, .congestion = 1, .memory_cap = 1, .balance = -1,
                          .max_xfer_pairs = 5000, .max_binaries = 10000, .symmetry = 1,
                          .verbose = 0};
}

/* ---- the instance: times, windows, reachability ---------------------------------- */

typedef struct inst {
    const op_problem *p;
    const pesto_ilp_opts *o;  /* the communication model (pesto_xfer_us) */
    int n, m, nd;
    double H;
    double *est, *tail;       /* per op */
    unsigned char *reach;     /* n x n bits: reach[i] has j when i ~> j, i != j */
    size_t rowbytes;
    /* columns */
    int cmax, *S, *X, *TS, *Y; /* X: n*nd, Y: m*nd*nd, -1 absent */
} inst;

static int reaches(const inst *I, int i, int j)
{
    return (I->reach[(size_t)i * I->rowbytes + (size_t)(j >> 3)] >> (j & 7)) & 1;
}

static double max_exec(const op_problem *p, int i)
{
    double t = 0;
    for (int d = 0; d < p->nd; d++)
        if (op_allowed(p, i, d) && op_exec_us(p, i, d) > t)
            t = op_exec_us(p, i, d);
    return t;
}

static double max_transfer(const inst *I, int e)
{
    const op_problem *p = I->p;
    const op_graph *g = p->g;
    double t = 0;
    for (int s = 0; s < p->nd; s++)
        for (int d = 0; d < p->nd; d++)
            if (s != d && op_allowed(p, g->edge_src[e], s) && op_allowed(p, g->edge_dst[e], d)) {
                double x = pesto_xfer_us(p, I->o, e, s, d);
                if (x > t)
                    t = x;
            }
    return t;
}

static op_status inst_init(inst *I, const op_problem *p, op_error *err)
{
    const op_graph *g = p->g;
    memset(I, 0, sizeof *I);
    I->p = p;
    I->n = p->n;
    I->m = g->n_edges;
    I->nd = p->nd;
    I->rowbytes = ((size_t)I->n + 7) / 8;
    I->est = op_calloc((size_t)I->n + 1, sizeof *I->est, err);
    I->tail = op_calloc((size_t)I->n + 1, sizeof *I->tail, err);
    I->reach = op_calloc((size_t)I->n * I->rowbytes + 1, 1, err);
    I->S = op_malloc((size_t)I->n * sizeof *I->S + 1, err);
    I->X = op_malloc((size_t)I->n * I->nd * sizeof *I->X + 1, err);
    I->TS = op_malloc((size_t)I->m * sizeof *I->TS + 1, err);
    I->Y = op_malloc((size_t)I->m * I->nd * I->nd * sizeof *I->Y + 1, err);
    if (!I->est || !I->tail || !I->reach || !I->S || !I->X || !I->TS || !I->Y)
        return OP_ENOMEM;
    for (int t = 0; t < I->n; t++) {
        int v = g->topo[t];
        for (int k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
            int u = g->pred[k];
            if (I->est[u] + p->min_exec[u] > I->est[v])
                I->est[v] = I->est[u] + p->min_exec[u];
        }
    }
    for (int t = I->n - 1; t >= 0; t--) {
        int v = g->topo[t];
        double best = 0;
        unsigned char *rv = I->reach + (size_t)v * I->rowbytes;
        for (int k = g->succ_off[v]; k < g->succ_off[v + 1]; k++) {
            int w = g->succ[k];
            if (I->tail[w] > best)
                best = I->tail[w];
            const unsigned char *rw = I->reach + (size_t)w * I->rowbytes;
            for (size_t b = 0; b < I->rowbytes; b++)
                rv[b] |= rw[b];
            rv[w >> 3] |= (unsigned char)(1u << (w & 7));
        }
        I->tail[v] = p->min_exec[v] + best;
    }
    return OP_OK;
}

static void inst_destroy(inst *I)
{
    free(I->est);
    free(I->tail);
    free(I->reach);
    free(I->S);
    free(I->X);
    free(I->TS);
    free(I->Y);
}

static double serial_horizon(const inst *I)
{
    const op_problem *p = I->p;
    double h = 0;
    for (int i = 0; i < p->n; i++)
        h += max_exec(p, i);
    for (int e = 0; e < p->g->n_edges; e++)
        h += max_transfer(I, e);
    return h;
}

/* ---- model ---------------------------------------------------------------------- */

/* C_i's terms: S_i + sum_d exec x_id, with coefficient sign. */
static void add_completion(lp_model *m, const inst *I, int i, double sign)
{
    lp_term(m, I->S[i], sign);
    for (int d = 0; d < I->nd; d++)
        if (I->X[i * I->nd + d] >= 0)
            lp_term(m, I->X[i * I->nd + d], sign * op_exec_us(I->p, i, d));
}

static void add_op_vars(lp_model *m, inst *I)
{
    const op_problem *p = I->p;
    I->cmax = lp_col(m, 0, I->H, 1, 0);
    for (int i = 0; i < I->n; i++) {
        double hi = I->H - I->tail[i];
        I->S[i] = lp_col(m, I->est[i], hi > I->est[i] ? hi : I->est[i], 0, 0);
        for (int d = 0; d < I->nd; d++)
            I->X[i * I->nd + d] = op_allowed(p, i, d) ? lp_col(m, 0, 1, 0, 1) : -1;
        for (int d = 0; d < I->nd; d++) /* one device */
            if (I->X[i * I->nd + d] >= 0)
                lp_term(m, I->X[i * I->nd + d], 1);
        lp_row_end(m, 1, 1);
        if (I->p->g->succ_off[i] == I->p->g->succ_off[i + 1]) { /* (3) for sinks */
            lp_term(m, I->cmax, 1);
            add_completion(m, I, i, -1);
            lp_row_end(m, 0, LP_INF);
        }
    }
    for (int grp = 0; grp < p->n_groups; grp++) { /* colocation */
        int first = p->group_ops[p->group_off[grp]];
        for (int k = p->group_off[grp] + 1; k < p->group_off[grp + 1]; k++)
            for (int d = 0; d < I->nd; d++) {
                int a = I->X[first * I->nd + d], b = I->X[p->group_ops[k] * I->nd + d];
                if (a < 0 || b < 0)
                    continue;
                lp_term(m, a, 1);
                lp_term(m, b, -1);
                lp_row_end(m, 0, 0);
            }
    }
}

static void add_edges(lp_model *m, inst *I)
{
    const op_problem *p = I->p;
    const op_graph *g = p->g;
    int nd = I->nd;
    for (int e = 0; e < I->m; e++) {
        int a = g->edge_src[e], b = g->edge_dst[e], any = 0;
        for (int s = 0; s < nd; s++)
            for (int t = 0; t < nd; t++) {
                int y = -1;
                if (s != t && I->X[a * nd + s] >= 0 && I->X[b * nd + t] >= 0) {
                    y = lp_col(m, 0, 1, 0, 0);
                    lp_term(m, y, 1);
                    lp_term(m, I->X[a * nd + s], -1);
                    lp_term(m, I->X[b * nd + t], -1);
                    lp_row_end(m, -1, LP_INF);
                    any = 1;
                }
                I->Y[((size_t)e * nd + s) * nd + t] = y;
            }
        if (!any) { /* always on one device: plain precedence */
            I->TS[e] = -1;
            lp_term(m, I->S[b], 1);
            add_completion(m, I, a, -1);
            lp_row_end(m, 0, LP_INF);
            continue;
        }
        double lo = I->est[a] + p->min_exec[a], hi = I->H - I->tail[b];
        I->TS[e] = lp_col(m, lo, hi > lo ? hi : lo, 0, 0);
        lp_term(m, I->TS[e], 1); /* C_a <= TS_e */
        add_completion(m, I, a, -1);
        lp_row_end(m, 0, LP_INF);
        lp_term(m, I->S[b], 1); /* TS_e + len_e <= S_b */
        lp_term(m, I->TS[e], -1);
        for (int s = 0; s < nd; s++)
            for (int t = 0; t < nd; t++) {
                int y = I->Y[((size_t)e * nd + s) * nd + t];
                if (y >= 0)
                    lp_term(m, y, -pesto_xfer_us(p, I->o, e, s, t));
            }
        lp_row_end(m, 0, LP_INF);
    }
}

static int windows_overlap(double lo1, double hi1, double lo2, double hi2)
{
    return lo1 < hi2 && lo2 < hi1;
}

/* The two disjunctive rows for items u (start su, length terms added by
 * len_u) and v: S_v >= E_u - M(1-delta) - M(1-q), S_u >= E_v - M delta - M(1-q).
 * q_col < 0 means q = 1. */
typedef void (*len_fn)(lp_model *m, const inst *I, int item, double sign);

static void len_op(lp_model *m, const inst *I, int i, double sign)
{
    for (int d = 0; d < I->nd; d++)
        if (I->X[i * I->nd + d] >= 0)
            lp_term(m, I->X[i * I->nd + d], sign * op_exec_us(I->p, i, d));
}

static void len_xfer(lp_model *m, const inst *I, int e, double sign)
{
    for (int s = 0; s < I->nd; s++)
        for (int t = 0; t < I->nd; t++) {
            int y = I->Y[((size_t)e * I->nd + s) * I->nd + t];
            if (y >= 0)
                lp_term(m, y, sign * pesto_xfer_us(I->p, I->o, e, s, t));
        }
}

static void add_disjunction(lp_model *m, const inst *I, int su, int sv, int u, int v, len_fn len,
                            int delta, int q)
{
    double M = I->H;
    /* u before v when delta = 1 */
    lp_term(m, sv, 1);
    lp_term(m, su, -1);
    len(m, I, u, -1);
    lp_term(m, delta, -M);
    if (q >= 0)
        lp_term(m, q, -M);
    lp_row_end(m, q >= 0 ? -2 * M : -M, LP_INF);
    /* v before u when delta = 0 */
    lp_term(m, su, 1);
    lp_term(m, sv, -1);
    len(m, I, v, -1);
    lp_term(m, delta, M);
    if (q >= 0)
        lp_term(m, q, -M);
    lp_row_end(m, q >= 0 ? -M : 0, LP_INF);
}

typedef struct pair_list {
    long n, cap;
    int *a, *b, *delta;
} pair_list;

static int pair_push(pair_list *l, int a, int b)
{
    if (l->n == l->cap) {
        long c = l->cap ? 2 * l->cap : 1024;
        int *x = realloc(l->a, (size_t)c * sizeof *x);
        if (x)
            l->a = x;
        int *y = realloc(l->b, (size_t)c * sizeof *y);
        if (y)
            l->b = y;
        int *z = realloc(l->delta, (size_t)c * sizeof *z);
        if (z)
            l->delta = z;
        if (!x || !y || !z)
            return -1;
        l->cap = c;
    }
    l->a[l->n] = a;
    l->b[l->n] = b;
    l->delta[l->n] = -1;
    l->n++;
    return 0;
}

static int add_op_pairs(lp_model *m, const inst *I, pair_list *pairs)
{
    const op_problem *p = I->p;
    int nd = I->nd;
    for (int i = 0; i < I->n; i++)
        for (int j = i + 1; j < I->n; j++) {
            if (reaches(I, i, j) || reaches(I, j, i))
                continue;
            int common = 0;
            double li = 0, lj = 0;
            for (int d = 0; d < nd; d++)
                if (I->X[i * nd + d] >= 0 && I->X[j * nd + d] >= 0) {
                    common = 1;
                    li = fmax(li, op_exec_us(p, i, d));
                    lj = fmax(lj, op_exec_us(p, j, d));
                }
            if (!common || li <= 0 || lj <= 0)
                continue;
            if (!windows_overlap(I->est[i], I->H - I->tail[i] + p->min_exec[i], I->est[j],
                                 I->H - I->tail[j] + p->min_exec[j]))
                continue;
            int delta = lp_col(m, 0, 1, 0, 1), q = -1;
            int same_group = p->group_of[i] != OP_NONE && p->group_of[i] == p->group_of[j];
            if (!same_group) {
                q = lp_col(m, 0, 1, 0, 0);
                for (int d = 0; d < nd; d++)
                    if (I->X[i * nd + d] >= 0 && I->X[j * nd + d] >= 0) {
                        lp_term(m, q, 1);
                        lp_term(m, I->X[i * nd + d], -1);
                        lp_term(m, I->X[j * nd + d], -1);
                        lp_row_end(m, -1, LP_INF);
                    }
            }
            add_disjunction(m, I, I->S[i], I->S[j], i, j, len_op, delta, q);
            if (pair_push(pairs, i, j))
                return -1;
            pairs->delta[pairs->n - 1] = delta;
        }
    return 0;
}

/* Channels edge e's transfer may use: a bitset over channel ids. */
static void xfer_channels(const inst *I, int e, unsigned char *set)
{
    memset(set, 0, ((size_t)I->p->c->n_chan + 7) / 8);
    for (int s = 0; s < I->nd; s++)
        for (int t = 0; t < I->nd; t++)
            if (I->Y[((size_t)e * I->nd + s) * I->nd + t] >= 0) {
                int ch = op_cluster_chan(I->p->c, s, t);
                set[ch >> 3] |= (unsigned char)(1u << (ch & 7));
            }
}

static int by_weight_desc(const void *x, const void *y, const void *ctx)
{
    const double *w = ctx;
    long a = *(const long *)x, b = *(const long *)y;
    if (w[a] != w[b])
        return w[a] > w[b] ? -1 : 1;
    return (a > b) - (a < b);
}

/* Candidate congestion pairs: transfers from different sources, not ordered
 * by the DAG, whose windows overlap and that can share a channel. */
static int xfer_candidates(const inst *I, pair_list *cand)
{
    const op_graph *g = I->p->g;
    size_t cb = ((size_t)I->p->c->n_chan + 7) / 8;
    unsigned char *set = calloc((size_t)I->m * cb + 1, 1);
    if (!set)
        return -1;
    for (int e = 0; e < I->m; e++)
        if (I->TS[e] >= 0)
            xfer_channels(I, e, set + (size_t)e * cb);
    int rc = 0;
    for (int e = 0; e < I->m && !rc; e++) {
        if (I->TS[e] < 0)
            continue;
        int a1 = g->edge_src[e], b1 = g->edge_dst[e];
        double lo1 = I->est[a1] + I->p->min_exec[a1], hi1 = I->H - I->tail[b1];
        for (int f = e + 1; f < I->m && !rc; f++) {
            if (I->TS[f] < 0)
                continue;
            int a2 = g->edge_src[f], b2 = g->edge_dst[f];
            if (a1 == a2)
                continue;
            if (b1 == a2 || reaches(I, b1, a2) || b2 == a1 || reaches(I, b2, a1))
                continue;
            double lo2 = I->est[a2] + I->p->min_exec[a2], hi2 = I->H - I->tail[b2];
            if (!windows_overlap(lo1, hi1, lo2, hi2))
                continue;
            int share = 0;
            for (size_t k = 0; k < cb && !share; k++)
                share = (set[(size_t)e * cb + k] & set[(size_t)f * cb + k]) != 0;
            if (share)
                rc = pair_push(cand, e, f);
        }
    }
    free(set);
    return rc;
}

static int add_xfer_pairs(lp_model *m, const inst *I, long cap, pair_list *pairs, long *dropped)
{
    pair_list cand = {0};
    int rc = xfer_candidates(I, &cand);
    long keep = cand.n;
    long *idx = NULL;
    double *w = NULL;
    *dropped = 0;
    if (!rc && cap > 0 && cand.n > cap) {
        /* keep the pairs of the largest transfers: a relaxation of (7) */
        idx = malloc((size_t)cand.n * sizeof *idx);
        w = malloc((size_t)cand.n * sizeof *w);
        if (!idx || !w)
            rc = -1;
        for (long k = 0; !rc && k < cand.n; k++) {
            idx[k] = k;
            w[k] = max_transfer(I, cand.a[k]) + max_transfer(I, cand.b[k]);
        }
        if (!rc)
            op_sort(idx, (size_t)cand.n, sizeof *idx, by_weight_desc, w);
        keep = cap;
        *dropped = cand.n - cap;
    }
    for (long t = 0; t < keep && !rc; t++) {
        long k = idx ? idx[t] : t;
        int e = cand.a[k], f = cand.b[k];
        int delta = lp_col(m, 0, 1, 0, 1), r = lp_col(m, 0, 1, 0, 0);
        for (int ch = 0; ch < I->p->c->n_chan; ch++) {
            int used = 0;
            for (int s = 0; s < I->nd; s++)
                for (int u = 0; u < I->nd; u++) {
                    if (s == u || op_cluster_chan(I->p->c, s, u) != ch)
                        continue;
                    int y1 = I->Y[((size_t)e * I->nd + s) * I->nd + u];
                    int y2 = I->Y[((size_t)f * I->nd + s) * I->nd + u];
                    if (y1 >= 0)
                        lp_term(m, y1, -1), used |= 1;
                    if (y2 >= 0)
                        lp_term(m, y2, -1), used |= 2;
                }
            if (used == 3) {
                lp_term(m, r, 1);
                lp_row_end(m, -1, LP_INF);
            } else if (used) { /* discard the half-built row */
                while (m->nnz > 0 && m->ti[m->nnz - 1] == m->nrow)
                    m->nnz--;
            }
        }
        add_disjunction(m, I, I->TS[e], I->TS[f], e, f, len_xfer, delta, r);
        if (pair_push(pairs, e, f))
            rc = -1;
        else
            pairs->delta[pairs->n - 1] = delta;
    }
    free(idx);
    free(w);
    free(cand.a);
    free(cand.b);
    free(cand.delta);
    return rc;
}

/* Memory rows.  Capacity (memory_cap): the param_bytes of a device's ops
 * are resident all step (formats.md 5.5), so sum_i param_i x_id <=
 * memory_bytes is a necessary condition: it never rejects a placement the
 * simulator finds fits, and it bounds only that part of the peak (outputs,
 * received tensors and temporaries are left to the simulator, which judges
 * every candidate).  Balance (the paper's, optional): param + output bytes
 * per device <= (1 + balance) * total / devices. */
static double footprint(const op_problem *p, int i, int balance)
{
    return (double)p->g->param_bytes[i] + (balance ? (double)p->g->output_bytes[i] : 0);
}

static void add_memory_rows(lp_model *m, const inst *I, int balance, double cap_all)
{
    const op_problem *p = I->p;
    for (int d = 0; d < I->nd; d++) {
        double cap = balance ? cap_all : (double)p->c->dev[d].memory_bytes, reach = 0;
        for (int i = 0; i < I->n; i++)
            if (I->X[i * I->nd + d] >= 0)
                reach += footprint(p, i, balance);
        if (reach <= cap)
            continue; /* never binding */
        for (int i = 0; i < I->n; i++)
            if (I->X[i * I->nd + d] >= 0)
                lp_term(m, I->X[i * I->nd + d], footprint(p, i, balance));
        lp_row_end(m, -LP_INF, cap);
    }
}

static double balance_cap(const op_problem *p, const pesto_ilp_opts *o)
{
    double total = 0;
    for (int i = 0; i < p->n; i++)
        total += footprint(p, i, 1);
    return (1 + o->balance) * total / p->nd;
}

static void add_memory(lp_model *m, const inst *I, const pesto_ilp_opts *o)
{
    if (o->memory_cap)
        add_memory_rows(m, I, 0, 0);
    if (o->balance >= 0)
        add_memory_rows(m, I, 1, balance_cap(I->p, o));
}

/* Does a placement meet the model's memory rows? */
int pesto_ilp_memory_ok(const op_problem *p, const int *dev, const pesto_ilp_opts *o)
{
    double cap_all = o->balance >= 0 ? balance_cap(p, o) : 0;
    for (int d = 0; d < p->nd; d++) {
        double params = 0, both = 0;
        for (int i = 0; i < p->n; i++)
            if (dev[i] == d) {
                params += footprint(p, i, 0);
                both += footprint(p, i, 1);
            }
        if (o->memory_cap && params > (double)p->c->dev[d].memory_bytes)
            return 0;
        if (o->balance >= 0 && both > cap_all)
            return 0;
    }
    return 1;
}

/* Identical devices (same speed, memory and eligibility of every op, links
 * to and from every other device alike, every pair its own channel) are
 * interchangeable: any solution maps to one where, within each class, a
 * device is first used (by op index) after the device before it.  Row per
 * op i and class member j > 0: x_{i,d_j} <= sum_{i' < i} x_{i',d_{j-1}}.
 * class_of[d] receives d's class leader; returns the number of rows added. */
/* Link s -> d costs the same as link t -> e. */
static int same_link(const op_cluster *c, int s, int d, int t, int e)
{
    return op_cluster_latency(c, s, d) == op_cluster_latency(c, t, e) &&
           op_cluster_us_per_byte(c, s, d) == op_cluster_us_per_byte(c, t, e);
}

static int same_device(const op_problem *p, int a, int b)
{
    const op_cluster *c = p->c;
    int nd = p->nd;
    if (c->dev[a].speed != c->dev[b].speed || c->dev[a].memory_bytes != c->dev[b].memory_bytes)
        return 0;
    for (int i = 0; i < p->n; i++)
        if (op_eligible(p, i, a) != op_eligible(p, i, b) ||
            (op_eligible(p, i, a) && op_exec_us(p, i, a) != op_exec_us(p, i, b)))
            return 0;
    for (int k = 0; k < nd; k++) {
        if (k == a || k == b)
            continue;
        if (!same_link(c, a, k, b, k) || !same_link(c, k, a, k, b))
            return 0;
    }
    if (!same_link(c, a, b, b, a))
        return 0;
    return 1;
}

static int own_channels(const op_cluster *c, int nd)
{
    for (int x = 0; x < nd * nd; x++)
        for (int y = x + 1; y < nd * nd; y++)
            if (x / nd != x % nd && y / nd != y % nd &&
                op_cluster_chan(c, x / nd, x % nd) == op_cluster_chan(c, y / nd, y % nd))
                return 0;
    return 1;
}

static int device_classes(const op_problem *p, int *class_of)
{
    int nd = p->nd, any = 0;
    int ok = nd <= 64 && own_channels(p->c, nd); /* the check is quartic in nd */
    for (int d = 0; d < nd; d++) {
        class_of[d] = d;
        for (int e = 0; e < d && ok; e++)
            if (class_of[e] == e && same_device(p, e, d)) {
                class_of[d] = e;
                any = 1;
                break;
            }
    }
    return ok && any;
}

static long add_symmetry(lp_model *m, const inst *I, const int *class_of)
{
    int nd = I->nd;
    long rows = 0;
    for (int d = 0; d < nd; d++) {
        if (class_of[d] == d)
            continue;
        int prev = -1; /* the class member before d */
        for (int e = 0; e < d; e++)
            if (class_of[e] == class_of[d])
                prev = e;
        for (int i = 0; i < I->n; i++) {
            if (I->X[i * nd + d] < 0)
                continue;
            lp_term(m, I->X[i * nd + d], 1);
            for (int k = 0; k < i; k++)
                if (I->X[k * nd + prev] >= 0)
                    lp_term(m, I->X[k * nd + prev], -1);
            lp_row_end(m, -LP_INF, 0);
            rows++;
        }
    }
    return rows;
}

/* Relabel the devices of pl within each class by first use (op index), so
 * the warm start meets the symmetry rows; the per-device orders move along. */
static op_status canonical_devices(const op_problem *p, const int *class_of, op_placement *pl,
                                   op_error *err)
{
    int nd = p->nd, n = p->n;
    int *map = malloc((size_t)nd * sizeof *map), *used = calloc((size_t)nd, sizeof *used);
    int *seq = malloc(((size_t)n + 1) * sizeof *seq);
    op_status st = OP_OK;
    if (!map || !used || !seq) {
        st = op_fail(err, OP_ENOMEM, "pesto: out of memory");
        goto done;
    }
    for (int d = 0; d < nd; d++)
        map[d] = -1;
    for (int i = 0; i < n; i++) { /* first use in op index order */
        int d = pl->device_of[i];
        if (map[d] >= 0)
            continue;
        for (int e = 0; e < nd; e++) /* the lowest free member of d's class */
            if (class_of[e] == class_of[d] && !used[e]) {
                map[d] = e;
                used[e] = 1;
                break;
            }
    }
    for (int d = 0; d < nd; d++) /* unused devices take the free members */
        if (map[d] < 0)
            for (int e = 0; e < nd; e++)
                if (class_of[e] == class_of[d] && !used[e]) {
                    map[d] = e;
                    used[e] = 1;
                    break;
                }
    int k = 0;
    if (pl->has_order)
        for (int d = 0; d < nd; d++)
            for (int t = pl->order_off[d]; t < pl->order_off[d + 1]; t++)
                seq[k++] = pl->order[t];
    for (int i = 0; i < n; i++)
        pl->device_of[i] = map[pl->device_of[i]];
    if (pl->has_order)
        st = op_placement_set_order_from_sequence(pl, seq, err);
done:
    free(map);
    free(used);
    free(seq);
    return st;
}

/* ---- solving --------------------------------------------------------------------------- */

/* MIP start: every binary from the warm placement and its model schedule.
 * Fills cols/vals (room for every integer column); returns the count. */
static int mip_start(const lp_model *m, const inst *I, const op_placement *warm,
                     const double *s_op, const double *s_xf, const pair_list *op_pairs,
                     const pair_list *xf_pairs, int *cols, double *vals)
{
    (void)m;
    int *pos = malloc((size_t)I->n * sizeof *pos + 1);
    if (!pos)
        return 0;
    for (int d = 0; d < I->nd; d++)
        for (int k = warm->order_off[d]; k < warm->order_off[d + 1]; k++)
            pos[warm->order[k]] = k;
    int k = 0;
    for (int i = 0; i < I->n; i++)
        for (int d = 0; d < I->nd; d++)
            if (I->X[i * I->nd + d] >= 0) {
                cols[k] = I->X[i * I->nd + d];
                vals[k++] = warm->device_of[i] == d;
            }
    for (long t = 0; t < op_pairs->n; t++) {
        int i = op_pairs->a[t], j = op_pairs->b[t];
        int first = warm->device_of[i] == warm->device_of[j] ? pos[i] < pos[j]
                    : s_op[i] < s_op[j] || (s_op[i] == s_op[j] && i < j);
        cols[k] = op_pairs->delta[t];
        vals[k++] = first;
    }
    for (long t = 0; t < xf_pairs->n; t++) {
        int e = xf_pairs->a[t], f = xf_pairs->b[t];
        cols[k] = xf_pairs->delta[t];
        vals[k++] = s_xf[e] < s_xf[f] || (s_xf[e] == s_xf[f] && e < f);
    }
    free(pos);
    return k;
}

static void read_solution(const double *x, const inst *I, pesto_ilp_result *r)
{
    for (int i = 0; i < I->n; i++) {
        int best = -1;
        double bv = -1;
        for (int d = 0; d < I->nd; d++) {
            int c = I->X[i * I->nd + d];
            if (c >= 0 && x[c] > bv) {
                bv = x[c];
                best = d;
            }
        }
        r->device_of[i] = best;
        r->start[i] = x[I->S[i]];
    }
}

static op_status solve_model(const lp_model *m, const inst *I, const pesto_ilp_opts *o,
                             const op_placement *warm, const double *s_op, const double *s_xf,
                             const pair_list *op_pairs, const pair_list *xf_pairs,
                             const op_place_ctx *ctx, pesto_ilp_result *r, op_error *err)
{
    lp_solve_opts so = {.seconds = o->time_limit_s, .deadline = o->deadline,
                        .verbose = o->verbose};
    if (ctx && ctx->deadline > 0 && (so.deadline <= 0 || ctx->deadline < so.deadline))
        so.deadline = ctx->deadline;
    int *cols = NULL;
    double *vals = NULL;
    if (warm) {
        cols = malloc((size_t)r->n_binaries * sizeof *cols + 1);
        vals = malloc((size_t)r->n_binaries * sizeof *vals + 1);
        if (cols && vals) {
            so.nstart = mip_start(m, I, warm, s_op, s_xf, op_pairs, xf_pairs, cols, vals);
            so.start_cols = cols;
            so.start_vals = vals;
        }
    }
    op_progress(ctx, "pesto: ILP %d columns (%d binary), %d rows; %ld op pairs, %ld transfer "
                "pairs (%ld dropped); M = %.1f us; solving for up to %.0f s", r->n_cols,
                r->n_binaries, r->n_rows, r->op_pairs, r->xfer_pairs, r->xfer_pairs_dropped,
                I->H, o->time_limit_s);
    lp_solution sol;
    op_status st = lp_solve(m, &so, &sol, err);
    free(cols);
    free(vals);
    if (st)
        return st;
    r->stopped = sol.stopped;
    r->bound = sol.bound;
    if (sol.status == LP_INFEASIBLE) {
        r->status = PESTO_INFEASIBLE;
    } else if (sol.x) {
        r->status = sol.status == LP_OPTIMAL ? PESTO_OPTIMAL : PESTO_FEASIBLE;
        r->objective = sol.objective;
        read_solution(sol.x, I, r);
        double lb = r->bound < 0 ? 0 : r->bound;
        r->bound = lb;
        r->gap = r->objective > 0 ? (r->objective - lb) / r->objective : 0;
    }
    free(sol.x);
    return OP_OK;
}

op_status pesto_ilp_solve(const op_problem *p, const pesto_ilp_opts *o, const op_placement *warm,
                          const double *warm_finish, const op_place_ctx *ctx,
                          pesto_ilp_result *r, op_error *err)
{
    double t0 = op_seconds_now();
    memset(r, 0, sizeof *r);
    r->device_of = op_malloc((size_t)p->n * sizeof *r->device_of + 1, err);
    r->start = op_malloc((size_t)p->n * sizeof *r->start + 1, err);
    inst I = {0}; /* zeroed: the cleanup frees its arrays whatever failed */
    lp_model m = {0};
    pair_list op_pairs = {0}, xf_pairs = {0};
    double *s_op = NULL, *s_xf = NULL;
    op_placement sym_warm;
    int have_sym_warm = 0, *class_of = NULL;
    op_status st = OP_OK;
    if (!r->device_of || !r->start || (st = inst_init(&I, p, err)))
        goto done;
    I.o = o;
    I.H = serial_horizon(&I);
    class_of = op_malloc((size_t)p->nd * sizeof *class_of + 1, err);
    if (!class_of) {
        st = OP_ENOMEM;
        goto done;
    }
    int symmetric = o->symmetry && device_classes(p, class_of);
    if (symmetric && warm) { /* the warm start relabelled to meet the symmetry rows */
        if ((st = op_placement_copy(&sym_warm, warm, err)) ||
            (st = canonical_devices(p, class_of, &sym_warm, err)))
            goto done;
        have_sym_warm = 1;
        warm = &sym_warm;
    }
    if (warm && warm->has_order && pesto_ilp_memory_ok(p, warm->device_of, o)) {
        s_op = op_malloc((size_t)p->n * sizeof *s_op + 1, err);
        s_xf = op_malloc((size_t)p->g->n_edges * sizeof *s_xf + 1, err);
        if (!s_op || !s_xf) {
            st = OP_ENOMEM;
            goto done;
        }
        double span = pesto_model_makespan(p, o, warm, warm_finish, s_op, s_xf, err);
        if (span >= 0 && span * (1 + 1e-9) + 1e-6 < I.H)
            I.H = span * (1 + 1e-9) + 1e-6;
        if (span < 0)
            warm = NULL;
    } else {
        warm = NULL;
    }
    if (I.H < p->critical_path_us)
        I.H = p->critical_path_us;
    r->horizon = I.H;
    add_op_vars(&m, &I);
    add_edges(&m, &I);
    for (int d = 0; d < I.nd; d++) { /* per-device load: Cmax >= sum_i exec(i,d) x_id */
        lp_term(&m, I.cmax, 1);
        for (int i = 0; i < I.n; i++)
            if (I.X[i * I.nd + d] >= 0)
                lp_term(&m, I.X[i * I.nd + d], -op_exec_us(p, i, d));
        lp_row_end(&m, 0, LP_INF);
    }
    if (add_op_pairs(&m, &I, &op_pairs) ||
        (o->congestion && add_xfer_pairs(&m, &I, o->max_xfer_pairs, &xf_pairs,
                                         &r->xfer_pairs_dropped)))
        m.oom = 1;
    add_memory(&m, &I, o);
    if (symmetric)
        r->symmetry_rows = add_symmetry(&m, &I, class_of);
    if (m.oom) {
        st = op_fail(err, OP_ENOMEM, "pesto: out of memory building the ILP");
        goto done;
    }
    r->n_cols = m.ncol;
    r->n_rows = m.nrow;
    for (int j = 0; j < m.ncol; j++)
        r->n_binaries += m.isint[j] != 0;
    r->op_pairs = op_pairs.n;
    r->xfer_pairs = xf_pairs.n;
    if (o->max_binaries > 0 && r->n_binaries > o->max_binaries) {
        /* CBC's root LP alone can take far past the time limit at this size */
        op_progress(ctx, "pesto: ILP has %d binaries (limit %ld): not solved; coarsen further "
                    "(--target)", r->n_binaries, o->max_binaries);
        r->status = PESTO_NO_SOLUTION;
    } else {
        st = solve_model(&m, &I, o, warm, s_op, s_xf, &op_pairs, &xf_pairs, ctx, r, err);
    }
    r->seconds = op_seconds_now() - t0;
    if (!st)
        op_progress(ctx, "pesto: ILP %s after %.1f s: incumbent %.1f us, bound %.1f us, gap %.2f%%",
                    r->status == PESTO_OPTIMAL      ? "optimal"
                    : r->status == PESTO_FEASIBLE   ? "stopped"
                    : r->status == PESTO_INFEASIBLE ? "infeasible"
                                                    : "found no solution",
                    r->seconds, r->objective, r->bound, 100 * r->gap);
done:
    if (have_sym_warm)
        op_placement_destroy(&sym_warm);
    free(class_of);
    inst_destroy(&I);
    lp_free(&m);
    free(op_pairs.a);
    free(op_pairs.b);
    free(op_pairs.delta);
    free(xf_pairs.a);
    free(xf_pairs.b);
    free(xf_pairs.delta);
    free(s_op);
    free(s_xf);
    if (st)
        pesto_ilp_result_destroy(r);
    return st;
}

void pesto_ilp_result_destroy(pesto_ilp_result *r)
{
    free(r->device_of);
    free(r->start);
    r->device_of = NULL;
    r->start = NULL;
}

typedef struct start_order {
    const double *start;
    const int *topo_pos;
} start_order;

static int by_start(const void *a, const void *b, const void *ctx)
{
    const start_order *o = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    /* quantised to 1e-3 us so solver round-off cannot reorder equal times */
    double sx = round(o->start[x] * 1e3), sy = round(o->start[y] * 1e3);
    if (sx != sy)
        return sx < sy ? -1 : 1;
    return (o->topo_pos[x] > o->topo_pos[y]) - (o->topo_pos[x] < o->topo_pos[y]);
}

op_status pesto_ilp_to_placement(const op_problem *p, const pesto_ilp_result *r,
                                 op_placement *out, op_error *err)
{
    if (op_placement_init(out, p->n, p->nd, err))
        return OP_ENOMEM;
    int *seq = op_malloc((size_t)p->n * sizeof *seq + 1, err);
    if (!seq) {
        op_placement_destroy(out);
        return OP_ENOMEM;
    }
    for (int i = 0; i < p->n; i++) {
        out->device_of[i] = r->device_of[i];
        seq[i] = i;
    }
    /* rounding can leave a successor a hair before its predecessor when
     * both have equal times; topological position breaks such ties */
    start_order key = {r->start, p->g->topo_pos};
    op_sort(seq, (size_t)p->n, sizeof *seq, by_start, &key);
    op_status st = op_placement_set_order_from_sequence(out, seq, err);
    free(seq);
    if (st)
        op_placement_destroy(out);
    return st;
}
