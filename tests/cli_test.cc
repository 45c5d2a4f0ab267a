// cli_test.cc - flag parsing, size flags, byte formatting and exit codes of tools/cli.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "tools/cli.h"
#include "tools/paths.h"

#include <fstream>
#include <unistd.h>

namespace {

struct Args {
    std::vector<std::string> store;
    std::vector<char *> ptrs;
    explicit Args(std::initializer_list<const char *> a) {
        for (const char *s : a) store.emplace_back(s);
        for (auto &s : store) ptrs.push_back(&s[0]);
    }
    int argc() { return (int)ptrs.size(); }
    char **argv() { return ptrs.data(); }
};

struct Opts {
    const char *model = nullptr;
    int iters = -7;
    int json = 0;
    int64_t budget = -1;
    double lr = -1;
    cli_list traces = {};
    std::vector<cli_option> v;
    Opts() {
        v = {{"--model", CLI_STRING, &model, "model file"},
             {"--iters", CLI_INT, &iters, "iterations"},
             {"--json", CLI_FLAG, &json, "print JSON"},
             {"--budget", CLI_SIZE, &budget, "memory budget"},
             {"--lr", CLI_DOUBLE, &lr, "learning rate"},
             {"--trace", CLI_STRING_LIST, &traces, "trace file"},
             {nullptr, CLI_FLAG, nullptr, nullptr}};
    }
};

int parse(Args &a, Opts &o, int *help, std::string *out, std::string *errs) {
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    int rc = remat_cli_parse(a.argc(), a.argv(), "usage: remat x --model M", o.v.data(), help);
    *out = testing::internal::GetCapturedStdout();
    *errs = testing::internal::GetCapturedStderr();
    return rc;
}

TEST(CliParse, BothValueForms) {
    Args a{"run", "--model", "m.json", "--iters=3", "--json", "--budget=1MiB", "--lr", "0.25", "--trace", "a.h5",
           "--trace=b.h5"};
    Opts o;
    int help = -1;
    std::string out, errs;
    ASSERT_EQ(parse(a, o, &help, &out, &errs), 0) << errs;
    EXPECT_EQ(help, 0);
    EXPECT_STREQ(o.model, "m.json");
    EXPECT_EQ(o.iters, 3);
    EXPECT_EQ(o.json, 1);
    EXPECT_EQ(o.budget, 1048576);
    EXPECT_DOUBLE_EQ(o.lr, 0.25);
    ASSERT_EQ(o.traces.n, 2);
    EXPECT_STREQ(o.traces.items[0], "a.h5");
    EXPECT_STREQ(o.traces.items[1], "b.h5");
    EXPECT_TRUE(out.empty());
    EXPECT_TRUE(errs.empty());
}

TEST(CliParse, DefaultsUntouchedWhenAbsent) {
    Args a{"run"};
    Opts o;
    int help = -1;
    std::string out, errs;
    ASSERT_EQ(parse(a, o, &help, &out, &errs), 0);
    EXPECT_EQ(o.model, nullptr);
    EXPECT_EQ(o.iters, -7);
    EXPECT_EQ(o.budget, -1);
    EXPECT_EQ(o.traces.n, 0);
}

TEST(CliParse, HelpListsEveryOption) {
    for (const char *h : {"--help", "-h"}) {
        Args a{"run", "--bogus", h};
        Opts o;
        int help = 0;
        std::string out, errs;
        ASSERT_EQ(parse(a, o, &help, &out, &errs), 0);
        EXPECT_EQ(help, 1);
        EXPECT_EQ(out.rfind("usage: remat x --model M\n", 0), 0u) << out;
        for (const char *name : {"--model <text>", "--iters <int>", "--json", "--budget <size>", "--lr <number>",
                                 "--trace <text>", "--help", "model file", "(repeatable)"})
            EXPECT_NE(out.find(name), std::string::npos) << name << " in\n" << out;
        EXPECT_TRUE(errs.empty());
    }
}

void expect_error(std::initializer_list<const char *> argv, const char *needle) {
    Args a(argv);
    Opts o;
    int help = -1;
    std::string out, errs;
    EXPECT_EQ(parse(a, o, &help, &out, &errs), 2) << needle;
    EXPECT_EQ(help, 0);
    EXPECT_NE(errs.find(needle), std::string::npos) << "'" << needle << "' not in: " << errs;
    EXPECT_EQ(errs.rfind("remat run: ", 0), 0u) << errs;
    // exactly one line
    EXPECT_EQ(std::count(errs.begin(), errs.end(), '\n'), 1) << errs;
}

TEST(CliParse, Errors) {
    expect_error({"run", "--nope"}, "--nope: unknown option");
    expect_error({"run", "--nope=3"}, "--nope: unknown option");
    expect_error({"run", "--model"}, "--model: missing value");
    expect_error({"run", "--model", "--json"}, "--model: missing value");
    expect_error({"run", "--iters", "3x"}, "--iters: '3x' is not an integer");
    expect_error({"run", "--iters", "99999999999"}, "--iters:");
    expect_error({"run", "--iters="}, "--iters: '' is not an integer");
    expect_error({"run", "--budget", "-5"}, "--budget: '-5' is not a size");
    expect_error({"run", "--budget=12 parsecs"}, "--budget: '12 parsecs' is not a size");
    // The error names the flag and the grammar: SI and IEC units, plain bytes, inf.
    expect_error({"run", "--budget", "64M"}, "--budget: '64M' is not a size (expected a size: bytes, or a number with "
                                             "kB/MB/GB/TB (powers of 1000) or KiB/MiB/GiB/TiB (powers of 1024), or inf)");
    expect_error({"run", "--lr", "fast"}, "--lr: 'fast' is not a number");
    expect_error({"run", "--lr", "inf"}, "--lr: 'inf' is not a number");
    expect_error({"run", "--json=1"}, "--json: takes no value");
    expect_error({"run", "stray"}, "'stray': unexpected argument");
    expect_error({"run", "--"}, "'--': unexpected argument");
}

TEST(CliParse, ListOverflow) {
    std::vector<std::string> s{"run"};
    for (int i = 0; i <= CLI_LIST_MAX; i++) {
        s.push_back("--trace");
        s.push_back("t" + std::to_string(i));
    }
    std::vector<char *> p;
    for (auto &x : s) p.push_back(&x[0]);
    Opts o;
    int help = 0;
    testing::internal::CaptureStderr();
    int rc = remat_cli_parse((int)p.size(), p.data(), "u", o.v.data(), &help);
    std::string errs = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, 2);
    EXPECT_NE(errs.find("--trace: given too often"), std::string::npos) << errs;
}

