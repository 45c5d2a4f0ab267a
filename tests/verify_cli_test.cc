// verify_cli_test.cc - `remat verify` end to end: the built binary (runfiles path
// tools/remat) on shipped models and plans, checking exit codes 0/1/2, the human
// verdict line and the --json object.
#include <gtest/gtest.h>

#include <cjson/cJSON.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/cli_runner.h"
#include <vector>

namespace {

using remat_test::lines;
using remat_test::Proc;
using remat_test::remat;
using remat_test::slurp;
using remat_test::tmp_dir;

std::string write_file(const std::string &name, const std::string &text) {
    std::string p = tmp_dir() + "/" + name;
    std::ofstream(p) << text;
    return p;
}

const std::string kModel = "--model data/models/tiny-mlp-lif.json";
const std::string kPlan = "--plan data/plans/tiny-mlp-lif-ckpt.json";

TEST(VerifyCli, HelpExitsZero) {
    Proc r = remat("verify --help");
    EXPECT_EQ(r.rc, 0);
    EXPECT_NE(r.out.find("usage: remat verify"), std::string::npos);
    EXPECT_NE(r.out.find("--grid"), std::string::npos);
    EXPECT_NE(r.out.find("--compressors"), std::string::npos);
}

TEST(VerifyCli, IdenticalPlanExitsZeroWithOneLinePerTensor) {
    Proc r = remat("verify " + kModel + " " + kPlan + " --all-tensors");
    EXPECT_EQ(r.rc, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("verdict: IDENTICAL"), std::string::npos) << r.out;
    for (const char *t : {"grads/fc1/weight", "grads/fc3/bias", "grads/input", "loss"})
        EXPECT_NE(r.out.find(t), std::string::npos) << t;
}

TEST(VerifyCli, JsonIsOneObjectWithVerdictAndTensors) {
    Proc r = remat("verify " + kModel + " " + kPlan + " --json --seed 7");
    EXPECT_EQ(r.rc, 0) << r.err;
    cJSON *j = cJSON_Parse(r.out.c_str());
    ASSERT_NE(j, nullptr) << r.out;
    EXPECT_STREQ(cJSON_GetObjectItem(j, "verdict")->valuestring, "identical");
    EXPECT_EQ(cJSON_GetObjectItem(j, "seed")->valuedouble, 7);
    cJSON *ts = cJSON_GetObjectItem(j, "tensors");
    ASSERT_TRUE(cJSON_IsArray(ts));
    EXPECT_GE(cJSON_GetArraySize(ts), 10);
    cJSON *t0 = cJSON_GetArrayItem(ts, 0);
    for (const char *k : {"name", "shape", "differing", "max_abs_diff", "first_index"})
        EXPECT_NE(cJSON_GetObjectItem(t0, k), nullptr) << k;
    cJSON_Delete(j);
}

TEST(VerifyCli, EachDeliberateBreakExitsOne) {
    struct {
        std::string model, plan, fault;
    } cases[] = {
        {"tiny-mlp-lif", "tiny-mlp-lif-ckpt", "reorder-wgrad"},
        {"tiny-mlp-lif", "tiny-mlp-lif-ckpt", "lossy-compress"},
        {"tiny-resnet-bn", "tiny-resnet-bn-ckpt", "bn-double-update"},
        {"tiny-3block-if", "tiny-3block-if-ckpt", "reorder-wgrad"},
    };
    for (auto &c : cases) {
        Proc r = remat("verify --model data/models/" + c.model + ".json --plan data/plans/" + c.plan +
                      ".json --fault " + c.fault + " --json");
        EXPECT_EQ(r.rc, 1) << c.fault << "\n" << r.out << r.err;
        cJSON *j = cJSON_Parse(r.out.c_str());
        ASSERT_NE(j, nullptr) << r.out;
        EXPECT_STRNE(cJSON_GetObjectItem(j, "verdict")->valuestring, "identical");
        cJSON_Delete(j);
    }
    // redrawn dropout masks need dropout on non-zero values inside a recomputed block
    std::string model = write_file("drop-first.json", R"({
      "name": "drop-first", "T": 4, "N": 8, "input": {"shape": [16], "kind": "analog"},
      "classes": 4, "loss": "rate_mse", "optimizer": {"type": "sgd", "lr": 0.1, "momentum": 0.9},
      "layers": [{"name": "d0", "type": "dropout", "p": 0.5}, {"name": "fc1", "type": "linear", "out": 16},
                 {"name": "lif1", "type": "lif"}, {"name": "fc2", "type": "linear", "out": 4},
                 {"name": "lif2", "type": "lif"}],
      "blocks": [{"name": "b1", "layers": ["d0", "fc1", "lif1"]}, {"name": "b2", "layers": ["fc2", "lif2"]}]})");
    std::string plan = write_file("drop-first-plan.json", R"({"blocks": [{"name": "b1", "checkpoint": true}]})");
    Proc r = remat("verify --model " + model + " --plan " + plan + " --fault redraw-dropout");
    EXPECT_EQ(r.rc, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("verdict: MISMATCH"), std::string::npos) << r.out;
}

