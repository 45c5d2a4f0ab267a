/* sim.h - the simulator's facade: load a baseline trace, apply a plan, run, read
 * the predicted peaks and step time (modelling assumptions: top of sim/sim.c).
 *
 *   remat_trace base;  remat_trace_read_h5("base.h5", &base, &err);
 *   remat_sim_opts o = remat_sim_opts_default();
 *   remat_sim *s = remat_sim_init(&base, &o, &err);        // checks the baseline
 *   remat_sim_set_plan(s, &plan, &err);                    // plan for remat_sim_model(s)
 *   remat_sim_run(s, &err);
 *   const remat_sim_summary *r = remat_sim_results(s);
 *   printf("%lld\n", (long long)r->peak_live_bytes);
 *   remat_sim_free(s);
 *
 * Errors (REMAT_ERR_INPUT, one line naming the trace and the field):
 *  - a trace recorded with a plan ("plan: expected a trace recorded without a plan");
 *  - a trace whose model text does not parse;
 *  - a trace that the executor of this build does not reproduce event for event
 *    when it dry-runs the empty plan (edited, or for another model), when the trace
 *    says this release wrote it. A trace of an earlier release (its remat_version
 *    attribute, or none: 0.3.0 and earlier) whose stream differs is accepted: the
 *    executor changed, while the model, op times, spike counts and calibration the
 *    simulator takes from it still hold; the summary's recorded_by_earlier says so.
 */
#ifndef REMAT_SIM_SIM_H
#define REMAT_SIM_SIM_H

#include <stdint.h>

#include "core/alloc/alloc_model.h"
#include "core/model/model.h"
#include "core/model/plan.h"
#include "core/base/status.h"
#include "core/io/trace.h"
#include "core/exec/reduce.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_sim_opts {
    remat_alloc_kind allocator;   /* which peak remat_sim_peak reports (both are always computed) */
    const char *allocator_config; /* caching config text (remat_caching_config_parse); NULL: the one
                                     the trace was recorded under */
    int64_t T, N;                 /* rescale to this T / N; 0: as recorded */
    int iters;                    /* training steps to simulate; 0: as recorded (at least
                                     REMAT_SIM_STEADY_ITERS with steady) */
    int steady;                   /* 1: describe a run at its steady state: with iters 0, simulate
                                     at least REMAT_SIM_STEADY_ITERS steps, whatever the trace holds */
    int copy_stream;              /* 1: compress/decompress on a copy stream (see sim/des.h) */
    int check_baseline;           /* 1 (default): dry-run the empty plan and compare with the trace */
    const char *origin;           /* name of the trace in messages (its path); NULL: "<trace>" */
    /* Data parallelism (docs/mpi.md): ranks > 1 or reduce_blocks > 1 predict one rank
     * of `mpirun -np ranks remat run --reduce-blocks reduce_blocks` (reduce_blocks 0:
     * as many as ranks) over the batch N: its N/ranks samples plus the reduction's
     * buffers. Every rank holds the same tensors, so one prediction is every rank's.
     * remat_sim_model is then the rank's share. 0: one process, unblocked. */
    int ranks, reduce_blocks;
    /* 1: the ranks train with PyTorch DDP instead: each runs its N/ranks samples
     * without remat's reduction buffers (sim/ddp.h adds DDP's own). */
    int ddp;
} remat_sim_opts;

remat_sim_opts remat_sim_opts_default(void);

/* Steps a run needs before every further step repeats the last one: the first step
 * creates the optimiser state and the caching allocator's segments, and from the
 * second on every step gives the same events and starts from the same free blocks
 * (checked on every shipped model by tests/sim_test.cc, SteadyState*). The worst
 * step of a long run is the worst of these. */
#define REMAT_SIM_STEADY_ITERS 2

typedef struct remat_sim_iter {
    int64_t peak_live_bytes, peak_reserved_bytes, peak_allocated_bytes;
    int64_t end_of_forward_bytes, end_of_forward_reserved;
    double step_time_s;
    int64_t events;
} remat_sim_iter;

typedef struct remat_sim_summary {
    /* maxima over the simulated steps (what `remat run` reports for its steps) */
    int64_t peak_live_bytes, peak_reserved_bytes, peak_allocated_bytes;
    int64_t end_of_forward_bytes, end_of_forward_reserved;
    double step_time_s;           /* mean over the simulated steps */
    int64_t events;               /* allocation events of the simulated steps (as `remat run --json`) */
    int64_t trace_events;         /* events of the predicted trace (initialisation and final frees too) */
    int64_t compressed_bytes;     /* compressed inputs held at the end of forward (max over steps) */
    int recomputed_layers;        /* per step */
    int64_t unpriced_ops;         /* ops no measurement priced (0 s) */
    int64_t estimated_ops;        /* ops priced per element (other shape than measured) */
    int64_t nnz_estimated;        /* spike counts not recorded for that exact tensor (density-scaled or worst case) */
    int64_t delayed_frees;        /* copy stream: frees that waited for it */
    int n_iters;
    const remat_sim_iter *iters;  /* [n_iters], owned by the simulator */
    int steady;                   /* the steps simulated reach the steady state (n_iters >=
                                     REMAT_SIM_STEADY_ITERS) */
    /* non-empty when the baseline was recorded by an earlier release whose executor
     * gave another event stream (accepted: see remat_sim_init), saying which */
    char recorded_by_earlier[640];
} remat_sim_summary;

