/*
 * test_baselines.c - the baselines the papers compare against (m-ETF,
 * m-SCT, HEFT, m-TOPO, METIS, expert) checked against their definitions:
 * every m-ETF pick is the earliest-start (ready op, device) pair, HEFT
 * takes ops in decreasing upward rank, m-TOPO fills devices in its
 * topological order, METIS keeps its balance tolerance, m-SCT's favorite
 * children form a matching; and the hard rules: every op placed,
 * colocation and pins respected, memory never exceeded when a feasible
 * placement exists, OP_EINFEASIBLE (or a best-effort placement) when none
 * does.  Last, `opplace bench` on a tiny setting prints one row per run.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/placer.h"
#include "opplace/run_ctx.h"
#include "opplace/simulate.h"
#include "opplace/zoo.h"
#include "placers/baselines/baselines.h"
#include "placers/baselines/etf_engine.h"
#include "placers/placer_mem.h"
#include "testkit.h"

static const char *const MINE[] = {"m-etf", "m-sct", "heft", "m-topo", "metis", "expert"};
#define N_MINE ((int)(sizeof MINE / sizeof *MINE))

/* Random DAG with layers, colocation groups, pins and memory sizes. */
static op_graph *rules_dag(int n, double p, uint64_t seed, int n_groups, int pin_every,
                           int64_t param, int64_t out)
{
    op_error err = {0};
    op_graph_builder *b = op_graph_builder_new("rules", &err);
    char name[32], layer[32], group[32];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "v%d", i);
        snprintf(layer, sizeof layer, "layer_%d", i * 4 / n);
        snprintf(group, sizeof group, "g%d", (int)(tk_rand(&seed) % 8));
        int in_group = n_groups && (int)(tk_rand(&seed) % 8) < n_groups;
        op_op_spec s = {.name = name, .time_us = 1 + (double)(tk_rand(&seed) % 100),
                        .output_bytes = out ? 1 + (int64_t)(tk_rand(&seed) % out) : 0,
                        .param_bytes = param ? param / 2 + (int64_t)(tk_rand(&seed) % param) : 0,
                        .layer = layer, .colocate = in_group ? group : NULL,
                        .device = pin_every && i % pin_every == 3 && !in_group ? "d1" : NULL};
        tk_op_full(b, &s);
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if ((double)(tk_rand(&seed) % 1000000) < p * 1e6)
                tk_edge(b, i, j, -1);
    return tk_finish(b);
}

static op_status run_placer(const char *name, const op_problem *p, int best_effort,
                            op_options *opts, op_placement *out, op_error *err)
{
    const op_placer *pl = op_placer_find(name);
    cr_assert(pl, "placer %s is registered", name);
    op_place_ctx ctx = {.p = p, .opts = opts, .seed = 1, .best_effort = best_effort};
    return op_place(pl, &ctx, out, err);
}

/* ---------------------------------------------------------------- m-ETF */

/* Replays the schedule with Baechi's communication model: one channel per
 * device, busy while it sends or receives; a tensor is sent once per
 * (source op, device), its transfers one by one in predecessor order.
 * Each pick must be a (ready op, device) pair whose start is the earliest
 * over every ready op and every device, and must start when its
 * transfers, committed, have arrived (free memory is unlimited here;
 * at most 8 devices). */
static void check_etf_picks(const op_problem *p, const etf_trace *tr, const int *device_of)
{
    const op_graph *g = p->g;
    int n = p->n, nd = p->nd;
    int *placed = calloc((size_t)n, sizeof(int));
    double *finish = calloc((size_t)n, sizeof(double)), *free_at = calloc((size_t)nd, sizeof(double));
    double *chan = calloc((size_t)nd, sizeof(double));
    double *cached = malloc((size_t)n * (size_t)nd * sizeof(double));
    for (int i = 0; i < n * nd; i++)
        cached[i] = -1;
    for (int k = 0; k < n; k++) {
        double best = INFINITY, mine = INFINITY;
        int pick = tr->sequence[k];
        for (int v = 0; v < n; v++) {
            if (placed[v])
                continue;
            int ready = 1;
            for (int e = g->pred_off[v]; e < g->pred_off[v + 1]; e++)
                ready &= placed[g->pred[e]];
            if (!ready)
                continue;
            for (int d = 0; d < nd; d++) {
                double t = free_at[d], ch[8];
                memcpy(ch, chan, (size_t)nd * sizeof *ch);
                for (int e = g->pred_off[v]; e < g->pred_off[v + 1]; e++) {
                    int u = g->pred[e], du = device_of[u];
                    double a = finish[u];
                    if (du != d && cached[u * nd + d] >= 0) {
                        a = cached[u * nd + d];
                    } else if (du != d) {
                        double w = op_cluster_transfer_us(p->c, du, d, g->edge_bytes[g->pred_edge[e]]);
                        double send = fmax(a, ch[du]);
                        ch[du] = send + w;
                        a = ch[d] = fmax(send, ch[d]) + w;
                    }
                    t = fmax(t, a);
                }
                best = fmin(best, t);
                if (v == pick && d == device_of[v])
                    mine = t;
            }
        }
        int v = pick, d = device_of[v];
        cr_assert(fabs(mine - best) < 1e-9, "pick %d (%s) could start at %g, earliest %g", k,
                  g->op_name[v], mine, best);
        double ready = 0;
        for (int e = g->pred_off[v]; e < g->pred_off[v + 1]; e++) {
            int u = g->pred[e], du = device_of[u];
            double a = finish[u];
            if (du != d) {
                if (cached[u * nd + d] < 0) {
                    double w = op_cluster_transfer_us(p->c, du, d, g->edge_bytes[g->pred_edge[e]]);
                    double send = fmax(a, chan[du]);
                    chan[du] = send + w;
                    cached[u * nd + d] = chan[d] = fmax(send, chan[d]) + w;
                }
                a = cached[u * nd + d];
            }
            ready = fmax(ready, a);
        }
        cr_assert(fabs(tr->start[v] - fmax(ready, free_at[d])) < 1e-9,
                  "pick %d (%s) starts at %g, its data is there at %g", k, g->op_name[v],
                  tr->start[v], fmax(ready, free_at[d]));
        placed[v] = 1;
        finish[v] = tr->start[v] + op_exec_us(p, v, d);
        free_at[d] = finish[v];
    }
    free(placed);
    free(finish);
    free(free_at);
    free(chan);
    free(cached);
}

