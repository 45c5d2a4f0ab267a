/* memplot.c - the memory-curve figure: data blocks, gnuplot script, peak labels.
 *
 * Layout (screen fractions computed from pixel sizes so that any --size works):
 * title, then the key, then the curve panel, then one phase strip row per trace,
 * the x axis label and the phase key at the bottom. Both panels share the x range
 * and the left/right margins (gnuplot multiplot).
 *
 * Peak labels are placed by a greedy search in the curve panel's graph coordinates
 * (text size estimated from the font size), trying above/below and right/left of the
 * peak, moving away until the label overlaps no earlier label and no peak marker; a
 * label that ends up far from its peak gets a thin leader line.
 */
#include "plots/memplot.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plots/items.h"
#include "plots/names.h"

/* Estimated text metrics in pixels for the terminals of figure.c. */
static double char_px(remat_fig_format f) { return f == REMAT_FIG_PNG ? 7.0 : 6.8; }
static double line_px(remat_fig_format f) { return f == REMAT_FIG_PNG ? 17.0 : 17.0; }

static size_t utf8_len(const char *s) {
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) n++;
    return n;
}

/* Copies at most max characters (UTF-8 aware), ending in "..." when cut. */
static void shorten(const char *s, size_t max, char *buf, size_t len) {
    if (utf8_len(s) <= max) {
        snprintf(buf, len, "%.*s", (int)(len - 1), s); /* the precision: as "%s" cut at len */
        return;
    }
    size_t chars = 0, i = 0;
    for (; s[i] && i + 4 < len; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            if (chars == max - 3) break;
            chars++;
        }
    }
    snprintf(buf, len, "%.*s...", (int)i, s);
}

typedef struct gbox { double x0, y0, x1, y1; } gbox;

static int box_overlap(gbox a, gbox b) { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1; }

typedef struct peak_label {
    int trace;
    int reserved;          /* 0: live peak, 1: reserved peak */
    double px, py;         /* peak in graph coordinates */
    double x, bytes;       /* peak in data coordinates */
    char text[256];
    gbox box;              /* placed text box (graph coordinates) */
    int right;             /* text extends to the right of box.x0 (left aligned) */
    int leader;            /* 1: a line joins (lx, ly) on the box to the peak */
    double lx, ly;
} peak_label;

/* A curve in graph coordinates, drawn as steps: y[i] holds on [x[i], x[i+1]). */
typedef struct gcurve { const double *x; const int64_t *y; int64_t n; double xs, ys; } gcurve;

/* 1 when the step curve passes through the box. */
static int curve_hits(const gcurve *c, gbox b) {
    if (c->n <= 0) return 0;
    /* first point whose segment can reach the box: x[i+1] >= b.x0 */
    int64_t lo = 0, hi = c->n - 1;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (c->x[mid + 1] / c->xs < b.x0) lo = mid + 1;
        else hi = mid;
    }
    for (int64_t i = lo; i < c->n && c->x[i] / c->xs <= b.x1; i++) {
        double y = (double)c->y[i] / c->ys;
        if (y >= b.y0 && y <= b.y1) return 1;
        if (i > 0 && c->x[i] / c->xs >= b.x0) {
            double yp = (double)c->y[i - 1] / c->ys;
            double a = fmin(y, yp), z = fmax(y, yp);
            if (a <= b.y1 && z >= b.y0) return 1;
        }
    }
    return 0;
}

/* 1 when the segment (ax,ay)-(bx,by) passes through the box (Liang-Barsky clipping). */
static int segment_hits(double ax, double ay, double bx, double by, gbox r) {
    double t0 = 0.0, t1 = 1.0, dx = bx - ax, dy = by - ay;
    double p[4] = {-dx, dx, -dy, dy}, q[4] = {ax - r.x0, r.x1 - ax, ay - r.y0, r.y1 - ay};
    for (int i = 0; i < 4; i++) {
        if (p[i] == 0.0) {
            if (q[i] < 0.0) return 0;
            continue;
        }
        double t = q[i] / p[i];
        if (p[i] < 0.0) { if (t > t1) return 0; if (t > t0) t0 = t; }
        else { if (t < t0) return 0; if (t < t1) t1 = t; }
    }
    return 1;
}

