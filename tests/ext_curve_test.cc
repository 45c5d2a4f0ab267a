// ext_curve_test.cc - curves of an external allocation stream (plots/ext_curve.h):
// allocated and reserved bytes reconstructed from the end state and the window,
// the peak and what was live at it, the breakdown by allocation site, the M4
// reduction keeping the exact peak, and the figure's data file.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "core/io/ext_trace.h"
#include "plots/ext_curve.h"
#include "plots/extplot.h"

namespace {

constexpr int64_t MiB = 1 << 20;
constexpr int64_t A = (int64_t)1 << 40;

void ev(remat_ext_device *d, int a, int64_t addr, int64_t size, int64_t t, int32_t label = -1) {
    remat_ext_event e = {addr, size, 0, t, -1, label, (uint8_t)a, {0}};
    remat_error err = {};
    ASSERT_GE(remat_ext_add_event(d, &e, &err), 0);
}

// One 20 MiB segment; P (4 MiB) live before the window and freed in it; Q (2 MiB)
// live before and after; the window allocates X (6 MiB, freed) and Y (1 MiB, live at the end),
// and creates a second 2 MiB segment.
struct Fixture {
    remat_ext_trace t;
    Fixture() {
        remat_ext_trace_init(&t);
        remat_error err = {};
        EXPECT_EQ(remat_ext_trace_set_devices(&t, 1, &err), REMAT_OK);
        int32_t lx = remat_ext_add_label(&t, "x_site", 6, &err);
        int32_t ly = remat_ext_add_label(&t, "y_site", 6, &err);
        int32_t lq = remat_ext_add_label(&t, "q_site", 6, &err);
        remat_ext_device *d = &t.devices[0];
        remat_ext_segment s1 = {A, 20 * MiB, 0, 0, 3, REMAT_EXT_POOL_LARGE, 0, {0}};
        remat_ext_segment s2 = {A + 64 * MiB, 2 * MiB, 0, 3, 1, REMAT_EXT_POOL_SMALL, 0, {0}};
        remat_ext_add_segment(d, &s1, &err);
        remat_ext_add_segment(d, &s2, &err);
        remat_ext_block b[4] = {
            {A, 2 * MiB, 2 * MiB, lq, REMAT_EXT_BLOCK_ACTIVE, {0}},
            {A + 2 * MiB, 1 * MiB, 1 * MiB, ly, REMAT_EXT_BLOCK_ACTIVE, {0}},
            {A + 3 * MiB, 17 * MiB, 0, -1, REMAT_EXT_BLOCK_INACTIVE, {0}},
            {A + 64 * MiB, 2 * MiB, 0, -1, REMAT_EXT_BLOCK_INACTIVE, {0}},
        };
        for (auto &x : b) remat_ext_add_block(d, &x, &err);
        ev(d, REMAT_EXT_ALLOC, A + 8 * MiB, 6 * MiB, 1000, lx);       // X: 2+4+6 = 12
        ev(d, REMAT_EXT_FREE_REQUESTED, A + 4 * MiB, 4 * MiB, 2000);  // P requested: still held
        ev(d, REMAT_EXT_FREE_COMPLETED, A + 4 * MiB, 4 * MiB, 3000);  // P: 8
        ev(d, REMAT_EXT_SEGMENT_ALLOC, A + 64 * MiB, 2 * MiB, 4000);
        ev(d, REMAT_EXT_ALLOC, A + 2 * MiB, 1 * MiB, 5000, ly);       // Y: 9
        ev(d, REMAT_EXT_FREE_COMPLETED, A + 8 * MiB, 6 * MiB, 6000);  // X: 3
    }
    ~Fixture() { remat_ext_trace_free(&t); }
};

TEST(ExtCurve, ReconstructsTheWindowFromTheEndState) {
    Fixture f;
    remat_ext_curve c;
    remat_error err = {};
    ASSERT_EQ(remat_ext_curve_build(&f.t, 0, &c, &err), REMAT_OK) << err.msg;
    ASSERT_EQ(c.n, 7);
    const int64_t want_alloc[7] = {6, 12, 12, 8, 8, 9, 3};
    const int64_t want_res[7] = {20, 20, 20, 20, 22, 22, 22};
    for (int i = 0; i < 7; i++) {
        EXPECT_EQ(c.allocated[i], want_alloc[i] * MiB) << i;
        EXPECT_EQ(c.reserved[i], want_res[i] * MiB) << i;
    }
    EXPECT_TRUE(c.x_is_time);
    EXPECT_DOUBLE_EQ(c.x[6], 0.005);
    EXPECT_EQ(c.peak_allocated, 12 * MiB);
    EXPECT_EQ(c.peak_point, 1);
    EXPECT_EQ(c.peak_reserved, 22 * MiB);
    EXPECT_EQ(c.inconsistent, 0);
    ASSERT_EQ(c.n_peak_live, 3);  // X, P, Q
    EXPECT_EQ(c.peak_live[0].bytes, 6 * MiB);
    EXPECT_STREQ(remat_ext_label(&f.t, c.peak_live[0].label), "x_site");
    EXPECT_EQ(c.peak_live[1].bytes, 4 * MiB);
    EXPECT_EQ(c.peak_live[1].before_window, 1);
    EXPECT_EQ(c.peak_live[1].label, -1);
    int32_t labels[4];
    int64_t bytes[4];
    ASSERT_EQ(remat_ext_curve_breakdown(&c, labels, bytes, 4, &err), 3);
    EXPECT_EQ(bytes[0], 6 * MiB);
    EXPECT_EQ(labels[1], -1);
    EXPECT_STREQ(remat_ext_label(&f.t, labels[2]), "q_site");
    remat_ext_curve_free(&c);
    EXPECT_EQ(remat_ext_curve_build(&f.t, 1, &c, &err), REMAT_ERR_INPUT);
}

// A stream that contradicts itself (an address freed twice, an alloc over a live
// block) is counted, and the curve does not drift: the second free changes nothing.
TEST(ExtCurve, ContradictionsAreCountedNotAccumulated) {
    Fixture f;
    remat_ext_device *d = &f.t.devices[0];
    for (int rep = 0; rep < 3; rep++) {
        ev(d, REMAT_EXT_FREE_COMPLETED, A + 4 * MiB, 4 * MiB, 7000 + rep);  // P again: already freed
        ev(d, REMAT_EXT_ALLOC, A + 2 * MiB, 1 * MiB, 7100 + rep);           // Y again: still live
    }
    remat_ext_curve c;
    remat_error err = {};
    ASSERT_EQ(remat_ext_curve_build(&f.t, 0, &c, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(c.inconsistent, 6);
    EXPECT_EQ(c.allocated[0], 6 * MiB);  // P counted once before the window
    EXPECT_EQ(c.allocated[c.n - 1], 3 * MiB);
    EXPECT_EQ(c.peak_allocated, 12 * MiB);
    remat_ext_curve_free(&c);
}

// Without time_us on every event the x axis is the event index.
TEST(ExtCurve, EventAxisWithoutTimes) {
    Fixture f;
    f.t.devices[0].events[2].time_us = -1;
    remat_ext_curve c;
    remat_error err = {};
    ASSERT_EQ(remat_ext_curve_build(&f.t, 0, &c, &err), REMAT_OK);
    EXPECT_FALSE(c.x_is_time);
    EXPECT_EQ(c.x[6], 6.0);
    remat_ext_curve_free(&c);
}

// 200k events reduced to 400 points: the exact peak is in the data file.
TEST(ExtPlot, ReducedDataKeepsTheExactPeak) {
    remat_ext_trace t;
    remat_ext_trace_init(&t);
    remat_error err = {};
    ASSERT_EQ(remat_ext_trace_set_devices(&t, 1, &err), REMAT_OK);
    remat_ext_device *d = &t.devices[0];
    int64_t peak = 0, live = 0;
    for (int64_t i = 0; i < 100000; i++) {
        int64_t sz = 512 * (1 + (i * 7919) % 997) + (i == 61234 ? 3 * MiB : 0);
        ev(d, REMAT_EXT_ALLOC, A + 4 * MiB * i, sz, i * 10);
        live += sz;
        if (live > peak) peak = live;
        ev(d, REMAT_EXT_FREE_COMPLETED, A + 4 * MiB * i, sz, i * 10 + 5);
        live -= sz;
    }
    remat_ext_curve c;
    ASSERT_EQ(remat_ext_curve_build(&t, 0, &c, &err), REMAT_OK);
    EXPECT_EQ(c.peak_allocated, peak);
    const char *tmpd = getenv("TEST_TMPDIR");
    std::string out = std::string(tmpd ? tmpd : "/tmp") + "/extplot.png";
    remat_figure_opts fo = remat_figure_opts_default();
    fo.out = out.c_str();
    fo.data_only = 1;
    remat_figure_files files;
    ASSERT_EQ(remat_plot_ext(&t, &c, "x.h5", 400, &fo, &files, &err), REMAT_OK) << err.msg;
    std::ifstream in(files.data);
    std::string line;
    int block = 0, points = 0;
    int64_t best = 0;
    while (std::getline(in, line)) {
        if (line.empty()) { block++; continue; }
        if (line[0] == '#' || block > 0) continue;
        double x;
        long long y;
        ASSERT_EQ(sscanf(line.c_str(), "%lf %lld", &x, &y), 2) << line;
        points++;
        if (y > best) best = y;
    }
    EXPECT_LE(points, 400);
    EXPECT_EQ(best, peak);
    remat_ext_curve_free(&c);
    remat_ext_trace_free(&t);
}

}  // namespace
