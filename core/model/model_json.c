/* model_json.c - reads and validates model files (contract in core/model/model.h,
 * format in docs/model-and-plan-files.md).
 *
 * Modelling assumptions and limits:
 * - What each layer type accepts, its output shape and value class: the traits
 *   table (core/model/layers.c). This file reads the generic parts: the input
 *   shape ([features] or [C, H, W]), names, the "input"/"from" sources, blocks.
 * - A branch ("input" or add's "from") reads a layer of its own block or the
 *   block's input, so a block is a unit a plan can checkpoint whole; add with its
 *   default operand (the block input) is the last layer of its block, not the first.
 * - An activation holds at most 2^31 elements per time step and sample.
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
#include "core/model/layers.h"
#include "core/model/model.h"

#define MAX_T ((int64_t)1 << 20)
#define MAX_N ((int64_t)1 << 24)
#define MAX_FEATURES ((int64_t)1 << 24)
#define MAX_LAYERS 4096
#define TENSOR_BYTES_LIMIT (((int64_t)1 << 40) - 1) /* the largest size "under 1 TiB" */

static const char *const loss_names[] = {"rate_mse", "rate_ce"};
static const char *const opt_names[] = {"sgd", "adam"};
static const char *const kind_names[] = {"analog", "spikes", "counts"};
static const char *const precision_names[] = {"fp32", "bf16"}; /* remat_precision order */

/* ---- top-level sections ------------------------------------------------- */

static remat_status parse_input(const json_ctx *c, const cJSON *root, remat_model *m) {
    static const char *const allowed[] = {"shape", "kind", "rate", "max", NULL};
    const cJSON *in = remat_json_member(root, "input");
    if (!in) return remat_json_fail(c, "input", "missing (expected {\"shape\": [features], \"kind\": ...})");
    remat_status st = remat_json_check_object(c, in, "input", allowed);
    if (st) return st;
    const cJSON *shape = remat_json_member(in, "shape");
    const char *want = "[features], [C, L] or [C, H, W] (positive integers)";
    if (!shape) return remat_json_fail(c, "input.shape", "missing (expected %s)", want);
    int nd = cJSON_IsArray(shape) ? cJSON_GetArraySize(shape) : 0;
    if (cJSON_IsArray(shape) && (nd < 1 || nd > 3))
        return remat_json_fail(c, "input.shape",
                               "expected %s, got %d dimension%s (one sample's shape: T and N are the model's \"T\" and "
                               "\"N\", not part of it)",
                               want, nd, nd == 1 ? "" : "s");
    if (nd < 1 || nd > 3) return remat_json_fail_value(c, "input.shape", shape, want);
    int i = 0;
    for (const cJSON *dim = shape->child; dim; dim = dim->next, i++) {
        if (!cJSON_IsNumber(dim) || dim->valuedouble != floor(dim->valuedouble) || dim->valuedouble < 1 ||
            dim->valuedouble > (double)MAX_FEATURES) {
            char expected[64], field[32];
            snprintf(expected, sizeof expected, "an integer in [1, %lld]", (long long)MAX_FEATURES);
            snprintf(field, sizeof field, "input.shape[%d]", i);
            return remat_json_fail_value(c, field, dim, expected);
        }
        m->in_shape[i] = (int64_t)dim->valuedouble;
    }
    m->in_ndim = nd;
    /* [C, L] (audio: conv1d, 1-D pooling) is held as [C, 1, L] with nd 2 */
    m->in = nd == 1   ? (remat_shape){m->in_shape[0], 1, 1, 1}
            : nd == 2 ? (remat_shape){m->in_shape[0], 1, m->in_shape[1], 2}
                      : (remat_shape){m->in_shape[0], m->in_shape[1], m->in_shape[2], 3};
    m->in_features = remat_mul_capped(remat_mul_capped(m->in.c, m->in.h, MAX_FEATURES * MAX_FEATURES), m->in.w,
                                     (int64_t)1 << 31);
    if (m->in_features < 0)
        return remat_json_fail(c, "input.shape", "expected at most 2^31 elements per sample, got %lld x %lld x %lld",
                               (long long)m->in.c, (long long)m->in.h, (long long)m->in.w);
    int kind = 0;
    st = remat_json_get_enum(c, in, "input", "kind", 0, kind_names, 3, 0, &kind);
    if (st) return st;
    m->input_spikes = kind == 1;
    m->input_counts_max = 0;
    if (kind != 2 && remat_json_member(in, "max"))
        return remat_json_fail(c, "input.max", "expected only with \"kind\": \"counts\"");
    if (kind == 2) { /* DVS frames: counts of events per pixel, drawn in 0..max */
        if (remat_json_member(in, "rate"))
            return remat_json_fail(c, "input.rate", "expected only with \"kind\": \"spikes\"");
        int64_t mx;
        if ((st = remat_json_get_int(c, in, "input", "max", 1, 0, 1, 65535, &mx))) return st;
        m->input_counts_max = (int32_t)mx;
        m->input_rate = 0.0f;
        return REMAT_OK;
    }
    if (!kind) {
        if (remat_json_member(in, "rate"))
            return remat_json_fail(c, "input.rate", "expected only with \"kind\": \"spikes\" (analog input is U[0,1))");
        m->input_rate = 0.0f;
        return REMAT_OK;
    }
    double rate;
    st = remat_json_get_number(c, in, "input", "rate", 0, 0.3, &rate);
    if (st) return st;
    if (!(rate > 0.0 && rate <= 1.0)) return remat_json_fail_range(c, in, "input", "rate", "a probability in (0, 1]");
    m->input_rate = (float)rate;
    return REMAT_OK;
}

