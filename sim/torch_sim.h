/* torch_sim.h - predicting the peak of a recorded PyTorch training step under a
 * checkpoint plan (the step recorded by `remat_torch.record`, core/io/ext_record.h),
 * as `remat_torch.apply_plan` executes it.
 *
 *   remat_ext_trace t;  remat_ext_trace_read_h5("step.h5", &t, &err);   // t.record set
 *   remat_model m;      remat_torch_sim_model(&t, "step.h5", &m, &err); // the recorded model file
 *   remat_torch_pred r; remat_torch_sim_run(&t, &m, &plan, "step.h5", &r, &err);
 *
 * The model (docs/pytorch-record.md): the last recorded step's allocations and frees, in
 * their recorded order, with these changes for each checkpointed unit (a block, a span of
 * blocks, or one segment of a split block). Common to both executors:
 *  1. the unit's forward keeps nothing for autograd: a storage that autograd saved only
 *     for modules running inside it ends where the recording's probe (one more forward
 *     in which autograd saved nothing) ended it, or at the forward's end without a
 *     probe; storages no module saved (a neuron's state, the unit's output) keep their
 *     recorded lifetime;
 *  2. the unit's input: kept until the unit's backward ends; with a compressor, a
 *     compressed copy (bit: ceil(e/8) B, bool and uint8: e B, sparse: 4 B per non-zero,
 *     for e elements) from the
 *     forward's start, and the full input, when only the unit saved it, ends at the
 *     forward's end; compressing and decompressing make the temporaries the recording's
 *     compressor probe made for that input (without the probe: none);
 *  3. when the gradient of the unit's output arrives, its forward's allocations are
 *     replayed in their recorded order (with a compressor, after a decompressed input
 *     of the input's bytes): a replayed storage freed inside the forward is freed at
 *     the same point of the replay; one that autograd saved lives until its recorded
 *     free inside the unit's backward (the same saved-tensor release);
 *  4. temporaries inside an op, and everything outside the units, as recorded.
 * REMAT_TORCH_APPLY_PLAN (remat_torch.apply_plan, an autograd Function per segment):
 * the Function's context keeps the RNG state (rng_state_bytes) and the compressed input
 * until the autograd graph is freed (the step's end); its backward holds the output's
 * gradient, the batch-norm statistics it restores (bn_buffer_bytes, one allocation per
 * buffer), a second RNG state, and the recomputed output, neuron state and graph to its
 * end; the neurons' state of the forward stays alive (it is put back afterwards).
 * REMAT_TORCH_NONREENTRANT: no RNG state; the neurons' state ends when the
 * recomputation starts and the recomputed one lives on; a storage saved only for a part
 * of the graph that no gradient reaches ends in the replay where the probe ended it; the
 * output ends with the replay.
 * Time chunks (k > 1, apply_plan only): the unit's forward and backward are read from the
 * recording's chunk probe for k (the network run as one apply_plan segment of k chunks,
 * marked at each chunk), as torch_sim.c's "time chunks" section says.
 * Refused, with the reason: time chunks without the chunk probe for that k (recorded
 * without the model file, or with chunks= excluding it) or under torch-nonreentrant,
 * the sparse compressor where the recording did not count the input's non-zeros (it
 * counts them, 4 B each, for every model layer and block), a unit whose first or last
 * layer has no module in the recording, a module run twice in a step.
 */
#ifndef REMAT_SIM_TORCH_SIM_H
#define REMAT_SIM_TORCH_SIM_H

#include <stdint.h>

#include "core/alloc/alloc_model.h"
#include "core/base/status.h"
#include "core/io/ext_trace.h"
#include "core/model/model.h"
#include "core/model/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_torch_pred {
    int step;                        /* the recorded step predicted (the last one) */
    int64_t peak_live_bytes;         /* predicted, under the plan */
    int64_t recorded_peak_live_bytes;/* the recorded step, plain */
    int64_t end_of_forward_bytes;    /* live when the loss starts, under the plan */
    int64_t live_at_start;           /* live when the step starts */
    int64_t compressed_bytes;        /* compressed inputs held at the end of forward */
    int64_t replayed_allocations;    /* allocations replayed by recomputation */
    int64_t replayed_bytes;          /* their bytes: the search's measure of recomputation */
    int64_t events;                  /* allocation events of the predicted step */
    int units;                       /* checkpointed units */
    int64_t peak_event;              /* recorded event at (or just before) the predicted peak */
    int peak_unit_layer;             /* the peak is in the recomputation of the unit starting at this layer; -1 */
    int64_t probe_mismatches;        /* units whose probe forward allocated otherwise (rule 1 without it) */
} remat_torch_pred;

