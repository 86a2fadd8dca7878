/*
 * run_ctx.c - the clock, the deadline, the interrupt flag and progress
 * lines of opplace/run_ctx.h.
 */
#include "opplace/run_ctx.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static volatile sig_atomic_t interrupted;

int op_interrupted(void)
{
    return interrupted != 0;
}

void op_set_interrupted(int on)
{
    interrupted = on;
}

double op_seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double op_seconds_left(const op_place_ctx *ctx)
{
    if (op_interrupted())
        return 0;
    if (!ctx || ctx->deadline <= 0)
        return 1e30;
    double left = ctx->deadline - op_seconds_now();
    return left > 0 ? left : 0;
}

void op_progress(const op_place_ctx *ctx, const char *fmt, ...)
{
    if (!ctx || !ctx->progress)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}
