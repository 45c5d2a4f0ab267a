/* cmd_tune.c - `remat tune`: the largest batch size (or T) that fits a memory
 * budget, with and without checkpointing, predicted from one baseline trace
 * (sim/tune.h); --confirm runs the checkpointed configuration once for real. */
#include <stdio.h>
#include <string.h>

#include "core/exec/executor.h"
#include "core/io/atomic_file.h"
#include "core/io/json_write.h"
#include "core/io/trace.h"
#include "sim/sim.h"
#include "sim/tune.h"
#include "tools/cli.h"
#include "tools/paths.h"
#include "tools/commands.h"
#include "tools/run_common.h"

static const char *USAGE =
    "usage: remat tune --trace BASE.h5 --budget BYTES [--dim N|T] [--max V] [--allocator exact|caching]\n"
    "                  [--allocator-config K=V,...] [--out P.json] [--confirm] [--backend ref|cuda]\n"
    "                  [--threads n] [--json]\n"
    "\n"
    "Finds the largest batch size N (or number of time steps T with --dim T) whose predicted\n"
    "peak fits the budget, once with plain backpropagation and once with the fastest\n"
    "checkpoint plan that fits (remat search --budget at that size), by rescaling the\n"
    "baseline trace. --confirm runs the checkpointed configuration once for real and\n"
    "prints measured against predicted.";

typedef struct measured {
    int64_t peak_live, peak_reserved;
    double step_time_s;
} measured;

static remat_status confirm(const remat_trace *base, const remat_tune_result *r, const char *backend, int threads,
                            const char *alloc_cfg, measured *out, remat_error *err) {
    remat_backend be;
    memset(&be, 0, sizeof be);
    memset(out, 0, sizeof *out);
    remat_status st = remat_tools_backend_open(backend, threads, &be, err);
    if (st != REMAT_OK) return st;
    remat_exec_opts o = remat_exec_opts_default();
    o.seed = base->seed;
    o.no_input_grad = base->no_input_grad;
    if (alloc_cfg) st = remat_caching_config_parse(alloc_cfg, &o.caching, err);
    else if (base->allocator_config[0]) st = remat_caching_config_parse(base->allocator_config, &o.caching, err);
    int iters = base->n_iters > 0 ? base->n_iters : 1;
    remat_step_result *res = st == REMAT_OK ? remat_xcalloc((size_t)iters, sizeof *res, err) : NULL;
    if (st == REMAT_OK && !res) st = REMAT_ERR_NOMEM;
    if (st == REMAT_OK) st = remat_exec_run(&r->model, &r->plan, &be, &o, iters, res, err);
    for (int i = 0; st == REMAT_OK && i < iters; i++) {
        if (res[i].peak_live_bytes > out->peak_live) out->peak_live = res[i].peak_live_bytes;
        if (res[i].peak_reserved_bytes > out->peak_reserved) out->peak_reserved = res[i].peak_reserved_bytes;
        out->step_time_s += res[i].step_time_s / iters;
    }
    remat_xfree(res);
    remat_backend_free(&be);
    return st;
}

static void tune_progress(void *ctx, int64_t value, int checkpointed, int probes_done) {
    cli_progress("tune: probe %d: %s=%lld %s", probes_done + 1, (const char *)ctx, (long long)value,
                 checkpointed ? "with checkpointing" : "plain");
}

