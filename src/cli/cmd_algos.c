/* cmd_algos.c - `opplace algos`: every registered placer, one line each. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "opplace/placer.h"

int cmd_algos(int argc, char **argv)
{
    if (argc > 0 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
        puts("usage: opplace algos\n\nLists every placement algorithm with its source.");
        return 0;
    }
    if (argc > 0) {
        fprintf(stderr, "opplace algos: takes no arguments\n");
        return 2;
    }
    int n;
    const op_placer *const *all = op_placers(&n);
    for (int i = 0; i < n; i++)
        printf("%-14s %s  [%s]\n", all[i]->name, all[i]->summary, all[i]->source);
    return 0;
}
