/* cmd_simulate.c - `remat simulate`: predicted peaks and step time of a plan from a
 * baseline trace, without running the model (sim/sim.h). */
#include <stdio.h>
#include <string.h>

#include "core/io/ext_trace.h"
#include "core/io/trace.h"
#include "core/model/plan_notation.h"
#include "sim/search.h"
#include "sim/sim.h"
#include "core/io/json_write.h"
#include "tools/cli.h"
#include "tools/paths.h"
#include "tools/commands.h"
#include "tools/ext_report.h"

static const char *USAGE =
    "usage: remat simulate --trace BASE.h5 [--plan P.json] [--allocator exact|caching]\n"
    "                      [--allocator-config K=V,...] [--N n] [--T t] [--iters n] [--copy-stream]\n"
    "                      [--out PRED.h5] [--json]\n"
    "\n"
    "Predicts what `remat run --plan P.json` would record, from a trace recorded by\n"
    "`remat run --trace` without a plan: the peak live bytes, the peak reserved bytes of\n"
    "the caching allocator model, the bytes held at the end of forward and the step time.\n"
    "--N/--T rescale the recorded run to another batch size or number of time steps.\n"
    "No --plan: the empty plan (plain backpropagation). Modelling assumptions: sim/sim.c.\n"
    "\n"
    "With a stream imported from a PyTorch snapshot (`remat import-torch`), replays it through\n"
    "the caching-allocator model under the snapshot's settings and reports how many\n"
    "allocations land at the address PyTorch gave them and the reserved bytes, predicted and\n"
    "recorded (--json: a `devices` list); --allocator-config A;B;... adds a what-if table\n"
    "(each ';'-separated setting list replayed from a fresh start).";

static void print_human(const remat_sim *s, const char *trace_path, const char *plan_path, const char *alloc) {
    const remat_sim_summary *r = remat_sim_results(s);
    const remat_model *m = remat_sim_model(s);
    char b1[64], b2[64], b3[64], b4[64];
    double base = remat_sim_baseline_step_time(s);
    char label[1024];
    remat_plan_notation(remat_sim_plan(s), m, label, sizeof label);
    printf("predicted: model %s (T=%lld, N=%lld), plan %s", m->name, (long long)m->T, (long long)m->N, label);
    if (plan_path && strcmp(plan_path, label) != 0) printf(" (%s)", plan_path);
    printf(", %d step%s, from %s\n", r->n_iters, r->n_iters == 1 ? "" : "s", trace_path);
    printf("peak live bytes       %s\n", cli_fmt_bytes(r->peak_live_bytes, b1, sizeof b1));
    printf("peak reserved bytes   %s  (caching allocator model)\n", cli_fmt_bytes(r->peak_reserved_bytes, b2, sizeof b2));
    printf("end of forward        %s  (of which compressed inputs %s)\n",
           cli_fmt_bytes(r->end_of_forward_bytes, b3, sizeof b3), cli_fmt_bytes(r->compressed_bytes, b4, sizeof b4));
    printf("step time             %.6f s", r->step_time_s);
    const remat_model *bm = remat_sim_base_model(s);
    if (base > 0 && bm->T == m->T && bm->N == m->N)
        printf("  (baseline measured %.6f s, %+.1f %%)", base, 100.0 * (r->step_time_s / base - 1.0));
    printf("\n");
    printf("recomputed layers     %d per step\n", r->recomputed_layers);
    printf("events                %lld per step\n",
           (long long)(r->n_iters > 0 ? r->iters[r->n_iters - 1].events : 0));
    printf("allocator             %s (peak %s)\n", alloc,
           cli_fmt_bytes(remat_sim_peak(s), b1, sizeof b1));
    if (r->estimated_ops || r->unpriced_ops || r->nnz_estimated || r->delayed_frees)
        printf("notes                 %lld ops priced per element, %lld unpriced, %lld spike counts estimated, "
               "%lld frees delayed by the copy stream\n",
               (long long)r->estimated_ops, (long long)r->unpriced_ops, (long long)r->nnz_estimated,
               (long long)r->delayed_frees);
}

static void print_json(const remat_sim *s, const char *plan_path, const char *alloc) {
    const remat_sim_summary *r = remat_sim_results(s);
    const remat_model *m = remat_sim_model(s);
    printf("{\"model\":");
    remat_json_string(stdout, m->name);
    printf(",\"plan\":");
    remat_json_string(stdout, plan_path ? plan_path : "");
    printf(",\"allocator\":");
    remat_json_string(stdout, alloc);
    printf(",\"T\":%lld,\"N\":%lld,"
           "\"peak_bytes\":%lld,\"peak_live_bytes\":%lld,\"peak_reserved_bytes\":%lld,"
           "\"peak_allocated_bytes\":%lld,\"end_of_forward_bytes\":%lld,\"end_of_forward_reserved_bytes\":%lld,"
           "\"compressed_bytes\":%lld,\"step_time_s\":%.9g,\"baseline_step_time_s\":%.9g,\"events\":%lld,"
           "\"trace_events\":%lld,\"recomputed_layers\":%d,\"estimated_ops\":%lld,\"unpriced_ops\":%lld,"
           "\"nnz_estimated\":%lld,\"steps\":[",
           (long long)m->T, (long long)m->N, (long long)remat_sim_peak(s),
           (long long)r->peak_live_bytes, (long long)r->peak_reserved_bytes, (long long)r->peak_allocated_bytes,
           (long long)r->end_of_forward_bytes, (long long)r->end_of_forward_reserved, (long long)r->compressed_bytes,
           r->step_time_s, remat_sim_baseline_step_time(s), (long long)r->events, (long long)r->trace_events,
           r->recomputed_layers, (long long)r->estimated_ops, (long long)r->unpriced_ops,
           (long long)r->nnz_estimated);
    for (int i = 0; i < r->n_iters; i++)
        printf("%s{\"peak_live_bytes\":%lld,\"peak_reserved_bytes\":%lld,\"end_of_forward_bytes\":%lld,"
               "\"step_time_s\":%.9g,\"events\":%lld}",
               i ? "," : "", (long long)r->iters[i].peak_live_bytes, (long long)r->iters[i].peak_reserved_bytes,
               (long long)r->iters[i].end_of_forward_bytes, r->iters[i].step_time_s, (long long)r->iters[i].events);
    printf("]}\n");
}

