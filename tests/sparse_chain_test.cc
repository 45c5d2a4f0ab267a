// sparse_chain_test.cc - the zero-skipping chain (core/ref/sparse_chain.h) on every SIMD
// path the CPU supports gives, bit for bit, the fmaf() chain its contract defines, on
// widths around every tile edge (16/64/128 columns), row strides wider than the width,
// repeated and empty lists, and adversarial values (signed zeros, subnormals, products
// that underflow, inf and NaN); and the operand checks (finite, nonzero count, list).
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
