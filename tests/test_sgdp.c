/*
 * test_sgdp.c - SGDP (src/learn, src/placers/sgdp/sgdp.c): PPO training finds
 * the brute-force optimum of a tiny graph and its greedy policy learns it;
 * weights files round-trip exactly and reject other architectures; training
 * is reproduced bit for bit from the seed with 1 or 2 simulation threads;
 * the action mask keeps pins, kinds, colocation and absent devices; the
 * PPO loss's gradient matches finite differences; the train command and
 * the placer's zero-shot mode work end to end.  Beyond the paper: a fresh
 * policy copies any reference input (the reference skip) with exact
 * gradients; batch training on varied inputs is reproducible and keeps
 * constraints;
 * the features ignore the units and scale of a graph, the placement
 * features are what they say, and calibrated proposals move M decisions
 * in the policy's order.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/io.h"
#include "opplace/placer.h"
#include "placers/sgdp/sgdp.h"
#include "placers/coarseners.h"
#include "testkit.h"

/* Two independent chains of `len` heavy ops with 1 MB outputs, one of
 * MatMul ops and one of Conv2D ops; on the test cluster a transfer costs
 * 100 us, about one op.  On 2 devices the optimum runs one chain per device.  The first op is
 * pinned to d0, which breaks the symmetry between the two mirror-image
 * optima (a factored policy gets no first-order gradient without it). */
static op_graph *chains(int len, int pin);
static op_graph *two_chains(int len)
{
    return chains(len, 1);
}

/* The same without the pin: the two optima are mirror images, and so is
 * every device choice of an untrained plain policy. */
static op_graph *chains(int len, int pin)
{
    op_graph_builder *b = op_graph_builder_new("two_chains", NULL);
    int prev[2] = {-1, -1};
    for (int i = 0; i < len; i++)
        for (int c = 0; c < 2; c++) {
            char name[32];
            snprintf(name, sizeof name, "%c%d", 'a' + c, i);
            op_op_spec spec = {.name = name, .type = c ? "Conv2D" : "MatMul",
                               .time_us = 100.0 + 10 * c, .output_bytes = 1 << 20,
                               .device = pin && i == 0 && c == 0 ? "d0" : NULL};
            int op = tk_op_full(b, &spec);
            if (prev[c] >= 0)
                tk_edge(b, prev[c], op, -1);
            prev[c] = op;
        }
    return tk_finish(b);
}

static double brute_force_optimum(const op_problem *p)
{
    op_sim_result r;
    op_sim_result_init(&r, p, NULL);
    int *dev = calloc((size_t)p->n, sizeof *dev);
    double best = INFINITY;
    for (long mask = 0; mask < (1L << p->n); mask++) {
        int ok = 1;
        for (int i = 0; i < p->n; i++) {
            dev[i] = (int)((mask >> i) & 1);
            ok &= op_eligible(p, i, dev[i]);
        }
        if (!ok)
            continue;
        double t = tk_simulate(p, dev, &r);
        if (t < best)
            best = t;
    }
    free(dev);
    op_sim_result_destroy(&r);
    return best;
}

static sgdp_config tiny_config(void)
{
    sgdp_config c = sgdp_config_default();
    c.max_devices = 4;
    c.hidden = 16;
    c.gs_layers = 2;
    c.trf_layers = 1;
    c.heads = 2;
    c.ffn = 16;
    c.segment = 4;
    return c;
}

static sgdp_train_config tiny_train(long iterations, int threads, uint64_t seed)
{
    sgdp_train_config tc = sgdp_train_defaults();
    tc.iterations = iterations;
    tc.budget_seconds = 0;
    tc.samples = 16;
    tc.threads = threads;
    tc.seed = seed;
    return tc;
}

/* The greedy placement of the current policy, simulated. */
static double greedy_time(sgdp_policy *pol, const op_problem *p, int *device_of)
{
    op_error err = {0};
    sgdp_graph sg;
    cr_assert_eq(sgdp_graph_init(&sg, p, sgdp_policy_config(pol)->max_devices,
                                 sgdp_policy_config(pol)->gs_knn, &err), OP_OK, "%s", err.msg);
    nn_arena ar;
    nn_arena_init(&ar, 1 << 16, &err);
    nn_tensor logp;
    cr_assert_eq(sgdp_policy_forward(pol, &ar, &sg, &logp, NULL, &err), OP_OK, "%s", err.msg);
    int *row = calloc((size_t)p->n, sizeof *row);
    sgdp_sample(&sg, &logp, NULL, 1, row, device_of);
    op_sim_result r;
    op_sim_result_init(&r, p, &err);
    double t = tk_simulate(p, device_of, &r);
    op_sim_result_destroy(&r);
    free(row);
    nn_arena_destroy(&ar);
    sgdp_graph_destroy(&sg);
    return t;
}

static void logp_of(sgdp_policy *pol, const op_problem *p, double *out);

Test(sgdp, training_finds_the_optimum_of_two_chains)
{
    tk_problem tp;
    tk_bind(&tp, two_chains(6), tk_cluster(2, 0.0, 1e-4, (int64_t)1 << 40));
    double opt = brute_force_optimum(&tp.p); /* 2^12 placements */
    op_error err = {0};
    sgdp_config cfg = tiny_config();
    sgdp_policy *pol = sgdp_policy_new(&cfg, 1, &err);
    cr_assert_not_null(pol, "%s", err.msg);
    /* it starts from a (nearly) uniform policy: every free row's
     * probabilities within 0.05 of 1/2 on the 2 devices (the pinned op's
     * row has one device) */
    double lp0[12 * 4];
    logp_of(pol, &tp.p, lp0);
    int free_rows = 0;
    for (int r = 0; r < 12; r++) {
        if (!isfinite(lp0[r * 4 + 1]))
            continue;
        free_rows++;
        cr_assert_lt(fabs(exp(lp0[r * 4]) - 0.5), 0.05, "row %d starts at %.3f", r,
                     exp(lp0[r * 4]));
    }
    cr_assert_eq(free_rows, 11);
    const op_problem *probs[1] = {&tp.p};
    sgdp_train_config tc = tiny_train(80, 2, 1); /* the paper's PPO: no reference */
    sgdp_trainer *t = sgdp_trainer_new(pol, probs, 1, &tc, &err);
    cr_assert_not_null(t, "%s", err.msg);
    cr_assert_eq(sgdp_trainer_run(t, &err), OP_OK, "%s", err.msg);
    sgdp_best b = sgdp_trainer_best(t, 0);
    cr_assert_not_null(b.placement);
    cr_assert_float_eq(b.step_time_us, opt, 1e-6, "best %.1f vs optimum %.1f", b.step_time_us,
                       opt);
    /* the reported time is the simulator's for the kept placement */
    op_sim_result r;
    op_sim_result_init(&r, &tp.p, &err);
    cr_assert_float_eq(tk_simulate(&tp.p, b.placement->device_of, &r), opt, 1e-6);
    op_sim_result_destroy(&r);
    /* and the policy itself learnt it: its greedy placement is optimal */
    int dev[12];
    double g = greedy_time(pol, &tp.p, dev);
    cr_assert_float_eq(g, opt, 1e-6, "greedy %.1f vs optimum %.1f", g, opt);
    sgdp_train_stats s = sgdp_trainer_stats(t);
    cr_assert_eq(s.iterations, tc.iterations);
    cr_assert_eq(s.rollouts, tc.iterations * 17);
    sgdp_trainer_free(t);
    sgdp_policy_free(pol);
    tk_unbind(&tp);
}

