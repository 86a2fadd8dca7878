/*
 * trinity.c - the Trinity placer (papers/trinity.txt; src/learn/trinity_*,
 * opplace/trinity.h): a partition network groups the ops, a seq2seq
 * schedule network maps groups to devices, both trained by PPO on the MDPE
 * reward (runtime, peak communication, peak memory).  Used like SGDP:
 *
 *   --weights W.bin               zero-shot: the trained policy's greedy
 *                                 placement and --samples sampled ones are
 *                                 simulated, the best is returned
 *   --weights W.bin --finetune N  N PPO iterations on this graph first
 *   (no weights)                  a fresh policy trained on this graph for
 *                                 --budget-seconds (default 60) or
 *                                 --iterations; the best placement seen wins
 *
 * Options: --samples K (16), --threads T, --lr, --epochs, --entropy,
 * --groups G (64), --prior P (1) and --sched-prior S (2) (the order and
 * block priors, opplace/trinity.h; --prior 0 --sched-prior 0 --heuristics
 * none --explore 0 is the paper's method) for new policies only,
 * --max-comm BYTES and --max-mem BYTES
 * (the user's tolerances C^ and M^ of eqs. 6-7; default: the reference's
 * peaks, or 8 GiB each with --heuristics none),
 * --alpha/--beta/--gamma (MDPE weights 0.5/0.3/0.2), --n2v-p/--n2v-q
 * (Node2vec return and in-out parameters), --save-weights FILE, --slots B
 * (1; rollout batches per iteration, shared by MPI ranks under mpirun).
 * Beyond the paper (src/learn/trinity_warm.c): --heuristics LIST (default
 * expert; "none" gives the paper's start) picks a reference placement that
 * seeds the best-seen record and centres the priors (then --prior 2 and
 * --sched-prior 4 by default: samples stay near it); --units N (256; 0 =
 * per op) decision units split by it; --explore E (1; 0 = none) decisions
 * per rollout of each network drawn uniformly, so exploration survives
 * PPO's convergence; without --max-comm / --max-mem the
 * tolerances are the reference's peak communication and peak memory, and
 * the result is the fastest placement seen within the tolerances
 * (trinity_reward.c), so it is never worse than the reference on step
 * time, peak communication or peak memory.  With --weights the reference
 * is used too (zero-shot then returns at least the reference).
 * Also beyond the paper (opplace/list_schedule.h): --schedule-orders 1
 * (default; 0 = off, the result has no order as in the paper) gives the
 * result a per-device execution order after the search: the result and
 * the reference are list-scheduled with each priority (bottom level with
 * transfers, tlevel + blevel, bottom level of compute), without and with
 * a per-device memory cap of 100/95/90 % of the unordered peak, and an ordered
 * placement replaces the result only when the simulator finds it strictly
 * faster with peak communication and peak memory no higher than the
 * unordered result's (so never worse on any of the three; communication
 * does not depend on the order, memory may).
 * --seed makes a run with a fixed --iterations reproducible, for any rank
 * count (given the same OpenBLAS thread count; bench/RESULTS.md, Trinity,
 * MPI).  Eligibility, pins and colocation are enforced by the policy's
 * masks (opplace/trinity.h);
 * if the best placement runs out of memory the placer returns
 * OP_EINFEASIBLE unless --best-effort.  The final line on stderr reports
 * runtime, peak communication and peak memory as the paper's Table 4.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/list_schedule.h"
#include "opplace/parallel.h"
#include "opplace/trinity.h"
#include "placers/placer_util.h"

typedef struct trinity_opts {
    const char *weights, *save, *heuristics;
    long finetune, iterations, samples, threads, epochs, groups, slots, units;
    long schedule_orders;
    int comm_from_ref, mem_from_ref;
    double lr, entropy, p, q, prior, sched_prior, explore;
    trinity_reward_config reward;
} trinity_opts;

static op_status read_opts(op_options *o, trinity_opts *s, op_error *err)
{
    trinity_train_config d = trinity_train_defaults();
    trinity_config pc = trinity_config_default();
    s->weights = op_options_str(o, "weights", NULL);
    s->save = op_options_str(o, "save-weights", NULL);
    s->heuristics = op_options_str(o, "heuristics", TRINITY_DEFAULT_HEURISTICS);
    if (!strcmp(s->heuristics, "none"))
        s->heuristics = NULL;
    s->reward = d.reward;
    /* absent tolerances: the reference's peaks (trinity_warm.c) */
    s->comm_from_ref = s->heuristics && !op_options_has(o, "max-comm");
    s->mem_from_ref = s->heuristics && !op_options_has(o, "max-mem");
    op_status st;
    if ((st = op_options_int(o, "finetune", 0, 0, 1000000, &s->finetune, err)) ||
        (st = op_options_int(o, "iterations", 0, 0, 100000000, &s->iterations, err)) ||
        (st = op_options_int(o, "samples", d.samples, 1, 4096, &s->samples, err)) ||
        (st = op_options_int(o, "threads", 0, 0, 64, &s->threads, err)) ||
        (st = op_options_int(o, "epochs", d.ppo.epochs, 1, 1000, &s->epochs, err)) ||
        (st = op_options_int(o, "groups", pc.groups, 1, 4096, &s->groups, err)) ||
        (st = op_options_int(o, "slots", d.slots, 1, TRINITY_MAX_SLOTS, &s->slots, err)) ||
        (st = op_options_int(o, "units", TRINITY_DEFAULT_UNITS, 0, 100000000, &s->units, err)) ||
        (st = op_options_int(o, "schedule-orders", 1, 0, 1, &s->schedule_orders, err)) ||
        (st = op_options_double(o, "lr", d.ppo.lr, 0, 10, &s->lr, err)) ||
        (st = op_options_double(o, "entropy", d.ppo.entropy_coef, 0, 100, &s->entropy, err)) ||
        (st = op_options_double(o, "prior", s->heuristics ? TRINITY_REF_PRIOR : pc.prior, 0,
                                1e3, &s->prior, err)) ||
        (st = op_options_double(o, "sched-prior",
                                s->heuristics ? TRINITY_REF_SCHED_PRIOR : pc.sched_prior, 0, 1e3,
                                &s->sched_prior, err)) ||
        (st = op_options_double(o, "explore", TRINITY_DEFAULT_EXPLORE, 0, 1e6, &s->explore,
                                err)) ||
        (st = op_options_double(o, "n2v-p", d.n2v.p, 1e-6, 1e6, &s->p, err)) ||
        (st = op_options_double(o, "n2v-q", d.n2v.q, 1e-6, 1e6, &s->q, err)) ||
        (st = op_options_double(o, "max-comm", s->reward.max_comm_bytes, 0, 1e18,
                                &s->reward.max_comm_bytes, err)) ||
        (st = op_options_double(o, "max-mem", s->reward.max_mem_bytes, 0, 1e18,
                                &s->reward.max_mem_bytes, err)) ||
        (st = op_options_double(o, "alpha", s->reward.alpha, 0, 1e6, &s->reward.alpha, err)) ||
        (st = op_options_double(o, "beta", s->reward.beta, 0, 1e6, &s->reward.beta, err)) ||
        (st = op_options_double(o, "gamma", s->reward.gamma, 0, 1e6, &s->reward.gamma, err)))
        return st;
    if (s->finetune && !s->weights)
        return op_fail(err, OP_EUSAGE, "trinity: --finetune needs --weights FILE");
    return OP_OK;
}

