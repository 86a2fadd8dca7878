/*
 * opplace/options.h - named options handed from the command line to a placer.
 *
 * The command line collects every `--name value` it does not handle itself
 * into an op_options list; each placer reads the ones it understands with
 * a typed getter, which marks them used.  Afterwards the command reports any
 * option that nobody read, so a typo such as `--time-limt 60` is an error
 * instead of being silently ignored, and a new placer needs no change to the
 * command-line parser.
 *
 * Declarations: every placer lists the options it reads in a table of
 * op_opt_decl next to its code (op_placer.options).  The command hands the
 * tables to op_options_check before any work starts, so an unknown name or
 * a malformed value is refused at once, and `--help` prints the same table.
 * After a check, a getter asked for a name no table declares records it
 * (op_options_first_undeclared), which is how the tests hold every placer
 * to its table.
 */
#ifndef OPPLACE_OPTIONS_H
#define OPPLACE_OPTIONS_H

#include <stdint.h>
#include <stdio.h>

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

typedef enum op_opt_type {
    OP_OPT_FLAG, /* present or absent, no value */
    OP_OPT_INT,  /* whole number in [lo, hi] */
    OP_OPT_NUM,  /* number in [lo, hi] */
    OP_OPT_TEXT, /* text; one of `choices` ("a|b|c") when they are given */
} op_opt_type;

/* One declared option.  A table ends with an entry whose name is NULL. */
typedef struct op_opt_decl {
    const char *name;    /* without the leading "--" */
    op_opt_type type;
    double lo, hi;       /* range of INT and NUM */
    const char *def;     /* the default, as text for --help (NULL: none) */
    const char *choices; /* TEXT: the accepted values separated by '|', or NULL */
    const char *help;    /* one line */
} op_opt_decl;

/* Add a table to the ones op_options_check accepts (at most 8 tables). */
op_status op_options_declare(op_options *o, const op_opt_decl *table, op_error *err);

/* Refuse the first option no declared table lists, and any value that does
 * not parse or lies outside its range or choices.  `help` names where the
 * user finds the list (e.g. "opplace place --algo celeritas --help"). */
op_status op_options_check(op_options *o, const char *help, op_error *err);

/* After op_options_declare: the first name a getter asked for that no table
 * declares, or NULL. */
const char *op_options_first_undeclared(const op_options *o);

/* Print a table as "  --name VALUE  help (default ...)" lines. */
void op_options_print_help(FILE *f, const op_opt_decl *table);

#endif
