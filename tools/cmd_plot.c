/* cmd_plot.c - `remat plot`: memory curves, peak breakdowns, Pareto fronts and
 * scaling curves drawn with gnuplot (plots/, docs/plots.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/size.h"
#include "sim/search.h"

#include "core/io/ext_trace.h"
#include "core/io/trace.h"
#include "core/model/model.h"
#include "plots/extplot.h"
#include "plots/memplot.h"
#include "plots/pareto.h"
#include "plots/scaling.h"
#include "sim/sim.h"
#include "tools/cli.h"
#include "tools/paths.h"
#include "tools/commands.h"

static const char *USAGE =
    "usage: remat plot --trace A.h5 [--trace B.h5 ...] --out FIG.png   memory over one iteration\n"
    "       remat plot --breakdown --trace A.h5 [--trace B.h5 ...] --out FIG.png   the peak by role\n"
    "       remat plot --pareto FRONT.json --out FIG.png                peak against time overhead\n"
    "       remat plot --scaling SCALING.json --out FIG.png             peak against T (or N)\n"
    "       remat plot --trace IMPORTED.h5 [--device D] --out FIG.png    an imported PyTorch snapshot\n"
    "       remat plot --trace BASE.h5 --T t [--N n] --out FIG.png      a baseline as predicted at another size\n"
    "\n"
    "Writes FIG.png (or FIG.svg: the extension decides) with gnuplot, and next to it FIG.dat\n"
    "(the numbers, in bytes and seconds) and FIG.gp (the script, kept: restyle it and run\n"
    "`gnuplot FIG.gp` in that folder). Memory curves: one per trace (live bytes solid,\n"
    "reserved bytes of the caching allocator model dashed), each peak marked with its value\n"
    "and block/layer, the phases in a strip below; reduced to --max-points per curve keeping\n"
    "every bucket's maximum, so no peak is lost. An external allocation stream (written by\n"
    "`remat import-torch`) is drawn per device: allocated and reserved bytes over the recorded\n"
    "window, the peak with its largest blocks, and the peak broken down by allocation site.\n"
    "Exit status: 0 done, 1 gnuplot missing or failing (data and script are still written),\n"
    "2 bad input. docs/plots.md has the formats.";

static int parse_x(const char *s, remat_curve_x *x) {
    if (!strcmp(s, "time")) *x = REMAT_CURVE_X_TIME;
    else if (!strcmp(s, "event") || !strcmp(s, "events")) *x = REMAT_CURVE_X_EVENT;
    else return 0;
    return 1;
}

static int report(const remat_figure_files *f, int data_only) {
    if (data_only) printf("wrote %s and %s (run `gnuplot %s` in that folder to draw %s)\n", f->data, f->script,
                          strrchr(f->script, '/') ? strrchr(f->script, '/') + 1 : f->script, f->image_name);
    else printf("wrote %s (script %s, data %s)\n", f->image, f->script, f->data);
    if (f->gnuplot_stderr[0]) fprintf(stderr, "remat plot: gnuplot said: %s\n", f->gnuplot_stderr);
    return 0;
}

/* An external allocation stream (remat import-torch): one device per figure. */
static int plot_ext(const char *path, int device, int max_points, const remat_figure_opts *fo, int data_only) {
    remat_ext_trace t;
    remat_error err = {0};
    remat_cli_progress("plot: reading %s", path);
    if (remat_ext_trace_read_h5(path, &t, &err) != REMAT_OK) {
        remat_cli_progress_done();
        return remat_cli_fail("plot", &err);
    }
    if (device < 0) {
        device = 0;
        for (int32_t d = t.n_devices - 1; d >= 0; d--)
            if (t.devices[d].n_events > 0) device = d;
    }
    remat_ext_curve c;
    remat_status st = remat_ext_curve_build(&t, device, &c, &err);
    remat_figure_files files;
    if (st == REMAT_OK) {
        remat_cli_progress("plot: drawing %s", fo->out);
        st = remat_plot_ext(&t, &c, path, max_points, fo, &files, &err);
    }
    remat_cli_progress_done();
    if (st == REMAT_OK) {
        char b1[32], b2[32];
        printf("device %d: %lld events, peak allocated %s, peak reserved %s%s\n", (int)c.device, (long long)(c.n - 1),
               remat_fmt_bytes_short(c.peak_allocated, b1, sizeof b1), remat_fmt_bytes_short(c.peak_reserved, b2, sizeof b2),
               c.inconsistent ? " (some events contradict the end state: see docs/pytorch-snapshots.md)" : "");
        int32_t labels[REMAT_EXTPLOT_TOP];
        int64_t bytes[REMAT_EXTPLOT_TOP];
        int64_t nl = remat_ext_curve_breakdown(&c, labels, bytes, REMAT_EXTPLOT_TOP, &err);
        for (int64_t i = 0; i < nl && i < REMAT_EXTPLOT_TOP; i++)
            printf("  at the peak %10s  %s\n", remat_fmt_bytes_short(bytes[i], b1, sizeof b1),
                   labels[i] >= 0 ? remat_ext_label(&t, labels[i]) : "(allocated before the window)");
        for (int32_t d = 0; d < t.n_devices; d++)
            if (d != device && t.devices[d].n_events > 0)
                printf("device %d also has %lld events: draw it with --device %d\n", (int)d,
                       (long long)t.devices[d].n_events, (int)d);
    }
    remat_ext_curve_free(&c);
    remat_ext_trace_free(&t);
    return st == REMAT_OK ? report(&files, data_only) : remat_cli_fail("plot", &err);
}

