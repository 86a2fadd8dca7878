/*
 * activations.c - elementwise nonlinearities: identity, ReLU, sigmoid, tanh.
 *
 * The backward pass reads the forward OUTPUT, not the input: for these
 * functions f'(x) is a function of f(x) (ReLU: y > 0, sigmoid: y(1-y),
 * tanh: 1-y^2), which lets the forward pass run in place without keeping x.
 */
#include "nn/nn.h"

#include <assert.h>
#include <math.h>

static double act_value(nn_activation f, double x)
{
    switch (f) {
    case NN_ACT_RELU: return x > 0.0 ? x : 0.0;
    case NN_ACT_SIGMOID:
        /* split by sign so exp never overflows */
        if (x >= 0.0)
            return 1.0 / (1.0 + exp(-x));
        else {
            double e = exp(x);
            return e / (1.0 + e);
        }
    case NN_ACT_TANH: return tanh(x);
    case NN_ACT_IDENTITY: break;
    }
    return x;
}

static double act_slope_from_output(nn_activation f, double y)
{
    switch (f) {
    case NN_ACT_RELU: return y > 0.0 ? 1.0 : 0.0;
    case NN_ACT_SIGMOID: return y * (1.0 - y);
    case NN_ACT_TANH: return 1.0 - y * y;
    case NN_ACT_IDENTITY: break;
    }
    return 1.0;
}

void nn_act_forward(nn_activation f, const nn_tensor *x, nn_tensor *y)
{
    assert(nn_tensor_same_shape(x, y));
    size_t n = nn_tensor_size(x);
    for (size_t i = 0; i < n; i++)
        y->data[i] = act_value(f, x->data[i]);
}

void nn_act_backward(nn_activation f, const nn_tensor *y, const nn_tensor *dy, nn_tensor *dx)
{
    if (!dx)
        return;
    assert(nn_tensor_same_shape(y, dy) && nn_tensor_same_shape(y, dx));
    assert(dx->data != dy->data);
    size_t n = nn_tensor_size(y);
    for (size_t i = 0; i < n; i++)
        dx->data[i] += act_slope_from_output(f, y->data[i]) * dy->data[i];
}
