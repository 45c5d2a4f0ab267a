/* ext_replay.c - an external allocation stream replayed through the caching model
 * (ext_replay.h states what is and is not modelled).
 *
 * Assumptions:
 *  - A segment of at most small_segment bytes whose pool the snapshot does not name
 *    is a small-pool segment (the large pool never makes one that small under
 *    PyTorch's constants).
 *  - A block live at the start whose block bytes are unknown (allocated before the
 *    window, freed in it) is its request rounded as the model rounds it, extended to
 *    the next live block or the segment's end when the model would not have split
 *    the remainder off.
 *  - PyTorch records segment_alloc just before the alloc that needed it: the model's
 *    segment for that alloc is compared with it.
 */
#include "core/io/ext_replay.h"

#include "core/base/grow.h"
#include "core/base/rng.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- addr -> id hash ------------------------------------------------------------- */

typedef struct id_map {
    int64_t *key, *val; /* val -1 empty, -2 deleted */
    int64_t cap, used;
} id_map;

static int idm_init(id_map *m, int64_t cap, remat_error *err) {
    m->key = remat_xmalloc((size_t)cap * sizeof(int64_t), err);
    m->val = remat_xmalloc((size_t)cap * sizeof(int64_t), err);
    if (!m->key || !m->val) return 0;
    for (int64_t i = 0; i < cap; i++) m->val[i] = -1;
    m->cap = cap;
    m->used = 0;
    return 1;
}

static void idm_free(id_map *m) {
    remat_xfree(m->key);
    remat_xfree(m->val);
}

static int64_t idm_slot(const id_map *m, int64_t k) {
    int64_t mask = m->cap - 1, h = (int64_t)(remat_hash64(k) & (uint64_t)mask);
    while (m->val[h] != -1) {
        if (m->val[h] >= 0 && m->key[h] == k) return h;
        h = (h + 1) & mask;
    }
    return -1;
}

static int idm_put(id_map *m, int64_t k, int64_t v, remat_error *err) {
    int64_t s = idm_slot(m, k);
    if (s >= 0) {
        m->val[s] = v;
        return 1;
    }
    if ((m->used + 1) * 2 > m->cap) {
        id_map n;
        if (!idm_init(&n, m->cap * 2, err)) {
            idm_free(&n);
            return 0;
        }
        for (int64_t i = 0; i < m->cap; i++)
            if (m->val[i] >= 0) {
                int64_t h = (int64_t)(remat_hash64(m->key[i]) & (uint64_t)(n.cap - 1));
                while (n.val[h] != -1) h = (h + 1) & (n.cap - 1);
                n.key[h] = m->key[i];
                n.val[h] = m->val[i];
                n.used++;
            }
        idm_free(m);
        *m = n;
    }
    int64_t mask = m->cap - 1, h = (int64_t)(remat_hash64(k) & (uint64_t)mask);
    while (m->val[h] >= 0) h = (h + 1) & mask;
    if (m->val[h] == -1) m->used++;
    m->key[h] = k;
    m->val[h] = v;
    return 1;
}

/* ---- helpers ------------------------------------------------------------------------ */

