/* cmd_zoo.c - `opplace zoo MODEL [options] -o graph.json`. */
#include <stdio.h>

#include "cli/cli.h"
#include "opplace/io.h"
#include "opplace/zoo.h"

static void print_help(void)
{
    puts("usage: opplace zoo MODEL [model options] [-o graph.json]\n"
         "       opplace zoo --list\n\n"
         "Generates a benchmark training graph (forward, backward and update ops)\n"
         "as an opplace-graph file (stdout without -o), by default at the settings\n"
         "of the paper named first for it; --paper celeritas|pesto|sgdp|trinity picks\n"
         "another paper's, explicit options win, --size small gives a demo-sized graph.\n"
         "Models:");
    int n;
    const op_zoo_model *const *m = op_zoo_models(&n);
    for (int i = 0; i < n; i++)
        printf("  %-18s %s\n", m[i]->name, m[i]->summary);
}

int cmd_zoo(int argc, char **argv)
{
    static const char *const flags[] = {"list", "cpu", NULL};
    cli_args a;
    op_error err = {0};
    op_graph *g = NULL;
    int code = 0;
    if (cli_parse(&a, "zoo", argc, argv, flags, &err))
        goto fail;
    if (a.help || op_options_has(a.opts, "list")) {
        print_help();
        goto done;
    }
    if (a.n_pos != 1) {
        op_fail(&err, OP_EUSAGE, "expected one model name (see 'opplace zoo --list')");
        goto fail;
    }
    const op_zoo_model *m = op_zoo_find(a.pos[0]);
    if (!m) {
        op_fail(&err, OP_EINPUT, "unknown model '%s' (see 'opplace zoo --list')", a.pos[0]);
        goto fail;
    }
    const char *out = op_options_str(a.opts, "output", "-");
    if (!(g = m->generate(a.opts, &err))) {
        if (err.code == OP_EUSAGE) /* a bad model setting is bad input (exit 1) */
            err.code = OP_EINPUT;
        goto fail;
    }
    if (cli_check_unused(&a, &err) ||
        op_graph_write(g, out, &err))
        goto fail;
    goto done;
fail:
    code = cli_report("zoo", &err);
done:
    op_graph_free(g);
    cli_args_destroy(&a);
    return code;
}
