/*
 * report_util.c - escaping, palettes, units and the op-type table shared by
 * the report writers (see report_util.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/sort.h"
#include "report/report_util.h"

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one. */
static int utf8_len(const unsigned char *s)
{
    unsigned char c = s[0];
    int n;
    unsigned int cp;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0) {
        n = 2;
        cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        n = 3;
        cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    for (int k = 1; k < n; k++) {
        if ((s[k] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[k] & 0x3F);
    }
    static const unsigned int min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE ||
        cp == 0xFFFF)
        return 0;
    return n;
}

static void put_ascii(FILE *f, unsigned char c, rp_lang lang)
{
    if (c < 0x20 && c != '\t' && c != '\n') { /* XML forbids them, even as &#n; */
        fputc('?', f);
        return;
    }
    switch (lang) {
    case RP_XML:
        switch (c) {
        case '&': fputs("&amp;", f); return;
        case '<': fputs("&lt;", f); return;
        case '>': fputs("&gt;", f); return;
        case '"': fputs("&quot;", f); return;
        case '\'': fputs("&#39;", f); return;
        case '\n': fputs("&#10;", f); return;
        default: fputc(c, f); return;
        }
    case RP_JS: /* JSON, and never "</script>" or "<!--" inside a script */
        switch (c) {
        case '"': fputs("\\\"", f); return;
        case '\\': fputs("\\\\", f); return;
        case '\n': fputs("\\n", f); return;
        case '\t': fputs("\\t", f); return;
        case '<': fputs("\\u003c", f); return;
        case '>': fputs("\\u003e", f); return;
        case '&': fputs("\\u0026", f); return;
        default: fputc(c, f); return;
        }
    case RP_DOT:
        switch (c) {
        case '"': fputs("\\\"", f); return;
        case '\\': fputs("\\\\", f); return;
        case '\n': fputs("\\n", f); return;
        default: fputc(c, f); return;
        }
    }
}

void rp_put_text(FILE *f, const char *s, rp_lang lang)
{
    if (lang != RP_XML)
        fputc('"', f);
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        int n = utf8_len(p);
        if (n == 0) {
            fputc('?', f);
            p++;
        } else if (n == 1) {
            put_ascii(f, *p++, lang);
        } else if (lang == RP_JS && n == 3 && p[0] == 0xE2 && p[1] == 0x80 &&
                   (p[2] == 0xA8 || p[2] == 0xA9)) {
            fputs(p[2] == 0xA8 ? "\\u2028" : "\\u2029", f); /* line breaks in old JS */
            p += 3;
        } else {
            fwrite(p, 1, (size_t)n, f);
            p += n;
        }
    }
    if (lang != RP_XML)
        fputc('"', f);
}

void rp_put_num(FILE *f, double x)
{
    if (!isfinite(x))
        x = 0;
    if (x == floor(x) && fabs(x) < 1e15)
        fprintf(f, "%.0f", x);
    else
        fprintf(f, "%.6g", x);
}

static const char *const PALETTE[12] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                        "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
                                        "#9c755f", "#86bcb6", "#d37295", "#a0cbe8"};

const char *rp_color(char buf[8], int i)
{
    if (i >= 0 && i < 12) {
        memcpy(buf, PALETTE[i], 8);
        return buf;
    }
    /* golden-angle hues at fixed saturation/lightness, converted to RGB */
    double h = fmod((double)(i < 0 ? -i : i) * 137.508, 360.0) / 60.0, s = 0.55, l = 0.58;
    double c = (1 - fabs(2 * l - 1)) * s, x = c * (1 - fabs(fmod(h, 2.0) - 1)), m = l - c / 2;
    double rgb[3] = {0, 0, 0};
    int sector = (int)h % 6;
    static const int who[6][3] = {{0, 1, 2}, {1, 0, 2}, {2, 0, 1}, {2, 1, 0}, {1, 2, 0}, {0, 2, 1}};
    rgb[who[sector][0]] = c; /* the largest component */
    rgb[who[sector][1]] = x;
    snprintf(buf, 8, "#%02x%02x%02x", (int)lround((rgb[0] + m) * 255),
             (int)lround((rgb[1] + m) * 255), (int)lround((rgb[2] + m) * 255));
    return buf;
}

