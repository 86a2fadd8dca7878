/*
 * report_measured.c - a measured step beside the simulated one.
 *
 * op_measured_read reads the Chrome/Perfetto trace a real run wrote
 * (opplace.torch's --trace, python/opplace/torch/_dist.py) in the layout
 * of `opplace simulate --report t.json` (src/io/trace_write.c): "X" events
 * of process 1 are ops on the device of their track (tid = device index,
 * the track's thread_name its device name), those of process 2 transfers on
 * the channel of their track.  Ops are matched to the graph by name; events
 * the graph does not name, and on the devices' tracks the categories "recv"
 * (a rank waiting for data) and "send", are left out.  Times are shifted so the earliest event starts at 0.
 *
 * op_report_html_measured's section (rp_measured_section) compares the two:
 * step times, busy time per device, the ops whose durations differ most,
 * and both timelines as static SVGs on one time scale.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/json_in.h"
#include "opplace/report.h"
#include "report/report_util.h"

static op_status bad(const char *path, op_error *err, const char *what, long i)
{
    return op_fail(err, OP_EINPUT, "%s: traceEvents[%ld]: %s", path, i, what);
}

static int num(json_t *o, const char *key, double *out)
{
    json_t *v = json_object_get(o, key);
    if (!v || !json_is_number(v))
        return 0;
    *out = json_number_value(v);
    return isfinite(*out);
}

/* Check the devices track names against the cluster: a trace of another
 * cluster would silently put ops on the wrong devices. */
static op_status check_track_name(const op_problem *p, json_t *e, long i, const char *path,
                                  op_error *err)
{
    json_t *args = json_object_get(e, "args");
    json_t *nm = args ? json_object_get(args, "name") : NULL;
    json_t *tid = json_object_get(e, "tid");
    if (!nm || !json_is_string(nm) || !tid || !json_is_integer(tid))
        return OP_OK;
    long d = (long)json_integer_value(tid);
    if (d < 0 || d >= p->nd)
        return op_fail(err, OP_EINPUT, "%s: traceEvents[%ld]: track %ld ('%s') is no device of "
                       "the cluster (it has %d)", path, i, d, json_string_value(nm), p->nd);
    if (strcmp(json_string_value(nm), p->c->dev[d].name))
        return op_fail(err, OP_EINPUT, "%s: traceEvents[%ld]: track %ld is '%s', but the "
                       "cluster's device %ld is '%s': the trace is of another cluster", path, i,
                       d, json_string_value(nm), d, p->c->dev[d].name);
    return OP_OK;
}

static op_status read_event(const op_problem *p, json_t *e, long i, const char *path,
                            op_sim_trace *t, op_error *err)
{
    const char *ph = json_string_value(json_object_get(e, "ph"));
    json_t *pid_j = json_object_get(e, "pid"), *tid_j = json_object_get(e, "tid");
    if (!ph || !json_is_integer(pid_j))
        return OP_OK;
    long pid = (long)json_integer_value(pid_j);
    if (!strcmp(ph, "M")) {
        const char *what = json_string_value(json_object_get(e, "name"));
        if (pid == 1 && what && !strcmp(what, "thread_name"))
            return check_track_name(p, e, i, path, err);
        return OP_OK;
    }
    if (strcmp(ph, "X") || (pid != 1 && pid != 2))
        return OP_OK;
    const char *name = json_string_value(json_object_get(e, "name"));
    const char *cat = json_string_value(json_object_get(e, "cat"));
    double ts, dur;
    if (!name || !json_is_integer(tid_j) || !num(e, "ts", &ts) || !num(e, "dur", &dur) ||
        dur < 0)
        return bad(path, err, "an \"X\" event needs a name, an integer tid and finite ts and "
                   "dur >= 0", i);
    long tid = (long)json_integer_value(tid_j);
    if (pid == 1 && cat && (!strcmp(cat, "recv") || !strcmp(cat, "send")))
        return OP_OK; /* a rank waiting for data, or sending it from its own track */
    int op = op_graph_find(p->g, name);
    if (op < 0)
        return OP_OK;
    if (pid == 1) {
        if (tid < 0 || tid >= p->nd)
            return bad(path, err, "an op on a track that is no device of the cluster", i);
        if (isfinite(t->start_us[op]))
            return OP_OK; /* the first run of the op counts */
        t->start_us[op] = ts;
        t->finish_us[op] = ts + dur;
        t->dev[op] = (int)tid;
        return OP_OK;
    }
    json_t *args = json_object_get(e, "args");
    const char *to = args ? json_string_value(json_object_get(args, "to")) : NULL;
    int dst = to ? op_cluster_find(p->c, to) : -1;
    if (dst < 0 || tid < 0 || tid >= p->c->n_chan)
        return bad(path, err, "a transfer needs args.to naming a device of the cluster and a "
                   "track that is a channel", i);
    double bytes = 0;
    if (args)
        num(args, "bytes", &bytes);
    t->transfers[t->n_transfers++] = (op_sim_transfer){op, dst, (int)tid,
                                                       (int64_t)(bytes > 0 ? bytes : 0), ts, ts,
                                                       ts + dur};
    return OP_OK;
}

