// conv_pool_test.cc - the convolutional layers of the reference backend (core/ref/conv.c,
// pool.c, batchnorm.c over [C, H, W]):
//  - forward against a double-precision direct loop, backward against central finite
//    differences of that loop (odd sizes, stride 2, padding, non-square kernels);
//  - time chunks, backward last-first, bit-identical to the full call (the determinism
//    contract: a recomputed chunk gives the rows the full call gave);
//  - max pooling ties (spikes tie constantly): the first maximum in row-major order
//    gets the gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "core/ref/ref_kernels.h"
#include "tests/testutil.h"

namespace {

using remat_test::bits_equal;
using remat_test::to_double;

using remat_test::conv_geom;
using remat_test::conv_weight_elems;
using remat_test::dilated;
using remat_test::grouped;

std::vector<float> Rand(size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = u(g);
    return v;
}


// Direct convolution in double (PyTorch's grouped formula: output channel o reads the
// cg = c_in / G input channels of its group, weight [c_out, cg, kh, kw]).
void ConvD(const remat_conv_geom& g, int64_t rows, const std::vector<double>& x, const std::vector<double>& w,
           const std::vector<double>* b, std::vector<double>* y) {
    y->assign(rows * g.c_out * g.h_out * g.w_out, 0.0);
    const int64_t G = remat_conv_groups(&g), cg = g.c_in / G;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t o = 0; o < g.c_out; o++)
            for (int64_t oy = 0; oy < g.h_out; oy++)
                for (int64_t ox = 0; ox < g.w_out; ox++) {
                    double s = b ? (*b)[o] : 0.0;
                    for (int64_t c = o / (g.c_out / G) * cg; c < (o / (g.c_out / G) + 1) * cg; c++)
                        for (int64_t ky = 0; ky < g.kh; ky++)
                            for (int64_t kx = 0; kx < g.kw; kx++) {
                                int64_t iy = oy * g.sh - g.ph + ky * remat_conv_dil_h(&g),
                                        ix = ox * g.sw - g.pw + kx * remat_conv_dil_w(&g);
                                if (iy < 0 || iy >= g.h_in || ix < 0 || ix >= g.w_in) continue;
                                s += w[((o * cg + c % cg) * g.kh + ky) * g.kw + kx] *
                                     x[((r * g.c_in + c) * g.h_in + iy) * g.w_in + ix];
                            }
                    (*y)[((r * g.c_out + o) * g.h_out + oy) * g.w_out + ox] = s;
                }
}

// Central differences of L over every element of p, against the float gradient got.
void CheckFd(const char* what, std::vector<double>& p, const std::function<double()>& L, const float* got,
             double rtol, double atol) {
    const double eps = 1e-3;
    for (size_t i = 0; i < p.size(); i++) {
        const double keep = p[i];
        p[i] = keep + eps;
        const double lp = L();
        p[i] = keep - eps;
        const double lm = L();
        p[i] = keep;
        const double fd = (lp - lm) / (2 * eps);
        ASSERT_NEAR(got[i], fd, atol + rtol * std::fabs(fd)) << what << " element " << i;
    }
}

const remat_conv_geom kConvCases[] = {
    conv_geom(3, 7, 6, 4, 3, 2, 2, 1, 1, 0),  // odd sizes, stride 2 in h, non-square kernel, padding in h
    conv_geom(2, 5, 5, 3, 1, 1, 1, 1, 0, 0),  // 1x1 (a downsample path, stride 1)
    conv_geom(1, 4, 5, 2, 3, 3, 1, 2, 1, 1),  // padding on both sides, stride 2 in w
    conv_geom(2, 6, 6, 3, 2, 2, 2, 2, 0, 0),  // stride = kernel
    dilated(conv_geom(2, 9, 8, 3, 3, 2, 1, 2, 2, 1), 2, 3),  // dilation 2 x 3 (PyTorch's Conv2d dilation)
    grouped(conv_geom(4, 6, 5, 6, 3, 3, 1, 1, 1, 1), 2),      // 2 groups: 2 input, 3 output channels each
    grouped(conv_geom(3, 5, 6, 6, 3, 2, 2, 1, 1, 0), 3),      // depthwise (groups = c_in), channel multiplier 2
    grouped(dilated(conv_geom(4, 1, 11, 4, 1, 3, 1, 2, 0, 1), 1, 2), 4),  // depthwise conv1d ([C, 1, L]), dilated
};

