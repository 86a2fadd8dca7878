/*
 * papers.c - the papers' settings of every zoo model, in one table, and the
 * small settings the demo and the tests ask for (see opplace/zoo.h).
 *
 * `opplace zoo MODEL --paper NAME` builds MODEL as paper NAME evaluates it
 * (Celeritas, Pesto, SGDP, Trinity; docs/algorithms/); without --paper
 * a model is built at the settings of the first paper listed for it below,
 * so the defaults are the papers' scale.  Options given on the command line
 * win over the paper's.  `--size small` asks for the demo-sized graph of
 * op_zoo_small_settings instead (the default run, tests, quick benchmarks;
 * its settings win over the paper's).  The papers do not state how far their RNNs are
 * unrolled: each --seq-len below is the length at which our graph's op
 * count comes nearest the count the paper reports (bench/RESULTS.md, "Model zoo"
 * has the table; bench/zoo.sh regenerates it).
 */
#include <stdio.h>
#include <string.h>

#include "opplace/zoo.h"
#include "zoo/zoo_build.h"

#define MAX_KV 12

typedef struct paper_setting {
    const char *model, *paper;
    const char *kv[MAX_KV]; /* option, value, ..., NULL */
} paper_setting;

/* The first row of a model is its default. */
static const paper_setting SETTINGS[] = {
    /* Celeritas section 6.1: batch 512, more than one V100 holds; 6,332 ops */
    {"inception_v3", "celeritas", {"batch", "512", NULL}},
    /* SGDP appendix: batch 64, 24,713 ops (TF counts every op) */
    {"inception_v3", "sgdp", {"batch", "64", NULL}},
    /* Trinity table 4: batch 64, 12,745 ops */
    {"inception_v3", "trinity", {"batch", "64", NULL}},
    /* SGDP appendix: 2 x 2048, batch 64, 9,021 ops for 2 layers */
    {"rnnlm", "sgdp", {"layers", "2", "hidden", "2048", "batch", "64", "seq-len", "100", NULL}},
    /* Pesto section 5.1: 2/4 layers x 2048, batch 128; 4,614 ops for 2 layers */
    {"rnnlm", "pesto", {"layers", "2", "hidden", "2048", "batch", "128", "seq-len", "53", NULL}},
    /* Celeritas section 6.1: 4 layers x 2048, batch 512; 25,463 ops */
    {"nmt", "celeritas", {"layers", "4", "hidden", "2048", "batch", "512", "seq-len", "75", NULL}},
    /* Pesto section 5.1: 2/4 layers x 1024, batch 128; 30,060 ops for 2 layers */
    {"nmt", "pesto", {"layers", "2", "hidden", "1024", "batch", "128", "seq-len", "161", NULL}},
    /* Trinity table 4: 2 layers, batch 64; 16,432 ops */
    {"nmt", "trinity", {"layers", "2", "hidden", "1024", "batch", "64", "seq-len", "88", NULL}},
    /* SGDP appendix: batch 64, 2/4/8 layers: 28,044 / 46,600 / 83,712 ops
     * (--layers picks the depth; 2 by default) */
    {"gnmt", "sgdp", {"hidden", "1024", "batch", "64", "seq-len", "110", NULL}},
    /* Trinity table 4: 2 layers, batch 64; 8,738 ops */
    {"gnmt", "trinity", {"layers", "2", "hidden", "1024", "batch", "64", "seq-len", "37", NULL}},
    /* Celeritas section 6.1: 12 layers, 16 heads, 2048 units, batch 256; 36,352 ops */
    {"transformer", "celeritas",
     {"layers", "12", "heads", "16", "hidden", "2048", "batch", "256", NULL}},
    /* Pesto section 5.1: 6 layers, 16 heads, 2048 units, batch 32; 19,393 ops */
    {"transformer", "pesto", {"layers", "6", "heads", "16", "hidden", "2048", "batch", "32", NULL}},
    /* SGDP appendix: batch 64, sequence 256 (segments of 64), hidden 500,
     * 10 heads; 2,618 ops for 2 layers */
    {"transformer_xl", "sgdp",
     {"layers", "2", "hidden", "500", "heads", "10", "batch", "64", "seq-len", "256", NULL}},
    /* Trinity table 4: NASNet-Large 6@168, batch 32; 18,644 ops */
    {"nasnet", "trinity", {"cells", "6", "hidden", "168", "batch", "32", NULL}},
    /* Pesto section 5.1: 4@212 (also 6@148, 6@168), batch 32; 16,901 ops */
    {"nasnet", "pesto", {"cells", "4", "hidden", "212", "batch", "32", NULL}},
    /* Trinity table 4: PNASNet-Large 4@216, batch 8; 14,063 ops */
    {"pnasnet", "trinity", {"cells", "4", "hidden", "216", "batch", "8", NULL}},
    /* SGDP appendix: batch 64; 9,430 ops */
    {"amoebanet", "sgdp", {"batch", "64", NULL}},
    /* SGDP table 1: 2-stack 18-layer WaveNet, batch 64, receptive field 2048 */
    {"wavenet", "sgdp", {"stacks", "2", "layers", "9", "batch", "64", "seq-len", "2048", NULL}},
    /* Celeritas section 6.1: 30 layers x 24 filters, batch 32; 3,810 ops */
    {"tensor_holography", "celeritas", {"layers", "30", "hidden", "24", "batch", "32", NULL}},
};

