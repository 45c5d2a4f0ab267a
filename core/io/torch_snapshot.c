/* torch_snapshot.c - PyTorch memory snapshot -> external allocation stream
 * (torch_snapshot.h).
 *
 * Assumptions about the format (what PyTorch 2.0 to 2.x write; the 2023 layout is
 * the older one):
 *  - Sizes in trace entries are the bytes requested (PyTorch records orig_size),
 *    block `size` is the block's bytes, `requested_size` what was asked for.
 *  - A segment's blocks are listed in address order and tile it; when blocks carry
 *    no `address` (2023 layout) it is the segment's address plus the sizes before.
 *  - In the 2023 layout a block's frames are those of the last `history` entry.
 *  - `max_split_size` -1 (or SIZE_MAX) means no limit; `roundup_power2_divisions`
 *    is a dict of interval -> divisions (or a plain int in some versions).
 * Segments are stored per device in address order (PyTorch writes them that way;
 * they are sorted here when not).
 */
#define _DEFAULT_SOURCE
#include "core/io/torch_snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc/alloc_model.h"
#include "core/io/input_file.h"
#include "core/io/pickle.h"

typedef struct importer {
    const remat_pk_doc *doc;
    const char *origin;
    remat_ext_trace *t;
    remat_error *err;
    /* label dedup: open addressing over label indices (-1 empty) */
    int32_t *lh;
    uint32_t lh_cap, lh_n;
    char buf[2048];
    /* labels by the refs of their top frames (frame dicts and lists are shared through
     * the memo in what PyTorch writes): open addressing, key[3] all NIL = empty */
    struct frame_key { remat_pk_ref f[REMAT_TORCH_LABEL_FRAMES]; int32_t label; } *fc;
    uint32_t fc_cap, fc_n;
    /* the trace entry being read, named only when a message needs it */
    int32_t cur_dev;
    int64_t cur_entry;
    char where[64];
    /* what was missing, counted (reported once each) */
    int64_t no_time, no_stream, no_requested, derived_addr, no_device_free, no_expandable, no_type;
    int64_t private_pool; /* segments with a segment_pool_id other than (0, 0): CUDA-graph pools */
    /* memory: what the import keeps (events, segments, blocks, labels) against what the
     * input allows (REMAT_TORCH_BYTES_PER_INPUT_BYTE, less the parsed document) */
    int64_t kept, budget;
} importer;

#define BAD(...) remat_error_set(im->err, REMAT_ERR_INPUT, __VA_ARGS__)

/* Counts bytes the import keeps; REMAT_ERR_INPUT once they pass the budget (a value
 * shared through the memo is counted each time it is used: one list named by every
 * device would otherwise multiply the input). */
static remat_status charge(importer *im, size_t bytes, const char *where) {
    im->kept += (int64_t)bytes;
    if (im->kept <= im->budget) return REMAT_OK;
    return BAD("%s: %s: the snapshot expands past %lld bytes in memory (%d per byte of its %zu bytes, the parsed "
               "file included): values shared through the pickle memo are counted each time they are used",
               im->origin, where, (long long)im->budget, REMAT_TORCH_BYTES_PER_INPUT_BYTE,
               im->doc->size);
}

/* ---- labels -------------------------------------------------------------------- */

static uint64_t fnv(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

static int32_t intern(importer *im, const char *s, size_t n) {
    remat_ext_trace *t = im->t;
    if ((im->lh_n + 1) * 2 > im->lh_cap) {
        uint32_t nc = im->lh_cap ? im->lh_cap * 2 : 1024;
        int32_t *nh = remat_xmalloc((size_t)nc * sizeof(int32_t), im->err);
        if (!nh) return -2;
        memset(nh, 0xff, (size_t)nc * sizeof(int32_t));
        for (uint32_t i = 0; i < im->lh_cap; i++) {
            int32_t l = im->lh[i];
            if (l < 0) continue;
            const char *ls = remat_ext_label(t, l);
            uint32_t h = (uint32_t)fnv(ls, strlen(ls)) & (nc - 1);
            while (nh[h] >= 0) h = (h + 1) & (nc - 1);
            nh[h] = l;
        }
        remat_xfree(im->lh);
        im->lh = nh;
        im->lh_cap = nc;
    }
    uint32_t mask = im->lh_cap - 1, h = (uint32_t)fnv(s, n) & mask;
    while (im->lh[h] >= 0) {
        const char *ls = remat_ext_label(t, im->lh[h]);
        if (strlen(ls) == n && memcmp(ls, s, n) == 0) return im->lh[h];
        h = (h + 1) & mask;
    }
    int32_t l = remat_ext_add_label(t, s, n, im->err);
    if (l < 0) return -2;
    im->lh[h] = l;
    im->lh_n++;
    return l;
}

/* Appends at most cap-1-*used bytes of s[0..n) to buf. */
static void put(char *buf, size_t cap, size_t *used, const char *s, size_t n) {
    if (*used + 1 >= cap) return;
    if (n > cap - 1 - *used) n = cap - 1 - *used;
    memcpy(buf + *used, s, n);
    *used += n;
    buf[*used] = 0;
}

static int32_t frames_label_build(importer *im, remat_pk_ref frames);

static uint32_t fk_hash(const remat_pk_ref *f) {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < REMAT_TORCH_LABEL_FRAMES; i++) h = (h ^ f[i]) * 0xff51afd7ed558ccdull;
    return (uint32_t)(h >> 32);
}