/* The paper's plain method (--paper: no reference, no pin to break the
 * symmetry; the policy placers/sgdp/sgdp.h describes: logits centred over the
 * ops, Glorot head, no entropy bonus, its learning rate) learns the optimum of two mirror-
 * image chains from its untrained policy, whose greedy placement is not
 * optimal: the policy's own greedy placement ends optimal, one chain per
 * device (all on one device takes twice as long). */
Test(sgdp, paper_method_learns_the_optimum_without_symmetry_breaking)
{
    tk_problem tp;
    tk_bind(&tp, chains(6, 0), tk_cluster(2, 0.0, 1e-4, (int64_t)1 << 40));
    double opt = brute_force_optimum(&tp.p); /* 2^12 placements */
    op_error err = {0};
    sgdp_config cfg = tiny_config();
    cfg.head_init = SGDP_PLAIN_HEAD_INIT;
    /* the first seed whose untrained greedy placement is not optimal */
    sgdp_policy *pol = NULL;
    int dev[12];
    double before = opt;
    for (uint64_t seed = 1; seed <= 20 && before <= opt * 1.05; seed++) {
        sgdp_policy_free(pol);
        pol = sgdp_policy_new(&cfg, seed, &err);
        cr_assert_not_null(pol, "%s", err.msg);
        before = greedy_time(pol, &tp.p, dev);
    }
    cr_assert_gt(before, opt * 1.05, "every untrained greedy %.1f already optimal %.1f", before,
                 opt);
    const op_problem *probs[1] = {&tp.p};
    sgdp_train_config tc = tiny_train(80, 2, 1);
    tc.ppo.entropy_coef = SGDP_PLAIN_ENTROPY;
    tc.ppo.lr = SGDP_PLAIN_LR;
    sgdp_trainer *t = sgdp_trainer_new(pol, probs, 1, &tc, &err);
    cr_assert_not_null(t, "%s", err.msg);
    cr_assert_eq(sgdp_trainer_run(t, &err), OP_OK, "%s", err.msg);
    double after = greedy_time(pol, &tp.p, dev);
    cr_assert_float_eq(after, opt, 1e-6, "greedy %.1f (untrained %.1f) vs optimum %.1f", after,
                       before, opt);
    for (int i = 2; i < 12; i += 2) /* chain a on one device, chain b on the other */
        cr_assert(dev[i] == dev[0] && dev[i + 1] == dev[1] && dev[0] != dev[1]);
    sgdp_trainer_free(t);
    sgdp_policy_free(pol);
    tk_unbind(&tp);
}

static void logp_of(sgdp_policy *pol, const op_problem *p, double *out)
{
    op_error err = {0};
    sgdp_graph sg;
    sgdp_graph_init(&sg, p, sgdp_policy_config(pol)->max_devices,
                    sgdp_policy_config(pol)->gs_knn, &err);
    nn_arena ar;
    nn_arena_init(&ar, 1 << 16, &err);
    nn_tensor logp;
    cr_assert_eq(sgdp_policy_forward(pol, &ar, &sg, &logp, NULL, &err), OP_OK, "%s", err.msg);
    memcpy(out, logp.data, nn_tensor_size(&logp) * sizeof(double));
    nn_arena_destroy(&ar);
    sgdp_graph_destroy(&sg);
}

Test(sgdp, save_and_load_give_identical_placements)
{
    tk_problem tp;
    tk_bind(&tp, tk_random_dag(40, 0.1, 11), tk_cluster(3, 5.0, 1e-4, (int64_t)1 << 40));
    op_error err = {0};
    sgdp_config cfg = tiny_config();
    sgdp_policy *pol = sgdp_policy_new(&cfg, 7, &err);
    const op_problem *probs[1] = {&tp.p};
    sgdp_train_config tc = tiny_train(3, 1, 9);
    sgdp_trainer *t = sgdp_trainer_new(pol, probs, 1, &tc, &err);
    cr_assert_eq(sgdp_trainer_run(t, &err), OP_OK, "%s", err.msg);
    sgdp_trainer_free(t);
    char path[512];
    snprintf(path, sizeof path, "%s/sgdp.bin", tk_tmpdir());
    cr_assert_eq(sgdp_policy_save(pol, path, &err), OP_OK, "%s", err.msg);

    sgdp_policy *back = sgdp_policy_from_file(path, &err);
    cr_assert_not_null(back, "%s", err.msg);
    cr_assert_eq(memcmp(sgdp_policy_config(back), &cfg, sizeof cfg), 0);
    size_t sz = (size_t)tp.p.n * (size_t)cfg.max_devices;
    double *a = calloc(sz, sizeof *a), *b = calloc(sz, sizeof *b);
    logp_of(pol, &tp.p, a);
    logp_of(back, &tp.p, b);
    cr_assert_eq(memcmp(a, b, sz * sizeof *a), 0, "loaded policy differs");
    int da[40], db[40];
    cr_assert_float_eq(greedy_time(pol, &tp.p, da), greedy_time(back, &tp.p, db), 0);
    cr_assert_eq(memcmp(da, db, sizeof da), 0);

    /* a policy of another architecture refuses the file, naming both */
    sgdp_config other = cfg;
    other.heads = 4;
    sgdp_policy *wrong = sgdp_policy_new(&other, 1, &err);
    op_error e2 = {0};
    cr_assert_eq(sgdp_policy_load(wrong, path, &e2), OP_EINPUT);
    cr_assert(strstr(e2.msg, "2 heads") && strstr(e2.msg, "4 heads"), "%s", e2.msg);
    /* weights of an older layout (architecture version 3) are refused, by name */
    nn_param *arch = nn_params_find(sgdp_policy_params(back), "sgdp.arch");
    cr_assert_not_null(arch);
    arch->value.data[0] = 3;
    cr_assert_eq(nn_params_save(sgdp_policy_params(back), path, &err), OP_OK, "%s", err.msg);
    op_error e4 = {0};
    cr_assert_null(sgdp_policy_from_file(path, &e4));
    cr_assert(e4.code == OP_EINPUT && strstr(e4.msg, "version 3") && strstr(e4.msg, "retrain"),
              "%s", e4.msg);
    /* and a file that is not SGDP weights is rejected */
    FILE *f = fopen(path, "wb");
    fputs("not weights", f);
    fclose(f);
    op_error e3 = {0};
    cr_assert_null(sgdp_policy_from_file(path, &e3));
    cr_assert_eq(e3.code, OP_EINPUT, "%s", e3.msg);
    free(a), free(b);
    sgdp_policy_free(wrong);
    sgdp_policy_free(back);
    sgdp_policy_free(pol);
    tk_unbind(&tp);
}

/* Train with the given thread count; return the best step time and fill
 * the final policy's log-probabilities and best placement. */
static double train_run(const op_problem *p, int threads, double *logp, int *best)
{
    op_error err = {0};
    sgdp_config cfg = tiny_config();
    sgdp_policy *pol = sgdp_policy_new(&cfg, 21, &err);
    const op_problem *probs[2] = {p, p};
    sgdp_train_config tc = tiny_train(6, threads, 77);
    tc.samples = 7; /* not a multiple of the thread count */
    sgdp_trainer *t = sgdp_trainer_new(pol, probs, 2, &tc, &err);
    cr_assert_not_null(t, "%s", err.msg);
    cr_assert_eq(sgdp_trainer_run(t, &err), OP_OK, "%s", err.msg);
    sgdp_best b0 = sgdp_trainer_best(t, 0), b1 = sgdp_trainer_best(t, 1);
    const sgdp_best *b = b0.placement && (!b1.placement || b0.step_time_us <= b1.step_time_us)
                             ? &b0 : &b1;
    memcpy(best, b->placement->device_of, (size_t)p->n * sizeof(int));
    double time = b->step_time_us;
    logp_of(pol, p, logp);
    sgdp_trainer_free(t);
    sgdp_policy_free(pol);
    return time;
}

