// ref_kernels_test.cc - the CPU reference kernels against double-precision references.
//
// What is checked, and how:
//  - GEMMs: against a naive double product within a float error bound; bit for bit
//    against the scalar fmaf chain that defines them (ref_kernels.h); bit-identical rows
//    when M (or N) is cut into pieces of odd sizes, and for 1, 2 and 3 threads.
//  - linear, batch norm, add, dropout, losses: backward against central finite
//    differences of a double-precision forward written here (L = sum(g * y) for a
//    random g, so dL/dy = g is what the kernel's backward receives).
//  - IF / LIF: the backward is not the derivative of the forward (the Heaviside has a
//    surrogate gradient), so it is checked twice for every option combination:
//    (a) against an independent double implementation of the spec's backward table;
//    (b) against finite differences of a smooth forward whose derivative IS that table:
//        s_t(x) = H(u_t^0) + S(u_t(x)) - S(u_t^0), with S the surrogate's primitive
//        (sigmoid: sigma(alpha u); atan: atan(pi/2 alpha u)/pi + 1/2) and u^0 the
//        potentials of the unperturbed run. At the base point the values are exactly
//        the spiking forward's (same trajectory), and ds/du = S'(u) = sg(u), i.e. the
//        surrogate, while the reset's (1 - s) factor keeps its Heaviside value - the
//        spec's straight-through rule. detach_reset: the reset uses the constant H(u^0).
//  - time chunks: linear and neurons over chunks (backward last-first) give the bits
//    of one full call.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "core/ref/ref_kernels.h"
#include "core/base/rng.h"
#include "tests/neuron_ref.h"
#include "tests/testutil.h"

namespace {

using remat_test::bits_equal;
using remat_test::to_double;

std::vector<float> Rand(size_t n, uint64_t key, float lo = -1.0f, float hi = 1.0f) {
    return remat_test::rand_floats(n, 77, 9, key, lo, hi);
}

// Central differences of loss() over every element of p, against the analytic grad.
void CheckFd(const char* what, std::vector<double>& p, const std::function<double()>& loss, const float* grad,
             double rtol = 2e-3, double atol = 2e-5, double eps = 1e-6) {
    double scale = 0;
    for (size_t i = 0; i < p.size(); i++) scale = std::fmax(scale, std::fabs(grad[i]));
    for (size_t i = 0; i < p.size(); i++) {
        const double keep = p[i];
        p[i] = keep + eps;
        const double lp = loss();
        p[i] = keep - eps;
        const double lm = loss();
        p[i] = keep;
        const double fd = (lp - lm) / (2 * eps);
        EXPECT_NEAR(grad[i], fd, rtol * std::fabs(fd) + atol * std::fmax(1.0, scale))
            << what << " element " << i;
    }
}

// ---------------------------------------------------------------- GEMM

enum Layout { NT, NN, TN };
const char* kLayoutName[] = {"nt", "nn", "tn"};

void Gemm(Layout l, float* c, const float* a, const float* b, int64_t M, int64_t N, int64_t K, int acc) {
    switch (l) {
    case NT: remat_ref_gemm_nt(c, a, b, M, N, K, acc); break;
    case NN: remat_ref_gemm_nn(c, a, b, M, N, K, acc); break;
    case TN: remat_ref_gemm_tn(c, a, b, M, N, K, acc); break;
    }
}
float Aat(Layout l, const float* a, int64_t M, int64_t K, int64_t i, int64_t k) {
    return l == TN ? a[k * M + i] : a[i * K + k];
}
float Bat(Layout l, const float* b, int64_t N, int64_t K, int64_t k, int64_t j) {
    return l == NT ? b[j * K + k] : b[k * N + j];
}

struct Shape {
    int64_t M, N, K;
};
const Shape kShapes[] = {{1, 1, 1},     {1, 17, 3},   {7, 5, 3},    {6, 16, 8},  {13, 17, 300},
                         {125, 33, 513}, {250, 40, 9}, {7, 3100, 5}, {31, 1, 64}, {1, 100, 600}};

class GemmTest : public ::testing::TestWithParam<int> {};

TEST_P(GemmTest, MatchesDoubleReferenceAndFmaChain) {
    const Layout l = static_cast<Layout>(GetParam());
    for (const Shape& s : kShapes) {
        for (int acc = 0; acc <= 1; acc++) {
            auto a = Rand(s.M * s.K, 1), b = Rand(s.K * s.N, 2), c0 = Rand(s.M * s.N, 3);
            std::vector<float> c = c0;
            Gemm(l, c.data(), a.data(), b.data(), s.M, s.N, s.K, acc);
            for (int64_t i = 0; i < s.M; i++)
                for (int64_t j = 0; j < s.N; j++) {
                    double ref = acc ? c0[i * s.N + j] : 0.0, mag = std::fabs(ref);
                    float chain = acc ? c0[i * s.N + j] : 0.0f;
                    for (int64_t k = 0; k < s.K; k++) {
                        const float x = Aat(l, a.data(), s.M, s.K, i, k), y = Bat(l, b.data(), s.N, s.K, k, j);
                        ref += (double)x * y;
                        mag += std::fabs((double)x * y);
                        chain = std::fmaf(x, y, chain);
                    }
                    const float got = c[i * s.N + j];
                    ASSERT_NEAR(got, ref, (s.K + 2) * 1.2e-7 * mag + 1e-30)
                        << kLayoutName[l] << " " << s.M << "x" << s.N << "x" << s.K << " (" << i << "," << j << ")";
                    uint32_t gb, cb;
                    std::memcpy(&gb, &got, 4);
                    std::memcpy(&cb, &chain, 4);
                    ASSERT_EQ(gb, cb) << kLayoutName[l] << " not the fma chain at " << s.M << "x" << s.N << "x"
                                      << s.K << " (" << i << "," << j << ") acc=" << acc;
                }
        }
    }
}

TEST_P(GemmTest, EmptyKZeroesOrKeeps) {
    const Layout l = static_cast<Layout>(GetParam());
    auto c0 = Rand(12, 4);
    std::vector<float> c = c0;
    float dummy = 0;
    Gemm(l, c.data(), &dummy, &dummy, 3, 4, 0, 1);
    EXPECT_TRUE(bits_equal(c, c0));
    Gemm(l, c.data(), &dummy, &dummy, 3, 4, 0, 0);
    for (float x : c) EXPECT_EQ(x, 0.0f);
}

// Row pieces of odd sizes: each call sees another M, yet every row has the bits of the
// full call. For tn the A columns of a piece are copied into their own [K, m] array.
TEST_P(GemmTest, RowChunksAreBitIdentical) {
    const Layout l = static_cast<Layout>(GetParam());
    const int64_t M = 157, N = 45, K = 301;
    auto a = Rand(M * K, 5), b = Rand(K * N, 6), c0 = Rand(M * N, 7);
    for (int acc = 0; acc <= 1; acc++) {
        std::vector<float> full = c0;
        Gemm(l, full.data(), a.data(), b.data(), M, N, K, acc);
        const int64_t pieces[] = {1, 5, 7, 13, 3, 29, 11, 88};  // sums to 157
        std::vector<float> chunked = c0;
        int64_t m0 = 0;
        for (int64_t m : pieces) {
            std::vector<float> asub(m * K);
            for (int64_t i = 0; i < m; i++)
                for (int64_t k = 0; k < K; k++)
                    asub[l == TN ? k * m + i : i * K + k] = Aat(l, a.data(), M, K, m0 + i, k);
            Gemm(l, chunked.data() + m0 * N, asub.data(), b.data(), m, N, K, acc);
            m0 += m;
        }
        ASSERT_EQ(m0, M);
        EXPECT_TRUE(bits_equal(full, chunked)) << kLayoutName[l] << " acc=" << acc;
    }
}

// Column pieces: the element's column position inside a 16-wide tile changes.
TEST_P(GemmTest, ColumnChunksAreBitIdentical) {
    const Layout l = static_cast<Layout>(GetParam());
    const int64_t M = 23, N = 101, K = 77;
    auto a = Rand(M * K, 8), b = Rand(K * N, 9);
    std::vector<float> full(M * N);
    Gemm(l, full.data(), a.data(), b.data(), M, N, K, 0);
    const int64_t pieces[] = {3, 1, 17, 9, 33, 38};  // sums to 101
    int64_t j0 = 0;
    for (int64_t n : pieces) {
        std::vector<float> bsub(K * n), csub(M * n);
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < n; j++) bsub[l == NT ? j * K + k : k * n + j] = Bat(l, b.data(), N, K, k, j0 + j);
        Gemm(l, csub.data(), a.data(), bsub.data(), M, n, K, 0);
        for (int64_t i = 0; i < M; i++)
            ASSERT_EQ(0, std::memcmp(&csub[i * n], &full[i * N + j0], n * sizeof(float)))
                << kLayoutName[l] << " row " << i << " columns from " << j0;
        j0 += n;
    }
}

