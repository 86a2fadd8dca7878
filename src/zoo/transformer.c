/*
 * transformer.c - attention models: Transformer and Transformer-XL.
 *
 * Transformer (Vaswani et al. 2017, post-norm as in the paper):
 *   embedding + positional encoding, N encoder layers (self-attention, FFN),
 *   N decoder layers (masked self-attention, encoder-decoder attention,
 *   FFN), output projection and cross-entropy.  Each sub-layer is
 *   x = LayerNorm(x + Dropout(sublayer(x))).  Default: the Celeritas setting
 *   (12 layers, 16 heads, 2048 hidden units, batch 256); Pesto uses 6/10/12
 *   layers with 8 or 16 heads, 1024 or 2048 units, batch 32.
 * Transformer-XL (Dai et al. 2019; SGDP appendix: batch 64, sequence 256,
 *   segment 64, d_model 500, d_inner 1000, 10 heads of 50):
 *   the sequence is processed as seq_len/64 segments; layer l of segment s
 *   attends over [memory ; h], where the memory is layer l-1's output of
 *   segment s-1 behind a stop_gradient (the cached states), with relative
 *   position attention (content term with bias u, position term with bias v
 *   over a projected relative encoding, then the relative shift).  Unrolling
 *   the segments gives a segment x layer grid like the RNNs'.
 * Attention heads are separate op chains (Slice per head of Q, K, V, then
 *   BatchMatMul, scale, mask, Softmax, BatchMatMul per head, Concat), so a
 *   placer can spread heads; TF computes the heads as one batched op, which
 *   has the same FLOPs and bytes.
 * --hidden is d_model; the feed-forward width is 4 x d_model (Transformer) or
 *   2 x d_model (Transformer-XL, as in SGDP's 500/1000).  Vocabulary 32,000.
 * Simplified: no label smoothing, shared source/target length, dropout only
 *   on sub-layer outputs (not inside attention).
 */
#include <stdio.h>

#include "opplace/zoo.h"
#include "zoo/zoo_build.h"

#define VOCAB 32000
#define MAX_HEADS 256

typedef struct tcfg {
    long layers, hidden, heads, batch, seq;
} tcfg;

/* Multi-head attention of `q_in` [B*Sq, d] over `kv_in` [B*Sk, d] under the
 * current prefix; `pos` >= 0 adds Transformer-XL's relative position term
 * (pos: projected relative encodings [Sk, d]); returns the output projection. */
static int attention(zb *z, const char *name, int q_in, int kv_in, double B, double Sq,
                     double Sk, int d, int heads, int causal, int pos)
{
    char n[256];
    int dh = d / heads;
    snprintf(n, sizeof n, "%s/q", name);
    int q = zb_dense(z, n, q_in, B * Sq, d, d, 1);
    snprintf(n, sizeof n, "%s/k", name);
    int k = zb_dense(z, n, kv_in, B * Sk, d, d, 1);
    snprintf(n, sizeof n, "%s/v", name);
    int v = zb_dense(z, n, kv_in, B * Sk, d, d, 1);
    int u_bias = -1, v_bias = -1;
    if (pos >= 0) {
        snprintf(n, sizeof n, "%s/r_w_bias", name);
        u_bias = zb_weight(z, n, d);
        snprintf(n, sizeof n, "%s/r_r_bias", name);
        v_bias = zb_weight(z, n, d);
    }
    int ctx[MAX_HEADS];
    double qe = B * Sq * dh, ke = B * Sk * dh, se = B * Sq * Sk;
    for (int h = 0; h < heads; h++) {
#define HN(op) (snprintf(n, sizeof n, "%s/head_%d/%s", name, h, op), n)
        int qh = zb_ew1(z, HN("q_slice"), "Slice", 0, qe, q);
        int kh = zb_ew1(z, HN("k_slice"), "Slice", 0, ke, k);
        int vh = zb_ew1(z, HN("v_slice"), "Slice", 0, ke, v);
        int s;
        if (pos < 0) {
            s = zb_op(z, HN("scores"), "BatchMatMul", 2 * se * dh, se, -1, qh, kh);
        } else {
            int rh = zb_ew1(z, HN("r_slice"), "Slice", 0, Sk * dh, pos);
            int qu = zb_op(z, HN("q_plus_u"), "Add", qe, qe, u_bias, qh);
            int ac = zb_op(z, HN("content"), "BatchMatMul", 2 * se * dh, se, -1, qu, kh);
            int qv = zb_op(z, HN("q_plus_v"), "Add", qe, qe, v_bias, qh);
            int bd = zb_op(z, HN("position"), "BatchMatMul", 2 * se * dh, se, -1, qv, rh);
            int sh = zb_ew1(z, HN("rel_shift"), "RelShift", 0, se, bd);
            s = zb_ew2(z, HN("add_terms"), "Add", 1, se, ac, sh);
        }
        s = zb_ew1(z, HN("scale"), "Mul", 1, se, s);
        if (causal)
            s = zb_ew1(z, HN("mask"), "Add", 1, se, s);
        int p = zb_ew1(z, HN("Softmax"), "Softmax", 5, se, s);
        ctx[h] = zb_op(z, HN("context"), "BatchMatMul", 2 * se * dh, qe, -1, p, vh);
#undef HN
    }
    snprintf(n, sizeof n, "%s/concat_heads", name);
    int cat = zb_op_n(z, n, "ConcatV2", 0, B * Sq * d, -1, ctx, heads, 0);
    snprintf(n, sizeof n, "%s/output", name);
    return zb_dense(z, n, cat, B * Sq, d, d, 1);
}

