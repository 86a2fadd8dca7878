/*
 * json_in.h - shared machinery of the JSON readers.
 *
 * jansson parses the file and reports syntax errors with line and column,
 * but keeps no positions for the values it builds.  Validation errors
 * ("ops[3].time_us must be ...") still have to name the line, so on the
 * error path only we rescan the raw text along the value's path to find the
 * line where it starts (json_locate.c).  Valid files pay nothing for this.
 */
#ifndef OPPLACE_JSON_IN_H
#define OPPLACE_JSON_IN_H

#include <jansson.h>
#include <stdint.h>

#include "opplace/error.h"
#include "opplace/limits.h"

/* Limit on hostile input: strings (names, kinds).  Numbers: opplace/limits.h.
 * One rule for strings: a string that holds a NUL character (\u0000), in a
 * value or in a key, is refused everywhere (json_doc_load). */
#define OP_MAX_STRING (1 << 20)

/* One step of a path into a JSON document: an object key or an array index. */
typedef struct json_step {
    const char *key; /* NULL: use index */
    long index;
} json_step;

typedef struct json_doc {
    const char *path;  /* file name, for messages */
    char *text;        /* raw file contents */
    size_t len;
    json_t *root;
    op_error *err;     /* where json_fail records errors */
    int owns_arena;    /* the jansson allocation arena belongs to this document */
} json_doc;

/* Read and parse a file; syntax errors name path:line:column. */
op_status json_doc_load(json_doc *d, const char *path, op_error *err);
void json_doc_destroy(json_doc *d);

/* Line (1-based) where the value at steps[0..n) starts, or of the deepest
 * part of the path that exists. */
int json_locate_line(const char *text, size_t len, const json_step *steps, int n);

/* Fail with "path:line: <where>: <message>", where <where> renders steps
 * as ops[3].time_us. */
op_status json_fail(const json_doc *d, const json_step *steps, int n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Typed getters.  Each returns OP_OK and sets *out, or fails naming the key.
 * "Optional" getters leave *out unchanged when the key is absent or null. */
op_status json_get_string(const json_doc *d, json_t *obj, const json_step *at, int n,
                          const char *key, int required, const char **out);
op_status json_get_amount(const json_doc *d, json_t *obj, const json_step *at, int n,
                          const char *key, int required, double *out);
/* A time in microseconds: 0 .. OP_MAX_TIME_US (opplace/limits.h). */
op_status json_get_time(const json_doc *d, json_t *obj, const json_step *at, int n,
                        const char *key, int required, double *out);
/* Check a number already fetched against the time rule; path names it. */
op_status json_check_time(const json_doc *d, const json_step *path, int pn, json_t *v,
                          double *out);
op_status json_get_bytes(const json_doc *d, json_t *obj, const json_step *at, int n,
                         const char *key, int required, int64_t *out);
/* A top-level array; *out is NULL when an optional key is absent. */
op_status json_get_array(const json_doc *d, const char *key, int required, json_t **out);
/* Check "format" and "version" at the top of a document. */
op_status json_check_header(const json_doc *d, const char *format);

#endif
