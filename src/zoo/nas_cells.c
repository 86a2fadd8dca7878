/*
 * nas_cells.c - networks built from searched cells: NASNet-A (Zoph et al.
 * 2018), PNASNet-5 (Liu et al. 2018) and AmoebaNet-A (Real et al. 2019).
 *
 * A cell takes the two previous cells' outputs (h[i-1] and the skip input
 * h[i-2]), projects each to F filters (ReLU, 1x1 conv, batch norm; a strided
 * 1x1 conv when h[i-2] is larger, in place of slim's factorised reduction),
 * then computes 5 blocks; block b applies two operations to two earlier
 * states and adds them.  The cell's output concatenates the states no block
 * consumed ("used_hiddenstates" = 0).  The cell tables are those of
 * TF-slim's nasnet_utils.py / pnasnet.py and the TPU AmoebaNet reference
 * (operations, hidden-state indices, used states).  Operations:
 *   separable_kxk_2  (ReLU, depthwise-separable kxk conv, BN) twice
 *   avg/max_pool_3x3 pooling
 *   1x7_7x1          ReLU, 1x7 conv, 7x1 conv, BN
 *   none             identity (a strided 1x1 conv in a reduction)
 * Network (ImageNet): 3x3/2 stem conv, two reduction stem cells (F/4, F/2),
 * then 3 stacks of N normal cells at F, 2F, 4F filters with a reduction cell
 * between stacks; ReLU, global average pool, dropout, dense, cross-entropy.
 * --cells N (normal cells per stack), --hidden F (filters), --batch.
 * Papers: Pesto NASNet 4@212, 6@148, 6@168, batch 32; Trinity NASNet-Large
 * (6@168) and PNASNet-Large (4@216); SGDP AmoebaNet batch 64.
 * Simplified: no drop-path, no auxiliary head, SAME padding.
 */
#include <stdio.h>
#include <string.h>

#include "opplace/zoo.h"
#include "zoo/zoo_build.h"

#define CLASSES 1001

typedef struct cell_spec {
    const char *ops[10];
    int used[7];
    int idx[10];
} cell_spec;

static const cell_spec NASNET_NORMAL = {
    {"separable_5x5_2", "separable_3x3_2", "separable_5x5_2", "separable_3x3_2", "avg_pool_3x3",
     "none", "avg_pool_3x3", "avg_pool_3x3", "separable_3x3_2", "none"},
    {1, 0, 0, 0, 0, 0, 0},
    {0, 1, 1, 1, 0, 1, 1, 1, 0, 0}};
static const cell_spec NASNET_REDUCTION = {
    {"separable_5x5_2", "separable_7x7_2", "max_pool_3x3", "separable_7x7_2", "avg_pool_3x3",
     "separable_5x5_2", "none", "avg_pool_3x3", "separable_3x3_2", "max_pool_3x3"},
    {1, 1, 1, 0, 0, 0, 0},
    {0, 1, 0, 1, 0, 1, 3, 2, 2, 0}};
static const cell_spec PNASNET_CELL = {
    {"separable_5x5_2", "max_pool_3x3", "separable_7x7_2", "max_pool_3x3", "separable_5x5_2",
     "separable_3x3_2", "separable_3x3_2", "max_pool_3x3", "separable_3x3_2", "none"},
    {1, 1, 0, 0, 0, 0, 0},
    {1, 1, 0, 0, 0, 0, 4, 0, 1, 0}};
static const cell_spec AMOEBA_NORMAL = {
    {"avg_pool_3x3", "max_pool_3x3", "separable_3x3_2", "none", "none", "avg_pool_3x3",
     "separable_3x3_2", "separable_5x5_2", "avg_pool_3x3", "separable_3x3_2"},
    {1, 0, 1, 0, 0, 1, 0},
    {0, 0, 1, 1, 0, 1, 0, 2, 5, 0}};
static const cell_spec AMOEBA_REDUCTION = {
    {"separable_3x3_2", "avg_pool_3x3", "max_pool_3x3", "separable_7x7_2", "max_pool_3x3",
     "max_pool_3x3", "separable_3x3_2", "1x7_7x1", "avg_pool_3x3", "separable_7x7_2"},
    {1, 1, 0, 0, 0, 0, 0},
    {1, 0, 0, 2, 1, 0, 4, 0, 1, 0}};

