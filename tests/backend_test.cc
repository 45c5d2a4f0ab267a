// backend_test.cc - the reference and dry backend tables: memory, clock, and that the
// kernel entries are the ref_kernels.h functions (same bits) or do nothing (dry).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/exec/backend.h"
#include "core/codec/compress.h"
#include "core/ref/ref_kernels.h"
#include "core/base/rng.h"

namespace {

std::vector<float> Rand(size_t n, uint64_t key) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++) v[i] = remat_rng_uniform(5, 6, key, i) * 2.0f - 1.0f;
    return v;
}

// Every entry of the table is set (a NULL would crash the executor).
void ExpectComplete(const remat_backend_ops* o) {
    const void* entries[] = {
        (const void*)o->segment_alloc,   (const void*)o->segment_free,       (const void*)o->mem_info,
        (const void*)o->zero,            (const void*)o->copy,               (const void*)o->to_host,
        (const void*)o->from_host,       (const void*)o->now,                (const void*)o->destroy,
        (const void*)o->linear_forward,  (const void*)o->linear_backward,    (const void*)o->neuron_forward,
        (const void*)o->neuron_backward, (const void*)o->batchnorm_forward,  (const void*)o->batchnorm_backward,
        (const void*)o->dropout_mask,    (const void*)o->dropout_forward,    (const void*)o->dropout_backward,
        (const void*)o->add_forward,     (const void*)o->add_backward,       (const void*)o->loss_forward,
        (const void*)o->loss_backward,   (const void*)o->sgd_update,         (const void*)o->adam_update,
        (const void*)o->fill_uniform,    (const void*)o->fill_bernoulli,     (const void*)o->fill_labels,
        (const void*)o->count_nonzero,   (const void*)o->compress,           (const void*)o->decompress,
    };
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) EXPECT_NE(entries[i], nullptr) << "entry " << i;
}

TEST(RefBackend, MemoryClockAndKernels) {
    remat_backend b;
    remat_error err = {};
    const size_t live0 = remat_xmem_live();
    ASSERT_EQ(REMAT_OK, remat_backend_ref_init(&b, 2, &err)) << err.msg;
    EXPECT_STREQ(b.ops->name, "ref");
    EXPECT_EQ(b.ops->has_data, 1);
    EXPECT_EQ(remat_ref_get_threads(), 2);
    ExpectComplete(b.ops);

    int64_t fr = 0, tot = 0;
    b.ops->mem_info(b.ctx, &fr, &tot);
    EXPECT_EQ(fr, -1);
    EXPECT_EQ(tot, -1);

    // Segments: 64-byte aligned, usable, accounted through remat_xmalloc and returned.
    std::vector<void*> segs;
    for (int64_t bytes : {1, 63, 64, 1000, 1 << 20}) {
        void* p = nullptr;
        ASSERT_EQ(REMAT_OK, b.ops->segment_alloc(b.ctx, bytes, &p, &err)) << err.msg;
        ASSERT_NE(p, nullptr);
        EXPECT_EQ((uintptr_t)p % 64, 0u) << bytes;
        std::memset(p, 0x5a, bytes);
        segs.push_back(p);
    }
    EXPECT_GT(remat_xmem_live(), live0 + (1 << 20));
    void* dummy = &err;
    EXPECT_NE(REMAT_OK, b.ops->segment_alloc(b.ctx, -1, &dummy, &err));
    EXPECT_EQ(dummy, nullptr);
    for (void* p : segs) b.ops->segment_free(b.ctx, p);
    b.ops->segment_free(b.ctx, nullptr);

    // Copies and zeroing.
    float src[4] = {1, 2, 3, 4}, dst[4] = {0, 0, 0, 0};
    b.ops->from_host(b.ctx, dst, src, sizeof src);
    EXPECT_EQ(0, std::memcmp(src, dst, sizeof src));
    b.ops->zero(b.ctx, dst, sizeof dst);
    for (float f : dst) EXPECT_EQ(f, 0.0f);

    // Monotonic seconds.
    const double t0 = b.ops->now(b.ctx);
    volatile double spin = 0;
    for (int i = 0; i < 1000000; i++) spin = spin + i;
    const double t1 = b.ops->now(b.ctx);
    EXPECT_GT(t1, t0);
    EXPECT_LT(t1 - t0, 10.0);

    // Kernels through the table give the bits of the direct calls.
    const int64_t rows = 12, in = 9, out = 5;
    auto x = Rand(rows * in, 1), w = Rand(out * in, 2), bias = Rand(out, 3);
    std::vector<float> y1(rows * out), y2(rows * out);
    b.ops->linear_forward(b.ctx, y1.data(), x.data(), w.data(), bias.data(), rows, in, out);
    remat_ref_linear_forward(y2.data(), x.data(), w.data(), bias.data(), rows, in, out);
    EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * 4));
    remat_neuron_opts o = {1.0f, 0.0f, 0, 0, REMAT_SURROGATE_SIGMOID, 4.0f, 2.0f, 1};
    std::vector<float> s1(rows * in), s2(rows * in), v1(in, 0.0f), v2(in, 0.0f);
    b.ops->neuron_forward(b.ctx, s1.data(), nullptr, v1.data(), x.data(), REMAT_LAYER_LIF, &o, rows, in);
    remat_ref_neuron_forward(s2.data(), nullptr, v2.data(), x.data(), REMAT_LAYER_LIF, &o, rows, in);
    EXPECT_EQ(s1, s2);
    EXPECT_EQ(v1, v2);
    int32_t labels[4] = {0, 1, 2, 3};
    std::vector<float> rate(4 * out);
    const float l1 = b.ops->loss_forward(b.ctx, rate.data(), y1.data(), labels, REMAT_LOSS_RATE_CE, 3, 4, out);
    const float l2 = remat_ref_loss_forward(rate.data(), y1.data(), labels, REMAT_LOSS_RATE_CE, 3, 4, out);
    EXPECT_EQ(l1, l2);
    EXPECT_GT(l1, 0.0f);

    // Compressors and the non-zero count.
    EXPECT_EQ(b.ops->count_nonzero(b.ctx, s1.data(), REMAT_ENC_F32, (int64_t)s1.size()),
              remat_count_nonzero(s1.data(), (int64_t)s1.size()));
    std::vector<uint8_t> packed((s1.size() + 7) / 8);
    ASSERT_EQ(REMAT_OK, b.ops->compress(b.ctx, REMAT_COMP_BIT, packed.data(), (int64_t)packed.size(), s1.data(),
                                        REMAT_ENC_F32, (int64_t)s1.size(), &err))
        << err.msg;
    std::vector<float> back(s1.size());
    ASSERT_EQ(REMAT_OK, b.ops->decompress(b.ctx, REMAT_COMP_BIT, back.data(), REMAT_ENC_F32, (int64_t)back.size(),
                                          packed.data(), (int64_t)packed.size(), &err))
        << err.msg;
    EXPECT_EQ(back, s1);
    remat_error e2 = {};
    EXPECT_EQ(REMAT_ERR_INPUT, b.ops->compress(b.ctx, REMAT_COMP_BIT, packed.data(), (int64_t)packed.size(),
                                               x.data(), REMAT_ENC_F32, (int64_t)s1.size(), &e2));
    EXPECT_NE(std::string(e2.msg).find("element 0 is"), std::string::npos) << e2.msg;

    remat_backend_free(&b);
    EXPECT_EQ(b.ops, nullptr);
    EXPECT_EQ(b.ctx, nullptr);
    EXPECT_EQ(remat_xmem_live(), live0) << "segments and context all returned";
    remat_ref_set_threads(1);
}

