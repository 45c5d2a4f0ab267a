/* executor.h - runs training steps of a model under a checkpoint plan on a backend,
 * placing every tensor through the allocator models and recording the trace.
 *
 *   remat_backend be;  remat_backend_ref_init(&be, 1, &err);
 *   remat_exec_opts o = remat_exec_opts_default();
 *   o.seed = 1; o.trace = &trace;                       // trace optional
 *   remat_session *s = remat_session_init(&model, &plan, &be, &o, &err);
 *   remat_step_result r;
 *   remat_session_step(s, 1, &r, &err);                 // 1: apply the optimiser
 *   printf("loss %g peak %lld\n", r.loss, (long long)r.peak_live_bytes);
 *   remat_session_free(s);
 *
 * Schedule (what the simulator reproduces by running this same code on the dry
 * backend; docs/executor.md walks through it):
 *  - init: parameters and their gradients (zeroed) are allocated once; optimiser
 *    state lazily at the first update.
 *  - a step frees the previous step's batch and input gradient, allocates the batch,
 *    runs forward segment by segment, the loss, backward segment by segment in
 *    reverse, then (optionally) the optimiser.
 *  - a stored segment keeps what its layers' backward needs (linear: its input;
 *    if/lif: the potential h; batchnorm: its input, mean, rstd); a checkpointed
 *    segment keeps only its (compressed) input and, with k chunks, the neuron state
 *    at each chunk boundary; its forward runs chunk by chunk without keeping internals.
 *  - backward of a checkpointed segment: decompress, then for each chunk from last to
 *    first: restore the boundary state, recompute the chunk keeping internals, run its
 *    backward (neuron gradients carried to the previous chunk).
 */
#ifndef REMAT_EXECUTOR_H
#define REMAT_EXECUTOR_H

#include <stdint.h>

#include "core/alloc/alloc_model.h"
#include "core/exec/backend.h"
#include "core/exec/reduce.h"
#include "core/model/model.h"
#include "core/model/plan.h"
#include "core/base/status.h"
#include "core/io/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Deliberate contract breaks, for tests that prove `remat verify` catches them. */
typedef enum remat_fault {
    REMAT_FAULT_NONE = 0,
    REMAT_FAULT_REORDER_WGRAD,    /* chunked segments: chunks' backward in ascending order */
    REMAT_FAULT_REDRAW_DROPOUT,   /* recompute draws dropout masks with another key */
    REMAT_FAULT_BN_DOUBLE_UPDATE, /* recompute updates batch-norm running statistics again */
    REMAT_FAULT_LOSSY_COMPRESS,   /* decompression flips one element */
} remat_fault;

typedef struct remat_exec_opts {
    uint64_t seed;
    remat_caching_config caching; /* the caching model that places tensors */
    remat_trace *trace;           /* NULL: record nothing (peaks are still measured) */
    remat_fault fault;
    /* 1: after every compression, decompress into scratch memory (not traced) and
     * compare bit patterns with the original (remat verify's losslessness check). */
    int check_compression;
    /* 1: do not compute the gradient of the network input (what a training loop
     * needs: data has no gradient). Saves its [T, N, C] buffer and, when the first
     * layer is linear, its input-gradient GEMM. remat_session_get_input_grad then
     * fails; dumps and verify always compute it. Recorded in the trace. */
    int no_input_grad;
    /* Data parallelism (reduce.h, docs/determinism.md "Data parallelism"): NULL runs
     * the single-process step. Otherwise the model's N is this rank's share
     * (remat_shard_local_n), every sum over samples runs block by block in the fixed
     * order and its blocks are combined over the shard's transport; the shard must
     * outlive the session. The reference and dry backends only. */
    const remat_shard *shard;
    /* NULL: parameters start seeded (U(-g/sqrt(fan_in), g/sqrt(fan_in)), batch norm 1/0/0/1).
     * Else n_layers * REMAT_MAX_LAYER_PARAMS pointers, [layer * REMAT_MAX_LAYER_PARAMS + param]:
     * that parameter's initial values (remat_layer_param_elems floats), NULL keeping the seeded
     * one (`--init`, core/model/weights.h). Copied at session init; the arrays may be freed after. */
    const float *const *init_values;
    /* Simulation hooks (dry backend). op_cost != NULL makes time virtual: each op
     * lasts op_cost(hook_ctx, op) seconds. nnz_oracle gives the non-zeros of the
     * full-T output of `layer` (-1: the network input) at step `iter`, which the dry
     * backend cannot count; it decides the size of sparse-compressed inputs. */
    double (*op_cost)(void *hook_ctx, const remat_op_record *op);
    int64_t (*nnz_oracle)(void *hook_ctx, int iter, int layer, int64_t elems);
    void *hook_ctx;
} remat_exec_opts;

remat_exec_opts remat_exec_opts_default(void);

typedef struct remat_step_result {
    double loss;
    int64_t peak_live_bytes;       /* exact model, this step */
    int64_t peak_reserved_bytes;   /* caching model, this step */
    int64_t peak_allocated_bytes;  /* caching model: rounded blocks in use */
    int64_t end_of_forward_bytes;  /* live bytes after the loss forward */
    int64_t end_of_forward_reserved;
    double step_time_s;
    int64_t events;                /* allocation events of this step */
    int recomputed_layers;         /* layer forwards re-run in backward (counting each chunk once per layer) */
    int recomputed_layer_set;      /* distinct layers recomputed */
    int64_t compressed_bytes;      /* bytes of compressed inputs held at the end of forward */
    int64_t compressions;          /* segment inputs compressed this step */
    int64_t compressions_checked;  /* of those, decompressed and compared (check_compression) */
    int64_t compression_mismatches;/* compared and not bit-identical */
} remat_step_result;

typedef struct remat_session remat_session;

/* Validates the plan against the model, builds the schedule, allocates and
 * initialises parameters (seeded). The session keeps pointers to m, p, b: they
 * must outlive it. NULL on failure with err set. */
remat_session *remat_session_init(const remat_model *m, const remat_plan *p, remat_backend *b,
                                  const remat_exec_opts *o, remat_error *err);
/* One training step. apply_optimizer = 0 leaves parameters as they were (dumps). */
remat_status remat_session_step(remat_session *s, int apply_optimizer, remat_step_result *out, remat_error *err);
/* Frees every tensor and segment; writes the last frees to the trace. */
void remat_session_free(remat_session *s);

/* Host copies of the state after the last step (elements as remat_layer_param_elems). */
remat_status remat_session_get_param(remat_session *s, int layer, int param, float *dst, remat_error *err);
remat_status remat_session_get_grad(remat_session *s, int layer, int param, float *dst, remat_error *err);
/* [T, N, in_features] and [N] */
remat_status remat_session_get_input(remat_session *s, float *dst, remat_error *err);
remat_status remat_session_get_labels(remat_session *s, int32_t *dst, remat_error *err);
remat_status remat_session_get_input_grad(remat_session *s, float *dst, remat_error *err);
/* [N, F] mask of a dropout layer at the last step: 0 or 1/(1-p). In a data-parallel
 * session (o.shard) N is the global batch (every rank can draw every sample's mask). */
remat_status remat_session_get_dropout_mask(remat_session *s, int layer, float *dst, remat_error *err);
/* Number of steps run so far. */
int remat_session_iter(const remat_session *s);

/* Convenience: init, `iters` steps (optimiser on), free. Fills one result per step. */
remat_status remat_exec_run(const remat_model *m, const remat_plan *p, remat_backend *b, const remat_exec_opts *o,
                            int iters, remat_step_result *results, remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
