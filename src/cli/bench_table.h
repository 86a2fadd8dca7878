/*
 * bench_table.h - one comparison row per (model, cluster, algorithm): run a
 * placer, judge it with the simulator, and print the rows as a Markdown
 * table or CSV.  Used by `opplace bench`; any command that compares
 * placers can reuse it.
 */
#ifndef OPPLACE_BENCH_TABLE_H
#define OPPLACE_BENCH_TABLE_H

#include <stdint.h>
#include <stdio.h>

#include "opplace/placer.h"
#include "opplace/simulate.h"

typedef struct bench_row {
    char model[128];
    char algo[40];
    int n_ops, devices;
    int ok;              /* 0: the placer failed; error says why */
    char error[200];
    double step_us, lower_bound_us;
    double ratio_expert; /* step / expert's step on the same setting, NAN if none */
    int64_t max_peak;    /* bytes, largest device peak */
    int oom;
    int64_t comm_bytes;
    double place_s;
} bench_row;

/* Place with pl (best effort, so every algorithm returns a placement and
 * the OOM column tells), simulate with sim, fill row.  A placer failure is
 * recorded in the row, not returned; only allocation failures are. */
op_status bench_run(const op_placer *pl, const op_problem *p, op_sim *sim, op_sim_result *r,
                    uint64_t seed, bench_row *row, op_error *err);

/* Fill ratio_expert of every row from the `expert` row of its setting. */
void bench_ratio_to_expert(bench_row *rows, int n);

void bench_print_markdown(FILE *f, const bench_row *rows, int n);
void bench_print_csv(FILE *f, const bench_row *rows, int n);

#endif
