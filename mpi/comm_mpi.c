/* comm_mpi.c - the MPI transport (comm_mpi.h). */
#include "mpi/comm_mpi.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static remat_status mpi_fail(remat_error *err, const char *what, int rc) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return remat_error_set(err, REMAT_ERR_INTERNAL, "MPI: %s failed: %.*s", what, len, msg);
}

/* Broadcasts in pieces of at most INT_MAX bytes (MPI counts are int). */
static remat_status mpi_bcast(void *ctx, void *buf, int64_t bytes, int root, remat_error *err) {
    (void)ctx;
    for (int64_t off = 0; off < bytes; off += INT_MAX) {
        int n = (int)(bytes - off < INT_MAX ? bytes - off : INT_MAX);
        int rc = MPI_Bcast((char *)buf + off, n, MPI_BYTE, root, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) return mpi_fail(err, "MPI_Bcast", rc);
    }
    return REMAT_OK;
}

static remat_status mpi_barrier(void *ctx, remat_error *err) {
    (void)ctx;
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? REMAT_OK : mpi_fail(err, "MPI_Barrier", rc);
}

remat_status remat_mpi_init(int *argc, char ***argv, remat_comm *out, remat_error *err) {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int rc = MPI_Init(argc, argv);
        if (rc != MPI_SUCCESS) return mpi_fail(err, "MPI_Init", rc);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    memset(out, 0, sizeof *out);
    MPI_Comm_rank(MPI_COMM_WORLD, &out->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &out->size);
    out->bcast = mpi_bcast;
    out->barrier = mpi_barrier;
    return REMAT_OK;
}

void remat_mpi_finalize(void) {
    int inited = 0, done = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&done);
    if (inited && !done) MPI_Finalize();
}

void remat_mpi_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

const char *remat_mpi_library(void) {
    static char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(v, &len);
    for (int i = 0; i < len; i++)
        if (v[i] == '\n' || v[i] == ',') {
            v[i] = 0;
            break;
        } else if (v[i] == '\t') { /* MPICH: "MPICH Version:\t4.0.2" */
            v[i] = ' ';
        }
    return v;
}
