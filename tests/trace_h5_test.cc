// trace_h5_test.cc - traces in HDF5 (core/io/trace.h, core/io/trace_h5.c): round trip of
// every field, and every way a bad file must be refused with one clean line.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/io/h5_util.h"
#include "core/io/trace.h"

// HDF5 1.10 leaks a few hundred bytes in some of its own error paths when an
// object header fails its checksum (H5Oopen on a corrupted file leaks even in a
// three-line program). Leak checking is paused around those deliberate reads only.
#include "tests/hdf5_leaks.h"

namespace {

std::string tmp_dir() {
    const char *d = getenv("TEST_TMPDIR");
    return d ? d : "/tmp";
}

std::string tmp_path(const std::string &name) {
    return tmp_dir() + "/trace_h5_test_" + std::to_string(getpid()) + "_" + name;
}

std::vector<char> slurp(const std::string &p) {
    std::ifstream f(p, std::ios::binary);
    return std::vector<char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void spit(const std::string &p, const std::vector<char> &bytes) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), (std::streamsize)bytes.size());
}

// A trace exercising every field with non-trivial values; events replay cleanly.
void make_trace(remat_trace *t, int64_t n_tensors, uint64_t seed) {
    remat_trace_init(t);
    std::mt19937_64 rng(seed);
    remat_error err = {};
    ASSERT_EQ(remat_trace_set_texts(t, "{\"name\": \"m\u00e9lange\", \"T\": 8}\n", "{\"blocks\": {}}", &err), REMAT_OK);
    snprintf(t->backend, sizeof t->backend, "ref");
    t->seed = 18446744073709551557ull;  // > 2^63: the decimal string must round-trip
    t->T = 8;
    t->N = 3;
    t->threads = 2;
    snprintf(t->simd, sizeof t->simd, "avx2");
    snprintf(t->allocator_config, sizeof t->allocator_config, "max_split_size=64MiB,expandable_segments=0");
    for (int c = 0; c < REMAT_COMP_COUNT; c++) {
        t->compress_s_per_elem[c] = 1e-9 * (c + 1) + 1e-17;
        t->decompress_s_per_elem[c] = c ? 3.25e-10 * c : 0.0;
    }
    std::vector<int64_t> live;
    std::vector<remat_event> alloc_of((size_t)n_tensors);
    int64_t next = 0;
    double time = 0;
    while (next < n_tensors || !live.empty()) {
        remat_event e;
        memset(&e, 0, sizeof e);
        time += 1e-6 * (double)(rng() % 1000);
        e.time_s = time;
        bool alloc = next < n_tensors && (live.empty() || rng() % 3 != 0);
        if (alloc) {
            e.kind = REMAT_EVENT_ALLOC;
            e.tensor = next++;
            e.ndim = (int8_t)(rng() % 5);
            for (int d = 0; d < 4; d++) e.dims[d] = d < e.ndim ? (int64_t)(1 + rng() % 512) : 1;
            e.time_dim = (int8_t)(e.ndim ? (int)(rng() % (e.ndim + 1)) - 1 : -1);
            e.batch_dim = (int8_t)(e.ndim ? (int)(rng() % (e.ndim + 1)) - 1 : -1);
            e.enc = (uint8_t)(rng() % REMAT_ENC_COUNT);
            int64_t elems = e.dims[0] * e.dims[1] * e.dims[2] * e.dims[3];
            // the bytes follow from the shape and encoding (4 per non-zero when sparse)
            e.bytes = remat_encoding_bytes((remat_encoding)e.enc, elems, (int64_t)(rng() % (uint64_t)(elems + 1)));
            e.nnz = (rng() % 2) ? -1 : (int64_t)(rng() % (uint64_t)(elems + 1));
            alloc_of[(size_t)e.tensor] = e;
            live.push_back(e.tensor);
        } else {
            size_t k = rng() % live.size();
            const remat_event &a = alloc_of[(size_t)live[k]];
            e.kind = REMAT_EVENT_FREE;
            e.tensor = live[k];
            live[k] = live.back();
            live.pop_back();
            e.bytes = a.bytes;  // a free carries its tensor's shape, as the executor records it
            e.ndim = a.ndim;
            memcpy(e.dims, a.dims, sizeof e.dims);
            e.time_dim = a.time_dim;
            e.batch_dim = a.batch_dim;
            e.enc = a.enc;
            e.nnz = a.nnz;
        }
        e.layer = (int32_t)(rng() % 20) - 1;
        e.block = (int32_t)(rng() % 6) - 1;
        e.iter = (int32_t)(rng() % 4);
        e.phase = (uint8_t)(rng() % REMAT_PHASE_COUNT);
        e.role = (uint8_t)(rng() % REMAT_ROLE_COUNT);
        ASSERT_GE(remat_trace_add_event(t, &e, &err), 0);
    }
    for (int i = 0; i < 300; i++) {
        remat_op_record r;
        memset(&r, 0, sizeof r);
        r.t_start = 0.001 * i;
        r.t_end = r.t_start + 1e-5 * (double)(rng() % 100);
        r.elems = (int64_t)(rng() % (1ull << 35));
        r.layer = (int32_t)(rng() % 20) - 1;
        r.block = (int32_t)(rng() % 6) - 1;
        r.iter = (int32_t)(rng() % 4);
        r.t_steps = (int32_t)(1 + rng() % 8); /* at most T */
        r.op = (uint8_t)(rng() % REMAT_OP_COUNT);
        r.phase = (uint8_t)(rng() % REMAT_PHASE_COUNT);
        ASSERT_GE(remat_trace_add_op(t, &r, &err), 0);
    }
    for (int i = 0; i < 3; i++) {
        remat_iter_summary s;
        memset(&s, 0, sizeof s);
        s.peak_live_bytes = 1000000007LL * (i + 1);
        s.peak_reserved_bytes = 2000000011LL * (i + 1);
        s.end_of_forward_bytes = 123456789LL + i;
        s.end_of_forward_reserved = 987654321LL + i;
        s.step_time_s = 0.125 * (i + 1) + 1e-12;
        s.loss = -0.5 + 1e-9 * i;
        s.first_event = t->n_events / 3 * i;
        s.n_events = t->n_events / 3;
        ASSERT_GE(remat_trace_add_iter(t, &s, &err), 0);
    }
}

