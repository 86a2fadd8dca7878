/*
 * sgdp_rank.c - supervised move ranking for SGDP's policy-guided search
 * (BEYOND THE PAPER).
 *
 * The zero-shot search (sgdp_search.c) ranks single-unit moves by the
 * policy's log-odds of moving a decision off its input, score(r) =
 * log P(other devices) - log P(input device).  PPO trains the policy to
 * PLACE, not to rank moves, and measured on a held-out family the trained
 * ranking put no more improving moves in its top 64 than chance
 * (bench/RESULTS.md, SGDP).  This file trains that score
 * directly, with labels from the simulator:
 *   1. labels (sgdp_trainer_label_moves): for an input placement, every
 *      decision row that may move is moved alone (its whole unit) to each
 *      other device it may use and simulated (in parallel, on the trainer's
 *      simulators); a row's label keeps its best other device and whether
 *      that move improves the step (no OOM first, then shorter);
 *   2. states (rank_states per training problem): the heuristic reference
 *      (what zero-shot starts from), steepest-descent improvements of it
 *      (its improving moves applied best first, each kept only if it still
 *      improves: the kind of input the search's later rounds see), and a
 *      perturbed copy of the reference; each with its own queueing-delay
 *      features (one traced simulation); labelled once per training run;
 *   3. loss (sgdp_rank_loss): a pairwise logistic (RankNet) loss over the
 *      (improving, non-improving) pairs of one state, softplus(s_j - s_i),
 *      i.e. a smooth surrogate of 1 - AUC, invariant to a shift of every
 *      score (so the calibrated sampling, which removes such a shift, is
 *      untouched), plus, with more than two devices, the cross-entropy of
 *      the labelled device among the other devices (the search moves a
 *      unit to the policy's most likely other device);
 *   4. training (sgdp_rank_train, after PPO in sgdp_trainer_run): rank_steps
 *      Adam steps of rate rank_lr, one state per step drawn at random; half
 *      the steps see the state with its devices relabelled by a random
 *      permutation of interchangeable devices (labels relabelled with it:
 *      same step times), so the ranking must read the input, not the
 *      training family's device numbers.
 * Every MPI rank does the whole stage identically (same generators, same
 * labels), so ranks keep identical weights; the stage is not split.
 * Cost: (units x other devices + 1) simulations per state plus one per
 * tried descent move, and one forward and backward pass per step.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/options.h"
#include "placers/sgdp/sgdp.h"
#include "sgdp_internal.h"

#define RANK_STREAM ((uint64_t)3 << 40) /* never a rollout's or varied input's stream */
#define RANK_REPORT_EVERY 50

void sgdp_move_labels_free(sgdp_move_labels *l)
{
    free(l->row), free(l->dev), free(l->step), free(l->oom), free(l->improves);
    memset(l, 0, sizeof *l);
}

/* ------------------------------------------------------------- labels */

typedef struct label_job {
    sgdp_task *tk;
    const int *input;
    const int *mem_off, *mem; /* CSR: rows of each decision row's unit */
    const int *cand_row, *cand_dev;
    double *step;
    int *oom;
} label_job;

/* Rows of every decision row's unit (CSR by the deciding row). */
static op_status unit_members(const sgdp_graph *sg, int **off, int **mem, op_error *err)
{
    int n = sg->n;
    int *fill = NULL;
    if (!(*off = op_calloc((size_t)n + 1, sizeof **off, err)) ||
        !(*mem = op_malloc((size_t)n * sizeof **mem + 1, err)) ||
        !(fill = op_malloc((size_t)n * sizeof *fill + 1, err))) {
        free(fill);
        return OP_ENOMEM;
    }
    for (int r = 0; r < n; r++)
        (*off)[(sg->leader[r] >= 0 ? sg->leader[r] : r) + 1]++;
    for (int r = 0; r < n; r++)
        (*off)[r + 1] += (*off)[r];
    memcpy(fill, *off, (size_t)n * sizeof *fill);
    for (int r = 0; r < n; r++)
        (*mem)[fill[sg->leader[r] >= 0 ? sg->leader[r] : r]++] = r;
    free(fill);
    return OP_OK;
}

