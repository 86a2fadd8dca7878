/*
 * inception_v3.c - Inception-V3 (Szegedy et al., "Rethinking the Inception
 * Architecture", CVPR 2016), layer for layer as TF-slim's inception_v3:
 * the stem (5 convolutions, 2 max-pools), Mixed_5b-5d (35x35 modules with
 * 1x1 / 5x5 / double-3x3 / pool branches), Mixed_6a (reduction), Mixed_6b-6e
 * (17x17 modules with factorised 1x7 / 7x1 branches), Mixed_7a (reduction),
 * Mixed_7b-7c (8x8 modules whose branches split again into 1x3 and 3x1),
 * the auxiliary classifier on Mixed_6e, global pooling, dropout, logits.
 * Every convolution is conv -> batch norm -> ReLU; the branches of a module
 * are parallel op chains joined by a ConcatV2.  Loss = main + 0.4 x aux.
 *
 * Papers' settings: batch 64 and 32 (SGDP), 512 (Celeritas); ImageNet
 * 299x299 inputs, 1001 classes.  Default --batch 64.
 * Simplified: SAME padding everywhere (slim uses VALID in the stem and the
 * reductions, so our maps are a few pixels larger); batch-norm moving
 * averages and weight decay are left out.
 */
#include <stdio.h>

#include "opplace/zoo.h"
#include "zoo/zoo_build.h"

#define CLASSES 1001

/* A branch: a chain of conv-bn-relu units (kh, kw, filters, stride each). */
typedef struct unit {
    int kh, kw, c, stride;
} unit;

static zb_fmap branch(zb *z, const char *name, zb_fmap x, const unit *u, int n)
{
    char un[96];
    for (int i = 0; i < n; i++) {
        snprintf(un, sizeof un, "%s/Conv2d_%d_%dx%d", name, i, u[i].kh, u[i].kw);
        x = zb_conv_bn_relu(z, un, x, u[i].c, u[i].kh, u[i].kw, u[i].stride);
    }
    return x;
}

static zb_fmap pool_branch(zb *z, const char *name, const char *type, zb_fmap x, int stride,
                           int proj)
{
    x = zb_pool(z, name, type, x, 3, stride);
    if (proj <= 0)
        return x;
    char un[96];
    snprintf(un, sizeof un, "%s/Conv2d_1x1", name);
    return zb_conv_bn_relu(z, un, x, proj, 1, 1, 1);
}

static void begin(zb *z, const char *module)
{
    zb_scope(z, "%s", module);
    zb_prefix(z, "InceptionV3/%s", module);
}

/* 35 x 35: 1x1 | 1x1-5x5 | 1x1-3x3-3x3 | avgpool-1x1 */
static zb_fmap module_a(zb *z, const char *m, zb_fmap x, int pool_proj)
{
    begin(z, m);
    zb_fmap b[4];
    b[0] = branch(z, "Branch_0", x, (unit[]){{1, 1, 64, 1}}, 1);
    b[1] = branch(z, "Branch_1", x, (unit[]){{1, 1, 48, 1}, {5, 5, 64, 1}}, 2);
    b[2] = branch(z, "Branch_2", x, (unit[]){{1, 1, 64, 1}, {3, 3, 96, 1}, {3, 3, 96, 1}}, 3);
    b[3] = pool_branch(z, "Branch_3", "AvgPool", x, 1, pool_proj);
    return zb_concat(z, "Mixed", b, 4);
}

/* 17 x 17: 1x1 | 1x1-1x7-7x1 | 1x1-7x1-1x7-7x1-1x7 | avgpool-1x1 */
static zb_fmap module_b(zb *z, const char *m, zb_fmap x, int c7)
{
    begin(z, m);
    zb_fmap b[4];
    b[0] = branch(z, "Branch_0", x, (unit[]){{1, 1, 192, 1}}, 1);
    b[1] = branch(z, "Branch_1", x, (unit[]){{1, 1, c7, 1}, {1, 7, c7, 1}, {7, 1, 192, 1}}, 3);
    b[2] = branch(z, "Branch_2", x,
                  (unit[]){{1, 1, c7, 1}, {7, 1, c7, 1}, {1, 7, c7, 1}, {7, 1, c7, 1},
                           {1, 7, 192, 1}}, 5);
    b[3] = pool_branch(z, "Branch_3", "AvgPool", x, 1, 192);
    return zb_concat(z, "Mixed", b, 4);
}

/* 8 x 8: 1x1 | 1x1-{1x3,3x1} | 1x1-3x3-{1x3,3x1} | avgpool-1x1 */
static zb_fmap module_c(zb *z, const char *m, zb_fmap x)
{
    begin(z, m);
    zb_fmap b[6];
    b[0] = branch(z, "Branch_0", x, (unit[]){{1, 1, 320, 1}}, 1);
    zb_fmap s1 = branch(z, "Branch_1", x, (unit[]){{1, 1, 384, 1}}, 1);
    b[1] = branch(z, "Branch_1/a", s1, (unit[]){{1, 3, 384, 1}}, 1);
    b[2] = branch(z, "Branch_1/b", s1, (unit[]){{3, 1, 384, 1}}, 1);
    zb_fmap s2 = branch(z, "Branch_2", x, (unit[]){{1, 1, 448, 1}, {3, 3, 384, 1}}, 2);
    b[3] = branch(z, "Branch_2/a", s2, (unit[]){{1, 3, 384, 1}}, 1);
    b[4] = branch(z, "Branch_2/b", s2, (unit[]){{3, 1, 384, 1}}, 1);
    b[5] = pool_branch(z, "Branch_3", "AvgPool", x, 1, 192);
    return zb_concat(z, "Mixed", b, 6);
}

