/*
 * test_nn.c - behaviour of src/nn other than gradients (those are in
 * test_nn_grad.c): the rng's determinism and distributions, BLAS products,
 * the arena, parameter sets, Adam reaching a minimum, gradient clipping,
 * masked softmax and sampling, dropout statistics, the attention masks and
 * memory, save/load round trips and rejection of damaged files, and that a
 * whole training run is reproduced bit for bit from its seed.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include "nn/nn.h"

/* ---------------------------------------------------------------- rng */

Test(nn_rng, same_seed_same_stream_and_known_answer)
{
    nn_rng a, b, c;
    nn_rng_seed(&a, 7);
    nn_rng_seed(&b, 7);
    nn_rng_seed(&c, 8);
    int differ = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = nn_rng_next(&a);
        cr_assert_eq(x, nn_rng_next(&b));
        differ += x != nn_rng_next(&c);
    }
    cr_assert_gt(differ, 990);
    /* splitmix64 from 0 starts with 0xe220a8397b1dcdaf (Vigna's reference) */
    nn_rng z;
    nn_rng_seed(&z, 0);
    cr_assert_eq(z.s[0], 0xe220a8397b1dcdafULL);
}

Test(nn_rng, distributions)
{
    nn_rng r;
    nn_rng_seed(&r, 42);
    const int n = 20000;
    double su = 0, sn = 0, sn2 = 0;
    int counts[5] = {0};
    for (int i = 0; i < n; i++) {
        double u = nn_rng_uniform(&r);
        cr_assert(u >= 0.0 && u < 1.0);
        su += u;
        double g = nn_rng_normal(&r);
        sn += g;
        sn2 += g * g;
        uint64_t k = nn_rng_below(&r, 5);
        cr_assert_lt(k, 5);
        counts[k]++;
    }
    cr_assert(fabs(su / n - 0.5) < 0.01, "uniform mean %g", su / n);
    cr_assert(fabs(sn / n) < 0.03, "normal mean %g", sn / n);
    cr_assert(fabs(sn2 / n - 1.0) < 0.05, "normal variance %g", sn2 / n);
    for (int k = 0; k < 5; k++)
        cr_assert(abs(counts[k] - n / 5) < n / 50, "below(5) bucket %d: %d", k, counts[k]);
}

Test(nn_rng, fork_and_shuffle)
{
    nn_rng p1, p2;
    nn_rng_seed(&p1, 3);
    nn_rng_seed(&p2, 3);
    nn_rng a = nn_rng_fork(&p1, 0), b = nn_rng_fork(&p2, 0);
    nn_rng c = nn_rng_fork(&p1, 1);
    uint64_t xa = nn_rng_next(&a);
    cr_assert_eq(xa, nn_rng_next(&b), "fork is deterministic");
    cr_assert_neq(xa, nn_rng_next(&c), "different streams differ");
    int v[50], seen[50] = {0};
    for (int i = 0; i < 50; i++)
        v[i] = i;
    nn_rng_shuffle_int(&a, v, 50);
    int moved = 0;
    for (int i = 0; i < 50; i++) {
        seen[v[i]]++;
        moved += v[i] != i;
    }
    for (int i = 0; i < 50; i++)
        cr_assert_eq(seen[i], 1, "shuffle is a permutation");
    cr_assert_gt(moved, 30);
}

/* ---------------------------------------------------- tensor and arena */

