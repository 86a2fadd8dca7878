/*
 * ready_heap.h - each device's ready ops as a binary heap ordered by
 * (ready_at, op), or (prio desc, ready_at, op) when a list scheduler set
 * priorities (simulate.c's rule 2; ready_queue.c under a memory cap).
 * Inline: the simulator's hottest path.
 */
#ifndef OPPLACE_READY_HEAP_H
#define OPPLACE_READY_HEAP_H

#include "sim/sim_internal.h"

static inline int rq_before(const op_sim *s, int a, int b)
{
    if (s->prio && s->prio[a] != s->prio[b])
        return s->prio[a] > s->prio[b];
    if (s->ready_at[a] != s->ready_at[b])
        return s->ready_at[a] < s->ready_at[b];
    return a < b;
}

static inline void rq_heap_push(op_sim *s, int d, int op)
{
    int *h = s->rq + s->rq_off[d];
    int i = s->rq_len[d]++;
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (!rq_before(s, op, h[parent]))
            break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = op;
}

static inline int rq_heap_pop(op_sim *s, int d)
{
    int *h = s->rq + s->rq_off[d];
    int top = h[0], last = h[--s->rq_len[d]], n = s->rq_len[d], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && rq_before(s, h[c + 1], h[c]))
            c++;
        if (!rq_before(s, h[c], last))
            break;
        h[i] = h[c];
        i = c;
    }
    if (n > 0)
        h[i] = last;
    return top;
}

#endif
