// bf16_fd_test.cc - each layer's forward and backward as a bf16 model runs them
// (docs/precision.md: operands rounded to bf16, fp32 arithmetic, output rounded),
// against central finite differences of the fp32 layer at the UNROUNDED operands,
// with a tolerance derived from bf16's precision u = 2^-8 (the spacing of bf16
// relative to a value; each rounding errs by at most u/2 of its operand).
//
// The bound. For a layer that is linear in each operand (linear, conv2d, avgpool,
// add, dropout) a gradient element is a sum of products of the other operands (and
// the fixed upstream gradient g); rounding every operand to bf16 moves it by at most
// u/2 relative per factor, so by at most u * B_i, where B_i is the same backward run
// on the absolute values |g|, |operands| (the classic |a|.|b| bound). The forward output
// additionally rounds once: |y_bf16 - y| <= u * (|y| + Y_i), Y the forward on absolute
// values. Finite differences of the fp32 forward (step 2^-8, values O(1), accumulated in
// double) err by ~1e-5 relative, added as slack. Batch norm is not multilinear (its
// statistics come from the rounded input): its bound is 4u relative to the largest
// gradient, the factor covering rstd * (1 + |xhat|) amplification at unit variance.
// Max pooling routes the gradient by the argmax of the rounded input, which rounding
// may move between near-equal elements: inputs are drawn at least 2^-5 apart.
// Neurons and losses compute in fp32 from a bf16 input: their kernels are the fp32
// ones (ref_kernels_test checks them against finite differences at any input).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/base/bf16.h"
#include "core/base/rng.h"
#include "core/ref/ref_kernels.h"
#include "tests/testutil.h"