Test(nn_tensor, matmul_matches_naive_for_all_transposes)
{
    nn_rng r;
    nn_rng_seed(&r, 5);
    double ad[12], bd[20], cd[15], ref[15];
    for (int i = 0; i < 12; i++) ad[i] = nn_rng_uniform(&r) - 0.5;
    for (int i = 0; i < 20; i++) bd[i] = nn_rng_uniform(&r) - 0.5;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            /* op(A) is 3x4, op(B) is 4x5 */
            nn_tensor a = ta ? nn_tensor_view(ad, 4, 3) : nn_tensor_view(ad, 3, 4);
            nn_tensor b = tb ? nn_tensor_view(bd, 5, 4) : nn_tensor_view(bd, 4, 5);
            nn_tensor c = nn_tensor_view(cd, 3, 5);
            for (int i = 0; i < 15; i++)
                cd[i] = 1.0;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 5; j++) {
                    double s = 0;
                    for (int k = 0; k < 4; k++)
                        s += (ta ? NN_AT(&a, k, i) : NN_AT(&a, i, k)) *
                             (tb ? NN_AT(&b, j, k) : NN_AT(&b, k, j));
                    ref[i * 5 + j] = 2.0 * s + 0.5 * 1.0;
                }
            nn_matmul(&a, ta, &b, tb, 2.0, 0.5, &c);
            for (int i = 0; i < 15; i++)
                cr_assert(fabs(cd[i] - ref[i]) < 1e-12, "ta=%d tb=%d [%d]", ta, tb, i);
        }
}

Test(nn_tensor, empty_inner_dimension_scales_c)
{
    double c_data[4] = {1, 2, 3, 4}, dummy = 0;
    nn_tensor a = nn_tensor_view(&dummy, 2, 0), b = nn_tensor_view(&dummy, 0, 2);
    nn_tensor c = nn_tensor_view(c_data, 2, 2);
    nn_matmul(&a, false, &b, false, 1.0, 0.5, &c);
    cr_assert(c_data[0] == 0.5 && c_data[3] == 2.0);
}

Test(nn_arena, grows_zeroes_aligns_and_settles)
{
    nn_arena ar;
    cr_assert_eq(nn_arena_init(&ar, 4096, NULL), OP_OK);
    for (int pass = 0; pass < 3; pass++) {
        nn_arena_reset(&ar);
        for (int k = 0; k < 10; k++) {
            nn_tensor t;
            cr_assert_eq(nn_arena_tensor(&ar, 30, 7, &t, NULL), OP_OK); /* 10 x 1680 B */
            cr_assert_eq((uintptr_t)t.data % 64, 0, "64-byte aligned");
            for (size_t i = 0; i < nn_tensor_size(&t); i++) {
                cr_assert_eq(t.data[i], 0.0, "fresh arena memory is zeroed");
                t.data[i] = 123.0; /* dirty it for the next pass */
            }
        }
        if (pass > 0)
            cr_assert_geq(ar.block_bytes, ar.used, "after a reset one block holds the pass");
    }
    nn_arena_destroy(&ar);
}

/* ------------------------------------------------------------- params */

Test(nn_params, names_are_unique_and_bounded)
{
    nn_params ps;
    nn_params_init(&ps);
    op_error err = {0};
    nn_param *p;
    cr_assert_eq(nn_params_add(&ps, "a.w", 2, 3, &p, &err), OP_OK);
    cr_assert_eq(nn_params_find(&ps, "a.w"), p);
    cr_assert_eq(nn_params_add(&ps, "a.w", 2, 3, NULL, &err), OP_EINPUT);
    cr_assert(strstr(err.msg, "a.w") != NULL, "%s", err.msg);
    char longname[200];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    op_error_clear(&err);
    cr_assert_eq(nn_params_add(&ps, longname, 1, 1, NULL, &err), OP_EINPUT);
    cr_assert_eq(nn_params_add(&ps, "zero", 0, 3, NULL, NULL), OP_EINPUT);
    cr_assert_eq(nn_params_numel(&ps), 6);
    cr_assert_null(nn_params_find(&ps, "nope"));

    nn_params snap;
    nn_params_init(&snap);
    nn_param *q;
    cr_assert_eq(nn_params_add(&snap, "a.w", 2, 3, &q, NULL), OP_OK);
    p->value.data[4] = 2.5;
    cr_assert_eq(nn_params_copy_values(&snap, &ps, NULL), OP_OK);
    cr_assert_eq(q->value.data[4], 2.5);
    cr_assert_eq(nn_params_add(&ps, "b", 1, 1, NULL, NULL), OP_OK);
    cr_assert_eq(nn_params_copy_values(&snap, &ps, &err), OP_EINPUT, "count differs");
    nn_params_destroy(&snap);
    nn_params_destroy(&ps);
}

