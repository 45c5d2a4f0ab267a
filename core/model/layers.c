/* layers.c - the layer registry (contract in core/model/layers.h): for each layer
 * type its JSON fields and their checks, its output shape, its parameters, what its
 * backward keeps and what values its output holds. Nothing else in remat tests a
 * layer's type for metadata; it asks these traits.
 *
 * Adding a layer type: see core/model/layers.h.
 *
 * Modelling assumptions (as PyTorch and SpikingJelly's multi-step layers):
 * - linear acts on flat [features] activations; conv2d, pooling and flatten on
 *   [C, H, W] ones; neurons, dropout, batch norm and add on either.
 * - conv2d is cross-correlation with zero padding, weight [out, in, kh, kw];
 *   output size floor((in + 2p - d(k - 1) - 1) / s) + 1 with dilation d; "groups" G
 *   (dividing in and out) splits both into G slices, output slice g reading input
 *   slice g only, weight [out, in / G, kh, kw] (G = in: depthwise);
 *   "padding": "valid" is 0, "same" is d(k - 1) / 2 (stride 1, d(k - 1) even: PyTorch
 *   pads the sides unequally otherwise).
 * - pooling as PyTorch, padding <= kernel / 2, "ceil_mode" (false) rounding the output
 *   up (max pooling takes the in-bounds part of a last, partial window; average
 *   pooling only where ceil_mode adds no window);
 *   average pooling counts padded zeros (count_include_pad = True); adaptive average
 *   pooling only where the output divides the input (then an average pool).
 * - plif is SpikingJelly's ParametricLIFNode: lif's fields with "init_tau" for "tau",
 *   one learnable scalar w (tau = 1 / sigmoid(w), w = -log(init_tau - 1) at the start).
 * - value classes: neurons emit BINARY spikes; add of two non-REAL tensors is
 *   INTEGER; max pooling, flatten and dropout with p = 0 keep their input's class;
 *   the rest are REAL.
 */
#include "core/model/layers.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/io/json_util.h"

#define MAX_FEATURES ((int64_t)1 << 24)
#define MAX_WINDOW ((int64_t)1 << 12)

static const char *const surrogate_names[] = {"sigmoid", "atan"};

/* ---- shared field readers -------------------------------------------------- */

/* "[C, H, W]", "[C, L]" or "[features]" of shape s, in a message. */
static const char *shape_text(char *buf, size_t n, remat_shape s) {
    if (s.nd == 3) snprintf(buf, n, "[%lld, %lld, %lld]", (long long)s.c, (long long)s.h, (long long)s.w);
    else if (s.nd == 2) snprintf(buf, n, "[%lld, %lld]", (long long)s.c, (long long)s.w);
    else snprintf(buf, n, "[%lld] features", (long long)s.c);
    return buf;
}

/* The input must have nd dimensions: 3 ([C, H, W]) or 2 ([C, L]). */
static remat_status need_dims(const json_ctx *c, const char *p, const remat_layer *l, int nd) {
    if (l->in.nd == nd) return REMAT_OK;
    char field[160], got[96];
    return remat_json_fail(c, remat_json_path(field, sizeof field, p, "type"),
                           "expected a %s input for \"%s\" (layer \"%s\" reads %s)", nd == 3 ? "[C, H, W]" : "[C, L]",
                           remat_layer_type_name(l->type), l->name, shape_text(got, sizeof got, l->in));
}

static remat_status need_spatial(const json_ctx *c, const char *p, const remat_layer *l) {
    return need_dims(c, p, l, 3);
}

