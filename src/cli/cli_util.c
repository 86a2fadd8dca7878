/* cli_util.c - argument parsing and shared loading for the subcommands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "opplace/placer.h"
#include "opplace/io.h"

static int is_flag(const char *name, const char *const *flags)
{
    for (int i = 0; flags && flags[i]; i++)
        if (strcmp(flags[i], name) == 0)
            return 1;
    return 0;
}

int cli_parse(cli_args *a, const char *cmd, int argc, char **argv, const char *const *flags,
              op_error *err)
{
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    a->opts = op_options_new(err);
    a->pos = op_calloc((size_t)argc + 1, sizeof *a->pos, err);
    if (!a->opts || !a->pos)
        return OP_ENOMEM;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            a->help = 1;
            continue;
        }
        if (strcmp(arg, "-o") == 0) {
            if (i + 1 >= argc)
                return op_fail(err, OP_EUSAGE, "-o needs a file name");
            if (op_options_set(a->opts, "output", argv[++i], err))
                return OP_ENOMEM;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
            a->pos[a->n_pos++] = arg;
            continue;
        }
        char name[128];
        const char *eq = strchr(arg + 2, '=');
        size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        if (len >= sizeof name)
            return op_fail(err, OP_EUSAGE, "option name too long: %.40s...", arg);
        memcpy(name, arg + 2, len);
        name[len] = '\0';
        const char *value = NULL;
        if (eq)
            value = eq + 1;
        else if (!is_flag(name, flags)) {
            if (i + 1 >= argc)
                return op_fail(err, OP_EUSAGE, "--%s needs a value", name);
            value = argv[++i];
        }
        if (op_options_set(a->opts, name, value, err))
            return OP_ENOMEM;
    }
    return OP_OK;
}

void cli_args_destroy(cli_args *a)
{
    op_options_free(a->opts);
    free(a->pos);
    memset(a, 0, sizeof *a);
}

op_status cli_check_unused(const cli_args *a, op_error *err)
{
    const char *u = op_options_first_unused(a->opts);
    if (u)
        return op_fail(err, OP_EUSAGE, "unknown option --%s (see 'opplace %s --help')", u,
                       a->cmd);
    return OP_OK;
}

int cli_report(const char *cmd, const op_error *err)
{
    fprintf(stderr, "opplace %s: %s\n", cmd, err->msg[0] ? err->msg : "failed");
    return op_status_exit_code(err->code);
}

op_cluster *cli_load_cluster(cli_args *a, op_error *err)
{
    const char *path = op_options_str(a->opts, "cluster", NULL);
    const char *preset = op_options_str(a->opts, "preset", "v100-nvlink");
    long gpus = 4;
    int cpu = op_options_has(a->opts, "cpu");
    if (op_options_int(a->opts, "gpus", 4, 1, 64, &gpus, err))
        return NULL;
    if (path)
        return op_cluster_read(path, err);
    return op_cluster_preset(preset, (int)gpus, cpu, err);
}

op_status cli_load_problem(cli_args *a, const char *graph_path, cli_problem *cp, op_error *err)
{
    memset(cp, 0, sizeof *cp);
    cp->g = op_graph_read(graph_path, err);
    if (!cp->g)
        return err->code;
    cp->c = cli_load_cluster(a, err);
    if (!cp->c)
        return err->code;
    op_status st = op_problem_init(&cp->p, cp->g, cp->c, err);
    cp->bound = st == OP_OK;
    if (st) /* the graph and cluster disagree: name both */
        op_error_prefix(err, graph_path);
    return st;
}

void cli_problem_destroy(cli_problem *cp)
{
    if (cp->bound)
        op_problem_destroy(&cp->p);
    op_cluster_free(cp->c);
    op_graph_free(cp->g);
    memset(cp, 0, sizeof *cp);
}

double cli_now(void)
{
    return op_seconds_now();
}

const char *cli_bytes(char *buf, size_t cap, double b)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        u++;
    }
    snprintf(buf, cap, u ? "%.2f %s" : "%.0f %s", b, unit[u]);
    return buf;
}

const char *cli_time(char *buf, size_t cap, double us)
{
    if (us >= 1e6)
        snprintf(buf, cap, "%.3f s", us / 1e6);
    else if (us >= 1e3)
        snprintf(buf, cap, "%.3f ms", us / 1e3);
    else
        snprintf(buf, cap, "%.1f us", us);
    return buf;
}
