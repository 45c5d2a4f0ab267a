// elementwise_simd_test.cc - every SIMD path of the element-wise reference kernels
// (neuron forward / backward, dropout, add: core/ref/elem_kernel.h) gives the same bits.
//
// What is checked, and how:
//  - each path this CPU supports (scalar, avx2, avx512: core/ref/simd.h), forced with
//    remat_ref_simd_set, against a per-element evaluation of the formulas written here
//    (the source order of neuron.c's bodies, with neuron_math.h's e^x and surrogates),
//    bit for bit, and every path against the first one (any NaN matching any NaN: see
//    FirstDiff);
//  - on adversarial inputs: NaN, +-inf, +-0, subnormals, FLT_MAX, values at the
//    threshold and one ulp either side, large arguments for e^x's clamps, mixed with
//    random values so that every lane of a vector sees each kind;
//  - every option combination: IF and LIF, decay_input on and off, hard and soft reset,
//    detach_reset on and off, sigmoid and atan surrogates, h saved or not;
//  - odd lengths around every vector width and the 2048-element cache block, and
//    several time steps (the state v / gv carried between them);
//  - dropout's mask against the generator's definition (24 random bits over 2^24),
//    forward and accumulating backward; add forward and backward (da == db, NULL).
// A path the CPU lacks (AVX-512 on an AVX2 machine) is reported as skipped, not passed:
// auto-vectorised code has no portable emulation (SIMDe covers intrinsics only, and
// qemu's TCG has no AVX-512), so that copy runs only on an AVX-512 CPU.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/base/rng.h"
#include "core/ref/neuron_math.h"
#include "core/ref/ref_kernels.h"
#include "core/ref/simd.h"

namespace {

std::vector<remat_simd> Paths() {
    std::vector<remat_simd> p;
    for (int i = 0; i < REMAT_SIMD_COUNT; i++) {
        if (remat_ref_simd_supported((remat_simd)i)) p.push_back((remat_simd)i);
        else std::printf("[  SKIPPED ] path %s (this CPU lacks it)\n", remat_ref_simd_name((remat_simd)i));
    }
    return p;
}

std::string Show(const std::vector<float>& got, const std::vector<float>& want, int64_t d) {
    if (d < 0) return "";
    char b[160];
    uint32_t g = 0, w = 0;
    std::memcpy(&g, &got[d], 4);
    std::memcpy(&w, &want[d], 4);
    std::snprintf(b, sizeof b, " element %lld: got %.9g (0x%08x) want %.9g (0x%08x)", (long long)d, got[d], g,
                  want[d], w);
    return b;
}

// Index of the first element whose bits differ, or -1; two NaNs count as equal. x86
// returns the first operand's NaN when both are NaN (and the default NaN 0xffc00000 for
// an invalid operation such as inf - inf), and the compiler orders a commutative
// operation's operands as it likes, differently in a vector loop and its scalar
// remainder: so where a NaN meets a NaN, the result's sign and payload are not part of
// the contract (they differ between paths, as they did between loop and remainder
// before). Every other bit is.
int64_t FirstDiff(const std::vector<float>& x, const std::vector<float>& y) {
    if (x.size() != y.size()) return 0;
    for (size_t i = 0; i < x.size(); i++)
        if (std::memcmp(&x[i], &y[i], sizeof(float)) != 0 && !(std::isnan(x[i]) && std::isnan(y[i])))
            return (int64_t)i;
    return -1;
}

// Every path's output (outs[k]: paths[k]) has exactly the bits of the first path's.
void SamePaths(const std::vector<remat_simd>& paths, const std::vector<std::vector<float>>& outs,
               const std::string& at) {
    for (size_t k = 1; k < outs.size(); k++) {
        const int64_t d = FirstDiff(outs[k], outs[0]);
        EXPECT_EQ(d, -1) << remat_ref_simd_name(paths[k]) << " vs " << remat_ref_simd_name(paths[0]) << " " << at
                         << Show(outs[k], outs[0], d);
    }
}

// Random values in [-lo, hi], every third element replaced by a special value from the
// list (at a position that moves through the lanes).
std::vector<float> Adversarial(size_t n, uint64_t key, float vth, float scale) {
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    const float special[] = {nan,
                             inf,
                             -inf,
                             0.0f,
                             -0.0f,
                             1e-40f,
                             -1e-40f,
                             std::numeric_limits<float>::denorm_min(),
                             FLT_MIN,
                             FLT_MAX,
                             -FLT_MAX,
                             vth,
                             std::nextafter(vth, inf),
                             std::nextafter(vth, -inf),
                             -vth,
                             100.0f,
                             -100.0f,
                             30.0f,
                             -30.0f,
                             1.0f};
    const size_t ns = sizeof special / sizeof special[0];
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++) {
        const uint64_t r = remat_rng_bits(7, 9, key, i);
        v[i] = r % 3 == 0 ? special[(r >> 8) % ns] : scale * (2.0f * remat_rng_uniform(7, 8, key, i) - 1.0f);
    }
    return v;
}