Test(m_etf, every_pick_is_the_earliest_start_pair)
{
    for (uint64_t seed = 1; seed <= 5; seed++) {
        tk_problem tp;
        tk_bind(&tp, tk_random_dag(30, 0.15, seed), tk_cluster(3, 20, 1e-4, INT64_C(1) << 40));
        op_placement pl;
        op_error err = {0};
        cr_assert_eq(op_placement_init(&pl, tp.p.n, tp.p.nd, &err), OP_OK);
        etf_trace tr = {calloc(30, sizeof(double)), calloc(30, sizeof(int))};
        op_place_ctx ctx = {.p = &tp.p};
        etf_options o = {.name = "m-etf", .set_order = 1, .tie = ETF_TIE_BFS};
        cr_assert_eq(etf_schedule(&ctx, &o, &pl, &tr, &err), OP_OK, "%s", err.msg);
        check_etf_picks(&tp.p, &tr, pl.device_of);
        /* the first pick: the entry op first in the BFS order (the lowest
         * index among the entry ops), at time 0 on device 0 */
        int first = tr.sequence[0];
        cr_assert_eq(tr.start[first], 0);
        cr_assert_eq(pl.device_of[first], 0);
        for (int v = 0; v < first; v++)
            cr_assert_neq(tp.g->pred_off[v + 1], tp.g->pred_off[v], "op %d is an earlier entry", v);
        free(tr.start);
        free(tr.sequence);
        op_placement_destroy(&pl);
        tk_unbind(&tp);
    }
}

/* A hand-made CNN training step: two residual blocks (a main
 * path and a downsample branch joined by an add), their backward mirror
 * that reads the saved forward activations, and small weight updates.
 * Activations are 12.8 MB (1.3 ms on a 10 GB/s link), compute a few
 * hundred microseconds.  The old m-ETF, whose estimate let every transfer
 * run without queueing, sent the branches' activations across devices and
 * ran 1.45x slower than one GPU; with Baechi's channel model no tensor
 * larger than a weight gradient crosses, and the step is no slower than
 * one device's. */
static op_graph *mini_cnn(void)
{
    op_error err = {0};
    op_graph_builder *b = op_graph_builder_new("mini_cnn", &err);
    const int64_t A = 12800000, S = 3200000;
    int x = tk_op(b, "x", 1, A), prev = x, in[2], c1[2], c2[2];
    char nm[32];
#define OP(name, t, out) (snprintf(nm, sizeof nm, name "_%d", k), tk_op(b, nm, t, out))
    for (int k = 0; k < 2; k++) {
        in[k] = prev;
        c1[k] = OP("c1", 400, S);
        tk_edge(b, prev, c1[k], A);
        c2[k] = OP("c2", 200, A);
        tk_edge(b, c1[k], c2[k], S);
        int bn = OP("bn", 30, A);
        tk_edge(b, c2[k], bn, A);
        int ds = OP("ds", 400, A);
        tk_edge(b, prev, ds, A);
        int add = OP("add", 40, A);
        tk_edge(b, bn, add, A);
        tk_edge(b, ds, add, A);
        prev = add;
    }
    int loss = tk_op(b, "loss", 5, 4096), g = loss;
    tk_edge(b, prev, loss, A);
    for (int k = 1; k >= 0; k--) {
        int gadd = OP("gadd", 40, A);
        tk_edge(b, g, gadd, g == loss ? 4096 : A);
        int gbn = OP("gbn", 45, A);
        tk_edge(b, gadd, gbn, A);
        tk_edge(b, c2[k], gbn, A);
        int gc2 = OP("gc2", 400, S);
        tk_edge(b, gbn, gc2, A);
        tk_edge(b, c1[k], gc2, S);
        int gc1 = OP("gc1", 800, A);
        tk_edge(b, gc2, gc1, S);
        tk_edge(b, in[k], gc1, A);
        int gds = OP("gds", 800, A);
        tk_edge(b, gadd, gds, A);
        tk_edge(b, in[k], gds, A);
        int gsum = OP("gsum", 40, A);
        tk_edge(b, gc1, gsum, A);
        tk_edge(b, gds, gsum, A);
        int u1 = OP("u1", 60, 0), u2 = OP("u2", 60, 0);
        tk_edge(b, gc1, u1, 1000000);
        tk_edge(b, gds, u2, 1000000);
        g = gsum;
    }
#undef OP
    return tk_finish(b);
}

