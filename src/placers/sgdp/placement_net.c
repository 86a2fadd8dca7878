/*
 * placement_net.c - SGDP's placement network (the SGDP paper, "Placement
 * Network", "Our Method"): a Transformer-XL (Dai et al., 2019) over the
 * GraphSAGE embeddings, in topological order, with segment-level recurrence
 * and no positional encoding.
 *
 * The n rows are cut into segments of `segment` rows.  Each of the layers
 * is a pre-norm block
 *     u = LN1(x);  y = x + MHA(u, mem);  x' = y + W2 relu(W1 LN2(y))
 * where mem is u of the previous segment at the same layer: queries come
 * from the segment, keys and values from [mem; segment], so an op sees the
 * ops just before its segment too, and attention costs O(n * segment)
 * instead of O(n^2).  Attention is bidirectional inside a segment (the
 * placement is one shot, eq. 4, so no op waits for another's decision).
 * As in Transformer-XL the memory is a constant: no gradient flows into the
 * previous segment, so segments are backpropagated independently.
 * Differences from the paper: pre-norm instead of post-norm (steadier with
 * tiny budgets); no relative positional encoding (the paper removes
 * positions on purpose; topological position is an input feature).
 */
#include "sgdp_internal.h"

#include <stdio.h>

op_status sgdp_xl_init(sgdp_xl *x, nn_params *ps, const char *prefix, int dim, int layers,
                       int heads, int ffn, int segment, nn_rng *rng, op_error *err)
{
    x->dim = dim;
    x->layers = layers;
    x->segment = segment;
    char name[64];
    for (int j = 0; j < layers; j++) {
        sgdp_xl_layer *L = &x->l[j];
        op_status st;
#define NAME(s) (snprintf(name, sizeof name, "%s%d.%s", prefix, j, s), name)
        if ((st = nn_layernorm_init(&L->ln1, ps, NAME("ln1"), dim, err)) ||
            (st = nn_layernorm_init(&L->ln2, ps, NAME("ln2"), dim, err)) ||
            (st = nn_mha_init(&L->att, ps, NAME("att"), dim, heads, rng, err)) ||
            (st = nn_linear_init(&L->ff1, ps, NAME("ff1"), dim, ffn, true, rng, err)) ||
            (st = nn_linear_init(&L->ff2, ps, NAME("ff2"), ffn, dim, true, rng, err)))
            return st;
#undef NAME
    }
    return OP_OK;
}

static op_status step_forward(const sgdp_xl_layer *L, nn_arena *ar, const nn_tensor *mem,
                              sgdp_xl_step *s, op_error *err)
{
    int n = s->x.rows, d = s->x.cols, f = L->ff1.out;
    nn_tensor a;
    op_status st;
    if ((st = nn_arena_tensor(ar, n, d, &s->u, err)) ||
        (st = nn_arena_tensor(ar, n, d, &a, err)) ||
        (st = nn_arena_tensor(ar, n, d, &s->y, err)) ||
        (st = nn_arena_tensor(ar, n, d, &s->v, err)) ||
        (st = nn_arena_tensor(ar, n, f, &s->f1, err)) ||
        (st = nn_arena_tensor(ar, n, d, &s->f2, err)) ||
        (st = nn_arena_tensor(ar, n, d, &s->xn, err)))
        return st;
    if ((st = nn_layernorm_forward(&L->ln1, ar, &s->x, &s->u, &s->c1, err)) ||
        (st = nn_mha_forward(&L->att, ar, &s->u, mem, false, &a, &s->mc, err)))
        return st;
    nn_tensor_copy(&s->y, &s->x);
    nn_tensor_axpy(&s->y, 1.0, &a);
    if ((st = nn_layernorm_forward(&L->ln2, ar, &s->y, &s->v, &s->c2, err)))
        return st;
    nn_linear_forward(&L->ff1, &s->v, &s->f1);
    nn_act_forward(NN_ACT_RELU, &s->f1, &s->f1);
    nn_linear_forward(&L->ff2, &s->f1, &s->f2);
    nn_tensor_copy(&s->xn, &s->y);
    nn_tensor_axpy(&s->xn, 1.0, &s->f2);
    return OP_OK;
}