// Around the vector widths (4, 8, 16 and their epilogues) and the 2048-element block.
const int64_t kLengths[] = {1, 3, 7, 8, 15, 17, 31, 33, 63, 65, 2047, 2049, 4101};
const int64_t kSteps = 3;

// The definition, one element at a time, in the source order of neuron.c.
struct Want {
    std::vector<float> spikes, h, v;
};
Want ForwardRef(const std::vector<float>& x, const std::vector<float>& v0, int lif, const remat_neuron_opts& o,
                int64_t T, int64_t nf) {
    const int soft = o.soft_reset != 0, dec = o.decay_input != 0;
    const float vth = o.v_threshold, vr = soft ? 0.0f : o.v_reset, tau = o.tau;
    Want w{std::vector<float>(T * nf), std::vector<float>(T * nf), v0};
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < nf; i++) {
            const float vv = w.v[i], xx = x[t * nf + i];
            float hh;
            if (!lif) hh = vv + xx;
            else if (dec) hh = vv + (xx - (vv - vr)) / tau;
            else hh = vv - (vv - vr) / tau + xx;
            const float s = (hh - vth >= 0.0f) ? 1.0f : 0.0f;
            w.v[i] = soft ? hh - s * vth : hh * (1.0f - s) + vr * s;
            w.spikes[t * nf + i] = s;
            w.h[t * nf + i] = hh;
        }
    return w;
}

struct WantB {
    std::vector<float> dx, gv;
};
WantB BackwardRef(const std::vector<float>& dx0, const std::vector<float>& gv0, const std::vector<float>& ds,
                  const std::vector<float>& h, int lif, const remat_neuron_opts& o, int64_t T, int64_t nf) {
    const int soft = o.soft_reset != 0, det = o.detach_reset != 0, dec = lif && o.decay_input != 0;
    const int at = o.surrogate == REMAT_SURROGATE_ATAN;
    const float vth = o.v_threshold, vr = soft ? 0.0f : o.v_reset, tau = o.tau, alpha = o.alpha;
    const float decay = 1.0f - 1.0f / tau;
    WantB w{dx0, gv0};
    for (int64_t t = T - 1; t >= 0; t--)
        for (int64_t i = 0; i < nf; i++) {
            const float hh = h[t * nf + i], gs = ds[t * nf + i], g = w.gv[i];
            const float u = hh - vth;
            const float s = (u >= 0.0f) ? 1.0f : 0.0f;
            const float sg = remat_surrogate_grad(u, at, alpha);
            float gh;
            if (!soft && !det) gh = (gs + g * (vr - hh)) * sg + g * (1.0f - s);
            else if (!soft) gh = gs * sg + g * (1.0f - s);
            else if (!det) gh = (gs - vth * g) * sg + g;
            else gh = gs * sg + g;
            float& d = w.dx[t * nf + i];
            if (!lif) {
                d = d + gh;
                w.gv[i] = gh;
            } else {
                d = d + (dec ? gh / tau : gh);
                w.gv[i] = gh * decay;
            }
        }
    return w;
}

