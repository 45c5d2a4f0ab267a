/* trace.h - the record of a run: one event per allocation and free, one record
 * per executed op, and the run's metadata. Held in memory as flat growable
 * arrays; written to and read from HDF5 (trace_h5.c, schema in docs/trace-schema.md).
 *
 * Rescaling information: each alloc event carries the tensor's shape (up to 4 dims),
 * which of them is the time extent and which the batch extent (-1 if none), its
 * encoding, and for spike/integer tensors the number of non-zeros, so that a reader
 * can recompute the bytes for another T or N.
 */
#ifndef REMAT_TRACE_H
#define REMAT_TRACE_H

#include <stdint.h>

#include "core/base/status.h"
#include "core/base/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_TRACE_SCHEMA_VERSION 1
/* remat_version of a trace file that does not record it (remat 0.3.0 and earlier) */
#define REMAT_TRACE_VERSION_UNRECORDED "0.3.0 or earlier"
/* The T and N a trace may hold: a model's own limits (core/model/model_json.c). */
#define REMAT_TRACE_MAX_T ((int64_t)1 << 20)
#define REMAT_TRACE_MAX_N ((int64_t)1 << 24)
/* The largest tensor a trace may describe, in elements and in bytes: the model
 * loader refuses any tensor of 1 TiB or more, so a larger one is a damaged file. */
#define REMAT_TRACE_MAX_TENSOR ((int64_t)1 << 40)

typedef enum remat_event_kind { REMAT_EVENT_ALLOC = 0, REMAT_EVENT_FREE = 1 } remat_event_kind;

typedef struct remat_event {
    double time_s;      /* seconds since the run started (the backend's clock) */
    int64_t tensor;     /* tensor id, unique within the run, dense from 0 */
    int64_t bytes;      /* requested bytes (a free repeats its alloc's bytes) */
    int64_t dims[4];    /* shape; unused trailing dims are 1 */
    int64_t nnz;        /* non-zero elements of a spike/integer full-T tensor, else -1 */
    int32_t layer;      /* model layer index, -1 when none */
    int32_t block;      /* model block index, -1 when none */
    int32_t iter;       /* training step, from 0 */
    uint8_t kind;       /* remat_event_kind */
    uint8_t phase;      /* remat_phase */
    uint8_t role;       /* remat_role */
    uint8_t enc;        /* remat_encoding */
    int8_t ndim;
    int8_t time_dim;    /* index into dims of the time extent, -1 if none */
    int8_t batch_dim;   /* index into dims of the batch extent, -1 if none */
    uint8_t pad;
} remat_event;

typedef enum remat_op_kind {
    REMAT_OP_LINEAR_FWD = 0, REMAT_OP_LINEAR_BWD,
    REMAT_OP_NEURON_FWD, REMAT_OP_NEURON_BWD,
    REMAT_OP_BATCHNORM_FWD, REMAT_OP_BATCHNORM_BWD,
    REMAT_OP_ADD_FWD, REMAT_OP_ADD_BWD,
    REMAT_OP_DROPOUT_FWD, REMAT_OP_DROPOUT_BWD,
    REMAT_OP_LOSS_FWD, REMAT_OP_LOSS_BWD,
    REMAT_OP_COMPRESS, REMAT_OP_DECOMPRESS,
    REMAT_OP_OPTIMIZER, REMAT_OP_FILL, REMAT_OP_ZERO, REMAT_OP_COPY,
    REMAT_OP_CONV_FWD, REMAT_OP_CONV_BWD,
    REMAT_OP_POOL_FWD, REMAT_OP_POOL_BWD,
    REMAT_OP_FLATTEN_FWD, REMAT_OP_FLATTEN_BWD,
    REMAT_OP_COUNT
} remat_op_kind;
const char *remat_op_kind_name(remat_op_kind k);

typedef struct remat_op_record {
    double t_start, t_end; /* seconds since the run started */
    int64_t elems;        /* elements the op touched (rows * features of its main output) */
    int32_t layer, block, iter;
    int32_t t_steps;      /* time steps the op covered (T, or T/k inside a chunk) */
    uint8_t op;           /* remat_op_kind */
    uint8_t phase;        /* remat_phase */
    uint8_t pad[6];
} remat_op_record;

/* Per-iteration summary, as measured by the executor. */
typedef struct remat_iter_summary {
    int64_t peak_live_bytes, peak_reserved_bytes;
    int64_t end_of_forward_bytes;       /* live bytes after the loss forward */
    int64_t end_of_forward_reserved;
    double step_time_s;
    double loss;
    int64_t first_event, n_events;      /* the iteration's slice of events */
} remat_iter_summary;

/* One warm step of the probe (optional group /probe_steps, row i for the probe's iter i):
 * its time and its allocation events, so that the simulator can tell the host time of a
 * step outside its ops, and what an extra allocation event adds to it (sim/sim.c). */
typedef struct remat_probe_step {
    double step_time_s;
    int64_t n_events;
} remat_probe_step;