op_status sgdp_xl_forward(const sgdp_xl *x, nn_arena *ar, const nn_tensor *in,
                          sgdp_xl_pass *pass, op_error *err)
{
    int n = in->rows, seg = x->segment;
    pass->n_seg = (n + seg - 1) / seg;
    size_t n_steps = (size_t)pass->n_seg * (size_t)(x->layers > 0 ? x->layers : 1);
    pass->steps = nn_arena_alloc(ar, n_steps * sizeof *pass->steps, err);
    if (!pass->steps)
        return OP_ENOMEM;
    op_status st = nn_arena_tensor(ar, n, x->dim, &pass->out, err);
    if (st)
        return st;
    for (int s = 0; s < pass->n_seg; s++) {
        int r0 = s * seg, len = n - r0 < seg ? n - r0 : seg;
        nn_tensor cur = nn_tensor_rows(in, r0, len);
        if ((st = sgdp_check_stop(err)))
            return st;
        for (int j = 0; j < x->layers; j++) {
            sgdp_xl_step *step = &pass->steps[(size_t)s * x->layers + j];
            const nn_tensor *mem = s > 0 ? &pass->steps[(size_t)(s - 1) * x->layers + j].u : NULL;
            step->x = cur;
            if ((st = step_forward(&x->l[j], ar, mem, step, err)))
                return st;
            cur = step->xn;
        }
        nn_tensor out = nn_tensor_rows(&pass->out, r0, len);
        nn_tensor_copy(&out, &cur);
    }
    return OP_OK;
}

/* dx += d loss/d x of one block, given dxn = d loss/d x'. */
static op_status step_backward(const sgdp_xl_layer *L, nn_arena *ar, const sgdp_xl_step *s,
                               const nn_tensor *dxn, nn_tensor *dx, op_error *err)
{
    int n = s->x.rows, d = s->x.cols, f = L->ff1.out;
    nn_tensor dy, df1, dpre, dv, du;
    op_status st;
    if ((st = nn_arena_tensor(ar, n, d, &dy, err)) ||
        (st = nn_arena_tensor(ar, n, f, &df1, err)) ||
        (st = nn_arena_tensor(ar, n, f, &dpre, err)) ||
        (st = nn_arena_tensor(ar, n, d, &dv, err)) ||
        (st = nn_arena_tensor(ar, n, d, &du, err)))
        return st;
    nn_tensor_copy(&dy, dxn);                        /* residual y -> x' */
    nn_linear_backward(&L->ff2, &s->f1, dxn, &df1);
    nn_act_backward(NN_ACT_RELU, &s->f1, &df1, &dpre);
    nn_linear_backward(&L->ff1, &s->v, &dpre, &dv);
    nn_layernorm_backward(&L->ln2, &s->c2, &s->y, &dv, &dy);
    nn_tensor_axpy(dx, 1.0, &dy);                    /* residual x -> y */
    nn_mha_backward(&L->att, &s->mc, &s->u, &dy, &du);
    nn_layernorm_backward(&L->ln1, &s->c1, &s->x, &du, dx);
    return OP_OK;
}

op_status sgdp_xl_backward(const sgdp_xl *x, nn_arena *ar, const sgdp_xl_pass *pass,
                           const nn_tensor *dout, nn_tensor *din, op_error *err)
{
    int n = dout->rows, seg = x->segment;
    for (int s = 0; s < pass->n_seg; s++) {
        int r0 = s * seg, len = n - r0 < seg ? n - r0 : seg;
        nn_tensor dcur = nn_tensor_rows(dout, r0, len);
        op_status stop = sgdp_check_stop(err);
        if (stop)
            return stop;
        for (int j = x->layers - 1; j >= 0; j--) {
            const sgdp_xl_step *step = &pass->steps[(size_t)s * x->layers + j];
            nn_tensor dx;
            op_status st;
            if ((st = nn_arena_tensor(ar, len, x->dim, &dx, err)) ||
                (st = step_backward(&x->l[j], ar, step, &dcur, &dx, err)))
                return st;
            dcur = dx;
        }
        nn_tensor drows = nn_tensor_rows(din, r0, len);
        nn_tensor_axpy(&drows, 1.0, &dcur);
    }
    return OP_OK;
}
