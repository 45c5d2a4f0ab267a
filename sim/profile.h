/* profile.h - the chain model's terms (sim/chain.h) read off one predicted trace.
 *
 * A step's events split, by position, into regions: the step's start (up to the
 * first forward event of block 0), the forward of each block (from its first
 * FORWARD event to the next block's), the loss (from the first LOSS event to the
 * first backward event of the last block), the backward of each block (from its
 * first BACKWARD/RECOMPUTE event to the previous block's), and the optimiser
 * (from the first OPTIMIZER event). With L the live bytes before an event and G_b
 * the live bytes when block b's forward starts (G_n when the loss starts):
 *   base = G_0, delta_b = G_{b+1} - G_b,
 *   local_b = max(peak of b's forward, peak of b's backward) - G_b,
 *   tail = peak of the loss - G_n, fixed = max(peak of the start, of the optimiser);
 * time_b = seconds of the ops tagged with block b, plus host_per_event for each event
 * tagged with b (the simulator's host time per allocation event, sim/sim.h),
 * time0 = step time - sum.
 * Under the executor's schedule each block's terms depend on its own option
 * only (the checks in the search confirm it against full simulations).
 */
#ifndef REMAT_SIM_PROFILE_H
#define REMAT_SIM_PROFILE_H

#include "core/base/status.h"
#include "core/io/trace.h"
#include "sim/chain.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_step_profile {
    int n_blocks, n_iters;
    remat_chain_opt *blocks; /* [n_blocks], owned */
    int64_t base[REMAT_CHAIN_MAX_ITERS], tail[REMAT_CHAIN_MAX_ITERS], fixed[REMAT_CHAIN_MAX_ITERS];
    double time0;
} remat_step_profile;

/* Reads the terms of every step of t (at most REMAT_CHAIN_MAX_ITERS steps).
 * step_time[i]: the step's time (NULL: from t->iters); host_per_event: seconds of host
 * time each event of a step adds to it (0: none). REMAT_ERR_INTERNAL when
 * the regions are not where the schedule puts them (a block without forward or
 * backward events, or out of order). */
remat_status remat_profile_trace(const remat_trace *t, int n_blocks, const double *step_time, double host_per_event,
                                 remat_step_profile *out, remat_error *err);
void remat_step_profile_free(remat_step_profile *p);

#ifdef __cplusplus
}
#endif
#endif
