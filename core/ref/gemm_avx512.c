/* gemm_avx512.c - the AVX-512 (AVX512F) micro-kernel: 12 x 32 tiles (two 16-float
 * vectors per row, 24 accumulators of the 32 zmm registers), one _mm512_fmadd_ps per
 * element and k, k ascending: the chain of gemm_kernel.h, so the bits are those of the
 * AVX2 and scalar kernels; only the tile and the blocking differ. Compiled for AVX512F by
 * a function attribute (the build stays baseline x86-64); called only where
 * remat_ref_simd_supported(AVX512).
 * Blocking (Skylake-SP .. Sapphire Rapids: L1D 32-48 KiB, L2 1-2 MiB): the B micro-panel
 * (KC x 32 floats, 24 KiB at KC = 192) stays in L1 while the 12-row A panels stream from
 * the packed A block (MC x KC, 180 KiB) in L2; the packed B block (KC x NC, 2.3 MiB) in L3.
 *
 * REMAT_GEMM_AVX512_SIMDE (tests only, //core:gemm_avx512_emulated): the same source
 * on SIMDe's portable AVX-512 intrinsics, built with AVX2 + FMA so that every emulated
 * _mm512_fmadd_ps is two native _mm256_fmadd_ps (still one fused operation per element);
 * it lets a machine without AVX-512 test this kernel's indexing and order bit for bit.
 */
#include "core/ref/gemm_kernel.h"

#if defined(REMAT_GEMM_AVX512_SIMDE)
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512/fmadd.h>
#include <simde/x86/avx512/loadu.h>
#include <simde/x86/avx512/set1.h>
#include <simde/x86/avx512/setzero.h>
#include <simde/x86/avx512/storeu.h>
#include <simde/x86/sse.h>
#define TILE_TARGET
#define KERNEL_VAR remat_gemm_kernel_avx512_emulated
#elif defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TILE_TARGET __attribute__((target("avx512f")))
#define KERNEL_VAR remat_gemm_kernel_avx512
#endif

enum { MR = 12, NR = 32 };

#ifdef KERNEL_VAR
#define KSTEP(kk)                                               \
    do {                                                        \
        const __m512 b0 = _mm512_loadu_ps(bp + (kk) * NR);      \
        const __m512 b1 = _mm512_loadu_ps(bp + (kk) * NR + 16); \
        __m512 a;                                               \
        a = _mm512_set1_ps(ap[(kk) * MR + 0]);                  \
        c00 = _mm512_fmadd_ps(a, b0, c00);                      \
        c01 = _mm512_fmadd_ps(a, b1, c01);                      \
        a = _mm512_set1_ps(ap[(kk) * MR + 1]);                  \
        c10 = _mm512_fmadd_ps(a, b0, c10);                      \
        c11 = _mm512_fmadd_ps(a, b1, c11);                      \
        a = _mm512_set1_ps(ap[(kk) * MR + 2]);                  \
        c20 = _mm512_fmadd_ps(a, b0, c20);                      \
        c21 = _mm512_fmadd_ps(a, b1, c21);                      \
        a = _mm512_set1_ps(ap[(kk) * MR + 3]);                  \
        c30 = _mm512_fmadd_ps(a, b0, c30);                      \
        c31 = _mm512_fmadd_ps(a, b1, c31);                      \
        a = _mm512_set1_ps(ap[(kk) * MR + 4]);                  \
        c40 = _mm512_fmadd_ps(a, b0, c40);                      \
        c41 = _mm512_fmadd_ps(a, b1, c41);                      \
        a = _mm512_set1_ps(ap[(kk) * MR + 5]);                  \
        c50 = _mm512_fmadd_ps(a, b0, c50);                      \
        c51 = _mm512_fmadd_ps(a, b1, c51);                      \
        a = _mm512_set1_ps(ap[(kk) * MR + 6]);                  \
        c60 = _mm512_fmadd_ps(a, b0, c60);                      \
        c61 = _mm512_fmadd_ps(a, b1, c61);                      \
        a = _mm512_set1_ps(ap[(kk) * MR + 7]);                  \
        c70 = _mm512_fmadd_ps(a, b0, c70);                      \
        c71 = _mm512_fmadd_ps(a, b1, c71);                      \
        a = _mm512_set1_ps(ap[(kk) * MR + 8]);                  \
        c80 = _mm512_fmadd_ps(a, b0, c80);                      \
        c81 = _mm512_fmadd_ps(a, b1, c81);                      \
        a = _mm512_set1_ps(ap[(kk) * MR + 9]);                  \
        c90 = _mm512_fmadd_ps(a, b0, c90);                      \
        c91 = _mm512_fmadd_ps(a, b1, c91);                      \
        a = _mm512_set1_ps(ap[(kk) * MR + 10]);                 \
        c100 = _mm512_fmadd_ps(a, b0, c100);                    \
        c101 = _mm512_fmadd_ps(a, b1, c101);                    \
        a = _mm512_set1_ps(ap[(kk) * MR + 11]);                 \
        c110 = _mm512_fmadd_ps(a, b0, c110);                    \
        c111 = _mm512_fmadd_ps(a, b1, c111);                    \
    } while (0)

