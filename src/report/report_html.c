/*
 * report_html.c - one self-contained HTML page that explains a simulated
 * placement: the metrics tables, a zoomable Gantt timeline of every device
 * and every channel that carried a transfer (Pesto, Figure 5), memory over
 * time per device against its capacity, and the graph colored by device
 * (Trinity, Figure 4; coarse when large, see report_graph.c).
 *
 * The page is static HTML plus one data object (OPPLACE_REPORT) and the
 * scripts of report_html_assets.c, which draw the timeline and memory
 * charts from the data at the current zoom.  The tables, the track
 * skeleton (one <g class="track"> per device and used channel), the memory
 * panels (<g class="mem">) and the graph drawing are in the HTML itself, so
 * they exist even without scripts.
 *
 * Size: per op about 60 bytes of data (name, start, duration, device, type,
 * layer, output bytes); memory timelines are cut to MEM_POINTS points per
 * device keeping every local peak; the graph has at most
 * OP_REPORT_MAX_GRAPH_NODES nodes.  A 36k-op graph gives a few megabytes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/file_util.h"
#include "core/problem_util.h"
#include "opplace/bound.h"
#include "opplace/report.h"
#include "report/report_util.h"

#define AXIS_H 20
#define MEM_H 60
#define MEM_GAP 30
#define MEM_POINTS 4000
#define MEM_BUCKETS 1500

typedef struct html_ctx {
    FILE *f;
    const op_problem *p;
    const op_placement *pl;
    const op_sim_result *r;
    const op_sim_trace *t;
    const char *algorithm;
    rp_tracks tr;
    rp_types ty;
    rp_graph_view gv;
    const op_sim_trace *measured; /* or NULL */
    op_error *err;
    op_status st;                 /* of the measured section */
} html_ctx;

static void put_time_num(FILE *f, double x)
{
    if (!isfinite(x))
        x = 0;
    fprintf(f, "%.9g", x);
}

/* ---- tables ------------------------------------------------------------- */

static void row_text(FILE *f, const char *key, const char *value)
{
    fprintf(f, "<tr><td>%s</td><td>", key);
    rp_put_text(f, value, RP_XML);
    fputs("</td></tr>\n", f);
}

static void put_summary(const html_ctx *c)
{
    FILE *f = c->f;
    const op_problem *p = c->p;
    const op_sim_result *r = c->r;
    char a[64], b[64], buf[600];
    fputs("<h2 id=\"metrics\">Metrics</h2>\n<table class=\"metrics\">\n", f);
    snprintf(buf, sizeof buf, "%s (%d ops, %d edges)", p->g->name, p->g->n_ops, p->g->n_edges);
    row_text(f, "graph", buf);
    row_text(f, "algorithm", c->algorithm);
    row_text(f, "step time", rp_time(a, sizeof a, r->step_time_us));
    row_text(f, "lower bound", rp_time(a, sizeof a, p->lower_bound_us));
    snprintf(buf, sizeof buf, "%.3f", p->lower_bound_us > 0 ? r->step_time_us / p->lower_bound_us : 1.0);
    row_text(f, "ratio to lower bound", buf);
    snprintf(buf, sizeof buf, "%s (critical path), %s (work / total speed)",
             rp_time(a, sizeof a, p->critical_path_us),
             rp_time(b, sizeof b, p->total_speed > 0 ? p->total_work_us / p->total_speed : 0));
    row_text(f, "bound parts", buf);
    op_bound pb;
    op_error berr = {0};
    if (!op_lower_bound_quick(p, &pb, &berr)) {
        /* the better of the quick methods and what the caller proved
         * before placing (p->proven_bound_us: place, opplace/bound.h) */
        double lb = pb.lower_bound_us > p->proven_bound_us ? pb.lower_bound_us : p->proven_bound_us;
        const char *how = pb.lower_bound_us > p->proven_bound_us ? pb.method : p->proven_method;
        if (!r->oom && r->step_time_us <= lb * (1 + OP_AT_BOUND_TOL))
            snprintf(buf, sizeof buf, "%s (%s): optimal (proven)", rp_time(a, sizeof a, lb), how);
        else
            snprintf(buf, sizeof buf, "%s (%s); certified gap %.2f%%", rp_time(a, sizeof a, lb),
                     how, 100 * op_bound_gap(r->step_time_us, lb));
        row_text(f, "proven lower bound", buf);
    }
    snprintf(buf, sizeof buf, "%s in %d transfers", rp_bytes(a, sizeof a, (double)r->comm_bytes),
             r->n_transfers);
    row_text(f, "traffic", buf);
    fprintf(f, "<tr><td>out of memory</td><td class=\"%s\">%s</td></tr>\n",
            r->oom ? "bad" : "ok", r->oom ? "yes" : "no");
    fputs("</table>\n", f);
}

