// torch_import_test.cc - importing PyTorch memory snapshots (core/io/torch_snapshot.h)
// and the external allocation stream in HDF5 (core/io/ext_trace.h): snapshot-shaped
// pickles made here (new layout, 2023 layout, expandable segments, OOM entries,
// missing fields, truncations, hostile lengths), the HDF5 round trip and its checks,
// and the real snapshots of ../shared/fixtures when they are there.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <hdf5.h>

#include "core/io/ext_trace.h"
#include "core/io/torch_snapshot.h"
#include "tests/pickle_writer.h"
#include "tests/torch_fixtures.h"

// HDF5 1.10 leaks a few hundred bytes in some of its own error paths when an object
// header fails its checksum (see trace_h5_test.cc): leak checking is paused around
// those deliberate reads of corrupted files only; remat's own allocations are still
// checked there through remat_xmem_live.
#include "tests/hdf5_leaks.h"

namespace {

using remat_test::pickle_dumps;
using remat_test::Py;

constexpr int64_t MiB = 1 << 20;
constexpr int64_t S1 = (int64_t)1 << 40;          // a small segment
constexpr int64_t S2 = ((int64_t)1 << 40) + 64 * MiB;  // a large one

Py frame(const std::string &name, const std::string &file, int64_t line) {
    return Py::dict({{"name", Py::str(name)}, {"filename", Py::str(file)}, {"line", Py::n(line)}});
}

Py entry(const std::string &action, int64_t addr, int64_t size, int64_t t, std::vector<Py> frames = {}) {
    return Py::dict({{"action", Py::str(action)}, {"addr", Py::n(addr)}, {"size", Py::n(size)}, {"stream", Py::n(0)},
                     {"time_us", Py::n(t)}, {"frames", Py::list(frames)}, {"compile_context", Py::str("N/A")},
                     {"user_metadata", Py::str("")}});
}

Py block(int64_t addr, int64_t size, int64_t req, const std::string &state, std::vector<Py> frames = {}) {
    return Py::dict({{"address", Py::n(addr)}, {"size", Py::n(size)}, {"requested_size", Py::n(req)},
                     {"state", Py::str(state)}, {"frames", Py::list(frames)}});
}

// A 2025-style snapshot: two segments, a window with segment events and an OOM.
Py new_snapshot() {
    std::vector<Py> f1 = {frame("forward", "/src/model.py", 54), frame("_call_impl", "/torch/nn/module.py", 1790),
                          frame("step", "C:\\run\\train.py", 9), frame("<module>", "train.py", 1)};
    std::vector<Py> f2 = {frame("backward", "/torch/_tensor.py", 631)};
    Py seg1 = Py::dict({{"device", Py::n(0)}, {"address", Py::n(S1)}, {"total_size", Py::n(2 * MiB)},
                        {"allocated_size", Py::n(512)}, {"active_size", Py::n(512)}, {"requested_size", Py::n(4)},
                        {"stream", Py::n(0)}, {"segment_type", Py::str("small")},
                        {"segment_pool_id", Py::tuple({Py::n(0), Py::n(0)})}, {"is_expandable", Py::b(false)},
                        {"frames", Py::list()},
                        {"blocks", Py::list({block(S1, 512, 4, "active_allocated", f1),
                                             block(S1 + 512, 2 * MiB - 512, 0, "inactive")})}});
    Py seg2 = Py::dict({{"device", Py::n(0)}, {"address", Py::n(S2)}, {"total_size", Py::n(20 * MiB)},
                        {"stream", Py::n(0)}, {"segment_type", Py::str("large")}, {"is_expandable", Py::b(false)},
                        {"blocks", Py::list({block(S2, 20 * MiB, 0, "inactive")})}});
    Py oom = entry("oom", 0, 40 * MiB, 107);
    oom.erase("addr").set("device_free", Py::n(12345));  // as PyTorch writes it: device_free in the addr slot
    Py trace = Py::list({entry("segment_alloc", S1, 2 * MiB, 100), entry("alloc", S1, 4, 101, f1),
                         entry("segment_alloc", S2, 20 * MiB, 102), entry("alloc", S2, 3 * MiB, 103, f2),
                         entry("free_requested", S2, 3 * MiB, 104, f2), entry("free_completed", S2, 3 * MiB, 105, f2),
                         oom});
    Py settings = Py::dict({{"PYTORCH_CUDA_ALLOC_CONF", Py::str("max_split_size_mb:64,expandable_segments:False")},
                            {"max_split_size", Py::n(64 * MiB)}, {"garbage_collection_threshold", Py::fl(0.0)},
                            {"expandable_segments", Py::b(false)},
                            {"roundup_power2_divisions", Py::dict({{"1", Py::n(0)}, {"2", Py::n(0)}})}});
    // seg2 listed first: the importer orders segments by address
    return Py::dict({{"segments", Py::list({seg2, seg1})}, {"device_traces", Py::list({trace})},
                     {"allocator_settings", settings}, {"external_annotations", Py::list()}});
}

// The 2023 layout: blocks with history and no address, no time_us, no settings.
Py old_snapshot() {
    Py hist = Py::list({Py::dict({{"addr", Py::n(S2)}, {"real_size", Py::n(1000000)},
                                  {"frames", Py::list({frame("init_weight", "/a/flex_opt.py", 125)})}})});
    Py b1 = Py::dict({{"size", Py::n(1048576)}, {"requested_size", Py::n(1000000)},
                      {"state", Py::str("active_allocated")}, {"history", hist}});
    Py b2 = Py::dict({{"size", Py::n(20 * MiB - 1048576)}, {"requested_size", Py::n(0)}, {"state", Py::str("inactive")}});
    Py seg = Py::dict({{"device", Py::n(0)}, {"address", Py::n(S2)}, {"total_size", Py::n(20 * MiB)},
                       {"allocated_size", Py::n(1048576)}, {"stream", Py::n(0)}, {"segment_type", Py::str("large")},
                       {"blocks", Py::list({b1, b2})}});
    Py e = Py::dict({{"action", Py::str("free_completed")}, {"addr", Py::n(S2)}, {"size", Py::n(8)},
                     {"stream", Py::n(0)}});
    return Py::dict({{"segments", Py::list({seg})}, {"device_traces", Py::list({Py::list({e})})}});
}

struct Imported {
    remat_ext_trace t;
    remat_error err = {};
    remat_status st;
    std::vector<uint8_t> bytes;
    explicit Imported(const std::vector<uint8_t> &b) : bytes(b) {
        st = remat_torch_snapshot_import(bytes.data(), bytes.size(), "t.pickle", &t, &err);
    }
    explicit Imported(const Py &p) : Imported(pickle_dumps(p)) {}
    ~Imported() { remat_ext_trace_free(&t); }
};

TEST(TorchImport, NewLayout) {
    Imported im(new_snapshot());
    ASSERT_EQ(im.st, REMAT_OK) << im.err.msg;
    const remat_ext_trace &t = im.t;
    ASSERT_EQ(t.n_devices, 1);
    const remat_ext_device &d = t.devices[0];
    ASSERT_EQ(d.n_segments, 2);
    EXPECT_EQ(d.segments[0].address, S1);  // sorted by address
    EXPECT_EQ(d.segments[0].pool, REMAT_EXT_POOL_SMALL);
    EXPECT_EQ(d.segments[1].pool, REMAT_EXT_POOL_LARGE);
    EXPECT_EQ(d.segments[0].first_block, 0);
    EXPECT_EQ(d.segments[0].n_blocks, 2);
    EXPECT_EQ(d.segments[1].first_block, 2);
    ASSERT_EQ(d.n_blocks, 3);
    EXPECT_EQ(d.blocks[1].address, S1 + 512);
    EXPECT_EQ(d.blocks[0].state, REMAT_EXT_BLOCK_ACTIVE);
    EXPECT_EQ(d.blocks[0].requested_size, 4);
    EXPECT_STREQ(remat_ext_label(&t, d.blocks[0].label),
                 "forward (model.py:54) < _call_impl (module.py:1790) < step (train.py:9)");
    EXPECT_EQ(d.blocks[1].label, -1);
    ASSERT_EQ(d.n_events, 7);
    EXPECT_EQ(d.events[0].action, REMAT_EXT_SEGMENT_ALLOC);
    EXPECT_EQ(d.events[1].label, d.blocks[0].label);  // deduplicated
    EXPECT_EQ(d.events[3].size, 3 * MiB);
    EXPECT_EQ(d.events[3].time_us, 103);
    EXPECT_EQ(d.events[6].action, REMAT_EXT_OOM);
    EXPECT_EQ(d.events[6].device_free, 12345);
    EXPECT_EQ(d.events[6].addr, -1);  // an oom entry has no addr
    EXPECT_EQ(d.events[5].device_free, -1);
    EXPECT_EQ(t.n_labels, 2);
    EXPECT_EQ(t.settings_recorded, 1);
    EXPECT_NE(strstr(t.allocator_settings, "max_split_size=67108864"), nullptr) << t.allocator_settings;
    EXPECT_NE(strstr(t.allocator_settings, "roundup_power2_divisions=none"), nullptr) << t.allocator_settings;
    EXPECT_NE(strstr(t.allocator_config, "max_split_size=67108864"), nullptr) << t.allocator_config;
    EXPECT_STREQ(t.notes, "") << "nothing is missing";
    EXPECT_STREQ(t.source_file, "t.pickle");
}

TEST(TorchImport, OldLayoutDerivesAddressesAndReportsWhatIsMissing) {
    Imported im(old_snapshot());
    ASSERT_EQ(im.st, REMAT_OK) << im.err.msg;
    const remat_ext_device &d = im.t.devices[0];
    ASSERT_EQ(d.n_blocks, 2);
    EXPECT_EQ(d.blocks[0].address, S2);
    EXPECT_EQ(d.blocks[1].address, S2 + 1048576);
    EXPECT_STREQ(remat_ext_label(&im.t, d.blocks[0].label), "init_weight (flex_opt.py:125)");
    EXPECT_EQ(d.events[0].time_us, -1);
    EXPECT_EQ(im.t.settings_recorded, 0);
    EXPECT_STREQ(im.t.allocator_config, "");
    for (const char *what : {"allocator_settings: absent", "time_us: absent in 1", "blocks.address: absent in 2",
                             "is_expandable: absent in 1"})
        EXPECT_NE(strstr(im.t.notes, what), nullptr) << what << " in: " << im.t.notes;
}

TEST(TorchImport, ExpandableSegmentsAndSettingsNotModelled) {
    Py s = new_snapshot();
    Py &seg = s.get("segments")->items[0];
    seg.set("is_expandable", Py::b(true));
    s.get("allocator_settings")->set("expandable_segments", Py::b(true));
    s.get("allocator_settings")->set("garbage_collection_threshold", Py::fl(0.8));
    s.get("allocator_settings")->set("roundup_power2_divisions", Py::dict({{"1", Py::n(4)}, {"2", Py::n(0)}}));
    s.get("device_traces")->items[0].items.push_back(entry("segment_map", S2 + 20 * MiB, 20 * MiB, 110));
    s.set("trace_alloc_overflowed", Py::b(true));
    s.get("allocator_settings")->set("PYTORCH_CUDA_ALLOC_CONF", Py::str("expandable_segments:True,max_non_split_rounding_mb:64"));
    seg.set("segment_pool_id", Py::tuple({Py::n(1), Py::n(3)}));
    Imported im(s);
    ASSERT_EQ(im.st, REMAT_OK) << im.err.msg;
    EXPECT_EQ(im.t.devices[0].segments[1].expandable, 1);
    EXPECT_EQ(im.t.devices[0].events[7].action, REMAT_EXT_SEGMENT_MAP);
    EXPECT_NE(strstr(im.t.allocator_config, "expandable_segments=1"), nullptr);
    for (const char *what : {"garbage_collection_threshold: 0.8", "roundup_power2_divisions: 1:4", "overflowed",
                             "sets max_non_split_rounding_mb", "segment_pool_id: 1 segments in private pools"})
        EXPECT_NE(strstr(im.t.notes, what), nullptr) << what << " in: " << im.t.notes;
}

TEST(TorchImport, RefusesWhatIsNotASnapshot) {
    struct Case { Py p; const char *want; };
    std::vector<Case> cases;
    cases.push_back({Py::list(), "t.pickle: top level: expected a dict with 'segments'"});
    cases.push_back({Py::dict({{"x", Py::n(1)}}), "t.pickle: segments: missing"});
    { Py s = new_snapshot(); s.get("segments")->items[1].erase("total_size");
      cases.push_back({s, "t.pickle: segments[1].total_size: missing (expected an int)"}); }
    { Py s = new_snapshot(); s.get("segments")->items[0].set("address", Py::str("x"));
      cases.push_back({s, "t.pickle: segments[0].address: expected an int, found a str"}); }
    { Py s = new_snapshot(); s.get("segments")->items[1].get("blocks")->items[0].set("state", Py::str("weird"));
      cases.push_back({s, "t.pickle: segments[1].blocks[0].state: unknown state"}); }
    { Py s = new_snapshot(); s.get("segments")->items[1].get("blocks")->items[1].set("size", Py::n(4 * MiB));
      cases.push_back({s, "t.pickle: segments[1].blocks[1]: block of 4194304 bytes"}); }
    { Py s = new_snapshot(); s.get("device_traces")->items[0].items[2].set("action", Py::str("teleport"));
      cases.push_back({s, "t.pickle: device_traces[0][2].action: unknown action"}); }
    { Py s = new_snapshot(); s.get("device_traces")->items[0].items[3].erase("size");
      cases.push_back({s, "t.pickle: device_traces[0][3].size: missing"}); }
    { Py s = new_snapshot(); s.get("segments")->items[0].erase("blocks");
      cases.push_back({s, "t.pickle: segments[0].blocks: missing"}); }
    for (auto &c : cases) {
        Imported im(c.p);
        EXPECT_EQ(im.st, REMAT_ERR_INPUT) << c.want;
        EXPECT_EQ(std::string(im.err.msg).rfind(c.want, 0), 0u) << im.err.msg;
        EXPECT_EQ(strchr(im.err.msg, '\n'), nullptr);
        EXPECT_EQ(im.t.devices, nullptr);
    }
}

TEST(TorchImport, EveryTruncationAndHostileLengthIsRefused) {
    std::vector<uint8_t> b = pickle_dumps(new_snapshot());
    for (size_t k = 0; k < b.size(); k++) {
        std::vector<uint8_t> cut(b.begin(), b.begin() + (long)k);
        Imported im(cut);
        EXPECT_EQ(im.st, REMAT_ERR_INPUT) << "cut at " << k;
    }
    // the first string length made huge
    std::vector<uint8_t> h = b;
    size_t at = 0;
    while (at < h.size() && h[at] != 0x8c) at++;
    ASSERT_LT(at, h.size());
    h[at] = 'X';
    h.insert(h.begin() + (long)at + 1, {0xff, 0xff, 0xff});
    size_t live = remat_xmem_live();
    Imported im(h);
    EXPECT_EQ(im.st, REMAT_ERR_INPUT);
    EXPECT_NE(strstr(im.err.msg, "past the end"), nullptr) << im.err.msg;
    EXPECT_EQ(remat_xmem_live(), live);
}

// One trace list shared through the memo by every device: each device names the same
// list (BINGET), so the input stays small while a naive import multiplies it. Memory
// stays within REMAT_TORCH_BYTES_PER_INPUT_BYTE per input byte: refused, naming the
// entry where the budget ran out.
TEST(TorchImport, AListSharedThroughTheMemoByManyDevicesIsBoundedByTheInput) {
    std::vector<uint8_t> o = {0x80, 4, '}', '('};
    remat_test::pk_str(o, "segments");
    o.push_back(']');
    remat_test::pk_str(o, "device_traces");
    o.insert(o.end(), {']', '(', ']', 0x94, '('});  // device 0's list, memoised as 0
    for (int k = 0; k < 2000; k++)
        remat_test::pk_write(o, entry(k % 2 ? "free_completed" : "alloc", S1 + 512 * (k / 2), 512, k));
    o.push_back('e');
    const int devices = 512;
    for (int d = 1; d < devices; d++) o.insert(o.end(), {'h', 0});  // BINGET 0: the same list
    o.insert(o.end(), {'e', 'u', '.'});
    size_t live = remat_xmem_live();
    Imported im(o);
    ASSERT_EQ(im.st, REMAT_ERR_INPUT) << "imported " << devices << " x 2000 entries from " << o.size() << " bytes";
    EXPECT_NE(strstr(im.err.msg, "t.pickle: device_traces["), nullptr) << im.err.msg;
    EXPECT_NE(strstr(im.err.msg, "memo"), nullptr) << im.err.msg;
    EXPECT_EQ(remat_xmem_live(), live);
    // the same list named by two devices is fine: small enough
    std::vector<uint8_t> two(o.begin(), o.end() - 3 - 2 * (devices - 2));
    two.insert(two.end(), {'e', 'u', '.'});
    Imported ok(two);
    EXPECT_EQ(ok.st, REMAT_OK) << ok.err.msg;
}

std::string tmp(const std::string &name) {
    const char *t = getenv("TEST_TMPDIR");
    return std::string(t ? t : "/tmp") + "/" + name;
}

TEST(ExtTraceH5, RoundTripAndChecks) {
    Imported im(new_snapshot());
    ASSERT_EQ(im.st, REMAT_OK) << im.err.msg;
    std::string p = tmp("ext_roundtrip.h5");
    remat_error err = {};
    ASSERT_EQ(remat_ext_trace_write_h5(&im.t, p.c_str(), &err), REMAT_OK) << err.msg;
    EXPECT_TRUE(remat_ext_trace_is_ext_h5(p.c_str()));
    remat_ext_trace r;
    ASSERT_EQ(remat_ext_trace_read_h5(p.c_str(), &r, &err), REMAT_OK) << err.msg;
    ASSERT_EQ(r.n_devices, 1);
    ASSERT_EQ(r.devices[0].n_events, im.t.devices[0].n_events);
    for (int64_t i = 0; i < r.devices[0].n_events; i++) {
        const remat_ext_event &a = r.devices[0].events[i], &b = im.t.devices[0].events[i];
        EXPECT_TRUE(a.addr == b.addr && a.size == b.size && a.action == b.action && a.time_us == b.time_us &&
                    a.label == b.label && a.device_free == b.device_free && a.stream == b.stream) << i;
    }
    ASSERT_EQ(r.devices[0].n_blocks, 3);
    EXPECT_EQ(r.devices[0].blocks[1].address, S1 + 512);
    EXPECT_EQ(r.devices[0].segments[1].total_size, 20 * MiB);
    EXPECT_STREQ(remat_ext_label(&r, 0), remat_ext_label(&im.t, 0));
    EXPECT_STREQ(r.allocator_settings, im.t.allocator_settings);
    EXPECT_EQ(r.settings_recorded, 1);
    remat_ext_trace_free(&r);

    // every flipped byte of the file is refused (or, in HDF5 padding, harmless), never a crash
    std::ifstream in(p, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    int refused = 0;
    H5set_free_list_limits(0, 0, 0, 0, 0, 0);
    H5garbage_collect();
    for (size_t k = 0; k < bytes.size(); k += 97) {
        std::string c = bytes;
        c[k] ^= 0x5a;
        std::string q = tmp("ext_flip.h5");
        std::ofstream(q, std::ios::binary) << c;
        remat_ext_trace x;
        remat_error e = {};
        size_t live = remat_xmem_live();
        HDF5_LEAKS_BEGIN();
        remat_status st = remat_ext_trace_read_h5(q.c_str(), &x, &e);
        HDF5_LEAKS_END();
        if (st != REMAT_OK) {
            EXPECT_EQ(st, REMAT_ERR_INPUT) << e.msg;
            EXPECT_EQ(std::string(e.msg).rfind(q + ": ", 0), 0u) << e.msg;
            refused++;
        }
        remat_ext_trace_free(&x);
        EXPECT_EQ(remat_xmem_live(), live) << "byte " << k;
    }
    EXPECT_GT(refused, 0);

    // a remat run trace is not an external stream, and the other way round
    remat_ext_trace y;
    EXPECT_EQ(remat_ext_trace_read_h5("/nonexistent.h5", &y, &err), REMAT_ERR_IO);
}

// Sizes whose sum would overflow a replay's running totals (2^63 - 1, or two of
// 2^61) are refused on import and on reading an ext trace, naming the entry.
TEST(TorchImport, SizesThatOverflowTheReplayAreRefused) {
    {
        Py s = new_snapshot();
        s.get("device_traces")->items[0].items[3].set("size", Py::n(INT64_MAX));
        Imported im(s);
        EXPECT_EQ(im.st, REMAT_ERR_INPUT);
        EXPECT_EQ(std::string(im.err.msg).rfind("t.pickle: device 0/events/size: event 3 has 9223372036854775807 bytes", 0),
                  0u)
            << im.err.msg;
    }
    {
        Py s = new_snapshot();
        s.get("device_traces")->items[0].items[2].set("size", Py::n((int64_t)1 << 61));
        s.get("device_traces")->items[0].items[3].set("size", Py::n((int64_t)1 << 61));
        Imported im(s);
        EXPECT_EQ(im.st, REMAT_ERR_INPUT);
        EXPECT_NE(std::string(im.err.msg).find("event 3 has 2305843009213693952 bytes, expected sizes >= 0 that add up "
                                               "to at most 2^62"),
                  std::string::npos)
            << im.err.msg;
    }
    Imported ok(new_snapshot());
    ASSERT_EQ(ok.st, REMAT_OK) << ok.err.msg;
    ok.t.devices[0].events[3].size = INT64_MAX;  // a crafted file: written as is, refused on reading
    std::string p = tmp("ext_huge.h5");
    remat_error err = {};
    ASSERT_EQ(remat_ext_trace_write_h5(&ok.t, p.c_str(), &err), REMAT_OK) << err.msg;
    remat_ext_trace r;
    EXPECT_EQ(remat_ext_trace_read_h5(p.c_str(), &r, &err), REMAT_ERR_INPUT);
    EXPECT_EQ(std::string(err.msg).rfind(p + ": /devices/0/events/size: event 3 has 9223372036854775807 bytes", 0), 0u)
        << err.msg;
    remat_ext_trace_free(&r);
}

TEST(TorchImport, RealSnapshots) {
    std::string dir = remat_test::torch_fixture_dir("fuzz/seeds/pickle/scalars.pickle", 3);
    if (dir.empty()) GTEST_SKIP() << "../shared/fixtures/torch-snapshots is absent: real snapshots not imported";
    struct { const char *file; int64_t events, segments, blocks; int has_time; } want[] = {
        {"cs336-memory_snapshot.pickle", 5163, 216, 455, 1},
        {"llm-inference-oom_snapshot.pickle", 1, 176, 463, 0},
        {"llm-inference-1.3b_snapshot.pickle", 1, 257, 948, 0},
    };
    for (const auto &w : want) {
        remat_ext_trace t;
        remat_error err = {};
        int64_t bytes = 0;
        ASSERT_EQ(remat_torch_snapshot_load((dir + "/" + w.file).c_str(), &t, &bytes, &err), REMAT_OK) << err.msg;
        ASSERT_EQ(t.n_devices, 1);
        const remat_ext_device &d = t.devices[0];
        EXPECT_EQ(d.n_events, w.events) << w.file;
        EXPECT_EQ(d.n_segments, w.segments) << w.file;
        EXPECT_EQ(d.n_blocks, w.blocks) << w.file;
        EXPECT_EQ(d.events[0].time_us >= 0, w.has_time) << w.file;
        EXPECT_EQ(t.settings_recorded, w.has_time) << w.file;
        // blocks tile their segments
        for (int64_t s = 0; s < d.n_segments; s++) {
            int64_t sum = 0;
            for (int64_t b = d.segments[s].first_block; b < d.segments[s].first_block + d.segments[s].n_blocks; b++)
                sum += d.blocks[b].size;
            EXPECT_EQ(sum, d.segments[s].total_size) << w.file << " segment " << s;
        }
        remat_ext_trace_free(&t);
    }
}

}  // namespace
