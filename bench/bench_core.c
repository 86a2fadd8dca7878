/*
 * bench_core.c - the core's speed: load + validate a large graph, and
 * simulate one step, on one core.  Not a test: run it with bench/core.sh.
 *
 *   bench_core GRAPH.json [GPUS] [RUNS]
 *
 * Prints load seconds, bind seconds, the median simulation time over RUNS
 * runs of a round-robin placement (transfers on every channel) and of a
 * single-device placement, and the peak RSS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "opplace/io.h"
#include "opplace/placer.h"
#include "opplace/simulate.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_sim_seconds(op_sim *s, const op_placement *pl, op_sim_result *r, int runs,
                                 double *step)
{
    double *t = malloc((size_t)runs * sizeof *t);
    op_error err = {0};
    for (int i = 0; i < runs; i++) {
        double t0 = now();
        if (op_sim_run(s, pl, r, NULL, &err)) {
            fprintf(stderr, "simulate: %s\n", err.msg);
            exit(1);
        }
        t[i] = now() - t0;
    }
    qsort(t, (size_t)runs, sizeof *t, cmp_double);
    double m = t[runs / 2];
    free(t);
    *step = r->step_time_us;
    return m;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_core GRAPH.json [GPUS] [RUNS]\n");
        return 2;
    }
    int gpus = argc > 2 ? atoi(argv[2]) : 4, runs = argc > 3 ? atoi(argv[3]) : 21;
    op_error err = {0};
    double t0 = now();
    op_graph *g = op_graph_read(argv[1], &err);
    double load = now() - t0;
    if (!g) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    op_cluster *c = op_cluster_preset("v100-nvlink", gpus, 0, &err);
    op_problem p;
    t0 = now();
    if (!c || op_problem_init(&p, g, c, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    double bind = now() - t0;
    op_sim *s = op_sim_new(&p, &err);
    op_sim_result r;
    op_sim_result_init(&r, &p, &err);
    op_placement rr, one;
    op_place_ctx ctx = {.p = &p, .best_effort = 1};
    op_place(op_placer_find("round-robin"), &ctx, &rr, &err);
    op_place(op_placer_find("single"), &ctx, &one, &err);
    double step_rr, step_one;
    double sim_rr = median_sim_seconds(s, &rr, &r, runs, &step_rr);
    int transfers = r.n_transfers;
    double sim_one = median_sim_seconds(s, &one, &r, runs, &step_one);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("| %d | %d | %.3f | %.3f | %.1f | %d | %.1f | %.0f |\n", g->n_ops, g->n_edges, load,
           bind, sim_rr * 1e3, transfers, sim_one * 1e3, (double)ru.ru_maxrss / 1024.0);
    op_placement_destroy(&rr);
    op_placement_destroy(&one);
    op_sim_result_destroy(&r);
    op_sim_free(s);
    op_problem_destroy(&p);
    op_cluster_free(c);
    op_graph_free(g);
    return 0;
}
