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

/* Largest input file opplace reads (hostile-input guard): 1 GiB, about
 * 30 times the largest graph of the zoo.  Devices and sockets are refused
 * outright (`--cluster /dev/zero`), regular files by their size before any
 * read, pipes once they pass the limit. */
#define OP_MAX_INPUT_BYTES ((size_t)1 << 30)

op_status op_read_whole_file(const char *path, char **text, size_t *len, op_error *err);

typedef struct op_atomic {
    FILE *f;
    char *final_path, *tmp_path; /* tmp_path NULL when writing to stdout */
} op_atomic;

/* path "-" writes to standard output.  Symlinks are written through,
 * non-regular targets refused, the target's mode kept (file_util.c). */
op_status op_atomic_open(op_atomic *a, const char *path, op_error *err);
/* Flush, close and rename; on any write error the temporary is removed. */
op_status op_atomic_commit(op_atomic *a, op_error *err);
void op_atomic_abort(op_atomic *a);

/* One command, all outputs or none: between op_output_begin and
 * op_output_end, op_atomic_commit only completes each temporary file;
 * op_output_end(1) renames them all into place, op_output_end(0) removes
 * them.  The CLI brackets every command with these (main.c). */
void op_output_begin(void);
op_status op_output_end(int commit, op_error *err);
/* Check, before any work, that path can be written under the rules above
 * (its directory exists and is writable; it is not a FIFO, device, ...). */
op_status op_output_check(const char *path, op_error *err);
/* The command has its result and starts writing it (op_atomic_open says
 * so too): main.c's Ctrl-C watchdog then lets it finish (main.c). */
void op_output_results_begin(void);
int op_output_results_begun(void);
/* 1 once some output went to standard output ("-"): commands then print
 * their human-readable tables on stderr, so stdout holds only the data. */
int op_output_claimed_stdout(void);

/* Open path as op_atomic_open does and write the header every opplace
 * file starts with ("format": format, "version": 1; formats.md); the
 * writer goes on with ",\n  \"key\": ...".  NULL on failure. */
FILE *op_json_doc_open(op_atomic *a, const char *path, const char *format, op_error *err);

/* JSON text helpers for the writers. */
void op_json_put_string(FILE *f, const char *s);
/* Shortest decimal text that reads back as the same double. */
void op_json_put_number(FILE *f, double x);

#endif
