// compress_test.cc - the spike compressors: exact round trips, the documented byte
// layouts, refusal of values a format cannot hold (by bit pattern), and refusal of
// malformed compressed buffers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/codec/compress.h"

namespace {

const remat_compressor kBinary[] = {REMAT_COMP_BIT, REMAT_COMP_BOOL, REMAT_COMP_SPARSE};
const remat_compressor kAll[] = {REMAT_COMP_NONE, REMAT_COMP_BIT, REMAT_COMP_BOOL, REMAT_COMP_SPARSE,
                                 REMAT_COMP_UINT8};

// A small counter-based generator (splitmix64), so this test needs only //core:compress.
uint64_t Mix(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
uint64_t RandBits(uint64_t key, uint64_t i) { return Mix(Mix(key) ^ (i * 0xd1b54a32d192ed03ull)); }
double RandU(uint64_t key, uint64_t i) { return (double)(RandBits(key, i) >> 11) * (1.0 / 9007199254740992.0); }

uint32_t Bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// Compresses and restores; checks sizes and that every restored bit pattern is the input's.
void RoundTrip(remat_compressor c, const std::vector<float>& x, const std::string& what) {
    const int64_t n = (int64_t)x.size(), nnz = remat_count_nonzero(x.data(), n);
    const int64_t bytes = remat_compressed_bytes(c, n, nnz);
    ASSERT_EQ(bytes, remat_encoding_bytes(remat_compressor_encoding(c), n, nnz));
    std::vector<uint8_t> buf(bytes + 1, 0xAB);
    remat_error err = {};
    ASSERT_EQ(REMAT_OK, remat_compress(c, bytes ? buf.data() : nullptr, bytes, x.data(), n, &err))
        << remat_compressor_name(c) << " " << what << ": " << err.msg;
    EXPECT_EQ(buf[bytes], 0xAB) << "wrote past dst_bytes";
    std::vector<float> y(n + 1, -7.0f);
    ASSERT_EQ(REMAT_OK, remat_decompress(c, y.data(), n, bytes ? buf.data() : nullptr, bytes, &err))
        << remat_compressor_name(c) << " " << what << ": " << err.msg;
    EXPECT_EQ(y[n], -7.0f) << "wrote past n";
    for (int64_t i = 0; i < n; i++)
        ASSERT_EQ(Bits(x[i]), Bits(y[i])) << remat_compressor_name(c) << " " << what << " element " << i;
}

std::vector<float> Spikes(int64_t n, double density, uint64_t key) {
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; i++) x[i] = RandU(key, i) < density ? 1.0f : 0.0f;
    return x;
}

TEST(Compress, EncodingsAndSizes) {
    EXPECT_EQ(remat_compressor_encoding(REMAT_COMP_NONE), REMAT_ENC_F32);
    EXPECT_EQ(remat_compressor_encoding(REMAT_COMP_BOOL), REMAT_ENC_U8);
    EXPECT_EQ(remat_compressor_encoding(REMAT_COMP_UINT8), REMAT_ENC_U8);
    EXPECT_EQ(remat_compressor_encoding(REMAT_COMP_BIT), REMAT_ENC_BIT);
    EXPECT_EQ(remat_compressor_encoding(REMAT_COMP_SPARSE), REMAT_ENC_SPARSE);
    EXPECT_EQ(remat_compressed_bytes(REMAT_COMP_BIT, 17, 5), 3);
    EXPECT_EQ(remat_compressed_bytes(REMAT_COMP_BIT, 16, 5), 2);
    EXPECT_EQ(remat_compressed_bytes(REMAT_COMP_BOOL, 17, 5), 17);
    EXPECT_EQ(remat_compressed_bytes(REMAT_COMP_SPARSE, 17, 5), 20);
    EXPECT_EQ(remat_compressed_bytes(REMAT_COMP_NONE, 17, 5), 68);
    const float x[] = {0.0f, -0.0f, 1.0f, 2.5f, std::numeric_limits<float>::quiet_NaN(), 0.0f};
    EXPECT_EQ(remat_count_nonzero(x, 6), 4) << "-0.0 is not the +0.0 bit pattern";
    EXPECT_EQ(remat_count_nonzero(x, 0), 0);
}

TEST(Compress, DocumentedByteLayouts) {
    // element i in byte i/8, bit i%8, least significant first
    std::vector<float> x(10, 0.0f);
    x[0] = x[9] = x[3] = 1.0f;
    uint8_t bits[2];
    remat_error err = {};
    ASSERT_EQ(REMAT_OK, remat_compress(REMAT_COMP_BIT, bits, 2, x.data(), 10, &err)) << err.msg;
    EXPECT_EQ(bits[0], 0x09);
    EXPECT_EQ(bits[1], 0x02);
    uint8_t b[10];
    ASSERT_EQ(REMAT_OK, remat_compress(REMAT_COMP_BOOL, b, 10, x.data(), 10, &err)) << err.msg;
    for (int i = 0; i < 10; i++) EXPECT_EQ(b[i], x[i] == 1.0f ? 1 : 0);
    uint32_t pos[3];
    ASSERT_EQ(REMAT_OK, remat_compress(REMAT_COMP_SPARSE, pos, 12, x.data(), 10, &err)) << err.msg;
    EXPECT_EQ(pos[0], 0u);
    EXPECT_EQ(pos[1], 3u);
    EXPECT_EQ(pos[2], 9u);
    const float ints[] = {0.0f, 255.0f, 7.0f, 1.0f};
    uint8_t u[4];
    ASSERT_EQ(REMAT_OK, remat_compress(REMAT_COMP_UINT8, u, 4, ints, 4, &err)) << err.msg;
    EXPECT_EQ(u[0], 0);
    EXPECT_EQ(u[1], 255);
    EXPECT_EQ(u[2], 7);
    EXPECT_EQ(u[3], 1);
}

TEST(Compress, RoundTripsEveryLengthAndDensity) {
    for (remat_compressor c : kAll) {
        RoundTrip(c, {}, "empty");
        RoundTrip(c, {0.0f}, "one zero");
        RoundTrip(c, {1.0f}, "one one");
        for (int64_t n = 1; n <= 1000; n++) RoundTrip(c, Spikes(n, 0.3, n), "length " + std::to_string(n));
        for (int64_t n : {999, 1000, 1001, 4096 + 3}) {
            RoundTrip(c, std::vector<float>(n, 0.0f), "all zeros");
            RoundTrip(c, std::vector<float>(n, 1.0f), "all ones");
            std::vector<float> alt(n);
            for (int64_t i = 0; i < n; i++) alt[i] = (float)(i % 2);
            RoundTrip(c, alt, "alternating 0 1");
            for (int64_t i = 0; i < n; i++) alt[i] = (float)(1 - i % 2);
            RoundTrip(c, alt, "alternating 1 0");
        }
        for (int d = 0; d <= 10; d++) RoundTrip(c, Spikes(777, d / 10.0, 1000 + d), "density " + std::to_string(d));
    }
}

TEST(Compress, Uint8RoundTripsAllValues) {
    std::vector<float> x(3001);
    for (size_t i = 0; i < x.size(); i++) x[i] = (float)(RandBits(3, i) % 256);
    RoundTrip(REMAT_COMP_UINT8, x, "random 0..255");
    std::vector<float> all(256);
    for (int v = 0; v < 256; v++) all[v] = (float)v;
    RoundTrip(REMAT_COMP_UINT8, all, "0..255");
    RoundTrip(REMAT_COMP_NONE, {0.5f, -0.0f, 3.25f, -1e30f}, "none keeps any value");
}

// The element's index and value are in the message; REMAT_ERR_INPUT is returned.
void ExpectRefused(remat_compressor c, float bad, const std::string& text) {
    for (int64_t at : {0, 37, 99}) {
        std::vector<float> x = Spikes(100, 0.5, 5);
        if (c == REMAT_COMP_UINT8)
            for (int64_t i = 0; i < 100; i++) x[i] = (float)(i % 200);
        x[at] = bad;
        const int64_t bytes = remat_compressed_bytes(c, 100, remat_count_nonzero(x.data(), 100));
        std::vector<uint8_t> buf(bytes > 0 ? bytes : 1);
        remat_error err = {};
        EXPECT_EQ(REMAT_ERR_INPUT, remat_compress(c, buf.data(), bytes, x.data(), 100, &err))
            << remat_compressor_name(c) << " accepted " << text;
        EXPECT_EQ(err.status, REMAT_ERR_INPUT);
        const std::string msg = err.msg;
        EXPECT_NE(msg.find("element " + std::to_string(at) + " is " + text + ", not "), std::string::npos)
            << remat_compressor_name(c) << ": " << msg;
    }
}

TEST(Compress, RefusesValuesItCannotHold) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (remat_compressor c : kBinary) {
        ExpectRefused(c, 0.5f, "0.5");
        ExpectRefused(c, -0.0f, "-0");
        ExpectRefused(c, nan, "nan");
        ExpectRefused(c, 2.0f, "2");
        ExpectRefused(c, -1.0f, "-1");
        ExpectRefused(c, std::numeric_limits<float>::infinity(), "inf");
    }
    ExpectRefused(REMAT_COMP_UINT8, 256.0f, "256");
    ExpectRefused(REMAT_COMP_UINT8, 1.5f, "1.5");
    ExpectRefused(REMAT_COMP_UINT8, -0.0f, "-0");
    ExpectRefused(REMAT_COMP_UINT8, nan, "nan");
    ExpectRefused(REMAT_COMP_UINT8, -1.0f, "-1");
    ExpectRefused(REMAT_COMP_UINT8, 0.999f, "0.999000013");
}

