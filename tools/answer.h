/* answer.h - what every search/tune/demo answer says the same way: the budget
 * flags and what the budget is compared with (sim/budget.h), both peaks of a plan,
 * the one line on what a prediction describes, and the next step.
 *
 * The budget flags, in each command's option table:
 *
 *   cli_budget_flags bf = CLI_BUDGET_FLAGS_INIT;
 *   const cli_option opts[] = { CLI_BUDGET_OPTIONS(bf, "memory budget ..."), ... };
 */
#ifndef REMAT_TOOLS_ANSWER_H
#define REMAT_TOOLS_ANSWER_H

#include <stdint.h>
#include <stdio.h>

#include "sim/budget.h"
#include "sim/sim.h"
#include "tools/cli.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cli_budget_flags {
    int64_t budget;       /* -1: not given */
    const char *on;       /* "reserved" (default) or "live" */
    int64_t overhead;     /* -1: not given (REMAT_DEVICE_OVERHEAD_DEFAULT) */
} cli_budget_flags;

#define CLI_BUDGET_FLAGS_INIT {-1, "reserved", -1}

#define CLI_BUDGET_HELP_ON                                                                                   \
    "what the budget is compared with: reserved (peak reserved bytes under the caching allocator model "   \
    "plus the device overhead: what runs out on a GPU; default) or live (peak live bytes plus the overhead)"
#define CLI_BUDGET_HELP_OVERHEAD                                                                              \
    "device bytes the allocator never sees (CUDA context, cuBLAS workspace); default: as measured when the "  \
    "trace was recorded on a GPU (remat run --backend cuda), else default 512 MiB, an estimate"

#define CLI_BUDGET_OPTIONS(bf, budget_help)                                               \
    {"--budget", CLI_SIZE, &(bf).budget, budget_help},                                    \
    {"--budget-on", CLI_STRING, &(bf).on, CLI_BUDGET_HELP_ON},                            \
    {"--device-overhead", CLI_SIZE, &(bf).overhead, CLI_BUDGET_HELP_OVERHEAD}

/* Where the device overhead came from. */
typedef enum cli_overhead_source {
    CLI_OVERHEAD_GIVEN = 0,    /* --device-overhead */
    CLI_OVERHEAD_TRACE = 1,    /* the driver's view recorded in the trace (remat run --backend cuda) */
    CLI_OVERHEAD_ESTIMATE = 2, /* REMAT_DEVICE_OVERHEAD_DEFAULT */
    CLI_OVERHEAD_NONE = 3,     /* 0: the command's default (demo: the CPU) */
} cli_overhead_source;

/* The flags as a budget (total = f->budget, even when not given: -1), the simulator
 * allocator it is compared under, and where the overhead came from: the flag, else
 * REMAT_DEVICE_OVERHEAD_DEFAULT when estimate_default, else 0. Bad --budget-on or
 * --device-overhead: one line on stderr ("remat <cmd>: --budget-on: ..."), returns 2;
 * else 0. */
int remat_cli_budget_from_flags(const char *cmd, const cli_budget_flags *f, int estimate_default, remat_budget *b,
                                remat_alloc_kind *alloc, cli_overhead_source *src);
/* When the overhead is the estimate and the trace recorded the driver's view (a run
 * on a GPU), uses the measured overhead instead (device_total_bytes -
 * device_free_at_init). */
void remat_cli_budget_use_trace(remat_budget *b, cli_overhead_source *src, int64_t device_total_bytes,
                                int64_t device_free_at_init);
/* remat_budget_allocator_bytes, printing its error as "remat <cmd>: ..." (returns 2) or 0. */
int remat_cli_budget_allocator_bytes(const char *cmd, const remat_budget *b, int64_t *out);

/* "budget 8.0 GiB (8589934592 B) on peak reserved bytes (caching allocator model) + device overhead
 *  512.0 MiB (default estimate; --device-overhead): 7.5 GiB (...) for the allocator" */