/* An int or [h, w] in [lo, MAX_WINDOW]; absent: def_h, def_w (required: error). */
static remat_status get_pair(const json_ctx *c, const cJSON *j, const char *p, const char *key, int required,
                             int64_t def_h, int64_t def_w, int64_t lo, int64_t *h, int64_t *w) {
    char field[160], expected[96];
    remat_json_path(field, sizeof field, p, key);
    snprintf(expected, sizeof expected, "an integer in [%lld, %lld] or [h, w] of them", (long long)lo,
             (long long)MAX_WINDOW);
    const cJSON *v = remat_json_member(j, key);
    if (!v) {
        if (required) return remat_json_fail(c, field, "missing (expected %s)", expected);
        *h = def_h;
        *w = def_w;
        return REMAT_OK;
    }
    const cJSON *a = v, *b = v;
    if (cJSON_IsArray(v)) {
        if (cJSON_GetArraySize(v) != 2) return remat_json_fail_value(c, field, v, expected);
        a = v->child;
        b = v->child->next;
    }
    const cJSON *e[2] = {a, b};
    int64_t out[2];
    for (int i = 0; i < 2; i++) {
        double d = cJSON_IsNumber(e[i]) ? e[i]->valuedouble : -1.0;
        if (!cJSON_IsNumber(e[i]) || d != floor(d) || d < (double)lo || d > (double)MAX_WINDOW)
            return remat_json_fail_value(c, field, v, expected);
        out[i] = (int64_t)d;
    }
    *h = out[0];
    *w = out[1];
    return REMAT_OK;
}

/* Output extent of a window; -1 when the window does not fit. ceil: PyTorch's
 * ceil_mode (rounded up, but the last window must start inside the input or its
 * left padding). */
static int64_t window_out(int64_t in, int64_t k, int64_t s, int64_t pad, int ceil) {
    if (in + 2 * pad < k) return -1;
    int64_t o = (in + 2 * pad - k + (ceil ? s - 1 : 0)) / s + 1;
    if (ceil && (o - 1) * s >= in + pad) o--;
    return o;
}

/* conv2d's "padding": "valid" (none) or "same" (the output keeps the input's H and W:
 * stride 1 and, since the padding is symmetric, an odd kernel). 1: handled, 0: not a
 * string (read it as numbers), negative: st holds the error. */
static int padding_string(const json_ctx *c, const cJSON *j, const char *p, remat_window *w, remat_status *st) {
    const cJSON *v = remat_json_member(j, "padding");
    if (!v || !cJSON_IsString(v)) return 0;
    char field[160];
    remat_json_path(field, sizeof field, p, "padding");
    if (!strcmp(v->valuestring, "valid")) {
        w->ph = w->pw = 0;
        return 1;
    }
    if (strcmp(v->valuestring, "same")) {
        *st = remat_json_fail_value(c, field, v, "an integer, [h, w], \"same\" or \"valid\"");
        return -1;
    }
    if (w->sh != 1 || w->sw != 1) {
        *st = remat_json_fail(c, field, "expected stride 1 with \"same\" (as PyTorch), got stride [%lld, %lld]",
                              (long long)w->sh, (long long)w->sw);
        return -1;
    }
    const int64_t th = w->dh * (w->kh - 1), tw = w->dw * (w->kw - 1); /* total padding "same" needs */
    if (th % 2 || tw % 2) {
        *st = remat_json_fail(c, field,
                              "expected an odd kernel (or an even dilation) with \"same\" (otherwise PyTorch pads one "
                              "side more, which remat's symmetric padding cannot express), got %lld x %lld",
                              (long long)w->kh, (long long)w->kw);
        return -1;
    }
    w->ph = th / 2;
    w->pw = tw / 2;
    return 1;
}

/* Reads kernel/stride/padding and sets l->out's H, W (channels are the caller's). */
/* An integer along L of a 1-D layer ([C, L] held as [C, 1, L]). */
static remat_status get_len(const json_ctx *c, const cJSON *j, const char *p, const char *key, int required,
                            int64_t def, int64_t lo, int64_t *v) {
    return remat_json_get_int(c, j, p, key, required, def, lo, MAX_WINDOW, v);
}

