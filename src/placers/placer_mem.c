/*
 * placer_mem.c - the liveness-based memory estimate of the memory-aware
 * baselines, its repair step, and the simulator check (placer_mem.h has
 * the rule).  Levels live in one segment tree per device over the slots
 * (range add, maximum kept at the root), so charging or testing an op
 * costs O((1 + its in-degree) log n).
 */
#include <stdlib.h>
#include <string.h>

#include "opplace/run_ctx.h"
#include "opplace/simulate.h"
#include "placers/placer_mem.h"

/* ------------------------------------------------------- segment trees */

static void tree_add(int64_t *mx, int64_t *ad, int node, int lo, int hi, int l, int r,
                     int64_t x)
{
    if (r < lo || hi < l)
        return;
    if (l <= lo && hi <= r) {
        mx[node] += x;
        ad[node] += x;
        return;
    }
    int mid = lo + (hi - lo) / 2;
    tree_add(mx, ad, 2 * node, lo, mid, l, r, x);
    tree_add(mx, ad, 2 * node + 1, mid + 1, hi, l, r, x);
    mx[node] = (mx[2 * node] > mx[2 * node + 1] ? mx[2 * node] : mx[2 * node + 1]) + ad[node];
}

static void range_add(pmem *m, int d, int l, int r, int64_t x)
{
    if (!x || l > r)
        return;
    size_t base = (size_t)d * 2 * (size_t)m->size;
    tree_add(m->mx + base, m->add + base, 1, 0, m->size - 1, l, r, x);
}

/* The slot where d's level is highest. */
static int peak_slot(const pmem *m, int d)
{
    const int64_t *mx = m->mx + (size_t)d * 2 * (size_t)m->size;
    int node = 1;
    while (node < m->size)
        node = mx[2 * node] >= mx[2 * node + 1] ? 2 * node : 2 * node + 1;
    return node - m->size;
}

int64_t pmem_peak(const pmem *m, int dev)
{
    return m->params[dev] + m->mx[(size_t)dev * 2 * (size_t)m->size + 1];
}

/* ------------------------------------------------------------ set-up */

op_status pmem_init(pmem *m, const op_problem *p, const int *order, const double *margin,
                    op_error *err)
{
    memset(m, 0, sizeof *m);
    m->p = p;
    m->n = p->n;
    m->nd = p->nd;
    m->size = 1;
    while (m->size < p->n)
        m->size *= 2;
    size_t n = (size_t)p->n, nd = (size_t)p->nd, tree = nd * 2 * (size_t)m->size;
    m->cap = op_malloc(nd * sizeof *m->cap, err);
    m->params = op_calloc(nd, sizeof *m->params, err);
    m->mx = op_calloc(tree, sizeof *m->mx, err);
    m->add = op_calloc(tree, sizeof *m->add, err);
    m->order = op_malloc(n * sizeof *m->order + 1, err);
    m->pos = op_malloc(n * sizeof *m->pos + 1, err);
    m->out_dev = op_malloc(n * sizeof *m->out_dev + 1, err);
    m->out_end = op_malloc(n * sizeof *m->out_end + 1, err);
    m->recv_end = op_malloc(n * nd * sizeof *m->recv_end + 1, err);
    m->recv_bytes = op_calloc(n * nd + 1, sizeof *m->recv_bytes, err);
    m->group_charged = op_calloc((size_t)p->n_groups + 1, 1, err);
    if (!m->cap || !m->params || !m->mx || !m->add || !m->order || !m->pos || !m->out_dev ||
        !m->out_end || !m->recv_end || !m->recv_bytes || !m->group_charged) {
        pmem_destroy(m);
        return OP_ENOMEM;
    }
    memcpy(m->order, order ? order : p->g->topo, n * sizeof *m->order);
    for (int t = 0; t < p->n; t++)
        m->pos[m->order[t]] = t;
    for (size_t d = 0; d < nd; d++)
        m->cap[d] = (int64_t)((double)p->c->dev[d].memory_bytes * (margin ? margin[d] : 1.0));
    pmem_reset(m);
    return OP_OK;
}

