// gemm_simd_test.cc - every SIMD path of the reference GEMM gives the same bits.
//
// What is checked, and how:
//  - each path this CPU supports (scalar, avx2, avx512: core/ref/simd.h), forced with
//    remat_ref_simd_set, against the scalar fmaf chain that defines the result
//    (gemm_kernel.h), bit for bit, on odd shapes around every tile and block edge
//    (6/12 rows, 16/32 columns, K blocks of 192 and 256), all three layouts, with and
//    without accumulate, on 1 and 2 threads;
//  - the row-count invariance per path: for M = 1 .. T*N the first M rows of a call
//    have the bits of the same rows of the full call, and T/k time steps at a time
//    (k = 1, 2, 4, 8 calls) give the full call's bits;
//  - the AVX-512 kernel's source also on SIMDe's portable intrinsics
//    (//core:gemm_avx512_emulated), so its indexing and order are tested on a machine
//    with AVX2 + FMA but no AVX-512; where the CPU has AVX-512 the native path runs too;
//  - the path API: names, parsing, refusing a path the CPU lacks.
// Paths the CPU lacks are reported as skipped, not passed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/base/bf16.h"
#include "core/base/status.h"
#include "core/base/rng.h"
#include "core/ref/gemm_kernel.h"
#include "core/ref/ref_kernels.h"
#include "core/ref/simd.h"

namespace {

std::vector<float> Rand(size_t n, uint64_t key) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++) v[i] = 2.0f * remat_rng_uniform(91, 3, key, i) - 1.0f;
    return v;
}

const remat_gemm_layout kLayouts[] = {REMAT_GEMM_NT, REMAT_GEMM_NN, REMAT_GEMM_TN};
const char* LayoutName(remat_gemm_layout l) { return l == REMAT_GEMM_NT ? "nt" : l == REMAT_GEMM_NN ? "nn" : "tn"; }

float Aat(remat_gemm_layout l, const float* a, int64_t M, int64_t K, int64_t i, int64_t k) {
    return l == REMAT_GEMM_TN ? a[k * M + i] : a[i * K + k];
}
float Bat(remat_gemm_layout l, const float* b, int64_t N, int64_t K, int64_t k, int64_t j) {
    return l == REMAT_GEMM_NT ? b[j * K + k] : b[k * N + j];
}

// The definition: one fmaf chain per element, k ascending.
std::vector<float> Chain(remat_gemm_layout l, const std::vector<float>& c0, const std::vector<float>& a,
                         const std::vector<float>& b, int64_t M, int64_t N, int64_t K, int acc) {
    std::vector<float> c(M * N);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            float x = acc ? c0[i * N + j] : 0.0f;
            for (int64_t k = 0; k < K; k++)
                x = std::fmaf(Aat(l, a.data(), M, K, i, k), Bat(l, b.data(), N, K, k, j), x);
            c[i * N + j] = x;
        }
    return c;
}

// Index of the first differing element, or -1.
int64_t FirstDiff(const std::vector<float>& x, const std::vector<float>& y) {
    if (x.size() != y.size()) return 0;
    for (size_t i = 0; i < x.size(); i++)
        if (std::memcmp(&x[i], &y[i], sizeof(float)) != 0) return (int64_t)i;
    return -1;
}

// One way to run a GEMM: a kernel through the driver, named for messages.
struct Path {
    std::string name;
    const remat_gemm_kernel* kernel;
};

// The paths this CPU can run, plus the emulated AVX-512 kernel where AVX2 + FMA exist.
std::vector<Path> Paths(std::vector<std::string>* skipped) {
    std::vector<Path> p = {{"scalar", &remat_gemm_kernel_scalar}};
    if (remat_ref_simd_supported(REMAT_SIMD_AVX2)) {
        p.push_back({"avx2", &remat_gemm_kernel_avx2});
        p.push_back({"avx512-emulated", &remat_gemm_kernel_avx512_emulated});
    } else {
        skipped->push_back("avx2 and avx512-emulated (no AVX2 + FMA)");
    }
    if (remat_ref_simd_supported(REMAT_SIMD_AVX512)) p.push_back({"avx512", &remat_gemm_kernel_avx512});
    else skipped->push_back("avx512 (no AVX512F on this CPU)");
    return p;
}

