/* grid_merge.c - one grid from its slices (grid_merge.h). */
#include "verify/grid_merge.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io/input_file.h"

static int by_index(const void *a, const void *b) {
    int x = ((const remat_verify_grid_row *)a)->index, y = ((const remat_verify_grid_row *)b)->index;
    return (x > y) - (x < y);
}

remat_status remat_verify_grid_sort(remat_verify_grid_row *rows, int n, remat_error *err) {
    if (n > 1) qsort(rows, (size_t)n, sizeof *rows, by_index);
    for (int i = 1; i < n; i++)
        if (rows[i].index == rows[i - 1].index)
            return remat_error_set(err, REMAT_ERR_INPUT, "grid: plan %d verified twice (slices overlap)", rows[i].index);
    return REMAT_OK;
}

#define BAD(...) remat_error_set(err, REMAT_ERR_INPUT, __VA_ARGS__)

static const cJSON *field(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

static int num(const cJSON *o, const char *k, double *v) {
    const cJSON *x = field(o, k);
    if (!cJSON_IsNumber(x)) return 0;
    *v = x->valuedouble;
    return 1;
}

static int str(const cJSON *o, const char *k, char *dst, size_t len) {
    const cJSON *x = field(o, k);
    if (!cJSON_IsString(x) || strlen(x->valuestring) >= len) return 0;
    snprintf(dst, len, "%s", x->valuestring);
    return 1;
}

/* One slice's rows appended to g; its context checked against the first slice's. */
static remat_status read_slice(const char *path, const cJSON *root, int k, int *slice_i, int *slice_n,
                               remat_verify_grid_merged *g, remat_error *err) {
    char name[REMAT_NAME_LEN], mpath[4096], backend[16], slice[32], verdict[32];
    double seed, threads, grid_size, sample_seed, T, N, v;
    int sampled = cJSON_IsTrue(field(root, "sampled")), eq = cJSON_IsTrue(field(root, "equivalence_only"));
    if (!str(root, "slice", slice, sizeof slice) || sscanf(slice, "%d/%d", slice_i, slice_n) != 2 || *slice_n < 1 ||
        *slice_i < 0 || *slice_i >= *slice_n)
        return BAD("%s: slice: expected \"i/n\" (the JSON of remat verify --grid --slice i/n --json)", path);
    if (!str(root, "model", name, sizeof name) || !str(root, "model_path", mpath, sizeof mpath) ||
        !str(root, "backend", backend, sizeof backend) || !num(root, "seed", &seed) ||
        !num(root, "threads", &threads) || !num(root, "grid_size", &grid_size) ||
        !num(root, "sample_seed", &sample_seed) || !num(root, "T", &T) || !num(root, "N", &N) ||
        !str(root, "verdict", verdict, sizeof verdict))
        return BAD("%s: expected the fields of a grid report (model, model_path, backend, seed, threads, grid_size, "
                   "sample_seed, T, N, verdict)",
                   path);
    int times = field(root, "total_wall_s") != NULL;
    if (k == 0) {
        snprintf(g->name, sizeof g->name, "%s", name);
        snprintf(g->model.name, sizeof g->model.name, "%s", name);
        snprintf(g->path, sizeof g->path, "%s", mpath);
        snprintf(g->backend, sizeof g->backend, "%s", backend);
        g->seed = (uint64_t)seed;
        g->threads = (int)threads;
        g->equivalence_only = eq;
        g->summary.grid_size = (int64_t)grid_size;
        g->summary.sampled = sampled;
        g->summary.sample_seed = (uint64_t)sample_seed;
        g->summary.no_times = !times;
        g->model.T = (int64_t)T;
        g->model.N = (int64_t)N;
        if (times && num(root, "baseline_step_time_s", &v)) g->summary.baseline_step_time_s = v;
    } else if (strcmp(name, g->name) || strcmp(mpath, g->path) || strcmp(backend, g->backend) ||
               (uint64_t)seed != g->seed || (int)threads != g->threads || eq != g->equivalence_only ||
               (int64_t)grid_size != g->summary.grid_size || sampled != g->summary.sampled ||
               (uint64_t)sample_seed != g->summary.sample_seed || (int64_t)T != g->model.T ||
               (int64_t)N != g->model.N) {
        return BAD("%s: expected a slice of the same grid as the first file (model, backend, seed, threads, sample, "
                   "T, N, --equivalence-only)",
                   path);
    }
    if (!times) g->summary.no_times = 1;
    if (times && num(root, "total_wall_s", &v) && v > g->summary.total_wall_s) g->summary.total_wall_s = v;
    const cJSON *plans = field(root, "plans"), *p;
    if (!cJSON_IsArray(plans)) return BAD("%s: plans: expected an array", path);
    int n = cJSON_GetArraySize(plans);
    remat_verify_grid_row *rows = realloc(g->rows, (size_t)(g->n_rows + n + 1) * sizeof *rows);
    if (!rows) return remat_error_set(err, REMAT_ERR_NOMEM, "out of memory merging %s", path);
    g->rows = rows;
    int i = 0;
    cJSON_ArrayForEach(p, plans) {
        remat_verify_grid_row *r = &g->rows[g->n_rows];
        memset(r, 0, sizeof *r);
        double idx, failures, nd;
        const cJSON *fd = field(p, "first_difference");
        if (!str(p, "plan", r->plan, sizeof r->plan) || !num(p, "index", &idx) || !num(p, "failures", &failures) ||
            !num(p, "differing_tensors", &nd) || !num(p, "peak_saving", &r->peak_saving) ||
            !num(p, "end_of_forward_saving", &r->eof_saving) ||
            !(cJSON_IsNull(fd) || str(p, "first_difference", r->first_diff, sizeof r->first_diff)))
            return BAD("%s: plans[%d]: expected plan, index, failures, differing_tensors, first_difference, "
                       "peak_saving, end_of_forward_saving",
                       path, i);
        if (idx < 0 || idx > 2147483647.0 || (int64_t)idx % *slice_n != *slice_i)
            return BAD("%s: plans[%d]: index %g is not a place of slice %d/%d", path, i, idx, *slice_i, *slice_n);
        if (times) {
            num(p, "step_time_s", &r->step_time_s);
            num(p, "wall_s", &r->wall_s);
        }
        r->index = (int)idx;
        r->failures = (unsigned)failures;
        r->n_different = (int)nd;
        g->n_rows++;
        i++;
    }
    return REMAT_OK;
}

remat_status remat_verify_grid_merge(const char *const *paths, int n, remat_verify_grid_merged *g, remat_error *err) {
    memset(g, 0, sizeof *g);
    g->model.path = g->path;
    int want_n = 0, *seen = NULL;
    remat_status st = REMAT_OK;
    for (int k = 0; k < n && st == REMAT_OK; k++) {
        char *text = NULL;
        size_t len = 0;
        st = remat_input_read_all(paths[k], (size_t)1 << 30, &text, &len, err);
        if (st != REMAT_OK) break;
        cJSON *root = cJSON_ParseWithLength(text, len);
        remat_xfree(text);
        if (!cJSON_IsObject(root)) {
            cJSON_Delete(root);
            st = BAD("%s: expected one JSON object (remat verify --grid --slice i/n --json)", paths[k]);
            break;
        }
        int si = 0, sn = 0;
        st = read_slice(paths[k], root, k, &si, &sn, g, err);
        cJSON_Delete(root);
        if (st != REMAT_OK) break;
        if (k == 0) {
            want_n = sn;
            seen = calloc((size_t)sn, sizeof *seen);
            if (!seen) st = remat_error_set(err, REMAT_ERR_NOMEM, "out of memory");
        } else if (sn != want_n) {
            st = BAD("%s: slice: %d/%d, expected a slice of %d like the first file", paths[k], si, sn, want_n);
        }
        if (st == REMAT_OK && seen[si]++) st = BAD("%s: slice: %d/%d given twice", paths[k], si, sn);
    }
    for (int i = 0; st == REMAT_OK && i < want_n; i++)
        if (!seen[i]) st = BAD("slice %d/%d: missing (expected every slice 0 .. %d of the grid)", i, want_n, want_n - 1);
    free(seen);
    if (st == REMAT_OK) st = remat_verify_grid_sort(g->rows, g->n_rows, err);
    if (st != REMAT_OK) remat_verify_grid_merged_free(g);
    return st;
}

void remat_verify_grid_merged_free(remat_verify_grid_merged *g) {
    free(g->rows);
    g->rows = NULL;
    g->n_rows = 0;
}