typedef struct remat_trace {
    int32_t schema_version;
    char *model_text;      /* owned; the model file's text */
    char *plan_text;       /* owned; "" when recorded without a plan */
    char backend[32];
    uint64_t seed;
    int64_t T, N;
    int32_t threads;       /* reference backend threads used */
    int32_t no_input_grad; /* 1: recorded without the network input's gradient (remat_exec_opts) */
    int32_t precision;     /* remat_precision of the recorded model (docs/precision.md) */
    /* a trace of rank 0 of a data-parallel run (`mpirun -np ranks remat run
     * --reduce-blocks reduce_blocks --trace`, docs/mpi.md): T, N and the model are the
     * rank's share (the batch is ranks x N), the events include the reduction's buffers;
     * 0, 0: one process without blocks */
    int32_t ranks, reduce_blocks;
    /* the reference backend's SIMD path the kernels ran on ("scalar", "avx2", "avx512":
     * core/ref/simd.h); "" when not recorded (other backends, older files) */
    char simd[16];
    /* the remat release that wrote the trace (REMAT_VERSION, root attribute
     * remat_version); "" in a trace being recorded (the writer puts this build's),
     * REMAT_TRACE_VERSION_UNRECORDED for a file written before the attribute existed */
    char remat_version[32];
    /* allocator configuration the reserved bytes were measured under */
    char allocator_config[512];
    /* the CUDA driver's view when recorded on a GPU (`remat run --backend cuda`): total
     * device memory and the free memory after the backend's initialisation (context,
     * cuBLAS, remat's own buffers); 0 when not recorded (other backends, older files) */
    int64_t device_total_bytes, device_free_at_init;
    /* measured seconds per element of each compressor (0 when not measured) */
    double compress_s_per_elem[REMAT_COMP_COUNT];
    double decompress_s_per_elem[REMAT_COMP_COUNT];

    remat_event *events; int64_t n_events, cap_events;
    remat_op_record *ops; int64_t n_ops, cap_ops;
    remat_iter_summary *iters; int32_t n_iters, cap_iters;
    /* the probe (optional group /probe_ops): op records of warm steps of the same model
     * at batch probe_N, which `remat run --trace` runs after the recorded steps so that the
     * simulator can tell a per-op cost that grows with the batch from one that does not
     * (sim/op_cost.h); probe_N 0 and no records when not recorded (older files, traces of
     * plans, --probe-N 0). Its ops carry iter 0, 1, ... (the probe's warm steps). */
    int64_t probe_N;
    remat_op_record *probe_ops; int64_t n_probe_ops, cap_probe_ops;
    /* the probe's warm steps, one per iter of probe_ops, in order (none in traces written
     * before the group existed: the simulator then prices the host time as before) */
    remat_probe_step *probe_steps; int64_t n_probe_steps, cap_probe_steps;
} remat_trace;

/* What a trace of remat run describes, for answers and figure titles (a recorded
 * PyTorch step says "PyTorch 1.13.0 on CPU, recorded" instead, ext_record.h): "remat
 * reference backend" (backend "ref", or unknown: the traces before the field) or
 * "remat CUDA backend". */
const char *remat_trace_execution(const char *backend);
void remat_trace_init(remat_trace *t);
void remat_trace_free(remat_trace *t);
/* Appends (amortised O(1)); returns the new element's index or -1 on NOMEM (err set). */
int64_t remat_trace_add_event(remat_trace *t, const remat_event *e, remat_error *err);
int64_t remat_trace_add_op(remat_trace *t, const remat_op_record *r, remat_error *err);
/* 1 when t holds a probe at a batch other than its own (remat_trace.probe_ops). */
int remat_trace_has_probe(const remat_trace *t);
/* Appends a probe op record (remat_trace.probe_ops). */
int64_t remat_trace_add_probe_op(remat_trace *t, const remat_op_record *r, remat_error *err);
/* Appends a probe step (remat_trace.probe_steps). */
int64_t remat_trace_add_probe_step(remat_trace *t, const remat_probe_step *s, remat_error *err);
int32_t remat_trace_add_iter(remat_trace *t, const remat_iter_summary *s, remat_error *err);
remat_status remat_trace_set_texts(remat_trace *t, const char *model_text, const char *plan_text, remat_error *err);

/* HDF5. Writing goes through the atomic writer (core/io/atomic_file.h: a unique
 * temporary, fsynced and renamed), so a failed write leaves no half file. Reading checks the schema version (newer: REMAT_ERR_INPUT naming it),
 * every dataset's presence, type and length, and that events are consistent
 * (each free matches a live alloc). Errors name the file and dataset. */
remat_status remat_trace_write_h5(const remat_trace *t, const char *path, remat_error *err);
/* Reads a trace from the bytes of an HDF5 file in memory (the same checks and
 * messages as a file; origin names it in messages). */
remat_status remat_trace_read_h5_image(const void *data, size_t n, const char *origin, remat_trace *out,
                                       remat_error *err);
remat_status remat_trace_read_h5(const char *path, remat_trace *out, remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
