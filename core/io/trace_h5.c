/* trace_h5.c - traces in HDF5 (schema: docs/trace-schema.md).
 *
 * Columnar: one 1-D dataset per field under /events, /ops and /iters (dims is
 * [n,4]), the calibration arrays under /calibration, the metadata as root
 * attributes, and the enum names as comma-separated attributes so that a reader
 * needs no remat code. A root attribute content_crc32 covers every dataset and the
 * metadata: a flipped byte that HDF5's own metadata checksums miss is caught there.
 *
 * Reading checks the schema version first, then every dataset's presence, type,
 * rank and length, enum ranges, and that the events replay (each free matches a
 * live alloc of the same bytes). Every failure is one REMAT_ERR_INPUT line naming
 * the file and the dataset.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io/h5_util.h"
#include "core/io/trace.h"
#include "core/base/version.h"

typedef struct field {
    const char *name;
    remat_h5_type type;
    size_t off;     /* offset in the record struct */
    int cols;       /* 1, or 4 for dims */
    const char *units;
} field;

#define F(s, n, t, c, u) {#n, t, offsetof(s, n), c, u}
static const field event_fields[] = {
    F(remat_event, time_s, REMAT_H5_F64, 1, "s"),  F(remat_event, tensor, REMAT_H5_I64, 1, NULL),
    F(remat_event, bytes, REMAT_H5_I64, 1, "B"),   F(remat_event, dims, REMAT_H5_I64, 4, "elements"),
    F(remat_event, nnz, REMAT_H5_I64, 1, "elements"), F(remat_event, layer, REMAT_H5_I32, 1, NULL),
    F(remat_event, block, REMAT_H5_I32, 1, NULL),  F(remat_event, iter, REMAT_H5_I32, 1, NULL),
    F(remat_event, kind, REMAT_H5_U8, 1, NULL),    F(remat_event, phase, REMAT_H5_U8, 1, NULL),
    F(remat_event, role, REMAT_H5_U8, 1, NULL),    F(remat_event, enc, REMAT_H5_U8, 1, NULL),
    F(remat_event, ndim, REMAT_H5_I8, 1, NULL),    F(remat_event, time_dim, REMAT_H5_I8, 1, NULL),
    F(remat_event, batch_dim, REMAT_H5_I8, 1, NULL),
};
static const field op_fields[] = {
    F(remat_op_record, t_start, REMAT_H5_F64, 1, "s"), F(remat_op_record, t_end, REMAT_H5_F64, 1, "s"),
    F(remat_op_record, elems, REMAT_H5_I64, 1, "elements"), F(remat_op_record, layer, REMAT_H5_I32, 1, NULL),
    F(remat_op_record, block, REMAT_H5_I32, 1, NULL),  F(remat_op_record, iter, REMAT_H5_I32, 1, NULL),
    F(remat_op_record, t_steps, REMAT_H5_I32, 1, "time steps"), F(remat_op_record, op, REMAT_H5_U8, 1, NULL),
    F(remat_op_record, phase, REMAT_H5_U8, 1, NULL),
};
static const field iter_fields[] = {
    F(remat_iter_summary, peak_live_bytes, REMAT_H5_I64, 1, "B"),
    F(remat_iter_summary, peak_reserved_bytes, REMAT_H5_I64, 1, "B"),
    F(remat_iter_summary, end_of_forward_bytes, REMAT_H5_I64, 1, "B"),
    F(remat_iter_summary, end_of_forward_reserved, REMAT_H5_I64, 1, "B"),
    F(remat_iter_summary, step_time_s, REMAT_H5_F64, 1, "s"),
    F(remat_iter_summary, loss, REMAT_H5_F64, 1, NULL),
    F(remat_iter_summary, first_event, REMAT_H5_I64, 1, NULL),
    F(remat_iter_summary, n_events, REMAT_H5_I64, 1, NULL),
};
static const field probe_step_fields[] = {
    F(remat_probe_step, step_time_s, REMAT_H5_F64, 1, "s"),
    F(remat_probe_step, n_events, REMAT_H5_I64, 1, NULL),
};
#undef F
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef struct table {
    const char *group;
    const field *fields;
    int n_fields;
    size_t stride;
} table;

/* the fourth, /probe_ops, is optional: written when the trace holds a probe; the fifth,
 * /probe_steps (its steps' times and events), with it when the probe recorded them */
enum { N_TABLES = 5, PROBE_TABLE = 3, PROBE_STEP_TABLE = 4 };
static const table tables[N_TABLES] = {
    {"/events", event_fields, COUNT(event_fields), sizeof(remat_event)},
    {"/ops", op_fields, COUNT(op_fields), sizeof(remat_op_record)},
    {"/iters", iter_fields, COUNT(iter_fields), sizeof(remat_iter_summary)},
    {"/probe_ops", op_fields, COUNT(op_fields), sizeof(remat_op_record)},
    {"/probe_steps", probe_step_fields, COUNT(probe_step_fields), sizeof(remat_probe_step)},
};

/* Column f of n records (AoS at rec) into buf (packed), or back. */
static void gather(const void *rec, size_t stride, const field *f, int64_t n, void *buf) {
    remat_h5_gather_column(rec, stride, f->off, remat_h5_type_size(f->type) * (size_t)f->cols, n, buf);
}

static void scatter(void *rec, size_t stride, const field *f, int64_t n, const void *buf) {
    remat_h5_scatter_column(rec, stride, f->off, remat_h5_type_size(f->type) * (size_t)f->cols, n, buf);
}

static const char *kind_name_i(int i) { return i == REMAT_EVENT_ALLOC ? "alloc" : "free"; }
static const char *phase_name_i(int i) { return remat_phase_name((remat_phase)i); }
static const char *role_name_i(int i) { return remat_role_name((remat_role)i); }
static const char *enc_name_i(int i) { return remat_encoding_name((remat_encoding)i); }
static const char *op_name_i(int i) { return remat_op_kind_name((remat_op_kind)i); }
static const char *comp_name_i(int i) { return remat_compressor_name((remat_compressor)i); }