typedef struct nas_net {
    const char *name;
    const cell_spec *normal, *reduction;
    int image;
} nas_net;

/* ReLU -> conv (kh x kw, stride) -> batch norm. */
static zb_fmap relu_conv_bn(zb *z, const char *name, zb_fmap x, int c, int kh, int kw, int stride)
{
    char n[256];
    x = zb_relu(z, name, x);
    x = zb_conv(z, name, x, c, kh, kw, stride);
    snprintf(n, sizeof n, "%s/bn", name);
    return zb_batch_norm(z, n, x);
}

/* One cell operation applied to state x. */
static zb_fmap apply_op(zb *z, const char *name, const char *op, zb_fmap x, int f, int stride)
{
    char n[256];
    int k;
    if (sscanf(op, "separable_%dx", &k) == 1) {
        for (int rep = 0; rep < 2; rep++) {
            snprintf(n, sizeof n, "%s/sep_%d", name, rep);
            x = zb_relu(z, n, x);
            x = zb_sep_conv(z, n, x, f, k, rep == 0 ? stride : 1);
            snprintf(n, sizeof n, "%s/sep_%d/bn", name, rep);
            x = zb_batch_norm(z, n, x);
        }
        return x;
    }
    if (strcmp(op, "avg_pool_3x3") == 0)
        return zb_pool(z, name, "AvgPool", x, 3, stride);
    if (strcmp(op, "max_pool_3x3") == 0)
        return zb_pool(z, name, "MaxPool", x, 3, stride);
    if (strcmp(op, "1x7_7x1") == 0) {
        x = zb_relu(z, name, x);
        snprintf(n, sizeof n, "%s/1x7", name);
        x = zb_conv(z, n, x, f, 1, 7, stride);
        snprintf(n, sizeof n, "%s/7x1", name);
        x = zb_conv(z, n, x, f, 7, 1, 1);
        snprintf(n, sizeof n, "%s/bn", name);
        return zb_batch_norm(z, n, x);
    }
    /* "none": identity, or a strided 1x1 projection in a reduction */
    return stride == 1 ? x : relu_conv_bn(z, name, x, f, 1, 1, stride);
}

/* One cell: inputs h1 = h[i-1], h2 = h[i-2]; returns its output map. */
static zb_fmap cell(zb *z, const char *cname, const cell_spec *s, zb_fmap h1, zb_fmap h2, int f,
                    int stride)
{
    char n[128];
    zb_scope(z, "%s", cname);
    zb_prefix(z, "%s", cname);
    zb_fmap st[7];
    st[0] = relu_conv_bn(z, "beginning/h1", h1, f, 1, 1, 1);
    st[1] = relu_conv_bn(z, "beginning/h2", h2, f, 1, 1, h2.h > h1.h ? 2 : 1);
    for (int b = 0; b < 5; b++) {
        zb_fmap side[2];
        for (int j = 0; j < 2; j++) {
            int from = s->idx[2 * b + j];
            snprintf(n, sizeof n, "comb_iter_%d/%s", b, j ? "right" : "left");
            side[j] = apply_op(z, n, s->ops[2 * b + j], st[from], f, from < 2 ? stride : 1);
        }
        snprintf(n, sizeof n, "comb_iter_%d", b);
        st[2 + b] = zb_add(z, n, side[0], side[1]);
    }
    zb_fmap out[7];
    int k = 0;
    for (int i = 0; i < 7; i++)
        if (!s->used[i]) {
            out[k] = st[i];
            if (i < 2 && stride == 2) /* an unreduced input: match the map size */
                out[k] = relu_conv_bn(z, i ? "reduce_h2" : "reduce_h1", st[i], f, 1, 1, 2);
            k++;
        }
    return zb_concat(z, "cell_output", out, k);
}

