/* graph.c - lookups on a frozen graph, copying it, and freeing it. */
#include <stdlib.h>
#include <string.h>

#include "core/name_index.h"
#include "opplace/graph.h"

static void free_names(char **names, int n)
{
    if (!names)
        return;
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

void op_graph_free(op_graph *g)
{
    if (!g)
        return;
    if (g->index) {
        op_name_index_destroy(g->index);
        free(g->index);
    }
    free_names(g->op_name, g->n_ops);
    free_names(g->op_type, g->n_ops);
    free_names(g->device, g->n_ops);
    free(g->output_bytes); free(g->param_bytes); free(g->temp_bytes);
    free(g->layer); free(g->colocate); free(g->kind);
    free(g->time_off); free(g->time_kind); free(g->time_val);
    free(g->edge_src); free(g->edge_dst); free(g->edge_bytes);
    free(g->succ_off); free(g->succ); free(g->succ_edge);
    free(g->pred_off); free(g->pred); free(g->pred_edge);
    free(g->topo); free(g->topo_pos);
    free_names(g->kind_name, g->n_kinds);
    free_names(g->layer_name, g->n_layers);
    free_names(g->group_name, g->n_groups);
    free(g->name);
    free(g);
}

int op_graph_find(const op_graph *g, const char *name)
{
    return op_name_index_get(g->index, name);
}

int op_graph_find_kind(const op_graph *g, const char *kind)
{
    for (int k = 0; k < g->n_kinds; k++)
        if (strcmp(g->kind_name[k], kind) == 0)
            return k;
    return -1;
}

double op_graph_time_on_kind(const op_graph *g, int op, const char *kind)
{
    int kid = op_graph_find_kind(g, kind);
    if (g->kind[op] != OP_NONE && g->kind[op] != kid)
        return -1.0;
    for (int e = g->time_off[op]; e < g->time_off[op + 1]; e++)
        if (g->time_kind[e] == OP_ANY_KIND || (kid >= 0 && g->time_kind[e] == kid))
            return g->time_val[e];
    return -1.0;
}

int op_graph_find_edge(const op_graph *g, int src, int dst)
{
    /* successor lists are sorted by destination */
    int lo = g->succ_off[src], hi = g->succ_off[src + 1];
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (g->succ[mid] < dst)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (lo < g->succ_off[src + 1] && g->succ[lo] == dst) ? g->succ_edge[lo] : -1;
}
