// conv_implicit_test.cc - the reference conv2d (an implicit GEMM: panels packed straight
// from the input, samples batched into one GEMM, dcol made in blocks of channels and
// samples) against the contract's chains written out element by element, bit for bit,
// on every SIMD path this CPU runs and at 1, 2 and 3 threads, for float and bf16
// storage. The geometries reach every blocking edge: several dcol channel blocks, a
// dcol sample block cut short, samples smaller and larger than a GEMM tile, a weight-
// gradient K (samples x pixels) that crosses GEMM K blocks inside a sample, strides,
// padding, dilation, non-square kernels and groups (depthwise included), output rows of
// one pixel and pixel runs that start inside an output row, the weight gradient computed
// transposed (small K, per group too) and input-gradient blocks split over threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/base/bf16.h"
#include "core/ref/ref_kernels.h"
#include "core/ref/simd.h"
#include "tests/testutil.h"

using remat_test::conv_geom;
using remat_test::dilated;
using remat_test::grouped;

namespace {

typedef std::vector<float> F;

F uniform(int64_t n, float lo, float hi, uint32_t seed) {
    F v((size_t)n);
    uint32_t s = seed * 2654435761u + 1;
    for (auto &x : v) {
        s = s * 1664525u + 1013904223u;
        x = lo + (hi - lo) * (float)(s >> 8) / (float)(1 << 24);
    }
    return v;
}

// Rounds every element to bf16 and back: the values a bf16 tensor holds.
F round16(F v) {
    for (auto &x : v) x = remat_bf16_to_f32(remat_f32_to_bf16(x));
    return v;
}
std::vector<uint16_t> to16(const F &v) {
    std::vector<uint16_t> o(v.size());
    for (size_t i = 0; i < v.size(); i++) o[i] = remat_f32_to_bf16(v[i]);
    return o;
}
F from16(const std::vector<uint16_t> &v) {
    F o(v.size());
    for (size_t i = 0; i < v.size(); i++) o[i] = remat_bf16_to_f32(v[i]);
    return o;
}

// x(k, p) of one sample's column matrix (padded positions +0).
float colv(const float *x, const remat_conv_geom &g, int64_t k, int64_t p) {
    const int64_t kx = k % g.kw, ky = (k / g.kw) % g.kh, ci = k / (g.kw * g.kh);
    const int64_t iy = (p / g.w_out) * g.sh - g.ph + ky * remat_conv_dil_h(&g);
    const int64_t ix = (p % g.w_out) * g.sw - g.pw + kx * remat_conv_dil_w(&g);
    if (iy < 0 || iy >= g.h_in || ix < 0 || ix >= g.w_in) return 0.0f;
    return x[(ci * g.h_in + iy) * g.w_in + ix];
}

struct Def {  // the contract, written out
    F out, dx, dw, db;
};

// With G groups: K = (c_in / G) kh kw, k's channel ci within the group of output
// channel o (its input channels start at gx(o)); dcol's chain over the group's outputs.
Def definition(const remat_conv_geom &g, int64_t T, int64_t N, const F &x, const F &w, const F &b, const F &dy,
               const F &dx0, const F &dw0, const F &db0, bool b16) {
    const int64_t G = remat_conv_groups(&g), cg = g.c_in / G, og = g.c_out / G;
    const int64_t K = cg * g.kh * g.kw, P = g.h_out * g.w_out, rows = T * N, plane = g.h_in * g.w_in;
    const int64_t ie = g.c_in * g.h_in * g.w_in, oe = g.c_out * P;
    auto gx = [&](int64_t o) { return o / og * cg * plane; };
    Def d{F((size_t)(rows * oe)), dx0, dw0, db0};
    for (int64_t r = 0; r < rows; r++)
        for (int64_t o = 0; o < g.c_out; o++)
            for (int64_t p = 0; p < P; p++) {
                float c = b[o];
                for (int64_t k = 0; k < K; k++) c = std::fma(w[o * K + k], colv(&x[r * ie + gx(o)], g, k, p), c);
                d.out[r * oe + o * P + p] = c;
            }
    for (int64_t r = 0; r < rows; r++)  // dcol, then the scatter in (k, p) order, per group
        for (int64_t q = 0; q < G * K; q++)
            for (int64_t p = 0; p < P; p++) {
                const int64_t gi = q / K, k = q % K;
                float c = 0.0f;
                for (int64_t o = gi * og; o < (gi + 1) * og; o++) c = std::fma(w[o * K + k], dy[r * oe + o * P + p], c);
                const int64_t kx = k % g.kw, ky = (k / g.kw) % g.kh, ci = gi * cg + k / (g.kw * g.kh);
                const int64_t iy = (p / g.w_out) * g.sh - g.ph + ky * remat_conv_dil_h(&g);
                const int64_t ix = (p % g.w_out) * g.sw - g.pw + kx * remat_conv_dil_w(&g);
                if (iy < 0 || iy >= g.h_in || ix < 0 || ix >= g.w_in) continue;
                float &e = d.dx[r * ie + (ci * g.h_in + iy) * g.w_in + ix];
                e = e + c;
            }
    if (b16) d.out = round16(d.out), d.dx = round16(d.dx);
    for (int64_t t = T - 1; t >= 0; t--) {
        for (int64_t o = 0; o < g.c_out; o++) {
            for (int64_t k = 0; k < K; k++) {
                float c = 0.0f;
                for (int64_t n = 0; n < N; n++)
                    for (int64_t p = 0; p < P; p++)
                        c = std::fma(dy[(t * N + n) * oe + o * P + p], colv(&x[(t * N + n) * ie + gx(o)], g, k, p), c);
                if (N > 0) d.dw[o * K + k] = d.dw[o * K + k] + c;
            }
            float s = 0.0f;
            for (int64_t n = 0; n < N; n++)
                for (int64_t p = 0; p < P; p++) s = s + dy[(t * N + n) * oe + o * P + p];
            d.db[o] = d.db[o] + s;
        }
    }
    return d;
}

void expect_bits(const F &got, const F &want, const char *what, const std::string &where) {
    ASSERT_EQ(got.size(), want.size()) << what << " " << where;
    int64_t bad = 0, first = -1;
    for (size_t i = 0; i < got.size(); i++)
        if (std::memcmp(&got[i], &want[i], 4) != 0 && bad++ == 0) first = (int64_t)i;
    EXPECT_EQ(bad, 0) << what << " " << where << ": " << bad << " of " << got.size() << " differ, first at " << first
                      << " (" << (first >= 0 ? got[first] : 0) << " vs " << (first >= 0 ? want[first] : 0) << ")";
}

struct Case {
    remat_conv_geom g;
    int64_t T, N;
};

const Case kCases[] = {
    {conv_geom(25, 6, 5, 7, 3, 3, 1, 1, 1, 1), 2, 3},    // 225 rows of k: two dcol channel blocks; P = 30
    {conv_geom(3, 17, 17, 20, 3, 3, 1, 1, 1, 1), 1, 2},  // P = 289 > one dcol block of columns; c_out > a tile
    {conv_geom(4, 4, 4, 5, 1, 1, 1, 1, 0, 0), 3, 7},     // P = 16, 1x1: one dcol block per sample
    {conv_geom(45, 4, 4, 5, 3, 3, 1, 1, 1, 1), 1, 3},    // 405 rows of k, P = 16: 2 samples per dcol block, the last cut short
    {conv_geom(2, 11, 10, 3, 7, 5, 2, 2, 3, 2), 2, 2},   // stride 2, non-square kernel, padding
    {conv_geom(3, 7, 6, 70, 3, 2, 2, 1, 1, 0), 1, 11},   // c_out 70: M edge tiles; K = 11 x 12 pixels
    {conv_geom(6, 5, 5, 13, 2, 2, 1, 2, 0, 1), 2, 9},    // weight-gradient K = 9 x 24 = 216 > the AVX-512 K block
    {grouped(conv_geom(50, 6, 5, 10, 3, 3, 1, 1, 1, 1), 2), 2, 3},  // 2 groups of 225 rows of k: two dcol blocks each
    {grouped(conv_geom(8, 9, 9, 16, 3, 3, 2, 2, 1, 1), 8), 1, 5},   // depthwise, channel multiplier 2, stride 2
    {grouped(conv_geom(6, 1, 40, 9, 1, 5, 1, 1, 0, 2), 3), 2, 4},   // conv1d ([C, 1, L]), 3 groups of 2 -> 3
    {conv_geom(3, 20, 19, 7, 3, 3, 1, 1, 1, 1), 1, 2},   // P = 380: the packers' runs of 128 pixels start mid-row
    {conv_geom(5, 9, 3, 6, 3, 3, 1, 1, 0, 0), 2, 5},     // w_out = 1: a run per pixel, samples inside one panel
    {dilated(conv_geom(3, 9, 11, 14, 3, 3, 1, 1, 2, 2), 2, 2), 2, 3},  // dilation: taps past the padding
    {dilated(conv_geom(2, 12, 13, 5, 3, 2, 2, 3, 1, 2), 2, 3), 1, 4},  // dilation with strides, non-square
    {grouped(dilated(conv_geom(4, 8, 9, 6, 3, 3, 1, 1, 2, 1), 2, 1), 2), 2, 2},  // groups with dilation
    {conv_geom(2, 12, 11, 64, 3, 3, 1, 1, 1, 1), 2, 3},  // K = 18 < c_out = 64: the weight gradient's GEMM transposed
    {grouped(conv_geom(4, 7, 9, 54, 3, 3, 1, 1, 1, 1), 2), 1, 3},  // transposed per group, c_out_g = 27: N edge tiles
    {conv_geom(8, 32, 32, 64, 3, 3, 1, 1, 1, 1), 1, 1},  // a dinp block big enough to split over 2 threads by channel
};

template <bool B16>
void run_case(const Case &c, int threads, remat_simd path) {
    const remat_conv_geom &g = c.g;
    const int64_t K = g.c_in / remat_conv_groups(&g) * g.kh * g.kw, P = g.h_out * g.w_out, rows = c.T * c.N;
    const int64_t ie = g.c_in * g.h_in * g.w_in, oe = g.c_out * P;
    F x = uniform(rows * ie, -1, 1, 11), w = uniform(g.c_out * K, -1, 1, 12), b = uniform(g.c_out, -1, 1, 13);
    F dy = uniform(rows * oe, -1, 1, 14), dx0 = uniform(rows * ie, -0.5f, 0.5f, 15);
    F dw0 = uniform(g.c_out * K, -0.25f, 0.25f, 16), db0 = uniform(g.c_out, -0.25f, 0.25f, 17);
    if (B16) x = round16(x), w = round16(w), b = round16(b), dy = round16(dy), dx0 = round16(dx0);
    const Def d = definition(g, c.T, c.N, x, w, b, dy, dx0, dw0, db0, B16);
    remat_ref_set_threads(threads);
    ASSERT_EQ(remat_ref_simd_set(path), 0);
    F fws((size_t)remat_ref_conv2d_forward_ws_elems(&g) + 1), bws((size_t)remat_ref_conv2d_backward_ws_elems(&g));
    F out, dx, dw = dw0, db = db0;
    if (B16) {
        std::vector<uint16_t> o16((size_t)(rows * oe)), x16 = to16(x), w16 = to16(w), b16v = to16(b), dy16 = to16(dy),
                                                       dx16 = to16(dx0);
        remat_ref_conv2d_forward_bf16(o16.data(), x16.data(), w16.data(), b16v.data(), fws.data(), rows, &g);
        remat_ref_conv2d_backward_bf16(dx16.data(), dw.data(), db.data(), dy16.data(), x16.data(), w16.data(),
                                       bws.data(), c.T, c.N, &g);
        out = from16(o16), dx = from16(dx16);
    } else {
        out.resize((size_t)(rows * oe)), dx = dx0;
        remat_ref_conv2d_forward(out.data(), x.data(), w.data(), b.data(), fws.data(), rows, &g);
        remat_ref_conv2d_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), bws.data(), c.T, c.N,
                                  &g);
    }
    remat_ref_set_threads(1);
    const std::string where = std::string(remat_ref_simd_name(path)) + " threads " + std::to_string(threads) +
                              " c_in " + std::to_string(g.c_in) + " groups " + std::to_string(remat_conv_groups(&g)) +
                              " P " + std::to_string(P) + (B16 ? " bf16" : " f32");
    expect_bits(out, d.out, "forward", where);
    expect_bits(dx, d.dx, "input gradient", where);
    expect_bits(dw, d.dw, "weight gradient", where);
    expect_bits(db, d.db, "bias gradient", where);
}