/* x = LayerNorm(x + Dropout(y)). */
static int residual_norm(zb *z, const char *name, int x, int y, double rows, int d)
{
    char n[256];
    snprintf(n, sizeof n, "%s/dropout", name);
    int dy = zb_dropout(z, n, y);
    snprintf(n, sizeof n, "%s/residual", name);
    int s = zb_ew2(z, n, "Add", 1, rows * d, x, dy);
    snprintf(n, sizeof n, "%s/LayerNorm", name);
    return zb_layer_norm(z, n, s, rows, d);
}

static int feed_forward(zb *z, int x, double rows, int d, int inner)
{
    int h = zb_dense(z, "ffn/dense_1", x, rows, d, inner, 1);
    h = zb_ew1(z, "ffn/Relu", "Relu", 1, rows * inner, h);
    h = zb_dense(z, "ffn/dense_2", h, rows, inner, d, 1);
    return residual_norm(z, "ffn", x, h, rows, d);
}

/* Token ids -> embeddings + positional encoding, in scope "embedding". */
static int embed(zb *z, const char *name, double tokens, int d)
{
    zb_scope(z, "embedding");
    zb_prefix(z, "%s", name);
    int ids = zb_input(z, "ids", tokens);
    int table = zb_weight(z, "embedding", (double)VOCAB * d);
    int e = zb_op_n(z, "embedding_lookup", "GatherV2", tokens * d, tokens * d, table,
                    (const int[]){ids}, 1, ZB_SPARSE_GRAD);
    int scaled = zb_ew1(z, "scale", "Mul", 1, tokens * d, e);
    return zb_ew1(z, "add_positional", "Add", 1, tokens * d, scaled);
}

/* Projection to the vocabulary, cross-entropy and its mean. */
static int softmax_loss(zb *z, int x, double tokens, int d)
{
    zb_scope(z, "softmax");
    zb_prefix(z, "softmax");
    int labels = zb_input(z, "labels", tokens);
    int logits = zb_dense(z, "logits", x, tokens, d, VOCAB, 1);
    int xent = zb_ew2(z, "xent", "SparseSoftmaxCrossEntropyWithLogits", 5, tokens,
                      logits, labels);
    return zb_ew1(z, "Mean", "Mean", 1, 1, xent);
}

/* One sub-layer: attention of x over kv (sequence S both), then the
 * residual and layer norm, all named name/... */
static int attend(zb *z, const char *name, int x, int kv, double B, double S, int d, int H,
                  int causal)
{
    int a = attention(z, name, x, kv, B, S, S, d, H, causal, -1);
    return residual_norm(z, name, x, a, B * S, d);
}

/* Enter layer l of a stack ("encoder", "decoder"): its scope and op names. */
static void enter_layer(zb *z, const char *stack, int l)
{
    zb_scope(z, "%s/layer_%d", stack, l);
    zb_prefix(z, "%s/layer_%d", stack, l);
}

static op_status read_tcfg(op_options *o, tcfg *c, long layers, long hidden, long heads,
                           long batch, long seq, op_error *err)
{
    if (op_options_int(o, "layers", layers, 1, 256, &c->layers, err) ||
        op_options_int(o, "hidden", hidden, 1, 65536, &c->hidden, err) ||
        op_options_int(o, "heads", heads, 1, MAX_HEADS, &c->heads, err) ||
        op_options_int(o, "batch", batch, 1, 1 << 20, &c->batch, err) ||
        op_options_int(o, "seq-len", seq, 1, 1 << 16, &c->seq, err))
        return err->code;
    if (c->hidden % c->heads)
        return op_fail(err, OP_EUSAGE, "--hidden (%ld) must be a multiple of --heads (%ld)",
                       c->hidden, c->heads);
    return OP_OK;
}

static op_graph *gen_transformer(op_options *o, op_error *err)
{
    tcfg c;
    if (read_tcfg(o, &c, 12, 2048, 16, 256, 32, err))
        return NULL;
    char name[96];
    snprintf(name, sizeof name, "transformer_%ldlayer_h%ld_a%ld_b%ld_s%ld", c.layers, c.hidden,
             c.heads, c.batch, c.seq);
    zb *z = zb_new(name, c.batch, o, err);
    if (!z)
        return NULL;
    double B = (double)c.batch, S = (double)c.seq, rows = B * S;
    int d = (int)c.hidden, H = (int)c.heads;
    int x = embed(z, "encoder/embedding", rows, d);
    for (int l = 0; l < c.layers; l++) {
        enter_layer(z, "encoder", l);
        x = attend(z, "self_attention", x, x, B, S, d, H, 0);
        x = feed_forward(z, x, rows, d, 4 * d);
    }
    int memory = x;
    int y = embed(z, "decoder/embedding", rows, d);
    for (int l = 0; l < c.layers; l++) {
        enter_layer(z, "decoder", l);
        y = attend(z, "self_attention", y, y, B, S, d, H, 1);
        y = attend(z, "encdec_attention", y, memory, B, S, d, H, 0);
        y = feed_forward(z, y, rows, d, 4 * d);
    }
    return zb_finish(z, softmax_loss(z, y, rows, d), err);
}

