/*
 * onnx_import.c - an opplace graph from an ONNX model (`opplace import`).
 *
 * What it builds: the model's *forward* dataflow graph, one op per ONNX node
 * (ONNX holds inference graphs; use tools/export_torch.py or the zoo for
 * training graphs).  An edge runs from the node that produces a tensor to
 * every node that consumes it, carrying the tensor's bytes.  Graph inputs and
 * initializers are not ops: an initializer (a weight) adds its bytes to the
 * param_bytes of the first node that reads it.
 *
 * Where sizes come from: the shapes stored in the model (graph inputs and
 * outputs, value_info, initializer dims).  ONNX files need not carry shapes
 * of intermediate tensors, so users should run ONNX shape inference first
 * (torch.onnx.export does it already).  A node output with no shape gets the
 * size of the node's largest input (right for elementwise ops, a guess
 * otherwise) and is counted in op_onnx_report; symbolic dimensions
 * ("batch") count as 1.
 *
 * Cost: the roofline model of opplace/profile.h.  FLOPs follow the usual
 * counting (one multiply-add = 2 FLOPs): Conv 2*|Y|*C/g*prod(k), ConvTranspose
 * 2*|X|*M/g*prod(k), MatMul 2*|Y|*K, Gemm 2*|Y|*K (+|Y| for C), everything
 * else one FLOP per output element (pooling: per window element); bytes
 * moved are the bytes read plus the bytes written.
 *
 * Hostile input: the file is parsed by protobuf-c (src/io/onnx/onnx.proto,
 * our subset of the official schema with the official field numbers).  A
 * parse failure, a missing graph or opset, a tensor produced twice or sizes
 * beyond the caps below are OP_EINPUT with the file name, never a crash.
 * Subgraphs (If/Loop/Scan bodies) are not expanded: the node is one op.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_hooks.h"
#include "core/file_util.h"
#include "core/graph_builder.h"
#include "core/name_index.h"
#include "onnx.pb-c.h"
#include "opplace/graph.h"
#include "opplace/io.h"
#include "opplace/profile.h"
#include "opplace/limits.h"

#define ONNX_MAX_FILE ((size_t)2 << 30) /* protobuf's own message limit */
#define ONNX_MAX_NODES 1000000 /* checked on the wire, before unpacking (about
                                  150 bytes of memory each, even when empty) */
#define ONNX_MAX_RANK 8                /* dims kept for FLOP formulas */
#define ONNX_MAX_TENSOR_BYTES 1e15     /* a size beyond this is garbage */

typedef struct tensor {
    const char *name;   /* points into the unpacked model */
    double elems;       /* number of elements (when known) */
    int elem_size;      /* bytes per element */
    int known;          /* shape known (from the file or resolved) */
    int rank;           /* -1: dims not kept */
    int64_t dims[ONNX_MAX_RANK];
    int producer;       /* node index, or -1 */
    int initializer;    /* 1 for weights */
    int claimed;        /* initializer bytes already given to an op */
    int symbolic0;      /* dimension 0 is symbolic (a dynamic batch) */
} tensor;

typedef struct importer {
    const char *path;
    Onnx__GraphProto *g;
    tensor *t;
    int n_t;
    size_t cap_t;
    op_name_index ix;
    op_onnx_report *rep;
} importer;

static int elem_size_of(int data_type)
{
    switch (data_type) {
    case 2: case 3: case 9: case 17: case 18: case 19: case 20: return 1; /* u8 i8 bool f8 */
    case 4: case 5: case 10: case 16: return 2;                          /* u16 i16 f16 bf16 */
    case 7: case 11: case 13: case 14: return 8;                         /* i64 f64 u64 c64 */
    case 15: return 16;                                                  /* c128 */
    default: return 4;                                                   /* f32 i32 u32, unknown */
    }
}

static double tensor_bytes(const tensor *t)
{
    return t && t->known ? t->elems * t->elem_size : 0.0;
}

