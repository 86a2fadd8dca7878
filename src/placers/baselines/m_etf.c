/*
 * m_etf.c - Baechi's m-ETF: memory-constrained Earliest Time First
 * (Jeon et al., "Baechi: fast device placement of machine learning graphs",
 * SoCC 2020, section 4.2; Celeritas section 6.2 and Pesto section 5.2 use
 * it as a baseline).  The scheduler itself is etf_engine.c.
 *
 * Output: the placement plus ETF's own schedule as the per-device order
 * (`--order none` leaves the order to the simulator's first-ready rule).
 * As Baechi: one channel per device, busy while it sends or receives, and a
 * tensor sent once per device (etf_engine.c).  Ties between equal start
 * times go to the op earlier by op_rank_order (ETF_TIE_RANK), scheduled
 * with both of its sibling orders, the simulator keeping the better
 * placement; Baechi's tie is its BFS topo_order, whose exact sequence
 * follows TensorFlow's edge insertion order, which a graph file does not
 * keep, and the graph file's own order made the result depend on how the
 * file lists its ops (bench/RESULTS.md, "Baechi ports side by side").
 * Differences from Baechi: the memory estimate is placer_mem.h's liveness
 * rule, and the result is checked by the simulator, tightening the margin
 * and scheduling again when it runs out of memory (Baechi frees outputs
 * during its own schedule and is not checked, which lets it OOM in
 * practice, Celeritas 6.4.1); a colocation group's whole footprint is
 * charged when its first member is placed.
 */
#include <string.h>

#include "placers/baselines/etf_engine.h"

/* `--order none` (op_place_options): leave the order to the simulator's
 * first-ready rule; any other value keeps the scheduler's own. */
op_status placer_read_order_option(const op_place_ctx *ctx, int *set_order, op_error *err)
{
    (void)err;
    *set_order = strcmp(op_options_str(ctx->opts, "order", "own"), "none") != 0;
    return OP_OK;
}

static op_status place_m_etf(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    etf_options o = {.favorite = NULL, .name = "m-etf", .tie = ETF_TIE_RANK};
    if (placer_read_order_option(ctx, &o.set_order, err))
        return OP_EUSAGE;
    return etf_schedule_checked(ctx, &o, out, err);
}

const op_placer op_placer_m_etf = {
    .name = "m-etf",
    .summary = "Baechi m-ETF: earliest-start (op, device) pair first, within device memory",
    .source = "Baechi (SoCC 2020) section 4.2; Celeritas 6.2",
    .place = place_m_etf,
};
