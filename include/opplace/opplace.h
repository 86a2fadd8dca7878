/*
 * opplace/opplace.h - the opplace library: place a training graph on
 * devices, order each device's ops, and simulate one training step.
 *
 * Overview
 *
 *   A GRAPH (opplace/graph.h) is one training step: ops with compute times
 *   per device kind, output/parameter/scratch bytes, edges with the bytes
 *   they carry, colocation groups and pins.  A CLUSTER (opplace/cluster.h)
 *   is devices with memory and speed, and the links between them.  Both
 *   are read from the files of docs/formats.md (opplace/io.h) or built in
 *   code; op_cluster_preset makes the clusters of the papers' testbeds.
 *
 *   A PROBLEM (opplace/problem.h) binds the two and checks them against
 *   each other (validate); it carries the lower bound on the step time
 *   (bound): max(critical path, total work / total speed).
 *
 *   A PLACER (opplace/placer.h) fills a PLACEMENT (opplace/placement.h):
 *   each op's device and, optionally, each device's execution order.
 *   op_placers() lists every algorithm (auto, the papers' and the
 *   baselines); each declares its options (opplace/options.h).
 *
 *   The SIMULATOR (opplace/simulate.h) is the judge: one training step
 *   under the placement, with step time, peak memory per device and
 *   traffic.  Every step time opplace reports comes from it.
 *
 *   The SEARCH layer (opplace/search.h) judges placements and keeps the
 *   best: the ranking, priority execution orders, refinement.
 *
 *   Results are written as placement files, Chrome traces and reports
 *   (opplace/io.h, opplace/report.h).
 *
 * Conventions: functions return op_status and fill an op_error (the
 * message names the file and key) (opplace/error.h); objects are freed by
 * their _free / _destroy function; times are microseconds, sizes bytes.
 *
 * Example: place a graph file on 4 GPUs with auto and simulate the result
 * (tests/test_api.c runs these lines).
 *
 *     op_error err = {0};
 *     op_graph *g = op_graph_read("model.json", &err);
 *     op_cluster *c = g ? op_cluster_preset("v100-nvlink", 4, 0, &err) : NULL;
 *     op_problem p;
 *     if (!c || op_problem_init(&p, g, c, &err))
 *         fail(err.msg);                       // names the file and the key
 *     op_place_ctx ctx = {.p = &p, .seed = 1, .budget_seconds = 10};
 *     op_placement pl;
 *     if (op_place(op_placer_find("auto"), &ctx, &pl, &err))
 *         fail(err.msg);                       // e.g. nothing fits in memory
 *     op_sim_result r;
 *     op_sim_result_init(&r, &p, &err);
 *     op_simulate(&p, &pl, &r, NULL, &err);
 *     printf("%.1f us (lower bound %.1f us)\n", r.step_time_us, p.lower_bound_us);
 *     op_metrics m = {.step_time_us = r.step_time_us, .oom = r.oom,
 *                     .comm_bytes = r.comm_bytes, .peak_mem = r.peak_mem};
 *     op_placement_write(&pl, g, c, &m, "placement.json", &err);
 *     op_sim_result_destroy(&r);
 *     op_placement_destroy(&pl);
 *     op_problem_destroy(&p);
 *     op_cluster_free(c);
 *     op_graph_free(g);
 */
#ifndef OPPLACE_OPPLACE_H
#define OPPLACE_OPPLACE_H

#include "opplace/cluster.h"
#include "opplace/error.h"
#include "opplace/graph.h"
#include "opplace/io.h"
#include "opplace/options.h"
#include "opplace/placement.h"
#include "opplace/placer.h"
#include "opplace/problem.h"
#include "opplace/report.h"
#include "opplace/run_ctx.h"
#include "opplace/search.h"
#include "opplace/simulate.h"

#endif
