/* breakdown.c - the peak-by-role figure: one stacked bar per trace (memplot.h).
 *
 * The bar of a trace is the live bytes per role at the first event where its live
 * curve reaches its maximum in the chosen iteration (curve.h), so the segments add
 * up exactly to the peak written on top. Segments at least 4% of the tallest bar
 * carry their value. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plots/items.h"
#include "plots/memplot.h"
#include "plots/names.h"

/* Stacking order, bottom up: what stays all step first, then what a plan changes. */
static const remat_role stack_order[REMAT_ROLE_COUNT] = {
    REMAT_ROLE_PARAMETER, REMAT_ROLE_GRADIENT, REMAT_ROLE_OPTIMIZER, REMAT_ROLE_BATCH, REMAT_ROLE_SAVED,
    REMAT_ROLE_COMPRESSED, REMAT_ROLE_NEURON_STATE, REMAT_ROLE_ACT_GRAD, REMAT_ROLE_TRANSIENT, REMAT_ROLE_WORKSPACE};

static const char *role_title(remat_role r) {
    switch (r) {
    case REMAT_ROLE_PARAMETER: return "parameters";
    case REMAT_ROLE_GRADIENT: return "gradients";
    case REMAT_ROLE_OPTIMIZER: return "optimizer state";
    case REMAT_ROLE_BATCH: return "batch (input, labels)";
    case REMAT_ROLE_SAVED: return "saved activations";
    case REMAT_ROLE_COMPRESSED: return "compressed inputs";
    case REMAT_ROLE_NEURON_STATE: return "neuron state";
    case REMAT_ROLE_ACT_GRAD: return "activation gradients";
    case REMAT_ROLE_TRANSIENT: return "transient";
    case REMAT_ROLE_WORKSPACE: return "workspace";
    default: return "?";
    }
}

static const char *role_color(remat_role r) {
    static const char *const c[REMAT_ROLE_COUNT] = {
        "#4e79a7", /* parameter */
        "#a0cbe8", /* gradient */
        "#9c755f", /* optimizer */
        "#bab0ac", /* batch */
        "#e15759", /* saved */
        "#edc948", /* transient */
        "#f28e2b", /* compressed */
        "#b07aa1", /* neuron_state */
        "#59a14f", /* act_grad */
        "#76b7b2", /* workspace */
    };
    return (int)r >= 0 && r < REMAT_ROLE_COUNT ? c[r] : "#888888";
}

/* The data file: one row per trace (its bytes by role at the peak), the segments' labels, the totals. */
static void breakdown_put_data(FILE *fp, const remat_plot_item *items, int n, double ymax) {
    fprintf(fp, "# remat plot --breakdown: live bytes at each trace's live peak, by role (bytes).\n");
    fprintf(fp, "# index 0: one row per trace: bar, iteration, peak_bytes, then one column per role:\n# bar iter peak");
    for (int k = 0; k < REMAT_ROLE_COUNT; k++) fprintf(fp, " %s", remat_role_name(stack_order[k]));
    fprintf(fp, "\n");
    for (int i = 0; i < n; i++) {
        fprintf(fp, "%d %d %lld", i, items[i].curve.iter, (long long)items[i].curve.live.peak);
        for (int k = 0; k < REMAT_ROLE_COUNT; k++)
            fprintf(fp, " %lld", (long long)items[i].curve.by_role_at_peak[stack_order[k]]);
        fprintf(fp, "\n");
    }
    fprintf(fp, "\n\n# index 1: segment labels: bar middle_bytes \"text\"\n");
    int nseg = 0;
    for (int i = 0; i < n; i++) {
        double base = 0.0;
        for (int k = 0; k < REMAT_ROLE_COUNT; k++) {
            double v = (double)items[i].curve.by_role_at_peak[stack_order[k]];
            if (v >= 0.04 * ymax) {
                char b[32];
                fprintf(fp, "%d %.17g \"%s\"\n", i, base + v / 2.0,
                        remat_fmt_bytes_short(items[i].curve.by_role_at_peak[stack_order[k]], b, sizeof b));
                nseg++;
            }
            base += v;
        }
    }
    if (!nseg) fprintf(fp, "0 NaN \"\"\n");
    fprintf(fp, "\n\n# index 2: totals: bar peak_bytes \"text\"\n");
    for (int i = 0; i < n; i++) {
        char b[32];
        fprintf(fp, "%d %lld \"%s\"\n", i, (long long)items[i].curve.live.peak,
                remat_fmt_bytes_short(items[i].curve.live.peak, b, sizeof b));
    }
}