static remat_status parse_window(const json_ctx *c, const cJSON *j, const char *p, remat_layer *l, int pool) {
    remat_window *w = &l->win;
    remat_status st;
    int one_d = l->in.nd == 2; /* kernel, stride, padding along L; H is 1 */
    if (one_d) {
        w->kh = w->sh = 1;
        w->ph = 0;
        if ((st = get_len(c, j, p, "kernel", 1, 0, 1, &w->kw))) return st;
        if ((st = get_len(c, j, p, "stride", 0, pool ? w->kw : 1, 1, &w->sw))) return st;
    } else {
        if ((st = get_pair(c, j, p, "kernel", 1, 0, 0, 1, &w->kh, &w->kw))) return st;
        if ((st = get_pair(c, j, p, "stride", 0, pool ? w->kh : 1, pool ? w->kw : 1, 1, &w->sh, &w->sw))) return st;
    }
    w->dh = w->dw = 1;
    if (!pool && one_d && (st = get_len(c, j, p, "dilation", 0, 1, 1, &w->dw))) return st;
    if (!pool && !one_d && (st = get_pair(c, j, p, "dilation", 0, 1, 1, 1, &w->dh, &w->dw))) return st;
    int named = pool ? 0 : padding_string(c, j, p, w, &st);
    if (named < 0) return st;
    if (!named && one_d && (st = get_len(c, j, p, "padding", 0, 0, 0, &w->pw))) return st;
    if (!named && !one_d && (st = get_pair(c, j, p, "padding", 0, 0, 0, 0, &w->ph, &w->pw))) return st;
    char field[160];
    if (pool && (2 * w->ph > w->kh || 2 * w->pw > w->kw))
        return remat_json_fail(c, remat_json_path(field, sizeof field, p, "padding"),
                               "expected a padding of at most half the kernel in each dimension (kernel [%lld, %lld]: "
                               "padding up to [%lld, %lld]), got [%lld, %lld]",
                               (long long)w->kh, (long long)w->kw, (long long)(w->kh / 2), (long long)(w->kw / 2),
                               (long long)w->ph, (long long)w->pw);
    int ceil = 0;
    if (pool && (st = remat_json_get_bool(c, j, p, "ceil_mode", 0, 0, &ceil))) return st;
    /* a dilated kernel spans d*(k-1)+1 input positions */
    const int64_t eh = w->dh * (w->kh - 1) + 1, ew = w->dw * (w->kw - 1) + 1;
    int64_t oh = window_out(l->in.h, eh, w->sh, w->ph, ceil), ow = window_out(l->in.w, ew, w->sw, w->pw, ceil);
    /* average pooling divides by kh*kw (count_include_pad); PyTorch's ceil windows that
     * run past the padded input divide by less: refused where ceil_mode adds them */
    if (ceil && (l->type == REMAT_LAYER_AVGPOOL2D || l->type == REMAT_LAYER_AVGPOOL1D) &&
        (oh != window_out(l->in.h, w->kh, w->sh, w->ph, 0) || ow != window_out(l->in.w, w->kw, w->sw, w->pw, 0)))
        return remat_json_fail(c, remat_json_path(field, sizeof field, p, "ceil_mode"),
                               "expected false for avgpool2d here: its last window would run past the padded input "
                               "(%lld x %lld), where PyTorch divides by fewer than kernel elements (not supported)",
                               (long long)(l->in.h + 2 * w->ph), (long long)(l->in.w + 2 * w->pw));
    if (oh < 1 || ow < 1)
        return remat_json_fail(c, remat_json_path(field, sizeof field, p, "kernel"),
                               "expected a kernel no larger than the padded input (%lld x %lld), got %lld x %lld",
                               (long long)(l->in.h + 2 * w->ph), (long long)(l->in.w + 2 * w->pw), (long long)eh,
                               (long long)ew);
    l->out = (remat_shape){l->in.c, oh, ow, l->in.nd};
    return REMAT_OK;
}

/* An optional declared width that must equal what the layer reads. */
static remat_status check_declared(const json_ctx *c, const cJSON *j, const char *p, const char *key,
                                   int64_t actual, const char *what) {
    int64_t declared;
    remat_status st = remat_json_get_int(c, j, p, key, 0, actual, 1, MAX_FEATURES, &declared);
    if (st) return st;
    if (declared == actual) return REMAT_OK;
    char field[160];
    return remat_json_fail(c, remat_json_path(field, sizeof field, p, key), "expected %lld (%s), got %lld",
                           (long long)actual, what, (long long)declared);
}

/* ---- per-type readers ------------------------------------------------------ */

