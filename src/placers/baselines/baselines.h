/*
 * baselines.h - inner steps of the baseline placers, exposed so tests can
 * check each heuristic against its definition (tests/test_baselines.c).
 *
 * Files of src/placers/baselines/ (`opplace algos` lists the placers):
 *   single.c       single: every op on one device
 *   round_robin.c  round-robin: ops dealt to devices in topological order
 *   expert.c       expert: the human, layer-wise placement of the papers
 *   metis.c        metis: k-way partition with the METIS library
 *   m_topo.c       m-topo: Baechi's memory-bounded topological fill
 *   op_rank.c      the op order the Baechi ports break ties by
 *   m_etf.c        m-etf: Baechi's memory-constrained Earliest Time First
 *   m_sct.c        m-sct: Baechi's m-ETF with SCT favorite children
 *   etf_engine.c/.h  the list scheduler m-etf and m-sct share
 *   heft.c         heft: Heterogeneous Earliest Finish Time
 * Shared with other placers, one folder up: placer_mem.c/.h (the memory
 * estimate and the simulator-checked retry), placer_util.h, core/pheap.h.
 */
#ifndef OPPLACE_BASELINES_H
#define OPPLACE_BASELINES_H

#include "opplace/placer.h"

/* HEFT (heft.c): ops in processing order (decreasing upward rank, ties by
 * topological position) and each op's upward rank. */
op_status heft_priority_order(const op_problem *p, int *order, double *rank, op_error *err);

/* An order of the ops independent of the graph file's op order (op_rank.c):
 * rank[v] = position of v in a topological walk, depth first (the ops made
 * ready together by decreasing b-level, longest first, or increasing) or
 * breadth first (decreasing), ties by name. */
typedef enum op_rank_walk {
    OP_RANK_LONGEST_FIRST,
    OP_RANK_SHORTEST_FIRST,
    OP_RANK_BREADTH_FIRST
} op_rank_walk;
op_status op_rank_order(const op_problem *p, op_rank_walk walk, int *rank, op_error *err);
/* The edges by (rank of source, rank of destination) into eorder (n_edges). */
op_status op_rank_edges(const op_graph *g, const int *rank, int *eorder, op_error *err);

/* m-TOPO (m_topo.c): the BFS-like topological order it fills devices in;
 * ops made ready together are queued by rank (NULL: by file position). */
op_status m_topo_bfs_order(const op_graph *g, const int *rank, int *order, op_error *err);

/* expert (expert.c): lower bounds of the simulator's overflow (bytes above
 * capacity, summed) and step time for a placement; expert skips a device
 * count they rule out.  The waist (an op mid-way along the critical path,
 * its ancestors and descendants) lets the memory bound count the tensors
 * alive while it runs; w may be NULL (params alone). */
typedef struct expert_waist {
    int op;              /* -1: none */
    unsigned char *mark; /* per op: 1 ancestor of op, 2 descendant, 0 neither */
} expert_waist;
op_status expert_waist_init(const op_problem *p, expert_waist *w, op_error *err);
void expert_waist_destroy(expert_waist *w);
op_status expert_placement_bounds(const op_problem *p, const expert_waist *w,
                                  const int *device_of, double *over, double *step,
                                  op_error *err);

/* m-SCT (m_sct.c): favorite child of each op (-1: none). */
op_status m_sct_favorites(const op_place_ctx *ctx, long max_edges, int *favorite, op_error *err);

#endif
