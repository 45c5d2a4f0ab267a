/* ext_curve.c - curves of an external allocation stream (ext_curve.h). */
#include "plots/ext_curve.h"

#include <stdlib.h>
#include <string.h>

/* ---- a hash of live blocks by address (open addressing, tombstones) ---------- */

typedef struct live_map {
    remat_ext_live *e;  /* bytes < 0: empty (-1) or deleted (-2) */
    int64_t cap, used, live;
} live_map;

static uint64_t mix(int64_t a) {
    uint64_t x = (uint64_t)a;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static int map_init(live_map *m, int64_t n, remat_error *err) {
    int64_t cap = 1024;
    while (cap < 2 * n + 16) cap *= 2;
    m->e = remat_xmalloc((size_t)cap * sizeof *m->e, err);
    if (!m->e) return 0;
    for (int64_t i = 0; i < cap; i++) m->e[i].bytes = -1;
    m->cap = cap;
    m->used = m->live = 0;
    return 1;
}

/* Slot of addr, or -1. */
static int64_t map_find(const live_map *m, int64_t addr) {
    int64_t mask = m->cap - 1, h = (int64_t)(mix(addr) & (uint64_t)mask);
    while (m->e[h].bytes != -1) {
        if (m->e[h].bytes >= 0 && m->e[h].addr == addr) return h;
        h = (h + 1) & mask;
    }
    return -1;
}

static int map_rehash(live_map *m, remat_error *err) {
    live_map n;
    if (!map_init(&n, m->live * 2 + 16, err)) return 0;
    for (int64_t i = 0; i < m->cap; i++) {
        if (m->e[i].bytes < 0) continue;
        int64_t h = (int64_t)(mix(m->e[i].addr) & (uint64_t)(n.cap - 1));
        while (n.e[h].bytes != -1) h = (h + 1) & (n.cap - 1);
        n.e[h] = m->e[i];
        n.used++;
        n.live++;
    }
    remat_xfree(m->e);
    *m = n;
    return 1;
}

/* Inserts or replaces; returns 1 if addr was already live (replaced), 0 if new, -1 NOMEM. */
static int map_put(live_map *m, const remat_ext_live *v, remat_error *err) {
    int64_t f = map_find(m, v->addr);
    if (f >= 0) {
        m->e[f] = *v;
        return 1;
    }
    if ((m->used + 1) * 2 > m->cap && !map_rehash(m, err)) return -1;
    int64_t mask = m->cap - 1, h = (int64_t)(mix(v->addr) & (uint64_t)mask);
    while (m->e[h].bytes >= 0) h = (h + 1) & mask;
    if (m->e[h].bytes == -1) m->used++;
    m->e[h] = *v;
    m->live++;
    return 0;
}

static void map_del(live_map *m, int64_t slot) {
    m->e[slot].bytes = -2;
    m->live--;
}

/* ---- building ------------------------------------------------------------------- */

static int64_t block_bytes(const remat_ext_block *b) { return b->requested_size >= 0 ? b->requested_size : b->size; }

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

/* The live set before the window, into *start (n entries). */
static remat_status start_set(const remat_ext_device *d, remat_ext_live **start, int64_t *n, int64_t *inconsistent,
                              remat_error *err) {
    live_map m;
    if (!map_init(&m, 1024, err)) return REMAT_ERR_NOMEM;
    int64_t cap = 256, k = 0;
    remat_ext_live *s = remat_xmalloc((size_t)cap * sizeof *s, err);
    remat_status st = s ? REMAT_OK : REMAT_ERR_NOMEM;
    for (int64_t i = 0; i < d->n_events && st == REMAT_OK; i++) {
        const remat_ext_event *e = &d->events[i];
        if (e->action == REMAT_EXT_ALLOC) {
            remat_ext_live v = {e->addr, e->size, e->label, 0};
            int r = map_put(&m, &v, err);
            if (r < 0) st = REMAT_ERR_NOMEM;
            else *inconsistent += r;
        } else if (e->action == REMAT_EXT_FREE_COMPLETED) {
            int64_t f = map_find(&m, e->addr);
            if (f >= 0) {
                map_del(&m, f);
                continue;
            }
            if (k == cap) {
                remat_ext_live *ns = remat_xrealloc(s, (size_t)cap * 2 * sizeof *s, err);
                if (!ns) { st = REMAT_ERR_NOMEM; break; }
                s = ns;
                cap *= 2;
            }
            s[k++] = (remat_ext_live){e->addr, e->size, -1, 1};
        }
    }
    for (int64_t b = 0; b < d->n_blocks && st == REMAT_OK; b++) {
        const remat_ext_block *x = &d->blocks[b];
        if (x->state == REMAT_EXT_BLOCK_INACTIVE || map_find(&m, x->address) >= 0) continue;
        if (k == cap) {
            remat_ext_live *ns = remat_xrealloc(s, (size_t)cap * 2 * sizeof *s, err);
            if (!ns) { st = REMAT_ERR_NOMEM; break; }
            s = ns;
            cap *= 2;
        }
        s[k++] = (remat_ext_live){x->address, block_bytes(x), x->label, 1};
    }
    remat_xfree(m.e);
    if (st != REMAT_OK) {
        remat_xfree(s);
        return st;
    }
    *start = s;
    *n = k;
    return REMAT_OK;
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
    /* start state */
    remat_ext_live *start = NULL;
    int64_t n_start = 0;
    remat_status st = start_set(d, &start, &n_start, &c->inconsistent, err);
    if (st != REMAT_OK) {
        remat_ext_curve_free(c);
        return st;
    }
    int64_t alloc0 = 0, res_end = 0, res_delta = 0;
    for (int64_t k = 0; k < n_start; k++) alloc0 += start[k].bytes;
    for (int64_t s = 0; s < d->n_segments; s++) res_end += d->segments[s].total_size;
    for (int64_t i = 0; i < d->n_events; i++) {
        uint8_t a = d->events[i].action;
        if (a == REMAT_EXT_SEGMENT_ALLOC || a == REMAT_EXT_SEGMENT_MAP) res_delta += d->events[i].size;
        if (a == REMAT_EXT_SEGMENT_FREE || a == REMAT_EXT_SEGMENT_UNMAP) res_delta -= d->events[i].size;
    }
    int64_t res0 = res_end - res_delta;
    if (res0 < 0) {
        c->inconsistent++;
        res0 = 0;
    }
    /* curves */
    int64_t al = alloc0, rs = res0;
    c->allocated[0] = al;
    c->reserved[0] = rs;
    for (int64_t i = 0; i < d->n_events; i++) {
        const remat_ext_event *e = &d->events[i];
        switch (e->action) {
        case REMAT_EXT_ALLOC: al += e->size; break;
        case REMAT_EXT_FREE_COMPLETED: al -= e->size; break;
        case REMAT_EXT_SEGMENT_ALLOC: case REMAT_EXT_SEGMENT_MAP: rs += e->size; break;
        case REMAT_EXT_SEGMENT_FREE: case REMAT_EXT_SEGMENT_UNMAP: rs -= e->size; break;
        default: break;
        }
        c->allocated[i + 1] = al;
        c->reserved[i + 1] = rs;
    }
    c->peak_point = c->peak_reserved_point = 0;
    for (int64_t p = 1; p < n; p++) {
        if (c->allocated[p] > c->allocated[c->peak_point]) c->peak_point = p;
        if (c->reserved[p] > c->reserved[c->peak_reserved_point]) c->peak_reserved_point = p;
    }
    c->peak_allocated = c->allocated[c->peak_point];
    c->peak_reserved = c->reserved[c->peak_reserved_point];
    /* what was live at the peak: the start set, then the events before it */
    live_map m;
    if (!map_init(&m, n_start + 1024, err)) st = REMAT_ERR_NOMEM;
    for (int64_t k = 0; k < n_start && st == REMAT_OK; k++)
        if (map_put(&m, &start[k], err) < 0) st = REMAT_ERR_NOMEM;
    for (int64_t i = 0; i < c->peak_point && st == REMAT_OK; i++) {
        const remat_ext_event *e = &d->events[i];
        if (e->action == REMAT_EXT_ALLOC) {
            remat_ext_live v = {e->addr, e->size, e->label, 0};
            if (map_put(&m, &v, err) < 0) st = REMAT_ERR_NOMEM;
        } else if (e->action == REMAT_EXT_FREE_COMPLETED) {
            int64_t f = map_find(&m, e->addr);
            if (f >= 0) map_del(&m, f);
        }
    }
    remat_xfree(start);
    if (st == REMAT_OK && m.live > 0) {
        c->peak_live = remat_xmalloc((size_t)m.live * sizeof *c->peak_live, err);
        if (!c->peak_live) st = REMAT_ERR_NOMEM;
        for (int64_t i = 0; i < m.cap && st == REMAT_OK; i++)
            if (m.e[i].bytes >= 0) c->peak_live[c->n_peak_live++] = m.e[i];
        if (st == REMAT_OK) qsort(c->peak_live, (size_t)c->n_peak_live, sizeof *c->peak_live, cmp_live);
    }
    remat_xfree(m.e);
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
