// cli_runner.cc - see cli_runner.h.
#include "tests/cli_runner.h"

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

namespace remat_test {

std::string tmp_dir() {
    const char *t = std::getenv("TEST_TMPDIR");
    return t ? t : "/tmp";
}

std::string slurp(const std::string &path) {
    std::ifstream f(path);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

Proc remat(const std::string &args) {
    static int n = 0;
    std::string o = tmp_dir() + "/cli_out" + std::to_string(n) + ".txt";
    std::string e = tmp_dir() + "/cli_err" + std::to_string(n++) + ".txt";
    std::string cmd = "tools/remat " + args + " >" + o + " 2>" + e;
    Proc r;
    int st = std::system(cmd.c_str());
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    r.out = slurp(o);
    r.err = slurp(e);
    return r;
}

int lines(const std::string &s) {
    int k = 0;
    for (char c : s) k += c == '\n';
    return k;
}

bool has(const std::string &hay, const std::string &needle) { return hay.find(needle) != std::string::npos; }

}  // namespace remat_test