static op_graph *gen_nas(const nas_net *net, op_options *o, long cells, long filters,
                         long batch, op_error *err)
{
    if (op_options_int(o, "cells", cells, 1, 64, &cells, err) ||
        op_options_int(o, "hidden", filters, 4, 4096, &filters, err) ||
        op_options_int(o, "batch", batch, 1, 1 << 20, &batch, err))
        return NULL;
    char name[96];
    snprintf(name, sizeof name, "%s_%ldcells_f%ld_b%ld", net->name, cells, filters, batch);
    zb *z = zb_new(name, batch, o, err);
    if (!z)
        return NULL;
    int F = (int)filters;
    zb_scope(z, "stem");
    zb_prefix(z, "stem");
    zb_fmap img = {zb_input(z, "images", (double)batch * net->image * net->image * 3),
                   (int)batch, net->image, net->image, 3};
    zb_fmap conv = zb_conv(z, "conv0", img, 96, 3, 3, 2);
    conv = zb_batch_norm(z, "conv0/bn", conv);
    zb_fmap s0 = cell(z, "stem_cell_0", net->reduction, conv, conv, F / 4, 2);
    zb_fmap h2 = conv, h1 = s0;
    zb_fmap s1 = cell(z, "stem_cell_1", net->reduction, h1, h2, F / 2, 2);
    h2 = h1;
    h1 = s1;
    int idx = 0;
    for (int stack = 0; stack < 3; stack++) {
        int f = F << stack;
        char cname[64];
        if (stack > 0) {
            snprintf(cname, sizeof cname, "reduction_cell_%d", stack - 1);
            zb_fmap r = cell(z, cname, net->reduction, h1, h2, f, 2);
            h2 = h1;
            h1 = r;
        }
        for (int c = 0; c < cells; c++) {
            snprintf(cname, sizeof cname, "cell_%d", idx++);
            zb_fmap y = cell(z, cname, net->normal, h1, h2, f, 1);
            h2 = h1;
            h1 = y;
        }
    }
    zb_scope(z, "final_layer");
    zb_prefix(z, "final_layer");
    h1 = zb_relu(z, "final", h1);
    h1 = zb_pool(z, "global_pool", "Mean", h1, h1.h, h1.h);
    int x = zb_dropout(z, "dropout", h1.id);
    int logits = zb_dense(z, "FC", x, batch, h1.c, CLASSES, 1);
    int labels = zb_input(z, "labels", batch);
    int xent = zb_op(z, "xent", "SoftmaxCrossEntropyWithLogits", 5.0 * batch * CLASSES, batch,
                     -1, logits, labels);
    return zb_finish(z, zb_ew1(z, "Mean", "Mean", 1, 1, xent), err);
}

static op_graph *gen_nasnet(op_options *o, op_error *err)
{
    static const nas_net net = {"nasnet", &NASNET_NORMAL, &NASNET_REDUCTION, 331};
    return gen_nas(&net, o, 6, 168, 32, err);
}

static op_graph *gen_pnasnet(op_options *o, op_error *err)
{
    static const nas_net net = {"pnasnet", &PNASNET_CELL, &PNASNET_CELL, 331};
    return gen_nas(&net, o, 4, 216, 32, err);
}

static op_graph *gen_amoebanet(op_options *o, op_error *err)
{
    static const nas_net net = {"amoebanet", &AMOEBA_NORMAL, &AMOEBA_REDUCTION, 299};
    return gen_nas(&net, o, 4, 190, 64, err);
}

ZOO_AT_PAPERS(gen_nasnet, "nasnet")

const op_zoo_model op_zoo_model_nasnet = {
    .name = "nasnet",
    .summary = "NASNet-A, multi-branch cells with skip inputs (Trinity: --cells 6 --hidden 168 filters --batch 32; --paper trinity|pesto)",
    .generate = gen_nasnet_at_papers,
};

ZOO_AT_PAPERS(gen_pnasnet, "pnasnet")

const op_zoo_model op_zoo_model_pnasnet = {
    .name = "pnasnet",
    .summary = "PNASNet-5 cells (Trinity: --cells 4 --hidden 216 filters --batch 8)",
    .generate = gen_pnasnet_at_papers,
};

ZOO_AT_PAPERS(gen_amoebanet, "amoebanet")

const op_zoo_model op_zoo_model_amoebanet = {
    .name = "amoebanet",
    .summary = "AmoebaNet-A cells (SGDP: --cells 4 --hidden 190 filters --batch 64)",
    .generate = gen_amoebanet_at_papers,
};