void expect_same(const remat_trace &a, const remat_trace &b) {
    EXPECT_EQ(a.schema_version, b.schema_version);
    EXPECT_STREQ(a.model_text ? a.model_text : "", b.model_text ? b.model_text : "");
    EXPECT_STREQ(a.plan_text ? a.plan_text : "", b.plan_text ? b.plan_text : "");
    EXPECT_STREQ(a.backend, b.backend);
    EXPECT_EQ(a.seed, b.seed);
    EXPECT_EQ(a.T, b.T);
    EXPECT_EQ(a.N, b.N);
    EXPECT_EQ(a.threads, b.threads);
    EXPECT_STREQ(a.simd, b.simd);
    EXPECT_STREQ(a.allocator_config, b.allocator_config);
    EXPECT_EQ(memcmp(a.compress_s_per_elem, b.compress_s_per_elem, sizeof a.compress_s_per_elem), 0);
    EXPECT_EQ(memcmp(a.decompress_s_per_elem, b.decompress_s_per_elem, sizeof a.decompress_s_per_elem), 0);
    ASSERT_EQ(a.n_events, b.n_events);
    ASSERT_EQ(a.n_ops, b.n_ops);
    ASSERT_EQ(a.n_iters, b.n_iters);
    for (int64_t i = 0; i < a.n_events; i++) {
        const remat_event &x = a.events[i], &y = b.events[i];
        ASSERT_EQ(memcmp(&x.time_s, &y.time_s, sizeof x.time_s), 0) << i;  // bit-identical doubles
        ASSERT_EQ(x.tensor, y.tensor) << i;
        ASSERT_EQ(x.bytes, y.bytes) << i;
        for (int d = 0; d < 4; d++) ASSERT_EQ(x.dims[d], y.dims[d]) << i;
        ASSERT_EQ(x.nnz, y.nnz) << i;
        ASSERT_EQ(x.layer, y.layer) << i;
        ASSERT_EQ(x.block, y.block) << i;
        ASSERT_EQ(x.iter, y.iter) << i;
        ASSERT_EQ(x.kind, y.kind) << i;
        ASSERT_EQ(x.phase, y.phase) << i;
        ASSERT_EQ(x.role, y.role) << i;
        ASSERT_EQ(x.enc, y.enc) << i;
        ASSERT_EQ(x.ndim, y.ndim) << i;
        ASSERT_EQ(x.time_dim, y.time_dim) << i;
        ASSERT_EQ(x.batch_dim, y.batch_dim) << i;
    }
    for (int64_t i = 0; i < a.n_ops; i++) {
        const remat_op_record &x = a.ops[i], &y = b.ops[i];
        ASSERT_EQ(memcmp(&x.t_start, &y.t_start, 8), 0) << i;
        ASSERT_EQ(memcmp(&x.t_end, &y.t_end, 8), 0) << i;
        ASSERT_EQ(x.elems, y.elems) << i;
        ASSERT_EQ(x.layer, y.layer) << i;
        ASSERT_EQ(x.block, y.block) << i;
        ASSERT_EQ(x.iter, y.iter) << i;
        ASSERT_EQ(x.t_steps, y.t_steps) << i;
        ASSERT_EQ(x.op, y.op) << i;
        ASSERT_EQ(x.phase, y.phase) << i;
    }
    for (int i = 0; i < a.n_iters; i++) {
        const remat_iter_summary &x = a.iters[i], &y = b.iters[i];
        EXPECT_EQ(x.peak_live_bytes, y.peak_live_bytes);
        EXPECT_EQ(x.peak_reserved_bytes, y.peak_reserved_bytes);
        EXPECT_EQ(x.end_of_forward_bytes, y.end_of_forward_bytes);
        EXPECT_EQ(x.end_of_forward_reserved, y.end_of_forward_reserved);
        EXPECT_EQ(memcmp(&x.step_time_s, &y.step_time_s, 8), 0);
        EXPECT_EQ(memcmp(&x.loss, &y.loss, 8), 0);
        EXPECT_EQ(x.first_event, y.first_event);
        EXPECT_EQ(x.n_events, y.n_events);
    }
}

struct Files {
    std::vector<std::string> paths;
    std::string add(const std::string &name) {
        paths.push_back(tmp_path(name));
        return paths.back();
    }
    ~Files() {
        for (auto &p : paths) {
            remove(p.c_str());
            remove((p + ".tmp").c_str());
        }
    }
};

remat_status read_trace(const std::string &p, remat_trace *t, remat_error *err) {
    return remat_trace_read_h5(p.c_str(), t, err);
}

// Reads p, expecting REMAT_ERR_INPUT with a one-line message naming p and `what`.
void expect_refused(const std::string &p, const std::string &what) {
    remat_trace t;
    remat_error err = {};
    remat_status st = read_trace(p, &t, &err);
    EXPECT_EQ(st, REMAT_ERR_INPUT) << err.msg;
    EXPECT_EQ(err.status, REMAT_ERR_INPUT);
    std::string msg = err.msg;
    EXPECT_EQ(msg.rfind(p + ": ", 0), 0u) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(t.n_events, 0);  // nothing half-read is handed out
    EXPECT_EQ(t.events, nullptr);
    remat_trace_free(&t);
}

void write_ok(const remat_trace &t, const std::string &p) {
    remat_error err = {};
    ASSERT_EQ(remat_trace_write_h5(&t, p.c_str(), &err), REMAT_OK) << err.msg;
    EXPECT_NE(access(p.c_str(), F_OK), -1);
    EXPECT_EQ(access((p + ".tmp").c_str(), F_OK), -1) << "temporary left behind";
}

// Opens p read-write with raw HDF5 for surgery.
hid_t open_rw(const std::string &p) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    hid_t f = H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    EXPECT_GE(f, 0);
    return f;
}

