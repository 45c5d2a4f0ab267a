/* cmd_simulate.c - `remat simulate`: predicted peaks and step time of a plan from a
 * baseline trace, without running the model (sim/sim.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io/ext_record.h"
#include "core/io/ext_trace.h"
#include "core/io/trace.h"
#include "core/model/plan_notation.h"
#include "sim/search.h"
#include "sim/sim.h"
#include "sim/torch_sim.h"
#include "core/io/json_write.h"
#include "sim/ddp.h"
#include "core/base/size.h"
#include "plots/scaling.h"
#include "sim/sweep.h"
#include "tools/answer.h"
#include "tools/rates.h"
#include "tools/cli.h"
#include "tools/paths.h"
#include "tools/commands.h"
#include "tools/ext_report.h"
#include "tools/sweep_scaling.h"
#include "tools/record_args.h"

static const char *USAGE =
    "usage: remat simulate --trace BASE.h5 [--plan P.json] [--allocator exact|caching]\n"
    "       remat simulate --trace STEP.h5 [--plan P] [--N n --second-trace STEP2.h5] [--executor E] [--json]\n"
    "                      [--allocator caching [--allocator-config K=V,...]]   (a recorded PyTorch step)\n"
    "                      [--allocator-config K=V,...] [--N n] [--T t] [--iters n] [--copy-stream]\n"
    "                      [--out PRED.h5] [--ranks R [--reduce-blocks B]] [--json]\n"
    "       remat simulate --trace BASE.h5 --sweep T=v1,v2,...|N=v1,... [--plan P] [--figure FIG.png]\n"
    "                      [--ranks R [--reduce-blocks B]]      (each rank at every size, docs/mpi.md)\n"
    "                      [--budget SIZE] [--budget-on reserved|live] [--device-overhead SIZE] [--json]\n"
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
    "(each ';'-separated setting list replayed from a fresh start).\n"
    "--sweep T=16,32,64 (or N=...) predicts the peak at each size, the baseline and --plan,\n"
    "prints the table and writes the scaling file and figure (--figure, default sweep-T.png),\n"
    "with --budget drawn as a line (compared, as in search, with peak reserved bytes plus the\n"
    "device overhead; --budget-on live for live bytes). Predictions describe remat's own\n"
    "executor (reference or CUDA backend), not a PyTorch script of the same network.\n"
    "\n"
    "With a PyTorch step recorded by `python3 -m remat_torch record` (or remat_torch.record),\n"
    "predicts the peak live bytes of that PyTorch step under --plan as remat_torch.apply_plan\n"
    "runs it (docs/pytorch-record.md); the answer names the execution it describes\n"
    "(\"PyTorch 1.13 on CPU, recorded\"). --N n --second-trace B.h5 (the same step recorded at\n"
    "another batch size) predicts it at batch size n, only where every allocation is the same\n"
    "in both recordings or proportional to N (else refused, naming the first that is not).\n"
    "--allocator caching [--allocator-config K=V,...] also replays the predicted step's requests\n"
    "through the caching allocator model, from a fresh cache at the step's start, and reports\n"
    "its peak reserved bytes (--json: peak_reserved_bytes, peak_bytes, ...): on a CPU recording,\n"
    "what PyTorch's CUDA caching allocator would reserve for the same requests, without the\n"
    "cuDNN/cuBLAS workspaces a CPU recording cannot see. Without --plan no model file is needed.";

/* Where the trace was recorded: "ref backend, 2 threads, simd avx2" (the simd part
 * when the trace records it), "cuda backend". */
static void print_recorded_on(const remat_trace *t) {
    printf("recorded on           %s backend", t->backend);
    if (!strcmp(t->backend, "ref")) printf(", %d thread%s", (int)t->threads, t->threads == 1 ? "" : "s");
    if (t->simd[0]) printf(", simd %s", t->simd);
    printf("\n");
}

/* --ddp: what PyTorch DDP adds to each rank (sim/ddp.h); NULL without it. */
static const remat_ddp_bytes *g_ddp;
static remat_ddp_opts g_ddp_opts;

static void print_human(const remat_sim *s, const char *trace_path, const remat_trace *trace, const char *plan_path,
                        const char *alloc) {
    const char *backend = trace->backend;
    const remat_sim_summary *r = remat_sim_results(s);
    const remat_model *m = remat_sim_model(s);
    char b1[64], b2[64], b3[64], b4[64];
    double base = remat_sim_baseline_step_time(s);
    char label[1024];
    remat_plan_notation(remat_sim_plan(s), m, label, sizeof label);
    const remat_shard *sh = remat_sim_shard(s);
    printf("predicted: model %s (T=%lld, N=%lld), plan %s", m->name, (long long)m->T,
           (long long)(sh ? sh->n_total : m->N), label);
    if (plan_path && strcmp(plan_path, label) != 0) printf(" (%s)", plan_path);
    printf(", %d step%s, from %s\n", r->n_iters, r->n_iters == 1 ? "" : "s", trace_path);
    remat_cli_steady_note(stdout, r->n_iters, (int)trace->n_iters);
    remat_cli_prediction_note(stdout, backend);
    print_recorded_on(trace);
    remat_print_rates(stdout, "simulate", trace, remat_sim_base_model(s)); /* the recorded step's */
    if (sh && !g_ddp)
        printf("per rank              %d ranks of %lld samples, %d reduction blocks (mpirun -np %d remat run "
               "--reduce-blocks %d): every figure below is each rank's, its reduction buffers included; the step "
               "time leaves out the exchange (docs/mpi.md)\n",
               sh->ranks, (long long)m->N, sh->blocks, sh->ranks, sh->blocks);
    if (sh && g_ddp) {
        char d1[64], d2[64], d3[64];
        printf("per rank              %d ranks of %lld samples under PyTorch DDP: the figures below are remat's "
               "step on the rank's share; DDP adds (docs/mpi.md):\n",
               sh->ranks, (long long)m->N);
        printf("  gradient buckets    %d (first capped at %lld B, then %lld B): %s%s\n", g_ddp->n_buckets,
               (long long)g_ddp_opts.first_bucket_bytes, (long long)g_ddp_opts.bucket_cap_bytes,
               remat_cli_fmt_bytes(g_ddp->bucket_bytes, d1, sizeof d1),
               g_ddp_opts.bucket_view ? " (gradient_as_bucket_view: the gradients themselves, nothing added)"
                                      : " more live (a second copy of the gradients)");
        printf("  their segments      %s more reserved (caching allocator model)\n",
               remat_cli_fmt_bytes(g_ddp->extra_reserved, d2, sizeof d2));
        printf("  NCCL (estimate)     %s outside the allocator (%d channels x 2 x NCCL_BUFFSIZE 4 MiB)\n",
               remat_cli_fmt_bytes(g_ddp->nccl_bytes, d3, sizeof d3), g_ddp_opts.nccl_channels);
        printf("peak live + DDP       %s\n",
               remat_cli_fmt_bytes(r->peak_live_bytes + g_ddp->extra_live, d1, sizeof d1));
        printf("peak reserved + DDP   %s\n",
               remat_cli_fmt_bytes(r->peak_reserved_bytes + g_ddp->extra_reserved, d2, sizeof d2));
    }
    printf("peak live bytes       %s\n", remat_cli_fmt_bytes(r->peak_live_bytes, b1, sizeof b1));
    printf("peak reserved bytes   %s  (caching allocator model)\n",
           remat_cli_fmt_bytes(r->peak_reserved_bytes, b2, sizeof b2));
    printf("end of forward        %s  (of which compressed inputs %s)\n",
           remat_cli_fmt_bytes(r->end_of_forward_bytes, b3, sizeof b3),
           remat_cli_fmt_bytes(r->compressed_bytes, b4, sizeof b4));
    printf("step time             %.6f s", r->step_time_s);
    const remat_model *bm = remat_sim_base_model(s);
    if (base > 0 && bm->T == m->T && bm->N == m->N)
        printf("  (baseline measured %.6f s, %+.1f %%)", base, 100.0 * (r->step_time_s / base - 1.0));
    printf("\n");
    remat_cli_step_trust_note(stdout, remat_cli_step_trust_kind_sim(s, !remat_plan_is_empty(remat_sim_plan(s))));
    printf("recomputed layers     %d per step\n", r->recomputed_layers);
    printf("events                %lld per step\n",
           (long long)(r->n_iters > 0 ? r->iters[r->n_iters - 1].events : 0));
    printf("allocator             %s (peak %s)\n", alloc, remat_cli_fmt_bytes(remat_sim_peak(s), b1, sizeof b1));
    if (r->estimated_ops || r->unpriced_ops || r->nnz_estimated || r->delayed_frees)
        printf("notes                 %lld ops priced per element, %lld unpriced, %lld spike counts estimated, "
               "%lld frees delayed by the copy stream\n",
               (long long)r->estimated_ops, (long long)r->unpriced_ops, (long long)r->nnz_estimated,
               (long long)r->delayed_frees);
    if (r->recorded_by_earlier[0]) printf("baseline              %s\n", r->recorded_by_earlier);
}