/* The input as a placement, with decision row r's unit on device d (r < 0:
 * the input itself). */
static void moved_placement(const sgdp_task *tk, const int *input, const int *mem_off,
                            const int *mem, int r, int d, int *device_of)
{
    const int *topo = tk->p->g->topo;
    for (int t = 0; t < tk->sg.n; t++)
        device_of[topo[t]] = input[t];
    for (int k = r >= 0 ? mem_off[r] : 0; r >= 0 && k < mem_off[r + 1]; k++)
        device_of[topo[mem[k]]] = d;
}

static op_status simulate_candidate(void *arg, int w, int k, op_error *err)
{
    label_job *j = arg;
    op_placement *pl = &j->tk->sim.pls[w];
    moved_placement(j->tk, j->input, j->mem_off, j->mem, j->cand_row[k], j->cand_dev[k],
                    pl->device_of);
    op_status st = op_sim_run(j->tk->sim.sims[w], pl, &j->tk->sim.res[w], NULL, err);
    if (!st) {
        j->step[k] = j->tk->sim.res[w].step_time_us;
        j->oom[k] = j->tk->sim.res[w].oom;
    }
    return st;
}

/* Every (row, other device) move of the input: the candidates' lists. */
static int list_candidates(const sgdp_graph *sg, const int *input, int *row, int *dev)
{
    int m = 0, D = sg->max_devices;
    for (int r = 0; r < sg->n; r++)
        for (int d = 0; sg->decides[r] && d < sg->nd; d++)
            if (d != input[r] && sg->mask[(size_t)r * D + d]) {
                if (row)
                    row[m] = r, dev[m] = d;
                m++;
            }
    return m;
}

/* One label per row from its candidates (consecutive in cand_row). */
static op_status collect_labels(const label_job *j, int m, sgdp_move_labels *out,
                                op_error *err)
{
    int rows = 0;
    for (int k = 0; k < m; k++)
        rows += k == 0 || j->cand_row[k] != j->cand_row[k - 1];
    size_t n = (size_t)rows + 1;
    if (!(out->row = op_malloc(n * sizeof *out->row, err)) ||
        !(out->dev = op_malloc(n * sizeof *out->dev, err)) ||
        !(out->step = op_malloc(n * sizeof *out->step, err)) ||
        !(out->oom = op_malloc(n * sizeof *out->oom, err)) ||
        !(out->improves = op_malloc(n, err)))
        return OP_ENOMEM;
    int c = -1;
    for (int k = 0; k < m; k++) {
        if (k == 0 || j->cand_row[k] != j->cand_row[k - 1]) {
            c++;
            out->row[c] = j->cand_row[k], out->dev[c] = j->cand_dev[k];
            out->step[c] = j->step[k], out->oom[c] = j->oom[k];
        } else if (sgdp_tr_better(j->oom[k], j->step[k], out->oom[c], out->step[c])) {
            out->dev[c] = j->cand_dev[k];
            out->step[c] = j->step[k], out->oom[c] = j->oom[k];
        }
    }
    out->n = rows;
    out->improving = 0;
    for (int k = 0; k < rows; k++) {
        out->improves[k] = (unsigned char)sgdp_tr_better(out->oom[k], out->step[k],
                                                         out->input_oom, out->input_time);
        out->improving += out->improves[k];
    }
    return OP_OK;
}

