/*
 * test_onnx.c - ONNX import (src/io/onnx_import.c) and, where PyTorch is
 * installed, the PyTorch exporter (tools/export_torch.py).
 *
 * The ONNX files are built here with protobuf-c from our own schema subset
 * (src/io/onnx/onnx.proto, official field numbers), so the tests need no
 * Python: a small conv net and a chain of MatMuls are imported and their
 * ops, edges, tensor bytes (from value_info shapes), weights (param_bytes)
 * and roofline times are checked against the shapes; missing shapes and
 * symbolic dims are reported; every prefix of a model file and random bytes
 * are refused with OP_EINPUT (exit code 1), never a crash.  With
 * /usr/bin/python3 and torch: torch.onnx.export -> opplace import round trip,
 * and the exporter on resnet18 / resnet50 (--estimate); skipped otherwise.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "opplace/io.h"
#include "opplace/profile.h"
#include "testkit.h"

/* ------------------------------------------------ building ONNX in memory */

/* Every allocation of a model under construction, freed by mb_free. */
typedef struct model_builder {
    void *mem[1024];
    int n_mem;
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto opset;
    Onnx__OperatorSetIdProto *opsets[1];
    Onnx__NodeProto *nodes[64];
    Onnx__TensorProto *inits[64];
    Onnx__ValueInfoProto *inputs[8], *outputs[8], *infos[64];
} model_builder;

static void *mb_alloc(model_builder *mb, size_t n)
{
    cr_assert(mb->n_mem < 1024);
    void *p = calloc(1, n);
    cr_assert(p);
    mb->mem[mb->n_mem++] = p;
    return p;
}

static void mb_init(model_builder *mb, const char *name)
{
    memset(mb, 0, sizeof *mb);
    onnx__model_proto__init(&mb->m);
    onnx__graph_proto__init(&mb->g);
    onnx__operator_set_id_proto__init(&mb->opset);
    mb->opset.has_version = 1;
    mb->opset.version = 13;
    mb->opsets[0] = &mb->opset;
    mb->m.has_ir_version = 1;
    mb->m.ir_version = 7;
    mb->m.producer_name = (char *)"test_onnx";
    mb->m.graph = &mb->g;
    mb->m.n_opset_import = 1;
    mb->m.opset_import = mb->opsets;
    mb->g.name = (char *)name;
    mb->g.node = mb->nodes;
    mb->g.initializer = mb->inits;
    mb->g.input = mb->inputs;
    mb->g.output = mb->outputs;
    mb->g.value_info = mb->infos;
}

static void mb_free(model_builder *mb)
{
    for (int i = 0; i < mb->n_mem; i++)
        free(mb->mem[i]);
    mb->n_mem = 0;
}

/* A float tensor's ValueInfo; a NULL sym0 keeps dims[0], else dim 0 is
 * the symbolic name sym0. */
static Onnx__ValueInfoProto *mb_value(model_builder *mb, const char *name, int rank,
                                      const int64_t *dims, const char *sym0)
{
    Onnx__ValueInfoProto *v = mb_alloc(mb, sizeof *v);
    Onnx__TypeProto *ty = mb_alloc(mb, sizeof *ty);
    Onnx__TypeProto__Tensor *tt = mb_alloc(mb, sizeof *tt);
    Onnx__TensorShapeProto *sh = mb_alloc(mb, sizeof *sh);
    Onnx__TensorShapeProto__Dimension **dv = mb_alloc(mb, (size_t)(rank + 1) * sizeof *dv);
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(ty);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    for (int d = 0; d < rank; d++) {
        dv[d] = mb_alloc(mb, sizeof *dv[d]);
        onnx__tensor_shape_proto__dimension__init(dv[d]);
        if (d == 0 && sym0) {
            dv[d]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dv[d]->dim_param = (char *)sym0;
        } else {
            dv[d]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dv[d]->dim_value = dims[d];
        }
    }
    sh->n_dim = (size_t)rank;
    sh->dim = dv;
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt->shape = sh;
    ty->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    ty->tensor_type = tt;
    v->name = (char *)name;
    v->type = ty;
    return v;
}