TEST_P(GemmTest, ThreadCountDoesNotChangeBits) {
    const Layout l = static_cast<Layout>(GetParam());
    const Shape shapes[] = {{301, 77, 333}, {13, 1000, 700}, {500, 500, 40}};
    for (const Shape& s : shapes) {
        auto a = Rand(s.M * s.K, 10), b = Rand(s.K * s.N, 11), c0 = Rand(s.M * s.N, 12);
        for (int acc = 0; acc <= 1; acc++) {
            std::vector<std::vector<float>> out;
            for (int threads : {1, 2, 3}) {
                remat_ref_set_threads(threads);
                EXPECT_EQ(remat_ref_get_threads(), threads);
                std::vector<float> c = c0;  // acc = 0 must ignore these values
                Gemm(l, c.data(), a.data(), b.data(), s.M, s.N, s.K, acc);
                out.push_back(c);
            }
            remat_ref_set_threads(1);
            EXPECT_TRUE(bits_equal(out[0], out[1])) << kLayoutName[l] << " 1 vs 2 threads " << s.M << "x" << s.N;
            EXPECT_TRUE(bits_equal(out[0], out[2])) << kLayoutName[l] << " 1 vs 3 threads " << s.M << "x" << s.N;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Layouts, GemmTest, ::testing::Values(NT, NN, TN),
                         [](const ::testing::TestParamInfo<int>& i) { return std::string(kLayoutName[i.param]); });

TEST(GemmThreads, SetThreadsClampsToOne) {
    remat_ref_set_threads(0);
    EXPECT_EQ(remat_ref_get_threads(), 1);
    remat_ref_set_threads(-5);
    EXPECT_EQ(remat_ref_get_threads(), 1);
}

// ---------------------------------------------------------------- linear

struct LinearCase {
    int64_t T, N, in, out;
};

TEST(Linear, ForwardAndBackwardMatchFiniteDifferences) {
    const LinearCase lc = {3, 4, 7, 5};
    const int64_t rows = lc.T * lc.N;
    auto x = Rand(rows * lc.in, 20), w = Rand(lc.out * lc.in, 21), b = Rand(lc.out, 22), g = Rand(rows * lc.out, 23);
    std::vector<float> y(rows * lc.out);
    remat_ref_linear_forward(y.data(), x.data(), w.data(), b.data(), rows, lc.in, lc.out);
    auto xd = to_double(x), wd = to_double(w), bd = to_double(b);
    auto fwd = [&](std::vector<double>* yo) {
        double L = 0;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t o = 0; o < lc.out; o++) {
                double acc = bd[o];
                for (int64_t i = 0; i < lc.in; i++) acc += xd[r * lc.in + i] * wd[o * lc.in + i];
                if (yo) (*yo)[r * lc.out + o] = acc;
                L += g[r * lc.out + o] * acc;
            }
        return L;
    };
    std::vector<double> yd(y.size());
    fwd(&yd);
    for (size_t i = 0; i < y.size(); i++) EXPECT_NEAR(y[i], yd[i], 1e-5) << i;

    // Gradients accumulate onto what is there.
    auto dx0 = Rand(x.size(), 24), dw0 = Rand(w.size(), 25), db0 = Rand(b.size(), 26);
    std::vector<float> dx = dx0, dw = dw0, db = db0, scratch(remat_ref_linear_scratch_elems(lc.in, lc.out));
    remat_ref_linear_backward(dx.data(), dw.data(), db.data(), g.data(), x.data(), w.data(), scratch.data(), lc.T,
                              lc.N, lc.in, lc.out);
    for (size_t i = 0; i < dx.size(); i++) dx[i] -= dx0[i];
    for (size_t i = 0; i < dw.size(); i++) dw[i] -= dw0[i];
    for (size_t i = 0; i < db.size(); i++) db[i] -= db0[i];
    auto L = [&] { return fwd(nullptr); };
    CheckFd("linear dinp", xd, L, dx.data(), 1e-4, 1e-5);
    CheckFd("linear dweight", wd, L, dw.data(), 1e-4, 1e-5);
    CheckFd("linear dbias", bd, L, db.data(), 1e-4, 1e-5);
}

TEST(Linear, NullBiasAndOptionalGradients) {
    const int64_t T = 2, N = 3, in = 4, out = 5, rows = T * N;
    auto x = Rand(rows * in, 30), w = Rand(out * in, 31), g = Rand(rows * out, 32);
    std::vector<float> y(rows * out), yref(rows * out);
    remat_ref_linear_forward(y.data(), x.data(), w.data(), nullptr, rows, in, out);
    remat_ref_gemm_nt(yref.data(), x.data(), w.data(), rows, out, in, 0);
    EXPECT_TRUE(bits_equal(y, yref));
    std::vector<float> dw1(out * in, 0.0f), dw2(out * in, 0.0f), dx(rows * in, 0.0f), db(out, 0.0f);
    std::vector<float> scratch(remat_ref_linear_scratch_elems(in, out));
    remat_ref_linear_backward(nullptr, dw1.data(), nullptr, g.data(), x.data(), w.data(), scratch.data(), T, N, in,
                              out);
    remat_ref_linear_backward(dx.data(), dw2.data(), db.data(), g.data(), x.data(), w.data(), scratch.data(), T, N,
                              in, out);
    EXPECT_TRUE(bits_equal(dw1, dw2));
}

// The full-T call and the same steps in time chunks, backward chunks last-first,
// give the same bits for out, dinp, dweight and dbias.
TEST(Linear, TimeChunksLastFirstAreBitIdentical) {
    const int64_t T = 7, N = 5, in = 37, out = 19;
    auto x = Rand(T * N * in, 40), w = Rand(out * in, 41), b = Rand(out, 42), g = Rand(T * N * out, 43);
    auto dx0 = Rand(x.size(), 44), dw0 = Rand(w.size(), 45), db0 = Rand(b.size(), 46);
    std::vector<float> scratch(remat_ref_linear_scratch_elems(in, out));

    std::vector<float> y(T * N * out), dx = dx0, dw = dw0, db = db0;
    remat_ref_linear_forward(y.data(), x.data(), w.data(), b.data(), T * N, in, out);
    remat_ref_linear_backward(dx.data(), dw.data(), db.data(), g.data(), x.data(), w.data(), scratch.data(), T, N, in,
                              out);

    const int64_t bounds[] = {0, 1, 4, 5, 7};  // chunks of 1, 3, 1, 2 steps
    const int nchunks = 4;
    std::vector<float> yc(T * N * out), dxc = dx0, dwc = dw0, dbc = db0;
    for (int c = 0; c < nchunks; c++) {
        const int64_t t0 = bounds[c], ts = bounds[c + 1] - t0;
        remat_ref_linear_forward(yc.data() + t0 * N * out, x.data() + t0 * N * in, w.data(), b.data(), ts * N, in,
                                 out);
    }
    for (int c = nchunks - 1; c >= 0; c--) {
        const int64_t t0 = bounds[c], ts = bounds[c + 1] - t0;
        remat_ref_linear_backward(dxc.data() + t0 * N * in, dwc.data(), dbc.data(), g.data() + t0 * N * out,
                                  x.data() + t0 * N * in, w.data(), scratch.data(), ts, N, in, out);
    }
    EXPECT_TRUE(bits_equal(y, yc));
    EXPECT_TRUE(bits_equal(dx, dxc));
    EXPECT_TRUE(bits_equal(dw, dwc));
    EXPECT_TRUE(bits_equal(db, dbc));

    // The spec's order: dweight = ((dw0 + P_{T-1}) + P_{T-2}) + ... with P_t a float GEMM.
    std::vector<float> dwspec = dw0, pt(out * in);
    for (int64_t t = T - 1; t >= 0; t--) {
        remat_ref_gemm_tn(pt.data(), g.data() + t * N * out, x.data() + t * N * in, out, in, N, 0);
        for (size_t e = 0; e < pt.size(); e++) dwspec[e] = dwspec[e] + pt[e];
    }
    EXPECT_TRUE(bits_equal(dw, dwspec));
}

// ---------------------------------------------------------------- neurons

struct NeuronCase {
    remat_layer_type type;
    remat_neuron_opts o;
};

std::vector<NeuronCase> AllNeuronCases() {
    std::vector<NeuronCase> cases;
    for (int lif = 0; lif <= 1; lif++)
        for (int dec = 0; dec <= lif; dec++)
            for (int soft = 0; soft <= 1; soft++)
                for (int det = 0; det <= 1; det++)
                    for (int at = 0; at <= 1; at++) {
                        NeuronCase c;
                        c.type = lif ? REMAT_LAYER_LIF : REMAT_LAYER_IF;
                        c.o.v_threshold = 0.8f;
                        c.o.v_reset = soft ? 0.0f : -0.3f;
                        c.o.soft_reset = soft;
                        c.o.detach_reset = det;
                        c.o.surrogate = at ? REMAT_SURROGATE_ATAN : REMAT_SURROGATE_SIGMOID;
                        c.o.alpha = at ? 2.0f : 4.0f;
                        c.o.tau = 1.7f;
                        c.o.decay_input = lif ? dec : 1;
                        cases.push_back(c);
                    }
    return cases;
}

std::string CaseName(const NeuronCase& c) {
    std::string s = c.type == REMAT_LAYER_LIF ? "lif" : "if";
    if (c.type == REMAT_LAYER_LIF) s += c.o.decay_input ? "/decay_input" : "/no_decay_input";
    s += c.o.soft_reset ? "/soft" : "/hard";
    s += c.o.detach_reset ? "/detach" : "/no_detach";
    s += c.o.surrogate == REMAT_SURROGATE_ATAN ? "/atan" : "/sigmoid";
    return s;
}

double Charge(const NeuronCase& c, double v, double x) {
    const double vr = NeuronVr(c.o), tau = c.o.tau;
    if (c.type == REMAT_LAYER_IF) return v + x;
    return c.o.decay_input ? v + (x - (v - vr)) / tau : v - (v - vr) / tau + x;
}

double SurrogateD(const NeuronCase& c, double u) {
    const double a = c.o.alpha;
    if (c.o.surrogate == REMAT_SURROGATE_ATAN) {
        const double w = M_PI / 2 * a * u;
        return (a / 2) / (1 + w * w);
    }
    const double s = 1.0 / (1.0 + std::exp(-a * u));
    return a * s * (1 - s);
}

// Double forward. base_u == nullptr: the spiking forward (fills u_out with u_t).
// Otherwise the surrogate-linearised forward around base_u (see the file comment).
// Returns L = sum ws * s + sum gfin * v_last.
double NeuronForwardD(const NeuronCase& c, const std::vector<double>& x, const std::vector<double>& v0,
                      const std::vector<double>* base_u, std::vector<double>* u_out, const std::vector<float>& ws,
                      const std::vector<float>& gfin, int64_t T, int64_t nf) {
    return NeuronLossD(c.o, [&](double v, double xi) { return Charge(c, v, xi); }, x, v0, base_u, u_out, nullptr, ws,
                       gfin, T, nf);
}

// Inputs whose potentials stay at least 1e-3 away from the threshold, so float and
// double agree on every spike.
void NeuronInputs(const NeuronCase& c, int64_t T, int64_t nf, std::vector<float>* x, std::vector<float>* v0) {
    for (uint64_t key = 100;; key++) {
        *x = Rand(T * nf, key, -0.6f, 1.6f);
        *v0 = Rand(nf, key + 5000, -0.5f, 0.7f);
        std::vector<double> u(T * nf);
        std::vector<float> ws(T * nf, 0.0f), gf(nf, 0.0f);
        NeuronForwardD(c, to_double(*x), to_double(*v0), nullptr, &u, ws, gf, T, nf);
        double margin = 1e9;
        for (double e : u) margin = std::fmin(margin, std::fabs(e));
        if (margin > 1e-3) return;
    }
}

class NeuronTest : public ::testing::TestWithParam<int> {};

TEST_P(NeuronTest, ForwardMatchesSpecInFloatAndDouble) {
    const NeuronCase c = AllNeuronCases()[GetParam()];
    const int64_t T = 6, nf = 9;
    std::vector<float> x, v0;
    NeuronInputs(c, T, nf, &x, &v0);
    std::vector<float> s(T * nf), h(T * nf), v = v0;
    remat_ref_neuron_forward(s.data(), h.data(), v.data(), x.data(), c.type, &c.o, T, nf);

    // The spec's formulas in float, in the spec's order (a division by tau): same bits.
    std::vector<float> vf = v0;
    const float vth = c.o.v_threshold, vr = c.o.soft_reset ? 0.0f : c.o.v_reset, tau = c.o.tau;
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < nf; i++) {
            const float xv = x[t * nf + i], vv = vf[i];
            float hh;
            if (c.type == REMAT_LAYER_IF) hh = vv + xv;
            else if (c.o.decay_input) hh = vv + (xv - (vv - vr)) / tau;
            else hh = vv - (vv - vr) / tau + xv;
            const float ss = hh - vth >= 0.0f ? 1.0f : 0.0f;
            vf[i] = c.o.soft_reset ? hh - ss * vth : hh * (1.0f - ss) + vr * ss;
            ASSERT_EQ(std::memcmp(&hh, &h[t * nf + i], 4), 0) << CaseName(c) << " h at " << t << "," << i;
            ASSERT_EQ(ss, s[t * nf + i]) << CaseName(c) << " s at " << t << "," << i;
        }
    EXPECT_TRUE(bits_equal(vf, v)) << CaseName(c);

    // And the double forward gives the same spikes and nearly the same potentials.
    std::vector<double> u(T * nf);
    std::vector<float> zero_ws(T * nf, 0.0f), zero_g(nf, 0.0f);
    NeuronForwardD(c, to_double(x), to_double(v0), nullptr, &u, zero_ws, zero_g, T, nf);
    int spikes = 0;
    for (int64_t e = 0; e < T * nf; e++) {
        EXPECT_EQ(s[e], u[e] >= 0 ? 1.0f : 0.0f) << CaseName(c) << " " << e;
        EXPECT_NEAR(h[e], u[e] + c.o.v_threshold, 1e-5) << CaseName(c) << " " << e;
        spikes += s[e] != 0.0f;
    }
    EXPECT_GT(spikes, 0) << CaseName(c);
    EXPECT_LT(spikes, T * nf) << CaseName(c);

    // h may be NULL: same spikes and state.
    std::vector<float> s2(T * nf), v2 = v0;
    remat_ref_neuron_forward(s2.data(), nullptr, v2.data(), x.data(), c.type, &c.o, T, nf);
    EXPECT_TRUE(bits_equal(s, s2));
    EXPECT_TRUE(bits_equal(v, v2));
}

