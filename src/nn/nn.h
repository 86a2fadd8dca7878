/*
 * nn/nn.h - the small neural-network engine behind the learned placers
 * (SGDP: GraphSAGE + segment-recurrent attention; Trinity: feed-forward
 * partitioner + LSTM seq2seq with additive attention).
 *
 * OVERVIEW
 *
 *   nn_tensor   a row-major [rows x cols] matrix of doubles; a *view*, it never
 *               owns memory.  Memory comes from one of two owners:
 *   nn_params   the model: owns every trainable nn_param (value, grad, Adam
 *               moments) under a unique name; Adam, gradient clipping,
 *               zero-grad, save and load all iterate over it.
 *   nn_arena    scratch memory for one forward/backward pass (activations,
 *               caches, gradients of activations).  A bump allocator: reset it
 *               once per step and, after the first step has sized it, a step
 *               does not call malloc again.
 *
 *   Layers are pairs of plain functions, nn_X_forward / nn_X_backward, side by
 *   side in one file each.  Layers with weights have a small struct (nn_linear,
 *   nn_lstm, ...) made by nn_X_init, which registers the weights in an
 *   nn_params under "prefix.name".  Layers that must remember something for
 *   the backward pass (argmax, normalisation statistics, attention
 *   probabilities, dropout masks, LSTM gates) fill an nn_X_cache whose memory
 *   comes from the arena passed to forward; the cache lives until the arena is
 *   reset.
 *
 *   Two rules hold for every layer:
 *     1. forward OVERWRITES its outputs (which the caller allocates);
 *     2. backward ADDS into every gradient it produces: input gradients
 *        (dx += ...) and parameter gradients (p->grad += ...).  So a tensor
 *        used twice simply receives both contributions; zero gradients before
 *        use (arena tensors start zeroed; nn_params_zero_grad for weights).
 *        A gradient output may be NULL when it is not wanted, and must not
 *        alias the incoming gradient dy.
 *   Shape mismatches are programming errors and are caught by assert();
 *   conditions that depend on data (bad ids, out-of-range neighbors, rows
 *   with every entry masked, files) are reported through op_error.
 *
 * WHY DOUBLE
 *
 *   Elements are double, not float.  The placers' networks are small (widths
 *   of 32..512; graphs of up to ~10^5 nodes), so dgemm is fast enough, while
 *   double makes PPO's probability ratios and long softmax/attention sums
 *   numerically quiet and lets every backward pass be checked against central
 *   finite differences to ~1e-7 instead of a loose 1e-2 that can hide bugs.
 *   Weight files store IEEE-754 binary64, little-endian.
 *
 * WORKED EXAMPLE: a two-layer regression net trained with Adam
 *
 *   op_error err = {0};
 *   nn_rng rng;  nn_rng_seed(&rng, 42);          // everything is seeded
 *   nn_params ps; nn_params_init(&ps);
 *   nn_linear l1, l2;
 *   nn_linear_init(&l1, &ps, "l1", 4, 16, true, &rng, &err);   // check status
 *   nn_linear_init(&l2, &ps, "l2", 16, 1, true, &rng, &err);
 *   nn_adam adam = nn_adam_defaults(1e-3);
 *   nn_arena ar;  nn_arena_init(&ar, 1 << 20, &err);
 *   for (int step = 0; step < 1000; step++) {
 *       nn_arena_reset(&ar);
 *       nn_tensor x = nn_tensor_view(xbuf, batch, 4);       // caller's data
 *       nn_tensor h, a, y, dy, da, dh;
 *       nn_arena_tensor(&ar, batch, 16, &h, &err);           // (check each)
 *       nn_arena_tensor(&ar, batch, 16, &a, &err);
 *       nn_arena_tensor(&ar, batch, 1, &y, &err);
 *       nn_linear_forward(&l1, &x, &h);
 *       nn_act_forward(NN_ACT_RELU, &h, &a);
 *       nn_linear_forward(&l2, &a, &y);
 *       nn_arena_tensor(&ar, batch, 1, &dy, &err);           // dL/dy, by hand
 *       for (int i = 0; i < batch; i++)
 *           dy.data[i] = 2.0 * (y.data[i] - target[i]) / batch;
 *       nn_arena_tensor(&ar, batch, 16, &da, &err);
 *       nn_arena_tensor(&ar, batch, 16, &dh, &err);
 *       nn_params_zero_grad(&ps);
 *       nn_linear_backward(&l2, &a, &dy, &da);               // da += ..., dW += ...
 *       nn_act_backward(NN_ACT_RELU, &a, &da, &dh);          // uses the OUTPUT a
 *       nn_linear_backward(&l1, &x, &dh, NULL);              // no dx wanted
 *       nn_params_clip_grad_norm(&ps, 1.0);
 *       nn_adam_step(&adam, &ps);
 *   }
 *   nn_params_save(&ps, "model.opnn", &err);
 *   nn_arena_destroy(&ar); nn_params_destroy(&ps);
 *
 * Backpropagation through time (LSTM) and over segments (attention memory)
 * is the caller's loop: keep each step's cache in the arena, then walk the
 * steps in reverse, passing each step's dh_prev/dc_prev to the step before.
 */
