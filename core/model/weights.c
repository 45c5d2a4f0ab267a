/* weights.c - initial parameters from an HDF5 file (weights.h). */
#include "core/model/weights.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/io/h5_util.h"
#include "core/model/layers.h"
#include "core/model/step_tensors.h"

void remat_weights_free(remat_weights *w) {
    if (!w) return;
    if (w->values)
        for (int i = 0; i < w->n_layers * REMAT_MAX_LAYER_PARAMS; i++) remat_xfree(w->values[i]);
    remat_xfree(w->values);
    remat_xfree(w->problems);
    memset(w, 0, sizeof *w);
}

/* Appends one line to w->problems; the first also goes to err. */
static void problem(remat_weights *w, remat_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void problem(remat_weights *w, remat_error *err, const char *fmt, ...) {
    char line[REMAT_ERROR_MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    remat_error_set(err, REMAT_ERR_INPUT, "%s", line);
    size_t have = w->problems ? strlen(w->problems) : 0, add = strlen(line);
    remat_error ignored = {0};
    char *p = remat_xrealloc(w->problems, have + add + 2, &ignored);
    if (!p) return;
    memcpy(p + have, line, add);
    p[have + add] = '\n';
    p[have + add + 1] = '\0';
    w->problems = p;
    w->n_problems++;
}

static void fmt_dims(char *buf, size_t len, int rank, const int64_t *dims) {
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < rank && n < len; i++) n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? ", " : "", (long long)dims[i]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

static void load_param(hid_t f, const char *path, const remat_layer *l, int li, int pi, remat_weights *w,
                       remat_error *err) {
    char ds[REMAT_STEP_NAME_LEN + 1] = "/", want[96], got[96];
    remat_step_param_name(REMAT_STEP_PARAMS, l, pi, ds + 1, sizeof ds - 1); /* as a dump names it */
    int64_t dims[4];
    int nd = remat_layer_param_dims(l, pi, dims);
    fmt_dims(want, sizeof want, nd, dims);
    const char *type = remat_layer_type_name(l->type);
    if (!remat_h5_exists(f, ds)) {
        problem(w, err, "%s: %s: missing (layer \"%s\", %s, expects %s %s)", path, ds, l->name, type,
                remat_layer_param_name(l, pi), want);
        return;
    }
    remat_h5_info info;
    remat_error e = {0};
    if (remat_h5_info_get(f, path, ds, &info, &e) != REMAT_OK) {
        problem(w, err, "%s", e.msg);
        return;
    }
    fmt_dims(got, sizeof got, info.rank, info.dims);
    int same = info.rank == nd;
    for (int i = 0; same && i < nd; i++) same = info.dims[i] == dims[i];
    if (!same || info.type != REMAT_H5_F32) {
        problem(w, err, "%s: %s: expected float32 %s (layer \"%s\", %s), got %s %s", path, ds, want, l->name, type,
                info.type < REMAT_H5_TYPE_COUNT ? remat_h5_type_name(info.type) : "another type", got);
        return;
    }
    void *data = NULL;
    if (remat_h5_read(f, path, ds, REMAT_H5_F32, nd, NULL, &data, &e) != REMAT_OK) {
        problem(w, err, "%s", e.msg);
        return;
    }
    const float *v = data;
    for (int64_t i = 0; i < info.elems; i++)
        if (!isfinite(v[i])) {
            problem(w, err, "%s: %s: expected finite values, got %g at element %lld", path, ds, (double)v[i],
                    (long long)i);
            remat_xfree(data);
            return;
        }
    w->values[li * REMAT_MAX_LAYER_PARAMS + pi] = data;
}

/* Every /params/<layer>/<name> must be a parameter of m. */
static void check_extra(hid_t f, const char *path, const remat_model *m, remat_weights *w, remat_error *err) {
    char **names = NULL;
    int count = 0;
    remat_error e = {0};
    if (remat_h5_list_datasets(f, path, &names, &count, &e) != REMAT_OK) {
        problem(w, err, "%s", e.msg);
        return;
    }
    int n_params = 0;
    for (int i = 0; i < count; i++) {
        const char *p = names[i];
        if (strncmp(p, "/params/", 8) != 0) continue; /* a dump's other groups */
        n_params++;
        const char *slash = strrchr(p, '/');
        char layer[256];
        size_t len = (size_t)(slash - (p + 8));
        if (slash <= p + 8 || len >= sizeof layer) {
            problem(w, err, "%s: %s: expected /params/<layer>/<name>", path, p);
            continue;
        }
        memcpy(layer, p + 8, len);
        layer[len] = '\0';
        int li = remat_model_find_layer(m, layer);
        int known = 0;
        for (int pi = 0; li >= 0 && pi < remat_layer_n_params(&m->layers[li]); pi++)
            known |= strcmp(slash + 1, remat_layer_param_name(&m->layers[li], pi)) == 0;
        if (!known)
            problem(w, err, "%s: %s: expected a parameter of model \"%s\" (%s)", path, p, m->name,
                    li < 0 ? "no layer of that name" : "that layer has no such parameter");
    }
    if (!n_params) problem(w, err, "%s: /params: missing (expected /params/<layer>/<name> datasets)", path);
    remat_h5_free_names(names, count);
}

remat_status remat_weights_load(const char *path, const remat_model *m, remat_weights *out, remat_error *err) {
    memset(out, 0, sizeof *out);
    hid_t f;
    remat_status st = remat_h5_open(path, &f, err);
    if (st != REMAT_OK) return st;
    out->n_layers = m->n_layers;
    out->values = remat_xcalloc((size_t)m->n_layers * REMAT_MAX_LAYER_PARAMS, sizeof *out->values, err);
    if (!out->values) {
        remat_h5_close(f);
        return REMAT_ERR_NOMEM;
    }
    check_extra(f, path, m, out, err);
    for (int li = 0; li < m->n_layers; li++)
        for (int pi = 0; pi < remat_layer_n_params(&m->layers[li]); pi++) load_param(f, path, &m->layers[li], li, pi, out, err);
    remat_h5_close(f);
    if (out->n_problems) {
        for (int i = 0; i < out->n_layers * REMAT_MAX_LAYER_PARAMS; i++) {
            remat_xfree(out->values[i]);
            out->values[i] = NULL;
        }
        return REMAT_ERR_INPUT;
    }
    return REMAT_OK;
}
