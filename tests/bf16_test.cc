// bf16_test.cc - the bfloat16 conversions of core/base/bf16.h: a table of hand-checked
// values (ties to even, subnormals, infinities, NaN, the largest finite value and
// rounding that overflows to infinity), every bf16 pattern round-tripping, and random
// fp32 patterns against an independent nearest-value reference in double.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "core/base/bf16.h"
#include "core/ref/ref_kernels.h"

namespace {

float f32(uint32_t u) { return remat_f32_from_bits(u); }

struct Case {
    uint32_t in;   // fp32 bits
    uint16_t out;  // expected bf16 bits
    const char *what;
};

// Every row checked by hand: the kept half is in[31:16]; the dropped half in[15:0]
// is compared with 0x8000 (below: truncate; above: round up; equal: the kept half
// rounds to even, i.e. up only when in[16] is 1). Carries run into the exponent.
const Case kTable[] = {
    {0x00000000u, 0x0000u, "+0"},
    {0x80000000u, 0x8000u, "-0"},
    {0x3f800000u, 0x3f80u, "1"},
    {0xbf800000u, 0xbf80u, "-1"},
    {0x3f807fffu, 0x3f80u, "1 + just under half an ulp: down"},
    {0x3f808000u, 0x3f80u, "1 + half an ulp: tie, 0x3f80 is even: down"},
    {0x3f808001u, 0x3f81u, "1 + just over half an ulp: up"},
    {0x3f818000u, 0x3f82u, "tie above 0x3f81 (odd): up to even 0x3f82"},
    {0xbf818000u, 0xbf82u, "negative tie above odd: away from zero to even"},
    {0x3fff8000u, 0x4000u, "tie at 1.99609375: carries into the exponent (2.0)"},
    {0x40490fdbu, 0x4049u, "pi -> 3.140625"},
    {0x3dcccccdu, 0x3dcdu, "0.1f -> 0.10009765625"},
    {0x00000001u, 0x0000u, "smallest fp32 subnormal: to +0"},
    {0x80000001u, 0x8000u, "smallest negative fp32 subnormal: to -0"},
    {0x00008000u, 0x0000u, "subnormal tie, 0x0000 even: down to 0"},
    {0x00008001u, 0x0001u, "just over: the smallest bf16 subnormal 2^-133"},
    {0x00018000u, 0x0002u, "subnormal tie above odd 0x0001: up to 0x0002"},
    {0x007f0000u, 0x007fu, "largest bf16 subnormal, exact"},
    {0x007fffffu, 0x0080u, "largest fp32 subnormal: rounds up to the smallest normal 2^-126"},
    {0x807fffffu, 0x8080u, "its negative: -2^-126"},
    {0x00800000u, 0x0080u, "smallest normal, exact"},
    {0x7f7f0000u, 0x7f7fu, "largest finite bf16 3.3895314e38, exact"},
    {0x7f7f7fffu, 0x7f7fu, "just under the midpoint to 2^128: stays finite"},
    {0x7f7f8000u, 0x7f80u, "midpoint tie above odd 0x7f7f: overflows to +inf"},
    {0x7f7fffffu, 0x7f80u, "FLT_MAX: overflows to +inf"},
    {0xff7fffffu, 0xff80u, "-FLT_MAX: overflows to -inf"},
    {0x7f800000u, 0x7f80u, "+inf"},
    {0xff800000u, 0xff80u, "-inf"},
    {0x7fc00000u, 0x7fc0u, "quiet NaN"},
    {0xffc00000u, 0xffc0u, "negative quiet NaN keeps its sign"},
    {0x7f800001u, 0x7fc0u, "signalling NaN, payload only in dropped bits: quiet NaN, not inf"},
    {0xff800001u, 0xffc0u, "negative such signalling NaN"},
    {0x7fa00000u, 0x7fe0u, "signalling NaN with a kept payload: payload kept, quiet bit set"},
    {0x7fffffffu, 0x7fffu, "all-ones NaN: no carry into the sign"},
};

TEST(Bf16, HandCheckedTable) {
    for (const Case &c : kTable) {
        EXPECT_EQ(remat_f32_to_bf16(f32(c.in)), c.out)
            << c.what << ": 0x" << std::hex << c.in << " -> 0x" << remat_f32_to_bf16(f32(c.in));
    }
}

TEST(Bf16, WideningIsExact) {
    EXPECT_EQ(remat_bf16_to_f32(0x3f80u), 1.0f);
    EXPECT_EQ(remat_bf16_to_f32(0x4049u), 3.140625f);
    EXPECT_EQ(remat_bf16_to_f32(0x0001u), std::ldexp(1.0f, -133));
    EXPECT_EQ(remat_bf16_to_f32(0x7f7fu), 3.38953139e38f);
    EXPECT_EQ(remat_bf16_to_f32(0xff80u), -INFINITY);
    EXPECT_TRUE(std::signbit(remat_bf16_to_f32(0x8000u)) && remat_bf16_to_f32(0x8000u) == 0.0f);
    EXPECT_TRUE(std::isnan(remat_bf16_to_f32(0x7fc0u)));
    EXPECT_EQ(remat_bf16_round(0.1f), 0.10009765625f);
}

// Every bf16 pattern widens and narrows back to itself (NaNs to themselves with the
// quiet bit set), so rounding a stored value again changes nothing.
TEST(Bf16, EveryPatternRoundTrips) {
    for (uint32_t b = 0; b <= 0xffffu; b++) {
        float x = remat_bf16_to_f32((uint16_t)b);
        uint16_t back = remat_f32_to_bf16(x);
        if (std::isnan(x))
            EXPECT_EQ(back, (uint16_t)(b | 0x0040u)) << std::hex << b;
        else
            ASSERT_EQ(back, (uint16_t)b) << std::hex << b;
        EXPECT_EQ(remat_f32_bits(remat_bf16_round(x)) >> 16, back) << std::hex << b;
    }
}

// The value rounding must give, worked out in double from the two bf16 neighbours of x
// (2^128 standing for the infinity above the largest finite value).
uint16_t reference_round(uint32_t u) {
    float x = f32(u);
    if (std::isnan(x)) return (uint16_t)((u >> 16) | 0x40u);
    if (std::isinf(x)) return (uint16_t)(u >> 16);
    uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
    double dlo = remat_bf16_to_f32(lo);
    double dhi = (hi & 0x7fffu) == 0x7f80u ? std::copysign(std::ldexp(1.0, 128), x) : remat_bf16_to_f32(hi);
    double dx = x, elo = std::fabs(dx - dlo), ehi = std::fabs(dhi - dx);
    if (elo < ehi) return lo;
    if (ehi < elo) return hi;
    return (lo & 1u) ? hi : lo;
}

TEST(Bf16, RandomPatternsMatchNearestEvenReference) {
    std::mt19937 rng(20261201);
    for (int i = 0; i < 2000000; i++) {
        uint32_t u = (uint32_t)rng();
        if (i % 4 == 1) u = (u & 0xffff0000u) | 0x8000u;            // exact ties
        if (i % 4 == 2) u = (u & 0xffff0000u) | (0x7fffu + (u & 2)); // next to ties
        ASSERT_EQ(remat_f32_to_bf16(f32(u)), reference_round(u)) << std::hex << u;
    }
}

TEST(Bf16, ReferenceKernelConverts) {
    const float x[] = {1.0f, f32(0x3f808001u), f32(0x7f7fffffu), -0.0f, f32(0x7f800001u), 0.1f};
    uint16_t b[6];
    remat_ref_bf16_from_f32(b, x, 6);
    const uint16_t want[] = {0x3f80u, 0x3f81u, 0x7f80u, 0x8000u, 0x7fc0u, 0x3dcdu};
    for (int i = 0; i < 6; i++) EXPECT_EQ(b[i], want[i]) << i;
}

}  // namespace
