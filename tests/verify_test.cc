// verify_test.cc - the verifier must catch real mistakes and pass correct plans.
//
// Bit-level comparison (-0.0, NaN payloads, multi-indices), the expectation of
// recomputation computed from plan and model, every shipped tiny plan verified on
// the reference backend, each deliberate contract break of the executor
// (remat_exec_opts.fault) on a plan where it matters (and on one where it cannot),
// a no-op plan reported as saving nothing, backends whose compression is lossy or
// off-format, and the compressor checks passing on compress.c and failing on
// deliberately broken codecs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/exec/backend.h"
#include "core/codec/compress.h"
#include "core/exec/dump.h"
#include "core/io/dump_read.h"
#include "core/exec/executor.h"
#include "core/model/model.h"
#include "core/model/plan.h"
#include "tests/testutil.h"
#include "verify/check_backend.h"
#include "verify/compare.h"
#include "verify/compress_check.h"
#include "verify/dump_compare.h"
#include "verify/expect.h"
#include "verify/grid.h"
#include "verify/plan_check.h"
#include "verify/report.h"
#include "verify/tensor_set.h"

namespace {

uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

struct Set {
    remat_verify_set s{};
    ~Set() { remat_verify_set_free(&s); }
    remat_verify_tensor *add(const char *name, std::vector<int64_t> shape, const std::vector<uint32_t> &data) {
        remat_error err{};
        remat_verify_tensor *t =
            remat_verify_set_add(&s, name, REMAT_VERIFY_F32, (int)shape.size(), shape.data(), data.data(), &err);
        EXPECT_NE(t, nullptr) << err.msg;
        return t;
    }
};

struct Cmp {
    remat_verify_cmp c{};
    Cmp(const Set &a, const Set &b) {
        remat_error err{};
        EXPECT_EQ(remat_verify_compare(&a.s, &b.s, &c, &err), REMAT_OK) << err.msg;
    }
    ~Cmp() { remat_verify_cmp_free(&c); }
    const remat_verify_diff *find(const char *name) const {
        for (int i = 0; i < c.n; i++)
            if (!std::strcmp(c.d[i].name, name)) return &c.d[i];
        return nullptr;
    }
};

// ---- bit-level comparison ----------------------------------------------------

TEST(VerifyCompare, EqualPatternsAreSameIncludingNaN) {
    std::vector<uint32_t> v = {bits_of(1.5f), 0x7fc00001u, 0x80000000u, bits_of(-3.25f)};
    Set a, b;
    a.add("grads/x/weight", {2, 2}, v);
    b.add("grads/x/weight", {2, 2}, v);
    Cmp c(a, b);
    ASSERT_EQ(c.c.n, 1);
    EXPECT_EQ(c.c.n_different, 0);
    EXPECT_EQ(c.c.d[0].kind, REMAT_VERIFY_SAME);
    EXPECT_EQ(c.c.d[0].n_diff, 0);
    EXPECT_EQ(c.c.d[0].first_flat, -1);
}

TEST(VerifyCompare, NegativeZeroAgainstPositiveZeroIsADifference) {
    Set a, b;
    a.add("loss", {}, {0x00000000u});
    b.add("loss", {}, {0x80000000u});
    Cmp c(a, b);
    ASSERT_EQ(c.c.n, 1);
    EXPECT_EQ(c.c.n_different, 1);
    EXPECT_EQ(c.c.d[0].kind, REMAT_VERIFY_DIFFERENT);
    EXPECT_EQ(c.c.d[0].n_diff, 1);
    EXPECT_EQ(c.c.d[0].max_abs_diff, 0.0);  // equal values, different bits
    EXPECT_EQ(c.c.d[0].first_flat, 0);
    EXPECT_EQ(c.c.d[0].first_a, 0x00000000u);
    EXPECT_EQ(c.c.d[0].first_b, 0x80000000u);
}

TEST(VerifyCompare, NaNPayloadsDifferAndMakeMaxDiffNaN) {
    Set a, b;
    a.add("grads/input", {3}, {bits_of(1.0f), 0x7fc00000u, bits_of(2.0f)});
    b.add("grads/input", {3}, {bits_of(1.0f), 0x7fc00001u, bits_of(2.0f)});
    Cmp c(a, b);
    ASSERT_EQ(c.c.n, 1);
    EXPECT_EQ(c.c.d[0].n_diff, 1);
    EXPECT_TRUE(std::isnan(c.c.d[0].max_abs_diff));
    EXPECT_EQ(c.c.d[0].first_flat, 1);
}

TEST(VerifyCompare, CountsMaxAndFirstMultiIndex) {
    std::vector<uint32_t> x(24), y;
    for (int i = 0; i < 24; i++) x[i] = bits_of((float)i * 0.5f);
    y = x;
    y[17] = bits_of(8.5f + 0.25f);  // |diff| 0.25
    y[22] = bits_of(11.0f - 3.0f);  // |diff| 3
    Set a, b;
    a.add("grads/fc/weight", {2, 3, 4}, x);
    b.add("grads/fc/weight", {2, 3, 4}, y);
    Cmp c(a, b);
    const remat_verify_diff *d = c.find("grads/fc/weight");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->n_diff, 2);
    EXPECT_EQ(d->max_abs_diff, 3.0);
    EXPECT_EQ(d->first_flat, 17);
    EXPECT_EQ(d->first_index[0], 1);
    EXPECT_EQ(d->first_index[1], 1);
    EXPECT_EQ(d->first_index[2], 1);
    char buf[64];
    EXPECT_STREQ(remat_verify_index_str(d, buf, sizeof buf), "(1, 1, 1)");
}

TEST(VerifyCompare, MissingTensorsAndShapeChangesAreDifferences) {
    Set a, b;
    a.add("only_a", {2}, {1, 2});
    a.add("shape", {2, 2}, {1, 2, 3, 4});
    a.add("same", {1}, {7});
    b.add("shape", {4}, {1, 2, 3, 4});
    b.add("same", {1}, {7});
    b.add("only_b", {1}, {9});
    Cmp c(a, b);
    EXPECT_EQ(c.c.n, 4);
    EXPECT_EQ(c.c.n_different, 3);
    EXPECT_EQ(c.find("only_a")->kind, REMAT_VERIFY_ONLY_A);
    EXPECT_EQ(c.find("only_b")->kind, REMAT_VERIFY_ONLY_B);
    EXPECT_EQ(c.find("shape")->kind, REMAT_VERIFY_SHAPE);
    EXPECT_EQ(c.find("same")->kind, REMAT_VERIFY_SAME);
}

