/*
 * params.c - the set of trainable parameters of a model (nn_params).
 *
 * One nn_params owns every weight of a model; each nn_param is one malloc
 * holding its value, gradient and Adam moments side by side, and its pointer
 * stays valid until nn_params_destroy (layers keep it).  Unique names are
 * the identity used by save/load, so registration rejects duplicates.  The
 * initialisers here are the only place weights get their first values.
 */
#include "nn_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_hooks.h"

void nn_params_init(nn_params *ps)
{
    memset(ps, 0, sizeof *ps);
}

void nn_params_destroy(nn_params *ps)
{
    for (size_t i = 0; i < ps->count; i++)
        free(ps->items[i]);
    free(ps->items);
    memset(ps, 0, sizeof *ps);
}

nn_param *nn_params_find(const nn_params *ps, const char *name)
{
    for (size_t i = 0; i < ps->count; i++)
        if (strcmp(ps->items[i]->name, name) == 0)
            return ps->items[i];
    return NULL;
}

static nn_param *param_new(const char *name, int rows, int cols, op_error *err)
{
    size_t n = (size_t)rows * (size_t)cols;
    if (cols && n / (size_t)cols != (size_t)rows)
        return op_fail(err, OP_ENOMEM, "parameter '%s' too large", name), NULL;
    nn_param *p = op_calloc(1, sizeof *p + 4 * n * sizeof(double), err);
    if (!p)
        return NULL;
    double *base = (double *)(p + 1);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->value = nn_tensor_view(base, rows, cols);
    p->grad = nn_tensor_view(base + n, rows, cols);
    p->m = nn_tensor_view(base + 2 * n, rows, cols);
    p->v = nn_tensor_view(base + 3 * n, rows, cols);
    return p;
}

op_status nn_params_add(nn_params *ps, const char *name, int rows, int cols, nn_param **out,
                        op_error *err)
{
    if (!name || !*name || strlen(name) >= NN_NAME_MAX)
        return op_fail(err, OP_EINPUT, "parameter name '%s' is empty or longer than %d bytes",
                       name ? name : "", NN_NAME_MAX - 1);
    if (rows <= 0 || cols <= 0)
        return op_fail(err, OP_EINPUT, "parameter '%s' has shape %dx%d; both must be positive",
                       name, rows, cols);
    if (nn_params_find(ps, name))
        return op_fail(err, OP_EINPUT, "parameter '%s' registered twice", name);
    op_status st = op_reserve((void **)&ps->items, sizeof *ps->items, &ps->cap, ps->count + 1, err);
    if (st != OP_OK)
        return st;
    nn_param *p = param_new(name, rows, cols, err);
    if (!p)
        return OP_ENOMEM;
    ps->items[ps->count++] = p;
    if (out)
        *out = p;
    return OP_OK;
}

op_status nn_add_named_param(nn_params *ps, const char *prefix, const char *suffix, int rows,
                             int cols, nn_param **out, op_error *err)
{
    char name[NN_NAME_MAX];
    int len = snprintf(name, sizeof name, "%s.%s", prefix, suffix);
    if (len < 0 || (size_t)len >= sizeof name)
        return op_fail(err, OP_EINPUT, "parameter name '%s.%s' longer than %d bytes", prefix,
                       suffix, NN_NAME_MAX - 1);
    return nn_params_add(ps, name, rows, cols, out, err);
}

size_t nn_params_numel(const nn_params *ps)
{
    size_t n = 0;
    for (size_t i = 0; i < ps->count; i++)
        n += nn_tensor_size(&ps->items[i]->value);
    return n;
}

void nn_params_zero_grad(nn_params *ps)
{
    for (size_t i = 0; i < ps->count; i++)
        nn_tensor_fill(&ps->items[i]->grad, 0.0);
}

op_status nn_params_copy_values(nn_params *dst, const nn_params *src, op_error *err)
{
    if (dst->count != src->count)
        return op_fail(err, OP_EINPUT, "copying parameters: %zu in source, %zu in destination",
                       src->count, dst->count);
    for (size_t i = 0; i < src->count; i++) {
        const nn_param *s = src->items[i];
        nn_param *d = nn_params_find(dst, s->name);
        if (!d || !nn_tensor_same_shape(&d->value, &s->value))
            return op_fail(err, OP_EINPUT, "copying parameters: '%s' missing or reshaped",
                           s->name);
    }
    for (size_t i = 0; i < src->count; i++)
        nn_tensor_copy(&nn_params_find(dst, src->items[i]->name)->value, &src->items[i]->value);
    return OP_OK;
}

void nn_param_init_uniform(nn_param *p, nn_rng *rng, double lo, double hi)
{
    size_t n = nn_tensor_size(&p->value);
    for (size_t i = 0; i < n; i++)
        p->value.data[i] = lo + (hi - lo) * nn_rng_uniform(rng);
}

void nn_param_init_normal(nn_param *p, nn_rng *rng, double stddev)
{
    size_t n = nn_tensor_size(&p->value);
    for (size_t i = 0; i < n; i++)
        p->value.data[i] = stddev * nn_rng_normal(rng);
}

void nn_param_init_xavier(nn_param *p, nn_rng *rng)
{
    double bound = sqrt(6.0 / (double)(p->value.rows + p->value.cols));
    nn_param_init_uniform(p, rng, -bound, bound);
}
