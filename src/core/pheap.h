/*
 * pheap.h - a growable binary min-heap of (k1, k2, id) entries,
 * ordered lexicographically, shared by the list schedulers (m-ETF, m-SCT,
 * HEFT).  Deletion is lazy: callers skip stale entries when they pop.
 */
#ifndef OPPLACE_PHEAP_H
#define OPPLACE_PHEAP_H

#include <stdlib.h>

#include "core/alloc_hooks.h"
#include "opplace/error.h"

typedef struct pheap_entry {
    double k1, k2;
    int id;
} pheap_entry;

typedef struct pheap {
    pheap_entry *a;
    size_t n, cap;
} pheap;

static inline int pheap_less(const pheap_entry *x, const pheap_entry *y)
{
    if (x->k1 != y->k1)
        return x->k1 < y->k1;
    if (x->k2 != y->k2)
        return x->k2 < y->k2;
    return x->id < y->id;
}

static inline op_status pheap_push(pheap *h, double k1, double k2, int id, op_error *err)
{
    if (op_reserve((void **)&h->a, sizeof *h->a, &h->cap, h->n + 1, err))
        return OP_ENOMEM;
    pheap_entry e = {k1, k2, id};
    size_t i = h->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!pheap_less(&e, &h->a[parent]))
            break;
        h->a[i] = h->a[parent];
        i = parent;
    }
    h->a[i] = e;
    return OP_OK;
}

static inline void pheap_pop(pheap *h)
{
    pheap_entry last = h->a[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && pheap_less(&h->a[c + 1], &h->a[c]))
            c++;
        if (!pheap_less(&h->a[c], &last))
            break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n > 0)
        h->a[i] = last;
}

static inline void pheap_free(pheap *h)
{
    free(h->a);
    h->a = NULL;
    h->n = h->cap = 0;
}

#endif