Test(m_etf, keeps_a_cnn_s_activations_on_one_device)
{
    tk_problem tp;
    tk_bind(&tp, mini_cnn(), tk_cluster(4, 12, 1e-4, INT64_C(1) << 34));
    op_options *o = op_options_new(NULL);
    op_error err = {0};
    cr_assert_eq(op_options_set(o, "order", "no", &err), OP_OK);
    op_placement one, etf;
    cr_assert_eq(run_placer("single", &tp.p, 0, NULL, &one, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(run_placer("m-etf", &tp.p, 0, o, &etf, &err), OP_OK, "%s", err.msg);
    const op_graph *g = tp.g;
    for (int e = 0; e < g->n_edges; e++)
        cr_assert(etf.device_of[g->edge_src[e]] == etf.device_of[g->edge_dst[e]] ||
                      g->edge_bytes[e] <= 1000000,
                  "%s -> %s (%lld bytes) crosses devices", g->op_name[g->edge_src[e]],
                  g->op_name[g->edge_dst[e]], (long long)g->edge_bytes[e]);
    double t1 = tk_step(&tp.p, one.device_of), te = tk_step(&tp.p, etf.device_of);
    /* one device: 6640 us; the old m-ETF: 9628 us (first-ready order) */
    cr_assert(te <= t1 * 1.01, "m-etf %.1f us, one device %.1f us", te, t1);
    op_placement_destroy(&one);
    op_placement_destroy(&etf);
    op_options_free(o);
    tk_unbind(&tp);
}

/* ---------------------------------------------------------------- single */

/* One memory truth (formats.md 5.5): a chain of ten ops of 100
 * output bytes each needs 1000 bytes by the static sum but peaks at 200 by
 * liveness (an op's output lives until its consumer finishes).  single must
 * accept it on a 350-byte device, and refuse it on a 150-byte one. */
Test(single, fits_by_liveness_not_by_the_static_sum)
{
    op_error err = {0};
    for (int cap = 150; cap <= 350; cap += 200) {
        op_graph_builder *b = op_graph_builder_new("chain", &err);
        char nm[16];
        for (int i = 0; i < 10; i++) {
            snprintf(nm, sizeof nm, "v%d", i);
            tk_op(b, nm, 10, 100);
            if (i)
                tk_edge(b, i - 1, i, 100);
        }
        tk_problem tp;
        tk_bind(&tp, tk_finish(b), tk_cluster(2, 1, 1e-3, cap));
        op_placement pl;
        op_status st = run_placer("single", &tp.p, 0, NULL, &pl, &err);
        if (cap == 350) {
            cr_assert_eq(st, OP_OK, "%s", err.msg);
            op_sim_result r;
            cr_assert_eq(op_sim_result_init(&r, &tp.p, &err), OP_OK);
            double t = tk_simulate(&tp.p, pl.device_of, &r);
            cr_assert_float_eq(t, 100.0, 1e-9);
            cr_assert_not(r.oom);
            cr_assert_eq(r.peak_mem[pl.device_of[0]], 200);
            op_sim_result_destroy(&r);
            op_placement_destroy(&pl);
        } else {
            cr_assert_eq(st, OP_EINFEASIBLE, "a 150-byte device cannot hold a 200-byte peak");
        }
        tk_unbind(&tp);
    }
}

Test(m_etf, simulator_agrees_with_its_schedule_without_contention)
{
    /* zero-latency, free links: no contention, so the simulator replays the
     * order and reproduces ETF's own makespan */
    tk_problem tp;
    tk_bind(&tp, tk_random_dag(40, 0.1, 9), tk_cluster(3, 0, 0, INT64_C(1) << 40));
    op_placement pl;
    op_error err = {0};
    op_placement_init(&pl, tp.p.n, tp.p.nd, &err);
    etf_trace tr = {calloc(40, sizeof(double)), calloc(40, sizeof(int))};
    op_place_ctx ctx = {.p = &tp.p};
    etf_options o = {.name = "m-etf", .set_order = 1};
    cr_assert_eq(etf_schedule(&ctx, &o, &pl, &tr, &err), OP_OK);
    double makespan = 0;
    for (int v = 0; v < 40; v++)
        if (tr.start[v] + op_exec_us(&tp.p, v, pl.device_of[v]) > makespan)
            makespan = tr.start[v] + op_exec_us(&tp.p, v, pl.device_of[v]);
    op_sim_result r;
    op_sim_result_init(&r, &tp.p, &err);
    cr_assert_eq(op_simulate(&tp.p, &pl, &r, NULL, &err), OP_OK, "%s", err.msg);
    cr_assert(fabs(r.step_time_us - makespan) < 1e-6, "sim %g vs etf %g", r.step_time_us,
              makespan);
    op_sim_result_destroy(&r);
    free(tr.start);
    free(tr.sequence);
    op_placement_destroy(&pl);
    tk_unbind(&tp);
}

/* ---------------------------------------------------------------- HEFT */

Test(heft, processes_ops_in_decreasing_upward_rank)
{
    tk_problem tp;
    tk_bind(&tp, tk_random_dag(40, 0.12, 3), tk_cluster(3, 30, 2e-4, INT64_C(1) << 40));
    const op_problem *p = &tp.p;
    const op_graph *g = tp.g;
    int order[40];
    double rank[40], want[40];
    op_error err = {0};
    cr_assert_eq(heft_priority_order(p, order, rank, &err), OP_OK);
    /* the definition, computed here independently (all devices alike) */
    double lat = 30, upb = 2e-4;
    for (int t = 39; t >= 0; t--) {
        int v = g->topo[t];
        double tail = 0;
        for (int k = g->succ_off[v]; k < g->succ_off[v + 1]; k++) {
            double x = lat + upb * (double)g->edge_bytes[g->succ_edge[k]] + want[g->succ[k]];
            if (x > tail)
                tail = x;
        }
        want[v] = op_exec_us(p, v, 0) + tail;
    }
    int pos[40];
    for (int i = 0; i < 40; i++) {
        cr_assert(fabs(rank[order[i]] - want[order[i]]) < 1e-6);
        if (i)
            cr_assert_geq(rank[order[i - 1]], rank[order[i]]);
        pos[order[i]] = i;
    }
    for (int e = 0; e < g->n_edges; e++) /* a topological order */
        cr_assert_lt(pos[g->edge_src[e]], pos[g->edge_dst[e]]);
    tk_unbind(&tp);
}

Test(heft, beats_single_device_on_a_wide_graph)
{
    /* 8 independent chains, free communication: HEFT must spread them */
    op_error err = {0};
    op_graph_builder *b = op_graph_builder_new("chains", &err);
    char name[16];
    for (int i = 0; i < 32; i++) {
        snprintf(name, sizeof name, "c%d_%d", i / 4, i % 4);
        tk_op(b, name, 10, 0);
        if (i % 4)
            tk_edge(b, i - 1, i, 0);
    }
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(4, 0, 0, INT64_C(1) << 40));
    op_placement pl;
    cr_assert_eq(run_placer("heft", &tp.p, 0, NULL, &pl, &err), OP_OK);
    op_sim_result r;
    op_sim_result_init(&r, &tp.p, &err);
    op_simulate(&tp.p, &pl, &r, NULL, &err);
    cr_assert(fabs(r.step_time_us - 80) < 1e-6, "8 chains of 40 us on 4 devices: %g", r.step_time_us);
    op_sim_result_destroy(&r);
    op_placement_destroy(&pl);
    tk_unbind(&tp);
}

/* ---------------------------------------------------------------- m-TOPO */

Test(m_topo, fills_devices_in_topological_order)
{
    for (uint64_t seed = 1; seed <= 4; seed++) {
        tk_problem tp;
        tk_bind(&tp, tk_random_dag(60, 0.08, seed), tk_cluster(4, 10, 1e-4, INT64_C(1) << 40));
        op_error err = {0};
        op_placement pl;
        cr_assert_eq(run_placer("m-topo", &tp.p, 0, NULL, &pl, &err), OP_OK, "%s", err.msg);
        int order[60], used[4] = {0};
        int rank[60];
        op_rank_order(&tp.p, OP_RANK_LONGEST_FIRST, rank, &err);
        m_topo_bfs_order(tp.g, rank, order, &err);
        for (int k = 1; k < 60; k++)
            cr_assert_geq(pl.device_of[order[k]], pl.device_of[order[k - 1]],
                          "seed %d: op %d goes back to an earlier device", (int)seed, k);
        for (int i = 0; i < 60; i++)
            used[pl.device_of[i]] = 1;
        cr_assert(used[0] && used[3], "all devices filled");
        op_placement_destroy(&pl);
        tk_unbind(&tp);
    }
}

/* ---------------------------------------------------------------- METIS */

Test(metis, respects_its_balance_tolerance)
{
    for (uint64_t seed = 1; seed <= 3; seed++) {
        tk_problem tp;
        tk_bind(&tp, tk_random_dag(300, 0.02, seed), tk_cluster(4, 10, 1e-4, INT64_C(1) << 40));
        op_error err = {0};
        op_placement pl;
        cr_assert_eq(run_placer("metis", &tp.p, 0, NULL, &pl, &err), OP_OK, "%s", err.msg);
        double load[4] = {0}, total = 0, biggest = 0;
        for (int i = 0; i < tp.p.n; i++) {
            load[pl.device_of[i]] += tp.p.work[i];
            total += tp.p.work[i];
            if (tp.p.work[i] > biggest)
                biggest = tp.p.work[i];
        }
        for (int d = 0; d < 4; d++)
            cr_assert_leq(load[d], 1.03 * total / 4 + biggest, "device %d: %g of %g", d, load[d],
                          total);
        /* fewer bytes cut than dealing ops out in turn */
        int64_t cut = 0, rr_cut = 0;
        for (int e = 0; e < tp.g->n_edges; e++) {
            int a = tp.g->edge_src[e], b = tp.g->edge_dst[e];
            cut += pl.device_of[a] != pl.device_of[b] ? tp.g->edge_bytes[e] : 0;
            rr_cut += tp.g->topo_pos[a] % 4 != tp.g->topo_pos[b] % 4 ? tp.g->edge_bytes[e] : 0;
        }
        cr_assert_lt(cut, rr_cut);
        op_placement_destroy(&pl);
        tk_unbind(&tp);
    }
}

/* ---------------------------------------------------------------- m-SCT */

Test(m_sct, favorite_children_form_a_matching_on_edges)
{
    /* the LP (every graph small enough) and the greedy rule (none is) */
    const long methods[] = {100000000, 0};
    for (int m = 0; m < 2; m++) {
        tk_problem tp;
        tk_bind(&tp, tk_random_dag(40, 0.1, 5), tk_cluster(3, 50, 1e-3, INT64_C(1) << 40));
        op_error err = {0};
        op_options *o = op_options_new(&err);
        op_place_ctx ctx = {.p = &tp.p, .opts = o};
        int fav[40], parents[40] = {0}, any = 0;
        cr_assert_eq(m_sct_favorites(&ctx, methods[m], fav, &err), OP_OK);
        for (int v = 0; v < 40; v++)
            if (fav[v] >= 0) {
                cr_assert_geq(op_graph_find_edge(tp.g, v, fav[v]), 0, "favorite is a child");
                cr_assert_eq(parents[fav[v]]++, 0, "a child has one favorite parent");
                any = 1;
            }
        cr_assert(any, "max edges %ld: some favorite child", methods[m]);
        op_placement pl;
        cr_assert_eq(run_placer("m-sct", &tp.p, 0, o, &pl, &err), OP_OK, "%s", err.msg);
        op_placement_destroy(&pl);
        op_options_free(o);
        tk_unbind(&tp);
    }
}

/* expert: tests/test_expert.c */

/* ---------------------------------------------------------------- rules */

Test(all_baselines, cover_every_op_and_respect_colocation_and_pins)
{
    for (uint64_t seed = 1; seed <= 4; seed++) {
        tk_problem tp;
        tk_bind(&tp, rules_dag(50, 0.1, seed, 3, 7, 0, 1000), tk_cluster(3, 10, 1e-4, INT64_C(1) << 40));
        for (int k = 0; k < N_MINE; k++) {
            op_error err = {0};
            op_placement pl;
            /* op_place checks every hard rule and fails with OP_EINTERNAL */
            cr_assert_eq(run_placer(MINE[k], &tp.p, 0, NULL, &pl, &err), OP_OK, "%s: %s",
                         MINE[k], err.msg);
            for (int i = 0; i < tp.p.n; i++) {
                cr_assert(pl.device_of[i] >= 0 && pl.device_of[i] < 3);
                if (tp.g->device[i])
                    cr_assert_eq(pl.device_of[i], 1, "%s: pin", MINE[k]);
            }
            op_sim_result r;
            op_sim_result_init(&r, &tp.p, &err);
            cr_assert_eq(op_simulate(&tp.p, &pl, &r, NULL, &err), OP_OK, "%s: %s", MINE[k],
                         err.msg);
            op_sim_result_destroy(&r);
            op_placement_destroy(&pl);
        }
        tk_unbind(&tp);
    }
}

Test(all_baselines, never_exceed_memory_when_a_placement_fits)
{
    for (uint64_t seed = 1; seed <= 4; seed++) {
        /* params 500..1500 bytes per op, tiny tensors: 40 ops need ~40 KB;
         * three devices of 0.55 x that hold it with room to spare, but no
         * two devices do */
        op_graph *g = rules_dag(40, 0.1, seed, seed % 2 ? 2 : 0, 0, 1000, 4);
        int64_t total = 0;
        for (int i = 0; i < g->n_ops; i++)
            total += g->param_bytes[i] + g->output_bytes[i];
        tk_problem tp;
        tk_bind(&tp, g, tk_cluster(3, 10, 1e-4, total * 55 / 100));
        for (int k = 0; k < N_MINE; k++) {
            op_error err = {0};
            op_placement pl;
            cr_assert_eq(run_placer(MINE[k], &tp.p, 0, NULL, &pl, &err), OP_OK,
                         "seed %d %s: %s", (int)seed, MINE[k], err.msg);
            op_sim_result r;
            op_sim_result_init(&r, &tp.p, &err);
            cr_assert_eq(op_simulate(&tp.p, &pl, &r, NULL, &err), OP_OK);
            cr_assert(!r.oom, "seed %d %s runs out of memory", (int)seed, MINE[k]);
            op_sim_result_destroy(&r);
            op_placement_destroy(&pl);
        }
        tk_unbind(&tp);
    }
}

Test(all_baselines, infeasible_unless_best_effort)
{
    op_graph *g = rules_dag(30, 0.1, 2, 0, 0, 1000, 4);
    tk_problem tp;
    tk_bind(&tp, g, tk_cluster(2, 10, 1e-4, 400)); /* smaller than any op's params */
    for (int k = 0; k < N_MINE; k++) {
        op_error err = {0};
        op_placement pl;
        cr_assert_eq(run_placer(MINE[k], &tp.p, 0, NULL, &pl, &err), OP_EINFEASIBLE, "%s: %s",
                     MINE[k], err.msg);
        cr_assert_eq(err.code, OP_EINFEASIBLE);
        op_error_clear(&err);
        cr_assert_eq(run_placer(MINE[k], &tp.p, 1, NULL, &pl, &err), OP_OK, "%s best effort: %s",
                     MINE[k], err.msg);
        op_placement_destroy(&pl);
    }
    tk_unbind(&tp);
}

/* ------------------------------------------------- liveness memory */

/* Simulate pl (its order too); returns the result's oom flag. */
static int simulated_oom(const op_problem *p, const op_placement *pl)
{
    op_error err = {0};
    op_sim_result r;
    op_sim_result_init(&r, p, &err);
    cr_assert_eq(op_simulate(p, pl, &r, NULL, &err), OP_OK, "%s", err.msg);
    int oom = r.oom;
    op_sim_result_destroy(&r);
    return oom;
}

/* Every memory-aware placer on tp: placed (OP_OK) and no simulated OOM. */
static void all_place_without_oom(const tk_problem *tp, const char *what)
{
    for (int k = 0; k < N_MINE; k++) {
        op_error err = {0};
        op_placement pl;
        cr_assert_eq(run_placer(MINE[k], &tp->p, 0, NULL, &pl, &err), OP_OK, "%s, %s: %s", what,
                     MINE[k], err.msg);
        cr_assert(!simulated_oom(&tp->p, &pl), "%s: %s runs out of memory", what, MINE[k]);
        op_placement_destroy(&pl);
    }
}

Test(liveness, a_group_reserves_the_tensors_its_later_members_receive)
{
    /* a (group g, 100 B params, 10 B out) -> b (group g, 10 B out) and
     * p (50 B out) -> b: the tied-embedding GPT case in miniature (the tied
     * embedding's update receives the head's 154 MB weight gradient).
     * Charging the group at a also charges b's copy of p's tensor over
     * [slot of p, slot of b], so the estimate agrees with the simulator
     * (170 B on a's device with p elsewhere) before p is placed; the old
     * estimate said 120 B and let the device fill up until b fit nowhere. */
    op_error err = {0};
    op_graph_builder *gb = op_graph_builder_new("tied", &err);
    int a = tk_op_full(gb, &(op_op_spec){.name = "a", .time_us = 10, .output_bytes = 10,
                                         .param_bytes = 100, .colocate = "g"});
    int p = tk_op_full(gb, &(op_op_spec){.name = "p", .time_us = 10, .output_bytes = 50});
    int bb = tk_op_full(gb, &(op_op_spec){.name = "b", .time_us = 10, .output_bytes = 10,
                                          .colocate = "g"});
    tk_edge(gb, a, bb, 10);
    tk_edge(gb, p, bb, 50);
    tk_problem tp;
    tk_bind(&tp, tk_finish(gb), tk_cluster(2, 1, 1e-3, 1000));
    int order[3] = {a, p, bb};
    for (int pd = 0; pd < 2; pd++) { /* p elsewhere, then p on a's device */
        pmem m;
        cr_assert_eq(pmem_init(&m, &tp.p, order, NULL, &err), OP_OK);
        int dev[3] = {-1, -1, -1};
        pmem_commit(&m, a, 0, dev);
        dev[a] = 0;
        cr_assert_eq(pmem_peak(&m, 0), 170, "a's group holds b's received copy: %lld",
                     (long long)pmem_peak(&m, 0));
        pmem_commit(&m, p, pd, dev);
        dev[p] = pd;
        pmem_commit(&m, bb, 0, dev);
        dev[bb] = 0;
        /* p on device 0: its own 50 B output replaces the reservation */
        cr_assert_eq(pmem_peak(&m, 0), 170, "p on %d: %lld", pd, (long long)pmem_peak(&m, 0));
        cr_assert_eq(pmem_peak(&m, 1), pd ? 50 : 0);
        op_sim_result r;
        cr_assert_eq(op_sim_result_init(&r, &tp.p, &err), OP_OK);
        tk_simulate(&tp.p, dev, &r);
        cr_assert_eq(r.peak_mem[0], 170, "the simulator agrees: %lld", (long long)r.peak_mem[0]);
        op_sim_result_destroy(&r);
        pmem_destroy(&m);
    }
    tk_unbind(&tp);
}

/* An attempt that puts every op on d0, claims the estimate fits, counts
 * its calls and, with interrupt set, raises the Ctrl-C flag as it ends. */
typedef struct all_on_d0 {
    int calls, interrupt;
} all_on_d0;

static op_status all_on_d0_attempt(const op_place_ctx *ctx, void *arg, const double *margin,
                                   op_placement *out, int *fits, op_error *err)
{
    (void)margin;
    all_on_d0 *a = arg;
    a->calls++;
    if (!out->device_of && op_placement_init(out, ctx->p->n, ctx->p->nd, err))
        return OP_ENOMEM;
    for (int i = 0; i < ctx->p->n; i++)
        out->device_of[i] = 0;
    *fits = 1;
    if (a->interrupt)
        op_set_interrupted(1);
    return OP_OK;
}

/* Ctrl-C between an attempt and its simulator check: the attempt stands,
 * unchecked (the caller's simulation reports its oom), instead of an error
 * that made the command fall back to single's placement.  Without Ctrl-C
 * the same attempt, out of memory in simulation, is retried under tighter
 * margins and refused. */
Test(memory_check, ctrl_c_before_the_check_keeps_the_attempt_unchecked)
{
    tk_problem tp;
    op_graph_builder *b = op_graph_builder_new("big", &(op_error){0});
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof name, "v%d", i);
        tk_op(b, name, 10, INT64_C(4) << 20);
        if (i)
            tk_edge(b, i - 1, i, -1);
    }
    tk_bind(&tp, tk_finish(b), tk_cluster(2, 10, 1e-4, INT64_C(1) << 20));
    op_place_ctx ctx = {.p = &tp.p, .seed = 1};
    for (int interrupt = 0; interrupt < 2; interrupt++) {
        all_on_d0 a = {.interrupt = interrupt};
        op_placement pl = {0};
        op_error err = {0};
        op_sim *sim = op_sim_new(&tp.p, &err);
        op_sim_result r;
        cr_assert_eq(op_sim_result_init(&r, &tp.p, &err), OP_OK);
        int simulated = -1;
        op_status st = pmem_place_checked_sim(&ctx, "d0", all_on_d0_attempt, &a, &pl, sim, &r,
                                              &simulated, &err);
        op_set_interrupted(0);
        if (interrupt) {
            cr_assert_eq(st, OP_OK, "%s", err.msg);
            cr_assert_eq(a.calls, 1);
            cr_assert_eq(simulated, 0, "nothing was simulated");
            for (int i = 0; i < tp.p.n; i++)
                cr_assert_eq(pl.device_of[i], 0);
            cr_assert(simulated_oom(&tp.p, &pl), "the caller's simulation sees the oom");
        } else {
            cr_assert_eq(st, OP_EINFEASIBLE, "%s", err.msg);
            cr_assert_eq(a.calls, 6, "one attempt per margin: %d", a.calls);
        }
        op_sim_result_destroy(&r);
        op_sim_free(sim);
        op_placement_destroy(&pl);
    }
    tk_unbind(&tp);
}