TEST(VerifyCompare, RepeatedNameIsRefused) {
    Set a;
    a.add("x", {1}, {1});
    remat_error err{};
    int64_t shape[1] = {1};
    uint32_t v = 2;
    EXPECT_EQ(remat_verify_set_add(&a.s, "x", REMAT_VERIFY_F32, 1, shape, &v, &err), nullptr);
    EXPECT_NE(err.status, REMAT_OK);
}

// ---- models, plans, runs ---------------------------------------------------

struct TextModel {
    remat_model m{};
    explicit TextModel(const std::string &json) {
        remat_error err{};
        if (remat_model_parse(json.data(), json.size(), "<test>", &m, &err) != REMAT_OK)
            ADD_FAILURE() << "model: " << err.msg;
    }
    ~TextModel() { remat_model_free(&m); }
};

struct Plan {
    remat_plan p{};
    Plan(const remat_model &m, const std::string &json) {
        remat_error err{};
        if (remat_plan_parse(json.data(), json.size(), "<test plan>", &m, &p, &err) != REMAT_OK)
            ADD_FAILURE() << "plan: " << err.msg;
    }
    Plan(const remat_model &m, const char *path, int) {
        remat_error err{};
        if (remat_plan_load(path, &m, &p, &err) != REMAT_OK) ADD_FAILURE() << "plan: " << err.msg;
    }
    explicit Plan(const remat_model &m) {
        remat_error err{};
        if (remat_plan_init_empty(&m, &p, &err) != REMAT_OK) ADD_FAILURE() << err.msg;
    }
    ~Plan() { remat_plan_free(&p); }
};

struct Ref {
    remat_backend be{};
    Ref() {
        remat_error err{};
        if (remat_backend_ref_init(&be, 1, &err) != REMAT_OK) ADD_FAILURE() << err.msg;
    }
    ~Ref() { remat_backend_free(&be); }
};

struct Verified {
    remat_verify_result r{};
    remat_status st = REMAT_OK;
    remat_error err{};
    Verified(const remat_model &m, const remat_plan &p, remat_backend *be, remat_fault fault = REMAT_FAULT_NONE,
             int check = 1, uint64_t seed = 1) {
        remat_verify_opts o = remat_verify_opts_default();
        o.seed = seed;
        o.fault = fault;
        o.check_compress = check;
        st = remat_verify_plan_run(&m, &p, be, &o, &r, &err);
        EXPECT_EQ(st, REMAT_OK) << err.msg;
    }
    ~Verified() { remat_verify_result_free(&r); }
    const remat_verify_diff *find(const char *name) const {
        for (int i = 0; i < r.cmp.n; i++)
            if (!std::strcmp(r.cmp.d[i].name, name)) return &r.cmp.d[i];
        return nullptr;
    }
    std::string differing() const {
        std::string s;
        for (int i = 0; i < r.cmp.n; i++)
            if (r.cmp.d[i].kind != REMAT_VERIFY_SAME) s += std::string(r.cmp.d[i].name) + " ";
        return s;
    }
};

// Dropout right on the analog input, inside a block that can be checkpointed: a
// recomputation that redraws the mask feeds fc1 other values.
const char *kDropFirst = R"({
  "name": "drop-first", "T": 4, "N": 8,
  "input": {"shape": [16], "kind": "analog"},
  "classes": 4, "loss": "rate_mse",
  "optimizer": {"type": "sgd", "lr": 0.1, "momentum": 0.9},
  "layers": [
    {"name": "d0", "type": "dropout", "p": 0.5},
    {"name": "fc1", "type": "linear", "out": 16},
    {"name": "lif1", "type": "lif"},
    {"name": "fc2", "type": "linear", "out": 4},
    {"name": "lif2", "type": "lif"}
  ],
  "blocks": [
    {"name": "b1", "layers": ["d0", "fc1", "lif1"]},
    {"name": "b2", "layers": ["fc2", "lif2"]}
  ]
})";

// ---- expectation from plan and model ---------------------------------------

TEST(VerifyExpect, CountsEachLayerOncePerChunkAcrossSplits) {
    remat_test::Model m("tiny-3block-if");
    Plan p(m.m, "data/plans/tiny-3block-if-ckpt.json", 0);
    // b1: k=2, split at fc1b -> segments {fc1a,if1a} {fc1b,if1b}: 4 layers x 2 chunks
    // b2: bit, k=4, split at fc2b -> 2 compressed segments, 4 layers x 4 chunks
    // b3: uint8, k=1 -> 1 compressed segment, 4 layers x 1
    remat_verify_expect e = remat_verify_expect_plan(&m.m, &p.p);
    EXPECT_EQ(e.recomputed_layers, 8 + 16 + 4);
    EXPECT_EQ(e.recomputed_layer_set, 12);
    EXPECT_EQ(e.segments, 5);
    EXPECT_EQ(e.compressed_segments, 3);
    Plan empty(m.m);
    e = remat_verify_expect_plan(&m.m, &empty.p);
    EXPECT_EQ(e.recomputed_layers, 0);
    EXPECT_EQ(e.segments, 0);
}

// ---- correct plans pass ----------------------------------------------------

TEST(VerifyPlan, ShippedTinyPlansAreBitIdenticalAndSaveMemory) {
    Ref ref;
    for (const char *name : {"tiny-mlp-lif", "tiny-3block-if", "tiny-resnet-bn", "tiny-vgg-dvs"}) {
        SCOPED_TRACE(name);
        remat_test::Model m(name);
        std::string path = std::string("data/plans/") + name + "-ckpt.json";
        Plan p(m.m, path.c_str(), 0);
        Verified v(m.m, p.p, &ref.be);
        EXPECT_EQ(v.r.failures, 0u) << remat_verify_verdict(v.r.failures) << " differing: " << v.differing();
        EXPECT_STREQ(remat_verify_verdict(v.r.failures), "identical");
        EXPECT_EQ(v.r.cmp.n_different, 0);
        EXPECT_LT(v.r.plan.peak_live_bytes, v.r.base.peak_live_bytes);
        EXPECT_LT(v.r.plan.end_of_forward_bytes, v.r.base.end_of_forward_bytes);
        EXPECT_EQ(v.r.plan.recomputed_layers, v.r.expect.recomputed_layers);
        EXPECT_GT(v.r.expect.recomputed_layers, 0);
        // every compression checked by the executor and by the checking backend
        EXPECT_EQ(v.r.plan.compressions, v.r.expect.compressed_segments);
        EXPECT_EQ(v.r.plan.compressions_checked, v.r.plan.compressions);
        EXPECT_EQ(v.r.compress.compressions, v.r.plan.compressions);
        EXPECT_GE(v.r.compress.decompressions, v.r.plan.compressions);
        EXPECT_EQ(v.r.compress.unmatched, 0);
    }
}

