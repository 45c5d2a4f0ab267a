/* mem.c - tensor placement through the shared allocator models, and trace events. */
#include "core/exec/mem.h"

#include <string.h>

#include "core/base/grow.h"
#include "core/base/status.h"

remat_status remat_mem_init(remat_mem *m, remat_backend *be, const remat_caching_config *cfg, remat_trace *trace,
                            remat_error *err) {
    memset(m, 0, sizeof *m);
    m->be = be;
    m->trace = trace;
    m->exact = remat_alloc_model_init(REMAT_ALLOC_EXACT, NULL, err);
    if (!m->exact) return err ? err->status : REMAT_ERR_NOMEM;
    m->caching = remat_alloc_model_init(REMAT_ALLOC_CACHING, cfg, err);
    if (!m->caching) {
        remat_alloc_model_free(m->exact);
        m->exact = NULL;
        return err ? err->status : REMAT_ERR_NOMEM;
    }
    return REMAT_OK;
}

static void release_segment(void *ctx, int64_t seg) {
    remat_mem *m = ctx;
    if (seg < m->n_seg && m->seg_base[seg]) {
        m->be->ops->segment_free(m->be->ctx, m->seg_base[seg]);
        m->seg_base[seg] = NULL;
    }
}

void remat_mem_free(remat_mem *m) {
    if (m->caching) remat_alloc_model_empty_cache(m->caching, release_segment, m);
    for (int64_t i = 0; i < m->n_seg; i++) release_segment(m, i);
    remat_xfree(m->seg_base);
    remat_alloc_model_free(m->caching);
    remat_alloc_model_free(m->exact);
    memset(m, 0, sizeof *m);
}

void remat_tensor_describe(remat_tensor *t, remat_encoding enc, remat_role role, int layer, int block, int ndim,
                           const int64_t *dims, int time_dim, int batch_dim, int64_t nnz) {
    memset(t, 0, sizeof *t);
    t->id = -1;
    t->event = -1;
    t->enc = (uint8_t)enc;
    t->role = (uint8_t)role;
    t->layer = layer;
    t->block = block;
    t->ndim = (int8_t)ndim;
    t->time_dim = (int8_t)time_dim;
    t->batch_dim = (int8_t)batch_dim;
    int64_t elems = 1;
    for (int i = 0; i < 4; i++) {
        t->dims[i] = i < ndim ? dims[i] : 1;
        elems *= t->dims[i];
    }
    t->elems = elems;
    t->bytes = remat_encoding_bytes(enc, elems, nnz);
}

static remat_status trace_event(remat_mem *m, remat_tensor *t, remat_event_kind kind, remat_error *err) {
    m->events++;
    if (!m->trace) return REMAT_OK;
    remat_event e;
    memset(&e, 0, sizeof e);
    e.time_s = m->now_s;
    e.tensor = t->id;
    e.bytes = t->bytes;
    memcpy(e.dims, t->dims, sizeof e.dims);
    e.nnz = -1;
    e.layer = t->layer;
    e.block = t->block;
    e.iter = m->iter;
    e.kind = (uint8_t)kind;
    e.phase = (uint8_t)m->phase;
    e.role = t->role;
    e.enc = t->enc;
    e.ndim = t->ndim;
    e.time_dim = t->time_dim;
    e.batch_dim = t->batch_dim;
    int64_t idx = remat_trace_add_event(m->trace, &e, err);
    if (idx < 0) return err ? err->status : REMAT_ERR_NOMEM;
    if (kind == REMAT_EVENT_ALLOC) t->event = idx;
    return REMAT_OK;
}

static remat_status grow_segments(remat_mem *m, int64_t seg, remat_error *err) {
    int64_t old = m->cap_seg;
    if (remat_grow((void **)&m->seg_base, &m->cap_seg, seg + 1, sizeof *m->seg_base, 64, INT64_MAX, err))
        return REMAT_ERR_NOMEM;
    memset(m->seg_base + old, 0, (size_t)(m->cap_seg - old) * sizeof *m->seg_base);
    return REMAT_OK;
}

remat_status remat_mem_alloc(remat_mem *m, remat_tensor *t, remat_error *err) {
    if (t->bytes < 0) return remat_error_set(err, REMAT_ERR_INTERNAL, "tensor of negative size (layer %d)", t->layer);
    t->id = m->next_id++;
    t->ptr = NULL;
    remat_alloc_result r;
    remat_status st = remat_alloc_model_alloc(m->exact, t->id, t->bytes, &r, err);
    if (st != REMAT_OK) return st;
    st = remat_alloc_model_alloc(m->caching, t->id, t->bytes, &r, err);
    if (st != REMAT_OK) return st;
    if (t->bytes > 0) {
        if (grow_segments(m, r.segment, err) != REMAT_OK) return REMAT_ERR_NOMEM;
        if (r.new_segment_bytes > 0) {
            if (m->seg_base[r.segment]) {
                return remat_error_set(err, REMAT_ERR_INTERNAL,
                                       "segment %lld grew in place: expandable segments are simulated only",
                                       (long long)r.segment);
            }
            st = m->be->ops->segment_alloc(m->be->ctx, r.new_segment_bytes,
                                           &m->seg_base[r.segment], err);
            if (st != REMAT_OK) return st;
            if (r.segment >= m->n_seg) m->n_seg = r.segment + 1;
        }
        if (m->seg_base[r.segment]) t->ptr = (char *)m->seg_base[r.segment] + r.offset;
    }
    return trace_event(m, t, REMAT_EVENT_ALLOC, err);
}

remat_status remat_mem_release(remat_mem *m, remat_tensor *t, remat_error *err) {
    if (t->id < 0) return REMAT_OK;
    remat_status st = remat_alloc_model_release(m->exact, t->id, err);
    if (st == REMAT_OK) st = remat_alloc_model_release(m->caching, t->id, err);
    if (st != REMAT_OK) return st;
    st = trace_event(m, t, REMAT_EVENT_FREE, err);
    t->id = -1;
    t->ptr = NULL;
    return st;
}

void remat_mem_set_nnz(remat_mem *m, const remat_tensor *t, int64_t nnz) {
    if (m->trace && t->event >= 0 && t->event < m->trace->n_events) m->trace->events[t->event].nnz = nnz;
}
