/* bench_table.c - comparison rows: run, simulate, print (see bench_table.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/bench_table.h"
#include "cli/cli.h"

op_status bench_run(const op_placer *pl, const op_problem *p, op_sim *sim, op_sim_result *r,
                    uint64_t seed, bench_row *row, op_error *err)
{
    snprintf(row->algo, sizeof row->algo, "%s", pl->name);
    row->n_ops = p->n;
    row->devices = p->nd;
    row->lower_bound_us = p->lower_bound_us;
    row->ratio_expert = NAN;
    op_place_ctx ctx = {.p = p, .seed = seed, .best_effort = 1};
    op_placement out;
    op_error perr = {0};
    double t0 = cli_now();
    op_status st = op_place(pl, &ctx, &out, &perr);
    row->place_s = cli_now() - t0;
    if (st == OP_ENOMEM)
        return op_fail(err, OP_ENOMEM, "%s", perr.msg);
    if (st) {
        snprintf(row->error, sizeof row->error, "%.190s", perr.msg);
        return OP_OK;
    }
    st = op_sim_run(sim, &out, r, NULL, &perr);
    op_placement_destroy(&out);
    if (st) {
        snprintf(row->error, sizeof row->error, "simulation: %.170s", perr.msg);
        return OP_OK;
    }
    row->ok = 1;
    row->step_us = r->step_time_us;
    row->oom = r->oom;
    row->comm_bytes = r->comm_bytes;
    row->max_peak = 0;
    for (int d = 0; d < p->nd; d++)
        if (r->peak_mem[d] > row->max_peak)
            row->max_peak = r->peak_mem[d];
    return OP_OK;
}

void bench_ratio_to_expert(bench_row *rows, int n)
{
    for (int i = 0; i < n; i++) {
        rows[i].ratio_expert = NAN;
        for (int j = 0; j < n; j++)
            if (rows[j].ok && rows[i].ok && !strcmp(rows[j].algo, "expert") &&
                !strcmp(rows[j].model, rows[i].model) && rows[j].devices == rows[i].devices &&
                rows[j].step_us > 0)
                rows[i].ratio_expert = rows[i].step_us / rows[j].step_us;
    }
}

void bench_print_markdown(FILE *f, const bench_row *rows, int n)
{
    fprintf(f, "| model | ops | GPUs | algorithm | step time | / bound | / expert | max peak mem "
               "| OOM | traffic | place s |\n");
    fprintf(f, "|---|---:|---:|---|---:|---:|---:|---:|---|---:|---:|\n");
    for (int i = 0; i < n; i++) {
        const bench_row *w = &rows[i];
        if (!w->ok) {
            fprintf(f, "| %s | %d | %d | %s | failed: %s | | | | | | %.3f |\n", w->model, w->n_ops,
                    w->devices, w->algo, w->error, w->place_s);
            continue;
        }
        char t[32], m[32], c[32], e[32];
        if (isnan(w->ratio_expert))
            snprintf(e, sizeof e, "-");
        else
            snprintf(e, sizeof e, "%.3f", w->ratio_expert);
        fprintf(f, "| %s | %d | %d | %s | %s | %.3f | %s | %s | %s | %s | %.3f |\n", w->model,
                w->n_ops, w->devices, w->algo, cli_time(t, sizeof t, w->step_us),
                w->lower_bound_us > 0 ? w->step_us / w->lower_bound_us : 1.0, e,
                cli_bytes(m, sizeof m, (double)w->max_peak), w->oom ? "yes" : "no",
                cli_bytes(c, sizeof c, (double)w->comm_bytes), w->place_s);
    }
}

void bench_print_csv(FILE *f, const bench_row *rows, int n)
{
    fprintf(f, "model,ops,devices,algorithm,ok,step_time_us,lower_bound_us,ratio_bound,"
               "ratio_expert,max_peak_bytes,oom,comm_bytes,placement_seconds,error\n");
    for (int i = 0; i < n; i++) {
        const bench_row *w = &rows[i];
        char err[sizeof w->error];
        snprintf(err, sizeof err, "%s", w->error);
        for (char *c = err; *c; c++)
            if (*c == '"' || *c == ',' || *c == '\n')
                *c = ' ';
        fprintf(f, "\"%s\",%d,%d,%s,%d,%.3f,%.3f,%.6f,", w->model, w->n_ops, w->devices, w->algo,
                w->ok, w->step_us, w->lower_bound_us,
                w->lower_bound_us > 0 && w->ok ? w->step_us / w->lower_bound_us : 0.0);
        if (isnan(w->ratio_expert))
            fprintf(f, ",");
        else
            fprintf(f, "%.6f,", w->ratio_expert);
        fprintf(f, "%lld,%d,%lld,%.6f,%s\n", (long long)w->max_peak, w->oom,
                (long long)w->comm_bytes, w->place_s, err);
    }
}
