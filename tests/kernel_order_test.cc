// kernel_order_test.cc - the fast paths of the reference backend's non-GEMM kernels
// (batch norm's grouped sums, pooling's interior windows, the optimisers' one pass, the
// fills' per-path copies) against plain loops written here in the contract's order
// (docs/determinism.md), bit for bit, on every SIMD path this CPU runs, for float and
// bf16 storage: odd sizes (group and vector tails), +-0, infinities, equal values (zero
// variance, pooling ties) and NaN (where a NaN comes out, the other side must give a NaN
// there too; its payload is not part of the contract).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/base/bf16.h"
#include "core/base/rng.h"
#include "core/ref/ref_kernels.h"
#include "core/ref/simd.h"

namespace {

typedef std::vector<float> F;
typedef std::vector<uint16_t> H;

F Rand(size_t n, unsigned seed, float lo, float hi) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> u(lo, hi);
    F v(n);
    for (auto &x : v) x = u(g);
    return v;
}

H To16(const F &v) {
    H o(v.size());
    for (size_t i = 0; i < v.size(); i++) o[i] = remat_f32_to_bf16(v[i]);
    return o;
}
F From16(const H &v) {
    F o(v.size());
    for (size_t i = 0; i < v.size(); i++) o[i] = remat_bf16_to_f32(v[i]);
    return o;
}

// Bit-equal, or NaN on both sides.
::testing::AssertionResult SameBits(const char *what, const F &got, const F &want) {
    if (got.size() != want.size()) return ::testing::AssertionFailure() << what << ": size";
    for (size_t i = 0; i < got.size(); i++) {
        if (std::isnan(got[i]) && std::isnan(want[i])) continue;
        if (std::memcmp(&got[i], &want[i], 4) != 0)
            return ::testing::AssertionFailure() << what << "[" << i << "]: " << got[i] << " != " << want[i];
    }
    return ::testing::AssertionSuccess();
}

// Runs body on every SIMD path this CPU supports.
void OnEveryPath(const std::function<void(const char *)> &body) {
    const remat_simd before = remat_ref_simd_get();
    for (int p = 0; p < REMAT_SIMD_COUNT; p++) {
        if (!remat_ref_simd_supported((remat_simd)p)) continue;
        ASSERT_EQ(remat_ref_simd_set((remat_simd)p), 0);
        body(remat_ref_simd_name((remat_simd)p));
    }
    remat_ref_simd_set(before);
}

// ---------------------------------------------------------------- batch norm

// The contract's batch norm over [rows, C, hw], channel by channel, positions (row,
// then pixel) ascending, sums in double; `st` is the storage rounding (identity for
// float, bf16 rounding for bf16).
void BnForwardRef(F *out, F *mean, F *rstd, F *rm, F *rv, const F &x, const F &w, const F &b, int64_t rows, int64_t C,
                  int64_t hw, float momentum, double eps, float (*st)(float)) {
    const int64_t n = rows * hw;
    for (int64_t c = 0; c < C; c++) {
        double sum = 0.0, sq = 0.0;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t p = 0; p < hw; p++) sum += (double)x[(r * C + c) * hw + p];
        const double mu = n > 0 ? sum / (double)n : 0.0;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t p = 0; p < hw; p++) {
                const double d = (double)x[(r * C + c) * hw + p] - mu;
                sq += d * d;
            }
        const double var = n > 0 ? sq / (double)n : 0.0;
        const float m = (float)mu, rs = (float)(1.0 / std::sqrt(var + eps));
        (*mean)[c] = m, (*rstd)[c] = rs;
        (*rm)[c] = (1.0f - momentum) * (*rm)[c] + momentum * m;
        const double unbiased = n > 1 ? sq / (double)(n - 1) : var;
        (*rv)[c] = (1.0f - momentum) * (*rv)[c] + momentum * (float)unbiased;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t p = 0; p < hw; p++) {
                const int64_t e = (r * C + c) * hw + p;
                const float t1 = x[e] - m, t2 = t1 * rs, t3 = t2 * w[c];
                (*out)[e] = st(t3 + b[c]);
            }
    }
}

