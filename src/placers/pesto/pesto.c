/*
 * pesto.c - the Pesto placer (Hafeez et al., Middleware '21, section 3):
 * joint placement and scheduling with an integer program solved by CBC,
 * started from the answer of `auto` and bounded by one wall-clock budget.
 *
 *   1. Budget: --budget-seconds (default 60) bounds the whole placer; the
 *      caller's ctx->deadline wins when set.  Every stage polls it and
 *      Ctrl-C (op_interrupted); CBC runs in a child process that is killed
 *      at either (solve/lp.c), so the best placement so far is returned
 *      within a fraction of a second.
 *   2. Incumbent: the `auto` placer (portfolio + local search; the one
 *      portfolio, pesto runs no other) with --auto-seconds (default three
 *      quarters of the budget: auto's answer improves with its time, and
 *      the LNS polishes it; with a quarter, pesto lost to auto at the same
 *      budget on 3 of 5 graphs: bench/RESULTS.md, "Pesto").  Pesto is never
 *      worse than its own incumbent (auto with that share of the budget),
 *      not always as good as auto given the whole budget; `algorithm` names
 *      the stages that changed the answer after auto: pesto:auto (none),
 *      pesto:ilp-lns, pesto:refine, pesto:ilp-lns+refine, pesto:ilp-coarse.
 *   3. --stage lns (the default): large-neighbourhood search on the
 *      original graph (pesto_lns.c): windows (8..120 ops, sized by what
 *      CBC solves in its time) around the links of the incumbent's critical
 *      chain that can shrink are re-placed and re-ordered exactly by CBC,
 *      kept when the simulator agrees.  While CBC solves in its child, the
 *      parent refines a copy of the incumbent (track_idle: as auto
 *      refines, stopped when CBC answers); after each window the better
 *      of the two becomes both (track_sync).  --refine-seconds 0 turns
 *      that off.
 *   4. --stage coarse: the paper's pipeline.  pesto_coarsen to --target
 *      coarse ops (default 40) keeping the critical path (slack
 *      PESTO_DEFAULT_CP_SLACK = 0, grown only when the coarsening stalls),
 *      only merging ops the incumbent puts on one device (beyond the
 *      paper, whose coarsening is unaligned), so the coarse graph expresses
 *      the incumbent exactly; the incumbent projected onto it, in its own
 *      order (pesto_project_order) or first-ready, whichever the coarse
 *      simulation ranks first, is CBC's MIP start; the ILP (pesto_ilp.c)
 *      runs until the deadline on the per-source communication model (one
 *      transfer per coarse source and destination device);
 *      its answer is expanded (with its order and first-ready) and judged
 *      by the simulator.  --stage both runs coarse on half of what is left,
 *      then the LNS.
 *   5. --export-tf-pesto DIR writes the TF-Pesto files (pesto_export.c).
 *
 * Coarse-ILP: --memory hard|balanced|both|none (default hard: the sound
 * necessary rows of pesto_ilp.c; balanced uses a load slack of 0.2);
 * congestion rows are always on, with at most pesto_ilp_default_opts's
 * 5000 transfer pairs (the rest reported as dropped), and ILPs above 10000
 * binaries are skipped.  With --progress each stage reports on stderr.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "placers/pesto/pesto_coarsen.h"
#include "opplace/search.h"
#include "opplace/simulate.h"
#include "placers/pesto/pesto_export.h"
#include "search/search_internal.h"
#include "solve/pesto_ilp.h"
#include "placers/pesto/pesto_lns.h"

#define DEFAULT_BUDGET_S 60.0

typedef struct pesto_cfg {
    long target;
    double cp_slack;
    pesto_ilp_opts ilp;
    const char *export_dir;
    int comm_model; /* 1: per-source transfers (pesto_coarse_comm); 0: one per coarse edge */
    int align;      /* coarsen within the reference placement's devices */
    double budget;  /* seconds for the whole placer */
    double auto_s;  /* budget of the `auto` placer that gives the incumbent */
    int lns, coarse; /* stages */
    int refine_beside; /* refinement on the other core while CBC solves (track_idle) */
    pesto_lns_opts lns_opts;
} pesto_cfg;