Test(liveness, a_long_chain_fits_although_its_outputs_sum_far_beyond_memory)
{
    /* 80 ops in a chain, 1 MiB each: outputs sum to 80 MiB, the simulated
     * peak on one device is two tensors; each device holds 8 MiB */
    op_error err = {0};
    op_graph_builder *b = op_graph_builder_new("chain", &err);
    for (int i = 0; i < 80; i++) {
        char name[16], layer[16];
        snprintf(name, sizeof name, "c%d", i);
        snprintf(layer, sizeof layer, "layer_%d", i / 20);
        tk_op_full(b, &(op_op_spec){.name = name, .time_us = 10, .output_bytes = 1 << 20,
                                    .temp_bytes = 1 << 18, .layer = layer});
        if (i)
            tk_edge(b, i - 1, i, -1);
    }
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(2, 10, 1e-4, INT64_C(8) << 20));
    all_place_without_oom(&tp, "chain");
    tk_unbind(&tp);
}

Test(liveness, forward_backward_activations_fit_where_one_device_would_not)
{
    /* forward f0..f29 whose outputs the backward b29..b0 consumes: every
     * activation is live at the turn, 30 MiB in all plus the backward's
     * own tensors; three devices of 16 MiB hold it split, one does not */
    op_error err = {0};
    op_graph_builder *b = op_graph_builder_new("fwdbwd", &err);
    char name[16], layer[16];
    for (int i = 0; i < 30; i++) {
        snprintf(name, sizeof name, "f%d", i);
        snprintf(layer, sizeof layer, "layer_%d", i / 10);
        tk_op_full(b, &(op_op_spec){.name = name, .time_us = 10, .output_bytes = 1 << 20,
                                    .layer = layer});
        if (i)
            tk_edge(b, i - 1, i, -1);
    }
    for (int i = 29; i >= 0; i--) {
        snprintf(name, sizeof name, "b%d", i);
        snprintf(layer, sizeof layer, "layer_%d", i / 10);
        int v = tk_op_full(b, &(op_op_spec){.name = name, .time_us = 10,
                                            .output_bytes = 1 << 19, .layer = layer});
        tk_edge(b, i, v, -1);
        tk_edge(b, v - 1, v, -1);
    }
    tk_problem tp;
    tk_bind(&tp, tk_finish(b), tk_cluster(3, 10, 1e-4, INT64_C(16) << 20));
    op_sim_result r;
    op_error e2 = {0};
    op_sim_result_init(&r, &tp.p, &e2);
    int zeros[60] = {0};
    tk_simulate(&tp.p, zeros, &r);
    cr_assert(r.oom, "one device alone runs out of memory");
    op_sim_result_destroy(&r);
    all_place_without_oom(&tp, "forward-backward");
    tk_unbind(&tp);
}

