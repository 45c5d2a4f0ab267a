// testutil.cc - shared test helpers.
#include "tests/testutil.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/exec/backend.h"

namespace remat_test {

std::string model_path(const std::string &name) { return "data/models/" + name + ".json"; }

Model::Model(const std::string &name) {
    remat_error err{};
    if (remat_model_load(model_path(name).c_str(), &m, &err) != REMAT_OK)
        throw std::runtime_error(std::string("cannot load model: ") + err.msg);
}

Model::Model(const std::string &name, remat_precision precision) {
    std::ifstream f(model_path(name));
    std::stringstream ss;
    ss << f.rdbuf();
    std::string text = ss.str();
    size_t brace = text.find('{');
    if (!f || brace == std::string::npos) throw std::runtime_error("cannot read model " + name);
    text.insert(brace + 1, std::string("\"precision\": \"") + remat_precision_name(precision) + "\", ");
    remat_error err{};
    if (remat_model_parse(text.data(), text.size(), model_path(name).c_str(), &m, &err) != REMAT_OK)
        throw std::runtime_error(std::string("cannot parse model: ") + err.msg);
}

Model::~Model() { remat_model_free(&m); }

static std::vector<uint32_t> bits(const std::vector<float> &v) {
    std::vector<uint32_t> b(v.size());
    if (!v.empty()) std::memcpy(b.data(), v.data(), v.size() * 4);
    return b;
}

bool run_step(const remat_model &m, const remat_plan &p, uint64_t seed, remat_trace *trace, StepOutput *out,
              remat_error *err, remat_fault fault, int threads) {
    remat_backend be{};
    if (remat_backend_ref_init(&be, threads, err) != REMAT_OK) return false;
    remat_exec_opts o = remat_exec_opts_default();
    o.seed = seed;
    o.trace = trace;
    o.fault = fault;
    o.check_compression = 1;
    remat_session *s = remat_session_init(&m, &p, &be, &o, err);
    if (!s) {
        remat_backend_free(&be);
        return false;
    }
    bool ok = remat_session_step(s, 0, &out->res, err) == REMAT_OK;
    out->loss = out->res.loss;
    for (int j = 0; ok && j < m.n_layers; j++) {
        const remat_layer *l = &m.layers[j];
        for (int i = 0; i < remat_layer_n_params(l); i++) {
            std::vector<float> v((size_t)remat_layer_param_elems(l, i));
            if (remat_layer_param_trainable(l, i)) {
                ok = ok && remat_session_get_grad(s, j, i, v.data(), err) == REMAT_OK;
                out->grads.push_back(bits(v));
            } else {
                ok = ok && remat_session_get_param(s, j, i, v.data(), err) == REMAT_OK;
                out->after.push_back(bits(v));
            }
        }
    }
    if (ok) {
        std::vector<float> g((size_t)(m.T * m.N * m.in_features));
        ok = remat_session_get_input_grad(s, g.data(), err) == REMAT_OK;
        out->input_grad = bits(g);
    }
    remat_session_free(s);
    remat_backend_free(&be);
    return ok;
}

int64_t first_difference(const std::vector<uint32_t> &a, const std::vector<uint32_t> &b) {
    if (a.size() != b.size()) return 0;
    for (size_t i = 0; i < a.size(); i++)
        if (a[i] != b[i]) return (int64_t)i;
    return -1;
}

}  // namespace remat_test
