/* options.c - named option list with typed getters (see opplace/options.h). */
#include <errno.h>
#include <stdio.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_hooks.h"
#include "core/strtab.h"
#include "opplace/options.h"

typedef struct entry {
    char *name, *value;
    int used;
} entry;

#define MAX_TABLES 8

struct op_options {
    entry *e;
    int n;
    size_t cap;
    const op_opt_decl *tables[MAX_TABLES];
    int n_tables;
    char undeclared[64]; /* first name read that no table declares */
};

op_options *op_options_new(op_error *err)
{
    return op_calloc(1, sizeof(op_options), err);
}

void op_options_free(op_options *o)
{
    if (!o)
        return;
    for (int i = 0; i < o->n; i++) {
        free(o->e[i].name);
        free(o->e[i].value);
    }
    free(o->e);
    free(o);
}

static entry *find(op_options *o, const char *name)
{
    if (!o)
        return NULL;
    for (int i = o->n - 1; i >= 0; i--)
        if (strcmp(o->e[i].name, name) == 0)
            return &o->e[i];
    return NULL;
}

op_status op_options_set(op_options *o, const char *name, const char *value, op_error *err)
{
    if (op_reserve((void **)&o->e, sizeof *o->e, &o->cap, (size_t)o->n + 1, err))
        return OP_ENOMEM;
    entry *e = &o->e[o->n];
    e->name = op_strdup(name, err);
    e->value = value ? op_strdup(value, err) : NULL;
    e->used = 0;
    if (!e->name || (value && !e->value)) {
        free(e->name);
        free(e->value);
        return OP_ENOMEM;
    }
    o->n++;
    return OP_OK;
}

static const op_opt_decl *declared(const op_options *o, const char *name)
{
    for (int t = 0; t < o->n_tables; t++)
        for (const op_opt_decl *d = o->tables[t]; d->name; d++)
            if (strcmp(d->name, name) == 0)
                return d;
    return NULL;
}

/* Mark every entry of this name used (a repeated option counts as read). */
static entry *take(op_options *o, const char *name)
{
    if (o && o->n_tables && !o->undeclared[0] && !declared(o, name))
        snprintf(o->undeclared, sizeof o->undeclared, "%s", name);
    entry *last = find(o, name);
    if (last)
        for (int i = 0; i < o->n; i++)
            if (strcmp(o->e[i].name, name) == 0)
                o->e[i].used = 1;
    return last;
}

int op_options_has(op_options *o, const char *name)
{
    return take(o, name) != NULL;
}

/* Parse v as a number (whole: an integer) within [lo, hi] into *out;
 * the messages name the option. */
static op_status parse_number(const char *name, const char *v, int whole, double lo, double hi,
                              double *out, op_error *err)
{
    char *end = NULL;
    errno = 0;
    double x = !v ? NAN : whole ? (double)strtol(v, &end, 10) : strtod(v, &end);
    if (!v || *end || end == v || errno || !isfinite(x))
        return op_fail(err, OP_EUSAGE, "--%s needs a %s (got '%s')", name,
                       whole ? "whole number" : "number", v ? v : "nothing");
    if (x < lo || x > hi)
        return whole ? op_fail(err, OP_EUSAGE, "--%s must be between %.0f and %.0f (got %.0f)",
                               name, lo, hi, x)
                     : op_fail(err, OP_EUSAGE, "--%s must be between %g and %g (got %g)", name,
                               lo, hi, x);
    *out = x;
    return OP_OK;
}

op_status op_options_double(op_options *o, const char *name, double def, double lo, double hi,
                            double *out, op_error *err)
{
    entry *e = take(o, name);
    *out = def;
    return e ? parse_number(name, e->value, 0, lo, hi, out, err) : OP_OK;
}

op_status op_options_int(op_options *o, const char *name, long def, long lo, long hi, long *out,
                         op_error *err)
{
    entry *e = take(o, name);
    double v = (double)def;
    *out = def;
    op_status st = e ? parse_number(name, e->value, 1, (double)lo, (double)hi, &v, err) : OP_OK;
    if (e && !st)
        *out = (long)v;
    return st;
}

