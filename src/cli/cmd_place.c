/*
 * cmd_place.c - `opplace place` and `opplace simulate`: run a placer (or
 * read a placement), judge it with the simulator, print and write results.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/file_util.h"
#include "opplace/bound.h"
#include "opplace/io.h"
#include "core/parallel.h"
#include "opplace/placer.h"
#include "opplace/search.h"
#include "opplace/report.h"
#include "opplace/simulate.h"
#include "placers/portfolio.h"

static const char PLACE_HELP[] =
    "usage: opplace place GRAPH [--algo NAME] [--cluster FILE | --preset P --gpus N [--cpu]]\n"
    "                     [-o placement.json] [--json] [--report FILE[,FILE...]]\n"
    "                     [--seed S] [--budget-seconds B] [--best-effort] [--quiet]\n"
    "                     [--refine [--refine-seconds S | --refine-iters N]] [--progress]\n"
    "                     [--order own|none|fit|peak]\n"
    "                     [algorithm options: 'opplace place --algo NAME --help']\n"
    "\n"
    "Places GRAPH (an opplace-graph file) on the cluster with one algorithm\n"
    "(see 'opplace algos'), simulates one training step and prints the step\n"
    "time, its ratio to the lower bound, peak memory per device and traffic.\n"
    "  -o FILE          write the placement (with simulated metrics)\n"
    "  --report FILE    write a report; the extension picks what: .html a\n"
    "                   self-contained page (timeline, memory, graph), .json a\n"
    "                   Chrome/Perfetto trace (ui.perfetto.dev), .svg the timeline\n"
    "                   alone, .dot the graph colored by device (Graphviz);\n"
    "                   several comma-separated: --report r.html,t.json\n"
    "  --measured T     with an .html report: a real run's trace T (opplace.torch\n"
    "                   run --trace) beside the simulated timeline\n"
    "  --json           print only the metrics object on stdout\n"
    "  --best-effort    return a placement even when memory does not suffice\n"
    "  --order fit      give each device the priority execution order (critical\n"
    "                   path first) the simulator finds fastest, if it beats the\n"
    "                   result's own schedule and still fits; 'peak' also keeps\n"
    "                   peak memory no higher (auto does 'fit'); 'none' drops the\n"
    "                   placer's order (first-ready-first); 'own' (default) keeps it\n"
    "  --refine         polish the result by local search against the simulator,\n"
    "                   judged by the --order order when one was chosen (or,\n"
    "                   for a placer that orders its result, the best priority\n"
    "                   order), else by first-ready-first\n"
    "                   (--refine-iters N makes it deterministic for a --seed);\n"
    "                   an order is used only when it gains over first-ready-first\n"
    "                   (less overflow or a 1 % shorter step; as in auto)\n"
    "Default algorithm: auto (portfolio + refinement; --budget-seconds, default 10).\n"
    "Default cluster: 4 x v100-nvlink.  Exit codes: 0 ok, 1 bad input,\n"
    "2 usage, 3 infeasible (nothing fits), 130 interrupted (best result written).\n";

static const char SIMULATE_HELP[] =
    "usage: opplace simulate GRAPH --placement FILE [--cluster FILE | --preset P --gpus N]\n"
    "                        [--json] [--report FILE[,FILE...]]\n"
    "\n"
    "Simulates one training step of GRAPH under the placement (and its per-device\n"
    "order, if it has one) following formats.md section 5, and prints the metrics.\n"
    "  --json         print only the metrics object of formats.md section 3\n"
    "  --report FILE  write a report: .html page, .json Perfetto trace, .svg\n"
    "                 timeline or .dot graph by the extension (comma-separated list)\n"
    "  --measured T   with an .html report: show the measured trace T of a real run\n"
    "                 (opplace.torch run --trace) beside the simulated timeline\n"
    "  -o FILE        write the placement again with the recomputed metrics\n";

/* The command's own options; op_place_options and the placer's table
 * complete the list op_options_check accepts. */