Test(liveness, tight_random_cases_never_run_out_of_memory)
{
    /* capacity = the simulated peak of all ops on one device: a feasible
     * placement is known, so every placer must find one that fits */
    for (uint64_t seed = 1; seed <= 6; seed++) {
        op_graph *g = rules_dag(60, 0.08, seed, seed % 3 == 0 ? 2 : 0, 0, 200, 4000);
        tk_problem probe;
        tk_bind(&probe, g, tk_cluster(1, 10, 1e-4, INT64_C(1) << 40));
        int zeros[60] = {0};
        op_sim_result r;
        op_error err = {0};
        op_sim_result_init(&r, &probe.p, &err);
        tk_simulate(&probe.p, zeros, &r);
        int64_t peak = r.peak_mem[0], total = 0;
        op_sim_result_destroy(&r);
        for (int i = 0; i < g->n_ops; i++)
            total += g->param_bytes[i] + g->output_bytes[i];
        cr_assert_lt(peak, total, "liveness matters in this case");
        tk_problem tp;
        tk_bind(&tp, g, tk_cluster(3, 10, 1e-4, peak));
        probe.g = NULL; /* g now belongs to tp */
        tk_unbind(&probe);
        all_place_without_oom(&tp, "tight random");
        tk_unbind(&tp);
    }
}

