// cuda_test.cc - the CUDA backend against the reference backend.
//
// Three parts:
//  1. HostBodies.*: the per-element arithmetic of the CUDA kernels (cuda/kernel_bodies.h)
//     compiled on the host and compared bit for bit with the reference kernels (core/ref/). These run
//     in every build, with or without CUDA or a GPU.
//  2. CudaKernels.*: every backend entry on the device against the reference function
//     on random inputs. Exact (bit) equality wherever the computation is the same
//     element-wise chain (neurons, dropout, add, fills, optimisers, batch norm, MSE,
//     the tiled GEMM, compressors and their error messages); stated tolerances where it
//     is not (cuBLAS GEMMs: |d| <= 4 (K+2) eps sum|a b|; CE loss: 1 float ulp and its
//     gradient T ulps after T accumulations, because the device's double exp/log may
//     differ from libm in the last double bit).
//     Determinism: repeated runs bit-identical, time-chunked calls equal full ones.
//  3. CudaExecutor.*: whole training steps of the shipped tiny models, CUDA against
//     the reference, and every plan of a small grid bit-identical to the CUDA baseline.
// Parts 2 and 3 GTEST_SKIP with the backend's reason ("no CUDA device: ...", or
// "... built without CUDA") where no device can be used.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/exec/backend.h"
#include "core/codec/compress.h"
#include "core/exec/executor.h"
#include "core/model/model.h"
#include "core/model/plan.h"
#include "core/ref/ref_kernels.h"
#include "cuda/compress_messages.h"
#include "cuda/cuda_backend.h"
#include "cuda/kernel_bodies.h"
#include "tests/testutil.h"

namespace {

using remat_test::conv_geom;
using remat_test::dilated;
using remat_test::grouped;

using Floats = std::vector<float>;

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// Index of the first element whose bits differ, or -1.
int64_t first_bit_diff(const Floats &a, const Floats &b) {
    if (a.size() != b.size()) return 0;
    for (size_t i = 0; i < a.size(); i++)
        if (bits(a[i]) != bits(b[i])) return (int64_t)i;
    return -1;
}

#define EXPECT_BITS_EQ(a, b, what)                                                                      \
    do {                                                                                                \
        const Floats &a_ = (a), &b_ = (b);                                                              \
        ASSERT_EQ(a_.size(), b_.size()) << what;                                                        \
        int64_t d_ = first_bit_diff(a_, b_);                                                            \
        EXPECT_EQ(d_, -1) << what << ": first difference at " << d_ << ": " << (d_ >= 0 ? a_[d_] : 0.f) \
                          << " vs " << (d_ >= 0 ? b_[d_] : 0.f);                                        \
    } while (0)

Floats uniform(size_t n, float lo, float hi, uint32_t seed) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    Floats v(n);
    for (auto &x : v) x = d(g);
    return v;
}

Floats spikes(size_t n, double rate, uint32_t seed) {
    std::mt19937 g(seed);
    std::bernoulli_distribution d(rate);
    Floats v(n);
    for (auto &x : v) x = d(g) ? 1.0f : 0.0f;
    return v;
}

struct NeuronCase {
    remat_layer_type type;
    remat_neuron_opts o;
    std::string name;
};

// Every option combination of docs/determinism.md, with non-default values mixed in.
std::vector<NeuronCase> neuron_cases() {
    std::vector<NeuronCase> cs;
    for (int lif = 0; lif < 2; lif++)
        for (int soft = 0; soft < 2; soft++)
            for (int detach = 0; detach < 2; detach++)
                for (int at = 0; at < 2; at++)
                    for (int dec = 0; dec < (lif ? 2 : 1); dec++) {
                        NeuronCase c;
                        c.type = lif ? REMAT_LAYER_LIF : REMAT_LAYER_IF;
                        c.o.v_threshold = (soft + detach) % 2 ? 0.75f : 1.0f;
                        c.o.v_reset = at ? -0.25f : 0.0f;
                        c.o.soft_reset = soft;
                        c.o.detach_reset = detach;
                        c.o.surrogate = at ? REMAT_SURROGATE_ATAN : REMAT_SURROGATE_SIGMOID;
                        c.o.alpha = at ? 2.0f : 4.0f;
                        c.o.tau = dec ? 3.0f : 1.5f;
                        c.o.decay_input = dec;
                        c.name = std::string(lif ? "lif" : "if") + (soft ? " soft" : " hard") +
                                 (detach ? " detach" : "") + (at ? " atan" : " sigmoid") +
                                 (lif ? (dec ? " decay_input" : " no-decay_input") : "");
                        cs.push_back(c);
                    }
    return cs;
}

float v_init(const remat_neuron_opts &o) { return o.soft_reset ? 0.0f : o.v_reset; }

// Potentials that stress the surrogate's e^x (with v_threshold 0 and alpha 4, u = h and
// the polynomial's argument is -4h exactly): arguments whose k = x / ln2 lands exactly on
// a half-integer (round-to-nearest-even and floor(y + 0.5) differ on half of them), the
// clamps at -87 and 88 and beyond, huge and tiny magnitudes, then random values.
Floats stress_potentials(size_t n) {
    Floats h;
    for (int j = -130; j <= 130; j++) {
        const float y0 = (float)j + 0.5f;
        float x = y0 / 1.44269504088896341f;
        for (int d = 0; d < 64; d++) x = std::nextafter(x, -INFINITY);
        for (int d = 0; d < 128; d++, x = std::nextafter(x, INFINITY))
            if (x * 1.44269504088896341f == y0) h.push_back(-x / 4.0f);
    }
    for (float v : {0.0f, -0.0f, 21.75f, -21.75f, 22.0f, -22.0f, 30.0f, -30.0f, 1e3f, -1e3f, 1e30f, -1e30f, 1e-30f,
                    -1e-30f, FLT_MIN, -FLT_MIN, 0.25f, -0.25f})
        h.push_back(v);
    const Floats r = uniform(n > h.size() ? n - h.size() : 0, -30.0f, 30.0f, 19);
    h.insert(h.end(), r.begin(), r.end());
    h.resize(n);
    return h;
}

NeuronCase stress_case(remat_layer_type type) {
    NeuronCase c;
    c.type = type;
    c.o = remat_neuron_opts{0.0f, 0.0f, 0, 0, REMAT_SURROGATE_SIGMOID, 4.0f, 3.0f, 1};
    c.name = type == REMAT_LAYER_LIF ? "stress lif" : "stress if";
    return c;
}

// ======================================================================================
// 1. Host bodies against the reference
// ======================================================================================

TEST(HostBodies, SurrogateAtRoundingTiesAndExtremesMatchesReference) {
    const int64_t T = 2, nf = 2048;
    Floats h = stress_potentials(T * nf);
    size_t ties = 0;
    for (int64_t i = 0; i < nf; i++) ties += std::fabs(h[i]) < 40.0f && h[i] != 0.0f;
    ASSERT_GT(ties, 100u);
    for (remat_layer_type type : {REMAT_LAYER_IF, REMAT_LAYER_LIF}) {
        const NeuronCase c = stress_case(type);
        remat_cuda::neuron_params q{};
        q.lif = type == REMAT_LAYER_LIF;
        q.decay_input = q.lif;
        q.vth = 0.0f;
        q.vr = 0.0f;
        q.tau = 3.0f;
        q.alpha = 4.0f;
        const Floats ds = uniform(T * nf, -1.0f, 1.0f, 20);
        Floats dx_ref(T * nf, 0.0f), gv_ref(nf, 0.0f), dx(T * nf, 0.0f), gv(nf, 0.0f);
        remat_ref_neuron_backward(dx_ref.data(), gv_ref.data(), ds.data(), h.data(), c.type, &c.o, T, nf);
        for (int64_t i = 0; i < nf; i++) remat_cuda::neuron_backward_elem(dx.data(), gv.data(), ds.data(), h.data(), q, T, nf, i);
        EXPECT_BITS_EQ(dx, dx_ref, c.name + " dx");
        EXPECT_BITS_EQ(gv, gv_ref, c.name + " gv");
    }
}

TEST(HostBodies, NeuronsMatchReference) {
    const int64_t T = 9, nf = 301;
    for (const NeuronCase &c : neuron_cases()) {
        remat_cuda::neuron_params q{};
        q.lif = c.type == REMAT_LAYER_LIF;
        q.soft = c.o.soft_reset;
        q.detach = c.o.detach_reset;
        q.decay_input = q.lif && c.o.decay_input;
        q.atan_sg = c.o.surrogate == REMAT_SURROGATE_ATAN;
        q.vth = c.o.v_threshold;
        q.vr = q.soft ? 0.0f : c.o.v_reset;
        q.tau = c.o.tau;
        q.alpha = c.o.alpha;
        const Floats x = uniform(T * nf, -0.5f, 1.5f, 1);
        Floats s_ref(T * nf), h_ref(T * nf), v_ref(nf, v_init(c.o));
        remat_ref_neuron_forward(s_ref.data(), h_ref.data(), v_ref.data(), x.data(), c.type, &c.o, T, nf);
        Floats s(T * nf), h(T * nf), v(nf, v_init(c.o));
        for (int64_t i = 0; i < nf; i++) remat_cuda::neuron_forward_elem(s.data(), h.data(), v.data(), x.data(), q, T, nf, i);
        EXPECT_BITS_EQ(s, s_ref, c.name + " spikes");
        EXPECT_BITS_EQ(h, h_ref, c.name + " h");
        EXPECT_BITS_EQ(v, v_ref, c.name + " v");

        const Floats ds = uniform(T * nf, -1.0f, 1.0f, 2), dx0 = uniform(T * nf, -0.1f, 0.1f, 3),
                     gv0 = uniform(nf, -0.2f, 0.2f, 4);
        Floats dx_ref = dx0, gv_ref = gv0, dx = dx0, gv = gv0;
        remat_ref_neuron_backward(dx_ref.data(), gv_ref.data(), ds.data(), h_ref.data(), c.type, &c.o, T, nf);
        for (int64_t i = 0; i < nf; i++)
            remat_cuda::neuron_backward_elem(dx.data(), gv.data(), ds.data(), h_ref.data(), q, T, nf, i);
        EXPECT_BITS_EQ(dx, dx_ref, c.name + " dx");
        EXPECT_BITS_EQ(gv, gv_ref, c.name + " gv");
    }
}

// plif (core/ref/plif.c): the four charges, both resets, detach, both surrogates, w's
// per-block partials (3 blocks of 2 samples).
TEST(HostBodies, PlifMatchesReference) {
    const int64_t T = 5, N = 6, F = 37, nf = N * F, nblk = 3;
    for (const NeuronCase &c : neuron_cases()) {
        if (c.type != REMAT_LAYER_LIF) continue;
        remat_neuron_opts o = c.o;
        remat_cuda::neuron_params q{};
        q.lif = 1;
        q.soft = o.soft_reset;
        q.detach = o.detach_reset;
        q.decay_input = o.decay_input;
        q.atan_sg = o.surrogate == REMAT_SURROGATE_ATAN;
        q.vth = o.v_threshold;
        q.vr = q.soft ? 0.0f : o.v_reset;
        q.alpha = o.alpha;
        const float w = -0.3f, k = remat_cuda::plif_k(w);
        ASSERT_EQ(remat_cuda::float_bits(k), remat_cuda::float_bits(remat_ref_plif_k(w)));
        const Floats x = uniform(T * nf, -0.5f, 1.9f, 31);
        Floats s_ref(T * nf), vp_ref(T * nf), v_ref(nf, v_init(o)), s(T * nf), vp(T * nf), v(nf, v_init(o));
        remat_ref_plif_forward(s_ref.data(), vp_ref.data(), v_ref.data(), x.data(), &w, &o, T, nf);
        for (int64_t i = 0; i < nf; i++) remat_cuda::plif_forward_elem(s.data(), vp.data(), v.data(), x.data(), k, q, T, nf, i);
        EXPECT_BITS_EQ(s, s_ref, "plif " + c.name + " spikes");
        EXPECT_BITS_EQ(vp, vp_ref, "plif " + c.name + " vp");
        EXPECT_BITS_EQ(v, v_ref, "plif " + c.name + " v");
        const Floats ds = uniform(T * nf, -1.0f, 1.0f, 32), dx0 = uniform(T * nf, -0.1f, 0.1f, 33),
                     gv0 = uniform(nf, -0.2f, 0.2f, 34), dw0 = uniform(nblk, -0.1f, 0.1f, 35);
        Floats dx_ref = dx0, gv_ref = gv0, dw_ref = dw0, dx = dx0, gv = gv0, dw = dw0;
        std::vector<double> rows_ref(T * N), rows(T * N);
        remat_ref_plif_backward(dx_ref.data(), gv_ref.data(), rows_ref.data(), dw_ref.data(), ds.data(), vp_ref.data(),
                                x.data(), &w, &o, T, N, F, nblk);
        for (int64_t n = 0; n < N; n++)
            remat_cuda::plif_backward_row(dx.data(), gv.data(), rows.data(), ds.data(), vp_ref.data(), x.data(), k, q, T, N,
                                          F, n);
        for (int64_t b = 0; b < nblk; b++) remat_cuda::plif_wgrad_block(dw.data(), rows.data(), k, T, N, nblk, b);
        EXPECT_BITS_EQ(dx, dx_ref, "plif " + c.name + " dx");
        EXPECT_BITS_EQ(gv, gv_ref, "plif " + c.name + " gv");
        EXPECT_BITS_EQ(dw, dw_ref, "plif " + c.name + " dw");
    }
}

