/*
 * adam.c - the Adam optimizer (Kingma and Ba, 2015), with optional
 * decoupled weight decay (AdamW, Loshchilov and Hutter, 2019).
 *
 * The moments live in each nn_param (m, v), so one nn_adam can drive any
 * nn_params; only the step counter for bias correction is kept here.
 */
#include "nn/nn.h"

#include <math.h>

nn_adam nn_adam_defaults(double lr)
{
    nn_adam a = {lr, 0.9, 0.999, 1e-8, 0.0, 0};
    return a;
}

static void adam_update(const nn_adam *opt, nn_param *p, double c1, double c2)
{
    size_t n = nn_tensor_size(&p->value);
    double *w = p->value.data, *g = p->grad.data, *m = p->m.data, *v = p->v.data;
    for (size_t i = 0; i < n; i++) {
        m[i] = opt->beta1 * m[i] + (1.0 - opt->beta1) * g[i];
        v[i] = opt->beta2 * v[i] + (1.0 - opt->beta2) * g[i] * g[i];
        double mhat = m[i] / c1, vhat = v[i] / c2;
        w[i] -= opt->lr * (mhat / (sqrt(vhat) + opt->eps) + opt->weight_decay * w[i]);
    }
}

void nn_adam_step(nn_adam *opt, nn_params *ps)
{
    opt->step++;
    double c1 = 1.0 - pow(opt->beta1, (double)opt->step);
    double c2 = 1.0 - pow(opt->beta2, (double)opt->step);
    for (size_t i = 0; i < ps->count; i++)
        adam_update(opt, ps->items[i], c1, c2);
}