namespace {

using remat_test::conv_geom;

const double kU = 1.0 / 256; // 2^-8

using Vecs = std::vector<std::vector<float>>;

std::vector<float> Rand(size_t n, uint64_t key, float lo = -1.0f, float hi = 1.0f) {
    return remat_test::rand_floats(n, 91, 5, key, lo, hi);
}

Vecs Rounded(Vecs v) {
    for (auto &x : v)
        for (float &e : x) e = remat_bf16_round(e);
    return v;
}

Vecs Abs(Vecs v) {
    for (auto &x : v)
        for (auto &e : x) e = std::fabs(e);
    return v;
}

// One layer: its operands, forward (y from operands) and backward (gradients of every
// operand, accumulated into zeroed vectors of the operands' sizes, from g).
struct LayerCase {
    std::string name;
    Vecs operands;
    int64_t out_n;
    std::function<void(const Vecs &, float *)> fwd;
    std::function<void(const Vecs &, const std::vector<float> &, Vecs *)> bwd;
    bool multilinear;
};

Vecs ZerosLike(const Vecs &v) {
    Vecs z;
    for (const auto &x : v) z.emplace_back(x.size(), 0.0f);
    return z;
}

void Check(const LayerCase &c) {
    const Vecs xb = Rounded(c.operands);
    std::vector<float> g = Rand((size_t)c.out_n, 1234);
    // forward as the bf16 model runs it
    std::vector<float> yb((size_t)c.out_n), y((size_t)c.out_n), ya((size_t)c.out_n);
    c.fwd(xb, yb.data());
    for (float &e : yb) e = remat_bf16_round(e);
    c.fwd(c.operands, y.data());
    double ymax = 0;
    for (float v : y) ymax = std::max(ymax, (double)std::fabs(v));
    if (c.multilinear) c.fwd(Abs(c.operands), ya.data());
    int rounded_differs = 0;
    for (int64_t i = 0; i < c.out_n; i++) {
        double tol = c.multilinear ? kU * (std::fabs(y[i]) + ya[i]) : 4 * kU * ymax;
        EXPECT_NEAR(yb[i], y[i], tol + 1e-6) << c.name << " forward " << i;
        rounded_differs += yb[i] != y[i];
        EXPECT_EQ(remat_f32_bits(yb[i]) & 0xffffu, 0u) << c.name << ": a stored output is a bf16 value";
    }
    EXPECT_GT(rounded_differs, 0) << c.name << ": the test must exercise rounding";
    // backward as the bf16 model runs it, and the bound
    Vecs gb = ZerosLike(c.operands), bound = ZerosLike(c.operands);
    c.bwd(xb, g, &gb);
    if (c.multilinear) {
        std::vector<float> ga(g.size());
        for (size_t i = 0; i < g.size(); i++) ga[i] = std::fabs(g[i]);
        c.bwd(Abs(c.operands), ga, &bound);
    }
    // central differences of L = sum g . y of the fp32 forward at the unrounded operands
    Vecs p = c.operands;
    std::vector<float> yt((size_t)c.out_n);
    auto loss = [&] {
        c.fwd(p, yt.data());
        double L = 0;
        for (int64_t i = 0; i < c.out_n; i++) L += (double)g[(size_t)i] * yt[(size_t)i];
        return L;
    };
    for (size_t k = 0; k < p.size(); k++) {
        std::vector<double> fd(p[k].size());
        double fdmax = 0;
        for (size_t i = 0; i < p[k].size(); i++) {
            const float keep = p[k][i];
            const float h = 1.0f / 256;
            p[k][i] = keep + h;
            double lp = loss();
            p[k][i] = keep - h;
            double lm = loss();
            p[k][i] = keep;
            fd[i] = (lp - lm) / (2.0 * h);
            fdmax = std::max(fdmax, std::fabs(fd[i]));
        }
        for (size_t i = 0; i < p[k].size(); i++) {
            double tol = c.multilinear ? kU * bound[k][i] : 4 * kU * fdmax;
            tol += 2e-5 * std::max(1.0, fdmax); // the fp32 forward's noise in the differences
            EXPECT_NEAR(gb[k][i], fd[i], tol) << c.name << " operand " << k << " element " << i;
        }
    }
}

TEST(Bf16FiniteDifferences, Linear) {
    const int64_t T = 2, N = 3, in = 9, out = 5, rows = T * N;
    LayerCase c{"linear", {Rand(rows * in, 1), Rand(out * in, 2), Rand(out, 3)}, rows * out,
                [=](const Vecs &v, float *y) { remat_ref_linear_forward(y, v[0].data(), v[1].data(), v[2].data(), rows, in, out); },
                [=](const Vecs &v, const std::vector<float> &g, Vecs *d) {
                    std::vector<float> scratch((size_t)remat_ref_linear_scratch_elems(in, out));
                    remat_ref_linear_backward((*d)[0].data(), (*d)[1].data(), (*d)[2].data(), g.data(), v[0].data(),
                                              v[1].data(), scratch.data(), T, N, in, out);
                },
                true};
    Check(c);
}


void CheckConv(const char *name, const remat_conv_geom geo) {
    const int64_t T = 2, N = 2, rows = T * N;
    const int64_t in_n = rows * geo.c_in * geo.h_in * geo.w_in, out_n = rows * geo.c_out * geo.h_out * geo.w_out;
    LayerCase c{name, {Rand(in_n, 4), Rand(remat_test::conv_weight_elems(geo), 5), Rand(geo.c_out, 6)}, out_n,
                [=](const Vecs &v, float *y) {
                    std::vector<float> ws((size_t)remat_ref_conv2d_forward_ws_elems(&geo));
                    remat_ref_conv2d_forward(y, v[0].data(), v[1].data(), v[2].data(), ws.data(), rows, &geo);
                },
                [=](const Vecs &v, const std::vector<float> &g, Vecs *d) {
                    std::vector<float> ws((size_t)remat_ref_conv2d_backward_ws_elems(&geo));
                    remat_ref_conv2d_backward((*d)[0].data(), (*d)[1].data(), (*d)[2].data(), g.data(), v[0].data(),
                                              v[1].data(), ws.data(), T, N, &geo);
                },
                true};
    Check(c);
}

TEST(Bf16FiniteDifferences, Conv2d) { CheckConv("conv2d", conv_geom(2, 5, 5, 3, 3, 1, 1)); }
TEST(Bf16FiniteDifferences, Conv2dGroups) {
    CheckConv("conv2d groups 2", remat_test::grouped(conv_geom(4, 5, 5, 4, 3, 1, 1), 2));
    CheckConv("conv2d depthwise", remat_test::grouped(conv_geom(3, 5, 5, 3, 3, 1, 1), 3));
}

TEST(Bf16FiniteDifferences, AvgPool) {
    const int64_t rows = 3;
    remat_conv_geom geo = conv_geom(2, 6, 6, 2, 2, 2, 0);
    const int64_t in_n = rows * 2 * 36, out_n = rows * 2 * geo.h_out * geo.w_out;
    LayerCase c{"avgpool2d", {Rand(in_n, 7)}, out_n,
                [=](const Vecs &v, float *y) { remat_ref_avgpool2d_forward(y, v[0].data(), rows, &geo); },
                [=](const Vecs &, const std::vector<float> &g, Vecs *d) {
                    remat_ref_avgpool2d_backward((*d)[0].data(), g.data(), rows, &geo);
                },
                true};
    Check(c);
}

TEST(Bf16FiniteDifferences, MaxPool) {
    const int64_t rows = 2;
    remat_conv_geom geo = conv_geom(2, 4, 4, 2, 2, 2, 0);
    const int64_t in_n = rows * 2 * 16, out_n = rows * 2 * geo.h_out * geo.w_out;
    // distinct values 2^-5 apart (a shuffled ladder), so rounding cannot reorder a window
    std::vector<float> x((size_t)in_n);
    for (int64_t i = 0; i < in_n; i++) x[(size_t)i] = (float)((i * 37) % in_n) / 32.0f + 0.003f; /* positive: |x| = x */
    LayerCase c{"maxpool2d", {x}, out_n,
                [=](const Vecs &v, float *y) { remat_ref_maxpool2d_forward(y, v[0].data(), rows, &geo); },
                [=](const Vecs &v, const std::vector<float> &g, Vecs *d) {
                    remat_ref_maxpool2d_backward((*d)[0].data(), g.data(), v[0].data(), rows, &geo);
                },
                true};
    Check(c);
}

TEST(Bf16FiniteDifferences, Add) {
    const int64_t n = 40;
    LayerCase c{"add", {Rand(n, 8), Rand(n, 9)}, n,
                [=](const Vecs &v, float *y) { remat_ref_add_forward(y, v[0].data(), v[1].data(), n); },
                [=](const Vecs &, const std::vector<float> &g, Vecs *d) {
                    remat_ref_add_backward((*d)[0].data(), (*d)[1].data(), g.data(), n);
                },
                true};
    Check(c);
}

TEST(Bf16FiniteDifferences, Dropout) {
    const int64_t T = 3, nf = 20;
    LayerCase c{"dropout", {Rand(T * nf, 10)}, T * nf,
                [=](const Vecs &v, float *y) { remat_ref_dropout_forward(y, v[0].data(), 5, 0, 2, 0.3f, T, nf); },
                [=](const Vecs &, const std::vector<float> &g, Vecs *d) {
                    remat_ref_dropout_backward((*d)[0].data(), g.data(), 5, 0, 2, 0.3f, T, nf);
                },
                true};
    Check(c);
}

TEST(Bf16FiniteDifferences, BatchNorm) {
    const int64_t rows = 6, C = 3, hw = 4;
    const int64_t n = rows * C * hw;
    auto fwd = [=](const Vecs &v, float *y) {
        std::vector<float> mean((size_t)C), rstd((size_t)C);
        remat_ref_batchnorm_forward(y, mean.data(), rstd.data(), nullptr, nullptr, v[0].data(), v[1].data(),
                                    v[2].data(), rows, C, hw, 0.1f, 1e-5);
    };
    LayerCase c{"batchnorm", {Rand(n, 11, -2.0f, 2.0f), Rand(C, 12, 0.5f, 1.5f), Rand(C, 13)}, n, fwd,
                [=](const Vecs &v, const std::vector<float> &g, Vecs *d) {
                    std::vector<float> mean((size_t)C), rstd((size_t)C), y((size_t)n);
                    remat_ref_batchnorm_forward(y.data(), mean.data(), rstd.data(), nullptr, nullptr, v[0].data(),
                                                v[1].data(), v[2].data(), rows, C, hw, 0.1f, 1e-5);
                    remat_ref_batchnorm_backward((*d)[0].data(), (*d)[1].data(), (*d)[2].data(), g.data(),
                                                 v[0].data(), v[1].data(), mean.data(), rstd.data(), rows, C, hw);
                },
                false};
    Check(c);
}

}  // namespace
