/*
 * trace_write.c - Chrome / Perfetto trace-event JSON of a simulated step.
 *
 * Opens in ui.perfetto.dev and chrome://tracing.  Process 1 "devices" has one
 * thread (track) per device with a complete ("X") event per op; process 2
 * "channels" has one track per channel that carried a transfer, one event
 * per transfer; each device also gets a memory counter ("C") track.  Times
 * are microseconds, the unit the format expects.
 */
#include <stdlib.h>

#include "core/file_util.h"
#include "core/problem_util.h"
#include "opplace/io.h"

static void put_meta(FILE *f, int pid, int tid, const char *what, const char *name, int *first)
{
    fprintf(f, "%s\n{\"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"name\": \"%s\", "
               "\"args\": {\"name\": ", *first ? "" : ",", pid, tid, what);
    op_json_put_string(f, name);
    fputs("}}", f);
    *first = 0;
}

static void put_ops(FILE *f, const op_sim_trace *t, const op_problem *p)
{
    const op_graph *g = p->g;
    for (int i = 0; i < t->n_ops; i++) {
        fprintf(f, ",\n{\"ph\": \"X\", \"pid\": 1, \"tid\": %d, \"ts\": ", t->dev[i]);
        op_json_put_number(f, t->start_us[i]);
        fputs(", \"dur\": ", f);
        op_json_put_number(f, t->finish_us[i] - t->start_us[i]);
        fputs(", \"name\": ", f);
        op_json_put_string(f, g->op_name[i]);
        fputs(", \"cat\": ", f);
        op_json_put_string(f, g->op_type[i]);
        fprintf(f, ", \"args\": {\"output_bytes\": %lld}}", (long long)g->output_bytes[i]);
    }
}

static void put_transfers(FILE *f, const op_sim_trace *t, const op_problem *p)
{
    const op_graph *g = p->g;
    for (int x = 0; x < t->n_transfers; x++) {
        const op_sim_transfer *tr = &t->transfers[x];
        fprintf(f, ",\n{\"ph\": \"X\", \"pid\": 2, \"tid\": %d, \"ts\": ", tr->chan);
        op_json_put_number(f, tr->start_us);
        fputs(", \"dur\": ", f);
        op_json_put_number(f, tr->end_us - tr->start_us);
        fputs(", \"name\": ", f);
        op_json_put_string(f, g->op_name[tr->src_op]);
        fprintf(f, ", \"cat\": \"transfer\", \"args\": {\"bytes\": %lld, \"to\": ",
                (long long)tr->bytes);
        op_json_put_string(f, p->c->dev[tr->dst_dev].name);
        fputs(", \"issued_us\": ", f);
        op_json_put_number(f, tr->issue_us);
        fputs("}}", f);
    }
}

static void put_memory(FILE *f, const op_sim_trace *t, const op_problem *p)
{
    for (int k = 0; k < t->n_mem; k++) {
        const op_sim_mem_point *m = &t->mem[k];
        fputs(",\n{\"ph\": \"C\", \"pid\": 1, \"name\": ", f);
        char label[300];
        snprintf(label, sizeof label, "memory %s", p->c->dev[m->dev].name);
        op_json_put_string(f, label);
        fputs(", \"ts\": ", f);
        op_json_put_number(f, m->t_us);
        fprintf(f, ", \"args\": {\"bytes\": %lld}}", (long long)m->bytes);
    }
}

op_status op_trace_write(const op_sim_trace *t, const op_problem *p, const char *path,
                         op_error *err)
{
    op_atomic a;
    if (op_atomic_open(&a, path, err))
        return OP_EIO;
    FILE *f = a.f;
    int first = 1;
    fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [", f);
    put_meta(f, 1, 0, "process_name", "devices", &first);
    put_meta(f, 2, 0, "process_name", "channels", &first);
    for (int d = 0; d < p->nd; d++)
        put_meta(f, 1, d, "thread_name", p->c->dev[d].name, &first);
    unsigned char *used = calloc((size_t)p->c->n_chan + 1, 1);
    for (int x = 0; used && x < t->n_transfers; x++)
        used[t->transfers[x].chan] = 1;
    char cn[512];
    for (int ch = 0; used && ch < p->c->n_chan; ch++)
        if (used[ch])
            put_meta(f, 2, ch, "thread_name", op_cluster_chan_name(p->c, ch, cn, sizeof cn),
                     &first);
    free(used);
    put_ops(f, t, p);
    put_transfers(f, t, p);
    put_memory(f, t, p);
    fputs("\n]}\n", f);
    return op_atomic_commit(&a, err);
}
