/* model_json.c - reads and validates model files (contract in core/model/model.h,
 * format in docs/model-and-plan-files.md).
 *
 * Modelling assumptions and limits:
 * - Dense layers only (linear, if, lif, batchnorm, add, dropout): every activation
 *   is [T, N, features]; the input shape has one dimension. Convolutions will add
 *   layer types whose out_features is C*H*W of their output.
 * - Value classes are decided statically: neurons emit BINARY spikes; `add` of two
 *   BINARY/INTEGER tensors is INTEGER; linear, batchnorm and dropout with p > 0
 *   are REAL; dropout with p == 0 keeps its input class.
 * - `add` sums its block's input and the output of the layer before it, so it is
 *   the last layer of its block, never the first, and both widths are equal.
 * - Absurd sizes are refused before anything allocates: T <= 2^20, N <= 2^24,
 *   widths <= 2^24, and every activation (T*N*features*4 bytes) and every weight
 *   (in*out*4 bytes) stays under 1 TiB (so no later product of two of them
 *   overflows int64).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/io/json_util.h"
#include "core/model/model.h"

#define MAX_T ((int64_t)1 << 20)
#define MAX_N ((int64_t)1 << 24)
#define MAX_FEATURES ((int64_t)1 << 24)
#define MAX_LAYERS 4096
#define TENSOR_BYTES_LIMIT ((int64_t)1 << 40)

static const char *const loss_names[] = {"rate_mse", "rate_ce"};
static const char *const opt_names[] = {"sgd", "adam"};
static const char *const surrogate_names[] = {"sigmoid", "atan"};
static const char *const kind_names[] = {"analog", "spikes"};

/* A double that must also be a finite float. */
static remat_status to_float(const json_ctx *c, const cJSON *obj, const char *prefix, const char *key, double d,
                             float *out) {
    if (!(fabs(d) <= FLT_MAX)) {
        char field[160];
        return json_fail_value(c, json_path(field, sizeof field, prefix, key), json_member(obj, key),
                               "a number within float range");
    }
    *out = (float)d;
    return REMAT_OK;
}

static remat_status get_float(const json_ctx *c, const cJSON *obj, const char *prefix, const char *key, double def,
                              float *out) {
    double d;
    remat_status st = json_get_number(c, obj, prefix, key, 0, def, &d);
    if (st) return st;
    return to_float(c, obj, prefix, key, d, out);
}

static remat_status range_fail(const json_ctx *c, const cJSON *obj, const char *prefix, const char *key,
                               const char *expected) {
    char field[160];
    return json_fail_value(c, json_path(field, sizeof field, prefix, key), json_member(obj, key), expected);
}

/* ---- top-level sections ------------------------------------------------- */

static remat_status parse_input(const json_ctx *c, const cJSON *root, remat_model *m) {
    static const char *const allowed[] = {"shape", "kind", "rate", NULL};
    const cJSON *in = json_member(root, "input");
    if (!in) return json_fail(c, "input", "missing (expected {\"shape\": [features], \"kind\": ...})");
    remat_status st = json_check_object(c, in, "input", allowed);
    if (st) return st;
    const cJSON *shape = json_member(in, "shape");
    if (!shape) return json_fail(c, "input.shape", "missing (expected [features])");
    if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) != 1)
        return json_fail_value(c, "input.shape", shape,
                               "[features] (one dimension: dense layers only until convolutions exist)");
    const cJSON *dim = shape->child;
    if (!cJSON_IsNumber(dim) || dim->valuedouble != floor(dim->valuedouble) || dim->valuedouble < 1 ||
        dim->valuedouble > (double)MAX_FEATURES) {
        char expected[64];
        snprintf(expected, sizeof expected, "an integer in [1, %lld]", (long long)MAX_FEATURES);
        return json_fail_value(c, "input.shape[0]", dim, expected);
    }
    m->in_ndim = 1;
    m->in_shape[0] = (int64_t)dim->valuedouble;
    m->in_features = m->in_shape[0];
    int kind = 0;
    st = json_get_enum(c, in, "input", "kind", 0, kind_names, 2, 0, &kind);
    if (st) return st;
    m->input_spikes = kind;
    if (!kind) {
        if (json_member(in, "rate"))
            return json_fail(c, "input.rate", "expected only with \"kind\": \"spikes\" (analog input is U[0,1))");
        m->input_rate = 0.0f;
        return REMAT_OK;
    }
    double rate;
    st = json_get_number(c, in, "input", "rate", 0, 0.3, &rate);
    if (st) return st;
    if (!(rate > 0.0 && rate <= 1.0)) return range_fail(c, in, "input", "rate", "a probability in (0, 1]");
    m->input_rate = (float)rate;
    return REMAT_OK;
}