struct Config {
    int lif, dec, soft, det, atan;
    std::string Name() const {
        char b[96];
        std::snprintf(b, sizeof b, "%s dec=%d soft=%d detach=%d %s", lif ? "LIF" : "IF", dec, soft, det,
                      atan ? "atan" : "sigmoid");
        return b;
    }
};

std::vector<Config> Configs() {
    std::vector<Config> c;
    for (int lif = 0; lif <= 1; lif++)
        for (int dec = 0; dec <= lif; dec++)
            for (int soft = 0; soft <= 1; soft++)
                for (int det = 0; det <= 1; det++)
                    for (int at = 0; at <= 1; at++) c.push_back({lif, dec, soft, det, at});
    return c;
}

remat_neuron_opts Opts(const Config& c) {
    remat_neuron_opts o{};
    o.v_threshold = 0.75f;
    o.v_reset = -0.3f;
    o.soft_reset = c.soft;
    o.detach_reset = c.det;
    o.surrogate = c.atan ? REMAT_SURROGATE_ATAN : REMAT_SURROGATE_SIGMOID;
    o.alpha = c.atan ? 2.0f : 4.0f;
    o.tau = 1.7f;  // 1/tau inexact: the divisions are real ones
    o.decay_input = c.dec;
    return o;
}

TEST(ElementwiseSimd, NeuronForwardEveryPathIsTheDefinition) {
    const std::vector<remat_simd> paths = Paths();
    for (const Config& c : Configs()) {
        if (c.det || c.atan) continue;  // backward-only options
        const remat_neuron_opts o = Opts(c);
        const remat_layer_type type = c.lif ? REMAT_LAYER_LIF : REMAT_LAYER_IF;
        for (int64_t nf : kLengths) {
            const auto x = Adversarial(kSteps * nf, 1 + nf, o.v_threshold, 1.5f);
            const auto v0 = Adversarial(nf, 2 + nf, o.v_threshold, 1.0f);
            const Want want = ForwardRef(x, v0, c.lif, o, kSteps, nf);
            for (int save_h = 0; save_h <= 1; save_h++) {
                std::vector<std::vector<float>> all;
                for (remat_simd p : paths) {
                    ASSERT_EQ(remat_ref_simd_set(p), 0);
                    std::vector<float> s(kSteps * nf, -7.0f), h(kSteps * nf, -7.0f), v = v0;
                    remat_ref_neuron_forward(s.data(), save_h ? h.data() : nullptr, v.data(), x.data(), type, &o,
                                             kSteps, nf);
                    const std::string at = std::string(remat_ref_simd_name(p)) + " " + c.Name() +
                                           " nf=" + std::to_string(nf) + " h=" + std::to_string(save_h);
                    int64_t d = FirstDiff(s, want.spikes);
                    EXPECT_EQ(d, -1) << at << " spikes" << Show(s, want.spikes, d);
                    d = FirstDiff(v, want.v);
                    EXPECT_EQ(d, -1) << at << " v" << Show(v, want.v, d);
                    if (save_h) {
                        d = FirstDiff(h, want.h);
                        EXPECT_EQ(d, -1) << at << " h" << Show(h, want.h, d);
                    } else {
                        EXPECT_EQ(FirstDiff(h, std::vector<float>(kSteps * nf, -7.0f)), -1) << at << " h written";
                    }
                    s.insert(s.end(), v.begin(), v.end());
                    s.insert(s.end(), h.begin(), h.end());
                    all.push_back(s);
                }
                SamePaths(paths, all, c.Name() + " nf=" + std::to_string(nf) + " h=" + std::to_string(save_h));
            }
        }
    }
    remat_ref_simd_set(remat_ref_simd_best());
}

