// plan_test.cc - plan files: shipped plans load against their models and round-trip
// through remat_plan_to_json; every invalid plan (in files and inline) is refused
// with one line "<path>: blocks[i].<field>: <expected>", REMAT_ERR_INPUT, exit 2.
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/model/plan.h"
#include "tests/testutil.h"

namespace {

using remat_test::Model;

struct Plan {
    remat_plan p{};
    remat_error err{};
    remat_status st;
    Plan(const remat_model &m, const std::string &text, const char *origin = "p.json") {
        st = remat_plan_parse(text.data(), text.size(), origin, &m, &p, &err);
    }
    ~Plan() { remat_plan_free(&p); }
};

int layer(const remat_model &m, const char *name) { return remat_model_find_layer(&m, name); }

TEST(PlanEmpty, InitEmptyIsPlainBackprop) {
    Model t("tiny-resnet-bn");
    remat_plan p{};
    remat_error err{};
    ASSERT_EQ(remat_plan_init_empty(&t.m, &p, &err), REMAT_OK);
    ASSERT_EQ(p.n_blocks, 4);
    for (int b = 0; b < 4; b++) {
        EXPECT_EQ(p.blocks[b].checkpoint, 0);
        EXPECT_EQ(p.blocks[b].compressor, REMAT_COMP_NONE);
        EXPECT_EQ(p.blocks[b].k, 1);
        EXPECT_EQ(p.blocks[b].n_splits, 0);
    }
    EXPECT_STREQ(p.text, "");
    EXPECT_STREQ(p.path, "");
    EXPECT_EQ(remat_plan_is_empty(&p), 1);
    EXPECT_EQ(remat_plan_validate(&p, &t.m, "x", &err), REMAT_OK);
    char *j = remat_plan_to_json(&p, &t.m, &err);
    ASSERT_NE(j, nullptr) << err.msg;
    EXPECT_STREQ(j, "{\n  \"model\": \"tiny-resnet-bn\",\n  \"blocks\": []\n}\n");
    remat_xfree(j);
    remat_plan_free(&p);
    EXPECT_EQ(p.blocks, nullptr);
    // "blocks": [] in a file is the same plan
    Plan e(t.m, R"({"blocks": []})");
    ASSERT_EQ(e.st, REMAT_OK) << e.err.msg;
    EXPECT_EQ(remat_plan_is_empty(&e.p), 1);
}

TEST(PlanParse, ShippedTinyPlanFields) {
    Model t("tiny-3block-if");
    remat_plan p{};
    remat_error err{};
    ASSERT_EQ(remat_plan_load("data/plans/tiny-3block-if-ckpt.json", &t.m, &p, &err), REMAT_OK) << err.msg;
    ASSERT_EQ(p.n_blocks, 3);
    EXPECT_EQ(p.blocks[0].checkpoint, 1);
    EXPECT_EQ(p.blocks[0].compressor, REMAT_COMP_NONE);
    EXPECT_EQ(p.blocks[0].k, 2);
    ASSERT_EQ(p.blocks[0].n_splits, 1);
    EXPECT_EQ(p.blocks[0].splits[0], layer(t.m, "fc1b"));
    EXPECT_EQ(p.blocks[1].compressor, REMAT_COMP_BIT);
    EXPECT_EQ(p.blocks[1].k, 4);
    EXPECT_EQ(p.blocks[1].splits[0], layer(t.m, "fc2b"));
    EXPECT_EQ(p.blocks[2].compressor, REMAT_COMP_UINT8);
    EXPECT_EQ(p.blocks[2].k, 1);
    EXPECT_EQ(p.blocks[2].n_splits, 0);
    EXPECT_EQ(remat_plan_is_empty(&p), 0);
    EXPECT_STREQ(p.path, "data/plans/tiny-3block-if-ckpt.json");
    EXPECT_NE(std::string(p.text).find("\"model\": \"tiny-3block-if\""), std::string::npos);
    remat_plan_free(&p);
}

TEST(PlanParse, SplitsSortedAndDefaults) {
    Model t("tiny-3block-if");
    Plan a(t.m, R"({"blocks": [{"name": "b2", "checkpoint": true, "splits": ["fc2b", "if2a"]},
                               {"name": "b1", "checkpoint": false}]})");
    ASSERT_EQ(a.st, REMAT_OK) << a.err.msg;
    ASSERT_EQ(a.p.blocks[1].n_splits, 2);
    EXPECT_EQ(a.p.blocks[1].splits[0], layer(t.m, "if2a"));
    EXPECT_EQ(a.p.blocks[1].splits[1], layer(t.m, "fc2b"));
    EXPECT_EQ(a.p.blocks[0].checkpoint, 0);
    EXPECT_EQ(a.p.blocks[0].k, 1);
    EXPECT_EQ(a.p.blocks[2].checkpoint, 0);
    remat_error err{};
    EXPECT_EQ(remat_plan_validate(&a.p, &t.m, "x", &err), REMAT_OK) << err.msg;
}