/* The label of a frames list: -1 when empty or not a list, -2 on NOMEM. Cached by
 * the refs of its top frames. */
static int32_t frames_label(importer *im, remat_pk_ref frames) {
    const remat_pk_doc *d = im->doc;
    if (remat_pk_len(d, frames) == 0) return -1;
    remat_pk_ref f[REMAT_TORCH_LABEL_FRAMES];
    int k = 0;
    for (remat_pk_iter it = remat_pk_iter_begin(d, frames); k < REMAT_TORCH_LABEL_FRAMES && remat_pk_iter_next(d, &it);)
        f[k++] = it.value;
    for (; k < REMAT_TORCH_LABEL_FRAMES; k++) f[k] = REMAT_PK_NIL;
    if ((im->fc_n + 1) * 2 > im->fc_cap) {
        uint32_t nc = im->fc_cap ? im->fc_cap * 2 : 1024;
        struct frame_key *n = remat_xmalloc((size_t)nc * sizeof *n, im->err);
        if (!n) return -2;
        for (uint32_t i = 0; i < nc; i++) n[i].label = -3;
        for (uint32_t i = 0; i < im->fc_cap; i++) {
            if (im->fc[i].label == -3) continue;
            uint32_t h = fk_hash(im->fc[i].f) & (nc - 1);
            while (n[h].label != -3) h = (h + 1) & (nc - 1);
            n[h] = im->fc[i];
        }
        remat_xfree(im->fc);
        im->fc = n;
        im->fc_cap = nc;
    }
    uint32_t mask = im->fc_cap - 1, h = fk_hash(f) & mask;
    while (im->fc[h].label != -3) {
        if (!memcmp(im->fc[h].f, f, sizeof f)) return im->fc[h].label;
        h = (h + 1) & mask;
    }
    int32_t l = frames_label_build(im, frames);
    if (l == -2) return -2;
    memcpy(im->fc[h].f, f, sizeof f);
    im->fc[h].label = l;
    im->fc_n++;
    return l;
}

/* The label text of a frames list, interned. */
static int32_t frames_label_build(importer *im, remat_pk_ref frames) {
    const remat_pk_doc *d = im->doc;
    if (remat_pk_len(d, frames) == 0) return -1;
    size_t used = 0;
    int k = 0;
    im->buf[0] = 0;
    for (remat_pk_iter it = remat_pk_iter_begin(d, frames); k < REMAT_TORCH_LABEL_FRAMES && remat_pk_iter_next(d, &it);) {
        size_t nn = 0, fn = 0;
        const char *name = remat_pk_str(d, remat_pk_dict_get(d, it.value, "name"), &nn);
        const char *file = remat_pk_str(d, remat_pk_dict_get(d, it.value, "filename"), &fn);
        int64_t line = -1;
        remat_pk_int(d, remat_pk_dict_get(d, it.value, "line"), &line);
        if (!name && !file) continue;
        if (k++) put(im->buf, sizeof im->buf, &used, " < ", 3);
        if (name) put(im->buf, sizeof im->buf, &used, name, nn);
        if (file) {
            size_t b = fn;
            while (b > 0 && file[b - 1] != '/' && file[b - 1] != '\\') b--;
            put(im->buf, sizeof im->buf, &used, " (", 2);
            put(im->buf, sizeof im->buf, &used, file + b, fn - b);
            char ln[32];
            int m = snprintf(ln, sizeof ln, ":%" PRId64 ")", line);
            put(im->buf, sizeof im->buf, &used, ln, (size_t)m);
        }
    }
    if (k == 0) return -1;
    /* printable ASCII only (labels go into gnuplot scripts and one-line reports) */
    for (size_t i = 0; i < used; i++)
        if ((unsigned char)im->buf[i] < 0x20 || (unsigned char)im->buf[i] >= 0x7f) im->buf[i] = '?';
    return intern(im, im->buf, used);
}

/* ---- fields -------------------------------------------------------------------- */

/* The values of the str keys names[0..n) of dict d in one pass over its items (the
 * last of equal keys, as Python keeps; REMAT_PK_NIL when absent). */
