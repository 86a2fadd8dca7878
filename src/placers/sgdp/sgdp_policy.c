/*
 * sgdp_policy.c - SGDP's end-to-end placement policy (the SGDP paper,
 * Figure 1, eq. 4): op features -> input layer -> GraphSAGE (graphsage.c)
 * -> segment-recurrent attention (placement_net.c) -> layer norm -> a
 * dense head with max_devices logits per op -> masked log-softmax.  Ops are
 * placed independently given the network's output (eq. 4), so one forward
 * pass yields the distribution of every op, and any number of placements
 * can be sampled from it.
 *
 * The mask (placers/sgdp/sgdp.h) removes devices the op may not use and the
 * head's slots beyond the cluster's device count.  Its "mask attention"
 * over nodes ("Our Method", last paragraph) is not implemented: every op is
 * placed.  Around a reference the head's weights start 10x smaller than
 * Glorot so the first policy is close to uniform and explores; without one
 * the logits are centred over the ops and the head starts at Glorot
 * (placers/sgdp/sgdp.h explains why).
 *
 * BEYOND THE PAPER: a reference skip.  When the graph carries a reference
 * placement (sgdp_warm.c; sg->ref_dev), the logit of each row's reference
 * device gets a bonus g = REF_GAIN_SCALE * theta, theta one learnt scalar
 * ("sgdp.ref_gain"), before the masked log-softmax.  "Copy the input
 * placement" is then one weight that means the same on every graph, so it
 * transfers to unseen families; the network only has to learn where to
 * deviate from its input.  (Without it the network had to route the
 * reference's one-hot through the input layer, GraphSAGE and attention,
 * and batch training learnt the training families' placements instead of
 * copying: bench/RESULTS.md.)  theta is scaled so that Adam's per-step
 * movement of ~lr moves g usefully fast; g starts at REF_GAIN_INIT
 * (probability ~0.95 on the reference device with two devices).  Without a
 * reference (--heuristics none, the paper's policy) the skip adds nothing.
 *
 * Weights files: nn_params files (nn.h) whose parameter "sgdp.arch" holds
 * the architecture, so a file can rebuild its own policy
 * (sgdp_policy_from_file) and a mismatch is reported by name.
 */
#include "sgdp_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARCH_LEN 10
#define ARCH_VERSION 4 /* 2: reference features (sgdp_warm.c); 3: reference skip;
                          4: unit-free size features, cut share and device load */
#define REF_GAIN_SCALE 4.0
#define REF_GAIN_INIT 5.0

struct sgdp_policy {
    sgdp_config cfg;
    nn_params ps;
    nn_param *arch;
    nn_param *ref_gain; /* theta: the reference skip's gain / REF_GAIN_SCALE */
    nn_linear in;
    sgdp_sage sage;
    sgdp_xl xl;
    nn_layernorm ln_out;
    nn_linear head;
};

struct sgdp_pass {
    nn_tensor x, h0, o, logits, logp;
    int plain;      /* no reference: o standardised over the deciding ops, logits centred */
    nn_tensor on;   /* plain: o with each column standardised over the deciding rows */
    double *inv_sd; /* plain: per column, 1 / its standard deviation over the rows */
    sgdp_sage_pass sage;
    sgdp_xl_pass xl;
    nn_layernorm_cache lc;
};

sgdp_config sgdp_config_default(void)
{
    return (sgdp_config){.max_devices = 8, .hidden = 32, .gs_layers = 2, .gs_knn = 8,
                         .trf_layers = 2, .heads = 4, .ffn = 64, .segment = 64,
                         .head_init = 0.1};
}

op_status sgdp_config_check(const sgdp_config *c, op_error *err)
{
    if (c->max_devices < 1 || c->max_devices > 1024)
        return op_fail(err, OP_EUSAGE, "sgdp: max devices %d outside [1, 1024]", c->max_devices);
    if (c->hidden < 1 || c->hidden > 4096 || c->ffn < 1 || c->ffn > 16384)
        return op_fail(err, OP_EUSAGE, "sgdp: hidden %d / ffn %d out of range", c->hidden,
                       c->ffn);
    if (c->gs_layers < 0 || c->gs_layers > SGDP_MAX_LAYERS || c->trf_layers < 0 ||
        c->trf_layers > SGDP_MAX_LAYERS)
        return op_fail(err, OP_EUSAGE, "sgdp: layer counts must lie in [0, %d]",
                       SGDP_MAX_LAYERS);
    if (c->heads < 1 || c->hidden % c->heads)
        return op_fail(err, OP_EUSAGE, "sgdp: hidden %d is not a multiple of %d heads",
                       c->hidden, c->heads);
    if (c->gs_knn < 1 || c->segment < 1)
        return op_fail(err, OP_EUSAGE, "sgdp: knn and segment must be positive");
    return OP_OK;
}

