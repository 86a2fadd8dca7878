/*
 * sgdp_search.c - policy-guided zero-shot search (BEYOND THE PAPER): a
 * steepest descent over single-decision moves, ordered by the
 * trained policy's own ranking.
 *
 * The paper's zero-shot placement "directly runs inference".  Measured on
 * a held-out family (bench/RESULTS.md, SGDP), what the trained
 * policy transfers is a RANKING of moves off its input: the log-odds of
 * moving a decision unit off the input place improving moves first (AUC
 * 0.74 on transformer_xl, against 0.41 for an untrained policy), while
 * sampling from it, even calibrated, uses that ranking only weakly.  This
 * search uses it directly.  Each round:
 *   1. one forward pass of the policy whose input is the incumbent (the
 *      reference placement at first, with its queueing delays);
 *   2. the top_k decisions by log-odds of moving, log P(other devices) -
 *      log P(input device), skipping those marked "don't look", each moved
 *      alone to the policy's most likely other device, plus `samples`
 *      calibrated samples (the sampling of sgdp_trainer_evaluate: about
 *      proposal_moves decisions moved per sample), all simulated in
 *      parallel;
 *   3. the best of them replaces the incumbent when it is better (no OOM
 *      first, then the shorter step), then the other improving single moves
 *      are applied on top of it one by one, best first, each kept only if
 *      the simulator says it still improves;
 *   4. single moves that did not improve are marked "don't look" (the
 *      don't-look bits of local search) until a unit next to them (an edge
 *      between the units) moves; the incumbent becomes the policy's input
 *      for the next round (features re-computed, queueing delays
 *      re-simulated).
 * At a local optimum (every decision marked "don't look") the round is a
 * kick instead when kick_samples > 0: the best of kick_samples calibrated
 * samples (about proposal_moves decisions moved, chosen by the policy)
 * that differs from the incumbent becomes the incumbent even if it is
 * worse, which wakes its neighbours,
 * and the descent resumes (iterated local search).  It stops after
 * `rounds` rounds, or earlier when there is nothing left to evaluate.  The
 * input seeds the best-seen record, which only ever improves and is what
 * is returned, so the result is never worse than the input; every placement is
 * a move within the action mask (a unit's devices are the intersection of
 * its members' eligible devices, colocation groups lie inside units, and
 * followers copy their unit's decision).  Deterministic for a seed: the
 * ranking is sorted with ties broken by row, samples draw from generators
 * derived from the trainer's, and each simulation writes its own entry.
 * Cost per round: one forward pass, top_k + samples (or kick_samples)
 * simulations, at most top_k more for the compounding, and one traced
 * simulation.  After a kick the trainer's input may be worse than its
 * best-seen record (nothing reads it after the search).
 *
 * It needs a reference input (heuristics); without one it falls back to
 * sgdp_trainer_evaluate's sampling rounds.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "placers/sgdp/sgdp.h"
#include "sgdp_internal.h"

typedef struct ranked {
    double score; /* log-odds of moving */
    int row, dev;
} ranked;

typedef struct search {
    sgdp_trainer *t;
    sgdp_task *tk;
    sgdp_slot *s;
    int n, D;
    int *cur;                 /* the incumbent, per row */
    double cur_time;
    int cur_oom;
    unsigned char *dont_look; /* per decision row */
    int *mem_off, *mem;       /* CSR: rows of each decision row's unit */
    ranked *all;              /* n: candidate scratch */
    int n_single, n_total;    /* this round: single moves, then samples */
    const nn_tensor *acting;  /* calibrated distribution for the samples */
} search;

sgdp_search_config sgdp_search_defaults(void)
{
    return (sgdp_search_config){.rounds = SGDP_DEFAULT_SEARCH_ROUNDS,
                                .top_k = SGDP_DEFAULT_TOP_K,
                                .samples = SGDP_DEFAULT_SEARCH_SAMPLES,
                                .kick_samples = SGDP_DEFAULT_KICK_SAMPLES};
}

static void search_free(search *z)
{
    free(z->cur), free(z->dont_look), free(z->mem_off), free(z->mem), free(z->all);
}

