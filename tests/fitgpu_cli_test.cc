// fitgpu_cli_test.cc - "will it fit my GPU?" end to end (the built binary): size
// flags in SI and IEC, budgets on reserved bytes plus the device overhead, one plan
// notation, verify's verdicts, --T/--N on every command, and the small things a new
// user meets (--version, next steps, wrong file kinds, escaped JSON).
#include <gtest/gtest.h>

#include <cjson/cJSON.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/io/trace.h"
#include "tests/cli_runner.h"

namespace {

using remat_test::has;
using remat_test::lines;
using remat_test::num;
using remat_test::Proc;
using remat_test::remat;
using remat_test::slurp;
using remat_test::tmp_dir;

const int64_t MiB = 1 << 20;

class FitGpu : public ::testing::Test {
  protected:
    static std::string tiny, mlp;
    static void SetUpTestSuite() {
        tiny = tmp_dir() + "/fit_tiny.h5";
        mlp = tmp_dir() + "/fit_mlp.h5";
        Proc r = remat("run --model data/models/tiny-3block-if.json --iters 2 --trace " + tiny);
        ASSERT_EQ(r.rc, 0) << r.err;
        r = remat("run --model data/models/mlp-lif.json --iters 1 --trace " + mlp);
        ASSERT_EQ(r.rc, 0) << r.err;
    }
};
std::string FitGpu::tiny, FitGpu::mlp;

// ---- 1. one size grammar ------------------------------------------------------------

// 8GB is 8*10^9 B and 8GiB is 8*2^30 B, as written; the allocator config reads the same
// grammar (64MB, 64MiB, inf); an ambiguous "64M" is refused naming the flag and the grammar.
TEST_F(FitGpu, SizesAsWrittenEverywhere) {
    Proc gb = remat("search --trace " + tiny + " --budget 8GB --device-overhead 0 --json");
    ASSERT_EQ(gb.rc, 0) << gb.err;
    cJSON *j = cJSON_Parse(gb.out.c_str());
    ASSERT_NE(j, nullptr) << gb.out;
    EXPECT_EQ(num(cJSON_GetObjectItem(j, "budget"), "total_bytes"), 8000000000LL);
    cJSON_Delete(j);
    Proc gib = remat("search --trace " + tiny + " --budget 8GiB --device-overhead 1.5GB --json");
    ASSERT_EQ(gib.rc, 0) << gib.err;
    j = cJSON_Parse(gib.out.c_str());
    ASSERT_NE(j, nullptr) << gib.out;
    EXPECT_EQ(num(cJSON_GetObjectItem(j, "budget"), "total_bytes"), 8LL << 30);
    EXPECT_EQ(num(cJSON_GetObjectItem(j, "budget"), "device_overhead_bytes"), 1500000000LL);
    cJSON_Delete(j);
    for (const char *cfg : {"max_split_size=64MB", "max_split_size=64MiB", "max_split_size=inf"}) {
        Proc r = remat("simulate --trace " + tiny + " --allocator-config " + cfg + " --json");
        EXPECT_EQ(r.rc, 0) << cfg << ": " << r.err;
    }
    Proc bad = remat("search --trace " + tiny + " --budget 64M");
    EXPECT_EQ(bad.rc, 2);
    EXPECT_EQ(lines(bad.err), 1) << bad.err;
    EXPECT_TRUE(has(bad.err, "--budget: '64M' is not a size (expected a size: bytes, or a number with kB/MB/GB/TB"))
        << bad.err;
    Proc badcfg = remat("simulate --trace " + tiny + " --allocator-config max_split_size=64M");
    EXPECT_EQ(badcfg.rc, 2);
    EXPECT_TRUE(has(badcfg.err, "max_split_size: expected a size: bytes, or a number with kB/MB/GB/TB")) << badcfg.err;
}

// ---- 2. budgets on what runs out ------------------------------------------------------

// By default the budget holds the plan's peak reserved bytes (caching model) plus the
// device overhead; the written plan, simulated under the caching model, fits it. With
// --budget-on live the live peak is what fits. Both figures are in the answer.
TEST_F(FitGpu, BudgetMeansReservedPlusOverhead) {
    std::string plan = tmp_dir() + "/fit_plan.json";
    Proc r = remat("search --trace " + mlp + " --budget 80MiB --device-overhead 8MiB --out " + plan + " --json");
    ASSERT_EQ(r.rc, 0) << r.err;
    cJSON *j = cJSON_Parse(r.out.c_str());
    ASSERT_NE(j, nullptr) << r.out;
    const cJSON *b = cJSON_GetObjectItem(j, "budget");
    EXPECT_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(b, "on")), "reserved");
    EXPECT_EQ(num(b, "allocator_bytes"), 72 * MiB);
    const cJSON *pred = cJSON_GetObjectItem(j, "predicted");
    int64_t reserved = num(pred, "peak_reserved_bytes"), live = num(pred, "peak_live_bytes");
    EXPECT_LE(reserved + 8 * MiB, 80 * MiB);
    EXPECT_LT(live, reserved);
    EXPECT_EQ(num(j, "needed_bytes"), reserved + 8 * MiB);
    cJSON_Delete(j);
    Proc s = remat("simulate --trace " + mlp + " --plan " + plan + " --allocator caching --json");
    ASSERT_EQ(s.rc, 0) << s.err;
    j = cJSON_Parse(s.out.c_str());
    EXPECT_EQ(num(j, "peak_reserved_bytes"), reserved);
    cJSON_Delete(j);

    Proc human = remat("search --trace " + mlp + " --budget 80MiB --device-overhead 8MiB");
    ASSERT_EQ(human.rc, 0) << human.err;
    EXPECT_TRUE(has(human.out, "on peak reserved bytes (caching allocator model) + device overhead 8.0 MiB"))
        << human.out;
    EXPECT_TRUE(has(human.out, "peak reserved ")) << human.out;
    EXPECT_TRUE(has(human.out, ", peak live ")) << human.out;
    EXPECT_TRUE(has(human.out, "predictions describe remat's own executor")) << human.out;

    Proc lv = remat("search --trace " + mlp + " --budget 80MiB --device-overhead 8MiB --budget-on live --json");
    ASSERT_EQ(lv.rc, 0) << lv.err;
    j = cJSON_Parse(lv.out.c_str());
    EXPECT_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "budget"), "on")), "live");
    EXPECT_LE(num(cJSON_GetObjectItem(j, "predicted"), "peak_live_bytes") + 8 * MiB, 80 * MiB);
    cJSON_Delete(j);
}

