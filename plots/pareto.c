/* pareto.c - the Pareto-front file (read, write) and its figure; see pareto.h. */
#define _POSIX_C_SOURCE 200809L
#include "core/io/json_write.h"
#include "plots/pareto.h"

#include "core/io/input_file.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

remat_status remat_plot_read_file(const char *path, char **text, size_t *len, remat_error *err) {
    return remat_input_read_all(path, REMAT_PLOT_MAX_FILE_BYTES, text, len, err);
}

void remat_pareto_free(remat_pareto *p) {
    if (!p) return;
    remat_xfree(p->points);
    memset(p, 0, sizeof *p);
}

/* A JSON number that must be an integer >= lo. */
static remat_status get_int(const cJSON *o, const char *key, int required, int64_t lo, int64_t *out, const char *origin,
                            const char *where, remat_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) {
        if (required) return remat_error_set(err, REMAT_ERR_INPUT, "%s: %s%s: missing (expected an integer >= %lld)", origin, where, key, (long long)lo);
        return REMAT_OK;
    }
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(d >= (double)lo) || d != floor(d) || d > 9.007199254740992e15)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: %s%s: expected an integer >= %lld", origin, where, key, (long long)lo);
    *out = (int64_t)d;
    return REMAT_OK;
}

static remat_status get_num(const cJSON *o, const char *key, int required, double lo, double *out, int *present,
                            const char *origin, const char *where, remat_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (present) *present = v != NULL;
    if (!v) {
        if (required) return remat_error_set(err, REMAT_ERR_INPUT, "%s: %s%s: missing (expected a number >= %g)", origin, where, key, lo);
        return REMAT_OK;
    }
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(d >= lo) || !isfinite(d))
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: %s%s: expected a number >= %g", origin, where, key, lo);
    *out = d;
    return REMAT_OK;
}