static remat_status parse_linear(const json_ctx *c, const cJSON *j, const char *p, remat_layer *l) {
    remat_status st;
    if (l->in.nd != 1) {
        char field[160], got[96];
        return remat_json_fail(
            c, remat_json_path(field, sizeof field, p, "type"),
            "expected a flat input for \"linear\" (layer \"%s\" reads %s: add a flatten layer before it)", l->name,
            shape_text(got, sizeof got, l->in));
    }
    if ((st = check_declared(c, j, p, "in", l->in.c, "the width of its input"))) return st;
    int64_t out;
    if ((st = remat_json_get_int(c, j, p, "out", 1, 0, 1, MAX_FEATURES, &out))) return st;
    l->out = (remat_shape){out, 1, 1, 1};
    return remat_json_get_bool(c, j, p, "bias", 0, 1, &l->has_bias);
}

static remat_status parse_conv(const json_ctx *c, const cJSON *j, const char *p, remat_layer *l) {
    remat_status st;
    if ((st = need_dims(c, p, l, l->type == REMAT_LAYER_CONV1D ? 2 : 3))) return st;
    if ((st = check_declared(c, j, p, "in", l->in.c, "the channels of its input"))) return st;
    int64_t out;
    if ((st = remat_json_get_int(c, j, p, "out", 1, 0, 1, MAX_FEATURES, &out))) return st;
    if ((st = parse_window(c, j, p, l, 0))) return st;
    l->out.c = out;
    if ((st = remat_json_get_int(c, j, p, "groups", 0, 1, 1, MAX_FEATURES, &l->win.groups))) return st;
    if (l->in.c % l->win.groups || out % l->win.groups) {
        char field[160];
        return remat_json_fail(c, remat_json_path(field, sizeof field, p, "groups"),
                               "expected a divisor of both the input channels (%lld) and \"out\" (%lld), got %lld",
                               (long long)l->in.c, (long long)out, (long long)l->win.groups);
    }
    return remat_json_get_bool(c, j, p, "bias", 0, 1, &l->has_bias);
}

static remat_status parse_pool(const json_ctx *c, const cJSON *j, const char *p, remat_layer *l) {
    int one_d = l->type == REMAT_LAYER_MAXPOOL1D || l->type == REMAT_LAYER_AVGPOOL1D;
    remat_status st = need_dims(c, p, l, one_d ? 2 : 3);
    return st ? st : parse_window(c, j, p, l, 1);
}

/* adaptiveavgpool2d where it is an exact average pool: each output cell averages a
 * (H/oh) x (W/ow) window, stride = window, no padding (PyTorch's adaptive bins are
 * then exactly these windows); an output that does not divide the input is refused. */
static remat_status parse_adaptive_pool(const json_ctx *c, const cJSON *j, const char *p, remat_layer *l) {
    remat_status st = need_spatial(c, p, l);
    if (st) return st;
    int64_t oh, ow;
    if ((st = get_pair(c, j, p, "out", 1, 0, 0, 1, &oh, &ow))) return st;
    if (l->in.h % oh || l->in.w % ow) {
        char field[160];
        return remat_json_fail(c, remat_json_path(field, sizeof field, p, "out"),
                               "expected an output that divides the input (%lld x %lld), got %lld x %lld (remat runs "
                               "adaptive average pooling only where it is an exact average pool)",
                               (long long)l->in.h, (long long)l->in.w, (long long)oh, (long long)ow);
    }
    remat_window *w = &l->win;
    w->kh = w->sh = l->in.h / oh;
    w->kw = w->sw = l->in.w / ow;
    w->ph = w->pw = 0;
    l->out = (remat_shape){l->in.c, oh, ow, 3};
    return REMAT_OK;
}

static remat_status parse_flatten(const json_ctx *c, const cJSON *j, const char *p, remat_layer *l) {
    remat_status st = need_dims(c, p, l, l->in.nd == 2 ? 2 : 3);
    if (st) return st;
    l->out = (remat_shape){l->in.c * l->in.h * l->in.w, 1, 1, 1};
    return REMAT_OK;
}

static remat_status parse_same(const json_ctx *c, const cJSON *j, const char *p, remat_layer *l) {
    l->out = l->in;
    return REMAT_OK;
}

