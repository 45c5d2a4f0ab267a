// bf16_storage_test.cc - every bf16-storage twin of the reference backend
// (remat_ref_<name>_bf16, core/ref/ref_kernels.h) against its float kernel: run on the
// widened operands, with every activation output (and every accumulated activation
// gradient, starting from its widened value) rounded to bf16 once at the end, the float
// kernel must give exactly the twin's bits; float outputs (parameter gradients, neuron
// state, statistics, rates, the loss) must be equal. This is the definition of the
// mode (docs/precision.md), so a twin that rounds twice, rounds an intermediate or
// drops a term fails here. Shapes are odd, windows overlap, values are random with
// exact ties and zeros mixed in, and the compressors see bf16 spikes and refuse what
// the fp32 compressors refuse.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/base/bf16.h"
#include "core/base/rng.h"
#include "core/codec/compress.h"
#include "core/ref/ref_kernels.h"
#include "tests/testutil.h"

namespace {

using remat_test::conv_geom;
using remat_test::dilated;
using remat_test::grouped;

using B16 = std::vector<uint16_t>;
using F32 = std::vector<float>;

// n bf16 values in [lo, hi), every 7th exactly 0 and every 11th a rounding tie before
// rounding (so the stored patterns include the cases round-to-even decides).
B16 Rand(size_t n, uint64_t key, float lo = -1.0f, float hi = 1.0f) {
    B16 v(n);
    for (size_t i = 0; i < n; i++) {
        float x = lo + (hi - lo) * remat_rng_uniform(77, 3, key, i);
        if (i % 11 == 5) x = remat_f32_from_bits((remat_f32_bits(x) & 0xffff0000u) | 0x8000u);
        v[i] = i % 7 == 3 ? 0 : remat_f32_to_bf16(x);
    }
    return v;
}

B16 Spikes(size_t n, uint64_t key, float rate = 0.3f) {
    B16 v(n);
    for (size_t i = 0; i < n; i++) v[i] = remat_rng_uniform(77, 4, key, i) < rate ? 0x3f80 : 0;
    return v;
}

F32 Widen(const B16 &b) {
    F32 f(b.size());
    for (size_t i = 0; i < b.size(); i++) f[i] = remat_bf16_to_f32(b[i]);
    return f;
}

B16 Round(const F32 &f) {
    B16 b(f.size());
    for (size_t i = 0; i < f.size(); i++) b[i] = remat_f32_to_bf16(f[i]);
    return b;
}

F32 RandF(size_t n, uint64_t key) { return Widen(Rand(n, key)); }

void ExpectSame(const B16 &got, const B16 &want, const std::string &what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); i++)
        ASSERT_EQ(got[i], want[i]) << what << " element " << i << " of " << got.size();
}

void ExpectSame(const F32 &got, const F32 &want, const std::string &what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); i++)
        ASSERT_EQ(remat_f32_bits(got[i]), remat_f32_bits(want[i])) << what << " element " << i;
}


TEST(Bf16Storage, Linear) {
    const int64_t T = 3, N = 5, in = 37, out = 19, rows = T * N;
    for (int bias = 0; bias < 2; bias++) {
        const B16 x = Rand(rows * in, 1), w = Rand(out * in, 2), b = Rand(out, 3);
        B16 y((size_t)(rows * out));
        remat_ref_linear_forward_bf16(y.data(), x.data(), w.data(), bias ? b.data() : nullptr, rows, in, out);
        F32 yf((size_t)(rows * out));
        const F32 wb = Widen(b);
        remat_ref_linear_forward(yf.data(), Widen(x).data(), Widen(w).data(), bias ? wb.data() : nullptr, rows, in,
                                 out);
        ExpectSame(y, Round(yf), "linear forward");

        const B16 dy = Rand(rows * out, 4);
        B16 dx = Rand(rows * in, 5);
        F32 dw = RandF(out * in, 6), db = RandF(out, 7), dwf = dw, dbf = db, dxf = Widen(dx);
        F32 scratch((size_t)remat_ref_linear_scratch_elems(in, out)), scratch2 = scratch;
        remat_ref_linear_backward_bf16(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), scratch.data(),
                                       T, N, in, out);
        remat_ref_linear_backward(dxf.data(), dwf.data(), dbf.data(), Widen(dy).data(), Widen(x).data(),
                                  Widen(w).data(), scratch2.data(), T, N, in, out);
        ExpectSame(dx, Round(dxf), "linear dinp");
        ExpectSame(dw, dwf, "linear dweight");
        ExpectSame(db, dbf, "linear dbias");
    }
}

