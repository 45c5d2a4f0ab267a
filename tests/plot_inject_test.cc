// plot_inject_test.cc - no string from an input ever runs a command through gnuplot.
//
// Every path that puts text into a gnuplot script gets hostile text: backquotes
// (gnuplot runs `cmd` inside double-quoted strings), system("...") after a closing
// quote, a line break followed by a command, gnuplot's special file names ('<cmd'
// reads from a command, '|cmd' writes to one). The inputs: a PyTorch snapshot's frame
// name and file name (through import-torch), a trace's file name and --label, a
// Pareto point label, a scaling series name, x_name and y_name, --title and --out.
// Each payload, if run, would create a marker file; after remat plot has run the real
// gnuplot (and after the kept script is run again by hand, as a user would), no
// marker may exist. Skips, saying so, when gnuplot is not installed.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tests/cli_runner.h"
#include "tests/pickle_writer.h"

namespace {

using remat_test::Proc;
using remat_test::Py;
using remat_test::remat;

std::string Dir(const std::string &name) {
    std::string d = remat_test::tmp_dir() + "/inject_" + name;
    std::string cmd = "rm -rf '" + d + "' && mkdir -p '" + d + "'";
    EXPECT_EQ(system(cmd.c_str()), 0);
    return d;
}

bool Exists(const std::string &p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0;
}

bool HaveGnuplot() { return system("command -v gnuplot > /dev/null 2>&1") == 0; }

// Hostile strings, each of which creates dir/<tag>N if gnuplot ever runs it
// (gnuplot runs in the figure's folder, dir: the marker names are relative, short
// enough for every field's length limit).
std::vector<std::string> Payloads(const std::string &, const std::string &tag) {
    const std::string &m = tag;
    return {
        "a `touch " + m + "1` b",
        "x\" . system(\"touch " + m + "2\") . \"",
        "y' . system('touch " + m + "3') . '",
        "z\nsystem(\"touch " + m + "4\")\n",
        "w\\\nsystem \"touch " + m + "5\"",
        "<touch " + m + "6",
        "|touch " + m + "7",
        "@foo `touch " + m + "8`",
    };
}

void ExpectNoMarker(const std::string &dir, const std::string &tag, const std::string &what) {
    for (int k = 1; k <= 8; k++)
        EXPECT_FALSE(Exists(dir + "/" + tag + std::to_string(k))) << what << ": payload " << k << " ran a command";
}

void WriteFile(const std::string &path, const std::string &text) {
    std::ofstream f(path, std::ios::binary);
    f << text;
}

std::string Q(const std::string &s) {  // one shell word
    std::string o = "'";
    for (char c : s) {
        if (c == '\'') o += "'\\''";
        else o += c;
    }
    return o + "'";
}

std::string JsonStr(const std::string &s) {
    std::string o = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') { o += '\\'; o += c; }
        else if (c == '\n') o += "\\n";
        else o += c;
    }
    return o + "\"";
}

// Draws with the real gnuplot, then reruns the kept script in its folder as a user
// would (`gnuplot FIG.gp`, where the script's own default output name applies).
void PlotAndRerun(const std::string &args, const std::string &gp_dir, const std::string &gp_name) {
    Proc p = remat("plot " + args);
    EXPECT_EQ(p.rc, 0) << args << "\n" << p.err;
    std::string rerun = "cd " + Q(gp_dir) + " && gnuplot " + Q("./" + gp_name) + " > /dev/null 2>&1";
    EXPECT_EQ(system(rerun.c_str()), 0) << rerun;
}

Py Snapshot(const std::string &frame_name, const std::string &file_name) {
    const int64_t S = (int64_t)1 << 40, MiB = 1 << 20;
    Py frames = Py::list({Py::dict({{"name", Py::str(frame_name)}, {"filename", Py::str(file_name)}, {"line", Py::n(7)}})});
    Py block = Py::dict({{"address", Py::n(S)}, {"size", Py::n(MiB)}, {"requested_size", Py::n(MiB)},
                         {"state", Py::str("active_allocated")}, {"frames", frames}});
    Py seg = Py::dict({{"device", Py::n(0)}, {"address", Py::n(S)}, {"total_size", Py::n(2 * MiB)},
                       {"allocated_size", Py::n(MiB)}, {"stream", Py::n(0)}, {"segment_type", Py::str("large")},
                       {"blocks", Py::list({block, Py::dict({{"address", Py::n(S + MiB)}, {"size", Py::n(MiB)},
                                                             {"requested_size", Py::n(0)}, {"state", Py::str("inactive")}})})}});
    auto entry = [&](const char *action, int64_t addr, int64_t size, int64_t t) {
        return Py::dict({{"action", Py::str(action)}, {"addr", Py::n(addr)}, {"size", Py::n(size)}, {"stream", Py::n(0)},
                         {"time_us", Py::n(t)}, {"frames", frames}});
    };
    Py trace = Py::list({entry("segment_alloc", S, 2 * MiB, 1), entry("alloc", S, MiB, 2), entry("alloc", S + MiB, 4096, 3),
                         entry("free_requested", S + MiB, 4096, 4), entry("free_completed", S + MiB, 4096, 5)});
    return Py::dict({{"segments", Py::list({seg})}, {"device_traces", Py::list({trace})}});
}

