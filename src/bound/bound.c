/*
 * bound.c - the proven lower bound of opplace/bound.h, and the exact
 * solve of small graphs that shares its ILP (bound/exact.h).
 */
#include "opplace/bound.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bound/exact.h"
#include "core/alloc_hooks.h"
#include "core/pheap.h"
#include "core/sort.h"
#include "opplace/run_ctx.h"
#include "solve/lp.h"
#include "solve/pesto_ilp.h"

#define GRID 256

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

/* Longest compute-only paths before (head) and after (tail) each op at
 * the fastest allowed speed pt[]. */
static void plain_heads_tails(const op_problem *p, const double *pt, double *head, double *tail)
{
    const op_graph *g = p->g;
    int n = p->n;
    for (int t = 0; t < n; t++) {
        int v = g->topo[t];
        head[v] = 0;
        for (int k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
            int u = g->pred[k];
            if (head[u] + pt[u] > head[v])
                head[v] = head[u] + pt[u];
        }
    }
    for (int t = n - 1; t >= 0; t--) {
        int v = g->topo[t];
        tail[v] = 0;
        for (int k = g->succ_off[v]; k < g->succ_off[v + 1]; k++) {
            int w = g->succ[k];
            if (tail[w] + pt[w] > tail[v])
                tail[v] = tail[w] + pt[w];
        }
    }
}