std::vector<std::string> plan_files() {
    std::vector<std::string> out;
    DIR *d = opendir("data/plans");
    if (!d) return out;
    while (dirent *e = readdir(d)) {
        std::string n = e->d_name;
        if (n.size() > 5 && n.substr(n.size() - 5) == ".json") out.push_back(n);
    }
    closedir(d);
    std::sort(out.begin(), out.end());
    return out;
}

// Every valid shipped plan loads against the model its name starts with, and
// serialising then re-reading it gives the same plan.
TEST(ShippedPlans, ValidOnesLoadAndRoundTrip) {
    int valid = 0;
    for (const std::string &f : plan_files()) {
        if (f.find("-invalid-") != std::string::npos) continue;
        std::string model = f.substr(0, f.rfind("-ckpt"));
        ASSERT_NE(f.find("-ckpt"), std::string::npos) << f;
        Model md(model);
        remat_plan p{};
        remat_error err{};
        std::string path = "data/plans/" + f;
        ASSERT_EQ(remat_plan_load(path.c_str(), &md.m, &p, &err), REMAT_OK) << path << ": " << err.msg;
        EXPECT_EQ(remat_plan_is_empty(&p), 0) << f;
        char *j = remat_plan_to_json(&p, &md.m, &err);
        ASSERT_NE(j, nullptr) << err.msg;
        Plan again(md.m, j, "roundtrip.json");
        ASSERT_EQ(again.st, REMAT_OK) << again.err.msg << "\n" << j;
        for (int b = 0; b < md.m.n_blocks; b++) {
            const remat_block_plan &x = p.blocks[b], &y = again.p.blocks[b];
            EXPECT_EQ(x.checkpoint, y.checkpoint);
            EXPECT_EQ(x.compressor, y.compressor);
            EXPECT_EQ(x.k, y.k);
            ASSERT_EQ(x.n_splits, y.n_splits);
            for (int s = 0; s < x.n_splits; s++) EXPECT_EQ(x.splits[s], y.splits[s]);
        }
        remat_xfree(j);
        remat_plan_free(&p);
        valid++;
    }
    EXPECT_GE(valid, 6);
}