TEST(CliFail, ExitCodesAndLine) {
    remat_error e{};
    remat_error_set(&e, REMAT_ERR_INPUT, "m.json: layers[0].type: expected one of linear, if");
    testing::internal::CaptureStderr();
    EXPECT_EQ(remat_cli_fail("run", &e), 2);
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "remat run: m.json: layers[0].type: expected one of linear, if\n");

    remat_error io{};
    remat_error_set(&io, REMAT_ERR_IO, "x.json: cannot open");
    testing::internal::CaptureStderr();
    EXPECT_EQ(remat_cli_fail("verify", &io), 2);
    testing::internal::GetCapturedStderr();

    remat_error chk{};
    remat_error_set(&chk, REMAT_ERR_CHECK, "mismatch");
    testing::internal::CaptureStderr();
    EXPECT_EQ(remat_cli_fail("verify", &chk), 1);
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "remat verify: mismatch\n");

    remat_error none{};
    testing::internal::CaptureStderr();
    EXPECT_EQ(remat_cli_fail("run", &none), 1);
    testing::internal::GetCapturedStderr();

    testing::internal::CaptureStderr();
    EXPECT_EQ(remat_cli_missing("run", "--model", "a model file"), 2);
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "remat run: --model: missing (expected a model file)\n");
}

TEST(CliFmt, Bytes) {
    char buf[64];
    EXPECT_STREQ(remat_cli_fmt_bytes(0, buf, sizeof buf), "0 B");
    EXPECT_STREQ(remat_cli_fmt_bytes(1023, buf, sizeof buf), "1023 B");
    EXPECT_STREQ(remat_cli_fmt_bytes(1024, buf, sizeof buf), "1.0 KiB (1024 B)");
    EXPECT_STREQ(remat_cli_fmt_bytes(129394688, buf, sizeof buf), "123.4 MiB (129394688 B)");
    EXPECT_STREQ(remat_cli_fmt_bytes(3LL << 40, buf, sizeof buf), "3.0 TiB (3298534883328 B)");
    EXPECT_STREQ(remat_cli_fmt_bytes(-2048, buf, sizeof buf), "-2.0 KiB (-2048 B)");
    // enough digits to tell a size from the budget it is compared with (issue 23)
    EXPECT_STREQ(remat_cli_fmt_bytes(8583643136LL, buf, sizeof buf), "7.994 GiB (8583643136 B)");
    EXPECT_STREQ(remat_cli_fmt_bytes(6400000000LL, buf, sizeof buf), "5.960 GiB (6400000000 B)");
    EXPECT_STREQ(remat_cli_fmt_bytes(3LL << 29, buf, sizeof buf), "1.5 GiB (1610612736 B)");
    EXPECT_STREQ(remat_cli_fmt_bytes(50000000, buf, sizeof buf), "47.68 MiB (50000000 B)");
    char tiny[6];
    remat_cli_fmt_bytes(129394688, tiny, sizeof tiny);
    EXPECT_EQ(std::string(tiny), "123.4");  // truncated, still terminated
}

