// conv_sparse_test.cc - the zero-skipping forward convolution (core/ref/sparse_gemm.h,
// taken by conv.c for spike inputs) gives the dense implicit GEMM's bits, memcmp, on
// every SIMD path this CPU runs and at 1, 2 and 3 threads: input densities 0, 1, 15,
// 50 and 100 %; spike (0/1) and pooled-like values; signed zeros in the input and the
// bias (-0 bias elements, no bias); -0, subnormal and tiny weights whose products
// underflow to +-0 (the sign cases the +-0 recompute exists for), exact cancellations;
// inf and NaN in the input (nonzero: computed); inf / NaN in the weights or the bias
// (the call must take the dense path); stride, padding, dilation, groups, c_out not a
// multiple of the tile (and above the 512-row accumulator chunk), K above one K block,
// columns above one pixel block. The path is forced with remat_sparse_mode_set, and
// remat_sparse_gemm_runs shows which one ran. The dense path itself is the contract's
// (conv_implicit_test); the general descriptor (plain strided operands) is checked
// against remat_gemm_desc_run too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/base/rng.h"
#include "core/ref/gemm_kernel.h"
#include "core/ref/ref_kernels.h"
#include "core/ref/simd.h"
#include "core/ref/sparse_gemm.h"
#include "tests/testutil.h"

using remat_test::conv_geom;
using remat_test::dilated;
using remat_test::grouped;

