/*
 * zoo_build.c - forward-op recorder and reverse-mode graph differentiation
 * for the model zoo (see zoo_build.h for the rules it follows).
 *
 * Forward ops go straight into an op_graph_builder and are also recorded
 * (inputs, FLOPs, output size, weight) so that zb_finish can append the
 * backward pass and the optimizer updates.  Records are created in
 * topological order (an input must exist before its consumer), so walking
 * them backwards visits every consumer's gradient before its producer's.
 * Strings (names, scopes) live in one growing pool addressed by offset.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_hooks.h"
#include "core/graph_builder.h"
#include "opplace/profile.h"
#include "zoo/zoo_build.h"

#define F32 4.0 /* bytes per element */

typedef struct rec {
    int op;           /* builder index */
    int name, layer;  /* pool offsets (layer -1: none) */
    int in_off, n_in; /* inputs: z->ins[in_off .. in_off+n_in-1] */
    int weight;       /* weight id or -1 */
    int flags;
    int needs_grad;   /* on a path from a weight */
    double flops, out_elems;
} rec;

typedef struct weight {
    int op, name, layer;
    double elems;
} weight;

struct zb {
    op_graph_builder *b;
    op_error err; /* first failure */
    const op_device_profile *prof, *cpu;
    char *pool;
    size_t pool_len, pool_cap;
    int layer;        /* current scope (pool offset or -1) */
    char prefix[256]; /* current name prefix */
    char wprefix[256]; /* weight name prefix ("" : use prefix) */
    rec *r;
    size_t nr, cap_r;
    int *ins;
    size_t nins, cap_ins;
    weight *w;
    size_t nw, cap_w;
};

/* ---- strings ---- */

static int pool_add(zb *z, const char *s)
{
    size_t n = strlen(s) + 1;
    if (op_reserve((void **)&z->pool, 1, &z->pool_cap, z->pool_len + n, &z->err))
        return -1;
    memcpy(z->pool + z->pool_len, s, n);
    z->pool_len += n;
    return (int)(z->pool_len - n);
}

static const char *pool_str(const zb *z, int off)
{
    return off < 0 ? NULL : z->pool + off;
}

static int failed(const zb *z)
{
    return z->err.code != OP_OK;
}

/* ---- set-up ---- */

zb *zb_new(const char *graph_name, int64_t batch, op_options *o, op_error *err)
{
    const char *pname = op_options_str(o, "profile", "v100");
    const op_device_profile *prof = op_profile_find(pname);
    if (!prof) {
        char known[256] = "";
        int n;
        const op_device_profile *all = op_profiles(&n);
        for (int i = 0; i < n; i++) {
            strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
            strncat(known, all[i].name, sizeof known - strlen(known) - 1);
        }
        op_fail(err, OP_EUSAGE, "--profile: unknown device profile '%s' (known: %s)", pname, known);
        return NULL;
    }
    int with_cpu = op_options_has(o, "cpu");
    if (with_cpu && strcmp(prof->kind, "cpu") == 0) {
        op_fail(err, OP_EUSAGE, "--cpu adds CPU times to a GPU profile; --profile %s is a CPU",
                pname);
        return NULL;
    }
    zb *z = op_calloc(1, sizeof *z, err);
    if (!z)
        return NULL;
    z->prof = prof;
    z->cpu = with_cpu ? op_profile_find("cpu") : NULL;
    z->layer = -1;
    if (!(z->b = op_graph_builder_new(graph_name, err))) {
        free(z);
        return NULL;
    }
    op_graph_builder_set_batch_size(z->b, batch);
    return z;
}

void zb_free(zb *z)
{
    if (!z)
        return;
    op_graph_builder_free(z->b);
    free(z->pool);
    free(z->r);
    free(z->ins);
    free(z->w);
    free(z);
}

void zb_scope(zb *z, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (!failed(z))
        z->layer = pool_add(z, buf);
}

void zb_prefix(zb *z, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(z->prefix, sizeof z->prefix, fmt, ap);
    va_end(ap);
}

void zb_weight_prefix(zb *z, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(z->wprefix, sizeof z->wprefix, fmt, ap);
    va_end(ap);
}

static void prefixed(const char *prefix, const char *name, char *out, size_t n)
{
    if (prefix[0])
        snprintf(out, n, "%s/%s", prefix, name);
    else
        snprintf(out, n, "%s", name);
}

static void full_name(const zb *z, const char *name, char *out, size_t n)
{
    prefixed(z->prefix, name, out, n);
}

/* ---- ops ---- */

