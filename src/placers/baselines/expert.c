/*
 * expert.c - the human, layer-wise placement the papers compare against
 * (Pesto section 5.2 "Expert"; Trinity section 5.1 "Layered Expert"; the
 * GNMT paper's own placement, Wu et al. 2016).
 *
 * It reads the graph's `layer` scopes (formats.md section 1):
 *   - Stacked layers ("encoder/layer_2", "decoder/layer_2", "layer_5",
 *     "block_3", "lstm_1", "cell_4", "stack_1/layer_4"): the number is the
 *     depth (nested numbers: outer first); scopes of the same depth form
 *     one unit (GNMT puts encoder layer i and decoder layer i on the same
 *     GPU).
 *   - Unnumbered scopes: "embedding" scopes go first (with the first
 *     layers), "attention", "softmax", "logits", "loss", "output" and
 *     "head" scopes go last (with the last layers); any other unnumbered
 *     scope is ordered by where its ops sit in the topological order,
 *     next to the numbered unit whose ops sit nearest.
 *   - NASNet-style cells ("cell_3/branch_1"): the parallel branches of each
 *     cell are spread over the devices, largest branch to the least-loaded
 *     device (Pesto: "Expert places parallel branches within each cell
 *     across different GPUs ... divided evenly").
 * The ordered units are cut into contiguous runs, one per device, balancing
 * compute (speed-weighted); a unit whose parameters (the bytes it holds
 * for the whole step) do not fit on its device goes to the nearest device
 * with room.
 *
 * THE RULE: how many devices.  An expert splits a model only as far as the
 * split pays off: a training step runs its layers' forward and backward
 * passes one after another, so contiguous layer groups on k devices
 * overlap little and pay for every activation and gradient that crosses a
 * group boundary (on CNN training graphs, splitting over 4 GPUs was 1.2-2x
 * slower than one GPU).  So the placement above is built for k = 1, 2,
 * ..., n of the n devices of the most common kind (the GPUs; the k fastest,
 * ties by index), each checked as below, and each simulated once
 * (op_sim_run); the one the simulator ranks first wins (op_sim_ranks_before:
 * fits first, then the shorter step; ties: fewer devices).  k = n runs
 * first; a smaller k whose cheap lower bounds (its devices' resident
 * params against their memory; its busiest device and its longest path
 * with the cut edges' transfer times) show it cannot rank first is not
 * checked or simulated (place_expert).  k = 1 is the
 * whole graph on the fastest device of that kind, so where the graph fits
 * on one device expert is never slower than that device alone; it splits
 * where one device lacks the memory or where pipelining branches and
 * layers across devices wins (GNMT-style stacked RNNs, NASNet cells).
 * Cost: n cheap placements, and the memory check and simulation of those
 * the bounds do not rule out.
 *
 * Ops without a layer follow their producer (the input with the most
 * bytes), or else their consumer; colocation groups follow their first
 * member; ops that may not run where their layer went (kind, pin) go to
 * the allowed device with the least compute.  The final placement is
 * checked against placer_mem.h's liveness estimate (over the graph's
 * topological order); where it does not fit, the ops holding the most
 * bytes at an overflowing device's peak move to the device with the most
 * room, as a person would move a layer's tail (pmem_repair; only for
 * k = n: with fewer devices, a split that does not fit is refused as it
 * is, since k + 1 devices come next), and the simulator checks the result
 * (pmem_place_checked).  Still too big:
 * that k's candidate is refused; when every k is refused, OP_EINFEASIBLE
 * (as Pesto reports Expert OOM on large NASNets), unless best_effort.
 * Placement only; each device runs first-ready-first.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/sort.h"
#include "opplace/simulate.h"
#include "placers/baselines/baselines.h"
#include "placers/placer_mem.h"
#include "placers/placer_util.h"

enum { ROLE_EMBED = 0, ROLE_BODY = 1, ROLE_HEAD = 2 };

typedef struct scope_info {
    int role;
    long depth;  /* layer number, or -1 */
    long branch; /* branch number, or -1 */
    int cell_len; /* length of the scope prefix naming the cell (branch scopes) */
} scope_info;

typedef struct unit {
    int role;
    double key;    /* order among units */
    double work;   /* compute at speed 1 */
    int64_t foot;  /* params: bytes held for the whole step */
    int cell;      /* cell index for branch units, else -1 */
    int dev;
} unit;