// The default device overhead is documented and counted: a budget below it leaves nothing.
TEST_F(FitGpu, DefaultDeviceOverhead) {
    Proc h = remat("search --help");
    EXPECT_TRUE(has(h.out, "--device-overhead")) << h.out;
    EXPECT_TRUE(has(h.out, "default 512 MiB, an estimate")) << h.out;
    Proc r = remat("search --trace " + tiny + " --budget 8GiB --json");
    ASSERT_EQ(r.rc, 0) << r.err;
    cJSON *j = cJSON_Parse(r.out.c_str());
    const cJSON *b = cJSON_GetObjectItem(j, "budget");
    EXPECT_EQ(num(b, "device_overhead_bytes"), 512 * MiB);
    EXPECT_FALSE(cJSON_IsTrue(cJSON_GetObjectItem(b, "device_overhead_given")));
    cJSON_Delete(j);
    Proc small = remat("search --trace " + tiny + " --budget 500MiB");
    EXPECT_EQ(small.rc, 2);
    EXPECT_EQ(lines(small.err), 1) << small.err;
    EXPECT_TRUE(has(small.err, "--device-overhead")) << small.err;
}

// A trace recorded on a GPU carries the driver's view; the budget then counts the
// measured device overhead (not the estimate) unless --device-overhead is given.
TEST_F(FitGpu, MeasuredOverheadFromTheTrace) {
    remat_trace t;
    remat_error err = {};
    ASSERT_EQ(remat_trace_read_h5(tiny.c_str(), &t, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(t.device_total_bytes, 0);  // recorded on the reference backend: no driver view
    t.device_total_bytes = 150000000000LL;
    t.device_free_at_init = 150000000000LL - 600 * MiB;
    std::string gpu = tmp_dir() + "/fit_gpu_view.h5";
    ASSERT_EQ(remat_trace_write_h5(&t, gpu.c_str(), &err), REMAT_OK) << err.msg;
    remat_trace_free(&t);
    remat_trace back;
    ASSERT_EQ(remat_trace_read_h5(gpu.c_str(), &back, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(back.device_total_bytes, 150000000000LL);
    EXPECT_EQ(back.device_free_at_init, 150000000000LL - 600 * MiB);
    remat_trace_free(&back);
    Proc r = remat("search --trace " + gpu + " --budget 8GiB --json");
    ASSERT_EQ(r.rc, 0) << r.err;
    cJSON *j = cJSON_Parse(r.out.c_str());
    const cJSON *b = cJSON_GetObjectItem(j, "budget");
    EXPECT_EQ(num(b, "device_overhead_bytes"), 600 * MiB);
    EXPECT_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(b, "device_overhead_source")), "trace");
    cJSON_Delete(j);
    Proc h = remat("tune --trace " + gpu + " --budget 8GiB --max 64");
    ASSERT_EQ(h.rc, 0) << h.err;
    EXPECT_TRUE(has(h.out, "device overhead 600.0 MiB (629145600 B) (measured on the GPU the trace was recorded on"))
        << h.out;
    Proc given = remat("search --trace " + gpu + " --budget 8GiB --device-overhead 1GiB --json");
    j = cJSON_Parse(given.out.c_str());
    EXPECT_EQ(num(cJSON_GetObjectItem(j, "budget"), "device_overhead_bytes"), 1LL << 30);
    cJSON_Delete(j);
}

// tune: the size it says fits, run for real, has reserved bytes within the budget.
TEST_F(FitGpu, TuneConfirmFitsInReservedBytes) {
    Proc r = remat("tune --trace " + tiny + " --budget 6MiB --device-overhead 1MiB --max 256 --confirm --json");
    ASSERT_EQ(r.rc, 0) << r.err;
    cJSON *j = cJSON_Parse(r.out.c_str());
    ASSERT_NE(j, nullptr) << r.out;
    const cJSON *c = cJSON_GetObjectItem(j, "confirm");
    ASSERT_TRUE(cJSON_IsObject(c)) << r.out;
    EXPECT_LE(num(c, "peak_reserved_bytes") + 1 * MiB, 6 * MiB);
    const cJSON *ck = cJSON_GetObjectItem(j, "checkpointed");
    EXPECT_GT(num(ck, "peak_reserved_bytes"), 0);
    EXPECT_GT(num(ck, "peak_live_bytes"), 0);
    cJSON_Delete(j);
    Proc h = remat("tune --trace " + tiny + " --budget 6MiB --device-overhead 1MiB --max 256");
    ASSERT_EQ(h.rc, 0) << h.err;
    EXPECT_TRUE(has(h.out, "peak reserved ")) << h.out;
    EXPECT_TRUE(has(h.out, "device overhead 1.0 MiB")) << h.out;
}

// The demo's answer carries the budget line and both peaks.
TEST_F(FitGpu, DemoPrintsBothFigures) {
    std::string dir = tmp_dir() + "/fit_demo";
    Proc r = remat("demo --model data/models/tiny-mlp-lif.json --budget-on live --budget 24KiB --no-plots --out " + dir);
    ASSERT_EQ(r.rc, 0) << r.err << r.out;
    EXPECT_TRUE(has(r.out, "budget 24.0 KiB (24576 B) on peak live bytes + device overhead 0 B")) << r.out;
    EXPECT_TRUE(has(r.out, "peak reserved")) << r.out;
    EXPECT_TRUE(has(r.out, "peak live")) << r.out;
}

// When nothing fits, one line says why: the floor plan, where its peak sits, the rules
// that hold it (naming the blocks) and what to try.
TEST_F(FitGpu, NothingFitsSaysWhy) {
    std::string bn = tmp_dir() + "/fit_bn.h5";
    ASSERT_EQ(remat("run --model data/models/tiny-resnet-bn.json --iters 2 --trace " + bn).rc, 0);
    Proc r = remat("search --trace " + bn + " --budget 10KiB --budget-on live --device-overhead 0");
    EXPECT_EQ(r.rc, 1);
    size_t at = r.out.find("why: the floor is plan ");
    ASSERT_NE(at, std::string::npos) << r.out;
    std::string why = r.out.substr(at, r.out.find('\n', at) - at);
    EXPECT_TRUE(has(why, ", held at ")) << why;
    EXPECT_TRUE(has(why, "time chunks (k > 1) are not allowed in blocks with batch norm (res1,res2)")) << why;
    EXPECT_TRUE(has(why, "remat tune --trace " + bn)) << why;
}

// ---- 3. one plan notation -------------------------------------------------------------

// --plan takes the notation wherever it takes a plan file, with the same result; every
// command prints plans in it; the baseline is "no checkpointing".
TEST_F(FitGpu, PlanNotationEverywhere) {
    const std::string file = "data/plans/tiny-3block-if-ckpt.json";
    const std::string nota = "'b1/k2/split@fc1b,b2:bit/k4/split@fc2b,b3:uint8'";  // the same plan
    Proc a = remat("simulate --trace " + tiny + " --plan " + file + " --json");
    Proc b = remat("simulate --trace " + tiny + " --plan " + nota + " --json");
    ASSERT_EQ(a.rc, 0) << a.err;
    ASSERT_EQ(b.rc, 0) << b.err;
    cJSON *ja = cJSON_Parse(a.out.c_str()), *jb = cJSON_Parse(b.out.c_str());
    EXPECT_EQ(num(ja, "peak_live_bytes"), num(jb, "peak_live_bytes"));
    EXPECT_EQ(num(ja, "peak_reserved_bytes"), num(jb, "peak_reserved_bytes"));
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    Proc r = remat("run --model data/models/tiny-3block-if.json --plan " + nota + " --json");
    ASSERT_EQ(r.rc, 0) << r.err;
    Proc h = remat("simulate --trace " + tiny + " --plan " + file);
    EXPECT_TRUE(has(h.out, "plan b1/k2/split@fc1b,b2:bit/k4/split@fc2b,b3:uint8 (" + file + ")")) << h.out;
    Proc v = remat("verify --model data/models/tiny-3block-if.json --plan " + nota + " --quiet");
    EXPECT_EQ(v.rc, 0) << v.out << v.err;
    EXPECT_TRUE(has(v.out, "plan b1/k2/split@fc1b,b2:bit/k4/split@fc2b,b3:uint8, backend")) << v.out;
    // search prints the plan it chose in the notation, and that text is a valid --plan
    Proc s = remat("search --trace " + tiny + " --budget 40KiB --budget-on live --device-overhead 0 --json");
    ASSERT_EQ(s.rc, 0) << s.err;
    cJSON *js = cJSON_Parse(s.out.c_str());
    std::string label = cJSON_GetStringValue(cJSON_GetObjectItem(js, "label"));
    cJSON_Delete(js);
    EXPECT_FALSE(has(label, "stored")) << label;
    Proc again = remat("simulate --trace " + tiny + " --plan '" + label + "' --json");
    EXPECT_EQ(again.rc, 0) << label << ": " << again.err;
    // the baseline
    Proc base = remat("search --trace " + tiny + " --level 0");
    EXPECT_TRUE(has(base.out, "plan                   no checkpointing")) << base.out;
    Proc none = remat("simulate --trace " + tiny + " --plan 'no checkpointing' --json");
    EXPECT_EQ(none.rc, 0) << none.err;
    // a bad notation: one line naming --plan and the grammar
    Proc bad = remat("run --model data/models/tiny-3block-if.json --plan 'b1:zip'");
    EXPECT_EQ(bad.rc, 2);
    EXPECT_EQ(lines(bad.err), 1) << bad.err;
    EXPECT_TRUE(has(bad.err, "'b1:zip': expected a compressor after ':'")) << bad.err;
}

// ---- 4. verify ------------------------------------------------------------------------

// A plan that does not lower the peak at this size: exit 1 by default (peak-not-reduced),
// exit 0 with --equivalence-only, whose verdict says exactly that.
TEST_F(FitGpu, VerifyEquivalenceOnly) {
    const std::string cmd = "verify --model data/models/tiny-mlp-lif.json --plan b3 --T 12 --N 4";
    Proc plain = remat(cmd);
    EXPECT_EQ(plain.rc, 1) << plain.out;
    EXPECT_TRUE(has(plain.out, "verdict: PEAK-NOT-REDUCED")) << plain.out;
    Proc eq = remat(cmd + " --equivalence-only");
    EXPECT_EQ(eq.rc, 0) << eq.out;
    EXPECT_TRUE(has(eq.out, "verdict: IDENTICAL: 16 tensors bit-identical (equivalence only: the memory check says "
                            "peak-not-reduced, not counted)"))
        << eq.out;
    Proc js = remat(cmd + " --equivalence-only --json");
    EXPECT_EQ(js.rc, 0);
    cJSON *j = cJSON_Parse(js.out.c_str());
    ASSERT_NE(j, nullptr) << js.out;
    EXPECT_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(j, "verdict")), "identical");
    EXPECT_TRUE(cJSON_IsTrue(cJSON_GetObjectItem(j, "passed")));
    EXPECT_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(j, "memory_verdict")), "peak-not-reduced");
    cJSON_Delete(j);
}

