/* json_in.c - loading JSON documents and typed, line-numbered getters. */
#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file_util.h"
#include "io/json_in.h"

/*
 * A bump arena for jansson's allocations while one document is alive.
 * Parsing a 100,000-op graph makes millions of small allocations; with
 * malloc, building and freeing the tree cost as much as parsing.  The arena
 * makes each allocation a pointer bump and the whole tree one release.
 * jansson's allocator hooks are process-wide, so documents are loaded one at
 * a time, from one thread (the readers run before any worker threads).
 */
typedef struct arena_chunk {
    struct arena_chunk *next;
    size_t used, cap;
    max_align_t data[];
} arena_chunk;

static arena_chunk *arena;
static int arena_active;

static void *arena_alloc(size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (!arena || arena->cap - arena->used < n) {
        size_t cap = n > ((size_t)1 << 20) ? n : ((size_t)1 << 20);
        arena_chunk *c = op_malloc(sizeof *c + cap, NULL); /* failure injection reaches it */
        if (!c)
            return NULL;
        c->next = arena;
        c->used = 0;
        c->cap = cap;
        arena = c;
    }
    void *p = (char *)arena->data + arena->used;
    arena->used += n;
    return p;
}

static void arena_free(void *p)
{
    (void)p; /* released all at once by arena_release */
}

static void arena_release(void)
{
    while (arena) {
        arena_chunk *next = arena->next;
        free(arena);
        arena = next;
    }
    json_set_alloc_funcs(malloc, free);
    arena_active = 0;
}

/* Refuse strings longer than OP_MAX_STRING before jansson spends seconds
 * and gigabytes on them (a hostile or corrupt file). */
static op_status check_string_lengths(const json_doc *d)
{
    const char *p = d->text, *end = d->text + d->len;
    int line = 1;
    while (p < end) {
        if (*p == '\n')
            line++;
        if (*p++ != '"')
            continue;
        const char *start = p;
        while (p < end && *p != '"') {
            if (*p == '\\' && p + 1 < end)
                p++;
            else if (*p == '\n')
                line++;
            p++;
        }
        if ((size_t)(p - start) > OP_MAX_STRING)
            return op_fail(d->err, OP_EINPUT, "%s:%d: a string of %zu bytes; opplace accepts "
                           "names and values up to %d bytes", d->path, line,
                           (size_t)(p - start), OP_MAX_STRING);
        p++;
    }
    return OP_OK;
}

/* One rule for strings: no NUL character in any string or key.  jansson
 * keeps the length of a string with \u0000 (JSON_ALLOW_NUL), so a value that
 * C code would silently cut ("gpu:0\u0000junk" read as "gpu:0") is refused
 * here, once, for every reader.  The text holds a NUL only as the escape
 * \u0000 (a raw NUL byte is invalid JSON), so documents without that escape
 * skip the walk. */
static int has_escaped_nul(const char *p, size_t len)
{
    for (const char *q = p; (q = memchr(q, '\\', len - (size_t)(q - p))) != NULL; q++) {
        if ((size_t)(p + len - q) < 6)
            return 0;
        if (q[1] == 'u' && q[2] == '0' && q[3] == '0' && q[4] == '0' && q[5] == '0')
            return 1;
        if (q[1] == '\\')
            q++; /* an escaped backslash */
    }
    return 0;
}

static op_status walk_nul(const json_doc *d, json_t *v, json_step *path, int n)
{
    int pn = n < 7 ? n : 7;
    if (json_is_string(v)) {
        if (strlen(json_string_value(v)) != json_string_length(v))
            return json_fail(d, path, pn, "must not contain a NUL character (\\u0000)");
        return OP_OK;
    }
    if (json_is_object(v)) {
        const char *k;
        size_t klen;
        json_t *x;
        void *tmp;
        json_object_keylen_foreach_safe(v, tmp, k, klen, x) {
            if (n < 7)
                path[n] = (json_step){k, 0};
            if (strlen(k) != klen)
                return json_fail(d, path, n < 7 ? n : 7,
                                 "a key holds a NUL character (\\u0000); keys must not");
            op_status st = walk_nul(d, x, path, n + 1);
            if (st)
                return st;
        }
        return OP_OK;
    }
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            if (n < 7)
                path[n] = (json_step){NULL, (long)i};
            op_status st = walk_nul(d, x, path, n + 1);
            if (st)
                return st;
        }
    }
    return OP_OK;
}

