/*
 * report_bench_plot.c - the comparison plot of `opplace bench -o FILE.svg`: step
 * time per model and algorithm as grouped bars, one panel per model (models
 * differ by orders of magnitude, so each panel keeps its own time axis),
 * the lower bound as a dashed line, each bar labelled with its ratio to the
 * bound.  An algorithm with no result is a cross; an out-of-memory result is
 * a hatched bar marked OOM.  One static SVG, written atomically.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/file_util.h"
#include "opplace/report.h"
#include "report/report_util.h"

#define PANEL_W 440.0
#define PANEL_H 250.0
#define PLOT_L 64.0   /* left margin inside a panel: the time axis */
#define PLOT_T 28.0   /* top margin: the model's name */
#define PLOT_B 70.0   /* bottom margin: the algorithm names */
#define COLS 3

/* Index of s in names[0..*n-1], appending it when new. */
static int intern(const char **names, int *n, const char *s)
{
    for (int k = 0; k < *n; k++)
        if (strcmp(names[k], s) == 0)
            return k;
    names[*n] = s;
    return (*n)++;
}

static int has_result(const op_report_bench_row *r)
{
    return isfinite(r->step_time_us) && r->step_time_us >= 0;
}

static double nice_top(double v)
{
    if (!(v > 0))
        return 1;
    double mag = pow(10, floor(log10(v))), m = v / mag;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10) * mag;
}

typedef struct plot {
    FILE *f;
    const op_report_bench_row *rows;
    int n_rows, n_models, n_algos;
    const char **models, **algos;
    int *model_of, *algo_of;
} plot;

static void put_panel(const plot *pp, int m, double ox, double oy)
{
    FILE *f = pp->f;
    char col[8], lab[32];
    double top = 0, lb = -1;
    for (int k = 0; k < pp->n_rows; k++) {
        const op_report_bench_row *r = &pp->rows[k];
        if (pp->model_of[k] != m)
            continue;
        if (has_result(r) && r->step_time_us > top)
            top = r->step_time_us;
        if (isfinite(r->lower_bound_us) && r->lower_bound_us > 0) {
            lb = r->lower_bound_us;
            if (lb > top)
                top = lb;
        }
    }
    top = nice_top(top * 1.05);
    double pw = PANEL_W - PLOT_L - 12, ph = PANEL_H - PLOT_T - PLOT_B;
    double x0 = ox + PLOT_L, y0 = oy + PLOT_T;
    fprintf(f, "<g class=\"panel\" data-model=\"");
    rp_put_text(f, pp->models[m], RP_XML);
    fprintf(f, "\"><text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" font-weight=\"bold\">", x0,
            oy + 18);
    rp_put_text(f, pp->models[m], RP_XML);
    fputs("</text>\n", f);
    for (int k = 0; k <= 4; k++) { /* the time axis */
        double v = top * k / 4, y = y0 + ph - ph * k / 4;
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%s</text>\n",
                x0, x0 + pw, y, y, k ? "#e6e6e6" : "#444", x0 - 4, y + 3,
                rp_time(lab, sizeof lab, v));
    }
    double slot = pw / (pp->n_algos > 0 ? pp->n_algos : 1), bw = slot * 0.7;
    for (int k = 0; k < pp->n_rows; k++) {
        const op_report_bench_row *r = &pp->rows[k];
        if (pp->model_of[k] != m)
            continue;
        int a = pp->algo_of[k];
        double x = x0 + a * slot + (slot - bw) / 2, cx = x + bw / 2;
        fprintf(f, "<g class=\"bar\" data-algo=\"");
        rp_put_text(f, r->algorithm, RP_XML);
        fputs("\">", f);
        if (!has_result(r)) {
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" text-anchor=\"middle\" "
                       "fill=\"#b00020\">&#215;<title>", cx, y0 + ph - 4);
            rp_put_text(f, r->algorithm, RP_XML);
            fputs(": no result</title></text>", f);
        } else {
            double h = ph * r->step_time_us / top;
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"%s>"
                       "<title>", x, y0 + ph - h, bw, h, rp_color(col, a),
                    r->oom ? " fill-opacity=\"0.45\" stroke=\"#b00020\" stroke-dasharray=\"3 2\""
                           : "");
            rp_put_text(f, r->algorithm, RP_XML);
            fprintf(f, ": %s%s</title></rect>", rp_time(lab, sizeof lab, r->step_time_us),
                    r->oom ? " (out of memory)" : "");
            if (r->oom)
                fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\" text-anchor=\"middle\" "
                           "fill=\"#b00020\">OOM</text>", cx, y0 + ph - h - 12);
            if (lb > 0)
                fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\" text-anchor=\"middle\">"
                           "%.2fx</text>", cx, y0 + ph - h - 3, r->step_time_us / lb);
        }
        fprintf(f, "<text transform=\"translate(%.1f %.1f) rotate(-40)\" font-size=\"10\" "
                   "text-anchor=\"end\">", cx, y0 + ph + 12);
        rp_put_text(f, r->algorithm, RP_XML);
        fputs("</text></g>\n", f);
    }
    if (lb > 0) {
        double y = y0 + ph - ph * lb / top;
        fprintf(f, "<line class=\"bound\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" "
                   "stroke=\"#333\" stroke-dasharray=\"5 3\"><title>lower bound %s</title></line>\n",
                x0, x0 + pw, y, y, rp_time(lab, sizeof lab, lb));
    }
    fputs("</g>\n", f);
}