TEST(VerifyCli, NoOpPlanExitsOneAndSaysItSavesNothing) {
    std::string plan = write_file("noop.json", R"({"blocks": [{"name": "b1", "checkpoint": false}]})");
    Proc r = remat("verify " + kModel + " --plan " + plan);
    EXPECT_EQ(r.rc, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("saves nothing"), std::string::npos) << r.out;
}

TEST(VerifyCli, BadInputExitsTwoWithOneLine) {
    for (const std::string &args : std::vector<std::string>{
             std::string("verify --model data/models/no-such-model.json ") + kPlan,
             "verify " + kModel + " --plan data/plans/tiny-mlp-lif-invalid-k-divisor.json",
             "verify " + kModel,
             "verify --plan data/plans/tiny-mlp-lif-ckpt.json",
             "verify " + kModel + " " + kPlan + " --no-such-flag",
             "verify " + kModel + " " + kPlan + " --fault nonsense",
             "verify " + kModel + " " + kPlan + " --seed -3",
             "verify " + kModel + " " + kPlan + " --backend tpu",
             "verify " + kModel + " " + kPlan + " --grid",
             "verify --compressors " + kModel,
             "verify --compressors --large lots",
         }) {
        Proc r = remat(args);
        EXPECT_EQ(r.rc, 2) << args << "\n" << r.out << r.err;
        EXPECT_EQ(lines(r.err), 1) << args << "\n" << r.err;
    }
}

TEST(VerifyCli, CompressorsPass) {
    Proc r = remat("verify --compressors --large 1000003 --json --seed 5");
    EXPECT_EQ(r.rc, 0) << r.out << r.err;
    cJSON *j = cJSON_Parse(r.out.c_str());
    ASSERT_NE(j, nullptr) << r.out;
    EXPECT_STREQ(cJSON_GetObjectItem(j, "verdict")->valuestring, "pass");
    EXPECT_EQ(cJSON_GetObjectItem(j, "large_elems")->valuedouble, 1000003);
    EXPECT_EQ(cJSON_GetObjectItem(j, "seed")->valuedouble, 5);
    EXPECT_GT(cJSON_GetArraySize(cJSON_GetObjectItem(j, "groups")), 40);
    cJSON_Delete(j);
    Proc h = remat("verify --compressors --large 0");
    EXPECT_EQ(h.rc, 0);
    EXPECT_NE(h.out.find("verdict: PASS"), std::string::npos) << h.out;
    EXPECT_NE(h.out.find("refuse -0 (0x80000000)"), std::string::npos) << h.out;
}

