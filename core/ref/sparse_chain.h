/* sparse_chain.h - the zero-skipping multiply-add chain shared by the reference
 * backend's spike-sparse kernels (conv_sparse.c's forward convolution, the conv weight
 * gradient), and the operand checks that decide whether skipping is exact. Internal to
 * core/ref/ and its tests.
 *
 * The chain: for every column j < w, in e ascending,
 *
 *     c[j] = fma(rows[idx[e] * ld + j], val[e], c[j])        e = 0 .. n-1
 *
 * with a single-rounding fused multiply-add and nothing else (no partial sums): each
 * c[j] is one fmaf() chain, the GEMM contract's chain (gemm_kernel.h) restricted to the
 * terms listed. A caller lists the nonzero values v of a column of the sparse operand
 * with their row indices k (ascending) and passes the dense operand's rows (row k of
 * w floats at rows + k * ld): the chain is then the GEMM's chain with its terms
 * fma(a, +-0, c) left out.
 *
 * Why leaving those terms out is exact (docs/determinism.md). Let the dense operand be
 * all finite and the chain's starting value be no signalling NaN (the checks below:
 * callers test remat_floats_all_finite on both). A left-out term fma(a, +-0, c) with a
 * finite computes c + (+-0) exactly: it returns c unless c is a zero, when it may flip
 * the zero's sign. So after every step the dense and the sparse accumulator are either
 * bitwise equal or both zeros (of possibly different sign); a computed term
 * fma(a, v, c) gives the same result for either sign of a zero c (v nonzero: the
 * product is either nonzero, which absorbs the zero, or an underflowed zero, whose sum
 * with +-0 is decided by the same rule for both). Hence the final values are equal
 * unless the sparse result is +-0: a caller recomputes exactly those elements with the
 * dense fmaf() chain (rare: an exact cancellation), except where no term was computed
 * at all and the start was +0 (no bias, a +0 bias), when the dense chain also ends at
 * +0 (+0 + +-0 = +0 at every step). A non-finite dense operand (inf * 0 = NaN) must
 * take the dense path.
 *
 * Every SIMD path (simd.h) computes the same bits: each lane is one fmaf() chain in e
 * order; only the width differs (scalar: fmaf(); AVX2: 8 lanes, tiles of 64 columns;
 * AVX-512: 16 lanes, tiles of 128 columns; the remainder masked).
 */
#ifndef REMAT_REF_SPARSE_CHAIN_H
#define REMAT_REF_SPARSE_CHAIN_H

#include <stdint.h>

#include "core/ref/simd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*remat_sparse_chain_fn)(float *c, int64_t w, const float *rows, int64_t ld, const int32_t *idx,
                                      const float *val, int64_t n);

/* The chain above on the current path (remat_ref_simd_get, read per call). w, n >= 0;
 * no alignment needed; rows[idx[e] * ld + j] is read for j < w only. */
void remat_sparse_chain(float *c, int64_t w, const float *rows, int64_t ld, const int32_t *idx, const float *val,
                        int64_t n);
/* The chain's kernel for path p (p supported: remat_ref_simd_supported), for callers
 * that read the path once per call and run many chains. */
remat_sparse_chain_fn remat_sparse_chain_for(remat_simd p);
/* The per-path kernels behind it (the AVX ones only where their path is supported). */
void remat_sparse_chain_avx2(float *c, int64_t w, const float *rows, int64_t ld, const int32_t *idx,
                             const float *val, int64_t n);
void remat_sparse_chain_avx512(float *c, int64_t w, const float *rows, int64_t ld, const int32_t *idx,
                               const float *val, int64_t n);

/* The nonzero lists of the columns of a panel (its row k, k < kc, at panel + k * ld;
 * columns r < cols, cols <= 16): column r's list at idx + r * ls and val + r * ls, the
 * (k, panel[k * ld + r]) whose value is not +-0 (NaNs count as nonzero), k ascending;
 * cnt[r] its length. Returns the sum of the lengths. ls >= kc rounded up to 16 (the
 * SIMD kernels store whole vectors past a list's end, within its ls entries); reads
 * panel[k * ld + r] for k < kc, r < cols only. Every path lists the same entries, bit
 * for bit (values are moved, never computed). */
typedef int64_t (*remat_sparse_lists_fn)(int32_t *idx, float *val, int32_t *cnt, const float *panel, int64_t ld,
                                         int64_t cols, int64_t kc, int64_t ls);
/* The kernel for path p (supported): AVX-512 transposes 16 x 16 blocks in registers and
 * compresses each column (vcompressps); the others test 16 columns a row at a time. */
remat_sparse_lists_fn remat_sparse_lists_for(remat_simd p);
int64_t remat_sparse_lists_avx512(int32_t *idx, float *val, int32_t *cnt, const float *panel, int64_t ld,
                                  int64_t cols, int64_t kc, int64_t ls);

/* dst[k * ld + r] = src[r * rs + k] for r < rows, k < cols (AVX2 only: remat_ref_simd_supported;
 * moves floats, no arithmetic). */
void remat_sparse_transpose_avx2(float *dst, int64_t ld, const float *src, int64_t rs, int64_t rows,
                                 int64_t cols);

/* The moves of the sparse kernels' layouts, for path p (supported): transpose,
 * dst[k * ld + r] = src[r * rs + k], and transposed add, dst[r * ld + k] =
 * dst[r * ld + k] + src[k * rs + r] (one float add per element, dst's value first), for
 * r < rows, k < cols. AVX-512: 16 x 16 blocks in registers, edges masked; AVX2's
 * transpose remat_sparse_transpose_avx2; the others through remat_gemm_pack_strided
 * (gemm_kernel.h). Same bits on every path. */
typedef void (*remat_sparse_move_fn)(float *dst, int64_t ld, const float *src, int64_t rs, int64_t rows, int64_t cols);
remat_sparse_move_fn remat_sparse_transpose_for(remat_simd p);
remat_sparse_move_fn remat_sparse_add_t_for(remat_simd p);
void remat_sparse_transpose_avx512(float *dst, int64_t ld, const float *src, int64_t rs, int64_t rows, int64_t cols);
void remat_sparse_add_t_avx512(float *dst, int64_t ld, const float *src, int64_t rs, int64_t rows, int64_t cols);

/* 1 when none of x[i * stride], i < n, is an infinity or a NaN (stride >= 1). */
int remat_floats_all_finite(const float *x, int64_t n, int64_t stride);
/* How many of x[0 .. n) are not +-0 (NaNs count as nonzero). */
int64_t remat_floats_nonzero(const float *x, int64_t n);
/* The nonzero list of x[0 .. n): idx[m] = base + i, val[m] = x[i] for each x[i] that is
 * not +-0, i ascending; returns m. idx and val need room for n entries. */
int64_t remat_sparse_list(int32_t *idx, float *val, const float *x, int64_t n, int32_t base);

#ifdef __cplusplus
}
#endif
#endif
