/*
 * coarseners.h - the registered coarsening methods (coarseners.c).
 */
#ifndef OPPLACE_PLACERS_COARSENERS_H
#define OPPLACE_PLACERS_COARSENERS_H

#include "coarsen/coarsen.h"

/* Every registered method, in display order. */
const op_coarsener *const *op_coarseners(int *count);
/* The method called name, or NULL. */
const op_coarsener *op_coarsener_find(const char *name);

#endif
