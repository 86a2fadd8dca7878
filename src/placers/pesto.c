/*
 * pesto.c - the Pesto placer end to end (Hafeez et al., Middleware '21,
 * section 3): coarsen (3.3), solve the joint placement and scheduling ILP
 * on the coarse graph (3.2), expand back, judge with the simulator.
 *
 *   1. pesto_coarsen to --target coarse ops (default 40: the paper's 200 is
 *      for CPLEX on a workstation; CBC on 2 cores needs smaller graphs to
 *      finish in about a minute).
 *   2. Warm start: every fast registered placer named in --warm-start (those
 *      that exist) runs on the coarse graph; each result is simulated (with
 *      its simulated start times as the per-device order) and the best
 *      becomes CBC's MIP start.
 *   3. The ILP (pesto_ilp.c) with --time-limit seconds (default 40, or
 *      --budget-seconds).
 *   4. Candidates on the original graph, all judged by the simulator: the
 *      ILP's placement with its order (merged vertices expanded in
 *      topological order), the same placement with first-ready scheduling
 *      (the paper falls back to TensorFlow's scheduler when merged vertices
 *      are large), the warm start expanded, and the fast placers run on the
 *      original graph.  The best (no OOM first, then step time) is returned,
 *      so Pesto is never worse than its warm start or any of those placers.
 *   5. --export-tf-pesto DIR writes the TF-Pesto files (pesto_export.c).
 *
 * Options: --target N, --time-limit S, --congestion on|off (default on),
 * --memory hard|balanced|both|none (default hard), --balance SLACK
 * (default 0.2, for balanced), --max-pairs N (congestion pairs kept,
 * default 5000), --warm-start a,b,c, --export-tf-pesto DIR.  With
 * --progress it reports each candidate, the ILP's size, incumbent, bound
 * and gap on stderr.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coarsen/pesto_coarsen.h"
#include "opplace/simulate.h"
#include "placers/pesto_export.h"
#include "placers/pesto_ilp.h"

#define DEFAULT_WARM "m-etf,heft,m-sct,celeritas,m-topo,expert,metis,round-robin,single"

typedef struct pesto_cfg {
    long target;
    pesto_ilp_opts ilp;
    const char *warm_list, *export_dir;
} pesto_cfg;

typedef struct candidate {
    op_placement pl;
    int valid, oom;
    double step_us;
    char name[64];
} candidate;

static op_status read_cfg(const op_place_ctx *ctx, pesto_cfg *cfg, op_error *err)
{
    op_options *o = ctx->opts;
    pesto_ilp_default_opts(&cfg->ilp);
    double tl_default = ctx->budget_seconds > 0 ? ctx->budget_seconds : 40;
    long pairs;
    op_status st;
    if ((st = op_options_int(o, "target", 40, 1, 1L << 30, &cfg->target, err)) ||
        (st = op_options_double(o, "time-limit", tl_default, 0.01, 1e7, &cfg->ilp.time_limit_s,
                                err)) ||
        (st = op_options_double(o, "balance", 0.2, 0, 100, &cfg->ilp.balance, err)) ||
        (st = op_options_int(o, "max-pairs", cfg->ilp.max_xfer_pairs, 0, 1L << 40, &pairs, err)))
        return st;
    cfg->ilp.max_xfer_pairs = pairs;
    const char *cong = op_options_str(o, "congestion", "on");
    if (strcmp(cong, "on") != 0 && strcmp(cong, "off") != 0)
        return op_fail(err, OP_EUSAGE, "--congestion: expected on or off, got '%s'", cong);
    cfg->ilp.congestion = strcmp(cong, "on") == 0;
    const char *mem = op_options_str(o, "memory", "hard");
    if (strcmp(mem, "hard") == 0 || strcmp(mem, "none") == 0) {
        cfg->ilp.memory_cap = strcmp(mem, "hard") == 0;
        cfg->ilp.balance = -1;
    } else if (strcmp(mem, "balanced") == 0) {
        cfg->ilp.memory_cap = 0;
    } else if (strcmp(mem, "both") == 0) {
        cfg->ilp.memory_cap = 1;
    } else {
        return op_fail(err, OP_EUSAGE, "--memory: expected hard, balanced, both or none, got '%s'",
                       mem);
    }
    cfg->warm_list = op_options_str(o, "warm-start", DEFAULT_WARM);
    cfg->export_dir = op_options_str(o, "export-tf-pesto", NULL);
    return OP_OK;
}

static void summary(const op_place_ctx *ctx, const pesto_cfg *cfg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void summary(const op_place_ctx *ctx, const pesto_cfg *cfg, const char *fmt, ...)
{
    (void)cfg;
    if (!ctx || !ctx->progress)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Simulate pl on p; fills the candidate's score.  With finish != NULL the
 * per-op finish times are returned; with make_order the placement gets the
 * simulated start order when it has none. */