void remat_cli_budget_print(FILE *f, const remat_budget *b, cli_overhead_source src);
/* "budget":{"total_bytes":..,"on":"reserved","device_overhead_bytes":..,"device_overhead_given":true,
 *           "device_overhead_source":"given|trace|estimate|none","allocator_bytes":..}
 * (total "inf" as null; preceded by a comma when comma). */
void remat_cli_budget_json(FILE *f, int comma, const remat_budget *b, cli_overhead_source src);

/* "peak reserved 48.0 MiB (..), peak live 45.82 MiB (..); on the card 560.0 MiB (..) with the device overhead
 *  512.0 MiB (..)": the peak under b's allocator plus b's overhead. */
void remat_cli_peaks_print(FILE *f, const remat_budget *b, int64_t peak_live, int64_t peak_reserved);

/* The line each answer's header carries: predictions describe remat's own executor. */
void remat_cli_prediction_note(FILE *f, const char *backend_of_times);

/* The line each answer's header carries on what its figures describe: "steady state:
 * the worst of 2 simulated steps (the trace holds 1; ...)", and, when the trace holds
 * one step only, that its step times are a first step's (about 2x a warm step's). */
void remat_cli_steady_note(FILE *f, int simulated_steps, int recorded_steps);
/* "steady_state":true,"simulated_steps":2,"recorded_steps":1,"times_from":"warm steps"|"first step"
 * (preceded by a comma). */
void remat_cli_steady_json(FILE *f, int simulated_steps, int recorded_steps);
/* The steps a simulator under these options simulates for a trace of recorded_steps. */
int remat_cli_simulated_steps(const remat_sim_opts *o, int recorded_steps);

/* How far to trust a predicted step time. The kind of prediction follows from the
 * question: the recorded size without a plan, a plan at the recorded size, a batch (N)
 * other than the recorded one from a trace with or without a probe (remat_trace.probe_ops),
 * or another T; each kind's measured error (bench/exp16_step_predict.py and
 * bench/exp6_prediction.py, docs/benchmarks.md sections 16 and 6) is kept in one table
 * in answer.c. */
int remat_cli_step_trust_kind(int64_t rec_T, int64_t rec_N, int64_t T, int64_t N, int has_plan, int has_probe);
/* The kind of the question simulator s answers (its model against its baseline's). */
int remat_cli_step_trust_kind_sim(const remat_sim *s, int has_plan);
/* One line: "step-time trust       <kind>: such predictions were off by <error> (<where
 * measured>)". */
void remat_cli_step_trust_note(FILE *f, int kind);
/* ,"step_time_trust":{"kind":"...","error":"...","measured_by":"..."} (preceded by a comma). */
void remat_cli_step_trust_json(FILE *f, int kind);

/* " --N 160 --T 10": the size flags of a question (0: not given, left out), for hints. */
const char *remat_cli_size_flags(char *buf, size_t len, int64_t N, int64_t T);
/* The "chosen_for" object a plan file written by search/tune records (core/model/plan.h):
 * by (e.g. "remat search --budget"), the model's T and N, the budget (total -1: none, null),
 * what it is compared with and the device overhead. */
void remat_cli_chosen_for(char *buf, size_t len, const char *by, const remat_model *m, const remat_budget *b);
/* When plan p records what it was chosen for and that differs from the question (model
 * m's T and N; b's budget and overhead when b is not NULL), one warning line on stderr:
 * "remat <cmd>: warning: P.json was chosen for N=160, T=10 (...); this answer is for
 * N=2, T=10". Returns 1 when it warned. */
int remat_cli_plan_question_check(const char *cmd, const remat_plan *p, const remat_model *m, const remat_budget *b);

/* With --allocator-config text that names PyTorch options the caching model does not
 * model (remat_caching_config_parse_notes), one line on stderr naming them:
 * "remat <cmd>: note: --allocator-config: garbage_collection_threshold,
 * roundup_power2_divisions are accepted but not modelled ...". Nothing for NULL text
 * or text that does not parse (the command reports that itself). */
void remat_cli_alloc_config_note(const char *cmd, const char *text);

/* "next: <text>" on stdout (the obvious next step of a command). */
void remat_cli_next(FILE *f, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif
