/* grid.h - `remat verify --grid`: every valid plan of a model (the full product of
 * the blocks' options, core/model/plan_grid.h), or a seeded random sample of it, each
 * verified against one shared baseline run.
 *
 * The baseline (every block stored) is the reference, so it is never verified
 * against itself: a full grid verifies product - 1 plans. A sample draws K + 1 plans
 * with remat_plan_grid_random and drops the baseline if drawn (keeping K).
 */
#ifndef REMAT_VERIFY_GRID_H
#define REMAT_VERIFY_GRID_H

#include <stdint.h>

#include "core/exec/backend.h"
#include "core/model/model.h"
#include "core/base/status.h"
#include "verify/plan_check.h"
#include "verify/report.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_verify_grid_opts {
    remat_verify_opts v;        /* seed, fault, check_compress for every plan */
    int sample;                 /* 0: every plan; K > 0: a random sample of K (at most the grid's
                                   plans; more than max_plans is refused) */
    uint64_t sample_seed;
    int64_t max_plans;          /* refuse (REMAT_ERR_INPUT) a full grid larger than this; 0: no limit */
    /* Deal the plans: run only those whose place q in the grid's order (the product,
     * then spans; or the sample) has q % slice_n == slice_i. slice_n 0 or 1: all. */
    int slice_i, slice_n;
    /* Called before each plan (may be NULL). */
    void (*progress)(void *ctx, int done, int total, const char *plan);
    void *progress_ctx;
} remat_verify_grid_opts;

remat_verify_grid_opts remat_verify_grid_opts_default(void);

/* Verifies the grid. *rows (caller frees with remat_xfree) gets one row per plan, in
 * grid order; *summary the grid size and times. Returns REMAT_OK when every plan was
 * run (read the rows' failures); an error when something could not run. */
remat_status remat_verify_grid_run(const remat_model *m, remat_backend *b, const remat_verify_grid_opts *o,
                                   remat_verify_grid_row **rows, int *n_rows, remat_verify_grid_summary *summary,
                                   remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
