/*
 * coarseners.c - the list of coarsening methods (coarseners.h).  The
 * methods are the placers' own (Celeritas's fusion, Pesto's batch
 * coarsening), so their list sits with the placers, above coarsen/ and its
 * coarse graphs.
 *
 * To add a method: define `const op_coarsener op_coarsener_<name>` in its
 * own file, declare it below and add it to COARSENERS.  `opplace coarsen
 * --algo NAME`, SGDP's warm start and the tests read this list.
 */
#include <string.h>

#include "placers/coarseners.h"

extern const op_coarsener op_coarsener_celeritas;
extern const op_coarsener op_coarsener_pesto;

static const op_coarsener *const COARSENERS[] = {
    &op_coarsener_celeritas,
    &op_coarsener_pesto,
};

const op_coarsener *const *op_coarseners(int *count)
{
    *count = (int)(sizeof COARSENERS / sizeof COARSENERS[0]);
    return COARSENERS;
}

const op_coarsener *op_coarsener_find(const char *name)
{
    int n;
    const op_coarsener *const *all = op_coarseners(&n);
    for (int i = 0; i < n; i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}
