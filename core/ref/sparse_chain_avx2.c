/* sparse_chain_avx2.c - the zero-skipping chain (sparse_chain.h) on AVX2 + FMA: tiles
 * of 64 columns held in 8 ymm accumulators for the whole list, one _mm256_fmadd_ps per
 * lane and listed term, in list order; the last tile's vectors masked. Compiled for
 * AVX2/FMA by a function attribute, called only where remat_ref_simd_supported(AVX2).
 */
#include "core/ref/sparse_chain.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define T256 __attribute__((target("avx2,fma")))

/* Columns [0, 8 nv) of c (the last vector masked by last), through the whole list. */
static inline T256 __attribute__((always_inline)) void tile(float *c, const float *rows, int64_t ld,
                                                             const int32_t *idx, const float *val, int64_t n,
                                                             const int nv, __m256i last) {
    __m256 acc[8];
#pragma GCC unroll 8
    for (int v = 0; v < nv; v++) acc[v] = v < nv - 1 ? _mm256_loadu_ps(c + 8 * v) : _mm256_maskload_ps(c + 8 * v, last);
    for (int64_t e = 0; e < n; e++) {
        const float *r = rows + (int64_t)idx[e] * ld;
        const __m256 b = _mm256_broadcast_ss(val + e);
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++) {
            const __m256 a = v < nv - 1 ? _mm256_loadu_ps(r + 8 * v) : _mm256_maskload_ps(r + 8 * v, last);
            acc[v] = _mm256_fmadd_ps(a, b, acc[v]);
        }
    }
#pragma GCC unroll 8
    for (int v = 0; v < nv; v++)
        if (v < nv - 1) _mm256_storeu_ps(c + 8 * v, acc[v]);
        else _mm256_maskstore_ps(c + 8 * v, last, acc[v]);
}

T256 void remat_sparse_chain_avx2(float *c, int64_t w, const float *rows, int64_t ld, const int32_t *idx,
                                  const float *val, int64_t n) {
    int64_t j = 0;
    for (; j + 64 <= w; j += 64) tile(c + j, rows + j, ld, idx, val, n, 8, _mm256_set1_epi32(-1));
    const int64_t rem = w - j;
    if (rem <= 0) return;
    const int r8 = rem % 8 ? (int)(rem % 8) : 8;
    const __m256i last = _mm256_cmpgt_epi32(_mm256_set1_epi32(r8), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    switch ((rem + 7) / 8) {
    case 1: tile(c + j, rows + j, ld, idx, val, n, 1, last); break;
    case 2: tile(c + j, rows + j, ld, idx, val, n, 2, last); break;
    case 3: tile(c + j, rows + j, ld, idx, val, n, 3, last); break;
    case 4: tile(c + j, rows + j, ld, idx, val, n, 4, last); break;
    case 5: tile(c + j, rows + j, ld, idx, val, n, 5, last); break;
    case 6: tile(c + j, rows + j, ld, idx, val, n, 6, last); break;
    case 7: tile(c + j, rows + j, ld, idx, val, n, 7, last); break;
    default: tile(c + j, rows + j, ld, idx, val, n, 8, last); break;
    }
}
#endif