TEST_P(NeuronTest, BackwardMatchesSpecTableInDouble) {
    const NeuronCase c = AllNeuronCases()[GetParam()];
    const int64_t T = 6, nf = 9;
    std::vector<float> x, v0;
    NeuronInputs(c, T, nf, &x, &v0);
    std::vector<float> s(T * nf), h(T * nf), v = v0;
    remat_ref_neuron_forward(s.data(), h.data(), v.data(), x.data(), c.type, &c.o, T, nf);
    auto ws = Rand(T * nf, 200), gfin = Rand(nf, 201), dx0 = Rand(T * nf, 202);
    std::vector<float> dx = dx0, gv = gfin;
    remat_ref_neuron_backward(dx.data(), gv.data(), ws.data(), h.data(), c.type, &c.o, T, nf);

    const double vth = c.o.v_threshold, vr = NeuronVr(c.o), tau = c.o.tau;
    const bool lif = c.type == REMAT_LAYER_LIF;
    std::vector<double> g(gfin.begin(), gfin.end()), dxd(T * nf);
    for (int64_t t = T - 1; t >= 0; t--)
        for (int64_t i = 0; i < nf; i++) {
            const double hh = h[t * nf + i], u = hh - vth, ss = u >= 0 ? 1.0 : 0.0, sg = SurrogateD(c, u);
            const double gs = ws[t * nf + i], gvv = g[i];
            double gh;
            if (!c.o.soft_reset && !c.o.detach_reset) gh = (gs + gvv * (vr - hh)) * sg + gvv * (1 - ss);
            else if (!c.o.soft_reset) gh = gs * sg + gvv * (1 - ss);
            else if (!c.o.detach_reset) gh = (gs - vth * gvv) * sg + gvv;
            else gh = gs * sg + gvv;
            dxd[t * nf + i] = lif && c.o.decay_input ? gh / tau : gh;
            g[i] = lif ? gh * (1 - 1 / tau) : gh;
        }
    for (int64_t e = 0; e < T * nf; e++)
        EXPECT_NEAR(dx[e] - dx0[e], dxd[e], 1e-5 * (1 + std::fabs(dxd[e]))) << CaseName(c) << " dx " << e;
    for (int64_t i = 0; i < nf; i++)
        EXPECT_NEAR(gv[i], g[i], 1e-5 * (1 + std::fabs(g[i]))) << CaseName(c) << " gv " << i;
}

