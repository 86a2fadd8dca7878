/*
 * trinity_options.c - the Trinity options, read once for both the placer
 * (trinity.c) and `opplace train trinity` (src/cli/train_trinity.c), so
 * their names and defaults agree; the options every learned placer shares
 * are learn/options.h's.
 *
 * --paper is the paper's method (sections 3-4): no reference placement, no
 * priors, no uniformly drawn decisions, rollouts judged first-ready-first,
 * no list-schedule orders and no boundary moves in the final choice;
 * tolerances 8 GiB (section 5).  The options that only tune an addition
 * beyond the paper are refused with it.  --paper keeps the changes that
 * make its PPO learn here (trinity_paper_settings): centred logits
 * (trinity_config.centre, trinity_policy.c), the device-marginal partition
 * ratio (trinity_train_config.marginal, trinity_train.c), the structure
 * initialisation (trinity_train_config.structure_init: the partition
 * network fitted to k-means groups of its Node2vec inputs before PPO, with
 * Node2vec walks that follow neighbourhoods, TRINITY_PAPER_N2V_*), Adam at
 * the paper's 3e-3, no entropy bonus, and PPO's passes without the
 * partition network's dropout (trinity_train_config.ppo_dropout; the fit
 * keeps it).  They change how PPO starts, estimates and follows the
 * gradient, not what it optimises.
 */
#include <stdio.h>
#include <string.h>

#include "opplace/list_schedule.h"
#include "learn/options.h"
#include "opplace/options.h"
#include "placers/trinity/trinity.h"

/* options that switch on something beyond the paper */
static const char *const BEYOND[] = {"heuristics", "units", "order-search", NULL};

/* --mdpe A,B,C: the MDPE weights alpha, beta, gamma of eq. 8. */
static op_status read_mdpe(op_options *o, trinity_reward_config *rc, op_error *err)
{
    const char *v = op_options_str(o, "mdpe", NULL);
    if (!v)
        return OP_OK;
    double w[3];
    char tail;
    if (sscanf(v, "%lf,%lf,%lf%c", &w[0], &w[1], &w[2], &tail) != 3 || !(w[0] >= 0) ||
        !(w[1] >= 0) || !(w[2] >= 0) || !(w[0] + w[1] + w[2] > 0) || w[0] > 1e6 || w[1] > 1e6 ||
        w[2] > 1e6)
        return op_fail(err, OP_EUSAGE,
                       "trinity: --mdpe wants three weights >= 0, not all 0, as A,B,C "
                       "(runtime, communication, memory; the paper's 0.5,0.3,0.2), not '%s'",
                       v);
    rc->alpha = w[0], rc->beta = w[1], rc->gamma = w[2];
    return OP_OK;
}

/* --order-search off|final|judged|all: how far the search uses priority
 * list-schedule orders (each level adds to the one before):
 *   off     none: the result first-ready-first, rollouts judged so (the paper's)
 *   final   the final choice over the pool orders its candidates
 *   judged  + rollouts judged by the list schedule best for the reference
 *           (reward_order auto)
 *   all     + layer-boundary moves around the reference (needs one)
 * Default: all with a reference, judged without (placer); training has no
 * final choice (off or judged): judged with a reference, off without. */
enum { ORDERS_OFF, ORDERS_FINAL, ORDERS_JUDGED, ORDERS_ALL };
static const char *const ORDER_LEVELS[] = {"off", "final", "judged", "all"};

void trinity_paper_settings(trinity_config *pc, trinity_train_config *tc)
{
    pc->prior = 0.0; /* the paper's networks: no priors */
    pc->sched_prior = 0.0;
    tc->explore = 0.0;
    /* what makes its PPO learn (trinity.h) */
    pc->centre = 1;
    tc->marginal = 1;
    tc->ppo.lr = TRINITY_CENTRED_LR;
    tc->ppo.entropy_coef = TRINITY_CENTRED_ENTROPY;
    tc->structure_init = TRINITY_STRUCTURE_INIT;
    tc->ppo_dropout = 0;
    tc->n2v.q = TRINITY_PAPER_N2V_Q;
    tc->n2v.length = TRINITY_PAPER_N2V_LENGTH;
    tc->n2v.window = TRINITY_PAPER_N2V_WINDOW;
}