TEST(VerifyPlan, ComparesEveryKindOfTensor) {
    Ref ref;
    remat_test::Model m("tiny-resnet-bn");
    Plan p(m.m, "data/plans/tiny-resnet-bn-ckpt.json", 0);
    Verified v(m.m, p.p, &ref.be);
    for (const char *name : {"loss", "input", "labels", "params/r1_bn1/running_mean", "grads/stem_fc/weight",
                             "grads/r1_bn1/bias", "grads/input", "after/r1_bn1/running_mean",
                             "after/r2_bn2/running_var", "masks/head_drop", "masks/stem_drop"})
        EXPECT_NE(v.find(name), nullptr) << name;
    const remat_verify_diff *w = v.find("grads/stem_fc/weight");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->ndim, 2);
    EXPECT_EQ(w->shape[0], 8);
    EXPECT_EQ(w->shape[1], 8);
    const remat_verify_diff *in = v.find("grads/input");
    ASSERT_NE(in, nullptr);
    EXPECT_EQ(in->ndim, 3);
    EXPECT_EQ(in->shape[0], m.m.T);
    EXPECT_EQ(in->shape[1], m.m.N);
}

TEST(VerifyPlan, NoOpPlanIsReportedAsSavingNothing) {
    Ref ref;
    remat_test::Model m("tiny-mlp-lif");
    Plan named_but_stored(m.m, R"({"blocks": [{"name": "b1", "checkpoint": false}, {"name": "b3"}]})");
    Plan empty(m.m);
    for (const remat_plan *p : {&named_but_stored.p, &empty.p}) {
        Verified v(m.m, *p, &ref.be);
        EXPECT_EQ(v.r.cmp.n_different, 0);  // a no-op passes every comparison ...
        EXPECT_EQ(v.r.failures, (unsigned)REMAT_VERIFY_FAIL_NO_SAVING);  // ... and is still refused
        EXPECT_STREQ(remat_verify_verdict(v.r.failures), "saves-nothing");
    }
}

TEST(VerifyPlan, SameSeedSamePlanTwiceIsIdenticalOtherSeedIsNot) {
    Ref ref;
    remat_test::Model m("tiny-mlp-lif");
    Plan p(m.m, "data/plans/tiny-mlp-lif-ckpt.json", 0);
    remat_verify_opts o = remat_verify_opts_default();
    remat_verify_baseline b1{}, b2{};
    remat_error err{};
    ASSERT_EQ(remat_verify_baseline_run(&m.m, &ref.be, &o, &b1, &err), REMAT_OK) << err.msg;
    o.seed = 2;
    ASSERT_EQ(remat_verify_baseline_run(&m.m, &ref.be, &o, &b2, &err), REMAT_OK) << err.msg;
    remat_verify_cmp c{};
    ASSERT_EQ(remat_verify_compare(&b1.tensors, &b2.tensors, &c, &err), REMAT_OK);
    EXPECT_GT(c.n_different, 0);  // the comparison is not blind: another seed differs
    remat_verify_cmp_free(&c);
    ASSERT_EQ(remat_verify_compare(&b1.tensors, &b1.tensors, &c, &err), REMAT_OK);
    EXPECT_EQ(c.n_different, 0);
    remat_verify_cmp_free(&c);
    remat_verify_baseline_free(&b1);
    remat_verify_baseline_free(&b2);
}

// ---- deliberate contract breaks --------------------------------------------

// Failures that mean "the plan changed what tensors hold" (a one-block plan may
// legitimately leave the peak where it was: that is REMAT_VERIFY_FAIL_PEAK).
const unsigned kBroken = REMAT_VERIFY_FAIL_TENSORS | REMAT_VERIFY_FAIL_LOSSY | REMAT_VERIFY_FAIL_RECOMPUTE;

TEST(VerifyFaults, ReorderedWeightGradientReductionIsCaught) {
    Ref ref;
    remat_test::Model m("tiny-mlp-lif");
    Plan chunked(m.m, R"({"blocks": [{"name": "b1", "checkpoint": true, "k": 3},
                                     {"name": "b2", "checkpoint": true, "k": 6}]})");
    Verified bad(m.m, chunked.p, &ref.be, REMAT_FAULT_REORDER_WGRAD);
    EXPECT_TRUE(bad.r.failures & REMAT_VERIFY_FAIL_TENSORS) << remat_verify_verdict(bad.r.failures);
    EXPECT_STREQ(remat_verify_verdict(bad.r.failures), "mismatch");
    // the damage is in the weight/bias gradients of the chunked linear layers
    bool weight_grad_differs = false;
    for (const char *n : {"grads/fc1/weight", "grads/fc1/bias", "grads/fc2/weight", "grads/fc2/bias"})
        if (bad.find(n) && bad.find(n)->kind == REMAT_VERIFY_DIFFERENT) weight_grad_differs = true;
    EXPECT_TRUE(weight_grad_differs) << bad.differing();
    EXPECT_EQ(bad.find("loss")->kind, REMAT_VERIFY_SAME);
    // the same fault cannot act without time chunks: verify must not cry wolf
    Plan unchunked(m.m, R"({"blocks": [{"name": "b2", "checkpoint": true}]})");
    Verified ok(m.m, unchunked.p, &ref.be, REMAT_FAULT_REORDER_WGRAD);
    EXPECT_EQ(ok.r.failures & kBroken, 0u) << ok.differing();
}