/* The metadata part of the content checksum (docs/trace-schema.md). */
static uint32_t crc_meta(uint32_t crc, const char *model, const char *plan, const char *backend, const char *seed,
                         const char *alloc_cfg, int64_t T, int64_t N, int64_t threads, int64_t version) {
    const char *s[5] = {model, plan, backend, seed, alloc_cfg};
    for (int i = 0; i < 5; i++) crc = remat_crc32(crc, s[i] ? s[i] : "", strlen(s[i] ? s[i] : "") + 1);
    int64_t v[4] = {T, N, threads, version};
    return remat_crc32(crc, v, sizeof v);
}

#define CALIB_GROUP "/calibration"

/* The calibration group: compression seconds per element, the compressors' names. */
static remat_status write_calibration(hid_t f, const char *path, const remat_trace *t, uint32_t *crcp,
                                      remat_error *err) {
    char names[1024];
    uint32_t crc = *crcp;
    remat_status st;
    int64_t nc = REMAT_COMP_COUNT;
    st = remat_h5_write(f, path, CALIB_GROUP "/compress_s_per_elem", REMAT_H5_F64, 1, &nc, t->compress_s_per_elem, err);
    if (st == REMAT_OK)
        st = remat_h5_write(f, path, CALIB_GROUP "/decompress_s_per_elem", REMAT_H5_F64, 1, &nc,
                            t->decompress_s_per_elem, err);
    crc = remat_crc32(crc, t->compress_s_per_elem, sizeof t->compress_s_per_elem);
    crc = remat_crc32(crc, t->decompress_s_per_elem, sizeof t->decompress_s_per_elem);
    if (st == REMAT_OK) {
        remat_h5_join_names(names, sizeof names, REMAT_COMP_COUNT, comp_name_i);
        st = remat_h5_attr_write_str(f, path, CALIB_GROUP, "compressor_names", names, err);
    }

    *crcp = crc;
    return st;
}

/* The tables, column by column (the probe's only when the trace holds one). */
static remat_status write_tables(hid_t f, const char *path, const remat_trace *t, uint32_t *crcp, remat_error *err) {
    uint32_t crc = *crcp;
    void *buf = NULL;
    remat_status st = REMAT_OK;
    const void *recs[N_TABLES] = {t->events, t->ops, t->iters, t->probe_ops, t->probe_steps};
    int64_t counts[N_TABLES] = {t->n_events, t->n_ops, t->n_iters, t->n_probe_ops, t->n_probe_steps};
    int64_t maxn = 0;
    for (int ti = 0; ti < N_TABLES; ti++)
        if (counts[ti] > maxn) maxn = counts[ti];
    if (st == REMAT_OK && maxn > 0) {
        buf = remat_xmalloc((size_t)maxn * 32, err);
        if (!buf) st = REMAT_ERR_NOMEM;
    }
    for (int ti = 0; ti < N_TABLES && st == REMAT_OK; ti++) {
        const table *tb = &tables[ti];
        if (ti >= PROBE_TABLE && (t->n_probe_ops <= 0 || t->probe_N <= 0)) continue;
        if (ti == PROBE_STEP_TABLE && t->n_probe_steps <= 0) continue;
        for (int fi = 0; fi < tb->n_fields && st == REMAT_OK; fi++) {
            const field *fd = &tb->fields[fi];
            char dpath[128];
            snprintf(dpath, sizeof dpath, "%s/%s", tb->group, fd->name);
            int64_t dims[2] = {counts[ti], fd->cols};
            if (counts[ti] > 0) gather(recs[ti], tb->stride, fd, counts[ti], buf);
            st = remat_h5_write(f, path, dpath, fd->type, fd->cols > 1 ? 2 : 1, dims, buf, err);
            if (st == REMAT_OK && fd->units) st = remat_h5_attr_write_str(f, path, dpath, "units", fd->units, err);
            if (counts[ti] > 0)
                crc = remat_crc32(crc, buf, (size_t)counts[ti] * (size_t)fd->cols * remat_h5_type_size(fd->type));
        }
    }
    remat_xfree(buf);
    *crcp = crc;
    return st;
}

/* The names of the tables' enumerations (kinds, phases, roles, encodings, op kinds) and
 * the probe's batch. */
static remat_status write_names(hid_t f, const char *path, const remat_trace *t, uint32_t *crcp, remat_error *err) {
    char names[1024];
    remat_status st = REMAT_OK;
    if (st == REMAT_OK) {
        remat_h5_join_names(names, sizeof names, 2, kind_name_i);
        st = remat_h5_attr_write_str(f, path, "/events", "kind_names", names, err);
    }
    if (st == REMAT_OK) {
        remat_h5_join_names(names, sizeof names, REMAT_PHASE_COUNT, phase_name_i);
        st = remat_h5_attr_write_str(f, path, "/events", "phase_names", names, err);
        if (st == REMAT_OK) st = remat_h5_attr_write_str(f, path, "/ops", "phase_names", names, err);
    }
    if (st == REMAT_OK) {
        remat_h5_join_names(names, sizeof names, REMAT_ROLE_COUNT, role_name_i);
        st = remat_h5_attr_write_str(f, path, "/events", "role_names", names, err);
    }
    if (st == REMAT_OK) {
        /* the encodings up to the highest one used, at least the five of the first
         * schema: an fp32 trace is written as before bf16 existed, byte for byte */
        int n_enc = REMAT_ENC_I32 + 1;
        for (int64_t i = 0; i < t->n_events; i++)
            if (t->events[i].enc >= n_enc && t->events[i].enc < REMAT_ENC_COUNT) n_enc = t->events[i].enc + 1;
        remat_h5_join_names(names, sizeof names, n_enc, enc_name_i);
        st = remat_h5_attr_write_str(f, path, "/events", "enc_names", names, err);
    }
    if (st == REMAT_OK) {
        remat_h5_join_names(names, sizeof names, REMAT_OP_COUNT, op_name_i);
        st = remat_h5_attr_write_str(f, path, "/ops", "op_names", names, err);
    }
    if (st == REMAT_OK && t->n_probe_ops > 0 && t->probe_N > 0) {
        st = remat_h5_attr_write_i64(f, path, tables[PROBE_TABLE].group, "N", t->probe_N, err);
        *crcp = remat_crc32(*crcp, &t->probe_N, sizeof t->probe_N);
    }

    return st;
}