// The grid follows the single-plan rule: plans that do not lower the peak make it exit 1
// with that verdict (not "IDENTICAL", exit 0); --equivalence-only counts equivalence alone.
TEST_F(FitGpu, VerifyGridFollowsTheSinglePlanRule) {
    const std::string cmd = "verify --model data/models/tiny-mlp-lif.json --grid --sample 6 --sample-seed 2";
    Proc g = remat(cmd);
    EXPECT_EQ(g.rc, 1) << g.out;
    EXPECT_TRUE(has(g.out, "4 peak-not-reduced")) << g.out;
    EXPECT_TRUE(has(g.out, "verdict: PEAK-NOT-REDUCED: all 6 plans bit-identical, but 4")) << g.out;
    EXPECT_FALSE(has(g.out, "verdict: IDENTICAL")) << g.out;
    Proc j = remat(cmd + " --json");
    EXPECT_EQ(j.rc, 1);
    cJSON *o = cJSON_Parse(j.out.c_str());
    EXPECT_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(o, "verdict")), "peak-not-reduced");
    EXPECT_FALSE(cJSON_IsTrue(cJSON_GetObjectItem(o, "passed")));
    cJSON_Delete(o);
    Proc e = remat(cmd + " --equivalence-only");
    EXPECT_EQ(e.rc, 0) << e.out;
    EXPECT_TRUE(has(e.out, "verdict: IDENTICAL: all 6 plans bit-identical to plain backpropagation (equivalence only"))
        << e.out;
}