static void fields_of(const remat_pk_doc *d, remat_pk_ref dict, const char *const *names, int n, remat_pk_ref *out) {
    size_t len[16];
    for (int k = 0; k < n; k++) {
        out[k] = REMAT_PK_NIL;
        len[k] = strlen(names[k]);
    }
    for (remat_pk_iter it = remat_pk_iter_begin(d, dict); remat_pk_iter_next(d, &it);) {
        size_t kn = 0;
        const char *ks = remat_pk_type_of(d, it.key) == REMAT_PK_STR ? remat_pk_str(d, it.key, &kn) : NULL;
        if (!ks) continue;
        for (int k = 0; k < n; k++)
            if (len[k] == kn && !memcmp(names[k], ks, kn)) {
                out[k] = it.value;
                break;
            }
    }
}

/* "device_traces[d][i]" of the entry being read. */
static const char *entry_where(importer *im) {
    snprintf(im->where, sizeof im->where, "device_traces[%d][%lld]", (int)im->cur_dev, (long long)im->cur_entry);
    return im->where;
}

static remat_status need_int_ref(importer *im, remat_pk_ref v, const char *key, const char *where, int64_t *out) {
    if (v != REMAT_PK_NIL && remat_pk_int(im->doc, v, out)) return REMAT_OK;
    if (!where) where = entry_where(im);
    if (v == REMAT_PK_NIL) return BAD("%s: %s.%s: missing (expected an int)", im->origin, where, key);
    return BAD("%s: %s.%s: expected an int, found a %s", im->origin, where, key,
                   remat_pk_type_name(remat_pk_type_of(im->doc, v)));
}

static int opt_int_ref(importer *im, remat_pk_ref v, const char *key, const char *where, int64_t *out) {
    if (v == REMAT_PK_NIL || remat_pk_type_of(im->doc, v) == REMAT_PK_NONE) return 0;
    if (!remat_pk_int(im->doc, v, out)) {
        if (!where) where = entry_where(im);
        BAD("%s: %s.%s: expected an int, found a %s", im->origin, where, key,
            remat_pk_type_name(remat_pk_type_of(im->doc, v)));
        return -1;
    }
    return 1;
}

/* Required int field: REMAT_ERR_INPUT naming where/key when missing or not an int. */
static remat_status need_int(importer *im, remat_pk_ref dict, const char *key, const char *where, int64_t *out) {
    remat_pk_ref v = remat_pk_dict_get(im->doc, dict, key);
    if (v == REMAT_PK_NIL)
        return BAD("%s: %s.%s: missing (expected an int)", im->origin, where, key);
    if (!remat_pk_int(im->doc, v, out))
        return BAD("%s: %s.%s: expected an int, found a %s", im->origin, where, key,
                   remat_pk_type_name(remat_pk_type_of(im->doc, v)));
    return REMAT_OK;
}

/* Optional int field: 1 found, 0 absent, -1 present but not an int (error set). */
static int opt_int(importer *im, remat_pk_ref dict, const char *key, const char *where, int64_t *out) {
    remat_pk_ref v = remat_pk_dict_get(im->doc, dict, key);
    if (v == REMAT_PK_NIL || remat_pk_type_of(im->doc, v) == REMAT_PK_NONE) return 0;
    if (!remat_pk_int(im->doc, v, out)) {
        BAD("%s: %s.%s: expected an int, found a %s", im->origin, where, key,
            remat_pk_type_name(remat_pk_type_of(im->doc, v)));
        return -1;
    }
    return 1;
}

/* ---- segments ------------------------------------------------------------------ */

typedef struct seg_order {
    int64_t address;
    remat_pk_ref ref;
    int32_t index;
} seg_order;

static int cmp_seg(const void *a, const void *b) {
    const seg_order *x = a, *y = b;
    if (x->address != y->address) return x->address < y->address ? -1 : 1;
    return x->index - y->index;
}

static int parse_state(const char *s, size_t n) {
    if (n == 16 && !memcmp(s, "active_allocated", 16)) return REMAT_EXT_BLOCK_ACTIVE;
    if ((n == 19 && !memcmp(s, "active_pending_free", 19)) || (n == 20 && !memcmp(s, "active_awaiting_free", 20)))
        return REMAT_EXT_BLOCK_PENDING_FREE;
    if (n == 8 && !memcmp(s, "inactive", 8)) return REMAT_EXT_BLOCK_INACTIVE;
    return -1;
}

