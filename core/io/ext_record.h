/* ext_record.h - a recorded PyTorch training step (`remat_torch.record`, written by
 * python/remat_torch/record.py): the annotations of version 2 of the external
 * allocation stream (docs/trace-schema.md, "External allocation stream, version 2"),
 * beside the stream itself (device 0's alloc / free_completed events, ext_trace.h).
 *
 *   events[i]   annotates devices[0].events[i]: the storage it allocates or frees
 *               (dense ids from 0; -1: a free of a storage older than the recording),
 *               the training step, phase, module (index into modules) and time step;
 *   marks       points placed exactly in the stream: mark m sits before event
 *               marks[m].event (a position 0..n_events). Kinds below;
 *   modules     one per module of the network (its qualified name is label `label`
 *               of the stream), with the model file's layer and block it is (-1: none).
 *
 * Read by remat_ext_trace_read_h5 (ext_trace.h) when the file has a /record group;
 * remat_ext_record_check refuses a record that does not pair with its stream.
 */
#ifndef REMAT_EXT_RECORD_H
#define REMAT_EXT_RECORD_H

#include <stdint.h>

#include "core/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum remat_rec_mark_kind {
    REMAT_REC_STEP_BEGIN = 0,
    REMAT_REC_STEP_END,
    REMAT_REC_PHASE,      /* module holds the phase that starts here (remat_rec_phase) */
    REMAT_REC_FWD_BEGIN,  /* module's forward starts; storage: its first input's storage */
    REMAT_REC_FWD_END,    /* module's forward returned; storage: its output's storage */
    REMAT_REC_BWD_BEGIN,  /* the gradient of module's output arrived; storage: that gradient's */
    REMAT_REC_BWD_END,    /* the gradient of module's input is complete (only when the input needs one) */
    REMAT_REC_TSTEP_FWD,  /* a multi-step neuron's forward of time step tstep starts */
    REMAT_REC_TSTEP_BWD,  /* the gradient of that step's output arrived */
    REMAT_REC_PACK,       /* autograd saved storage for module (saved_tensors_hooks' pack) */
    REMAT_REC_PROBE_BEGIN,/* after the steps: one more forward and loss in which autograd saves nothing */
    REMAT_REC_PROBE_END,  /* (its step is steps); its module marks say where each storage ends unsaved */
    REMAT_REC_CHUNKS_BEGIN, /* after the probe: a chunk probe for k = tstep time chunks (the network run as one */
    REMAT_REC_CHUNK_BEGIN,  /* apply_plan segment of k chunks); chunk tstep starts (forward: 0..k-1, then */
    REMAT_REC_CHUNK_END,    /* backward: k-1..0) / ends */
    REMAT_REC_CHUNKS_END,
    REMAT_REC_COMP_BEGIN, /* the compressor probe: module's input compressed by compressor tstep */
    REMAT_REC_COMP_MID,   /* (remat_compressor), then decompressed; comp_end's tstep is -1 where the */
    REMAT_REC_COMP_END,   /* compressor refused the values (no comp_mid then) */
    REMAT_REC_MARK_COUNT
} remat_rec_mark_kind;

typedef enum remat_rec_phase {
    REMAT_REC_OTHER = 0, REMAT_REC_FORWARD, REMAT_REC_LOSS, REMAT_REC_BACKWARD, REMAT_REC_OPTIMIZER,
    REMAT_REC_PHASE_COUNT
} remat_rec_phase;

const char *remat_rec_mark_name(int k);
const char *remat_rec_phase_name(int p);

typedef struct remat_rec_event {
    int64_t storage;
    int32_t step, module, tstep; /* -1: none */
    uint8_t phase;
    uint8_t pad[3];
} remat_rec_event;

typedef struct remat_rec_mark {
    int64_t event;    /* position: the mark precedes this event (n_events: after the last) */
    int64_t storage;  /* fwd_begin/fwd_end/pack: the storage id, -1 none or older than the recording */
    int64_t numel;    /* fwd_begin/fwd_end: elements of that tensor, -1 unknown */
    int64_t nnz;      /* fwd_begin of a model layer or block: non-zeros of its input, -1 not counted */
    int32_t module, step, tstep;
    uint8_t kind;
    uint8_t pad[3];
} remat_rec_mark;

typedef struct remat_rec_module {
    int32_t label;    /* its qualified name: label index of the stream */
    int32_t layer;    /* model layer of that name, -1 */
    int32_t block;    /* model block it is or belongs to, -1 */
    uint8_t is_block; /* 1: the module is the block (block's name = the module's name) */
    uint8_t pad[3];
    int64_t bn_buffer_bytes; /* a batch-norm module: bytes of its own buffers (statistics), else 0 */
} remat_rec_module;

typedef struct remat_ext_record {
    remat_rec_event *events; int64_t n_events;
    remat_rec_mark *marks; int64_t n_marks;
    remat_rec_module *modules; int32_t n_modules;
    char *model;            /* the model file's text ("" when recorded without one), owned */
    char execution[256];    /* "PyTorch 1.13.0 on CPU, recorded" */
    char torch_version[64], device[16], loss[64];
    int64_t live_before_bytes; /* storages that existed before recording started */
    int64_t steps, T, N;
    int64_t rng_state_bytes;  /* bytes of torch.get_rng_state() (what a checkpoint keeping the RNG state holds) */
    int64_t n_storages;     /* 1 + the largest storage id */
} remat_ext_record;

void remat_ext_record_free(remat_ext_record *r);

#ifdef __cplusplus
}
#endif
#endif
