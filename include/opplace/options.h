/*
 * opplace/options.h - named options handed from the command line to a placer.
 *
 * The command line collects every `--name value` it does not handle itself
 * into an op_options list; each placer reads the ones it understands with
 * a typed getter, which marks them used.  Afterwards the command reports any
 * option that nobody read, so a typo such as `--time-limt 60` is an error
 * instead of being silently ignored, and a new placer needs no change to the
 * command-line parser.
 */
#ifndef OPPLACE_OPTIONS_H
#define OPPLACE_OPTIONS_H

#include <stdint.h>

#include "opplace/error.h"

typedef struct op_options op_options;

op_options *op_options_new(op_error *err);
void op_options_free(op_options *o);
/* value may be NULL for a flag. Later values for the same name win. */
op_status op_options_set(op_options *o, const char *name, const char *value, op_error *err);
int op_options_has(op_options *o, const char *name); /* marks it used */

/* Each getter leaves *out = def when the option is absent and returns
 * OP_EUSAGE with a message naming the option when the value is malformed or
 * outside [lo, hi]. */
op_status op_options_double(op_options *o, const char *name, double def, double lo, double hi,
                            double *out, op_error *err);
op_status op_options_int(op_options *o, const char *name, long def, long lo, long hi, long *out,
                         op_error *err);
op_status op_options_u64(op_options *o, const char *name, uint64_t def, uint64_t *out,
                         op_error *err);
const char *op_options_str(op_options *o, const char *name, const char *def);

/* The first option nobody read, or NULL. */
const char *op_options_first_unused(const op_options *o);

#endif
