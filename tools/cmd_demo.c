/* cmd_demo.c - `remat demo`: the whole story on the built-in default model.
 *
 *  1. record three plain-backpropagation steps (the baseline trace);
 *  2. search the fastest plan under a budget, in the simulator;
 *  3. predict that plan's memory curve;
 *  4. run the plan for real and compare measured with predicted;
 *  5. verify it bit-identical to plain backpropagation;
 *  6. predict peak against T for plain backpropagation and checkpointing along time;
 *  7. draw the figures; write a summary table.
 * Every file goes into the output folder (written whole: temp file + rename). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/exec/executor.h"
#include "core/io/atomic_file.h"
#include "core/io/trace.h"
#include "core/model/plan_notation.h"
#include "plots/memplot.h"
#include "plots/pareto.h"
#include "plots/scaling.h"
#include "sim/search.h"
#include "sim/sim.h"
#include "sim/span_search.h"
#include "sim/sweep.h"
#include "tools/answer.h"
#include "tools/cli.h"
#include "tools/paths.h"
#include "tools/commands.h"
#include "tools/run_common.h"
#include "tools/sweep_scaling.h"
#include "verify/plan_check.h"

extern const char remat_default_model_json[];

static const char *USAGE =
    "usage: remat demo [--model M.json] [--T t] [--N n] [--out DIR] [--budget SIZE] [--budget-on reserved|live]\n"
    "                  [--device-overhead SIZE] [--threads N] [--no-plots]\n"
    "\n"
    "On the built-in default model (an MLP of three LIF layers of width 512, T=64, N=128;\n"
    "or --model): records the baseline, searches the fastest plan whose predicted peak\n"
    "(reserved bytes under the caching allocator model, or live with --budget-on live) plus\n"
    "the device overhead fits the budget (default: 60% of the baseline's peak, no overhead:\n"
    "the demo runs remat's CPU reference backend), runs that plan for real, verifies it\n"
    "bit-identical to plain backpropagation, predicts peak against T, and writes the traces,\n"
    "the plan, the figures and summary.txt into DIR (default remat-demo).";

#define STAGES 7

typedef struct demo {
    const char *dir;
    remat_model m;
    remat_plan base_plan;
    remat_backend be;
    remat_trace base_trace, plan_trace;
    remat_step_result base_res, plan_res;
    remat_search_budget_result found;
    int have_found;
    remat_search_figures predicted;
    remat_trace predicted_trace; /* copy of the simulator's */
    remat_verify_result vr;
    int have_vr;
    int64_t budget;              /* for the allocator: total - overhead */
    remat_budget bud;            /* as given */
    cli_overhead_source src;     /* where the device overhead came from */
    remat_scaling scaling;
    char figures[4][4096];
    int n_figures;
    int threads;
    remat_error err;
} demo;

static void stage(int i, const char *what) {
    remat_cli_progress("demo [%d/%d] %s", i, STAGES, what);
    /* the stages are the demo's narrative: on stdout, so that stderr holds only the
     * one error line of a failure (interfaces.md) */
    if (!isatty(2)) {
        printf("demo [%d/%d] %s\n", i, STAGES, what);
        fflush(stdout);
    }
}

static void path_in(const demo *d, const char *name, char *buf, size_t len) {
    snprintf(buf, len, "%s/%s", d->dir, name);
}

