/*
 * rnn_models.c - recurrent models of the papers: RNNLM, NMT, GNMT.
 *
 * All three unroll LSTM cells over time in a layer x time grid, as the
 * static TensorFlow graphs the papers place do: the cell at (layer l, step t)
 * needs the cell below (l-1, t) and the cell before (l, t-1), so a
 * wavefront of cells can run concurrently on several devices.  A cell is
 * TF's BasicLSTMCell with its gates as separate ops:
 *     ConcatV2(x, h) -> MatMul(kernel) -> BiasAdd(bias) -> Split ->
 *     Sigmoid(i), Tanh(j), Add(forget bias) -> Sigmoid(f), Sigmoid(o) ->
 *     Mul(c, f), Mul(i, j) -> Add = c' -> Tanh -> Mul(o) = h'
 * The kernel and bias are one variable per layer shared by all steps.
 *
 * RNNLM (SGDP appendix: batch 64, hidden 2048, 2 layers; Pesto: batch 128,
 *   2/4 layers x 2048): embedding lookup per step, L LSTM layers, a softmax
 *   over a 10,000-word vocabulary (Penn Treebank, as Pesto trains on) per step.
 * NMT (Luong et al. 2015 attention, the TF "nmt" tutorial model that Pesto,
 *   Celeritas and Trinity use; Pesto: 2/4 layers x 1024, batch 128):
 *   L-layer encoder, L-layer decoder with input feeding; Luong attention on
 *   the top decoder layer per decoder step (score = BatchMatMul with the
 *   projected memory, Softmax, context BatchMatMul, attention layer).
 * GNMT (Wu et al. 2016, TF nmt's "gnmt" architecture; SGDP: batch 64,
 *   2/4/8 layers): bidirectional first encoder layer, residual connections
 *   from the third layer up in encoder and decoder, normalised-Bahdanau
 *   attention driven by the bottom decoder layer, its context fed to every
 *   decoder layer.
 * --seq-len: the papers do not state the unrolled length; defaults are 40
 * steps (RNNLM, NMT) and 20 (GNMT, so the built-in demo stays a few
 * thousand ops); bench/zoo.sh shows the lengths that reach the papers' op
 * counts (100-160 steps).
 * Simplified: fixed sequence lengths (no padding/masking, no bucketing), one
 * shared vocabulary size for source and target (32,000 word pieces), no
 * dropout, no beam search (training graphs only).
 */
#include <stdio.h>
#include <string.h>

#include "opplace/zoo.h"
#include "zoo/zoo_build.h"

#define MAX_LAYERS 64
#define MAX_STEPS 1024

typedef struct rnn_cfg {
    long layers, hidden, batch, steps;
    long vocab;
} rnn_cfg;

static op_status read_cfg(op_options *o, rnn_cfg *c, long layers, long hidden, long batch,
                          long steps, op_error *err)
{
    if (op_options_int(o, "layers", layers, 1, MAX_LAYERS, &c->layers, err) ||
        op_options_int(o, "hidden", hidden, 1, 65536, &c->hidden, err) ||
        op_options_int(o, "batch", batch, 1, 1 << 20, &c->batch, err) ||
        op_options_int(o, "seq-len", steps, 1, MAX_STEPS, &c->steps, err))
        return err->code;
    return OP_OK;
}

/* ---- the LSTM cell ---- */

typedef struct lstm {
    int kernel, bias;
    int in, hidden;
    int zero; /* zero initial state of this layer */
} lstm;

static lstm lstm_layer(zb *z, const char *scope, int in, int hidden, double batch)
{
    char n[256];
    lstm L = {.in = in, .hidden = hidden};
    zb_prefix(z, "%s", scope);
    snprintf(n, sizeof n, "kernel");
    L.kernel = zb_weight(z, n, (double)(in + hidden) * 4 * hidden);
    L.bias = zb_weight(z, "bias", 4.0 * hidden);
    L.zero = zb_op_n(z, "zero_state", "Fill", 0, batch * hidden, -1, NULL, 0, 0);
    return L;
}

