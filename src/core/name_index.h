/*
 * name_index.h - string -> int hash map (open addressing, linear probing).
 *
 * Keys are not copied: the caller keeps them alive as long as the index.
 * Used for op names (100k+ entries, so lookups must be O(1)), device names,
 * and the interning tables of kinds, layers and colocation groups.
 */
#ifndef OPPLACE_NAME_INDEX_H
#define OPPLACE_NAME_INDEX_H

#include <stddef.h>

#include "opplace/error.h"

typedef struct op_name_index {
    size_t cap, count; /* cap is a power of two */
    const char **keys;
    int *vals;
} op_name_index;

op_status op_name_index_init(op_name_index *ix, size_t expected, op_error *err);
void op_name_index_destroy(op_name_index *ix);
/* Value for key, or -1. */
int op_name_index_get(const op_name_index *ix, const char *key);
/* Insert key -> val; returns the existing value instead if key is present
 * (and leaves it unchanged), or -1 after a fresh insert, or -2 on OOM. */
int op_name_index_put(op_name_index *ix, const char *key, int val, op_error *err);

#endif
