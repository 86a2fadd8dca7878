/* stats.c - summary numbers of a problem (see core/stats.h). */
#include "core/stats.h"

#include "core/problem_util.h"

static void reference_link(const op_cluster *c, double *lat, double *upb)
{
    op_link_model m = op_cluster_mean_link(c);
    *lat = m.latency_us;
    *upb = m.us_per_byte;
    if (c->n_dev < 2 && c->has_default_link) {
        *lat = c->default_link.latency_us;
        *upb = c->default_link.us_per_byte;
    }
}

void op_graph_stats_compute(const op_problem *p, op_graph_stats *s)
{
    const op_graph *g = p->g;
    *s = (op_graph_stats){0};
    s->n_ops = g->n_ops;
    s->n_edges = g->n_edges;
    s->n_layers = g->n_layers;
    s->n_groups = g->n_groups;
    s->n_kinds = g->n_kinds;
    s->total_work_us = p->total_work_us;
    s->critical_path_us = p->critical_path_us;
    s->lower_bound_us = p->lower_bound_us;
    for (int i = 0; i < g->n_ops; i++) {
        s->param_bytes += g->param_bytes[i];
        s->output_bytes += g->output_bytes[i];
        s->temp_bytes += g->temp_bytes[i];
    }
    reference_link(p->c, &s->ref_latency_us, &s->ref_us_per_byte);
    for (int e = 0; e < g->n_edges; e++) {
        s->edge_bytes += g->edge_bytes[e];
        s->total_comm_us += s->ref_latency_us + s->ref_us_per_byte * (double)g->edge_bytes[e];
    }
    s->ccr = s->total_work_us > 0 ? s->total_comm_us / s->total_work_us : 0;
}