// K large enough for several K blocks of the float GEMM: the bf16 C is stored once.
TEST(Bf16Storage, LinearLongChain) {
    const int64_t rows = 13, in = 3001, out = 21;
    const B16 x = Rand(rows * in, 11), w = Rand(out * in, 12);
    B16 y((size_t)(rows * out));
    remat_ref_linear_forward_bf16(y.data(), x.data(), w.data(), nullptr, rows, in, out);
    F32 yf((size_t)(rows * out));
    remat_ref_linear_forward(yf.data(), Widen(x).data(), Widen(w).data(), nullptr, rows, in, out);
    ExpectSame(y, Round(yf), "linear forward, long K");
}

TEST(Bf16Storage, Conv2d) {
    // the last: rows wider than col2im's stack row (4096 columns), added in two pieces
    const remat_conv_geom gs[] = {conv_geom(3, 9, 7, 5, 3, 1, 1), conv_geom(4, 8, 8, 6, 3, 2, 1), conv_geom(6, 7, 7, 4, 1, 2, 0),
                                  conv_geom(1, 2, 4101, 2, 3, 1, 1), dilated(conv_geom(2, 9, 8, 3, 3, 2, 1, 2, 2, 1), 2, 3),
                                  grouped(conv_geom(4, 8, 7, 6, 3, 1, 1), 2), grouped(conv_geom(3, 7, 7, 6, 3, 2, 1), 3)};
    for (const remat_conv_geom &g : gs) {
        const int64_t T = 2, N = 3, rows = T * N, ie = g.c_in * g.h_in * g.w_in, oe = g.c_out * g.h_out * g.w_out;
        const int64_t K = g.c_in / remat_conv_groups(&g) * g.kh * g.kw;
        const B16 x = Rand(rows * ie, 21), w = Rand(g.c_out * K, 22), b = Rand(g.c_out, 23);
        F32 ws((size_t)remat_ref_conv2d_backward_ws_elems(&g));
        B16 y((size_t)(rows * oe));
        remat_ref_conv2d_forward_bf16(y.data(), x.data(), w.data(), b.data(), ws.data(), rows, &g);
        F32 yf((size_t)(rows * oe));
        remat_ref_conv2d_forward(yf.data(), Widen(x).data(), Widen(w).data(), Widen(b).data(), ws.data(), rows, &g);
        ExpectSame(y, Round(yf), "conv forward");

        const B16 dy = Rand(rows * oe, 24);
        B16 dx = Rand(rows * ie, 25);
        F32 dw = RandF(g.c_out * K, 26), db = RandF(g.c_out, 27), dwf = dw, dbf = db, dxf = Widen(dx);
        remat_ref_conv2d_backward_bf16(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), ws.data(), T,
                                       N, &g);
        remat_ref_conv2d_backward(dxf.data(), dwf.data(), dbf.data(), Widen(dy).data(), Widen(x).data(),
                                  Widen(w).data(), ws.data(), T, N, &g);
        ExpectSame(dx, Round(dxf), "conv dinp (overlapping windows: one rounding per element)");
        ExpectSame(dw, dwf, "conv dweight");
        ExpectSame(db, dbf, "conv dbias");
    }
}

