/*
 * trinity_policy.c - Trinity's two policy networks (the Trinity paper,
 * section 4.1, Figure 2) with their forward and backward passes.
 *
 * Partition network N_g (4.1.1): op features (placers/trinity/trinity.h) and a
 * trainable op-type embedding -> linear 64 -> ReLU -> dropout 30% ->
 * linear 128 -> ReLU -> linear G -> softmax: each op's group.
 *
 * Schedule network N_s (4.1.2): the group features of the sampled
 * partition (Table 2) are read in group order by an LSTM encoder; a LSTM
 * decoder, started from the encoder's final state, emits one device per
 * group.  Its input at step t is the trainable embedding of the device it
 * chose at step t-1 (a start token at t = 0) beside the encoder state of
 * group t; additive (Bahdanau) attention over the encoder states gives a
 * context vector; u_t = [h_t ; context_t] W + b and the device is drawn from
 * softmax(C tanh(u_t / T)) (eq. 9), masked to the devices the group may use.
 *
 * Differences from the paper: one LSTM layer each (the paper's schedule
 * network has two) and smaller widths (trinity_config); the decoder input
 * also carries encoder state t, because the output sequence is aligned one
 * to one with the input sequence; the group features add runtime, parameter
 * and member shares to Table 2.
 *
 * Two ways to run the decoder.  Sampling (run->sample) goes step by step,
 * since each step needs the device drawn at the step before; the pass it
 * leaves cannot be back-propagated.  With the actions given (PPO epochs and
 * gradient checks) the decoder is teacher-forced: all steps of all
 * rollouts at once, attention one call per rollout, then backward.  Both
 * give the same probabilities for the same actions.  Tensors of the
 * schedule network are step-major (row t*k + r: step t of rollout r) inside
 * the LSTMs and rollout-major (row r*G + t) in the attention and output.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "placers/trinity/trinity_internal.h"

#define ARCH_VERSION 2
#define ARCH_LEN 17

struct trinity_policy {
    trinity_config cfg;
    nn_params ps;
    nn_param *arch;
    nn_embedding type_emb;
    nn_linear p1, p2, p3;
    nn_lstm enc, dec;
    nn_embedding dev_emb;     /* max_devices + 1 rows: the last is the start token */
    nn_additive_attention att;
    nn_linear out;
    int fresh; /* new weights, never loaded nor initialised from structure (trinity_train.c) */
};

struct trinity_pass {
    int k, sampled, training;
    /* partition */
    nn_tensor temb, xpart, a1, d1, a2, a2n, upart, logp_part;
    double *inv_sd; /* cfg.centre: a2 standardised over the ops into a2n */
    nn_dropout_cache drop;
    /* group features and encoder */
    double *count;
    nn_tensor gf, henc, cenc, zeros;
    nn_lstm_cache *enc_cache;
    /* decoder (teacher-forced) */
    int *prev;
    nn_tensor demb, xdec, hdec, cdec, keys, queries, ctx, o, u, logits, logp_sched;
    nn_lstm_cache *dec_cache;
    nn_additive_attention_cache *att_cache;
};

trinity_config trinity_config_default(void)
{
    return (trinity_config){.max_devices = 8, .groups = 64, .n2v_dim = 16, .type_dim = 8,
                            .part_h1 = 64, .part_h2 = 128, .dropout = 0.3, .hidden = 64,
                            .dev_dim = 16, .attn = 32, .temperature = 10.0, .tanh_c = 5.0,
                            .prior = 1.0, .sched_prior = 2.0};
}

op_status trinity_config_check(const trinity_config *c, op_error *err)
{
    if (c->max_devices < 1 || c->max_devices > 1024 || c->groups < 1 || c->groups > 4096 ||
        c->n2v_dim < 0 || c->n2v_dim > 1024 || c->type_dim < 1 || c->type_dim > 1024 ||
        c->part_h1 < 1 || c->part_h2 < 1 || c->hidden < 1 || c->dev_dim < 1 || c->attn < 1 ||
        c->part_h1 > 4096 || c->part_h2 > 4096 || c->hidden > 4096 || c->dev_dim > 4096 ||
        c->attn > 4096)
        return op_fail(err, OP_EUSAGE, "trinity: every width and count must be in 1..4096 "
                                       "(max-devices <= 1024)");
    if (!(c->dropout >= 0 && c->dropout < 1) || !(c->temperature > 0) || !(c->tanh_c > 0) ||
        !(c->prior >= 0 && c->prior < 1e6) || !(c->sched_prior >= 0 && c->sched_prior < 1e6) ||
        c->centre < 0 || c->centre > 1)
        return op_fail(err, OP_EUSAGE, "trinity: need 0 <= dropout < 1, temperature > 0, tanh "
                                       "constant > 0, prior >= 0, centre 0 or 1");
    return OP_OK;
}

/* ----------------------------------------------------------- building */

static void arch_values(const trinity_config *c, double *v)
{
    double a[ARCH_LEN] = {ARCH_VERSION,  trinity_vocab_size(), c->max_devices, c->groups,
                          c->n2v_dim,    c->type_dim,          c->part_h1,     c->part_h2,
                          c->dropout,    c->hidden,            c->dev_dim,     c->attn,
                          c->temperature, c->tanh_c,           c->prior,
                          c->sched_prior, c->centre};
    memcpy(v, a, sizeof a);
}