static void mb_input(model_builder *mb, const char *name, int rank, const int64_t *dims,
                     const char *sym0)
{
    mb->inputs[mb->g.n_input++] = mb_value(mb, name, rank, dims, sym0);
}

static void mb_output(model_builder *mb, const char *name, int rank, const int64_t *dims)
{
    mb->outputs[mb->g.n_output++] = mb_value(mb, name, rank, dims, NULL);
}

static void mb_info(model_builder *mb, const char *name, int rank, const int64_t *dims)
{
    mb->infos[mb->g.n_value_info++] = mb_value(mb, name, rank, dims, NULL);
}

static void mb_weight(model_builder *mb, const char *name, int rank, const int64_t *dims)
{
    Onnx__TensorProto *t = mb_alloc(mb, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = (char *)name;
    t->has_data_type = 1;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    t->n_dims = (size_t)rank;
    t->dims = mb_alloc(mb, (size_t)rank * sizeof *t->dims);
    memcpy(t->dims, dims, (size_t)rank * sizeof *t->dims);
    mb->inits[mb->g.n_initializer++] = t;
}

/* A node; inputs and outputs are NULL-terminated lists of names. */
static Onnx__NodeProto *mb_node(model_builder *mb, const char *name, const char *type,
                                const char *const *in, const char *const *out)
{
    Onnx__NodeProto *nd = mb_alloc(mb, sizeof *nd);
    onnx__node_proto__init(nd);
    nd->name = (char *)name;
    nd->op_type = (char *)type;
    while (in[nd->n_input])
        nd->n_input++;
    while (out[nd->n_output])
        nd->n_output++;
    nd->input = (char **)in;
    nd->output = (char **)out;
    mb->nodes[mb->g.n_node++] = nd;
    return nd;
}

static void mb_attr_int(model_builder *mb, Onnx__NodeProto *nd, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = mb_alloc(mb, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->has_i = 1;
    a->i = v;
    Onnx__AttributeProto **list = mb_alloc(mb, (nd->n_attribute + 1) * sizeof *list);
    if (nd->n_attribute)
        memcpy(list, nd->attribute, nd->n_attribute * sizeof *list);
    list[nd->n_attribute++] = a;
    nd->attribute = list;
}

static size_t mb_pack(model_builder *mb, uint8_t **buf)
{
    size_t n = onnx__model_proto__get_packed_size(&mb->m);
    *buf = malloc(n ? n : 1);
    cr_assert(*buf);
    cr_assert_eq(onnx__model_proto__pack(&mb->m, *buf), n);
    return n;
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f, "cannot write %s", path);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

static const char *mb_write(model_builder *mb, const char *file)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tk_tmpdir(), file);
    uint8_t *buf;
    size_t n = mb_pack(mb, &buf);
    write_bytes(path, buf, n);
    free(buf);
    return path;
}

/* ---------------------------------------------------------- the models */

#define F 4 /* bytes per float */
static const int64_t X_DIMS[] = {2, 3, 32, 32}, W1_DIMS[] = {8, 3, 3, 3}, B1_DIMS[] = {8},
                     Y1_DIMS[] = {2, 8, 32, 32}, W2_DIMS[] = {16, 8, 3, 3},
                     Y3_DIMS[] = {2, 16, 16, 16}, Y4_DIMS[] = {2, 16, 1, 1},
                     Y5_DIMS[] = {2, 16}, W3_DIMS[] = {10, 16}, OUT_DIMS[] = {2, 10};

/* x -> Conv(+bias) -> Relu -> Conv(stride 2) -> GlobalAveragePool ->
 * Flatten -> Gemm(transB) -> logits; shapes in value_info. */