TEST(Conv2d, ForwardAndBackwardMatchFiniteDifferences) {
    for (const remat_conv_geom& g : kConvCases) {
        SCOPED_TRACE(testing::Message() << "c_in " << g.c_in << " " << g.h_in << "x" << g.w_in << " k " << g.kh
                                        << "x" << g.kw << " s " << g.sh << "," << g.sw << " p " << g.ph << ","
                                        << g.pw << " groups " << remat_conv_groups(&g));
        const int64_t T = 2, N = 3, rows = T * N;
        const int64_t in_e = g.c_in * g.h_in * g.w_in, out_e = g.c_out * g.h_out * g.w_out;
        auto x = Rand(rows * in_e, 1), w = Rand(conv_weight_elems(g), 2), b = Rand(g.c_out, 3);
        auto gy = Rand(rows * out_e, 4);
        std::vector<float> y(rows * out_e), ws(remat_ref_conv2d_forward_ws_elems(&g));
        remat_ref_conv2d_forward(y.data(), x.data(), w.data(), b.data(), ws.data(), rows, &g);
        auto xd = to_double(x), wd = to_double(w), bd = to_double(b);
        std::vector<double> yd;
        ConvD(g, rows, xd, wd, &bd, &yd);
        for (size_t i = 0; i < y.size(); i++) ASSERT_NEAR(y[i], yd[i], 1e-5) << i;
        // gradients accumulate onto what is there
        auto dx0 = Rand(x.size(), 5), dw0 = Rand(w.size(), 6), db0 = Rand(b.size(), 7);
        std::vector<float> dx = dx0, dw = dw0, db = db0, bws(remat_ref_conv2d_backward_ws_elems(&g));
        remat_ref_conv2d_backward(dx.data(), dw.data(), db.data(), gy.data(), x.data(), w.data(), bws.data(), T, N,
                                  &g);
        for (size_t i = 0; i < dx.size(); i++) dx[i] -= dx0[i];
        for (size_t i = 0; i < dw.size(); i++) dw[i] -= dw0[i];
        for (size_t i = 0; i < db.size(); i++) db[i] -= db0[i];
        auto L = [&] {
            std::vector<double> o;
            ConvD(g, rows, xd, wd, &bd, &o);
            double l = 0;
            for (size_t i = 0; i < o.size(); i++) l += gy[i] * o[i];
            return l;
        };
        CheckFd("conv dinp", xd, L, dx.data(), 1e-4, 1e-5);
        CheckFd("conv dweight", wd, L, dw.data(), 1e-4, 1e-5);
        CheckFd("conv dbias", bd, L, db.data(), 1e-4, 1e-5);
    }
}

TEST(Conv2d, NullBiasAndNullInputGradient) {
    const remat_conv_geom g = kConvCases[0];
    const int64_t T = 2, N = 2, rows = T * N;
    const int64_t in_e = g.c_in * g.h_in * g.w_in, out_e = g.c_out * g.h_out * g.w_out;
    auto x = Rand(rows * in_e, 11), w = Rand(g.c_out * g.c_in * g.kh * g.kw, 12), gy = Rand(rows * out_e, 13);
    std::vector<float> ws(remat_ref_conv2d_backward_ws_elems(&g));
    std::vector<float> dw1(w.size(), 0.0f), dw2(w.size(), 0.0f), dx(x.size(), 0.0f), db(g.c_out, 0.0f);
    remat_ref_conv2d_backward(nullptr, dw1.data(), nullptr, gy.data(), x.data(), w.data(), ws.data(), T, N, &g);
    remat_ref_conv2d_backward(dx.data(), dw2.data(), db.data(), gy.data(), x.data(), w.data(), ws.data(), T, N, &g);
    EXPECT_TRUE(bits_equal(dw1, dw2));
    std::vector<float> y(rows * out_e), fws(remat_ref_conv2d_forward_ws_elems(&g));
    remat_ref_conv2d_forward(y.data(), x.data(), w.data(), nullptr, fws.data(), rows, &g);
    std::vector<double> yd;
    ConvD(g, rows, to_double(x), to_double(w), nullptr, &yd);
    for (size_t i = 0; i < y.size(); i++) ASSERT_NEAR(y[i], yd[i], 1e-5) << i;
}