TEST(TraceMem, AddGrowsAndFreeResets) {
    remat_trace t;
    remat_trace_init(&t);
    EXPECT_EQ(t.schema_version, REMAT_TRACE_SCHEMA_VERSION);
    remat_error err = {};
    remat_event e;
    memset(&e, 0, sizeof e);
    for (int64_t i = 0; i < 100000; i++) {
        e.tensor = i;
        ASSERT_EQ(remat_trace_add_event(&t, &e, &err), i);
    }
    EXPECT_EQ(t.n_events, 100000);
    EXPECT_GE(t.cap_events, 100000);
    EXPECT_EQ(t.events[77777].tensor, 77777);
    remat_iter_summary s = {};
    EXPECT_EQ(remat_trace_add_iter(&t, &s, &err), 0);
    EXPECT_EQ(remat_trace_add_iter(&t, &s, &err), 1);
    ASSERT_EQ(remat_trace_set_texts(&t, "model", nullptr, &err), REMAT_OK);
    EXPECT_STREQ(t.model_text, "model");
    EXPECT_STREQ(t.plan_text, "");
    ASSERT_EQ(remat_trace_set_texts(&t, "again", "plan", &err), REMAT_OK);
    EXPECT_STREQ(t.model_text, "again");
    remat_trace_free(&t);
    EXPECT_EQ(t.n_events, 0);
    EXPECT_EQ(t.events, nullptr);
    EXPECT_EQ(t.model_text, nullptr);
    EXPECT_STREQ(remat_op_kind_name(REMAT_OP_DECOMPRESS), "decompress");
    EXPECT_STREQ(remat_op_kind_name(REMAT_OP_COPY), "copy");
}

TEST(TraceH5, RoundTripEveryField) {
    Files files;
    std::string p = files.add("roundtrip.h5");
    remat_trace t, back;
    make_trace(&t, 5000, 7);
    write_ok(t, p);
    remat_error err = {};
    ASSERT_EQ(read_trace(p, &back, &err), REMAT_OK) << err.msg;
    expect_same(t, back);
    // writing what was read gives the same content again
    std::string p2 = files.add("roundtrip2.h5");
    write_ok(back, p2);
    remat_trace again;
    ASSERT_EQ(read_trace(p2, &again, &err), REMAT_OK) << err.msg;
    expect_same(t, again);
    remat_trace_free(&t);
    remat_trace_free(&back);
    remat_trace_free(&again);
}

// The SIMD path is an optional root attribute: written only when recorded, and a file
// without it (written before it existed, or on another backend) reads as "".
TEST(TraceH5, SimdAttributeIsOptional) {
    Files files;
    remat_error err = {};
    remat_trace t, back;
    make_trace(&t, 30, 5);
    std::string with = files.add("simd_with.h5");
    write_ok(t, with);
    hid_t f = open_rw(with);
    EXPECT_GT(H5Aexists_by_name(f, "/", "simd", H5P_DEFAULT), 0);
    H5Fclose(f);
    ASSERT_EQ(read_trace(with, &back, &err), REMAT_OK) << err.msg;
    EXPECT_STREQ(back.simd, "avx2");
    remat_trace_free(&back);
    // an old file: the attribute removed (its checksum does not cover it)
    f = open_rw(with);
    ASSERT_GE(H5Adelete_by_name(f, "/", "simd", H5P_DEFAULT), 0);
    H5Fclose(f);
    ASSERT_EQ(read_trace(with, &back, &err), REMAT_OK) << err.msg;
    EXPECT_STREQ(back.simd, "");
    remat_trace_free(&back);
    // not recorded: no attribute written
    t.simd[0] = '\0';
    std::string without = files.add("simd_without.h5");
    write_ok(t, without);
    f = open_rw(without);
    EXPECT_EQ(H5Aexists_by_name(f, "/", "simd", H5P_DEFAULT), 0);
    H5Fclose(f);
    ASSERT_EQ(read_trace(without, &back, &err), REMAT_OK) << err.msg;
    EXPECT_STREQ(back.simd, "");
    remat_trace_free(&back);
    remat_trace_free(&t);
}