static remat_status parse_optimizer(const json_ctx *c, const cJSON *root, remat_model *m) {
    static const char *const allowed[] = {"type", "lr", "momentum", "beta1", "beta2", "eps", NULL};
    remat_optimizer *o = &m->optimizer;
    const cJSON *j = remat_json_member(root, "optimizer");
    int type = REMAT_OPT_SGD;
    if (j) {
        remat_status st = remat_json_check_object(c, j, "optimizer", allowed);
        if (st) return st;
        st = remat_json_get_enum(c, j, "optimizer", "type", 1, opt_names, 2, 0, &type);
        if (st) return st;
    }
    o->type = (remat_optimizer_type)type;
    const char *p = "optimizer";
    remat_status st;
    if (type == REMAT_OPT_SGD) {
        if (j && (remat_json_member(j, "beta1") || remat_json_member(j, "beta2") || remat_json_member(j, "eps")))
            return remat_json_fail(c,
                                   remat_json_member(j, "beta1")   ? "optimizer.beta1"
                                   : remat_json_member(j, "beta2") ? "optimizer.beta2"
                                                                   : "optimizer.eps",
                                   "expected only with \"type\": \"adam\"");
        if ((st = remat_json_get_float(c, j, p, "lr", 0.1, &o->lr))) return st;
        if ((st = remat_json_get_float(c, j, p, "momentum", 0.9, &o->momentum))) return st;
        if (!(o->momentum >= 0.0f && o->momentum < 1.0f))
            return remat_json_fail_range(c, j, p, "momentum", "a number in [0, 1)");
    } else {
        if (remat_json_member(j, "momentum"))
            return remat_json_fail(c, "optimizer.momentum", "expected only with \"type\": \"sgd\"");
        if ((st = remat_json_get_float(c, j, p, "lr", 1e-3, &o->lr))) return st;
        if ((st = remat_json_get_float(c, j, p, "beta1", 0.9, &o->beta1))) return st;
        if ((st = remat_json_get_float(c, j, p, "beta2", 0.999, &o->beta2))) return st;
        if ((st = remat_json_get_float(c, j, p, "eps", 1e-8, &o->eps))) return st;
        if (!(o->beta1 >= 0.0f && o->beta1 < 1.0f))
            return remat_json_fail_range(c, j, p, "beta1", "a number in [0, 1)");
        if (!(o->beta2 >= 0.0f && o->beta2 < 1.0f))
            return remat_json_fail_range(c, j, p, "beta2", "a number in [0, 1)");
        if (!(o->eps > 0.0f)) return remat_json_fail_range(c, j, p, "eps", "a number > 0");
    }
    if (!(o->lr > 0.0f)) return remat_json_fail_range(c, j, p, "lr", "a number > 0");
    return REMAT_OK;
}

