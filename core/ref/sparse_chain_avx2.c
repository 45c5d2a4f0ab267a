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

/* dst[k * ld + r] = src[r * rs + k] for r < rows, k < cols: 8 x 8 blocks transposed in
 * registers, 16 rows at a time so that each store fills a 64-byte line of dst. */
static inline T256 __attribute__((always_inline)) void tr8(float *dst, int64_t ld, const float *src, int64_t rs) {
    __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + rs), r2 = _mm256_loadu_ps(src + 2 * rs);
    __m256 r3 = _mm256_loadu_ps(src + 3 * rs), r4 = _mm256_loadu_ps(src + 4 * rs), r5 = _mm256_loadu_ps(src + 5 * rs);
    __m256 r6 = _mm256_loadu_ps(src + 6 * rs), r7 = _mm256_loadu_ps(src + 7 * rs);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3);
    __m256 t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    r0 = _mm256_shuffle_ps(t0, t2, 0x44), r1 = _mm256_shuffle_ps(t0, t2, 0xee);
    r2 = _mm256_shuffle_ps(t1, t3, 0x44), r3 = _mm256_shuffle_ps(t1, t3, 0xee);
    r4 = _mm256_shuffle_ps(t4, t6, 0x44), r5 = _mm256_shuffle_ps(t4, t6, 0xee);
    r6 = _mm256_shuffle_ps(t5, t7, 0x44), r7 = _mm256_shuffle_ps(t5, t7, 0xee);
    _mm256_storeu_ps(dst + 0 * ld, _mm256_permute2f128_ps(r0, r4, 0x20));
    _mm256_storeu_ps(dst + 1 * ld, _mm256_permute2f128_ps(r1, r5, 0x20));
    _mm256_storeu_ps(dst + 2 * ld, _mm256_permute2f128_ps(r2, r6, 0x20));
    _mm256_storeu_ps(dst + 3 * ld, _mm256_permute2f128_ps(r3, r7, 0x20));
    _mm256_storeu_ps(dst + 4 * ld, _mm256_permute2f128_ps(r0, r4, 0x31));
    _mm256_storeu_ps(dst + 5 * ld, _mm256_permute2f128_ps(r1, r5, 0x31));
    _mm256_storeu_ps(dst + 6 * ld, _mm256_permute2f128_ps(r2, r6, 0x31));
    _mm256_storeu_ps(dst + 7 * ld, _mm256_permute2f128_ps(r3, r7, 0x31));
}

T256 void remat_sparse_transpose_avx2(float *dst, int64_t ld, const float *src, int64_t rs, int64_t rows,
                                      int64_t cols) {
    int64_t r = 0;
    for (; r + 16 <= rows; r += 16) {
        int64_t k = 0;
        for (; k + 8 <= cols; k += 8) {
            tr8(dst + k * ld + r, ld, src + r * rs + k, rs);
            tr8(dst + k * ld + r + 8, ld, src + (r + 8) * rs + k, rs);
        }
        for (; k < cols; k++)
            for (int64_t i = r; i < r + 16; i++) dst[k * ld + i] = src[i * rs + k];
    }
    for (; r < rows; r++)
        for (int64_t k = 0; k < cols; k++) dst[k * ld + r] = src[r * rs + k];
}
#endif
