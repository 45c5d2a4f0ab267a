/* answer.c - budgets, peaks, the prediction note and next steps as every answer
 * prints them (contract in tools/answer.h). */
#include "tools/answer.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <string.h>

#include "core/base/size.h"
#include "core/io/json_write.h"

int remat_cli_budget_from_flags(const char *cmd, const cli_budget_flags *f, int estimate_default, remat_budget *b,
                                remat_alloc_kind *alloc, cli_overhead_source *src) {
    int on = remat_budget_on_from_name(f->on);
    if (on < 0) {
        fprintf(stderr, "remat %s: --budget-on: expected reserved or live, got '%s'\n", cmd, f->on ? f->on : "");
        return 2;
    }
    if (f->overhead == REMAT_SIZE_INF) {
        fprintf(stderr, "remat %s: --device-overhead: expected a finite size, got inf\n", cmd);
        return 2;
    }
    b->total = f->budget;
    b->overhead = f->overhead >= 0 ? f->overhead : (estimate_default ? REMAT_DEVICE_OVERHEAD_DEFAULT : 0);
    *src = f->overhead >= 0 ? CLI_OVERHEAD_GIVEN : estimate_default ? CLI_OVERHEAD_ESTIMATE : CLI_OVERHEAD_NONE;
    b->on = (remat_budget_on)on;
    *alloc = remat_budget_allocator(b->on);
    return 0;
}

void remat_cli_budget_use_trace(remat_budget *b, cli_overhead_source *src, int64_t device_total_bytes,
                                int64_t device_free_at_init) {
    if (*src != CLI_OVERHEAD_ESTIMATE || device_total_bytes <= 0 || device_free_at_init < 0 ||
        device_free_at_init > device_total_bytes)
        return;
    b->overhead = device_total_bytes - device_free_at_init;
    *src = CLI_OVERHEAD_TRACE;
}

static const char *source_name(cli_overhead_source src) {
    switch (src) {
    case CLI_OVERHEAD_GIVEN: return "given";
    case CLI_OVERHEAD_TRACE: return "trace";
    case CLI_OVERHEAD_ESTIMATE: return "estimate";
    case CLI_OVERHEAD_NONE: break;
    }
    return "none";
}

static const char *source_words(cli_overhead_source src) {
    switch (src) {
    case CLI_OVERHEAD_GIVEN: return "as given";
    case CLI_OVERHEAD_TRACE: return "measured on the GPU the trace was recorded on";
    case CLI_OVERHEAD_ESTIMATE: return "default estimate";
    case CLI_OVERHEAD_NONE: break;
    }
    return "default";
}

int remat_cli_budget_allocator_bytes(const char *cmd, const remat_budget *b, int64_t *out) {
    remat_error err = {0};
    if (remat_budget_allocator_bytes(b, out, &err) == REMAT_OK) return 0;
    return remat_cli_fail(cmd, &err);
}

static const char *on_words(remat_budget_on on) {
    return on == REMAT_BUDGET_ON_LIVE ? "peak live bytes" : "peak reserved bytes (caching allocator model)";
}

void remat_cli_budget_print(FILE *f, const remat_budget *b, cli_overhead_source src) {
    char b1[64], b2[64], b3[64];
    if (b->total == REMAT_SIZE_INF) {
        fprintf(f, "budget none (inf), on %s\n", on_words(b->on));
        return;
    }
    fprintf(f, "budget %s on %s + device overhead %s (%s; --device-overhead): %s for the allocator\n",
            remat_cli_fmt_bytes(b->total, b1, sizeof b1), on_words(b->on),
            remat_cli_fmt_bytes(b->overhead, b2, sizeof b2), source_words(src),
            remat_cli_fmt_bytes(b->total - b->overhead, b3, sizeof b3));
}