/* Demo- and test-sized settings (a few thousand ops); models not listed
 * are that small at their papers' settings. */
static const paper_setting SMALL[] = {
    {"inception_v3", NULL, {"batch", "64", NULL}},
    {"rnnlm", NULL, {"seq-len", "40", NULL}},
    {"nmt", NULL, {"layers", "2", "hidden", "1024", "batch", "128", "seq-len", "40", NULL}},
    {"gnmt", NULL, {"seq-len", "20", NULL}},
    {"pnasnet", NULL, {"batch", "32", NULL}},
};

#define COUNT(a) (int)(sizeof(a) / sizeof(a)[0])

/* Set each option of kv that o does not have yet. */
static op_status fill(op_options *o, const char *const *kv, op_error *err)
{
    for (int k = 0; kv[k]; k += 2)
        if (!op_options_has(o, kv[k]) && op_options_set(o, kv[k], kv[k + 1], err))
            return OP_ENOMEM;
    return OP_OK;
}

static op_status apply_paper(op_options *o, const char *model, op_error *err)
{
    const char *size = op_options_str(o, "size", "papers");
    if (strcmp(size, "papers") && strcmp(size, "small"))
        return op_fail(err, OP_EUSAGE, "--size %s: expected 'papers' (the default) or 'small' "
                       "(a demo-sized graph of a few thousand ops)", size);
    if (!strcmp(size, "small") && op_zoo_small_settings(o, model, err))
        return OP_ENOMEM;
    const char *paper = op_options_str(o, "paper", NULL);
    for (int i = 0; i < COUNT(SETTINGS); i++)
        if (!strcmp(SETTINGS[i].model, model) && (!paper || !strcmp(SETTINGS[i].paper, paper)))
            return fill(o, SETTINGS[i].kv, err);
    if (!paper)
        return OP_OK;
    char known[128] = "";
    for (int i = 0; i < COUNT(SETTINGS); i++)
        if (!strcmp(SETTINGS[i].model, model)) {
            size_t len = strlen(known);
            snprintf(known + len, sizeof known - len, "%s%s", len ? ", " : "", SETTINGS[i].paper);
        }
    return op_fail(err, OP_EUSAGE, "--paper %s: that paper does not evaluate %s%s%s", paper,
                   model, known[0] ? "; papers that do: " : " (no paper does)", known);
}

op_graph *zoo_generate(const char *model, op_zoo_fn build, op_options *o, op_error *err)
{
    op_options *own = NULL;
    if (!o && !(o = own = op_options_new(err)))
        return NULL;
    op_graph *g = apply_paper(o, model, err) ? NULL : build(o, err);
    op_options_free(own);
    return g;
}

op_status op_zoo_small_settings(op_options *o, const char *model, op_error *err)
{
    for (int i = 0; i < COUNT(SMALL); i++)
        if (!strcmp(SMALL[i].model, model))
            return fill(o, SMALL[i].kv, err);
    return OP_OK;
}

const char *op_zoo_default_paper(const char *model)
{
    for (int i = 0; i < COUNT(SETTINGS); i++)
        if (!strcmp(SETTINGS[i].model, model))
            return SETTINGS[i].paper;
    return NULL;
}