static void print_json(const remat_sim *s, const remat_trace *trace, const char *plan_path, const char *alloc) {
    const remat_sim_summary *r = remat_sim_results(s);
    const remat_model *m = remat_sim_model(s);
    printf("{\"execution\":");
    remat_json_string(stdout, remat_trace_execution(trace->backend));
    printf(",\"model\":");
    remat_json_string(stdout, m->name);
    printf(",\"plan\":");
    remat_json_string(stdout, plan_path ? plan_path : "");
    printf(",\"allocator\":");
    remat_json_string(stdout, alloc);
    printf(",\"T\":%lld,\"N\":%lld,"
           "\"peak_bytes\":%lld,\"peak_live_bytes\":%lld,\"peak_reserved_bytes\":%lld,"
           "\"peak_allocated_bytes\":%lld,\"end_of_forward_bytes\":%lld,\"end_of_forward_reserved_bytes\":%lld,"
           "\"compressed_bytes\":%lld,\"step_time_s\":%.9g,\"events\":%lld,"
           "\"trace_events\":%lld,\"recomputed_layers\":%d,\"estimated_ops\":%lld,\"unpriced_ops\":%lld,"
           "\"nnz_estimated\":%lld",
           (long long)m->T, (long long)(remat_sim_shard(s) ? remat_sim_shard(s)->n_total : m->N),
           (long long)remat_sim_peak(s), (long long)r->peak_live_bytes, (long long)r->peak_reserved_bytes, (long long)r->peak_allocated_bytes,
           (long long)r->end_of_forward_bytes, (long long)r->end_of_forward_reserved, (long long)r->compressed_bytes,
           r->step_time_s, (long long)r->events, (long long)r->trace_events,
           r->recomputed_layers, (long long)r->estimated_ops, (long long)r->unpriced_ops,
           (long long)r->nnz_estimated);
    remat_cli_steady_json(stdout, r->n_iters, (int)trace->n_iters);
    remat_cli_step_trust_json(stdout, remat_cli_step_trust_kind_sim(s, !remat_plan_is_empty(remat_sim_plan(s))));
    if (r->recorded_by_earlier[0]) {
        printf(",\"recorded_by_earlier\":");
        remat_json_string(stdout, r->recorded_by_earlier);
    }
    printf(",\"steps\":[");
    for (int i = 0; i < r->n_iters; i++)
        printf("%s{\"peak_live_bytes\":%lld,\"peak_reserved_bytes\":%lld,\"end_of_forward_bytes\":%lld,"
               "\"step_time_s\":%.9g,\"events\":%lld}",
               i ? "," : "", (long long)r->iters[i].peak_live_bytes, (long long)r->iters[i].peak_reserved_bytes,
               (long long)r->iters[i].end_of_forward_bytes, r->iters[i].step_time_s, (long long)r->iters[i].events);
    printf("]");
    /* the measured baseline is of the recorded size: say so, and call it a baseline
     * only when the prediction is of that size too */
    const remat_model *bm = remat_sim_base_model(s);
    printf(",\"recorded\":{\"T\":%lld,\"N\":%lld,\"step_time_s\":%.9g,\"backend\":", (long long)bm->T,
           (long long)bm->N, remat_sim_baseline_step_time(s));
    remat_json_string(stdout, trace->backend);
    printf(",\"threads\":%d", (int)trace->threads);
    if (trace->simd[0]) { /* optional: traces recorded on the reference backend since it exists */
        printf(",\"simd\":");
        remat_json_string(stdout, trace->simd);
    }
    printf("}");
    if (bm->T == m->T && bm->N == m->N) printf(",\"baseline_step_time_s\":%.9g", remat_sim_baseline_step_time(s));
    const remat_shard *sh = remat_sim_shard(s);
    int64_t add_live = g_ddp ? g_ddp->extra_live : 0, add_res = g_ddp ? g_ddp->extra_reserved : 0;
    if (sh) { /* every rank holds the same tensors: one prediction for each */
        if (g_ddp)
            printf(",\"ddp\":{\"buckets\":%d,\"bucket_bytes\":%lld,\"largest_bucket_bytes\":%lld,"
                   "\"bucket_cap_bytes\":%lld,\"first_bucket_bytes\":%lld,\"gradient_as_bucket_view\":%s,"
                   "\"extra_live_bytes\":%lld,\"extra_reserved_bytes\":%lld,\"nccl_estimate_bytes\":%lld,"
                   "\"nccl_channels\":%d}",
                   g_ddp->n_buckets, (long long)g_ddp->bucket_bytes, (long long)g_ddp->largest_bucket,
                   (long long)g_ddp_opts.bucket_cap_bytes, (long long)g_ddp_opts.first_bucket_bytes,
                   g_ddp_opts.bucket_view ? "true" : "false", (long long)add_live, (long long)add_res,
                   (long long)g_ddp->nccl_bytes, g_ddp_opts.nccl_channels);
        else
            printf(",\"reduce_blocks\":%d", sh->blocks);
        printf(",\"ranks\":[");
        for (int q = 0; q < sh->ranks; q++)
            printf("%s{\"rank\":%d,\"N\":%lld,\"peak_live_bytes\":%lld,\"peak_reserved_bytes\":%lld}", q ? "," : "", q,
                   (long long)m->N, (long long)(r->peak_live_bytes + add_live),
                   (long long)(r->peak_reserved_bytes + add_res));
        printf("]");
    }
    printf("}\n");
}

