/* ext_trace.c - external allocation streams in memory (ext_trace.h). */
#include "core/io/ext_trace.h"

#include "core/io/ext_record.h"
#include "core/base/grow.h"
#include "core/base/rng.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *action_names[REMAT_EXT_ACTION_COUNT] = {
    "alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
    "segment_map", "segment_unmap", "snapshot", "oom", "user_defined",
};

const char *remat_ext_action_name(int a) { return a >= 0 && a < REMAT_EXT_ACTION_COUNT ? action_names[a] : NULL; }

int remat_ext_action_parse(const char *s, size_t len) {
    for (int a = 0; a < REMAT_EXT_ACTION_COUNT; a++)
        if (strlen(action_names[a]) == len && memcmp(action_names[a], s, len) == 0) return a;
    if (len == 8 && memcmp(s, "annotate", 8) == 0) return REMAT_EXT_ANNOTATE; /* remat 0.3.0's name for it */
    return -1;
}

const char *remat_ext_block_state_name(int s) {
    static const char *names[REMAT_EXT_BLOCK_STATE_COUNT] = {"active_allocated", "active_pending_free", "inactive"};
    return s >= 0 && s < REMAT_EXT_BLOCK_STATE_COUNT ? names[s] : NULL;
}

void remat_ext_trace_init(remat_ext_trace *t) {
    memset(t, 0, sizeof *t);
    t->schema_version = REMAT_EXT_SCHEMA_VERSION;
}

void remat_ext_trace_free(remat_ext_trace *t) {
    for (int32_t i = 0; i < t->n_devices; i++) {
        remat_xfree(t->devices[i].events);
        remat_xfree(t->devices[i].segments);
        remat_xfree(t->devices[i].blocks);
    }
    remat_xfree(t->devices);
    remat_xfree(t->label_text);
    remat_xfree(t->label_off);
    if (t->record) remat_ext_record_free(t->record);
    remat_xfree(t->record);
    remat_ext_trace_init(t);
}

remat_status remat_ext_trace_set_devices(remat_ext_trace *t, int32_t n, remat_error *err) {
    if (n <= t->n_devices) return REMAT_OK;
    remat_ext_device *d = remat_xrealloc(t->devices, (size_t)n * sizeof *d, err);
    if (!d) return REMAT_ERR_NOMEM;
    memset(d + t->n_devices, 0, (size_t)(n - t->n_devices) * sizeof *d);
    for (int32_t i = t->n_devices; i < n; i++) d[i].device = i;
    t->devices = d;
    t->n_devices = n;
    return REMAT_OK;
}

int64_t remat_ext_add_event(remat_ext_device *d, const remat_ext_event *e, remat_error *err) {
    if (remat_grow((void **)&d->events, &d->cap_events, d->n_events + 1, sizeof *e, 256, INT64_MAX, err)) return -1;
    d->events[d->n_events] = *e;
    return d->n_events++;
}

int64_t remat_ext_add_segment(remat_ext_device *d, const remat_ext_segment *s, remat_error *err) {
    if (remat_grow((void **)&d->segments, &d->cap_segments, d->n_segments + 1, sizeof *s, 256, INT64_MAX, err)) return -1;
    d->segments[d->n_segments] = *s;
    return d->n_segments++;
}

int64_t remat_ext_add_block(remat_ext_device *d, const remat_ext_block *b, remat_error *err) {
    if (remat_grow((void **)&d->blocks, &d->cap_blocks, d->n_blocks + 1, sizeof *b, 256, INT64_MAX, err)) return -1;
    d->blocks[d->n_blocks] = *b;
    return d->n_blocks++;
}

int32_t remat_ext_add_label(remat_ext_trace *t, const char *s, size_t len, remat_error *err) {
    if (t->n_labels == INT32_MAX) {
        remat_error_set(err, REMAT_ERR_NOMEM, "external trace: more than 2^31 labels");
        return -1;
    }
    if (remat_grow((void **)&t->label_text, &t->cap_label_bytes, t->label_bytes + (int64_t)len + 1, 1, 4096,
                   INT64_MAX, err))
        return -1;
    int64_t cap = t->cap_labels;
    if (remat_grow((void **)&t->label_off, &cap, t->n_labels + 1, sizeof(int64_t), 256, INT32_MAX, err)) return -1;
    t->cap_labels = (int32_t)cap;
    char *dst = t->label_text + t->label_bytes;
    for (size_t i = 0; i < len; i++) dst[i] = s[i] ? s[i] : '?';
    dst[len] = 0;
    t->label_off[t->n_labels] = t->label_bytes;
    t->label_bytes += (int64_t)len + 1;
    return t->n_labels++;
}

