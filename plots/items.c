/* items.c - curves, models and labels of the traces of one figure; colours. */
#include "plots/items.h"

#include <stdio.h>
#include <string.h>

#include "plots/names.h"

const char *remat_plot_trace_color(int i) {
    static const char *const c[] = {"#1f5fbf", "#d6451b", "#2a9d3f", "#8e44ad", "#b8860b", "#0f8b8d", "#c2185b", "#555555"};
    return c[(i < 0 ? 0 : i) % 8];
}

const char *remat_plot_phase_color(int phase, int strong) {
    /* init, forward, recompute, loss, backward, optimizer, other */
    static const char *const light[] = {"#e6e6e6", "#dbe8f8", "#fde6cf", "#ece0f5", "#dcf1dc", "#fbf1c4", "#f0f0f0"};
    static const char *const dark[] = {"#a6a6a6", "#6fa3e0", "#f29a4a", "#a77cc9", "#6cbf6c", "#d9b92e", "#cccccc"};
    int p = phase >= 0 && phase < 6 ? phase : 6;
    return strong ? dark[p] : light[p];
}

void remat_plot_items_free(remat_plot_item *items, int n) {
    for (int i = 0; i < n; i++) {
        remat_mem_curve_free(&items[i].curve);
        if (items[i].has_model) remat_model_free(&items[i].model);
        items[i].has_model = 0;
    }
}

void remat_plot_items_model_name(const remat_plot_item *items, int n, char *buf, size_t len) {
    buf[0] = '\0';
    for (int i = 0; i < n && !buf[0]; i++)
        if (items[i].has_model)
            snprintf(buf, len, " - model %s (T=%lld, N=%lld)", items[i].model.name, (long long)items[i].model.T,
                     (long long)items[i].model.N);
}

remat_status remat_plot_items_build(const remat_plot_input *in, int n, const remat_curve_opts *co,
                                    remat_plot_item *items, remat_error *err) {
    if (n < 1 || n > REMAT_PLOT_MAX_INPUTS)
        return remat_error_set(err, REMAT_ERR_INPUT, "--trace: expected 1 to %d traces, got %d", REMAT_PLOT_MAX_INPUTS, n);
    memset(items, 0, (size_t)n * sizeof *items);
    remat_curve_opts o = co ? *co : remat_curve_opts_default();
    for (int pass = 0; pass < 2; pass++) {
        int fallback = 0;
        for (int i = 0; i < n; i++) {
            remat_status st = remat_mem_curve_build(in[i].trace, in[i].origin, &o, &items[i].curve, err);
            if (st != REMAT_OK) {
                remat_plot_items_free(items, n);
                return st;
            }
            if (o.x == REMAT_CURVE_X_TIME && items[i].curve.x_end <= 0.0) fallback = 1;
        }
        if (!fallback) break;
        remat_plot_items_free(items, n);
        o.x = REMAT_CURVE_X_EVENT;
    }
    int backends_differ = 0;
    for (int i = 1; i < n; i++)
        if (strcmp(in[i].trace->backend, in[0].trace->backend) != 0) backends_differ = 1;
    for (int i = 0; i < n; i++) {
        items[i].has_model = remat_plot_model_of(in[i].trace, &items[i].model);
        if (in[i].label && in[i].label[0]) {
            snprintf(items[i].label, sizeof items[i].label, "%s", in[i].label);
            continue;
        }
        char stem[96], plan[96];
        remat_path_stem(in[i].origin ? in[i].origin : "", stem, sizeof stem);
        remat_plot_plan_label(in[i].trace, items[i].has_model ? &items[i].model : NULL, stem, plan, sizeof plan);
        if (backends_differ && in[i].trace->backend[0])
            snprintf(items[i].label, sizeof items[i].label, "%s [%s]", plan, in[i].trace->backend);
        else
            snprintf(items[i].label, sizeof items[i].label, "%s", plan);
    }
    /* make labels unique: append the file stem, then the position */
    int dup[REMAT_PLOT_MAX_INPUTS] = {0};
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (j != i && strcmp(items[i].label, items[j].label) == 0) dup[i] = 1;
    for (int i = 0; i < n; i++) {
        if (!dup[i] || (in[i].label && in[i].label[0])) continue;
        char stem[96], tmp[160];
        remat_path_stem(in[i].origin ? in[i].origin : "", stem, sizeof stem);
        snprintf(tmp, sizeof tmp, "%.100s (%.50s)", items[i].label, stem[0] ? stem : "trace");
        snprintf(items[i].label, sizeof items[i].label, "%s", tmp);
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(items[i].label, items[j].label) == 0) {
                char tmp[160];
                snprintf(tmp, sizeof tmp, "%.140s #%d", items[i].label, i + 1);
                snprintf(items[i].label, sizeof items[i].label, "%s", tmp);
                break;
            }
    return REMAT_OK;
}

const char *remat_plot_inputs_execution(const remat_plot_input *in, int n) {
    const char *exec = remat_trace_execution(n > 0 ? in[0].trace->backend : "");
    for (int i = 1; i < n; i++)
        if (strcmp(remat_trace_execution(in[i].trace->backend), exec)) return "remat's executor";
    return exec;
}