static remat_status parse_optimizer(const json_ctx *c, const cJSON *root, remat_model *m) {
    static const char *const allowed[] = {"type", "lr", "momentum", "beta1", "beta2", "eps", NULL};
    remat_optimizer *o = &m->optimizer;
    const cJSON *j = json_member(root, "optimizer");
    int type = REMAT_OPT_SGD;
    if (j) {
        remat_status st = json_check_object(c, j, "optimizer", allowed);
        if (st) return st;
        st = json_get_enum(c, j, "optimizer", "type", 1, opt_names, 2, 0, &type);
        if (st) return st;
    }
    o->type = (remat_optimizer_type)type;
    const char *p = "optimizer";
    remat_status st;
    if (type == REMAT_OPT_SGD) {
        if (j && (json_member(j, "beta1") || json_member(j, "beta2") || json_member(j, "eps")))
            return json_fail(c, json_member(j, "beta1") ? "optimizer.beta1"
                                : json_member(j, "beta2") ? "optimizer.beta2" : "optimizer.eps",
                             "expected only with \"type\": \"adam\"");
        if ((st = get_float(c, j, p, "lr", 0.1, &o->lr))) return st;
        if ((st = get_float(c, j, p, "momentum", 0.9, &o->momentum))) return st;
        if (!(o->momentum >= 0.0f && o->momentum < 1.0f)) return range_fail(c, j, p, "momentum", "a number in [0, 1)");
    } else {
        if (json_member(j, "momentum")) return json_fail(c, "optimizer.momentum", "expected only with \"type\": \"sgd\"");
        if ((st = get_float(c, j, p, "lr", 1e-3, &o->lr))) return st;
        if ((st = get_float(c, j, p, "beta1", 0.9, &o->beta1))) return st;
        if ((st = get_float(c, j, p, "beta2", 0.999, &o->beta2))) return st;
        if ((st = get_float(c, j, p, "eps", 1e-8, &o->eps))) return st;
        if (!(o->beta1 >= 0.0f && o->beta1 < 1.0f)) return range_fail(c, j, p, "beta1", "a number in [0, 1)");
        if (!(o->beta2 >= 0.0f && o->beta2 < 1.0f)) return range_fail(c, j, p, "beta2", "a number in [0, 1)");
        if (!(o->eps > 0.0f)) return range_fail(c, j, p, "eps", "a number > 0");
    }
    if (!(o->lr > 0.0f)) return range_fail(c, j, p, "lr", "a number > 0");
    return REMAT_OK;
}

/* ---- layers ------------------------------------------------------------- */

static remat_status parse_neuron(const json_ctx *c, const cJSON *j, const char *p, int lif, remat_neuron_opts *n) {
    remat_status st;
    if ((st = get_float(c, j, p, "v_threshold", 1.0, &n->v_threshold))) return st;
    const cJSON *vr = json_member(j, "v_reset");
    if (vr && cJSON_IsNull(vr)) {
        n->soft_reset = 1;
        n->v_reset = 0.0f;
    } else {
        char field[160];
        if (vr && !cJSON_IsNumber(vr))
            return json_fail_value(c, json_path(field, sizeof field, p, "v_reset"), vr,
                                   "a number (hard reset) or null (soft reset)");
        if ((st = get_float(c, j, p, "v_reset", 0.0, &n->v_reset))) return st;
    }
    if ((st = json_get_bool(c, j, p, "detach_reset", 0, 0, &n->detach_reset))) return st;
    int sg = 0;
    if ((st = json_get_enum(c, j, p, "surrogate", 0, surrogate_names, 2, 0, &sg))) return st;
    n->surrogate = (remat_surrogate)sg;
    if ((st = get_float(c, j, p, "alpha", sg == REMAT_SURROGATE_ATAN ? 2.0 : 4.0, &n->alpha))) return st;
    if (!(n->alpha > 0.0f)) return range_fail(c, j, p, "alpha", "a number > 0");
    if (lif) {
        if ((st = get_float(c, j, p, "tau", 2.0, &n->tau))) return st;
        if (!(n->tau > 1.0f)) return range_fail(c, j, p, "tau", "a number > 1");
        if ((st = json_get_bool(c, j, p, "decay_input", 0, 1, &n->decay_input))) return st;
    } else {
        n->tau = 0.0f;
        n->decay_input = 0;
    }
    return REMAT_OK;
}