void ReportSkipped(const std::vector<std::string>& skipped) {
    for (const std::string& s : skipped) std::printf("[  SKIPPED ] path %s\n", s.c_str());
}

struct Shape {
    int64_t M, N, K;
};
// Around the tiles (6, 12 rows; 16, 32 columns), the K blocks (192, 256, split into
// equal parts), the M blocks (120, 240, split into equal parts) and both loop orders of
// the driver (B packed whole when K x N fits 3 MiB; else N blocks of 3072 columns:
// 3 x 3100 x 19 and 5 x 300 x 2700), plus degenerate ones.
const Shape kShapes[] = {{1, 1, 1},     {1, 33, 7},     {5, 1, 300},    {6, 16, 8},     {12, 32, 192},
                         {13, 31, 193}, {11, 17, 257},  {25, 65, 513},  {7, 100, 385},  {241, 47, 64},
                         {121, 33, 29}, {37, 250, 130}, {3, 3100, 19},  {250, 9, 200},  {64, 64, 576},
                         {5, 300, 2700}, {482, 20, 3}};

TEST(GemmSimd, EveryPathIsTheFmaChain) {
    std::vector<std::string> skipped;
    const std::vector<Path> paths = Paths(&skipped);
    for (remat_gemm_layout l : kLayouts)
        for (const Shape& s : kShapes) {
            auto a = Rand(s.M * s.K, 1), b = Rand(s.K * s.N, 2), c0 = Rand(s.M * s.N, 3);
            for (int acc = 0; acc <= 1; acc++) {
                const std::vector<float> want = Chain(l, c0, a, b, s.M, s.N, s.K, acc);
                for (const Path& p : paths)
                    for (int threads : {1, 2}) {
                        remat_ref_set_threads(threads);
                        std::vector<float> c = c0;
                        remat_gemm_with(p.kernel, l, c.data(), a.data(), b.data(), s.M, s.N, s.K, acc);
                        const int64_t d = FirstDiff(c, want);
                        EXPECT_EQ(d, -1) << p.name << " " << LayoutName(l) << " " << s.M << "x" << s.N << "x" << s.K
                                         << " acc=" << acc << " threads=" << threads << " element " << d;
                    }
            }
        }
    remat_ref_set_threads(1);
    ReportSkipped(skipped);
}

// Rows 1 .. T*N: a call on the first M rows gives those rows' bits of the full call,
// and so do T/k steps at a time.
TEST(GemmSimd, RowCountInvariance) {
    std::vector<std::string> skipped;
    const std::vector<Path> paths = Paths(&skipped);
    const int64_t T = 8, Nb = 9, R = T * Nb, N = 45, K = 211;  // R = 72 rows
    for (remat_gemm_layout l : kLayouts) {
        auto a = Rand(R * K, 4), b = Rand(K * N, 5), c0 = Rand(R * N, 6);
        const std::vector<float> full = Chain(l, c0, a, b, R, N, K, 1);
        // A's rows [r0, r0+m) as their own operand (tn: the columns of A^T).
        auto rows_of = [&](int64_t r0, int64_t m) {
            std::vector<float> s(m * K);
            for (int64_t i = 0; i < m; i++)
                for (int64_t k = 0; k < K; k++)
                    s[l == REMAT_GEMM_TN ? k * m + i : i * K + k] = Aat(l, a.data(), R, K, r0 + i, k);
            return s;
        };
        for (const Path& p : paths) {
            for (int64_t m = 1; m <= R; m++) {
                auto as = rows_of(0, m);
                std::vector<float> c(c0.begin(), c0.begin() + m * N);
                remat_gemm_with(p.kernel, l, c.data(), as.data(), b.data(), m, N, K, 1);
                const int64_t d = FirstDiff(c, std::vector<float>(full.begin(), full.begin() + m * N));
                ASSERT_EQ(d, -1) << p.name << " " << LayoutName(l) << " first " << m << " rows, element " << d;
            }
            for (int64_t calls : {1, 2, 4, 8}) {
                const int64_t m = R / calls;  // T/calls steps of Nb rows each
                std::vector<float> c = c0;
                for (int64_t q = 0; q < calls; q++) {
                    auto as = rows_of(q * m, m);
                    remat_gemm_with(p.kernel, l, c.data() + q * m * N, as.data(), b.data(), m, N, K, 1);
                }
                EXPECT_EQ(FirstDiff(c, full), -1) << p.name << " " << LayoutName(l) << " in " << calls << " calls";
            }
        }
    }
    ReportSkipped(skipped);
}