TEST(HostBodies, GemmChainIsTheReferenceGemm) {
    const int64_t M = 13, N = 21, K = 600;  // K > 256: the reference blocks K (exactly)
    const Floats A = uniform(M * K, -1, 1, 5), B = uniform(N * K, -1, 1, 6), C0 = uniform(M * N, -1, 1, 7);
    for (int acc = 0; acc < 2; acc++) {
        Floats ref = C0, mine = C0;
        remat_ref_gemm_nt(ref.data(), A.data(), B.data(), M, N, K, acc);  // B as [N, K]
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                mine[i * N + j] = remat_cuda::gemm_chain(A.data() + i * K, 1, B.data() + j * K, 1, K, acc ? C0[i * N + j] : 0.0f);
        EXPECT_BITS_EQ(mine, ref, "nt accumulate " + std::to_string(acc));
        ref = C0;
        remat_ref_gemm_nn(ref.data(), A.data(), B.data(), M, N, K, acc);  // B as [K, N]
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                mine[i * N + j] = remat_cuda::gemm_chain(A.data() + i * K, 1, B.data() + j, N, K, acc ? C0[i * N + j] : 0.0f);
        EXPECT_BITS_EQ(mine, ref, "nn accumulate " + std::to_string(acc));
        ref = C0;
        remat_ref_gemm_tn(ref.data(), A.data(), B.data(), M, N, K, acc);  // A as [K, M]
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                mine[i * N + j] = remat_cuda::gemm_chain(A.data() + i, M, B.data() + j, N, K, acc ? C0[i * N + j] : 0.0f);
        EXPECT_BITS_EQ(mine, ref, "tn accumulate " + std::to_string(acc));
    }
}

TEST(HostBodies, BatchNormMatchesReference) {
    const int64_t rows = 53, C = 7;
    const Floats x = uniform(rows * C, -2, 3, 8), w = uniform(C, 0.5, 1.5, 9), b = uniform(C, -0.5, 0.5, 10);
    Floats out(rows * C), mean(C), rstd(C), rm = uniform(C, -1, 1, 11), rv = uniform(C, 0.5, 2, 12);
    Floats rm0 = rm, rv0 = rv;
    remat_ref_batchnorm_forward(out.data(), mean.data(), rstd.data(), rm.data(), rv.data(), x.data(), w.data(), b.data(),
                                rows, C, 1, 0.1f, 1e-5);
    Floats o2(rows * C), m2(C), r2(C), rm2 = rm0, rv2 = rv0;
    for (int64_t c = 0; c < C; c++) {
        const remat_cuda::bn_stats s = remat_cuda::batchnorm_channel_stats(x.data(), rows, C, 1, c, 1e-5);
        m2[c] = s.mean;
        r2[c] = s.rstd;
        rm2[c] = 0.9f * rm2[c] + 0.1f * s.mean;
        rv2[c] = 0.9f * rv2[c] + 0.1f * (float)s.unbiased;
        for (int64_t r = 0; r < rows; r++) o2[r * C + c] = remat_cuda::batchnorm_out(x[r * C + c], s.mean, s.rstd, w[c], b[c]);
    }
    EXPECT_BITS_EQ(m2, mean, "mean");
    EXPECT_BITS_EQ(r2, rstd, "rstd");
    EXPECT_BITS_EQ(rm2, rm, "running_mean");
    EXPECT_BITS_EQ(rv2, rv, "running_var");
    EXPECT_BITS_EQ(o2, out, "out");

    const Floats dy = uniform(rows * C, -1, 1, 13), dx0 = uniform(rows * C, -0.1f, 0.1f, 14);
    Floats dx = dx0, dw(C, 0.25f), db(C, -0.25f);
    remat_ref_batchnorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(), rstd.data(),
                                 rows, C, 1);
    Floats dx2 = dx0, dw2(C, 0.25f), db2(C, -0.25f);
    for (int64_t c = 0; c < C; c++) {
        double sdy, sdyx;
        remat_cuda::batchnorm_channel_grads(dy.data(), x.data(), mean[c], rstd[c], rows, C, 1, c, &sdy, &sdyx);
        db2[c] = db2[c] + (float)sdy;
        dw2[c] = dw2[c] + (float)sdyx;
        const float mdy = (float)(sdy / (double)rows), mdyx = (float)(sdyx / (double)rows), k = w[c] * rstd[c];
        for (int64_t r = 0; r < rows; r++)
            dx2[r * C + c] = remat_cuda::batchnorm_dinp(dx2[r * C + c], x[r * C + c], dy[r * C + c], mean[c], rstd[c], mdy,
                                                        mdyx, k);
    }
    EXPECT_BITS_EQ(dx2, dx, "dinp");
    EXPECT_BITS_EQ(dw2, dw, "dweight");
    EXPECT_BITS_EQ(db2, db, "dbias");
}

TEST(HostBodies, DropoutLossAdamMatchReference) {
    const int64_t nf = 1000;
    Floats mask(nf), mine(nf);
    const float p = 0.3f, scale = 1.0f / (1.0f - p);
    remat_ref_dropout_mask(mask.data(), 42, 3, 5, p, nf);
    for (int64_t i = 0; i < nf; i++)
        mine[i] = remat_cuda::dropout_mask_value(42, remat_rng_dropout_key(3, 5), p, scale, i);
    EXPECT_BITS_EQ(mine, mask, "dropout mask");

    const int64_t T = 5, N = 9, K = 6;
    const Floats out = spikes(T * N * K, 0.4, 15);
    std::vector<int32_t> labels(N);
    for (int64_t n = 0; n < N; n++) labels[n] = (int32_t)((n * 7) % K);
    for (int type = 0; type < 2; type++) {
        Floats rate(N * K), rate2(N * K);
        const float L = remat_ref_loss_forward(rate.data(), out.data(), labels.data(), (remat_loss_type)type, T, N, K);
        for (int64_t e = 0; e < N * K; e++) rate2[e] = remat_cuda::rate_elem(out.data(), T, N * K, e);
        EXPECT_BITS_EQ(rate2, rate, "rate");
        double total = 0.0;
        for (int64_t n = 0; n < N; n++) {
            if (type == REMAT_LOSS_RATE_MSE) {
                for (int64_t k = 0; k < K; k++) {
                    const double d = (double)rate2[n * K + k] - (k == labels[n] ? 1.0 : 0.0);
                    total += d * d;
                }
            } else {
                total += remat_cuda::ce_term(rate2.data() + n * K, labels[n], K);
            }
        }
        const float L2 = (float)(type == REMAT_LOSS_RATE_MSE ? total / ((double)N * (double)K) : total / (double)N);
        EXPECT_EQ(bits(L2), bits(L)) << "loss type " << type;
        Floats d_ref(T * N * K, 0.5f), d2(T * N * K, 0.5f);
        remat_ref_loss_backward(d_ref.data(), rate.data(), labels.data(), (remat_loss_type)type, T, N, K);
        for (int64_t n = 0; n < N; n++) {
            double mx = 0, se = 0;
            if (type == REMAT_LOSS_RATE_CE) remat_cuda::ce_row(rate2.data() + n * K, K, &mx, &se);
            for (int64_t k = 0; k < K; k++) {
                const float gt = remat_cuda::loss_grad(type == REMAT_LOSS_RATE_MSE, rate2[n * K + k], k == labels[n], mx,
                                                       se, N, K, T);
                for (int64_t t = 0; t < T; t++) d2[(t * N + n) * K + k] += gt;
            }
        }
        EXPECT_BITS_EQ(d2, d_ref, "loss gradient type " + std::to_string(type));
    }

    const int64_t n = 257;
    const Floats g = uniform(n, -1, 1, 16);
    Floats p_ref = uniform(n, -1, 1, 17), m_ref(n, 0.0f), v_ref(n, 0.0f);
    Floats p2 = p_ref, m2 = m_ref, v2 = v_ref;
    for (int step = 1; step <= 3; step++) {
        remat_ref_adam_update(p_ref.data(), m_ref.data(), v_ref.data(), g.data(), 0.01f, 0.9f, 0.999f, 1e-8f, step, n);
        const double bc1 = 1.0 - pow(0.9f, (double)step), bc2 = 1.0 - pow(0.999f, (double)step);
        const float ss = (float)(0.01f / bc1), bs = (float)sqrt(bc2);
        for (int64_t i = 0; i < n; i++)
            remat_cuda::adam_elem(&p2[i], &m2[i], &v2[i], g[i], 0.9f, 0.999f, 1.0f - 0.9f, 1.0f - 0.999f, ss, bs, 1e-8f);
        EXPECT_BITS_EQ(p2, p_ref, "adam param step " + std::to_string(step));
        EXPECT_BITS_EQ(v2, v_ref, "adam v step " + std::to_string(step));
    }
}

TEST(HostBodies, CompressorPredicatesMatchReference) {
    // The bit encoding byte by byte against remat_compress.
    const int64_t n = 77;
    const Floats s = spikes(n, 0.3, 18);
    std::vector<uint8_t> ref((n + 7) / 8);
    remat_error err{};
    ASSERT_EQ(remat_compress(REMAT_COMP_BIT, ref.data(), (int64_t)ref.size(), s.data(), n, &err), REMAT_OK) << err.msg;
    for (int64_t b = 0; b < (int64_t)ref.size(); b++) EXPECT_EQ(remat_cuda::bit_pack_byte(s.data(), n, b), ref[b]) << b;
    // Value classes against what the reference accepts, on awkward values.
    const float vals[] = {0.0f, -0.0f, 1.0f, 2.0f, 255.0f, 256.0f, 0.5f, 1.0f + FLT_EPSILON, NAN, INFINITY, -1.0f, 3.0f};
    for (float v : vals) {
        uint8_t out[1];
        remat_error e1{}, e2{};
        const bool bin_ok = remat_compress(REMAT_COMP_BOOL, out, 1, &v, 1, &e1) == REMAT_OK;
        const bool u8_ok = remat_compress(REMAT_COMP_UINT8, out, 1, &v, 1, &e2) == REMAT_OK;
        EXPECT_EQ((bool)remat_cuda::is_binary(v), bin_ok) << v;
        EXPECT_EQ((bool)remat_cuda::is_uint8_value(v), u8_ok) << v;
    }
}

