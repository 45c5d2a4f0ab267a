// alloc_model_test.cc - the EXACT and CACHING allocator models (core/alloc/alloc_model.h).
//
// Hand-computed cases for every caching rule (docs/allocator-model.md), then
// randomized checks: EXACT against a naive sum, CACHING against a straightforward
// std::set port of PyTorch's rules (same decisions, no treaps), and invariants
// (no overlapping blocks, allocated <= reserved) under random sequences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/alloc/alloc_model.h"

namespace {

constexpr int64_t KiB = 1024;
constexpr int64_t MiB = 1024 * 1024;

struct Model {
    remat_alloc_model *m = nullptr;
    explicit Model(remat_alloc_kind kind, const remat_caching_config *cfg = nullptr) {
        remat_error err = {};
        m = remat_alloc_model_init(kind, cfg, &err);
        EXPECT_NE(m, nullptr) << err.msg;
    }
    ~Model() { remat_alloc_model_free(m); }
    remat_alloc_result alloc(int64_t id, int64_t bytes) {
        remat_alloc_result r = {-7, -7, -7, -7};
        remat_error err = {};
        EXPECT_EQ(remat_alloc_model_alloc(m, id, bytes, &r, &err), REMAT_OK) << err.msg;
        return r;
    }
    void release(int64_t id) {
        remat_error err = {};
        EXPECT_EQ(remat_alloc_model_release(m, id, &err), REMAT_OK) << err.msg;
    }
    remat_alloc_stats stats() const {
        remat_alloc_stats s;
        remat_alloc_model_stats(m, &s);
        return s;
    }
    void check() const {
        remat_error err = {};
        EXPECT_EQ(remat_alloc_model_check(m, &err), REMAT_OK) << err.msg;
    }
};

remat_caching_config cfg_with(const char *text) {
    remat_caching_config c;
    remat_error err = {};
    EXPECT_EQ(remat_caching_config_parse(text, &c, &err), REMAT_OK) << err.msg;
    return c;
}

// Evaluates r once (it is usually an alloc call).
#define EXPECT_PLACED(r, seg, off, blk, newseg)           \
    do {                                                  \
        remat_alloc_result r_ = (r);                      \
        EXPECT_EQ(r_.segment, (seg));                     \
        EXPECT_EQ(r_.offset, (off));                      \
        EXPECT_EQ(r_.block_bytes, (blk));                 \
        EXPECT_EQ(r_.new_segment_bytes, (newseg));        \
    } while (0)

// ---- configuration -----------------------------------------------------------------

TEST(CachingConfig, DefaultsArePyTorchConstants) {
    remat_caching_config c = remat_caching_config_default();
    EXPECT_EQ(c.round_bytes, 512);
    EXPECT_EQ(c.small_size, 1 * MiB);
    EXPECT_EQ(c.small_segment, 2 * MiB);
    EXPECT_EQ(c.large_segment, 20 * MiB);
    EXPECT_EQ(c.min_large_alloc, 10 * MiB);
    EXPECT_EQ(c.round_large, 2 * MiB);
    EXPECT_EQ(c.small_split_min, 512);
    EXPECT_EQ(c.large_split_min, 1 * MiB);
    EXPECT_EQ(c.max_split_size, INT64_MAX);
    EXPECT_EQ(c.expandable_segments, 0);
    EXPECT_EQ(c.expandable_page, 2 * MiB);
    EXPECT_EQ(c.expandable_large_page, 20 * MiB);
}

TEST(CachingConfig, ParseSizesAndFlags) {
    remat_caching_config c = cfg_with(" max_split_size = 64MiB , expandable_segments=true,round_bytes=1KiB ");
    EXPECT_EQ(c.max_split_size, 64 * MiB);
    EXPECT_EQ(c.expandable_segments, 1);
    EXPECT_EQ(c.round_bytes, 1024);
    EXPECT_EQ(c.small_size, 1 * MiB);  // untouched fields keep the defaults
    c = cfg_with("max_split_size=1GiB,large_split_min=0B,expandable_segments=0");
    EXPECT_EQ(c.max_split_size, 1024 * MiB);
    EXPECT_EQ(c.large_split_min, 0);
    c = cfg_with("");
    remat_caching_config d = remat_caching_config_default();
    EXPECT_EQ(memcmp(&c, &d, sizeof c), 0);
}

TEST(CachingConfig, FormatRoundTrips) {
    remat_caching_config c = cfg_with("max_split_size=96MiB,expandable_segments=1,small_split_min=1024");
    char buf[512];
    int n = remat_caching_config_format(&c, buf, sizeof buf);
    ASSERT_GT(n, 0);
    ASSERT_LT(n, (int)sizeof buf);
    EXPECT_NE(std::string(buf).find("max_split_size=100663296"), std::string::npos) << buf;
    remat_caching_config back = cfg_with(buf);
    EXPECT_EQ(memcmp(&c, &back, sizeof c), 0) << buf;
    remat_caching_config d = remat_caching_config_default();
    remat_caching_config_format(&d, buf, sizeof buf);
    EXPECT_NE(std::string(buf).find("max_split_size=inf"), std::string::npos) << buf;
    // truncation behaves like snprintf
    char small[16];
    int need = remat_caching_config_format(&d, small, sizeof small);
    EXPECT_EQ(need, (int)strlen(buf));
    EXPECT_EQ(strlen(small), sizeof small - 1);
    EXPECT_EQ(std::string(small), std::string(buf).substr(0, 15));
}

TEST(CachingConfig, BadInputRefused) {
    const char *bad[] = {"max_split_size=1MiB",       // PyTorch refuses <= 20 MiB
                         "bogus=1",                   // unknown name
                         "max_split_size",            // no '='
                         "max_split_size=12XB",       // bad unit
                         "expandable_segments=2",     // flag
                         "round_bytes=0",             // zero
                         "min_large_alloc=30MiB",     // above large_segment
                         "small_size=4MiB",           // above small_segment
                         "expandable_page=1000"};     // not a multiple of 512
    for (const char *t : bad) {
        remat_caching_config c = remat_caching_config_default();
        c.round_bytes = 4242;  // proves *cfg is untouched on failure
        remat_error err = {};
        EXPECT_EQ(remat_caching_config_parse(t, &c, &err), REMAT_ERR_INPUT) << t;
        EXPECT_EQ(c.round_bytes, 4242) << t;
        EXPECT_NE(std::string(err.msg).find("allocator config"), std::string::npos) << err.msg;
        EXPECT_EQ(std::string(err.msg).find('\n'), std::string::npos);
    }
    remat_error err = {};
    remat_caching_config c;
    ASSERT_EQ(remat_caching_config_parse("max_split_size=1MiB", &c, &err), REMAT_ERR_INPUT);
    EXPECT_NE(std::string(err.msg).find("max_split_size"), std::string::npos) << err.msg;
}

// ---- caching rules, by hand --------------------------------------------------------

TEST(Caching, RoundingTo512) {
    Model a(REMAT_ALLOC_CACHING);
    EXPECT_PLACED(a.alloc(0, 1), 0, 0, 512, 2 * MiB);       // below 512 -> 512, new 2 MiB small segment
    EXPECT_PLACED(a.alloc(1, 512), 0, 512, 512, 0);
    EXPECT_PLACED(a.alloc(2, 513), 0, 1024, 1024, 0);       // next multiple of 512
    remat_alloc_result z = a.alloc(3, 0);                  // zero bytes take no block
    EXPECT_PLACED(z, -1, 0, 0, 0);
    remat_alloc_stats s = a.stats();
    EXPECT_EQ(s.live_bytes, 1 + 512 + 513);
    EXPECT_EQ(s.allocated_bytes, 512 + 512 + 1024);
    EXPECT_EQ(s.reserved_bytes, 2 * MiB);
    EXPECT_EQ(s.n_segments, 1);
    EXPECT_EQ(s.n_allocs, 4);
    a.release(3);
    a.check();
}

TEST(Caching, SmallAndLargePools) {
    Model a(REMAT_ALLOC_CACHING);
    // exactly 1 MiB is still small: carved from a 2 MiB segment
    EXPECT_PLACED(a.alloc(0, 1 * MiB), 0, 0, 1 * MiB, 2 * MiB);
    // 1 MiB + 1 rounds to 1 MiB + 512: large pool, a 20 MiB segment
    EXPECT_PLACED(a.alloc(1, 1 * MiB + 1), 1, 0, 1 * MiB + 512, 20 * MiB);
    // a small request goes back to the small segment, not the large one
    EXPECT_PLACED(a.alloc(2, 4 * KiB), 0, 1 * MiB, 4 * KiB, 0);
    // 5 MiB (< 10 MiB) is carved from the existing 20 MiB segment
    EXPECT_PLACED(a.alloc(3, 5 * MiB), 1, 1 * MiB + 512, 5 * MiB, 0);
    // 9.5 MiB: the 20 MiB segment has 14 MiB - 512 left: fits
    EXPECT_PLACED(a.alloc(4, 9 * MiB + 512 * KiB), 1, 6 * MiB + 512, 9 * MiB + 512 * KiB, 0);
    // 10 MiB gets its own segment of exactly 10 MiB (already a multiple of 2 MiB)
    // even though... no free block of 10 MiB exists; the remaining 20 MiB tail is 4.5 MiB - 512
    EXPECT_PLACED(a.alloc(5, 10 * MiB), 2, 0, 10 * MiB, 10 * MiB);
    // 10 MiB + 1 -> 10 MiB + 512 -> own segment rounded up to 12 MiB, remainder
    // 2 MiB - 512 > 1 MiB is split off and stays cached
    EXPECT_PLACED(a.alloc(6, 10 * MiB + 1), 3, 0, 10 * MiB + 512, 12 * MiB);
    // 1.5 MiB fits that remainder best (2 MiB - 512 < 4.5 MiB - 512)
    EXPECT_PLACED(a.alloc(7, 1 * MiB + 512 * KiB), 3, 10 * MiB + 512, 2 * MiB - 512, 0);  // remainder 512 K - 1 K: no split
    remat_alloc_stats s = a.stats();
    EXPECT_EQ(s.reserved_bytes, 2 * MiB + 20 * MiB + 10 * MiB + 12 * MiB);
    EXPECT_EQ(s.n_segments, 4);
    a.check();
}

TEST(Caching, BestFitBySizeThenAddress) {
    Model a(REMAT_ALLOC_CACHING);
    // one 20 MiB segment: A 3 | x 1.5 | C 5 | y 1.5 | E 4 | free 5
    EXPECT_PLACED(a.alloc(0, 3 * MiB), 0, 0, 3 * MiB, 20 * MiB);
    a.alloc(1, 1 * MiB + 512 * KiB);
    EXPECT_PLACED(a.alloc(2, 5 * MiB), 0, 4 * MiB + 512 * KiB, 5 * MiB, 0);
    a.alloc(3, 1 * MiB + 512 * KiB);
    EXPECT_PLACED(a.alloc(4, 4 * MiB), 0, 11 * MiB, 4 * MiB, 0);
    a.release(0);
    a.release(2);
    a.release(4);  // merges with the 5 MiB tail: 9 MiB at 11 MiB
    a.check();
    // 2.5 MiB: best fit is A (3 MiB); remainder 0.5 MiB is not > 1 MiB: not split
    EXPECT_PLACED(a.alloc(10, 2 * MiB + 512 * KiB), 0, 0, 3 * MiB, 0);
    // 4 MiB: C (5 MiB) beats the 9 MiB block; remainder exactly 1 MiB: not split
    EXPECT_PLACED(a.alloc(11, 4 * MiB), 0, 4 * MiB + 512 * KiB, 5 * MiB, 0);
    // 4 MiB again: only the 9 MiB block is left: split, 5 MiB remainder
    EXPECT_PLACED(a.alloc(12, 4 * MiB), 0, 11 * MiB, 4 * MiB, 0);
    EXPECT_EQ(a.stats().n_segments, 1);
    a.check();
}

TEST(Caching, BestFitTieGoesToLowerAddress) {
    Model a(REMAT_ALLOC_CACHING);
    // two 20 MiB segments: 9 | 9 | 2 each (the last one an exact fit)
    for (int s = 0; s < 2; s++) {
        EXPECT_PLACED(a.alloc(10 * s, 9 * MiB), s, 0, 9 * MiB, 20 * MiB);
        EXPECT_PLACED(a.alloc(10 * s + 1, 9 * MiB), s, 9 * MiB, 9 * MiB, 0);
        EXPECT_PLACED(a.alloc(10 * s + 2, 2 * MiB), s, 18 * MiB, 2 * MiB, 0);
    }
    a.release(11);
    a.release(1);  // freed second, but segment 0 is the lower address
    EXPECT_PLACED(a.alloc(20, 9 * MiB), 0, 9 * MiB, 9 * MiB, 0);
    EXPECT_PLACED(a.alloc(21, 9 * MiB), 1, 9 * MiB, 9 * MiB, 0);
    // one segment with three equal 4 MiB holes: lowest offset first
    Model b(REMAT_ALLOC_CACHING);
    for (int i = 0; i < 4; i++) EXPECT_PLACED(b.alloc(i, 4 * MiB), 0, 4 * MiB * i, 4 * MiB, i ? 0 : 20 * MiB);
    b.release(2);
    b.release(0);  // holes [0,4) [8,12) [16,20)
    EXPECT_PLACED(b.alloc(10, 4 * MiB), 0, 0, 4 * MiB, 0);
    EXPECT_PLACED(b.alloc(11, 4 * MiB), 0, 8 * MiB, 4 * MiB, 0);
    EXPECT_PLACED(b.alloc(12, 4 * MiB), 0, 16 * MiB, 4 * MiB, 0);
    a.check();
    b.check();
}

TEST(Caching, SmallPoolSplitThreshold) {
    {
        Model a(REMAT_ALLOC_CACHING);
        EXPECT_PLACED(a.alloc(0, 1 * MiB), 0, 0, 1 * MiB, 2 * MiB);
        // remainder exactly 512 B: split (>= 512)
        EXPECT_PLACED(a.alloc(1, 1 * MiB - 512), 0, 1 * MiB, 1 * MiB - 512, 0);
        EXPECT_PLACED(a.alloc(2, 100), 0, 2 * MiB - 512, 512, 0);
        EXPECT_EQ(a.stats().n_segments, 1);
    }
    {
        remat_caching_config c = cfg_with("small_split_min=1KiB");
        Model a(REMAT_ALLOC_CACHING, &c);
        a.alloc(0, 1 * MiB);
        // remainder 512 < 1 KiB: the whole rest is handed out
        EXPECT_PLACED(a.alloc(1, 1 * MiB - 512), 0, 1 * MiB, 1 * MiB, 0);
        EXPECT_PLACED(a.alloc(2, 100), 1, 0, 512, 2 * MiB);
        EXPECT_EQ(a.stats().allocated_bytes, 2 * MiB + 512);
        a.check();
    }
}

TEST(Caching, LargePoolSplitThreshold) {
    Model a(REMAT_ALLOC_CACHING);
    // 19 MiB >= 10 MiB: own segment rounded to 20 MiB; remainder 1 MiB is not > 1 MiB
    EXPECT_PLACED(a.alloc(0, 19 * MiB), 0, 0, 20 * MiB, 20 * MiB);
    // 19 MiB - 512: segment 20 MiB, remainder 1 MiB + 512 > 1 MiB: split
    EXPECT_PLACED(a.alloc(1, 19 * MiB - 512), 1, 0, 19 * MiB - 512, 20 * MiB);
    EXPECT_EQ(a.stats().allocated_bytes, 20 * MiB + 19 * MiB - 512);
    // the 1 MiB + 512 remainder serves a large request of that size
    EXPECT_PLACED(a.alloc(2, 1 * MiB + 100), 1, 19 * MiB - 512, 1 * MiB + 512, 0);
    EXPECT_EQ(a.stats().n_segments, 2);
    a.check();
}

TEST(Caching, MergeWithinSegmentOnly) {
    Model a(REMAT_ALLOC_CACHING);
    // two full 20 MiB segments next to each other
    EXPECT_PLACED(a.alloc(0, 20 * MiB), 0, 0, 20 * MiB, 20 * MiB);
    EXPECT_PLACED(a.alloc(1, 20 * MiB), 1, 0, 20 * MiB, 20 * MiB);
    a.release(0);
    a.release(1);
    // 30 MiB does not fit either free block; they are never merged across segments
    EXPECT_PLACED(a.alloc(2, 30 * MiB), 2, 0, 30 * MiB, 30 * MiB);
    // within a segment, prev and next merge: three 5 MiB blocks of segment 0 ...
    EXPECT_PLACED(a.alloc(3, 5 * MiB), 0, 0, 5 * MiB, 0);
    EXPECT_PLACED(a.alloc(4, 5 * MiB), 0, 5 * MiB, 5 * MiB, 0);
    EXPECT_PLACED(a.alloc(5, 5 * MiB), 0, 10 * MiB, 5 * MiB, 0);
    a.release(3);
    a.release(5);  // merges with the free 5 MiB tail -> [10,20)
    a.release(4);  // merges with both -> the whole segment again
    a.check();
    EXPECT_PLACED(a.alloc(6, 20 * MiB), 0, 0, 20 * MiB, 0);
    EXPECT_EQ(a.stats().reserved_bytes, 70 * MiB);
    a.check();
}

TEST(Caching, MaxSplitSize) {
    remat_caching_config c = cfg_with("max_split_size=64MiB");
    Model a(REMAT_ALLOC_CACHING, &c);
    EXPECT_PLACED(a.alloc(0, 100 * MiB), 0, 0, 100 * MiB, 100 * MiB);
    a.release(0);
    // a request under max_split_size never takes the oversize block
    EXPECT_PLACED(a.alloc(1, 30 * MiB), 1, 0, 30 * MiB, 30 * MiB);
    // an oversize request takes it only when block < request + 20 MiB: 100 >= 80 + 20
    EXPECT_PLACED(a.alloc(2, 80 * MiB), 2, 0, 80 * MiB, 80 * MiB);
    // 100 < 81 + 20: taken whole, never split
    EXPECT_PLACED(a.alloc(3, 81 * MiB), 0, 0, 100 * MiB, 0);
    remat_alloc_stats s = a.stats();
    EXPECT_EQ(s.reserved_bytes, 210 * MiB);
    EXPECT_EQ(s.allocated_bytes, 210 * MiB);
    EXPECT_EQ(s.live_bytes, 191 * MiB);
    // with the default (no limit) the same 30 MiB request splits the cached 100 MiB block
    Model d(REMAT_ALLOC_CACHING);
    d.alloc(0, 100 * MiB);
    d.release(0);
    EXPECT_PLACED(d.alloc(1, 30 * MiB), 0, 0, 30 * MiB, 0);
    EXPECT_PLACED(d.alloc(2, 80 * MiB), 1, 0, 80 * MiB, 80 * MiB);  // 70 MiB left is too small
    a.check();
    d.check();
}

TEST(Caching, MaxSplitSizeKeepsSegmentsOfOversizeRequestsWhole) {
    remat_caching_config c = cfg_with("max_split_size=24MiB");
    Model a(REMAT_ALLOC_CACHING, &c);
    // 25 MiB + 1 -> 26 MiB segment; request >= max_split_size: never split
    EXPECT_PLACED(a.alloc(0, 25 * MiB + 1), 0, 0, 26 * MiB, 26 * MiB);
    // 23 MiB (< 24 MiB) -> 24 MiB segment; below max_split_size, remainder 1 MiB - 512: no split
    EXPECT_PLACED(a.alloc(1, 23 * MiB + 512), 1, 0, 24 * MiB, 24 * MiB);
    a.release(1);
    // the free 24 MiB block is oversize (>= 24 MiB): a 2 MiB request may not take it
    EXPECT_PLACED(a.alloc(2, 2 * MiB), 2, 0, 2 * MiB, 20 * MiB);
    a.check();
}

TEST(Caching, EmptyCacheReleasesWholeFreeSegments) {
    Model a(REMAT_ALLOC_CACHING);
    EXPECT_PLACED(a.alloc(0, 4 * KiB), 0, 0, 4 * KiB, 2 * MiB);    // small segment
    EXPECT_PLACED(a.alloc(1, 3 * MiB), 1, 0, 3 * MiB, 20 * MiB);   // 20 MiB segment
    EXPECT_PLACED(a.alloc(3, 8 * MiB), 1, 3 * MiB, 8 * MiB, 0);    // same segment
    EXPECT_PLACED(a.alloc(2, 12 * MiB), 2, 0, 12 * MiB, 12 * MiB); // 9 MiB left: own segment
    a.release(0);
    a.release(2);
    a.release(3);              // seg 1 still holds tensor 1
    std::vector<int64_t> released;
    int64_t bytes = remat_alloc_model_empty_cache(
        a.m, [](void *ctx, int64_t sg) { static_cast<std::vector<int64_t> *>(ctx)->push_back(sg); }, &released);
    EXPECT_EQ(bytes, 2 * MiB + 12 * MiB);
    EXPECT_EQ(released, (std::vector<int64_t>{0, 2}));
    remat_alloc_stats s = a.stats();
    EXPECT_EQ(s.reserved_bytes, 20 * MiB);
    EXPECT_EQ(s.n_segments, 1);
    EXPECT_EQ(s.peak_reserved_bytes, 34 * MiB);
    a.check();
    // segment indices are never reused
    EXPECT_PLACED(a.alloc(4, 100), 3, 0, 512, 2 * MiB);
    a.release(1);
    a.release(4);
    released.clear();
    bytes = remat_alloc_model_empty_cache(
        a.m, [](void *ctx, int64_t sg) { static_cast<std::vector<int64_t> *>(ctx)->push_back(sg); }, &released);
    EXPECT_EQ(bytes, 22 * MiB);
    EXPECT_EQ(released, (std::vector<int64_t>{1, 3}));
    EXPECT_EQ(a.stats().reserved_bytes, 0);
    EXPECT_EQ(a.stats().n_segments, 0);
    EXPECT_EQ(remat_alloc_model_empty_cache(a.m, nullptr, nullptr), 0);
    a.check();
}

TEST(Caching, SegmentsKeptWithoutEmptyCache) {
    Model a(REMAT_ALLOC_CACHING);
    for (int i = 0; i < 5; i++) a.alloc(i, 30 * MiB);
    for (int i = 0; i < 5; i++) a.release(i);
    remat_alloc_stats s = a.stats();
    EXPECT_EQ(s.live_bytes, 0);
    EXPECT_EQ(s.allocated_bytes, 0);
    EXPECT_EQ(s.reserved_bytes, 150 * MiB);
    // the cached segments are reused: no growth
    for (int i = 0; i < 5; i++) EXPECT_EQ(a.alloc(10 + i, 30 * MiB).new_segment_bytes, 0);
    EXPECT_EQ(a.stats().reserved_bytes, 150 * MiB);
}

TEST(Caching, ExpandableSegmentsGrowInPages) {
    remat_caching_config c = cfg_with("expandable_segments=1");
    Model a(REMAT_ALLOC_CACHING, &c);
    // small pool: one segment, one 2 MiB page
    EXPECT_PLACED(a.alloc(0, 1000), 0, 0, 1024, 2 * MiB);
    // large pool: its own segment, one 20 MiB page
    EXPECT_PLACED(a.alloc(1, 3 * MiB), 1, 0, 3 * MiB, 20 * MiB);
    EXPECT_EQ(a.stats().reserved_bytes, 22 * MiB);
    EXPECT_EQ(a.stats().n_segments, 2);
    // 18 MiB: the free 17 MiB at the end grows by one more page (no new segment);
    // the rest of the page is split off (expandable: remainder >= 512 suffices)
    EXPECT_PLACED(a.alloc(2, 18 * MiB), 1, 3 * MiB, 18 * MiB, 40 * MiB);
    EXPECT_EQ(a.stats().reserved_bytes, 42 * MiB);
    // 10 MiB fits the 19 MiB left: no growth, split
    EXPECT_PLACED(a.alloc(3, 10 * MiB), 1, 21 * MiB, 10 * MiB, 0);
    // small pool grows page by page in its own segment
    EXPECT_PLACED(a.alloc(4, 1 * MiB), 0, 1024, 1 * MiB, 0);
    EXPECT_PLACED(a.alloc(5, 1 * MiB), 0, 1 * MiB + 1024, 1 * MiB, 4 * MiB);
    EXPECT_EQ(a.stats().reserved_bytes, 44 * MiB);
    EXPECT_EQ(a.stats().n_segments, 2);
    a.check();
    // freed blocks at the end stay mapped until empty_cache
    a.release(3);
    a.release(2);
    EXPECT_EQ(a.stats().reserved_bytes, 44 * MiB);
    a.check();
    // empty_cache unmaps whole free pages only: large segment keeps page 0 (tensor 1),
    // frees page 1 ([20,40) MiB); small segment keeps page 0 and 1 (tensor 5 spans both)
    std::vector<int64_t> released;
    int64_t bytes = remat_alloc_model_empty_cache(
        a.m, [](void *ctx, int64_t sg) { static_cast<std::vector<int64_t> *>(ctx)->push_back(sg); }, &released);
    EXPECT_EQ(bytes, 20 * MiB);
    EXPECT_TRUE(released.empty());
    EXPECT_EQ(a.stats().reserved_bytes, 24 * MiB);
    a.check();
    // regrowth maps the page at 20 MiB again
    EXPECT_PLACED(a.alloc(6, 30 * MiB), 1, 3 * MiB, 30 * MiB, 40 * MiB);
    a.release(6);
    a.release(1);
    a.release(0);
    a.release(4);
    a.release(5);
    released.clear();
    bytes = remat_alloc_model_empty_cache(
        a.m, [](void *ctx, int64_t sg) { static_cast<std::vector<int64_t> *>(ctx)->push_back(sg); }, &released);
    EXPECT_EQ(bytes, 44 * MiB);
    std::sort(released.begin(), released.end());
    EXPECT_EQ(released, (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(a.stats().reserved_bytes, 0);
    EXPECT_EQ(a.stats().n_segments, 0);
    EXPECT_EQ(a.stats().peak_reserved_bytes, 44 * MiB);
    a.check();
    // a fresh segment index after release
    EXPECT_PLACED(a.alloc(7, 5 * MiB), 2, 0, 5 * MiB, 20 * MiB);
    a.check();
}

TEST(Caching, ExpandableBeatsFixedOnGrowingRequests) {
    // the N, N+1 pattern of PyTorch's note: fixed segments leave slivers, expandable not
    remat_caching_config e = cfg_with("expandable_segments=1");
    Model fixed(REMAT_ALLOC_CACHING), exp(REMAT_ALLOC_CACHING, &e);
    int64_t id = 0;
    for (int64_t n = 100; n < 110; n++) {
        std::vector<int64_t> ids;
        for (int k = 0; k < 4; k++) {
            fixed.alloc(id, n * 120 * KiB);
            exp.alloc(id, n * 120 * KiB);
            ids.push_back(id++);
        }
        for (int64_t i : ids) {
            fixed.release(i);
            exp.release(i);
        }
    }
    EXPECT_LT(exp.stats().peak_reserved_bytes, fixed.stats().peak_reserved_bytes);
    fixed.check();
    exp.check();
}

TEST(Caching, Peaks) {
    Model a(REMAT_ALLOC_CACHING);
    a.alloc(0, 3 * MiB);
    a.alloc(1, 4 * MiB);
    a.release(0);
    a.alloc(2, 1 * MiB);
    remat_alloc_stats s = a.stats();
    EXPECT_EQ(s.peak_live_bytes, 7 * MiB);
    EXPECT_EQ(s.peak_allocated_bytes, 7 * MiB);
    EXPECT_EQ(s.peak_reserved_bytes, 22 * MiB);
    EXPECT_EQ(s.live_bytes, 5 * MiB);
    remat_alloc_model_reset_peaks(a.m);
    s = a.stats();
    EXPECT_EQ(s.peak_live_bytes, 5 * MiB);
    EXPECT_EQ(s.peak_allocated_bytes, 5 * MiB);
    EXPECT_EQ(s.peak_reserved_bytes, 22 * MiB);
    a.release(1);
    a.alloc(3, 512);
    s = a.stats();
    EXPECT_EQ(s.peak_live_bytes, 5 * MiB);
    EXPECT_EQ(s.n_allocs, 4);
    EXPECT_EQ(s.n_frees, 2);
}

TEST(AllocModel, ErrorsOnDoubleAllocAndFree) {
    for (remat_alloc_kind kind : {REMAT_ALLOC_EXACT, REMAT_ALLOC_CACHING}) {
        Model a(kind);
        a.alloc(5, 100);
        a.alloc(6, 0);
        remat_alloc_result r;
        remat_error err = {};
        EXPECT_EQ(remat_alloc_model_alloc(a.m, 5, 100, &r, &err), REMAT_ERR_INTERNAL);
        EXPECT_NE(std::string(err.msg).find("tensor 5"), std::string::npos) << err.msg;
        err = {};
        EXPECT_EQ(remat_alloc_model_alloc(a.m, 6, 8, &r, &err), REMAT_ERR_INTERNAL);  // 0-byte tensors are live too
        err = {};
        EXPECT_EQ(remat_alloc_model_release(a.m, 7, &err), REMAT_ERR_INTERNAL);
        EXPECT_NE(std::string(err.msg).find("tensor 7"), std::string::npos) << err.msg;
        err = {};
        EXPECT_EQ(remat_alloc_model_release(a.m, 1 << 30, &err), REMAT_ERR_INTERNAL);  // beyond the table
        err = {};
        EXPECT_EQ(remat_alloc_model_release(a.m, -1, &err), REMAT_ERR_INTERNAL);
        err = {};
        EXPECT_EQ(remat_alloc_model_alloc(a.m, -1, 8, &r, &err), REMAT_ERR_INTERNAL);
        err = {};
        EXPECT_EQ(remat_alloc_model_alloc(a.m, 9, -8, &r, &err), REMAT_ERR_INTERNAL);
        a.release(5);
        err = {};
        EXPECT_EQ(remat_alloc_model_release(a.m, 5, &err), REMAT_ERR_INTERNAL);
        // the failed calls changed nothing
        remat_alloc_stats s = a.stats();
        EXPECT_EQ(s.live_bytes, 0);
        EXPECT_EQ(s.allocated_bytes, 0);
        EXPECT_EQ(s.n_allocs, 2);
        EXPECT_EQ(s.n_frees, 1);
        a.check();
        a.alloc(5, 100);  // an id can be reused after its free
    }
}

TEST(Caching, RequestsBeyondTheModelledAddressSpaceRefused) {
    for (const char *cfg : {"", "expandable_segments=1"}) {
        remat_caching_config c = cfg_with(cfg);
        Model a(REMAT_ALLOC_CACHING, &c);
        remat_alloc_result r;
        remat_error err = {};
        EXPECT_EQ(remat_alloc_model_alloc(a.m, 0, ((int64_t)1 << 39) + 1, &r, &err), REMAT_ERR_INPUT) << cfg;
        EXPECT_NE(std::string(err.msg).find("tensor 0"), std::string::npos) << err.msg;
        EXPECT_EQ(a.stats().n_allocs, 0);
        EXPECT_EQ(a.alloc(0, (int64_t)1 << 39).block_bytes, (int64_t)1 << 39);  // the largest one that fits
        a.check();
    }
    Model e(REMAT_ALLOC_EXACT);  // the exact model only adds numbers
    EXPECT_EQ(e.alloc(0, (int64_t)1 << 50).block_bytes, (int64_t)1 << 50);
}

TEST(Exact, LiveBytesAndPeaks) {
    Model a(REMAT_ALLOC_EXACT);
    remat_alloc_result r = a.alloc(0, 1000);
    EXPECT_EQ(r.block_bytes, 1000);
    EXPECT_EQ(r.new_segment_bytes, 0);
    a.alloc(1, 3);
    a.release(0);
    a.alloc(2, 500);
    remat_alloc_stats s = a.stats();
    EXPECT_EQ(s.live_bytes, 503);
    EXPECT_EQ(s.allocated_bytes, 503);
    EXPECT_EQ(s.reserved_bytes, 503);
    EXPECT_EQ(s.peak_live_bytes, 1003);
    EXPECT_EQ(s.peak_reserved_bytes, 1003);
    EXPECT_EQ(remat_alloc_model_empty_cache(a.m, nullptr, nullptr), 0);
}

TEST(Exact, RandomCrossCheckAgainstNaiveSum) {
    Model a(REMAT_ALLOC_EXACT);
    std::mt19937_64 rng(12345);
    std::map<int64_t, int64_t> live;
    int64_t next_id = 0, peak = 0;
    for (int step = 0; step < 200000; step++) {
        if (live.empty() || rng() % 100 < 55) {
            int64_t bytes = (int64_t)(rng() % (1u << 24));
            a.alloc(next_id, bytes);
            live[next_id++] = bytes;
        } else {
            auto it = live.begin();
            std::advance(it, (long)(rng() % std::min<size_t>(live.size(), 64)));
            a.release(it->first);
            live.erase(it);
        }
        int64_t sum = 0;
        if (step % 97 == 0 || live.size() < 4) {
            for (auto &kv : live) sum += kv.second;
            ASSERT_EQ(a.stats().live_bytes, sum) << "step " << step;
        }
        peak = std::max(peak, a.stats().live_bytes);
    }
    int64_t sum = 0;
    for (auto &kv : live) sum += kv.second;
    EXPECT_EQ(a.stats().live_bytes, sum);
    EXPECT_EQ(a.stats().peak_live_bytes, peak);
    a.check();
}

// ---- a plain port of the rules on std::set, for differential testing --------------

struct RefAlloc {
    struct B {
        int64_t size, off;
        int seg;
        bool alloc = false, mapped = true;
        int pool = 0;
        B *prev = nullptr, *next = nullptr;
        B(int64_t sz, int64_t o, int sg) : size(sz), off(o), seg(sg) {}
    };
    struct BySize {
        bool operator()(const B *a, const B *b) const {
            if (a->size != b->size) return a->size < b->size;
            if (a->seg != b->seg) return a->seg < b->seg;
            return a->off < b->off;
        }
    };
    struct ByAddr {
        bool operator()(const B *a, const B *b) const {
            if (a->seg != b->seg) return a->seg < b->seg;
            return a->off < b->off;
        }
    };
    struct S {
        int64_t size, mapped;
        int pool;
        bool exp, released = false;
        B *head = nullptr;
        S(int64_t sz, int64_t mp, int pl, bool e) : size(sz), mapped(mp), pool(pl), exp(e) {}
    };
    remat_caching_config c;
    std::set<B *, BySize> blocks[2];
    std::set<B *, ByAddr> unmapped[2];
    std::vector<S> segs;
    std::map<int64_t, B *> live;
    int64_t reserved = 0;
    const int64_t vspace = (int64_t)1 << 40;

    explicit RefAlloc(const remat_caching_config &cfg) : c(cfg) {}
    ~RefAlloc() {
        for (auto &s : segs)
            for (B *b = s.released ? nullptr : s.head; b;) {
                B *n = b->next;
                delete b;
                b = n;
            }
    }
    int64_t page(int pool) const { return pool == 0 ? c.expandable_page : c.expandable_large_page; }
    static int64_t up(int64_t x, int64_t q) { return (x + q - 1) / q * q; }

    bool merge(B *dst, B *src) {
        if (!src || src->alloc || src->mapped != dst->mapped) return false;
        if (src->mapped) blocks[src->pool].erase(src);
        else unmapped[src->pool].erase(src);
        if (dst->prev == src) {
            dst->off = src->off;
            dst->prev = src->prev;
            if (dst->prev) dst->prev->next = dst;
            else segs[dst->seg].head = dst;
        } else {
            dst->next = src->next;
            if (dst->next) dst->next->prev = dst;
        }
        dst->size += src->size;
        delete src;
        return true;
    }
    B *get_free(int pool, int64_t size) {
        B key{size, INT64_MIN, INT32_MIN};
        auto it = blocks[pool].lower_bound(&key);
        if (it == blocks[pool].end()) return nullptr;
        if (c.expandable_segments) {
            auto es = [](B *b) { return b->size + (b->next && !b->next->mapped ? b->next->size : 0); };
            auto nx = std::next(it);
            while (nx != blocks[pool].end() && es(*nx) < es(*it)) it = nx++;
        }
        if (size < c.max_split_size && (*it)->size >= c.max_split_size) return nullptr;
        if (size >= c.max_split_size && (*it)->size >= size + c.large_segment) return nullptr;
        B *b = *it;
        blocks[pool].erase(it);
        return b;
    }
    void map(B *t, int64_t size) {
        int64_t mapped = std::min(up(size, page(t->pool)), t->size);
        unmapped[t->pool].erase(t);
        t->mapped = true;
        if (mapped < t->size) {
            B *r = new B{t->size - mapped, t->off + mapped, t->seg};
            r->pool = t->pool;
            r->mapped = false;
            r->prev = t;
            r->next = t->next;
            if (r->next) r->next->prev = r;
            t->next = r;
            t->size = mapped;
            unmapped[t->pool].insert(r);
        }
        segs[t->seg].mapped += mapped;
        reserved += mapped;
        merge(t, t->prev);
        merge(t, t->next);
        blocks[t->pool].insert(t);
    }
    B *alloc_exp(int pool, int64_t size) {
        auto ok = [](B *b) { return b && !b->alloc; };
        B *cand = nullptr;
        for (B *u : unmapped[pool]) {
            B *x = u;
            if (ok(x->prev)) x = x->prev;
            int64_t bytes = 0;
            for (B *y = x; bytes < size && ok(y); y = y->next) bytes += y->size;
            if (bytes >= size) {
                cand = x;
                break;
            }
        }
        if (!cand) {
            S s(vspace / page(pool) * page(pool), 0, pool, true);
            cand = new B{s.size, 0, (int)segs.size()};
            cand->pool = pool;
            cand->mapped = false;
            s.head = cand;
            segs.push_back(s);
            unmapped[pool].insert(cand);
        }
        if (!cand->mapped) map(cand, std::min(cand->size, size));
        while (cand->size < size) {
            B *nx = cand->next;
            map(nx, std::min(size - cand->size, nx->size));
            cand = nx;
        }
        blocks[pool].erase(cand);
        return cand;
    }
    remat_alloc_result alloc(int64_t id, int64_t bytes) {
        int64_t size = bytes < c.round_bytes ? c.round_bytes : up(bytes, c.round_bytes);
        int pool = size <= c.small_size ? 0 : 1;
        int64_t before = reserved;
        B *b = get_free(pool, size);
        bool grew = false;
        if (!b) {
            if (c.expandable_segments) {
                b = alloc_exp(pool, size);
                grew = reserved != before;
            } else {
                int64_t as = size <= c.small_size ? c.small_segment
                             : size < c.min_large_alloc ? c.large_segment
                                                        : up(size, c.round_large);
                b = new B{as, 0, (int)segs.size()};
                b->pool = pool;
                segs.push_back(S(as, as, pool, false));
                segs.back().head = b;
                reserved += as;
                grew = true;
            }
        }
        int64_t rem = b->size - size;
        bool split = (pool == 0 || c.expandable_segments) ? rem >= c.small_split_min
                                                          : (size < c.max_split_size && rem > c.large_split_min);
        if (split) {
            B *r = new B{rem, b->off + size, b->seg};
            r->pool = pool;
            r->prev = b;
            r->next = b->next;
            if (r->next) r->next->prev = r;
            b->next = r;
            b->size = size;
            blocks[pool].insert(r);
        }
        b->alloc = true;
        live[id] = b;
        remat_alloc_result res = {b->seg, b->off, b->size, 0};
        if (grew) {
            if (segs[b->seg].exp) {
                int64_t ext = 0;
                for (B *x = segs[b->seg].head; x; x = x->next)
                    if (x->mapped) ext = x->off + x->size;
                res.new_segment_bytes = ext;
            } else {
                res.new_segment_bytes = segs[b->seg].size;
            }
        }
        return res;
    }
    void release(int64_t id) {
        B *b = live[id];
        live.erase(id);
        b->alloc = false;
        merge(b, b->prev);
        merge(b, b->next);
        blocks[b->pool].insert(b);
    }
    int64_t empty_cache(std::vector<int64_t> *rel) {
        int64_t bytes = 0;
        if (!c.expandable_segments) {
            for (size_t i = 0; i < segs.size(); i++) {
                S &s = segs[i];
                if (s.released || s.head->alloc || s.head->next) continue;
                blocks[s.pool].erase(s.head);
                delete s.head;
                s.released = true;
                reserved -= s.size;
                bytes += s.size;
                rel->push_back((int64_t)i);
            }
            return bytes;
        }
        std::vector<B *> todo(blocks[1].begin(), blocks[1].end());
        todo.insert(todo.end(), blocks[0].begin(), blocks[0].end());
        for (B *b : todo) {
            int64_t pg = page(b->pool);
            int64_t lo = up(b->off, pg), hi = (b->off + b->size) / pg * pg;
            if (lo >= hi) continue;
            blocks[b->pool].erase(b);
            if (lo > b->off) {
                B *nb = new B{lo - b->off, b->off, b->seg};
                nb->pool = b->pool;
                nb->prev = b->prev;
                nb->next = b;
                if (nb->prev) nb->prev->next = nb;
                else segs[b->seg].head = nb;
                b->prev = nb;
                blocks[b->pool].insert(nb);
            }
            if (b->off + b->size > hi) {
                B *na = new B{b->off + b->size - hi, hi, b->seg};
                na->pool = b->pool;
                na->prev = b;
                na->next = b->next;
                if (na->next) na->next->prev = na;
                b->next = na;
                blocks[b->pool].insert(na);
            }
            b->off = lo;
            b->size = hi - lo;
            b->mapped = false;
            segs[b->seg].mapped -= hi - lo;
            reserved -= hi - lo;
            bytes += hi - lo;
            merge(b, b->prev);
            merge(b, b->next);
            unmapped[b->pool].insert(b);
            if (!b->prev && !b->next) {
                unmapped[b->pool].erase(b);
                segs[b->seg].released = true;
                rel->push_back(b->seg);
                delete b;
            }
        }
        return bytes;
    }
};

struct Placed {
    int64_t seg, off, size;
};

// Random sizes from 1 B to 64 MiB, log-uniform, some exact repeats.
int64_t random_size(std::mt19937_64 &rng) {
    static const int64_t common[] = {512, 4096, 1 << 20, (1 << 20) + 512, 2 << 20, 10 << 20, 20 << 20};
    if (rng() % 8 == 0) return common[rng() % 7];
    double e = (double)(rng() % 26000) / 1000.0;  // 2^0 .. 2^26
    return std::max<int64_t>(1, (int64_t)std::exp2(e));
}

void differential(const char *cfg_text, uint64_t seed, int steps) {
    SCOPED_TRACE(cfg_text);
    remat_caching_config cfg = cfg_with(cfg_text);
    Model a(REMAT_ALLOC_CACHING, &cfg);
    RefAlloc ref(cfg);
    std::mt19937_64 rng(seed);
    std::vector<int64_t> live_ids;
    std::map<int64_t, Placed> placed;
    std::map<int64_t, int64_t> seg_extent;  // largest size reported per segment
    int64_t next_id = 0, live_bytes = 0, alloc_bytes = 0;
    for (int step = 0; step < steps; step++) {
        uint64_t r = rng() % 1000;
        if (r < 3) {
            std::vector<int64_t> rel_a, rel_r;
            int64_t ba = remat_alloc_model_empty_cache(
                a.m, [](void *ctx, int64_t sg) { static_cast<std::vector<int64_t> *>(ctx)->push_back(sg); }, &rel_a);
            int64_t br = ref.empty_cache(&rel_r);
            ASSERT_EQ(ba, br) << "step " << step;
            std::sort(rel_a.begin(), rel_a.end());
            std::sort(rel_r.begin(), rel_r.end());
            ASSERT_EQ(rel_a, rel_r) << "step " << step;
            for (int64_t s : rel_a) seg_extent.erase(s);
        } else if (live_ids.empty() || r < 520) {
            int64_t bytes = random_size(rng);
            int64_t id = next_id++;
            remat_alloc_result got = a.alloc(id, bytes);
            remat_alloc_result want = ref.alloc(id, bytes);
            ASSERT_EQ(got.segment, want.segment) << "step " << step << " bytes " << bytes;
            ASSERT_EQ(got.offset, want.offset) << "step " << step << " bytes " << bytes;
            ASSERT_EQ(got.block_bytes, want.block_bytes) << "step " << step;
            ASSERT_EQ(got.new_segment_bytes, want.new_segment_bytes) << "step " << step;
            ASSERT_GE(got.block_bytes, bytes);
            if (got.new_segment_bytes > 0) seg_extent[got.segment] = got.new_segment_bytes;
            ASSERT_TRUE(seg_extent.count(got.segment));
            ASSERT_LE(got.offset + got.block_bytes, seg_extent[got.segment]) << "block outside its segment";
            placed[id] = Placed{got.segment, got.offset, got.block_bytes};
            live_ids.push_back(id);
            live_bytes += bytes;
            alloc_bytes += got.block_bytes;
            (void)live_bytes;
        } else {
            // mostly LIFO, sometimes random
            size_t k = (rng() % 4 == 0) ? rng() % live_ids.size() : live_ids.size() - 1 - rng() % std::min<size_t>(3, live_ids.size());
            int64_t id = live_ids[k];
            live_ids[k] = live_ids.back();
            live_ids.pop_back();
            a.release(id);
            ref.release(id);
            alloc_bytes -= placed[id].size;
            placed.erase(id);
        }
        remat_alloc_stats s = a.stats();
        ASSERT_EQ(s.reserved_bytes, ref.reserved) << "step " << step;
        ASSERT_EQ(s.allocated_bytes, alloc_bytes) << "step " << step;
        ASSERT_LE(s.allocated_bytes, s.reserved_bytes);
        if (step % 500 == 0) {
            remat_error err = {};
            ASSERT_EQ(remat_alloc_model_check(a.m, &err), REMAT_OK) << err.msg << " step " << step;
            // no two live blocks overlap within a segment
            std::map<std::pair<int64_t, int64_t>, int64_t> by_addr;
            for (auto &kv : placed) by_addr[{kv.second.seg, kv.second.off}] = kv.second.size;
            std::pair<int64_t, int64_t> prev{-1, 0};
            int64_t prev_end = 0;
            for (auto &kv : by_addr) {
                if (kv.first.first == prev.first) {
                    ASSERT_GE(kv.first.second, prev_end) << "overlap";
                }
                prev = kv.first;
                prev_end = kv.first.second + kv.second;
            }
        }
    }
    for (int64_t id : live_ids) {
        a.release(id);
        ref.release(id);
    }
    std::vector<int64_t> rel_a, rel_r;
    remat_alloc_model_empty_cache(a.m, nullptr, nullptr);
    ref.empty_cache(&rel_r);
    EXPECT_EQ(a.stats().reserved_bytes, 0);
    EXPECT_EQ(a.stats().n_segments, 0);
    EXPECT_EQ(a.stats().allocated_bytes, 0);
    EXPECT_EQ(a.stats().live_bytes, 0);
    a.check();
}

TEST(CachingRandom, MatchesReferenceDefault) { differential("", 1, 60000); }
TEST(CachingRandom, MatchesReferenceMaxSplit64MiB) { differential("max_split_size=64MiB", 2, 60000); }
TEST(CachingRandom, MatchesReferenceMaxSplit21MiB) { differential("max_split_size=21MiB", 3, 40000); }
TEST(CachingRandom, MatchesReferenceExpandable) { differential("expandable_segments=1", 4, 60000); }
TEST(CachingRandom, MatchesReferenceExpandableMaxSplit) {
    differential("expandable_segments=1,max_split_size=32MiB", 5, 40000);
}
TEST(CachingRandom, MatchesReferenceOddConstants) {
    differential("round_bytes=4KiB,small_size=64KiB,small_segment=256KiB,large_segment=8MiB,min_large_alloc=4MiB,"
                 "round_large=1MiB,small_split_min=8KiB,large_split_min=256KiB,expandable_page=256KiB,"
                 "expandable_large_page=4MiB",
                 6, 40000);
}

}  // namespace

namespace {

// Starting from a recorded state: segments added in address order, blocks placed at
// recorded offsets, the free blocks listed in best-fit order.
TEST(CachingRecordedState, AddSegmentPlaceAndListFree) {
    Model a(REMAT_ALLOC_CACHING);
    remat_error err = {};
    ASSERT_EQ(remat_alloc_model_add_segment(a.m, 1, 20 * MiB, &err), 0);
    ASSERT_EQ(remat_alloc_model_add_segment(a.m, 0, 2 * MiB, &err), 1);
    EXPECT_EQ(a.stats().reserved_bytes, 22 * MiB);
    ASSERT_EQ(remat_alloc_model_place(a.m, 0, 3 * MiB - 7, 0, 4 * MiB, 3 * MiB, &err), REMAT_OK) << err.msg;
    ASSERT_EQ(remat_alloc_model_place(a.m, 1, 100, 1, 512, 512, &err), REMAT_OK) << err.msg;
    a.check();
    EXPECT_EQ(a.stats().allocated_bytes, 3 * MiB + 512);
    EXPECT_EQ(a.stats().live_bytes, 3 * MiB - 7 + 100);
    // overlapping or outside: refused, nothing changed
    EXPECT_EQ(remat_alloc_model_place(a.m, 2, 10, 0, 5 * MiB, 512, &err), REMAT_ERR_INPUT);
    EXPECT_EQ(remat_alloc_model_place(a.m, 2, 10, 0, 20 * MiB - 256, 512, &err), REMAT_ERR_INPUT);
    EXPECT_EQ(remat_alloc_model_place(a.m, 2, 10, 5, 0, 512, &err), REMAT_ERR_INPUT);
    a.check();
    remat_alloc_block fb[4];
    // large pool: [0, 4 MiB) and [7 MiB, 20 MiB), smallest first
    ASSERT_EQ(remat_alloc_model_list_free(a.m, 1, 1, fb, 4), 2);
    EXPECT_EQ(fb[0].offset, 0);
    EXPECT_EQ(fb[0].size, 4 * MiB);
    EXPECT_EQ(fb[1].offset, 7 * MiB);
    EXPECT_EQ(remat_alloc_model_list_free(a.m, 1, 5 * MiB, fb, 4), 1);
    EXPECT_EQ(remat_alloc_model_list_free(a.m, 0, 1, fb, 4), 2);  // [0, 512) and [1024, 2 MiB)
    // a 4 MiB request takes the exact fit before the placed block
    remat_alloc_result r = a.alloc(3, 4 * MiB);
    EXPECT_EQ(r.segment, 0);
    EXPECT_EQ(r.offset, 0);
    EXPECT_EQ(r.new_segment_bytes, 0);
    a.release(0);
    a.release(3);
    a.release(1);
    a.check();
    EXPECT_EQ(remat_alloc_model_empty_cache(a.m, nullptr, nullptr), 22 * MiB);
}

}  // namespace