Test(liveness, transformer_on_four_pcie_v100s)
{
    /* 14,902 ops, outputs 328 GiB, one-device peak 108 GiB, 4 x 32 GB */
    op_error err = {0};
    op_graph *g = op_zoo_find("transformer")->generate(NULL, &err);
    cr_assert(g, "%s", err.msg);
    tk_problem tp;
    tk_bind(&tp, g, op_cluster_preset("v100-pcie", 4, 0, &err));
    const char *must[] = {"m-topo", "metis", "expert"};
    for (int k = 0; k < 3; k++) {
        op_placement pl;
        cr_assert_eq(run_placer(must[k], &tp.p, 0, NULL, &pl, &err), OP_OK, "%s: %s", must[k],
                     err.msg);
        cr_assert(!simulated_oom(&tp.p, &pl), "%s runs out of memory", must[k]);
        op_placement_destroy(&pl);
    }
    /* the list schedulers' memory-blind device choice copies forward
     * activations to other devices until nothing fits (bench/RESULTS.md):
     * they may refuse, but never claim a fit that runs out of memory */
    const char *may[] = {"m-etf", "heft"};
    for (int k = 0; k < 2; k++) {
        op_placement pl;
        op_error_clear(&err);
        op_status st = run_placer(may[k], &tp.p, 0, NULL, &pl, &err);
        cr_assert(st == OP_OK || st == OP_EINFEASIBLE, "%s: %s", may[k], err.msg);
        if (st == OP_OK) {
            cr_assert(!simulated_oom(&tp.p, &pl), "%s runs out of memory", may[k]);
            op_placement_destroy(&pl);
        }
    }
    tk_unbind(&tp);
}

