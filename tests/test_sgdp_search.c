/*
 * test_sgdp_search.c - SGDP's policy-guided zero-shot search
 * (src/placers/sgdp/sgdp_search.c, beyond the paper): it never returns worse than
 * its input (with kicks too) and reports the simulator's time of what it
 * returns; its moves keep pins, kinds, colocation and absent devices; it
 * improves an input
 * that has improving moves; more rounds never do worse; it is reproduced
 * from the seed with 1 or 2 simulation threads; the placer's zero-shot
 * mode runs it end to end.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/io.h"
#include "opplace/placer.h"
#include "placers/sgdp/sgdp.h"
#include "testkit.h"

static sgdp_config tiny_config(void)
{
    sgdp_config c = sgdp_config_default();
    c.max_devices = 4;
    c.hidden = 16;
    c.trf_layers = 1;
    c.heads = 2;
    c.ffn = 16;
    c.segment = 8;
    return c;
}

/* What zero-shot placement does: a reference, units, no warm start. */
static sgdp_train_config search_train(const char *heuristics, int threads, uint64_t seed)
{
    sgdp_train_config tc = sgdp_train_defaults();
    tc.iterations = 0;
    tc.budget_seconds = 0;
    tc.samples = 4;
    tc.threads = threads;
    tc.seed = seed;
    tc.heuristics = heuristics;
    tc.unit_target = 16;
    tc.warm_start = 0;
    return tc;
}

typedef struct outcome {
    double ref_time, best_time;
    int best_oom;
    int *device_of; /* malloc'ed */
} outcome;

/* A fresh policy of `seed` searching problem p. */
static outcome run_search(const op_problem *p, const char *heuristics, int threads,
                          uint64_t seed, sgdp_search_config sc)
{
    op_error err = {0};
    sgdp_config cfg = tiny_config();
    sgdp_policy *pol = sgdp_policy_new(&cfg, seed, &err);
    cr_assert_not_null(pol, "%s", err.msg);
    const op_problem *probs[1] = {p};
    sgdp_train_config tc = search_train(heuristics, threads, seed);
    sgdp_trainer *t = sgdp_trainer_new(pol, probs, 1, &tc, &err);
    cr_assert_not_null(t, "%s", err.msg);
    outcome o = {.ref_time = sgdp_trainer_reference(t, 0)->step};
    cr_assert_eq(sgdp_trainer_search(t, 0, &sc, &err), OP_OK, "%s", err.msg);
    sgdp_best b = sgdp_trainer_best(t, 0);
    cr_assert_not_null(b.placement);
    o.best_time = b.step_time_us;
    o.best_oom = b.oom;
    o.device_of = malloc((size_t)p->n * sizeof *o.device_of);
    memcpy(o.device_of, b.placement->device_of, (size_t)p->n * sizeof *o.device_of);
    sgdp_trainer_free(t);
    sgdp_policy_free(pol);
    return o;
}

Test(sgdp_search, never_worse_than_its_input_and_reports_the_simulators_time)
{
    /* with kicks: the incumbent may get worse, the result may not */
    sgdp_search_config sc = {.rounds = 8, .top_k = 6, .samples = 3, .kick_samples = 2};
    int improved = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        tk_problem tp;
        tk_bind(&tp, tk_random_dag(50, 0.08, seed), tk_cluster(2, 5.0, 1e-4, (int64_t)1 << 40));
        outcome o = run_search(&tp.p, "expert,metis,single", 2, seed, sc);
        cr_assert_leq(o.best_time, o.ref_time + 1e-9, "seed %llu: %.3f > input %.3f",
                      (unsigned long long)seed, o.best_time, o.ref_time);
        cr_assert_float_eq(tk_step(&tp.p, o.device_of), o.best_time, 1e-6);
        improved += o.best_time < o.ref_time;
        free(o.device_of);
        tk_unbind(&tp);
    }
    cr_assert_gt(improved, 0, "the search never moved off its input");
}

