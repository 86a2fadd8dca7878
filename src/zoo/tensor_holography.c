/*
 * tensor_holography.c - the hologram-synthesis CNN of Shi et al., "Towards
 * real-time photorealistic 3D holography with deep neural networks",
 * Nature 591, 2021, as Celeritas benchmarks it (section 6.2.1: 30
 * convolutional layers of 24 filters, batch 32, ~30 GB at batch 16).
 *
 * A fully convolutional network at full resolution: RGB-D input (4
 * channels, 384 x 384), 30 3x3 convolutions of 24 filters each followed by
 * batch norm and ReLU, with a residual connection around every pair of
 * layers, and a final 3x3 convolution to the 6-channel hologram (amplitude
 * and phase per colour) compared with the target by an L2 loss.
 * Options: --layers 30, --hidden 24 (filters), --batch 32.
 * Simplified: the paper's exact block layout is not given in Celeritas;
 * residual pairs and batch norm are our reading of a residual CNN of the
 * time.  Resolution is fixed at 384 x 384.
 */
#include <stdio.h>

#include "opplace/zoo.h"
#include "zoo/zoo_build.h"

#define RES 384

static op_graph *gen_tensor_holography(op_options *o, op_error *err)
{
    long layers, filters, batch;
    if (op_options_int(o, "layers", 30, 1, 1000, &layers, err) ||
        op_options_int(o, "hidden", 24, 1, 4096, &filters, err) ||
        op_options_int(o, "batch", 32, 1, 1 << 20, &batch, err))
        return NULL;
    char name[96];
    snprintf(name, sizeof name, "tensor_holography_%ldlayer_f%ld_b%ld", layers, filters, batch);
    zb *z = zb_new(name, batch, o, err);
    if (!z)
        return NULL;
    zb_scope(z, "input");
    zb_prefix(z, "input");
    zb_fmap x = {zb_input(z, "rgbd", (double)batch * RES * RES * 4), (int)batch, RES, RES, 4};
    zb_fmap skip = {-1, 0, 0, 0, 0};
    for (int l = 0; l < layers; l++) {
        char n[32];
        zb_scope(z, "conv_%d", l);
        zb_prefix(z, "conv_%d", l);
        snprintf(n, sizeof n, "layer");
        x = zb_conv_bn_relu(z, n, x, (int)filters, 3, 3, 1);
        if (l % 2 == 1 && skip.id >= 0 && skip.c == x.c)
            x = zb_add(z, "residual", x, skip);
        if (l % 2 == 1)
            skip = x;
    }
    zb_scope(z, "output");
    zb_prefix(z, "output");
    zb_fmap y = zb_conv(z, "hologram", x, 6, 3, 3, 1);
    double e = (double)batch * RES * RES * 6;
    int target = zb_input(z, "target", e);
    int diff = zb_ew2(z, "sub", "Sub", 1, e, y.id, target);
    int sq = zb_ew1(z, "Square", "Square", 1, e, diff);
    return zb_finish(z, zb_ew1(z, "Mean", "Mean", 1, 1, sq), err);
}

ZOO_AT_PAPERS(gen_tensor_holography, "tensor_holography")

const op_zoo_model op_zoo_model_tensor_holography = {
    .name = "tensor_holography",
    .summary = "hologram CNN, 30 conv layers x 24 filters with residuals (Celeritas: --layers 30 --hidden 24 --batch 32)",
    .generate = gen_tensor_holography_at_papers,
};