static remat_status import_segment(importer *im, remat_pk_ref sref, int32_t index, remat_ext_device *dev) {
    const remat_pk_doc *d = im->doc;
    char where[64];
    snprintf(where, sizeof where, "segments[%d]", (int)index);
    remat_ext_segment g;
    memset(&g, 0, sizeof g);
    remat_status st;
    if ((st = need_int(im, sref, "address", where, &g.address)) != REMAT_OK) return st;
    if ((st = need_int(im, sref, "total_size", where, &g.total_size)) != REMAT_OK) return st;
    if (g.address < 0 || g.total_size < 0 || g.total_size > INT64_MAX - g.address)
        return BAD("%s: %s.total_size: expected a non-negative range, found address %lld size %lld", im->origin, where,
                   (long long)g.address, (long long)g.total_size);
    int r = opt_int(im, sref, "stream", where, &g.stream);
    if (r < 0) return REMAT_ERR_INPUT;
    if (!r) g.stream = -1, im->no_stream++;
    int64_t ex = 0;
    r = opt_int(im, sref, "is_expandable", where, &ex);
    if (r < 0) return REMAT_ERR_INPUT;
    if (!r) im->no_expandable++;
    g.expandable = ex ? 1 : 0;
    remat_pk_ref type = remat_pk_dict_get(d, sref, "segment_type");
    g.pool = remat_pk_str_eq(d, type, "small") ? REMAT_EXT_POOL_SMALL
             : remat_pk_str_eq(d, type, "large") ? REMAT_EXT_POOL_LARGE
                                                 : REMAT_EXT_POOL_UNKNOWN;
    if (g.pool == REMAT_EXT_POOL_UNKNOWN) {
        if (type != REMAT_PK_NIL)
            return BAD("%s: %s.segment_type: expected 'small' or 'large'", im->origin, where);
        im->no_type++;
    }
    remat_pk_ref pool_id = remat_pk_dict_get(d, sref, "segment_pool_id");
    for (remat_pk_iter it = remat_pk_iter_begin(d, pool_id); remat_pk_iter_next(d, &it);) {
        int64_t v = 0;
        if (remat_pk_int(d, it.value, &v) && v != 0) {
            im->private_pool++;
            break;
        }
    }
    remat_pk_ref blocks = remat_pk_dict_get(d, sref, "blocks");
    if (remat_pk_type_of(d, blocks) != REMAT_PK_LIST)
        return BAD("%s: %s.blocks: %s (expected a list of blocks)", im->origin, where,
                   blocks == REMAT_PK_NIL ? "missing" : "not a list");
    g.first_block = dev->n_blocks;
    int64_t at = g.address;
    int32_t bi = 0;
    for (remat_pk_iter it = remat_pk_iter_begin(d, blocks); remat_pk_iter_next(d, &it); bi++) {
        char bw[96];
        snprintf(bw, sizeof bw, "%s.blocks[%d]", where, (int)bi);
        if (remat_pk_type_of(d, it.value) != REMAT_PK_DICT) return BAD("%s: %s: expected a dict", im->origin, bw);
        remat_ext_block b;
        memset(&b, 0, sizeof b);
        if ((st = need_int(im, it.value, "size", bw, &b.size)) != REMAT_OK) return st;
        r = opt_int(im, it.value, "address", bw, &b.address);
        if (r < 0) return REMAT_ERR_INPUT;
        if (!r) b.address = at, im->derived_addr++;
        if (b.size < 0 || b.address < at || b.size > g.address + g.total_size - b.address)
            return BAD("%s: %s: block of %lld bytes at %lld lies outside its segment or overlaps the block before it",
                       im->origin, bw, (long long)b.size, (long long)b.address);
        at = b.address + b.size;
        r = opt_int(im, it.value, "requested_size", bw, &b.requested_size);
        if (r < 0) return REMAT_ERR_INPUT;
        if (!r) b.requested_size = -1, im->no_requested++;
        size_t sn = 0;
        const char *s = remat_pk_str(d, remat_pk_dict_get(d, it.value, "state"), &sn);
        int stt = s ? parse_state(s, sn) : -1;
        if (stt < 0)
            return BAD("%s: %s.state: %s (expected active_allocated, active_pending_free or inactive)", im->origin, bw,
                       s ? "unknown state" : "missing");
        b.state = (uint8_t)stt;
        remat_pk_ref frames = remat_pk_dict_get(d, it.value, "frames");
        if (frames == REMAT_PK_NIL) { /* 2023 layout: the last history entry */
            remat_pk_ref hist = remat_pk_dict_get(d, it.value, "history");
            remat_pk_ref last = REMAT_PK_NIL;
            for (remat_pk_iter h = remat_pk_iter_begin(d, hist); remat_pk_iter_next(d, &h);) last = h.value;
            frames = remat_pk_dict_get(d, last, "frames");
        }
        b.label = frames_label(im, frames);
        if (b.label == -2) return REMAT_ERR_NOMEM;
        if ((st = charge(im, sizeof b, bw)) != REMAT_OK) return st;
        if (remat_ext_add_block(dev, &b, im->err) < 0) return REMAT_ERR_NOMEM;
    }
    g.n_blocks = dev->n_blocks - g.first_block;
    if ((st = charge(im, sizeof g, where)) != REMAT_OK) return st;
    if (remat_ext_add_segment(dev, &g, im->err) < 0) return REMAT_ERR_NOMEM;
    return REMAT_OK;
}