/* The point of box b nearest to (px, py): where a leader line starts. */
static void nearest_on_box(gbox b, double px, double py, double *nx, double *ny) {
    *nx = fmin(fmax(px, b.x0), b.x1);
    *ny = fmin(fmax(py, b.y0), b.y1);
}

/* Greedy placement (see the file comment), one label after the other. Each candidate
 * position (above/below, right/left of the peak, moving away step by step) that
 * stays inside the panel and overlaps no earlier label, leader line or marker gets
 * a cost: its distance in steps, plus 2.5 for each curve it would cover (the text
 * box is opaque); the cheapest wins. cw, lh: text size in graph units per character
 * and per line; mw, mh: half size of a marker; far: distance from which a leader
 * line is drawn (graph units, measured in the panel's aspect via asp = height/width). */
static void place_labels(peak_label *L, int n, double cw, double lh, double mw, double mh, const gcurve *curves,
                         int nc, double far, double asp) {
    for (int k = 0; k < n; k++) {
        double w = (double)utf8_len(L[k].text) * cw + 0.01, h = lh;
        int pref_right = L[k].px < 0.6;
        double best = 1e300;
        gbox bestb = {0.01, 0.98 - h, 0.01 + w, 0.98};
        int best_right = 1;
        for (int step = 0; step < 16; step++)
            for (int vd = 0; vd < 2; vd++)
                for (int sd = 0; sd < 2; sd++) {
                    int right = sd == 0 ? pref_right : !pref_right;
                    gbox b;
                    if (vd == 0) { b.y0 = L[k].py + mh + 0.004 + step * h * 1.05; b.y1 = b.y0 + h; }
                    else { b.y1 = L[k].py - mh - 0.004 - step * h * 1.05; b.y0 = b.y1 - h; }
                    if (right) { b.x0 = L[k].px + mw * 0.6; b.x1 = b.x0 + w; }
                    else { b.x1 = L[k].px - mw * 0.6; b.x0 = b.x1 - w; }
                    if (b.x1 > 0.995) { b.x0 -= b.x1 - 0.995; b.x1 = 0.995; }
                    if (b.x0 < 0.005) { b.x1 += 0.005 - b.x0; b.x0 = 0.005; }
                    if (b.y0 < 0.01 || b.y1 > 0.99) continue;
                    double cost = step + 0.5 * vd + 0.3 * sd;
                    if (cost >= best) continue;
                    int bad = 0;
                    for (int j = 0; j < n && !bad; j++) {
                        gbox m = {L[j].px - mw, L[j].py - mh, L[j].px + mw, L[j].py + mh};
                        bad = box_overlap(b, m);
                    }
                    double nx, ny;
                    nearest_on_box(b, L[k].px, L[k].py, &nx, &ny);
                    int leader = hypot(nx - L[k].px, (ny - L[k].py) * asp) > far;
                    for (int j = 0; j < k && !bad; j++) {
                        bad = box_overlap(b, L[j].box);
                        if (!bad && L[j].leader) bad = segment_hits(L[j].lx, L[j].ly, L[j].px, L[j].py, b);
                        if (!bad && leader) bad = segment_hits(nx, ny, L[k].px, L[k].py, L[j].box);
                    }
                    if (bad) continue;
                    for (int j = 0; j < nc; j++) cost += 2.5 * curve_hits(&curves[j], b);
                    if (cost < best) {
                        best = cost;
                        bestb = b;
                        best_right = right;
                    }
                }
        L[k].box = bestb;
        L[k].right = best_right;
        nearest_on_box(bestb, L[k].px, L[k].py, &L[k].lx, &L[k].ly);
        L[k].leader = hypot(L[k].lx - L[k].px, (L[k].ly - L[k].py) * asp) > far;
    }
}

static void put_phase_funcs(FILE *fp) {
    for (int strong = 0; strong < 2; strong++) {
        fprintf(fp, "%s(p) = ", strong ? "phase_fg" : "phase_bg");
        for (int p = 0; p < REMAT_PHASE_COUNT; p++)
            fprintf(fp, "p==%d ? 0x%s : ", p, remat_plot_phase_color(p, strong) + 1);
        fprintf(fp, "0x%s\n", remat_plot_phase_color(-1, strong) + 1);
    }
}