static remat_status parse_batchnorm(const json_ctx *c, const cJSON *j, const char *p, remat_layer *l) {
    l->out = l->in;
    remat_status st = check_declared(c, j, p, "features", l->in.c,
                                     l->in.nd >= 2 ? "the channels of its input" : "the width of its input");
    if (st) return st;
    const cJSON *mo = remat_json_member(j, "momentum");
    if (mo && cJSON_IsNull(mo))
        return remat_json_fail_range(c, j, p, "momentum",
                                     "a number in [0, 1] (null, PyTorch's cumulative average, is not supported)");
    double mom, eps;
    if ((st = remat_json_get_number(c, j, p, "momentum", 0, 0.1, &mom))) return st;
    if (!(mom >= 0.0 && mom <= 1.0)) return remat_json_fail_range(c, j, p, "momentum", "a number in [0, 1]");
    if ((st = remat_json_get_number(c, j, p, "eps", 0, 1e-5, &eps))) return st;
    if (!(eps > 0.0 && eps <= 1.0)) return remat_json_fail_range(c, j, p, "eps", "a number in (0, 1]");
    l->bn.momentum = (float)mom;
    l->bn.eps = eps;
    return REMAT_OK;
}

static remat_status parse_dropout(const json_ctx *c, const cJSON *j, const char *p, remat_layer *l) {
    double pr;
    remat_status st = remat_json_get_number(c, j, p, "p", 0, 0.5, &pr);
    if (st) return st;
    if (!(pr >= 0.0 && pr < 1.0 && (float)pr < 1.0f))
        return remat_json_fail_range(c, j, p, "p", "a probability in [0, 1)");
    l->p = (float)pr;
    l->out = l->in;
    return REMAT_OK;
}

static remat_status parse_neuron(const json_ctx *c, const cJSON *j, const char *p, remat_layer *l) {
    remat_neuron_opts *n = &l->neuron;
    int lif = l->type == REMAT_LAYER_LIF || l->type == REMAT_LAYER_PLIF;
    remat_status st;
    l->out = l->in;
    if ((st = remat_json_get_float(c, j, p, "v_threshold", 1.0, &n->v_threshold))) return st;
    const cJSON *vr = remat_json_member(j, "v_reset");
    if (vr && cJSON_IsNull(vr)) {
        n->soft_reset = 1;
        n->v_reset = 0.0f;
    } else {
        if (vr && !cJSON_IsNumber(vr))
            return remat_json_fail_range(c, j, p, "v_reset", "a number (hard reset) or null (soft reset)");
        if ((st = remat_json_get_float(c, j, p, "v_reset", 0.0, &n->v_reset))) return st;
    }
    if ((st = remat_json_get_bool(c, j, p, "detach_reset", 0, 0, &n->detach_reset))) return st;
    int sg = 0;
    if ((st = remat_json_get_enum(c, j, p, "surrogate", 0, surrogate_names, 2, 0, &sg))) return st;
    n->surrogate = (remat_surrogate)sg;
    if ((st = remat_json_get_float(c, j, p, "alpha", sg == REMAT_SURROGATE_ATAN ? 2.0 : 4.0, &n->alpha))) return st;
    if (!(n->alpha > 0.0f)) return remat_json_fail_range(c, j, p, "alpha", "a number > 0");
    if (!lif) {
        n->tau = 0.0f;
        n->decay_input = 0;
        return REMAT_OK;
    }
    if (l->type == REMAT_LAYER_PLIF) { /* SpikingJelly's ParametricLIFNode: w = -log(init_tau - 1) */
        if ((st = remat_json_get_float(c, j, p, "init_tau", 2.0, &n->tau))) return st;
        if (!(n->tau > 1.0f)) return remat_json_fail_range(c, j, p, "init_tau", "a number > 1");
    } else {
        if ((st = remat_json_get_float(c, j, p, "tau", 2.0, &n->tau))) return st;
        if (!(n->tau > 1.0f)) return remat_json_fail_range(c, j, p, "tau", "a number > 1");
    }
    return remat_json_get_bool(c, j, p, "decay_input", 0, 1, &n->decay_input);
}

