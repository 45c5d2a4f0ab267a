// plan_grid_test.cc - the option and plan enumerations of core/plan_grid: exact
// option lists for the tiny models, every grid plan valid and distinct, seeded
// sampling reproducible.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "core/model/plan_grid.h"
#include "core/model/plan_notation.h"
#include "tests/testutil.h"

namespace {

using remat_test::Model;

std::vector<std::string> option_labels(const remat_model &m, const char *block) {
    remat_block_plan *opts = nullptr;
    int n = 0;
    remat_error err{};
    int b = remat_model_find_block(&m, block);
    EXPECT_EQ(remat_plan_grid_block_options(&m, b, &opts, &n, &err), REMAT_OK) << err.msg;
    std::vector<std::string> out;
    for (int i = 0; i < n; i++) {
        char buf[256];
        out.push_back(remat_plan_grid_option_label(&m, b, &opts[i], buf, sizeof buf));
    }
    remat_xfree(opts);
    return out;
}

TEST(PlanGridOptions, TinyResnetExactLists) {
    Model t("tiny-resnet-bn");  // T = 4
    // head: input INTEGER (none, uint8); splits after dropout p>0 / linear see REAL values
    std::vector<std::string> head = {
        "no checkpointing",
        "head", "head/split@head_fc", "head/split@head_lif",
        "head/k2", "head/k2/split@head_fc", "head/k2/split@head_lif",
        "head/k4", "head/k4/split@head_fc", "head/k4/split@head_lif",
        "head:uint8", "head:uint8/k2", "head:uint8/k4"};
    EXPECT_EQ(option_labels(t.m, "head"), head);
    // res1: batch norm (k = 1 only), ends in add (no splits), spike input (every compressor)
    std::vector<std::string> res1 = {"no checkpointing", "res1", "res1:bool", "res1:uint8", "res1:bit",
                                     "res1:sparse"};
    EXPECT_EQ(option_labels(t.m, "res1"), res1);
    std::vector<std::string> res2 = {"no checkpointing", "res2", "res2:uint8"};
    EXPECT_EQ(option_labels(t.m, "res2"), res2);
    EXPECT_EQ(option_labels(t.m, "stem").size(), 10u);  // analog input: none x k{1,2,4} x {-, stem_lif, stem_drop}
    remat_error err{};
    EXPECT_EQ(remat_plan_grid_product_size(&t.m, &err), 10 * 6 * 3 * 13);
}

TEST(PlanGridOptions, TinyMlpAllDivisorsOfT) {
    Model t("tiny-mlp-lif");  // T = 6, spike input
    std::vector<std::string> b1 = option_labels(t.m, "b1");
    ASSERT_EQ(b1.size(), 25u);  // stored + 4 k x (5 compressors + split:lif1 with none)
    std::set<std::string> s(b1.begin(), b1.end());
    for (const char *want : {"b1:bit/k3", "b1:sparse/k6", "b1/k2/split@lif1", "b1:bool"})
        EXPECT_TRUE(s.count(want)) << want;
    EXPECT_FALSE(s.count("b1:bit/split@lif1"));
    EXPECT_FALSE(s.count("b1/k4"));
}

TEST(PlanGridOptions, BadBlockIndex) {
    Model t("tiny-mlp-lif");
    remat_block_plan *opts = nullptr;
    int n = 7;
    remat_error err{};
    EXPECT_EQ(remat_plan_grid_block_options(&t.m, 3, &opts, &n, &err), REMAT_ERR_INPUT);
    EXPECT_EQ(opts, nullptr);
    EXPECT_EQ(n, 0);
    EXPECT_NE(std::string(err.msg).find("expected an index in [0, 3), got 3"), std::string::npos) << err.msg;
}

// Every plan valid, distinct, its text re-parses to the same plan.
void check_grid(const remat_model &m, const remat_plan_grid &g) {
    std::set<std::string> labels, texts;
    for (int i = 0; i < g.n_plans; i++) {
        const remat_plan &p = g.plans[i];
        remat_error err{};
        EXPECT_EQ(remat_plan_validate(&p, &m, p.path, &err), REMAT_OK) << p.path << ": " << err.msg;
        // the label is the plan notation, and reads back as the same plan
        remat_plan fromlabel{};
        ASSERT_EQ(remat_plan_parse_notation(p.path, "label", &m, &fromlabel, &err), REMAT_OK) << p.path << err.msg;
        EXPECT_STREQ(fromlabel.path, p.path);
        EXPECT_STREQ(fromlabel.text, p.blocks && remat_plan_is_empty(&p) ? "" : p.text);
        remat_plan_free(&fromlabel);
        EXPECT_TRUE(labels.insert(p.path).second) << "duplicate " << p.path;
        EXPECT_TRUE(texts.insert(p.text).second) << "duplicate text " << p.text;
        remat_plan back{};
        ASSERT_EQ(remat_plan_parse(p.text, strlen(p.text), p.path, &m, &back, &err), REMAT_OK) << err.msg;
        for (int b = 0; b < m.n_blocks; b++) {
            EXPECT_EQ(back.blocks[b].checkpoint, p.blocks[b].checkpoint);
            EXPECT_EQ(back.blocks[b].compressor, p.blocks[b].compressor);
            EXPECT_EQ(back.blocks[b].k, p.blocks[b].k);
            ASSERT_EQ(back.blocks[b].n_splits, p.blocks[b].n_splits);
            for (int s = 0; s < p.blocks[b].n_splits; s++) EXPECT_EQ(back.blocks[b].splits[s], p.blocks[b].splits[s]);
        }
        remat_plan_free(&back);
    }
}

TEST(PlanGrid, OneBlockVaries) {
    Model t("tiny-resnet-bn");
    size_t live0 = remat_xmem_live();
    remat_plan_grid g{};
    remat_error err{};
    ASSERT_EQ(remat_plan_grid_one_block(&t.m, &g, &err), REMAT_OK) << err.msg;
    ASSERT_EQ(g.n_plans, 1 + 9 + 5 + 2 + 12);
    EXPECT_STREQ(g.plans[0].path, "no checkpointing");
    EXPECT_EQ(remat_plan_is_empty(&g.plans[0]), 1);
    for (int i = 1; i < g.n_plans; i++) {
        int ck = 0;
        for (int b = 0; b < t.m.n_blocks; b++) ck += g.plans[i].blocks[b].checkpoint;
        EXPECT_EQ(ck, 1) << g.plans[i].path;
    }
    EXPECT_STREQ(g.plans[1].path, "stem");
    EXPECT_STREQ(g.plans[g.n_plans - 1].path, "head:uint8/k4");
    check_grid(t.m, g);
    remat_plan_grid_free(&g);
    EXPECT_EQ(g.plans, nullptr);
    EXPECT_EQ(remat_xmem_live(), live0);
}

// Span plans grow as blocks^2; the search takes an evenly spaced subset of them.
TEST(PlanGrid, SpansSampledEvenlyUpToTheLimit) {
    Model t("tiny-resnet-bn");
    remat_error err{};
    remat_plan_grid all{}, some{};
    ASSERT_EQ(remat_plan_grid_spans(&t.m, &all, &err), REMAT_OK) << err.msg;
    int64_t divisors = 0;
    for (int64_t k = 1; k <= t.m.T; k++) divisors += t.m.T % k == 0;
    const int64_t n = t.m.n_blocks;
    EXPECT_EQ(remat_plan_grid_span_candidates(&t.m), (n - 1) * n / 2 * REMAT_COMP_COUNT * divisors);
    EXPECT_LE(all.n_plans, remat_plan_grid_span_candidates(&t.m));
    ASSERT_GT(all.n_plans, 6);
    ASSERT_EQ(remat_plan_grid_spans_sampled(&t.m, 6, &some, &err), REMAT_OK) << err.msg;
    EXPECT_GE(some.n_plans, 1);
    EXPECT_LE(some.n_plans, 6);
    // each sampled plan is one of the full list
    for (int i = 0; i < some.n_plans; i++) {
        int found = 0;
        for (int j = 0; j < all.n_plans && !found; j++) found = !strcmp(some.plans[i].path, all.plans[j].path);
        EXPECT_TRUE(found) << some.plans[i].path;
    }
    check_grid(t.m, some);
    remat_plan_grid_free(&some);
    ASSERT_EQ(remat_plan_grid_spans_sampled(&t.m, 0, &some, &err), REMAT_OK);
    EXPECT_EQ(some.n_plans, all.n_plans);
    remat_plan_grid_free(&some);
    remat_plan_grid_free(&all);
}

TEST(PlanGrid, UniformShapes) {
    Model t("tiny-resnet-bn");
    remat_plan_grid g{};
    remat_error err{};
    ASSERT_EQ(remat_plan_grid_uniform(&t.m, &g, &err), REMAT_OK) << err.msg;
    std::vector<std::string> labels;
    for (int i = 0; i < g.n_plans; i++) labels.push_back(g.plans[i].path);
    std::vector<std::string> want = {
        "stem,res1,res2,head",
        "stem/k2,head/k2",
        "stem/k4,head/k4",
        "res1:bool",
        "res1:uint8,res2:uint8,head:uint8",
        "head:uint8/k2",
        "head:uint8/k4",
        "res1:bit",
        "res1:sparse",
    };
    EXPECT_EQ(labels, want);
    check_grid(t.m, g);
    remat_plan_grid_free(&g);
}

TEST(PlanGrid, RandomSeededAndDistinct) {
    Model t("tiny-resnet-bn");
    remat_plan_grid a{}, b{}, c{};
    remat_error err{};
    ASSERT_EQ(remat_plan_grid_random(&t.m, 42, 40, &a, &err), REMAT_OK) << err.msg;
    ASSERT_EQ(remat_plan_grid_random(&t.m, 42, 40, &b, &err), REMAT_OK) << err.msg;
    ASSERT_EQ(remat_plan_grid_random(&t.m, 43, 40, &c, &err), REMAT_OK) << err.msg;
    ASSERT_EQ(a.n_plans, 40);
    ASSERT_EQ(c.n_plans, 40);
    int same_as_other_seed = 0, with_split = 0, with_k = 0, multi = 0;
    for (int i = 0; i < 40; i++) {
        EXPECT_STREQ(a.plans[i].path, b.plans[i].path);
        same_as_other_seed += !strcmp(a.plans[i].path, c.plans[i].path);
        int ck = 0;
        for (int k = 0; k < t.m.n_blocks; k++) {
            with_split += a.plans[i].blocks[k].n_splits > 0;
            with_k += a.plans[i].blocks[k].k > 1;
            ck += a.plans[i].blocks[k].checkpoint;
        }
        multi += ck > 1;
    }
    EXPECT_LT(same_as_other_seed, 5);
    EXPECT_GT(with_split, 0);
    EXPECT_GT(with_k, 0);
    EXPECT_GT(multi, 0);
    check_grid(t.m, a);
    remat_plan_grid_free(&a);
    remat_plan_grid_free(&b);
    remat_plan_grid_free(&c);
}

TEST(PlanGrid, RandomLargerThanProductGivesWholeProduct) {
    Model t("tiny-mlp-lif");  // 25 x b2 x b3 options
    remat_error err{};
    int64_t product = remat_plan_grid_product_size(&t.m, &err);
    ASSERT_GT(product, 100);
    ASSERT_LT(product, 100000);
    remat_plan_grid g{};
    ASSERT_EQ(remat_plan_grid_random(&t.m, 1, (int)product + 10, &g, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(g.n_plans, product);
    EXPECT_STREQ(g.plans[0].path, "no checkpointing");
    std::set<std::string> labels;
    for (int i = 0; i < g.n_plans; i++) labels.insert(g.plans[i].path);
    EXPECT_EQ((int64_t)labels.size(), product);
    remat_plan_grid_free(&g);
    remat_plan_grid z{};
    ASSERT_EQ(remat_plan_grid_random(&t.m, 1, 0, &z, &err), REMAT_OK);
    EXPECT_EQ(z.n_plans, 0);
    remat_error neg{};
    EXPECT_EQ(remat_plan_grid_random(&t.m, 1, -1, &z, &neg), REMAT_ERR_INPUT);
}

TEST(PlanGrid, ShippedModelsOneBlockGridsValid) {
    for (const char *name : {"tiny-3block-if", "tiny-mlp-lif", "3block-if", "mlp-lif", "resnet-bn"}) {
        Model t(name);
        remat_plan_grid g{};
        remat_error err{};
        ASSERT_EQ(remat_plan_grid_one_block(&t.m, &g, &err), REMAT_OK) << name << ": " << err.msg;
        EXPECT_GT(g.n_plans, t.m.n_blocks) << name;
        for (int i = 0; i < g.n_plans; i++) {
            remat_error e{};
            EXPECT_EQ(remat_plan_validate(&g.plans[i], &t.m, g.plans[i].path, &e), REMAT_OK) << e.msg;
        }
        remat_plan_grid_free(&g);
    }
}

}  // namespace
