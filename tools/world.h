/* world.h - the world a command runs in: the ranks of `mpirun -np R remat ...` in an
 * MPI build (--config=mpi, docs/mpi.md), else one process.
 *
 *   remat_tools_world w;
 *   if (remat_tools_world_open("run", &w) != 0) return 2;   // exit code on failure
 *   ... w.size, w.rank, w.comm (NULL when size == 1) ...
 *   remat_tools_world_close(&w);
 */
#ifndef REMAT_TOOLS_WORLD_H
#define REMAT_TOOLS_WORLD_H

#include "core/exec/reduce.h"

typedef struct remat_tools_world {
    int rank, size;
    remat_comm c;
    const remat_comm *comm; /* &c, or NULL in one process */
    int mpi;                /* MPI was initialised (close finalises it) */
} remat_tools_world;

/* 0, or the exit code after one line on stderr (a launcher's world in a build without
 * MPI: the ranks would each run the whole command). */
int remat_tools_world_open(const char *cmd, remat_tools_world *w);
void remat_tools_world_close(remat_tools_world *w);
/* Rank 0's rc on every rank (a collective: every rank calls it; rc unchanged in one
 * process). For what rank 0 alone does - check and write the outputs - so that every
 * rank exits with its code while rank 0 alone prints why. */
int remat_tools_world_agree(const remat_tools_world *w, int rc);
/* Ends every rank (a failure on one rank the others would wait for forever). */
void remat_tools_world_abort(const remat_tools_world *w, int code);
/* "built in (<library>)" or "not built in (...)": for remat --version. */
const char *remat_tools_mpi_status(void);

#endif