TEST(ShippedPlans, InvalidOnesRefused) {
    struct Want {
        const char *file, *model, *needle;
    };
    const Want wants[] = {
        {"tiny-mlp-lif-invalid-unknown-block.json", "tiny-mlp-lif",
         "blocks[0].name: expected a block of model \"tiny-mlp-lif\" (one of: b1, b2, b3), got \"b9\""},
        {"tiny-mlp-lif-invalid-k-divisor.json", "tiny-mlp-lif", "blocks[0].k: expected a divisor of T = 6, got 4"},
        {"tiny-mlp-lif-invalid-not-checkpointed.json", "tiny-mlp-lif",
         "blocks[0].compressor: expected \"none\" on block \"b2\", which is not checkpointed"},
        {"tiny-mlp-lif-invalid-unknown-field.json", "tiny-mlp-lif", "blocks[0].chekpoint: unknown field"},
        {"tiny-mlp-lif-invalid-model-name.json", "tiny-mlp-lif", "model: expected \"tiny-mlp-lif\""},
        {"tiny-resnet-bn-invalid-k-batchnorm.json", "tiny-resnet-bn",
         "blocks[0].k: expected 1 because block \"res1\" has batch norm (time chunks would change batch-norm "
         "statistics), got 2"},
        {"tiny-resnet-bn-invalid-bit-integer.json", "tiny-resnet-bn",
         "blocks[0].compressor: expected \"none\" or \"uint8\": the input of the segment starting at \"r2_fc1\" holds "
         "integer values"},
        {"tiny-resnet-bn-invalid-split-add.json", "tiny-resnet-bn",
         "blocks[0].splits[0]: expected no split at \"r1_fc2\" in block \"res1\": it would cut \"r1_add\" (add)"},
        {"tiny-3block-if-invalid-uint8-real.json", "tiny-3block-if",
         "blocks[0].compressor: expected \"none\": the input of the segment starting at \"fc1a\" holds real values"},
        {"tiny-3block-if-invalid-split-first.json", "tiny-3block-if",
         "blocks[0].splits[0]: expected a layer of block \"b2\" after its first layer \"fc2a\", got \"fc2a\""},
    };
    int checked = 0;
    for (const std::string &f : plan_files()) {
        if (f.find("-invalid-") == std::string::npos) continue;
        const Want *w = nullptr;
        for (const Want &x : wants)
            if (f == x.file) w = &x;
        ASSERT_NE(w, nullptr) << "no expectation for " << f;
        Model md(w->model);
        remat_plan p{};
        remat_error err{};
        std::string path = "data/plans/" + f;
        remat_status st = remat_plan_load(path.c_str(), &md.m, &p, &err);
        EXPECT_EQ(st, REMAT_ERR_INPUT) << f;
        EXPECT_EQ(remat_status_exit_code(st), 2);
        EXPECT_EQ(std::string(err.msg).rfind(path + ": " + w->needle, 0), 0u) << err.msg
            << "wanted prefix: " << path << ": " << w->needle;
        EXPECT_EQ(p.blocks, nullptr);
        checked++;
    }
    EXPECT_EQ(checked, (int)(sizeof wants / sizeof wants[0]));
}

void expect_refused(const remat_model &m, const std::string &text, const char *needle) {
    size_t live0 = remat_xmem_live();
    {
        Plan p(m, text, "bad.json");
        EXPECT_EQ(p.st, REMAT_ERR_INPUT) << needle;
        EXPECT_EQ(remat_status_exit_code(p.st), 2);
        std::string msg = p.err.msg;
        EXPECT_EQ(msg.rfind("bad.json: ", 0), 0u) << msg;
        EXPECT_NE(msg.find(needle), std::string::npos) << "\n  wanted: " << needle << "\n  got:    " << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
        EXPECT_EQ(p.p.blocks, nullptr);
    }
    EXPECT_EQ(remat_xmem_live(), live0) << needle << ": failure leaked";
}

std::string one(const char *block_json) { return std::string(R"({"blocks": [)") + block_json + "]}"; }

