/*
 * test_zoo.c - the model zoo and the device profiles.
 *
 * Every model generates, survives a write/read round trip and validates;
 * structural facts hold on each (topological order covers all ops, every op
 * has a layer scope, every gradient op depends on its forward op's output,
 * each colocation group is one variable with its ApplyAdam update); op
 * counts grow linearly with --layers / --cells / --stacks; bad settings fail
 * with a message naming the option, and the command exits with code 1.
 * Models run at reduced sizes (short sequences, few cells) to stay fast
 * under ASan; the structure does not depend on the sizes.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opplace/io.h"
#include "opplace/profile.h"
#include "opplace/zoo.h"
#include "testkit.h"

/* name, then option pairs (NULL-terminated) for a small but complete graph */
typedef struct small_case {
    const char *model;
    const char *opts[12];
} small_case;

static const small_case SMALL[] = {
    {"rnnlm", {"seq-len", "6", "hidden", "64", NULL}},
    {"nmt", {"seq-len", "6", "hidden", "64", NULL}},
    {"gnmt", {"seq-len", "6", "hidden", "64", "layers", "3", NULL}},
    {"transformer", {"layers", "2", "hidden", "64", "heads", "4", "seq-len", "8", NULL}},
    {"transformer_xl", {"layers", "2", "hidden", "40", "heads", "4", "seq-len", "128", NULL}},
    {"inception_v3", {"batch", "2", NULL}},
    {"nasnet", {"cells", "1", "hidden", "16", "batch", "2", NULL}},
    {"pnasnet", {"cells", "1", "hidden", "16", "batch", "2", NULL}},
    {"amoebanet", {"cells", "1", "hidden", "16", "batch", "2", NULL}},
    {"wavenet", {"stacks", "1", "layers", "4", "seq-len", "64", NULL}},
    {"tensor_holography", {"layers", "6", "batch", "1", NULL}},
};
#define N_SMALL ((int)(sizeof SMALL / sizeof SMALL[0]))

static op_options *options(const char *const *kv, const char *extra_k, const char *extra_v)
{
    op_error err = {0};
    op_options *o = op_options_new(&err);
    cr_assert_not_null(o);
    for (int i = 0; kv[i]; i += 2)
        cr_assert_eq(op_options_set(o, kv[i], kv[i + 1], &err), OP_OK);
    if (extra_k)
        cr_assert_eq(op_options_set(o, extra_k, extra_v, &err), OP_OK);
    return o;
}

static op_graph *generate(const char *model, const char *const *kv, const char *k, const char *v)
{
    const op_zoo_model *m = op_zoo_find(model);
    cr_assert_not_null(m, "model %s is not registered", model);
    op_options *o = options(kv, k, v);
    op_error err = {0};
    op_graph *g = m->generate(o, &err);
    cr_assert_not_null(g, "%s: %s", model, err.msg);
    cr_assert_null(op_options_first_unused(o), "%s did not read --%s", model,
                   op_options_first_unused(o));
    op_options_free(o);
    return g;
}