/* ---- layers ------------------------------------------------------------- */

/* The layer named by `key` ("input" for the network input) as a source index:
 * an earlier layer of this model. Absent: *src stays as it is. */
static remat_status parse_source(const json_ctx *c, const cJSON *j, const char *p, const char *key,
                                 const remat_model *m, int *src) {
    const cJSON *v = remat_json_member(j, key);
    if (!v) return REMAT_OK;
    char field[160], name[REMAT_NAME_LEN];
    remat_json_path(field, sizeof field, p, key);
    remat_status st = remat_json_check_name(c, v, field, name, sizeof name);
    if (st) return st;
    if (!strcmp(name, "input")) {
        *src = REMAT_SRC_INPUT;
        return REMAT_OK;
    }
    int k = remat_model_find_layer(m, name); /* the layers before this one */
    if (k >= 0) {
        *src = k;
        return REMAT_OK;
    }
    const char *what = "no such layer";
    for (const cJSON *o = j; o; o = o->next) { /* this layer and the later ones */
        const cJSON *n = remat_json_member(o, "name");
        if (cJSON_IsString(n) && !strcmp(n->valuestring, name)) {
            what = o == j ? "the layer itself" : "a later layer";
            break;
        }
    }
    return remat_json_fail(c, field, "expected an earlier layer or \"input\", got \"%s\" (%s)", name, what);
}

/* The index of the block of `blocks` (the file's array, not yet parsed) that lists the
 * layer `name`; -1 when none does or the array is malformed (parse_blocks reports that). */
static int listed_block(const cJSON *blocks, const char *name) {
    int b = 0;
    for (const cJSON *o = cJSON_IsArray(blocks) ? blocks->child : NULL; o; o = o->next, b++) {
        const cJSON *ls = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "layers") : NULL;
        for (const cJSON *n = cJSON_IsArray(ls) ? ls->child : NULL; n; n = n->next)
            if (cJSON_IsString(n) && !strcmp(n->valuestring, name)) return b;
    }
    return -1;
}

/* The branch rule at the layer that breaks it (before its shapes are checked against a
 * source it may not read): a source named by `key` must be a layer of the reader's
 * block or the block's input. Layers 0..i are parsed; the blocks come from the file. */
/* The branch rule's refusal: layer i's source (key) lies before the block named
 * block, whose input is first_name. Every name is echoed sanitised (a block name is
 * not checked yet when the early check runs). */
static remat_status fail_branch(const json_ctx *c, int i, const char *key, const char *block, const char *first_name,
                                const char *src_name) {
    char field[48], b[48], f[48], s[48];
    snprintf(field, sizeof field, "layers[%d].%s", i, key);
    return remat_json_fail(c, field,
                           "expected a layer of block \"%s\" or its input (\"%s\"), got \"%s\" (a branch stays "
                           "inside its block)",
                           remat_json_sanitize(block, b, sizeof b), remat_json_sanitize(first_name, f, sizeof f),
                           remat_json_sanitize(src_name, s, sizeof s));
}

static remat_status early_branch_check(const json_ctx *c, const cJSON *blocks, const remat_model *m, int i, int src,
                                       const char *key) {
    int b = listed_block(blocks, m->layers[i].name);
    if (b < 0) return REMAT_OK;
    int first = i;
    while (first > 0 && listed_block(blocks, m->layers[first - 1].name) == b) first--;
    if (src >= first - 1) return REMAT_OK;
    const cJSON *bo = cJSON_GetArrayItem(blocks, b);
    const cJSON *bn = bo ? cJSON_GetObjectItemCaseSensitive(bo, "name") : NULL;
    return fail_branch(c, i, key, cJSON_IsString(bn) ? bn->valuestring : "?",
                       first > 0 ? m->layers[first - 1].name : "input",
                       src == REMAT_SRC_INPUT ? "input" : m->layers[src].name);
}