static remat_status import_segments(importer *im, remat_pk_ref segs) {
    const remat_pk_doc *d = im->doc;
    uint32_t n = remat_pk_len(d, segs);
    seg_order *order = n ? remat_xmalloc((size_t)n * sizeof *order, im->err) : NULL;
    if (n && !order) return REMAT_ERR_NOMEM;
    remat_status st = REMAT_OK;
    int32_t i = 0, max_dev = -1;
    for (remat_pk_iter it = remat_pk_iter_begin(d, segs); remat_pk_iter_next(d, &it) && st == REMAT_OK; i++) {
        char where[64];
        snprintf(where, sizeof where, "segments[%d]", (int)i);
        if (remat_pk_type_of(d, it.value) != REMAT_PK_DICT) {
            st = BAD("%s: %s: expected a dict", im->origin, where);
            break;
        }
        int64_t dev = 0, addr = 0;
        if ((st = need_int(im, it.value, "device", where, &dev)) != REMAT_OK) break;
        if (dev < 0 || dev >= 4096) {
            st = BAD("%s: %s.device: expected 0..4095, found %lld", im->origin, where, (long long)dev);
            break;
        }
        if ((st = need_int(im, it.value, "address", where, &addr)) != REMAT_OK) break;
        if (dev > max_dev) max_dev = (int32_t)dev;
        order[i].address = addr;
        order[i].ref = it.value;
        order[i].index = i;
    }
    if (st == REMAT_OK) st = remat_ext_trace_set_devices(im->t, max_dev + 1, im->err);
    if (st == REMAT_OK && n > 1) qsort(order, n, sizeof *order, cmp_seg);
    for (uint32_t k = 0; k < n && st == REMAT_OK; k++) {
        int64_t dev = 0;
        remat_pk_int(d, remat_pk_dict_get(d, order[k].ref, "device"), &dev);
        st = import_segment(im, order[k].ref, order[k].index, &im->t->devices[dev]);
    }
    remat_xfree(order);
    return st;
}

/* ---- trace entries -------------------------------------------------------------- */

static remat_status import_traces(importer *im, remat_pk_ref traces) {
    const remat_pk_doc *d = im->doc;
    uint32_t n_dev = remat_pk_len(d, traces);
    if (n_dev > 4096) return BAD("%s: device_traces: %u devices, expected at most 4096", im->origin, n_dev);
    remat_status st = remat_ext_trace_set_devices(im->t, (int32_t)n_dev, im->err);
    int32_t di = 0;
    for (remat_pk_iter dv = remat_pk_iter_begin(d, traces); st == REMAT_OK && remat_pk_iter_next(d, &dv); di++) {
        if (remat_pk_type_of(d, dv.value) != REMAT_PK_LIST)
            return BAD("%s: device_traces[%d]: expected a list of trace entries", im->origin, (int)di);
        remat_ext_device *dev = &im->t->devices[di];
        int64_t ei = 0;
        for (remat_pk_iter it = remat_pk_iter_begin(d, dv.value); remat_pk_iter_next(d, &it); ei++) {
            im->cur_dev = di;
            im->cur_entry = ei;
            const char *where = NULL; /* named by entry_where() when needed */
            if (remat_pk_type_of(d, it.value) != REMAT_PK_DICT)
                return BAD("%s: %s: expected a dict", im->origin, entry_where(im));
            remat_ext_event e;
            memset(&e, 0, sizeof e);
            int r;
            enum { K_ACTION, K_ADDR, K_SIZE, K_STREAM, K_TIME, K_FREE, K_FRAMES, K_N };
            static const char *const names[K_N] = {"action", "addr", "size", "stream", "time_us", "device_free", "frames"};
            remat_pk_ref f[K_N];
            fields_of(d, it.value, names, K_N, f);
            size_t an = 0;
            const char *a = remat_pk_str(d, f[K_ACTION], &an);
            int action = a ? remat_ext_action_parse(a, an) : -1;
            if (action < 0)
                return BAD("%s: %s.action: %s (expected alloc, free_requested, free_completed, segment_alloc, "
                           "segment_free, segment_map, segment_unmap, snapshot, oom or user_defined)",
                           im->origin, entry_where(im), a ? "unknown action" : "missing");
            e.action = (uint8_t)action;
            if (action == REMAT_EXT_ANNOTATE) {
                if (opt_int_ref(im, f[K_ADDR], "addr", where, &e.addr) < 0) return REMAT_ERR_INPUT;
                if (opt_int_ref(im, f[K_SIZE], "size", where, &e.size) < 0) return REMAT_ERR_INPUT;
            } else if (action == REMAT_EXT_OOM) {
                /* PyTorch writes the free device bytes in the address slot, as device_free,
                 * and no addr */
                r = opt_int_ref(im, f[K_ADDR], "addr", where, &e.addr);
                if (r < 0) return REMAT_ERR_INPUT;
                if (!r) e.addr = -1;
                if ((st = need_int_ref(im, f[K_SIZE], "size", where, &e.size)) != REMAT_OK) return st;
            } else {
                if ((st = need_int_ref(im, f[K_ADDR], "addr", where, &e.addr)) != REMAT_OK) return st;
                if ((st = need_int_ref(im, f[K_SIZE], "size", where, &e.size)) != REMAT_OK) return st;
            }
            if (e.size < 0)
                return BAD("%s: %s.size: expected >= 0, found %lld", im->origin, entry_where(im), (long long)e.size);
            r = opt_int_ref(im, f[K_STREAM], "stream", where, &e.stream);
            if (r < 0) return REMAT_ERR_INPUT;
            if (!r) e.stream = -1, im->no_stream++;
            r = opt_int_ref(im, f[K_TIME], "time_us", where, &e.time_us);
            if (r < 0) return REMAT_ERR_INPUT;
            if (!r) e.time_us = -1, im->no_time++;
            e.device_free = -1;
            if (action == REMAT_EXT_OOM) {
                r = opt_int_ref(im, f[K_FREE], "device_free", where, &e.device_free);
                if (r < 0) return REMAT_ERR_INPUT;
                if (!r) e.device_free = -1, im->no_device_free++;
            }
            e.label = frames_label(im, f[K_FRAMES]);
            if (e.label == -2) return REMAT_ERR_NOMEM;
            if ((st = charge(im, sizeof e, entry_where(im))) != REMAT_OK) return st;
            if (remat_ext_add_event(dev, &e, im->err) < 0) return REMAT_ERR_NOMEM;
        }
    }
    return st;
}

