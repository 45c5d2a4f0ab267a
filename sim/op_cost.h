/* op_cost.h - what the simulator knows about time and data from a baseline trace:
 * the predicted duration of every op (from the measured op records and the
 * compressor calibration) and the number of non-zeros of every spike tensor
 * (which decides the size of a sparse-compressed input).
 *
 * Measurements come from the best warm step (the least step time after the first)
 * when the trace holds two steps or more: a first step's op times carry one-off
 * costs, and a measured step time is the best step's too; the probe's from its best
 * step of each batch (the warm step whose ops took least; its steps of one batch are
 * those with the same elements in all).
 *
 * Duration of an op, first rule that applies:
 *  1. same (op kind, layer, phase, elements per time step) measured in the baseline:
 *     the least over that step's records of (duration / t_steps), times t_steps (the
 *     least, not the median: other work on a shared machine only ever adds time); the
 *     probe's best step at the recorded batch instead when the probe ran that batch too
 *     and its best step's ops took less than the recording's (a small step warms over
 *     several steps, more than a recording of three has). Every rate below is such a
 *     least.
 *     RECOMPUTE ops use the FORWARD records of the same op kind and layer.
 *  1b. another size per step, and the trace holds a probe (remat_trace.probe_ops: the
 *     same model at one or more other batches) with the same (op kind, layer, phase):
 *     seconds per time step on the piecewise line through every measured size (the
 *     recording's and each of the probe's), the segment that holds the size or, beyond
 *     the measured sizes, the first or last segment, from its end nearer to the size (a
 *     fixed part, e.g. packing a layer's weights, plus a part per element that can grow
 *     past a size whose tensors leave the caches), times t_steps. Each segment's slope
 *     is kept within [0, its smaller size's seconds per element]: a falling line (noise)
 *     is taken as flat, a steeper than proportional one (a preempted op) as proportional.
 *  2. compress / decompress: the trace's calibration, seconds per element, times elements.
 *  3. same (op kind, layer, phase): seconds per element, times elements
 *     (this is how rescaled N or per-step sizes are priced: cost scales with elements).
 *  4. same (op kind, layer), any phase: seconds per element.
 *  5. same op kind, any layer: seconds per element (compress/decompress
 *     without calibration fall back to copy ops).
 *  6. 0 seconds (counted as unpriced).
 * Ops with no elements use the duration instead of a per-element rate.
 */
#ifndef REMAT_SIM_OP_COST_H
#define REMAT_SIM_OP_COST_H

#include <stdint.h>

#include "core/base/status.h"
#include "core/io/trace.h"
#include "core/base/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum remat_op_cost_rule {
    REMAT_OP_COST_SAME_SHAPE = 0,
    REMAT_OP_COST_AFFINE,
    REMAT_OP_COST_CALIBRATION,
    REMAT_OP_COST_PER_ELEM_PHASE,
    REMAT_OP_COST_PER_ELEM_LAYER,
    REMAT_OP_COST_PER_ELEM_KIND,
    REMAT_OP_COST_UNPRICED,
    REMAT_OP_COST_RULE_COUNT
} remat_op_cost_rule;

typedef struct remat_op_cost_model remat_op_cost_model;

/* The best warm step of base: the least step time from the second on; -1 when it holds
 * one step (every record is used). */
int32_t remat_op_cost_best_step(const remat_trace *base);
/* Builds the tables from base->ops and the calibration. NULL on NOMEM. */
remat_op_cost_model *remat_op_cost_init(const remat_trace *base, remat_error *err);
void remat_op_cost_free(remat_op_cost_model *m);
/* Predicted seconds of op. c: the compressor of the op's block (compress and
 * decompress ops only). rule (may be NULL) gets the rule that priced it. */
double remat_op_cost_predict(const remat_op_cost_model *m, const remat_op_record *op, remat_compressor c,
                             remat_op_cost_rule *rule);
/* The same for an op of a block that the plan checkpoints (checkpointed 1) or not (0,
 * remat_op_cost_predict): a FORWARD, RECOMPUTE or BACKWARD op of a checkpointed block
 * costs the rules' figure times the ratio, at the recorded size, of the same op in the
 * probe's checkpointed steps (remat_trace.probe_ops: every block checkpointed, at the
 * recorded batch) to the plain steps' (a recomputation: to the plain forward), each
 * side the op's least over those steps (the probe's plain steps at the recorded batch;
 * without them, the plain figure at that size), kept within [0.5, 2]: a checkpointed block's forward does not keep its outputs (freed and
 * re-allocated blocks stay warm in the caches: sew-resnet18's forward measured 0.92x to
 * 0.96x of plain by CPU time), and its backward follows a recomputation; 1 when the probe
 * has no checkpointed step or not that op at one size in it. */
double remat_op_cost_predict_in(const remat_op_cost_model *m, const remat_op_record *op, remat_compressor c,
                                int checkpointed, remat_op_cost_rule *rule);

/* Non-zeros of spike/integer tensors, keyed by (iteration, layer), from the
 * baseline's alloc events that carry nnz >= 0 (layer -1: the network input). */
typedef struct remat_nnz_table remat_nnz_table;

remat_nnz_table *remat_nnz_table_init(const remat_trace *base, remat_error *err);
void remat_nnz_table_free(remat_nnz_table *t);
/* nnz of the full-T output of `layer` at step `iter`, a tensor of `elems`
 * elements. *found = 1 (exact) when the baseline recorded a tensor of that size
 * for that (iter, layer); otherwise scaled by density, *found = 2:
 * round(nnz * elems / recorded elems) (rescaled N or T; iterations beyond the
 * recorded ones reuse iter modulo their number). Not recorded at all (e.g. a
 * layer inside a block: the executor counts spikes of segment outputs only):
 * returns elems (the worst case) and *found = 0. */
int64_t remat_nnz_table_lookup(const remat_nnz_table *t, int iter, int layer, int64_t elems, int *found);
/* Number of (iter, layer) entries. */
int64_t remat_nnz_table_size(const remat_nnz_table *t);

#ifdef __cplusplus
}
#endif
#endif