static op_status judge(const op_problem *p, op_sim *sim, candidate *c, double *finish,
                       int make_order, op_error *err)
{
    op_sim_result r;
    op_sim_trace t;
    op_status st = op_sim_result_init(&r, p, err);
    if (st)
        return st;
    if ((st = op_sim_trace_init(&t, p, err))) {
        op_sim_result_destroy(&r);
        return st;
    }
    st = op_sim_run(sim, &c->pl, &r, &t, err);
    if (!st) {
        c->step_us = r.step_time_us;
        c->oom = r.oom;
        c->valid = 1;
        if (finish)
            memcpy(finish, t.finish_us, (size_t)p->n * sizeof *finish);
        if (make_order && !c->pl.has_order) {
            int *seq = op_malloc((size_t)p->n * sizeof *seq + 1, err);
            if (!seq) {
                st = OP_ENOMEM;
            } else {
                /* insertion by start time keeps it simple; n is coarse-sized */
                for (int i = 0; i < p->n; i++) {
                    int k = i;
                    while (k > 0 && (t.start_us[seq[k - 1]] > t.start_us[i] ||
                                     (t.start_us[seq[k - 1]] == t.start_us[i] &&
                                      p->g->topo_pos[seq[k - 1]] > p->g->topo_pos[i]))) {
                        seq[k] = seq[k - 1];
                        k--;
                    }
                    seq[k] = i;
                }
                st = op_placement_set_order_from_sequence(&c->pl, seq, err);
                free(seq);
            }
        }
    }
    op_sim_trace_destroy(&t);
    op_sim_result_destroy(&r);
    return st;
}

static int better(const candidate *a, const candidate *b)
{
    if (!b->valid)
        return a->valid;
    if (!a->valid)
        return 0;
    if (a->oom != b->oom)
        return !a->oom;
    return a->step_us < b->step_us;
}

/* Run one registered placer on p with default options. */
static op_status run_heuristic(const op_placer *pl, const op_place_ctx *ctx, const op_problem *p,
                               candidate *c, op_error *err)
{
    op_options *opts = op_options_new(err);
    if (!opts)
        return OP_ENOMEM;
    op_place_ctx sub = {.p = p, .opts = opts, .seed = ctx->seed, .best_effort = 1};
    op_status st = op_place(pl, &sub, &c->pl, err);
    op_options_free(opts);
    snprintf(c->name, sizeof c->name, "%s", pl->name);
    return st;
}

/* Try every listed fast placer on p; keep the best in *best (simulated,
 * with an order).  best_finish receives its simulated finish times. */