// Every refusal the CUDA compressors can report, against the reference's text for the
// same condition.
TEST(HostBodies, CompressorMessagesMatchReference) {
    using namespace remat_cuda;
    auto same = [](remat_status s1, const remat_error &e1, remat_status s2, const remat_error &e2, const char *what) {
        EXPECT_EQ(s2, s1) << what;
        EXPECT_STREQ(e2.msg, e1.msg) << what;
    };
    uint8_t buf[64] = {0};
    float fl[16] = {0};
    {
        float src[8] = {0, 1, 0, 0.5f, 1, 0, 0, 0};
        remat_error e1{}, e2{};
        same(remat_compress(REMAT_COMP_BIT, buf, 1, src, 8, &e1), e1,
             msg_refuse_value(&e2, REMAT_COMP_BIT, 3, 0.5f, REMAT_CUDA_WHAT_BINARY), e2, "binary refusal");
        src[3] = 256.0f;
        remat_error e3{}, e4{};
        same(remat_compress(REMAT_COMP_UINT8, buf, 8, src, 8, &e3), e3,
             msg_refuse_value(&e4, REMAT_COMP_UINT8, 3, 256.0f, REMAT_CUDA_WHAT_UINT8), e4, "uint8 refusal");
    }
    {
        remat_error e1{}, e2{};
        same(remat_compress((remat_compressor)9, buf, 1, fl, 1, &e1), e1,
             msg_check_args((remat_compressor)9, 1, 1, buf, "dst_bytes", &e2), e2, "compressor id");
        remat_error e3{}, e4{};
        same(remat_compress(REMAT_COMP_BOOL, buf, 1, fl, -1, &e3), e3,
             msg_check_args(REMAT_COMP_BOOL, -1, 1, buf, "dst_bytes", &e4), e4, "negative n");
        remat_error e5{}, e6{};
        same(remat_decompress(REMAT_COMP_BIT, fl, 8, nullptr, 1, &e5), e5,
             msg_check_args(REMAT_COMP_BIT, 8, 1, nullptr, "src_bytes", &e6), e6, "missing buffer");
        remat_error e7{}, e8{};
        same(remat_compress(REMAT_COMP_BIT, buf, 1, nullptr, 8, &e7), e7, msg_null_src(&e8, REMAT_COMP_BIT, 8), e8,
             "null src");
        remat_error e9{}, e10{};
        same(remat_decompress(REMAT_COMP_BOOL, nullptr, 4, buf, 4, &e9), e9, msg_null_dst(&e10, REMAT_COMP_BOOL, 4),
             e10, "null dst");
        remat_error e11{}, e12{};
        same(remat_compress(REMAT_COMP_BOOL, buf, 5, fl, 4, &e11), e11,
             msg_wrong_size(&e12, REMAT_COMP_BOOL, "dst_bytes", 4, 5), e12, "wrong size");
    }
    {
        const uint8_t b[4] = {0, 1, 2, 0};
        remat_error e1{}, e2{};
        same(remat_decompress(REMAT_COMP_BOOL, fl, 4, b, 4, &e1), e1, msg_bool_byte(&e2, 2, 2), e2, "bool byte");
        const uint8_t p[2] = {0xff, 0x07};
        remat_error e3{}, e4{};
        same(remat_decompress(REMAT_COMP_BIT, fl, 10, p, 2, &e3), e3, msg_bit_padding(&e4, 1, 2, 0x07), e4,
             "bit padding");
        remat_error e5{}, e6{};
        same(remat_decompress(REMAT_COMP_SPARSE, fl, 10, buf, 3, &e5), e5, msg_sparse_multiple(&e6, 3), e6,
             "sparse multiple of 4");
        const uint32_t range[2] = {1, 12}, order[3] = {1, 5, 5};
        remat_error e7{}, e8{};
        same(remat_decompress(REMAT_COMP_SPARSE, fl, 10, range, 8, &e7), e7, msg_sparse_range(&e8, 1, 10, 12), e8,
             "sparse range");
        remat_error e9{}, e10{};
        same(remat_decompress(REMAT_COMP_SPARSE, fl, 10, order, 12, &e9), e9, msg_sparse_order(&e10, 2, 5, 5), e10,
             "sparse order");
        remat_error e11{}, e12{};
        same(remat_decompress(REMAT_COMP_SPARSE, fl, 10, order, 0 + 4, &e11), e11, REMAT_OK, e12, "sparse valid");
    }
}

// ======================================================================================
// 2. Device kernels against the reference
// ======================================================================================

// A device buffer from segment_alloc.
struct Dev {
    remat_backend *b;
    void *p = nullptr;
    int64_t bytes;
    Dev(remat_backend *be, int64_t nbytes) : b(be), bytes(nbytes) {
        remat_error err{};
        EXPECT_EQ(b->ops->segment_alloc(b->ctx, nbytes > 0 ? nbytes : 4, &p, &err), REMAT_OK) << err.msg;
    }
    Dev(remat_backend *be, const Floats &v) : Dev(be, (int64_t)v.size() * 4) { put(v); }
    ~Dev() {
        if (p) b->ops->segment_free(b->ctx, p);
    }
    Dev(const Dev &) = delete;
    Dev &operator=(const Dev &) = delete;
    float *f() { return (float *)p; }
    template <class T>
    void put(const std::vector<T> &v) {
        if (!v.empty()) b->ops->from_host(b->ctx, p, v.data(), (int64_t)(v.size() * sizeof(T)));
    }
    Floats get(size_t n) {
        Floats v(n);
        if (n) b->ops->to_host(b->ctx, v.data(), p, (int64_t)n * 4);
        return v;
    }
    std::vector<uint8_t> get_bytes(size_t n) {
        std::vector<uint8_t> v(n);
        if (n) b->ops->to_host(b->ctx, v.data(), p, (int64_t)n);
        return v;
    }
};

class CudaKernels : public ::testing::Test {
  protected:
    remat_backend be{};
    bool have = false;
    void SetUp() override {
        remat_error err{};
        if (remat_backend_cuda_init(&be, 0, &err) != REMAT_OK) GTEST_SKIP() << err.msg;
        have = true;
    }
    void TearDown() override {
        if (have) remat_backend_free(&be);
    }
    const remat_backend_ops &ops() const { return *be.ops; }
    void set_gemm(remat_cuda_gemm m) {
        remat_error err{};
        ASSERT_EQ(remat_backend_cuda_set_gemm(&be, m, &err), REMAT_OK) << err.msg;
    }
    remat_cuda_info info() {
        remat_cuda_info i{};
        remat_error err{};
        EXPECT_EQ(remat_backend_cuda_get_info(&be, &i, &err), REMAT_OK) << err.msg;
        return i;
    }
};

TEST_F(CudaKernels, NeuronsMatchReferenceBitForBit) {
    const int64_t T = 11, nf = 5003;  // not a multiple of the block size
    for (const NeuronCase &c : neuron_cases()) {
        const Floats x = uniform(T * nf, -0.5f, 1.5f, 21);
        Floats s_ref(T * nf), h_ref(T * nf), v_ref(nf, v_init(c.o));
        remat_ref_neuron_forward(s_ref.data(), h_ref.data(), v_ref.data(), x.data(), c.type, &c.o, T, nf);
        for (int keep_h = 0; keep_h < 2; keep_h++) {
            Dev dx_(&be, x), ds_(&be, T * nf * 4), dh(&be, T * nf * 4), dv(&be, Floats(nf, v_init(c.o)));
            ops().neuron_forward(be.ctx, ds_.f(), keep_h ? dh.f() : nullptr, dv.f(), dx_.f(), c.type, &c.o, T, nf);
            EXPECT_BITS_EQ(ds_.get(T * nf), s_ref, c.name + " spikes");
            EXPECT_BITS_EQ(dv.get(nf), v_ref, c.name + " v");
            if (keep_h) EXPECT_BITS_EQ(dh.get(T * nf), h_ref, c.name + " h");
        }
        const Floats gs = uniform(T * nf, -1.0f, 1.0f, 22), dx0 = uniform(T * nf, -0.1f, 0.1f, 23),
                     gv0 = uniform(nf, -0.2f, 0.2f, 24);
        Floats dx_ref = dx0, gv_ref = gv0;
        remat_ref_neuron_backward(dx_ref.data(), gv_ref.data(), gs.data(), h_ref.data(), c.type, &c.o, T, nf);
        Dev ddx(&be, dx0), dgv(&be, gv0), dgs(&be, gs), dh(&be, h_ref);
        ops().neuron_backward(be.ctx, ddx.f(), dgv.f(), dgs.f(), dh.f(), c.type, &c.o, T, nf);
        EXPECT_BITS_EQ(ddx.get(T * nf), dx_ref, c.name + " dx");
        EXPECT_BITS_EQ(dgv.get(nf), gv_ref, c.name + " gv");
    }
}

TEST_F(CudaKernels, SurrogateAtRoundingTiesAndExtremesMatchesReference) {
    const int64_t T = 3, nf = 4096;
    const Floats h = stress_potentials(T * nf), ds = uniform(T * nf, -1.0f, 1.0f, 27);
    for (remat_layer_type type : {REMAT_LAYER_IF, REMAT_LAYER_LIF}) {
        const NeuronCase c = stress_case(type);
        Floats dx_ref(T * nf, 0.0f), gv_ref(nf, 0.0f);
        remat_ref_neuron_backward(dx_ref.data(), gv_ref.data(), ds.data(), h.data(), c.type, &c.o, T, nf);
        Dev dh(&be, h), dds(&be, ds), ddx(&be, Floats(T * nf, 0.0f)), dgv(&be, Floats(nf, 0.0f));
        ops().neuron_backward(be.ctx, ddx.f(), dgv.f(), dds.f(), dh.f(), c.type, &c.o, T, nf);
        EXPECT_BITS_EQ(ddx.get(T * nf), dx_ref, c.name + " dx");
        EXPECT_BITS_EQ(dgv.get(nf), gv_ref, c.name + " gv");
        // Forward over the same potentials used as inputs: the threshold at 0 exactly.
        Floats s_ref(T * nf), h_ref(T * nf), v_ref(nf, 0.0f);
        remat_ref_neuron_forward(s_ref.data(), h_ref.data(), v_ref.data(), h.data(), c.type, &c.o, T, nf);
        Dev dsp(&be, T * nf * 4), dho(&be, T * nf * 4), dv(&be, Floats(nf, 0.0f));
        ops().neuron_forward(be.ctx, dsp.f(), dho.f(), dv.f(), dh.f(), c.type, &c.o, T, nf);
        EXPECT_BITS_EQ(dsp.get(T * nf), s_ref, c.name + " spikes");
        EXPECT_BITS_EQ(dho.get(T * nf), h_ref, c.name + " h");
        EXPECT_BITS_EQ(dv.get(nf), v_ref, c.name + " v");
    }
}

TEST_F(CudaKernels, NeuronTimeChunksEqualTheFullRun) {
    const int64_t T = 12, nf = 777, k = 4, tc = T / k;
    const NeuronCase c = neuron_cases()[9];
    const Floats x = uniform(T * nf, -0.5f, 1.5f, 25), gs = uniform(T * nf, -1, 1, 26);
    Dev dx_(&be, x), s_full(&be, T * nf * 4), h_full(&be, T * nf * 4), v(&be, Floats(nf, v_init(c.o)));
    ops().neuron_forward(be.ctx, s_full.f(), h_full.f(), v.f(), dx_.f(), c.type, &c.o, T, nf);
    Dev s_ch(&be, T * nf * 4), h_ch(&be, T * nf * 4), v2(&be, Floats(nf, v_init(c.o)));
    for (int64_t q = 0; q < k; q++)
        ops().neuron_forward(be.ctx, s_ch.f() + q * tc * nf, h_ch.f() + q * tc * nf, v2.f(), dx_.f() + q * tc * nf, c.type,
                             &c.o, tc, nf);
    EXPECT_BITS_EQ(s_ch.get(T * nf), s_full.get(T * nf), "spikes");
    EXPECT_BITS_EQ(v2.get(nf), v.get(nf), "v");
    Dev dgs(&be, gs), dx_full(&be, Floats(T * nf, 0.0f)), gv_full(&be, Floats(nf, 0.0f));
    ops().neuron_backward(be.ctx, dx_full.f(), gv_full.f(), dgs.f(), h_full.f(), c.type, &c.o, T, nf);
    Dev dx_ch(&be, Floats(T * nf, 0.0f)), gv_ch(&be, Floats(nf, 0.0f));
    for (int64_t q = k - 1; q >= 0; q--)
        ops().neuron_backward(be.ctx, dx_ch.f() + q * tc * nf, gv_ch.f(), dgs.f() + q * tc * nf, h_ch.f() + q * tc * nf,
                              c.type, &c.o, tc, nf);
    EXPECT_BITS_EQ(dx_ch.get(T * nf), dx_full.get(T * nf), "dx");
    EXPECT_BITS_EQ(gv_ch.get(nf), gv_full.get(nf), "gv");
}

struct LinShape {
    int64_t T, N, in, out;
};

// Shapes with edges (1, non-multiples of the 64 x 64 tile and the 16-deep K slab) and
// shapes whose per-step offsets allow cuBLAS in AUTO mode (N*in, N*out multiples of 64).
const LinShape kLinShapes[] = {{1, 1, 1, 1}, {3, 5, 17, 9}, {4, 8, 12, 16}, {2, 33, 70, 65},
                               {3, 64, 64, 128}, {5, 128, 96, 40}, {2, 16, 300, 130}};

TEST_F(CudaKernels, LinearForwardIsTheReferenceGemmInBothModes) {
    for (int mode = 0; mode < 2; mode++) {
        set_gemm((remat_cuda_gemm)mode);
        for (const LinShape &s : kLinShapes) {
            const int64_t rows = s.T * s.N;
            const Floats x = uniform(rows * s.in, -1, 1, 31), w = uniform(s.out * s.in, -0.5, 0.5, 32),
                         b = uniform(s.out, -0.1f, 0.1f, 33);
            for (int with_bias = 0; with_bias < 2; with_bias++) {
                Floats ref(rows * s.out);
                remat_ref_linear_forward(ref.data(), x.data(), w.data(), with_bias ? b.data() : nullptr, rows, s.in, s.out);
                Dev dx_(&be, x), dw(&be, w), db(&be, b), dy(&be, rows * s.out * 4);
                ops().linear_forward(be.ctx, dy.f(), dx_.f(), dw.f(), with_bias ? db.f() : nullptr, rows, s.in, s.out);
                EXPECT_BITS_EQ(dy.get(rows * s.out), ref,
                               "mode " << mode << " shape " << s.T << "x" << s.N << "x" << s.in << "->" << s.out);
            }
        }
    }
}

