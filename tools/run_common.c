/* run_common.c - backend by name, model + plan loading. */
#include "tools/run_common.h"

#include <stdio.h>
#include <string.h>

#include "core/io/file_kind.h"
#include "core/model/plan_notation.h"
#include "core/ref/simd.h"

remat_status remat_tools_backend_open(const char *name, int threads, remat_backend *out, remat_error *err) {
    if (!name || !strcmp(name, "ref")) return remat_backend_ref_init(out, threads > 0 ? threads : 1, err);
    if (!strcmp(name, "cuda")) return remat_backend_cuda_init(out, 0, err);
    return remat_error_set(err, REMAT_ERR_INPUT, "--backend: '%s' is not a backend (expected ref or cuda)", name);
}

const char *remat_tools_simd_path(void) { return remat_ref_simd_name(remat_ref_simd_get()); }

void remat_tools_trace_host(remat_trace *t, const char *backend, int threads) {
    t->threads = threads;
    snprintf(t->simd, sizeof t->simd, "%s", !backend || !strcmp(backend, "ref") ? remat_tools_simd_path() : "");
}

remat_status remat_tools_model_load(const char *path, remat_model *m, remat_error *err) {
    remat_status st = remat_model_load(path, m, err);
    if (st != REMAT_ERR_INPUT) return st;
    remat_file_kind k = remat_file_kind_of(path);
    if (k != REMAT_FILE_PLAN && k != REMAT_FILE_PARETO && k != REMAT_FILE_SCALING && k != REMAT_FILE_HDF5) return st;
    err->msg[0] = '\0';
    err->status = REMAT_OK;
    return remat_error_set(err, REMAT_ERR_INPUT, "%s: (file): expected a model file, got %s%s", path,
                           remat_file_kind_words(k), k == REMAT_FILE_PLAN ? " (pass it as --plan)" : "");
}

remat_status remat_tools_load(const char *model_path, const char *plan_path, remat_model *m, remat_plan *p,
                              remat_error *err) {
    memset(m, 0, sizeof *m);
    memset(p, 0, sizeof *p);
    remat_status st = remat_tools_model_load(model_path, m, err);
    if (st != REMAT_OK) return st;
    st = plan_path ? remat_plan_load_arg(plan_path, m, p, err) : remat_plan_init_empty(m, p, err);
    if (st != REMAT_OK) remat_model_free(m);
    return st;
}

remat_status remat_tools_load_sized(const char *model_path, const char *plan_path, int64_t T, int64_t N,
                                    remat_model *m, remat_plan *p, remat_error *err) {
    if (!T && !N) return remat_tools_load(model_path, plan_path, m, p, err);
    memset(m, 0, sizeof *m);
    memset(p, 0, sizeof *p);
    remat_model file;
    remat_status st = remat_tools_model_load(model_path, &file, err);
    if (st != REMAT_OK) return st;
    st = remat_model_rescale(&file, T, N, m, err);
    remat_model_free(&file);
    if (st != REMAT_OK) return st;
    st = plan_path ? remat_plan_load_arg(plan_path, m, p, err) : remat_plan_init_empty(m, p, err);
    if (st != REMAT_OK) remat_model_free(m);
    return st;
}

int remat_tools_size_flags(const char *cmd, int T, int N) {
    if (T < 0 || N < 0) {
        fprintf(stderr, "remat %s: --%s: expected a positive count (or leave it out for the model file's), got %d\n",
                cmd, T < 0 ? "T" : "N", T < 0 ? T : N);
        return 2;
    }
    if (T > REMAT_TRACE_MAX_T || N > REMAT_TRACE_MAX_N) { /* the model file's own limits */
        fprintf(stderr, "remat %s: --%s: expected 1..%lld (the largest %s a model may have), got %d\n", cmd,
                T > REMAT_TRACE_MAX_T ? "T" : "N",
                (long long)(T > REMAT_TRACE_MAX_T ? REMAT_TRACE_MAX_T : REMAT_TRACE_MAX_N),
                T > REMAT_TRACE_MAX_T ? "T" : "N", T > REMAT_TRACE_MAX_T ? T : N);
        return 2;
    }
    return 0;
}

void remat_tools_caching_config_text(const remat_caching_config *c, char *buf, size_t len) {
    remat_caching_config_format(c, buf, len);
}

int remat_tools_init_weights(const char *cmd, const char *path, const remat_model *m, remat_weights *w) {
    remat_error err = {0};
    if (remat_weights_load(path, m, w, &err) == REMAT_OK) return 0;
    if (w->problems) {
        for (const char *line = w->problems; *line;) {
            const char *end = strchr(line, '\n');
            fprintf(stderr, "remat %s: --init: %.*s\n", cmd, (int)(end - line), line);
            line = end + 1;
        }
    } else {
        fprintf(stderr, "remat %s: --init: %s\n", cmd, err.msg);
    }
    remat_weights_free(w);
    return remat_status_exit_code(err.status);
}