static const char *const *allowed_fields(remat_layer_type t) {
    static const char *const linear[] = {"name", "type", "in", "out", "bias", NULL};
    static const char *const neuron_if[] = {"name", "type", "v_threshold", "v_reset", "detach_reset",
                                            "surrogate", "alpha", NULL};
    static const char *const neuron_lif[] = {"name", "type", "v_threshold", "v_reset", "detach_reset", "surrogate",
                                             "alpha", "tau", "decay_input", NULL};
    static const char *const bn[] = {"name", "type", "features", NULL};
    static const char *const add[] = {"name", "type", NULL};
    static const char *const dropout[] = {"name", "type", "p", NULL};
    switch (t) {
    case REMAT_LAYER_LINEAR: return linear;
    case REMAT_LAYER_IF: return neuron_if;
    case REMAT_LAYER_LIF: return neuron_lif;
    case REMAT_LAYER_BATCHNORM: return bn;
    case REMAT_LAYER_ADD: return add;
    case REMAT_LAYER_DROPOUT: return dropout;
    default: return add;
    }
}

static remat_status parse_layer(const json_ctx *c, const cJSON *j, int i, int64_t in_features, remat_layer *l) {
    char p[32], field[160];
    json_index_path(p, sizeof p, "layers", i);
    if (!cJSON_IsObject(j)) return json_fail_value(c, p, j, "a layer object {\"name\": ..., \"type\": ...}");
    remat_status st = json_get_name(c, j, p, "name", l->name, sizeof l->name);
    if (st) return st;
    static const char *const type_names[] = {"linear", "if", "lif", "batchnorm", "add", "dropout"};
    int type;
    if ((st = json_get_enum(c, j, p, "type", 1, type_names, REMAT_LAYER_COUNT, 0, &type))) return st;
    l->type = (remat_layer_type)type;
    if ((st = json_check_object(c, j, p, allowed_fields(l->type)))) return st;
    l->in_features = in_features;
    l->out_features = in_features;
    switch (l->type) {
    case REMAT_LAYER_LINEAR: {
        int64_t declared_in;
        if ((st = json_get_int(c, j, p, "in", 0, in_features, 1, MAX_FEATURES, &declared_in))) return st;
        if (declared_in != in_features)
            return json_fail(c, json_path(field, sizeof field, p, "in"),
                             "expected %lld (the width of its input), got %lld", (long long)in_features,
                             (long long)declared_in);
        if ((st = json_get_int(c, j, p, "out", 1, 0, 1, MAX_FEATURES, &l->out_features))) return st;
        if ((st = json_get_bool(c, j, p, "bias", 0, 1, &l->has_bias))) return st;
        break;
    }
    case REMAT_LAYER_IF:
    case REMAT_LAYER_LIF:
        if ((st = parse_neuron(c, j, p, l->type == REMAT_LAYER_LIF, &l->neuron))) return st;
        break;
    case REMAT_LAYER_BATCHNORM: {
        int64_t declared;
        if ((st = json_get_int(c, j, p, "features", 0, in_features, 1, MAX_FEATURES, &declared))) return st;
        if (declared != in_features)
            return json_fail(c, json_path(field, sizeof field, p, "features"),
                             "expected %lld (the width of its input), got %lld", (long long)in_features,
                             (long long)declared);
        break;
    }
    case REMAT_LAYER_DROPOUT: {
        double pr;
        if ((st = json_get_number(c, j, p, "p", 0, 0.5, &pr))) return st;
        if (!(pr >= 0.0 && pr < 1.0 && (float)pr < 1.0f))
            return range_fail(c, j, p, "p", "a probability in [0, 1)");
        l->p = (float)pr;
        break;
    }
    case REMAT_LAYER_ADD:
    default:
        break;
    }
    return REMAT_OK;
}