static remat_shape source_shape(const remat_model *m, int src) {
    return src == REMAT_SRC_INPUT ? m->in : m->layers[src].out;
}

#define MAX_ALLOWED 16

static remat_status parse_layer(const json_ctx *c, const cJSON *j, int i, remat_model *m, const cJSON *blocks) {
    remat_layer *l = &m->layers[i];
    char p[32];
    remat_json_index_path(p, sizeof p, "layers", i);
    if (!cJSON_IsObject(j)) return remat_json_fail_value(c, p, j, "a layer object {\"name\": ..., \"type\": ...}");
    remat_status st = remat_json_get_name(c, j, p, "name", l->name, sizeof l->name);
    if (st) return st;
    if (!strcmp(l->name, "input")) {
        char field[48];
        return remat_json_fail(c, remat_json_path(field, sizeof field, p, "name"),
                               "expected a name other than \"input\" (it names the network input)");
    }
    const char *type_names[REMAT_LAYER_COUNT];
    for (int t = 0; t < REMAT_LAYER_COUNT; t++) type_names[t] = remat_layer_type_name((remat_layer_type)t);
    int type;
    if ((st = remat_json_get_enum(c, j, p, "type", 1, type_names, REMAT_LAYER_COUNT, 0, &type))) return st;
    l->type = (remat_layer_type)type;
    const remat_layer_traits *tr = remat_layer_traits_of(l->type);
    const char *allowed[MAX_ALLOWED] = {"name", "type", "input"};
    int na = 3;
    for (const char *const *f = tr->fields; *f && na + 1 < MAX_ALLOWED; f++) allowed[na++] = *f;
    allowed[na] = NULL;
    if ((st = remat_json_check_object(c, j, p, allowed))) return st;
    l->src = i - 1;
    l->src2 = REMAT_SRC_NONE;
    if ((st = parse_source(c, j, p, "input", m, &l->src))) return st;
    if (remat_json_member(j, "input") && (st = early_branch_check(c, blocks, m, i, l->src, "input"))) return st;
    if (tr->two_inputs) {
        l->src2 = -3; /* the block's input, resolved with the blocks */
        if ((st = parse_source(c, j, p, "from", m, &l->src2))) return st;
        if (remat_json_member(j, "from") && (st = early_branch_check(c, blocks, m, i, l->src2, "from"))) return st;
    }
    l->in = source_shape(m, l->src);
    if ((st = tr->parse(c, j, p, l))) return st;
    l->in_features = l->in.c * l->in.h * l->in.w;
    l->out_features = l->out.c * l->out.h * l->out.w;
    if (l->out_features > ((int64_t)1 << 31)) {
        char field[48];
        return remat_json_fail(c, remat_json_path(field, sizeof field, p, "type"),
                               "expected at most 2^31 elements per sample, got %lld x %lld x %lld", (long long)l->out.c,
                               (long long)l->out.h, (long long)l->out.w);
    }
    return REMAT_OK;
}

static remat_status parse_layers(const json_ctx *c, const cJSON *root, remat_model *m, remat_error *err) {
    const cJSON *arr = remat_json_member(root, "layers");
    if (!arr) return remat_json_fail(c, "layers", "missing (expected an array of layers)");
    char expected[64];
    snprintf(expected, sizeof expected, "an array of 1 to %d layers", MAX_LAYERS);
    if (!cJSON_IsArray(arr)) return remat_json_fail_value(c, "layers", arr, expected);
    int n = cJSON_GetArraySize(arr);
    if (n < 1 || n > MAX_LAYERS) return remat_json_fail(c, "layers", "expected %s, got %d", expected, n);
    m->layers = remat_xcalloc((size_t)n, sizeof *m->layers, err);
    if (!m->layers) return REMAT_ERR_NOMEM;
    int i = 0;
    for (const cJSON *j = arr->child; j; j = j->next, i++) {
        m->n_layers = i; /* the layers parsed so far are the ones a source may name */
        remat_status st = parse_layer(c, j, i, m, remat_json_member(root, "blocks"));
        if (st) return st;
        for (int k = 0; k < i; k++)
            if (!strcmp(m->layers[k].name, m->layers[i].name)) {
                char field[48];
                snprintf(field, sizeof field, "layers[%d].name", i);
                return remat_json_fail(c, field, "expected a unique name, got \"%s\" (also layers[%d])",
                                       m->layers[i].name, k);
            }
    }
    m->n_layers = n;
    return REMAT_OK;
}

