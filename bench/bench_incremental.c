/*
 * bench_incremental.c - incremental vs full re-simulation after moving one
 * op (issue 9).  Usage: bench_incremental GRAPH.json [GPUS] [MOVES] [CHECKPOINTS]
 *
 * Base placement: ops dealt to GPUs in contiguous topological chunks (a
 * realistic pipeline-like placement).  Each move sends one random op to a
 * random other GPU; both evaluators must agree exactly (checked).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opplace/io.h"
#include "opplace/simulate.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_incremental GRAPH.json [GPUS] [MOVES] [CHECKPOINTS]\n");
        return 2;
    }
    int gpus = argc > 2 ? atoi(argv[2]) : 4, moves = argc > 3 ? atoi(argv[3]) : 100;
    int ckpts = argc > 4 ? atoi(argv[4]) : 16;
    op_error err = {0};
    op_graph *g = op_graph_read(argv[1], &err);
    op_cluster *c = g ? op_cluster_preset("v100-nvlink", gpus, 0, &err) : NULL;
    op_problem p;
    if (!c || op_problem_init(&p, g, c, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    op_sim *inc = op_sim_new(&p, &err), *full = op_sim_new(&p, &err);
    op_sim_result r1, r2;
    op_sim_result_init(&r1, &p, &err);
    op_sim_result_init(&r2, &p, &err);
    op_placement base, cand;
    op_placement_init(&base, g->n_ops, gpus, &err);
    op_placement_init(&cand, g->n_ops, gpus, &err);
    for (int t = 0; t < g->n_ops; t++)
        base.device_of[g->topo[t]] = (int)((long)t * gpus / g->n_ops);
    double t0 = now();
    op_sim_record(inc, &base, ckpts, &r1, &err);
    double record = now() - t0;
    uint64_t seed = 12345;
    double base_step = r1.step_time_us, t_inc = 0, t_full = 0, t_cut = 0;
    int better = 0;
    for (int k = 0; k < moves; k++) {
        memcpy(cand.device_of, base.device_of, (size_t)g->n_ops * sizeof(int));
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int v = (int)((seed >> 33) % (uint64_t)g->n_ops);
        cand.device_of[v] = (base.device_of[v] + 1 + (int)((seed >> 13) % (uint64_t)(gpus - 1))) % gpus;
        double a = now();
        op_sim_run_changed(inc, &cand, &r1, &err);
        double b = now();
        op_sim_run(full, &cand, &r2, NULL, &err);
        double c2 = now();
        t_inc += b - a;
        t_full += c2 - b;
        if (r1.step_time_us != r2.step_time_us || r1.peak_mem[0] != r2.peak_mem[0]) {
            fprintf(stderr, "MISMATCH at move %d\n", k);
            return 1;
        }
        op_sim_set_cutoff(inc, base_step); /* "does it beat the base?" */
        double d0 = now();
        op_sim_run_changed(inc, &cand, &r1, &err);
        t_cut += now() - d0;
        op_sim_set_cutoff(inc, 0);
        better += !r1.cut_off;
        if (!r1.cut_off && r1.step_time_us != r2.step_time_us) {
            fprintf(stderr, "MISMATCH under cutoff at move %d\n", k);
            return 1;
        }
    }
    printf("| %d | %d | %d | %.1f | %.2f | %.2f | %.2fx | %.2f | %.2fx | %d |\n", g->n_ops, moves,
           ckpts, record * 1e3, t_full / moves * 1e3, t_inc / moves * 1e3, t_full / t_inc,
           t_cut / moves * 1e3, t_full / t_cut, better);
    op_placement_destroy(&base);
    op_placement_destroy(&cand);
    op_sim_result_destroy(&r1);
    op_sim_result_destroy(&r2);
    op_sim_free(inc);
    op_sim_free(full);
    op_problem_destroy(&p);
    op_cluster_free(c);
    op_graph_free(g);
    return 0;
}