TEST(DryBackend, NoMemoryNoDataNoTime) {
    remat_backend b;
    remat_error err = {};
    ASSERT_EQ(REMAT_OK, remat_backend_dry_init(&b, &err));
    EXPECT_STREQ(b.ops->name, "dry");
    EXPECT_EQ(b.ops->has_data, 0);
    ExpectComplete(b.ops);
    void* p = &err;
    ASSERT_EQ(REMAT_OK, b.ops->segment_alloc(b.ctx, 1 << 30, &p, &err));
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(b.ops->now(b.ctx), 0.0);
    int64_t fr = 0, tot = 0;
    b.ops->mem_info(b.ctx, &fr, &tot);
    EXPECT_EQ(fr, -1);
    EXPECT_EQ(tot, -1);
    // Kernels leave their outputs alone.
    std::vector<float> y(6, 3.0f), x(6, 1.0f), w(4, 1.0f);
    b.ops->linear_forward(b.ctx, y.data(), x.data(), w.data(), nullptr, 3, 2, 2);
    for (float f : y) EXPECT_EQ(f, 3.0f);
    int32_t labels[2] = {0, 1};
    std::vector<float> rate(4, 9.0f);
    EXPECT_EQ(b.ops->loss_forward(b.ctx, rate.data(), y.data(), labels, REMAT_LOSS_RATE_MSE, 1, 2, 2), 0.0f);
    EXPECT_EQ(rate[0], 9.0f);
    EXPECT_EQ(b.ops->count_nonzero(b.ctx, y.data(), REMAT_ENC_F32, 6), -1);
    uint8_t buf[1] = {0x77};
    EXPECT_EQ(REMAT_OK, b.ops->compress(b.ctx, REMAT_COMP_BIT, buf, 1, y.data(), REMAT_ENC_F32, 6, &err));
    EXPECT_EQ(buf[0], 0x77);
    EXPECT_EQ(REMAT_OK, b.ops->decompress(b.ctx, REMAT_COMP_BIT, y.data(), REMAT_ENC_F32, 6, buf, 1, &err));
    EXPECT_EQ(y[0], 3.0f);
    remat_backend_free(&b);
    EXPECT_EQ(b.ops, nullptr);
}

}  // namespace

// The conv workspace convention: the reference packs conv panels from the input
// (no column matrix), the CUDA backend writes it; a simulation allocates what the
// recording's backend allocated.
TEST(DryBackend, ConvWorkspacesFollowTheRecordedBackend) {
    remat_backend ref, dry, like_ref, like_cuda;
    remat_error err = {};
    ASSERT_EQ(REMAT_OK, remat_backend_ref_init(&ref, 1, &err));
    ASSERT_EQ(REMAT_OK, remat_backend_dry_init(&dry, &err));
    ASSERT_EQ(REMAT_OK, remat_backend_dry_init_like(&like_ref, "ref", &err));
    ASSERT_EQ(REMAT_OK, remat_backend_dry_init_like(&like_cuda, "cuda", &err));
    EXPECT_EQ(ref.ops->conv_im2col, 0);
    EXPECT_EQ(dry.ops->conv_im2col, 0);
    EXPECT_EQ(like_ref.ops->conv_im2col, 0);
    EXPECT_EQ(like_cuda.ops->conv_im2col, 1);
    ExpectComplete(like_cuda.ops);
    remat_backend_free(&ref);
    remat_backend_free(&dry);
    remat_backend_free(&like_ref);
    remat_backend_free(&like_cuda);
}