/* ---- allocator settings ---------------------------------------------------------- */

static void settings_put(char *buf, size_t cap, const char *fmt, const char *key, const char *val) {
    size_t used = strlen(buf);
    if (used + 1 >= cap) return;
    snprintf(buf + used, cap - used, fmt, used ? "," : "", key, val);
}

static remat_status import_settings(importer *im, remat_pk_ref set) {
    const remat_pk_doc *d = im->doc;
    remat_ext_trace *t = im->t;
    if (set == REMAT_PK_NIL) {
        remat_ext_note(t, "allocator_settings: absent (older PyTorch); a replay has to assume PyTorch's defaults");
        return REMAT_OK;
    }
    if (remat_pk_type_of(d, set) != REMAT_PK_DICT)
        return BAD("%s: allocator_settings: expected a dict", im->origin);
    t->settings_recorded = 1;
    remat_caching_config cfg = remat_caching_config_default();
    int config_ok = 1;
    for (remat_pk_iter it = remat_pk_iter_begin(d, set); remat_pk_iter_next(d, &it);) {
        size_t kn = 0;
        const char *k = remat_pk_str(d, it.key, &kn);
        if (!k) continue;
        char key[64], val[256];
        snprintf(key, sizeof key, "%.*s", (int)(kn < 63 ? kn : 63), k);
        for (char *p = key; *p; p++)
            if ((unsigned char)*p < 0x21 || (unsigned char)*p >= 0x7f || *p == ',' || *p == '=') *p = '_';
        remat_pk_type ty = remat_pk_type_of(d, it.value);
        int64_t iv = 0;
        double fv = 0;
        size_t sn = 0;
        const char *sv = remat_pk_str(d, it.value, &sn);
        if (ty == REMAT_PK_BOOL || ty == REMAT_PK_INT) {
            remat_pk_int(d, it.value, &iv);
            snprintf(val, sizeof val, ty == REMAT_PK_BOOL ? (iv ? "true" : "false") : "%" PRId64, iv);
        } else if (ty == REMAT_PK_FLOAT) {
            remat_pk_number(d, it.value, &fv);
            snprintf(val, sizeof val, "%g", fv);
        } else if (sv) {
            snprintf(val, sizeof val, "'%.*s'", (int)(sn < 200 ? sn : 200), sv);
        } else if (ty == REMAT_PK_DICT) { /* roundup_power2_divisions: only the non-zero intervals */
            size_t used = 0;
            val[0] = 0;
            for (remat_pk_iter r = remat_pk_iter_begin(d, it.value); remat_pk_iter_next(d, &r);) {
                int64_t dv = 0;
                size_t rn = 0;
                const char *rk = remat_pk_str(d, r.key, &rn);
                if (!remat_pk_int(d, r.value, &dv) || dv == 0 || used + 40 > sizeof val) continue;
                used += (size_t)snprintf(val + used, sizeof val - used, "%s%.*s:%" PRId64, used ? " " : "",
                                         (int)(rk && rn < 16 ? rn : 0), rk ? rk : "", dv);
            }
            if (!used) snprintf(val, sizeof val, "none");
        } else {
            snprintf(val, sizeof val, "%s", remat_pk_type_name(ty));
        }
        for (char *p = val; *p; p++)
            if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f || *p == ',') *p = ';';
        settings_put(t->allocator_settings, sizeof t->allocator_settings, "%s%s=%s", key, val);
        if (!strcmp(key, "max_split_size") && ty == REMAT_PK_INT) {
            if (iv < 0 || (uint64_t)iv == UINT64_MAX) cfg.max_split_size = INT64_MAX;
            else cfg.max_split_size = iv;
        } else if (!strcmp(key, "expandable_segments")) {
            cfg.expandable_segments = iv ? 1 : 0;
        } else if (!strcmp(key, "roundup_power2_divisions") && strcmp(val, "none") && strcmp(val, "0")) {
            remat_ext_note(t, "allocator_settings.roundup_power2_divisions: %s (not modelled by remat's caching model)", val);
        } else if (!strcmp(key, "PYTORCH_CUDA_ALLOC_CONF") && sv) {
            static const char *const unmodelled[] = {"max_non_split_rounding_mb", "roundup_power2_divisions",
                                                     "garbage_collection_threshold", "backend:cudaMallocAsync"};
            for (size_t u = 0; u < sizeof unmodelled / sizeof unmodelled[0]; u++) {
                size_t ul = strlen(unmodelled[u]);
                for (size_t q = 0; q + ul <= sn; q++)
                    if (!memcmp(sv + q, unmodelled[u], ul)) {
                        remat_ext_note(t, "PYTORCH_CUDA_ALLOC_CONF sets %s: not modelled by remat's caching model",
                                       unmodelled[u]);
                        break;
                    }
            }
        } else if (!strcmp(key, "garbage_collection_threshold") && fv > 0) {
            remat_ext_note(t, "allocator_settings.garbage_collection_threshold: %g (not modelled by remat's caching "
                              "model: it frees cached blocks only near the device limit)", fv);
        }
    }
    char text[512];
    remat_caching_config_format(&cfg, text, sizeof text);
    remat_caching_config check;
    remat_error e = {REMAT_OK, {0}};
    if (remat_caching_config_parse(text, &check, &e) != REMAT_OK) {
        config_ok = 0;
        remat_ext_note(t, "allocator_settings: not expressible in remat's caching model (%s)", e.msg);
    }
    if (config_ok) snprintf(t->allocator_config, sizeof t->allocator_config, "%s", text);
    return REMAT_OK;
}

