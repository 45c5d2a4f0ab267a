/* plan.h - a checkpoint plan: what each block does with its activations.
 *
 * Plan file, documented in docs/model-and-plan-files.md:
 *
 *   {
 *     "model": "mlp-lif",                // optional; checked against the model's name
 *     "blocks": [
 *       {"name": "b1", "checkpoint": true, "compressor": "bit", "k": 4},
 *       {"name": "b2", "checkpoint": true, "splits": ["fc2"]},
 *       {"name": "b3", "checkpoint": true, "k": 8, "span": 2}   // b3 and b4 as one segment
 *     ]
 *   }
 *
 * A checkpointed block keeps only its (compressed) input and, for k > 1, the
 * neuron state at time-chunk boundaries; backward recomputes it one time chunk
 * at a time in reverse. "splits" names layers that start a new segment: each
 * segment is checkpointed on its own (its own saved input, same compressor and k),
 * so backward holds one segment's internals at a time. "span": s > 1 makes this
 * block and the s-1 blocks after it one checkpointed unit (one saved input, time
 * chunks across all their layers, so no full-T activation or gradient lives between
 * them: checkpointing along time with memory ~ sqrt(T) at k ~ sqrt(T)); the covered
 * blocks must not be named themselves. A block the plan does not name is stored as
 * usual. No plan = plain backpropagation.
 */
#ifndef REMAT_PLAN_H
#define REMAT_PLAN_H

#include "core/model/model.h"
#include "core/base/status.h"
#include "core/base/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_MAX_SPLITS 16

typedef struct remat_block_plan {
    int checkpoint;             /* 0: stored, 1: recomputed in backward */
    remat_compressor compressor;/* of each saved segment input; NONE when not checkpointed */
    int k;                      /* number of time chunks, >= 1, divides T */
    int n_splits;
    int splits[REMAT_MAX_SPLITS]; /* layer indices (model-wide) that start a new segment, ascending */
    int span;                   /* blocks (from this one) recomputed as one unit; 0 or 1: this block */
} remat_block_plan;

typedef struct remat_plan {
    int n_blocks;               /* == model->n_blocks */
    remat_block_plan *blocks;   /* owned, one per model block */
    char *text;                 /* the file's text ("" for the empty plan), owned */
    char *path;                 /* owned, "" for the empty plan */
} remat_plan;

/* The plan that checkpoints nothing (plain backpropagation). */
remat_status remat_plan_init_empty(const remat_model *m, remat_plan *out, remat_error *err);
/* Reads and validates a plan against a model: unknown fields, wrong types, a block
 * the model lacks, k < 1 or k not dividing T, k > 1 over batch norm, a compressor on
 * a block that is not checkpointed, bit/bool/sparse on a non-spike segment input,
 * uint8 on a real-valued one, splits that are not inside the block (or its span) or
 * cut an `add` from its block input, a span past the last block, over a block with
 * `add`, or over a block the plan also names. Errors read "<path>: blocks[i].<field>: <expected>". */
remat_status remat_plan_load(const char *path, const remat_model *m, remat_plan *out, remat_error *err);
remat_status remat_plan_parse(const char *text, size_t len, const char *origin, const remat_model *m,
                              remat_plan *out, remat_error *err);
/* Re-checks an in-memory plan (the search builds plans without files). */
remat_status remat_plan_validate(const remat_plan *p, const remat_model *m, const char *origin,
                                 remat_error *err);
/* Serialises the plan as a plan file (JSON text, caller frees with remat_xfree). */
char *remat_plan_to_json(const remat_plan *p, const remat_model *m, remat_error *err);
/* The same with a "chosen_for" member: chosen_for, a JSON object's text (NULL or "":
 * none), written as given: what `remat search`/`remat tune` chose the plan for
 * ({"by": "remat search --budget", "T": 10, "N": 160, "budget_bytes": 8589934592,
 * "budget_on": "reserved", "device_overhead_bytes": 536870912}). The reader accepts
 * those members (numbers; budget_bytes may be null) and ignores their values. */
char *remat_plan_to_json_for(const remat_plan *p, const remat_model *m, const char *chosen_for, remat_error *err);
void remat_plan_free(remat_plan *p);
/* 1 when no block is checkpointed. */
int remat_plan_is_empty(const remat_plan *p);

/* 1 when two block options are the same plan for their block (span 0 and 1 both mean
 * "no span"); remat_plan_equal: every block's. */
int remat_block_plan_equal(const remat_block_plan *a, const remat_block_plan *b);
int remat_plan_equal(const remat_plan *a, const remat_plan *b);

/* 1 when a layer of the segment [first, end) reads an operand from before the
 * segment's input (layer first - 1): *reader is that layer, *source what it reads
 * (a layer index or REMAT_SRC_INPUT). 0 when the segment is self-contained. */
int remat_segment_reads_outside(const remat_model *m, int first, int end, int *reader, int *source);

#ifdef __cplusplus
}
#endif
#endif
