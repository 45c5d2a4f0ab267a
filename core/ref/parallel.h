/* parallel.h - the reference backend's threads: the GEMM's output blocks (gemm.c), batch
 * norm, neurons, dropout, add, pooling. Internal to core/ref/.
 *
 * remat_ref_parallel_for(n, align, min_items, fn, ctx) runs fn(ctx, lo, hi) over
 * contiguous parts [lo, hi) that cover [0, n) once: at most remat_ref_get_threads()
 * parts, each boundary a multiple of align, none smaller than min_items (fewer parts
 * where n is small: waking a thread costs more than it saves). Part 0 runs on the
 * calling thread, the others on a pool of workers kept between calls (parallel.c; a
 * call made while another uses the pool, or from inside a part, starts threads of its
 * own); a thread that cannot start has its part run on the caller. A kernel
 * passes only work whose elements are independent (a neuron, a channel, an element):
 * which thread computes an element never changes its value, so every thread count
 * gives the same bits (tests/threads_test.cc).
 */
#ifndef REMAT_REF_PARALLEL_H
#define REMAT_REF_PARALLEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Elements per part at least for the element-wise kernels (add, dropout, the
 * optimisers, zeroing): below it a second thread costs more than it saves. */
#define REMAT_REF_ELEM_MIN_PER_THREAD 32768

typedef void (*remat_ref_range_fn)(void *ctx, int64_t lo, int64_t hi);

void remat_ref_parallel_for(int64_t n, int64_t align, int64_t min_items, remat_ref_range_fn fn, void *ctx);

/* The operand checks of sparse_chain.h over `runs` runs of len floats, stride apart
 * (x + r * stride, r < runs), split over the threads (parts of at least
 * REMAT_REF_SCAN_MIN_PER_THREAD floats): how many are not +-0, and whether all are
 * finite. Integer counts and flags: the same answer for every split. */
#define REMAT_REF_SCAN_MIN_PER_THREAD ((int64_t)1 << 18)
int64_t remat_ref_floats_nonzero_runs(const float *x, int64_t runs, int64_t len, int64_t stride);
int remat_ref_floats_all_finite_runs(const float *x, int64_t runs, int64_t len, int64_t stride);

/* The threads' busy time, for benchmarks (bench/conv_bench's threads table): while on,
 * every outermost remat_ref_parallel_for call times each of its parts by the thread CPU
 * time of the thread that runs it (what other jobs of a shared machine take is not
 * counted) and adds them up here. A caller that also times itself by its own thread CPU
 * time (c) gets its serial part, c - first_s, and the step's critical path on as many
 * cores as threads, (c - first_s) + max_s: a measure of the thread gain that the
 * machine's load does not distort. One calling thread at a time; off by default (one
 * relaxed load per call). remat_ref_parallel_stats_on resets the sums. */
typedef struct remat_par_stats {
    int64_t calls, split; /* outermost calls; those of them run as 2 or more parts */
    int64_t parts;        /* parts run, over all calls */
    double first_s;       /* CPU seconds of part 0 (the calling thread's share), summed */
    double busy_s;        /* CPU seconds of every part, summed */
    double max_s;         /* CPU seconds of each call's longest part, summed */
} remat_par_stats;

void remat_ref_parallel_stats_on(int on);
remat_par_stats remat_ref_parallel_stats(void);

#ifdef __cplusplus
}
#endif

#endif
