// json_write_test.cc - the one JSON writer (core/io/json_write.h): every string it
// writes parses back (cJSON) to the same bytes, quotes, backslashes, control
// characters and non-UTF-8 bytes included.
#include <gtest/gtest.h>

#include <cjson/cJSON.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/io/json_write.h"

namespace {

std::string quoted(const char *s) {
    size_t n = remat_json_quote(nullptr, 0, s);
    std::string out(n + 1, '\0');
    EXPECT_EQ(remat_json_quote(&out[0], n + 1, s), n);
    out.resize(n);
    // The FILE* form writes the same text.
    char *mem = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&mem, &len);
    remat_json_string(f, s);
    fclose(f);
    EXPECT_EQ(std::string(mem, len), out);
    free(mem);
    return out;
}

std::string parsed(const std::string &literal) {
    cJSON *j = cJSON_Parse(literal.c_str());
    EXPECT_TRUE(cJSON_IsString(j)) << literal;
    std::string v = cJSON_IsString(j) ? j->valuestring : "<invalid>";
    cJSON_Delete(j);
    return v;
}

TEST(JsonWrite, EscapesAndRoundTrips) {
    for (const char *s : {"", "plain", "my\"plan.json", "back\\slash", "tab\there", "new\nline", "\x01\x1f\x7f",
                          "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"}) {
        std::string q = quoted(s);
        EXPECT_EQ(parsed(q), s) << q;
    }
    EXPECT_EQ(quoted("my\"plan.json"), "\"my\\\"plan.json\"");
    EXPECT_EQ(quoted(nullptr), "\"\"");
}

TEST(JsonWrite, InvalidUtf8StaysValidJson) {
    // A Latin-1 file name: each stray byte becomes \u00XX, the text stays valid JSON.
    std::string q = quoted("caf\xe9.json \xc3 \xed\xa0\x80");
    EXPECT_EQ(q, "\"caf\\u00e9.json \\u00c3 \\u00ed\\u00a0\\u0080\"");
    EXPECT_EQ(parsed(q), "caf\xc3\xa9.json \xc3\x83 \xc3\xad\xc2\xa0\xc2\x80");
}

TEST(JsonWrite, TruncatesLikeSnprintf) {
    char buf[5];
    EXPECT_EQ(remat_json_quote(buf, sizeof buf, "abcdef"), 8u);
    EXPECT_STREQ(buf, "\"abc");
}

}  // namespace