namespace {

typedef std::vector<float> F;

float U(uint64_t stream, uint64_t key, uint64_t i) { return remat_rng_uniform(2626, stream, key, i); }

enum Values { SPIKE, POOLED, ADVERSARIAL };

// An input of the given density: zeros of either sign; nonzeros 1 (spikes), multiples of
// 1/9 (an average pool of spikes) or adversarial (tiny, subnormal, large, inf, NaN).
F input(int64_t n, double density, Values v, uint64_t key) {
    F x((size_t)n);
    for (int64_t i = 0; i < n; i++) {
        float &e = x[(size_t)i];
        if (U(1, key, i) >= density) {
            e = U(2, key, i) < 0.3 ? -0.0f : 0.0f;
            continue;
        }
        const float u = U(3, key, i);
        if (v == SPIKE) e = 1.0f;
        else if (v == POOLED) e = (float)(1 + (int)(u * 9)) / 9.0f;
        else if (u < 0.2f) e = (U(4, key, i) < 0.5f ? -1e-20f : 1e-20f);  // products with tiny weights underflow
        else if (u < 0.3f) e = 1e-40f;                                      // subnormal
        else if (u < 0.31f) e = std::numeric_limits<float>::infinity();
        else if (u < 0.32f) e = std::nanf("");
        else e = 2.0f * U(4, key, i) - 1.0f;
    }
    return x;
}

// Weights: +-1 (exact cancellations with spikes) or adversarial (-0, +0, subnormal, tiny).
F weights(int64_t n, bool adversarial, uint64_t key) {
    F w((size_t)n);
    for (int64_t i = 0; i < n; i++) {
        const float u = U(5, key, i), s = U(6, key, i) < 0.5f ? -1.0f : 1.0f;
        float &e = w[(size_t)i];
        if (!adversarial) e = u < 0.5f ? s : s * 0.5f;
        else if (u < 0.1f) e = -0.0f;
        else if (u < 0.2f) e = 0.0f;
        else if (u < 0.3f) e = s * 1e-39f;  // subnormal
        else if (u < 0.6f) e = s * 1e-30f;  // products with 1e-20 underflow to +-0
        else e = 2.0f * U(7, key, i) - 1.0f;
    }
    return w;
}

F bias(int64_t n, uint64_t key) {
    F b((size_t)n);
    for (int64_t i = 0; i < n; i++) {
        const float u = U(8, key, i);
        b[(size_t)i] = u < 0.3f ? -0.0f : u < 0.5f ? 0.0f : 2.0f * U(9, key, i) - 1.0f;
    }
    return b;
}

bool same_bits(const F &a, const F &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

F forward(const remat_conv_geom &g, const F &x, const F &w, const F *b, int64_t rows, remat_sparse_mode mode) {
    const int64_t P = g.h_out * g.w_out;
    F out((size_t)(rows * g.c_out * P), 12345.0f), ws(1);
    const remat_sparse_mode before = remat_sparse_mode_set(mode);
    remat_ref_conv2d_forward(out.data(), x.data(), w.data(), b ? b->data() : nullptr, ws.data(), rows, &g);
    remat_sparse_mode_set(before);
    return out;
}

struct Case {
    remat_conv_geom g;
    int64_t rows;
};

const Case kCases[] = {
    {conv_geom(4, 7, 7, 5, 3, 3, 1, 1, 1, 1), 3},         // small, c_out under a vector
    {conv_geom(9, 9, 8, 130, 3, 3, 1, 1, 1, 1), 2},       // K = 81 > a K block; c_out 130: a tile and 2 rows
    {conv_geom(30, 5, 5, 17, 3, 3, 1, 1, 1, 1), 3},       // K = 270: five K blocks
    {conv_geom(2, 20, 19, 9, 3, 3, 1, 1, 1, 1), 2},       // 380 pixels: two pixel blocks, one inside a sample
    {conv_geom(3, 11, 10, 7, 7, 5, 2, 2, 3, 2), 2},       // stride 2, non-square kernel, padding
    {conv_geom(6, 5, 5, 520, 1, 1, 1, 1, 0, 0), 2},       // c_out 520: two accumulator chunks of rows
    {dilated(conv_geom(3, 9, 11, 14, 3, 3, 1, 1, 2, 2), 2, 2), 2},
    {grouped(conv_geom(8, 9, 9, 16, 3, 3, 2, 2, 1, 1), 8), 2},   // depthwise, multiplier 2
    {grouped(conv_geom(12, 6, 6, 70, 3, 3, 1, 1, 1, 1), 2), 2},  // 2 groups of 35 outputs
    {conv_geom(5, 9, 3, 6, 3, 3, 1, 1, 0, 0), 4},         // w_out = 1
};

TEST(ConvSparse, SameBitsAsTheDenseGemm) {
    const remat_simd before = remat_ref_simd_get();
    const double densities[] = {0.0, 0.01, 0.15, 0.5, 1.0};
    int64_t checked = 0;
    for (int p = 0; p < REMAT_SIMD_COUNT; p++) {
        if (!remat_ref_simd_supported((remat_simd)p)) {
            std::printf("[  SKIPPED ] path %s: not supported by this CPU\n", remat_ref_simd_name((remat_simd)p));
            continue;
        }
        ASSERT_EQ(remat_ref_simd_set((remat_simd)p), 0);
        uint64_t key = 0;
        for (const Case &c : kCases)
            for (double dens : densities)
                for (int vals = SPIKE; vals <= ADVERSARIAL; vals++) {
                    key++;
                    const remat_conv_geom &g = c.g;
                    const int64_t K = remat_test::conv_weight_elems(g), in_e = g.c_in * g.h_in * g.w_in;
                    const F x = input(c.rows * in_e, dens, (Values)vals, key);
                    const F w = weights(K, vals == ADVERSARIAL, key), b = bias(g.c_out, key);
                    for (int with_bias = 0; with_bias < 2; with_bias++) {
                        const F *bp = with_bias ? &b : nullptr;
                        remat_ref_set_threads(1);
                        const F dense = forward(g, x, w, bp, c.rows, REMAT_SPARSE_DENSE);
                        for (int threads = 1; threads <= 3; threads++) {
                            remat_ref_set_threads(threads);
                            const int64_t runs = remat_sparse_gemm_runs();
                            const F sparse = forward(g, x, w, bp, c.rows, REMAT_SPARSE_FORCE);
                            ASSERT_EQ(remat_sparse_gemm_runs() - runs, remat_conv_groups(&g));
                            ASSERT_TRUE(same_bits(sparse, dense))
                                << remat_ref_simd_name((remat_simd)p) << " threads " << threads << " case "
                                << (&c - kCases) << " density " << dens << " values " << vals << " bias " << with_bias;
                            checked++;
                        }
                    }
                }
    }
    remat_ref_set_threads(1);
    remat_ref_simd_set(before);
    EXPECT_GT(checked, 0);
}

// A non-finite weight or bias element: inf * 0 = NaN, so the call must stay dense (the
// mode asks for the sparse GEMM, the guard refuses it) and give the dense bits.
// A layer whose transposed weights exceed REMAT_GEMM_SCRATCH_BYTES (c_out 520, K = 3078:
// 6.4 MB) runs in passes of whole tiles of output channels; the passes change no bit.
TEST(ConvSparse, WeightsOverTheScratchBoundRunInPasses) {
    const remat_simd before = remat_ref_simd_get();
    const remat_conv_geom g = conv_geom(342, 3, 3, 520, 3, 3, 1, 1, 1, 1);
    const int64_t K = remat_test::conv_weight_elems(g), in_e = g.c_in * g.h_in * g.w_in;
    ASSERT_GT(K * (int64_t)sizeof(float) * g.c_out, REMAT_GEMM_SCRATCH_BYTES);
    const F x = input(in_e, 0.15, ADVERSARIAL, 901), w = weights(K, true, 902), b = bias(g.c_out, 903);
    for (int p = 0; p < REMAT_SIMD_COUNT; p++) {
        if (!remat_ref_simd_supported((remat_simd)p)) continue;
        ASSERT_EQ(remat_ref_simd_set((remat_simd)p), 0);
        remat_ref_set_threads(1);
        const F dense = forward(g, x, w, &b, 1, REMAT_SPARSE_DENSE);
        for (int threads = 1; threads <= 2; threads++) {
            remat_ref_set_threads(threads);
            const int64_t runs = remat_sparse_gemm_runs();
            const F sparse = forward(g, x, w, &b, 1, REMAT_SPARSE_FORCE);
            ASSERT_EQ(remat_sparse_gemm_runs() - runs, 1);
            ASSERT_TRUE(same_bits(sparse, dense)) << remat_ref_simd_name((remat_simd)p) << " threads " << threads;
        }
    }
    remat_ref_set_threads(1);
    remat_ref_simd_set(before);
}

TEST(ConvSparse, NonFiniteWeightsOrBiasTakeTheDensePath) {
    const remat_conv_geom g = conv_geom(4, 6, 6, 9, 3, 3, 1, 1, 1, 1);
    const int64_t K = remat_test::conv_weight_elems(g), in_e = g.c_in * g.h_in * g.w_in;
    const F x = input(2 * in_e, 0.15, SPIKE, 77);
    for (int which = 0; which < 4; which++) {
        F w = weights(K, false, 78), b = bias(g.c_out, 79);
        if (which == 0) w[5] = std::numeric_limits<float>::infinity();
        if (which == 1) w[K - 1] = std::nanf("");
        if (which == 2) b[3] = -std::numeric_limits<float>::infinity();
        if (which == 3) b[0] = std::nanf("");
        const F dense = forward(g, x, w, &b, 2, REMAT_SPARSE_DENSE);
        const int64_t runs = remat_sparse_gemm_runs();
        const F forced = forward(g, x, w, &b, 2, REMAT_SPARSE_FORCE);
        EXPECT_EQ(remat_sparse_gemm_runs(), runs) << which;
        EXPECT_TRUE(same_bits(forced, dense)) << which;
    }
}

// The automatic choice: sparse for a 15 % spike input, dense for a dense one or too
// few output channels; bf16 never.
TEST(ConvSparse, AutoChoosesByDensity) {
    const remat_conv_geom g = conv_geom(8, 8, 8, 128, 3, 3, 1, 1, 1, 1);
    const int64_t K = remat_test::conv_weight_elems(g), in_e = g.c_in * g.h_in * g.w_in;
    const F w = weights(K, false, 3), b = bias(g.c_out, 4);
    int64_t runs = remat_sparse_gemm_runs();
    const F sparse_in = input(in_e, 0.15, SPIKE, 5), dense_in = input(in_e, 0.9, POOLED, 6);
    const F a = forward(g, sparse_in, w, &b, 1, REMAT_SPARSE_AUTO);
    EXPECT_EQ(remat_sparse_gemm_runs(), runs + 1);
    EXPECT_TRUE(same_bits(a, forward(g, sparse_in, w, &b, 1, REMAT_SPARSE_DENSE)));
    runs = remat_sparse_gemm_runs();
    forward(g, dense_in, w, &b, 1, REMAT_SPARSE_AUTO);
    EXPECT_EQ(remat_sparse_gemm_runs(), runs);
    const remat_conv_geom narrow = grouped(conv_geom(8, 8, 8, 2 * 63, 3, 3, 1, 1, 1, 1), 2);  // 63 rows a group
    const F wn = weights(remat_test::conv_weight_elems(narrow), false, 7), bn = bias(narrow.c_out, 8);
    forward(narrow, sparse_in, wn, &bn, 1, REMAT_SPARSE_AUTO);
    EXPECT_EQ(remat_sparse_gemm_runs(), runs);
    // 64 rows a group: sparse from K = 128 (c_in 16: K = 144), dense below (c_in 8: 72)
    const remat_conv_geom n64 = conv_geom(16, 8, 8, REMAT_SPARSE_MIN_ROWS, 3, 3, 1, 1, 1, 1);
    const F x64 = input(16 * 64, 0.15, SPIKE, 9), w64 = weights(remat_test::conv_weight_elems(n64), false, 10);
    runs = remat_sparse_gemm_runs();
    EXPECT_TRUE(same_bits(forward(n64, x64, w64, nullptr, 1, REMAT_SPARSE_AUTO),
                          forward(n64, x64, w64, nullptr, 1, REMAT_SPARSE_DENSE)));
    EXPECT_EQ(remat_sparse_gemm_runs(), runs + 1);
    const remat_conv_geom k72 = conv_geom(8, 8, 8, REMAT_SPARSE_MIN_ROWS, 3, 3, 1, 1, 1, 1);
    forward(k72, sparse_in, weights(remat_test::conv_weight_elems(k72), false, 11), nullptr, 1, REMAT_SPARSE_AUTO);
    EXPECT_EQ(remat_sparse_gemm_runs(), runs + 1);
    runs = remat_sparse_gemm_runs();
    // the density limit grows with the output channels (the same on every path)
    const remat_simd path = remat_ref_simd_get();
    for (int p = 0; p < REMAT_SIMD_COUNT; p++) {
        if (!remat_ref_simd_supported((remat_simd)p)) continue;
        remat_ref_simd_set((remat_simd)p);
        EXPECT_EQ(remat_sparse_density(REMAT_SPARSE_MIN_ROWS - 1, 1000), 0.0) << p;
        EXPECT_EQ(remat_sparse_density(REMAT_SPARSE_MIN_ROWS, REMAT_SPARSE_NARROW_K - 1), 0.0) << p;
        EXPECT_EQ(remat_sparse_density(REMAT_SPARSE_MIN_ROWS, REMAT_SPARSE_NARROW_K), REMAT_SPARSE_DENSITY) << p;
        EXPECT_EQ(remat_sparse_density(128, 1), REMAT_SPARSE_DENSITY) << p;
        EXPECT_LT(remat_sparse_density(255, 9), remat_sparse_density(256, 9)) << p;
        EXPECT_LT(remat_sparse_density(511, 9), remat_sparse_density(512, 9)) << p;
        EXPECT_LE(remat_sparse_density(1 << 20, 9), 0.5) << p;
    }
    remat_ref_simd_set(path);
    std::vector<uint16_t> x16((size_t)in_e, 0), w16((size_t)K, 0x3f80), o16((size_t)(g.c_out * 64));
    F ws(1);
    const remat_sparse_mode before = remat_sparse_mode_set(REMAT_SPARSE_FORCE);
    remat_ref_conv2d_forward_bf16(o16.data(), x16.data(), w16.data(), nullptr, ws.data(), 1, &g);
    remat_sparse_mode_set(before);
    EXPECT_EQ(remat_sparse_gemm_runs(), runs);
}

// The general descriptor: plain strided A and B (no packers), with and without
// accumulate, against remat_gemm_desc_run.
TEST(ConvSparse, PlainDescriptorMatchesTheDenseGemm) {
    const int64_t M = 133, N = 300, K = 150;
    const F a = weights(M * K, true, 40), b = input(K * N, 0.1, ADVERSARIAL, 41), c0 = bias(M * N, 42);
    for (int p = 0; p < REMAT_SIMD_COUNT; p++) {
        if (!remat_ref_simd_supported((remat_simd)p)) continue;
        for (int acc = 0; acc < 2; acc++)
            for (int tr = 0; tr < 2; tr++) {
                F want = c0, got = c0;
                remat_gemm_desc d;
                std::memset(&d, 0, sizeof d);
                d.ldc = N, d.A = a.data(), d.a_rs = tr ? 1 : K, d.a_cs = tr ? M : 1, d.B = b.data();
                d.b_rs = tr ? 1 : N, d.b_cs = tr ? K : 1, d.M = M, d.N = N, d.K = K, d.accumulate = acc;
                d.C = want.data();
                ASSERT_EQ(remat_ref_simd_set((remat_simd)p), 0);
                remat_gemm_desc_run(&d);
                d.C = got.data();
                remat_sparse_gemm_desc_run_on((remat_simd)p, &d);
                EXPECT_TRUE(same_bits(got, want)) << remat_ref_simd_name((remat_simd)p) << " acc " << acc << " tr " << tr;
            }
    }
    remat_ref_simd_set(remat_ref_simd_best());
}

}  // namespace