static const op_opt_decl CLI_OPTIONS[] = {
    {"algo", OP_OPT_TEXT, 0, 0, NULL, NULL, "placement algorithm (see 'opplace algos')"},
    {"cluster", OP_OPT_TEXT, 0, 0, NULL, NULL, "cluster file"},
    {"preset", OP_OPT_TEXT, 0, 0, "v100-nvlink", NULL, "cluster preset"},
    {"gpus", OP_OPT_INT, 1, 64, "4", NULL, "GPUs of the preset"},
    {"cpu", OP_OPT_FLAG, 0, 0, NULL, NULL, "add the host CPU to the preset"},
    {"output", OP_OPT_TEXT, 0, 0, NULL, NULL, "write the placement (-o)"},
    {"json", OP_OPT_FLAG, 0, 0, NULL, NULL, "print only the metrics object"},
    {"report", OP_OPT_TEXT, 0, 0, NULL, NULL,
     "write reports, comma-separated; .html page, .json trace, .svg timeline, .dot graph"},
    {"placement", OP_OPT_TEXT, 0, 0, NULL, NULL, "placement file (simulate)"},
    {"measured", OP_OPT_TEXT, 0, 0, NULL, NULL,
     "a real run's trace (opplace.torch --trace) shown beside the simulated one in the "
     ".html report"},
    {"quiet", OP_OPT_FLAG, 0, 0, NULL, NULL, "no progress lines"},
    {"progress", OP_OPT_FLAG, 0, 0, NULL, NULL, "progress lines even when not a terminal"},
    {NULL, 0, 0, 0, NULL, NULL, NULL},
};


static void print_metrics(const cli_problem *cp, const op_sim_result *r, const char *algo,
                          double seconds)
{
    char a[32], b[32];
    const op_problem *p = &cp->p;
    printf("graph        %s (%d ops, %d edges)\n", cp->g->name, cp->g->n_ops, cp->g->n_edges);
    printf("algorithm    %s\n", algo);
    printf("step time    %s  (lower bound %s, ratio %.3f)\n",
           cli_time(a, sizeof a, r->step_time_us), cli_time(b, sizeof b, p->lower_bound_us),
           p->lower_bound_us > 0 ? r->step_time_us / p->lower_bound_us : 1.0);
    /* the bound proven before placing (prove_bound) */
    if (op_problem_at_bound(p, r->step_time_us, r->oom ? 1 : 0))
        printf("proven bound %s  (%s): optimal (proven)\n",
               cli_time(b, sizeof b, p->proven_bound_us), p->proven_method);
    else
        printf("proven bound %s  (%s; certified gap %.2f%%, 'opplace bound' tries longer)\n",
               cli_time(b, sizeof b, p->proven_bound_us), p->proven_method,
               100 * op_bound_gap(r->step_time_us, p->proven_bound_us));
    printf("traffic      %s in %d transfers\n", cli_bytes(a, sizeof a, (double)r->comm_bytes),
           r->n_transfers);
    if (seconds >= 0)
        printf("placed in    %.3f s\n", seconds);
    printf("%-12s %12s %14s %14s %7s\n", "device", "busy", "peak memory", "capacity", "use");
    for (int d = 0; d < p->nd; d++) {
        char m[32], c[32];
        const op_device *dev = &cp->c->dev[d];
        double use = dev->memory_bytes ? (double)r->peak_mem[d] / (double)dev->memory_bytes : 0;
        printf("%-12s %12s %14s %14s %6.1f%%%s\n", dev->name,
               cli_time(a, sizeof a, r->busy_us[d]), cli_bytes(m, sizeof m, (double)r->peak_mem[d]),
               cli_bytes(c, sizeof c, (double)dev->memory_bytes), 100 * use,
               r->peak_mem[d] > dev->memory_bytes ? "  OUT OF MEMORY" : "");
    }
}