void BnBackwardRef(F *dx, F *dw, F *db, const F &dy, const F &x, const F &w, const F &mean, const F &rstd, int64_t rows,
                   int64_t C, int64_t hw, float (*st)(float)) {
    const int64_t n = rows * hw;
    for (int64_t c = 0; c < C; c++) {
        const float m = mean[c], rs = rstd[c];
        double sdy = 0.0, sdyx = 0.0;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t p = 0; p < hw; p++) {
                const int64_t e = (r * C + c) * hw + p;
                const float d = x[e] - m, xhat = d * rs;
                sdy += (double)dy[e];
                sdyx += (double)dy[e] * (double)xhat;
            }
        (*db)[c] = (*db)[c] + (float)sdy;
        (*dw)[c] = (*dw)[c] + (float)sdyx;
        const float mdy = (float)(sdy / (double)n), mdyx = (float)(sdyx / (double)n);
        const float k = w[c] * rs;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t p = 0; p < hw; p++) {
                const int64_t e = (r * C + c) * hw + p;
                const float d = x[e] - m, xhat = d * rs;
                const float t1 = dy[e] - mdy, t2 = xhat * mdyx, t3 = t1 - t2, t4 = t3 * k;
                (*dx)[e] = st((*dx)[e] + t4);
            }
    }
}

float Same(float v) { return v; }
float Round16(float v) { return remat_bf16_round(v); }

// x with the special values in a few channels: channel 1 all equal (zero variance),
// channel 2 +-0 only, channel 3 one +inf, channel 4 one NaN, channel 5 huge values.
F BnInput(int64_t rows, int64_t C, int64_t hw, unsigned seed) {
    F x = Rand(rows * C * hw, seed, -2.0f, 3.0f);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t p = 0; p < hw; p++) {
            auto at = [&](int64_t c) -> float & { return x[(r * C + c) * hw + p]; };
            if (C > 1) at(1) = 0.75f;
            if (C > 2) at(2) = (p + r) % 2 ? -0.0f : 0.0f;
            if (C > 5) at(5) = at(5) * 3e37f;
        }
    if (C > 3) x[(0 * C + 3) * hw + hw / 2] = INFINITY;
    if (C > 4) x[((rows - 1) * C + 4) * hw + hw - 1] = NAN;
    return x;
}

struct BnShape {
    int64_t rows, C, hw;
};
// hw: below one vector, vector tails, exact vectors; C: below a group, group tails.
const BnShape kBnShapes[] = {{3, 19, 37}, {2, 8, 8}, {1, 5, 3}, {4, 17, 16}, {2, 24, 49}, {3, 9, 2}, {1, 16, 1}};

TEST(KernelOrder, BatchNormFloatMatchesPerChannelLoops) {
    for (const BnShape &sh : kBnShapes) {
        const int64_t n = sh.rows * sh.C * sh.hw;
        const F x = BnInput(sh.rows, sh.C, sh.hw, 11), dy = Rand(n, 12, -1, 1), w = Rand(sh.C, 13, 0.5f, 1.5f),
                b = Rand(sh.C, 14, -0.5f, 0.5f), dx0 = Rand(n, 15, -1, 1);
        F out(n), mean(sh.C), rstd(sh.C), rm(sh.C, 0.1f), rv(sh.C, 0.9f), dx = dx0, dw(sh.C, 0.25f), db(sh.C, -0.25f);
        BnForwardRef(&out, &mean, &rstd, &rm, &rv, x, w, b, sh.rows, sh.C, sh.hw, 0.1f, 1e-5, Same);
        BnBackwardRef(&dx, &dw, &db, dy, x, w, mean, rstd, sh.rows, sh.C, sh.hw, Same);
        OnEveryPath([&](const char *path) {
            F o(n), mu(sh.C), rs(sh.C), m1(sh.C, 0.1f), v1(sh.C, 0.9f), gx = dx0, gw(sh.C, 0.25f), gb(sh.C, -0.25f);
            remat_ref_batchnorm_forward(o.data(), mu.data(), rs.data(), m1.data(), v1.data(), x.data(), w.data(),
                                        b.data(), sh.rows, sh.C, sh.hw, 0.1f, 1e-5);
            remat_ref_batchnorm_backward(gx.data(), gw.data(), gb.data(), dy.data(), x.data(), w.data(), mu.data(),
                                         rs.data(), sh.rows, sh.C, sh.hw);
            const std::string at = std::string(path) + " " + std::to_string(sh.rows) + "x" + std::to_string(sh.C) +
                                   "x" + std::to_string(sh.hw);
            EXPECT_TRUE(SameBits(("out " + at).c_str(), o, out));
            EXPECT_TRUE(SameBits(("mean " + at).c_str(), mu, mean));
            EXPECT_TRUE(SameBits(("rstd " + at).c_str(), rs, rstd));
            EXPECT_TRUE(SameBits(("running_mean " + at).c_str(), m1, rm));
            EXPECT_TRUE(SameBits(("running_var " + at).c_str(), v1, rv));
            EXPECT_TRUE(SameBits(("dinp " + at).c_str(), gx, dx));
            EXPECT_TRUE(SameBits(("dweight " + at).c_str(), gw, dw));
            EXPECT_TRUE(SameBits(("dbias " + at).c_str(), gb, db));
        });
    }
}