/* --rates: "0.1" (every spike layer and the input) or "sn1=0.1,input=0.2". */
static remat_status set_rates(remat_sim *s, const char *text, remat_error *err) {
    const remat_model *m = remat_sim_base_model(s);
    int n = m->n_layers + 1;
    double *r = remat_xmalloc((size_t)n * sizeof *r, err);
    if (!r) return REMAT_ERR_NOMEM;
    for (int i = 0; i < n; i++) r[i] = -1.0;
    remat_status st = REMAT_OK;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", text);
    if (!strchr(buf, '=')) {
        char *end;
        double v = strtod(buf, &end);
        if (end == buf || *end || !(v >= 0 && v <= 1))
            st = remat_error_set(err, REMAT_ERR_INPUT, "--rates: '%s': expected a rate in [0, 1] or layer=rate,...", text);
        for (int i = 0; i < n; i++) r[i] = v;
    }
    for (char *item = strchr(buf, '=') ? strtok(buf, ",") : NULL; item && st == REMAT_OK; item = strtok(NULL, ",")) {
        char *eq = strchr(item, '=');
        if (!eq) {
            st = remat_error_set(err, REMAT_ERR_INPUT, "--rates: '%s': expected layer=rate", item);
            break;
        }
        *eq = 0;
        int at = -1;
        if (!strcmp(item, "input")) at = 0;
        for (int i = 0; i < m->n_layers && at < 0; i++)
            if (!strcmp(m->layers[i].name, item)) at = i + 1;
        char *end;
        double v = strtod(eq + 1, &end);
        if (at < 0)
            st = remat_error_set(err, REMAT_ERR_INPUT, "--rates: %s: expected a layer of model %s or input", item, m->name);
        else if (end == eq + 1 || *end || !(v >= 0 && v <= 1))
            st = remat_error_set(err, REMAT_ERR_INPUT, "--rates: %s: expected a rate in [0, 1], got '%s'", item, eq + 1);
        else
            r[at] = v;
    }
    if (st == REMAT_OK) st = remat_sim_set_rates(s, r, n, err);
    remat_xfree(r);
    return st;
}

/* ---- --sweep: peak against T or N in one command --------------------------------- */

#define SWEEP_MAX 32

/* "T=16,32,64" -> dim 'T' and the values (ascending, distinct, positive). 0 or 2. */
static int parse_sweep(const char *text, char *dim, int64_t *v, int *n) {
    *n = 0;
    if (!text || (text[0] != 'T' && text[0] != 'N') || text[1] != '=') goto bad;
    *dim = text[0];
    for (const char *p = text + 2; *p;) {
        if (*p < '1' || *p > '9' || *n >= SWEEP_MAX) goto bad;
        int64_t x = 0;
        while (*p >= '0' && *p <= '9') {
            if (x > 100000000) goto bad;
            x = x * 10 + (*p++ - '0');
        }
        if (*n && x <= v[*n - 1]) goto bad;
        v[(*n)++] = x;
        if (*p == ',') {
            p++;
            if (!*p) goto bad;
        } else if (*p) {
            goto bad;
        }
    }
    if (*n) return 0;
bad:
    fprintf(stderr, "remat simulate: --sweep: '%s': expected T=v1,v2,... or N=v1,v2,... (ascending positive integers, "
                    "at most %d)\n",
            text ? text : "", SWEEP_MAX);
    return 2;
}

/* The sweep's plan at each value: the --plan file on the rescaled model; its notation
 * kept for the table and the figure. */
typedef struct sweep_plan {
    const char *path;
    char label[1024];
} sweep_plan;

static remat_status load_plan(void *ctx, const remat_model *m, remat_plan *out, remat_error *err) {
    sweep_plan *sp = ctx;
    remat_status st = remat_plan_load_arg(sp->path, m, out, err);
    if (st == REMAT_OK) remat_plan_notation(out, m, sp->label, sizeof sp->label);
    return st;
}

static void sweep_progress(void *ctx, char dim, int64_t v, int i, int n) {
    (void)ctx;
    remat_cli_progress("simulate --sweep: %c=%lld (%d of %d)", dim, (long long)v, i + 1, n);
}

/* A finished sweep, for its figure and its answer. */
typedef struct sweep_out {
    const remat_trace *trace;
    const char *trace_path, *plan_path, *plan_label, *fig;
    const remat_sim_opts *base_so;
    const cli_budget_flags *bf;
    remat_budget bud;
    cli_overhead_source src;
    int64_t alloc_budget, fixed;
    char dim;
    int nv, data_only, gnuplot_failed, trust;
    const remat_sweep_row *rows;
    const remat_sweep_opts *o;
    char json_path[4096];
    remat_figure_files files;
} sweep_out;

/* The scaling file (FIG.json) and its figure; REMAT_ERR_CHECK when gnuplot failed (the
 * data and script written). */
static remat_status sweep_figure(sweep_out *w, remat_error *err) {
    const int on_live = w->bud.on == REMAT_BUDGET_ON_LIVE;
    remat_scaling sc;
    remat_status st = remat_tools_sweep_scaling(w->o, w->rows, w->fixed, on_live, w->plan_path != NULL, &sc, err);
    snprintf(sc.y_name, sizeof sc.y_name, "%s", on_live ? "peak live memory" : "peak reserved memory");
    sc.budget_bytes = w->bf->budget >= 0 && w->alloc_budget != REMAT_SIZE_INF ? w->alloc_budget : 0;
    snprintf(sc.series[0].name, sizeof sc.series[0].name, "baseline (no checkpointing)");
    sc.series[0].fit = REMAT_FIT_LINEAR;
    if (w->plan_path) {
        snprintf(sc.series[1].name, sizeof sc.series[1].name, "%.120s", w->plan_label);
        if (st == REMAT_OK) sc.series[1].fit = remat_scaling_best_fit(&sc.series[1]);
    }
    snprintf(w->json_path, sizeof w->json_path, "%s", w->fig);
    char *dot = strrchr(w->json_path, '.');
    if (dot && strchr(dot, '/') == NULL) *dot = '\0';
    strncat(w->json_path, ".json", sizeof w->json_path - strlen(w->json_path) - 1);
    memset(&w->files, 0, sizeof w->files);
    if (st == REMAT_OK) st = remat_scaling_write(w->json_path, &sc, err);
    if (st == REMAT_OK) {
        remat_figure_opts fo = remat_figure_opts_default();
        fo.out = w->fig;
        fo.data_only = w->data_only;
        st = remat_plot_scaling(&sc, w->json_path, &fo, &w->files, err);
    }
    remat_scaling_free(&sc);
    return st;
}