static void write_series(FILE *fp, const remat_trace *t, const remat_series *s, int xtime) {
    uint8_t first_phase = t->n_events > 0 ? t->events[0].phase : 0;
    for (int64_t i = 0; i < s->n; i++) {
        int64_t ev = s->event[i];
        int ph = first_phase, bl = -1, ly = -1;
        if (ev >= 0) {
            ph = t->events[ev].phase;
            bl = t->events[ev].block;
            ly = t->events[ev].layer;
        }
        if (xtime) fprintf(fp, "%.9g %lld %lld %d %d %d\n", s->x[i], (long long)s->bytes[i], (long long)ev, ph, bl, ly);
        else fprintf(fp, "%.0f %lld %lld %d %d %d\n", s->x[i], (long long)s->bytes[i], (long long)ev, ph, bl, ly);
    }
}

/* What the phases of remat_plot_memory share: the inputs, the ranges, the data
 * blocks' indices, the layout in screen fractions and the placed peak labels. */
typedef struct memfig {
    const remat_plot_input *in;
    const remat_plot_item *items;
    int n, xtime, any_reserved, same_iter;
    double xmax, ymax, ytop;
    remat_unit xu, yu; /* from the curves' ranges (before the budget line widens ymax) */
    int64_t budget;
    int live_idx[REMAT_PLOT_MAX_INPUTS], res_idx[REMAT_PLOT_MAX_INPUTS], ph_idx[REMAT_PLOT_MAX_INPUTS];
    /* layout */
    double W, H, cw, lh, L, R, title_y, key_top, MT, SB, ST, MB;
    int entries, rows;
    char strip_lab[REMAT_PLOT_MAX_INPUTS][40];
    char key_title[REMAT_PLOT_MAX_INPUTS][2][200];
    peak_label labels[2 * REMAT_PLOT_MAX_INPUTS];
    int nl;
} memfig;

/* The x and y ranges, whether any trace has a reserved curve, whether all show the same iteration. */
static void memfig_ranges(memfig *g) {
    g->xmax = 0.0;
    g->ymax = 0.0;
    g->any_reserved = 0;
    g->same_iter = 1;
    for (int i = 0; i < g->n; i++) {
        const remat_mem_curve *c = &g->items[i].curve;
        if (c->x_end > g->xmax) g->xmax = c->x_end;
        if ((double)c->live.peak > g->ymax) g->ymax = (double)c->live.peak;
        if (c->has_reserved && (double)c->reserved.peak > g->ymax) g->ymax = (double)c->reserved.peak;
        if (c->has_reserved) g->any_reserved = 1;
        if (c->iter != g->items[0].curve.iter) g->same_iter = 0;
    }
    if (g->xmax <= 0.0) g->xmax = 1.0;
    if (g->ymax <= 0.0) g->ymax = 1.0;
    g->yu = remat_unit_bytes(g->ymax);
    g->xu = g->xtime ? remat_unit_seconds(g->xmax) : (remat_unit){1.0, "events"};
}