#ifndef OPPLACE_NN_H
#define OPPLACE_NN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opplace/error.h"

/* ------------------------------------------------------------------ rng */

/* xoshiro256** seeded through splitmix64: small, fast, and the same stream
 * on every platform for the same seed.  Not for cryptography. */
typedef struct nn_rng {
    uint64_t s[4];
} nn_rng;

void nn_rng_seed(nn_rng *rng, uint64_t seed);              /* any seed, 0 included */
uint64_t nn_rng_next(nn_rng *rng);                         /* 64 random bits */
double nn_rng_uniform(nn_rng *rng);                        /* in [0, 1), 53 bits */
double nn_rng_normal(nn_rng *rng);                         /* N(0,1), Box-Muller */
uint64_t nn_rng_below(nn_rng *rng, uint64_t n);            /* unbiased in [0, n); n > 0 */
/* An independent generator for sub-task `stream` (e.g. one per worker or per
 * graph), derived from parent's state; advances parent once. */
nn_rng nn_rng_fork(nn_rng *parent, uint64_t stream);
void nn_rng_shuffle_int(nn_rng *rng, int *a, size_t n);    /* Fisher-Yates */

/* --------------------------------------------------------------- tensor */

typedef struct nn_tensor {
    int rows, cols;
    double *data;   /* rows*cols values, row-major, not owned */
} nn_tensor;

#define NN_AT(t, i, j) ((t)->data[(size_t)(i) * (size_t)(t)->cols + (size_t)(j)])

nn_tensor nn_tensor_view(double *data, int rows, int cols);
/* The view of rows [row0, row0+nrows) of t (shares t's memory). */
nn_tensor nn_tensor_rows(const nn_tensor *t, int row0, int nrows);
size_t nn_tensor_size(const nn_tensor *t);                       /* rows*cols */
bool nn_tensor_same_shape(const nn_tensor *a, const nn_tensor *b);
void nn_tensor_fill(nn_tensor *t, double v);
void nn_tensor_copy(nn_tensor *dst, const nn_tensor *src);       /* same shape */
void nn_tensor_axpy(nn_tensor *y, double alpha, const nn_tensor *x); /* y += alpha x */
void nn_tensor_scale(nn_tensor *t, double alpha);
double nn_tensor_dot(const nn_tensor *a, const nn_tensor *b);    /* sum a.*b */
/* C = alpha * op(A) op(B) + beta * C through cblas_dgemm; op = transpose
 * when the flag is set.  beta = 1 accumulates, which backward passes use. */
void nn_matmul(const nn_tensor *a, bool trans_a, const nn_tensor *b, bool trans_b,
               double alpha, double beta, nn_tensor *c);

/* ---------------------------------------------------------------- arena */

typedef struct nn_arena_block nn_arena_block;
typedef struct nn_arena {
    nn_arena_block *head;   /* newest block first */
    size_t block_bytes;     /* size of a fresh block when the head is full */
    size_t used;            /* bytes handed out since the last reset */
    size_t peak;            /* largest `used` ever seen */
} nn_arena;

op_status nn_arena_init(nn_arena *a, size_t initial_bytes, op_error *err);
void nn_arena_destroy(nn_arena *a);
/* Forget every allocation.  If the pass needed more than one block, the
 * blocks are merged into one big enough for it, so the next pass of the same
 * size does not allocate.  Never fails. */
void nn_arena_reset(nn_arena *a);
/* `bytes` of zeroed memory aligned for any type; NULL (and OP_ENOMEM) on
 * failure. */