void pmem_destroy(pmem *m)
{
    free(m->cap);
    free(m->params);
    free(m->mx);
    free(m->add);
    free(m->order);
    free(m->pos);
    free(m->out_dev);
    free(m->out_end);
    free(m->recv_end);
    free(m->recv_bytes);
    free(m->group_charged);
    memset(m, 0, sizeof *m);
}

void pmem_reset(pmem *m)
{
    size_t n = (size_t)m->n, nd = (size_t)m->nd, tree = nd * 2 * (size_t)m->size;
    memset(m->params, 0, nd * sizeof *m->params);
    memset(m->mx, 0, tree * sizeof *m->mx);
    memset(m->add, 0, tree * sizeof *m->add);
    memset(m->recv_bytes, 0, n * nd * sizeof *m->recv_bytes);
    memset(m->group_charged, 0, (size_t)m->p->n_groups);
    for (size_t i = 0; i < n; i++)
        m->out_dev[i] = m->out_end[i] = -1;
    for (size_t i = 0; i < n * nd; i++)
        m->recv_end[i] = -1;
}

/* ------------------------------------------------------------ charges */

/* Device of consumer w while op is being placed on dev. */
static int device_now(const int *device_of, int w, int op, int dev)
{
    return w == op ? dev : device_of[w];
}

/* Last slot of u's output interval on du (placer_mem.h's rule). */
static int output_end(const pmem *m, int u, int du, const int *device_of, int op, int dev)
{
    const op_graph *g = m->p->g;
    int end = m->pos[u];
    for (int k = g->succ_off[u]; k < g->succ_off[u + 1]; k++) {
        int w = g->succ[k], dw = device_now(device_of, w, op, dev);
        int e = dw < 0 || dw == du ? m->pos[w] : m->pos[u] + 1;
        if (e > end)
            end = e;
    }
    return end;
}

static void add_own(pmem *m, int i, int d, int end, int64_t sign)
{
    const op_graph *g = m->p->g;
    m->params[d] += sign * g->param_bytes[i];
    range_add(m, d, m->pos[i], end, sign * g->output_bytes[i]);
    range_add(m, d, m->pos[i], m->pos[i], sign * g->temp_bytes[i]);
}

/* The members whose own footprint placing op charges: itself, its whole
 * group (first member), or none (group already charged). */
static int own_members(const pmem *m, int op, const int **members)
{
    int k = m->p->group_of[op];
    *members = NULL;
    if (k == OP_NONE)
        return 1;
    if (m->group_charged[k])
        return 0;
    *members = m->p->group_ops + m->p->group_off[k];
    return m->p->group_off[k + 1] - m->p->group_off[k];
}

/* Charge on dev the copies of op's input tensors that dev receives: one
 * per producer u, the largest edge bytes, over [pos(u), the latest slot
 * of its consumers on dev].  A producer on dev needs none.  With
 * `reserve` (the other members of a group charged at its first member)
 * a producer not placed yet is charged as if remote, a reservation its
 * own placement on dev gives back (apply); otherwise an unplaced
 * producer cannot occur (ops are placed in topological order) or was
 * reserved already. */
static void receive(pmem *m, int op, int dev, int64_t sign, int commit, int reserve)
{
    const op_graph *g = m->p->g;
    int pv = m->pos[op], grp = m->p->group_of[op];
    for (int k = g->pred_off[op]; k < g->pred_off[op + 1]; k++) {
        int u = g->pred[k], du = m->out_dev[u];
        if (du == dev || (du < 0 && (!reserve || (grp != OP_NONE && m->p->group_of[u] == grp))))
            continue;
        size_t at = (size_t)u * m->nd + dev;
        int64_t b = g->edge_bytes[g->pred_edge[k]], have = m->recv_bytes[at];
        int end = m->recv_end[at], new_end = end > pv ? end : pv;
        if (end < 0) {
            range_add(m, dev, m->pos[u], pv, sign * b);
            have = b;
        } else {
            range_add(m, dev, end + 1, new_end, sign * have);
            if (b > have) {
                range_add(m, dev, m->pos[u], new_end, sign * (b - have));
                have = b;
            }
        }
        if (commit) {
            m->recv_end[at] = new_end;
            m->recv_bytes[at] = have;
        }
    }
}

