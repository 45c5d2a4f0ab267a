/* extplot.c - the figure of an external allocation stream (extplot.h). */
#include "plots/extplot.h"

#include <stdio.h>
#include <string.h>

#include "core/io/ext_record.h"
#include "plots/items.h"
#include "plots/reduce.h"

/* "<size>  <label>" shortened to fit a line of the box: a long label keeps its head and
 * its tail ("head ... tail"), so two sites that share their outer frames still read apart. */
static void row(char *buf, size_t cap, int64_t bytes, const char *label) {
    char b[32];
    remat_fmt_bytes_short(bytes, b, sizeof b);
    size_t n = strlen(label);
    if (n <= 72) snprintf(buf, cap, "%9s  %s", b, label);
    else snprintf(buf, cap, "%9s  %.30s ... %s", b, label, label + n - 38);
}

static remat_status write_curve(FILE *fp, const remat_ext_curve *c, const int64_t *y, int64_t max_points,
                                int64_t *keep) {
    int64_t k = remat_reduce_m4(c->x, y, c->n, max_points, keep);
    for (int64_t i = 0; i < k; i++) fprintf(fp, "%.9g %lld\n", c->x[keep[i]], (long long)y[keep[i]]);
    return REMAT_OK;
}

/* The peak's allocated bytes by allocation site (remat_ext_curve_breakdown). */
typedef struct ext_sites {
    int32_t labels[REMAT_EXTPLOT_TOP];
    int64_t bytes[REMAT_EXTPLOT_TOP];
    int64_t n;
} ext_sites;

static const char *site_name(const remat_ext_trace *t, int32_t label) {
    return label >= 0 ? remat_ext_label(t, label) : "(allocated before the window)";
}

/* The data file: allocated and reserved curves (reduced) and the peak's sites. */
static void ext_put_data(FILE *fp, const remat_ext_trace *t, const remat_ext_curve *c, const char *origin,
                         int64_t max_points, const ext_sites *ss, int64_t *keep) {
    fprintf(fp, "# remat plot: external allocation stream ");
    remat_gp_put_string(fp, origin);
    fprintf(fp, ", device %d (", (int)c->device);
    remat_gp_put_string(fp, t->source_file);
    fprintf(fp, ").\n");
    fprintf(fp, "# index 0: allocated bytes (live blocks); index 1: reserved bytes (segments); each reduced to at most\n"
                "# %lld points keeping every bucket's extremes. x: %s\n",
            (long long)max_points, c->x_is_time ? "seconds since the first event" : "event index");
    fprintf(fp, "# x allocated_bytes\n");
    write_curve(fp, c, c->allocated, max_points, keep);
    fprintf(fp, "\n\n# x reserved_bytes\n");
    write_curve(fp, c, c->reserved, max_points, keep);
    fprintf(fp, "\n\n# index 2: the peak's allocated bytes by allocation site (bytes label)\n");
    for (int64_t i = 0; i < ss->n && i < REMAT_EXTPLOT_TOP; i++) {
        fprintf(fp, "%lld ", (long long)ss->bytes[i]);
        remat_gp_put_datum(fp, site_name(t, ss->labels[i]));
        fprintf(fp, "\n");
    }
}

/* The labels: the peak with its largest blocks (an arrow down to it), the box of sites. */
static void ext_put_labels(FILE *fp, const remat_ext_trace *t, const remat_ext_curve *c, const ext_sites *ss,
                           const char *px, double ymax, double xspan) {
    char peak[1400], line[160], b[32];
    snprintf(peak, sizeof peak, "peak allocated %s", remat_fmt_bytes_short(c->peak_allocated, b, sizeof b));
    for (int64_t i = 0; i < c->n_peak_live && i < 3; i++) {
        const remat_ext_live *v = &c->peak_live[i];
        row(line, sizeof line, v->bytes, site_name(t, v->label));
        size_t u = strlen(peak);
        snprintf(peak + u, sizeof peak - u, "\n%s", line);
    }
    /* above both curves (the box is opaque: over the reserved line it would hide it),
     * with an arrow down to the peak; anchored away from the nearer side */
    int right = xspan > 0 && c->x[c->peak_point] > 0.6 * xspan;
    fprintf(fp, "set label 1 ");
    remat_gp_put_string(fp, peak);
    fprintf(fp, " at first %s, first %.17g/yscale %s offset 0,4.5 boxed font \",9\" front\n", px, ymax * 1.04,
            right ? "right" : "left");
    fprintf(fp, "set arrow 3 from first %s, first %.17g/yscale to first %s, first %lld/yscale "
                "nohead lw 0.8 lc rgb \"#888888\" front\n",
            px, ymax * 1.04, px, (long long)c->peak_allocated);
    fprintf(fp, "set object 1 circle at first %s, first %lld/yscale size char 0.5 fc rgb \"%s\" fs solid front\n", px,
            (long long)c->peak_allocated, remat_plot_trace_color(0));
    char box[2000];
    snprintf(box, sizeof box, "at the peak, by allocation site (top frames):");
    for (int64_t i = 0; i < ss->n && i < REMAT_EXTPLOT_TOP; i++) {
        row(line, sizeof line, ss->bytes[i], site_name(t, ss->labels[i]));
        size_t u = strlen(box);
        snprintf(box + u, sizeof box - u, "\n%s", line);
    }
    if (ss->n > REMAT_EXTPLOT_TOP) {
        size_t u = strlen(box);
        snprintf(box + u, sizeof box - u, "\n... %lld more sites", (long long)(ss->n - REMAT_EXTPLOT_TOP));
    }
    fprintf(fp, "set label 2 ");
    remat_gp_put_string(fp, box);
    fprintf(fp, " at graph 0.01, graph 0.97 left boxed font \",9\" front\n");
}

