/* reduce.h - the fixed-order reduction over blocks of samples that makes a
 * data-parallel step bit-identical for every world size (docs/determinism.md,
 * "Data parallelism").
 *
 *   remat_shard sh = remat_shard_one(8, N);          // 8 blocks, one process
 *   sh = (remat_shard){.blocks = 8, .ranks = R, .rank = r, .n_total = N, .comm = &c};
 *   remat_shard_check(&sh, "run", &err);              // R divides 8, 8 divides N
 *   o.shard = &sh;  m.N = remat_shard_local_n(&sh);    // the rank's share
 *
 * The batch of n_total samples is cut into `blocks` blocks of n_total/blocks
 * samples; rank r holds blocks r*L .. (r+1)*L - 1 (L = blocks/ranks). A sum over
 * samples is one partial per block, and remat_reduce_fold_* combines the partials of
 * all blocks as ((P_0 + P_1) + P_2) + ... on every rank. The transport only moves
 * bytes (a broadcast from each rank in turn), so no MPI library's reduction order
 * enters the result.
 */
#ifndef REMAT_REDUCE_H
#define REMAT_REDUCE_H

#include <stdint.h>

#include "core/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A transport: `size` ranks, this one `rank`. bcast is a collective: every rank calls
 * it with the same bytes and root; afterwards buf on every rank holds root's bytes.
 * barrier: every rank has reached it. */
typedef struct remat_comm {
    int rank, size;
    remat_status (*bcast)(void *ctx, void *buf, int64_t bytes, int root, remat_error *err);
    remat_status (*barrier)(void *ctx, remat_error *err);
    void *ctx;
} remat_comm;

typedef struct remat_shard {
    int blocks;        /* reduction blocks of the global batch (>= 1) */
    int ranks, rank;   /* world size (divides blocks) and this rank */
    int64_t n_total;   /* the global batch */
    const remat_comm *comm; /* NULL: ranks == 1, or a simulation (no data moves) */
} remat_shard;

/* One process holding all `blocks` blocks of a batch of n samples. */
remat_shard remat_shard_one(int blocks, int64_t n);
/* blocks >= 1, ranks divides blocks, blocks divides n_total, 0 <= rank < ranks; else
 * REMAT_ERR_INPUT naming the flag (the caller prefixes its command, "remat <what>: "). */
remat_status remat_shard_check(const remat_shard *s, const char *what, remat_error *err);
int remat_shard_local_blocks(const remat_shard *s);  /* blocks / ranks */
int64_t remat_shard_local_n(const remat_shard *s);   /* samples this rank holds */
int64_t remat_shard_first_sample(const remat_shard *s);

/* out[0..n) = the combination, in ascending block order, of every block's partial:
 * local holds this rank's blocks ([local_blocks][n], block-major). recv: room for
 * [local_blocks][n] (needed when ranks > 1 and comm != NULL; else unused). With
 * comm == NULL and ranks > 1 (a simulation) only the local blocks are combined. */
remat_status remat_reduce_fold_f32(const remat_shard *s, float *out, const float *local, float *recv, int64_t n,
                                   remat_error *err);
remat_status remat_reduce_fold_f64(const remat_shard *s, double *out, const double *local, double *recv, int64_t n,
                                   remat_error *err);

/* all[q * bytes ..] = rank q's `mine`, on every rank (one broadcast per rank; c NULL:
 * one process, all = mine). */
remat_status remat_comm_allgather(const remat_comm *c, const void *mine, void *all, int64_t bytes, remat_error *err);

/* A transport for tests and benchmarks: `size` threads of one process, each calling
 * with its own comm (remat_comm_threads_get). */
typedef struct remat_comm_threads remat_comm_threads;
remat_comm_threads *remat_comm_threads_new(int size, remat_error *err);
remat_comm remat_comm_threads_get(remat_comm_threads *t, int rank);
void remat_comm_threads_free(remat_comm_threads *t);

#ifdef __cplusplus
}
#endif
#endif
