/*
 * cmd_bench.c - `opplace bench`: run models x clusters x algorithms and
 * print the comparison table (Markdown on stdout, optionally CSV and a
 * Markdown file), with a progress line per run on stderr.  This is how
 * bench/RESULTS.md is produced.
 *
 * A model is a zoo name with optional settings, `gnmt:layers=4:batch=64`
 * (each key=value becomes the zoo option --key value).  Every placer runs
 * with --best-effort, so each returns a placement and the OOM column tells
 * which ones do not fit.  Slow placers (solvers, training) run only when
 * named or with --algo all.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/bench_table.h"
#include "cli/cli.h"
#include "core/file_util.h"
#include "opplace/report.h"
#include "opplace/zoo.h"


static const char HELP[] =
    "usage: opplace bench [--models M1,M2,...|all] [--gpus 2,4] [--preset P] [--cpu]\n"
    "                     [--algo A1,A2,...|fast|all] [-o FILE[,FILE...]] [--seed S]\n"
    "\n"
    "Places every model on every cluster with every algorithm, simulates one\n"
    "training step and prints a Markdown table: step time, ratio to the lower\n"
    "bound and to 'expert', largest device peak memory and OOM, bytes sent,\n"
    "placement seconds.  Progress goes to stderr.\n"
    "  --models   zoo models with settings, e.g. gnmt:layers=2,gnmt:layers=4\n"
    "             (default: the papers' models the zoo has, at their defaults)\n"
    "  --gpus     GPU counts (default 2,4); --preset the cluster (v100-nvlink)\n"
    "  --algo     names, 'fast' (default: every placer not marked slow) or 'all'\n"
    "  -o, --output  also write the table to files, the format by each name's\n"
    "             ending: .csv CSV, .md Markdown, .svg a bar chart of step time\n"
    "             per model and algorithm (e.g. -o out.csv,out.svg)\n"
    "Every algorithm runs with --best-effort.\n";

/* The models the papers evaluate, in the order tables list them. */
static const char *const PAPER_MODELS[] = {
    "inception_v3", "gnmt", "rnnlm", "transformer", "nasnet", "wavenet", "tensor_holography",
};

typedef struct list {
    int n;
    char **item;
} list;

static void list_free(list *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->item[i]);
    free(l->item);
    l->n = 0;
    l->item = NULL;
}

static op_status list_add(list *l, const char *s, size_t len, op_error *err)
{
    char **q = op_realloc(l->item, ((size_t)l->n + 1) * sizeof *q, err);
    if (!q)
        return OP_ENOMEM;
    l->item = q;
    if (!(q[l->n] = op_malloc(len + 1, err)))
        return OP_ENOMEM;
    memcpy(q[l->n], s, len);
    q[l->n++][len] = '\0';
    return OP_OK;
}

static op_status split_commas(const char *s, list *l, op_error *err)
{
    while (*s) {
        const char *c = strchr(s, ',');
        size_t len = c ? (size_t)(c - s) : strlen(s);
        if (len && list_add(l, s, len, err))
            return OP_ENOMEM;
        s += len + (c != NULL);
    }
    return OP_OK;
}

static op_status default_models(const char *which, list *l, op_error *err)
{
    int all = which && !strcmp(which, "all");
    if (all) {
        int n;
        const op_zoo_model *const *m = op_zoo_models(&n);
        for (int i = 0; i < n; i++)
            if (strcmp(m[i]->name, "synthetic") && list_add(l, m[i]->name, strlen(m[i]->name), err))
                return OP_ENOMEM;
    } else {
        for (size_t i = 0; i < sizeof PAPER_MODELS / sizeof *PAPER_MODELS; i++)
            if (op_zoo_find(PAPER_MODELS[i]) &&
                list_add(l, PAPER_MODELS[i], strlen(PAPER_MODELS[i]), err))
                return OP_ENOMEM;
    }
    if (l->n == 0)
        return list_add(l, "synthetic:ops=2000", strlen("synthetic:ops=2000"), err);
    return OP_OK;
}

/* Build the graph of "name:key=val:key=val". */
static op_graph *make_model(const char *spec, op_error *err)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL, *name = strtok_r(buf, ":", &save);
    const op_zoo_model *m = name ? op_zoo_find(name) : NULL;
    if (!m) {
        op_fail(err, OP_EUSAGE, "unknown model '%s' (see 'opplace zoo --list')", spec);
        return NULL;
    }
    op_options *o = op_options_new(err);
    if (!o)
        return NULL;
    for (char *kv = strtok_r(NULL, ":", &save); kv; kv = strtok_r(NULL, ":", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            op_options_free(o);
            op_fail(err, OP_EUSAGE, "model setting '%s' in '%s' is not key=value", kv, spec);
            return NULL;
        }
        *eq = '\0';
        if (op_options_set(o, kv, eq + 1, err)) {
            op_options_free(o);
            return NULL;
        }
    }
    op_graph *g = m->generate(o, err);
    const char *unused = g ? op_options_first_unused(o) : NULL;
    if (unused) {
        op_fail(err, OP_EUSAGE, "model '%s' has no setting '%s'", name, unused);
        op_graph_free(g);
        g = NULL;
    }
    op_options_free(o);
    return g;
}

