/* strtab.c - string interning, see strtab.h. */
#include "core/strtab.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc_hooks.h"

char *op_strdup(const char *s, op_error *err)
{
    size_t n = strlen(s) + 1;
    char *d = op_malloc(n, err);
    if (d)
        memcpy(d, s, n);
    return d;
}

op_status op_strtab_init(op_strtab *t, op_error *err)
{
    t->names = NULL;
    t->n = 0;
    t->cap = 0;
    return op_name_index_init(&t->ix, 8, err);
}

void op_strtab_destroy(op_strtab *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->names[i]);
    free(t->names);
    op_name_index_destroy(&t->ix);
    t->names = NULL;
    t->n = 0;
}

int op_strtab_find(const op_strtab *t, const char *s)
{
    return op_name_index_get(&t->ix, s);
}

int op_strtab_intern(op_strtab *t, const char *s, op_error *err)
{
    int id = op_name_index_get(&t->ix, s);
    if (id >= 0)
        return id;
    if (op_reserve((void **)&t->names, sizeof *t->names, &t->cap, (size_t)t->n + 1, err))
        return -1;
    char *copy = op_strdup(s, err);
    if (!copy)
        return -1;
    if (op_name_index_put(&t->ix, copy, t->n, err) == -2) {
        free(copy);
        return -1;
    }
    t->names[t->n] = copy;
    return t->n++;
}

char **op_strtab_take(op_strtab *t, int *n)
{
    char **names = t->names;
    *n = t->n;
    t->names = NULL;
    t->n = 0;
    t->cap = 0;
    op_name_index_destroy(&t->ix);
    return names;
}
