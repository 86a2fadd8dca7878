/*
 * fuzz_placement.c - libFuzzer harness for the opplace-placement reader
 * (op_placement_read) against a fixed graph and cluster (tests/data's
 * good_graph.json and good_cluster.json).  A placement that reads and
 * passes op_problem_check_placement is simulated, as `opplace simulate`
 * does.
 */
#include "fuzz_common.h"
#include "opplace/io.h"
#include "opplace/problem.h"
#include "opplace/simulate.h"

#ifndef OPPLACE_TEST_DATA
#define OPPLACE_TEST_DATA "tests/data"
#endif

static op_graph *graph;
static op_cluster *cluster;
static op_problem problem;

static void load_fixtures(void)
{
    op_error err = {0};
    graph = op_graph_read(OPPLACE_TEST_DATA "/good_graph.json", &err);
    cluster = graph ? op_cluster_read(OPPLACE_TEST_DATA "/good_cluster.json", &err) : NULL;
    if (!cluster || op_problem_init(&problem, graph, cluster, &err)) {
        fprintf(stderr, "fuzz_placement: fixtures: %s\n", err.msg);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!graph)
        load_fixtures();
    const char *path = fuzz_input_path(".placement.json");
    if (fuzz_write_input(path, data, size))
        return 0;
    op_error err = {0};
    op_placement pl;
    if (op_placement_read(path, graph, cluster, &pl, &err))
        return 0;
    if (!op_problem_check_placement(&problem, &pl, &err)) {
        op_sim_result r;
        if (!op_sim_result_init(&r, &problem, &err)) {
            op_simulate(&problem, &pl, &r, NULL, &err);
            op_sim_result_destroy(&r);
        }
    }
    op_placement_destroy(&pl);
    return 0;
}
