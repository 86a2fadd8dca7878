/*
 * learn/units.h - decision units, which both learned placers (SGDP,
 * Trinity) build around their reference placement.  Neither is in the SGDP
 * or Trinity paper: on graphs of thousands of ops a policy that places
 * every op independently from a random start cuts thousands of edges per
 * sample, and in a budget of minutes PPO learns only to put everything on
 * one device.  So each placer takes a reference placement, the best of a
 * list of fast heuristics judged by their devices alone (op_portfolio_best
 * with drop_order: the policy places ops, the simulator orders them), and
 * decides per unit: Celeritas' Optimal Operation Fusion groups (coarsen.h,
 * "celeritas": about `target` groups of consecutive ops in CPD-TOPO order
 * cut at cheap edges), each split by the reference's devices and merged
 * with colocation groups.  A unit's first op in topological order is its
 * decision and the other members copy it, as colocation does, so any
 * placement the reference can express the units can express, and a sampled
 * move shifts a fused chain, not one op.
 */
#ifndef OPPLACE_LEARN_UNITS_H
#define OPPLACE_LEARN_UNITS_H

#include "coarsen/coarsen.h"
#include "opplace/placement.h"
#include "opplace/problem.h"

/* Decision units a placer aims for unless told otherwise (--units). */
#define LEARN_DEFAULT_UNITS 256

/* unit_of[op] in 0..*n_units-1: about `target` fusion groups made by
 * fuse_by (the placers pass the "celeritas" coarsener; NULL, target <= 0 or
 * target >= n: one unit per op), each split by ref's device (ref may be
 * NULL), merged with colocation groups; a unit whose members share no
 * eligible device falls back to its colocation group. */
op_status learn_units_build(const op_problem *p, const op_placement *ref,
                            const op_coarsener *fuse_by, int target, int *unit_of, int *n_units,
                            op_error *err);

/* Per unit u of unit_of: its leader *lead[u], the member first in
 * topological order (an op id), and (*um)[u * D + d], whether every member
 * may use device d (the AND of their rows of mask, D entries per row; rows
 * indexed by op id, or by topological position when by_topo).  The caller
 * frees both. */
op_status learn_unit_leaders(const op_graph *g, const int *unit_of, int n_units,
                             const unsigned char *mask, int D, int by_topo, int **lead,
                             unsigned char **um, op_error *err);

#endif
