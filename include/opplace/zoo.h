/*
 * opplace/zoo.h - generators of benchmark model graphs.
 *
 * Each model is one entry in the zoo registry (src/zoo/registry.c): a name,
 * a one-line summary and a function that builds the graph from options
 * (--layers, --batch, ... read through op_options, so unknown options are
 * reported by the command line).
 *
 * Defaults are the papers' scale: `--paper NAME` (celeritas, pesto, sgdp,
 * trinity) builds a model at the settings that paper evaluates it at, and
 * without --paper a model is built at its default paper's settings (the
 * table in src/zoo/papers.c; options given explicitly win).  So
 * `zoo gnmt --layers 8` is SGDP's 8-layer GNMT (~83,000 ops).  Callers
 * that want a demo- or test-sized graph ask for it with
 * op_zoo_small_settings (on the command line: `--size small`).
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

/* Adds to o the settings (those o does not have yet) that make `model` a
 * demo- or test-sized graph of a few thousand ops (the default run, the
 * tests); a no-op for models that small at their papers' settings. */
op_status op_zoo_small_settings(op_options *o, const char *model, op_error *err);

/* The paper whose settings `model` is built at without --paper, or NULL. */
const char *op_zoo_default_paper(const char *model);
const op_zoo_model *op_zoo_find(const char *name);

/* A synthetic layered DAG for scale tests: `ops` ops in layers of `width`,
 * each op fed by up to `fan_in` ops of the previous layer; deterministic in
 * seed.  Times and sizes are drawn from fixed ranges. */
op_graph *op_zoo_synthetic(int ops, int width, int fan_in, uint64_t seed, op_error *err);

#endif