/* ---- parameter shapes, fan-in and value classes ---------------------------- */

static int dims_linear(const remat_layer *l, int i, int64_t dims[4]) {
    dims[0] = l->out.c;
    if (i == 1) return 1;
    dims[1] = l->in.c;
    return 2;
}

static int64_t conv_groups(const remat_layer *l) { return l->win.groups > 1 ? l->win.groups : 1; }

/* conv2d: weight [out, in / groups, kh, kw], bias [out]. */
static int dims_conv(const remat_layer *l, int i, int64_t dims[4]) {
    dims[0] = l->out.c;
    if (i == 1) return 1;
    dims[1] = l->in.c / conv_groups(l);
    dims[2] = l->win.kh;
    dims[3] = l->win.kw;
    return 4;
}

/* conv1d: weight [out, in / groups, k] (PyTorch's Conv1d; the kernels see [out, in / groups, 1, k]). */
static int dims_conv1d(const remat_layer *l, int i, int64_t dims[4]) {
    dims[0] = l->out.c;
    if (i == 1) return 1;
    dims[1] = l->in.c / conv_groups(l);
    dims[2] = l->win.kw;
    return 3;
}

static int dims_channels(const remat_layer *l, int i, int64_t dims[4]) {
    (void)i;
    dims[0] = l->in.c;
    return 1;
}

/* plif: w, one scalar shared by the layer's neurons (SpikingJelly's 0-d parameter; [1] here). */
static int dims_scalar(const remat_layer *l, int i, int64_t dims[4]) {
    (void)l, (void)i;
    dims[0] = 1;
    return 1;
}

/* SpikingJelly's w = -log(init_tau - 1), in double from init_tau (read as a float), then rounded. */
static float init_plif(const remat_layer *l, int i) {
    (void)i;
    return (float)-log((double)l->neuron.tau - 1.0);
}

static int64_t fan_in_linear(const remat_layer *l) { return l->in.c; }
static int64_t fan_in_conv(const remat_layer *l) { return l->in.c / conv_groups(l) * l->win.kh * l->win.kw; }

static remat_value_class values_spikes(const remat_layer *l, remat_value_class in, remat_value_class in2) {
    (void)l, (void)in, (void)in2;
    return REMAT_VALUES_BINARY;
}
static remat_value_class values_same(const remat_layer *l, remat_value_class in, remat_value_class in2) {
    (void)l, (void)in2;
    return in;
}
static remat_value_class values_dropout(const remat_layer *l, remat_value_class in, remat_value_class in2) {
    (void)in2;
    return l->p > 0.0f ? REMAT_VALUES_REAL : in;
}
static remat_value_class values_sum(const remat_layer *l, remat_value_class in, remat_value_class in2) {
    (void)l;
    return in != REMAT_VALUES_REAL && in2 != REMAT_VALUES_REAL ? REMAT_VALUES_INTEGER : REMAT_VALUES_REAL;
}

/* ---- the table ------------------------------------------------------------- */

#define FIELDS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NEURON_FIELDS "v_threshold", "v_reset", "detach_reset", "surrogate", "alpha"

static const char *const no_fields[] = {NULL};
static const char *const weight_bias[] = {"weight", "bias"};
static const char *const bn_params[] = {"weight", "bias", "running_mean", "running_var"};
static const float bn_init[] = {1.0f, 0.0f, 0.0f, 1.0f};
static const char *const plif_params[] = {"w"};