/* The script: axes (a window at one instant drawn point by point), labels, the two curves. */
static void ext_put_script(FILE *fp, const remat_ext_trace *t, const remat_ext_curve *c, const ext_sites *ss,
                           const remat_figure_files *files, const remat_figure_opts *fo) {
    double ymax = (double)(c->peak_reserved > c->peak_allocated ? c->peak_reserved : c->peak_allocated);
    if (ymax < 1) ymax = 1;
    remat_unit yu = remat_unit_bytes(ymax);
    double xspan = c->x[c->n - 1];
    remat_unit xu = c->x_is_time ? remat_unit_seconds(xspan) : (remat_unit){1.0, "event"};
    remat_gp_put_open(fp, files, fo, "remat plot: allocated and reserved memory of an imported allocation stream.", NULL);
    fprintf(fp, "\nyscale = %.1f\nxscale = %.17g\n", yu.scale, xu.scale); /* yscale as a float: no integer division */
    char title[1024];
    if (!remat_figure_title_given(fo, title, sizeof title)) {
        if (t->record) /* a recorded PyTorch step: say which execution it is */
            snprintf(title, sizeof title, "%s: %s, live tensor bytes", t->source_file, t->record->execution);
        else snprintf(title, sizeof title, "%s, device %d: allocated and reserved memory", t->source_file, (int)c->device);
    }
    remat_gp_put_title(fp, title);
    /* a window whose events share one instant (one event, say) spans no time: draw its
     * points one after the other, and say so, instead of an empty 0-1 axis */
    int flat = !(xspan > 0);
    char xl[160], px[48];
    if (flat)
        snprintf(xl, sizeof xl, "point of the window (its %lld event%s at one instant: no time to draw)",
                 (long long)(c->n - 1), c->n == 2 ? "" : "s");
    else if (c->x_is_time) snprintf(xl, sizeof xl, "time since the first event (%s)", xu.name);
    else snprintf(xl, sizeof xl, "event");
    if (flat) snprintf(px, sizeof px, "%lld", (long long)c->peak_point);
    else snprintf(px, sizeof px, "%.17g/xscale", c->x[c->peak_point]);
    fprintf(fp, "set xlabel ");
    remat_gp_put_string(fp, xl);
    fprintf(fp, "\nset ylabel \"memory (%s)\"\nset yrange [0:%.17g]\n", yu.name, ymax * 1.45 / yu.scale);
    if (flat) fprintf(fp, "set xrange [-0.5:%lld.5]\nset xtics 1\n", (long long)(c->n - 1));
    else fprintf(fp, "set xrange [0:*]\n");
    remat_gp_put_grid(fp);
    fprintf(fp, "set key top right samplen 3 spacing 1.2 box lc rgb \"#cccccc\" opaque\n");
    fprintf(fp, "set style textbox opaque fc rgb \"white\" noborder margins 2,1\n");
    ext_put_labels(fp, t, c, ss, px, ymax, xspan);
    const char *xcol = flat ? "0" : "($1/xscale)"; /* flat: the point's number (gnuplot's column 0) */
    fprintf(fp, "plot dat index 0 using %s:($2/yscale) with steps lw 1.6 lc rgb \"%s\" title \"allocated (live blocks)\", \\\n",
            xcol, remat_plot_trace_color(0));
    fprintf(fp, "     dat index 1 using %s:($2/yscale) with steps lw 1.4 dt (6,4) lc rgb \"%s\" title \"reserved (segments)\"\n",
            xcol, remat_plot_trace_color(1));
}

remat_status remat_plot_ext(const remat_ext_trace *t, const remat_ext_curve *c, const char *origin, int64_t max_points,
                            const remat_figure_opts *fo, remat_figure_files *files, remat_error *err) {
    remat_figure_opts fdef;
    remat_status st = remat_figure_begin(&fo, &fdef, files, err);
    if (st != REMAT_OK) return st;
    if (max_points < 8) max_points = 8;
    int64_t cap = c->n > max_points ? c->n : max_points;
    int64_t *keep = remat_xmalloc((size_t)cap * sizeof(int64_t), err);
    if (!keep) return REMAT_ERR_NOMEM;
    ext_sites ss;
    ss.n = remat_ext_curve_breakdown(c, ss.labels, ss.bytes, REMAT_EXTPLOT_TOP, err);
    if (ss.n < 0) {
        remat_xfree(keep);
        return REMAT_ERR_NOMEM;
    }
    remat_afile af;
    if ((st = remat_afile_open(&af, files->data, err)) != REMAT_OK) {
        remat_xfree(keep);
        return st;
    }
    ext_put_data(af.fp, t, c, origin, max_points, &ss, keep);
    remat_xfree(keep);
    if ((st = remat_afile_commit(&af, err)) != REMAT_OK) return st;
    if ((st = remat_afile_open(&af, files->script, err)) != REMAT_OK) return st;
    ext_put_script(af.fp, t, c, &ss, files, fo);
    if ((st = remat_afile_commit(&af, err)) != REMAT_OK) return st;
    return remat_figure_render(fo, files, err);
}
