/*
 * celeritas.c - the Celeritas placers:
 *   dfs-topo     Standard Evaluation's second step (section 4.2): the
 *                memory-bounded sequential placement of the DFS-TOPO order
 *                of the original graph;
 *   order-place  Order-Place (sections 5.2 and 6.2): Optimal Operation
 *                Fusion, then the same sequential placement of the fused
 *                graph in CPD-TOPO order;
 *   celeritas    Optimal Operation Fusion, then Adjusting Placement
 *                (Algorithm 2) of the fused graph in CPD-TOPO order.
 * The fused placers map the coarse placement back with op_coarse_expand.
 *
 * Options: --fusion-range R (celeritas_fusion.h; M is fixed at a quarter of
 * the smallest device's memory, the paper's choice).  The
 * planned schedule is not handed to the simulator as the per-device order
 * (pass_to_fine's `schedule`, kept off): on the zoo first-ready-first was
 * as good or better (bench/RESULTS.md).
 *
 * The guard (celeritas, always on unless --paper): the paper proves each
 * step of Adjusting Placement no worse than Order-Place in its own cost
 * model, but the simulator (channel contention, first-ready order)
 * disagrees on some graphs (tests/test_celeritas.c prints them); the guard
 * also runs Order-Place on the same fused graph and keeps whichever the
 * simulator finds faster (an OOM-free one first).
 *
 * --paper (celeritas only): exactly the paper's method, none of the
 * additions below: Algorithm 2 alone (no guard), the paper's
 * contention-free EST only, the paper's best-effort fallback alone (no
 * balanced retry), no priority orders, and a fixed R (--fusion-range,
 * default 200) instead of the range search.  (These were the options
 * --guard 0, --contention 0, --balanced-fallback 0 and --order none.)
 *
 * Choosing R by simulation (celeritas only; departs from the paper's fixed
 * R = 200, which the paper itself calls a parameter chosen empirically):
 * without --fusion-range (or --target), celeritas fuses with each R of
 * SEARCH_RANGES (200, 128, ..., 2, 1; stopping once n / R exceeds
 * SEARCH_MAX_FUSED_OPS, to keep a 36k-op graph under 0.5 s), runs the passes
 * on each fused graph and keeps the placement the simulator finds best
 * (OOM-free first).  Each candidate costs one op_sim_run on the one op_sim,
 * cut off at the incumbent's step.  The R = 200 candidates are always among
 * them, so the search never returns worse than the fixed-R placer.  M stays
 * the paper's quarter of the device memory.  On graphs of at most
 * UNFUSED_MAX_OPS ops the unfused graph (R = 1: Adjusting Placement and
 * Order-Place of the ops themselves in CPD-TOPO order) is always one of
 * the candidates, however many ops it has: where memory is tight, fused
 * ops, which are placed whole, find no device with room.  At the paper's
 * own settings on 4 x v100-pcie (bench/RESULTS.md, "Expert and Celeritas"):
 * Inception-V3 at batch 512 (3,973 ops; m-topo fits at 99.6-99.9 % of
 * every device) fits at no R >= 2 and at R = 1; NMT 4 x 2048 at batch
 * 512 (13,570 ops with 40 steps) took 5.01 s with the fused graphs
 * (R >= 8) and 3.08 s unfused; with Adjusting Placement's transfers
 * booked FIFO (celeritas_adjust.c) 2.30 s, where expert takes 2.67 s.
 * Balanced best effort (celeritas unless --paper): with --best-effort, when
 * no candidate fits, Order-Place again with every device's memory raised
 * to an equal share of the need (try_balanced, beyond the paper); --paper
 * keeps the paper's fallback alone.  Among candidates that overflow, the one
 * with the least overflow (bytes above capacity, summed) wins, then the
 * shorter step.
 * Orders (celeritas only; `--order none` switches them off):
 * after the search, the best few placements (celeritas_pool.c) are
 * simulated again with the per-device orders of priority list schedules
 * (opplace/list_schedule.h: cpath, blevel, blevel-w), and an ordered one
 * is returned when the simulator ranks it better (try_orders, beyond the
 * paper; zoo transformer_xl on 4 x v100-nvlink: 131.6 ms instead of 152.8).
 * Borrowed candidates (celeritas unless --paper; graphs of at most
 * BORROW_MAX_OPS ops): the placements of expert, m-etf, m-sct and heft are
 * offered after the search's own (see BORROWED below); a result kept from
 * them is that placer's win, and the result's algorithm names it
 * ("celeritas:borrowed-m-etf").  Not when celeritas runs inside a
 * portfolio (auto), which runs those placers itself.
 * Cheap cuts (celeritas unless --paper; graphs of at most
 * CHEAP_CUT_MAX_OPS ops): the guard's Order-Place also runs with its
 * device boundaries moved back to the cheapest cut (celeritas_fill.c).
 * Contention (celeritas unless --paper, which keeps the paper's EST only):
 * Adjusting Placement runs twice, with the EST computed over FIFO channel
 * queues and with the paper's contention-free transfer times; see
 * celeritas_adjust.c.
 *
 * Cut fused edges carry, for the passes, the traffic the simulator will
 * see (fused_edge_bytes: one transfer per member with a consumer across
 * the cut), not op_coarse_build's largest single edge; with the latter the
 * passes under-estimated both the transfer times and the received-tensor
 * memory of wide runs (e.g. 40 x 128 MB weight gradients of rnnlm looked
 * like one).
 *
 * Memory: the passes check placer_mem.h's liveness estimate, not the
 * paper's whole-footprint sum (celeritas_place.h; on the fused graph
 * through cel_mem_view).  The estimate needs a guess at the order the
 * simulator runs the ops in; the fused placers try two for every pass:
 * the CPD-TOPO sequence, and the fused graph's Kahn order, which runs
 * ops off the critical path (weight gradients) early, as the simulator's
 * first-ready-first does, and so frees their inputs sooner (on the zoo
 * transformer, 4 x v100-pcie: 5.9 s instead of 11.4 s).  A pass that
 * repeats a placement of the same fused graph is not simulated again.
 * dfs-topo uses its DFS-TOPO order.  Every placer here runs under
 * pmem_place_checked: an attempt (for celeritas: the whole R search under
 * one set of margins) is simulated; when the simulator measures a peak
 * above a device's memory although the estimate fit, that device's
 * margin shrinks by the overshoot and the attempt runs again.  The search
 * ranks candidates OOM-free (simulated) first, then those the estimate
 * fit, then by step.  When the best candidate needed the best-effort
 * fallback and still overflows in simulation, the placer reports
 * OP_EINFEASIBLE (with --best-effort it returns it, marked oom).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "placers/celeritas/celeritas_fusion.h"
#include "coarsen/coarsen.h"
#include "opplace/list_schedule.h"
#include "opplace/search.h"
#include "core/orders.h"
#include "core/sort.h"
#include "opplace/placer.h"
#include "opplace/simulate.h"
#include "placers/celeritas/celeritas_place.h"
#include "placers/placer_mem.h"
#include "placers/portfolio.h"

/* Sorts coarse ops by planned start (ties: sequence position). */
typedef struct start_key {
    const double *start;
    const int *pos;
} start_key;