Test(nn_params, clip_gives_requested_norm)
{
    nn_params ps;
    nn_params_init(&ps);
    nn_param *a, *b;
    cr_assert_eq(nn_params_add(&ps, "a", 1, 2, &a, NULL), OP_OK);
    cr_assert_eq(nn_params_add(&ps, "b", 1, 1, &b, NULL), OP_OK);
    a->grad.data[0] = 3; /* global norm sqrt(9 + 16 + 144) = 13 */
    a->grad.data[1] = 4;
    b->grad.data[0] = 12;
    cr_assert_float_eq(nn_params_clip_grad_norm(&ps, 100.0), 13.0, 1e-12);
    cr_assert_float_eq(nn_params_grad_norm(&ps), 13.0, 1e-12, "below the limit: unchanged");
    cr_assert_float_eq(nn_params_clip_grad_norm(&ps, 1.0), 13.0, 1e-12);
    cr_assert_float_eq(nn_params_grad_norm(&ps), 1.0, 1e-12);
    cr_assert_float_eq(b->grad.data[0], 12.0 / 13.0, 1e-12, "direction kept");
    nn_params_zero_grad(&ps);
    cr_assert_eq(nn_params_grad_norm(&ps), 0.0);
    cr_assert_eq(nn_params_clip_grad_norm(&ps, 1.0), 0.0, "zero gradient stays finite");
    nn_params_destroy(&ps);
}

Test(nn_adam, reaches_minimum_of_quadratic)
{
    nn_params ps;
    nn_params_init(&ps);
    nn_param *w;
    cr_assert_eq(nn_params_add(&ps, "w", 2, 3, &w, NULL), OP_OK);
    const double target[6] = {1.0, -2.0, 0.5, 3.0, 0.0, -0.25};
    nn_adam opt = nn_adam_defaults(0.05);
    for (int step = 0; step < 2000; step++) {
        nn_params_zero_grad(&ps);
        for (int i = 0; i < 6; i++) /* f = sum (w - t)^2 */
            w->grad.data[i] = 2.0 * (w->value.data[i] - target[i]);
        nn_adam_step(&opt, &ps);
    }
    for (int i = 0; i < 6; i++)
        cr_assert(fabs(w->value.data[i] - target[i]) < 1e-3, "w[%d] = %g, want %g", i,
                  w->value.data[i], target[i]);
    cr_assert_eq(opt.step, 2000);
    nn_params_destroy(&ps);
}

/* ------------------------------------------------- softmax and sampling */

Test(nn_softmax, masked_entries_get_zero_and_rows_sum_to_one)
{
    double z[8] = {1000.0, 999.0, -5.0, 2.0, /**/ 0.1, 0.2, 0.3, 0.4};
    const unsigned char mask[8] = {1, 0, 1, 1, /**/ 1, 1, 1, 1};
    double p[8], lp[8];
    nn_tensor tz = nn_tensor_view(z, 2, 4), tp = nn_tensor_view(p, 2, 4);
    nn_tensor tlp = nn_tensor_view(lp, 2, 4);
    cr_assert_eq(nn_softmax_forward(&tz, mask, &tp, NULL), OP_OK);
    cr_assert_eq(nn_log_softmax_forward(&tz, mask, &tlp, NULL), OP_OK);
    cr_assert_eq(p[1], 0.0);
    cr_assert(isinf(lp[1]) && lp[1] < 0);
    for (int i = 0; i < 2; i++) {
        double s = 0;
        for (int j = 0; j < 4; j++) {
            cr_assert(isfinite(p[i * 4 + j]), "no overflow with logits of 1000");
            s += p[i * 4 + j];
            if (mask[i * 4 + j])
                cr_assert(fabs(exp(lp[i * 4 + j]) - p[i * 4 + j]) < 1e-12);
        }
        cr_assert(fabs(s - 1.0) < 1e-12);
    }
    cr_assert(lp[2] < -1000.0, "log-softmax keeps tiny probabilities: %g", lp[2]);
    double h[2];
    nn_entropy_forward(&tlp, h);
    double ref = 0;
    for (int j = 4; j < 8; j++)
        ref -= p[j] * log(p[j]);
    cr_assert(fabs(h[1] - ref) < 1e-12 && fabs(ref - 1.3800708) < 1e-6, "entropy %g", h[1]);
    cr_assert(h[0] >= 0.0 && h[0] < 1e-6, "a near-certain row has ~0 entropy: %g", h[0]);
}

