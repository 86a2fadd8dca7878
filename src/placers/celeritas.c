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
 * Options: --fusion-range R, --fusion-memory M (celeritas_fusion.h) and
 * --schedule 0|1 (default 0): 1 hands the simulator the per-device order
 * of the planned schedule (groups by planned start, members in topological
 * order) instead of first-ready-first; on the zoo first-ready-first was as
 * good or better (bench/RESULTS.md), hence the default.
 *
 * --guard 0|1 (celeritas only, default 1): the paper proves each step of
 * Adjusting Placement no worse than Order-Place in its own cost model, but
 * the simulator (channel contention, first-ready order) disagrees on some
 * graphs (tests/test_celeritas.c prints them); the guard also runs
 * Order-Place on the same fused graph and keeps whichever the simulator
 * finds faster (an OOM-free one first).  --guard 0 is Algorithm 2 alone.
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
 * the paper's quarter of the device memory.
 * --contention -1|0|1 (celeritas only, default -1 = try both): the EST of
 * Adjusting Placement with FIFO channel queues (1) or the paper's
 * contention-free transfer times (0); see celeritas_adjust.c.
 *
 * Cut fused edges carry, for the passes, the traffic the simulator will
 * see (fused_edge_bytes: one transfer per member with a consumer across
 * the cut), not op_coarse_build's largest single edge; with the latter the
 * passes under-estimated both the transfer times and the received-tensor
 * memory of wide runs (e.g. 40 x 128 MB weight gradients of rnnlm looked
 * like one).
 *
 * Out of memory: the passes fall back to the device with the most memory
 * left (the paper's best effort).  Their accounting is an upper bound, so a
 * fallback need not mean an overflow: the result is then simulated, and only
 * a simulated overflow without --best-effort returns OP_EINFEASIBLE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coarsen/celeritas_fusion.h"
#include "opplace/coarsen.h"
#include "opplace/orders.h"
#include "opplace/placer.h"
#include "opplace/simulate.h"
#include "placers/celeritas_place.h"

/* Sorts coarse ops by planned start (ties: sequence position). */
static const double *sort_start;
static const int *sort_pos;
static int by_start(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    if (sort_start[x] != sort_start[y])
        return sort_start[x] < sort_start[y] ? -1 : 1;
    return sort_pos[x] - sort_pos[y];
}

static op_status check_memory(const op_place_ctx *ctx, const op_placement *pl, int n_fallback,
                              const char *name, op_error *err)
{
    if (n_fallback == 0 || ctx->best_effort)
        return OP_OK;
    op_sim_result r;
    op_status st = op_sim_result_init(&r, ctx->p, err);
    if (!st)
        st = op_simulate(ctx->p, pl, &r, NULL, err);
    if (!st && r.oom)
        st = op_fail(err, OP_EINFEASIBLE,
                     "%s: the graph does not fit in the devices' memory (%d ops placed by "
                     "the best-effort fallback overflow); use --best-effort to keep it",
                     name, n_fallback);
    op_sim_result_destroy(&r);
    return st;
}

static op_status memory_of_groups(const op_graph *g, const op_coarse_map *map, int64_t **out,
                                  op_error *err)
{
    int nc = map->coarse->n_ops;
    int64_t *mem = op_calloc((size_t)nc + 1, sizeof *mem, err);
    if (!mem)
        return OP_ENOMEM;
    for (int v = 0; v < g->n_ops; v++)
        mem[map->group_of[v]] += cel_op_memory(g, v);
    *out = mem;
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
        sort_start = ps->start_us;
        sort_pos = pos;
        qsort(seq, (size_t)cp->n, sizeof *seq, by_start);
    }
    op_status st = op_placement_set_order_from_sequence(cpl, seq, err);
    free(seq);
    return st;
}

typedef struct fused_run {
    op_coarse_map map;
    op_problem cp;
    int bound;
    op_levels lv;
    int *seq, *pos, *device_of;
    int64_t *mem, *edge_bytes;
    double *start;
    int contention, range;
} fused_run;

static void fused_run_destroy(fused_run *f)
{
    if (f->bound)
        op_problem_destroy(&f->cp);
    op_coarse_map_destroy(&f->map);
    op_levels_destroy(&f->lv);
    free(f->seq);
    free(f->pos);
    free(f->device_of);
    free(f->mem);
    free(f->edge_bytes);
    free(f->start);
}