/* Add (sign +1) or remove (-1) op's charges on dev; commit also records
 * them (received copies, output intervals). */
static void apply(pmem *m, int op, int dev, const int *device_of, int64_t sign, int commit)
{
    const int *members;
    int nm = own_members(m, op, &members);
    for (int j = 0; j < nm; j++) {
        int i = members ? members[j] : op;
        int end = output_end(m, i, dev, device_of, op, dev);
        add_own(m, i, dev, end, sign);
        /* i's tensor was reserved on dev by a consumer's group (receive):
         * its output interval, just charged, replaces the reservation */
        size_t self = (size_t)i * m->nd + dev;
        if (m->out_dev[i] < 0 && m->recv_end[self] >= 0) {
            range_add(m, dev, m->pos[i], m->recv_end[self], -sign * m->recv_bytes[self]);
            if (commit) {
                m->recv_end[self] = -1;
                m->recv_bytes[self] = 0;
            }
        }
        if (commit) {
            m->out_dev[i] = dev;
            m->out_end[i] = end;
        }
    }
    if (commit && members)
        m->group_charged[m->p->group_of[op]] = 1;
    receive(m, op, dev, sign, commit, 0);
    for (int j = 0; members && j < nm; j++)
        if (members[j] != op)
            receive(m, members[j], dev, sign, commit, 1);
}

/* op went to dev: a producer elsewhere whose interval op ended may end
 * earlier now (its transfer completes after it, not at op's slot). */
static void shrink_producers(pmem *m, int op, int dev, const int *device_of)
{
    const op_graph *g = m->p->g;
    for (int k = g->pred_off[op]; k < g->pred_off[op + 1]; k++) {
        int u = g->pred[k], du = m->out_dev[u];
        if (du < 0 || du == dev || m->out_end[u] != m->pos[op])
            continue;
        int end = output_end(m, u, du, device_of, op, dev);
        if (end < m->out_end[u]) {
            range_add(m, du, end + 1, m->out_end[u], -g->output_bytes[u]);
            m->out_end[u] = end;
        }
    }
}

int64_t pmem_need(const pmem *m, int op, int dev, const int *device_of)
{
    const op_graph *g = m->p->g;
    const int *members;
    int nm = own_members(m, op, &members);
    int64_t need = 0;
    for (int j = 0; j < nm; j++) {
        int i = members ? members[j] : op;
        need += g->param_bytes[i] + g->output_bytes[i] + g->temp_bytes[i];
    }
    for (int k = g->pred_off[op]; k < g->pred_off[op + 1]; k++) {
        int u = g->pred[k], du = m->out_dev[u];
        (void)device_of;
        if (du < 0 || du == dev)
            continue;
        int64_t b = g->edge_bytes[g->pred_edge[k]], have = m->recv_bytes[(size_t)u * m->nd + dev];
        if (b > have)
            need += b - have;
    }
    return need;
}

int pmem_fits(pmem *m, int op, int dev, const int *device_of)
{
    apply(m, op, dev, device_of, 1, 0);
    int ok = pmem_peak(m, dev) <= m->cap[dev];
    apply(m, op, dev, device_of, -1, 0);
    return ok;
}

void pmem_commit(pmem *m, int op, int dev, const int *device_of)
{
    apply(m, op, dev, device_of, 1, 1);
    shrink_producers(m, op, dev, device_of);
}

int pmem_charge_all(pmem *m, const int *device_of)
{
    pmem_reset(m);
    for (int t = 0; t < m->n; t++) {
        int v = m->order[t];
        pmem_commit(m, v, device_of[v], device_of);
    }
    for (int d = 0; d < m->nd; d++)
        if (pmem_peak(m, d) > m->cap[d])
            return 0;
    return 1;
}