/* The rows' step times: the trust of the kind of the farthest row from the recording. */
static int sweep_trust(const sweep_out *w) {
    const remat_trace *trace = w->trace;
    int64_t fT = trace->T, fN = trace->N, *x = w->dim == 'T' ? &fT : &fN;
    const int64_t rec = *x;
    for (int i = 0; i < w->nv; i++)
        if (w->rows[i].v != rec && (*x == rec || w->rows[i].v > *x)) *x = w->rows[i].v;
    return remat_cli_step_trust_kind(trace->T, trace->N, fT, fN, w->plan_path != NULL, remat_trace_has_probe(trace));
}

/* --sweep --json: one object. */
static void sweep_print_json(const sweep_out *w) {
    const remat_trace *trace = w->trace;
    const remat_sweep_row *rows = w->rows;
    const char dim = w->dim;
    printf("{\"execution\":");
    remat_json_string(stdout, remat_trace_execution(trace->backend));
    printf(",\"sweep\":\"%c\",\"fixed\":{\"%c\":%lld}", dim, dim == 'T' ? 'N' : 'T', (long long)w->fixed);
    if (rows[0].ranks) /* the figures are each rank's */
        printf(",\"ranks\":%d,\"reduce_blocks\":%d", rows[0].ranks, rows[0].reduce_blocks);
    remat_cli_steady_json(stdout, remat_cli_simulated_steps(w->base_so, (int)trace->n_iters), (int)trace->n_iters);
    remat_cli_step_trust_json(stdout, w->trust);
    remat_cli_budget_json(stdout, 1, &w->bud, w->src);
    printf(",\"plan\":");
    remat_json_string(stdout, w->plan_path ? w->plan_label : "");
    printf(",\"scaling\":");
    remat_json_string(stdout, w->json_path);
    printf(",\"figure\":");
    remat_json_string(stdout, w->gnuplot_failed || w->data_only ? "" : w->files.image);
    printf(",\"rows\":[");
    for (int i = 0; i < w->nv; i++) {
        printf("%s{\"%c\":%lld,", i ? "," : "", dim, (long long)rows[i].v);
        if (rows[i].ranks) printf("\"rank_N\":%lld,", (long long)rows[i].rank_N);
        printf("\"baseline\":{\"peak_live_bytes\":%lld,\"peak_reserved_bytes\":%lld,\"step_time_s\":%.9g}",
               (long long)rows[i].base.peak_live, (long long)rows[i].base.peak_reserved, rows[i].base.time_s);
        if (w->plan_path)
            printf(",\"plan\":{\"peak_live_bytes\":%lld,\"peak_reserved_bytes\":%lld,\"step_time_s\":%.9g}",
                   (long long)rows[i].plan.peak_live, (long long)rows[i].plan.peak_reserved, rows[i].plan.time_s);
        printf("}");
    }
    printf("]}\n");
}

/* --sweep: the notes, one table per series, what was written. */
static void sweep_print_human(const sweep_out *w) {
    const remat_trace *trace = w->trace;
    const remat_sweep_row *rows = w->rows;
    const char dim = w->dim;
    const cli_budget_flags *bf = w->bf;
    char b1[64], b2[64];
    printf("predicted peak against %c at %c=%lld, from %s\n", dim, dim == 'T' ? 'N' : 'T', (long long)w->fixed,
           w->trace_path);
    if (rows[0].ranks)
        printf("per rank              %d ranks, %d reduction blocks (mpirun -np %d remat run --reduce-blocks %d): "
               "every figure below is each rank's (its share of N, its reduction buffers included)\n",
               rows[0].ranks, rows[0].reduce_blocks, rows[0].ranks, rows[0].reduce_blocks);
    if (bf->budget >= 0) remat_cli_budget_print(stdout, &w->bud, w->src);
    remat_cli_steady_note(stdout, remat_cli_simulated_steps(w->base_so, (int)trace->n_iters), (int)trace->n_iters);
    remat_cli_prediction_note(stdout, trace->backend);
    remat_cli_step_trust_note(stdout, w->trust);
    for (int q = 0; q < (w->plan_path ? 2 : 1); q++) {
        printf("%s:\n  %8c %22s %22s %12s%s\n", q ? w->plan_label : "baseline (no checkpointing)", dim, "peak live",
               "peak reserved", "step time", bf->budget >= 0 ? "  fits" : "");
        for (int i = 0; i < w->nv; i++) {
            const remat_search_figures *f = q ? &rows[i].plan : &rows[i].base;
            remat_fmt_bytes_short(f->peak_live, b1, sizeof b1);
            remat_fmt_bytes_short(f->peak_reserved, b2, sizeof b2);
            int64_t need = remat_budget_needed(&w->bud, f->peak_live, f->peak_reserved);
            printf("  %8lld %22s %22s %10.4f s%s\n", (long long)rows[i].v, b1, b2, f->time_s,
                   bf->budget < 0 ? "" : need <= w->bud.total ? "  yes" : "  no");
        }
    }
    if (w->data_only || w->gnuplot_failed)
        printf("wrote %s, %s and %s (run `gnuplot` on the script to draw %s)\n", w->json_path, w->files.data,
               w->files.script, w->fig);
    else
        printf("wrote %s (data %s, script %s, numbers %s)\n", w->files.image, w->files.data, w->files.script,
               w->json_path);
}

/* The sweep: for each value, the baseline (no checkpointing) and, with a plan, the
 * plan, rescaled from the trace; the table on stdout (or --json), the scaling file
 * and its figure (plots/scaling.h) at fig_path, the budget drawn as a line. */
