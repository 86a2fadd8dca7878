/*
 * lp.c - the model builder and the bounded CBC run of lp.h.
 */
#include "solve/lp.h"

#include <coin/Cbc_C_Interface.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "opplace/run_ctx.h"

/* ---- builder ------------------------------------------------------------------------ */

static int grow(void **p, size_t elem, int *cap, int need)
{
    if (need <= *cap)
        return 0;
    int c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q)
        return -1;
    *p = q;
    return 0;
}

int lp_col(lp_model *m, double lb, double ub, double obj, int is_int)
{
    int cap = m->capcol;
    if (grow((void **)&m->lb, sizeof *m->lb, &cap, m->ncol + 1) ||
        grow((void **)&m->ub, sizeof *m->ub, &(int){m->capcol}, m->ncol + 1) ||
        grow((void **)&m->obj, sizeof *m->obj, &(int){m->capcol}, m->ncol + 1) ||
        grow((void **)&m->isint, sizeof *m->isint, &(int){m->capcol}, m->ncol + 1)) {
        m->oom = 1;
        return 0;
    }
    m->capcol = cap;
    m->lb[m->ncol] = lb;
    m->ub[m->ncol] = ub;
    m->obj[m->ncol] = obj;
    m->isint[m->ncol] = (char)is_int;
    return m->ncol++;
}

void lp_term(lp_model *m, int col, double v)
{
    if (m->oom || v == 0)
        return;
    if (m->nnz == m->capnz) {
        long c = m->capnz ? 2 * m->capnz : 4096;
        int *ti = realloc(m->ti, (size_t)c * sizeof *ti);
        if (ti)
            m->ti = ti;
        int *tj = realloc(m->tj, (size_t)c * sizeof *tj);
        if (tj)
            m->tj = tj;
        double *tv = realloc(m->tv, (size_t)c * sizeof *tv);
        if (tv)
            m->tv = tv;
        if (!ti || !tj || !tv) {
            m->oom = 1;
            return;
        }
        m->capnz = c;
    }
    m->ti[m->nnz] = m->nrow;
    m->tj[m->nnz] = col;
    m->tv[m->nnz] = v;
    m->nnz++;
}

void lp_row_end(lp_model *m, double lo, double hi)
{
    int cap = m->caprow;
    if (grow((void **)&m->rlb, sizeof *m->rlb, &cap, m->nrow + 1) ||
        grow((void **)&m->rub, sizeof *m->rub, &(int){m->caprow}, m->nrow + 1)) {
        m->oom = 1;
        return;
    }
    m->caprow = cap;
    m->rlb[m->nrow] = lo;
    m->rub[m->nrow] = hi;
    m->nrow++;
}

void lp_row_discard(lp_model *m)
{
    while (m->nnz > 0 && m->ti[m->nnz - 1] == m->nrow)
        m->nnz--;
}

void lp_free(lp_model *m)
{
    free(m->lb);
    free(m->ub);
    free(m->obj);
    free(m->isint);
    free(m->rlb);
    free(m->rub);
    free(m->ti);
    free(m->tj);
    free(m->tv);
    memset(m, 0, sizeof *m);
}

/* ---- solving -------------------------------------------------------------------------- */

static Cbc_Model *load_model(const lp_model *m, int relax)
{
    int *start = calloc((size_t)m->ncol + 1, sizeof *start);
    int *index = malloc((size_t)m->nnz * sizeof *index + 1);
    double *value = malloc((size_t)m->nnz * sizeof *value + 1);
    int *fill = calloc((size_t)m->ncol + 1, sizeof *fill);
    Cbc_Model *model = NULL;
    if (start && index && value && fill) {
        for (long k = 0; k < m->nnz; k++)
            start[m->tj[k] + 1]++;
        for (int j = 0; j < m->ncol; j++)
            start[j + 1] += start[j];
        for (int j = 0; j < m->ncol; j++)
            fill[j] = start[j];
        /* terms arrive row by row, so a column's repeated (row, column)
         * terms are adjacent in it: summed into one entry (CoinPackedMatrix
         * wants no duplicates) */
        for (long k = 0; k < m->nnz; k++) {
            int j = m->tj[k];
            if (fill[j] > start[j] && index[fill[j] - 1] == m->ti[k]) {
                value[fill[j] - 1] += m->tv[k];
                continue;
            }
            int pos = fill[j]++;
            index[pos] = m->ti[k];
            value[pos] = m->tv[k];
        }
        /* close the gaps the merged terms left */
        int out = 0;
        for (int j = 0; j < m->ncol; j++) {
            int from = start[j], to = fill[j];
            start[j] = out;
            for (int t = from; t < to; t++) {
                index[out] = index[t];
                value[out++] = value[t];
            }
        }
        start[m->ncol] = out;
        model = Cbc_newModel();
        Cbc_loadProblem(model, m->ncol, m->nrow, start, index, value, m->lb, m->ub, m->obj,
                        m->rlb, m->rub);
        for (int j = 0; j < m->ncol && !relax; j++)
            if (m->isint[j])
                Cbc_setInteger(model, j);
    }
    free(fill);
    free(start);
    free(index);
    free(value);
    return model;
}