/* Add one op to the builder, timed by the roofline model of the profile(s). */
static int add_op(zb *z, const char *name, const char *type, int layer, double flops,
                  double bytes_moved, double out_elems, double param_bytes, const char *colocate)
{
    if (failed(z))
        return -1;
    double t = op_roofline_us(z->prof, flops, bytes_moved);
    op_kind_time kt[2] = {{z->prof->kind, t}, {"cpu", 0}};
    op_op_spec s = {.name = name, .type = type, .time_us = t,
                    .output_bytes = (int64_t)(F32 * out_elems),
                    .param_bytes = (int64_t)param_bytes,
                    .layer = pool_str(z, layer), .colocate = colocate};
    if (z->cpu) {
        kt[1].time_us = op_roofline_us(z->cpu, flops, bytes_moved);
        s.kind_times = kt;
        s.n_kind_times = 2;
    }
    return op_graph_add_op(z->b, &s, &z->err);
}

static void add_edge(zb *z, int src, int dst, double bytes)
{
    if (!failed(z) && src >= 0 && dst >= 0)
        op_graph_add_edge(z->b, src, dst, bytes < 0 ? -1 : (int64_t)bytes, &z->err);
}

static int push_rec(zb *z, const rec *r)
{
    if (failed(z) || op_reserve((void **)&z->r, sizeof *z->r, &z->cap_r, z->nr + 1, &z->err))
        return -1;
    z->r[z->nr] = *r;
    return (int)z->nr++;
}

int zb_input(zb *z, const char *name, double out_elems)
{
    char full[512];
    full_name(z, name, full, sizeof full);
    int op = add_op(z, full, "IteratorGetNext", z->layer, 0, F32 * out_elems, out_elems, 0, NULL);
    rec r = {.op = op, .name = failed(z) ? -1 : pool_add(z, full), .layer = z->layer,
             .in_off = (int)z->nins, .weight = -1, .out_elems = out_elems};
    return push_rec(z, &r);
}

int zb_weight(zb *z, const char *name, double elems)
{
    char full[512];
    prefixed(z->wprefix[0] ? z->wprefix : z->prefix, name, full, sizeof full);
    int existing = failed(z) ? -1 : op_graph_builder_find(z->b, full);
    for (size_t i = 0; existing >= 0 && i < z->nw; i++)
        if (z->w[i].op == existing)
            return (int)i;
    /* param_bytes: the weight plus Adam's first and second moments (3 x). */
    int op = add_op(z, full, "VariableV2", z->layer, 0, 0, 0, 3 * F32 * elems, full);
    if (failed(z) || op_reserve((void **)&z->w, sizeof *z->w, &z->cap_w, z->nw + 1, &z->err))
        return -1;
    z->w[z->nw] = (weight){.op = op, .name = pool_add(z, full), .layer = z->layer,
                           .elems = elems};
    return failed(z) ? -1 : (int)z->nw++;
}

double zb_elems(const zb *z, int rec_id)
{
    return rec_id >= 0 && (size_t)rec_id < z->nr ? z->r[rec_id].out_elems : 0;
}

int zb_op_n(zb *z, const char *name, const char *type, double flops, double out_elems,
            int weight_id, const int *inputs, int n_inputs, int flags)
{
    if (failed(z))
        return -1;
    if (weight_id >= (int)z->nw) {
        op_fail(&z->err, OP_EINTERNAL, "zoo: op %s/%s uses unknown weight %d", z->prefix, name,
                weight_id);
        return -1;
    }
    double moved = out_elems + (weight_id >= 0 ? z->w[weight_id].elems : 0);
    int needs_grad = weight_id >= 0;
    for (int i = 0; i < n_inputs; i++) {
        if (inputs[i] < 0 || (size_t)inputs[i] >= z->nr) {
            op_fail(&z->err, OP_EINTERNAL, "zoo: op %s/%s has unknown input %d", z->prefix,
                    name, inputs[i]);
            return -1;
        }
        moved += z->r[inputs[i]].out_elems;
        needs_grad |= z->r[inputs[i]].needs_grad;
    }
    char full[512];
    full_name(z, name, full, sizeof full);
    int op = add_op(z, full, type, z->layer, flops, F32 * moved, out_elems, 0, NULL);
    for (int i = 0; i < n_inputs; i++)
        add_edge(z, z->r[inputs[i]].op, op, -1);
    if (weight_id >= 0)
        add_edge(z, z->w[weight_id].op, op, F32 * z->w[weight_id].elems);
    if (failed(z) ||
        op_reserve((void **)&z->ins, sizeof *z->ins, &z->cap_ins, z->nins + (size_t)n_inputs,
                   &z->err))
        return -1;
    rec r = {.op = op, .name = pool_add(z, full), .layer = z->layer, .in_off = (int)z->nins,
             .n_in = n_inputs, .weight = weight_id, .flags = flags,
             .needs_grad = needs_grad && !(flags & ZB_NO_GRAD), .flops = flops,
             .out_elems = out_elems};
    if (n_inputs > 0)
        memcpy(z->ins + z->nins, inputs, (size_t)n_inputs * sizeof *inputs);
    z->nins += (size_t)n_inputs;
    return push_rec(z, &r);
}