TEST(KernelOrder, BatchNormBf16MatchesPerChannelLoops) {
    for (const BnShape &sh : kBnShapes) {
        const int64_t n = sh.rows * sh.C * sh.hw;
        const H x16 = To16(BnInput(sh.rows, sh.C, sh.hw, 21)), dy16 = To16(Rand(n, 22, -1, 1)),
                dx16 = To16(Rand(n, 25, -1, 1));
        const F x = From16(x16), dy = From16(dy16), w = Rand(sh.C, 23, 0.5f, 1.5f), b = Rand(sh.C, 24, -0.5f, 0.5f);
        F out(n), mean(sh.C), rstd(sh.C), rm(sh.C, 0.1f), rv(sh.C, 0.9f), dx = From16(dx16), dw(sh.C, 0.25f),
            db(sh.C, -0.25f);
        BnForwardRef(&out, &mean, &rstd, &rm, &rv, x, w, b, sh.rows, sh.C, sh.hw, 0.1f, 1e-5, Round16);
        BnBackwardRef(&dx, &dw, &db, dy, x, w, mean, rstd, sh.rows, sh.C, sh.hw, Round16);
        OnEveryPath([&](const char *path) {
            H o(n), gx = dx16;
            F mu(sh.C), rs(sh.C), m1(sh.C, 0.1f), v1(sh.C, 0.9f), gw(sh.C, 0.25f), gb(sh.C, -0.25f);
            remat_ref_batchnorm_forward_bf16(o.data(), mu.data(), rs.data(), m1.data(), v1.data(), x16.data(),
                                             w.data(), b.data(), sh.rows, sh.C, sh.hw, 0.1f, 1e-5);
            remat_ref_batchnorm_backward_bf16(gx.data(), gw.data(), gb.data(), dy16.data(), x16.data(), w.data(),
                                              mu.data(), rs.data(), sh.rows, sh.C, sh.hw);
            const std::string at = std::string(path) + " bf16 " + std::to_string(sh.C) + "x" + std::to_string(sh.hw);
            EXPECT_TRUE(SameBits(("out " + at).c_str(), From16(o), out));
            EXPECT_TRUE(SameBits(("mean " + at).c_str(), mu, mean));
            EXPECT_TRUE(SameBits(("rstd " + at).c_str(), rs, rstd));
            EXPECT_TRUE(SameBits(("running_var " + at).c_str(), v1, rv));
            EXPECT_TRUE(SameBits(("dinp " + at).c_str(), From16(gx), dx));
            EXPECT_TRUE(SameBits(("dweight " + at).c_str(), gw, dw));
            EXPECT_TRUE(SameBits(("dbias " + at).c_str(), gb, db));
        });
    }
}

// ---------------------------------------------------------------- pooling

remat_conv_geom PoolGeom(int64_t c, int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                         int64_t pw) {
    remat_conv_geom g{};
    g.c_in = c, g.c_out = c, g.h_in = h, g.w_in = w, g.kh = kh, g.kw = kw, g.sh = sh, g.sw = sw, g.ph = ph, g.pw = pw;
    g.h_out = (h + 2 * ph - kh) / sh + 1;
    g.w_out = (w + 2 * pw - kw) / sw + 1;
    return g;
}

