/*
 * ready_queue.c - the choice of a device's next op under a memory cap
 * (list_schedule.c's dispatch; without a cap, ready_heap.h's heap alone).
 *
 * With a cap (sim_set_dispatch) a free device starts the first op in that
 * priority order whose output and scratch fit under the cap, or, when none
 * fits, the first of least net_bytes.  While a device's queue is short
 * (RQ_TREE_AT) the heap answers by popping ops until one fits.  Longer, its
 * ops move to a treap in priority order whose nodes keep their subtree's
 * least start_bytes and least net_bytes, which answers in O(log n) where
 * popping was O(n) a pick (one op with 10^5 inputs: seconds a run); it
 * stays there to the end of the run.  An op's net_bytes changes when it
 * becomes the last holder of an input; such ops, and each op as it joins a
 * treap, are marked stale (sim_rq_sole_holder_*) and their net recomputed
 * before the next pick that needs it (one where no op fits).  Which op a
 * pick returns depends on the set of ready ops alone, whatever holds them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/ready_heap.h"
#include "sim/sim_internal.h"

/* A queue longer than this moves to the treap (the heap's popping costs up
 * to this many pops a pick; the treap, a slower insert). */
#define RQ_TREE_AT 1024

/* ---- a cap: the first op that fits, else the least net_bytes ---------- */

/* What starting op would add to its device once it has finished: its
 * output and scratch, less the inputs it is the last holder of. */
static int64_t net_bytes(const run *R, int op)
{
    const op_sim *s = R->s;
    const op_graph *g = s->p->g;
    int d = R->dev[op];
    int64_t net = sim_start_bytes(s, op);
    for (int k = g->pred_off[op]; k < g->pred_off[op + 1]; k++) {
        int u = g->pred[k];
        if (R->dev[u] == d) {
            if (s->out_refs[u] == 1)
                net -= g->output_bytes[u];
        } else {
            const transfer *x = &s->xf[s->xfer_of_edge[g->pred_edge[k]]];
            if (x->refs == 1)
                net -= x->bytes;
        }
    }
    return net;
}

/* d's pick under the cap from its heap: pop until an op fits (d has one). */
static int pick_by_popping(run *R, int d)
{
    op_sim *s = R->s;
    int *held = s->rt.held, n_held = 0, pick = -1;
    while (s->rq_len[d] > 0) {
        int op = rq_heap_pop(s, d);
        if (s->mem[d] + sim_start_bytes(s, op) <= s->pick_cap[d]) {
            pick = op;
            break;
        }
        held[n_held++] = op;
    }
    if (pick < 0) {
        int best = 0;
        int64_t best_net = net_bytes(R, held[0]);
        for (int i = 1; i < n_held; i++) {
            int64_t net = net_bytes(R, held[i]);
            if (net < best_net) {
                best = i;
                best_net = net;
            }
        }
        pick = held[best];
        held[best] = held[--n_held];
    }
    for (int i = 0; i < n_held; i++)
        rq_heap_push(s, d, held[i]);
    return pick;
}

/* A fixed pseudo-random node weight (the treap's heap order). */
static uint32_t weight(int op)
{
    uint32_t x = (uint32_t)op * 2654435761u;
    x ^= x >> 15;
    x *= 2246822519u;
    return x ^ (x >> 13);
}

static void pull(ready_tree *t, int x)
{
    int64_t sb = t->node[x].sb, net = t->node[x].net;
    for (int side = 0; side < 2; side++) {
        int c = t->node[x].kid[side];
        if (c < 0)
            continue;
        if (t->node[c].min_sb < sb)
            sb = t->node[c].min_sb;
        if (t->node[c].min_net < net)
            net = t->node[c].min_net;
    }
    t->node[x].min_sb = sb;
    t->node[x].min_net = net;
}

/* Rotate x's child on side up; returns the new subtree root. */
static int rotate(ready_tree *t, int x, int side)
{
    int c = t->node[x].kid[side];
    t->node[x].kid[side] = t->node[c].kid[!side];
    t->node[c].kid[!side] = x;
    pull(t, x);
    pull(t, c);
    return c;
}