static trinity_policy *make_policy(const op_place_ctx *ctx, const trinity_opts *s,
                                   op_error *err)
{
    if (s->weights)
        return trinity_policy_from_file(s->weights, err);
    trinity_config cfg = trinity_config_default();
    cfg.groups = (int)s->groups;
    cfg.prior = s->prior;
    cfg.sched_prior = s->sched_prior;
    if (ctx->p->nd > cfg.max_devices)
        cfg.max_devices = ctx->p->nd;
    return trinity_policy_new(&cfg, ctx->seed, err);
}

static trinity_train_config train_config(const op_place_ctx *ctx, const trinity_opts *s)
{
    trinity_train_config tc = trinity_train_defaults();
    tc.samples = (int)s->samples;
    tc.threads = (int)s->threads;
    tc.seed = ctx->seed;
    tc.ppo.epochs = (int)s->epochs;
    tc.ppo.lr = s->lr;
    tc.ppo.entropy_coef = s->entropy;
    tc.reward = s->reward;
    tc.n2v.p = s->p;
    tc.n2v.q = s->q;
    tc.n2v.seed = ctx->seed;
    tc.progress = op_par_rank() == 0 ? ctx : NULL;
    tc.slots = (int)s->slots;
    tc.heuristics = s->heuristics;
    tc.explore = s->explore;
    tc.unit_target = (int)s->units;
    tc.comm_from_reference = s->comm_from_ref;
    tc.mem_from_reference = s->mem_from_ref;
    if (s->weights) {
        tc.iterations = s->finetune;
        tc.budget_seconds = ctx->budget_seconds;
    } else {
        tc.iterations = s->iterations;
        tc.budget_seconds = ctx->budget_seconds > 0 ? ctx->budget_seconds
                                                    : (s->iterations > 0 ? 0 : 60);
    }
    return tc;
}