Test(nn_softmax, fully_masked_row_is_an_error)
{
    double z[3] = {1, 2, 3}, p[3];
    const unsigned char mask[3] = {0, 0, 0};
    nn_tensor tz = nn_tensor_view(z, 1, 3), tp = nn_tensor_view(p, 1, 3);
    op_error err = {0};
    cr_assert_eq(nn_softmax_forward(&tz, mask, &tp, &err), OP_EINPUT);
    cr_assert(strstr(err.msg, "masked") != NULL, "%s", err.msg);
    cr_assert_eq(nn_log_softmax_forward(&tz, mask, &tp, NULL), OP_EINPUT);
}

Test(nn_softmax, sampling_follows_probabilities_and_mask)
{
    const double probs[4] = {0.1, 0.0, 0.6, 0.3};
    int counts[4] = {0};
    nn_rng r1, r2;
    nn_rng_seed(&r1, 11);
    nn_rng_seed(&r2, 11);
    const int n = 20000;
    for (int i = 0; i < n; i++) {
        int k = nn_sample_categorical(probs, 4, &r1);
        cr_assert_eq(k, nn_sample_categorical(probs, 4, &r2), "deterministic");
        counts[k]++;
    }
    cr_assert_eq(counts[1], 0, "a zero-probability action is never drawn");
    for (int k = 0; k < 4; k++)
        cr_assert(fabs((double)counts[k] / n - probs[k]) < 0.015, "action %d: %d", k, counts[k]);
    const double zeros[3] = {0, 0, 0};
    cr_assert_eq(nn_sample_categorical(zeros, 3, &r1), -1);
    cr_assert_eq(nn_argmax(probs, 4), 2);
    cr_assert_eq(nn_argmax(probs, 0), -1);
}

/* ------------------------------------------------------------ dropout */

Test(nn_dropout, statistics_eval_mode_and_bad_rate)
{
    enum { N = 10000 };
    static double x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = 1.0;
    nn_tensor tx = nn_tensor_view(x, 100, 100), ty = nn_tensor_view(y, 100, 100);
    nn_arena ar;
    cr_assert_eq(nn_arena_init(&ar, 1 << 16, NULL), OP_OK);
    nn_rng r;
    nn_rng_seed(&r, 1);
    nn_dropout_cache cache;
    cr_assert_eq(nn_dropout_forward(0.25, true, &r, &ar, &tx, &ty, &cache, NULL), OP_OK);
    int zeros = 0;
    double sum = 0;
    for (int i = 0; i < N; i++) {
        cr_assert(y[i] == 0.0 || fabs(y[i] - 1.0 / 0.75) < 1e-15);
        zeros += y[i] == 0.0;
        sum += y[i];
    }
    cr_assert(abs(zeros - N / 4) < N / 50, "dropped %d of %d", zeros, N);
    cr_assert(fabs(sum / N - 1.0) < 0.03, "inverted dropout keeps the mean: %g", sum / N);
    cr_assert_eq(nn_dropout_forward(0.25, false, &r, &ar, &tx, &ty, &cache, NULL), OP_OK);
    cr_assert_null(cache.mask);
    for (int i = 0; i < N; i++)
        cr_assert_eq(y[i], 1.0, "evaluation is the identity");
    op_error err = {0};
    cr_assert_eq(nn_dropout_forward(1.0, true, &r, &ar, &tx, &ty, &cache, &err), OP_EINPUT);
    nn_arena_destroy(&ar);
}

/* --------------------------------------- data errors and layer semantics */