typedef struct candidate {
    op_placement pl;
    int valid, oom;
    double step_us, overflow; /* overflow: bytes above capacity, summed */
    char name[64];
} candidate;

static op_status read_cfg(const op_place_ctx *ctx, pesto_cfg *cfg, op_error *err)
{
    op_options *o = ctx->opts;
    memset(cfg, 0, sizeof *cfg);
    pesto_ilp_default_opts(&cfg->ilp);
    cfg->budget = ctx->budget_seconds > 0 ? ctx->budget_seconds : DEFAULT_BUDGET_S;
    /* The coarse ILP's tuning is fixed (not user options): load-balance
     * slack 0.2 of --memory balanced|both, the coarsening's critical-path
     * slack PESTO_DEFAULT_CP_SLACK, pesto_ilp_default_opts's caps on
     * transfer pairs and binaries, congestion rows on, the per-source
     * communication model, and coarsening aligned with the incumbent. */
    cfg->ilp.balance = 0.2;
    cfg->cp_slack = PESTO_DEFAULT_CP_SLACK;
    cfg->ilp.congestion = 1;
    cfg->comm_model = 1;
    cfg->align = 1;
    op_status st;
    if ((st = op_options_int(o, "target", 40, 1, 1L << 30, &cfg->target, err)) ||
        (st = op_options_double(o, "auto-seconds", 0.75 * cfg->budget, 0, 1e7, &cfg->auto_s,
                                err)))
        return st;
    double beside;
    if ((st = op_options_double(o, "refine-seconds", 1, 0, 1e9, &beside, err)))
        return st;
    cfg->refine_beside = beside > 0;
    /* the coarse ILP runs to the deadline; the LNS sizes its windows itself
     * (pesto_lns_default_opts) */
    cfg->ilp.time_limit_s = cfg->budget;
    pesto_lns_default_opts(&cfg->lns_opts);
    const char *stage = op_options_str(o, "stage", "lns");
    cfg->lns = strcmp(stage, "lns") == 0 || strcmp(stage, "both") == 0;
    cfg->coarse = strcmp(stage, "coarse") == 0 || strcmp(stage, "both") == 0;
    if (!cfg->lns && !cfg->coarse)
        return op_fail(err, OP_EUSAGE, "--stage: expected lns, coarse or both, got '%s'", stage);
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
    cfg->export_dir = op_options_str(o, "export-tf-pesto", NULL);
    return OP_OK;
}

/* Simulate pl on p; fills the candidate's score.  With finish != NULL the
 * per-op finish times are returned; with make_order the placement gets the
 * simulated start order when it has none. */