// The public entry points follow the path set with remat_ref_simd_set.
TEST(GemmSimd, PublicGemmFollowsTheForcedPath) {
    const remat_simd before = remat_ref_simd_get();
    const int64_t M = 50, N = 70, K = 300;
    auto a = Rand(M * K, 7), b = Rand(K * N, 8);
    const std::vector<float> want = Chain(REMAT_GEMM_NT, {}, a, b, M, N, K, 0);
    int ran = 0;
    for (int p = 0; p < REMAT_SIMD_COUNT; p++) {
        if (!remat_ref_simd_supported((remat_simd)p)) continue;
        ASSERT_EQ(remat_ref_simd_set((remat_simd)p), 0);
        EXPECT_EQ(remat_ref_simd_get(), (remat_simd)p);
        std::vector<float> c(M * N, 7.0f);
        remat_ref_gemm_nt(c.data(), a.data(), b.data(), M, N, K, 0);
        EXPECT_EQ(FirstDiff(c, want), -1) << remat_ref_simd_name((remat_simd)p);
        ran++;
    }
    EXPECT_GE(ran, 1);
    ASSERT_EQ(remat_ref_simd_set(before), 0);
}

// A bf16 C on every path: the float chain (from C widened), rounded once, on shapes
// with several K blocks and both loop orders; its buffers held to
// REMAT_GEMM_SCRATCH_BYTES per thread whatever K (a bf16 C used to run K as one block,
// its packing buffers growing as rows x K floats).
TEST(GemmSimd, Bf16OutputIsTheRoundedChainInBoundedScratch) {
    for (const remat_gemm_kernel* k :
         {&remat_gemm_kernel_scalar, &remat_gemm_kernel_avx2, &remat_gemm_kernel_avx512}) {
        const int64_t b_block = std::max<int64_t>((int64_t)3 << 20, k->nc * k->kc * 4);
        EXPECT_LE(k->mc * k->kc * 4 + b_block + k->mc * k->nc * 4 + 3 * 64, REMAT_GEMM_SCRATCH_BYTES) << k->name;
    }
    const remat_simd before = remat_ref_simd_get();
    const Shape shapes[] = {{13, 31, 193}, {25, 65, 513}, {241, 47, 600}, {3, 3100, 19}, {5, 300, 2700}, {7, 5, 1}};
    for (int p = 0; p < REMAT_SIMD_COUNT; p++) {
        if (!remat_ref_simd_supported((remat_simd)p)) continue;
        ASSERT_EQ(remat_ref_simd_set((remat_simd)p), 0);
        for (remat_gemm_layout l : kLayouts)
            for (const Shape& s : shapes)
                for (int acc = 0; acc <= 1; acc++)
                    for (int threads : {1, 2}) {
                        remat_ref_set_threads(threads);
                        auto a = Rand(s.M * s.K, 11), b = Rand(s.K * s.N, 12), f = Rand(s.M * s.N, 13);
                        std::vector<uint16_t> c16(f.size());
                        for (size_t i = 0; i < f.size(); i++) c16[i] = remat_f32_to_bf16(f[i]);
                        std::vector<float> c0(f.size());
                        for (size_t i = 0; i < f.size(); i++) c0[i] = remat_bf16_to_f32(c16[i]);
                        const std::vector<float> chain = Chain(l, c0, a, b, s.M, s.N, s.K, acc);
                        remat_gemm_typed(l, c16.data(), 1, a.data(), 0, b.data(), 0, s.M, s.N, s.K, acc);
                        int64_t bad = -1;
                        for (size_t i = 0; i < chain.size() && bad < 0; i++)
                            if (c16[i] != remat_f32_to_bf16(chain[i])) bad = (int64_t)i;
                        EXPECT_EQ(bad, -1) << remat_ref_simd_name((remat_simd)p) << " " << LayoutName(l) << " " << s.M
                                           << "x" << s.N << "x" << s.K << " acc=" << acc << " threads=" << threads;
                    }
    }
    // K = 2^20 into 12 bf16 rows: 48 MiB of packing for K as one block; bounded now
    remat_ref_set_threads(1);
    const int64_t M = 12, N = 1, K = (int64_t)1 << 20;
    std::vector<float> a(M * K, 0.5f), b(K * N, 0.25f);
    std::vector<uint16_t> c(M * N, 0);
    const size_t live = remat_xmem_live(), peak0 = remat_xmem_peak();
    remat_gemm_typed(REMAT_GEMM_NT, c.data(), 1, a.data(), 0, b.data(), 0, M, N, K, 0);
    EXPECT_LE(remat_xmem_peak(), std::max(peak0, live + (size_t)REMAT_GEMM_SCRATCH_BYTES));
    EXPECT_EQ(remat_bf16_to_f32(c[0]), 131072.0f);  // 2^20 * 0.125, exact
    ASSERT_EQ(remat_ref_simd_set(before), 0);
}