Test(nn_layers, maxpool_values_and_bad_neighbor)
{
    double h[6] = {1, -5, /**/ 3, -7, /**/ 2, -1};
    double y[6];
    const int offsets[4] = {0, 2, 2, 3}, neighbors[3] = {0, 1, 7};
    nn_tensor th = nn_tensor_view(h, 3, 2), ty = nn_tensor_view(y, 3, 2);
    nn_arena ar;
    cr_assert_eq(nn_arena_init(&ar, 4096, NULL), OP_OK);
    nn_maxpool_cache cache;
    const int ok_offsets[3] = {0, 2, 2};
    nn_tensor ty2 = nn_tensor_view(y, 2, 2);
    cr_assert_eq(nn_maxpool_forward(&ar, &th, ok_offsets, neighbors, &ty2, &cache, NULL), OP_OK);
    cr_assert(y[0] == 3 && y[1] == -5, "elementwise max over neighbors 0 and 1");
    cr_assert(y[2] == 0 && y[3] == 0, "no neighbors: zero");
    op_error err = {0};
    cr_assert_eq(nn_maxpool_forward(&ar, &th, offsets, neighbors, &ty, &cache, &err), OP_EINPUT);
    cr_assert(strstr(err.msg, "neighbor 7") != NULL, "%s", err.msg);
    nn_arena_destroy(&ar);
}

Test(nn_layers, embedding_rejects_out_of_range_ids)
{
    nn_params ps;
    nn_params_init(&ps);
    nn_rng r;
    nn_rng_seed(&r, 1);
    nn_embedding e;
    cr_assert_eq(nn_embedding_init(&e, &ps, "emb", 4, 2, &r, NULL), OP_OK);
    double y[4];
    nn_tensor ty = nn_tensor_view(y, 2, 2);
    const int ids[2] = {3, 4};
    op_error err = {0};
    cr_assert_eq(nn_embedding_forward(&e, ids, 2, &ty, &err), OP_EINPUT);
    cr_assert(strstr(err.msg, "id 4") != NULL, "%s", err.msg);
    const int good[2] = {3, 0};
    cr_assert_eq(nn_embedding_forward(&e, good, 2, &ty, NULL), OP_OK);
    cr_assert_eq(y[0], NN_AT(&e.table->value, 3, 0));
    nn_params_destroy(&ps);
}

typedef struct mha_fixture {
    nn_params ps;
    nn_arena ar;
    nn_mha a;
    double x[4 * 8], mem[3 * 8];
} mha_fixture;

static void mha_setup(mha_fixture *f)
{
    nn_params_init(&f->ps);
    cr_assert_eq(nn_arena_init(&f->ar, 1 << 14, NULL), OP_OK);
    nn_rng r;
    nn_rng_seed(&r, 9);
    cr_assert_eq(nn_mha_init(&f->a, &f->ps, "mha", 8, 4, &r, NULL), OP_OK);
    for (int i = 0; i < 32; i++)
        f->x[i] = nn_rng_uniform(&r) - 0.5;
    for (int i = 0; i < 24; i++)
        f->mem[i] = nn_rng_uniform(&r) - 0.5;
}

static void mha_run(mha_fixture *f, bool with_mem, bool causal, double *out)
{
    nn_arena_reset(&f->ar);
    nn_tensor x = nn_tensor_view(f->x, 4, 8), mem = nn_tensor_view(f->mem, 3, 8);
    nn_tensor y = nn_tensor_view(out, 4, 8);
    nn_mha_cache cache;
    cr_assert_eq(nn_mha_forward(&f->a, &f->ar, &x, with_mem ? &mem : NULL, causal, &y, &cache,
                                NULL), OP_OK);
}

Test(nn_layers, attention_causal_mask_and_memory)
{
    mha_fixture f;
    mha_setup(&f);
    double y0[32], y1[32];
    mha_run(&f, true, true, y0);
    f.x[3 * 8 + 2] += 0.5; /* change the last position only */
    mha_run(&f, true, true, y1);
    for (int i = 0; i < 3 * 8; i++)
        cr_assert_eq(y0[i], y1[i], "causal: earlier positions cannot see position 3");
    int changed = 0;
    for (int i = 24; i < 32; i++)
        changed += y0[i] != y1[i];
    cr_assert_gt(changed, 0);
    mha_run(&f, false, false, y0);
    f.mem[0] += 1.0;
    mha_run(&f, false, false, y1);
    cr_assert_eq(memcmp(y0, y1, sizeof y0), 0, "no memory: mem is ignored");
    mha_run(&f, true, false, y0);
    f.mem[0] -= 1.0;
    mha_run(&f, true, false, y1);
    cr_assert_neq(memcmp(y0, y1, sizeof y0), 0, "memory is attended to");
    op_error err = {0};
    nn_mha bad;
    cr_assert_eq(nn_mha_init(&bad, &f.ps, "bad", 10, 4, NULL, &err), OP_EINPUT);
    nn_arena_destroy(&f.ar);
    nn_params_destroy(&f.ps);
}