TILE_TARGET static void tile_avx512(int64_t kc, const float *restrict ap, const float *restrict bp,
                                    float *restrict c, int64_t ldc, int load) {
    __m512 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71, c80, c81, c90, c91, c100, c101, c110, c111;
    if (load) {
        c00 = _mm512_loadu_ps(c + 0 * ldc), c01 = _mm512_loadu_ps(c + 0 * ldc + 16);
        c10 = _mm512_loadu_ps(c + 1 * ldc), c11 = _mm512_loadu_ps(c + 1 * ldc + 16);
        c20 = _mm512_loadu_ps(c + 2 * ldc), c21 = _mm512_loadu_ps(c + 2 * ldc + 16);
        c30 = _mm512_loadu_ps(c + 3 * ldc), c31 = _mm512_loadu_ps(c + 3 * ldc + 16);
        c40 = _mm512_loadu_ps(c + 4 * ldc), c41 = _mm512_loadu_ps(c + 4 * ldc + 16);
        c50 = _mm512_loadu_ps(c + 5 * ldc), c51 = _mm512_loadu_ps(c + 5 * ldc + 16);
        c60 = _mm512_loadu_ps(c + 6 * ldc), c61 = _mm512_loadu_ps(c + 6 * ldc + 16);
        c70 = _mm512_loadu_ps(c + 7 * ldc), c71 = _mm512_loadu_ps(c + 7 * ldc + 16);
        c80 = _mm512_loadu_ps(c + 8 * ldc), c81 = _mm512_loadu_ps(c + 8 * ldc + 16);
        c90 = _mm512_loadu_ps(c + 9 * ldc), c91 = _mm512_loadu_ps(c + 9 * ldc + 16);
        c100 = _mm512_loadu_ps(c + 10 * ldc), c101 = _mm512_loadu_ps(c + 10 * ldc + 16);
        c110 = _mm512_loadu_ps(c + 11 * ldc), c111 = _mm512_loadu_ps(c + 11 * ldc + 16);
    } else {
        c00 = _mm512_setzero_ps();
        c01 = c00;
        c10 = c11 = c00;
        c20 = c21 = c00;
        c30 = c31 = c00;
        c40 = c41 = c00;
        c50 = c51 = c00;
        c60 = c61 = c00;
        c70 = c71 = c00;
        c80 = c81 = c00;
        c90 = c91 = c00;
        c100 = c101 = c00;
        c110 = c111 = c00;
    }
    for (int64_t k = 0; k < kc; k++) {
        /* A k step reads 48 bytes of A: ask for the line 16 steps ahead. Not unrolled:
         * unrolled by 4, GCC rotates accumulators through 6 register moves and a spill
         * per 96 FMAs (the moves compete for the FMA ports); as is, the loop is 24 FMAs,
         * 12 broadcasts, 2 loads and the loop counter. */
        _mm_prefetch((const char *)(ap + 16 * MR), _MM_HINT_T0);
        KSTEP(0);
        ap += MR;
        bp += NR;
    }
    _mm512_storeu_ps(c + 0 * ldc, c00), _mm512_storeu_ps(c + 0 * ldc + 16, c01);
    _mm512_storeu_ps(c + 1 * ldc, c10), _mm512_storeu_ps(c + 1 * ldc + 16, c11);
    _mm512_storeu_ps(c + 2 * ldc, c20), _mm512_storeu_ps(c + 2 * ldc + 16, c21);
    _mm512_storeu_ps(c + 3 * ldc, c30), _mm512_storeu_ps(c + 3 * ldc + 16, c31);
    _mm512_storeu_ps(c + 4 * ldc, c40), _mm512_storeu_ps(c + 4 * ldc + 16, c41);
    _mm512_storeu_ps(c + 5 * ldc, c50), _mm512_storeu_ps(c + 5 * ldc + 16, c51);
    _mm512_storeu_ps(c + 6 * ldc, c60), _mm512_storeu_ps(c + 6 * ldc + 16, c61);
    _mm512_storeu_ps(c + 7 * ldc, c70), _mm512_storeu_ps(c + 7 * ldc + 16, c71);
    _mm512_storeu_ps(c + 8 * ldc, c80), _mm512_storeu_ps(c + 8 * ldc + 16, c81);
    _mm512_storeu_ps(c + 9 * ldc, c90), _mm512_storeu_ps(c + 9 * ldc + 16, c91);
    _mm512_storeu_ps(c + 10 * ldc, c100), _mm512_storeu_ps(c + 10 * ldc + 16, c101);
    _mm512_storeu_ps(c + 11 * ldc, c110), _mm512_storeu_ps(c + 11 * ldc + 16, c111);
}
#undef KSTEP