/* The root attributes: what ran (model, plan, backend, seed, sizes, the allocator's
 * settings, where), in the checksum where the schema says so. */
static remat_status write_root(hid_t f, const char *path, const remat_trace *t, uint32_t *crcp, remat_error *err) {
    remat_status st = REMAT_OK;
    /* root metadata */
    char seed[32];
    snprintf(seed, sizeof seed, "%" PRIu64, t->seed);
    const char *model = t->model_text ? t->model_text : "";
    const char *plan = t->plan_text ? t->plan_text : "";
    char backend[sizeof t->backend + 1], acfg[sizeof t->allocator_config + 1];
    snprintf(backend, sizeof backend, "%.*s", (int)sizeof t->backend, t->backend);
    snprintf(acfg, sizeof acfg, "%.*s", (int)sizeof t->allocator_config, t->allocator_config);
    if (st == REMAT_OK) st = remat_h5_attr_write_i64(f, path, "/", "schema_version", REMAT_TRACE_SCHEMA_VERSION, err);
    if (st == REMAT_OK) st = remat_h5_attr_write_str(f, path, "/", "model", model, err);
    if (st == REMAT_OK) st = remat_h5_attr_write_str(f, path, "/", "plan", plan, err);
    if (st == REMAT_OK) st = remat_h5_attr_write_str(f, path, "/", "backend", backend, err);
    if (st == REMAT_OK) st = remat_h5_attr_write_str(f, path, "/", "seed", seed, err);
    if (st == REMAT_OK) st = remat_h5_attr_write_i64(f, path, "/", "T", t->T, err);
    if (st == REMAT_OK) st = remat_h5_attr_write_i64(f, path, "/", "N", t->N, err);
    if (st == REMAT_OK) st = remat_h5_attr_write_i64(f, path, "/", "threads", t->threads, err);
    if (st == REMAT_OK) st = remat_h5_attr_write_i64(f, path, "/", "no_input_grad", t->no_input_grad ? 1 : 0, err);
    if (st == REMAT_OK && t->ranks > 0) /* absent: one process, as traces before it */
        st = remat_h5_attr_write_i64(f, path, "/", "ranks", t->ranks, err);
    if (st == REMAT_OK && t->ranks > 0) st = remat_h5_attr_write_i64(f, path, "/", "reduce_blocks", t->reduce_blocks, err);
    if (st == REMAT_OK && t->precision != REMAT_PRECISION_FP32) /* absent: fp32, as traces before it */
        st = remat_h5_attr_write_str(f, path, "/", "precision", remat_precision_name((remat_precision)t->precision),
                                     err);
    if (st == REMAT_OK) st = remat_h5_attr_write_str(f, path, "/", "allocator_config", acfg, err);
    char simd[sizeof t->simd + 1];
    snprintf(simd, sizeof simd, "%.*s", (int)sizeof t->simd, t->simd);
    if (st == REMAT_OK && simd[0]) /* optional: only traces recorded on the reference backend */
        st = remat_h5_attr_write_str(f, path, "/", "simd", simd, err);
    /* not in the checksum: traces before it load as they are; a trace read from a file
     * that did not record it is written back without it */
    if (st == REMAT_OK && strcmp(t->remat_version, REMAT_TRACE_VERSION_UNRECORDED) != 0)
        st = remat_h5_attr_write_str(f, path, "/", "remat_version", t->remat_version[0] ? t->remat_version : REMAT_VERSION,
                                     err);
    if (st == REMAT_OK && t->device_total_bytes > 0) /* optional: only traces recorded on a GPU */
        st = remat_h5_attr_write_i64(f, path, "/", "device_total_bytes", t->device_total_bytes, err);
    if (st == REMAT_OK && t->device_total_bytes > 0)
        st = remat_h5_attr_write_i64(f, path, "/", "device_free_at_init", t->device_free_at_init, err);
    *crcp = crc_meta(*crcp, model, plan, backend, seed, acfg, t->T, t->N, t->threads, REMAT_TRACE_SCHEMA_VERSION);
    return st;
}

remat_status remat_trace_write_h5(const remat_trace *t, const char *path, remat_error *err) {
    remat_afile af;
    hid_t f = H5I_INVALID_HID;
    remat_status st = remat_h5_begin(path, &f, &af, err);
    if (st != REMAT_OK) return st;
    uint32_t crc = 0;
    st = write_calibration(f, path, t, &crc, err);
    if (st == REMAT_OK) st = write_tables(f, path, t, &crc, err);
    if (st == REMAT_OK) st = write_names(f, path, t, &crc, err);
    if (st == REMAT_OK) st = write_root(f, path, t, &crc, err);
    if (st == REMAT_OK) st = remat_h5_attr_write_i64(f, path, "/", "content_crc32", (int64_t)crc, err);
    if (st != REMAT_OK) {
        remat_h5_abort(f, &af);
        return st;
    }
    return remat_h5_commit(f, &af, err);
}

/* ---- reading ---------------------------------------------------------------- */

#define BAD(...) remat_error_set(err, REMAT_ERR_INPUT, __VA_ARGS__)

#define MAX_TENSOR_TEXT "2^40"

/* The first dimension out of range (< 1 within ndim, not 1 past it, as the writer
 * stores them), or -1. */
static int bad_dim(const remat_event *e) {
    for (int d = 0; d < 4; d++)
        if (d < e->ndim ? e->dims[d] < 1 || e->dims[d] > REMAT_TRACE_MAX_TENSOR : e->dims[d] != 1) return d;
    return -1;
}

/* The event's element count, -1 above REMAT_TRACE_MAX_TENSOR. */
static int64_t event_elems(const remat_event *e) {
    int64_t n = 1;
    for (int d = 0; d < e->ndim && n >= 0; d++) n = remat_mul_capped(n, e->dims[d], REMAT_TRACE_MAX_TENSOR);
    return n;
}

/* The bytes the encoding gives these elements (the executor's rule,
 * remat_encoding_bytes); a sparse tensor's are 4 per non-zero, which the
 * recording does not keep: any multiple of 4 up to 4 per element. -1: none fits. */