TEST_P(NeuronTest, BackwardIsDerivativeOfSurrogateForward) {
    const NeuronCase c = AllNeuronCases()[GetParam()];
    const int64_t T = 5, nf = 7;
    std::vector<float> x, v0;
    NeuronInputs(c, T, nf, &x, &v0);
    std::vector<float> s(T * nf), h(T * nf), v = v0;
    remat_ref_neuron_forward(s.data(), h.data(), v.data(), x.data(), c.type, &c.o, T, nf);
    auto ws = Rand(T * nf, 300), gfin = Rand(nf, 301);
    std::vector<float> dx(T * nf, 0.0f), gv = gfin;
    remat_ref_neuron_backward(dx.data(), gv.data(), ws.data(), h.data(), c.type, &c.o, T, nf);

    auto xd = to_double(x), vd = to_double(v0);
    std::vector<double> base_u(T * nf);
    NeuronForwardD(c, xd, vd, nullptr, &base_u, ws, gfin, T, nf);
    auto L = [&] { return NeuronForwardD(c, xd, vd, &base_u, nullptr, ws, gfin, T, nf); };
    CheckFd((CaseName(c) + " dx").c_str(), xd, L, dx.data(), 1e-4, 1e-5);
    CheckFd((CaseName(c) + " gv").c_str(), vd, L, gv.data(), 1e-4, 1e-5);
}

