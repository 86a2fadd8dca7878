/* options.c - named option list with typed getters (see opplace/options.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/strtab.h"
#include "opplace/options.h"

typedef struct entry {
    char *name, *value;
    int used;
} entry;

struct op_options {
    entry *e;
    int n;
    size_t cap;
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

/* Mark every entry of this name used (a repeated option counts as read). */
static entry *take(op_options *o, const char *name)
{
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

op_status op_options_double(op_options *o, const char *name, double def, double lo, double hi,
                            double *out, op_error *err)
{
    entry *e = take(o, name);
    *out = def;
    if (!e)
        return OP_OK;
    char *end = NULL;
    errno = 0;
    double v = e->value ? strtod(e->value, &end) : NAN;
    if (!e->value || *end || end == e->value || errno || !isfinite(v))
        return op_fail(err, OP_EUSAGE, "--%s needs a number (got '%s')", name,
                       e->value ? e->value : "nothing");
    if (v < lo || v > hi)
        return op_fail(err, OP_EUSAGE, "--%s must be between %g and %g (got %g)", name, lo, hi, v);
    *out = v;
    return OP_OK;
}

op_status op_options_int(op_options *o, const char *name, long def, long lo, long hi, long *out,
                         op_error *err)
{
    entry *e = take(o, name);
    *out = def;
    if (!e)
        return OP_OK;
    char *end = NULL;
    errno = 0;
    long v = e->value ? strtol(e->value, &end, 10) : 0;
    if (!e->value || *end || end == e->value || errno)
        return op_fail(err, OP_EUSAGE, "--%s needs a whole number (got '%s')", name,
                       e->value ? e->value : "nothing");
    if (v < lo || v > hi)
        return op_fail(err, OP_EUSAGE, "--%s must be between %ld and %ld (got %ld)", name, lo, hi,
                       v);
    *out = v;
    return OP_OK;
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
