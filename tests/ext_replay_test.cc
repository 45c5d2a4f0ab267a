// ext_replay_test.cc - an imported allocation stream replayed through the caching
// model (core/io/ext_replay.h): a hand-made stream that follows PyTorch's rules
// (every placement, segment and reserved byte predicted), a disagreement and what it
// reports, a window that starts mid-run (the start state reconstructed), what-ifs
// from a fresh start, and the real cs336 snapshot when ../shared/fixtures is there.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/io/ext_replay.h"
#include "core/io/torch_snapshot.h"
#include "tests/pickle_writer.h"
#include "tests/torch_fixtures.h"

namespace {

using remat_test::pickle_dumps;
using remat_test::Py;

constexpr int64_t KiB = 1024, MiB = 1 << 20;
constexpr int64_t S1 = (int64_t)1 << 40, S2 = S1 + 256 * MiB, S3 = S1 + 512 * MiB;

Py ev(const std::string &a, int64_t addr, int64_t size) {
    return Py::dict({{"action", Py::str(a)}, {"addr", Py::n(addr)}, {"size", Py::n(size)}, {"stream", Py::n(0)},
                     {"time_us", Py::n(0)}, {"frames", Py::list()}});
}
Py blk(int64_t addr, int64_t size, int64_t req, bool active) {
    return Py::dict({{"address", Py::n(addr)}, {"size", Py::n(size)}, {"requested_size", Py::n(req)},
                     {"state", Py::str(active ? "active_allocated" : "inactive")}});
}
Py seg(int64_t addr, int64_t size, const char *type, std::vector<Py> blocks) {
    return Py::dict({{"device", Py::n(0)}, {"address", Py::n(addr)}, {"total_size", Py::n(size)}, {"stream", Py::n(0)},
                     {"segment_type", Py::str(type)}, {"is_expandable", Py::b(false)}, {"blocks", Py::list(blocks)}});
}

// What PyTorch's allocator does for this program (hand-derived from its rules).
std::vector<Py> full_window() {
    return {ev("segment_alloc", S1, 2 * MiB),       // 0
            ev("alloc", S1, 4),                     // 1 small pool: 512 B block
            ev("alloc", S1 + 512, 1000),            // 2 1024 B block
            ev("segment_alloc", S2, 20 * MiB),      // 3
            ev("alloc", S2, 3 * MiB),               // 4 large pool, 20 MiB segment, split
            ev("alloc", S2 + 3 * MiB, 5 * MiB),     // 5
            ev("free_requested", S2, 3 * MiB),      // 6 still held
            ev("free_completed", S2, 3 * MiB),      // 7
            ev("alloc", S2, 2 * MiB),               // 8 best fit: the 3 MiB block, remainder 1 MiB not split
            ev("alloc", S2 + 8 * MiB, 1536 * KiB),  // 9 from the 12 MiB block
            ev("segment_alloc", S3, 12 * MiB),      // 10 >= 10 MiB: its own segment rounded to 2 MiB
            ev("alloc", S3, 12 * MiB - 100),        // 11
            ev("free_completed", S3, 12 * MiB - 100),
            ev("segment_free", S3, 12 * MiB)};      // 13 empty_cache
}

Py end_segments() {
    return Py::list({seg(S1, 2 * MiB, "small", {blk(S1, 512, 4, true), blk(S1 + 512, 1024, 1000, true),
                                                  blk(S1 + 1536, 2 * MiB - 1536, 0, false)}),
                     seg(S2, 20 * MiB, "large", {blk(S2, 3 * MiB, 2 * MiB, true), blk(S2 + 3 * MiB, 5 * MiB, 5 * MiB, true),
                                                  blk(S2 + 8 * MiB, 1536 * KiB, 1536 * KiB, true),
                                                  blk(S2 + 9 * MiB + 512 * KiB, 10 * MiB + 512 * KiB, 0, false)})});
}

Py snapshot(std::vector<Py> window) {
    Py settings = Py::dict({{"max_split_size", Py::n(-1)}, {"expandable_segments", Py::b(false)},
                            {"garbage_collection_threshold", Py::fl(0.0)}});
    return Py::dict({{"segments", end_segments()}, {"device_traces", Py::list({Py::list(window)})},
                     {"allocator_settings", settings}});
}

struct Replayed {
    remat_ext_trace t;
    remat_ext_replay r;
    remat_status st;
    remat_error err = {};
    Replayed(const Py &snap, const remat_caching_config *cfg = nullptr, int fresh = 0) {
        std::vector<uint8_t> b = pickle_dumps(snap);
        st = remat_torch_snapshot_import(b.data(), b.size(), "t.pickle", &t, &err);
        EXPECT_EQ(st, REMAT_OK) << err.msg;
        if (st == REMAT_OK) st = remat_ext_replay_run(&t, 0, cfg, fresh, &r, &err);
    }
    ~Replayed() { remat_ext_trace_free(&t); }
};

TEST(ExtReplay, EveryPlacementSegmentAndReservedByteOfAHandMadeStream) {
    Replayed x(snapshot(full_window()));
    ASSERT_EQ(x.st, REMAT_OK) << x.err.msg;
    const remat_ext_replay &r = x.r;
    EXPECT_EQ(r.allocations, 7);
    EXPECT_EQ(r.placed_at_recorded_address, 7);
    EXPECT_EQ(r.pool_allocations[0], 2);
    EXPECT_EQ(r.pool_placed[1], 5);
    EXPECT_EQ(r.first_mismatch_event, -1);
    EXPECT_EQ(r.reserved_start, 0);
    EXPECT_EQ(r.segment_allocs_recorded, 3);
    EXPECT_EQ(r.segment_allocs_matched, 3);
    EXPECT_EQ(r.segments_created_predicted, 3);
    EXPECT_EQ(r.segment_events_recorded, 4);
    EXPECT_EQ(r.segment_events_reserved_matched, 4);
    EXPECT_EQ(r.reserved_end_predicted, 22 * MiB);
    EXPECT_EQ(r.reserved_end_recorded, 22 * MiB);
    EXPECT_EQ(r.peak_reserved_predicted, 34 * MiB);
    EXPECT_EQ(r.peak_reserved_recorded, 34 * MiB);
    EXPECT_EQ(r.unknown_frees, 0);
    EXPECT_EQ(r.start_blocks_unplaced, 0);
}

TEST(ExtReplay, ReportsTheFirstDisagreementWithTheFreeBlocks) {
    std::vector<Py> w = full_window();
    w[8] = ev("alloc", S2 + 9 * MiB + 512 * KiB, 2 * MiB);  // as if PyTorch had not taken the best fit
    Replayed x(snapshot(w));
    ASSERT_EQ(x.st, REMAT_OK) << x.err.msg;
    EXPECT_EQ(x.r.placed_at_recorded_address, 6);
    EXPECT_EQ(x.r.first_mismatch_event, 8);
    EXPECT_EQ(x.r.first_mismatch_size, 2 * MiB);
    EXPECT_EQ(x.r.first_mismatch_predicted, S2);
    EXPECT_EQ(x.r.first_mismatch_recorded, S2 + 9 * MiB + 512 * KiB);
    ASSERT_EQ(x.r.first_mismatch_free_count, 2);  // the 3 MiB block and the 12 MiB one
    EXPECT_EQ(x.r.first_mismatch_free_addr[0], S2);
    EXPECT_EQ(x.r.first_mismatch_free_size[0], 3 * MiB);
    EXPECT_EQ(x.r.first_mismatch_free_addr[1], S2 + 8 * MiB);
}

// A window that starts after the first events: segments and live blocks before it
// come from the end state and the window.
TEST(ExtReplay, StartsFromTheStateTheSnapshotImplies) {
    std::vector<Py> w = full_window();
    std::vector<Py> late(w.begin() + 7, w.begin() + 10);  // free_completed S2, alloc 2 MiB, alloc 1.5 MiB
    Replayed x(snapshot(late));
    ASSERT_EQ(x.st, REMAT_OK) << x.err.msg;
    EXPECT_EQ(x.r.reserved_start, 22 * MiB);
    EXPECT_EQ(x.r.allocations, 2);
    EXPECT_EQ(x.r.placed_at_recorded_address, 2);
    EXPECT_EQ(x.r.start_blocks_unplaced, 0);
    EXPECT_EQ(x.r.unknown_frees, 0);
    EXPECT_EQ(x.r.reserved_end_predicted, x.r.reserved_end_recorded);
    EXPECT_NE(strstr(x.r.notes, "no segment events"), nullptr) << x.r.notes;
}

// Two streams: a block freed on stream 0 is not reused by stream 7, which gets its own
// segment, as in PyTorch; a single pool would have put it in stream 0's segment.
TEST(ExtReplay, BlocksAreReusedOnlyWithinTheirStream) {
    auto on = [](Py e, int64_t stream) { e.set("stream", Py::n(stream)); return e; };
    std::vector<Py> w = {ev("segment_alloc", S2, 20 * MiB), ev("alloc", S2, 3 * MiB),
                         ev("free_requested", S2, 3 * MiB), ev("free_completed", S2, 3 * MiB),
                         on(ev("segment_alloc", S3, 20 * MiB), 7), on(ev("alloc", S3, 2 * MiB), 7),
                         ev("alloc", S2, 2 * MiB)};
    Py snap = snapshot(w);
    Py seg3 = seg(S3, 20 * MiB, "large", {blk(S3, 2 * MiB, 2 * MiB, true), blk(S3 + 2 * MiB, 18 * MiB, 0, false)});
    seg3.set("stream", Py::n(7));
    Py seg2 = seg(S2, 20 * MiB, "large", {blk(S2, 2 * MiB, 2 * MiB, true), blk(S2 + 2 * MiB, 18 * MiB, 0, false)});
    snap.set("segments", Py::list({seg2, seg3}));
    Replayed x(snap);
    ASSERT_EQ(x.st, REMAT_OK) << x.err.msg;
    EXPECT_EQ(x.r.allocations, 3);
    EXPECT_EQ(x.r.placed_at_recorded_address, 3) << "first disagreement at event " << x.r.first_mismatch_event;
    EXPECT_EQ(x.r.streams, 2);
    EXPECT_EQ(x.r.segment_allocs_matched, 2);
    EXPECT_EQ(x.r.reserved_end_predicted, 40 * MiB);
    EXPECT_EQ(x.r.reserved_end_recorded, 40 * MiB);
    EXPECT_NE(strstr(x.r.notes, "one model per stream"), nullptr) << x.r.notes;
}

TEST(ExtReplay, WhatIfFromAFreshStart) {
    remat_caching_config exp = remat_caching_config_default();
    exp.expandable_segments = 1;
    Replayed base(snapshot(full_window()), nullptr, 1);
    Replayed x(snapshot(full_window()), &exp, 1);
    ASSERT_EQ(x.st, REMAT_OK) << x.err.msg;
    EXPECT_NE(strstr(x.r.config, "expandable_segments=1"), nullptr);
    EXPECT_NE(strstr(x.r.notes, "fresh start"), nullptr);
    // fixed: 2 + 20 + 12 MiB segments. Expandable: a 2 MiB small page, and the 12 MiB request
    // continues the large segment after its 9.5 MiB in use: a second 20 MiB page.
    EXPECT_EQ(base.r.peak_reserved_predicted, 34 * MiB);
    EXPECT_EQ(x.r.peak_reserved_predicted, 42 * MiB);
    EXPECT_GE(x.r.peak_allocated_predicted, 0);
    remat_ext_replay r;
    remat_error err = {};
    EXPECT_EQ(remat_ext_replay_run(&x.t, 3, nullptr, 0, &r, &err), REMAT_ERR_INPUT);
}

// Two devices with expandable segments; device 1 runs out of memory. What PyTorch does
// (CUDACachingAllocator.cpp, malloc): a 1 GiB request finds no free block and cannot
// map more pages, so release_cached_blocks unmaps every whole free page (the first
// 20 MiB page, freed by A; segment_unmap), the retry fails too and the request is
// recorded as an `oom` entry carrying device_free and no addr. Then C maps three more
// pages and D (10 MiB) takes the 10 MiB still mapped after the unmapped page.
Py oom_snapshot() {
    const int64_t E0 = (int64_t)1 << 41, E1 = (int64_t)1 << 42;
    std::vector<Py> d0 = {ev("segment_map", E0, 20 * MiB), ev("alloc", E0, 12 * MiB)};
    Py oom = Py::dict({{"action", Py::str("oom")}, {"device_free", Py::n(123 * MiB)}, {"size", Py::n(1024 * MiB)},
                       {"stream", Py::n(0)}, {"time_us", Py::n(0)}, {"frames", Py::list()}});
    std::vector<Py> d1 = {ev("segment_map", E1, 40 * MiB),          // 0
                          ev("alloc", E1, 30 * MiB),                        // 1 A: two 20 MiB pages
                          ev("segment_map", E1 + 40 * MiB, 20 * MiB),       // 2
                          ev("alloc", E1 + 30 * MiB, 30 * MiB),             // 3 B
                          ev("free_requested", E1, 30 * MiB),               // 4
                          ev("free_completed", E1, 30 * MiB),               // 5
                          ev("segment_unmap", E1, 20 * MiB),                // 6 release_cached_blocks
                          oom,                                              // 7 the 1 GiB request failed
                          ev("segment_map", E1 + 60 * MiB, 60 * MiB),       // 8
                          ev("alloc", E1 + 60 * MiB, 60 * MiB),             // 9 C
                          ev("alloc", E1 + 20 * MiB, 10 * MiB),             // 10 D: the mapped 10 MiB left
                          ev("user_defined", 0, 0)};                        // 11 an annotation
    d1.back().erase("addr").erase("size");
    auto xseg = [](int64_t dev, int64_t addr, int64_t size, std::vector<Py> blocks) {
        return Py::dict({{"device", Py::n(dev)}, {"address", Py::n(addr)}, {"total_size", Py::n(size)},
                         {"stream", Py::n(0)}, {"segment_type", Py::str("large")}, {"is_expandable", Py::b(true)},
                         {"blocks", Py::list(blocks)}});
    };
    Py segs = Py::list({xseg(0, E0, 20 * MiB, {blk(E0, 12 * MiB, 12 * MiB, true), blk(E0 + 12 * MiB, 8 * MiB, 0, false)}),
                        xseg(1, E1 + 20 * MiB, 100 * MiB,
                             {blk(E1 + 20 * MiB, 10 * MiB, 10 * MiB, true), blk(E1 + 30 * MiB, 30 * MiB, 30 * MiB, true),
                              blk(E1 + 60 * MiB, 60 * MiB, 60 * MiB, true)})});
    Py settings = Py::dict({{"max_split_size", Py::n(-1)}, {"expandable_segments", Py::b(true)},
                            {"garbage_collection_threshold", Py::fl(0.0)},
                            {"PYTORCH_CUDA_ALLOC_CONF", Py::str("expandable_segments:True")}});
    return Py::dict({{"segments", segs}, {"device_traces", Py::list({Py::list(d0), Py::list(d1)})},
                     {"allocator_settings", settings}});
}

TEST(ExtReplay, OutOfMemoryWithExpandableSegmentsOnOneOfTwoDevices) {
    std::vector<uint8_t> b = pickle_dumps(oom_snapshot());
    remat_ext_trace t;
    remat_error err = {};
    ASSERT_EQ(remat_torch_snapshot_import(b.data(), b.size(), "t.pickle", &t, &err), REMAT_OK) << err.msg;
    ASSERT_EQ(t.n_devices, 2);
    const remat_ext_event &oom = t.devices[1].events[7];
    EXPECT_EQ(oom.action, REMAT_EXT_OOM);
    EXPECT_EQ(oom.device_free, 123 * MiB);
    EXPECT_EQ(oom.size, 1024 * MiB);
    EXPECT_EQ(t.devices[1].events[11].action, REMAT_EXT_ANNOTATE);
    remat_ext_replay r0, r1;
    ASSERT_EQ(remat_ext_replay_run(&t, 0, nullptr, 0, &r0, &err), REMAT_OK) << err.msg;
    ASSERT_EQ(remat_ext_replay_run(&t, 1, nullptr, 0, &r1, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(r0.allocations, 1);
    EXPECT_EQ(r0.placed_at_recorded_address, 1);
    EXPECT_EQ(r0.reserved_end_predicted, 20 * MiB);
    EXPECT_EQ(r0.reserved_end_recorded, 20 * MiB);
    EXPECT_EQ(r1.reserved_start, 0);  // every mapped byte at the end was mapped in the window
    EXPECT_EQ(r1.allocations, 4);
    EXPECT_EQ(r1.placed_at_recorded_address, 4) << "first disagreement at event " << r1.first_mismatch_event
                                                << ": predicted " << r1.first_mismatch_predicted;
    EXPECT_EQ(r1.reserved_end_predicted, 100 * MiB);
    EXPECT_EQ(r1.reserved_end_recorded, 100 * MiB);
    EXPECT_EQ(r1.peak_reserved_recorded, 100 * MiB);  // 60 MiB, 40 after the unmap, then 100
    EXPECT_EQ(r1.peak_reserved_predicted, 100 * MiB);
    EXPECT_EQ(r1.segment_events_reserved_matched, r1.segment_events_recorded);
    EXPECT_NE(strstr(r1.notes, "oom"), nullptr) << r1.notes;
    remat_ext_trace_free(&t);
}

TEST(ExtReplay, RealSnapshot) {
    std::string dir = remat_test::torch_fixture_dir("fuzz/seeds/pickle/scalars.pickle", 3);
    if (dir.empty()) GTEST_SKIP() << "../shared/fixtures/torch-snapshots is absent: the model is not checked on real runs";
    remat_ext_trace t;
    remat_error err = {};
    ASSERT_EQ(remat_torch_snapshot_load((dir + "/cs336-memory_snapshot.pickle").c_str(), &t, nullptr, &err), REMAT_OK)
        << err.msg;
    remat_ext_replay r;
    ASSERT_EQ(remat_ext_replay_run(&t, 0, nullptr, 0, &r, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(r.allocations, 1721);
    EXPECT_EQ(r.placed_at_recorded_address, 1721) << "first disagreement at event " << r.first_mismatch_event;
    EXPECT_EQ(r.pool_allocations[0], 350);
    EXPECT_EQ(r.reserved_end_predicted, r.reserved_end_recorded);
    EXPECT_EQ(r.unknown_frees, 0);
    EXPECT_EQ(r.start_blocks_unplaced, 0);
    // a rule that matters: with max_split_size=64MiB placements change
    remat_caching_config c;
    ASSERT_EQ(remat_caching_config_parse("max_split_size=64MiB", &c, &err), REMAT_OK);
    remat_ext_replay q;
    ASSERT_EQ(remat_ext_replay_run(&t, 0, &c, 0, &q, &err), REMAT_OK);
    EXPECT_LT(q.placed_at_recorded_address, 1721);
    remat_ext_trace_free(&t);
}

}  // namespace