/* Component like "layer_12", "layer12", "cell_3": the number, or -1. */
static long numbered(const char *s, size_t len, const char *word)
{
    size_t w = strlen(word);
    if (len <= w || strncmp(s, word, w) != 0)
        return -1;
    size_t i = w;
    if (s[i] == '_')
        i++;
    if (i >= len)
        return -1;
    long x = 0;
    for (; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        x = x * 10 + (s[i] - '0');
    }
    return x;
}

/* Case-insensitive: "AuxLogits" is a head too. */
static int contains(const char *s, const char *word)
{
    char low[256];
    size_t i = 0;
    for (; s[i] && i + 1 < sizeof low; i++)
        low[i] = (char)tolower((unsigned char)s[i]);
    low[i] = '\0';
    return strstr(low, word) != NULL;
}

static scope_info parse_scope(const char *name)
{
    static const char *const depth_words[] = {"layer", "cell", "block", "lstm", "stage", "stack"};
    scope_info si = {ROLE_BODY, -1, -1, 0};
    const char *c = name;
    while (*c) {
        const char *end = strchr(c, '/');
        size_t len = end ? (size_t)(end - c) : strlen(c);
        long b = numbered(c, len, "branch");
        if (b >= 0 && si.branch < 0) {
            si.branch = b;
            si.cell_len = (int)(c - name);
        }
        /* nested numbers ("stack_1/layer_4") order outer first */
        for (size_t k = 0; k < sizeof depth_words / sizeof *depth_words; k++) {
            long x = numbered(c, len, depth_words[k]);
            if (x >= 0) {
                si.depth = si.depth < 0 ? x : si.depth * 1000 + x;
                break;
            }
        }
        c += len;
        if (*c == '/')
            c++;
    }
    if (si.depth < 0 && si.branch < 0) {
        if (contains(name, "embed"))
            si.role = ROLE_EMBED;
        else if (contains(name, "attention") || contains(name, "softmax") ||
                 contains(name, "logits") || contains(name, "loss") ||
                 contains(name, "output") || contains(name, "head"))
            si.role = ROLE_HEAD;
    }
    return si;
}

typedef struct expert {
    const op_problem *p;
    int n_units;
    unit *units;
    int *unit_of_layer; /* per layer scope */
    double *load;       /* per device: compute assigned */
    int64_t *room;      /* per device: memory left by the unit footprint */
    unsigned char *split_dev; /* devices the layers are spread over */
    int n_split;
    unit *units0;       /* the units as build_units made them (for each k) */
    int use;            /* expert_attempt: how many split devices */
} expert;