remat_status remat_pareto_parse(const char *text, size_t len, const char *origin, remat_pareto *out, remat_error *err) {
    memset(out, 0, sizeof *out);
    if (!origin) origin = "<pareto>";
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long off = at && at >= text && at <= text + len ? (long)(at - text) : -1;
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: (document): expected JSON, syntax error near byte %ld", origin, off);
    }
    remat_status st = REMAT_OK;
    if (!cJSON_IsObject(root)) {
        st = remat_error_set(err, REMAT_ERR_INPUT, "%s: (document): expected a JSON object", origin);
        goto done;
    }
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(root, "baseline");
    if (base) {
        if (!cJSON_IsObject(base)) {
            st = remat_error_set(err, REMAT_ERR_INPUT, "%s: baseline: expected an object {\"peak_bytes\", \"time_s\"}", origin);
            goto done;
        }
        if ((st = get_int(base, "peak_bytes", 1, 0, &out->baseline_peak_bytes, origin, "baseline.", err)) != REMAT_OK) goto done;
        if ((st = get_num(base, "time_s", 1, 0.0, &out->baseline_time_s, NULL, origin, "baseline.", err)) != REMAT_OK) goto done;
        out->has_baseline = 1;
    }
    if ((st = get_int(root, "budget_bytes", 0, 1, &out->budget_bytes, origin, "", err)) != REMAT_OK) goto done;
    if ((st = get_int(root, "budget_total_bytes", 0, 1, &out->budget_total_bytes, origin, "", err)) != REMAT_OK) goto done;
    if ((st = get_int(root, "device_overhead_bytes", 0, 0, &out->device_overhead_bytes, origin, "", err)) != REMAT_OK)
        goto done;
    if ((st = get_int(root, "T", 0, 1, &out->T, origin, "", err)) != REMAT_OK) goto done;
    if ((st = get_int(root, "N", 0, 1, &out->N, origin, "", err)) != REMAT_OK) goto done;
    {
        const cJSON *mo = cJSON_GetObjectItemCaseSensitive(root, "model");
        const cJSON *po = cJSON_GetObjectItemCaseSensitive(root, "peak_on");
        if ((mo && !cJSON_IsString(mo)) ||
            (po && !(cJSON_IsString(po) && (!strcmp(po->valuestring, "reserved") || !strcmp(po->valuestring, "live"))))) {
            st = remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: expected %s", origin, mo && !cJSON_IsString(mo) ? "model" : "peak_on",
                                 mo && !cJSON_IsString(mo) ? "a string" : "\"reserved\" or \"live\"");
            goto done;
        }
        if (mo) snprintf(out->model, sizeof out->model, "%s", mo->valuestring);
        if (po) snprintf(out->peak_on, sizeof out->peak_on, "%s", po->valuestring);
    }
    const cJSON *pts = cJSON_GetObjectItemCaseSensitive(root, "points");
    if (!pts || !cJSON_IsArray(pts) || cJSON_GetArraySize(pts) < 1) {
        st = remat_error_set(err, REMAT_ERR_INPUT, "%s: points: expected an array of at least one point", origin);
        goto done;
    }
    int n = cJSON_GetArraySize(pts);
    out->points = remat_xcalloc((size_t)n, sizeof *out->points, err);
    if (!out->points) { st = REMAT_ERR_NOMEM; goto done; }
    int i = 0;
    const cJSON *pt;
    cJSON_ArrayForEach(pt, pts) {
        char where[48];
        snprintf(where, sizeof where, "points[%d].", i);
        remat_pareto_point *q = &out->points[i];
        if (!cJSON_IsObject(pt)) {
            st = remat_error_set(err, REMAT_ERR_INPUT, "%s: points[%d]: expected an object", origin, i);
            goto done;
        }
        if ((st = get_int(pt, "peak_bytes", 1, 0, &q->peak_bytes, origin, where, err)) != REMAT_OK) goto done;
        if ((st = get_num(pt, "time_s", 1, 0.0, &q->time_s, NULL, origin, where, err)) != REMAT_OK) goto done;
        int has_ov = 0;
        if ((st = get_num(pt, "overhead", 0, -1.0, &q->overhead, &has_ov, origin, where, err)) != REMAT_OK) goto done;
        if (!has_ov) {
            if (!out->has_baseline || !(out->baseline_time_s > 0.0)) {
                st = remat_error_set(err, REMAT_ERR_INPUT,
                                     "%s: points[%d].overhead: missing (expected a number, or baseline.time_s > 0 to derive it)",
                                     origin, i);
                goto done;
            }
            q->overhead = q->time_s / out->baseline_time_s - 1.0;
        }
        const cJSON *ch = cJSON_GetObjectItemCaseSensitive(pt, "chosen");
        if (ch && !cJSON_IsBool(ch)) {
            st = remat_error_set(err, REMAT_ERR_INPUT, "%s: points[%d].chosen: expected true or false", origin, i);
            goto done;
        }
        q->chosen = ch && cJSON_IsTrue(ch);
        const cJSON *lb = cJSON_GetObjectItemCaseSensitive(pt, "label");
        if (lb && !cJSON_IsString(lb)) {
            st = remat_error_set(err, REMAT_ERR_INPUT, "%s: points[%d].label: expected a string", origin, i);
            goto done;
        }
        if (lb) snprintf(q->label, sizeof q->label, "%s", lb->valuestring);
        else snprintf(q->label, sizeof q->label, "plan %d", i);
        i++;
    }
    out->n_points = n;
done:
    cJSON_Delete(root);
    if (st != REMAT_OK) remat_pareto_free(out);
    return st;
}

remat_status remat_pareto_read(const char *path, remat_pareto *out, remat_error *err) {
    memset(out, 0, sizeof *out);
    char *text;
    size_t len;
    remat_status st = remat_plot_read_file(path, &text, &len, err);
    if (st != REMAT_OK) return st;
    st = remat_pareto_parse(text, len, path, out, err);
    remat_xfree(text);
    return st;
}

remat_status remat_pareto_write(const char *path, const remat_pareto *p, remat_error *err) {
    remat_afile af;
    remat_status st = remat_afile_open(&af, path, err);
    if (st != REMAT_OK) return st;
    FILE *fp = af.fp;
    fprintf(fp, "{\n");
    if (p->model[0]) {
        fprintf(fp, "  \"model\": ");
        remat_json_string(fp, p->model);
        fprintf(fp, ", \"T\": %lld, \"N\": %lld,\n", (long long)p->T, (long long)p->N);
    }
    if (p->peak_on[0]) fprintf(fp, "  \"peak_on\": \"%s\",\n", p->peak_on);
    if (p->budget_total_bytes > 0)
        fprintf(fp, "  \"budget_total_bytes\": %lld, \"device_overhead_bytes\": %lld,\n", (long long)p->budget_total_bytes,
                (long long)p->device_overhead_bytes);
    fprintf(fp, "  \"points\": [");
    for (int i = 0; i < p->n_points; i++) {
        const remat_pareto_point *q = &p->points[i];
        fprintf(fp, "%s\n    {\"peak_bytes\": %lld, \"time_s\": %.17g, \"overhead\": %.17g, \"chosen\": %s, \"label\": ",
                i ? "," : "", (long long)q->peak_bytes, q->time_s, q->overhead, q->chosen ? "true" : "false");
        remat_json_string(fp, q->label);
        fputc('}', fp);
    }
    fprintf(fp, "\n  ]");
    if (p->has_baseline)
        fprintf(fp, ",\n  \"baseline\": {\"peak_bytes\": %lld, \"time_s\": %.17g}", (long long)p->baseline_peak_bytes,
                p->baseline_time_s);
    if (p->budget_bytes > 0) fprintf(fp, ",\n  \"budget_bytes\": %lld", (long long)p->budget_bytes);
    fprintf(fp, "\n}\n");
    return remat_afile_commit(&af, err);
}