TEST(ElementwiseSimd, NeuronBackwardEveryPathIsTheDefinition) {
    const std::vector<remat_simd> paths = Paths();
    for (const Config& c : Configs()) {
        const remat_neuron_opts o = Opts(c);
        const remat_layer_type type = c.lif ? REMAT_LAYER_LIF : REMAT_LAYER_IF;
        for (int64_t nf : kLengths) {
            // h straddles the threshold (u near 0, where the surrogate peaks) and the
            // clamps of e^(-alpha u) (|alpha u| > 87 from the +-30 and +-100 specials).
            const auto h = Adversarial(kSteps * nf, 3 + nf, o.v_threshold, 2.0f);
            const auto ds = Adversarial(kSteps * nf, 4 + nf, o.v_threshold, 1.0f);
            const auto dx0 = Adversarial(kSteps * nf, 5 + nf, o.v_threshold, 0.5f);
            const auto gv0 = Adversarial(nf, 6 + nf, o.v_threshold, 0.5f);
            const WantB want = BackwardRef(dx0, gv0, ds, h, c.lif, o, kSteps, nf);
            std::vector<std::vector<float>> all;
            for (remat_simd p : paths) {
                ASSERT_EQ(remat_ref_simd_set(p), 0);
                std::vector<float> dx = dx0, gv = gv0;
                remat_ref_neuron_backward(dx.data(), gv.data(), ds.data(), h.data(), type, &o, kSteps, nf);
                const std::string at = std::string(remat_ref_simd_name(p)) + " " + c.Name() + " nf=" + std::to_string(nf);
                int64_t d = FirstDiff(dx, want.dx);
                EXPECT_EQ(d, -1) << at << " dx" << Show(dx, want.dx, d);
                d = FirstDiff(gv, want.gv);
                EXPECT_EQ(d, -1) << at << " gv" << Show(gv, want.gv, d);
                dx.insert(dx.end(), gv.begin(), gv.end());
                all.push_back(dx);
            }
            SamePaths(paths, all, c.Name() + " nf=" + std::to_string(nf));
        }
    }
    remat_ref_simd_set(remat_ref_simd_best());
}

// e^x's clamps on the host form of the select: NaN and -inf give e^-87, +inf and
// anything above 88 give e^88.
TEST(ElementwiseSimd, ExpPolyClamps) {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(remat_exp_poly(nan), remat_exp_poly(-87.0f));
    EXPECT_EQ(remat_exp_poly(-inf), remat_exp_poly(-87.0f));
    EXPECT_EQ(remat_exp_poly(inf), remat_exp_poly(88.0f));
    EXPECT_EQ(remat_exp_poly(1000.0f), remat_exp_poly(88.0f));
    EXPECT_EQ(remat_exp_poly(0.0f), 1.0f);
    EXPECT_EQ(remat_neuron_select(1, 2.0f, 3.0f), 2.0f);
    EXPECT_EQ(remat_neuron_select(0, 2.0f, 3.0f), 3.0f);
    const float e1 = remat_exp_poly(1.0f);
    EXPECT_NEAR(e1, 2.718281828f, 3e-7f);
}

