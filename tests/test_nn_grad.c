/*
 * test_nn_grad.c - every backward pass of src/nn checked against central
 * finite differences.
 *
 * Each case builds a layer, defines a scalar loss L = sum(R .* y) with a
 * fixed random R (so dL/dy = R), runs the layer's backward with dy = R, and
 * compares every input gradient and every parameter gradient with
 * (L(w + eps) - L(w - eps)) / 2 eps.  Elements are double, so the tolerance
 * is tight (1e-6 absolute + 1e-5 relative): a wrong term in a backward pass
 * is off by far more.  Each check also asserts the gradient is not all
 * zero, so a case cannot pass vacuously.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"

#define EPS 1e-6
#define ATOL 1e-6
#define RTOL 1e-5

static nn_arena arena;
static nn_params params;
static nn_rng rng;
static void *owned[64];
static int n_owned;

static void setup(void)
{
    cr_assert_eq(nn_arena_init(&arena, 1 << 12, NULL), OP_OK);
    nn_params_init(&params);
    nn_rng_seed(&rng, 1234);
    n_owned = 0;
}

static void teardown(void)
{
    for (int i = 0; i < n_owned; i++)
        free(owned[i]);
    nn_params_destroy(&params);
    nn_arena_destroy(&arena);
}

TestSuite(nn_grad, .init = setup, .fini = teardown);

/* A test-owned tensor (outside the arena, so it survives resets). */
static nn_tensor owned_tensor(int rows, int cols)
{
    cr_assert_lt(n_owned, 64);
    double *d = calloc((size_t)(rows * cols) + 1, sizeof(double));
    cr_assert_not_null(d);
    owned[n_owned++] = d;
    return nn_tensor_view(d, rows, cols);
}

static nn_tensor random_tensor(int rows, int cols, double scale)
{
    nn_tensor t = owned_tensor(rows, cols);
    for (size_t i = 0; i < nn_tensor_size(&t); i++)
        t.data[i] = scale * (2.0 * nn_rng_uniform(&rng) - 1.0);
    return t;
}

static nn_tensor arena_tensor(int rows, int cols)
{
    nn_tensor t;
    cr_assert_eq(nn_arena_tensor(&arena, rows, cols, &t, NULL), OP_OK);
    return t;
}

/* One layer under test: forward recomputes y from the current inputs and
 * weights (resetting the arena); backward runs right after a forward. */
typedef struct grad_case {
    const nn_tensor *(*forward)(void *ctx);
    void (*backward)(void *ctx, const nn_tensor *dy);
    void *ctx;
    int n_inputs;
    const char *input_name[4];
    nn_tensor *input[4], *input_grad[4];
} grad_case;

/* sum(R .* y), skipping -inf entries of y (masked log-probabilities). */
static double weighted_sum(const nn_tensor *y, const nn_tensor *r)
{
    double s = 0.0;
    for (size_t i = 0; i < nn_tensor_size(y); i++)
        if (y->data[i] != -INFINITY)
            s += r->data[i] * y->data[i];
    return s;
}

static double case_loss(const grad_case *c, const nn_tensor *r)
{
    nn_arena_reset(&arena);
    return weighted_sum(c->forward(c->ctx), r);
}

static void check_values(const char *what, double *x, const double *analytic, size_t n,
                         const grad_case *c, const nn_tensor *r)
{
    double largest = 0.0;
    for (size_t i = 0; i < n; i++) {
        double saved = x[i];
        x[i] = saved + EPS;
        double lp = case_loss(c, r);
        x[i] = saved - EPS;
        double lm = case_loss(c, r);
        x[i] = saved;
        double numeric = (lp - lm) / (2.0 * EPS);
        cr_assert(fabs(numeric - analytic[i]) <= ATOL + RTOL * fabs(numeric),
                  "%s[%zu]: backward gives %.10g, finite differences %.10g", what, i,
                  analytic[i], numeric);
        largest = fmax(largest, fabs(analytic[i]));
    }
    cr_assert_gt(largest, 1e-8, "%s: gradient is all zero, the check proves nothing", what);
}