op_status sgdp_trainer_label_moves(sgdp_trainer *t, int i, const int *row_dev,
                                   sgdp_move_labels *out, op_error *err)
{
    memset(out, 0, sizeof *out);
    if (i < 0 || i >= t->n_tasks)
        return op_fail(err, OP_EINTERNAL, "sgdp: bad labelling request");
    sgdp_task *tk = &t->tasks[i];
    label_job j = {.tk = tk, .input = row_dev};
    int *mem_off = NULL, *mem = NULL, *cr = NULL, *cd = NULL;
    op_status st = unit_members(&tk->sg, &mem_off, &mem, err);
    int m = list_candidates(&tk->sg, row_dev, NULL, NULL);
    size_t mm = (size_t)m + 1;
    if (!st && (!(cr = op_malloc(mm * sizeof *cr, err)) || !(cd = op_malloc(mm * sizeof *cd, err)) ||
                !(j.step = op_malloc(mm * sizeof *j.step, err)) ||
                !(j.oom = op_malloc(mm * sizeof *j.oom, err))))
        st = OP_ENOMEM;
    if (!st) {
        list_candidates(&tk->sg, row_dev, cr, cd);
        j.mem_off = mem_off, j.mem = mem, j.cand_row = cr, j.cand_dev = cd;
        moved_placement(tk, row_dev, mem_off, mem, -1, 0, tk->sim.pls[0].device_of);
        st = op_sim_run(tk->sim.sims[0], &tk->sim.pls[0], &tk->sim.res[0], NULL, err);
    }
    if (!st) {
        out->input_time = tk->sim.res[0].step_time_us;
        out->input_oom = tk->sim.res[0].oom;
        double sim_s = 0.0;
        st = rl_run_rollouts(t->c.threads, m, simulate_candidate, &j, &sim_s, err);
    }
    if (!st)
        st = collect_labels(&j, m, out, err);
    if (st)
        sgdp_move_labels_free(out);
    free(mem_off), free(mem), free(cr), free(cd), free(j.step), free(j.oom);
    return st;
}

/* --------------------------------------------------------------- loss */

double sgdp_move_score(const sgdp_graph *sg, const nn_tensor *logp, const int *input, int r)
{
    int D = sg->max_devices, ref = input[r];
    double mx = -INFINITY, sum = 0.0;
    for (int d = 0; d < D; d++)
        if (d != ref && sg->mask[(size_t)r * D + d] && NN_AT(logp, r, d) > mx)
            mx = NN_AT(logp, r, d);
    if (mx == -INFINITY)
        return -INFINITY;
    for (int d = 0; d < D; d++)
        if (d != ref && sg->mask[(size_t)r * D + d])
            sum += exp(NN_AT(logp, r, d) - mx);
    return mx + log(sum) - NN_AT(logp, r, ref);
}

/* q[d]: row r's distribution over its other devices (0 elsewhere). */
static void others_softmax(const sgdp_graph *sg, const nn_tensor *logp, int ref, int r,
                           double *q)
{
    int D = sg->max_devices;
    double mx = -INFINITY, sum = 0.0;
    for (int d = 0; d < D; d++)
        if (d != ref && sg->mask[(size_t)r * D + d] && NN_AT(logp, r, d) > mx)
            mx = NN_AT(logp, r, d);
    for (int d = 0; d < D; d++) {
        int ok = d != ref && sg->mask[(size_t)r * D + d] && mx > -INFINITY;
        q[d] = ok ? exp(NN_AT(logp, r, d) - mx) : 0.0;
        sum += q[d];
    }
    for (int d = 0; d < D; d++)
        q[d] = sum > 0 ? q[d] / sum : 0.0;
}

static double softplus(double z)
{
    return z > 0 ? z + log1p(exp(-z)) : log1p(exp(z));
}

/* d score_r / d logp, scaled by g, added into dlogp. */
static void add_score_gradient(const sgdp_graph *sg, const nn_tensor *logp, int ref, int r,
                               double g, nn_tensor *dlogp, double *q)
{
    others_softmax(sg, logp, ref, r, q);
    for (int d = 0; d < sg->max_devices; d++)
        NN_AT(dlogp, r, d) += g * q[d];
    NN_AT(dlogp, r, ref) -= g;
}

