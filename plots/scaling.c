/* scaling.c - the peak-against-T file (read, write) and its figure; see scaling.h. */
#include "core/io/json_write.h"
#include "plots/scaling.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "plots/items.h"
#include "plots/pareto.h" /* remat_plot_read_file */

void remat_scaling_free(remat_scaling *s) {
    if (!s) return;
    for (int i = 0; i < REMAT_SCALING_MAX_SERIES; i++) {
        remat_xfree(s->series[i].x);
        remat_xfree(s->series[i].peak_bytes);
    }
    memset(s, 0, sizeof *s);
}

remat_status remat_scaling_series_alloc(remat_scaling_series *s, int n, remat_error *err) {
    s->n = n;
    s->x = remat_xcalloc((size_t)n, sizeof(double), err);
    s->peak_bytes = remat_xcalloc((size_t)n, sizeof(int64_t), err);
    return s->x && s->peak_bytes ? REMAT_OK : REMAT_ERR_NOMEM;
}

static const char *fit_name(remat_scaling_fit f) {
    return f == REMAT_FIT_LINEAR ? "linear" : f == REMAT_FIT_SQRT ? "sqrt" : "none";
}

static remat_status parse_series(const cJSON *o, int i, const char *origin, remat_scaling_series *s, remat_error *err) {
    if (!cJSON_IsObject(o)) return remat_error_set(err, REMAT_ERR_INPUT, "%s: series[%d]: expected an object", origin, i);
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(o, "name");
    if (!cJSON_IsString(nm) || !nm->valuestring[0])
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: series[%d].name: expected a non-empty string", origin, i);
    snprintf(s->name, sizeof s->name, "%s", nm->valuestring);
    const cJSON *xs = cJSON_GetObjectItemCaseSensitive(o, "x");
    const cJSON *ys = cJSON_GetObjectItemCaseSensitive(o, "peak_bytes");
    if (!cJSON_IsArray(xs) || cJSON_GetArraySize(xs) < 1)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: series[%d].x: expected an array of at least one number", origin, i);
    int n = cJSON_GetArraySize(xs);
    if (!cJSON_IsArray(ys) || cJSON_GetArraySize(ys) != n)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: series[%d].peak_bytes: expected an array of %d integers (as many as x)",
                               origin, i, n);
    s->x = remat_xmalloc((size_t)n * sizeof(double), err);
    s->peak_bytes = remat_xmalloc((size_t)n * sizeof(int64_t), err);
    if (!s->x || !s->peak_bytes) return REMAT_ERR_NOMEM;
    for (int k = 0; k < n; k++) {
        const cJSON *xv = cJSON_GetArrayItem(xs, k), *yv = cJSON_GetArrayItem(ys, k);
        double x = cJSON_IsNumber(xv) ? xv->valuedouble : NAN;
        double y = cJSON_IsNumber(yv) ? yv->valuedouble : NAN;
        if (!(x > 0.0) || !isfinite(x))
            return remat_error_set(err, REMAT_ERR_INPUT, "%s: series[%d].x[%d]: expected a number > 0", origin, i, k);
        if (!(y >= 0.0) || y != floor(y) || y > 9.007199254740992e15)
            return remat_error_set(err, REMAT_ERR_INPUT, "%s: series[%d].peak_bytes[%d]: expected an integer >= 0", origin, i, k);
        s->x[k] = x;
        s->peak_bytes[k] = (int64_t)y;
    }
    s->n = n;
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, "fit");
    if (f) {
        if (!cJSON_IsString(f))
            return remat_error_set(err, REMAT_ERR_INPUT, "%s: series[%d].fit: expected \"linear\", \"sqrt\" or \"none\"", origin, i);
        if (!strcmp(f->valuestring, "linear")) s->fit = REMAT_FIT_LINEAR;
        else if (!strcmp(f->valuestring, "sqrt")) s->fit = REMAT_FIT_SQRT;
        else if (!strcmp(f->valuestring, "none")) s->fit = REMAT_FIT_NONE;
        else
            return remat_error_set(err, REMAT_ERR_INPUT, "%s: series[%d].fit: expected \"linear\", \"sqrt\" or \"none\", got \"%s\"",
                                   origin, i, f->valuestring);
        s->fit_given = 1;
    }
    return REMAT_OK;
}