static int tree_insert(op_sim *s, int root, int op)
{
    ready_tree *t = &s->rt;
    if (root < 0) {
        t->node[op].kid[0] = t->node[op].kid[1] = -1;
        pull(t, op);
        return op;
    }
    int side = rq_before(s, root, op);
    t->node[root].kid[side] = tree_insert(s, t->node[root].kid[side], op);
    if (weight(t->node[root].kid[side]) > weight(root))
        return rotate(t, root, side);
    pull(t, root);
    return root;
}

/* Remove op (present) from the subtree at root. */
static int tree_remove(op_sim *s, int root, int op)
{
    ready_tree *t = &s->rt;
    if (root == op) {
        int l = t->node[op].kid[0], r = t->node[op].kid[1];
        if (l < 0 || r < 0)
            return l < 0 ? r : l;
        int side = weight(r) > weight(l);
        int top = rotate(t, op, side);
        t->node[top].kid[!side] = tree_remove(s, op, op);
        pull(t, top);
        return top;
    }
    int side = rq_before(s, root, op);
    t->node[root].kid[side] = tree_remove(s, t->node[root].kid[side], op);
    pull(t, root);
    return root;
}

/* Recompute op's keys (present) and its ancestors' minima. */
static void tree_rekey(op_sim *s, int root, int op, int64_t net)
{
    ready_tree *t = &s->rt;
    if (root == op)
        t->node[op].net = net;
    else
        tree_rekey(s, t->node[root].kid[rq_before(s, root, op)], op, net);
    pull(t, root);
}

/* The first op in priority order with mem + start_bytes <= cap, or -1. */
static int first_fitting(const op_sim *s, int d)
{
    const ready_tree *t = &s->rt;
    int64_t mem = s->mem[d], cap = s->pick_cap[d];
    int x = t->root[d];
    if (x < 0 || mem + t->node[x].min_sb > cap)
        return -1;
    for (;;) {
        int l = t->node[x].kid[0];
        if (l >= 0 && mem + t->node[l].min_sb <= cap)
            x = l;
        else if (mem + t->node[x].sb <= cap)
            return x;
        else
            x = t->node[x].kid[1];
    }
}

/* The first op in priority order of least net_bytes (d has a ready op). */
static int first_least_net(const op_sim *s, int d)
{
    const ready_tree *t = &s->rt;
    int x = t->root[d];
    int64_t least = t->node[x].min_net;
    for (;;) {
        int l = t->node[x].kid[0];
        if (l >= 0 && t->node[l].min_net == least)
            x = l;
        else if (t->node[x].net == least)
            return x;
        else
            x = t->node[x].kid[1];
    }
}

/* Mark op, waiting on device d, stale if d's queue is a treap. */
static void mark_stale(op_sim *s, int d, int op)
{
    if (!s->rt.is_stale[op] && s->rt.on_tree[d]) {
        s->rt.is_stale[op] = 1;
        s->rt.stale[s->rt.n_stale++] = op;
    }
}

static int waiting(const op_sim *s, int op)
{
    return s->pending[op] == 0 && s->start[op] < 0;
}

/* Recompute net_bytes of every waiting op marked stale. */
static void refresh_stale(run *R)
{
    op_sim *s = R->s;
    ready_tree *t = &s->rt;
    for (int i = 0; i < t->n_stale; i++) {
        int op = t->stale[i];
        t->is_stale[op] = 0;
        if (!waiting(s, op) || !t->on_tree[R->dev[op]])
            continue;
        int64_t net = net_bytes(R, op);
        if (net != t->node[op].net)
            tree_rekey(s, t->root[R->dev[op]], op, net);
    }
    t->n_stale = 0;
}

static int pick_from_tree(run *R, int d)
{
    op_sim *s = R->s;
    int op = first_fitting(s, d);
    if (op < 0) {
        refresh_stale(R);
        op = first_least_net(s, d);
    }
    s->rt.root[d] = tree_remove(s, s->rt.root[d], op);
    s->rq_len[d]--;
    return op;
}

