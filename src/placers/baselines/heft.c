/*
 * heft.c - Heterogeneous Earliest Finish Time (Topcuoglu, Hariri, Wu, IEEE
 * TPDS 2002), the list scheduler Celeritas section 2 cites with b-level
 * priority and insertion; made memory-aware like Baechi's heuristics.
 *
 * 1. Priority: upward rank, rank(v) = mean execution time of v over the
 *    devices it may use + max over successors s of (mean transfer time of
 *    the edge over all ordered device pairs + rank(s)).  Ops are taken in
 *    decreasing rank (ties by topological position), which is a
 *    topological order.
 * 2. Device choice: the device giving the earliest finish time, where the
 *    op may be inserted into an idle gap of the device's timeline between
 *    ops already scheduled (insertion-based policy), among the devices that
 *    still have memory for it (placer_mem.h's liveness estimate, with the
 *    rank order as its timeline of slots).
 * 3. Colocation: a group goes where its first member goes; pins and kinds
 *    through op eligibility.  Nothing fits by the estimate: the device
 *    with the most free memory, and the simulator decides
 *    (pmem_place_checked: OP_EINFEASIBLE only if it overflows there too).
 *
 * Each device's idle gaps live in a treap keyed by gap start and augmented
 * with the longest gap of each subtree, so "first gap after the ready time
 * long enough for this op" takes O(log n): a 36,000-op graph is placed in
 * a fraction of a second, never by scanning the timeline.
 *
 * Communication (a deliberate difference from the paper, whose estimate
 * lets every transfer run at once): as the contract simulator sends them
 * (formats.md 5.3-5.4), a tensor goes once to each device, queued on the
 * (source, destination) channel behind the transfers HEFT planned there
 * before (a channel's plan only grows at its end, although HEFT visits ops
 * out of time order).  Without it HEFT sent a CNN's activations to idle
 * devices one by one, each transfer looking free, and ran ResNet-50 7x
 * slower than one GPU.
 *
 * Output: the placement and HEFT's schedule as the per-device order (ops by
 * planned start), unless `--order none`.  The simulator judges, and checks
 * memory (pmem_place_checked: when it runs out of memory, HEFT runs again
 * with a tighter margin).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/run_ctx.h"
#include "core/problem_util.h"
#include "core/sort.h"
#include "placers/baselines/etf_engine.h"
#include "placers/placer_mem.h"
#include "placers/baselines/baselines.h"
#include "placers/placer_util.h"

/* ---------------------------------------------------------------- gaps */

typedef struct gap_pool {
    double *s, *e, *maxlen;
    int *left, *right;
    unsigned *prio;
    int n, cap;
    unsigned rng;
} gap_pool;

static double gap_len(const gap_pool *g, int t)
{
    return g->e[t] - g->s[t];
}

static void gap_update(gap_pool *g, int t)
{
    double m = gap_len(g, t);
    if (g->left[t] >= 0 && g->maxlen[g->left[t]] > m)
        m = g->maxlen[g->left[t]];
    if (g->right[t] >= 0 && g->maxlen[g->right[t]] > m)
        m = g->maxlen[g->right[t]];
    g->maxlen[t] = m;
}

static int gap_new(gap_pool *g, double s, double e)
{
    int t = g->n++;
    g->s[t] = s;
    g->e[t] = e;
    g->left[t] = g->right[t] = -1;
    g->rng ^= g->rng << 13;
    g->rng ^= g->rng >> 17;
    g->rng ^= g->rng << 5;
    g->prio[t] = g->rng;
    g->maxlen[t] = e - s;
    return t;
}

static int gap_merge(gap_pool *g, int a, int b)
{
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    if (g->prio[a] > g->prio[b]) {
        g->right[a] = gap_merge(g, g->right[a], b);
        gap_update(g, a);
        return a;
    }
    g->left[b] = gap_merge(g, a, g->left[b]);
    gap_update(g, b);
    return b;
}

/* Split t into keys < key (*l) and keys >= key (*r). */
static void gap_split(gap_pool *g, int t, double key, int *l, int *r)
{
    if (t < 0) {
        *l = *r = -1;
        return;
    }
    if (g->s[t] < key) {
        gap_split(g, g->right[t], key, &g->right[t], r);
        *l = t;
    } else {
        gap_split(g, g->left[t], key, l, &g->left[t]);
        *r = t;
    }
    gap_update(g, t);
}