double sgdp_rank_loss(const sgdp_graph *sg, const nn_tensor *logp, const int *input,
                      const sgdp_move_labels *l, nn_tensor *dlogp, double *auc)
{
    int D = sg->max_devices, np = 0, nn_ = 0;
    double q[1024], loss = 0.0, right = 0.0;
    if (dlogp)
        memset(dlogp->data, 0, (size_t)dlogp->rows * (size_t)dlogp->cols * sizeof(double));
    if (D > 1024) {
        if (auc)
            *auc = 0.5;
        return 0.0;
    }
    for (int k = 0; k < l->n; k++) {
        double s = sgdp_move_score(sg, logp, input, l->row[k]);
        if (isfinite(s))
            l->improves[k] ? np++ : nn_++;
    }
    for (int a = 0; np && nn_ && a < l->n; a++) {
        double si = sgdp_move_score(sg, logp, input, l->row[a]);
        if (!l->improves[a] || !isfinite(si))
            continue;
        for (int b = 0; b < l->n; b++) {
            double sj = sgdp_move_score(sg, logp, input, l->row[b]);
            if (l->improves[b] || !isfinite(sj))
                continue;
            double z = sj - si, w = 1.0 / ((double)np * nn_);
            loss += w * softplus(z);
            right += si > sj ? 1.0 : (si == sj ? 0.5 : 0.0);
            if (dlogp) {
                double g = w / (1.0 + exp(-z)); /* d softplus(z) / dz */
                add_score_gradient(sg, logp, input[l->row[b]], l->row[b], g, dlogp, q);
                add_score_gradient(sg, logp, input[l->row[a]], l->row[a], -g, dlogp, q);
            }
        }
    }
    for (int a = 0; np && a < l->n; a++) { /* which other device, for improving rows */
        int r = l->row[a], ref = input[r], others = 0;
        if (!l->improves[a] || !isfinite(sgdp_move_score(sg, logp, input, r)))
            continue;
        for (int d = 0; d < sg->nd; d++)
            others += d != ref && sg->mask[(size_t)r * D + d];
        if (others < 2)
            continue;
        others_softmax(sg, logp, ref, r, q);
        loss -= log(fmax(q[l->dev[a]], 1e-300)) / np;
        for (int d = 0; dlogp && d < D; d++)
            NN_AT(dlogp, r, d) += (q[d] - (d == l->dev[a])) / np;
    }
    if (auc)
        *auc = np && nn_ ? right / ((double)np * nn_) : 0.5;
    return loss;
}

/* ---------------------------------------------------------- the probe */

static int by_score_desc(const void *a, const void *b)
{
    const double *x = a, *y = b; /* {score, index} pairs */
    if (x[0] != y[0])
        return x[0] > y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : (x[1] > y[1]);
}

op_status sgdp_trainer_rank_probe(sgdp_trainer *t, int i, int top_k, sgdp_rank_probe *out,
                                  op_error *err)
{
    memset(out, 0, sizeof *out);
    if (i < 0 || i >= t->n_tasks || !t->tasks[i].have_ref)
        return op_fail(err, OP_EUSAGE, "sgdp: the ranking probe needs a reference input");
    sgdp_task *tk = &t->tasks[i];
    sgdp_move_labels l;
    nn_tensor logp;
    op_status st = sgdp_trainer_label_moves(t, i, tk->ref_row, &l, err);
    if (st)
        return st;
    nn_arena_reset(&t->c.ar);
    double *order = NULL;
    if (!(st = sgdp_policy_forward(t->pol, &t->c.ar, &tk->sg, &logp, NULL, err)) &&
        !(order = op_malloc(((size_t)l.n + 1) * 2 * sizeof *order, err)))
        st = OP_ENOMEM;
    if (!st) {
        sgdp_rank_loss(&tk->sg, &logp, tk->ref_row, &l, NULL, &out->auc);
        for (int k = 0; k < l.n; k++) {
            order[2 * k] = sgdp_move_score(&tk->sg, &logp, tk->ref_row, l.row[k]);
            order[2 * k + 1] = l.row[k]; /* ties broken by row, as the search does */
        }
        qsort(order, (size_t)l.n, 2 * sizeof *order, by_score_desc);
        out->units = l.n;
        out->improving = l.improving;
        out->top_k = top_k < l.n ? top_k : l.n;
        for (int k = 0; k < out->top_k; k++)
            for (int a = 0; a < l.n; a++)
                if (l.row[a] == (int)order[2 * k + 1])
                    out->top_improving += l.improves[a];
    }
    free(order);
    sgdp_move_labels_free(&l);
    return st;
}