void *nn_arena_alloc(nn_arena *a, size_t bytes, op_error *err);
/* A zeroed [rows x cols] tensor from the arena. */
op_status nn_arena_tensor(nn_arena *a, int rows, int cols, nn_tensor *out, op_error *err);
/* The same without zeroing, for a buffer the caller overwrites entirely
 * before reading it (a dgemm with beta 0, a copy): the hot passes skip
 * the memset. */
op_status nn_arena_tensor_uninit(nn_arena *a, int rows, int cols, nn_tensor *out,
                                 op_error *err);

/* --------------------------------------------------------------- params */

#define NN_NAME_MAX 96

typedef struct nn_param {
    char name[NN_NAME_MAX];
    nn_tensor value, grad;  /* grad accumulates over backward calls */
    nn_tensor m, v;         /* Adam's first and second moments */
} nn_param;

typedef struct nn_params {
    nn_param **items;       /* stable pointers, in registration order */
    size_t count, cap;
} nn_params;

void nn_params_init(nn_params *ps);
void nn_params_destroy(nn_params *ps);
/* Register a zero-initialised [rows x cols] parameter.  Names must be unique
 * and shorter than NN_NAME_MAX; they are what save/load match on. */
op_status nn_params_add(nn_params *ps, const char *name, int rows, int cols,
                        nn_param **out, op_error *err);
nn_param *nn_params_find(const nn_params *ps, const char *name);  /* or NULL */
size_t nn_params_numel(const nn_params *ps);                      /* total scalars */
void nn_params_zero_grad(nn_params *ps);
double nn_params_grad_norm(const nn_params *ps);                  /* global L2 */
/* Scale all gradients so their global L2 norm is at most max_norm; returns
 * the norm before clipping. */
double nn_params_clip_grad_norm(nn_params *ps, double max_norm);
/* Copy values (not grads/moments) from src to dst; names and shapes must
 * match, e.g. to snapshot a policy. */
op_status nn_params_copy_values(nn_params *dst, const nn_params *src, op_error *err);

void nn_param_init_uniform(nn_param *p, nn_rng *rng, double lo, double hi);
void nn_param_init_normal(nn_param *p, nn_rng *rng, double stddev);
/* Glorot/Xavier uniform: U(-b, b), b = sqrt(6 / (rows + cols)). */
void nn_param_init_xavier(nn_param *p, nn_rng *rng);

/* --------------------------------------------------------- save / load */

/* File layout (all integers little-endian):
 *   "OPNN" | u32 version (NN_FILE_VERSION) | u32 count |
 *   count x { u32 name_len | name bytes | u32 rows | u32 cols |
 *             rows*cols IEEE-754 binary64 }
 *   | u32 CRC-32 (IEEE, as zlib) of every preceding byte.
 * Save writes a temporary file in the same directory, fsyncs it and renames
 * it over `path`, so a crash never leaves a half-written model.  Load checks
 * magic, version, length, checksum, then that the file holds exactly the
 * model's parameters (by name) with the same shapes; only when all of that
 * holds are the values copied in, so a failed load leaves the model as it
 * was. */
#define NN_FILE_VERSION 1u

op_status nn_params_save(const nn_params *ps, const char *path, op_error *err);
op_status nn_params_load(nn_params *ps, const char *path, op_error *err);
/* Check a weights file without a model: magic, version, checksum, the
 * layout of every entry (names, shapes, sizes adding up to the file) and
 * that every value is finite.  Loaders call it before building the model a
 * file describes, so a corrupt or hostile file costs only its own size.
 * *n_values (may be NULL) receives the number of values it holds. */
op_status nn_params_check_file(const char *path, size_t *n_values, op_error *err);
uint32_t nn_crc32(uint32_t crc, const void *data, size_t n);  /* start with 0 */

/* ---------------------------------------------------------- optimizer */

typedef struct nn_adam {
    double lr, beta1, beta2, eps;
    double weight_decay;    /* decoupled (AdamW); 0 = plain Adam */
    long step;              /* updates done, for bias correction */
} nn_adam;

nn_adam nn_adam_defaults(double lr);             /* betas .9/.999, eps 1e-8 */
void nn_adam_step(nn_adam *opt, nn_params *ps);  /* one update from p->grad */

/* --------------------------------------------------------------- linear */

/* y = x W + b, W [in x out], b [1 x out]. */
typedef struct nn_linear {
    int in, out;
    nn_param *w, *b;        /* b is NULL without bias */
} nn_linear;

op_status nn_linear_init(nn_linear *l, nn_params *ps, const char *prefix, int in, int out,
                         bool bias, nn_rng *rng, op_error *err);