// Time chunks (forward in any order, backward last-first) give the full call's bits.
TEST(Conv2d, TimeChunksLastFirstAreBitIdentical) {
    const remat_conv_geom g = conv_geom(3, 9, 7, 5, 3, 3, 1, 1, 1, 1);
    const int64_t T = 5, N = 2, in_e = g.c_in * g.h_in * g.w_in, out_e = g.c_out * g.h_out * g.w_out;
    auto x = Rand(T * N * in_e, 21), w = Rand(g.c_out * g.c_in * 9, 22), b = Rand(g.c_out, 23);
    auto gy = Rand(T * N * out_e, 24), dx0 = Rand(x.size(), 25), dw0 = Rand(w.size(), 26), db0 = Rand(b.size(), 27);
    std::vector<float> fws(remat_ref_conv2d_forward_ws_elems(&g)), bws(remat_ref_conv2d_backward_ws_elems(&g));
    std::vector<float> y(T * N * out_e), dx = dx0, dw = dw0, db = db0;
    remat_ref_conv2d_forward(y.data(), x.data(), w.data(), b.data(), fws.data(), T * N, &g);
    remat_ref_conv2d_backward(dx.data(), dw.data(), db.data(), gy.data(), x.data(), w.data(), bws.data(), T, N, &g);
    const int64_t bounds[] = {0, 2, 3, 5};
    std::vector<float> yc(y.size()), dxc = dx0, dwc = dw0, dbc = db0;
    for (int c = 0; c < 3; c++) {
        const int64_t t0 = bounds[c], ts = bounds[c + 1] - t0;
        remat_ref_conv2d_forward(yc.data() + t0 * N * out_e, x.data() + t0 * N * in_e, w.data(), b.data(),
                                 fws.data(), ts * N, &g);
    }
    for (int c = 2; c >= 0; c--) {
        const int64_t t0 = bounds[c], ts = bounds[c + 1] - t0;
        remat_ref_conv2d_backward(dxc.data() + t0 * N * in_e, dwc.data(), dbc.data(), gy.data() + t0 * N * out_e,
                                  x.data() + t0 * N * in_e, w.data(), bws.data(), ts, N, &g);
    }
    EXPECT_TRUE(bits_equal(y, yc));
    EXPECT_TRUE(bits_equal(dx, dxc));
    EXPECT_TRUE(bits_equal(dw, dwc));
    EXPECT_TRUE(bits_equal(db, dbc));
}

// ---------------------------------------------------------------- pooling

void PoolD(const remat_conv_geom& g, int64_t rows, const std::vector<double>& x, bool max, std::vector<double>* y) {
    y->assign(rows * g.c_in * g.h_out * g.w_out, 0.0);
    for (int64_t q = 0; q < rows * g.c_in; q++)
        for (int64_t oy = 0; oy < g.h_out; oy++)
            for (int64_t ox = 0; ox < g.w_out; ox++) {
                double s = 0.0, m = -INFINITY;
                for (int64_t ky = 0; ky < g.kh; ky++)
                    for (int64_t kx = 0; kx < g.kw; kx++) {
                        int64_t iy = oy * g.sh - g.ph + ky, ix = ox * g.sw - g.pw + kx;
                        if (iy < 0 || iy >= g.h_in || ix < 0 || ix >= g.w_in) continue;
                        double v = x[(q * g.h_in + iy) * g.w_in + ix];
                        s += v;
                        m = v > m ? v : m;
                    }
                (*y)[(q * g.h_out + oy) * g.w_out + ox] = max ? m : s / (double)(g.kh * g.kw);
            }
}