static op_status check_no_nul(const json_doc *d)
{
    if (!has_escaped_nul(d->text, d->len))
        return OP_OK;
    json_step path[8];
    return walk_nul(d, d->root, path, 0);
}

op_status json_doc_load(json_doc *d, const char *path, op_error *err)
{
    memset(d, 0, sizeof *d);
    d->path = path;
    d->err = err;
    if (arena_active)
        return op_fail(err, OP_EINTERNAL, "%s: a JSON document is already open", path);
    op_status st = op_read_whole_file(path, &d->text, &d->len, err);
    if (st)
        return st;
    if ((st = check_string_lengths(d)))
        return st;
    json_set_alloc_funcs(arena_alloc, arena_free);
    arena_active = 1;
    d->owns_arena = 1;
    json_error_t je;
    d->root = json_loadb(d->text, d->len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!d->root && !je.text[0]) /* jansson reports allocation failure this way */
        return op_fail(err, OP_ENOMEM, "%s: out of memory parsing %zu bytes of JSON", path,
                       d->len);
    if (!d->root)
        return op_fail(err, OP_EINPUT, "%s:%d:%d: invalid JSON: %s", path, je.line, je.column,
                       je.text);
    if (!json_is_object(d->root))
        return op_fail(err, OP_EINPUT, "%s:1: the top level must be a JSON object", path);
    return check_no_nul(d);
}

void json_doc_destroy(json_doc *d)
{
    json_decref(d->root);
    if (d->owns_arena)
        arena_release();
    free(d->text);
    memset(d, 0, sizeof *d);
}

static void render_path(char *buf, size_t cap, const json_step *steps, int n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < cap; i++) {
        if (steps[i].key)
            used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? "." : "", steps[i].key);
        else
            used += (size_t)snprintf(buf + used, cap - used, "[%ld]", steps[i].index);
    }
}

op_status json_fail(const json_doc *d, const json_step *steps, int n, const char *fmt, ...)
{
    char where[256], what[768];
    render_path(where, sizeof where, steps, n);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    int line = json_locate_line(d->text, d->len, steps, n);
    if (n == 0)
        return op_fail(d->err, OP_EINPUT, "%s:%d: %s", d->path, line, what);
    return op_fail(d->err, OP_EINPUT, "%s:%d: %s: %s", d->path, line, where, what);
}

/* steps for "<at>.<key>" */
static int with_key(json_step *buf, const json_step *at, int n, const char *key)
{
    if (n > 6)
        n = 6;
    if (n > 0) /* at may be NULL for top-level keys */
        memcpy(buf, at, (size_t)n * sizeof *at);
    buf[n] = (json_step){key, 0};
    return n + 1;
}

/* A key looked up: its path for messages, its value, the status. */
typedef struct found {
    json_step path[8];
    int pn;
    json_t *v;
    op_status st;
} found;

/* Find obj.key: 1 with f->v set when present, 0 when absent or null (an
 * error in f->st if required). */
static int lookup(const json_doc *d, json_t *obj, const json_step *at, int n, const char *key,
                  int required, found *f)
{
    f->pn = with_key(f->path, at, n, key);
    f->v = json_object_get(obj, key);
    f->st = OP_OK;
    if (f->v && !json_is_null(f->v))
        return 1;
    if (required)
        f->st = json_fail(d, f->path, f->pn, "required key is missing");
    return 0;
}