// Chunks of time with v (forward) and gv (backward, last-first) carried across.
TEST_P(NeuronTest, TimeChunksAreBitIdentical) {
    const NeuronCase c = AllNeuronCases()[GetParam()];
    const int64_t T = 7, nf = 2500;  // more than one element block
    auto x = Rand(T * nf, 400, -0.6f, 1.6f), v0 = Rand(nf, 401, -0.5f, 0.7f), ws = Rand(T * nf, 402),
         g0 = Rand(nf, 403), dx0 = Rand(T * nf, 404);
    std::vector<float> s(T * nf), h(T * nf), v = v0, dx = dx0, gv = g0;
    remat_ref_neuron_forward(s.data(), h.data(), v.data(), x.data(), c.type, &c.o, T, nf);
    remat_ref_neuron_backward(dx.data(), gv.data(), ws.data(), h.data(), c.type, &c.o, T, nf);

    const int64_t bounds[] = {0, 2, 3, 7};
    std::vector<float> sc(T * nf), hc(T * nf), vc = v0, dxc = dx0, gvc = g0;
    for (int k = 0; k < 3; k++)
        remat_ref_neuron_forward(sc.data() + bounds[k] * nf, hc.data() + bounds[k] * nf, vc.data(),
                                 x.data() + bounds[k] * nf, c.type, &c.o, bounds[k + 1] - bounds[k], nf);
    for (int k = 2; k >= 0; k--)
        remat_ref_neuron_backward(dxc.data() + bounds[k] * nf, gvc.data(), ws.data() + bounds[k] * nf,
                                  hc.data() + bounds[k] * nf, c.type, &c.o, bounds[k + 1] - bounds[k], nf);
    EXPECT_TRUE(bits_equal(s, sc)) << CaseName(c);
    EXPECT_TRUE(bits_equal(h, hc)) << CaseName(c);
    EXPECT_TRUE(bits_equal(v, vc)) << CaseName(c);
    EXPECT_TRUE(bits_equal(dx, dxc)) << CaseName(c);
    EXPECT_TRUE(bits_equal(gv, gvc)) << CaseName(c);
}

INSTANTIATE_TEST_SUITE_P(AllOptions, NeuronTest, ::testing::Range(0, (int)AllNeuronCases().size()),
                         [](const ::testing::TestParamInfo<int>& i) {
                             std::string n = CaseName(AllNeuronCases()[i.param]);
                             for (char& ch : n)
                                 if (ch == '/') ch = '_';
                             return n;
                         });

TEST(Neuron, HeavisideOfZeroIsOne) {
    NeuronCase c = AllNeuronCases()[0];  // IF, hard reset
    c.o.v_threshold = 1.0f;
    c.o.v_reset = 0.0f;
    float x[2] = {1.0f, 0.25f}, v[2] = {0.0f, 0.75f}, s[2], h[2];
    remat_ref_neuron_forward(s, h, v, x, c.type, &c.o, 1, 2);
    EXPECT_EQ(s[0], 1.0f);  // h = 1 exactly
    EXPECT_EQ(s[1], 1.0f);  // 0.75 + 0.25 = 1 exactly
    EXPECT_EQ(v[0], 0.0f);
}

// Potentials far from the threshold: the surrogate vanishes, nothing overflows.
TEST(Neuron, SurrogateIsFiniteForExtremePotentials) {
    const float hs[] = {-1e30f, -1e6f, -100.0f, -30.0f, 30.0f, 100.0f, 1e6f, 1e30f};
    const int64_t nf = sizeof hs / sizeof hs[0];
    for (const NeuronCase& c : AllNeuronCases()) {
        std::vector<float> h(hs, hs + nf), ds(nf, 1.0f), dx(nf, 0.0f), gv(nf, 0.0f);
        remat_ref_neuron_backward(dx.data(), gv.data(), ds.data(), h.data(), c.type, &c.o, 1, nf);
        for (int64_t i = 0; i < nf; i++) {
            EXPECT_TRUE(std::isfinite(dx[i])) << CaseName(c) << " h=" << hs[i];
            EXPECT_LE(std::fabs(dx[i]), 0.05f) << CaseName(c) << " h=" << hs[i];
        }
    }
}

// ---------------------------------------------------------------- batch norm

struct BnD {
    std::vector<double> out, mean, var;
};