static void arch_values(const sgdp_config *c, double *v)
{
    double a[ARCH_LEN] = {ARCH_VERSION, SGDP_N_FEATURES, c->max_devices, c->hidden,
                          c->gs_layers,  c->gs_knn,       c->trf_layers,  c->heads,
                          c->ffn,        c->segment};
    memcpy(v, a, sizeof a);
}

static op_status config_from_arch(const double *v, sgdp_config *c, const char *path,
                                  op_error *err)
{
    if (v[0] != ARCH_VERSION || v[1] != SGDP_N_FEATURES)
        return op_fail(err, OP_EINPUT,
                       "%s: SGDP weights of architecture version %g with %g features; this "
                       "build reads version %d with %d features (retrain)",
                       path, v[0], v[1], ARCH_VERSION, SGDP_N_FEATURES);
    *c = (sgdp_config){.max_devices = (int)v[2], .hidden = (int)v[3], .gs_layers = (int)v[4],
                       .gs_knn = (int)v[5], .trf_layers = (int)v[6], .heads = (int)v[7],
                       .ffn = (int)v[8], .segment = (int)v[9], .head_init = 0.1};
    return sgdp_config_check(c, err);
}

static void describe(const sgdp_config *c, char *buf, size_t cap)
{
    snprintf(buf, cap, "max-devices %d, hidden %d, %d GraphSAGE layers (knn %d), %d attention "
                       "layers x %d heads, ffn %d, segment %d",
             c->max_devices, c->hidden, c->gs_layers, c->gs_knn, c->trf_layers, c->heads,
             c->ffn, c->segment);
}

static op_status build(sgdp_policy *pol, uint64_t seed, op_error *err)
{
    const sgdp_config *c = &pol->cfg;
    nn_rng rng;
    nn_rng_seed(&rng, seed);
    op_status st;
    if ((st = nn_params_add(&pol->ps, "sgdp.arch", 1, ARCH_LEN, &pol->arch, err)))
        return st;
    arch_values(c, pol->arch->value.data);
    if ((st = nn_linear_init(&pol->in, &pol->ps, "sgdp.in", SGDP_N_FEATURES, c->hidden, true,
                             &rng, err)) ||
        (st = sgdp_sage_init(&pol->sage, &pol->ps, "sgdp.sage", c->hidden, c->gs_layers, &rng,
                             err)) ||
        (st = sgdp_xl_init(&pol->xl, &pol->ps, "sgdp.xl", c->hidden, c->trf_layers, c->heads,
                           c->ffn, c->segment, &rng, err)) ||
        (st = nn_layernorm_init(&pol->ln_out, &pol->ps, "sgdp.ln_out", c->hidden, err)) ||
        (st = nn_linear_init(&pol->head, &pol->ps, "sgdp.head", c->hidden, c->max_devices,
                             true, &rng, err)))
        return st;
    nn_tensor_scale(&pol->head.w->value, c->head_init);
    if ((st = nn_params_add(&pol->ps, "sgdp.ref_gain", 1, 1, &pol->ref_gain, err)))
        return st;
    pol->ref_gain->value.data[0] = REF_GAIN_INIT / REF_GAIN_SCALE;
    return OP_OK;
}

sgdp_policy *sgdp_policy_new(const sgdp_config *cfg, uint64_t seed, op_error *err)
{
    if (sgdp_config_check(cfg, err))
        return NULL;
    sgdp_policy *pol = op_calloc(1, sizeof *pol, err);
    if (!pol)
        return NULL;
    pol->cfg = *cfg;
    nn_params_init(&pol->ps);
    if (build(pol, seed, err)) {
        sgdp_policy_free(pol);
        return NULL;
    }
    return pol;
}

void sgdp_policy_free(sgdp_policy *pol)
{
    if (!pol)
        return;
    nn_params_destroy(&pol->ps);
    free(pol);
}

const sgdp_config *sgdp_policy_config(const sgdp_policy *pol)
{
    return &pol->cfg;
}

nn_params *sgdp_policy_params(sgdp_policy *pol)
{
    return &pol->ps;
}

op_status sgdp_policy_save(const sgdp_policy *pol, const char *path, op_error *err)
{
    arch_values(&pol->cfg, pol->arch->value.data); /* never trained, but be sure */
    return nn_params_save(&pol->ps, path, err);
}

