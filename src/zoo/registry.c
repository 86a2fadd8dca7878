/*
 * registry.c - the list of zoo models (see opplace/zoo.h).
 * To add one: define `const op_zoo_model op_zoo_model_<name>` in its own
 * file under src/zoo/, declare it here and add it to MODELS.
 */
#include <string.h>

#include "opplace/zoo.h"

extern const op_zoo_model op_zoo_model_synthetic;
extern const op_zoo_model op_zoo_model_rnnlm, op_zoo_model_nmt, op_zoo_model_gnmt;
extern const op_zoo_model op_zoo_model_transformer, op_zoo_model_transformer_xl;
extern const op_zoo_model op_zoo_model_inception_v3, op_zoo_model_nasnet, op_zoo_model_pnasnet,
    op_zoo_model_amoebanet, op_zoo_model_wavenet, op_zoo_model_tensor_holography;

static const op_zoo_model *const MODELS[] = {
    &op_zoo_model_synthetic,
    &op_zoo_model_rnnlm, &op_zoo_model_nmt, &op_zoo_model_gnmt,
    &op_zoo_model_transformer, &op_zoo_model_transformer_xl,
    &op_zoo_model_inception_v3, &op_zoo_model_nasnet, &op_zoo_model_pnasnet,
    &op_zoo_model_amoebanet, &op_zoo_model_wavenet, &op_zoo_model_tensor_holography,
};

const op_zoo_model *const *op_zoo_models(int *count)
{
    *count = (int)(sizeof MODELS / sizeof MODELS[0]);
    return MODELS;
}

const op_zoo_model *op_zoo_find(const char *name)
{
    int n;
    const op_zoo_model *const *all = op_zoo_models(&n);
    for (int i = 0; i < n; i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}
