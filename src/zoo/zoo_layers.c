/*
 * zoo_layers.c - layers shared by several zoo models, each expanded into the
 * ops a TensorFlow 1.x graph holds for it (the papers' graphs are TF graphs):
 * dense = MatMul + BiasAdd, layer/batch normalisation = tf.nn.moments +
 * tf.nn.batch_normalization (not the fused kernel), dropout = random mask +
 * scale.  Every op name is "<name>/<Op>" under the builder's current prefix.
 *
 * Simplified: batch normalisation's moving-average updates (inference-only
 * statistics) and shape-bookkeeping ops (Shape, Reshape of constants) are
 * left out; they are tiny and off the gradient path.
 */
#include <stdio.h>

#include "zoo/zoo_build.h"

#define NAME(buf, base, op) snprintf(buf, sizeof buf, "%s/%s", base, op)

int zb_dense(zb *z, const char *name, int x, double rows, int in, int out, int bias)
{
    char n[256];
    NAME(n, name, "kernel");
    int w = zb_weight(z, n, (double)in * out);
    NAME(n, name, "MatMul");
    int y = zb_op(z, n, "MatMul", 2.0 * rows * in * out, rows * out, w, x);
    if (!bias)
        return y;
    NAME(n, name, "bias");
    int b = zb_weight(z, n, out);
    NAME(n, name, "BiasAdd");
    return zb_op(z, n, "BiasAdd", rows * out, rows * out, b, y);
}

int zb_ew(zb *z, const char *name, const char *type, double ops_per_elem, double elems,
          const int *inputs, int n_inputs)
{
    return zb_op_n(z, name, type, ops_per_elem * elems, elems, -1, inputs, n_inputs, 0);
}

/* Normalisation by moments, as TensorFlow's batch and layer norm build it:
 * gamma and beta of `params` values each, mean and variance over `stats`
 * values, the scale and shift of `affine` values, output of `all`. */
static int norm_by_moments(zb *z, const char *name, int x, double params, double stats,
                           double affine, double all)
{
    char n[256];
    NAME(n, name, "gamma");
    int gamma = zb_weight(z, n, params);
    NAME(n, name, "beta");
    int beta = zb_weight(z, n, params);
    NAME(n, name, "moments/mean");
    int mean = zb_ew1(z, n, "Mean", 1, stats, x);
    NAME(n, name, "moments/SquaredDifference");
    int sq = zb_ew2(z, n, "SquaredDifference", 2, all, x, mean);
    NAME(n, name, "moments/variance");
    int var = zb_ew1(z, n, "Mean", 1, stats, sq);
    NAME(n, name, "batchnorm/add");
    int eps = zb_ew1(z, n, "Add", 1, stats, var);
    NAME(n, name, "batchnorm/Rsqrt");
    int rs = zb_ew1(z, n, "Rsqrt", 1, stats, eps);
    NAME(n, name, "batchnorm/mul");
    int scale = zb_op(z, n, "Mul", affine, affine, gamma, rs);
    NAME(n, name, "batchnorm/mul_1");
    int xs = zb_ew2(z, n, "Mul", 1, all, x, scale);
    NAME(n, name, "batchnorm/mul_2");
    int ms = zb_ew2(z, n, "Mul", 1, affine, mean, scale);
    NAME(n, name, "batchnorm/sub");
    int shift = zb_op(z, n, "Sub", affine, affine, beta, ms);
    NAME(n, name, "batchnorm/add_1");
    return zb_ew2(z, n, "Add", 1, all, xs, shift);
}

int zb_layer_norm(zb *z, const char *name, int x, double rows, int dim)
{
    return norm_by_moments(z, name, x, dim, rows, rows * dim, rows * dim);
}

int zb_dropout(zb *z, const char *name, int x)
{
    char n[256];
    double e = zb_elems(z, x);
    NAME(n, name, "random_uniform");
    int r = zb_op_n(z, n, "RandomUniform", 4 * e, e, -1, NULL, 0, 0);
    NAME(n, name, "Floor");
    int mask = zb_ew1(z, n, "Floor", 2, e, r);
    NAME(n, name, "div");
    int d = zb_ew1(z, n, "RealDiv", 1, e, x);
    NAME(n, name, "mul");
    return zb_ew2(z, n, "Mul", 1, e, d, mask);
}

