/* cmd_import.c - `opplace import model.onnx [--profile v100] -o graph.json`:
 * an ONNX model's forward graph as an opplace-graph file (src/io/onnx_import.c
 * says how nodes, sizes and costs are derived). */
#include <stdio.h>

#include "cli/cli.h"
#include "opplace/io.h"
#include "opplace/profile.h"

static void print_help(void)
{
    puts("usage: opplace import MODEL.onnx [--profile NAME] [-o graph.json]\n"
         "\n"
         "Converts an ONNX model into an opplace-graph file (stdout without -o):\n"
         "one op per node, an edge per tensor from its producer to each consumer,\n"
         "tensor bytes from the shapes in value_info, weights (initializers) as\n"
         "param_bytes, and times from the roofline model on a device profile\n"
         "(default v100).  Shapes of intermediate tensors must be in the file:\n"
         "run ONNX shape inference first, e.g.\n"
         "  python3 -c \"import onnx; m = onnx.load('m.onnx');\n"
         "              onnx.save(onnx.shape_inference.infer_shapes(m), 'm.onnx')\"\n"
         "(torch.onnx.export already stores them).  Profiles:");
    int n;
    const op_device_profile *p = op_profiles(&n);
    for (int i = 0; p && i < n; i++)
        printf("  %-6s %s\n", p[i].name, p[i].kind);
}

int cmd_import(int argc, char **argv)
{
    cli_args a;
    op_error err = {0};
    op_graph *g = NULL;
    int code = 0;
    if (cli_parse(&a, "import", argc, argv, NULL, &err))
        goto fail;
    if (a.help) {
        print_help();
        goto done;
    }
    if (a.n_pos != 1) {
        op_fail(&err, OP_EUSAGE, "expected one .onnx file (see 'opplace import --help')");
        goto fail;
    }
    const char *profile = op_options_str(a.opts, "profile", "v100");
    const char *out = op_options_str(a.opts, "output", "-");
    if (cli_check_unused(&a, &err))
        goto fail;
    if (!op_profile_find(profile)) {
        op_fail(&err, OP_EINPUT, "unknown --profile '%s' (see 'opplace import --help')",
                profile);
        goto fail;
    }
    if (!(g = op_onnx_import(a.pos[0], profile, &err)) || op_graph_write(g, out, &err))
        goto fail;
    goto done;
fail:
    code = cli_report("import", &err);
done:
    op_graph_free(g);
    cli_args_destroy(&a);
    return code;
}
