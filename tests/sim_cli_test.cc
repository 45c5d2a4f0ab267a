// sim_cli_test.cc - `remat simulate`, `remat search` and `remat tune` end to end:
// the built binary (runfiles path tools/remat) on a recorded baseline, checking
// exit codes 0/1/2, one-line errors, the --json objects and the files written.
#include <gtest/gtest.h>

#include <cjson/cJSON.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "core/io/trace.h"
#include "tests/cli_runner.h"

namespace {

using remat_test::lines;
using remat_test::num;
using remat_test::Proc;
using remat_test::remat;
using remat_test::slurp;
using remat_test::tmp_dir;

class SimCli : public ::testing::Test {
  protected:
    static std::string base, planned;
    static void SetUpTestSuite() {
        base = tmp_dir() + "/cli_base.h5";
        planned = tmp_dir() + "/cli_planned.h5";
        Proc r = remat("run --model data/models/tiny-3block-if.json --iters 2 --trace " + base);
        ASSERT_EQ(r.rc, 0) << r.err;
        r = remat("run --model data/models/tiny-3block-if.json --plan data/plans/tiny-3block-if-ckpt.json --trace " +
                  planned);
        ASSERT_EQ(r.rc, 0) << r.err;
    }
};
std::string SimCli::base, SimCli::planned;

TEST_F(SimCli, HelpExitsZero) {
    for (const char *cmd : {"simulate", "search", "tune"}) {
        Proc r = remat(std::string(cmd) + " --help");
        EXPECT_EQ(r.rc, 0) << cmd;
        EXPECT_NE(r.out.find("usage: remat " + std::string(cmd)), std::string::npos) << r.out;
    }
}

// A plain recording's probe: its batch (4N, the attribute N) and, its steps being quick
// on a tiny model, warm steps again at the recorded batch and at 16N, and steps at the
// recorded batch with every block checkpointed (those with RECOMPUTE records); the plain
// steps of one batch are those with the same elements in all.
TEST_F(SimCli, ProbeHoldsTheRecordedBatchFourTimesItsOwnAndAPlan) {
    remat_trace t;
    remat_trace_init(&t);
    remat_error err{};
    ASSERT_EQ(remat_trace_read_h5(base.c_str(), &t, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(t.probe_N, 4 * t.N);
    auto totals = [](const remat_op_record *ops, int64_t n, int32_t iter) {
        int64_t e = 0;
        for (int64_t i = 0; i < n; i++)
            if (ops[i].iter == iter) e += ops[i].elems;
        return e;
    };
    auto checkpointed = [&](int32_t iter) {
        for (int64_t i = 0; i < t.n_probe_ops; i++)
            if (t.probe_ops[i].iter == iter && t.probe_ops[i].phase == REMAT_PHASE_RECOMPUTE) return true;
        return false;
    };
    int32_t n_it = 0;
    for (int64_t i = 0; i < t.n_probe_ops; i++)
        if (t.probe_ops[i].iter + 1 > n_it) n_it = t.probe_ops[i].iter + 1;
    std::vector<int64_t> batches;
    int ckpt_steps = 0;
    for (int32_t it = 0; it < n_it; it++) {
        if (checkpointed(it)) {
            ckpt_steps++;
            continue;
        }
        int64_t e = totals(t.probe_ops, t.n_probe_ops, it);
        if (std::find(batches.begin(), batches.end(), e) == batches.end()) batches.push_back(e);
    }
    ASSERT_EQ(batches.size(), 3u) << n_it << " probe steps";
    EXPECT_GE(n_it - ckpt_steps, 3 * 2); // at least two warm steps a batch
    EXPECT_GE(ckpt_steps, 2);            // 3 to 10 checkpointed steps, the first cold
    EXPECT_LE(ckpt_steps, 9);
    const int64_t rec = totals(t.ops, t.n_ops, 1);
    EXPECT_NE(std::find(batches.begin(), batches.end(), rec), batches.end()); // the recorded batch again
    EXPECT_GT(batches[2], batches[0]); // 16N after 4N
    remat_trace_free(&t);
}

// The prediction equals what `remat run --plan` measures.
TEST_F(SimCli, SimulateJsonEqualsRun) {
    std::string plan = "--plan data/plans/tiny-3block-if-ckpt.json";
    Proc s = remat("simulate --trace " + base + " " + plan + " --json");
    ASSERT_EQ(s.rc, 0) << s.err;
    Proc r = remat("run --model data/models/tiny-3block-if.json --iters 2 " + plan + " --json");
    ASSERT_EQ(r.rc, 0) << r.err;
    cJSON *a = cJSON_Parse(s.out.c_str()), *b = cJSON_Parse(r.out.c_str());
    ASSERT_NE(a, nullptr) << s.out;
    ASSERT_NE(b, nullptr) << r.out;
    for (const char *k : {"peak_live_bytes", "peak_reserved_bytes", "end_of_forward_bytes", "events"})
        EXPECT_EQ(num(a, k), num(b, k)) << k;
    EXPECT_GT(cJSON_GetObjectItem(a, "step_time_s")->valuedouble, 0);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

// A trace recorded by remat 0.2.0 (schema 1, no remat_version attribute; its executor
// sized the conv workspace differently, so its event stream is not this build's) stays
// readable: simulate and search accept it and say which release recorded it. A trace
// this build writes names its release, and its own stream still has to match.
TEST_F(SimCli, TracesOfAnEarlierReleaseStayReadable) {
    const std::string old = "fuzz/seeds/trace/v020-tiny-vgg-dvs.h5";
    Proc s = remat("simulate --trace " + old);
    ASSERT_EQ(s.rc, 0) << s.err;
    EXPECT_NE(s.out.find("recorded by remat 0.3.0 or earlier, whose executor gave another event stream"),
              std::string::npos) << s.out;
    Proc j = remat("simulate --trace " + old + " --json");
    ASSERT_EQ(j.rc, 0) << j.err;
    cJSON *a = cJSON_Parse(j.out.c_str());
    ASSERT_NE(a, nullptr) << j.out;
    EXPECT_TRUE(cJSON_IsString(cJSON_GetObjectItem(a, "recorded_by_earlier")));
    EXPECT_GT(num(a, "peak_live_bytes"), 0);
    cJSON_Delete(a);
    Proc q = remat("search --trace " + old + " --level 2");
    EXPECT_EQ(q.rc, 0) << q.err;
    Proc n = remat("simulate --trace " + base + " --json");
    ASSERT_EQ(n.rc, 0) << n.err;
    EXPECT_EQ(n.out.find("recorded_by_earlier"), std::string::npos) << n.out;
    std::string h5 = slurp(base);
    EXPECT_NE(h5.find("remat_version"), std::string::npos);
}

TEST_F(SimCli, SimulateWritesPredictedTraceAndRescales) {
    std::string out = tmp_dir() + "/cli_pred.h5";
    Proc s = remat("simulate --trace " + base + " --N 32 --T 8 --allocator caching --out " + out);
    ASSERT_EQ(s.rc, 0) << s.err;
    EXPECT_NE(s.out.find("T=8, N=32"), std::string::npos) << s.out;
    // the predicted trace is a trace: it simulates (as a baseline of the rescaled model)
    Proc again = remat("simulate --trace " + out + " --json");
    EXPECT_EQ(again.rc, 0) << again.err;
}

// Every predicted step time says how far to trust it: the kind of question, and the
// error measured for that kind; simulate, search and tune, in text and --json.
TEST_F(SimCli, StepTimeSaysHowFarToTrustIt) {
    const std::string probe = ", from a trace with a probe";
    const struct {
        std::string args, kind;
    } cases[] = {{"", "same size as recorded, no plan"},
                 {"--plan data/plans/tiny-3block-if-ckpt.json", "a plan at the recorded size"},
                 {"--N 64", "a larger batch than recorded" + probe},
                 {"--N 1", "a smaller batch than recorded" + probe},
                 {"--T 8", "another T than recorded"}};
    for (const auto &c : cases) {
        Proc s = remat("simulate --trace " + base + " " + c.args);
        ASSERT_EQ(s.rc, 0) << c.args << ": " << s.err;
        const size_t at = s.out.find("step-time trust       " + c.kind + ": such predictions were off by ");
        EXPECT_NE(at, std::string::npos) << c.args << ": " << s.out;
        EXPECT_EQ(s.out.find("TODO"), std::string::npos) << s.out;
        EXPECT_EQ(s.out.find("PENDING"), std::string::npos) << s.out;
        Proc j = remat("simulate --trace " + base + " " + c.args + " --json");
        ASSERT_EQ(j.rc, 0) << j.err;
        EXPECT_NE(j.out.find("\"step_time_trust\":{\"kind\":\"" + c.kind + "\",\"error\":"), std::string::npos)
            << j.out;
    }
    Proc sw = remat("simulate --trace " + base + " --sweep N=16,64");
    ASSERT_EQ(sw.rc, 0) << sw.err;
    EXPECT_NE(sw.out.find("step-time trust       a larger batch than recorded" + probe), std::string::npos) << sw.out;
    // a trace without the probe says so, with the figures measured before the probe
    std::string bare = tmp_dir() + "/cli_base_noprobe.h5";
    Proc r = remat("run --model data/models/tiny-3block-if.json --iters 2 --probe-N 0 --trace " + bare);
    ASSERT_EQ(r.rc, 0) << r.err;
    Proc b = remat("simulate --trace " + bare + " --N 64");
    ASSERT_EQ(b.rc, 0) << b.err;
    EXPECT_NE(b.out.find("step-time trust       another batch than recorded, from a trace without a probe"),
              std::string::npos)
        << b.out;
    for (const std::string &cmd : {"search --trace " + base + " --level 2", "search --trace " + base + " --budget 1GiB",
                                   "tune --trace " + base + " --budget 300KiB --budget-on live --device-overhead 0"}) {
        Proc h = remat(cmd);
        ASSERT_EQ(h.rc, 0) << cmd << ": " << h.err;
        EXPECT_NE(h.out.find("step-time trust       "), std::string::npos) << cmd << ": " << h.out;
        Proc j = remat(cmd + " --json");
        ASSERT_EQ(j.rc, 0) << cmd << ": " << j.err;
        EXPECT_NE(j.out.find("\"step_time_trust\":{\"kind\":"), std::string::npos) << cmd << ": " << j.out;
    }
    Proc bad = remat("run --model data/models/tiny-3block-if.json --probe-N 4");
    EXPECT_EQ(bad.rc, 2);
    EXPECT_NE(bad.err.find("--probe-N: expected with --trace"), std::string::npos) << bad.err;
    bad = remat("run --model data/models/tiny-3block-if.json --probe-N 4 --trace " + tmp_dir() + "/cli_cold.h5");
    EXPECT_EQ(bad.rc, 2);
    EXPECT_NE(bad.err.find("--probe-N: expected with --iters 2 or more"), std::string::npos) << bad.err;
    // one step: no probe by default (its times are a first step's, the probe's warm)
    std::string cold = tmp_dir() + "/cli_cold.h5";
    r = remat("run --model data/models/tiny-3block-if.json --trace " + cold);
    ASSERT_EQ(r.rc, 0) << r.err;
    b = remat("simulate --trace " + cold + " --N 64");
    EXPECT_NE(b.out.find("from a trace without a probe"), std::string::npos) << b.out;
}

TEST_F(SimCli, SearchBudgetWritesPlanAndFront) {
    std::string plan = tmp_dir() + "/cli_plan.json", front = tmp_dir() + "/cli_front.json";
    Proc s = remat("simulate --trace " + base + " --json");
    cJSON *b = cJSON_Parse(s.out.c_str());
    ASSERT_NE(b, nullptr);
    int64_t baseline = num(b, "peak_live_bytes");
    cJSON_Delete(b);
    int64_t budget = baseline * 9 / 10;
    Proc r = remat("search --trace " + base + " --budget " + std::to_string(budget) + " --budget-on live --device-overhead 0 --out " + plan + " --pareto " +
                   front + " --json");
    ASSERT_EQ(r.rc, 0) << r.err;
    cJSON *j = cJSON_Parse(r.out.c_str());
    ASSERT_NE(j, nullptr) << r.out;
    EXPECT_TRUE(cJSON_IsTrue(cJSON_GetObjectItem(j, "fits")));
    EXPECT_LE(num(j, "peak_bytes"), budget);
    cJSON_Delete(j);
    cJSON *f = cJSON_Parse(slurp(front).c_str());
    ASSERT_NE(f, nullptr);
    const cJSON *pts = cJSON_GetObjectItem(f, "points");
    ASSERT_TRUE(cJSON_IsArray(pts));
    int chosen = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, pts) {
        num(p, "peak_bytes");
        num(p, "time_s");
        EXPECT_TRUE(cJSON_IsNumber(cJSON_GetObjectItem(p, "overhead")));
        EXPECT_TRUE(cJSON_IsString(cJSON_GetObjectItem(p, "label")));
        chosen += cJSON_IsTrue(cJSON_GetObjectItem(p, "chosen"));
    }
    EXPECT_EQ(chosen, 1);
    EXPECT_EQ(num(cJSON_GetObjectItem(f, "baseline"), "peak_bytes"), baseline);
    cJSON_Delete(f);
    // the written plan runs, and its measured peak fits the budget
    Proc run = remat("run --model data/models/tiny-3block-if.json --iters 2 --plan " + plan + " --json");
    ASSERT_EQ(run.rc, 0) << run.err;
    cJSON *m = cJSON_Parse(run.out.c_str());
    EXPECT_LE(num(m, "peak_live_bytes"), budget);
    cJSON_Delete(m);
}

TEST_F(SimCli, SearchNothingFitsExitsOne) {
    Proc r = remat("search --trace " + base + " --budget 1KiB --device-overhead 0");
    EXPECT_EQ(r.rc, 1);
    EXPECT_NE(r.out.find("nothing fits"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("smallest reachable peak is"), std::string::npos) << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
}

TEST_F(SimCli, SearchLevels) {
    for (int level = 0; level <= 4; level++) {
        Proc r = remat("search --trace " + base + " --level " + std::to_string(level) + " --preset balanced --json");
        ASSERT_EQ(r.rc, 0) << r.err;
        cJSON *j = cJSON_Parse(r.out.c_str());
        ASSERT_NE(j, nullptr) << r.out;
        EXPECT_EQ(num(j, "level"), level);
        EXPECT_TRUE(cJSON_IsObject(cJSON_GetObjectItem(j, "plan")));
        cJSON_Delete(j);
    }
}

TEST_F(SimCli, Tune) {
    Proc r = remat("tune --trace " + base + " --budget 300KiB --budget-on live --device-overhead 0 --max 4096 --json");
    ASSERT_EQ(r.rc, 0) << r.err;
    cJSON *j = cJSON_Parse(r.out.c_str());
    ASSERT_NE(j, nullptr) << r.out;
    int64_t plain = num(cJSON_GetObjectItem(j, "plain"), "value");
    int64_t ckpt = num(cJSON_GetObjectItem(j, "checkpointed"), "value");
    EXPECT_GT(plain, 8);
    EXPECT_GE(ckpt, plain);
    cJSON_Delete(j);
    Proc none = remat("tune --trace " + base + " --budget 1KiB --device-overhead 0");
    EXPECT_EQ(none.rc, 1);
}

TEST_F(SimCli, TuneConfirmRunsForReal) {
    Proc r = remat("tune --trace " + base + " --budget 100KiB --budget-on live --device-overhead 0 --max 64 --confirm --json");
    ASSERT_EQ(r.rc, 0) << r.err;
    cJSON *j = cJSON_Parse(r.out.c_str());
    ASSERT_NE(j, nullptr) << r.out;
    const cJSON *c = cJSON_GetObjectItem(j, "confirm");
    ASSERT_TRUE(cJSON_IsObject(c)) << r.out;
    EXPECT_EQ(num(c, "peak_live_bytes"), num(c, "predicted_peak_live_bytes"));
    EXPECT_EQ(num(c, "peak_reserved_bytes"), num(c, "predicted_peak_reserved_bytes"));
    cJSON_Delete(j);
    EXPECT_EQ(r.err.find("thread"), std::string::npos) << r.err; // the recording's count: nothing to say
    // another thread count than the recording's: the confirmed step time is not the predicted one's
    Proc t2 = remat("tune --trace " + base + " --budget 100KiB --budget-on live --device-overhead 0 --max 64 --confirm "
                    "--threads 2");
    ASSERT_EQ(t2.rc, 0) << t2.err;
    EXPECT_NE(t2.err.find("--threads 2: the trace was recorded with 1 thread, the predicted step time is for 1"),
              std::string::npos)
        << t2.err;
}

// ---- bad input: one line on stderr, exit 2 ----------------------------------------

TEST_F(SimCli, BadInputExitsTwo) {
    std::string trunc = tmp_dir() + "/cli_trunc.h5";
    {
        std::string bytes = slurp(base);
        std::ofstream(trunc, std::ios::binary).write(bytes.data(), (std::streamsize)(bytes.size() / 3));
    }
    const std::string cases[] = {
        "simulate --trace " + planned,                                            // recorded with a plan
        "search --trace " + planned + " --level 1",
        "simulate --trace " + trunc,                                              // truncated HDF5
        "simulate --trace " + tmp_dir() + "/no-such.h5",                          // missing
        "simulate --trace " + base + " --plan data/plans/tiny-mlp-lif-ckpt.json", // plan for another model
        "simulate --trace " + base + " --allocator fast",
        "simulate --plan data/plans/tiny-3block-if-ckpt.json",                   // no trace
        "search --trace " + base,                                                 // neither --budget nor --level
        "search --trace " + base + " --level 5",
        "search --trace " + base + " --level 1 --preset huge",
        "search --trace " + base + " --budget 10MiB --level 1",
        "tune --trace " + base,                                                   // no budget
        "tune --trace " + base + " --budget 1MiB --dim X",
        "simulate --trace " + base + " --allocator-config max_split_size=1",
    };
    for (const std::string &c : cases) {
        Proc r = remat(c);
        EXPECT_EQ(r.rc, 2) << c << "\n" << r.err;
        EXPECT_EQ(lines(r.err), 1) << c << "\n" << r.err;
    }
    Proc p = remat("simulate --trace " + planned);
    EXPECT_NE(p.err.find("plan: expected a trace recorded without a plan"), std::string::npos) << p.err;
}

}  // namespace