TEST_F(CudaKernels, LinearForwardRowsDoNotDependOnTheNumberOfRows) {
    // Forward of all T steps vs forward of a time chunk (another M, another pointer).
    const LinShape s = {8, 32, 200, 96};
    const int64_t rows = s.T * s.N;
    const Floats x = uniform(rows * s.in, -1, 1, 34), w = uniform(s.out * s.in, -0.5, 0.5, 35),
                 b = uniform(s.out, -0.1f, 0.1f, 36);
    Dev dx_(&be, x), dw(&be, w), db(&be, b), full(&be, rows * s.out * 4);
    ops().linear_forward(be.ctx, full.f(), dx_.f(), dw.f(), db.f(), rows, s.in, s.out);
    const Floats f = full.get(rows * s.out);
    for (int64_t tc : {1, 2, 4}) {
        for (int64_t t0 = 0; t0 < s.T; t0 += tc) {
            Dev part(&be, tc * s.N * s.out * 4);
            ops().linear_forward(be.ctx, part.f(), dx_.f() + t0 * s.N * s.in, dw.f(), db.f(), tc * s.N, s.in, s.out);
            const Floats pv = part.get(tc * s.N * s.out);
            const Floats expect(f.begin() + t0 * s.N * s.out, f.begin() + (t0 + tc) * s.N * s.out);
            EXPECT_BITS_EQ(pv, expect, "chunk of " << tc << " steps at t0 " << t0);
        }
    }
}

// Host reference in double, with the error bound of a K-term float dot product.
void expect_within_gemm_bound(const Floats &got, const Floats &ref32, const std::vector<double> &exact,
                              const std::vector<double> &abs_sum, int64_t K, const std::string &what) {
    const double bound_k = 4.0 * (double)(K + 2) * FLT_EPSILON;
    int bad = 0;
    for (size_t i = 0; i < got.size() && bad < 5; i++) {
        const double tol = bound_k * abs_sum[i] + 1e-30;
        if (std::fabs((double)got[i] - exact[i]) > tol || std::fabs((double)ref32[i] - exact[i]) > tol) {
            ADD_FAILURE() << what << ": element " << i << " cuda " << got[i] << " ref " << ref32[i] << " exact "
                          << exact[i] << " tol " << tol;
            bad++;
        }
    }
}

TEST_F(CudaKernels, LinearBackwardTiledIsTheReferenceAndAutoIsWithinBound) {
    for (int mode = 0; mode < 2; mode++) {
        set_gemm((remat_cuda_gemm)mode);
        for (const LinShape &s : kLinShapes) {
            const int64_t rows = s.T * s.N;
            const Floats x = uniform(rows * s.in, -1, 1, 41), w = uniform(s.out * s.in, -0.5, 0.5, 42),
                         dy = uniform(rows * s.out, -1, 1, 43), dx0 = uniform(rows * s.in, -0.1f, 0.1f, 44),
                         dw0 = uniform(s.out * s.in, -0.1f, 0.1f, 45), db0 = uniform(s.out, -0.1f, 0.1f, 46);
            Floats dx = dx0, dw = dw0, db = db0, scratch(remat_ref_linear_scratch_elems(s.in, s.out));
            remat_ref_linear_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), scratch.data(), s.T,
                                      s.N, s.in, s.out);
            Dev ddx(&be, dx0), ddw(&be, dw0), ddb(&be, db0), ddy(&be, dy), dxx(&be, x), dww(&be, w),
                dsc(&be, (int64_t)scratch.size() * 4);
            const remat_cuda_info before = info();
            ops().linear_backward(be.ctx, ddx.f(), ddw.f(), ddb.f(), ddy.f(), dxx.f(), dww.f(), dsc.f(), s.T, s.N, s.in,
                                  s.out);
            const remat_cuda_info after = info();
            const std::string what = "mode " + std::to_string(mode) + " shape " + std::to_string(s.T) + "x" +
                                     std::to_string(s.N) + "x" + std::to_string(s.in) + "->" + std::to_string(s.out);
            EXPECT_BITS_EQ(ddb.get(s.out), db, what + " dbias");
            const bool cublas_shape = (s.N * s.in) % 64 == 0 && (s.N * s.out) % 64 == 0;
            if (mode == REMAT_CUDA_GEMM_TILED || !cublas_shape) {
                EXPECT_EQ(after.gemm_calls_cublas, before.gemm_calls_cublas) << what;
                EXPECT_BITS_EQ(ddx.get(rows * s.in), dx, what + " dinp");
                EXPECT_BITS_EQ(ddw.get(s.out * s.in), dw, what + " dweight");
                continue;
            }
            EXPECT_GT(after.gemm_calls_cublas, before.gemm_calls_cublas) << what << ": AUTO did not use cuBLAS";
            // dinp = dx0 + dy W ; dweight = dw0 + sum_t dy_t^T x_t, against double sums.
            std::vector<double> ex(rows * s.in), as(rows * s.in), ew(s.out * s.in), aw(s.out * s.in);
            for (int64_t r = 0; r < rows; r++)
                for (int64_t i = 0; i < s.in; i++) {
                    double e = dx0[r * s.in + i], a = std::fabs(dx0[r * s.in + i]);
                    for (int64_t o = 0; o < s.out; o++) {
                        e += (double)dy[r * s.out + o] * w[o * s.in + i];
                        a += std::fabs((double)dy[r * s.out + o] * w[o * s.in + i]);
                    }
                    ex[r * s.in + i] = e, as[r * s.in + i] = a;
                }
            for (int64_t o = 0; o < s.out; o++)
                for (int64_t i = 0; i < s.in; i++) {
                    double e = dw0[o * s.in + i], a = std::fabs(dw0[o * s.in + i]);
                    for (int64_t r = 0; r < rows; r++) {
                        e += (double)dy[r * s.out + o] * x[r * s.in + i];
                        a += std::fabs((double)dy[r * s.out + o] * x[r * s.in + i]);
                    }
                    ew[o * s.in + i] = e, aw[o * s.in + i] = a;
                }
            expect_within_gemm_bound(ddx.get(rows * s.in), dx, ex, as, s.out, what + " dinp");
            expect_within_gemm_bound(ddw.get(s.out * s.in), dw, ew, aw, rows, what + " dweight");
        }
    }
}

TEST_F(CudaKernels, LinearBackwardTimeChunksLastFirstEqualTheFullCall) {
    for (int mode = 0; mode < 2; mode++) {
        set_gemm((remat_cuda_gemm)mode);
        for (const LinShape &s : {LinShape{8, 32, 64, 96}, LinShape{6, 8, 12, 16}}) {
            const int64_t rows = s.T * s.N;
            const Floats x = uniform(rows * s.in, -1, 1, 51), w = uniform(s.out * s.in, -0.5, 0.5, 52),
                         dy = uniform(rows * s.out, -1, 1, 53);
            const int64_t sc = remat_ref_linear_scratch_elems(s.in, s.out);
            Dev dxx(&be, x), dww(&be, w), ddy(&be, dy), dsc(&be, sc * 4);
            Dev fx(&be, Floats(rows * s.in, 0.0f)), fw(&be, Floats(s.out * s.in, 0.0f)), fb(&be, Floats(s.out, 0.0f));
            ops().linear_backward(be.ctx, fx.f(), fw.f(), fb.f(), ddy.f(), dxx.f(), dww.f(), dsc.f(), s.T, s.N, s.in, s.out);
            for (int64_t k : {(int64_t)2, s.T}) {
                const int64_t tc = s.T / k;
                Dev cx(&be, Floats(rows * s.in, 0.0f)), cw(&be, Floats(s.out * s.in, 0.0f)), cb(&be, Floats(s.out, 0.0f));
                for (int64_t q = k - 1; q >= 0; q--) {
                    // Each chunk reads its inputs from a buffer of its own, as a recomputation would.
                    const int64_t t0 = q * tc;
                    Dev xin(&be, Floats(x.begin() + t0 * s.N * s.in, x.begin() + (t0 + tc) * s.N * s.in));
                    Dev gin(&be, Floats(dy.begin() + t0 * s.N * s.out, dy.begin() + (t0 + tc) * s.N * s.out));
                    ops().linear_backward(be.ctx, cx.f() + t0 * s.N * s.in, cw.f(), cb.f(), gin.f(), xin.f(), dww.f(),
                                          dsc.f(), tc, s.N, s.in, s.out);
                }
                const std::string what = "mode " + std::to_string(mode) + " k " + std::to_string(k);
                EXPECT_BITS_EQ(cx.get(rows * s.in), fx.get(rows * s.in), what + " dinp");
                EXPECT_BITS_EQ(cw.get(s.out * s.in), fw.get(s.out * s.in), what + " dweight");
                EXPECT_BITS_EQ(cb.get(s.out), fb.get(s.out), what + " dbias");
            }
        }
    }
}

TEST_F(CudaKernels, BatchNormMatchesReferenceBitForBit) {
    for (int64_t C : {1, 7, 200}) {
        const int64_t rows = 300;
        const float mom = C == 7 ? 0.3f : 0.1f;   // the layer's momentum and eps, and the defaults
        const double eps = C == 7 ? 0.25 : 1e-5;
        const Floats x = uniform(rows * C, -2, 3, 61), w = uniform(C, 0.5, 1.5, 62), b = uniform(C, -0.5, 0.5, 63),
                     rm0 = uniform(C, -1, 1, 64), rv0 = uniform(C, 0.5, 2, 65);
        for (int running = 0; running < 2; running++) {
            Floats out(rows * C), mean(C), rstd(C), rm = rm0, rv = rv0;
            remat_ref_batchnorm_forward(out.data(), mean.data(), rstd.data(), running ? rm.data() : nullptr,
                                        running ? rv.data() : nullptr, x.data(), w.data(), b.data(), rows, C, 1, mom, eps);
            Dev dout(&be, rows * C * 4), dm(&be, C * 4), dr(&be, C * 4), drm(&be, rm0), drv(&be, rv0), dx_(&be, x),
                dw(&be, w), db(&be, b);
            ops().batchnorm_forward(be.ctx, dout.f(), dm.f(), dr.f(), running ? drm.f() : nullptr,
                                    running ? drv.f() : nullptr, dx_.f(), dw.f(), db.f(), rows, C, 1, mom, eps);
            EXPECT_BITS_EQ(dout.get(rows * C), out, "out C=" << C);
            EXPECT_BITS_EQ(dm.get(C), mean, "mean C=" << C);
            EXPECT_BITS_EQ(dr.get(C), rstd, "rstd C=" << C);
            EXPECT_BITS_EQ(drm.get(C), rm, "running_mean C=" << C);
            EXPECT_BITS_EQ(drv.get(C), rv, "running_var C=" << C);

            const Floats dy = uniform(rows * C, -1, 1, 66), dx0 = uniform(rows * C, -0.1f, 0.1f, 67);
            Floats dx = dx0, gw(C, 0.5f), gb(C, -0.5f);
            remat_ref_batchnorm_backward(dx.data(), gw.data(), gb.data(), dy.data(), x.data(), w.data(), mean.data(),
                                         rstd.data(), rows, C, 1);
            Dev ddx(&be, dx0), dgw(&be, Floats(C, 0.5f)), dgb(&be, Floats(C, -0.5f)), ddy(&be, dy);
            ops().batchnorm_backward(be.ctx, ddx.f(), dgw.f(), dgb.f(), ddy.f(), dx_.f(), dw.f(), dm.f(), dr.f(), rows, C, 1);
            EXPECT_BITS_EQ(ddx.get(rows * C), dx, "dinp C=" << C);
            EXPECT_BITS_EQ(dgw.get(C), gw, "dweight C=" << C);
            EXPECT_BITS_EQ(dgb.get(C), gb, "dbias C=" << C);
        }
    }
}


