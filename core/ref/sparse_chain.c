/* sparse_chain.c - the zero-skipping chain's dispatch, its portable kernel (fmaf(), the
 * reference the SIMD kernels are tested against) and the operand checks (sparse_chain.h).
 */
#include "core/ref/sparse_chain.h"

#include <math.h>
#include <string.h>

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