int pmem_roomiest(const pmem *m, int op, const unsigned char *allowed)
{
    int best = -1;
    for (int d = 0; d < m->nd; d++) {
        if (allowed ? !allowed[d] : !op_eligible(m->p, op, d))
            continue;
        if (best < 0 || pmem_room(m, d) > pmem_room(m, best))
            best = d;
    }
    return best;
}

/* ------------------------------------------------------------ repair */

static const int64_t *sort_weight;

static int by_weight_desc(const void *a, const void *b)
{
    int64_t x = sort_weight[*(const int *)a], y = sort_weight[*(const int *)b];
    if (x != y)
        return x > y ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

static int may_move(const op_problem *p, int i, int e)
{
    int k = p->group_of[i];
    return k == OP_NONE ? op_eligible(p, i, e) : p->group_ok[(size_t)k * p->nd + e];
}

/* Move op i (its whole group) from d to e. */
static void move_op(const op_problem *p, int *device_of, int i, int d, int e)
{
    int k = p->group_of[i];
    if (k == OP_NONE) {
        device_of[i] = e;
        return;
    }
    for (int j = p->group_off[k]; j < p->group_off[k + 1]; j++)
        if (device_of[p->group_ops[j]] == d)
            device_of[p->group_ops[j]] = e;
}

/* Bytes op i (on d) holds at slot t of d's timeline. */
static int64_t held_at(const pmem *m, int i, int t)
{
    const op_graph *g = m->p->g;
    int64_t w = g->param_bytes[i];
    if (m->pos[i] <= t && t <= m->out_end[i])
        w += g->output_bytes[i];
    if (m->pos[i] == t)
        w += g->temp_bytes[i];
    return w;
}

/* One round on device d: returns the number of ops moved. */
static int relieve_device(pmem *m, int *device_of, int d, int64_t *room, int *cand,
                          int64_t *weight)
{
    const op_problem *p = m->p;
    int t = peak_slot(m, d), nc = 0, moved = 0;
    for (int i = 0; i < m->n; i++) {
        weight[i] = 0;
        if (device_of[i] != d)
            continue;
        weight[i] = held_at(m, i, t);
        if (weight[i] > 0)
            cand[nc++] = i;
    }
    sort_weight = weight;
    qsort(cand, (size_t)nc, sizeof *cand, by_weight_desc);
    for (int c = 0; c < nc && room[d] < 0; c++) {
        int i = cand[c], best = -1;
        if (device_of[i] != d)
            continue; /* moved with its group */
        for (int e = 0; e < m->nd; e++)
            if (e != d && may_move(p, i, e) && room[e] >= weight[i] &&
                (best < 0 || room[e] > room[best]))
                best = e;
        if (best < 0)
            continue;
        move_op(p, device_of, i, d, best);
        room[best] -= weight[i];
        room[d] += weight[i];
        moved++;
    }
    return moved;
}

int pmem_repair(pmem *m, int *device_of, int max_rounds, op_error *err)
{
    int *cand = op_malloc((size_t)m->n * sizeof *cand + 1, err);
    int64_t *weight = op_malloc((size_t)m->n * sizeof *weight + 1, err);
    int64_t *room = op_malloc((size_t)m->nd * sizeof *room, err);
    if (!cand || !weight || !room) {
        free(cand);
        free(weight);
        free(room);
        return -1;
    }
    int fits = pmem_charge_all(m, device_of);
    for (int round = 0; round < max_rounds && !fits; round++) {
        int moved = 0;
        for (int d = 0; d < m->nd; d++)
            room[d] = pmem_room(m, d);
        for (int d = 0; d < m->nd; d++)
            if (room[d] < 0)
                moved += relieve_device(m, device_of, d, room, cand, weight);
        if (!moved)
            break;
        fits = pmem_charge_all(m, device_of);
    }
    free(cand);
    free(weight);
    free(room);
    return fits;
}

/* --------------------------------------------------- simulator check */

#define CHECK_ROUNDS 6

static double gib(int64_t b)
{
    return (double)b / (1024.0 * 1024.0 * 1024.0);
}

op_status pmem_place_checked(const op_place_ctx *ctx, const char *name, pmem_place_fn fn,
                             void *arg, op_placement *out, op_error *err)
{
    return pmem_place_checked_sim(ctx, name, fn, arg, out, NULL, NULL, NULL, err);
}

op_status pmem_place_checked_sim(const op_place_ctx *ctx, const char *name, pmem_place_fn fn,
                                 void *arg, op_placement *out, op_sim *with, op_sim_result *res,
                                 int *simulated, op_error *err)
{
    const op_problem *p = ctx->p;
    const op_cluster *c = p->c;
    double *margin = op_malloc((size_t)p->nd * sizeof *margin, err);
    if (!margin)
        return OP_ENOMEM;
    for (int d = 0; d < p->nd; d++)
        margin[d] = 1.0;
    op_sim *sim = with;
    op_sim_result own, *r = with ? res : &own;
    memset(&own, 0, sizeof own);
    op_status st = OP_OK;
    if (with)
        op_sim_set_cutoff(with, 0);
    for (int round = 0;; round++) {
        int fits = 1;
        if (simulated)
            *simulated = 0;
        if ((st = fn(ctx, arg, margin, out, &fits, err)))
            break;
        /* The estimate refused an op, which went to the roomiest device (err
         * says which): the estimate is not a bound, the simulator decides. */
        op_error refusal = {.code = OP_OK};
        if (!fits && err) {
            refusal = *err;
            op_error_clear(err);
        }
        /* Ctrl-C: the check below cannot look at the flag, and one simulator
         * run of 10^5 ops takes most of the second the command has to
         * answer (under ASan).  The placement stands unchecked (*simulated
         * stays 0): the caller's own simulation of it reports any oom. */
        if (op_interrupted()) {
            op_progress(ctx, "%s: stopped at Ctrl-C; the placement is not checked against "
                        "the simulator's memory", name);
            break;
        }
        if (!sim) {
            sim = op_sim_new(p, err);
            if (!sim || op_sim_result_init(&own, p, err)) {
                st = OP_ENOMEM;
                break;
            }
        }
        if ((st = op_sim_run(sim, out, r, NULL, err)))
            break;
        if (simulated)
            *simulated = 1;
        if (!r->oom)
            break;
        int worst = 0;
        for (int d = 0; d < p->nd; d++)
            if ((double)r->peak_mem[d] / (double)c->dev[d].memory_bytes >
                (double)r->peak_mem[worst] / (double)c->dev[worst].memory_bytes)
                worst = d;
        if (!fits) { /* margins cannot help what the estimate already refused */
            if (!ctx->best_effort)
                st = op_fail(err, OP_EINFEASIBLE,
                             "%s; the simulator measures a peak of %.2f GiB on %s (memory "
                             "%.2f GiB) (use --best-effort to place anyway)",
                             refusal.code ? refusal.msg : name, gib(r->peak_mem[worst]),
                             c->dev[worst].name, gib(c->dev[worst].memory_bytes));
            break;
        }
        if (round + 1 == CHECK_ROUNDS) {
            if (ctx->best_effort)
                break;
            st = op_fail(err, OP_EINFEASIBLE,
                         "%s: the simulator measures a peak of %.2f GiB on %s (memory %.2f "
                         "GiB) although the liveness estimate fits it, even after %d "
                         "tighter margins (use --best-effort to place anyway)",
                         name, gib(r->peak_mem[worst]), c->dev[worst].name,
                         gib(c->dev[worst].memory_bytes), CHECK_ROUNDS - 1);
            break;
        }
        for (int d = 0; d < p->nd; d++)
            if (r->peak_mem[d] > c->dev[d].memory_bytes)
                margin[d] *= 0.98 * (double)c->dev[d].memory_bytes / (double)r->peak_mem[d];
        op_progress(ctx, "%s: simulated peak %.2f GiB on %s exceeds its memory; placing again "
                    "with its margin at %.3f", name, gib(r->peak_mem[worst]),
                    c->dev[worst].name, margin[worst]);
    }
    if (!with) {
        if (sim)
            op_sim_result_destroy(&own);
        op_sim_free(sim);
    }
    free(margin);
    return st;
}