void nn_linear_forward(const nn_linear *l, const nn_tensor *x, nn_tensor *y);
void nn_linear_backward(const nn_linear *l, const nn_tensor *x, const nn_tensor *dy,
                        nn_tensor *dx);

/* ---------------------------------------------------------- activations */

typedef enum nn_activation {
    NN_ACT_IDENTITY,
    NN_ACT_RELU,
    NN_ACT_SIGMOID,
    NN_ACT_TANH
} nn_activation;

/* y = f(x) elementwise; y may be x (in place). */
void nn_act_forward(nn_activation f, const nn_tensor *x, nn_tensor *y);
/* dx += f'(x) .* dy, with f' computed from the OUTPUT y (so forward may run
 * in place). */
void nn_act_backward(nn_activation f, const nn_tensor *y, const nn_tensor *dy, nn_tensor *dx);

/* --------------------------------------------------------------- concat */

/* y = [parts[0] | parts[1] | ...] side by side (same rows).  In backward
 * every dparts[k] must be given (its shape says where it sits in dy). */
void nn_concat_cols_forward(const nn_tensor *const *parts, int n, nn_tensor *y);
void nn_concat_cols_backward(const nn_tensor *dy, nn_tensor *const *dparts, int n);
/* y = [parts[0]; parts[1]; ...] stacked (same cols). */
void nn_concat_rows_forward(const nn_tensor *const *parts, int n, nn_tensor *y);
void nn_concat_rows_backward(const nn_tensor *dy, nn_tensor *const *dparts, int n);

/* -------------------------------------------------- max-pool over neighbors */

/* GraphSAGE's max aggregator (SGDP eq. 2): y[i] = max over j in N(i) of h[j],
 * elementwise; a row with no neighbors is 0.  N(i) is CSR:
 * neighbors[offsets[i] .. offsets[i+1]) index rows of h; y has one row per
 * target node. */
typedef struct nn_maxpool_cache {
    int *argmax;            /* [y.rows x y.cols] row of h that won, -1 if none */
} nn_maxpool_cache;

op_status nn_maxpool_forward(nn_arena *ar, const nn_tensor *h, const int *offsets,
                             const int *neighbors, nn_tensor *y, nn_maxpool_cache *cache,
                             op_error *err);
void nn_maxpool_backward(const nn_maxpool_cache *cache, const nn_tensor *dy, nn_tensor *dh);

/* ----------------------------------------------------------- layer norm */

typedef struct nn_layernorm {
    int dim;
    double eps;             /* 1e-5 */
    nn_param *gamma, *beta; /* [1 x dim]: 1 and 0 at init */
} nn_layernorm;

typedef struct nn_layernorm_cache {
    double *mean, *rstd;    /* per row */
} nn_layernorm_cache;

op_status nn_layernorm_init(nn_layernorm *ln, nn_params *ps, const char *prefix, int dim,
                            op_error *err);
op_status nn_layernorm_forward(const nn_layernorm *ln, nn_arena *ar, const nn_tensor *x,
                               nn_tensor *y, nn_layernorm_cache *cache, op_error *err);
void nn_layernorm_backward(const nn_layernorm *ln, const nn_layernorm_cache *cache,
                           const nn_tensor *x, const nn_tensor *dy, nn_tensor *dx);

/* ---------------------------------------------------------- standardize */

/* y = each column of x standardised with the mean and sd of the rows t
 * with rows[t] != 0 (every row when rows is NULL; sd floored at 1e-5), and
 * applied to every row; inv_sd[j] = 1 / sd_j (x->cols entries).  y may be
 * x. */
void nn_standardize_columns(const nn_tensor *x, const unsigned char *rows, nn_tensor *y,
                            double *inv_sd);
/* dx from dy through nn_standardize_columns (y its output, the same rows). */
void nn_standardize_columns_backward(const nn_tensor *y, const unsigned char *rows,
                                     const double *inv_sd, const nn_tensor *dy, nn_tensor *dx);
/* x minus, in each column, its mean over the rows t with rows[t] != 0
 * (every row when rows is NULL), applied to every row, in place; the
 * learned placers' centred logits (no device or group preferred on average
 * over the decisions). */
void nn_center_columns(nn_tensor *x, const unsigned char *rows);
/* Its adjoint, in place on dx (from dy): dx_u = dy_u - [rows[u]] sum_t dy_t / k. */
void nn_center_columns_backward(nn_tensor *dx, const unsigned char *rows);