op_status op_options_u64(op_options *o, const char *name, uint64_t def, uint64_t *out,
                         op_error *err)
{
    entry *e = take(o, name);
    *out = def;
    if (!e)
        return OP_OK;
    char *end = NULL;
    errno = 0;
    unsigned long long v = e->value ? strtoull(e->value, &end, 10) : 0;
    if (!e->value || *end || end == e->value || errno || e->value[0] == '-')
        return op_fail(err, OP_EUSAGE, "--%s needs a non-negative whole number (got '%s')", name,
                       e->value ? e->value : "nothing");
    *out = (uint64_t)v;
    return OP_OK;
}

const char *op_options_str(op_options *o, const char *name, const char *def)
{
    entry *e = take(o, name);
    return e && e->value ? e->value : def;
}

const char *op_options_first_unused(const op_options *o)
{
    if (!o)
        return NULL;
    for (int i = 0; i < o->n; i++)
        if (!o->e[i].used)
            return o->e[i].name;
    return NULL;
}

op_status op_options_declare(op_options *o, const op_opt_decl *table, op_error *err)
{
    if (!table)
        return OP_OK;
    if (o->n_tables >= MAX_TABLES)
        return op_fail(err, OP_EINTERNAL, "more than %d option tables", MAX_TABLES);
    o->tables[o->n_tables++] = table;
    return OP_OK;
}

const char *op_options_first_undeclared(const op_options *o)
{
    return o && o->undeclared[0] ? o->undeclared : NULL;
}

/* Is v one of the '|'-separated choices? */
static int is_choice(const char *choices, const char *v)
{
    size_t n = strlen(v);
    for (const char *c = choices; c;) {
        const char *bar = strchr(c, '|');
        size_t len = bar ? (size_t)(bar - c) : strlen(c);
        if (len == n && strncmp(c, v, n) == 0)
            return 1;
        c = bar ? bar + 1 : NULL;
    }
    return 0;
}

/* Check one given value against its declaration. */
static op_status check_value(const op_opt_decl *d, const char *v, op_error *err)
{
    double x;
    if (d->type == OP_OPT_INT || d->type == OP_OPT_NUM)
        return parse_number(d->name, v, d->type == OP_OPT_INT, d->lo, d->hi, &x, err);
    if (d->type == OP_OPT_TEXT && !v)
        return op_fail(err, OP_EUSAGE, "--%s needs a value", d->name);
    if (d->type == OP_OPT_TEXT && d->choices && !is_choice(d->choices, v))
        return op_fail(err, OP_EUSAGE, "--%s must be one of %s (got '%s')", d->name, d->choices,
                       v);
    return OP_OK;
}

op_status op_options_check(op_options *o, const char *help, op_error *err)
{
    if (!o)
        return OP_OK;
    for (int i = 0; i < o->n; i++) {
        const op_opt_decl *d = declared(o, o->e[i].name);
        if (!d)
            return op_fail(err, OP_EUSAGE, "unknown option --%s (see '%s')", o->e[i].name, help);
        op_status st = check_value(d, o->e[i].value, err);
        if (st)
            return st;
    }
    return OP_OK;
}

void op_options_print_help(FILE *f, const op_opt_decl *table)
{
    static const char *const what[] = {"", " N", " X", " TEXT"};
    for (const op_opt_decl *d = table; d && d->name; d++) {
        char left[64];
        if (d->type == OP_OPT_TEXT && d->choices)
            snprintf(left, sizeof left, "--%s %s", d->name, d->choices);
        else
            snprintf(left, sizeof left, "--%s%s", d->name, what[d->type]);
        fprintf(f, "  %-26s %s", left, d->help ? d->help : "");
        if (d->def)
            fprintf(f, " (default %s)", d->def);
        fputc('\n', f);
    }
}