TEST(PlanParse, BadInputsTiny3BlockIf) {
    Model t("tiny-3block-if");  // T = 4; b1 input analog (REAL), b2, b3 inputs spikes
    const remat_model &m = t.m;
    expect_refused(m, R"({"blocks": [], "extra": 1})", "extra: unknown field (expected one of: model, description, chosen_for, blocks)");
    expect_refused(m, R"({})", "blocks: missing");
    // what search/tune chose the plan for: an object of known members, numbers and strings
    expect_refused(m, R"({"chosen_for": 3, "blocks": []})", "chosen_for: expected an object");
    expect_refused(m, R"({"chosen_for": {"M": 3}, "blocks": []})", "chosen_for.M: unknown field");
    expect_refused(m, R"({"chosen_for": {"N": "8"}, "blocks": []})", "chosen_for.N: expected a number");
    expect_refused(m, R"({"blocks": {}})", "blocks: expected an array of block plans, got an object");
    expect_refused(m, R"({"model": 3, "blocks": []})", "model: expected \"tiny-3block-if\"");
    expect_refused(m, R"({"model": "mlp-lif", "blocks": []})",
                   "model: expected \"tiny-3block-if\" (the name of the model the plan is used with), got \"mlp-lif\"");
    expect_refused(m, "[]", "(root): expected an object");
    expect_refused(m, "{\"blocks\": [", "(file): expected valid JSON");
    expect_refused(m, one(R"(3)"), "blocks[0]: expected an object {...}, got 3");
    expect_refused(m, one(R"({"checkpoint": true})"), "blocks[0].name: missing");
    expect_refused(m, one(R"({"name": 2})"), "blocks[0].name: expected a name");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true, "kk": 2})"), "blocks[0].kk: unknown field");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": "yes"})"), "blocks[0].checkpoint: expected true or false, got \"yes\"");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true, "k": "2"})"), "blocks[0].k: expected an integer >= 1, got \"2\"");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true, "k": 1.5})"), "blocks[0].k: expected an integer >= 1, got 1.5");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true, "k": 0})"), "blocks[0].k: expected an integer >= 1, got 0");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true, "k": -2})"), "blocks[0].k: expected an integer >= 1, got -2");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true, "k": 8})"), "blocks[0].k: expected a divisor of T = 4, got 8");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true, "k": 3})"), "blocks[0].k: expected a divisor of T = 4, got 3");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true, "k": 1e30})"), "blocks[0].k: expected an integer >= 1, got 1e+30");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true, "k": 1e9})"), "blocks[0].k: expected a divisor of T = 4, got 1000000000");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true, "compressor": "zip"})"),
                   R"(blocks[0].compressor: expected one of "none", "bool", "uint8", "bit", "sparse", got "zip")");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true, "compressor": 3})"), "blocks[0].compressor: expected one of");
    expect_refused(m, one(R"({"name": "b9", "checkpoint": true})"),
                   "blocks[0].name: expected a block of model \"tiny-3block-if\" (one of: b1, b2, b3), got \"b9\"");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true}, {"name": "b3"}, {"name": "b2"})"),
                   "blocks[2].name: expected each block once, got \"b2\" again (also blocks[0])");
    // options on a block that is not checkpointed
    expect_refused(m, one(R"({"name": "b2", "compressor": "bit"})"),
                   "blocks[0].compressor: expected \"none\" on block \"b2\", which is not checkpointed (set \"checkpoint\": true), got \"bit\"");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": false, "k": 2})"),
                   "blocks[0].k: expected 1 on block \"b2\", which is not checkpointed");
    expect_refused(m, one(R"({"name": "b2", "splits": ["fc2b"]})"),
                   "blocks[0].splits: expected no splits on block \"b2\", which is not checkpointed");
    // compressors against value classes: b1 input is REAL (analog input)
    for (const char *c : {"bit", "bool", "sparse"}) {
        std::string j = std::string(R"({"name": "b1", "checkpoint": true, "compressor": ")") + c + "\"}";
        std::string needle = std::string("blocks[0].compressor: expected \"none\": the input of the segment starting at \"fc1a\" holds real values, \"") + c + "\" stores spikes only";
        expect_refused(m, one(j.c_str()), needle.c_str());
    }
    expect_refused(m, one(R"({"name": "b1", "checkpoint": true, "compressor": "uint8"})"),
                   "blocks[0].compressor: expected \"none\": the input of the segment starting at \"fc1a\" holds real values, \"uint8\" stores small integers only");
    // a split whose segment input is REAL (output of a linear layer) refuses bit
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true, "compressor": "bit", "splits": ["if2a"]})"),
                   "blocks[0].compressor: expected \"none\": the input of the segment starting at \"if2a\" holds real values");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true, "compressor": "uint8", "splits": ["fc2b", "if2b"]})"),
                   "segment starting at \"if2b\" holds real values, \"uint8\"");
    // splits
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true, "splits": "fc2b"})"),
                   "blocks[0].splits: expected an array of layer names, got \"fc2b\"");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true, "splits": [4]})"), "blocks[0].splits[0]: expected a name");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true, "splits": ["fc9"]})"),
                   "blocks[0].splits[0]: expected a layer of block \"b2\" after its first layer \"fc2a\", got \"fc9\"");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true, "splits": ["fc2b", "fc3b"]})"),
                   "blocks[0].splits[1]: expected a layer of block \"b2\" after its first layer \"fc2a\", got \"fc3b\"");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true, "splits": ["fc2a"]})"),
                   "blocks[0].splits[0]: expected a layer of block \"b2\" after its first layer \"fc2a\", got \"fc2a\"");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true, "splits": ["fc2b", "fc2b"]})"),
                   "blocks[0].splits[1]: expected each split once, got \"fc2b\" again (also splits[0])");
    expect_refused(m, one(R"({"name": "b2", "checkpoint": true, "splits": ["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]})"),
                   "blocks[0].splits: expected at most 16 splits, got 17");
}