static op_metrics metrics_of(const op_problem *p, const op_sim_result *r, double seconds)
{
    return (op_metrics){.step_time_us = r->step_time_us, .placement_seconds = seconds,
                        .oom = r->oom, .comm_bytes = r->comm_bytes, .peak_mem = r->peak_mem,
                        .bound_us = p->proven_bound_us, .bound_method = p->proven_method};
}

/* The best lower bound affordable in a small share of the budget (5 %, at
 * most what is left before the deadline; opplace/bound.h, op_problem_prove):
 * every search stops when it reaches it, and the outputs state the gap. */
static op_status prove_bound(cli_problem *cp, double budget, double deadline, op_error *err)
{
    double share = 0.05 * (budget > 0 ? budget : 10);
    if (deadline > 0 && deadline - cli_now() < share)
        share = deadline - cli_now();
    if (share <= 0.001 || op_interrupted())
        return OP_OK; /* the trivial bound of op_problem_init stands */
    return op_problem_prove(&cp->p, share, NULL, err);
}

/* The kinds of --report, picked by the file's extension. */
enum { REPORT_HTML, REPORT_TRACE, REPORT_SVG, REPORT_DOT, N_REPORTS };
static const char *const REPORT_EXT[N_REPORTS] = {".html", ".json", ".svg", ".dot"};

/* What to do with a simulated placement (read before unknown options are
 * reported, so these count as known). */
typedef struct outputs {
    const char *out;
    int json;
    const char *report[N_REPORTS]; /* NULL: not asked for */
    const char *measured;          /* --measured trace for the HTML report, or NULL */
    char names[4096];              /* --report's value, split at the commas */
} outputs;

static int report_kind(const char *path)
{
    size_t n = strlen(path);
    for (int k = 0; k < N_REPORTS; k++) {
        size_t e = strlen(REPORT_EXT[k]);
        if (n > e && !strcasecmp(path + n - e, REPORT_EXT[k]))
            return k;
    }
    return n > 4 && !strcasecmp(path + n - 4, ".htm") ? REPORT_HTML : -1;
}

/* -o, --json and --report FILE[,FILE...] of a. */
static op_status read_outputs(cli_args *a, outputs *o, op_error *err)
{
    memset(o, 0, sizeof *o);
    o->out = op_options_str(a->opts, "output", NULL);
    o->json = op_options_has(a->opts, "json");
    o->measured = op_options_str(a->opts, "measured", NULL);
    const char *list = op_options_str(a->opts, "report", NULL);
    if (!list && o->measured)
        return op_fail(err, OP_EUSAGE, "--measured %s: shown in the HTML report; add --report "
                       "FILE.html", o->measured);
    if (!list)
        return OP_OK;
    if (strlen(list) >= sizeof o->names)
        return op_fail(err, OP_EUSAGE, "--report: the list of files is too long");
    strcpy(o->names, list);
    for (char *s = o->names, *next; s; s = next) {
        if ((next = strchr(s, ',')))
            *next++ = '\0';
        int k = report_kind(s);
        if (k < 0)
            return op_fail(err, OP_EUSAGE, "--report %s: the extension picks the report; use "
                           ".html (page), .json (Perfetto trace), .svg (timeline) or .dot "
                           "(graph)", s);
        if (o->report[k])
            return op_fail(err, OP_EUSAGE, "--report: two %s files (%s and %s); give one",
                           REPORT_EXT[k], o->report[k], s);
        o->report[k] = s;
    }
    if (o->measured && !o->report[REPORT_HTML])
        return op_fail(err, OP_EUSAGE, "--measured %s: shown in the HTML report; add --report "
                       "FILE.html", o->measured);
    return OP_OK;
}