remat_status remat_scaling_parse(const char *text, size_t len, const char *origin, remat_scaling *out,
                                 remat_error *err) {
    memset(out, 0, sizeof *out);
    if (!origin) origin = "<scaling>";
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long off = at && at >= text && at <= text + len ? (long)(at - text) : -1;
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: (document): expected JSON, syntax error near byte %ld", origin, off);
    }
    remat_status st = REMAT_OK;
    const cJSON *xn = cJSON_GetObjectItemCaseSensitive(root, "x_name");
    const cJSON *ser = cJSON_GetObjectItemCaseSensitive(root, "series");
    if (!cJSON_IsObject(root)) {
        st = remat_error_set(err, REMAT_ERR_INPUT, "%s: (document): expected a JSON object", origin);
    } else if (!cJSON_IsString(xn) || !xn->valuestring[0] || strlen(xn->valuestring) >= sizeof out->x_name) {
        st = remat_error_set(err, REMAT_ERR_INPUT, "%s: x_name: expected a short string such as \"T\" or \"N\"", origin);
    } else if (!cJSON_IsArray(ser) || cJSON_GetArraySize(ser) < 1 || cJSON_GetArraySize(ser) > REMAT_SCALING_MAX_SERIES) {
        st = remat_error_set(err, REMAT_ERR_INPUT, "%s: series: expected an array of 1 to %d series", origin,
                             REMAT_SCALING_MAX_SERIES);
    } else {
        snprintf(out->x_name, sizeof out->x_name, "%s", xn->valuestring);
        const cJSON *yn = cJSON_GetObjectItemCaseSensitive(root, "y_name");
        if (yn && (!cJSON_IsString(yn) || strlen(yn->valuestring) >= sizeof out->y_name))
            st = remat_error_set(err, REMAT_ERR_INPUT, "%s: y_name: expected a short string such as \"peak live memory\"",
                                 origin);
        else if (yn)
            snprintf(out->y_name, sizeof out->y_name, "%s", yn->valuestring);
        static const char *const opt_ints[] = {"N", "T", "budget_bytes"};
        int64_t *dst[] = {&out->at_N, &out->at_T, &out->budget_bytes};
        for (int k = 0; k < 3 && st == REMAT_OK; k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, opt_ints[k]);
            if (!v) continue;
            if (!cJSON_IsNumber(v) || !(v->valuedouble >= 1) || v->valuedouble != floor(v->valuedouble) ||
                v->valuedouble > 9.007199254740992e15)
                st = remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: expected an integer > 0", origin, opt_ints[k]);
            else
                *dst[k] = (int64_t)v->valuedouble;
        }
        int i = 0;
        const cJSON *o;
        if (st == REMAT_OK) cJSON_ArrayForEach(o, ser) {
            out->n_series = i + 1;
            if ((st = parse_series(o, i, origin, &out->series[i], err)) != REMAT_OK) break;
            i++;
        }
    }
    cJSON_Delete(root);
    if (st != REMAT_OK) {
        remat_scaling_free(out);
        return st;
    }
    /* default fits */
    int any_given = 0, lin = -1;
    for (int i = 0; i < out->n_series; i++) any_given |= out->series[i].fit_given;
    if (!any_given) {
        for (int i = 0; i < out->n_series && lin < 0; i++)
            if (!strcasecmp(out->series[i].name, "baseline")) lin = i;
        if (lin < 0) lin = 0;
        out->series[lin].fit = REMAT_FIT_LINEAR;
        for (int i = out->n_series - 1; i >= 0; i--)
            if (i != lin) {
                out->series[i].fit = remat_scaling_best_fit(&out->series[i]);
                break;
            }
    }
    return REMAT_OK;
}

remat_status remat_scaling_read(const char *path, remat_scaling *out, remat_error *err) {
    memset(out, 0, sizeof *out);
    char *text;
    size_t len;
    remat_status st = remat_plot_read_file(path, &text, &len, err);
    if (st != REMAT_OK) return st;
    st = remat_scaling_parse(text, len, path, out, err);
    remat_xfree(text);
    return st;
}