static remat_status parse_layers(const json_ctx *c, const cJSON *root, remat_model *m, remat_error *err) {
    const cJSON *arr = json_member(root, "layers");
    if (!arr) return json_fail(c, "layers", "missing (expected an array of layers)");
    char expected[64];
    snprintf(expected, sizeof expected, "an array of 1 to %d layers", MAX_LAYERS);
    if (!cJSON_IsArray(arr)) return json_fail_value(c, "layers", arr, expected);
    int n = cJSON_GetArraySize(arr);
    if (n < 1 || n > MAX_LAYERS) return json_fail(c, "layers", "expected %s, got %d", expected, n);
    m->layers = remat_xcalloc((size_t)n, sizeof *m->layers, err);
    if (!m->layers) return REMAT_ERR_NOMEM;
    m->n_layers = n;
    int64_t width = m->in_features;
    int i = 0;
    for (const cJSON *j = arr->child; j; j = j->next, i++) {
        remat_status st = parse_layer(c, j, i, width, &m->layers[i]);
        if (st) return st;
        for (int k = 0; k < i; k++)
            if (!strcmp(m->layers[k].name, m->layers[i].name)) {
                char field[48];
                snprintf(field, sizeof field, "layers[%d].name", i);
                return json_fail(c, field, "expected a unique name, got \"%s\" (also layers[%d])", m->layers[i].name,
                                 k);
            }
        width = m->layers[i].out_features;
    }
    return REMAT_OK;
}

/* ---- blocks ------------------------------------------------------------- */

static remat_status parse_blocks(const json_ctx *c, const cJSON *root, remat_model *m, remat_error *err) {
    static const char *const allowed[] = {"name", "layers", NULL};
    const cJSON *arr = json_member(root, "blocks");
    if (!arr) return json_fail(c, "blocks", "missing (expected an array of blocks)");
    if (!cJSON_IsArray(arr)) return json_fail_value(c, "blocks", arr, "an array of blocks");
    int n = cJSON_GetArraySize(arr);
    if (n < 1 || n > m->n_layers)
        return json_fail(c, "blocks", "expected 1 to %d blocks (one layer at least each), got %d", m->n_layers, n);
    m->blocks = remat_xcalloc((size_t)n, sizeof *m->blocks, err);
    if (!m->blocks) return REMAT_ERR_NOMEM;
    m->n_blocks = n;
    int next = 0; /* the next layer a block must list */
    int b = 0;
    for (const cJSON *j = arr->child; j; j = j->next, b++) {
        char p[32], field[160];
        json_index_path(p, sizeof p, "blocks", b);
        remat_status st = json_check_object(c, j, p, allowed);
        if (st) return st;
        remat_block *blk = &m->blocks[b];
        if ((st = json_get_name(c, j, p, "name", blk->name, sizeof blk->name))) return st;
        for (int k = 0; k < b; k++)
            if (!strcmp(m->blocks[k].name, blk->name))
                return json_fail(c, json_path(field, sizeof field, p, "name"),
                                 "expected a unique name, got \"%s\" (also blocks[%d])", blk->name, k);
        const cJSON *ls = json_member(j, "layers");
        json_path(field, sizeof field, p, "layers");
        if (!ls) return json_fail(c, field, "missing (expected an array of layer names)");
        if (!cJSON_IsArray(ls) || cJSON_GetArraySize(ls) < 1)
            return json_fail_value(c, field, ls, "a non-empty array of layer names");
        blk->first_layer = next;
        int li = 0;
        for (const cJSON *e = ls->child; e; e = e->next, li++) {
            char ef[192], name[REMAT_NAME_LEN];
            snprintf(ef, sizeof ef, "%s[%d]", field, li);
            if ((st = json_check_name(c, e, ef, name, sizeof name))) return st;
            int idx = remat_model_find_layer(m, name);
            if (idx < 0) return json_fail(c, ef, "expected a layer of this model, got \"%s\"", name);
            if (next >= m->n_layers || idx != next) {
                if (idx < next)
                    return json_fail(c, ef, "expected each layer in one block only, got \"%s\" a second time", name);
                return json_fail(c, ef,
                                 "expected \"%s\" (blocks are consecutive runs covering every layer in order), got "
                                 "\"%s\"",
                                 m->layers[next].name, name);
            }
            m->layers[idx].block = b;
            next++;
        }
        blk->n_layers = next - blk->first_layer;
    }
    if (next != m->n_layers)
        return json_fail(c, "blocks", "expected every layer in a block, but \"%s\" and later layers are in none",
                         m->layers[next].name);
    return REMAT_OK;
}

