/*
 * wavenet.c - WaveNet (van den Oord et al. 2016) as the TensorFlow
 * implementation the SGDP benchmark uses (ibab/tensorflow-wavenet layout).
 *
 * Input: one-hot mu-law audio (256 channels) -> causal 2-tap conv to R
 * residual channels.  Then `stacks` stacks of `layers` residual layers with
 * dilations 1, 2, 4, ..., 2^(layers-1).  A residual layer:
 *     filter = tanh(dilated conv(x)),  gate = sigmoid(dilated conv(x))
 *     z = filter * gate
 *     skip_i = 1x1 conv(z) (S channels),  x = x + 1x1 conv(z)
 * A dilated causal conv is SpaceToBatch (time_to_batch), a 2-tap Conv2D and
 * BatchToSpace, as in that implementation.  The skip outputs of all layers
 * are summed (AddN), then ReLU, 1x1 conv, ReLU, 1x1 conv to 256 classes and
 * the softmax cross-entropy per sample.
 * SGDP: batch 64, receptive field 2048, 2-stack 18-layer and 4-stack
 * 36-layer models (and 5/10-stack op counts).  Defaults: --stacks 2
 * --layers 9 (per stack) --hidden 32 (R = dilation channels) --batch 64
 * --seq-len 2048 samples; skip channels S = 512.
 * Simplified: no global or local conditioning; biases folded into the convs.
 */
#include <stdio.h>

#include "opplace/zoo.h"
#include "zoo/zoo_build.h"

#define QUANT 256
#define SKIP 512

/* Dilated causal conv over a [B, T, cin] signal, 2 taps. */
static int dilated_conv(zb *z, const char *name, int x, double B, double T, int cin, int cout,
                        int dilation)
{
    char n[96];
    double in = B * T * cin, out = B * T * cout;
    snprintf(n, sizeof n, "%s/time_to_batch", name);
    int tb = dilation > 1 ? zb_ew1(z, n, "SpaceToBatchND", 0, in, x) : x;
    snprintf(n, sizeof n, "%s/kernel", name);
    int w = zb_weight(z, n, 2.0 * cin * cout);
    snprintf(n, sizeof n, "%s/Conv2D", name);
    int y = zb_op(z, n, "Conv2D", 2.0 * out * cin * 2, out, w, tb);
    snprintf(n, sizeof n, "%s/batch_to_time", name);
    return dilation > 1 ? zb_ew1(z, n, "BatchToSpaceND", 0, out, y) : y;
}

static int conv1x1(zb *z, const char *name, int x, double rows, int cin, int cout)
{
    char n[96];
    snprintf(n, sizeof n, "%s/kernel", name);
    int w = zb_weight(z, n, (double)cin * cout);
    snprintf(n, sizeof n, "%s/Conv2D", name);
    return zb_op(z, n, "Conv2D", 2.0 * rows * cin * cout, rows * cout, w, x);
}

static op_graph *gen_wavenet(op_options *o, op_error *err)
{
    long stacks, layers, R, batch, T;
    if (op_options_int(o, "stacks", 2, 1, 256, &stacks, err) ||
        op_options_int(o, "layers", 9, 1, 30, &layers, err) ||
        op_options_int(o, "hidden", 32, 1, 4096, &R, err) ||
        op_options_int(o, "batch", 64, 1, 1 << 20, &batch, err) ||
        op_options_int(o, "seq-len", 2048, 2, 1 << 24, &T, err))
        return NULL;
    char name[96];
    snprintf(name, sizeof name, "wavenet_%ldstack_%ldlayer_r%ld_b%ld_t%ld", stacks, layers, R,
             batch, T);
    zb *z = zb_new(name, batch, o, err);
    if (!z)
        return NULL;
    double B = (double)batch, rows = B * T;
    zb_scope(z, "input");
    zb_prefix(z, "wavenet/input");
    int audio = zb_input(z, "one_hot_audio", rows * QUANT);
    int x = dilated_conv(z, "causal_layer", audio, B, (double)T, QUANT, (int)R, 1);
    int skips[256 * 30];
    int ns = 0;
    for (int s = 0; s < stacks; s++)
        for (int l = 0; l < layers; l++) {
            zb_scope(z, "stack_%d/layer_%d", s, l);
            zb_prefix(z, "wavenet/stack_%d/layer_%d", s, l);
            int dil = 1 << l;
            int f = dilated_conv(z, "conv_filter", x, B, (double)T, (int)R, (int)R, dil);
            int g = dilated_conv(z, "conv_gate", x, B, (double)T, (int)R, (int)R, dil);
            f = zb_ew1(z, "Tanh", "Tanh", 4, rows * R, f);
            g = zb_ew1(z, "Sigmoid", "Sigmoid", 4, rows * R, g);
            int zg = zb_ew2(z, "gated", "Mul", 1, rows * R, f, g);
            skips[ns++] = conv1x1(z, "skip", zg, rows, (int)R, SKIP);
            if (s == stacks - 1 && l == layers - 1)
                break; /* the last residual output would feed nothing */
            int dense = conv1x1(z, "dense", zg, rows, (int)R, (int)R);
            x = zb_ew2(z, "residual", "Add", 1, rows * R, x, dense);
        }
    zb_scope(z, "postprocessing");
    zb_prefix(z, "wavenet/postprocessing");
    int total = zb_op_n(z, "skip_sum", "AddN", ns * rows * SKIP, rows * SKIP, -1, skips, ns, 0);
    int h = zb_ew1(z, "Relu", "Relu", 1, rows * SKIP, total);
    h = conv1x1(z, "postprocess1", h, rows, SKIP, SKIP);
    h = zb_ew1(z, "Relu_1", "Relu", 1, rows * SKIP, h);
    h = conv1x1(z, "postprocess2", h, rows, SKIP, QUANT);
    int labels = zb_input(z, "labels", rows);
    int xent = zb_op(z, "xent", "SoftmaxCrossEntropyWithLogits", 5 * rows * QUANT, rows, -1, h,
                     labels);
    return zb_finish(z, zb_ew1(z, "Mean", "Mean", 1, 1, xent), err);
}

ZOO_AT_PAPERS(gen_wavenet, "wavenet")

const op_zoo_model op_zoo_model_wavenet = {
    .name = "wavenet",
    .summary = "WaveNet, gated dilated convs with residual and skip paths (SGDP: --stacks 2 --layers 9 --batch 64 --seq-len 2048)",
    .generate = gen_wavenet_at_papers,
};