/* Runs one step of plan p with a trace; writes it to dir/name. */
static remat_status record(demo *d, const remat_plan *p, remat_trace *tr, remat_step_result *out, const char *name) {
    remat_exec_opts o = remat_exec_opts_default();
    o.trace = tr;
    o.no_input_grad = 1; /* as a training loop: the data has no gradient */
    remat_tools_trace_host(tr, "ref", d->threads);
    remat_tools_caching_config_text(&o.caching, tr->allocator_config, sizeof tr->allocator_config);
    /* three steps: the first is cold (page faults on fresh segments); the simulator
     * prices ops by their least over the warm steps, and the last step is reported */
    enum { STEPS = 3 };
    remat_step_result r[STEPS];
    remat_status st = remat_exec_run(&d->m, p, &d->be, &o, STEPS, r, &d->err);
    *out = r[STEPS - 1]; /* peaks as the simulator reports them: the maxima over the steps */
    for (int i = 0; st == REMAT_OK && i < STEPS - 1; i++) {
        if (r[i].peak_live_bytes > out->peak_live_bytes) out->peak_live_bytes = r[i].peak_live_bytes;
        if (r[i].peak_reserved_bytes > out->peak_reserved_bytes) out->peak_reserved_bytes = r[i].peak_reserved_bytes;
        if (r[i].end_of_forward_bytes > out->end_of_forward_bytes) out->end_of_forward_bytes = r[i].end_of_forward_bytes;
    }
    char path[4096];
    path_in(d, name, path, sizeof path);
    if (st == REMAT_OK) st = remat_trace_write_h5(tr, path, &d->err);
    return st;
}

/* Stage 2: the fastest plan whose predicted peak fits; also writes plan.json and pareto.json. */
static remat_status search(demo *d) {
    char path[4096];
    path_in(d, "baseline.h5", path, sizeof path);
    remat_sim_opts so = remat_sim_opts_default();
    so.origin = path;
    so.steady = 1;
    so.allocator = remat_budget_allocator(d->bud.on);
    remat_sim *s = remat_sim_init(&d->base_trace, &so, &d->err);
    if (!s) return d->err.status;
    remat_search_budget_opts bo = remat_search_budget_opts_default();
    remat_status st = remat_search_budget_spans(s, d->budget, &bo, &d->found, &d->err);
    if (st == REMAT_OK) {
        d->have_found = 1;
        path_in(d, "pareto.json", path, sizeof path);
        remat_front_meta meta = {d->m.name, d->m.T, d->m.N, remat_budget_on_name(d->bud.on), d->bud.total,
                                 d->bud.overhead};
        remat_search_point *pts = NULL;
        int np = 0;
        st = remat_search_points_for_file(&d->found, &d->m, &pts, &np, &d->err);
        if (st == REMAT_OK)
            st = remat_search_write_front(path, pts, np, &d->found.baseline, d->budget, &meta,
                                      &d->err);
        remat_xfree(pts);
    }
    if (st == REMAT_OK && d->found.found) {
        char q[512];
        remat_cli_chosen_for(q, sizeof q, "remat demo", &d->m, &d->bud);
        char *text = remat_plan_to_json_for(&d->found.plan, &d->m, q, &d->err);
        if (!text) st = d->err.status;
        path_in(d, "plan.json", path, sizeof path);
        if (st == REMAT_OK) st = remat_afile_write_all(path, text, strlen(text), &d->err);
        remat_xfree(text);
    }
    /* stage 3: the plan's predicted curve, kept for the figure */
    if (st == REMAT_OK && d->found.found) {
        stage(3, "predicting the plan's memory curve");
        st = remat_search_evaluate(s, &d->found.plan, &d->predicted, &d->err);
        const remat_trace *pt = remat_sim_trace(s);
        path_in(d, "predicted.h5", path, sizeof path);
        if (st == REMAT_OK) st = remat_trace_write_h5(pt, path, &d->err);
        if (st == REMAT_OK) st = remat_trace_read_h5(path, &d->predicted_trace, &d->err);
    }
    remat_sim_free(s);
    return st;
}

/* The sweep's plan at each T: checkpointing along time (sim/sweep.h); ctx: the flag
 * cleared where a model refuses time chunks. */
static remat_status along_time_plan(void *ctx, const remat_model *m, remat_plan *out, remat_error *err) {
    return remat_sweep_plan_along_time(m, out, (int *)ctx, err);
}