/* Value classes, block flags and the structural rules of `add`. */
static remat_status derive(const json_ctx *c, remat_model *m) {
    for (int b = 0; b < m->n_blocks; b++) {
        remat_block *blk = &m->blocks[b];
        blk->in_values = b == 0 ? (m->input_spikes ? REMAT_VALUES_BINARY : REMAT_VALUES_REAL)
                                : m->layers[blk->first_layer - 1].out_values;
        int64_t block_in = m->layers[blk->first_layer].in_features;
        remat_value_class prev = blk->in_values;
        for (int i = blk->first_layer; i < blk->first_layer + blk->n_layers; i++) {
            remat_layer *l = &m->layers[i];
            char field[48];
            snprintf(field, sizeof field, "layers[%d].type", i);
            switch (l->type) {
            case REMAT_LAYER_IF:
            case REMAT_LAYER_LIF: l->out_values = REMAT_VALUES_BINARY; break;
            case REMAT_LAYER_LINEAR:
            case REMAT_LAYER_BATCHNORM: l->out_values = REMAT_VALUES_REAL; break;
            case REMAT_LAYER_DROPOUT: l->out_values = l->p > 0.0f ? REMAT_VALUES_REAL : prev; break;
            case REMAT_LAYER_ADD:
                if (i == blk->first_layer || i != blk->first_layer + blk->n_layers - 1)
                    return json_fail(c, field,
                                     "expected \"add\" as the last layer of its block after at least one other "
                                     "(it sums the block input and the layer before it); \"%s\" is %s of block "
                                     "\"%s\"",
                                     l->name, i == blk->first_layer ? "the first layer" : "not the last layer",
                                     blk->name);
                if (l->in_features != block_in)
                    return json_fail(c, field,
                                     "expected the input width of \"add\" (%lld) to equal the width of the input "
                                     "of block \"%s\" (%lld)",
                                     (long long)l->in_features, blk->name, (long long)block_in);
                l->out_values = (prev != REMAT_VALUES_REAL && blk->in_values != REMAT_VALUES_REAL)
                                    ? REMAT_VALUES_INTEGER
                                    : REMAT_VALUES_REAL;
                blk->has_add = 1;
                break;
            default: l->out_values = REMAT_VALUES_REAL; break;
            }
            if (l->type == REMAT_LAYER_BATCHNORM) blk->has_batchnorm = 1;
            prev = l->out_values;
        }
    }
    const remat_layer *last = &m->layers[m->n_layers - 1];
    if (last->out_features != m->classes) {
        char field[48];
        snprintf(field, sizeof field, "layers[%d]", m->n_layers - 1);
        return json_fail(c, field, "expected the last layer (\"%s\") to output classes = %lld features, got %lld",
                         last->name, (long long)m->classes, (long long)last->out_features);
    }
    return REMAT_OK;
}

/* Size limits that depend on T and N (also re-checked by remat_model_rescale). */
static remat_status check_sizes(const json_ctx *c, const remat_model *m) {
    int64_t rows = json_mul_capped(m->T, m->N, TENSOR_BYTES_LIMIT);
    if (rows < 0 || json_mul_capped(json_mul_capped(rows, m->in_features, TENSOR_BYTES_LIMIT), 4,
                                    TENSOR_BYTES_LIMIT) < 0)
        return json_fail(c, "input.shape",
                         "expected T*N*features*4 bytes under 1 TiB, got T=%lld, N=%lld, features=%lld",
                         (long long)m->T, (long long)m->N, (long long)m->in_features);
    for (int i = 0; i < m->n_layers; i++) {
        const remat_layer *l = &m->layers[i];
        int64_t w = l->out_features > l->in_features ? l->out_features : l->in_features;
        int64_t act = rows < 0 ? -1 : json_mul_capped(rows, w, TENSOR_BYTES_LIMIT);
        act = act < 0 ? -1 : json_mul_capped(act, 4, TENSOR_BYTES_LIMIT);
        char field[48];
        snprintf(field, sizeof field, "layers[%d]", i);
        if (act < 0)
            return json_fail(c, field,
                             "expected activations under 1 TiB, got T*N*features*4 with T=%lld, N=%lld, "
                             "features=%lld",
                             (long long)m->T, (long long)m->N, (long long)w);
        if (l->type == REMAT_LAYER_LINEAR) {
            int64_t wb = json_mul_capped(json_mul_capped(l->in_features, l->out_features, TENSOR_BYTES_LIMIT), 4,
                                         TENSOR_BYTES_LIMIT);
            if (json_mul_capped(l->in_features, l->out_features, TENSOR_BYTES_LIMIT) < 0 || wb < 0)
                return json_fail(c, field, "expected a weight under 1 TiB, got in=%lld x out=%lld floats",
                                 (long long)l->in_features, (long long)l->out_features);
        }
    }
    return REMAT_OK;
}