const remat_conv_geom kPoolCases[] = {
    conv_geom(2, 7, 6, 2, 3, 3, 2, 2, 1, 1),  // SEW-ResNet's stem pool: 3x3 stride 2 padding 1 (overlapping)
    conv_geom(3, 6, 6, 3, 2, 2, 2, 2, 0, 0),  // VGG's 2x2
    conv_geom(1, 5, 7, 1, 2, 3, 1, 2, 1, 1),  // non-square, odd, padding
};

TEST(Pool, AverageMatchesFiniteDifferences) {
    for (const remat_conv_geom& g : kPoolCases) {
        const int64_t rows = 3, in_e = g.c_in * g.h_in * g.w_in, out_e = g.c_in * g.h_out * g.w_out;
        auto x = Rand(rows * in_e, 31), gy = Rand(rows * out_e, 32), dx0 = Rand(rows * in_e, 33);
        std::vector<float> y(rows * out_e), dx = dx0;
        remat_ref_avgpool2d_forward(y.data(), x.data(), rows, &g);
        auto xd = to_double(x);
        std::vector<double> yd;
        PoolD(g, rows, xd, false, &yd);
        for (size_t i = 0; i < y.size(); i++) ASSERT_NEAR(y[i], yd[i], 1e-6) << i;
        remat_ref_avgpool2d_backward(dx.data(), gy.data(), rows, &g);
        for (size_t i = 0; i < dx.size(); i++) dx[i] -= dx0[i];
        auto L = [&] {
            std::vector<double> o;
            PoolD(g, rows, xd, false, &o);
            double l = 0;
            for (size_t i = 0; i < o.size(); i++) l += gy[i] * o[i];
            return l;
        };
        CheckFd("avgpool dinp", xd, L, dx.data(), 1e-4, 1e-5);
    }
}

TEST(Pool, MaxMatchesFiniteDifferencesWithoutTies) {
    for (const remat_conv_geom& g : kPoolCases) {
        const int64_t rows = 2, in_e = g.c_in * g.h_in * g.w_in, out_e = g.c_in * g.h_out * g.w_out;
        // distinct values at least 0.01 apart, so a 1e-3 step never changes the maximum
        std::vector<float> x(rows * in_e);
        for (size_t i = 0; i < x.size(); i++) x[i] = 0.01f * (float)((i * 7919) % x.size());
        auto gy = Rand(rows * out_e, 42);
        std::vector<float> y(rows * out_e), dx(x.size(), 0.0f);
        remat_ref_maxpool2d_forward(y.data(), x.data(), rows, &g);
        auto xd = to_double(x);
        std::vector<double> yd;
        PoolD(g, rows, xd, true, &yd);
        for (size_t i = 0; i < y.size(); i++) ASSERT_EQ(y[i], (float)yd[i]) << i;
        remat_ref_maxpool2d_backward(dx.data(), gy.data(), x.data(), rows, &g);
        auto L = [&] {
            std::vector<double> o;
            PoolD(g, rows, xd, true, &o);
            double l = 0;
            for (size_t i = 0; i < o.size(); i++) l += gy[i] * o[i];
            return l;
        };
        CheckFd("maxpool dinp", xd, L, dx.data(), 1e-4, 1e-5);
    }
}