static int by_start(const void *a, const void *b, const void *ctx)
{
    const start_key *k = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (k->start[x] != k->start[y])
        return k->start[x] < k->start[y] ? -1 : 1;
    return k->pos[x] - k->pos[y];
}

/* The end of an attempt: a placement that needed the best-effort
 * fallback and overflows in simulation is infeasible unless best_effort
 * (then it is returned without a claim, *fits = 0). */
static op_status settle(const op_place_ctx *ctx, const char *name, int oom, int n_fallback,
                        int *fits, op_error *err)
{
    *fits = 1;
    if (!oom || n_fallback == 0)
        return OP_OK; /* fits in simulation, or the estimate claims it does */
    if (!ctx->best_effort)
        return op_fail(err, OP_EINFEASIBLE,
                       "%s: the graph does not fit in the devices' memory (%d ops found room "
                       "on no device by the liveness estimate, and the result overflows in "
                       "simulation); use --best-effort to keep it",
                       name, n_fallback);
    *fits = 0;
    return OP_OK;
}

/* The traffic a cut fused edge U -> V causes in the simulator: one
 * transfer per member a of U with a consumer in V, of a's largest edge
 * into V (formats.md 5.3; op_coarse_build keeps only the largest single
 * edge, which hid most of the traffic of wide runs). */
static op_status fused_edge_bytes(const op_graph *g, const op_coarse_map *map, int64_t **out,
                                  op_error *err)
{
    const op_graph *c = map->coarse;
    int nc = c->n_ops;
    int64_t *eb = op_calloc((size_t)c->n_edges + 1, sizeof *eb, err);
    int *mark = op_malloc(((size_t)nc + 1) * sizeof *mark, err);
    int64_t *most = op_malloc(((size_t)nc + 1) * sizeof *most, err);
    int *touched = op_malloc(((size_t)nc + 1) * sizeof *touched, err);
    if (!eb || !mark || !most || !touched) {
        free(eb);
        free(mark);
        free(most);
        free(touched);
        return OP_ENOMEM;
    }
    for (int k = 0; k < nc; k++)
        mark[k] = -1;
    for (int a = 0; a < g->n_ops; a++) {
        int U = map->group_of[a], nt = 0;
        for (int j = g->succ_off[a]; j < g->succ_off[a + 1]; j++) {
            int V = map->group_of[g->succ[j]];
            int64_t b = g->edge_bytes[g->succ_edge[j]];
            if (V == U)
                continue;
            if (mark[V] != a) {
                mark[V] = a;
                most[V] = 0;
                touched[nt++] = V;
            }
            if (b > most[V])
                most[V] = b;
        }
        for (int t = 0; t < nt; t++)
            for (int j = c->succ_off[U]; j < c->succ_off[U + 1]; j++)
                if (c->succ[j] == touched[t]) {
                    eb[c->succ_edge[j]] += most[touched[t]];
                    break;
                }
    }
    free(mark);
    free(most);
    free(touched);
    *out = eb;
    return OP_OK;
}

/* A coarse placement with, optionally, the per-device order of the pass. */
static op_status coarse_placement(const cel_pass *ps, const int *pos, int with_order,
                                  op_placement *cpl, op_error *err)
{
    const op_problem *cp = ps->p;
    if (op_placement_init(cpl, cp->n, cp->nd, err))
        return OP_ENOMEM;
    memcpy(cpl->device_of, ps->device_of, (size_t)cp->n * sizeof *cpl->device_of);
    if (!with_order)
        return OP_OK;
    int *seq = op_malloc(((size_t)cp->n + 1) * sizeof *seq, err);
    if (!seq)
        return OP_ENOMEM;
    memcpy(seq, ps->seq, (size_t)cp->n * sizeof *seq);
    if (ps->start_us) {
        start_key key = {ps->start_us, pos};
        op_sort(seq, (size_t)cp->n, sizeof *seq, by_start, &key);
    }
    op_status st = op_placement_set_order_from_sequence(cpl, seq, err);
    free(seq);
    return st;
}

/* Coarse placements remembered per fused graph and attempt (one per
 * pass and timeline). */
#define MAX_SEEN 6

