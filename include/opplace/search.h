/*
 * opplace/search.h - judge placements and keep the best: the one layer
 * every placer and command uses for it (src/search/).
 *
 *   ranking      op_judged_before: the one comparator.  Plain: a placement
 *                that fits first, then less overflow, then the shorter step
 *                (op_sim_ranks_before).  With tolerances (Trinity's
 *                constrained rule): within the tolerances first.
 *   order search op_order_search: the one loop over priorities x memory
 *                caps (one share table, op_cap_shares), each candidate
 *                handed to a visitor that judges it.
 *   reorder      op_placement_reorder: the best priority execution order
 *                for a fixed placement.
 *   refinement   op_refine: local search over unit moves, region moves and
 *                swaps, judged first-ready-first or by a priority order.
 *   finishing    op_finish: order, refine, order again, as `place` and
 *                `auto` both finish a result; op_stages records what ran.
 * Files: src/search/order_search.c (ranking, order search, reorder),
 * refine.c, finish.c.  The portfolio, which runs placers, sits above them
 * (opplace/placer.h, src/placers/portfolio.c).
 *
 * Reorder.  Every placer can leave each device's order to the simulator's
 * first-ready-first rule (formats.md section 5, rule 2), which on layer
 * splits of RNNs leaves 21-38 % of the pipelining unused
 * (bench/RESULTS.md).  op_placement_reorder tries the priority list
 * schedules of opplace/list_schedule.h (blevel, cpath, blevel-w), each
 * with the devices' capacities as memory cap and with caps of 100, 95 and
 * 90 % of the placement's own peak (capped at capacity: running ahead on
 * the critical path holds more tensors at once), screens them on a reused
 * simulator and gives pl the best one's per-device `order` when the
 * simulator, running that order, ranks it strictly before pl as it came
 * and, with keep_peak, its largest device peak is no higher than pl's.
 * Otherwise pl is left exactly as it came (its own order, if any,
 * included), so the result is never worse.  Peak communication does not
 * depend on the order.  Not from one of the papers: HEFT-style list
 * scheduling applied after placement, available to every placer
 * (`opplace place --order fit`, and the last stage of auto).
 */
#ifndef OPPLACE_SEARCH_H
#define OPPLACE_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "opplace/list_schedule.h"
#include "opplace/run_ctx.h"

/* ---------------------------------------------------------------- ranking */

/* What the comparator knows of a simulated placement. */
typedef struct op_judged {
    double over;       /* bytes above capacity, summed (op_sim_overflow_bytes), or an
                          out-of-memory flag (0/1) where only that is known */
    double step;       /* step time, us (+inf: not admissible) */
    int64_t peak;      /* largest device peak memory */
    int64_t comm;      /* peak communication */
    double reward;     /* the caller's score of a placement outside the tolerances */
} op_judged;

/* Tolerances of the constrained rule (Trinity, section 3.3). */
typedef struct op_tolerance {
    double max_comm, max_mem; /* bytes */
} op_tolerance;

/* Does a placement stay within tol (peak communication and memory)? */
int op_judged_within(const op_judged *a, const op_tolerance *tol);

/* Nonzero when a ranks strictly before b.  tol NULL: the plain ranking
 * (op_sim_ranks_before on over and step).  With tol: within the tolerances
 * first; then less `over`; outside them the larger reward; inside the
 * shorter step, then less communication, then less memory. */
int op_judged_before(const op_judged *a, const op_judged *b, const op_tolerance *tol);

/* ----------------------------------------------------------- order search */

/* The one memory-cap table of the order search: shares of a base
 * (op_order_space.base).  0 is "no share": the devices' capacities when
 * clip is set, no cap otherwise; -1 is the placement's own peak
 * (op_order_space.own_peak), skipped when that equals the base. */
enum { OP_N_CAP_SHARES = 5 };
extern const double op_cap_shares[OP_N_CAP_SHARES]; /* {0, 1.0, 0.95, 0.9, -1} */
#define OP_CAPS_ALL 0x1fu    /* every entry */
#define OP_CAPS_LIMIT 0x01u  /* the capacities (or no cap) alone */
#define OP_CAPS_SHARES 0x0eu /* 1.0, 0.95 and 0.9 of the base */