/* The peak of one trace, layer by layer (the figure has the roles). */
static void print_peak_layers(const char *path, const remat_trace *t, int iter) {
    enum { MAX = 4096, SHOWN = 12 };
    static remat_layer_bytes g[MAX];
    int64_t at, peak;
    int n = remat_peak_by_layer(t, iter, g, MAX, &at, &peak);
    if (n <= 0) return;
    remat_model m;
    remat_error e = {0};
    int have = t->model_text && remat_model_parse(t->model_text, strlen(t->model_text), path, &m, &e) == REMAT_OK;
    char b1[64], b2[64];
    printf("%s: peak live %s at event %lld, by layer:\n", path, remat_fmt_bytes_short(peak, b1, sizeof b1), (long long)at);
    for (int k = 0; k < n && k < SHOWN; k++)
        printf("  %-24s %-18s %10s  %5.1f %%  (%d tensor%s)\n",
               g[k].layer >= 0 && have && g[k].layer < m.n_layers ? m.layers[g[k].layer].name : g[k].layer >= 0 ? "?" : "(no layer)",
               remat_role_name((remat_role)g[k].role), remat_fmt_bytes_short(g[k].bytes, b2, sizeof b2),
               peak > 0 ? 100.0 * (double)g[k].bytes / (double)peak : 0.0, g[k].tensors, g[k].tensors == 1 ? "" : "s");
    if (n > SHOWN) printf("  ... %d more (layer, role) groups\n", n - SHOWN);
    if (have) remat_model_free(&m);
}

/* The command's flags, and what the phases below hand each other. */
typedef struct plot_cmd {
    cli_list traces, labels, Ts, Ns;
    const char *out, *xs, *pareto, *scaling, *title;
    int64_t budget;
    int device, iter, data_only, breakdown, no_reserved, max_points, width, height;
    int Tv[REMAT_PLOT_MAX_INPUTS], Nv[REMAT_PLOT_MAX_INPUTS]; /* --T, --N per trace (0: as recorded) */
    remat_curve_opts co;
} plot_cmd;

