/*
 * sort.c - the stable context sort of sort.h.
 */
#include "core/sort.h"

#include <stdlib.h>
#include <string.h>

enum { SMALL = 8 }; /* runs this short are sorted by insertion */

static void swap_bytes(char *a, char *b, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        char t = a[i];
        a[i] = b[i];
        b[i] = t;
    }
}

static void insertion_sort(char *a, size_t n, size_t size, op_sort_cmp cmp, const void *ctx)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && cmp(a + (j - 1) * size, a + j * size, ctx) > 0; j--)
            swap_bytes(a + (j - 1) * size, a + j * size, size);
}

/* Merge the sorted halves a[0, h) and a[h, n) through tmp (h elements);
 * on a tie the left element goes first. */
static void merge(char *a, char *tmp, size_t h, size_t n, size_t size, op_sort_cmp cmp,
                  const void *ctx)
{
    memcpy(tmp, a, h * size);
    char *l = tmp, *lend = tmp + h * size, *r = a + h * size, *rend = a + n * size, *o = a;
    while (l < lend && r < rend) {
        if (cmp(r, l, ctx) < 0) {
            memcpy(o, r, size);
            r += size;
        } else {
            memcpy(o, l, size);
            l += size;
        }
        o += size;
    }
    memcpy(o, l, (size_t)(lend - l)); /* what is left of the right half is in place */
}

static void merge_sort(char *a, char *tmp, size_t n, size_t size, op_sort_cmp cmp, const void *ctx)
{
    if (n <= SMALL) {
        insertion_sort(a, n, size, cmp, ctx);
        return;
    }
    size_t h = n / 2;
    merge_sort(a, tmp, h, size, cmp, ctx);
    merge_sort(a + h * size, tmp, n - h, size, cmp, ctx);
    if (cmp(a + (h - 1) * size, a + h * size, ctx) > 0)
        merge(a, tmp, h, n, size, cmp, ctx);
}

void op_sort(void *base, size_t n, size_t size, op_sort_cmp cmp, const void *ctx)
{
    if (n < 2 || size == 0)
        return;
    char *tmp = n > SMALL ? malloc(n / 2 * size) : NULL;
    if (tmp)
        merge_sort(base, tmp, n, size, cmp, ctx);
    else
        insertion_sort(base, n, size, cmp, ctx);
    free(tmp);
}