/* Check all inputs of c and every parameter registered in `params`. */
static void check_case(const grad_case *c)
{
    nn_arena_reset(&arena);
    const nn_tensor *y = c->forward(c->ctx);
    nn_tensor r = random_tensor(y->rows, y->cols, 1.0);
    for (size_t i = 0; i < nn_tensor_size(y); i++)
        if (y->data[i] == -INFINITY)
            r.data[i] = 0.0; /* masked outputs carry no loss */
    nn_params_zero_grad(&params);
    for (int k = 0; k < c->n_inputs; k++)
        nn_tensor_fill(c->input_grad[k], 0.0);
    nn_arena_reset(&arena);
    c->forward(c->ctx);
    c->backward(c->ctx, &r);
    for (int k = 0; k < c->n_inputs; k++)
        check_values(c->input_name[k], c->input[k]->data, c->input_grad[k]->data,
                     nn_tensor_size(c->input[k]), c, &r);
    for (size_t p = 0; p < params.count; p++) {
        nn_param *prm = params.items[p];
        /* copy: later forwards must not see a half-perturbed grad either */
        nn_tensor g = owned_tensor(prm->grad.rows, prm->grad.cols);
        nn_tensor_copy(&g, &prm->grad);
        check_values(prm->name, prm->value.data, g.data, nn_tensor_size(&g), c, &r);
    }
}

static void add_input(grad_case *c, const char *name, nn_tensor *x)
{
    int k = c->n_inputs++;
    c->input_name[k] = name;
    c->input[k] = x;
    c->input_grad[k] = malloc(sizeof(nn_tensor));
    cr_assert_not_null(c->input_grad[k]);
    owned[n_owned++] = c->input_grad[k];
    *c->input_grad[k] = owned_tensor(x->rows, x->cols);
}

/* ------------------------------------------------------------ linear */

typedef struct linear_ctx {
    nn_linear l;
    nn_tensor x, y, *dx;
} linear_ctx;

static const nn_tensor *linear_fwd(void *p)
{
    linear_ctx *c = p;
    c->y = arena_tensor(c->x.rows, c->l.out);
    nn_linear_forward(&c->l, &c->x, &c->y);
    return &c->y;
}

static void linear_bwd(void *p, const nn_tensor *dy)
{
    linear_ctx *c = p;
    nn_linear_backward(&c->l, &c->x, dy, c->dx);
}

static void run_linear(bool bias)
{
    linear_ctx c;
    cr_assert_eq(nn_linear_init(&c.l, &params, "lin", 4, 5, bias, &rng, NULL), OP_OK);
    if (bias)
        nn_param_init_uniform(c.l.b, &rng, -1, 1);
    c.x = random_tensor(3, 4, 1.0);
    grad_case g = {linear_fwd, linear_bwd, &c, 0, {0}, {0}, {0}};
    add_input(&g, "x", &c.x);
    c.dx = g.input_grad[0];
    check_case(&g);
}

Test(nn_grad, linear_with_bias) { run_linear(true); }
Test(nn_grad, linear_without_bias) { run_linear(false); }

/* ------------------------------------------------------- activations */

typedef struct act_ctx {
    nn_activation f;
    nn_tensor x, y, *dx;
} act_ctx;

static const nn_tensor *act_fwd(void *p)
{
    act_ctx *c = p;
    c->y = arena_tensor(c->x.rows, c->x.cols);
    nn_act_forward(c->f, &c->x, &c->y);
    return &c->y;
}

static void act_bwd(void *p, const nn_tensor *dy)
{
    act_ctx *c = p;
    nn_act_backward(c->f, &c->y, dy, c->dx);
}

