/*
 * celeritas_pool.c - the few best placements of the Celeritas search, kept
 * (device_of only) so that per-device orders can be tried on them once the
 * search is over (celeritas.c, try_orders).
 *
 * Why not only the winner: the search ranks candidates by their simulated
 * step under the simulator's first-ready-first order, but the candidate
 * that is best once given a critical-path order is often not the one that
 * was best without (zoo transformer_xl on 4 x v100-nvlink: the FIFO winner,
 * 152.8 ms, gains 10 % with an order; the fifth, 161.2 ms, gains 18 %).
 *
 * Entries are ranked as every placer ranks simulated placements
 * (op_sim_ranks_before: fits first, then the smaller overflow, then the
 * shorter step); a placement already held is not added twice.
 */
#include <stdlib.h>
#include <string.h>

#include "opplace/simulate.h"
#include "placers/celeritas/celeritas_place.h"

op_status cel_pool_init(cel_pool *pool, int cap, int n, op_error *err)
{
    memset(pool, 0, sizeof *pool);
    pool->cap = cap;
    pool->n = n;
    size_t k = (size_t)(cap > 0 ? cap : 1);
    /* cap rows and a spare one for move_entry */
    pool->device_of = op_malloc(((k + 1) * (size_t)n + 1) * sizeof *pool->device_of, err);
    pool->overflow = op_malloc(k * sizeof *pool->overflow, err);
    pool->step_us = op_malloc(k * sizeof *pool->step_us, err);
    pool->n_fallback = op_malloc(k * sizeof *pool->n_fallback, err);
    return pool->device_of && pool->overflow && pool->step_us && pool->n_fallback ? OP_OK
                                                                                 : OP_ENOMEM;
}

void cel_pool_destroy(cel_pool *pool)
{
    free(pool->device_of);
    free(pool->overflow);
    free(pool->step_us);
    free(pool->n_fallback);
    memset(pool, 0, sizeof *pool);
}

const int *cel_pool_entry(const cel_pool *pool, int k)
{
    return pool->device_of + (size_t)k * (size_t)pool->n;
}

static int holds(const cel_pool *pool, const int *device_of)
{
    for (int k = 0; k < pool->len; k++)
        if (!memcmp(cel_pool_entry(pool, k), device_of, (size_t)pool->n * sizeof *device_of))
            return 1;
    return 0;
}

/* Move entry `from` to slot `to` (to <= from), shifting the ones between. */
static void move_entry(cel_pool *pool, int from, int to)
{
    size_t n = (size_t)pool->n;
    int *tmp = pool->device_of + (size_t)pool->cap * n; /* the spare row */
    memcpy(tmp, cel_pool_entry(pool, from), n * sizeof *tmp);
    double over = pool->overflow[from], step = pool->step_us[from];
    int fb = pool->n_fallback[from];
    for (int k = from; k > to; k--) {
        memcpy(pool->device_of + (size_t)k * n, cel_pool_entry(pool, k - 1), n * sizeof *tmp);
        pool->overflow[k] = pool->overflow[k - 1];
        pool->step_us[k] = pool->step_us[k - 1];
        pool->n_fallback[k] = pool->n_fallback[k - 1];
    }
    memcpy(pool->device_of + (size_t)to * n, tmp, n * sizeof *tmp);
    pool->overflow[to] = over;
    pool->step_us[to] = step;
    pool->n_fallback[to] = fb;
}

void cel_pool_offer(cel_pool *pool, const int *device_of, double overflow, double step_us,
                    int n_fallback)
{
    if (pool->cap <= 0 || holds(pool, device_of))
        return;
    int last = pool->len < pool->cap ? pool->len : pool->cap - 1;
    if (pool->len == pool->cap &&
        !op_sim_ranks_before(overflow, step_us, pool->overflow[last], pool->step_us[last]))
        return;
    memcpy(pool->device_of + (size_t)last * (size_t)pool->n, device_of,
           (size_t)pool->n * sizeof *device_of);
    pool->overflow[last] = overflow;
    pool->step_us[last] = step_us;
    pool->n_fallback[last] = n_fallback;
    if (pool->len < pool->cap)
        pool->len++;
    int to = last;
    while (to > 0 &&
           op_sim_ranks_before(overflow, step_us, pool->overflow[to - 1], pool->step_us[to - 1]))
        to--;
    move_entry(pool, last, to);
}