/* The script: stacked bars, one per trace, one colour per role used. */
static void breakdown_put_script(FILE *fp, const remat_plot_item *items, int n, double ymax, const int *used,
                                 const char *exec, const remat_figure_files *files, const remat_figure_opts *fo) {
    remat_unit yu = remat_unit_bytes(ymax);
    remat_gp_put_open(fp, files, fo, "remat plot --breakdown: the peak of each trace split by what the memory holds.",
                      " (bytes)");
    char ys[48];
    fprintf(fp, "\nyscale = %s\nylab = \"%s\"\nytop = %.17g / yscale\n", remat_gp_real(yu.scale, ys, sizeof ys), yu.name,
            ymax * 1.12);
    char title[400], model_name[REMAT_NAME_LEN + 40];
    remat_plot_items_model_name(items, n, model_name, sizeof model_name);
    if (!remat_figure_title_given(fo, title, sizeof title))
        snprintf(title, sizeof title, "What the peak holds%s, %s", model_name, exec);
    remat_gp_put_title(fp, title);
    fprintf(fp, "set style data histograms\nset style histogram rowstacked gap 1\n");
    fprintf(fp, "set style fill solid 0.95 border rgb \"white\"\nset boxwidth %.2f\n", n == 1 ? 0.35 : 0.6);
    fprintf(fp, "set yrange [0:ytop]\nset xrange [-0.6:%g]\n", n - 0.4);
    fprintf(fp, "set ylabel \"live bytes at the peak (\".ylab.\")\"\nset format y \"%%g\"\n");
    fprintf(fp, "set grid ytics lc rgb \"#d0d0d0\" lt 1 lw 0.6\nset tics out nomirror\nset border 3\n");
    fprintf(fp, "set key outside right top vertical invert Left reverse samplen 2 spacing 1.2 title \"role\" left\nset bmargin 4.5\n");
    fprintf(fp, "set xtics (");
    for (int i = 0; i < n; i++) {
        char lab[400], site[160];
        remat_plot_site_label(items[i].has_model ? &items[i].model : NULL, &items[i].curve.live_site, site, sizeof site);
        snprintf(lab, sizeof lab, "%s\npeak at %s", items[i].label, site);
        if (i) fprintf(fp, ", ");
        remat_gp_put_string(fp, lab);
        fprintf(fp, " %d", i);
    }
    fprintf(fp, ") scale 0\n");
    fprintf(fp, "plot \\\n");
    int first = 1;
    for (int k = 0; k < REMAT_ROLE_COUNT; k++) {
        remat_role r = stack_order[k];
        if (!used[r]) continue;
        fprintf(fp, "%s  dat index 0 using ($%d/yscale) lc rgb \"%s\" title \"%s\"", first ? "" : ", \\\n", 4 + k,
                role_color(r), role_title(r));
        first = 0;
    }
    if (first) fprintf(fp, "  dat index 0 using ($3/yscale) lc rgb \"#888888\" title \"(nothing live)\"");
    fprintf(fp, ", \\\n  dat index 1 using 1:($2/yscale):3 with labels font \",9\" tc rgb \"#202020\" notitle");
    fprintf(fp, ", \\\n  dat index 2 using 1:($2/yscale):3 with labels offset 0,0.8 font \",11\" notitle\n");
}