/* Non-dominated subset of (ov[i], pk[i]), sorted by overhead then peak. */
static int front_of(const double *ov, const int64_t *pk, int n, int *idx) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        int dominated = 0;
        for (int j = 0; j < n && !dominated; j++) {
            if (j == i) continue;
            int le = ov[j] <= ov[i] && pk[j] <= pk[i];
            int lt = ov[j] < ov[i] || pk[j] < pk[i];
            if (le && lt) dominated = 1;
            else if (le && j < i) dominated = 1; /* an equal point seen first */
        }
        if (!dominated) idx[k++] = i;
    }
    for (int a = 1; a < k; a++)
        for (int b = a; b > 0; b--) {
            int x = idx[b - 1], y = idx[b];
            if (ov[x] > ov[y] || (ov[x] == ov[y] && pk[x] > pk[y])) { idx[b - 1] = y; idx[b] = x; }
            else break;
        }
    return k;
}

int remat_pareto_front(const remat_pareto *p, int *idx) {
    double *ov = remat_xmalloc((size_t)(p->n_points > 0 ? p->n_points : 1) * sizeof(double), NULL);
    int64_t *pk = remat_xmalloc((size_t)(p->n_points > 0 ? p->n_points : 1) * sizeof(int64_t), NULL);
    int k = 0;
    if (ov && pk) {
        for (int i = 0; i < p->n_points; i++) { ov[i] = p->points[i].overhead; pk[i] = p->points[i].peak_bytes; }
        k = front_of(ov, pk, p->n_points, idx);
    }
    remat_xfree(ov);
    remat_xfree(pk);
    return k;
}

/* The points of a figure: overhead and peak of every point (the baseline last, at 0 %),
 * the non-dominated ones, and the ranges drawn. */
typedef struct pareto_fig {
    int n, nf, nchosen;
    double *ov;
    int64_t *pk;
    int *idx;
    double ymax, xlo, xhi;
} pareto_fig;

static remat_status pareto_fig_build(const remat_pareto *p, pareto_fig *g, remat_error *err) {
    int n = g->n = p->n_points + (p->has_baseline ? 1 : 0);
    g->ov = remat_xmalloc((size_t)n * sizeof(double), err);
    g->pk = remat_xmalloc((size_t)n * sizeof(int64_t), err);
    g->idx = remat_xmalloc((size_t)n * sizeof(int), err);
    if (!g->ov || !g->pk || !g->idx) return REMAT_ERR_NOMEM;
    double omin = 0.0, omax = 0.0;
    g->ymax = 1.0;
    for (int i = 0; i < p->n_points; i++) {
        g->ov[i] = p->points[i].overhead;
        g->pk[i] = p->points[i].peak_bytes;
        g->nchosen += p->points[i].chosen;
    }
    if (p->has_baseline) {
        g->ov[n - 1] = 0.0;
        g->pk[n - 1] = p->baseline_peak_bytes;
    }
    for (int i = 0; i < n; i++) {
        if (g->ov[i] < omin) omin = g->ov[i];
        if (g->ov[i] > omax) omax = g->ov[i];
        if ((double)g->pk[i] > g->ymax) g->ymax = (double)g->pk[i];
    }
    if ((double)p->budget_bytes > g->ymax) g->ymax = (double)p->budget_bytes;
    g->nf = front_of(g->ov, g->pk, n, g->idx);
    double span = (omax - omin) * 100.0;
    if (span <= 0.0) span = 10.0;
    g->xlo = omin * 100.0 - 0.06 * span;
    g->xhi = omax * 100.0 + 0.30 * span;
    return REMAT_OK;
}

