/*
 * report_svg.c - the timeline of a simulated step as one static SVG (Pesto,
 * Figure 5): a track per device with its ops colored by type, a track per
 * channel that carried a transfer (colored by the sending device), a time
 * axis and a legend.  Every block has a <title>, which SVG viewers show on
 * hover.
 *
 * Ops narrower than a pixel merge with their neighbours into one block whose
 * opacity is the busy fraction of its span, so a 36k-op step is a few
 * thousand rectangles at most and still shows where a device idles.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/file_util.h"
#include "core/problem_util.h"
#include "opplace/report.h"
#include "report/report_util.h"

#define WIDTH 1600.0
#define RIGHT 20.0
#define TOP 34.0
static const double LABEL = RP_LABEL_W, TRACK = RP_TRACK_H, GAP = RP_TRACK_GAP;

typedef struct svg_ctx {
    FILE *f;
    const op_problem *p;
    const op_sim_trace *t;
    const rp_types *ty;
    double scale; /* pixels per microsecond */
    double end_us; /* the time the width spans */
} svg_ctx;

/* One rectangle being grown from consecutive items of a track. */
typedef struct block {
    double x0, x1, busy_px;
    int n, first, last, color_item;
    double color_len;
} block;

static double px(const svg_ctx *c, double t_us)
{
    return LABEL + t_us * c->scale;
}

static void item_span(const svg_ctx *c, int is_op, int id, double *s, double *e)
{
    if (is_op) {
        *s = c->t->start_us[id];
        *e = c->t->finish_us[id];
    } else {
        *s = c->t->transfers[id].start_us;
        *e = c->t->transfers[id].end_us;
    }
}

static void put_title(const svg_ctx *c, int is_op, const block *b)
{
    char t0[32], t1[32], d[32], by[32];
    FILE *f = c->f;
    double s, e, s2, e2;
    item_span(c, is_op, b->first, &s, &e);
    item_span(c, is_op, b->last, &s2, &e2);
    fputs("<title>", f);
    if (b->n > 1) {
        fprintf(f, "%d %s, %s .. %s, busy %s", b->n, is_op ? "ops" : "transfers",
                rp_time(t0, sizeof t0, s), rp_time(t1, sizeof t1, e2),
                rp_time(d, sizeof d, b->busy_px / c->scale));
    } else if (is_op) {
        rp_put_text(f, c->p->g->op_name[b->first], RP_XML);
        fputs(" (", f);
        rp_put_text(f, c->p->g->op_type[b->first], RP_XML);
        fprintf(f, ")&#10;%s .. %s (%s)", rp_time(t0, sizeof t0, s), rp_time(t1, sizeof t1, e),
                rp_time(d, sizeof d, e - s));
    } else {
        const op_sim_transfer *x = &c->t->transfers[b->first];
        rp_put_text(f, c->p->g->op_name[x->src_op], RP_XML);
        fputs(" -&gt; ", f);
        rp_put_text(f, c->p->c->dev[x->dst_dev].name, RP_XML);
        fprintf(f, "&#10;%s, %s .. %s", rp_bytes(by, sizeof by, (double)x->bytes),
                rp_time(t0, sizeof t0, s), rp_time(t1, sizeof t1, e));
    }
    fputs("</title>", f);
}

static void flush(const svg_ctx *c, int is_op, const block *b, double y)
{
    if (b->n == 0)
        return;
    char col[8];
    if (is_op)
        rp_color(col, c->ty->type_of[b->color_item]);
    else
        rp_device_color(col, c->t->dev[c->t->transfers[b->color_item].src_op]);
    double w = b->x1 - b->x0;
    double busy = w > 0 ? b->busy_px / w : 1;
    fprintf(c->f, "<rect class=\"%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" "
                  "fill=\"%s\"",
            b->n > 1 ? "agg" : is_op ? "op" : "xfer", b->x0, y + 2, w < 0.5 ? 0.5 : w,
            TRACK - 4, col);
    if (b->n > 1)
        fprintf(c->f, " fill-opacity=\"%.2f\"", busy < 0.3 ? 0.3 : busy > 1 ? 1 : busy);
    fputs(">", c->f);
    put_title(c, is_op, b);
    fputs("</rect>\n", c->f);
}

/* Items of one track, sorted by start, merged when narrower than a pixel. */
static void put_track_items(const svg_ctx *c, int is_op, const int *ids, int n, double y)
{
    block b = {0};
    for (int k = 0; k < n; k++) {
        double s, e;
        item_span(c, is_op, ids[k], &s, &e);
        if (!isfinite(s) || !isfinite(e))
            continue; /* a measured trace lacks it (report_measured.c) */
        double a = px(c, s), z = px(c, e);
        int tiny = z - a < 1.0;
        if (b.n > 0 && tiny && (b.x1 - b.x0 < 1.0 || b.n > 1) && a - b.x1 < 1.0) {
            b.x1 = z > b.x1 ? z : b.x1;
            b.busy_px += z - a;
            b.last = ids[k];
            b.n++;
            if (z - a > b.color_len) {
                b.color_len = z - a;
                b.color_item = ids[k];
            }
            continue;
        }
        flush(c, is_op, &b, y);
        b = (block){a, z, z - a, 1, ids[k], ids[k], ids[k], z - a};
    }
    flush(c, is_op, &b, y);
}

