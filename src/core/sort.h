/*
 * sort.h - a sort whose comparator takes a context, so a comparator that
 * needs a key array or a problem gets it as an argument instead of through
 * a file-level variable (C's qsort has no context argument, and qsort_r is
 * not portable: glibc's and BSD's disagree on the argument order).
 */
#ifndef OPPLACE_CORE_SORT_H
#define OPPLACE_CORE_SORT_H

#include <stddef.h>

/* <0, 0 or >0 as a sorts before, with or after b. */
typedef int (*op_sort_cmp)(const void *a, const void *b, const void *ctx);

/* Sort n elements of `size` bytes at base, stably: equal elements keep
 * their order, as glibc's qsort (a merge sort) keeps them, so replacing a
 * qsort by op_sort changes no result.  A merge sort with a buffer of n/2
 * elements; an insertion sort, as stable, when that buffer cannot be had. */
void op_sort(void *base, size_t n, size_t size, op_sort_cmp cmp, const void *ctx);

#endif