int remat_cmd_tune(int argc, char **argv) {
    const char *trace_path = NULL, *dim = "N", *alloc = "exact", *alloc_cfg = NULL, *out = NULL, *backend = "ref";
    int64_t budget = -1, max_value = 0;
    int confirm_run = 0, threads = 1, json = 0, help = 0;
    const cli_option opts[] = {
        {"--trace", CLI_STRING, &trace_path, "baseline trace (remat run --trace, no plan)"},
        {"--budget", CLI_SIZE, &budget, "memory budget"},
        {"--dim", CLI_STRING, &dim, "N (batch size, default) or T (time steps)"},
        {"--max", CLI_SIZE, &max_value, "largest value to try (default and limit: 2^20 for N, 2^16 for T)"},
        {"--allocator", CLI_STRING, &alloc, "exact (peak live bytes, default) or caching (peak reserved bytes)"},
        {"--allocator-config", CLI_STRING, &alloc_cfg, "caching allocator settings (default: the trace's)"},
        {"--out", CLI_STRING, &out, "write the checkpoint plan for the tuned size (JSON plan file)"},
        {"--confirm", CLI_FLAG, &confirm_run, "run the checkpointed configuration once and compare"},
        {"--backend", CLI_STRING, &backend, "backend of --confirm: ref (default) or cuda"},
        {"--threads", CLI_INT, &threads, "reference-backend threads for --confirm (default 1)"},
        {"--json", CLI_FLAG, &json, "print one JSON object instead of the summary"},
        {0},
    };
    int rc = cli_parse(argc, argv, USAGE, opts, &help);
    if (rc != 0 || help) return rc;
    if (!trace_path) return cli_missing("tune", "--trace", "a baseline trace recorded by remat run --trace");
    const cli_file ins[] = {{"--trace", trace_path}};
    const cli_file outs[] = {{"--out", out}};
    if (cli_refuse_overlap("tune", ins, 1, outs, 1)) return 2;
    if (budget <= 0) return cli_missing("tune", "--budget", "a positive memory budget, e.g. 2GiB");
    if (strcmp(dim, "N") && strcmp(dim, "T")) {
        fprintf(stderr, "remat tune: --dim: expected N or T, got '%s'\n", dim);
        return 2;
    }
    int kind = remat_sim_allocator_from_name(alloc);
    if (kind < 0) {
        fprintf(stderr, "remat tune: --allocator: expected exact or caching, got '%s'\n", alloc);
        return 2;
    }
    if (threads < 1 || threads > 256) {
        fprintf(stderr, "remat tune: --threads: %d is out of range (expected 1..256)\n", threads);
        return 2;
    }
    remat_error err = {0};
    remat_trace trace;
    remat_trace_init(&trace);
    if (remat_trace_read_h5(trace_path, &trace, &err) != REMAT_OK) {
        remat_trace_free(&trace);
        return cli_fail("tune", &err);
    }
    remat_tune_opts to = remat_tune_opts_default();
    to.dim_T = dim[0] == 'T';
    to.max_value = max_value;
    to.sim.allocator = (remat_alloc_kind)kind;
    to.sim.allocator_config = alloc_cfg;
    to.sim.origin = trace_path;
    if (trace.n_iters > REMAT_CHAIN_MAX_ITERS) to.sim.iters = REMAT_CHAIN_MAX_ITERS;
    remat_tune_result r;
    to.progress = tune_progress;
    to.progress_ctx = (void *)dim;
    cli_progress("tune: searching the largest %s", dim);
    remat_status st = remat_tune(&trace, &to, budget, &r, &err);
    cli_progress_done();
    if (st != REMAT_OK) {
        remat_trace_free(&trace);
        return cli_fail("tune", &err);
    }
    measured meas;
    int confirmed = 0;
    if (confirm_run && r.have_plan) {
        cli_progress("tune: running %s=%lld once on %s", dim, (long long)r.ckpt.value, backend);
        st = confirm(&trace, &r, backend, threads, alloc_cfg, &meas, &err);
        cli_progress_done();
        confirmed = st == REMAT_OK;
    }
    char label[160] = "";
    if (st == REMAT_OK && r.have_plan) remat_search_plan_label(&r.plan, &r.model, label, sizeof label);
    if (st == REMAT_OK && out && r.have_plan) {
        char *text = remat_plan_to_json(&r.plan, &r.model, &err);
        st = text ? remat_afile_write_all(out, text, strlen(text), &err) : err.status;
        remat_xfree(text);
    }
    if (st == REMAT_OK && json) {
        printf("{\"dim\":\"%s\",\"budget_bytes\":%lld,\"allocator\":\"%s\",\"plain\":{\"value\":%lld,\"peak_bytes\":%lld,"
               "\"step_time_s\":%.9g},\"checkpointed\":{\"value\":%lld,\"peak_bytes\":%lld,\"step_time_s\":%.9g,"
               "\"label\":",
               dim, (long long)budget, alloc, (long long)r.plain.value, (long long)r.plain.fig.peak, r.plain.fig.time_s,
               (long long)r.ckpt.value, (long long)r.ckpt.fig.peak, r.ckpt.fig.time_s);
        remat_json_string(stdout, label);
        if (r.have_plan) {
            char *text = remat_plan_to_json(&r.plan, &r.model, &err);
            printf(",\"plan\":%s", text ? text : "null");
            remat_xfree(text);
        }
        printf("}");
        if (confirmed)
            printf(",\"confirm\":{\"backend\":\"%s\",\"peak_live_bytes\":%lld,\"peak_reserved_bytes\":%lld,"
                   "\"step_time_s\":%.9g,\"predicted_peak_live_bytes\":%lld,\"predicted_peak_reserved_bytes\":%lld,"
                   "\"predicted_step_time_s\":%.9g}",
                   backend, (long long)meas.peak_live, (long long)meas.peak_reserved, meas.step_time_s,
                   (long long)r.ckpt.fig.peak_live, (long long)r.ckpt.fig.peak_reserved, r.ckpt.fig.time_s);
        printf(",\"evaluations\":%d,\"seconds\":%.6f}\n", r.evaluations, r.seconds);
    } else if (st == REMAT_OK) {
        char b1[64], b2[64], b3[64];
        printf("largest %s within %s (%s allocator), from %s (recorded %s=%lld):\n", dim,
               cli_fmt_bytes(budget, b1, sizeof b1), alloc, trace_path, dim,
               (long long)(to.dim_T ? trace.T : trace.N));
        if (r.plain.value > 0)
            printf("  plain backpropagation  %s=%-8lld peak %s, step time %.6f s\n", dim, (long long)r.plain.value,
                   cli_fmt_bytes(r.plain.fig.peak, b1, sizeof b1), r.plain.fig.time_s);
        else
            printf("  plain backpropagation  nothing fits (not even %s=1)\n", dim);
        if (r.ckpt.value > 0)
            printf("  with checkpointing     %s=%-8lld peak %s, step time %.6f s, plan %s\n", dim, (long long)r.ckpt.value,
                   cli_fmt_bytes(r.ckpt.fig.peak, b1, sizeof b1), r.ckpt.fig.time_s, label);
        else
            printf("  with checkpointing     nothing fits (not even %s=1)\n", dim);
        if (confirmed)
            printf("  confirmed on %s: measured peak live %s (predicted %s), reserved %s (predicted %lld B), "
                   "step time %.6f s (predicted %.6f s, %+.1f %%)\n",
                   backend, cli_fmt_bytes(meas.peak_live, b1, sizeof b1), cli_fmt_bytes(r.ckpt.fig.peak_live, b2, sizeof b2),
                   cli_fmt_bytes(meas.peak_reserved, b3, sizeof b3), (long long)r.ckpt.fig.peak_reserved, meas.step_time_s,
                   r.ckpt.fig.time_s, meas.step_time_s > 0 ? 100.0 * (r.ckpt.fig.time_s / meas.step_time_s - 1) : 0.0);
        if (out && r.have_plan) printf("plan written to %s\n", out);
        printf("(%d sizes simulated in %.3f s)\n", r.evaluations, r.seconds);
    }
    rc = st == REMAT_OK ? 0 : cli_fail("tune", &err);
    if (st == REMAT_OK && r.ckpt.value == 0) {
        fprintf(stderr, "remat tune: --budget: nothing fits %lld B, not even %s=1\n", (long long)budget, dim);
        rc = 1;
    }
    remat_tune_result_free(&r);
    remat_trace_free(&trace);
    return rc;
}