/* Members of every decision row's unit (the row itself first). */
static op_status unit_members(search *z, op_error *err)
{
    const sgdp_graph *sg = &z->tk->sg;
    int n = z->n;
    if (!(z->mem_off = op_calloc((size_t)n + 1, sizeof *z->mem_off, err)) ||
        !(z->mem = op_malloc((size_t)n * sizeof *z->mem, err)))
        return OP_ENOMEM;
    for (int r = 0; r < n; r++)
        z->mem_off[(sg->leader[r] >= 0 ? sg->leader[r] : r) + 1]++;
    for (int r = 0; r < n; r++)
        z->mem_off[r + 1] += z->mem_off[r];
    int *fill = (int *)z->all; /* n ints of scratch (z->all holds n ranked) */
    for (int r = 0; r < n; r++)
        fill[r] = z->mem_off[r];
    for (int r = 0; r < n; r++) /* rows ascending: the leader (first row) first */
        z->mem[fill[sg->leader[r] >= 0 ? sg->leader[r] : r]++] = r;
    return OP_OK;
}

static op_status search_init(search *z, sgdp_trainer *t, int i, op_error *err)
{
    memset(z, 0, sizeof *z);
    z->t = t;
    z->tk = &t->tasks[i];
    z->s = &t->slots[0];
    z->n = z->tk->sg.n;
    z->D = z->tk->sg.max_devices;
    size_t n = (size_t)z->n;
    if (!(z->cur = op_malloc(n * sizeof *z->cur, err)) ||
        !(z->dont_look = op_calloc(n, 1, err)) || !(z->all = op_malloc(n * sizeof *z->all, err)))
        return OP_ENOMEM;
    memcpy(z->cur, z->tk->ref_row, n * sizeof *z->cur);
    z->cur_time = z->tk->input_time;
    z->cur_oom = z->tk->input_oom;
    return unit_members(z, err);
}

/* row_dev with decision row r's unit moved to device d. */
static void apply_move(const search *z, int *row_dev, int r, int d)
{
    for (int k = z->mem_off[r]; k < z->mem_off[r + 1]; k++)
        row_dev[z->mem[k]] = d;
}

static void to_placement(const sgdp_graph *sg, const int *row_dev, int *device_of)
{
    for (int t = 0; t < sg->n; t++)
        device_of[sg->p->g->topo[t]] = row_dev[t];
}

static int by_score(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->row - y->row;
}

/* The decisions worth trying, most likely to move first; returns how many
 * (at most top_k), in z->all. */
static int rank_moves(search *z, const nn_tensor *raw, int top_k)
{
    const sgdp_graph *sg = &z->tk->sg;
    int m = 0, D = z->D;
    for (int r = 0; r < z->n; r++) {
        if (!sg->decides[r] || z->dont_look[r])
            continue;
        int ref = z->cur[r], best = -1;
        double mx = -INFINITY, sum = 0.0;
        for (int d = 0; d < D; d++)
            if (d != ref && sg->mask[(size_t)r * D + d] && NN_AT(raw, r, d) > mx)
                mx = NN_AT(raw, r, d), best = d;
        if (best < 0 || mx == -INFINITY)
            continue; /* nowhere else to go */
        for (int d = 0; d < D; d++)
            if (d != ref && sg->mask[(size_t)r * D + d])
                sum += exp(NN_AT(raw, r, d) - mx);
        z->all[m++] = (ranked){.score = mx + log(sum) - NN_AT(raw, r, ref), .row = r, .dev = best};
    }
    qsort(z->all, (size_t)m, sizeof *z->all, by_score);
    return m < top_k ? m : top_k;
}

/* Candidate k on worker w: single move k, or a calibrated sample. */
static op_status run_candidate(void *arg, int w, int k, op_error *err)
{
    search *z = arg;
    sgdp_task *tk = z->tk;
    sgdp_slot *s = z->s;
    op_placement *pl = &tk->sim.pls[w];
    int *row_dev = s->actions + (size_t)k * (size_t)z->n;
    if (k < z->n_single) {
        memcpy(row_dev, z->cur, (size_t)z->n * sizeof *row_dev);
        apply_move(z, row_dev, z->all[k].row, z->all[k].dev);
        to_placement(&tk->sg, row_dev, pl->device_of);
    } else {
        nn_rng tmp = s->base, rng = nn_rng_fork(&tmp, (uint64_t)k);
        sgdp_sample(&tk->sg, z->acting, &rng, 0, row_dev, pl->device_of);
    }
    op_status st = op_sim_run(tk->sim.sims[w], pl, &tk->sim.res[w], NULL, err);
    if (!st) {
        s->step[k] = tk->sim.res[w].step_time_us;
        s->oom[k] = tk->sim.res[w].oom;
    }
    return st;
}

