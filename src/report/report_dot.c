/*
 * report_dot.c - the placed graph as Graphviz DOT (render with
 * `dot -Tsvg graph.dot`), in the spirit of Trinity's Figure 4: each node
 * filled with its device's color.  Large graphs are drawn coarse, with the
 * same grouping as the HTML report (report_graph.c): one node per (layer,
 * device) or (stretch of the topological order, device).  Edges between
 * devices are red and dashed, since they cost a transfer.
 */
#include <stdlib.h>

#include "core/file_util.h"
#include "opplace/report.h"
#include "report/report_util.h"

static void write_dot(FILE *f, const rp_graph_view *v, const op_problem *p)
{
    char col[8], a[32], b[32];
    fputs("digraph ", f);
    rp_put_text(f, p->g->name, RP_DOT);
    fputs(" {\n  rankdir=LR;\n  node [shape=ellipse, style=filled, fontname=\"Helvetica\", "
          "fontsize=10];\n  edge [color=\"#888888\"];\n", f);
    fprintf(f, "  // %d nodes (%s), %d of %d edges\n", v->n_nodes, v->grouping, v->n_edges,
            v->n_edges_total);
    /* a legend cluster with one node per device */
    fputs("  subgraph cluster_legend {\n    label=\"devices\";\n", f);
    for (int d = 0; d < p->nd; d++) {
        fprintf(f, "    dev%d [shape=box, fillcolor=\"%s\", label=", d, rp_device_color(col, d));
        rp_put_text(f, p->c->dev[d].name, RP_DOT);
        fputs("];\n", f);
    }
    fputs("  }\n", f);
    for (int j = 0; j < v->n_nodes; j++) {
        fprintf(f, "  n%d [fillcolor=\"%s\", label=", j, rp_device_color(col, v->dev[j]));
        rp_graph_node_label(f, v, p, j, RP_DOT);
        fputs(", tooltip=", f);
        char tip[160];
        snprintf(tip, sizeof tip, "%d op%s, %s", v->members[j], v->members[j] == 1 ? "" : "s",
                 rp_time(a, sizeof a, v->time_us[j]));
        rp_put_text(f, tip, RP_DOT);
        fputs("];\n", f);
    }
    for (int e = 0; e < v->n_edges; e++) {
        int s = v->esrc[e], d = v->edst[e];
        fprintf(f, "  n%d -> n%d [tooltip=\"%s\"%s];\n", s, d,
                rp_bytes(b, sizeof b, (double)v->ebytes[e]),
                v->dev[s] != v->dev[d] ? ", color=\"#c0392b\", style=dashed" : "");
    }
    fputs("}\n", f);
}

op_status op_report_dot(const op_problem *p, const op_placement *pl, const char *path,
                        op_error *err)
{
    op_status st = op_problem_check_placement(p, pl, err);
    if (st)
        return st;
    rp_graph_view v;
    if ((st = rp_graph_view_build(&v, p, pl->device_of, OP_REPORT_MAX_GRAPH_NODES, err)))
        return st;
    op_atomic a;
    if (!(st = op_atomic_open(&a, path, err))) {
        write_dot(a.f, &v, p);
        st = op_atomic_commit(&a, err);
    }
    rp_graph_view_destroy(&v);
    return st;
}