static int starts_with(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* Does `from` reach `to` along edges?  Searches backwards from `to`,
 * pruned by topological position. */
static int reaches(const op_graph *g, int from, int to, int *stack, char *seen)
{
    memset(seen, 0, (size_t)g->n_ops);
    int sp = 0;
    stack[sp++] = to;
    seen[to] = 1;
    while (sp) {
        int v = stack[--sp];
        if (v == from)
            return 1;
        for (int k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
            int u = g->pred[k];
            if (!seen[u] && g->topo_pos[u] >= g->topo_pos[from]) {
                seen[u] = 1;
                stack[sp++] = u;
            }
        }
    }
    return 0;
}

/* The forward op of a gradient op "gradients/<fwd>/<suffix>", or -1. */
static int forward_of(const op_graph *g, const char *grad_name)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", grad_name + strlen("gradients/"));
    char *slash = strrchr(buf, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    return op_graph_find(g, buf);
}

static void check_structure(const op_graph *g, const char *model)
{
    /* topological order: a permutation that respects every edge */
    char *seen = calloc((size_t)g->n_ops, 1);
    int *stack = malloc(sizeof(int) * (size_t)g->n_ops);
    for (int i = 0; i < g->n_ops; i++) {
        cr_assert(g->topo[i] >= 0 && g->topo[i] < g->n_ops && !seen[g->topo[i]]);
        seen[g->topo[i]] = 1;
    }
    for (int e = 0; e < g->n_edges; e++)
        cr_assert_lt(g->topo_pos[g->edge_src[e]], g->topo_pos[g->edge_dst[e]]);
    int n_grad = 0, n_update = 0, n_var = 0;
    for (int i = 0; i < g->n_ops; i++) {
        const char *name = g->op_name[i];
        cr_assert_neq(g->layer[i], OP_NONE, "%s: op %s has no layer scope", model, name);
        cr_assert_gt(op_graph_time_on_kind(g, i, "gpu"), 0, "%s: %s has no time", model, name);
        if (starts_with(name, "gradients/")) {
            int f = forward_of(g, name);
            cr_assert_geq(f, 0, "%s: no forward op for %s", model, name);
            cr_assert(reaches(g, f, i, stack, seen), "%s: %s does not depend on %s", model, name,
                      g->op_name[f]);
            n_grad++;
        }
        if (strcmp(g->op_type[i], "VariableV2") == 0) {
            cr_assert_gt(g->param_bytes[i], 0);
            n_var++;
        }
        if (strcmp(g->op_type[i], "ApplyAdam") == 0)
            n_update++;
    }
    cr_assert_gt(n_grad, g->n_ops / 4, "%s: only %d gradient ops", model, n_grad);
    cr_assert_eq(n_var, n_update, "%s: %d variables but %d updates", model, n_var, n_update);
    /* colocation groups: exactly {variable G, G/ApplyAdam} */
    int *members = calloc((size_t)g->n_groups, sizeof(int));
    for (int i = 0; i < g->n_ops; i++) {
        if (g->colocate[i] == OP_NONE)
            continue;
        const char *grp = g->group_name[g->colocate[i]];
        members[g->colocate[i]]++;
        if (strcmp(g->op_type[i], "VariableV2") == 0) {
            cr_assert_str_eq(g->op_name[i], grp);
        } else {
            cr_assert_str_eq(g->op_type[i], "ApplyAdam", "%s: %s in group %s", model,
                             g->op_name[i], grp);
            char want[1024];
            snprintf(want, sizeof want, "%s/ApplyAdam", grp);
            cr_assert_str_eq(g->op_name[i], want);
            cr_assert(reaches(g, op_graph_find(g, grp), i, stack, seen));
        }
    }
    for (int k = 0; k < g->n_groups; k++)
        cr_assert_eq(members[k], 2, "%s: group %s has %d ops", model, g->group_name[k],
                     members[k]);
    free(members);
    free(seen);
    free(stack);
}

Test(zoo, every_model_round_trips_and_is_well_formed)
{
    const char *dir = tk_tmpdir();
    for (int c = 0; c < N_SMALL; c++) {
        op_graph *g = generate(SMALL[c].model, SMALL[c].opts, NULL, NULL);
        char path[512];
        snprintf(path, sizeof path, "%s/%s.json", dir, SMALL[c].model);
        op_error err = {0};
        cr_assert_eq(op_graph_write(g, path, &err), OP_OK, "%s", err.msg);
        op_graph *r = op_graph_read(path, &err);
        cr_assert_not_null(r, "%s: %s", SMALL[c].model, err.msg);
        cr_assert_eq(r->n_ops, g->n_ops);
        cr_assert_eq(r->n_edges, g->n_edges);
        cr_assert_eq(r->n_groups, g->n_groups);
        check_structure(r, SMALL[c].model);
        op_graph_free(r);
        op_graph_free(g);
    }
}

Test(zoo, every_registered_paper_model_has_a_small_case)
{
    static const char *const want[] = {"inception_v3", "nmt", "gnmt", "rnnlm", "transformer",
                                       "transformer_xl", "nasnet", "pnasnet", "amoebanet",
                                       "wavenet", "tensor_holography"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        cr_assert_not_null(op_zoo_find(want[i]), "%s missing", want[i]);
        int found = 0;
        for (int c = 0; c < N_SMALL; c++)
            found |= strcmp(SMALL[c].model, want[i]) == 0;
        cr_assert(found);
    }
}

/* The defaults are the papers' scale.  SGDP's 8-layer GNMT has
 * 83,712 ops; ours must have at least 50,000 (bench/RESULTS.md, "Model zoo"). */
Test(zoo, default_gnmt_8_layers_is_at_the_papers_scale, .timeout = 120)
{
    static const char *const eight[] = {"layers", "8", NULL};
    op_graph *g = generate("gnmt", eight, NULL, NULL);
    cr_assert(g->n_ops >= 50000 && g->n_ops < 120000, "gnmt --layers 8 has %d ops", g->n_ops);
    cr_assert_str_eq(g->name, "gnmt_8layer_h1024_b64_t110");
    op_graph_free(g);
}

/* The default run and the tests ask for the small graph explicitly: the
 * old demo size, with every parameter fitting a 16 GB GPU four times. */
Test(zoo, small_gnmt_is_a_demo_sized_graph)
{
    static const char *const small_size[] = {"size", "small", NULL};
    op_graph *g = generate("gnmt", small_size, NULL, NULL);
    cr_assert(g->n_ops > 1000 && g->n_ops < 10000, "gnmt has %d ops", g->n_ops);
    int64_t params = 0;
    for (int i = 0; i < g->n_ops; i++)
        params += g->param_bytes[i];
    cr_assert_lt(params, 4LL * 16 * 1024 * 1024 * 1024 / 4, "parameters alone %lld", (long long)params);
    op_graph_free(g);
    /* op_zoo_small_settings is the same setting, for callers in C */
    op_error err = {0};
    op_options *o = op_options_new(&err);
    cr_assert_eq(op_zoo_small_settings(o, "gnmt", &err), OP_OK);
    g = op_zoo_find("gnmt")->generate(o, &err);
    cr_assert_str_eq(g->name, "gnmt_2layer_h1024_b64_t20");
    op_graph_free(g);
    op_options_free(o);
}

/* Each paper's settings by one flag; explicit options win; the default is
 * the first paper listed; a paper that does not evaluate a model is an
 * error naming the papers that do. */
Test(zoo, paper_flag_selects_each_papers_settings)
{
    static const struct {
        const char *model, *paper, *name;
    } cases[] = {
        {"nmt", "celeritas", "nmt_4layer_h2048_b512_t75"},
        {"nmt", "pesto", "nmt_2layer_h1024_b128_t161"},
        {"nmt", "trinity", "nmt_2layer_h1024_b64_t88"},
        {"inception_v3", "celeritas", "inception_v3_b512"},
        {"inception_v3", "sgdp", "inception_v3_b64"},
        {"rnnlm", "pesto", "rnnlm_2layer_h2048_b128_t53"},
        {"gnmt", "trinity", "gnmt_2layer_h1024_b64_t37"},
        {"tensor_holography", "celeritas", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        static const char *const none[] = {NULL};
        op_graph *g = generate(cases[i].model, none, "paper", cases[i].paper);
        if (cases[i].name)
            cr_assert_str_eq(g->name, cases[i].name, "%s --paper %s", cases[i].model,
                             cases[i].paper);
        int n = g->n_ops;
        op_graph_free(g);
        if (!strcmp(op_zoo_default_paper(cases[i].model), cases[i].paper)) {
            g = generate(cases[i].model, none, NULL, NULL);
            cr_assert_eq(g->n_ops, n, "%s: the default is %s's setting", cases[i].model,
                         cases[i].paper);
            op_graph_free(g);
        }
    }
    cr_assert_str_eq(op_zoo_default_paper("nmt"), "celeritas");
    cr_assert_str_eq(op_zoo_default_paper("gnmt"), "sgdp");
    cr_assert_null(op_zoo_default_paper("synthetic"));
    static const char *const batch[] = {"paper", "celeritas", "batch", "8", NULL};
    op_graph *g = generate("inception_v3", batch, NULL, NULL);
    cr_assert_str_eq(g->name, "inception_v3_b8", "an explicit --batch wins over the paper's");
    op_graph_free(g);

    op_error err = {0};
    op_options *o = op_options_new(&err);
    op_options_set(o, "paper", "celeritas", &err);
    cr_assert_null(op_zoo_find("gnmt")->generate(o, &err));
    cr_assert_eq(err.code, OP_EUSAGE);
    cr_assert(strstr(err.msg, "--paper celeritas") && strstr(err.msg, "sgdp, trinity"), "%s",
              err.msg);
    op_options_free(o);
    err = (op_error){0};
    o = op_options_new(&err);
    op_options_set(o, "size", "huge", &err);
    cr_assert_null(op_zoo_find("nmt")->generate(o, &err));
    cr_assert_eq(err.code, OP_EUSAGE);
    cr_assert(strstr(err.msg, "--size huge"), "%s", err.msg);
    op_options_free(o);
    char *out = NULL;
    cr_assert_eq(tk_run(OPPLACE_BIN " zoo synthetic --paper sgdp 2>&1", &out), 2, "%s", out);
    free(out);
}

/* Op count with option `k` = v. */
static int count_with(const small_case *c, const char *k, const char *v)
{
    op_graph *g = generate(c->model, c->opts, k, v);
    int n = g->n_ops;
    op_graph_free(g);
    return n;
}

static const small_case *small(const char *model)
{
    for (int c = 0; c < N_SMALL; c++)
        if (strcmp(SMALL[c].model, model) == 0)
            return &SMALL[c];
    cr_assert_fail("no small case for %s", model);
    return NULL;
}

Test(zoo, op_counts_grow_linearly_with_depth)
{
    static const struct {
        const char *model, *opt;
    } grow[] = {{"rnnlm", "layers"},     {"nmt", "layers"},          {"gnmt", "layers"},
                {"transformer", "layers"}, {"transformer_xl", "layers"}, {"nasnet", "cells"},
                {"pnasnet", "cells"},    {"amoebanet", "cells"},     {"wavenet", "stacks"},
                {"tensor_holography", "layers"}};
    for (size_t i = 0; i < sizeof grow / sizeof *grow; i++) {
        const small_case *c = small(grow[i].model);
        int n2 = count_with(c, grow[i].opt, "3"), n4 = count_with(c, grow[i].opt, "5"),
            n6 = count_with(c, grow[i].opt, "7");
        cr_assert(n2 < n4 && n4 < n6, "%s --%s: %d %d %d", grow[i].model, grow[i].opt, n2, n4,
                  n6);
        /* each extra layer adds the same ops (within 10%) */
        double d1 = n4 - n2, d2 = n6 - n4;
        cr_assert(d2 > 0.9 * d1 && d2 < 1.1 * d1, "%s: increments %g, %g", grow[i].model, d1, d2);
    }
}

Test(zoo, bad_settings_name_the_option)
{
    static const struct {
        const char *model, *k, *v, *needle;
    } bad[] = {{"gnmt", "layers", "-1", "--layers"},
               {"rnnlm", "layers", "0", "--layers"},
               {"nasnet", "cells", "0", "--cells"},
               {"wavenet", "stacks", "-3", "--stacks"},
               {"transformer", "heads", "5", "--heads"},
               {"inception_v3", "batch", "zero", "--batch"},
               {"transformer", "profile", "tpu", "--profile"},
               {"gnmt", "profile", "cpu9", "--profile"}};
    static const char *const none[] = {NULL};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        op_options *o = options(none, bad[i].k, bad[i].v);
        op_error err = {0};
        op_graph *g = op_zoo_find(bad[i].model)->generate(o, &err);
        cr_assert_null(g, "%s --%s %s was accepted", bad[i].model, bad[i].k, bad[i].v);
        cr_assert(err.code == OP_EUSAGE || err.code == OP_EINPUT);
        cr_assert_not_null(strstr(err.msg, bad[i].needle), "message: %s", err.msg);
        op_options_free(o);
    }
}

Test(zoo, cpu_option_gives_per_kind_times)
{
    op_graph *g = generate("wavenet", small("wavenet")->opts, "cpu", NULL);
    cr_assert_geq(op_graph_find_kind(g, "cpu"), 0);
    for (int i = 0; i < g->n_ops; i++) {
        double gpu = op_graph_time_on_kind(g, i, "gpu"), cpu = op_graph_time_on_kind(g, i, "cpu");
        cr_assert(gpu > 0 && cpu > 0, "%s: gpu %g cpu %g", g->op_name[i], gpu, cpu);
    }
    /* the big convolutions are far slower on the CPU */
    double gpu = 0, cpu = 0;
    for (int i = 0; i < g->n_ops; i++) {
        gpu += op_graph_time_on_kind(g, i, "gpu");
        cpu += op_graph_time_on_kind(g, i, "cpu");
    }
    cr_assert_gt(cpu, 2 * gpu);
    op_graph_free(g);
}

Test(zoo, faster_profile_gives_faster_ops)
{
    const small_case *c = small("inception_v3");
    op_graph *k80 = generate(c->model, c->opts, "profile", "k80");
    op_graph *h100 = generate(c->model, c->opts, "profile", "h100");
    cr_assert_eq(k80->n_ops, h100->n_ops);
    double a = 0, b = 0;
    for (int i = 0; i < k80->n_ops; i++) {
        a += op_graph_time_on_kind(k80, i, "gpu");
        b += op_graph_time_on_kind(h100, i, "gpu");
    }
    cr_assert_gt(a, 3 * b, "k80 %g us vs h100 %g us", a, b);
    op_graph_free(k80);
    op_graph_free(h100);
}

Test(profiles, known_profiles_and_roofline)
{
    static const char *const names[] = {"k80", "p100", "v100", "a100", "h100", "cpu"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const op_device_profile *p = op_profile_find(names[i]);
        cr_assert_not_null(p, "%s", names[i]);
        cr_assert(p->peak_flops > 1e11 && p->mem_bandwidth > 1e10 && p->memory_bytes > 0 &&
                  p->launch_us >= 0 && p->source && p->source[0]);
    }
    cr_assert_null(op_profile_find("tpu"));
    cr_assert_null(op_profile_find(NULL));
    const op_device_profile *v = op_profile_find("v100");
    /* launch only; compute-bound; memory-bound */
    cr_assert_float_eq(op_roofline_us(v, 0, 0), v->launch_us, 1e-9);
    double t = op_roofline_us(v, 1e12, 1);
    cr_assert_float_eq(t, v->launch_us + 1e12 / v->peak_flops * 1e6, 1e-6);
    t = op_roofline_us(v, 1, 1e9);
    cr_assert_float_eq(t, v->launch_us + 1e9 / v->mem_bandwidth * 1e6, 1e-6);
    int n;
    op_profiles(&n);
    cr_assert_eq(n, 6);
}

Test(zoo_cli, bad_model_and_bad_layers_exit_1)
{
    char *out = NULL;
    int rc = tk_run(OPPLACE_BIN " zoo nosuchmodel 2>&1", &out);
    cr_assert_eq(rc, 1, "exit %d: %s", rc, out);
    cr_assert_not_null(strstr(out, "unknown model 'nosuchmodel'"), "%s", out);
    free(out);
    out = NULL;
    rc = tk_run(OPPLACE_BIN " zoo gnmt --layers -1 2>&1", &out);
    cr_assert_eq(rc, 1, "exit %d: %s", rc, out);
    cr_assert_not_null(strstr(out, "--layers"), "%s", out);
    free(out);
    out = NULL;
    rc = tk_run(OPPLACE_BIN " zoo gnmt --seq-len 3 --profile nope 2>&1", &out);
    cr_assert_eq(rc, 1, "exit %d: %s", rc, out);
    cr_assert_not_null(strstr(out, "--profile"), "%s", out);
    free(out);
}

Test(zoo_cli, cpu_flag_and_output_file)
{
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd,
             OPPLACE_BIN " zoo wavenet --stacks 1 --layers 2 --seq-len 16 --cpu -o %s/w.json "
                         "2>&1 && " OPPLACE_BIN " info %s/w.json --cpu --json",
             tk_tmpdir(), tk_tmpdir());
    int rc = tk_run(cmd, &out);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
    cr_assert_not_null(strstr(out, "\"ops\""), "%s", out);
    free(out);
}