/* -------------------------------------------------------------- softmax */

/* Row-wise softmax.  mask is [rows x cols] (nonzero = allowed) or NULL; a
 * masked entry gets probability exactly 0.  A row with every entry masked is
 * an OP_EINPUT error. */
op_status nn_softmax_forward(const nn_tensor *logits, const unsigned char *mask, nn_tensor *p,
                             op_error *err);
void nn_softmax_backward(const nn_tensor *p, const nn_tensor *dp, nn_tensor *dlogits);
/* Row-wise log-softmax; masked entries get -INFINITY and receive no
 * gradient. */
op_status nn_log_softmax_forward(const nn_tensor *logits, const unsigned char *mask,
                                 nn_tensor *logp, op_error *err);
void nn_log_softmax_backward(const nn_tensor *logp, const nn_tensor *dlogp, nn_tensor *dlogits);
/* Entropy of each row from its log-probabilities (masked -INFINITY entries
 * contribute 0): h[i] = -sum_j p_ij logp_ij.  backward: dlogp += dh[i]*dH/dlogp. */
void nn_entropy_forward(const nn_tensor *logp, double *h);
void nn_entropy_backward(const nn_tensor *logp, const double *dh, nn_tensor *dlogp);
/* Draw an index with probability probs[i] / sum(probs); zero entries are
 * never drawn.  Returns -1 if every entry is 0. */
int nn_sample_categorical(const double *probs, int n, nn_rng *rng);
int nn_argmax(const double *x, int n);  /* first maximum; -1 if n == 0 */

/* -------------------------------------------------------------- dropout */

/* Inverted dropout: in training, y = x * mask with mask = 0 (probability
 * rate) or 1/(1-rate); in evaluation (or rate 0) y = x and mask is NULL. */
typedef struct nn_dropout_cache {
    double *mask;
} nn_dropout_cache;

op_status nn_dropout_forward(double rate, bool training, nn_rng *rng, nn_arena *ar,
                             const nn_tensor *x, nn_tensor *y, nn_dropout_cache *cache,
                             op_error *err);
void nn_dropout_backward(const nn_dropout_cache *cache, const nn_tensor *dy, nn_tensor *dx);

/* ------------------------------------------------------------ embedding */

/* A lookup table [vocab x dim]; row ids[k] becomes y[k]. */
typedef struct nn_embedding {
    int vocab, dim;
    nn_param *table;        /* N(0, 1) at init, as PyTorch */
} nn_embedding;

op_status nn_embedding_init(nn_embedding *e, nn_params *ps, const char *prefix, int vocab,
                            int dim, nn_rng *rng, op_error *err);
/* y [n x dim]; an id outside [0, vocab) is OP_EINPUT. */
op_status nn_embedding_forward(const nn_embedding *e, const int *ids, int n, nn_tensor *y,
                               op_error *err);
void nn_embedding_backward(const nn_embedding *e, const int *ids, int n, const nn_tensor *dy);

/* ------------------------------------------------------------ LSTM cell */

/* One step of an LSTM over a batch: z = x Wx + h_prev Wh + b, gates in the
 * order [i f g o] (each `hidden` wide), c = f*c_prev + i*g, h = o*tanh(c).
 * The forget-gate bias starts at 1. */
typedef struct nn_lstm {
    int in, hidden;
    nn_param *wx;           /* [in x 4h] */
    nn_param *wh;           /* [hidden x 4h] */
    nn_param *b;            /* [1 x 4h] */
} nn_lstm;

typedef struct nn_lstm_cache {
    nn_tensor gates;        /* [batch x 4h] after their nonlinearities */
    nn_tensor tanh_c;       /* [batch x h] */
    nn_tensor dz;           /* [batch x 4h] workspace for backward */
} nn_lstm_cache;

op_status nn_lstm_init(nn_lstm *l, nn_params *ps, const char *prefix, int in, int hidden,
                       nn_rng *rng, op_error *err);
/* h_prev, c_prev: [batch x hidden] (zeros at the first step); writes h, c. */
op_status nn_lstm_forward(const nn_lstm *l, nn_arena *ar, const nn_tensor *x,
                          const nn_tensor *h_prev, const nn_tensor *c_prev, nn_tensor *h,
                          nn_tensor *c, nn_lstm_cache *cache, op_error *err);
