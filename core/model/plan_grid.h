/* plan_grid.h - enumerating valid checkpoint plans of a model (for the determinism
 * tests, the verifier and the search).
 *
 * A block option is one remat_block_plan that remat_plan_validate accepts for that
 * block. The options of a block, in this fixed order:
 *   stored (checkpoint = 0);
 *   then checkpointed, for each compressor in enum order (none, bool, uint8, bit,
 *   sparse) that can represent the segment inputs, for each k dividing T in
 *   ascending order (only k = 1 over batch norm), first without splits, then with
 *   each single split point (each layer of the block after its first, in layer
 *   order; none for a block that ends in `add`).
 *
 * A grid is a list of complete plans. Every plan in a grid passes
 * remat_plan_validate; its `path` holds a label naming what differs from plain
 * backpropagation ("grid:baseline", "grid:b2=ckpt/bit/k2/split:fc2b ..."), its
 * `text` the plan file remat_plan_to_json writes for it. Grids never hold the same
 * plan twice.
 */
#ifndef REMAT_PLAN_GRID_H
#define REMAT_PLAN_GRID_H

#include <stdint.h>

#include "core/model/model.h"
#include "core/model/plan.h"
#include "core/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_plan_grid {
    int n_plans;
    remat_plan *plans; /* owned; free with remat_plan_grid_free */
} remat_plan_grid;

/* Every valid option of block b (order above; options[0] is "stored"). *options is
 * owned by the caller (remat_xfree). REMAT_ERR_INPUT for a bad block index. */
remat_status remat_plan_grid_block_options(const remat_model *m, int b, remat_block_plan **options, int *n,
                                           remat_error *err);

/* Label of option o of block b in the plan notation (core/model/plan_notation.h):
 * "b1:bit/k2/split@lif1", or "no checkpointing" for the stored option. */
const char *remat_plan_grid_option_label(const remat_model *m, int b, const remat_block_plan *o, char *buf,
                                         size_t len);

/* (a) The baseline (plain backpropagation) first, then for each block in order and
 * each of its options other than "stored": that option on that block, every other
 * block stored. */
remat_status remat_plan_grid_one_block(const remat_model *m, remat_plan_grid *out, remat_error *err);

/* (b) For each option shape (checkpointed x compressor x k, no splits), the plan
 * that gives every block that shape where it is valid for that block and stores the
 * others; plans that would repeat an earlier one (or the baseline) are left out. */
remat_status remat_plan_grid_uniform(const remat_model *m, remat_plan_grid *out, remat_error *err);

/* (c) `count` distinct plans drawn uniformly from the full product of the blocks'
 * options with a generator seeded by `seed` (the same seed gives the same plans in
 * the same order). When the product holds no more than `count` plans, the whole
 * product instead, in mixed-radix order (block 0's option varies fastest). */
remat_status remat_plan_grid_random(const remat_model *m, uint64_t seed, int count, remat_plan_grid *out,
                                    remat_error *err);

/* (d) Spans: for each block b and each span s >= 2 that fits, every compressor and k
 * (no splits) valid for the unit of blocks b .. b+s-1, every other block stored.
 * Spans are not block options (a span constrains the blocks it covers), so the
 * other grids and the product leave them out. */
remat_status remat_plan_grid_spans(const remat_model *m, remat_plan_grid *out, remat_error *err);
/* The same with at most max_plans of the candidates (b, s, compressor, k), evenly
 * spaced in that order, an invalid one's pick passed to the next valid candidate
 * (max_plans <= 0: all of them); remat_plan_grid_span_candidates
 * counts the candidates (valid or not): (n_blocks - 1) * n_blocks / 2 spans times the
 * compressors times the divisors of T, which grows as n_blocks^2. */
remat_status remat_plan_grid_spans_sampled(const remat_model *m, int64_t max_plans, remat_plan_grid *out,
                                           remat_error *err);
int64_t remat_plan_grid_span_candidates(const remat_model *m);
/* Number of plans in the full product of the blocks' options, saturating at
 * INT64_MAX. */
int64_t remat_plan_grid_product_size(const remat_model *m, remat_error *err);

void remat_plan_grid_free(remat_plan_grid *g);

#ifdef __cplusplus
}
#endif
#endif