static op_status best_heuristic(const pesto_cfg *cfg, const op_place_ctx *ctx, const op_problem *p,
                                op_sim *sim, const char *label, candidate *best,
                                double *best_finish, op_error *err)
{
    char list[512];
    snprintf(list, sizeof list, "%s", cfg->warm_list);
    double *finish = op_malloc((size_t)p->n * sizeof *finish + 1, err);
    if (!finish)
        return OP_ENOMEM;
    op_status st = OP_OK;
    char *save = NULL;
    for (char *name = strtok_r(list, ",", &save); name && !st;
         name = strtok_r(NULL, ",", &save)) {
        const op_placer *pl = op_placer_find(name);
        if (!pl || pl->slow || strcmp(pl->name, "pesto") == 0)
            continue;
        candidate c = {0};
        op_error local = {0};
        if (run_heuristic(pl, ctx, p, &c, &local)) {
            summary(ctx, cfg, "pesto: %s on the %s graph failed: %s", name, label, local.msg);
            continue;
        }
        st = judge(p, sim, &c, finish, 1, err);
        if (!st)
            summary(ctx, cfg, "pesto: %s on the %s graph: %.1f us%s", name, label, c.step_us,
                    c.oom ? " (OOM)" : "");
        if (!st && better(&c, best)) {
            op_placement_destroy(&best->pl);
            *best = c;
            if (best_finish)
                memcpy(best_finish, finish, (size_t)p->n * sizeof *finish);
        } else {
            op_placement_destroy(&c.pl);
        }
    }
    free(finish);
    return st;
}

static void keep_if_better(candidate *best, candidate *c)
{
    if (better(c, best)) {
        op_placement_destroy(&best->pl);
        *best = *c;
    } else {
        op_placement_destroy(&c->pl);
    }
    memset(c, 0, sizeof *c);
}

/* Expand a coarse placement to the original graph, with and without its
 * order, and keep the better of the two in *best. */
static op_status consider_expanded(const op_place_ctx *ctx, const op_coarse_map *map,
                                   const op_problem *p, op_sim *sim,
                                   const op_placement *coarse, const char *name, candidate *best,
                                   op_error *err)
{
    candidate c = {0};
    op_status st = op_coarse_expand(map, p->g, coarse, &c.pl, err);
    if (st)
        return st;
    snprintf(c.name, sizeof c.name, "%s+order", name);
    candidate free_order = {0};
    if ((st = op_placement_copy(&free_order.pl, &c.pl, err)))
        goto fail;
    op_placement_drop_order(&free_order.pl);
    snprintf(free_order.name, sizeof free_order.name, "%s", name);
    if ((st = judge(p, sim, &c, NULL, 0, err)) || (st = judge(p, sim, &free_order, NULL, 0, err))) {
        op_placement_destroy(&free_order.pl);
        goto fail;
    }
    op_progress(ctx, "pesto: %s expanded: %.1f us with its order, %.1f us first-ready", name,
                c.step_us, free_order.step_us);
    keep_if_better(best, &c);
    keep_if_better(best, &free_order);
    return OP_OK;
fail:
    op_placement_destroy(&c.pl);
    return st;
}

typedef struct pesto_run {
    op_coarse_map map;
    op_problem cp;
    int cp_ok;
    op_sim *csim, *fsim;
    candidate warm, best;
    double *warm_finish;
    pesto_ilp_result ilp;
} pesto_run;

static void run_destroy(pesto_run *r)
{
    op_placement_destroy(&r->warm.pl);
    op_placement_destroy(&r->best.pl);
    pesto_ilp_result_destroy(&r->ilp);
    free(r->warm_finish);
    op_sim_free(r->csim);
    op_sim_free(r->fsim);
    if (r->cp_ok)
        op_problem_destroy(&r->cp);
    op_coarse_map_destroy(&r->map);
}