static void run_activation(nn_activation f)
{
    act_ctx c = {.f = f};
    c.x = random_tensor(4, 6, 2.0);
    for (size_t i = 0; i < nn_tensor_size(&c.x); i++) /* keep ReLU away from its kink */
        if (fabs(c.x.data[i]) < 0.05)
            c.x.data[i] = 0.3;
    grad_case g = {act_fwd, act_bwd, &c, 0, {0}, {0}, {0}};
    add_input(&g, "x", &c.x);
    c.dx = g.input_grad[0];
    check_case(&g);
}

Test(nn_grad, relu) { run_activation(NN_ACT_RELU); }
Test(nn_grad, sigmoid) { run_activation(NN_ACT_SIGMOID); }
Test(nn_grad, tanh) { run_activation(NN_ACT_TANH); }
Test(nn_grad, identity) { run_activation(NN_ACT_IDENTITY); }

/* ------------------------------------------------------------ concat */

typedef struct concat_ctx {
    bool by_rows;
    nn_tensor a, b, y, *da, *db;
} concat_ctx;

static const nn_tensor *concat_fwd(void *p)
{
    concat_ctx *c = p;
    const nn_tensor *parts[2] = {&c->a, &c->b};
    if (c->by_rows) {
        c->y = arena_tensor(c->a.rows + c->b.rows, c->a.cols);
        nn_concat_rows_forward(parts, 2, &c->y);
    } else {
        c->y = arena_tensor(c->a.rows, c->a.cols + c->b.cols);
        nn_concat_cols_forward(parts, 2, &c->y);
    }
    return &c->y;
}

static void concat_bwd(void *p, const nn_tensor *dy)
{
    concat_ctx *c = p;
    nn_tensor *d[2] = {c->da, c->db};
    if (c->by_rows)
        nn_concat_rows_backward(dy, d, 2);
    else
        nn_concat_cols_backward(dy, d, 2);
}

Test(nn_grad, concat_cols_and_rows)
{
    for (int by_rows = 0; by_rows < 2; by_rows++) {
        concat_ctx c = {.by_rows = by_rows};
        c.a = random_tensor(3, 2, 1.0);
        c.b = by_rows ? random_tensor(4, 2, 1.0) : random_tensor(3, 4, 1.0);
        grad_case g = {concat_fwd, concat_bwd, &c, 0, {0}, {0}, {0}};
        add_input(&g, "a", &c.a);
        add_input(&g, "b", &c.b);
        c.da = g.input_grad[0];
        c.db = g.input_grad[1];
        check_case(&g);
    }
}

/* ----------------------------------------------- max-pool (GraphSAGE) */

/* Six nodes; node 3 has no neighbors, node 5 is its own neighbor. */
#define POOL_NODES 6
static const int pool_offsets[POOL_NODES + 1] = {0, 2, 5, 6, 6, 9, 11};
static const int pool_neighbors[11] = {1, 2, 0, 3, 5, 4, 1, 4, 5, 0, 5};

typedef struct pool_ctx {
    nn_tensor h, y, *dh;
    nn_maxpool_cache cache;
} pool_ctx;

static const nn_tensor *pool_fwd(void *p)
{
    pool_ctx *c = p;
    c->y = arena_tensor(POOL_NODES, c->h.cols);
    cr_assert_eq(nn_maxpool_forward(&arena, &c->h, pool_offsets, pool_neighbors, &c->y,
                                    &c->cache, NULL), OP_OK);
    return &c->y;
}

static void pool_bwd(void *p, const nn_tensor *dy)
{
    pool_ctx *c = p;
    nn_maxpool_backward(&c->cache, dy, c->dh);
}

Test(nn_grad, maxpool_over_neighbors)
{
    pool_ctx c;
    c.h = random_tensor(POOL_NODES, 3, 1.0); /* distinct values: no ties within eps */
    grad_case g = {pool_fwd, pool_bwd, &c, 0, {0}, {0}, {0}};
    add_input(&g, "h", &c.h);
    c.dh = g.input_grad[0];
    check_case(&g);
}

/* A whole GraphSAGE layer (SGDP eq. 2-3):
 *   z = sigmoid(h W1 + b1); agg = maxpool_N(z); out = tanh([h | agg] W2 + b2) */