/* ---------------------------------------------------------------- bench */

Test(bench, prints_one_row_per_model_cluster_and_algorithm)
{
    char cmd[1024], csv[256], md[256], *out = NULL;
    snprintf(csv, sizeof csv, "%s/bench.csv", tk_tmpdir());
    snprintf(md, sizeof md, "%s/bench.md", tk_tmpdir());
    snprintf(cmd, sizeof cmd,
             "%s bench --models synthetic:ops=120:seed=2,synthetic:ops=80 --gpus 2,3 "
             "--algo m-etf,heft,expert -o %s,%s",
             OPPLACE_BIN, csv, md);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out ? out : "");
    int rows = 0, progress = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strncmp(line, "| synthetic", 11)) {
            rows++;
            cr_assert(!strstr(line, "failed"), "%s", line);
            if (strstr(line, "| expert |"))
                cr_assert(strstr(line, "| 1.000 |"), "expert's ratio to itself: %s", line);
        }
        if (line[0] == '[')
            progress++;
    }
    cr_assert_eq(rows, 2 * 2 * 3);
    cr_assert_eq(progress, 12);
    free(out);
    FILE *f = fopen(csv, "r");
    cr_assert(f);
    char line[1024];
    int lines = 0;
    while (fgets(line, sizeof line, f))
        lines++;
    fclose(f);
    cr_assert_eq(lines, 1 + 12);
    /* -o takes several files, each in the format of its ending */
    f = fopen(md, "r");
    cr_assert(f);
    lines = 0;
    while (fgets(line, sizeof line, f))
        lines += !strncmp(line, "| synthetic", 11);
    fclose(f);
    cr_assert_eq(lines, 12);
    /* an ending bench cannot write is refused before any work */
    snprintf(cmd, sizeof cmd, "%s bench --models synthetic:ops=50 -o %s/bench.txt", OPPLACE_BIN,
             tk_tmpdir());
    cr_assert_eq(tk_run(cmd, &out), 2, "%s", out ? out : "");
    cr_expect(strstr(out, "name the file .csv, .md or .svg") != NULL, "%s", out);
    free(out);
    out = NULL;
    /* an unknown algorithm is a usage error */
    snprintf(cmd, sizeof cmd, "%s bench --models synthetic:ops=50 --algo nope", OPPLACE_BIN);
    cr_assert_eq(tk_run(cmd, &out), 2);
    free(out);
}

/* ------------------------------------------------- the op order of a file */