// --quiet prints no per-tensor table; by default identical tensors are counted, not listed.
TEST_F(FitGpu, VerifyTableCollapsedAndQuiet) {
    const std::string cmd = "verify --model data/models/tiny-3block-if.json --plan data/plans/tiny-3block-if-ckpt.json";
    Proc d = remat(cmd);
    EXPECT_EQ(d.rc, 0) << d.out;
    EXPECT_TRUE(has(d.out, "of 16 tensors bit-identical (not listed; --all-tensors lists every tensor)") ||
                has(d.out, "tensors bit-identical (not listed"))
        << d.out;
    EXPECT_FALSE(has(d.out, "max|diff|")) << d.out;  // no table header: nothing differs
    Proc all = remat(cmd + " --all-tensors");
    EXPECT_TRUE(has(all.out, "max|diff|")) << all.out;
    EXPECT_GT(lines(all.out), lines(d.out) + 10) << all.out;
    Proc q = remat(cmd + " --quiet");
    EXPECT_EQ(q.rc, 0);
    EXPECT_FALSE(has(q.out, "tensors bit-identical (not listed")) << q.out;
    EXPECT_TRUE(has(q.out, "verdict: IDENTICAL")) << q.out;
}

// ---- 5. plots --------------------------------------------------------------------------

// The search's Pareto file carries the budget (in the bytes its peaks are in), so the
// figure draws the documented budget line.
TEST_F(FitGpu, ParetoCarriesTheBudget) {
    std::string front = tmp_dir() + "/fit_front.json", png = tmp_dir() + "/fit_front.png";
    Proc r = remat("search --trace " + mlp + " --budget 80MiB --device-overhead 8MiB --pareto " + front);
    ASSERT_EQ(r.rc, 0) << r.err;
    cJSON *j = cJSON_Parse(slurp(front).c_str());
    ASSERT_NE(j, nullptr);
    EXPECT_EQ(num(j, "budget_bytes"), 72 * MiB);
    cJSON_Delete(j);
    Proc p = remat("plot --pareto " + front + " --data-only --out " + png);
    ASSERT_EQ(p.rc, 0) << p.err;
    std::string gp = slurp(tmp_dir() + "/fit_front.gp");
    EXPECT_TRUE(has(gp, "budget = " + std::to_string(72 * MiB) + " / yscale")) << gp;
}