static op_status config_from_arch(const double *v, trinity_config *c, const char *path,
                                  op_error *err)
{
    if (v[0] != ARCH_VERSION || v[1] != trinity_vocab_size())
        return op_fail(err, OP_EINPUT,
                       "%s: Trinity weights of architecture version %g (vocabulary %g); this "
                       "build reads version %d (vocabulary %d): retrain",
                       path, v[0], v[1], ARCH_VERSION, trinity_vocab_size());
    *c = (trinity_config){.max_devices = (int)v[2], .groups = (int)v[3], .n2v_dim = (int)v[4],
                          .type_dim = (int)v[5], .part_h1 = (int)v[6], .part_h2 = (int)v[7],
                          .dropout = v[8], .hidden = (int)v[9], .dev_dim = (int)v[10],
                          .attn = (int)v[11], .temperature = v[12], .tanh_c = v[13],
                          .prior = v[14], .sched_prior = v[15], .centre = (int)v[16]};
    return trinity_config_check(c, err);
}

static op_status build(trinity_policy *pol, uint64_t seed, op_error *err)
{
    const trinity_config *c = &pol->cfg;
    nn_rng rng;
    nn_rng_seed(&rng, seed);
    int n_num = TRINITY_N_SCALAR + c->n2v_dim, H = c->hidden;
    int gdim = trinity_group_feature_dim(c);
    op_status st;
    if ((st = nn_params_add(&pol->ps, "trinity.arch", 1, ARCH_LEN, &pol->arch, err)))
        return st;
    arch_values(c, pol->arch->value.data);
    if ((st = nn_embedding_init(&pol->type_emb, &pol->ps, "trinity.type", trinity_vocab_size(),
                                c->type_dim, &rng, err)) ||
        (st = nn_linear_init(&pol->p1, &pol->ps, "trinity.part1", n_num + c->type_dim,
                             c->part_h1, true, &rng, err)) ||
        (st = nn_linear_init(&pol->p2, &pol->ps, "trinity.part2", c->part_h1, c->part_h2, true,
                             &rng, err)) ||
        (st = nn_linear_init(&pol->p3, &pol->ps, "trinity.part3", c->part_h2, c->groups, true,
                             &rng, err)) ||
        (st = nn_lstm_init(&pol->enc, &pol->ps, "trinity.enc", gdim, H, &rng, err)) ||
        (st = nn_lstm_init(&pol->dec, &pol->ps, "trinity.dec", c->dev_dim + H, H, &rng, err)) ||
        (st = nn_embedding_init(&pol->dev_emb, &pol->ps, "trinity.dev", c->max_devices + 1,
                                c->dev_dim, &rng, err)) ||
        (st = nn_additive_attention_init(&pol->att, &pol->ps, "trinity.att", H, H, c->attn,
                                         &rng, err)) ||
        (st = nn_linear_init(&pol->out, &pol->ps, "trinity.out", 2 * H, c->max_devices, true,
                             &rng, err)))
        return st;
    nn_tensor_scale(&pol->type_emb.table->value, 0.3);
    nn_tensor_scale(&pol->dev_emb.table->value, 0.3);
    return OP_OK;
}

trinity_policy *trinity_policy_new(const trinity_config *cfg, uint64_t seed, op_error *err)
{
    if (trinity_config_check(cfg, err))
        return NULL;
    trinity_policy *pol = op_calloc(1, sizeof *pol, err);
    if (!pol)
        return NULL;
    pol->cfg = *cfg;
    pol->fresh = 1;
    nn_params_init(&pol->ps);
    if (build(pol, seed, err)) {
        trinity_policy_free(pol);
        return NULL;
    }
    return pol;
}

void trinity_policy_free(trinity_policy *pol)
{
    if (!pol)
        return;
    nn_params_destroy(&pol->ps);
    free(pol);
}

const trinity_config *trinity_policy_config(const trinity_policy *pol)
{
    return &pol->cfg;
}

int trinity_policy_take_fresh(trinity_policy *pol)
{
    int f = pol->fresh;
    pol->fresh = 0;
    return f;
}

nn_params *trinity_policy_params(trinity_policy *pol)
{
    return &pol->ps;
}

op_status trinity_policy_save(const trinity_policy *pol, const char *path, op_error *err)
{
    arch_values(&pol->cfg, pol->arch->value.data);
    return nn_params_save(&pol->ps, path, err);
}

static int read_u32(FILE *f, uint32_t *v)
{
    unsigned char b[4];
    if (fread(b, 1, 4, f) != 4)
        return 0;
    *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return 1;
}

static int read_f64(FILE *f, double *v)
{
    unsigned char b[8];
    if (fread(b, 1, 8, f) != 8)
        return 0;
    uint64_t u = 0;
    for (int i = 7; i >= 0; i--)
        u = u << 8 | b[i];
    memcpy(v, &u, sizeof *v);
    return 1;
}

/* Reads the "trinity.arch" entry (nn_params_load checks the rest). */
static op_status weights_config(const char *path, trinity_config *cfg, op_error *err)
{
    op_status chk = nn_params_check_file(path, NULL, err); /* before any allocation */
    if (chk)
        return chk;
    FILE *f = fopen(path, "rb");
    if (!f)
        return op_fail(err, OP_EIO, "%s: cannot open Trinity weights file", path);
    char magic[4];
    uint32_t version, count;
    op_status st = op_fail(err, OP_EINPUT, "%s: not a Trinity weights file (no trinity.arch)",
                           path);
    if (fread(magic, 1, 4, f) != 4 || memcmp(magic, "OPNN", 4) || !read_u32(f, &version) ||
        !read_u32(f, &count))
        count = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t len, rows, cols;
        char name[NN_NAME_MAX];
        if (!read_u32(f, &len) || len >= sizeof name || fread(name, 1, len, f) != len ||
            !read_u32(f, &rows) || !read_u32(f, &cols))
            break;
        name[len] = '\0';
        if (!strcmp(name, "trinity.arch") && rows == 1 && cols >= 2 && cols <= ARCH_LEN) {
            double v[ARCH_LEN] = {0}; /* older versions are shorter: refused by version */
            int ok = 1;
            for (int j = 0; j < (int)cols; j++)
                ok &= read_f64(f, &v[j]);
            if (err)
                *err = (op_error){0};
            st = ok ? config_from_arch(v, cfg, path, err)
                    : op_fail(err, OP_EINPUT, "%s: truncated weights file", path);
            break;
        }
        if (fseek(f, (long)((uint64_t)rows * cols * 8), SEEK_CUR))
            break;
    }
    fclose(f);
    return st;
}