/* The data file: per trace a live block, a reserved block (when modelled) and a phase block. */
static void memfig_put_data(FILE *fp, memfig *g) {
    int block = 0;
    fprintf(fp, "# remat plot: memory over one training iteration; data blocks (gnuplot `index`) below.\n");
    fprintf(fp, "# x is %s; memory in bytes; phase: 0 init 1 forward 2 recompute 3 loss 4 backward 5 optimizer;\n",
            g->xtime ? "seconds since the iteration's first event" : "events of the iteration applied so far");
    fprintf(fp, "# event: the trace's event index after which the value holds (-1: before the iteration)\n");
    for (int i = 0; i < g->n; i++) {
        const remat_mem_curve *c = &g->items[i].curve;
        const remat_trace *t = g->in[i].trace;
        if (block) fprintf(fp, "\n\n");
        g->live_idx[i] = block++;
        fprintf(fp, "# index %d: live bytes of ", g->live_idx[i]);
        remat_gp_put_string(fp, g->items[i].label);
        fprintf(fp, " (");
        remat_gp_put_string(fp, g->in[i].origin ? g->in[i].origin : "");
        fprintf(fp, "), iteration %d, %lld points kept of %lld\n", c->iter, (long long)c->live.n, (long long)c->live.n_full);
        fprintf(fp, "# x live_bytes event phase block layer\n");
        write_series(fp, t, &c->live, g->xtime);
        g->res_idx[i] = -1;
        if (c->has_reserved) {
            fprintf(fp, "\n\n");
            g->res_idx[i] = block++;
            fprintf(fp, "# index %d: reserved bytes (caching allocator model) of ", g->res_idx[i]);
            remat_gp_put_string(fp, g->items[i].label);
            fprintf(fp, ", %lld points kept of %lld\n", (long long)c->reserved.n, (long long)c->reserved.n_full);
            fprintf(fp, "# x reserved_bytes event phase block layer\n");
            write_series(fp, t, &c->reserved, g->xtime);
        }
        fprintf(fp, "\n\n");
        g->ph_idx[i] = block++;
        fprintf(fp, "# index %d: phases of ", g->ph_idx[i]);
        remat_gp_put_string(fp, g->items[i].label);
        fprintf(fp, "\n# x0 x1 phase row\n");
        for (int64_t k = 0; k < c->n_spans; k++)
            fprintf(fp, "%.9g %.9g %d %d\n", c->spans[k].x0, c->spans[k].x1, c->spans[k].phase, i);
    }
}

/* Layout (pixels -> screen fractions): margins from the strip labels, key rows from the key titles. */
static void memfig_layout(memfig *g, const remat_figure_opts *fo, remat_fig_format format) {
    const int n = g->n;
    g->W = fo->width > 0 ? fo->width : 1280;
    g->H = fo->height > 0 ? fo->height : 720;
    g->cw = char_px(format);
    g->lh = line_px(format);
    size_t strip_chars = 5;
    for (int i = 0; i < n; i++) {
        if (n == 1) snprintf(g->strip_lab[i], sizeof g->strip_lab[i], "phase");
        else shorten(g->items[i].label, 18, g->strip_lab[i], sizeof g->strip_lab[i]);
        if (utf8_len(g->strip_lab[i]) > strip_chars) strip_chars = utf8_len(g->strip_lab[i]);
    }
    double lpx = fmax(78.0, (double)strip_chars * g->cw + 22.0);
    g->L = lpx / g->W;
    g->R = 1.0 - 28.0 / g->W;
    g->entries = 0;
    size_t longest = 0;
    for (int i = 0; i < n; i++) {
        if (n == 1) {
            snprintf(g->key_title[i][0], sizeof g->key_title[i][0], "live bytes");
            snprintf(g->key_title[i][1], sizeof g->key_title[i][1], "reserved bytes (caching allocator model)");
        } else {
            snprintf(g->key_title[i][0], sizeof g->key_title[i][0], "%s: live", g->items[i].label);
            snprintf(g->key_title[i][1], sizeof g->key_title[i][1], "%s: reserved", g->items[i].label);
        }
        for (int r = 0; r < 1 + g->items[i].curve.has_reserved; r++) {
            g->entries++;
            if (utf8_len(g->key_title[i][r]) > longest) longest = utf8_len(g->key_title[i][r]);
        }
    }
    double entry_px = ((double)longest + 8.0) * g->cw;
    int cols = g->entries < 2 ? 1 : (int)fmin(3.0, floor((g->R - g->L) * g->W / entry_px));
    if (cols < 1) cols = 1;
    if (cols > g->entries) cols = g->entries;
    /* with reserved curves and room for two columns: live curves in the first column,
     * reserved in the second, one row per trace (the key fills column by column) */
    g->rows = g->any_reserved && cols >= 2 ? n : (g->entries + cols - 1) / cols;
    g->title_y = 1.0 - 18.0 / g->H;
    g->key_top = 1.0 - 34.0 / g->H;
    g->MT = g->key_top - (g->rows * (g->lh + 2.0) + 10.0) / g->H;
    g->SB = 84.0 / g->H;
    double strip_row = fmax(16.0, fmin(24.0, 0.06 * g->H / n));
    g->ST = g->SB + (n * strip_row + 4.0) / g->H;
    g->MB = g->ST + 10.0 / g->H;
}