typedef struct sage_ctx {
    nn_linear l1, l2;
    nn_tensor h, z1, z, agg, cat, o1, out, *dh;
    nn_maxpool_cache cache;
} sage_ctx;

static const nn_tensor *sage_fwd(void *p)
{
    sage_ctx *c = p;
    int n = c->h.rows, d = c->h.cols, k = c->l1.out;
    c->z1 = arena_tensor(n, k);
    c->z = arena_tensor(n, k);
    c->agg = arena_tensor(n, k);
    c->cat = arena_tensor(n, d + k);
    c->o1 = arena_tensor(n, c->l2.out);
    c->out = arena_tensor(n, c->l2.out);
    nn_linear_forward(&c->l1, &c->h, &c->z1);
    nn_act_forward(NN_ACT_SIGMOID, &c->z1, &c->z);
    cr_assert_eq(nn_maxpool_forward(&arena, &c->z, pool_offsets, pool_neighbors, &c->agg,
                                    &c->cache, NULL), OP_OK);
    const nn_tensor *parts[2] = {&c->h, &c->agg};
    nn_concat_cols_forward(parts, 2, &c->cat);
    nn_linear_forward(&c->l2, &c->cat, &c->o1);
    nn_act_forward(NN_ACT_TANH, &c->o1, &c->out);
    return &c->out;
}

static void sage_bwd(void *p, const nn_tensor *dy)
{
    sage_ctx *c = p;
    int n = c->h.rows, d = c->h.cols, k = c->l1.out;
    nn_tensor do1 = arena_tensor(n, c->l2.out), dcat = arena_tensor(n, d + k);
    nn_tensor dh_direct = arena_tensor(n, d), dagg = arena_tensor(n, k);
    nn_tensor dz = arena_tensor(n, k), dz1 = arena_tensor(n, k);
    nn_act_backward(NN_ACT_TANH, &c->out, dy, &do1);
    nn_linear_backward(&c->l2, &c->cat, &do1, &dcat);
    nn_tensor *dparts[2] = {&dh_direct, &dagg};
    nn_concat_cols_backward(&dcat, dparts, 2);
    nn_maxpool_backward(&c->cache, &dagg, &dz);
    nn_act_backward(NN_ACT_SIGMOID, &c->z, &dz, &dz1);
    nn_linear_backward(&c->l1, &c->h, &dz1, c->dh);
    nn_tensor_axpy(c->dh, 1.0, &dh_direct); /* h is used twice */
}

Test(nn_grad, graphsage_layer)
{
    sage_ctx c;
    cr_assert_eq(nn_linear_init(&c.l1, &params, "sage.pool", 3, 4, true, &rng, NULL), OP_OK);
    cr_assert_eq(nn_linear_init(&c.l2, &params, "sage.out", 7, 5, true, &rng, NULL), OP_OK);
    nn_param_init_uniform(c.l1.b, &rng, -0.5, 0.5);
    c.h = random_tensor(POOL_NODES, 3, 1.0);
    grad_case g = {sage_fwd, sage_bwd, &c, 0, {0}, {0}, {0}};
    add_input(&g, "h", &c.h);
    c.dh = g.input_grad[0];
    check_case(&g);
}

/* -------------------------------------------------------- layer norm */

typedef struct ln_ctx {
    nn_layernorm ln;
    nn_tensor x, y, *dx;
    nn_layernorm_cache cache;
} ln_ctx;

static const nn_tensor *ln_fwd(void *p)
{
    ln_ctx *c = p;
    c->y = arena_tensor(c->x.rows, c->x.cols);
    cr_assert_eq(nn_layernorm_forward(&c->ln, &arena, &c->x, &c->y, &c->cache, NULL), OP_OK);
    return &c->y;
}

static void ln_bwd(void *p, const nn_tensor *dy)
{
    ln_ctx *c = p;
    nn_layernorm_backward(&c->ln, &c->cache, &c->x, dy, c->dx);
}