TEST_F(CudaKernels, Conv2dMatchesReferenceBitForBit) {
    const remat_conv_geom cases[] = {conv_geom(3, 9, 7, 5, 3, 3, 1, 1, 1, 1), conv_geom(4, 8, 8, 6, 1, 1, 2, 2, 0, 0),
                                     conv_geom(2, 11, 10, 3, 7, 7, 2, 2, 3, 3), conv_geom(3, 6, 5, 70, 3, 2, 2, 1, 1, 0),
                                     dilated(conv_geom(2, 9, 8, 3, 3, 2, 1, 2, 2, 1), 2, 3),
                                     grouped(conv_geom(4, 8, 7, 6, 3, 3, 1, 1, 1, 1), 2),
                                     grouped(conv_geom(3, 9, 8, 6, 3, 3, 2, 2, 1, 1), 3)};  // depthwise
    for (const remat_conv_geom &g : cases) {
        const int64_t T = 2, N = 3, rows = T * N, in_e = g.c_in * g.h_in * g.w_in, out_e = g.c_out * g.h_out * g.w_out;
        const int64_t wn = remat_test::conv_weight_elems(g);
        const Floats x = uniform(rows * in_e, -1, 1, 81), w = uniform(wn, -1, 1, 82), b = uniform(g.c_out, -1, 1, 83);
        for (int bias = 0; bias < 2; bias++) {
            Floats out(rows * out_e), ws(remat_ref_conv2d_forward_ws_elems(&g));
            remat_ref_conv2d_forward(out.data(), x.data(), w.data(), bias ? b.data() : nullptr, ws.data(), rows, &g);
            Dev dout(&be, rows * out_e * 4), dx(&be, x), dw(&be, w), db(&be, b), dws(&be, remat_conv2d_im2col_forward_ws_elems(&g) * 4);
            ops().conv2d_forward(be.ctx, dout.f(), dx.f(), dw.f(), bias ? db.f() : nullptr, dws.f(), rows, &g);
            EXPECT_BITS_EQ(dout.get(rows * out_e), out, "conv forward c_out=" << g.c_out << " bias " << bias);
        }
        const Floats dy = uniform(rows * out_e, -1, 1, 84), dx0 = uniform(rows * in_e, -0.1f, 0.1f, 85);
        Floats gx = dx0, gw(wn, 0.25f), gb(g.c_out, -0.25f), bws(remat_ref_conv2d_backward_ws_elems(&g));
        remat_ref_conv2d_backward(gx.data(), gw.data(), gb.data(), dy.data(), x.data(), w.data(), bws.data(), T, N, &g);
        Dev dgx(&be, dx0), dgw(&be, Floats(wn, 0.25f)), dgb(&be, Floats(g.c_out, -0.25f)), ddy(&be, dy), dx(&be, x),
            dw(&be, w), dws(&be, remat_conv2d_im2col_backward_ws_elems(&g) * 4);
        ops().conv2d_backward(be.ctx, dgx.f(), dgw.f(), dgb.f(), ddy.f(), dx.f(), dw.f(), dws.f(), T, N, &g);
        EXPECT_BITS_EQ(dgx.get(rows * in_e), gx, "conv dinp c_out=" << g.c_out);
        EXPECT_BITS_EQ(dgw.get(wn), gw, "conv dweight c_out=" << g.c_out);
        EXPECT_BITS_EQ(dgb.get(g.c_out), gb, "conv dbias c_out=" << g.c_out);
    }
}

TEST_F(CudaKernels, PoolingMatchesReferenceBitForBitWithTies) {
    const remat_conv_geom cases[] = {conv_geom(3, 9, 8, 3, 3, 3, 2, 2, 1, 1), conv_geom(2, 6, 6, 2, 2, 2, 2, 2, 0, 0),
                                     conv_geom(1, 7, 5, 1, 2, 3, 1, 2, 1, 1)};
    for (const remat_conv_geom &g : cases) {
        const int64_t rows = 4, in_e = g.c_in * g.h_in * g.w_in, out_e = g.c_in * g.h_out * g.w_out;
        Floats x = uniform(rows * in_e, 0, 1, 91);
        for (size_t i = 0; i < x.size(); i++) x[i] = x[i] < 0.5f ? 0.0f : 1.0f; // spikes: windows tie
        const Floats dy = uniform(rows * out_e, -1, 1, 92), dx0 = uniform(rows * in_e, -0.1f, 0.1f, 93);
        for (int max = 0; max < 2; max++) {
            Floats out(rows * out_e), gx = dx0;
            Dev dout(&be, rows * out_e * 4), dx(&be, x), ddy(&be, dy), dgx(&be, dx0);
            if (max) {
                remat_ref_maxpool2d_forward(out.data(), x.data(), rows, &g);
                remat_ref_maxpool2d_backward(gx.data(), dy.data(), x.data(), rows, &g);
                ops().maxpool2d_forward(be.ctx, dout.f(), dx.f(), rows, &g);
                ops().maxpool2d_backward(be.ctx, dgx.f(), ddy.f(), dx.f(), rows, &g);
            } else {
                remat_ref_avgpool2d_forward(out.data(), x.data(), rows, &g);
                remat_ref_avgpool2d_backward(gx.data(), dy.data(), rows, &g);
                ops().avgpool2d_forward(be.ctx, dout.f(), dx.f(), rows, &g);
                ops().avgpool2d_backward(be.ctx, dgx.f(), ddy.f(), rows, &g);
            }
            EXPECT_BITS_EQ(dout.get(rows * out_e), out, (max ? "maxpool" : "avgpool") << " forward");
            EXPECT_BITS_EQ(dgx.get(rows * in_e), gx, (max ? "maxpool" : "avgpool") << " dinp");
        }
    }
}

TEST_F(CudaKernels, SpatialBatchNormMatchesReferenceBitForBit) {
    const int64_t rows = 6, C = 5, hw = 13;
    const Floats x = uniform(rows * C * hw, -2, 3, 71), w = uniform(C, 0.5, 1.5, 72), b = uniform(C, -0.5, 0.5, 73);
    Floats out(rows * C * hw), mean(C), rstd(C);
    remat_ref_batchnorm_forward(out.data(), mean.data(), rstd.data(), nullptr, nullptr, x.data(), w.data(), b.data(), rows,
                                C, hw, 0.1f, 1e-5);
    Dev dout(&be, rows * C * hw * 4), dm(&be, C * 4), dr(&be, C * 4), dx_(&be, x), dw(&be, w), db(&be, b);
    ops().batchnorm_forward(be.ctx, dout.f(), dm.f(), dr.f(), nullptr, nullptr, dx_.f(), dw.f(), db.f(), rows, C, hw, 0.1f, 1e-5);
    EXPECT_BITS_EQ(dout.get(rows * C * hw), out, "bn2d out");
    const Floats dy = uniform(rows * C * hw, -1, 1, 74);
    Floats gx(rows * C * hw, 0.0f), gw(C, 0.0f), gb(C, 0.0f);
    remat_ref_batchnorm_backward(gx.data(), gw.data(), gb.data(), dy.data(), x.data(), w.data(), mean.data(), rstd.data(),
                                 rows, C, hw);
    Dev ddx(&be, Floats(rows * C * hw, 0.0f)), dgw(&be, Floats(C, 0.0f)), dgb(&be, Floats(C, 0.0f)), ddy(&be, dy);
    ops().batchnorm_backward(be.ctx, ddx.f(), dgw.f(), dgb.f(), ddy.f(), dx_.f(), dw.f(), dm.f(), dr.f(), rows, C, hw);
    EXPECT_BITS_EQ(ddx.get(rows * C * hw), gx, "bn2d dinp");
    EXPECT_BITS_EQ(dgw.get(C), gw, "bn2d dweight");
    EXPECT_BITS_EQ(dgb.get(C), gb, "bn2d dbias");
}

TEST_F(CudaKernels, DropoutAddFillsOptimisersMatchReferenceBitForBit) {
    const int64_t T = 5, nf = 4099;
    for (float p : {0.0f, 0.25f, 0.5f}) {
        Floats mask(nf);
        remat_ref_dropout_mask(mask.data(), 7, 11, 3, p, nf);
        Dev dm(&be, nf * 4);
        ops().dropout_mask(be.ctx, dm.f(), 7, 11, 3, p, nf);
        EXPECT_BITS_EQ(dm.get(nf), mask, "mask p=" << p);
        const Floats x = uniform(T * nf, -1, 1, 71), d0 = uniform(T * nf, -0.1f, 0.1f, 72);
        Floats y(T * nf), dx = d0;
        remat_ref_dropout_forward(y.data(), x.data(), 7, 11, 3, p, T, nf);
        remat_ref_dropout_backward(dx.data(), x.data(), 7, 11, 3, p, T, nf);
        Dev dx_(&be, x), dy(&be, T * nf * 4), ddx(&be, d0);
        ops().dropout_forward(be.ctx, dy.f(), dx_.f(), 7, 11, 3, p, T, nf);
        ops().dropout_backward(be.ctx, ddx.f(), dx_.f(), 7, 11, 3, p, T, nf);
        EXPECT_BITS_EQ(dy.get(T * nf), y, "dropout forward p=" << p);
        EXPECT_BITS_EQ(ddx.get(T * nf), dx, "dropout backward p=" << p);
    }
    {
        const int64_t n = 10007;
        const Floats a = uniform(n, -1, 1, 73), b = uniform(n, -1, 1, 74), g = uniform(n, -1, 1, 75);
        Floats out(n), da = a, db = b, dd = a;
        remat_ref_add_forward(out.data(), a.data(), b.data(), n);
        remat_ref_add_backward(da.data(), db.data(), g.data(), n);
        remat_ref_add_backward(dd.data(), dd.data(), g.data(), n);  // aliased: receives g twice
        Dev A(&be, a), B(&be, b), G(&be, g), O(&be, n * 4), DD(&be, a);
        ops().add_forward(be.ctx, O.f(), A.f(), B.f(), n);
        EXPECT_BITS_EQ(O.get(n), out, "add forward");
        ops().add_backward(be.ctx, A.f(), B.f(), G.f(), n);
        ops().add_backward(be.ctx, DD.f(), DD.f(), G.f(), n);
        EXPECT_BITS_EQ(A.get(n), da, "add backward da");
        EXPECT_BITS_EQ(B.get(n), db, "add backward db");
        EXPECT_BITS_EQ(DD.get(n), dd, "add backward aliased");
    }
    {
        const int64_t n = 3001;
        Floats u(n), bern(n);
        std::vector<int32_t> lab(n), dlab_host(n);
        remat_ref_fill_uniform(u.data(), n, -0.3f, 0.7f, 99, REMAT_RNG_PARAM, 17);
        remat_ref_fill_bernoulli(bern.data(), n, 0.3f, 99, REMAT_RNG_INPUT, 4);
        remat_ref_fill_labels(lab.data(), n, 10, 99, 4);
        Dev du(&be, n * 4), db(&be, n * 4), dl(&be, n * 4);
        ops().fill_uniform(be.ctx, du.f(), n, -0.3f, 0.7f, 99, REMAT_RNG_PARAM, 17);
        ops().fill_bernoulli(be.ctx, db.f(), n, 0.3f, 99, REMAT_RNG_INPUT, 4);
        ops().fill_labels(be.ctx, (int32_t *)dl.p, n, 10, 99, 4);
        EXPECT_BITS_EQ(du.get(n), u, "fill_uniform");
        EXPECT_BITS_EQ(db.get(n), bern, "fill_bernoulli");
        ops().to_host(be.ctx, dlab_host.data(), dl.p, n * 4);
        EXPECT_EQ(dlab_host, lab) << "fill_labels";
    }
    {
        const int64_t n = 2049;
        const Floats g = uniform(n, -1, 1, 76), p0 = uniform(n, -1, 1, 77);
        Floats p = p0, buf(n, 0.0f), p_nb = p0;
        Dev dp(&be, p0), dbuf(&be, buf), dg(&be, g), dpnb(&be, p0);
        for (int step = 0; step < 3; step++) {
            remat_ref_sgd_update(p.data(), buf.data(), g.data(), 0.1f, 0.9f, step == 0, n);
            ops().sgd_update(be.ctx, dp.f(), dbuf.f(), dg.f(), 0.1f, 0.9f, step == 0, n);
        }
        remat_ref_sgd_update(p_nb.data(), nullptr, g.data(), 0.1f, 0.9f, 1, n);
        ops().sgd_update(be.ctx, dpnb.f(), nullptr, dg.f(), 0.1f, 0.9f, 1, n);
        EXPECT_BITS_EQ(dp.get(n), p, "sgd param");
        EXPECT_BITS_EQ(dbuf.get(n), buf, "sgd buf");
        EXPECT_BITS_EQ(dpnb.get(n), p_nb, "sgd without momentum");
        Floats ap = p0, am(n, 0.0f), av(n, 0.0f);
        Dev dap(&be, p0), dam(&be, am), dav(&be, av);
        for (int step = 1; step <= 3; step++) {
            remat_ref_adam_update(ap.data(), am.data(), av.data(), g.data(), 0.01f, 0.9f, 0.999f, 1e-8f, step, n);
            ops().adam_update(be.ctx, dap.f(), dam.f(), dav.f(), dg.f(), 0.01f, 0.9f, 0.999f, 1e-8f, step, n);
        }
        EXPECT_BITS_EQ(dap.get(n), ap, "adam param");
        EXPECT_BITS_EQ(dam.get(n), am, "adam m");
        EXPECT_BITS_EQ(dav.get(n), av, "adam v");
    }
}

float ulp_distance(float a, float b) {
    const int32_t ia = (int32_t)bits(a), ib = (int32_t)bits(b);
    return (float)std::abs((int64_t)ia - (int64_t)ib);
}