remat_status remat_scaling_write(const char *path, const remat_scaling *s, remat_error *err) {
    remat_afile af;
    remat_status st = remat_afile_open(&af, path, err);
    if (st != REMAT_OK) return st;
    FILE *fp = af.fp;
    fprintf(fp, "{\n  \"x_name\": ");
    remat_json_string(fp, s->x_name);
    if (s->at_N > 0) fprintf(fp, ",\n  \"N\": %lld", (long long)s->at_N);
    if (s->at_T > 0) fprintf(fp, ",\n  \"T\": %lld", (long long)s->at_T);
    if (s->budget_bytes > 0) fprintf(fp, ",\n  \"budget_bytes\": %lld", (long long)s->budget_bytes);
    if (s->y_name[0]) {
        fprintf(fp, ",\n  \"y_name\": ");
        remat_json_string(fp, s->y_name);
    }
    fprintf(fp, ",\n  \"series\": [");
    for (int i = 0; i < s->n_series; i++) {
        const remat_scaling_series *q = &s->series[i];
        fprintf(fp, "%s\n    {\"name\": ", i ? "," : "");
        remat_json_string(fp, q->name);
        fprintf(fp, ", \"x\": [");
        for (int k = 0; k < q->n; k++) fprintf(fp, "%s%.17g", k ? ", " : "", q->x[k]);
        fprintf(fp, "], \"peak_bytes\": [");
        for (int k = 0; k < q->n; k++) fprintf(fp, "%s%lld", k ? ", " : "", (long long)q->peak_bytes[k]);
        fprintf(fp, "]");
        if (q->fit_given) fprintf(fp, ", \"fit\": \"%s\"", fit_name(q->fit));
        fprintf(fp, "}");
    }
    fprintf(fp, "\n  ]\n}\n");
    return remat_afile_commit(&af, err);
}

int remat_scaling_fit_series(const remat_scaling_series *s, remat_scaling_fit kind, double *a, double *b) {
    if (kind == REMAT_FIT_NONE || s->n < 2) return 0;
    double sg = 0, sy = 0, sgg = 0, sgy = 0;
    for (int k = 0; k < s->n; k++) {
        double g = kind == REMAT_FIT_SQRT ? sqrt(s->x[k]) : s->x[k];
        double y = (double)s->peak_bytes[k];
        sg += g;
        sy += y;
        sgg += g * g;
        sgy += g * y;
    }
    double n = (double)s->n;
    double den = n * sgg - sg * sg;
    if (!(fabs(den) > 1e-12 * (sgg * n + 1.0))) return 0;
    *b = (n * sgy - sg * sy) / den;
    *a = (sy - *b * sg) / n;
    return 1;
}

/* Squared error of the least-squares fit of kind (INFINITY when it cannot be fitted). */
static double fit_sse(const remat_scaling_series *s, remat_scaling_fit kind) {
    double a, b;
    if (!remat_scaling_fit_series(s, kind, &a, &b)) return INFINITY;
    double e = 0;
    for (int k = 0; k < s->n; k++) {
        double g = kind == REMAT_FIT_SQRT ? sqrt(s->x[k]) : s->x[k];
        double r = (double)s->peak_bytes[k] - (a + b * g);
        e += r * r;
    }
    return e;
}

remat_scaling_fit remat_scaling_best_fit(const remat_scaling_series *s) {
    if (s->n < 3) return REMAT_FIT_LINEAR; /* two points fit either exactly: claim nothing more */
    return fit_sse(s, REMAT_FIT_SQRT) < fit_sse(s, REMAT_FIT_LINEAR) ? REMAT_FIT_SQRT : REMAT_FIT_LINEAR;
}

/* The data file: one block per series. */
static void scaling_put_data(FILE *fp, const remat_scaling *s) {
    fprintf(fp, "# remat plot --scaling: peak live bytes against ");
    remat_gp_put_string(fp, s->x_name);
    fprintf(fp, ", one block (gnuplot index) per series.\n");
    for (int i = 0; i < s->n_series; i++) {
        if (i) fprintf(fp, "\n\n");
        fprintf(fp, "# index %d: ", i);
        remat_gp_put_string(fp, s->series[i].name);
        fprintf(fp, "\n# x peak_bytes\n");
        for (int k = 0; k < s->series[i].n; k++)
            fprintf(fp, "%.17g %lld\n", s->series[i].x[k], (long long)s->series[i].peak_bytes[k]);
    }
}

