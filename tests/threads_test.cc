// threads_test.cc - the kernels that run on the reference backend's threads (neurons,
// batch norm, add, dropout, pooling, the optimisers, zeroing, and the ways the GEMM and
// the convolution split their work: core/ref/parallel.h) give the bits of one thread at
// 2, 3 and 5 threads, on every SIMD path this CPU runs, for float and bf16 storage. The
// sizes are large enough that every call is split (each part has at least the kernel's
// minimum; the GEMM and conv cases check that with the parallel loop's accounting), and
// odd, so that parts end inside vectors and cache blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/base/bf16.h"
#include "core/ref/gemm_kernel.h"
#include "core/ref/parallel.h"
#include "core/ref/ref_kernels.h"
#include "core/ref/simd.h"
#include "tests/testutil.h"

namespace {

typedef std::vector<float> F;
typedef std::vector<uint16_t> H;

F uniform(int64_t n, float lo, float hi, uint32_t seed) {
    F v((size_t)n);
    uint32_t s = seed * 2654435761u + 7;
    for (auto &x : v) {
        s = s * 1664525u + 1013904223u;
        x = lo + (hi - lo) * (float)(s >> 8) / (float)(1 << 24);
    }
    return v;
}
H to16(const F &v) {
    H o(v.size());
    for (size_t i = 0; i < v.size(); i++) o[i] = remat_f32_to_bf16(v[i]);
    return o;
}

// The bytes of every buffer a kernel wrote, concatenated.
typedef std::function<std::string()> Run;

template <typename V>
void append(std::string *s, const V &v) {
    s->append(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(v[0]));
}

void expect_thread_invariant(const char *what, const Run &run) {
    const remat_simd before = remat_ref_simd_get();
    for (int p = 0; p < REMAT_SIMD_COUNT; p++) {
        if (!remat_ref_simd_supported((remat_simd)p)) continue;
        ASSERT_EQ(remat_ref_simd_set((remat_simd)p), 0);
        remat_ref_set_threads(1);
        const std::string one = run();
        for (int t : {2, 3, 5}) {
            remat_ref_set_threads(t);
            EXPECT_TRUE(run() == one) << what << ": " << t << " threads differ from 1 on "
                                      << remat_ref_simd_name((remat_simd)p);
        }
    }
    remat_ref_set_threads(1);
    remat_ref_simd_set(before);
}

// Runs fn at 2 threads with the parallel loop's accounting on: how many calls split.
int64_t split_calls(const std::function<void()> &fn) {
    remat_ref_set_threads(2);
    remat_ref_parallel_stats_on(1);
    fn();
    const int64_t n = remat_ref_parallel_stats().split;
    remat_ref_parallel_stats_on(0);
    remat_ref_set_threads(1);
    return n;
}

// GEMMs split along N in half tiles (64 x 147: the sew-resnet18 stem's weight gradient,
// 5 column panels of 32), along N with an odd panel count, and along M.
TEST(Threads, GemmSplits) {
    struct Shape {
        int64_t M, N, K;
    };
    for (const Shape &sh : {Shape{64, 147, 1000}, Shape{70, 203, 700}, Shape{301, 45, 400}}) {
        const F a = uniform(sh.M * sh.K, -1, 1, 31), b = uniform(sh.K * sh.N, -1, 1, 32), c0 = uniform(sh.M * sh.N, -1, 1, 33);
        for (remat_gemm_layout l : {REMAT_GEMM_NN, REMAT_GEMM_NT, REMAT_GEMM_TN}) {
            const std::string what = "gemm " + std::to_string(sh.M) + "x" + std::to_string(sh.N) + "x" +
                                     std::to_string(sh.K) + " layout " + std::to_string((int)l);
            auto run = [&] {
                F c = c0;
                remat_gemm_typed(l, c.data(), 0, a.data(), 0, b.data(), 0, sh.M, sh.N, sh.K, 1);
                std::string r;
                append(&r, c);
                return r;
            };
            EXPECT_GE(split_calls([&] { run(); }), 1) << what << ": never split";
            expect_thread_invariant(what.c_str(), run);
        }
    }
}

// The convolution's input gradient, each way a dcol block is split (conv.c dinp_split):
// by samples (4 samples of 8 x 8 per block), in two steps (the GEMM by columns, col2im
// by channels: one sample of 23 x 25, 23 channels = blocks of 22 and 1), by channels
// (3 samples of 7 x 7 against 198 rows); and the weight gradient of the sew-resnet18
// stem's shape, smaller (3 -> 64, 7 x 7 / 2: the GEMM 64 x 147 split in half tiles).
TEST(Threads, ConvBackwardSplits) {
    using remat_test::conv_geom;
    struct Case {
        remat_conv_geom g;
        int64_t T, N;
        const char *what;
    };
    const Case cases[] = {{conv_geom(88, 8, 8, 128, 3, 1, 1), 1, 4, "conv dinp by samples"},
                          {conv_geom(23, 23, 25, 64, 3, 1, 1), 1, 1, "conv dinp in two steps"},
                          {conv_geom(66, 7, 7, 256, 3, 1, 1), 3, 1, "conv dinp by channels"},
                          {conv_geom(3, 40, 37, 64, 7, 2, 3), 2, 2, "conv stem weight gradient"}};
    for (const Case &c : cases) {
        const remat_conv_geom &g = c.g;
        const int64_t K = g.c_in * g.kh * g.kw, P = g.h_out * g.w_out, rows = c.T * c.N;
        const int64_t ie = g.c_in * g.h_in * g.w_in, oe = g.c_out * P;
        const F x = uniform(rows * ie, -1, 1, 41), w = uniform(g.c_out * K, -1, 1, 42), dy = uniform(rows * oe, -1, 1, 43);
        const F dx0 = uniform(rows * ie, -0.5f, 0.5f, 44), dw0 = uniform(g.c_out * K, -0.25f, 0.25f, 45);
        F ws((size_t)remat_ref_conv2d_backward_ws_elems(&g));
        auto run = [&] {
            F dx = dx0, dw = dw0, db(g.c_out, 0.5f);
            remat_ref_conv2d_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), ws.data(), c.T, c.N,
                                      &g);
            std::string r;
            append(&r, dx), append(&r, dw), append(&r, db);
            return r;
        };
        EXPECT_GE(split_calls([&] { run(); }), 1) << c.what << ": never split";
        expect_thread_invariant(c.what, run);
        expect_thread_invariant((std::string(c.what) + " bf16").c_str(), [&] {
            const H x16 = to16(x), w16 = to16(w), dy16 = to16(dy);
            H dx = to16(dx0);
            F dw = dw0, db(g.c_out, 0.5f);
            remat_ref_conv2d_backward_bf16(dx.data(), dw.data(), db.data(), dy16.data(), x16.data(), w16.data(),
                                           ws.data(), c.T, c.N, &g);
            std::string r;
            append(&r, dx), append(&r, dw), append(&r, db);
            return r;
        });
    }
}