op_status json_get_string(const json_doc *d, json_t *obj, const json_step *at, int n,
                          const char *key, int required, const char **out)
{
    found f;
    if (!lookup(d, obj, at, n, key, required, &f))
        return f.st;
    if (!json_is_string(f.v))
        return json_fail(d, f.path, f.pn, "must be a string");
    *out = json_string_value(f.v);
    return OP_OK;
}

/* v as a finite number from 0 to max; the message names the range in
 * `unit` (NULL: max is +inf, "a finite non-negative number"). */
static op_status check_number(const json_doc *d, const json_step *path, int pn, json_t *v,
                              double max, const char *unit, double *out)
{
    if (!json_is_number(v))
        return json_fail(d, path, pn, "must be a number");
    double x = json_number_value(v);
    if (isfinite(x) && x >= 0 && x <= max) {
        *out = x;
        return OP_OK;
    }
    if (unit)
        return json_fail(d, path, pn, "must be a number from 0 to %g %s (got %g)", max, unit, x);
    return json_fail(d, path, pn, "must be a finite non-negative number (got %g)", x);
}

op_status json_get_amount(const json_doc *d, json_t *obj, const json_step *at, int n,
                          const char *key, int required, double *out)
{
    found f;
    if (!lookup(d, obj, at, n, key, required, &f))
        return f.st;
    return check_number(d, f.path, f.pn, f.v, INFINITY, NULL, out);
}

op_status json_get_array(const json_doc *d, const char *key, int required, json_t **out)
{
    found f;
    *out = NULL;
    if (!lookup(d, d->root, NULL, 0, key, required, &f))
        return f.st;
    if (!json_is_array(f.v))
        return json_fail(d, f.path, f.pn, "must be an array");
    *out = f.v;
    return OP_OK;
}

op_status json_check_time(const json_doc *d, const json_step *path, int pn, json_t *v,
                          double *out)
{
    return check_number(d, path, pn, v, OP_MAX_TIME_US, "microseconds", out);
}

op_status json_get_time(const json_doc *d, json_t *obj, const json_step *at, int n,
                        const char *key, int required, double *out)
{
    found f;
    if (!lookup(d, obj, at, n, key, required, &f))
        return f.st;
    return json_check_time(d, f.path, f.pn, f.v, out);
}

op_status json_get_bytes(const json_doc *d, json_t *obj, const json_step *at, int n,
                         const char *key, int required, int64_t *out)
{
    double x = -1;
    op_status st = json_get_amount(d, obj, at, n, key, required, &x);
    if (st || x < 0)
        return st;
    if (x > (double)OP_MAX_BYTES) {
        json_step path[8];
        int pn = with_key(path, at, n, key);
        return json_fail(d, path, pn, "is too large (%g bytes; at most 2^50)", x);
    }
    *out = (int64_t)llround(x);
    return OP_OK;
}

op_status json_check_header(const json_doc *d, const char *format)
{
    json_t *root = d->root;
    json_step fpath[1] = {{"format", 0}}, vpath[1] = {{"version", 0}};
    json_t *f = json_object_get(root, "format"), *v = json_object_get(root, "version");
    if (!f)
        return json_fail(d, fpath, 1, "required key is missing (expected \"%s\")", format);
    if (!json_is_string(f) || strcmp(json_string_value(f), format) != 0 ||
        json_string_length(f) != strlen(format))
        return json_fail(d, fpath, 1, "must be \"%s\"", format);
    if (!v)
        return json_fail(d, vpath, 1, "required key is missing (expected 1)");
    if (!json_is_integer(v))
        return json_fail(d, vpath, 1, "must be a whole number");
    json_int_t ver = json_integer_value(v);
    if (ver > 1)
        return json_fail(d, vpath, 1, "version %lld is newer than this opplace reads (1); "
                         "upgrade opplace", (long long)ver);
    if (ver < 1)
        return json_fail(d, vpath, 1, "must be 1");
    return OP_OK;
}