/* ---------------------------------------------- a small model, trained */

typedef struct mlp {
    nn_params ps;
    nn_linear l1, l2;
    nn_arena ar;
} mlp;

static void mlp_init(mlp *m, uint64_t seed)
{
    nn_rng r;
    nn_rng_seed(&r, seed);
    nn_params_init(&m->ps);
    cr_assert_eq(nn_linear_init(&m->l1, &m->ps, "l1", 2, 8, true, &r, NULL), OP_OK);
    cr_assert_eq(nn_linear_init(&m->l2, &m->ps, "l2", 8, 1, true, &r, NULL), OP_OK);
    cr_assert_eq(nn_arena_init(&m->ar, 1 << 14, NULL), OP_OK);
}

static void mlp_destroy(mlp *m)
{
    nn_arena_destroy(&m->ar);
    nn_params_destroy(&m->ps);
}

static const double xor_x[8] = {0, 0, 0, 1, 1, 0, 1, 1};
static const double xor_t[4] = {0, 1, 1, 0};

/* Forward on the XOR inputs; with train, one Adam step on the squared
 * error.  Returns the loss before the step; writes outputs if asked. */
static double mlp_step(mlp *m, nn_adam *opt, bool train, double *out)
{
    nn_arena_reset(&m->ar);
    nn_tensor x = nn_tensor_view((double *)xor_x, 4, 2), h, a, y, dy, da, dh;
    cr_assert_eq(nn_arena_tensor(&m->ar, 4, 8, &h, NULL), OP_OK);
    cr_assert_eq(nn_arena_tensor(&m->ar, 4, 8, &a, NULL), OP_OK);
    cr_assert_eq(nn_arena_tensor(&m->ar, 4, 1, &y, NULL), OP_OK);
    cr_assert_eq(nn_arena_tensor(&m->ar, 4, 1, &dy, NULL), OP_OK);
    cr_assert_eq(nn_arena_tensor(&m->ar, 4, 8, &da, NULL), OP_OK);
    cr_assert_eq(nn_arena_tensor(&m->ar, 4, 8, &dh, NULL), OP_OK);
    nn_linear_forward(&m->l1, &x, &h);
    nn_act_forward(NN_ACT_TANH, &h, &a);
    nn_linear_forward(&m->l2, &a, &y);
    double loss = 0;
    for (int i = 0; i < 4; i++) {
        loss += (y.data[i] - xor_t[i]) * (y.data[i] - xor_t[i]) / 4;
        dy.data[i] = 2.0 * (y.data[i] - xor_t[i]) / 4;
        if (out)
            out[i] = y.data[i];
    }
    if (train) {
        nn_params_zero_grad(&m->ps);
        nn_linear_backward(&m->l2, &a, &dy, &da);
        nn_act_backward(NN_ACT_TANH, &a, &da, &dh);
        nn_linear_backward(&m->l1, &x, &dh, NULL);
        nn_params_clip_grad_norm(&m->ps, 5.0);
        nn_adam_step(opt, &m->ps);
    }
    return loss;
}

Test(nn_train, mlp_learns_xor)
{
    mlp m;
    mlp_init(&m, 2024);
    nn_adam opt = nn_adam_defaults(0.03);
    double first = mlp_step(&m, &opt, true, NULL), last = first;
    for (int i = 0; i < 600; i++)
        last = mlp_step(&m, &opt, true, NULL);
    cr_assert_lt(last, 1e-3, "loss %g -> %g", first, last);
    mlp_destroy(&m);
}

