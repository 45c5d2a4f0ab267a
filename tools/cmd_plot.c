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

int remat_cmd_plot(int argc, char **argv) {
    cli_list traces = {0}, labels = {0};
    const char *out = NULL, *xs = NULL, *pareto = NULL, *scaling = NULL, *title = NULL;
    cli_list Ts = {0}, Ns = {0};
    int64_t budget = -1;
    int device = -1, iter = -1, data_only = 0, breakdown = 0, no_reserved = 0, max_points = 4000, width = 0, height = 0, help = 0;
    const cli_option opts[] = {
        {"--trace", CLI_STRING_LIST, &traces, "trace file (HDF5) to draw; repeat to overlay several"},
        {"--label", CLI_STRING_LIST, &labels, "legend name of the trace at the same position (default: its plan)"},
        {"--out", CLI_STRING, &out, "figure to write: FIG.png or FIG.svg (FIG.gp and FIG.dat go next to it)"},
        {"--x", CLI_STRING, &xs,
         "x axis of memory curves: time (default) or event (the default when simulated and measured traces are "
         "overlaid: their clocks differ)"},
        {"--iter", CLI_INT, &iter, "training iteration to draw, from 0 (default: the last)"},
        {"--device", CLI_INT, &device, "imported streams: the device to draw (default: the first with events)"},
        {"--max-points", CLI_INT, &max_points, "points per curve after reduction (default 4000, at least 8)"},
        {"--no-reserved", CLI_FLAG, &no_reserved, "draw live bytes only (no caching-allocator replay)"},
        {"--breakdown", CLI_FLAG, &breakdown, "draw the peak of each trace split by role, as stacked bars"},
        {"--T", CLI_STRING_LIST, &Ts,
         "draw each baseline trace as the simulator predicts it at this T (no model runs); once for every trace, or "
         "once per --trace in order (0: as recorded)"},
        {"--N", CLI_STRING_LIST, &Ns, "the same for the batch size: once for every trace, or once per --trace"},
        {"--budget", CLI_SIZE, &budget, "a memory budget, drawn as a dashed line over the memory curves"},
        {"--pareto", CLI_STRING, &pareto, "draw a search's Pareto front from this JSON file"},
        {"--scaling", CLI_STRING, &scaling, "draw peak against T (or N) from this JSON file"},
        {"--title", CLI_STRING, &title, "figure title (default: made from the inputs)"},
        {"--width", CLI_INT, &width, "image width in pixels (default 1280)"},
        {"--height", CLI_INT, &height, "image height in pixels (default 720)"},
        {"--data-only", CLI_FLAG, &data_only, "write FIG.dat and FIG.gp only; do not run gnuplot"},
        {0},
    };
    int rc = remat_cli_parse(argc, argv, USAGE, opts, &help);
    if (rc != 0 || help) return rc;
    if (!out) return remat_cli_missing("plot", "--out", "the figure to write, FIG.png or FIG.svg");
    int modes = (pareto != NULL) + (scaling != NULL) + (traces.n > 0 || breakdown);
    if (modes == 0)
        return remat_cli_missing("plot", "--trace", "a trace file (or --pareto FRONT.json, --scaling SCALING.json)");
    if (modes > 1) {
        fprintf(stderr, "remat plot: %s: expected one kind of figure (--trace/--breakdown, --pareto or --scaling), got several\n",
                pareto ? "--pareto" : "--scaling");
        return 2;
    }
    if (breakdown && traces.n == 0) return remat_cli_missing("plot", "--trace", "the traces whose peaks to break down");
    remat_curve_opts co = remat_curve_opts_default();
    if (xs && !parse_x(xs, &co.x)) {
        fprintf(stderr, "remat plot: --x: expected time or event, got '%s'\n", xs);
        return 2;
    }
    if (iter < -1) {
        fprintf(stderr, "remat plot: --iter: expected 0 or more, got %d\n", iter);
        return 2;
    }
    if (max_points < 8) {
        fprintf(stderr, "remat plot: --max-points: expected 8 or more, got %d\n", max_points);
        return 2;
    }
    if (width < 0 || height < 0 || width > 20000 || height > 20000 || (width && width < 320) || (height && height < 240)) {
        fprintf(stderr, "remat plot: --width/--height: expected 320..20000 x 240..20000 pixels, got %d x %d\n", width, height);
        return 2;
    }
    if (labels.n > traces.n) {
        fprintf(stderr, "remat plot: --label: given %d times for %d traces (expected at most one per --trace)\n", labels.n,
                traces.n);
        return 2;
    }
    if (traces.n > REMAT_PLOT_MAX_INPUTS) {
        fprintf(stderr, "remat plot: --trace: given %d times (expected at most %d)\n", traces.n, REMAT_PLOT_MAX_INPUTS);
        return 2;
    }
    int Tv[REMAT_PLOT_MAX_INPUTS] = {0}, Nv[REMAT_PLOT_MAX_INPUTS] = {0};
    for (int q = 0; q < 2; q++) { /* --T, --N: one value for all, or one per trace */
        const cli_list *l = q ? &Ns : &Ts;
        int *v = q ? Nv : Tv;
        if (l->n == 0) continue;
        if (traces.n == 0 || (l->n != 1 && l->n != traces.n)) {
            fprintf(stderr, "remat plot: --%c: given %d times for %d traces (expected once for all, or once per --trace)\n",
                    q ? 'N' : 'T', l->n, traces.n);
            return 2;
        }
        for (int i = 0; i < traces.n; i++) {
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
    if (budget == 0 || budget == REMAT_SIZE_INF || (budget > 0 && (traces.n == 0 || breakdown))) {
        fprintf(stderr, "remat plot: --budget: expected a positive finite size, with --trace memory curves\n");
        return 2;
    }
    co.budget_bytes = budget > 0 ? budget : 0;
    co.iter = iter;
    co.max_points = max_points;
    co.reserved = !no_reserved;
    remat_figure_opts fo = remat_figure_opts_default();
    fo.out = out;
    fo.title = title;
    fo.data_only = data_only;
    fo.width = width;
    fo.height = height;
    remat_figure_files files;
    remat_error err = {0};
    remat_status st;
    if ((st = remat_figure_files_init(&fo, &files, &err)) != REMAT_OK) return remat_cli_fail("plot", &err);
    cli_file ins[REMAT_PLOT_MAX_INPUTS + 2];
    int n_in = 0;
    for (int i = 0; i < traces.n; i++) ins[n_in++] = (cli_file){"--trace", traces.items[i]};
    ins[n_in++] = (cli_file){"--pareto", pareto};
    ins[n_in++] = (cli_file){"--scaling", scaling};
    const cli_file outs[] = {{"--out", files.image}, {"--out (its data)", files.data}, {"--out (its script)", files.script}};
    if (remat_cli_refuse_overlap("plot", ins, n_in, outs, 3)) return 2;

    if (pareto) {
        remat_pareto p;
        if ((st = remat_pareto_read(pareto, &p, &err)) != REMAT_OK) return remat_cli_fail("plot", &err);
        st = remat_plot_pareto(&p, pareto, &fo, &files, &err);
        remat_pareto_free(&p);
        return st == REMAT_OK ? report(&files, data_only) : remat_cli_fail("plot", &err);
    }
    if (scaling) {
        remat_scaling s;
        if ((st = remat_scaling_read(scaling, &s, &err)) != REMAT_OK) return remat_cli_fail("plot", &err);
        st = remat_plot_scaling(&s, scaling, &fo, &files, &err);
        remat_scaling_free(&s);
        return st == REMAT_OK ? report(&files, data_only) : remat_cli_fail("plot", &err);
    }

    if (traces.n >= 1 && remat_ext_trace_is_ext_h5(traces.items[0])) {
        if (traces.n > 1 || breakdown) {
            fprintf(stderr, "remat plot: --trace: %s is an imported allocation stream: expected it alone, without "
                            "--breakdown (its figure holds its own breakdown)\n", traces.items[0]);
            return 2;
        }
        return plot_ext(traces.items[0], device, max_points, &fo, data_only);
    }
    remat_trace tr[REMAT_PLOT_MAX_INPUTS];
    remat_plot_input in[REMAT_PLOT_MAX_INPUTS];
    remat_sim *sims[REMAT_PLOT_MAX_INPUTS] = {0}; /* with --T/--N: the predicted traces' owners */
    static char rescaled_label[REMAT_PLOT_MAX_INPUTS][256];
    int loaded = 0;
    st = REMAT_OK;
    for (int i = 0; i < traces.n && st == REMAT_OK; i++) {
        remat_cli_progress("plot: reading %s", traces.items[i]);
        remat_trace_init(&tr[i]);
        st = remat_trace_read_h5(traces.items[i], &tr[i], &err);
        loaded = i + 1;
        in[i].trace = &tr[i];
        in[i].origin = traces.items[i];
        in[i].label = i < labels.n ? labels.items[i] : NULL;
        if (st == REMAT_OK && (Tv[i] || Nv[i])) { /* the simulator's prediction at the other size */
            int T = Tv[i], N = Nv[i];
            remat_sim_opts so = remat_sim_opts_default();
            so.T = T;
            so.N = N;
            so.steady = 1; /* the last step drawn by default is then one of the steady state */
            so.origin = traces.items[i];
            remat_cli_progress("plot: predicting %s at T=%d N=%d", traces.items[i], T, N);
            sims[i] = remat_sim_init(&tr[i], &so, &err);
            if (!sims[i]) st = err.status;
            if (st == REMAT_OK) st = remat_sim_set_plan(sims[i], NULL, &err);
            if (st == REMAT_OK) st = remat_sim_run(sims[i], &err);
            if (st == REMAT_OK) in[i].trace = remat_sim_trace(sims[i]);
            if (st == REMAT_OK && !in[i].label) { /* say which size each curve is at */
                const remat_model *pm = remat_sim_model(sims[i]);
                const char *base = strrchr(traces.items[i], '/');
                snprintf(rescaled_label[i], sizeof rescaled_label[i], "predicted at T=%lld, N=%lld from %.200s",
                         (long long)pm->T, (long long)pm->N, base ? base + 1 : traces.items[i]);
                in[i].label = rescaled_label[i];
            }
        }
    }
    int mixed = 0; /* simulated (or rescaled) and measured traces overlaid */
    for (int i = 0; st == REMAT_OK && i < traces.n; i++)
        for (int k = 0; k < traces.n; k++)
            mixed |= !strcmp(in[i].trace->backend, "sim") && strcmp(in[k].trace->backend, "sim");
    if (st == REMAT_OK && mixed && !xs && !breakdown) {
        co.x = REMAT_CURVE_X_EVENT;
        printf("x axis: allocation events, not time: the overlay mixes simulated and measured traces, whose times "
               "come from different clocks (--x time draws them on time anyway)\n");
    }
    if (st == REMAT_OK) {
        remat_cli_progress("plot: drawing %s", out);
        st = breakdown ? remat_plot_breakdown(in, traces.n, &co, &fo, &files, &err)
                       : remat_plot_memory(in, traces.n, &co, &fo, &files, &err);
    }
    remat_cli_progress_done();
    for (int i = 0; st == REMAT_OK && breakdown && i < traces.n; i++) print_peak_layers(traces.items[i], in[i].trace, iter);
    for (int i = 0; i < loaded; i++) {
        remat_sim_free(sims[i]);
        remat_trace_free(&tr[i]);
    }
    return st == REMAT_OK ? report(&files, data_only) : remat_cli_fail("plot", &err);
}
