/*
 * opplace/report.h - showing a simulated placement to a person.
 *
 * Every output is one file, written atomically (a temporary beside the
 * target, renamed only when complete), that needs nothing from the network:
 *
 *   op_report_html          the whole story in one self-contained page:
 *                           metrics tables; a Gantt timeline with one track
 *                           per device and per channel that carried a
 *                           transfer (Pesto, Figure 5), zoomable, with hover
 *                           details; memory over time per device against
 *                           its capacity; the graph colored by device
 *                           (Trinity, Figure 4), coarse when it is large.
 *   op_report_svg_timeline  the timeline alone as a static SVG.
 *   op_report_dot           the (coarse) graph as Graphviz DOT, nodes filled
 *                           with their device's color.
 *   op_report_bench_plot_svg  step time per model and algorithm (bars), one
 *                           panel per model so each keeps its own scale.
 *
 * Large graphs stay usable: ops narrower than a pixel merge into one block
 * per track (the page re-merges at every zoom level), memory timelines are
 * reduced to at most a few thousand points per device keeping every local
 * peak, and the graph drawing groups ops by (layer, device) or, without
 * usable layers, by (stretch of the topological order, device) once the
 * graph has more than OP_REPORT_MAX_GRAPH_NODES ops.
 *
 *     op_sim_trace t;  op_sim_result r;   // from op_simulate(&p, &pl, &r, &t, &err)
 *     op_report_html(&p, &pl, &r, &t, "m-etf", "report.html", &err);
 */
#ifndef OPPLACE_REPORT_H
#define OPPLACE_REPORT_H

#include "opplace/placement.h"
#include "opplace/problem.h"
#include "opplace/simulate.h"

/* Above this many ops the graph drawing (HTML and DOT) is coarse. */
#define OP_REPORT_MAX_GRAPH_NODES 300

/* algorithm: shown in the title; NULL uses pl->algorithm (or "?"). */
op_status op_report_html(const op_problem *p, const op_placement *pl, const op_sim_result *r,
                         const op_sim_trace *t, const char *algorithm, const char *path,
                         op_error *err);

/* The same page with a "Measured vs simulated" section when measured is
 * not NULL: a real run's timeline (op_measured_read) beside the simulated
 * one, on one time scale, with the step times, busy time per device and the
 * ops whose durations differ most. */
op_status op_report_html_measured(const op_problem *p, const op_placement *pl,
                                  const op_sim_result *r, const op_sim_trace *t,
                                  const op_sim_trace *measured, const char *algorithm,
                                  const char *path, op_error *err);

/* Read a measured step: the Chrome/Perfetto trace of a real run in the
 * layout `--report t.json` writes (opplace.torch's --trace): process 1's
 * "X" events are ops on device tid, process 2's transfers on channel tid
 * (args.to names the destination).  Ops are matched by name (the first
 * event of each counts); ops the trace lacks get a non-finite start and
 * their placed device; times are shifted to start at 0.  t is initialised
 * here (op_sim_trace_destroy it). */
op_status op_measured_read(const op_problem *p, const op_placement *pl, const char *path,
                           op_sim_trace *t, op_error *err);

op_status op_report_svg_timeline(const op_problem *p, const op_sim_trace *t, const char *path,
                                 op_error *err);

op_status op_report_dot(const op_problem *p, const op_placement *pl, const char *path,
                        op_error *err);

/* One bar of the comparison plot.  step_time_us < 0 or not finite: the
 * algorithm gave no result (drawn as a cross); oom: drawn hatched with
 * "OOM"; lower_bound_us <= 0: unknown (no dashed line). */
typedef struct op_report_bench_row {
    const char *model, *algorithm;
    double step_time_us, lower_bound_us;
    int oom;
} op_report_bench_row;

/* Models and algorithms appear in the order of their first row; title may
 * be NULL. */
op_status op_report_bench_plot_svg(const op_report_bench_row *rows, int n_rows,
                                   const char *title, const char *path, op_error *err);

#endif