/* The reference, the priors and exploration, or --paper's settings. */
static void apply_reference(op_options *o, trinity_options *out)
{
    trinity_config *pc = &out->pc;
    trinity_train_config *tc = &out->tc;
    tc->heuristics = out->lo.heuristics;
    /* absent tolerances: the reference's peaks (trinity_warm.c) */
    tc->comm_from_reference = tc->heuristics && !op_options_has(o, "max-comm");
    tc->mem_from_reference = tc->heuristics && !op_options_has(o, "max-mem");
    if (out->lo.paper) {
        trinity_paper_settings(pc, tc);
        return;
    }
    pc->prior = tc->heuristics ? TRINITY_REF_PRIOR : pc->prior;
    pc->sched_prior = tc->heuristics ? TRINITY_REF_SCHED_PRIOR : pc->sched_prior;
    tc->explore = TRINITY_DEFAULT_EXPLORE;
}

op_status trinity_options_read(op_options *o, int placer, trinity_options *out, op_error *err)
{
    memset(out, 0, sizeof *out);
    trinity_config *pc = &out->pc;
    trinity_train_config *tc = &out->tc;
    *pc = trinity_config_default();
    *tc = trinity_train_defaults();
    learn_option_defaults ld = {.who = "trinity", .beyond = BEYOND,
                                .heuristics = TRINITY_DEFAULT_HEURISTICS,
                                .samples = tc->samples, .epochs = tc->ppo.epochs};
    op_status st = learn_options_read(o, &ld, placer, &out->lo, err);
    if (st)
        return st;
    apply_reference(o, out);
    tc->ppo.lr = learn_or(out->lo.lr, tc->ppo.lr);
    tc->ppo.entropy_coef = learn_or(out->lo.entropy, tc->ppo.entropy_coef);
    long groups, slots;
    long maxd = pc->max_devices, hidden = pc->hidden;
    if ((st = op_options_int(o, "groups", pc->groups, 1, 4096, &groups, err)) ||
        (st = op_options_int(o, "slots", tc->slots, 1, TRINITY_MAX_SLOTS, &slots, err)) ||
        (st = op_options_double(o, "max-comm", tc->reward.max_comm_bytes, 0, 1e18,
                                &tc->reward.max_comm_bytes, err)) ||
        (st = op_options_double(o, "max-mem", tc->reward.max_mem_bytes, 0, 1e18,
                                &tc->reward.max_mem_bytes, err)) ||
        (st = read_mdpe(o, &tc->reward, err)))
        return st;
    if (!placer && /* the architecture of a new policy: training only */
        ((st = op_options_int(o, "max-devices", maxd, 1, 1024, &maxd, err)) ||
         (st = op_options_int(o, "hidden", hidden, 1, 4096, &hidden, err))))
        return st;
    int level = ORDERS_OFF;
    if (!out->lo.paper) {
        int def = placer ? (tc->heuristics ? ORDERS_ALL : ORDERS_JUDGED)
                         : (tc->heuristics ? ORDERS_JUDGED : ORDERS_OFF);
        const char *v = op_options_str(o, "order-search", ORDER_LEVELS[def]);
        for (level = 0; level <= ORDERS_ALL && strcmp(v, ORDER_LEVELS[level]); level++)
            ;
        if (level > ORDERS_ALL)
            return op_fail(err, OP_EUSAGE,
                           "trinity: --order-search must be off, final, judged or all, not '%s'",
                           v);
        if (!placer && (level == ORDERS_FINAL || level == ORDERS_ALL))
            return op_fail(err, OP_EUSAGE,
                           "trinity: --order-search %s (the final choice) is the placer's; "
                           "training takes off or judged", v);
        if (level == ORDERS_ALL && !tc->heuristics)
            return op_fail(err, OP_EUSAGE,
                           "trinity: --order-search all needs a reference (--heuristics): the "
                           "boundary moves start from it");
    }
    /* judged by an order only when the result may keep one */
    tc->reward_order = level >= ORDERS_JUDGED ? TRINITY_REWARD_ORDER_AUTO : OP_PRIORITY_FIFO;
    int orders = placer && level >= ORDERS_FINAL;
    int boundary = level == ORDERS_ALL ? TRINITY_DEFAULT_BOUNDARY_MOVES : 0;
    tc->samples = (int)out->lo.samples;
    tc->threads = (int)out->lo.threads;
    tc->ppo.epochs = (int)out->lo.epochs;
    tc->slots = (int)slots;
    tc->unit_target = (int)out->lo.units;
    pc->groups = (int)groups;
    pc->max_devices = (int)maxd;
    pc->hidden = (int)hidden;
    out->schedule_orders = (int)orders;
    out->boundary_moves = (int)boundary;
    return OP_OK;
}