// The operand checks over the threads (parallel.h): runs of len floats, stride apart,
// split at any element; what lies between the runs is not read.
TEST(Threads, OperandScans) {
    const int64_t runs = 3, len = 5 * ((int64_t)1 << 17) + 9, stride = len + 1000;
    F x = uniform(runs * stride, -1, 1, 51);
    int64_t want = 0;
    for (int64_t i = 0; i < runs * stride; i++) {
        if (i % 3 == 0) x[i] = (i % 2) ? -0.0f : 0.0f;
        if (i % stride < len) want += x[i] != 0.0f;
    }
    x[len + 10] = INFINITY;  // in the gap after run 0
    for (int t : {1, 2, 3, 5}) {
        remat_ref_set_threads(t);
        EXPECT_EQ(remat_ref_floats_nonzero_runs(x.data(), runs, len, stride), want) << t << " threads";
        EXPECT_TRUE(remat_ref_floats_all_finite_runs(x.data(), runs, len, stride)) << t << " threads";
        F y = x;
        y[2 * stride + len - 1] = NAN;  // the last element of the last run
        EXPECT_FALSE(remat_ref_floats_all_finite_runs(y.data(), runs, len, stride)) << t << " threads";
        EXPECT_EQ(remat_ref_floats_nonzero_runs(y.data(), runs, len, stride), want + (x[2 * stride + len - 1] == 0.0f))
            << t << " threads";
    }
    remat_ref_set_threads(1);
}