static int64_t event_bytes(const remat_event *e, int64_t elems) {
    if (e->enc != REMAT_ENC_SPARSE) return remat_encoding_bytes((remat_encoding)e->enc, elems, 0);
    return e->bytes >= 0 && e->bytes % 4 == 0 && e->bytes / 4 <= elems ? e->bytes : -1;
}

static const char *event_bytes_expected(const remat_event *e, int64_t elems, char *buf, size_t len) {
    if (e->enc == REMAT_ENC_SPARSE)
        snprintf(buf, len, "a multiple of 4 up to %lld (4 per non-zero of %lld elements, sparse)",
                 (long long)(elems * 4), (long long)elems);
    else
        snprintf(buf, len, "%lld (%lld elements in encoding %d)",
                 (long long)remat_encoding_bytes((remat_encoding)e->enc, elems, 0), (long long)elems, e->enc);
    return buf;
}

/* The op records of group g (/ops or /probe_ops). */
static remat_status check_ops(const char *path, const char *g, const remat_op_record *ops, int64_t n, int64_t T,
                              remat_error *err) {
    for (int64_t i = 0; i < n; i++) {
        const remat_op_record *o = &ops[i];
        if (o->op >= REMAT_OP_COUNT)
            return BAD("%s: %s/op: op %lld has kind %d, expected 0..%d", path, g, (long long)i, o->op,
                       REMAT_OP_COUNT - 1);
        if (o->phase >= REMAT_PHASE_COUNT)
            return BAD("%s: %s/phase: op %lld has phase %d, expected 0..%d", path, g, (long long)i, o->phase,
                       REMAT_PHASE_COUNT - 1);
        if (!isfinite(o->t_start) || !isfinite(o->t_end) || !(o->t_start >= 0) || !(o->t_end >= o->t_start))
            return BAD("%s: %s/%s: op %lld runs from %g to %g s, expected finite times 0 <= start <= end", path, g,
                       isfinite(o->t_start) && o->t_start >= 0 ? "t_end" : "t_start", (long long)i, o->t_start,
                       o->t_end);
        if (o->elems < 0)
            return BAD("%s: %s/elems: op %lld has %lld elements, expected >= 0", path, g, (long long)i,
                       (long long)o->elems);
        if (o->t_steps < 0 || o->t_steps > T)
            return BAD("%s: %s/t_steps: op %lld covers %d time steps, expected 0..%lld (T)", path, g, (long long)i,
                       o->t_steps, (long long)T);
        if (o->iter < -1 || o->layer < -1 || o->block < -1)
            return BAD("%s: %s/%s: op %lld has %d, expected >= -1", path, g,
                       o->iter < -1 ? "iter" : o->layer < -1 ? "layer" : "block", (long long)i,
                       o->iter < -1 ? o->iter : o->layer < -1 ? o->layer : o->block);
    }
    return REMAT_OK;
}

/* Event i: every field in range, its bytes those of its shape and encoding, times in
 * order, and its tensor allocated before it is freed (live[id]: its bytes, -1 when not live). */
static remat_status check_event(const char *path, const remat_trace *t, int64_t i, int64_t *live, remat_error *err) {
    const int64_t n = t->n_events;
    remat_status st = REMAT_OK;
    const remat_event *e = &t->events[i];
    long long li = (long long)i;
    int d;
    int64_t elems;
    char want[128];
    if (e->kind > REMAT_EVENT_FREE)
        st = BAD("%s: /events/kind: event %lld has kind %d, expected 0..1", path, li, e->kind);
    else if (e->phase >= REMAT_PHASE_COUNT)
        st = BAD("%s: /events/phase: event %lld has phase %d, expected 0..%d", path, li, e->phase,
                 REMAT_PHASE_COUNT - 1);
    else if (e->role >= REMAT_ROLE_COUNT)
        st = BAD("%s: /events/role: event %lld has role %d, expected 0..%d", path, li, e->role,
                 REMAT_ROLE_COUNT - 1);
    else if (e->enc >= REMAT_ENC_COUNT)
        st = BAD("%s: /events/enc: event %lld has encoding %d, expected 0..%d", path, li, e->enc,
                 REMAT_ENC_COUNT - 1);
    else if (e->ndim < 0 || e->ndim > 4)
        st = BAD("%s: /events/ndim: event %lld has ndim %d, expected 0..4", path, li, e->ndim);
    else if (e->time_dim < -1 || e->time_dim >= e->ndim)
        st = BAD("%s: /events/time_dim: event %lld has time_dim %d, expected -1..%d", path, li, e->time_dim,
                 e->ndim - 1);
    else if (e->batch_dim < -1 || e->batch_dim >= e->ndim)
        st = BAD("%s: /events/batch_dim: event %lld has batch_dim %d, expected -1..%d", path, li, e->batch_dim,
                 e->ndim - 1);
    else if ((d = bad_dim(e)) >= 0)
        st = BAD("%s: /events/dims: event %lld has extent %lld in dimension %d, expected %s", path, li,
                 (long long)e->dims[d], d, d < e->ndim ? "1.." MAX_TENSOR_TEXT : "1 (past ndim)");
    else if ((elems = event_elems(e)) < 0)
        st = BAD("%s: /events/dims: event %lld has [%lld, %lld, %lld, %lld], expected at most " MAX_TENSOR_TEXT
                 " elements",
                 path, li, (long long)e->dims[0], (long long)e->dims[1], (long long)e->dims[2],
                 (long long)e->dims[3]);
    else if (e->bytes < 0 || e->bytes != event_bytes(e, elems))
        st = BAD("%s: /events/bytes: event %lld has %lld bytes, expected %s", path, li, (long long)e->bytes,
                 event_bytes_expected(e, elems, want, sizeof want));
    else if (e->nnz < -1 || e->nnz > elems)
        st = BAD("%s: /events/nnz: event %lld has nnz %lld, expected -1 (not counted) or 0..%lld (its elements)",
                 path, li, (long long)e->nnz, (long long)elems);
    else if (i > 0 && e->time_s < t->events[i - 1].time_s)
        st = BAD("%s: /events/time_s: event %lld at %g s comes before event %lld at %g s, expected times in "
                 "order",
                 path, li, e->time_s, li - 1, t->events[i - 1].time_s);
    else if (e->layer < -1 || e->block < -1)
        st = BAD("%s: /events/%s: event %lld has %d, expected >= -1", path, e->layer < -1 ? "layer" : "block", li,
                 e->layer < -1 ? e->layer : e->block);
    else if (e->iter < 0)
        st = BAD("%s: /events/iter: event %lld has iter %d, expected >= 0", path, li, e->iter);
    else if (!(e->time_s >= 0) || !isfinite(e->time_s))
        st = BAD("%s: /events/time_s: event %lld has time %g, expected a finite time >= 0", path, li, e->time_s);
    else if (e->tensor < 0 || e->tensor >= n)
        st = BAD("%s: /events/tensor: event %lld names tensor %lld, expected 0..%lld (ids are dense from 0)", path,
                 li, (long long)e->tensor, (long long)(n - 1));
    else if (e->kind == REMAT_EVENT_ALLOC) {
        if (live[e->tensor] >= 0)
            st = BAD("%s: /events/tensor: event %lld allocates tensor %lld, which is already live", path, li,
                     (long long)e->tensor);
        else
            live[e->tensor] = e->bytes;
    } else {
        if (live[e->tensor] < 0)
            st = BAD("%s: /events/tensor: event %lld frees tensor %lld, which is not live", path, li,
                     (long long)e->tensor);
        else if (live[e->tensor] != e->bytes)
            st = BAD("%s: /events/bytes: event %lld frees tensor %lld with %lld bytes, allocated with %lld", path,
                     li, (long long)e->tensor, (long long)e->bytes, (long long)live[e->tensor]);
        else
            live[e->tensor] = -1;
    }
    return st;
}