/* Every output path writable, checked before any work (file_util.h). */
static op_status check_outputs(const outputs *o, op_error *err)
{
    if (op_output_check(o->out, err))
        return err->code;
    for (int k = 0; k < N_REPORTS; k++)
        if (op_output_check(o->report[k], err))
            return err->code;
    return OP_OK;
}

/* Simulate pl, then print and write what was asked for. */
static op_status judge(cli_args *a, const outputs *o, cli_problem *cp, const op_placement *pl,
                       double seconds, op_error *err)
{
    const char *out = o->out, *const *rep = o->report;
    int json = o->json;
    op_sim_result r;
    op_sim_trace t;
    int have_trace = 0;
    op_status st = op_sim_result_init(&r, &cp->p, err);
    if (st)
        return st;
    if ((rep[REPORT_TRACE] || rep[REPORT_HTML] || rep[REPORT_SVG]) &&
        !(st = op_sim_trace_init(&t, &cp->p, err)))
        have_trace = 1;
    if (!st)
        st = op_simulate(&cp->p, pl, &r, have_trace ? &t : NULL, err);
    op_metrics m = metrics_of(&cp->p, &r, seconds);
    if (!st && out)
        st = op_placement_write(pl, cp->g, cp->c, &m, out, err);
    if (!st && rep[REPORT_TRACE])
        st = op_trace_write(&t, &cp->p, rep[REPORT_TRACE], err);
    if (!st && rep[REPORT_HTML] && o->measured) {
        op_sim_trace mt;
        if (!(st = op_measured_read(&cp->p, pl, o->measured, &mt, err))) {
            st = op_report_html_measured(&cp->p, pl, &r, &t, &mt, pl->algorithm,
                                         rep[REPORT_HTML], err);
            op_sim_trace_destroy(&mt);
        }
    } else if (!st && rep[REPORT_HTML]) {
        st = op_report_html(&cp->p, pl, &r, &t, pl->algorithm, rep[REPORT_HTML], err);
    }
    if (!st && rep[REPORT_SVG])
        st = op_report_svg_timeline(&cp->p, &t, rep[REPORT_SVG], err);
    if (!st && rep[REPORT_DOT])
        st = op_report_dot(&cp->p, pl, rep[REPORT_DOT], err);
    if (!st && json) {
        op_metrics_write_json(stdout, &m, cp->c);
        fputc('\n', stdout);
    } else if (!st && !op_output_claimed_stdout()) { /* -o -: stdout holds only the JSON */
        print_metrics(cp, &r, pl->algorithm ? pl->algorithm : "?", seconds);
    }
    if (!st && r.oom)
        fprintf(stderr, "opplace %s: warning: the placement runs out of memory on some device\n",
                a->cmd);
    if (have_trace)
        op_sim_trace_destroy(&t);
    op_sim_result_destroy(&r);
    return st;
}

/* The finishing pipeline (opplace/search.h, op_finish): --order fit|peak,
 * --refine judged by that order, the order again; --order none drops the
 * placer's order.  The stages that changed pl are appended to its name. */
static op_status finish_result(cli_args *a, const op_place_ctx *ctx, op_placement *pl,
                               op_error *err)
{
    const char *how = op_options_str(a->opts, "order", "own");
    if (!strcmp(how, "none"))
        op_placement_drop_order(pl);
    double seconds;
    long iters;
    op_status st;
    if ((st = op_options_double(a->opts, "refine-seconds", 10, 0, 1e9, &seconds, err)) ||
        (st = op_options_int(a->opts, "refine-iters", 0, 0, 1000000000L, &iters, err)))
        return st;
    op_finish_opts fo = {.order = !strcmp(how, "fit") ? 1 : !strcmp(how, "peak") ? 2 : 0,
                         .refine = op_options_has(a->opts, "refine"),
                         .refine_opts = {.budget_seconds = iters > 0 ? 0 : seconds,
                                         .max_iterations = iters, .seed = ctx->seed,
                                         .max_units = 2000}};
    if (!fo.order && !fo.refine)
        return OP_OK;
    op_place_ctx fctx = *ctx;
    fctx.progress = !op_options_has(a->opts, "quiet"); /* say what finishing did */
    op_stages stages = {{0}};
    if ((st = op_finish(&fctx, &fo, pl, &stages, NULL, err)) || !stages.seq[0])
        return st;
    char name[160];
    op_stages_name(pl->algorithm, &stages, name, sizeof name);
    return op_placement_set_algorithm(pl, name, err);
}

