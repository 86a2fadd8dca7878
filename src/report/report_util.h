/*
 * report_util.h - what the report writers share: text escaping for the three
 * output languages (HTML/SVG, JavaScript data, DOT), the color palettes,
 * human-readable units, op types as a small table, and the coarse graph view
 * with its layered layout.
 *
 * Text from input files (op names, types, device names) may hold anything,
 * including bytes that are not UTF-8 and control characters XML forbids even
 * as references, so every string goes through rp_put_text, which replaces
 * such bytes with '?' and escapes for the target language.
 */
#ifndef OPPLACE_REPORT_UTIL_H
#define OPPLACE_REPORT_UTIL_H

#include <stdint.h>
#include <stdio.h>

#include "opplace/problem.h"
#include "opplace/simulate.h"

typedef enum rp_lang {
    RP_XML,  /* HTML text, SVG text and attribute values */
    RP_JS,   /* a JSON string literal safe inside <script> */
    RP_DOT   /* a Graphviz quoted string */
} rp_lang;

/* Write s escaped for lang; RP_JS and RP_DOT include the quotes. */
void rp_put_text(FILE *f, const char *s, rp_lang lang);
/* Compact number for data and coordinates (%.6g; 0 when not finite). */
void rp_put_num(FILE *f, double x);

/* Categorical color i as "#rrggbb" (12 distinct colors, then golden-angle
 * hues). */
const char *rp_color(char buf[8], int i);
/* Device d's color: the same in every output. */
const char *rp_device_color(char buf[8], int d);

/* The timeline's geometry, the same in the HTML page and the SVG timeline
 * (pixels): the label column, a track's height, the gap between tracks. */
enum { RP_LABEL_W = 170, RP_TRACK_H = 22, RP_TRACK_GAP = 4 };
/* A track's background: kind "device" or "channel". */
const char *rp_lane_color(const char *kind);

const char *rp_time(char *buf, size_t cap, double us);
const char *rp_bytes(char *buf, size_t cap, double bytes);

/* Op types interned: type_of[op] in 0..n-1, numbered by total compute time,
 * largest first (so the busiest types get the first colors). */
typedef struct rp_types {
    int n;
    const char **name; /* borrowed from the graph */
    int *type_of;
    double *time_us;   /* per type: sum of the ops' fastest times */
} rp_types;
op_status rp_types_build(rp_types *ty, const op_problem *p, op_error *err);
void rp_types_destroy(rp_types *ty);

/* The tracks of a timeline: one per device, then one per channel that
 * carried a transfer; items of each track sorted by start time. */
typedef struct rp_tracks {
    int n_dev, n_chan;    /* n_chan: channels used */
    int *chan;            /* used channel ids, ascending */
    int *dev_off, *dev_ops;     /* CSR over devices: op ids */
    int *chan_off, *chan_xfers; /* CSR over used channels: transfer indices */
    double end_us;        /* the latest finish of anything (> 0) */
} rp_tracks;
op_status rp_tracks_build(rp_tracks *tr, const op_problem *p, const op_sim_trace *t,
                          op_error *err);
void rp_tracks_destroy(rp_tracks *tr);

/* The graph as drawn: nodes are ops, or groups of ops on one device. */
typedef struct rp_graph_view {
    int n_nodes;
    int coarse;           /* 0: one node per op */
    const char *grouping; /* "op", "layer and device" or "topological stretch and device" */
    int *node_of;         /* per op */
    int *dev;             /* per node */
    int *members;         /* per node: number of ops */
    int *first_op;        /* per node: its first member in topological order */
    int *layer;           /* per node: the layer it stands for, or OP_NONE */
    double *time_us;      /* per node: sum of the members' times on their device */
    double *x, *y, *radius;
    double width, height;
    int n_edges;          /* aggregated, heaviest first, at most a few thousand */
    int n_edges_total;
    int *esrc, *edst;
    int64_t *ebytes;
} rp_graph_view;
op_status rp_graph_view_build(rp_graph_view *v, const op_problem *p, const int *device_of,
                              int max_nodes, op_error *err);
void rp_graph_view_destroy(rp_graph_view *v);
/* A node's label: the op name, the layer name, or "first-op +N". */
void rp_graph_node_label(FILE *f, const rp_graph_view *v, const op_problem *p, int node,
                         rp_lang lang);
/* The drawing as an <svg> element (layered left to right). */
void rp_graph_view_svg(FILE *f, const rp_graph_view *v, const op_problem *p);

/* A static timeline as one <svg> element (report_svg.c): title (NULL:
 * "graph: step T"), end_us the time the width spans (0: the trace's end);
 * ops with a non-finite start are left out. */
op_status rp_svg_timeline(FILE *f, const op_problem *p, const op_sim_trace *t, const char *title,
                          double end_us, op_error *err);

/* The "Measured vs simulated" section of the HTML page (report_measured.c). */
op_status rp_measured_section(FILE *f, const op_problem *p, const op_placement *pl,
                              const op_sim_result *r, const op_sim_trace *sim,
                              const op_sim_trace *meas, op_error *err);

/* The HTML page's style sheet and scripts (report_html_assets.c). */
extern const char rp_html_css[], rp_html_early_js[], rp_html_main_js[];

#endif