// The bf16 weight copies (core/base/bf16.h): ties, subnormals, overflow, NaN and random
// bit patterns, the reference's bits.
TEST_F(CudaKernels, Bf16FromF32MatchesReferenceBitForBit) {
    const int64_t n = 70001;
    std::mt19937 rng(1201);
    std::vector<uint32_t> u((size_t)n);
    const uint32_t edge[] = {0x3f808000u, 0x3f818000u, 0x00008000u, 0x00018000u, 0x007fffffu, 0x7f7f8000u,
                             0x7f7fffffu, 0xff7fffffu, 0x7f800000u, 0x7f800001u, 0xff800001u, 0x7fa00000u,
                             0x7fffffffu, 0x80000000u};
    for (int64_t i = 0; i < n; i++) {
        u[(size_t)i] = (uint32_t)rng();
        if (i % 3 == 1) u[(size_t)i] = (u[(size_t)i] & 0xffff0000u) | 0x8000u;
    }
    std::memcpy(u.data(), edge, sizeof edge);
    Floats x((size_t)n);
    std::memcpy(x.data(), u.data(), (size_t)n * 4);
    Dev d(&be, x), o(&be, n * 2);
    std::vector<uint16_t> want((size_t)n);
    remat_ref_bf16_from_f32(want.data(), x.data(), n);
    ops().bf16_from_f32(be.ctx, (uint16_t *)o.p, d.f(), n);
    const std::vector<uint8_t> got = o.get_bytes(n * 2);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), (size_t)n * 2), 0) << "bf16_from_f32";
}

TEST_F(CudaKernels, LossesMatchReference) {
    const int64_t T = 7, N = 33, K = 10;
    const Floats out = spikes(T * N * K, 0.35, 81);
    std::vector<int32_t> labels(N);
    for (int64_t n = 0; n < N; n++) labels[n] = (int32_t)((n * 3) % K);
    for (int type = 0; type < 2; type++) {
        Floats rate(N * K), dout(T * N * K, 0.25f);
        const float L = remat_ref_loss_forward(rate.data(), out.data(), labels.data(), (remat_loss_type)type, T, N, K);
        remat_ref_loss_backward(dout.data(), rate.data(), labels.data(), (remat_loss_type)type, T, N, K);
        Dev dout_(&be, out), drate(&be, N * K * 4), dlab(&be, N * 4), dd(&be, Floats(T * N * K, 0.25f));
        dlab.put(labels);
        const float Lc = ops().loss_forward(be.ctx, drate.f(), dout_.f(), (const int32_t *)dlab.p, (remat_loss_type)type, T,
                                            N, K);
        ops().loss_backward(be.ctx, dd.f(), drate.f(), (const int32_t *)dlab.p, (remat_loss_type)type, T, N, K);
        EXPECT_BITS_EQ(drate.get(N * K), rate, "rate");
        if (type == REMAT_LOSS_RATE_MSE) {
            EXPECT_EQ(bits(Lc), bits(L)) << "mse loss " << Lc << " vs " << L;
            EXPECT_BITS_EQ(dd.get(T * N * K), dout, "mse gradient");
        } else {
            EXPECT_LE(ulp_distance(Lc, L), 1.0f) << "ce loss " << Lc << " vs " << L;
            const Floats g = dd.get(T * N * K);
            // gt may differ by 1 ulp of gt; dout accumulates it T times onto 0.25.
            for (size_t i = 0; i < g.size(); i++)
                ASSERT_LE(ulp_distance(g[i], dout[i]), (float)T) << "ce gradient " << i;
        }
    }
}

// Compressed bytes and decompressed floats equal the reference's; refusals carry the
// reference's status and message.
TEST_F(CudaKernels, CompressorsMatchReferenceBytesAndMessages) {
    const remat_compressor comps[] = {REMAT_COMP_NONE, REMAT_COMP_BOOL, REMAT_COMP_UINT8, REMAT_COMP_BIT,
                                      REMAT_COMP_SPARSE};
    for (int64_t n : {1, 9, 4096, 4097, 100003}) {
        for (double rate : {0.0, 0.07, 0.5, 1.0}) {
            const Floats s = spikes(n, rate, 90 + (uint32_t)n);
            const int64_t nnz = remat_count_nonzero(s.data(), n);
            Dev src(&be, s);
            EXPECT_EQ(ops().count_nonzero(be.ctx, src.f(), REMAT_ENC_F32, n), nnz) << "n " << n << " rate " << rate;
            for (remat_compressor c : comps) {
                const int64_t bytes = remat_compressed_bytes(c, n, nnz);
                std::vector<uint8_t> ref(bytes > 0 ? bytes : 1);
                remat_error e1{}, e2{};
                ASSERT_EQ(remat_compress(c, ref.data(), bytes, s.data(), n, &e1), REMAT_OK) << e1.msg;
                Dev dst(&be, bytes > 0 ? bytes : 4);
                ASSERT_EQ(ops().compress(be.ctx, c, dst.p, bytes, src.f(), REMAT_ENC_F32, n, &e2), REMAT_OK) << e2.msg;
                const std::vector<uint8_t> got = dst.get_bytes(bytes);
                EXPECT_TRUE(std::equal(got.begin(), got.end(), ref.begin()))
                    << remat_compressor_name(c) << " bytes differ, n " << n << " rate " << rate;
                Dev back(&be, n * 4);
                ASSERT_EQ(ops().decompress(be.ctx, c, back.f(), REMAT_ENC_F32, n, dst.p, bytes, &e2), REMAT_OK)
                    << e2.msg;
                EXPECT_BITS_EQ(back.get(n), s, std::string(remat_compressor_name(c)) + " round trip");
            }
        }
    }
    // Integer values for uint8.
    {
        const int64_t n = 5000;
        Floats v(n);
        for (int64_t i = 0; i < n; i++) v[i] = (float)((i * 37) % 256);
        std::vector<uint8_t> ref(n);
        remat_error e{};
        ASSERT_EQ(remat_compress(REMAT_COMP_UINT8, ref.data(), n, v.data(), n, &e), REMAT_OK);
        Dev src(&be, v), dst(&be, n);
        ASSERT_EQ(ops().compress(be.ctx, REMAT_COMP_UINT8, dst.p, n, src.f(), REMAT_ENC_F32, n, &e), REMAT_OK) << e.msg;
        EXPECT_EQ(dst.get_bytes(n), ref);
    }
    // Refusals: the first offending element, several bad ones present, some far apart.
    const float bad_values[] = {-0.0f, 0.5f, NAN, 2.0f, 256.0f};
    for (float badv : bad_values) {
        for (remat_compressor c : comps) {
            if (c == REMAT_COMP_NONE) continue;
            const int64_t n = 20000;
            Floats s = spikes(n, 0.2, 95);
            s[12345] = badv;
            s[17000] = 0.25f;
            const int64_t nnz = remat_count_nonzero(s.data(), n);
            for (int wrong_size = 0; wrong_size < 2; wrong_size++) {
                const int64_t bytes = remat_compressed_bytes(c, n, nnz) + wrong_size;
                std::vector<uint8_t> ref(bytes + 1);
                remat_error e1{}, e2{};
                const remat_status s1 = remat_compress(c, ref.data(), bytes, s.data(), n, &e1);
                Dev src(&be, s), dst(&be, bytes + 1);
                const remat_status s2 = ops().compress(be.ctx, c, dst.p, bytes, src.f(), REMAT_ENC_F32, n, &e2);
                EXPECT_EQ(s2, s1) << remat_compressor_name(c) << " value " << badv;
                EXPECT_STREQ(e2.msg, e1.msg);
            }
        }
    }
    // Malformed compressed buffers.
    struct Bad {
        remat_compressor c;
        int64_t n;
        std::vector<uint8_t> bytes;
    };
    auto u32 = [](std::initializer_list<uint32_t> l) {
        std::vector<uint8_t> b;
        for (uint32_t v : l)
            for (int k = 0; k < 4; k++) b.push_back((uint8_t)(v >> (8 * k)));
        return b;
    };
    const std::vector<Bad> bads = {
        {REMAT_COMP_BOOL, 6, {0, 1, 1, 2, 0, 3}},  {REMAT_COMP_BOOL, 6, {0, 1}},
        {REMAT_COMP_BIT, 10, {0xff, 0x07}},        {REMAT_COMP_BIT, 10, {0xff}},
        {REMAT_COMP_UINT8, 4, {1, 2, 3}},          {REMAT_COMP_SPARSE, 10, u32({1, 3, 3, 5})},
        {REMAT_COMP_SPARSE, 10, u32({1, 3, 12})},  {REMAT_COMP_SPARSE, 10, u32({0, 2})},
        {REMAT_COMP_SPARSE, 2, u32({0, 1, 1})},    {REMAT_COMP_SPARSE, 10, {1, 2, 3}},
        {REMAT_COMP_SPARSE, 10, u32({4, 2, 99})},  {REMAT_COMP_NONE, 3, {0, 0, 0, 0}},
    };
    for (const Bad &b : bads) {
        Floats out_ref(b.n, -7.0f);
        remat_error e1{}, e2{};
        const remat_status s1 =
            remat_decompress(b.c, out_ref.data(), b.n, b.bytes.data(), (int64_t)b.bytes.size(), &e1);
        Dev src(&be, (int64_t)b.bytes.size()), dst(&be, Floats(b.n, -7.0f));
        src.put(b.bytes);
        const remat_status s2 =
            ops().decompress(be.ctx, b.c, dst.f(), REMAT_ENC_F32, b.n, src.p, (int64_t)b.bytes.size(), &e2);
        EXPECT_EQ(s2, s1) << remat_compressor_name(b.c) << ": " << e1.msg;
        EXPECT_STREQ(e2.msg, e1.msg);
        if (s1 == REMAT_OK) EXPECT_BITS_EQ(dst.get(b.n), out_ref, "decompressed");
    }
}

// The bf16-storage twins on the device against the reference's twins, bit for bit:
// conv (overlapping windows), both poolings, and the compressors on bf16 spikes.
TEST_F(CudaKernels, Bf16TwinsMatchReferenceBitForBit) {
    auto b16 = [](const Floats &f) {
        std::vector<uint16_t> b(f.size());
        for (size_t i = 0; i < f.size(); i++) b[i] = remat_f32_to_bf16(f[i]);
        return b;
    };
    auto get16 = [](Dev &d, size_t n) {
        std::vector<uint8_t> raw = d.get_bytes(n * 2);
        std::vector<uint16_t> v(n);
        std::memcpy(v.data(), raw.data(), n * 2);
        return v;
    };
    for (const remat_conv_geom &g : {conv_geom(3, 9, 7, 4, 3, 2, 1), grouped(conv_geom(3, 9, 7, 6, 3, 2, 1), 3)}) {
        const int64_t T = 2, N = 3, rows = T * N, ie = g.c_in * g.h_in * g.w_in, oe = g.c_out * g.h_out * g.w_out;
        const int64_t K = g.c_in / remat_conv_groups(&g) * g.kh * g.kw, pe = g.c_in * g.h_out * g.w_out;
        const std::vector<uint16_t> x = b16(uniform(rows * ie, -1.0f, 1.0f, 301)), w = b16(uniform(g.c_out * K, -1.0f, 1.0f, 302)),
                                    bias = b16(uniform(g.c_out, -1.0f, 1.0f, 303)), dy = b16(uniform(rows * oe, -1.0f, 1.0f, 304)),
                                    dx0 = b16(uniform(rows * ie, -1.0f, 1.0f, 305)), dp = b16(uniform(rows * pe, -1.0f, 1.0f, 306));
        const int64_t wsn = remat_ref_conv2d_backward_ws_elems(&g);
        Floats ws((size_t)wsn), dwr(g.c_out * K, 0.5f), dbr(g.c_out, 0.25f);
        std::vector<uint16_t> y((size_t)(rows * oe)), dx = dx0;
        remat_ref_conv2d_forward_bf16(y.data(), x.data(), w.data(), bias.data(), ws.data(), rows, &g);
        remat_ref_conv2d_backward_bf16(dx.data(), dwr.data(), dbr.data(), dy.data(), x.data(), w.data(), ws.data(), T, N,
                                       &g);
        Dev dX(&be, rows * ie * 2), dW(&be, g.c_out * K * 2), dB(&be, g.c_out * 2), dY(&be, rows * oe * 2),
            dDY(&be, rows * oe * 2), dDX(&be, rows * ie * 2), dWS(&be, remat_conv2d_im2col_backward_ws_elems(&g) * 4), dDW(&be, Floats(g.c_out * K, 0.5f)),
            dDB(&be, Floats(g.c_out, 0.25f));
        dX.put(x), dW.put(w), dB.put(bias), dDY.put(dy), dDX.put(dx0);
        ops().conv2d_forward_bf16(be.ctx, (uint16_t *)dY.p, (uint16_t *)dX.p, (uint16_t *)dW.p, (uint16_t *)dB.p,
                                  dWS.f(), rows, &g);
        ops().conv2d_backward_bf16(be.ctx, (uint16_t *)dDX.p, dDW.f(), dDB.f(), (uint16_t *)dDY.p, (uint16_t *)dX.p,
                                   (uint16_t *)dW.p, dWS.f(), T, N, &g);
        EXPECT_EQ(get16(dY, (size_t)(rows * oe)), y) << "conv forward";
        EXPECT_EQ(get16(dDX, (size_t)(rows * ie)), dx) << "conv dinp";
        EXPECT_BITS_EQ(dDW.get(g.c_out * K), dwr, "conv dweight");
        EXPECT_BITS_EQ(dDB.get(g.c_out), dbr, "conv dbias");
        for (int max = 0; max < 2; max++) {
            std::vector<uint16_t> py((size_t)(rows * pe)), pdx = dx0;
            remat_conv_geom pg = g;
            pg.c_out = g.c_in;
            if (max) {
                remat_ref_maxpool2d_forward_bf16(py.data(), x.data(), rows, &pg);
                remat_ref_maxpool2d_backward_bf16(pdx.data(), dp.data(), x.data(), rows, &pg);
            } else {
                remat_ref_avgpool2d_forward_bf16(py.data(), x.data(), rows, &pg);
                remat_ref_avgpool2d_backward_bf16(pdx.data(), dp.data(), rows, &pg);
            }
            Dev dPY(&be, rows * pe * 2), dPG(&be, rows * pe * 2), dPDX(&be, rows * ie * 2);
            dPG.put(dp), dPDX.put(dx0);
            if (max) {
                ops().maxpool2d_forward_bf16(be.ctx, (uint16_t *)dPY.p, (uint16_t *)dX.p, rows, &pg);
                ops().maxpool2d_backward_bf16(be.ctx, (uint16_t *)dPDX.p, (uint16_t *)dPG.p, (uint16_t *)dX.p, rows, &pg);
            } else {
                ops().avgpool2d_forward_bf16(be.ctx, (uint16_t *)dPY.p, (uint16_t *)dX.p, rows, &pg);
                ops().avgpool2d_backward_bf16(be.ctx, (uint16_t *)dPDX.p, (uint16_t *)dPG.p, rows, &pg);
            }
            EXPECT_EQ(get16(dPY, (size_t)(rows * pe)), py) << (max ? "maxpool forward" : "avgpool forward");
            EXPECT_EQ(get16(dPDX, (size_t)(rows * ie)), pdx) << (max ? "maxpool backward" : "avgpool backward");
        }
    }
    const int64_t n = 4097;
    const std::vector<uint16_t> s = b16(spikes(n, 0.3, 307));
    const int64_t nnz = remat_count_nonzero_as(s.data(), REMAT_ENC_BF16, n);
    Dev src(&be, n * 2);
    src.put(s);
    EXPECT_EQ(ops().count_nonzero(be.ctx, src.p, REMAT_ENC_BF16, n), nnz);
    for (remat_compressor c : {REMAT_COMP_BOOL, REMAT_COMP_BIT, REMAT_COMP_SPARSE}) {
        const int64_t bytes = remat_compressed_bytes(c, n, nnz);
        std::vector<uint8_t> ref((size_t)bytes);
        remat_error e{};
        ASSERT_EQ(remat_compress_as(c, ref.data(), bytes, s.data(), REMAT_ENC_BF16, n, &e), REMAT_OK) << e.msg;
        Dev dst(&be, bytes), back(&be, n * 2);
        ASSERT_EQ(ops().compress(be.ctx, c, dst.p, bytes, src.p, REMAT_ENC_BF16, n, &e), REMAT_OK) << e.msg;
        EXPECT_EQ(dst.get_bytes((size_t)bytes), ref) << remat_compressor_name(c);
        ASSERT_EQ(ops().decompress(be.ctx, c, back.p, REMAT_ENC_BF16, n, dst.p, bytes, &e), REMAT_OK) << e.msg;
        EXPECT_EQ(get16(back, (size_t)n), s) << remat_compressor_name(c) << " round trip";
    }
}