TEST(PlanParse, BadInputsTinyResnet) {
    Model t("tiny-resnet-bn");  // res1 input BINARY, res2/head INTEGER, res blocks have bn + add
    const remat_model &m = t.m;
    expect_refused(m, one(R"({"name": "res1", "checkpoint": true, "k": 2})"),
                   "blocks[0].k: expected 1 because block \"res1\" has batch norm (time chunks would change batch-norm statistics), got 2");
    expect_refused(m, one(R"({"name": "res1", "checkpoint": true, "splits": ["r1_lif2"]})"),
                   "blocks[0].splits[0]: expected no split at \"r1_lif2\" in block \"res1\": it would cut \"r1_add\" (add) from \"stem_drop\", which it reads (a segment reads only its own layers and its input)");
    for (const char *c : {"bit", "bool", "sparse"}) {
        std::string j = std::string(R"({"name": "res2", "checkpoint": true, "compressor": ")") + c + "\"}";
        std::string needle = std::string("blocks[0].compressor: expected \"none\" or \"uint8\": the input of the segment starting at \"r2_fc1\" holds integer values (sums of spikes or event counts, at most 255), \"") + c + "\" stores spikes only";
        expect_refused(m, one(j.c_str()), needle.c_str());
    }
    // head: input INTEGER (uint8 fine), but a split after dropout p > 0 has a REAL input
    expect_refused(m, one(R"({"name": "head", "checkpoint": true, "compressor": "uint8", "splits": ["head_fc"]})"),
                   "segment starting at \"head_fc\" holds real values, \"uint8\" stores small integers only");
    // valid ones for contrast
    for (const char *ok : {R"({"name": "res1", "checkpoint": true, "compressor": "sparse"})",
                           R"({"name": "res2", "checkpoint": true, "compressor": "uint8"})",
                           R"({"name": "head", "checkpoint": true, "compressor": "uint8", "k": 4})",
                           R"({"name": "stem", "checkpoint": true, "k": 2, "splits": ["stem_lif", "stem_drop"]})"}) {
        Plan p(m, one(ok));
        EXPECT_EQ(p.st, REMAT_OK) << ok << ": " << p.err.msg;
    }
}