/* The iterations: each a slice of the events, its time finite, its byte counts >= 0. */
static remat_status check_iters(const char *path, const remat_trace *t, remat_error *err) {
    const int64_t n = t->n_events;
    for (int32_t i = 0; i < t->n_iters; i++) {
        const remat_iter_summary *s = &t->iters[i];
        if (s->first_event < 0 || s->first_event > n)
            return BAD("%s: /iters/first_event: iteration %d starts at event %lld, expected 0..%lld", path, i,
                       (long long)s->first_event, (long long)n);
        if (s->n_events < 0 || s->n_events > n - s->first_event)
            return BAD("%s: /iters/n_events: iteration %d has %lld events, expected 0..%lld", path, i,
                       (long long)s->n_events, (long long)(n - s->first_event));
        if (!isfinite(s->step_time_s) || !(s->step_time_s >= 0))
            return BAD("%s: /iters/step_time_s: iteration %d took %g s, expected a finite time >= 0", path, i,
                       s->step_time_s);
        if (s->peak_live_bytes < 0 || s->peak_reserved_bytes < 0 || s->end_of_forward_bytes < 0 ||
            s->end_of_forward_reserved < 0)
            return BAD("%s: /iters: iteration %d has a negative byte count, expected >= 0", path, i);
    }
    return REMAT_OK;
}

/* The probe's steps: one row per probe step (iter of /probe_ops), each time finite and
 * >= 0, its events >= 0. */
static remat_status check_probe_steps(const char *path, const remat_trace *t, remat_error *err) {
    int64_t n_it = 0;
    for (int64_t i = 0; i < t->n_probe_ops; i++)
        if (t->probe_ops[i].iter + 1 > n_it) n_it = t->probe_ops[i].iter + 1;
    if (t->n_probe_steps != n_it)
        return BAD("%s: /probe_steps: %lld rows, expected one per step of /probe_ops (%lld)", path,
                   (long long)t->n_probe_steps, (long long)n_it);
    for (int64_t i = 0; i < t->n_probe_steps; i++) {
        const remat_probe_step *s = &t->probe_steps[i];
        if (!isfinite(s->step_time_s) || !(s->step_time_s >= 0))
            return BAD("%s: /probe_steps/step_time_s: probe step %lld took %g s, expected a finite time >= 0", path,
                       (long long)i, s->step_time_s);
        if (s->n_events < 0)
            return BAD("%s: /probe_steps/n_events: probe step %lld has %lld events, expected >= 0", path, (long long)i,
                       (long long)s->n_events);
    }
    return REMAT_OK;
}

static remat_status check_events(const char *path, const remat_trace *t, remat_error *err) {
    int64_t n = t->n_events;
    int64_t *live = NULL;
    if (n > 0) {
        live = remat_xmalloc((size_t)n * sizeof(int64_t), err);
        if (!live) return REMAT_ERR_NOMEM;
        memset(live, 0xff, (size_t)n * sizeof(int64_t)); /* -1: not live */
    }
    remat_status st = REMAT_OK;
    for (int64_t i = 0; i < n && st == REMAT_OK; i++) st = check_event(path, t, i, live, err);
    remat_xfree(live);
    if (st != REMAT_OK) return st;
    if ((st = check_ops(path, "/ops", t->ops, t->n_ops, t->T, err)) != REMAT_OK) return st;
    if (t->n_probe_ops > 0 && (st = check_ops(path, "/probe_ops", t->probe_ops, t->n_probe_ops, t->T, err)) != REMAT_OK)
        return st;
    if (t->n_probe_steps > 0 && (st = check_probe_steps(path, t, err)) != REMAT_OK) return st;
    return check_iters(path, t, err);
}