Test(nn_train, same_seed_same_training_bit_for_bit)
{
    mlp a, b, c;
    mlp_init(&a, 77);
    mlp_init(&b, 77);
    mlp_init(&c, 78);
    nn_adam oa = nn_adam_defaults(0.01), ob = nn_adam_defaults(0.01);
    for (int i = 0; i < 50; i++) {
        mlp_step(&a, &oa, true, NULL);
        mlp_step(&b, &ob, true, NULL);
    }
    for (size_t k = 0; k < a.ps.count; k++)
        cr_assert_eq(memcmp(a.ps.items[k]->value.data, b.ps.items[k]->value.data,
                            nn_tensor_size(&a.ps.items[k]->value) * sizeof(double)), 0,
                     "%s differs between identical runs", a.ps.items[k]->name);
    cr_assert_neq(memcmp(a.ps.items[0]->value.data, c.ps.items[0]->value.data, 16 * sizeof(double)),
                  0, "another seed gives other weights");
    mlp_destroy(&a);
    mlp_destroy(&b);
    mlp_destroy(&c);
}

/* ---------------------------------------------------------- save/load */

static char tmpdir[64];

static void io_setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_nn_XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void io_teardown(void)
{
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    char path[512];
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name);
            unlink(path);
        }
    if (d)
        closedir(d);
    rmdir(tmpdir);
}

TestSuite(nn_io, .init = io_setup, .fini = io_teardown);

static char *path_in_tmp(const char *name)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    return path;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*len);
    cr_assert_eq(fread(b, 1, *len, f), *len);
    fclose(f);
    return b;
}

static void spit(const char *path, const unsigned char *b, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(b, 1, len, f), len);
    fclose(f);
}

