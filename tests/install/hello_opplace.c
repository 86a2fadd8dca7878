/*
 * hello_opplace.c - a library user's first program, built by
 * check_install.sh against the installed tree with `pkg-config --cflags
 * --libs opplace` only: read a graph and a cluster, place with m-ETF,
 * simulate, print the step time.
 * usage: hello_opplace GRAPH CLUSTER
 */
#include <opplace/opplace.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: hello_opplace GRAPH CLUSTER\n");
        return 2;
    }
    op_error err = {0};
    op_graph *g = op_graph_read(argv[1], &err);
    op_cluster *c = g ? op_cluster_read(argv[2], &err) : NULL;
    op_problem p;
    if (!c || op_problem_init(&p, g, c, &err)) {
        fprintf(stderr, "hello_opplace: %s\n", err.msg);
        return 1;
    }
    op_place_ctx ctx = {.p = &p, .seed = 1};
    op_placement pl;
    op_sim_result r;
    int rc = 1;
    if (op_place(op_placer_find("m-etf"), &ctx, &pl, &err) == OP_OK) {
        if (op_sim_result_init(&r, &p, &err) == OP_OK) {
            if (op_simulate(&p, &pl, &r, NULL, &err) == OP_OK) {
                printf("step_time_us %.17g\n", r.step_time_us);
                rc = 0;
            }
            op_sim_result_destroy(&r);
        }
        op_placement_destroy(&pl);
    }
    if (rc)
        fprintf(stderr, "hello_opplace: %s\n", err.msg);
    op_problem_destroy(&p);
    op_cluster_free(c);
    op_graph_free(g);
    return rc;
}