TEST(VerifyFaults, RedrawnDropoutMaskIsCaught) {
    Ref ref;
    TextModel m(kDropFirst);
    Plan p(m.m, R"({"blocks": [{"name": "b1", "checkpoint": true}]})");
    Verified bad(m.m, p.p, &ref.be, REMAT_FAULT_REDRAW_DROPOUT);
    EXPECT_TRUE(bad.r.failures & REMAT_VERIFY_FAIL_TENSORS);
    ASSERT_NE(bad.find("grads/fc1/weight"), nullptr);
    EXPECT_EQ(bad.find("grads/fc1/weight")->kind, REMAT_VERIFY_DIFFERENT) << bad.differing();
    Verified good(m.m, p.p, &ref.be);
    EXPECT_EQ(good.r.failures & kBroken, 0u) << good.differing();
    // dropout in a stored block is never redrawn
    Plan stored(m.m, R"({"blocks": [{"name": "b2", "checkpoint": true}]})");
    Verified ok(m.m, stored.p, &ref.be, REMAT_FAULT_REDRAW_DROPOUT);
    EXPECT_EQ(ok.r.failures & kBroken, 0u) << ok.differing();
}

TEST(VerifyFaults, BatchNormRunningStatsUpdatedTwiceIsCaught) {
    Ref ref;
    remat_test::Model m("tiny-resnet-bn");
    Plan p(m.m, R"({"blocks": [{"name": "res1", "checkpoint": true}]})");
    Verified bad(m.m, p.p, &ref.be, REMAT_FAULT_BN_DOUBLE_UPDATE);
    EXPECT_TRUE(bad.r.failures & REMAT_VERIFY_FAIL_TENSORS);
    for (const char *n : {"after/r1_bn1/running_mean", "after/r1_bn1/running_var", "after/r1_bn2/running_mean",
                          "after/r1_bn2/running_var"}) {
        ASSERT_NE(bad.find(n), nullptr) << n;
        EXPECT_EQ(bad.find(n)->kind, REMAT_VERIFY_DIFFERENT) << n;
    }
    // res2 was not recomputed: its statistics stay right
    EXPECT_EQ(bad.find("after/r2_bn1/running_mean")->kind, REMAT_VERIFY_SAME);
    Plan other(m.m, R"({"blocks": [{"name": "stem", "checkpoint": true}]})");
    Verified ok(m.m, other.p, &ref.be, REMAT_FAULT_BN_DOUBLE_UPDATE);
    EXPECT_EQ(ok.r.failures & kBroken, 0u) << ok.differing();
}

TEST(VerifyFaults, LossyCompressorIsCaughtByTheLosslessnessCheckAndTheGradients) {
    Ref ref;
    remat_test::Model m("tiny-mlp-lif");
    Plan p(m.m, R"({"blocks": [{"name": "b1", "checkpoint": true, "compressor": "bit"}]})");
    Verified bad(m.m, p.p, &ref.be, REMAT_FAULT_LOSSY_COMPRESS);
    EXPECT_TRUE(bad.r.failures & REMAT_VERIFY_FAIL_LOSSY);
    EXPECT_GT(bad.r.plan.compression_mismatches, 0);
    EXPECT_TRUE(bad.r.failures & REMAT_VERIFY_FAIL_TENSORS) << bad.differing();
    // without the per-compression check, the gradient comparison still catches it
    Verified unchecked(m.m, p.p, &ref.be, REMAT_FAULT_LOSSY_COMPRESS, 0);
    EXPECT_TRUE(unchecked.r.failures & REMAT_VERIFY_FAIL_TENSORS);
    EXPECT_FALSE(unchecked.r.failures & REMAT_VERIFY_FAIL_LOSSY);
    // no compressor, nothing to corrupt
    Plan plain(m.m, R"({"blocks": [{"name": "b1", "checkpoint": true}]})");
    Verified ok(m.m, plain.p, &ref.be, REMAT_FAULT_LOSSY_COMPRESS);
    EXPECT_EQ(ok.r.failures & kBroken, 0u) << ok.differing();
}

TEST(VerifyFaults, EveryFaultOnTheShippedPlansGivesANonZeroExitVerdict) {
    Ref ref;
    struct Case {
        const char *model;
        remat_fault fault;
    } cases[] = {
        {"tiny-mlp-lif", REMAT_FAULT_REORDER_WGRAD},
        {"tiny-mlp-lif", REMAT_FAULT_LOSSY_COMPRESS},
        {"tiny-3block-if", REMAT_FAULT_REORDER_WGRAD},
        {"tiny-3block-if", REMAT_FAULT_LOSSY_COMPRESS},
        {"tiny-resnet-bn", REMAT_FAULT_BN_DOUBLE_UPDATE},
        {"tiny-resnet-bn", REMAT_FAULT_LOSSY_COMPRESS},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(std::string(c.model) + " fault " + std::to_string((int)c.fault));
        remat_test::Model m(c.model);
        std::string path = std::string("data/plans/") + c.model + "-ckpt.json";
        Plan p(m.m, path.c_str(), 0);
        Verified v(m.m, p.p, &ref.be, c.fault);
        EXPECT_NE(v.r.failures, 0u);
        EXPECT_STRNE(remat_verify_verdict(v.r.failures), "identical");
    }
}

// ---- the judgement on figures the executor reports -------------------------

TEST(VerifyJudge, RecomputationCountAndPeakAreHeldToThePlan) {
    Ref ref;
    remat_test::Model m("tiny-mlp-lif");
    Plan p(m.m, "data/plans/tiny-mlp-lif-ckpt.json", 0);
    Verified v(m.m, p.p, &ref.be);
    ASSERT_EQ(v.r.failures, 0u);
    remat_verify_result r = v.r;
    r.plan.recomputed_layers += 1;  // one layer recomputed once too often
    EXPECT_EQ(remat_verify_judge(&r, 1), (unsigned)REMAT_VERIFY_FAIL_RECOMPUTE);
    r = v.r;
    r.plan.recomputed_layer_set -= 1;
    EXPECT_EQ(remat_verify_judge(&r, 1), (unsigned)REMAT_VERIFY_FAIL_RECOMPUTE);
    r = v.r;
    r.plan.compressions -= 1;  // a compression skipped
    EXPECT_TRUE(remat_verify_judge(&r, 1) & REMAT_VERIFY_FAIL_RECOMPUTE);
    r = v.r;
    r.plan.peak_live_bytes = r.base.peak_live_bytes;  // end of forward lower, peak not
    EXPECT_EQ(remat_verify_judge(&r, 1), (unsigned)REMAT_VERIFY_FAIL_PEAK);
    EXPECT_STREQ(remat_verify_verdict(REMAT_VERIFY_FAIL_PEAK), "peak-not-reduced");
    r.plan.end_of_forward_bytes = r.base.end_of_forward_bytes + 1;
    EXPECT_EQ(remat_verify_judge(&r, 1), (unsigned)REMAT_VERIFY_FAIL_NO_SAVING);
    r = v.r;
    r.plan.compressions_checked -= 1;  // a compression left unchecked
    EXPECT_EQ(remat_verify_judge(&r, 1), (unsigned)REMAT_VERIFY_FAIL_LOSSY);
    EXPECT_EQ(remat_verify_judge(&r, 0), 0u);
}

