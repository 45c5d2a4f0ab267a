// span_search_test.cc - checkpointing along time in the budget search: span plans
// reach budgets that per-block options cannot, the chosen plan fits when simulated
// and when run for real, and it is bit-identical to plain backpropagation.
#include <gtest/gtest.h>

#include <cstring>

#include "core/exec/backend.h"
#include "core/exec/executor.h"
#include "sim/search.h"
#include "sim/sim.h"
#include "sim/span_search.h"
#include "tests/testutil.h"

namespace {

TEST(SpanSearch, ReachesBudgetsPerBlockOptionsCannot) {
    remat_test::Model model("tiny-mlp-lif");
    const remat_model &m = model.m;
    remat_error err{};
    // the baseline trace
    remat_trace base;
    remat_trace_init(&base);
    remat_plan empty;
    ASSERT_EQ(remat_plan_init_empty(&m, &empty, &err), REMAT_OK);
    {
        remat_backend be{};
        ASSERT_EQ(remat_backend_ref_init(&be, 1, &err), REMAT_OK);
        remat_exec_opts o = remat_exec_opts_default();
        o.seed = 3;
        o.trace = &base;
        remat_step_result r1;
        ASSERT_EQ(remat_exec_run(&m, &empty, &be, &o, 1, &r1, &err), REMAT_OK) << err.msg;
        remat_backend_free(&be);
    }
    remat_test::StepOutput ref;
    ASSERT_TRUE(remat_test::run_step(m, empty, 3, nullptr, &ref, &err)) << err.msg;
    remat_sim_opts so = remat_sim_opts_default();
    remat_sim *s = remat_sim_init(&base, &so, &err);
    ASSERT_NE(s, nullptr) << err.msg;

    // the smallest peak per-block options reach
    remat_search_budget_opts bo = remat_search_budget_opts_default();
    remat_search_budget_result plain{};
    ASSERT_EQ(remat_search_budget(s, 1, &bo, &plain, &err), REMAT_OK) << err.msg;
    ASSERT_FALSE(plain.found);
    int64_t per_block_min = plain.min_peak;
    remat_search_budget_result_free(&plain);

    // one byte under it: only a span can fit
    remat_search_budget_result r{};
    ASSERT_EQ(remat_search_budget_spans(s, per_block_min - 1, &bo, &r, &err), REMAT_OK) << err.msg;
    ASSERT_TRUE(r.found) << "no span plan under " << per_block_min - 1;
    int spans = 0;
    for (int b = 0; b < m.n_blocks; b++) spans += r.plan.blocks[b].span > 1;
    EXPECT_EQ(spans, 1);
    EXPECT_LE(r.fig.peak, per_block_min - 1);
    int chosen = 0;
    for (int i = 0; i < r.n_front; i++) chosen += r.front[i].chosen;
    EXPECT_EQ(chosen, 1) << "the chosen plan is marked on the front";

    // real run: the measured peak is the predicted one, the gradients the baseline's
    {
        remat_backend be{};
        ASSERT_EQ(remat_backend_ref_init(&be, 1, &err), REMAT_OK);
        remat_exec_opts o = remat_exec_opts_default();
        o.seed = 3;
        remat_step_result r1;
        ASSERT_EQ(remat_exec_run(&m, &r.plan, &be, &o, 1, &r1, &err), REMAT_OK) << err.msg;
        EXPECT_EQ(r1.peak_live_bytes, r.fig.peak_live);
        remat_backend_free(&be);
    }
    remat_test::StepOutput got;
    remat_trace tr;
    remat_trace_init(&tr);
    ASSERT_TRUE(remat_test::run_step(m, r.plan, 3, &tr, &got, &err)) << err.msg;
    EXPECT_EQ(remat_test::first_difference(ref.input_grad, got.input_grad), -1);
    for (size_t i = 0; i < ref.grads.size(); i++) EXPECT_EQ(remat_test::first_difference(ref.grads[i], got.grads[i]), -1);
    remat_trace_free(&tr);
    remat_search_budget_result_free(&r);
    remat_sim_free(s);
    remat_plan_free(&empty);
    remat_trace_free(&base);
}

}  // namespace