/* Stage 6: peak against T, from the simulator's rescaling of the baseline trace. */
static remat_status scaling(demo *d) {
    static const int64_t Ts[] = {16, 32, 64, 128, 256};
    enum { NT = (int)(sizeof Ts / sizeof Ts[0]) };
    int along_time = 1; /* every T took the span with k ~ sqrt(T) */
    remat_sweep_opts o = {'T', Ts, NT, along_time_plan, &along_time, NULL, NULL};
    remat_sim_opts so = remat_sim_opts_default();
    so.steady = 1;
    so.origin = "baseline.h5";
    remat_sweep_row rows[NT];
    int64_t fixed = 0;
    remat_status st = remat_sim_sweep(&d->base_trace, &so, &o, rows, &fixed, &d->err);
    remat_scaling *sc = &d->scaling;
    if (st == REMAT_OK) st = remat_tools_sweep_scaling(&o, rows, fixed, 1, 1, sc, &d->err);
    if (st != REMAT_OK) return st;
    snprintf(sc->series[0].name, sizeof sc->series[0].name, "plain backpropagation");
    snprintf(sc->series[1].name, sizeof sc->series[1].name, "checkpointing along time (one span, k ~ sqrt(T))");
    sc->series[0].fit = REMAT_FIT_LINEAR;
    sc->series[1].fit = REMAT_FIT_SQRT;
    sc->series[0].fit_given = sc->series[1].fit_given = 1;
    if (!along_time) { /* batch norm: no time chunks; say what was drawn, and fit what it is */
        snprintf(sc->series[1].name, sizeof sc->series[1].name,
                 "first block checkpointed (batch norm: no time chunks, no span)");
        sc->series[1].fit = remat_scaling_best_fit(&sc->series[1]);
    }
    char path[4096];
    path_in(d, "scaling.json", path, sizeof path);
    return remat_scaling_write(path, sc, &d->err);
}

/* Stage 7: the figures; a missing gnuplot leaves data and scripts, and says so. */
static remat_status figures(demo *d) {
    char out[4096];
    remat_figure_opts fo = remat_figure_opts_default();
    remat_curve_opts co = remat_curve_opts_default();
    remat_figure_files files;
    remat_status st;
    remat_plot_input in[3] = {
        {&d->base_trace, "baseline.h5", "baseline, measured"},
        {&d->predicted_trace, "predicted.h5", "plan, simulated"},
        {&d->plan_trace, "plan.h5", "plan, measured"},
    };
    int n_in = d->have_found && d->found.found ? 3 : 1;
    path_in(d, "memory.png", out, sizeof out);
    fo.out = out;
    st = remat_plot_memory(in, n_in, &co, &fo, &files, &d->err);
    if (st == REMAT_OK) snprintf(d->figures[d->n_figures++], sizeof d->figures[0], "%s", out);
    if (st == REMAT_OK) {
        path_in(d, "breakdown.png", out, sizeof out);
        st = remat_plot_breakdown(in, n_in == 3 ? 3 : 1, &co, &fo, &files, &d->err);
        if (st == REMAT_OK) snprintf(d->figures[d->n_figures++], sizeof d->figures[0], "%s", out);
    }
    if (st == REMAT_OK && d->have_found) {
        remat_pareto pf;
        char src[4096];
        path_in(d, "pareto.json", src, sizeof src);
        st = remat_pareto_read(src, &pf, &d->err);
        if (st == REMAT_OK) {
            path_in(d, "pareto.png", out, sizeof out);
            st = remat_plot_pareto(&pf, src, &fo, &files, &d->err);
            remat_pareto_free(&pf);
            if (st == REMAT_OK) snprintf(d->figures[d->n_figures++], sizeof d->figures[0], "%s", out);
        }
    }
    if (st == REMAT_OK) {
        path_in(d, "scaling.png", out, sizeof out);
        st = remat_plot_scaling(&d->scaling, "scaling.json", &fo, &files, &d->err);
        if (st == REMAT_OK) snprintf(d->figures[d->n_figures++], sizeof d->figures[0], "%s", out);
    }
    return st;
}