// The pool (parallel.c): every part runs once whatever the thread count (growing and
// shrinking), with calls made at once from two threads (one gets the pool, the other
// starts threads of its own) and from inside a part.
struct CoverJob {
    std::vector<int> *hits;
    int nested;
};
void cover_part(void *ctx, int64_t lo, int64_t hi) {
    CoverJob *j = static_cast<CoverJob *>(ctx);
    for (int64_t i = lo; i < hi; i++) (*j->hits)[(size_t)i]++;
    if (j->nested) {
        std::vector<int> inner(1000, 0);
        CoverJob k{&inner, 0};
        remat_ref_parallel_for(1000, 1, 1, cover_part, &k);
        for (int v : inner)
            if (v != 1) (*j->hits)[(size_t)lo] += 100;  // shows as a bad count below
    }
}
bool covered_once(int64_t n, int nested) {
    std::vector<int> hits((size_t)n, 0);
    CoverJob j{&hits, nested};
    remat_ref_parallel_for(n, 3, 1, cover_part, &j);
    for (int v : hits)
        if (v != 1) return false;
    return true;
}

TEST(Threads, PoolRunsEveryPartOnce) {
    for (int t : {2, 5, 2, 3, 1, 4}) {
        remat_ref_set_threads(t);
        for (int64_t n : {1, 2, 7, 1000, 100003}) EXPECT_TRUE(covered_once(n, 0)) << t << " threads, n " << n;
        EXPECT_TRUE(covered_once(5000, 1)) << t << " threads, nested";
    }
    remat_ref_set_threads(3);
    int bad[2] = {0, 0};
    std::thread a([&] {
        for (int r = 0; r < 200; r++) bad[0] += !covered_once(10000 + r, r % 3 == 0);
    });
    std::thread b([&] {
        for (int r = 0; r < 200; r++) bad[1] += !covered_once(777 + r, r % 5 == 0);
    });
    a.join(), b.join();
    EXPECT_EQ(bad[0] + bad[1], 0);
    remat_ref_set_threads(1);
}

const int64_t kT = 3, kNf = 5 * 16384 + 77;  // neurons: parts of at least 16384

TEST(Threads, NeuronsForwardAndBackward) {
    const F x = uniform(kT * kNf, -1.5f, 2.5f, 1), ds = uniform(kT * kNf, -1, 1, 2);
    for (remat_layer_type type : {REMAT_LAYER_IF, REMAT_LAYER_LIF}) {
        remat_neuron_opts o{};
        o.v_threshold = 1.0f, o.v_reset = 0.0f, o.tau = 2.0f, o.alpha = 4.0f, o.decay_input = 1;
        o.surrogate = REMAT_SURROGATE_ATAN;
        expect_thread_invariant(type == REMAT_LAYER_IF ? "IF f32" : "LIF f32", [&] {
            F s(x.size()), h(x.size()), v(kNf, 0.1f), dx = uniform(kT * kNf, -1, 1, 3), gv(kNf, 0.0f);
            remat_ref_neuron_forward(s.data(), h.data(), v.data(), x.data(), type, &o, kT, kNf);
            remat_ref_neuron_backward(dx.data(), gv.data(), ds.data(), h.data(), type, &o, kT, kNf);
            std::string r;
            append(&r, s), append(&r, h), append(&r, v), append(&r, dx), append(&r, gv);
            return r;
        });
        expect_thread_invariant(type == REMAT_LAYER_IF ? "IF bf16" : "LIF bf16", [&] {
            const H x16 = to16(x), ds16 = to16(ds);
            H s(x.size()), dx = to16(uniform(kT * kNf, -1, 1, 3));
            F h(x.size()), v(kNf, 0.1f), gv(kNf, 0.0f);
            remat_ref_neuron_forward_bf16(s.data(), h.data(), v.data(), x16.data(), type, &o, kT, kNf);
            remat_ref_neuron_backward_bf16(dx.data(), gv.data(), ds16.data(), h.data(), type, &o, kT, kNf);
            std::string r;
            append(&r, s), append(&r, h), append(&r, v), append(&r, dx), append(&r, gv);
            return r;
        });
    }
}

