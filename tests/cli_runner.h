// cli_runner.h - running the built `remat` binary from a test (runfiles path
// tools/remat): exit code and captured stdout / stderr; and what the CLI tests ask of
// its output (lines, substrings, --json numbers).
#ifndef REMAT_TESTS_CLI_RUNNER_H
#define REMAT_TESTS_CLI_RUNNER_H

#include <cjson/cJSON.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace remat_test {

struct Proc {
    int rc = -1;
    std::string out, err;
};

// $TEST_TMPDIR, or /tmp outside Bazel.
std::string tmp_dir();
// The whole file ("" when it cannot be read).
std::string slurp(const std::string &path);
// Runs "tools/remat <args>" through the shell.
Proc remat(const std::string &args);
// The number of '\n' in s (a one-line error: 1).
int lines(const std::string &s);
// 1 when needle occurs in hay.
bool has(const std::string &hay, const std::string &needle);
// The number o[key] (a test failure, and -1, when it is not a number).
inline int64_t num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    EXPECT_TRUE(cJSON_IsNumber(v)) << key;
    return v ? (int64_t)v->valuedouble : -1;
}

}  // namespace remat_test

#endif