typedef struct fused_run {
    op_coarse_map map;
    op_problem cp;
    int bound;
    op_levels lv;
    cel_mem_view view;
    int *seq, *pos, *device_of;
    int *seen, n_seen; /* MAX_SEEN x n: coarse placements of this attempt */
    const int *slots; /* the memory estimate's timeline: seq or the Kahn order */
    int64_t *edge_bytes;
    double *start;
    int contention, range;
} fused_run;

static void fused_run_destroy(fused_run *f)
{
    if (f->bound)
        op_problem_destroy(&f->cp);
    op_coarse_map_destroy(&f->map);
    op_levels_destroy(&f->lv);
    cel_mem_view_destroy(&f->view);
    free(f->seq);
    free(f->seen);
    free(f->pos);
    free(f->device_of);
    free(f->edge_bytes);
    free(f->start);
}

/* Has this fused graph's pass produced this coarse placement already in
 * the current attempt?  (Only placements without a planned-schedule order.)
 * Remembers it if not. */
static int seen_before(fused_run *f)
{
    size_t nc = (size_t)f->cp.n;
    for (int k = 0; k < f->n_seen; k++)
        if (!memcmp(f->seen + (size_t)k * nc, f->device_of, nc * sizeof *f->device_of))
            return 1;
    if (f->n_seen < MAX_SEEN)
        memcpy(f->seen + (size_t)f->n_seen++ * nc, f->device_of, nc * sizeof *f->device_of);
    return 0;
}

/* One candidate of the search: a pass on one fused graph with one
 * timeline for the memory estimate. */
typedef struct candidate {
    int run, adjusting, contention, timeline;
    int cheap_cuts; /* Order-Place with boundaries at cheap cuts (cel_pass) */
} candidate;

/* Run one pass on the fused graph and expand it to the original ops;
 * *fine is left empty (n_ops 0) when the pass repeats an earlier
 * placement of this attempt (nothing new to simulate). */
static op_status pass_to_fine(const op_place_ctx *ctx, fused_run *f, int adjusting, int schedule,
                              const candidate *c, const double *margin, op_placement *fine,
                              int *n_fallback, op_error *err)
{
    cel_pass ps = {.p = &f->cp, .seq = f->seq, .mem_p = &f->view.p, .margin = margin,
                   .slots = f->slots, .edge_bytes = f->edge_bytes, .device_of = f->device_of,
                   .start_us = adjusting ? f->start : NULL, .contention = f->contention,
                   .cheap_cuts = c->cheap_cuts};
    op_status st = adjusting ? cel_place_adjusting(&ps, err) : cel_place_sequential(&ps, err);
    if (st)
        return st;
    op_progress(ctx, "%s: %d coarse ops moved off their predecessor's device, %d by fallback; "
                "planned step %.1f us", adjusting ? "adjusting placement" : "order-place",
                ps.n_moved, ps.n_fallback, ps.makespan_us);
    *n_fallback = ps.n_fallback;
    if (!schedule && seen_before(f))
        return OP_OK;
    op_placement cpl;
    memset(&cpl, 0, sizeof cpl);
    if (!(st = coarse_placement(&ps, f->pos, schedule, &cpl, err)))
        st = op_coarse_expand(&f->map, ctx->p->g, &cpl, fine, err);
    op_placement_destroy(&cpl);
    return st;
}

/* Fuse with range R and prepare the fused graph for the passes. */
static op_status fused_run_init(const op_place_ctx *ctx, const cel_fusion_opts *fo, fused_run *f,
                                op_error *err)
{
    const op_problem *p = ctx->p;
    memset(f, 0, sizeof *f);
    op_status st = cel_fuse(p, fo, &f->map, err);
    if (st)
        return st;
    if ((st = op_problem_init(&f->cp, f->map.coarse, p->c, err)))
        return st;
    f->bound = 1;
    size_t nc = (size_t)f->cp.n + 1;
    op_progress(ctx, "celeritas: %d ops fused into %d (R=%d, M=%lld bytes)", p->n, f->cp.n,
                fo->range, (long long)fo->mem_limit);
    f->seq = op_malloc(nc * sizeof *f->seq, err);
    f->pos = op_malloc(nc * sizeof *f->pos, err);
    f->device_of = op_malloc(nc * sizeof *f->device_of, err);
    f->start = op_malloc(nc * sizeof *f->start, err);
    f->seen = op_malloc(nc * MAX_SEEN * sizeof *f->seen, err);
    if (!f->seq || !f->pos || !f->device_of || !f->start || !f->seen)
        return OP_ENOMEM;
    if ((st = fused_edge_bytes(p->g, &f->map, &f->edge_bytes, err)) ||
        (st = cel_mem_view_init(&f->view, p->g, &f->map, &f->cp, f->edge_bytes, err)) ||
        (st = op_levels_init(&f->lv, &f->cp, err)))
        return st;
    return op_order_cpd_topo(f->map.coarse, f->lv.cpath, f->seq, f->pos, err);
}

/* The incumbent of the search: the best simulated placement so far; and
 * the pool of the best few first-ready-first placements (try_orders). */
typedef struct incumbent {
    op_sim *sim;
    op_sim_result r;
    op_placement best;
    int have, oom, n_fallback;
    double step_us, overflow;
    cel_pool pool; /* cap 0 with --order none */
} incumbent;

/* With the pool on, runs are cut off only this far above the incumbent,
 * so that the runner-ups' steps are known: a critical-path order gained
 * up to 18 % on the zoo (see celeritas_pool.c). */
#define POOL_CUTOFF_SLACK 1.25