static void put_devices(const html_ctx *c)
{
    FILE *f = c->f;
    const op_problem *p = c->p;
    const op_sim_result *r = c->r;
    char a[64], b[64], m[64], col[8];
    fputs("<table class=\"devices\">\n<tr><th>device</th><th>kind</th><th>ops</th><th>busy</th>"
          "<th>utilization</th><th>peak memory</th><th>capacity</th><th>use</th></tr>\n", f);
    for (int d = 0; d < p->nd; d++) {
        const op_device *dev = &p->c->dev[d];
        double use = dev->memory_bytes ? (double)r->peak_mem[d] / (double)dev->memory_bytes : 0;
        int oom = r->peak_mem[d] > dev->memory_bytes;
        fprintf(f, "<tr class=\"device\"><td><span class=\"swatch\" style=\"background:%s\"></span>",
                rp_device_color(col, d));
        rp_put_text(f, dev->name, RP_XML);
        fputs("</td><td>", f);
        rp_put_text(f, dev->kind, RP_XML);
        fprintf(f, "</td><td>%d</td><td>%s</td><td>%.1f%%</td><td>%s</td><td>%s</td>"
                   "<td%s>%.1f%%%s</td></tr>\n",
                c->tr.dev_off[d + 1] - c->tr.dev_off[d], rp_time(a, sizeof a, r->busy_us[d]),
                r->step_time_us > 0 ? 100 * r->busy_us[d] / r->step_time_us : 0,
                rp_bytes(m, sizeof m, (double)r->peak_mem[d]),
                rp_bytes(b, sizeof b, (double)dev->memory_bytes), oom ? " class=\"bad\"" : "",
                100 * use, oom ? " OUT OF MEMORY" : "");
    }
    fputs("</table>\n", f);
}

static void put_channels(const html_ctx *c)
{
    FILE *f = c->f;
    const op_sim_result *r = c->r;
    char a[64], b[64];
    if (c->tr.n_chan == 0) {
        fputs("<p class=\"sub\">No transfers: every consumer runs beside its producer.</p>\n", f);
        return;
    }
    fputs("<table class=\"channels\">\n<tr><th>channel</th><th>transfers</th><th>bytes</th>"
          "<th>busy</th><th>utilization</th></tr>\n", f);
    for (int s = 0; s < c->tr.n_chan; s++) {
        int ch = c->tr.chan[s];
        fputs("<tr class=\"channel\"><td>", f);
        char cn[512];
        rp_put_text(f, op_cluster_chan_name(c->p->c, ch, cn, sizeof cn), RP_XML);
        double busy = ch < r->n_chan ? r->chan_busy_us[ch] : 0;
        fprintf(f, "</td><td>%d</td><td>%s</td><td>%s</td><td>%.1f%%</td></tr>\n",
                c->tr.chan_off[s + 1] - c->tr.chan_off[s],
                rp_bytes(a, sizeof a, ch < r->n_chan ? (double)r->chan_bytes[ch] : 0),
                rp_time(b, sizeof b, busy),
                r->step_time_us > 0 ? 100 * busy / r->step_time_us : 0);
    }
    fputs("</table>\n", f);
}