/* The energetic bound over the sets {head >= h, tail >= t} (bound.h). */
static double energetic(const op_problem *p, const double *head, const double *tail,
                        op_error *err, int *fail)
{
    int n = p->n;
    double *sorted = malloc(((size_t)n + 1) * sizeof *sorted);
    double *ht = malloc(GRID * sizeof *ht), *tt = malloc(GRID * sizeof *tt);
    double *cell = calloc((size_t)(GRID + 1) * (GRID + 1), sizeof *cell);
    double best = 0;
    if (!sorted || !ht || !tt || !cell) {
        *fail = op_fail(err, OP_ENOMEM, "bound: out of memory");
        goto done;
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
    free(sorted);
    free(ht);
    free(tt);
    free(cell);
    return best;
}

/*
 * One machine per colocation group (bound.h, "one-machine").
 *
 * Heads: an op v of group G starts after every ancestor of v in G has run,
 * one at a time, on v's device, each no earlier than its own head, so
 * head(v) >= the least makespan of those ancestors with release dates
 * (ascending heads is optimal for one machine with release dates).  Tails
 * the same backwards over v's descendants in G.  Both are propagated along
 * the edges in one pass, so a group's serialised work pushes the heads of
 * everything after it, including other groups.  Then the bound is the
 * longest head + time + tail, and per group Jackson's preemptive schedule on
 * one device (release head, delivery tail: the optimal preemptive value,
 * below every non-preemptive schedule), on the group's best device.
 */
/* The serialised heads and tails (reach rows) of the largest groups first,
 * within these limits, so the quick bound stays quick on 10^5 ops: */
#define ONE_MACHINE_MAX_GROUP 4096         /* members of a group: O(k^2) per group */
#define ONE_MACHINE_MAX_BITS (1LL << 28)   /* reach rows of all groups, bits */
#define ONE_MACHINE_MAX_SCRATCH (1LL << 22) /* ops x words of one group's pass */
#define ONE_MACHINE_MAX_WORK 50000000LL    /* (ops + edges) x words over all groups */

typedef struct om_group {
    int k, words;
    uint64_t *anc, *desc; /* k x words: member j's ancestors / descendants in the group */
    int *sorted, ns;      /* members processed so far, by head (tail) ascending */
} om_group;

/* Rows of reach within the group: forward (desc = 0) ancestors, else descendants. */
static void om_rows(const op_problem *p, const int *midx, int grp, om_group *og, int desc,
                    uint64_t *scratch)
{
    const op_graph *g = p->g;
    int n = p->n, W = og->words;
    uint64_t *rows = desc ? og->desc : og->anc;
    for (int t = 0; t < n; t++) {
        int v = g->topo[desc ? n - 1 - t : t];
        uint64_t *bv = scratch + (size_t)v * W;
        memset(bv, 0, (size_t)W * sizeof *bv);
        int lo = desc ? g->succ_off[v] : g->pred_off[v];
        int hi = desc ? g->succ_off[v + 1] : g->pred_off[v + 1];
        for (int k = lo; k < hi; k++) {
            int u = desc ? g->succ[k] : g->pred[k];
            const uint64_t *bu = scratch + (size_t)u * W;
            for (int w = 0; w < W; w++)
                bv[w] |= bu[w];
            if (p->group_of[u] == grp)
                bv[midx[u] >> 6] |= 1ULL << (midx[u] & 63);
        }
        if (p->group_of[v] == grp)
            memcpy(rows + (size_t)midx[v] * W, bv, (size_t)W * sizeof *bv);
    }
}

/* The least makespan on one machine of the members of og whose bit is set
 * in row, each released at its key (head or tail): in og->sorted order,
 * ascending key. */
static double om_makespan(const om_group *og, const uint64_t *row, const int *members,
                          const double *key, const double *pt)
{
    double c = 0;
    for (int s = 0; s < og->ns; s++) {
        int j = og->sorted[s];
        if (!(row[j >> 6] >> (j & 63) & 1))
            continue;
        int u = members[j];
        c = (c > key[u] ? c : key[u]) + pt[u];
    }
    return c;
}

static void om_insert(om_group *og, const int *members, const double *key, int j)
{
    int s = og->ns++;
    while (s > 0 && key[members[og->sorted[s - 1]]] > key[members[j]]) {
        og->sorted[s] = og->sorted[s - 1];
        s--;
    }
    og->sorted[s] = j;
}

typedef struct jps_job {
    double r, p, q;
} jps_job;

static int cmp_release(const void *a, const void *b)
{
    double x = ((const jps_job *)a)->r, y = ((const jps_job *)b)->r;
    return (x > y) - (x < y);
}

/* Jackson's preemptive schedule: max over jobs of completion + q, with the
 * available job of largest q always running (a min-heap on -q; h is
 * reserved for k entries, so no push allocates).  Sorts jobs by r. */
static double jps(jps_job *jobs, int k, pheap *h)
{
    qsort(jobs, (size_t)k, sizeof *jobs, cmp_release);
    int next = 0;
    double t = 0, best = 0;
    h->n = 0;
    while (next < k || h->n > 0) {
        if (h->n == 0 && t < jobs[next].r)
            t = jobs[next].r;
        for (; next < k && jobs[next].r <= t; next++)
            (void)pheap_push(h, -jobs[next].q, 0, next, NULL);
        jps_job *j = &jobs[h->a[0].id];
        double until = next < k ? jobs[next].r : INFINITY;
        if (t + j->p <= until) { /* j completes */
            t += j->p;
            if (t + j->q > best)
                best = t + j->q;
            pheap_pop(h);
        } else { /* preempted at the next release */
            j->p -= until - t;
            t = until;
        }
    }
    return best;
}

static int by_size_desc(const void *x, const void *y, const void *ctx)
{
    const op_problem *p = ctx;
    int a = *(const int *)x, b = *(const int *)y;
    int ka = p->group_off[a + 1] - p->group_off[a], kb = p->group_off[b + 1] - p->group_off[b];
    return ka != kb ? (ka < kb) - (ka > kb) : (a > b) - (a < b);
}

/*
 * The transfer variant: at a join v (two or more inputs), each input u
 * either runs on v's device, where the local inputs run one at a time
 * (released at their heads), or sends its tensor: v starts no earlier
 * than f_u + the least transfer of that edge's bytes (latency + bytes x
 * us/byte at the cluster's smallest of each; a transfer carries at least
 * the edge's bytes, formats.md 5.3, and queues only add).  So
 *   head(v) >= min over the local set L of max(makespan(L), max_{u not in L} r_u),
 * r_u = head(u) + time(u) + transfer(u, v); the best L for a size is the
 * inputs of largest r_u, so only those prefixes are tried (inputs in v's
 * group are always local).  Tails the same over the outputs.
 */
typedef struct join_scratch {
    double lat, upb;   /* the least latency and us/byte over the device pairs */
    int *ix;           /* the join's inputs */
    double *r;
    jps_job *jobs;
    int *mark, stamp;  /* per op: seen at this join (duplicate edges) */
} join_scratch;

/* Ties keep the inputs' order (op_sort is stable). */
static int by_r_desc(const void *x, const void *y, const void *ctx)
{
    const double *r = ctx;
    double a = r[*(const int *)x], b = r[*(const int *)y];
    return (a < b) - (a > b);
}

/* The makespan of jobs[0..m) on one machine (release r, time p): exact. */
static double one_machine_makespan(jps_job *jobs, int m)
{
    qsort(jobs, (size_t)m, sizeof *jobs, cmp_release);
    double c = 0;
    for (int i = 0; i < m; i++)
        c = (c > jobs[i].r ? c : jobs[i].r) + jobs[i].p;
    return c;
}

#define JOIN_EXACT 32 /* prefixes up to this size get the exact makespan */

/* The bound above for v (tails when rev); -1 when out of memory. */
static double join_bound(const op_problem *p, const double *pt, const double *key, int v, int rev,
                         join_scratch *js)
{
    const op_graph *g = p->g;
    int lo = rev ? g->succ_off[v] : g->pred_off[v];
    int hi = rev ? g->succ_off[v + 1] : g->pred_off[v + 1];
    int m = 0, grp = p->group_of[v];
    js->stamp++;
    for (int k = lo; k < hi; k++) {
        int u = rev ? g->succ[k] : g->pred[k];
        int64_t bytes = g->edge_bytes[rev ? g->succ_edge[k] : g->pred_edge[k]];
        double r = key[u] + pt[u] + js->lat + js->upb * (double)bytes;
        if (grp != OP_NONE && p->group_of[u] == grp)
            r = INFINITY; /* on v's device */
        if (js->mark[u] == js->stamp) { /* a second edge u -> v: the larger transfer */
            for (int i = 0; i < m; i++)
                if (js->ix[i] == u && r > js->r[u])
                    js->r[u] = r;
            continue;
        }
        js->mark[u] = js->stamp;
        js->r[u] = r;
        js->ix[m++] = u;
    }
    op_sort(js->ix, (size_t)m, sizeof *js->ix, by_r_desc, js->r);
    /* L = the first j inputs: max(makespan, r of the (j+1)-th) */
    double best = INFINITY, minhead = INFINITY, sum = 0, maxfin = 0;
    for (int j = 0; j <= m; j++) {
        double rest = j < m ? js->r[js->ix[j]] : 0, mk;
        if (j <= JOIN_EXACT) {
            for (int i = 0; i < j; i++) {
                int u = js->ix[i];
                js->jobs[i] = (jps_job){key[u], pt[u], 0};
            }
            mk = one_machine_makespan(js->jobs, j);
        } else { /* a bound on the makespan: max(latest finish, first release + work) */
            mk = maxfin > minhead + sum ? maxfin : minhead + sum;
        }
        double val = mk > rest ? mk : rest;
        if (val < best)
            best = val;
        if (j < m) {
            int u = js->ix[j];
            minhead = key[u] < minhead ? key[u] : minhead;
            sum += pt[u];
            maxfin = key[u] + pt[u] > maxfin ? key[u] + pt[u] : maxfin;
        }
        if (rest <= mk) /* larger sets only add work */
            break;
    }
    return best;
}

/* One variant of the passes (comm 0: one-machine; 1: with the transfer
 * rule): heads, tails, then the longest head + time + tail and Jackson's
 * bound per group on its best device.  Returns the bound, -1 when out of
 * memory. */
static double om_passes(const op_problem *p, const double *pt, om_group *og, const int *midx,
                        double *head, double *tail, int comm, jps_job *jobs, pheap *heap,
                        join_scratch *js)
{
    const op_graph *g = p->g;
    int n = p->n, ng = p->n_groups;
    double best = 0;
    for (int pass = 0; pass < 2; pass++) { /* 0: heads, 1: tails */
        double *key = pass ? tail : head;
        for (int grp = 0; grp < ng; grp++)
            og[grp].ns = 0;
        for (int t = 0; t < n; t++) {
            int v = g->topo[pass ? n - 1 - t : t];
            double x = 0;
            int lo = pass ? g->succ_off[v] : g->pred_off[v];
            int hi = pass ? g->succ_off[v + 1] : g->pred_off[v + 1];
            for (int k = lo; k < hi; k++) {
                int u = pass ? g->succ[k] : g->pred[k];
                if (key[u] + pt[u] > x)
                    x = key[u] + pt[u];
            }
            if (comm && hi - lo > 1) {
                double y = join_bound(p, pt, key, v, pass, js);
                if (y > x)
                    x = y;
            }
            int grp = p->group_of[v];
            if (grp != OP_NONE && og[grp].k) {
                om_group *o = &og[grp];
                const int *members = p->group_ops + p->group_off[grp];
                const uint64_t *row = (pass ? o->desc : o->anc) + (size_t)midx[v] * o->words;
                double c = om_makespan(o, row, members, key, pt);
                if (c > x)
                    x = c;
                key[v] = x;
                om_insert(o, members, key, midx[v]);
            } else {
                key[v] = x;
            }
        }
    }
    for (int v = 0; v < n; v++)
        if (head[v] + pt[v] + tail[v] > best)
            best = head[v] + pt[v] + tail[v];
    for (int grp = 0; grp < ng; grp++) {
        int k = p->group_off[grp + 1] - p->group_off[grp];
        if (k < 2)
            continue;
        const int *members = p->group_ops + p->group_off[grp];
        double grp_best = INFINITY; /* the least over the group's devices */
        for (int d = 0; d < p->nd; d++) {
            if (!p->group_ok[(size_t)grp * p->nd + d])
                continue;
            int ok = 1;
            for (int j = 0; j < k && ok; j++) {
                int u = members[j];
                ok = op_eligible(p, u, d);
                jobs[j] = (jps_job){head[u], op_exec_us(p, u, d), tail[u]};
            }
            if (!ok)
                continue;
            double b = jps(jobs, k, heap);
            if (b < grp_best)
                grp_best = b;
        }
        if (grp_best < INFINITY && grp_best > best)
            best = grp_best;
    }
    return best;
}

/* The one-machine (variant 0) and transfer (variant 1) bounds into out[];
 * head[c]/tail[c] receive variant c's heads and tails (pt: each op's
 * fastest allowed time).  Returns 0, or an error when out of memory. */
static int one_machine(const op_problem *p, const double *pt, double *head[2], double *tail[2],
                       double out[2], op_error *err)
{
    const op_graph *g = p->g;
    int n = p->n, ng = p->n_groups, fail = 0;
    om_group *og = calloc((size_t)ng + 1, sizeof *og);
    int *midx = malloc(((size_t)n + 1) * sizeof *midx);
    uint64_t *scratch = NULL;
    jps_job *jobs = malloc(((size_t)n + 1) * sizeof *jobs);
    int *order = malloc(((size_t)ng + 1) * sizeof *order); /* groups, largest first */
    pheap heap = {0};
    join_scratch js = {.ix = malloc(((size_t)n + 1) * sizeof(int)),
                       .r = malloc(((size_t)n + 1) * sizeof(double)),
                       .jobs = malloc((JOIN_EXACT + 1) * sizeof(jps_job)),
                       .mark = calloc((size_t)n + 1, sizeof(int))};
    out[0] = out[1] = 0;
    if (!og || !midx || !jobs || !order || !js.ix || !js.r || !js.jobs || !js.mark ||
        op_reserve((void **)&heap.a, sizeof *heap.a, &heap.cap, (size_t)n + 1, err))
        goto oom;
    js.lat = js.upb = INFINITY; /* the least over ordered pairs s != d */
    for (int s1 = 0; s1 < p->nd; s1++)
        for (int d = 0; d < p->nd; d++)
            if (s1 != d) {
                op_link_model lm = op_cluster_link_model(p->c, s1, d);
                js.lat = lm.latency_us < js.lat ? lm.latency_us : js.lat;
                js.upb = lm.us_per_byte < js.upb ? lm.us_per_byte : js.upb;
            }
    for (int i = 0; i < n; i++)
        midx[i] = -1; /* an op's index among its group's members */
    long long bits = 0, work = 0, pass = 2LL * (n + g->n_edges);
    int max_words = 0;
    for (int grp = 0; grp < ng; grp++) {
        int k = p->group_off[grp + 1] - p->group_off[grp];
        for (int j = 0; j < k; j++)
            midx[p->group_ops[p->group_off[grp] + j]] = j;
        order[grp] = grp;
    }
    op_sort(order, (size_t)ng, sizeof *order, by_size_desc, p);
    for (int r = 0; r < ng; r++) {
        int grp = order[r], k = p->group_off[grp + 1] - p->group_off[grp];
        int W = (k + 63) / 64;
        if (k < 2 || k > ONE_MACHINE_MAX_GROUP || (long long)n * W > ONE_MACHINE_MAX_SCRATCH ||
            bits + 2LL * k * W * 64 > ONE_MACHINE_MAX_BITS ||
            work + pass * W > ONE_MACHINE_MAX_WORK)
            continue;
        bits += 2LL * k * W * 64;
        work += pass * W;
        og[grp].k = k;
        og[grp].words = W;
        if (W > max_words)
            max_words = W;
    }
    if (max_words) {
        scratch = malloc((size_t)n * max_words * sizeof *scratch);
        if (!scratch)
            goto oom;
    }
    for (int grp = 0; grp < ng; grp++) {
        om_group *o = &og[grp];
        if (!o->k)
            continue;
        o->anc = malloc((size_t)o->k * o->words * sizeof *o->anc);
        o->desc = malloc((size_t)o->k * o->words * sizeof *o->desc);
        o->sorted = malloc((size_t)o->k * sizeof *o->sorted);
        if (!o->anc || !o->desc || !o->sorted)
            goto oom;
        om_rows(p, midx, grp, o, 0, scratch);
        om_rows(p, midx, grp, o, 1, scratch);
    }
    free(scratch);
    scratch = NULL;
    for (int c = 0; c < 2; c++) /* one device: no transfer, variant 1 is variant 0 */
        out[c] = c == 1 && (p->nd < 2 || js.lat == INFINITY)
                     ? out[0]
                     : om_passes(p, pt, og, midx, head[c], tail[c], c, jobs, &heap, &js);
    if (p->nd < 2 || js.lat == INFINITY) {
        memcpy(head[1], head[0], (size_t)n * sizeof *head[1]);
        memcpy(tail[1], tail[0], (size_t)n * sizeof *tail[1]);
    }
    goto done;
oom:
    fail = op_fail(err, OP_ENOMEM, "bound: out of memory");
done:
    if (og)
        for (int grp = 0; grp < ng; grp++) {
            free(og[grp].anc);
            free(og[grp].desc);
            free(og[grp].sorted);
        }
    free(og);
    free(midx);
    free(scratch);
    free(jobs);
    free(order);
    pheap_free(&heap);
    free(js.ix);
    free(js.r);
    free(js.jobs);
    free(js.mark);
    return fail;
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
            int ok = op_allowed(p, i, d);
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

/* The ILP on the whole graph with no memory rows and every transfer pair
 * (a cap would only weaken the bound); *bound: what CBC proved (0: nothing),
 * r keeps its schedule for pesto_ilp_exact. */
static op_status ilp_solve(const op_problem *p, double deadline, pesto_ilp_result *r,
                           double *bound, op_error *err)
{
    pesto_ilp_opts o;
    pesto_ilp_default_opts(&o);
    o.memory_cap = 0;
    o.balance = -1;
    o.max_xfer_pairs = 0;
    o.max_binaries = 0;
    o.time_limit_s = 0;
    o.deadline = deadline;
    *bound = 0;
    op_status st = pesto_ilp_solve(p, &o, NULL, NULL, NULL, r, err);
    if (st)
        return st;
    if (r->status != PESTO_INFEASIBLE && !r->stopped) {
        /* every schedule of at most H is in the model; longer ones exceed H.
         * Without a schedule, a bound at or past H is CBC's "nothing proved
         * yet" (its best possible stays huge until the root LP is solved):
         * taking H then claimed a bound above the optimum on a 60-op graph
         * whose solve CBC's time limit cut short. */
        double b = r->bound;
        if (r->status == PESTO_NO_SOLUTION && b >= r->horizon)
            b = 0;
        else if (b > r->horizon)
            b = r->horizon;
        *bound = b > 0 ? b * (1 - 1e-7) : 0;
    }
    return OP_OK;
}

static op_status ilp_bound(const op_problem *p, double deadline, double *out, op_error *err)
{
    pesto_ilp_result r;
    op_status st = ilp_solve(p, deadline, &r, out, err);
    if (!st)
        pesto_ilp_result_destroy(&r);
    return st;
}

op_status pesto_ilp_exact(const op_problem *p, double seconds, op_placement *out, int *found,
                          double *bound, op_error *err)
{
    *found = 0;
    *bound = 0;
    if (p->n > OP_EXACT_MAX_OPS || op_interrupted())
        return OP_OK;
    pesto_ilp_result r;
    op_status st = ilp_solve(p, op_seconds_now() + seconds, &r, bound, err);
    if (st)
        return st;
    if (r.status == PESTO_OPTIMAL || r.status == PESTO_FEASIBLE) {
        st = pesto_ilp_to_placement(p, &r, out, err);
        *found = !st;
    }
    pesto_ilp_result_destroy(&r);
    return st;
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
    int n = p->n, fail = 0;
    double *pt = malloc(((size_t)n + 1) * sizeof *pt);
    double *buf = malloc(((size_t)4 * n + 1) * sizeof *buf);
    if (!pt || !buf) {
        fail = op_fail(err, OP_ENOMEM, "bound: out of memory");
        goto done;
    }
    double *head[2] = {buf, buf + n}, *tail[2] = {buf + 2 * (size_t)n, buf + 3 * (size_t)n};
    for (int i = 0; i < n; i++) { /* fastest time on a device the op's group allows */
        pt[i] = OP_INELIGIBLE;
        for (int d = 0; d < p->nd; d++)
            if (op_allowed(p, i, d) && op_exec_us(p, i, d) < pt[i])
                pt[i] = op_exec_us(p, i, d);
        if (pt[i] == OP_INELIGIBLE)
            pt[i] = p->min_exec[i];
    }
    plain_heads_tails(p, pt, head[0], tail[0]);
    b->energetic_us = energetic(p, head[0], tail[0], err, &fail);
    if (fail)
        goto done;
    take(b, b->energetic_us, "energetic");
    double om[2];
    if ((fail = one_machine(p, pt, head, tail, om, err)))
        goto done;
    /* the energetic sets again, over each variant's heads and tails */
    for (int c = 0; c < 2; c++) {
        double e = energetic(p, head[c], tail[c], err, &fail);
        if (fail)
            goto done;
        om[c] = e > om[c] ? e : om[c];
    }
    b->one_machine_us = om[0];
    b->transfer_us = om[1] > om[0] ? om[1] : om[0];
    take(b, b->one_machine_us, "one-machine");
    take(b, b->transfer_us, "transfer");
done:
    free(pt);
    free(buf);
    return (op_status)fail;
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
    if (p->n <= OP_EXACT_MAX_OPS && !op_interrupted() && op_seconds_now() < deadline) {
        if ((st = ilp_bound(p, deadline, &b->ilp_us, err)))
            return st;
        take(b, b->ilp_us, "ilp");
    }
    return OP_OK;
}

op_status op_problem_prove(op_problem *p, double seconds, op_bound *b, op_error *err)
{
    op_bound mine;
    if (!b)
        b = &mine;
    op_status st = p->n <= OP_EXACT_MAX_OPS ? op_lower_bound(p, seconds, b, err)
                                             : op_lower_bound_quick(p, b, err);
    if (!st && b->lower_bound_us > p->proven_bound_us) {
        p->proven_bound_us = b->lower_bound_us;
        p->proven_method = b->method;
    }
    return st;
}

double op_bound_gap(double step_us, double bound_us)
{
    return step_us > 0 ? (step_us - bound_us) / step_us : 0;
}
