/* testkit.c - see testkit.h. */
#include "testkit.h"

#include "opplace/zoo.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static void die(const char *what, const op_error *err)
{
    fprintf(stderr, "testkit: %s: %s\n", what, err->msg);
    abort();
}

int tk_op_full(op_graph_builder *b, const op_op_spec *spec)
{
    op_error err = {0};
    int id = op_graph_add_op(b, spec, &err);
    if (id < 0)
        die("add op", &err);
    return id;
}

int tk_op(op_graph_builder *b, const char *name, double time_us, int64_t output_bytes)
{
    return tk_op_full(b, &(op_op_spec){.name = name, .time_us = time_us,
                                        .output_bytes = output_bytes});
}

void tk_edge(op_graph_builder *b, int src, int dst, int64_t bytes)
{
    op_error err = {0};
    if (op_graph_add_edge(b, src, dst, bytes, &err))
        die("add edge", &err);
}

op_graph *tk_finish(op_graph_builder *b)
{
    op_error err = {0};
    op_graph *g = op_graph_finish(b, &err);
    if (!g)
        die("finish graph", &err);
    return g;
}

op_cluster *tk_cluster(int nd, double lat, double upb, int64_t mem)
{
    op_device devs[16];
    char names[16][16];
    for (int i = 0; i < nd; i++) {
        snprintf(names[i], sizeof names[i], "d%d", i);
        devs[i] = (op_device){names[i], "gpu", mem, 1.0};
    }
    op_link_model def = {.latency_us = lat, .us_per_byte = upb};
    op_error err = {0};
    op_cluster *c = op_cluster_new(devs, nd, NULL, 0, &def, "test", &err);
    if (!c)
        die("cluster", &err);
    return c;
}

uint64_t tk_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

op_graph *tk_random_dag_grouped(int n, double p, uint64_t seed, int groups)
{
    op_error err = {0};
    op_graph_builder *b = op_graph_builder_new("random", &err);
    char name[32], grp[16];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "v%d", i);
        snprintf(grp, sizeof grp, "g%d", groups > 0 ? i % groups : 0);
        /* output first: the order gcc evaluated the old tk_op(...) call's
         * arguments in, so the graphs of every seed stay the same */
        int64_t out = (int64_t)(tk_rand(&seed) % 100000);
        double t = 1 + (double)(tk_rand(&seed) % 100);
        op_op_spec s = {.name = name, .time_us = t, .output_bytes = out,
                        .colocate = groups > 0 && i % 3 == 0 ? grp : NULL};
        tk_op_full(b, &s);
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if ((double)(tk_rand(&seed) % 1000000) < p * 1e6)
                tk_edge(b, i, j, -1);
    return tk_finish(b);
}

op_graph *tk_random_dag(int n, double p, uint64_t seed)
{
    return tk_random_dag_grouped(n, p, seed, 0);
}

void tk_bind(tk_problem *tp, op_graph *g, op_cluster *c)
{
    op_error err = {0};
    tp->g = g;
    tp->c = c;
    if (op_problem_init(&tp->p, g, c, &err))
        die("bind problem", &err);
}

void tk_unbind(tk_problem *tp)
{
    op_problem_destroy(&tp->p);
    op_graph_free(tp->g);
    op_cluster_free(tp->c);
}

double tk_simulate(const op_problem *p, const int *device_of, op_sim_result *r)
{
    op_error err = {0};
    op_placement pl;
    op_placement_init(&pl, p->n, p->nd, &err);
    memcpy(pl.device_of, device_of, (size_t)p->n * sizeof(int));
    if (op_simulate(p, &pl, r, NULL, &err))
        die("simulate", &err);
    op_placement_destroy(&pl);
    return r->step_time_us;
}

double tk_step(const op_problem *p, const int *device_of)
{
    op_sim_result r;
    op_error err = {0};
    if (op_sim_result_init(&r, p, &err))
        die("simulate", &err);
    double t = tk_simulate(p, device_of, &r);
    op_sim_result_destroy(&r);
    return t;
}

void tk_sim(tk_problem *tp, const int *device_of, const int *order_off, const int *order,
            tk_sim_out *o)
{
    op_error err = {0};
    op_placement pl;
    if (op_placement_init(&pl, tp->p.n, tp->p.nd, &err))
        die("placement", &err);
    memcpy(pl.device_of, device_of, (size_t)tp->p.n * sizeof(int));
    if (order_off) {
        if (op_placement_alloc_order(&pl, &err))
            die("placement order", &err);
        memcpy(pl.order_off, order_off, ((size_t)tp->p.nd + 1) * sizeof(int));
        memcpy(pl.order, order, (size_t)tp->p.n * sizeof(int));
    }
    if (op_sim_result_init(&o->r, &tp->p, &err) || op_sim_trace_init(&o->t, &tp->p, &err) ||
        op_simulate(&tp->p, &pl, &o->r, &o->t, &err))
        die("simulate", &err);
    op_placement_destroy(&pl);
}

void tk_sim_out_destroy(tk_sim_out *o)
{
    op_sim_result_destroy(&o->r);
    op_sim_trace_destroy(&o->t);
}

void tk_sim_done(tk_sim_out *o, tk_problem *tp)
{
    tk_sim_out_destroy(o);
    tk_unbind(tp);
}

