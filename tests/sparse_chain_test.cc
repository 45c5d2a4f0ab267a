// sparse_chain_test.cc - the zero-skipping chain (core/ref/sparse_chain.h) on every SIMD
// path the CPU supports gives, bit for bit, the fmaf() chain its contract defines, on
// widths around every tile edge (16/64/128 columns), row strides wider than the width,
// repeated and empty lists, and adversarial values (signed zeros, subnormals, products
// that underflow, inf and NaN); the panel's nonzero lists (sparse_gemm.c's) on every path
// against a direct reference (widths 1..16, K blocks across the 16-row edges, all-zero and
// single-nonzero columns, -0, NaN, inf, subnormals); the transpose and the transposed add
// on every path against loops (sizes around the 16-block edges, NaN payloads kept); and
// the operand checks (finite, nonzero count, list).
// Paths the CPU lacks are reported as skipped, not passed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/base/rng.h"
#include "core/ref/simd.h"
#include "core/ref/sparse_chain.h"

namespace {

float Adversarial(uint64_t key, uint64_t i) {
    const double u = remat_rng_uniform(26, 1, key, i);
    const float x = 2.0f * (float)remat_rng_uniform(26, 2, key, i) - 1.0f;
    if (u < 0.05) return 0.0f;
    if (u < 0.10) return -0.0f;
    if (u < 0.15) return x * 1e-38f;  // subnormal or tiny: products underflow to +-0
    if (u < 0.17) return x * 1e30f;   // large: products overflow to +-inf
    return x;
}

bool SameBits(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(SparseChain, EveryPathIsTheFmafChain) {
    const int64_t widths[] = {0, 1, 7, 8, 15, 16, 17, 63, 64, 65, 100, 127, 128, 129, 200, 255, 256, 300};
    for (int p = 0; p < REMAT_SIMD_COUNT; p++) {
        if (!remat_ref_simd_supported((remat_simd)p)) {
            std::printf("[  SKIPPED ] path %s: not supported by this CPU\n", remat_ref_simd_name((remat_simd)p));
            continue;
        }
        const remat_sparse_chain_fn fn = remat_sparse_chain_for((remat_simd)p);
        for (int64_t w : widths)
            for (int64_t n : {0, 1, 5, 40}) {
                const int64_t ld = w + 3, nrows = 50;
                const uint64_t key = (uint64_t)(w * 100 + n);
                std::vector<float> rows((size_t)(nrows * ld + 1));
                for (size_t i = 0; i < rows.size(); i++) rows[i] = Adversarial(key, i);
                std::vector<int32_t> idx((size_t)n);
                std::vector<float> val((size_t)n);
                for (int64_t e = 0; e < n; e++) {
                    idx[(size_t)e] = (int32_t)(remat_rng_uniform(26, 3, key, (uint64_t)e) * nrows) % nrows;
                    val[(size_t)e] = Adversarial(key + 7, (uint64_t)e);
                }
                if (n == 40) val[3] = std::numeric_limits<float>::infinity(), val[9] = std::nanf("");
                std::vector<float> c((size_t)w + 16), want;
                for (size_t j = 0; j < c.size(); j++) c[j] = Adversarial(key + 11, j);
                want = c;
                for (int64_t j = 0; j < w; j++) {
                    float s = want[(size_t)j];
                    for (int64_t e = 0; e < n; e++) s = std::fmaf(rows[(size_t)(idx[(size_t)e] * ld + j)], val[(size_t)e], s);
                    want[(size_t)j] = s;
                }
                fn(c.data(), w, rows.data(), ld, idx.data(), val.data(), n);
                ASSERT_TRUE(SameBits(c, want)) << remat_ref_simd_name((remat_simd)p) << " w=" << w << " n=" << n;
            }
    }
}

// A panel value: mostly +-0 at the given density, else adversarial (NaN and inf listed).
float PanelValue(uint64_t key, uint64_t i, double density) {
    const double u = remat_rng_uniform(26, 4, key, i);
    if (u >= density) return remat_rng_uniform(26, 5, key, i) < 0.5 ? 0.0f : -0.0f;
    const double v = remat_rng_uniform(26, 6, key, i);
    if (v < 0.05) return std::nanf("");
    if (v < 0.10) return -std::numeric_limits<float>::infinity();
    if (v < 0.20) return 1e-45f;  // the smallest subnormal: nonzero
    return Adversarial(key, i) == 0.0f ? 1.0f : Adversarial(key, i);
}

TEST(SparseChain, PanelListsOnEveryPath) {
    const int64_t ld = 37, ls = 64;
    int64_t checked = 0;
    for (int p = 0; p < REMAT_SIMD_COUNT; p++) {
        if (!remat_ref_simd_supported((remat_simd)p)) {
            std::printf("[  SKIPPED ] path %s: not supported by this CPU\n", remat_ref_simd_name((remat_simd)p));
            continue;
        }
        const remat_sparse_lists_fn fn = remat_sparse_lists_for((remat_simd)p);
        for (int64_t cols = 1; cols <= 16; cols++)
            for (int64_t kc : {1, 7, 15, 16, 17, 31, 33, 48, 63, 64})
                for (double dens : {0.0, 0.02, 0.15, 0.6, 1.0}) {
                    const uint64_t key = (uint64_t)(cols * 1000 + kc * 10) + (uint64_t)(dens * 7);
                    // Columns past cols hold nonzeros (not to be read into any list).
                    std::vector<float> panel((size_t)(kc * ld + 16));
                    for (size_t i = 0; i < panel.size(); i++) panel[i] = PanelValue(key, i, dens);
                    if (dens == 0.02 && kc > 3) panel[(size_t)((kc - 1) * ld)] = -0.5f;  // a single late entry
                    std::vector<int32_t> idx((size_t)(16 * ls), -7), cnt(16, -7);
                    std::vector<float> val((size_t)(16 * ls), 9.0f);
                    const int64_t total = fn(idx.data(), val.data(), cnt.data(), panel.data(), ld, cols, kc, ls);
                    int64_t want_total = 0;
                    for (int64_t r = 0; r < cols; r++) {
                        int64_t m = 0;
                        for (int64_t k = 0; k < kc; k++) {
                            const float x = panel[(size_t)(k * ld + r)];
                            if (x == 0.0f) continue;  // +-0 left out; NaN compares unequal: listed
                            ASSERT_LT(m, cnt[(size_t)r]) << remat_ref_simd_name((remat_simd)p) << " cols " << cols;
                            ASSERT_EQ(idx[(size_t)(r * ls + m)], k);
                            ASSERT_EQ(std::memcmp(&val[(size_t)(r * ls + m)], &x, sizeof x), 0);
                            m++;
                        }
                        ASSERT_EQ(cnt[(size_t)r], m) << remat_ref_simd_name((remat_simd)p) << " cols " << cols
                                                     << " kc " << kc << " density " << dens << " column " << r;
                        want_total += m;
                    }
                    for (int64_t r = cols; r < 16; r++) ASSERT_EQ(cnt[(size_t)r], -7);  // untouched
                    ASSERT_EQ(total, want_total);
                    checked++;
                }
    }
    EXPECT_GT(checked, 0);
}

TEST(SparseChain, TransposeAndTransposedAddOnEveryPath) {
    const int64_t sizes[] = {1, 3, 8, 15, 16, 17, 31, 33, 40};
    int64_t checked = 0;
    for (int p = 0; p < REMAT_SIMD_COUNT; p++) {
        if (!remat_ref_simd_supported((remat_simd)p)) {
            std::printf("[  SKIPPED ] path %s: not supported by this CPU\n", remat_ref_simd_name((remat_simd)p));
            continue;
        }
        const remat_sparse_move_fn tr = remat_sparse_transpose_for((remat_simd)p);
        const remat_sparse_move_fn add = remat_sparse_add_t_for((remat_simd)p);
        for (int64_t rows : sizes)
            for (int64_t cols : sizes) {
                const uint64_t key = (uint64_t)(rows * 100 + cols);
                const int64_t rs = cols + 5, ld = rows + 3;  // strides wider than the rows
                std::vector<float> src((size_t)(rows * rs)), dst((size_t)(cols * ld), 7.0f), want = dst;
                for (size_t i = 0; i < src.size(); i++) src[i] = i % 23 == 5 ? std::nanf("") : Adversarial(key, i);
                for (int64_t r = 0; r < rows; r++)
                    for (int64_t k = 0; k < cols; k++) want[(size_t)(k * ld + r)] = src[(size_t)(r * rs + k)];
                tr(dst.data(), ld, src.data(), rs, rows, cols);
                ASSERT_TRUE(SameBits(dst, want)) << remat_ref_simd_name((remat_simd)p) << " transpose " << rows << "x" << cols;
                // Transposed add: d[r * ld2 + k] += s[k * rs2 + r] (s: cols x rs2 with rs2 >= rows).
                const int64_t rs2 = rows + 2, ld2 = cols + 4;
                std::vector<float> s2((size_t)(cols * rs2)), d2((size_t)(rows * ld2));
                for (size_t i = 0; i < s2.size(); i++) s2[i] = Adversarial(key + 1, i);
                for (size_t i = 0; i < d2.size(); i++) d2[i] = i % 19 == 3 ? -std::nanf("") : Adversarial(key + 2, i);
                std::vector<float> want2 = d2;
                for (int64_t r = 0; r < rows; r++)
                    for (int64_t k = 0; k < cols; k++) {
                        float &w = want2[(size_t)(r * ld2 + k)];
                        w = w + s2[(size_t)(k * rs2 + r)];
                    }
                add(d2.data(), ld2, s2.data(), rs2, rows, cols);
                ASSERT_TRUE(SameBits(d2, want2)) << remat_ref_simd_name((remat_simd)p) << " add_t " << rows << "x" << cols;
                checked++;
            }
    }
    EXPECT_GT(checked, 0);
}

TEST(SparseChain, CurrentPathEntryPoint) {
    const float rows[4] = {1.5f, -2.0f, 3.0f, 0.25f};
    const int32_t idx[2] = {1, 0};
    const float val[2] = {2.0f, -4.0f};
    float c[2] = {1.0f, -0.0f};
    remat_sparse_chain(c, 2, rows, 2, idx, val, 2);
    EXPECT_EQ(c[0], std::fmaf(1.5f, -4.0f, std::fmaf(3.0f, 2.0f, 1.0f)));
    EXPECT_EQ(c[1], std::fmaf(-2.0f, -4.0f, std::fmaf(0.25f, 2.0f, -0.0f)));
}

TEST(SparseChain, OperandChecks) {
    std::vector<float> x = {0.0f, -0.0f, 1e-45f, -3.0f, 0.0f, std::nanf(""), 2.0f};
    EXPECT_EQ(remat_floats_nonzero(x.data(), (int64_t)x.size()), 4);
    EXPECT_EQ(remat_floats_nonzero(x.data(), 0), 0);
    EXPECT_FALSE(remat_floats_all_finite(x.data(), (int64_t)x.size(), 1));  // the NaN
    EXPECT_TRUE(remat_floats_all_finite(x.data(), 5, 1));
    EXPECT_TRUE(remat_floats_all_finite(x.data(), 4, 2));   // x[0], x[2], x[4], x[6]
    EXPECT_FALSE(remat_floats_all_finite(x.data() + 1, 3, 2));  // x[5]
    x[0] = -std::numeric_limits<float>::infinity();
    EXPECT_FALSE(remat_floats_all_finite(x.data(), 1, 1));
    EXPECT_TRUE(remat_floats_all_finite(x.data(), 0, 1));

    std::vector<int32_t> idx(x.size());
    std::vector<float> val(x.size());
    const int64_t m = remat_sparse_list(idx.data(), val.data(), x.data(), (int64_t)x.size(), 100);
    ASSERT_EQ(m, 5);  // -inf, 1e-45, -3, NaN, 2
    const int32_t want_idx[5] = {100, 102, 103, 105, 106};
    for (int64_t e = 0; e < m; e++) {
        EXPECT_EQ(idx[(size_t)e], want_idx[e]);
        EXPECT_EQ(std::memcmp(&val[(size_t)e], &x[(size_t)(want_idx[e] - 100)], sizeof(float)), 0);
    }
}

}  // namespace