/* The model file text the trace was recorded with, parsed (origin names the trace).
 * REMAT_ERR_INPUT when the trace has none ("recorded without a model file"). */
remat_status remat_torch_sim_model(const remat_ext_trace *t, const char *origin, remat_model *out, remat_error *err);

/* How the checkpointed units are executed. */
typedef enum remat_torch_exec {
    REMAT_TORCH_APPLY_PLAN = 0,   /* remat_torch.apply_plan: an autograd Function per segment (see above) */
    REMAT_TORCH_NONREENTRANT = 1, /* torch.utils.checkpoint(use_reentrant=False, preserve_rng_state=False), the
                                     unit's neurons reset before each run */
    REMAT_TORCH_EXEC_COUNT
} remat_torch_exec;
/* "apply_plan" / "torch-nonreentrant"; -1 for anything else. */
int remat_torch_exec_from_name(const char *s);
const char *remat_torch_exec_name(remat_torch_exec e);
/* What an answer describes, e.g. "remat_torch.apply_plan". */
const char *remat_torch_exec_label(remat_torch_exec e);

/* Predicts the last recorded step under plan p (NULL: plain) executed by `how`. m must be
 * the trace's model (remat_torch_sim_model) and p validated against it. */
remat_status remat_torch_sim_run(const remat_ext_trace *t, const remat_model *m, const remat_plan *p,
                                 remat_torch_exec how, const char *origin, remat_torch_pred *out, remat_error *err);

/* The predicted step's reserved bytes under PyTorch's CUDA caching allocator (the model of
 * core/alloc/alloc_model.h): the predicted step's allocations and frees (requested bytes,
 * in their predicted order) replayed through the model under cfg (NULL: PyTorch's
 * defaults) from a fresh cache at the step's start, in which the storages live then are
 * allocated first in the order they were allocated: those older than the recording
 * first (one block each for those the recording frees, in the order it frees them, then
 * the rest of live_before_bytes, parameters, buffers and the batch, as one block, whose
 * real layout the recording does not have). The earlier steps are not replayed (the
 * recording ran them plainly, not under the plan). A CPU recording sees no cuDNN or
 * cuBLAS workspace: these are the bytes the caching allocator would reserve for the same
 * requests, not a GPU run's. */
typedef struct remat_torch_reserved {
    int64_t peak_reserved_bytes;     /* the predicted step's peak */
    int64_t peak_allocated_bytes;    /* its peak of block bytes (requests rounded) */
    int64_t reserved_at_start;       /* segments when the step starts (earlier steps', the older storages') */
    int64_t end_of_forward_reserved; /* when the loss starts */
    int64_t segments;                /* segments at the step's end */
    char config[512];                /* the settings replayed (remat_caching_config_format) */
} remat_torch_reserved;
/* remat_torch_sim_run, also replaying its stream through the caching model into *res. */
remat_status remat_torch_sim_run_caching(const remat_ext_trace *t, const remat_model *m, const remat_plan *p,
                                         remat_torch_exec how, const remat_caching_config *cfg, const char *origin,
                                         remat_torch_pred *out, remat_torch_reserved *res, remat_error *err);

/* The search on a recorded step (`remat search --trace step.h5 --budget B`): among the
 * plans that store or checkpoint each whole block (checkpointed: plain, or with the bit
 * compressor where the block's input holds spikes; every combination when the model has
 * at most REMAT_TORCH_SEARCH_EXHAUSTIVE blocks, else greedily, the choice that lowers the
 * peak most per replayed byte first), the one whose predicted peak live bytes fit
 * `budget` with the fewest replayed bytes (the recording times no kernels: recomputed
 * bytes stand in for recomputed time), ties to the lower peak. found 0 when none fits;
 * the plan is then the lowest-peak one evaluated. Free out->plan with remat_plan_free. */
#define REMAT_TORCH_SEARCH_EXHAUSTIVE 7
typedef struct remat_torch_search_result {
    int found;
    remat_plan plan;
    remat_torch_pred pred, plain;
    int64_t evaluated;
} remat_torch_search_result;
remat_status remat_torch_search(const remat_ext_trace *t, const remat_model *m, int64_t budget, remat_torch_exec how,
                                const char *origin, remat_torch_search_result *out, remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
