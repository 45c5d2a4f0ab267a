/* sparse_chain_avx512.c - the zero-skipping chain (sparse_chain.h) on AVX-512F: tiles
 * of 128 columns held in 8 zmm accumulators for the whole list, one _mm512_fmadd_ps per
 * lane and listed term, in list order; the last tile's vectors masked. And the panel's
 * nonzero lists: 16 x 16 blocks transposed in registers, each column compressed. Compiled for
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

/* t[c] lane r <- t[r] lane c, r, c < 16 (unpack, shuffle within 128-bit lanes, then
 * two rounds of 128-bit lane shuffles). */
static inline T512 __attribute__((always_inline)) void transpose16(__m512 t[16]) {
    __m512 a[16], b[16];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        a[2 * i] = _mm512_unpacklo_ps(t[2 * i], t[2 * i + 1]), a[2 * i + 1] = _mm512_unpackhi_ps(t[2 * i], t[2 * i + 1]);
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) { /* b[4i + j], 128-bit lane L: rows 4i .. 4i + 3 of column 4L + j */
        b[4 * i + 0] = _mm512_shuffle_ps(a[4 * i], a[4 * i + 2], 0x44);
        b[4 * i + 1] = _mm512_shuffle_ps(a[4 * i], a[4 * i + 2], 0xee);
        b[4 * i + 2] = _mm512_shuffle_ps(a[4 * i + 1], a[4 * i + 3], 0x44);
        b[4 * i + 3] = _mm512_shuffle_ps(a[4 * i + 1], a[4 * i + 3], 0xee);
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        const __m512 x0 = _mm512_shuffle_f32x4(b[j], b[4 + j], 0x88), x1 = _mm512_shuffle_f32x4(b[j], b[4 + j], 0xdd);
        const __m512 y0 = _mm512_shuffle_f32x4(b[8 + j], b[12 + j], 0x88);
        const __m512 y1 = _mm512_shuffle_f32x4(b[8 + j], b[12 + j], 0xdd);
        t[j] = _mm512_shuffle_f32x4(x0, y0, 0x88), t[8 + j] = _mm512_shuffle_f32x4(x0, y0, 0xdd);
        t[4 + j] = _mm512_shuffle_f32x4(x1, y1, 0x88), t[12 + j] = _mm512_shuffle_f32x4(x1, y1, 0xdd);
    }
}

__attribute__((target("avx512f,popcnt"))) int64_t remat_sparse_lists_avx512(int32_t *idx, float *val, int32_t *cnt, const float *panel, int64_t ld,
                                       int64_t cols, int64_t kc, int64_t ls) {
    const __mmask16 cm = cols >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << cols) - 1u);
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    int32_t n[16] = {0};
    for (int64_t kb = 0; kb < kc; kb += 16) {
        const int64_t kn = kc - kb < 16 ? kc - kb : 16;
        __m512 t[16];
#pragma GCC unroll 16
        for (int k = 0; k < 16; k++)
            t[k] = k < kn ? _mm512_maskz_loadu_ps(cm, panel + (kb + k) * ld) : _mm512_setzero_ps();
        transpose16(t); /* t[r]: column r's values of rows kb .. kb + 15 (+0 past kc) */
        const __m512i ks = _mm512_add_epi32(_mm512_set1_epi32((int32_t)kb), iota);
#pragma GCC unroll 16
        for (int r = 0; r < 16; r++) {
            if (r >= cols) break;
            /* not +-0: unordered (NaN) or unequal to 0 */
            const __mmask16 m = _mm512_cmp_ps_mask(t[r], _mm512_setzero_ps(), _CMP_NEQ_UQ);
            _mm512_storeu_ps(val + r * ls + n[r], _mm512_maskz_compress_ps(m, t[r]));
            _mm512_storeu_si512((void *)(idx + r * ls + n[r]), _mm512_maskz_compress_epi32(m, ks));
            n[r] += __builtin_popcount((unsigned)m);
        }
    }
    int64_t total = 0;
    for (int64_t r = 0; r < cols; r++) cnt[r] = n[r], total += n[r];
    return total;
}

/* t[i] = the first 16 floats of src row i (rs apart) masked by m for i < n, else +0. */
static inline T512 __attribute__((always_inline)) void rows_in(__m512 t[16], const float *src, int64_t rs, int64_t n,
                                                               __mmask16 m) {
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++) t[i] = i < n ? _mm512_maskz_loadu_ps(m, src + i * rs) : _mm512_setzero_ps();
}

static inline __mmask16 lanes(int64_t n) { return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u); }

T512 void remat_sparse_transpose_avx512(float *dst, int64_t ld, const float *src, int64_t rs, int64_t rows,
                                        int64_t cols) {
    for (int64_t r0 = 0; r0 < rows; r0 += 16) {
        const int64_t rn = rows - r0 < 16 ? rows - r0 : 16;
        for (int64_t k0 = 0; k0 < cols; k0 += 16) {
            const int64_t kn = cols - k0 < 16 ? cols - k0 : 16;
            __m512 t[16];
            rows_in(t, src + r0 * rs + k0, rs, rn, lanes(kn));
            transpose16(t);
#pragma GCC unroll 16
            for (int k = 0; k < 16; k++)
                if (k < kn) _mm512_mask_storeu_ps(dst + (k0 + k) * ld + r0, lanes(rn), t[k]);
        }
    }
}

T512 void remat_sparse_add_t_avx512(float *dst, int64_t ld, const float *src, int64_t rs, int64_t rows,
                                    int64_t cols) {
    for (int64_t r0 = 0; r0 < rows; r0 += 16) {
        const int64_t rn = rows - r0 < 16 ? rows - r0 : 16;
        for (int64_t k0 = 0; k0 < cols; k0 += 16) {
            const int64_t kn = cols - k0 < 16 ? cols - k0 : 16;
            const __mmask16 km = lanes(kn);
            __m512 t[16];
            rows_in(t, src + k0 * rs + r0, rs, kn, lanes(rn)); /* t[k] lane r: src[(k0 + k) * rs + r0 + r] */
            transpose16(t);
#pragma GCC unroll 16
            for (int r = 0; r < 16; r++)
                if (r < rn) { /* dst's value first, as the scalar add (the NaN it keeps) */
                    float *d = dst + (r0 + r) * ld + k0;
                    _mm512_mask_storeu_ps(d, km, _mm512_add_ps(_mm512_maskz_loadu_ps(km, d), t[r]));
                }
        }
    }
}
#endif
