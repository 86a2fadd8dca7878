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
    fputs("\nCode: one folder per paper, src/placers/{pesto,celeritas,sgdp,trinity}/ (celeritas\n"
          "also holds order-place and dfs-topo); the baselines in src/placers/baselines/; auto in\n"
          "src/placers/auto.c; judging and keeping the best in src/search/.  Each folder's main\n"
          "header lists its files.  Options: opplace place --algo NAME --help.\n",
          stderr); /* stdout: one placer per line, for scripts */
    return 0;
}
