/* chain.h - the chain model of a training step and exact searches over it.
 *
 * A model is a chain of blocks; each block picks one of its options (stored,
 * checkpointed with a compressor, k, splits). Under the executor's schedule
 * (forward block by block, loss, backward in reverse) the live bytes of a step
 * decompose along the chain (sim/profile.c measures the terms by simulation,
 * and checks the decomposition against full simulations):
 *
 *   H_i  = delta_1(o_1) + ... + delta_i(o_i)       bytes held after block i's forward
 *   peak = max( fixed,
 *               base + max_i ( H_{i-1} + local_i(o_i) ),   forward and backward of block i
 *               base + H_n + tail )                         the loss
 *   time = time0 + sum_i time_i(o_i)
 *
 * per iteration of the step (each term has one value per simulated iteration;
 * they differ only where data decide sizes: sparse compression). The search is
 * exact for this model: a dynamic programme over the blocks whose states are
 * (H per iteration, time), with states that another state matches or beats in
 * every coordinate removed (Pareto pruning). Pruning is safe because every
 * constraint is monotone in H and the objective is additive in time.
 */
#ifndef REMAT_SIM_CHAIN_H
#define REMAT_SIM_CHAIN_H

#include <stdint.h>

#include "core/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_CHAIN_MAX_ITERS 8

typedef struct remat_chain_opt {
    int64_t delta[REMAT_CHAIN_MAX_ITERS]; /* bytes added to the held total by the block's forward */
    int64_t local[REMAT_CHAIN_MAX_ITERS]; /* highest live bytes inside the block (forward or backward)
                                             over base + the held total before it */
    double time;                          /* seconds of the block's ops in one step */
} remat_chain_opt;

typedef struct remat_chain {
    int n_blocks, n_iters;
    int *n_opts;               /* [n_blocks], owned */
    remat_chain_opt **opts;    /* [n_blocks][n_opts[b]], owned */
    int64_t base[REMAT_CHAIN_MAX_ITERS];  /* live bytes when the first block starts */
    int64_t tail[REMAT_CHAIN_MAX_ITERS];  /* highest live bytes of the loss over base + H_n */
    int64_t fixed[REMAT_CHAIN_MAX_ITERS]; /* highest live bytes outside blocks and loss (absolute) */
    double time0;              /* seconds of the step outside the blocks */
} remat_chain;

/* Allocates the option tables (every option zeroed). */
remat_status remat_chain_init(remat_chain *c, int n_blocks, const int *n_opts, int n_iters, remat_error *err);
void remat_chain_free(remat_chain *c);

/* Peak and time of one choice (choice[b] indexes opts[b]). */
int64_t remat_chain_peak(const remat_chain *c, const int *choice, double *time);

typedef struct remat_chain_stats {
    int64_t states;        /* states created over all stages */
    int64_t max_front;     /* largest front at one stage (before thinning) */
    int64_t options_kept;  /* options left after removing dominated ones */
    int64_t thinned;       /* stages whose front was thinned to remat_chain_front_cap */
} remat_chain_stats;

/* The most states the programme keeps over all its stages. The front of a stage
 * grows with the number of blocks before it (measured: 128 blocks of linear+LIF
 * reach 1,794 states, 512 blocks 2,083, and the search solves the programme some
 * 60 times: budget rounds, the smallest peak's bisection, the Pareto front), so
 * each stage keeps at most remat_chain_front_cap(n_blocks) = max(64,
 * REMAT_CHAIN_WORK / n_blocks) states. A larger front is thinned
 * deterministically: the states kept are evenly spaced over the front in its
 * order (H ascending for one iteration, time ascending for several), both ends
 * kept, and for several iterations the state with the least largest H as well.
 * Below the cap nothing changes and the programme is exact; above it the
 * programme's answer is a plan of the model (peak and time as computed) but not
 * always the optimum, and stats->thinned says at how many stages it happened. */
#define REMAT_CHAIN_WORK ((int64_t)1 << 18)
int64_t remat_chain_front_cap(int n_blocks);

/* Least time whose peak <= budget. *found = 0 when none fits (choice untouched).
 * choice gets n_blocks entries; peak/time (may be NULL) the winner's figures. */
remat_status remat_chain_solve(const remat_chain *c, int64_t budget, int *choice, int64_t *peak, double *time,
                               int *found, remat_chain_stats *stats, remat_error *err);

/* Smallest reachable peak, and the fastest choice that reaches it (above the cap
 * of remat_chain_front_cap: the smallest the thinned programme reaches, and a
 * choice that reaches it). */
remat_status remat_chain_min_peak(const remat_chain *c, int *choice, int64_t *peak, double *time,
                                  remat_error *err);

/* The Pareto front of peak against time: points sorted by peak descending (time
 * ascending), from the fastest choice down to the smallest peak. When there are
 * more than max_points breakpoints the budgets are sampled evenly instead.
 * choices: [n_points * n_blocks] owned by the caller (remat_xfree). */
typedef struct remat_chain_point { int64_t peak; double time; } remat_chain_point;
remat_status remat_chain_front(const remat_chain *c, int max_points, remat_chain_point **points, int **choices,
                               int *n_points, remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
