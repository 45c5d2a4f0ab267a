/* ext_record.c - a recorded PyTorch step (ext_record.h): names, freeing, and the
 * HDF5 reader of the /record group (ext_record_h5.h). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/io/ext_record.h"
#include "core/io/ext_record_h5.h"

static const char *mark_names[REMAT_REC_MARK_COUNT] = {"step_begin", "step_end", "phase",     "fwd_begin",
                                                       "fwd_end",    "bwd_begin", "bwd_end", "tstep_fwd",
                                                       "tstep_bwd",  "pack",      "probe_begin", "probe_end",
                                                       "chunks_begin", "chunk_begin", "chunk_end", "chunks_end",
                                                       "comp_begin", "comp_mid", "comp_end"};
static const char *phase_names[REMAT_REC_PHASE_COUNT] = {"other", "forward", "loss", "backward", "optimizer"};

const char *remat_rec_mark_name(int k) { return k >= 0 && k < REMAT_REC_MARK_COUNT ? mark_names[k] : NULL; }
const char *remat_rec_phase_name(int p) { return p >= 0 && p < REMAT_REC_PHASE_COUNT ? phase_names[p] : NULL; }

void remat_ext_record_free(remat_ext_record *r) {
    if (!r) return;
    remat_xfree(r->events);
    remat_xfree(r->marks);
    remat_xfree(r->modules);
    remat_xfree(r->model);
    memset(r, 0, sizeof *r);
}

/* ---- reading -------------------------------------------------------------------- */

typedef struct field {
    const char *name;
    remat_h5_type type;
    size_t off;
} field;
#define F(s, n, t) {#n, t, offsetof(s, n)}
static const field event_fields[] = {F(remat_rec_event, storage, REMAT_H5_I64), F(remat_rec_event, step, REMAT_H5_I32),
                                     F(remat_rec_event, phase, REMAT_H5_U8), F(remat_rec_event, module, REMAT_H5_I32),
                                     F(remat_rec_event, tstep, REMAT_H5_I32)};
static const field mark_fields[] = {F(remat_rec_mark, kind, REMAT_H5_U8),     F(remat_rec_mark, module, REMAT_H5_I32),
                                    F(remat_rec_mark, step, REMAT_H5_I32),    F(remat_rec_mark, tstep, REMAT_H5_I32),
                                    F(remat_rec_mark, event, REMAT_H5_I64),   F(remat_rec_mark, storage, REMAT_H5_I64),
                                    F(remat_rec_mark, numel, REMAT_H5_I64), F(remat_rec_mark, nnz, REMAT_H5_I64)};
static const field module_fields[] = {F(remat_rec_module, label, REMAT_H5_I32), F(remat_rec_module, layer, REMAT_H5_I32),
                                      F(remat_rec_module, block, REMAT_H5_I32),
                                      F(remat_rec_module, is_block, REMAT_H5_U8),
                                      F(remat_rec_module, bn_buffer_bytes, REMAT_H5_I64)};
#undef F
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define BAD(...) remat_error_set(err, REMAT_ERR_INPUT, __VA_ARGS__)

/* One group's datasets into a new array of n records of `stride` bytes. */
static remat_status read_table(hid_t f, const char *path, const char *group, const field *fields, int nf,
                               size_t stride, void **out, int64_t *n_out, uint32_t *crc, remat_error *err) {
    int64_t n = -1;
    void *rec = NULL;
    for (int i = 0; i < nf; i++) {
        char dp[128];
        snprintf(dp, sizeof dp, "/record/%s/%s", group, fields[i].name);
        int64_t dims[1] = {0};
        void *col = NULL;
        remat_status st = remat_h5_read(f, path, dp, fields[i].type, 1, dims, &col, err);
        if (st != REMAT_OK) {
            remat_xfree(rec);
            return st;
        }
        if (n < 0) {
            n = dims[0];
            if (n > 0 && !(rec = remat_xcalloc((size_t)n, stride, err))) {
                remat_xfree(col);
                return REMAT_ERR_NOMEM;
            }
        } else if (dims[0] != n) {
            remat_xfree(col);
            remat_xfree(rec);
            return BAD("%s: %s: %lld rows, expected %lld like the other datasets of /record/%s", path, dp,
                       (long long)dims[0], (long long)n, group);
        }
        if (n > 0) {
            size_t es = remat_h5_type_size(fields[i].type);
            remat_h5_scatter_column(rec, stride, fields[i].off, es, n, col);
            *crc = remat_crc32(*crc, col, (size_t)n * es);
        }
        remat_xfree(col);
    }
    *out = rec;
    *n_out = n;
    return REMAT_OK;
}

