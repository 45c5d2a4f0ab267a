// executor_test.cc - the determinism contract over plan grids on the small shipped
// models, the bytes each plan saves (measured from the allocator, checked against
// the tensor shapes), that recomputation really happens, and trace consistency.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/exec/backend.h"
#include "core/codec/compress.h"
#include "core/exec/executor.h"
#include "core/model/plan.h"
#include "core/model/plan_grid.h"
#include "core/io/trace.h"
#include "tests/testutil.h"

using remat_test::Model;
using remat_test::StepOutput;

namespace {

// A plan built in memory: every block stored, then options set per block.
struct Plan : remat_test::StoredPlan {
    using StoredPlan::StoredPlan;
    bool valid(const remat_model &m) const {
        remat_error err{};
        return remat_plan_validate(&p, &m, "<test>", &err) == REMAT_OK;
    }
};

// Every option one block can take (validated): stored; checkpointed x compressor x k x
// (no split, one split at each inner layer).
std::vector<remat_block_plan> block_options(const remat_model &m, int b) {
    std::vector<remat_block_plan> out;
    const remat_block &blk = m.blocks[b];
    for (int ck = 0; ck <= 1; ck++)
        for (int c = 0; c < REMAT_COMP_COUNT; c++)
            for (int k = 1; k <= m.T; k++) {
                if (m.T % k) continue;
                for (int sp = -1; sp < blk.n_layers; sp++) {
                    if (sp == 0) continue;
                    if (!ck && (c || k > 1 || sp >= 0)) continue;
                    remat_block_plan o;
                    std::memset(&o, 0, sizeof o);
                    o.checkpoint = ck;
                    o.compressor = (remat_compressor)c;
                    o.k = k;
                    if (sp > 0) {
                        o.n_splits = 1;
                        o.splits[0] = blk.first_layer + sp;
                    }
                    Plan probe(m);
                    probe.blocks[(size_t)b] = o;
                    if (probe.valid(m)) out.push_back(o);
                }
            }
    return out;
}

void expect_same(const StepOutput &base, const StepOutput &got, const std::string &what) {
    uint32_t lb, lg;
    float fb = (float)base.loss, fg = (float)got.loss;
    std::memcpy(&lb, &fb, 4);
    std::memcpy(&lg, &fg, 4);
    EXPECT_EQ(lb, lg) << what << ": loss " << base.loss << " vs " << got.loss;
    ASSERT_EQ(base.grads.size(), got.grads.size());
    for (size_t i = 0; i < base.grads.size(); i++)
        EXPECT_EQ(remat_test::first_difference(base.grads[i], got.grads[i]), -1) << what << ": gradient " << i;
    for (size_t i = 0; i < base.after.size(); i++)
        EXPECT_EQ(remat_test::first_difference(base.after[i], got.after[i]), -1) << what << ": running stat " << i;
    EXPECT_EQ(remat_test::first_difference(base.input_grad, got.input_grad), -1) << what << ": input gradient";
}

// A shipped model name, with "bf16:" in front for the model in bf16 (docs/precision.md):
// the contract holds within each precision.
class GridTest : public ::testing::TestWithParam<const char *> {};

Model grid_model(const std::string &param) {
    if (param.rfind("bf16:", 0) == 0) return Model(param.substr(5), REMAT_PRECISION_BF16);
    return Model(param);
}

// Every block option, one block at a time, and every option on all blocks at once:
// loss, gradients, running statistics and input gradient bit-identical to plain
// backpropagation; every compression decompresses to the original bits.
TEST_P(GridTest, EveryPlanBitIdenticalToBaseline) {
    Model model = grid_model(GetParam());
    const remat_model &m = model.m;
    remat_error err{};
    Plan base(m);
    StepOutput ref;
    ASSERT_TRUE(remat_test::run_step(m, base.p, 7, nullptr, &ref, &err)) << err.msg;
    int plans = 0, checkpointed = 0;
    std::vector<std::vector<remat_block_plan>> opts;
    for (int b = 0; b < m.n_blocks; b++) opts.push_back(block_options(m, b));
    auto check = [&](const Plan &pl, const std::string &name) {
        StepOutput got;
        remat_error e{};
        ASSERT_TRUE(remat_test::run_step(m, pl.p, 7, nullptr, &got, &e)) << name << ": " << e.msg;
        expect_same(ref, got, name);
        EXPECT_EQ(got.res.compression_mismatches, 0) << name;
        EXPECT_EQ(got.res.compressions_checked, got.res.compressions) << name;
        plans++;
        if (got.res.recomputed_layers > 0) checkpointed++;
    };
    for (int b = 0; b < m.n_blocks; b++)
        for (size_t i = 0; i < opts[(size_t)b].size(); i++) {
            Plan pl(m);
            pl.blocks[(size_t)b] = opts[(size_t)b][i];
            check(pl, std::string(GetParam()) + " block " + std::to_string(b) + " option " + std::to_string(i));
        }
    // the same option on every block where it is valid
    for (size_t i = 0; i < opts[0].size(); i++) {
        Plan pl(m);
        for (int b = 0; b < m.n_blocks; b++) {
            remat_block_plan o = opts[0][i];
            if (o.n_splits) o.splits[0] += m.blocks[b].first_layer - m.blocks[0].first_layer;
            pl.blocks[(size_t)b] = o;
        }
        if (pl.valid(m)) check(pl, std::string(GetParam()) + " all blocks option " + std::to_string(i));
    }
    // spans: several blocks recomputed as one unit, chunked along time
    remat_plan_grid spans;
    ASSERT_EQ(remat_plan_grid_spans(&m, &spans, &err), REMAT_OK) << err.msg;
    for (int i = 0; i < spans.n_plans; i++) {
        Plan pl(m);
        for (int b = 0; b < m.n_blocks; b++) pl.blocks[(size_t)b] = spans.plans[i].blocks[b];
        check(pl, std::string(GetParam()) + " " + spans.plans[i].path);
    }
    remat_plan_grid_free(&spans);
    EXPECT_GT(checkpointed, 10) << "the grid must contain recomputing plans";
    RecordProperty("plans", plans);
    printf("%s: %d plans bit-identical (%d recompute)\n", GetParam(), plans, checkpointed);
}

INSTANTIATE_TEST_SUITE_P(Shipped, GridTest, ::testing::Values("tiny-3block-if", "tiny-mlp-lif", "tiny-resnet-bn",
                                                            "tiny-vgg-dvs", "tiny-sew-resnet", "tiny-dvs-options",
                                                            "tiny-shd-conv1d", "tiny-plif"));
INSTANTIATE_TEST_SUITE_P(ShippedBf16, GridTest,
                         ::testing::Values("bf16:tiny-3block-if", "bf16:tiny-mlp-lif", "bf16:tiny-resnet-bn",
                                           "bf16:tiny-vgg-dvs", "bf16:tiny-sew-resnet", "bf16:tiny-dvs-options",
                                           "bf16:tiny-shd-conv1d", "bf16:tiny-plif"));

// Bytes a stored block keeps from forward to backward, from the shapes alone.
int64_t stored_saved_bytes(const remat_model &m, int b) {
    int64_t tn = m.T * m.N * 4, bytes = 0;
    const remat_block &blk = m.blocks[b];
    for (int j = blk.first_layer; j < blk.first_layer + blk.n_layers; j++) {
        const remat_layer &l = m.layers[j];
        if (l.type == REMAT_LAYER_LINEAR) bytes += tn * l.in_features;
        if (l.type == REMAT_LAYER_IF || l.type == REMAT_LAYER_LIF) bytes += tn * l.out_features;
        if (l.type == REMAT_LAYER_BATCHNORM) bytes += tn * l.in_features + 2 * 4 * l.out_features;
    }
    return bytes;
}

// Checkpointing blocks 1.. with the bit compressor: the end-of-forward bytes drop by
// exactly what the stored blocks kept minus the packed inputs, and the peak drops.
TEST(Savings, BitCheckpointSavesExactlyTheStoredActivations) {
    Model model("tiny-3block-if");
    const remat_model &m = model.m;
    remat_error err{};
    Plan base(m), plan(m);
    int64_t expected = 0;
    for (int b = 1; b < m.n_blocks; b++) {
        plan.blocks[(size_t)b].checkpoint = 1;
        plan.blocks[(size_t)b].compressor = REMAT_COMP_BIT;
        int64_t n = m.T * m.N * m.layers[m.blocks[b].first_layer].in_features;
        expected += stored_saved_bytes(m, b) - remat_compressed_bytes(REMAT_COMP_BIT, n, 0);
    }
    ASSERT_TRUE(plan.valid(m));
    StepOutput a, c;
    ASSERT_TRUE(remat_test::run_step(m, base.p, 3, nullptr, &a, &err)) << err.msg;
    ASSERT_TRUE(remat_test::run_step(m, plan.p, 3, nullptr, &c, &err)) << err.msg;
    EXPECT_EQ(a.res.end_of_forward_bytes - c.res.end_of_forward_bytes, expected);
    EXPECT_LT(c.res.peak_live_bytes, a.res.peak_live_bytes);
    EXPECT_GT(c.res.compressed_bytes, 0);
    EXPECT_EQ(c.res.recomputed_layers, (m.n_blocks - 1) * m.blocks[1].n_layers);
    expect_same(a, c, "bit checkpoint");
}

// Time chunks: k chunks recompute each layer of the block k times, keep k-1 boundary
// states per neuron layer, and the recompute ops cover T/k steps each.
TEST(Recompute, ChunksRecomputeEveryLayerOncePerChunk) {
    Model model("tiny-mlp-lif");
    const remat_model &m = model.m;
    remat_error err{};
    const int k = (int)m.T;  // the finest split
    Plan plan(m);
    plan.blocks[1].checkpoint = 1;
    plan.blocks[1].k = k;
    ASSERT_TRUE(plan.valid(m));
    remat_trace tr;
    remat_trace_init(&tr);
    StepOutput out;
    ASSERT_TRUE(remat_test::run_step(m, plan.p, 1, &tr, &out, &err)) << err.msg;
    EXPECT_EQ(out.res.recomputed_layers, m.blocks[1].n_layers * k);
    int recompute_ops = 0;
    for (int64_t i = 0; i < tr.n_ops; i++) {
        const remat_op_record &o = tr.ops[i];
        if (o.phase != REMAT_PHASE_RECOMPUTE) continue;
        if (o.op == REMAT_OP_LINEAR_FWD || o.op == REMAT_OP_NEURON_FWD) {
            recompute_ops++;
            EXPECT_EQ(o.t_steps, m.T / k);
            EXPECT_EQ(o.block, 1);
        }
    }
    EXPECT_EQ(recompute_ops, m.blocks[1].n_layers * k);
    int boundary_states = 0;
    for (int64_t i = 0; i < tr.n_events; i++) {
        const remat_event &e = tr.events[i];
        if (e.kind == REMAT_EVENT_ALLOC && e.role == REMAT_ROLE_NEURON_STATE && e.phase == REMAT_PHASE_FORWARD &&
            e.block == 1)
            boundary_states++;
    }
    int neurons = 0;
    for (int j = m.blocks[1].first_layer; j < m.blocks[1].first_layer + m.blocks[1].n_layers; j++)
        if (m.layers[j].type == REMAT_LAYER_IF || m.layers[j].type == REMAT_LAYER_LIF) neurons++;
    // the working state of each neuron layer plus k-1 boundary snapshots
    EXPECT_EQ(boundary_states, neurons * k);
    remat_trace_free(&tr);
}

int64_t stored_saved_bytes(const remat_model &m, int b);

// Checkpointing along time over the whole network (one span, k chunks) keeps no
// full-T activation or activation gradient between blocks: its peak is below the
// per-block chunked plan's, and the end of forward holds only the boundary states
// beyond what plain backpropagation always holds (parameters, gradients, batch, rate).
TEST(Savings, SpanOverAllBlocksKeepsOnlyBoundaryStates) {
    Model model("tiny-mlp-lif");
    const remat_model &m = model.m;
    remat_error err{};
    const int k = 3;
    Plan per_block(m), span(m), base(m);
    for (int b = 0; b < m.n_blocks; b++) {
        per_block.blocks[(size_t)b].checkpoint = 1;
        per_block.blocks[(size_t)b].k = k;
    }
    span.blocks[0].checkpoint = 1;
    span.blocks[0].k = k;
    span.blocks[0].span = m.n_blocks;
    ASSERT_TRUE(per_block.valid(m));
    ASSERT_TRUE(span.valid(m));
    StepOutput a, b, c;
    ASSERT_TRUE(remat_test::run_step(m, base.p, 2, nullptr, &a, &err)) << err.msg;
    ASSERT_TRUE(remat_test::run_step(m, per_block.p, 2, nullptr, &b, &err)) << err.msg;
    ASSERT_TRUE(remat_test::run_step(m, span.p, 2, nullptr, &c, &err)) << err.msg;
    expect_same(a, c, "span");
    EXPECT_LT(c.res.peak_live_bytes, b.res.peak_live_bytes);
    int64_t states = 0, acts = 0;
    for (int j = 0; j < m.n_layers; j++) {
        const remat_layer &l = m.layers[j];
        if (l.type == REMAT_LAYER_IF || l.type == REMAT_LAYER_LIF) states += (k - 1) * m.N * l.out_features * 4;
    }
    // baseline's end of forward minus every saved activation it holds
    for (int bl = 0; bl < m.n_blocks; bl++) acts += stored_saved_bytes(m, bl);
    // block 0's saved input is the batch, which stays in both
    acts -= m.T * m.N * m.layers[0].in_features * 4;
    EXPECT_EQ(c.res.end_of_forward_bytes, a.res.end_of_forward_bytes - acts + states);
    EXPECT_EQ(c.res.recomputed_layers, m.n_layers * k);
}

// Replaying the events reproduces the measured peak; every tensor is freed; a free
// repeats its alloc's bytes.
TEST(Trace, EventsReplayToTheMeasuredPeak) {
    Model model("tiny-resnet-bn");
    const remat_model &m = model.m;
    remat_error err{};
    Plan plan(m);
    plan.blocks[1].checkpoint = 1;
    remat_trace tr;
    remat_trace_init(&tr);
    remat_backend be{};
    ASSERT_EQ(remat_backend_ref_init(&be, 1, &err), REMAT_OK);
    remat_exec_opts o = remat_exec_opts_default();
    o.trace = &tr;
    remat_step_result r[2];
    ASSERT_EQ(remat_exec_run(&m, &plan.p, &be, &o, 2, r, &err), REMAT_OK) << err.msg;
    remat_backend_free(&be);
    ASSERT_EQ(tr.n_iters, 2);
    std::map<int64_t, int64_t> live;
    int64_t bytes = 0, peak = 0;
    int it = -1;
    auto apply = [&](const remat_event &e) {
        if (e.kind == REMAT_EVENT_ALLOC) {
            ASSERT_EQ(live.count(e.tensor), 0u) << "tensor " << e.tensor << " allocated twice";
            live[e.tensor] = e.bytes;
            bytes += e.bytes;
        } else {
            ASSERT_EQ(live.count(e.tensor), 1u) << "tensor " << e.tensor << " freed while not live";
            ASSERT_EQ(live[e.tensor], e.bytes) << "free repeats its alloc's bytes";
            live.erase(e.tensor);
            bytes -= e.bytes;
        }
    };
    for (int64_t i = 0; i < tr.n_events; i++) {
        const remat_event &e = tr.events[i];
        if (it + 1 < tr.n_iters && i == tr.iters[it + 1].first_event) {
            if (it >= 0) {
                EXPECT_EQ(peak, r[it].peak_live_bytes) << "iteration " << it;
            }
            it++;
            peak = 0;
        }
        apply(e);
        if (it >= 0 && i < tr.iters[it].first_event + tr.iters[it].n_events && bytes > peak) peak = bytes;
    }
    EXPECT_EQ(peak, r[1].peak_live_bytes) << "iteration 1";
    EXPECT_TRUE(live.empty()) << live.size() << " tensors never freed";
    EXPECT_EQ(bytes, 0);
    remat_trace_free(&tr);
}

// The GEMMs split work over output elements only: 1 and 2 threads agree bit for bit.
TEST(Determinism, ThreadCountDoesNotChangeBits) {
    Model model("tiny-3block-if");
    remat_error err{};
    Plan base(model.m);
    StepOutput a, b;
    ASSERT_TRUE(remat_test::run_step(model.m, base.p, 5, nullptr, &a, &err, REMAT_FAULT_NONE, 1)) << err.msg;
    ASSERT_TRUE(remat_test::run_step(model.m, base.p, 5, nullptr, &b, &err, REMAT_FAULT_NONE, 2)) << err.msg;
    expect_same(a, b, "2 threads");
}

// Each deliberate break of the contract changes some bit of the result.
TEST(Faults, EveryFaultIsVisibleInTheGradients) {
    remat_error err{};
    struct Case {
        const char *model;
        remat_fault fault;
        int block, k;
        remat_compressor comp;
    } cases[] = {
        {"tiny-mlp-lif", REMAT_FAULT_REORDER_WGRAD, 1, 2, REMAT_COMP_NONE},
        {"tiny-mlp-lif", REMAT_FAULT_LOSSY_COMPRESS, 1, 1, REMAT_COMP_BIT},
    };
    for (const Case &c : cases) {
        Model model(c.model);
        Plan base(model.m), plan(model.m);
        plan.blocks[(size_t)c.block].checkpoint = 1;
        plan.blocks[(size_t)c.block].k = c.k;
        plan.blocks[(size_t)c.block].compressor = c.comp;
        ASSERT_TRUE(plan.valid(model.m));
        StepOutput a, b;
        ASSERT_TRUE(remat_test::run_step(model.m, base.p, 5, nullptr, &a, &err)) << err.msg;
        ASSERT_TRUE(remat_test::run_step(model.m, plan.p, 5, nullptr, &b, &err, c.fault)) << err.msg;
        bool differs = remat_test::first_difference(a.input_grad, b.input_grad) >= 0;
        for (size_t i = 0; i < a.grads.size(); i++)
            differs = differs || remat_test::first_difference(a.grads[i], b.grads[i]) >= 0;
        EXPECT_TRUE(differs) << "fault " << (int)c.fault << " went unnoticed";
    }
}

}  // namespace