static int count_files(void)
{
    DIR *d = opendir(tmpdir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

Test(nn_io, round_trip_gives_identical_outputs)
{
    mlp a, b;
    mlp_init(&a, 1);
    mlp_init(&b, 2);
    nn_adam opt = nn_adam_defaults(0.01);
    for (int i = 0; i < 20; i++)
        mlp_step(&a, &opt, true, NULL);
    op_error err = {0};
    const char *path = path_in_tmp("model.opnn");
    cr_assert_eq(nn_params_save(&a.ps, path, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(count_files(), 1, "no temporary file left behind");
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    cr_assert_eq(sb.st_mode & 0777, 0644);
    cr_assert_eq(nn_params_save(&a.ps, path, &err), OP_OK, "overwrite works");
    double ya[4], yb[4];
    mlp_step(&a, NULL, false, ya);
    mlp_step(&b, NULL, false, yb);
    cr_assert_neq(memcmp(ya, yb, sizeof ya), 0);
    cr_assert_eq(nn_params_load(&b.ps, path, &err), OP_OK, "%s", err.msg);
    mlp_step(&b, NULL, false, yb);
    cr_assert_eq(memcmp(ya, yb, sizeof ya), 0, "bit-identical outputs after load");
    mlp_destroy(&a);
    mlp_destroy(&b);
}

/* Load `bytes` into a fresh model: must fail with `code`, a message
 * containing `needle`, and leave the weights untouched. */
static void expect_rejected(const unsigned char *bytes, size_t len, op_status code,
                            const char *needle, const char *what)
{
    const char *path = path_in_tmp("bad.opnn");
    spit(path, bytes, len);
    mlp m;
    mlp_init(&m, 5);
    double before = m.ps.items[0]->value.data[0];
    op_error err = {0};
    cr_assert_eq(nn_params_load(&m.ps, path, &err), code, "%s: accepted or wrong code (%s)",
                 what, err.msg);
    cr_assert(strstr(err.msg, needle) != NULL, "%s: message '%s' lacks '%s'", what, err.msg,
              needle);
    cr_assert(strstr(err.msg, path) != NULL, "%s: message names the file", what);
    cr_assert_eq(m.ps.items[0]->value.data[0], before, "%s: model changed by a failed load",
                 what);
    mlp_destroy(&m);
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void fix_crc(unsigned char *b, size_t len)
{
    put_u32(b + len - 4, nn_crc32(0, b, len - 4));
}

Test(nn_io, damaged_files_are_rejected)
{
    mlp a;
    mlp_init(&a, 1);
    const char *good = path_in_tmp("good.opnn");
    cr_assert_eq(nn_params_save(&a.ps, good, NULL), OP_OK);
    mlp_destroy(&a);
    size_t len;
    unsigned char *orig = slurp(good, &len);
    unsigned char *b = malloc(len);

    /* a flipped bit anywhere after the header: checksum */
    const size_t flips[] = {9, 14, 20, len / 2, len - 9, len - 1};
    for (size_t k = 0; k < sizeof flips / sizeof *flips; k++) {
        memcpy(b, orig, len);
        b[flips[k]] ^= 0x10;
        expect_rejected(b, len, OP_EINPUT, "checksum", "flipped byte");
    }
    /* truncated at several lengths */
    const size_t cuts[] = {0, 3, 10, 15, len / 2, len - 1};
    for (size_t k = 0; k < sizeof cuts / sizeof *cuts; k++)
        expect_rejected(orig, cuts[k], OP_EINPUT, cuts[k] < 4 ? "not an opplace" :
                        cuts[k] < 16 ? "truncated" : "checksum", "truncated");
    /* magic */
    memcpy(b, orig, len);
    b[0] = 'X';
    expect_rejected(b, len, OP_EINPUT, "not an opplace", "bad magic");
    /* another version, even with a valid checksum */
    memcpy(b, orig, len);
    put_u32(b + 4, NN_FILE_VERSION + 1);
    fix_crc(b, len);
    expect_rejected(b, len, OP_EINPUT, "version 2", "wrong version");
    /* structure damaged behind a valid checksum */
    memcpy(b, orig, len);
    put_u32(b + 8, 3);
    fix_crc(b, len);
    expect_rejected(b, len, OP_EINPUT, "holds 3 tensors", "wrong count");
    memcpy(b, orig, len);
    put_u32(b + 12, 200);
    fix_crc(b, len);
    expect_rejected(b, len, OP_EINPUT, "name of 200 bytes", "wrong name length");
    memcpy(b, orig, len);
    b[16 + 1] = 'X'; /* "l1.w" -> "lX.w" */
    fix_crc(b, len);
    expect_rejected(b, len, OP_EINPUT, "'lX.w' is not part of this model", "unknown name");
    /* a missing file */
    mlp m;
    mlp_init(&m, 5);
    op_error err = {0};
    cr_assert_eq(nn_params_load(&m.ps, path_in_tmp("absent.opnn"), &err), OP_EIO);
    cr_assert_eq(nn_params_save(&m.ps, "/nonexistent-dir/x.opnn", NULL), OP_EIO);
    mlp_destroy(&m);
    free(b);
    free(orig);
}

Test(nn_io, other_architecture_is_rejected)
{
    nn_params ps, other;
    nn_params_init(&ps);
    nn_params_init(&other);
    cr_assert_eq(nn_params_add(&ps, "w", 2, 3, NULL, NULL), OP_OK);
    cr_assert_eq(nn_params_add(&other, "w", 3, 2, NULL, NULL), OP_OK);
    const char *path = path_in_tmp("shape.opnn");
    cr_assert_eq(nn_params_save(&ps, path, NULL), OP_OK);
    op_error err = {0};
    cr_assert_eq(nn_params_load(&other, path, &err), OP_EINPUT);
    cr_assert(strstr(err.msg, "'w' is 2x3 in the file, the model needs 3x2") != NULL, "%s",
              err.msg);
    op_error_clear(&err);
    cr_assert_eq(nn_params_add(&ps, "extra", 1, 1, NULL, NULL), OP_OK);
    cr_assert_eq(nn_params_load(&ps, path, &err), OP_EINPUT);
    cr_assert(strstr(err.msg, "holds 1 tensors, the model has 2") != NULL, "%s", err.msg);
    nn_params_destroy(&ps);
    nn_params_destroy(&other);
}

Test(nn_io, crc32_known_answer)
{
    cr_assert_eq(nn_crc32(0, "123456789", 9), 0xCBF43926u);
    uint32_t part = nn_crc32(0, "1234", 4);
    cr_assert_eq(nn_crc32(part, "56789", 5), 0xCBF43926u, "incremental");
}