static op_status judge(const op_problem *p, op_sim *sim, candidate *c, double *finish,
                       int make_order, op_error *err)
{
    double *start = op_malloc((size_t)p->n * sizeof *start + 1, err);
    if (!start)
        return OP_ENOMEM;
    op_status st = pesto_simulate(p, sim, &c->pl, start, finish, &c->step_us, &c->overflow,
                                  &c->oom, err);
    if (!st) {
        c->valid = 1;
        if (make_order && !c->pl.has_order) {
            int *seq = op_malloc((size_t)p->n * sizeof *seq + 1, err);
            if (!seq) {
                st = OP_ENOMEM;
            } else {
                /* insertion by start time keeps it simple; n is coarse-sized */
                for (int i = 0; i < p->n; i++) {
                    int k = i;
                    while (k > 0 && (start[seq[k - 1]] > start[i] ||
                                     (start[seq[k - 1]] == start[i] &&
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
    free(start);
    return st;
}

static int better(const candidate *a, const candidate *b)
{
    if (!b->valid)
        return a->valid;
    if (!a->valid)
        return 0;
    return op_sim_ranks_before(a->overflow, a->step_us, b->overflow, b->step_us);
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
    int *xfer_count;
    int64_t *xfer_bytes;
    pesto_ilp_result ilp;
} pesto_run;

static void run_destroy(pesto_run *r)
{
    op_placement_destroy(&r->warm.pl);
    op_placement_destroy(&r->best.pl);
    pesto_ilp_result_destroy(&r->ilp);
    free(r->warm_finish);
    free(r->xfer_count);
    free(r->xfer_bytes);
    op_sim_free(r->csim);
    op_sim_free(r->fsim);
    if (r->cp_ok)
        op_problem_destroy(&r->cp);
    op_coarse_map_destroy(&r->map);
}

/* The reference placement projected onto the coarse graph (exact when the
 * coarsening was aligned with it), as a warm-start candidate: once in the
 * reference's order (pesto_project_order of its simulated starts, when
 * given) and once first-ready; the better one is kept. */
static op_status project_reference(const op_place_ctx *ctx, pesto_run *r, const candidate *ref,
                                   const double *ref_start, double *finish, op_error *err)
{
    op_status st = OP_OK;
    for (int ordered = ref_start ? 1 : 0; ordered >= 0 && !st; ordered--) {
        candidate c = {0};
        if ((st = op_placement_init(&c.pl, r->cp.n, r->cp.nd, err)))
            return st;
        for (int i = 0; i < ctx->p->n; i++)
            c.pl.device_of[r->map.group_of[i]] = ref->pl.device_of[i];
        if (ordered) {
            int *seq = op_malloc((size_t)r->cp.n * sizeof *seq + 1, err);
            if (!seq || (st = pesto_project_order(&r->map, ref_start, seq, err)) ||
                (st = op_placement_set_order_from_sequence(&c.pl, seq, err))) {
                free(seq);
                op_placement_destroy(&c.pl);
                return st ? st : OP_ENOMEM;
            }
            free(seq);
        }
        snprintf(c.name, sizeof c.name, "%.30s (projected%s)", ref->name,
                 ordered ? ", its order" : ", first-ready");
        op_error local = {0};
        if (op_problem_check_placement(&r->cp, &c.pl, &local) == OP_OK &&
            !(st = judge(&r->cp, r->csim, &c, finish, 1, err))) {
            op_progress(ctx, "pesto: %s on the coarse graph: %.1f us (%+.2f%% of the original "
                        "%.1f us)%s", c.name, c.step_us,
                        ref->step_us > 0 ? 100 * (c.step_us / ref->step_us - 1) : 0.0,
                        ref->step_us, c.oom ? " (OOM)" : "");
            if (better(&c, &r->warm)) {
                op_placement_destroy(&r->warm.pl);
                r->warm = c;
                memcpy(r->warm_finish, finish, (size_t)r->cp.n * sizeof *finish);
                continue;
            }
        }
        op_placement_destroy(&c.pl);
    }
    return st;
}

static op_status solve_coarse(const pesto_cfg *cfg, const op_place_ctx *ctx, pesto_run *r,
                              const candidate *ref, const double *ref_start, op_error *err)
{
    const op_problem *p = ctx->p;
    pesto_coarsen_stats cs;
    const int *label = cfg->align && ref && ref->valid ? ref->pl.device_of : NULL;
    op_status st = pesto_coarsen_ex(p, (int)cfg->target, cfg->cp_slack, label, &r->map, &cs, err);
    if (!st && label && r->map.coarse->n_ops > 3 * cfg->target) {
        /* the reference's device regions are too fragmented to reach the
         * target: an ILP this size runs past its time limit in CBC's root */
        op_progress(ctx, "pesto: aligned coarsening stopped at %d ops; coarsening unaligned",
                    r->map.coarse->n_ops);
        op_coarse_map_destroy(&r->map);
        st = pesto_coarsen_ex(p, (int)cfg->target, cfg->cp_slack, NULL, &r->map, &cs, err);
    }
    if (st)
        return st;
    op_progress(ctx, "pesto: coarsened %d ops to %d in %d batches (%d pairs merged, "
                "critical-path slack %.2f)", p->n, r->map.coarse->n_ops, cs.iterations, cs.merged,
                cs.cp_slack);
    int ne = r->map.coarse->n_edges;
    r->xfer_count = op_malloc((size_t)ne * sizeof *r->xfer_count + 1, err);
    r->xfer_bytes = op_malloc((size_t)ne * sizeof *r->xfer_bytes + 1, err);
    if (!r->xfer_count || !r->xfer_bytes)
        return OP_ENOMEM;
    if ((st = pesto_coarse_comm(p->g, &r->map, r->xfer_count, r->xfer_bytes, err)))
        return st;
    if ((st = op_problem_init(&r->cp, r->map.coarse, p->c, err)))
        return st;
    r->cp_ok = 1;
    if (p->critical_path_us > 0 && r->cp.critical_path_us > 0) /* zero-time graphs: no ratio */
        op_progress(ctx, "pesto: compute critical path %.1f us of %.1f us work (parallelism "
                    "%.2f); the original's %.1f us (%.2f)", r->cp.critical_path_us,
                    r->cp.total_work_us, r->cp.total_work_us / r->cp.critical_path_us,
                    p->critical_path_us, p->total_work_us / p->critical_path_us);
    if (!(r->csim = op_sim_new(&r->cp, err)))
        return OP_ENOMEM;
    if (!(r->warm_finish = op_malloc((size_t)r->cp.n * sizeof *r->warm_finish + 1, err)))
        return OP_ENOMEM;
    if (ref && ref->valid) {
        double *finish = op_malloc((size_t)r->cp.n * sizeof *finish + 1, err);
        if (!finish)
            return OP_ENOMEM;
        st = project_reference(ctx, r, ref, ref_start, finish, err);
        free(finish);
        if (st)
            return st;
    }
    if (r->warm.valid)
        op_progress(ctx, "pesto: warm start %s: %.1f us on the coarse graph", r->warm.name,
                    r->warm.step_us);
    pesto_ilp_opts ilp = cfg->ilp;
    ilp.deadline = ctx->deadline;
    if (cfg->comm_model) {
        ilp.xfer_count = r->xfer_count;
        ilp.xfer_bytes = r->xfer_bytes;
    }
    return pesto_ilp_solve(&r->cp, &ilp, r->warm.valid ? &r->warm.pl : NULL,
                           r->warm.valid ? r->warm_finish : NULL, ctx, &r->ilp, err);
}

/* The incumbent: the `auto` placer with cfg->auto_s seconds. */
static op_status run_auto(const pesto_cfg *cfg, const op_place_ctx *ctx, op_sim *sim,
                          candidate *best, op_error *err)
{
    const op_placer *pl = op_placer_find("auto");
    if (!pl)
        return op_fail(err, OP_EINTERNAL, "pesto: the auto placer is not registered");
    op_options *opts = op_options_new(err);
    if (!opts)
        return OP_ENOMEM;
    op_status st = OP_OK; /* auto runs no ILP: pesto -> auto is the only direction */
    double until = op_seconds_now() + cfg->auto_s;
    op_place_ctx sub = {.p = ctx->p, .opts = opts, .seed = ctx->seed, .best_effort = 1,
                        .budget_seconds = cfg->auto_s > 0.01 ? cfg->auto_s : 0.01,
                        .deadline = until < ctx->deadline ? until : ctx->deadline,
                        .progress = 0};
    candidate c = {0};
    if (!st)
        st = op_place(pl, &sub, &c.pl, err);
    op_options_free(opts);
    if (!st) {
        snprintf(c.name, sizeof c.name, "auto");
        st = judge(ctx->p, sim, &c, NULL, 1, err);
    }
    if (!st) {
        op_progress(ctx, "pesto: incumbent from auto (%.1f s): %.1f us%s", cfg->auto_s,
                    c.step_us, c.oom ? " (OOM)" : "");
        keep_if_better(best, &c);
    }
    op_placement_destroy(&c.pl);
    return st;
}

/* The paper's pipeline on the incumbent: coarsen, solve, expand. */
static op_status coarse_stage(const pesto_cfg *cfg, const op_place_ctx *ctx, candidate *best,
                              op_sim *fsim, op_error *err)
{
    pesto_run r;
    memset(&r, 0, sizeof r);
    candidate ref = {0};
    op_status st = op_placement_copy(&ref.pl, &best->pl, err);
    if (st)
        return st;
    ref.valid = 1;
    ref.step_us = best->step_us;
    snprintf(ref.name, sizeof ref.name, "%s", best->name);
    /* the reference's order, carried onto the coarse graph by its starts */
    double *ref_start = op_malloc((size_t)ctx->p->n * sizeof *ref_start + 1, err);
    if (!ref_start) {
        st = OP_ENOMEM;
        goto done;
    }
    double ref_step, ref_over;
    st = pesto_simulate(ctx->p, fsim, &ref.pl, ref_start, NULL, &ref_step, &ref_over, NULL, err);
    if (!st)
        st = solve_coarse(cfg, ctx, &r, &ref, ref_start, err);
    free(ref_start);
    if (st)
        goto done;
    if (r.ilp.status == PESTO_OPTIMAL || r.ilp.status == PESTO_FEASIBLE) {
        op_placement ilp_pl;
        if ((st = pesto_ilp_to_placement(&r.cp, &r.ilp, &ilp_pl, err)))
            goto done;
        st = consider_expanded(ctx, &r.map, ctx->p, fsim, &ilp_pl, "ilp-coarse", best, err);
        op_placement_destroy(&ilp_pl);
    }
    op_progress(ctx, "pesto: coarse ILP %s: incumbent %.1f us, bound %.1f us, gap %.2f%% (of "
                "the coarse model, not the original graph)%s",
                r.ilp.status == PESTO_OPTIMAL ? "optimal" : "stopped", r.ilp.objective, r.ilp.bound,
                100 * r.ilp.gap, r.ilp.stopped ? "; cut short by the budget" : "");
done:
    op_placement_destroy(&ref.pl);
    run_destroy(&r);
    return st;
}

/* Refinement on the other core while CBC solves an LNS window
 * (pesto_lns_opts idle and sync).  CBC runs in a child process; rather
 * than wait, the parent refines its own copy of the incumbent as auto does
 * (op_finish: judged by the placement's best priority order) until CBC
 * answers.  The order it judges by
 * is screened once (track_prime), as auto does for its whole refinement,
 * not at every window: on a 15k-op graph the screening costs more than a
 * short window's solve.  After each window the better of the
 * two (the simulator's ranking) becomes both.  `line` records what
 * changed each of them since auto's answer, so the answer's `algorithm`
 * names every stage in its lineage. */
enum { LINE_COARSE = 1, LINE_ILP = 2, LINE_REFINE = 4 };

typedef struct track {
    op_place_ctx ctx; /* pesto's, quiet */
    op_sim *sim;
    op_placement pl;  /* the refinement's placement */
    double step, over;
    unsigned line, inc_line; /* of pl and of the LNS incumbent */
    uint64_t seed;
    int primed;              /* ord and fifo are set (from pl's starting point) */
    op_reorder_stats ord;    /* its order stage (the judge of the refinement) */
    op_judged fifo;          /* it, first-ready-first */
    int refined, adopted;    /* finishing calls that improved pl; times inc took pl */
    double seconds;          /* spent in track_idle */
    op_status st;            /* an error inside idle, returned by the next sync */
    op_error err;
} track;

/* The order stage on the track's starting point, and that point judged
 * first-ready-first: what op_finish would compute at every call; the
 * track's step and overflow are the order stage's result. */
static op_status track_prime(track *T)
{
    const op_problem *p = T->ctx.p;
    op_status st = op_placement_reorder_until(p, &T->pl, 0, T->ctx.deadline, &T->ord, &T->err);
    if (st)
        return st;
    const op_placement fifo = {.n_ops = p->n, .n_dev = p->nd, .device_of = T->pl.device_of};
    if ((st = pesto_simulate(p, T->sim, &fifo, NULL, NULL, &T->fifo.step, &T->fifo.over, NULL,
                             &T->err)))
        return st;
    T->primed = 1;
    if (T->ord.priority != OP_PRIORITY_FIFO) { /* a priority order beat pl's own: pl has it */
        T->line |= LINE_REFINE;
        T->refined++;
    }
    /* the order stage simulated pl as it left it */
    T->step = T->ord.final_us;
    T->over = T->ord.final_over;
    return OP_OK;
}

static void track_work(track *T, int (*answered)(void *), void *answered_arg)
{
    if (T->st || (!T->primed && (T->st = track_prime(T))))
        return;
    /* no order stage after the refinement: a refined placement carries the
     * order it was judged by, and the screening would cost each window */
    op_finish_opts fo = {.refine = 1,
                         .refine_opts = {.max_units = 2000, .seed = T->seed++,
                                         .stop = answered, .stop_arg = answered_arg},
                         .ordered = &T->ord, .is_ordered = 1, .fifo = T->fifo};
    op_stages stages = {{0}};
    double step, over;
    if ((T->st = op_finish(&T->ctx, &fo, &T->pl, &stages, NULL, &T->err)) ||
        (T->st = pesto_simulate(T->ctx.p, T->sim, &T->pl, NULL, NULL, &step, &over, NULL,
                                &T->err)))
        return;
    if (op_sim_ranks_before(over, step, T->over, T->step)) {
        T->line |= LINE_REFINE;
        T->refined++;
    }
    T->step = step;
    T->over = over;
}

static void track_idle(void *arg, int (*answered)(void *), void *answered_arg)
{
    track *T = arg;
    double t0 = op_seconds_now();
    track_work(T, answered, answered_arg);
    T->seconds += op_seconds_now() - t0;
}

/* After a window: the track's placement replaces the incumbent when it
 * ranks first; an incumbent a window improved restarts the track. */
static op_status track_sync(void *arg, op_placement *inc, double step, double over, int kept,
                            op_error *err)
{
    track *T = arg;
    if (T->st) {
        *err = T->err;
        return T->st;
    }
    if (kept)
        T->inc_line |= LINE_ILP;
    op_status st;
    op_placement copy;
    if (op_sim_ranks_before(T->over, T->step, over, step)) { /* the refinement is ahead */
        if ((st = op_placement_copy(&copy, &T->pl, err)))
            return st;
        op_placement_destroy(inc);
        *inc = copy;
        T->inc_line = T->line;
        T->adopted++;
        return OP_OK;
    }
    if (!kept)
        return OP_OK; /* level: the track goes on from where it is */
    if ((st = op_placement_copy(&copy, inc, err)))
        return st;
    op_placement_destroy(&T->pl);
    T->pl = copy;
    T->step = step;
    T->over = over;
    T->line = T->inc_line; /* the judge stays: a window changes little */
    return OP_OK;
}

static const op_opt_decl PESTO_OPTIONS[] = {
    {"target", OP_OPT_INT, 1, 1073741824.0, "40", NULL, "coarsen to about this many groups"},
    {"auto-seconds", OP_OPT_NUM, 0, 1e6, "3/4 of the budget", NULL,
     "time for the auto incumbent"},
    {"memory", OP_OPT_TEXT, 0, 0, "hard", "hard|balanced|both|none", "how the ILP keeps memory"},
    {"stage", OP_OPT_TEXT, 0, 0, "lns", "lns|coarse|both",
     "large-neighbourhood search on the graph, the coarse ILP, or both"},
    {"export-tf-pesto", OP_OPT_TEXT, 0, 0, NULL, NULL,
     "also write the problem for TF-Pesto into this folder"},
    {NULL, 0, 0, 0, NULL, NULL, NULL},
};

static op_status place_pesto(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    const op_problem *p = ctx->p;
    pesto_cfg cfg;
    op_status st = read_cfg(ctx, &cfg, err);
    if (st)
        return st;
    double t0 = op_seconds_now();
    op_place_ctx run = *ctx;
    /* the whole placer ends by the deadline; keep a little for the answer */
    double end = ctx->deadline > 0 ? ctx->deadline : t0 + cfg.budget;
    double margin = 0.02 * (end - t0) < 0.5 ? 0.02 * (end - t0) : 0.5;
    run.deadline = end - margin;
    candidate best = {0};
    op_sim *fsim = op_sim_new(p, err);
    if (!fsim)
        return OP_ENOMEM;
    if ((st = run_auto(&cfg, &run, fsim, &best, err)))
        goto done;
    if (!best.valid) {
        st = op_fail(err, OP_EINFEASIBLE, "pesto: auto produced no placement");
        goto done;
    }
    double auto_step = best.step_us;
    /* done when proven: auto's answer reaches the bound (opplace/problem.h) */
    int proven = op_problem_at_bound(p, best.step_us, best.overflow);
    if (proven)
        op_progress(ctx, "pesto: auto's answer reaches the proven bound (%s): optimal",
                    p->proven_method);
    if (!proven && cfg.coarse && op_seconds_left(&run) > 0.1) {
        op_place_ctx sub = run;
        if (cfg.lns) /* both: the coarse ILP gets half of what is left */
            sub.deadline = op_seconds_now() + 0.5 * op_seconds_left(&run);
        if ((st = coarse_stage(&cfg, &sub, &best, fsim, err)))
            goto done;
        if (best.valid && strcmp(best.name, "auto") != 0)
            snprintf(best.name, sizeof best.name, "ilp-coarse");
    }
    if (!proven && cfg.lns && op_seconds_left(&run) > 0.1) {
        pesto_lns_opts lo = cfg.lns_opts;
        lo.deadline = run.deadline;
        track T = {.ctx = run, .sim = fsim, .step = best.step_us, .over = best.overflow,
                   .seed = ctx->seed + 1};
        T.ctx.progress = 0;
        T.line = T.inc_line = strcmp(best.name, "ilp-coarse") == 0 ? LINE_COARSE : 0;
        if (cfg.refine_beside) {
            if ((st = op_placement_copy(&T.pl, &best.pl, err)))
                goto done;
            lo.idle = track_idle;
            lo.sync = track_sync;
            lo.arg = &T;
        }
        pesto_lns_stats ls;
        double step = best.step_us, over = best.overflow, lns_t0 = op_seconds_now();
        st = pesto_lns(&run, fsim, &lo, &best.pl, &step, &over, &ls, err);
        op_placement_destroy(&T.pl);
        if (st)
            goto done;
        if (!cfg.refine_beside && ls.improved > 0)
            T.inc_line |= LINE_ILP;
        if (T.inc_line & (LINE_ILP | LINE_REFINE)) {
            best.step_us = step;
            best.overflow = over;
            best.oom = over > 0;
            snprintf(best.name, sizeof best.name, "%s%s%s%s",
                     T.inc_line & LINE_COARSE ? "ilp-coarse+" : "",
                     T.inc_line & LINE_ILP ? "ilp-lns" : "",
                     (T.inc_line & LINE_ILP) && (T.inc_line & LINE_REFINE) ? "+" : "",
                     T.inc_line & LINE_REFINE ? "refine" : "");
        }
        op_progress(ctx, "pesto: LNS %d windows (%d optimal, %d kept, %d optimal at the "
                    "incumbent): %.1f -> %.1f us; %d below the incumbent in the model, not in "
                    "the simulator%s", ls.windows, ls.optimal, ls.improved, ls.at_incumbent,
                    ls.first_step_us, ls.step_us, ls.rejected,
                    ls.proven ? "; the result is proven optimal" : "");
        if (cfg.refine_beside)
            op_progress(ctx, "pesto: refinement beside CBC (%.1f s of the LNS's %.1f s) improved "
                        "its copy %d times, taken over by the search %d times", T.seconds,
                        op_seconds_now() - lns_t0, T.refined, T.adopted);
    }
    op_progress(ctx, "pesto: result from %s: %.1f us (auto %.1f us), %.1f s of %.1f s",
                best.name, best.step_us, auto_step, op_seconds_now() - t0, end - t0);
    if (best.oom && !ctx->best_effort) {
        st = op_fail(err, OP_EINFEASIBLE, "pesto: no placement found fits in device memory "
                     "(try --best-effort)");
        goto done;
    }
    if (cfg.export_dir && (st = pesto_export_tf(p->g, p->c, &best.pl, cfg.export_dir, err)))
        goto done;
    memcpy(out->device_of, best.pl.device_of, (size_t)p->n * sizeof *out->device_of);
    if (best.pl.has_order) {
        if ((st = op_placement_alloc_order(out, err)))
            goto done;
        memcpy(out->order_off, best.pl.order_off, ((size_t)p->nd + 1) * sizeof *out->order_off);
        memcpy(out->order, best.pl.order, (size_t)p->n * sizeof *out->order);
        out->has_order = 1;
    }
    char name[96];
    snprintf(name, sizeof name, "pesto:%s", best.name);
    st = op_placement_set_algorithm(out, name, err);
done:
    op_placement_destroy(&best.pl);
    op_sim_free(fsim);
    return st;
}

const op_placer op_placer_pesto = {
    .name = "pesto",
    .summary = "joint placement/scheduling ILP (CBC) on windows of auto's answer, or coarsened",
    .source = "Pesto (Middleware '21) section 3",
    .place = place_pesto,
    .slow = 1,
    .options = PESTO_OPTIONS,
};
