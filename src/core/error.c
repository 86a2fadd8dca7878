/* error.c - the op_error record and checked allocation (see opplace/error.h). */
#include "opplace/error.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_hooks.h"

op_status op_vfail(op_error *err, op_status code, const char *fmt, va_list ap)
{
    if (err && err->code == OP_OK) {
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    }
    return code;
}

op_status op_fail(op_error *err, op_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    op_vfail(err, code, fmt, ap);
    va_end(ap);
    return code;
}

void op_error_prefix(op_error *err, const char *prefix)
{
    if (!err || err->code == OP_OK)
        return;
    char old[OP_ERROR_MSG_MAX];
    memcpy(old, err->msg, sizeof old);
    size_t n = (size_t)snprintf(err->msg, sizeof err->msg, "%.200s: ", prefix);
    snprintf(err->msg + n, sizeof err->msg - n, "%.800s", old);
}

void op_error_clear(op_error *err)
{
    if (err) {
        err->code = OP_OK;
        err->msg[0] = '\0';
    }
}

int op_status_exit_code(op_status s)
{
    switch (s) {
    case OP_OK: return 0;
    case OP_EUSAGE: return 2;
    case OP_EINFEASIBLE: return 3;
    default: return 1;
    }
}

/* Injection state: single-threaded use (tests and the CLI set it before any
 * worker starts); counting is relaxed under threads, which only makes the
 * n-th call approximate. */
static long fail_at = -1, calls;
static int fail_sticky, fail_hit, env_read;

void op_alloc_fail_after(long n, int sticky)
{
    env_read = 1;
    fail_at = n > 0 ? n : -1;
    fail_sticky = sticky;
    calls = 0;
    fail_hit = 0;
}

long op_alloc_count(void)
{
    return calls;
}

int op_alloc_failed(void)
{
    return fail_hit;
}

static void read_env(void)
{
    if (!env_read) {
        env_read = 1;
        const char *e = getenv("OPPLACE_FAIL_ALLOC");
        if (e && *e) {
            char *end;
            long n = strtol(e, &end, 10);
            op_alloc_fail_after(n, *end == ',' && atoi(end + 1) != 0);
        }
    }
}

int op_alloc_injecting(void)
{
    read_env();
    return fail_at > 0;
}

static int inject(void)
{
    read_env();
    calls++;
    if (fail_at < 0 || calls < fail_at || (calls > fail_at && !fail_sticky))
        return 0;
    fail_hit = 1;
    return 1;
}

void *op_malloc(size_t n, op_error *err)
{
    void *p = inject() ? NULL : malloc(n ? n : 1);
    if (!p)
        op_fail(err, OP_ENOMEM, "out of memory (allocating %zu bytes)", n);
    return p;
}

void *op_calloc(size_t count, size_t size, op_error *err)
{
    void *p = inject() ? NULL : calloc(count ? count : 1, size ? size : 1);
    if (!p)
        op_fail(err, OP_ENOMEM, "out of memory (allocating %zu x %zu bytes)", count, size);
    return p;
}

void *op_realloc(void *p, size_t n, op_error *err)
{
    void *q = inject() ? NULL : realloc(p, n ? n : 1);
    if (!q)
        op_fail(err, OP_ENOMEM, "out of memory (growing to %zu bytes)", n);
    return q;
}

op_status op_reserve(void **arr, size_t elem, size_t *cap, size_t need, op_error *err)
{
    if (need <= *cap)
        return OP_OK;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2 / elem)
            return op_fail(err, OP_ENOMEM, "array too large (%zu elements)", need);
        c *= 2;
    }
    void *q = op_realloc(*arr, c * elem, err);
    if (!q)
        return OP_ENOMEM;
    *arr = q;
    *cap = c;
    return OP_OK;
}