/* The gap with the largest start <= x, or -1. */
static int gap_floor(const gap_pool *g, int t, double x)
{
    int best = -1;
    while (t >= 0) {
        if (g->s[t] <= x) {
            best = t;
            t = g->right[t];
        } else {
            t = g->left[t];
        }
    }
    return best;
}

/* The first gap (by start) with start > x and length >= w, or -1. */
static int gap_first_fit(const gap_pool *g, int t, double x, double w)
{
    if (t < 0 || g->maxlen[t] < w)
        return -1;
    if (g->s[t] <= x)
        return gap_first_fit(g, g->right[t], x, w);
    int r = gap_first_fit(g, g->left[t], x, w);
    if (r >= 0)
        return r;
    if (gap_len(g, t) >= w)
        return t;
    return gap_first_fit(g, g->right[t], x, w);
}

/* Earliest start >= ready for an op of length w; *gap gets the gap used. */
static double gap_earliest(const gap_pool *g, int root, double ready, double w, int *gap)
{
    int f = gap_floor(g, root, ready);
    if (f >= 0 && ready + w <= g->e[f]) {
        *gap = f;
        return ready;
    }
    *gap = gap_first_fit(g, root, ready, w);
    return g->s[*gap]; /* the last gap is infinite, so one always fits */
}

/* Occupy [t, t+w) of gap `gap` (whose start is key). */
static int gap_occupy(gap_pool *g, int root, int gap, double t, double w)
{
    double s = g->s[gap], e = g->e[gap];
    int l, mid, r, dummy;
    gap_split(g, root, s, &l, &mid);
    /* mid starts with the gap itself (starts are unique): drop it */
    gap_split(g, mid, nextafter(s, INFINITY), &dummy, &r);
    if (t > s)
        l = gap_merge(g, l, gap_new(g, s, t));
    if (e > t + w)
        l = gap_merge(g, l, gap_new(g, t + w, e));
    return gap_merge(g, l, r);
}

/* ---------------------------------------------------------------- HEFT */

typedef struct heft_state {
    const op_problem *p;
    int n, nd;
    double *rank, *start, *finish;
    int *order, *device_of, *group_device, *root;
    int fits;
    gap_pool gaps;
    pmem mem;
    double *chan;     /* nd x nd: each ordered pair's channel is busy until */
    double *cached;   /* n x nd: arrival of u's tensor on d, or -1 */
    double *scratch;  /* nd: ready_time's copy of the channels into d */
    int *stamp, cur;  /* nd: scratch[src] is valid when stamp[src] == cur */
} heft_state;

/* Upward rank with mean execution and mean communication. */
static void upward_rank(const op_problem *p, double *rank)
{
    const op_graph *g = p->g;
    const op_cluster *c = p->c;
    op_link_model mean_link = op_cluster_mean_link(c);
    double lat = mean_link.latency_us, upb = mean_link.us_per_byte;
    int pairs = p->nd > 1;
    for (int t = p->n - 1; t >= 0; t--) {
        int v = g->topo[t];
        double mean = 0;
        int k = 0;
        for (int d = 0; d < p->nd; d++)
            if (op_eligible(p, v, d)) {
                mean += op_exec_us(p, v, d);
                k++;
            }
        double tail = 0;
        for (int e = g->succ_off[v]; e < g->succ_off[v + 1]; e++) {
            double x = rank[g->succ[e]] + (pairs ? lat + upb * (double)g->edge_bytes[g->succ_edge[e]]
                                                 : 0);
            if (x > tail)
                tail = x;
        }
        rank[v] = mean / k + tail;
    }
}

static int by_rank_desc(const void *a, const void *b, const void *ctx)
{
    int x = *(const int *)a, y = *(const int *)b;
    const heft_state *s = ctx;
    if (s->rank[x] != s->rank[y])
        return s->rank[x] > s->rank[y] ? -1 : 1;
    return s->p->g->topo_pos[x] - s->p->g->topo_pos[y];
}

static int by_start(const void *a, const void *b, const void *ctx)
{
    int x = *(const int *)a, y = *(const int *)b;
    const heft_state *s = ctx;
    if (s->start[x] != s->start[y])
        return s->start[x] < s->start[y] ? -1 : 1;
    return s->p->g->topo_pos[x] - s->p->g->topo_pos[y];
}

