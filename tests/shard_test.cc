// shard_test.cc - the fixed-order reduction over blocks of samples
// (docs/determinism.md, "Data parallelism"), with R ranks simulated by R threads of
// one process over the thread transport (core/exec/reduce.h):
//  - one block is the single-process step, bit for bit (the shipped order unchanged);
//  - with 8 blocks, 1, 2, 4 and 8 ranks give the same loss, gradients, batch-norm
//    running statistics, input gradient and updated parameters after two steps, on
//    the tiny dense, batch-norm + dropout, conv (VGG) and SEW models, fp32 and bf16,
//    and under a checkpoint plan with time chunks on the ranks;
//  - a world size that does not divide the blocks is refused.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/exec/backend.h"
#include "core/exec/executor.h"
#include "core/exec/reduce.h"
#include "core/model/layers.h"
#include "tests/testutil.h"

namespace {

using remat_test::Model;

struct RankOut {
    std::vector<uint32_t> losses;                // per step
    std::vector<std::vector<uint32_t>> params;   // every parameter (running statistics too) after the steps
    std::vector<std::vector<uint32_t>> grads;    // trainable parameters' gradients of the last step
    std::vector<uint32_t> input_grad;            // [T, n, C] of this rank's samples
    std::string error;
};

std::vector<uint32_t> Bits(const std::vector<float> &v) {
    std::vector<uint32_t> b(v.size());
    if (!v.empty()) std::memcpy(b.data(), v.data(), v.size() * 4);
    return b;
}

// The reference backend without its blocked kernels: the executor then runs them over
// host copies, as on the CUDA backend (core/exec/shard_steps.c).
bool g_host_copies = false;

void DropShardKernels(remat_backend *be) {
    static thread_local remat_backend_ops ops;
    ops = *be->ops;
#define NULL_ENTRY(ret, name, params, args) ops.name = nullptr;
    REMAT_SHARD_KERNELS(NULL_ENTRY, float, )
    REMAT_SHARD_KERNELS(NULL_ENTRY, uint16_t, _bf16)
#undef NULL_ENTRY
    be->ops = &ops;
}

// `steps` training steps (optimiser on) of m (its N this rank's share) under plan path
// (empty: none), with shard sh (NULL: the plain single-process step).
RankOut RunRank(const remat_model &m, const std::string &plan_path, const remat_shard *sh, int steps) {
    RankOut out;
    remat_error err{};
    remat_plan p{};
    remat_status st = plan_path.empty() ? remat_plan_init_empty(&m, &p, &err)
                                        : remat_plan_load(plan_path.c_str(), &m, &p, &err);
    if (st != REMAT_OK) {
        out.error = err.msg;
        return out;
    }
    remat_backend be{};
    remat_backend_ref_init(&be, 1, &err);
    const remat_backend_ops *own = be.ops;
    if (g_host_copies) DropShardKernels(&be);
    remat_exec_opts o = remat_exec_opts_default();
    o.seed = 7;
    o.shard = sh;
    remat_session *s = remat_session_init(&m, &p, &be, &o, &err);
    for (int i = 0; s && i < steps; i++) {
        remat_step_result r{};
        if (remat_session_step(s, 1, &r, &err) != REMAT_OK) break;
        float l = (float)r.loss;
        uint32_t u;
        std::memcpy(&u, &l, 4);
        out.losses.push_back(u);
    }
    if (!s || (int)out.losses.size() != steps) out.error = err.msg[0] ? err.msg : "session failed";
    for (int j = 0; out.error.empty() && j < m.n_layers; j++) {
        const remat_layer *l = &m.layers[j];
        for (int i = 0; i < remat_layer_n_params(l); i++) {
            std::vector<float> v((size_t)remat_layer_param_elems(l, i));
            remat_session_get_param(s, j, i, v.data(), &err);
            out.params.push_back(Bits(v));
            if (!remat_layer_param_trainable(l, i)) continue;
            remat_session_get_grad(s, j, i, v.data(), &err);
            out.grads.push_back(Bits(v));
        }
    }
    if (out.error.empty()) {
        std::vector<float> g((size_t)(m.T * m.N * m.in_features));
        if (remat_session_get_input_grad(s, g.data(), &err) != REMAT_OK) out.error = err.msg;
        out.input_grad = Bits(g);
    }
    remat_session_free(s);
    be.ops = own;
    remat_backend_free(&be);
    remat_plan_free(&p);
    return out;
}

// The global [T, N, C] input gradient from the ranks' [T, N/R, C] pieces.
std::vector<uint32_t> Gather(const std::vector<RankOut> &ranks, int64_t T, int64_t N, int64_t C) {
    const int64_t R = (int64_t)ranks.size(), n = N / R;
    std::vector<uint32_t> all((size_t)(T * N * C));
    for (int64_t r = 0; r < R; r++)
        for (int64_t t = 0; t < T; t++)
            std::memcpy(&all[(size_t)((t * N + r * n) * C)], &ranks[r].input_grad[(size_t)(t * n * C)],
                        (size_t)(n * C) * 4);
    return all;
}

// R ranks of model `file` (batch N) with `blocks` blocks, as R threads.
std::vector<RankOut> RunWorld(const remat_model &file, int64_t N, int blocks, int R, const std::string &plan,
                              int steps) {
    remat_error err{};
    std::vector<remat_model> models(R);
    for (int r = 0; r < R; r++) EXPECT_EQ(remat_model_rescale(&file, 0, N / R, &models[r], &err), REMAT_OK) << err.msg;
    remat_comm_threads *tc = remat_comm_threads_new(R, &err);
    std::vector<remat_comm> comms(R);
    std::vector<remat_shard> shards(R);
    for (int r = 0; r < R; r++) {
        comms[r] = remat_comm_threads_get(tc, r);
        shards[r] = remat_shard{blocks, R, r, N, &comms[r]};
    }
    std::vector<RankOut> outs(R);
    std::vector<std::thread> th;
    for (int r = 0; r < R; r++)
        th.emplace_back([&, r] { outs[r] = RunRank(models[r], plan, &shards[r], steps); });
    for (auto &t : th) t.join();
    remat_comm_threads_free(tc);
    for (auto &m : models) remat_model_free(&m);
    return outs;
}

void ExpectSameStep(const RankOut &ref, const RankOut &got, const std::string &what) {
    ASSERT_EQ(got.error, "") << what;
    ASSERT_EQ(ref.error, "") << what;
    EXPECT_EQ(ref.losses, got.losses) << what << ": loss";
    ASSERT_EQ(ref.params.size(), got.params.size());
    for (size_t i = 0; i < ref.params.size(); i++)
        EXPECT_EQ(remat_test::first_difference(ref.params[i], got.params[i]), -1) << what << ": parameter " << i;
    ASSERT_EQ(ref.grads.size(), got.grads.size());
    for (size_t i = 0; i < ref.grads.size(); i++)
        EXPECT_EQ(remat_test::first_difference(ref.grads[i], got.grads[i]), -1) << what << ": gradient " << i;
}

struct Case {
    const char *model;
    const char *plan;  // a checkpoint plan the ranks run (the reference runs none), or ""
};

const Case kCases[] = {
    {"tiny-mlp-lif", "data/plans/tiny-mlp-lif-ckpt.json"},
    {"tiny-resnet-bn", "data/plans/tiny-resnet-bn-ckpt.json"},
    {"tiny-vgg-dvs", ""},
    {"tiny-sew-resnet", ""},
    {"tiny-plif", "data/plans/tiny-plif-ckpt.json"},  // w's gradient: per-block partials, combined
};

class Shard : public ::testing::TestWithParam<remat_precision> {};

TEST_P(Shard, OneBlockIsTheSingleProcessStep) {
    for (const Case &c : kCases) {
        Model file(c.model, GetParam());
        const int64_t N = 4;
        remat_model m{};
        remat_error err{};
        ASSERT_EQ(remat_model_rescale(&file.m, 0, N, &m, &err), REMAT_OK);
        RankOut plain = RunRank(m, "", nullptr, 2);
        remat_shard one = remat_shard_one(1, N);
        RankOut blocked = RunRank(m, "", &one, 2);
        ExpectSameStep(plain, blocked, std::string(c.model) + " one block");
        EXPECT_EQ(plain.input_grad, blocked.input_grad) << c.model;
        remat_model_free(&m);
    }
}

TEST_P(Shard, EveryWorldSizeGivesTheSameBits) {
    const int64_t N = 8;
    const int B = 8;
    for (const Case &c : kCases) {
        Model file(c.model, GetParam());
        std::vector<RankOut> ref = RunWorld(file.m, N, B, 1, "", 2);
        ASSERT_EQ(ref[0].error, "") << c.model;
        for (int R : {2, 4, 8}) {
            std::vector<RankOut> w = RunWorld(file.m, N, B, R, c.plan, 2);
            for (int r = 0; r < R; r++)
                ExpectSameStep(ref[0], w[r], std::string(c.model) + " R=" + std::to_string(R) + " rank " +
                                                 std::to_string(r));
            if (!w[0].error.empty()) continue;
            int64_t T = file.m.T, C = file.m.in_features;
            EXPECT_EQ(remat_test::first_difference(ref[0].input_grad, Gather(w, T, N, C)), -1)
                << c.model << " R=" << R << ": input gradient";
        }
    }
}

// Without the backend's blocked kernels (the CUDA backend's case) the executor runs the
// reference kernels over host copies and combines host copies: the same bits, 1 and 2 ranks.
TEST_P(Shard, HostCopiesGiveTheSameBits) {
    const int64_t N = 8;
    for (const Case &c : kCases) {
        Model file(c.model, GetParam());
        std::vector<RankOut> ref = RunWorld(file.m, N, 8, 1, "", 2);
        g_host_copies = true;
        std::vector<RankOut> one = RunWorld(file.m, N, 8, 1, "", 2);
        std::vector<RankOut> two = RunWorld(file.m, N, 8, 2, c.plan, 2);
        g_host_copies = false;
        ExpectSameStep(ref[0], one[0], std::string(c.model) + " host copies, 1 rank");
        for (int r = 0; r < 2; r++) ExpectSameStep(ref[0], two[r], std::string(c.model) + " host copies, 2 ranks");
    }
}

INSTANTIATE_TEST_SUITE_P(Precision, Shard, ::testing::Values(REMAT_PRECISION_FP32, REMAT_PRECISION_BF16),
                         [](const auto &i) { return std::string(remat_precision_name(i.param)); });

TEST(ShardCheck, RefusesWorldSizesThatDoNotDivideTheBlocks) {
    remat_error err{};
    remat_shard s{8, 3, 0, 24, nullptr};
    EXPECT_EQ(remat_shard_check(&s, "run", &err), REMAT_ERR_INPUT);
    EXPECT_NE(std::string(err.msg).find("--reduce-blocks"), std::string::npos) << err.msg;
    remat_shard t{8, 2, 0, 12, nullptr};
    EXPECT_EQ(remat_shard_check(&t, "run", &err), REMAT_ERR_INPUT);  // 8 does not divide 12
    remat_shard u{8, 4, 3, 16, nullptr};
    EXPECT_EQ(remat_shard_check(&u, "run", &err), REMAT_OK);
    EXPECT_EQ(remat_shard_local_n(&u), 4);
    EXPECT_EQ(remat_shard_first_sample(&u), 12);
}

// The combination is a left fold over blocks in ascending order, whoever holds them.
TEST(ShardFold, LeftFoldOverBlocksWhateverTheWorld) {
    // 1 + 1e8 - 1e8 + ...: a fold whose value depends on the association
    const float blocks[4] = {1e8f, 1.0f, -1e8f, 1.0f};
    float want = ((blocks[0] + blocks[1]) + blocks[2]) + blocks[3];
    for (int R : {1, 2, 4}) {
        remat_error err{};
        remat_comm_threads *tc = remat_comm_threads_new(R, &err);
        std::vector<float> got(R);
        std::vector<std::thread> th;
        for (int r = 0; r < R; r++)
            th.emplace_back([&, r] {
                remat_comm c = remat_comm_threads_get(tc, r);
                remat_shard s{4, R, r, 4, &c};
                std::vector<float> local(blocks + r * (4 / R), blocks + (r + 1) * (4 / R)), recv(4 / R);
                remat_error e{};
                remat_reduce_fold_f32(&s, &got[r], local.data(), recv.data(), 1, &e);
            });
        for (auto &t : th) t.join();
        remat_comm_threads_free(tc);
        for (int r = 0; r < R; r++) EXPECT_EQ(got[r], want) << "R=" << R << " rank " << r;
    }
}

// The same left fold over many elements (chunked inside the fold): every element the
// blocks' values added in ascending block order, whoever holds them, f32 and f64.
TEST(ShardFold, LeftFoldOfEveryElementAcrossChunks) {
    const int B = 4;
    const int64_t n = 1300;  // more than two of the fold's chunks, the last one short
    std::vector<float> blocks(B * n);
    std::vector<double> blocks64(B * n);
    for (int64_t i = 0; i < B * n; i++) {
        blocks[i] = (i % 3 == 0 ? 1e8f : 1.0f) * (float)((i * 7919) % 13 - 6);
        blocks64[i] = (double)blocks[i] * 1e9;
    }
    std::vector<float> want(n);
    std::vector<double> want64(n);
    for (int64_t i = 0; i < n; i++) {
        want[i] = blocks[i];
        want64[i] = blocks64[i];
        for (int b = 1; b < B; b++) {
            want[i] = want[i] + blocks[b * n + i];
            want64[i] = want64[i] + blocks64[b * n + i];
        }
    }
    for (int R : {1, 2, 4}) {
        remat_error err{};
        remat_comm_threads *tc = remat_comm_threads_new(R, &err);
        std::vector<std::vector<float>> got(R, std::vector<float>(n));
        std::vector<std::vector<double>> got64(R, std::vector<double>(n));
        std::vector<std::thread> th;
        for (int r = 0; r < R; r++)
            th.emplace_back([&, r] {
                remat_comm c = remat_comm_threads_get(tc, r);
                remat_shard s{B, R, r, B, &c};
                const int L = B / R;
                std::vector<float> local(blocks.begin() + r * L * n, blocks.begin() + (r + 1) * L * n), recv(L * n);
                std::vector<double> local64(blocks64.begin() + r * L * n, blocks64.begin() + (r + 1) * L * n),
                    recv64(L * n);
                remat_error e{};
                remat_reduce_fold_f32(&s, got[r].data(), local.data(), recv.data(), n, &e);
                remat_reduce_fold_f64(&s, got64[r].data(), local64.data(), recv64.data(), n, &e);
            });
        for (auto &t : th) t.join();
        remat_comm_threads_free(tc);
        for (int r = 0; r < R; r++) {
            EXPECT_EQ(Bits(got[r]), Bits(want)) << "R=" << R << " rank " << r;
            EXPECT_EQ(0, std::memcmp(got64[r].data(), want64.data(), (size_t)n * 8)) << "R=" << R << " rank " << r;
        }
    }
}

}  // namespace