// The contract's pooling, one output at a time in (plane, oy, ox) order, each window in
// row-major order with its bounds checks: the first maximum (strict >) and its
// position; the average's in-bounds sum from +0 over kh * kw.
int64_t ArgmaxRef(const F &x, int64_t base, const remat_conv_geom &g, int64_t oy, int64_t ox) {
    float best = -INFINITY;
    int64_t arg = -1;
    for (int64_t ky = 0; ky < g.kh; ky++)
        for (int64_t kx = 0; kx < g.kw; kx++) {
            const int64_t iy = oy * g.sh - g.ph + ky, ix = ox * g.sw - g.pw + kx;
            if (iy < 0 || iy >= g.h_in || ix < 0 || ix >= g.w_in) continue;
            const float v = x[base + iy * g.w_in + ix];
            if (arg < 0 || v > best) best = v, arg = iy * g.w_in + ix;
        }
    return arg;
}

void PoolRef(F *y, F *dx, const F &x, const F &dy, int64_t rows, const remat_conv_geom &g, bool max, float (*st)(float)) {
    const int64_t ip = g.h_in * g.w_in, op = g.h_out * g.w_out;
    const float div = (float)(g.kh * g.kw);
    for (int64_t q = 0; q < rows * g.c_in; q++)
        for (int64_t oy = 0; oy < g.h_out; oy++)
            for (int64_t ox = 0; ox < g.w_out; ox++) {
                const int64_t o = q * op + oy * g.w_out + ox;
                if (max) {
                    const int64_t a = ArgmaxRef(x, q * ip, g, oy, ox);
                    (*y)[o] = st(x[q * ip + a]);
                    (*dx)[q * ip + a] = (*dx)[q * ip + a] + dy[o];
                    continue;
                }
                float s = 0.0f;
                const float d = dy[o] / div;
                for (int64_t ky = 0; ky < g.kh; ky++)
                    for (int64_t kx = 0; kx < g.kw; kx++) {
                        const int64_t iy = oy * g.sh - g.ph + ky, ix = ox * g.sw - g.pw + kx;
                        if (iy < 0 || iy >= g.h_in || ix < 0 || ix >= g.w_in) continue;
                        s = s + x[q * ip + iy * g.w_in + ix];
                        (*dx)[q * ip + iy * g.w_in + ix] = (*dx)[q * ip + iy * g.w_in + ix] + d;
                    }
                (*y)[o] = st(s / div);
            }
}

// Spikes (ties everywhere), +-0, and in a few planes inf, -inf and NaN.
F PoolInput(int64_t n, unsigned seed) {
    F x = Rand(n, seed, -2.0f, 2.0f);
    for (int64_t i = 0; i < n; i++) {
        if (i % 3 == 0) x[i] = (i / 3) % 2 ? 1.0f : 0.0f;
        if (i % 7 == 1) x[i] = (i / 7) % 2 ? -0.0f : 0.0f;
    }
    if (n > 40) x[5] = INFINITY, x[17] = -INFINITY, x[33] = NAN, x[n - 2] = NAN;
    return x;
}

// The shipped models' poolings (2x2 stride 2; 3x3 stride 2 padding 1), overlapping
// windows, windows narrower than the stride, padding wider than the stride, non-square
// kernels, odd sizes, rows longer than one chunk of interior columns.
const remat_conv_geom kPoolGeoms[] = {
    PoolGeom(3, 8, 8, 2, 2, 2, 2, 0, 0),   PoolGeom(2, 9, 11, 2, 2, 2, 2, 0, 0), PoolGeom(2, 13, 15, 3, 3, 2, 2, 1, 1),
    PoolGeom(2, 7, 9, 3, 3, 1, 1, 1, 1),   PoolGeom(1, 6, 10, 2, 3, 1, 2, 1, 1), PoolGeom(2, 5, 300, 3, 3, 2, 2, 1, 1),
    PoolGeom(1, 4, 290, 2, 2, 2, 2, 0, 0), PoolGeom(1, 3, 3, 3, 3, 1, 1, 1, 1),  PoolGeom(2, 10, 9, 4, 3, 3, 2, 2, 1),
    PoolGeom(1, 1, 1, 1, 1, 1, 1, 0, 0),   PoolGeom(2, 9, 13, 2, 2, 3, 3, 0, 0), PoolGeom(1, 7, 11, 1, 1, 2, 2, 0, 0),
    PoolGeom(1, 6, 9, 3, 3, 3, 3, 1, 1),
};

