/* sweep.h - one recorded model rescaled along T or N: the peak and step time of plain
 * backpropagation and of a plan at each value, from the simulator.
 *
 * What `remat simulate --sweep` and `remat demo`'s peak-against-T stage share: the
 * simulator rescales the trace to each value (sim/sim.h: remat_sim_opts.T or .N), the
 * baseline (no checkpointing) is evaluated, then the plan a callback builds for the
 * rescaled model. The commands turn the rows into a scaling file (plots/scaling.h).
 */
#ifndef REMAT_SIM_SWEEP_H
#define REMAT_SIM_SWEEP_H

#include <stdint.h>

#include "core/base/status.h"
#include "core/model/plan.h"
#include "sim/search.h"
#include "sim/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_sweep_row {
    int64_t v;                 /* the value of the swept dimension */
    remat_search_figures base; /* plain backpropagation (the empty plan) */
    remat_search_figures plan; /* the callback's plan; zero without one */
    /* one rank of a data-parallel world (remat_sim_opts.ranks, or the world a rank's
     * trace recorded): its ranks, reduction blocks and share of the batch v (or of the
     * fixed N); 0, 0, 0: one process. The figures are then each rank's. */
    int ranks, reduce_blocks;
    int64_t rank_N;
} remat_sweep_row;

/* Builds the plan evaluated at one value, for the rescaled model m (into *out, which
 * the sweep frees). */
typedef remat_status (*remat_sweep_plan_fn)(void *ctx, const remat_model *m, remat_plan *out, remat_error *err);

typedef struct remat_sweep_opts {
    char dim;                  /* 'T' or 'N' */
    const int64_t *vals;       /* [n], as the simulator takes them (positive) */
    int n;
    remat_sweep_plan_fn plan;  /* NULL: the baseline only */
    void *plan_ctx;
    /* called before each value (i from 0), NULL for none */
    void (*progress)(void *ctx, char dim, int64_t v, int i, int n);
    void *progress_ctx;
} remat_sweep_opts;

/* For each value vals[i]: a simulator on trace t with *so and the dimension set to
 * vals[i] (so->check_baseline honoured on the first value only: the check is of the
 * recording, the same at every value), rows[i] = {vals[i], baseline, plan}. *fixed:
 * the other dimension as simulated. Stops at the first failure (err set, rows past it
 * unset). *fixed is the batch, not a rank's share, with ranks. */
remat_status remat_sim_sweep(const remat_trace *t, const remat_sim_opts *so, const remat_sweep_opts *o,
                             remat_sweep_row *rows, int64_t *fixed, remat_error *err);

/* The plan "checkpointing along time" on m: the whole model one span from block 0,
 * k the largest divisor of T not above sqrt(T), uncompressed (the span's input is the
 * batch, alive anyway). Where m refuses time chunks (batch norm), block 0 checkpointed
 * alone (span 1, k 1) and *along_time set to 0; else *along_time is left alone. */
remat_status remat_sweep_plan_along_time(const remat_model *m, remat_plan *out, int *along_time, remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