/* ------------------------------------------------------------ training */

typedef struct rank_state {
    int task;
    int *input;   /* per row */
    double *wait; /* its queueing-delay features (sg->wait) */
    sgdp_move_labels lab;
} rank_state;

typedef struct rank_set {
    rank_state *s;
    int n;
    size_t cap;
} rank_set;

static void rank_set_free(rank_set *rs)
{
    for (int k = 0; k < rs->n; k++) {
        free(rs->s[k].input), free(rs->s[k].wait);
        sgdp_move_labels_free(&rs->s[k].lab);
    }
    free(rs->s);
}

/* Label input (n rows) of task i and keep it as a state. */
static op_status add_state(sgdp_trainer *t, int i, const int *input, rank_set *rs,
                           op_error *err)
{
    sgdp_task *tk = &t->tasks[i];
    size_t n = (size_t)tk->sg.n;
    op_status st = op_reserve((void **)&rs->s, sizeof *rs->s, &rs->cap, (size_t)rs->n + 1, err);
    if (st)
        return st;
    rank_state *s = &rs->s[rs->n];
    memset(s, 0, sizeof *s);
    s->task = i;
    double step;
    int oom;
    if (!(s->input = op_malloc(n * sizeof *s->input, err)) ||
        !(s->wait = op_malloc(n * sizeof *s->wait, err))) {
        free(s->input), free(s->wait);
        return OP_ENOMEM;
    }
    memcpy(s->input, input, n * sizeof *s->input);
    if ((st = sgdp_tr_timing(tk, input, &step, &oom, err)) ||
        (st = sgdp_trainer_label_moves(t, i, input, &s->lab, err))) {
        free(s->input), free(s->wait);
        return st;
    }
    memcpy(s->wait, tk->sg.wait, n * sizeof *s->wait);
    rs->n++;
    return OP_OK;
}

/* cur <- cur with the improving moves of lab applied best first, each kept
 * only when the simulator says it still improves; returns how many. */
static int descend(sgdp_trainer *t, int i, const sgdp_move_labels *lab, int *cur,
                   op_status *st, op_error *err)
{
    sgdp_task *tk = &t->tasks[i];
    int kept = 0, m = 0, *mem_off = NULL, *mem = NULL;
    int *order = op_malloc(((size_t)lab->n + 1) * sizeof *order, err);
    double cur_time = lab->input_time;
    int cur_oom = lab->input_oom;
    if (!order || (*st = unit_members(&tk->sg, &mem_off, &mem, err))) {
        if (!order)
            *st = OP_ENOMEM;
        goto done;
    }
    for (int k = 0; k < lab->n; k++)
        if (lab->improves[k])
            order[m++] = k;
    for (int a = 1; a < m; a++) /* insertion sort by step: stable */
        for (int b = a; b > 0 && lab->step[order[b]] < lab->step[order[b - 1]]; b--) {
            int x = order[b];
            order[b] = order[b - 1], order[b - 1] = x;
        }
    op_placement *pl = &tk->sim.pls[0];
    for (int a = 0; a < m; a++) {
        int r = lab->row[order[a]], d = lab->dev[order[a]], old = cur[r];
        for (int k = mem_off[r]; k < mem_off[r + 1]; k++)
            cur[mem[k]] = d;
        moved_placement(tk, cur, mem_off, mem, -1, 0, pl->device_of);
        if ((*st = op_sim_run(tk->sim.sims[0], pl, &tk->sim.res[0], NULL, err)))
            goto done;
        if (sgdp_tr_better(tk->sim.res[0].oom, tk->sim.res[0].step_time_us, cur_oom, cur_time)) {
            cur_time = tk->sim.res[0].step_time_us, cur_oom = tk->sim.res[0].oom;
            kept++;
        } else {
            for (int k = mem_off[r]; k < mem_off[r + 1]; k++)
                cur[mem[k]] = old;
        }
    }
done:
    free(order), free(mem_off), free(mem);
    return kept;
}