/* ---- timeline and memory skeletons ---------------------------------------- */

static void put_track(FILE *f, const char *kind, int index, const char *name, int y)
{
    fprintf(f, "<g class=\"track\" data-kind=\"%s\" data-index=\"%d\" data-y=\"%d\" "
               "data-name=\"", kind, index, y);
    rp_put_text(f, name, RP_XML);
    fprintf(f, "\"><rect class=\"lane\" x=\"0\" y=\"%d\" width=\"900\" height=\"%d\" "
               "fill=\"%s\" fill-opacity=\"0.7\"/><text class=\"label\" x=\"6\" y=\"%d\">",
            y, RP_TRACK_H, rp_lane_color(kind), y + 15);
    rp_put_text(f, name, RP_XML);
    fputs("</text><g class=\"items\"></g></g>\n", f);
}

static void put_timeline(const html_ctx *c)
{
    FILE *f = c->f;
    int n_tracks = c->tr.n_dev + c->tr.n_chan;
    int height = AXIS_H + n_tracks * (RP_TRACK_H + RP_TRACK_GAP) + 4;
    fputs("<h2 id=\"timeline\">Timeline</h2>\n"
          "<div class=\"controls\"><button id=\"zin\">zoom in</button>"
          "<button id=\"zout\">zoom out</button><button id=\"zreset\">whole step</button>"
          "<label>color ops by <select id=\"colorby\"><option value=\"type\">type</option>"
          "<option value=\"layer\">layer</option></select></label>"
          " <span class=\"hint\">wheel: zoom, drag: pan, double-click: whole step; "
          "showing <span id=\"window\"></span></span></div>\n<div id=\"legend\"></div>\n", f);
    fprintf(f, "<div class=\"chartbox\"><svg id=\"gantt\" xmlns=\"http://www.w3.org/2000/svg\" "
               "width=\"900\" height=\"%d\"><g id=\"axis\" class=\"axis\"></g>\n", height);
    int y = AXIS_H;
    for (int d = 0; d < c->tr.n_dev; d++, y += RP_TRACK_H + RP_TRACK_GAP)
        put_track(f, "device", d, c->p->c->dev[d].name, y);
    char cn[512];
    for (int s = 0; s < c->tr.n_chan; s++, y += RP_TRACK_H + RP_TRACK_GAP)
        put_track(f, "channel", s, op_cluster_chan_name(c->p->c, c->tr.chan[s], cn, sizeof cn), y);
    fputs("</svg></div>\n", f);
}

static void put_memory(const html_ctx *c)
{
    FILE *f = c->f;
    char a[64], b[64];
    int axis_y = MEM_GAP / 2 + c->p->nd * (MEM_H + MEM_GAP);
    fputs("<h2 id=\"memory\">Memory over time</h2>\n<div class=\"controls\"><label>"
          "<input type=\"checkbox\" id=\"fitpeak\"> scale each chart to its peak instead of "
          "the capacity</label> <span class=\"hint\">(on by default when every peak is under "
          "a quarter of its capacity)</span> <span class=\"hint\">(same time window as the timeline)</span>"
          "</div>\n", f);
    fprintf(f, "<div class=\"chartbox\"><svg id=\"memchart\" xmlns=\"http://www.w3.org/2000/svg\" "
               "width=\"900\" height=\"%d\" data-axis-y=\"%d\"><g id=\"memaxis\" class=\"axis\">"
               "</g>\n", axis_y + 20, axis_y);
    for (int d = 0; d < c->p->nd; d++) {
        const op_device *dev = &c->p->c->dev[d];
        int y = MEM_GAP / 2 + d * (MEM_H + MEM_GAP);
        int64_t peak = c->r->peak_mem[d];
        fprintf(f, "<g class=\"mem\" data-index=\"%d\" data-y=\"%d\" data-h=\"%d\" data-name=\"",
                d, y, MEM_H);
        rp_put_text(f, dev->name, RP_XML);
        fprintf(f, "\"><text class=\"label\" x=\"6\" y=\"%d\">", y + 14);
        rp_put_text(f, dev->name, RP_XML);
        fprintf(f, "</text><text x=\"6\" y=\"%d\" font-size=\"10\" fill=\"%s\">peak %s "
                   "(%.1f%%)</text><text x=\"6\" y=\"%d\" font-size=\"10\" fill=\"#555\">"
                   "of %s</text><g class=\"plot\"></g></g>\n",
                y + 30, peak > dev->memory_bytes ? "#b00020" : "#555",
                rp_bytes(a, sizeof a, (double)peak),
                dev->memory_bytes > 0 ? 100.0 * (double)peak / (double)dev->memory_bytes : 0,
                y + 43, rp_bytes(b, sizeof b, (double)dev->memory_bytes));
    }
    fputs("</svg></div>\n", f);
}

