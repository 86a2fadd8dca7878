/*
 * test_sort.c - op_sort (core/sort.h): sorted, stable (equal keys keep
 * their order, as glibc's qsort keeps them), and the same permutation as
 * qsort on keys with many ties, at sizes around the insertion-sort cut.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "core/sort.h"

typedef struct item {
    int key, id;
} item;

static int by_key_ctx(const void *a, const void *b, const void *ctx)
{
    const int *sign = ctx;
    const item *x = a, *y = b;
    return *sign * ((x->key > y->key) - (x->key < y->key));
}

static int by_key(const void *a, const void *b)
{
    const item *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

static void fill(item *v, int n, int range, unsigned seed)
{
    srand(seed);
    for (int i = 0; i < n; i++)
        v[i] = (item){rand() % range, i};
}

Test(sort, stable_and_same_as_qsort)
{
    static const int sizes[] = {0, 1, 2, 7, 8, 9, 16, 17, 100, 1000, 4099};
    int up = 1;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int range = 1; range <= 64; range *= 8) {
            int n = sizes[s];
            item *a = malloc(((size_t)n + 1) * sizeof *a), *b = malloc(((size_t)n + 1) * sizeof *b);
            cr_assert(a && b);
            fill(a, n, range, (unsigned)(n * 131 + range));
            fill(b, n, range, (unsigned)(n * 131 + range));
            op_sort(a, (size_t)n, sizeof *a, by_key_ctx, &up);
            qsort(b, (size_t)n, sizeof *b, by_key);
            for (int i = 0; i < n; i++) {
                if (i > 0) {
                    cr_assert(a[i - 1].key <= a[i].key, "n %d: not sorted at %d", n, i);
                    if (a[i - 1].key == a[i].key)
                        cr_assert(a[i - 1].id < a[i].id, "n %d: not stable at %d", n, i);
                }
                cr_assert(a[i].key == b[i].key && a[i].id == b[i].id,
                          "n %d range %d: differs from qsort at %d", n, range, i);
            }
            free(a);
            free(b);
        }
}

Test(sort, the_context_reaches_the_comparator)
{
    item v[20];
    fill(v, 20, 5, 7);
    int down = -1;
    op_sort(v, 20, sizeof *v, by_key_ctx, &down);
    for (int i = 1; i < 20; i++) {
        cr_assert(v[i - 1].key >= v[i].key);
        if (v[i - 1].key == v[i].key)
            cr_assert(v[i - 1].id < v[i].id);
    }
}