// ---- 6. sizes without editing files ------------------------------------------------------

// --T/--N wherever a model or trace is read: run, verify (above), tune, demo, plot.
TEST_F(FitGpu, TAndNEverywhere) {
    Proc r = remat("run --model data/models/tiny-3block-if.json --T 8 --N 4 --iters 2 --json");
    ASSERT_EQ(r.rc, 0) << r.err;
    cJSON *j = cJSON_Parse(r.out.c_str());
    EXPECT_EQ(num(j, "T"), 8);
    EXPECT_EQ(num(j, "N"), 4);
    int64_t run_peak = num(j, "peak_live_bytes");
    cJSON_Delete(j);
    // the simulator's prediction at that size is what the run measured
    Proc s = remat("simulate --trace " + tiny + " --T 8 --N 4 --json");
    ASSERT_EQ(s.rc, 0) << s.err;
    j = cJSON_Parse(s.out.c_str());
    EXPECT_EQ(num(j, "peak_live_bytes"), run_peak);
    EXPECT_EQ(cJSON_GetObjectItem(j, "baseline_step_time_s"), nullptr);  // the measured one is of another size
    EXPECT_EQ(num(cJSON_GetObjectItem(j, "recorded"), "T"), 4);
    cJSON_Delete(j);
    // plot draws a baseline as predicted at another size
    std::string fig = tmp_dir() + "/fit_t8.png";
    Proc p = remat("plot --trace " + tiny + " --T 8 --N 4 --data-only --out " + fig);
    ASSERT_EQ(p.rc, 0) << p.err;
    std::string dat = slurp(tmp_dir() + "/fit_t8.dat");
    EXPECT_TRUE(has(dat, " " + std::to_string(run_peak) + " ")) << "peak " << run_peak << " not in the curve";
    // tune at another T; --dim T at another N
    Proc t = remat("tune --trace " + tiny + " --budget 6MiB --device-overhead 1MiB --T 8 --max 64 --json");
    ASSERT_EQ(t.rc, 0) << t.err;
    Proc tt = remat("tune --trace " + tiny + " --budget 6MiB --device-overhead 1MiB --dim T --N 4 --max 64 --json");
    ASSERT_EQ(tt.rc, 0) << tt.err;
    j = cJSON_Parse(tt.out.c_str());
    EXPECT_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(j, "dim")), "T");
    cJSON_Delete(j);
    // demo at another size
    std::string dir = tmp_dir() + "/fit_demo_t";
    Proc d = remat("demo --model data/models/tiny-mlp-lif.json --T 12 --N 4 --budget-on live --budget 20KiB --no-plots --out " + dir);
    EXPECT_EQ(d.rc, 0) << d.out << d.err;
    EXPECT_TRUE(has(d.out, "tiny-mlp-lif (T=12, N=4)")) << d.out;
}

