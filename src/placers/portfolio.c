/*
 * portfolio.c - run several placers on one problem and keep the best
 * (opplace/placer.h): the member runner auto's portfolio uses, the
 * best-of-a-list that SGDP and Trinity take their reference from, and the
 * cheap fallback of a run stopped before any answer.
 *
 * Budgets: a member runs in a child process (its own process group, so a
 * solver child of its own goes with it) that the parent kills when the
 * context's deadline passes or at Ctrl-C: a placer that never looks at the
 * clock (celeritas' fusion on a 10^5-input fan-in) cannot overrun the
 * budget.  The child sends the placement back through a pipe; a member
 * killed that way counts as not placed.  Without fork (or under MPI, where
 * forking a rank is unsafe, or while allocation failures are injected) the
 * member runs in the process itself.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/alloc_hooks.h"
#include "core/parallel.h"
#include "opplace/placer.h"
#include "opplace/simulate.h"
#include "placers/portfolio.h"

/* What the member's child sends before the placement's arrays. */
typedef struct member_head {
    op_status status;
    int has_order;
    char algorithm[128];
    op_error err;
} member_head;

static int write_all(int fd, const void *buf, size_t n)
{
    const char *b = buf;
    while (n > 0) {
        ssize_t k = write(fd, b, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Read n bytes from fd, polling every 50 ms for the deadline and Ctrl-C;
 * 1: got them, 0: EOF or error, -1: the deadline or Ctrl-C came first. */
static int read_until(int fd, void *buf, size_t n, double deadline)
{
    char *b = buf;
    while (n > 0) {
        if (op_interrupted() || (deadline > 0 && op_seconds_now() >= deadline))
            return -1;
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int r = poll(&pf, 1, 50);
        if (r < 0 && errno != EINTR)
            return 0;
        if (r <= 0)
            continue;
        ssize_t k = read(fd, b, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return 0;
        b += k;
        n -= (size_t)k;
    }
    return 1;
}

/* The child: place, send the result, leave without exit handlers. */
static void member_child(int fd, const op_placer *pl, const op_place_ctx *sub)
{
    setpgid(0, 0);
    signal(SIGINT, SIG_IGN); /* the parent decides when a Ctrl-C ends the member */
    signal(SIGTERM, SIG_IGN);
    member_head h;
    memset(&h, 0, sizeof h);
    op_placement out;
    h.status = op_place(pl, sub, &out, &h.err);
    int bad = 0;
    if (!h.status) {
        const op_problem *p = sub->p;
        h.has_order = out.has_order;
        snprintf(h.algorithm, sizeof h.algorithm, "%s", out.algorithm ? out.algorithm : "");
        bad = write_all(fd, &h, sizeof h) ||
              write_all(fd, out.device_of, (size_t)p->n * sizeof(int)) ||
              (out.has_order &&
               (write_all(fd, out.order_off, ((size_t)p->nd + 1) * sizeof(int)) ||
                write_all(fd, out.order, (size_t)p->n * sizeof(int))));
        op_placement_destroy(&out);
    } else {
        bad = write_all(fd, &h, sizeof h);
    }
    close(fd);
    _exit(bad ? 1 : 0);
}

/* Run pl in a child (see the header).  *forked = 0: no child could be
 * started, run it here.  Returns op_place's status (OP_EINTERNAL with a
 * message when the child was killed or died). */
static op_status place_in_child(const op_placer *pl, const op_place_ctx *sub, op_placement *out,
                                int *forked, op_error *perr)
{
    const op_problem *p = sub->p;
    int fds[2];
    *forked = 1;
    if (op_interrupted() || (sub->deadline > 0 && op_seconds_now() >= sub->deadline))
        return op_fail(perr, OP_EINTERNAL, "not started: %s",
                       op_interrupted() ? "Ctrl-C" : "the deadline has passed");
    *forked = 0;
    if (pipe(fds) != 0)
        return OP_OK;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return OP_OK;
    }
    if (pid == 0) {
        close(fds[0]);
        member_child(fds[1], pl, sub);
    }
    *forked = 1;
    setpgid(pid, pid); /* also here: no window where a kill of the group misses */
    close(fds[1]);
    member_head h;
    int got = read_until(fds[0], &h, sizeof h, sub->deadline);
    op_status st = OP_OK;
    if (got == 1 && h.status) {
        *perr = h.err;
        st = h.status;
    } else if (got == 1) {
        if ((st = op_placement_init(out, p->n, p->nd, perr)))
            got = 0;
        if (!st && (got = read_until(fds[0], out->device_of, (size_t)p->n * sizeof(int),
                                     sub->deadline)) == 1 && h.has_order) {
            if ((st = op_placement_alloc_order(out, perr)))
                got = 0;
            else if ((got = read_until(fds[0], out->order_off,
                                       ((size_t)p->nd + 1) * sizeof(int), sub->deadline)) == 1)
                got = read_until(fds[0], out->order, (size_t)p->n * sizeof(int), sub->deadline);
        }
        if (got == 1 && h.algorithm[0])
            st = op_placement_set_algorithm(out, h.algorithm, perr);
        if (got != 1 || st)
            op_placement_destroy(out);
    }
    if (got != 1) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
    }
    close(fds[0]);
    int wst;
    while (waitpid(pid, &wst, 0) < 0 && errno == EINTR) {
    }
    if (got == -1)
        return op_fail(perr, OP_EINTERNAL, "stopped at %s", op_interrupted() ? "Ctrl-C"
                                                                         : "the deadline");
    if (got == 0 && !st)
        return op_fail(perr, OP_EINTERNAL, "its process ended without an answer");
    return st;
}

op_status op_portfolio_run(const op_place_ctx *ctx, const op_placer *pl, op_placement *out,
                           int *placed, op_error *err)
{
    op_place_ctx sub = *ctx;
    sub.opts = NULL;     /* each member with its defaults */
    sub.best_effort = 1; /* the portfolio judges memory itself */
    sub.progress = 0;
    sub.member = 1;      /* the portfolio runs the others itself */
    op_error perr = {0};
    double t0 = op_seconds_now();
    *placed = 0;
    int forked = 0;
    op_status pst = op_par_size() > 1 || op_alloc_injecting()
                        ? OP_OK
                        : place_in_child(pl, &sub, out, &forked, &perr);
    if (!forked)
        pst = op_place(pl, &sub, out, &perr);
    if (pst != OP_OK) {
        if (perr.code == OP_ENOMEM)
            return op_fail(err, OP_ENOMEM, "%s", perr.msg);
        op_progress(ctx, "%s failed: %s", pl->name, perr.msg);
        return OP_OK;
    }
    op_progress(ctx, "%s placed in %.2f s", pl->name, op_seconds_now() - t0);
    *placed = 1;
    return OP_OK;
}

/* The next name of the comma-separated list *s into name; 0 at the end. */
static int next_name(const char **s, char *name, size_t cap, const char *who, op_error *err,
                     op_status *st)
{
    while (**s) {
        size_t len = strcspn(*s, ",");
        if (len >= cap) {
            *st = op_fail(err, OP_EUSAGE, "%s: placer name too long in '%s'", who, *s);
            return 0;
        }
        memcpy(name, *s, len);
        name[len] = '\0';
        *s += len + ((*s)[len] == ',');
        if (len)
            return 1;
    }
    return 0;
}

op_status op_portfolio_best(const op_place_ctx *ctx, const char *names, int drop_order,
                            const char *who, op_placement *out, op_portfolio_winner *w,
                            op_error *err)
{
    const op_problem *p = ctx->p;
    memset(w, 0, sizeof *w);
    if (!names || !*names)
        return op_fail(err, OP_EUSAGE, "%s: no placer to take the reference from", who);
    op_sim *sim = op_sim_new(p, err);
    if (!sim)
        return err && err->code ? err->code : OP_ENOMEM;
    op_sim_result r;
    op_status st = op_sim_result_init(&r, p, err);
    if (st) {
        op_sim_free(sim);
        return st;
    }
    int found = 0;
    char name[64];
    const char *s = names;
    while (!st && next_name(&s, name, sizeof name, who, err, &st)) {
        const op_placer *placer = op_placer_find(name);
        if (!placer) {
            st = op_fail(err, OP_EUSAGE, "%s: unknown heuristic placer '%s'", who, name);
            break;
        }
        op_placement pl; /* op_place initialises it, and destroys it on failure */
        int placed;
        if ((st = op_portfolio_run(ctx, placer, &pl, &placed, err)) || !placed)
            continue; /* a placer that cannot place this graph is skipped */
        if (drop_order)
            op_placement_drop_order(&pl);
        if (!(st = op_sim_run(sim, &pl, &r, NULL, err))) {
            double over = op_sim_overflow_bytes(p, &r), step = r.step_time_us;
            if (!found || op_sim_ranks_before(over, step, w->over, w->step)) {
                memcpy(out->device_of, pl.device_of, (size_t)p->n * sizeof(int));
                w->over = over, w->step = step;
                w->oom = r.oom;
                snprintf(w->name, sizeof w->name, "%.31s", name);
                found = 1;
            }
        }
        op_placement_destroy(&pl);
    }
    if (!st && !found)
        st = op_fail(err, OP_EINFEASIBLE, "%s: none of the heuristics '%s' placed the graph", who,
                     names);
    op_sim_result_destroy(&r);
    op_sim_free(sim);
    return st;
}

op_status op_portfolio_fallback(const op_place_ctx *ctx, op_placement *out,
                                const op_placer **which, op_error *err)
{
    static const char *const cheap[] = {"single", "round-robin"};
    op_place_ctx sub = *ctx;
    sub.opts = NULL;
    sub.best_effort = 1;
    sub.progress = 0;
    sub.member = 1;
    sub.deadline = 0;
    for (size_t c = 0; c < sizeof cheap / sizeof *cheap; c++) {
        const op_placer *pl = op_placer_find(cheap[c]);
        op_error perr = {0};
        if (!pl)
            continue;
        if (op_place(pl, &sub, out, &perr) == OP_OK) {
            *which = pl;
            return OP_OK;
        }
        if (perr.code == OP_ENOMEM)
            return op_fail(err, OP_ENOMEM, "%s", perr.msg);
    }
    return op_fail(err, OP_EINFEASIBLE, "neither single nor round-robin places the graph");
}