static int run_sweep(const remat_trace *trace, const char *trace_path, const remat_sim_opts *base_so, char dim,
                     const int64_t *vals, int nv, const char *plan_path, const cli_budget_flags *bf, const char *fig,
                     int data_only, int json) {
    remat_error err = {0};
    sweep_out w = {.trace = trace, .trace_path = trace_path, .plan_path = plan_path, .fig = fig, .base_so = base_so,
                   .bf = bf, .dim = dim, .nv = nv, .data_only = data_only};
    remat_alloc_kind kind;
    int rc = remat_cli_budget_from_flags("simulate", bf, bf->budget >= 0, &w.bud, &kind, &w.src);
    if (rc) return rc;
    remat_cli_budget_use_trace(&w.bud, &w.src, trace->device_total_bytes, trace->device_free_at_init);
    if (bf->budget >= 0 && (rc = remat_cli_budget_allocator_bytes("simulate", &w.bud, &w.alloc_budget)) != 0) return rc;
    remat_sweep_row rows[SWEEP_MAX];
    sweep_plan sp = {plan_path, ""};
    remat_sweep_opts o = {dim, vals, nv, plan_path ? load_plan : NULL, &sp, sweep_progress, NULL};
    remat_sim_opts so = *base_so;
    so.allocator = kind;
    so.check_baseline = 1;
    remat_status st = remat_sim_sweep(trace, &so, &o, rows, &w.fixed, &err); /* fixed: the other dimension */
    remat_cli_progress_done();
    if (st != REMAT_OK) return remat_cli_fail("simulate", &err);
    w.rows = rows;
    w.o = &o;
    w.plan_label = sp.label;
    st = sweep_figure(&w, &err);
    if (st != REMAT_OK && st != REMAT_ERR_CHECK) return remat_cli_fail("simulate", &err);
    w.gnuplot_failed = st == REMAT_ERR_CHECK;
    w.trust = sweep_trust(&w);
    if (json) sweep_print_json(&w);
    else sweep_print_human(&w);
    if (w.gnuplot_failed) return remat_cli_fail("simulate", &err);
    return 0;
}

/* The phase and module of recorded event i ("" / "-" when none). */
static const char *peak_phase(const remat_ext_trace *t, int64_t i) {
    if (i < 0 || i >= t->record->n_events) return "";
    return remat_rec_phase_name(t->record->events[i].phase);
}
static const char *peak_module(const remat_ext_trace *t, int64_t i) {
    if (i < 0 || i >= t->record->n_events || t->record->events[i].module < 0) return "-";
    return remat_ext_label(t, t->record->modules[t->record->events[i].module].label);
}

/* Where the peak is, in words: "backward, module layer1.0.conv1" or "recomputing layer1.0". */
static void peak_where(const remat_ext_trace *t, const remat_model *m, const remat_torch_pred *r, char *buf,
                       size_t len) {
    if (r->peak_unit_layer >= 0)
        snprintf(buf, len, "recomputing from layer %s", m->layers[r->peak_unit_layer].name);
    else
        snprintf(buf, len, "%s, module %s", peak_phase(t, r->peak_event), peak_module(t, r->peak_event));
}

/* What the reserved bytes of a recorded step describe (--allocator caching). */
static const char *record_reserved_describes(const remat_ext_record *rec) {
    return strcmp(rec->device, "cpu")
               ? "caching allocator model: the predicted requests replayed from a fresh cache at the step's start"
               : "caching allocator model: what PyTorch's CUDA caching allocator would reserve for the same requests, "
                 "from a fresh cache at the step's start; recorded on the CPU, so no cuDNN or cuBLAS workspaces";
}

/* --allocator caching on a recorded step: the fields remat's own traces have, then the replay's. */
static void print_record_reserved_json(const remat_ext_record *rec, const remat_torch_reserved *res) {
    printf(",\"allocator\":\"caching\",\"peak_bytes\":%lld,\"peak_reserved_bytes\":%lld,"
           "\"peak_allocated_bytes\":%lld,\"end_of_forward_reserved_bytes\":%lld,\"reserved_at_start_bytes\":%lld,"
           "\"segments\":%lld,\"allocator_config\":",
           (long long)res->peak_reserved_bytes, (long long)res->peak_reserved_bytes,
           (long long)res->peak_allocated_bytes, (long long)res->end_of_forward_reserved,
           (long long)res->reserved_at_start, (long long)res->segments);
    remat_json_string(stdout, res->config);
    printf(",\"reserved_describes\":");
    remat_json_string(stdout, record_reserved_describes(rec));
}

static void print_record_reserved(const remat_torch_reserved *res, const remat_ext_record *rec) {
    char b1[64], b2[64];
    printf("peak reserved bytes   %s  (%s)\n", remat_cli_fmt_bytes(res->peak_reserved_bytes, b1, sizeof b1),
           record_reserved_describes(rec));
    printf("  reserved at start   %s  (the storages live when the step starts, allocated anew; those older than "
           "the recording that it never frees as one block)\n",
           remat_cli_fmt_bytes(res->reserved_at_start, b2, sizeof b2));
    printf("  end of forward      %s reserved; %lld segment%s at the end; peak allocated %s (requests rounded)\n",
           remat_cli_fmt_bytes(res->end_of_forward_reserved, b1, sizeof b1), (long long)res->segments,
           res->segments == 1 ? "" : "s", remat_cli_fmt_bytes(res->peak_allocated_bytes, b2, sizeof b2));
    printf("  allocator config    %s\n", res->config);
}