static void conv_net(model_builder *mb, int with_value_info)
{
    static const char *const c1_in[] = {"x", "w1", "b1", NULL}, *const c1_out[] = {"y1", NULL};
    static const char *const r_in[] = {"y1", NULL}, *const r_out[] = {"y2", NULL};
    static const char *const c2_in[] = {"y2", "w2", NULL}, *const c2_out[] = {"y3", NULL};
    static const char *const p_in[] = {"y3", NULL}, *const p_out[] = {"y4", NULL};
    static const char *const f_in[] = {"y4", NULL}, *const f_out[] = {"y5", NULL};
    static const char *const g_in[] = {"y5", "w3", NULL}, *const g_out[] = {"logits", NULL};
    mb_init(mb, "convnet");
    mb_input(mb, "x", 4, X_DIMS, NULL);
    mb_output(mb, "logits", 2, OUT_DIMS);
    mb_weight(mb, "w1", 4, W1_DIMS);
    mb_weight(mb, "b1", 1, B1_DIMS);
    mb_weight(mb, "w2", 4, W2_DIMS);
    mb_weight(mb, "w3", 2, W3_DIMS);
    if (with_value_info) {
        mb_info(mb, "y1", 4, Y1_DIMS);
        mb_info(mb, "y2", 4, Y1_DIMS);
        mb_info(mb, "y3", 4, Y3_DIMS);
        mb_info(mb, "y4", 4, Y4_DIMS);
        mb_info(mb, "y5", 2, Y5_DIMS);
    }
    mb_node(mb, "/block1/conv/Conv", "Conv", c1_in, c1_out);
    mb_node(mb, "/block1/relu/Relu", "Relu", r_in, r_out);
    Onnx__NodeProto *c2 = mb_node(mb, "/block2/conv/Conv", "Conv", c2_in, c2_out);
    mb_attr_int(mb, c2, "group", 1);
    mb_node(mb, "/pool/GlobalAveragePool", "GlobalAveragePool", p_in, p_out);
    mb_node(mb, "", "Flatten", f_in, f_out);
    Onnx__NodeProto *gm = mb_node(mb, "/fc/Gemm", "Gemm", g_in, g_out);
    mb_attr_int(mb, gm, "transB", 1);
}

/* h0 -> MatMul(w0) -> h1 -> ... -> h5, with w2 reused by the last MatMul. */
#define CHAIN 5
static const int64_t H_DIMS[] = {4, 64}, W_DIMS[] = {64, 64};
static void matmul_chain(model_builder *mb, int with_value_info, const char *sym0)
{
    static const char *const h[] = {"h0", "h1", "h2", "h3", "h4", "h5"};
    static const char *const w[] = {"w0", "w1", "w2", "w3", "w2"};
    static const char *ins[CHAIN][3], *outs[CHAIN][2];
    static const char *const names[] = {"mm0", "mm1", "mm2", "mm3", "mm4"};
    mb_init(mb, "chain");
    mb_input(mb, "h0", 2, H_DIMS, sym0);
    mb_output(mb, "h5", 2, H_DIMS);
    for (int i = 0; i < 4; i++)
        mb_weight(mb, w[i], 2, W_DIMS);
    for (int i = 0; i < CHAIN; i++) {
        ins[i][0] = h[i];
        ins[i][1] = w[i];
        ins[i][2] = NULL;
        outs[i][0] = h[i + 1];
        outs[i][1] = NULL;
        if (with_value_info && i + 1 < CHAIN)
            mb_info(mb, h[i + 1], 2, H_DIMS);
        mb_node(mb, names[i], "MatMul", ins[i], outs[i]);
    }
}

static op_graph *import_ok(const char *path, op_onnx_report *rep)
{
    op_error err = {0};
    op_graph *g = op_onnx_import_report(path, "v100", rep, &err);
    cr_assert(g, "import of %s failed: %s", path, err.msg);
    return g;
}

static int find(const op_graph *g, const char *name)
{
    int i = op_graph_find(g, name);
    cr_assert(i >= 0, "no op named %s", name);
    return i;
}

static double time_of(const op_graph *g, int op)
{
    return op_graph_time_on_kind(g, op, "gpu");
}