typedef struct wire_head {
    int status, has_x;
    double objective, bound;
} wire_head;

/* Run CBC on m; fills head and x (ncol values).  CBC writes banners on
 * stdout even at log level 0, so the caller points stdout elsewhere. */
static void cbc_run(const lp_model *m, const lp_solve_opts *o, double seconds, wire_head *h,
                    double *x)
{
    memset(h, 0, sizeof *h);
    Cbc_Model *model = load_model(m, o->relax);
    if (!model)
        return;
    if (seconds > 0) {
        char secs[32];
        snprintf(secs, sizeof secs, "%.3f", seconds);
        Cbc_setMaximumSeconds(model, seconds);
        /* Cbc_solve runs CbcMain1, which takes its limits from these parameters */
        Cbc_setParameter(model, "seconds", secs);
        Cbc_setParameter(model, "timeMode", "elapsed");
    }
    Cbc_setLogLevel(model, o->verbose ? 1 : 0);
    Cbc_setAllowableFractionGap(model, 1e-6);
    if (o->nstart > 0 && !o->relax)
        Cbc_setMIPStartI(model, o->nstart, o->start_cols, o->start_vals);
    Cbc_solve(model);
    double bound = Cbc_getBestPossibleObjValue(model);
    if (o->relax) {
        if (Cbc_isProvenOptimal(model)) {
            h->status = LP_OPTIMAL;
            h->objective = h->bound = Cbc_getObjValue(model);
            memcpy(x, Cbc_getColSolution(model), (size_t)m->ncol * sizeof *x);
            h->has_x = 1;
        } else if (Cbc_isProvenInfeasible(model)) {
            h->status = LP_INFEASIBLE;
        }
    } else if (Cbc_isProvenInfeasible(model) && Cbc_numberSavedSolutions(model) == 0) {
        h->status = LP_INFEASIBLE;
    } else if (Cbc_bestSolution(model)) {
        h->status = Cbc_isProvenOptimal(model) ? LP_OPTIMAL : LP_FEASIBLE;
        h->objective = Cbc_getObjValue(model);
        if (h->status == LP_OPTIMAL || !isfinite(bound) || bound > h->objective)
            bound = h->objective;
        h->bound = bound;
        memcpy(x, Cbc_bestSolution(model), (size_t)m->ncol * sizeof *x);
        h->has_x = 1;
    } else if (isfinite(bound) && bound > -1e29) {
        h->bound = bound; /* no solution, but the search proved this much */
        h->status = LP_NO_SOLUTION;
    }
    if (!isfinite(h->bound))
        h->bound = 0;
    Cbc_deleteModel(model);
}

static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static double limit_seconds(const lp_solve_opts *o)
{
    double s = o->seconds > 0 ? o->seconds : 0;
    if (o->deadline > 0) {
        double left = o->deadline - op_seconds_now();
        /* leave CBC's own stop (and the write-back) a margin before the kill */
        left = left * 0.95 - 0.05;
        if (left < 0.01)
            left = 0.01;
        if (s <= 0 || left < s)
            s = left;
    }
    return s;
}

typedef struct child_wait {
    int fd;
    double deadline;
} child_wait;

