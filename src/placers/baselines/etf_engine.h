/*
 * etf_engine.h - the memory-constrained list scheduler behind Baechi's
 * m-ETF and m-SCT (etf_engine.c has the design).
 */
#ifndef OPPLACE_ETF_ENGINE_H
#define OPPLACE_ETF_ENGINE_H

#include "opplace/placer.h"
#include "placers/baselines/baselines.h"

/* Ties between equal start times: the op earlier in Baechi's BFS
 * topological order of the file (its topo_order), or earlier by
 * op_rank_order (baselines.h), which no op order of the file changes.
 * m-ETF and m-SCT use the rank; BFS reproduces Baechi's rule, for the
 * tests and the ablation in bench/RESULTS.md, "Baechi ports side by side". */
typedef enum etf_tie { ETF_TIE_BFS, ETF_TIE_RANK } etf_tie;

typedef struct etf_options {
    const int *favorite; /* per op: favorite child or -1 (m-SCT); NULL for m-ETF */
    int set_order;       /* write the schedule as the placement's per-device order */
    const char *name;    /* for messages */
    etf_tie tie;         /* tie-break order between equal start times */
    op_rank_walk walk;   /* ETF_TIE_RANK: op_rank_order's walk */
    const double *margin; /* per device memory margin (placer_mem.h), NULL for 1 */
    int *estimate_fits;  /* out, may be NULL: 0 when best effort placed an op
                            beyond the memory estimate */
} etf_options;

/* Optional record of the scheduler's own schedule (for tests): per op its
 * planned start, and the sequence in which ops were picked. */
typedef struct etf_trace {
    double *start;  /* n */
    int *sequence;  /* n */
} etf_trace;

op_status etf_schedule(const op_place_ctx *ctx, const etf_options *o, op_placement *out,
                       etf_trace *trace, op_error *err);

/* Static b-level (longest path to an exit of fastest execution times, no
 * communication): the memory estimate's slot order (decreasing).  out has
 * n entries. */
void etf_static_level(const op_problem *p, double *out);

/* `--order` (op_place_options; none: no order): whether a list scheduler
 * (m-ETF, m-SCT, HEFT) hands its own per-device order to the simulator.
 * Defined in m_etf.c. */
op_status placer_read_order_option(const op_place_ctx *ctx, int *set_order, op_error *err);

/* etf_schedule under pmem_place_checked (the simulator check); o->margin
 * and o->estimate_fits are set by it.  With ETF_TIE_RANK it schedules with
 * both depth-first walks of op_rank_order (longest, shortest sibling first)
 * and keeps the placement the simulator ranks first (ties: longest first);
 * the breadth-first walk too when neither fits. */
op_status etf_schedule_checked(const op_place_ctx *ctx, etf_options *o, op_placement *out,
                               op_error *err);

#endif