static int unit_order(const void *a, const void *b, const void *ctx)
{
    const expert *ex = ctx;
    const unit *x = &ex->units[*(const int *)a], *y = &ex->units[*(const int *)b];
    if (x->role != y->role)
        return x->role - y->role;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

/* The devices of the most common kind (ties: the kind of device 0), of
 * which the `use` fastest (ties: lower index) take layers. */
static void pick_split_devices(expert *ex, int use)
{
    const op_cluster *c = ex->p->c;
    int best = 0, best_count = 0;
    for (int d = 0; d < c->n_dev; d++) {
        int count = 0;
        for (int e = 0; e < c->n_dev; e++)
            count += strcmp(c->dev[e].kind, c->dev[d].kind) == 0;
        if (count > best_count) {
            best_count = count;
            best = d;
        }
    }
    ex->n_split = 0;
    for (int d = 0; d < c->n_dev; d++)
        ex->split_dev[d] = strcmp(c->dev[d].kind, c->dev[best].kind) == 0;
    for (int d = 0; d < c->n_dev; d++) {
        if (!ex->split_dev[d])
            continue;
        int faster = 0; /* devices of the kind ranked before d */
        for (int e = 0; e < c->n_dev; e++)
            faster += ex->split_dev[e] && (c->dev[e].speed > c->dev[d].speed ||
                                           (c->dev[e].speed == c->dev[d].speed && e < d));
        if (faster >= use)
            ex->split_dev[d] = 2; /* of the kind, not used */
    }
    for (int d = 0; d < c->n_dev; d++) {
        ex->split_dev[d] = ex->split_dev[d] == 1;
        ex->n_split += ex->split_dev[d];
    }
}

/* How many devices of the most common kind there are. */
static int count_split_devices(const op_cluster *c)
{
    int best_count = 0;
    for (int d = 0; d < c->n_dev; d++) {
        int count = 0;
        for (int e = 0; e < c->n_dev; e++)
            count += strcmp(c->dev[e].kind, c->dev[d].kind) == 0;
        if (count > best_count)
            best_count = count;
    }
    return best_count;
}

/* Units from the layer scopes; returns the number of cells. */
static op_status build_units(expert *ex, op_error *err)
{
    const op_problem *p = ex->p;
    const op_graph *g = p->g;
    int nl = g->n_layers;
    scope_info *si = op_malloc((size_t)nl * sizeof *si + 1, err);
    double *median = op_malloc((size_t)nl * sizeof(double) + 1, err);
    int *count = op_calloc((size_t)nl + 1, sizeof(int), err);
    ex->units = op_calloc((size_t)nl + 1, sizeof(unit), err);
    ex->unit_of_layer = op_malloc((size_t)nl * sizeof(int) + 1, err);
    op_status st = OP_ENOMEM;
    if (!si || !median || !count || !ex->units || !ex->unit_of_layer)
        goto done;
    /* median topological position of each scope (the middle member seen) */
    for (int i = 0; i < p->n; i++)
        if (g->layer[i] != OP_NONE)
            count[g->layer[i]]++;
    int *seen = op_calloc((size_t)nl + 1, sizeof(int), err);
    if (!seen)
        goto done;
    for (int t = 0; t < p->n; t++) {
        int v = g->topo[t], l = g->layer[v];
        if (l != OP_NONE && seen[l]++ == count[l] / 2)
            median[l] = t;
    }
    free(seen);
    for (int l = 0; l < nl; l++)
        si[l] = parse_scope(g->layer_name[l]);
    /* numbered body scopes merge by depth; cells' branches by (cell, branch);
     * everything else is its own unit */
    int nu = 0;
    for (int l = 0; l < nl; l++) {
        int u = -1;
        for (int m = 0; m < l && u < 0; m++) {
            if (si[l].branch >= 0 && si[m].branch == si[l].branch &&
                si[m].cell_len == si[l].cell_len &&
                strncmp(g->layer_name[l], g->layer_name[m], (size_t)si[l].cell_len) == 0)
                u = ex->unit_of_layer[m];
            else if (si[l].branch < 0 && si[l].depth >= 0 && si[m].branch < 0 &&
                     si[m].depth == si[l].depth)
                u = ex->unit_of_layer[m];
        }
        if (u < 0) {
            u = nu++;
            ex->units[u] = (unit){.role = si[l].role, .key = median[l], .cell = -1, .dev = -1};
            if (si[l].depth >= 0 && si[l].branch < 0)
                ex->units[u].key = (double)si[l].depth;
        }
        ex->unit_of_layer[l] = u;
    }
    ex->n_units = nu;
    /* cells: the same cell prefix -> the same cell index (first layer seen) */
    for (int l = 0; l < nl; l++) {
        if (si[l].branch < 0)
            continue;
        int cell = l;
        for (int m = 0; m < l; m++)
            if (si[m].branch >= 0 && si[m].cell_len == si[l].cell_len &&
                strncmp(g->layer_name[l], g->layer_name[m], (size_t)si[l].cell_len) == 0) {
                cell = m;
                break;
            }
        ex->units[ex->unit_of_layer[l]].cell = cell;
        ex->units[ex->unit_of_layer[l]].key = median[cell];
    }
    /* unnumbered body scopes sit next to the numbered unit nearest in topo
     * order (only when some scopes are numbered: then keys are depths) */
    int any_numbered = 0;
    for (int l = 0; l < nl; l++)
        any_numbered |= si[l].depth >= 0 && si[l].branch < 0;
    for (int l = 0; any_numbered && l < nl; l++) {
        if (si[l].depth >= 0 || si[l].branch >= 0 || si[l].role != ROLE_BODY)
            continue;
        double best_gap = INFINITY, key = 0;
        for (int m = 0; m < nl; m++)
            if (si[m].depth >= 0 && si[m].branch < 0 && fabs(median[m] - median[l]) < best_gap) {
                best_gap = fabs(median[m] - median[l]);
                key = (double)si[m].depth + (median[l] > median[m] ? 0.5 : -0.5);
            }
        ex->units[ex->unit_of_layer[l]].key = key;
    }
    for (int i = 0; i < p->n; i++) {
        if (g->layer[i] == OP_NONE)
            continue;
        unit *u = &ex->units[ex->unit_of_layer[g->layer[i]]];
        u->work += p->work[i];
        u->foot += g->param_bytes[i];
    }
    st = OP_OK;
done:
    free(si);
    free(median);
    free(count);
    return st;
}

/* The split device nearest to `want` (in split order) with room for u. */
static int device_with_room(const expert *ex, const int *split, int want, const unit *u)
{
    for (int delta = 0; delta < ex->n_split; delta++)
        for (int sign = 1; sign >= -1; sign -= 2) {
            int j = want + sign * delta;
            if (j >= 0 && j < ex->n_split && ex->room[split[j]] >= u->foot)
                return split[j];
        }
    return split[want];
}

static void take(expert *ex, unit *u, int d)
{
    u->dev = d;
    ex->load[d] += u->work / ex->p->c->dev[d].speed;
    ex->room[d] -= u->foot;
}

/* Layers: contiguous runs balancing speed-weighted compute. */
static op_status assign_layers(expert *ex, op_error *err)
{
    const op_problem *p = ex->p;
    int *order = op_malloc((size_t)ex->n_units * sizeof(int) + 1, err);
    int *split = op_malloc((size_t)p->nd * sizeof(int), err);
    double *bound = op_malloc(((size_t)p->nd + 1) * sizeof(double), err);
    if (!order || !split || !bound) {
        free(order);
        free(split);
        free(bound);
        return OP_ENOMEM;
    }
    int ns = 0;
    double speed = 0, total = 0;
    for (int d = 0; d < p->nd; d++)
        if (ex->split_dev[d]) {
            split[ns++] = d;
            speed += p->c->dev[d].speed;
        }
    int n_body = 0;
    for (int u = 0; u < ex->n_units; u++)
        if (ex->units[u].cell < 0) {
            order[n_body++] = u;
            total += ex->units[u].work;
        }
    op_sort(order, (size_t)n_body, sizeof(int), unit_order, ex);
    bound[0] = 0;
    for (int j = 0; j < ns; j++)
        bound[j + 1] = bound[j] + total * p->c->dev[split[j]].speed / speed;
    double cum = 0;
    for (int k = 0; k < n_body; k++) {
        unit *u = &ex->units[order[k]];
        double mid = cum + u->work / 2;
        int j = 0;
        while (j < ns - 1 && mid >= bound[j + 1])
            j++;
        take(ex, u, device_with_room(ex, split, j, u));
        cum += u->work;
    }
    free(order);
    free(split);
    free(bound);
    return OP_OK;
}

/* Cells: each cell's branches, largest first, to the least-loaded device. */
static op_status assign_branches(expert *ex, op_error *err)
{
    const op_problem *p = ex->p;
    (void)err;
    /* branch units in order of (cell key, -work) */
    int nb = 0;
    for (int u = 0; u < ex->n_units; u++)
        if (ex->units[u].cell >= 0)
            nb++;
    for (int pass = 0; pass < nb; pass++) {
        int pick = -1;
        for (int u = 0; u < ex->n_units; u++) {
            const unit *x = &ex->units[u];
            if (x->cell < 0 || x->dev >= 0)
                continue;
            if (pick < 0 || x->key < ex->units[pick].key ||
                (x->key == ex->units[pick].key && x->work > ex->units[pick].work))
                pick = u;
        }
        unit *x = &ex->units[pick];
        int best = -1;
        for (int d = 0; d < p->nd; d++)
            if (ex->split_dev[d] && ex->room[d] >= x->foot && (best < 0 || ex->load[d] < ex->load[best]))
                best = d;
        for (int d = 0; best < 0 && d < p->nd; d++)
            if (ex->split_dev[d])
                best = d;
        take(ex, x, best);
    }
    return OP_OK;
}

/* Ops without a layer: the producer sending the most bytes, else the
 * consumer receiving the most; lastly the first split device. */
static void follow_neighbours(const expert *ex, int *device_of)
{
    const op_graph *g = ex->p->g;
    for (int t = 0; t < ex->p->n; t++) {
        int v = g->topo[t];
        if (device_of[v] >= 0)
            continue;
        int64_t best = -1;
        for (int k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
            if (device_of[g->pred[k]] >= 0 && g->edge_bytes[g->pred_edge[k]] > best) {
                best = g->edge_bytes[g->pred_edge[k]];
                device_of[v] = device_of[g->pred[k]];
            }
    }
    for (int t = ex->p->n - 1; t >= 0; t--) {
        int v = g->topo[t];
        if (device_of[v] >= 0)
            continue;
        int64_t best = -1;
        for (int k = g->succ_off[v]; k < g->succ_off[v + 1]; k++)
            if (device_of[g->succ[k]] >= 0 && g->edge_bytes[g->succ_edge[k]] > best) {
                best = g->edge_bytes[g->succ_edge[k]];
                device_of[v] = device_of[g->succ[k]];
            }
        if (device_of[v] < 0)
            for (int d = 0; d < ex->p->nd && device_of[v] < 0; d++)
                if (ex->split_dev[d])
                    device_of[v] = d;
    }
}

/* Colocation (first member decides) and eligibility (least-loaded allowed). */
static op_status repair_rules(expert *ex, int *device_of, op_error *err)
{
    const op_problem *p = ex->p;
    int *group_device = op_malloc((size_t)p->n_groups * sizeof(int) + 1, err);
    if (!group_device)
        return OP_ENOMEM;
    for (int k = 0; k < p->n_groups; k++)
        group_device[k] = -1;
    for (int i = 0; i < p->n; i++) {
        int d = placer_forced_device(p, group_device, i);
        if (d < 0) {
            d = device_of[i];
            if (!placer_allowed(p, group_device, i, d)) {
                d = -1;
                for (int e = 0; e < p->nd; e++)
                    if (placer_allowed(p, group_device, i, e) && (d < 0 || ex->load[e] < ex->load[d]))
                        d = e;
            }
        }
        if (d != device_of[i]) {
            ex->load[d] += op_exec_us(p, i, d);
            device_of[i] = d;
        }
        if (p->group_of[i] != OP_NONE)
            group_device[p->group_of[i]] = d;
    }
    free(group_device);
    return OP_OK;
}

/* The layer-wise placement over the `use` fastest split devices, into
 * device_of (no memory check). */
static op_status layerwise(expert *ex, int use, int *device_of, op_error *err)
{
    const op_problem *p = ex->p;
    for (int d = 0; d < p->nd; d++) {
        ex->room[d] = p->c->dev[d].memory_bytes;
        ex->load[d] = 0;
    }
    memcpy(ex->units, ex->units0, (size_t)ex->n_units * sizeof *ex->units);
    pick_split_devices(ex, use);
    op_status st = assign_layers(ex, err);
    if (!st)
        st = assign_branches(ex, err);
    if (!st) {
        for (int i = 0; i < p->n; i++)
            device_of[i] = p->g->layer[i] == OP_NONE
                               ? -1 : ex->units[ex->unit_of_layer[p->g->layer[i]]].dev;
        follow_neighbours(ex, device_of);
        st = repair_rules(ex, device_of, err);
    }
    return st;
}

static void expert_free(expert *ex)
{
    free(ex->units);
    free(ex->units0);
    free(ex->unit_of_layer);
    free(ex->load);
    free(ex->room);
    free(ex->split_dev);
}

/* The units of the layer scopes, built once for every k. */
static op_status expert_init(expert *ex, const op_problem *p, op_error *err)
{
    memset(ex, 0, sizeof *ex);
    ex->p = p;
    ex->load = op_calloc((size_t)p->nd, sizeof(double), err);
    ex->room = op_malloc((size_t)p->nd * sizeof(int64_t), err);
    ex->split_dev = op_calloc((size_t)p->nd, 1, err);
    op_status st = ex->load && ex->room && ex->split_dev ? OP_OK : OP_ENOMEM;
    if (!st)
        st = build_units(ex, err);
    if (!st && !(ex->units0 = op_malloc(((size_t)ex->n_units + 1) * sizeof *ex->units0, err)))
        st = OP_ENOMEM;
    if (!st)
        memcpy(ex->units0, ex->units, (size_t)ex->n_units * sizeof *ex->units);
    return st;
}

/* The layer-wise placement over all n split devices, then the memory
 * repair under the margins (a pmem_place_fn). */
static op_status expert_attempt(const op_place_ctx *ctx, void *arg, const double *margin,
                                op_placement *out, int *fits, op_error *err)
{
    expert *ex = arg;
    const op_problem *p = ctx->p;
    op_status st = layerwise(ex, ex->use, out->device_of, err);
    if (!st) {
        pmem mem;
        if (pmem_init(&mem, p, NULL, margin, err))
            st = OP_ENOMEM;
        else {
            /* k = n only (place_expert): move the ops holding the most
             * bytes at an overflowing device's peak */
            *fits = pmem_repair(&mem, out->device_of, 30, err);
            if (*fits < 0)
                st = OP_ENOMEM;
            else if (!*fits) /* the simulator decides (pmem_place_checked) */
                op_fail(err, OP_EINFEASIBLE,
                        "expert: the layer-wise placement does not fit in device memory even "
                        "after moving ops (liveness estimate, placer_mem.h)");
            pmem_destroy(&mem);
        }
    }
    return st;
}

/* The waist: an op on the critical path of compute (p->work) that takes
 * time, with its start nearest the
 * middle of the path; mark[u] = 1 for its ancestors, 2 for its descendants,
 * 0 otherwise.  w->op = -1 when no op takes time. */
op_status expert_waist_init(const op_problem *p, expert_waist *w, op_error *err)
{
    const op_graph *g = p->g;
    w->op = -1;
    w->mark = op_calloc((size_t)p->n + 1, 1, err);
    int *stack = op_malloc(((size_t)p->n + 1) * sizeof *stack, err);
    double *top = op_malloc(((size_t)p->n + 1) * sizeof *top, err);
    double *bot = op_malloc(((size_t)p->n + 1) * sizeof *bot, err);
    if (!w->mark || !stack || !top || !bot) {
        free(stack);
        free(top);
        free(bot);
        return OP_ENOMEM;
    }
    for (int t = 0; t < p->n; t++) { /* longest compute path to v's start */
        int v = g->topo[t];
        top[v] = 0;
        for (int k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
            if (top[g->pred[k]] + p->work[g->pred[k]] > top[v])
                top[v] = top[g->pred[k]] + p->work[g->pred[k]];
    }
    double cp = 0, gap = INFINITY;
    for (int t = p->n - 1; t >= 0; t--) { /* ... and from its start to the end */
        int v = g->topo[t];
        bot[v] = 0;
        for (int k = g->succ_off[v]; k < g->succ_off[v + 1]; k++)
            if (bot[g->succ[k]] > bot[v])
                bot[v] = bot[g->succ[k]];
        bot[v] += p->work[v];
        if (top[v] + bot[v] > cp)
            cp = top[v] + bot[v];
    }
    for (int v = 0; v < p->n; v++)
        if (p->work[v] > 0 && top[v] + bot[v] >= cp * (1 - 1e-9) && fabs(top[v] - cp / 2) < gap) {
            gap = fabs(top[v] - cp / 2);
            w->op = v;
        }
    free(top);
    free(bot);
    for (int dir = 1; dir <= 2 && w->op >= 0; dir++) {
        int top = 0;
        stack[top++] = w->op;
        while (top > 0) {
            int v = stack[--top];
            const int *adj = dir == 1 ? g->pred : g->succ;
            const int *off = dir == 1 ? g->pred_off : g->succ_off;
            for (int k = off[v]; k < off[v + 1]; k++)
                if (!w->mark[adj[k]] && adj[k] != w->op) {
                    w->mark[adj[k]] = (unsigned char)dir;
                    stack[top++] = adj[k];
                }
        }
    }
    free(stack);
    return OP_OK;
}

void expert_waist_destroy(expert_waist *w)
{
    free(w->mark);
    w->mark = NULL;
}

/* Cheap valid lower bounds of what the simulator will measure for a
 * placement (formats.md 5): *over, on the overflow (bytes above capacity,
 * summed over devices): a device's peak is at least its ops' param_bytes
 * (resident for the whole step) plus, while the waist op w runs (w takes
 * time), every output of an ancestor of w on that device with a consumer
 * on the same device that descends from w (produced before w starts, freed
 * only after that consumer finishes, which is after w finishes: on a
 * training graph whose waist is the loss, the activations kept for the
 * backward pass), plus w's own output and temporary on w's device;
 * *step, on the step time: the busiest device's compute, and the longest
 * path with each op's time on its device and, on every edge that crosses
 * devices, the link's latency + bytes x us_per_byte (contention only
 * adds).  Declared in baselines.h for the tests. */
op_status expert_placement_bounds(const op_problem *p, const expert_waist *w,
                                  const int *device_of, double *over, double *step,
                                  op_error *err)
{
    const op_graph *g = p->g;
    double *finish = op_malloc(((size_t)p->n + 1) * sizeof *finish, err);
    double *busy = op_malloc((size_t)p->nd * sizeof *busy, err);
    int64_t *params = op_malloc((size_t)p->nd * sizeof *params, err);
    if (!finish || !busy || !params) {
        free(finish);
        free(busy);
        free(params);
        return OP_ENOMEM;
    }
    for (int d = 0; d < p->nd; d++) {
        busy[d] = 0;
        params[d] = 0;
    }
    double longest = 0;
    for (int t = 0; t < p->n; t++) {
        int v = g->topo[t], d = device_of[v];
        double ready = 0;
        for (int k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
            int u = g->pred[k];
            double at = finish[u];
            if (device_of[u] != d) {
                op_link_model l = op_cluster_link_model(p->c, device_of[u], d);
                at += l.latency_us + l.us_per_byte * (double)g->edge_bytes[g->pred_edge[k]];
            }
            if (at > ready)
                ready = at;
        }
        double w = op_exec_us(p, v, d);
        finish[v] = ready + w;
        busy[d] += w;
        params[d] += g->param_bytes[v];
        if (finish[v] > longest)
            longest = finish[v];
    }
    if (w && w->op >= 0) {
        params[device_of[w->op]] += g->output_bytes[w->op] + g->temp_bytes[w->op];
        for (int u = 0; u < p->n; u++) {
            if (w->mark[u] != 1)
                continue;
            for (int k = g->succ_off[u]; k < g->succ_off[u + 1]; k++)
                if (w->mark[g->succ[k]] == 2 && device_of[g->succ[k]] == device_of[u]) {
                    params[device_of[u]] += g->output_bytes[u];
                    break;
                }
        }
    }
    *over = 0;
    *step = longest;
    for (int d = 0; d < p->nd; d++) {
        if (params[d] > p->c->dev[d].memory_bytes)
            *over += (double)(params[d] - p->c->dev[d].memory_bytes);
        if (busy[d] > *step)
            *step = busy[d];
    }
    free(finish);
    free(busy);
    free(params);
    return OP_OK;
}

/* Can a candidate whose bounds are (over, step) still rank before or tie
 * with the incumbent (best_over, best_step)?  Fits first, then the smaller
 * overflow, then the shorter step (op_sim_ranks_before). */
static int may_rank_first(double over, double step, double best_over, double best_step)
{
    if (best_over == 0)
        return over == 0 && step <= best_step;
    return over <= best_over;
}

/* The layer-wise placement over k = n, n - 1, ..., 1 devices of the most
 * common kind; the simulator picks k (op_sim_ranks_before: fits first,
 * then the shorter step; ties: fewer devices).  k = n, the placement
 * expert made before it chose k, comes first; each smaller k is built
 * (cheap: no memory estimate) and skipped when its lower bounds
 * (expert_placement_bounds) show that it cannot rank before or tie with the best
 * so far, so most graphs pay for one memory check and one simulation. */
static op_status place_expert(const op_place_ctx *ctx, op_placement *out, op_error *err)
{
    const op_problem *p = ctx->p;
    int n_split = count_split_devices(p->c);
    op_placement cand;
    op_sim_result r;
    memset(&r, 0, sizeof r);
    op_sim *sim = op_sim_new(p, err);
    if (!sim)
        return OP_ENOMEM;
    expert_waist waist = {0};
    expert ex;
    int have_waist = 0; /* built when the params' bound does not decide */
    op_status st = expert_init(&ex, p, err);
    if (!st)
        st = op_placement_init(&cand, p->n, p->nd, err);
    if (st) {
        expert_waist_destroy(&waist);
        expert_free(&ex);
        op_sim_free(sim);
        return st;
    }
    if ((st = op_sim_result_init(&r, p, err)))
        goto done;
    double best_over = INFINITY, best_step = INFINITY;
    int best_k = 0;
    op_error refusal = {0}; /* the first refusal: the candidate over the most devices */
    for (int k = n_split; k >= 1; k--) {
        double t0 = op_seconds_now();
        op_error e = {0};
        if (k < n_split) {
            double lb_over, lb_step;
            if ((st = layerwise(&ex, k, cand.device_of, err)))
                goto done;
            for (int pass = 0; pass < 2; pass++) { /* params alone, then with the waist */
                if ((st = expert_placement_bounds(p, have_waist ? &waist : NULL,
                                                  cand.device_of, &lb_over, &lb_step, err)))
                    goto done;
                if ((lb_over > 0 && !ctx->best_effort) ||
                    (best_k && !may_rank_first(lb_over, lb_step, best_over, best_step)) ||
                    have_waist)
                    break;
                if ((st = expert_waist_init(p, &waist, err)))
                    goto done;
                have_waist = 1;
            }
            if (lb_over > 0 && !ctx->best_effort) { /* its memory's lower bound overflows */
                op_fail(&refusal, OP_EINFEASIBLE, "expert: the layer-wise placement over %d "
                        "devices does not fit (its weights and the activations it keeps "
                        "overflow a device)", k);
                continue;
            }
            if (best_k && !may_rank_first(lb_over, lb_step, best_over, best_step)) {
                op_progress(ctx, "expert: layers over %d device%s: skipped (bounds: %.2f GiB "
                            "over, step >= %.1f us)", k, k > 1 ? "s" : "",
                            lb_over / 1073741824.0, lb_step);
                continue;
            }
        }
        /* k = n: the memory repair under pmem_place_checked; k < n: the
         * placement does not depend on the margins, so the simulator alone
         * judges it (below) */
        int simulated = 0;
        ex.use = k;
        if (k == n_split)
            st = pmem_place_checked_sim(ctx, "expert", expert_attempt, &ex, &cand, sim, &r,
                                        &simulated, &e);
        if (st == OP_EINFEASIBLE) {
            op_fail(&refusal, e.code, "%s", e.msg);
            continue;
        }
        /* a candidate that cannot beat or tie a fitting incumbent stops early */
        op_sim_set_cutoff(sim, best_k && best_over == 0 ? nextafter(best_step, INFINITY) : 0);
        if (!st && !simulated)
            st = op_sim_run(sim, &cand, &r, NULL, &e);
        if (st) {
            if (err)
                *err = e;
            goto done;
        }
        if (r.cut_off)
            continue;
        double over = op_sim_overflow_bytes(p, &r);
        if (k < n_split && over > 0 && !ctx->best_effort) {
            op_fail(&refusal, OP_EINFEASIBLE, "expert: the layer-wise placement over %d "
                    "devices overflows in simulation (peak %.2f GiB over)", k,
                    over / 1073741824.0);
            continue;
        }
        op_progress(ctx, "expert: layers over %d device%s: step %.1f us%s (%.2f s)", k,
                    k > 1 ? "s" : "", r.step_time_us, over > 0 ? " (out of memory)" : "",
                    op_seconds_now() - t0);
        if (best_k == 0 || !op_sim_ranks_before(best_over, best_step, over, r.step_time_us)) {
            best_k = k;
            best_over = over;
            best_step = r.step_time_us;
            memcpy(out->device_of, cand.device_of, (size_t)p->n * sizeof *out->device_of);
        }
    }
    if (best_k == 0) {
        if (n_split > 1)
            op_fail(err, OP_EINFEASIBLE, "expert: no layer-wise placement over %d to 1 "
                    "devices fits; over %d: %s", n_split, n_split,
                    strncmp(refusal.msg, "expert: ", 8) ? refusal.msg : refusal.msg + 8);
        else if (err)
            *err = refusal;
        st = OP_EINFEASIBLE;
    } else {
        st = OP_OK;
    }
done:
    op_sim_result_destroy(&r);
    op_sim_free(sim);
    op_placement_destroy(&cand);
    expert_waist_destroy(&waist);
    expert_free(&ex);
    return st;
}

const op_placer op_placer_expert = {
    .name = "expert",
    .summary = "human layer-wise placement: contiguous layers per device, cells split by branch",
    .source = "Pesto section 5.2; Trinity section 5.1; GNMT (Wu et al. 2016)",
    .place = place_expert,
};