typedef struct op_order_space {
    unsigned caps;     /* mask over op_cap_shares (bit i: entry i) */
    double base;       /* bytes the shares multiply */
    double own_peak;   /* bytes of the -1 entry */
    int clip;          /* caps no higher than each device's capacity */
    int prio_outer;    /* loop priorities outside the caps (default: caps outside) */
    const op_priority *priorities; /* NULL: blevel, cpath, blevel-w */
    int n_priorities;
} op_order_space;

/* One candidate of the order search: priority k under cap (n_dev values,
 * NULL: none).  Return OP_OK to go on; *stop = 1 ends the search. */
typedef op_status (*op_order_visit)(void *arg, op_priority k, double share, const int64_t *cap,
                                    int *stop, op_error *err);

/* Visit every (priority, cap) of space; cap_buf holds n_dev values. */
op_status op_order_search(const op_problem *p, const op_order_space *space, int64_t *cap_buf,
                          op_order_visit visit, void *arg, op_error *err);

/* ---------------------------------------------------------------- reorder */

typedef struct op_reorder_stats {
    double initial_us, final_us;     /* step time before and after */
    int64_t initial_peak, final_peak; /* largest device peak memory before and after */
    double initial_over, final_over; /* op_sim_overflow_bytes before and after */
    op_priority priority;            /* OP_PRIORITY_FIFO: pl left as it came */
    double cap_share;                /* the cap's share of the initial peak; 0: capacity */
    int runs;                        /* simulator runs spent */
    /* The best screened (priority, cap), kept or not (with keep_peak,
     * among those within the peak; OP_PRIORITY_FIFO: none qualified) and
     * its step as screened: what to judge other placements by when the
     * placement's own order beats every priority (op_refine, below). */
    op_priority screened;
    double screened_cap_share, screened_us, screened_over;
} op_reorder_stats;

/* Reorder pl in place as described above; stats may be NULL. */
op_status op_placement_reorder(const op_problem *p, op_placement *pl, int keep_peak,
                               op_reorder_stats *stats, op_error *err);

/* The per-device memory caps (n_dev values) of the order stats chose, for
 * judging other placements by the same list schedule (op_refine, below). */
void op_reorder_caps(const op_problem *p, const op_reorder_stats *stats, int64_t *cap);

/* ------------------------------------------------------------ refinement */

/*
 * Units are colocation groups and chunks of ops (single ops on small
 * graphs; on large graphs, runs of consecutive ops in topological order
 * that share a device and a layer scope).  A step tries moving one unit to
 * another device, moving a connected region of units that live on one
 * device (a chain or subgraph, grown breadth first to 2..64 units), or
 * swapping two units on different devices, and keeps a
 * change only when the simulated step time strictly improves without a
 * device running out of memory (first-improvement hill climbing, in the
 * spirit of Kernighan-Lin / Fiduccia-Mattheyses passes).  Candidates are
 * evaluated incrementally from simulator checkpoints, with the incumbent's
 * step time as cutoff, so a rejected move costs a fraction of a run.
 *
 * Candidates are judged by the simulator's first-ready-first schedule, or,
 * with `order` set, by their own priority list schedule
 * (opplace/list_schedule.h: each candidate's priorities from its own
 * devices, a whole run each, since snapshots of the incumbent's schedule
 * do not apply once the priorities change).  Ordered refinement improves
 * placements whose best schedule is a priority order (the RNN layer splits
 * of bench/RESULTS.md), which first-ready-first refinement cannot see; the
 * refined placement is returned with that order.
 *
 * Deterministic for a seed and an iteration limit; a time budget makes the
 * stopping point depend on the machine's speed.
 */