TEST(Threads, BatchNormSpatialAndFlat) {
    struct Shape {
        int64_t rows, C, hw;
    };
    // spatial: 11 channels of 3 x 9001 positions; flat: 4099 channels of 97 rows
    for (const Shape &sh : {Shape{3, 11, 9001}, Shape{97, 4099, 1}}) {
        const int64_t n = sh.rows * sh.C * sh.hw;
        const F x = uniform(n, -2, 3, 4), dy = uniform(n, -1, 1, 5), w = uniform(sh.C, 0.5f, 1.5f, 6),
                b = uniform(sh.C, -0.5f, 0.5f, 7);
        expect_thread_invariant(sh.hw > 1 ? "batch norm spatial f32" : "batch norm flat f32", [&] {
            F out(n), mean(sh.C), rstd(sh.C), rm(sh.C, 0.1f), rv(sh.C, 0.9f), dx = uniform(n, -1, 1, 8),
                dw(sh.C, 0.25f), db(sh.C, -0.25f);
            remat_ref_batchnorm_forward(out.data(), mean.data(), rstd.data(), rm.data(), rv.data(), x.data(), w.data(),
                                        b.data(), sh.rows, sh.C, sh.hw, 0.1f, 1e-5);
            remat_ref_batchnorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(),
                                         rstd.data(), sh.rows, sh.C, sh.hw);
            std::string r;
            append(&r, out), append(&r, mean), append(&r, rstd), append(&r, rm), append(&r, rv), append(&r, dx);
            append(&r, dw), append(&r, db);
            return r;
        });
        expect_thread_invariant(sh.hw > 1 ? "batch norm spatial bf16" : "batch norm flat bf16", [&] {
            const H x16 = to16(x), dy16 = to16(dy);
            H out(n), dx = to16(uniform(n, -1, 1, 8));
            F mean(sh.C), rstd(sh.C), rm(sh.C, 0.1f), rv(sh.C, 0.9f), dw(sh.C, 0.25f), db(sh.C, -0.25f);
            remat_ref_batchnorm_forward_bf16(out.data(), mean.data(), rstd.data(), rm.data(), rv.data(), x16.data(),
                                             w.data(), b.data(), sh.rows, sh.C, sh.hw, 0.1f, 1e-5);
            remat_ref_batchnorm_backward_bf16(dx.data(), dw.data(), db.data(), dy16.data(), x16.data(), w.data(),
                                              mean.data(), rstd.data(), sh.rows, sh.C, sh.hw);
            std::string r;
            append(&r, out), append(&r, mean), append(&r, rstd), append(&r, rm), append(&r, rv), append(&r, dx);
            append(&r, dw), append(&r, db);
            return r;
        });
    }
}

TEST(Threads, AddAndDropout) {
    const int64_t n = 7 * 32768 + 13;  // add: parts of at least 32768 elements
    const F a = uniform(n, -1, 1, 9), b = uniform(n, -1, 1, 10);
    expect_thread_invariant("add f32", [&] {
        F out(n), da = uniform(n, -1, 1, 11), db = uniform(n, -1, 1, 12), same = uniform(n, -1, 1, 13);
        remat_ref_add_forward(out.data(), a.data(), b.data(), n);
        remat_ref_add_backward(da.data(), db.data(), a.data(), n);
        remat_ref_add_backward(same.data(), same.data(), b.data(), n);
        std::string r;
        append(&r, out), append(&r, da), append(&r, db), append(&r, same);
        return r;
    });
    expect_thread_invariant("add bf16", [&] {
        const H a16 = to16(a), b16 = to16(b);
        H out(n), da = to16(uniform(n, -1, 1, 11)), db = to16(uniform(n, -1, 1, 12));
        remat_ref_add_forward_bf16(out.data(), a16.data(), b16.data(), n);
        remat_ref_add_backward_bf16(da.data(), db.data(), a16.data(), n);
        std::string r;
        append(&r, out), append(&r, da), append(&r, db);
        return r;
    });
    const int64_t T = 2, nf = n;
    const F x = uniform(T * nf, -1, 1, 14);
    expect_thread_invariant("dropout f32", [&] {
        F out(T * nf), dx = uniform(T * nf, -1, 1, 15);
        remat_ref_dropout_forward(out.data(), x.data(), 5, 2, 3, 0.3f, T, nf);
        remat_ref_dropout_backward(dx.data(), x.data(), 5, 2, 3, 0.3f, T, nf);
        std::string r;
        append(&r, out), append(&r, dx);
        return r;
    });
    expect_thread_invariant("dropout bf16", [&] {
        const H x16 = to16(x);
        H out(T * nf), dx = to16(uniform(T * nf, -1, 1, 15));
        remat_ref_dropout_forward_bf16(out.data(), x16.data(), 5, 2, 3, 0.3f, T, nf);
        remat_ref_dropout_backward_bf16(dx.data(), x16.data(), 5, 2, 3, 0.3f, T, nf);
        std::string r;
        append(&r, out), append(&r, dx);
        return r;
    });
}