op_status sgdp_policy_load(sgdp_policy *pol, const char *path, op_error *err)
{
    sgdp_config file_cfg;
    op_status st = sgdp_weights_config(path, &file_cfg, err);
    if (st)
        return st;
    if (memcmp(&file_cfg, &pol->cfg, sizeof file_cfg) != 0) {
        char a[256], b[256];
        describe(&file_cfg, a, sizeof a);
        describe(&pol->cfg, b, sizeof b);
        return op_fail(err, OP_EINPUT,
                       "%s: the weights are for an SGDP policy with %s; this policy has %s", path,
                       a, b);
    }
    return nn_params_load(&pol->ps, path, err);
}

sgdp_policy *sgdp_policy_from_file(const char *path, op_error *err)
{
    sgdp_config cfg;
    if (sgdp_weights_config(path, &cfg, err))
        return NULL;
    sgdp_policy *pol = sgdp_policy_new(&cfg, 0, err);
    if (pol && sgdp_policy_load(pol, path, err)) {
        sgdp_policy_free(pol);
        return NULL;
    }
    return pol;
}

/* ---------------------------------------------- reading the arch entry */

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

/* Walks the nn_params file layout (nn/nn.h) to the "sgdp.arch"
 * entry; the full checks (checksum, shapes) happen in nn_params_load. */
op_status sgdp_weights_config(const char *path, sgdp_config *cfg, op_error *err)
{
    op_status chk = nn_params_check_file(path, NULL, err); /* before any allocation */
    if (chk)
        return chk;
    FILE *f = fopen(path, "rb");
    if (!f)
        return op_fail(err, OP_EIO, "%s: cannot open SGDP weights file", path);
    char magic[4];
    uint32_t version, count;
    op_status st = OP_OK;
    if (fread(magic, 1, 4, f) != 4 || memcmp(magic, "OPNN", 4) || !read_u32(f, &version) ||
        !read_u32(f, &count)) {
        st = op_fail(err, OP_EINPUT, "%s: not an opplace weights file", path);
        goto done;
    }
    for (uint32_t i = 0; i < count; i++) {
        uint32_t len, rows, cols;
        char name[NN_NAME_MAX];
        if (!read_u32(f, &len) || len >= sizeof name || fread(name, 1, len, f) != len ||
            !read_u32(f, &rows) || !read_u32(f, &cols))
            break;
        name[len] = '\0';
        if (strcmp(name, "sgdp.arch") == 0 && rows == 1 && cols == ARCH_LEN) {
            double v[ARCH_LEN];
            for (int k = 0; k < ARCH_LEN; k++)
                if (!read_f64(f, &v[k])) {
                    st = op_fail(err, OP_EINPUT, "%s: truncated weights file", path);
                    goto done;
                }
            st = config_from_arch(v, cfg, path, err);
            goto done;
        }
        if (fseek(f, (long)((uint64_t)rows * cols * 8), SEEK_CUR))
            break;
    }
    st = op_fail(err, OP_EINPUT, "%s: not an SGDP weights file (no sgdp.arch entry)", path);
done:
    fclose(f);
    return st;
}

/* -------------------------------------------------- forward / backward */

static int has_reference(const sgdp_graph *sg)
{
    for (int t = 0; t < sg->n; t++)
        if (sg->ref_dev[t] >= 0)
            return 1;
    return 0;
}

op_status sgdp_policy_forward(sgdp_policy *pol, nn_arena *ar, const sgdp_graph *sg,
                              nn_tensor *logp, sgdp_pass **out_pass, op_error *err)
{
    const sgdp_config *c = &pol->cfg;
    if (sg->max_devices != c->max_devices)
        return op_fail(err, OP_EINTERNAL, "sgdp: graph prepared for %d devices, policy has %d",
                       sg->max_devices, c->max_devices);
    int n = sg->n;
    sgdp_pass *pass = nn_arena_alloc(ar, sizeof *pass, err);
    if (!pass)
        return OP_ENOMEM;
    pass->x = nn_tensor_view(sg->feat, n, SGDP_N_FEATURES);
    op_status st;
    if ((st = nn_arena_tensor(ar, n, c->hidden, &pass->h0, err)) ||
        (st = nn_arena_tensor(ar, n, c->hidden, &pass->o, err)) ||
        (st = nn_arena_tensor(ar, n, c->max_devices, &pass->logits, err)) ||
        (st = nn_arena_tensor(ar, n, c->max_devices, &pass->logp, err)))
        return st;
    nn_linear_forward(&pol->in, &pass->x, &pass->h0);
    nn_act_forward(NN_ACT_RELU, &pass->h0, &pass->h0);
    if ((st = sgdp_sage_forward(&pol->sage, ar, sg, &pass->h0, &pass->sage, err)) ||
        (st = sgdp_xl_forward(&pol->xl, ar, &pass->sage.h[c->gs_layers], &pass->xl, err)) ||
        (st = nn_layernorm_forward(&pol->ln_out, ar, &pass->xl.out, &pass->o, &pass->lc, err)))
        return st;
    pass->plain = !has_reference(sg);
    if (pass->plain) {
        if ((st = nn_arena_tensor_uninit(ar, n, c->hidden, &pass->on, err)))
            return st;
        if (!(pass->inv_sd = nn_arena_alloc(ar, (size_t)c->hidden * sizeof(double), err)))
            return OP_ENOMEM;
        nn_standardize_columns(&pass->o, sg->decides, &pass->on, pass->inv_sd);
        nn_linear_forward(&pol->head, &pass->on, &pass->logits);
        nn_center_columns(&pass->logits, sg->decides); /* placers/sgdp/sgdp.h: why centred */
    } else {
        nn_linear_forward(&pol->head, &pass->o, &pass->logits);
    }
    double gain = REF_GAIN_SCALE * pol->ref_gain->value.data[0];
    for (int t = 0; t < n; t++)
        if (sg->ref_dev[t] >= 0)
            NN_AT(&pass->logits, t, sg->ref_dev[t]) += gain;
    if ((st = nn_log_softmax_forward(&pass->logits, sg->mask, &pass->logp, err)))
        return st;
    *logp = pass->logp;
    if (out_pass)
        *out_pass = pass;
    return OP_OK;
}