/* "123.4 MiB" */
static const char *mib(int64_t bytes, char *buf, size_t len) {
    snprintf(buf, len, "%.1f MiB", (double)bytes / 1048576.0);
    return buf;
}

static void summary(demo *d, FILE *f) {
    char b1[64], b2[64], b3[64], b4[64];
    const remat_step_result *a = &d->base_res, *p = &d->plan_res;
    fprintf(f, "remat demo: %s (T=%lld, N=%lld)\n", d->m.name, (long long)d->m.T, (long long)d->m.N);
    remat_cli_budget_print(f, &d->bud, d->src);
    remat_cli_steady_note(f, (int)d->base_trace.n_iters, (int)d->base_trace.n_iters);
    fprintf(f, "(predictions describe remat's own executor on its CPU reference backend, not a PyTorch script of "
               "the same network; step times were measured here, on %d reference-backend thread%s)\n\n",
            d->threads, d->threads == 1 ? "" : "s");
    if (!d->have_found || !d->found.found) {
        fprintf(f, "no plan fits the budget: the smallest predicted peak is %s\n",
                remat_cli_fmt_bytes(d->have_found ? d->found.min_peak : 0, b1, sizeof b1));
        return;
    }
    char label[1024];
    remat_plan_notation(&d->found.plan, &d->m, label, sizeof label);
    fprintf(f, "plan found by the search: %s\n\n", label);
    fprintf(f, "%-22s %16s %16s %16s\n", "", "baseline", "plan predicted", "plan measured");
    fprintf(f, "%-22s %16s %16s %16s\n", "peak live", mib(a->peak_live_bytes, b1, sizeof b1),
            mib(d->predicted.peak_live, b2, sizeof b2), mib(p->peak_live_bytes, b3, sizeof b3));
    fprintf(f, "%-22s %16s %16s %16s\n", "peak reserved", mib(a->peak_reserved_bytes, b1, sizeof b1),
            mib(d->predicted.peak_reserved, b2, sizeof b2),
            mib(p->peak_reserved_bytes, b3, sizeof b3));
    fprintf(f, "%-22s %16s %16s %16s\n", "end of forward", mib(a->end_of_forward_bytes, b1, sizeof b1),
            mib(d->predicted.end_of_forward, b2, sizeof b2),
            mib(p->end_of_forward_bytes, b4, sizeof b4));
    fprintf(f, "%-22s %14.1f ms %14.1f ms %14.1f ms\n", "step time", 1e3 * a->step_time_s, 1e3 * d->predicted.time_s,
            1e3 * p->step_time_s);
    remat_cli_step_trust_note(f, remat_cli_step_trust_kind(d->m.T, d->m.N, d->m.T, d->m.N, 1, 0)); /* the plan predicted */
    fprintf(f, "\nmemory saved: %.1f %% of the peak, at %+.1f %% step time (measured)\n",
            100.0 * (1.0 - (double)p->peak_live_bytes / (double)a->peak_live_bytes),
            100.0 * (p->step_time_s / a->step_time_s - 1.0));
    fprintf(f, "prediction: peak live %s (off by %lld B), peak reserved %s\n",
            d->predicted.peak_live == p->peak_live_bytes ? "exact to the byte" : "DIFFERS",
            (long long)(d->predicted.peak_live - p->peak_live_bytes),
            d->predicted.peak_reserved == p->peak_reserved_bytes ? "exact to the byte" : "DIFFERS");
    if (d->have_vr)
        fprintf(f, "verification: %s (%d tensors compared bit for bit, %d recomputed layers)\n",
                remat_verify_verdict(d->vr.failures), d->vr.cmp.n, d->vr.plan.recomputed_layers);
    fprintf(f, "\npeak against T (predicted):\n%8s %16s %16s\n", "T", d->scaling.series[0].name, "along time");
    for (int i = 0; i < d->scaling.series[0].n; i++)
        fprintf(f, "%8.0f %16s %16s\n", d->scaling.series[0].x[i],
                mib(d->scaling.series[0].peak_bytes[i], b1, sizeof b1),
                mib(d->scaling.series[1].peak_bytes[i], b2, sizeof b2));
    fprintf(f, "\nfiles in %s: baseline.h5, plan.json, pareto.json, predicted.h5, plan.h5, scaling.json", d->dir);
    for (int i = 0; i < d->n_figures; i++) {
        const char *slash = strrchr(d->figures[i], '/');
        fprintf(f, ", %s", slash ? slash + 1 : d->figures[i]);
    }
    fprintf(f, "\n");
}

