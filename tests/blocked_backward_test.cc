// blocked_backward_test.cc - the reference backend's layer backwards over a batch cut
// into blocks of samples (data parallelism, docs/determinism.md): one weight and bias
// accumulator per block, defined as the one-block kernel called per (time step
// descending, block). remat_ref_linear_backward_blocks and
// remat_ref_conv2d_backward_blocks must give exactly the bits of that loop - weight and
// bias accumulators (starting from non-zero values) and the input gradient - whatever
// the shapes (the linear kernel's bands of rows cut at odd places: out_f not a multiple
// of a tile, in so wide that a band is one tile), the thread count (1, 2, 3) and the
// storage type (fp32, bf16).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/base/bf16.h"
#include "core/base/rng.h"
#include "core/ref/ref_kernels.h"
#include "tests/testutil.h"

namespace {

std::vector<float> Rand(size_t n, uint64_t key) { return remat_test::rand_floats(n, 77, 9, key); }

std::vector<uint16_t> To16(const std::vector<float> &v) {
    std::vector<uint16_t> o(v.size());
    for (size_t i = 0; i < v.size(); i++) o[i] = remat_f32_to_bf16(v[i]);
    return o;
}

std::vector<uint32_t> Bits(const std::vector<float> &v) {
    std::vector<uint32_t> b(v.size());
    if (!v.empty()) std::memcpy(b.data(), v.data(), v.size() * 4);
    return b;
}

// One layer's operands in both storage types; dinp, dweight and dbias start non-zero.
struct Operands {
    std::vector<float> x, w, g, dx, dw, db;
    std::vector<uint16_t> x16, w16, g16, dx16;
    Operands(int64_t x_n, int64_t w_n, int64_t g_n, int64_t nblk, int64_t bias_n)
        : x(Rand(x_n, 50)), w(Rand(w_n, 51)), g(Rand(g_n, 52)), dx(Rand(x_n, 53)), dw(Rand(nblk * w_n, 54)),
          db(Rand(nblk * bias_n, 55)), x16(To16(x)), w16(To16(w)), g16(To16(g)), dx16(To16(dx)) {}
};

void ExpectSame(const Operands &want, const Operands &got, int b16, const std::string &what) {
    EXPECT_EQ(Bits(want.dw), Bits(got.dw)) << what << ": dweight";
    EXPECT_EQ(Bits(want.db), Bits(got.db)) << what << ": dbias";
    if (b16) EXPECT_EQ(want.dx16, got.dx16) << what << ": dinp";
    else EXPECT_EQ(Bits(want.dx), Bits(got.dx)) << what << ": dinp";
}

TEST(BlockedBackward, LinearIsThePerBlockLoop) {
    struct BlockShape {
        int64_t T, N, nblk, in, out;
    };
    const BlockShape shapes[] = {{3, 8, 4, 37, 19}, {2, 6, 3, 300, 10}, {2, 4, 2, 20000, 29}, {1, 5, 5, 9, 130},
                                 {2, 32, 2, 64, 512}};
    for (const BlockShape &sh : shapes)
        for (int b16 = 0; b16 < 2; b16++)
            for (int threads : {1, 2, 3}) {
                const int64_t T = sh.T, N = sh.N, nb = sh.nblk, in = sh.in, out = sh.out, bs = N / nb;
                const Operands ops(T * N * in, out * in, T * N * out, nb, out);
                std::vector<float> scratch(remat_ref_linear_scratch_elems(in, out));
                Operands loop = ops, one = ops;
                remat_ref_set_threads(1);
                for (int64_t t = T - 1; t >= 0; t--)
                    for (int64_t b = 0; b < nb; b++) {
                        const int64_t r0 = t * N + b * bs;
                        float *dw = loop.dw.data() + b * out * in, *db = loop.db.data() + b * out;
                        if (b16)
                            remat_ref_linear_backward_bf16(loop.dx16.data() + r0 * in, dw, db, ops.g16.data() + r0 * out,
                                                           ops.x16.data() + r0 * in, ops.w16.data(), scratch.data(), 1,
                                                           bs, in, out);
                        else
                            remat_ref_linear_backward(loop.dx.data() + r0 * in, dw, db, ops.g.data() + r0 * out,
                                                      ops.x.data() + r0 * in, ops.w.data(), scratch.data(), 1, bs, in,
                                                      out);
                    }
                remat_ref_set_threads(threads);
                std::fill(scratch.begin(), scratch.end(), 123.0f);  // scratch only: nothing read from it
                if (b16)
                    remat_ref_linear_backward_blocks_bf16(one.dx16.data(), one.dw.data(), one.db.data(), ops.g16.data(),
                                                          ops.x16.data(), ops.w16.data(), scratch.data(), T, N, nb, in,
                                                          out);
                else
                    remat_ref_linear_backward_blocks(one.dx.data(), one.dw.data(), one.db.data(), ops.g.data(),
                                                     ops.x.data(), ops.w.data(), scratch.data(), T, N, nb, in, out);
                remat_ref_set_threads(1);
                ExpectSame(loop, one, b16,
                           "linear T=" + std::to_string(T) + " N=" + std::to_string(N) + " blocks=" +
                               std::to_string(nb) + " in=" + std::to_string(in) + " out=" + std::to_string(out) +
                               (b16 ? " bf16" : " fp32") + " threads=" + std::to_string(threads));
            }
}

TEST(BlockedBackward, Conv2dIsThePerBlockLoop) {
    struct ConvCase {
        int64_t T, N, nblk;
        remat_conv_geom g;
    };
    const ConvCase cases[] = {{2, 4, 4, remat_test::conv_geom(3, 8, 8, 5, 3, 1, 1)},
                              {3, 6, 2, remat_test::conv_geom(4, 7, 5, 6, 3, 2, 2, 1, 1, 0)},
                              {1, 8, 2, remat_test::conv_geom(16, 4, 4, 12, 3, 1, 1)}};
    for (const ConvCase &c : cases)
        for (int b16 = 0; b16 < 2; b16++)
            for (int threads : {1, 2}) {
                const remat_conv_geom &g = c.g;
                const int64_t T = c.T, N = c.N, nb = c.nblk, bs = N / nb;
                const int64_t in_e = g.c_in * g.h_in * g.w_in, out_e = g.c_out * g.h_out * g.w_out;
                const int64_t wn = g.c_out * g.c_in * g.kh * g.kw;
                const Operands ops(T * N * in_e, wn, T * N * out_e, nb, g.c_out);
                std::vector<float> ws(remat_ref_conv2d_backward_ws_elems(&g));
                Operands loop = ops, one = ops;
                remat_ref_set_threads(1);
                for (int64_t t = T - 1; t >= 0; t--)
                    for (int64_t b = 0; b < nb; b++) {
                        const int64_t r0 = t * N + b * bs;
                        float *dw = loop.dw.data() + b * wn, *db = loop.db.data() + b * g.c_out;
                        if (b16)
                            remat_ref_conv2d_backward_bf16(loop.dx16.data() + r0 * in_e, dw, db,
                                                           ops.g16.data() + r0 * out_e, ops.x16.data() + r0 * in_e,
                                                           ops.w16.data(), ws.data(), 1, bs, &g);
                        else
                            remat_ref_conv2d_backward(loop.dx.data() + r0 * in_e, dw, db, ops.g.data() + r0 * out_e,
                                                      ops.x.data() + r0 * in_e, ops.w.data(), ws.data(), 1, bs, &g);
                    }
                remat_ref_set_threads(threads);
                if (b16)
                    remat_ref_conv2d_backward_blocks_bf16(one.dx16.data(), one.dw.data(), one.db.data(), ops.g16.data(),
                                                          ops.x16.data(), ops.w16.data(), ws.data(), T, N, nb, &g);
                else
                    remat_ref_conv2d_backward_blocks(one.dx.data(), one.dw.data(), one.db.data(), ops.g.data(),
                                                     ops.x.data(), ops.w.data(), ws.data(), T, N, nb, &g);
                remat_ref_set_threads(1);
                ExpectSame(loop, one, b16,
                           "conv T=" + std::to_string(T) + " N=" + std::to_string(N) + " blocks=" + std::to_string(nb) +
                               " c_in=" + std::to_string(g.c_in) + (b16 ? " bf16" : " fp32") +
                               " threads=" + std::to_string(threads));
            }
}

}  // namespace