/* A recorded PyTorch step (remat_torch.record): its peak under a plan (sim/torch_sim.h). */
static int simulate_record(const char *path, remat_ext_trace *t, const char *plan_path, remat_torch_exec how,
                           const remat_caching_config *cc, int json) {
    remat_error err = {0};
    remat_model m;
    remat_plan p;
    int have_plan = 0, have_model = t->record->model && t->record->model[0];
    remat_torch_pred r;
    remat_torch_reserved res;
    remat_status st = REMAT_OK;
    if (have_model || plan_path) { /* without a plan the step is the recording's own: no model file needed */
        st = remat_torch_sim_model(t, path, &m, &err);
        if (st != REMAT_OK) return remat_cli_fail("simulate", &err);
        have_model = 1;
    } else {
        memset(&m, 0, sizeof m);
        snprintf(m.name, sizeof m.name, "(recorded without a model file)");
        m.T = t->record->T, m.N = t->record->N;
    }
    if (plan_path) {
        st = remat_plan_load_arg(plan_path, &m, &p, &err);
        have_plan = st == REMAT_OK;
    }
    if (st == REMAT_OK && cc)
        st = remat_torch_sim_run_caching(t, &m, have_plan ? &p : NULL, how, cc, path, &r, &res, &err);
    else if (st == REMAT_OK)
        st = remat_torch_sim_run(t, &m, have_plan ? &p : NULL, how, path, &r, &err);
    char label[1024] = "none";
    if (st == REMAT_OK && have_plan) remat_plan_notation(&p, &m, label, sizeof label);
    const remat_ext_record *rec = t->record;
    if (st == REMAT_OK && json) {
        printf("{\"execution\":");
        remat_json_string(stdout, rec->execution);
        printf(",\"describes\":");
        char what[256];
        snprintf(what, sizeof what, "the recorded PyTorch step under the plan, as %s runs it",
                 remat_torch_exec_label(how));
        remat_json_string(stdout, what);
        printf(",\"executor\":");
        remat_json_string(stdout, remat_torch_exec_name(how));
        printf(",\"model\":");
        remat_json_string(stdout, m.name);
        printf(",\"plan\":");
        remat_json_string(stdout, have_plan ? label : "");
        if (cc) print_record_reserved_json(rec, &res);
        printf(",\"T\":%lld,\"N\":%lld,\"step\":%d,\"peak_live_bytes\":%lld,%s"
               "\"end_of_forward_bytes\":%lld,\"step_time_s\":null,\"events\":%lld,"
               "\"recorded_peak_live_bytes\":%lld,\"live_at_start_bytes\":%lld,\"compressed_bytes\":%lld,"
               "\"replayed_allocations\":%lld,\"units\":%d,\"peak_event\":%lld,\"peak_phase\":\"%s\",\"peak_module\":",
               (long long)m.T, (long long)m.N, r.step, (long long)r.peak_live_bytes,
               cc ? "" : "\"peak_reserved_bytes\":null,", (long long)r.end_of_forward_bytes,
               (long long)r.events, (long long)r.recorded_peak_live_bytes, (long long)r.live_at_start,
               (long long)r.compressed_bytes, (long long)r.replayed_allocations, r.units, (long long)r.peak_event,
               peak_phase(t, r.peak_event));
        remat_json_string(stdout, peak_module(t, r.peak_event));
        printf(",\"peak_in_recomputation_of\":");
        if (r.peak_unit_layer >= 0) remat_json_string(stdout, m.layers[r.peak_unit_layer].name);
        else printf("null");
        printf("}\n");
    } else if (st == REMAT_OK) {
        char b1[64];
        printf("predicted: model %s (T=%lld, N=%lld), plan %s, recorded step %d, from %s\n", m.name, (long long)m.T,
               (long long)m.N, label, r.step, path);
        printf("execution             %s; the plan as %s runs it\n", rec->execution, remat_torch_exec_label(how));
        char where[256];
        peak_where(t, &m, &r, where, sizeof where);
        printf("peak live bytes       %s  (%s)\n", remat_cli_fmt_bytes(r.peak_live_bytes, b1, sizeof b1), where);
        printf("recorded plain peak   %s\n", remat_cli_fmt_bytes(r.recorded_peak_live_bytes, b1, sizeof b1));
        printf("end of forward        %s  (of which compressed inputs %s)\n",
               remat_cli_fmt_bytes(r.end_of_forward_bytes, b1, sizeof b1),
               remat_cli_fmt_bytes(r.compressed_bytes, b1 + 32, 32));
        printf("recomputed            %lld allocations replayed in %d unit%s\n", (long long)r.replayed_allocations,
               r.units, r.units == 1 ? "" : "s");
        if (cc) print_record_reserved(&res, rec);
        else printf("peak reserved bytes   not predicted (a CPU recording has no caching allocator; "
                    "--allocator caching replays the step through the caching allocator model)\n");
        printf("step time             not predicted (the recording times allocations, not kernels)\n");
        if (have_plan)
            remat_cli_next(stdout, "python3 -m remat_torch record ... --plan '%s'   (measure it)", plan_path);
    }
    if (have_plan) remat_plan_free(&p);
    if (have_model) remat_model_free(&m);
    return st == REMAT_OK ? 0 : remat_cli_fail("simulate", &err);
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
    if (remat_ext_trace_read_h5(path, &t, &err) != REMAT_OK) return remat_cli_fail("simulate", &err);
    int rc = remat_ext_report("simulate", path, &t, -1, &what_if, json, 0, NULL, NULL);
    remat_ext_trace_free(&t);
    return rc;
}

/* The command's flags. */
typedef struct simulate_cmd {
    const char *trace_path, *plan_path, *alloc, *alloc_cfg, *out_path, *sweep, *figure, *executor, *rates, *second;
    cli_budget_flags bf;
    int N, T, iters, copy_stream, json, data_only, ranks, blocks;
    int ddp, ddp_view, ddp_bucket_mb, ddp_channels;
} simulate_cmd;

/* --ranks, --reduce-blocks and the --ddp flags: 0, or 2 with one line on stderr. */
static int check_world_flags(const simulate_cmd *c) {
    if (c->ranks < 0 || c->ranks > 4096 || c->blocks < 0) {
        fprintf(stderr, "remat simulate: --%s: %d is out of range (expected 1..4096)\n",
                c->ranks < 0 || c->ranks > 4096 ? "ranks" : "reduce-blocks",
                c->ranks < 0 || c->ranks > 4096 ? c->ranks : c->blocks);
        return 2;
    }
    if ((c->ddp || c->ddp_view) && c->ranks < 1) {
        fprintf(stderr, "remat simulate: --ddp: expected --ranks R (the world DDP spreads the batch over)\n");
        return 2;
    }
    if (c->ddp && c->blocks) {
        fprintf(stderr, "remat simulate: --reduce-blocks: not with --ddp (DDP sums with NCCL, not in remat's blocks)\n");
        return 2;
    }
    if (c->ddp_bucket_mb < 1 || c->ddp_bucket_mb > 1 << 20 || c->ddp_channels < 1 || c->ddp_channels > 1024) {
        int mb_bad = c->ddp_bucket_mb < 1 || c->ddp_bucket_mb > 1 << 20;
        fprintf(stderr, "remat simulate: --%s: out of range (expected 1..%d)\n",
                mb_bad ? "ddp-bucket-mb" : "ddp-nccl-channels", mb_bad ? 1 << 20 : 1024);
        return 2;
    }
    if (c->ddp && c->sweep) {
        fprintf(stderr, "remat simulate: --ddp: not with --sweep (expected one of them)\n");
        return 2;
    }
    return 0;
}

/* --allocator and --allocator-config on a recorded step: *caching and the settings (PyTorch's
 * defaults, changed by --allocator-config), 0; or 2 with one line on stderr. */
static int record_allocator(const simulate_cmd *c, remat_caching_config *cc, int *caching) {
    remat_error err = {0};
    remat_sim_opts so;
    if (remat_sim_opts_from_flags(c->alloc, NULL, 0, 0, 0, &so, &err) != REMAT_OK)
        return remat_cli_fail("simulate", &err);
    *caching = so.allocator == REMAT_ALLOC_CACHING;
    if (c->alloc_cfg && !*caching) {
        fprintf(stderr, "remat simulate: --allocator-config: only with --allocator caching on a recorded PyTorch "
                        "step (expected --allocator caching)\n");
        return 2;
    }
    *cc = remat_caching_config_default();
    if (c->alloc_cfg && remat_caching_config_parse_notes(c->alloc_cfg, cc, NULL, 0, &err) != REMAT_OK)
        return remat_cli_fail("simulate", &err);
    return 0;
}

/* An imported allocation stream or a recorded PyTorch step (core/io/ext_trace.h): *done
 * set and its exit status returned when the trace is one; else 0. */
