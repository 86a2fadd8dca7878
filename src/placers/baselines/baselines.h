/*
 * baselines.h - inner steps of the baseline placers, exposed so tests can
 * check each heuristic against its definition (tests/test_baselines.c).
 */
#ifndef OPPLACE_BASELINES_H
#define OPPLACE_BASELINES_H

#include "opplace/placer.h"

/* HEFT (heft.c): ops in processing order (decreasing upward rank, ties by
 * topological position) and each op's upward rank. */
op_status heft_priority_order(const op_problem *p, int *order, double *rank, op_error *err);

/* m-TOPO (m_topo.c): the BFS-like topological order it fills devices in. */
op_status m_topo_bfs_order(const op_graph *g, int *order, op_error *err);

/* m-SCT (m_sct.c): favorite child of each op (-1: none). */
op_status m_sct_favorites(const op_place_ctx *ctx, int *favorite, op_error *err);

#endif