// The probe (/probe_ops and its attribute N) is optional: absent in a trace without
// one, read back record for record when written, covered by the checksum, and a bad N
// is refused naming it.
TEST(TraceH5, ProbeIsOptionalAndChecked) {
    Files files;
    remat_error err = {};
    remat_trace t, back;
    make_trace(&t, 30, 9);
    std::string without = files.add("probe_without.h5");
    write_ok(t, without);
    hid_t f = open_rw(without);
    EXPECT_EQ(H5Lexists(f, "/probe_ops", H5P_DEFAULT), 0);
    H5Fclose(f);
    ASSERT_EQ(read_trace(without, &back, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(back.probe_N, 0);
    EXPECT_EQ(back.n_probe_ops, 0);
    EXPECT_EQ(remat_trace_has_probe(&back), 0);
    remat_trace_free(&back);
    for (int i = 0; i < 5; i++) {
        remat_op_record r = t.ops[i % t.n_ops];
        r.elems *= 2;
        r.t_end = r.t_start + 0.25 * (i + 1);
        ASSERT_EQ(remat_trace_add_probe_op(&t, &r, &err), i);
    }
    t.probe_N = 2 * t.N;
    std::string with = files.add("probe_with.h5");
    write_ok(t, with);
    ASSERT_EQ(read_trace(with, &back, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(back.probe_N, 2 * t.N);
    ASSERT_EQ(back.n_probe_ops, 5);
    EXPECT_EQ(remat_trace_has_probe(&back), 1);
    for (int i = 0; i < 5; i++) {
        EXPECT_EQ(back.probe_ops[i].elems, t.probe_ops[i].elems);
        EXPECT_EQ(memcmp(&back.probe_ops[i].t_end, &t.probe_ops[i].t_end, 8), 0);
    }
    remat_trace_free(&back);
    // N out of range, with and without the checksum
    f = open_rw(with);
    ASSERT_GE(H5Adelete_by_name(f, "/probe_ops", "N", H5P_DEFAULT), 0);
    H5Fclose(f);
    {
        SCOPED_TRACE("N deleted");
        expect_refused(with, "/probe_ops");
    }
    write_ok(t, with);
    f = open_rw(with);
    ASSERT_GE(H5Adelete_by_name(f, "/", "content_crc32", H5P_DEFAULT), 0);
    ASSERT_EQ(remat_h5_attr_write_i64(f, with.c_str(), "/probe_ops", "N", 0, &err), REMAT_OK) << err.msg;
    H5Fclose(f);
    {
        SCOPED_TRACE("N zero");
        expect_refused(with, "/probe_ops: attribute N: expected the probe's batch");
    }
    // a changed probe record is caught by the checksum
    write_ok(t, with);
    f = open_rw(with);
    hid_t d = H5Dopen2(f, "/probe_ops/elems", H5P_DEFAULT);
    std::vector<int64_t> el(5);
    ASSERT_GE(H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, el.data()), 0);
    el[2] += 1;
    ASSERT_GE(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, el.data()), 0);
    H5Dclose(d);
    H5Fclose(f);
    {
        SCOPED_TRACE("elems changed");
        expect_refused(with, "content_crc32");
    }
    remat_trace_free(&t);
}

// The probe's steps (/probe_steps: each warm step's time and events) are optional, read
// back row for row, covered by the checksum, and refused when not one row per probe
// step or with a bad value.
TEST(TraceH5, ProbeStepsRoundTripAndChecked) {
    Files files;
    remat_error err = {};
    remat_trace t, back;
    make_trace(&t, 30, 9);
    for (int i = 0; i < 6; i++) {
        remat_op_record r = t.ops[i % t.n_ops];
        r.iter = i / 3;  // two probe steps of three ops
        r.t_end = r.t_start + 0.125 * (i + 1);
        ASSERT_EQ(remat_trace_add_probe_op(&t, &r, &err), i);
    }
    t.probe_N = 2 * t.N;
    std::string without = files.add("steps_without.h5");
    write_ok(t, without);
    ASSERT_EQ(read_trace(without, &back, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(back.n_probe_steps, 0);
    remat_trace_free(&back);
    const remat_probe_step steps[2] = {{0.0125, 40}, {0.0375, 58}};
    for (int i = 0; i < 2; i++) ASSERT_EQ(remat_trace_add_probe_step(&t, &steps[i], &err), i);
    std::string with = files.add("steps_with.h5");
    write_ok(t, with);
    ASSERT_EQ(read_trace(with, &back, &err), REMAT_OK) << err.msg;
    ASSERT_EQ(back.n_probe_steps, 2);
    for (int i = 0; i < 2; i++) {
        EXPECT_EQ(memcmp(&back.probe_steps[i].step_time_s, &steps[i].step_time_s, 8), 0);
        EXPECT_EQ(back.probe_steps[i].n_events, steps[i].n_events);
    }
    remat_trace_free(&back);
    // a changed row is caught by the checksum; without it, a bad value by name
    hid_t f = open_rw(with);
    hid_t d = H5Dopen2(f, "/probe_steps/n_events", H5P_DEFAULT);
    int64_t ev[2] = {40, -1};
    ASSERT_GE(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, ev), 0);
    H5Dclose(d);
    H5Fclose(f);
    {
        SCOPED_TRACE("n_events changed");
        expect_refused(with, "content_crc32");
    }
    f = open_rw(with);
    ASSERT_GE(H5Adelete_by_name(f, "/", "content_crc32", H5P_DEFAULT), 0);
    H5Fclose(f);
    {
        SCOPED_TRACE("n_events negative");
        expect_refused(with, "/probe_steps/n_events: probe step 1 has -1 events, expected >= 0");
    }
    // one row more than the probe has steps
    const remat_probe_step extra = {0.01, 40};
    ASSERT_EQ(remat_trace_add_probe_step(&t, &extra, &err), 2);
    write_ok(t, with);
    {
        SCOPED_TRACE("a row too many");
        expect_refused(with, "/probe_steps: 3 rows, expected one per step of /probe_ops (2)");
    }
    remat_trace_free(&t);
}

TEST(TraceH5, RoundTripEmptyTrace) {
    Files files;
    std::string p = files.add("empty.h5");
    remat_trace t, back;
    remat_trace_init(&t);  // no texts, no events: written as empty strings and empty datasets
    t.T = 1;               // T and N are range-checked on reading
    t.N = 1;
    snprintf(t.backend, sizeof t.backend, "ref");  // and the backend is one remat has
    write_ok(t, p);
    remat_error err = {};
    ASSERT_EQ(read_trace(p, &back, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(back.n_events, 0);
    EXPECT_EQ(back.n_ops, 0);
    EXPECT_EQ(back.n_iters, 0);
    EXPECT_STREQ(back.model_text, "");
    EXPECT_STREQ(back.plan_text, "");
    EXPECT_EQ(back.schema_version, 1);
    remat_trace_free(&back);
}

TEST(TraceH5, RoundTripLargeTexts) {
    // texts beyond HDF5's 64 KiB compact attribute limit go to dense storage
    Files files;
    std::string p = files.add("texts.h5");
    remat_trace t, back;
    make_trace(&t, 10, 8);
    std::string model(300000, 'm'), plan(70000, 'p');
    for (size_t i = 0; i < model.size(); i += 61) model[i] = (char)('a' + i % 26);
    remat_error err = {};
    ASSERT_EQ(remat_trace_set_texts(&t, model.c_str(), plan.c_str(), &err), REMAT_OK);
    write_ok(t, p);
    ASSERT_EQ(read_trace(p, &back, &err), REMAT_OK) << err.msg;
    expect_same(t, back);
    remat_trace_free(&t);
    remat_trace_free(&back);
}

TEST(TraceH5, LayoutIsReadableWithoutRemat) {
    // what an h5py user sees: columnar datasets, name tables, units, root attributes
    Files files;
    std::string p = files.add("layout.h5");
    remat_trace t;
    make_trace(&t, 50, 3);
    write_ok(t, p);
    hid_t f;
    remat_error err = {};
    ASSERT_EQ(remat_h5_open(p.c_str(), &f, &err), REMAT_OK);
    int64_t dims[2];
    void *data = nullptr;
    ASSERT_EQ(remat_h5_read(f, p.c_str(), "/events/dims", REMAT_H5_I64, 2, dims, &data, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(dims[0], t.n_events);
    EXPECT_EQ(dims[1], 4);
    EXPECT_EQ(((int64_t *)data)[4 * 5 + 0], t.events[5].dims[0]);
    remat_xfree(data);
    ASSERT_EQ(remat_h5_read(f, p.c_str(), "/events/phase", REMAT_H5_U8, 1, dims, &data, &err), REMAT_OK);
    EXPECT_EQ(((uint8_t *)data)[9], t.events[9].phase);
    remat_xfree(data);
    char *s = nullptr;
    ASSERT_EQ(remat_h5_attr_read_str(f, p.c_str(), "/events", "phase_names", &s, &err), REMAT_OK);
    EXPECT_STREQ(s, "init,forward,recompute,loss,backward,optimizer");
    remat_xfree(s);
    ASSERT_EQ(remat_h5_attr_read_str(f, p.c_str(), "/events", "kind_names", &s, &err), REMAT_OK);
    EXPECT_STREQ(s, "alloc,free");
    remat_xfree(s);
    ASSERT_EQ(remat_h5_attr_read_str(f, p.c_str(), "/events", "role_names", &s, &err), REMAT_OK);
    EXPECT_STREQ(s, "parameter,gradient,optimizer,batch,saved,transient,compressed,neuron_state,act_grad,workspace");
    remat_xfree(s);
    ASSERT_EQ(remat_h5_attr_read_str(f, p.c_str(), "/ops", "op_names", &s, &err), REMAT_OK);
    EXPECT_EQ(std::string(s).rfind("linear_fwd,linear_bwd,", 0), 0u) << s;
    remat_xfree(s);
    ASSERT_EQ(remat_h5_attr_read_str(f, p.c_str(), "/events/bytes", "units", &s, &err), REMAT_OK);
    EXPECT_STREQ(s, "B");
    remat_xfree(s);
    ASSERT_EQ(remat_h5_attr_read_str(f, p.c_str(), "/", "seed", &s, &err), REMAT_OK);
    EXPECT_STREQ(s, "18446744073709551557");
    remat_xfree(s);
    int64_t v = 0;
    ASSERT_EQ(remat_h5_attr_read_i64(f, p.c_str(), "/", "schema_version", &v, &err), REMAT_OK);
    EXPECT_EQ(v, 1);
    ASSERT_EQ(remat_h5_attr_read_i64(f, p.c_str(), "/", "T", &v, &err), REMAT_OK);
    EXPECT_EQ(v, 8);
    char **names = nullptr;
    int n = 0;
    ASSERT_EQ(remat_h5_list_datasets(f, p.c_str(), &names, &n, &err), REMAT_OK);
    EXPECT_EQ(n, 2 + 15 + 9 + 8);
    EXPECT_STREQ(names[0], "/calibration/compress_s_per_elem");
    remat_h5_free_names(names, n);
    remat_h5_close(f);
    remat_trace_free(&t);
}

TEST(TraceH5, NewerSchemaRefused) {
    Files files;
    std::string p = files.add("newer.h5");
    remat_trace t;
    make_trace(&t, 20, 1);
    write_ok(t, p);
    hid_t f = open_rw(p);
    H5Adelete(f, "schema_version");
    // a newer writer might also change everything else: drop a dataset too
    H5Ldelete(f, "/events/nnz", H5P_DEFAULT);
    H5Fclose(f);
    remat_error err = {};
    {
        hid_t g = open_rw(p);
        remat_h5_close(g);
    }
    f = open_rw(p);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, "schema_version", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    int32_t two = 2;
    H5Awrite(a, H5T_NATIVE_INT32, &two);
    H5Aclose(a);
    H5Sclose(sp);
    H5Fclose(f);
    remat_trace back;
    ASSERT_EQ(read_trace(p, &back, &err), REMAT_ERR_INPUT);
    EXPECT_EQ(std::string(err.msg), p + ": schema_version: file is version 2, this remat reads up to 1");
    remat_trace_free(&t);
}

TEST(TraceH5, MissingSchemaVersionRefused) {
    Files files;
    std::string p = files.add("noversion.h5");
    remat_trace t;
    make_trace(&t, 20, 1);
    write_ok(t, p);
    hid_t f = open_rw(p);
    H5Adelete(f, "schema_version");
    H5Fclose(f);
    expect_refused(p, "schema_version");
    remat_trace_free(&t);
}

TEST(TraceH5, TruncatedFilesRefused) {
    Files files;
    std::string p = files.add("full.h5"), q = files.add("cut.h5");
    remat_trace t;
    make_trace(&t, 2000, 11);
    write_ok(t, p);
    std::vector<char> bytes = slurp(p);
    ASSERT_GT(bytes.size(), 10000u);
    std::vector<size_t> cuts = {0, 1, 7, 8, 64, 511, 512, 1000, 2048, 4096};
    for (size_t k = 1; k < 40; k++) cuts.push_back(bytes.size() * k / 40);
    cuts.push_back(bytes.size() - 1);
    cuts.push_back(bytes.size() - 8);
    for (size_t cut : cuts) {
        SCOPED_TRACE("cut at " + std::to_string(cut));
        spit(q, std::vector<char>(bytes.begin(), bytes.begin() + (long)cut));
        remat_trace back;
        remat_error err = {};
        remat_status st = read_trace(q, &back, &err);
        EXPECT_EQ(st, REMAT_ERR_INPUT) << err.msg;
        EXPECT_EQ(std::string(err.msg).rfind(q + ": ", 0), 0u) << err.msg;
        EXPECT_EQ(std::string(err.msg).find('\n'), std::string::npos);
        EXPECT_EQ(back.events, nullptr);
        remat_trace_free(&back);
    }
    remat_trace_free(&t);
}

TEST(TraceH5, CorruptedBytesRefusedOrHarmless) {
    // flip single bytes all over the file: each read must either fail cleanly with
    // REMAT_ERR_INPUT or (a byte HDF5 never looks at) return the very same trace
    Files files;
    std::string p = files.add("good.h5"), q = files.add("bad.h5");
    remat_trace t;
    make_trace(&t, 300, 5);
    write_ok(t, p);
    std::vector<char> bytes = slurp(p);
    int refused = 0, harmless = 0;
    // no HDF5 free lists: what its error paths leak is then allocated inside the
    // paused window rather than recycled from before it
    H5set_free_list_limits(0, 0, 0, 0, 0, 0);
    H5garbage_collect();
    size_t step = bytes.size() / 700 + 1;
    for (size_t pos = 0; pos < bytes.size(); pos += step) {
        std::vector<char> bad = bytes;
        bad[pos] = (char)(bad[pos] ^ 0x5a);
        spit(q, bad);
        remat_trace back;
        remat_error err = {};
        HDF5_LEAKS_BEGIN();
        remat_status st = read_trace(q, &back, &err);
        HDF5_LEAKS_END();
        if (st == REMAT_OK) {
            SCOPED_TRACE("byte " + std::to_string(pos) + " flipped, read succeeded");
            expect_same(t, back);
            harmless++;
        } else {
            EXPECT_EQ(st, REMAT_ERR_INPUT) << "byte " << pos << ": " << err.msg;
            EXPECT_EQ(std::string(err.msg).rfind(q + ": ", 0), 0u) << err.msg;
            refused++;
        }
        remat_trace_free(&back);
    }
    EXPECT_GT(refused, 0);
    printf("corrupted bytes: %d refused, %d harmless\n", refused, harmless);
    remat_trace_free(&t);
}

TEST(TraceH5, ContentChecksumCatchesDataChanges) {
    // a value changed through HDF5 itself (valid file, wrong content)
    Files files;
    std::string p = files.add("tampered.h5");
    remat_trace t;
    make_trace(&t, 50, 9);
    write_ok(t, p);
    hid_t f = open_rw(p);
    hid_t d = H5Dopen2(f, "/events/time_s", H5P_DEFAULT);
    std::vector<double> v(t.n_events);
    H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    v[t.n_events - 1] += 1.0;  // the last event: times stay in order
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    H5Dclose(d);
    H5Fclose(f);
    expect_refused(p, "content_crc32");
    // without the checksum attribute (an edited file) the same content is accepted
    f = open_rw(p);
    H5Adelete(f, "content_crc32");
    H5Fclose(f);
    remat_trace back;
    remat_error err = {};
    ASSERT_EQ(read_trace(p, &back, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(back.events[t.n_events - 1].time_s, t.events[t.n_events - 1].time_s + 1.0);
    remat_trace_free(&back);
    remat_trace_free(&t);
}

TEST(TraceH5, InconsistentEventsRefused) {
    Files files;
    std::string p = files.add("events.h5");
    remat_error err = {};
    struct Case {
        const char *what;
        std::vector<std::pair<int, int64_t>> ev;  // (kind, tensor), bytes = 100 unless noted
        int64_t free_bytes;
    };
    const Case cases[] = {
        {"/events/tensor: event 0 frees tensor 0, which is not live", {{REMAT_EVENT_FREE, 0}}, 100},
        {"/events/tensor: event 2 frees tensor 0, which is not live",
         {{REMAT_EVENT_ALLOC, 0}, {REMAT_EVENT_FREE, 0}, {REMAT_EVENT_FREE, 0}},
         100},
        {"/events/tensor: event 1 allocates tensor 0, which is already live",
         {{REMAT_EVENT_ALLOC, 0}, {REMAT_EVENT_ALLOC, 0}},
         100},
        {"/events/bytes: event 1 frees tensor 0 with 96 bytes, allocated with 100",
         {{REMAT_EVENT_ALLOC, 0}, {REMAT_EVENT_FREE, 0}},
         96},
        {"/events/tensor: event 0 names tensor 5", {{REMAT_EVENT_ALLOC, 5}}, 100},
    };
    for (const Case &c : cases) {
        remat_trace t;
        remat_trace_init(&t);
        t.T = 1;
        t.N = 1;
        for (auto &kv : c.ev) {
            remat_event e;
            memset(&e, 0, sizeof e);
            e.kind = (uint8_t)kv.first;
            e.tensor = kv.second;
            e.bytes = kv.first == REMAT_EVENT_FREE ? c.free_bytes : 100;
            e.ndim = 1;
            e.dims[0] = e.bytes / 4;  // fp32: the bytes follow from the shape
            e.dims[1] = e.dims[2] = e.dims[3] = 1;
            e.time_dim = e.batch_dim = -1;
            e.nnz = -1;
            ASSERT_GE(remat_trace_add_event(&t, &e, &err), 0);
        }
        snprintf(t.backend, sizeof t.backend, "ref");
        write_ok(t, p);
        expect_refused(p, c.what);
        remat_trace_free(&t);
    }
}

TEST(TraceH5, EnumOutOfRangeRefused) {
    Files files;
    std::string p = files.add("enum.h5");
    struct Case {
        const char *what;
        void (*poke)(remat_trace *);
    };
    const Case cases[] = {
        {"/events/phase: event 4 has phase 9, expected 0..5", [](remat_trace *t) { t->events[4].phase = 9; }},
        {"/events/role: event 4 has role 10", [](remat_trace *t) { t->events[4].role = 10; }},
        {"/events/enc: event 4 has encoding 6", [](remat_trace *t) { t->events[4].enc = REMAT_ENC_COUNT; }},
        {"/events/kind: event 4 has kind 2", [](remat_trace *t) { t->events[4].kind = 2; }},
        {"/events/ndim: event 4 has ndim 5", [](remat_trace *t) { t->events[4].ndim = 5; }},
        {"/events/time_dim: event 4", [](remat_trace *t) {
             t->events[4].ndim = 2;
             t->events[4].time_dim = 2;
         }},
        {"/events/bytes: event 0", [](remat_trace *t) { t->events[0].bytes = -5; }},
        {"/ops/op: op 7 has kind", [](remat_trace *t) { t->ops[7].op = REMAT_OP_COUNT; }},
        {"/ops/phase: op 7 has phase 6", [](remat_trace *t) { t->ops[7].phase = REMAT_PHASE_COUNT; }},
        {"/iters/first_event: iteration 1", [](remat_trace *t) { t->iters[1].first_event = t->n_events + 1; }},
        {"/iters/n_events: iteration 2", [](remat_trace *t) { t->iters[2].n_events = t->n_events; }},
    };
    for (const Case &c : cases) {
        remat_trace t;
        make_trace(&t, 30, 2);
        c.poke(&t);
        write_ok(t, p);
        expect_refused(p, c.what);
        remat_trace_free(&t);
    }
}

TEST(TraceH5, NotHdf5AndMissingFile) {
    Files files;
    std::string p = files.add("text.h5");
    spit(p, std::vector<char>{'h', 'e', 'l', 'l', 'o', ',', ' ', 'n', 'o', 't', ' ', 'h', 'd', 'f', '5', '\n'});
    expect_refused(p, "not an HDF5 file");
    spit(p, std::vector<char>(5000, 'x'));
    expect_refused(p, "not an HDF5 file");
    spit(p, std::vector<char>{});
    expect_refused(p, "not an HDF5 file");
    remat_trace t;
    remat_error err = {};
    std::string missing = tmp_path("does-not-exist.h5");
    EXPECT_EQ(read_trace(missing, &t, &err), REMAT_ERR_IO);
    EXPECT_EQ(std::string(err.msg).rfind(missing + ": file: cannot open", 0), 0u) << err.msg;
    // an HDF5 file that is not a trace
    hid_t f;
    ASSERT_EQ(remat_h5_create(p.c_str(), &f, &err), REMAT_OK);
    int64_t n = 3;
    float x[3] = {1, 2, 3};
    ASSERT_EQ(remat_h5_write(f, p.c_str(), "/grads/input", REMAT_H5_F32, 1, &n, x, &err), REMAT_OK);
    remat_h5_close(f);
    expect_refused(p, "schema_version: missing root attribute (not a remat trace)");
}

TEST(TraceH5, MissingMistypedAndUnequalDatasetsRefused) {
    Files files;
    std::string p = files.add("surgery.h5");
    remat_trace t;
    make_trace(&t, 40, 4);
    int64_t n = t.n_events;
    // missing
    write_ok(t, p);
    hid_t f = open_rw(p);
    H5Ldelete(f, "/events/nnz", H5P_DEFAULT);
    H5Fclose(f);
    expect_refused(p, "/events/nnz: missing dataset");
    // missing group
    write_ok(t, p);
    f = open_rw(p);
    H5Ldelete(f, "/iters", H5P_DEFAULT);
    H5Fclose(f);
    expect_refused(p, "/iters/peak_live_bytes: missing dataset");
    // mistyped: bytes as float64
    write_ok(t, p);
    f = open_rw(p);
    H5Ldelete(f, "/events/bytes", H5P_DEFAULT);
    hsize_t hn = (hsize_t)n;
    hid_t sp = H5Screate_simple(1, &hn, nullptr);
    std::vector<double> dv(n, 1.0);
    hid_t d = H5Dcreate2(f, "/events/bytes", H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, dv.data());
    H5Dclose(d);
    H5Sclose(sp);
    H5Fclose(f);
    expect_refused(p, "/events/bytes: expected a 1-D int64 dataset, found a 1-D float64 one");
    // unequal length: one row short
    write_ok(t, p);
    f = open_rw(p);
    H5Ldelete(f, "/events/layer", H5P_DEFAULT);
    hn = (hsize_t)(n - 1);
    sp = H5Screate_simple(1, &hn, nullptr);
    std::vector<int32_t> iv(n - 1, 0);
    d = H5Dcreate2(f, "/events/layer", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, iv.data());
    H5Dclose(d);
    H5Sclose(sp);
    H5Fclose(f);
    expect_refused(p, "/events/layer: " + std::to_string(n - 1) + " rows, but /events/time_s has " +
                          std::to_string(n) + " (datasets of unequal length)");
    // dims of the wrong width
    write_ok(t, p);
    f = open_rw(p);
    H5Ldelete(f, "/events/dims", H5P_DEFAULT);
    hsize_t h2[2] = {(hsize_t)n, 3};
    sp = H5Screate_simple(2, h2, nullptr);
    std::vector<int64_t> lv(n * 3, 1);
    d = H5Dcreate2(f, "/events/dims", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, lv.data());
    H5Dclose(d);
    H5Sclose(sp);
    H5Fclose(f);
    expect_refused(p, "/events/dims: expected shape [n,4]");
    // a group where a dataset should be
    write_ok(t, p);
    f = open_rw(p);
    H5Ldelete(f, "/ops/elems", H5P_DEFAULT);
    hid_t g = H5Gcreate2(f, "/ops/elems", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(g);
    H5Fclose(f);
    expect_refused(p, "/ops/elems: expected a dataset");
    // a bad seed string
    write_ok(t, p);
    f = open_rw(p);
    H5Adelete(f, "content_crc32");
    H5Fclose(f);
    {
        hid_t f2 = open_rw(p);
        remat_error err = {};
        ASSERT_EQ(remat_h5_attr_write_str(f2, p.c_str(), "/", "seed", "12abc", &err), REMAT_OK);
        H5Fclose(f2);
    }
    expect_refused(p, "seed: expected a decimal integer");
    // a seed above 2^64 - 1 (strtoull saturates: it must not read as 2^64 - 1)
    {
        hid_t f2 = open_rw(p);
        remat_error err = {};
        ASSERT_EQ(remat_h5_attr_write_str(f2, p.c_str(), "/", "seed", "18446744073709551616", &err), REMAT_OK);
        H5Fclose(f2);
    }
    expect_refused(p, "seed: expected a decimal integer in 0..18446744073709551615, found '18446744073709551616'");
    remat_trace_free(&t);
}

// Sizes a crafted file carries: every product of its dims and counts is checked
// (no signed overflow, UBSan clean), and each must agree with the event's bytes.
TEST(TraceH5, CraftedSizesAndContradictionsRefused) {
    Files files;
    std::string p = files.add("crafted.h5");
    struct Case {
        const char *what;
        void (*poke)(remat_trace *, int64_t);  // on the first allocation with ndim >= 2
    };
    const Case cases[] = {
        {"/events/dims: event", [](remat_trace *t, int64_t i) { t->events[i].dims[0] = (int64_t)1 << 62; }},
        {"expected at most 2^40 elements", [](remat_trace *t, int64_t i) {
             t->events[i].dims[0] = (int64_t)1 << 31;
             t->events[i].dims[1] = (int64_t)1 << 31;
         }},
        {"in dimension 1, expected 1..2^40", [](remat_trace *t, int64_t i) { t->events[i].dims[1] = 0; }},
        {"in dimension 3, expected 1 (past ndim)", [](remat_trace *t, int64_t i) { t->events[i].dims[3] = 2; }},
        {"/events/nnz: event", [](remat_trace *t, int64_t i) { t->events[i].nnz = (int64_t)1 << 62; }},
        {"/events/nnz: event", [](remat_trace *t, int64_t i) {
             const remat_event &e = t->events[i];
             t->events[i].nnz = e.dims[0] * e.dims[1] * e.dims[2] * e.dims[3] + 1;
         }},
        {"/events/bytes: event", [](remat_trace *t, int64_t i) {
             t->events[i].enc = REMAT_ENC_F32;
             t->events[i].bytes = INT64_MAX;
         }},
        {"/events/time_s: event", [](remat_trace *t, int64_t i) { t->events[i + 1].time_s = t->events[i].time_s - 1e-3; }},
        {"backend: expected \"ref\", \"cuda\" or \"sim\" (a prediction), found \"xyz\"",
         [](remat_trace *t, int64_t) { snprintf(t->backend, sizeof t->backend, "xyz"); }},
    };
    for (const Case &c : cases) {
        remat_trace t;
        make_trace(&t, 30, 2);
        int64_t i = 0;
        while (i < t.n_events && (t.events[i].kind != REMAT_EVENT_ALLOC || t.events[i].ndim < 2 ||
                                  t.events[i].enc == REMAT_ENC_SPARSE))
            i++;
        ASSERT_LT(i + 1, t.n_events);
        c.poke(&t, i);
        write_ok(t, p);
        expect_refused(p, c.what);
        remat_trace_free(&t);
    }
}

// Every value the simulator uses is range-checked, with or without the checksum.
TEST(TraceH5, NonsenseValuesRefusedWithOrWithoutChecksum) {
    Files files;
    struct Case {
        const char *what;
        void (*spoil)(remat_trace *);
    };
    const Case cases[] = {
        {"/ops/t_end", [](remat_trace *t) { t->ops[3].t_end = NAN; }},
        {"/ops/t_start", [](remat_trace *t) { t->ops[3].t_start = -1; }},
        {"/ops/elems", [](remat_trace *t) { t->ops[2].elems = -5; }},
        {"/ops/t_steps", [](remat_trace *t) { t->ops[2].t_steps = 9; }},
        {"/events/time_s", [](remat_trace *t) { t->events[4].time_s = INFINITY; }},
        {"/iters/step_time_s", [](remat_trace *t) { t->iters[0].step_time_s = NAN; }},
        {"T: expected 1..", [](remat_trace *t) { t->T = 0; }},
        {"T: expected 1..", [](remat_trace *t) { t->T = (int64_t)1 << 62; }},
        {"N: expected a batch", [](remat_trace *t) { t->N = 0; }},
        {"compress_s_per_elem", [](remat_trace *t) { t->compress_s_per_elem[1] = INFINITY; }},
        {"decompress_s_per_elem", [](remat_trace *t) { t->decompress_s_per_elem[0] = -1e-9; }},
        {"simd: expected a SIMD path name", [](remat_trace *t) { snprintf(t->simd, sizeof t->simd, "AVX 2"); }},
    };
    int k = 0;
    for (const Case &c : cases) {
        for (int strip = 0; strip < 2; strip++) {
            remat_trace t;
            make_trace(&t, 40, 21);
            ASSERT_GT(t.n_iters, 0);
            c.spoil(&t);
            std::string p = files.add("nonsense" + std::to_string(k++) + ".h5");
            write_ok(t, p);
            remat_trace_free(&t);
            if (strip) { /* without its checksum */
                hid_t f = open_rw(p);
                ASSERT_GE(H5Adelete_by_name(f, "/", "content_crc32", H5P_DEFAULT), 0);
                H5Fclose(f);
            }
            SCOPED_TRACE(std::string(c.what) + (strip ? " (no checksum)" : ""));
            expect_refused(p, c.what);
        }
    }
}

TEST(TraceH5, WriteFailureLeavesNoFile) {
    remat_trace t;
    make_trace(&t, 10, 1);
    remat_error err = {};
    std::string p = tmp_dir() + "/no-such-dir-" + std::to_string(getpid()) + "/x.h5";
    EXPECT_EQ(remat_trace_write_h5(&t, p.c_str(), &err), REMAT_ERR_IO);
    EXPECT_EQ(std::string(err.msg).find("x.h5"), std::string(err.msg).find("x.h5"));
    EXPECT_NE(std::string(err.msg).find("cannot create"), std::string::npos) << err.msg;
    EXPECT_EQ(access(p.c_str(), F_OK), -1);
    remat_trace_free(&t);
}

TEST(TraceH5, LargeTraceRoundTrip) {
    Files files;
    std::string p = files.add("large.h5");
    remat_trace t, back;
    make_trace(&t, 200000, 99);
    write_ok(t, p);
    remat_error err = {};
    ASSERT_EQ(read_trace(p, &back, &err), REMAT_OK) << err.msg;
    expect_same(t, back);
    remat_trace_free(&t);
    remat_trace_free(&back);
}

}  // namespace
