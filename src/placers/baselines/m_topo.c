/*
 * m_topo.c - Baechi's m-TOPO (Jeon et al., SoCC 2020, section 4.1; the
 * Celeritas paper, section 4.2, describes its order): walk the ops in a
 * BFS-like topological order (a FIFO queue of zero-indegree ops) and fill
 * the devices one after another, moving to the next device when the
 * current one has received its share.  The ops one op makes ready enter
 * the queue by op_rank_order (longest branch first), not in the file's op
 * order, so any op order of the file gives the same placement (Baechi's
 * order follows TensorFlow's edge insertion order).
 *
 * Share (memory, as in Baechi's "uniform" variant,
 * TopoUniformWithColocation; a fixed choice, formerly `--share`): total static
 * footprint (params + outputs + temporaries of every op) / devices (scaled
 * by each device's capacity) plus the largest single op's footprint; a
 * device takes the next op (its whole colocation group) while its load plus
 * the group's temporary maximum and params stays below the share, and its
 * load then grows by the group's static footprint, exactly Baechi's
 * bookkeeping.  (The share is a balance target, not the memory check.)  A device never takes more than
 * its capacity by placer_mem.h's liveness estimate, with the BFS order as
 * its timeline of slots.  When a graph has no memory at all, the share is
 * compute instead: total work scaled by device speed.
 *
 * Ops that may not run on the current device (kind, pin) go to the allowed
 * device with the most free memory without moving the fill pointer;
 * colocated ops follow their group's first member, and the group's whole
 * footprint is charged when it is first placed (Baechi charged only the
 * first member, Celeritas 6.5.2).  When the last device is full, ops go to
 * any device that still has room; none: the device with the most free
 * memory, and the simulator decides (OP_EINFEASIBLE only if it overflows
 * there too).  Placement only: the
 * simulator runs each device first-ready-first, and checks memory
 * (pmem_place_checked: when it runs out, m-TOPO fills again with a tighter
 * margin).
 */
#include <stdlib.h>
#include <string.h>

#include "placers/placer_mem.h"
#include "placers/baselines/baselines.h"
#include "placers/placer_util.h"

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Kahn's algorithm with a FIFO queue (BFS-like), as m-TOPO uses; the ops
 * that become ready together enter the queue in rank order (rank NULL: in
 * the graph file's order, Baechi's rule on a file). */
op_status m_topo_bfs_order(const op_graph *g, const int *rank, int *order, op_error *err)
{
    int n = g->n_ops;
    int *indeg = op_malloc((size_t)n * sizeof(int) + 1, err);
    int *by_rank = op_malloc((size_t)n * sizeof(int) + 1, err);
    if (!indeg || !by_rank) {
        free(indeg);
        free(by_rank);
        return OP_ENOMEM;
    }
    for (int v = 0; v < n; v++)
        by_rank[rank ? rank[v] : v] = v;
    int head = 0, tail = 0;
    for (int i = 0; i < n; i++) { /* the sources, in rank order */
        int v = by_rank[i];
        indeg[v] = g->pred_off[v + 1] - g->pred_off[v];
        if (!indeg[v])
            order[tail++] = v;
    }
    while (head < tail) {
        int v = order[head++], lo = tail;
        for (int k = g->succ_off[v]; k < g->succ_off[v + 1]; k++)
            if (--indeg[g->succ[k]] == 0)
                order[tail++] = rank ? rank[g->succ[k]] : g->succ[k];
        qsort(order + lo, (size_t)(tail - lo), sizeof *order, int_cmp);
        for (int i = lo; i < tail; i++)
            order[i] = by_rank[order[i]];
    }
    free(indeg);
    free(by_rank);
    return OP_OK;
}

typedef struct topo_fill {
    const op_problem *p;
    pmem mem;
    int *device_of, *group_device;
    double *limit;      /* per device: its share (bytes or microseconds) */
    double *load;       /* per device: what counts against the share */
    double *gcheck;     /* per group: max temp + params (Baechi's group_memory) */
    double *gload;      /* per group: params + outputs + temps of its members */
    int by_memory;
    int cur;            /* the device being filled */
    int fits;           /* 0 once an op went beyond the estimate */
} topo_fill;

static double op_bytes(const op_graph *g, int v)
{
    return (double)(g->param_bytes[v] + g->output_bytes[v] + g->temp_bytes[v]);
}

/* Does v (its group, when it is the first member placed) still fit in the
 * share of d?  Baechi: used + temp_max + persistent_sum < share. */
static int within_share(const topo_fill *f, int v, int d)
{
    const op_graph *g = f->p->g;
    if (!f->by_memory)
        return f->load[d] + op_exec_us(f->p, v, d) <= f->limit[d];
    int grp = f->p->group_of[v];
    double need = grp != OP_NONE ? f->gcheck[grp]
                                 : (double)(g->temp_bytes[v] + g->param_bytes[v]);
    return f->load[d] + need < f->limit[d];
}

/* What placing v on d adds to its load (call before recording the group's
 * device): a group's whole static footprint when its first member lands. */
static double share_load(const topo_fill *f, int v, int d)
{
    if (!f->by_memory)
        return op_exec_us(f->p, v, d);
    int grp = f->p->group_of[v];
    if (grp == OP_NONE)
        return op_bytes(f->p->g, v);
    return f->group_device[grp] < 0 ? f->gload[grp] : 0;
}

