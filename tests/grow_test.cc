// grow_test.cc - the one growth rule of dynamic arrays (core/base/grow.h): the first
// capacity, doubling until the need fits, the caller's limit, and a failure that
// leaves the array and its capacity as they were.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "core/base/grow.h"

namespace {

TEST(Grow, FirstCapacityThenDoubling) {
    remat_error err = {};
    int64_t *a = nullptr, cap = 0;
    ASSERT_EQ(remat_grow((void **)&a, &cap, 1, sizeof *a, 256, INT64_MAX, &err), REMAT_OK);
    EXPECT_EQ(cap, 256);
    for (int64_t i = 0; i < cap; i++) a[i] = i;
    ASSERT_EQ(remat_grow((void **)&a, &cap, 256, sizeof *a, 256, INT64_MAX, &err), REMAT_OK);
    EXPECT_EQ(cap, 256);  // fits: unchanged
    ASSERT_EQ(remat_grow((void **)&a, &cap, 257, sizeof *a, 256, INT64_MAX, &err), REMAT_OK);
    EXPECT_EQ(cap, 512);
    ASSERT_EQ(remat_grow((void **)&a, &cap, 3000, sizeof *a, 256, INT64_MAX, &err), REMAT_OK);
    EXPECT_EQ(cap, 4096);  // doubles until the need fits
    for (int64_t i = 0; i < 256; i++) ASSERT_EQ(a[i], i);  // kept across growth
    remat_xfree(a);
    int32_t *b = nullptr;
    int64_t cb = 0;
    ASSERT_EQ(remat_grow((void **)&b, &cb, 5000, sizeof *b, 1024, INT64_MAX, &err), REMAT_OK);
    EXPECT_EQ(cb, 8192);  // from first, doubled
    remat_xfree(b);
    EXPECT_EQ(err.status, REMAT_OK);
}

TEST(Grow, ClippedToTheLimit) {
    remat_error err = {};
    char *a = nullptr;
    int64_t cap = 0;
    ASSERT_EQ(remat_grow((void **)&a, &cap, 40, 1, 64, 100, &err), REMAT_OK);
    EXPECT_EQ(cap, 64);
    ASSERT_EQ(remat_grow((void **)&a, &cap, 65, 1, 64, 100, &err), REMAT_OK);
    EXPECT_EQ(cap, 100);  // 128 clipped
    remat_xfree(a);
}

TEST(Grow, FailureLeavesTheArray) {
    remat_error err = {};
    char *a = nullptr;
    int64_t cap = 0;
    ASSERT_EQ(remat_grow((void **)&a, &cap, 10, 1, 16, 100, &err), REMAT_OK);
    char *before = a;
    EXPECT_EQ(remat_grow((void **)&a, &cap, 101, 1, 16, 100, &err), REMAT_ERR_NOMEM);
    EXPECT_EQ(a, before);
    EXPECT_EQ(cap, 16);
    EXPECT_NE(std::strstr(err.msg, "at most 100"), nullptr) << err.msg;

    remat_error err2 = {};  // the bytes overflow size_t: refused before any allocation
    EXPECT_EQ(remat_grow((void **)&a, &cap, INT64_MAX / 2, 64, 16, INT64_MAX, &err2), REMAT_ERR_NOMEM);
    EXPECT_EQ(a, before);
    EXPECT_EQ(cap, 16);
    EXPECT_NE(std::strstr(err2.msg, "overflows"), nullptr) << err2.msg;
    remat_xfree(a);
}

}  // namespace