void remat_cli_budget_json(FILE *f, int comma, const remat_budget *b, cli_overhead_source src) {
    int inf = b->total == REMAT_SIZE_INF;
    fprintf(f, "%s\"budget\":{\"total_bytes\":", comma ? "," : "");
    if (inf) fputs("null", f);
    else fprintf(f, "%lld", (long long)b->total);
    fprintf(f,
            ",\"on\":\"%s\",\"device_overhead_bytes\":%lld,\"device_overhead_given\":%s,"
            "\"device_overhead_source\":\"%s\",\"allocator_bytes\":",
            remat_budget_on_name(b->on), (long long)b->overhead, src == CLI_OVERHEAD_GIVEN ? "true" : "false",
            source_name(src));
    if (inf) fputs("null", f);
    else fprintf(f, "%lld", (long long)(b->total - b->overhead));
    fputc('}', f);
}

void remat_cli_peaks_print(FILE *f, const remat_budget *b, int64_t peak_live, int64_t peak_reserved) {
    char b1[64], b2[64], b3[64], b4[64];
    fprintf(f, "peak reserved %s, peak live %s; on the card %s with the device overhead %s\n",
            remat_cli_fmt_bytes(peak_reserved, b1, sizeof b1), remat_cli_fmt_bytes(peak_live, b2, sizeof b2),
            remat_cli_fmt_bytes(remat_budget_needed(b, peak_live, peak_reserved), b3, sizeof b3),
            remat_cli_fmt_bytes(b->overhead, b4, sizeof b4));
}

void remat_cli_prediction_note(FILE *f, const char *backend_of_times) {
    fprintf(f, "execution             %s (remat's executor, predicted from a trace of remat run)\n",
            remat_trace_execution(backend_of_times));
    fprintf(f,
            "(predictions describe remat's own executor running this model (reference or CUDA backend, caching "
            "allocator model), not a PyTorch script of the same network, whose autograd and kernels hold other "
            "tensors; step times are the recorded %s backend's on the machine that recorded the trace)\n",
            backend_of_times && backend_of_times[0] ? backend_of_times : "ref");
}

void remat_cli_steady_note(FILE *f, int simulated, int recorded) {
    if (simulated >= REMAT_SIM_STEADY_ITERS)
        fprintf(f, "steady state: the worst of %d simulated steps (the trace holds %d; the first step creates the "
                   "optimiser state and the allocator's segments, every step from the second on repeats the last)\n",
                simulated, recorded);
    else
        fprintf(f, "first step only: %d simulated step (--iters 1), not the steady state (from step %d on, with the "
                   "optimiser state)\n",
                simulated, REMAT_SIM_STEADY_ITERS);
    if (recorded < 2)
        fprintf(f, "step times from the trace's one, first step, about 2x a warm step's: record two (remat run "
                   "--iters 2) for warm-step times\n");
}

/* The measured error of each kind of step-time prediction (predicted / measured - 1),
 * the one place these figures live. Re-measure with the benchmarks named and update
 * this table with them. */
typedef struct step_trust {
    const char *kind, *error, *source;
} step_trust;

enum { TRUST_SAME, TRUST_PLAN, TRUST_LARGER_PROBE, TRUST_SMALLER_PROBE, TRUST_N_NO_PROBE, TRUST_T, TRUST_COUNT };

#define EXP16_SHIPPED                                                                                        \
    "bench/exp16_step_predict.py --final: mlp-lif, resnet-bn, 3block-if, tiny-vgg-dvs, tiny-sew-resnet, vgg-dvs "   \
    "recorded at N=2, sew-resnet18 at N=1, one thread, by the wall clock on a 2-core Intel Xeon with AVX-512 at "   \
    "load 1.0 to 1.4; at --threads 2 the small models were off by more (worst 3 % at the same size, 8 % with the "  \
    "plan, 24 % at a larger batch, 15 points of overhead); docs/benchmarks.md section 16"