/* ---- the interface of sim_internal.h ------------------------------------ */

op_status sim_rq_tree_alloc(op_sim *s, op_error *err)
{
    ready_tree *t = &s->rt;
    size_t n = (size_t)s->n + 1;
    t->root = op_malloc((size_t)s->nd * sizeof *t->root + 1, err);
    t->on_tree = op_calloc((size_t)s->nd + 1, sizeof *t->on_tree, err);
    t->node = op_malloc(n * sizeof *t->node, err);
    t->stale = op_malloc(n * sizeof *t->stale, err);
    t->is_stale = op_calloc(n, sizeof *t->is_stale, err);
    t->held = op_malloc(n * sizeof *t->held, err);
    t->n_stale = t->n_tree = 0;
    if (t->root && t->on_tree && t->node && t->stale && t->is_stale && t->held)
        return OP_OK;
    sim_rq_tree_free(s);
    return OP_ENOMEM;
}

void sim_rq_tree_free(op_sim *s)
{
    ready_tree *t = &s->rt;
    free(t->root); free(t->on_tree); free(t->node); free(t->stale); free(t->is_stale);
    free(t->held);
    memset(t, 0, sizeof *t);
}

void sim_rq_clear(op_sim *s)
{
    for (int d = 0; d < s->nd; d++) {
        s->rq_len[d] = 0;
        if (s->rt.root) {
            s->rt.root[d] = -1;
            s->rt.on_tree[d] = 0;
        }
    }
    s->rt.n_tree = 0;
    for (int i = 0; i < s->rt.n_stale; i++)
        s->rt.is_stale[s->rt.stale[i]] = 0;
    s->rt.n_stale = 0;
}

static void tree_push(op_sim *s, int d, int op)
{
    ready_tree *t = &s->rt;
    t->node[op].sb = sim_start_bytes(s, op);
    t->node[op].net = t->node[op].sb; /* until refresh_stale: net_bytes needs a settled state */
    mark_stale(s, d, op);
    t->root[d] = tree_insert(s, t->root[d], op);
    s->rq_len[d]++;
}

/* d's queue grew past RQ_TREE_AT under a cap: its ops move to a treap. */
static void move_to_tree(op_sim *s, int d)
{
    const int *h = s->rq + s->rq_off[d];
    int n = s->rq_len[d];
    s->rq_len[d] = 0;
    s->rt.on_tree[d] = 1;
    s->rt.n_tree++;
    for (int i = 0; i < n; i++)
        tree_push(s, d, h[i]);
}

void sim_rq_push_capped(op_sim *s, int d, int op)
{
    if (s->rt.on_tree[d]) {
        tree_push(s, d, op);
        return;
    }
    rq_heap_push(s, d, op);
    if (s->rq_len[d] > RQ_TREE_AT)
        move_to_tree(s, d);
}

int sim_rq_pick_capped(run *R, int d)
{
    op_sim *s = R->s;
    if (!s->rq_len[d])
        return -1;
    return s->rt.on_tree[d] ? pick_from_tree(R, d) : pick_by_popping(R, d);
}

void sim_rq_sole_holder_of_output(run *R, int u)
{
    op_sim *s = R->s;
    const op_graph *g = s->p->g;
    if (R->pl->has_order)
        return;
    for (int k = g->succ_off[u]; k < g->succ_off[u + 1]; k++) {
        int v = g->succ[k];
        if (R->dev[v] == R->dev[u] && waiting(s, v))
            mark_stale(s, R->dev[v], v);
    }
}

void sim_rq_sole_holder_of_transfer(run *R, int x)
{
    op_sim *s = R->s;
    const op_graph *g = s->p->g;
    const transfer *tr = &s->xf[x];
    if (R->pl->has_order)
        return;
    for (int k = g->succ_off[tr->src]; k < g->succ_off[tr->src + 1]; k++) {
        int v = g->succ[k];
        if (R->dev[v] == tr->dst_dev && waiting(s, v))
            mark_stale(s, R->dev[v], v);
    }
}