static remat_status parse_model(const json_ctx *c, const cJSON *root, remat_model *m, remat_error *err) {
    static const char *const allowed[] = {"name", "description", "T", "N", "input", "classes", "loss",
                                          "optimizer", "init_gain", "layers", "blocks", NULL};
    remat_status st = json_check_object(c, root, "", allowed);
    if (st) return st;
    if ((st = json_get_name(c, root, "", "name", m->name, sizeof m->name))) return st;
    const cJSON *d = json_member(root, "description");
    if (d && !cJSON_IsString(d)) return json_fail_value(c, "description", d, "a string");
    if ((st = json_get_int(c, root, "", "T", 1, 0, 1, MAX_T, &m->T))) return st;
    if ((st = json_get_int(c, root, "", "N", 1, 0, 1, MAX_N, &m->N))) return st;
    if ((st = parse_input(c, root, m))) return st;
    if ((st = json_get_int(c, root, "", "classes", 1, 0, 1, MAX_FEATURES, &m->classes))) return st;
    int loss = 0;
    if ((st = json_get_enum(c, root, "", "loss", 0, loss_names, 2, 0, &loss))) return st;
    m->loss = (remat_loss_type)loss;
    if ((st = parse_optimizer(c, root, m))) return st;
    double gain = 1.0;
    if ((st = json_get_number(c, root, "", "init_gain", 0, 1.0, &gain))) return st;
    if (!(gain > 0.0 && gain <= 100.0))
        return json_fail_value(c, "init_gain", json_member(root, "init_gain"), "a number in (0, 100]");
    m->init_gain = (float)gain;
    if ((st = parse_layers(c, root, m, err))) return st;
    if ((st = parse_blocks(c, root, m, err))) return st;
    if ((st = derive(c, m))) return st;
    return check_sizes(c, m);
}

remat_status remat_model_parse(const char *text, size_t len, const char *origin, remat_model *out,
                               remat_error *err) {
    if (!out) return remat_error_set(err, REMAT_ERR_INTERNAL, "remat_model_parse: no output model");
    memset(out, 0, sizeof *out);
    if (!origin) origin = "<model>";
    json_ctx c = {origin, err};
    cJSON *root = NULL;
    char *copy = NULL;
    remat_status st = json_parse_root(text, len, origin, &root, &copy, err);
    if (st) return st;
    st = parse_model(&c, root, out, err);
    cJSON_Delete(root);
    if (st == REMAT_OK) {
        out->text = copy;
        copy = NULL;
        out->path = json_strdup(origin, err);
        if (!out->path) st = REMAT_ERR_NOMEM;
    }
    remat_xfree(copy);
    if (st) remat_model_free(out);
    return st;
}

remat_status remat_model_load(const char *path, remat_model *out, remat_error *err) {
    if (out) memset(out, 0, sizeof *out);
    char *text = NULL;
    size_t len = 0;
    remat_status st = json_read_file(path, &text, &len, err);
    if (st) return st;
    st = remat_model_parse(text, len, path, out, err);
    remat_xfree(text);
    return st;
}

/* The model text with "T" and "N" replaced (a copy through remat_xmalloc). */
static char *rescaled_text(const char *text, int64_t T, int64_t N, const char *origin, remat_error *err) {
    if (!text || !text[0]) return json_strdup("", err);
    json_install_hooks();
    cJSON *root = cJSON_Parse(text);
    if (!root) {
        remat_error_set(err, REMAT_ERR_INTERNAL, "%s: (file): the stored model text no longer parses", origin);
        return NULL;
    }
    cJSON_ReplaceItemInObjectCaseSensitive(root, "T", cJSON_CreateNumber((double)T));
    cJSON_ReplaceItemInObjectCaseSensitive(root, "N", cJSON_CreateNumber((double)N));
    char *printed = cJSON_Print(root);
    cJSON_Delete(root);
    if (!printed) {
        remat_error_set(err, REMAT_ERR_NOMEM, "out of memory printing the rescaled model");
        return NULL;
    }
    char *copy = json_strdup(printed, err);
    cJSON_free(printed);
    return copy;
}