TEST(Threads, Pooling) {
    // 3 samples x 37 channels = 111 planes of 24 x 24, windows 3 x 3 stride 2 padding 1
    // (overlapping, padded): parts of at least 18 planes, so 5 threads split them.
    remat_conv_geom g{};
    g.c_in = g.c_out = 37, g.h_in = g.w_in = 24, g.kh = g.kw = 3, g.sh = g.sw = 2, g.ph = g.pw = 1;
    g.h_out = g.w_out = 12;
    const int64_t rows = 3, ni = rows * g.c_in * 24 * 24, no = rows * g.c_in * 12 * 12;
    F x = uniform(ni, -1, 1, 16);
    for (int64_t i = 0; i < ni; i += 3) x[i] = x[i / 2];  // ties: the first maximum wins
    const F dy = uniform(no, -1, 1, 17), dx0 = uniform(ni, -1, 1, 18);
    expect_thread_invariant("pooling f32", [&] {
        F mo(no), ao(no), mdx = dx0, adx = dx0;
        remat_ref_maxpool2d_forward(mo.data(), x.data(), rows, &g);
        remat_ref_avgpool2d_forward(ao.data(), x.data(), rows, &g);
        remat_ref_maxpool2d_backward(mdx.data(), dy.data(), x.data(), rows, &g);
        remat_ref_avgpool2d_backward(adx.data(), dy.data(), rows, &g);
        std::string r;
        append(&r, mo), append(&r, ao), append(&r, mdx), append(&r, adx);
        return r;
    });
    expect_thread_invariant("pooling bf16", [&] {
        const H x16 = to16(x), dy16 = to16(dy);
        H mo(no), ao(no), mdx = to16(dx0), adx = to16(dx0);
        remat_ref_maxpool2d_forward_bf16(mo.data(), x16.data(), rows, &g);
        remat_ref_avgpool2d_forward_bf16(ao.data(), x16.data(), rows, &g);
        remat_ref_maxpool2d_backward_bf16(mdx.data(), dy16.data(), x16.data(), rows, &g);
        remat_ref_avgpool2d_backward_bf16(adx.data(), dy16.data(), rows, &g);
        std::string r;
        append(&r, mo), append(&r, ao), append(&r, mdx), append(&r, adx);
        return r;
    });
}

}  // namespace

TEST(Threads, OptimisersAndZero) {
    const int64_t n = 5 * 32768 + 29;  // parts of at least 32768 elements
    const F g = uniform(n, -1, 1, 21), p0 = uniform(n, -1, 1, 22), b0 = uniform(n, -1, 1, 23);
    expect_thread_invariant("sgd", [&] {
        F p = p0, b = b0, q = p0, first = p0, fb(n);
        remat_ref_sgd_update(p.data(), b.data(), g.data(), 0.1f, 0.9f, 0, n);
        remat_ref_sgd_update(q.data(), nullptr, g.data(), 0.1f, 0.9f, 0, n);
        remat_ref_sgd_update(first.data(), fb.data(), g.data(), 0.1f, 0.9f, 1, n);
        std::string r;
        append(&r, p), append(&r, b), append(&r, q), append(&r, first), append(&r, fb);
        return r;
    });
    expect_thread_invariant("adam", [&] {
        F p = p0, m = b0, v = uniform(n, 0, 1, 24);
        for (int step = 1; step <= 3; step++)
            remat_ref_adam_update(p.data(), m.data(), v.data(), g.data(), 0.01f, 0.9f, 0.999f, 1e-8f, step, n);
        std::string r;
        append(&r, p), append(&r, m), append(&r, v);
        return r;
    });
    expect_thread_invariant("zero", [&] {
        F x = uniform(n, -1, 1, 25);
        remat_ref_zero(reinterpret_cast<char *>(x.data()) + 3, (int64_t)(n * sizeof(float)) - 7);
        std::string r;
        append(&r, x);
        return r;
    });
}