// ---- backends whose compression is wrong ------------------------------------

// A broken backend: the reference backend with compress/decompress replaced.
const remat_backend_ops *g_ref_ops;

// (fp32 models only, as these tests run.)
remat_status flip_decompress(void *ctx, remat_compressor c, void *dst, remat_encoding enc, int64_t n, const void *src,
                             int64_t sb, remat_error *err) {
    remat_status st = g_ref_ops->decompress(ctx, c, dst, enc, n, src, sb, err);
    if (st == REMAT_OK && n > 0 && enc == REMAT_ENC_F32) {
        float v;
        g_ref_ops->to_host(ctx, &v, dst, 4);
        v = v == 0.0f ? 1.0f : 0.0f;
        g_ref_ops->from_host(ctx, dst, &v, 4);
    }
    return st;
}

// Bit compressor with the bits of each byte in the wrong order: lossless, but not
// the documented format.
remat_status msb_compress(void *ctx, remat_compressor c, void *dst, int64_t db, const void *src, remat_encoding enc,
                          int64_t n, remat_error *err) {
    if (c != REMAT_COMP_BIT || enc != REMAT_ENC_F32) return g_ref_ops->compress(ctx, c, dst, db, src, enc, n, err);
    std::vector<float> h((size_t)n);
    g_ref_ops->to_host(ctx, h.data(), src, n * 4);
    std::vector<unsigned char> out((size_t)db, 0);
    for (int64_t i = 0; i < n; i++)
        if (h[(size_t)i] == 1.0f) out[(size_t)(i / 8)] |= (unsigned char)(0x80u >> (i % 8));
    g_ref_ops->from_host(ctx, dst, out.data(), db);
    return REMAT_OK;
}
remat_status msb_decompress(void *ctx, remat_compressor c, void *dst, remat_encoding enc, int64_t n, const void *src,
                            int64_t sb, remat_error *err) {
    if (c != REMAT_COMP_BIT || enc != REMAT_ENC_F32) return g_ref_ops->decompress(ctx, c, dst, enc, n, src, sb, err);
    std::vector<unsigned char> in((size_t)sb);
    g_ref_ops->to_host(ctx, in.data(), src, sb);
    std::vector<float> h((size_t)n);
    for (int64_t i = 0; i < n; i++) h[(size_t)i] = (in[(size_t)(i / 8)] >> (7 - i % 8)) & 1 ? 1.0f : 0.0f;
    g_ref_ops->from_host(ctx, dst, h.data(), n * 4);
    return REMAT_OK;
}

struct Broken {
    Ref ref;
    remat_backend_ops ops{};
    remat_backend be{};
    Broken(decltype(remat_backend_ops::compress) comp, decltype(remat_backend_ops::decompress) decomp) {
        g_ref_ops = ref.be.ops;
        ops = *ref.be.ops;
        if (comp) ops.compress = comp;
        if (decomp) ops.decompress = decomp;
        be.ops = &ops;
        be.ctx = ref.be.ctx;
    }
};

TEST(VerifyBackend, LossyBackendDecompressionIsCaught) {
    Broken b(nullptr, flip_decompress);
    remat_test::Model m("tiny-mlp-lif");
    Plan p(m.m, R"({"blocks": [{"name": "b1", "checkpoint": true, "compressor": "bool"}]})");
    Verified v(m.m, p.p, &b.be);
    EXPECT_TRUE(v.r.failures & REMAT_VERIFY_FAIL_LOSSY);
    EXPECT_GT(v.r.compress.roundtrip_bad, 0);
    EXPECT_EQ(v.r.compress.format_bad, 0);  // what was written is right; what came back is not
    EXPECT_NE(std::string(v.r.compress.first_problem).find("restored"), std::string::npos)
        << v.r.compress.first_problem;
}

TEST(VerifyBackend, OffFormatButLosslessCompressorIsCaught) {
    Broken b(msb_compress, msb_decompress);
    remat_test::Model m("tiny-mlp-lif");
    Plan p(m.m, R"({"blocks": [{"name": "b1", "checkpoint": true, "compressor": "bit"}]})");
    Verified v(m.m, p.p, &b.be);
    EXPECT_EQ(v.r.cmp.n_different, 0);  // gradients cannot see it ...
    EXPECT_EQ(v.r.compress.roundtrip_bad, 0);
    EXPECT_GT(v.r.compress.format_bad, 0);  // ... the host decoder can
    EXPECT_TRUE(v.r.failures & REMAT_VERIFY_FAIL_LOSSY);
}

// ---- gradient dumps --------------------------------------------------------

std::string tmp_path(const std::string &name) {
    const char *t = std::getenv("TEST_TMPDIR");
    return std::string(t ? t : "/tmp") + "/" + name;
}

void write_dump(const remat_model &m, const remat_plan &p, remat_backend *be, const std::string &path,
                uint64_t seed = 1, remat_fault fault = REMAT_FAULT_NONE) {
    remat_exec_opts o = remat_exec_opts_default();
    o.seed = seed;
    o.fault = fault;
    remat_error err{};
    ASSERT_EQ(remat_dump_run(&m, &p, be, &o, path.c_str(), nullptr, &err), REMAT_OK) << err.msg;
}