remat_status remat_model_rescale(const remat_model *m, int64_t T, int64_t N, remat_model *out, remat_error *err) {
    if (!m || !out) return remat_error_set(err, REMAT_ERR_INTERNAL, "remat_model_rescale: null model");
    memset(out, 0, sizeof *out);
    const char *origin = m->path && m->path[0] ? m->path : "<model>";
    json_ctx c = {origin, err};
    if (T < 0 || T > MAX_T)
        return json_fail(&c, "T", "expected an integer in [1, %lld], got %lld", (long long)MAX_T,
                         (long long)T);
    if (N < 0 || N > MAX_N)
        return json_fail(&c, "N", "expected an integer in [1, %lld], got %lld", (long long)MAX_N, (long long)N);
    *out = *m;
    out->layers = NULL;
    out->blocks = NULL;
    out->text = NULL;
    out->path = NULL;
    if (T) out->T = T;
    if (N) out->N = N;
    remat_model probe = *m; /* the new sizes against the original layers */
    probe.T = out->T;
    probe.N = out->N;
    remat_status st = check_sizes(&c, &probe);
    if (st) {
        memset(out, 0, sizeof *out);
        return st;
    }
    out->layers = remat_xmalloc((size_t)m->n_layers * sizeof *m->layers, err);
    out->blocks = remat_xmalloc((size_t)m->n_blocks * sizeof *m->blocks, err);
    out->path = json_strdup(origin, err);
    if (out->layers && out->blocks && out->path) {
        memcpy(out->layers, m->layers, (size_t)m->n_layers * sizeof *m->layers);
        memcpy(out->blocks, m->blocks, (size_t)m->n_blocks * sizeof *m->blocks);
        out->text = rescaled_text(m->text, out->T, out->N, origin, err);
    }
    if (!out->layers || !out->blocks || !out->path || !out->text) {
        st = err && err->status ? err->status : REMAT_ERR_NOMEM;
        remat_model_free(out);
        return st;
    }
    return REMAT_OK;
}

void remat_model_free(remat_model *m) {
    if (!m) return;
    remat_xfree(m->layers);
    remat_xfree(m->blocks);
    remat_xfree(m->text);
    remat_xfree(m->path);
    memset(m, 0, sizeof *m);
}

int remat_model_find_layer(const remat_model *m, const char *name) {
    if (!m || !name) return -1;
    for (int i = 0; i < m->n_layers; i++)
        if (!strcmp(m->layers[i].name, name)) return i;
    return -1;
}

int remat_model_find_block(const remat_model *m, const char *name) {
    if (!m || !name) return -1;
    for (int i = 0; i < m->n_blocks; i++)
        if (!strcmp(m->blocks[i].name, name)) return i;
    return -1;
}

int remat_layer_n_params(const remat_layer *l) {
    if (!l) return 0;
    switch (l->type) {
    case REMAT_LAYER_LINEAR: return l->has_bias ? 2 : 1;
    case REMAT_LAYER_BATCHNORM: return 4;
    default: return 0;
    }
}

const char *remat_layer_param_name(const remat_layer *l, int i) {
    static const char *const linear[] = {"weight", "bias"};
    static const char *const bn[] = {"weight", "bias", "running_mean", "running_var"};
    if (i < 0 || i >= remat_layer_n_params(l)) return NULL;
    return l->type == REMAT_LAYER_LINEAR ? linear[i] : bn[i];
}

int64_t remat_layer_param_elems(const remat_layer *l, int i) {
    if (i < 0 || i >= remat_layer_n_params(l)) return 0;
    if (l->type == REMAT_LAYER_LINEAR) return i == 0 ? l->out_features * l->in_features : l->out_features;
    return l->in_features; /* batchnorm: one value per feature */
}

int remat_layer_param_trainable(const remat_layer *l, int i) {
    if (i < 0 || i >= remat_layer_n_params(l)) return 0;
    return l->type == REMAT_LAYER_LINEAR || i < 2;
}