static void write_plot(const plot *pp, const char *title)
{
    FILE *f = pp->f;
    char col[8];
    int cols = pp->n_models < COLS ? (pp->n_models > 0 ? pp->n_models : 1) : COLS;
    int rows = (pp->n_models + cols - 1) / cols;
    double legend_h = 22.0 * ((pp->n_algos + 5) / 6) + 8;
    double w = cols * PANEL_W + 20, h = 40 + legend_h + rows * PANEL_H + 10;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
               "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" "
               "fill=\"white\"/>\n<text x=\"10\" y=\"24\" font-size=\"16\" font-weight=\"bold\">",
            w, h, w, h);
    rp_put_text(f, title ? title : "step time per model and algorithm (simulated)", RP_XML);
    fputs("</text>\n<g class=\"legend\" font-size=\"12\">", f);
    for (int a = 0; a < pp->n_algos; a++) {
        double x = 10 + (a % 6) * 200, y = 40 + (a / 6) * 22;
        fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                   "<text x=\"%.0f\" y=\"%.0f\">", x, y, rp_color(col, a), x + 17, y + 10);
        rp_put_text(f, pp->algos[a], RP_XML);
        fputs("</text>", f);
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" fill=\"#555\">dashed line: lower bound; "
               "labels: ratio to it</text></g>\n", 10.0, 40 + legend_h - 4);
    for (int m = 0; m < pp->n_models; m++)
        put_panel(pp, m, 10 + (m % cols) * PANEL_W, 40 + legend_h + (m / cols) * PANEL_H);
    fputs("</svg>\n", f);
}

op_status op_report_bench_plot_svg(const op_report_bench_row *rows, int n_rows,
                                   const char *title, const char *path, op_error *err)
{
    if (n_rows < 0 || (n_rows > 0 && !rows))
        return op_fail(err, OP_EINPUT, "bench plot: no rows");
    for (int k = 0; k < n_rows; k++)
        if (!rows[k].model || !rows[k].algorithm)
            return op_fail(err, OP_EINPUT, "bench plot: row %d has no model or algorithm name", k);
    size_t cap = (size_t)n_rows + 1;
    plot pp = {.rows = rows, .n_rows = n_rows};
    pp.models = op_malloc(cap * sizeof *pp.models, err);
    pp.algos = op_malloc(cap * sizeof *pp.algos, err);
    pp.model_of = op_malloc(cap * sizeof *pp.model_of, err);
    pp.algo_of = op_malloc(cap * sizeof *pp.algo_of, err);
    op_status st = OP_ENOMEM;
    if (pp.models && pp.algos && pp.model_of && pp.algo_of) {
        for (int k = 0; k < n_rows; k++) {
            pp.model_of[k] = intern(pp.models, &pp.n_models, rows[k].model);
            pp.algo_of[k] = intern(pp.algos, &pp.n_algos, rows[k].algorithm);
        }
        op_atomic a;
        if (!(st = op_atomic_open(&a, path, err))) {
            pp.f = a.f;
            write_plot(&pp, title);
            st = op_atomic_commit(&a, err);
        }
    }
    free(pp.models);
    free(pp.algos);
    free(pp.model_of);
    free(pp.algo_of);
    return st;
}