/* Index of the tensor called name, added (unknown) if new; -1 on OOM. */
static int tensor_get(importer *im, const char *name, op_error *err)
{
    int i = op_name_index_get(&im->ix, name);
    if (i >= 0)
        return i;
    if (op_reserve((void **)&im->t, sizeof *im->t, &im->cap_t, (size_t)im->n_t + 1, err))
        return -1;
    tensor *t = &im->t[im->n_t];
    memset(t, 0, sizeof *t);
    t->name = name;
    t->elem_size = 4;
    t->rank = -1;
    t->producer = -1;
    if (op_name_index_put(&im->ix, name, im->n_t, err) == -2)
        return -1;
    return im->n_t++;
}

static const tensor *tensor_find(const importer *im, const char *name)
{
    int i = name && *name ? op_name_index_get(&im->ix, name) : -1;
    return i >= 0 ? &im->t[i] : NULL;
}

static op_status set_shape(importer *im, tensor *t, size_t rank, const int64_t *dims,
                           Onnx__TensorShapeProto__Dimension **sym, op_error *err)
{
    double n = 1;
    t->rank = rank <= ONNX_MAX_RANK ? (int)rank : -1;
    for (size_t d = 0; d < rank; d++) {
        int64_t v = 1;
        if (dims)
            v = dims[d];
        else if (sym[d] && sym[d]->value_case ==
                               ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            v = sym[d]->dim_value;
        else {
            im->rep->symbolic_dims++;
            t->symbolic0 |= d == 0;
        }
        if (v < 0)
            return op_fail(err, OP_EINPUT, "%s: tensor '%s' has negative dimension %lld",
                           im->path, t->name, (long long)v);
        if (t->rank > 0)
            t->dims[d] = v;
        n *= (double)v;
    }
    if (n * t->elem_size > ONNX_MAX_TENSOR_BYTES)
        return op_fail(err, OP_EINPUT, "%s: tensor '%s' would hold %.3g bytes; refusing it",
                       im->path, t->name, n * t->elem_size);
    t->elems = n;
    t->known = 1;
    return OP_OK;
}

static op_status add_value_infos(importer *im, Onnx__ValueInfoProto **v, size_t n, op_error *err)
{
    for (size_t i = 0; i < n; i++) {
        if (!v[i] || !v[i]->name || !*v[i]->name)
            continue;
        int k = tensor_get(im, v[i]->name, err);
        if (k < 0)
            return OP_ENOMEM;
        tensor *t = &im->t[k];
        const Onnx__TypeProto *ty = v[i]->type;
        if (t->known || !ty || ty->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
            !ty->tensor_type)
            continue;
        const Onnx__TypeProto__Tensor *tt = ty->tensor_type;
        if (tt->has_elem_type)
            t->elem_size = elem_size_of(tt->elem_type);
        if (tt->shape && set_shape(im, t, tt->shape->n_dim, NULL, tt->shape->dim, err))
            return err ? err->code : OP_EINPUT;
    }
    return OP_OK;
}

static op_status add_initializers(importer *im, op_error *err)
{
    for (size_t i = 0; i < im->g->n_initializer; i++) {
        const Onnx__TensorProto *init = im->g->initializer[i];
        if (!init || !init->name || !*init->name)
            continue;
        int k = tensor_get(im, init->name, err);
        if (k < 0)
            return OP_ENOMEM;
        tensor *t = &im->t[k];
        t->initializer = 1;
        t->elem_size = elem_size_of(init->has_data_type ? init->data_type : 1);
        t->known = 0;
        if (set_shape(im, t, init->n_dims, init->dims, NULL, err))
            return err ? err->code : OP_EINPUT;
        im->rep->initializers++;
    }
    return OP_OK;
}

/* Record which node produces each tensor (ONNX graphs are in SSA form). */
static op_status add_producers(importer *im, op_error *err)
{
    for (size_t i = 0; i < im->g->n_node; i++) {
        const Onnx__NodeProto *nd = im->g->node[i];
        if (!nd)
            return op_fail(err, OP_EINPUT, "%s: node %zu is empty", im->path, i);
        for (size_t o = 0; o < nd->n_output; o++) {
            if (!nd->output[o] || !*nd->output[o])
                continue;
            int k = tensor_get(im, nd->output[o], err);
            if (k < 0)
                return OP_ENOMEM;
            if (im->t[k].initializer)
                return op_fail(err, OP_EINPUT,
                               "%s: tensor '%s' is an initializer (a weight) but node %zu also "
                               "produces it; an ONNX graph assigns each tensor once",
                               im->path, nd->output[o], i);
            if (im->t[k].producer >= 0)
                return op_fail(err, OP_EINPUT,
                               "%s: tensor '%s' is produced twice (nodes %d and %zu); "
                               "an ONNX graph assigns each tensor once",
                               im->path, nd->output[o], im->t[k].producer, i);
            im->t[k].producer = (int)i;
        }
    }
    return OP_OK;
}

static int64_t attr_int(const Onnx__NodeProto *nd, const char *name, int64_t dflt)
{
    for (size_t a = 0; a < nd->n_attribute; a++) {
        const Onnx__AttributeProto *at = nd->attribute[a];
        if (at && at->name && !strcmp(at->name, name) && at->has_i)
            return at->i;
    }
    return dflt;
}

static double attr_ints_product(const Onnx__NodeProto *nd, const char *name)
{
    for (size_t a = 0; a < nd->n_attribute; a++) {
        const Onnx__AttributeProto *at = nd->attribute[a];
        if (at && at->name && !strcmp(at->name, name) && at->n_ints > 0) {
            double p = 1;
            for (size_t k = 0; k < at->n_ints; k++)
                p *= at->ints[k] > 0 ? (double)at->ints[k] : 1.0;
            return p;
        }
    }
    return 1;
}

static const tensor *node_in(const importer *im, const Onnx__NodeProto *nd, size_t k)
{
    return k < nd->n_input ? tensor_find(im, nd->input[k]) : NULL;
}

/* Product of dims[1..rank-1] of a weight tensor, or -1 when unknown. */
static double inner_product(const tensor *w)
{
    if (!w || !w->known || w->rank < 2)
        return -1;
    double p = 1;
    for (int d = 1; d < w->rank; d++)
        p *= (double)w->dims[d];
    return p;
}

static double node_flops(const importer *im, const Onnx__NodeProto *nd, double out_elems)
{
    const char *ty = nd->op_type ? nd->op_type : "";
    const tensor *x = node_in(im, nd, 0), *w = node_in(im, nd, 1);
    if (!strcmp(ty, "Conv")) {
        double inner = inner_product(w);
        if (inner > 0)
            return 2 * out_elems * inner + (nd->n_input > 2 ? out_elems : 0);
    } else if (!strcmp(ty, "ConvTranspose")) {
        double inner = inner_product(w);
        if (inner > 0 && x && x->known)
            return 2 * x->elems * inner;
    } else if (!strcmp(ty, "MatMul")) {
        if (x && x->known && x->rank >= 1)
            return 2 * out_elems * (double)x->dims[x->rank - 1];
    } else if (!strcmp(ty, "Gemm")) {
        if (x && x->known && x->rank == 2) {
            double k = (double)(attr_int(nd, "transA", 0) ? x->dims[0] : x->dims[1]);
            return 2 * out_elems * k + (nd->n_input > 2 ? out_elems : 0);
        }
    } else if (strstr(ty, "Pool") && strncmp(ty, "Global", 6) != 0) {
        return out_elems * attr_ints_product(nd, "kernel_shape");
    } else if (!strncmp(ty, "Global", 6) && x && x->known) {
        return x->elems;
    }
    return out_elems;
}

/* Give unknown-shaped outputs of node i the size of its largest input. */
static void resolve_outputs(importer *im, const Onnx__NodeProto *nd)
{
    double fallback = 0, fallback_elems = 0;
    int fallback_size = 4;
    for (size_t k = 0; k < nd->n_input; k++) {
        const tensor *t = node_in(im, nd, k);
        if (t && tensor_bytes(t) > fallback) {
            fallback = tensor_bytes(t);
            fallback_elems = t->elems;
            fallback_size = t->elem_size;
        }
    }
    for (size_t o = 0; o < nd->n_output; o++) {
        int k = nd->output[o] && *nd->output[o] ? op_name_index_get(&im->ix, nd->output[o]) : -1;
        if (k < 0 || im->t[k].known)
            continue;
        im->t[k].known = 1;
        im->t[k].rank = -1;
        im->t[k].elems = fallback_elems;
        im->t[k].elem_size = fallback_size;
        im->rep->missing_shapes++;
    }
}

/* Scope from a torch-style node name "/layer1/layer1.0/conv1/Conv": the
 * first two levels of its module path ("layer1/layer1.0"), or "" if none. */
static void layer_of(const char *name, char *out, size_t cap)
{
    out[0] = '\0';
    const char *s = name;
    while (*s == '/')
        s++;
    const char *last = strrchr(s, '/');
    if (!last)
        return;
    const char *cut = strchr(s, '/');
    if (cut && cut < last) {
        const char *second = strchr(cut + 1, '/');
        if (second && second <= last)
            last = second;
    }
    size_t n = (size_t)(last - s);
    if (n >= cap)
        n = cap - 1;
    memcpy(out, s, n);
    out[n] = '\0';
}

static op_status add_node_op(importer *im, op_graph_builder *b, size_t i,
                             const op_device_profile *prof, op_error *err)
{
    const Onnx__NodeProto *nd = im->g->node[i];
    resolve_outputs(im, nd);
    double out_bytes = 0, out_elems = 0, in_bytes = 0, params = 0;
    for (size_t o = 0; o < nd->n_output; o++) {
        const tensor *t = tensor_find(im, nd->output[o]);
        out_bytes += tensor_bytes(t);
        out_elems += t && t->known ? t->elems : 0;
    }
    for (size_t k = 0; k < nd->n_input; k++) {
        int ti = nd->input[k] && *nd->input[k] ? op_name_index_get(&im->ix, nd->input[k]) : -1;
        if (ti < 0)
            continue;
        tensor *t = &im->t[ti];
        in_bytes += tensor_bytes(t);
        if (t->initializer && !t->claimed) {
            params += tensor_bytes(t);
            t->claimed = 1;
        }
    }
    const char *type = nd->op_type && *nd->op_type ? nd->op_type : "Op";
    char name[512], layer[512];
    if (nd->name && *nd->name)
        snprintf(name, sizeof name, "%s", nd->name);
    else
        snprintf(name, sizeof name, "%s_%zu", type, i);
    /* ONNX does not require unique node names: a repeated name becomes
     * "name#i" (i its node index), or "name#i#k" with the smallest k >= 2
     * that is free, so renaming is stable for a given file */
    if (op_graph_builder_find(b, name) >= 0) {
        size_t len = strlen(name);
        if (len > 440)
            len = 440;
        snprintf(name + len, sizeof name - len, "#%zu", i);
        size_t len2 = strlen(name);
        for (long k = 2; op_graph_builder_find(b, name) >= 0; k++)
            snprintf(name + len2, sizeof name - len2, "#%ld", k);
    }
    layer_of(name, layer, sizeof layer);
    if (out_bytes > (double)OP_MAX_BYTES || params > (double)OP_MAX_BYTES)
        return op_fail(err, OP_EINPUT, "%s: node %zu ('%s'): its %s hold %.3g bytes, above the "
                       "2^50 bytes opplace accepts for one op", im->path, i, name,
                       out_bytes > (double)OP_MAX_BYTES ? "outputs" : "weights",
                       out_bytes > (double)OP_MAX_BYTES ? out_bytes : params);
    double flops = node_flops(im, nd, out_elems);
    op_op_spec spec = {.name = name,
                       .type = type,
                       .time_us = op_roofline_us(prof, flops, in_bytes + out_bytes),
                       .output_bytes = (int64_t)out_bytes,
                       .param_bytes = (int64_t)params,
                       .layer = layer[0] ? layer : NULL};
    if (!strcmp(type, "If") || !strcmp(type, "Loop") || !strcmp(type, "Scan"))
        im->rep->subgraphs_skipped++;
    return op_graph_add_op(b, &spec, err) < 0 ? (err ? err->code : OP_EINPUT) : OP_OK;
}

static op_status add_node_edges(importer *im, op_graph_builder *b, size_t i, op_error *err)
{
    const Onnx__NodeProto *nd = im->g->node[i];
    for (size_t k = 0; k < nd->n_input; k++) {
        const tensor *t = tensor_find(im, nd->input[k]);
        if (!t || t->producer < 0)
            continue; /* graph input, weight, or an omitted optional input */
        if (t->producer == (int)i)
            return op_fail(err, OP_EINPUT, "%s: node %zu reads its own output '%s'", im->path,
                           i, t->name);
        if (op_graph_add_edge(b, t->producer, (int)i, (int64_t)tensor_bytes(t), err))
            return err ? err->code : OP_EINPUT;
    }
    return OP_OK;
}

/* Batch size: dimension 0 of the first graph input that is not a weight. */
static int64_t batch_size_of(const importer *im)
{
    for (size_t i = 0; i < im->g->n_input; i++) {
        const Onnx__ValueInfoProto *v = im->g->input[i];
        const tensor *t = v ? tensor_find(im, v->name) : NULL;
        if (t && !t->initializer && t->known && t->rank >= 1 && !t->symbolic0 &&
            t->dims[0] > 0)
            return t->dims[0];
    }
    return -1;
}

static void default_name(const char *path, char *out, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(out, cap, "%s", base);
    char *dot = strrchr(out, '.');
    if (dot && dot != out)
        *dot = '\0';
}

/* Protocol-buffer wire scanning, enough to count the nodes of the graph
 * before protobuf-c unpacks them all (a file of empty nodes costs ~75x its
 * size once unpacked). */
static int wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t c = *(*p)++;
        *v |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80))
            return 1;
    }
    return 0;
}

