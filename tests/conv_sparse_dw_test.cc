// conv_sparse_dw_test.cc - the conv2d weight gradient that skips the input's zeros
// (core/ref/conv_sparse_dw.c) against the dense implicit GEMM, bit for bit (memcmp):
// inputs of density 0, 1, 15, 50 and 100 % with +0 and -0 zeros, subnormals and small
// integers (exact cancellations), products that underflow to -0, inf and NaN in the
// input (computed) and in dout (the dense path), strides, padding, dilation, groups,
// odd and wide channel counts, several bands per sample, T > 1 and N > 1, every SIMD
// path this CPU runs and 1, 2 and 3 threads. The whole backward (dinp, dweight, dbias)
// is compared; the entry point is also called directly, to see that it ran.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/ref/conv_sparse_dw.h"
#include "core/ref/ref_kernels.h"
#include "core/ref/simd.h"
#include "core/ref/sparse_gemm.h"
#include "tests/testutil.h"

using remat_test::conv_geom;
using remat_test::dilated;
using remat_test::grouped;

namespace {

typedef std::vector<float> F;

struct Rng {
    uint32_t s;
    explicit Rng(uint32_t seed) : s(seed * 2654435761u + 12345u) {}
    uint32_t next() { return s = s * 1664525u + 1013904223u; }
    float unit() { return (float)(next() >> 8) / (float)(1 << 24); }  // [0, 1)
};

// An input of the given density: zeros +0 or -0; nonzeros mostly uniform in [-1, 1),
// some small integers (cancellations) and some subnormals.
F sparse_input(int64_t n, double density, uint32_t seed) {
    Rng r(seed);
    F v((size_t)n);
    for (auto &x : v) {
        if (r.unit() >= density) {
            x = (r.next() & 256) ? -0.0f : 0.0f;
            continue;
        }
        const uint32_t kind = r.next() >> 24;
        if (kind < 20) x = (kind & 1) ? 1e-40f : -3e-41f;        // subnormal
        else if (kind < 60) x = (float)((int)(kind % 5) - 2) + (kind % 5 == 2 ? 1.0f : 0.0f);  // +-1, +-2, 1
        else x = 2.0f * r.unit() - 1.0f;
    }
    return v;
}

// dout: uniform in [-1, 1), some +-0 and some tiny values (their products with the
// subnormal inputs underflow to +-0).
F dense_dout(int64_t n, uint32_t seed) {
    Rng r(seed);
    F v((size_t)n);
    for (auto &x : v) {
        const uint32_t kind = r.next() >> 24;
        if (kind < 16) x = (kind & 1) ? -0.0f : 0.0f;
        else if (kind < 30) x = (kind & 1) ? -1e-30f : 1e-30f;
        else if (kind < 40) x = (float)((int)(kind % 3) - 1);
        else x = 2.0f * r.unit() - 1.0f;
    }
    return v;
}

struct Out {
    F dx, dw, db;
};

struct Problem {
    remat_conv_geom g;
    int64_t T, N;
    F x, w, dy, dw0, db0;
    int64_t in_e() const { return g.c_in * g.h_in * g.w_in; }
    int64_t out_e() const { return g.c_out * g.h_out * g.w_out; }
};

Problem make(const remat_conv_geom &g, int64_t T, int64_t N, double density, uint32_t seed) {
    Problem p{g, T, N, {}, {}, {}, {}, {}};
    p.x = sparse_input(T * N * p.in_e(), density, seed);
    p.w = sparse_input(remat_test::conv_weight_elems(g), 1.0, seed + 1);
    p.dy = dense_dout(T * N * p.out_e(), seed + 2);
    p.dw0 = sparse_input(remat_test::conv_weight_elems(g), 0.7, seed + 3);
    p.db0 = sparse_input(g.c_out, 0.7, seed + 4);
    return p;
}

// The whole backward in sparse mode m (core/ref/sparse_gemm.h: DENSE, FORCE or AUTO).
Out backward(const Problem &p, remat_sparse_mode m) {
    Out o{F((size_t)(p.T * p.N * p.in_e()), 0.0f), p.dw0, p.db0};
    F ws((size_t)remat_ref_conv2d_backward_ws_elems(&p.g), 7.0f);
    const remat_sparse_mode before = remat_sparse_mode_set(m);
    remat_ref_conv2d_backward(o.dx.data(), o.dw.data(), o.db.data(), p.dy.data(), p.x.data(), p.w.data(), ws.data(),
                              p.T, p.N, &p.g);
    remat_sparse_mode_set(before);
    return o;
}

bool same_bits(const F &a, const F &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<remat_simd> paths() {
    std::vector<remat_simd> v;
    for (int p = 0; p < REMAT_SIMD_COUNT; p++)
        if (remat_ref_simd_supported((remat_simd)p)) v.push_back((remat_simd)p);
    return v;
}

struct Geo {
    const char *name;
    remat_conv_geom g;
    int64_t T, N;
};

std::vector<Geo> geometries() {
    return {
        {"3x3 odd channels", conv_geom(3, 9, 11, 5, 3, 1, 1), 2, 2},
        {"stride 2 pad 1", conv_geom(4, 10, 9, 6, 3, 2, 1), 1, 3},
        {"dilation 2", dilated(conv_geom(5, 12, 12, 7, 3, 1, 2), 2, 2), 2, 1},
        {"groups 3", grouped(conv_geom(6, 8, 8, 9, 3, 1, 1), 3), 2, 2},
        {"2x3 kernel, strides 1x2", conv_geom(3, 7, 13, 4, 2, 3, 1, 2, 0, 1), 3, 1},
        {"130 outputs, two bands", conv_geom(3, 20, 16, 130, 3, 1, 1), 2, 2},
        {"1x1 stride 2", conv_geom(8, 7, 7, 16, 1, 2, 0), 1, 2},
        // 130 x 64 floats of dout an output row: a step of 32 rows is 2 blocks (31 + 1 rows
        // of 256 Ki floats); K = 36 is two chunks of rows; 2 tiles of output channels
        {"several blocks and chunks", conv_geom(4, 16, 64, 130, 3, 1, 1), 1, 2},
    };
}

// The whole backward, sparse against dense, every density, path and thread count.
TEST(ConvSparseDw, MatchesDenseBitForBit) {
    const remat_simd before = remat_ref_simd_get();
    const double dens[] = {0.0, 0.01, 0.15, 0.5, 1.0};
    uint32_t seed = 1;
    for (const Geo &c : geometries())
        for (double d : dens) {
            const Problem p = make(c.g, c.T, c.N, d, seed++);
            remat_ref_set_threads(1);
            ASSERT_EQ(remat_ref_simd_set(REMAT_SIMD_SCALAR), 0);
            const Out ref = backward(p, REMAT_SPARSE_DENSE);
            for (remat_simd path : paths())
                for (int threads = 1; threads <= 3; threads++) {
                    remat_ref_set_threads(threads);
                    ASSERT_EQ(remat_ref_simd_set(path), 0);
                    const Out s = backward(p, REMAT_SPARSE_FORCE);
                    SCOPED_TRACE(std::string(c.name) + " density " + std::to_string(d) + " " +
                                 remat_ref_simd_name(path) + " threads " + std::to_string(threads));
                    EXPECT_TRUE(same_bits(s.dw, ref.dw));
                    EXPECT_TRUE(same_bits(s.dx, ref.dx));
                    EXPECT_TRUE(same_bits(s.db, ref.db));
                }
        }
    remat_ref_set_threads(1);
    remat_ref_simd_set(before);
}

// One step, one group, through the entry point: returns 1 (it ran) and adds the dense
// P_t's bits, or returns 0 where dout is not finite and leaves dweight alone.
struct Direct {
    int ran;
    F dw;
};
Direct direct(const Problem &p, remat_sparse_mode m) {
    const int64_t K = p.g.c_in * p.g.kh * p.g.kw;
    Direct r{0, p.dw0};
    F pw((size_t)(p.g.c_out * K), 5.0f);
    const remat_sparse_mode before = remat_sparse_mode_set(m);
    r.ran = remat_ref_conv2d_dw_sparse(r.dw.data(), pw.data(), p.dy.data(), p.x.data(), p.N, &p.g, p.in_e(),
                                       p.out_e());
    remat_sparse_mode_set(before);
    return r;
}
F dense_dw(const Problem &p) {  // the dense path's dweight after one step
    F dw = p.dw0;
    F ws((size_t)remat_ref_conv2d_backward_ws_elems(&p.g));
    const remat_sparse_mode before = remat_sparse_mode_set(REMAT_SPARSE_DENSE);
    remat_ref_conv2d_backward(nullptr, dw.data(), nullptr, p.dy.data(), p.x.data(), p.w.data(), ws.data(), 1, p.N,
                              &p.g);
    remat_sparse_mode_set(before);
    return dw;
}

TEST(ConvSparseDw, EntryPointRunsAndMatches) {
    const remat_conv_geom g = conv_geom(5, 9, 10, 11, 3, 1, 1);
    for (double d : {0.0, 0.01, 0.15, 0.5, 1.0}) {
        const Problem p = make(g, 1, 2, d, 100 + (uint32_t)(d * 100));
        for (int threads = 1; threads <= 3; threads++) {
            remat_ref_set_threads(threads);
            const Direct r = direct(p, REMAT_SPARSE_FORCE);
            EXPECT_EQ(r.ran, 1) << "density " << d;
            EXPECT_TRUE(same_bits(r.dw, dense_dw(p))) << "density " << d << " threads " << threads;
        }
    }
    remat_ref_set_threads(1);
    // the automatic choice: a 15 % input goes sparse, a 50 % one (over the 30 %
    // threshold) dense, as does any input in DENSE mode
    EXPECT_EQ(direct(make(g, 1, 2, 0.15, 8), REMAT_SPARSE_AUTO).ran, 1);
    const Problem p = make(g, 1, 2, 0.5, 7);
    EXPECT_EQ(direct(p, REMAT_SPARSE_AUTO).ran, 0);
    EXPECT_EQ(direct(p, REMAT_SPARSE_DENSE).ran, 0);
}

// A product that underflows to -0 (a tiny dout times a subnormal input): the sparse
// chain alone would end at -0 where the dense chain's later +0 terms give +0; those
// elements are recomputed.
TEST(ConvSparseDw, UnderflowToNegativeZeroRecomputed) {
    const remat_conv_geom g = conv_geom(2, 6, 6, 4, 3, 1, 1);
    Problem p = make(g, 1, 1, 0.0, 9);
    const int64_t P = g.h_out * g.w_out, plane = g.h_in * g.w_in;
    for (int64_t i = 0; i < p.out_e(); i++) p.dy[(size_t)i] = 0.5f;
    for (int64_t i = 0; i < P; i++) p.dy[(size_t)i] = 1e-30f;                    // output channel 0: tiny
    p.x[(size_t)(plane + 2 * g.w_in + 3)] = -1e-40f;                             // channel 1: one negative subnormal
    for (auto &v : p.dw0) v = -0.0f;  // -0 + P_t shows P_t's sign
    const Direct r = direct(p, REMAT_SPARSE_FORCE);
    EXPECT_EQ(r.ran, 1);
    const F ref = dense_dw(p);
    EXPECT_TRUE(same_bits(r.dw, ref));
    // the case is real: the sparse chain of (co 0, channel 1's taps) ends at -0, and the
    // dense chain at +0 for some of them (a later +0 term)
    const int64_t K = 2 * 9;
    int negzero_terms = 0;
    for (int64_t k = 9; k < K; k++) {
        uint32_t u;
        std::memcpy(&u, &ref[(size_t)k], sizeof u);
        negzero_terms += u == 0u;
    }
    EXPECT_GT(negzero_terms, 0);
}

// inf and NaN in the input are nonzero (computed: inf * 0 = NaN in both paths); in dout
// the sparse path must decline.
TEST(ConvSparseDw, NonFinite) {
    const remat_conv_geom g = conv_geom(3, 8, 8, 6, 3, 1, 1);
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    Problem p = make(g, 2, 2, 0.15, 21);
    p.x[5] = inf, p.x[77] = -inf, p.x[130] = nan;
    {
        const Out ref = backward(p, REMAT_SPARSE_DENSE);
        for (int threads = 1; threads <= 3; threads++) {
            remat_ref_set_threads(threads);
            const Out s = backward(p, REMAT_SPARSE_FORCE);
            EXPECT_TRUE(same_bits(s.dw, ref.dw));
            EXPECT_TRUE(same_bits(s.dx, ref.dx));
        }
        remat_ref_set_threads(1);
        Problem one = p;
        one.T = 1;
        EXPECT_EQ(direct(one, REMAT_SPARSE_FORCE).ran, 1);
    }
    p.dy[3] = inf;
    Problem one = p;
    one.T = 1;
    const Direct r = direct(one, REMAT_SPARSE_FORCE);
    EXPECT_EQ(r.ran, 0);
    EXPECT_TRUE(same_bits(r.dw, one.dw0));
    p.dy[3] = nan;
    EXPECT_EQ(direct(p, REMAT_SPARSE_FORCE).ran, 0);
    const Out ref = backward(p, REMAT_SPARSE_DENSE), s = backward(p, REMAT_SPARSE_FORCE);
    EXPECT_TRUE(same_bits(s.dw, ref.dw));
}

}  // namespace