BnD BatchNormD(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b, int64_t rows,
               int64_t C) {
    BnD r{std::vector<double>(rows * C), std::vector<double>(C), std::vector<double>(C)};
    for (int64_t c = 0; c < C; c++) {
        double m = 0, v = 0;
        for (int64_t i = 0; i < rows; i++) m += x[i * C + c];
        m /= rows;
        for (int64_t i = 0; i < rows; i++) v += (x[i * C + c] - m) * (x[i * C + c] - m);
        v /= rows;
        r.mean[c] = m;
        r.var[c] = v;
        for (int64_t i = 0; i < rows; i++) r.out[i * C + c] = (x[i * C + c] - m) / std::sqrt(v + 1e-5) * w[c] + b[c];
    }
    return r;
}

TEST(BatchNorm, ForwardAndRunningStatistics) {
    for (int64_t C : {5, 1100}) {  // 1100: more than one channel block
        const int64_t rows = 11;
        auto x = Rand(rows * C, 500, -2.0f, 3.0f), w = Rand(C, 501, 0.5f, 1.5f), b = Rand(C, 502),
             rm0 = Rand(C, 503), rv0 = Rand(C, 504, 0.5f, 2.0f);
        std::vector<float> y(rows * C), mean(C), rstd(C), rm = rm0, rv = rv0;
        remat_ref_batchnorm_forward(y.data(), mean.data(), rstd.data(), rm.data(), rv.data(), x.data(), w.data(),
                                    b.data(), rows, C, 1, 0.1f, 1e-5);
        BnD d = BatchNormD(to_double(x), to_double(w), to_double(b), rows, C);
        for (int64_t e = 0; e < rows * C; e++) EXPECT_NEAR(y[e], d.out[e], 2e-5 * (1 + std::fabs(d.out[e]))) << e;
        for (int64_t c = 0; c < C; c++) {
            EXPECT_NEAR(mean[c], d.mean[c], 1e-6);
            EXPECT_NEAR(rstd[c], 1 / std::sqrt(d.var[c] + 1e-5), 1e-6 / std::sqrt(d.var[c] + 1e-5));
            EXPECT_NEAR(rm[c], 0.9 * rm0[c] + 0.1 * d.mean[c], 1e-6);
            EXPECT_NEAR(rv[c], 0.9 * rv0[c] + 0.1 * d.var[c] * rows / (rows - 1), 1e-5) << "unbiased var";
        }
        // The layer's own momentum and eps (PyTorch's formula: running = (1 - m) running + m stat,
        // rstd = 1 / sqrt(var + eps)).
        std::vector<float> y3(rows * C), mean3(C), rstd3(C), rm3 = rm0, rv3 = rv0;
        remat_ref_batchnorm_forward(y3.data(), mean3.data(), rstd3.data(), rm3.data(), rv3.data(), x.data(), w.data(),
                                    b.data(), rows, C, 1, 0.3f, 0.25);
        for (int64_t c = 0; c < C; c++) {
            const double rs = 1 / std::sqrt(d.var[c] + 0.25);
            EXPECT_NEAR(rstd3[c], rs, 1e-6 * rs) << "eps";
            EXPECT_NEAR(rm3[c], 0.7 * rm0[c] + 0.3 * d.mean[c], 1e-6) << "momentum";
            EXPECT_NEAR(rv3[c], 0.7 * rv0[c] + 0.3 * d.var[c] * rows / (rows - 1), 1e-5) << "momentum";
            for (int64_t i = 0; i < rows; i++)
                EXPECT_NEAR(y3[i * C + c], (x[i * C + c] - d.mean[c]) * rs * w[c] + b[c], 2e-5);
        }
        // A recomputation passes NULL running statistics: same output, nothing else written.
        std::vector<float> y2(rows * C), mean2(C), rstd2(C);
        remat_ref_batchnorm_forward(y2.data(), mean2.data(), rstd2.data(), nullptr, nullptr, x.data(), w.data(),
                                    b.data(), rows, C, 1, 0.1f, 1e-5);
        EXPECT_TRUE(bits_equal(y, y2));
        EXPECT_TRUE(bits_equal(mean, mean2));
        EXPECT_TRUE(bits_equal(rstd, rstd2));
    }
}

TEST(BatchNorm, BackwardMatchesFiniteDifferences) {
    const int64_t rows = 9, C = 4;
    auto x = Rand(rows * C, 510, -2.0f, 3.0f), w = Rand(C, 511, 0.5f, 1.5f), b = Rand(C, 512), g = Rand(rows * C, 513);
    std::vector<float> y(rows * C), mean(C), rstd(C);
    remat_ref_batchnorm_forward(y.data(), mean.data(), rstd.data(), nullptr, nullptr, x.data(), w.data(), b.data(),
                                rows, C, 1, 0.1f, 1e-5);
    auto dx0 = Rand(rows * C, 514), dw0 = Rand(C, 515), db0 = Rand(C, 516);
    std::vector<float> dx = dx0, dw = dw0, db = db0;
    remat_ref_batchnorm_backward(dx.data(), dw.data(), db.data(), g.data(), x.data(), w.data(), mean.data(),
                                 rstd.data(), rows, C, 1);
    for (size_t i = 0; i < dx.size(); i++) dx[i] -= dx0[i];
    for (int64_t c = 0; c < C; c++) dw[c] -= dw0[c], db[c] -= db0[c];
    auto xd = to_double(x), wd = to_double(w), bd = to_double(b);
    auto L = [&] {
        BnD d = BatchNormD(xd, wd, bd, rows, C);
        double l = 0;
        for (int64_t e = 0; e < rows * C; e++) l += g[e] * d.out[e];
        return l;
    };
    CheckFd("batchnorm dinp", xd, L, dx.data(), 1e-3, 1e-5);
    CheckFd("batchnorm dweight", wd, L, dw.data(), 1e-3, 1e-5);
    CheckFd("batchnorm dbias", bd, L, db.data(), 1e-3, 1e-5);
}

// ---------------------------------------------------------------- dropout, add

