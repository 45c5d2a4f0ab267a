/* cmd_tune.c - `remat tune`: the largest batch size (or T) that fits a memory
 * budget, with and without checkpointing, predicted from one baseline trace
 * (sim/tune.h); --confirm runs the checkpointed configuration once for real. */
#include <stdio.h>
#include <string.h>

#include "core/exec/executor.h"
#include "core/io/atomic_file.h"
#include "core/io/ext_trace.h"
#include "core/io/json_write.h"
#include "core/io/trace.h"
#include "core/model/plan_notation.h"
#include "sim/sim.h"
#include "sim/tune.h"
#include "tools/answer.h"
#include "tools/cli.h"
#include "tools/paths.h"
#include "tools/record_args.h"
#include "tools/commands.h"
#include "tools/run_common.h"

static const char *USAGE =
    "usage: remat tune --trace BASE.h5 --budget SIZE [--dim N|T] [--N n] [--T t] [--max COUNT]\n"
    "                  [--budget-on reserved|live] [--device-overhead SIZE] [--allocator-config K=V,...]\n"
    "                  [--out P.json] [--confirm] [--backend ref|cuda] [--threads n] [--json]\n"
    "       remat tune --trace STEP.h5 --second-trace STEP2.h5 --budget SIZE [--max COUNT]\n"
    "                  [--executor apply_plan|torch-nonreentrant] [--out P.json] [--json]\n"
    "\n"
    "Finds the largest batch size N (or number of time steps T with --dim T, at the recorded N\n"
    "or --N) that fits the budget, once with plain backpropagation and once with the fastest\n"
    "checkpoint plan that fits (remat search --budget at that size), by rescaling the\n"
    "baseline trace. A size fits when its predicted peak reserved bytes (caching allocator\n"
    "model; --budget-on live: peak live bytes) plus the device overhead (--device-overhead,\n"
    "default 512 MiB, an estimate of the CUDA context and cuBLAS workspace) are at most the\n"
    "budget. Predictions describe remat's own executor (reference or CUDA backend), not a\n"
    "PyTorch script of the same network. --confirm runs the checkpointed configuration once\n"
    "for real and prints measured against predicted.\n"
    "On a PyTorch step recorded by `python3 -m remat_torch record` at two batch sizes (--trace\n"
    "and --second-trace, docs/pytorch-record.md): the largest N whose predicted peak live bytes\n"
    "fit, plain and with remat search's plan, exact where every allocation is the same in both\n"
    "recordings or proportional to N (else refused, naming the first that is not); T is not\n"
    "rescaled.";

typedef struct measured {
    int64_t peak_live, peak_reserved;
    double step_time_s;
} measured;

