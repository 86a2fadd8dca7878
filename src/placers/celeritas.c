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
 * Out of memory: the passes fall back to the device with the most memory
 * left (the paper's best effort).  Their accounting is an upper bound, so a
 * fallback need not mean an overflow: the result is then simulated, and only
 * a simulated overflow without --best-effort returns OP_EINFEASIBLE.
 */
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
    int64_t *mem;
    double *start;
    int contention;
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
    free(f->start);
}

/* Run one pass on the fused graph and expand it to the original ops. */
static op_status pass_to_fine(const op_place_ctx *ctx, fused_run *f, int adjusting, int schedule,
                              op_placement *fine, int *n_fallback, op_error *err)
{
    cel_pass ps = {.p = &f->cp, .seq = f->seq, .mem = f->mem, .device_of = f->device_of,
                   .start_us = adjusting ? f->start : NULL, .contention = f->contention};
    op_status st = adjusting ? cel_place_adjusting(&ps, err) : cel_place_sequential(&ps, err);
    if (st)
        return st;
    op_progress(ctx, "%s: %d coarse ops moved off their predecessor's device, %d by fallback",
                adjusting ? "adjusting placement" : "order-place", ps.n_moved, ps.n_fallback);
    *n_fallback = ps.n_fallback;
    op_placement cpl;
    memset(&cpl, 0, sizeof cpl);
    if (!(st = coarse_placement(&ps, f->pos, schedule, &cpl, err)))
        st = op_coarse_expand(&f->map, ctx->p->g, &cpl, fine, err);
    op_placement_destroy(&cpl);
    return st;
}

/* The guard: keep Order-Place's placement when the simulator finds it faster. */
static op_status keep_faster(const op_place_ctx *ctx, op_placement *a, int *fb_a,
                             op_placement *b, int fb_b, op_error *err)
{
    op_sim *sim = op_sim_new(ctx->p, err);
    op_sim_result r;
    op_status st = sim ? op_sim_result_init(&r, ctx->p, err) : OP_ENOMEM;
    if (st) {
        op_sim_free(sim);
        return st;
    }
    double ta = 0, tb = 0;
    int oa = 0, ob = 0;
    if (!(st = op_sim_run(sim, a, &r, NULL, err))) {
        ta = r.step_time_us;
        oa = r.oom;
        st = op_sim_run(sim, b, &r, NULL, err);
        tb = r.step_time_us;
        ob = r.oom;
    }
    if (!st && ((oa && !ob) || (oa == ob && tb < ta))) {
        op_progress(ctx, "celeritas: guard keeps order-place (%.1f us < %.1f us)", tb, ta);
        op_placement tmp = *a;
        *a = *b;
        *b = tmp;
        *fb_a = fb_b;
    }
    op_sim_result_destroy(&r);
    op_sim_free(sim);
    return st;
}

static op_status place_fused(const op_place_ctx *ctx, int adjusting, op_placement *out,
                             op_error *err)
{
    const op_problem *p = ctx->p;
    const char *name = adjusting ? "celeritas" : "order-place";
    cel_fusion_opts fo;
    long schedule, guard = 0;
    fused_run f;
    memset(&f, 0, sizeof f);
    op_status st = cel_fusion_read_opts(p, ctx->opts, &fo, err);
    if (!st)
        st = op_options_int(ctx->opts, "schedule", 0, 0, 1, &schedule, err);
    long contention = 1;
    if (!st && adjusting)
        st = op_options_int(ctx->opts, "guard", 1, 0, 1, &guard, err);
    if (!st && adjusting)
        st = op_options_int(ctx->opts, "contention", 1, 0, 1, &contention, err);
    if (!st)
        st = cel_fuse(p, &fo, &f.map, err);
    if (st)
        return st;
    if ((st = op_problem_init(&f.cp, f.map.coarse, p->c, err)))
        goto done;
    f.bound = 1;
    f.contention = (int)contention;
    int nc = f.cp.n;
    op_progress(ctx, "%s: %d ops fused into %d (R=%d, M=%lld bytes)", name, p->n, nc, fo.range,
                (long long)fo.mem_limit);
    f.seq = op_malloc(((size_t)nc + 1) * sizeof *f.seq, err);
    f.pos = op_malloc(((size_t)nc + 1) * sizeof *f.pos, err);
    f.device_of = op_malloc(((size_t)nc + 1) * sizeof *f.device_of, err);
    f.start = op_malloc(((size_t)nc + 1) * sizeof *f.start, err);
    if (!f.seq || !f.pos || !f.device_of || !f.start) {
        st = OP_ENOMEM;
        goto done;
    }
    if ((st = memory_of_groups(p->g, &f.map, &f.mem, err)) ||
        (st = op_levels_init(&f.lv, &f.cp, err)) ||
        (st = op_order_cpd_topo(f.map.coarse, f.lv.cpath, f.seq, f.pos, err)))
        goto done;
    op_placement fine, alt;
    int fb = 0, fb_alt = 0;
    if ((st = pass_to_fine(ctx, &f, adjusting, (int)schedule, &fine, &fb, err)))
        goto done;
    if (guard) {
        if (!(st = pass_to_fine(ctx, &f, 0, (int)schedule, &alt, &fb_alt, err))) {
            st = keep_faster(ctx, &fine, &fb, &alt, fb_alt, err);
            op_placement_destroy(&alt);
        }
    }
    if (!st) {
        op_placement_destroy(out);
        *out = fine;
        st = check_memory(ctx, out, fb, name, err);
    } else {
        op_placement_destroy(&fine);
    }
done:
    fused_run_destroy(&f);
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