/* Resolve --algo into placers. */
static op_status pick_algos(const char *spec, const op_placer ***out, int *n_out, op_error *err)
{
    int n;
    const op_placer *const *all = op_placers(&n);
    *out = op_malloc((size_t)n * sizeof **out + 1, err);
    if (!*out)
        return OP_ENOMEM;
    *n_out = 0;
    if (!strcmp(spec, "fast") || !strcmp(spec, "all")) {
        for (int i = 0; i < n; i++)
            if (!all[i]->slow || !strcmp(spec, "all"))
                (*out)[(*n_out)++] = all[i];
        return OP_OK;
    }
    list names = {0};
    if (split_commas(spec, &names, err))
        return OP_ENOMEM;
    op_status st = OP_OK;
    for (int i = 0; i < names.n && !st; i++) {
        const op_placer *pl = op_placer_find(names.item[i]);
        if (!pl)
            st = op_fail(err, OP_EUSAGE, "unknown algorithm '%s' (see 'opplace algos')",
                         names.item[i]);
        else if (*n_out < n)
            (*out)[(*n_out)++] = pl;
    }
    list_free(&names);
    return st;
}

/* The format of an -o file by its ending: 0 Markdown, 1 CSV, 2 SVG, -1 none. */
static int output_format(const char *path)
{
    static const char *const endings[] = {".md", ".csv", ".svg"};
    size_t n = strlen(path);
    for (int k = 0; k < 3; k++) {
        size_t e = strlen(endings[k]);
        if (n > e && !strcmp(path + n - e, endings[k]))
            return k;
    }
    return -1;
}

typedef struct bench_cfg {
    list models, gpus;
    const op_placer **algos;
    int n_algos;
    const char *preset;
    list outputs; /* -o: files, each written in the format of its ending */
    int cpu;
    uint64_t seed;
} bench_cfg;

static op_status read_cfg(cli_args *a, bench_cfg *c, op_error *err)
{
    const char *models = op_options_str(a->opts, "models", NULL);
    const char *gpus = op_options_str(a->opts, "gpus", "2,4");
    const char *algos = op_options_str(a->opts, "algo", "fast");
    c->preset = op_options_str(a->opts, "preset", "v100-nvlink");
    const char *outputs = op_options_str(a->opts, "output", NULL);
    c->cpu = op_options_has(a->opts, "cpu");
    op_status st;
    if ((st = op_options_u64(a->opts, "seed", 1, &c->seed, err)))
        return st;
    if (models && strcmp(models, "all"))
        st = split_commas(models, &c->models, err);
    else
        st = default_models(models, &c->models, err);
    if (!st)
        st = split_commas(gpus, &c->gpus, err);
    for (int i = 0; !st && i < c->gpus.n; i++) {
        char *end;
        long k = strtol(c->gpus.item[i], &end, 10);
        if (*end || k < 1 || k > 64)
            st = op_fail(err, OP_EUSAGE, "--gpus: '%s' is not a GPU count (1..64)",
                         c->gpus.item[i]);
    }
    if (!st)
        st = pick_algos(algos, &c->algos, &c->n_algos, err);
    if (!st && outputs)
        st = split_commas(outputs, &c->outputs, err);
    for (int i = 0; !st && i < c->outputs.n; i++)
        if (output_format(c->outputs.item[i]) < 0)
            st = op_fail(err, OP_EUSAGE, "-o %s: name the file .csv, .md or .svg",
                         c->outputs.item[i]);
    if (!st && a->n_pos)
        st = op_fail(err, OP_EUSAGE, "unexpected argument '%s' (see 'opplace bench --help')",
                     a->pos[0]);
    if (!st)
        st = cli_check_unused(a, err);
    return st;
}