TEST(Bf16Storage, Neurons) {
    const int64_t T = 5, nf = 4099;
    for (int type : {REMAT_LAYER_IF, REMAT_LAYER_LIF})
        for (int soft = 0; soft < 2; soft++)
            for (int detach = 0; detach < 2; detach++)
                for (int dec = 0; dec < 2; dec++) {
                    remat_neuron_opts o{};
                    o.v_threshold = 0.5f, o.v_reset = -0.25f, o.soft_reset = soft, o.detach_reset = detach;
                    o.surrogate = dec ? REMAT_SURROGATE_ATAN : REMAT_SURROGATE_SIGMOID, o.alpha = 3.0f;
                    o.tau = 1.75f, o.decay_input = dec;
                    const B16 x = Rand(T * nf, 31, -0.6f, 1.4f);
                    F32 v0 = RandF(nf, 32), v = v0, vf = v0, h((size_t)(T * nf)), hf = h;
                    B16 s((size_t)(T * nf));
                    F32 sf((size_t)(T * nf));
                    remat_ref_neuron_forward_bf16(s.data(), h.data(), v.data(), x.data(), (remat_layer_type)type, &o, T,
                                                  nf);
                    remat_ref_neuron_forward(sf.data(), hf.data(), vf.data(), Widen(x).data(), (remat_layer_type)type,
                                             &o, T, nf);
                    ExpectSame(s, Round(sf), "spikes");
                    ExpectSame(h, hf, "h (fp32)");
                    ExpectSame(v, vf, "v (fp32)");
                    const B16 ds = Rand(T * nf, 33);
                    B16 dx = Rand(T * nf, 34);
                    F32 gv = RandF(nf, 35), gvf = gv, dxf = Widen(dx);
                    remat_ref_neuron_backward_bf16(dx.data(), gv.data(), ds.data(), h.data(), (remat_layer_type)type,
                                                   &o, T, nf);
                    remat_ref_neuron_backward(dxf.data(), gvf.data(), Widen(ds).data(), hf.data(),
                                              (remat_layer_type)type, &o, T, nf);
                    ExpectSame(dx, Round(dxf), "neuron dx");
                    ExpectSame(gv, gvf, "neuron gv (fp32)");
                }
}

TEST(Bf16Storage, BatchNorm) {
    for (int64_t hw : {1, 9}) {
        const int64_t rows = 14, C = 11, n = rows * C * hw;
        const B16 x = Rand(n, 41, -2.0f, 3.0f);
        const F32 w = RandF(C, 42), b = RandF(C, 43);
        F32 m(C), r(C), mf(C), rf(C), rm = RandF(C, 44), rv = RandF(C, 45), rmf = rm, rvf = rv;
        B16 y((size_t)n);
        F32 yf((size_t)n);
        remat_ref_batchnorm_forward_bf16(y.data(), m.data(), r.data(), rm.data(), rv.data(), x.data(), w.data(),
                                         b.data(), rows, C, hw, 0.1f, 1e-5);
        remat_ref_batchnorm_forward(yf.data(), mf.data(), rf.data(), rmf.data(), rvf.data(), Widen(x).data(), w.data(),
                                    b.data(), rows, C, hw, 0.1f, 1e-5);
        ExpectSame(y, Round(yf), "bn out");
        ExpectSame(m, mf, "bn mean");
        ExpectSame(r, rf, "bn rstd");
        ExpectSame(rm, rmf, "bn running mean");
        ExpectSame(rv, rvf, "bn running var");
        const B16 dy = Rand(n, 46);
        B16 dx = Rand(n, 47);
        F32 dw = RandF(C, 48), db = RandF(C, 49), dwf = dw, dbf = db, dxf = Widen(dx);
        remat_ref_batchnorm_backward_bf16(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), m.data(),
                                          r.data(), rows, C, hw);
        remat_ref_batchnorm_backward(dxf.data(), dwf.data(), dbf.data(), Widen(dy).data(), Widen(x).data(), w.data(),
                                     mf.data(), rf.data(), rows, C, hw);
        ExpectSame(dx, Round(dxf), "bn dinp");
        ExpectSame(dw, dwf, "bn dweight");
        ExpectSame(db, dbf, "bn dbias");
    }
}

TEST(Bf16Storage, Pooling) {
    // Overlapping windows (k 3, s 2, padding 1: SEW-ResNet's stem pool), non-overlapping, and
    // binary inputs, where ties decide the max.
    const remat_conv_geom gs[] = {conv_geom(3, 9, 9, 3, 3, 2, 1), conv_geom(2, 8, 6, 2, 2, 2, 0), conv_geom(2, 7, 7, 2, 3, 1, 1)};
    for (const remat_conv_geom &g : gs)
        for (int binary = 0; binary < 2; binary++) {
            const int64_t rows = 4, ie = g.c_in * g.h_in * g.w_in, oe = g.c_in * g.h_out * g.w_out;
            const B16 x = binary ? Spikes(rows * ie, 51) : Rand(rows * ie, 51);
            for (int max = 0; max < 2; max++) {
                B16 y((size_t)(rows * oe));
                F32 yf((size_t)(rows * oe));
                if (max) {
                    remat_ref_maxpool2d_forward_bf16(y.data(), x.data(), rows, &g);
                    remat_ref_maxpool2d_forward(yf.data(), Widen(x).data(), rows, &g);
                } else {
                    remat_ref_avgpool2d_forward_bf16(y.data(), x.data(), rows, &g);
                    remat_ref_avgpool2d_forward(yf.data(), Widen(x).data(), rows, &g);
                }
                ExpectSame(y, Round(yf), max ? "maxpool forward" : "avgpool forward");
                const B16 dy = Rand(rows * oe, 52);
                B16 dx = Rand(rows * ie, 53);
                F32 dxf = Widen(dx);
                if (max) {
                    remat_ref_maxpool2d_backward_bf16(dx.data(), dy.data(), x.data(), rows, &g);
                    remat_ref_maxpool2d_backward(dxf.data(), Widen(dy).data(), Widen(x).data(), rows, &g);
                } else {
                    remat_ref_avgpool2d_backward_bf16(dx.data(), dy.data(), rows, &g);
                    remat_ref_avgpool2d_backward(dxf.data(), Widen(dy).data(), rows, &g);
                }
                ExpectSame(dx, Round(dxf), max ? "maxpool backward" : "avgpool backward");
            }
        }
}