TEST(VerifyDumps, PlanAndBaselineDumpsAreIdenticalAndHoldWhatVerifyCaptures) {
    Ref ref;
    remat_test::Model m("tiny-resnet-bn");
    Plan empty(m.m);
    Plan p(m.m, "data/plans/tiny-resnet-bn-ckpt.json", 0);
    std::string a = tmp_path("base.h5"), b = tmp_path("plan.h5");
    write_dump(m.m, empty.p, &ref.be, a);
    write_dump(m.m, p.p, &ref.be, b);
    remat_verify_dump_result r{};
    remat_error err{};
    ASSERT_EQ(remat_verify_dumps(a.c_str(), b.c_str(), &r, &err), REMAT_OK) << err.msg;
    EXPECT_TRUE(r.identical);
    EXPECT_EQ(r.cmp.n_different, 0);
    EXPECT_STRNE(r.plan_a, r.plan_b);  // only the plan attribute differs
    remat_verify_dump_result_free(&r);

    // the dump writer and verify's in-memory capture are two readings of one step:
    // the same tensors, the same bits
    remat_dump d{};
    ASSERT_EQ(remat_dump_read(a.c_str(), &d, &err), REMAT_OK) << err.msg;
    remat_verify_set from_dump{};
    ASSERT_EQ(remat_verify_set_from_dump(&d, &from_dump, &err), REMAT_OK) << err.msg;
    remat_verify_opts o = remat_verify_opts_default();
    remat_verify_baseline bl{};
    ASSERT_EQ(remat_verify_baseline_run(&m.m, &ref.be, &o, &bl, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(from_dump.n, bl.tensors.n);
    for (int i = 0; i < bl.tensors.n; i++) {
        const remat_verify_tensor *t = &bl.tensors.t[i];
        const remat_verify_tensor *u = remat_verify_set_find(&from_dump, t->name);
        ASSERT_NE(u, nullptr) << t->name;
        ASSERT_EQ(u->elems, t->elems) << t->name;
        EXPECT_EQ(std::memcmp(u->bits, t->bits, (size_t)t->elems * 4), 0) << t->name;
    }
    remat_verify_baseline_free(&bl);
    remat_verify_set_free(&from_dump);
    remat_dump_free(&d);
}

TEST(VerifyDumps, BrokenPlanAndOtherSeedAreReported) {
    Ref ref;
    remat_test::Model m("tiny-mlp-lif");
    Plan empty(m.m);
    Plan p(m.m, "data/plans/tiny-mlp-lif-ckpt.json", 0);
    std::string a = tmp_path("mlp-base.h5"), b = tmp_path("mlp-lossy.h5"), c = tmp_path("mlp-seed2.h5");
    write_dump(m.m, empty.p, &ref.be, a);
    write_dump(m.m, p.p, &ref.be, b, 1, REMAT_FAULT_LOSSY_COMPRESS);
    write_dump(m.m, empty.p, &ref.be, c, 2);
    remat_verify_dump_result r{};
    remat_error err{};
    ASSERT_EQ(remat_verify_dumps(a.c_str(), b.c_str(), &r, &err), REMAT_OK) << err.msg;
    EXPECT_FALSE(r.identical);
    EXPECT_GT(r.cmp.n_different, 0);
    EXPECT_FALSE(r.seed_differs);
    remat_verify_dump_result_free(&r);
    ASSERT_EQ(remat_verify_dumps(a.c_str(), c.c_str(), &r, &err), REMAT_OK) << err.msg;
    EXPECT_FALSE(r.identical);
    EXPECT_TRUE(r.seed_differs);
    remat_verify_dump_result_free(&r);
    EXPECT_EQ(remat_verify_dumps(a.c_str(), tmp_path("missing.h5").c_str(), &r, &err), REMAT_ERR_IO);
}

// ---- grids -----------------------------------------------------------------

struct Grid {
    remat_verify_grid_row *rows = nullptr;
    int n = 0;
    remat_verify_grid_summary sum{};
    remat_status st;
    remat_error err{};
    Grid(const remat_model &m, remat_backend *be, const remat_verify_grid_opts &o) {
        st = remat_verify_grid_run(&m, be, &o, &rows, &n, &sum, &err);
    }
    ~Grid() { remat_xfree(rows); }
};

TEST(VerifyGrid, SeededSampleIsRepeatableAndNeverTheBaseline) {
    Ref ref;
    remat_test::Model m("tiny-mlp-lif");
    remat_verify_grid_opts o = remat_verify_grid_opts_default();
    o.sample = 8;
    o.sample_seed = 11;
    Grid a(m.m, &ref.be, o), b(m.m, &ref.be, o);
    ASSERT_EQ(a.st, REMAT_OK) << a.err.msg;
    ASSERT_EQ(a.n, 8);
    ASSERT_EQ(b.n, 8);
    EXPECT_TRUE(a.sum.sampled);
    EXPECT_GT(a.sum.grid_size, 8);
    for (int i = 0; i < a.n; i++) {
        EXPECT_STREQ(a.rows[i].plan, b.rows[i].plan);
        EXPECT_STRNE(a.rows[i].plan, "no checkpointing");
        EXPECT_EQ(a.rows[i].failures & kBroken, 0u) << a.rows[i].plan << " " << a.rows[i].first_diff;
    }
    EXPECT_EQ(remat_verify_grid_failed(a.rows, a.n, 1), 0);
    o.sample_seed = 12;
    Grid c(m.m, &ref.be, o);
    int same = 0;
    for (int i = 0; i < c.n; i++) same += !std::strcmp(a.rows[i].plan, c.rows[i].plan);
    EXPECT_LT(same, 8);  // another seed, other plans
}

TEST(VerifyGrid, FullGridFindsEveryPlanThatRecomputesBatchNorm) {
    Ref ref;
    remat_test::Model m("tiny-resnet-bn");
    remat_verify_grid_opts o = remat_verify_grid_opts_default();
    o.v.fault = REMAT_FAULT_BN_DOUBLE_UPDATE;
    o.v.check_compress = 0;
    Grid g(m.m, &ref.be, o);
    ASSERT_EQ(g.st, REMAT_OK) << g.err.msg;
    EXPECT_FALSE(g.sum.sampled);
    int spans = 0;
    for (int i = 0; i < g.n; i++) spans += std::string(g.rows[i].plan).find("/span") != std::string::npos;
    EXPECT_GT(spans, 0); // spans over SEW blocks (the add reads inside the unit)
    EXPECT_EQ(g.n, g.sum.grid_size - 1 + spans);
    int broken = 0;
    for (int i = 0; i < g.n; i++) {
        std::string p = g.rows[i].plan;
        // the plan notation names each checkpointed block once: "res1", "res1:bit", "res1/k2", ...
        auto names = [&p](const std::string &b) {
            for (size_t at = p.find(b); at != std::string::npos; at = p.find(b, at + 1)) {
                bool start = at == 0 || p[at - 1] == ',';
                char after = at + b.size() < p.size() ? p[at + b.size()] : ',';
                if (start && (after == ',' || after == ':' || after == '/')) return true;
            }
            return false;
        };
        // an entry "stem.../spanN..." (a span from stem covers res1)
        size_t st = p.rfind("stem", 0) == 0 ? 0 : p.find(",stem");
        std::string stem = st == std::string::npos ? "" : p.substr(st, p.find(',', st + 1) - st);
        bool bn = names("res1") || names("res2") || stem.find("/span") != std::string::npos;
        EXPECT_EQ((g.rows[i].failures & REMAT_VERIFY_FAIL_TENSORS) != 0, bn) << p;
        if (bn) {
            EXPECT_EQ(std::string(g.rows[i].first_diff).rfind("after/r", 0), 0u) << g.rows[i].first_diff;
        }
        broken += bn;
    }
    EXPECT_GT(broken, 0);
    EXPECT_EQ(remat_verify_grid_failed(g.rows, g.n, 1), broken);
}

TEST(VerifyGrid, FullGridLargerThanTheLimitIsRefused) {
    Ref ref;
    remat_test::Model m("tiny-mlp-lif");
    remat_verify_grid_opts o = remat_verify_grid_opts_default();
    o.max_plans = 100;
    Grid g(m.m, &ref.be, o);
    EXPECT_EQ(g.st, REMAT_ERR_INPUT);
    EXPECT_NE(std::string(g.err.msg).find("--sample"), std::string::npos) << g.err.msg;
    EXPECT_EQ(g.n, 0);
}

// ---- printing -------------------------------------------------------------------

std::string capture(void (*fn)(FILE *, const remat_verify_context *, const remat_verify_result *),
                    const remat_verify_context *cx, const remat_verify_result *r) {
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fn(f, cx, r);
    fclose(f);
    std::string s(buf, len);
    free(buf);
    return s;
}

TEST(VerifyReport, HumanLinePerTensorAndJsonObject) {
    Ref ref;
    remat_test::Model m("tiny-mlp-lif");
    Plan p(m.m, R"({"blocks": [{"name": "b1", "checkpoint": true, "compressor": "bit", "k": 2}]})");
    Verified v(m.m, p.p, &ref.be, REMAT_FAULT_LOSSY_COMPRESS);
    remat_verify_context cx{&m.m, &p.p, "p.json", "ref", 1, 1, 0, REMAT_VERIFY_TABLE_ALL};
    std::string h = capture(remat_verify_print_human, &cx, &v.r);
    for (int i = 0; i < v.r.cmp.n; i++) EXPECT_NE(h.find(v.r.cmp.d[i].name), std::string::npos);
    // by default the table lists only the differing tensors, and counts the others
    cx.tensors = REMAT_VERIFY_TABLE_DIFFERING;
    std::string d = capture(remat_verify_print_human, &cx, &v.r);
    int listed = 0;
    for (int i = 0; i < v.r.cmp.n; i++) {
        bool differs = v.r.cmp.d[i].kind != REMAT_VERIFY_SAME;
        listed += differs;
        if (differs) EXPECT_NE(d.find(std::string("  ") + v.r.cmp.d[i].name + " "), std::string::npos) << d;
        else EXPECT_EQ(d.find(std::string("  ") + v.r.cmp.d[i].name + " "), std::string::npos) << d;
    }
    EXPECT_GT(listed, 0);
    EXPECT_NE(d.find(std::to_string(v.r.cmp.n - listed) + " of " + std::to_string(v.r.cmp.n) +
                     " tensors bit-identical"),
              std::string::npos)
        << d;
    cx.tensors = REMAT_VERIFY_TABLE_NONE;
    std::string q = capture(remat_verify_print_human, &cx, &v.r);
    EXPECT_EQ(q.find("tensors bit-identical"), std::string::npos) << q;
    EXPECT_NE(q.find("verdict: MISMATCH"), std::string::npos) << q;
    EXPECT_NE(h.find("verdict: MISMATCH"), std::string::npos) << h;
    EXPECT_NE(h.find("b1:bit/k2"), std::string::npos) << h;
    std::string j = capture(remat_verify_print_json, &cx, &v.r);
    EXPECT_EQ(j.front(), '{');
    EXPECT_NE(j.find("\"verdict\": \"mismatch\""), std::string::npos);
    EXPECT_NE(j.find("\"failures\": [\"mismatch\", \"lossy\"]"), std::string::npos) << j;
    EXPECT_NE(j.find("\"first_index\": [0, 0]"), std::string::npos) << j;
}

// ---- the compressors alone -------------------------------------------------

struct Report {
    remat_verify_compress_report *r = new remat_verify_compress_report();
    ~Report() { delete r; }
    int64_t failed_groups_matching(const char *what, const char *comp = nullptr) const {
        int64_t k = 0;
        for (int i = 0; i < r->n; i++)
            if (r->g[i].failures && std::strstr(r->g[i].what, what) &&
                (!comp || !std::strcmp(r->g[i].compressor, comp)))
                k++;
        return k;
    }
    int64_t failed_groups() const {
        int64_t k = 0;
        for (int i = 0; i < r->n; i++) k += r->g[i].failures > 0;
        return k;
    }
};

Report run_checks(const remat_verify_codec *codec, int64_t large) {
    Report rep;
    remat_verify_compress_opts o = remat_verify_compress_opts_default();
    o.seed = 42;
    o.large_elems = large;
    o.codec = codec;
    remat_error err{};
    EXPECT_EQ(remat_verify_compressors_run(&o, rep.r, &err), REMAT_OK) << err.msg;
    return rep;
}

TEST(VerifyCompressors, CompressCPassesEveryCheckIncludingALargeBitRoundTrip) {
    const int64_t large = ((int64_t)1 << 28) + 3;
    Report rep = run_checks(nullptr, large);
    EXPECT_EQ(rep.r->failures, 0);
    for (int i = 0; i < rep.r->n; i++)
        EXPECT_EQ(rep.r->g[i].failures, 0) << rep.r->g[i].compressor << " " << rep.r->g[i].what << ": "
                                           << rep.r->g[i].first_failure;
    EXPECT_GT(rep.r->cases, 5000);
    EXPECT_EQ(rep.r->large_elems, large);
    bool large_seen = false;
    int per_comp[REMAT_COMP_COUNT] = {0};
    for (int i = 0; i < rep.r->n; i++) {
        if (std::strstr(rep.r->g[i].what, "large round trip")) {
            large_seen = true;
            EXPECT_STREQ(rep.r->g[i].compressor, "bit");
            EXPECT_EQ(rep.r->g[i].cases, 3);
        }
        per_comp[remat_compressor_from_name(rep.r->g[i].compressor)]++;
    }
    EXPECT_TRUE(large_seen);
    for (int c = REMAT_COMP_BOOL; c < REMAT_COMP_COUNT; c++) EXPECT_GT(per_comp[c], 10) << c;
}

TEST(VerifyCompressors, SizeFormulaAtTheLimit) {
    const int64_t M = REMAT_COMPRESS_MAX_ELEMS;
    EXPECT_EQ(remat_verify_expected_bytes(REMAT_COMP_BIT, M, 0), 536870912);
    EXPECT_EQ(remat_verify_expected_bytes(REMAT_COMP_BOOL, M, 0), M);
    EXPECT_EQ(remat_verify_expected_bytes(REMAT_COMP_SPARSE, M, M), 4 * M);
    EXPECT_EQ(remat_verify_expected_bytes(REMAT_COMP_BIT, 9, 0), 2);
}

// Broken codecs: each must make at least the group aimed at it fail. Each passes
// counts above the limit straight through (the check hands them a small buffer).
remat_status accepts_half(remat_compressor c, void *dst, int64_t db, const float *src, int64_t n, remat_error *err) {
    if (n > REMAT_COMPRESS_MAX_ELEMS) return remat_compress(c, dst, db, src, n, err);
    std::vector<float> v(src, src + n);
    for (float &x : v)
        if (bits_of(x) == bits_of(0.5f)) x = 1.0f;  // rounds instead of refusing
    return remat_compress(c, dst, db, v.data(), n, err);
}
remat_status accepts_negative_zero(remat_compressor c, void *dst, int64_t db, const float *src, int64_t n,
                                   remat_error *err) {
    if (n > REMAT_COMPRESS_MAX_ELEMS) return remat_compress(c, dst, db, src, n, err);
    std::vector<float> v(src, src + n);
    for (float &x : v)
        if (bits_of(x) == 0x80000000u) x = 0.0f;  // -0.0 == 0.0 by value
    return remat_compress(c, dst, db, v.data(), n, err);
}
remat_status drops_tail(remat_compressor c, void *dst, int64_t db, const float *src, int64_t n, remat_error *err) {
    remat_status st = remat_compress(c, dst, db, src, n, err);
    if (st == REMAT_OK && c == REMAT_COMP_BIT && n % 8) ((unsigned char *)dst)[db - 1] = 0;
    return st;
}
int64_t int32_bytes(remat_compressor c, int64_t n, int64_t nnz) {
    if (c == REMAT_COMP_SPARSE) return (int64_t)(int32_t)(uint32_t)(4 * nnz);  // overflows past 2^31 bytes
    return remat_compressed_bytes(c, n, nnz);
}
remat_status lenient_decompress(remat_compressor c, float *dst, int64_t n, const void *src, int64_t sb,
                                remat_error *err) {
    int64_t want = remat_compressed_bytes(c, n, sb / 4);
    if (c != REMAT_COMP_SPARSE) sb = want;  // ignores a wrong size
    return remat_decompress(c, dst, n, src, sb, err);
}
remat_status skips_zeros(remat_compressor c, float *dst, int64_t n, const void *src, int64_t sb, remat_error *err) {
    if (c == REMAT_COMP_SPARSE && n <= REMAT_COMPRESS_MAX_ELEMS) {  // writes only the ones, leaves the zeros as they were
        const unsigned char *p = (const unsigned char *)src;
        for (int64_t k = 0; k < sb / 4; k++) {
            uint32_t pos;
            std::memcpy(&pos, p + 4 * k, 4);
            if (pos < n) dst[pos] = 1.0f;
        }
        return REMAT_OK;
    }
    return remat_decompress(c, dst, n, src, sb, err);
}

TEST(VerifyCompressors, CatchesACompressorThatRoundsHalfToOne) {
    remat_verify_codec cd = remat_verify_codec_default();
    cd.compress = accepts_half;
    Report rep = run_checks(&cd, 0);
    EXPECT_GT(rep.r->failures, 0);
    for (const char *c : {"bool", "bit", "sparse", "uint8"})
        EXPECT_EQ(rep.failed_groups_matching("refuse 0.5 ", c), 1) << c;
    EXPECT_EQ(rep.failed_groups(), 4);  // nothing else is blamed
}

TEST(VerifyCompressors, CatchesACompressorThatTakesNegativeZeroForZero) {
    remat_verify_codec cd = remat_verify_codec_default();
    cd.compress = accepts_negative_zero;
    Report rep = run_checks(&cd, 0);
    EXPECT_EQ(rep.failed_groups_matching("refuse -0 "), 4);  // every format, uint8 included
    EXPECT_EQ(rep.failed_groups(), 4);
}

TEST(VerifyCompressors, CatchesLostTailBitsAndWrongSizesAndLenientDecoders) {
    remat_verify_codec cd = remat_verify_codec_default();
    cd.compress = drops_tail;
    Report tail = run_checks(&cd, ((int64_t)1 << 20) + 5);
    EXPECT_EQ(tail.failed_groups_matching("lengths 1..1000", "bit"), 1);
    EXPECT_EQ(tail.failed_groups_matching("large round trip", "bit"), 1);
    EXPECT_EQ(tail.failed_groups_matching("lengths 1..1000", "bool"), 0);

    cd = remat_verify_codec_default();
    cd.bytes = int32_bytes;
    Report sizes = run_checks(&cd, 0);
    EXPECT_EQ(sizes.failed_groups_matching("size formula", "sparse"), 1);
    EXPECT_EQ(sizes.failed_groups(), 1);

    cd = remat_verify_codec_default();
    cd.decompress = lenient_decompress;
    Report lenient = run_checks(&cd, 0);
    EXPECT_EQ(lenient.failed_groups_matching("malformed", "bit"), 1);
    EXPECT_EQ(lenient.failed_groups_matching("malformed", "bool"), 1);
    EXPECT_EQ(lenient.failed_groups_matching("malformed", "uint8"), 1);

    cd = remat_verify_codec_default();
    cd.decompress = skips_zeros;
    Report skip = run_checks(&cd, 0);
    EXPECT_EQ(skip.failed_groups_matching("all zeros", "sparse"), 1);  // poisoned output left in place
}

}  // namespace