static void put_graph(const html_ctx *c)
{
    FILE *f = c->f;
    const rp_graph_view *v = &c->gv;
    fputs("<h2 id=\"graph\">Graph colored by device</h2>\n<p class=\"sub\">", f);
    if (v->coarse)
        fprintf(f, "%d ops drawn as %d groups (by %s). ", c->p->n, v->n_nodes, v->grouping);
    fprintf(f, "Columns follow the dependency depth; circle area grows with compute time; red "
               "dashed edges cross devices (each costs a transfer). Hover a node for details. "
               "Edges shown: %d of %d.</p>\n", v->n_edges, v->n_edges_total);
    fputs("<div class=\"controls\"><label>size <input type=\"range\" id=\"gzoom\" min=\"20\" "
          "max=\"200\" value=\"100\"></label></div>\n<div class=\"graphbox\">", f);
    rp_graph_view_svg(f, v, c->p);
    fputs("</div>\n", f);
}

/* ---- data for the scripts ----------------------------------------------- */

static void put_ints(FILE *f, const char *key, const int *v, int n)
{
    fprintf(f, ",\n\"%s\":[", key);
    for (int i = 0; i < n; i++)
        fprintf(f, i ? ",%d" : "%d", v[i]);
    fputc(']', f);
}

static void put_point(FILE *f, const op_sim_mem_point *m, int *first)
{
    fputs(*first ? "" : ",", f);
    put_time_num(f, m->t_us);
    fprintf(f, ",%lld", (long long)m->bytes);
    *first = 0;
}

/* Memory points of device d as a flat [t, bytes, t, bytes, ...] list; when
 * there are more than MEM_POINTS, keep per time bucket the highest and the
 * last level, so no peak is lost and the level after each bucket is right. */
static void put_memory_points(FILE *f, const op_sim_trace *t, int d, double end_us)
{
    int count = 0, first = 1;
    for (int k = 0; k < t->n_mem; k++)
        count += t->mem[k].dev == d;
    fputc('[', f);
    int bucket = -1, hi = -1, last = -1; /* indices into t->mem, time-ordered */
    for (int k = 0; k < t->n_mem; k++) {
        if (t->mem[k].dev != d)
            continue;
        if (count <= MEM_POINTS) {
            put_point(f, &t->mem[k], &first);
            continue;
        }
        int b = (int)(t->mem[k].t_us / end_us * MEM_BUCKETS);
        if (b == bucket) {
            if (t->mem[k].bytes > t->mem[hi].bytes)
                hi = k;
            last = k;
            continue;
        }
        if (hi >= 0) {
            put_point(f, &t->mem[hi], &first);
            if (last != hi)
                put_point(f, &t->mem[last], &first);
        }
        bucket = b;
        hi = last = k;
    }
    if (hi >= 0) {
        put_point(f, &t->mem[hi], &first);
        if (last != hi)
            put_point(f, &t->mem[last], &first);
    }
    fputc(']', f);
}