/* ---- backward pass ---- */

typedef struct backward {
    int *owner;     /* per ins entry: the consuming record */
    int *cons_off;  /* CSR: consumers (ins entries) of each record */
    int *cons;
    int *ins_grad;  /* per ins entry: op giving the gradient for that input, or -1 */
    int *wg_w, *wg_op; /* weight-gradient ops: (weight, op) pairs */
    int n_wg;
} backward;

static const char *name_of(const zb *z, const rec *r)
{
    return z->pool + r->name;
}

/* A gradient-side op named "gradients/<forward name>/<suffix>". */
static int grad_op(zb *z, const char *fwd, const char *suffix, const char *type, int layer,
                   double flops, double moved, double out_elems, const char *colocate)
{
    char name[600];
    snprintf(name, sizeof name, "gradients/%s/%s", fwd, suffix);
    return add_op(z, name, type, layer, flops, F32 * moved, out_elems, 0, colocate);
}

static op_status backward_init(zb *z, backward *bw)
{
    size_t nr = z->nr, ni = z->nins;
    bw->owner = op_calloc(ni + 1, sizeof(int), &z->err);
    bw->cons_off = op_calloc(nr + 1, sizeof(int), &z->err);
    bw->cons = op_calloc(ni + 1, sizeof(int), &z->err);
    bw->ins_grad = op_calloc(ni + 1, sizeof(int), &z->err);
    bw->wg_w = op_calloc(nr + 1, sizeof(int), &z->err);
    bw->wg_op = op_calloc(nr + 1, sizeof(int), &z->err);
    if (failed(z))
        return z->err.code;
    for (size_t i = 0; i < nr; i++)
        for (int k = 0; k < z->r[i].n_in; k++)
            bw->owner[z->r[i].in_off + k] = (int)i;
    for (size_t e = 0; e < ni; e++)
        bw->cons_off[z->ins[e] + 1]++;
    for (size_t i = 0; i < nr; i++)
        bw->cons_off[i + 1] += bw->cons_off[i];
    int *fill = op_calloc(nr + 1, sizeof(int), &z->err);
    if (!fill)
        return z->err.code;
    for (size_t e = 0; e < ni; e++) {
        int src = z->ins[e];
        bw->cons[bw->cons_off[src] + fill[src]++] = (int)e;
        bw->ins_grad[e] = -1;
    }
    free(fill);
    return OP_OK;
}

static void backward_free(backward *bw)
{
    free(bw->owner);
    free(bw->cons_off);
    free(bw->cons);
    free(bw->ins_grad);
    free(bw->wg_w);
    free(bw->wg_op);
}

/* The op holding the gradient of record ri's output: the one upstream
 * gradient, an AddN of several, or -1 when no gradient reaches it. */
static int upstream_grad(zb *z, backward *bw, int ri)
{
    const rec *r = &z->r[ri];
    int n = 0, single = -1;
    for (int c = bw->cons_off[ri]; c < bw->cons_off[ri + 1]; c++)
        if (bw->ins_grad[bw->cons[c]] >= 0) {
            single = bw->ins_grad[bw->cons[c]];
            n++;
        }
    if (n <= 1)
        return single;
    int sum = grad_op(z, name_of(z, r), "AddN", "AddN", r->layer, n * r->out_elems,
                      (n + 1) * r->out_elems, r->out_elems, NULL);
    for (int c = bw->cons_off[ri]; c < bw->cons_off[ri + 1]; c++)
        if (bw->ins_grad[bw->cons[c]] >= 0)
            add_edge(z, bw->ins_grad[bw->cons[c]], sum, F32 * r->out_elems);
    return sum;
}

/* Gradient ops of one forward record: one per input that needs a gradient,
 * and the weight gradient. */