/* The fitted references: fitK_a, fitK_b and fitK(x) for each series with a fit, and
 * their key titles; returns how many, fit_of[k] the series of the k-th. */
static int scaling_put_fits(FILE *fp, const remat_scaling *s, int *fit_of, char (*fit_title)[300]) {
    const char *xn = s->x_name;
    int nfit = 0;
    for (int i = 0; i < s->n_series; i++) {
        const remat_scaling_series *q = &s->series[i];
        double a = 0, b = 0;
        if (!remat_scaling_fit_series(q, q->fit, &a, &b)) continue;
        fprintf(fp, "fit%d_a = %.17g   # bytes\nfit%d_b = %.17g   # bytes per %s", i + 1, a, i + 1, b,
                q->fit == REMAT_FIT_SQRT ? "sqrt of " : "");
        remat_gp_put_string(fp, xn);
        fputc('\n', fp);
        if (q->fit == REMAT_FIT_SQRT) fprintf(fp, "fit%d(x) = (fit%d_a + fit%d_b * sqrt(x)) / yscale\n", i + 1, i + 1, i + 1);
        else fprintf(fp, "fit%d(x) = (fit%d_a + fit%d_b * x) / yscale\n", i + 1, i + 1, i + 1);
        char av[32], bv[32];
        char *t = fit_title[nfit];
        remat_fmt_bytes_short((int64_t)llround(a), av, sizeof av);
        remat_fmt_bytes_short((int64_t)llround(b), bv, sizeof bv);
        if (q->fit == REMAT_FIT_SQRT)
            snprintf(t, sizeof fit_title[0], "\xe2\x88\x9d \xe2\x88\x9a%s, fit to %s: %s + %s \xc3\x97 \xe2\x88\x9a%s", xn,
                     q->name, av, bv, xn);
        else
            snprintf(t, sizeof fit_title[0], "\xe2\x88\x9d %s, fit to %s: %s + %s \xc3\x97 %s", xn, q->name, av, bv, xn);
        fit_of[nfit++] = i;
    }
    return nfit;
}

