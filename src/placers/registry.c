/*
 * registry.c - the list of placement algorithms.
 *
 * To add a placer: write src/placers/<name>.c defining `const op_placer
 * op_placer_<name>`, declare it below and add it to PLACERS.  The command
 * line, `opplace algos`, the benchmark and the tests all read this list.
 */
#include <string.h>

#include "opplace/placer.h"

extern const op_placer op_placer_auto;
extern const op_placer op_placer_single;
extern const op_placer op_placer_round_robin;
extern const op_placer op_placer_m_etf;
extern const op_placer op_placer_heft;
extern const op_placer op_placer_m_topo;
extern const op_placer op_placer_metis;
extern const op_placer op_placer_expert;
extern const op_placer op_placer_m_sct;
extern const op_placer op_placer_celeritas;
extern const op_placer op_placer_order_place;
extern const op_placer op_placer_dfs_topo;
extern const op_placer op_placer_sgdp;
extern const op_placer op_placer_trinity;
extern const op_placer op_placer_pesto;

static const op_placer *const PLACERS[] = {
    &op_placer_auto,
    &op_placer_single,
    &op_placer_round_robin,
    &op_placer_m_etf,
    &op_placer_heft,
    &op_placer_m_topo,
    &op_placer_metis,
    &op_placer_expert,
    &op_placer_m_sct,
    &op_placer_celeritas,
    &op_placer_order_place,
    &op_placer_dfs_topo,
    &op_placer_sgdp,
    &op_placer_trinity,
    &op_placer_pesto,
};

const op_opt_decl op_place_options[] = {
    {"seed", OP_OPT_INT, 0, 9.2e18, "1", NULL, "random seed"},
    {"budget-seconds", OP_OPT_NUM, 0, 1e9, NULL, NULL,
     "time budget of the placer (auto: 10)"},
    {"best-effort", OP_OPT_FLAG, 0, 0, NULL, NULL,
     "return a placement even when memory does not suffice"},
    {"order", OP_OPT_TEXT, 0, 0, "own", "own|none|fit|peak",
     "devices' execution order: the placer's own, none (first-ready-first), or the best "
     "priority order under a memory cap if it is faster and fits (peak: and no higher peak)"},
    {"refine", OP_OPT_FLAG, 0, 0, NULL, NULL,
     "polish the result by local search against the simulator"},
    {"refine-seconds", OP_OPT_NUM, 0, 1e9, "10; auto: what its budget leaves", NULL,
     "time for --refine; with auto, a cap on auto's own refinement (0: none); with pesto, "
     "0 turns off the refinement beside CBC"},
    {"refine-iters", OP_OPT_INT, 0, 1e9, NULL, NULL,
     "candidates for --refine (and auto's refinement) instead of a time limit: deterministic"},
    {NULL, 0, 0, 0, NULL, NULL, NULL},
};

const op_placer *const *op_placers(int *count)
{
    *count = (int)(sizeof PLACERS / sizeof PLACERS[0]);
    return PLACERS;
}

const op_placer *op_placer_find(const char *name)
{
    int n;
    const op_placer *const *all = op_placers(&n);
    for (int i = 0; i < n; i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}

op_status op_place(const op_placer *pl, const op_place_ctx *ctx, op_placement *out,
                   op_error *err)
{
    if (op_placement_init(out, ctx->p->n, ctx->p->nd, err))
        return OP_ENOMEM;
    op_status st = pl->place(ctx, out, err);
    if (!st && !out->algorithm) /* a placer may name itself more precisely */
        st = op_placement_set_algorithm(out, pl->name, err);
    if (!st && (st = op_problem_check_placement(ctx->p, out, err)) != OP_OK &&
        st != OP_ENOMEM) {
        /* a placer that breaks the hard rules is a bug, not bad input (the
         * check running out of memory is neither) */
        err->code = OP_EINTERNAL;
        st = OP_EINTERNAL;
    }
    if (st)
        op_placement_destroy(out);
    return st;
}