Test(nn_grad, layernorm)
{
    ln_ctx c;
    cr_assert_eq(nn_layernorm_init(&c.ln, &params, "ln", 6, NULL), OP_OK);
    nn_param_init_uniform(c.ln.gamma, &rng, 0.5, 1.5);
    nn_param_init_uniform(c.ln.beta, &rng, -0.5, 0.5);
    c.x = random_tensor(4, 6, 2.0);
    grad_case g = {ln_fwd, ln_bwd, &c, 0, {0}, {0}, {0}};
    add_input(&g, "x", &c.x);
    c.dx = g.input_grad[0];
    check_case(&g);
}

/* ----------------------------------------- softmax, log-softmax, entropy */

static const unsigned char softmax_mask[15] = {1, 1, 0, 1, 1, /**/ 1, 1, 1, 1, 1, /**/ 0, 1, 0, 0, 1};

typedef struct sm_ctx {
    int kind; /* 0 softmax, 1 log-softmax, 2 entropy of log-softmax */
    nn_tensor z, y, lp, h, *dz;
} sm_ctx;

static const nn_tensor *sm_fwd(void *p)
{
    sm_ctx *c = p;
    c->y = arena_tensor(c->z.rows, c->z.cols);
    if (c->kind == 0) {
        cr_assert_eq(nn_softmax_forward(&c->z, softmax_mask, &c->y, NULL), OP_OK);
        return &c->y;
    }
    cr_assert_eq(nn_log_softmax_forward(&c->z, softmax_mask, &c->y, NULL), OP_OK);
    if (c->kind == 1)
        return &c->y;
    c->h = arena_tensor(c->z.rows, 1);
    nn_entropy_forward(&c->y, c->h.data);
    return &c->h;
}

static void sm_bwd(void *p, const nn_tensor *dy)
{
    sm_ctx *c = p;
    if (c->kind == 0) {
        nn_softmax_backward(&c->y, dy, c->dz);
    } else if (c->kind == 1) {
        nn_log_softmax_backward(&c->y, dy, c->dz);
    } else {
        nn_tensor dlp = arena_tensor(c->z.rows, c->z.cols);
        nn_entropy_backward(&c->y, dy->data, &dlp);
        nn_log_softmax_backward(&c->y, &dlp, c->dz);
    }
}

static void run_softmax(int kind)
{
    sm_ctx c = {.kind = kind};
    c.z = random_tensor(3, 5, 3.0);
    grad_case g = {sm_fwd, sm_bwd, &c, 0, {0}, {0}, {0}};
    add_input(&g, "logits", &c.z);
    c.dz = g.input_grad[0];
    check_case(&g);
    for (int i = 0; i < 15; i++) /* masked logits get no gradient at all */
        if (!softmax_mask[i])
            cr_assert_eq(c.dz->data[i], 0.0);
}

Test(nn_grad, masked_softmax) { run_softmax(0); }
Test(nn_grad, masked_log_softmax) { run_softmax(1); }
Test(nn_grad, entropy_of_log_softmax) { run_softmax(2); }

/* Entropy as a function of free log-probabilities (not only after a
 * log-softmax, where part of its gradient cancels). */
typedef struct ent_ctx {
    nn_tensor lp, h, *dlp;
} ent_ctx;

static const nn_tensor *ent_fwd(void *p)
{
    ent_ctx *c = p;
    c->h = arena_tensor(c->lp.rows, 1);
    nn_entropy_forward(&c->lp, c->h.data);
    return &c->h;
}

static void ent_bwd(void *p, const nn_tensor *dy)
{
    ent_ctx *c = p;
    nn_entropy_backward(&c->lp, dy->data, c->dlp);
}