static void note(remat_ext_replay *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void note(remat_ext_replay *r, const char *fmt, ...) {
    size_t used = strlen(r->notes);
    if (used + 2 >= sizeof r->notes) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(r->notes + used, sizeof r->notes - used - 1, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    used = strlen(r->notes);
    r->notes[used] = '\n';
    r->notes[used + 1] = 0;
}

typedef struct seg_ref {
    int64_t addr, size;
    int64_t stream;
    int pool;
    int expandable;
    int lane;          /* start segments: the lane (stream) that owns it */
    int64_t model_seg; /* start segments: its index in that lane's model */
} seg_ref;

static int cmp_seg(const void *a, const void *b) {
    const seg_ref *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}
static int cmp_live(const void *a, const void *b) {
    const remat_ext_live *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int64_t round_req(const remat_caching_config *c, int64_t bytes) {
    if (bytes < c->round_bytes) return c->round_bytes;
    return (bytes + c->round_bytes - 1) / c->round_bytes * c->round_bytes;
}

/* Index of the segment of segs[0..n) (sorted) holding addr, or -1. */
static int64_t find_seg(const seg_ref *segs, int64_t n, int64_t addr) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (segs[mid].addr <= addr) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return -1;
    const seg_ref *s = &segs[lo - 1];
    return addr < s->addr + s->size ? lo - 1 : -1;
}

static int push_seg(seg_ref **a, int64_t *n, int64_t *cap, seg_ref v, remat_error *err) {
    if (remat_grow((void **)a, cap, *n + 1, sizeof **a, 64, INT64_MAX, err)) return 0;
    (*a)[(*n)++] = v;
    return 1;
}

static int pool_of_size(const remat_caching_config *c, int64_t seg_bytes) { return seg_bytes <= c->small_segment ? 0 : 1; }

/* ---- the replay ------------------------------------------------------------------------ */

/* One model per stream: PyTorch keeps each stream's blocks and segments apart (a free
 * block is reused only by requests of the stream it was allocated on). */
typedef struct lane {
    int64_t stream;
    remat_alloc_model *m;
    int64_t *base; int64_t cap_base, n_base; /* real address of each model segment (-1: unknown) */
} lane;

/* Makes lane l's segment bases hold need (core/base/grow.h). */
static remat_status grow_base(lane *l, int64_t need, remat_error *err) {
    return remat_grow((void **)&l->base, &l->cap_base, need, sizeof *l->base, 256, INT64_MAX, err);
}

#define MAX_LANES 64

typedef struct state {
    const remat_caching_config *cfg;
    lane lanes[MAX_LANES];
    int n_lanes;
    seg_ref *known; int64_t n_known; /* every real segment the snapshot shows (sorted): to match new ones */
    id_map ids;                      /* recorded address -> id */
    int32_t *id_lane; int64_t cap_id_lane;
    int64_t next_id;
} state;

/* The lane of a stream (created on first use), or -1 with err set. */
static int lane_of(state *s, int64_t stream, remat_error *err) {
    for (int i = 0; i < s->n_lanes; i++)
        if (s->lanes[i].stream == stream) return i;
    if (s->n_lanes == MAX_LANES) {
        remat_error_set(err, REMAT_ERR_INPUT, "stream %lld: more than %d streams (the replay keeps one model per stream)",
                        (long long)stream, MAX_LANES);
        return -1;
    }
    lane *l = &s->lanes[s->n_lanes];
    memset(l, 0, sizeof *l);
    l->stream = stream;
    l->m = remat_alloc_model_init(REMAT_ALLOC_CACHING, s->cfg, err);
    if (!l->m) return -1;
    return s->n_lanes++;
}

/* A new id owned by lane k. */
static int64_t new_id(state *s, int k, remat_error *err) {
    int64_t id = s->next_id;
    if (remat_grow((void **)&s->id_lane, &s->cap_id_lane, id + 1, sizeof *s->id_lane, 4096, INT64_MAX, err)) return -1;
    s->id_lane[id] = k;
    return s->next_id++;
}

static void stats_sum(const state *s, remat_alloc_stats *out) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < s->n_lanes; i++) {
        remat_alloc_stats x;
        remat_alloc_model_stats(s->lanes[i].m, &x);
        out->reserved_bytes += x.reserved_bytes;
        out->allocated_bytes += x.allocated_bytes;
        out->live_bytes += x.live_bytes;
        out->n_segments += x.n_segments;
    }
}

/* err->msg becomes "<where>: <msg>", where the model's own "allocator model:
 * tensor <id>: " (an id internal to the replay) is dropped. */