/* Does a candidate (oom, n_fallback, overflow, step) beat the incumbent?
 * OOM-free in simulation first; then (both overflowing) one the estimate
 * fit, whose margins pmem_place_checked may tighten until it fits; then
 * op_sim_ranks_before (the smaller overflow, then the shorter step). */
static int beats(const incumbent *inc, int oom, int n_fallback, double overflow,
                 double step_us)
{
    if (!inc->have)
        return 1;
    if (oom && inc->oom && (n_fallback > 0) != (inc->n_fallback > 0))
        return n_fallback == 0;
    return op_sim_ranks_before(overflow, step_us, inc->overflow, inc->step_us);
}

/* Simulate cand; keep it when it beats the incumbent.  Runs stop early at
 * an OOM-free incumbent's step. */
static op_status offer(const op_place_ctx *ctx, incumbent *inc, op_placement *cand,
                       int n_fallback, const char *what, op_error *err)
{
    double slack = inc->pool.cap > 0 && !cand->has_order ? POOL_CUTOFF_SLACK : 1.0;
    op_sim_set_cutoff(inc->sim, inc->have && !inc->oom ? inc->step_us * slack : 0);
    op_status st = op_sim_run(inc->sim, cand, &inc->r, NULL, err);
    if (st)
        return st;
    double overflow = op_sim_overflow_bytes(ctx->p, &inc->r);
    if (!inc->r.cut_off && !cand->has_order)
        cel_pool_offer(&inc->pool, cand->device_of, overflow, inc->r.step_time_us, n_fallback);
    int better = !inc->r.cut_off &&
                 beats(inc, inc->r.oom, n_fallback, overflow, inc->r.step_time_us);
    op_progress(ctx, "celeritas: %s: %s%s", what,
                inc->r.cut_off ? "cut off" : better ? "kept" : "not better",
                inc->r.oom ? " (out of memory)" : "");
    if (better) {
        op_placement tmp = inc->best;
        inc->best = *cand;
        *cand = tmp;
        inc->have = 1;
        inc->oom = inc->r.oom;
        inc->step_us = inc->r.step_time_us;
        inc->overflow = overflow;
        inc->n_fallback = n_fallback;
    }
    return OP_OK;
}

/* The fusion ranges searched when --fusion-range is not given. */
static const int SEARCH_RANGES[] = {200, 128, 64, 32, 16, 8, 4, 2, 1};
#define N_SEARCH_RANGES ((int)(sizeof SEARCH_RANGES / sizeof SEARCH_RANGES[0]))
/* Ranges giving more fused ops than this are skipped (placement time),
 * except R = 1 on graphs of at most UNFUSED_MAX_OPS ops: the unfused
 * graph is always a candidate there (see the top comment). */
#define SEARCH_MAX_FUSED_OPS 2000
#define UNFUSED_MAX_OPS 20000
#define N_BORROWED 4
/* Cheap cuts (BEYOND THE PAPER, not with --paper): the guard's Order-Place
 * also runs with each device boundary moved back to the cheapest cut (fewest
 * bytes crossing) within the last 1/CHEAP_CUT_WINDOW of the device's run
 * (celeritas_fill.c).  (A variant whose window also reached a quarter of the
 * run past the boundary, beyond the estimate's "full", never won on the
 * real-model table and was dropped.)  Real graphs, mechanism alone (no borrowed
 * candidates): MobileNet-V2 tight 27.0 -> 19.5 ms, DenseNet-121 tight
 * 94.9 -> 84.5 ms (bench/RESULTS.md). */
#define CHEAP_CUT_WINDOW 2
/* ... on graphs of at most this many ops.  On larger ones the pool of
 * placements that try_orders orders holds only a few (ORDER_OPS_BUDGET),
 * and the cheap-cut placements pushed out the one an order made best: the
 * paper's Transformer 12x2048 b256 (14,902 ops, 4 x v100-pcie) went from
 * 5.630 to 6.010 s; NMT-40 (13,570) gained nothing; on the 36k-op zoo
 * transformer-29 placement took 1.8 s instead of 1.0. */
#define CHEAP_CUT_MAX_OPS 5000

/* Borrowed candidates (BEYOND THE PAPER; not with --paper): on graphs of
 * at most BORROW_MAX_OPS ops, the placements of these baselines are
 * offered to the search like its own candidates (after them, so a tie
 * goes to Celeritas's own), and so the result is never worse in the
 * simulator than the best of them.  A win by one of them is that
 * placer's win, not Celeritas's: the result's algorithm names it
 * (name_borrowed), and bench/RESULTS.md has the ablation.  Where the
 * mechanism alone still loses (docs/algorithms/celeritas.md): where one
 * device holds the graph, Adjusting Placement's own plan is worse than
 * one device (Inception-V3 16GB: 93.7 / 93.0 ms planned against 92.6 ms
 * on one device), so the guard returns one device while m-ETF overlaps
 * branches (92.0 ms).  The memory-tight CNNs where the fill's device
 * boundaries fell inside blocks (MobileNet-V2 and DenseNet-121 tight,
 * Inception-V3 b512) are the mechanism's own since the cheap cuts.  Larger graphs
 * skip them (placement time: m-ETF and HEFT take seconds on 36k ops). */
static const char *const BORROWED[] = {"expert", "m-etf", "m-sct", "heft"};
#ifndef BORROW_MAX_OPS /* -DBORROW_MAX_OPS=0 builds the mechanism alone (ablation) */
#define BORROW_MAX_OPS 8000
#endif


/* What every attempt of a fused placer shares: the fused graphs (built
 * once; only the margins change between attempts) and the simulator. */