static void put_data(const html_ctx *c)
{
    FILE *f = c->f;
    const op_problem *p = c->p;
    const op_graph *g = p->g;
    const op_sim_trace *t = c->t;
    char col[8];
    fputs("<script>window.OPPLACE_REPORT={\n\"graph\":", f);
    rp_put_text(f, g->name, RP_JS);
    fputs(",\"algo\":", f);
    rp_put_text(f, c->algorithm, RP_JS);
    fputs(",\"end\":", f);
    put_time_num(f, c->tr.end_us);
    fputs(",\"step\":", f);
    put_time_num(f, c->r->step_time_us);
    fputs(",\n\"dev\":[", f);
    for (int d = 0; d < p->nd; d++) {
        fputs(d ? ",{\"name\":" : "{\"name\":", f);
        rp_put_text(f, p->c->dev[d].name, RP_JS);
        fprintf(f, ",\"cap\":%lld,\"peak\":%lld,\"color\":\"%s\"}",
                (long long)p->c->dev[d].memory_bytes, (long long)c->r->peak_mem[d],
                rp_device_color(col, d));
    }
    fputs("],\n\"chan\":[", f);
    for (int s = 0; s < c->tr.n_chan; s++) {
        fputs(s ? ",{\"name\":" : "{\"name\":", f);
        char cn[512];
        rp_put_text(f, op_cluster_chan_name(p->c, c->tr.chan[s], cn, sizeof cn), RP_JS);
        fputc('}', f);
    }
    fputs("],\n\"types\":[", f);
    for (int k = 0; k < c->ty.n; k++) {
        fputs(k ? "," : "", f);
        rp_put_text(f, c->ty.name[k], RP_JS);
    }
    fputs("],\n\"typeColor\":[", f);
    for (int k = 0; k < c->ty.n; k++)
        fprintf(f, k ? ",\"%s\"" : "\"%s\"", rp_color(col, k));
    fputs("],\n\"layers\":[", f);
    for (int k = 0; k < g->n_layers; k++) {
        fputs(k ? "," : "", f);
        rp_put_text(f, g->layer_name[k], RP_JS);
    }
    fputs("],\n\"names\":[", f);
    for (int i = 0; i < g->n_ops; i++) {
        fputs(i ? "," : "", f);
        rp_put_text(f, g->op_name[i], RP_JS);
    }
    fputs("],\n\"op\":{\"s\":[", f);
    for (int i = 0; i < t->n_ops; i++) {
        fputs(i ? "," : "", f);
        put_time_num(f, t->start_us[i]);
    }
    fputs("],\"d\":[", f);
    for (int i = 0; i < t->n_ops; i++) {
        fputs(i ? "," : "", f);
        rp_put_num(f, t->finish_us[i] - t->start_us[i]);
    }
    fputc(']', f);
    put_ints(f, "dev", t->dev, t->n_ops);
    put_ints(f, "ty", c->ty.type_of, t->n_ops);
    put_ints(f, "ly", g->layer, t->n_ops);
    fputs(",\n\"ob\":[", f);
    for (int i = 0; i < t->n_ops; i++)
        fprintf(f, i ? ",%lld" : "%lld", (long long)g->output_bytes[i]);
    fputs("]},\n\"xfer\":{", f);
    static const char *const keys[] = {"src", "dst", "ch", "b", "s", "e", "iss"};
    int *slot = op_malloc(((size_t)p->c->n_chan + 1) * sizeof *slot, NULL);
    for (int s = 0; slot && s < c->tr.n_chan; s++)
        slot[c->tr.chan[s]] = s;
    for (int k = 0; k < 7; k++) {
        fprintf(f, "%s\"%s\":[", k ? ",\n" : "", keys[k]);
        for (int x = 0; x < t->n_transfers; x++) {
            const op_sim_transfer *tr = &t->transfers[x];
            fputs(x ? "," : "", f);
            switch (k) {
            case 0: fprintf(f, "%d", tr->src_op); break;
            case 1: fprintf(f, "%d", tr->dst_dev); break;
            case 2: fprintf(f, "%d", slot ? slot[tr->chan] : 0); break;
            case 3: fprintf(f, "%lld", (long long)tr->bytes); break;
            case 4: put_time_num(f, tr->start_us); break;
            case 5: put_time_num(f, tr->end_us); break;
            default: put_time_num(f, tr->issue_us); break;
            }
        }
        fputc(']', f);
    }
    free(slot);
    fputs("},\n\"mem\":[", f);
    for (int d = 0; d < p->nd; d++) {
        fputs(d ? ",\n" : "", f);
        put_memory_points(f, t, d, c->tr.end_us);
    }
    fputs("]};</script>\n", f);
}