/* ---- top level --------------------------------------------------------------------- */

static void report_missing(importer *im) {
    remat_ext_trace *t = im->t;
    if (im->no_time) remat_ext_note(t, "time_us: absent in %lld trace entries (older PyTorch): the time axis is the event index", (long long)im->no_time);
    if (im->no_stream) remat_ext_note(t, "stream: absent in %lld entries or segments: stored as -1", (long long)im->no_stream);
    if (im->no_requested) remat_ext_note(t, "requested_size: absent in %lld blocks: stored as -1", (long long)im->no_requested);
    if (im->derived_addr) remat_ext_note(t, "blocks.address: absent in %lld blocks (older PyTorch): derived from the segment's address and the sizes of the blocks before", (long long)im->derived_addr);
    if (im->no_device_free) remat_ext_note(t, "device_free: absent in %lld oom entries: stored as -1", (long long)im->no_device_free);
    if (im->no_expandable) remat_ext_note(t, "is_expandable: absent in %lld segments (PyTorch before expandable segments): stored as not expandable", (long long)im->no_expandable);
    if (im->no_type) remat_ext_note(t, "segment_type: absent in %lld segments: pool unknown", (long long)im->no_type);
    if (im->private_pool)
        remat_ext_note(t, "segment_pool_id: %lld segments in private pools (CUDA graphs): not modelled by remat's caching model",
                       (long long)im->private_pool);
}