static void set_limits(topo_fill *f)
{
    const op_problem *p = f->p;
    double total_mem = 0, max_op = 0, total_cap = 0;
    for (int k = 0; k < p->n_groups; k++)
        f->gcheck[k] = f->gload[k] = 0;
    for (int i = 0; i < p->n; i++) {
        double m = op_bytes(p->g, i);
        int grp = p->group_of[i];
        if (grp != OP_NONE) {
            f->gload[grp] += m;
            f->gcheck[grp] += (double)p->g->param_bytes[i];
        }
        total_mem += m;
        if (m > max_op)
            max_op = m;
    }
    for (int d = 0; d < p->nd; d++)
        total_cap += (double)p->c->dev[d].memory_bytes;
    /* + the group's largest temporary (Baechi's temp_memory_max) */
    for (int k = 0; k < p->n_groups; k++) {
        int64_t mx = 0;
        for (int j = p->group_off[k]; j < p->group_off[k + 1]; j++)
            if (p->g->temp_bytes[p->group_ops[j]] > mx)
                mx = p->g->temp_bytes[p->group_ops[j]];
        f->gcheck[k] += (double)mx;
    }
    if (total_mem <= 0)
        f->by_memory = 0;
    for (int d = 0; d < p->nd; d++) {
        if (f->by_memory)
            f->limit[d] = total_mem * (double)p->c->dev[d].memory_bytes / total_cap + max_op;
        else
            f->limit[d] = p->total_work_us / p->total_speed * p->c->dev[d].speed;
    }
}

/* Device for v: the fill pointer when allowed and within its share,
 * advancing the pointer as Baechi does; -1 if no device has room. */
static int choose_device(topo_fill *f, int v)
{
    const op_problem *p = f->p;
    int forced = placer_forced_device(p, f->group_device, v);
    if (forced >= 0)
        return forced; /* colocated: already charged with the group */
    if (!placer_allowed(p, f->group_device, v, f->cur)) {
        int best = -1;
        for (int d = 0; d < p->nd; d++)
            if (placer_allowed(p, f->group_device, v, d) && pmem_fits(&f->mem, v, d, f->device_of) &&
                (best < 0 || pmem_room(&f->mem, d) > pmem_room(&f->mem, best)))
                best = d;
        return best;
    }
    while (f->cur < p->nd - 1 &&
           (!within_share(f, v, f->cur) ||
            !pmem_fits(&f->mem, v, f->cur, f->device_of)))
        f->cur++;
    if (placer_allowed(p, f->group_device, v, f->cur) && pmem_fits(&f->mem, v, f->cur, f->device_of))
        return f->cur;
    for (int d = 0; d < p->nd; d++) /* the last device is full: any room left */
        if (placer_allowed(p, f->group_device, v, d) && pmem_fits(&f->mem, v, d, f->device_of))
            return d;
    return -1;
}

static op_status fill_devices(topo_fill *f, const int *order, op_error *err)
{
    const op_problem *p = f->p;
    for (int t = 0; t < p->n; t++) {
        int v = order[t];
        int d = choose_device(f, v);
        if (d < 0) {
            if (f->fits) /* the first refusal, for the message if the simulator agrees */
                op_fail(err, OP_EINFEASIBLE, "m-topo: op '%s' fits in the memory of no device "
                        "by the liveness estimate (placer_mem.h)", p->g->op_name[v]);
            f->fits = 0;
            for (int e = 0; e < p->nd; e++)
                if (placer_allowed(p, f->group_device, v, e) &&
                    (d < 0 || pmem_room(&f->mem, e) > pmem_room(&f->mem, d)))
                    d = e;
        }
        f->load[d] += share_load(f, v, d);
        pmem_commit(&f->mem, v, d, f->device_of);
        f->device_of[v] = d;
        if (p->group_of[v] != OP_NONE)
            f->group_device[p->group_of[v]] = d;
    }
    return OP_OK;
}

/* One fill under the given memory margins (arg unused). */
static op_status m_topo_attempt(const op_place_ctx *ctx, void *arg, const double *margin,
                                op_placement *out, int *fits, op_error *err)
{
    const op_problem *p = ctx->p;
    (void)arg;
    topo_fill f = {.p = p, .by_memory = 1, .fits = 1};
    int *order = op_malloc((size_t)p->n * sizeof(int) + 1, err);
    int *rank = op_malloc((size_t)p->n * sizeof(int) + 1, err);
    f.group_device = op_malloc((size_t)p->n_groups * sizeof(int) + 1, err);
    f.limit = op_malloc((size_t)p->nd * sizeof(double), err);
    f.load = op_calloc((size_t)p->nd, sizeof(double), err);
    f.gcheck = op_malloc((size_t)p->n_groups * sizeof(double) + 1, err);
    f.gload = op_malloc((size_t)p->n_groups * sizeof(double) + 1, err);
    op_status st = OP_ENOMEM;
    if (order && rank && f.group_device && f.limit && f.load && f.gcheck && f.gload &&
        !op_rank_order(p, OP_RANK_LONGEST_FIRST, rank, err) && !m_topo_bfs_order(p->g, rank, order, err) &&
        !pmem_init(&f.mem, p, order, margin, err)) {
        f.device_of = out->device_of;
        for (int i = 0; i < p->n; i++)
            f.device_of[i] = -1;
        for (int k = 0; k < p->n_groups; k++)
            f.group_device[k] = -1;
        set_limits(&f);
        st = fill_devices(&f, order, err);
        *fits = f.fits;
        pmem_destroy(&f.mem);
    }
    free(order);
    free(rank);
    free(f.group_device);
    free(f.limit);
    free(f.load);
    free(f.gcheck);
    free(f.gload);
    return st;
}

static op_status place_m_topo(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    return pmem_place_checked(ctx, "m-topo", m_topo_attempt, NULL, out, err);
}

const op_placer op_placer_m_topo = {
    .name = "m-topo",
    .summary = "Baechi m-TOPO: fill devices in BFS topological order up to an even memory share",
    .source = "Baechi (SoCC 2020) section 4.1; Celeritas 4.2",
    .place = place_m_topo,
};