typedef struct remat_sim remat_sim;

/* Reads the model from base->model_text, checks the trace (see above), builds the
 * op-cost and spike-count tables. base must outlive the simulator. */
remat_sim *remat_sim_init(const remat_trace *base, const remat_sim_opts *o, remat_error *err);
void remat_sim_free(remat_sim *s);

/* The shard simulated (NULL without --ranks / --reduce-blocks). */
const remat_shard *remat_sim_shard(const remat_sim *s);
/* The model simulated (rescaled when T/N were given; a rank's share with a shard) and the recorded one. */
const remat_model *remat_sim_model(const remat_sim *s);
const remat_model *remat_sim_base_model(const remat_sim *s);

/* Copies and validates plan p against remat_sim_model(s). NULL: the empty plan. */
remat_status remat_sim_set_plan(remat_sim *s, const remat_plan *p, remat_error *err);
const remat_plan *remat_sim_plan(const remat_sim *s);

/* Runs the executor on the dry backend under the plan (virtual time from the
 * op-cost model), then the discrete-event replay of its events through the
 * allocator models. */
remat_status remat_sim_run(remat_sim *s, remat_error *err);
const remat_sim_summary *remat_sim_results(const remat_sim *s);
/* The predicted trace of the last run (events, ops, iteration summaries), in
 * the format `remat run --trace` writes; backend "sim". */
const remat_trace *remat_sim_trace(const remat_sim *s);
/* The predicted peak under o.allocator: live (exact) or reserved (caching). */
int64_t remat_sim_peak(const remat_sim *s);

/* Expected firing rates instead of the recorded spike counts (`simulate --rates`):
 * rates[layer + 1] (index 0: the network input; n = model layers + 1 entries) is the
 * fraction of non-zeros of that layer's full-T output, in [0, 1]; a negative entry keeps
 * the recorded count. Only sparse-compressed inputs depend on it. NULL: recorded counts.
 * The array is copied. REMAT_ERR_INPUT on a rate above 1 or a wrong n. */
remat_status remat_sim_set_rates(remat_sim *s, const double *rates, int n, remat_error *err);

/* The spike count the simulator assumes for the full-T output of `layer` (-1: the
 * network input) of `elems` elements at step `iter` (assumption 4 of sim.c). */
int64_t remat_sim_nnz(const remat_sim *s, int iter, int layer, int64_t elems);

/* Measured figures of the baseline: the mean step time of its warm steps (every
 * step after the first, when the trace holds more than one; else its one, cold,
 * step). */
double remat_sim_baseline_step_time(const remat_sim *s);
/* 1 when the op costs come from warm steps (the trace holds two steps or more);
 * 0: from a first step alone, whose times include one-off costs (first touch of
 * memory, caches, thread start-up) and run about 2x the steady state's. */
int remat_sim_times_warm(const remat_sim *s);
/* 1 when the baseline holds a probe at another batch (remat_trace.probe_ops): op costs
 * at another N are then read off the line through the two measured sizes
 * (sim/op_cost.h, rule 1b) instead of scaled by elements alone. */
int remat_sim_has_probe(const remat_sim *s);
/* Seconds of a plain step at the recorded batch outside its ops: a step's time minus the
 * time of its ops (allocations, the batch, host work; sim/op_cost.h), the least of the
 * baseline's best warm step and the probe's plain steps at that batch
 * (remat_trace.probe_steps). */
double remat_sim_host_gap(const remat_sim *s);
/* What an allocation event more adds to it: measured by the probe's checkpointed steps
 * against its plain ones (their least host gaps' difference per event more, within [0,
 * the plain step's average]); without them, the host gap per event of the recorded step
 * (0 when it had none). */
double remat_sim_host_per_event(const remat_sim *s);
/* Seconds outside its ops of predicted step `iter` with `events` allocation events:
 * the host gap, plus the host gap per event for each event more (or fewer) than the
 * recorded step of that index (the last recorded beyond them) had: a plan's extra frees
 * and re-allocations cost host time too. At least 0. */
double remat_sim_host_time(const remat_sim *s, int iter, int64_t events);

/* Reads the trace at path into *trace (which the caller frees with
 * remat_trace_free, after the simulator) and opens a simulator on it; o->origin
 * defaults to path. Errors of the reader (newer schema, truncated or corrupt
 * file) and of remat_sim_init pass through. */
remat_status remat_sim_open(const char *path, const remat_sim_opts *o, remat_trace *trace, remat_sim **out,
                            remat_error *err);

/* "exact" / "caching" -> the kind; -1 for anything else. */
int remat_sim_allocator_from_name(const char *s);

/* Options from command-line values (alloc: "exact"/"caching"; N, T: 0 = as recorded;
 * iters 0: the steady state, see `steady`). REMAT_ERR_INPUT "--allocator: ..." or "--N/--T/--iters: ..." on a bad value. */
remat_status remat_sim_opts_from_flags(const char *alloc, const char *alloc_cfg, int64_t N, int64_t T, int iters,
                                       remat_sim_opts *out, remat_error *err);

/* First difference between two event streams in (kind, bytes, role, phase,
 * block, layer), or -1 when equal (lengths included: the shorter one's length).
 * what (may be NULL, >= 160 bytes) gets a description of the difference. */
int64_t remat_sim_compare_events(const remat_trace *a, const remat_trace *b, char *what, size_t what_len);

#ifdef __cplusplus
}
#endif
#endif
