/*
 * zoo_build.h - the shared builder of the model zoo: write a model's forward
 * pass once, get a whole training graph (forward, backward, optimizer).
 *
 * A generator describes forward ops only, as TensorFlow builds them:
 *
 *     zb *z = zb_new("rnnlm_2layer_b64", batch, opts, err);   // reads --profile, --cpu
 *     zb_scope(z, "encoder/layer_%d", l);    // layer scope of the ops that follow
 *     zb_prefix(z, "enc/l%d/t%d", l, t);     // name prefix (a TF name scope)
 *     int w = zb_weight(z, "enc/l0/kernel", in * out);          // a variable
 *     int y = zb_op(z, "MatMul", "MatMul", 2.0 * B * in * out, B * out, w, x);
 *     ...
 *     op_graph *g = zb_finish(z, loss, err);  // backward + updates; frees z
 *
 * Each zb_op records its inputs, FLOPs and output size; zb_finish then walks
 * the forward ops in reverse (reverse-mode autodiff over the op graph):
 *   - a forward op that needs a gradient gets one gradient op per input that
 *     needs one (TF's per-input gradients of Mul, Add, ConcatV2, ...), each
 *     fed by the upstream gradient and by the forward op's output;
 *   - an output used by several ops has its upstream gradients summed by an
 *     AddN op first, as tf.gradients does;
 *   - an op reading a weight gets a weight-gradient op (e.g. MatMul's dW);
 *     a weight used several times (an LSTM kernel over T steps) has those
 *     summed by one AddN, then one ApplyAdam op updates it.
 * The variable op and its ApplyAdam share a colocation group named after the
 * weight; the variable holds param_bytes = 3 x weight bytes (the weight and
 * Adam's two moment estimates m and v; gradients are outputs of ops).
 *
 * Costs: every op is timed with the roofline model of opplace/profile.h from
 * its FLOPs and the bytes it moves (inputs + output + weight read);
 * gradient ops cost what their forward op costs (dX and dW of a MatMul each
 * take the forward FLOPs).  With --cpu each op gets per-kind times
 * {"gpu": t, "cpu": t_cpu}.  Tensors are fp32; sizes are given in elements.
 *
 * Errors are sticky: after the first failure every call returns -1 and
 * zb_finish returns NULL with the first message, so generators need no error
 * checks between calls.
 */
#ifndef OPPLACE_ZOO_BUILD_H
#define OPPLACE_ZOO_BUILD_H

#include <stdint.h>

#include "opplace/graph.h"
#include "opplace/options.h"

typedef struct zb zb;

/* Flags of zb_op_ex. */
enum {
    ZB_SPARSE_GRAD = 1, /* weight gradient is sparse (embedding lookup): sized like the output */
    ZB_NO_GRAD = 2      /* gradients stop here (tf.stop_gradient, cached memories) */
};

/* Reads --profile (default v100) and --cpu from o; NULL on a bad setting. */
zb *zb_new(const char *graph_name, int64_t batch, op_options *o, op_error *err);
/* Layer scope ("encoder/layer_2") of the ops created after this call. */
void zb_scope(zb *z, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Name prefix ("enc/l0/t3") of the ops created after this call. */
void zb_prefix(zb *z, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Name prefix of the weights created after this call, when it differs from
 * the op prefix (weights shared by unrolled copies, e.g. Transformer-XL
 * segments); an empty string goes back to the op prefix. */
void zb_weight_prefix(zb *z, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A data source with no gradient (the input batch, token ids). */
int zb_input(zb *z, const char *name, double out_elems);
/* A trainable variable of `elems` fp32 numbers; returns a weight id.  A name
 * already created returns the existing weight (sharing). */
int zb_weight(zb *z, const char *name, double elems);
/* A forward op; returns its record id (or -1 after an error). weight: a
 * weight id or -1.  inputs are record ids. */
int zb_op_n(zb *z, const char *name, const char *type, double flops, double out_elems,
            int weight, const int *inputs, int n_inputs, int flags);
#define ZB_INS(...) (const int[]){__VA_ARGS__}, (int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int))
#define zb_op(z, name, type, flops, out, weight, ...) \
    zb_op_n(z, name, type, flops, out, weight, ZB_INS(__VA_ARGS__), 0)
/* Output size (elements) of a record. */
double zb_elems(const zb *z, int rec);

/* Build the backward pass from `loss` and the optimizer updates, freeze the
 * graph and free z. */
op_graph *zb_finish(zb *z, int loss, op_error *err);
void zb_free(zb *z);

/* Build `model` with build() after applying --paper (or the model's
 * default paper) to o (papers.c); o may be NULL.  Every zoo model's
 * generate goes through it (ZOO_AT_PAPERS). */
op_graph *zoo_generate(const char *model, op_graph *(*build)(op_options *, op_error *),
                       op_options *o, op_error *err);
#define ZOO_AT_PAPERS(fn, model)                                              \
    static op_graph *fn##_at_papers(op_options *o, op_error *err)            \
    {                                                                         \
        return zoo_generate(model, fn, o, err);                               \
    }

/* ---- layers shared by several models (zoo_layers.c) ---- */

/* y = x W (+ b): MatMul [rows x in] x [in x out], then BiasAdd. */
int zb_dense(zb *z, const char *name, int x, double rows, int in, int out, int bias);
/* Elementwise op of `ops_per_elem` FLOPs per output element. */
int zb_ew(zb *z, const char *name, const char *type, double ops_per_elem, double elems,
          const int *inputs, int n_inputs);
#define zb_ew1(z, name, type, ope, elems, a) zb_ew(z, name, type, ope, elems, ZB_INS(a))
#define zb_ew2(z, name, type, ope, elems, a, b) zb_ew(z, name, type, ope, elems, ZB_INS(a, b))
/* Layer normalisation as TF decomposes it (moments, rsqrt, scale, shift). */
int zb_layer_norm(zb *z, const char *name, int x, double rows, int dim);
/* Dropout as TF builds it: random mask, compare, scale. */
int zb_dropout(zb *z, const char *name, int x);

/* A feature map of a CNN: record id and NHWC shape. */
typedef struct zb_fmap {
    int id;
    int n, h, w, c;
} zb_fmap;
/* Conv2D (k x k, stride, SAME padding) with its kernel; no bias. */
zb_fmap zb_conv(zb *z, const char *name, zb_fmap x, int cout, int kh, int kw, int stride);
/* Depthwise-separable conv (depthwise k x k, then 1x1 pointwise). */
zb_fmap zb_sep_conv(zb *z, const char *name, zb_fmap x, int cout, int k, int stride);
/* Batch normalisation as tf.nn.moments + tf.nn.batch_normalization. */
zb_fmap zb_batch_norm(zb *z, const char *name, zb_fmap x);
zb_fmap zb_relu(zb *z, const char *name, zb_fmap x);
/* conv -> batch norm -> relu, the unit of Inception and NAS cells. */
zb_fmap zb_conv_bn_relu(zb *z, const char *name, zb_fmap x, int cout, int kh, int kw, int stride);
/* Max or average pooling ("MaxPool"/"AvgPool"), k x k, stride, SAME. */
zb_fmap zb_pool(zb *z, const char *name, const char *type, zb_fmap x, int k, int stride);
/* Concatenate along channels. */
zb_fmap zb_concat(zb *z, const char *name, const zb_fmap *xs, int n);
/* Elementwise add of same-shaped maps. */
zb_fmap zb_add(zb *z, const char *name, zb_fmap a, zb_fmap b);

#endif
