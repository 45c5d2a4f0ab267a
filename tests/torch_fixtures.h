// torch_fixtures.h - where the real PyTorch snapshots used as test data are, when
// they are there: $REMAT_TORCH_FIXTURES, else ../shared/fixtures/torch-snapshots
// next to the source tree (found through a runfile that links into the tree).
// Tests that need them skip, saying why, when the folder is absent.
#ifndef REMAT_TESTS_TORCH_FIXTURES_H
#define REMAT_TESTS_TORCH_FIXTURES_H

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <string>

namespace remat_test {

// The folder, or "" when absent. `runfile` is any data file of the test that
// lives in the source tree `levels` folders below its root (e.g. "fuzz/seeds/pickle/x", 3).
inline std::string torch_fixture_dir(const char *runfile, int levels) {
    const char *env = getenv("REMAT_TORCH_FIXTURES");
    std::string dir;
    if (env && *env) {
        dir = env;
    } else {
        char buf[PATH_MAX];
        if (!realpath(runfile, buf)) return "";
        std::string p = buf;
        for (int i = 0; i < levels + 1; i++) {
            size_t s = p.rfind('/');
            if (s == std::string::npos) return "";
            p.resize(s);
        }
        dir = p + "/../shared/fixtures/torch-snapshots";
    }
    struct stat st;
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return "";
    return dir;
}

}  // namespace remat_test

#endif
