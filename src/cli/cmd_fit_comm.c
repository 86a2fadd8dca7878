/* cmd_fit_comm.c - `opplace fit-comm calib.csv`: link models from measurements. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/file_util.h"
#include "cost/commfit.h"
#include "opplace/io.h"

static const char HELP[] =
    "usage: opplace fit-comm CALIB.csv [--cluster base.json] [-o out.json]\n"
    "\n"
    "Fits T = latency_us + us_per_byte * bytes per (src_kind, dst_kind) pair by\n"
    "least squares over measured transfers (CSV header: src_kind,dst_kind,bytes,time_us)\n"
    "and prints each fit with its R^2.  With -o it writes the links: with\n"
    "--cluster, the whole cluster file with every device pair's link replaced by\n"
    "the fit for its kinds; without, an object with one entry per kind pair.\n";

static void print_fits(const op_comm_fit *f, int n)
{
    printf("%-10s %-10s %8s %14s %14s %10s %8s\n", "src_kind", "dst_kind", "samples",
           "latency_us", "us_per_byte", "GB/s", "R^2");
    for (int i = 0; i < n; i++) {
        printf("%-10s %-10s %8d %14.4g %14.4g %10.3g %8.4f%s\n", f[i].src_kind, f[i].dst_kind,
               f[i].samples, f[i].latency_us, f[i].us_per_byte,
               f[i].us_per_byte > 0 ? 1e-3 / f[i].us_per_byte : 0.0, f[i].r2,
               f[i].latency_us < 0 ? "  (negative latency: measure small transfers)" : "");
    }
}

static op_status write_links(const op_comm_fit *f, int n, const char *path, op_error *err)
{
    op_atomic a;
    if (op_atomic_open(&a, path, err))
        return OP_EIO;
    fputs("{\n  \"links_by_kind\": [", a.f);
    for (int i = 0; i < n; i++) {
        fputs(i ? ",\n    {\"src_kind\": " : "\n    {\"src_kind\": ", a.f);
        op_json_put_string(a.f, f[i].src_kind);
        fputs(", \"dst_kind\": ", a.f);
        op_json_put_string(a.f, f[i].dst_kind);
        fputs(", \"latency_us\": ", a.f);
        op_json_put_number(a.f, f[i].latency_us);
        fputs(", \"us_per_byte\": ", a.f);
        op_json_put_number(a.f, f[i].us_per_byte);
        fputs(", \"r2\": ", a.f);
        op_json_put_number(a.f, f[i].r2);
        fprintf(a.f, ", \"samples\": %d}", f[i].samples);
    }
    fputs("\n  ]\n}\n", a.f);
    return op_atomic_commit(&a, err);
}

/* Replace each ordered pair's link by the fit for its kinds, when there is
 * one; -1 when out of memory. */
static int apply_fits(op_cluster *c, const op_comm_fit *f, int n, op_error *err)
{
    int replaced = 0;
    for (int s = 0; s < c->n_dev; s++)
        for (int d = 0; d < c->n_dev; d++) {
            if (s == d)
                continue;
            for (int i = 0; i < n; i++)
                if (!strcmp(f[i].src_kind, c->dev[s].kind) && !strcmp(f[i].dst_kind, c->dev[d].kind)) {
                    op_link_model m = {.latency_us = f[i].latency_us < 0 ? 0 : f[i].latency_us,
                                       .us_per_byte = f[i].us_per_byte < 0 ? 0
                                                                           : f[i].us_per_byte};
                    if (op_cluster_set_link(c, s, d, m, err))
                        return -1;
                    replaced++;
                }
        }
    return replaced;
}

int cmd_fit_comm(int argc, char **argv)
{
    cli_args a;
    op_error err = {0};
    op_comm_fit *fits = NULL;
    op_cluster *c = NULL;
    int n = 0, code = 0;
    if (cli_parse(&a, "fit-comm", argc, argv, NULL, &err))
        goto fail;
    if (a.help) {
        fputs(HELP, stdout);
        goto done;
    }
    const char *out = op_options_str(a.opts, "output", NULL);
    const char *base = op_options_str(a.opts, "cluster", NULL);
    if (a.n_pos != 1) {
        op_fail(&err, OP_EUSAGE, "expected one CSV file (see 'opplace fit-comm --help')");
        goto fail;
    }
    if (cli_check_unused(&a, &err) || op_comm_fit_csv(a.pos[0], &fits, &n, &err))
        goto fail;
    print_fits(fits, n);
    if (base) {
        if (!(c = op_cluster_read(base, &err)))
            goto fail;
        int replaced = apply_fits(c, fits, n, &err);
        if (replaced < 0)
            goto fail;
        fprintf(stderr, "opplace fit-comm: replaced %d of %d links of %s\n", replaced,
                c->n_dev * (c->n_dev - 1), base);
        if (out && op_cluster_write(c, out, &err))
            goto fail;
    } else if (out && write_links(fits, n, out, &err)) {
        goto fail;
    }
    goto done;
fail:
    code = cli_report("fit-comm", &err);
done:
    free(fits);
    op_cluster_free(c);
    cli_args_destroy(&a);
    return code;
}