/* Run one pass on the fused graph and expand it to the original ops. */
static op_status pass_to_fine(const op_place_ctx *ctx, fused_run *f, int adjusting, int schedule,
                              op_placement *fine, int *n_fallback, op_error *err)
{
    cel_pass ps = {.p = &f->cp, .seq = f->seq, .mem = f->mem, .edge_bytes = f->edge_bytes,
                   .device_of = f->device_of,
                   .start_us = adjusting ? f->start : NULL, .contention = f->contention};
    op_status st = adjusting ? cel_place_adjusting(&ps, err) : cel_place_sequential(&ps, err);
    if (st)
        return st;
    op_progress(ctx, "%s: %d coarse ops moved off their predecessor's device, %d by fallback; "
                "planned step %.1f us", adjusting ? "adjusting placement" : "order-place",
                ps.n_moved, ps.n_fallback, ps.makespan_us);
    *n_fallback = ps.n_fallback;
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
    if (!f->seq || !f->pos || !f->device_of || !f->start)
        return OP_ENOMEM;
    if ((st = memory_of_groups(p->g, &f->map, &f->mem, err)) ||
        (st = fused_edge_bytes(p->g, &f->map, &f->edge_bytes, err)) ||
        (st = op_levels_init(&f->lv, &f->cp, err)))
        return st;
    return op_order_cpd_topo(f->map.coarse, f->lv.cpath, f->seq, f->pos, err);
}

/* The incumbent of the search: the best simulated placement so far. */
typedef struct incumbent {
    op_sim *sim;
    op_sim_result r;
    op_placement best;
    int have, oom, n_fallback;
    double step_us;
} incumbent;

/* Simulate cand; keep it when it beats the incumbent (an OOM-free one
 * first, then the shorter step).  Runs stop early at the incumbent's step. */
static op_status offer(const op_place_ctx *ctx, incumbent *inc, op_placement *cand,
                       int n_fallback, const char *what, op_error *err)
{
    op_sim_set_cutoff(inc->sim, inc->have && !inc->oom ? inc->step_us : 0);
    op_status st = op_sim_run(inc->sim, cand, &inc->r, NULL, err);
    if (st)
        return st;
    int better = !inc->have ||
                 (!inc->r.cut_off && ((inc->oom && !inc->r.oom) ||
                                      (inc->oom == inc->r.oom && inc->r.step_time_us < inc->step_us)));
    op_progress(ctx, "celeritas: %s: %s", what,
                inc->r.cut_off ? "cut off" : better ? "kept" : "not better");
    if (better) {
        op_placement tmp = inc->best;
        inc->best = *cand;
        *cand = tmp;
        inc->have = 1;
        inc->oom = inc->r.oom;
        inc->step_us = inc->r.step_time_us;
        inc->n_fallback = n_fallback;
    }
    return OP_OK;
}

/* The passes tried on one fused graph: Adjusting Placement with the
 * contention-aware and/or the paper's contention-free EST, and (the guard)
 * Order-Place. */
static op_status try_passes(const op_place_ctx *ctx, fused_run *f, int adjusting, long guard,
                            long contention, int schedule, incumbent *inc, op_error *err)
{
    struct pass_kind {
        int adjusting, contention;
    } pass[3];
    int np = 0;
    if (adjusting) {
        if (contention != 0)
            pass[np++] = (struct pass_kind){1, 1};
        if (contention != 1)
            pass[np++] = (struct pass_kind){1, 0};
    }
    if (!adjusting || guard)
        pass[np++] = (struct pass_kind){0, 0};
    op_status st = OP_OK;
    for (int k = 0; k < np && !st; k++) {
        op_placement fine;
        memset(&fine, 0, sizeof fine);
        int fb = 0;
        char what[64];
        f->contention = pass[k].contention;
        snprintf(what, sizeof what, "R=%d %s", f->range,
                 !pass[k].adjusting ? "order-place"
                 : pass[k].contention ? "adjusting (contention)" : "adjusting");
        if (!(st = pass_to_fine(ctx, f, pass[k].adjusting, schedule, &fine, &fb, err)))
            st = offer(ctx, inc, &fine, fb, what, err);
        op_placement_destroy(&fine);
    }
    return st;
}