TEST(VerifyCli, GridSampleExitsZeroWithATableRowPerPlan) {
    Proc r = remat("verify --model data/models/tiny-mlp-lif.json --grid --sample 4 --sample-seed 3 --json");
    EXPECT_EQ(r.rc, 0) << r.out << r.err;
    cJSON *j = cJSON_Parse(r.out.c_str());
    ASSERT_NE(j, nullptr) << r.out;
    EXPECT_EQ(cJSON_GetArraySize(cJSON_GetObjectItem(j, "plans")), 4);
    EXPECT_TRUE(cJSON_IsTrue(cJSON_GetObjectItem(j, "sampled")));
    EXPECT_GT(cJSON_GetObjectItem(j, "grid_size")->valuedouble, 4);
    cJSON_Delete(j);
    // the same sample seed picks the same plans
    Proc a = remat("verify --model data/models/tiny-mlp-lif.json --grid --sample 4 --sample-seed 3");
    Proc b = remat("verify --model data/models/tiny-mlp-lif.json --grid --sample 4 --sample-seed 3");
    EXPECT_EQ(a.rc, 0);
    auto plans_of = [](const std::string &s) {
        std::string p;
        for (size_t at = s.find("\n  b"); at != std::string::npos; at = s.find("\n  b", at + 1)) p += s.substr(at, 24);
        return p;
    };
    EXPECT_EQ(plans_of(a.out), plans_of(b.out));
    EXPECT_NE(a.out.find("verdict: IDENTICAL"), std::string::npos) << a.out;
}

TEST(VerifyCli, FullGridWithAFaultExitsOne) {
    // every plan that recomputes a batch-norm block breaks; the others stay identical
    Proc r = remat("verify --model data/models/tiny-resnet-bn.json --grid --equivalence-only --fault bn-double-update --json");
    EXPECT_EQ(r.rc, 1) << r.err;
    cJSON *j = cJSON_Parse(r.out.c_str());
    ASSERT_NE(j, nullptr) << r.out.substr(0, 2000);
    EXPECT_FALSE(cJSON_IsTrue(cJSON_GetObjectItem(j, "sampled")));
    int n = cJSON_GetArraySize(cJSON_GetObjectItem(j, "plans"));
    int bad = 0, with_bn = 0, spans = 0;
    cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(j, "plans")) {
        std::string plan = cJSON_GetObjectItem(p, "plan")->valuestring;
        spans += plan.find("/span") != std::string::npos;
        // the plan notation names each checkpointed block once: "res1", "res1:bit", "res1/k2", ...
        auto names = [&plan](const std::string &b) {
            for (size_t at = plan.find(b); at != std::string::npos; at = plan.find(b, at + 1)) {
                bool start = at == 0 || plan[at - 1] == ',';
                char after = at + b.size() < plan.size() ? plan[at + b.size()] : ',';
                if (start && (after == ',' || after == ':' || after == '/')) return true;
            }
            return false;
        };
        // an entry "stem.../spanN..." (a span from stem covers res1)
        size_t st = plan.rfind("stem", 0) == 0 ? 0 : plan.find(",stem");
        std::string stem = st == std::string::npos ? "" : plan.substr(st, plan.find(',', st + 1) - st);
        bool recomputes_bn = names("res1") || names("res2") || stem.find("/span") != std::string::npos;
        bool mismatch = !std::string(cJSON_GetObjectItem(p, "verdict")->valuestring).compare("mismatch");
        with_bn += recomputes_bn;
        bad += mismatch;
        EXPECT_EQ(mismatch, recomputes_bn) << plan;
    }
    EXPECT_GT(with_bn, 0);
    EXPECT_EQ(n, (int)cJSON_GetObjectItem(j, "grid_size")->valuedouble - 1 + spans);
    EXPECT_EQ(cJSON_GetObjectItem(j, "failed")->valuedouble, bad);
    cJSON_Delete(j);
}

// The shipped model's text with "precision": "bf16" added (docs/precision.md).
std::string bf16_copy(const std::string &name) {
    std::string text = slurp("data/models/" + name + ".json");
    size_t brace = text.find('{');
    if (brace == std::string::npos) return "";
    text.insert(brace + 1, "\"precision\": \"bf16\", ");
    return write_file(name + "-bf16.json", text);
}