/* The labelled states of task i: the heuristic reference, up to states - 2
 * descents from it, and a perturbed copy of it. */
static op_status task_states(sgdp_trainer *t, int i, nn_rng *rng, rank_set *rs, op_error *err)
{
    sgdp_task *tk = &t->tasks[i];
    int n = tk->sg.n, S = t->cfg.rank_states;
    int *cur = op_malloc((size_t)n * sizeof *cur, err);
    if (!cur)
        return OP_ENOMEM;
    op_status st = OP_OK;
    memcpy(cur, tk->heur_row, (size_t)n * sizeof *cur);
    int chain = S >= 2 ? S - 1 : 1;
    for (int j = 0; !st && j < chain; j++) {
        if ((st = add_state(t, i, cur, rs, err)) || j == chain - 1)
            break;
        if (descend(t, i, &rs->s[rs->n - 1].lab, cur, &st, err) == 0)
            break; /* a local optimum: nothing new to label */
    }
    if (!st && S >= 2) {
        memcpy(cur, tk->heur_row, (size_t)n * sizeof *cur);
        sgdp_tr_perturb(tk, rng, cur);
        st = add_state(t, i, cur, rs, err);
    }
    free(cur);
    return st;
}

/* State s's input and labels, relabelled by a random device permutation
 * with probability rank_relabel (into buf and dev_buf), in its task's
 * features; *lab_out the labels to use. */
static const int *present_state(sgdp_trainer *t, rank_state *s, nn_rng *rng, int *buf,
                                int *dev_buf, sgdp_move_labels *lab_out)
{
    sgdp_task *tk = &t->tasks[s->task];
    const sgdp_graph *sg = &tk->sg;
    int n = sg->n, D = sg->max_devices, perm[1024];
    const int *input = s->input;
    *lab_out = s->lab;
    if (nn_rng_uniform(rng) < t->cfg.rank_relabel && sgdp_tr_relabelling(tk, rng, perm)) {
        int ok = 1;
        for (int r = 0; ok && r < n; r++)
            ok = s->input[r] < 0 || s->input[r] >= sg->nd ||
                 sg->mask[(size_t)r * D + perm[s->input[r]]];
        for (int k = 0; ok && k < s->lab.n; k++)
            ok = sg->mask[(size_t)s->lab.row[k] * D + perm[s->lab.dev[k]]];
        if (ok) {
            for (int r = 0; r < n; r++)
                buf[r] = s->input[r] >= 0 && s->input[r] < sg->nd ? perm[s->input[r]]
                                                                  : s->input[r];
            for (int k = 0; k < s->lab.n; k++)
                dev_buf[k] = perm[s->lab.dev[k]];
            lab_out->dev = dev_buf;
            input = buf;
        }
    }
    memcpy(tk->sg.wait, s->wait, (size_t)n * sizeof *s->wait);
    sgdp_graph_set_reference(&tk->sg, input);
    return input;
}