static void write_page(html_ctx *c)
{
    FILE *f = c->f;
    char a[64];
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<title>opplace report: ", f);
    rp_put_text(f, c->p->g->name, RP_XML);
    fputs(" / ", f);
    rp_put_text(f, c->algorithm, RP_XML);
    fprintf(f, "</title>\n<style>\n%s</style>\n<script>\n%s</script>\n</head>\n<body>\n",
            rp_html_css, rp_html_early_js);
    fputs("<h1>", f);
    rp_put_text(f, c->p->g->name, RP_XML);
    fputs(" placed by ", f);
    rp_put_text(f, c->algorithm, RP_XML);
    fprintf(f, "</h1>\n<p class=\"sub\">step time %s on %d devices, ratio %.3f to the lower "
               "bound%s. Written by opplace; everything below is computed by its simulator "
               "(formats.md section 5).</p>\n",
            rp_time(a, sizeof a, c->r->step_time_us), c->p->nd,
            c->p->lower_bound_us > 0 ? c->r->step_time_us / c->p->lower_bound_us : 1.0,
            c->r->oom ? "; OUT OF MEMORY on some device" : "");
    put_summary(c);
    put_devices(c);
    put_channels(c);
    if (c->measured)
        c->st = rp_measured_section(f, c->p, c->pl, c->r, c->t, c->measured, c->err);
    put_timeline(c);
    put_memory(c);
    put_graph(c);
    fputs("<div id=\"tip\"></div>\n", f);
    put_data(c);
    fprintf(f, "<script>\n%s</script>\n</body></html>\n", rp_html_main_js);
}

op_status op_report_html(const op_problem *p, const op_placement *pl, const op_sim_result *r,
                         const op_sim_trace *t, const char *algorithm, const char *path,
                         op_error *err)
{
    return op_report_html_measured(p, pl, r, t, NULL, algorithm, path, err);
}

op_status op_report_html_measured(const op_problem *p, const op_placement *pl,
                                  const op_sim_result *r, const op_sim_trace *t,
                                  const op_sim_trace *measured, const char *algorithm,
                                  const char *path, op_error *err)
{
    if (r->nd != p->nd)
        return op_fail(err, OP_EINPUT, "report: the result has %d devices, the cluster %d",
                       r->nd, p->nd);
    if ((pl->n_ops != p->n || pl->n_dev != p->nd))
        return op_fail(err, OP_EINPUT, "report: the placement does not fit the problem");
    html_ctx c = {.p = p, .pl = pl, .r = r, .t = t, .measured = measured, .err = err};
    c.algorithm = algorithm ? algorithm : pl->algorithm ? pl->algorithm : "?";
    op_status st = rp_tracks_build(&c.tr, p, t, err);
    if (st)
        return st;
    if ((st = rp_types_build(&c.ty, p, err))) {
        rp_tracks_destroy(&c.tr);
        return st;
    }
    if (!(st = rp_graph_view_build(&c.gv, p, t->dev, OP_REPORT_MAX_GRAPH_NODES, err))) {
        op_atomic a;
        if (!(st = op_atomic_open(&a, path, err))) {
            c.f = a.f;
            write_page(&c);
            if (c.st) {
                op_atomic_abort(&a);
                st = c.st;
            } else {
                st = op_atomic_commit(&a, err);
            }
        }
        rp_graph_view_destroy(&c.gv);
    }
    rp_types_destroy(&c.ty);
    rp_tracks_destroy(&c.tr);
    return st;
}