/* ------------------------------------------------------------- tests */

Test(onnx_import, conv_net_ops_edges_bytes_and_params)
{
    model_builder mb;
    conv_net(&mb, 1);
    const char *path = mb_write(&mb, "convnet.onnx");
    op_onnx_report rep;
    op_graph *g = import_ok(path, &rep);
    cr_assert_eq(g->n_ops, 6);
    cr_assert_eq(g->n_edges, 5, "a chain of 6 nodes has 5 edges, got %d", g->n_edges);
    cr_assert_eq(rep.missing_shapes, 0);
    cr_assert_eq(rep.initializers, 4);
    cr_assert_eq(g->batch_size, 2);
    cr_assert_str_eq(g->name, "convnet");

    int c1 = find(g, "/block1/conv/Conv"), relu = find(g, "/block1/relu/Relu");
    int c2 = find(g, "/block2/conv/Conv"), pool = find(g, "/pool/GlobalAveragePool");
    int flat = find(g, "Flatten_4"), fc = find(g, "/fc/Gemm");
    int64_t y1 = 2 * 8 * 32 * 32 * F, y3 = 2 * 16 * 16 * 16 * F;
    cr_assert_eq(g->output_bytes[c1], y1);
    cr_assert_eq(g->output_bytes[relu], y1);
    cr_assert_eq(g->output_bytes[c2], y3);
    cr_assert_eq(g->output_bytes[pool], 2 * 16 * F);
    cr_assert_eq(g->output_bytes[flat], 2 * 16 * F);
    cr_assert_eq(g->output_bytes[fc], 2 * 10 * F);
    /* weights: conv1 holds w1 and its bias, the others their weight */
    cr_assert_eq(g->param_bytes[c1], (8 * 3 * 3 * 3 + 8) * F);
    cr_assert_eq(g->param_bytes[c2], 16 * 8 * 3 * 3 * F);
    cr_assert_eq(g->param_bytes[fc], 10 * 16 * F);
    cr_assert_eq(g->param_bytes[relu] + g->param_bytes[pool] + g->param_bytes[flat], 0);
    /* each edge carries the tensor between the two nodes */
    int e = op_graph_find_edge(g, c1, relu);
    cr_assert(e >= 0);
    cr_assert_eq(g->edge_bytes[e], y1);
    e = op_graph_find_edge(g, c2, pool);
    cr_assert(e >= 0);
    cr_assert_eq(g->edge_bytes[e], y3);
    cr_assert(op_graph_find_edge(g, flat, fc) >= 0);
    /* layer scopes: the first two levels of the module path */
    cr_assert_str_eq(g->layer_name[g->layer[c1]], "block1/conv");
    cr_assert_str_eq(g->layer_name[g->layer[fc]], "fc");
    cr_assert_eq(g->layer[flat], OP_NONE);
    /* roofline times from the shapes: Conv = 2*|Y|*C*kh*kw (+|Y| bias) */
    const op_device_profile *v100 = op_profile_find("v100");
    double conv1_flops = 2.0 * (2 * 8 * 32 * 32) * (3 * 3 * 3) + 2 * 8 * 32 * 32;
    double conv1_bytes = (double)(2 * 3 * 32 * 32 * F) + (8 * 27 + 8) * F + (double)y1;
    cr_assert_float_eq(time_of(g, c1), op_roofline_us(v100, conv1_flops, conv1_bytes), 1e-9);
    double gemm_flops = 2.0 * (2 * 10) * 16;
    double gemm_bytes = (2 * 16 + 10 * 16 + 2 * 10) * F;
    cr_assert_float_eq(time_of(g, fc), op_roofline_us(v100, gemm_flops, gemm_bytes), 1e-9);
    /* anything else: one FLOP per output element, bytes in + out */
    cr_assert_float_eq(time_of(g, relu), op_roofline_us(v100, 2 * 8 * 32 * 32, 2.0 * y1), 1e-9);
    op_graph_free(g);
    mb_free(&mb);
}

