/*
 * trinity_reward.c - the MDPE reward of Trinity (the Trinity paper,
 * section 3, eq. 8) from one simulator run:
 *
 *   R = -ln( alpha * step / LB  +  beta * q_comm  +  gamma * q_mem )
 *
 * f (the runtime) is the simulated step time (formats.md section 5) divided
 * by the problem's lower bound, so rewards of graphs of any scale compare.
 * q are the penalties of eqs. 6-7 for exceeding the user's tolerances:
 * q_x = 0 while the peak x over devices stays within the tolerance, and
 * 1 + (x - tol) / tol above it (a step, so that any excess costs at least
 * as much as a 2x slower step at the default weights, plus a slope).
 *   communication: a device's load is the bytes carried by every channel
 *     one of its links uses (r->chan_bytes), i.e. sent + received when each
 *     ordered pair has its own channel; tolerance C^ = max_comm_bytes;
 *   memory: the simulated peak memory of each device, against
 *     min(M^, the device's memory_bytes), so running out of memory is
 *     always penalised.
 * Weights: section 5.2 lists alpha = 0.5, beta = 0.3, gamma = 0.2 while
 * eq. 8 has one penalty function q with weight beta; we read beta as the
 * communication weight and gamma as the memory weight.  C^ = M^ = 8 (GB
 * in the paper's units), i.e. 8 GiB by default; with a reference placement
 * the trainer replaces them by the reference's peaks (trinity_warm.c).
 *
 * Beyond the paper, the placement kept and returned is chosen by a
 * constrained order (trinity_metrics_better, placers/trinity/trinity.h): fastest
 * among the placements within both tolerances, not highest reward.  The
 * reward trades a slower step against a smaller excess, so its maximum can
 * lie outside the tolerances the user asked for; the order cannot.
 *
 * Also beyond the paper: trinity_reward_order_parse names the schedule a
 * rollout's step time and memory come from (trinity_train.c): the
 * simulator's first-ready-first ("none", the paper) or a priority list
 * schedule of opplace/list_schedule.h ("blevel", "cpath", "blevel-w"), or
 * "auto" (the best of these for the reference).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/list_schedule.h"
#include "opplace/placer.h"
#include "opplace/search.h"
#include "placers/trinity/trinity_internal.h"

trinity_reward_config trinity_reward_defaults(void)
{
    double gib = 1024.0 * 1024.0 * 1024.0;
    return (trinity_reward_config){.alpha = 0.5, .beta = 0.3, .gamma = 0.2,
                                   .max_comm_bytes = 8 * gib, .max_mem_bytes = 8 * gib};
}

/* Bytes carried by the channels that device d's links use. */
static int64_t device_load(const op_cluster *c, const op_sim_result *r, int d)
{
    int nd = c->n_dev;
    int64_t load = 0;
    for (int ch = 0; ch < r->n_chan; ch++) {
        int touches = 0;
        for (int o = 0; o < nd && !touches; o++)
            touches = o != d && (op_cluster_chan(c, d, o) == ch || op_cluster_chan(c, o, d) == ch);
        if (touches)
            load += r->chan_bytes[ch];
    }
    return load;
}

void trinity_comm_load(const op_problem *p, const op_sim_result *r, int64_t *per_device)
{
    for (int d = 0; d < p->c->n_dev; d++)
        per_device[d] = device_load(p->c, r, d);
}

static double excess(double x, double tol)
{
    if (!(tol > 0))
        return x > 0 ? 1.0 : 0.0;
    return x > tol ? 1.0 + (x - tol) / tol : 0.0;
}

trinity_metrics trinity_measure(const op_problem *p, const op_sim_result *r,
                                const trinity_reward_config *rc)
{
    trinity_metrics m = {.step_us = r->step_time_us, .oom = r->oom};
    int nd = p->nd;
    double q_mem = 0.0, q_comm = 0.0;
    for (int d = 0; d < nd; d++) {
        double tol = fmin(rc->max_mem_bytes, (double)p->c->dev[d].memory_bytes);
        q_mem = fmax(q_mem, excess((double)r->peak_mem[d], tol));
        if (r->peak_mem[d] > m.peak_mem)
            m.peak_mem = r->peak_mem[d];
    }
    for (int d = 0; d < nd; d++) {
        int64_t load = device_load(p->c, r, d);
        if (load > m.peak_comm)
            m.peak_comm = load;
    }
    q_comm = excess((double)m.peak_comm, rc->max_comm_bytes);
    double lb = p->lower_bound_us > 0 ? p->lower_bound_us : 1.0;
    double f = isfinite(r->step_time_us) ? r->step_time_us / lb : 1e6;
    double cost = rc->alpha * f + rc->beta * q_comm + rc->gamma * q_mem;
    m.reward = -log(fmax(cost, 1e-12));
    return m;
}