#define XL_SEGMENT 64
#define XL_MAX_SEGMENTS 256
#define XL_MAX_LAYERS 256

static op_graph *gen_transformer_xl(op_options *o, op_error *err)
{
    tcfg c;
    if (read_tcfg(o, &c, 2, 500, 10, 64, 256, err))
        return NULL;
    int segs = (int)((c.seq + XL_SEGMENT - 1) / XL_SEGMENT);
    if (segs > XL_MAX_SEGMENTS) {
        op_fail(err, OP_EUSAGE, "--seq-len: at most %d segments of %d tokens", XL_MAX_SEGMENTS,
                XL_SEGMENT);
        return NULL;
    }
    char name[96];
    snprintf(name, sizeof name, "transformer_xl_%ldlayer_h%ld_a%ld_b%ld_s%ld", c.layers,
             c.hidden, c.heads, c.batch, c.seq);
    zb *z = zb_new(name, c.batch, o, err);
    if (!z)
        return NULL;
    double B = (double)c.batch, S = XL_SEGMENT, rows = B * S;
    int d = (int)c.hidden, H = (int)c.heads;
    /* relative position encodings (sinusoids, no gradient) over memory + segment */
    zb_scope(z, "embedding");
    zb_prefix(z, "transformer/pos_emb");
    int pos_emb = zb_input(z, "sinusoid", 2 * S * d);
    int mem[XL_MAX_LAYERS]; /* per layer: input of that layer in the previous segment */
    for (int l = 0; l < c.layers; l++)
        mem[l] = -1;
    int losses[XL_MAX_SEGMENTS];
    for (int s = 0; s < segs; s++) {
        char seg[64];
        snprintf(seg, sizeof seg, "segment_%d/embedding", s);
        zb_weight_prefix(z, "transformer/embedding");
        int x = embed(z, seg, rows, d);
        for (int l = 0; l < c.layers; l++) {
            zb_scope(z, "layer_%d", l);
            zb_prefix(z, "segment_%d/layer_%d", s, l);
            zb_weight_prefix(z, "transformer/layer_%d", l); /* shared by all segments */
            int kv = x, klen = (int)S;
            if (mem[l] >= 0) { /* [stop_gradient(memory) ; x] */
                int sg = zb_op_n(z, "mems/StopGradient", "StopGradient", 0, rows * d, -1,
                                 &mem[l], 1, ZB_NO_GRAD);
                kv = zb_ew2(z, "mems/concat", "ConcatV2", 0, 2 * rows * d, sg, x);
                klen = 2 * (int)S;
            }
            mem[l] = x;
            int r = zb_dense(z, "r_net", pos_emb, klen, d, d, 0);
            int a = attention(z, "rel_attention", x, kv, B, S, klen, d, H, 1, r);
            x = residual_norm(z, "rel_attention", x, a, rows, d);
            x = feed_forward(z, x, rows, d, 2 * d);
        }
        zb_scope(z, "softmax");
        zb_prefix(z, "segment_%d/softmax", s);
        zb_weight_prefix(z, "transformer/softmax");
        int labels = zb_input(z, "labels", rows);
        int logits = zb_dense(z, "logits", x, rows, d, VOCAB, 1);
        losses[s] = zb_ew2(z, "xent", "SparseSoftmaxCrossEntropyWithLogits", 5, rows, logits,
                           labels);
    }
    zb_weight_prefix(z, "%s", "");
    zb_scope(z, "softmax");
    zb_prefix(z, "loss");
    int loss = zb_op_n(z, "Mean", "Mean", segs * rows, 1, -1, losses, segs, 0);
    return zb_finish(z, loss, err);
}

ZOO_AT_PAPERS(gen_transformer, "transformer")

const op_zoo_model op_zoo_model_transformer = {
    .name = "transformer",
    .summary = "encoder-decoder Transformer, heads as branches (Celeritas: --layers 12 --heads 16 --hidden 2048 --batch 256 --seq-len 32; --paper celeritas|pesto)",
    .generate = gen_transformer_at_papers,
};

ZOO_AT_PAPERS(gen_transformer_xl, "transformer_xl")

const op_zoo_model op_zoo_model_transformer_xl = {
    .name = "transformer_xl",
    .summary = "Transformer-XL, segments x layers with cached memories (SGDP: --layers 2 --hidden 500 --heads 10 --batch 64 --seq-len 256)",
    .generate = gen_transformer_xl_at_papers,
};