TEST(GemmSimd, PathApi) {
    for (int p = 0; p < REMAT_SIMD_COUNT; p++) {
        remat_simd q;
        ASSERT_EQ(remat_ref_simd_parse(remat_ref_simd_name((remat_simd)p), &q), 0);
        EXPECT_EQ(q, (remat_simd)p);
    }
    remat_simd q = REMAT_SIMD_AVX2;
    EXPECT_EQ(remat_ref_simd_parse("avx1024", &q), -1);
    EXPECT_EQ(remat_ref_simd_parse("", &q), -1);
    EXPECT_EQ(remat_ref_simd_parse(nullptr, &q), -1);
    EXPECT_EQ(q, REMAT_SIMD_AVX2);
    EXPECT_STREQ(remat_ref_simd_name((remat_simd)7), "?");
    EXPECT_TRUE(remat_ref_simd_supported(REMAT_SIMD_SCALAR));
    EXPECT_FALSE(remat_ref_simd_supported(REMAT_SIMD_COUNT));
    EXPECT_TRUE(remat_ref_simd_supported(remat_ref_simd_best()));
    // The widest path: nothing wider is supported.
    for (int p = remat_ref_simd_best() + 1; p < REMAT_SIMD_COUNT; p++)
        EXPECT_FALSE(remat_ref_simd_supported((remat_simd)p));
    // A path the CPU lacks is refused and changes nothing.
    const remat_simd now = remat_ref_simd_get();
    for (int p = 0; p < REMAT_SIMD_COUNT; p++)
        if (!remat_ref_simd_supported((remat_simd)p)) {
            EXPECT_EQ(remat_ref_simd_set((remat_simd)p), -1);
            EXPECT_EQ(remat_ref_simd_get(), now);
        }
    // The driver's fields: tiles fit the edge buffer, blocks are whole tiles.
    for (const remat_gemm_kernel* k : {&remat_gemm_kernel_scalar, &remat_gemm_kernel_avx2, &remat_gemm_kernel_avx512}) {
        EXPECT_LE(k->mr * k->nr, REMAT_GEMM_MAX_TILE) << k->name;
        EXPECT_EQ(k->mc % k->mr, 0) << k->name;
        EXPECT_EQ(k->nc % k->nr, 0) << k->name;
    }
}

}  // namespace
