// cli_runner.h - running the built `remat` binary from a test (runfiles path
// tools/remat): exit code and captured stdout / stderr.
#ifndef REMAT_TESTS_CLI_RUNNER_H
#define REMAT_TESTS_CLI_RUNNER_H

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

}  // namespace remat_test

#endif
