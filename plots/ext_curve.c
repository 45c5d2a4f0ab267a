/* ext_curve.c - curves of an external allocation stream (ext_curve.h). */
#include "plots/ext_curve.h"

#include <stdlib.h>
#include <string.h>

/* ---- building ------------------------------------------------------------------- */

static int cmp_live(const void *a, const void *b) {
    const remat_ext_live *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

void remat_ext_curve_free(remat_ext_curve *c) {
    remat_xfree(c->x);
    remat_xfree(c->allocated);
    remat_xfree(c->reserved);
    remat_xfree(c->peak_live);
    memset(c, 0, sizeof *c);
}

remat_status remat_ext_curve_build(const remat_ext_trace *t, int32_t device, remat_ext_curve *c, remat_error *err) {
    memset(c, 0, sizeof *c);
    if (device < 0 || device >= t->n_devices)
        return remat_error_set(err, REMAT_ERR_INPUT, "--device: expected 0..%d, got %d", t->n_devices - 1, (int)device);
    const remat_ext_device *d = &t->devices[device];
    c->device = d->device;
    int64_t n = d->n_events + 1;
    c->n = n;
    c->x = remat_xmalloc((size_t)n * sizeof(double), err);
    c->allocated = remat_xmalloc((size_t)n * sizeof(int64_t), err);
    c->reserved = remat_xmalloc((size_t)n * sizeof(int64_t), err);
    if (!c->x || !c->allocated || !c->reserved) {
        remat_ext_curve_free(c);
        return REMAT_ERR_NOMEM;
    }
    /* x */
    c->x_is_time = d->n_events > 0;
    for (int64_t i = 0; i < d->n_events && c->x_is_time; i++) c->x_is_time = d->events[i].time_us >= 0;
    int64_t t0 = c->x_is_time ? d->events[0].time_us : 0;
    c->x[0] = 0.0;
    for (int64_t i = 0; i < d->n_events; i++)
        c->x[i + 1] = c->x_is_time ? (double)(d->events[i].time_us - t0) * 1e-6 : (double)(i + 1);
    /* allocated: replayed against the live set; reserved: the end's segments undone */
    remat_status st = remat_ext_allocated_after(d, c->allocated, &c->inconsistent, err);
    if (st != REMAT_OK) {
        remat_ext_curve_free(c);
        return st;
    }
    int64_t res_end = 0, res_delta = 0;
    for (int64_t s = 0; s < d->n_segments; s++) res_end += d->segments[s].total_size;
    for (int64_t i = 0; i < d->n_events; i++) {
        uint8_t a = d->events[i].action;
        if (a == REMAT_EXT_SEGMENT_ALLOC || a == REMAT_EXT_SEGMENT_MAP) res_delta += d->events[i].size;
        if (a == REMAT_EXT_SEGMENT_FREE || a == REMAT_EXT_SEGMENT_UNMAP) res_delta -= d->events[i].size;
    }
    int64_t rs = res_end - res_delta;
    if (rs < 0) {
        c->inconsistent++;
        rs = 0;
    }
    c->reserved[0] = rs;
    for (int64_t i = 0; i < d->n_events; i++) {
        const remat_ext_event *e = &d->events[i];
        if (e->action == REMAT_EXT_SEGMENT_ALLOC || e->action == REMAT_EXT_SEGMENT_MAP) rs += e->size;
        if (e->action == REMAT_EXT_SEGMENT_FREE || e->action == REMAT_EXT_SEGMENT_UNMAP) rs -= e->size;
        c->reserved[i + 1] = rs;
    }
    c->peak_point = c->peak_reserved_point = 0;
    for (int64_t p = 1; p < n; p++) {
        if (c->allocated[p] > c->allocated[c->peak_point]) c->peak_point = p;
        if (c->reserved[p] > c->reserved[c->peak_reserved_point]) c->peak_reserved_point = p;
    }
    c->peak_allocated = c->allocated[c->peak_point];
    c->peak_reserved = c->reserved[c->peak_reserved_point];
    /* what was live at the peak */
    st = remat_ext_live_at(d, c->peak_point, &c->peak_live, &c->n_peak_live, NULL, err);
    if (st == REMAT_OK && c->n_peak_live > 1)
        qsort(c->peak_live, (size_t)c->n_peak_live, sizeof *c->peak_live, cmp_live);
    if (st != REMAT_OK) remat_ext_curve_free(c);
    return st;
}

typedef struct by_label { int32_t label; int64_t bytes; } by_label;

static int cmp_label(const void *a, const void *b) {
    const by_label *x = a, *y = b;
    return x->label < y->label ? -1 : x->label > y->label;
}
static int cmp_bytes(const void *a, const void *b) {
    const by_label *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    return x->label < y->label ? -1 : x->label > y->label;
}

int64_t remat_ext_curve_breakdown(const remat_ext_curve *c, int32_t *labels, int64_t *bytes, int64_t max,
                                  remat_error *err) {
    if (c->n_peak_live == 0) return 0;
    by_label *v = remat_xmalloc((size_t)c->n_peak_live * sizeof *v, err);
    if (!v) return -1;
    for (int64_t i = 0; i < c->n_peak_live; i++) v[i] = (by_label){c->peak_live[i].label, c->peak_live[i].bytes};
    qsort(v, (size_t)c->n_peak_live, sizeof *v, cmp_label);
    int64_t k = 0;
    for (int64_t i = 0; i < c->n_peak_live; i++) {
        if (k > 0 && v[k - 1].label == v[i].label) v[k - 1].bytes += v[i].bytes;
        else v[k++] = v[i];
    }
    qsort(v, (size_t)k, sizeof *v, cmp_bytes);
    for (int64_t i = 0; i < k && i < max; i++) {
        labels[i] = v[i].label;
        bytes[i] = v[i].bytes;
    }
    remat_xfree(v);
    return k;
}
