/*
 * arena.c - scratch memory for one forward/backward pass (nn_arena).
 *
 * A bump allocator over a list of blocks, in the spirit of ggml's context:
 * activations, layer caches and activation gradients are carved out of it
 * during a step and all forgotten at once by nn_arena_reset.  When a step
 * overflows the first block a new one is chained; the next reset merges the
 * blocks into one of the combined size, so from the second step of a given
 * shape on, training does not call malloc at all.  Memory is handed out
 * zeroed, because every gradient buffer must start at zero (backward passes
 * accumulate).
 */
#include "nn/nn.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#define NN_ARENA_ALIGN (alignof(max_align_t) > 64 ? alignof(max_align_t) : 64)

struct nn_arena_block {
    nn_arena_block *next;
    size_t cap, used;
    unsigned char *base;    /* NN_ARENA_ALIGN-aligned start inside raw */
    void *raw;
};

static nn_arena_block *block_new(size_t cap)
{
    nn_arena_block *b = malloc(sizeof *b);
    if (!b)
        return NULL;
    b->raw = malloc(cap + NN_ARENA_ALIGN);
    if (!b->raw) {
        free(b);
        return NULL;
    }
    uintptr_t p = (uintptr_t)b->raw;
    p = (p + NN_ARENA_ALIGN - 1) & ~(uintptr_t)(NN_ARENA_ALIGN - 1);
    b->base = (unsigned char *)p;
    b->cap = cap;
    b->used = 0;
    b->next = NULL;
    return b;
}

static void blocks_free(nn_arena_block *b)
{
    while (b) {
        nn_arena_block *next = b->next;
        free(b->raw);
        free(b);
        b = next;
    }
}

op_status nn_arena_init(nn_arena *a, size_t initial_bytes, op_error *err)
{
    memset(a, 0, sizeof *a);
    a->block_bytes = initial_bytes < 4096 ? 4096 : initial_bytes;
    a->head = block_new(a->block_bytes);
    if (!a->head)
        return op_fail(err, OP_ENOMEM, "out of memory (nn arena of %zu bytes)", a->block_bytes);
    return OP_OK;
}

void nn_arena_destroy(nn_arena *a)
{
    blocks_free(a->head);
    memset(a, 0, sizeof *a);
}

void nn_arena_reset(nn_arena *a)
{
    a->used = 0;
    if (a->head && !a->head->next) {
        a->head->used = 0;
        return;
    }
    size_t total = 0;
    for (nn_arena_block *b = a->head; b; b = b->next)
        total += b->cap;
    blocks_free(a->head);
    a->head = NULL;
    if (total > a->block_bytes)
        a->block_bytes = total;
    a->head = block_new(a->block_bytes); /* NULL is fine: alloc retries */
}

static void *arena_alloc(nn_arena *a, size_t bytes, int zero, op_error *err)
{
    size_t need = (bytes + NN_ARENA_ALIGN - 1) & ~(size_t)(NN_ARENA_ALIGN - 1);
    if (need < bytes)
        return op_fail(err, OP_ENOMEM, "nn arena request too large (%zu bytes)", bytes), NULL;
    nn_arena_block *b = a->head;
    if (!b || b->cap - b->used < need) {
        size_t cap = need > a->block_bytes ? need : a->block_bytes;
        nn_arena_block *nb = block_new(cap);
        if (!nb) {
            op_fail(err, OP_ENOMEM, "out of memory (nn arena block of %zu bytes)", cap);
            return NULL;
        }
        nb->next = a->head;
        a->head = b = nb;
    }
    void *p = b->base + b->used;
    b->used += need;
    a->used += need;
    if (a->used > a->peak)
        a->peak = a->used;
    if (bytes && zero)
        memset(p, 0, bytes);
    return p;
}

/* nn_arena_alloc without the zeroing (the caller overwrites every byte). */
static void *arena_alloc(nn_arena *a, size_t bytes, int zero, op_error *err);

void *nn_arena_alloc(nn_arena *a, size_t bytes, op_error *err)
{
    return arena_alloc(a, bytes, 1, err);
}

static op_status arena_tensor(nn_arena *a, int rows, int cols, int zero, nn_tensor *out,
                              op_error *err)
{
    if (rows < 0 || cols < 0)
        return op_fail(err, OP_EINTERNAL, "nn arena: negative tensor shape %dx%d", rows, cols);
    size_t n = (size_t)rows * (size_t)cols;
    if (cols && n / (size_t)cols != (size_t)rows)
        return op_fail(err, OP_ENOMEM, "nn arena: tensor %dx%d too large", rows, cols);
    double *d = arena_alloc(a, n * sizeof(double), zero, err);
    if (!d)
        return OP_ENOMEM;
    *out = nn_tensor_view(d, rows, cols);
    return OP_OK;
}

op_status nn_arena_tensor(nn_arena *a, int rows, int cols, nn_tensor *out, op_error *err)
{
    return arena_tensor(a, rows, cols, 1, out, err);
}

op_status nn_arena_tensor_uninit(nn_arena *a, int rows, int cols, nn_tensor *out, op_error *err)
{
    return arena_tensor(a, rows, cols, 0, out, err);
}