/* One step of an LSTM layer under the current prefix; returns h', sets *c. */
static int lstm_cell(zb *z, const lstm *L, int x, int h, int *c, double B)
{
    double H = L->hidden, g = B * 4 * H, e = B * H;
    int cat = zb_ew2(z, "concat", "ConcatV2", 0, B * (L->in + H), x, h);
    int mm = zb_op(z, "MatMul", "MatMul", 2 * B * (L->in + H) * 4 * H, g, L->kernel, cat);
    int ba = zb_op(z, "BiasAdd", "BiasAdd", g, g, L->bias, mm);
    int sp = zb_ew1(z, "split", "Split", 0, g, ba);
    int i = zb_ew1(z, "Sigmoid", "Sigmoid", 4, e, sp);
    int j = zb_ew1(z, "Tanh", "Tanh", 4, e, sp);
    int f = zb_ew1(z, "Sigmoid_1", "Sigmoid", 4, e, zb_ew1(z, "add", "Add", 1, e, sp));
    int o = zb_ew1(z, "Sigmoid_2", "Sigmoid", 4, e, sp);
    int cf = zb_ew2(z, "mul", "Mul", 1, e, *c, f);
    int ij = zb_ew2(z, "mul_1", "Mul", 1, e, i, j);
    *c = zb_ew2(z, "add_1", "Add", 1, e, cf, ij);
    int tc = zb_ew1(z, "Tanh_1", "Tanh", 4, e, *c);
    return zb_ew2(z, "mul_2", "Mul", 1, e, tc, o);
}

/* ---- shared pieces: embedding, per-step softmax loss ---- */

/* Token ids for all steps and the embedding table. */
static int embedding(zb *z, const char *scope, const char *name, long vocab, long hidden,
                     double tokens, int *ids)
{
    zb_scope(z, "%s", scope);
    zb_prefix(z, "%s", name);
    *ids = zb_input(z, "ids", tokens);
    return zb_weight(z, "embedding", (double)vocab * hidden);
}

static int lookup(zb *z, int table, int ids, double B, long hidden)
{
    return zb_op_n(z, "embedding_lookup", "GatherV2", B * hidden, B * hidden, table,
                   (const int[]){ids}, 1, ZB_SPARSE_GRAD);
}

typedef struct softmax {
    int kernel, bias, labels;
    long in, vocab;
} softmax;

static softmax softmax_layer(zb *z, long in, long vocab, double tokens)
{
    zb_scope(z, "softmax");
    zb_prefix(z, "softmax");
    return (softmax){zb_weight(z, "kernel", (double)in * vocab), zb_weight(z, "bias", vocab),
                     zb_input(z, "labels", tokens), in, vocab};
}

/* Logits and cross-entropy of one step (prefix "softmax/t<t>"). */
static int step_loss(zb *z, const softmax *s, int h, double B, int t)
{
    zb_prefix(z, "softmax/t%d", t);
    double logits = B * s->vocab;
    int mm = zb_op(z, "MatMul", "MatMul", 2 * B * s->in * s->vocab, logits, s->kernel, h);
    int ba = zb_op(z, "BiasAdd", "BiasAdd", logits, logits, s->bias, mm);
    return zb_ew2(z, "xent", "SparseSoftmaxCrossEntropyWithLogits", 5, B, ba, s->labels);
}

static int mean_loss(zb *z, const int *xent, int n, double B)
{
    zb_scope(z, "softmax");
    zb_prefix(z, "loss");
    return zb_op_n(z, "Mean", "Mean", n * B, 1, -1, xent, n, 0);
}

/* ---- RNNLM ---- */

static op_graph *gen_rnnlm(op_options *o, op_error *err)
{
    rnn_cfg c;
    if (read_cfg(o, &c, 2, 2048, 64, 40, err))
        return NULL;
    c.vocab = 10000;
    char name[96];
    snprintf(name, sizeof name, "rnnlm_%ldlayer_h%ld_b%ld_t%ld", c.layers, c.hidden, c.batch,
             c.steps);
    zb *z = zb_new(name, c.batch, o, err);
    if (!z)
        return NULL;
    double B = (double)c.batch;
    int ids, emb = embedding(z, "embedding", "embedding", c.vocab, c.hidden, B * c.steps, &ids);
    int x[MAX_STEPS], xent[MAX_STEPS];
    for (int t = 0; t < c.steps; t++) {
        zb_prefix(z, "embedding/t%d", t);
        x[t] = lookup(z, emb, ids, B, c.hidden);
    }
    for (int l = 0; l < c.layers; l++) {
        char scope[64];
        snprintf(scope, sizeof scope, "rnn/layer_%d", l);
        zb_scope(z, "lstm/layer_%d", l);
        lstm L = lstm_layer(z, scope, (int)c.hidden, (int)c.hidden, B);
        int h = L.zero, cc = L.zero;
        for (int t = 0; t < c.steps; t++) {
            zb_prefix(z, "rnn/layer_%d/t%d", l, t);
            h = x[t] = lstm_cell(z, &L, x[t], h, &cc, B);
        }
    }
    softmax s = softmax_layer(z, c.hidden, c.vocab, B * c.steps);
    for (int t = 0; t < c.steps; t++)
        xent[t] = step_loss(z, &s, x[t], B, t);
    return zb_finish(z, mean_loss(z, xent, (int)c.steps, B), err);
}