/* An imported stream: the allocator check (tools/ext_report.h); what-ifs ';'-separated. */
static int simulate_ext(const char *path, const char *alloc_cfg, int json) {
    static char buf[4096];
    cli_list what_if = {0};
    if (alloc_cfg) {
        snprintf(buf, sizeof buf, "%s", alloc_cfg);
        for (char *p = buf; p && *p && what_if.n < CLI_LIST_MAX;) {
            char *semi = strchr(p, ';');
            if (semi) *semi = 0;
            if (*p) what_if.items[what_if.n++] = p;
            p = semi ? semi + 1 : NULL;
        }
    }
    remat_ext_trace t;
    remat_error err = {0};
    if (remat_ext_trace_read_h5(path, &t, &err) != REMAT_OK) return cli_fail("simulate", &err);
    int rc = remat_ext_report("simulate", &t, -1, &what_if, json, 0);
    remat_ext_trace_free(&t);
    return rc;
}

int remat_cmd_simulate(int argc, char **argv) {
    const char *trace_path = NULL, *plan_path = NULL, *alloc = "exact", *alloc_cfg = NULL, *out_path = NULL;
    int N = 0, T = 0, iters = 0, copy_stream = 0, json = 0, help = 0;
    const cli_option opts[] = {
        {"--trace", CLI_STRING, &trace_path, "baseline trace (remat run --trace, no plan)"},
        {"--plan", CLI_STRING, &plan_path, "plan file (JSON) or plan notation ('b1:bit/k4,b2'); none = no checkpointing"},
        {"--allocator", CLI_STRING, &alloc, "exact (live bytes, default) or caching (reserved bytes): the peak reported as peak_bytes"},
        {"--allocator-config", CLI_STRING, &alloc_cfg, "caching allocator settings (default: the trace's), e.g. max_split_size=64MiB"},
        {"--N", CLI_INT, &N, "predict for this batch size (default: as recorded)"},
        {"--T", CLI_INT, &T, "predict for this number of time steps (default: as recorded)"},
        {"--iters", CLI_INT, &iters, "training steps to simulate (default: as recorded)"},
        {"--copy-stream", CLI_FLAG, &copy_stream, "run compression on a copy stream that overlaps compute"},
        {"--out", CLI_STRING, &out_path, "write the predicted trace (HDF5, same schema as remat run --trace)"},
        {"--json", CLI_FLAG, &json, "print one JSON object instead of the summary"},
        {0},
    };
    int rc = cli_parse(argc, argv, USAGE, opts, &help);
    if (rc != 0 || help) return rc;
    if (!trace_path) return cli_missing("simulate", "--trace", "a baseline trace recorded by remat run --trace");
    const cli_file ins[] = {{"--trace", trace_path}, {"--plan", plan_path}};
    const cli_file outs[] = {{"--out", out_path}};
    if (cli_refuse_overlap("simulate", ins, 2, outs, 1)) return 2;
    if (cli_check_sim_size("simulate", N, T, REMAT_SIM_MAX_N, REMAT_SIM_MAX_T)) return 2;
    if (remat_ext_trace_is_ext_h5(trace_path)) {
        if (plan_path || N || T || iters || copy_stream || out_path) {
            fprintf(stderr, "remat simulate: %s: an imported allocation stream takes only --allocator caching, "
                            "--allocator-config and --json (no plan, rescaling or output trace)\n", trace_path);
            return 2;
        }
        return simulate_ext(trace_path, alloc_cfg, json);
    }
    remat_error err = {0};
    remat_sim_opts so;
    if (remat_sim_opts_from_flags(alloc, alloc_cfg, N, T, iters, &so, &err) != REMAT_OK) return cli_fail("simulate", &err);
    so.copy_stream = copy_stream;
    remat_trace trace;
    remat_sim *s = NULL;
    cli_progress("simulate: reading %s and checking it against the executor", trace_path);
    remat_status st = remat_sim_open(trace_path, &so, &trace, &s, &err);
    remat_plan p;
    int have_plan = 0;
    if (st == REMAT_OK && plan_path) {
        st = remat_plan_load_arg(plan_path, remat_sim_model(s), &p, &err);
        have_plan = st == REMAT_OK;
    }
    if (st == REMAT_OK) st = remat_sim_set_plan(s, have_plan ? &p : NULL, &err);
    if (st == REMAT_OK) {
        cli_progress("simulate: running the plan on the dry backend");
        st = remat_sim_run(s, &err);
    }
    cli_progress_done();
    if (st == REMAT_OK && out_path) st = remat_trace_write_h5(remat_sim_trace(s), out_path, &err);
    if (st == REMAT_OK) {
        if (json)
            print_json(s, plan_path, alloc);
        else
            print_human(s, trace_path, plan_path, alloc);
        if (!json && out_path)
            printf("predicted trace written to %s (%lld events)\n", out_path,
                   (long long)remat_sim_trace(s)->n_events);
    }
    if (have_plan) remat_plan_free(&p);
    remat_sim_free(s);
    remat_trace_free(&trace);
    return st == REMAT_OK ? 0 : cli_fail("simulate", &err);
}