static const remat_layer_traits traits[] = {
    [REMAT_LAYER_LINEAR] = {.name = "linear", .fields = FIELDS("in", "out", "bias"), .parse = parse_linear,
                            .param_names = weight_bias, .param_dims = dims_linear, .fan_in = fan_in_linear,
                            .max_params = 2, .n_trainable = 2, .optional_bias = 1, .saves_input = 1,
                            .time_chunkable = 1, .input_grad_optional = 1},
    [REMAT_LAYER_IF] = {.name = "if", .fields = FIELDS(NEURON_FIELDS), .parse = parse_neuron, .neuron = 1,
                        .time_chunkable = 1, .out_values = values_spikes},
    [REMAT_LAYER_LIF] = {.name = "lif", .fields = FIELDS(NEURON_FIELDS, "tau", "decay_input"),
                         .parse = parse_neuron, .neuron = 1, .time_chunkable = 1, .out_values = values_spikes},
    [REMAT_LAYER_BATCHNORM] = {.name = "batchnorm", .fields = FIELDS("features", "momentum", "eps"), .parse = parse_batchnorm,
                               .param_names = bn_params, .param_init = bn_init, .param_dims = dims_channels,
                               .max_params = 4, .n_trainable = 2, .saves_input = 1, .time_chunkable = 0},
    [REMAT_LAYER_ADD] = {.name = "add", .fields = FIELDS("from"), .parse = parse_same, .time_chunkable = 1,
                         .two_inputs = 1, .out_values = values_sum},
    [REMAT_LAYER_DROPOUT] = {.name = "dropout", .fields = FIELDS("p"), .parse = parse_dropout,
                             .time_chunkable = 1, .has_mask = 1, .out_values = values_dropout},
    [REMAT_LAYER_CONV2D] = {.name = "conv2d",
                            .fields = FIELDS("in", "out", "kernel", "stride", "padding", "dilation", "groups", "bias"),
                            .parse = parse_conv, .param_names = weight_bias, .param_dims = dims_conv,
                            .fan_in = fan_in_conv, .max_params = 2, .n_trainable = 2, .optional_bias = 1,
                            .saves_input = 1, .time_chunkable = 1, .windowed = 1, .input_grad_optional = 1},
    [REMAT_LAYER_MAXPOOL2D] = {.name = "maxpool2d", .fields = FIELDS("kernel", "stride", "padding", "ceil_mode"),
                               .parse = parse_pool, .saves_input = 1, .time_chunkable = 1, .windowed = 1,
                               .out_values = values_same},
    [REMAT_LAYER_AVGPOOL2D] = {.name = "avgpool2d", .fields = FIELDS("kernel", "stride", "padding", "ceil_mode"),
                               .parse = parse_pool, .time_chunkable = 1, .windowed = 1},
    [REMAT_LAYER_FLATTEN] = {.name = "flatten", .fields = no_fields, .parse = parse_flatten, .time_chunkable = 1,
                             .out_values = values_same},
    [REMAT_LAYER_ADAPTIVEAVGPOOL2D] = {.name = "adaptiveavgpool2d", .fields = FIELDS("out"),
                                       .parse = parse_adaptive_pool, .time_chunkable = 1, .windowed = 1},
    /* [C, L] layers (audio): the 2-D kernels over [C, 1, L] */
    [REMAT_LAYER_CONV1D] = {.name = "conv1d",
                            .fields = FIELDS("in", "out", "kernel", "stride", "padding", "dilation", "groups", "bias"),
                            .parse = parse_conv, .param_names = weight_bias, .param_dims = dims_conv1d,
                            .fan_in = fan_in_conv, .max_params = 2, .n_trainable = 2, .optional_bias = 1,
                            .saves_input = 1, .time_chunkable = 1, .windowed = 1, .input_grad_optional = 1},
    [REMAT_LAYER_MAXPOOL1D] = {.name = "maxpool1d", .fields = FIELDS("kernel", "stride", "padding", "ceil_mode"),
                               .parse = parse_pool, .saves_input = 1, .time_chunkable = 1, .windowed = 1,
                               .out_values = values_same},
    [REMAT_LAYER_AVGPOOL1D] = {.name = "avgpool1d", .fields = FIELDS("kernel", "stride", "padding", "ceil_mode"),
                               .parse = parse_pool, .time_chunkable = 1, .windowed = 1},
    /* parametric LIF: lif with 1/tau = sigmoid(w), w learnt; backward recomputes the
     * charge from the saved state and input (core/ref/plif.c) */
    [REMAT_LAYER_PLIF] = {.name = "plif", .fields = FIELDS(NEURON_FIELDS, "init_tau", "decay_input"),
                          .parse = parse_neuron, .param_names = plif_params, .param_dims = dims_scalar,
                          .init_value = init_plif, .max_params = 1, .n_trainable = 1, .saves_input = 1,
                          .neuron = 1, .time_chunkable = 1, .out_values = values_spikes},
};
_Static_assert(sizeof traits / sizeof traits[0] == REMAT_LAYER_COUNT, "a traits entry for every layer type");