/* Given dh, dc (gradients w.r.t. this step's h and c, all contributions
 * summed), adds into dx, dh_prev, dc_prev (each may be NULL) and the weights. */
void nn_lstm_backward(const nn_lstm *l, const nn_lstm_cache *cache, const nn_tensor *x,
                      const nn_tensor *h_prev, const nn_tensor *c_prev, const nn_tensor *dh,
                      const nn_tensor *dc, nn_tensor *dx, nn_tensor *dh_prev,
                      nn_tensor *dc_prev);

/* --------------------------------------------------- additive attention */

/* Bahdanau attention for a seq2seq decoder: for each query row q_i and key
 * row k_j, score s_ij = v . tanh(q_i Wq + k_j Wk); a_i = softmax_j(s_i)
 * (optionally masked); context_i = sum_j a_ij k_j (keys are the values). */
typedef struct nn_additive_attention {
    int query_dim, key_dim, hidden;
    nn_param *wq;           /* [query_dim x hidden] */
    nn_param *wk;           /* [key_dim x hidden] */
    nn_param *v;            /* [hidden x 1] */
} nn_additive_attention;

typedef struct nn_additive_attention_cache {
    nn_tensor weights;      /* a [m x n]: the attention distribution */
    nn_tensor qp, kp;       /* q Wq [m x hidden], k Wk [n x hidden] */
    nn_tensor t;            /* tanh(qp_i + kp_j) [(m*n) x hidden] */
    nn_tensor da, ds;       /* [m x n] workspaces for backward */
    nn_tensor dqp, dkp;     /* workspaces for backward */
} nn_additive_attention_cache;

op_status nn_additive_attention_init(nn_additive_attention *at, nn_params *ps,
                                     const char *prefix, int query_dim, int key_dim,
                                     int hidden, nn_rng *rng, op_error *err);
/* q [m x query_dim], keys [n x key_dim], mask [m x n] or NULL,
 * context [m x key_dim]. */
op_status nn_additive_attention_forward(const nn_additive_attention *at, nn_arena *ar,
                                        const nn_tensor *q, const nn_tensor *keys,
                                        const unsigned char *mask, nn_tensor *context,
                                        nn_additive_attention_cache *cache, op_error *err);
void nn_additive_attention_backward(const nn_additive_attention *at,
                                    const nn_additive_attention_cache *cache,
                                    const nn_tensor *q, const nn_tensor *keys,
                                    const nn_tensor *dcontext, nn_tensor *dq, nn_tensor *dkeys);

/* -------------------------------------------- multi-head attention (XL) */

/* Multi-head self-attention with Transformer-XL segment recurrence (SGDP
 * section "Placement Network"): the queries come from the current segment x
 * [n x dim]; keys and values from [mem; x], where mem [m x dim] holds the
 * previous segment's hidden states (or is NULL).  mem is a constant: no
 * gradient flows into it (the projections applied to it do get gradient).
 * With `causal`, query i sees memory and current positions 0..i; otherwise
 * all of them.  No positional encoding (SGDP drops it).  y = concat_h(
 * softmax(Q_h K_h^T / sqrt(dim/heads)) V_h ) Wo.  To carry memory, the caller
 * copies this segment's input hidden states to use as next segment's mem. */
typedef struct nn_mha {
    int dim, heads, head_dim;
    nn_param *wq, *wk, *wv, *wo;   /* each [dim x dim], no biases */
} nn_mha;

typedef struct nn_mha_cache {
    int mem_rows;
    bool causal;
    nn_tensor kv;           /* [mem; x]  [(m+n) x dim] */
    nn_tensor q, k, v;      /* projections */
    nn_tensor probs;        /* [(heads*n) x (m+n)], head h at rows h*n.. */
    nn_tensor ctx;          /* concatenated heads [n x dim] */
    nn_tensor dctx, dq, dk, dv, dkv, dprobs;   /* workspaces for backward */
} nn_mha_cache;

op_status nn_mha_init(nn_mha *a, nn_params *ps, const char *prefix, int dim, int heads,
                      nn_rng *rng, op_error *err);
op_status nn_mha_forward(const nn_mha *a, nn_arena *ar, const nn_tensor *x, const nn_tensor *mem,
                         bool causal, nn_tensor *y, nn_mha_cache *cache, op_error *err);
void nn_mha_backward(const nn_mha *a, const nn_mha_cache *cache, const nn_tensor *x,
                     const nn_tensor *dy, nn_tensor *dx);

#endif
