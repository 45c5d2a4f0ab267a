/* parallel.h - the reference backend's threads: the GEMM's output blocks (gemm.c), batch
 * norm, neurons, dropout, add, pooling. Internal to core/ref/.
 *
 * remat_ref_parallel_for(n, align, min_items, fn, ctx) runs fn(ctx, lo, hi) over
 * contiguous parts [lo, hi) that cover [0, n) once: at most remat_ref_get_threads()
 * parts, each boundary a multiple of align, none smaller than min_items (fewer parts
 * where n is small: starting a thread costs more than it saves). Part 0 runs on the
 * calling thread; a thread that cannot start has its part run there too. A kernel
 * passes only work whose elements are independent (a neuron, a channel, an element):
 * which thread computes an element never changes its value, so every thread count
 * gives the same bits (tests/threads_test.cc).
 */
#ifndef REMAT_REF_PARALLEL_H
#define REMAT_REF_PARALLEL_H

#include <stdint.h>

/* Elements per part at least for the element-wise kernels (add, dropout, the
 * optimisers, zeroing): below it a second thread costs more than it saves. */
#define REMAT_REF_ELEM_MIN_PER_THREAD 32768

typedef void (*remat_ref_range_fn)(void *ctx, int64_t lo, int64_t hi);

void remat_ref_parallel_for(int64_t n, int64_t align, int64_t min_items, remat_ref_range_fn fn, void *ctx);

#endif
