/* search.h - choosing a plan with the simulator: the greedy levels SNN users know
 * (SpikingJelly memopt levels 0-4) and an exact search under a memory budget.
 *
 * Every candidate plan is evaluated by the simulator (sim/sim.h), never by
 * running the model. "Peak" means the peak of the simulator's allocator
 * (remat_sim_opts.allocator: live bytes for exact, reserved bytes for caching);
 * a budget given here is in those bytes: the command line turns a user's budget
 * into them (sim/budget.h: reserved bytes by default, less the device overhead).
 *
 * Per-block options the searches choose from (remat_search_block_options):
 * stored; or checkpointed with every compressor that validates for the block,
 * every k dividing T (k > 1 only without batch norm), and no split, each single
 * valid split point, or all valid split points together.
 */
#ifndef REMAT_SIM_SEARCH_H
#define REMAT_SIM_SEARCH_H

#include <stdint.h>
#include <stdio.h>

#include "core/model/plan.h"
#include "core/base/status.h"
#include "sim/chain.h"
#include "sim/sim.h"

/* The largest batch size N and number of time steps T that simulate, search and
 * tune rescale a trace to. The work and memory of a search grow with T (measured on
 * the tiny MLP: T = 6000 in 9 s, T = 65536 in 56 s and 0.5 GB, T = 2^20 past 600 s
 * and 7 GB), so larger values are refused up front instead of never finishing. */
#define REMAT_SIM_MAX_N ((int64_t)1 << 20)
#define REMAT_SIM_MAX_T ((int64_t)1 << 16)

