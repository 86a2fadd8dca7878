/*
 * list_schedule.c - priority list scheduling of a fixed placement: the
 * per-device execution orders of opplace/list_schedule.h.
 *
 * Not from one of the papers: the classic list scheduler (HEFT's upward
 * rank, Topcuoglu et al. 2002, applied to a placement already made) run
 * on the simulator's model of formats.md section 5.  It IS the simulator
 * (src/sim/simulate.c), with sim_set_dispatch replacing rule 2: a free
 * device starts its ready op of highest priority (ties: ready earlier, then
 * smaller index) instead of the first-ready one, and the start sequence is
 * the order in which the ops started, which makes it topological.
 *
 * The simulator keeps the memory of rule 5, so an optional per-device cap
 * can steer the choice: a free device starts the highest-priority ready
 * op whose output and scratch fit under its cap, or, when none fits, the
 * one that adds least once finished.  Critical-path-first orders run ahead
 * and can hold more tensors at once than first-ready-first (on the RNN
 * models of bench/trinity.sh, up to +37 % peak memory), hence the cap.
 *
 * Assumes a valid problem and a device_of whose every op is eligible on
 * its device (checked).  Colocation is not looked at: the placement is
 * fixed, only the order within each device is chosen.
 */
#include <stdlib.h>
#include <string.h>

#include "opplace/list_schedule.h"
#include "core/orders.h"
#include "sim/sim_internal.h"

const char *op_priority_name(op_priority k)
{
    switch (k) {
    case OP_PRIORITY_FIFO: return "fifo";
    case OP_PRIORITY_BLEVEL: return "blevel";
    case OP_PRIORITY_CPATH: return "cpath";
    case OP_PRIORITY_BLEVEL_W: return "blevel-w";
    default: return NULL;
    }
}

/* ------------------------------------------------------------ priorities */

struct op_priority_ws {
    const op_problem *p;
    op_levels lv; /* w and c: the placement's costs; the levels from them */
};

op_priority_ws *op_priority_ws_new(const op_problem *p, op_error *err)
{
    op_priority_ws *ws = op_calloc(1, sizeof *ws, err);
    if (!ws)
        return NULL;
    ws->p = p;
    if (op_levels_alloc(&ws->lv, p->g, err)) {
        free(ws);
        return NULL;
    }
    return ws;
}

void op_priority_ws_free(op_priority_ws *ws)
{
    if (!ws)
        return;
    op_levels_destroy(&ws->lv);
    free(ws);
}

op_status op_placement_priorities_ws(op_priority_ws *ws, const int *device_of, op_priority k,
                                     double *prio, op_error *err)
{
    const op_problem *p = ws->p;
    const op_graph *g = p->g;
    if (k == OP_PRIORITY_FIFO) {
        memset(prio, 0, (size_t)p->n * sizeof *prio);
        return OP_OK;
    }
    if (!op_priority_name(k))
        return op_fail(err, OP_EINPUT, "unknown schedule priority %d", (int)k);
    op_levels *lv = &ws->lv;
    for (int i = 0; i < p->n; i++)
        lv->w[i] = op_exec_us(p, i, device_of[i]);
    for (int e = 0; e < g->n_edges; e++) {
        int s = device_of[g->edge_src[e]], d = device_of[g->edge_dst[e]];
        lv->c[e] = k != OP_PRIORITY_BLEVEL_W && s != d
                       ? op_cluster_transfer_us(p->c, s, d, g->edge_bytes[e])
                       : 0;
    }
    op_levels_compute(g, lv);
    const double *src = k == OP_PRIORITY_CPATH ? lv->cpath : lv->blevel;
    memcpy(prio, src, (size_t)p->n * sizeof *prio);
    return OP_OK;
}

op_status op_placement_priorities(const op_problem *p, const int *device_of, op_priority k,
                                  double *prio, op_error *err)
{
    if (k == OP_PRIORITY_FIFO) {
        memset(prio, 0, (size_t)p->n * sizeof *prio);
        return OP_OK;
    }
    op_priority_ws *ws = op_priority_ws_new(p, err);
    if (!ws)
        return OP_ENOMEM;
    op_status st = op_placement_priorities_ws(ws, device_of, k, prio, err);
    op_priority_ws_free(ws);
    return st;
}

/* ------------------------------------------------------- the list schedule */

void op_sim_dispatch_by_priority(op_sim *s, const double *prio, const int64_t *mem_cap)
{
    sim_set_dispatch(s, prio, prio ? mem_cap : NULL);
}

op_status op_order_list_schedule(const op_problem *p, const int *device_of, const double *prio,
                                 const int64_t *mem_cap, int *seq, double *makespan_us,
                                 op_error *err)
{
    op_placement pl = {.n_ops = p->n, .n_dev = p->nd, .device_of = (int *)device_of};
    op_sim_result r;
    op_sim *sim = op_sim_new(p, err);
    if (!sim)
        return OP_ENOMEM;
    op_status st = op_sim_result_init(&r, p, err);
    if (st) {
        op_sim_free(sim);
        return st;
    }
    sim_set_dispatch(sim, prio, mem_cap);
    if ((st = op_sim_run(sim, &pl, &r, NULL, err)))
        op_error_prefix(err, "list schedule: ");
    else if (sim->n_started != p->n)
        st = op_fail(err, OP_EINPUT, "list schedule: only %d of %d ops ran", sim->n_started,
                     p->n);
    if (!st) {
        memcpy(seq, sim->started, (size_t)p->n * sizeof *seq);
        if (makespan_us)
            *makespan_us = r.step_time_us;
    }
    op_sim_result_destroy(&r);
    op_sim_free(sim);
    return st;
}

op_status op_placement_order_by_priority(const op_problem *p, op_placement *pl, op_priority k,
                                         const int64_t *mem_cap, op_error *err)
{
    if (k == OP_PRIORITY_FIFO) {
        op_placement_drop_order(pl);
        return OP_OK;
    }
    double *prio = op_malloc(((size_t)p->n + 1) * sizeof *prio, err);
    int *seq = op_malloc(((size_t)p->n + 1) * sizeof *seq, err);
    op_status st = !prio || !seq ? OP_ENOMEM : OP_OK;
    if (!st)
        st = op_placement_priorities(p, pl->device_of, k, prio, err);
    if (!st)
        st = op_order_list_schedule(p, pl->device_of, prio, mem_cap, seq, NULL, err);
    if (!st)
        st = op_placement_set_order_from_sequence(pl, seq, err);
    free(prio);
    free(seq);
    return st;
}
