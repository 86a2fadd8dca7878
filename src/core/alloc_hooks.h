/*
 * alloc_hooks.h - internal: the allocator's parts that are not the
 * library's API (error.c): the allocation-failure injection behind
 * op_malloc, op_calloc and op_realloc (tests drive it), and op_reserve.
 */
#ifndef OPPLACE_CORE_ALLOC_HOOKS_H
#define OPPLACE_CORE_ALLOC_HOOKS_H

#include <stddef.h>

#include "opplace/error.h"

/* Allocation-failure injection (as SQLite tests itself): after
 * op_alloc_fail_after(n), the n-th following call of op_malloc, op_calloc or
 * op_realloc (n >= 1) fails as if memory ran out, and so does every later
 * one while `sticky` is set; n <= 0 turns injection off.  The environment
 * variable OPPLACE_FAIL_ALLOC=n (or n,sticky) does the same for a whole
 * process.  op_alloc_count() counts calls since the last op_alloc_fail_after,
 * and op_alloc_failed() says whether an injected failure happened.  Tests
 * drive every reader, the simulator and placers through each failure point:
 * each must end in an error, never a crash or a leak. */
void op_alloc_fail_after(long n, int sticky);
long op_alloc_count(void);
int op_alloc_failed(void);

/* 1 while injection is armed (op_alloc_fail_after or OPPLACE_FAIL_ALLOC):
 * work that would run in a child process runs in this one, where the
 * injection counts its allocations (placers/portfolio.c). */
int op_alloc_injecting(void);

/* Grow-by-doubling helper for dynamic arrays: ensures *cap >= need. */
op_status op_reserve(void **arr, size_t elem, size_t *cap, size_t need, op_error *err);

#endif