TEST(PlotInject, SnapshotFrameAndFileNames) {
    if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed: the scripts cannot be run";
    std::string d = Dir("snap");
    std::vector<std::string> pf = Payloads(d, "frame"), pfile = Payloads(d, "file");
    for (size_t k = 0; k < pf.size(); k++) {
        std::vector<uint8_t> bytes = remat_test::pickle_dumps(Snapshot(pf[k], pfile[k]));
        std::string snap = d + "/s" + std::to_string(k) + ".pickle", h5 = d + "/s" + std::to_string(k) + ".h5";
        WriteFile(snap, std::string(bytes.begin(), bytes.end()));
        Proc imp = remat("import-torch " + Q(snap) + " --out " + Q(h5) + " --quiet");
        ASSERT_EQ(imp.rc, 0) << imp.err;
        PlotAndRerun("--trace " + Q(h5) + " --out " + Q(d + "/f" + std::to_string(k) + ".png"), d, "f" + std::to_string(k) + ".gp");
    }
    ExpectNoMarker(d, "frame", "snapshot frame name");
    ExpectNoMarker(d, "file", "snapshot file name");
}

TEST(PlotInject, ParetoLabelsScalingNamesTitleAndLabel) {
    if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed: the scripts cannot be run";
    std::string d = Dir("json");
    std::vector<std::string> pl = Payloads(d, "pareto"), sn = Payloads(d, "series"), yn = Payloads(d, "yname"),
                             xn = Payloads(d, "xname"), ti = Payloads(d, "title");
    for (size_t k = 0; k < pl.size(); k++) {
        std::string ks = std::to_string(k);
        std::string pj = d + "/p" + ks + ".json";
        WriteFile(pj, "{\"points\": [{\"peak_bytes\": 7000000, \"time_s\": 1.2, \"chosen\": true, \"label\": " + JsonStr(pl[k]) +
                          "}, {\"peak_bytes\": 9000000, \"time_s\": 1.0, \"label\": " + JsonStr(pl[k]) +
                          "}], \"baseline\": {\"peak_bytes\": 9500000, \"time_s\": 1.0}, \"budget_bytes\": 8000000}");
        PlotAndRerun("--pareto " + Q(pj) + " --out " + Q(d + "/p" + ks + ".png"), d, "p" + ks + ".gp");
        std::string sj = d + "/s" + ks + ".json";
        WriteFile(sj, "{\"x_name\": " + JsonStr(xn[k]) + ", \"y_name\": " + JsonStr(yn[k]) +
                          ", \"budget_bytes\": 3000, \"series\": [{\"name\": " + JsonStr(sn[k]) +
                          ", \"x\": [16, 32, 64], \"peak_bytes\": [1800, 2600, 4200], \"fit\": \"linear\"}]}");
        // the series name, x_name and y_name in one figure, --title in another (SVG)
        PlotAndRerun("--scaling " + Q(sj) + " --out " + Q(d + "/s" + ks + ".png"), d, "s" + ks + ".gp");
        Proc t = remat("plot --scaling " + Q(sj) + " --title " + Q(ti[k]) + " --out " + Q(d + "/t" + ks + ".svg"));
        EXPECT_EQ(t.rc, 0) << t.err;
    }
    ExpectNoMarker(d, "pareto", "pareto point label");
    ExpectNoMarker(d, "series", "scaling series name");
    ExpectNoMarker(d, "yname", "scaling y_name");
    ExpectNoMarker(d, "title", "--title");
    ExpectNoMarker(d, "xname", "scaling x_name");
}

TEST(PlotInject, OutputNamesTraceNamesAndLabels) {
    if (!HaveGnuplot()) GTEST_SKIP() << "gnuplot is not installed: the scripts cannot be run";
    std::string d = Dir("out");
    // A remat trace to draw: a tiny model run once.
    std::string base = d + "/base.h5";
    Proc run = remat("run --model data/models/tiny-3block-if.json --iters 1 --trace " + Q(base));
    ASSERT_EQ(run.rc, 0) << run.err;
    // Names relative to gnuplot's folder (d): `touch m` there makes d/m.
    const std::vector<std::string> names = {"a`touch out1`b", "<touch out2", "|touch out3", "c'd`touch out4`",
                                            "e\"f`touch out5`"};
    for (size_t k = 0; k < names.size(); k++) {
        std::string ks = std::to_string(k);
        std::string fig = names[k] + ".png";
        // the trace's own file name becomes its default label and the title's stem
        std::string tr = d + "/" + names[k] + ".h5";
        ASSERT_EQ(system(("cp " + Q(base) + " " + Q(tr)).c_str()), 0);
        Proc p = remat("plot --trace " + Q(tr) + " --label " + Q(Payloads(d, "label")[k]) + " --out " + Q(d + "/" + fig));
        EXPECT_EQ(p.rc, 0) << names[k] << "\n" << p.err;
        std::string gp = names[k] + ".gp";
        std::string rerun = "cd " + Q(d) + " && gnuplot " + Q("./" + gp) + " > /dev/null 2>&1";
        EXPECT_EQ(system(rerun.c_str()), 0) << rerun;
        p = remat("plot --breakdown --trace " + Q(tr) + " --out " + Q(d + "/bd" + names[k] + ".svg"));
        EXPECT_EQ(p.rc, 0) << names[k] << "\n" << p.err;
    }
    for (int k = 1; k <= 5; k++)
        EXPECT_FALSE(Exists(d + "/out" + std::to_string(k)) || Exists(d + "/out" + std::to_string(k) + ".dat"))
            << "file name " << names[k - 1] << " ran a command";
    ExpectNoMarker(d, "label", "--label");
}

}  // namespace
