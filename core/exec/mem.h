/* mem.h - the executor's one allocation path for tensors (private to core/).
 *
 * Every tensor goes through remat_mem_alloc / remat_mem_release, which
 *  - asks the CACHING allocator model where the tensor lives (segment + offset) and
 *    obtains segments from the backend when the model creates one, so real runs
 *    place tensors exactly where the model says;
 *  - keeps the EXACT model in step for live bytes;
 *  - appends one trace event per call (when a trace is attached).
 */
#ifndef REMAT_MEM_H
#define REMAT_MEM_H

#include <stdint.h>

#include "core/alloc/alloc_model.h"
#include "core/exec/backend.h"
#include "core/io/trace.h"
#include "core/base/types.h"

/* Shape and bookkeeping of one tensor; filled by the caller before alloc. */
typedef struct remat_tensor {
    int64_t id;          /* -1: not allocated */
    void *ptr;           /* device pointer (NULL on the dry backend or for 0 bytes) */
    int64_t bytes;
    int64_t elems;
    int64_t dims[4];
    int8_t ndim, time_dim, batch_dim;
    uint8_t role, enc;
    int32_t layer, block;
    int64_t event;       /* index of its alloc event in the trace, -1 when untraced */
} remat_tensor;

typedef struct remat_mem {
    remat_backend *be;
    remat_alloc_model *exact, *caching;
    void **seg_base;
    int64_t n_seg, cap_seg;
    remat_trace *trace;
    int64_t next_id;
    int64_t events;       /* events so far (traced or not) */
    /* context stamped on events */
    int32_t iter;
    remat_phase phase;
    double now_s;         /* time stamped on the next event */
} remat_mem;

remat_status remat_mem_init(remat_mem *m, remat_backend *be, const remat_caching_config *cfg, remat_trace *trace,
                            remat_error *err);
void remat_mem_free(remat_mem *m);

/* Describes a tensor of `enc` with the given dims (ndim <= 4); time_dim/batch_dim
 * index the dims (-1 none); nnz only for sparse. The tensor is not yet allocated. */
void remat_tensor_describe(remat_tensor *t, remat_encoding enc, remat_role role, int layer, int block, int ndim,
                           const int64_t *dims, int time_dim, int batch_dim, int64_t nnz);
/* Allocates t (described). Zero bytes take no memory (ptr NULL) but are traced. */
remat_status remat_mem_alloc(remat_mem *m, remat_tensor *t, remat_error *err);
/* Frees t if allocated (id >= 0) and marks it unallocated. */
remat_status remat_mem_release(remat_mem *m, remat_tensor *t, remat_error *err);
/* Records the non-zero count of a traced tensor. */
void remat_mem_set_nnz(remat_mem *m, const remat_tensor *t, int64_t nnz);

#endif