trinity_policy *trinity_policy_from_file(const char *path, op_error *err)
{
    trinity_config cfg;
    if (weights_config(path, &cfg, err))
        return NULL;
    trinity_policy *pol = trinity_policy_new(&cfg, 0, err);
    if (pol && nn_params_load(&pol->ps, path, err)) {
        trinity_policy_free(pol);
        return NULL;
    }
    if (pol)
        pol->fresh = 0;
    return pol;
}

/* ------------------------------------------------------------ helpers */

#define TRY(x)                                                                                    \
    do {                                                                                          \
        op_status st_ = (x);                                                                      \
        if (st_)                                                                                  \
            return st_;                                                                           \
    } while (0)

static op_status tensor(nn_arena *ar, int rows, int cols, nn_tensor *t, op_error *err)
{
    return nn_arena_tensor(ar, rows, cols, t, err);
}

/* A uniform draw among the allowed (finite) entries of a row. */
static int uniform_allowed(const double *logp, int n, nn_rng *rng)
{
    int allowed = 0;
    for (int j = 0; j < n; j++)
        allowed += isfinite(logp[j]) != 0;
    int pick = (int)(nn_rng_uniform(rng) * allowed);
    for (int j = 0; j < n; j++)
        if (isfinite(logp[j]) && pick-- == 0)
            return j;
    return nn_argmax(logp, n);
}

/* Draw from a log-probability row (masked entries -INFINITY), with logit
 * noise U(-noise, noise) when noise > 0; with probability explore a
 * uniform draw among the allowed entries instead (trinity_run); greedy:
 * the most likely entry. */
static int sample_row(const double *logp, int n, double noise, double explore, int greedy,
                      nn_rng *rng, double *work)
{
    if (greedy)
        return nn_argmax(logp, n);
    if (explore > 0 && nn_rng_uniform(rng) < explore)
        return uniform_allowed(logp, n, rng);
    double mx = -INFINITY;
    for (int j = 0; j < n; j++) {
        work[j] = logp[j];
        if (isfinite(logp[j]) && noise > 0)
            work[j] += noise * (2.0 * nn_rng_uniform(rng) - 1.0);
        if (work[j] > mx)
            mx = work[j];
    }
    for (int j = 0; j < n; j++)
        work[j] = isfinite(work[j]) ? exp(work[j] - mx) : 0.0;
    int a = nn_sample_categorical(work, n, rng);
    return a >= 0 ? a : nn_argmax(logp, n);
}

/* The device of group t under the block prior: floor(t * nd / G), or the
 * reference's block (trinity_warm.c). */
static int block_device(const trinity_graph *tg, int t)
{
    return tg->block_dev[t];
}

/* logits = C tanh(u / T), elementwise. */
static void squash(const trinity_config *c, const nn_tensor *u, nn_tensor *logits)
{
    for (size_t i = 0; i < nn_tensor_size(u); i++)
        logits->data[i] = c->tanh_c * tanh(u->data[i] / c->temperature);
}

/* du += dlogits * C/T * (1 - tanh(u/T)^2). */
static void squash_backward(const trinity_config *c, const nn_tensor *u,
                            const nn_tensor *dlogits, nn_tensor *du)
{
    for (size_t i = 0; i < nn_tensor_size(u); i++) {
        double th = tanh(u->data[i] / c->temperature);
        du->data[i] += dlogits->data[i] * c->tanh_c / c->temperature * (1.0 - th * th);
    }
}

/* CENTRING (cfg.centre; not in the paper; --paper uses it, the defaults do
 * not).
 * With interchangeable devices the steepest way up from a random policy is
 * a preference every decision shares: every op for one group, every group
 * for one device, i.e. everything on one device (the plain method's
 * collapse).  Centred, no such shared preference can be expressed:
 *   partition: each group's logit is centred over the graph's deciding ops
 *     (as SGDP's device logits), so no group can attract every op;
 *   schedule: the decoder is autoregressive, so the centring is causal:
 *     logit_t[d] = z_t[d] - mean_{s <= t} z_s[d] over the rollout's steps
 *     so far (z = C tanh(u / T)); a device preference constant over the
 *     steps cancels, a preference that changes along the group sequence
 *     (one block of groups here, the next there) stays.
 * Both are linear in the logits; backward applies their transposes (the
 * partition's: nn_center_columns_backward). */
/* Rows r*G .. r*G+G-1 of z (one rollout's steps in order), in place;
 * D <= 1024 (trinity_config_check). */
static void centre_steps(nn_tensor *z, int G, int D, int backward)
{
    double acc[1024];
    for (int r = 0; r < z->rows / G; r++) {
        for (int d = 0; d < D; d++)
            acc[d] = 0.0;
        if (!backward)
            for (int t = 0; t < G; t++) { /* l_t = z_t - (sum_{s<=t} z_s) / (t+1) */
                double *row = &NN_AT(z, r * G + t, 0);
                for (int d = 0; d < D; d++) {
                    acc[d] += row[d];
                    row[d] -= acc[d] / (t + 1);
                }
            }
        else
            for (int t = G - 1; t >= 0; t--) { /* dz_s = dl_s - sum_{t>=s} dl_t / (t+1) */
                double *row = &NN_AT(z, r * G + t, 0);
                for (int d = 0; d < D; d++) {
                    acc[d] += row[d] / (t + 1);
                    row[d] -= acc[d];
                }
            }
    }
}


