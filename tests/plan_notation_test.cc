// plan_notation_test.cc - the one plan notation (core/model/plan_notation.h): every
// plan of every shipped tiny model's grids prints and parses back to the same plan;
// the examples of the docs read as documented; bad entries are refused in one line.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "core/model/plan.h"
#include "core/model/plan_grid.h"
#include "core/model/plan_notation.h"
#include "tests/testutil.h"

namespace {

using remat_test::Model;

std::string notation(const remat_plan &p, const remat_model &m) {
    size_t n = remat_plan_notation(&p, &m, nullptr, 0);
    std::string s(n + 1, '\0');
    EXPECT_EQ(remat_plan_notation(&p, &m, &s[0], n + 1), n);
    s.resize(n);
    return s;
}

void expect_same(const remat_plan &a, const remat_plan &b, const remat_model &m) {
    for (int i = 0; i < m.n_blocks; i++) {
        const remat_block_plan &x = a.blocks[i], &y = b.blocks[i];
        EXPECT_EQ(x.checkpoint, y.checkpoint) << m.blocks[i].name;
        EXPECT_EQ(x.compressor, y.compressor) << m.blocks[i].name;
        EXPECT_EQ(x.k, y.k) << m.blocks[i].name;
        EXPECT_EQ(x.span > 1 ? x.span : 1, y.span > 1 ? y.span : 1) << m.blocks[i].name;
        ASSERT_EQ(x.n_splits, y.n_splits) << m.blocks[i].name;
        for (int s = 0; s < x.n_splits; s++) EXPECT_EQ(x.splits[s], y.splits[s]);
    }
}

TEST(PlanNotation, EveryGridPlanRoundTrips) {
    for (const char *name : {"tiny-mlp-lif", "tiny-3block-if", "tiny-resnet-bn"}) {
        Model t(name);
        remat_plan_grid g{};
        remat_error err{};
        ASSERT_EQ(remat_plan_grid_random(&t.m, 7, 400, &g, &err), REMAT_OK) << err.msg;
        for (int i = 0; i < g.n_plans; i++) {
            std::string s = notation(g.plans[i], t.m);
            remat_plan back{};
            ASSERT_EQ(remat_plan_parse_notation(s.c_str(), "--plan", &t.m, &back, &err), REMAT_OK) << s << ": "
                                                                                                   << err.msg;
            expect_same(g.plans[i], back, t.m);
            EXPECT_EQ(std::string(back.path), s);
            // the plan file it records parses back to the same plan too
            if (!remat_plan_is_empty(&back)) {
                remat_plan fromtext{};
                ASSERT_EQ(remat_plan_parse(back.text, strlen(back.text), "t", &t.m, &fromtext, &err), REMAT_OK);
                expect_same(back, fromtext, t.m);
                remat_plan_free(&fromtext);
            }
            remat_plan_free(&back);
        }
        remat_plan_grid_free(&g);
    }
}

TEST(PlanNotation, DocumentedExamples) {
    Model t("tiny-mlp-lif");  // blocks b1, b2, b3; T = 6
    remat_plan p{};
    remat_error err{};
    ASSERT_EQ(remat_plan_parse_notation("b1:bit/k2,b2", "--plan", &t.m, &p, &err), REMAT_OK) << err.msg;
    EXPECT_TRUE(p.blocks[0].checkpoint);
    EXPECT_EQ(p.blocks[0].compressor, REMAT_COMP_BIT);
    EXPECT_EQ(p.blocks[0].k, 2);
    EXPECT_TRUE(p.blocks[1].checkpoint);
    EXPECT_EQ(p.blocks[1].compressor, REMAT_COMP_NONE);
    EXPECT_EQ(p.blocks[1].k, 1);
    EXPECT_EQ(notation(p, t.m), "b1:bit/k2,b2");
    remat_plan_free(&p);
    // options in any order, compressor "none" spelled out: printed in the canonical order
    ASSERT_EQ(remat_plan_parse_notation("b1/split@lif1:none", "--plan", &t.m, &p, &err), REMAT_ERR_INPUT);
    err = {};
    ASSERT_EQ(remat_plan_parse_notation("b2/k3,b1:none/split@lif1", "--plan", &t.m, &p, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(notation(p, t.m), "b1/split@lif1,b2/k3");
    remat_plan_free(&p);
    // the baseline
    ASSERT_EQ(remat_plan_parse_notation("no checkpointing", "--plan", &t.m, &p, &err), REMAT_OK) << err.msg;
    EXPECT_TRUE(remat_plan_is_empty(&p));
    EXPECT_STREQ(p.text, "");
    EXPECT_EQ(notation(p, t.m), "no checkpointing");
    remat_plan_free(&p);
}

TEST(PlanNotation, RefusedInOneLine) {
    Model t("tiny-mlp-lif");
    struct Case {
        const char *text, *needle;
    } cases[] = {
        {"", "expected BLOCK[:compressor]"},
        {"b9", "'b9': expected a block of model \"tiny-mlp-lif\" (b1, b2, b3)"},
        {"b1,b1", "'b1': expected each block once"},
        {"b1:zip", "'b1:zip': expected a compressor after ':'"},
        {"b1/k", "expected options /kN, /spanN"},
        {"b1/k2/k3", "expected options /kN, /spanN (each once)"},
        {"b1/split@nope", "expected a layer of the model after /split@"},
        {"b1,", "an entry after the last ','"},
        {",b1", "no empty entry"},
        {"b1/k4", "k: expected"},  // 4 does not divide T = 6: the plan rules, as for a file
        {"b1 b2", "expected a block"},
    };
    for (const Case &c : cases) {
        remat_plan p{};
        remat_error err{};
        EXPECT_EQ(remat_plan_parse_notation(c.text, "--plan", &t.m, &p, &err), REMAT_ERR_INPUT) << c.text;
        EXPECT_NE(std::string(err.msg).find(c.needle), std::string::npos) << c.text << ": " << err.msg;
        EXPECT_EQ(std::string(err.msg).find('\n'), std::string::npos) << err.msg;
        EXPECT_EQ(std::string(err.msg).rfind("--plan: ", 0), 0u) << err.msg;
    }
}

TEST(PlanNotation, CutShortEndsInDots) {
    Model t("tiny-mlp-lif");
    remat_plan p{};
    remat_error err{};
    ASSERT_EQ(remat_plan_parse_notation("b1:bit/k2,b2:bit/k3", "--plan", &t.m, &p, &err), REMAT_OK) << err.msg;
    char buf[12];
    EXPECT_EQ(remat_plan_notation(&p, &t.m, buf, sizeof buf), strlen("b1:bit/k2,b2:bit/k3"));
    EXPECT_STREQ(buf, "b1:bit/k...");
    remat_plan_free(&p);
}

}  // namespace