/* ------------------------------------------------ priority orders (beyond the paper) */

static op_status measure_placement(const op_problem *p, op_sim *sim, op_sim_result *r,
                                   const op_placement *pl, const trinity_reward_config *rc,
                                   trinity_metrics *m, op_error *err)
{
    op_status st = op_sim_run(sim, pl, r, NULL, err);
    if (!st)
        *m = trinity_measure(p, r, rc);
    return st;
}

/* The ordered candidate c replaces the current result cur: strictly faster,
 * and no higher than the unordered result base on communication, memory
 * and OOM (so the ordered result is never worse on any of them). */
static int order_accepted(const trinity_metrics *c, const trinity_metrics *cur,
                          const trinity_metrics *base)
{
    return c->step_us < cur->step_us && c->peak_comm <= base->peak_comm &&
           c->peak_mem <= base->peak_mem && c->oom <= base->oom;
}

/* out becomes a copy of cand (devices and order), keeping out's name. */
static op_status keep_order(op_placement *out, const op_placement *cand, op_error *err)
{
    op_placement kept;
    if (op_placement_copy(&kept, cand, err))
        return OP_ENOMEM;
    if (out->algorithm && op_placement_set_algorithm(&kept, out->algorithm, err)) {
        op_placement_destroy(&kept);
        return OP_ENOMEM;
    }
    op_placement_destroy(out);
    *out = kept;
    return OP_OK;
}

/* out holds the search's result (no order); *m receives its final metrics. */
static op_status try_schedule_orders(const op_place_ctx *ctx, const trinity_reward_config *rc,
                                     const trinity_reference *ref, op_placement *out,
                                     trinity_metrics *m, op_error *err)
{
    const op_problem *p = ctx->p;
    op_sim *sim = op_sim_new(p, err);
    if (!sim)
        return err && err->code ? err->code : OP_ENOMEM;
    op_sim_result r;
    op_placement cand;
    memset(&cand, 0, sizeof cand);
    op_status st = op_sim_result_init(&r, p, err);
    if (st) {
        op_sim_free(sim);
        return st;
    }
    st = op_placement_init(&cand, p->n, p->nd, err);
    trinity_metrics base, cur;
    if (!st)
        st = measure_placement(p, sim, &r, out, rc, &base, err);
    cur = base;
    char how[96] = "";
    const int *ref_dev = ref ? ref->device_of : NULL;
    if (ref_dev && !memcmp(ref_dev, out->device_of, (size_t)p->n * sizeof(int)))
        ref_dev = NULL; /* the result is the reference: nothing more to try */
    const int *bases[2] = {NULL, ref_dev};
    int *result_dev = op_malloc((size_t)p->n * sizeof(int) + 1, err);
    if (!st && !result_dev)
        st = OP_ENOMEM;
    if (!st) {
        memcpy(result_dev, out->device_of, (size_t)p->n * sizeof(int));
        bases[0] = result_dev;
    }
    int64_t *cap = op_malloc(((size_t)p->nd + 1) * sizeof *cap, err);
    if (!st && !cap)
        st = OP_ENOMEM;
    /* caps: none, then fractions of the unordered peak (the acceptance
     * compares the peak over devices, so every device may reach it; the
     * tighter caps make room for tensors received beyond the cap) */
    static const double cap_share[] = {0, 1.0, 0.95, 0.9};
    enum { N_CAPS = sizeof cap_share / sizeof cap_share[0] };
    for (int v = 0; !st && v < 2 * N_CAPS; v++) {
        int b = v / N_CAPS, capped = cap_share[v % N_CAPS] > 0;
        if (!bases[b])
            continue;
        for (int d = 0; capped && d < p->nd; d++)
            cap[d] = (int64_t)((double)base.peak_mem * cap_share[v % N_CAPS]);
        for (int k = OP_PRIORITY_FIFO + 1; !st && k < OP_PRIORITY_COUNT; k++) {
            trinity_metrics c;
            memcpy(cand.device_of, bases[b], (size_t)p->n * sizeof(int));
            if ((st = op_placement_order_by_priority(p, &cand, (op_priority)k,
                                                     capped ? cap : NULL, err)) ||
                (st = measure_placement(p, sim, &r, &cand, rc, &c, err)))
                break;
            if (!order_accepted(&c, &cur, &base))
                continue;
            st = keep_order(out, &cand, err);
            cur = c;
            if (capped)
                snprintf(how, sizeof how, "%s, memory cap %.0f%% of %.2f GiB%s",
                         op_priority_name((op_priority)k), 100 * cap_share[v % N_CAPS],
                         (double)base.peak_mem / 1073741824.0, b ? ", on the reference" : "");
            else
                snprintf(how, sizeof how, "%s%s", op_priority_name((op_priority)k),
                         b ? ", on the reference" : "");
        }
    }
    free(cap);
    if (!st) {
        if (how[0])
            op_progress(ctx,
                        "trinity: schedule order %s: %.3f ms (first-ready-first %.3f ms), peak "
                        "memory %.2f GiB",
                        how, cur.step_us / 1000.0, base.step_us / 1000.0,
                        (double)cur.peak_mem / 1073741824.0);
        else
            op_progress(ctx, "trinity: no schedule order beats first-ready-first (%.3f ms)",
                        base.step_us / 1000.0);
        *m = cur;
    }
    free(result_dev);
    op_placement_destroy(&cand);
    op_sim_result_destroy(&r);
    op_sim_free(sim);
    return st;
}

