// plif_test.cc - the parametric LIF kernels (core/ref/plif.c) against double-precision
// references, for every option combination (decay_input, v_reset 0 or not, hard or soft
// reset, detach_reset, sigmoid or atan surrogate):
//  - forward: spikes and the saved states against a double run of the contract;
//  - backward: dx, the carried dL/dv and dL/dw against central finite differences of
//    the surrogate-linearised forward (as ref_kernels_test does for IF / LIF: spikes
//    s_t = H(u_t^0) + S(u_t) - S(u_t^0), S the surrogate's primitive, u^0 the
//    unperturbed potentials, so the derivative is the surrogate rule exactly), w
//    perturbed through k = sigmoid(w);
//  - time chunks (backward last-first), 1/2/3 threads and the bf16 twins: the bits
//    of one fp32 call (bf16: the fp32 kernel on widened operands, rounded once);
//  - blocks: nblk per-block partials of dw, combined in block order, are the
//    one-block gradient within rounding, and each block's partial is the one-block
//    gradient of its samples bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/base/bf16.h"
#include "core/base/rng.h"
#include "core/ref/ref_kernels.h"
#include "tests/neuron_ref.h"
#include "tests/testutil.h"

namespace {

using remat_test::bits_equal;
using remat_test::to_double;

std::vector<float> Rand(size_t n, uint64_t key, float lo = -1.0f, float hi = 1.0f) {
    return remat_test::rand_floats(n, 77, 11, key, lo, hi);
}

struct Case {
    remat_neuron_opts o;
    float w;
};

std::vector<Case> AllCases() {
    std::vector<Case> cases;
    for (int dec = 0; dec <= 1; dec++)
        for (int soft = 0; soft <= 1; soft++)
            for (int vr0 = 0; vr0 <= 1 - soft; vr0++)  // soft reset: v_reset is 0
                for (int det = 0; det <= 1; det++)
                    for (int at = 0; at <= 1; at++) {
                        Case c{};
                        c.o.v_threshold = 0.8f;
                        c.o.v_reset = soft || vr0 ? 0.0f : -0.3f;
                        c.o.soft_reset = soft;
                        c.o.detach_reset = det;
                        c.o.surrogate = at ? REMAT_SURROGATE_ATAN : REMAT_SURROGATE_SIGMOID;
                        c.o.alpha = at ? 2.0f : 4.0f;
                        c.o.decay_input = dec;
                        c.w = -0.4f;  // tau = 1 + e^0.4
                        cases.push_back(c);
                    }
    return cases;
}

std::string Name(const Case& c) {
    std::string s = c.o.decay_input ? "decay_input" : "no_decay_input";
    s += c.o.soft_reset ? "_soft" : c.o.v_reset == 0.0f ? "_hard0" : "_hard";
    s += c.o.detach_reset ? "_detach" : "_no_detach";
    s += c.o.surrogate == REMAT_SURROGATE_ATAN ? "_atan" : "_sigmoid";
    return s;
}

double Charge(const Case& c, double v, double x, double k) {
    const double vr = NeuronVr(c.o);
    return c.o.decay_input ? v + (x - (v - vr)) * k : v - (v - vr) * k + x;
}

// Double forward from v0 with w (1/tau = sigmoid(w)); base_u == nullptr: the spiking
// forward (u_out gets u, vp_out the states steps start from); else linearised around
// base_u. L = sum ws * s + sum gfin * v_last.
double ForwardD(const Case& c, const std::vector<double>& x, const std::vector<double>& v0, double w,
                const std::vector<double>* base_u, std::vector<double>* u_out, std::vector<double>* vp_out,
                const std::vector<float>& ws, const std::vector<float>& gfin, int64_t T, int64_t nf) {
    const double k = 1.0 / (1.0 + std::exp(-w));
    return NeuronLossD(c.o, [&](double v, double xi) { return Charge(c, v, xi, k); }, x, v0, base_u, u_out, vp_out,
                       ws, gfin, T, nf);
}

// Inputs whose potentials stay 1e-3 away from the threshold (float and double agree on
// every spike).
void Inputs(const Case& c, int64_t T, int64_t nf, std::vector<float>* x, std::vector<float>* v0) {
    for (uint64_t key = 100;; key++) {
        *x = Rand(T * nf, key, -0.6f, 1.9f);
        *v0 = Rand(nf, key + 5000, -0.5f, 0.7f);
        std::vector<double> u(T * nf);
        std::vector<float> ws(T * nf, 0.0f), gf(nf, 0.0f);
        ForwardD(c, to_double(*x), to_double(*v0), c.w, nullptr, &u, nullptr, ws, gf, T, nf);
        double margin = 1e9;
        for (double e : u) margin = std::fmin(margin, std::fabs(e));
        if (margin > 1e-3) return;
    }
}

double Fd(const std::function<double(double)>& L, double p, double eps = 1e-6) {
    return (L(p + eps) - L(p - eps)) / (2 * eps);
}

class PlifTest : public ::testing::TestWithParam<int> {};

TEST_P(PlifTest, ForwardMatchesDouble) {
    const Case c = AllCases()[GetParam()];
    const int64_t T = 5, nf = 9;
    std::vector<float> x, v0;
    Inputs(c, T, nf, &x, &v0);
    std::vector<float> s(T * nf), vp(T * nf), v = v0;
    remat_ref_plif_forward(s.data(), vp.data(), v.data(), x.data(), &c.w, &c.o, T, nf);
    std::vector<double> u(T * nf), vpd(T * nf);
    std::vector<float> ws(T * nf, 0.0f), gf(nf, 0.0f);
    ForwardD(c, to_double(x), to_double(v0), c.w, nullptr, &u, &vpd, ws, gf, T, nf);
    int spikes = 0;
    for (int64_t i = 0; i < T * nf; i++) {
        EXPECT_EQ(s[i], u[i] >= 0 ? 1.0f : 0.0f) << Name(c) << " element " << i;
        EXPECT_NEAR(vp[i], vpd[i], 1e-5) << Name(c) << " element " << i;
        spikes += s[i] != 0.0f;
    }
    EXPECT_GT(spikes, 0) << Name(c);
    EXPECT_LT(spikes, T * nf) << Name(c);
    // tau = 1 / sigmoid(w): w = -log(init_tau - 1) gives k = 1 / init_tau
    EXPECT_NEAR(remat_ref_plif_k((float)-std::log(2.0 - 1.0)), 0.5f, 1e-7);
    EXPECT_NEAR(remat_ref_plif_k((float)-std::log(3.0 - 1.0)), 1.0f / 3.0f, 1e-7);
}

TEST_P(PlifTest, BackwardMatchesFiniteDifferencesIncludingW) {
    const Case c = AllCases()[GetParam()];
    const int64_t N = 3, F = 4, nf = N * F, T = 5;
    std::vector<float> x, v0;
    Inputs(c, T, nf, &x, &v0);
    std::vector<float> s(T * nf), vp(T * nf), v = v0;
    remat_ref_plif_forward(s.data(), vp.data(), v.data(), x.data(), &c.w, &c.o, T, nf);
    auto ws = Rand(T * nf, 300), gfin = Rand(nf, 301);
    std::vector<float> dx(T * nf, 0.0f), gv = gfin, dw(1, 0.0f);
    std::vector<double> rows(T * N);
    remat_ref_plif_backward(dx.data(), gv.data(), rows.data(), dw.data(), ws.data(), vp.data(), x.data(), &c.w, &c.o,
                            T, N, F, 1);
    auto xd = to_double(x), vd = to_double(v0);
    std::vector<double> base_u(T * nf);
    ForwardD(c, xd, vd, c.w, nullptr, &base_u, nullptr, ws, gfin, T, nf);
    auto L = [&](double w) { return ForwardD(c, xd, vd, w, &base_u, nullptr, nullptr, ws, gfin, T, nf); };
    double scale = 1.0;
    for (float g : dx) scale = std::fmax(scale, std::fabs(g));
    for (size_t i = 0; i < xd.size(); i++) {
        const double keep = xd[i];
        const double fd = Fd([&](double p) { xd[i] = p; double r = L(c.w); xd[i] = keep; return r; }, keep);
        EXPECT_NEAR(dx[i], fd, 1e-4 * std::fabs(fd) + 1e-5 * scale) << Name(c) << " dx " << i;
    }
    for (size_t i = 0; i < vd.size(); i++) {
        const double keep = vd[i];
        const double fd = Fd([&](double p) { vd[i] = p; double r = L(c.w); vd[i] = keep; return r; }, keep);
        EXPECT_NEAR(gv[i], fd, 1e-4 * std::fabs(fd) + 1e-5 * scale) << Name(c) << " gv " << i;
    }
    const double fdw = Fd(L, c.w);
    EXPECT_NEAR(dw[0], fdw, 1e-4 * std::fabs(fdw) + 1e-5) << Name(c) << " dw";
    EXPECT_GT(std::fabs(fdw), 1e-3) << Name(c) << ": the test's w gradient should not vanish";
}

// Chunks (forward first-last with v carried; backward last-first with gv and dw
// carried), threads and the bf16 twins give one fp32 call's bits.
struct PlifRun {
    std::vector<float> s, vp, v, dx, gv, dw;
};

PlifRun FullRun(const Case& c, int64_t T, int64_t N, int64_t F, int64_t nblk, const std::vector<int64_t>& bounds) {
    const int64_t nf = N * F;
    auto x = Rand(T * nf, 400, -0.6f, 1.9f), v0 = Rand(nf, 401, -0.5f, 0.7f), ds = Rand(T * nf, 402),
         g0 = Rand(nf, 403), dx0 = Rand(T * nf, 404);
    PlifRun r{std::vector<float>(T * nf), std::vector<float>(T * nf), v0, dx0, g0, std::vector<float>(nblk, 0.25f)};
    std::vector<double> rows(T * N);
    for (size_t k = 0; k + 1 < bounds.size(); k++)
        remat_ref_plif_forward(r.s.data() + bounds[k] * nf, r.vp.data() + bounds[k] * nf, r.v.data(),
                               x.data() + bounds[k] * nf, &c.w, &c.o, bounds[k + 1] - bounds[k], nf);
    for (size_t k = bounds.size() - 1; k-- > 0;)
        remat_ref_plif_backward(r.dx.data() + bounds[k] * nf, r.gv.data(), rows.data(), r.dw.data(),
                                ds.data() + bounds[k] * nf, r.vp.data() + bounds[k] * nf, x.data() + bounds[k] * nf,
                                &c.w, &c.o, bounds[k + 1] - bounds[k], N, F, nblk);
    return r;
}

void ExpectSameRun(const PlifRun& a, const PlifRun& b, const std::string& what) {
    EXPECT_TRUE(bits_equal(a.s, b.s)) << what << " spikes";
    EXPECT_TRUE(bits_equal(a.vp, b.vp)) << what << " saved states";
    EXPECT_TRUE(bits_equal(a.v, b.v)) << what << " v";
    EXPECT_TRUE(bits_equal(a.dx, b.dx)) << what << " dx";
    EXPECT_TRUE(bits_equal(a.gv, b.gv)) << what << " gv";
    EXPECT_TRUE(bits_equal(a.dw, b.dw)) << what << " dw";
}

TEST_P(PlifTest, TimeChunksAndThreadsAreBitIdentical) {
    const Case c = AllCases()[GetParam()];
    const int64_t T = 7, N = 6, F = 3001;  // parts of more than one thread
    PlifRun full = FullRun(c, T, N, F, 1, {0, 7});
    ExpectSameRun(full, FullRun(c, T, N, F, 1, {0, 2, 3, 7}), Name(c) + " chunks 2,1,4");
    ExpectSameRun(full, FullRun(c, T, N, F, 1, {0, 1, 2, 3, 4, 5, 6, 7}), Name(c) + " chunks of 1");
    for (int th : {2, 3}) {
        remat_ref_set_threads(th);
        PlifRun r = FullRun(c, T, N, F, 1, {0, 3, 7});
        remat_ref_set_threads(1);
        ExpectSameRun(full, r, Name(c) + " threads " + std::to_string(th));
    }
}

TEST_P(PlifTest, BlockPartialsAreEachBlocksGradient) {
    const Case c = AllCases()[GetParam()];
    const int64_t T = 4, N = 6, F = 5, nf = N * F;
    auto x = Rand(T * nf, 500, -0.6f, 1.9f), ds = Rand(T * nf, 501);
    std::vector<float> s(T * nf), vp(T * nf), v(nf, c.o.soft_reset ? 0.0f : c.o.v_reset);
    remat_ref_plif_forward(s.data(), vp.data(), v.data(), x.data(), &c.w, &c.o, T, nf);
    std::vector<double> rows(T * N);
    std::vector<float> dx(T * nf, 0.0f), gv(nf, 0.0f), dw3(3, 0.0f), dw1(1, 0.0f);
    remat_ref_plif_backward(dx.data(), gv.data(), rows.data(), dw3.data(), ds.data(), vp.data(), x.data(), &c.w, &c.o,
                            T, N, F, 3);
    std::fill(gv.begin(), gv.end(), 0.0f);
    remat_ref_plif_backward(dx.data(), gv.data(), rows.data(), dw1.data(), ds.data(), vp.data(), x.data(), &c.w, &c.o,
                            T, N, F, 1);
    EXPECT_NEAR((dw3[0] + dw3[1]) + dw3[2], dw1[0], 1e-5 * (1 + std::fabs(dw1[0]))) << Name(c);
    for (int b = 0; b < 3; b++) {  // block b alone: its two samples as a batch of 2
        const int64_t bn = 2, bnf = bn * F;
        std::vector<float> xb(T * bnf), dsb(T * bnf), vpb(T * bnf), dxb(T * bnf, 0.0f), gvb(bnf, 0.0f), dwb(1, 0.0f);
        for (int64_t t = 0; t < T; t++)
            for (int64_t i = 0; i < bnf; i++) {
                xb[t * bnf + i] = x[t * nf + b * bnf + i];
                dsb[t * bnf + i] = ds[t * nf + b * bnf + i];
                vpb[t * bnf + i] = vp[t * nf + b * bnf + i];
            }
        std::vector<double> rb(T * bn);
        remat_ref_plif_backward(dxb.data(), gvb.data(), rb.data(), dwb.data(), dsb.data(), vpb.data(), xb.data(), &c.w,
                                &c.o, T, bn, F, 1);
        EXPECT_EQ(remat_f32_bits(dwb[0]), remat_f32_bits(dw3[b])) << Name(c) << " block " << b;
    }
}

TEST_P(PlifTest, Bf16TwinsAreTheFp32KernelsRounded) {
    const Case c = AllCases()[GetParam()];
    const int64_t T = 4, N = 5, F = 7, nf = N * F;
    std::vector<uint16_t> x(T * nf), ds(T * nf), dx0(T * nf);
    auto xf0 = Rand(T * nf, 600, -0.6f, 1.9f), dsf0 = Rand(T * nf, 601), dxf0 = Rand(T * nf, 602);
    for (int64_t i = 0; i < T * nf; i++) {
        x[i] = remat_f32_to_bf16(xf0[i]);
        ds[i] = remat_f32_to_bf16(dsf0[i]);
        dx0[i] = remat_f32_to_bf16(dxf0[i]);
    }
    auto widen = [](const std::vector<uint16_t>& b) {
        std::vector<float> f(b.size());
        for (size_t i = 0; i < b.size(); i++) f[i] = remat_bf16_to_f32(b[i]);
        return f;
    };
    auto v0 = Rand(nf, 603, -0.5f, 0.7f);
    std::vector<uint16_t> s16(T * nf), dx16 = dx0;
    std::vector<float> vp16(T * nf), v16 = v0, gv16(nf, 0.1f), dw16(1, 0.0f);
    std::vector<double> rows(T * N);
    remat_ref_plif_forward_bf16(s16.data(), vp16.data(), v16.data(), x.data(), &c.w, &c.o, T, nf);
    remat_ref_plif_backward_bf16(dx16.data(), gv16.data(), rows.data(), dw16.data(), ds.data(), vp16.data(), x.data(),
                                 &c.w, &c.o, T, N, F, 1);
    std::vector<float> xf = widen(x), dsf = widen(ds), dxf = widen(dx0);
    std::vector<float> sf(T * nf), vpf(T * nf), vf = v0, gvf(nf, 0.1f), dwf(1, 0.0f);
    remat_ref_plif_forward(sf.data(), vpf.data(), vf.data(), xf.data(), &c.w, &c.o, T, nf);
    remat_ref_plif_backward(dxf.data(), gvf.data(), rows.data(), dwf.data(), dsf.data(), vpf.data(), xf.data(), &c.w,
                            &c.o, T, N, F, 1);
    for (int64_t i = 0; i < T * nf; i++) {
        ASSERT_EQ(s16[i], remat_f32_to_bf16(sf[i])) << Name(c) << " spike " << i;
        ASSERT_EQ(dx16[i], remat_f32_to_bf16(dxf[i])) << Name(c) << " dx " << i;
    }
    EXPECT_TRUE(bits_equal(vp16, vpf)) << Name(c);
    EXPECT_TRUE(bits_equal(v16, vf)) << Name(c);
    EXPECT_TRUE(bits_equal(gv16, gvf)) << Name(c);
    EXPECT_TRUE(bits_equal(dw16, dwf)) << Name(c);
}

INSTANTIATE_TEST_SUITE_P(AllOptions, PlifTest, ::testing::Range(0, (int)AllCases().size()),
                         [](const ::testing::TestParamInfo<int>& i) { return Name(AllCases()[i.param]); });

}  // namespace