/* Data arrival of v on d: each remote tensor not yet on d is sent once,
 * queued on its (source, d) channel behind the transfers already planned
 * there (formats.md 5.3-5.4); commit != 0 books them. */
static double ready_time(heft_state *s, int v, int d, int commit)
{
    const op_graph *g = s->p->g;
    double t = 0;
    s->cur++;
    for (int k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
        int u = g->pred[k], du = s->device_of[u];
        double a = s->finish[u];
        if (du != d) {
            double *c = &s->cached[(size_t)u * s->nd + d];
            if (*c >= 0) {
                a = *c;
            } else {
                double *ch = commit ? &s->chan[(size_t)du * s->nd + d] : &s->scratch[du];
                if (!commit && s->stamp[du] != s->cur) {
                    s->stamp[du] = s->cur;
                    *ch = s->chan[(size_t)du * s->nd + d];
                }
                a = (a > *ch ? a : *ch) +
                    op_cluster_transfer_us(s->p->c, du, d, g->edge_bytes[g->pred_edge[k]]);
                *ch = a;
                if (commit)
                    *c = a;
            }
        }
        if (a > t)
            t = a;
    }
    return t;
}

static op_status heft_init(heft_state *s, const op_problem *p, op_error *err)
{
    memset(s, 0, sizeof *s);
    s->p = p;
    s->n = p->n;
    s->nd = p->nd;
    size_t n = (size_t)p->n, nd = (size_t)p->nd, cap = 2 * n + 2 * nd + 4;
    s->rank = op_malloc(n * sizeof(double) + 1, err);
    s->start = op_malloc(n * sizeof(double) + 1, err);
    s->finish = op_malloc(n * sizeof(double) + 1, err);
    s->order = op_malloc(n * sizeof(int) + 1, err);
    s->device_of = op_malloc(n * sizeof(int) + 1, err);
    s->group_device = op_malloc((size_t)p->n_groups * sizeof(int) + 1, err);
    s->root = op_malloc(nd * sizeof(int), err);
    s->chan = op_calloc(nd * nd, sizeof(double), err);
    s->cached = op_malloc(n * nd * sizeof(double) + 1, err);
    s->scratch = op_calloc(nd, sizeof(double), err);
    s->stamp = op_calloc(nd, sizeof(int), err);
    gap_pool *g = &s->gaps;
    g->s = op_malloc(cap * sizeof(double), err);
    g->e = op_malloc(cap * sizeof(double), err);
    g->maxlen = op_malloc(cap * sizeof(double), err);
    g->left = op_malloc(cap * sizeof(int), err);
    g->right = op_malloc(cap * sizeof(int), err);
    g->prio = op_malloc(cap * sizeof(unsigned), err);
    g->cap = (int)cap;
    g->rng = 2463534242u;
    if (!s->rank || !s->start || !s->finish || !s->order || !s->device_of ||
        !s->group_device || !s->root || !s->chan || !s->cached || !s->scratch || !s->stamp ||
        !g->s || !g->e || !g->maxlen || !g->left ||
        !g->right || !g->prio)
        return OP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        s->device_of[i] = -1;
        s->order[i] = (int)i;
    }
    for (size_t i = 0; i < n * nd; i++)
        s->cached[i] = -1;
    s->fits = 1;
    for (int k = 0; k < p->n_groups; k++)
        s->group_device[k] = -1;
    for (size_t d = 0; d < nd; d++)
        s->root[d] = gap_new(g, 0, INFINITY);
    return OP_OK;
}

static void heft_destroy(heft_state *s)
{
    free(s->rank);
    free(s->start);
    free(s->finish);
    free(s->order);
    free(s->device_of);
    free(s->group_device);
    free(s->root);
    free(s->chan);
    free(s->cached);
    free(s->scratch);
    free(s->stamp);
    free(s->gaps.s);
    free(s->gaps.e);
    free(s->gaps.maxlen);
    free(s->gaps.left);
    free(s->gaps.right);
    free(s->gaps.prio);
    pmem_destroy(&s->mem);
}