/* Clear the don't-look bits of every unit with an edge to row r's unit. */
static void wake_neighbours(search *z, int r)
{
    const sgdp_graph *sg = &z->tk->sg;
    const op_graph *g = sg->p->g;
    for (int k = z->mem_off[r]; k < z->mem_off[r + 1]; k++) {
        int op = g->topo[z->mem[k]];
        for (int pass = 0; pass < 2; pass++) {
            const int *off = pass ? g->pred_off : g->succ_off, *adj = pass ? g->pred : g->succ;
            for (int e = off[op]; e < off[op + 1]; e++) {
                int row = g->topo_pos[adj[e]];
                z->dont_look[sg->leader[row] >= 0 ? sg->leader[row] : row] = 0;
            }
        }
    }
    z->dont_look[r] = 0;
}

/* The incumbent becomes row_dev (better than it); wakes the moved units'
 * neighbours. */
static void accept(search *z, const int *row_dev, double time, int oom)
{
    const sgdp_graph *sg = &z->tk->sg;
    for (int r = 0; r < z->n; r++)
        if (sg->decides[r] && row_dev[r] != z->cur[r])
            wake_neighbours(z, r);
    memcpy(z->cur, row_dev, (size_t)z->n * sizeof *z->cur);
    z->cur_time = time;
    z->cur_oom = oom;
}

/* The single moves other than `skip` that improved on the round's
 * incumbent (old_oom, old_time), best first, on top of the new incumbent,
 * one simulation each (worker 0's simulator). */
static op_status compound(search *z, int skip, int old_oom, double old_time, op_error *err)
{
    sgdp_task *tk = z->tk;
    sgdp_slot *s = z->s;
    int *order = op_malloc((size_t)z->n_single * sizeof *order + 1, err), m = 0;
    int *trial = order ? op_malloc((size_t)z->n * sizeof *trial, err) : NULL;
    op_status st = OP_OK;
    if (!order || !trial) {
        st = OP_ENOMEM;
        goto done;
    }
    for (int k = 0; k < z->n_single; k++)
        if (k != skip && sgdp_tr_better(s->oom[k], s->step[k], old_oom, old_time))
            order[m++] = k;
    for (int a = 1; a < m; a++) /* insertion sort by step, then index: stable */
        for (int b = a; b > 0 && s->step[order[b]] < s->step[order[b - 1]]; b--) {
            int x = order[b];
            order[b] = order[b - 1], order[b - 1] = x;
        }
    for (int a = 0; !st && a < m; a++) {
        const ranked *mv = &z->all[order[a]];
        if (z->cur[mv->row] == mv->dev)
            continue;
        memcpy(trial, z->cur, (size_t)z->n * sizeof *trial);
        apply_move(z, trial, mv->row, mv->dev);
        to_placement(&tk->sg, trial, tk->sim.pls[0].device_of);
        st = op_sim_run(tk->sim.sims[0], &tk->sim.pls[0], &tk->sim.res[0], NULL, err);
        z->t->stats.rollouts++;
        if (!st && sgdp_tr_better(tk->sim.res[0].oom, tk->sim.res[0].step_time_us, z->cur_oom,
                                  z->cur_time))
            accept(z, trial, tk->sim.res[0].step_time_us, tk->sim.res[0].oom);
    }
done:
    free(order);
    free(trial);
    return st;
}

/* The incumbent into the best-seen record (when better) and, better or
 * not (after a kick), into the policy's input for the next round. */
static op_status follow(search *z, op_error *err)
{
    sgdp_task *tk = z->tk;
    op_status st = sgdp_tr_keep_best(tk, z->cur_oom, z->cur_time, z->cur, err);
    if (st)
        return st;
    if (memcmp(tk->ref_row, z->cur, (size_t)z->n * sizeof *z->cur)) {
        memcpy(tk->ref_row, z->cur, (size_t)z->n * sizeof *z->cur);
        tk->input_time = z->cur_time;
        tk->input_oom = z->cur_oom;
        tk->timing_stale = 1;
    }
    return sgdp_tr_refresh(z->t, err);
}