/* ------------------------------------------------------ partition network */

/* u[i][g] -= prior * |anchor_i - g| (placers/trinity/trinity.h); a constant of
 * the input, so backward needs nothing. */
static void add_order_prior(const trinity_config *c, const trinity_graph *tg, nn_tensor *u)
{
    if (c->prior == 0)
        return;
    int G = c->groups;
    for (int i = 0; i < tg->n; i++) {
        int a = tg->anchor[i];
        for (int g = 0; g < G; g++)
            NN_AT(u, i, g) -= c->prior * abs(a - g);
    }
}

static op_status partition_forward(trinity_policy *pol, nn_arena *ar, const trinity_graph *tg,
                                   const trinity_run *run, trinity_pass *ps, op_error *err)
{
    const trinity_config *c = &pol->cfg;
    int n = tg->n;
    nn_tensor num = nn_tensor_view(tg->num, n, tg->n_num);
    nn_rng drop = run->dropout_rng;
    TRY(tensor(ar, n, c->type_dim, &ps->temb, err));
    TRY(nn_embedding_forward(&pol->type_emb, tg->type_id, n, &ps->temb, err));
    TRY(tensor(ar, n, tg->n_num + c->type_dim, &ps->xpart, err));
    const nn_tensor *parts[2] = {&num, &ps->temb};
    nn_concat_cols_forward(parts, 2, &ps->xpart);
    TRY(tensor(ar, n, c->part_h1, &ps->a1, err));
    nn_linear_forward(&pol->p1, &ps->xpart, &ps->a1);
    nn_act_forward(NN_ACT_RELU, &ps->a1, &ps->a1);
    TRY(tensor(ar, n, c->part_h1, &ps->d1, err));
    TRY(nn_dropout_forward(c->dropout, run->training, &drop, ar, &ps->a1, &ps->d1, &ps->drop,
                           err));
    TRY(tensor(ar, n, c->part_h2, &ps->a2, err));
    nn_linear_forward(&pol->p2, &ps->d1, &ps->a2);
    nn_act_forward(NN_ACT_RELU, &ps->a2, &ps->a2);
    TRY(tensor(ar, n, c->groups, &ps->upart, err));
    if (c->centre) {
        TRY(tensor(ar, n, c->part_h2, &ps->a2n, err));
        ps->inv_sd = nn_arena_alloc(ar, sizeof(double) * (size_t)c->part_h2, err);
        if (!ps->inv_sd)
            return OP_ENOMEM;
        nn_standardize_columns(&ps->a2, NULL, &ps->a2n, ps->inv_sd);
    }
    nn_linear_forward(&pol->p3, c->centre ? &ps->a2n : &ps->a2, &ps->upart);
    if (c->centre)
        nn_center_columns(&ps->upart, tg->decides);
    add_order_prior(c, tg, &ps->upart);
    TRY(tensor(ar, n, c->groups, &ps->logp_part, err));
    return nn_log_softmax_forward(&ps->upart, NULL, &ps->logp_part, err);
}

static void partition_backward(trinity_policy *pol, nn_arena *ar, const trinity_graph *tg,
                               trinity_pass *ps, const nn_tensor *dlogp, nn_tensor *dtemb,
                               op_error *err)
{
    const trinity_config *c = &pol->cfg;
    int n = tg->n;
    nn_tensor du, da2, dd1, da1, dx, dnum;
    if (tensor(ar, n, c->groups, &du, err) || tensor(ar, n, c->part_h2, &da2, err) ||
        tensor(ar, n, c->part_h1, &dd1, err) || tensor(ar, n, c->part_h1, &da1, err) ||
        tensor(ar, n, tg->n_num + c->type_dim, &dx, err) || tensor(ar, n, tg->n_num, &dnum, err))
        return;
    nn_log_softmax_backward(&ps->logp_part, dlogp, &du);
    if (c->centre) {
        nn_tensor da2n;
        if (tensor(ar, n, c->part_h2, &da2n, err))
            return;
        nn_center_columns_backward(&du, tg->decides);
        nn_linear_backward(&pol->p3, &ps->a2n, &du, &da2n);
        nn_standardize_columns_backward(&ps->a2n, NULL, ps->inv_sd, &da2n, &da2);
    } else
        nn_linear_backward(&pol->p3, &ps->a2, &du, &da2);
    nn_tensor dh2; /* ReLU ran in place: its backward reads the output a2 */
    if (tensor(ar, n, c->part_h2, &dh2, err))
        return;
    nn_act_backward(NN_ACT_RELU, &ps->a2, &da2, &dh2);
    nn_linear_backward(&pol->p2, &ps->d1, &dh2, &dd1);
    nn_dropout_backward(&ps->drop, &dd1, &da1);
    nn_tensor dh1;
    if (tensor(ar, n, c->part_h1, &dh1, err))
        return;
    nn_act_backward(NN_ACT_RELU, &ps->a1, &da1, &dh1);
    nn_linear_backward(&pol->p1, &ps->xpart, &dh1, &dx);
    nn_tensor *dparts[2] = {&dnum, dtemb};
    nn_concat_cols_backward(&dx, dparts, 2);
}

/* Groups of k rollouts from logp_part (followers copy their leader). */
static void sample_partition(const trinity_graph *tg, const nn_tensor *logp, trinity_batch *b,
                             int k, const trinity_run *run, double *work)
{
    int n = tg->n, G = tg->groups;
    for (int r = 0; r < k; r++) {
        int *grp = b->group + (size_t)r * n;
        double *old = b->old_part + (size_t)r * n;
        int greedy = run->greedy_last && r == k - 1;
        for (int i = 0; i < n; i++) {
            old[i] = 0.0;
            if (!tg->decides[i])
                continue;
            const double *row = logp->data + (size_t)i * G;
            grp[i] = sample_row(row, G, run->noise, run->explore_part, greedy, run->rng, work);
            old[i] = row[grp[i]];
        }
        for (int i = 0; i < n; i++)
            if (!tg->decides[i])
                grp[i] = grp[tg->leader[i]];
    }
}