remat_status remat_plot_breakdown(const remat_plot_input *in, int n, const remat_curve_opts *co,
                                  const remat_figure_opts *fo, remat_figure_files *files, remat_error *err) {
    remat_figure_opts fdef;
    remat_status st = remat_figure_begin(&fo, &fdef, files, err);
    if (st != REMAT_OK) return st;
    remat_plot_item items[REMAT_PLOT_MAX_INPUTS];
    remat_curve_opts o = co ? *co : remat_curve_opts_default();
    o.reserved = 0; /* the breakdown is of live bytes */
    if ((st = remat_plot_items_build(in, n, &o, items, err)) != REMAT_OK) return st;
    double ymax = 1.0;
    int used[REMAT_ROLE_COUNT] = {0};
    for (int i = 0; i < n; i++) {
        if ((double)items[i].curve.live.peak > ymax) ymax = (double)items[i].curve.live.peak;
        for (int r = 0; r < REMAT_ROLE_COUNT; r++)
            if (items[i].curve.by_role_at_peak[r] != 0) used[r] = 1;
    }
    remat_afile af;
    if ((st = remat_afile_open(&af, files->data, err)) == REMAT_OK) {
        breakdown_put_data(af.fp, items, n, ymax);
        st = remat_afile_commit(&af, err);
    }
    if (st == REMAT_OK && (st = remat_afile_open(&af, files->script, err)) == REMAT_OK) {
        breakdown_put_script(af.fp, items, n, ymax, used, remat_plot_inputs_execution(in, n), files, fo);
        st = remat_afile_commit(&af, err);
    }
    if (st == REMAT_OK) st = remat_figure_render(fo, files, err);
    remat_plot_items_free(items, n);
    return st;
}

/* ---- the peak, layer by layer ------------------------------------------------ */

int remat_peak_by_layer(const remat_trace *t, int iter, remat_layer_bytes *out, int max, int64_t *peak_event,
                        int64_t *peak_bytes) {
    *peak_event = -1;
    *peak_bytes = 0;
    if (t->n_events == 0) return 0;
    int it = iter >= 0 ? iter : (int)t->n_iters - 1;
    int64_t first = 0, end = t->n_events;
    if (t->n_iters > 0 && it >= 0 && it < t->n_iters) {
        first = t->iters[it].first_event;
        end = first + t->iters[it].n_events;
    }
    if (end > t->n_events) end = t->n_events;
    /* live bytes from the start (parameters allocated before the step count), the
     * step's maximum, then the live tensors there */
    int64_t live = 0, best = -1, at = -1;
    for (int64_t i = 0; i < end; i++) {
        const remat_event *e = &t->events[i];
        live += e->kind == REMAT_EVENT_ALLOC ? e->bytes : -e->bytes;
        if (i >= first && live > best) {
            best = live;
            at = i;
        }
    }
    if (at < 0) return 0;
    *peak_event = at;
    *peak_bytes = best;
    int64_t max_id = -1;
    for (int64_t i = 0; i <= at; i++)
        if (t->events[i].tensor > max_id) max_id = t->events[i].tensor;
    remat_error err = {0};
    int64_t *alive = remat_xcalloc((size_t)(max_id + 1 > 0 ? max_id + 1 : 1), sizeof *alive, &err);
    if (!alive) return -1;
    for (int64_t i = 0; i <= at; i++) {
        const remat_event *e = &t->events[i];
        if (e->tensor < 0) continue;
        alive[e->tensor] = e->kind == REMAT_EVENT_ALLOC ? i + 1 : 0; /* event index + 1 of its alloc */
    }
    int n = 0;
    for (int64_t id = 0; id <= max_id; id++) {
        if (!alive[id]) continue;
        const remat_event *e = &t->events[alive[id] - 1];
        int k = 0;
        while (k < n && !(out[k].layer == e->layer && out[k].role == e->role)) k++;
        if (k == n) {
            if (n == max) continue;
            out[n].layer = e->layer;
            out[n].role = e->role;
            out[n].bytes = 0;
            out[n].tensors = 0;
            n++;
        }
        out[k].bytes += e->bytes;
        out[k].tensors++;
    }
    remat_xfree(alive);
    for (int i = 1; i < n; i++) { /* largest first */
        remat_layer_bytes x = out[i];
        int j = i;
        while (j > 0 && out[j - 1].bytes < x.bytes) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = x;
    }
    return n;
}