static remat_status read_tables(hid_t f, const char *path, remat_trace *t, uint32_t *crc, remat_error *err) {
    void **recs[N_TABLES] = {(void **)&t->events, (void **)&t->ops, (void **)&t->iters, (void **)&t->probe_ops,
                             (void **)&t->probe_steps};
    for (int ti = 0; ti < N_TABLES; ti++) {
        const table *tb = &tables[ti];
        if (ti >= PROBE_TABLE && !remat_h5_exists(f, tb->group)) continue; /* optional */
        int64_t n = -1;
        const char *first = NULL;
        for (int fi = 0; fi < tb->n_fields; fi++) {
            const field *fd = &tb->fields[fi];
            char dpath[128];
            snprintf(dpath, sizeof dpath, "%s/%s", tb->group, fd->name);
            int64_t dims[2] = {0, 0};
            void *col = NULL;
            remat_status st = remat_h5_read(f, path, dpath, fd->type, fd->cols > 1 ? 2 : 1, dims, &col, err);
            if (st != REMAT_OK) return st;
            if (fd->cols > 1 && dims[1] != fd->cols) {
                remat_xfree(col);
                return BAD("%s: %s: expected shape [n,%d], found [%lld,%lld]", path, dpath, fd->cols,
                           (long long)dims[0], (long long)dims[1]);
            }
            if (n < 0) {
                n = dims[0];
                first = fd->name;
                if (ti == 2 && n > INT32_MAX) {
                    remat_xfree(col);
                    return BAD("%s: %s: %lld iterations, expected at most %d", path, dpath, (long long)n, INT32_MAX);
                }
                if (n > 0) {
                    *recs[ti] = remat_xcalloc((size_t)n, tb->stride, err);
                    if (!*recs[ti]) {
                        remat_xfree(col);
                        return REMAT_ERR_NOMEM;
                    }
                }
                if (ti == 0) t->n_events = t->cap_events = n;
                if (ti == 1) t->n_ops = t->cap_ops = n;
                if (ti == 2) t->n_iters = t->cap_iters = (int32_t)n;
                if (ti == PROBE_TABLE) t->n_probe_ops = t->cap_probe_ops = n;
                if (ti == PROBE_STEP_TABLE) t->n_probe_steps = t->cap_probe_steps = n;
            } else if (dims[0] != n) {
                remat_xfree(col);
                return BAD("%s: %s: %lld rows, but %s/%s has %lld (datasets of unequal length)", path, dpath,
                           (long long)dims[0], tb->group, first, (long long)n);
            }
            if (n > 0) {
                scatter(*recs[ti], tb->stride, fd, n, col);
                *crc = remat_crc32(*crc, col, (size_t)n * (size_t)fd->cols * remat_h5_type_size(fd->type));
            }
            remat_xfree(col);
        }
    }
    return REMAT_OK;
}

static remat_status read_string(hid_t f, const char *path, const char *name, char **out, remat_error *err) {
    return remat_h5_attr_read_str(f, path, "/", name, out, err);
}

static remat_status read_open(hid_t f, const char *path, remat_trace *out, remat_error *err);

remat_status remat_trace_read_h5(const char *path, remat_trace *out, remat_error *err) {
    remat_trace_init(out);
    hid_t f;
    remat_status st = remat_h5_open(path, &f, err);
    return st == REMAT_OK ? read_open(f, path, out, err) : st;
}

remat_status remat_trace_read_h5_image(const void *data, size_t n, const char *origin, remat_trace *out,
                                       remat_error *err) {
    remat_trace_init(out);
    hid_t f;
    remat_status st = remat_h5_open_image(data, n, origin, &f, err);
    return st == REMAT_OK ? read_open(f, origin, out, err) : st;
}

/* The root attributes read_open reads before they go into the trace, and the checksum so far. */
typedef struct trace_meta {
    char *seed, *backend, *acfg, *simd, *wver;
    int64_t version, T, N, threads, no_input_grad, ranks, rblocks, dev_total, dev_free;
    int precision;
    uint32_t crc;
} trace_meta;

/* the version first: a newer file may hold anything else */
static remat_status read_version(hid_t f, const char *path, int64_t *version, remat_error *err) {
    remat_status st;
    if (!remat_h5_attr_exists(f, "/", "schema_version"))
        st = remat_h5_attr_exists(f, "/", "external_schema_version")
                 ? BAD("%s: schema_version: missing root attribute (an external allocation stream written by "
                       "`remat import-torch`, not a trace recorded by `remat run`)", path)
                 : BAD("%s: schema_version: missing root attribute (not a remat trace)", path);
    else
        st = remat_h5_attr_read_i64(f, path, "/", "schema_version", version, err);
    if (st == REMAT_OK && *version > REMAT_TRACE_SCHEMA_VERSION)
        st = BAD("%s: schema_version: file is version %lld, this remat reads up to %d", path, (long long)*version,
                 REMAT_TRACE_SCHEMA_VERSION);
    if (st == REMAT_OK && *version < 1)
        st = BAD("%s: schema_version: file is version %lld, expected 1..%d", path, (long long)*version,
                 REMAT_TRACE_SCHEMA_VERSION);
    return st;
}

/* calibration */
static remat_status read_calibration(hid_t f, const char *path, remat_trace *t, uint32_t *crc, remat_error *err) {
    remat_status st = REMAT_OK;
    for (int k = 0; k < 2 && st == REMAT_OK; k++) {
        const char *dp = k == 0 ? CALIB_GROUP "/compress_s_per_elem" : CALIB_GROUP "/decompress_s_per_elem";
        double *dst = k == 0 ? t->compress_s_per_elem : t->decompress_s_per_elem;
        int64_t dims[1];
        void *col = NULL;
        st = remat_h5_read(f, path, dp, REMAT_H5_F64, 1, dims, &col, err);
        if (st == REMAT_OK && dims[0] != REMAT_COMP_COUNT)
            st = BAD("%s: %s: expected %d values (one per compressor), found %lld", path, dp, REMAT_COMP_COUNT,
                     (long long)dims[0]);
        if (st == REMAT_OK) {
            memcpy(dst, col, sizeof(double) * REMAT_COMP_COUNT);
            *crc = remat_crc32(*crc, col, sizeof(double) * REMAT_COMP_COUNT);
        }
        remat_xfree(col);
    }
    return st;
}

