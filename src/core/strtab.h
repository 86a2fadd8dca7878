/*
 * strtab.h - interning: each distinct string gets a small dense id.
 * Used for device kinds, layer scopes and colocation groups, which many ops
 * share; ops then store an int instead of a string.
 */
#ifndef OPPLACE_STRTAB_H
#define OPPLACE_STRTAB_H

#include <stddef.h>

#include "core/name_index.h"

typedef struct op_strtab {
    char **names;
    int n;
    size_t cap;
    op_name_index ix;
} op_strtab;

op_status op_strtab_init(op_strtab *t, op_error *err);
/* Frees the table; the names too unless they were taken with op_strtab_take. */
void op_strtab_destroy(op_strtab *t);
/* Id of s, adding it if new; -1 on out of memory. */
int op_strtab_intern(op_strtab *t, const char *s, op_error *err);
int op_strtab_find(const op_strtab *t, const char *s);
/* Hand the names array to the caller (who frees each and the array). */
char **op_strtab_take(op_strtab *t, int *n);

char *op_strdup(const char *s, op_error *err);

#endif