const char *rp_device_color(char buf[8], int d)
{
    return rp_color(buf, d);
}

const char *rp_lane_color(const char *kind)
{
    return strcmp(kind, "device") ? "#f3f0ea" : "#eef2f7";
}

const char *rp_time(char *buf, size_t cap, double us)
{
    if (!isfinite(us))
        snprintf(buf, cap, "-");
    else if (fabs(us) >= 1e6)
        snprintf(buf, cap, "%.3f s", us / 1e6);
    else if (fabs(us) >= 1e3)
        snprintf(buf, cap, "%.3f ms", us / 1e3);
    else
        snprintf(buf, cap, "%.1f us", us);
    return buf;
}

const char *rp_bytes(char *buf, size_t cap, double b)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (fabs(b) >= 1024 && u < 5) {
        b /= 1024;
        u++;
    }
    snprintf(buf, cap, u ? "%.2f %s" : "%.0f %s", b, unit[u]);
    return buf;
}

/* ---- op types ----------------------------------------------------------- */

static int by_type_name(const void *a, const void *b, const void *ctx)
{
    const op_graph *g = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    int c = strcmp(g->op_type[x], g->op_type[y]);
    return c ? c : (x > y) - (x < y);
}

static int by_time_desc(const void *a, const void *b, const void *ctx)
{
    const double *time = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (time[x] != time[y])
        return time[x] < time[y] ? 1 : -1;
    return (x > y) - (x < y);
}

op_status rp_types_build(rp_types *ty, const op_problem *p, op_error *err)
{
    const op_graph *g = p->g;
    int n = g->n_ops;
    memset(ty, 0, sizeof *ty);
    int *idx = op_malloc(((size_t)n + 1) * sizeof *idx, err);
    int *raw = op_malloc(((size_t)n + 1) * sizeof *raw, err);
    ty->type_of = op_malloc(((size_t)n + 1) * sizeof *ty->type_of, err);
    ty->name = op_malloc(((size_t)n + 1) * sizeof *ty->name, err);
    double *raw_time = op_calloc((size_t)n + 1, sizeof *raw_time, err);
    ty->time_us = op_calloc((size_t)n + 1, sizeof *ty->time_us, err);
    int *rank = op_malloc(((size_t)n + 1) * sizeof *rank, err);
    if (!idx || !raw || !ty->type_of || !ty->name || !raw_time || !ty->time_us || !rank) {
        free(idx); free(raw); free(raw_time); free(rank);
        rp_types_destroy(ty);
        return OP_ENOMEM;
    }
    for (int i = 0; i < n; i++)
        idx[i] = i;
    op_sort(idx, (size_t)n, sizeof *idx, by_type_name, g);
    int nt = 0;
    for (int k = 0; k < n; k++) {
        int i = idx[k];
        if (k == 0 || strcmp(g->op_type[idx[k - 1]], g->op_type[i]) != 0)
            ty->name[nt++] = g->op_type[i];
        raw[i] = nt - 1;
        raw_time[nt - 1] += isfinite(p->min_exec[i]) ? p->min_exec[i] : 0;
    }
    /* renumber by total time, largest first */
    for (int k = 0; k < nt; k++)
        idx[k] = k;
    op_sort(idx, (size_t)nt, sizeof *idx, by_time_desc, raw_time);
    const char **names = op_malloc(((size_t)nt + 1) * sizeof *names, err);
    if (!names) {
        free(idx); free(raw); free(raw_time); free(rank);
        rp_types_destroy(ty);
        return OP_ENOMEM;
    }
    for (int k = 0; k < nt; k++) {
        rank[idx[k]] = k;
        names[k] = ty->name[idx[k]];
        ty->time_us[k] = raw_time[idx[k]];
    }
    for (int i = 0; i < n; i++)
        ty->type_of[i] = rank[raw[i]];
    free(ty->name);
    ty->name = names;
    ty->n = nt;
    free(idx); free(raw); free(raw_time); free(rank);
    return OP_OK;
}

void rp_types_destroy(rp_types *ty)
{
    free(ty->name);
    free(ty->type_of);
    free(ty->time_us);
    memset(ty, 0, sizeof *ty);
}
