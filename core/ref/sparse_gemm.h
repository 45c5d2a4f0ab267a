/* sparse_gemm.h - the GEMM of a remat_gemm_desc (gemm_kernel.h) that skips the zeros of
 * its B operand: conv.c's forward convolution on spike inputs (B is the column matrix
 * of an input that is mostly exact zeros after a spiking neuron). Internal to core/ref/
 * and its tests.
 *
 * Same bits as remat_gemm_desc_run on the same descriptor, for every SIMD path and
 * thread count (tests/conv_sparse_test.cc), provided
 *  - the operands are float (no c16, a16, b16),
 *  - every A(i, k) is finite and, with accumulate, no starting C(i, j) is a NaN or an
 *    infinity (remat_sparse_pick checks both for a conv);
 * sparse_chain.h has the argument: the terms fma(A(i,k), +-0, c) are left out, each
 * element's chain otherwise runs over k ascending, and every element whose result is
 * +-0 is recomputed with the full fmaf() chain (unless no term was computed and the
 * start was +0: the dense chain ends at +0 there too).
 *
 * How: A is transposed once per call into [k][i] tiles of 128 rows (AVX-512; 64
 * otherwise; pack_a or A's strides); the output columns j are split over threads in
 * blocks of pixels (remat_ref_parallel_for; an element's chain never depends on its
 * block or thread); per block and K block, B's panel is packed as the dense GEMM packs
 * it (pack_b, or B's strides) and turned into per-column lists of the nonzero
 * (k, B(k, j)), and each column's list runs as remat_sparse_chain over each tile, the
 * accumulators of the block held in a [j][i] buffer across K blocks (stored and
 * reloaded: exact). Memory from remat_xmalloc, not the caller's workspace (traces and
 * the executor's accounting are unchanged): the transposed A, at most
 * REMAT_GEMM_SCRATCH_BYTES (a larger A runs in passes of whole tiles of rows, each
 * with its own lists: a row's chain does not depend on the rows beside it), and per
 * thread about 0.7 MiB whatever M, N and K. A failed allocation
 * takes the dense GEMM or the element's fmaf() chain (the same bits).
 */
#ifndef REMAT_REF_SPARSE_GEMM_H
#define REMAT_REF_SPARSE_GEMM_H

#include <stdint.h>

#include "core/ref/gemm_kernel.h"
#include "core/ref/simd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The GEMM of d skipping B's zeros, on the current path / on path p (supported). */
void remat_sparse_gemm_desc_run(const remat_gemm_desc *d);
void remat_sparse_gemm_desc_run_on(remat_simd p, const remat_gemm_desc *d);
/* How many sparse GEMMs ran in this process (tests: that a path was taken). */
int64_t remat_sparse_gemm_runs(void);

/* The choice of a conv's forward path (the choice changes no bit, only the speed):
 * REMAT_SPARSE_AUTO takes the sparse GEMM when at most a fraction
 * remat_sparse_density(m, k) of the n_b input values are nonzero, m the GEMM's rows
 * (output channels per group) and k = n_a / m (weights per output channel: K, times
 * the groups). Fewer rows leave too few multiply-adds per listed input to pay for the
 * lists: REMAT_SPARSE_DENSITY (25 %) from 128 rows, 40 % from 256, 50 % from 512, and
 * from REMAT_SPARSE_MIN_ROWS (64) rows where k >= REMAT_SPARSE_NARROW_K (128): below
 * that a pixel's list is too short for its fixed costs (vgg b1, K = 18: 0.7x at any
 * density); 0 (never) otherwise. The crossovers bench/conv_bench measured in calls of
 * 20 samples (bench/exp17_sparse_forward.py; sew l1, 64 rows and K = 576: 1.26x at
 * 25 %, 1.17x at 35 % on AVX-512). REMAT_SPARSE_DENSE / _FORCE
 * always / never take the dense one (tests and benchmarks: remat_sparse_mode_set
 * returns the previous mode). Whatever the mode, the sparse GEMM is only taken where
 * it is exact: all n_a values of A finite and all n_c starting values (the bias; NULL:
 * none) finite. */
typedef enum { REMAT_SPARSE_AUTO = 0, REMAT_SPARSE_DENSE = 1, REMAT_SPARSE_FORCE = 2 } remat_sparse_mode;
#define REMAT_SPARSE_DENSITY 0.25
#define REMAT_SPARSE_MIN_ROWS 64
#define REMAT_SPARSE_NARROW_K 128
remat_sparse_mode remat_sparse_mode_set(remat_sparse_mode m);
double remat_sparse_density(int64_t m, int64_t k);
/* The mode now (the conv's zero-skipping weight gradient, conv_sparse_dw.h, follows it
 * too, with its own density threshold). */
remat_sparse_mode remat_sparse_mode_get(void);
int remat_sparse_pick(const float *b, int64_t n_b, int64_t m, const float *a, int64_t n_a, const float *c,
                      int64_t n_c);

#ifdef __cplusplus
}
#endif
#endif