/* The figure kind, the curve and image flags: 0, or 2 with one line on stderr. */
static int check_flags(plot_cmd *c) {
    if (!c->out) return remat_cli_missing("plot", "--out", "the figure to write, FIG.png or FIG.svg");
    int modes = (c->pareto != NULL) + (c->scaling != NULL) + (c->traces.n > 0 || c->breakdown);
    if (modes == 0)
        return remat_cli_missing("plot", "--trace", "a trace file (or --pareto FRONT.json, --scaling SCALING.json)");
    if (modes > 1) {
        fprintf(stderr, "remat plot: %s: expected one kind of figure (--trace/--breakdown, --pareto or --scaling), got several\n",
                c->pareto ? "--pareto" : "--scaling");
        return 2;
    }
    if (c->breakdown && c->traces.n == 0) return remat_cli_missing("plot", "--trace", "the traces whose peaks to break down");
    if (c->xs && !parse_x(c->xs, &c->co.x)) {
        fprintf(stderr, "remat plot: --x: expected time or event, got '%s'\n", c->xs);
        return 2;
    }
    if (c->iter < -1) {
        fprintf(stderr, "remat plot: --iter: expected 0 or more, got %d\n", c->iter);
        return 2;
    }
    if (c->max_points < 8) {
        fprintf(stderr, "remat plot: --max-points: expected 8 or more, got %d\n", c->max_points);
        return 2;
    }
    int width = c->width, height = c->height;
    if (width < 0 || height < 0 || width > 20000 || height > 20000 || (width && width < 320) || (height && height < 240)) {
        fprintf(stderr, "remat plot: --width/--height: expected 320..20000 x 240..20000 pixels, got %d x %d\n", width, height);
        return 2;
    }
    if (c->labels.n > c->traces.n) {
        fprintf(stderr, "remat plot: --label: given %d times for %d traces (expected at most one per --trace)\n",
                c->labels.n, c->traces.n);
        return 2;
    }
    if (c->traces.n > REMAT_PLOT_MAX_INPUTS) {
        fprintf(stderr, "remat plot: --trace: given %d times (expected at most %d)\n", c->traces.n, REMAT_PLOT_MAX_INPUTS);
        return 2;
    }
    return 0;
}

/* --T, --N: one value for all traces, or one per trace, into c->Tv, c->Nv: 0, or 2. */
static int parse_sizes(plot_cmd *c) {
    for (int q = 0; q < 2; q++) {
        const cli_list *l = q ? &c->Ns : &c->Ts;
        int *v = q ? c->Nv : c->Tv;
        if (l->n == 0) continue;
        if (c->traces.n == 0 || (l->n != 1 && l->n != c->traces.n)) {
            fprintf(stderr, "remat plot: --%c: given %d times for %d traces (expected once for all, or once per --trace)\n",
                    q ? 'N' : 'T', l->n, c->traces.n);
            return 2;
        }
        for (int i = 0; i < c->traces.n; i++) {
            const char *s = l->items[l->n == 1 ? 0 : i];
            char *end;
            long x = strtol(s, &end, 10);
            if (end == s || *end || x < 0 || x > (q ? REMAT_SIM_MAX_N : REMAT_SIM_MAX_T)) {
                fprintf(stderr, "remat plot: --%c: '%s': expected a count 0..%lld (0: as recorded)\n", q ? 'N' : 'T', s,
                        (long long)(q ? REMAT_SIM_MAX_N : REMAT_SIM_MAX_T));
                return 2;
            }
            v[i] = (int)x;
        }
    }
    return 0;
}

/* Trace i as the simulator predicts it at --T/--N (owned by *sim), labelled with its size
 * unless --label named it. */
static remat_status predict_at(const plot_cmd *c, int i, remat_trace *tr, remat_sim **sim, remat_plot_input *in,
                               char *label, size_t len, remat_error *err) {
    const char *path = c->traces.items[i];
    int T = c->Tv[i], N = c->Nv[i];
    remat_sim_opts so = remat_sim_opts_default();
    so.T = T;
    so.N = N;
    so.steady = 1; /* the last step drawn by default is then one of the steady state */
    so.origin = path;
    remat_cli_progress("plot: predicting %s at T=%d N=%d", path, T, N);
    remat_status st = REMAT_OK;
    *sim = remat_sim_init(tr, &so, err);
    if (!*sim) st = err->status;
    if (st == REMAT_OK) st = remat_sim_set_plan(*sim, NULL, err);
    if (st == REMAT_OK) st = remat_sim_run(*sim, err);
    if (st == REMAT_OK) in->trace = remat_sim_trace(*sim);
    if (st == REMAT_OK && !in->label) { /* say which size each curve is at */
        const remat_model *pm = remat_sim_model(*sim);
        const char *base = strrchr(path, '/');
        snprintf(label, len, "predicted at T=%lld, N=%lld from %.200s", (long long)pm->T, (long long)pm->N,
                 base ? base + 1 : path);
        in->label = label;
    }
    return st;
}