/* One model on one cluster with every algorithm. */
static op_status bench_setting(const bench_cfg *c, const char *spec, op_graph *g, int gpus,
                               bench_row *rows, int *n_rows, int total, op_error *err)
{
    op_cluster *cl = op_cluster_preset(c->preset, gpus, c->cpu, err);
    if (!cl)
        return err->code;
    op_problem p;
    op_status st = op_problem_init(&p, g, cl, err);
    if (st) {
        op_cluster_free(cl);
        return st;
    }
    op_sim *sim = op_sim_new(&p, err);
    op_sim_result r;
    int have_r = sim && !op_sim_result_init(&r, &p, err);
    st = have_r ? OP_OK : OP_ENOMEM;
    for (int k = 0; k < c->n_algos && !st && !op_interrupted(); k++) {
        bench_row *row = &rows[*n_rows];
        memset(row, 0, sizeof *row);
        snprintf(row->model, sizeof row->model, "%s", spec);
        fprintf(stderr, "[%d/%d] %s x %d GPUs x %s ...\n", *n_rows + 1, total, spec, gpus,
                c->algos[k]->name);
        st = bench_run(c->algos[k], &p, sim, &r, c->seed, row, err);
        (*n_rows)++;
    }
    if (have_r)
        op_sim_result_destroy(&r);
    op_sim_free(sim);
    op_problem_destroy(&p);
    op_cluster_free(cl);
    return st;
}

static op_status write_file(const char *path, const bench_row *rows, int n, int csv,
                            op_error *err)
{
    op_atomic f;
    if (op_atomic_open(&f, path, err))
        return OP_EIO;
    if (csv)
        bench_print_csv(f.f, rows, n);
    else
        bench_print_markdown(f.f, rows, n);
    return op_atomic_commit(&f, err);
}

/* -o FILE.svg: step time per model setting and algorithm, as an SVG bar chart. */
static op_status write_plot(const char *path, const bench_row *rows, int n, const char *preset,
                            op_error *err)
{
    op_report_bench_row *pr = op_calloc((size_t)n + 1, sizeof *pr, err);
    char (*label)[160] = op_calloc((size_t)n + 1, sizeof *label, err);
    op_status st = OP_ENOMEM;
    if (pr && label) {
        for (int i = 0; i < n; i++) {
            snprintf(label[i], sizeof label[i], "%s, %d GPUs", rows[i].model, rows[i].devices);
            pr[i] = (op_report_bench_row){.model = label[i], .algorithm = rows[i].algo,
                                          .step_time_us = rows[i].ok ? rows[i].step_us : NAN,
                                          .lower_bound_us = rows[i].lower_bound_us,
                                          .oom = rows[i].oom};
        }
        char title[200];
        snprintf(title, sizeof title, "Simulated step time (%s)", preset);
        st = op_report_bench_plot_svg(pr, n, title, path, err);
    }
    free(pr);
    free(label);
    return st;
}

static op_status run_bench(cli_args *a, op_error *err)
{
    bench_cfg c = {0};
    op_status st = read_cfg(a, &c, err);
    int total = c.models.n * c.gpus.n * c.n_algos, n_rows = 0;
    bench_row *rows = st ? NULL : op_calloc((size_t)total + 1, sizeof *rows, err);
    if (!st && !rows)
        st = OP_ENOMEM;
    for (int m = 0; m < c.models.n && !st && !op_interrupted(); m++) {
        op_graph *g = make_model(c.models.item[m], err);
        if (!g) {
            st = err->code ? err->code : OP_EINPUT;
            break;
        }
        for (int k = 0; k < c.gpus.n && !st; k++)
            st = bench_setting(&c, c.models.item[m], g, atoi(c.gpus.item[k]), rows, &n_rows,
                               total, err);
        op_graph_free(g);
    }
    if (!st) {
        bench_ratio_to_expert(rows, n_rows);
        if (op_interrupted())
            fprintf(stderr, "opplace bench: interrupted: %d of %d rows measured\n", n_rows, total);
        printf("Preset %s, seed %llu, every algorithm with --best-effort.\n\n", c.preset,
               (unsigned long long)c.seed);
        bench_print_markdown(stdout, rows, n_rows);
        for (int i = 0; !st && i < c.outputs.n; i++) {
            const char *path = c.outputs.item[i];
            int format = output_format(path);
            st = format == 2 ? write_plot(path, rows, n_rows, c.preset, err)
                             : write_file(path, rows, n_rows, format == 1, err);
        }
    }
    free(rows);
    list_free(&c.models);
    list_free(&c.gpus);
    list_free(&c.outputs);
    free(c.algos);
    return st;
}

/* Ctrl-C: finish the running placer, then print the rows measured so far;
 * a second Ctrl-C stops at once. */

int cmd_bench(int argc, char **argv)
{
    static const char *const flags[] = {"cpu", NULL};
    cli_args a;
    op_error err = {0};
    int code = 0;
    if (cli_parse(&a, "bench", argc, argv, flags, &err))
        code = cli_report("bench", &err);
    else if (a.help)
        fputs(HELP, stdout);
    else if (run_bench(&a, &err))
        code = cli_report("bench", &err);
    cli_args_destroy(&a);
    return code;
}