static int simulate_if_ext(const simulate_cmd *c, int *done) {
    *done = 0;
    if (!remat_ext_trace_is_ext_h5(c->trace_path)) return 0;
    *done = 1;
    remat_ext_trace et;
    remat_error e2 = {0};
    if (remat_ext_trace_read_h5(c->trace_path, &et, &e2) != REMAT_OK) return remat_cli_fail("simulate", &e2);
    if (et.record) {
        int rc;
        int how = c->executor ? remat_torch_exec_from_name(c->executor) : REMAT_TORCH_APPLY_PLAN;
        remat_caching_config cc;
        int caching = 0;
        if (c->T || c->iters || c->copy_stream || c->out_path || c->sweep) {
            fprintf(stderr, "remat simulate: %s: a recorded PyTorch step takes only --plan, --N with "
                            "--second-trace, --allocator, --allocator-config and --json (--T, --sweep and --out "
                            "need remat's own trace)\n",
                    c->trace_path);
            rc = 2;
        } else if ((rc = record_allocator(c, &cc, &caching)) != 0) {
            /* said */
        } else if ((rc = remat_cli_record_rescale("simulate", c->trace_path, &et, c->second, c->N, 1, NULL)) == 0) {
            if (how < 0) {
                fprintf(stderr, "remat simulate: --executor: expected apply_plan or torch-nonreentrant, got '%s'\n",
                        c->executor);
                rc = 2;
            } else {
                rc = simulate_record(c->trace_path, &et, c->plan_path, (remat_torch_exec)how, caching ? &cc : NULL,
                                     c->json);
            }
        }
        remat_ext_trace_free(&et);
        return rc;
    }
    remat_ext_trace_free(&et);
    if (c->plan_path || c->N || c->T || c->iters || c->copy_stream || c->out_path || c->sweep || c->second) {
        fprintf(stderr, "remat simulate: %s: an imported allocation stream takes only --allocator caching, "
                        "--allocator-config and --json (no plan, rescaling or output trace)\n", c->trace_path);
        return 2;
    }
    return simulate_ext(c->trace_path, c->alloc_cfg, c->json);
}

/* The flags of remat's own trace, --sweep's values into dim, vals, nv: 0, or 2. */
static int check_trace_flags(const simulate_cmd *c, char *dim, int64_t *vals, int *nv) {
    if (c->executor || c->second) {
        fprintf(stderr, "remat simulate: --%s: only with a PyTorch step recorded by python3 -m remat_torch record\n",
                c->executor ? "executor" : "second-trace");
        return 2;
    }
    const cli_budget_flags *bf = &c->bf;
    if (!c->sweep && (c->figure || c->data_only || bf->budget >= 0 || bf->overhead >= 0 || strcmp(bf->on, "reserved"))) {
        fprintf(stderr, "remat simulate: %s: only with --sweep\n",
                c->figure ? "--figure" : c->data_only ? "--data-only" : bf->budget >= 0 ? "--budget" : "--device-overhead/--budget-on");
        return 2;
    }
    int rc;
    *dim = 0;
    *nv = 0;
    if (c->sweep && (rc = parse_sweep(c->sweep, dim, vals, nv)) != 0) return rc;
    if (c->sweep && c->rates) {
        fprintf(stderr, "remat simulate: --rates: not with --sweep (expected one of them)\n");
        return 2;
    }
    if (c->sweep && (c->out_path || (*dim == 'T' && c->T) || (*dim == 'N' && c->N))) {
        fprintf(stderr, "remat simulate: --sweep: expected no --out and no --%c (the sweep sets it)\n", *dim ? *dim : 'T');
        return 2;
    }
    for (int i = 0; i < *nv; i++)
        if (vals[i] > (*dim == 'T' ? REMAT_SIM_MAX_T : REMAT_SIM_MAX_N)) {
            fprintf(stderr, "remat simulate: --sweep: %c=%lld is above the limit (expected at most %lld)\n", *dim,
                    (long long)vals[i], (long long)(*dim == 'T' ? REMAT_SIM_MAX_T : REMAT_SIM_MAX_N));
            return 2;
        }
    return 0;
}

/* --sweep: the trace read, the sweep run. */
static int simulate_sweep(const simulate_cmd *c, remat_sim_opts *so, char dim, const int64_t *vals, int nv) {
    remat_error err = {0};
    remat_trace tr;
    remat_trace_init(&tr);
    so->origin = c->trace_path;
    if (remat_trace_read_h5(c->trace_path, &tr, &err) != REMAT_OK) {
        remat_trace_free(&tr);
        return remat_cli_fail("simulate", &err);
    }
    char deffig[16];
    snprintf(deffig, sizeof deffig, "sweep-%c.png", dim);
    int rc = run_sweep(&tr, c->trace_path, so, dim, vals, nv, c->plan_path, &c->bf, c->figure ? c->figure : deffig,
                       c->data_only, c->json);
    remat_trace_free(&tr);
    return rc;
}

/* --ddp: DDP's buckets and NCCL's buffers for the simulated rank (g_ddp). */
static remat_status ddp_estimate(const simulate_cmd *c, remat_sim *s, remat_ddp_bytes *ddp_bytes, remat_error *err) {
    g_ddp_opts = remat_ddp_opts_default();
    g_ddp_opts.bucket_view = c->ddp_view;
    g_ddp_opts.bucket_cap_bytes = (int64_t)c->ddp_bucket_mb << 20;
    g_ddp_opts.nccl_channels = c->ddp_channels;
    remat_caching_config cc = remat_caching_config_default();
    remat_status st = c->alloc_cfg ? remat_caching_config_parse(c->alloc_cfg, &cc, err) : REMAT_OK;
    if (st == REMAT_OK) st = remat_ddp_estimate(remat_sim_model(s), &g_ddp_opts, &cc, ddp_bytes, err);
    if (st == REMAT_OK) g_ddp = ddp_bytes;
    return st;
}

/* The answer: the summary (or --json), --out, the next command. */
static void simulate_print(const simulate_cmd *c, remat_sim *s, const remat_trace *trace, int have_plan) {
    if (c->json)
        print_json(s, trace, c->plan_path, c->alloc);
    else
        print_human(s, c->trace_path, trace, c->plan_path, c->alloc);
    if (c->json) return;
    if (c->out_path)
        printf("predicted trace written to %s (%lld events)\n", c->out_path, (long long)remat_sim_trace(s)->n_events);
    char sz[64];
    remat_cli_size_flags(sz, sizeof sz, c->N, c->T);
    if (have_plan)
        remat_cli_next(stdout, "remat run --model M.json --plan '%s'%s --trace P.h5   (measure it)", c->plan_path, sz);
    else
        remat_cli_next(stdout, "remat search --trace %s --budget 8GiB%s   (a plan that fits a budget)", c->trace_path,
                       sz);
}

