/*
 * test_sgdp_rank.c - SGDP's supervised move ranking (src/placers/sgdp/sgdp_rank.c,
 * beyond the paper): every label equals an independent simulation of the
 * moved placement and keeps the best other device; the ranking loss's
 * gradient matches finite differences (pairwise part and, with three
 * devices, the device cross-entropy) and its AUC counts pairs; training
 * the ranking stage lowers the loss on its own states and raises the AUC
 * of the policy's score on a training graph (an API stage: it did not
 * help, so `opplace train` no longer offers it); --iterations 0 alone
 * writes the policy untrained.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/io.h"
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

static sgdp_train_config rank_train(int units, int steps, uint64_t seed)
{
    sgdp_train_config tc = sgdp_train_defaults();
    tc.iterations = 0;
    tc.budget_seconds = 0;
    tc.samples = 4;
    tc.threads = 2;
    tc.seed = seed;
    tc.heuristics = "expert,metis,single";
    tc.unit_target = units;
    tc.rank_steps = steps;
    tc.rank_states = 3;
    tc.rank_lr = 1e-2;
    return tc;
}

Test(sgdp_rank, labels_equal_an_independent_simulation_of_the_moved_placement)
{
    op_error err = {0};
    tk_problem tp;
    tk_bind(&tp, tk_random_dag(40, 0.1, 5), tk_cluster(3, 5.0, 1e-4, (int64_t)1 << 40));
    const op_problem *p = &tp.p;
    sgdp_config cfg = tiny_config();
    sgdp_policy *pol = sgdp_policy_new(&cfg, 1, &err);
    cr_assert_not_null(pol, "%s", err.msg);
    const op_problem *probs[1] = {p};
    sgdp_train_config tc = rank_train(0, 0, 1); /* one decision per op */
    sgdp_trainer *t = sgdp_trainer_new(pol, probs, 1, &tc, &err);
    cr_assert_not_null(t, "%s", err.msg);
    int *row_dev = malloc((size_t)p->n * sizeof *row_dev);
    int *dev = malloc((size_t)p->n * sizeof *dev);
    uint64_t rs = 7;
    for (int r = 0; r < p->n; r++)
        row_dev[r] = (int)(tk_rand(&rs) % 3);
    sgdp_move_labels l;
    cr_assert_eq(sgdp_trainer_label_moves(t, 0, row_dev, &l, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(l.n, p->n, "every op may move: %d labels for %d ops", l.n, p->n);
    for (int r = 0; r < p->n; r++)
        dev[p->g->topo[r]] = row_dev[r];
    double in = tk_step(p, dev);
    cr_assert_float_eq(l.input_time, in, 1e-6);
    int improving = 0;
    for (int k = 0; k < l.n; k++) {
        int r = l.row[k], op = p->g->topo[r];
        cr_assert_neq(l.dev[k], row_dev[r]);
        double best = INFINITY;
        for (int d = 0; d < 3; d++) {
            if (d == row_dev[r])
                continue;
            dev[op] = d;
            double s = tk_step(p, dev);
            if (d == l.dev[k])
                cr_assert_float_eq(s, l.step[k], 1e-6, "row %d device %d", r, d);
            best = fmin(best, s);
        }
        dev[op] = row_dev[r];
        cr_assert_float_eq(l.step[k], best, 1e-6, "row %d: the label keeps the best device", r);
        cr_assert_eq(l.improves[k], l.step[k] < in, "row %d", r);
        improving += l.improves[k];
    }
    cr_assert_eq(improving, l.improving);
    cr_assert_gt(improving, 0, "a random placement has improving moves");
    sgdp_move_labels_free(&l);
    free(row_dev);
    free(dev);
    sgdp_trainer_free(t);
    sgdp_policy_free(pol);
    tk_unbind(&tp);
}

Test(sgdp_rank, loss_gradient_matches_finite_differences)
{
    op_error err = {0};
    tk_problem tp;
    tk_bind(&tp, tk_random_dag(12, 0.2, 3), tk_cluster(3, 5.0, 1e-4, (int64_t)1 << 40));
    sgdp_graph sg;
    cr_assert_eq(sgdp_graph_init(&sg, &tp.p, 4, 4, &err), OP_OK, "%s", err.msg);
    int n = sg.n, D = sg.max_devices;
    nn_tensor logp = {.rows = n, .cols = D, .data = calloc((size_t)n * D, sizeof(double))};
    nn_tensor dlogp = {.rows = n, .cols = D, .data = calloc((size_t)n * D, sizeof(double))};
    int *input = malloc((size_t)n * sizeof *input);
    sgdp_move_labels l = {.n = n};
    l.row = malloc((size_t)n * sizeof *l.row);
    l.dev = malloc((size_t)n * sizeof *l.dev);
    l.improves = malloc((size_t)n);
    uint64_t rs = 11;
    for (int r = 0; r < n; r++) {
        for (int d = 0; d < D; d++)
            NN_AT(&logp, r, d) = sg.mask[(size_t)r * D + d]
                                     ? -0.5 - (double)(tk_rand(&rs) % 1000) / 400.0
                                     : -INFINITY;
        input[r] = (int)(tk_rand(&rs) % 3);
        l.row[r] = r;
        l.dev[r] = (input[r] + 1 + (int)(tk_rand(&rs) % 2)) % 3;
        l.improves[r] = (unsigned char)(r % 3 == 0);
    }
    double auc;
    sgdp_rank_loss(&sg, &logp, input, &l, &dlogp, &auc);
    cr_assert(auc >= 0.0 && auc <= 1.0);
    /* the AUC by hand */
    double right = 0, pairs = 0;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            if (l.improves[a] && !l.improves[b]) {
                double sa = sgdp_move_score(&sg, &logp, input, a);
                double sb = sgdp_move_score(&sg, &logp, input, b);
                right += sa > sb ? 1.0 : (sa == sb ? 0.5 : 0.0), pairs++;
            }
    cr_assert_float_eq(auc, right / pairs, 1e-12);
    double h = 1e-6;
    int checked = 0;
    for (int r = 0; r < n; r++)
        for (int d = 0; d < D; d++) {
            if (!isfinite(NN_AT(&logp, r, d)))
                continue;
            double x = NN_AT(&logp, r, d);
            NN_AT(&logp, r, d) = x + h;
            double up = sgdp_rank_loss(&sg, &logp, input, &l, NULL, NULL);
            NN_AT(&logp, r, d) = x - h;
            double down = sgdp_rank_loss(&sg, &logp, input, &l, NULL, NULL);
            NN_AT(&logp, r, d) = x;
            double fd = (up - down) / (2 * h);
            cr_assert(fabs(fd - NN_AT(&dlogp, r, d)) <= 1e-6 + 1e-4 * fabs(fd),
                      "row %d device %d: analytic %.9g, finite differences %.9g", r, d,
                      NN_AT(&dlogp, r, d), fd);
            checked++;
        }
    cr_assert_gt(checked, n);
    free(logp.data), free(dlogp.data), free(input);
    free(l.row), free(l.dev), free(l.improves);
    sgdp_graph_destroy(&sg);
    tk_unbind(&tp);
}

static sgdp_rank_probe probe(sgdp_trainer *t)
{
    op_error err = {0};
    sgdp_rank_probe pr;
    cr_assert_eq(sgdp_trainer_rank_probe(t, 0, 8, &pr, &err), OP_OK, "%s", err.msg);
    cr_assert_leq(pr.top_improving, pr.top_k);
    cr_assert_leq(pr.improving, pr.units);
    return pr;
}

Test(sgdp_rank, training_raises_the_auc_on_a_training_graph)
{
    op_error err = {0};
    tk_problem a, b;
    tk_bind(&a, tk_random_dag(40, 0.08, 21), tk_cluster(2, 5.0, 1e-4, (int64_t)1 << 40));
    tk_bind(&b, tk_random_dag(30, 0.1, 22), tk_cluster(2, 5.0, 1e-4, (int64_t)1 << 40));
    sgdp_config cfg = tiny_config();
    sgdp_policy *pol = sgdp_policy_new(&cfg, 3, &err);
    cr_assert_not_null(pol, "%s", err.msg);
    const op_problem *probs[2] = {&a.p, &b.p};
    sgdp_train_config tc = rank_train(0, 200, 3);
    tc.rank_states = 1; /* the reference only: the state the probe reads */
    sgdp_trainer *t = sgdp_trainer_new(pol, probs, 2, &tc, &err);
    cr_assert_not_null(t, "%s", err.msg);
    sgdp_rank_probe before = probe(t);
    cr_assert_gt(before.improving, 0);
    cr_assert_lt(before.improving, before.units);
    cr_assert_eq(sgdp_trainer_run(t, &err), OP_OK, "%s", err.msg); /* ranking only */
    sgdp_rank_probe after = probe(t);
    cr_log_info("AUC %.3f -> %.3f", before.auc, after.auc);
    cr_assert_eq(after.units, before.units, "the input is restored after training");
    cr_assert_eq(after.improving, before.improving);
    cr_assert_gt(after.auc, before.auc + 0.05, "AUC %.3f -> %.3f", before.auc, after.auc);
    cr_assert_gt(after.auc, 0.7, "AUC %.3f after training", after.auc);
    sgdp_trainer_free(t);
    sgdp_policy_free(pol);
    tk_unbind(&a);
    tk_unbind(&b);
}

Test(sgdp_rank, cli_iterations_zero_writes_the_policy)
{
    const char *dir = tk_tmpdir();
    char g1[512], g2[512], w[512], w2[512], cmd[4096];
    snprintf(g1, sizeof g1, "%s/rank1.json", dir);
    snprintf(g2, sizeof g2, "%s/rank2.json", dir);
    snprintf(w, sizeof w, "%s/rank_w.bin", dir);
    snprintf(w2, sizeof w2, "%s/rank_w2.bin", dir);
    op_graph *a = tk_random_dag(18, 0.2, 8), *b = tk_random_dag(25, 0.1, 3);
    cr_assert_eq(op_graph_write(a, g1, NULL), OP_OK);
    cr_assert_eq(op_graph_write(b, g2, NULL), OP_OK);
    op_graph_free(a);
    op_graph_free(b);
    char *out = NULL;
    snprintf(cmd, sizeof cmd,
             "%s train sgdp --graphs %s %s --preset v100-nvlink --gpus 2 --weights %s "
             "--iterations 2 --samples 4 --hidden 16",
             OPPLACE_BIN, g1, g2, w);
    cr_assert_eq(tk_run(cmd, &out), 0, "%s", out);
    cr_assert(strstr(out, "2 iterations"), "%s", out);
    free(out);
    /* --iterations 0 and nothing else: the policy as it came, written */
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
}