/* ---- encoder shared by NMT and GNMT ---- */

/* Runs one unidirectional LSTM layer over x[0..T-1] (in place); reverse runs
 * it from the last step to the first.  residual adds the layer's input. */
static void encoder_layer(zb *z, const char *scope, int *x, int in, int hidden, int T, double B,
                          int reverse, int residual)
{
    lstm L = lstm_layer(z, scope, in, hidden, B);
    int h = L.zero, c = L.zero;
    for (int k = 0; k < T; k++) {
        int t = reverse ? T - 1 - k : k;
        zb_prefix(z, "%s/t%d", scope, t);
        h = lstm_cell(z, &L, x[t], h, &c, B);
        x[t] = residual ? zb_ew2(z, "residual", "Add", 1, B * hidden, h, x[t]) : h;
    }
}

/* Stack the top encoder outputs into the attention memory [B, T, H]. */
static int attention_memory(zb *z, const int *x, int T, double B, long hidden)
{
    zb_scope(z, "decoder/attention");
    zb_prefix(z, "attention");
    return zb_op_n(z, "memory", "Pack", 0, B * T * hidden, -1, x, T, 0);
}

/* The start NMT and GNMT share: read the options (given defaults), name the
 * graph, and look up the source sentence: x[t] is step t's embedding. */
static zb *seq2seq_begin(op_options *o, const char *model, long batch, long steps, rnn_cfg *c,
                         int *x, op_error *err)
{
    if (read_cfg(o, c, 2, 1024, batch, steps, err))
        return NULL;
    c->vocab = 32000;
    char name[96];
    snprintf(name, sizeof name, "%s_%ldlayer_h%ld_b%ld_t%ld", model, c->layers, c->hidden,
             c->batch, c->steps);
    zb *z = zb_new(name, c->batch, o, err);
    if (!z)
        return NULL;
    double B = (double)c->batch;
    int src, src_emb =
        embedding(z, "embedding", "encoder/embedding", c->vocab, c->hidden, B * c->steps, &src);
    for (int t = 0; t < c->steps; t++) {
        zb_prefix(z, "encoder/embedding/t%d", t);
        x[t] = lookup(z, src_emb, src, B, c->hidden);
    }
    return z;
}

/* The decoder's target embedding (*tgt, *tgt_emb), its LSTM layers (layer 0
 * takes in0 inputs, the others in; zero initial states) and the softmax. */
static softmax decoder_layers(zb *z, const rnn_cfg *c, int in0, int in, lstm *L, int *h,
                              int *cs, int *tgt, int *tgt_emb)
{
    double B = (double)c->batch;
    *tgt_emb = embedding(z, "embedding", "decoder/embedding", c->vocab, c->hidden,
                         B * c->steps, tgt);
    for (int l = 0; l < c->layers; l++) {
        char scope[64];
        snprintf(scope, sizeof scope, "decoder/layer_%d", l);
        zb_scope(z, "decoder/layer_%d", l);
        L[l] = lstm_layer(z, scope, l == 0 ? in0 : in, (int)c->hidden, B);
        h[l] = cs[l] = L[l].zero;
    }
    return softmax_layer(z, c->hidden, c->vocab, B * c->steps);
}

/* Decoder step t's input to layer 0: the target word's embedding
 * concatenated (op `name`) with what the previous step fed back. */
