/* cmd_cluster.c - `opplace cluster`: write a preset cluster file. */
#include <stdio.h>

#include "cli/cli.h"
#include "opplace/io.h"

static const char HELP[] =
    "usage: opplace cluster [--preset NAME] [--gpus N] [--cpu] [-o cluster.json]\n"
    "       opplace cluster --list\n"
    "\n"
    "Writes an opplace-cluster file for N GPUs of a preset (default 4 x v100-nvlink),\n"
    "plus a host CPU device with --cpu.  Without -o it prints to stdout.\n";

int cmd_cluster(int argc, char **argv)
{
    static const char *const flags[] = {"cpu", "list", NULL};
    cli_args a;
    op_error err = {0};
    op_cluster *c = NULL;
    int code = 0;
    if (cli_parse(&a, "cluster", argc, argv, flags, &err))
        goto fail;
    if (a.help) {
        fputs(HELP, stdout);
        goto done;
    }
    if (op_options_has(a.opts, "list")) {
        int n;
        const op_preset_info *p = op_cluster_presets(&n);
        for (int i = 0; i < n; i++)
            printf("%-12s %s\n", p[i].name, p[i].summary);
        goto done;
    }
    const char *out = op_options_str(a.opts, "output", "-");
    if (a.n_pos) {
        op_fail(&err, OP_EUSAGE, "unexpected argument '%s'", a.pos[0]);
        goto fail;
    }
    if (!(c = cli_load_cluster(&a, &err)) || cli_check_unused(&a, &err) ||
        op_cluster_write(c, out, &err))
        goto fail;
    goto done;
fail:
    code = cli_report("cluster", &err);
done:
    op_cluster_free(c);
    cli_args_destroy(&a);
    return code;
}