TEST(PlanValidate, InMemoryPlans) {
    Model t("tiny-3block-if");
    const remat_model &m = t.m;
    remat_plan p{};
    remat_error err{};
    ASSERT_EQ(remat_plan_init_empty(&m, &p, &err), REMAT_OK);
    auto refused = [&](const char *needle) {
        remat_error e{};
        EXPECT_EQ(remat_plan_validate(&p, &m, "<search>", &e), REMAT_ERR_INPUT) << needle;
        EXPECT_NE(std::string(e.msg).find(std::string("<search>: ") + needle), std::string::npos)
            << "\n  wanted: " << needle << "\n  got:    " << e.msg;
        remat_error e2{};
        EXPECT_EQ(remat_plan_to_json(&p, &m, &e2), nullptr);
        EXPECT_EQ(e2.status, REMAT_ERR_INPUT);
    };
    p.blocks[1].checkpoint = 1;
    p.blocks[1].k = 3;
    refused("blocks[1].k: expected a divisor of T = 4, got 3");
    p.blocks[1].k = 0;
    refused("blocks[1].k: expected an integer >= 1, got 0");
    p.blocks[1].k = 2;
    p.blocks[1].n_splits = 2;
    p.blocks[1].splits[0] = layer(m, "fc2b");
    p.blocks[1].splits[1] = layer(m, "if2a");
    refused("blocks[1].splits[1]: expected splits in layer order, got \"if2a\" after fc2b");
    p.blocks[1].splits[0] = layer(m, "if2a");
    p.blocks[1].splits[1] = layer(m, "fc2b");
    EXPECT_EQ(remat_plan_validate(&p, &m, "<search>", &err), REMAT_OK) << err.msg;
    p.blocks[1].splits[1] = 99;
    refused("blocks[1].splits[1]: expected a layer of block \"b2\" after its first layer \"fc2a\", got layer index 99");
    p.blocks[1].n_splits = 0;
    p.blocks[1].compressor = (remat_compressor)9;
    refused("blocks[1].compressor: expected one of none, bool, uint8, bit, sparse, got code 9");
    p.blocks[1].compressor = REMAT_COMP_SPARSE;
    EXPECT_EQ(remat_plan_validate(&p, &m, "<search>", &err), REMAT_OK) << err.msg;
    p.blocks[0].compressor = REMAT_COMP_BOOL;
    refused("blocks[0].compressor: expected \"none\" on block \"b1\", which is not checkpointed");
    p.blocks[0].compressor = REMAT_COMP_NONE;
    p.blocks[2].n_splits = -1;
    refused("blocks[2].splits: expected at most 16 splits, got -1");
    p.blocks[2].n_splits = 0;
    EXPECT_EQ(remat_plan_validate(&p, &m, "<search>", &err), REMAT_OK);
    p.n_blocks = 2;
    refused("blocks: expected 3 block plans (one per block of model \"tiny-3block-if\"), got 2");
    p.n_blocks = 3;
    char *j = remat_plan_to_json(&p, &m, &err);
    ASSERT_NE(j, nullptr) << err.msg;
    EXPECT_STREQ(j,
                 "{\n  \"model\": \"tiny-3block-if\",\n  \"blocks\": [\n"
                 "    {\"name\": \"b2\", \"checkpoint\": true, \"compressor\": \"sparse\", \"k\": 2}\n  ]\n}\n");
    remat_xfree(j);
    remat_plan_free(&p);
}

TEST(PlanValidate, RescaledModelInvalidatesPlans) {
    Model t("tiny-mlp-lif");  // T = 6
    remat_plan p{};
    remat_error err{};
    ASSERT_EQ(remat_plan_load("data/plans/tiny-mlp-lif-ckpt.json", &t.m, &p, &err), REMAT_OK) << err.msg;
    remat_model r{};
    ASSERT_EQ(remat_model_rescale(&t.m, 8, 0, &r, &err), REMAT_OK) << err.msg;
    remat_error e{};
    EXPECT_EQ(remat_plan_validate(&p, &r, "p", &e), REMAT_ERR_INPUT);
    EXPECT_NE(std::string(e.msg).find("p: blocks[0].k: expected a divisor of T = 8, got 3"), std::string::npos) << e.msg;
    remat_model_free(&r);
    remat_plan_free(&p);

    // sparse positions are uint32: a segment input of 2^32 elements or more is refused
    Model big("mlp-lif");  // T = 64, 128 inputs
    Plan sp(big.m, one(R"({"name": "b1", "checkpoint": true, "compressor": "sparse"})"));
    ASSERT_EQ(sp.st, REMAT_OK) << sp.err.msg;
    ASSERT_EQ(remat_model_rescale(&big.m, 0, 1 << 20, &r, &err), REMAT_OK) << err.msg;
    remat_error e2{};
    EXPECT_EQ(remat_plan_validate(&sp.p, &r, "p", &e2), REMAT_ERR_INPUT);
    EXPECT_NE(std::string(e2.msg).find("blocks[0].compressor: expected at most 2^32 - 1 elements for \"sparse\""),
              std::string::npos)
        << e2.msg;
    remat_model_free(&r);
}

