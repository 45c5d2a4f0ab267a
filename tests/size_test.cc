// size_test.cc - the one size grammar (core/base/size.h): SI and IEC units as
// written, plain bytes, inf; and that the allocator config string reads sizes
// with the same grammar as the flags.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/alloc/alloc_model.h"
#include "core/base/size.h"

namespace {

int64_t parse(const char *s) { return remat_size_parse_or_neg(s); }

TEST(Size, SiAndIecAsWritten) {
    EXPECT_EQ(parse("8GB"), 8000000000LL);        // SI: 10^9
    EXPECT_EQ(parse("8GiB"), 8LL << 30);          // IEC: 2^30
    EXPECT_EQ(parse("8 GB"), 8000000000LL);
    EXPECT_EQ(parse("64kB"), 64000);
    EXPECT_EQ(parse("64KB"), 64000);
    EXPECT_EQ(parse("64kb"), 64000);
    EXPECT_EQ(parse("64KiB"), 64 * 1024);
    EXPECT_EQ(parse("3MB"), 3000000);
    EXPECT_EQ(parse("3MiB"), 3 * 1048576);
    EXPECT_EQ(parse("2TB"), 2000000000000LL);
    EXPECT_EQ(parse("2TiB"), 2LL << 40);
    EXPECT_EQ(parse("1.5GiB"), 1610612736);
    EXPECT_EQ(parse("1.5 GiB"), 1610612736);
    EXPECT_EQ(parse("1.5GB"), 1500000000);
    EXPECT_EQ(parse("0.5KiB"), 512);
    EXPECT_EQ(parse("7.78GiB"), 8353711391LL);   // rounded to the nearest byte
}

TEST(Size, PlainBytesAndInf) {
    EXPECT_EQ(parse("0"), 0);
    EXPECT_EQ(parse("512"), 512);
    EXPECT_EQ(parse("512B"), 512);
    EXPECT_EQ(parse("512b"), 512);
    EXPECT_EQ(parse("9223372036854775807"), INT64_MAX);
    EXPECT_EQ(parse("inf"), REMAT_SIZE_INF);
    EXPECT_EQ(parse("8388607TiB"), 8388607LL << 40);
}

TEST(Size, RefusesAmbiguousAndGarbage) {
    // A bare K/M/G/T is ambiguous between 10^3n and 2^10n: refused, not guessed.
    for (const char *bad : {"64K", "64M", "8G", "2T", "", "-1", "-1KiB", "+5", " 5", "5 ", "abc", "12XB", "1.5",
                            "1.5B", "1.", ".5KiB", "0x10", "1e3", "INF", "Inf", "nan", "max", "5 5",
                            "9223372036854775808", "8388608TiB", "9300000TB", "5KiBx", "KiB", "5  KiB"}) {
        EXPECT_EQ(parse(bad), -1) << "'" << bad << "'";
    }
    EXPECT_EQ(parse(nullptr), -1);
    int64_t keep = 42;
    EXPECT_EQ(remat_size_parse("64M", &keep), -1);
    EXPECT_EQ(keep, 42);
}

// --allocator-config reads sizes with the same grammar: 64MB, 64MiB and inf all work,
// and the error names the field and the grammar.
TEST(Size, AllocatorConfigUsesTheGrammar) {
    remat_caching_config c;
    remat_error err = {};
    ASSERT_EQ(remat_caching_config_parse("max_split_size=64MB", &c, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(c.max_split_size, 64000000);
    ASSERT_EQ(remat_caching_config_parse("max_split_size=64MiB", &c, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(c.max_split_size, 64LL << 20);
    ASSERT_EQ(remat_caching_config_parse("max_split_size=inf", &c, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(c.max_split_size, INT64_MAX);
    ASSERT_EQ(remat_caching_config_parse("large_segment=20.5MiB,max_split_size=1.5GB", &c, &err), REMAT_OK)
        << err.msg;
    EXPECT_EQ(c.large_segment, 21495808);
    EXPECT_EQ(c.max_split_size, 1500000000);
    err = {};
    ASSERT_EQ(remat_caching_config_parse("max_split_size=64M", &c, &err), REMAT_ERR_INPUT);
    EXPECT_NE(std::string(err.msg).find("max_split_size: expected a size: bytes, or a number with kB/MB/GB/TB"),
              std::string::npos)
        << err.msg;
}

}  // namespace