TEST_F(CudaKernels, RepeatedRunsAreBitIdentical) {
    set_gemm(REMAT_CUDA_GEMM_AUTO);
    const LinShape s = {4, 64, 128, 64};
    const int64_t rows = s.T * s.N;
    const Floats x = uniform(rows * s.in, -1, 1, 101), w = uniform(s.out * s.in, -0.5, 0.5, 102),
                 dy = uniform(rows * s.out, -1, 1, 103);
    std::vector<Floats> runs;
    for (int r = 0; r < 3; r++) {
        Dev dx_(&be, x), dw(&be, w), ddy(&be, dy), y(&be, rows * s.out * 4), gx(&be, Floats(rows * s.in, 0.0f)),
            gw(&be, Floats(s.out * s.in, 0.0f)), gb(&be, Floats(s.out, 0.0f)),
            sc(&be, remat_ref_linear_scratch_elems(s.in, s.out) * 4), m(&be, s.out * 4), rs(&be, s.out * 4),
            bn(&be, rows * s.out * 4);
        ops().linear_forward(be.ctx, y.f(), dx_.f(), dw.f(), nullptr, rows, s.in, s.out);
        ops().batchnorm_forward(be.ctx, bn.f(), m.f(), rs.f(), nullptr, nullptr, y.f(), nullptr, nullptr, rows, s.out, 1, 0.1f, 1e-5);
        ops().linear_backward(be.ctx, gx.f(), gw.f(), gb.f(), ddy.f(), dx_.f(), dw.f(), sc.f(), s.T, s.N, s.in, s.out);
        Floats all = bn.get(rows * s.out);
        for (const Floats &part : {gx.get(rows * s.in), gw.get(s.out * s.in), gb.get(s.out)})
            all.insert(all.end(), part.begin(), part.end());
        runs.push_back(all);
    }
    EXPECT_BITS_EQ(runs[1], runs[0], "second run");
    EXPECT_BITS_EQ(runs[2], runs[0], "third run");
}

// now() is the device clock (CUDA events): never goes back, and a call after queued
// work is later than one before it by at least that work's time.
// The table is generated from backend.h's list: every entry is set, and each has its
// own profile slot named as the entry (avgpool2d no longer shares maxpool2d's).
TEST_F(CudaKernels, EveryListedEntryIsSetAndProfiledUnderItsName) {
#define EXPECT_ENTRY(ret, name, params, args) EXPECT_NE((void *)ops().name, nullptr) << #name;
    REMAT_BACKEND_BASE_KERNELS(EXPECT_ENTRY)
#undef EXPECT_ENTRY
    remat_error err{};
    ASSERT_EQ(remat_backend_cuda_set_profiling(&be, 1, &err), REMAT_OK) << err.msg;
    remat_conv_geom g{};
    g.c_in = g.c_out = 1, g.h_in = g.w_in = 4, g.h_out = g.w_out = 2, g.kh = g.kw = g.sh = g.sw = 2;
    Dev x(&be, Floats(16, 1.0f)), y(&be, 4 * 4);
    ops().avgpool2d_forward(be.ctx, y.f(), x.f(), 1, &g);
    ops().avgpool2d_forward(be.ctx, y.f(), x.f(), 1, &g);
    ops().maxpool2d_forward(be.ctx, y.f(), x.f(), 1, &g);
    remat_cuda_profile prof{};
    ASSERT_EQ(remat_backend_cuda_get_profile(&be, &prof, 1, &err), REMAT_OK) << err.msg;
    std::map<std::string, int64_t> calls;
    for (int i = 0; i < prof.n; i++) EXPECT_TRUE(calls.emplace(prof.name[i], prof.calls[i]).second) << prof.name[i];
    EXPECT_EQ(calls["avgpool2d_forward"], 2);
    EXPECT_EQ(calls["maxpool2d_forward"], 1);
    EXPECT_EQ(calls["linear_forward_bf16"], 0);
    EXPECT_EQ(calls.count("pool_forward"), 0u);
    ASSERT_EQ(remat_backend_cuda_set_profiling(&be, 0, &err), REMAT_OK) << err.msg;
}

TEST_F(CudaKernels, FillCountsMatchesReferenceBitForBit) {
    const int64_t n = 10007;
    for (int32_t mx : {1, 5, 255}) {
        Floats ref(n);
        remat_ref_fill_counts(ref.data(), n, mx, 3, 2, 9);
        Dev d(&be, n * 4);
        ops().fill_counts(be.ctx, d.f(), n, mx, 3, 2, 9);
        EXPECT_BITS_EQ(d.get(n), ref, "counts max " << mx);
        std::vector<uint16_t> rb(n), db(n);
        remat_ref_fill_counts_bf16(rb.data(), n, mx, 3, 2, 9);
        Dev d16(&be, n * 2);
        ops().fill_counts_bf16(be.ctx, (uint16_t *)d16.p, n, mx, 3, 2, 9);
        ops().to_host(be.ctx, db.data(), d16.p, n * 2);
        EXPECT_EQ(rb, db) << "bf16 counts max " << mx;
    }
}

TEST_F(CudaKernels, ClockIsMonotonicAndWaitsForQueuedWork) {
    double prev = ops().now(be.ctx);
    for (int i = 0; i < 100; i++) {
        const double t = ops().now(be.ctx);
        ASSERT_GE(t, prev) << i;
        prev = t;
    }
    const int64_t n = 1 << 20;
    Dev x(&be, n * 4);
    const double t0 = ops().now(be.ctx);
    for (int r = 0; r < 4; r++) ops().fill_uniform(be.ctx, (float *)x.p, n, -1.0f, 1.0f, 1, 2, (uint64_t)r);
    const double t1 = ops().now(be.ctx);
    EXPECT_GT(t1, t0);
    // The fills have run by now: their values are there.
    Floats v = x.get(4);
    EXPECT_TRUE(std::isfinite(v[0]) && v[0] >= -1.0f && v[0] <= 1.0f) << v[0];
}