op_status op_measured_read(const op_problem *p, const op_placement *pl, const char *path,
                           op_sim_trace *t, op_error *err)
{
    json_doc d;
    if (op_sim_trace_init(t, p, err))
        return err ? err->code : OP_ENOMEM;
    for (int i = 0; i < p->n; i++) {
        t->start_us[i] = t->finish_us[i] = INFINITY; /* not measured */
        t->dev[i] = pl->device_of[i];
    }
    op_status st = json_doc_load(&d, path, err);
    if (st) {
        json_doc_destroy(&d); /* also after a failed load (json_in.h) */
        op_sim_trace_destroy(t);
        return st;
    }
    json_t *evs = json_is_object(d.root) ? json_object_get(d.root, "traceEvents") : NULL;
    if (!evs || !json_is_array(evs)) {
        st = op_fail(err, OP_EINPUT, "%s: not a Chrome/Perfetto trace (no traceEvents list)",
                     path);
    } else {
        /* transfers: at most one per event, so grow the trace's array */
        size_t n = json_array_size(evs);
        op_sim_transfer *x = op_realloc(t->transfers, (n + 1) * sizeof *x, err);
        if (!x)
            st = OP_ENOMEM;
        else
            t->transfers = x;
        for (size_t i = 0; !st && i < n; i++)
            st = read_event(p, json_array_get(evs, i), (long)i, path, t, err);
    }
    json_doc_destroy(&d);
    int measured = 0;
    double t0 = INFINITY;
    for (int i = 0; !st && i < p->n; i++)
        if (isfinite(t->start_us[i])) {
            measured++;
            t0 = fmin(t0, t->start_us[i]);
        }
    for (int x = 0; !st && x < t->n_transfers; x++)
        t0 = fmin(t0, t->transfers[x].start_us);
    if (!st && measured == 0)
        st = op_fail(err, OP_EINPUT, "%s: no op of graph '%s' in the trace (are the graph and "
                     "the measured run the same model?)", path, p->g->name);
    if (st) {
        op_sim_trace_destroy(t);
        return st;
    }
    for (int i = 0; i < p->n; i++)
        if (isfinite(t->start_us[i])) {
            t->start_us[i] -= t0;
            t->finish_us[i] -= t0;
        }
    for (int x = 0; x < t->n_transfers; x++) {
        t->transfers[x].issue_us -= t0;
        t->transfers[x].start_us -= t0;
        t->transfers[x].end_us -= t0;
    }
    return OP_OK;
}

/* ---- the HTML section ----------------------------------------------------- */

typedef struct diff {
    int op;
    double sim, meas;
} diff;

static int by_gap(const void *a, const void *b)
{
    const diff *x = a, *y = b;
    double gx = fabs(x->meas - x->sim), gy = fabs(y->meas - y->sim);
    if (gx != gy)
        return gx > gy ? -1 : 1;
    return (x->op > y->op) - (x->op < y->op);
}

static double trace_end(const op_problem *p, const op_sim_trace *t)
{
    double end = 0;
    for (int i = 0; i < p->n; i++)
        if (isfinite(t->finish_us[i]) && t->finish_us[i] > end)
            end = t->finish_us[i];
    for (int x = 0; x < t->n_transfers; x++)
        if (t->transfers[x].end_us > end)
            end = t->transfers[x].end_us;
    return end;
}