TEST(Compress, RefusesWrongDestinationSize) {
    auto x = Spikes(20, 0.5, 9);
    const int64_t nnz = remat_count_nonzero(x.data(), 20);
    for (remat_compressor c : kAll) {
        const int64_t bytes = remat_compressed_bytes(c, 20, nnz);
        std::vector<uint8_t> buf(bytes + 8);
        for (int64_t wrong : {bytes - 1, bytes + 1}) {
            remat_error err = {};
            EXPECT_EQ(REMAT_ERR_INPUT, remat_compress(c, buf.data(), wrong, x.data(), 20, &err))
                << remat_compressor_name(c) << " dst_bytes " << wrong;
            EXPECT_NE(std::string(err.msg).find("dst_bytes"), std::string::npos) << err.msg;
        }
    }
}

remat_status Decompress(remat_compressor c, int64_t n, const std::vector<uint8_t>& src, std::string* msg) {
    std::vector<float> y(n > 0 ? n : 1);
    remat_error err = {};
    remat_status st = remat_decompress(c, y.data(), n, src.empty() ? nullptr : src.data(), (int64_t)src.size(), &err);
    *msg = err.msg;
    return st;
}

std::vector<uint8_t> Positions(std::initializer_list<uint32_t> p) {
    std::vector<uint8_t> b(p.size() * 4);
    size_t i = 0;
    for (uint32_t v : p) std::memcpy(&b[4 * i++], &v, 4);
    return b;
}