static void differentiate(zb *z, backward *bw, int ri, int is_loss)
{
    const rec *r = &z->r[ri];
    int up = upstream_grad(z, bw, ri);
    if (up < 0 && !is_loss)
        return; /* no path to the loss */
    int n_grad_in = 0;
    for (int k = 0; k < r->n_in; k++)
        n_grad_in += z->r[z->ins[r->in_off + k]].needs_grad;
    double w_elems = r->weight >= 0 ? z->w[r->weight].elems : 0;
    for (int k = 0; k < r->n_in; k++) {
        const rec *in = &z->r[z->ins[r->in_off + k]];
        if (!in->needs_grad)
            continue;
        char suffix[32];
        snprintf(suffix, sizeof suffix, n_grad_in == 1 ? "grad" : "grad_%d", k);
        int g = grad_op(z, name_of(z, r), suffix, "Grad", r->layer, r->flops,
                        2 * r->out_elems + in->out_elems + w_elems, in->out_elems, NULL);
        add_edge(z, up, g, F32 * r->out_elems);
        add_edge(z, r->op, g, -1);
        if (r->weight >= 0)
            add_edge(z, z->w[r->weight].op, g, F32 * w_elems);
        bw->ins_grad[r->in_off + k] = g;
    }
    if (r->weight >= 0) {
        int sparse = r->flags & ZB_SPARSE_GRAD;
        double moved = r->out_elems + w_elems;
        for (int k = 0; k < r->n_in; k++)
            moved += z->r[z->ins[r->in_off + k]].out_elems;
        int gw = grad_op(z, name_of(z, r), "grad_w", sparse ? "UnsortedSegmentSum" : "GradWeight",
                         r->layer, sparse ? r->out_elems : r->flops, moved,
                         sparse ? r->out_elems : w_elems, NULL);
        add_edge(z, up, gw, F32 * r->out_elems);
        if (up < 0)
            add_edge(z, r->op, gw, -1);
        for (int k = 0; k < r->n_in; k++)
            add_edge(z, z->r[z->ins[r->in_off + k]].op, gw, -1);
        bw->wg_w[bw->n_wg] = r->weight;
        bw->wg_op[bw->n_wg++] = gw;
    }
}

static void update_one(zb *z, const weight *w, const int *grads, int n)
{
    int grad = grads[0];
    char name[600];
    if (n > 1) {
        snprintf(name, sizeof name, "gradients/%s/AddN", z->pool + w->name);
        grad = add_op(z, name, "AddN", w->layer, n * w->elems, (n + 1) * F32 * w->elems,
                      w->elems, 0, NULL);
        for (int i = 0; i < n; i++)
            add_edge(z, grads[i], grad, F32 * w->elems);
    }
    snprintf(name, sizeof name, "%s/ApplyAdam", z->pool + w->name);
    /* Adam reads w, m, v, g and writes w, m, v: 7 arrays, ~10 FLOPs a weight. */
    int upd = add_op(z, name, "ApplyAdam", w->layer, 10 * w->elems, 7 * F32 * w->elems, 0, 0,
                     z->pool + w->name);
    add_edge(z, grad, upd, F32 * w->elems);
    add_edge(z, w->op, upd, 0);
}

/* Per weight: sum its gradients (AddN) and apply Adam, colocated with the
 * variable.  The (weight, gradient op) pairs are bucketed by weight. */
static void add_updates(zb *z, backward *bw)
{
    int *start = op_calloc(z->nw + 1, sizeof(int), &z->err);
    int *fill = op_calloc(z->nw + 1, sizeof(int), &z->err);
    int *ops = op_calloc((size_t)bw->n_wg + 1, sizeof(int), &z->err);
    if (failed(z))
        goto done;
    for (int i = 0; i < bw->n_wg; i++)
        start[bw->wg_w[i] + 1]++;
    for (size_t wi = 0; wi < z->nw; wi++)
        start[wi + 1] += start[wi];
    for (int i = 0; i < bw->n_wg; i++)
        ops[start[bw->wg_w[i]] + fill[bw->wg_w[i]]++] = bw->wg_op[i];
    for (size_t wi = 0; wi < z->nw && !failed(z); wi++)
        if (fill[wi] > 0)
            update_one(z, &z->w[wi], ops + start[wi], fill[wi]);
done:
    free(start);
    free(fill);
    free(ops);
}

op_graph *zb_finish(zb *z, int loss, op_error *err)
{
    backward bw = {0};
    if (!failed(z) && (loss < 0 || (size_t)loss >= z->nr))
        op_fail(&z->err, OP_EINTERNAL, "zoo: unknown loss record %d", loss);
    if (!failed(z) && !backward_init(z, &bw)) {
        for (int ri = (int)z->nr - 1; ri >= 0 && !failed(z); ri--)
            if (z->r[ri].needs_grad)
                differentiate(z, &bw, ri, ri == loss);
        add_updates(z, &bw);
    }
    backward_free(&bw);
    op_graph *g = NULL;
    if (!failed(z)) {
        g = op_graph_finish(z->b, &z->err);
        z->b = NULL;
    }
    if (!g && err)
        *err = z->err;
    zb_free(z);
    return g;
}