TEST(KernelOrder, PoolingMatchesWindowLoops) {
    const int64_t rows = 2;
    for (const remat_conv_geom &g : kPoolGeoms)
        for (bool max : {true, false}) {
            const int64_t ni = rows * g.c_in * g.h_in * g.w_in, no = rows * g.c_in * g.h_out * g.w_out;
            const F x = PoolInput(ni, 31), dy = Rand(no, 32, -1, 1), dx0 = Rand(ni, 33, -1, 1);
            F y(no), dx = dx0;
            PoolRef(&y, &dx, x, dy, rows, g, max, Same);
            const H x16 = To16(x), dy16 = To16(dy), dx016 = To16(dx0);
            F y16r(no);
            {
                // bf16: the forward's values rounded; the backward gathers per input element,
                // in the same order of additions, rounded once (pool.c).
                F unused = From16(dx016);
                PoolRef(&y16r, &unused, From16(x16), From16(dy16), rows, g, max, Round16);
            }
            OnEveryPath([&](const char *path) {
                const std::string at = std::string(path) + (max ? " max " : " avg ") + std::to_string(g.h_in) + "x" +
                                       std::to_string(g.w_in) + " k" + std::to_string(g.kh) + "x" +
                                       std::to_string(g.kw) + " s" + std::to_string(g.sh) + "," +
                                       std::to_string(g.sw) + " p" + std::to_string(g.ph) + "," + std::to_string(g.pw);
                F got(no), gdx = dx0;
                if (max) {
                    remat_ref_maxpool2d_forward(got.data(), x.data(), rows, &g);
                    remat_ref_maxpool2d_backward(gdx.data(), dy.data(), x.data(), rows, &g);
                } else {
                    remat_ref_avgpool2d_forward(got.data(), x.data(), rows, &g);
                    remat_ref_avgpool2d_backward(gdx.data(), dy.data(), rows, &g);
                }
                EXPECT_TRUE(SameBits(("out " + at).c_str(), got, y));
                EXPECT_TRUE(SameBits(("dinp " + at).c_str(), gdx, dx));
                H got16(no);
                if (max) remat_ref_maxpool2d_forward_bf16(got16.data(), x16.data(), rows, &g);
                else remat_ref_avgpool2d_forward_bf16(got16.data(), x16.data(), rows, &g);
                EXPECT_TRUE(SameBits(("out bf16 " + at).c_str(), From16(got16), y16r));
            });
        }
}

// ---------------------------------------------------------------- optimisers