/* The data file: every point, the front (as a staircase to the right edge), the chosen, the baseline. */
static void pareto_put_data(FILE *fp, const remat_pareto *p, const pareto_fig *g) {
    fprintf(fp, "# remat plot --pareto: plans of a search; overhead in percent, peak in bytes.\n");
    fprintf(fp, "# index 0: every point: overhead_pct peak_bytes time_s chosen \"label\"\n");
    for (int i = 0; i < p->n_points; i++) {
        const remat_pareto_point *q = &p->points[i];
        fprintf(fp, "%.9g %lld %.9g %d ", q->overhead * 100.0, (long long)q->peak_bytes, q->time_s, q->chosen);
        remat_gp_put_datum(fp, q->label);
        fputc('\n', fp);
    }
    fprintf(fp, "\n\n# index 1: the non-dominated points (baseline included), by overhead: overhead_pct peak_bytes\n");
    for (int k = 0; k < g->nf; k++) fprintf(fp, "%.9g %lld\n", g->ov[g->idx[k]] * 100.0, (long long)g->pk[g->idx[k]]);
    /* extend the staircase to the right edge so the last step reads as "from here on" */
    fprintf(fp, "%.9g %lld\n", g->xhi, (long long)g->pk[g->idx[g->nf - 1]]);
    if (g->nchosen) {
        fprintf(fp, "\n\n# index 2: chosen: overhead_pct peak_bytes time_s \"label\"\n");
        for (int i = 0; i < p->n_points; i++)
            if (p->points[i].chosen) {
                fprintf(fp, "%.9g %lld %.9g ", p->points[i].overhead * 100.0, (long long)p->points[i].peak_bytes,
                        p->points[i].time_s);
                remat_gp_put_datum(fp, p->points[i].label);
                fputc('\n', fp);
            }
    }
    if (p->has_baseline)
        fprintf(fp, "\n\n# index %d: baseline: overhead_pct peak_bytes time_s\n0 %lld %.9g\n", g->nchosen ? 3 : 2,
                (long long)p->baseline_peak_bytes, p->baseline_time_s);
}

/* What the peaks are, for the title and the y label. */
static const char *peak_on_text(const remat_pareto *p, int long_form) {
    if (!strcmp(p->peak_on, "live")) return "live memory";
    if (!strcmp(p->peak_on, "reserved")) return long_form ? "reserved memory (caching allocator model)" : "reserved memory";
    return "memory";
}

/* The script's labels: the budget line, each chosen plan, the baseline. */
static void pareto_put_labels(FILE *fp, const remat_pareto *p) {
    if (p->budget_bytes > 0) {
        char b[32], b2[32], b3[32], t[160];
        if (p->budget_total_bytes > 0 && p->device_overhead_bytes > 0) /* the line is the allocator's share */
            snprintf(t, sizeof t, "budget %s for the allocator (%s less the %s device overhead)",
                     remat_fmt_bytes_short(p->budget_bytes, b, sizeof b),
                     remat_fmt_bytes_short(p->budget_total_bytes, b2, sizeof b2),
                     remat_fmt_bytes_short(p->device_overhead_bytes, b3, sizeof b3));
        else
            snprintf(t, sizeof t, "budget %s", remat_fmt_bytes_short(p->budget_bytes, b, sizeof b));
        remat_gp_put_budget(fp, 1, p->budget_bytes, t, 1);
    }
    int lab = 10;
    for (int i = 0; i < p->n_points; i++) {
        if (!p->points[i].chosen) continue;
        char b[32], t[300];
        snprintf(t, sizeof t, "chosen: %s\n%s at %+.1f %%", p->points[i].label,
                 remat_fmt_bytes_short(p->points[i].peak_bytes, b, sizeof b), p->points[i].overhead * 100.0);
        fprintf(fp, "set label %d ", lab++);
        remat_gp_put_string(fp, t);
        fprintf(fp, " at first %.9g, first %lld/yscale offset 1.5,-1.9 left boxed front tc rgb \"#b03010\"\n",
                p->points[i].overhead * 100.0, (long long)p->points[i].peak_bytes);
    }
    if (p->has_baseline) {
        char b[32], t[100];
        snprintf(t, sizeof t, "baseline: %s", remat_fmt_bytes_short(p->baseline_peak_bytes, b, sizeof b));
        fprintf(fp, "set label %d ", lab++);
        remat_gp_put_string(fp, t);
        fprintf(fp, " at first 0, first %lld/yscale offset 0,1.5 left boxed front tc rgb \"#202020\"\n",
                (long long)p->baseline_peak_bytes);
    }
}