/* ------------------------------------------------------------- encoder */

static op_status encoder_forward(trinity_policy *pol, nn_arena *ar, const trinity_graph *tg,
                                 trinity_pass *ps, op_error *err)
{
    int G = tg->groups, k = ps->k, H = pol->cfg.hidden;
    TRY(tensor(ar, G * k, H, &ps->henc, err));
    TRY(tensor(ar, G * k, H, &ps->cenc, err));
    TRY(tensor(ar, k, H, &ps->zeros, err));
    ps->enc_cache = nn_arena_alloc(ar, sizeof(nn_lstm_cache) * (size_t)G, err);
    if (!ps->enc_cache)
        return OP_ENOMEM;
    for (int t = 0; t < G; t++) {
        nn_tensor x = nn_tensor_rows(&ps->gf, t * k, k);
        nn_tensor hp = t ? nn_tensor_rows(&ps->henc, (t - 1) * k, k) : ps->zeros;
        nn_tensor cp = t ? nn_tensor_rows(&ps->cenc, (t - 1) * k, k) : ps->zeros;
        nn_tensor h = nn_tensor_rows(&ps->henc, t * k, k), cc = nn_tensor_rows(&ps->cenc, t * k, k);
        TRY(nn_lstm_forward(&pol->enc, ar, &x, &hp, &cp, &h, &cc, &ps->enc_cache[t], err));
    }
    /* attention keys, rollout-major */
    TRY(tensor(ar, k * G, H, &ps->keys, err));
    for (int t = 0; t < G; t++)
        for (int r = 0; r < k; r++)
            memcpy(&NN_AT(&ps->keys, r * G + t, 0), &NN_AT(&ps->henc, t * k + r, 0),
                   sizeof(double) * (size_t)H);
    return OP_OK;
}

static void encoder_backward(trinity_policy *pol, const trinity_graph *tg, trinity_pass *ps,
                             nn_tensor *dhenc, nn_tensor *dcenc, nn_tensor *dgf)
{
    int G = tg->groups, k = ps->k;
    for (int t = G - 1; t >= 0; t--) {
        nn_tensor x = nn_tensor_rows(&ps->gf, t * k, k);
        nn_tensor hp = t ? nn_tensor_rows(&ps->henc, (t - 1) * k, k) : ps->zeros;
        nn_tensor cp = t ? nn_tensor_rows(&ps->cenc, (t - 1) * k, k) : ps->zeros;
        nn_tensor dh = nn_tensor_rows(dhenc, t * k, k), dc = nn_tensor_rows(dcenc, t * k, k);
        nn_tensor dx = nn_tensor_rows(dgf, t * k, k);
        nn_tensor dhp, dcp;
        if (t) {
            dhp = nn_tensor_rows(dhenc, (t - 1) * k, k);
            dcp = nn_tensor_rows(dcenc, (t - 1) * k, k);
        }
        nn_lstm_backward(&pol->enc, &ps->enc_cache[t], &x, &hp, &cp, &dh, &dc, &dx,
                         t ? &dhp : NULL, t ? &dcp : NULL);
    }
}

/* ------------------------------------------------------------- decoder */

/* Output head for rows of o: u = o W + b, logits = C tanh(u/T), centred
 * (cfg.centre: all of each rollout's steps when cum is NULL, rows
 * rollout-major; else row r is rollout r's step t and cum its running sum),
 * plus the block prior of row i's group step[i] (placers/trinity/trinity.h),
 * masked log-softmax.  The prior is a constant: squash_backward works from
 * u, not the logits. */
static op_status head_forward(trinity_policy *pol, const trinity_graph *tg, const nn_tensor *o,
                              const int *step, double *cum, nn_tensor *u, nn_tensor *logits,
                              const unsigned char *mask, nn_tensor *logp, op_error *err)
{
    int D = pol->cfg.max_devices;
    nn_linear_forward(&pol->out, o, u);
    squash(&pol->cfg, u, logits);
    if (pol->cfg.centre && !cum)
        centre_steps(logits, tg->groups, D, 0);
    else if (pol->cfg.centre)
        for (int r = 0; r < logits->rows; r++)
            for (int d = 0; d < D; d++) {
                cum[(size_t)r * D + d] += NN_AT(logits, r, d);
                NN_AT(logits, r, d) -= cum[(size_t)r * D + d] / (step[r] + 1);
            }
    if (pol->cfg.sched_prior != 0)
        for (int i = 0; i < logits->rows; i++)
            NN_AT(logits, i, block_device(tg, step[i])) += pol->cfg.sched_prior;
    return nn_log_softmax_forward(logits, mask, logp, err);
}

