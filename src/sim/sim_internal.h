/*
 * sim_internal.h - the simulator's state, shared by simulate.c (the event
 * loop) and checkpoint.c (incremental re-simulation from snapshots).
 */
#ifndef OPPLACE_SIM_INTERNAL_H
#define OPPLACE_SIM_INTERNAL_H

#include "opplace/simulate.h"
#include "sim/event_heap.h"

/* ready_queue.c's per-device treaps (long queues under a capped dispatch):
 * node[op] has children kid[0] (before it in priority order) and kid[1],
 * keys sb (start_bytes) and net (net_bytes), and its subtree's least keys
 * min_sb and min_net; stale lists the ops whose net may be out of date. */
typedef struct ready_node {
    int kid[2];
    int64_t sb, net, min_sb, min_net;
} ready_node;

typedef struct ready_tree {
    int *root;
    char *on_tree; /* per device: its queue is the treap, not the heap */
    int n_tree;    /* devices on a treap */
    ready_node *node;
    int *stale, n_stale;
    char *is_stale;
    int *held;     /* scratch of the heap's pick under a cap */
} ready_tree;

typedef struct transfer {
    int src, dst_dev, chan, refs, next;
    int received;      /* formats.md 5.9: its destination has paid its host cost */
    int64_t bytes;
    double issue, start, end;
} transfer;

struct op_sim {
    const op_problem *p;
    int n, nd, n_chan;
    /* per op */
    int *pending;      /* inputs not yet available */
    int *out_refs;     /* holders of the op's output: local consumers + transfers */
    double *ready_at, *start, *finish;
    /* per edge: the transfer that carries it, or -1 when local */
    int *xfer_of_edge;
    /* transfers */
    transfer *xf;
    int n_xf;
    int *new_xf;       /* issued at the current time, not yet queued */
    int n_new;
    /* channels: FIFO of transfer ids */
    int *chan_head, *chan_tail, *chan_busy;
    /* devices */
    int *running;      /* op running on the device or -1 */
    int *rq, *rq_off, *rq_len; /* ready heaps, one segment per device */
    ready_tree rt;     /* long queues under a capped dispatch (allocated by its first run) */
    int *next_pos;     /* with an order: next index into order */
    int64_t *mem, *peak, *last_logged;
    /* scratch for grouping consumers by device */
    int64_t *dev_bytes;
    int *dev_count, *touched;
    event_heap ev;
    struct sim_checkpoints *ckpt; /* snapshots of a recorded run, or NULL */
    double cutoff_us;             /* stop once no finish can come before it (0: off) */
    /* list scheduling (sim_set_dispatch; list_schedule.c), NULL for rule 2 */
    const double *prio;       /* per op: larger starts first among ready ops */
    const int64_t *pick_cap;  /* per device: memory the dispatch tries to stay under */
    int *started, n_started;  /* ops in the order they started (with prio only) */
    /* shared compute (formats.md 5.8), only when the cluster has groups:
     * each computing device's op has rem[d] microseconds of work left at
     * its device speed as of upd[d], progressing at rate[d] (0 before its
     * first scheduling); its finish event is at sched[op], and a popped
     * finish event whose time differs is stale (dropped). */
    int has_share;
    int ev_cap;        /* the event heap's capacity (stale events take room) */
    double *rem, *upd, *rate, *sched;
    int *computing;    /* per device: its op is in its compute phase */
    int *active;       /* per group: members computing */
    int *dirty, n_dirty; /* groups whose active count changed at the current time */
    int *is_dirty;
    /* transfer host cost (formats.md 5.9), only when a link has one: a
     * device sending what its last op produced is busy until host_until[d] */
    int has_host;
    double *host_until;
    /* recv_idle_free (5.9): transfers that arrived at the current time,
     * judged once every event of that time is done */
    int recv_idle_free;
    int *arrived, n_arrived;
};

/* What starting op adds to its device: its output and scratch. */
static inline int64_t sim_start_bytes(const op_sim *s, int op)
{
    return s->p->g->output_bytes[op] + s->p->g->temp_bytes[op];
}

typedef struct run {
    op_sim *s;
    const op_placement *pl;
    const int *dev;
    op_sim_result *r;
    op_sim_trace *trace;
    op_error *err;
    int done;
    int cut; /* stopped early: the step time would reach the cutoff */
} run;

/* Run the event loop from time t.  resume: the state is a snapshot taken
 * after everything at t was done (skip the dispatch at t). */
op_status sim_event_loop(run *R, double t, int resume);
/* Validate pl and reset every per-run array for it. */
op_status sim_reset(run *R);
/* Ready ops waiting for their device: push them again (after a restore). */
void sim_requeue_ready(run *R);
op_status sim_finish_run(run *R);

/* Dispatch like a list scheduler instead of rule 2's first-ready-first
 * (runs without an order only; for deriving orders, never for judging):
 * a free device starts its ready op of highest prio (ties: ready earlier,
 * then smaller index); with cap, the highest-priority one whose output and
 * scratch keep the device within cap[d], or, when none does, the one that
 * adds least once finished (output and scratch less the inputs it is the
 * last holder of).  s->started then lists the ops in the order they
 * started.  sim_set_dispatch(s, NULL, NULL) restores rule 2. */
void sim_set_dispatch(op_sim *s, const double *prio, const int64_t *cap);

/* ready_queue.c: the ready ops of each device under a memory cap (without
 * one, ready_heap.h alone).  sim_rq_pick_capped takes d's next op (-1:
 * none ready); the sole_holder calls (only while a device's queue is a
 * treap, rt.n_tree) tell it that a waiting op may have become the last
 * holder of u's output or of transfer x. */
op_status sim_rq_tree_alloc(op_sim *s, op_error *err);
void sim_rq_tree_free(op_sim *s);
void sim_rq_clear(op_sim *s);
void sim_rq_push_capped(op_sim *s, int d, int op);
int sim_rq_pick_capped(run *R, int d);
void sim_rq_sole_holder_of_output(run *R, int u);
void sim_rq_sole_holder_of_transfer(run *R, int x);

/* checkpoint.c: called by the event loop after each time step */
op_status sim_maybe_checkpoint(run *R, double t);
void sim_checkpoints_free(struct sim_checkpoints *c);

#endif