/* The script: axes, the fitted references, the budget, each series' last value, the curves. */
static void scaling_put_script(FILE *fp, const remat_scaling *s, double xmax, double ymax,
                               const remat_figure_files *files, const remat_figure_opts *fo) {
    remat_unit yu = remat_unit_bytes(ymax);
    const char *xn = s->x_name;
    char xlabel[96];
    if (!strcmp(xn, "T")) snprintf(xlabel, sizeof xlabel, "T (simulation time steps)");
    else if (!strcmp(xn, "N")) snprintf(xlabel, sizeof xlabel, "N (batch size)");
    else snprintf(xlabel, sizeof xlabel, "%s", xn);
    remat_gp_put_open(fp, files, fo,
                      "remat plot --scaling: how the peak grows, with fitted linear and square-root references.", NULL);
    char ys[48];
    fprintf(fp, "\nyscale = %s\nylab = \"%s\"\nytop = %.17g / yscale\nxmax = %.17g\n", remat_gp_real(yu.scale, ys, sizeof ys),
            yu.name, ymax * 1.15, xmax * 1.06);
    char title[400], at[64] = "";
    if (!strcmp(xn, "T") && s->at_N > 0) snprintf(at, sizeof at, " at N = %lld", (long long)s->at_N);
    else if (!strcmp(xn, "N") && s->at_T > 0) snprintf(at, sizeof at, " at T = %lld", (long long)s->at_T);
    if (!remat_figure_title_given(fo, title, sizeof title))
        snprintf(title, sizeof title, "Peak memory against %s%s", xn, at);
    remat_gp_put_title(fp, title);
    fprintf(fp, "set xrange [0:xmax]\nset yrange [0:ytop]\nset samples 400\n");
    fprintf(fp, "set xlabel ");
    remat_gp_put_string(fp, xlabel);
    fprintf(fp, "\nset ylabel ");
    remat_gp_put_string(fp, s->y_name[0] ? s->y_name : "peak live memory");
    fprintf(fp, ".\" (\".ylab.\")\"\nset format y \"%%g\"\nset format x \"%%g\"\n");
    remat_gp_put_grid(fp);
    fprintf(fp, "set key top left Left reverse samplen 3 spacing 1.25 box lc rgb \"#cccccc\" opaque\n");
    /* fitted references, drawn after the series */
    int fit_of[REMAT_SCALING_MAX_SERIES];
    char fit_title[REMAT_SCALING_MAX_SERIES][300];
    int nfit = scaling_put_fits(fp, s, fit_of, fit_title);
    fprintf(fp, "set style textbox opaque fc rgb \"white\" noborder margins 2,1\n");
    if (s->budget_bytes > 0) {
        char b[32], t[48];
        snprintf(t, sizeof t, "budget %s", remat_fmt_bytes_short(s->budget_bytes, b, sizeof b));
        remat_gp_put_budget(fp, 100, s->budget_bytes, t, 1);
    }
    for (int i = 0; i < s->n_series; i++) {
        const remat_scaling_series *q = &s->series[i];
        int last = 0;
        for (int k = 1; k < q->n; k++)
            if (q->x[k] > q->x[last]) last = k;
        char v[32];
        fprintf(fp, "set label %d ", i + 1);
        remat_gp_put_string(fp, remat_fmt_bytes_short(q->peak_bytes[last], v, sizeof v));
        fprintf(fp, " at first %.17g, first %lld/yscale offset -1,1 right boxed tc rgb \"%s\" front\n", q->x[last],
                (long long)q->peak_bytes[last], remat_plot_trace_color(i));
    }
    fprintf(fp, "plot \\\n");
    for (int i = 0; i < s->n_series; i++) {
        fprintf(fp, "  dat index %d using 1:($2/yscale) with linespoints pt 7 ps 1.2 lw 2 lc rgb \"%s\" title ", i,
                remat_plot_trace_color(i));
        remat_gp_put_string(fp, s->series[i].name);
        fprintf(fp, "%s\n", i + 1 < s->n_series || nfit ? ", \\" : "");
    }
    for (int k = 0; k < nfit; k++) {
        fprintf(fp, "  fit%d(x) with lines dt (5,5) lw 1.5 lc rgb \"%s\" title ", fit_of[k] + 1,
                remat_plot_trace_color(fit_of[k]));
        remat_gp_put_string(fp, fit_title[k]);
        fprintf(fp, "%s\n", k + 1 < nfit ? ", \\" : "");
    }
}

remat_status remat_plot_scaling(const remat_scaling *s, const char *origin, const remat_figure_opts *fo,
                                remat_figure_files *files, remat_error *err) {
    remat_figure_opts fdef;
    remat_status st = remat_figure_begin(&fo, &fdef, files, err);
    if (st != REMAT_OK) return st;
    if (s->n_series < 1) return remat_error_set(err, REMAT_ERR_INPUT, "%s: series: expected at least one series", origin ? origin : "<scaling>");
    double xmax = 0.0, ymax = 1.0;
    for (int i = 0; i < s->n_series; i++)
        for (int k = 0; k < s->series[i].n; k++) {
            if (s->series[i].x[k] > xmax) xmax = s->series[i].x[k];
            if ((double)s->series[i].peak_bytes[k] > ymax) ymax = (double)s->series[i].peak_bytes[k];
        }
    if ((double)s->budget_bytes > ymax) ymax = (double)s->budget_bytes;
    remat_afile af;
    if ((st = remat_afile_open(&af, files->data, err)) != REMAT_OK) return st;
    scaling_put_data(af.fp, s);
    if ((st = remat_afile_commit(&af, err)) != REMAT_OK) return st;
    if ((st = remat_afile_open(&af, files->script, err)) != REMAT_OK) return st;
    scaling_put_script(af.fp, s, xmax, ymax, files, fo);
    if ((st = remat_afile_commit(&af, err)) != REMAT_OK) return st;
    return remat_figure_render(fo, files, err);
}
