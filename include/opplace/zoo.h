/*
 * opplace/zoo.h - generators of benchmark model graphs.
 *
 * Each model is one entry in the zoo registry (src/zoo/registry.c): a name,
 * a one-line summary and a function that builds the graph from options
 * (--layers, --batch, ... read through op_options, so unknown options are
 * reported by the command line).
 */
#ifndef OPPLACE_ZOO_H
#define OPPLACE_ZOO_H

#include "opplace/graph.h"
#include "opplace/options.h"

typedef op_graph *(*op_zoo_fn)(op_options *opts, op_error *err);

typedef struct op_zoo_model {
    const char *name;
    const char *summary;
    op_zoo_fn generate;
} op_zoo_model;

const op_zoo_model *const *op_zoo_models(int *count);
const op_zoo_model *op_zoo_find(const char *name);

/* A synthetic layered DAG for scale tests: `ops` ops in layers of `width`,
 * each op fed by up to `fan_in` ops of the previous layer; deterministic in
 * seed.  Times and sizes are drawn from fixed ranges. */
op_graph *op_zoo_synthetic(int ops, int width, int fan_in, uint64_t seed, op_error *err);

#endif