/* One Adam step on state s; *loss and *auc of it before the step. */
static op_status rank_step(sgdp_trainer *t, rank_state *s, nn_rng *rng, int *buf, int *dev_buf,
                           double *loss, double *auc, op_error *err)
{
    nn_params *ps = sgdp_policy_params(t->pol);
    sgdp_task *tk = &t->tasks[s->task];
    sgdp_move_labels lab;
    const int *input = present_state(t, s, rng, buf, dev_buf, &lab);
    nn_tensor logp, dlogp;
    sgdp_pass *pass;
    nn_arena_reset(&t->c.ar);
    op_status st;
    if ((st = sgdp_policy_forward(t->pol, &t->c.ar, &tk->sg, &logp, &pass, err)) ||
        (st = nn_arena_tensor(&t->c.ar, logp.rows, logp.cols, &dlogp, err)))
        return st;
    *loss = sgdp_rank_loss(&tk->sg, &logp, input, &lab, &dlogp, auc);
    nn_params_zero_grad(ps);
    if ((st = sgdp_policy_backward(t->pol, &t->c.ar, &tk->sg, pass, &dlogp, err)))
        return st;
    nn_param *g = nn_params_find(ps, "sgdp.ref_gain"); /* held, as in PPO (sgdp_train.c) */
    if (g)
        g->grad.data[0] = 0.0;
    nn_params_clip_grad_norm(ps, t->cfg.ppo.max_grad_norm);
    nn_adam adam = t->c.adam;
    adam.lr = t->cfg.rank_lr;
    nn_adam_step(&adam, ps);
    t->c.adam.step = adam.step;
    return OP_OK;
}

static op_status label_all(sgdp_trainer *t, nn_rng *rng, rank_set *rs, op_error *err)
{
    double t0 = rl_now_seconds();
    op_status st = OP_OK;
    for (int i = 0; !st && i < t->n_tasks; i++)
        if (t->tasks[i].have_ref && t->tasks[i].heur_row)
            st = task_states(t, i, rng, rs, err);
    long moves = 0, improving = 0;
    for (int k = 0; k < rs->n; k++)
        moves += rs->s[k].lab.n, improving += rs->s[k].lab.improving;
    if (!st)
        op_progress(t->cfg.progress,
                    "sgdp: ranking: %d states labelled, %ld single moves simulated (%ld "
                    "improve), %.1f s",
                    rs->n, moves, improving, rl_now_seconds() - t0);
    return st;
}

op_status sgdp_rank_train(sgdp_trainer *t, op_error *err)
{
    if (t->cfg.rank_steps <= 0 || t->cfg.rank_states < 1)
        return OP_OK;
    double t0 = rl_now_seconds();
    nn_rng tmp = t->c.rng, rng = nn_rng_fork(&tmp, RANK_STREAM);
    rank_set rs = {0};
    int *buf = op_malloc(((size_t)t->n_max + 1) * sizeof *buf, err);
    int *dev_buf = op_malloc(((size_t)t->n_max + 1) * sizeof *dev_buf, err);
    op_status st = buf && dev_buf ? label_all(t, &rng, &rs, err) : OP_ENOMEM;
    double loss_sum = 0.0, auc_sum = 0.0;
    int seen = 0;
    for (int step = 0; !st && rs.n > 0 && step < t->cfg.rank_steps && !op_interrupted(); step++) {
        rank_state *s = &rs.s[nn_rng_below(&rng, (uint64_t)rs.n)];
        double loss, auc;
        st = rank_step(t, s, &rng, buf, dev_buf, &loss, &auc, err);
        loss_sum += loss, auc_sum += auc, seen++;
        if (!st && (seen == RANK_REPORT_EVERY || step == t->cfg.rank_steps - 1)) {
            op_progress(t->cfg.progress,
                        "sgdp: ranking step %d: loss %.4f, training AUC %.3f (mean of the "
                        "last %d), %.1f s",
                        step + 1, loss_sum / seen, auc_sum / seen, seen, rl_now_seconds() - t0);
            loss_sum = auc_sum = 0.0, seen = 0;
        }
    }
    for (int i = 0; i < t->n_tasks; i++) /* features back to each incumbent */
        t->tasks[i].timing_stale = t->tasks[i].have_ref;
    if (!st)
        st = sgdp_tr_refresh(t, err);
    rank_set_free(&rs);
    free(buf), free(dev_buf);
    return st;
}