/* Peak labels: one per curve, texts from the model's site names, placed off the curves. */
static void memfig_peak_labels(memfig *g) {
    const int n = g->n;
    if (g->budget > 0 && (double)g->budget > g->ymax) g->ymax = (double)g->budget;
    g->ytop = g->ymax * (n > 1 || g->any_reserved ? 1.28 : 1.18);
    g->nl = 0;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < n; i++) {
            const remat_mem_curve *c = &g->items[i].curve;
            if (r == 1 && !c->has_reserved) continue;
            const remat_series *s = r ? &c->reserved : &c->live;
            peak_label *pl = &g->labels[g->nl++];
            memset(pl, 0, sizeof *pl);
            pl->trace = i;
            pl->reserved = r;
            pl->x = s->x[s->peak_i];
            pl->bytes = (double)s->peak;
            pl->px = pl->x / g->xmax;
            pl->py = pl->bytes / g->ytop;
            char v[32], site[160];
            remat_fmt_bytes_short(s->peak, v, sizeof v);
            if (r == 0) {
                remat_plot_site_label(g->items[i].has_model ? &g->items[i].model : NULL, &c->live_site, site,
                                      sizeof site);
                snprintf(pl->text, sizeof pl->text, "peak %s at %s", v, site);
            } else {
                snprintf(pl->text, sizeof pl->text, "reserved peak %s", v);
            }
        }
    double pw = (g->R - g->L) * g->W, ph = (g->MT - g->MB) * g->H;
    gcurve curves[2 * REMAT_PLOT_MAX_INPUTS];
    int nc = 0;
    for (int i = 0; i < n; i++)
        for (int r = 0; r < 1 + g->items[i].curve.has_reserved; r++) {
            const remat_series *s = r ? &g->items[i].curve.reserved : &g->items[i].curve.live;
            curves[nc++] = (gcurve){s->x, s->bytes, s->n, g->xmax, g->ytop};
        }
    place_labels(g->labels, g->nl, g->cw / pw, (g->lh + 4.0) / ph, 7.0 / pw, 7.0 / ph, curves, nc, 2.2 * g->lh / pw,
                 ph / pw);
}

/* The script's head: terminal, data file, units, colours, margins. */
static void memfig_put_head(FILE *fp, const memfig *g, const remat_figure_files *files, const remat_figure_opts *fo) {
    const remat_unit xu = g->xu, yu = g->yu;
    remat_gp_put_open(fp, files, fo, "remat plot: memory over one training iteration.",
                      g->xtime ? " (bytes, seconds)" : " (bytes, event counts)");
    char ys[48], xs[48];
    fprintf(fp, "\n# units: data / yscale is drawn, in ylab\nyscale = %s\nylab = \"%s\"\n",
            remat_gp_real(yu.scale, ys, sizeof ys), yu.name);
    fprintf(fp, "xscale = %s\nxlab = \"%s\"\n", remat_gp_real(xu.scale, xs, sizeof xs), xu.name);
    fprintf(fp, "ytop = %.17g / yscale\nxmax = %.17g / xscale\n", g->ytop, g->xmax);
    for (int i = 0; i < g->n; i++)
        fprintf(fp, "c%d = \"%s\"   # colour of trace %d\n", i + 1, remat_plot_trace_color(i), i + 1);
    put_phase_funcs(fp);
    fprintf(fp, "set style textbox opaque fc rgb \"white\" noborder margins 2,1\n");
    fprintf(fp, "set multiplot\n");
    fprintf(fp, "set lmargin at screen %.4f\nset rmargin at screen %.4f\n", g->L, g->R);
}

