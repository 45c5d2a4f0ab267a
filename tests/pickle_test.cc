// pickle_test.cc - the plain-data pickle reader (core/io/pickle.h): hand-assembled
// pickles for every opcode of the subset and every refusal, pickles written by
// Python (fuzz/seeds/pickle), every truncation of them, hostile lengths, and the
// real PyTorch snapshots when ../shared/fixtures is there.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/io/pickle.h"
#include "tests/torch_fixtures.h"

namespace {

typedef std::vector<uint8_t> Bytes;

// A tiny pickle assembler.
struct W {
    Bytes b;
    W &op(uint8_t o) { b.push_back(o); return *this; }
    W &le(uint64_t v, int n) { for (int i = 0; i < n; i++) b.push_back((uint8_t)(v >> (8 * i))); return *this; }
    W &proto(int p = 4) { return op(0x80).op((uint8_t)p); }
    W &str(const std::string &s) { op(0x8c).op((uint8_t)s.size()); b.insert(b.end(), s.begin(), s.end()); return *this; }
    W &i1(uint8_t v) { return op('K').op(v); }
    W &stop() { return op('.'); }
};

std::string slurp(const std::string &p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

struct Doc {
    remat_pk_doc d;
    remat_error err = {};
    remat_status st;
    Bytes keep;
    explicit Doc(const Bytes &b) : keep(b) { st = remat_pk_parse(keep.data(), keep.size(), "t.pickle", &d, &err); }
    ~Doc() { remat_pk_free(&d); }
};

TEST(Pickle, ScalarsAndContainers) {
    W w;
    w.proto().op('}').op(0x94).op('(');
    w.str("i1").i1(200);
    w.str("i2").op('M').le(60000, 2);
    w.str("i4").op('J').le((uint32_t)-5, 4);
    w.str("big").op(0x8a).op(6).le(47294971904ull, 6);
    w.str("neg").op(0x8a).op(1).op(0xff);
    w.str("wide").op(0x8a).op(9).le(1, 8).op(0);           // 9 bytes, sign extension only
    w.str("f").op('G');
    double x = 2.5; uint64_t u; memcpy(&u, &x, 8);
    for (int i = 7; i >= 0; i--) w.op((uint8_t)(u >> (8 * i)));
    w.str("t").op(0x88).str("n").op(0x89).str("none").op('N');
    w.str("bytes").op('C').op(2).op('h').op('i');
    w.str("list").op(']').op(0x94).op('(').i1(1).i1(2).op('e').i1(3).op('a');
    w.str("tup").i1(7).i1(8).op(0x86);
    w.op('u').stop();
    Doc d(w.b);
    ASSERT_EQ(d.st, REMAT_OK) << d.err.msg;
    int64_t v;
    EXPECT_EQ(d.d.protocol, 4);
    EXPECT_EQ(remat_pk_len(&d.d, d.d.root), 13u);
    ASSERT_TRUE(remat_pk_int(&d.d, remat_pk_dict_get(&d.d, d.d.root, "i1"), &v)); EXPECT_EQ(v, 200);
    ASSERT_TRUE(remat_pk_int(&d.d, remat_pk_dict_get(&d.d, d.d.root, "i2"), &v)); EXPECT_EQ(v, 60000);
    ASSERT_TRUE(remat_pk_int(&d.d, remat_pk_dict_get(&d.d, d.d.root, "i4"), &v)); EXPECT_EQ(v, -5);
    ASSERT_TRUE(remat_pk_int(&d.d, remat_pk_dict_get(&d.d, d.d.root, "big"), &v)); EXPECT_EQ(v, 47294971904ll);
    ASSERT_TRUE(remat_pk_int(&d.d, remat_pk_dict_get(&d.d, d.d.root, "neg"), &v)); EXPECT_EQ(v, -1);
    ASSERT_TRUE(remat_pk_int(&d.d, remat_pk_dict_get(&d.d, d.d.root, "wide"), &v)); EXPECT_EQ(v, 1);
    double f;
    ASSERT_TRUE(remat_pk_number(&d.d, remat_pk_dict_get(&d.d, d.d.root, "f"), &f)); EXPECT_EQ(f, 2.5);
    ASSERT_TRUE(remat_pk_int(&d.d, remat_pk_dict_get(&d.d, d.d.root, "t"), &v)); EXPECT_EQ(v, 1);
    EXPECT_EQ(remat_pk_type_of(&d.d, remat_pk_dict_get(&d.d, d.d.root, "n")), REMAT_PK_BOOL);
    EXPECT_EQ(remat_pk_type_of(&d.d, remat_pk_dict_get(&d.d, d.d.root, "none")), REMAT_PK_NONE);
    size_t len = 0;
    const char *s = remat_pk_str(&d.d, remat_pk_dict_get(&d.d, d.d.root, "bytes"), &len);
    ASSERT_NE(s, nullptr); EXPECT_EQ(std::string(s, len), "hi");
    EXPECT_EQ(remat_pk_type_of(&d.d, remat_pk_dict_get(&d.d, d.d.root, "bytes")), REMAT_PK_BYTES);
    remat_pk_ref l = remat_pk_dict_get(&d.d, d.d.root, "list");
    EXPECT_EQ(remat_pk_type_of(&d.d, l), REMAT_PK_LIST);
    int64_t want = 1;
    for (remat_pk_iter it = remat_pk_iter_begin(&d.d, l); remat_pk_iter_next(&d.d, &it); want++) {
        ASSERT_TRUE(remat_pk_int(&d.d, it.value, &v)); EXPECT_EQ(v, want);
        EXPECT_EQ(it.key, REMAT_PK_NIL);
    }
    EXPECT_EQ(want, 4);
    remat_pk_ref t = remat_pk_dict_get(&d.d, d.d.root, "tup");
    EXPECT_EQ(remat_pk_type_of(&d.d, t), REMAT_PK_TUPLE);
    EXPECT_EQ(remat_pk_len(&d.d, t), 2u);
    EXPECT_EQ(remat_pk_dict_get(&d.d, d.d.root, "absent"), REMAT_PK_NIL);
    EXPECT_EQ(remat_pk_dict_get(&d.d, l, "x"), REMAT_PK_NIL);  // not a dict
}

// A memo GET is a reference: items appended later are seen through every holder.
TEST(Pickle, MemoSharesMutableValues) {
    W w;
    w.proto(2).op(']').op('q').op(0).op(']').op('h').op(0).op('a');  // outer = [inner]
    w.op('h').op(0).i1(9).op('a').op('0');                          // inner.append(9); pop
    w.op(0x86);  // (inner, outer)
    w.stop();
    Doc d(w.b);
    ASSERT_EQ(d.st, REMAT_OK) << d.err.msg;
    remat_pk_iter it = remat_pk_iter_begin(&d.d, d.d.root);
    ASSERT_TRUE(remat_pk_iter_next(&d.d, &it));
    remat_pk_ref inner = it.value;
    ASSERT_TRUE(remat_pk_iter_next(&d.d, &it));
    remat_pk_ref outer = it.value;
    EXPECT_EQ(remat_pk_len(&d.d, inner), 1u);
    remat_pk_iter o = remat_pk_iter_begin(&d.d, outer);
    ASSERT_TRUE(remat_pk_iter_next(&d.d, &o));
    EXPECT_EQ(o.value, inner);
}

// MEMOIZE takes len(memo) as its key, also when explicit PUTs used other keys; keys
// dense from 0 and sparse ones mix (the reader keeps them in an array and a hash).
TEST(Pickle, MemoKeysDenseAndSparse) {
    W w;
    w.proto().op('(');
    w.i1(50).op('q').op(5);          // memo {5}
    w.i1(51).op(0x94);               // key len(memo) = 1
    w.i1(52).op('q').op(0);          // key 0
    w.i1(53).op(0x94);               // key 3
    w.i1(54).op('q').op(1);          // overwrites key 1 (now below the dense length)
    w.op('h').op(5).op('h').op(1).op('h').op(0).op('h').op(3).op('l').stop();
    Doc d(w.b);
    ASSERT_EQ(d.st, REMAT_OK) << d.err.msg;
    const int64_t want[] = {50, 51, 52, 53, 54, 50, 54, 52, 53};
    int i = 0;
    for (remat_pk_iter it = remat_pk_iter_begin(&d.d, d.d.root); remat_pk_iter_next(&d.d, &it); i++) {
        int64_t v;
        ASSERT_TRUE(remat_pk_int(&d.d, it.value, &v));
        EXPECT_EQ(v, want[i]) << i;
    }
    EXPECT_EQ(i, 9);
}

TEST(Pickle, RefusesEveryOpcodeThatImportsOrCalls) {
    const struct { uint8_t op; const char *name; } bad[] = {
        {'c', "GLOBAL"}, {0x93, "STACK_GLOBAL"}, {'R', "REDUCE"}, {'b', "BUILD"}, {'i', "INST"},
        {'o', "OBJ"}, {0x81, "NEWOBJ"}, {0x92, "NEWOBJ_EX"}, {0x82, "EXT1"}, {0x83, "EXT2"},
        {0x84, "EXT4"}, {'P', "PERSID"}, {'Q', "BINPERSID"}, {0x97, "NEXT_BUFFER"},
        {0x98, "READONLY_BUFFER"}, {'S', "STRING"}, {'I', "INT"}, {0x8f, "EMPTY_SET"},
    };
    for (const auto &c : bad) {
        W w;
        w.proto().str("os").str("system").op(c.op).stop();
        Doc d(w.b);
        EXPECT_EQ(d.st, REMAT_ERR_INPUT) << c.name;
        char want[128];
        snprintf(want, sizeof want, "t.pickle: pickle: opcode %s (0x%02x) at offset 14: ", c.name, c.op);
        EXPECT_EQ(std::string(d.err.msg).rfind(want, 0), 0u) << d.err.msg;
        EXPECT_EQ(strchr(d.err.msg, '\n'), nullptr);
        EXPECT_EQ(d.d.nodes, nullptr);
    }
    // a real class instance written by Python: refused at its GLOBAL/STACK_GLOBAL
    W w;
    w.proto(2).op('c');
    for (char ch : std::string("collections\nOrderedDict\n")) w.op((uint8_t)ch);
    w.op(')').op('R').stop();
    Doc d(w.b);
    EXPECT_EQ(d.st, REMAT_ERR_INPUT);
    EXPECT_NE(strstr(d.err.msg, "opcode GLOBAL (0x63) at offset 2: refused"), nullptr) << d.err.msg;
}

TEST(Pickle, RefusesMalformedStructure) {
    struct { Bytes b; const char *what; } cases[] = {
        {W().proto().op('.').b, "nothing on the stack"},
        {W().proto().i1(1).i1(2).stop().b, "found several"},
        {W().proto().op('h').op(3).stop().b, "memo key not defined"},
        {W().proto().i1(1).i1(2).op('a').stop().b, "expected a list"},
        {W().proto().op(']').i1(2).op('s').stop().b, "not enough values"},
        {W().proto().op('}').op('(').i1(1).op('u').stop().b, "odd number"},
        {W().proto().op('e').stop().b, "no mark"},
        {W().proto().op(0x8a).op(9).le(0, 8).op(1).stop().b, "wider than 64 bits"},
        {W().proto(1).stop().b, "protocol 2 to 5"},
        {W().proto().op(0xff).b, "not a pickle opcode"},
        {W().proto().i1(1).b, "no STOP"},
        {Bytes(), "empty file"},
    };
    for (auto &c : cases) {
        Doc d(c.b);
        EXPECT_EQ(d.st, REMAT_ERR_INPUT) << c.what;
        EXPECT_NE(strstr(d.err.msg, c.what), nullptr) << d.err.msg;
    }
}

// A hostile length never allocates: it is refused against the bytes left.
TEST(Pickle, HostileLengthsAllocateNothing) {
    const uint8_t ops[] = {'X', 'B', 0x8d, 0x8e, 0x96, 0x8b, 0x95};
    for (uint8_t o : ops) {
        W w;
        w.proto().op(o);
        int n = (o == 'X' || o == 'B' || o == 0x8b) ? 4 : 8;
        w.le(~0ull, n).stop();
        size_t before = remat_xmem_live();
        Doc d(w.b);
        EXPECT_EQ(d.st, REMAT_ERR_INPUT);
        EXPECT_TRUE(strstr(d.err.msg, "past the end") || strstr(d.err.msg, "truncated")) << d.err.msg;
        EXPECT_EQ(remat_xmem_live(), before);
    }
    // a 4 GiB memo key is kept in a hash, not an array of that size
    W w;
    w.proto().op(']').op('r').le(0xfffffff0u, 4).op('j').le(0xfffffff0u, 4).op(0x86).stop();
    size_t peak0 = remat_xmem_peak();
    Doc d(w.b);
    EXPECT_EQ(d.st, REMAT_OK) << d.err.msg;
    EXPECT_LT(remat_xmem_peak() - peak0, (size_t)65536);
}

std::vector<std::string> seed_files() {
    return {"fuzz/seeds/pickle/snapshot-p2.pickle", "fuzz/seeds/pickle/snapshot-p3.pickle",
            "fuzz/seeds/pickle/snapshot-p4.pickle", "fuzz/seeds/pickle/snapshot-p5.pickle",
            "fuzz/seeds/pickle/old-2023.pickle", "fuzz/seeds/pickle/scalars.pickle"};
}

// Pickles written by Python's own pickler (protocols 2..5), and every prefix of them.
TEST(Pickle, ReadsPythonPicklesAndRefusesEveryTruncation) {
    for (const std::string &p : seed_files()) {
        std::string s = slurp(p);
        ASSERT_FALSE(s.empty()) << p;
        Bytes b(s.begin(), s.end());
        Doc d(b);
        ASSERT_EQ(d.st, REMAT_OK) << p << ": " << d.err.msg;
        if (p.find("snapshot-") != std::string::npos) {
            remat_pk_ref tr = remat_pk_dict_get(&d.d, d.d.root, "device_traces");
            ASSERT_EQ(remat_pk_len(&d.d, tr), 1u);
            remat_pk_iter it = remat_pk_iter_begin(&d.d, tr);
            ASSERT_TRUE(remat_pk_iter_next(&d.d, &it));
            EXPECT_EQ(remat_pk_len(&d.d, it.value), 3u);
            int64_t v;
            remat_pk_ref set = remat_pk_dict_get(&d.d, d.d.root, "allocator_settings");
            ASSERT_TRUE(remat_pk_int(&d.d, remat_pk_dict_get(&d.d, set, "max_split_size"), &v));
            EXPECT_EQ(v, -1);
        }
        for (size_t k = 0; k < b.size(); k++) {
            Bytes cut(b.begin(), b.begin() + (long)k);
            Doc t(cut);
            EXPECT_EQ(t.st, REMAT_ERR_INPUT) << p << " cut at " << k;
        }
    }
}

TEST(Pickle, RealSnapshots) {
    std::string dir = remat_test::torch_fixture_dir("fuzz/seeds/pickle/scalars.pickle", 3);
    if (dir.empty()) GTEST_SKIP() << "../shared/fixtures/torch-snapshots is absent: real snapshots not read";
    struct { const char *file; uint32_t segments, entries; } want[] = {
        {"cs336-memory_snapshot.pickle", 216, 5163},
        {"llm-inference-oom_snapshot.pickle", 176, 1},
        {"llm-inference-1.3b_snapshot.pickle", 257, 1},
    };
    for (const auto &w : want) {
        std::string s = slurp(dir + "/" + w.file);
        ASSERT_FALSE(s.empty()) << w.file;
        Bytes b(s.begin(), s.end());
        size_t live0 = remat_xmem_live();
        Doc d(b);
        ASSERT_EQ(d.st, REMAT_OK) << d.err.msg;
        EXPECT_LE(remat_xmem_live() - live0, 8 * b.size()) << w.file;
        EXPECT_EQ(remat_pk_len(&d.d, remat_pk_dict_get(&d.d, d.d.root, "segments")), w.segments);
        remat_pk_iter it = remat_pk_iter_begin(&d.d, remat_pk_dict_get(&d.d, d.d.root, "device_traces"));
        ASSERT_TRUE(remat_pk_iter_next(&d.d, &it));
        EXPECT_EQ(remat_pk_len(&d.d, it.value), w.entries);
    }
}

}  // namespace
