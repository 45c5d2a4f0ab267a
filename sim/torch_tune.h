/* torch_tune.h - `remat tune` on a recorded PyTorch step: the largest batch size N whose
 * predicted peak live bytes fit a budget, plain and with the search's plan
 * (remat_torch_search, torch_sim.h), from two recordings at two batch sizes
 * (torch_rescale.h).
 *
 * Every allocation of such a step is constant or proportional to N (the check of
 * remat_torch_linear_check), so the bytes live at every point of the step, under any
 * plan, grow with N: "fits" is monotone in N and a doubling then a bisection find the
 * largest N exactly (every smaller N fits). The checkpointed side is exact in the same
 * way when the search is exhaustive (at most REMAT_TORCH_SEARCH_EXHAUSTIVE blocks); a
 * greedy search may pick other plans at other N, so there it is the bisection's answer.
 */
#ifndef REMAT_SIM_TORCH_TUNE_H
#define REMAT_SIM_TORCH_TUNE_H

#include <stdint.h>

#include "core/base/status.h"
#include "core/io/ext_trace.h"
#include "core/model/model.h"
#include "core/model/plan.h"
#include "sim/torch_rescale.h"
#include "sim/torch_sim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_torch_tune_side {
    int64_t value;        /* the largest N that fits; 0: not even N = 1 */
    int at_max;           /* value is the limit: larger N were not tried */
    remat_torch_pred pred;/* at value */
} remat_torch_tune_side;

typedef struct remat_torch_tune_result {
    int64_t max_value;
    remat_torch_tune_side plain, ckpt;
    int have_plan;        /* ckpt.value > 0: plan and model are the checkpointed answer's */
    remat_plan plan;
    remat_model model;    /* the recorded model at N = ckpt.value */
    int64_t probes;       /* batch sizes predicted */
    int64_t evaluated;    /* plans predicted */
} remat_torch_tune_result;

typedef void (*remat_torch_tune_progress)(void *ctx, int64_t N, int checkpointed, int64_t probes);

/* t: a trace of L's check (rewritten at each N tried; left at an unspecified N). max_n 0:
 * REMAT_SIM_MAX_N. Free out with remat_torch_tune_free. */
remat_status remat_torch_tune(remat_ext_trace *t, const remat_torch_linear *L, int64_t budget, int64_t max_n,
                              remat_torch_exec how, const char *origin, remat_torch_tune_progress progress,
                              void *progress_ctx, remat_torch_tune_result *out, remat_error *err);
void remat_torch_tune_free(remat_torch_tune_result *r);

#ifdef __cplusplus
}
#endif
#endif