/* Two independent chains, heavy ops: from everything on one device, moving
 * a stretch of one chain to the other device shortens the step. */
static op_graph *two_chains(int len)
{
    op_graph_builder *b = op_graph_builder_new("two_chains", NULL);
    int prev[2] = {-1, -1};
    for (int i = 0; i < len; i++)
        for (int c = 0; c < 2; c++) {
            char name[32];
            snprintf(name, sizeof name, "%c%d", 'a' + c, i);
            int op = tk_op(b, name, 100.0 + 10 * c, 1 << 10);
            if (prev[c] >= 0)
                tk_edge(b, prev[c], op, -1);
            prev[c] = op;
        }
    return tk_finish(b);
}

Test(sgdp_search, improves_an_input_that_has_improving_moves)
{
    tk_problem tp;
    tk_bind(&tp, two_chains(12), tk_cluster(2, 5.0, 1e-4, (int64_t)1 << 40));
    /* no samples: only the ranked single moves and their compounding */
    sgdp_search_config sc = {.rounds = 6, .top_k = 4, .samples = 0};
    outcome o = run_search(&tp.p, "single", 1, 7, sc);
    cr_assert_lt(o.best_time, 0.9 * o.ref_time, "%.1f vs single %.1f", o.best_time, o.ref_time);
    free(o.device_of);
    /* nothing to evaluate: the input itself comes back */
    sgdp_search_config none = {.rounds = 3, .top_k = 0, .samples = 0};
    o = run_search(&tp.p, "single", 1, 7, none);
    cr_assert_float_eq(o.best_time, o.ref_time, 1e-9);
    free(o.device_of);
    tk_unbind(&tp);
}

Test(sgdp_search, more_rounds_never_do_worse)
{
    tk_problem tp;
    tk_bind(&tp, tk_random_dag(60, 0.08, 21), tk_cluster(3, 5.0, 1e-4, (int64_t)1 << 40));
    double prev = INFINITY;
    for (int rounds = 1; rounds <= 13; rounds += 4) {
        sgdp_search_config sc = {.rounds = rounds, .top_k = 5, .samples = 2, .kick_samples = 2};
        outcome o = run_search(&tp.p, "expert,single", 2, 4, sc);
        cr_assert_leq(o.best_time, prev + 1e-9, "%d rounds: %.3f > %.3f", rounds, o.best_time,
                      prev);
        prev = o.best_time;
        free(o.device_of);
    }
    tk_unbind(&tp);
}

Test(sgdp_search, same_seed_same_placement_with_one_or_two_threads)
{
    tk_problem tp;
    tk_bind(&tp, tk_random_dag(60, 0.08, 5), tk_cluster(2, 5.0, 1e-4, (int64_t)1 << 40));
    sgdp_search_config sc = {.rounds = 10, .top_k = 6, .samples = 4, .kick_samples = 3};
    outcome a = run_search(&tp.p, "expert,single", 1, 9, sc);
    outcome b = run_search(&tp.p, "expert,single", 2, 9, sc);
    cr_assert_eq(a.best_time, b.best_time);
    cr_assert_eq(memcmp(a.device_of, b.device_of, (size_t)tp.p.n * sizeof(int)), 0);
    free(a.device_of);
    free(b.device_of);
    tk_unbind(&tp);
}

/* Pins, a kind constraint and a colocation group on 2 GPUs + 1 CPU; the
 * policy's head has 4 outputs, so one slot is an absent device. */
static op_graph *constrained_graph(void)
{
    op_graph_builder *b = op_graph_builder_new("constrained", NULL);
    int prev = -1;
    for (int i = 0; i < 24; i++) {
        char name[16], grp[8] = "g";
        snprintf(name, sizeof name, "op%d", i);
        op_op_spec s = {.name = name, .time_us = 20 + 3 * i, .output_bytes = 4096};
        if (i == 3)
            s.device = "d2";
        if (i == 5)
            s.kind = "cpu";
        if (i == 7 || i == 11 || i == 14)
            s.colocate = grp;
        int op = tk_op_full(b, &s);
        if (prev >= 0)
            tk_edge(b, prev, op, -1);
        if (i >= 2)
            tk_edge(b, op - 2, op, -1);
        prev = op;
    }
    return tk_finish(b);
}

