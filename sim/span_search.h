/* span_search.h - checkpointing along time in the budget search.
 *
 * The dynamic programme of remat_search_budget chooses one option per block; a
 * span (plan.h: several blocks as one checkpointed unit, chunked along time across
 * all their layers) is not a per-block option, because it fixes the blocks it
 * covers. remat_search_budget_spans runs remat_search_budget, then simulates every
 * span plan of the model (core/model/plan_grid.h: each start block, span length,
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

/* As remat_search_budget, plus span plans (above). out->simulations counts them. */
remat_status remat_search_budget_spans(remat_sim *s, int64_t budget, const remat_search_budget_opts *o,
                                       remat_search_budget_result *out, remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