static double nice_step(double range, int ticks)
{
    double raw = range / ticks, mag = pow(10, floor(log10(raw)));
    double m = raw / mag;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * mag;
}

static void put_axis(const svg_ctx *c, double end_us, double y)
{
    FILE *f = c->f;
    fprintf(f, "<g class=\"axis\" font-size=\"11\"><line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" "
               "y2=\"%.1f\" stroke=\"#333\"/>\n", LABEL, y, WIDTH - RIGHT, y);
    double step = nice_step(end_us, 10);
    char lab[32];
    for (double v = 0; v <= end_us * 1.0001; v += step) {
        double x = px(c, v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                x, y, x, y + 5, x, y + 17, rp_time(lab, sizeof lab, v));
    }
    fputs("</g>\n", f);
}

static void put_legend(const svg_ctx *c, double y)
{
    FILE *f = c->f;
    char col[8];
    int shown = c->ty->n < 12 ? c->ty->n : 12;
    fputs("<g class=\"legend\" font-size=\"11\">", f);
    for (int k = 0; k < shown; k++) {
        double x = LABEL + (k % 6) * 230, yy = y + (k / 6) * 16;
        fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                   "<text x=\"%.0f\" y=\"%.0f\">", x, yy, rp_color(col, k), x + 14, yy + 9);
        rp_put_text(f, c->ty->name[k], RP_XML);
        fputs("</text>", f);
    }
    if (c->ty->n > shown)
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">+%d more types</text>", LABEL,
                y + 2 * 16 + 9, c->ty->n - shown);
    fputs("</g>\n", f);
}

static void put_label(FILE *f, const char *kind, const char *name, double y)
{
    fprintf(f, "<g class=\"track\" data-kind=\"%s\" data-name=\"", kind);
    rp_put_text(f, name, RP_XML);
    fprintf(f, "\"><rect x=\"0\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" fill=\"%s\"/>"
               "<text x=\"6\" y=\"%.1f\" font-size=\"12\">",
            y, WIDTH, TRACK, rp_lane_color(kind), y + 15);
    rp_put_text(f, name, RP_XML);
    fputs("</text>\n", f);
}

/* The <svg> element; with title NULL, "graph: step T". */
static void write_svg(const svg_ctx *c, const rp_tracks *tr, const char *title)
{
    FILE *f = c->f;
    int n_tracks = tr->n_dev + tr->n_chan;
    double axis_y = TOP + n_tracks * (TRACK + GAP) + 4;
    int legend_rows = c->ty->n > 12 ? 3 : (c->ty->n + 5) / 6;
    double height = axis_y + 30 + legend_rows * 16 + 10;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
               "<text x=\"6\" y=\"20\" font-size=\"15\" font-weight=\"bold\">",
            WIDTH, height, WIDTH, height);
    char a[32];
    if (title) {
        rp_put_text(f, title, RP_XML);
        fputs("</text>\n", f);
    } else {
        rp_put_text(f, c->p->g->name, RP_XML);
        fprintf(f, ": step %s</text>\n", rp_time(a, sizeof a, tr->end_us));
    }
    double y = TOP;
    for (int d = 0; d < tr->n_dev; d++, y += TRACK + GAP) {
        put_label(f, "device", c->p->c->dev[d].name, y);
        put_track_items(c, 1, tr->dev_ops + tr->dev_off[d], tr->dev_off[d + 1] - tr->dev_off[d],
                        y);
        fputs("</g>\n", f);
    }
    for (int s = 0; s < tr->n_chan; s++, y += TRACK + GAP) {
        char cn[512];
        put_label(f, "channel", op_cluster_chan_name(c->p->c, tr->chan[s], cn, sizeof cn), y);
        put_track_items(c, 0, tr->chan_xfers + tr->chan_off[s],
                        tr->chan_off[s + 1] - tr->chan_off[s], y);
        fputs("</g>\n", f);
    }
    put_axis(c, c->end_us, axis_y);
    put_legend(c, axis_y + 28);
    fputs("</svg>\n", f);
}

op_status rp_svg_timeline(FILE *f, const op_problem *p, const op_sim_trace *t, const char *title,
                          double end_us, op_error *err)
{
    rp_tracks tr;
    rp_types ty;
    op_status st = rp_tracks_build(&tr, p, t, err);
    if (st)
        return st;
    if ((st = rp_types_build(&ty, p, err))) {
        rp_tracks_destroy(&tr);
        return st;
    }
    double end = end_us > 0 ? end_us : tr.end_us;
    svg_ctx c = {f, p, t, &ty, (WIDTH - LABEL - RIGHT) / end, end};
    write_svg(&c, &tr, title);
    rp_types_destroy(&ty);
    rp_tracks_destroy(&tr);
    return OP_OK;
}

op_status op_report_svg_timeline(const op_problem *p, const op_sim_trace *t, const char *path,
                                 op_error *err)
{
    op_atomic a;
    op_status st = op_atomic_open(&a, path, err);
    if (st)
        return st;
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", a.f);
    if ((st = rp_svg_timeline(a.f, p, t, NULL, 0, err))) {
        op_atomic_abort(&a);
        return st;
    }
    return op_atomic_commit(&a, err);
}