TEST(Bf16Storage, DropoutAndAdd) {
    const int64_t T = 3, nf = 2051, n = T * nf;
    const B16 x = Rand(n, 61), a = Rand(n, 62), dy = Rand(n, 63);
    B16 y((size_t)n);
    F32 yf((size_t)n);
    remat_ref_dropout_forward_bf16(y.data(), x.data(), 5, 2, 3, 0.3f, T, nf);
    remat_ref_dropout_forward(yf.data(), Widen(x).data(), 5, 2, 3, 0.3f, T, nf);
    ExpectSame(y, Round(yf), "dropout forward");
    B16 dx = Rand(n, 64);
    F32 dxf = Widen(dx);
    remat_ref_dropout_backward_bf16(dx.data(), dy.data(), 5, 2, 3, 0.3f, T, nf);
    remat_ref_dropout_backward(dxf.data(), Widen(dy).data(), 5, 2, 3, 0.3f, T, nf);
    ExpectSame(dx, Round(dxf), "dropout backward");

    remat_ref_add_forward_bf16(y.data(), a.data(), x.data(), n);
    remat_ref_add_forward(yf.data(), Widen(a).data(), Widen(x).data(), n);
    ExpectSame(y, Round(yf), "add forward");
    B16 da = Rand(n, 65), db = Rand(n, 66);
    F32 daf = Widen(da), dbf = Widen(db);
    remat_ref_add_backward_bf16(da.data(), db.data(), dy.data(), n);
    remat_ref_add_backward(daf.data(), dbf.data(), Widen(dy).data(), n);
    ExpectSame(da, Round(daf), "add da");
    ExpectSame(db, Round(dbf), "add db");
    // Both operands one tensor: dout twice, in float, one rounding.
    B16 dd = Rand(n, 67);
    F32 ddf = Widen(dd);
    remat_ref_add_backward_bf16(dd.data(), dd.data(), dy.data(), n);
    remat_ref_add_backward(ddf.data(), ddf.data(), Widen(dy).data(), n);
    ExpectSame(dd, Round(ddf), "add, da == db");
}

TEST(Bf16Storage, LossesAndFills) {
    const int64_t T = 4, N = 7, K = 10;
    const B16 out = Spikes(T * N * K, 71, 0.4f);
    std::vector<int32_t> labels(N);
    for (int64_t i = 0; i < N; i++) labels[i] = (int32_t)(i * 3 % K);
    for (int type = 0; type < 2; type++) {
        F32 rate(N * K), ratef(N * K);
        const float L = remat_ref_loss_forward_bf16(rate.data(), out.data(), labels.data(), (remat_loss_type)type, T,
                                                    N, K);
        const float Lf =
            remat_ref_loss_forward(ratef.data(), Widen(out).data(), labels.data(), (remat_loss_type)type, T, N, K);
        EXPECT_EQ(remat_f32_bits(L), remat_f32_bits(Lf));
        ExpectSame(rate, ratef, "rate");
        B16 d = Rand(T * N * K, 72);
        F32 df = Widen(d);
        remat_ref_loss_backward_bf16(d.data(), rate.data(), labels.data(), (remat_loss_type)type, T, N, K);
        remat_ref_loss_backward(df.data(), ratef.data(), labels.data(), (remat_loss_type)type, T, N, K);
        ExpectSame(d, Round(df), "loss gradient");
    }
    B16 u(1001), s(1001);
    F32 uf(1001), sf(1001);
    remat_ref_fill_uniform_bf16(u.data(), 1001, -0.5f, 2.0f, 9, 1, 4);
    remat_ref_fill_uniform(uf.data(), 1001, -0.5f, 2.0f, 9, 1, 4);
    ExpectSame(u, Round(uf), "fill uniform");
    remat_ref_fill_bernoulli_bf16(s.data(), 1001, 0.3f, 9, 1, 4);
    remat_ref_fill_bernoulli(sf.data(), 1001, 0.3f, 9, 1, 4);
    ExpectSame(s, Round(sf), "fill bernoulli");
}