/* ---- blocks ------------------------------------------------------------- */

static remat_status parse_blocks(const json_ctx *c, const cJSON *root, remat_model *m, remat_error *err) {
    static const char *const allowed[] = {"name", "layers", NULL};
    const cJSON *arr = remat_json_member(root, "blocks");
    if (!arr) return remat_json_fail(c, "blocks", "missing (expected an array of blocks)");
    if (!cJSON_IsArray(arr)) return remat_json_fail_value(c, "blocks", arr, "an array of blocks");
    int n = cJSON_GetArraySize(arr);
    if (n < 1 || n > m->n_layers)
        return remat_json_fail(c, "blocks", "expected 1 to %d blocks (one layer at least each), got %d", m->n_layers,
                               n);
    m->blocks = remat_xcalloc((size_t)n, sizeof *m->blocks, err);
    if (!m->blocks) return REMAT_ERR_NOMEM;
    m->n_blocks = n;
    int next = 0; /* the next layer a block must list */
    int b = 0;
    for (const cJSON *j = arr->child; j; j = j->next, b++) {
        char p[32], field[160];
        remat_json_index_path(p, sizeof p, "blocks", b);
        remat_status st = remat_json_check_object(c, j, p, allowed);
        if (st) return st;
        remat_block *blk = &m->blocks[b];
        if ((st = remat_json_get_name(c, j, p, "name", blk->name, sizeof blk->name))) return st;
        for (int k = 0; k < b; k++)
            if (!strcmp(m->blocks[k].name, blk->name))
                return remat_json_fail(c, remat_json_path(field, sizeof field, p, "name"),
                                       "expected a unique name, got \"%s\" (also blocks[%d])", blk->name, k);
        const cJSON *ls = remat_json_member(j, "layers");
        remat_json_path(field, sizeof field, p, "layers");
        if (!ls) return remat_json_fail(c, field, "missing (expected an array of layer names)");
        if (!cJSON_IsArray(ls) || cJSON_GetArraySize(ls) < 1)
            return remat_json_fail_value(c, field, ls, "a non-empty array of layer names");
        blk->first_layer = next;
        int li = 0;
        for (const cJSON *e = ls->child; e; e = e->next, li++) {
            char ef[192], name[REMAT_NAME_LEN];
            snprintf(ef, sizeof ef, "%s[%d]", field, li);
            if ((st = remat_json_check_name(c, e, ef, name, sizeof name))) return st;
            int idx = remat_model_find_layer(m, name);
            if (idx < 0) return remat_json_fail(c, ef, "expected a layer of this model, got \"%s\"", name);
            if (next >= m->n_layers || idx != next) {
                if (idx < next)
                    return remat_json_fail(c, ef, "expected each layer in one block only, got \"%s\" a second time",
                                           name);
                return remat_json_fail(
                    c, ef,
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
        return remat_json_fail(c, "blocks", "expected every layer in a block, but \"%s\" and later layers are in none",
                               m->layers[next].name);
    return REMAT_OK;
}

static int same_shape(remat_shape a, remat_shape b) { return a.c == b.c && a.h == b.h && a.w == b.w; }

static remat_value_class source_values(const remat_model *m, int src) {
    if (src == REMAT_SRC_INPUT) return remat_model_input_values(m);
    return m->layers[src].out_values;
}

/* A branch source must be a layer of the reader's block or the block's input. */
static remat_status check_source(const json_ctx *c, const remat_model *m, int i, int src, const char *key) {
    const remat_block *blk = &m->blocks[m->layers[i].block];
    if (src >= blk->first_layer - 1) return REMAT_OK;
    return fail_branch(c, i, key, blk->name, blk->first_layer > 0 ? m->layers[blk->first_layer - 1].name : "input",
                       src == REMAT_SRC_INPUT ? "input" : m->layers[src].name);
}

/* The rules of `add` with its default operand (the block input): after at least
 * one other layer, as the last of its block. */
static remat_status check_default_add(const json_ctx *c, const remat_model *m, int i) {
    const remat_layer *l = &m->layers[i];
    const remat_block *blk = &m->blocks[l->block];
    if (i != blk->first_layer && i == blk->first_layer + blk->n_layers - 1) return REMAT_OK;
    char field[48];
    snprintf(field, sizeof field, "layers[%d].type", i);
    return remat_json_fail(
        c, field,
        "expected \"add\" as the last layer of its block after at least one other (it sums the block "
        "input and the layer before it; name the operand with \"from\" otherwise); \"%s\" is %s of "
        "block \"%s\"",
        l->name, i == blk->first_layer ? "the first layer" : "not the last layer", blk->name);
}

/* Sources, value classes, block flags and the structural rules of branches. */
static remat_status derive(const json_ctx *c, remat_model *m) {
    for (int i = 0; i < m->n_layers; i++) {
        remat_layer *l = &m->layers[i];
        const remat_layer_traits *tr = remat_layer_traits_of(l->type);
        remat_block *blk = &m->blocks[l->block];
        remat_status st;
        if ((st = check_source(c, m, i, l->src, "input"))) return st;
        if (tr->two_inputs) {
            if (l->src2 == -3) {
                if ((st = check_default_add(c, m, i))) return st;
                l->src2 = blk->first_layer - 1; /* REMAT_SRC_INPUT for the first block */
            }
            if ((st = check_source(c, m, i, l->src2, "from"))) return st;
            remat_shape o = source_shape(m, l->src2);
            if (!same_shape(o, l->in)) {
                char field[48];
                snprintf(field, sizeof field, "layers[%d].type", i);
                if (l->src2 == blk->first_layer - 1 && l->in.nd != 3 && o.nd != 3)
                    return remat_json_fail(
                        c, field,
                        "expected the input width of \"add\" (%lld) to equal the width of the input of "
                        "block \"%s\" (%lld)",
                        (long long)l->in_features, blk->name, (long long)o.c);
                if (l->src2 == blk->first_layer - 1)
                    return remat_json_fail(
                        c, field,
                        "expected the input of \"add\" ([%lld, %lld, %lld]) to have the shape [C, H, W] "
                        "of the input of block \"%s\" ([%lld, %lld, %lld])",
                        (long long)l->in.c, (long long)l->in.h, (long long)l->in.w, blk->name, (long long)o.c,
                        (long long)o.h, (long long)o.w);
                return remat_json_fail(c, field,
                                       "expected the input of \"add\" ([%lld, %lld, %lld]) and its \"from\" operand "
                                       "\"%s\" ([%lld, %lld, %lld]) to have the same shape",
                                       (long long)l->in.c, (long long)l->in.h, (long long)l->in.w,
                                       m->layers[l->src2].name, (long long)o.c, (long long)o.h, (long long)o.w);
            }
        }
        if (l->src != i - 1 || tr->two_inputs) blk->has_add = 1;
        if (!tr->time_chunkable) blk->has_batchnorm = 1;
        l->out_values = remat_layer_out_values(l, source_values(m, l->src),
                                               tr->two_inputs ? source_values(m, l->src2) : REMAT_VALUES_REAL);
    }
    for (int b = 0; b < m->n_blocks; b++) {
        remat_block *blk = &m->blocks[b];
        blk->in_values = source_values(m, blk->first_layer - 1);
    }
    /* Every layer but the last feeds a later one: a dead branch would have no
     * gradient flowing into it, which backward does not model. */
    for (int i = 0; i < m->n_layers - 1; i++) {
        int read = 0;
        for (int j = i + 1; j < m->n_layers && !read; j++)
            read = m->layers[j].src == i || m->layers[j].src2 == i;
        if (!read) {
            char field[48];
            snprintf(field, sizeof field, "layers[%d]", i);
            return remat_json_fail(c, field,
                                   "expected every layer but the last to be read by a later one, but nothing reads the "
                                   "output of \"%s\" (a later layer's \"input\" skips it)",
                                   m->layers[i].name);
        }
    }
    const remat_layer *last = &m->layers[m->n_layers - 1];
    if (last->out_features != m->classes) {
        char field[48];
        snprintf(field, sizeof field, "layers[%d]", m->n_layers - 1);
        return remat_json_fail(c, field, "expected the last layer (\"%s\") to output classes = %lld features, got %lld",
                               last->name, (long long)m->classes, (long long)last->out_features);
    }
    return REMAT_OK;
}

/* Size limits that depend on T and N (also re-checked by remat_model_rescale). */
static remat_status check_sizes(const json_ctx *c, const remat_model *m) {
    int64_t rows = remat_mul_capped(m->T, m->N, TENSOR_BYTES_LIMIT);
    if (rows < 0 || remat_mul_capped(remat_mul_capped(rows, m->in_features, TENSOR_BYTES_LIMIT), 4,
                                    TENSOR_BYTES_LIMIT) < 0)
        return remat_json_fail(c, "input.shape",
                               "expected T*N*features*4 bytes under 1 TiB, got T=%lld, N=%lld, features=%lld",
                               (long long)m->T, (long long)m->N, (long long)m->in_features);
    for (int i = 0; i < m->n_layers; i++) {
        const remat_layer *l = &m->layers[i];
        int64_t w = l->out_features > l->in_features ? l->out_features : l->in_features;
        int64_t act = rows < 0 ? -1 : remat_mul_capped(rows, w, TENSOR_BYTES_LIMIT);
        act = act < 0 ? -1 : remat_mul_capped(act, 4, TENSOR_BYTES_LIMIT);
        char field[48];
        snprintf(field, sizeof field, "layers[%d]", i);
        if (act < 0)
            return remat_json_fail(c, field,
                                   "expected activations under 1 TiB, got T*N*features*4 with T=%lld, N=%lld, "
                                   "features=%lld",
                                   (long long)m->T, (long long)m->N, (long long)w);
        if (remat_layer_n_params(l) > 0) {
            int64_t dims[4], n = 1;
            int nd = remat_layer_param_dims(l, 0, dims);
            for (int d = 0; d < nd; d++) n = n < 0 ? -1 : remat_mul_capped(n, dims[d], TENSOR_BYTES_LIMIT / 4);
            if (n < 0)
                return remat_json_fail(c, field, "expected a weight under 1 TiB, got in=%lld x out=%lld floats",
                                       (long long)l->in_features, (long long)l->out_features);
        }
    }
    return REMAT_OK;
}

static remat_status parse_model(const json_ctx *c, const cJSON *root, remat_model *m, remat_error *err) {
    static const char *const allowed[] = {"name", "description", "T", "N", "input", "classes", "loss",
                                          "optimizer", "init_gain", "precision", "layers", "blocks", NULL};
    remat_status st = remat_json_check_object(c, root, "", allowed);
    if (st) return st;
    if ((st = remat_json_get_name(c, root, "", "name", m->name, sizeof m->name))) return st;
    const cJSON *d = remat_json_member(root, "description");
    if (d && !cJSON_IsString(d)) return remat_json_fail_value(c, "description", d, "a string");
    if ((st = remat_json_get_int(c, root, "", "T", 1, 0, 1, MAX_T, &m->T))) return st;
    if ((st = remat_json_get_int(c, root, "", "N", 1, 0, 1, MAX_N, &m->N))) return st;
    if ((st = parse_input(c, root, m))) return st;
    if ((st = remat_json_get_int(c, root, "", "classes", 1, 0, 1, MAX_FEATURES, &m->classes))) return st;
    int loss = 0;
    if ((st = remat_json_get_enum(c, root, "", "loss", 0, loss_names, 2, 0, &loss))) return st;
    m->loss = (remat_loss_type)loss;
    if ((st = parse_optimizer(c, root, m))) return st;
    double gain = 1.0;
    if ((st = remat_json_get_number(c, root, "", "init_gain", 0, 1.0, &gain))) return st;
    if (!(gain > 0.0 && gain <= 100.0))
        return remat_json_fail_value(c, "init_gain", remat_json_member(root, "init_gain"), "a number in (0, 100]");
    m->init_gain = (float)gain;
    int precision = REMAT_PRECISION_FP32;
    if ((st = remat_json_get_enum(c, root, "", "precision", 0, precision_names, 2, REMAT_PRECISION_FP32, &precision)))
        return st;
    m->precision = (remat_precision)precision;
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
    remat_status st = remat_json_parse_root(text, len, origin, &root, &copy, err);
    if (st) return st;
    st = parse_model(&c, root, out, err);
    st = remat_json_keep_source(st, root, copy, origin, &out->text, &out->path, err);
    if (st) remat_model_free(out);
    return st;
}

remat_status remat_model_load(const char *path, remat_model *out, remat_error *err) {
    if (out) memset(out, 0, sizeof *out);
    char *text = NULL;
    size_t len = 0;
    remat_status st = remat_json_read_file(path, &text, &len, err);
    if (st) return st;
    st = remat_model_parse(text, len, path, out, err);
    remat_xfree(text);
    return st;
}

remat_value_class remat_model_input_values(const remat_model *m) {
    if (m->input_spikes) return REMAT_VALUES_BINARY;
    /* counts up to 255 fit the uint8 compressor; bit needs spikes */
    return m->input_counts_max > 0 && m->input_counts_max <= 255 ? REMAT_VALUES_INTEGER : REMAT_VALUES_REAL;
}

remat_encoding remat_model_act_encoding(const remat_model *m) {
    return m->precision == REMAT_PRECISION_BF16 ? REMAT_ENC_BF16 : REMAT_ENC_F32;
}

/* The model text with "T" and "N" replaced (a copy through remat_xmalloc). */
static char *rescaled_text(const char *text, int64_t T, int64_t N, const char *origin, remat_error *err) {
    if (!text || !text[0]) return remat_json_strdup("", err);
    remat_json_install_hooks();
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
    char *copy = remat_json_strdup(printed, err);
    cJSON_free(printed);
    return copy;
}

remat_status remat_model_rescale(const remat_model *m, int64_t T, int64_t N, remat_model *out, remat_error *err) {
    if (!m || !out) return remat_error_set(err, REMAT_ERR_INTERNAL, "remat_model_rescale: null model");
    memset(out, 0, sizeof *out);
    const char *origin = m->path && m->path[0] ? m->path : "<model>";
    json_ctx c = {origin, err};
    if (T < 0 || T > MAX_T)
        return remat_json_fail(&c, "T", "expected an integer in [1, %lld], got %lld", (long long)MAX_T, (long long)T);
    if (N < 0 || N > MAX_N)
        return remat_json_fail(&c, "N", "expected an integer in [1, %lld], got %lld", (long long)MAX_N, (long long)N);
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
    out->path = remat_json_strdup(origin, err);
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

void remat_model_block_list(const remat_model *m, char *buf, size_t len) {
    size_t o = 0;
    buf[0] = '\0';
    for (int q = 0; q < m->n_blocks && o < len; q++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s", q ? ", " : "", m->blocks[q].name);
}

int remat_model_find_block(const remat_model *m, const char *name) {
    if (!m || !name) return -1;
    for (int i = 0; i < m->n_blocks; i++)
        if (!strcmp(m->blocks[i].name, name)) return i;
    return -1;
}