/* Teacher-forced: the devices are batch->device. */
static op_status decoder_forward(trinity_policy *pol, nn_arena *ar, const trinity_graph *tg,
                                 const trinity_batch *b, trinity_pass *ps, op_error *err)
{
    const trinity_config *c = &pol->cfg;
    int G = tg->groups, k = ps->k, H = c->hidden, D = c->max_devices;
    ps->prev = nn_arena_alloc(ar, sizeof(int) * (size_t)G * (size_t)k, err);
    ps->dec_cache = nn_arena_alloc(ar, sizeof(nn_lstm_cache) * (size_t)G, err);
    ps->att_cache = nn_arena_alloc(ar, sizeof(nn_additive_attention_cache) * (size_t)k, err);
    if (!ps->prev || !ps->dec_cache || !ps->att_cache)
        return OP_ENOMEM;
    for (int t = 0; t < G; t++)
        for (int r = 0; r < k; r++)
            ps->prev[t * k + r] = t ? b->device[(size_t)r * G + t - 1] : D;
    TRY(tensor(ar, G * k, c->dev_dim, &ps->demb, err));
    TRY(nn_embedding_forward(&pol->dev_emb, ps->prev, G * k, &ps->demb, err));
    TRY(tensor(ar, G * k, c->dev_dim + H, &ps->xdec, err));
    const nn_tensor *parts[2] = {&ps->demb, &ps->henc};
    nn_concat_cols_forward(parts, 2, &ps->xdec);
    TRY(tensor(ar, G * k, H, &ps->hdec, err));
    TRY(tensor(ar, G * k, H, &ps->cdec, err));
    for (int t = 0; t < G; t++) {
        nn_tensor x = nn_tensor_rows(&ps->xdec, t * k, k);
        nn_tensor hp = t ? nn_tensor_rows(&ps->hdec, (t - 1) * k, k)
                         : nn_tensor_rows(&ps->henc, (G - 1) * k, k);
        nn_tensor cp = t ? nn_tensor_rows(&ps->cdec, (t - 1) * k, k)
                         : nn_tensor_rows(&ps->cenc, (G - 1) * k, k);
        nn_tensor h = nn_tensor_rows(&ps->hdec, t * k, k), cc = nn_tensor_rows(&ps->cdec, t * k, k);
        TRY(nn_lstm_forward(&pol->dec, ar, &x, &hp, &cp, &h, &cc, &ps->dec_cache[t], err));
    }
    TRY(tensor(ar, k * G, H, &ps->queries, err));
    for (int t = 0; t < G; t++)
        for (int r = 0; r < k; r++)
            memcpy(&NN_AT(&ps->queries, r * G + t, 0), &NN_AT(&ps->hdec, t * k + r, 0),
                   sizeof(double) * (size_t)H);
    TRY(tensor(ar, k * G, H, &ps->ctx, err));
    for (int r = 0; r < k; r++) {
        nn_tensor q = nn_tensor_rows(&ps->queries, r * G, G);
        nn_tensor kk = nn_tensor_rows(&ps->keys, r * G, G);
        nn_tensor cx = nn_tensor_rows(&ps->ctx, r * G, G);
        TRY(nn_additive_attention_forward(&pol->att, ar, &q, &kk, NULL, &cx, &ps->att_cache[r],
                                          err));
    }
    TRY(tensor(ar, k * G, 2 * H, &ps->o, err));
    const nn_tensor *oparts[2] = {&ps->queries, &ps->ctx};
    nn_concat_cols_forward(oparts, 2, &ps->o);
    TRY(tensor(ar, k * G, D, &ps->u, err));
    TRY(tensor(ar, k * G, D, &ps->logits, err));
    TRY(tensor(ar, k * G, D, &ps->logp_sched, err));
    int *step = nn_arena_alloc(ar, sizeof(int) * (size_t)k * (size_t)G, err);
    if (!step)
        return OP_ENOMEM;
    for (int i = 0; i < k * G; i++)
        step[i] = i % G;
    return head_forward(pol, tg, &ps->o, step, NULL, &ps->u, &ps->logits, b->gmask,
                        &ps->logp_sched, err);
}

static op_status decoder_backward(trinity_policy *pol, nn_arena *ar, const trinity_graph *tg,
                                  trinity_pass *ps, const nn_tensor *dlogp, nn_tensor *dhenc,
                                  nn_tensor *dcenc, op_error *err)
{
    const trinity_config *c = &pol->cfg;
    int G = tg->groups, k = ps->k, H = c->hidden, D = c->max_devices;
    nn_tensor dlogits, du, dq, dctx, dkeys, dhdec, dcdec, dxdec, ddemb;
    TRY(tensor(ar, k * G, D, &dlogits, err));
    TRY(tensor(ar, k * G, D, &du, err));
    TRY(tensor(ar, k * G, 2 * H, &dq, err)); /* reused: d o */
    nn_log_softmax_backward(&ps->logp_sched, dlogp, &dlogits);
    if (c->centre)
        centre_steps(&dlogits, G, D, 1);
    squash_backward(c, &ps->u, &dlogits, &du);
    nn_tensor dO = dq;
    nn_linear_backward(&pol->out, &ps->o, &du, &dO);
    TRY(tensor(ar, k * G, H, &dq, err));
    TRY(tensor(ar, k * G, H, &dctx, err));
    nn_tensor *dparts[2] = {&dq, &dctx};
    nn_concat_cols_backward(&dO, dparts, 2);
    TRY(tensor(ar, k * G, H, &dkeys, err));
    for (int r = 0; r < k; r++) {
        nn_tensor q = nn_tensor_rows(&ps->queries, r * G, G);
        nn_tensor kk = nn_tensor_rows(&ps->keys, r * G, G);
        nn_tensor dcx = nn_tensor_rows(&dctx, r * G, G);
        nn_tensor dqr = nn_tensor_rows(&dq, r * G, G), dkr = nn_tensor_rows(&dkeys, r * G, G);
        nn_additive_attention_backward(&pol->att, &ps->att_cache[r], &q, &kk, &dcx, &dqr, &dkr);
    }
    TRY(tensor(ar, G * k, H, &dhdec, err));
    TRY(tensor(ar, G * k, H, &dcdec, err));
    TRY(tensor(ar, G * k, c->dev_dim + H, &dxdec, err));
    for (int t = 0; t < G; t++)
        for (int r = 0; r < k; r++) {
            nn_tensor_axpy(&(nn_tensor){1, H, &NN_AT(&dhdec, t * k + r, 0)}, 1.0,
                           &(nn_tensor){1, H, &NN_AT(&dq, r * G + t, 0)});
            nn_tensor_axpy(&(nn_tensor){1, H, &NN_AT(dhenc, t * k + r, 0)}, 1.0,
                           &(nn_tensor){1, H, &NN_AT(&dkeys, r * G + t, 0)});
        }
    for (int t = G - 1; t >= 0; t--) {
        nn_tensor x = nn_tensor_rows(&ps->xdec, t * k, k);
        int first = t == 0;
        nn_tensor hp = first ? nn_tensor_rows(&ps->henc, (G - 1) * k, k)
                             : nn_tensor_rows(&ps->hdec, (t - 1) * k, k);
        nn_tensor cp = first ? nn_tensor_rows(&ps->cenc, (G - 1) * k, k)
                             : nn_tensor_rows(&ps->cdec, (t - 1) * k, k);
        nn_tensor dhp = first ? nn_tensor_rows(dhenc, (G - 1) * k, k)
                              : nn_tensor_rows(&dhdec, (t - 1) * k, k);
        nn_tensor dcp = first ? nn_tensor_rows(dcenc, (G - 1) * k, k)
                              : nn_tensor_rows(&dcdec, (t - 1) * k, k);
        nn_tensor dh = nn_tensor_rows(&dhdec, t * k, k), dc = nn_tensor_rows(&dcdec, t * k, k);
        nn_tensor dx = nn_tensor_rows(&dxdec, t * k, k);
        nn_lstm_backward(&pol->dec, &ps->dec_cache[t], &x, &hp, &cp, &dh, &dc, &dx, &dhp, &dcp);
    }
    TRY(tensor(ar, G * k, c->dev_dim, &ddemb, err));
    nn_tensor *xparts[2] = {&ddemb, dhenc};
    nn_concat_cols_backward(&dxdec, xparts, 2);
    nn_embedding_backward(&pol->dev_emb, ps->prev, G * k, &ddemb);
    return OP_OK;
}

