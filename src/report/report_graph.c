/*
 * report_graph.c - the graph as the reports draw it (Trinity, Figure 4: the
 * graph colored by device), coarse when it is large, with a layered layout.
 *
 * Coarse view: up to max_nodes ops each op is a node.  Above that, ops are
 * grouped by (layer, device) when that gives at most max_nodes groups (ops
 * without a layer fall into one of 32 stretches of the topological order;
 * when there are few groups, each is cut into stretches of its members),
 * otherwise by (stretch of the topological order, device) with enough
 * stretches to stay under max_nodes.  Every group lies on one device, so a
 * node's color is exact.  Unlike op_coarse_build (coarsen/coarsen.h) the
 * groups may form cycles: this view is for the eye, never for placing.
 *
 * Layout (a simple Sugiyama-style drawing, left to right): a node's column
 * is the mean longest-path level of its members, columns are packed,
 * and nodes in a column are ordered by the mean row of their predecessors
 * (one barycenter sweep).  Circle area grows with compute time.  Edges are
 * aggregated between nodes; the drawing keeps the MAX_EDGES heaviest.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/sort.h"
#include "report/report_util.h"

#define MAX_EDGES 3000
#define UNLAYERED_STRETCHES 32

typedef struct keyed {
    int64_t key;
    int pos; /* topological position of the op */
    int op;
} keyed;

