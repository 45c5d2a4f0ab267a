/* gemm_scalar.c - the portable micro-kernel: the fmaf() chain of gemm_kernel.h, one
 * element at a time, for CPUs without AVX2 + FMA (and as the reference the SIMD
 * kernels are tested against). fmaf is the correctly rounded fused multiply-add, the
 * operation the vector kernels' FMA instructions perform, so the bits are the same.
 */
#include <math.h>

#include "core/ref/gemm_kernel.h"

enum { MR = 6, NR = 16 };

static void tile_scalar(int64_t kc, const float *ap, const float *bp, float *c, int64_t ldc, int load) {
    float acc[MR][NR];
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NR; j++) acc[r][j] = load ? c[r * ldc + j] : 0.0f;
    for (int64_t k = 0; k < kc; k++)
        for (int r = 0; r < MR; r++)
            for (int j = 0; j < NR; j++) acc[r][j] = fmaf(ap[k * MR + r], bp[k * NR + j], acc[r][j]);
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NR; j++) c[r * ldc + j] = acc[r][j];
}

const remat_gemm_kernel remat_gemm_kernel_scalar = {"scalar", MR, NR, 256, 120, 3072, tile_scalar, 0};