// --max is a count, and tune says when it stopped there.
TEST_F(FitGpu, TuneMaxIsACountAndSaysWhenItStopped) {
    Proc bytes = remat("tune --trace " + tiny + " --budget 6MiB --max 64KiB");
    EXPECT_EQ(bytes.rc, 2);
    EXPECT_TRUE(has(bytes.err, "--max: '64KiB' is not an integer")) << bytes.err;
    Proc r = remat("tune --trace " + tiny + " --budget 1GiB --device-overhead 0 --max 16");
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_TRUE(has(r.out, "stopped at --max 16")) << r.out;
    Proc j = remat("tune --trace " + tiny + " --budget 1GiB --device-overhead 0 --max 16 --json");
    cJSON *o = cJSON_Parse(j.out.c_str());
    EXPECT_TRUE(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "plain"), "at_max")));
    EXPECT_EQ(num(o, "max"), 16);
    cJSON_Delete(o);
}

// One command for a scaling sweep: the table, the scaling file and the figure with the
// budget as a line; each row is what simulate --T predicts at that size.
TEST_F(FitGpu, SimulateSweep) {
    std::string fig = tmp_dir() + "/fit_sweep.png";
    Proc r = remat("simulate --trace " + tiny + " --sweep T=4,8,16 --plan 'b1/k2,b2:bit,b3' --budget 2.5MiB "
                   "--device-overhead 0 --data-only --figure " + fig + " --json");
    ASSERT_EQ(r.rc, 0) << r.err;
    cJSON *j = cJSON_Parse(r.out.c_str());
    ASSERT_NE(j, nullptr) << r.out;
    const cJSON *rows = cJSON_GetObjectItem(j, "rows");
    ASSERT_EQ(cJSON_GetArraySize(rows), 3);
    int64_t peak8 = num(cJSON_GetObjectItem(cJSON_GetArrayItem(rows, 1), "baseline"), "peak_reserved_bytes");
    cJSON_Delete(j);
    Proc one = remat("simulate --trace " + tiny + " --T 8 --json");
    j = cJSON_Parse(one.out.c_str());
    EXPECT_EQ(num(j, "peak_reserved_bytes"), peak8);
    cJSON_Delete(j);
    std::string sc = slurp(tmp_dir() + "/fit_sweep.json");
    j = cJSON_Parse(sc.c_str());
    ASSERT_NE(j, nullptr) << sc;
    EXPECT_EQ(num(j, "budget_bytes"), 2621440);
    EXPECT_EQ(num(j, "N"), 8);
    EXPECT_EQ(cJSON_GetArraySize(cJSON_GetObjectItem(j, "series")), 2);
    cJSON_Delete(j);
    std::string gp = slurp(tmp_dir() + "/fit_sweep.gp");
    EXPECT_TRUE(has(gp, "budget = 2621440 / yscale")) << gp;
    EXPECT_TRUE(has(gp, "Peak memory against T at N = 8")) << gp;
    Proc h = remat("simulate --trace " + tiny + " --sweep T=4,8 --data-only --figure " + fig);
    ASSERT_EQ(h.rc, 0) << h.err;
    EXPECT_TRUE(has(h.out, "baseline (no checkpointing):")) << h.out;
    Proc bad = remat("simulate --trace " + tiny + " --sweep T=8,4");
    EXPECT_EQ(bad.rc, 2);
    EXPECT_EQ(lines(bad.err), 1) << bad.err;
}