/* Classifier: pooling, (dropout,) 1x1 conv to the classes, cross-entropy. */
static int classifier(zb *z, const char *name, zb_fmap x, int pool_k, int dropout)
{
    char n[96];
    snprintf(n, sizeof n, "%s/pool", name);
    x = zb_pool(z, n, "AvgPool", x, pool_k, x.h);
    if (dropout) {
        snprintf(n, sizeof n, "%s/Dropout", name);
        x.id = zb_dropout(z, n, x.id);
    }
    snprintf(n, sizeof n, "%s/Conv2d_1c_1x1", name);
    zb_fmap logits = zb_conv(z, n, x, CLASSES, 1, 1, 1);
    snprintf(n, sizeof n, "%s/labels", name);
    int labels = zb_input(z, n, x.n);
    snprintf(n, sizeof n, "%s/xent", name);
    return zb_op(z, n, "SoftmaxCrossEntropyWithLogits", 5.0 * x.n * CLASSES, x.n, -1, logits.id,
                 labels);
}

static op_graph *gen_inception(op_options *o, op_error *err)
{
    long batch;
    if (op_options_int(o, "batch", 64, 1, 1 << 20, &batch, err))
        return NULL;
    char name[64];
    snprintf(name, sizeof name, "inception_v3_b%ld", batch);
    zb *z = zb_new(name, batch, o, err);
    if (!z)
        return NULL;
    begin(z, "stem");
    zb_fmap x = {zb_input(z, "images", (double)batch * 299 * 299 * 3), (int)batch, 299, 299, 3};
    x = branch(z, "Conv", x,
               (unit[]){{3, 3, 32, 2}, {3, 3, 32, 1}, {3, 3, 64, 1}}, 3);
    x = zb_pool(z, "MaxPool_3a_3x3", "MaxPool", x, 3, 2);
    x = branch(z, "Conv_b", x, (unit[]){{1, 1, 80, 1}, {3, 3, 192, 1}}, 2);
    x = zb_pool(z, "MaxPool_5a_3x3", "MaxPool", x, 3, 2);
    x = module_a(z, "Mixed_5b", x, 32);
    x = module_a(z, "Mixed_5c", x, 64);
    x = module_a(z, "Mixed_5d", x, 64);
    begin(z, "Mixed_6a");
    zb_fmap r[3];
    r[0] = branch(z, "Branch_0", x, (unit[]){{3, 3, 384, 2}}, 1);
    r[1] = branch(z, "Branch_1", x, (unit[]){{1, 1, 64, 1}, {3, 3, 96, 1}, {3, 3, 96, 2}}, 3);
    r[2] = pool_branch(z, "Branch_2", "MaxPool", x, 2, 0);
    x = zb_concat(z, "Mixed", r, 3);
    const int c7[4] = {128, 160, 160, 192};
    const char *mb[4] = {"Mixed_6b", "Mixed_6c", "Mixed_6d", "Mixed_6e"};
    for (int i = 0; i < 4; i++)
        x = module_b(z, mb[i], x, c7[i]);
    begin(z, "AuxLogits");
    zb_fmap aux = zb_pool(z, "AvgPool_1a_5x5", "AvgPool", x, 5, 3);
    aux = branch(z, "Conv", aux, (unit[]){{1, 1, 128, 1}, {5, 5, 768, 1}}, 2);
    int aux_loss = classifier(z, "Logits", aux, aux.h, 0);
    begin(z, "Mixed_7a");
    r[0] = branch(z, "Branch_0", x, (unit[]){{1, 1, 192, 1}, {3, 3, 320, 2}}, 2);
    r[1] = branch(z, "Branch_1", x,
                  (unit[]){{1, 1, 192, 1}, {1, 7, 192, 1}, {7, 1, 192, 1}, {3, 3, 192, 2}}, 4);
    r[2] = pool_branch(z, "Branch_2", "MaxPool", x, 2, 0);
    x = zb_concat(z, "Mixed", r, 3);
    x = module_c(z, "Mixed_7b", x);
    x = module_c(z, "Mixed_7c", x);
    begin(z, "Logits");
    int main_loss = classifier(z, "Logits", x, x.h, 1);
    int aux_scaled = zb_ew1(z, "aux_weight", "Mul", 1, batch, aux_loss);
    int total = zb_ew2(z, "total_loss", "AddN", 1, batch, main_loss, aux_scaled);
    return zb_finish(z, zb_ew1(z, "Mean", "Mean", 1, 1, total), err);
}

ZOO_AT_PAPERS(gen_inception, "inception_v3")

const op_zoo_model op_zoo_model_inception_v3 = {
    .name = "inception_v3",
    .summary = "Inception-V3, parallel-branch modules, aux head (Celeritas: --batch 512; --paper celeritas|sgdp|trinity)",
    .generate = gen_inception_at_papers,
};
