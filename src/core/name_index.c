/* name_index.c - see name_index.h.  FNV-1a hashing, load factor <= 1/2. */
#include "core/name_index.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

op_status op_name_index_init(op_name_index *ix, size_t expected, op_error *err)
{
    size_t cap = 16;
    while (cap < expected * 2)
        cap *= 2;
    ix->cap = cap;
    ix->count = 0;
    ix->keys = op_calloc(cap, sizeof *ix->keys, err);
    ix->vals = op_malloc(cap * sizeof *ix->vals, err);
    if (!ix->keys || !ix->vals) {
        op_name_index_destroy(ix);
        return OP_ENOMEM;
    }
    return OP_OK;
}

void op_name_index_destroy(op_name_index *ix)
{
    free(ix->keys);
    free(ix->vals);
    *ix = (op_name_index){0};
}

int op_name_index_get(const op_name_index *ix, const char *key)
{
    if (!ix->cap)
        return -1;
    size_t mask = ix->cap - 1;
    for (size_t i = hash_str(key) & mask;; i = (i + 1) & mask) {
        if (!ix->keys[i])
            return -1;
        if (strcmp(ix->keys[i], key) == 0)
            return ix->vals[i];
    }
}

static op_status grow(op_name_index *ix, op_error *err)
{
    op_name_index bigger;
    if (op_name_index_init(&bigger, ix->cap, err) != OP_OK)
        return OP_ENOMEM;
    for (size_t i = 0; i < ix->cap; i++)
        if (ix->keys[i])
            op_name_index_put(&bigger, ix->keys[i], ix->vals[i], err);
    op_name_index_destroy(ix);
    *ix = bigger;
    return OP_OK;
}

int op_name_index_put(op_name_index *ix, const char *key, int val, op_error *err)
{
    if ((ix->count + 1) * 2 > ix->cap && grow(ix, err) != OP_OK)
        return -2;
    size_t mask = ix->cap - 1;
    for (size_t i = hash_str(key) & mask;; i = (i + 1) & mask) {
        if (!ix->keys[i]) {
            ix->keys[i] = key;
            ix->vals[i] = val;
            ix->count++;
            return -1;
        }
        if (strcmp(ix->keys[i], key) == 0)
            return ix->vals[i];
    }
}