op_status sgdp_policy_backward(sgdp_policy *pol, nn_arena *ar, const sgdp_graph *sg,
                               sgdp_pass *pass, const nn_tensor *dlogp, op_error *err)
{
    const sgdp_config *c = &pol->cfg;
    int n = sg->n;
    nn_tensor dlogits, d_o, dxl, demb, dh0, dpre;
    op_status st;
    if ((st = nn_arena_tensor(ar, n, c->max_devices, &dlogits, err)) ||
        (st = nn_arena_tensor(ar, n, c->hidden, &d_o, err)) ||
        (st = nn_arena_tensor(ar, n, c->hidden, &dxl, err)) ||
        (st = nn_arena_tensor(ar, n, c->hidden, &demb, err)) ||
        (st = nn_arena_tensor(ar, n, c->hidden, &dh0, err)) ||
        (st = nn_arena_tensor(ar, n, c->hidden, &dpre, err)))
        return st;
    nn_log_softmax_backward(&pass->logp, dlogp, &dlogits);
    if (pass->plain)
        nn_center_columns_backward(&dlogits, sg->decides);
    double dgain = 0.0;
    for (int t = 0; t < n; t++)
        if (sg->ref_dev[t] >= 0)
            dgain += NN_AT(&dlogits, t, sg->ref_dev[t]);
    pol->ref_gain->grad.data[0] += REF_GAIN_SCALE * dgain;
    if (pass->plain) {
        nn_tensor d_on;
        if ((st = nn_arena_tensor(ar, n, c->hidden, &d_on, err)))
            return st;
        nn_linear_backward(&pol->head, &pass->on, &dlogits, &d_on);
        nn_standardize_columns_backward(&pass->on, sg->decides, pass->inv_sd, &d_on, &d_o);
    } else {
        nn_linear_backward(&pol->head, &pass->o, &dlogits, &d_o);
    }
    nn_layernorm_backward(&pol->ln_out, &pass->lc, &pass->xl.out, &d_o, &dxl);
    if ((st = sgdp_xl_backward(&pol->xl, ar, &pass->xl, &dxl, &demb, err)) ||
        (st = sgdp_sage_backward(&pol->sage, ar, &pass->sage, &demb, &dh0, err)))
        return st;
    nn_act_backward(NN_ACT_RELU, &pass->h0, &dh0, &dpre);
    nn_linear_backward(&pol->in, &pass->x, &dpre, NULL);
    return OP_OK;
}

/* ------------------------------------------------------------ sampling */

void sgdp_sample(const sgdp_graph *sg, const nn_tensor *logp, nn_rng *rng, int greedy,
                 int *row_dev, int *device_of)
{
    const int *topo = sg->p->g->topo;
    int D = sg->max_devices;
    double probs[1024];
    for (int t = 0; t < sg->n; t++) {
        int d;
        if (sg->leader[t] >= 0) {
            d = row_dev[sg->leader[t]]; /* the leader's row comes first */
        } else {
            const double *lp = &NN_AT(logp, t, 0);
            for (int k = 0; k < D; k++)
                probs[k] = sg->mask[(size_t)t * D + k] ? exp(lp[k]) : 0.0;
            if (greedy) {
                d = 0;
                for (int k = 1; k < D; k++)
                    if (probs[k] > probs[d])
                        d = k;
            } else {
                d = nn_sample_categorical(probs, D, rng);
            }
        }
        row_dev[t] = d;
        device_of[topo[t]] = d;
    }
}