TEST(Dropout, MaskFollowsTheCounterBasedGenerator) {
    const int64_t nf = 5000;
    for (float p : {0.0f, 0.2f, 0.5f}) {
        std::vector<float> mask(nf);
        remat_ref_dropout_mask(mask.data(), 42, 3, 7, p, nf);
        const float scale = 1.0f / (1.0f - p);
        int64_t kept = 0;
        for (int64_t i = 0; i < nf; i++) {
            const float u = remat_rng_uniform(42, REMAT_RNG_DROPOUT, remat_rng_dropout_key(3, 7), i);
            ASSERT_EQ(mask[i], u >= p ? scale : 0.0f) << i;
            kept += mask[i] != 0.0f;
        }
        EXPECT_NEAR((double)kept / nf, 1.0 - p, 0.03) << p;
        // Another iteration or layer: another mask.
        std::vector<float> other(nf);
        remat_ref_dropout_mask(other.data(), 42, 4, 7, p, nf);
        if (p > 0) {
            EXPECT_FALSE(bits_equal(mask, other));
        }
    }
}

TEST(Dropout, ForwardSharesMaskOverTimeAndBackwardMatchesFiniteDifferences) {
    const int64_t T = 4, nf = 2100;  // spans two element blocks
    const float p = 0.3f;
    auto x = Rand(T * nf, 600), g = Rand(T * nf, 601), dx0 = Rand(T * nf, 602);
    std::vector<float> mask(nf), y(T * nf), dx = dx0;
    remat_ref_dropout_mask(mask.data(), 9, 1, 2, p, nf);
    remat_ref_dropout_forward(y.data(), x.data(), 9, 1, 2, p, T, nf);
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < nf; i++) ASSERT_EQ(y[t * nf + i], x[t * nf + i] * mask[i]);
    // A time chunk draws the same mask.
    std::vector<float> yc(nf);
    remat_ref_dropout_forward(yc.data(), x.data() + 2 * nf, 9, 1, 2, p, 1, nf);
    EXPECT_EQ(0, std::memcmp(yc.data(), y.data() + 2 * nf, nf * sizeof(float)));

    remat_ref_dropout_backward(dx.data(), g.data(), 9, 1, 2, p, T, nf);
    for (size_t i = 0; i < dx.size(); i++) dx[i] -= dx0[i];
    // Finite differences on a subset (the forward is element-wise).
    const int64_t n_sub = 64;
    std::vector<double> xs(n_sub);
    std::vector<float> grad_sub(n_sub);
    for (int64_t k = 0; k < n_sub; k++) {
        const int64_t e = (k * 137) % (T * nf);
        xs[k] = x[e];
        grad_sub[k] = dx[e];
    }
    auto L = [&] {
        double l = 0;
        for (int64_t k = 0; k < n_sub; k++) {
            const int64_t e = (k * 137) % (T * nf);
            const int64_t i = e % nf;
            const double keep = remat_rng_uniform(9, REMAT_RNG_DROPOUT, remat_rng_dropout_key(1, 2), i) >= p;
            l += g[e] * xs[k] * keep / (1.0 - p);
        }
        return l;
    };
    CheckFd("dropout dinp", xs, L, grad_sub.data(), 1e-5, 1e-6);
}

TEST(Add, ForwardAndBackward) {
    const int64_t n = 1001;
    auto a = Rand(n, 700), b = Rand(n, 701), g = Rand(n, 702), da0 = Rand(n, 703), db0 = Rand(n, 704);
    std::vector<float> y(n), da = da0, db = db0;
    remat_ref_add_forward(y.data(), a.data(), b.data(), n);
    for (int64_t i = 0; i < n; i++) ASSERT_EQ(y[i], a[i] + b[i]);
    remat_ref_add_backward(da.data(), db.data(), g.data(), n);
    std::vector<float> gda(n), gdb(n);
    for (int64_t i = 0; i < n; i++) gda[i] = da[i] - da0[i], gdb[i] = db[i] - db0[i];
    auto ad = to_double(a), bd = to_double(b);
    auto L = [&] {
        double l = 0;
        for (int64_t i = 0; i < n; i++) l += g[i] * (ad[i] + bd[i]);
        return l;
    };
    CheckFd("add da", ad, L, gda.data(), 1e-5, 1e-6);
    CheckFd("add db", bd, L, gdb.data(), 1e-5, 1e-6);
    // One side without a gradient; both sides the same buffer.
    std::vector<float> only = da0, same(n, 0.0f);
    remat_ref_add_backward(only.data(), nullptr, g.data(), n);
    remat_ref_add_backward(same.data(), same.data(), g.data(), n);
    for (int64_t i = 0; i < n; i++) {
        ASSERT_EQ(only[i], da0[i] + g[i]);
        ASSERT_EQ(same[i], g[i] + g[i]);
    }
}

// ---------------------------------------------------------------- losses

double LossD(remat_loss_type type, const std::vector<double>& out, const std::vector<int32_t>& labels, int64_t T,
             int64_t N, int64_t K) {
    double L = 0;
    for (int64_t n = 0; n < N; n++) {
        std::vector<double> r(K, 0.0);
        for (int64_t k = 0; k < K; k++) {
            for (int64_t t = 0; t < T; t++) r[k] += out[(t * N + n) * K + k];
            r[k] /= T;
        }
        if (type == REMAT_LOSS_RATE_MSE) {
            for (int64_t k = 0; k < K; k++) {
                const double d = r[k] - (k == labels[n] ? 1.0 : 0.0);
                L += d * d / (N * K);
            }
        } else {
            double se = 0;
            for (int64_t k = 0; k < K; k++) se += std::exp(r[k]);
            L += (std::log(se) - r[labels[n]]) / N;
        }
    }
    return L;
}

TEST(Loss, ForwardAndBackwardMatchFiniteDifferences) {
    const int64_t T = 3, N = 4, K = 5;
    const std::vector<int32_t> labels = {0, 4, 2, 2};
    for (remat_loss_type type : {REMAT_LOSS_RATE_MSE, REMAT_LOSS_RATE_CE}) {
        auto out = Rand(T * N * K, 800, 0.0f, 1.0f);
        std::vector<float> rate(N * K);
        const float L = remat_ref_loss_forward(rate.data(), out.data(), labels.data(), type, T, N, K);
        auto od = to_double(out);
        EXPECT_NEAR(L, LossD(type, od, labels, T, N, K), 1e-6) << type;
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < K; k++) {
                float r = 0.0f;
                for (int64_t t = 0; t < T; t++) r = r + out[(t * N + n) * K + k];
                ASSERT_EQ(rate[n * K + k], r / (float)T) << "rate: ascending t, then / T";
            }
        auto d0 = Rand(T * N * K, 801);
        std::vector<float> d = d0;
        remat_ref_loss_backward(d.data(), rate.data(), labels.data(), type, T, N, K);
        for (size_t i = 0; i < d.size(); i++) d[i] -= d0[i];
        for (int64_t t = 1; t < T; t++)
            for (int64_t e = 0; e < N * K; e++) EXPECT_NEAR(d[t * N * K + e], d[e], 1e-7) << "same for every t";
        CheckFd(type == REMAT_LOSS_RATE_MSE ? "rate_mse" : "rate_ce", od, [&] { return LossD(type, od, labels, T, N, K); },
                d.data(), 1e-4, 1e-6);
    }
}

