/*
 * cost/commfit.h - fitting the linear link model T = latency + bytes * us_per_byte
 * (Pesto section 3.1, Celeritas section 4) to measured transfers.
 *
 * Input is the CSV of formats.md section 4: a header
 * `src_kind,dst_kind,bytes,time_us` and one measured transfer per line.
 * Each (src_kind, dst_kind) pair gets its own least-squares fit with R^2.
 */
#ifndef OPPLACE_COMMFIT_H
#define OPPLACE_COMMFIT_H

#include "opplace/error.h"

typedef struct op_comm_fit {
    char src_kind[64], dst_kind[64];
    int samples;
    double latency_us, us_per_byte, r2;
} op_comm_fit;

/* Reads path and fits every kind pair; *fits is malloc'ed (free it). */
op_status op_comm_fit_csv(const char *path, op_comm_fit **fits, int *n_fits, op_error *err);

/* Ordinary least squares of y = a + b x; r2 = 1 when the data are exact.
 * Needs n >= 2 distinct x values. */
op_status op_linear_fit(const double *x, const double *y, int n, double *a, double *b,
                        double *r2, op_error *err);

#endif
