/*
 * parallel.c - the MPI layer of core/parallel.h.  Built against Open MPI
 * when CMake finds it (OPPLACE_HAVE_MPI); otherwise a single-rank stand-in.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"

#ifdef OPPLACE_HAVE_MPI
#include <mpi.h>

static int active, rank_, size_ = 1;

static int launched_by_mpirun(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

void op_par_init(int *argc, char ***argv)
{
    if (active || !launched_by_mpirun())
        return;
    int already = 0;
    MPI_Initialized(&already);
    if (!already && MPI_Init(argc, argv) != MPI_SUCCESS)
        return;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    active = 1;
}

void op_par_finalize(void)
{
    if (active) {
        MPI_Finalize();
        active = 0;
    }
}

int op_par_rank(void)
{
    return active ? rank_ : 0;
}

int op_par_size(void)
{
    return active ? size_ : 1;
}

op_status op_par_allreduce_sum(double *buf, int n, op_error *err)
{
    if (!active || size_ == 1)
        return OP_OK;
    if (MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
        return op_fail(err, OP_EINTERNAL, "MPI_Allreduce failed");
    return OP_OK;
}

op_status op_par_allgather(const double *mine, int n, double *all, op_error *err)
{
    if (!active || size_ == 1) {
        memcpy(all, mine, (size_t)n * sizeof *mine);
        return OP_OK;
    }
    if (MPI_Allgather(mine, n, MPI_DOUBLE, all, n, MPI_DOUBLE, MPI_COMM_WORLD) != MPI_SUCCESS)
        return op_fail(err, OP_EINTERNAL, "MPI_Allgather failed");
    return OP_OK;
}

op_status op_par_bcast(void *buf, size_t bytes, int root, op_error *err)
{
    if (!active || size_ == 1)
        return OP_OK;
    /* MPI counts are ints: send large buffers in slices */
    const size_t slice = (size_t)1 << 30;
    for (size_t off = 0; off < bytes; off += slice) {
        size_t len = bytes - off < slice ? bytes - off : slice;
        if (MPI_Bcast((char *)buf + off, (int)len, MPI_BYTE, root, MPI_COMM_WORLD) != MPI_SUCCESS)
            return op_fail(err, OP_EINTERNAL, "MPI_Bcast failed");
    }
    return OP_OK;
}

#else /* one rank */

void op_par_init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
}

void op_par_finalize(void)
{
}

int op_par_rank(void)
{
    return 0;
}

int op_par_size(void)
{
    return 1;
}

op_status op_par_allreduce_sum(double *buf, int n, op_error *err)
{
    (void)buf;
    (void)n;
    (void)err;
    return OP_OK;
}

op_status op_par_allgather(const double *mine, int n, double *all, op_error *err)
{
    (void)err;
    memcpy(all, mine, (size_t)n * sizeof *mine);
    return OP_OK;
}

op_status op_par_bcast(void *buf, size_t bytes, int root, op_error *err)
{
    (void)buf;
    (void)bytes;
    (void)root;
    (void)err;
    return OP_OK;
}

#endif