/* Skip a field of wire type wt; 0 when malformed (unpacking will say so). */
static int wire_skip(const uint8_t **p, const uint8_t *end, unsigned wt, const uint8_t **body,
                     uint64_t *blen)
{
    uint64_t v;
    switch (wt) {
    case 0: return wire_varint(p, end, &v);
    case 1: if (end - *p < 8) return 0; *p += 8; return 1;
    case 5: if (end - *p < 4) return 0; *p += 4; return 1;
    case 2:
        if (!wire_varint(p, end, &v) || v > (uint64_t)(end - *p))
            return 0;
        *body = *p;
        *blen = v;
        *p += v;
        return 1;
    default: return 0;
    }
}

/* Nodes of the ModelProto's graph (field 7; nodes are GraphProto field 1). */
static size_t wire_count_nodes(const uint8_t *data, size_t len)
{
    const uint8_t *p = data, *end = data + len;
    size_t nodes = 0;
    while (p < end) {
        uint64_t tag, blen = 0;
        const uint8_t *body = NULL;
        if (!wire_varint(&p, end, &tag) || !wire_skip(&p, end, (unsigned)(tag & 7), &body, &blen))
            break;
        if (tag >> 3 != 7 || !body)
            continue;
        const uint8_t *q = body, *qend = body + blen;
        while (q < qend) {
            uint64_t t2, l2 = 0;
            const uint8_t *b2 = NULL;
            if (!wire_varint(&q, qend, &t2) || !wire_skip(&q, qend, (unsigned)(t2 & 7), &b2, &l2))
                break;
            nodes += t2 >> 3 == 1 && (t2 & 7) == 2;
        }
    }
    return nodes;
}

