/*
 * testkit.h - small builders shared by the tests: hand-made graphs and
 * clusters, random DAGs, and running the opplace binary.
 */
#ifndef OPPLACE_TESTKIT_H
#define OPPLACE_TESTKIT_H

#include <stdint.h>

#include "opplace/cluster.h"
#include "opplace/graph.h"
#include "opplace/placement.h"
#include "opplace/problem.h"
#include "opplace/simulate.h"

/* Add an op with a uniform time; aborts the test process on failure. */
int tk_op(op_graph_builder *b, const char *name, double time_us, int64_t output_bytes);
int tk_op_full(op_graph_builder *b, const op_op_spec *spec);
void tk_edge(op_graph_builder *b, int src, int dst, int64_t bytes);
op_graph *tk_finish(op_graph_builder *b);

/* nd devices "d0".."d{nd-1}" of kind gpu, speed 1, memory mem; every ordered
 * pair its own channel with latency lat and us_per_byte upb. */
op_cluster *tk_cluster(int nd, double lat, double upb, int64_t mem);

/* Random DAG: n ops, each edge i->j (i<j) with probability p; seeded. */
op_graph *tk_random_dag(int n, double p, uint64_t seed);
/* The same graph with, when groups > 0, op i in colocation group
 * "g<i % groups>" for every i % 3 == 0. */
op_graph *tk_random_dag_grouped(int n, double p, uint64_t seed, int groups);

/* A bound problem plus its parts, freed together. */
typedef struct tk_problem {
    op_graph *g;
    op_cluster *c;
    op_problem p;
} tk_problem;
void tk_bind(tk_problem *tp, op_graph *g, op_cluster *c);
void tk_unbind(tk_problem *tp);

/* Simulate device_of (and optional per-device order) and return step time. */
double tk_simulate(const op_problem *p, const int *device_of, op_sim_result *r);
/* The same without a result to keep: just the step time. */
double tk_step(const op_problem *p, const int *device_of);

/* A simulation's result and trace. */
typedef struct tk_sim_out {
    op_sim_result r;
    op_sim_trace t;
} tk_sim_out;
/* Simulate device_of (and, when order_off is not NULL, the per-device
 * order order_off/order) with a trace into o; aborts the test process on
 * failure.  tk_sim_out_destroy frees o; tk_sim_done frees o and unbinds tp. */
void tk_sim(tk_problem *tp, const int *device_of, const int *order_off, const int *order,
            tk_sim_out *o);
void tk_sim_out_destroy(tk_sim_out *o);
void tk_sim_done(tk_sim_out *o, tk_problem *tp);

/* Run a shell command, return its exit status; output captured in *out
 * (malloc'ed, may be NULL). */
int tk_run(const char *cmd, char **out);

/* A fresh temporary directory for a test (removed by the OS tmp cleaner). */
const char *tk_tmpdir(void);

uint64_t tk_rand(uint64_t *state);

/* The smallest problem where the execution order matters: A (10 us) and B
 * (10 us) independent, C (100 us) after B by a 0-byte edge (ids[] receives
 * A, B, C), bound to 2 devices with 5 us latency; pl (initialised here)
 * has A and B on d0 and C on d1.  First-ready-first runs A first and takes
 * 125 us, B first 115 us. */
void tk_order_matters_setup(tk_problem *tp, op_placement *pl, int ids[3]);

/* The optimum by exhaustive search: every placement that keeps colocation
 * groups together on eligible devices, with every topological order, judged
 * by the simulator; placements out of memory do not count (1e300 when none
 * fits).  Tiny graphs only (devices^ops x orders). */
double tk_brute_optimum(const op_problem *p);

/* A zoo model's graph with options kv (key, value, ..., NULL); aborts on
 * an unknown model or bad options. */
op_graph *tk_zoo_graph(const char *model, const char *const *kv);

/* The number under key in the first JSON object of text (e.g. the
 * output of `opplace place --json`); aborts when there is none. */
double tk_json_number(const char *text, const char *key);

#endif