Test(sgdp_search, moves_keep_pins_kinds_colocation_and_absent_devices)
{
    op_device devs[3] = {{"d0", "gpu", (int64_t)1 << 40, 1.0},
                         {"d1", "gpu", (int64_t)1 << 40, 1.0},
                         {"d2", "cpu", (int64_t)1 << 40, 0.5}};
    op_link_model link = {.latency_us = 5.0, .us_per_byte = 1e-4};
    tk_problem tp;
    tk_bind(&tp, constrained_graph(), op_cluster_new(devs, 3, NULL, 0, &link, "test", NULL));
    const op_problem *p = &tp.p;
    op_error err = {0};
    for (uint64_t seed = 1; seed <= 3; seed++) {
        sgdp_search_config sc = {.rounds = 5, .top_k = 8, .samples = 4};
        outcome o = run_search(p, "single,expert", 2, seed, sc);
        cr_assert_leq(o.best_time, o.ref_time + 1e-9);
        op_placement pl;
        op_placement_init(&pl, p->n, p->nd, &err);
        memcpy(pl.device_of, o.device_of, (size_t)p->n * sizeof(int));
        cr_assert_eq(op_problem_check_placement(p, &pl, &err), OP_OK, "%s", err.msg);
        for (int op = 0; op < p->n; op++)
            cr_assert(op_eligible(p, op, o.device_of[op]), "op %d on %d", op, o.device_of[op]);
        cr_assert_eq(o.device_of[3], 2);
        cr_assert_eq(o.device_of[5], 2);
        cr_assert(o.device_of[7] == o.device_of[11] && o.device_of[11] == o.device_of[14]);
        op_placement_destroy(&pl);
        free(o.device_of);
    }
    tk_unbind(&tp);
}

static double json_step(const char *out)
{
    const char *s = strstr(out, "\"step_time_us\"");
    cr_assert_not_null(s, "%s", out);
    return strtod(strchr(s, ':') + 1, NULL);
}

/* End to end: the default (guided) zero-shot command is never worse than
 * the reference heuristic alone. */
Test(sgdp_search, placer_options_end_to_end)
{
    const char *dir = tk_tmpdir();
    char g[512], w[512], cmd[4096];
    snprintf(g, sizeof g, "%s/search.json", dir);
    snprintf(w, sizeof w, "%s/search.bin", dir);
    op_graph *gr = tk_random_dag(60, 0.08, 12);
    cr_assert_eq(op_graph_write(gr, g, NULL), OP_OK);
    op_graph_free(gr);
    char *out = NULL;
    snprintf(cmd, sizeof cmd,
             "%s train sgdp --graphs %s --preset v100-nvlink --gpus 2 --weights %s "
             "--iterations 1 --samples 2 --hidden 16 --quiet",
             OPPLACE_BIN, g, w);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    free(out);
    double ref = INFINITY;
    const char *heur[] = {"expert", "metis", "m-topo", "single"};
    for (int i = 0; i < 4; i++) {
        snprintf(cmd, sizeof cmd,
                 "%s place %s --preset v100-nvlink --gpus 2 --algo %s --json --quiet "
                 "--best-effort --seed 5",
                 OPPLACE_BIN, g, heur[i]);
        cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
        ref = fmin(ref, json_step(out));
        free(out);
    }
    snprintf(cmd, sizeof cmd,
             "%s place %s --preset v100-nvlink --gpus 2 --algo sgdp --weights %s "
             "--seed 5 --json --quiet",
             OPPLACE_BIN, g, w);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    double guided = json_step(out);
    free(out);
    cr_assert_leq(guided, ref + 1e-6, "guided %.3f > best heuristic %.3f", guided, ref);
}