namespace {

// Without the network input's gradient the step holds one [T, N, C] buffer less,
// and every parameter gradient is unchanged, bit for bit.
TEST(InputGrad, SkippingItSavesItsBytesAndChangesNoGradient) {
    Model model("tiny-mlp-lif");
    const remat_model &m = model.m;
    remat_error err{};
    Plan plan(m);
    plan.blocks[0].checkpoint = 1;
    plan.blocks[0].k = 3;
    plan.blocks[0].span = m.n_blocks;
    ASSERT_TRUE(plan.valid(m));
    Plan empty(m);
    for (int with_plan = 0; with_plan < 2; with_plan++) {
        const remat_plan &p = with_plan ? plan.p : empty.p;
        remat_backend be{};
        ASSERT_EQ(remat_backend_ref_init(&be, 1, &err), REMAT_OK);
        remat_step_result r[2];
        std::vector<std::vector<float>> g[2];
        for (int skip = 0; skip < 2; skip++) {
            remat_exec_opts o = remat_exec_opts_default();
            o.no_input_grad = skip;
            remat_session *s = remat_session_init(&m, &p, &be, &o, &err);
            ASSERT_NE(s, nullptr) << err.msg;
            ASSERT_EQ(remat_session_step(s, 0, &r[skip], &err), REMAT_OK) << err.msg;
            for (int j = 0; j < m.n_layers; j++)
                for (int i = 0; i < remat_layer_n_params(&m.layers[j]); i++) {
                    std::vector<float> v((size_t)remat_layer_param_elems(&m.layers[j], i));
                    ASSERT_EQ(remat_session_get_grad(s, j, i, v.data(), &err), REMAT_OK) << err.msg;
                    g[skip].push_back(v);
                }
            std::vector<float> in((size_t)(m.T * m.N * m.in_features));
            remat_error e{};
            EXPECT_EQ(remat_session_get_input_grad(s, in.data(), &e) == REMAT_OK, skip == 0);
            remat_session_free(s);
        }
        remat_backend_free(&be);
        int64_t input_grad_bytes = m.T * m.N * m.in_features * 4;
        EXPECT_EQ(r[0].events - r[1].events, 1) << "one alloc fewer (its free falls in the next step)";
        EXPECT_LE(r[1].peak_live_bytes, r[0].peak_live_bytes);
        EXPECT_GE(r[0].peak_live_bytes - r[1].peak_live_bytes, with_plan ? input_grad_bytes : 0);
        ASSERT_EQ(g[0].size(), g[1].size());
        for (size_t i = 0; i < g[0].size(); i++)
            EXPECT_EQ(std::memcmp(g[0][i].data(), g[1][i].data(), g[0][i].size() * 4), 0) << "gradient " << i;
    }
}

}  // namespace