static const step_trust STEP_TRUST[TRUST_COUNT] = {
    [TRUST_SAME] = {"same size as recorded, no plan",
                    "a median 1.5 %, at worst 8 % (-4 to +8 %, 7 models; the worst: vgg-dvs and resnet-bn)",
                    EXP16_SHIPPED},
    [TRUST_PLAN] = {"a plan at the recorded size",
                    "a median 4.2 %, at worst 7 % (every block checkpointed, 7 models: the plan the trace's probe "
                    "runs itself; other plans are priced by its per-op ratios, not measured); the plan's overhead "
                    "over plain a median 2.1 points, at worst 8.3 points from the measured one (sew-resnet18; "
                    "within 3.7 on the others)",
                    EXP16_SHIPPED},
    [TRUST_LARGER_PROBE] = {"a larger batch than recorded, from a trace with a probe",
                            "a median 3.0 %, at worst 13 % (-13 to +7 %) at 2 to 16 times the recorded N (the probe "
                            "measured 4N and, where its steps were quick, 16N; past the largest measured size an "
                            "op's last segment is extended)",
                            EXP16_SHIPPED},
    [TRUST_SMALLER_PROBE] = {"a smaller batch than recorded, from a trace with a probe",
                             "not measured (the line through the recorded and the probe's sizes)", "no benchmark yet"},
    [TRUST_N_NO_PROBE] = {"another batch than recorded, from a trace without a probe (one step, --probe-N 0 or an earlier "
                          "remat: re-record it with remat run --iters 3 --trace for the probe)",
                          "a median 67 %, +20 to +295 % at 2 to 16 times the recorded N (over: per-op times scaled "
                          "with the elements they touch, and a small batch's ops cost more per element)",
                          "bench/exp16_step_predict.py before the probe, 5 models recorded at N=2; docs/benchmarks.md "
                          "section 16"},
    [TRUST_T] = {"another T than recorded", "not measured (per-op times are scaled with the elements they touch)",
                 "no benchmark yet"},
};

int remat_cli_step_trust_kind(int64_t rec_T, int64_t rec_N, int64_t T, int64_t N, int has_plan, int has_probe) {
    if (T != rec_T) return TRUST_T;
    if (N != rec_N) return !has_probe ? TRUST_N_NO_PROBE : N > rec_N ? TRUST_LARGER_PROBE : TRUST_SMALLER_PROBE;
    return has_plan ? TRUST_PLAN : TRUST_SAME;
}

int remat_cli_step_trust_kind_sim(const remat_sim *s, int has_plan) {
    const remat_model *b = remat_sim_base_model(s), *m = remat_sim_model(s); /* with --ranks: a rank's share */
    return remat_cli_step_trust_kind(b->T, b->N, m->T, m->N, has_plan, remat_sim_has_probe(s));
}

void remat_cli_step_trust_note(FILE *f, int kind) {
    const step_trust *k = &STEP_TRUST[kind >= 0 && kind < TRUST_COUNT ? kind : TRUST_T];
    fprintf(f, "step-time trust       %s: such predictions were off by %s (%s)\n", k->kind, k->error, k->source);
}

void remat_cli_step_trust_json(FILE *f, int kind) {
    const step_trust *k = &STEP_TRUST[kind >= 0 && kind < TRUST_COUNT ? kind : TRUST_T];
    fprintf(f, ",\"step_time_trust\":{\"kind\":");
    remat_json_string(f, k->kind);
    fprintf(f, ",\"error\":");
    remat_json_string(f, k->error);
    fprintf(f, ",\"measured_by\":");
    remat_json_string(f, k->source);
    fprintf(f, "}");
}

void remat_cli_steady_json(FILE *f, int simulated, int recorded) {
    fprintf(f, ",\"steady_state\":%s,\"simulated_steps\":%d,\"recorded_steps\":%d,\"times_from\":\"%s\"",
            simulated >= REMAT_SIM_STEADY_ITERS ? "true" : "false", simulated, recorded,
            recorded > 1 ? "warm steps" : "first step");
}