// ---- 7. small things a new user notices ---------------------------------------------------

TEST_F(FitGpu, VersionAndHelpText) {
    Proc v = remat("--version");
    EXPECT_EQ(v.rc, 0);
    EXPECT_EQ(v.out.rfind("remat ", 0), 0u) << v.out;
    EXPECT_TRUE(has(v.out, "(trace schema 1)")) << v.out;
    Proc h = remat("search --help");
    EXPECT_TRUE(has(h.out, "50/75/100 % of them")) << h.out;
    EXPECT_FALSE(has(h.out, "%%")) << h.out;
    Proc top = remat("--help");
    EXPECT_TRUE(has(top.out, "remat's own executor")) << top.out;
}

// Each command ends with the obvious next step.
TEST_F(FitGpu, NextSteps) {
    std::string plan = tmp_dir() + "/fit_next.json";
    Proc s = remat("search --trace " + tiny + " --budget 40KiB --budget-on live --device-overhead 0 --out " + plan);
    ASSERT_EQ(s.rc, 0) << s.err;
    EXPECT_TRUE(has(s.out, "next: remat simulate --trace " + tiny + " --plan " + plan)) << s.out;
    EXPECT_TRUE(has(s.out, "next: remat verify --model M.json --plan " + plan)) << s.out;
    Proc r = remat("run --model data/models/tiny-3block-if.json --trace " + tmp_dir() + "/fit_next.h5");
    EXPECT_TRUE(has(r.out, "next: remat search --trace ")) << r.out;
    Proc m = remat("simulate --trace " + tiny + " --plan b1");
    EXPECT_TRUE(has(m.out, "next: remat run --model M.json --plan 'b1'")) << m.out;
}