/* Place with placer; stopped by Ctrl-C, or within a budget (a placer
 * whose stages ran out of their shares of it says so with OP_EINTERNAL,
 * maybe before the deadline itself), before it had an answer, the
 * placement of op_portfolio_fallback instead, so a result is written. */
static op_status place_or_fall_back(const op_placer *placer, const op_place_ctx *ctx,
                                    op_placement *pl, op_error *err)
{
    op_status st = op_place(placer, ctx, pl, err);
    if (!st || st == OP_ENOMEM ||
        !(op_interrupted() || (st == OP_EINTERNAL && ctx->deadline > 0)))
        return st;
    const op_placer *which;
    op_error ferr = {0};
    if (op_portfolio_fallback(ctx, pl, &which, &ferr))
        return st;
    fprintf(stderr, "opplace place: %s %s without a result (%s); %s's placement instead\n",
            placer->name, op_interrupted() ? "stopped at Ctrl-C" : "stopped within its budget",
            err->msg, which->name);
    char name[96];
    snprintf(name, sizeof name, "%s:fallback-%s", placer->name, which->name);
    return op_placement_set_algorithm(pl, name, err);
}

/* The strongest registered algorithm serves as the default. */
static const char *default_algo(void)
{
    static const char *const preferred[] = {"auto", "celeritas", "m-etf", "heft", "single"};
    for (size_t i = 0; i < sizeof preferred / sizeof *preferred; i++)
        if (op_placer_find(preferred[i]))
            return preferred[i];
    return "single";
}

static op_status run_place(cli_args *a, op_error *err)
{
    if (a->n_pos != 1)
        return op_fail(err, OP_EUSAGE, "expected one graph file (see 'opplace place --help')");
    const char *algo = op_options_str(a->opts, "algo", default_algo());
    const op_placer *placer = op_placer_find(algo);
    if (!placer)
        return op_fail(err, OP_EUSAGE, "unknown algorithm '%s' (see 'opplace algos')", algo);
    char help[160];
    snprintf(help, sizeof help, "opplace place --algo %s --help", placer->name);
    op_status st;
    if ((st = op_options_declare(a->opts, CLI_OPTIONS, err)) ||
        (st = op_options_declare(a->opts, op_place_options, err)) ||
        (st = op_options_declare(a->opts, placer->options, err)) ||
        (st = op_options_check(a->opts, help, err)))
        return st;
    outputs o;
    op_status cst = read_outputs(a, &o, err);
    if (cst || (cst = check_outputs(&o, err)))
        return cst;
    op_place_ctx ctx = {.opts = a->opts, .best_effort = op_options_has(a->opts, "best-effort")};
    int quiet = op_options_has(a->opts, "quiet");
    ctx.progress = !quiet && (isatty(STDERR_FILENO) || op_options_has(a->opts, "progress"));
    double t_cmd = cli_now();
    if ((st = op_options_u64(a->opts, "seed", 1, &ctx.seed, err)) ||
        (st = op_options_double(a->opts, "budget-seconds", 0, 0, 1e9, &ctx.budget_seconds, err)))
        return st;
    if (op_options_has(a->opts, "budget-seconds") && ctx.budget_seconds <= 0)
        return op_fail(err, OP_EUSAGE, "--budget-seconds must be positive (leave it out for "
                       "each algorithm's default)");
    if (ctx.budget_seconds > 0) /* one deadline for the whole command, loading included */
        ctx.deadline = t_cmd + ctx.budget_seconds;
    cli_problem cp;
    if ((st = cli_load_problem(a, a->pos[0], &cp, err)))
        goto done;
    ctx.p = &cp.p;
    op_placement pl;
    if ((st = prove_bound(&cp, ctx.budget_seconds, ctx.deadline, err)))
        goto done;
    double t0 = cli_now(); /* the placer's time, as before the bound */
    if ((st = place_or_fall_back(placer, &ctx, &pl, err)))
        goto done;
    if (!op_interrupted() && (st = finish_result(a, &ctx, &pl, err)))
        goto done_pl;
    op_output_results_begin(); /* the Ctrl-C watchdog lets the writing end (main.c) */
    double seconds = cli_now() - t0;
    /* under MPI every rank holds the same answer and rank 0 reports it */
    if (op_par_rank() == 0)
        st = judge(a, &o, &cp, &pl, seconds, err);
done_pl:
    op_placement_destroy(&pl);
done:
    cli_problem_destroy(&cp);
    return st;
}