TEST(ConvImplicit, EveryPathAndThreadCountGivesTheContractsBits) {
    const remat_simd before = remat_ref_simd_get();
    int paths = 0;
    for (int p = 0; p < REMAT_SIMD_COUNT; p++) {
        if (!remat_ref_simd_supported((remat_simd)p)) continue;
        paths++;
        for (const Case &c : kCases)
            for (int threads = 1; threads <= 3; threads++) {
                run_case<false>(c, threads, (remat_simd)p);
                run_case<true>(c, threads, (remat_simd)p);
            }
    }
    remat_ref_simd_set(before);
    EXPECT_GE(paths, 1);
}

TEST(ConvImplicit, WorkspaceIsSmallerThanTheColumnMatrix) {
    // The workspaces of the implicit GEMM against an explicit im2col's (col | dcol | P_t | bias).
    for (const Case &c : kCases) {
        EXPECT_EQ(remat_ref_conv2d_forward_ws_elems(&c.g), 0);
        EXPECT_LT(remat_ref_conv2d_backward_ws_elems(&c.g), remat_conv2d_im2col_backward_ws_elems(&c.g));
    }
    // a vgg-dvs layer (128 channels, 3x3, 64x64): dcol of 22 channels, P_t and the bias partial
    const remat_conv_geom g = conv_geom(128, 64, 64, 128, 3, 3, 1, 1, 1, 1);
    EXPECT_EQ(remat_ref_conv2d_backward_ws_elems(&g), 22 * 9 * 4096 + 128 * 1152 + 128);
    EXPECT_EQ(remat_conv2d_im2col_backward_ws_elems(&g), 2 * 1152 * 4096 + 128 * 1152 + 128);
    // depthwise: K = 9; dcol of one channel, P_t the weight's 128 x 9
    const remat_conv_geom dw = grouped(g, 128);
    EXPECT_EQ(remat_ref_conv2d_backward_ws_elems(&dw), 9 * 4096 + 128 * 9 + 128);
    EXPECT_EQ(remat_conv2d_im2col_backward_ws_elems(&dw), 2 * 9 * 4096 + 128 * 9 + 128);
}

}  // namespace
