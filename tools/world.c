/* world.c - the world a command runs in (world.h). The launcher's environment says
 * whether there is one: Open MPI's OMPI_COMM_WORLD_SIZE, PMIx's PMIX_RANK, MPICH's
 * PMI_SIZE. Outside a launcher MPI is not initialised at all. */
#include "tools/world.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef REMAT_WITH_MPI
#include "mpi/comm_mpi.h"
#endif

/* The world size the launcher announces (1 without one). */
static int launcher_size(void) {
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 0) return atoi(v);
    }
    return getenv("PMIX_RANK") ? 2 : 1;
}

int remat_tools_world_open(const char *cmd, remat_tools_world *w) {
    memset(w, 0, sizeof *w);
    w->size = 1;
    if (launcher_size() <= 1) return 0;
#ifdef REMAT_WITH_MPI
    remat_error err = {0};
    if (remat_mpi_init(NULL, NULL, &w->c, &err) != REMAT_OK) {
        fprintf(stderr, "remat %s: %s\n", cmd, err.msg);
        return 1;
    }
    w->mpi = 1;
    w->rank = w->c.rank;
    w->size = w->c.size;
    w->comm = w->size > 1 ? &w->c : NULL;
    return 0;
#else
    fprintf(stderr, "remat %s: started by an MPI launcher (%d ranks) but this remat is built without MPI (expected "
                    "a build with: bazel build --config=mpi //tools:remat)\n",
            cmd, launcher_size());
    return 2;
#endif
}

void remat_tools_world_close(remat_tools_world *w) {
#ifdef REMAT_WITH_MPI
    if (w->mpi) remat_mpi_finalize();
#endif
    w->mpi = 0;
}

int remat_tools_world_agree(const remat_tools_world *w, int rc) {
    if (!w->comm) return rc;
    int32_t v = rc;
    remat_error err = {0};
    if (w->comm->bcast(w->comm->ctx, &v, sizeof v, 0, &err) != REMAT_OK) {
        fprintf(stderr, "remat: %s\n", err.msg);
        return 1;
    }
    return v;
}

void remat_tools_world_abort(const remat_tools_world *w, int code) {
#ifdef REMAT_WITH_MPI
    if (w->mpi && w->size > 1) remat_mpi_abort(code);
#endif
    (void)w;
    (void)code;
}

const char *remat_tools_mpi_status(void) {
#ifdef REMAT_WITH_MPI
    static char buf[320];
    snprintf(buf, sizeof buf, "built in (%s; mpirun -np R remat run|verify)", remat_mpi_library());
    return buf;
#else
    return "not built in (bazel build --config=mpi //tools:remat)";
#endif
}