/* The curve panel: title, key, budget line, peak labels, the curves. */
static void memfig_put_curves(FILE *fp, const memfig *g, const remat_figure_opts *fo) {
    const int n = g->n;
    char title[400], model_name[REMAT_NAME_LEN + 40];
    remat_plot_items_model_name(g->items, n, model_name, sizeof model_name);
    const char *exec = remat_plot_inputs_execution(g->in, n);
    if (!remat_figure_title_given(fo, title, sizeof title)) {
        if (g->same_iter)
            snprintf(title, sizeof title, "Memory over training iteration %d%s, %s", g->items[0].curve.iter,
                     model_name, exec);
        else snprintf(title, sizeof title, "Memory over the last training iteration%s, %s", model_name, exec);
    }
    fprintf(fp, "\n# ---- curve panel\n");
    fprintf(fp, "set label 1000 ");
    remat_gp_put_string(fp, title);
    fprintf(fp, " at screen 0.5, screen %.4f center font \",13\"\n", g->title_y);
    fprintf(fp, "set tmargin at screen %.4f\nset bmargin at screen %.4f\n", g->MT, g->MB);
    fprintf(fp, "set key at screen %.4f, screen %.4f left top vertical maxrows %d Left reverse samplen 3 spacing 1.15 width 2\n",
            g->L, g->key_top, g->rows);
    fprintf(fp, "set xrange [0:xmax]\nset yrange [0:ytop]\nset format x \"\"\nunset xlabel\n");
    if (g->budget > 0) { /* what the card holds for the allocator: the line a curve must stay under */
        char b[32], t[64];
        snprintf(t, sizeof t, "budget %s", remat_fmt_bytes_short(g->budget, b, sizeof b));
        remat_gp_put_budget(fp, 990, g->budget, t, 0);
    }
    fprintf(fp, "set ylabel \"memory (\".ylab.\")\"\nset format y \"%%g\"\n");
    remat_gp_put_grid(fp);
    for (int k = 0; k < g->nl; k++) {
        const peak_label *pl = &g->labels[k];
        const char *col = remat_plot_trace_color(pl->trace);
        fprintf(fp, "set label %d \"\" at first %.9g/xscale, first %.17g/yscale point pt %d ps 1.3 lc rgb c%d front\n",
                2 * k + 1, pl->x, pl->bytes, pl->reserved ? 6 : 7, pl->trace + 1);
        double ty = (pl->box.y0 + pl->box.y1) / 2.0;
        double tx = pl->right ? pl->box.x0 : pl->box.x1;
        fprintf(fp, "set label %d ", 2 * k + 2);
        remat_gp_put_string(fp, pl->text);
        fprintf(fp, " at graph %.4f, graph %.4f %s front boxed tc rgb \"%s\"\n", tx, ty, pl->right ? "left" : "right",
                col);
        if (pl->leader)
            fprintf(fp, "set arrow %d from graph %.4f, graph %.4f to first %.9g/xscale, first %.17g/yscale nohead lc rgb c%d lw 0.8 back\n",
                    k + 1, pl->lx, pl->ly, pl->x, pl->bytes, pl->trace + 1);
    }
    fprintf(fp, "plot \\\n");
    if (n == 1)
        fprintf(fp, "  dat index %d using (($1+$2)/2/xscale):(ytop/2):(($2-$1)/2/xscale):(ytop/2):(phase_bg($3)) "
                    "with boxxyerror fs solid 1.0 noborder lc rgb variable notitle, \\\n",
                g->ph_idx[0]);
    int curves_left = g->entries;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < n; i++) {
            if (r == 0)
                fprintf(fp, "  dat index %d using ($1/xscale):($2/yscale) with steps lw 2 lc rgb c%d title ",
                        g->live_idx[i], i + 1);
            else if (g->res_idx[i] >= 0)
                fprintf(fp, "  dat index %d using ($1/xscale):($2/yscale) with steps lw 1.3 dt (6,4) lc rgb c%d title ",
                        g->res_idx[i], i + 1);
            else
                continue;
            remat_gp_put_string(fp, g->key_title[i][r]);
            fprintf(fp, "%s\n", --curves_left > 0 ? ", \\" : "");
        }
}