static op_status check_model(const char *path, const Onnx__ModelProto *m, op_error *err)
{
    if (!m)
        return op_fail(err, OP_EINPUT,
                       "%s: not a valid ONNX model (protobuf parsing failed: the file is "
                       "truncated or in another format)", path);
    if (!m->graph)
        return op_fail(err, OP_EINPUT, "%s: not an ONNX model: it has no graph", path);
    if (m->n_opset_import == 0)
        return op_fail(err, OP_EINPUT,
                       "%s: not a complete ONNX model: no opset_import (truncated file?)", path);
    if (m->graph->n_node == 0)
        return op_fail(err, OP_EINPUT, "%s: the ONNX graph has no nodes", path);
    if (m->graph->n_node > ONNX_MAX_NODES)
        return op_fail(err, OP_EINPUT, "%s: %zu nodes, more than the %d opplace accepts", path,
                       m->graph->n_node, ONNX_MAX_NODES);
    return OP_OK;
}

static op_graph *build_graph(importer *im, const op_device_profile *prof, op_error *err)
{
    char gname[256];
    if (im->g->name && *im->g->name)
        snprintf(gname, sizeof gname, "%s", im->g->name);
    else
        default_name(im->path, gname, sizeof gname);
    op_graph_builder *b = op_graph_builder_new(gname, err);
    if (!b)
        return NULL;
    op_graph_builder_set_origin(b, im->path);
    op_graph_builder_set_batch_size(b, batch_size_of(im));
    for (size_t i = 0; i < im->g->n_node; i++)
        if (add_node_op(im, b, i, prof, err)) {
            op_graph_builder_free(b);
            return NULL;
        }
    for (size_t i = 0; i < im->g->n_node; i++)
        if (add_node_edges(im, b, i, err)) {
            op_graph_builder_free(b);
            return NULL;
        }
    return op_graph_finish(b, err);
}