int tk_run(const char *cmd, char **out)
{
    char full[4096];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *f = popen(full, "r");
    if (!f)
        return -1;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    if (buf)
        buf[n] = '\0';
    int status = pclose(f);
    if (out)
        *out = buf;
    else
        free(buf);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const char *tk_tmpdir(void)
{
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/opplace-test-XXXXXX");
        if (!mkdtemp(dir))
            abort();
    }
    return dir;
}

static op_graph *order_matters_graph(int ids[3])
{
    op_error err = {0};
    op_graph_builder *b = op_graph_builder_new("order-matters", &err);
    if (!b)
        die("graph builder", &err);
    ids[0] = tk_op(b, "A", 10, 0);
    ids[1] = tk_op(b, "B", 10, 0);
    ids[2] = tk_op(b, "C", 100, 0);
    tk_edge(b, ids[1], ids[2], 0);
    return tk_finish(b);
}

void tk_order_matters_setup(tk_problem *tp, op_placement *pl, int ids[3])
{
    op_error err = {0};
    tk_bind(tp, order_matters_graph(ids), tk_cluster(2, 5.0, 1e-3, (int64_t)1 << 30));
    if (op_placement_init(pl, tp->p.n, 2, &err))
        die("placement", &err);
    pl->device_of[ids[0]] = 0;
    pl->device_of[ids[1]] = 0;
    pl->device_of[ids[2]] = 1;
}

double tk_json_number(const char *text, const char *key)
{
    json_error_t je;
    const char *brace = text ? strchr(text, '{') : NULL;
    json_t *j = brace ? json_loads(brace, JSON_DISABLE_EOF_CHECK, &je) : NULL;
    json_t *v = j ? json_object_get(j, key) : NULL;
    if (!json_is_number(v)) {
        fprintf(stderr, "testkit: no number '%s' in: %s\n", key, text ? text : "(null)");
        abort();
    }
    double x = json_number_value(v);
    json_decref(j);
    return x;
}

op_graph *tk_zoo_graph(const char *model, const char *const *kv)
{
    op_error err = {0};
    op_options *o = op_options_new(&err);
    if (!o)
        die("options", &err);
    for (int i = 0; kv[i]; i += 2)
        if (op_options_set(o, kv[i], kv[i + 1], &err))
            die("zoo option", &err);
    const op_zoo_model *m = op_zoo_find(model);
    if (!m) {
        fprintf(stderr, "testkit: unknown zoo model %s\n", model);
        abort();
    }
    op_graph *g = m->generate(o, &err);
    op_options_free(o);
    if (!g)
        die(model, &err);
    return g;
}

/* ---------------------------------------------------------- brute force */

typedef struct brute {
    const op_problem *p;
    op_sim *sim;
    op_sim_result r;
    op_placement pl;
    int *seq, *indeg;
    unsigned char *used;
    double best;
} brute;

/* Every topological sequence of the ops, each simulated with pl's devices. */
static void sequences(brute *b, int k)
{
    const op_problem *p = b->p;
    op_error err = {0};
    if (k == p->n) {
        if (op_placement_set_order_from_sequence(&b->pl, b->seq, &err) ||
            op_sim_run(b->sim, &b->pl, &b->r, NULL, &err))
            die("brute force", &err);
        if (!b->r.oom && b->r.step_time_us < b->best)
            b->best = b->r.step_time_us;
        return;
    }
    for (int v = 0; v < p->n; v++) {
        if (b->used[v] || b->indeg[v] > 0)
            continue;
        b->used[v] = 1;
        b->seq[k] = v;
        for (int e = p->g->succ_off[v]; e < p->g->succ_off[v + 1]; e++)
            b->indeg[p->g->succ[e]]--;
        sequences(b, k + 1);
        for (int e = p->g->succ_off[v]; e < p->g->succ_off[v + 1]; e++)
            b->indeg[p->g->succ[e]]++;
        b->used[v] = 0;
    }
}

double tk_brute_optimum(const op_problem *p)
{
    op_error err = {0};
    brute b = {.p = p, .best = 1e300};
    b.sim = op_sim_new(p, &err);
    if (!b.sim || op_sim_result_init(&b.r, p, &err) ||
        op_placement_init(&b.pl, p->n, p->nd, &err))
        die("brute force", &err);
    b.seq = calloc((size_t)p->n, sizeof *b.seq);
    b.indeg = calloc((size_t)p->n, sizeof *b.indeg);
    b.used = calloc((size_t)p->n, 1);
    if (!b.seq || !b.indeg || !b.used)
        abort();
    long combos = 1;
    for (int i = 0; i < p->n; i++)
        combos *= p->nd;
    for (long c = 0; c < combos; c++) {
        long x = c;
        int bad = 0;
        for (int i = 0; i < p->n; i++, x /= p->nd) {
            b.pl.device_of[i] = (int)(x % p->nd);
            bad |= !op_eligible(p, i, b.pl.device_of[i]);
        }
        for (int grp = 0; grp < p->n_groups; grp++) /* colocation groups stay on one device */
            for (int k = p->group_off[grp] + 1; k < p->group_off[grp + 1]; k++)
                bad |= b.pl.device_of[p->group_ops[k]] !=
                       b.pl.device_of[p->group_ops[p->group_off[grp]]];
        if (bad)
            continue;
        for (int i = 0; i < p->n; i++)
            b.indeg[i] = p->g->pred_off[i + 1] - p->g->pred_off[i];
        sequences(&b, 0);
    }
    free(b.seq);
    free(b.indeg);
    free(b.used);
    op_placement_destroy(&b.pl);
    op_sim_result_destroy(&b.r);
    op_sim_free(b.sim);
    return b.best;
}