/* g with its ops in a random order (edges follow their ops). */
static op_graph *shuffled(const op_graph *g, uint64_t seed)
{
    op_error err = {0};
    int n = g->n_ops, *perm = malloc((size_t)n * sizeof *perm), *at = malloc((size_t)n * sizeof *at);
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(tk_rand(&seed) % (uint64_t)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    op_graph_builder *b = op_graph_builder_new(g->name, &err);
    for (int k = 0; k < n; k++) {
        int v = perm[k], grp = g->colocate[v];
        at[v] = tk_op_full(b, &(op_op_spec){
            .name = g->op_name[v], .time_us = g->time_val[g->time_off[v]],
            .output_bytes = g->output_bytes[v], .param_bytes = g->param_bytes[v],
            .temp_bytes = g->temp_bytes[v], .colocate = grp == OP_NONE ? NULL : g->group_name[grp]});
    }
    for (int e = 0; e < g->n_edges; e++)
        tk_edge(b, at[g->edge_src[e]], at[g->edge_dst[e]], g->edge_bytes[e]);
    free(perm);
    free(at);
    return tk_finish(b);
}

/* x -> {b, a}, a -> c, written x, b, a, c: a heads the longer path.  The
 * rank (longest sibling first) is the program order a depth-first walk
 * gives, x a c b, in any op order of the file; the file's order (the old
 * tie) was x b a c. */
static op_graph *fork_graph(int reversed)
{
    op_error err = {0};
    op_graph_builder *b = op_graph_builder_new("fork", &err);
    const char *names[4] = {"x", "b", "a", "c"};
    int id[4];
    for (int k = 0; k < 4; k++) {
        int i = reversed ? 3 - k : k;
        id[i] = tk_op(b, names[i], 100, 1000);
    }
    tk_edge(b, id[0], id[1], 1000);
    tk_edge(b, id[0], id[2], 1000);
    tk_edge(b, id[2], id[3], 1000);
    return tk_finish(b);
}

static int op_named(const op_graph *g, const char *name)
{
    for (int v = 0; v < g->n_ops; v++)
        if (!strcmp(g->op_name[v], name))
            return v;
    return -1;
}

Test(op_rank, is_a_depth_first_program_order_in_any_file_order)
{
    const char *want[4] = {"x", "a", "c", "b"};
    for (int rev = 0; rev < 2; rev++) {
        tk_problem tp;
        tk_bind(&tp, fork_graph(rev), tk_cluster(2, 10, 1e-4, INT64_C(1) << 40));
        op_error err = {0};
        int rank[4], bfs[4];
        cr_assert_eq(op_rank_order(&tp.p, OP_RANK_LONGEST_FIRST, rank, &err), OP_OK);
        for (int k = 0; k < 4; k++)
            cr_assert_eq(rank[op_named(tp.g, want[k])], k, "%s", want[k]);
        /* the other walks: shortest sibling first x b a c, breadth first x a b c */
        const char *shortest[4] = {"x", "b", "a", "c"}, *breadth[4] = {"x", "a", "b", "c"};
        cr_assert_eq(op_rank_order(&tp.p, OP_RANK_SHORTEST_FIRST, rank, &err), OP_OK);
        for (int k = 0; k < 4; k++)
            cr_assert_eq(rank[op_named(tp.g, shortest[k])], k, "shortest first: %s", shortest[k]);
        cr_assert_eq(op_rank_order(&tp.p, OP_RANK_BREADTH_FIRST, rank, &err), OP_OK);
        for (int k = 0; k < 4; k++)
            cr_assert_eq(rank[op_named(tp.g, breadth[k])], k, "breadth first: %s", breadth[k]);
        cr_assert_eq(op_rank_order(&tp.p, OP_RANK_LONGEST_FIRST, rank, &err), OP_OK);
        /* m-TOPO's BFS: the ops x makes ready queue by rank (a before b) */
        cr_assert_eq(m_topo_bfs_order(tp.g, rank, bfs, &err), OP_OK);
        cr_assert_str_eq(tp.g->op_name[bfs[1]], "a");
        cr_assert_str_eq(tp.g->op_name[bfs[2]], "b");
        if (!rev) { /* the file's BFS (Baechi's topo_order, the old m-TOPO order) */
            cr_assert_eq(m_topo_bfs_order(tp.g, NULL, bfs, &err), OP_OK);
            cr_assert_str_eq(tp.g->op_name[bfs[1]], "b");
        }
        tk_unbind(&tp);
    }
}

/* m-ETF on fork_graph, one device: x [0,100], then a and b tie at 100;
 * the rank takes a and then c (ready at 200, tied with b): x a c b, where
 * the file's order gave x b a c. */
Test(m_etf, ties_follow_the_rank_not_the_file_order)
{
    const char *want[4] = {"x", "a", "c", "b"};
    for (int rev = 0; rev < 2; rev++) {
        tk_problem tp;
        tk_bind(&tp, fork_graph(rev), tk_cluster(1, 10, 1e-4, INT64_C(1) << 40));
        op_placement pl;
        op_error err = {0};
        cr_assert_eq(op_placement_init(&pl, 4, 1, &err), OP_OK);
        etf_trace tr = {calloc(4, sizeof(double)), calloc(4, sizeof(int))};
        op_place_ctx ctx = {.p = &tp.p};
        etf_options o = {.name = "m-etf", .set_order = 1, .tie = ETF_TIE_RANK,
                         .walk = OP_RANK_LONGEST_FIRST};
        cr_assert_eq(etf_schedule(&ctx, &o, &pl, &tr, &err), OP_OK, "%s", err.msg);
        for (int k = 0; k < 4; k++) {
            cr_assert_str_eq(tp.g->op_name[tr.sequence[k]], want[k]);
            cr_assert_float_eq(tr.start[tr.sequence[k]], 100.0 * k, 1e-9);
        }
        free(tr.start);
        free(tr.sequence);
        op_placement_destroy(&pl);
        tk_unbind(&tp);
    }
}

/* The Baechi ports give the same step on any op order of the file: the
 * hand-made CNN and random DAGs with colocation groups, shuffled. */
Test(baechi_ports, same_step_in_any_op_order)
{
    static const char *const ports[] = {"m-topo", "m-etf", "m-sct"};
    for (uint64_t seed = 1; seed <= 4; seed++) {
        op_graph *g = seed == 1 ? mini_cnn() : rules_dag(40, 0.1, seed, 3, 0, 1000, 4000);
        tk_problem a, b;
        tk_bind(&a, g, tk_cluster(4, 12, 1e-4, INT64_C(1) << 34));
        tk_bind(&b, shuffled(g, seed * 7919), tk_cluster(4, 12, 1e-4, INT64_C(1) << 34));
        for (int k = 0; k < 3; k++) {
            op_placement pa, pb;
            op_error err = {0};
            cr_assert_eq(run_placer(ports[k], &a.p, 0, NULL, &pa, &err), OP_OK, "%s", err.msg);
            cr_assert_eq(run_placer(ports[k], &b.p, 0, NULL, &pb, &err), OP_OK, "%s", err.msg);
            for (int v = 0; v < g->n_ops; v++)
                cr_assert_eq(pa.device_of[v], pb.device_of[op_named(b.g, g->op_name[v])],
                             "%s, graph %d: %s moved", ports[k], (int)seed, g->op_name[v]);
            op_placement_destroy(&pa);
            op_placement_destroy(&pb);
        }
        tk_unbind(&a);
        tk_unbind(&b);
    }
}

/* Simulated step of a placement with its own per-device order. */
static double step_of(const op_problem *p, const op_placement *pl)
{
    op_error err = {0};
    op_sim *s = op_sim_new(p, &err);
    op_sim_result r;
    cr_assert(s && !op_sim_result_init(&r, p, &err));
    cr_assert_eq(op_sim_run(s, pl, &r, NULL, &err), OP_OK, "%s", err.msg);
    double t = r.step_time_us;
    op_sim_result_destroy(&r);
    op_sim_free(s);
    return t;
}

/* m-ETF schedules with both sibling orders of the rank and keeps the
 * faster: its step is the smaller of the two schedules' (the hand-made
 * CNN and random DAGs; on some the two differ). */
Test(m_etf, keeps_the_faster_of_both_sibling_orders)
{
    int differ = 0;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        tk_problem tp;
        tk_bind(&tp, seed == 1 ? mini_cnn() : tk_random_dag(40, 0.1, seed),
                tk_cluster(4, 12, 1e-4, INT64_C(1) << 34));
        op_error err = {0};
        double t[2];
        for (int longest = 0; longest < 2; longest++) {
            op_placement pl;
            cr_assert_eq(op_placement_init(&pl, tp.p.n, tp.p.nd, &err), OP_OK);
            op_place_ctx ctx = {.p = &tp.p};
            etf_options o = {.name = "m-etf", .set_order = 1, .tie = ETF_TIE_RANK,
                             .walk = longest ? OP_RANK_LONGEST_FIRST : OP_RANK_SHORTEST_FIRST};
            cr_assert_eq(etf_schedule(&ctx, &o, &pl, NULL, &err), OP_OK, "%s", err.msg);
            t[longest] = step_of(&tp.p, &pl);
            op_placement_destroy(&pl);
        }
        op_placement best;
        cr_assert_eq(run_placer("m-etf", &tp.p, 0, NULL, &best, &err), OP_OK, "%s", err.msg);
        double want = t[0] < t[1] ? t[0] : t[1];
        cr_assert_float_eq(step_of(&tp.p, &best), want, 1e-6, "graph %d: %.3f, the two orders %.3f "
                           "and %.3f", (int)seed, step_of(&tp.p, &best), t[1], t[0]);
        differ += t[0] != t[1];
        op_placement_destroy(&best);
        tk_unbind(&tp);
    }
    cr_assert_gt(differ, 0, "the two sibling orders never differ on these graphs");
}