/* The left NR/2 columns of a tile, from the same packed panels (B rows are still NR
 * floats apart): for edge tiles with at most NR/2 valid columns (N = 10, 36, ...),
 * half the work of the full tile. The same chain per element. */
TILE_TARGET static void tile_avx512_half(int64_t kc, const float *restrict ap, const float *restrict bp,
                  float *restrict c, int64_t ldc, int load) {
    __m512 c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11;
    if (load) {
        c0 = _mm512_loadu_ps(c + 0 * ldc);
        c1 = _mm512_loadu_ps(c + 1 * ldc);
        c2 = _mm512_loadu_ps(c + 2 * ldc);
        c3 = _mm512_loadu_ps(c + 3 * ldc);
        c4 = _mm512_loadu_ps(c + 4 * ldc);
        c5 = _mm512_loadu_ps(c + 5 * ldc);
        c6 = _mm512_loadu_ps(c + 6 * ldc);
        c7 = _mm512_loadu_ps(c + 7 * ldc);
        c8 = _mm512_loadu_ps(c + 8 * ldc);
        c9 = _mm512_loadu_ps(c + 9 * ldc);
        c10 = _mm512_loadu_ps(c + 10 * ldc);
        c11 = _mm512_loadu_ps(c + 11 * ldc);
    } else {
        c0 = _mm512_setzero_ps();
        c1 = c2 = c3 = c4 = c5 = c6 = c7 = c8 = c9 = c10 = c11 = c0;
    }
    for (int64_t k = 0; k < kc; k++) {
        _mm_prefetch((const char *)(ap + 16 * MR), _MM_HINT_T0);
        const __m512 b0 = _mm512_loadu_ps(bp);
        c0 = _mm512_fmadd_ps(_mm512_set1_ps(ap[0]), b0, c0);
        c1 = _mm512_fmadd_ps(_mm512_set1_ps(ap[1]), b0, c1);
        c2 = _mm512_fmadd_ps(_mm512_set1_ps(ap[2]), b0, c2);
        c3 = _mm512_fmadd_ps(_mm512_set1_ps(ap[3]), b0, c3);
        c4 = _mm512_fmadd_ps(_mm512_set1_ps(ap[4]), b0, c4);
        c5 = _mm512_fmadd_ps(_mm512_set1_ps(ap[5]), b0, c5);
        c6 = _mm512_fmadd_ps(_mm512_set1_ps(ap[6]), b0, c6);
        c7 = _mm512_fmadd_ps(_mm512_set1_ps(ap[7]), b0, c7);
        c8 = _mm512_fmadd_ps(_mm512_set1_ps(ap[8]), b0, c8);
        c9 = _mm512_fmadd_ps(_mm512_set1_ps(ap[9]), b0, c9);
        c10 = _mm512_fmadd_ps(_mm512_set1_ps(ap[10]), b0, c10);
        c11 = _mm512_fmadd_ps(_mm512_set1_ps(ap[11]), b0, c11);
        ap += MR;
        bp += NR;
    }
    _mm512_storeu_ps(c + 0 * ldc, c0);
    _mm512_storeu_ps(c + 1 * ldc, c1);
    _mm512_storeu_ps(c + 2 * ldc, c2);
    _mm512_storeu_ps(c + 3 * ldc, c3);
    _mm512_storeu_ps(c + 4 * ldc, c4);
    _mm512_storeu_ps(c + 5 * ldc, c5);
    _mm512_storeu_ps(c + 6 * ldc, c6);
    _mm512_storeu_ps(c + 7 * ldc, c7);
    _mm512_storeu_ps(c + 8 * ldc, c8);
    _mm512_storeu_ps(c + 9 * ldc, c9);
    _mm512_storeu_ps(c + 10 * ldc, c10);
    _mm512_storeu_ps(c + 11 * ldc, c11);
}

const remat_gemm_kernel KERNEL_VAR = {"avx512", MR, NR, 192, 240, 3072, tile_avx512, tile_avx512_half};
#else
/* Not x86: NULL tiles; remat_ref_simd_supported() never picks this path. */
const remat_gemm_kernel remat_gemm_kernel_avx512 = {"avx512", MR, NR, 192, 240, 3072, 0, 0};
#endif
