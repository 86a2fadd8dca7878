/* cmd_cluster.c - `opplace cluster`: write a preset cluster file. */
#include <stdio.h>

#include <jansson.h>

#include "cli/cli.h"
#include "opplace/io.h"
#include "opplace/profile.h"

static const char HELP[] =
    "usage: opplace cluster [--preset NAME] [--gpus N] [--cpu] [-o cluster.json]\n"
    "       opplace cluster --list\n"
    "       opplace cluster --profiles\n"
    "\n"
    "Writes an opplace-cluster file for N GPUs of a preset (default 4 x v100-nvlink),\n"
    "plus a host CPU device with --cpu.  Without -o it prints to stdout.\n"
    "--profiles prints the roofline device profiles (src/cost/profiles.c) as JSON;\n"
    "python/opplace/torch/profiles.json is this output.\n";

/* The device profiles as JSON, in table order, doubles with 17 digits. */
static int print_profiles(void)
{
    int n;
    const op_device_profile *p = op_profiles(&n);
    json_t *list = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(list, json_pack("{s:s, s:s, s:f, s:f, s:f, s:I, s:s}",
            "name", p[i].name, "kind", p[i].kind, "peak_flops", p[i].peak_flops,
            "mem_bandwidth", p[i].mem_bandwidth, "launch_us", p[i].launch_us,
            "memory_bytes", (json_int_t)p[i].memory_bytes, "source", p[i].source));
    json_t *root = json_pack("{s:s, s:o}", "format", "opplace-profiles", "profiles", list);
    int rc = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(root);
    return rc || putchar('\n') == EOF;
}

int cmd_cluster(int argc, char **argv)
{
    static const char *const flags[] = {"cpu", "list", "profiles", NULL};
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
    if (op_options_has(a.opts, "profiles")) {
        code = print_profiles();
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
