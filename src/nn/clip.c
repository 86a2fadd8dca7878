/*
 * clip.c - global gradient-norm clipping over a whole nn_params.
 *
 * PPO updates in both learned placers clip the L2 norm of the gradient of
 * all parameters taken together (as torch.nn.utils.clip_grad_norm_), which
 * keeps one huge advantage from wrecking the policy.
 */
#include "nn/nn.h"

#include <math.h>

double nn_params_grad_norm(const nn_params *ps)
{
    double ss = 0.0;
    for (size_t i = 0; i < ps->count; i++)
        ss += nn_tensor_dot(&ps->items[i]->grad, &ps->items[i]->grad);
    return sqrt(ss);
}

double nn_params_clip_grad_norm(nn_params *ps, double max_norm)
{
    double norm = nn_params_grad_norm(ps);
    if (max_norm >= 0.0 && norm > max_norm && norm > 0.0) {
        double scale = max_norm / norm;
        for (size_t i = 0; i < ps->count; i++)
            nn_tensor_scale(&ps->items[i]->grad, scale);
    }
    return norm;
}