TEST(PlanLoad, MissingFileIsIoError) {
    Model t("tiny-mlp-lif");
    remat_plan p{};
    remat_error err{};
    remat_status st = remat_plan_load("data/plans/none-such.json", &t.m, &p, &err);
    EXPECT_EQ(st, REMAT_ERR_IO);
    EXPECT_EQ(remat_status_exit_code(st), 2);
    EXPECT_EQ(std::string(err.msg).rfind("data/plans/none-such.json: ", 0), 0u) << err.msg;
}

}  // namespace

// span: several blocks as one unit; its rules, each with its own message.
TEST(PlanSpan, RulesAndRoundTrip) {
    remat_model m{};
    remat_error err{};
    ASSERT_EQ(remat_model_load("data/models/tiny-mlp-lif.json", &m, &err), REMAT_OK) << err.msg;
    struct Case {
        const char *text, *field;
    } bad[] = {
        {R"({"blocks":[{"name":"b1","span":2}]})", "blocks[0].span"},
        {R"({"blocks":[{"name":"b2","checkpoint":true,"span":3}]})", "blocks[0].span"},
        {R"({"blocks":[{"name":"b1","checkpoint":true,"span":2},{"name":"b2","checkpoint":true}]})", "blocks[1].name"},
        {R"({"blocks":[{"name":"b1","checkpoint":true,"span":0}]})", "blocks[0].span"},
    };
    for (const Case &c : bad) {
        remat_plan p{};
        remat_error e{};
        EXPECT_EQ(remat_plan_parse(c.text, strlen(c.text), "p.json", &m, &p, &e), REMAT_ERR_INPUT) << c.text;
        EXPECT_NE(strstr(e.msg, c.field), nullptr) << e.msg;
        EXPECT_EQ(strncmp(e.msg, "p.json: ", 8), 0) << e.msg;
    }
    const char *good = R"({"blocks":[{"name":"b1","checkpoint":true,"compressor":"bit","k":3,"span":3,"splits":["fc2"]}]})";
    remat_plan p{};
    ASSERT_EQ(remat_plan_parse(good, strlen(good), "p.json", &m, &p, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(p.blocks[0].span, 3);
    char *text = remat_plan_to_json(&p, &m, &err);
    ASSERT_NE(text, nullptr);
    remat_plan q{};
    ASSERT_EQ(remat_plan_parse(text, strlen(text), "again.json", &m, &q, &err), REMAT_OK) << err.msg << text;
    EXPECT_EQ(q.blocks[0].span, 3);
    EXPECT_EQ(q.blocks[0].n_splits, 1);
    remat_xfree(text);
    remat_plan_free(&q);
    remat_plan_free(&p);
    // a span over a block with `add` is a unit (the add reads inside it); a split
    // inside the add's block would cut the add from the block input and is refused
    remat_model r{};
    ASSERT_EQ(remat_model_load("data/models/tiny-resnet-bn.json", &r, &err), REMAT_OK) << err.msg;
    const char *add = R"({"blocks":[{"name":"stem","checkpoint":true,"span":2}]})";
    remat_error e{};
    EXPECT_EQ(remat_plan_parse(add, strlen(add), "p.json", &r, &p, &e), REMAT_OK) << e.msg;
    remat_plan_free(&p);
    const char *cut = R"({"blocks":[{"name":"stem","checkpoint":true,"span":2,"splits":["r1_fc2"]}]})";
    EXPECT_EQ(remat_plan_parse(cut, strlen(cut), "p.json", &r, &p, &e), REMAT_ERR_INPUT);
    EXPECT_NE(strstr(e.msg, "would cut \"r1_add\" (add) from \"stem_drop\""), nullptr) << e.msg;
    remat_model_free(&r);
    remat_model_free(&m);
}