/* The script: axes, labels, the front, the points, the chosen plan and the baseline. */
static void pareto_put_script(FILE *fp, const remat_pareto *p, const pareto_fig *g, const char *origin,
                              const remat_figure_files *files, const remat_figure_opts *fo) {
    remat_unit yu = remat_unit_bytes(g->ymax);
    remat_gp_put_open(fp, files, fo,
                      "remat plot --pareto: predicted peak against predicted time overhead of the plans of a search.",
                      NULL);
    char ys[48];
    fprintf(fp, "\nyscale = %s\nylab = \"%s\"\nytop = %.17g / yscale\n", remat_gp_real(yu.scale, ys, sizeof ys), yu.name,
            g->ymax * 1.15);
    char title[400];
    if (!remat_figure_title_given(fo, title, sizeof title)) {
        char stem[128];
        remat_path_stem(origin ? origin : "", stem, sizeof stem);
        if (p->model[0]) /* what the search was about, not the file's name */
            snprintf(title, sizeof title, "%s (T=%lld, N=%lld): predicted peak %s against step-time overhead",
                     p->model, (long long)p->T, (long long)p->N, peak_on_text(p, 0));
        else snprintf(title, sizeof title, "Peak memory against step-time overhead%s%s", stem[0] ? " - " : "", stem);
    }
    remat_gp_put_title(fp, title);
    fprintf(fp, "set xrange [%.9g:%.9g]\nset yrange [0:ytop]\n", g->xlo, g->xhi);
    fprintf(fp, "set xlabel \"predicted step-time overhead over the baseline (%%)\"\n");
    /* what peak_bytes are: reserved bytes (the caching model, the search's default) or live */
    fprintf(fp, "set ylabel \"predicted peak %s (\".ylab.\")\"\nset format y \"%%g\"\nset format x \"%%g\"\n",
            peak_on_text(p, 1));
    remat_gp_put_grid(fp);
    fprintf(fp, "set key bottom left Left reverse samplen 2 spacing 1.2 box lc rgb \"#cccccc\" opaque\n");
    fprintf(fp, "set style textbox opaque fc rgb \"white\" noborder margins 2,1\n");
    pareto_put_labels(fp, p);
    fprintf(fp, "# to name every point: add  dat index 0 using 1:($2/yscale):5 with labels offset 1,0.6 left font \",8\" notitle\n");
    fprintf(fp, "plot \\\n");
    fprintf(fp, "  dat index 1 using 1:($2/yscale) with steps lw 2 lc rgb \"#1f5fbf\" title \"Pareto front (lower peak costs more time)\", \\\n");
    fprintf(fp, "  dat index 0 using 1:($2/yscale) with points pt 6 ps 1.1 lc rgb \"#6f8fbf\" title \"plans evaluated (%d)\"",
            p->n_points);
    if (g->nchosen)
        fprintf(fp, ", \\\n  dat index 2 using 1:($2/yscale) with points pt 7 ps 2.2 lc rgb \"#d6451b\" title \"chosen plan\"");
    if (p->has_baseline)
        fprintf(fp, ", \\\n  dat index %d using 1:($2/yscale) with points pt 5 ps 1.8 lc rgb \"#202020\" title \"baseline (no checkpointing)\"",
                g->nchosen ? 3 : 2);
    fprintf(fp, "\n");
}

remat_status remat_plot_pareto(const remat_pareto *p, const char *origin, const remat_figure_opts *fo,
                               remat_figure_files *files, remat_error *err) {
    remat_figure_opts fdef;
    remat_status st = remat_figure_begin(&fo, &fdef, files, err);
    if (st != REMAT_OK) return st;
    if (p->n_points < 1) return remat_error_set(err, REMAT_ERR_INPUT, "%s: points: expected at least one point", origin ? origin : "<pareto>");
    pareto_fig g;
    memset(&g, 0, sizeof g);
    st = pareto_fig_build(p, &g, err);
    remat_afile af;
    if (st == REMAT_OK && (st = remat_afile_open(&af, files->data, err)) == REMAT_OK) {
        pareto_put_data(af.fp, p, &g);
        st = remat_afile_commit(&af, err);
    }
    if (st == REMAT_OK && (st = remat_afile_open(&af, files->script, err)) == REMAT_OK) {
        pareto_put_script(af.fp, p, &g, origin, files, fo);
        st = remat_afile_commit(&af, err);
    }
    if (st == REMAT_OK) st = remat_figure_render(fo, files, err);
    remat_xfree(g.ov);
    remat_xfree(g.pk);
    remat_xfree(g.idx);
    return st;
}