op_graph *op_onnx_import_report(const char *path, const char *profile, op_onnx_report *rep,
                                op_error *err)
{
    op_onnx_report local;
    if (!rep)
        rep = &local;
    memset(rep, 0, sizeof *rep);
    const op_device_profile *prof = op_profile_find(profile ? profile : "v100");
    if (!prof) {
        op_fail(err, OP_EINPUT, "unknown device profile '%s'", profile);
        return NULL;
    }
    char *data = NULL;
    size_t len = 0;
    if (op_read_whole_file(path, &data, &len, err))
        return NULL;
    if (len > ONNX_MAX_FILE) {
        free(data);
        op_fail(err, OP_EINPUT, "%s: %zu bytes, above protobuf's 2 GiB limit", path, len);
        return NULL;
    }
    size_t wire_nodes = wire_count_nodes((const uint8_t *)data, len);
    if (wire_nodes > ONNX_MAX_NODES) {
        free(data);
        op_fail(err, OP_EINPUT, "%s: %zu nodes, more than the %d opplace accepts", path,
                wire_nodes, ONNX_MAX_NODES);
        return NULL;
    }
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, (const uint8_t *)data);
    free(data);
    op_graph *g = NULL;
    importer im = {.path = path, .rep = rep};
    if (check_model(path, m, err))
        goto done;
    im.g = m->graph;
    rep->nodes = (int)im.g->n_node;
    if (op_name_index_init(&im.ix, 2 * im.g->n_node + im.g->n_initializer + 16, err) ||
        add_initializers(&im, err) || add_value_infos(&im, im.g->input, im.g->n_input, err) ||
        add_value_infos(&im, im.g->output, im.g->n_output, err) ||
        add_value_infos(&im, im.g->value_info, im.g->n_value_info, err) ||
        add_producers(&im, err))
        goto done;
    g = build_graph(&im, prof, err);
done:
    op_name_index_destroy(&im.ix);
    free(im.t);
    if (m)
        onnx__model_proto__free_unpacked(m, NULL);
    return g;
}

op_graph *op_onnx_import(const char *path, const char *profile, op_error *err)
{
    op_onnx_report rep;
    op_graph *g = op_onnx_import_report(path, profile, &rep, err);
    if (g && rep.missing_shapes > 0)
        fprintf(stderr,
                "opplace: warning: %s: %d of the node outputs have no shape in value_info; "
                "their sizes were guessed from the node's largest input.  Run ONNX shape "
                "inference first (python3 -c \"import onnx; onnx.save(onnx.shape_inference."
                "infer_shapes(onnx.load('m.onnx')), 'm.onnx')\").\n",
                path, rep.missing_shapes);
    if (g && rep.symbolic_dims > 0)
        fprintf(stderr,
                "opplace: warning: %s: %d symbolic dimensions (e.g. a dynamic batch) were "
                "taken as 1; export with fixed shapes for real sizes.\n",
                path, rep.symbolic_dims);
    return g;
}
