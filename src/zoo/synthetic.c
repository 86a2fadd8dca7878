/*
 * synthetic.c - layered random DAGs for scale tests and the simulator
 * benchmark (100,000 ops and more), before any real model is involved.
 *
 * Layer L holds `width` ops; each op takes inputs from 1..fan_in random ops
 * of layer L-1 (the zoo model: fan_in = SYNTHETIC_FAN_IN = 3), so the graph is connected front to back like a network's
 * forward pass.  Times are 5-200 us, outputs 4 KiB-4 MiB, a third of the ops
 * carry 1-16 MiB of parameters.  A splitmix64 stream makes it reproducible.
 */
#include <stdio.h>
#include <stdlib.h>

#include "opplace/zoo.h"

/* Inputs per op of the zoo model (the C API takes any fan-in). */
#define SYNTHETIC_FAN_IN 3

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(splitmix64(s) >> 11) * (1.0 / 9007199254740992.0);
}

op_graph *op_zoo_synthetic(int ops, int width, int fan_in, uint64_t seed, op_error *err)
{
    if (ops < 1 || width < 1 || fan_in < 1) {
        op_fail(err, OP_EUSAGE, "synthetic: ops, width and fan-in must be positive");
        return NULL;
    }
    char name[64];
    snprintf(name, sizeof name, "synthetic_%d", ops);
    op_graph_builder *b = op_graph_builder_new(name, err);
    if (!b)
        return NULL;
    uint64_t rng = seed;
    char opname[64], layer[32];
    for (int i = 0; i < ops; i++) {
        int L = i / width;
        snprintf(opname, sizeof opname, "l%d/op%d", L, i % width);
        snprintf(layer, sizeof layer, "layer_%d", L);
        int with_params = splitmix64(&rng) % 3 == 0;
        op_op_spec s = {
            .name = opname, .type = with_params ? "MatMul" : "Elementwise",
            .time_us = uniform(&rng, 5, 200),
            .output_bytes = (int64_t)uniform(&rng, 4096, 4194304),
            .param_bytes = with_params ? (int64_t)uniform(&rng, 1 << 20, 16 << 20) : 0,
            .layer = layer,
        };
        if (op_graph_add_op(b, &s, err) < 0)
            goto fail;
        if (L == 0)
            continue;
        int prev_lo = (L - 1) * width, k = 1 + (int)(splitmix64(&rng) % (uint64_t)fan_in);
        for (int j = 0; j < k; j++) {
            int src = prev_lo + (int)(splitmix64(&rng) % (uint64_t)width);
            if (op_graph_add_edge(b, src, i, -1, err))
                goto fail;
        }
    }
    return op_graph_finish(b, err);
fail:
    op_graph_builder_free(b);
    return NULL;
}

static op_graph *generate_synthetic(op_options *o, op_error *err)
{
    long ops, width;
    uint64_t seed;
    if (op_options_int(o, "ops", 1000, 1, 50000000, &ops, err) ||
        op_options_int(o, "width", 16, 1, 1000000, &width, err) ||
        op_options_u64(o, "seed", 1, &seed, err))
        return NULL;
    return op_zoo_synthetic((int)ops, (int)width, SYNTHETIC_FAN_IN, seed, err);
}

const op_zoo_model op_zoo_model_synthetic = {
    .name = "synthetic",
    .summary = "layered random DAG for scale tests (--ops N --width W --seed S; fan-in 3)",
    .generate = generate_synthetic,
};