op_status rp_measured_section(FILE *f, const op_problem *p, const op_placement *pl,
                              const op_sim_result *r, const op_sim_trace *sim,
                              const op_sim_trace *meas, op_error *err)
{
    char a[64], b[64], c[64];
    double mstep = trace_end(p, meas), sstep = r->step_time_us;
    int n_meas = 0, moved = 0;
    double *mbusy = op_calloc((size_t)p->nd + 1, sizeof *mbusy, err);
    diff *df = op_malloc(((size_t)p->n + 1) * sizeof *df, err);
    if (!mbusy || !df) {
        free(mbusy);
        free(df);
        return OP_ENOMEM;
    }
    for (int i = 0; i < p->n; i++) {
        if (!isfinite(meas->start_us[i]))
            continue;
        double d = meas->finish_us[i] - meas->start_us[i];
        mbusy[meas->dev[i]] += d;
        moved += meas->dev[i] != pl->device_of[i];
        df[n_meas++] = (diff){i, sim->finish_us[i] - sim->start_us[i], d};
    }
    fputs("<h2 id=\"measured\">Measured vs simulated</h2>\n<table class=\"metrics\">\n", f);
    fprintf(f, "<tr><td>measured step</td><td>%s</td></tr>\n<tr><td>simulated step</td>"
               "<td>%s</td></tr>\n<tr><td>simulated / measured</td><td>%.3f (error %+.1f%%)"
               "</td></tr>\n<tr><td>ops measured</td><td>%d of %d</td></tr>\n",
            rp_time(a, sizeof a, mstep), rp_time(b, sizeof b, sstep),
            mstep > 0 ? sstep / mstep : 0, mstep > 0 ? 100 * (sstep - mstep) / mstep : 0,
            n_meas, p->n);
    if (moved)
        fprintf(f, "<tr><td>ops measured on another device than placed</td><td class=\"bad\">"
                   "%d</td></tr>\n", moved);
    fprintf(f, "<tr><td>transfers measured</td><td>%d (simulated %d)</td></tr>\n</table>\n",
            meas->n_transfers, r->n_transfers);
    fputs("<table class=\"devices\">\n<tr><th>device</th><th>measured busy</th>"
          "<th>simulated busy</th><th>simulated / measured</th></tr>\n", f);
    for (int d = 0; d < p->nd; d++) {
        fputs("<tr class=\"mdevice\"><td>", f);
        rp_put_text(f, p->c->dev[d].name, RP_XML);
        fprintf(f, "</td><td>%s</td><td>%s</td><td>%.3f</td></tr>\n",
                rp_time(a, sizeof a, mbusy[d]), rp_time(b, sizeof b, r->busy_us[d]),
                mbusy[d] > 0 ? r->busy_us[d] / mbusy[d] : 0);
    }
    fputs("</table>\n", f);
    qsort(df, (size_t)n_meas, sizeof *df, by_gap);
    int top = n_meas < 10 ? n_meas : 10;
    if (top > 0) {
        fputs("<p class=\"sub\">The ops whose measured time differs most from the simulated "
              "one:</p>\n<table class=\"opdiff\">\n<tr><th>op</th><th>type</th><th>measured"
              "</th><th>simulated</th><th>difference</th></tr>\n", f);
        for (int k = 0; k < top; k++) {
            fputs("<tr class=\"opdiff\"><td>", f);
            rp_put_text(f, p->g->op_name[df[k].op], RP_XML);
            fputs("</td><td>", f);
            rp_put_text(f, p->g->op_type[df[k].op], RP_XML);
            fprintf(f, "</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
                    rp_time(a, sizeof a, df[k].meas), rp_time(b, sizeof b, df[k].sim),
                    rp_time(c, sizeof c, df[k].meas - df[k].sim));
        }
        fputs("</table>\n", f);
    }
    free(mbusy);
    free(df);
    /* both timelines on one scale */
    double end = mstep > sstep ? mstep : sstep;
    char title[300];
    snprintf(title, sizeof title, "simulated: step %s", rp_time(a, sizeof a, sstep));
    fputs("<div class=\"chartbox\" id=\"simstatic\">", f);
    op_status st = rp_svg_timeline(f, p, sim, title, end, err);
    fputs("</div>\n<div class=\"chartbox\" id=\"measuredstatic\">", f);
    snprintf(title, sizeof title, "measured: step %s", rp_time(a, sizeof a, mstep));
    if (!st)
        st = rp_svg_timeline(f, p, meas, title, end, err);
    fputs("</div>\n", f);
    return st;
}