static void where_prefix(remat_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void where_prefix(remat_error *err, const char *fmt, ...) {
    if (!err) return;
    char where[160], msg[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(where, sizeof where, fmt, ap);
    va_end(ap);
    const char *m = err->msg;
    static const char model[] = "allocator model: tensor ";
    if (!strncmp(m, model, sizeof model - 1)) {
        const char *c = strchr(m + sizeof model - 1, ':');
        if (c && c[1] == ' ') m = c + 2;
    }
    snprintf(msg, sizeof msg, "%s", m);
    size_t w = strlen(where);
    if (w + 2 >= sizeof err->msg) return;
    memcpy(err->msg, where, w);
    memcpy(err->msg + w, ": ", 2);
    size_t n = strlen(msg), room = sizeof err->msg - w - 3;
    memcpy(err->msg + w + 2, msg, n < room ? n : room);
    err->msg[w + 2 + (n < room ? n : room)] = 0;
}

/* Bytes of [addr, addr+size) that the window's segment_map events cover (an upper
 * bound when a range is mapped twice). */
static int64_t mapped_in_window(const remat_ext_device *d, int64_t addr, int64_t size) {
    int64_t sum = 0;
    for (int64_t i = 0; i < d->n_events; i++) {
        const remat_ext_event *e = &d->events[i];
        if (e->action != REMAT_EXT_SEGMENT_MAP) continue;
        int64_t lo = e->addr > addr ? e->addr : addr;
        int64_t hi_e = e->size > INT64_MAX - e->addr ? INT64_MAX : e->addr + e->size;
        int64_t hi = hi_e < addr + size ? hi_e : addr + size;
        if (hi > lo) sum += hi - lo;
    }
    return sum;
}

/* The start state's segments (in address order): those the snapshot shows that the
 * window did not create, and those it freed without creating; s->known gets every
 * segment seen. *expandable: one of them is expandable. */
static remat_status start_segments(const remat_ext_device *d, state *s, seg_ref **out, int64_t *n_out, int *expandable,
                                   remat_error *err) {
    const remat_caching_config *c = s->cfg;
    seg_ref *start = NULL, *created = NULL;
    int64_t n_start = 0, cap_start = 0, n_created = 0, cap_created = 0, cap_known = 0;
    remat_status st = REMAT_OK;
    for (int64_t i = 0; i < d->n_events && st == REMAT_OK; i++) {
        const remat_ext_event *e = &d->events[i];
        seg_ref v = {e->addr, e->size, e->stream, pool_of_size(c, e->size), 0, -1, -1};
        if (e->action == REMAT_EXT_SEGMENT_ALLOC) {
            if (!push_seg(&created, &n_created, &cap_created, v, err)) st = REMAT_ERR_NOMEM;
            if (st == REMAT_OK && !push_seg(&s->known, &s->n_known, &cap_known, v, err)) st = REMAT_ERR_NOMEM;
        } else if (e->action == REMAT_EXT_SEGMENT_FREE) {
            int64_t k = -1;
            for (int64_t j = 0; j < n_created; j++)
                if (created[j].addr == e->addr) k = j;
            if (k >= 0) created[k] = created[--n_created];
            else if (!push_seg(&start, &n_start, &cap_start, v, err)) st = REMAT_ERR_NOMEM;
            if (st == REMAT_OK && k < 0 && !push_seg(&s->known, &s->n_known, &cap_known, v, err)) st = REMAT_ERR_NOMEM;
        }
    }
    for (int64_t g = 0; g < d->n_segments && st == REMAT_OK; g++) {
        const remat_ext_segment *x = &d->segments[g];
        seg_ref v = {x->address, x->total_size, x->stream,
                     x->pool == REMAT_EXT_POOL_UNKNOWN ? pool_of_size(c, x->total_size) : x->pool, x->expandable, -1, -1};
        if (!push_seg(&s->known, &s->n_known, &cap_known, v, err)) { st = REMAT_ERR_NOMEM; break; }
        int in_window = 0;
        for (int64_t j = 0; j < n_created; j++) in_window |= created[j].addr == x->address;
        /* a mapped range of an expandable segment whose every byte the window mapped
         * (segment_map) did not exist at the start */
        if (x->expandable && mapped_in_window(d, x->address, x->total_size) >= x->total_size) in_window = 1;
        if (in_window) continue;
        *expandable |= x->expandable;
        if (!push_seg(&start, &n_start, &cap_start, v, err)) st = REMAT_ERR_NOMEM;
    }
    remat_xfree(created);
    if (st == REMAT_OK) {
        if (n_start > 1) qsort(start, (size_t)n_start, sizeof *start, cmp_seg);
        if (s->n_known > 1) qsort(s->known, (size_t)s->n_known, sizeof *s->known, cmp_seg);
    }
    *out = start;
    *n_out = n_start;
    return st;
}

/* Each start segment's lane; unless fresh, the segment added to its lane's model. */
static remat_status add_start_segments(state *s, seg_ref *start, int64_t n_start, int fresh, remat_ext_replay *r,
                                       remat_error *err) {
    for (int64_t g = 0; g < n_start; g++) {
        int k = lane_of(s, start[g].stream, err);
        if (k < 0) {
            remat_status st = err && err->status ? err->status : REMAT_ERR_NOMEM;
            if (st == REMAT_ERR_INPUT) where_prefix(err, "segment at 0x%llx", (unsigned long long)start[g].addr);
            return st;
        }
        start[g].lane = k;
        if (fresh) continue;
        lane *l = &s->lanes[k];
        if (grow_base(l, l->n_base + 1, err)) return REMAT_ERR_NOMEM;
        int64_t si = remat_alloc_model_add_segment(l->m, start[g].pool, start[g].size, err);
        if (si != l->n_base) return err && err->status ? err->status : REMAT_ERR_INTERNAL;
        l->base[si] = start[g].addr;
        l->n_base = si + 1;
        start[g].model_seg = si;
        r->reserved_start += start[g].size;
    }
    return REMAT_OK;
}

/* A fresh start: the blocks live at the start allocated anew, in address order. */
static remat_status alloc_start_blocks(state *s, const seg_ref *start, int64_t n_start, const remat_ext_live *live,
                                       int64_t n_live, remat_error *err) {
    for (int64_t k = 0; k < n_live; k++) {
        int64_t g = find_seg(start, n_start, live[k].addr);
        int ln = g >= 0 ? start[g].lane : lane_of(s, 0, err);
        int64_t id = ln < 0 ? -1 : new_id(s, ln, err);
        if (id < 0) return err && err->status ? err->status : REMAT_ERR_NOMEM;
        remat_alloc_result res;
        remat_status st = remat_alloc_model_alloc(s->lanes[ln].m, id, live[k].bytes, &res, err);
        if (st != REMAT_OK) return st;
        if (res.new_segment_bytes > 0) { /* addresses unknown in a fresh start */
            lane *l = &s->lanes[ln];
            if (grow_base(l, res.segment + 1, err)) return REMAT_ERR_NOMEM;
            for (int64_t q = l->n_base; q <= res.segment; q++) l->base[q] = -1;
            if (res.segment >= l->n_base) l->n_base = res.segment + 1;
        }
        if (!idm_put(&s->ids, live[k].addr, id, err)) return REMAT_ERR_NOMEM;
    }
    return REMAT_OK;
}

/* The blocks live at the start placed at their recorded addresses in the start segments;
 * those that cannot be are counted in r->start_blocks_unplaced. */
static remat_status place_start_blocks(state *s, const seg_ref *start, int64_t n_start, const remat_ext_live *live,
                                       int64_t n_live, remat_ext_replay *r, remat_error *err) {
    const remat_caching_config *c = s->cfg;
    for (int64_t k = 0; k < n_live; k++) {
        const remat_ext_live *v = &live[k];
        int64_t g = find_seg(start, n_start, v->addr);
        if (g < 0) {
            r->start_blocks_unplaced++;
            continue;
        }
        int64_t end = start[g].addr + start[g].size;
        int64_t next = k + 1 < n_live && live[k + 1].addr < end ? live[k + 1].addr : end;
        int64_t bb = v->block_bytes;
        if (bb < 0) {
            bb = round_req(c, v->bytes);
            int64_t rem = next - (v->addr + bb);
            int split = start[g].pool == 0 ? rem >= c->small_split_min : (bb < c->max_split_size && rem > c->large_split_min);
            if (rem < 0 || !split) bb = next - v->addr;
        }
        if (bb <= 0 || v->addr + bb > next || v->bytes > bb) {
            r->start_blocks_unplaced++;
            continue;
        }
        remat_error e2 = {REMAT_OK, {0}};
        int64_t id = new_id(s, start[g].lane, err);
        if (id < 0) return REMAT_ERR_NOMEM;
        if (remat_alloc_model_place(s->lanes[start[g].lane].m, id, v->bytes, start[g].model_seg, v->addr - start[g].addr,
                                    bb, &e2) != REMAT_OK) {
            r->start_blocks_unplaced++;
            continue;
        }
        if (!idm_put(&s->ids, v->addr, id, err)) return REMAT_ERR_NOMEM;
    }
    return REMAT_OK;
}

/* The start state: segments (in address order) and live blocks. */
static remat_status build_start(const remat_ext_device *d, state *s, int fresh, remat_ext_replay *r, remat_error *err) {
    seg_ref *start = NULL;
    int64_t n_start = 0;
    int expandable = 0;
    remat_status st = start_segments(d, s, &start, &n_start, &expandable, err);
    if (expandable) note(r, "expandable segments in the start state are replayed as fixed segments (page mapping not modelled)");
    if (st == REMAT_OK) st = add_start_segments(s, start, n_start, fresh, r, err);
    /* live blocks */
    remat_ext_live *live = NULL;
    int64_t n_live = 0;
    if (st == REMAT_OK) st = remat_ext_live_at(d, 0, &live, &n_live, NULL, err);
    if (st == REMAT_OK && n_live > 1) qsort(live, (size_t)n_live, sizeof *live, cmp_live);
    if (st == REMAT_OK && fresh) st = alloc_start_blocks(s, start, n_start, live, n_live, err);
    else if (st == REMAT_OK) st = place_start_blocks(s, start, n_start, live, n_live, r, err);
    if (r->start_blocks_unplaced)
        note(r, "%lld blocks live at the start could not be placed (outside the start segments or overlapping)",
             (long long)r->start_blocks_unplaced);
    remat_xfree(live);
    remat_xfree(start);
    return st;
}

/* One replay in progress: the state, the device's stream, what the notes count. */
typedef struct replay {
    state s;
    remat_caching_config c;
    const remat_ext_device *d;
    int32_t device;
    int64_t rec; /* recorded reserved bytes after the events so far */
    remat_alloc_stats ms;
    int64_t streams[8];
    int n_streams, pending, maps, ooms;
} replay;

/* The settings replayed: cfg, else the snapshot's, else PyTorch's defaults (said in a note). */
static remat_status replay_config(const remat_ext_trace *t, const remat_caching_config *cfg, remat_caching_config *c,
                                  remat_ext_replay *r, remat_error *err) {
    if (cfg) {
        *c = *cfg;
    } else if (t->allocator_config[0]) {
        remat_status st = remat_caching_config_parse(t->allocator_config, c, err);
        if (st != REMAT_OK) return st;
    } else {
        *c = remat_caching_config_default();
        note(r, "the snapshot recorded no allocator settings: replayed under PyTorch's defaults");
    }
    remat_caching_config_format(c, r->config, sizeof r->config);
    return REMAT_OK;
}

/* The first allocation placed elsewhere than recorded: where, and the free blocks as they
 * were before it (release, list, allocate again). */
static remat_status first_mismatch(replay *p, lane *l, int64_t id, int64_t i, int64_t pred, int pool, int64_t rounded,
                                   remat_ext_replay *r, remat_error *err) {
    const remat_ext_event *e = &p->d->events[i];
    r->first_mismatch_event = i;
    r->first_mismatch_size = e->size;
    r->first_mismatch_predicted = pred;
    r->first_mismatch_recorded = e->addr;
    remat_alloc_model_release(l->m, id, NULL);
    remat_alloc_block fb[REMAT_EXT_REPLAY_SHOW_FREE];
    r->first_mismatch_free_count = remat_alloc_model_list_free(l->m, pool, rounded, fb, REMAT_EXT_REPLAY_SHOW_FREE);
    for (int64_t k = 0; k < r->first_mismatch_free_count && k < REMAT_EXT_REPLAY_SHOW_FREE; k++) {
        r->first_mismatch_free_addr[k] =
            fb[k].segment < l->n_base && l->base[fb[k].segment] >= 0 ? l->base[fb[k].segment] + fb[k].offset : -1;
        r->first_mismatch_free_size[k] = fb[k].size;
    }
    remat_alloc_result again;
    return remat_alloc_model_alloc(l->m, id, e->size, &again, err);
}

/* An alloc event: allocated in its stream's model, a new segment matched to the real one,
 * the predicted address compared with the recorded one. */
static remat_status replay_alloc(replay *p, int64_t i, remat_ext_replay *r, remat_error *err) {
    const remat_ext_event *e = &p->d->events[i];
    state *s = &p->s;
    int known = 0;
    for (int k = 0; k < p->n_streams; k++) known |= p->streams[k] == e->stream;
    if (!known && p->n_streams < 8) p->streams[p->n_streams++] = e->stream;
    if (!known) r->streams++;
    remat_status st = REMAT_OK;
    int ln = lane_of(s, e->stream, err);
    int64_t id = ln < 0 ? -1 : new_id(s, ln, err);
    if (id < 0) st = err && err->status ? err->status : REMAT_ERR_NOMEM;
    remat_alloc_result res;
    if (st == REMAT_OK) st = remat_alloc_model_alloc(s->lanes[ln].m, id, e->size, &res, err);
    if (st != REMAT_OK) {
        if (st == REMAT_ERR_INPUT) /* the entry, as the snapshot numbers it */
            where_prefix(err, "device_traces[%d][%lld] (alloc of %lld bytes at 0x%llx, stream %lld)", (int)p->device,
                         (long long)i, (long long)e->size, (unsigned long long)e->addr, (long long)e->stream);
        return st;
    }
    lane *l = &s->lanes[ln];
    if (res.new_segment_bytes > 0 && res.segment >= l->n_base) {
        /* a segment the model created: matched to the real one holding the recorded address */
        if (grow_base(l, res.segment + 1, err)) return REMAT_ERR_NOMEM;
        int64_t g = p->c.expandable_segments ? -1 : find_seg(s->known, s->n_known, e->addr);
        for (int64_t k = l->n_base; k <= res.segment; k++) l->base[k] = -1;
        /* an expandable segment's recorded ranges start where its pages are mapped,
         * not at its base: the base is the address less the model's offset */
        l->base[res.segment] = g >= 0 ? s->known[g].addr : e->addr - res.offset;
        l->n_base = res.segment + 1;
        r->segments_created_predicted++;
        if (i > 0 && p->d->events[i - 1].action == REMAT_EXT_SEGMENT_ALLOC &&
            p->d->events[i - 1].size == res.new_segment_bytes)
            r->segment_allocs_matched++;
    }
    int64_t rounded = round_req(&p->c, e->size);
    int pool = rounded <= p->c.small_size ? 0 : 1;
    int64_t pred = res.segment >= 0 && res.segment < l->n_base && l->base[res.segment] >= 0
                       ? l->base[res.segment] + res.offset : -1;
    r->allocations++;
    r->pool_allocations[pool]++;
    if (pred == e->addr) {
        r->placed_at_recorded_address++;
        r->pool_placed[pool]++;
    } else if (r->first_mismatch_event < 0) {
        if ((st = first_mismatch(p, l, id, i, pred, pool, rounded, r, err)) != REMAT_OK) return st;
    }
    if (!idm_put(&s->ids, e->addr, id, err)) return REMAT_ERR_NOMEM;
    return REMAT_OK;
}

/* Event i applied to the model. */
static remat_status replay_event(replay *p, int64_t i, remat_ext_replay *r, remat_error *err) {
    const remat_ext_event *e = &p->d->events[i];
    state *s = &p->s;
    if (e->action == REMAT_EXT_ALLOC) return replay_alloc(p, i, r, err);
    if (e->action == REMAT_EXT_FREE_COMPLETED) {
        int64_t slot = idm_slot(&s->ids, e->addr);
        if (slot < 0) {
            r->unknown_frees++;
            return REMAT_OK;
        }
        int64_t id = s->ids.val[slot];
        remat_status st = remat_alloc_model_release(s->lanes[s->id_lane[id]].m, id, err);
        s->ids.val[slot] = -2;
        return st;
    }
    if (e->action == REMAT_EXT_SEGMENT_FREE || e->action == REMAT_EXT_SEGMENT_UNMAP) {
        /* a run of segment_free / segment_unmap: PyTorch's release_cached_blocks (from
         * empty_cache, or from a cudaMalloc / page mapping that failed, before the
         * retry): every entirely free segment released, every whole free page of an
         * expandable segment unmapped, on every stream */
        uint8_t pa = i > 0 ? p->d->events[i - 1].action : REMAT_EXT_ACTION_COUNT;
        if (pa != REMAT_EXT_SEGMENT_FREE && pa != REMAT_EXT_SEGMENT_UNMAP)
            for (int k = 0; k < s->n_lanes; k++) remat_alloc_model_empty_cache(s->lanes[k].m, NULL, NULL);
        if (e->action == REMAT_EXT_SEGMENT_UNMAP) p->maps++;
    } else if (e->action == REMAT_EXT_SEGMENT_MAP) {
        p->maps++;
    } else if (e->action == REMAT_EXT_OOM) {
        /* the request failed after release_cached_blocks and a retry: what the cache
         * held is gone (its segment_free / segment_unmap events came before) and the
         * request took nothing */
        for (int k = 0; k < s->n_lanes; k++) remat_alloc_model_empty_cache(s->lanes[k].m, NULL, NULL);
        p->ooms++;
    }
    return REMAT_OK;
}

/* After event i: the recorded and predicted reserved bytes, their peaks, and the
 * segment events' reserved bytes compared once a run of them is through. */
static void replay_compare(replay *p, int64_t i, remat_ext_replay *r) {
    const remat_ext_device *d = p->d;
    const remat_ext_event *e = &d->events[i];
    int is_seg = e->action >= REMAT_EXT_SEGMENT_ALLOC && e->action <= REMAT_EXT_SEGMENT_UNMAP;
    if (e->action == REMAT_EXT_SEGMENT_ALLOC) r->segment_allocs_recorded++;
    if (is_seg) {
        r->segment_events_recorded++;
        p->rec += (e->action == REMAT_EXT_SEGMENT_ALLOC || e->action == REMAT_EXT_SEGMENT_MAP) ? e->size : -e->size;
        if (p->rec > r->peak_reserved_recorded) r->peak_reserved_recorded = p->rec;
        p->pending++;
    }
    stats_sum(&p->s, &p->ms);
    if (p->ms.reserved_bytes > r->peak_reserved_predicted) r->peak_reserved_predicted = p->ms.reserved_bytes;
    if (p->ms.allocated_bytes > r->peak_allocated_predicted) {
        r->peak_allocated_predicted = p->ms.allocated_bytes;
        r->fragmentation_at_peak = p->ms.reserved_bytes - p->ms.allocated_bytes;
    }
    int next_is_seg = i + 1 < d->n_events && d->events[i + 1].action >= REMAT_EXT_SEGMENT_ALLOC &&
                      d->events[i + 1].action <= REMAT_EXT_SEGMENT_UNMAP;
    /* segment_alloc and segment_map come just before the alloc that needs them: compared after it */
    if (p->pending && !next_is_seg && e->action != REMAT_EXT_SEGMENT_ALLOC && e->action != REMAT_EXT_SEGMENT_MAP) {
        if (p->ms.reserved_bytes == p->rec) r->segment_events_reserved_matched += p->pending;
        p->pending = 0;
    }
}

/* The recorded reserved bytes at the window's start: the segments at its end, less what
 * the window's segment events added. */
static int64_t recorded_reserved_start(const remat_ext_device *d, remat_ext_replay *r) {
    int64_t rec = 0, delta = 0;
    for (int64_t g = 0; g < d->n_segments; g++) rec += d->segments[g].total_size;
    r->reserved_end_recorded = rec;
    for (int64_t i = 0; i < d->n_events; i++) {
        uint8_t a = d->events[i].action;
        if (a == REMAT_EXT_SEGMENT_ALLOC || a == REMAT_EXT_SEGMENT_MAP) delta += d->events[i].size;
        if (a == REMAT_EXT_SEGMENT_FREE || a == REMAT_EXT_SEGMENT_UNMAP) delta -= d->events[i].size;
    }
    return rec - delta;
}

/* The notes of a finished replay: streams, page mapping, ooms, unknown frees, what is not modelled. */
static void replay_notes(const remat_ext_trace *t, const replay *p, remat_ext_replay *r) {
    if (r->streams > 1)
        note(r, "%lld streams: one model per stream (blocks and segments reused only within their stream); "
                "the address order of segments across streams is not modelled",
             (long long)r->streams);
    if (p->maps) note(r, "%d segment_map/segment_unmap events (expandable segments): pages mapped by the model, unmapped where PyTorch released its cache", p->maps);
    if (p->ooms) note(r, "%d oom events: the model has no device limit; at each, the cache is released as PyTorch did before giving up (the failed request takes nothing)", p->ooms);
    if (r->unknown_frees)
        note(r, "%lld frees of addresses the replay did not know (events missing before the window?)",
             (long long)r->unknown_frees);
    if (r->segment_allocs_recorded == 0 && p->d->n_events > 0)
        note(r, "no segment events in the window: segment creation is checked only by the reserved bytes at the end");
    if (strstr(t->notes, "roundup_power2_divisions")) note(r, "roundup_power2_divisions: not modelled");
    if (strstr(t->notes, "garbage_collection_threshold")) note(r, "garbage_collection_threshold: not modelled");
}

static void state_free(state *s) {
    for (int k = 0; k < s->n_lanes; k++) {
        remat_alloc_model_free(s->lanes[k].m);
        remat_xfree(s->lanes[k].base);
    }
    remat_xfree(s->id_lane);
    remat_xfree(s->known);
    idm_free(&s->ids);
}

remat_status remat_ext_replay_run(const remat_ext_trace *t, int32_t device, const remat_caching_config *cfg,
                                  int fresh_start, remat_ext_replay *r, remat_error *err) {
    memset(r, 0, sizeof *r);
    r->first_mismatch_event = -1;
    if (device < 0 || device >= t->n_devices)
        return remat_error_set(err, REMAT_ERR_INPUT, "--device: expected 0..%d, got %d", t->n_devices - 1, (int)device);
    replay p;
    memset(&p, 0, sizeof p);
    p.d = &t->devices[device];
    p.device = device;
    r->device = p.d->device;
    remat_status st = replay_config(t, cfg, &p.c, r, err);
    if (st != REMAT_OK) return st;
    p.s.cfg = &p.c;
    if (!idm_init(&p.s.ids, 4096, err)) st = REMAT_ERR_NOMEM;
    if (st == REMAT_OK) st = build_start(p.d, &p.s, fresh_start, r, err);
    if (fresh_start) note(r, "fresh start: no cached segments; the blocks live at the start allocated anew in address order");
    p.rec = recorded_reserved_start(p.d, r);
    r->peak_reserved_recorded = p.rec;
    stats_sum(&p.s, &p.ms);
    r->peak_reserved_predicted = p.ms.reserved_bytes;
    r->peak_allocated_predicted = p.ms.allocated_bytes;
    r->fragmentation_at_peak = p.ms.reserved_bytes - p.ms.allocated_bytes;
    for (int64_t i = 0; i < p.d->n_events && st == REMAT_OK; i++) {
        st = replay_event(&p, i, r, err);
        if (st == REMAT_OK) replay_compare(&p, i, r); /* on failure r is cleared below */
    }
    if (st == REMAT_OK) {
        stats_sum(&p.s, &p.ms);
        r->reserved_end_predicted = p.ms.reserved_bytes;
        replay_notes(t, &p, r);
    }
    state_free(&p.s);
    if (st != REMAT_OK) {
        char keep[sizeof r->notes];
        memcpy(keep, r->notes, sizeof keep);
        memset(r, 0, sizeof *r);
        memcpy(r->notes, keep, sizeof keep);
    }
    return st;
}
