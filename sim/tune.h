/* tune.h - the largest batch size N (or number of time steps T) whose predicted
 * peak fits a budget, with plain backpropagation and with the best checkpoint
 * plan, found by rescaling one baseline trace (no model runs).
 *
 * A value v fits plainly when the empty plan's predicted peak at v is within
 * the budget; it fits with checkpointing when remat_search_budget finds a plan
 * at v. Live bytes grow with N and T, but reserved bytes do not always: the caching
 * allocator's segment rounding makes them jump (a real VGG run: N=146 reserves more
 * than N=148). The answer is therefore a threshold: the largest value such that every
 * value up to it fits. It is found by doubling (or halving) from the recorded value
 * and bisection, then every value in the window of REMAT_TUNE_WINDOW below the value
 * found is checked (all of them when the value is at most that window; with
 * checkpointing, from the plain threshold up, since those fit plainly); the smallest
 * that does not fit sets the threshold. The REMAT_TUNE_ABOVE values above the
 * threshold are simulated too, and the values above it found to fit are listed.
 * The budget is in the simulator allocator's bytes (sim/budget.h:
 * the command line subtracts the device overhead and picks the allocator).
 */
#ifndef REMAT_SIM_TUNE_H
#define REMAT_SIM_TUNE_H

#include <stdint.h>

#include "core/model/model.h"
#include "core/model/plan.h"
#include "core/io/trace.h"
#include "sim/search.h"
#include "sim/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_tune_opts {
    int dim_T;               /* 0: tune N, 1: tune T */
    int64_t max_value;       /* largest value tried, a count (0: REMAT_SIM_MAX_N or _T, sim/search.h;
                                more is refused) */
    /* sim.ranks > 1 (and sim.reduce_blocks): each rank of a data-parallel run
     * (sim.h); a tuned N is then each rank's share, the batch being ranks x N. */
    remat_sim_opts sim;      /* allocator, config, iterations; the tuned dimension is set by the
                                tuner, the other one (sim.T when tuning N, sim.N when tuning T)
                                is held at the given value (0: as recorded) */
    /* Called before each probe (may be NULL): the value tried, whether with
     * checkpointing, and how many probes ran before it (a probe at T = 2^16 takes
     * seconds, a whole tune a minute or more). */
    void (*progress)(void *ctx, int64_t value, int checkpointed, int probes_done);
    void *progress_ctx;
} remat_tune_opts;

remat_tune_opts remat_tune_opts_default(void);

#define REMAT_TUNE_WINDOW 1024 /* values below the one found, each simulated */
#define REMAT_TUNE_ABOVE 32    /* values above the threshold, each simulated (sizes that fit too) */
#define REMAT_TUNE_MAX_ALSO 8

typedef struct remat_tune_side {
    int64_t value;            /* the threshold: every value 1..value fits (as checked); 0 when 1 does not */
    int at_max;               /* value is the largest value tried (max_value): larger ones may fit too */
    remat_search_figures fig; /* predicted figures at that value */
    int64_t checked_from;     /* every value from here to `value` was simulated (1: all of them); below,
                                 the doubling and bisection probes only */
    /* values above the threshold found to fit: ranges [lo, hi] of consecutive simulated
     * values, ascending (the first REMAT_TUNE_MAX_ALSO of them) */
    int64_t also_lo[REMAT_TUNE_MAX_ALSO], also_hi[REMAT_TUNE_MAX_ALSO];
    int n_also;
    int64_t first_misfit;     /* value + 1 when a value above the threshold was simulated not to fit */
} remat_tune_side;

typedef struct remat_tune_result {
    remat_tune_side plain, ckpt;
    remat_plan plan;          /* owned: the checkpoint plan at ckpt.value (for model) */
    remat_model model;        /* owned: the model rescaled to ckpt.value (when ckpt.value > 0) */
    int have_plan;
    int64_t max_value;        /* the largest value tried */
    int evaluations;          /* values tried */
    double seconds;
} remat_tune_result;

remat_status remat_tune(const remat_trace *base, const remat_tune_opts *o, int64_t budget, remat_tune_result *out,
                        remat_error *err);
void remat_tune_result_free(remat_tune_result *r);

#ifdef __cplusplus
}
#endif
#endif