Test(nn_grad, entropy_of_free_log_probs)
{
    ent_ctx c;
    c.lp = random_tensor(3, 4, 1.0);
    for (int i = 0; i < 12; i++)
        c.lp.data[i] -= 1.5;
    grad_case g = {ent_fwd, ent_bwd, &c, 0, {0}, {0}, {0}};
    add_input(&g, "logp", &c.lp);
    c.dlp = g.input_grad[0];
    check_case(&g);
}

/* ----------------------------------------------------------- dropout */

typedef struct drop_ctx {
    nn_tensor x, y, *dx;
    nn_dropout_cache cache;
} drop_ctx;

static const nn_tensor *drop_fwd(void *p)
{
    drop_ctx *c = p;
    nn_rng r;
    nn_rng_seed(&r, 99); /* the same mask on every forward */
    c->y = arena_tensor(c->x.rows, c->x.cols);
    cr_assert_eq(nn_dropout_forward(0.3, true, &r, &arena, &c->x, &c->y, &c->cache, NULL), OP_OK);
    return &c->y;
}

static void drop_bwd(void *p, const nn_tensor *dy)
{
    drop_ctx *c = p;
    nn_dropout_backward(&c->cache, dy, c->dx);
}

Test(nn_grad, dropout)
{
    drop_ctx c;
    c.x = random_tensor(5, 6, 1.0);
    grad_case g = {drop_fwd, drop_bwd, &c, 0, {0}, {0}, {0}};
    add_input(&g, "x", &c.x);
    c.dx = g.input_grad[0];
    check_case(&g);
    int dropped = 0;
    for (int i = 0; i < 30; i++)
        dropped += c.dx->data[i] == 0.0;
    cr_assert(dropped > 0 && dropped < 30, "mask should drop some but not all (%d)", dropped);
}

/* --------------------------------------------------------- embedding */

typedef struct emb_ctx {
    nn_embedding e;
    int ids[5];
    nn_tensor y;
} emb_ctx;

static const nn_tensor *emb_fwd(void *p)
{
    emb_ctx *c = p;
    c->y = arena_tensor(5, c->e.dim);
    cr_assert_eq(nn_embedding_forward(&c->e, c->ids, 5, &c->y, NULL), OP_OK);
    return &c->y;
}

static void emb_bwd(void *p, const nn_tensor *dy)
{
    emb_ctx *c = p;
    nn_embedding_backward(&c->e, c->ids, 5, dy);
}

Test(nn_grad, embedding_with_repeated_ids)
{
    emb_ctx c = {.ids = {2, 0, 2, 3, 2}};
    cr_assert_eq(nn_embedding_init(&c.e, &params, "emb", 5, 3, &rng, NULL), OP_OK);
    grad_case g = {emb_fwd, emb_bwd, &c, 0, {0}, {0}, {0}};
    check_case(&g);
    for (int k = 0; k < 3; k++) /* id 1 and 4 never looked up */
        cr_assert(NN_AT(&c.e.table->grad, 1, k) == 0.0 && NN_AT(&c.e.table->grad, 4, k) == 0.0);
}

/* ----------------------------------------- LSTM, through time (BPTT) */

#define T_STEPS 3
#define BATCH 2

typedef struct lstm_ctx {
    nn_lstm l;
    nn_tensor xs, h0, c0, *dxs, *dh0, *dc0;
    nn_tensor hs, cs, y;           /* hs, cs: [(T+1)*B x H], block t = state t */
    nn_lstm_cache cache[T_STEPS];
} lstm_ctx;

