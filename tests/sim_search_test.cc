// sim_search_test.cc - the simulator's parts and its searches: the event queue and
// the copy-stream schedule, the op-cost model, the chain dynamic programme against
// brute force (synthetic chains and every plan of a shipped model, simulated),
// the greedy levels, the budget search (fits, optimal, infeasible), and tune.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/exec/executor.h"
#include "core/io/trace.h"
#include "sim/chain.h"
#include "sim/des.h"
#include "sim/op_cost.h"
#include "sim/search.h"
#include "sim/sim.h"
#include "sim/tune.h"

namespace {

struct Trace {
    remat_trace t;
    Trace() { remat_trace_init(&t); }
    ~Trace() { remat_trace_free(&t); }
};

// A baseline of a shipped model recorded on the reference backend.
struct Baseline {
    remat_model m{};
    Trace base;
    remat_sim *sim = nullptr;
    Baseline(const std::string &name, int iters, remat_alloc_kind kind = REMAT_ALLOC_EXACT) {
        remat_error err{};
        std::string path = "data/models/" + name + ".json";
        if (remat_model_load(path.c_str(), &m, &err) != REMAT_OK) {
            ADD_FAILURE() << err.msg;
            return;
        }
        remat_plan empty;
        remat_plan_init_empty(&m, &empty, &err);
        remat_backend be{};
        remat_backend_ref_init(&be, 1, &err);
        remat_exec_opts o = remat_exec_opts_default();
        o.seed = 3;
        o.trace = &base.t;
        if (remat_exec_run(&m, &empty, &be, &o, iters, nullptr, &err) != REMAT_OK) ADD_FAILURE() << err.msg;
        remat_backend_free(&be);
        remat_plan_free(&empty);
        remat_sim_opts so = remat_sim_opts_default();
        so.allocator = kind;
        sim = remat_sim_init(&base.t, &so, &err);
        if (!sim) ADD_FAILURE() << err.msg;
    }
    ~Baseline() {
        remat_sim_free(sim);
        remat_model_free(&m);
    }
};

// ---- event queue ----------------------------------------------------------------

TEST(DesQueue, PopsInTimeThenSeqOrder) {
    remat_des_queue q;
    remat_des_queue_init(&q);
    std::mt19937_64 rng(7);
    std::vector<std::pair<double, int64_t>> ref;
    for (int64_t i = 0; i < 5000; i++) {
        double t = (double)(rng() % 50); // many ties
        ref.push_back({t, i});
        ASSERT_EQ(remat_des_queue_push(&q, t, i, nullptr), REMAT_OK);
    }
    std::sort(ref.begin(), ref.end());
    remat_des_item it;
    for (const auto &r : ref) {
        ASSERT_TRUE(remat_des_queue_pop(&q, &it));
        EXPECT_EQ(it.time, r.first);
        EXPECT_EQ(it.seq, r.second);
    }
    EXPECT_FALSE(remat_des_queue_pop(&q, &it));
    remat_des_queue_free(&q);
}

// A hand-made program: compute op, compress (1 s) with a free after it, compute op.
TEST(DesSchedule, CopyStreamOverlapsCompressionAndDelaysFrees) {
    Trace t;
    remat_error err{};
    auto op = [&](double a, double b, remat_op_kind k) {
        remat_op_record r{};
        r.t_start = a;
        r.t_end = b;
        r.op = (uint8_t)k;
        r.phase = REMAT_PHASE_FORWARD;
        remat_trace_add_op(&t.t, &r, &err);
    };
    auto ev = [&](double time, int64_t id, int64_t bytes, remat_event_kind k) {
        remat_event e{};
        e.time_s = time;
        e.tensor = id;
        e.bytes = bytes;
        e.kind = (uint8_t)k;
        e.phase = REMAT_PHASE_FORWARD;
        remat_trace_add_event(&t.t, &e, &err);
    };
    ev(0, 0, 100, REMAT_EVENT_ALLOC);           // input
    op(0, 2, REMAT_OP_LINEAR_FWD);              // 2 s of compute
    ev(2, 1, 10, REMAT_EVENT_ALLOC);            // compressed buffer
    op(2, 3, REMAT_OP_COMPRESS);                // 1 s
    ev(3, 0, 100, REMAT_EVENT_FREE);            // input freed after compression
    ev(3, 2, 100, REMAT_EVENT_ALLOC);           // next activation
    op(3, 5, REMAT_OP_LINEAR_FWD);              // 2 s
    remat_iter_summary is{};
    is.first_event = 0;
    is.n_events = t.t.n_events;
    remat_trace_add_iter(&t.t, &is, &err);

    remat_des_schedule_result one{}, two{};
    ASSERT_EQ(remat_des_schedule(&t.t, 0, &one, &err), REMAT_OK);
    ASSERT_EQ(remat_des_schedule(&t.t, 1, &two, &err), REMAT_OK);
    EXPECT_DOUBLE_EQ(one.iter_time[0], 5.0);
    EXPECT_DOUBLE_EQ(two.iter_time[0], 4.0); // compress hidden behind the second op
    EXPECT_DOUBLE_EQ(two.stream_busy[REMAT_DES_STREAM_COPY], 1.0);
    EXPECT_EQ(two.delayed_frees, 1);
    EXPECT_DOUBLE_EQ(two.event_time[3], 2.0);  // the alloc of the next activation: issued at once
    EXPECT_DOUBLE_EQ(two.event_time[2], 3.0);  // the free: when the copy stream is done

    // replayed in recorded order the input is freed before the activation appears;
    // with the copy stream both are live together.
    remat_des_replay_opts ro = remat_des_replay_opts_default();
    remat_des_iter_peaks pk;
    ASSERT_EQ(remat_des_replay(&t.t, nullptr, &ro, &pk, 1, &err), REMAT_OK);
    EXPECT_EQ(pk.peak_live_bytes, 110);
    ASSERT_EQ(remat_des_replay(&t.t, two.event_time, &ro, &pk, 1, &err), REMAT_OK);
    EXPECT_EQ(pk.peak_live_bytes, 210);
    remat_des_schedule_free(&one);
    remat_des_schedule_free(&two);
}

TEST(DesReplay, RefusesAnInconsistentStream) {
    Trace t;
    remat_error err{};
    remat_event e{};
    e.tensor = 4;
    e.bytes = 8;
    e.kind = REMAT_EVENT_FREE;
    remat_trace_add_event(&t.t, &e, &err);
    remat_des_replay_opts ro = remat_des_replay_opts_default();
    remat_des_iter_peaks pk;
    EXPECT_EQ(remat_des_replay(&t.t, nullptr, &ro, &pk, 1, &err), REMAT_ERR_INPUT);
    EXPECT_NE(std::string(err.msg).find("events[0]"), std::string::npos) << err.msg;
}

// ---- op cost --------------------------------------------------------------------

TEST(OpCost, RulesFromMeasuredRecords) {
    Trace t;
    remat_error err{};
    auto add = [&](remat_op_kind k, int layer, remat_phase ph, int t_steps, int64_t elems, double dur) {
        remat_op_record r{};
        r.op = (uint8_t)k;
        r.layer = layer;
        r.phase = (uint8_t)ph;
        r.t_steps = t_steps;
        r.elems = elems;
        r.t_start = 0;
        r.t_end = dur;
        remat_trace_add_op(&t.t, &r, &err);
    };
    // three iterations of a linear forward over T=8 (the least is 0.7 s: other work only adds time)
    add(REMAT_OP_LINEAR_FWD, 2, REMAT_PHASE_FORWARD, 8, 800, 0.8);
    add(REMAT_OP_LINEAR_FWD, 2, REMAT_PHASE_FORWARD, 8, 800, 3.0);
    add(REMAT_OP_LINEAR_FWD, 2, REMAT_PHASE_FORWARD, 8, 800, 0.7);
    add(REMAT_OP_COPY, 2, REMAT_PHASE_FORWARD, 0, 1000, 0.001);
    t.t.compress_s_per_elem[REMAT_COMP_BIT] = 1e-6;
    remat_op_cost_model *m = remat_op_cost_init(&t.t, &err);
    ASSERT_NE(m, nullptr);
    remat_op_record q{};
    q.op = REMAT_OP_LINEAR_FWD;
    q.layer = 2;
    q.phase = REMAT_PHASE_RECOMPUTE; // recomputation costs what the forward cost
    q.t_steps = 2;
    q.elems = 200;                   // a chunk of 2 of the 8 steps
    remat_op_cost_rule rule;
    EXPECT_DOUBLE_EQ(remat_op_cost_predict(m, &q, REMAT_COMP_NONE, &rule), 0.175);
    EXPECT_EQ(rule, REMAT_OP_COST_SAME_SHAPE);
    q.elems = 400; // twice the elements per step (a doubled batch), no probe: per element
    EXPECT_DOUBLE_EQ(remat_op_cost_predict(m, &q, REMAT_COMP_NONE, &rule), 0.35);
    EXPECT_EQ(rule, REMAT_OP_COST_PER_ELEM_PHASE);
    remat_op_record c{};
    c.op = REMAT_OP_COMPRESS;
    c.elems = 5000;
    EXPECT_DOUBLE_EQ(remat_op_cost_predict(m, &c, REMAT_COMP_BIT, &rule), 5e-3);
    EXPECT_EQ(rule, REMAT_OP_COST_CALIBRATION);
    EXPECT_DOUBLE_EQ(remat_op_cost_predict(m, &c, REMAT_COMP_SPARSE, &rule), 5e-3); // no calibration: copy rate
    EXPECT_EQ(rule, REMAT_OP_COST_PER_ELEM_KIND);
    remat_op_record u{};
    u.op = REMAT_OP_ADD_BWD;
    u.elems = 10;
    EXPECT_EQ(remat_op_cost_predict(m, &u, REMAT_COMP_NONE, &rule), 0.0);
    EXPECT_EQ(rule, REMAT_OP_COST_UNPRICED);
    remat_op_cost_free(m);
}

// With a probe at another batch, an op at a third size is priced on the line through
// the two measured sizes: a fixed part (1 s per step here) and a part per element.
TEST(OpCost, ProbeGivesFixedAndPerElementParts) {
    Trace t;
    remat_error err{};
    t.t.N = 2;
    t.t.probe_N = 4;
    auto rec = [&](int64_t elems, double dur, int probe) {
        remat_op_record r{};
        r.op = (uint8_t)REMAT_OP_LINEAR_BWD;
        r.layer = 1;
        r.phase = (uint8_t)REMAT_PHASE_BACKWARD;
        r.t_steps = 4;
        r.elems = elems;
        r.t_end = dur;
        if (probe) remat_trace_add_probe_op(&t.t, &r, &err);
        else remat_trace_add_op(&t.t, &r, &err);
    };
    rec(400, 4 * (1.0 + 0.01 * 100), 0); // 100 elements per step: 2 s per step
    rec(800, 4 * (1.0 + 0.01 * 200), 1); // the probe, 200 per step: 3 s per step
    remat_op_cost_model *m = remat_op_cost_init(&t.t, &err);
    ASSERT_NE(m, nullptr);
    remat_op_record q{};
    q.op = REMAT_OP_LINEAR_BWD;
    q.layer = 1;
    q.phase = REMAT_PHASE_BACKWARD;
    q.t_steps = 4;
    q.elems = 1600 * 4; // 1600 per step (N=32): 1 + 16 s per step, not 2 s x 16
    remat_op_cost_rule rule;
    EXPECT_NEAR(remat_op_cost_predict(m, &q, REMAT_COMP_NONE, &rule), 4 * 17.0, 1e-9);
    EXPECT_EQ(rule, REMAT_OP_COST_AFFINE);
    q.elems = 400; // the recorded size itself: as measured
    EXPECT_NEAR(remat_op_cost_predict(m, &q, REMAT_COMP_NONE, &rule), 8.0, 1e-9);
    EXPECT_EQ(rule, REMAT_OP_COST_SAME_SHAPE);
    remat_op_cost_free(m);
    // a probe that costs less than the recording (noise) is read as a flat line
    Trace f;
    f.t.N = 2;
    f.t.probe_N = 4;
    remat_op_record r{};
    r.op = (uint8_t)REMAT_OP_LINEAR_BWD;
    r.t_steps = 1;
    r.elems = 100;
    r.t_end = 2.0;
    remat_trace_add_op(&f.t, &r, &err);
    r.elems = 200;
    r.t_end = 1.5;
    remat_trace_add_probe_op(&f.t, &r, &err);
    m = remat_op_cost_init(&f.t, &err);
    ASSERT_NE(m, nullptr);
    r.elems = 3200;
    EXPECT_NEAR(remat_op_cost_predict(m, &r, REMAT_COMP_NONE, &rule), 1.5, 1e-9); // the nearer point, flat
    EXPECT_EQ(rule, REMAT_OP_COST_AFFINE);
    remat_op_cost_free(m);
    // one steeper than proportional (2 s at 100, 5 s at 200: a preempted probe) is read
    // as proportional to the smaller size's 0.02 s per element, from the nearer point
    f.t.probe_ops[0].t_end = 5.0;
    m = remat_op_cost_init(&f.t, &err);
    ASSERT_NE(m, nullptr);
    EXPECT_NEAR(remat_op_cost_predict(m, &r, REMAT_COMP_NONE, &rule), 5.0 + 0.02 * 3000, 1e-9);
    remat_op_cost_free(m);
}

// A probe of several batches (the recorded one again, the probe's and 4x it): an op is
// priced on the piecewise line through every measured size, the segment that holds
// the size (or the last one past them); at the recorded size the least of the
// recording's and the probe's records.
TEST(OpCost, ProbeOfSeveralBatchesGivesAPiecewiseLine) {
    Trace t;
    remat_error err{};
    t.t.N = 2;
    t.t.probe_N = 4;
    auto rec = [&](int64_t per_step, double s_per_step, int probe, int iter) {
        remat_op_record r{};
        r.op = (uint8_t)REMAT_OP_LINEAR_FWD;
        r.layer = 0;
        r.phase = (uint8_t)REMAT_PHASE_FORWARD;
        r.iter = iter;
        r.t_steps = 2;
        r.elems = 2 * per_step;
        r.t_end = 2 * s_per_step;
        if (probe) remat_trace_add_probe_op(&t.t, &r, &err);
        else remat_trace_add_op(&t.t, &r, &err);
    };
    rec(100, 2.0, 0, 0);  // the recording: 2 s per step at 100 elements per step
    rec(200, 3.0, 1, 0);  // the probe (N=4): 3 s
    rec(200, 3.5, 1, 1);  // its other warm step: the least counts
    rec(100, 1.8, 1, 2);  // the probe's steps at the recorded batch: 1.8 s
    rec(400, 5.5, 1, 3);  // 4x the probe's batch: 5.5 s (past 200, 0.0125 s per element more)
    remat_op_cost_model *m = remat_op_cost_init(&t.t, &err);
    ASSERT_NE(m, nullptr);
    remat_op_record q{};
    q.op = REMAT_OP_LINEAR_FWD;
    q.phase = REMAT_PHASE_RECOMPUTE; // priced as the forward
    q.t_steps = 2;
    remat_op_cost_rule rule;
    auto at = [&](int64_t per_step) {
        q.elems = 2 * per_step;
        return remat_op_cost_predict(m, &q, REMAT_COMP_NONE, &rule) / 2;
    };
    EXPECT_NEAR(at(100), 1.8, 1e-12); // the least of the recording and the probe at that size
    EXPECT_EQ(rule, REMAT_OP_COST_SAME_SHAPE);
    EXPECT_NEAR(at(150), 1.8 + 0.012 * 50, 1e-12); // on the first segment (1.8 at 100, 3 at 200)
    EXPECT_EQ(rule, REMAT_OP_COST_AFFINE);
    EXPECT_NEAR(at(300), 3.0 + 0.0125 * 100, 1e-12); // on the second (3 at 200, 5.5 at 400)
    EXPECT_NEAR(at(1600), 5.5 + 0.0125 * 1200, 1e-12); // past 400: the last segment, from 400
    EXPECT_NEAR(at(50), 1.8 - 0.012 * 50, 1e-12);      // below 100: the first, from 100
    remat_op_cost_free(m);
}

// The probe's checkpointed step (every block, at the recorded batch): a forward,
// recomputation or backward op of a checkpointed block costs its plain figure times the
// ratio of the checkpointed step's to the plain step's at the recorded size, at every
// size; ops of blocks the plan keeps cost as in plain backpropagation.
TEST(OpCost, CheckpointedProbeStepScalesAPlansForwardAndRecompute) {
    Trace t;
    remat_error err{};
    t.t.N = 2;
    t.t.probe_N = 8;
    auto rec = [&](remat_phase ph, int64_t per_step, double s_per_step, int probe, int iter) {
        remat_op_record r{};
        r.op = (uint8_t)REMAT_OP_CONV_FWD;
        r.layer = 1;
        r.block = 0;
        r.phase = (uint8_t)ph;
        r.iter = iter;
        r.t_steps = 1;
        r.elems = per_step;
        r.t_end = s_per_step;
        if (probe) remat_trace_add_probe_op(&t.t, &r, &err);
        else remat_trace_add_op(&t.t, &r, &err);
    };
    rec(REMAT_PHASE_FORWARD, 100, 2.0, 0, 0);   // the recording: 2 s
    rec(REMAT_PHASE_FORWARD, 400, 5.0, 1, 0);   // the probe at 4x: 5 s
    rec(REMAT_PHASE_FORWARD, 100, 1.6, 1, 1);   // its checkpointed step: the forward 1.6 s,
    rec(REMAT_PHASE_RECOMPUTE, 100, 1.5, 1, 1); // the recomputation 1.5 s
    remat_op_cost_model *m = remat_op_cost_init(&t.t, &err);
    ASSERT_NE(m, nullptr);
    remat_op_record q{};
    q.op = REMAT_OP_CONV_FWD;
    q.layer = 1;
    q.phase = REMAT_PHASE_FORWARD;
    q.t_steps = 1;
    q.elems = 100;
    EXPECT_NEAR(remat_op_cost_predict_in(m, &q, REMAT_COMP_NONE, 0, nullptr), 2.0, 1e-12); // a kept block
    EXPECT_NEAR(remat_op_cost_predict(m, &q, REMAT_COMP_NONE, nullptr), 2.0, 1e-12);
    EXPECT_NEAR(remat_op_cost_predict_in(m, &q, REMAT_COMP_NONE, 1, nullptr), 1.6, 1e-12);
    q.phase = REMAT_PHASE_RECOMPUTE;
    EXPECT_NEAR(remat_op_cost_predict_in(m, &q, REMAT_COMP_NONE, 1, nullptr), 1.5, 1e-12);
    q.elems = 400; // another batch: the plain line's figure (5 s) times the recorded ratio
    EXPECT_NEAR(remat_op_cost_predict_in(m, &q, REMAT_COMP_NONE, 1, nullptr), 5.0 * 0.75, 1e-12);
    q.phase = REMAT_PHASE_LOSS; // no such records in the checkpointed step: not scaled
    const double loss = remat_op_cost_predict_in(m, &q, REMAT_COMP_NONE, 0, nullptr);
    EXPECT_NEAR(remat_op_cost_predict_in(m, &q, REMAT_COMP_NONE, 1, nullptr), loss, 1e-12);
    // a backward of a checkpointed block: its plain figure times the checkpointed step's
    // backward over the plain step's (3.3 s against 3 s), kept within [0.5, 2]
    Trace b;
    b.t.N = 2;
    b.t.probe_N = 8;
    remat_op_record r{};
    r.op = (uint8_t)REMAT_OP_CONV_BWD;
    r.layer = 1;
    r.phase = (uint8_t)REMAT_PHASE_BACKWARD;
    r.t_steps = 1;
    r.elems = 100;
    r.t_end = 3.0;
    remat_trace_add_op(&b.t, &r, &err);
    r.elems = 400;
    r.t_end = 9.0;
    remat_trace_add_probe_op(&b.t, &r, &err);
    r.iter = 1;
    r.elems = 100;
    r.t_end = 3.3;
    remat_trace_add_probe_op(&b.t, &r, &err);
    r.phase = (uint8_t)REMAT_PHASE_RECOMPUTE; // what makes step 1 a checkpointed one
    r.op = (uint8_t)REMAT_OP_CONV_FWD;
    r.t_end = 1.0;
    remat_trace_add_probe_op(&b.t, &r, &err);
    remat_op_cost_model *mb = remat_op_cost_init(&b.t, &err);
    ASSERT_NE(mb, nullptr);
    q.op = REMAT_OP_CONV_BWD;
    q.phase = REMAT_PHASE_BACKWARD;
    q.elems = 100;
    EXPECT_NEAR(remat_op_cost_predict_in(mb, &q, REMAT_COMP_NONE, 0, nullptr), 3.0, 1e-12);
    EXPECT_NEAR(remat_op_cost_predict_in(mb, &q, REMAT_COMP_NONE, 1, nullptr), 3.3, 1e-12);
    q.elems = 400;
    EXPECT_NEAR(remat_op_cost_predict_in(mb, &q, REMAT_COMP_NONE, 1, nullptr), 9.0 * 1.1, 1e-12);
    remat_op_cost_free(mb);
    remat_op_cost_free(m);
}

// With several checkpointed and plain probe steps at the recorded batch, an op's ratio
// is its least over the checkpointed steps over its least over the plain ones (each op's
// like statistic), not one step's op over another step's.
TEST(OpCost, CheckpointedRatiosCompareEachOpsLeast) {
    Trace t;
    remat_error err{};
    t.t.N = 2;
    t.t.probe_N = 8;
    auto rec = [&](remat_phase ph, double secs, int probe, int iter) {
        remat_op_record r{};
        r.op = (uint8_t)REMAT_OP_CONV_FWD;
        r.layer = 1;
        r.block = 0;
        r.phase = (uint8_t)ph;
        r.iter = iter;
        r.t_steps = 1;
        r.elems = 100;
        r.t_end = secs;
        if (probe) remat_trace_add_probe_op(&t.t, &r, &err);
        else remat_trace_add_op(&t.t, &r, &err);
    };
    rec(REMAT_PHASE_FORWARD, 2.2, 0, 0);   // the recording
    rec(REMAT_PHASE_FORWARD, 2.0, 1, 0);   // the probe's plain steps at the recorded batch: 2.0,
    rec(REMAT_PHASE_FORWARD, 1.8, 1, 1);   // 1.8 s
    rec(REMAT_PHASE_FORWARD, 1.5, 1, 2);   // checkpointed steps: forward 1.5, recomputation 1.4
    rec(REMAT_PHASE_RECOMPUTE, 1.4, 1, 2); // (the step of least ops, 2.9 s),
    rec(REMAT_PHASE_FORWARD, 1.3, 1, 3);   // forward 1.3, recomputation 1.7 (3.0 s)
    rec(REMAT_PHASE_RECOMPUTE, 1.7, 1, 3);
    remat_op_cost_model *m = remat_op_cost_init(&t.t, &err);
    ASSERT_NE(m, nullptr);
    remat_op_record q{};
    q.op = REMAT_OP_CONV_FWD;
    q.layer = 1;
    q.phase = REMAT_PHASE_FORWARD;
    q.t_steps = 1;
    q.elems = 100;
    EXPECT_NEAR(remat_op_cost_predict(m, &q, REMAT_COMP_NONE, nullptr), 1.8, 1e-12); // the probe's best plain step
    EXPECT_NEAR(remat_op_cost_predict_in(m, &q, REMAT_COMP_NONE, 1, nullptr), 1.8 * (1.3 / 1.8), 1e-12);
    q.phase = REMAT_PHASE_RECOMPUTE;
    EXPECT_NEAR(remat_op_cost_predict_in(m, &q, REMAT_COMP_NONE, 1, nullptr), 1.8 * (1.4 / 1.8), 1e-12);
    remat_op_cost_free(m);
}

// A recorded step's time outside its ops (allocations, the batch, host work) is part of
// every predicted step: a second more of it in every recorded step, a second more in
// the prediction.
TEST(OpCost, HostTimeBetweenOpsIsPartOfTheStep) {
    Baseline b("tiny-mlp-lif", 3);
    ASSERT_NE(b.sim, nullptr);
    remat_error err{};
    ASSERT_EQ(remat_sim_run(b.sim, &err), REMAT_OK) << err.msg;
    const double before = remat_sim_results(b.sim)->step_time_s;
    for (int32_t i = 0; i < b.base.t.n_iters; i++) b.base.t.iters[i].step_time_s += 1.0;
    remat_sim_opts so = remat_sim_opts_default();
    remat_sim *s = remat_sim_init(&b.base.t, &so, &err);
    ASSERT_NE(s, nullptr) << err.msg;
    ASSERT_EQ(remat_sim_run(s, &err), REMAT_OK) << err.msg;
    EXPECT_NEAR(remat_sim_results(s)->step_time_s, before + 1.0, 1e-9);
    remat_sim_free(s);
}

// The host time outside the ops is priced per allocation event of the step: a plan
// whose step has more events (the frees and re-allocations of its recomputation) gets
// proportionally more of it; the recorded plain step gets exactly its own.
TEST(OpCost, HostTimeScalesWithTheStepsEvents) {
    Baseline b("tiny-3block-if", 3);
    ASSERT_NE(b.sim, nullptr);
    remat_error err{};
    for (int32_t i = 0; i < b.base.t.n_iters; i++) b.base.t.iters[i].step_time_s += 1.0; // a host gap of about 1 s
    remat_sim_opts so = remat_sim_opts_default();
    remat_sim *s = remat_sim_init(&b.base.t, &so, &err);
    ASSERT_NE(s, nullptr) << err.msg;
    const int32_t best = remat_op_cost_best_step(&b.base.t);
    ASSERT_GE(best, 1);
    const int64_t rec_events = b.base.t.iters[best].n_events;
    const double gap = remat_sim_host_gap(s);
    EXPECT_GT(gap, 1.0 - 1e-6);
    EXPECT_NEAR(remat_sim_host_time(s, best, rec_events), gap, 1e-12);
    EXPECT_NEAR(remat_sim_host_time(s, best, 2 * rec_events), 2 * gap, 1e-12);
    EXPECT_NEAR(remat_sim_host_time(s, best, 0), 0, 1e-12);
    remat_plan p;
    ASSERT_EQ(remat_plan_init_empty(remat_sim_model(s), &p, &err), REMAT_OK);
    for (int k = 0; k < p.n_blocks; k++) p.blocks[k].checkpoint = 1;
    ASSERT_EQ(remat_sim_set_plan(s, &p, &err), REMAT_OK) << err.msg;
    remat_plan_free(&p);
    ASSERT_EQ(remat_sim_run(s, &err), REMAT_OK) << err.msg;
    const remat_sim_iter &it = remat_sim_results(s)->iters[1];
    ASSERT_GT(it.events, rec_events); // the plan's step allocates more
    remat_op_cost_model *m = remat_op_cost_init(&b.base.t, &err);
    ASSERT_NE(m, nullptr);
    const remat_trace *pred = remat_sim_trace(s);
    double ops = 0;
    for (int64_t i = 0; i < pred->n_ops; i++)
        if (pred->ops[i].phase != REMAT_PHASE_INIT && pred->ops[i].iter == 1)
            ops += remat_op_cost_predict(m, &pred->ops[i], REMAT_COMP_NONE, nullptr);
    EXPECT_NEAR(it.step_time_s, ops + gap + gap * (double)(it.events - b.base.t.iters[1].n_events) / (double)rec_events,
                1e-9);
    remat_op_cost_free(m);
    remat_sim_free(s);
}

// With the probe's step times (remat_trace.probe_steps), the host gap is the least of
// the recording's and the probe's plain steps at the recorded batch, and an event more
// costs what the probe's checkpointed steps measured per extra event (their least host
// gap over the plain steps', per event more), kept within [0, the plain step's average].
TEST(OpCost, ProbeStepsPriceTheHostTimeOfAnExtraEvent) {
    Baseline b("tiny-3block-if", 3);
    ASSERT_NE(b.sim, nullptr);
    remat_error err{};
    remat_trace &t = b.base.t;
    for (int32_t i = 0; i < t.n_iters; i++) t.iters[i].step_time_s += 1.0; // a recorded host gap of about 1 s
    const int32_t best = remat_op_cost_best_step(&t);
    ASSERT_GE(best, 1);
    const int64_t ev = t.iters[best].n_events;
    // probe steps 0 and 1: copies of the recorded step (plain, at the recorded batch);
    // step 2: checkpointed (a recomputation more), 40 events more
    double ops = 0;
    int64_t n_rec = 0;
    for (int64_t i = 0; i < t.n_ops; i++)
        if (t.ops[i].iter == best) ops += t.ops[i].t_end - t.ops[i].t_start, n_rec++;
    ASSERT_GT(n_rec, 0);
    const int64_t n0 = t.n_ops;
    for (int step = 0; step < 3; step++)
        for (int64_t i = 0; i < n0; i++) {
            if (t.ops[i].iter != best) continue;
            remat_op_record r = t.ops[i];
            r.iter = step;
            ASSERT_GE(remat_trace_add_probe_op(&t, &r, &err), 0);
        }
    remat_op_record rc = t.ops[0];
    rc.iter = 2;
    rc.phase = (uint8_t)REMAT_PHASE_RECOMPUTE;
    rc.t_start = rc.t_end = 0; // takes no time: the step's ops are the plain ones'
    ASSERT_GE(remat_trace_add_probe_op(&t, &rc, &err), 0);
    t.probe_N = 4 * t.N; // a probe (here all at the recorded batch)
    auto with_steps = [&](double gap0, double gap0b, double gap_ck, int64_t ev_ck) {
        t.n_probe_steps = 0;
        const remat_probe_step st[3] = {{ops + gap0, ev}, {ops + gap0b, ev}, {ops + gap_ck, ev_ck}};
        for (int i = 0; i < 3; i++) EXPECT_GE(remat_trace_add_probe_step(&t, &st[i], &err), 0);
        remat_sim_opts so = remat_sim_opts_default();
        remat_sim *s = remat_sim_init(&t, &so, &err);
        EXPECT_NE(s, nullptr) << err.msg;
        return s;
    };
    // plain gaps 0.8 and 0.9 s (least 0.8, under the recording's 1 s), checkpointed 0.8 +
    // 40 x 0.25 x the average: 0.25 of the average per event more
    const double avg = 0.8 / (double)ev;
    remat_sim *s = with_steps(0.9, 0.8, 0.8 + 40 * 0.25 * avg, ev + 40);
    ASSERT_NE(s, nullptr);
    EXPECT_NEAR(remat_sim_host_gap(s), 0.8, 1e-9);
    EXPECT_NEAR(remat_sim_host_per_event(s), 0.25 * avg, 1e-12);
    EXPECT_NEAR(remat_sim_host_time(s, best, ev + 10), 0.8 + 10 * 0.25 * avg, 1e-9);
    remat_sim_free(s);
    // noise: a checkpointed gap under the plain one is no cost; one over the average per
    // event is the average
    s = with_steps(0.8, 0.8, 0.7, ev + 40);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(remat_sim_host_per_event(s), 0.0);
    remat_sim_free(s);
    s = with_steps(0.8, 0.8, 0.8 + 40 * 3 * avg, ev + 40);
    ASSERT_NE(s, nullptr);
    EXPECT_NEAR(remat_sim_host_per_event(s), avg, 1e-12);
    remat_sim_free(s);
    // probe gaps over the recording's: the recording's stands (the least), and its
    // average per event without a checkpointed step
    t.probe_ops[t.n_probe_ops - 1].phase = (uint8_t)REMAT_PHASE_FORWARD; // step 2 is plain now, with an op more
    s = with_steps(1.5, 1.6, 1.7, ev);
    ASSERT_NE(s, nullptr);
    const double rec_gap = remat_sim_host_gap(s);
    EXPECT_GT(rec_gap, 1.0 - 1e-6);
    EXPECT_LT(rec_gap, 1.5);
    EXPECT_NEAR(remat_sim_host_per_event(s), rec_gap / (double)ev, 1e-12);
    remat_sim_free(s);
}

TEST(OpCost, SpikeCountsFromTheBaseline) {
    Baseline b("tiny-mlp-lif", 2);
    ASSERT_NE(b.sim, nullptr);
    int counted = 0;
    for (int64_t i = 0; i < b.base.t.n_events; i++) {
        const remat_event &e = b.base.t.events[i];
        if (e.kind != REMAT_EVENT_ALLOC || e.nnz < 0) continue;
        int64_t elems = e.dims[0] * e.dims[1] * e.dims[2] * e.dims[3];
        EXPECT_EQ(remat_sim_nnz(b.sim, e.iter, e.layer, elems), e.nnz);
        // another size: scaled by density
        int64_t twice = remat_sim_nnz(b.sim, e.iter, e.layer, 2 * elems);
        EXPECT_EQ(twice, 2 * e.nnz);
        counted++;
    }
    EXPECT_GE(counted, 6); // the spike input and three block outputs, two steps
}

// The predicted step time of the empty plan is the sum of the ops' medians; each
// plan's predicted time is what the op-cost model gives its ops.
TEST(OpCost, PredictedStepTimeIsTheSumOfOpCosts) {
    Baseline b("tiny-3block-if", 3);
    ASSERT_NE(b.sim, nullptr);
    remat_error err{};
    ASSERT_EQ(remat_sim_run(b.sim, &err), REMAT_OK) << err.msg;
    const remat_trace *pred = remat_sim_trace(b.sim);
    remat_op_cost_model *m = remat_op_cost_init(&b.base.t, &err);
    double sum = 0;
    for (int64_t i = 0; i < pred->n_ops; i++)
        if (pred->ops[i].phase != REMAT_PHASE_INIT && pred->ops[i].iter == 1)
            sum += remat_op_cost_predict(m, &pred->ops[i], REMAT_COMP_NONE, nullptr);
    EXPECT_NEAR(remat_sim_results(b.sim)->iters[1].step_time_s, sum + remat_sim_host_gap(b.sim), 1e-12);
    EXPECT_GT(sum, 0);
    EXPECT_GE(remat_sim_host_gap(b.sim), 0);
    EXPECT_EQ(remat_sim_results(b.sim)->unpriced_ops, 0);
    remat_op_cost_free(m);
}

// ---- chain dynamic programme ---------------------------------------------------

// Random chains, every choice enumerated: the programme finds the least time
// under each budget and the smallest peak.
TEST(ChainDp, MatchesBruteForceOnRandomChains) {
    std::mt19937_64 rng(42);
    for (int trial = 0; trial < 60; trial++) {
        int nb = 2 + (int)(rng() % 4), nit = 1 + (int)(rng() % 3);
        std::vector<int> n_opts(nb);
        for (int &n : n_opts) n = 1 + (int)(rng() % 4);
        remat_chain c;
        ASSERT_EQ(remat_chain_init(&c, nb, n_opts.data(), nit, nullptr), REMAT_OK);
        for (int it = 0; it < nit; it++) {
            c.base[it] = 1000 + (int64_t)(rng() % 100);
            c.tail[it] = (int64_t)(rng() % 300);
            c.fixed[it] = 900 + (int64_t)(rng() % 300);
        }
        c.time0 = 1.0;
        for (int b = 0; b < nb; b++)
            for (int o = 0; o < n_opts[b]; o++) {
                remat_chain_opt &x = c.opts[b][o];
                x.time = (double)(rng() % 1000) / 100.0;
                for (int it = 0; it < nit; it++) {
                    x.delta[it] = (int64_t)(rng() % 500);
                    x.local[it] = (int64_t)(rng() % 800);
                }
            }
        // brute force
        int64_t total = 1;
        for (int n : n_opts) total *= n;
        std::vector<std::pair<int64_t, double>> all;
        std::vector<int> ch(nb);
        for (int64_t i = 0; i < total; i++) {
            int64_t x = i;
            for (int b = 0; b < nb; b++) {
                ch[b] = (int)(x % n_opts[b]);
                x /= n_opts[b];
            }
            double t;
            int64_t p = remat_chain_peak(&c, ch.data(), &t);
            all.push_back({p, t});
        }
        int64_t minp = INT64_MAX;
        for (auto &a : all) minp = std::min(minp, a.first);
        for (int q = 0; q < 12; q++) {
            int64_t budget = minp - 5 + (int64_t)(rng() % 1500);
            double best = INFINITY;
            for (auto &a : all)
                if (a.first <= budget) best = std::min(best, a.second);
            int found;
            int64_t peak;
            double t;
            ASSERT_EQ(remat_chain_solve(&c, budget, ch.data(), &peak, &t, &found, nullptr, nullptr), REMAT_OK);
            EXPECT_EQ(found, std::isfinite(best)) << "trial " << trial << " budget " << budget;
            if (found) {
                EXPECT_LE(peak, budget);
                EXPECT_NEAR(t, best, 1e-9);
            }
        }
        int64_t mp;
        ASSERT_EQ(remat_chain_min_peak(&c, ch.data(), &mp, nullptr, nullptr), REMAT_OK);
        EXPECT_EQ(mp, minp);
        // the front: every point is optimal for its own peak, peaks descending
        remat_chain_point *pts;
        int *chs, np;
        ASSERT_EQ(remat_chain_front(&c, 64, &pts, &chs, &np, nullptr), REMAT_OK);
        for (int i = 0; i < np; i++) {
            double best = INFINITY;
            for (auto &a : all)
                if (a.first <= pts[i].peak) best = std::min(best, a.second);
            EXPECT_NEAR(pts[i].time, best, 1e-9);
            if (i) {
                EXPECT_LT(pts[i].peak, pts[i - 1].peak);
                EXPECT_GT(pts[i].time, pts[i - 1].time);
            }
        }
        EXPECT_EQ(pts[np - 1].peak, minp);
        remat_xfree(pts);
        remat_xfree(chs);
        remat_chain_free(&c);
    }
}

// A long chain whose front outgrows the cap: each stage keeps at most
// remat_chain_front_cap(n) states (REMAT_CHAIN_WORK), so the work is bounded by
// the input, the stages thinned are counted, and the answer is still a plan of
// the model that fits, found the same way every time.
TEST(ChainDp, FrontIsThinnedAboveTheCap) {
    for (int nit = 1; nit <= 2; nit++) {
        const int nb = 4096;
        const int64_t cap = remat_chain_front_cap(nb);
        ASSERT_EQ(cap, std::max<int64_t>(64, REMAT_CHAIN_WORK / nb));
        std::vector<int> n_opts(nb, 2);
        remat_chain c;
        ASSERT_EQ(remat_chain_init(&c, nb, n_opts.data(), nit, nullptr), REMAT_OK);
        std::mt19937_64 rng(7);
        int64_t lo = 0, hi = 0;
        for (int b = 0; b < nb; b++) {
            remat_chain_opt &st = c.opts[b][0], &ck = c.opts[b][1]; // stored: more bytes, no time
            for (int it = 0; it < nit; it++) {
                st.delta[it] = 1000 + (int64_t)(rng() % 1000) + it * (int64_t)(rng() % 50);
                ck.delta[it] = 10 + (int64_t)(rng() % 10);
                st.local[it] = ck.local[it] = 100;
            }
            ck.time = 1e-3 * (double)(1 + rng() % 1000);
            lo += ck.delta[nit - 1];
            hi += st.delta[nit - 1];
        }
        c.time0 = 1.0;
        int64_t budget = lo + (hi - lo) / 3;
        std::vector<int> ch(nb), ch2(nb);
        remat_chain_stats stats;
        int found = 0;
        int64_t peak;
        double t;
        ASSERT_EQ(remat_chain_solve(&c, budget, ch.data(), &peak, &t, &found, &stats, nullptr), REMAT_OK);
        ASSERT_TRUE(found) << "nit " << nit;
        EXPECT_GT(stats.max_front, cap);        // the front did outgrow the cap ...
        EXPECT_GT(stats.thinned, 0);            // ... and was thinned
        EXPECT_LE(stats.states, (int64_t)nb * cap * 2); // at most cap states a stage, 2 options each
        EXPECT_LE(peak, budget);
        double t2;
        EXPECT_EQ(remat_chain_peak(&c, ch.data(), &t2), peak);
        EXPECT_DOUBLE_EQ(t2, t);
        int found2 = 0;
        int64_t peak2;
        double t3;
        ASSERT_EQ(remat_chain_solve(&c, budget, ch2.data(), &peak2, &t3, &found2, nullptr, nullptr), REMAT_OK);
        EXPECT_EQ(ch, ch2); // deterministic
        // the smallest peak and the front still answer with plans of the model
        int64_t mp;
        double mt;
        ASSERT_EQ(remat_chain_min_peak(&c, ch2.data(), &mp, &mt, nullptr), REMAT_OK);
        EXPECT_LE(mp, peak);
        EXPECT_EQ(remat_chain_peak(&c, ch2.data(), nullptr), mp);
        remat_chain_point *pts;
        int *chs, np;
        ASSERT_EQ(remat_chain_front(&c, 8, &pts, &chs, &np, nullptr), REMAT_OK);
        EXPECT_GE(np, 2);
        for (int i = 0; i < np; i++) EXPECT_EQ(remat_chain_peak(&c, chs + (size_t)i * nb, nullptr), pts[i].peak);
        remat_xfree(pts);
        remat_xfree(chs);
        remat_chain_free(&c);
    }
}

// Every plan of a shipped model's option product simulated: the chain model
// predicts each plan's peak and time exactly, and the budget search's plan fits
// and is no slower than any fitting plan of the enumeration.
class SearchExhaustive : public ::testing::TestWithParam<int> {};

TEST_P(SearchExhaustive, BudgetSearchIsOptimalOverTheProduct) {
    Baseline b("tiny-resnet-bn", GetParam());
    ASSERT_NE(b.sim, nullptr);
    remat_error err{};
    const remat_model *m = remat_sim_model(b.sim);
    remat_block_options *opts;
    ASSERT_EQ(remat_search_block_options(m, &opts, &err), REMAT_OK);
    remat_chain chain;
    int probes = 0;
    ASSERT_EQ(remat_search_build_chain(b.sim, opts, &chain, &probes, &err), REMAT_OK) << err.msg;
    int64_t total = 1;
    for (int i = 0; i < m->n_blocks; i++) total *= opts[i].n;
    ASSERT_GT(total, 1000);
    remat_plan p;
    ASSERT_EQ(remat_plan_init_empty(m, &p, &err), REMAT_OK);
    std::vector<int> ch(m->n_blocks);
    std::vector<std::pair<int64_t, double>> all;
    int mismatches = 0;
    for (int64_t i = 0; i < total; i++) {
        int64_t x = i;
        for (int blk = 0; blk < m->n_blocks; blk++) {
            ch[blk] = (int)(x % opts[blk].n);
            x /= opts[blk].n;
            p.blocks[blk] = opts[blk].v[ch[blk]];
        }
        remat_search_figures f;
        ASSERT_EQ(remat_search_evaluate(b.sim, &p, &f, &err), REMAT_OK) << err.msg;
        double t;
        int64_t peak = remat_chain_peak(&chain, ch.data(), &t);
        mismatches += peak != f.peak_live || std::fabs(t - f.time_s) > 1e-9 * f.time_s;
        all.push_back({f.peak, f.time_s});
    }
    EXPECT_EQ(mismatches, 0) << "the chain model must predict every plan";
    int64_t lo = INT64_MAX, hi = 0;
    for (auto &a : all) {
        lo = std::min(lo, a.first);
        hi = std::max(hi, a.first);
    }
    for (int q = 0; q <= 10; q++) {
        int64_t budget = lo + (hi - lo) * q / 10;
        double best = INFINITY;
        for (auto &a : all)
            if (a.first <= budget) best = std::min(best, a.second);
        remat_search_budget_result r;
        remat_search_budget_opts bo = remat_search_budget_opts_default();
        bo.front_points = 4;
        ASSERT_EQ(remat_search_budget(b.sim, budget, &bo, &r, &err), REMAT_OK) << err.msg;
        ASSERT_TRUE(r.found) << budget;
        EXPECT_LE(r.fig.peak, budget);
        EXPECT_LE(r.fig.time_s, best * (1 + 1e-12)) << "budget " << budget;
        EXPECT_EQ(r.mismatches, 0);
        EXPECT_EQ(r.rounds, 1); // exact model: the first candidate is confirmed
        remat_search_budget_result_free(&r);
    }
    // below the smallest peak: nothing fits, and the smallest peak is reported
    remat_search_budget_result r;
    ASSERT_EQ(remat_search_budget(b.sim, lo - 1, nullptr, &r, &err), REMAT_OK);
    EXPECT_FALSE(r.found);
    EXPECT_EQ(r.min_peak, lo);
    EXPECT_EQ(r.fig.peak, lo);
    remat_search_budget_result_free(&r);
    remat_plan_free(&p);
    remat_chain_free(&chain);
    remat_search_options_free(opts, m->n_blocks);
}

INSTANTIATE_TEST_SUITE_P(Steps, SearchExhaustive, ::testing::Values(1, 2));

// Under the caching model the programme bounds live bytes only; the confirmed
// plan must still fit the reserved-bytes budget.
TEST(SearchBudget, CachingAllocatorPlanFits) {
    Baseline b("tiny-3block-if", 2, REMAT_ALLOC_CACHING);
    ASSERT_NE(b.sim, nullptr);
    remat_error err{};
    remat_search_budget_result r;
    ASSERT_EQ(remat_search_budget(b.sim, 2 << 20, nullptr, &r, &err), REMAT_OK) << err.msg;
    ASSERT_TRUE(r.found);
    EXPECT_LE(r.fig.peak_reserved, 2 << 20);
    EXPECT_EQ(r.fig.peak, r.fig.peak_reserved);
    ASSERT_GT(r.n_front, 0);
    int chosen = 0;
    for (int i = 0; i < r.n_front; i++) chosen += r.front[i].chosen;
    EXPECT_EQ(chosen, 1);
    remat_search_budget_result_free(&r);
}

// Nothing fits under the caching model: the reported floor is the smallest simulated
// peak, never above a point of the (simulated) Pareto front, and it is the peak of the
// plan reported with it (the chain model orders plans by live bytes, the caching model
// need not follow that order).
TEST(SearchBudget, CachingFloorIsTheSmallestSimulatedPeak) {
    for (const char *name : {"tiny-3block-if", "tiny-vgg-dvs", "tiny-resnet-bn"}) {
        SCOPED_TRACE(name);
        Baseline b(name, 2, REMAT_ALLOC_CACHING);
        ASSERT_NE(b.sim, nullptr);
        remat_error err{};
        remat_search_budget_result r;
        remat_search_budget_opts bo = remat_search_budget_opts_default();
        bo.front_points = 16;
        ASSERT_EQ(remat_search_budget(b.sim, 1, &bo, &r, &err), REMAT_OK) << err.msg;
        ASSERT_FALSE(r.found);
        for (int i = 0; i < r.n_front; i++) EXPECT_LE(r.min_peak, r.front[i].peak) << r.front[i].label;
        remat_search_figures g;
        ASSERT_EQ(remat_search_evaluate(b.sim, &r.plan, &g, &err), REMAT_OK) << err.msg;
        EXPECT_EQ(g.peak, r.min_peak);
        EXPECT_EQ(r.fig.peak, r.min_peak);
        remat_search_budget_result_free(&r);
    }
}

// ---- greedy levels ----------------------------------------------------------------

struct GreedyCase {
    const char *model;
    remat_search_preset preset;
};

class Greedy : public ::testing::TestWithParam<GreedyCase> {};

TEST_P(Greedy, LevelsAreMonotone) {
    Baseline b(GetParam().model, 2);
    ASSERT_NE(b.sim, nullptr);
    remat_error err{};
    remat_search_figures f[5];
    int ckpt[5];
    for (int level = 0; level <= 4; level++) {
        remat_plan p;
        remat_search_log log{};
        ASSERT_EQ(remat_search_greedy(b.sim, level, GetParam().preset, &p, &f[level], &log, &err), REMAT_OK) << err.msg;
        ckpt[level] = 0;
        for (int i = 0; i < p.n_blocks; i++) ckpt[level] += p.blocks[i].checkpoint;
        // the figures are the plan's, as the simulator gives them
        remat_search_figures g;
        ASSERT_EQ(remat_search_evaluate(b.sim, &p, &g, &err), REMAT_OK);
        EXPECT_EQ(g.peak, f[level].peak);
        EXPECT_GE(log.n, level == 0 ? 1 : 2);
        remat_search_log_free(&log);
        remat_plan_free(&p);
    }
    int nb = b.m.n_blocks;
    int pct = GetParam().preset == REMAT_PRESET_SPEED ? 50 : GetParam().preset == REMAT_PRESET_BALANCED ? 75 : 100;
    EXPECT_EQ(ckpt[0], 0);
    EXPECT_EQ(ckpt[1], (nb * pct + 99) / 100);
    EXPECT_LE(f[2].peak, f[1].peak); // splits kept only where the peak drops
    EXPECT_LE(f[3].peak, f[2].peak); // time chunks likewise
    EXPECT_LE(f[4].peak, f[3].peak); // restoring never raises the peak
    EXPECT_LE(ckpt[4], ckpt[3]);
    if (ckpt[4] < ckpt[3]) {
        EXPECT_LE(f[4].time_s, f[3].time_s); // and restoring saves recomputation
    }
}

INSTANTIATE_TEST_SUITE_P(Models, Greedy,
                         ::testing::Values(GreedyCase{"tiny-3block-if", REMAT_PRESET_MEMORY},
                                           GreedyCase{"tiny-3block-if", REMAT_PRESET_SPEED},
                                           GreedyCase{"tiny-mlp-lif", REMAT_PRESET_BALANCED},
                                           GreedyCase{"tiny-resnet-bn", REMAT_PRESET_MEMORY}));

// ---- tune -------------------------------------------------------------------------

TEST(Tune, LargestBatchFitsAndTheNextDoesNot) {
    Baseline b("tiny-mlp-lif", 1);
    ASSERT_NE(b.sim, nullptr);
    remat_error err{};
    const int64_t budget = 200 << 10;
    remat_tune_opts o = remat_tune_opts_default();
    o.max_value = 4096;
    remat_tune_result r;
    ASSERT_EQ(remat_tune(&b.base.t, &o, budget, &r, &err), REMAT_OK) << err.msg;
    ASSERT_GT(r.plain.value, 8);
    EXPECT_GE(r.ckpt.value, r.plain.value); // checkpointing never fits less
    ASSERT_TRUE(r.have_plan);
    EXPECT_EQ(r.model.N, r.ckpt.value);
    EXPECT_LE(r.plain.fig.peak, budget);
    EXPECT_LE(r.ckpt.fig.peak, budget);
    for (int side = 0; side < 2; side++) {
        int64_t v = side ? r.ckpt.value : r.plain.value;
        remat_sim_opts so = remat_sim_opts_default();
        so.N = v + 1;
        remat_sim *s = remat_sim_init(&b.base.t, &so, &err);
        ASSERT_NE(s, nullptr) << err.msg;
        if (!side) {
            remat_search_figures f;
            ASSERT_EQ(remat_search_evaluate(s, nullptr, &f, &err), REMAT_OK);
            EXPECT_GT(f.peak, budget) << "N=" << v + 1 << " fits plainly too";
        } else {
            remat_search_budget_result br;
            remat_search_budget_opts bo = remat_search_budget_opts_default();
            bo.front_points = 0;
            ASSERT_EQ(remat_search_budget(s, budget, &bo, &br, &err), REMAT_OK);
            EXPECT_FALSE(br.found) << "N=" << v + 1 << " fits with checkpointing too";
            remat_search_budget_result_free(&br);
        }
        remat_sim_free(s);
    }
    remat_tune_result_free(&r);
}

}  // namespace