// A file of the wrong kind is named for what it is.
TEST_F(FitGpu, WrongFileKinds) {
    struct Case {
        std::string cmd, needle;
    } cases[] = {
        {"run --model data/plans/tiny-3block-if-ckpt.json", "expected a model file, got a plan file"},
        {"run --model " + tiny, "expected a model file, got an HDF5 file (a trace or a gradient dump)"},
        {"run --model data/models/tiny-3block-if.json --plan data/models/tiny-3block-if.json",
         "expected a plan file, got a model file"},
        {"run --model data/models/tiny-3block-if.json --plan " + tiny, "expected a plan file, got an HDF5 file"},
        {"simulate --trace data/models/tiny-3block-if.json", "not an HDF5 file (expected a trace or a dump, got a model file"},
        {"search --trace data/plans/tiny-3block-if-ckpt.json --level 1", "got a plan file"},
    };
    for (const Case &c : cases) {
        Proc r = remat(c.cmd);
        EXPECT_EQ(r.rc, 2) << c.cmd;
        EXPECT_EQ(lines(r.err), 1) << c.cmd << ": " << r.err;
        EXPECT_TRUE(has(r.err, c.needle)) << c.cmd << ": " << r.err;
    }
}

// ---- JSON output escapes every string ------------------------------------------------

TEST_F(FitGpu, JsonEscapesThePlanPath) {
    std::string odd = tmp_dir() + "/my\"plan.json";
    std::ofstream(odd) << slurp("data/plans/tiny-3block-if-ckpt.json");
    std::string q = "'" + odd + "'";
    Proc r = remat("run --model data/models/tiny-3block-if.json --plan " + q + " --json");
    ASSERT_EQ(r.rc, 0) << r.err;
    cJSON *j = cJSON_Parse(r.out.c_str());
    ASSERT_NE(j, nullptr) << r.out;
    EXPECT_EQ(std::string(cJSON_GetStringValue(cJSON_GetObjectItem(j, "plan"))), odd);
    cJSON_Delete(j);
    Proc s = remat("simulate --trace " + tiny + " --plan " + q + " --json");
    ASSERT_EQ(s.rc, 0) << s.err;
    j = cJSON_Parse(s.out.c_str());
    ASSERT_NE(j, nullptr) << s.out;
    EXPECT_EQ(std::string(cJSON_GetStringValue(cJSON_GetObjectItem(j, "plan"))), odd);
    cJSON_Delete(j);
}

}  // namespace