/* Step by step, drawing each rollout's device for group t from the
 * distribution given its devices for groups < t. */
static op_status decoder_sample(trinity_policy *pol, nn_arena *ar, const trinity_graph *tg,
                                trinity_batch *b, trinity_pass *ps, const trinity_run *run,
                                double *work, op_error *err)
{
    const trinity_config *c = &pol->cfg;
    int G = tg->groups, k = ps->k, H = c->hidden, D = c->max_devices;
    int *prev = nn_arena_alloc(ar, sizeof(int) * (size_t)k, err);
    int *step = nn_arena_alloc(ar, sizeof(int) * (size_t)k, err);
    unsigned char *mask = nn_arena_alloc(ar, (size_t)k * (size_t)D, err);
    double *cum = nn_arena_alloc(ar, sizeof(double) * (size_t)k * (size_t)D, err);
    if (!prev || !step || !mask || !cum)
        return OP_ENOMEM;
    nn_tensor demb, x, h, cc, hp, cp, ctx, o, u, logits, logp;
    TRY(tensor(ar, k, c->dev_dim, &demb, err));
    TRY(tensor(ar, k, c->dev_dim + H, &x, err));
    TRY(tensor(ar, k, H, &h, err));
    TRY(tensor(ar, k, H, &cc, err));
    TRY(tensor(ar, k, H, &hp, err));
    TRY(tensor(ar, k, H, &cp, err));
    TRY(tensor(ar, k, H, &ctx, err));
    TRY(tensor(ar, k, 2 * H, &o, err));
    TRY(tensor(ar, k, D, &u, err));
    TRY(tensor(ar, k, D, &logits, err));
    TRY(tensor(ar, k, D, &logp, err));
    TRY(tensor(ar, k * G, D, &ps->logp_sched, err));
    nn_tensor last_h = nn_tensor_rows(&ps->henc, (G - 1) * k, k);
    nn_tensor last_c = nn_tensor_rows(&ps->cenc, (G - 1) * k, k);
    nn_tensor_copy(&hp, &last_h);
    nn_tensor_copy(&cp, &last_c);
    for (int r = 0; r < k; r++)
        prev[r] = D;
    memset(cum, 0, sizeof(double) * (size_t)k * (size_t)D);
    for (int t = 0; t < G; t++) {
        TRY(nn_embedding_forward(&pol->dev_emb, prev, k, &demb, err));
        nn_tensor enc_t = nn_tensor_rows(&ps->henc, t * k, k);
        const nn_tensor *parts[2] = {&demb, &enc_t};
        nn_concat_cols_forward(parts, 2, &x);
        nn_lstm_cache lc;
        TRY(nn_lstm_forward(&pol->dec, ar, &x, &hp, &cp, &h, &cc, &lc, err));
        for (int r = 0; r < k; r++) {
            nn_tensor q = nn_tensor_rows(&h, r, 1), cx = nn_tensor_rows(&ctx, r, 1);
            nn_tensor kk = nn_tensor_rows(&ps->keys, r * G, G);
            nn_additive_attention_cache ac;
            TRY(nn_additive_attention_forward(&pol->att, ar, &q, &kk, NULL, &cx, &ac, err));
            memcpy(mask + (size_t)r * D, b->gmask + ((size_t)r * G + t) * D, (size_t)D);
        }
        const nn_tensor *oparts[2] = {&h, &ctx};
        nn_concat_cols_forward(oparts, 2, &o);
        for (int r = 0; r < k; r++)
            step[r] = t;
        TRY(head_forward(pol, tg, &o, step, cum, &u, &logits, mask, &logp, err));
        for (int r = 0; r < k; r++) {
            const double *row = &NN_AT(&logp, r, 0);
            int greedy = run->greedy_last && r == k - 1;
            int d = sample_row(row, D, run->noise, run->explore_sched, greedy, run->rng, work);
            b->device[(size_t)r * G + t] = d;
            b->old_sched[(size_t)r * G + t] = row[d];
            memcpy(&NN_AT(&ps->logp_sched, r * G + t, 0), row, sizeof(double) * (size_t)D);
            prev[r] = d;
        }
        nn_tensor_copy(&hp, &h);
        nn_tensor_copy(&cp, &cc);
    }
    return OP_OK;
}