static remat_status run_demo(demo *d, int plots) {
    remat_status st;
    stage(1, "recording three steps of plain backpropagation");
    st = record(d, &d->base_plan, &d->base_trace, &d->base_res, "baseline.h5");
    if (st != REMAT_OK) return st;
    if (d->bud.total < 0) { /* 60 % of the baseline's peak, on what the budget is compared with */
        int64_t peak = d->bud.on == REMAT_BUDGET_ON_LIVE ? d->base_res.peak_live_bytes : d->base_res.peak_reserved_bytes;
        d->bud.total = peak * 6 / 10 + d->bud.overhead;
    }
    remat_error be = {0};
    if (remat_budget_allocator_bytes(&d->bud, &d->budget, &be) != REMAT_OK) {
        d->err = be;
        return be.status;
    }
    stage(2, "searching the fastest plan under the budget (simulator)");
    st = search(d);
    if (st != REMAT_OK) return st;
    if (d->found.found) {
        stage(4, "running the plan for real");
        st = record(d, &d->found.plan, &d->plan_trace, &d->plan_res, "plan.h5");
        if (st != REMAT_OK) return st;
        stage(5, "verifying it bit-identical to plain backpropagation");
        remat_verify_opts vo = remat_verify_opts_default();
        st = remat_verify_plan_run(&d->m, &d->found.plan, &d->be, &vo, &d->vr, &d->err);
        if (st != REMAT_OK) return st;
        d->have_vr = 1;
    }
    stage(6, "predicting peak against T");
    st = scaling(d);
    if (st != REMAT_OK) return st;
    if (plots) {
        stage(7, "drawing the figures (gnuplot)");
        st = figures(d);
    }
    remat_cli_progress_done();
    return st;
}

static void demo_free(demo *d) {
    if (d->have_vr) remat_verify_result_free(&d->vr);
    if (d->have_found) remat_search_budget_result_free(&d->found);
    remat_scaling_free(&d->scaling);
    remat_trace_free(&d->predicted_trace);
    remat_trace_free(&d->plan_trace);
    remat_trace_free(&d->base_trace);
    remat_backend_free(&d->be);
    remat_plan_free(&d->base_plan);
    remat_model_free(&d->m);
}