static remat_status read_str(hid_t f, const char *path, const char *name, char **dst_owned, char *dst, size_t cap,
                             uint32_t *crc, remat_error *err) {
    char *s = NULL;
    remat_status st = remat_h5_attr_read_str(f, path, "/record", name, &s, err);
    if (st != REMAT_OK) return st;
    *crc = remat_crc32(*crc, s, strlen(s) + 1);
    if (dst_owned) {
        *dst_owned = s;
        return REMAT_OK;
    }
    if (strlen(s) >= cap) st = BAD("%s: /record: %s: expected at most %zu characters", path, name, cap - 1);
    else snprintf(dst, cap, "%s", s);
    remat_xfree(s);
    return st;
}

static remat_status check(const char *path, const remat_ext_trace *t, remat_ext_record *r, remat_error *err) {
    const remat_ext_device *d = t->n_devices > 0 ? &t->devices[0] : NULL;
    int64_t n = d ? d->n_events : 0;
    if (r->n_events != n)
        return BAD("%s: /record/events: %lld rows, expected one per event of /devices/0/events (%lld)", path,
                   (long long)r->n_events, (long long)n);
    /* storages: an alloc opens the next id, a free closes a live one of the same bytes */
    int64_t next = 0;
    int64_t *bytes = NULL;
    if (n > 0 && !(bytes = remat_xcalloc((size_t)n, sizeof *bytes, err))) return REMAT_ERR_NOMEM;
    remat_status st = REMAT_OK;
    for (int64_t i = 0; i < n && st == REMAT_OK; i++) {
        const remat_ext_event *e = &d->events[i];
        const remat_rec_event *a = &r->events[i];
        if (a->phase >= REMAT_REC_PHASE_COUNT || a->module < -1 || a->module >= r->n_modules || a->step < -1 ||
            a->tstep < -1)
            st = BAD("%s: /record/events: event %lld has phase %d, module %d, step %d, tstep %d (expected phase "
                     "0..%d, module -1..%d)",
                     path, (long long)i, a->phase, a->module, a->step, a->tstep, REMAT_REC_PHASE_COUNT - 1,
                     r->n_modules - 1);
        else if (e->action == REMAT_EXT_ALLOC) {
            if (a->storage != next)
                st = BAD("%s: /record/events/storage: event %lld allocates storage %lld, expected the next id %lld",
                         path, (long long)i, (long long)a->storage, (long long)next);
            else bytes[next++] = e->size;
        } else if (e->action == REMAT_EXT_FREE_COMPLETED) {
            if (a->storage >= next || a->storage < -1 || (a->storage >= 0 && bytes[a->storage] != e->size))
                st = BAD("%s: /record/events/storage: event %lld frees storage %lld, expected a live storage of %lld "
                         "bytes (or -1)",
                         path, (long long)i, (long long)a->storage, (long long)e->size);
            else if (a->storage >= 0) bytes[a->storage] = -1; /* freed: a second free is refused above */
        } else {
            st = BAD("%s: /devices/0/events/action: event %lld is %s, expected alloc or free_completed in a recorded "
                     "step",
                     path, (long long)i, remat_ext_action_name(e->action));
        }
    }
    remat_xfree(bytes);
    if (st != REMAT_OK) return st;
    r->n_storages = next;
    for (int64_t m = 0; m < r->n_marks; m++) {
        const remat_rec_mark *k = &r->marks[m];
        if (k->kind >= REMAT_REC_MARK_COUNT || k->event < 0 || k->event > n || (m > 0 && k->event < r->marks[m - 1].event) ||
            k->storage < -1 || k->storage >= next || k->module < -1 ||
            (k->kind != REMAT_REC_PHASE && k->module >= r->n_modules) ||
            (k->kind == REMAT_REC_PHASE && k->module >= REMAT_REC_PHASE_COUNT))
            return BAD("%s: /record/marks: mark %lld (kind %d, event %lld, module %d, storage %lld) out of range or "
                       "out of order",
                       path, (long long)m, k->kind, (long long)k->event, k->module, (long long)k->storage);
    }
    for (int32_t i = 0; i < r->n_modules; i++) {
        const remat_rec_module *q = &r->modules[i];
        if (q->label < 0 || q->label >= t->n_labels || q->layer < -1 || q->block < -1 || q->is_block > 1 ||
            q->bn_buffer_bytes < 0)
            return BAD("%s: /record/modules: module %d has label %d, layer %d, block %d (expected a label 0..%d)", path,
                       (int)i, q->label, q->layer, q->block, t->n_labels - 1);
    }
    if (r->T < 1 || r->N < 1 || r->steps < 1 || r->live_before_bytes < 0 || r->rng_state_bytes < 0)
        return BAD("%s: /record: T, N, steps: expected positive values, live_before_bytes and rng_state_bytes >= 0",
                   path);
    return REMAT_OK;
}