/* the tables, and the probe's batch when it has a probe table */
static remat_status read_data(hid_t f, const char *path, remat_trace *t, uint32_t *crc, remat_error *err) {
    remat_status st = read_tables(f, path, t, crc, err);
    if (st == REMAT_OK && remat_h5_exists(f, tables[PROBE_TABLE].group)) { /* optional: the probe's batch */
        st = remat_h5_attr_read_i64(f, path, tables[PROBE_TABLE].group, "N", &t->probe_N, err);
        if (st == REMAT_OK && (t->probe_N < 1 || t->probe_N > REMAT_TRACE_MAX_N))
            st = BAD("%s: /probe_ops: attribute N: expected the probe's batch, 1..%lld, found %lld", path,
                     (long long)REMAT_TRACE_MAX_N, (long long)t->probe_N);
        *crc = remat_crc32(*crc, &t->probe_N, sizeof t->probe_N);
    }
    return st;
}

/* metadata: the attributes every trace has */
static remat_status read_required(hid_t f, const char *path, remat_trace *t, trace_meta *mt, remat_error *err) {
    remat_status st = read_string(f, path, "model", &t->model_text, err);
    if (st == REMAT_OK) st = read_string(f, path, "plan", &t->plan_text, err);
    if (st == REMAT_OK) st = read_string(f, path, "backend", &mt->backend, err);
    if (st == REMAT_OK) st = read_string(f, path, "seed", &mt->seed, err);
    if (st == REMAT_OK) st = read_string(f, path, "allocator_config", &mt->acfg, err);
    if (st == REMAT_OK) st = remat_h5_attr_read_i64(f, path, "/", "T", &mt->T, err);
    if (st == REMAT_OK) st = remat_h5_attr_read_i64(f, path, "/", "N", &mt->N, err);
    if (st == REMAT_OK) st = remat_h5_attr_read_i64(f, path, "/", "threads", &mt->threads, err);
    return st;
}

/* the optional numbers: the input gradient, a data-parallel rank's, the driver's view, the precision */
static remat_status read_optional(hid_t f, const char *path, trace_meta *mt, remat_error *err) {
    remat_status st = REMAT_OK;
    /* traces written before it existed computed the gradient */
    if (remat_h5_attr_exists(f, "/", "no_input_grad"))
        st = remat_h5_attr_read_i64(f, path, "/", "no_input_grad", &mt->no_input_grad, err);
    if (st == REMAT_OK && (mt->no_input_grad < 0 || mt->no_input_grad > 1))
        st = BAD("%s: no_input_grad: expected 0 or 1, found %lld", path, (long long)mt->no_input_grad);
    const int64_t N = mt->N;
    if (st == REMAT_OK && remat_h5_attr_exists(f, "/", "ranks")) {
        st = remat_h5_attr_read_i64(f, path, "/", "ranks", &mt->ranks, err);
        if (st == REMAT_OK) st = remat_h5_attr_read_i64(f, path, "/", "reduce_blocks", &mt->rblocks, err);
        const int64_t ranks = mt->ranks, rblocks = mt->rblocks;
        if (st == REMAT_OK && (ranks < 1 || ranks > 4096))
            st = BAD("%s: ranks: expected 1..4096, found %lld", path, (long long)ranks);
        if (st == REMAT_OK && (rblocks < ranks || rblocks % ranks != 0 || rblocks > REMAT_TRACE_MAX_N ||
                               N < 1 || N > REMAT_TRACE_MAX_N || (N * ranks) % rblocks != 0))
            st = BAD("%s: reduce_blocks: expected a multiple of ranks = %lld dividing the batch ranks x N = %lld, "
                     "found %lld",
                     path, (long long)ranks, (long long)(N * ranks), (long long)rblocks);
    }
    /* on a GPU only */
    if (st == REMAT_OK && remat_h5_attr_exists(f, "/", "device_total_bytes"))
        st = remat_h5_attr_read_i64(f, path, "/", "device_total_bytes", &mt->dev_total, err);
    if (st == REMAT_OK && mt->dev_total && remat_h5_attr_exists(f, "/", "device_free_at_init"))
        st = remat_h5_attr_read_i64(f, path, "/", "device_free_at_init", &mt->dev_free, err);
    if (st == REMAT_OK && (mt->dev_total < 0 || mt->dev_free < 0 || mt->dev_free > mt->dev_total))
        st = BAD("%s: device_free_at_init: expected 0..device_total_bytes (%lld), found %lld", path,
                 (long long)mt->dev_total, (long long)mt->dev_free);
    /* traces before it are fp32 */
    if (st == REMAT_OK && remat_h5_attr_exists(f, "/", "precision")) {
        char *pn = NULL;
        st = read_string(f, path, "precision", &pn, err);
        if (st == REMAT_OK && (mt->precision = remat_precision_from_name(pn)) < 0)
            st = BAD("%s: precision: expected \"fp32\" or \"bf16\"", path);
        remat_xfree(pn);
    }
    return st;
}

/* the optional names: the reference backend's SIMD path, the writer's release */
static remat_status read_names(hid_t f, const char *path, const remat_trace *t, trace_meta *mt, remat_error *err) {
    remat_status st = REMAT_OK;
    if (remat_h5_attr_exists(f, "/", "simd")) {
        st = read_string(f, path, "simd", &mt->simd, err);
        const char *simd = mt->simd;
        size_t k = 0;
        for (; st == REMAT_OK && simd[k]; k++)
            if (!((simd[k] >= 'a' && simd[k] <= 'z') || (simd[k] >= '0' && simd[k] <= '9') || simd[k] == '_')) break;
        if (st == REMAT_OK && (!simd[0] || simd[k] || k >= sizeof t->simd))
            st = BAD("%s: simd: expected a SIMD path name (1..%zu of a-z, 0-9, _), e.g. \"avx2\"", path,
                     sizeof t->simd - 1);
    }
    if (st == REMAT_OK && remat_h5_attr_exists(f, "/", "remat_version")) {
        st = read_string(f, path, "remat_version", &mt->wver, err);
        const char *wver = mt->wver;
        size_t k = 0;
        for (; st == REMAT_OK && wver[k]; k++)
            if (!((wver[k] >= '0' && wver[k] <= '9') || wver[k] == '.' || (wver[k] >= 'a' && wver[k] <= 'z') || wver[k] == '-'))
                break;
        if (st == REMAT_OK && (!wver[0] || wver[k] || k >= sizeof t->remat_version))
            st = BAD("%s: remat_version: expected a release such as \"%s\" (1..%zu of 0-9, a-z, '.', '-')", path,
                     REMAT_VERSION, sizeof t->remat_version - 1);
    }
    return st;
}