typedef struct fused_search {
    const char *name;
    int adjusting, schedule, n_runs;
    int balanced; /* the passes run under try_balanced's margins */
    int balance;    /* run try_balanced when nothing fits (not with --paper) */
    int guard;      /* also run Order-Place (not with --paper) */
    int contention; /* -1: both ESTs; 0: the paper's contention-free one only */
    fused_run runs[N_SEARCH_RANGES];
    incumbent inc;
    int borrow;                        /* offer BORROWED's placements (not with --paper) */
    int n_borrowed, borrowed_done;
    op_placement borrowed[N_BORROWED]; /* computed once, offered in every attempt */
    const char *borrowed_name[N_BORROWED];
} fused_search;

/* The search tries no more candidates once it has one and the deadline
 * has passed or Ctrl-C came (op_seconds_left is 0 for both): the best so
 * far is its answer.  The first candidate always finishes, unless Ctrl-C
 * stops it (the command then falls back). */
static int out_of_time(const op_place_ctx *ctx, const incumbent *inc)
{
    return inc->have && op_seconds_left(ctx) <= 0;
}

/* A candidate stopped part-way (its pass polls Ctrl-C) once the search
 * is out of time: the incumbent stands, the error is dropped. */
static op_status keep_incumbent(const op_place_ctx *ctx, const incumbent *inc, op_status st,
                                op_error *err)
{
    if (!st || st == OP_ENOMEM || !out_of_time(ctx, inc))
        return st;
    op_progress(ctx, "celeritas: stopped at %s; the best placement so far stands",
                op_interrupted() ? "Ctrl-C" : "the deadline");
    op_error_clear(err);
    return OP_OK;
}

/* Run candidate c under margin and offer it to the incumbent. */
static op_status run_candidate(const op_place_ctx *ctx, fused_search *s, candidate c,
                               const double *margin, op_error *err)
{
    fused_run *f = &s->runs[c.run];
    op_placement fine;
    memset(&fine, 0, sizeof fine);
    char what[96];
    f->contention = c.contention;
    f->slots = c.timeline ? f->map.coarse->topo : f->seq;
    snprintf(what, sizeof what, "R=%d %s, %s timeline", f->range,
             !c.adjusting ? (c.cheap_cuts ? "order-place (cheap cuts)" : "order-place")
             : c.contention ? "adjusting (contention)" : "adjusting",
             c.timeline ? "Kahn" : "CPD-TOPO");
    int fallback = 0;
    op_status st = pass_to_fine(ctx, f, c.adjusting, s->schedule, &c, margin, &fine,
                                &fallback, err);
    if (s->balanced && fallback == 0)
        fallback = 1; /* over capacity by design: a best-effort candidate */

    if (!st && fine.n_ops == 0)
        op_progress(ctx, "celeritas: %s: same placement as an earlier pass", what);
    else if (!st)
        st = offer(ctx, &s->inc, &fine, fallback, what, err);
    op_placement_destroy(&fine);
    return st;
}

/* The passes tried on one fused graph: Adjusting Placement with the
 * contention-aware and/or the paper's contention-free EST, and (the guard)
 * Order-Place; each with the CPD-TOPO sequence and with the fused graph's
 * Kahn order as the estimate's timeline (two guesses at the simulator's
 * order: CPD-TOPO defers ops off the critical path, such as weight
 * gradients, and so keeps their inputs alive longer than the simulator
 * does). */
static op_status try_passes(const op_place_ctx *ctx, fused_search *s, int run,
                            const double *margin, op_error *err)
{
    fused_run *f = &s->runs[run];
    candidate pass[4];
    int np = 0;
    if (s->adjusting && !s->balanced) {
        if (s->contention != 0)
            pass[np++] = (candidate){.run = run, .adjusting = 1, .contention = 1};
        if (s->contention != 1)
            pass[np++] = (candidate){.run = run, .adjusting = 1, .contention = 0};
    }
    if (!s->adjusting || s->guard || s->balanced)
        pass[np++] = (candidate){.run = run};
    if (s->guard && !s->balanced && ctx->p->n <= CHEAP_CUT_MAX_OPS) {
        pass[np++] = (candidate){.run = run, .cheap_cuts = CHEAP_CUT_WINDOW};
    }
    int nt = memcmp(f->seq, f->map.coarse->topo, (size_t)f->cp.n * sizeof *f->seq) ? 2 : 1;
    op_status st = OP_OK;
    for (int k = 0; k < np * nt && !st && !out_of_time(ctx, &s->inc); k++) {
        candidate c = pass[k / nt];
        c.timeline = k % nt;
        st = keep_incumbent(ctx, &s->inc, run_candidate(ctx, s, c, margin, err), err);
    }
    return st;
}

/* The liveness estimate's peak of the whole graph on one device (Kahn
 * order): what the devices must hold between them, before the copies a
 * split adds.  A property of the graph, not of the search, so that every
 * configuration of the placer balances to the same share. */
static op_status single_device_need(const op_problem *p, double *need, op_error *err)
{
    pmem m;
    int *device_of = op_calloc((size_t)p->n + 1, sizeof *device_of, err);
    if (!device_of)
        return OP_ENOMEM;
    op_status st = pmem_init(&m, p, NULL, NULL, err);
    if (!st) {
        pmem_charge_all(&m, device_of);
        *need = (double)pmem_peak(&m, 0);
        pmem_destroy(&m);
    }
    free(device_of);
    return st;
}

/* The share's factors: the single-device peak misses the copies a split
 * adds and the slack of the estimate's order, and which cut balances the
 * simulated peaks best differs per graph (on the zoo's tensor_holography
 * on 4 x v100-nvlink: 11.80, 11.59, 10.32 GiB over for 1.0, 1.1, 1.2; 1.35
 * gave 14.12), so three are tried, each on every fused graph (the
 * winning R differs with the factor).  On the 36k-op transformer-29,
 * which fits nowhere on 4 x v100-pcie, placement takes 0.40 s with three
 * factors, 0.31 s with one. */