TEST_F(CudaKernels, OutOfMemoryIsAnErrorWithTheNumbers) {
    void *p = nullptr;
    remat_error err{};
    EXPECT_EQ(ops().segment_alloc(be.ctx, (int64_t)1 << 52, &p, &err), REMAT_ERR_DEVICE);
    EXPECT_EQ(p, nullptr);
    const std::string msg = err.msg;
    EXPECT_NE(msg.find("asked 4503599627370496 bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("free "), std::string::npos) << msg;
    EXPECT_NE(msg.find("reserved "), std::string::npos) << msg;
    // The device is still usable afterwards.
    Dev ok(&be, 1 << 20);
    EXPECT_NE(ok.p, nullptr);
    int64_t fr = 0, tot = 0;
    ops().mem_info(be.ctx, &fr, &tot);
    EXPECT_GT(fr, 0);
    EXPECT_GE(tot, fr);
}

// ======================================================================================
// 3. Whole steps through the executor
// ======================================================================================

struct Step {
    double loss = 0;
    std::vector<Floats> grads;  // per (layer, trainable param), then running stats, then input grad
};

bool run_step_on(remat_backend *be, const remat_model &m, const remat_plan &p, uint64_t seed, Step *out,
                 remat_error *err) {
    remat_exec_opts o = remat_exec_opts_default();
    o.seed = seed;
    remat_session *s = remat_session_init(&m, &p, be, &o, err);
    if (!s) return false;
    remat_step_result r{};
    bool ok = remat_session_step(s, 0, &r, err) == REMAT_OK;
    out->loss = r.loss;
    for (int j = 0; ok && j < m.n_layers; j++) {
        const remat_layer *l = &m.layers[j];
        for (int i = 0; ok && i < remat_layer_n_params(l); i++) {
            Floats v((size_t)remat_layer_param_elems(l, i));
            ok = (remat_layer_param_trainable(l, i) ? remat_session_get_grad(s, j, i, v.data(), err)
                                                    : remat_session_get_param(s, j, i, v.data(), err)) == REMAT_OK;
            out->grads.push_back(v);
        }
    }
    if (ok) {
        Floats g((size_t)(m.T * m.N * m.in_features));
        ok = remat_session_get_input_grad(s, g.data(), err) == REMAT_OK;
        out->grads.push_back(g);
    }
    remat_session_free(s);
    return ok;
}

class CudaExecutor : public CudaKernels {};

const char *const kTinyModels[] = {"tiny-mlp-lif", "tiny-3block-if", "tiny-resnet-bn", "tiny-vgg-dvs",
                                   "tiny-sew-resnet", "tiny-dvs-options", "tiny-shd-conv1d", "tiny-plif"};

TEST_F(CudaExecutor, TinyModelStepMatchesReference) {
    for (const char *name : kTinyModels) {
        remat_test::Model model(name);
        remat_plan empty{};
        remat_error err{};
        ASSERT_EQ(remat_plan_init_empty(&model.m, &empty, &err), REMAT_OK) << err.msg;
        remat_backend ref{};
        ASSERT_EQ(remat_backend_ref_init(&ref, 1, &err), REMAT_OK) << err.msg;
        Step a, b;
        ASSERT_TRUE(run_step_on(&ref, model.m, empty, 5, &a, &err)) << err.msg;
        remat_backend_free(&ref);
        for (int mode = 0; mode < 2; mode++) {
            set_gemm((remat_cuda_gemm)mode);
            b = Step{};
            ASSERT_TRUE(run_step_on(&be, model.m, empty, 5, &b, &err)) << err.msg;
            ASSERT_EQ(a.grads.size(), b.grads.size());
            // TILED: every kernel is the reference's chain -> identical except the CE loss's
            // device exp/log (1 float ulp, which a spike threshold can amplify: then the
            // tolerance below applies). AUTO: cuBLAS backward GEMMs (tiny shapes fall back
            // to the tiled kernel). Tolerance: 1e-4 relative to the tensor's largest value,
            // but no less than 1e-6 of the step's largest value: a tensor that is zero in
            // exact arithmetic (the bias of a linear layer before batch norm) holds only
            // rounding noise of the terms that cancel, and another summation order gives
            // other noise (found by the emulator, whose cuBLAS adds beta*C last).
            EXPECT_NEAR(b.loss, a.loss, 1e-6 * std::max(1.0, std::fabs(a.loss))) << name;
            float global = 0;
            for (const Floats &g : a.grads)
                for (float v : g) global = std::max(global, std::fabs(v));
            for (size_t t = 0; t < a.grads.size(); t++) {
                float scale = 0;
                for (float v : a.grads[t]) scale = std::max(scale, std::fabs(v));
                for (size_t i = 0; i < a.grads[t].size(); i++)
                    ASSERT_NEAR(b.grads[t][i], a.grads[t][i], 1e-4f * std::max(scale, 1e-2f * global) + 1e-30f)
                        << name << " mode " << mode << " tensor " << t << " element " << i;
            }
            if (mode == REMAT_CUDA_GEMM_TILED && model.m.loss == REMAT_LOSS_RATE_MSE)
                for (size_t t = 0; t < a.grads.size(); t++)
                    EXPECT_BITS_EQ(b.grads[t], a.grads[t], std::string(name) + " (MSE: same chain) tensor " + std::to_string(t));
        }
        remat_plan_free(&empty);
    }
}

// A bf16 model (docs/precision.md) on the CUDA backend: the same rounding points as
// the reference, so with the TILED GEMMs and the MSE loss the very same bits; the CE
// loss's device exp/log may differ by an ulp (the tolerance of the fp32 test above).
TEST_F(CudaExecutor, TinyModelStepInBf16MatchesReference) {
    set_gemm(REMAT_CUDA_GEMM_TILED);
    for (const char *name : kTinyModels) {
        remat_test::Model model(name, REMAT_PRECISION_BF16);
        remat_plan empty{};
        remat_error err{};
        ASSERT_EQ(remat_plan_init_empty(&model.m, &empty, &err), REMAT_OK) << err.msg;
        remat_backend ref{};
        ASSERT_EQ(remat_backend_ref_init(&ref, 1, &err), REMAT_OK) << err.msg;
        Step a, b;
        ASSERT_TRUE(run_step_on(&ref, model.m, empty, 5, &a, &err)) << err.msg;
        remat_backend_free(&ref);
        ASSERT_TRUE(run_step_on(&be, model.m, empty, 5, &b, &err)) << err.msg;
        ASSERT_EQ(a.grads.size(), b.grads.size());
        EXPECT_NEAR(b.loss, a.loss, 1e-6 * std::max(1.0, std::fabs(a.loss))) << name;
        float global = 0;
        for (const Floats &g : a.grads)
            for (float v : g) global = std::max(global, std::fabs(v));
        for (size_t t = 0; t < a.grads.size(); t++) {
            float scale = 0;
            for (float v : a.grads[t]) scale = std::max(scale, std::fabs(v));
            for (size_t i = 0; i < a.grads[t].size(); i++)
                ASSERT_NEAR(b.grads[t][i], a.grads[t][i], 1e-4f * std::max(scale, 1e-2f * global) + 1e-30f)
                    << name << " bf16 tensor " << t << " element " << i;
        }
        if (model.m.loss == REMAT_LOSS_RATE_MSE)
            for (size_t t = 0; t < a.grads.size(); t++)
                EXPECT_BITS_EQ(b.grads[t], a.grads[t], std::string(name) + " bf16 tensor " + std::to_string(t));
        remat_plan_free(&empty);
    }
}

// Out of device memory in the middle of a step: an error with the numbers, never a
// crash; the session gives back every segment it held; after the memory is free again
// a new session computes the very same step. Small segments (4 KiB small pool, 16 KiB
// large) make a step of the tiny model take many of them, so the failure comes after
// some succeeded (exactly so on the emulator, whose free memory is byte-exact).
TEST_F(CudaExecutor, OutOfMemoryMidStepIsAnErrorAndFreesWhatTheStepHeld) {
    remat_test::Model model("tiny-mlp-lif");
    remat_plan empty{};
    remat_error err{};
    ASSERT_EQ(remat_plan_init_empty(&model.m, &empty, &err), REMAT_OK) << err.msg;
    remat_exec_opts o = remat_exec_opts_default();
    o.seed = 5;
    ASSERT_EQ(remat_caching_config_parse("small_size=1KiB,small_segment=4KiB,large_segment=16KiB,min_large_alloc=8KiB,round_large=4KiB,large_split_min=1KiB", &o.caching, &err), REMAT_OK)
        << err.msg;
    auto step = [&](remat_step_result *r, remat_error *e) {
        remat_session *s = remat_session_init(&model.m, &empty, &be, &o, e);
        if (!s) return e->status;
        remat_status st = remat_session_step(s, 0, r, e);
        remat_session_free(s);
        return st;
    };
    remat_step_result full{};
    ASSERT_EQ(step(&full, &err), REMAT_OK) << err.msg;
    ASSERT_GT(full.peak_reserved_bytes, 8 * 4096);
    const int64_t before = info().segment_bytes;
    // Fill the device until less than half the step's segments fit.
    std::vector<void *> ballast;
    int64_t fr = 0, tot = 0;
    ops().mem_info(be.ctx, &fr, &tot);
    void *big = nullptr;
    remat_error aerr{};
    if (fr > full.peak_reserved_bytes && ops().segment_alloc(be.ctx, fr - full.peak_reserved_bytes / 2, &big, &aerr) == REMAT_OK)
        ballast.push_back(big);
    for (int i = 0; i < 100000; i++) {
        ops().mem_info(be.ctx, &fr, &tot);
        if (fr <= full.peak_reserved_bytes / 2) break;
        void *p = nullptr;
        if (ops().segment_alloc(be.ctx, 4096, &p, &aerr) != REMAT_OK) break;
        ballast.push_back(p);
    }
    const int64_t held = info().segment_bytes;
    remat_step_result r{};
    remat_error serr{};
    EXPECT_EQ(step(&r, &serr), REMAT_ERR_DEVICE);
    const std::string msg = serr.msg;
    EXPECT_NE(msg.find("out of device memory: asked "), std::string::npos) << msg;
    EXPECT_NE(msg.find("free "), std::string::npos) << msg;
    EXPECT_NE(msg.find("reserved "), std::string::npos) << msg;
    EXPECT_EQ(info().segment_bytes, held) << "the failed session kept segments";
    printf("[ INFO     ] device full: %s\n", msg.c_str());
    for (void *p : ballast) ops().segment_free(be.ctx, p);
    EXPECT_EQ(info().segment_bytes, before);
    remat_step_result again{};
    ASSERT_EQ(step(&again, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(bits((float)again.loss), bits((float)full.loss));
    EXPECT_EQ(again.peak_reserved_bytes, full.peak_reserved_bytes);
    remat_plan_free(&empty);
}

// A small grid: each block alone checkpointed with each compressor its input allows and
// each k dividing T (k = 1 over batch norm), then all blocks together; the shipped plan.
std::vector<remat_plan> plan_grid(const remat_model &m, const char *shipped) {
    std::vector<remat_plan> grid;
    remat_error err{};
    auto add = [&](const std::vector<remat_block_plan> &bp) {
        remat_plan p{};
        if (remat_plan_init_empty(&m, &p, &err) != REMAT_OK) return;
        for (int b = 0; b < m.n_blocks; b++) p.blocks[b] = bp[b];
        remat_error verr{};
        if (remat_plan_validate(&p, &m, "<grid>", &verr) == REMAT_OK) grid.push_back(p);
        else remat_plan_free(&p);
    };
    auto options = [&](int b) {
        std::vector<remat_block_plan> o;
        const remat_block &blk = m.blocks[b];
        std::vector<remat_compressor> comps = {REMAT_COMP_NONE};
        if (blk.in_values == REMAT_VALUES_BINARY)
            comps.insert(comps.end(), {REMAT_COMP_BIT, REMAT_COMP_SPARSE, REMAT_COMP_BOOL, REMAT_COMP_UINT8});
        else if (blk.in_values == REMAT_VALUES_INTEGER)
            comps.push_back(REMAT_COMP_UINT8);
        for (remat_compressor c : comps)
            for (int k = 1; k <= m.T; k++) {
                if (m.T % k || (k > 1 && blk.has_batchnorm)) continue;
                remat_block_plan bp{};
                bp.checkpoint = 1;
                bp.compressor = c;
                bp.k = k;
                o.push_back(bp);
            }
        return o;
    };
    remat_block_plan stored{};
    stored.k = 1;
    for (int b = 0; b < m.n_blocks; b++)
        for (const remat_block_plan &bp : options(b)) {
            std::vector<remat_block_plan> all(m.n_blocks, stored);
            all[b] = bp;
            add(all);
        }
    std::vector<remat_block_plan> all(m.n_blocks, stored);
    for (int b = 0; b < m.n_blocks; b++) all[b] = options(b).back();
    add(all);
    remat_plan p{};
    if (remat_plan_load((std::string("data/plans/") + shipped).c_str(), &m, &p, &err) == REMAT_OK) grid.push_back(p);
    return grid;
}

TEST_F(CudaExecutor, EveryPlanOfASmallGridIsBitIdenticalToTheCudaBaseline) {
    const char *const shipped[] = {"tiny-mlp-lif-ckpt.json", "tiny-3block-if-ckpt.json", "tiny-resnet-bn-ckpt.json"};
    for (int mode = 0; mode < 2; mode++) {
        set_gemm((remat_cuda_gemm)mode);
        for (int mi = 0; mi < 3; mi++) {
            remat_test::Model model(kTinyModels[mi]);
            remat_plan empty{};
            remat_error err{};
            ASSERT_EQ(remat_plan_init_empty(&model.m, &empty, &err), REMAT_OK) << err.msg;
            Step base;
            ASSERT_TRUE(run_step_on(&be, model.m, empty, 3, &base, &err)) << err.msg;
            remat_plan_free(&empty);
            std::vector<remat_plan> grid = plan_grid(model.m, shipped[mi]);
            EXPECT_GE(grid.size(), 4u) << kTinyModels[mi];
            for (size_t g = 0; g < grid.size(); g++) {
                Step st;
                ASSERT_TRUE(run_step_on(&be, model.m, grid[g], 3, &st, &err)) << err.msg;
                char *text = remat_plan_to_json(&grid[g], &model.m, &err);
                const std::string what = std::string(kTinyModels[mi]) + " mode " + std::to_string(mode) + " plan " +
                                         (text ? text : "?");
                remat_xfree(text);
                EXPECT_EQ(bits((float)st.loss), bits((float)base.loss)) << what;
                EXPECT_EQ(st.loss, base.loss) << what;
                ASSERT_EQ(st.grads.size(), base.grads.size()) << what;
                for (size_t t = 0; t < st.grads.size(); t++)
                    EXPECT_BITS_EQ(st.grads[t], base.grads[t], what + " tensor " + std::to_string(t));
                remat_plan_free(&grid[g]);
            }
        }
    }
}

// The contract within bf16 on the CUDA backend: the small grid of tiny-mlp-lif, every
// plan bit-identical to the bf16 CUDA baseline.
TEST_F(CudaExecutor, EveryPlanOfASmallGridInBf16IsBitIdenticalToTheCudaBaseline) {
    set_gemm(REMAT_CUDA_GEMM_TILED);
    remat_test::Model model(kTinyModels[0], REMAT_PRECISION_BF16);
    remat_plan empty{};
    remat_error err{};
    ASSERT_EQ(remat_plan_init_empty(&model.m, &empty, &err), REMAT_OK) << err.msg;
    Step base;
    ASSERT_TRUE(run_step_on(&be, model.m, empty, 3, &base, &err)) << err.msg;
    remat_plan_free(&empty);
    std::vector<remat_plan> grid = plan_grid(model.m, "tiny-mlp-lif-ckpt.json");
    EXPECT_GE(grid.size(), 4u);
    for (size_t g = 0; g < grid.size(); g++) {
        Step st;
        ASSERT_TRUE(run_step_on(&be, model.m, grid[g], 3, &st, &err)) << err.msg;
        const std::string what = "bf16 plan " + std::to_string(g);
        EXPECT_EQ(bits((float)st.loss), bits((float)base.loss)) << what;
        ASSERT_EQ(st.grads.size(), base.grads.size()) << what;
        for (size_t t = 0; t < st.grads.size(); t++)
            EXPECT_BITS_EQ(st.grads[t], base.grads[t], what + " tensor " + std::to_string(t));
        remat_plan_free(&grid[g]);
    }
}

}  // namespace