static op_status solve_coarse(const pesto_cfg *cfg, const op_place_ctx *ctx, pesto_run *r,
                              op_error *err)
{
    const op_problem *p = ctx->p;
    pesto_coarsen_stats cs;
    op_status st = pesto_coarsen(p, (int)cfg->target, &r->map, &cs, err);
    if (st)
        return st;
    summary(ctx, cfg, "pesto: coarsened %d ops to %d in %d batches (%d pairs merged)", p->n,
            r->map.coarse->n_ops, cs.iterations, cs.merged);
    if ((st = op_problem_init(&r->cp, r->map.coarse, p->c, err)))
        return st;
    r->cp_ok = 1;
    if (!(r->csim = op_sim_new(&r->cp, err)))
        return OP_ENOMEM;
    if (!(r->warm_finish = op_malloc((size_t)r->cp.n * sizeof *r->warm_finish + 1, err)))
        return OP_ENOMEM;
    if ((st = best_heuristic(cfg, ctx, &r->cp, r->csim, "coarse", &r->warm, r->warm_finish, err)))
        return st;
    if (r->warm.valid)
        summary(ctx, cfg, "pesto: warm start %s: %.1f us on the coarse graph", r->warm.name,
                r->warm.step_us);
    pesto_ilp_opts ilp = cfg->ilp;
    if (r->warm.valid && !r->warm.oom && ilp.memory_cap == 1 &&
        !pesto_ilp_memory_ok(&r->cp, r->warm.pl.device_of, &ilp)) {
        /* the static param + output sum rejects a placement the simulator
         * says fits: too conservative for this graph, keep params only */
        ilp.memory_cap = 2;
        summary(ctx, cfg, "pesto: the param+output memory bound rejects the warm start that fits; "
                "using param bytes only");
    }
    return pesto_ilp_solve(&r->cp, &ilp, r->warm.valid ? &r->warm.pl : NULL,
                           r->warm.valid ? r->warm_finish : NULL, ctx, &r->ilp, err);
}

static op_status place_pesto(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    const op_problem *p = ctx->p;
    pesto_cfg cfg;
    op_status st = read_cfg(ctx, &cfg, err);
    if (st)
        return st;
    pesto_run r;
    memset(&r, 0, sizeof r);
    if ((st = solve_coarse(&cfg, ctx, &r, err)))
        goto done;
    if (!(r.fsim = op_sim_new(p, err))) {
        st = OP_ENOMEM;
        goto done;
    }
    if (r.ilp.status == PESTO_OPTIMAL || r.ilp.status == PESTO_FEASIBLE) {
        op_placement ilp_pl;
        if ((st = pesto_ilp_to_placement(&r.cp, &r.ilp, &ilp_pl, err)))
            goto done;
        st = consider_expanded(ctx, &r.map, p, r.fsim, &ilp_pl, "ilp", &r.best, err);
        op_placement_destroy(&ilp_pl);
        if (st)
            goto done;
    }
    if (r.warm.valid &&
        (st = consider_expanded(ctx, &r.map, p, r.fsim, &r.warm.pl, r.warm.name, &r.best, err)))
        goto done;
    if ((st = best_heuristic(&cfg, ctx, p, r.fsim, "original", &r.best, NULL, err)))
        goto done;
    if (!r.best.valid) {
        st = op_fail(err, OP_EINFEASIBLE, "pesto: neither the ILP nor any heuristic produced a "
                     "placement");
        goto done;
    }
    summary(ctx, &cfg, "pesto: result from %s: %.1f us (ILP incumbent %.1f us, bound %.1f us, "
            "gap %.2f%% on the coarse model)", r.best.name, r.best.step_us, r.ilp.objective,
            r.ilp.bound, 100 * r.ilp.gap);
    if (r.best.oom && !ctx->best_effort) {
        st = op_fail(err, OP_EINFEASIBLE, "pesto: no placement found fits in device memory "
                     "(try --best-effort)");
        goto done;
    }
    if (cfg.export_dir && (st = pesto_export_tf(p->g, p->c, &r.best.pl, cfg.export_dir, err)))
        goto done;
    memcpy(out->device_of, r.best.pl.device_of, (size_t)p->n * sizeof *out->device_of);
    if (r.best.pl.has_order) {
        if ((st = op_placement_alloc_order(out, err)))
            goto done;
        memcpy(out->order_off, r.best.pl.order_off, ((size_t)p->nd + 1) * sizeof *out->order_off);
        memcpy(out->order, r.best.pl.order, (size_t)p->n * sizeof *out->order);
        out->has_order = 1;
    }
done:
    run_destroy(&r);
    return st;
}

const op_placer op_placer_pesto = {
    .name = "pesto",
    .summary = "coarsen + joint placement/scheduling ILP (CBC) with congestion and memory, "
               "warm-started from the best fast placer",
    .source = "Pesto (Middleware '21) section 3",
    .place = place_pesto,
    .slow = 1,
};
