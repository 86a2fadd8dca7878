/* graph_write.c - writing an opplace-graph file (formats.md section 1). */
#include "core/file_util.h"
#include "opplace/io.h"

static void put_opt_string(FILE *f, const char *key, const char *v)
{
    fprintf(f, ", \"%s\": ", key);
    if (v)
        op_json_put_string(f, v);
    else
        fputs("null", f);
}

static void put_time(FILE *f, const op_graph *g, int i)
{
    int lo = g->time_off[i], hi = g->time_off[i + 1];
    if (g->time_kind[lo] == OP_ANY_KIND) {
        op_json_put_number(f, g->time_val[lo]);
        return;
    }
    fputc('{', f);
    for (int e = lo; e < hi; e++) {
        if (e > lo)
            fputs(", ", f);
        op_json_put_string(f, g->kind_name[g->time_kind[e]]);
        fputs(": ", f);
        op_json_put_number(f, g->time_val[e]);
    }
    fputc('}', f);
}

static void put_op(FILE *f, const op_graph *g, int i)
{
    fputs("    {\"name\": ", f);
    op_json_put_string(f, g->op_name[i]);
    fputs(", \"type\": ", f);
    op_json_put_string(f, g->op_type[i]);
    fputs(", \"time_us\": ", f);
    put_time(f, g, i);
    fprintf(f, ", \"output_bytes\": %lld, \"param_bytes\": %lld, \"temp_bytes\": %lld",
            (long long)g->output_bytes[i], (long long)g->param_bytes[i],
            (long long)g->temp_bytes[i]);
    put_opt_string(f, "layer", g->layer[i] == OP_NONE ? NULL : g->layer_name[g->layer[i]]);
    put_opt_string(f, "colocate",
                   g->colocate[i] == OP_NONE ? NULL : g->group_name[g->colocate[i]]);
    put_opt_string(f, "kind", g->kind[i] == OP_NONE ? NULL : g->kind_name[g->kind[i]]);
    put_opt_string(f, "device", g->device[i]);
    fputc('}', f);
}

op_status op_graph_write(const op_graph *g, const char *path, op_error *err)
{
    op_atomic a;
    FILE *f = op_json_doc_open(&a, path, "opplace-graph", err);
    if (!f)
        return OP_EIO;
    fputs(",\n  \"name\": ", f);
    op_json_put_string(f, g->name);
    if (g->batch_size > 0)
        fprintf(f, ",\n  \"batch_size\": %lld", (long long)g->batch_size);
    fputs(",\n  \"ops\": [\n", f);
    for (int i = 0; i < g->n_ops; i++) {
        put_op(f, g, i);
        fputs(i + 1 < g->n_ops ? ",\n" : "\n", f);
    }
    fputs("  ],\n  \"edges\": [\n", f);
    for (int e = 0; e < g->n_edges; e++) {
        fputs("    {\"src\": ", f);
        op_json_put_string(f, g->op_name[g->edge_src[e]]);
        fputs(", \"dst\": ", f);
        op_json_put_string(f, g->op_name[g->edge_dst[e]]);
        fprintf(f, ", \"bytes\": %lld}%s", (long long)g->edge_bytes[e],
                e + 1 < g->n_edges ? ",\n" : "\n");
    }
    fputs("  ]\n}\n", f);
    return op_atomic_commit(&a, err);
}
