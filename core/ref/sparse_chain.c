/* sparse_chain.c - the zero-skipping chain's dispatch, its portable kernel (fmaf(), the
 * reference the SIMD kernels are tested against) and the operand checks (sparse_chain.h).
 */
#include "core/ref/sparse_chain.h"

#include "core/ref/gemm_kernel.h"

#include <math.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static void chain_scalar(float *c, int64_t w, const float *rows, int64_t ld, const int32_t *idx, const float *val,
                         int64_t n) {
    for (int64_t e = 0; e < n; e++) {
        const float *r = rows + (int64_t)idx[e] * ld, v = val[e];
        for (int64_t j = 0; j < w; j++) c[j] = fmaf(r[j], v, c[j]);
    }
}

remat_sparse_chain_fn remat_sparse_chain_for(remat_simd p) {
#if defined(__x86_64__) || defined(__i386__)
    if (p == REMAT_SIMD_AVX512) return remat_sparse_chain_avx512;
    if (p == REMAT_SIMD_AVX2) return remat_sparse_chain_avx2;
#endif
    (void)p;
    return chain_scalar;
}

void remat_sparse_chain(float *c, int64_t w, const float *rows, int64_t ld, const int32_t *idx, const float *val,
                        int64_t n) {
    remat_sparse_chain_for(remat_ref_simd_get())(c, w, rows, ld, idx, val, n);
}

static inline uint32_t float_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

int remat_floats_all_finite(const float *x, int64_t n, int64_t stride) {
    uint32_t bad = 0;
    if (stride == 1)
        for (int64_t i = 0; i < n; i++) bad |= (float_bits(x[i]) & 0x7f800000u) == 0x7f800000u;
    else
        for (int64_t i = 0; i < n; i++) bad |= (float_bits(x[i * stride]) & 0x7f800000u) == 0x7f800000u;
    return !bad;
}

int64_t remat_floats_nonzero(const float *x, int64_t n) {
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) m += (float_bits(x[i]) & 0x7fffffffu) != 0;
    return m;
}

int64_t remat_sparse_list(int32_t *idx, float *val, const float *x, int64_t n, int32_t base) {
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        idx[m] = base + (int32_t)i, val[m] = x[i];
        m += (float_bits(x[i]) & 0x7fffffffu) != 0;
    }
    return m;
}

/* Row by row, 16 columns at a time: a mask of the row's nonzero columns, then each set
 * bit appended to its column's list. */
static int64_t lists_portable(int32_t *idx, float *val, int32_t *cnt, const float *panel, int64_t ld, int64_t cols,
                              int64_t kc, int64_t ls) {
    for (int64_t r = 0; r < cols; r++) cnt[r] = 0;
    const unsigned keep = cols >= 16 ? 0xffffu : (1u << cols) - 1u;
    int64_t total = 0;
    for (int64_t k = 0; k < kc; k++) {
        const float *row = panel + k * ld;
        unsigned m = 0;
#if defined(__SSE2__)
        const __m128 z = _mm_setzero_ps();
        for (int64_t q = 0; q + 4 <= cols; q += 4)
            m |= (unsigned)_mm_movemask_ps(_mm_cmpneq_ps(_mm_loadu_ps(row + q), z)) << q;
        for (int64_t q = cols & ~(int64_t)3; q < cols; q++) m |= (unsigned)((float_bits(row[q]) & 0x7fffffffu) != 0) << q;
#else
        for (int64_t q = 0; q < cols; q++) m |= (unsigned)((float_bits(row[q]) & 0x7fffffffu) != 0) << q;
#endif
        m &= keep;
        total += __builtin_popcount(m);
        for (; m; m &= m - 1) {
            const int r = __builtin_ctz(m);
            idx[r * ls + cnt[r]] = (int32_t)k, val[r * ls + cnt[r]] = row[r];
            cnt[r]++;
        }
    }
    return total;
}

remat_sparse_lists_fn remat_sparse_lists_for(remat_simd p) {
#if defined(__x86_64__) || defined(__i386__)
    if (p == REMAT_SIMD_AVX512) return remat_sparse_lists_avx512;
#endif
    (void)p;
    return lists_portable;
}

static void transpose_portable(float *dst, int64_t ld, const float *src, int64_t rs, int64_t rows, int64_t cols) {
    remat_gemm_pack_strided(dst, ld, rows, src, 0, rs, 1, rows, cols);
}

/* Through a transposed copy of up to 64 columns at a time (on the stack). */
static void add_t_portable(float *dst, int64_t ld, const float *src, int64_t rs, int64_t rows, int64_t cols) {
    float tmp[64 * 64];
    for (int64_t r0 = 0; r0 < rows; r0 += 64) {
        const int64_t rn = rows - r0 < 64 ? rows - r0 : 64;
        for (int64_t k0 = 0; k0 < cols; k0 += 64) {
            const int64_t kn = cols - k0 < 64 ? cols - k0 : 64;
            remat_gemm_pack_strided(tmp, kn, kn, src + k0 * rs + r0, 0, rs, 1, kn, rn); /* tmp[r * kn + k] */
            for (int64_t r = 0; r < rn; r++) {
                float *d = dst + (r0 + r) * ld + k0;
                for (int64_t k = 0; k < kn; k++) d[k] = d[k] + tmp[r * kn + k];
            }
        }
    }
}

remat_sparse_move_fn remat_sparse_transpose_for(remat_simd p) {
#if defined(__x86_64__) || defined(__i386__)
    if (p == REMAT_SIMD_AVX512) return remat_sparse_transpose_avx512;
    if (p == REMAT_SIMD_AVX2) return remat_sparse_transpose_avx2;
#endif
    (void)p;
    return transpose_portable;
}

remat_sparse_move_fn remat_sparse_add_t_for(remat_simd p) {
#if defined(__x86_64__) || defined(__i386__)
    if (p == REMAT_SIMD_AVX512) return remat_sparse_add_t_avx512;
#endif
    (void)p;
    return add_t_portable;
}