// ---------------------------------------------------------------- optimisers, fills

TEST(Optimizer, SgdMomentumFollowsPyTorch) {
    const int64_t n = 37;
    auto p0 = Rand(n, 900), g1 = Rand(n, 901), g2 = Rand(n, 902);
    std::vector<float> p = p0, buf(n, 123.0f);
    const float lr = 0.1f, mom = 0.9f;
    remat_ref_sgd_update(p.data(), buf.data(), g1.data(), lr, mom, 1, n);
    for (int64_t i = 0; i < n; i++) {
        ASSERT_EQ(buf[i], g1[i]) << "first step: buf = g";
        ASSERT_EQ(p[i], p0[i] - lr * g1[i]);
    }
    std::vector<float> p1 = p;
    remat_ref_sgd_update(p.data(), buf.data(), g2.data(), lr, mom, 0, n);
    for (int64_t i = 0; i < n; i++) {
        const float b = mom * g1[i] + g2[i];
        ASSERT_EQ(buf[i], b);
        ASSERT_EQ(p[i], p1[i] - lr * b);
    }
}

TEST(Optimizer, AdamMatchesDoubleReference) {
    const int64_t n = 29;
    const float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    const auto p0 = Rand(n, 910);
    auto p = p0;
    std::vector<float> m(n, 0.0f), v(n, 0.0f);
    std::vector<double> pd = to_double(p), md(n, 0.0), vd(n, 0.0);
    for (int step = 1; step <= 4; step++) {
        auto g = Rand(n, 911 + step);
        remat_ref_adam_update(p.data(), m.data(), v.data(), g.data(), lr, b1, b2, eps, step, n);
        for (int64_t i = 0; i < n; i++) {
            md[i] = b1 * md[i] + (1 - (double)b1) * g[i];
            vd[i] = b2 * vd[i] + (1 - (double)b2) * g[i] * g[i];
            const double mh = md[i] / (1 - std::pow((double)b1, step)), vh = vd[i] / (1 - std::pow((double)b2, step));
            pd[i] -= lr * mh / (std::sqrt(vh) + eps);
        }
    }
    for (int64_t i = 0; i < n; i++) {
        EXPECT_NEAR(p[i], pd[i], 1e-6) << i;
        EXPECT_NEAR(m[i], md[i], 1e-6) << i;
        EXPECT_NEAR(v[i], vd[i], 1e-7) << i;
    }
    for (int64_t i = 0; i < n; i++) EXPECT_NE(p[i], p0[i]) << "every parameter moved";
}

TEST(Fill, UniformBernoulliLabels) {
    const int64_t n = 4000;
    std::vector<float> u(n), bern(n);
    remat_ref_fill_uniform(u.data(), n, -0.5f, 0.25f, 5, REMAT_RNG_PARAM, 17);
    for (int64_t i = 0; i < n; i++) {
        ASSERT_EQ(u[i], -0.5f + 0.75f * remat_rng_uniform(5, REMAT_RNG_PARAM, 17, i));
        ASSERT_GE(u[i], -0.5f);
        ASSERT_LT(u[i], 0.25f);
    }
    remat_ref_fill_bernoulli(bern.data(), n, 0.25f, 5, REMAT_RNG_INPUT, 3);
    int64_t ones = 0;
    for (int64_t i = 0; i < n; i++) {
        ASSERT_TRUE(bern[i] == 0.0f || bern[i] == 1.0f);
        ASSERT_EQ(bern[i], remat_rng_uniform(5, REMAT_RNG_INPUT, 3, i) < 0.25f ? 1.0f : 0.0f);
        ones += bern[i] == 1.0f;
    }
    EXPECT_NEAR((double)ones / n, 0.25, 0.03);
    std::vector<int32_t> labels(n), again(n), other(n);
    remat_ref_fill_labels(labels.data(), n, 10, 5, 1);
    remat_ref_fill_labels(again.data(), n, 10, 5, 1);
    remat_ref_fill_labels(other.data(), n, 10, 5, 2);
    std::vector<int> hist(10, 0);
    for (int64_t i = 0; i < n; i++) {
        ASSERT_GE(labels[i], 0);
        ASSERT_LT(labels[i], 10);
        hist[labels[i]]++;
    }
    for (int c = 0; c < 10; c++) EXPECT_GT(hist[c], n / 20) << "class " << c;
    EXPECT_EQ(labels, again);
    EXPECT_NE(labels, other);
}

}  // namespace

// Event counts: integers in 0..max, every value drawn, the bf16 twin the same values.
TEST(Fill, CountsAreIntegersInRangeAndBf16Exact) {
    const int64_t n = 20000;
    for (int32_t mx : {1, 3, 255}) {
        std::vector<float> v(n);
        std::vector<uint16_t> b(n);
        remat_ref_fill_counts(v.data(), n, mx, 7, 2, 5);
        remat_ref_fill_counts_bf16(b.data(), n, mx, 7, 2, 5);
        std::vector<int64_t> seen(mx + 1, 0);
        for (int64_t i = 0; i < n; i++) {
            ASSERT_EQ(v[i], std::floor(v[i])) << i;
            ASSERT_GE(v[i], 0.0f);
            ASSERT_LE(v[i], (float)mx);
            seen[(size_t)v[i]]++;
            uint32_t bits = (uint32_t)b[i] << 16;
            float w;
            std::memcpy(&w, &bits, 4);
            ASSERT_EQ(w, v[i]) << i;
        }
        if (mx < 16) {
            for (int32_t k = 0; k <= mx; k++) EXPECT_NEAR((double)seen[k] / n, 1.0 / (mx + 1), 0.02) << k;
        }
    }
    EXPECT_EQ(remat_count_of_uniform(0.99999994f, 255), 255.0f);  // rounds to 256: clamped
}