remat_status remat_ext_record_read_h5(hid_t f, const char *path, const remat_ext_trace *t, remat_ext_record **out,
                                      uint32_t *crc, remat_error *err) {
    *out = NULL;
    remat_ext_record *r = remat_xcalloc(1, sizeof *r, err);
    if (!r) return REMAT_ERR_NOMEM;
    int64_t nm = 0;
    remat_status st = read_table(f, path, "events", event_fields, COUNT(event_fields), sizeof(remat_rec_event),
                                 (void **)&r->events, &r->n_events, crc, err);
    if (st == REMAT_OK)
        st = read_table(f, path, "marks", mark_fields, COUNT(mark_fields), sizeof(remat_rec_mark), (void **)&r->marks,
                        &r->n_marks, crc, err);
    if (st == REMAT_OK)
        st = read_table(f, path, "modules", module_fields, COUNT(module_fields), sizeof(remat_rec_module),
                        (void **)&r->modules, &nm, crc, err);
    if (st == REMAT_OK && nm > INT32_MAX) st = BAD("%s: /record/modules: too many rows", path);
    r->n_modules = (int32_t)nm;
    if (st == REMAT_OK) st = read_str(f, path, "model", &r->model, NULL, 0, crc, err);
    if (st == REMAT_OK) st = read_str(f, path, "execution", NULL, r->execution, sizeof r->execution, crc, err);
    if (st == REMAT_OK) st = read_str(f, path, "torch_version", NULL, r->torch_version, sizeof r->torch_version, crc, err);
    if (st == REMAT_OK) st = read_str(f, path, "device", NULL, r->device, sizeof r->device, crc, err);
    if (st == REMAT_OK) st = read_str(f, path, "loss", NULL, r->loss, sizeof r->loss, crc, err);
    int64_t *ints[5] = {&r->live_before_bytes, &r->steps, &r->T, &r->N, &r->rng_state_bytes};
    const char *int_names[5] = {"live_before_bytes", "steps", "T", "N", "rng_state_bytes"};
    for (int i = 0; i < 5 && st == REMAT_OK; i++) {
        st = remat_h5_attr_read_i64(f, path, "/record", int_names[i], ints[i], err);
        if (st == REMAT_OK) *crc = remat_crc32(*crc, ints[i], sizeof(int64_t));
    }
    if (st == REMAT_OK) st = check(path, t, r, err);
    if (st != REMAT_OK) {
        remat_ext_record_free(r);
        remat_xfree(r);
        return st;
    }
    *out = r;
    return REMAT_OK;
}