/* -------------------------------------------------------- whole policy */

/* run's deadline has passed: the pass stops (trinity_run). */
static op_status out_of_time(const trinity_run *run, op_error *err)
{
    if (run->deadline > 0 && op_seconds_now() > run->deadline)
        return op_fail(err, OP_EINTERNAL, "trinity: a sampling pass out of time");
    return OP_OK;
}

op_status trinity_policy_forward(trinity_policy *pol, nn_arena *ar, const trinity_graph *tg,
                                 trinity_batch *b, int k, const trinity_run *run,
                                 nn_tensor *logp_part, nn_tensor *logp_sched,
                                 trinity_pass **out, op_error *err)
{
    const trinity_config *c = &pol->cfg;
    if (tg->groups != c->groups || tg->max_devices != c->max_devices ||
        tg->n_num != TRINITY_N_SCALAR + c->n2v_dim)
        return op_fail(err, OP_EINTERNAL, "trinity: graph prepared for another architecture");
    if (k < 1 || k > b->cap)
        return op_fail(err, OP_EINTERNAL, "trinity: %d rollouts for a batch of %d", k, b->cap);
    trinity_pass *ps = nn_arena_alloc(ar, sizeof *ps, err);
    double *work = nn_arena_alloc(ar, sizeof(double) * (size_t)(c->groups + c->max_devices), err);
    if (!ps || !work)
        return OP_ENOMEM;
    ps->k = k;
    ps->training = run->training;
    ps->sampled = run->sample;
    b->k = k;
    TRY(out_of_time(run, err));
    TRY(partition_forward(pol, ar, tg, run, ps, err));
    TRY(out_of_time(run, err));
    if (run->sample)
        sample_partition(tg, &ps->logp_part, b, k, run, work);
    TRY(out_of_time(run, err));
    ps->count = nn_arena_alloc(ar, sizeof(double) * (size_t)k * (size_t)c->groups, err);
    if (!ps->count)
        return OP_ENOMEM;
    TRY(tensor(ar, c->groups * k, trinity_group_feature_dim(c), &ps->gf, err));
    trinity_group_features(tg, b, k, &ps->temb, &ps->gf, ps->count);
    if (run->sample)
        trinity_group_masks(tg, b, k, ps->count);
    TRY(encoder_forward(pol, ar, tg, ps, err));
    TRY(out_of_time(run, err));
    if (run->sample)
        TRY(decoder_sample(pol, ar, tg, b, ps, run, work, err));
    else
        TRY(decoder_forward(pol, ar, tg, b, ps, err));
    if (logp_part)
        *logp_part = ps->logp_part;
    if (logp_sched)
        *logp_sched = ps->logp_sched;
    if (out)
        *out = ps;
    return OP_OK;
}

op_status trinity_policy_partition_forward(trinity_policy *pol, nn_arena *ar,
                                           const trinity_graph *tg, const trinity_run *run,
                                           nn_tensor *logp_part, trinity_pass **out,
                                           op_error *err)
{
    const trinity_config *c = &pol->cfg;
    if (tg->groups != c->groups || tg->n_num != TRINITY_N_SCALAR + c->n2v_dim)
        return op_fail(err, OP_EINTERNAL, "trinity: graph prepared for another architecture");
    trinity_pass *ps = nn_arena_alloc(ar, sizeof *ps, err);
    if (!ps)
        return OP_ENOMEM;
    ps->k = 1;
    ps->training = run->training;
    TRY(partition_forward(pol, ar, tg, run, ps, err));
    *logp_part = ps->logp_part;
    *out = ps;
    return OP_OK;
}

op_status trinity_policy_backward(trinity_policy *pol, nn_arena *ar, const trinity_graph *tg,
                                  const trinity_batch *b, trinity_pass *ps,
                                  const nn_tensor *dlogp_part, const nn_tensor *dlogp_sched,
                                  op_error *err)
{
    const trinity_config *c = &pol->cfg;
    if (ps->sampled)
        return op_fail(err, OP_EINTERNAL, "trinity: a sampling pass has no backward; run "
                                          "forward again with the actions");
    int n = tg->n, G = c->groups, k = ps->k, H = c->hidden;
    nn_tensor dtemb;
    TRY(tensor(ar, n, c->type_dim, &dtemb, err));
    if (dlogp_sched) {
        nn_tensor dhenc, dcenc, dgf;
        TRY(tensor(ar, G * k, H, &dhenc, err));
        TRY(tensor(ar, G * k, H, &dcenc, err));
        TRY(tensor(ar, G * k, trinity_group_feature_dim(c), &dgf, err));
        TRY(decoder_backward(pol, ar, tg, ps, dlogp_sched, &dhenc, &dcenc, err));
        encoder_backward(pol, tg, ps, &dhenc, &dcenc, &dgf);
        trinity_group_features_backward(tg, b, k, ps->count, &dgf, &dtemb);
    }
    if (dlogp_part) {
        op_error e2 = {0};
        partition_backward(pol, ar, tg, ps, dlogp_part, &dtemb, &e2);
        if (e2.code) {
            if (err)
                *err = e2;
            return e2.code;
        }
    }
    nn_embedding_backward(&pol->type_emb, tg->type_id, n, &dtemb);
    return OP_OK;
}
