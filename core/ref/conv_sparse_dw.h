/* conv_sparse_dw.h - the reference conv2d's weight gradient that skips the input's
 * zeros (spike-sparse inputs: a LIF layer's output is mostly +0), bit-identical to the
 * dense implicit GEMM of conv.c. Internal to core/ref/ and its tests.
 *
 * conv.c's weight gradient of one time step and one group is the product
 *
 *     P_t(co, k) = chain over (n, p) ascending from +0 of fma(dout_n(co, p), col_n(k, p), .)
 *
 * (gemm_kernel.h's chain, K of the GEMM running over the step's samples and pixels).
 * Here the same chain is computed with the terms whose column-matrix value is +-0 left
 * out (sparse_chain.h says why that is exact when dout is all finite; the elements
 * whose result is +-0 and that computed any term are recomputed with the dense fmaf()
 * chain), vectorised over the output channels: for each row k = (ci, ky, kx) of the
 * column matrix, its nonzero values (made from channel ci's nonzero input pixels,
 * shifted by the tap and clipped) are chained against dout transposed to [(n, p)][co].
 * The result is the dense one, bit for bit, on every SIMD path and thread count.
 */
#ifndef REMAT_REF_CONV_SPARSE_DW_H
#define REMAT_REF_CONV_SPARSE_DW_H

#include <stdint.h>

#include "core/model/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The density threshold: with remat_sparse_mode AUTO (core/ref/sparse_gemm.h, the
 * forward conv's switch too), the sparse path runs where at most this share of the
 * group's input values (the step's N samples) is nonzero, each input pixel is read at
 * least once (h_out w_out kh kw >= h_in w_in; not a 1x1 conv of stride 2) and the step
 * has at least 128 output pixels (N h_out w_out: below, adding P_t dominates) and the
 * conv at least 32 rows k = (ci, ky, kx) (vgg-dvs's first layer, K = 18: 0.8x); DENSE:
 * never; FORCE: whenever dout is finite (tests, benchmarks). Measured with conv_bench:
 * 1.6-2.1x at 15 % on the larger vgg / sew shapes, 1.2-1.3x at 30 %, 0.6-0.96x at
 * 47 % (pooled spikes). No bit depends on the choice. */
#define REMAT_CONV_DW_SPARSE_DENSITY 0.30

/* One step's weight gradient of one group, sparse: s is the group's geometry (one group:
 * conv.c's conv_group), dout / inp the step's first sample at the group's first output /
 * input channel, samples out_e / in_e floats apart, N samples. When the input is sparse
 * enough (the threshold above) and dout all finite, adds P_t into dweight (s->c_out x K,
 * row-major: dweight(co, k) = dweight(co, k) + P_t(co, k), the dense path's add, with
 * P_t the dense GEMM's bits), using pw (s->c_out * K floats: P_t^T, where the step does
 * not fit one block) and scratch from remat_xmalloc (without it, the dense chains one by
 * one), and returns 1. Otherwise returns 0 and touches nothing: the caller runs the
 * dense GEMM. */
int remat_ref_conv2d_dw_sparse(float *dweight, float *pw, const float *dout, const float *inp, int64_t N,
                               const remat_conv_geom *s, int64_t in_e, int64_t out_e);

/* dweight(o, k) = dweight(o, k) + pt[k * c_out + o] for o < c_out, k < K: the add of a
 * weight-gradient product made transposed (P_t^T), element by element; threaded. */
void remat_ref_conv2d_dw_add_t(float *dweight, const float *pt, int64_t c_out, int64_t K);

#ifdef __cplusplus
}
#endif
#endif
