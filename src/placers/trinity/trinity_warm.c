/*
 * trinity_warm.c - a reference placement for Trinity's policy.  Beyond the
 * paper, which trains both networks from scratch (section 4.2) and returns
 * the placement with the best MDPE reward; in a budget of a minute on two
 * cores that policy does not find the layer-wise split a human expert
 * writes for an RNN, and its best reward often comes with more
 * communication or memory than the expert's (bench/RESULTS.md, Trinity).
 * Three changes centre the search on a good placement:
 *
 *   1. a reference placement: the best of a list of fast heuristics
 *      (TRINITY_DEFAULT_HEURISTICS = expert; op_portfolio_best), judged by
 *      its devices alone;
 *   2. priors centred on it (trinity_graph_set_reference): the G groups
 *      are cut into one block per device, sized by the reference's work on
 *      that device; the ops the reference puts on device d are partitioned
 *      by METIS into the parts of d's block (trinity_anchor.c), which are
 *      the anchors of the order prior, and the block prior maps the block
 *      to d.  The untrained policy therefore samples the reference with
 *      some ops shifted into neighbouring groups and some groups moved to
 *      another device: PPO starts next to the reference instead of from a
 *      random split;
 *   3. decision units (optional, on in the placer; learn_units_build):
 *      about unit_target Celeritas fusion groups split by the reference's
 *      devices and merged with colocation groups.  A unit's first op in
 *      topological order picks the group for all its members, the same
 *      mechanism as colocation (placers/trinity/trinity.h), so a sampled
 *      move shifts a fused chain, and the partition network has a few
 *      hundred decisions instead of thousands.
 *
 * The trainer (trinity_train.c) seeds its best-seen record with the
 * reference and, unless the user gives --max-comm / --max-mem, takes the
 * reference's peak communication and peak memory as the tolerances C^ and
 * M^ of the MDPE reward and of the constrained order that picks the result
 * (trinity_reward.c): the placement returned is then never slower than the
 * reference, nor above its peak communication or peak memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "learn/units.h"
#include "placers/coarseners.h"
#include "placers/portfolio.h"
#include "placers/trinity/trinity_internal.h"

/* Leaders per unit (its first op in topological order) and the members'
 * common devices; a unit with no common device keeps its ops' own leaders. */
static op_status set_units(trinity_graph *tg, const int *unit_of, int n_units, op_error *err)
{
    int n = tg->n, md = tg->max_devices, *lead;
    unsigned char *um;
    op_status st = learn_unit_leaders(tg->p->g, unit_of, n_units, tg->allowed, md, 0, &lead, &um,
                                      err);
    if (st)
        return st;
    for (int i = 0; i < n; i++) {
        int u = unit_of[i], any = 0;
        const unsigned char *row = um + (size_t)u * md;
        for (int d = 0; d < md; d++)
            any |= row[d];
        if (!any)
            continue;
        memcpy(tg->allowed + (size_t)i * md, row, (size_t)md);
        tg->leader[i] = lead[u] == i ? -1 : lead[u];
        tg->decides[i] = tg->leader[i] < 0;
        tg->first_allowed[i] = -1;
        for (int d = 0; d < md && tg->first_allowed[i] < 0; d++)
            if (row[d])
                tg->first_allowed[i] = d;
    }
    free(lead), free(um);
    return OP_OK;
}

op_status trinity_graph_set_reference(trinity_graph *tg, const int *ref_device_of,
                                      int unit_target, uint64_t seed, op_error *err)
{
    const op_problem *p = tg->p;
    op_status st = trinity_anchor_blocks(p, tg->groups, seed, ref_device_of, tg->anchor,
                                         tg->block_dev, err);
    if (st || unit_target <= 0)
        return st;
    int *unit_of = op_malloc(sizeof(int) * (size_t)p->n, err);
    if (!unit_of)
        return OP_ENOMEM;
    op_placement ref = {.n_ops = p->n, .n_dev = p->nd, .device_of = (int *)ref_device_of};
    int n_units = 0;
    st = learn_units_build(p, &ref, op_coarsener_find("celeritas"), unit_target, unit_of,
                           &n_units, err);
    if (!st)
        st = set_units(tg, unit_of, n_units, err);
    free(unit_of);
    return st;
}

op_status trinity_reference_place(const op_problem *p, const char *heuristics, uint64_t seed,
                                  int *device_of, char *name, size_t name_len, op_error *err)
{
    op_placement pl;
    op_status st = op_placement_init(&pl, p->n, p->nd, err);
    if (st)
        return st;
    op_place_ctx ctx = {.p = p, .seed = seed}; /* judged by their devices alone */
    op_portfolio_winner info;
    st = op_portfolio_best(&ctx, heuristics, 1, "trinity", &pl, &info, err);
    if (!st) {
        memcpy(device_of, pl.device_of, sizeof(int) * (size_t)p->n);
        snprintf(name, name_len, "%s", info.name);
    }
    op_placement_destroy(&pl);
    return st;
}