remat_status remat_torch_snapshot_import(const uint8_t *data, size_t size, const char *origin, remat_ext_trace *out,
                                         remat_error *err) {
    remat_ext_trace_init(out);
    const char *org = origin ? origin : "snapshot";
    remat_pk_doc doc;
    remat_status st = remat_pk_parse(data, size, org, &doc, err);
    if (st != REMAT_OK) return st;
    importer imv;
    memset(&imv, 0, sizeof imv);
    importer *im = &imv;
    im->doc = &doc;
    im->origin = org;
    im->budget = (int64_t)size * REMAT_TORCH_BYTES_PER_INPUT_BYTE -
                 (int64_t)((size_t)doc.cap_nodes * sizeof *doc.nodes + (size_t)doc.cap_entries * sizeof *doc.entries);
    if (im->budget < REMAT_TORCH_MIN_BUDGET) im->budget = REMAT_TORCH_MIN_BUDGET;
    im->t = out;
    im->err = err;
    snprintf(out->source, sizeof out->source, "pytorch-snapshot");
    const char *base = strrchr(org, '/');
    snprintf(out->source_file, sizeof out->source_file, "%s", base ? base + 1 : org);
    for (char *p = out->source_file; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f) *p = '?';
    remat_pk_ref root = doc.root;
    remat_pk_ref segs = remat_pk_dict_get(&doc, root, "segments");
    if (remat_pk_type_of(&doc, root) != REMAT_PK_DICT)
        st = BAD("%s: top level: expected a dict with 'segments' (a torch.cuda.memory snapshot), found a %s", org,
                 remat_pk_type_name(remat_pk_type_of(&doc, root)));
    else if (remat_pk_type_of(&doc, segs) != REMAT_PK_LIST)
        st = BAD("%s: segments: %s (expected the list of a torch.cuda.memory snapshot)", org,
                 segs == REMAT_PK_NIL ? "missing" : "not a list");
    if (st == REMAT_OK) st = import_segments(im, segs);
    remat_pk_ref traces = remat_pk_dict_get(&doc, root, "device_traces");
    if (st == REMAT_OK) {
        if (traces == REMAT_PK_NIL) remat_ext_note(out, "device_traces: absent (recorded without _record_memory_history): no events");
        else if (remat_pk_type_of(&doc, traces) != REMAT_PK_LIST) st = BAD("%s: device_traces: expected a list (one per device)", org);
        else st = import_traces(im, traces);
    }
    if (st == REMAT_OK) st = import_settings(im, remat_pk_dict_get(&doc, root, "allocator_settings"));
    if (st == REMAT_OK) {
        remat_pk_ref ann = remat_pk_dict_get(&doc, root, "external_annotations");
        if (remat_pk_len(&doc, ann) > 0)
            remat_ext_note(out, "external_annotations: %u entries, not imported", remat_pk_len(&doc, ann));
        int64_t of = 0;
        if (remat_pk_int(&doc, remat_pk_dict_get(&doc, root, "trace_alloc_overflowed"), &of) && of)
            remat_ext_note(out, "trace_alloc_overflowed: the trace ring buffer overflowed; the window starts after the "
                                "first events");
        report_missing(im);
        if (out->n_devices == 0) st = remat_ext_trace_set_devices(out, 1, err);
    }
    for (int32_t di = 0; di < out->n_devices && st == REMAT_OK; di++) { /* every sum a replay keeps fits */
        char where[300];
        snprintf(where, sizeof where, "%s: device %d", org, (int)di);
        st = remat_ext_check_sizes(&out->devices[di], where, err);
    }
    remat_xfree(im->lh);
    remat_xfree(im->fc);
    remat_pk_free(&doc);
    if (st != REMAT_OK) remat_ext_trace_free(out);
    return st;
}

remat_status remat_torch_snapshot_load(const char *path, remat_ext_trace *out, int64_t *bytes, remat_error *err) {
    remat_ext_trace_init(out);
    int fd, regular;
    remat_status st = remat_input_open(path, &fd, &regular, err); /* a FIFO: never a hang */
    if (st != REMAT_OK) return st;
    if (!regular) { /* a FIFO, a pipe or a device: read into memory, a writer that stalls given up on */
        char *text = NULL;
        size_t n = 0;
        if ((st = remat_input_read_fd(fd, path, REMAT_TORCH_MAX_STREAM_BYTES, &text, &n, err)) != REMAT_OK) return st;
        if (bytes) *bytes = (int64_t)n;
        if (n == 0) st = remat_error_set(err, REMAT_ERR_INPUT, "%s: pickle: empty file, expected a pickle", path);
        else st = remat_torch_snapshot_import((const uint8_t *)text, n, path, out, err);
        remat_xfree(text);
        return st;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return remat_error_set(err, REMAT_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    }
    size_t size = (size_t)sb.st_size;
    if (bytes) *bytes = (int64_t)size;
    if (size == 0) {
        close(fd);
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: pickle: empty file, expected a pickle", path);
    }
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return remat_error_set(err, REMAT_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
    madvise(map, size, MADV_SEQUENTIAL);
    st = remat_torch_snapshot_import(map, size, path, out, err);
    munmap(map, size);
    return st;
}