/* The fusion ranges searched when --fusion-range is not given. */
static const int SEARCH_RANGES[] = {200, 128, 64, 32, 16, 8, 4, 2, 1};
#define N_SEARCH_RANGES ((int)(sizeof SEARCH_RANGES / sizeof SEARCH_RANGES[0]))
/* Ranges giving more fused ops than this are skipped (placement time). */
#define SEARCH_MAX_FUSED_OPS 2000

static op_status place_fused(const op_place_ctx *ctx, int adjusting, op_placement *out,
                             op_error *err)
{
    const op_problem *p = ctx->p;
    const char *name = adjusting ? "celeritas" : "order-place";
    cel_fusion_opts fo;
    long schedule, guard = 0, contention = -1;
    op_status st = cel_fusion_read_opts(p, ctx->opts, &fo, err);
    int search = adjusting && !st && !op_options_has(ctx->opts, "fusion-range") &&
                 !op_options_has(ctx->opts, "target");
    if (!st)
        st = op_options_int(ctx->opts, "schedule", 0, 0, 1, &schedule, err);
    if (!st && adjusting)
        st = op_options_int(ctx->opts, "guard", 1, 0, 1, &guard, err);
    if (!st && adjusting)
        st = op_options_int(ctx->opts, "contention", -1, -1, 1, &contention, err);
    if (st)
        return st;
    incumbent inc;
    memset(&inc, 0, sizeof inc);
    if (!(inc.sim = op_sim_new(p, err)) || op_sim_result_init(&inc.r, p, err)) {
        op_sim_free(inc.sim);
        return OP_ENOMEM;
    }
    int n_ranges = search ? N_SEARCH_RANGES : 1, tried = 0;
    for (int k = 0; k < n_ranges && !st; k++) {
        cel_fusion_opts fk = fo;
        if (search)
            fk.range = SEARCH_RANGES[k];
        if (search && tried && p->n / fk.range > SEARCH_MAX_FUSED_OPS)
            break;
        fused_run f;
        if (!(st = fused_run_init(ctx, &fk, &f, err))) {
            f.range = fk.range;
            st = try_passes(ctx, &f, adjusting, guard, contention, (int)schedule, &inc, err);
            tried++;
        }
        fused_run_destroy(&f);
    }
    if (!st) {
        op_progress(ctx, "%s: best simulated step %.1f us", name, inc.step_us);
        op_placement_destroy(out);
        *out = inc.best;
        memset(&inc.best, 0, sizeof inc.best);
        st = check_memory(ctx, out, inc.n_fallback, name, err);
    }
    op_placement_destroy(&inc.best);
    op_sim_result_destroy(&inc.r);
    op_sim_free(inc.sim);
    return st;
}

static op_status place_celeritas(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    return place_fused(ctx, 1, out, err);
}

static op_status place_order_place(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    return place_fused(ctx, 0, out, err);
}

static op_status place_dfs_topo(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    const op_problem *p = ctx->p;
    int *seq = op_malloc(((size_t)p->n + 1) * sizeof *seq, err);
    int64_t *mem = op_malloc(((size_t)p->n + 1) * sizeof *mem, err);
    op_status st = !seq || !mem ? OP_ENOMEM : op_order_dfs_topo(p->g, seq, NULL, err);
    for (int v = 0; !st && v < p->n; v++)
        mem[v] = cel_op_memory(p->g, v);
    cel_pass ps = {.p = p, .seq = seq, .mem = mem, .device_of = out->device_of};
    if (!st)
        st = cel_place_sequential(&ps, err);
    if (!st)
        st = check_memory(ctx, out, ps.n_fallback, "dfs-topo", err);
    free(seq);
    free(mem);
    return st;
}

const op_placer op_placer_celeritas = {
    .name = "celeritas",
    .summary = "Optimal Operation Fusion + Adjusting Placement (EST with insertion, "
               "back_cost, memory check, best-effort fallback)",
    .source = "Celeritas sections 5.1-5.2, Algorithms 1-2",
    .place = place_celeritas,
};

const op_placer op_placer_order_place = {
    .name = "order-place",
    .summary = "Optimal Operation Fusion, then fill devices in CPD-TOPO order up to their memory",
    .source = "Celeritas sections 5.2 and 6.2 (Order-Place)",
    .place = place_order_place,
};

const op_placer op_placer_dfs_topo = {
    .name = "dfs-topo",
    .summary = "fill devices up to their memory in DFS-TOPO order (no fusion)",
    .source = "Celeritas section 4.2 (Standard Evaluation, second step)",
    .place = place_dfs_topo,
};