static const double BALANCED_FACTORS[] = {1.0, 1.1, 1.2};
#define N_BALANCED_FACTORS ((int)(sizeof BALANCED_FACTORS / sizeof BALANCED_FACTORS[0]))

/* Best effort when nothing fits (BEYOND THE PAPER, whose fallback puts an
 * op without room on the device with the lowest memory use): the passes
 * above fill devices to their capacity and pile the rest onto whichever
 * overflows least, so the devices that fit sit full while the graph
 * overflows elsewhere.  Here every device's usable memory is raised to an
 * equal share of what the graph needs (single_device_need over the summed
 * capacities), and Order-Place runs again on every fused graph: the fill
 * then cuts the sequence into even parts, as a layer-wise split does,
 * and the overflow is spread over all devices.  Only Order-Place runs
 * (Adjusting Placement would trade the balance for time again; on the
 * zoo's graphs that do not fit, Order-Place gave the least overflow, and
 * a share scaled by 0.9 never won), with the share scaled by each of
 * BALANCED_FACTORS.  These candidates
 * overflow by design, so they are offered as fallback placements
 * (ranked by overflow, never given tighter margins). */
static op_status try_balanced(const op_place_ctx *ctx, fused_search *s, op_error *err)
{
    const op_problem *p = ctx->p;
    double capacity = 0;
    for (int d = 0; d < p->nd; d++)
        capacity += (double)p->c->dev[d].memory_bytes;
    double need;
    op_status st = single_device_need(p, &need, err);
    if (st || capacity <= 0)
        return st;
    double share = need / capacity;
    double *margin = op_malloc((size_t)p->nd * sizeof *margin, err);
    if (!margin)
        return OP_ENOMEM;
    s->balanced = 1;
    for (int k = 0; k < N_BALANCED_FACTORS && !st; k++) {
        for (int d = 0; d < p->nd; d++)
            margin[d] = share * BALANCED_FACTORS[k];
        op_progress(ctx, "%s: nothing fits; Order-Place with every device's memory x %.3f",
                    s->name, margin[0]);
        for (int r = 0; r < s->n_runs && !st && !out_of_time(ctx, &s->inc); r++) {
            s->runs[r].n_seen = 0;
            st = try_passes(ctx, s, r, margin, err);
        }
    }
    s->balanced = 0;
    free(margin);
    return st;
}

/* The priorities try_orders gives the pool's placements (opplace/
 * list_schedule.h): the longest path through the op, which is CPD-TOPO's
 * own priority; the bottom level with and without transfers. */
static const op_priority ORDER_PRIORITIES[] = {OP_PRIORITY_CPATH, OP_PRIORITY_BLEVEL,
                                               OP_PRIORITY_BLEVEL_W};
#define N_ORDER_PRIORITIES ((int)(sizeof ORDER_PRIORITIES / sizeof ORDER_PRIORITIES[0]))
/* Placement time: a list schedule plus a simulation cost about 0.4 us per
 * op (36k ops: 15 ms), so the ordered runs are capped at ORDER_OPS_BUDGET
 * ops in all (about 50 ms; at least one run), on at most ORDER_POOL_MAX
 * placements. */
#define ORDER_OPS_BUDGET 120000
#define ORDER_POOL_MAX 8

static int order_runs(int n_ops)
{
    int runs = ORDER_OPS_BUDGET / (n_ops > 0 ? n_ops : 1);
    return runs < 1 ? 1 : runs;
}

static int order_pool_cap(int n_ops)
{
    int cap = (order_runs(n_ops) + N_ORDER_PRIORITIES - 1) / N_ORDER_PRIORITIES;
    return cap > ORDER_POOL_MAX ? ORDER_POOL_MAX : cap;
}

/* Orders (BEYOND THE PAPER; off with --order none): the search judged its
 * candidates under the simulator's first-ready-first order; give the pool's
 * placements, best first, the per-device order of a priority list
 * schedule (memory-aware, capped at the devices' capacities) and offer
 * them.  An ordered placement wins only when the simulator ranks it
 * better, so this never makes the result worse.  Skipped when the best
 * placement overflows: then the overflow decides, and running ahead on
 * the critical path holds more tensors at once, not fewer. */
typedef struct order_try {
    const op_place_ctx *ctx;
    incumbent *inc;
    op_placement *cand;
    int k, runs; /* pool entry; simulator runs left */
} order_try;

/* Pool entry t->k with priority pk under the capacities (an op_order_visit). */
static op_status try_order(void *arg, op_priority pk, double share, const int64_t *cap,
                           int *stop, op_error *err)
{
    order_try *t = arg;
    const op_problem *p = t->ctx->p;
    (void)share;
    if (t->runs-- <= 0) {
        *stop = 1;
        return OP_OK;
    }
    op_placement_drop_order(t->cand);
    memcpy(t->cand->device_of, cel_pool_entry(&t->inc->pool, t->k),
           (size_t)p->n * sizeof *t->cand->device_of);
    op_status st = op_placement_order_by_priority(p, t->cand, pk, cap, err);
    if (st)
        return st;
    char what[96];
    snprintf(what, sizeof what, "placement %d of the pool with the %s order", t->k + 1,
             op_priority_name(pk));
    return offer(t->ctx, t->inc, t->cand, t->inc->pool.n_fallback[t->k], what, err);
}