typedef struct op_refine_opts {
    double budget_seconds; /* stop after this long (<= 0: no time limit) */
    long max_iterations;   /* stop after this many candidates (<= 0: no limit) */
    int max_units;         /* how many units the graph is cut into (default 2000) */
    uint64_t seed;
    /* OP_PRIORITY_FIFO (the zero default): judge by first-ready-first.
     * Otherwise judge by the list schedule of this priority under the
     * per-device memory caps order_cap (NULL: none; n_dev values that
     * must outlive the call), and return the result with that order. */
    op_priority order;
    const int64_t *order_cap;
    /* > 0: reject candidates whose largest device peak memory exceeds it
     * (`--order peak`: keep the placement's peak). */
    int64_t max_peak;
    /* Non-NULL: asked between candidates; nonzero ends the search (pesto
     * refines while its solver child works and stops when it answers). */
    int (*stop)(void *arg);
    void *stop_arg;
} op_refine_opts;

typedef struct op_refine_stats {
    int units;
    long tried, accepted;
    double initial_us, final_us, seconds;
} op_refine_stats;

/* Improve pl in place.  The result replaces pl only when the simulator,
 * running it as returned (first-ready-first, or with its derived order),
 * ranks it strictly before pl as given, its own order included.  The search
 * ends early once the placement reaches p->proven_bound_us (done when proven). */
op_status op_refine(const op_place_ctx *ctx, const op_refine_opts *o, op_placement *pl,
                    op_refine_stats *stats, op_error *err);

/* -------------------------------------------------------------- finishing */

/* The stages a placement went through, in order ('o': given its best
 * order, 'r': refined), from which its name is derived
 * (op_stages_name: "expert+order+refine"). */
typedef struct op_stages {
    char seq[8];
} op_stages;
void op_stages_add(op_stages *s, char stage);
void op_stages_name(const char *base, const op_stages *s, char *buf, size_t cap);

/* Runs refinement for op_finish (auto: several streams over MPI ranks);
 * NULL: op_refine once. */
typedef op_status (*op_refine_runner)(void *arg, const op_place_ctx *ctx,
                                      const op_refine_opts *ro, op_placement *pl,
                                      op_refine_stats *rs, op_error *err);

typedef struct op_finish_opts {
    int order;      /* 0: no order stage; 1: fit; 2: peak (no higher peak memory) */
    int refine;     /* run refinement */
    op_refine_opts refine_opts; /* budget, iterations, seed, units (order, caps: set here) */
    op_refine_runner run;       /* NULL: op_refine */
    void *run_arg;
    /* The order stage already ran on pl (auto's portfolio): its stats, and
     * whether pl carries that order.  NULL: op_finish runs it. */
    const op_reorder_stats *ordered;
    int is_ordered;
    op_judged fifo; /* with ordered: pl judged first-ready-first (over, step) */
} op_finish_opts;

/* The one rule for the order refinement judges pl by (place --refine and
 * auto alike).  The candidate order is the one pl's order stage kept (o's
 * priority), else, for a placement with its own order (celeritas, m-sct),
 * the best priority order screened for it; refinement judges by it when,
 * on pl, it gains over first-ready-first (fifo: pl's device_of run without
 * an order): less overflow, or a step at least 1 % shorter (refinement's
 * ranking still puts less overflow first).  Otherwise (NULL) it judges
 * first-ready-first, which
 * resumes from snapshots where an order costs a whole run per candidate
 * (WaveNet x 4, where celeritas's order gains nothing, bench/RESULTS.md).
 * tmp holds the screened stats when those are returned. */
const op_reorder_stats *op_finish_judge(const op_placement *pl, const op_reorder_stats *o,
                                        const op_judged *fifo, op_reorder_stats *tmp);

/* Order (when fo->order and not done), refine judged by op_finish_judge
 * (when fo->refine), order again when refinement changed pl or pl has no
 * order of its own yet.  stages records what changed pl; *rs (may be
 * NULL) refinement's stats. */
op_status op_finish(const op_place_ctx *ctx, const op_finish_opts *fo, op_placement *pl,
                    op_stages *stages, op_refine_stats *rs, op_error *err);

#endif