int remat_cli_simulated_steps(const remat_sim_opts *o, int recorded) {
    if (o->iters > 0) return o->iters;
    return o->steady && recorded < REMAT_SIM_STEADY_ITERS ? REMAT_SIM_STEADY_ITERS : recorded;
}

const char *remat_cli_size_flags(char *buf, size_t len, int64_t N, int64_t T) {
    int n = 0;
    buf[0] = '\0';
    if (N > 0) n = snprintf(buf, len, " --N %lld", (long long)N);
    if (T > 0 && n >= 0 && (size_t)n < len) snprintf(buf + n, len - (size_t)n, " --T %lld", (long long)T);
    return buf;
}

void remat_cli_chosen_for(char *buf, size_t len, const char *by, const remat_model *m, const remat_budget *b) {
    char total[32];
    if (b->total < 0 || b->total == REMAT_SIZE_INF) snprintf(total, sizeof total, "null");
    else snprintf(total, sizeof total, "%lld", (long long)b->total);
    snprintf(buf, len,
             "{\"by\": \"%s\", \"T\": %lld, \"N\": %lld, \"budget_bytes\": %s, \"budget_on\": \"%s\", "
             "\"device_overhead_bytes\": %lld}",
             by, (long long)m->T, (long long)m->N, total, remat_budget_on_name(b->on), (long long)b->overhead);
}

static int64_t member(const cJSON *o, const char *k, int64_t dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : dflt;
}

int remat_cli_plan_question_check(const char *cmd, const remat_plan *p, const remat_model *m, const remat_budget *b) {
    if (!p || !p->text || !p->text[0]) return 0;
    cJSON *root = cJSON_Parse(p->text);
    const cJSON *q = root ? cJSON_GetObjectItemCaseSensitive(root, "chosen_for") : NULL;
    int warned = 0;
    if (cJSON_IsObject(q)) {
        int64_t T = member(q, "T", m->T), N = member(q, "N", m->N), tot = member(q, "budget_bytes", -1),
                ov = member(q, "device_overhead_bytes", -1);
        int diff = T != m->T || N != m->N;
        if (b && b->total >= 0 && ((tot >= 0 && tot != b->total) || (ov >= 0 && ov != b->overhead))) diff = 1;
        if (diff) {
            char b1[64], b2[64];
            fprintf(stderr, "remat %s: warning: %s was chosen for N=%lld, T=%lld", cmd,
                    p->path && p->path[0] ? p->path : "the plan", (long long)N, (long long)T);
            if (tot >= 0) fprintf(stderr, ", budget %s", remat_cli_fmt_bytes(tot, b1, sizeof b1));
            if (ov >= 0) fprintf(stderr, ", device overhead %s", remat_cli_fmt_bytes(ov, b2, sizeof b2));
            fprintf(stderr, "; this answer is for N=%lld, T=%lld", (long long)m->N, (long long)m->T);
            if (b && b->total >= 0 && b->total != REMAT_SIZE_INF)
                fprintf(stderr, ", budget %s, device overhead %s", remat_cli_fmt_bytes(b->total, b1, sizeof b1),
                        remat_cli_fmt_bytes(b->overhead, b2, sizeof b2));
            fprintf(stderr, " (--N %lld --T %lld asks about the size it was chosen for)\n", (long long)N, (long long)T);
            warned = 1;
        }
    }
    cJSON_Delete(root);
    return warned;
}

void remat_cli_alloc_config_note(const char *cmd, const char *text) {
    if (!text) return;
    char notes[512];
    remat_caching_config c;
    remat_error e = {0};
    if (remat_caching_config_parse_notes(text, &c, notes, sizeof notes, &e) != REMAT_OK || !notes[0]) return;
    fprintf(stderr,
            "remat %s: note: --allocator-config: %s accepted but not modelled (the caching allocator model "
            "predicts as if they were unset)\n",
            cmd, notes);
}

void remat_cli_next(FILE *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("next: ", f);
    vfprintf(f, fmt, ap);
    fputc('\n', f);
    va_end(ap);
}