int remat_cmd_demo(int argc, char **argv) {
    const char *model_path = NULL, *out_dir = "remat-demo";
    int threads = 1, help = 0, no_plots = 0, T = 0, N = 0;
    cli_budget_flags bf = CLI_BUDGET_FLAGS_INIT;
    const cli_option opts[] = {
        {"--model", CLI_STRING, &model_path, "model file (default: the built-in mlp-lif)"},
        {"--out", CLI_STRING, &out_dir, "output folder (default remat-demo)"},
        {"--budget", CLI_SIZE, &bf.budget, "memory budget of the search (default: 60% of the baseline peak)"},
        {"--budget-on", CLI_STRING, &bf.on, CLI_BUDGET_HELP_ON},
        {"--device-overhead", CLI_SIZE, &bf.overhead,
         "device bytes outside the allocator counted against the budget (default 0: the demo runs on the CPU)"},
        {"--T", CLI_INT, &T, "number of time steps (default: the model's)"},
        {"--N", CLI_INT, &N, "batch size (default: the model's)"},
        {"--threads", CLI_INT, &threads, "reference-backend threads (default 1)"},
        {"--no-plots", CLI_FLAG, &no_plots, "skip the figures"},
        {0},
    };
    int rc = remat_cli_parse(argc, argv, USAGE, opts, &help);
    if (rc != 0 || help) return rc;
    if (threads < 1 || threads > 256) {
        fprintf(stderr, "remat demo: --threads: %d is out of range (expected 1..256)\n", threads);
        return 2;
    }
    static const char *const written[] = {"baseline.h5", "plan.h5", "predicted.h5", "plan.json", "pareto.json",
                                          "scaling.json", "summary.txt"};
    for (size_t i = 0; model_path && i < sizeof written / sizeof written[0]; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", out_dir, written[i]);
        const cli_file in = {"--model", model_path}, out = {"--out", p};
        struct stat dir;
        int exists = stat(out_dir, &dir) == 0; /* else demo creates it: nothing in it to check yet */
        if ((exists ? remat_cli_refuse_overlap : remat_cli_refuse_same_file)("demo", &in, 1, &out, 1)) return 2;
    }
    static demo d;
    memset(&d, 0, sizeof d);
    d.dir = out_dir;
    remat_alloc_kind kind;
    if ((rc = remat_cli_budget_from_flags("demo", &bf, 0, &d.bud, &kind, &d.src)) != 0) return rc;
    if (bf.budget == 0) {
        fprintf(stderr, "remat demo: --budget: expected a positive size\n");
        return 2;
    }
    d.threads = threads;
    remat_trace_init(&d.base_trace);
    remat_trace_init(&d.plan_trace);
    remat_trace_init(&d.predicted_trace);
    if ((rc = remat_tools_size_flags("demo", T, N)) != 0) return rc;
    remat_status st = model_path ? remat_tools_model_load(model_path, &d.m, &d.err)
                                 : remat_model_parse(remat_default_model_json, strlen(remat_default_model_json),
                                                     "<built-in mlp-lif>", &d.m, &d.err);
    if (st == REMAT_OK && (T || N)) {
        remat_model sized;
        st = remat_model_rescale(&d.m, T, N, &sized, &d.err);
        remat_model_free(&d.m);
        if (st == REMAT_OK) d.m = sized;
    }
    if (st == REMAT_OK) st = remat_plan_init_empty(&d.m, &d.base_plan, &d.err);
    if (st == REMAT_OK && mkdir(out_dir, 0755) != 0 && errno != EEXIST)
        st = remat_error_set(&d.err, REMAT_ERR_IO, "--out: cannot create folder %s: %s", out_dir, strerror(errno));
    if (st == REMAT_OK) st = remat_tools_backend_open("ref", threads, &d.be, &d.err);
    if (st == REMAT_OK) st = run_demo(&d, !no_plots);
    remat_cli_progress_done();
    int code = 0;
    if (st == REMAT_OK || (st == REMAT_ERR_CHECK && d.n_figures < 4)) {
        summary(&d, stdout);
        char path[4096];
        path_in(&d, "summary.txt", path, sizeof path);
        remat_afile af;
        remat_error werr = {0};
        if (remat_afile_open(&af, path, &werr) == REMAT_OK) {
            summary(&d, af.fp);
            remat_afile_commit(&af, &werr);
        }
        if (werr.status != REMAT_OK) fprintf(stderr, "remat demo: %s\n", werr.msg);
        if (st == REMAT_ERR_CHECK) fprintf(stderr, "remat demo: %s\n", d.err.msg); /* gnuplot missing */
        if (d.have_vr && d.vr.failures & (REMAT_VERIFY_FAIL_TENSORS | REMAT_VERIFY_FAIL_LOSSY)) code = 1;
        if (!d.found.found) code = 1;
        if (st == REMAT_ERR_CHECK) code = 1;
        if (werr.status != REMAT_OK && code == 0) code = remat_status_exit_code(werr.status);
    } else {
        code = remat_cli_fail("demo", &d.err);
    }
    demo_free(&d);
    return code;
}
