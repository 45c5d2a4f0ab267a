/* comm_mpi.h - the MPI transport of the data-parallel reduction (core/exec/reduce.h):
 * MPI_COMM_WORLD, bytes moved by MPI_Bcast only (no MPI reduction: their order is not
 * fixed). MPI-3 calls only, so Open MPI and MPICH both build it (--config=mpi).
 *
 *   remat_comm c;
 *   if (remat_mpi_init(&argc, &argv, &c, &err) != REMAT_OK) ...;   // MPI_Init
 *   ... remat_reduce_fold_f32(&shard, ...) ...
 *   remat_mpi_finalize();
 */
#ifndef REMAT_COMM_MPI_H
#define REMAT_COMM_MPI_H

#include "core/exec/reduce.h"

#ifdef __cplusplus
extern "C" {
#endif

remat_status remat_mpi_init(int *argc, char ***argv, remat_comm *out, remat_error *err);
void remat_mpi_finalize(void);
/* Ends every rank at once (a failure on one rank that the others cannot see). */
void remat_mpi_abort(int code);
/* The library's own version line (MPI_Get_library_version), first line only. */
const char *remat_mpi_library(void);

#ifdef __cplusplus
}
#endif
#endif
