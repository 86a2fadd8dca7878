/*
 * comm_fit.c - least-squares fit of the link model from measured transfers.
 *
 * The CSV reader is strict (formats.md section 4): the exact header, four
 * fields a line, non-negative finite numbers; errors name file and line.
 * A negative fitted latency (possible with noisy small transfers) is kept as
 * fitted but reported, since clamping it would bias the slope.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_hooks.h"
#include "core/file_util.h"
#include "cost/commfit.h"
#include "opplace/limits.h"

op_status op_linear_fit(const double *x, const double *y, int n, double *a, double *b,
                        double *r2, op_error *err)
{
    if (n < 2)
        return op_fail(err, OP_EINPUT, "need at least 2 measurements to fit a line (have %d)", n);
    double mx = 0, my = 0;
    for (int i = 0; i < n; i++) {
        mx += x[i];
        my += y[i];
    }
    mx /= n;
    my /= n;
    double sxx = 0, sxy = 0, syy = 0;
    for (int i = 0; i < n; i++) {
        sxx += (x[i] - mx) * (x[i] - mx);
        sxy += (x[i] - mx) * (y[i] - my);
        syy += (y[i] - my) * (y[i] - my);
    }
    if (sxx == 0)
        return op_fail(err, OP_EINPUT, "all measurements have the same byte count; "
                       "measure several sizes");
    *b = sxy / sxx;
    *a = my - *b * mx;
    double ss_res = 0;
    for (int i = 0; i < n; i++) {
        double r = y[i] - (*a + *b * x[i]);
        ss_res += r * r;
    }
    *r2 = syy > 0 ? 1.0 - ss_res / syy : 1.0;
    return OP_OK;
}

typedef struct sample {
    int pair;
    double bytes, time;
} sample;

static int parse_number(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    while (*end == ' ' || *end == '\r')
        end++;
    if (end == s || *end || errno || !isfinite(v) || v < 0)
        return 0;
    *out = v;
    return 1;
}

static int find_pair(op_comm_fit *fits, int n, const char *s, const char *d)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(fits[i].src_kind, s) && !strcmp(fits[i].dst_kind, d))
            return i;
    return -1;
}

/* Split one CSV line into exactly four comma-separated fields (in place). */
static int split4(char *line, char **f)
{
    int k = 0;
    f[k++] = line;
    for (char *p = line; *p; p++)
        if (*p == ',') {
            if (k == 4)
                return 0;
            *p = '\0';
            f[k++] = p + 1;
        }
    return k == 4;
}

static op_status parse_csv(const char *path, char *text, sample **out, int *n_out,
                           op_comm_fit **fits, int *n_fits, op_error *err)
{
    size_t cap = 0, fcap = 0;
    int n = 0, nf = 0, line_no = 0;
    sample *s = NULL;
    op_comm_fit *f = NULL;
    op_status st = OP_OK;
    for (char *line = strtok(text, "\n"); line && !st; line = strtok(NULL, "\n")) {
        line_no++;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r')
            line[--len] = '\0';
        if (line_no == 1) {
            if (strcmp(line, "src_kind,dst_kind,bytes,time_us") != 0)
                st = op_fail(err, OP_EINPUT, "%s:1: the header must be "
                             "'src_kind,dst_kind,bytes,time_us'", path);
            continue;
        }
        if (len == 0)
            continue;
        char *field[4];
        double bytes, t;
        if (!split4(line, field)) {
            st = op_fail(err, OP_EINPUT, "%s:%d: expected 4 comma-separated fields", path, line_no);
        } else if (!field[0][0] || !field[1][0] || strlen(field[0]) >= 64 || strlen(field[1]) >= 64) {
            st = op_fail(err, OP_EINPUT, "%s:%d: src_kind and dst_kind must be non-empty names",
                         path, line_no);
        } else if (!parse_number(field[2], &bytes) || !parse_number(field[3], &t) ||
                   bytes > (double)OP_MAX_BYTES || !op_valid_time(t)) {
            st = op_fail(err, OP_EINPUT, "%s:%d: bytes (0 to 2^50) and time_us (0 to %g) must be "
                         "numbers in range", path, line_no, OP_MAX_TIME_US);
        } else {
            int pair = find_pair(f, nf, field[0], field[1]);
            if (pair < 0 && !(st = op_reserve((void **)&f, sizeof *f, &fcap, (size_t)nf + 1, err))) {
                memset(&f[nf], 0, sizeof f[nf]);
                strcpy(f[nf].src_kind, field[0]);
                strcpy(f[nf].dst_kind, field[1]);
                pair = nf++;
            }
            if (!st && !(st = op_reserve((void **)&s, sizeof *s, &cap, (size_t)n + 1, err))) {
                s[n++] = (sample){pair, bytes, t};
                f[pair].samples++;
            }
        }
    }
    if (!st && line_no == 0)
        st = op_fail(err, OP_EINPUT, "%s: the file is empty", path);
    if (!st && n == 0)
        st = op_fail(err, OP_EINPUT, "%s: no measurements after the header", path);
    *out = s;
    *n_out = n;
    *fits = f;
    *n_fits = nf;
    return st;
}

op_status op_comm_fit_csv(const char *path, op_comm_fit **fits, int *n_fits, op_error *err)
{
    char *text;
    size_t len;
    sample *s = NULL;
    int n = 0;
    *fits = NULL;
    *n_fits = 0;
    op_status st = op_read_whole_file(path, &text, &len, err);
    if (st)
        return st;
    const char *nul = memchr(text, '\0', len); /* one rule for strings: no NUL anywhere */
    if (nul) {
        int line = 1;
        for (const char *q = text; q < nul; q++)
            line += *q == '\n';
        free(text);
        return op_fail(err, OP_EINPUT, "%s:%d: a NUL byte; the file must be text", path, line);
    }
    st = parse_csv(path, text, &s, &n, fits, n_fits, err);
    double *x = st ? NULL : op_malloc((size_t)n * sizeof *x, err);
    double *y = st ? NULL : op_malloc((size_t)n * sizeof *y, err);
    if (!st && (!x || !y))
        st = OP_ENOMEM;
    for (int k = 0; k < *n_fits && !st; k++) {
        op_comm_fit *f = &(*fits)[k];
        int m = 0;
        for (int i = 0; i < n; i++)
            if (s[i].pair == k) {
                x[m] = s[i].bytes;
                y[m++] = s[i].time;
            }
        op_error local = {0};
        if (op_linear_fit(x, y, m, &f->latency_us, &f->us_per_byte, &f->r2, &local))
            st = op_fail(err, OP_EINPUT, "%s: %s -> %s: %s", path, f->src_kind, f->dst_kind,
                         local.msg);
    }
    free(x);
    free(y);
    free(s);
    free(text);
    if (st) {
        free(*fits);
        *fits = NULL;
        *n_fits = 0;
    }
    return st;
}
