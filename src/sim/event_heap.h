/*
 * event_heap.h - the simulator's pending events, earliest first.
 *
 * At most one op runs per device and one transfer per channel, so the heap
 * never holds more than devices + channels live events (with shared compute,
 * stale op-finish events too; the simulator compacts them away).  Ties are broken by kind,
 * then id, so a run is fully deterministic.
 */
#ifndef OPPLACE_EVENT_HEAP_H
#define OPPLACE_EVENT_HEAP_H

/* EV_COMPUTE_BEGIN: a shared-compute device's op ends its dispatch and
 * starts computing (formats.md 5.7, 5.8).  EV_HOST_DONE: a device has sent
 * what its op produced and takes its next op (5.9; id = the device). */
typedef enum {
    EV_OP_FINISH = 0,
    EV_TRANSFER_DONE = 1,
    EV_COMPUTE_BEGIN = 2,
    EV_HOST_DONE = 3
} ev_kind;

typedef struct sim_event {
    double t;
    int kind;
    int id; /* op index or transfer index */
} sim_event;

typedef struct event_heap {
    sim_event *a;
    int n;
} event_heap;

static inline int ev_before(const sim_event *x, const sim_event *y)
{
    if (x->t != y->t)
        return x->t < y->t;
    if (x->kind != y->kind)
        return x->kind < y->kind;
    return x->id < y->id;
}

static inline void ev_push(event_heap *h, sim_event e)
{
    int i = h->n++;
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (!ev_before(&e, &h->a[parent]))
            break;
        h->a[i] = h->a[parent];
        i = parent;
    }
    h->a[i] = e;
}

static inline sim_event ev_pop(event_heap *h)
{
    sim_event top = h->a[0], last = h->a[--h->n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && ev_before(&h->a[c + 1], &h->a[c]))
            c++;
        if (!ev_before(&h->a[c], &last))
            break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n > 0)
        h->a[i] = last;
    return top;
}

#endif