static op_status try_orders(const op_place_ctx *ctx, incumbent *inc, op_error *err)
{
    const op_problem *p = ctx->p;
    int64_t *cap = op_malloc((size_t)p->nd * sizeof *cap, err);
    op_placement cand;
    memset(&cand, 0, sizeof cand);
    op_status st = !cap ? OP_ENOMEM : op_placement_init(&cand, p->n, p->nd, err);
    /* the priorities under the devices' capacities (opplace/search.h) */
    op_order_space sp = {.caps = OP_CAPS_LIMIT, .clip = 1, .priorities = ORDER_PRIORITIES,
                         .n_priorities = N_ORDER_PRIORITIES};
    order_try t = {ctx, inc, &cand, 0, order_runs(p->n)};
    for (t.k = 0; !st && t.k < inc->pool.len && t.runs > 0 && !out_of_time(ctx, inc); t.k++)
        st = keep_incumbent(ctx, inc, op_order_search(p, &sp, cap, try_order, &t, err), err);
    op_placement_destroy(&cand);
    free(cap);
    return st;
}

/* Offer the borrowed baselines' placements (computed on the first
 * attempt).  Each counts as a best-effort candidate (n_fallback 1): one
 * that overflows in simulation is never claimed to fit. */
static op_status try_borrowed(const op_place_ctx *ctx, fused_search *s, op_error *err)
{
    op_status st = OP_OK;
    if (!s->borrowed_done) {
        s->borrowed_done = 1;
        for (int k = 0; k < N_BORROWED && !st; k++) {
            const op_placer *pl = op_placer_find(BORROWED[k]);
            int placed = 0;
            if (!pl)
                continue;
            st = op_portfolio_run(ctx, pl, &s->borrowed[s->n_borrowed], &placed, err);
            if (!st && placed)
                s->borrowed_name[s->n_borrowed++] = BORROWED[k];
        }
    }
    for (int k = 0; k < s->n_borrowed && !st; k++) {
        op_placement cand;
        char what[64];
        snprintf(what, sizeof what, "borrowed from %s", s->borrowed_name[k]);
        if ((st = op_placement_copy(&cand, &s->borrowed[k], err)))
            break; /* its name is settled at the end (name_borrowed) */
        if (s->inc.pool.cap == 0) /* --order none: placements alone */
            op_placement_drop_order(&cand);
        st = offer(ctx, &s->inc, &cand, 1, what, err);
        op_placement_destroy(&cand);
    }
    return st;
}

/* One attempt under the given margins: every pass on every fused graph,
 * the best simulated placement into out (a pmem_place_fn). */
static op_status fused_attempt(const op_place_ctx *ctx, void *arg, const double *margin,
                               op_placement *out, int *fits, op_error *err)
{
    fused_search *s = arg;
    incumbent *inc = &s->inc;
    inc->have = 0;
    inc->pool.len = 0;
    op_status st = OP_OK;
    for (int k = 0; k < s->n_runs; k++)
        s->runs[k].n_seen = 0;
    for (int k = 0; k < s->n_runs && !st && !out_of_time(ctx, inc); k++)
        st = try_passes(ctx, s, k, margin, err);
    if (!st && s->balance && ctx->best_effort && inc->have && inc->oom && inc->n_fallback > 0 &&
        !out_of_time(ctx, inc))
        st = try_balanced(ctx, s, err);
    if (!st && s->borrow && !out_of_time(ctx, inc))
        st = keep_incumbent(ctx, inc, try_borrowed(ctx, s, err), err);
    if (!st && inc->pool.cap > 0 && inc->have && !inc->oom)
        st = try_orders(ctx, inc, err);
    if (st)
        return st;
    op_progress(ctx, "%s: best simulated step %.1f us%s", s->name, inc->step_us,
                inc->oom ? " (out of memory)" : "");
    op_placement_destroy(out);
    *out = inc->best;
    memset(&inc->best, 0, sizeof inc->best);
    return settle(ctx, s->name, inc->oom, inc->n_fallback, fits, err);
}

/* Fuse with each range (the search) or the given one. */
static op_status fuse_all(const op_place_ctx *ctx, const cel_fusion_opts *fo, int search,
                          fused_search *s, op_error *err)
{
    const op_problem *p = ctx->p;
    int n_ranges = search ? N_SEARCH_RANGES : 1;
    op_status st = OP_OK;
    for (int k = 0; k < n_ranges && !st; k++) {
        cel_fusion_opts fk = *fo;
        if (search)
            fk.range = SEARCH_RANGES[k];
        if (search && s->n_runs && p->n / fk.range > SEARCH_MAX_FUSED_OPS &&
            !(fk.range == 1 && p->n <= UNFUSED_MAX_OPS)) /* the unfused graph */
            continue;
        if (s->n_runs && op_seconds_left(ctx) <= 0) /* the deadline or Ctrl-C: place */
            break;                                    /* with the graphs fused so far */
        if (op_interrupted()) /* each fusion of 10^5 ops: 0.3 s under ASan */
            return op_fail(err, OP_EINTERNAL, "%s: stopped at Ctrl-C", s->name);
        fused_run *f = &s->runs[s->n_runs++];
        st = fused_run_init(ctx, &fk, f, err);
        f->range = fk.range;
    }
    return st;
}

/* A result whose devices are a borrowed placer's is that placer's win,
 * and its algorithm says so ("celeritas:borrowed-m-etf"; the order may
 * still be one celeritas chose). */
static op_status name_borrowed(const op_problem *p, const fused_search *s, op_placement *out,
                               op_error *err)
{
    for (int k = 0; k < s->n_borrowed; k++) {
        if (memcmp(out->device_of, s->borrowed[k].device_of,
                   (size_t)p->n * sizeof *out->device_of) != 0)
            continue;
        char name[64];
        snprintf(name, sizeof name, "%s:borrowed-%s", s->name, s->borrowed_name[k]);
        return op_placement_set_algorithm(out, name, err);
    }
    free(out->algorithm); /* celeritas's own: a name from a recycled buffer is stale */
    out->algorithm = NULL;
    return OP_OK;
}