/* Memory curves or the breakdown of the traces (each read, or predicted at another size). */
static int plot_traces(plot_cmd *c, const remat_figure_opts *fo, remat_figure_files *files) {
    const cli_list *traces = &c->traces;
    remat_error err = {0};
    remat_trace tr[REMAT_PLOT_MAX_INPUTS];
    remat_plot_input in[REMAT_PLOT_MAX_INPUTS];
    remat_sim *sims[REMAT_PLOT_MAX_INPUTS] = {0}; /* with --T/--N: the predicted traces' owners */
    static char rescaled_label[REMAT_PLOT_MAX_INPUTS][256];
    int loaded = 0;
    remat_status st = REMAT_OK;
    for (int i = 0; i < traces->n && st == REMAT_OK; i++) {
        remat_cli_progress("plot: reading %s", traces->items[i]);
        remat_trace_init(&tr[i]);
        st = remat_trace_read_h5(traces->items[i], &tr[i], &err);
        loaded = i + 1;
        in[i].trace = &tr[i];
        in[i].origin = traces->items[i];
        in[i].label = i < c->labels.n ? c->labels.items[i] : NULL;
        if (st == REMAT_OK && (c->Tv[i] || c->Nv[i])) /* the simulator's prediction at the other size */
            st = predict_at(c, i, &tr[i], &sims[i], &in[i], rescaled_label[i], sizeof rescaled_label[i], &err);
    }
    int mixed = 0; /* simulated (or rescaled) and measured traces overlaid */
    for (int i = 0; st == REMAT_OK && i < traces->n; i++)
        for (int k = 0; k < traces->n; k++)
            mixed |= !strcmp(in[i].trace->backend, "sim") && strcmp(in[k].trace->backend, "sim");
    if (st == REMAT_OK && mixed && !c->xs && !c->breakdown) {
        c->co.x = REMAT_CURVE_X_EVENT;
        printf("x axis: allocation events, not time: the overlay mixes simulated and measured traces, whose times "
               "come from different clocks (--x time draws them on time anyway)\n");
    }
    if (st == REMAT_OK) {
        remat_cli_progress("plot: drawing %s", c->out);
        st = c->breakdown ? remat_plot_breakdown(in, traces->n, &c->co, fo, files, &err)
                          : remat_plot_memory(in, traces->n, &c->co, fo, files, &err);
    }
    remat_cli_progress_done();
    for (int i = 0; st == REMAT_OK && c->breakdown && i < traces->n; i++)
        print_peak_layers(traces->items[i], in[i].trace, c->iter);
    for (int i = 0; i < loaded; i++) {
        remat_sim_free(sims[i]);
        remat_trace_free(&tr[i]);
    }
    return st == REMAT_OK ? report(files, c->data_only) : remat_cli_fail("plot", &err);
}

/* --pareto or --scaling: the file read and drawn. */
static int plot_file(const plot_cmd *c, const remat_figure_opts *fo, remat_figure_files *files) {
    remat_error err = {0};
    remat_status st;
    if (c->pareto) {
        remat_pareto p;
        if ((st = remat_pareto_read(c->pareto, &p, &err)) != REMAT_OK) return remat_cli_fail("plot", &err);
        st = remat_plot_pareto(&p, c->pareto, fo, files, &err);
        remat_pareto_free(&p);
    } else {
        remat_scaling s;
        if ((st = remat_scaling_read(c->scaling, &s, &err)) != REMAT_OK) return remat_cli_fail("plot", &err);
        st = remat_plot_scaling(&s, c->scaling, fo, files, &err);
        remat_scaling_free(&s);
    }
    return st == REMAT_OK ? report(files, c->data_only) : remat_cli_fail("plot", &err);
}

