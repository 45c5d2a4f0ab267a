// input_file_test.cc - the one input reader (core/io/input_file.h): folders named,
// a FIFO without a writer refused within its limit, pipes read, sizes bounded.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

extern "C" {
#include "core/io/input_file.h"
}

namespace {

std::string fresh_dir(const std::string &name) {
    const char *t = getenv("TEST_TMPDIR");
    std::string d = std::string(t ? t : "/tmp") + "/infile." + name + "." + std::to_string(getpid());
    EXPECT_EQ(system(("rm -rf '" + d + "' && mkdir -p '" + d + "'").c_str()), 0);
    return d;
}

TEST(InputFile, DirectoryIsNamedAsADirectory) {
    std::string d = fresh_dir("dir");
    char *text = nullptr;
    size_t n = 0;
    remat_error err = {};
    EXPECT_EQ(remat_input_read_all(d.c_str(), 1 << 20, &text, &n, &err), REMAT_ERR_IO);
    EXPECT_NE(std::string(err.msg).find("is a directory"), std::string::npos) << err.msg;
    EXPECT_EQ(text, nullptr);
    remat_error e2 = {};
    EXPECT_EQ(remat_input_read_all("", 10, &text, &n, &e2), REMAT_ERR_IO);
    EXPECT_NE(std::string(e2.msg).find("empty path"), std::string::npos) << e2.msg;
}

TEST(InputFile, FifoWithoutWriterIsRefusedInTime) {
    std::string f = fresh_dir("fifo") + "/in";
    ASSERT_EQ(mkfifo(f.c_str(), 0600), 0);
    setenv("REMAT_FIFO_WAIT_S", "0.3", 1);
    auto t0 = std::chrono::steady_clock::now();
    char *text = nullptr;
    size_t n = 0;
    remat_error err = {};
    EXPECT_EQ(remat_input_read_all(f.c_str(), 1 << 20, &text, &n, &err), REMAT_ERR_IO);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    unsetenv("REMAT_FIFO_WAIT_S");
    EXPECT_LT(s, 5.0);
    EXPECT_NE(std::string(err.msg).find("no writer"), std::string::npos) << err.msg;
}

// A writer that sends the first bytes and then holds the FIFO open without writing
// more is given up on after REMAT_FIFO_WAIT_S, not waited on for ever.
TEST(InputFile, FifoWhoseWriterStallsIsRefusedInTime) {
    std::string f = fresh_dir("fifo3") + "/in";
    ASSERT_EQ(mkfifo(f.c_str(), 0600), 0);
    setenv("REMAT_FIFO_WAIT_S", "0.3", 1);
    std::thread writer([&] {
        int fd = open(f.c_str(), O_WRONLY);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(write(fd, "{\"T\": ", 6), 6);
        std::this_thread::sleep_for(std::chrono::milliseconds(1500)); /* stalls, FIFO still open */
        close(fd);
    });
    auto t0 = std::chrono::steady_clock::now();
    char *text = nullptr;
    size_t n = 0;
    remat_error err = {};
    EXPECT_EQ(remat_input_read_all(f.c_str(), 1 << 20, &text, &n, &err), REMAT_ERR_IO);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    writer.join();
    unsetenv("REMAT_FIFO_WAIT_S");
    EXPECT_LT(s, 1.2);
    EXPECT_EQ(text, nullptr);
    EXPECT_NE(std::string(err.msg).find("the writer sent 6 bytes, then nothing for 0.3 s"), std::string::npos) << err.msg;
}

// The time limits from the environment: numbers of seconds, anything else named.
TEST(InputFile, TimeLimitVariablesAreCheckedWhenRead) {
    double v = 0;
    remat_error err = {};
    setenv("REMAT_TEST_SECONDS", "2.5", 1);
    EXPECT_EQ(remat_env_seconds("REMAT_TEST_SECONDS", 0, 60, &v, &err), REMAT_OK);
    EXPECT_EQ(v, 2.5);
    for (const char *bad : {"abc", "-1", "1e9", "nan", "5s", "0"}) {
        setenv("REMAT_TEST_SECONDS", bad, 1);
        remat_error e = {};
        EXPECT_EQ(remat_env_seconds("REMAT_TEST_SECONDS", 0, 60, &v, &e), REMAT_ERR_INPUT) << bad;
        EXPECT_EQ(v, 60) << bad;
        EXPECT_NE(std::string(e.msg).find("REMAT_TEST_SECONDS: expected a number of seconds"), std::string::npos) << e.msg;
    }
    setenv("REMAT_TEST_SECONDS", "0", 1);
    EXPECT_EQ(remat_env_seconds("REMAT_TEST_SECONDS", 1, 60, &v, &err), REMAT_OK);  // 0 where 0 is allowed
    EXPECT_EQ(v, 0);
    unsetenv("REMAT_TEST_SECONDS");
    EXPECT_EQ(remat_env_seconds("REMAT_TEST_SECONDS", 0, 60, &v, &err), REMAT_OK);
    EXPECT_EQ(v, 60);
}

TEST(InputFile, FifoWithAWriterIsReadToItsEnd) {
    std::string f = fresh_dir("fifo2") + "/in";
    ASSERT_EQ(mkfifo(f.c_str(), 0600), 0);
    std::string want;
    for (int i = 0; i < 30000; i++) want += std::to_string(i) + ",";
    std::thread writer([&] {
        int fd = open(f.c_str(), O_WRONLY);
        ASSERT_GE(fd, 0);
        std::this_thread::sleep_for(std::chrono::milliseconds(50)); /* a slow writer */
        ASSERT_EQ(write(fd, want.data(), want.size()), (ssize_t)want.size());
        close(fd);
    });
    char *text = nullptr;
    size_t n = 0;
    remat_error err = {};
    EXPECT_EQ(remat_input_read_all(f.c_str(), 1 << 20, &text, &n, &err), REMAT_OK) << err.msg;
    writer.join();
    ASSERT_NE(text, nullptr);
    EXPECT_EQ(std::string(text, n), want);
    remat_xfree(text);
}

TEST(InputFile, SizeIsBoundedEvenForEndlessDevices) {
    char *text = nullptr;
    size_t n = 0;
    remat_error err = {};
    EXPECT_EQ(remat_input_read_all("/dev/zero", 100000, &text, &n, &err), REMAT_ERR_INPUT);
    EXPECT_NE(std::string(err.msg).find("expected at most 100000 bytes"), std::string::npos) << err.msg;
    EXPECT_EQ(text, nullptr);
    remat_error e2 = {};
    EXPECT_EQ(remat_input_read_all("/dev/null", 10, &text, &n, &e2), REMAT_OK) << e2.msg;
    EXPECT_EQ(n, 0u);
    remat_xfree(text);
}

}  // namespace