static const nn_tensor *lstm_fwd(void *p)
{
    lstm_ctx *c = p;
    int H = c->l.hidden;
    c->hs = arena_tensor((T_STEPS + 1) * BATCH, H);
    c->cs = arena_tensor((T_STEPS + 1) * BATCH, H);
    nn_tensor h0 = nn_tensor_rows(&c->hs, 0, BATCH), c0 = nn_tensor_rows(&c->cs, 0, BATCH);
    nn_tensor_copy(&h0, &c->h0);
    nn_tensor_copy(&c0, &c->c0);
    for (int t = 0; t < T_STEPS; t++) {
        nn_tensor x = nn_tensor_rows(&c->xs, t * BATCH, BATCH);
        nn_tensor hp = nn_tensor_rows(&c->hs, t * BATCH, BATCH);
        nn_tensor cp = nn_tensor_rows(&c->cs, t * BATCH, BATCH);
        nn_tensor h = nn_tensor_rows(&c->hs, (t + 1) * BATCH, BATCH);
        nn_tensor cc = nn_tensor_rows(&c->cs, (t + 1) * BATCH, BATCH);
        cr_assert_eq(nn_lstm_forward(&c->l, &arena, &x, &hp, &cp, &h, &cc, &c->cache[t], NULL),
                     OP_OK);
    }
    /* loss sees every h_t (t >= 1) and the final c_T */
    c->y = arena_tensor((T_STEPS + 1) * BATCH, H);
    nn_tensor yh = nn_tensor_rows(&c->y, 0, T_STEPS * BATCH);
    nn_tensor hs1 = nn_tensor_rows(&c->hs, BATCH, T_STEPS * BATCH);
    nn_tensor_copy(&yh, &hs1);
    nn_tensor yc = nn_tensor_rows(&c->y, T_STEPS * BATCH, BATCH);
    nn_tensor cT = nn_tensor_rows(&c->cs, T_STEPS * BATCH, BATCH);
    nn_tensor_copy(&yc, &cT);
    return &c->y;
}

static void lstm_bwd(void *p, const nn_tensor *dy)
{
    lstm_ctx *c = p;
    int H = c->l.hidden;
    nn_tensor dhs = arena_tensor((T_STEPS + 1) * BATCH, H);
    nn_tensor dcs = arena_tensor((T_STEPS + 1) * BATCH, H);
    nn_tensor dyh = nn_tensor_rows(dy, 0, T_STEPS * BATCH);
    nn_tensor dhs1 = nn_tensor_rows(&dhs, BATCH, T_STEPS * BATCH);
    nn_tensor_copy(&dhs1, &dyh);
    nn_tensor dyc = nn_tensor_rows(dy, T_STEPS * BATCH, BATCH);
    nn_tensor dcT = nn_tensor_rows(&dcs, T_STEPS * BATCH, BATCH);
    nn_tensor_copy(&dcT, &dyc);
    for (int t = T_STEPS - 1; t >= 0; t--) {
        nn_tensor x = nn_tensor_rows(&c->xs, t * BATCH, BATCH);
        nn_tensor dx = nn_tensor_rows(c->dxs, t * BATCH, BATCH);
        nn_tensor hp = nn_tensor_rows(&c->hs, t * BATCH, BATCH);
        nn_tensor cp = nn_tensor_rows(&c->cs, t * BATCH, BATCH);
        nn_tensor dh = nn_tensor_rows(&dhs, (t + 1) * BATCH, BATCH);
        nn_tensor dc = nn_tensor_rows(&dcs, (t + 1) * BATCH, BATCH);
        nn_tensor dhp = nn_tensor_rows(&dhs, t * BATCH, BATCH);
        nn_tensor dcp = nn_tensor_rows(&dcs, t * BATCH, BATCH);
        nn_lstm_backward(&c->l, &c->cache[t], &x, &hp, &cp, &dh, &dc, &dx, &dhp, &dcp);
    }
    nn_tensor dh0 = nn_tensor_rows(&dhs, 0, BATCH), dc0 = nn_tensor_rows(&dcs, 0, BATCH);
    nn_tensor_axpy(c->dh0, 1.0, &dh0);
    nn_tensor_axpy(c->dc0, 1.0, &dc0);
}