/* total += v, 0 when it stays within REMAT_EXT_MAX_TOTAL_BYTES (v >= 0). */
static int add_size(int64_t *total, int64_t v) {
    if (v < 0 || v > REMAT_EXT_MAX_TOTAL_BYTES - *total) return -1;
    *total += v;
    return 0;
}

remat_status remat_ext_check_sizes(const remat_ext_device *d, const char *where, remat_error *err) {
    int64_t total = 0;
    const char *what = NULL;
    int64_t at = -1, v = 0;
    for (int64_t i = 0; i < d->n_events && !what; i++)
        if (add_size(&total, v = d->events[i].size)) what = "events/size: event", at = i;
    for (int64_t i = 0; i < d->n_segments && !what; i++)
        if (add_size(&total, v = d->segments[i].total_size)) what = "segments/total_size: segment", at = i;
    for (int64_t i = 0; i < d->n_blocks && !what; i++)
        if (add_size(&total, v = d->blocks[i].size)) what = "blocks/size: block", at = i;
    if (!what) return REMAT_OK;
    return remat_error_set(err, REMAT_ERR_INPUT,
                           "%s/%s %lld has %lld bytes, expected sizes >= 0 that add up to at most 2^62 bytes per "
                           "device (the sizes before it add up to %lld)",
                           where, what, (long long)at, (long long)v, (long long)total);
}

const char *remat_ext_label(const remat_ext_trace *t, int32_t i) {
    if (i < 0 || i >= t->n_labels) return "";
    return t->label_text + t->label_off[i];
}

void remat_ext_note(remat_ext_trace *t, const char *fmt, ...) {
    size_t used = strlen(t->notes), room = sizeof t->notes - used;
    if (room < 8) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (strlen(line) + 2 > room - 4) {
        if (!strstr(t->notes, "...\n")) snprintf(t->notes + used, room, "...\n");
        return;
    }
    snprintf(t->notes + used, room, "%s\n", line);
}

/* ---- live blocks ------------------------------------------------------------------
 * A hash of live blocks by address (open addressing; bytes -1 empty, -2 deleted). */

typedef struct live_map {
    remat_ext_live *e;
    int64_t cap, used, live;
} live_map;

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

static int64_t map_find(const live_map *m, int64_t addr) {
    int64_t mask = m->cap - 1, h = (int64_t)(remat_hash64(addr) & (uint64_t)mask);
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
        int64_t h = (int64_t)(remat_hash64(m->e[i].addr) & (uint64_t)(n.cap - 1));
        while (n.e[h].bytes != -1) h = (h + 1) & (n.cap - 1);
        n.e[h] = m->e[i];
        n.used++;
        n.live++;
    }
    remat_xfree(m->e);
    *m = n;
    return 1;
}

