// precision_test.cc - the bf16 mode of the executor (docs/precision.md): the model
// field, what is stored in bf16 and what stays fp32 (from the trace and from the
// values), the weight copies counted, the peak, the trace's precision through HDF5,
// fp32 traces written as before, and a backend without bf16 refusing the model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/base/bf16.h"
#include "core/exec/backend.h"
#include "core/exec/executor.h"
#include "core/io/h5_util.h"
#include "core/io/trace.h"
#include "core/model/layers.h"
#include "core/model/plan.h"
#include "tests/testutil.h"

using remat_test::Model;
using remat_test::StoredPlan;

namespace {

struct StepRun {
    remat_trace trace;
    remat_step_result res{};
    std::vector<float> input;
    StepRun() { remat_trace_init(&trace); }
    ~StepRun() { remat_trace_free(&trace); }
};


void run_traced(const remat_model &m, StepRun *r) {
    remat_backend be{};
    remat_error err{};
    ASSERT_EQ(remat_backend_ref_init(&be, 1, &err), REMAT_OK);
    remat_exec_opts o = remat_exec_opts_default();
    o.trace = &r->trace;
    StoredPlan p(m);
    remat_session *s = remat_session_init(&m, &p.p, &be, &o, &err);
    ASSERT_NE(s, nullptr) << err.msg;
    ASSERT_EQ(remat_session_step(s, 1, &r->res, &err), REMAT_OK) << err.msg;
    r->input.resize((size_t)(m.T * m.N * m.in_features));
    ASSERT_EQ(remat_session_get_input(s, r->input.data(), &err), REMAT_OK) << err.msg;
    remat_session_free(s);
    remat_backend_free(&be);
}

TEST(Precision, ModelFieldDefaultsToFp32) {
    Model plain("tiny-mlp-lif");
    EXPECT_EQ(plain.m.precision, REMAT_PRECISION_FP32);
    Model bf("tiny-mlp-lif", REMAT_PRECISION_BF16);
    EXPECT_EQ(bf.m.precision, REMAT_PRECISION_BF16);
    remat_model rs{};
    remat_error err{};
    ASSERT_EQ(remat_model_rescale(&bf.m, 0, 32, &rs, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(rs.precision, REMAT_PRECISION_BF16) << "rescaling keeps the precision";
    EXPECT_NE(std::string(rs.text).find("\"precision\""), std::string::npos);
    remat_model_free(&rs);
}

TEST(Precision, UnknownPrecisionIsOneLineError) {
    const char *text =
        "{\"name\": \"x\", \"T\": 2, \"N\": 1, \"input\": {\"shape\": [4]}, \"classes\": 2, \"loss\": \"rate_mse\","
        " \"optimizer\": {\"type\": \"sgd\", \"lr\": 0.1}, \"precision\": \"fp16\","
        " \"layers\": [{\"name\": \"fc\", \"type\": \"linear\", \"out\": 2}, {\"name\": \"sn\", \"type\": \"lif\"}],"
        " \"blocks\": [{\"name\": \"b\", \"layers\": [\"fc\", \"sn\"]}]}";
    remat_model m{};
    remat_error err{};
    EXPECT_EQ(remat_model_parse(text, strlen(text), "m.json", &m, &err), REMAT_ERR_INPUT);
    EXPECT_STREQ(err.msg, "m.json: precision: expected one of \"fp32\", \"bf16\", got \"fp16\"");
}

// What a bf16 step stores in bf16 (layer outputs, the input, their gradients, the
// weight copies) and what stays fp32 (parameters, their gradients, optimiser state,
// neuron state, h, batch-norm statistics).
TEST(Precision, Bf16StoresActivationsAndCountsWeightCopies) {
    Model fp("tiny-vgg-dvs"), bf("tiny-vgg-dvs", REMAT_PRECISION_BF16);
    StepRun a, b;
    run_traced(fp.m, &a);
    run_traced(bf.m, &b);
    EXPECT_EQ(a.trace.precision, REMAT_PRECISION_FP32);
    EXPECT_EQ(b.trace.precision, REMAT_PRECISION_BF16);
    int64_t copies = 0, copy_bytes = 0, gemm_params = 0, gemm_param_bytes = 0;
    for (int j = 0; j < bf.m.n_layers; j++) {
        const remat_layer &l = bf.m.layers[j];
        if (l.type != REMAT_LAYER_LINEAR && l.type != REMAT_LAYER_CONV2D) continue;
        for (int i = 0; i < remat_layer_n_params(&l); i++) gemm_param_bytes += 2 * remat_layer_param_elems(&l, i);
        gemm_params += remat_layer_n_params(&l);
    }
    for (int64_t i = 0; i < b.trace.n_events; i++) {
        const remat_event &e = b.trace.events[i];
        if (e.kind != REMAT_EVENT_ALLOC) continue;
        int64_t elems = e.dims[0] * e.dims[1] * e.dims[2] * e.dims[3];
        if (e.enc == REMAT_ENC_BF16) {
            EXPECT_EQ(e.bytes, 2 * elems);
        }
        switch (e.role) {
        case REMAT_ROLE_GRADIENT: case REMAT_ROLE_OPTIMIZER: case REMAT_ROLE_NEURON_STATE:
            EXPECT_EQ(e.enc, REMAT_ENC_F32) << "event " << i << " role " << remat_role_name((remat_role)e.role);
            break;
        case REMAT_ROLE_ACT_GRAD: /* gradients of bf16 activations are bf16, as autocast's */
            EXPECT_EQ(e.enc, REMAT_ENC_BF16) << "event " << i;
            break;
        case REMAT_ROLE_PARAMETER:
            if (e.enc == REMAT_ENC_BF16) {
                EXPECT_EQ(e.phase, REMAT_PHASE_FORWARD) << "a weight copy is made in the step";
                const remat_layer &l = bf.m.layers[e.layer];
                EXPECT_TRUE(l.type == REMAT_LAYER_LINEAR || l.type == REMAT_LAYER_CONV2D) << l.name;
                copies++;
                copy_bytes += e.bytes;
            } else {
                EXPECT_EQ(e.phase, REMAT_PHASE_INIT) << "the fp32 masters";
            }
            break;
        case REMAT_ROLE_TRANSIENT:
            if (e.layer >= 0 && e.ndim == 3 && e.time_dim == 0) {
                EXPECT_EQ(e.enc, REMAT_ENC_BF16) << "event " << i;
            }
            break;
        case REMAT_ROLE_SAVED: {
            if (e.layer < 0 || e.ndim != 3) break; /* loss rate, batch-norm statistics are 1/2-d fp32 */
            bool neuron = remat_layer_is_neuron(&bf.m.layers[e.layer]);
            /* neuron h (fp32) or a stored output / decompressed input (bf16) */
            EXPECT_TRUE(e.enc == REMAT_ENC_BF16 || (neuron && e.enc == REMAT_ENC_F32)) << "event " << i;
            break;
        }
        default: break;
        }
    }
    EXPECT_EQ(copies, gemm_params) << "one bf16 copy of each conv/linear weight and bias per step";
    EXPECT_GE(copies, 4);
    EXPECT_EQ(copy_bytes, gemm_param_bytes);
    EXPECT_LT(b.res.peak_live_bytes, a.res.peak_live_bytes);
    // the input is bf16-valued (spikes here: unchanged), every stored element of it too
    for (float x : b.input) EXPECT_EQ(remat_f32_bits(x) & 0xffffu, 0u);
}

// The bf16 weight copies live as autocast's cast cache and the saved graph keep them: a
// layer in a stored segment keeps its copy from its first forward to its backward; a
// layer in a checkpointed segment (its forward saved nothing) loses the copy when the
// autocast region ends (after the loss) and its recomputation makes a new one, freed
// after its backward. Checked on the events of tiny-vgg-dvs with b1, b2, b3 checkpointed
// and the stored classifier, against the plain step's copies.
TEST(Precision, CheckpointedWeightCopiesAreRemadeInRecomputation) {
    Model bf("tiny-vgg-dvs", REMAT_PRECISION_BF16);
    remat_plan plan{};
    remat_error err{};
    ASSERT_EQ(remat_plan_load("data/plans/tiny-vgg-dvs-ckpt.json", &bf.m, &plan, &err), REMAT_OK) << err.msg;
    remat_trace trace;
    remat_trace_init(&trace);
    remat_test::StepOutput out;
    ASSERT_TRUE(remat_test::run_step(bf.m, plan, 1, &trace, &out, &err)) << err.msg;
    std::vector<int> ckpt_layer((size_t)bf.m.n_layers, 0);
    for (int j = 0; j < bf.m.n_layers; j++) ckpt_layer[(size_t)j] = plan.blocks[bf.m.layers[j].block].checkpoint;
    int remade = 0, kept = 0;
    for (int j = 0; j < bf.m.n_layers; j++) {
        const remat_layer &l = bf.m.layers[j];
        if (l.type != REMAT_LAYER_LINEAR && l.type != REMAT_LAYER_CONV2D) continue;
        std::vector<std::pair<int, int>> life; /* (alloc phase, free phase) of the weight's copy */
        for (int64_t i = 0; i < trace.n_events; i++) {
            const remat_event &e = trace.events[i];
            if (e.layer != j || e.role != REMAT_ROLE_PARAMETER || e.enc != REMAT_ENC_BF16 || e.ndim < 2) /* the weight */
                continue;
            if (e.kind == REMAT_EVENT_ALLOC) {
                life.push_back({e.phase, -1});
            } else if (!life.empty()) {
                life.back().second = e.phase;
            }
        }
        if (ckpt_layer[(size_t)j]) {
            ASSERT_EQ(life.size(), 2u) << l.name << ": made in forward and again in the recomputation";
            EXPECT_EQ(life[0], std::make_pair((int)REMAT_PHASE_FORWARD, (int)REMAT_PHASE_LOSS)) << l.name;
            EXPECT_EQ(life[1], std::make_pair((int)REMAT_PHASE_RECOMPUTE, (int)REMAT_PHASE_BACKWARD)) << l.name;
            remade++;
        } else {
            ASSERT_EQ(life.size(), 1u) << l.name;
            EXPECT_EQ(life[0], std::make_pair((int)REMAT_PHASE_FORWARD, (int)REMAT_PHASE_BACKWARD)) << l.name;
            kept++;
        }
    }
    EXPECT_GT(remade, 0);
    EXPECT_GT(kept, 0);
    remat_trace_free(&trace);
    remat_plan_free(&plan);
}

TEST(Precision, AnalogInputIsRoundedToBf16) {
    Model fp("tiny-3block-if"), bf("tiny-3block-if", REMAT_PRECISION_BF16);
    StepRun a, b;
    run_traced(fp.m, &a);
    run_traced(bf.m, &b);
    ASSERT_EQ(a.input.size(), b.input.size());
    int changed = 0;
    for (size_t i = 0; i < a.input.size(); i++) {
        EXPECT_EQ(remat_f32_bits(b.input[i]), remat_f32_bits(remat_bf16_round(a.input[i]))) << i;
        changed += a.input[i] != b.input[i];
    }
    EXPECT_GT(changed, 0) << "U[0,1) values are not all bf16 values";
    EXPECT_NE(a.res.loss, b.res.loss) << "bf16 rounding must show in the loss of an analog model";
}

// Compressors on bf16 spikes: the checkpointed inputs of the shipped tiny-mlp-lif plan
// (bit, sparse, bool) take their compressed bytes, against 2 bytes per element raw:
// bit packing is 16x, bool 2x; the step is bit-identical to bf16 plain backpropagation.
TEST(Precision, CompressorsOnBf16Spikes) {
    Model bf("tiny-mlp-lif", REMAT_PRECISION_BF16);
    remat_plan plan{};
    remat_error err{};
    ASSERT_EQ(remat_plan_load("data/plans/tiny-mlp-lif-ckpt.json", &bf.m, &plan, &err), REMAT_OK) << err.msg;
    remat_trace trace;
    remat_trace_init(&trace);
    remat_test::StepOutput got, base;
    ASSERT_TRUE(remat_test::run_step(bf.m, plan, 3, &trace, &got, &err)) << err.msg;
    StoredPlan stored(bf.m);
    ASSERT_TRUE(remat_test::run_step(bf.m, stored.p, 3, nullptr, &base, &err)) << err.msg;
    EXPECT_EQ(got.res.compression_mismatches, 0);
    EXPECT_GT(got.res.compressions, 0);
    for (size_t i = 0; i < base.grads.size(); i++)
        EXPECT_EQ(remat_test::first_difference(base.grads[i], got.grads[i]), -1) << "gradient " << i;
    int seen_bit = 0, seen_bool = 0;
    for (int64_t i = 0; i < trace.n_events; i++) {
        const remat_event &e = trace.events[i];
        if (e.kind != REMAT_EVENT_ALLOC || e.role != REMAT_ROLE_COMPRESSED) continue;
        int64_t elems = e.dims[0] * e.dims[1] * e.dims[2] * e.dims[3];
        if (e.enc == REMAT_ENC_BIT) {
            EXPECT_EQ(e.bytes, (elems + 7) / 8);
            if (elems % 8 == 0) {
                EXPECT_EQ(2 * elems / e.bytes, 16) << "bit packing of bf16 spikes";
            }
            seen_bit++;
        }
        if (e.enc == REMAT_ENC_U8) {
            EXPECT_EQ(e.bytes, elems) << "bool: one byte per bf16 spike (2x)";
            seen_bool++;
        }
    }
    EXPECT_GT(seen_bit, 0);
    EXPECT_GT(seen_bool, 0);
    remat_trace_free(&trace);
    remat_plan_free(&plan);
}

std::string tmp_path(const char *name) {
    const char *d = getenv("TEST_TMPDIR");
    return std::string(d ? d : "/tmp") + "/" + name;
}

TEST(Precision, TraceKeepsPrecisionThroughHdf5AndFp32TracesAreUnchanged) {
    Model fp("tiny-mlp-lif"), bf("tiny-mlp-lif", REMAT_PRECISION_BF16);
    StepRun a, b;
    run_traced(fp.m, &a);
    run_traced(bf.m, &b);
    remat_error err{};
    std::string pa = tmp_path("fp32.h5"), pb = tmp_path("bf16.h5");
    ASSERT_EQ(remat_trace_write_h5(&a.trace, pa.c_str(), &err), REMAT_OK) << err.msg;
    ASSERT_EQ(remat_trace_write_h5(&b.trace, pb.c_str(), &err), REMAT_OK) << err.msg;
    remat_trace ra, rb;
    ASSERT_EQ(remat_trace_read_h5(pa.c_str(), &ra, &err), REMAT_OK) << err.msg;
    ASSERT_EQ(remat_trace_read_h5(pb.c_str(), &rb, &err), REMAT_OK) << err.msg;
    EXPECT_EQ(ra.precision, REMAT_PRECISION_FP32);
    EXPECT_EQ(rb.precision, REMAT_PRECISION_BF16);
    remat_trace_free(&ra);
    remat_trace_free(&rb);
    // an fp32 trace: no precision attribute, the first schema's five encoding names
    hid_t f;
    ASSERT_EQ(remat_h5_open(pa.c_str(), &f, &err), REMAT_OK) << err.msg;
    EXPECT_FALSE(remat_h5_attr_exists(f, "/", "precision"));
    char *names = nullptr;
    ASSERT_EQ(remat_h5_attr_read_str(f, pa.c_str(), "/events", "enc_names", &names, &err), REMAT_OK) << err.msg;
    EXPECT_STREQ(names, "f32,u8,bit,sparse,i32");
    remat_xfree(names);
    remat_h5_close(f);
    ASSERT_EQ(remat_h5_open(pb.c_str(), &f, &err), REMAT_OK) << err.msg;
    char *prec = nullptr;
    ASSERT_EQ(remat_h5_attr_read_str(f, pb.c_str(), "/", "precision", &prec, &err), REMAT_OK) << err.msg;
    EXPECT_STREQ(prec, "bf16");
    remat_xfree(prec);
    ASSERT_EQ(remat_h5_attr_read_str(f, pb.c_str(), "/events", "enc_names", &names, &err), REMAT_OK) << err.msg;
    EXPECT_STREQ(names, "f32,u8,bit,sparse,i32,bf16");
    remat_xfree(names);
    remat_h5_close(f);
    std::remove(pa.c_str());
    std::remove(pb.c_str());
}

// A backend without the bf16-storage kernels refuses a bf16 model in one line instead
// of computing it in fp32.
TEST(Precision, BackendWithoutBf16Refuses) {
    remat_backend ref{};
    remat_error err{};
    ASSERT_EQ(remat_backend_ref_init(&ref, 1, &err), REMAT_OK);
    remat_backend_ops ops = *ref.ops;
    ops.name = "nobf16";
    ops.neuron_backward_bf16 = nullptr; // one twin missing is enough
    remat_backend be{&ops, ref.ctx};
    Model bf("tiny-mlp-lif", REMAT_PRECISION_BF16);
    remat_exec_opts o = remat_exec_opts_default();
    StoredPlan p(bf.m);
    EXPECT_EQ(remat_session_init(&bf.m, &p.p, &be, &o, &err), nullptr);
    EXPECT_EQ(err.status, REMAT_ERR_INPUT);
    EXPECT_EQ(std::string(err.msg),
              "data/models/tiny-mlp-lif.json: precision: \"bf16\" is not available on the nobf16 backend yet (use "
              "--backend ref)");
    EXPECT_EQ(strchr(err.msg, '\n'), nullptr);
    Model fp("tiny-mlp-lif");
    remat_error e2{};
    remat_session *s = remat_session_init(&fp.m, &p.p, &be, &o, &e2);
    EXPECT_NE(s, nullptr) << "fp32 models need no bf16 kernel: " << e2.msg;
    remat_session_free(s);
    remat_backend_free(&ref);
}

}  // namespace