/* The phase strip: one row per trace, the x axis label, a key of the phases present. */
static void memfig_put_strip(FILE *fp, const memfig *g) {
    const int n = g->n;
    fprintf(fp, "\n# ---- phase strip (one row per trace)\n");
    fprintf(fp, "unset label\nunset arrow\n");
    fprintf(fp, "set tmargin at screen %.4f\nset bmargin at screen %.4f\n", g->ST, g->SB);
    fprintf(fp, "set yrange [%g:-0.5]\nset ytics (", n - 0.5);
    for (int i = 0; i < n; i++) {
        if (i) fprintf(fp, ", ");
        remat_gp_put_string(fp, g->strip_lab[i]);
        fprintf(fp, " %d", i);
    }
    fprintf(fp, ") scale 0\nunset ylabel\nset format x \"%%g\"\nset border 1\nunset grid\n");
    if (g->xtime) fprintf(fp, "set xlabel \"time since the start of the iteration (\".xlab.\")\" offset 0,0.4\n");
    else fprintf(fp, "set xlabel \"allocation events since the start of the iteration\" offset 0,0.4\n");
    fprintf(fp, "set key at screen 0.5, screen %.4f center bottom horizontal maxcols 8 maxrows 1 samplen 1.2 spacing 1 width 1\n",
            4.0 / g->H);
    int present[REMAT_PHASE_COUNT + 1] = {0};
    for (int i = 0; i < n; i++)
        for (int64_t k = 0; k < g->items[i].curve.n_spans; k++) {
            int p = g->items[i].curve.spans[k].phase;
            present[p < REMAT_PHASE_COUNT ? p : REMAT_PHASE_COUNT] = 1;
        }
    fprintf(fp, "plot \\\n");
    for (int i = 0; i < n; i++)
        fprintf(fp, "  dat index %d using (($1+$2)/2/xscale):4:(($2-$1)/2/xscale):(0.4):(phase_fg($3)) "
                    "with boxxyerror fs solid 1.0 noborder lc rgb variable notitle, \\\n",
                g->ph_idx[i]);
    int first = 1;
    for (int p = 0; p <= REMAT_PHASE_COUNT; p++) {
        if (!present[p]) continue;
        fprintf(fp, "%s  NaN with boxes fs solid 1.0 noborder lc rgb \"%s\" title \"%s\"", first ? "" : ", \\\n",
                remat_plot_phase_color(p, 1), p < REMAT_PHASE_COUNT ? remat_phase_name((remat_phase)p) : "other");
        first = 0;
    }
    fprintf(fp, "\nunset multiplot\n");
}

remat_status remat_plot_memory(const remat_plot_input *in, int n, const remat_curve_opts *co,
                               const remat_figure_opts *fo, remat_figure_files *files, remat_error *err) {
    remat_figure_opts fdef;
    remat_status st = remat_figure_begin(&fo, &fdef, files, err);
    if (st != REMAT_OK) return st;
    remat_plot_item items[REMAT_PLOT_MAX_INPUTS];
    if ((st = remat_plot_items_build(in, n, co, items, err)) != REMAT_OK) return st;
    memfig g;
    memset(&g, 0, sizeof g);
    g.in = in;
    g.items = items;
    g.n = n;
    g.xtime = items[0].curve.xkind == REMAT_CURVE_X_TIME;
    g.budget = co ? co->budget_bytes : 0; /* co may be NULL: the defaults */
    memfig_ranges(&g);
    remat_afile af;
    if ((st = remat_afile_open(&af, files->data, err)) != REMAT_OK) goto out;
    memfig_put_data(af.fp, &g);
    if ((st = remat_afile_commit(&af, err)) != REMAT_OK) goto out;
    memfig_layout(&g, fo, files->format);
    memfig_peak_labels(&g);
    if ((st = remat_afile_open(&af, files->script, err)) != REMAT_OK) goto out;
    memfig_put_head(af.fp, &g, files, fo);
    memfig_put_curves(af.fp, &g, fo);
    memfig_put_strip(af.fp, &g);
    if ((st = remat_afile_commit(&af, err)) != REMAT_OK) goto out;
    st = remat_figure_render(fo, files, err);
out:
    remat_plot_items_free(items, n);
    return st;
}