/* One plan on remat's own trace: simulated, --ddp estimated, --out written, printed. */
static int simulate_plan(const simulate_cmd *c, const remat_sim_opts *so) {
    remat_error err = {0};
    remat_trace trace;
    remat_sim *s = NULL;
    remat_cli_progress("simulate: reading %s and checking it against the executor", c->trace_path);
    remat_status st = remat_sim_open(c->trace_path, so, &trace, &s, &err);
    remat_plan p;
    int have_plan = 0;
    if (st == REMAT_OK && c->plan_path) {
        st = remat_plan_load_arg(c->plan_path, remat_sim_model(s), &p, &err);
        have_plan = st == REMAT_OK;
    }
    if (st == REMAT_OK && c->rates) st = set_rates(s, c->rates, &err);
    if (st == REMAT_OK) st = remat_sim_set_plan(s, have_plan ? &p : NULL, &err);
    if (st == REMAT_OK && have_plan) remat_cli_plan_question_check("simulate", &p, remat_sim_model(s), NULL);
    if (st == REMAT_OK) {
        remat_cli_progress("simulate: running the plan on the dry backend");
        st = remat_sim_run(s, &err);
    }
    remat_cli_progress_done();
    remat_ddp_bytes ddp_bytes;
    if (st == REMAT_OK && c->ddp && remat_sim_shard(s)) st = ddp_estimate(c, s, &ddp_bytes, &err);
    if (st == REMAT_OK && c->out_path) st = remat_trace_write_h5(remat_sim_trace(s), c->out_path, &err);
    if (st == REMAT_OK) simulate_print(c, s, &trace, have_plan);
    if (have_plan) remat_plan_free(&p);
    remat_sim_free(s);
    remat_trace_free(&trace);
    return st == REMAT_OK ? 0 : remat_cli_fail("simulate", &err);
}

int remat_cmd_simulate(int argc, char **argv) {
    simulate_cmd c;
    memset(&c, 0, sizeof c);
    c.alloc = "exact";
    c.bf = (cli_budget_flags)CLI_BUDGET_FLAGS_INIT;
    c.ddp_bucket_mb = 25;
    c.ddp_channels = 2;
    int help = 0;
    const cli_option opts[] = {
        {"--trace", CLI_STRING, &c.trace_path, "baseline trace (remat run --trace, no plan)"},
        {"--executor", CLI_STRING, &c.executor, "a recorded PyTorch step: apply_plan (default, remat_torch.apply_plan) or "
                                                "torch-nonreentrant (torch.utils.checkpoint, use_reentrant=False)"},
        {"--second-trace", CLI_STRING, &c.second, REMAT_CLI_SECOND_TRACE_HELP},
        {"--plan", CLI_STRING, &c.plan_path, "plan file (JSON) or plan notation ('b1:bit/k4,b2'); none = no checkpointing"},
        {"--allocator", CLI_STRING, &c.alloc, "exact (live bytes, default) or caching (reserved bytes): the peak reported as peak_bytes"},
        {"--allocator-config", CLI_STRING, &c.alloc_cfg, "caching allocator settings (default: the trace's), e.g. max_split_size=64MiB"},
        {"--N", CLI_INT, &c.N, "predict for this batch size (default: as recorded)"},
        {"--T", CLI_INT, &c.T, "predict for this number of time steps (default: as recorded)"},
        {"--iters", CLI_INT, &c.iters, "training steps to simulate (default: the steady state: as recorded, at least 2)"},
        {"--rates", CLI_STRING, &c.rates,
         "expected firing rates instead of the recorded spike counts (they size sparse-compressed inputs): R for "
         "every spike layer, or layer=R,... (input=R: the network input)"},
        {"--copy-stream", CLI_FLAG, &c.copy_stream, "run compression on a copy stream that overlaps compute"},
        {"--out", CLI_STRING, &c.out_path, "write the predicted trace (HDF5, same schema as remat run --trace)"},
        {"--sweep", CLI_STRING, &c.sweep, "T=v1,v2,... or N=v1,v2,...: the peak at each size, as a table and a figure"},
        {"--figure", CLI_STRING, &c.figure, "with --sweep: the figure to write (default sweep-T.png or sweep-N.png)"},
        {"--data-only", CLI_FLAG, &c.data_only, "with --sweep: write the figure's data and script, do not run gnuplot"},
        CLI_BUDGET_OPTIONS(c.bf, "with --sweep: a memory budget, drawn as a line and checked per size"),
        {"--json", CLI_FLAG, &c.json, "print one JSON object instead of the summary"},
        {"--ranks", CLI_INT, &c.ranks, "predict each rank of mpirun -np R remat run --reduce-blocks B (docs/mpi.md)"},
        {"--reduce-blocks", CLI_INT, &c.blocks, "with --ranks: the reduction blocks (default: R)"},
        {"--ddp", CLI_FLAG, &c.ddp, "with --ranks: the ranks train with PyTorch DDP: add its buckets and NCCL estimate"},
        {"--ddp-bucket-view", CLI_FLAG, &c.ddp_view, "with --ddp: gradient_as_bucket_view=True (no second gradient copy)"},
        {"--ddp-bucket-mb", CLI_INT, &c.ddp_bucket_mb, "with --ddp: DDP's bucket_cap_mb (default 25)"},
        {"--ddp-nccl-channels", CLI_INT, &c.ddp_channels, "with --ddp: NCCL channels for its buffer estimate (default 2)"},
        {0},
    };
    int rc = remat_cli_parse(argc, argv, USAGE, opts, &help);
    if (rc != 0 || help) return rc;
    if ((rc = check_world_flags(&c)) != 0) return rc;
    remat_cli_alloc_config_note("simulate", c.alloc_cfg);
    if (!c.trace_path) return remat_cli_missing("simulate", "--trace", "a baseline trace recorded by remat run --trace");
    const cli_file ins[] = {{"--trace", c.trace_path}, {"--plan", c.plan_path}, {"--second-trace", c.second}};
    const cli_file outs[] = {{"--out", c.out_path}};
    if (remat_cli_refuse_overlap("simulate", ins, 3, outs, 1)) return 2;
    if (remat_cli_check_sim_size("simulate", c.N, c.T, REMAT_SIM_MAX_N, REMAT_SIM_MAX_T)) return 2;
    int done = 0;
    rc = simulate_if_ext(&c, &done);
    if (done) return rc;
    char dim = 0;
    int64_t vals[SWEEP_MAX];
    int nv = 0;
    if ((rc = check_trace_flags(&c, &dim, vals, &nv)) != 0) return rc;
    remat_error err = {0};
    remat_sim_opts so;
    if (remat_sim_opts_from_flags(c.alloc, c.alloc_cfg, c.N, c.T, c.iters, &so, &err) != REMAT_OK)
        return remat_cli_fail("simulate", &err);
    so.copy_stream = c.copy_stream;
    so.ranks = c.ranks;
    so.reduce_blocks = c.blocks;
    so.ddp = c.ddp;
    return c.sweep ? simulate_sweep(&c, &so, dim, vals, nv) : simulate_plan(&c, &so);
}