Test(sgdp, same_seed_same_result_with_one_or_two_threads)
{
    tk_problem tp;
    tk_bind(&tp, tk_random_dag(30, 0.15, 4), tk_cluster(2, 2.0, 2e-4, (int64_t)1 << 40));
    size_t sz = (size_t)tp.p.n * tiny_config().max_devices;
    double *l1 = calloc(sz, sizeof *l1), *l2 = calloc(sz, sizeof *l2);
    int b1[30], b2[30];
    double t1 = train_run(&tp.p, 1, l1, b1);
    double t2 = train_run(&tp.p, 2, l2, b2);
    cr_assert_eq(t1, t2);
    cr_assert_eq(memcmp(b1, b2, sizeof b1), 0);
    cr_assert_eq(memcmp(l1, l2, sz * sizeof *l1), 0, "weights diverged with threads");
    free(l1), free(l2);
    tk_unbind(&tp);
}

/* A graph with a device pin, a kind restriction and a colocation group. */
static op_graph *constrained_graph(void)
{
    op_graph_builder *b = op_graph_builder_new("constrained", NULL);
    int prev = -1;
    for (int i = 0; i < 16; i++) {
        char name[16], grp[8] = "g";
        snprintf(name, sizeof name, "op%d", i);
        op_op_spec s = {.name = name, .time_us = 20 + i, .output_bytes = 4096};
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

static op_cluster *gpus_and_cpu(void)
{
    op_device devs[3] = {{"d0", "gpu", (int64_t)1 << 40, 1.0},
                         {"d1", "gpu", (int64_t)1 << 40, 1.0},
                         {"d2", "cpu", (int64_t)1 << 40, 0.5}};
    op_link_model link = {.latency_us = 5.0, .us_per_byte = 1e-4};
    op_cluster *c = op_cluster_new(devs, 3, NULL, 0, &link, "test", NULL);
    cr_assert_not_null(c);
    return c;
}

Test(sgdp, masks_keep_pins_kinds_colocation_and_absent_devices)
{
    tk_problem tp;
    tk_bind(&tp, constrained_graph(), gpus_and_cpu());
    const op_problem *p = &tp.p;
    op_error err = {0};
    sgdp_config cfg = tiny_config(); /* 4 outputs, 3 devices: slot 3 is absent */
    sgdp_policy *pol = sgdp_policy_new(&cfg, 2, &err);
    sgdp_graph sg;
    cr_assert_eq(sgdp_graph_init(&sg, p, cfg.max_devices, cfg.gs_knn, &err), OP_OK, "%s",
                 err.msg);
    nn_arena ar;
    nn_arena_init(&ar, 1 << 16, &err);
    nn_tensor logp;
    cr_assert_eq(sgdp_policy_forward(pol, &ar, &sg, &logp, NULL, &err), OP_OK, "%s", err.msg);
    nn_rng rng;
    nn_rng_seed(&rng, 1);
    int row[16], dev[16];
    op_placement pl;
    op_placement_init(&pl, p->n, p->nd, &err);
    for (int s = 0; s < 300; s++) {
        sgdp_sample(&sg, &logp, &rng, s == 0, row, dev);
        for (int op = 0; op < p->n; op++) {
            cr_assert(dev[op] >= 0 && dev[op] < p->nd, "absent device %d", dev[op]);
            cr_assert(op_eligible(p, op, dev[op]), "op %d on ineligible device %d", op,
                      dev[op]);
        }
        cr_assert_eq(dev[3], 2);                      /* pinned to d2 */
        cr_assert_eq(dev[5], 2);                      /* kind cpu */
        cr_assert(dev[7] == dev[11] && dev[11] == dev[14]); /* colocated */
        memcpy(pl.device_of, dev, sizeof dev);
        cr_assert_eq(op_problem_check_placement(p, &pl, &err), OP_OK, "%s", err.msg);
    }
    /* masked slots have probability 0 and followers are not decisions */
    for (int t = 0; t < p->n; t++)
        cr_assert(isinf(NN_AT(&logp, t, 3)) && NN_AT(&logp, t, 3) < 0);
    int decisions = 0;
    for (int t = 0; t < p->n; t++)
        decisions += sg.decides[t];
    cr_assert_eq(decisions, p->n - 2);
    op_placement_destroy(&pl);
    nn_arena_destroy(&ar);
    sgdp_graph_destroy(&sg);

    /* the placer respects them too (op_place checks the hard rules) */
    op_options *o = op_options_new(&err);
    op_options_set(o, "iterations", "3", &err);
    op_options_set(o, "samples", "4", &err);
    op_options_set(o, "threads", "2", &err);
    op_place_ctx ctx = {.p = p, .opts = o, .seed = 3};
    op_placement out;
    cr_assert_eq(op_place(op_placer_find("sgdp"), &ctx, &out, &err), OP_OK, "%s", err.msg);
    cr_assert_null(op_options_first_unused(o));
    op_placement_destroy(&out);
    op_options_free(o);
    /* more devices than the policy's head has: a clear error */
    sgdp_config small = cfg;
    small.max_devices = 2;
    cr_assert_eq(sgdp_graph_init(&sg, p, small.max_devices, small.gs_knn, &err), OP_EINPUT);
    cr_assert(strstr(err.msg, "at most 2"), "%s", err.msg);
    sgdp_policy_free(pol);
    tk_unbind(&tp);
}

/* PPO's analytic d loss / d logp against central differences. */
Test(ppo, factored_loss_gradient_matches_finite_differences)
{
    enum { ROWS = 5, A = 3, K = 4 };
    double lp[ROWS * A], old[K * ROWS], adv[K] = {1.3, -0.7, 0.2, -1.1};
    int act[K * ROWS];
    unsigned char decides[ROWS] = {1, 1, 0, 1, 1};
    nn_rng rng;
    nn_rng_seed(&rng, 5);
    for (int i = 0; i < ROWS; i++) { /* log-softmax of random logits */
        double z[A], m = -INFINITY, s = 0;
        for (int a = 0; a < A; a++)
            m = fmax(m, z[a] = nn_rng_normal(&rng));
        for (int a = 0; a < A; a++)
            s += exp(z[a] - m);
        for (int a = 0; a < A; a++)
            lp[i * A + a] = z[a] - m - log(s);
    }
    for (int k = 0; k < K * ROWS; k++) {
        act[k] = (int)nn_rng_below(&rng, A);
        /* old policy near the current one, ratios inside and outside the clip */
        old[k] = lp[(k % ROWS) * A + act[k]] + 0.3 * nn_rng_normal(&rng);
    }
    ppo_config cfg = ppo_defaults();
    cfg.entropy_coef = 0.05;
    nn_tensor logp = nn_tensor_view(lp, ROWS, A);
    double g[ROWS * A] = {0};
    nn_tensor dlogp = nn_tensor_view(g, ROWS, A);
    ppo_stats st;
    ppo_factored_loss(&cfg, &logp, act, old, adv, K, decides, &dlogp, &st);
    cr_assert(st.clip_frac > 0 && st.clip_frac < 1, "clip fraction %g", st.clip_frac);
    for (int i = 0; i < ROWS * A; i++) {
        double h = 1e-6, keep = lp[i], d[ROWS * A];
        nn_tensor dd = nn_tensor_view(d, ROWS, A);
        ppo_stats sp, sm;
        lp[i] = keep + h;
        ppo_factored_loss(&cfg, &logp, act, old, adv, K, decides, &dd, &sp);
        lp[i] = keep - h;
        ppo_factored_loss(&cfg, &logp, act, old, adv, K, decides, &dd, &sm);
        lp[i] = keep;
        double fd = (sp.loss - sm.loss) / (2 * h);
        cr_assert_float_eq(g[i], fd, 1e-6, "entry %d: analytic %g, numeric %g", i, g[i], fd);
    }
}

Test(ppo, advantages_use_a_moving_baseline)
{
    ppo_baseline b;
    ppo_baseline_init(&b, 0.5);
    double r1[2] = {1.0, 3.0}, a[2];
    ppo_advantages(&b, r1, 2, false, a);
    cr_assert_float_eq(a[0], -1.0, 1e-12); /* first baseline: the batch mean */
    cr_assert_float_eq(a[1], 1.0, 1e-12);
    double r2[2] = {6.0, 6.0};
    ppo_advantages(&b, r2, 2, false, a);
    cr_assert_float_eq(a[0], 4.0, 1e-12); /* against the old baseline 2 */
    cr_assert_float_eq(b.value, 4.0, 1e-12); /* 0.5 * 2 + 0.5 * 6 */
}

Test(sgdp, train_command_then_zero_shot_placer)
{
    const char *dir = tk_tmpdir();
    char g1[512], g2[512], w[512], cmd[4096];
    snprintf(g1, sizeof g1, "%s/rand1.json", dir);
    snprintf(g2, sizeof g2, "%s/rand.json", dir);
    snprintf(w, sizeof w, "%s/w.bin", dir);
    op_graph *a = tk_random_dag(18, 0.2, 8), *b = tk_random_dag(25, 0.1, 3);
    cr_assert_eq(op_graph_write(a, g1, NULL), OP_OK);
    cr_assert_eq(op_graph_write(b, g2, NULL), OP_OK);
    op_graph_free(a);
    op_graph_free(b);
    char *out = NULL;
    snprintf(cmd, sizeof cmd,
             "%s train sgdp --graphs %s %s --preset v100-nvlink --gpus 2 --weights %s "
             "--iterations 4 --samples 4 --hidden 16 --quiet",
             OPPLACE_BIN, g1, g2, w);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    cr_assert(strstr(out, "rollouts/s"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd,
             "%s place %s --preset v100-nvlink --gpus 2 --algo sgdp --weights %s --samples 3 "
             "--json --quiet",
             OPPLACE_BIN, g2, w);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    cr_assert(strstr(out, "step_time_us"), "%s", out);
    free(out);
    /* --iterations 0 with --weights START --save-weights OUT: START's policy
     * written unchanged (the untrained control of transfer experiments) */
    char w2[512];
    snprintf(w2, sizeof w2, "%s/w2.bin", dir);
    snprintf(cmd, sizeof cmd,
             "%s train sgdp --graphs %s --preset v100-nvlink --gpus 2 --weights %s "
             "--save-weights %s --iterations 0",
             OPPLACE_BIN, g1, w, w2);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    cr_assert(strstr(out, "0 iterations"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "cmp %s %s", w, w2);
    cr_assert_eq(tk_run(cmd, &out), 0, "the weights changed: %s", out);
    free(out);
    /* fine-tuning needs weights; a missing weights file is bad input */
    snprintf(cmd, sizeof cmd, "%s place %s --algo sgdp --finetune 2 --quiet", OPPLACE_BIN, g2);
    cr_assert_eq(tk_run(cmd, &out), 2, "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s place %s --algo sgdp --weights %s/none.bin --quiet",
             OPPLACE_BIN, g2, dir);
    cr_assert_eq(tk_run(cmd, &out), 1, "%s", out);
    free(out);
}

/* ------------------------------------------- reference, units, warm start
 * (beyond the paper: src/placers/sgdp/sgdp_warm.c) */

static double simulate_placer(const op_problem *p, const char *name)
{
    op_error err = {0};
    op_placement pl; /* op_place initialises it */
    op_place_ctx ctx = {.p = p, .seed = 1, .best_effort = 1};
    cr_assert_eq(op_place(op_placer_find(name), &ctx, &pl, &err), OP_OK, "%s", err.msg);
    op_sim_result r;
    op_sim_result_init(&r, p, &err);
    double t = tk_simulate(p, pl.device_of, &r);
    op_sim_result_destroy(&r);
    op_placement_destroy(&pl);
    return t;
}

Test(sgdp, reference_is_the_best_heuristic_and_units_can_express_it)
{
    tk_problem tp;
    tk_bind(&tp, constrained_graph(), gpus_and_cpu());
    const op_problem *p = &tp.p;
    op_error err = {0};
    op_placement ref;
    op_placement_init(&ref, p->n, p->nd, &err);
    op_portfolio_winner info;
    op_place_ctx hctx = {.p = p, .seed = 1};
    cr_assert_eq(op_portfolio_best(&hctx, "expert,single,round-robin", 1, "sgdp", &ref, &info,
                                   &err),
                 OP_OK, "%s", err.msg);
    double best = fmin(simulate_placer(p, "expert"),
                       fmin(simulate_placer(p, "single"), simulate_placer(p, "round-robin")));
    cr_assert_float_eq(info.step, best, 1e-9, "%s", info.name);
    cr_assert_eq(op_problem_check_placement(p, &ref, &err), OP_OK, "%s", err.msg);
    cr_assert_neq(op_portfolio_best(&hctx, "no-such-placer", 1, "sgdp", &ref, &info, &err), OP_OK);

    int unit_of[16], n_units = 0;
    cr_assert_eq(learn_units_build(p, &ref, op_coarsener_find("celeritas"), 4, unit_of, &n_units, &err), OP_OK, "%s", err.msg);
    cr_assert(n_units >= 1 && n_units <= p->n);
    cr_assert(unit_of[7] == unit_of[11] && unit_of[11] == unit_of[14]); /* colocated */
    for (int a = 0; a < p->n; a++)
        for (int b = 0; b < p->n; b++)
            if (unit_of[a] == unit_of[b]) /* a unit never straddles the reference's cut */
                cr_assert_eq(ref.device_of[a], ref.device_of[b], "ops %d %d", a, b);
    sgdp_config cfg = tiny_config();
    sgdp_graph sg;
    cr_assert_eq(sgdp_graph_init(&sg, p, cfg.max_devices, cfg.gs_knn, &err), OP_OK);
    cr_assert_eq(sgdp_graph_set_units(&sg, unit_of, n_units, &err), OP_OK, "%s", err.msg);
    int decisions = 0;
    for (int t = 0; t < sg.n; t++) {
        decisions += sg.decides[t];
        if (sg.leader[t] >= 0) /* leaders come first and are in the same unit */
            cr_assert(sg.leader[t] < t && sg.decides[sg.leader[t]] &&
                      unit_of[p->g->topo[sg.leader[t]]] == unit_of[p->g->topo[t]]);
        /* the reference's device is allowed for every row */
        cr_assert(sg.mask[(size_t)t * sg.max_devices + ref.device_of[p->g->topo[t]]]);
    }
    cr_assert_eq(decisions, n_units);
    sgdp_graph_destroy(&sg);
    op_placement_destroy(&ref);
    tk_unbind(&tp);
}

static sgdp_train_config warm_train(long iterations, int threads, int slots)
{
    sgdp_train_config tc = tiny_train(iterations, threads, 3);
    tc.samples = 8;
    tc.heuristics = "expert,metis,single";
    tc.unit_target = 12;
    tc.warm_start = 1;
    tc.clone_steps = 20;
    tc.slots = slots;
    return tc;
}

Test(sgdp, warm_start_never_returns_worse_than_the_reference)
{
    for (uint64_t seed = 1; seed <= 3; seed++) {
        tk_problem tp;
        tk_bind(&tp, tk_random_dag(60, 0.08, seed), tk_cluster(2, 5.0, 1e-4, (int64_t)1 << 40));
        op_error err = {0};
        sgdp_config cfg = tiny_config();
        sgdp_policy *pol = sgdp_policy_new(&cfg, seed, &err);
        const op_problem *probs[1] = {&tp.p};
        sgdp_train_config tc = warm_train(3, 2, 1);
        sgdp_trainer *t = sgdp_trainer_new(pol, probs, 1, &tc, &err);
        cr_assert_not_null(t, "%s", err.msg);
        const op_portfolio_winner *ref = sgdp_trainer_reference(t, 0);
        cr_assert_not_null(ref);
        double expert = simulate_placer(&tp.p, "expert");
        cr_assert_leq(ref->step, expert + 1e-9);
        cr_assert_eq(sgdp_trainer_run(t, &err), OP_OK, "%s", err.msg);
        cr_assert_eq(sgdp_trainer_evaluate(t, 0, 4, &err), OP_OK, "%s", err.msg);
        sgdp_best b = sgdp_trainer_best(t, 0);
        cr_assert_leq(b.step_time_us, ref->step + 1e-9, "seed %llu: %.1f > %.1f",
                      (unsigned long long)seed, b.step_time_us, ref->step);
        op_sim_result r; /* and it is the simulator's time of the returned placement */
        op_sim_result_init(&r, &tp.p, &err);
        cr_assert_float_eq(tk_simulate(&tp.p, b.placement->device_of, &r), b.step_time_us, 1e-6);
        op_sim_result_destroy(&r);
        sgdp_train_stats s = sgdp_trainer_stats(t);
        cr_assert_gt(s.clone_steps, 0);
        sgdp_trainer_free(t);
        sgdp_policy_free(pol);
        tk_unbind(&tp);
    }
}

/* Two rollout batches per iteration, 1 or 2 simulation threads: the same
 * weights bit for bit (what makes MPI results rank-count independent). */

/* Every weight of ps in one array (malloc'ed), its length in *total. */
static double *flat_weights(nn_params *ps, size_t *total)
{
    *total = 0;
    for (size_t i = 0; i < ps->count; i++)
        *total += nn_tensor_size(&ps->items[i]->value);
    double *w = malloc(*total * sizeof(double));
    size_t off = 0;
    for (size_t i = 0; i < ps->count; i++) {
        size_t len = nn_tensor_size(&ps->items[i]->value);
        memcpy(w + off, ps->items[i]->value.data, len * sizeof(double));
        off += len;
    }
    return w;
}
Test(sgdp, slots_give_the_same_weights_with_any_thread_count)
{
    tk_problem tp;
    tk_bind(&tp, tk_random_dag(40, 0.1, 7), tk_cluster(2, 5.0, 1e-4, (int64_t)1 << 40));
    double *w[2] = {NULL, NULL};
    size_t total = 0;
    for (int threads = 1; threads <= 2; threads++) {
        op_error err = {0};
        sgdp_config cfg = tiny_config();
        sgdp_policy *pol = sgdp_policy_new(&cfg, 5, &err);
        const op_problem *probs[1] = {&tp.p};
        sgdp_train_config tc = warm_train(3, threads, 2);
        sgdp_trainer *t = sgdp_trainer_new(pol, probs, 1, &tc, &err);
        cr_assert_not_null(t, "%s", err.msg);
        cr_assert_eq(sgdp_trainer_run(t, &err), OP_OK, "%s", err.msg);
        cr_assert_eq(sgdp_trainer_stats(t).rollouts, 3 * 2 * 9);
        w[threads - 1] = flat_weights(sgdp_policy_params(pol), &total);
        sgdp_trainer_free(t);
        sgdp_policy_free(pol);
    }
    cr_assert_eq(memcmp(w[0], w[1], total * sizeof(double)), 0);
    free(w[0]);
    free(w[1]);
    tk_unbind(&tp);
}

/* Ctrl-C inside a pass (one over 10^5 ops takes seconds, longer than the
 * second a placer has to answer): the pass ends at its next GraphSAGE layer
 * or attention segment, the stage returns without an error, no update was
 * applied (the weights are those before), and the best so far, here the
 * reference, stands; once the flag is down the trainer trains again (PPO:
 * a stopped behaviour cloning is not taken up again). */
Test(sgdp, ctrl_c_inside_a_pass_keeps_the_best_so_far)
{
    tk_problem tp;
    tk_bind(&tp, tk_random_dag(60, 0.08, 4), tk_cluster(2, 5.0, 1e-4, (int64_t)1 << 40));
    op_error err = {0};
    sgdp_config cfg = tiny_config();
    sgdp_policy *pol = sgdp_policy_new(&cfg, 4, &err);
    const op_problem *probs[1] = {&tp.p};
    sgdp_train_config tc = warm_train(3, 1, 1);
    sgdp_trainer *t = sgdp_trainer_new(pol, probs, 1, &tc, &err);
    cr_assert_not_null(t, "%s", err.msg);
    const op_portfolio_winner *ref = sgdp_trainer_reference(t, 0);
    cr_assert_not_null(ref);
    size_t total = 0, total1 = 0;
    double *w0 = flat_weights(sgdp_policy_params(pol), &total);
    op_set_interrupted(1);
    op_status st = sgdp_trainer_run(t, &err);
    op_status st_eval = sgdp_trainer_evaluate(t, 0, 4, &err);
    sgdp_train_stats s = sgdp_trainer_stats(t);
    op_set_interrupted(0);
    cr_assert_eq(st, OP_OK, "%s", err.msg);
    cr_assert_eq(st_eval, OP_OK, "%s", err.msg);
    cr_assert_eq(err.code, OP_OK, "the stop is no error: %s", err.msg);
    cr_assert_eq(s.clone_steps, 0);
    cr_assert_eq(s.iterations, 0);
    cr_assert_eq(s.rollouts, 0);
    double *w1 = flat_weights(sgdp_policy_params(pol), &total1);
    cr_assert_eq(total1, total);
    cr_assert_eq(memcmp(w0, w1, total * sizeof(double)), 0, "an update was applied");
    sgdp_best b = sgdp_trainer_best(t, 0);
    cr_assert_not_null(b.placement);
    cr_assert_float_eq(b.step_time_us, ref->step, 1e-9);
    op_sim_result r; /* and it is the simulator's time of the returned placement */
    op_sim_result_init(&r, &tp.p, &err);
    cr_assert_float_eq(tk_simulate(&tp.p, b.placement->device_of, &r), ref->step, 1e-6);
    op_sim_result_destroy(&r);
    cr_assert_eq(sgdp_trainer_run(t, &err), OP_OK, "%s", err.msg); /* PPO now */
    cr_assert_eq(sgdp_trainer_stats(t).iterations, 3);
    cr_assert_leq(sgdp_trainer_best(t, 0).step_time_us, ref->step + 1e-9);
    free(w0);
    free(w1);
    sgdp_trainer_free(t);
    sgdp_policy_free(pol);
    tk_unbind(&tp);
}

/* ----------------------------- generalisation aids (beyond the paper:
 * the reference skip in sgdp_policy.c, varied inputs in sgdp_train.c) */

/* sum over allowed (row, device) of c * logp, and its gradient */
static double weighted_logp(sgdp_policy *pol, const sgdp_graph *sg, const double *c, int backward)
{
    op_error err = {0};
    nn_arena ar;
    nn_arena_init(&ar, 1 << 16, &err);
    nn_tensor logp, dlogp;
    sgdp_pass *pass;
    cr_assert_eq(sgdp_policy_forward(pol, &ar, sg, &logp, &pass, &err), OP_OK, "%s", err.msg);
    nn_arena_tensor(&ar, logp.rows, logp.cols, &dlogp, &err);
    double sum = 0.0;
    for (size_t k = 0; k < nn_tensor_size(&logp); k++)
        if (sg->mask[k]) {
            sum += c[k] * logp.data[k];
            dlogp.data[k] = c[k];
        }
    if (backward) {
        nn_params_zero_grad(sgdp_policy_params(pol));
        cr_assert_eq(sgdp_policy_backward(pol, &ar, sg, pass, &dlogp, &err), OP_OK, "%s",
                     err.msg);
    }
    nn_arena_destroy(&ar);
    return sum;
}

/* Loss weights in [-0.5, 0.5) for every (row, device) of sg, then one
 * forward and backward pass of weighted_logp so every parameter's grad
 * holds d loss / d parameter.  The caller frees the weights. */
static double *weights_and_gradient(sgdp_policy *pol, const sgdp_graph *sg, int max_devices,
                                    uint64_t seed)
{
    size_t sz = (size_t)sg->n * (size_t)max_devices;
    double *c = malloc(sz * sizeof *c);
    nn_rng rng;
    nn_rng_seed(&rng, seed);
    for (size_t k = 0; k < sz; k++)
        c[k] = nn_rng_uniform(&rng) - 0.5;
    weighted_logp(pol, sg, c, 1);
    return c;
}

/* Entry e of q: the analytic gradient (left by weights_and_gradient)
 * against central finite differences of weighted_logp. */
static void check_entry(sgdp_policy *pol, const sgdp_graph *sg, const double *c, nn_param *q,
                        int e)
{
    double *w = &q->value.data[e], keep = *w, h = 1e-6;
    double analytic = q->grad.data[e];
    *w = keep + h;
    double up = weighted_logp(pol, sg, c, 0);
    *w = keep - h;
    double down = weighted_logp(pol, sg, c, 0);
    *w = keep;
    double numeric = (up - down) / (2 * h);
    cr_assert(fabs(numeric - analytic) <= 1e-5 * fmax(1.0, fabs(numeric)),
              "%s[%d]: analytic %.8g, numeric %.8g", q->name, e, analytic, numeric);
}

/* Without a reference (the plain policy, placers/sgdp/sgdp.h): the gradient
 * through the head's standardisation over the deciding ops and the logit
 * centring matches finite differences on every parameter tensor's first
 * entries (the loss weighs every row, deciding or not), and no device is
 * preferred on average over the decisions (every column of logp has the
 * same mean over the deciding rows up to the softmax's normaliser), with
 * and without colocation groups. */
Test(sgdp, plain_policy_gradient_matches_finite_differences)
{
    for (int groups = 0; groups <= 4; groups += 4) {
        tk_problem tp;
        tk_bind(&tp, tk_random_dag_grouped(40, 0.1, 5, groups),
                tk_cluster(3, 5.0, 1e-4, (int64_t)1 << 40));
        op_error err = {0};
        sgdp_config cfg = tiny_config();
        cfg.head_init = SGDP_PLAIN_HEAD_INIT;
        cfg.segment = 64; /* one segment: no memory, whose gradient is cut by design */
        sgdp_policy *pol = sgdp_policy_new(&cfg, 3, &err);
        cr_assert_not_null(pol, "%s", err.msg);
        sgdp_graph sg;
        cr_assert_eq(sgdp_graph_init(&sg, &tp.p, cfg.max_devices, cfg.gs_knn, &err), OP_OK);
        int deciding = 0;
        for (int t = 0; t < sg.n; t++)
            deciding += sg.decides[t];
        cr_assert_eq(deciding, groups ? 40 - 14 + 4 : 40); /* 14 grouped ops in 4 groups */
        double *c = weights_and_gradient(pol, &sg, cfg.max_devices, 11);
        nn_params *ps = sgdp_policy_params(pol);
        int checked = 0;
        for (size_t i = 0; i < ps->count; i++) {
            nn_param *q = ps->items[i];
            if (!strcmp(q->name, "sgdp.arch") || !strcmp(q->name, "sgdp.ref_gain"))
                continue;
            for (int e = 0; e < 2 && (size_t)e < nn_tensor_size(&q->value); e++) {
                check_entry(pol, &sg, c, q, e);
                checked++;
            }
        }
        cr_assert_gt(checked, 20);
        /* logits centred over the decisions: the mean over deciding rows of
         * logp[., d] - logp[., 0] is 0 on the cluster's 3 devices */
        nn_arena ar;
        nn_arena_init(&ar, 1 << 16, &err);
        nn_tensor logp;
        cr_assert_eq(sgdp_policy_forward(pol, &ar, &sg, &logp, NULL, &err), OP_OK);
        for (int d = 1; d < 3; d++) {
            double m = 0.0;
            for (int t = 0; t < sg.n; t++)
                if (sg.decides[t])
                    m += NN_AT(&logp, t, d) - NN_AT(&logp, t, 0);
            cr_assert_lt(fabs(m / deciding), 1e-9, "device %d preferred by %.3g on average", d,
                         m / deciding);
        }
        nn_arena_destroy(&ar);
        free(c);
        sgdp_graph_destroy(&sg);
        sgdp_policy_free(pol);
        tk_unbind(&tp);
    }
}

/* A fresh policy copies whatever reference it is given (any labelling),
 * and the gradient through the reference skip matches finite differences. */
Test(sgdp, reference_skip_copies_any_input_and_has_the_right_gradient)
{
    tk_problem tp;
    tk_bind(&tp, tk_random_dag(40, 0.1, 5), tk_cluster(3, 5.0, 1e-4, (int64_t)1 << 40));
    op_error err = {0};
    sgdp_config cfg = tiny_config();
    sgdp_policy *pol = sgdp_policy_new(&cfg, 3, &err);
    cr_assert_not_null(pol, "%s", err.msg);
    sgdp_graph sg;
    cr_assert_eq(sgdp_graph_init(&sg, &tp.p, cfg.max_devices, cfg.gs_knn, &err), OP_OK);
    int ref[40], row[40], dev[40];
    for (int shift = 0; shift < 3; shift++) { /* the same pattern under 3 labellings */
        for (int t = 0; t < sg.n; t++)
            ref[t] = (t / 7 + shift) % 3;
        sgdp_graph_set_reference(&sg, ref);
        nn_arena ar;
        nn_arena_init(&ar, 1 << 16, &err);
        nn_tensor logp;
        cr_assert_eq(sgdp_policy_forward(pol, &ar, &sg, &logp, NULL, &err), OP_OK);
        sgdp_sample(&sg, &logp, NULL, 1, row, dev);
        for (int t = 0; t < sg.n; t++) {
            cr_assert_eq(row[t], ref[t], "row %d, labelling %d", t, shift);
            cr_assert_gt(exp(NN_AT(&logp, t, ref[t])), 0.9);
        }
        nn_arena_destroy(&ar);
    }
    /* finite differences: the skip's gain and a few other weights */
    double *c = weights_and_gradient(pol, &sg, cfg.max_devices, 9);
    nn_params *ps = sgdp_policy_params(pol);
    nn_param *probe[3] = {nn_params_find(ps, "sgdp.ref_gain"), ps->items[1],
                          ps->items[ps->count - 2]};
    cr_assert_not_null(probe[0]);
    for (int i = 0; i < 3; i++)
        check_entry(pol, &sg, c, probe[i], 0);
    free(c);
    sgdp_graph_destroy(&sg);
    sgdp_policy_free(pol);
    tk_unbind(&tp);
}

/* Batch training with every input varied (relabelled / perturbed copies of
 * the incumbent): bit-identical for 1 and 2 threads, and the placements it
 * keeps obey pins, kinds and colocation on a mixed GPU/CPU cluster (a
 * relabelling may only swap interchangeable devices). */
Test(sgdp, varied_inputs_are_reproducible_and_keep_constraints)
{
    tk_problem a, b;
    tk_bind(&a, tk_random_dag(50, 0.08, 2), tk_cluster(2, 5.0, 1e-4, (int64_t)1 << 40));
    tk_bind(&b, constrained_graph(), gpus_and_cpu());
    const op_problem *probs[2] = {&a.p, &b.p};
    double *w[2] = {NULL, NULL};
    size_t total = 0;
    for (int threads = 1; threads <= 2; threads++) {
        op_error err = {0};
        sgdp_config cfg = tiny_config();
        sgdp_policy *pol = sgdp_policy_new(&cfg, 5, &err);
        sgdp_train_config tc = warm_train(6, threads, 2);
        tc.input_variety = 1.0;
        sgdp_trainer *t = sgdp_trainer_new(pol, probs, 2, &tc, &err);
        cr_assert_not_null(t, "%s", err.msg);
        cr_assert_eq(sgdp_trainer_run(t, &err), OP_OK, "%s", err.msg);
        for (int i = 0; i < 2; i++) {
            sgdp_best bst = sgdp_trainer_best(t, i);
            cr_assert_not_null(bst.placement);
            cr_assert_eq(op_problem_check_placement(probs[i], bst.placement, &err), OP_OK, "%s",
                         err.msg);
            cr_assert_leq(bst.step_time_us, sgdp_trainer_reference(t, i)->step + 1e-9);
        }
        w[threads - 1] = flat_weights(sgdp_policy_params(pol), &total);
        sgdp_trainer_free(t);
        sgdp_policy_free(pol);
    }
    cr_assert_eq(memcmp(w[0], w[1], total * sizeof(double)), 0);
    free(w[0]), free(w[1]);
    tk_unbind(&a);
    tk_unbind(&b);
}

static double json_step(const char *out)
{
    const char *s = strstr(out, "\"step_time_us\"");
    cr_assert_not_null(s, "%s", out);
    s = strchr(s, ':');
    return strtod(s + 1, NULL);
}

/* The random DAG of `seed` with parameters on every third op, its compute
 * times multiplied by tscale and its byte counts by bscale, bound to a
 * 2-GPU cluster; the features of its rows (SGDP_N_FEATURES each) with a
 * reference placement ref (per row) into feat. */
static void scaled_features(uint64_t seed, double tscale, int64_t bscale, const int *ref,
                            double *feat, int n)
{
    op_graph *g = tk_random_dag(n, 0.1, seed);
    for (int op = 0; op < g->n_ops; op++) {
        g->param_bytes[op] = op % 3 ? 0 : 1000 * (op + 1);
        g->param_bytes[op] *= bscale;
        g->output_bytes[op] *= bscale;
    }
    for (int e = 0; e < g->n_edges; e++)
        g->edge_bytes[e] *= bscale;
    for (int k = 0; k < g->time_off[g->n_ops]; k++)
        g->time_val[k] *= tscale;
    tk_problem tp;
    tk_bind(&tp, g, tk_cluster(2, 5.0, 1e-4, (int64_t)1 << 40));
    op_error err = {0};
    sgdp_graph sg;
    cr_assert_eq(sgdp_graph_init(&sg, &tp.p, 8, 8, &err), OP_OK, "%s", err.msg);
    sgdp_graph_set_reference(&sg, ref);
    memcpy(feat, sg.feat, (size_t)n * SGDP_N_FEATURES * sizeof *feat);
    sgdp_graph_destroy(&sg);
    tk_unbind(&tp);
}

/* What the policy sees is normalised per graph: multiplying every compute
 * time (or every byte count) of a graph by one constant changes none of its
 * features, except the two that compare the graph with the cluster (26:
 * transfer vs compute time; 31, for bytes: parameters vs device memory).
 * So a family of large graphs looks like a family of small ones. */
Test(sgdp, features_do_not_depend_on_the_units_or_scale_of_a_graph)
{
    enum { N = 50 };
    static double base[N * SGDP_N_FEATURES], other[N * SGDP_N_FEATURES];
    int ref[N];
    for (int t = 0; t < N; t++)
        ref[t] = (t / 6) % 2;
    scaled_features(21, 1.0, 1, ref, base, N);
    struct { double ts; int64_t bs; } cases[2] = {{1000.0, 1}, {1.0, 1000}};
    for (int c = 0; c < 2; c++) {
        scaled_features(21, cases[c].ts, cases[c].bs, ref, other, N);
        for (int t = 0; t < N; t++)
            for (int f = 0; f < SGDP_N_FEATURES; f++) {
                if (f == SGDP_TYPE_BUCKETS + 10 || (c == 1 && f == SGDP_TYPE_BUCKETS + 15))
                    continue;
                double a = base[t * SGDP_N_FEATURES + f], b = other[t * SGDP_N_FEATURES + f];
                cr_assert(fabs(a - b) <= 1e-9 * fmax(1.0, fabs(a)),
                          "case %d row %d feature %d: %.12g vs %.12g", c, t, f, a, b);
            }
    }
}

/* The placement features: the share of an op's neighbours its reference
 * puts elsewhere (brute force over the edges), its device's compute load
 * relative to the mean (all on one of 2 devices: 2x the mean) and its
 * unit's work relative to the mean unit's. */
Test(sgdp, reference_features_give_cut_share_and_device_load)
{
    tk_problem tp;
    tk_bind(&tp, tk_random_dag(40, 0.12, 6), tk_cluster(2, 5.0, 1e-4, (int64_t)1 << 40));
    const op_graph *g = tp.g;
    op_error err = {0};
    sgdp_graph sg;
    cr_assert_eq(sgdp_graph_init(&sg, &tp.p, 8, 8, &err), OP_OK, "%s", err.msg);
    int ref[40];
    uint64_t s = 3;
    for (int pass = 0; pass < 2; pass++) {
        double load[2] = {0, 0};
        for (int t = 0; t < sg.n; t++) {
            ref[t] = pass == 0 ? 0 : (int)(tk_rand(&s) % 2);
            load[ref[t]] += tp.p.work[g->topo[t]];
        }
        sgdp_graph_set_reference(&sg, ref);
        for (int t = 0; t < sg.n; t++) {
            int op = g->topo[t], cut = 0, deg = 0;
            for (int k = g->pred_off[op]; k < g->pred_off[op + 1]; k++, deg++)
                cut += ref[g->topo_pos[g->pred[k]]] != ref[t];
            for (int k = g->succ_off[op]; k < g->succ_off[op + 1]; k++, deg++)
                cut += ref[g->topo_pos[g->succ[k]]] != ref[t];
            const double *f = sg.feat + (size_t)t * SGDP_N_FEATURES + SGDP_N_FEATURES -
                              SGDP_REF_FEATURES;
            double want_load = fmin(3.0, 2.0 * load[ref[t]] / (load[0] + load[1])) - 1.0;
            cr_assert_float_eq(f[SGDP_REF_SLOTS + 1], deg ? (double)cut / deg : 0.0, 1e-12,
                               "row %d", t);
            cr_assert_float_eq(f[SGDP_REF_SLOTS + 2], want_load, 1e-12, "row %d", t);
            if (pass == 0)
                cr_assert_float_eq(f[SGDP_REF_SLOTS + 2], 1.0, 1e-12);
            /* one unit per op here: its work against the mean op's */
            double want_work = log1p(tp.p.work[op] * sg.n / tp.p.total_work_us) - log(2.0);
            cr_assert_float_eq(f[SGDP_REF_SLOTS + 3], want_work, 1e-9, "row %d", t);
        }
    }
    sgdp_graph_destroy(&sg);
    tk_unbind(&tp);
}

/* Calibrated proposals: one offset on the reference logits makes the
 * expected number of decisions sampled off the reference M, keeps every
 * row a distribution, keeps the proportions among a row's other devices
 * and the policy's order of rows by probability of moving. */
Test(sgdp, calibrated_proposals_move_m_decisions_in_the_policys_order)
{
    tk_problem tp;
    tk_bind(&tp, tk_random_dag(40, 0.1, 8), tk_cluster(3, 5.0, 1e-4, (int64_t)1 << 40));
    op_error err = {0};
    sgdp_config cfg = tiny_config();
    sgdp_policy *pol = sgdp_policy_new(&cfg, 4, &err);
    cr_assert_not_null(pol, "%s", err.msg);
    sgdp_graph sg;
    cr_assert_eq(sgdp_graph_init(&sg, &tp.p, cfg.max_devices, cfg.gs_knn, &err), OP_OK);
    int ref[40];
    for (int t = 0; t < sg.n; t++)
        ref[t] = (t / 5) % 3;
    sgdp_graph_set_reference(&sg, ref);
    nn_arena ar;
    nn_arena_init(&ar, 1 << 16, &err);
    nn_tensor logp, out;
    cr_assert_eq(sgdp_policy_forward(pol, &ar, &sg, &logp, NULL, &err), OP_OK);
    cr_assert_eq(nn_arena_tensor(&ar, logp.rows, logp.cols, &out, &err), OP_OK);
    double odds[40];
    for (int t = 0; t < sg.n; t++) {
        double q = 0.0;
        for (int d = 0; d < cfg.max_devices; d++)
            if (d != ref[t] && sg.mask[(size_t)t * cfg.max_devices + d])
                q += exp(NN_AT(&logp, t, d));
        odds[t] = log(q) - NN_AT(&logp, t, ref[t]);
    }
    double targets[3] = {0.5, 3.0, 1000.0};
    for (int i = 0; i < 3; i++) {
        double delta = sgdp_calibrate_offset(&sg, &logp, targets[i]);
        sgdp_apply_offset(&sg, &logp, delta, &out);
        double moves = 0.0, pm[40];
        for (int t = 0; t < sg.n; t++) {
            double sum = 0.0;
            for (int d = 0; d < cfg.max_devices; d++)
                sum += exp(NN_AT(&out, t, d));
            cr_assert_float_eq(sum, 1.0, 1e-9, "row %d", t);
            pm[t] = 1.0 - exp(NN_AT(&out, t, ref[t]));
            moves += pm[t];
            for (int d = 1; d < cfg.max_devices; d++)
                if (d != ref[t] && 0 != ref[t] && sg.mask[(size_t)t * cfg.max_devices + d])
                    cr_assert_float_eq(NN_AT(&out, t, d) - NN_AT(&out, t, 0),
                                       NN_AT(&logp, t, d) - NN_AT(&logp, t, 0), 1e-9);
        }
        double want = fmin(targets[i], 0.5 * sg.n); /* every row decides here */
        cr_assert_float_eq(moves, want, 1e-6, "target %g: %.9g moves", targets[i], moves);
        for (int a = 0; a < sg.n; a++)
            for (int b = 0; b < sg.n; b++)
                if (odds[a] > odds[b] + 1e-12)
                    cr_assert_geq(pm[a], pm[b], "rows %d %d", a, b);
    }
    cr_assert(isinf(sgdp_calibrate_offset(&sg, &logp, 0.0)));
    nn_arena_destroy(&ar);
    sgdp_graph_destroy(&sg);
    sgdp_policy_free(pol);
    tk_unbind(&tp);
}

/* --paper end to end: options beyond the paper are usage errors with it;
 * `train --iterations 0` writes the untrained policy; zero-shot --paper is
 * one-shot inference: the loaded policy's greedy placement, simulated. */
Test(sgdp, paper_mode_is_one_shot_inference_and_refuses_additions)
{
    const char *dir = tk_tmpdir();
    char g[512], w[512], cmd[4096];
    snprintf(g, sizeof g, "%s/paper.json", dir);
    snprintf(w, sizeof w, "%s/paper.bin", dir);
    op_graph *gr = tk_random_dag(40, 0.1, 6);
    cr_assert_eq(op_graph_write(gr, g, NULL), OP_OK);
    op_graph_free(gr);
    char *out = NULL;
    const char *bad[] = {"--heuristics expert", "--units 8", "--warm-start 1"};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd,
                 "%s place %s --preset v100-nvlink --gpus 2 --algo sgdp --paper %s --quiet",
                 OPPLACE_BIN, g, bad[i]);
        cr_assert_eq(tk_run(cmd, &out), 2, "%s: %s", bad[i], out);
        cr_assert(strstr(out, "beyond the paper"), "%s", out);
        free(out);
    }
    snprintf(cmd, sizeof cmd,
             "%s train sgdp --paper --graphs %s --preset v100-nvlink --gpus 2 --weights %s "
             "--iterations 0 --hidden 16 --seed 3",
             OPPLACE_BIN, g, w);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    cr_assert(strstr(out, "0 iterations, 0 simulated rollouts"), "%s", out);
    free(out);
    /* the untrained weights are the seed's fresh plain policy */
    op_error err = {0};
    sgdp_policy *loaded = sgdp_policy_from_file(w, &err);
    cr_assert_not_null(loaded, "%s", err.msg);
    sgdp_config cfg = *sgdp_policy_config(loaded);
    cfg.head_init = SGDP_PLAIN_HEAD_INIT;
    sgdp_policy *fresh = sgdp_policy_new(&cfg, 3, &err);
    nn_params *a = sgdp_policy_params(loaded), *b = sgdp_policy_params(fresh);
    cr_assert_eq(a->count, b->count);
    for (size_t i = 0; i < a->count; i++)
        cr_assert_eq(memcmp(a->items[i]->value.data, b->items[i]->value.data,
                            nn_tensor_size(&a->items[i]->value) * sizeof(double)),
                     0, "%s differs", a->items[i]->name);
    snprintf(cmd, sizeof cmd,
             "%s place %s --preset v100-nvlink --gpus 2 --algo sgdp --paper --weights %s --json "
             "--quiet",
             OPPLACE_BIN, g, w);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    double placed = json_step(out);
    free(out);
    /* the same policy's greedy placement on the same cluster, simulated here */
    tk_problem tp;
    tk_bind(&tp, op_graph_read(g, &err), op_cluster_preset("v100-nvlink", 2, 0, &err));
    int dev[40];
    double greedy = greedy_time(loaded, &tp.p, dev);
    cr_assert_float_eq(placed, greedy, 1e-6 * greedy, "--paper zero-shot %.3f, greedy %.3f",
                       placed, greedy);
    tk_unbind(&tp);
    sgdp_policy_free(fresh);
    sgdp_policy_free(loaded);
}
