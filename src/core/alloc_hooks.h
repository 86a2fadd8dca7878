/*
 * alloc_hooks.h - internal: what the library itself needs to know about
 * the allocation-failure injection of opplace/error.h.
 */
#ifndef OPPLACE_CORE_ALLOC_HOOKS_H
#define OPPLACE_CORE_ALLOC_HOOKS_H

/* 1 while injection is armed (op_alloc_fail_after or OPPLACE_FAIL_ALLOC):
 * work that would run in a child process runs in this one, where the
 * injection counts its allocations (placers/portfolio.c). */
int op_alloc_injecting(void);

#endif