const remat_layer_traits *remat_layer_traits_of(remat_layer_type t) {
    if ((unsigned)t >= REMAT_LAYER_COUNT || !traits[t].parse) return NULL;
    return &traits[t];
}

const char *remat_layer_type_name(remat_layer_type t) {
    const remat_layer_traits *tr = remat_layer_traits_of(t);
    return tr ? tr->name : "?";
}

int remat_layer_type_from_name(const char *s) {
    for (int t = 0; s && t < REMAT_LAYER_COUNT; t++)
        if (!strcmp(traits[t].name, s)) return t;
    return -1;
}

remat_conv_geom remat_layer_geom(const remat_layer *l) {
    remat_conv_geom g;
    memset(&g, 0, sizeof g);
    if (!traits[l->type].windowed) return g;
    g.c_in = l->in.c, g.h_in = l->in.h, g.w_in = l->in.w;
    g.c_out = l->out.c, g.h_out = l->out.h, g.w_out = l->out.w;
    g.kh = l->win.kh, g.kw = l->win.kw, g.sh = l->win.sh, g.sw = l->win.sw, g.ph = l->win.ph, g.pw = l->win.pw;
    g.dh = l->win.dh, g.dw = l->win.dw, g.groups = l->win.groups;
    return g;
}

int remat_layer_saves_input(const remat_layer *l) { return traits[l->type].saves_input; }
int remat_layer_is_neuron(const remat_layer *l) { return traits[l->type].neuron; }
int remat_layer_has_mask(const remat_layer *l) { return traits[l->type].has_mask; }
int remat_layer_input_grad_optional(const remat_layer *l) { return traits[l->type].input_grad_optional; }

/* ---- parameters ------------------------------------------------------------ */

int remat_layer_n_params(const remat_layer *l) {
    if (!l || (unsigned)l->type >= REMAT_LAYER_COUNT) return 0;
    const remat_layer_traits *t = &traits[l->type];
    return t->optional_bias && !l->has_bias ? t->max_params - 1 : t->max_params;
}

const char *remat_layer_param_name(const remat_layer *l, int i) {
    if (i < 0 || i >= remat_layer_n_params(l)) return NULL;
    return traits[l->type].param_names[i];
}

int remat_layer_param_dims(const remat_layer *l, int i, int64_t dims[4]) {
    if (i < 0 || i >= remat_layer_n_params(l)) return 0;
    return traits[l->type].param_dims(l, i, dims);
}

int64_t remat_layer_param_elems(const remat_layer *l, int i) {
    int64_t dims[4];
    int nd = remat_layer_param_dims(l, i, dims);
    if (nd == 0) return 0;
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= dims[d];
    return n;
}

int remat_layer_param_dump_dims(const remat_layer *l, int i, int64_t dims[4]) {
    if (i < 0 || i >= remat_layer_n_params(l)) return 0;
    return remat_layer_param_dims(l, i, dims);
}

int64_t remat_layer_fan_in(const remat_layer *l) {
    const remat_layer_traits *t = &traits[l->type];
    return t->fan_in ? t->fan_in(l) : 0;
}

float remat_layer_param_init_value(const remat_layer *l, int i) {
    const remat_layer_traits *t = &traits[l->type];
    if (t->init_value && i >= 0 && i < t->max_params) return t->init_value(l, i);
    return t->param_init && i >= 0 && i < t->max_params ? t->param_init[i] : 0.0f;
}

int remat_layer_param_trainable(const remat_layer *l, int i) {
    return i >= 0 && i < remat_layer_n_params(l) && i < traits[l->type].n_trainable;
}

remat_value_class remat_layer_out_values(const remat_layer *l, remat_value_class in, remat_value_class in2) {
    const remat_layer_traits *t = &traits[l->type];
    return t->out_values ? t->out_values(l, in, in2) : REMAT_VALUES_REAL;
}
