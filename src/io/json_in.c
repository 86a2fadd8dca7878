/* json_in.c - loading JSON documents and typed, line-numbered getters. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/file_util.h"
#include "io/json_in.h"

op_status json_doc_load(json_doc *d, const char *path, op_error *err)
{
    memset(d, 0, sizeof *d);
    d->path = path;
    d->err = err;
    op_status st = op_read_whole_file(path, &d->text, &d->len, err);
    if (st)
        return st;
    json_error_t je;
    d->root = json_loadb(d->text, d->len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!d->root)
        return op_fail(err, OP_EINPUT, "%s:%d:%d: invalid JSON: %s", path, je.line, je.column,
                       je.text);
    if (!json_is_object(d->root))
        return op_fail(err, OP_EINPUT, "%s:1: the top level must be a JSON object", path);
    return OP_OK;
}

void json_doc_destroy(json_doc *d)
{
    json_decref(d->root);
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
    memcpy(buf, at, (size_t)n * sizeof *at);
    buf[n] = (json_step){key, 0};
    return n + 1;
}

op_status json_get_string(const json_doc *d, json_t *obj, const json_step *at, int n,
                          const char *key, int required, const char **out)
{
    json_step path[8];
    int pn = with_key(path, at, n, key);
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (required)
            return json_fail(d, path, pn, "required key is missing");
        return OP_OK;
    }
    if (!json_is_string(v))
        return json_fail(d, path, pn, "must be a string");
    if (strlen(json_string_value(v)) != json_string_length(v))
        return json_fail(d, path, pn, "must not contain a NUL character");
    *out = json_string_value(v);
    return OP_OK;
}

op_status json_get_amount(const json_doc *d, json_t *obj, const json_step *at, int n,
                          const char *key, int required, double *out)
{
    json_step path[8];
    int pn = with_key(path, at, n, key);
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (required)
            return json_fail(d, path, pn, "required key is missing");
        return OP_OK;
    }
    if (!json_is_number(v))
        return json_fail(d, path, pn, "must be a number");
    double x = json_number_value(v);
    if (!isfinite(x) || x < 0)
        return json_fail(d, path, pn, "must be a finite non-negative number (got %g)", x);
    *out = x;
    return OP_OK;
}

op_status json_get_bytes(const json_doc *d, json_t *obj, const json_step *at, int n,
                         const char *key, int required, int64_t *out)
{
    double x = -1;
    op_status st = json_get_amount(d, obj, at, n, key, required, &x);
    if (st || x < 0)
        return st;
    if (x > 9.0e18) {
        json_step path[8];
        int pn = with_key(path, at, n, key);
        return json_fail(d, path, pn, "is too large (%g bytes)", x);
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
    if (!json_is_string(f) || strcmp(json_string_value(f), format) != 0)
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