TEST(Pool, MaxTiesSendTheGradientToTheFirstMaximumInRowMajorOrder) {
    const remat_conv_geom g = conv_geom(1, 4, 4, 1, 3, 3, 2, 2, 1, 1);  // windows overlap; padding at the top-left
    std::vector<float> x(16, 1.0f);                                   // all spikes: every window ties
    std::vector<float> y(g.h_out * g.w_out), gy(y.size()), dx(16, 0.0f);
    for (size_t i = 0; i < gy.size(); i++) gy[i] = (float)(i + 1);
    remat_ref_maxpool2d_forward(y.data(), x.data(), 1, &g);
    for (float v : y) EXPECT_EQ(v, 1.0f);
    remat_ref_maxpool2d_backward(dx.data(), gy.data(), x.data(), 1, &g);
    // window (oy, ox) starts at input (2oy-1, 2ox-1); its first in-bounds element is
    // (max(2oy-1, 0), max(2ox-1, 0))
    std::vector<float> want(16, 0.0f);
    for (int64_t oy = 0; oy < g.h_out; oy++)
        for (int64_t ox = 0; ox < g.w_out; ox++) {
            int64_t iy = std::max<int64_t>(2 * oy - 1, 0), ix = std::max<int64_t>(2 * ox - 1, 0);
            want[iy * 4 + ix] += gy[oy * g.w_out + ox];
        }
    EXPECT_TRUE(bits_equal(dx, want));
}

// ---------------------------------------------------------------- batch norm over [C, H, W]

TEST(BatchNormSpatial, StatisticsOverRowsAndPixelsAndFiniteDifferences) {
    const int64_t rows = 3, C = 2, hw = 5, n = rows * hw;
    auto x = Rand(rows * C * hw, 51, -2.0f, 3.0f), w = Rand(C, 52, 0.5f, 1.5f), b = Rand(C, 53);
    auto gy = Rand(rows * C * hw, 54);
    std::vector<float> y(x.size()), mean(C), rstd(C), rm(C, 0.0f), rv(C, 1.0f);
    remat_ref_batchnorm_forward(y.data(), mean.data(), rstd.data(), rm.data(), rv.data(), x.data(), w.data(), b.data(),
                                rows, C, hw, 0.1f, 1e-5);
    auto fwd = [&](const std::vector<double>& xd, const std::vector<double>& wd, const std::vector<double>& bd,
                   std::vector<double>* out) {
        out->assign(xd.size(), 0.0);
        for (int64_t c = 0; c < C; c++) {
            double s = 0, q = 0;
            for (int64_t r = 0; r < rows; r++)
                for (int64_t p = 0; p < hw; p++) s += xd[(r * C + c) * hw + p];
            const double mu = s / n;
            for (int64_t r = 0; r < rows; r++)
                for (int64_t p = 0; p < hw; p++) q += (xd[(r * C + c) * hw + p] - mu) * (xd[(r * C + c) * hw + p] - mu);
            const double rs = 1.0 / std::sqrt(q / n + 1e-5);
            for (int64_t r = 0; r < rows; r++)
                for (int64_t p = 0; p < hw; p++) {
                    const int64_t e = (r * C + c) * hw + p;
                    (*out)[e] = (xd[e] - mu) * rs * wd[c] + bd[c];
                }
        }
    };
    auto xd = to_double(x), wd = to_double(w), bd = to_double(b);
    std::vector<double> yd;
    fwd(xd, wd, bd, &yd);
    for (size_t i = 0; i < y.size(); i++) ASSERT_NEAR(y[i], yd[i], 1e-5) << i;
    std::vector<float> dx(x.size(), 0.0f), dw(C, 0.0f), db(C, 0.0f);
    remat_ref_batchnorm_backward(dx.data(), dw.data(), db.data(), gy.data(), x.data(), w.data(), mean.data(),
                                 rstd.data(), rows, C, hw);
    auto L = [&] {
        std::vector<double> o;
        fwd(xd, wd, bd, &o);
        double l = 0;
        for (size_t i = 0; i < o.size(); i++) l += gy[i] * o[i];
        return l;
    };
    CheckFd("batchnorm2d dinp", xd, L, dx.data(), 1e-3, 1e-5);
    CheckFd("batchnorm2d dweight", wd, L, dw.data(), 1e-3, 1e-5);
    CheckFd("batchnorm2d dbias", bd, L, db.data(), 1e-3, 1e-5);
}

}  // namespace
