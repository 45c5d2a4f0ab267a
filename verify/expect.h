/* expect.h - what a plan implies, computed from the plan and the model alone
 * (never from the executor), so that `remat verify` can hold the executor to it.
 *
 * A checkpointed block is cut into segments at its splits; backward re-runs each
 * segment one time chunk at a time, so each layer of a checkpointed segment runs
 * forward again once per time chunk (k times) and a stored block never does.
 */
#ifndef REMAT_VERIFY_EXPECT_H
#define REMAT_VERIFY_EXPECT_H

#include "core/model/model.h"
#include "core/model/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_verify_expect {
    int recomputed_layers;    /* layer forwards re-run in backward, each chunk counted */
    int recomputed_layer_set; /* distinct layers re-run */
    int segments;             /* checkpointed segments (saved inputs) */
    int compressed_segments;  /* ... whose saved input is compressed */
} remat_verify_expect;

/* p must have been validated against m. */
remat_verify_expect remat_verify_expect_plan(const remat_model *m, const remat_plan *p);

#ifdef __cplusplus
}
#endif
#endif