TEST(Decompress, RefusesMalformedBuffers) {
    std::string msg;
    // sparse: out of range, repeated, descending, partial position, more ones than n
    EXPECT_EQ(REMAT_OK, Decompress(REMAT_COMP_SPARSE, 10, Positions({0, 4, 9}), &msg)) << msg;
    EXPECT_EQ(REMAT_ERR_INPUT, Decompress(REMAT_COMP_SPARSE, 10, Positions({0, 4, 10}), &msg));
    EXPECT_NE(msg.find("position 2"), std::string::npos) << msg;
    EXPECT_EQ(REMAT_ERR_INPUT, Decompress(REMAT_COMP_SPARSE, 10, Positions({0xffffffffu}), &msg));
    EXPECT_EQ(REMAT_ERR_INPUT, Decompress(REMAT_COMP_SPARSE, 10, Positions({1, 4, 4}), &msg));
    EXPECT_NE(msg.find("ascending"), std::string::npos) << msg;
    EXPECT_EQ(REMAT_ERR_INPUT, Decompress(REMAT_COMP_SPARSE, 10, Positions({5, 3}), &msg));
    EXPECT_NE(msg.find("position 1"), std::string::npos) << msg;
    auto partial = Positions({1, 2});
    partial.pop_back();
    EXPECT_EQ(REMAT_ERR_INPUT, Decompress(REMAT_COMP_SPARSE, 10, partial, &msg));
    EXPECT_EQ(REMAT_ERR_INPUT, Decompress(REMAT_COMP_SPARSE, 2, Positions({0, 1, 2}), &msg));
    // bit: wrong size, set padding bits
    EXPECT_EQ(REMAT_OK, Decompress(REMAT_COMP_BIT, 10, {0xff, 0x03}, &msg)) << msg;
    EXPECT_EQ(REMAT_ERR_INPUT, Decompress(REMAT_COMP_BIT, 10, {0xff}, &msg));
    EXPECT_NE(msg.find("src_bytes"), std::string::npos) << msg;
    EXPECT_EQ(REMAT_ERR_INPUT, Decompress(REMAT_COMP_BIT, 10, {0xff, 0x03, 0x00}, &msg));
    EXPECT_EQ(REMAT_ERR_INPUT, Decompress(REMAT_COMP_BIT, 10, {0xff, 0x07}, &msg));
    EXPECT_NE(msg.find("padding"), std::string::npos) << msg;
    // bool: flag above 1, wrong size; uint8 and none: wrong size
    EXPECT_EQ(REMAT_ERR_INPUT, Decompress(REMAT_COMP_BOOL, 3, {0, 1, 2}, &msg));
    EXPECT_NE(msg.find("byte 2"), std::string::npos) << msg;
    EXPECT_EQ(REMAT_ERR_INPUT, Decompress(REMAT_COMP_BOOL, 3, {0, 1}, &msg));
    EXPECT_EQ(REMAT_OK, Decompress(REMAT_COMP_UINT8, 3, {0, 200, 255}, &msg)) << msg;
    EXPECT_EQ(REMAT_ERR_INPUT, Decompress(REMAT_COMP_UINT8, 3, {0, 200, 255, 1}, &msg));
    EXPECT_EQ(REMAT_ERR_INPUT, Decompress(REMAT_COMP_NONE, 3, std::vector<uint8_t>(11), &msg));
    // an unknown compressor id and a negative length
    EXPECT_EQ(REMAT_ERR_INPUT, Decompress((remat_compressor)99, 3, {0, 0, 0}, &msg));
    EXPECT_EQ(REMAT_ERR_INPUT, Decompress(REMAT_COMP_BOOL, -1, {}, &msg));
}

TEST(Decompress, SparseRestoresZerosEverywhereElse) {
    std::vector<float> y(6, 5.0f);
    auto src = Positions({1, 5});
    remat_error err = {};
    ASSERT_EQ(REMAT_OK, remat_decompress(REMAT_COMP_SPARSE, y.data(), 6, src.data(), 8, &err)) << err.msg;
    const float want[] = {0, 1, 0, 0, 0, 1};
    for (int i = 0; i < 6; i++) EXPECT_EQ(Bits(y[i]), Bits(want[i])) << i;
}

}  // namespace