#ifdef __cplusplus
extern "C" {
#endif

/* ---- per-block options ------------------------------------------------------ */
typedef struct remat_block_options {
    int n;
    remat_block_plan *v; /* owned; v[0] is the block stored (not checkpointed) */
} remat_block_options;

/* Options of every block of m ([m->n_blocks], free with remat_search_options_free). */
remat_status remat_search_block_options(const remat_model *m, remat_block_options **out, remat_error *err);
void remat_search_options_free(remat_block_options *o, int n_blocks);

/* ---- figures of a plan ------------------------------------------------------ */
typedef struct remat_search_figures {
    int64_t peak;           /* under the simulator's allocator */
    int64_t peak_live, peak_reserved, end_of_forward;
    double time_s;          /* predicted step time */
} remat_search_figures;

/* Sets p on s, runs it, fills f. */
remat_status remat_search_evaluate(remat_sim *s, const remat_plan *p, remat_search_figures *f, remat_error *err);


/* ---- greedy levels ----------------------------------------------------------- */
typedef enum remat_search_preset {
    REMAT_PRESET_SPEED = 0,    /* level 1 checkpoints 50 % of the candidate blocks */
    REMAT_PRESET_BALANCED = 1, /* 75 % */
    REMAT_PRESET_MEMORY = 2,   /* 100 % (the default) */
} remat_search_preset;

/* "speed" / "balanced" / "memory", -1 for anything else. */
int remat_search_preset_from_name(const char *s);

typedef struct remat_search_step {
    int level;
    char what[160];         /* the change tried */
    int64_t peak;
    double time_s;
    int kept;
} remat_search_step;

typedef struct remat_search_log {
    remat_search_step *steps; /* owned */
    int n, cap;
} remat_search_log;

void remat_search_log_free(remat_search_log *l);

/* The most work a --level search may take, in simulated blocks (about blocks x
 * (2 + blocks x candidates per block)); above it the search is refused up front. */
#define REMAT_LEVEL_WORK ((int64_t)1 << 22)

/* Level 0: the empty plan. 1: checkpoint the first 50/75/100 % of the blocks
 * ordered by input size (largest first; ties keep model order), each with the
 * smallest lossless compressor that validates (sizes from the baseline's spike
 * counts). 2: for each checkpointed block, the split set with the lowest peak,
 * kept only if the peak drops. 3: for each checkpointed block, the k > 1 with the
 * lowest peak, kept only if the peak drops. 4: checkpointed blocks in order of
 * predicted forward time, costliest first, restored (stored) where the peak does
 * not rise. Each level starts from the previous one's plan. out gets the plan
 * (for remat_sim_model(s)); log (may be NULL) every step tried. */
remat_status remat_search_greedy(remat_sim *s, int level, remat_search_preset preset, remat_plan *out,
                                 remat_search_figures *fig, remat_search_log *log, remat_error *err);

/* ---- exact search under a budget ---------------------------------------------- */
typedef struct remat_search_point {
    int64_t peak;           /* simulated, under the allocator */
    double time_s;          /* simulated step time */
    int chosen;
    char label[160];
} remat_search_point;

typedef struct remat_search_budget_opts {
    int front_points;       /* most points of the Pareto front (default 24; 0: no front) */
    int check_plans;        /* random plans simulated to check the chain model (default 8) */
    int max_rounds;         /* confirm-and-tighten rounds (default 32) */
    uint64_t seed;          /* for the check plans */
} remat_search_budget_opts;

remat_search_budget_opts remat_search_budget_opts_default(void);

typedef struct remat_search_budget_result {
    int found;
    remat_plan plan;                 /* owned: the chosen plan (found), else the smallest-peak one */
    remat_search_figures fig;        /* its simulated figures */
    remat_search_figures baseline;   /* the empty plan's */
    int64_t min_peak;                /* smallest peak reached (simulated); set when !found */
    remat_search_point *front;       /* owned, [n_front], peak descending */
    int n_front;
    /* every plan the search simulated (check plans, rounds, front points, spans), once
     * each by label, in the order simulated: what `search --pareto` writes and the figure
     * draws as points (the front alone is 2 of ~100 of them) */
    remat_search_point *evaluated;   /* owned, [n_evaluated] */
    int n_evaluated, cap_evaluated;
    /* how the search went */
    int probes;                      /* simulations that measured the chain terms */
    int64_t simulations;             /* all simulations */
    int rounds;                      /* confirm-and-tighten rounds */
    int checked, mismatches;         /* chain model vs full simulation on check plans */
    remat_chain_stats stats;
    int64_t options;                 /* options over all blocks */
    int64_t span_candidates;         /* span plans of the model (remat_search_budget_spans) */
    int64_t span_simulated;          /* of those, simulated (at most REMAT_SPAN_WORK / n_blocks) */
    double seconds;                  /* the whole search, spans included */
} remat_search_budget_result;

/* The least predicted step time whose predicted peak fits budget: a dynamic
 * programme over the chain model (sim/chain.h) whose terms are measured by
 * simulating probe plans; the winner is confirmed by a full simulation and, if
 * that disagrees (the caching allocator's rounding, or a term the chain model
 * misses), the programme's budget is tightened by the excess and it runs again.
 * For the exact allocator the result is the optimum over all plans built from
 * the per-block options (when the chain model check finds no mismatch). */
remat_status remat_search_budget(remat_sim *s, int64_t budget, const remat_search_budget_opts *o,
                                 remat_search_budget_result *out, remat_error *err);
/* Adds a simulated plan (peak, time, plan p of model m) to out->evaluated unless its
 * label is there already. REMAT_ERR_NOMEM when the list cannot grow. */
remat_status remat_search_note_evaluated(remat_search_budget_result *out, const remat_plan *p, const remat_model *m,
                                         const remat_search_figures *f, remat_error *err);
void remat_search_budget_result_free(remat_search_budget_result *r);

/* The front as JSON, the format the plots read (docs/plots.md):
 *   {"points":[{"peak_bytes":..,"time_s":..,"overhead":..,"chosen":true,"label":".."}],
 *    "baseline":{"peak_bytes":..,"time_s":..},"budget_bytes":..}
 * overhead = time_s / baseline time - 1; labels in the plan notation
 * (core/model/plan_notation.h). budget_bytes: the budget the peaks were compared
 * with, in the same bytes (0 or REMAT_SIZE_INF: none, the member is left out).
 * remat_search_write_front writes it to path (through the atomic writer, core/io/atomic_file.h). */
/* What the front is about, written next to the points when meta is not NULL:
 * "model", "T", "N", "peak_on" ("reserved" or "live": what peak_bytes are),
 * "budget_total_bytes" (the budget as given) and "device_overhead_bytes" (budget_bytes
 * is the total less the overhead); the figure names them (plots/pareto.h). */
typedef struct remat_front_meta {
    const char *model;
    int64_t T, N;
    const char *peak_on;            /* NULL: not written */
    int64_t budget_total_bytes;     /* <= 0 or REMAT_SIZE_INF: none */
    int64_t device_overhead_bytes;
} remat_front_meta;

void remat_search_front_json(FILE *f, const remat_search_point *pts, int n, const remat_search_figures *baseline,
                             int64_t budget_bytes, const remat_front_meta *meta);
remat_status remat_search_write_front(const char *path, const remat_search_point *pts, int n,
                                      const remat_search_figures *baseline, int64_t budget_bytes,
                                      const remat_front_meta *meta, remat_error *err);

/* The points a front file holds: every evaluated plan (r->evaluated), the chosen one
 * (the plan r found) marked; r->front when nothing was recorded. *pts is owned by the
 * caller (remat_xfree). */
remat_status remat_search_points_for_file(const remat_search_budget_result *r, const remat_model *m,
                                          remat_search_point **pts, int *n, remat_error *err);

/* The chain model of s's model, measured by probes (exposed for tests and the
 * benchmark). opts: from remat_search_block_options. */
remat_status remat_search_build_chain(remat_sim *s, const remat_block_options *opts, remat_chain *out, int *probes,
                                      remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