/* ----------------------------------------------------- constrained order */

int trinity_within_tolerances(const trinity_metrics *m, const trinity_reward_config *rc)
{
    return (double)m->peak_comm <= rc->max_comm_bytes && (double)m->peak_mem <= rc->max_mem_bytes;
}

static op_judged judged_of(const trinity_metrics *m)
{
    return (op_judged){.over = m->oom, .step = m->step_us, .peak = m->peak_mem,
                       .comm = m->peak_comm, .reward = m->reward};
}

/* The search layer's comparator with Trinity's tolerances (opplace/search.h). */
int trinity_metrics_better(const trinity_metrics *a, const trinity_metrics *b,
                           const trinity_reward_config *rc)
{
    op_judged ja = judged_of(a), jb = judged_of(b);
    op_tolerance tol = {rc->max_comm_bytes, rc->max_mem_bytes};
    return op_judged_before(&ja, &jb, &tol);
}

/* ------------------------------------------- the schedule a rollout is judged by */

int trinity_reward_order_parse(const char *name)
{
    if (!strcmp(name, "none") || !strcmp(name, "fifo"))
        return OP_PRIORITY_FIFO;
    if (!strcmp(name, "auto"))
        return TRINITY_REWARD_ORDER_AUTO;
    for (int k = OP_PRIORITY_FIFO + 1; k < OP_PRIORITY_COUNT; k++)
        if (!strcmp(name, op_priority_name((op_priority)k)))
            return k;
    return -2;
}

const char *trinity_reward_order_name(int order)
{
    if (order == TRINITY_REWARD_ORDER_AUTO)
        return "auto";
    if (order == OP_PRIORITY_FIFO)
        return "none";
    const char *s = order > 0 && order < OP_PRIORITY_COUNT ? op_priority_name((op_priority)order)
                                                           : NULL;
    return s ? s : "?";
}

/* ------------------------------------------------------------ the judge */

op_status trinity_judge(const op_problem *p, op_sim *sim, const op_placement *pl,
                        op_sim_result *r, const double *prio, const int64_t *cap,
                        const trinity_reward_config *rc, trinity_metrics *m, op_error *err)
{
    if (prio)
        op_sim_dispatch_by_priority(sim, prio, cap);
    op_status st = op_sim_run(sim, pl, r, NULL, err);
    if (prio)
        op_sim_dispatch_by_priority(sim, NULL, NULL);
    if (!st)
        *m = trinity_measure(p, r, rc);
    return st;
}

op_status trinity_order_judge_visit(void *arg, op_priority k, double share, const int64_t *cap,
                                    int *stop, op_error *err)
{
    trinity_order_judge *j = arg;
    op_status st;
    (void)stop;
    if (k != OP_PRIORITY_FIFO && j->prio_of != (int)k &&
        (st = op_placement_priorities(j->p, j->pl->device_of, k, j->prio, err)))
        return st;
    if (k != OP_PRIORITY_FIFO)
        j->prio_of = (int)k;
    trinity_metrics m;
    if ((st = trinity_judge(j->p, j->sim, j->pl, j->r, k != OP_PRIORITY_FIFO ? j->prio : NULL,
                            cap, j->rc, &m, err)))
        return st;
    j->keep(j->arg, k, share, &m);
    if (stop && ((j->deadline > 0 && op_seconds_now() > j->deadline) || op_interrupted()))
        *stop = 1;
    return OP_OK;
}

op_status trinity_bench_init(trinity_bench *b, const op_problem *p, op_error *err)
{
    memset(b, 0, sizeof *b);
    b->prio = op_malloc((size_t)p->n * sizeof(double) + 1, err);
    b->cap = op_malloc(((size_t)p->nd + 1) * sizeof(int64_t), err);
    if (!b->prio || !b->cap)
        return OP_ENOMEM;
    if (!(b->sim = op_sim_new(p, err)))
        return err && err->code ? err->code : OP_ENOMEM;
    op_status st = op_sim_result_init(&b->r, p, err);
    b->have_r = !st;
    if (!st && !(st = op_placement_init(&b->pl, p->n, p->nd, err)))
        b->have_pl = 1;
    return st;
}

void trinity_bench_destroy(trinity_bench *b)
{
    if (b->have_pl)
        op_placement_destroy(&b->pl);
    if (b->have_r)
        op_sim_result_destroy(&b->r);
    op_sim_free(b->sim);
    free(b->prio);
    free(b->cap);
    memset(b, 0, sizeof *b);
}
