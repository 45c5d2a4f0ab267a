/* span_search.h - checkpointing along time in the budget search.
 *
 * The dynamic programme of remat_search_budget chooses one option per block; a
 * span (plan.h: several blocks as one checkpointed unit, chunked along time across
 * all their layers) is not a per-block option, because it fixes the blocks it
 * covers. remat_search_budget_spans runs remat_search_budget, then simulates the
 * span plans of the model (up to the REMAT_SPAN_WORK bound below) (core/model/plan_grid.h: each start block, span length,
 * compressor and k, other blocks stored), adds them to the Pareto front, and
 * takes the fastest span plan that fits when it beats the programme's choice (or
 * when the programme found none). Combinations of a span with per-block options
 * on the blocks outside it are not searched.
 */
#ifndef REMAT_SIM_SPAN_SEARCH_H
#define REMAT_SIM_SPAN_SEARCH_H

#include "sim/search.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The work the span plans may take, in simulated blocks: each span plan is one
 * simulation of every block, and a model of n blocks has about 7.5 n^2 of them
 * (n^2 / 2 spans times 5 compressors times the divisors of T), so a chain of 128
 * blocks took 105 s and 1.4 GB. At most max(64, REMAT_SPAN_WORK / n_blocks) span
 * plans are simulated, evenly spaced over the candidates (every one on the shipped
 * models); the search's summary says how many of how many. */
#define REMAT_SPAN_WORK ((int64_t)1 << 17)

/* As remat_search_budget, plus span plans (above). out->simulations counts them,
 * out->seconds covers both. */
remat_status remat_search_budget_spans(remat_sim *s, int64_t budget, const remat_search_budget_opts *o,
                                       remat_search_budget_result *out, remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