TEST(CliProgress, OnlyWhenAskedOrTerminal) {
    setenv("REMAT_PROGRESS", "0", 1);
    testing::internal::CaptureStderr();
    remat_cli_progress("step %d", 1);
    remat_cli_progress_done();
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");

    setenv("REMAT_PROGRESS", "1", 1);
    testing::internal::CaptureStderr();
    remat_cli_progress("step %d/%d", 10, 20);
    remat_cli_progress("step %d", 2);
    remat_cli_progress_done();
    std::string s = testing::internal::GetCapturedStderr();
    EXPECT_EQ(s, "\rstep 10/20\rstep 2    \rstep 2\n");
    unsetenv("REMAT_PROGRESS");
}

TEST(CliParse, RepeatedOptionIsAnError) {
    Args a{"run", "--model", "a.json", "--model", "b.json"};
    Opts o;
    int help = 0;
    std::string out, errs;
    EXPECT_EQ(parse(a, o, &help, &out, &errs), 2);
    EXPECT_NE(errs.find("--model: given more than once"), std::string::npos) << errs;
    Args b{"run", "--iters", "2", "--iters=3"};
    Opts o2;
    EXPECT_EQ(parse(b, o2, &help, &out, &errs), 2);
    Args c{"run", "--trace", "a.h5", "--trace", "b.h5"}; /* lists collect */
    Opts o3;
    EXPECT_EQ(parse(c, o3, &help, &out, &errs), 0);
    EXPECT_EQ(o3.traces.n, 2);
}

TEST(CliParse, SeedsAreDecimalUint64) {
    uint64_t v = 0;
    EXPECT_TRUE(remat_cli_parse_u64("0", &v));
    EXPECT_EQ(v, 0u);
    EXPECT_TRUE(remat_cli_parse_u64("18446744073709551615", &v));
    EXPECT_EQ(v, UINT64_MAX);
    for (const char *bad : {"", "-1", "+1", " 1", "1 ", "0x10", "18446744073709551616", "1e3"})
        EXPECT_FALSE(remat_cli_parse_u64(bad, &v)) << "'" << bad << "'";
}

// tools/paths.h: an output that is an input, by identity, not by name.
TEST(Paths, SameFileByIdentityNotName) {
    const char *t = getenv("TEST_TMPDIR");
    std::string d = std::string(t ? t : "/tmp") + "/paths." + std::to_string(getpid());
    ASSERT_EQ(system(("rm -rf '" + d + "' && mkdir -p '" + d + "/sub'").c_str()), 0);
    std::ofstream(d + "/m.json") << "{}";
    std::ofstream(d + "/other.json") << "{}";
    ASSERT_EQ(link((d + "/m.json").c_str(), (d + "/hard.json").c_str()), 0);
    ASSERT_EQ(symlink("m.json", (d + "/soft.json").c_str()), 0);
    EXPECT_TRUE(remat_cli_same_file((d + "/m.json").c_str(), (d + "/sub/../m.json").c_str()));
    EXPECT_TRUE(remat_cli_same_file((d + "/m.json").c_str(), (d + "/hard.json").c_str()));
    EXPECT_TRUE(remat_cli_same_file((d + "/m.json").c_str(), (d + "/soft.json").c_str()));
    EXPECT_FALSE(remat_cli_same_file((d + "/m.json").c_str(), (d + "/other.json").c_str()));
    /* two new names: the same folder and name */
    EXPECT_TRUE(remat_cli_same_file((d + "/new.json").c_str(), (d + "/sub/../new.json").c_str()));
    EXPECT_FALSE(remat_cli_same_file((d + "/new.json").c_str(), (d + "/new2.json").c_str()));
    /* devices never collide */
    EXPECT_FALSE(remat_cli_same_file("/dev/null", "/dev/null"));
    std::string m = d + "/m.json", th5 = d + "/t.h5";
    const cli_file in[] = {{"--model", m.c_str()}, {"--plan", nullptr}};
    const cli_file ok[] = {{"--trace", th5.c_str()}, {"--dump", "/dev/null"}};
    EXPECT_EQ(remat_cli_refuse_overlap("run", in, 2, ok, 2), 0);
    std::string hard = d + "/hard.json";
    const cli_file bad[] = {{"--trace", hard.c_str()}};
    testing::internal::CaptureStderr();
    EXPECT_EQ(remat_cli_refuse_overlap("run", in, 2, bad, 1), 2);
    std::string e = testing::internal::GetCapturedStderr();
    EXPECT_NE(e.find("--trace: is the same file as --model"), std::string::npos) << e;
    EXPECT_EQ(std::count(e.begin(), e.end(), '\n'), 1) << e;
}

}  // namespace