Test(nn_grad, lstm_through_time)
{
    lstm_ctx c;
    cr_assert_eq(nn_lstm_init(&c.l, &params, "lstm", 3, 4, &rng, NULL), OP_OK);
    nn_param_init_uniform(c.l.b, &rng, -0.5, 0.5);
    c.xs = random_tensor(T_STEPS * BATCH, 3, 1.0);
    c.h0 = random_tensor(BATCH, 4, 0.5);
    c.c0 = random_tensor(BATCH, 4, 0.5);
    grad_case g = {lstm_fwd, lstm_bwd, &c, 0, {0}, {0}, {0}};
    add_input(&g, "xs", &c.xs);
    add_input(&g, "h0", &c.h0);
    add_input(&g, "c0", &c.c0);
    c.dxs = g.input_grad[0];
    c.dh0 = g.input_grad[1];
    c.dc0 = g.input_grad[2];
    check_case(&g);
}

/* ------------------------------------------------ additive attention */

static const unsigned char att_mask[8] = {1, 1, 0, 1, /**/ 1, 1, 1, 1};

typedef struct add_ctx {
    nn_additive_attention at;
    nn_tensor q, k, ctxv, *dq, *dk;
    nn_additive_attention_cache cache;
} add_ctx;

static const nn_tensor *add_fwd(void *p)
{
    add_ctx *c = p;
    c->ctxv = arena_tensor(c->q.rows, c->k.cols);
    cr_assert_eq(nn_additive_attention_forward(&c->at, &arena, &c->q, &c->k, att_mask, &c->ctxv,
                                               &c->cache, NULL), OP_OK);
    return &c->ctxv;
}

static void add_bwd(void *p, const nn_tensor *dy)
{
    add_ctx *c = p;
    nn_additive_attention_backward(&c->at, &c->cache, &c->q, &c->k, dy, c->dq, c->dk);
}

Test(nn_grad, additive_attention)
{
    add_ctx c;
    cr_assert_eq(nn_additive_attention_init(&c.at, &params, "att", 3, 5, 6, &rng, NULL), OP_OK);
    c.q = random_tensor(2, 3, 1.0);
    c.k = random_tensor(4, 5, 1.0);
    grad_case g = {add_fwd, add_bwd, &c, 0, {0}, {0}, {0}};
    add_input(&g, "q", &c.q);
    add_input(&g, "keys", &c.k);
    c.dq = g.input_grad[0];
    c.dk = g.input_grad[1];
    check_case(&g);
    cr_assert_eq(NN_AT(&c.cache.weights, 0, 2), 0.0, "masked key must get weight 0");
}

/* ---------------------------------------------- multi-head attention */

typedef struct mha_ctx {
    nn_mha a;
    bool causal;
    nn_tensor x, mem, y, *dx;
    nn_tensor *memp;
    nn_mha_cache cache;
} mha_ctx;

static const nn_tensor *mha_fwd(void *p)
{
    mha_ctx *c = p;
    c->y = arena_tensor(c->x.rows, c->x.cols);
    cr_assert_eq(nn_mha_forward(&c->a, &arena, &c->x, c->memp, c->causal, &c->y, &c->cache, NULL),
                 OP_OK);
    return &c->y;
}

static void mha_bwd(void *p, const nn_tensor *dy)
{
    mha_ctx *c = p;
    nn_mha_backward(&c->a, &c->cache, &c->x, dy, c->dx);
}

static void run_mha(bool with_memory, bool causal)
{
    mha_ctx c = {.causal = causal};
    cr_assert_eq(nn_mha_init(&c.a, &params, "mha", 8, 2, &rng, NULL), OP_OK);
    c.x = random_tensor(3, 8, 1.0);
    c.mem = random_tensor(2, 8, 1.0);
    c.memp = with_memory ? &c.mem : NULL;
    grad_case g = {mha_fwd, mha_bwd, &c, 0, {0}, {0}, {0}};
    add_input(&g, "x", &c.x);
    c.dx = g.input_grad[0];
    check_case(&g);
}

Test(nn_grad, mha_with_memory_causal) { run_mha(true, true); }
Test(nn_grad, mha_with_memory_full) { run_mha(true, false); }
Test(nn_grad, mha_without_memory_causal) { run_mha(false, true); }
Test(nn_grad, mha_without_memory_full) { run_mha(false, false); }