// PyTorch's SGD (momentum buffer first, then the parameter) and single-tensor Adam,
// element by element.
TEST(KernelOrder, OptimisersMatchElementLoops) {
    const int64_t n = 3 * 4096 + 37;
    F p0 = Rand(n, 41, -1, 1), g = Rand(n, 42, -1, 1), b0 = Rand(n, 43, -1, 1), v0 = Rand(n, 44, 0, 1);
    p0[3] = -0.0f, g[3] = 0.0f, g[5] = INFINITY, g[7] = NAN, b0[11] = -INFINITY;
    const float lr = 0.05f, mom = 0.9f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    for (int mode = 0; mode < 3; mode++) {  // no momentum, first step, later step
        F p = p0, b = b0;
        for (int64_t i = 0; i < n; i++) {
            if (mode == 0) {
                const float t = lr * g[i];
                p[i] = p[i] - t;
                continue;
            }
            if (mode == 1) b[i] = g[i];
            else {
                const float t = mom * b[i];
                b[i] = t + g[i];
            }
            const float t = lr * b[i];
            p[i] = p[i] - t;
        }
        OnEveryPath([&](const char *path) {
            F gp = p0, gb = b0;
            remat_ref_sgd_update(gp.data(), mode ? gb.data() : nullptr, g.data(), lr, mom, mode == 1, n);
            const std::string at = std::string(path) + " sgd mode " + std::to_string(mode);
            EXPECT_TRUE(SameBits(("param " + at).c_str(), gp, p));
            EXPECT_TRUE(SameBits(("buffer " + at).c_str(), gb, mode ? b : b0));
        });
    }
    for (int step : {1, 7}) {
        const double bc1 = 1.0 - std::pow((double)b1, (double)step), bc2 = 1.0 - std::pow((double)b2, (double)step);
        const float step_size = (float)((double)lr / bc1), bc2s = (float)std::sqrt(bc2);
        F p = p0, m = b0, v = v0;
        for (int64_t i = 0; i < n; i++) {
            const float m1 = m[i] * b1, m2 = (1.0f - b1) * g[i];
            m[i] = m1 + m2;
            const float gg = g[i] * g[i], v1 = v[i] * b2, v2 = (1.0f - b2) * gg;
            v[i] = v1 + v2;
            const float denom = std::sqrt(v[i]) / bc2s + eps;
            const float upd = step_size * (m[i] / denom);
            p[i] = p[i] - upd;
        }
        OnEveryPath([&](const char *path) {
            F gp = p0, gm = b0, gv = v0;
            remat_ref_adam_update(gp.data(), gm.data(), gv.data(), g.data(), lr, b1, b2, eps, step, n);
            const std::string at = std::string(path) + " adam step " + std::to_string(step);
            EXPECT_TRUE(SameBits(("param " + at).c_str(), gp, p));
            EXPECT_TRUE(SameBits(("m " + at).c_str(), gm, m));
            EXPECT_TRUE(SameBits(("v " + at).c_str(), gv, v));
        });
    }
}

// ---------------------------------------------------------------- fills

// Element i of every fill is its own draw, remat_rng_uniform(seed, stream, key, i):
// the same on every path and thread count.
TEST(KernelOrder, FillsMatchElementLoops) {
    const int64_t n = 5 * 32768 + 19;
    const uint64_t seed = 7, stream = 3, key = 11;
    F uni(n), ber(n), cnt(n);
    for (int64_t i = 0; i < n; i++) {
        const float u = remat_rng_uniform(seed, stream, key, (uint64_t)i);
        const float span = 0.5f - -1.5f, t = span * u;
        uni[i] = -1.5f + t;
        ber[i] = u < 0.3f ? 1.0f : 0.0f;
        cnt[i] = remat_count_of_uniform(u, 5);
    }
    OnEveryPath([&](const char *path) {
        for (int threads : {1, 3}) {
            remat_ref_set_threads(threads);
            const std::string at = std::string(path) + " threads " + std::to_string(threads);
            F a(n), b(n), c(n);
            H a16(n), b16(n), c16(n);
            remat_ref_fill_uniform(a.data(), n, -1.5f, 0.5f, seed, stream, key);
            remat_ref_fill_bernoulli(b.data(), n, 0.3f, seed, stream, key);
            remat_ref_fill_counts(c.data(), n, 5, seed, stream, key);
            remat_ref_fill_uniform_bf16(a16.data(), n, -1.5f, 0.5f, seed, stream, key);
            remat_ref_fill_bernoulli_bf16(b16.data(), n, 0.3f, seed, stream, key);
            remat_ref_fill_counts_bf16(c16.data(), n, 5, seed, stream, key);
            EXPECT_TRUE(SameBits(("uniform " + at).c_str(), a, uni));
            EXPECT_TRUE(SameBits(("bernoulli " + at).c_str(), b, ber));
            EXPECT_TRUE(SameBits(("counts " + at).c_str(), c, cnt));
            EXPECT_TRUE(SameBits(("uniform bf16 " + at).c_str(), From16(a16), From16(To16(uni))));
            EXPECT_TRUE(SameBits(("bernoulli bf16 " + at).c_str(), From16(b16), ber));
            EXPECT_TRUE(SameBits(("counts bf16 " + at).c_str(), From16(c16), cnt));
        }
        remat_ref_set_threads(1);
    });
}

}  // namespace