Test(onnx_import, matmul_chain_shared_weight_counted_once)
{
    model_builder mb;
    matmul_chain(&mb, 1, NULL);
    op_onnx_report rep;
    op_graph *g = import_ok(mb_write(&mb, "chain.onnx"), &rep);
    cr_assert_eq(g->n_ops, CHAIN);
    cr_assert_eq(g->n_edges, CHAIN - 1);
    int64_t params = 0;
    for (int i = 0; i < CHAIN; i++) {
        cr_assert_eq(g->output_bytes[i], 4 * 64 * F);
        params += g->param_bytes[i];
        if (i + 1 < CHAIN) {
            int e = op_graph_find_edge(g, i, i + 1);
            cr_assert(e >= 0, "mm%d -> mm%d missing", i, i + 1);
            cr_assert_eq(g->edge_bytes[e], 4 * 64 * F);
        }
    }
    cr_assert_eq(params, 4 * 64 * 64 * F, "4 distinct weights, the shared one once");
    cr_assert_eq(g->param_bytes[4], 0, "w2 already belongs to mm2");
    /* MatMul FLOPs: 2 * |Y| * K */
    const op_device_profile *v100 = op_profile_find("v100");
    double expect = op_roofline_us(v100, 2.0 * 4 * 64 * 64, (4 * 64 * 2 + 64 * 64) * F);
    cr_assert_float_eq(time_of(g, 1), expect, 1e-9);
    op_graph_free(g);
    mb_free(&mb);
}

Test(onnx_import, missing_shapes_fall_back_and_are_reported)
{
    model_builder mb;
    matmul_chain(&mb, 0, "batch");
    op_onnx_report rep;
    op_graph *g = import_ok(mb_write(&mb, "noshape.onnx"), &rep);
    cr_assert_eq(g->n_ops, CHAIN);
    cr_assert_eq(rep.missing_shapes, CHAIN - 1, "h1..h4 have no shape, h5 is a graph output");
    cr_assert_eq(rep.symbolic_dims, 1);
    cr_assert_eq(g->batch_size, -1, "a symbolic batch is not a batch size");
    /* fallback: the largest input of mm0 is its 64x64 weight */
    cr_assert_eq(g->output_bytes[0], 64 * 64 * F);
    cr_assert_eq(g->output_bytes[CHAIN - 1], 4 * 64 * F, "h5 has its own shape");
    op_graph_free(g);
    mb_free(&mb);

    /* the command says so on stderr and still succeeds */
    matmul_chain(&mb, 0, NULL);
    const char *path = mb_write(&mb, "noshape2.onnx");
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s import %s -o %s/noshape.json", OPPLACE_BIN, path, tk_tmpdir());
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    cr_assert(strstr(out, "shape inference"), "no warning: %s", out);
    free(out);
    mb_free(&mb);
}

Test(onnx_import, cli_writes_a_graph_that_info_reads)
{
    model_builder mb;
    conv_net(&mb, 1);
    const char *path = mb_write(&mb, "cli.onnx");
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s import %s --profile k80 -o %s/cli.json && %s info %s/cli.json --json",
             OPPLACE_BIN, path, tk_tmpdir(), OPPLACE_BIN, tk_tmpdir());
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    cr_assert(strstr(out, "\"ops\": 6") && strstr(out, "\"edges\": 5"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s import %s --profile nosuchgpu -o %s/x.json", OPPLACE_BIN, path,
             tk_tmpdir());
    cr_assert_eq(tk_run(cmd, &out), 1, "%s", out);
    cr_assert(strstr(out, "nosuchgpu"), "%s", out);
    free(out);
    mb_free(&mb);
}

