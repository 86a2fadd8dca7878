/*
 * core/parallel.h - running one search over several processes (MPI).
 *
 * `mpirun -np N opplace place ...` starts N ranks of the same command.  The
 * portfolio of `auto` and the refinement streams are split across ranks,
 * and the best result is chosen by the same rule on every rank and copied
 * from the rank that holds it.  Without mpirun (or in a build without Open
 * MPI) there is one rank and every call here is a cheap no-op, so the rest
 * of opplace never needs an #ifdef.
 *
 * MPI is initialised only when the process was started by mpirun (Open
 * MPI's OMPI_COMM_WORLD_SIZE or PMIx's PMIX_RANK is set): a plain run pays
 * nothing and needs no MPI runtime.
 */
#ifndef OPPLACE_PARALLEL_H
#define OPPLACE_PARALLEL_H

#include <stddef.h>

#include "opplace/error.h"

/* Call once at start and once at exit of the program (idempotent). */
void op_par_init(int *argc, char ***argv);
void op_par_finalize(void);

int op_par_rank(void);
int op_par_size(void);

/* Element-wise sum over ranks, in place. */
op_status op_par_allreduce_sum(double *buf, int n, op_error *err);
/* Every rank's n doubles, rank by rank, into all (size n * op_par_size()). */
op_status op_par_allgather(const double *mine, int n, double *all, op_error *err);
/* Copy bytes from rank root to every rank. */
op_status op_par_bcast(void *buf, size_t bytes, int root, op_error *err);

#endif