// The contract within bf16: a sample of every tiny model's grid bit-identical to bf16
// plain backpropagation, and a deliberate break still caught in bf16.
TEST(VerifyCli, Bf16GridSamplesAreIdenticalAndAFaultIsCaught) {
    for (const char *name : {"tiny-mlp-lif", "tiny-3block-if", "tiny-resnet-bn", "tiny-vgg-dvs", "tiny-sew-resnet"}) {
        std::string m = bf16_copy(name);
        ASSERT_FALSE(m.empty()) << name;
        Proc r = remat("verify --model " + m + " --grid --sample 120 --sample-seed 5 --equivalence-only --json");
        EXPECT_EQ(r.rc, 0) << name << ": " << r.err;
        cJSON *j = cJSON_Parse(r.out.c_str());
        ASSERT_NE(j, nullptr) << name << ": " << r.out.substr(0, 2000);
        EXPECT_EQ(cJSON_GetObjectItem(j, "failed")->valuedouble, 0) << name;
        EXPECT_GE(cJSON_GetArraySize(cJSON_GetObjectItem(j, "plans")), 100) << name;
        cJSON_Delete(j);
    }
    Proc f = remat("verify --model " + bf16_copy("tiny-resnet-bn") + " --grid --sample 60 --sample-seed 5 --equivalence-only "
                   "--fault bn-double-update");
    EXPECT_EQ(f.rc, 1) << f.out.substr(0, 2000) << f.err;
    EXPECT_NE(f.out.find("verdict: MISMATCH"), std::string::npos) << f.out.substr(0, 2000);
}

TEST(VerifyCli, FullGridOfAFullSizeModelNeedsASample) {
    Proc r = remat("verify --model data/models/mlp-lif.json --grid");
    EXPECT_EQ(r.rc, 2);
    EXPECT_NE(r.err.find("--sample"), std::string::npos) << r.err;
}

TEST(VerifyCli, TwoDumpsCompareBitForBit) {
    std::string a = tmp_dir() + "/a.h5", b = tmp_dir() + "/b.h5", c = tmp_dir() + "/c.h5";
    ASSERT_EQ(remat("run " + kModel + " --dump " + a).rc, 0);
    ASSERT_EQ(remat("run " + kModel + " " + kPlan + " --dump " + b).rc, 0);
    ASSERT_EQ(remat("run " + kModel + " --seed 2 --dump " + c).rc, 0);
    Proc same = remat("verify --dump " + a + " --dump " + b + " --all-tensors");
    EXPECT_EQ(same.rc, 0) << same.out << same.err;
    EXPECT_NE(same.out.find("verdict: IDENTICAL"), std::string::npos) << same.out;
    EXPECT_NE(same.out.find("grads/fc1/weight"), std::string::npos) << same.out;
    Proc other = remat("verify --dump " + a + " --dump " + c + " --json");
    EXPECT_EQ(other.rc, 1) << other.out << other.err;
    cJSON *j = cJSON_Parse(other.out.c_str());
    ASSERT_NE(j, nullptr) << other.out;
    EXPECT_STREQ(cJSON_GetObjectItem(j, "verdict")->valuestring, "mismatch");
    EXPECT_TRUE(cJSON_IsTrue(cJSON_GetObjectItem(j, "seed_differs")));
    cJSON_Delete(j);
    for (const std::string &args : std::vector<std::string>{"verify --dump " + a,
                                                            "verify --dump " + a + " --dump " + tmp_dir() + "/none.h5",
                                                            "verify --dump " + a + " --dump " + b + " " + kModel}) {
        Proc r = remat(args);
        EXPECT_EQ(r.rc, 2) << args << "\n" << r.err;
        EXPECT_EQ(lines(r.err), 1) << args << "\n" << r.err;
    }
}

}  // namespace