/* One round; *idle = 1 when it had nothing to evaluate. */
static op_status round_once(search *z, const sgdp_search_config *sc, int *idle, op_error *err)
{
    sgdp_trainer *t = z->t;
    sgdp_task *tk = z->tk;
    sgdp_slot *s = z->s;
    nn_tensor raw, acting;
    s->base = nn_rng_fork(&t->c.rng, 0);
    nn_arena_reset(&t->c.ar);
    op_status st = sgdp_policy_forward(t->pol, &t->c.ar, &tk->sg, &raw, NULL, err);
    if (st)
        return st;
    z->n_single = rank_moves(z, &raw, sc->top_k);
    int kick = z->n_single == 0 && sc->kick_samples > 0; /* at a local optimum */
    z->n_total = kick ? sc->kick_samples : z->n_single + (sc->samples > 0 ? sc->samples : 0);
    *idle = z->n_total == 0;
    if (*idle)
        return OP_OK;
    if (z->n_total > z->n_single && (st = sgdp_tr_acting(t, tk, s, &raw, &acting, err)))
        return st;
    z->acting = &acting;
    if ((st = sgdp_tr_capacity(t, z->n_total, err)) ||
        (st = rl_run_rollouts(t->c.threads, z->n_total, run_candidate, z, &t->stats.sim_seconds,
                              err)))
        return st;
    t->stats.rollouts += z->n_total;
    int best = -1;
    for (int k = 0; k < z->n_total; k++)
        if (best < 0 || sgdp_tr_better(s->oom[k], s->step[k], s->oom[best], s->step[best]))
            best = k;
    if (kick) { /* the best sample that moves something, better or not */
        int to = -1;
        for (int k = 0; k < z->n_total; k++)
            if (memcmp(s->actions + (size_t)k * (size_t)z->n, z->cur,
                       (size_t)z->n * sizeof *z->cur) &&
                (to < 0 || sgdp_tr_better(s->oom[k], s->step[k], s->oom[to], s->step[to])))
                to = k;
        if (to < 0)
            return OP_OK; /* every sample was the incumbent: try again next round */
        op_progress(t->cfg.progress, "sgdp: search: local optimum %.1f us, kick to %.1f us",
                    z->cur_time, s->step[to]);
        accept(z, s->actions + (size_t)to * (size_t)z->n, s->step[to], s->oom[to]);
        return follow(z, err);
    }
    int improving = 0;
    for (int k = 0; k < z->n_single; k++)
        if (!sgdp_tr_better(s->oom[k], s->step[k], z->cur_oom, z->cur_time))
            z->dont_look[z->all[k].row] = 1;
        else
            improving++;
    op_progress(t->cfg.progress,
                "sgdp: search: %d of %d single moves improve %.1f us; best candidate %d (%s) "
                "%.1f us",
                improving, z->n_single, z->cur_time, best, best < z->n_single ? "move" : "sample",
                s->step[best]);
    if (!sgdp_tr_better(s->oom[best], s->step[best], z->cur_oom, z->cur_time))
        return OP_OK;
    int old_oom = z->cur_oom;
    double old_time = z->cur_time;
    accept(z, s->actions + (size_t)best * (size_t)z->n, s->step[best], s->oom[best]);
    if ((st = compound(z, best, old_oom, old_time, err)))
        return st;
    return follow(z, err);
}

op_status sgdp_trainer_search(sgdp_trainer *t, int i, const sgdp_search_config *sc,
                              op_error *err)
{
    if (i < 0 || i >= t->n_tasks || sc->rounds < 0 || sc->top_k < 0 || sc->samples < 0 ||
        sc->kick_samples < 0)
        return op_fail(err, OP_EINTERNAL, "sgdp: bad search request");
    sgdp_task *tk = &t->tasks[i];
    op_status st = OP_OK;
    if (!tk->have_ref) {
        for (int r = 0; !st && r < sc->rounds && !sgdp_stopped(); r++)
            st = sgdp_trainer_evaluate(t, i, sc->samples, err);
        return st;
    }
    double t0 = rl_now_seconds();
    search z;
    st = search_init(&z, t, i, err);
    if (!st) /* the input seeds the best-seen record: never worse than it */
        st = sgdp_tr_keep_best(tk, z.cur_oom, z.cur_time, z.cur, err);
    double start_time = z.cur_time;
    int r = 0, idle = 0;
    /* done when proven: the best seen reaches the problem's bound */
    for (; !st && !idle && r < sc->rounds && !sgdp_trainer_proven(t, i) && !sgdp_stopped(); r++)
        st = round_once(&z, sc, &idle, err);
    st = sgdp_stop_ok(st, err);
    if (!st)
        op_progress(t->cfg.progress,
                    "sgdp: guided search, %d rounds: %.1f us -> %.1f us (top %d moves + %d "
                    "samples per round, kicks of %d samples)",
                    r - idle, start_time, tk->best_time, sc->top_k, sc->samples,
                    sc->kick_samples);
    search_free(&z);
    t->stats.seconds += rl_now_seconds() - t0;
    return st;
}