static remat_status confirm(const remat_trace *base, const remat_sim_opts *sim, const remat_tune_result *r,
                            const char *backend, int threads, const char *alloc_cfg, measured *out, remat_error *err) {
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
    int iters = remat_cli_simulated_steps(sim, (int)base->n_iters); /* the steps the prediction describes */
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

/* What the threshold rests on: "every N up to 146 fits (each one simulated); N=148 fits
 * too, above N=147, which does not" (reserved bytes are not monotone in N). */
static void print_threshold(const char *dim, const remat_tune_side *s) {
    if (s->value <= 0) return;
    printf("                         every %s up to %lld fits (", dim, (long long)s->value);
    if (s->checked_from <= 1) printf("each one simulated)");
    else printf("each from %lld up simulated; below, the bisection's probes)", (long long)s->checked_from);
    if (s->n_also) {
        printf("; %s=", dim);
        int many = s->n_also > 1 || s->also_hi[0] > s->also_lo[0];
        for (int i = 0; i < s->n_also; i++) {
            printf("%s%lld", i ? ", " : "", (long long)s->also_lo[i]);
            if (s->also_hi[i] > s->also_lo[i]) printf("..%lld", (long long)s->also_hi[i]);
        }
        printf(" fit%s too, above %s=%lld, which does not (reserved bytes are not monotone in %s: the caching "
               "allocator's segment rounding)",
               many ? "" : "s", dim, (long long)(s->value + 1), dim);
    }
    printf("\n");
}

static void json_threshold(const remat_tune_side *s) {
    printf(",\"checked_from\":%lld,\"also_fit\":[", (long long)s->checked_from);
    for (int i = 0; i < s->n_also; i++)
        printf("%s[%lld,%lld]", i ? "," : "", (long long)s->also_lo[i], (long long)s->also_hi[i]);
    printf("]");
}

static void tune_progress(void *ctx, int64_t value, int checkpointed, int probes_done) {
    remat_cli_progress("tune: probe %d: %s=%lld %s", probes_done + 1, (const char *)ctx, (long long)value,
                       checkpointed ? "with checkpointing" : "plain");
}

/* The command's flags, and what the phases below hand each other. */
typedef struct tune_cmd {
    const char *trace_path, *dim, *alloc_cfg, *out, *backend;
    const char *second, *executor; /* a recorded PyTorch step (tools/record_args.h) */
    int done;                      /* answered already (a recorded step) */
    cli_budget_flags bf;
    int confirm_run, threads, json, max_value, N, T, ranks;
    remat_budget bud;
    remat_alloc_kind kind;
    cli_overhead_source src;
    int64_t budget;
    remat_trace trace;
    remat_tune_opts to;
    remat_tune_result r, ex; /* ex: the same with expandable segments (have_ex) */
    int have_ex, confirmed;
    const remat_tune_side *at; /* the side the expandable-segments note speaks of */
    measured meas;
    char label[1024];
} tune_cmd;

/* The flags' values checked (the trace not read yet): 0, or 2 with one line on stderr. */
static int check_flags(tune_cmd *c) {
    if (c->ranks < 0 || c->ranks > 4096 || (c->ranks > 1 && c->confirm_run)) {
        fprintf(stderr, "remat tune: --ranks: %s\n",
                c->ranks > 1 && c->confirm_run ? "not with --confirm (it runs one process)"
                                               : "out of range (expected 1..4096)");
        return 2;
    }
    remat_cli_alloc_config_note("tune", c->alloc_cfg);
    if (!c->trace_path) return remat_cli_missing("tune", "--trace", "a baseline trace recorded by remat run --trace");
    const cli_file ins[] = {{"--trace", c->trace_path}, {"--second-trace", c->second}};
    const cli_file outs[] = {{"--out", c->out}};
    if (remat_cli_refuse_overlap("tune", ins, 2, outs, 1)) return 2;
    if (remat_ext_trace_is_ext_h5(c->trace_path)) {
        remat_ext_trace et;
        remat_error e2 = {0};
        if (remat_ext_trace_read_h5(c->trace_path, &et, &e2) == REMAT_OK && et.record) {
            int rc = 2;
            if (c->bf.budget <= 0 || c->dim[0] != 'N' || c->N || c->T || c->confirm_run || c->ranks > 1 ||
                c->alloc_cfg || c->bf.overhead >= 0 || strcmp(c->bf.on, "reserved"))
                fprintf(stderr, "remat tune: %s: a recorded PyTorch step takes --budget (on peak live bytes), "
                                "--second-trace, --max, --executor, --out and --json (%s)\n",
                        c->trace_path,
                        c->bf.budget <= 0 ? "expected a positive --budget"
                        : c->dim[0] != 'N' || c->T ? "T is not rescaled: another T changes which allocations the "
                                                     "step makes"
                        : c->confirm_run ? "measure the plan with python3 -m remat_torch record --plan"
                                         : "no caching allocator, ranks or device overhead on a CPU recording");
            else
                rc = remat_cli_tune_record(c->trace_path, &et, c->second, c->bf.budget, c->max_value, c->executor,
                                           c->out, c->json);
            remat_ext_trace_free(&et);
            c->done = 1;
            return rc;
        }
        remat_ext_trace_free(&et);
    }
    if (c->second || c->executor) {
        fprintf(stderr, "remat tune: --%s: only with a PyTorch step recorded by python3 -m remat_torch record\n",
                c->second ? "second-trace" : "executor");
        return 2;
    }
    if (c->bf.budget < 0) return remat_cli_missing("tune", "--budget", "a positive memory budget, e.g. 8GiB or 8GB");
    if (c->bf.budget == 0) {
        fprintf(stderr, "remat tune: --budget: expected a positive memory budget, e.g. 8GiB or 8GB, got 0\n");
        return 2;
    }
    if (strcmp(c->backend, "ref") && strcmp(c->backend, "cuda")) {
        fprintf(stderr, "remat tune: --backend: expected ref or cuda, got '%.40s'\n", c->backend);
        return 2;
    }
    const char *dim = c->dim;
    if (strcmp(dim, "N") && strcmp(dim, "T")) {
        fprintf(stderr, "remat tune: --dim: expected N or T, got '%s'\n", dim);
        return 2;
    }
    if (c->max_value < 0 || c->N < 0 || c->T < 0) {
        fprintf(stderr, "remat tune: --max/--N/--T: expected positive counts, got %d/%d/%d\n", c->max_value, c->N,
                c->T);
        return 2;
    }
    if ((dim[0] == 'N' && c->N) || (dim[0] == 'T' && c->T)) {
        fprintf(stderr, "remat tune: --%s: is the tuned dimension (expected --%s only with --dim %s)\n", dim, dim,
                dim[0] == 'N' ? "T" : "N");
        return 2;
    }
    int rc = remat_cli_budget_from_flags("tune", &c->bf, 1, &c->bud, &c->kind, &c->src);
    if (rc) return rc;
    if (c->threads < 0 || c->threads > 256) {
        fprintf(stderr, "remat tune: --threads: %d is out of range (expected 1..256, 0: as recorded)\n", c->threads);
        return 2;
    }
    return 0;
}

/* The tuner's options from the flags. */
static void tune_opts(tune_cmd *c) {
    remat_tune_opts *to = &c->to;
    *to = remat_tune_opts_default();
    to->dim_T = c->dim[0] == 'T';
    to->max_value = c->max_value;
    to->sim.allocator = c->kind;
    to->sim.N = c->N;
    to->sim.T = c->T;
    /* without --ranks one process (1: not the world a rank's trace recorded, whose
     * blocks need not divide the sizes tried) */
    to->sim.ranks = c->ranks > 0 ? c->ranks : 1;
    to->sim.reduce_blocks = c->ranks > 1 ? c->ranks : 0; /* one block per rank: every share is whole blocks */
    to->sim.allocator_config = c->alloc_cfg;
    to->sim.origin = c->trace_path;
    to->sim.steady = 1;
    if (c->trace.n_iters > REMAT_CHAIN_MAX_ITERS) to->sim.iters = REMAT_CHAIN_MAX_ITERS;
    to->progress = tune_progress;
    to->progress_ctx = (void *)c->dim;
}

/* Reserved 20 % or more above live at the answer: what expandable segments would give (c->ex). */
static void tune_expandable(tune_cmd *c) {
#define FRAGMENTED(s) ((s)->value > 0 && (s)->fig.peak_reserved >= (s)->fig.peak_live + (s)->fig.peak_live / 5)
    c->at = FRAGMENTED(&c->r.ckpt) ? &c->r.ckpt : &c->r.plain;
    remat_caching_config excfg;
    remat_error pe = {0};
    /* the settings in force with expandable segments on (each setting once in the text) */
    int ex_ok = remat_caching_config_parse(c->alloc_cfg ? c->alloc_cfg : c->trace.allocator_config, &excfg, &pe) ==
                    REMAT_OK &&
                !excfg.expandable_segments;
    if (c->bud.on == REMAT_BUDGET_ON_RESERVED && FRAGMENTED(c->at) && ex_ok) {
        char ex_cfg[1024];
        excfg.expandable_segments = 1;
        remat_caching_config_format(&excfg, ex_cfg, sizeof ex_cfg);
        remat_tune_opts xo = c->to;
        xo.sim.allocator_config = ex_cfg;
        remat_cli_progress("tune: the same with expandable segments");
        remat_error xe = {0};
        c->have_ex = remat_tune(&c->trace, &xo, c->budget, &c->ex, &xe) == REMAT_OK;
        remat_cli_progress_done();
    }
#undef FRAGMENTED
}

/* The kind of step-time prediction the answers are (the farther one from the recording). */
static int step_trust(const tune_cmd *c) {
    int64_t far = c->r.ckpt.value > c->r.plain.value ? c->r.ckpt.value : c->r.plain.value;
    const remat_trace *t = &c->trace;
    return remat_cli_step_trust_kind(t->T, t->N, c->to.dim_T ? far : (c->T ? c->T : t->T),
                                     c->to.dim_T ? (c->N ? c->N : t->N) : far, 1, remat_trace_has_probe(t));
}

/* --json: one object. */
static void print_json(tune_cmd *c, remat_error *err) {
    const remat_tune_result *r = &c->r;
    printf("{\"execution\":");
    remat_json_string(stdout, remat_trace_execution(c->trace.backend));
    printf(",\"dim\":\"%s\",\"budget_bytes\":%lld,\"allocator\":\"%s\"", c->dim, (long long)c->budget,
           c->kind == REMAT_ALLOC_CACHING ? "caching" : "exact");
    if (c->ranks > 1) printf(",\"ranks\":%d,\"reduce_blocks\":%d", c->ranks, c->ranks); /* values: each rank's */
    remat_cli_budget_json(stdout, 1, &c->bud, c->src);
    remat_cli_steady_json(stdout, remat_cli_simulated_steps(&c->to.sim, (int)c->trace.n_iters), (int)c->trace.n_iters);
    remat_cli_step_trust_json(stdout, step_trust(c));
    printf(",\"max\":%lld,\"plain\":{\"value\":%lld,\"at_max\":%s,\"peak_bytes\":%lld,\"peak_live_bytes\":%lld,"
           "\"peak_reserved_bytes\":%lld,\"step_time_s\":%.9g",
           (long long)r->max_value, (long long)r->plain.value, r->plain.at_max ? "true" : "false",
           (long long)r->plain.fig.peak, (long long)r->plain.fig.peak_live, (long long)r->plain.fig.peak_reserved,
           r->plain.fig.time_s);
    json_threshold(&r->plain);
    printf("},\"checkpointed\":{\"value\":%lld,\"at_max\":%s,"
           "\"peak_bytes\":%lld,\"peak_live_bytes\":%lld,\"peak_reserved_bytes\":%lld,\"step_time_s\":%.9g",
           (long long)r->ckpt.value, r->ckpt.at_max ? "true" : "false", (long long)r->ckpt.fig.peak,
           (long long)r->ckpt.fig.peak_live, (long long)r->ckpt.fig.peak_reserved, r->ckpt.fig.time_s);
    json_threshold(&r->ckpt);
    printf(",\"label\":");
    remat_json_string(stdout, c->label);
    if (r->have_plan) {
        char *text = remat_plan_to_json(&r->plan, &r->model, err);
        printf(",\"plan\":%s", text ? text : "null");
        remat_xfree(text);
    }
    printf("}");
    if (c->confirmed)
        printf(",\"confirm\":{\"backend\":\"%s\",\"peak_live_bytes\":%lld,\"peak_reserved_bytes\":%lld,"
               "\"step_time_s\":%.9g,\"predicted_peak_live_bytes\":%lld,\"predicted_peak_reserved_bytes\":%lld,"
               "\"predicted_step_time_s\":%.9g}",
               c->backend, (long long)c->meas.peak_live, (long long)c->meas.peak_reserved, c->meas.step_time_s,
               (long long)r->ckpt.fig.peak_live, (long long)r->ckpt.fig.peak_reserved, r->ckpt.fig.time_s);
    if (c->have_ex)
        printf(",\"expandable_segments\":{\"plain\":%lld,\"checkpointed\":%lld}", (long long)c->ex.plain.value,
               (long long)c->ex.ckpt.value);
    printf(",\"evaluations\":%d,\"seconds\":%.6f}\n", r->evaluations + c->ex.evaluations, r->seconds + c->ex.seconds);
}

/* One side's line: "plain backpropagation  N=... step time ..., peaks" and its threshold. */
static void print_side(const tune_cmd *c, const remat_tune_side *s, const char *name, const char *plan) {
    if (s->value > 0) {
        printf("  %-22s %s=%-8lld step time %.6f s, %s%s%s", name, c->dim, (long long)s->value, s->fig.time_s,
               plan ? "plan " : "", plan ? plan : "", plan ? ", " : "");
        remat_cli_peaks_print(stdout, &c->bud, s->fig.peak_live, s->fig.peak_reserved);
        print_threshold(c->dim, s);
    } else {
        printf("  %-22s nothing fits (not even %s=1)\n", name, c->dim);
    }
}

/* The summary. */
static void print_human(const tune_cmd *c) {
    const remat_tune_result *r = &c->r;
    const char *dim = c->dim;
    char b1[64], b2[64], b3[64];
    printf("largest %s that fits, from %s (recorded %s=%lld", dim, c->trace_path, dim,
           (long long)(c->to.dim_T ? c->trace.T : c->trace.N));
    if (c->to.dim_T) printf(", at N=%lld", (long long)(c->N ? c->N : c->trace.N));
    else printf(", at T=%lld", (long long)(c->T ? c->T : c->trace.T));
    printf("):\n");
    if (c->ranks > 1)
        printf("per rank: %d ranks (mpirun -np %d remat run --reduce-blocks %d); the budget is each rank's and "
               "%s each rank's share (the batch is %d x N), its reduction buffers included\n",
               c->ranks, c->ranks, c->ranks, c->to.dim_T ? "N the whole batch; T is" : "N below is", c->ranks);
    remat_cli_budget_print(stdout, &c->bud, c->src);
    remat_cli_steady_note(stdout, remat_cli_simulated_steps(&c->to.sim, (int)c->trace.n_iters), (int)c->trace.n_iters);
    remat_cli_prediction_note(stdout, c->trace.backend);
    remat_cli_step_trust_note(stdout, step_trust(c));
    print_side(c, &r->plain, "plain backpropagation", NULL);
    print_side(c, &r->ckpt, "with checkpointing", c->label);
    if (r->plain.at_max || r->ckpt.at_max)
        printf("  stopped at --max %lld: %s fits at %s=%lld, larger values were not tried (raise --max)\n",
               (long long)r->max_value, r->plain.at_max ? "even plain backpropagation" : "checkpointing", dim,
               (long long)r->max_value);
    if (c->confirmed)
        printf("  confirmed on %s: measured peak live %s (predicted %s), reserved %s (predicted %lld B), "
               "step time %.6f s (predicted %.6f s, %+.1f %%)\n",
               c->backend, remat_cli_fmt_bytes(c->meas.peak_live, b1, sizeof b1),
               remat_cli_fmt_bytes(r->ckpt.fig.peak_live, b2, sizeof b2),
               remat_cli_fmt_bytes(c->meas.peak_reserved, b3, sizeof b3), (long long)r->ckpt.fig.peak_reserved,
               c->meas.step_time_s, r->ckpt.fig.time_s,
               c->meas.step_time_s > 0 ? 100.0 * (r->ckpt.fig.time_s / c->meas.step_time_s - 1) : 0.0);
    if (c->have_ex)
        printf("  reserved is %.0f %% above live at %s=%lld (%s): with expandable segments "
               "(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; --allocator-config expandable_segments=1) "
               "plain backpropagation reaches %s=%lld and checkpointing %s=%lld (predicted)\n",
               100.0 * ((double)c->at->fig.peak_reserved / (double)c->at->fig.peak_live - 1.0), dim,
               (long long)c->at->value, c->at == &r->plain ? "plain backpropagation" : "with checkpointing", dim,
               (long long)c->ex.plain.value, dim, (long long)c->ex.ckpt.value);
    if (c->out && r->have_plan) printf("plan written to %s\n", c->out);
    printf("(%d sizes simulated in %.3f s)\n", r->evaluations + c->ex.evaluations, r->seconds + c->ex.seconds);
    if (c->out && r->have_plan && !c->confirmed)
        remat_cli_next(stdout,
                       "remat run --model M.json --N %lld --T %lld --plan %s --trace P.h5   (or remat tune with "
                       "--confirm: run it once)",
                       (long long)r->model.N, (long long)r->model.T, c->out);
}

/* After the search: --confirm, the plan's notation, --out. */
static remat_status tune_finish(tune_cmd *c, remat_error *err) {
    remat_status st = REMAT_OK;
    remat_tune_result *r = &c->r;
    if (c->confirm_run && r->have_plan) {
        /* the predicted step time is the recording's thread count's (docs/simulator.md) */
        int rec = c->trace.threads > 0 ? c->trace.threads : 1, threads = c->threads > 0 ? c->threads : rec;
        remat_cli_progress("tune: running %s=%lld once on %s", c->dim, (long long)r->ckpt.value, c->backend);
        st = confirm(&c->trace, &c->to.sim, r, c->backend, threads, c->alloc_cfg, &c->meas, err);
        remat_cli_progress_done();
        if (threads != rec && !strcmp(c->backend, "ref"))
            fprintf(stderr, "remat tune: note: --threads %d: the trace was recorded with %d thread%s, the predicted "
                            "step time is for %d, the confirmed one for %d\n",
                    threads, rec, rec == 1 ? "" : "s", rec, threads);
        c->confirmed = st == REMAT_OK;
    }
    if (st == REMAT_OK && r->have_plan) remat_plan_notation(&r->plan, &r->model, c->label, sizeof c->label);
    if (st == REMAT_OK && c->out && r->have_plan) {
        char q[512];
        remat_cli_chosen_for(q, sizeof q, "remat tune", &r->model, &c->bud);
        char *text = remat_plan_to_json_for(&r->plan, &r->model, q, err);
        st = text ? remat_afile_write_all(c->out, text, strlen(text), err) : err->status;
        remat_xfree(text);
    }
    return st;
}

int remat_cmd_tune(int argc, char **argv) {
    tune_cmd c;
    memset(&c, 0, sizeof c);
    c.dim = "N";
    c.backend = "ref";
    c.bf = (cli_budget_flags)CLI_BUDGET_FLAGS_INIT;
    int help = 0;
    const cli_option opts[] = {
        {"--trace", CLI_STRING, &c.trace_path, "baseline trace (remat run --trace, no plan)"},
        {"--second-trace", CLI_STRING, &c.second,
         "a recorded PyTorch step: the same step recorded at another batch size (needed to tune N on it: exact only "
         "where every allocation is constant or proportional to N, else refused)"},
        {"--executor", CLI_STRING, &c.executor, "a recorded PyTorch step: apply_plan (default) or torch-nonreentrant"},
        CLI_BUDGET_OPTIONS(c.bf, "memory budget (see --budget-on, --device-overhead)"),
        {"--dim", CLI_STRING, &c.dim, "N (batch size, default) or T (time steps)"},
        {"--N", CLI_INT, &c.N, "with --dim T: the batch size to tune T at (default: as recorded)"},
        {"--T", CLI_INT, &c.T, "with --dim N: the number of time steps to tune N at (default: as recorded)"},
        {"--max", CLI_INT, &c.max_value, "largest value to try, a count (default and limit: 2^20 for N, 2^16 for T)"},
        {"--allocator-config", CLI_STRING, &c.alloc_cfg, "caching allocator settings (default: the trace's)"},
        {"--out", CLI_STRING, &c.out, "write the checkpoint plan for the tuned size (JSON plan file)"},
        {"--confirm", CLI_FLAG, &c.confirm_run, "run the checkpointed configuration once and compare"},
        {"--backend", CLI_STRING, &c.backend, "backend of --confirm: ref (default) or cuda"},
        {"--threads", CLI_INT, &c.threads, "reference-backend threads for --confirm (default: the trace's)"},
        {"--json", CLI_FLAG, &c.json, "print one JSON object instead of the summary"},
        {"--ranks", CLI_INT, &c.ranks,
         "each rank of mpirun -np R remat run --reduce-blocks R: N is a rank's share (docs/mpi.md)"},
        {0},
    };
    int rc = remat_cli_parse(argc, argv, USAGE, opts, &help);
    if (rc != 0 || help) return rc;
    if ((rc = check_flags(&c)) != 0 || c.done) return rc;
    remat_error err = {0};
    remat_trace_init(&c.trace);
    if (remat_trace_read_h5(c.trace_path, &c.trace, &err) != REMAT_OK) {
        remat_trace_free(&c.trace);
        return remat_cli_fail("tune", &err);
    }
    remat_cli_budget_use_trace(&c.bud, &c.src, c.trace.device_total_bytes, c.trace.device_free_at_init);
    if ((rc = remat_cli_budget_allocator_bytes("tune", &c.bud, &c.budget)) != 0) {
        remat_trace_free(&c.trace);
        return rc;
    }
    tune_opts(&c);
    remat_cli_progress("tune: searching the largest %s", c.dim);
    remat_status st = remat_tune(&c.trace, &c.to, c.budget, &c.r, &err);
    remat_cli_progress_done();
    if (st != REMAT_OK) {
        remat_trace_free(&c.trace);
        return remat_cli_fail("tune", &err);
    }
    tune_expandable(&c);
    st = tune_finish(&c, &err);
    if (st == REMAT_OK && c.json) print_json(&c, &err);
    else if (st == REMAT_OK) print_human(&c);
    rc = st == REMAT_OK ? 0 : remat_cli_fail("tune", &err);
    if (st == REMAT_OK && c.r.ckpt.value == 0) {
        fprintf(stderr,
                "remat tune: --budget: nothing fits %lld B (%lld B for the allocator after the device overhead), not "
                "even %s=1\n",
                (long long)c.bud.total, (long long)c.budget, c.dim);
        rc = 1;
    }
    remat_tune_result_free(&c.r);
    if (c.have_ex) remat_tune_result_free(&c.ex);
    remat_trace_free(&c.trace);
    return rc;
}