int remat_cmd_plot(int argc, char **argv) {
    plot_cmd c;
    memset(&c, 0, sizeof c);
    c.budget = -1;
    c.device = -1;
    c.iter = -1;
    c.max_points = 4000;
    c.co = remat_curve_opts_default();
    int help = 0;
    const cli_option opts[] = {
        {"--trace", CLI_STRING_LIST, &c.traces, "trace file (HDF5) to draw; repeat to overlay several"},
        {"--label", CLI_STRING_LIST, &c.labels, "legend name of the trace at the same position (default: its plan)"},
        {"--out", CLI_STRING, &c.out, "figure to write: FIG.png or FIG.svg (FIG.gp and FIG.dat go next to it)"},
        {"--x", CLI_STRING, &c.xs,
         "x axis of memory curves: time (default) or event (the default when simulated and measured traces are "
         "overlaid: their clocks differ)"},
        {"--iter", CLI_INT, &c.iter, "training iteration to draw, from 0 (default: the last)"},
        {"--device", CLI_INT, &c.device, "imported streams: the device to draw (default: the first with events)"},
        {"--max-points", CLI_INT, &c.max_points, "points per curve after reduction (default 4000, at least 8)"},
        {"--no-reserved", CLI_FLAG, &c.no_reserved, "draw live bytes only (no caching-allocator replay)"},
        {"--breakdown", CLI_FLAG, &c.breakdown, "draw the peak of each trace split by role, as stacked bars"},
        {"--T", CLI_STRING_LIST, &c.Ts,
         "draw each baseline trace as the simulator predicts it at this T (no model runs); once for every trace, or "
         "once per --trace in order (0: as recorded)"},
        {"--N", CLI_STRING_LIST, &c.Ns, "the same for the batch size: once for every trace, or once per --trace"},
        {"--budget", CLI_SIZE, &c.budget, "a memory budget, drawn as a dashed line over the memory curves"},
        {"--pareto", CLI_STRING, &c.pareto, "draw a search's Pareto front from this JSON file"},
        {"--scaling", CLI_STRING, &c.scaling, "draw peak against T (or N) from this JSON file"},
        {"--title", CLI_STRING, &c.title, "figure title (default: made from the inputs)"},
        {"--width", CLI_INT, &c.width, "image width in pixels (default 1280)"},
        {"--height", CLI_INT, &c.height, "image height in pixels (default 720)"},
        {"--data-only", CLI_FLAG, &c.data_only, "write FIG.dat and FIG.gp only; do not run gnuplot"},
        {0},
    };
    int rc = remat_cli_parse(argc, argv, USAGE, opts, &help);
    if (rc != 0 || help) return rc;
    if ((rc = check_flags(&c)) != 0 || (rc = parse_sizes(&c)) != 0) return rc;
    if (c.budget == 0 || c.budget == REMAT_SIZE_INF || (c.budget > 0 && (c.traces.n == 0 || c.breakdown))) {
        fprintf(stderr, "remat plot: --budget: expected a positive finite size, with --trace memory curves\n");
        return 2;
    }
    c.co.budget_bytes = c.budget > 0 ? c.budget : 0;
    c.co.iter = c.iter;
    c.co.max_points = c.max_points;
    c.co.reserved = !c.no_reserved;
    remat_figure_opts fo = remat_figure_opts_default();
    fo.out = c.out;
    fo.title = c.title;
    fo.data_only = c.data_only;
    fo.width = c.width;
    fo.height = c.height;
    remat_figure_files files;
    remat_error err = {0};
    if (remat_figure_files_init(&fo, &files, &err) != REMAT_OK) return remat_cli_fail("plot", &err);
    cli_file ins[REMAT_PLOT_MAX_INPUTS + 2];
    int n_in = 0;
    for (int i = 0; i < c.traces.n; i++) ins[n_in++] = (cli_file){"--trace", c.traces.items[i]};
    ins[n_in++] = (cli_file){"--pareto", c.pareto};
    ins[n_in++] = (cli_file){"--scaling", c.scaling};
    const cli_file outs[] = {{"--out", files.image}, {"--out (its data)", files.data}, {"--out (its script)", files.script}};
    if (remat_cli_refuse_overlap("plot", ins, n_in, outs, 3)) return 2;
    if (c.pareto || c.scaling) return plot_file(&c, &fo, &files);
    if (c.traces.n >= 1 && remat_ext_trace_is_ext_h5(c.traces.items[0])) {
        if (c.traces.n > 1 || c.breakdown) {
            fprintf(stderr, "remat plot: --trace: %s is an imported allocation stream: expected it alone, without "
                            "--breakdown (its figure holds its own breakdown)\n", c.traces.items[0]);
            return 2;
        }
        return plot_ext(c.traces.items[0], c.device, c.max_points, &fo, c.data_only);
    }
    return plot_traces(&c, &fo, &files);
}