static int decoder_input(zb *z, const rnn_cfg *c, int tgt_emb, int tgt, int t, const char *name,
                         int fed_back)
{
    double B = (double)c->batch;
    zb_scope(z, "embedding");
    zb_prefix(z, "decoder/embedding/t%d", t);
    int y = lookup(z, tgt_emb, tgt, B, c->hidden);
    zb_scope(z, "decoder/layer_0");
    zb_prefix(z, "decoder/layer_0/t%d", t);
    return zb_ew2(z, name, "ConcatV2", 0, B * 2 * (double)c->hidden, y, fed_back);
}

/* ---- NMT: Luong attention with input feeding ---- */

static op_graph *gen_nmt(op_options *o, op_error *err)
{
    rnn_cfg c;
    int x[MAX_STEPS], xent[MAX_STEPS];
    zb *z = seq2seq_begin(o, "nmt", 128, 40, &c, x, err);
    if (!z)
        return NULL;
    double B = (double)c.batch, H = (double)c.hidden;
    int T = (int)c.steps;
    for (int l = 0; l < c.layers; l++) {
        char scope[64];
        snprintf(scope, sizeof scope, "encoder/layer_%d", l);
        zb_scope(z, "encoder/layer_%d", l);
        encoder_layer(z, scope, x, (int)H, (int)H, T, B, 0, 0);
    }
    int memory = attention_memory(z, x, T, B, c.hidden);
    int keys = zb_dense(z, "memory_layer", memory, B * T, (int)H, (int)H, 0);
    int w_att = zb_weight(z, "attention_layer/kernel", 2 * H * H);
    lstm L[MAX_LAYERS];
    int h[MAX_LAYERS], cs[MAX_LAYERS], tgt, tgt_emb;
    softmax s = decoder_layers(z, &c, (int)(2 * H), (int)H, L, h, cs, &tgt, &tgt_emb);
    int att = L[0].zero; /* attention output of the previous step (input feeding) */
    for (int t = 0; t < T; t++) {
        int in = decoder_input(z, &c, tgt_emb, tgt, t, "input_feeding", att);
        for (int l = 0; l < c.layers; l++) {
            zb_scope(z, "decoder/layer_%d", l);
            zb_prefix(z, "decoder/layer_%d/t%d", l, t);
            in = h[l] = lstm_cell(z, &L[l], in, h[l], &cs[l], B);
        }
        zb_scope(z, "decoder/attention");
        zb_prefix(z, "decoder/attention/t%d", t);
        int score = zb_op(z, "score", "BatchMatMul", 2 * B * T * H, B * T, -1, in, keys);
        int align = zb_ew1(z, "Softmax", "Softmax", 5, B * T, score);
        int ctx = zb_op(z, "context", "BatchMatMul", 2 * B * T * H, B * H, -1, align, memory);
        int cat = zb_ew2(z, "concat", "ConcatV2", 0, B * 2 * H, ctx, in);
        int proj = zb_op(z, "attention_layer", "MatMul", 2 * B * 2 * H * H, B * H, w_att, cat);
        att = zb_ew1(z, "Tanh", "Tanh", 4, B * H, proj);
        zb_scope(z, "softmax");
        xent[t] = step_loss(z, &s, att, B, t);
    }
    return zb_finish(z, mean_loss(z, xent, T, B), err);
}

/* ---- GNMT: bi-directional bottom encoder layer, residuals, Bahdanau attention ---- */

/* Normalised Bahdanau attention of one decoder step: returns the context. */
static int bahdanau(zb *z, int query, int keys, int memory, int w_query, int w_v, double B, int T,
                    double H)
{
    int q = zb_op(z, "query_layer", "MatMul", 2 * B * H * H, B * H, w_query, query);
    int sum = zb_ew2(z, "add", "Add", 1, B * T * H, keys, q);
    int th = zb_ew1(z, "Tanh", "Tanh", 4, B * T * H, sum);
    int sc = zb_op(z, "score", "Mul", B * T * H, B * T * H, w_v, th);
    int red = zb_ew1(z, "Sum", "Sum", 1, B * T, sc);
    int align = zb_ew1(z, "Softmax", "Softmax", 5, B * T, red);
    return zb_op(z, "context", "BatchMatMul", 2 * B * T * H, B * H, -1, align, memory);
}