/* Place one op: earliest finish over the devices with memory for it. */
static op_status heft_place_op(heft_state *s, int v, op_error *err)
{
    int best = -1, best_gap = -1;
    double best_start = 0, best_finish = INFINITY;
    for (int d = 0; d < s->nd; d++) {
        if (!placer_allowed(s->p, s->group_device, v, d) ||
            !pmem_fits(&s->mem, v, d, s->device_of))
            continue;
        double w = op_exec_us(s->p, v, d), gap_t;
        int gap;
        gap_t = gap_earliest(&s->gaps, s->root[d], ready_time(s, v, d, 0), w, &gap);
        if (gap_t + w < best_finish) {
            best = d;
            best_gap = gap;
            best_start = gap_t;
            best_finish = gap_t + w;
        }
    }
    if (best < 0) {
        if (s->fits) /* the first refusal, for the message if the simulator agrees */
            op_fail(err, OP_EINFEASIBLE, "heft: op '%s' fits in the memory of no device by the "
                    "liveness estimate (placer_mem.h)", s->p->g->op_name[v]);
        s->fits = 0;
        for (int d = 0; d < s->nd; d++)
            if (placer_allowed(s->p, s->group_device, v, d) &&
                (best < 0 || pmem_room(&s->mem, d) > pmem_room(&s->mem, best)))
                best = d;
    }
    { /* book the transfers; queued behind others, they may arrive later */
        double w = op_exec_us(s->p, v, best);
        best_start = gap_earliest(&s->gaps, s->root[best], ready_time(s, v, best, 1), w, &best_gap);
        best_finish = best_start + w;
    }
    if (best_finish > best_start) /* a zero-time op leaves the timeline as it is */
        s->root[best] = gap_occupy(&s->gaps, s->root[best], best_gap, best_start,
                                   best_finish - best_start);
    pmem_commit(&s->mem, v, best, s->device_of);
    s->device_of[v] = best;
    if (s->p->group_of[v] != OP_NONE)
        s->group_device[s->p->group_of[v]] = best;
    s->start[v] = best_start;
    s->finish[v] = best_finish;
    return OP_OK;
}

/* One HEFT run under the given memory margins. */
static op_status heft_attempt(const op_place_ctx *ctx, void *arg, const double *margin,
                              op_placement *out, int *fits, op_error *err)
{
    int set_order = *(const int *)arg;
    heft_state s;
    op_status st = heft_init(&s, ctx->p, err);
    if (!st) {
        upward_rank(ctx->p, s.rank);
        op_sort(s.order, (size_t)s.n, sizeof(int), by_rank_desc, &s);
        if (pmem_init(&s.mem, ctx->p, s.order, margin, err))
            st = OP_ENOMEM;
        for (int i = 0; i < s.n && !st; i++) {
            if ((i & 4095) == 0 && op_interrupted()) /* 10^5 ops under ASan: seconds */
                st = op_fail(err, OP_EINTERNAL, "heft: stopped at Ctrl-C");
            else
                st = heft_place_op(&s, s.order[i], err);
        }
        *fits = s.fits;
    }
    if (!st) {
        memcpy(out->device_of, s.device_of, (size_t)s.n * sizeof(int));
        if (set_order) {
            op_sort(s.order, (size_t)s.n, sizeof(int), by_start, &s);
            st = op_placement_set_order_from_sequence(out, s.order, err);
        }
    }
    heft_destroy(&s);
    return st;
}

static op_status place_heft(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    int set_order;
    if (placer_read_order_option(ctx, &set_order, err))
        return OP_EUSAGE;
    return pmem_place_checked(ctx, "heft", heft_attempt, &set_order, out, err);
}

/* For tests: the op sequence HEFT processes (decreasing upward rank). */
op_status heft_priority_order(const op_problem *p, int *order, double *rank, op_error *err)
{
    heft_state s = {.p = p, .n = p->n};
    s.rank = rank;
    upward_rank(p, rank);
    for (int i = 0; i < p->n; i++)
        order[i] = i;
    op_sort(order, (size_t)p->n, sizeof(int), by_rank_desc, &s);
    (void)err;
    return OP_OK;
}

const op_placer op_placer_heft = {
    .name = "heft",
    .summary = "HEFT: upward-rank order, earliest finish with gap insertion, within memory",
    .source = "Topcuoglu et al. TPDS 2002; Celeritas section 2",
    .place = place_heft,
};