TEST(ElementwiseSimd, DropoutEveryPathIsTheDefinition) {
    const std::vector<remat_simd> paths = Paths();
    const uint64_t seed = 1234, iter = 5;
    const int layer = 3;
    const float p = 0.3f, scale = 1.0f / (1.0f - p);
    for (int64_t nf : kLengths) {
        // The mask by the generator's definition (24 bits as a uint64 over 2^24).
        std::vector<float> mask(nf);
        const uint64_t key = remat_rng_dropout_key(iter, (uint64_t)layer);
        for (int64_t i = 0; i < nf; i++) {
            const float u = (float)(remat_rng_bits(seed, REMAT_RNG_DROPOUT, key, (uint64_t)i) >> 40) *
                            (1.0f / 16777216.0f);
            mask[i] = u >= p ? scale : 0.0f;
        }
        const auto x = Adversarial(kSteps * nf, 7 + nf, 1.0f, 2.0f);
        const auto d0 = Adversarial(kSteps * nf, 8 + nf, 1.0f, 2.0f);
        std::vector<float> fwd(kSteps * nf), bwd(kSteps * nf);
        for (int64_t t = 0; t < kSteps; t++)
            for (int64_t i = 0; i < nf; i++) {
                fwd[t * nf + i] = x[t * nf + i] * mask[i];
                bwd[t * nf + i] = d0[t * nf + i] + x[t * nf + i] * mask[i];
            }
        std::vector<std::vector<float>> all;
        for (remat_simd ps : paths) {
            ASSERT_EQ(remat_ref_simd_set(ps), 0);
            const std::string at = std::string(remat_ref_simd_name(ps)) + " nf=" + std::to_string(nf);
            std::vector<float> m(nf, -1.0f), y(kSteps * nf, -1.0f), g = d0;
            remat_ref_dropout_mask(m.data(), seed, iter, layer, p, nf);
            remat_ref_dropout_forward(y.data(), x.data(), seed, iter, layer, p, kSteps, nf);
            remat_ref_dropout_backward(g.data(), x.data(), seed, iter, layer, p, kSteps, nf);
            int64_t d = FirstDiff(m, mask);
            EXPECT_EQ(d, -1) << at << " mask" << Show(m, mask, d);
            d = FirstDiff(y, fwd);
            EXPECT_EQ(d, -1) << at << " forward" << Show(y, fwd, d);
            d = FirstDiff(g, bwd);
            EXPECT_EQ(d, -1) << at << " backward" << Show(g, bwd, d);
            m.insert(m.end(), y.begin(), y.end());
            m.insert(m.end(), g.begin(), g.end());
            all.push_back(m);
        }
        SamePaths(paths, all, "dropout nf=" + std::to_string(nf));
    }
    remat_ref_simd_set(remat_ref_simd_best());
}

TEST(ElementwiseSimd, AddEveryPathIsTheDefinition) {
    const std::vector<remat_simd> paths = Paths();
    for (int64_t n : kLengths) {
        const auto a = Adversarial(n, 9 + n, 1.0f, 2.0f), b = Adversarial(n, 10 + n, 1.0f, 2.0f);
        const auto g = Adversarial(n, 11 + n, 1.0f, 2.0f), d0 = Adversarial(n, 12 + n, 1.0f, 2.0f);
        std::vector<float> sum(n), acc1(n), acc2(n);
        for (int64_t i = 0; i < n; i++) {
            sum[i] = a[i] + b[i];
            acc1[i] = d0[i] + g[i];
            acc2[i] = acc1[i] + g[i];
        }
        std::vector<std::vector<float>> all;
        for (remat_simd p : paths) {
            ASSERT_EQ(remat_ref_simd_set(p), 0);
            const std::string at = std::string(remat_ref_simd_name(p)) + " n=" + std::to_string(n);
            std::vector<float> out(n, -1.0f), da = d0, db = d0, both = d0;
            remat_ref_add_forward(out.data(), a.data(), b.data(), n);
            remat_ref_add_backward(da.data(), db.data(), g.data(), n);
            remat_ref_add_backward(both.data(), both.data(), g.data(), n);  // the same buffer: dout twice
            std::vector<float> only = d0;
            remat_ref_add_backward(nullptr, only.data(), g.data(), n);
            int64_t d = FirstDiff(out, sum);
            EXPECT_EQ(d, -1) << at << " forward" << Show(out, sum, d);
            EXPECT_EQ(FirstDiff(da, acc1), -1) << at << " da";
            EXPECT_EQ(FirstDiff(db, acc1), -1) << at << " db";
            EXPECT_EQ(FirstDiff(only, acc1), -1) << at << " db (da NULL)";
            d = FirstDiff(both, acc2);
            EXPECT_EQ(d, -1) << at << " da == db" << Show(both, acc2, d);
            for (const auto* o : {&da, &db, &both, &only}) out.insert(out.end(), o->begin(), o->end());
            all.push_back(out);
        }
        SamePaths(paths, all, "add n=" + std::to_string(n));
    }
    remat_ref_simd_set(remat_ref_simd_best());
}

}  // namespace