/* ---- CNN layers (NHWC, SAME padding) ---- */

static double map_elems(zb_fmap m)
{
    return (double)m.n * m.h * m.w * m.c;
}

static zb_fmap resized(zb_fmap x, int stride, int c)
{
    return (zb_fmap){-1, x.n, (x.h + stride - 1) / stride, (x.w + stride - 1) / stride, c};
}

zb_fmap zb_conv(zb *z, const char *name, zb_fmap x, int cout, int kh, int kw, int stride)
{
    char n[256];
    zb_fmap y = resized(x, stride, cout);
    NAME(n, name, "weights");
    int w = zb_weight(z, n, (double)kh * kw * x.c * cout);
    NAME(n, name, "Conv2D");
    y.id = zb_op(z, n, "Conv2D", 2.0 * map_elems(y) * x.c * kh * kw, map_elems(y), w, x.id);
    return y;
}

zb_fmap zb_sep_conv(zb *z, const char *name, zb_fmap x, int cout, int k, int stride)
{
    char n[256];
    zb_fmap d = resized(x, stride, x.c);
    NAME(n, name, "depthwise_weights");
    int wd = zb_weight(z, n, (double)k * k * x.c);
    NAME(n, name, "depthwise");
    d.id = zb_op(z, n, "DepthwiseConv2dNative", 2.0 * map_elems(d) * k * k, map_elems(d), wd,
                 x.id);
    zb_fmap y = d;
    y.c = cout;
    NAME(n, name, "pointwise_weights");
    int wp = zb_weight(z, n, (double)x.c * cout);
    NAME(n, name, "pointwise");
    y.id = zb_op(z, n, "Conv2D", 2.0 * map_elems(y) * x.c, map_elems(y), wp, d.id);
    return y;
}

zb_fmap zb_batch_norm(zb *z, const char *name, zb_fmap x)
{
    x.id = norm_by_moments(z, name, x.id, x.c, x.c, x.c, map_elems(x));
    return x;
}

zb_fmap zb_relu(zb *z, const char *name, zb_fmap x)
{
    char n[256];
    NAME(n, name, "Relu");
    x.id = zb_ew1(z, n, "Relu", 1, map_elems(x), x.id);
    return x;
}

zb_fmap zb_conv_bn_relu(zb *z, const char *name, zb_fmap x, int cout, int kh, int kw, int stride)
{
    char n[256];
    zb_fmap y = zb_conv(z, name, x, cout, kh, kw, stride);
    NAME(n, name, "BatchNorm");
    y = zb_batch_norm(z, n, y);
    return zb_relu(z, name, y);
}

zb_fmap zb_pool(zb *z, const char *name, const char *type, zb_fmap x, int k, int stride)
{
    char n[256];
    zb_fmap y = resized(x, stride, x.c);
    NAME(n, name, type);
    y.id = zb_ew1(z, n, type, (double)k * k, map_elems(y), x.id);
    return y;
}

zb_fmap zb_concat(zb *z, const char *name, const zb_fmap *xs, int n_in)
{
    char n[256];
    int ids[64];
    zb_fmap y = xs[0];
    y.c = 0;
    for (int i = 0; i < n_in && i < 64; i++) {
        ids[i] = xs[i].id;
        y.c += xs[i].c;
    }
    NAME(n, name, "concat");
    y.id = zb_op_n(z, n, "ConcatV2", 0, map_elems(y), -1, ids, n_in < 64 ? n_in : 64, 0);
    return y;
}

zb_fmap zb_add(zb *z, const char *name, zb_fmap a, zb_fmap b)
{
    char n[256];
    NAME(n, name, "add");
    a.id = zb_ew2(z, n, "Add", 1, map_elems(a), a.id, b.id);
    return a;
}
