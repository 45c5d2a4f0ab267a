// plots_test.cc - the figures' data: curves of known traces (values at the peak,
// number of points, local maxima kept by the reduction, the peak's block/layer),
// the role breakdown, the Pareto and scaling files, and that gnuplot accepts every
// generated script (PNG and SVG) where gnuplot is installed.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/io/trace.h"
#include "plots/curve.h"
#include "plots/figure.h"
#include "plots/memplot.h"
#include "plots/names.h"
#include "plots/pareto.h"
#include "plots/reduce.h"
#include "plots/scaling.h"

namespace {

// These bounds only catch a complexity regression (a quadratic pass over a million events
// takes minutes); they are not speed measurements, which live in bench/. They are loose
// because the machine is shared: a loaded 2-core box runs these several times slower.
#if defined(__SANITIZE_ADDRESS__)
constexpr double kSlow = 100.0;  // sanitizer builds run several times slower
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr double kSlow = 100.0;
#else
constexpr double kSlow = 10.0;
#endif
#else
constexpr double kSlow = 10.0;
#endif

const char *kModel =
    "{\"name\": \"tiny2\", \"T\": 4, \"N\": 2, \"input\": {\"shape\": [8], \"kind\": \"spikes\", \"rate\": 0.3},"
    " \"classes\": 2, \"loss\": \"rate_mse\", \"optimizer\": {\"type\": \"sgd\", \"lr\": 0.1, \"momentum\": 0.9},"
    " \"layers\": [{\"name\": \"fc1\", \"type\": \"linear\", \"out\": 8}, {\"name\": \"lif1\", \"type\": \"lif\"},"
    "  {\"name\": \"fc2\", \"type\": \"linear\", \"out\": 2}, {\"name\": \"lif2\", \"type\": \"lif\"}],"
    " \"blocks\": [{\"name\": \"b1\", \"layers\": [\"fc1\", \"lif1\"]}, {\"name\": \"b2\", \"layers\": [\"fc2\", \"lif2\"]}]}";

std::string TmpDir() {
    const char *t = getenv("TEST_TMPDIR");
    std::string d = std::string(t && *t ? t : "/tmp") + "/plots_test";
    mkdir(d.c_str(), 0755);
    return d;
}

bool Exists(const std::string &p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0;
}

std::string ReadAll(const std::string &p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

bool HaveGnuplot() {
    char buf[4096];
    remat_figure_opts o = remat_figure_opts_default();
    return remat_gnuplot_find(&o, buf, sizeof buf) != nullptr;
}

// Builds traces event by event.
struct TB {
    remat_trace t;
    double time = 0;
    int64_t next = 0;
    int iter = 0;
    std::vector<int64_t> alloc_at;  // tensor id -> index of its alloc event
    TB() { remat_trace_init(&t); }
    ~TB() { remat_trace_free(&t); }
    int64_t Alloc(int64_t bytes, remat_phase ph, remat_role role, int block = -1, int layer = -1, double dt = 1e-3) {
        remat_event e;
        memset(&e, 0, sizeof e);
        time += dt;
        e.time_s = time;
        e.tensor = next++;
        e.bytes = bytes;
        e.dims[0] = bytes / 4 > 0 ? bytes / 4 : 1;
        e.dims[1] = e.dims[2] = e.dims[3] = 1;
        e.nnz = -1;
        e.layer = layer;
        e.block = block;
        e.iter = iter;
        e.kind = REMAT_EVENT_ALLOC;
        e.phase = (uint8_t)ph;
        e.role = (uint8_t)role;
        e.enc = REMAT_ENC_F32;
        e.ndim = 1;
        e.time_dim = e.batch_dim = -1;
        remat_error err = {};
        alloc_at.push_back(remat_trace_add_event(&t, &e, &err));
        EXPECT_GE(alloc_at.back(), 0) << err.msg;
        return e.tensor;
    }
    void Free(int64_t id, remat_phase ph, double dt = 1e-3) {
        // a free repeats its alloc's fields
        ASSERT_LT(id, (int64_t)alloc_at.size());
        remat_event e = t.events[alloc_at[id]];
        time += dt;
        e.time_s = time;
        e.kind = REMAT_EVENT_FREE;
        e.phase = (uint8_t)ph;
        e.iter = iter;
        remat_error err = {};
        EXPECT_GE(remat_trace_add_event(&t, &e, &err), 0) << err.msg;
    }
    void EndIter(int64_t first) {
        remat_iter_summary s;
        memset(&s, 0, sizeof s);
        s.first_event = first;
        s.n_events = t.n_events - first;
        remat_error err = {};
        EXPECT_GE(remat_trace_add_iter(&t, &s, &err), 0);
        iter++;
    }
};

// The known trace: two iterations of the tiny model. Hand-computed (iteration 1):
// before it 3000 B live (parameters 1000 + 500, gradients 1000 + 500); batch 4000;
// saved 8000 + 6000 + 3000 + 2000; loss 100 (freed); backward: act grad of lif2
// 2000 (-> 28000), workspace at b2/fc2 7777 -> 35777 = the peak, then frees.
constexpr int64_t kPeak = 3000 + 4000 + 8000 + 6000 + 3000 + 2000 + 2000 + 7777;
void BuildKnown(TB &b, const char *plan_text = "") {
    remat_error err = {};
    ASSERT_EQ(remat_trace_set_texts(&b.t, kModel, plan_text, &err), REMAT_OK) << err.msg;
    snprintf(b.t.backend, sizeof b.t.backend, "ref");
    int64_t first = 0;
    b.Alloc(1000, REMAT_PHASE_INIT, REMAT_ROLE_PARAMETER, 0, 0);
    b.Alloc(500, REMAT_PHASE_INIT, REMAT_ROLE_PARAMETER, 1, 2);
    b.Alloc(1000, REMAT_PHASE_INIT, REMAT_ROLE_GRADIENT, 0, 0);
    b.Alloc(500, REMAT_PHASE_INIT, REMAT_ROLE_GRADIENT, 1, 2);
    for (int it = 0; it < 2; it++) {
        if (it == 1) first = b.t.n_events;
        int64_t batch = b.Alloc(4000, REMAT_PHASE_FORWARD, REMAT_ROLE_BATCH);
        int64_t a1 = b.Alloc(8000, REMAT_PHASE_FORWARD, REMAT_ROLE_SAVED, 0, 0);
        int64_t a2 = b.Alloc(6000, REMAT_PHASE_FORWARD, REMAT_ROLE_SAVED, 0, 1);
        int64_t a3 = b.Alloc(3000, REMAT_PHASE_FORWARD, REMAT_ROLE_SAVED, 1, 2);
        int64_t a4 = b.Alloc(2000, REMAT_PHASE_FORWARD, REMAT_ROLE_SAVED, 1, 3);
        int64_t l = b.Alloc(100, REMAT_PHASE_LOSS, REMAT_ROLE_TRANSIENT);
        b.Free(l, REMAT_PHASE_LOSS);
        int64_t g4 = b.Alloc(2000, REMAT_PHASE_BACKWARD, REMAT_ROLE_ACT_GRAD, 1, 3);
        int64_t ws = b.Alloc(it == 1 ? 7777 : 10, REMAT_PHASE_BACKWARD, REMAT_ROLE_WORKSPACE, 1, 2);
        b.Free(ws, REMAT_PHASE_BACKWARD);
        b.Free(a4, REMAT_PHASE_BACKWARD);
        b.Free(g4, REMAT_PHASE_BACKWARD);
        b.Free(a3, REMAT_PHASE_BACKWARD);
        b.Free(a2, REMAT_PHASE_BACKWARD);
        b.Free(a1, REMAT_PHASE_BACKWARD);
        b.Free(batch, REMAT_PHASE_BACKWARD);
        b.EndIter(first);
    }
}

// Running live bytes, independently of plots/: value after each event.
std::vector<int64_t> LiveOracle(const remat_trace &t) {
    std::vector<int64_t> v;
    std::vector<int64_t> bytes(t.n_events + 1, 0);
    int64_t live = 0;
    for (int64_t i = 0; i < t.n_events; i++) {
        const remat_event &e = t.events[i];
        if (e.kind == REMAT_EVENT_ALLOC) { bytes[e.tensor] = e.bytes; live += e.bytes; }
        else live -= bytes[e.tensor];
        v.push_back(live);
    }
    return v;
}

// Rows of one data block (gnuplot index k) of a .dat file, comments skipped.
std::vector<std::vector<std::string>> DataBlock(const std::string &path, int k) {
    std::ifstream f(path);
    std::string line;
    std::vector<std::vector<std::string>> rows;
    int block = 0, blanks = 0;
    while (std::getline(f, line)) {
        if (line.empty()) {
            if (++blanks == 2) { block++; blanks = 0; }
            continue;
        }
        blanks = 0;
        if (line[0] == '#' || block != k) continue;
        std::istringstream ss(line);
        std::vector<std::string> cols;
        std::string c;
        while (ss >> c) cols.push_back(c);
        rows.push_back(cols);
    }
    return rows;
}

// ---- reduction ------------------------------------------------------------------

TEST(Reduce, KeepsASmallCurveWhole) {
    std::vector<double> x = {0, 1, 2, 3, 4};
    std::vector<int64_t> y = {5, 1, 7, 2, 9};
    std::vector<int64_t> keep(16);
    ASSERT_EQ(remat_reduce_m4(x.data(), y.data(), 5, 4000, keep.data()), 5);
    for (int i = 0; i < 5; i++) EXPECT_EQ(keep[i], i);
}

TEST(Reduce, BoundsPointsAndKeepsPeaksOfARandomWalk) {
    const int64_t n = 1000000, maxp = 4000;
    std::mt19937_64 rng(7);
    std::vector<double> x(n);
    std::vector<int64_t> y(n);
    int64_t v = 1 << 20;
    double t = 0;
    for (int64_t i = 0; i < n; i++) {
        t += (rng() % 4) * 1e-6;  // irregular times, some equal
        v += (int64_t)(rng() % 2001) - 1000;
        x[i] = t;
        y[i] = v;
    }
    std::vector<int64_t> keep(n);
    int64_t k = remat_reduce_m4(x.data(), y.data(), n, maxp, keep.data());
    ASSERT_LE(k, maxp);
    ASSERT_GT(k, maxp / 2);
    EXPECT_EQ(keep[0], 0);
    EXPECT_EQ(keep[k - 1], n - 1);
    for (int64_t i = 1; i < k; i++) ASSERT_LT(keep[i - 1], keep[i]);
    int64_t gmax = 0;
    for (int64_t i = 1; i < n; i++)
        if (y[i] > y[gmax]) gmax = i;
    bool kept = false;
    for (int64_t i = 0; i < k; i++) kept |= keep[i] == gmax;
    EXPECT_TRUE(kept) << "the global peak must survive exactly";
    // every local maximum lies under a kept point less than one bucket away
    const double w = (x[n - 1] - x[0]) / (maxp / 4);
    int64_t j = 0, checked = 0;
    for (int64_t i = 1; i + 1 < n; i++) {
        if (!(y[i] >= y[i - 1] && y[i] > y[i + 1])) continue;
        while (j < k && x[keep[j]] < x[i] - w) j++;
        bool covered = false;
        for (int64_t q = j; q < k && x[keep[q]] <= x[i] + w; q++) covered |= y[keep[q]] >= y[i];
        ASSERT_TRUE(covered) << "local maximum at " << i << " (" << y[i] << ") lost";
        checked++;
    }
    EXPECT_GT(checked, 100000);
}

TEST(Reduce, KeepsEverySparseLocalMaximumExactly) {
    // small noise plus 100 tall spikes far apart: each spike is a local maximum and
    // must be kept with its exact index and value
    const int64_t n = 1000000;
    std::vector<double> x(n);
    std::vector<int64_t> y(n);
    std::mt19937_64 rng(3);
    for (int64_t i = 0; i < n; i++) {
        x[i] = (double)i;
        y[i] = 1000 + (int64_t)(rng() % 50);
    }
    std::vector<int64_t> spikes;
    for (int s = 0; s < 100; s++) {
        int64_t at = 5000 + s * 9900 + (int64_t)(rng() % 100);
        y[at] = 5000 + s * 37;
        spikes.push_back(at);
    }
    std::vector<int64_t> keep(n);
    int64_t k = remat_reduce_m4(x.data(), y.data(), n, 4000, keep.data());
    ASSERT_LE(k, 4000);
    for (int64_t at : spikes) {
        bool kept = false;
        for (int64_t i = 0; i < k; i++) kept |= keep[i] == at;
        EXPECT_TRUE(kept) << "spike at " << at << " lost";
    }
}

// ---- curves of a known trace ---------------------------------------------------------

TEST(Curve, KnownTracePeakValueSiteAndPoints) {
    TB b;
    BuildKnown(b);
    remat_curve_opts o = remat_curve_opts_default();
    o.x = REMAT_CURVE_X_EVENT;
    remat_mem_curve c;
    remat_error err = {};
    ASSERT_EQ(remat_mem_curve_build(&b.t, "known.h5", &o, &c, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(c.iter, 1);
    EXPECT_EQ(c.n_events, b.t.iters[1].n_events);
    EXPECT_EQ(c.live.n, c.n_events + 1);  // small: nothing reduced
    EXPECT_EQ(c.live.n_full, c.n_events + 1);
    EXPECT_EQ(c.start_live, 3000);
    EXPECT_EQ(c.live.bytes[0], 3000);
    EXPECT_EQ(c.live.peak, kPeak);
    EXPECT_EQ(kPeak, 35777);
    // the oracle agrees on the value and on the event that reached it
    std::vector<int64_t> live = LiveOracle(b.t);
    int64_t arg = c.first_event;
    for (int64_t i = c.first_event; i < c.first_event + c.n_events; i++)
        if (live[i] > live[arg]) arg = i;
    EXPECT_EQ(live[arg], kPeak);
    EXPECT_EQ(c.live_site.event, arg);
    EXPECT_EQ(c.live.x[c.live.peak_i], (double)(arg - c.first_event + 1));
    EXPECT_EQ(c.live_site.block, 1);
    EXPECT_EQ(c.live_site.layer, 2);
    EXPECT_EQ(c.live_site.phase, REMAT_PHASE_BACKWARD);
    EXPECT_EQ(c.live_site.role, REMAT_ROLE_WORKSPACE);
    for (int64_t i = 0; i < c.live.n; i++) EXPECT_EQ(c.live.bytes[i], i == 0 ? 3000 : live[c.live.event[i]]);
    // the role split at the peak adds up to it
    int64_t sum = 0;
    for (int r = 0; r < REMAT_ROLE_COUNT; r++) sum += c.by_role_at_peak[r];
    EXPECT_EQ(sum, kPeak);
    EXPECT_EQ(c.by_role_at_peak[REMAT_ROLE_PARAMETER], 1500);
    EXPECT_EQ(c.by_role_at_peak[REMAT_ROLE_GRADIENT], 1500);
    EXPECT_EQ(c.by_role_at_peak[REMAT_ROLE_SAVED], 19000);
    EXPECT_EQ(c.by_role_at_peak[REMAT_ROLE_WORKSPACE], 7777);
    EXPECT_EQ(c.by_role_at_peak[REMAT_ROLE_ACT_GRAD], 2000);
    // names from the model text stored in the trace
    remat_model m;
    ASSERT_EQ(remat_plot_model_of(&b.t, &m), 1);
    char site[160];
    remat_plot_site_label(&m, &c.live_site, site, sizeof site);
    EXPECT_STREQ(site, "b2/fc2, backward");
    remat_model_free(&m);
    // phases: forward (5 events), loss (2), backward (9)
    ASSERT_EQ(c.n_spans, 3);
    EXPECT_EQ(c.spans[0].phase, REMAT_PHASE_FORWARD);
    EXPECT_EQ(c.spans[0].x0, 0.0);
    EXPECT_EQ(c.spans[1].phase, REMAT_PHASE_LOSS);
    EXPECT_EQ(c.spans[1].x0, 6.0);
    EXPECT_EQ(c.spans[2].phase, REMAT_PHASE_BACKWARD);
    EXPECT_EQ(c.spans[2].x0, 8.0);
    EXPECT_EQ(c.spans[2].x1, (double)c.n_events);
    remat_mem_curve_free(&c);

    // iteration 0 has its own, smaller peak (workspace 10 B), and a time axis in seconds
    o.iter = 0;
    o.x = REMAT_CURVE_X_TIME;
    ASSERT_EQ(remat_mem_curve_build(&b.t, "known.h5", &o, &c, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(c.live.peak, 3000 + 4000 + 19000 + 2000 + 10);  // act grad of lif2 plus the 10 B workspace
    EXPECT_EQ(c.start_live, 0);
    EXPECT_NEAR(c.x_end, (c.n_events - 1) * 1e-3, 1e-12);
    remat_mem_curve_free(&c);
}

TEST(Curve, ReservedFollowsTheCachingRules) {
    // 3 MiB comes from a 20 MiB large-pool segment; 24 MiB does not fit the 17 MiB
    // left there and gets its own 24 MiB segment; freeing keeps the segments
    TB b;
    int64_t a = b.Alloc(3 << 20, REMAT_PHASE_FORWARD, REMAT_ROLE_SAVED);
    int64_t c2 = b.Alloc(24 << 20, REMAT_PHASE_FORWARD, REMAT_ROLE_SAVED);
    b.Free(a, REMAT_PHASE_BACKWARD);
    b.Free(c2, REMAT_PHASE_BACKWARD);
    remat_mem_curve c;
    remat_error err = {};
    remat_curve_opts o = remat_curve_opts_default();
    ASSERT_EQ(remat_mem_curve_build(&b.t, "r.h5", &o, &c, &err), REMAT_OK) << err.msg;
    ASSERT_TRUE(c.has_reserved);
    ASSERT_EQ(c.reserved.n, 5);
    EXPECT_EQ(c.reserved.bytes[1], 20 << 20);
    EXPECT_EQ(c.reserved.bytes[2], 44 << 20);
    EXPECT_EQ(c.reserved.bytes[4], 44 << 20);
    EXPECT_EQ(c.reserved.peak, 44 << 20);
    EXPECT_EQ(c.live.peak, 27 << 20);
    EXPECT_EQ(c.live.bytes[4], 0);
    remat_mem_curve_free(&c);
    // "exact" traces have no reserved curve
    snprintf(b.t.allocator_config, sizeof b.t.allocator_config, "exact");
    ASSERT_EQ(remat_mem_curve_build(&b.t, "r.h5", &o, &c, &err), REMAT_OK) << err.msg;
    EXPECT_FALSE(c.has_reserved);
    EXPECT_EQ(c.reserved.n, 0);
    remat_mem_curve_free(&c);
    // a bad allocator config is named
    snprintf(b.t.allocator_config, sizeof b.t.allocator_config, "no_such_knob=3");
    EXPECT_EQ(remat_mem_curve_build(&b.t, "r.h5", &o, &c, &err), REMAT_ERR_INPUT);
    EXPECT_NE(std::string(err.msg).find("r.h5: allocator_config"), std::string::npos) << err.msg;
}

TEST(Curve, BadTracesAreRefusedWithFileAndField) {
    remat_curve_opts o = remat_curve_opts_default();
    remat_mem_curve c;
    {
        TB b;
        int64_t a = b.Alloc(10, REMAT_PHASE_FORWARD, REMAT_ROLE_SAVED);
        b.Free(a, REMAT_PHASE_BACKWARD);
        b.Free(a, REMAT_PHASE_BACKWARD);
        remat_error err = {};
        EXPECT_EQ(remat_mem_curve_build(&b.t, "bad.h5", &o, &c, &err), REMAT_ERR_INPUT);
        EXPECT_STREQ(err.msg, "bad.h5: events[2]: free of tensor 0 that is not live");
    }
    {
        TB b;
        b.Alloc(10, REMAT_PHASE_FORWARD, REMAT_ROLE_SAVED);
        b.Alloc(10, REMAT_PHASE_FORWARD, REMAT_ROLE_SAVED, -1, -1, -0.5);  // time goes back
        remat_error err = {};
        EXPECT_EQ(remat_mem_curve_build(&b.t, "back.h5", &o, &c, &err), REMAT_ERR_INPUT);
        EXPECT_NE(std::string(err.msg).find("back.h5: events[1].time_s"), std::string::npos) << err.msg;
    }
    {
        TB b;
        BuildKnown(b);
        remat_curve_opts o2 = o;
        o2.iter = 5;
        remat_error err = {};
        EXPECT_EQ(remat_mem_curve_build(&b.t, "known.h5", &o2, &c, &err), REMAT_ERR_INPUT);
        EXPECT_NE(std::string(err.msg).find("known.h5: --iter: expected 0..1"), std::string::npos) << err.msg;
    }
    {
        TB b;
        remat_error err = {};
        EXPECT_EQ(remat_mem_curve_build(&b.t, "empty.h5", &o, &c, &err), REMAT_ERR_INPUT);
        EXPECT_NE(std::string(err.msg).find("empty.h5: events"), std::string::npos) << err.msg;
    }
}

TEST(Curve, IterationsFromTheEventsWhenTheTraceHasNoSummaries) {
    TB b;
    int64_t a = b.Alloc(100, REMAT_PHASE_FORWARD, REMAT_ROLE_SAVED);
    b.Free(a, REMAT_PHASE_BACKWARD);
    b.iter = 1;
    int64_t c1 = b.Alloc(300, REMAT_PHASE_FORWARD, REMAT_ROLE_SAVED);
    int64_t c2 = b.Alloc(50, REMAT_PHASE_BACKWARD, REMAT_ROLE_ACT_GRAD);
    b.Free(c2, REMAT_PHASE_BACKWARD);
    b.Free(c1, REMAT_PHASE_BACKWARD);
    ASSERT_EQ(b.t.n_iters, 0);
    remat_curve_opts o = remat_curve_opts_default();
    remat_mem_curve c;
    remat_error err = {};
    ASSERT_EQ(remat_mem_curve_build(&b.t, "noiters.h5", &o, &c, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(c.iter, 1);
    EXPECT_EQ(c.first_event, 2);
    EXPECT_EQ(c.n_events, 4);
    EXPECT_EQ(c.live.peak, 350);
    remat_mem_curve_free(&c);
    o.iter = 0;
    ASSERT_EQ(remat_mem_curve_build(&b.t, "noiters.h5", &o, &c, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(c.live.peak, 100);
    EXPECT_EQ(c.n_events, 2);
    remat_mem_curve_free(&c);
    o.iter = 2;
    EXPECT_EQ(remat_mem_curve_build(&b.t, "noiters.h5", &o, &c, &err), REMAT_ERR_INPUT);
    EXPECT_STREQ(err.msg, "noiters.h5: --iter: no events of iteration 2 in the trace");
}

TEST(Figure, ATraceWithoutTimesIsDrawnOnTheEventAxis) {
    TB b;
    int64_t a = b.Alloc(100, REMAT_PHASE_FORWARD, REMAT_ROLE_SAVED, -1, -1, 0.0);
    b.Free(a, REMAT_PHASE_BACKWARD, 0.0);
    remat_plot_input in = {&b.t, "sim.h5", nullptr};
    remat_figure_opts fo = remat_figure_opts_default();
    std::string out = TmpDir() + "/notime.png";
    fo.out = out.c_str();
    fo.data_only = 1;
    remat_figure_files f;
    remat_error err = {};
    ASSERT_EQ(remat_plot_memory(&in, 1, nullptr, &fo, &f, &err), REMAT_OK) << err.msg;
    std::string gp = ReadAll(f.script);
    EXPECT_NE(gp.find("allocation events since the start of the iteration"), std::string::npos) << gp;
    auto rows = DataBlock(f.data, 0);
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[2][0], "2");
}

// A trace of about `n` events: a sawtooth of small tensors plus a few big spikes.
void BuildBig(TB &b, int64_t n, std::vector<int64_t> *spike_events) {
    std::mt19937_64 rng(11);
    std::vector<int64_t> live;
    b.Alloc(1 << 20, REMAT_PHASE_INIT, REMAT_ROLE_PARAMETER, 0, 0, 0);
    while (b.t.n_events < n) {
        remat_phase ph = b.t.n_events < n / 3 ? REMAT_PHASE_FORWARD : REMAT_PHASE_BACKWARD;
        if (spike_events && b.t.n_events % 50000 == 25000) {
            int64_t id = b.Alloc(64 << 20, ph, REMAT_ROLE_WORKSPACE, 1, 3, 1e-7);
            spike_events->push_back(b.t.n_events - 1);
            b.Free(id, ph, 1e-7);
            continue;
        }
        if (live.empty() || rng() % 2) live.push_back(b.Alloc(4096 + (int64_t)(rng() % 4096), ph, REMAT_ROLE_SAVED, 0, 1, 1e-7));
        else {
            size_t k = rng() % live.size();
            b.Free(live[k], ph, 1e-7);
            live[k] = live.back();
            live.pop_back();
        }
    }
}

TEST(Curve, AMillionEventsReduceFastAndKeepTheirPeaks) {
    TB b;
    std::vector<int64_t> spikes;
    BuildBig(b, 1000000, &spikes);
    remat_curve_opts o = remat_curve_opts_default();
    o.reserved = 0;
    remat_mem_curve c, full;
    remat_error err = {};
    // best of three: the machine is shared, the bound is for the code, not the neighbours
    double s = 1e9;
    for (int rep = 0; rep < 3; rep++) {
        if (rep) remat_mem_curve_free(&c);
        auto t0 = std::chrono::steady_clock::now();
        ASSERT_EQ(remat_mem_curve_build(&b.t, "big.h5", &o, &c, &err), REMAT_OK) << err.msg;
        s = std::min(s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    EXPECT_LT(s, 0.5 * kSlow) << "1M events took " << s << " s";
    printf("[   info   ] %lld events: live curve built and reduced to %lld points in %.3f s\n", (long long)b.t.n_events,
           (long long)c.live.n, s);
    EXPECT_LE(c.live.n, 4000);
    EXPECT_EQ(c.live.n_full, b.t.n_events + 1);
    o.full = 1;
    ASSERT_EQ(remat_mem_curve_build(&b.t, "big.h5", &o, &full, &err), REMAT_OK) << err.msg;
    ASSERT_EQ(full.live.n, b.t.n_events + 1);
    EXPECT_EQ(c.live.peak, full.live.peak);
    EXPECT_EQ(c.live_site.event, full.live_site.event);
    // every spike (a local maximum) is kept with its exact value
    for (int64_t ev : spikes) {
        bool kept = false;
        for (int64_t i = 0; i < c.live.n; i++)
            if (c.live.event[i] == ev) { kept = true; EXPECT_EQ(c.live.bytes[i], full.live.bytes[ev + 1]); }
        EXPECT_TRUE(kept) << "spike at event " << ev << " lost";
    }
    remat_mem_curve_free(&full);
    remat_mem_curve_free(&c);
    // with the caching-model replay too (reported; bounded loosely)
    o.full = 0;
    o.reserved = 1;
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(remat_mem_curve_build(&b.t, "big.h5", &o, &c, &err), REMAT_OK) << err.msg;
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(s, 5.0 * kSlow) << "1M events with the caching model took " << s << " s";
    EXPECT_LE(c.reserved.n, 4000);
    EXPECT_GE(c.reserved.peak, c.live.peak);
    printf("[   info   ] with the caching-model replay (reserved curve): %.3f s\n", s);
    remat_mem_curve_free(&c);
    // the whole figure, data and script only
    remat_plot_input in = {&b.t, "big.h5", "big"};
    remat_figure_opts fo = remat_figure_opts_default();
    std::string out = TmpDir() + "/big.png";
    fo.out = out.c_str();
    fo.data_only = 1;
    o.reserved = 0;
    remat_figure_files f;
    t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(remat_plot_memory(&in, 1, &o, &fo, &f, &err), REMAT_OK) << err.msg;
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(s, 1.0 * kSlow) << "figure data of 1M events took " << s << " s";
    printf("[   info   ] figure data and script of 1M events (no reserved): %.3f s\n", s);
    EXPECT_LE(DataBlock(f.data, 0).size(), 4000u);
}

// ---- figures ----------------------------------------------------------------------

TEST(Figure, MemoryDataFileHoldsThePeakAndDataOnlyWritesNoImage) {
    TB base, plan;
    BuildKnown(base);
    BuildKnown(plan);
    remat_plot_input in[2] = {{&base.t, "runs/base.h5", nullptr}, {&plan.t, "runs/plan.h5", "measured"}};
    remat_figure_opts fo = remat_figure_opts_default();
    std::string out = TmpDir() + "/mem_data_only.png";
    remove(out.c_str());
    fo.out = out.c_str();
    fo.data_only = 1;
    remat_curve_opts co = remat_curve_opts_default();
    co.x = REMAT_CURVE_X_EVENT;
    remat_figure_files f;
    remat_error err = {};
    ASSERT_EQ(remat_plot_memory(in, 2, &co, &fo, &f, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(std::string(f.data), TmpDir() + "/mem_data_only.dat");
    EXPECT_EQ(std::string(f.script), TmpDir() + "/mem_data_only.gp");
    EXPECT_TRUE(Exists(f.data));
    EXPECT_TRUE(Exists(f.script));
    EXPECT_FALSE(Exists(out)) << "--data-only drew an image";
    EXPECT_FALSE(Exists(std::string(f.data) + ".tmp"));
    EXPECT_FALSE(Exists(std::string(f.script) + ".tmp"));
    EXPECT_EQ(f.image_written, 0);
    // block 0: live of the first trace; the row holding the peak names its event
    auto rows = DataBlock(f.data, 0);
    ASSERT_EQ((int64_t)rows.size(), base.t.iters[1].n_events + 1);
    int64_t best = -1;
    size_t at = 0;
    for (size_t i = 0; i < rows.size(); i++)
        if (std::stoll(rows[i][1]) > best) { best = std::stoll(rows[i][1]); at = i; }
    EXPECT_EQ(best, kPeak);
    int64_t ev = std::stoll(rows[at][2]);
    EXPECT_EQ(base.t.events[ev].bytes, 7777);
    EXPECT_EQ(std::stoi(rows[at][3]), REMAT_PHASE_BACKWARD);
    EXPECT_EQ(std::stoi(rows[at][4]), 1);  // block
    EXPECT_EQ(std::stoi(rows[at][5]), 2);  // layer
    std::string gp = ReadAll(f.script);
    EXPECT_NE(gp.find("peak 34.94 KiB at b2/fc2, backward"), std::string::npos) << gp;
    EXPECT_NE(gp.find("'no checkpointing: live'"), std::string::npos);  // the first trace's plan name
    EXPECT_NE(gp.find("'measured: live'"), std::string::npos);  // an explicit label
    EXPECT_NE(gp.find("dat = './mem_data_only.dat'"), std::string::npos);
}

TEST(Figure, PlanNamesForLegends) {
    TB b;
    BuildKnown(b, "{\"blocks\": [{\"name\": \"b1\", \"checkpoint\": true, \"compressor\": \"bit\", \"k\": 2},"
                  " {\"name\": \"b2\", \"checkpoint\": true, \"compressor\": \"bit\", \"k\": 2}]}");
    remat_model m;
    ASSERT_EQ(remat_plot_model_of(&b.t, &m), 1);
    char lab[128];
    remat_plot_plan_label(&b.t, &m, "stem", lab, sizeof lab);
    EXPECT_STREQ(lab, "b1:bit/k2,b2:bit/k2");
    remat_error err = {};
    ASSERT_EQ(remat_trace_set_texts(&b.t, kModel, "{\"blocks\": [{\"name\": \"b2\", \"checkpoint\": true}]}", &err),
              REMAT_OK);
    remat_plot_plan_label(&b.t, &m, "stem", lab, sizeof lab);
    EXPECT_STREQ(lab, "b2");
    ASSERT_EQ(remat_trace_set_texts(&b.t, kModel, "{\"blocks\": [{\"name\": \"nope\"}]}", &err), REMAT_OK);
    remat_plot_plan_label(&b.t, &m, "stem", lab, sizeof lab);
    EXPECT_STREQ(lab, "stem");  // does not parse against the model: the file's stem
    ASSERT_EQ(remat_trace_set_texts(&b.t, kModel, "", &err), REMAT_OK);
    remat_plot_plan_label(&b.t, &m, "stem", lab, sizeof lab);
    EXPECT_STREQ(lab, "no checkpointing");
    remat_model_free(&m);
}

TEST(Figure, BreakdownBarsAddUpToThePeak) {
    TB base;
    BuildKnown(base);
    remat_plot_input in = {&base.t, "base.h5", nullptr};
    remat_figure_opts fo = remat_figure_opts_default();
    std::string out = TmpDir() + "/breakdown_data.svg";
    fo.out = out.c_str();
    fo.data_only = 1;
    remat_figure_files f;
    remat_error err = {};
    ASSERT_EQ(remat_plot_breakdown(&in, 1, nullptr, &fo, &f, &err), REMAT_OK) << err.msg;
    auto rows = DataBlock(f.data, 0);
    ASSERT_EQ(rows.size(), 1u);
    ASSERT_EQ(rows[0].size(), 3u + REMAT_ROLE_COUNT);
    EXPECT_EQ(std::stoll(rows[0][2]), kPeak);
    int64_t sum = 0;
    for (size_t k = 3; k < rows[0].size(); k++) sum += std::stoll(rows[0][k]);
    EXPECT_EQ(sum, kPeak);
    EXPECT_EQ(std::stoll(rows[0][3]), 1500);  // parameters first
    std::string gp = ReadAll(f.script);
    EXPECT_NE(gp.find("peak at b2/fc2, backward"), std::string::npos);
    EXPECT_NE(gp.find("title \"workspace\""), std::string::npos);
    EXPECT_EQ(gp.find("title \"optimizer state\""), std::string::npos);  // roles absent at the peak stay out of the key
}

// Every string of a script is one inert single-quoted literal (docs/security.md):
// ' doubled, a line break as a concatenation, control characters dropped, nothing
// else touched (backquotes, @, double quotes and backslashes are plain text there).
TEST(Figure, GnuplotStringsAreSingleQuotedAndInert) {
    char buf[256];
    size_t n = remat_gp_quote(buf, sizeof buf, "it's `id` @x \"y\" \\");
    EXPECT_EQ(n, strlen(buf));
    EXPECT_STREQ(buf, "'it''s `id` @x \"y\" \\'");
    remat_gp_quote(buf, sizeof buf, "a\nsystem('x')\x01\x7f");
    EXPECT_STREQ(buf, "'a'.\"\\n\".'system(''x'')'");
    EXPECT_EQ(remat_gp_quote(nullptr, 0, "abc"), 5u);  // the length it needs
    char small[4];
    EXPECT_EQ(remat_gp_quote(small, sizeof small, "abc"), 5u);  // cut: the caller must not use it
    EXPECT_STREQ(small, "'ab");
    std::string path = TmpDir() + "/gp_path.txt";
    FILE *f = fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    remat_gp_put_path(f, "<touch x.dat");
    fputc('\n', f);
    remat_gp_put_path(f, "/abs/|cmd.png");
    fputc('\n', f);
    remat_gp_put_datum(f, "a\"b\nc");
    fclose(f);
    EXPECT_EQ(ReadAll(path), "'./<touch x.dat'\n'/abs/|cmd.png'\n\"a'b c\"");
}

TEST(Figure, OutputNamesAndMissingGnuplot) {
    remat_figure_opts fo = remat_figure_opts_default();
    remat_figure_files f;
    remat_error err = {};
    fo.out = "x/fig.jpg";
    EXPECT_EQ(remat_figure_files_init(&fo, &f, &err), REMAT_ERR_INPUT);
    EXPECT_STREQ(err.msg, "x/fig.jpg: --out: expected a file name ending in .png or .svg");
    fo.out = "x/fig.SVG";
    err = {};
    ASSERT_EQ(remat_figure_files_init(&fo, &f, &err), REMAT_OK);
    EXPECT_EQ(f.format, REMAT_FIG_SVG);
    EXPECT_STREQ(f.data, "x/fig.dat");
    EXPECT_STREQ(f.script, "x/fig.gp");

    TB base;
    BuildKnown(base);
    remat_plot_input in = {&base.t, "base.h5", nullptr};
    std::string out = TmpDir() + "/nognuplot.png";
    remove(out.c_str());
    fo.out = out.c_str();
    fo.gnuplot = "/nonexistent/bin/gnuplot";
    err = {};
    EXPECT_EQ(remat_plot_memory(&in, 1, nullptr, &fo, &f, &err), REMAT_ERR_CHECK);
    EXPECT_EQ(remat_status_exit_code(err.status), 1);
    EXPECT_EQ(f.gnuplot_missing, 1);
    EXPECT_EQ(std::string(err.msg).rfind("gnuplot: not found", 0), 0u) << err.msg;
    EXPECT_EQ(std::string(err.msg).find('\n'), std::string::npos);
    EXPECT_TRUE(Exists(f.data));
    EXPECT_TRUE(Exists(f.script));
    EXPECT_FALSE(Exists(out));
}

// ---- Pareto and scaling files ----------------------------------------------------------

const char *kFront =
    "{\"points\": ["
    " {\"peak_bytes\": 74130040, \"time_s\": 1.18, \"chosen\": true, \"label\": \"ckpt b1,b2 (bit, k=4)\"},"
    " {\"peak_bytes\": 90000000, \"time_s\": 1.09, \"label\": \"ckpt b2\"},"
    " {\"peak_bytes\": 95000000, \"time_s\": 1.20, \"overhead\": 0.1428, \"extra\": 1},"
    " {\"peak_bytes\": 60000000, \"time_s\": 1.60}],"
    " \"baseline\": {\"peak_bytes\": 109126264, \"time_s\": 1.0}, \"budget_bytes\": 80000000}";

TEST(Pareto, ParsesDerivesOverheadAndFindsTheFront) {
    remat_pareto p;
    remat_error err = {};
    ASSERT_EQ(remat_pareto_parse(kFront, strlen(kFront), "front.json", &p, &err), REMAT_OK) << err.msg;
    ASSERT_EQ(p.n_points, 4);
    EXPECT_EQ(p.points[0].peak_bytes, 74130040);
    EXPECT_NEAR(p.points[0].overhead, 0.18, 1e-12);
    EXPECT_NEAR(p.points[2].overhead, 0.1428, 1e-12);
    EXPECT_TRUE(p.points[0].chosen);
    EXPECT_FALSE(p.points[1].chosen);
    EXPECT_STREQ(p.points[3].label, "plan 3");
    EXPECT_EQ(p.budget_bytes, 80000000);
    int idx[4];
    ASSERT_EQ(remat_pareto_front(&p, idx), 3);  // point 2 is dominated by point 1
    EXPECT_EQ(idx[0], 1);
    EXPECT_EQ(idx[1], 0);
    EXPECT_EQ(idx[2], 3);
    // write, read back: the same numbers
    std::string path = TmpDir() + "/front_rt.json";
    ASSERT_EQ(remat_pareto_write(path.c_str(), &p, &err), REMAT_OK) << err.msg;
    remat_pareto q;
    ASSERT_EQ(remat_pareto_read(path.c_str(), &q, &err), REMAT_OK) << err.msg;
    ASSERT_EQ(q.n_points, 4);
    for (int i = 0; i < 4; i++) {
        EXPECT_EQ(q.points[i].peak_bytes, p.points[i].peak_bytes);
        EXPECT_EQ(q.points[i].overhead, p.points[i].overhead);
        EXPECT_EQ(q.points[i].chosen, p.points[i].chosen);
        EXPECT_STREQ(q.points[i].label, p.points[i].label);
    }
    EXPECT_EQ(q.baseline_peak_bytes, 109126264);
    remat_pareto_free(&q);
    remat_pareto_free(&p);
}

TEST(Pareto, ErrorsNameTheField) {
    struct Case { const char *text, *want; } cases[] = {
        {"{\"points\": [{\"time_s\": 1}]}", "f.json: points[0].peak_bytes: missing"},
        {"{\"points\": [{\"peak_bytes\": 5, \"time_s\": 1}]}", "f.json: points[0].overhead: missing"},
        {"{\"points\": [{\"peak_bytes\": -5, \"time_s\": 1, \"overhead\": 0}]}", "f.json: points[0].peak_bytes: expected"},
        {"{\"points\": [{\"peak_bytes\": 5, \"time_s\": 1, \"overhead\": 0, \"chosen\": 1}]}", "f.json: points[0].chosen"},
        {"{\"points\": []}", "f.json: points: expected an array"},
        {"{\"points\": [", "f.json: (document): expected JSON"},
        {"{\"points\": [{\"peak_bytes\": 5, \"time_s\": 1}], \"baseline\": {\"peak_bytes\": 9}}", "f.json: baseline.time_s"},
    };
    for (const Case &c : cases) {
        remat_pareto p;
        remat_error err = {};
        EXPECT_EQ(remat_pareto_parse(c.text, strlen(c.text), "f.json", &p, &err), REMAT_ERR_INPUT) << c.text;
        EXPECT_EQ(std::string(err.msg).rfind(c.want, 0), 0u) << err.msg;
    }
    remat_pareto p;
    remat_error err = {};
    EXPECT_EQ(remat_pareto_read("/nonexistent/front.json", &p, &err), REMAT_ERR_IO);
    EXPECT_EQ(std::string(err.msg).rfind("/nonexistent/front.json: file: cannot open", 0), 0u) << err.msg;
}

const char *kScaling =
    "{\"x_name\": \"T\", \"series\": ["
    " {\"name\": \"baseline\", \"x\": [16, 32, 64, 128], \"peak_bytes\": [1800, 2600, 4200, 7400]},"
    " {\"name\": \"best\", \"x\": [16, 36, 64, 144], \"peak_bytes\": [1400, 1600, 1800, 2200]}]}";

TEST(Scaling, ParsesAndFitsLinearAndSqrt) {
    remat_scaling s;
    remat_error err = {};
    ASSERT_EQ(remat_scaling_parse(kScaling, strlen(kScaling), "s.json", &s, &err), REMAT_OK) << err.msg;
    ASSERT_EQ(s.n_series, 2);
    EXPECT_STREQ(s.x_name, "T");
    EXPECT_EQ(s.series[0].fit, REMAT_FIT_LINEAR);  // default: baseline ~ T
    EXPECT_EQ(s.series[1].fit, REMAT_FIT_SQRT);    // default: the last other ~ sqrt(T)
    double a = 0, b = 0;
    // baseline = 1000 + 50 T exactly
    ASSERT_TRUE(remat_scaling_fit_series(&s.series[0], REMAT_FIT_LINEAR, &a, &b));
    EXPECT_NEAR(a, 1000.0, 1e-6);
    EXPECT_NEAR(b, 50.0, 1e-9);
    // best = 1000 + 100 sqrt(T) exactly
    ASSERT_TRUE(remat_scaling_fit_series(&s.series[1], REMAT_FIT_SQRT, &a, &b));
    EXPECT_NEAR(a, 1000.0, 1e-6);
    EXPECT_NEAR(b, 100.0, 1e-9);
    std::string path = TmpDir() + "/scaling_rt.json";
    ASSERT_EQ(remat_scaling_write(path.c_str(), &s, &err), REMAT_OK) << err.msg;
    remat_scaling r;
    ASSERT_EQ(remat_scaling_read(path.c_str(), &r, &err), REMAT_OK) << err.msg;
    ASSERT_EQ(r.n_series, 2);
    EXPECT_EQ(r.series[1].peak_bytes[3], 2200);
    EXPECT_EQ(r.series[1].x[1], 36.0);
    remat_scaling_free(&r);
    remat_scaling_free(&s);

    const char *bad = "{\"x_name\": \"T\", \"series\": [{\"name\": \"b\", \"x\": [1, 2], \"peak_bytes\": [1]}]}";
    EXPECT_EQ(remat_scaling_parse(bad, strlen(bad), "s.json", &s, &err), REMAT_ERR_INPUT);
    EXPECT_EQ(std::string(err.msg).rfind("s.json: series[0].peak_bytes: expected an array of 2", 0), 0u) << err.msg;
    err = {};
    const char *badfit = "{\"x_name\": \"T\", \"series\": [{\"name\": \"b\", \"x\": [1], \"peak_bytes\": [1], \"fit\": \"cubic\"}]}";
    EXPECT_EQ(remat_scaling_parse(badfit, strlen(badfit), "s.json", &s, &err), REMAT_ERR_INPUT);
    EXPECT_EQ(std::string(err.msg).rfind("s.json: series[0].fit", 0), 0u) << err.msg;
}

// ---- gnuplot accepts every script ---------------------------------------------------------

void ExpectImage(const remat_figure_files &f) {
    ASSERT_EQ(f.image_written, 1);
    EXPECT_STREQ(f.gnuplot_stderr, "") << "gnuplot complained about " << f.script;
    std::string img = ReadAll(f.image);
    ASSERT_GT(img.size(), 1000u);
    if (f.format == REMAT_FIG_PNG) EXPECT_EQ(img.substr(0, 4), "\x89PNG");
    else EXPECT_NE(img.find("<svg"), std::string::npos);
    EXPECT_FALSE(Exists(std::string(f.image) + ".tmp"));
}

TEST(Gnuplot, AcceptsEveryFigureInPngAndSvg) {
    if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed (apt-get install gnuplot-nox); scripts not checked";
    TB base, plan;
    BuildKnown(base);
    BuildKnown(plan, "{\"blocks\": [{\"name\": \"b2\", \"checkpoint\": true, \"compressor\": \"bit\", \"k\": 2}]}");
    remat_plot_input in[2] = {{&base.t, "base.h5", nullptr}, {&plan.t, "plan.h5", nullptr}};
    remat_pareto p;
    remat_scaling s;
    remat_error err = {};
    ASSERT_EQ(remat_pareto_parse(kFront, strlen(kFront), "front.json", &p, &err), REMAT_OK) << err.msg;
    ASSERT_EQ(remat_scaling_parse(kScaling, strlen(kScaling), "s.json", &s, &err), REMAT_OK) << err.msg;
    for (const char *ext : {".png", ".svg"}) {
        for (int x = 0; x < 2; x++) {
            remat_curve_opts co = remat_curve_opts_default();
            co.x = x ? REMAT_CURVE_X_EVENT : REMAT_CURVE_X_TIME;
            std::string out = TmpDir() + "/mem" + std::to_string(x) + ext;
            remat_figure_opts fo = remat_figure_opts_default();
            fo.out = out.c_str();
            remat_figure_files f;
            ASSERT_EQ(remat_plot_memory(in, 2, &co, &fo, &f, &err), REMAT_OK) << err.msg;
            ExpectImage(f);
            out = TmpDir() + "/one" + std::to_string(x) + ext;
            fo.out = out.c_str();
            ASSERT_EQ(remat_plot_memory(in, 1, &co, &fo, &f, &err), REMAT_OK) << err.msg;
            ExpectImage(f);
        }
        remat_figure_opts fo = remat_figure_opts_default();
        remat_figure_files f;
        std::string out = TmpDir() + "/breakdown" + ext;
        fo.out = out.c_str();
        ASSERT_EQ(remat_plot_breakdown(in, 2, nullptr, &fo, &f, &err), REMAT_OK) << err.msg;
        ExpectImage(f);
        out = TmpDir() + "/pareto" + ext;
        fo.out = out.c_str();
        ASSERT_EQ(remat_plot_pareto(&p, "front.json", &fo, &f, &err), REMAT_OK) << err.msg;
        ExpectImage(f);
        out = TmpDir() + "/scaling" + ext;
        fo.out = out.c_str();
        ASSERT_EQ(remat_plot_scaling(&s, "s.json", &fo, &f, &err), REMAT_OK) << err.msg;
        ExpectImage(f);
    }
    remat_pareto_free(&p);
    remat_scaling_free(&s);
}

TEST(Gnuplot, KeptScriptRedrawsOnItsOwn) {
    if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed (apt-get install gnuplot-nox); scripts not checked";
    TB base;
    BuildKnown(base);
    remat_plot_input in = {&base.t, "base.h5", nullptr};
    std::string dir = TmpDir() + "/kept";
    mkdir(dir.c_str(), 0755);
    std::string out = dir + "/fig.png";
    remove(out.c_str());
    remat_figure_opts fo = remat_figure_opts_default();
    fo.out = out.c_str();
    fo.data_only = 1;
    remat_figure_files f;
    remat_error err = {};
    ASSERT_EQ(remat_plot_memory(&in, 1, nullptr, &fo, &f, &err), REMAT_OK) << err.msg;
    ASSERT_FALSE(Exists(out));
    std::string cmd = "cd '" + dir + "' && gnuplot fig.gp 2> gnuplot.err";
    ASSERT_EQ(system(cmd.c_str()), 0) << ReadAll(dir + "/gnuplot.err");
    EXPECT_EQ(ReadAll(dir + "/gnuplot.err"), "");
    EXPECT_EQ(ReadAll(out).substr(0, 4), "\x89PNG");
}

// ---- coordinates gnuplot computes (issue 11: integer division) ----------------------------

// What gnuplot prints for expr after the script's own scale definitions ("yscale = ...",
// "xscale = ..."); "" without gnuplot.
std::string GnuplotEval(const std::string &script, const std::string &expr) {
    char exe[4096];
    remat_figure_opts o = remat_figure_opts_default();
    if (!remat_gnuplot_find(&o, exe, sizeof exe)) return "";
    std::string defs, line;
    std::istringstream in(script);
    while (std::getline(in, line))
        if (line.rfind("yscale = ", 0) == 0 || line.rfind("xscale = ", 0) == 0) defs += line + "\n";
    std::string gp = TmpDir() + "/eval.gp";
    std::ofstream(gp) << defs << "set print \"-\"\nprint sprintf(\"%.17g\", " << expr << ")\n";
    std::string cmd = std::string(exe) + " " + gp + " 2>&1";
    FILE *f = popen(cmd.c_str(), "r");
    std::string out;
    char buf[256];
    while (f && fgets(buf, sizeof buf, f)) out += buf;
    if (f) pclose(f);
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
}

// The peak marker of a memory figure sits at the curve's maximum in the .dat file, in
// the figure's own units, at a MiB and a GiB scale (8357202264/1073741824 used to be 7).
TEST(Figure, PeakMarkerAtTheCurvesMaximumInMiBAndGiB) {
    for (int64_t big : {(int64_t)2691694, (int64_t)8357202264LL}) {  // 2.567 MiB, 7.78 GiB
        TB b;
        remat_error err = {};
        ASSERT_EQ(remat_trace_set_texts(&b.t, kModel, "", &err), REMAT_OK) << err.msg;
        snprintf(b.t.backend, sizeof b.t.backend, "ref");
        b.Alloc(1000, REMAT_PHASE_INIT, REMAT_ROLE_PARAMETER, 0, 0);
        int64_t first = b.t.n_events;
        int64_t a = b.Alloc(big / 3, REMAT_PHASE_FORWARD, REMAT_ROLE_SAVED, 0, 0);
        int64_t w = b.Alloc(big - big / 3 - 1000, REMAT_PHASE_BACKWARD, REMAT_ROLE_WORKSPACE, 1, 2);
        b.Free(w, REMAT_PHASE_BACKWARD);
        b.Free(a, REMAT_PHASE_BACKWARD);
        b.EndIter(first);
        remat_plot_input in = {&b.t, "big.h5", nullptr};
        remat_figure_opts fo = remat_figure_opts_default();
        std::string out = TmpDir() + "/peak" + std::to_string(big) + ".png";
        fo.out = out.c_str();
        fo.data_only = 1;
        remat_curve_opts co = remat_curve_opts_default();
        co.reserved = 0;
        remat_figure_files f;
        ASSERT_EQ(remat_plot_memory(&in, 1, &co, &fo, &f, &err), REMAT_OK) << err.msg;
        int64_t best = 0;
        for (const auto &row : DataBlock(f.data, 0)) best = std::max(best, (int64_t)std::stoll(row[1]));
        ASSERT_EQ(best, big);
        std::string gp = ReadAll(f.script);
        // the scale is a real literal, so nothing divides as integers
        size_t ys = gp.find("\nyscale = ");
        ASSERT_NE(ys, std::string::npos) << gp;
        std::string yline = gp.substr(ys + 10, gp.find('\n', ys + 1) - ys - 10);
        EXPECT_NE(yline.find('.'), std::string::npos) << yline;
        double yscale = std::stod(yline);
        EXPECT_EQ(yscale, big > (1LL << 30) ? 1073741824.0 : 1048576.0) << yline;
        // the marker: "set label 1 "" at first X/xscale, first Y/yscale point ..."
        size_t at = gp.find("set label 1 \"\" at first ");
        ASSERT_NE(at, std::string::npos) << gp;
        size_t c = gp.find(", first ", at + 24), e = gp.find(" point", c);
        std::string yexpr = gp.substr(c + 8, e - c - 8);
        EXPECT_EQ(yexpr, std::to_string(big) + "/yscale");
        std::string v = GnuplotEval(gp, yexpr);
        if (v.empty()) continue;  // no gnuplot: the literal checks above still hold
        EXPECT_NEAR(std::stod(v), (double)big / yscale, 1e-9) << yexpr << " evaluates to " << v;
        EXPECT_GT(std::stod(v) - std::floor(std::stod(v)), 0.1) << "whole units: " << v;
    }
}

// The scaling figure's title gives the value held fixed; no square root is fitted to a
// series that grows linearly; the budget is drawn as a line.
TEST(Scaling, TitleGivesNAndNoSqrtForcedOntoALinearSeries) {
    const char *lin =
        "{\"x_name\": \"T\", \"N\": 128, \"budget_bytes\": 6000, \"series\": ["
        " {\"name\": \"baseline\", \"x\": [16, 32, 64, 128], \"peak_bytes\": [1800, 2600, 4200, 7400]},"
        " {\"name\": \"plan\", \"x\": [16, 32, 64, 128], \"peak_bytes\": [1400, 1800, 2600, 4200]}]}";
    remat_scaling s;
    remat_error err = {};
    ASSERT_EQ(remat_scaling_parse(lin, strlen(lin), "s.json", &s, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(s.at_N, 128);
    EXPECT_EQ(s.budget_bytes, 6000);
    EXPECT_EQ(s.series[1].fit, REMAT_FIT_LINEAR);  // 1000 + 25 T: linear, not forced to sqrt
    remat_figure_opts fo = remat_figure_opts_default();
    std::string out = TmpDir() + "/scaling_n.png";
    fo.out = out.c_str();
    fo.data_only = 1;
    remat_figure_files f;
    ASSERT_EQ(remat_plot_scaling(&s, "s.json", &fo, &f, &err), REMAT_OK) << err.msg;
    std::string gp = ReadAll(f.script);
    EXPECT_NE(gp.find("Peak memory against T at N = 128"), std::string::npos) << gp;
    EXPECT_EQ(gp.find("sqrt(x)"), std::string::npos) << gp;
    EXPECT_NE(gp.find("budget = 6000 / yscale"), std::string::npos) << gp;
    // the file round-trips N and the budget
    std::string path = TmpDir() + "/scaling_n.json";
    ASSERT_EQ(remat_scaling_write(path.c_str(), &s, &err), REMAT_OK) << err.msg;
    remat_scaling r;
    ASSERT_EQ(remat_scaling_read(path.c_str(), &r, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(r.at_N, 128);
    EXPECT_EQ(r.budget_bytes, 6000);
    remat_scaling_free(&r);
    remat_scaling_free(&s);
    // a series that does grow like sqrt(T) still gets the sqrt reference (kScaling)
    ASSERT_EQ(remat_scaling_parse(kScaling, strlen(kScaling), "s.json", &s, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(s.series[1].fit, REMAT_FIT_SQRT);
    remat_scaling_free(&s);
}

}  // namespace
