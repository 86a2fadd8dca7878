/*
 * file_util.h - reading whole files and writing files atomically.
 *
 * Writers go through op_atomic: the data lands in a temporary file in the
 * target's directory, and only a complete, flushed file is renamed over the
 * target, so an error or a crash never leaves a half-written output.
 */
#ifndef OPPLACE_FILE_UTIL_H
#define OPPLACE_FILE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "opplace/error.h"

/* Largest input file opplace reads (hostile-input guard). */
#define OP_MAX_INPUT_BYTES ((size_t)4 << 30)

op_status op_read_whole_file(const char *path, char **text, size_t *len, op_error *err);

typedef struct op_atomic {
    FILE *f;
    char *final_path, *tmp_path; /* tmp_path NULL when writing to stdout */
} op_atomic;

/* path "-" writes to standard output. */
op_status op_atomic_open(op_atomic *a, const char *path, op_error *err);
/* Flush, close and rename; on any write error the temporary is removed. */
op_status op_atomic_commit(op_atomic *a, op_error *err);
void op_atomic_abort(op_atomic *a);

/* JSON text helpers for the writers. */
void op_json_put_string(FILE *f, const char *s);
/* Shortest decimal text that reads back as the same double. */
void op_json_put_number(FILE *f, double x);

#endif