// The compressors on bf16 activations: the same compressed bytes as on the widened
// floats (bit packing is 16x of bf16 storage), a bf16 round trip, and the same refusals.
TEST(Bf16Storage, Compressors) {
    const int64_t n = 1237;
    const B16 s = Spikes(n, 81);
    const F32 sf = Widen(s);
    B16 ints((size_t)n);
    for (int64_t i = 0; i < n; i++) ints[i] = remat_f32_to_bf16((float)((i * 37) % 256));
    EXPECT_EQ(remat_count_nonzero_as(s.data(), REMAT_ENC_BF16, n), remat_count_nonzero(sf.data(), n));
    for (int c = REMAT_COMP_BOOL; c < REMAT_COMP_COUNT; c++) {
        const B16 &src = c == REMAT_COMP_UINT8 ? ints : s;
        const F32 srcf = Widen(src);
        const int64_t nnz = remat_count_nonzero(srcf.data(), n);
        const int64_t bytes = remat_compressed_bytes((remat_compressor)c, n, nnz);
        std::vector<uint8_t> a((size_t)bytes + 1), b((size_t)bytes + 1);
        remat_error e1{}, e2{};
        ASSERT_EQ(remat_compress_as((remat_compressor)c, a.data(), bytes, src.data(), REMAT_ENC_BF16, n, &e1), REMAT_OK)
            << e1.msg;
        ASSERT_EQ(remat_compress((remat_compressor)c, b.data(), bytes, srcf.data(), n, &e2), REMAT_OK) << e2.msg;
        EXPECT_EQ(std::memcmp(a.data(), b.data(), (size_t)bytes), 0) << remat_compressor_name((remat_compressor)c);
        B16 back((size_t)n, 0x7777);
        ASSERT_EQ(remat_decompress_as((remat_compressor)c, back.data(), REMAT_ENC_BF16, n, a.data(), bytes, &e1),
                  REMAT_OK)
            << e1.msg;
        ExpectSame(back, src, std::string("round trip ") + remat_compressor_name((remat_compressor)c));
    }
    // bit packing: 16x smaller than the bf16 tensor
    EXPECT_EQ(remat_compressed_bytes(REMAT_COMP_BIT, n, 0) * 16, (n + 7) / 8 * 16);
    EXPECT_LE(remat_encoding_bytes(REMAT_ENC_BF16, n, 0), 16 * remat_compressed_bytes(REMAT_COMP_BIT, n, 0));
    // refusals: -0.0, 0.5, NaN, 256 are not spikes / not uint8, with the fp32 message
    const float bad[] = {-0.0f, 0.5f, NAN, 256.0f};
    for (float v : bad)
        for (int c = REMAT_COMP_BOOL; c < REMAT_COMP_COUNT; c++) {
            B16 x = c == REMAT_COMP_UINT8 ? ints : s;
            x[600] = remat_f32_to_bf16(v);
            const F32 xf = Widen(x);
            const int64_t bytes = remat_compressed_bytes((remat_compressor)c, n, remat_count_nonzero(xf.data(), n));
            std::vector<uint8_t> o((size_t)bytes + 1);
            remat_error e1{}, e2{};
            EXPECT_EQ(remat_compress_as((remat_compressor)c, o.data(), bytes, x.data(), REMAT_ENC_BF16, n, &e1),
                      REMAT_ERR_INPUT);
            EXPECT_EQ(remat_compress((remat_compressor)c, o.data(), bytes, xf.data(), n, &e2), REMAT_ERR_INPUT);
            EXPECT_STREQ(e1.msg, e2.msg);
        }
}

}  // namespace
