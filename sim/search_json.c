/* search_json.c - the Pareto front as JSON (format in sim/search.h). */
#include <stdio.h>
#include <string.h>

#include "core/model/plan_notation.h"

#include "core/io/atomic_file.h"
#include "core/base/size.h"
#include "core/io/json_write.h"
#include "sim/search.h"

void remat_search_front_json(FILE *f, const remat_search_point *pts, int n, const remat_search_figures *baseline,
                             int64_t budget_bytes, const remat_front_meta *meta) {
    fprintf(f, "{");
    if (meta && meta->model) {
        fprintf(f, "\"model\":");
        remat_json_string(f, meta->model);
        fprintf(f, ",\"T\":%lld,\"N\":%lld,", (long long)meta->T, (long long)meta->N);
    }
    if (meta && meta->peak_on) fprintf(f, "\"peak_on\":\"%s\",", meta->peak_on);
    if (meta && meta->budget_total_bytes > 0 && meta->budget_total_bytes != REMAT_SIZE_INF)
        fprintf(f, "\"budget_total_bytes\":%lld,\"device_overhead_bytes\":%lld,", (long long)meta->budget_total_bytes,
                (long long)meta->device_overhead_bytes);
    fprintf(f, "\"points\":[");
    for (int i = 0; i < n; i++) {
        double over = baseline->time_s > 0 ? pts[i].time_s / baseline->time_s - 1.0 : 0.0;
        fprintf(f, "%s{\"peak_bytes\":%lld,\"time_s\":%.9g,\"overhead\":%.9g,\"chosen\":%s,\"label\":", i ? "," : "",
                (long long)pts[i].peak, pts[i].time_s, over, pts[i].chosen ? "true" : "false");
        remat_json_string(f, pts[i].label);
        fprintf(f, "}");
    }
    fprintf(f, "],\"baseline\":{\"peak_bytes\":%lld,\"time_s\":%.9g}", (long long)baseline->peak, baseline->time_s);
    if (budget_bytes > 0 && budget_bytes != REMAT_SIZE_INF) fprintf(f, ",\"budget_bytes\":%lld", (long long)budget_bytes);
    fputc('}', f);
}

remat_status remat_search_points_for_file(const remat_search_budget_result *r, const remat_model *m,
                                          remat_search_point **pts, int *n, remat_error *err) {
    const remat_search_point *src = r->n_evaluated ? r->evaluated : r->front;
    int k = r->n_evaluated ? r->n_evaluated : r->n_front;
    *n = 0;
    *pts = remat_xcalloc((size_t)(k ? k : 1), sizeof **pts, err);
    if (!*pts) return REMAT_ERR_NOMEM;
    char chosen[160] = "";
    if (r->found) remat_plan_notation(&r->plan, m, chosen, sizeof chosen);
    for (int i = 0; i < k; i++) {
        (*pts)[i] = src[i];
        (*pts)[i].chosen = r->found && !strcmp(src[i].label, chosen);
    }
    *n = k;
    return REMAT_OK;
}

remat_status remat_search_write_front(const char *path, const remat_search_point *pts, int n,
                                      const remat_search_figures *baseline, int64_t budget_bytes,
                                      const remat_front_meta *meta, remat_error *err) {
    remat_afile af;
    remat_status st = remat_afile_open(&af, path, err);
    if (st != REMAT_OK) return st;
    remat_search_front_json(af.fp, pts, n, baseline, budget_bytes, meta);
    fputc('\n', af.fp);
    return remat_afile_commit(&af, err);
}