/* Inserts or replaces: 1 replaced, 0 new, -1 NOMEM. */
static int map_put(live_map *m, const remat_ext_live *v, remat_error *err) {
    int64_t f = map_find(m, v->addr);
    if (f >= 0) {
        m->e[f] = *v;
        return 1;
    }
    if ((m->used + 1) * 2 > m->cap && !map_rehash(m, err)) return -1;
    int64_t mask = m->cap - 1, h = (int64_t)(remat_hash64(v->addr) & (uint64_t)mask);
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

/* Appends v to the growable array *a. */
static int push_live(remat_ext_live **a, int64_t *n, int64_t *cap, const remat_ext_live *v, remat_error *err) {
    if (remat_grow((void **)a, cap, *n + 1, sizeof **a, 256, INT64_MAX, err)) return 0;
    (*a)[(*n)++] = *v;
    return 1;
}

remat_status remat_ext_live_at(const remat_ext_device *d, int64_t k, remat_ext_live **out, int64_t *n,
                               int64_t *inconsistent, remat_error *err) {
    *out = NULL;
    *n = 0;
    if (k < 0 || k > d->n_events)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "external trace: live set after %lld of %lld events",
                               (long long)k, (long long)d->n_events);
    live_map m;
    if (!map_init(&m, 1024, err)) return REMAT_ERR_NOMEM;
    remat_ext_live *s = NULL;
    int64_t ns = 0, cap = 0, bad = 0;
    remat_status st = REMAT_OK;
    /* pass 1: the window's own allocations; the first free of an address the window did
     * not allocate was live at the start. An address stays in the map once seen, marked
     * dead (before_window = -1) when freed: a second free of it contradicts the stream. */
    for (int64_t i = 0; i < d->n_events && st == REMAT_OK; i++) {
        const remat_ext_event *e = &d->events[i];
        if (e->action == REMAT_EXT_ALLOC) {
            int64_t f = map_find(&m, e->addr);
            bad += f >= 0 && m.e[f].before_window >= 0;
            remat_ext_live v = {e->addr, e->size, -1, e->label, 0};
            if (map_put(&m, &v, err) < 0) st = REMAT_ERR_NOMEM;
        } else if (e->action == REMAT_EXT_FREE_COMPLETED) {
            int64_t f = map_find(&m, e->addr);
            if (f >= 0 && m.e[f].before_window >= 0) {
                m.e[f].before_window = -1;
            } else if (f >= 0) {
                bad++;
            } else {
                remat_ext_live v = {e->addr, e->size, -1, -1, 1};
                remat_ext_live dead = {e->addr, e->size, -1, -1, -1};
                if (!push_live(&s, &ns, &cap, &v, err) || map_put(&m, &dead, err) < 0) st = REMAT_ERR_NOMEM;
            }
        }
    }
    for (int64_t b = 0; b < d->n_blocks && st == REMAT_OK; b++) {
        const remat_ext_block *x = &d->blocks[b];
        int64_t f = x->state == REMAT_EXT_BLOCK_INACTIVE ? -1 : map_find(&m, x->address);
        if (x->state == REMAT_EXT_BLOCK_INACTIVE || (f >= 0 && m.e[f].before_window >= 0)) continue;
        if (f >= 0) { /* active at the end, but the window's last word on it was a free */
            bad++;
            continue;
        }
        remat_ext_live v = {x->address, x->requested_size >= 0 ? x->requested_size : x->size, x->size, x->label, 1};
        if (!push_live(&s, &ns, &cap, &v, err)) st = REMAT_ERR_NOMEM;
    }
    remat_xfree(m.e);
    m.e = NULL;
    /* pass 2: from the start set, apply the first k events */
    if (st == REMAT_OK && k > 0) {
        if (!map_init(&m, ns + 1024, err)) st = REMAT_ERR_NOMEM;
        for (int64_t i = 0; i < ns && st == REMAT_OK; i++)
            if (map_put(&m, &s[i], err) < 0) st = REMAT_ERR_NOMEM;
        for (int64_t i = 0; i < k && st == REMAT_OK; i++) {
            const remat_ext_event *e = &d->events[i];
            if (e->action == REMAT_EXT_ALLOC) {
                remat_ext_live v = {e->addr, e->size, -1, e->label, 0};
                if (map_put(&m, &v, err) < 0) st = REMAT_ERR_NOMEM;
            } else if (e->action == REMAT_EXT_FREE_COMPLETED) {
                int64_t f = map_find(&m, e->addr);
                if (f >= 0) map_del(&m, f);
            }
        }
        remat_xfree(s);
        s = NULL;
        ns = 0;
        if (st == REMAT_OK && m.live > 0) {
            s = remat_xmalloc((size_t)m.live * sizeof *s, err);
            if (!s) st = REMAT_ERR_NOMEM;
            for (int64_t i = 0; i < m.cap && st == REMAT_OK; i++)
                if (m.e[i].bytes >= 0) s[ns++] = m.e[i];
        }
        remat_xfree(m.e);
    }
    if (st != REMAT_OK) {
        remat_xfree(s);
        return st;
    }
    if (inconsistent) *inconsistent += bad;
    *out = s;
    *n = ns;
    return REMAT_OK;
}

remat_status remat_ext_allocated_after(const remat_ext_device *d, int64_t *allocated, int64_t *inconsistent,
                                       remat_error *err) {
    remat_ext_live *start = NULL;
    int64_t n_start = 0, bad = 0;
    remat_status st = remat_ext_live_at(d, 0, &start, &n_start, &bad, err);
    if (st != REMAT_OK) return st;
    live_map m;
    if (!map_init(&m, n_start + 1024, err)) st = REMAT_ERR_NOMEM;
    int64_t al = 0;
    for (int64_t k = 0; k < n_start && st == REMAT_OK; k++) {
        al += start[k].bytes;
        if (map_put(&m, &start[k], err) < 0) st = REMAT_ERR_NOMEM;
    }
    remat_xfree(start);
    if (st == REMAT_OK) allocated[0] = al;
    for (int64_t i = 0; i < d->n_events && st == REMAT_OK; i++) {
        const remat_ext_event *e = &d->events[i];
        if (e->action == REMAT_EXT_ALLOC) {
            int64_t f = map_find(&m, e->addr);
            if (f >= 0) al -= m.e[f].bytes; /* counted in pass 1 already */
            remat_ext_live v = {e->addr, e->size, -1, e->label, 0};
            if (map_put(&m, &v, err) < 0) st = REMAT_ERR_NOMEM;
            al += e->size;
        } else if (e->action == REMAT_EXT_FREE_COMPLETED) {
            int64_t f = map_find(&m, e->addr);
            if (f >= 0) {
                al -= m.e[f].bytes;
                map_del(&m, f);
            }
        }
        allocated[i + 1] = al;
    }
    remat_xfree(m.e);
    if (st == REMAT_OK && inconsistent) *inconsistent += bad;
    return st;
}
