/* gemm_avx2.c - the AVX2 + FMA micro-kernel: 6 x 16 tiles (two 8-float vectors per
 * row, 12 accumulators), one _mm256_fmadd_ps per element and k, k ascending: the chain
 * of gemm_kernel.h. Compiled for AVX2/FMA by a function attribute, so the rest of the
 * build stays baseline x86-64; called only where remat_ref_simd_supported(AVX2).
 * Blocking: the B micro-panel (KC x 16 floats, 16 KiB) stays in L1, the packed A block
 * (MC x KC, 120 KiB) in L2, the packed B block (KC x NC, 3 MiB) in L3.
 */
#include "core/ref/gemm_kernel.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

enum { MR = 6, NR = 16 };

#define KSTEP(kk)                                                          \
    do {                                                                   \
        const __m256 b0 = _mm256_loadu_ps(bp + (kk) * NR);                 \
        const __m256 b1 = _mm256_loadu_ps(bp + (kk) * NR + 8);             \
        __m256 a = _mm256_broadcast_ss(ap + (kk) * MR + 0);                \
        c00 = _mm256_fmadd_ps(a, b0, c00);                                 \
        c01 = _mm256_fmadd_ps(a, b1, c01);                                 \
        a = _mm256_broadcast_ss(ap + (kk) * MR + 1);                       \
        c10 = _mm256_fmadd_ps(a, b0, c10);                                 \
        c11 = _mm256_fmadd_ps(a, b1, c11);                                 \
        a = _mm256_broadcast_ss(ap + (kk) * MR + 2);                       \
        c20 = _mm256_fmadd_ps(a, b0, c20);                                 \
        c21 = _mm256_fmadd_ps(a, b1, c21);                                 \
        a = _mm256_broadcast_ss(ap + (kk) * MR + 3);                       \
        c30 = _mm256_fmadd_ps(a, b0, c30);                                 \
        c31 = _mm256_fmadd_ps(a, b1, c31);                                 \
        a = _mm256_broadcast_ss(ap + (kk) * MR + 4);                       \
        c40 = _mm256_fmadd_ps(a, b0, c40);                                 \
        c41 = _mm256_fmadd_ps(a, b1, c41);                                 \
        a = _mm256_broadcast_ss(ap + (kk) * MR + 5);                       \
        c50 = _mm256_fmadd_ps(a, b0, c50);                                 \
        c51 = _mm256_fmadd_ps(a, b1, c51);                                 \
    } while (0)

__attribute__((target("avx2,fma"))) static void tile_avx2(int64_t kc, const float *restrict ap,
                                                          const float *restrict bp, float *restrict c, int64_t ldc,
                                                          int load) {
    __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
    if (load) {
        c00 = _mm256_loadu_ps(c + 0 * ldc), c01 = _mm256_loadu_ps(c + 0 * ldc + 8);
        c10 = _mm256_loadu_ps(c + 1 * ldc), c11 = _mm256_loadu_ps(c + 1 * ldc + 8);
        c20 = _mm256_loadu_ps(c + 2 * ldc), c21 = _mm256_loadu_ps(c + 2 * ldc + 8);
        c30 = _mm256_loadu_ps(c + 3 * ldc), c31 = _mm256_loadu_ps(c + 3 * ldc + 8);
        c40 = _mm256_loadu_ps(c + 4 * ldc), c41 = _mm256_loadu_ps(c + 4 * ldc + 8);
        c50 = _mm256_loadu_ps(c + 5 * ldc), c51 = _mm256_loadu_ps(c + 5 * ldc + 8);
    } else {
        c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
    }
    for (int64_t k = 0; k < kc; k++) {
        /* A k step reads 24 bytes of A: ask for the line 32 steps ahead. The loop is not
         * unrolled: unrolled, GCC rotates accumulators through extra moves and spills
         * (measured 7 % slower on 8192 x 512 x 512). */
        _mm_prefetch((const char *)(ap + 32 * MR), _MM_HINT_T0);
        KSTEP(0);
        ap += MR;
        bp += NR;
    }
    _mm256_storeu_ps(c + 0 * ldc, c00), _mm256_storeu_ps(c + 0 * ldc + 8, c01);
    _mm256_storeu_ps(c + 1 * ldc, c10), _mm256_storeu_ps(c + 1 * ldc + 8, c11);
    _mm256_storeu_ps(c + 2 * ldc, c20), _mm256_storeu_ps(c + 2 * ldc + 8, c21);
    _mm256_storeu_ps(c + 3 * ldc, c30), _mm256_storeu_ps(c + 3 * ldc + 8, c31);
    _mm256_storeu_ps(c + 4 * ldc, c40), _mm256_storeu_ps(c + 4 * ldc + 8, c41);
    _mm256_storeu_ps(c + 5 * ldc, c50), _mm256_storeu_ps(c + 5 * ldc + 8, c51);
}
#undef KSTEP

/* The left NR/2 columns of a tile, from the same packed panels (B rows are still NR
 * floats apart): for edge tiles with at most NR/2 valid columns (N = 10, 36, ...),
 * half the work of the full tile. The same chain per element. */
__attribute__((target("avx2,fma"))) static void tile_avx2_half(int64_t kc, const float *restrict ap, const float *restrict bp,
                  float *restrict c, int64_t ldc, int load) {
    __m256 c0, c1, c2, c3, c4, c5;
    if (load) {
        c0 = _mm256_loadu_ps(c + 0 * ldc);
        c1 = _mm256_loadu_ps(c + 1 * ldc);
        c2 = _mm256_loadu_ps(c + 2 * ldc);
        c3 = _mm256_loadu_ps(c + 3 * ldc);
        c4 = _mm256_loadu_ps(c + 4 * ldc);
        c5 = _mm256_loadu_ps(c + 5 * ldc);
    } else {
        c0 = _mm256_setzero_ps();
        c1 = c2 = c3 = c4 = c5 = c0;
    }
    for (int64_t k = 0; k < kc; k++) {
        _mm_prefetch((const char *)(ap + 32 * MR), _MM_HINT_T0);
        const __m256 b0 = _mm256_loadu_ps(bp);
        c0 = _mm256_fmadd_ps(_mm256_set1_ps(ap[0]), b0, c0);
        c1 = _mm256_fmadd_ps(_mm256_set1_ps(ap[1]), b0, c1);
        c2 = _mm256_fmadd_ps(_mm256_set1_ps(ap[2]), b0, c2);
        c3 = _mm256_fmadd_ps(_mm256_set1_ps(ap[3]), b0, c3);
        c4 = _mm256_fmadd_ps(_mm256_set1_ps(ap[4]), b0, c4);
        c5 = _mm256_fmadd_ps(_mm256_set1_ps(ap[5]), b0, c5);
        ap += MR;
        bp += NR;
    }
    _mm256_storeu_ps(c + 0 * ldc, c0);
    _mm256_storeu_ps(c + 1 * ldc, c1);
    _mm256_storeu_ps(c + 2 * ldc, c2);
    _mm256_storeu_ps(c + 3 * ldc, c3);
    _mm256_storeu_ps(c + 4 * ldc, c4);
    _mm256_storeu_ps(c + 5 * ldc, c5);
}

const remat_gemm_kernel remat_gemm_kernel_avx2 = {"avx2", MR, NR, 256, 120, 3072, tile_avx2, tile_avx2_half};
#else
/* Not x86: NULL tiles; remat_ref_simd_supported() never picks this path. */
const remat_gemm_kernel remat_gemm_kernel_avx2 = {"avx2", 6, 16, 256, 120, 3072, 0, 0};
#endif