static int by_key_pos(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

static int by_pos(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* Group ops by key[op] * nd + device; node ids follow the topological order
 * of each group's first op.  Returns the number of groups, or -1 (ENOMEM). */
static int group_by_key(const op_problem *p, const int *device_of, const int64_t *key,
                        int *node_of, op_error *err)
{
    int n = p->n;
    keyed *k = op_malloc(((size_t)n + 1) * sizeof *k, err);
    keyed *firsts = op_malloc(((size_t)n + 1) * sizeof *firsts, err);
    int *prov = op_malloc(((size_t)n + 1) * sizeof *prov, err);
    if (!k || !firsts || !prov) {
        free(k); free(firsts); free(prov);
        return -1;
    }
    for (int i = 0; i < n; i++)
        k[i] = (keyed){key[i] * p->nd + device_of[i], p->g->topo_pos[i], i};
    qsort(k, (size_t)n, sizeof *k, by_key_pos);
    int ng = 0;
    for (int j = 0; j < n; j++) {
        if (j == 0 || k[j].key != k[j - 1].key) {
            firsts[ng] = (keyed){ng, k[j].pos, k[j].op};
            ng++;
        }
        prov[k[j].op] = ng - 1;
    }
    qsort(firsts, (size_t)ng, sizeof *firsts, by_pos);
    int *final_id = (int *)k; /* reuse: ng <= n ints fit in n keyed */
    for (int j = 0; j < ng; j++)
        final_id[firsts[j].key] = j;
    for (int i = 0; i < n; i++)
        node_of[i] = final_id[prov[i]];
    free(k); free(firsts); free(prov);
    return ng;
}

/* Few large groups draw poorly: cut each group into `parts` stretches of
 * its members in topological order (still one layer and one device each). */
static int split_groups(const op_problem *p, const int *device_of, int64_t *key, int *node_of,
                        int ng, int parts, op_error *err)
{
    int n = p->n;
    int *size = op_calloc((size_t)ng + 1, sizeof *size, err);
    int *seen = op_calloc((size_t)ng + 1, sizeof *seen, err);
    if (!size || !seen) {
        free(size);
        free(seen);
        return -1;
    }
    for (int i = 0; i < n; i++)
        size[node_of[i]]++;
    for (int k = 0; k < n; k++) {
        int i = p->g->topo[k], j = node_of[i];
        key[i] = (int64_t)j * parts + (int64_t)seen[j]++ * parts / size[j];
    }
    free(size);
    free(seen);
    return group_by_key(p, device_of, key, node_of, err);
}

/* Decide the grouping and fill v->node_of; returns the number of nodes. */
static int choose_grouping(rp_graph_view *v, const op_problem *p, const int *device_of,
                           int max_nodes, op_error *err)
{
    const op_graph *g = p->g;
    int n = p->n;
    if (n <= max_nodes) {
        for (int i = 0; i < n; i++)
            v->node_of[i] = i;
        v->coarse = 0;
        v->grouping = "op";
        return n;
    }
    v->coarse = 1;
    int64_t *key = op_malloc(((size_t)n + 1) * sizeof *key, err);
    if (!key)
        return -1;
    int ng = -2;
    if (g->n_layers > 0) {
        for (int i = 0; i < n; i++)
            key[i] = g->layer[i] != OP_NONE
                         ? g->layer[i]
                         : g->n_layers + (int64_t)g->topo_pos[i] * UNLAYERED_STRETCHES / n;
        ng = group_by_key(p, device_of, key, v->node_of, err);
        v->grouping = "layer and device";
        if (ng > 0 && ng * 2 <= max_nodes)
            ng = split_groups(p, device_of, key, v->node_of, ng, max_nodes / ng, err);
    }
    if (ng != -1 && (ng < 0 || ng > max_nodes)) {
        int stretches = max_nodes / (p->nd > 0 ? p->nd : 1);
        if (stretches < 1)
            stretches = 1;
        for (int i = 0; i < n; i++)
            key[i] = (int64_t)g->topo_pos[i] * stretches / n;
        ng = group_by_key(p, device_of, key, v->node_of, err);
        v->grouping = "topological stretch and device";
    }
    free(key);
    return ng;
}

typedef struct agg_edge {
    int s, d;
    int64_t bytes;
} agg_edge;

static int by_pair(const void *a, const void *b)
{
    const agg_edge *x = a, *y = b;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    return (x->d > y->d) - (x->d < y->d);
}

static int by_bytes_desc(const void *a, const void *b)
{
    const agg_edge *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return by_pair(a, b);
}

static op_status aggregate_edges(rp_graph_view *v, const op_graph *g, op_error *err)
{
    agg_edge *e = op_malloc(((size_t)g->n_edges + 1) * sizeof *e, err);
    if (!e)
        return OP_ENOMEM;
    int m = 0;
    for (int k = 0; k < g->n_edges; k++) {
        int s = v->node_of[g->edge_src[k]], d = v->node_of[g->edge_dst[k]];
        if (s != d)
            e[m++] = (agg_edge){s, d, g->edge_bytes[k]};
    }
    qsort(e, (size_t)m, sizeof *e, by_pair);
    int u = 0;
    for (int k = 0; k < m; k++) {
        if (u > 0 && e[u - 1].s == e[k].s && e[u - 1].d == e[k].d)
            e[u - 1].bytes += e[k].bytes;
        else
            e[u++] = e[k];
    }
    v->n_edges_total = u;
    if (u > MAX_EDGES) {
        qsort(e, (size_t)u, sizeof *e, by_bytes_desc);
        u = MAX_EDGES;
    }
    v->n_edges = u;
    v->esrc = op_malloc(((size_t)u + 1) * sizeof *v->esrc, err);
    v->edst = op_malloc(((size_t)u + 1) * sizeof *v->edst, err);
    v->ebytes = op_malloc(((size_t)u + 1) * sizeof *v->ebytes, err);
    if (v->esrc && v->edst && v->ebytes)
        for (int k = 0; k < u; k++) {
            v->esrc[k] = e[k].s;
            v->edst[k] = e[k].d;
            v->ebytes[k] = e[k].bytes;
        }
    free(e);
    return v->esrc && v->edst && v->ebytes ? OP_OK : OP_ENOMEM;
}

static int by_sort_key(const void *a, const void *b, const void *ctx)
{
    const double *key = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (key[x] != key[y])
        return key[x] < key[y] ? -1 : 1;
    return (x > y) - (x < y);
}

/* Columns from longest-path levels, rows from one barycenter sweep. */
static op_status layout(rp_graph_view *v, const op_problem *p, op_error *err)
{
    const op_graph *g = p->g;
    int n = p->n, nn = v->n_nodes;
    int *level = op_calloc((size_t)n + 1, sizeof *level, err);
    int *col = op_malloc(((size_t)nn + 1) * sizeof *col, err);
    int *order = op_malloc(((size_t)nn + 1) * sizeof *order, err);
    double *key = op_malloc(((size_t)nn + 1) * sizeof *key, err);
    double *row = op_calloc((size_t)nn + 1, sizeof *row, err);
    int *nsum = op_calloc((size_t)nn + 1, sizeof *nsum, err);
    op_status st = OP_ENOMEM;
    if (!level || !col || !order || !key || !row || !nsum)
        goto done;
    for (int k = 0; k < n; k++) {
        int i = g->topo[k];
        for (int e = g->pred_off[i]; e < g->pred_off[i + 1]; e++)
            if (level[g->pred[e]] + 1 > level[i])
                level[i] = level[g->pred[e]] + 1;
    }
    for (int j = 0; j < nn; j++)
        row[j] = 0;
    for (int i = 0; i < n; i++)
        row[v->node_of[i]] += level[i];
    for (int j = 0; j < nn; j++)
        col[j] = (int)lround(row[j] / (v->members[j] > 0 ? v->members[j] : 1));
    /* pack the columns: sort nodes by level, renumber distinct levels */
    for (int j = 0; j < nn; j++) {
        order[j] = j;
        key[j] = col[j];
    }
    op_sort(order, (size_t)nn, sizeof *order, by_sort_key, key);
    int ncol = 0, prev = -1;
    for (int k = 0; k < nn; k++) {
        int j = order[k];
        if (k == 0 || col[j] != prev)
            ncol++;
        prev = col[j];
        col[j] = ncol - 1;
    }
    /* rows: barycenter of predecessors placed in earlier columns */
    double *bsum = row; /* reuse: filled as we go */
    for (int j = 0; j < nn; j++)
        bsum[j] = 0;
    int max_rows = 1;
    int start = 0;
    double *ypos = op_malloc(((size_t)nn + 1) * sizeof *ypos, err);
    if (!ypos)
        goto done;
    while (start < nn) {
        int c = col[order[start]], end = start;
        while (end < nn && col[order[end]] == c)
            end++;
        for (int k = start; k < end; k++) {
            int j = order[k];
            key[j] = nsum[j] ? bsum[j] / nsum[j] : 1e9 + j;
        }
        op_sort(order + start, (size_t)(end - start), sizeof *order, by_sort_key, key);
        for (int k = start; k < end; k++)
            ypos[order[k]] = k - start - (end - start - 1) / 2.0;
        if (end - start > max_rows)
            max_rows = end - start;
        /* push this column's rows to its successors */
        for (int e = 0; e < v->n_edges; e++) {
            int s = v->esrc[e], d = v->edst[e];
            if (col[s] == c && col[d] > c) {
                bsum[d] += ypos[s];
                nsum[d]++;
            }
        }
        start = end;
    }
    double maxt = 0;
    for (int j = 0; j < nn; j++)
        if (v->time_us[j] > maxt)
            maxt = v->time_us[j];
    double rmin = v->coarse ? 5 : 3, rmax = v->coarse ? 18 : 9;
    double dx = 2 * rmax + (v->coarse ? 46 : 16), dy = 2 * rmax + (v->coarse ? 14 : 6);
    double top = 40; /* room for the legend */
    for (int j = 0; j < nn; j++) {
        v->radius[j] = rmin + (rmax - rmin) * (maxt > 0 ? sqrt(v->time_us[j] / maxt) : 0);
        v->x[j] = 20 + rmax + col[j] * dx;
        v->y[j] = top + rmax + (ypos[j] + (max_rows - 1) / 2.0) * dy;
    }
    v->width = 40 + 2 * rmax + (ncol > 0 ? ncol - 1 : 0) * dx;
    if (v->width < 400)
        v->width = 400;
    v->height = top + 2 * rmax + (max_rows - 1) * dy + (v->coarse ? 24 : 10);
    free(ypos);
    st = OP_OK;
done:
    free(level); free(col); free(order); free(key); free(row); free(nsum);
    return st;
}

op_status rp_graph_view_build(rp_graph_view *v, const op_problem *p, const int *device_of,
                              int max_nodes, op_error *err)
{
    memset(v, 0, sizeof *v);
    int n = p->n;
    v->node_of = op_malloc(((size_t)n + 1) * sizeof *v->node_of, err);
    if (!v->node_of)
        return OP_ENOMEM;
    int nn = choose_grouping(v, p, device_of, max_nodes < 1 ? 1 : max_nodes, err);
    if (nn < 0) {
        rp_graph_view_destroy(v);
        return OP_ENOMEM;
    }
    v->n_nodes = nn;
    size_t cap = (size_t)nn + 1;
    v->dev = op_malloc(cap * sizeof *v->dev, err);
    v->members = op_calloc(cap, sizeof *v->members, err);
    v->first_op = op_malloc(cap * sizeof *v->first_op, err);
    v->layer = op_malloc(cap * sizeof *v->layer, err);
    v->time_us = op_calloc(cap, sizeof *v->time_us, err);
    v->x = op_malloc(cap * sizeof *v->x, err);
    v->y = op_malloc(cap * sizeof *v->y, err);
    v->radius = op_malloc(cap * sizeof *v->radius, err);
    if (!v->dev || !v->members || !v->first_op || !v->layer || !v->time_us || !v->x || !v->y ||
        !v->radius) {
        rp_graph_view_destroy(v);
        return OP_ENOMEM;
    }
    const op_graph *g = p->g;
    for (int k = 0; k < n; k++) { /* topological order: first member first */
        int i = g->topo[k], j = v->node_of[i];
        if (v->members[j]++ == 0) {
            v->first_op[j] = i;
            v->dev[j] = device_of[i];
            v->layer[j] = g->layer[i];
        } else if (v->layer[j] != g->layer[i]) {
            v->layer[j] = OP_NONE;
        }
        double t = op_exec_us(p, i, device_of[i]);
        v->time_us[j] += isfinite(t) ? t : 0;
    }
    op_status st = aggregate_edges(v, g, err);
    if (!st)
        st = layout(v, p, err);
    if (st)
        rp_graph_view_destroy(v);
    return st;
}

void rp_graph_view_destroy(rp_graph_view *v)
{
    free(v->node_of); free(v->dev); free(v->members); free(v->first_op); free(v->layer);
    free(v->time_us); free(v->x); free(v->y); free(v->radius);
    free(v->esrc); free(v->edst); free(v->ebytes);
    memset(v, 0, sizeof *v);
}

void rp_graph_node_label(FILE *f, const rp_graph_view *v, const op_problem *p, int node,
                         rp_lang lang)
{
    const op_graph *g = p->g;
    if (!v->coarse) {
        rp_put_text(f, g->op_name[v->first_op[node]], lang);
        return;
    }
    char buf[400];
    if (v->layer[node] != OP_NONE)
        snprintf(buf, sizeof buf, "%s (%d ops)", g->layer_name[v->layer[node]], v->members[node]);
    else
        snprintf(buf, sizeof buf, "%s +%d", g->op_name[v->first_op[node]], v->members[node] - 1);
    rp_put_text(f, buf, lang);
}

/* At most max bytes of s, cut at a UTF-8 character boundary, with "..". */
static void put_short(FILE *f, const char *s, size_t max)
{
    char buf[64];
    size_t n = strlen(s);
    if (max > sizeof buf - 3)
        max = sizeof buf - 3;
    if (n <= max) {
        rp_put_text(f, s, RP_XML);
        return;
    }
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--;
    memcpy(buf, s, max);
    memcpy(buf + max, "..", 3);
    rp_put_text(f, buf, RP_XML);
}

static void put_edges_svg(FILE *f, const rp_graph_view *v)
{
    fputs("<g class=\"edges\" fill=\"none\">\n", f);
    for (int e = 0; e < v->n_edges; e++) {
        int s = v->esrc[e], d = v->edst[e];
        double x1 = v->x[s], y1 = v->y[s], x2 = v->x[d], y2 = v->y[d];
        double mid = (x2 - x1) / 2;
        double w = 0.6 + 0.35 * log2(1 + (double)v->ebytes[e] / 1048576.0);
        int cross = v->dev[s] != v->dev[d];
        fprintf(f, "<path d=\"M%.1f %.1fC%.1f %.1f %.1f %.1f %.1f %.1f\" stroke=\"%s\" "
                   "stroke-width=\"%.2f\" stroke-opacity=\"%s\"%s/>\n",
                x1, y1, x1 + mid, y1, x2 - mid, y2, x2, y2, cross ? "#c0392b" : "#888",
                w > 4 ? 4 : w, cross ? "0.7" : "0.35",
                cross ? " stroke-dasharray=\"4 2\"" : "");
    }
    fputs("</g>\n", f);
}

static void put_nodes_svg(FILE *f, const rp_graph_view *v, const op_problem *p)
{
    char col[8], a[32];
    fputs("<g class=\"nodes\">\n", f);
    for (int j = 0; j < v->n_nodes; j++) {
        fprintf(f, "<g class=\"node\" data-dev=\"%d\"><circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" "
                   "fill=\"%s\" stroke=\"#333\" stroke-width=\"0.6\"><title>",
                v->dev[j], v->x[j], v->y[j], v->radius[j], rp_device_color(col, v->dev[j]));
        rp_graph_node_label(f, v, p, j, RP_XML);
        fputs("&#10;device ", f);
        rp_put_text(f, p->c->dev[v->dev[j]].name, RP_XML);
        fprintf(f, "&#10;%d op%s, %s</title></circle>", v->members[j], v->members[j] == 1 ? "" : "s",
                rp_time(a, sizeof a, v->time_us[j]));
        if (v->coarse && v->radius[j] >= 7) {
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"9\">",
                    v->x[j], v->y[j] + v->radius[j] + 10);
            const char *name = v->layer[j] != OP_NONE ? p->g->layer_name[v->layer[j]]
                                                      : p->g->op_name[v->first_op[j]];
            const char *slash = strrchr(name, '/'); /* the innermost scope reads best */
            put_short(f, slash && slash[1] ? slash + 1 : name, 14);
            fputs("</text>", f);
        }
        fputs("</g>\n", f);
    }
    fputs("</g>\n", f);
}

void rp_graph_view_svg(FILE *f, const rp_graph_view *v, const op_problem *p)
{
    char col[8];
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"graph\" width=\"%.0f\" "
               "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n",
            v->width, v->height, v->width, v->height);
    fputs("<g class=\"legend\" font-size=\"11\">", f);
    double x = 10;
    for (int d = 0; d < p->nd; d++) {
        fprintf(f, "<rect x=\"%.0f\" y=\"8\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                   "<text x=\"%.0f\" y=\"18\">", x, rp_device_color(col, d), x + 16);
        rp_put_text(f, p->c->dev[d].name, RP_XML);
        fputs("</text>", f);
        x += 24 + 7 * (double)strlen(p->c->dev[d].name);
    }
    fputs("</g>\n", f);
    put_edges_svg(f, v);
    put_nodes_svg(f, v, p);
    fputs("</svg>\n", f);
}
