// testutil.h - helpers shared by the GoogleTest files: loading shipped models,
// running one step, comparing tensors bit for bit.
#ifndef REMAT_TESTS_TESTUTIL_H
#define REMAT_TESTS_TESTUTIL_H

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/base/rng.h"
#include "core/exec/executor.h"
#include "core/model/model.h"
#include "core/model/plan.h"
#include "core/io/trace.h"

namespace remat_test {

// The window of a conv2d or pooling layer on a [ci, h, w] input with co output channels,
// output size as PyTorch computes it (no dilation: dilated() adds it; floor); the square form takes one
// kernel size, stride and padding for both dimensions.
inline remat_conv_geom conv_geom(int64_t ci, int64_t h, int64_t w, int64_t co, int64_t kh, int64_t kw, int64_t sh,
                                 int64_t sw, int64_t ph, int64_t pw) {
    remat_conv_geom g{};
    g.c_in = ci, g.h_in = h, g.w_in = w, g.c_out = co, g.kh = kh, g.kw = kw, g.sh = sh, g.sw = sw, g.ph = ph,
    g.pw = pw;
    g.h_out = (h + 2 * ph - kh) / sh + 1;
    g.w_out = (w + 2 * pw - kw) / sw + 1;
    return g;
}
inline remat_conv_geom conv_geom(int64_t ci, int64_t h, int64_t w, int64_t co, int64_t k, int64_t s, int64_t p) {
    return conv_geom(ci, h, w, co, k, k, s, s, p, p);
}
// g with dilation (dh, dw): the output size of the dilated kernel d*(k-1)+1.
inline remat_conv_geom dilated(remat_conv_geom g, int64_t dh, int64_t dw) {
    g.dh = dh, g.dw = dw;
    g.h_out = (g.h_in + 2 * g.ph - dh * (g.kh - 1) - 1) / g.sh + 1;
    g.w_out = (g.w_in + 2 * g.pw - dw * (g.kw - 1) - 1) / g.sw + 1;
    return g;
}
// g with G groups (G divides c_in and c_out; G = c_in: depthwise).
inline remat_conv_geom grouped(remat_conv_geom g, int64_t G) {
    g.groups = G;
    return g;
}
// Elements of a conv weight [c_out, c_in / G, kh, kw].
inline int64_t conv_weight_elems(const remat_conv_geom &g) {
    return g.c_out * (g.c_in / remat_conv_groups(&g)) * g.kh * g.kw;
}

// Path of a shipped model, e.g. model_path("tiny-mlp-lif") -> "data/models/tiny-mlp-lif.json".
std::string model_path(const std::string &name);

// A model loaded from data/models (aborts the test on error).
struct Model {
    remat_model m{};
    explicit Model(const std::string &name);
    // The same with "precision" set (the file's text with the field added first).
    Model(const std::string &name, remat_precision precision);
    ~Model();
};

// A plan built in memory: every block stored (plain backpropagation), k = 1; set a
// block's options in blocks[b]. Copies own their blocks.
struct StoredPlan {
    remat_plan p{};
    std::vector<remat_block_plan> blocks;
    explicit StoredPlan(const remat_model &m) : blocks((size_t)m.n_blocks) {
        for (auto &b : blocks) {
            std::memset(&b, 0, sizeof b);
            b.k = 1;
        }
        p.n_blocks = m.n_blocks;
        p.blocks = blocks.data();
        p.text = const_cast<char *>("");
        p.path = const_cast<char *>("");
    }
    StoredPlan(const StoredPlan &o) : p(o.p), blocks(o.blocks) { p.blocks = blocks.data(); }
};

// Everything one step produces that the determinism contract covers.
struct StepOutput {
    double loss = 0;
    std::vector<std::vector<uint32_t>> grads;  // bit patterns, per (layer, trainable param)
    std::vector<std::vector<uint32_t>> after;  // running statistics after the step
    std::vector<uint32_t> input_grad;
    remat_step_result res{};
};

// One step (no optimiser) of model under plan on the reference backend.
// trace may be NULL. Returns false and fills err on failure.
bool run_step(const remat_model &m, const remat_plan &p, uint64_t seed, remat_trace *trace, StepOutput *out,
              remat_error *err, remat_fault fault = REMAT_FAULT_NONE, int threads = 1);

// n floats lo + (hi - lo) u, u = remat_rng_uniform(seed, stream, key, i) for i = 0 .. n-1:
// each test file's own inputs by its (seed, stream), the same on every run.
inline std::vector<float> rand_floats(size_t n, uint64_t seed, uint64_t stream, uint64_t key, float lo = -1.0f,
                                      float hi = 1.0f) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * remat_rng_uniform(seed, stream, key, i);
    return v;
}

// a and b hold the same floats bit for bit (sizes included).
inline bool bits_equal(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// v in double (for the double references of the kernel tests).
inline std::vector<double> to_double(const std::vector<float> &v) { return std::vector<double>(v.begin(), v.end()); }

// Index of the first differing element, or -1 when equal.
int64_t first_difference(const std::vector<uint32_t> &a, const std::vector<uint32_t> &b);

}  // namespace remat_test

#endif