/* the required attributes' values and the calibration's */
static remat_status check_meta(const char *path, remat_trace *t, const trace_meta *mt, remat_error *err) {
    const char *backend = mt->backend, *seed = mt->seed;
    if (strcmp(backend, "ref") && strcmp(backend, "cuda") && strcmp(backend, "sim") && strcmp(backend, "dry")) {
        char shown[24];
        size_t k = 0;
        for (; k + 4 < sizeof shown && backend[k]; k++) shown[k] = backend[k] >= 0x20 && backend[k] < 0x7f ? backend[k] : '?';
        snprintf(shown + k, sizeof shown - k, "%s", backend[k] ? "..." : "");
        return BAD("%s: backend: expected \"ref\", \"cuda\" or \"sim\" (a prediction), found \"%s\"", path, shown);
    }
    if (strlen(mt->acfg) >= sizeof t->allocator_config)
        return BAD("%s: allocator_config: expected at most %zu characters", path, sizeof t->allocator_config - 1);
    char *end = NULL;
    errno = 0;
    unsigned long long sv = strtoull(seed, &end, 10);
    if (!seed[0] || *end || seed[0] < '0' || seed[0] > '9' || errno == ERANGE) {
        char shown[41];
        size_t k = 0;
        for (; k < 40 && seed[k]; k++) shown[k] = seed[k] >= 0x20 && seed[k] < 0x7f ? seed[k] : '?';
        shown[k] = 0;
        t->seed = sv;
        return BAD("%s: seed: expected a decimal integer in 0..18446744073709551615, found '%s'", path, shown);
    }
    t->seed = sv;
    if (mt->T < 1 || mt->T > REMAT_TRACE_MAX_T)
        return BAD("%s: T: expected 1..%lld time steps, found %lld", path, (long long)REMAT_TRACE_MAX_T,
                   (long long)mt->T);
    if (mt->N < 1 || mt->N > REMAT_TRACE_MAX_N)
        return BAD("%s: N: expected a batch of 1..%lld, found %lld", path, (long long)REMAT_TRACE_MAX_N,
                   (long long)mt->N);
    for (int k = 0; k < REMAT_COMP_COUNT; k++) {
        double c = t->compress_s_per_elem[k], d = t->decompress_s_per_elem[k];
        if (!isfinite(c) || !(c >= 0) || !isfinite(d) || !(d >= 0))
            return BAD("%s: " CALIB_GROUP "/%s: compressor %d has %g s per element, expected a finite value >= 0",
                       path, !isfinite(c) || !(c >= 0) ? "compress_s_per_elem" : "decompress_s_per_elem", k,
                       !isfinite(c) || !(c >= 0) ? c : d);
    }
    if (mt->threads < 0 || mt->threads > INT32_MAX) return BAD("%s: threads: expected 0..%d", path, INT32_MAX);
    return REMAT_OK;
}

/* the checksum, when the file has one */
static remat_status check_crc(hid_t f, const char *path, const remat_trace *t, trace_meta *mt, remat_error *err) {
    if (!remat_h5_attr_exists(f, "/", "content_crc32")) return REMAT_OK;
    int64_t want = 0;
    remat_status st = remat_h5_attr_read_i64(f, path, "/", "content_crc32", &want, err);
    mt->crc = crc_meta(mt->crc, t->model_text, t->plan_text, mt->backend, mt->seed, mt->acfg, mt->T, mt->N,
                       mt->threads, mt->version);
    if (st == REMAT_OK && (int64_t)mt->crc != want)
        st = BAD("%s: content_crc32: the content does not match its checksum (corrupted file)", path);
    return st;
}

/* the attributes into the trace */
static void set_meta(remat_trace *t, const trace_meta *mt) {
    t->schema_version = (int32_t)mt->version;
    t->T = mt->T;
    t->N = mt->N;
    t->threads = (int32_t)mt->threads;
    t->no_input_grad = (int32_t)mt->no_input_grad;
    t->ranks = (int32_t)mt->ranks;
    t->reduce_blocks = (int32_t)mt->rblocks;
    t->device_total_bytes = mt->dev_total;
    t->device_free_at_init = mt->dev_free;
    t->precision = (int32_t)mt->precision;
    snprintf(t->backend, sizeof t->backend, "%s", mt->backend);
    snprintf(t->allocator_config, sizeof t->allocator_config, "%s", mt->acfg);
    snprintf(t->simd, sizeof t->simd, "%s", mt->simd ? mt->simd : "");
    snprintf(t->remat_version, sizeof t->remat_version, "%s", mt->wver ? mt->wver : REMAT_TRACE_VERSION_UNRECORDED);
}

/* Reads the open file f (closed on return). */
static remat_status read_open(hid_t f, const char *path, remat_trace *out, remat_error *err) {
    remat_trace t;
    remat_trace_init(&t);
    trace_meta mt = {.precision = REMAT_PRECISION_FP32};
    remat_status st = read_version(f, path, &mt.version, err);
    if (st == REMAT_OK) st = read_calibration(f, path, &t, &mt.crc, err);
    if (st == REMAT_OK) st = read_data(f, path, &t, &mt.crc, err);
    if (st == REMAT_OK) st = read_required(f, path, &t, &mt, err);
    if (st == REMAT_OK) st = read_optional(f, path, &mt, err);
    if (st == REMAT_OK) st = read_names(f, path, &t, &mt, err);
    if (st == REMAT_OK) st = check_meta(path, &t, &mt, err);
    if (st == REMAT_OK) st = check_crc(f, path, &t, &mt, err);
    if (st == REMAT_OK) {
        set_meta(&t, &mt);
        st = check_events(path, &t, err);
    }
    remat_xfree(mt.seed);
    remat_xfree(mt.backend);
    remat_xfree(mt.acfg);
    remat_xfree(mt.simd);
    remat_xfree(mt.wver);
    remat_h5_close(f);
    if (st != REMAT_OK) {
        remat_trace_free(&t);
        return st;
    }
    *out = t;
    return REMAT_OK;
}
