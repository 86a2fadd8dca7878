/*
 * graphsage.c - SGDP's graph embedding network (the SGDP paper, "Graph
 * Embedding Network", eqs. 2-3; GraphSAGE, Hamilton et al. 2017).
 *
 * Layer l turns embeddings h (one row per op, rows in topological order)
 * into h':
 *   a  = sigmoid(h W_l + b_l)                     the affine map of eq. 2
 *   m_v = max_{u in N(v)} a_u  (elementwise)      eq. 2's max aggregator
 *   h'_v = relu([h_v | m_v] F_l + c_l)            eq. 3, f^(l+1) a dense layer
 * N(v) is the op's neighbourhood from features.c (predecessors and
 * successors, the knn heaviest).  As in SGDP and unlike GraphSAGE, the
 * weights are trained end to end by the placement objective (PPO), not by
 * GraphSAGE's unsupervised loss; there is no per-layer L2 normalisation
 * (the placement network's layer norms do that job).
 */
#include "sgdp_internal.h"

#include <stdio.h>

op_status sgdp_sage_init(sgdp_sage *s, nn_params *ps, const char *prefix, int dim, int layers,
                         nn_rng *rng, op_error *err)
{
    s->dim = dim;
    s->layers = layers;
    char name[64];
    for (int l = 0; l < layers; l++) {
        op_status st;
        snprintf(name, sizeof name, "%s.agg%d", prefix, l);
        if ((st = nn_linear_init(&s->agg[l], ps, name, dim, dim, true, rng, err)))
            return st;
        snprintf(name, sizeof name, "%s.fuse%d", prefix, l);
        if ((st = nn_linear_init(&s->fuse[l], ps, name, 2 * dim, dim, true, rng, err)))
            return st;
    }
    return OP_OK;
}

op_status sgdp_sage_forward(const sgdp_sage *s, nn_arena *ar, const sgdp_graph *sg,
                            const nn_tensor *h0, sgdp_sage_pass *pass, op_error *err)
{
    int n = h0->rows, d = s->dim;
    pass->h[0] = *h0;
    for (int l = 0; l < s->layers; l++) {
        op_status st;
        if ((st = sgdp_check_stop(err)) ||
            (st = nn_arena_tensor(ar, n, d, &pass->a[l], err)) ||
            (st = nn_arena_tensor(ar, n, d, &pass->m[l], err)) ||
            (st = nn_arena_tensor(ar, n, 2 * d, &pass->c[l], err)) ||
            (st = nn_arena_tensor(ar, n, d, &pass->h[l + 1], err)))
            return st;
        nn_linear_forward(&s->agg[l], &pass->h[l], &pass->a[l]);
        nn_act_forward(NN_ACT_SIGMOID, &pass->a[l], &pass->a[l]);
        if ((st = nn_maxpool_forward(ar, &pass->a[l], sg->nbr_off, sg->nbr, &pass->m[l],
                                     &pass->mp[l], err)))
            return st;
        const nn_tensor *parts[2] = {&pass->h[l], &pass->m[l]};
        nn_concat_cols_forward(parts, 2, &pass->c[l]);
        nn_linear_forward(&s->fuse[l], &pass->c[l], &pass->h[l + 1]);
        nn_act_forward(NN_ACT_RELU, &pass->h[l + 1], &pass->h[l + 1]);
    }
    return OP_OK;
}

op_status sgdp_sage_backward(const sgdp_sage *s, nn_arena *ar, const sgdp_sage_pass *pass,
                             const nn_tensor *demb, nn_tensor *dh0, op_error *err)
{
    int n = demb->rows, d = s->dim;
    nn_tensor dh_next = *demb;
    for (int l = s->layers - 1; l >= 0; l--) {
        nn_tensor dz, dc, dh, dm, da, dpre;
        op_status st;
        if ((st = sgdp_check_stop(err)) ||
            (st = nn_arena_tensor(ar, n, d, &dz, err)) ||
            (st = nn_arena_tensor(ar, n, 2 * d, &dc, err)) ||
            (st = nn_arena_tensor(ar, n, d, &dm, err)) ||
            (st = nn_arena_tensor(ar, n, d, &da, err)) ||
            (st = nn_arena_tensor(ar, n, d, &dpre, err)))
            return st;
        if (l > 0) {
            if ((st = nn_arena_tensor(ar, n, d, &dh, err)))
                return st;
        } else {
            dh = *dh0;
        }
        nn_act_backward(NN_ACT_RELU, &pass->h[l + 1], &dh_next, &dz);
        nn_linear_backward(&s->fuse[l], &pass->c[l], &dz, &dc);
        nn_tensor *dparts[2] = {&dh, &dm};
        nn_concat_cols_backward(&dc, dparts, 2);
        nn_maxpool_backward(&pass->mp[l], &dm, &da);
        nn_act_backward(NN_ACT_SIGMOID, &pass->a[l], &da, &dpre);
        nn_linear_backward(&s->agg[l], &pass->h[l], &dpre, &dh);
        dh_next = dh;
    }
    if (s->layers == 0)
        nn_tensor_axpy(dh0, 1.0, demb);
    return OP_OK;
}