static op_graph *gen_gnmt(op_options *o, op_error *err)
{
    rnn_cfg c;
    int x[MAX_STEPS], bw[MAX_STEPS], xent[MAX_STEPS];
    zb *z = seq2seq_begin(o, "gnmt", 64, 20, &c, x, err);
    if (!z)
        return NULL;
    double B = (double)c.batch, H = (double)c.hidden;
    int T = (int)c.steps;
    memcpy(bw, x, (size_t)T * sizeof *x);
    /* layer 0: forward and backward LSTMs, outputs concatenated (2H) */
    zb_scope(z, "encoder/layer_0");
    encoder_layer(z, "encoder/layer_0/fw", x, (int)H, (int)H, T, B, 0, 0);
    encoder_layer(z, "encoder/layer_0/bw", bw, (int)H, (int)H, T, B, 1, 0);
    for (int t = 0; t < T; t++) {
        zb_prefix(z, "encoder/layer_0/t%d", t);
        x[t] = zb_ew2(z, "bi_concat", "ConcatV2", 0, B * 2 * H, x[t], bw[t]);
    }
    for (int l = 1; l < c.layers; l++) {
        char scope[64];
        snprintf(scope, sizeof scope, "encoder/layer_%d", l);
        zb_scope(z, "encoder/layer_%d", l);
        encoder_layer(z, scope, x, (int)(l == 1 ? 2 * H : H), (int)H, T, B, 0, l >= 2);
    }
    int in_dim = c.layers == 1 ? (int)(2 * H) : (int)H;
    int memory = attention_memory(z, x, T, B, in_dim);
    int keys = zb_dense(z, "memory_layer", memory, B * T, in_dim, (int)H, 0);
    int w_query = zb_weight(z, "query_layer/kernel", H * H);
    int w_v = zb_weight(z, "attention_v", H);
    lstm L[MAX_LAYERS]; /* every layer's input: input ++ attention context */
    int h[MAX_LAYERS], cs[MAX_LAYERS], tgt, tgt_emb;
    softmax s = decoder_layers(z, &c, (int)(2 * H), (int)(2 * H), L, h, cs, &tgt, &tgt_emb);
    int ctx = L[0].zero; /* context of the previous step feeds the bottom layer */
    for (int t = 0; t < T; t++) {
        int in = decoder_input(z, &c, tgt_emb, tgt, t, "input_concat", ctx);
        int bottom = h[0] = lstm_cell(z, &L[0], in, h[0], &cs[0], B);
        zb_scope(z, "decoder/attention");
        zb_prefix(z, "decoder/attention/t%d", t);
        ctx = bahdanau(z, bottom, keys, memory, w_query, w_v, B, T, H);
        int below = bottom;
        for (int l = 1; l < c.layers; l++) {
            zb_scope(z, "decoder/layer_%d", l);
            zb_prefix(z, "decoder/layer_%d/t%d", l, t);
            int cat = zb_ew2(z, "input_concat", "ConcatV2", 0, B * 2 * H, below, ctx);
            h[l] = lstm_cell(z, &L[l], cat, h[l], &cs[l], B);
            below = l >= 2 ? zb_ew2(z, "residual", "Add", 1, B * H, h[l], below) : h[l];
        }
        zb_scope(z, "softmax");
        xent[t] = step_loss(z, &s, below, B, t);
    }
    return zb_finish(z, mean_loss(z, xent, T, B), err);
}

ZOO_AT_PAPERS(gen_rnnlm, "rnnlm")

const op_zoo_model op_zoo_model_rnnlm = {
    .name = "rnnlm",
    .summary = "LSTM language model, layer x time grid (SGDP: --layers 2 --hidden 2048 --batch 64 --seq-len 100; --paper sgdp|pesto)",
    .generate = gen_rnnlm_at_papers,
};

ZOO_AT_PAPERS(gen_nmt, "nmt")

const op_zoo_model op_zoo_model_nmt = {
    .name = "nmt",
    .summary = "seq2seq LSTM with Luong attention (Celeritas: --layers 4 --hidden 2048 --batch 512 --seq-len 75; --paper celeritas|pesto|trinity)",
    .generate = gen_nmt_at_papers,
};

ZOO_AT_PAPERS(gen_gnmt, "gnmt")

const op_zoo_model op_zoo_model_gnmt = {
    .name = "gnmt",
    .summary = "GNMT: bi-LSTM encoder, residuals, Bahdanau attention (SGDP: --layers 2 --hidden 1024 --batch 64 --seq-len 110; --paper sgdp|trinity)",
    .generate = gen_gnmt_at_papers,
};