static op_status run_simulate(cli_args *a, op_error *err)
{
    if (a->n_pos != 1)
        return op_fail(err, OP_EUSAGE, "expected one graph file (see 'opplace simulate --help')");
    const char *ppath = op_options_str(a->opts, "placement", NULL);
    if (!ppath)
        return op_fail(err, OP_EUSAGE, "--placement FILE is required");
    outputs o;
    op_status cst = read_outputs(a, &o, err);
    if (cst || (cst = check_outputs(&o, err)))
        return cst;
    cli_problem cp;
    op_placement pl = {0};
    op_status st = cli_load_problem(a, a->pos[0], &cp, err);
    if (!st)
        st = prove_bound(&cp, 0, 0, err);
    if (!st)
        st = op_placement_read(ppath, cp.g, cp.c, &pl, err);
    if (!st && (st = op_problem_check_placement(&cp.p, &pl, err)))
        op_error_prefix(err, ppath);
    if (!st)
        st = cli_check_unused(a, err);
    if (!st && (st = judge(a, &o, &cp, &pl, -1, err)) && st == OP_EINPUT)
        op_error_prefix(err, ppath); /* e.g. an order that deadlocks */
    op_placement_destroy(&pl);
    cli_problem_destroy(&cp);
    return st;
}

/* `place --algo NAME --help`: the command's help and NAME's options. */
static void print_help(const char *help, cli_args *a)
{
    fputs(help, stdout);
    const char *algo = op_options_str(a->opts, "algo", NULL);
    const op_placer *pl = algo ? op_placer_find(algo) : NULL;
    if (!pl)
        return;
    printf("\n%s: %s\nOptions of every placer:\n", pl->name, pl->summary);
    op_options_print_help(stdout, op_place_options);
    if (pl->options) {
        printf("Options of %s:\n", pl->name);
        op_options_print_help(stdout, pl->options);
    }
}

static int run_cmd(const char *cmd, const char *help, op_status (*fn)(cli_args *, op_error *),
                   int argc, char **argv)
{
    static const char *const flags[] = {"json",  "best-effort", "quiet",     "progress",
                                        "cpu",   "refine",      "paper",
                                         NULL};
    cli_args a;
    op_error err = {0};
    int code = 0;
    if (cli_parse(&a, cmd, argc, argv, flags, &err))
        code = cli_report(cmd, &err);
    else if (a.help)
        print_help(help, &a);
    else if (fn(&a, &err))
        code = cli_report(cmd, &err);
    cli_args_destroy(&a);
    return code;
}

int cmd_place(int argc, char **argv)
{
    return run_cmd("place", PLACE_HELP, run_place, argc, argv);
}

int cmd_simulate(int argc, char **argv)
{
    return run_cmd("simulate", SIMULATE_HELP, run_simulate, argc, argv);
}