/* Has the child written, exited, or should the wait end (deadline, Ctrl-C)? */
static int child_answered(void *arg)
{
    const child_wait *cw = arg;
    struct pollfd pf = {.fd = cw->fd, .events = POLLIN};
    return poll(&pf, 1, 0) != 0 || op_interrupted() ||
           (cw->deadline > 0 && op_seconds_now() >= cw->deadline);
}

op_status lp_solve(const lp_model *m, const lp_solve_opts *o, lp_solution *s, op_error *err)
{
    double t0 = op_seconds_now();
    memset(s, 0, sizeof *s);
    if (m->oom)
        return op_fail(err, OP_ENOMEM, "pesto: out of memory building the integer program");
    size_t xbytes = (size_t)m->ncol * sizeof(double);
    double *x = malloc(xbytes + sizeof(double));
    if (!x)
        return op_fail(err, OP_ENOMEM, "pesto: out of memory for the solution");
    if (op_interrupted() || (o->deadline > 0 && op_seconds_now() >= o->deadline)) {
        s->stopped = 1;
        free(x);
        return OP_OK;
    }
    double seconds = limit_seconds(o);
    wire_head h;
    int fds[2];
    fflush(stdout);
    fflush(stderr);
    int piped = pipe(fds) == 0;
    pid_t pid = piped ? fork() : -1;
    if (pid < 0 && piped) {
        close(fds[0]);
        close(fds[1]);
    }
    if (pid == 0) { /* child: solve, write the answer, leave without exit handlers */
        close(fds[0]);
        signal(SIGINT, SIG_IGN); /* the parent decides when a Ctrl-C ends the solve */
        int devnull = open("/dev/null", O_WRONLY);
        if (o->verbose)
            dup2(STDERR_FILENO, STDOUT_FILENO);
        else if (devnull >= 0)
            dup2(devnull, STDOUT_FILENO);
        cbc_run(m, o, seconds, &h, x);
        int bad = write_all(fds[1], &h, sizeof h) || (h.has_x && write_all(fds[1], x, xbytes));
        free(x);
        close(fds[1]);
        _exit(bad ? 1 : 0);
    }
    if (pid < 0) { /* no fork: solve here, bounded by CBC's own limit only */
        int saved = dup(STDOUT_FILENO), devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0 && saved >= 0 && !o->verbose)
            dup2(devnull, STDOUT_FILENO);
        cbc_run(m, o, seconds, &h, x);
        fflush(stdout);
        if (saved >= 0) {
            dup2(saved, STDOUT_FILENO);
            close(saved);
        }
        if (devnull >= 0)
            close(devnull);
    } else {
        close(fds[1]);
        char *buf = malloc(sizeof h + xbytes);
        size_t want = sizeof h + xbytes, got = 0;
        int killed = 0;
        if (!buf) {
            kill(pid, SIGKILL);
            killed = 1;
        }
        if (!killed && o->idle) {
            child_wait cw = {.fd = fds[0], .deadline = o->deadline};
            o->idle(o->idle_arg, child_answered, &cw);
        }
        while (!killed) {
            struct pollfd pf = {.fd = fds[0], .events = POLLIN};
            int r = poll(&pf, 1, 50);
            if (r > 0) {
                ssize_t k = read(fds[0], buf + got, want - got);
                if (k > 0) {
                    got += (size_t)k;
                    if (got == want)
                        break;
                    continue;
                }
                if (k == 0)
                    break; /* the child is done */
                if (errno != EINTR)
                    break;
            }
            if (op_interrupted() || (o->deadline > 0 && op_seconds_now() >= o->deadline)) {
                kill(pid, SIGKILL);
                killed = 1;
            }
        }
        close(fds[0]);
        int wst;
        while (waitpid(pid, &wst, 0) < 0 && errno == EINTR) {
        }
        memset(&h, 0, sizeof h);
        if (!killed && buf && got >= sizeof h) {
            memcpy(&h, buf, sizeof h);
            if (h.has_x && got == want)
                memcpy(x, buf + sizeof h, xbytes);
            else if (h.has_x)
                memset(&h, 0, sizeof h); /* a torn answer: keep nothing */
        }
        s->stopped = killed;
        free(buf);
    }
    s->status = h.status;
    s->objective = h.objective;
    s->bound = h.bound;
    if (h.has_x) {
        s->x = x;
    } else {
        free(x);
    }
    s->seconds = op_seconds_now() - t0;
    return OP_OK;
}
