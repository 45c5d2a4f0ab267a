// dump_test.cc - the gradient dump (core/exec/dump.h) and its reader (core/io/dump_read.h):
// layout exactly as interfaces.md says, values equal to what a session reports,
// equal dumps for different plans, byte-identical files for equal content, a
// data-parallel dump (ranks as threads) equal to the one-process one, and clean refusals
// of files that are not dumps.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/exec/backend.h"
#include "core/exec/dump.h"
#include "core/io/dump_read.h"
#include "core/exec/executor.h"
#include "core/exec/reduce.h"
#include "core/io/h5_util.h"
#include "core/model/weights.h"
#include "core/model/layers.h"
#include "core/model/model.h"
#include "core/model/plan.h"
#include "verify/capture.h"

namespace {

std::string tmp_path(const std::string &name) {
    const char *d = getenv("TEST_TMPDIR");
    return std::string(d ? d : "/tmp") + "/dump_test_" + std::to_string(getpid()) + "_" + name;
}

std::vector<char> slurp(const std::string &p) {
    std::ifstream f(p, std::ios::binary);
    return std::vector<char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

struct Fixture {
    remat_model m{};
    remat_plan empty{}, ckpt{};
    remat_backend be{};
    std::vector<std::string> files;
    explicit Fixture(const char *model) {
        remat_error err = {};
        std::string mp = std::string("data/models/") + model + ".json";
        EXPECT_EQ(remat_model_load(mp.c_str(), &m, &err), REMAT_OK) << err.msg;
        EXPECT_EQ(remat_plan_init_empty(&m, &empty, &err), REMAT_OK) << err.msg;
        std::string pp = std::string("data/plans/") + model + "-ckpt.json";
        EXPECT_EQ(remat_plan_load(pp.c_str(), &m, &ckpt, &err), REMAT_OK) << err.msg;
        EXPECT_EQ(remat_backend_ref_init(&be, 1, &err), REMAT_OK) << err.msg;
    }
    ~Fixture() {
        for (auto &f : files) {
            remove(f.c_str());
            remove((f + ".tmp").c_str());
        }
        remat_backend_free(&be);
        remat_plan_free(&ckpt);
        remat_plan_free(&empty);
        remat_model_free(&m);
    }
    std::string dump(const remat_plan &p, const std::string &name, uint64_t seed, remat_step_result *res) {
        files.push_back(tmp_path(name));
        remat_exec_opts o = remat_exec_opts_default();
        o.seed = seed;
        remat_error err = {};
        EXPECT_EQ(remat_dump_run(&m, &p, &be, &o, files.back().c_str(), res, &err), REMAT_OK) << err.msg;
        EXPECT_EQ(access((files.back() + ".tmp").c_str(), F_OK), -1);
        return files.back();
    }
};

struct Dump {
    remat_dump d{};
    explicit Dump(const std::string &p) {
        remat_error err = {};
        EXPECT_EQ(remat_dump_read(p.c_str(), &d, &err), REMAT_OK) << err.msg;
    }
    ~Dump() { remat_dump_free(&d); }
    const remat_dump_entry *get(const std::string &path) const {
        const remat_dump_entry *e = remat_dump_find(&d, path.c_str());
        EXPECT_NE(e, nullptr) << path;
        return e;
    }
};

void expect_bits(const remat_dump_entry *e, const std::vector<float> &v) {
    ASSERT_NE(e, nullptr);
    ASSERT_EQ(e->elems, (int64_t)v.size()) << e->path;
    EXPECT_EQ(memcmp(e->data, v.data(), v.size() * 4), 0) << e->path;
}

TEST(Dump, LayoutMatchesInterfaces) {
    Fixture fx("tiny-resnet-bn");
    remat_step_result res;
    std::string p = fx.dump(fx.empty, "layout.h5", 7, &res);
    Dump dd(p);
    const remat_model &m = fx.m;
    EXPECT_STREQ(dd.d.model, m.text);
    EXPECT_STREQ(dd.d.plan, "");
    EXPECT_STREQ(dd.d.seed, "7");
    EXPECT_STREQ(dd.d.backend, "ref");
    std::set<std::string> want = {"/input", "/labels", "/loss", "/grads/input"};
    int n_bn = 0, n_drop = 0;
    for (int li = 0; li < m.n_layers; li++) {
        const remat_layer &l = m.layers[li];
        for (int pi = 0; pi < remat_layer_n_params(&l); pi++) {
            std::string nm = std::string(l.name) + "/" + remat_layer_param_name(&l, pi);
            want.insert("/params/" + nm);
            if (remat_layer_param_trainable(&l, pi)) want.insert("/grads/" + nm);
            else want.insert("/after/" + nm);
        }
        if (l.type == REMAT_LAYER_DROPOUT) {
            want.insert(std::string("/masks/") + l.name);
            n_drop++;
        }
        if (l.type == REMAT_LAYER_BATCHNORM) n_bn++;
    }
    ASSERT_GT(n_bn, 0);
    ASSERT_GT(n_drop, 0);
    std::set<std::string> got;
    for (int i = 0; i < dd.d.n; i++) got.insert(dd.d.entries[i].path);
    EXPECT_EQ(got, want);
    // shapes and types
    const remat_dump_entry *in = dd.get("/input");
    ASSERT_EQ(in->rank, 3);
    EXPECT_EQ(in->dims[0], m.T);
    EXPECT_EQ(in->dims[1], m.N);
    EXPECT_EQ(in->dims[2], m.in_features);
    EXPECT_EQ(in->dtype, REMAT_DUMP_F32);
    const remat_dump_entry *gi = dd.get("/grads/input");
    ASSERT_EQ(gi->rank, 3);
    EXPECT_EQ(memcmp(gi->dims, in->dims, 3 * sizeof(int64_t)), 0);
    const remat_dump_entry *lab = dd.get("/labels");
    EXPECT_EQ(lab->dtype, REMAT_DUMP_I32);
    ASSERT_EQ(lab->rank, 1);
    EXPECT_EQ(lab->dims[0], m.N);
    for (int64_t i = 0; i < m.N; i++) {
        int32_t c = ((const int32_t *)lab->data)[i];
        EXPECT_GE(c, 0);
        EXPECT_LT(c, m.classes);
    }
    const remat_dump_entry *loss = dd.get("/loss");
    EXPECT_EQ(loss->rank, 0);
    EXPECT_EQ(loss->elems, 1);
    EXPECT_EQ(*(const float *)loss->data, (float)res.loss);
    const remat_dump_entry *w = dd.get("/params/stem_fc/weight");
    ASSERT_EQ(w->rank, 2);
    EXPECT_EQ(w->dims[0], 8);
    EXPECT_EQ(w->dims[1], 8);
    const remat_dump_entry *hw = dd.get("/grads/head_fc/weight");
    ASSERT_EQ(hw->rank, 2);
    EXPECT_EQ(hw->dims[0], 3);
    EXPECT_EQ(hw->dims[1], 8);
    const remat_dump_entry *rv = dd.get("/after/r1_bn1/running_var");
    ASSERT_EQ(rv->rank, 1);
    EXPECT_EQ(rv->dims[0], 8);
    // masks: [N, F], values 0 or 1/(1-p)
    const remat_dump_entry *mk = dd.get("/masks/head_drop");
    ASSERT_EQ(mk->rank, 2);
    EXPECT_EQ(mk->dims[0], m.N);
    EXPECT_EQ(mk->dims[1], 8);
    int zeros = 0;
    for (int64_t i = 0; i < mk->elems; i++) {
        float v = ((const float *)mk->data)[i];
        EXPECT_TRUE(v == 0.0f || v == 1.0f / (1.0f - 0.25f)) << v;
        zeros += v == 0.0f;
    }
    EXPECT_GT(zeros, 0);
    const remat_dump_entry *m0 = dd.get("/masks/stem_drop");  // p = 0: all ones
    for (int64_t i = 0; i < m0->elems; i++) EXPECT_EQ(((const float *)m0->data)[i], 1.0f);
    EXPECT_EQ(remat_dump_find(&dd.d, "/nope"), nullptr);
}

// The dump and verify's capture name a step's tensors from one table
// (core/model/step_tensors.h): the same names (the dump's with a leading '/'), the same
// shapes and the same bits for the same seeded step.
TEST(Dump, NamesShapesAndBitsAreTheCapturesOfTheSameStep) {
    Fixture fx("tiny-resnet-bn");
    remat_step_result res;
    std::string p = fx.dump(fx.empty, "capture.h5", 3, &res);
    Dump dd(p);
    remat_verify_set cap = {};
    remat_exec_opts o = remat_exec_opts_default();
    o.seed = 3;
    remat_error err = {};
    ASSERT_EQ(remat_verify_capture_run(&fx.m, &fx.empty, &fx.be, &o, &cap, nullptr, &err), REMAT_OK) << err.msg;
    ASSERT_EQ(cap.n, dd.d.n);
    for (int i = 0; i < cap.n; i++) {
        const remat_verify_tensor *t = &cap.t[i];
        const remat_dump_entry *e = remat_dump_find(&dd.d, ("/" + std::string(t->name)).c_str());
        ASSERT_NE(e, nullptr) << t->name;
        ASSERT_EQ(e->rank, t->ndim) << t->name;
        for (int k = 0; k < t->ndim; k++) EXPECT_EQ(e->dims[k], t->shape[k]) << t->name;
        ASSERT_EQ(e->elems, t->elems) << t->name;
        EXPECT_EQ(memcmp(e->data, t->bits, (size_t)t->elems * 4), 0) << t->name;
    }
    remat_verify_set_free(&cap);
}

TEST(Dump, ValuesAreTheSessionsBeforeAndAfterTheStep) {
    Fixture fx("tiny-resnet-bn");
    remat_step_result res;
    std::string p = fx.dump(fx.empty, "values.h5", 11, &res);
    Dump dd(p);
    const remat_model &m = fx.m;
    remat_exec_opts o = remat_exec_opts_default();
    o.seed = 11;
    remat_error err = {};
    remat_session *s = remat_session_init(&m, &fx.empty, &fx.be, &o, &err);
    ASSERT_NE(s, nullptr) << err.msg;
    for (int li = 0; li < m.n_layers; li++) {
        const remat_layer &l = m.layers[li];
        for (int pi = 0; pi < remat_layer_n_params(&l); pi++) {
            std::vector<float> v(remat_layer_param_elems(&l, pi));
            ASSERT_EQ(remat_session_get_param(s, li, pi, v.data(), &err), REMAT_OK);
            expect_bits(dd.get(std::string("/params/") + l.name + "/" + remat_layer_param_name(&l, pi)), v);
        }
    }
    remat_step_result r;
    ASSERT_EQ(remat_session_step(s, 0, &r, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(r.loss, res.loss);
    EXPECT_EQ(r.peak_live_bytes, res.peak_live_bytes);
    int changed_stats = 0;
    for (int li = 0; li < m.n_layers; li++) {
        const remat_layer &l = m.layers[li];
        for (int pi = 0; pi < remat_layer_n_params(&l); pi++) {
            std::string nm = std::string(l.name) + "/" + remat_layer_param_name(&l, pi);
            std::vector<float> v(remat_layer_param_elems(&l, pi));
            if (remat_layer_param_trainable(&l, pi)) {
                ASSERT_EQ(remat_session_get_grad(s, li, pi, v.data(), &err), REMAT_OK);
                expect_bits(dd.get("/grads/" + nm), v);
                // no optimiser update: the parameter after the step is the one before
                ASSERT_EQ(remat_session_get_param(s, li, pi, v.data(), &err), REMAT_OK);
                expect_bits(dd.get("/params/" + nm), v);
            } else {
                ASSERT_EQ(remat_session_get_param(s, li, pi, v.data(), &err), REMAT_OK);
                expect_bits(dd.get("/after/" + nm), v);
                const remat_dump_entry *before = dd.get("/params/" + nm);
                changed_stats += memcmp(before->data, v.data(), v.size() * 4) != 0;
            }
        }
    }
    EXPECT_GT(changed_stats, 0);  // the step did update the running statistics
    std::vector<float> x(m.T * m.N * m.in_features);
    ASSERT_EQ(remat_session_get_input(s, x.data(), &err), REMAT_OK);
    expect_bits(dd.get("/input"), x);
    ASSERT_EQ(remat_session_get_input_grad(s, x.data(), &err), REMAT_OK);
    expect_bits(dd.get("/grads/input"), x);
    std::vector<int32_t> lab(m.N);
    ASSERT_EQ(remat_session_get_labels(s, lab.data(), &err), REMAT_OK);
    EXPECT_EQ(memcmp(dd.get("/labels")->data, lab.data(), lab.size() * 4), 0);
    remat_session_free(s);
}

TEST(Dump, PlansGiveTheSameDumpExceptThePlan) {
    for (const char *model : {"tiny-resnet-bn", "tiny-mlp-lif", "tiny-3block-if", "tiny-vgg-dvs", "tiny-sew-resnet"}) {
        SCOPED_TRACE(model);
        Fixture fx(model);
        remat_step_result r0, r1, r2;
        std::string a = fx.dump(fx.empty, "base.h5", 3, &r0);
        std::string b = fx.dump(fx.ckpt, "ckpt.h5", 3, &r1);
        std::string c = fx.dump(fx.ckpt, "ckpt2.h5", 3, &r2);
        Dump da(a), db(b);
        EXPECT_STREQ(db.d.plan, fx.ckpt.text);
        EXPECT_STRNE(da.d.plan, db.d.plan);
        EXPECT_STREQ(da.d.model, db.d.model);
        EXPECT_STREQ(da.d.seed, db.d.seed);
        ASSERT_EQ(da.d.n, db.d.n);
        for (int i = 0; i < da.d.n; i++) {
            const remat_dump_entry &x = da.d.entries[i], &y = db.d.entries[i];
            ASSERT_STREQ(x.path, y.path);
            ASSERT_EQ(x.elems, y.elems);
            EXPECT_EQ(memcmp(x.data, y.data, (size_t)x.elems * 4), 0) << x.path;
        }
        // the checkpointed run really was different: it held less at the end of forward
        EXPECT_LT(r1.end_of_forward_bytes, r0.end_of_forward_bytes);
        // same content, same bytes: no clock in the file
        EXPECT_EQ(slurp(b), slurp(c));
    }
}

TEST(Dump, ReaderRefusesWhatIsNotADump) {
    std::string p = tmp_path("notadump.h5");
    remat_dump d;
    remat_error err = {};
    {
        std::ofstream f(p, std::ios::binary | std::ios::trunc);
        f << "plain text, not HDF5\n";
    }
    EXPECT_EQ(remat_dump_read(p.c_str(), &d, &err), REMAT_ERR_INPUT);
    EXPECT_NE(std::string(err.msg).find("not an HDF5 file"), std::string::npos) << err.msg;
    EXPECT_EQ(d.n, 0);
    // HDF5, but no attributes
    hid_t f;
    err = {};
    ASSERT_EQ(remat_h5_create(p.c_str(), &f, &err), REMAT_OK);
    float one = 1;
    int64_t n1 = 1;
    ASSERT_EQ(remat_h5_write(f, p.c_str(), "/loss", REMAT_H5_F32, 0, &n1, &one, &err), REMAT_OK);
    remat_h5_close(f);
    EXPECT_EQ(remat_dump_read(p.c_str(), &d, &err), REMAT_ERR_INPUT);
    EXPECT_EQ(std::string(err.msg), p + ": model: missing root attribute (not a gradient dump)");
    // attributes, but no /labels; then an int64 dataset
    err = {};
    ASSERT_EQ(remat_h5_create(p.c_str(), &f, &err), REMAT_OK);
    for (const char *a : {"model", "plan", "seed", "backend"})
        ASSERT_EQ(remat_h5_attr_write_str(f, p.c_str(), "/", a, "x", &err), REMAT_OK);
    ASSERT_EQ(remat_h5_write(f, p.c_str(), "/loss", REMAT_H5_F32, 0, &n1, &one, &err), REMAT_OK);
    ASSERT_EQ(remat_h5_write(f, p.c_str(), "/input", REMAT_H5_F32, 1, &n1, &one, &err), REMAT_OK);
    ASSERT_EQ(remat_h5_write(f, p.c_str(), "/grads/input", REMAT_H5_F32, 1, &n1, &one, &err), REMAT_OK);
    remat_h5_close(f);
    EXPECT_EQ(remat_dump_read(p.c_str(), &d, &err), REMAT_ERR_INPUT);
    EXPECT_EQ(std::string(err.msg), p + ": /labels: missing dataset (not a gradient dump)");
    err = {};
    hid_t g = H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(g, 0);
    int64_t big = 5;
    ASSERT_EQ(remat_h5_write(g, p.c_str(), "/labels", REMAT_H5_I64, 1, &n1, &big, &err), REMAT_OK);
    remat_h5_close(g);
    EXPECT_EQ(remat_dump_read(p.c_str(), &d, &err), REMAT_ERR_INPUT);
    EXPECT_NE(std::string(err.msg).find("/labels: expected a float32 (or, for /labels, int32) dataset"),
              std::string::npos)
        << err.msg;
    err = {};
    EXPECT_EQ(remat_dump_read(tmp_path("missing.h5").c_str(), &d, &err), REMAT_ERR_IO);
    remove(p.c_str());
}

TEST(Dump, WriteFailureLeavesNothing) {
    Fixture fx("tiny-mlp-lif");
    remat_exec_opts o = remat_exec_opts_default();
    remat_error err = {};
    std::string p = tmp_path("no-such-dir") + "/d.h5";
    EXPECT_EQ(remat_dump_run(&fx.m, &fx.empty, &fx.be, &o, p.c_str(), nullptr, &err), REMAT_ERR_IO);
    EXPECT_NE(std::string(err.msg).find("cannot create"), std::string::npos) << err.msg;
    EXPECT_EQ(access(p.c_str(), F_OK), -1);
    // the dry backend has no data to dump
    remat_backend dry;
    err = {};
    ASSERT_EQ(remat_backend_dry_init(&dry, &err), REMAT_OK);
    std::string q = tmp_path("dry.h5");
    EXPECT_EQ(remat_dump_run(&fx.m, &fx.empty, &dry, &o, q.c_str(), nullptr, &err), REMAT_ERR_INPUT);
    EXPECT_EQ(access(q.c_str(), F_OK), -1);
    EXPECT_EQ(access((q + ".tmp").c_str(), F_OK), -1);
    remat_backend_free(&dry);
}

}  // namespace

// Parameters carry their real shape: a conv weight is [out, in, kh, kw] (it was dumped
// flat, [588] for a [4, 3, 7, 7] weight), so a dump lines up with a PyTorch state dict.
TEST(Dump, ConvWeightsHaveTheirRealShape) {
    Fixture fx("tiny-sew-resnet");
    remat_step_result res;
    Dump dd(fx.dump(fx.empty, "conv.h5", 1, &res));
    int li = remat_model_find_layer(&fx.m, "conv1");
    ASSERT_GE(li, 0);
    int64_t want[4];
    ASSERT_EQ(remat_layer_param_dims(&fx.m.layers[li], 0, want), 4);
    for (const char *g : {"/params/conv1/weight", "/grads/conv1/weight"}) {
        const remat_dump_entry *w = dd.get(g);
        ASSERT_NE(w, nullptr);
        ASSERT_EQ(w->rank, 4) << g;
        for (int i = 0; i < 4; i++) EXPECT_EQ(w->dims[i], want[i]) << g << " dim " << i;
    }
    EXPECT_EQ(dd.get("/params/conv1/weight")->dims[2], 7);
}

// --init: a dump's /params start another run (another seed) bit for bit, and every
// mismatch is one line naming the layer.
TEST(Dump, InitWeightsReplaceTheSeededOnes) {
    Fixture fx("tiny-sew-resnet");
    remat_step_result res;
    std::string a = fx.dump(fx.empty, "init_a.h5", 1, &res);
    remat_weights w;
    remat_error err = {};
    ASSERT_EQ(remat_weights_load(a.c_str(), &fx.m, &w, &err), REMAT_OK) << err.msg;
    fx.files.push_back(tmp_path("init_b.h5"));
    remat_exec_opts o = remat_exec_opts_default();
    o.seed = 2;
    o.init_values = (const float *const *)w.values;
    ASSERT_EQ(remat_dump_run(&fx.m, &fx.empty, &fx.be, &o, fx.files.back().c_str(), &res, &err), REMAT_OK) << err.msg;
    remat_weights_free(&w);
    std::string c = fx.dump(fx.empty, "init_c.h5", 2, &res);
    Dump da(a), db(fx.files[1]), dc(c);
    int n = 0;
    for (int i = 0; i < da.d.n; i++) {
        const remat_dump_entry *e = &da.d.entries[i];
        if (strncmp(e->path, "/params/", 8) != 0) continue;
        const remat_dump_entry *f = db.get(e->path);
        ASSERT_NE(f, nullptr);
        ASSERT_EQ(e->elems, f->elems);
        EXPECT_EQ(memcmp(e->data, f->data, (size_t)e->elems * 4), 0) << e->path;
        n++;
    }
    EXPECT_GT(n, 10);
    // the seed still draws the input: b's input is c's (seed 2), not a's
    EXPECT_EQ(memcmp(db.get("/input")->data, dc.get("/input")->data, (size_t)dc.get("/input")->elems * 4), 0);

    // a model of other widths: one line per mismatching parameter, each naming its layer
    remat_model other{};
    const char *text =
        "{\"name\":\"o\",\"T\":2,\"N\":2,\"input\":{\"shape\":[3,32,32]},\"classes\":5,"
        "\"layers\":[{\"name\":\"conv1\",\"type\":\"conv2d\",\"out\":5,\"kernel\":7,\"stride\":2,\"padding\":3,"
        "\"bias\":false},{\"name\":\"bn1\",\"type\":\"batchnorm\"},{\"name\":\"sn1\",\"type\":\"if\"},"
        "{\"name\":\"flat\",\"type\":\"flatten\"},{\"name\":\"extra\",\"type\":\"linear\",\"out\":5}],"
        "\"blocks\":[{\"name\":\"b\",\"layers\":[\"conv1\",\"bn1\",\"sn1\",\"flat\",\"extra\"]}]}";
    ASSERT_EQ(remat_model_parse(text, strlen(text), "o.json", &other, &err), REMAT_OK) << err.msg;
    remat_error e2 = {};
    EXPECT_EQ(remat_weights_load(a.c_str(), &other, &w, &e2), REMAT_ERR_INPUT);
    ASSERT_NE(w.problems, nullptr);
    std::string probs = w.problems;
    EXPECT_NE(probs.find("/params/conv1/weight: expected float32 [5, 3, 7, 7] (layer \"conv1\", conv2d), got "
                         "float32 [4, 3, 7, 7]"), std::string::npos) << probs;
    EXPECT_NE(probs.find("/params/bn1/running_var: expected float32 [5]"), std::string::npos) << probs;
    EXPECT_NE(probs.find("/params/extra/weight: missing (layer \"extra\""), std::string::npos) << probs;
    EXPECT_NE(probs.find("/params/l1b0_conv1/weight: expected a parameter of model \"o\" (no layer of that name)"),
              std::string::npos) << probs;
    EXPECT_GE(w.n_problems, 7);
    EXPECT_STREQ(e2.msg, probs.substr(0, probs.find('\n')).c_str());
    remat_weights_free(&w);
    remat_model_free(&other);
}

// A data-parallel dump (o.shard), R ranks as R threads over the thread transport: rank 0
// writes the global batch's dump, byte for byte the one-process dump with the same blocks
// (input and its gradient gathered, labels, masks of every sample, reduced gradients and
// running statistics); the other ranks write nothing. Batch norm + dropout, 8 blocks.
TEST(DumpTest, DataParallelDumpIsTheOneProcessDump) {
    Fixture fx("tiny-resnet-bn");
    remat_error err = {};
    remat_model m8{};
    ASSERT_EQ(remat_model_rescale(&fx.m, 0, 8, &m8, &err), REMAT_OK) << err.msg;
    remat_plan p{};
    ASSERT_EQ(remat_plan_init_empty(&m8, &p, &err), REMAT_OK) << err.msg;
    auto run = [&](const remat_shard *sh, const std::string &path, remat_error *e) {
        remat_backend be{};
        remat_status st = remat_backend_ref_init(&be, 1, e);
        remat_exec_opts o = remat_exec_opts_default();
        o.seed = 5;
        o.shard = sh;
        if (st == REMAT_OK) st = remat_dump_run(&m8, &p, &be, &o, path.c_str(), nullptr, e);
        remat_backend_free(&be);
        return st;
    };
    const remat_shard one = remat_shard_one(8, 8);
    std::string a = tmp_path("dp_one.h5"), plain = tmp_path("dp_plain.h5");
    fx.files.push_back(a);
    fx.files.push_back(plain);
    ASSERT_EQ(run(&one, a, &err), REMAT_OK) << err.msg;
    ASSERT_EQ(run(nullptr, plain, &err), REMAT_OK) << err.msg;
    EXPECT_NE(slurp(a), slurp(plain)); // 8 blocks add in another order than one: the comparison can fail
    for (int R : {2, 4}) {
        std::string b = tmp_path("dp_r" + std::to_string(R) + ".h5");
        fx.files.push_back(b);
        remat_comm_threads *tc = remat_comm_threads_new(R, &err);
        ASSERT_NE(tc, nullptr) << err.msg;
        std::vector<remat_comm> comms(R);
        std::vector<remat_shard> shards(R);
        std::vector<remat_error> errs(R);
        std::vector<remat_status> sts(R, REMAT_OK);
        for (int r = 0; r < R; r++) {
            comms[r] = remat_comm_threads_get(tc, r);
            shards[r] = remat_shard{8, R, r, 8, &comms[r]};
            errs[r] = remat_error{};
        }
        std::vector<std::thread> th;
        for (int r = 0; r < R; r++) th.emplace_back([&, r] { sts[r] = run(&shards[r], b, &errs[r]); });
        for (auto &t : th) t.join();
        remat_comm_threads_free(tc);
        for (int r = 0; r < R; r++) EXPECT_EQ(sts[r], REMAT_OK) << "rank " << r << ": " << errs[r].msg;
        EXPECT_EQ(slurp(a), slurp(b)) << "R = " << R;
    }
    remat_plan_free(&p);
    remat_model_free(&m8);
}
