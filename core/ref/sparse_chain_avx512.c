/* sparse_chain_avx512.c - the zero-skipping chain (sparse_chain.h) on AVX-512F: tiles
 * of 128 columns held in 8 zmm accumulators for the whole list, one _mm512_fmadd_ps per
 * lane and listed term, in list order; the last tile's vectors masked. Compiled for
 * AVX512F by a function attribute, called only where remat_ref_simd_supported(AVX512).
 */
#include "core/ref/sparse_chain.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define T512 __attribute__((target("avx512f")))

/* Columns [0, 16 nv) of c (the last vector masked by last), through the whole list. */
static inline T512 __attribute__((always_inline)) void tile(float *c, const float *rows, int64_t ld,
                                                             const int32_t *idx, const float *val, int64_t n,
                                                             const int nv, __mmask16 last) {
    __m512 acc[8];
#pragma GCC unroll 8
    for (int v = 0; v < nv; v++) acc[v] = v < nv - 1 ? _mm512_loadu_ps(c + 16 * v) : _mm512_maskz_loadu_ps(last, c + 16 * v);
    for (int64_t e = 0; e < n; e++) {
        const float *r = rows + (int64_t)idx[e] * ld;
        const __m512 b = _mm512_set1_ps(val[e]);
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++) {
            const __m512 a = v < nv - 1 ? _mm512_loadu_ps(r + 16 * v) : _mm512_maskz_loadu_ps(last, r + 16 * v);
            acc[v] = _mm512_fmadd_ps(a, b, acc[v]);
        }
    }
#pragma GCC unroll 8
    for (int v = 0; v < nv; v++)
        if (v < nv - 1) _mm512_storeu_ps(c + 16 * v, acc[v]);
        else _mm512_mask_storeu_ps(c + 16 * v, last, acc[v]);
}

T512 void remat_sparse_chain_avx512(float *c, int64_t w, const float *rows, int64_t ld, const int32_t *idx,
                                    const float *val, int64_t n) {
    int64_t j = 0;
    for (; j + 128 <= w; j += 128) tile(c + j, rows + j, ld, idx, val, n, 8, 0xffff);
    const int64_t rem = w - j;
    if (rem <= 0) return;
    const __mmask16 last = rem % 16 ? (__mmask16)((1u << (rem % 16)) - 1) : (__mmask16)0xffff;
    switch ((rem + 15) / 16) {
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
