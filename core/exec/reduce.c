/* reduce.c - the fixed-order combination of per-block partial sums (reduce.h), and the
 * in-process thread transport the tests use to run R ranks in one process. */
#define _POSIX_C_SOURCE 200809L
#include "core/exec/reduce.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

remat_shard remat_shard_one(int blocks, int64_t n) {
    remat_shard s = {blocks, 1, 0, n, NULL};
    return s;
}

remat_status remat_shard_check(const remat_shard *s, const char *what, remat_error *err) {
    (void)what; /* the caller names the command */
    if (s->blocks < 1)
        return remat_error_set(err, REMAT_ERR_INPUT, "--reduce-blocks: %d (expected 1 or more)", s->blocks);
    if (s->ranks < 1 || s->blocks % s->ranks != 0)
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "--reduce-blocks: %d blocks cannot be dealt over %d ranks (expected a multiple of "
                               "the world size, e.g. --reduce-blocks 8 for 1, 2, 4 or 8 ranks)",
                               s->blocks, s->ranks);
    if (s->n_total < s->blocks || s->n_total % s->blocks != 0)
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "--reduce-blocks: %d does not divide the batch N = %lld (expected a divisor of N)",
                               s->blocks, (long long)s->n_total);
    if (s->rank < 0 || s->rank >= s->ranks)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "rank %d outside a world of %d", s->rank, s->ranks);
    if (s->comm && (s->comm->size != s->ranks || s->comm->rank != s->rank))
        return remat_error_set(err, REMAT_ERR_INTERNAL, "transport rank %d/%d is not shard rank %d/%d",
                               s->comm->rank, s->comm->size, s->rank, s->ranks);
    return REMAT_OK;
}

int remat_shard_local_blocks(const remat_shard *s) { return s->blocks / s->ranks; }
int64_t remat_shard_local_n(const remat_shard *s) { return s->n_total / s->ranks; }
int64_t remat_shard_first_sample(const remat_shard *s) { return (int64_t)s->rank * remat_shard_local_n(s); }

/* One body for both element types: blocks of every rank in rank order (rank q's
 * blocks are global blocks q*L .. q*L + L - 1), each added in turn. Each rank's L blocks
 * are added chunk by chunk of FOLD_CHUNK elements (the chunk of out stays in L1 while
 * every block's chunk is added into it, each block read once): per element the same
 * additions in the same order as a pass per block. */
#define FOLD_CHUNK 512
#define FOLD_BODY(T)                                                                                             \
    const int L = remat_shard_local_blocks(s);                                                                   \
    const int world = s->comm ? s->ranks : 1;                                                                    \
    for (int q = 0; q < world; q++) {                                                                            \
        const T *src = local;                                                                                    \
        if (world > 1) {                                                                                         \
            T *buf = q == s->rank ? (T *)local : recv;                                                           \
            remat_status st = s->comm->bcast(s->comm->ctx, buf, (int64_t)L * n * (int64_t)sizeof(T), q, err);    \
            if (st != REMAT_OK) return st;                                                                       \
            src = buf;                                                                                           \
        }                                                                                                        \
        for (int64_t i0 = 0; i0 < n; i0 += FOLD_CHUNK) {                                                         \
            const int64_t m = n - i0 < FOLD_CHUNK ? n - i0 : FOLD_CHUNK;                                         \
            T *restrict o = out + i0;                                                                            \
            int b = 0;                                                                                           \
            if (q == 0) { /* the first block starts the fold */                                                  \
                memcpy(o, src + i0, (size_t)m * sizeof(T));                                                      \
                b = 1;                                                                                           \
            }                                                                                                    \
            for (; b < L; b++) {                                                                                 \
                const T *restrict p = src + (int64_t)b * n + i0;                                                 \
                for (int64_t i = 0; i < m; i++) o[i] = o[i] + p[i];                                              \
            }                                                                                                    \
        }                                                                                                        \
    }                                                                                                            \
    return REMAT_OK;

remat_status remat_reduce_fold_f32(const remat_shard *s, float *out, const float *local, float *recv, int64_t n,
                                   remat_error *err) {
    FOLD_BODY(float)
}

remat_status remat_reduce_fold_f64(const remat_shard *s, double *out, const double *local, double *recv, int64_t n,
                                   remat_error *err) {
    FOLD_BODY(double)
}

remat_status remat_comm_allgather(const remat_comm *c, const void *mine, void *all, int64_t bytes, remat_error *err) {
    int world = c ? c->size : 1;
    for (int q = 0; q < world; q++) {
        char *buf = (char *)all + (int64_t)q * bytes;
        if (!c || q == c->rank) memcpy(buf, mine, (size_t)bytes);
        if (c && world > 1) {
            remat_status st = c->bcast(c->ctx, buf, bytes, q, err);
            if (st != REMAT_OK) return st;
        }
    }
    return REMAT_OK;
}

/* ---- the thread transport ---------------------------------------------------- */

struct remat_comm_threads {
    int size;
    pthread_barrier_t bar;
    void *root_buf; /* the root's buffer during a broadcast */
};

typedef struct {
    remat_comm_threads *t;
    int rank;
} thr_ctx;

static thr_ctx *thr_ctxs(remat_comm_threads *t) { return (thr_ctx *)(t + 1); }

static remat_status thr_barrier(void *ctx, remat_error *err) {
    (void)err;
    pthread_barrier_wait(&((thr_ctx *)ctx)->t->bar);
    return REMAT_OK;
}

static remat_status thr_bcast(void *ctx, void *buf, int64_t bytes, int root, remat_error *err) {
    thr_ctx *c = ctx;
    if (c->rank == root) c->t->root_buf = buf;
    pthread_barrier_wait(&c->t->bar);
    if (c->rank != root && bytes > 0) memcpy(buf, c->t->root_buf, (size_t)bytes);
    pthread_barrier_wait(&c->t->bar);
    (void)err;
    return REMAT_OK;
}

remat_comm_threads *remat_comm_threads_new(int size, remat_error *err) {
    remat_comm_threads *t = calloc(1, sizeof *t + (size_t)size * sizeof(thr_ctx));
    if (!t) {
        remat_error_set(err, REMAT_ERR_NOMEM, "out of memory for a thread transport");
        return NULL;
    }
    t->size = size;
    pthread_barrier_init(&t->bar, NULL, (unsigned)size);
    for (int r = 0; r < size; r++) thr_ctxs(t)[r] = (thr_ctx){t, r};
    return t;
}

remat_comm remat_comm_threads_get(remat_comm_threads *t, int rank) {
    remat_comm c = {rank, t->size, thr_bcast, thr_barrier, &thr_ctxs(t)[rank]};
    return c;
}

void remat_comm_threads_free(remat_comm_threads *t) {
    if (!t) return;
    pthread_barrier_destroy(&t->bar);
    free(t);
}
