/*
 * fuzz_graph.c - libFuzzer harness for the opplace-graph reader
 * (op_graph_read).  An input that reads is also bound to a 3-device cluster
 * and simulated under a round-robin placement, so the validation the reader
 * promises (acyclic, names resolved, finite costs) is checked by the code
 * that relies on it.
 */
#include "fuzz_common.h"
#include "opplace/io.h"
#include "opplace/problem.h"
#include "opplace/simulate.h"

static op_cluster *cluster;

static void simulate_round_robin(const op_graph *g)
{
    op_problem p;
    op_error err = {0};
    if (op_problem_init(&p, g, cluster, &err))
        return;
    op_placement pl;
    if (!op_placement_init(&pl, g->n_ops, cluster->n_dev, &err)) {
        for (int i = 0; i < g->n_ops; i++) { /* first eligible device from i % nd */
            pl.device_of[i] = 0;
            for (int k = 0; k < cluster->n_dev; k++)
                if (op_eligible(&p, i, (i + k) % cluster->n_dev)) {
                    pl.device_of[i] = (i + k) % cluster->n_dev;
                    break;
                }
        }
        op_sim_result r;
        op_sim_trace t;
        if (!op_problem_check_placement(&p, &pl, &err) && !op_sim_result_init(&r, &p, &err)) {
            if (!op_sim_trace_init(&t, &p, &err)) {
                op_simulate(&p, &pl, &r, &t, &err);
                op_sim_trace_destroy(&t);
            }
            op_sim_result_destroy(&r);
        }
        op_placement_destroy(&pl);
    }
    op_problem_destroy(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!cluster) {
        op_error err = {0};
        cluster = op_cluster_preset("v100-pcie", 2, 1, &err);
        if (!cluster)
            abort();
    }
    const char *path = fuzz_input_path(".graph.json");
    if (fuzz_write_input(path, data, size))
        return 0;
    op_error err = {0};
    op_graph *g = op_graph_read(path, &err);
    if (g) {
        if (g->n_ops <= 5000)
            simulate_round_robin(g);
        op_graph_free(g);
    }
    return 0;
}
