/*
 * opplace/error.h - how every fallible call in libopplace reports failure.
 *
 * Style borrowed from igraph: a call that can fail returns an op_status and,
 * when given a non-NULL op_error, fills it with a one-line message a user can
 * act on (the file, the key, the line, and what to do).  Callers that do not
 * care pass NULL.  The numeric values double as the command's exit codes.
 */
#ifndef OPPLACE_ERROR_H
#define OPPLACE_ERROR_H

#include <stdarg.h>
#include <stddef.h>

typedef enum op_status {
    OP_OK = 0,
    OP_EINPUT = 1,      /* bad input file or value: exit code 1 */
    OP_EUSAGE = 2,      /* bad command line: exit code 2 */
    OP_EINFEASIBLE = 3, /* no placement satisfies the constraints: exit code 3 */
    OP_ENOMEM = 4,      /* allocation failed (reported as exit code 1) */
    OP_EIO = 5,         /* could not read or write a file (exit code 1) */
    OP_EINTERNAL = 6    /* a bug: an invariant did not hold (exit code 1) */
} op_status;

#define OP_ERROR_MSG_MAX 1024

typedef struct op_error {
    op_status code;
    char msg[OP_ERROR_MSG_MAX];
} op_error;

/* Record an error (if err is non-NULL) and return code, so callers can write
 * `return op_fail(err, OP_EINPUT, "%s: ...", path);`.  A later call does not
 * overwrite an earlier message: the first, most specific cause wins. */
op_status op_fail(op_error *err, op_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
op_status op_vfail(op_error *err, op_status code, const char *fmt, va_list ap);

/* Put "prefix: " in front of a recorded message (e.g. the file it concerns). */
void op_error_prefix(op_error *err, const char *prefix);

/* Forget any recorded error. */
void op_error_clear(op_error *err);

/* The process exit code for a status (OP_ENOMEM, OP_EIO, OP_EINTERNAL -> 1). */
int op_status_exit_code(op_status s);

/* malloc/calloc/realloc that record OP_ENOMEM in err on failure. */
void *op_malloc(size_t n, op_error *err);
void *op_calloc(size_t count, size_t size, op_error *err);
void *op_realloc(void *p, size_t n, op_error *err);

#endif