Test(onnx_import, every_truncation_is_refused)
{
    model_builder mb;
    conv_net(&mb, 1);
    uint8_t *buf;
    size_t n = mb_pack(&mb, &buf);
    char path[256];
    snprintf(path, sizeof path, "%s/trunc.onnx", tk_tmpdir());
    for (size_t len = 0; len < n; len++) {
        write_bytes(path, buf, len);
        op_error err = {0};
        op_graph *g = op_onnx_import(path, NULL, &err);
        cr_assert_null(g, "a %zu of %zu byte prefix was accepted", len, n);
        cr_assert_eq(err.code, OP_EINPUT, "prefix %zu: code %d (%s)", len, err.code, err.msg);
        cr_assert(strstr(err.msg, "trunc.onnx"), "message does not name the file: %s", err.msg);
    }
    /* and the command exits with 1 and a message */
    write_bytes(path, buf, n / 2);
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s import %s -o %s/t.json", OPPLACE_BIN, path, tk_tmpdir());
    cr_assert_eq(tk_run(cmd, &out), 1, "%s", out);
    cr_assert(strstr(out, "ONNX"), "%s", out);
    free(out);
    free(buf);
    mb_free(&mb);
}

Test(onnx_import, garbage_and_other_formats_are_refused)
{
    char path[256], cmd[1024], *out = NULL;
    snprintf(path, sizeof path, "%s/garbage.onnx", tk_tmpdir());
    uint64_t s = 42;
    uint8_t bytes[4096];
    for (int trial = 0; trial < 300; trial++) {
        size_t len = 1 + tk_rand(&s) % sizeof bytes;
        for (size_t i = 0; i < len; i++)
            bytes[i] = (uint8_t)tk_rand(&s);
        write_bytes(path, bytes, len);
        op_error err = {0};
        op_graph *g = op_onnx_import(path, "v100", &err);
        cr_assert_null(g, "random bytes accepted (trial %d)", trial);
        cr_assert_eq(err.code, OP_EINPUT, "trial %d: %s", trial, err.msg);
    }
    static const char json[] = "{\"format\": \"opplace-graph\", \"version\": 1}\n";
    write_bytes(path, json, sizeof json - 1);
    snprintf(cmd, sizeof cmd, "%s import %s -o %s/g.json", OPPLACE_BIN, path, tk_tmpdir());
    cr_assert_eq(tk_run(cmd, &out), 1, "%s", out);
    cr_assert(strstr(out, "garbage.onnx") && strstr(out, "ONNX"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s import %s/does-not-exist.onnx", OPPLACE_BIN, tk_tmpdir());
    cr_assert_eq(tk_run(cmd, &out), 1, "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s import", OPPLACE_BIN);
    cr_assert_eq(tk_run(cmd, &out), 2, "no file is a usage error: %s", out);
    free(out);
}

Test(onnx_import, invalid_graphs_are_refused)
{
    /* a tensor assigned by two nodes */
    model_builder mb;
    matmul_chain(&mb, 1, NULL);
    mb.nodes[3]->output[0] = (char *)"h2"; /* mm1 already produces h2 */
    op_error err = {0};
    cr_assert_null(op_onnx_import(mb_write(&mb, "twice.onnx"), NULL, &err));
    cr_assert_eq(err.code, OP_EINPUT);
    cr_assert(strstr(err.msg, "h2"), "%s", err.msg);
    mb_free(&mb);

    /* a cycle: mm0 reads mm4's output */
    matmul_chain(&mb, 1, NULL);
    mb.nodes[0]->input[0] = (char *)"h5";
    op_error err2 = {0};
    cr_assert_null(op_onnx_import(mb_write(&mb, "cycle.onnx"), NULL, &err2));
    cr_assert_eq(err2.code, OP_EINPUT);
    cr_assert(strstr(err2.msg, "cycle"), "%s", err2.msg);
    mb_free(&mb);

    /* no opset, no nodes, absurd sizes */
    matmul_chain(&mb, 1, NULL);
    mb.m.n_opset_import = 0;
    op_error err3 = {0};
    cr_assert_null(op_onnx_import(mb_write(&mb, "noopset.onnx"), NULL, &err3));
    cr_assert(strstr(err3.msg, "opset"), "%s", err3.msg);
    mb.m.n_opset_import = 1;
    mb.g.n_node = 0;
    op_error err4 = {0};
    cr_assert_null(op_onnx_import(mb_write(&mb, "nonodes.onnx"), NULL, &err4));
    cr_assert(strstr(err4.msg, "no nodes"), "%s", err4.msg);
    mb.g.n_node = CHAIN;
    mb.inits[0]->dims[0] = (int64_t)1 << 40;
    mb.inits[0]->dims[1] = (int64_t)1 << 40;
    op_error err5 = {0};
    cr_assert_null(op_onnx_import(mb_write(&mb, "huge.onnx"), NULL, &err5));
    cr_assert_eq(err5.code, OP_EINPUT, "%s", err5.msg);
    mb.inits[0]->dims[0] = -3;
    op_error err6 = {0};
    cr_assert_null(op_onnx_import(mb_write(&mb, "negative.onnx"), NULL, &err6));
    cr_assert(strstr(err6.msg, "negative"), "%s", err6.msg);
    mb_free(&mb);
}

/* ------------------------------------------- with PyTorch, when present */

static int have_torch(void)
{
    return tk_run("/usr/bin/python3 -c 'import torch'", NULL) == 0;
}

Test(onnx_torch, torch_onnx_export_round_trip, .timeout = 120)
{
    if (!have_torch())
        cr_skip_test("/usr/bin/python3 cannot import torch (apt-get install python3-torch)");
    const char *dir = tk_tmpdir();
    char cmd[2048], *out = NULL;
    /* Linear -> ReLU -> Linear -> Softmax: 4 ONNX nodes (Gemm, Relu, Gemm, Softmax) */
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c \"import torch; torch.manual_seed(0); "
             "m = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), "
             "torch.nn.Linear(64, 10), torch.nn.Softmax(dim=1)).eval(); "
             "torch.onnx.export(m, torch.randn(8, 32), '%s/tiny.onnx', opset_version=13)\" "
             "&& %s import %s/tiny.onnx -o %s/tiny.json && %s info %s/tiny.json --json",
             dir, OPPLACE_BIN, dir, dir, OPPLACE_BIN, dir);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    cr_assert(strstr(out, "\"ops\": 4") && strstr(out, "\"edges\": 3"), "%s", out);
    free(out);
    char path[512];
    snprintf(path, sizeof path, "%s/tiny.json", dir);
    op_error err = {0};
    op_graph *g = op_graph_read(path, &err);
    cr_assert(g, "%s", err.msg);
    int64_t params = 0;
    for (int i = 0; i < g->n_ops; i++)
        params += g->param_bytes[i];
    cr_assert_eq(params, (32 * 64 + 64 + 64 * 10 + 10) * F, "the weights of both layers");
    cr_assert_eq(g->batch_size, 8);
    op_graph_free(g);
}

static void export_and_check(const char *model, int min_ops)
{
    const char *dir = tk_tmpdir();
    char cmd[2048], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 %s/../../tools/export_torch.py %s --batch 2 --estimate v100 "
             "-o %s/%s.json && %s info %s/%s.json --json",
             OPPLACE_TEST_DATA, model, dir, model, OPPLACE_BIN, dir, model);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    char *p = strstr(out, "\"ops\": ");
    cr_assert(p, "%s", out);
    int ops = atoi(p + 7);
    cr_assert(ops >= min_ops, "%s: %d ops, expected at least %d", model, ops, min_ops);
    cr_assert(strstr(out, "\"colocation_groups\": 0") == NULL, "weights must be colocated");
    free(out);
}

Test(onnx_torch, exporter_resnet18_and_resnet50, .timeout = 240)
{
    if (!have_torch())
        cr_skip_test("/usr/bin/python3 cannot import torch (apt-get install python3-torch)");
    /* forward + backward + update: resnet18 has ~70 forward ops, resnet50 ~175 */
    export_and_check("resnet18", 3 * 60);
    export_and_check("resnet50", 3 * 150);
}