static op_status place_fused(const op_place_ctx *ctx, int adjusting, op_placement *out,
                             op_error *err)
{
    const op_problem *p = ctx->p;
    cel_fusion_opts fo;
    long schedule = 0, orders = 0;
    fused_search *s = op_calloc(1, sizeof *s, err);
    if (!s)
        return OP_ENOMEM;
    s->name = adjusting ? "celeritas" : "order-place";
    s->adjusting = adjusting;
    op_status st = cel_fusion_read_opts(p, ctx->opts, &fo, err);
    int paper = adjusting && op_options_has(ctx->opts, "paper");
    int search = adjusting && !paper && !st && !op_options_has(ctx->opts, "fusion-range") &&
                 !op_options_has(ctx->opts, "target");
    s->guard = s->balance = adjusting && !paper;
    s->borrow = adjusting && !paper && !ctx->member && p->n <= BORROW_MAX_OPS;
    s->contention = paper ? 0 : -1;
    if (!st && adjusting && !paper) /* --order none: the placement alone, no order */
        orders = strcmp(op_options_str(ctx->opts, "order", "own"), "none") != 0;
    s->schedule = (int)schedule;
    if (!st && (!(s->inc.sim = op_sim_new(p, err)) || op_sim_result_init(&s->inc.r, p, err)))
        st = OP_ENOMEM;
    if (!st)
        st = cel_pool_init(&s->inc.pool, orders ? order_pool_cap(p->n) : 0, p->n, err);
    if (!st)
        st = fuse_all(ctx, &fo, search, s, err);
    if (!st)
        st = pmem_place_checked(ctx, s->name, fused_attempt, s, out, err);
    if (!st)
        st = name_borrowed(p, s, out, err);
    for (int k = 0; k < s->n_runs; k++)
        fused_run_destroy(&s->runs[k]);
    for (int k = 0; k < s->n_borrowed; k++)
        op_placement_destroy(&s->borrowed[k]);
    op_placement_destroy(&s->inc.best);
    cel_pool_destroy(&s->inc.pool);
    if (s->inc.sim)
        op_sim_result_destroy(&s->inc.r);
    op_sim_free(s->inc.sim);
    free(s);
    return st;
}

#define FUSION_OPTIONS                                                                     \
    {"target", OP_OPT_INT, 0, 1073741824.0, NULL, NULL,                                    \
     "fuse to about this many ops (sets --fusion-range)"},                                 \
    {"fusion-range", OP_OPT_INT, 1, 1073741824.0, "searched", NULL,                    \
     "R of Optimal Operation Fusion (celeritas: searched over 200..1 when not given)"}

static const op_opt_decl CELERITAS_OPTIONS[] = {
    FUSION_OPTIONS,
    {"paper", OP_OPT_FLAG, 0, 0, NULL, NULL,
     "exactly the paper's method (none of the additions; R fixed, default 200)"},
    {NULL, 0, 0, 0, NULL, NULL, NULL},
};

static const op_opt_decl ORDER_PLACE_OPTIONS[] = {
    FUSION_OPTIONS,
    {NULL, 0, 0, 0, NULL, NULL, NULL},
};

static op_status place_celeritas(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    return place_fused(ctx, 1, out, err);
}

const op_placer op_placer_celeritas = {
    .name = "celeritas",
    .summary = "Optimal Operation Fusion + Adjusting Placement (EST, back_cost, memory check)",
    .source = "Celeritas sections 5.1-5.2, Algorithms 1-2",
    .place = place_celeritas,
    .options = CELERITAS_OPTIONS,
};

static op_status place_order_place(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    return place_fused(ctx, 0, out, err);
}

const op_placer op_placer_order_place = {
    .name = "order-place",
    .summary = "Optimal Operation Fusion, then fill devices in CPD-TOPO order up to their memory",
    .source = "Celeritas sections 5.2 and 6.2 (Order-Place)",
    .place = place_order_place,
    .options = ORDER_PLACE_OPTIONS,
};

/* One DFS-TOPO fill under the given margins (a pmem_place_fn). */
static op_status dfs_topo_attempt(const op_place_ctx *ctx, void *arg, const double *margin,
                                  op_placement *out, int *fits, op_error *err)
{
    const op_problem *p = ctx->p;
    cel_pass ps = {.p = p, .seq = arg, .margin = margin, .device_of = out->device_of};
    op_status st = cel_place_sequential(&ps, err);
    if (st || ps.n_fallback == 0) {
        *fits = 1;
        return st;
    }
    op_sim_result r;
    if ((st = op_sim_result_init(&r, p, err)))
        return st;
    if (!(st = op_simulate(p, out, &r, NULL, err)))
        st = settle(ctx, "dfs-topo", r.oom, ps.n_fallback, fits, err);
    op_sim_result_destroy(&r);
    return st;
}

static op_status place_dfs_topo(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    const op_problem *p = ctx->p;
    int *seq = op_malloc(((size_t)p->n + 1) * sizeof *seq, err);
    op_status st = !seq ? OP_ENOMEM : op_order_dfs_topo(p->g, seq, NULL, err);
    if (!st)
        st = pmem_place_checked(ctx, "dfs-topo", dfs_topo_attempt, seq, out, err);
    free(seq);
    return st;
}

const op_placer op_placer_dfs_topo = {
    .name = "dfs-topo",
    .summary = "fill devices up to their memory in DFS-TOPO order (no fusion)",
    .source = "Celeritas section 4.2 (Standard Evaluation, second step)",
    .place = place_dfs_topo,
};