static op_status train_and_place(const op_place_ctx *ctx, const trinity_opts *s,
                                 trinity_policy *pol, op_placement *out, op_error *err)
{
    trinity_train_config tc = train_config(ctx, s);
    int training = !s->weights || s->finetune > 0;
    const op_problem *probs[1] = {ctx->p};
    trinity_trainer *t = trinity_trainer_new(pol, probs, 1, &tc, err);
    if (!t)
        return err && err->code ? err->code : OP_ENOMEM;
    op_status st = OP_OK;
    if (training)
        st = trinity_trainer_run(t, err);
    if (!st)
        st = trinity_trainer_evaluate(t, 0, (int)s->samples, err);
    if (!st && training && s->save && op_par_rank() == 0)
        st = trinity_policy_save(pol, s->save, err);
    if (!st) {
        trinity_best b = trinity_trainer_best(t, 0);
        trinity_train_stats ts = trinity_trainer_stats(t);
        const trinity_reference *ref = trinity_trainer_reference(t, 0);
        trinity_reward_config rc = trinity_trainer_reward(t, 0);
        memcpy(out->device_of, b.device_of, (size_t)ctx->p->n * sizeof(int));
        op_placement_drop_order(out);
        trinity_metrics fm = b.m; /* the result's, ordered or not */
        if (s->schedule_orders)
            st = try_schedule_orders(ctx, &rc, ref, out, &fm, err);
        if (!st && ref)
            op_progress(ctx,
                        "trinity: reference %s %.3f ms, peak communication %.1f MiB, peak "
                        "memory %.2f GiB; tolerances %.1f MiB, %.2f GiB",
                        ref->name, ref->m.step_us / 1000.0, (double)ref->m.peak_comm / 1048576.0,
                        (double)ref->m.peak_mem / 1073741824.0, rc.max_comm_bytes / 1048576.0,
                        rc.max_mem_bytes / 1073741824.0);
        if (!st)
            op_progress(ctx,
                        "trinity: runtime %.3f ms, peak communication %.1f MiB, peak memory "
                        "%.2f GiB (%ld iterations, %ld rollouts, %.1f s + %.1f s set-up)",
                        fm.step_us / 1000.0, (double)fm.peak_comm / 1048576.0,
                        (double)fm.peak_mem / 1073741824.0, ts.iterations, ts.rollouts,
                        ts.seconds, ts.setup_seconds);
        if (!st && fm.oom && !ctx->best_effort)
            st = op_fail(err, OP_EINFEASIBLE,
                         "trinity: the best placement found runs out of memory "
                         "(train longer, or pass --best-effort)");
    }
    trinity_trainer_free(t);
    return st;
}

static op_status place_trinity(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    trinity_opts s;
    op_status st = read_opts(ctx->opts, &s, err);
    if (st)
        return st;
    trinity_policy *pol = make_policy(ctx, &s, err);
    if (!pol)
        return err && err->code ? err->code : OP_ENOMEM;
    st = train_and_place(ctx, &s, pol, out, err);
    trinity_policy_free(pol);
    return st;
}

const op_placer op_placer_trinity = {
    .name = "trinity",
    .summary = "learned partition (FFN) + seq2seq schedule (LSTM, attention) networks, PPO on "
               "runtime/communication/memory; --weights, --finetune N",
    .source = "Zhang et al., Trinity, Algorithms 2022 (sections 3-4)",
    .place = place_trinity,
    .slow = 1,
};
