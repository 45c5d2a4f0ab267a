/* alloc_model.c - the EXACT and CACHING allocator models (alloc_model.h).
 *
 * Modelling assumptions (docs/allocator-model.md states every rule with its source):
 *  - CACHING follows PyTorch's DeviceCachingAllocator (c10/cuda/CUDACachingAllocator.cpp)
 *    for ONE device and ONE stream: malloc = round_size, get_pool, get_free_block
 *    (best fit by (size, segment, offset); oversize rules of max_split_size), else a new
 *    segment (get_allocation_size) or, with expandable segments, mapping pages
 *    (find_expandable_block / map_block); then should_split / alloc_found_block.
 *    free = free_block with try_merge_blocks on the prev/next block of the same
 *    segment. empty_cache = release_cached_blocks (whole free segments; expandable:
 *    unmap every whole free page).
 *  - There is no device memory limit: the out-of-memory paths (free callbacks,
 *    release_available_cached_blocks, retry after release_cached_blocks) and the
 *    garbage-collection threshold never trigger. Streams, events, record_stream,
 *    CUDA-graph private pools and roundup_power2_divisions are not modelled.
 *  - "Address" order is (segment index, offset): segments are numbered in creation
 *    order, which stands in for cudaMalloc's addresses.
 *  - An expandable segment reserves REMAT_EXP_VSPACE bytes of address space
 *    (PyTorch: 1.125 x the GPU's memory); the model never runs out of it.
 *
 * Data structures: flat arrays indexed by tensor id (block index, requested bytes);
 * blocks in one growable array with a free list; per pool one treap of free mapped
 * blocks keyed by (size, segment, offset) and, for expandable segments, one treap
 * of unmapped ranges keyed by (segment, offset). Every call is O(log n) expected and
 * allocates nothing once the arrays have grown.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc/alloc_model.h"
#include "core/base/grow.h"

#define NIL (-1)
#define ID_DEAD (-1)    /* id_blk: not live */
#define ID_NOBLOCK (-2) /* id_blk: live without a block (0 bytes, or EXACT) */

/* Address space of one expandable segment (rounded down to its page size). */
#define REMAT_EXP_VSPACE ((int64_t)1 << 40)

enum { WHERE_NONE = 0, WHERE_FREE = 1, WHERE_UNMAPPED = 2, WHERE_DEAD = 3 };

/* A block: 32 bytes, two per cache line. The treap walks touch only these; the
 * neighbour links (prev/next in the segment) live in a separate array. */
typedef struct blk {
    int64_t size;
    uint64_t addr;           /* segment << ADDR_BITS | offset: address order is integer order */
    int32_t l, r;            /* treap children (r doubles as the free-list link) */
    uint32_t prio;
    uint8_t allocated, mapped, pool, where;
} blk;

#define ADDR_BITS 40
#define OFF_MASK ((((uint64_t)1) << ADDR_BITS) - 1)
#define MAX_SEGMENTS ((int32_t)1 << 23)
/* Largest request the address packing holds (a segment stays under 2^40 bytes). */
#define MAX_REQUEST REMAT_ALLOC_MAX_REQUEST
static inline uint64_t mkaddr(int32_t seg, int64_t off) { return (uint64_t)seg << ADDR_BITS | (uint64_t)off; }
static inline int32_t seg_of(const blk *b) { return (int32_t)(b->addr >> ADDR_BITS); }
static inline int64_t off_of(const blk *b) { return (int64_t)(b->addr & OFF_MASK); }

typedef struct seg {
    int64_t size;    /* fixed: bytes; expandable: address space */
    int64_t mapped;  /* bytes reserved (fixed: size) */
    int64_t extent;  /* expandable: end of the highest mapped page */
    int32_t head;    /* lowest block; NIL once released */
    uint8_t pool, expandable, released;
} seg;

struct remat_alloc_model {
    remat_alloc_kind kind;
    remat_caching_config cfg;
    int32_t *id_blk;
    int64_t *id_bytes;
    int64_t cap_ids;
    blk *b;
    int32_t *lk; /* lk[2i]: prev block of i in its segment, lk[2i+1]: next (NIL at the ends) */
    int32_t n_b, cap_b, free_b, n_live_b;
    seg *s;
    int32_t n_s, cap_s;
    int32_t free_root[2], unmapped_root[2];
    uint32_t rng;
    remat_alloc_stats st;
};

#define PREV(m, x) ((m)->lk[2 * (x)])
#define NEXT(m, x) ((m)->lk[2 * (x) + 1])

/* ---- treaps ------------------------------------------------------------------
 * Two instantiations: the free sets ordered by (size, address), the unmapped sets
 * by address. Keys are unique (an address belongs to one block). */

static inline int lt_size(const blk *B, int32_t a, int32_t b) {
    return B[a].size < B[b].size || (B[a].size == B[b].size && B[a].addr < B[b].addr);
}
static inline int lt_addr(const blk *B, int32_t a, int32_t b) { return B[a].addr < B[b].addr; }

#define DEFINE_TREAP(SUFFIX, LT)                                                                   \
    static void treap_insert_##SUFFIX(blk *B, int32_t *root, int32_t x) {                          \
        int32_t *link = root;                                                                      \
        while (*link != NIL && B[*link].prio > B[x].prio) link = LT(B, x, *link) ? &B[*link].l : &B[*link].r; \
        /* split the subtree at *link around x into x's children */                               \
        int32_t t = *link, *l = &B[x].l, *r = &B[x].r;                                             \
        while (t != NIL) {                                                                         \
            if (LT(B, t, x)) {                                                                     \
                *l = t;                                                                            \
                l = &B[t].r;                                                                       \
                t = B[t].r;                                                                        \
            } else {                                                                               \
                *r = t;                                                                            \
                r = &B[t].l;                                                                       \
                t = B[t].l;                                                                        \
            }                                                                                      \
        }                                                                                          \
        *l = NIL;                                                                                  \
        *r = NIL;                                                                                  \
        *link = x;                                                                                 \
    }                                                                                              \
    static void treap_erase_##SUFFIX(blk *B, int32_t *root, int32_t x) {                           \
        int32_t *link = root;                                                                      \
        while (*link != x) link = LT(B, x, *link) ? &B[*link].l : &B[*link].r;                     \
        *link = treap_merge(B, B[x].l, B[x].r);                                                    \
        B[x].l = B[x].r = NIL;                                                                     \
    }                                                                                              \
    static int32_t successor_##SUFFIX(const blk *B, int32_t t, int32_t x) {                        \
        int32_t best = NIL;                                                                        \
        while (t != NIL) {                                                                         \
            if (LT(B, x, t)) {                                                                     \
                best = t;                                                                          \
                t = B[t].l;                                                                        \
            } else {                                                                               \
                t = B[t].r;                                                                        \
            }                                                                                      \
        }                                                                                          \
        return best;                                                                               \
    }

/* Every key of a is below every key of b. */
static int32_t treap_merge(blk *B, int32_t a, int32_t b) {
    int32_t root = NIL;
    int32_t *link = &root;
    while (a != NIL && b != NIL) {
        if (B[a].prio > B[b].prio) {
            *link = a;
            link = &B[a].r;
            a = B[a].r;
        } else {
            *link = b;
            link = &B[b].l;
            b = B[b].l;
        }
    }
    *link = a != NIL ? a : b;
    return root;
}

DEFINE_TREAP(size, lt_size)
DEFINE_TREAP(addr, lt_addr)

/* Link to the smallest free block of at least `size` bytes (ties: lowest address),
 * or NULL. Removing it is then *link = merge(children): no second descent. */
static int32_t *lower_bound_link(blk *B, int32_t *root, int64_t size) {
    int32_t *best = NULL, *link = root;
    while (*link != NIL) {
        if (B[*link].size >= size) {
            best = link;
            link = &B[*link].l;
        } else {
            link = &B[*link].r;
        }
    }
    return best;
}

static int32_t leftmost(const blk *B, int32_t t) {
    if (t == NIL) return NIL;
    while (B[t].l != NIL) t = B[t].l;
    return t;
}

/* ---- block and segment pools ------------------------------------------------- */

static uint32_t next_prio(remat_alloc_model *m) {
    uint32_t x = m->rng; /* xorshift32 */
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    m->rng = x;
    return x;
}

/* Makes room for k more blocks, so that a call never fails half way. */
static remat_status reserve_blocks(remat_alloc_model *m, int32_t k, remat_error *err) {
    int32_t have = m->cap_b - m->n_b;
    for (int32_t f = m->free_b; f != NIL && have < k; f = m->b[f].r) have++;
    if (have >= k) return REMAT_OK;
    if (m->cap_b > INT32_MAX / 4 - k)
        return remat_error_set(err, REMAT_ERR_NOMEM, "allocator model: more than 2^29 blocks");
    int64_t cap = m->cap_b, cap_lk = m->cap_b; /* lk: two links a block */
    if (remat_grow((void **)&m->b, &cap, m->n_b + k, sizeof(blk), 1024, INT32_MAX, err)) return REMAT_ERR_NOMEM;
    if (remat_grow((void **)&m->lk, &cap_lk, m->n_b + k, 2 * sizeof(int32_t), 1024, INT32_MAX, err))
        return REMAT_ERR_NOMEM; /* m->b grew; cap_b unchanged: harmless */
    m->cap_b = (int32_t)cap;
    return REMAT_OK;
}

/* Callers reserve first: never fails. */
static int32_t new_block(remat_alloc_model *m, int64_t size, int32_t si, int64_t off, int pool, int mapped) {
    int32_t i;
    if (m->free_b != NIL) {
        i = m->free_b;
        m->free_b = m->b[i].r;
    } else {
        i = m->n_b++;
    }
    blk *x = &m->b[i];
    x->size = size;
    x->addr = mkaddr(si, off);
    x->l = x->r = NIL;
    x->prio = next_prio(m);
    x->allocated = 0;
    x->mapped = (uint8_t)mapped;
    x->pool = (uint8_t)pool;
    x->where = WHERE_NONE;
    PREV(m, i) = NEXT(m, i) = NIL;
    m->n_live_b++;
    return i;
}

static void drop_block(remat_alloc_model *m, int32_t i) {
    m->b[i].where = WHERE_DEAD;
    m->b[i].r = m->free_b;
    m->free_b = i;
    m->n_live_b--;
}

/* Puts block n right after block x in x's segment. */
static void link_after(remat_alloc_model *m, int32_t x, int32_t n) {
    PREV(m, n) = x;
    NEXT(m, n) = NEXT(m, x);
    if (NEXT(m, n) != NIL) PREV(m, NEXT(m, n)) = n;
    NEXT(m, x) = n;
}

/* Puts block n right before block x (maybe as the segment's head). */
static void link_before(remat_alloc_model *m, int32_t x, int32_t n) {
    NEXT(m, n) = x;
    PREV(m, n) = PREV(m, x);
    if (PREV(m, n) != NIL) NEXT(m, PREV(m, n)) = n;
    else m->s[seg_of(&m->b[x])].head = n;
    PREV(m, x) = n;
}

static remat_status reserve_segment(remat_alloc_model *m, remat_error *err) {
    if (m->n_s < m->cap_s) return REMAT_OK;
    if (m->n_s >= MAX_SEGMENTS)
        return remat_error_set(err, REMAT_ERR_NOMEM, "allocator model: more than %d segments", MAX_SEGMENTS);
    int64_t cap = m->cap_s;
    if (remat_grow((void **)&m->s, &cap, m->n_s + 1, sizeof(seg), 64, INT32_MAX, err)) return REMAT_ERR_NOMEM;
    m->cap_s = (int32_t)cap;
    return REMAT_OK;
}

static void tree_add(remat_alloc_model *m, int32_t x) {
    blk *B = m->b;
    if (B[x].mapped) {
        B[x].where = WHERE_FREE;
        treap_insert_size(B, &m->free_root[B[x].pool], x);
    } else {
        B[x].where = WHERE_UNMAPPED;
        treap_insert_addr(B, &m->unmapped_root[B[x].pool], x);
    }
}

static void tree_remove(remat_alloc_model *m, int32_t x) {
    blk *B = m->b;
    if (B[x].where == WHERE_FREE) treap_erase_size(B, &m->free_root[B[x].pool], x);
    else if (B[x].where == WHERE_UNMAPPED) treap_erase_addr(B, &m->unmapped_root[B[x].pool], x);
    B[x].where = WHERE_NONE;
}

/* ---- stats --------------------------------------------------------------------- */

static inline void bump_peaks(remat_alloc_stats *st) {
    if (st->live_bytes > st->peak_live_bytes) st->peak_live_bytes = st->live_bytes;
    if (st->allocated_bytes > st->peak_allocated_bytes) st->peak_allocated_bytes = st->allocated_bytes;
    if (st->reserved_bytes > st->peak_reserved_bytes) st->peak_reserved_bytes = st->reserved_bytes;
}

/* ---- init / free ----------------------------------------------------------------- */

remat_alloc_model *remat_alloc_model_init(remat_alloc_kind kind, const remat_caching_config *cfg, remat_error *err) {
    if (kind != REMAT_ALLOC_EXACT && kind != REMAT_ALLOC_CACHING) {
        remat_error_set(err, REMAT_ERR_INTERNAL, "allocator model: unknown kind %d", (int)kind);
        return NULL;
    }
    remat_alloc_model *m = remat_xcalloc(1, sizeof *m, err);
    if (!m) return NULL;
    m->kind = kind;
    m->cfg = cfg ? *cfg : remat_caching_config_default();
    m->free_b = NIL;
    m->free_root[0] = m->free_root[1] = NIL;
    m->unmapped_root[0] = m->unmapped_root[1] = NIL;
    m->rng = 0x9e3779b9u;
    return m;
}

void remat_alloc_model_free(remat_alloc_model *m) {
    if (!m) return;
    remat_xfree(m->id_blk);
    remat_xfree(m->id_bytes);
    remat_xfree(m->b);
    remat_xfree(m->lk);
    remat_xfree(m->s);
    remat_xfree(m);
}

static remat_status grow_ids(remat_alloc_model *m, int64_t id, remat_error *err) {
    if (id < m->cap_ids) return REMAT_OK;
    if (id >= ((int64_t)1 << 40))
        return remat_error_set(err, REMAT_ERR_NOMEM, "allocator model: tensor id %lld is too large for the id table",
                               (long long)id);
    int64_t cap = m->cap_ids, cap_bytes = m->cap_ids;
    if (remat_grow((void **)&m->id_blk, &cap, id + 1, sizeof(int32_t), 1024, INT64_MAX, err)) return REMAT_ERR_NOMEM;
    if (remat_grow((void **)&m->id_bytes, &cap_bytes, id + 1, sizeof(int64_t), 1024, INT64_MAX, err))
        return REMAT_ERR_NOMEM;
    for (int64_t i = m->cap_ids; i < cap; i++) {
        m->id_blk[i] = ID_DEAD;
        m->id_bytes[i] = 0;
    }
    m->cap_ids = cap;
    return REMAT_OK;
}

/* ---- caching rules ------------------------------------------------------------- */

static inline int64_t round_up(int64_t x, int64_t q) { return (x + q - 1) / q * q; }

/* round_size: below round_bytes -> round_bytes, else the next multiple. */
static inline int64_t round_size(const remat_caching_config *c, int64_t bytes) {
    if (bytes < c->round_bytes) return c->round_bytes;
    return round_up(bytes, c->round_bytes);
}

/* get_allocation_size */
static inline int64_t allocation_size(const remat_caching_config *c, int64_t size) {
    if (size <= c->small_size) return c->small_segment;
    if (size < c->min_large_alloc) return c->large_segment;
    return round_up(size, c->round_large);
}

static inline int64_t page_of(const remat_caching_config *c, int pool) {
    return pool == 0 ? c->expandable_page : c->expandable_large_page;
}

/* should_split */
static inline int should_split(const remat_caching_config *c, const blk *x, int64_t size) {
    int64_t remaining = x->size - size;
    if (x->pool == 0 || c->expandable_segments) return remaining >= c->small_split_min;
    return size < c->max_split_size && remaining > c->large_split_min;
}

static inline int64_t expandable_size(const remat_alloc_model *m, int32_t x) {
    int32_t n = NEXT(m, x);
    return m->b[x].size + (n != NIL && !m->b[n].mapped ? m->b[n].size : 0);
}

/* get_free_block: removes and returns the chosen free block, or NIL. */
static int32_t get_free_block(remat_alloc_model *m, int pool, int64_t size) {
    blk *B = m->b;
    const remat_caching_config *c = &m->cfg;
    int32_t *root = &m->free_root[pool];
    int32_t *link = lower_bound_link(B, root, size);
    if (!link) return NIL;
    int32_t it = *link;
    if (c->expandable_segments) {
        /* best fit counts a block followed by unmapped space at the size it can grow to */
        int32_t nx = successor_size(B, *root, it);
        while (nx != NIL && expandable_size(m, nx) < expandable_size(m, it)) {
            it = nx;
            nx = successor_size(B, *root, it);
        }
    }
    /* a request under max_split_size never takes an oversize block */
    if (size < c->max_split_size && B[it].size >= c->max_split_size) return NIL;
    /* an oversize request takes a block only if less than large_segment too big */
    if (size >= c->max_split_size && B[it].size >= size + c->large_segment) return NIL;
    if (it == *link) { /* the usual case: unlink without a second descent */
        *link = treap_merge(B, B[it].l, B[it].r);
        B[it].l = B[it].r = NIL;
        B[it].where = WHERE_NONE;
    } else {
        tree_remove(m, it);
    }
    return it;
}

/* try_merge_blocks(dst, src): src (prev or next of dst) is absorbed when it is free
 * and in the same mapped state. Returns 1 when merged. */
static int try_merge(remat_alloc_model *m, int32_t dst, int32_t src) {
    blk *B = m->b;
    if (src == NIL || B[src].allocated || B[src].mapped != B[dst].mapped) return 0;
    tree_remove(m, src);
    if (PREV(m, dst) == src) {
        B[dst].addr = B[src].addr;
        PREV(m, dst) = PREV(m, src);
        if (PREV(m, dst) != NIL) NEXT(m, PREV(m, dst)) = dst;
        else m->s[seg_of(&B[dst])].head = dst;
    } else {
        NEXT(m, dst) = NEXT(m, src);
        if (NEXT(m, dst) != NIL) PREV(m, NEXT(m, dst)) = dst;
    }
    B[dst].size += B[src].size;
    drop_block(m, src);
    return 1;
}

/* A new fixed segment of `bytes`, one free block (not in any tree). */
static int32_t new_fixed_segment(remat_alloc_model *m, int pool, int64_t bytes) {
    int32_t si = m->n_s++;
    seg *s = &m->s[si];
    memset(s, 0, sizeof *s);
    s->size = s->mapped = s->extent = bytes;
    s->pool = (uint8_t)pool;
    int32_t x = new_block(m, bytes, si, 0, pool, 1);
    s->head = x;
    m->st.reserved_bytes += bytes;
    m->st.n_segments++;
    return x;
}

/* map_block: maps the pages covering the first `size` bytes of unmapped block t.
 * t keeps its index and absorbs free mapped neighbours; it ends in the free tree. */
static void map_block(remat_alloc_model *m, int32_t t, int64_t size) {
    blk *B = m->b;
    int64_t page = page_of(&m->cfg, B[t].pool);
    int64_t mapped = round_up(size, page);
    if (mapped > B[t].size) mapped = B[t].size;
    tree_remove(m, t);
    B[t].mapped = 1;
    int32_t si = seg_of(&B[t]);
    int64_t off = off_of(&B[t]);
    if (mapped < B[t].size) {
        int32_t r = new_block(m, B[t].size - mapped, si, off + mapped, B[t].pool, 0);
        link_after(m, t, r);
        B[t].size = mapped;
        tree_add(m, r);
    }
    seg *s = &m->s[si];
    if (off + mapped > s->extent) s->extent = off + mapped;
    s->mapped += mapped;
    m->st.reserved_bytes += mapped;
    try_merge(m, t, PREV(m, t));
    try_merge(m, t, NEXT(m, t));
    tree_add(m, t);
}

static int allocatable(const remat_alloc_model *m, int32_t x) { return x != NIL && !m->b[x].allocated; }

static int has_space(const remat_alloc_model *m, int32_t x, int64_t size) {
    int64_t bytes = 0;
    while (bytes < size && allocatable(m, x)) {
        bytes += m->b[x].size;
        x = NEXT(m, x);
    }
    return bytes >= size;
}

/* find_expandable_block: the lowest address where free and unmapped space adds up to
 * size, or a new expandable segment. */
static int32_t find_expandable_block(remat_alloc_model *m, int pool, int64_t size) {
    int32_t root = m->unmapped_root[pool];
    for (int32_t it = leftmost(m->b, root); it != NIL; it = successor_addr(m->b, root, it)) {
        int32_t c = it;
        if (allocatable(m, PREV(m, c))) c = PREV(m, c);
        if (has_space(m, c, size)) return c;
    }
    int64_t page = page_of(&m->cfg, pool);
    int32_t si = m->n_s++;
    seg *s = &m->s[si];
    memset(s, 0, sizeof *s);
    s->size = REMAT_EXP_VSPACE / page * page;
    s->pool = (uint8_t)pool;
    s->expandable = 1;
    int32_t x = new_block(m, s->size, si, 0, pool, 0);
    s->head = x;
    m->st.n_segments++;
    tree_add(m, x);
    return x;
}

/* try_allocate_expandable_block; the result is out of every tree. */
static int32_t alloc_expandable(remat_alloc_model *m, int pool, int64_t size) {
    int32_t c = find_expandable_block(m, pool, size);
    if (!m->b[c].mapped) map_block(m, c, m->b[c].size < size ? m->b[c].size : size);
    while (m->b[c].size < size) {
        int32_t nx = NEXT(m, c);
        int64_t want = size - m->b[c].size;
        map_block(m, nx, want < m->b[nx].size ? want : m->b[nx].size);
        c = nx;
    }
    tree_remove(m, c);
    return c;
}

/* ---- public calls ----------------------------------------------------------------- */

/* Free block x (out of the tree; room for one more block reserved) becomes tensor id's,
 * holding bytes; with split, its tail past size becomes a free block of its own. */
static void take_block(remat_alloc_model *m, int32_t x, int64_t size, int split, int64_t id, int64_t bytes) {
    blk *B = m->b;
    if (split) {
        int32_t r = new_block(m, B[x].size - size, seg_of(&B[x]), off_of(&B[x]) + size, B[x].pool, 1);
        link_after(m, x, r);
        B[x].size = size;
        tree_add(m, r);
    }
    B[x].allocated = 1;
    B[x].where = WHERE_NONE;
    m->id_blk[id] = x;
    m->id_bytes[id] = bytes;
    m->st.live_bytes += bytes;
    m->st.allocated_bytes += B[x].size;
    m->st.n_allocs++;
    bump_peaks(&m->st);
}

remat_status remat_alloc_model_alloc(remat_alloc_model *m, int64_t id, int64_t bytes, remat_alloc_result *out,
                                     remat_error *err) {
    if (id < 0) return remat_error_set(err, REMAT_ERR_INTERNAL, "allocator model: tensor id %lld < 0", (long long)id);
    if (bytes < 0)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "allocator model: tensor %lld: negative size %lld",
                               (long long)id, (long long)bytes);
    remat_status st = grow_ids(m, id, err);
    if (st != REMAT_OK) return st;
    if (m->id_blk[id] != ID_DEAD)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "allocator model: tensor %lld allocated while live",
                               (long long)id);
    remat_alloc_result res = {-1, 0, 0, 0};
    if (bytes == 0) {
        m->id_blk[id] = ID_NOBLOCK;
        m->id_bytes[id] = 0;
        m->st.n_allocs++;
        if (out) *out = res;
        return REMAT_OK;
    }
    if (m->kind == REMAT_ALLOC_EXACT) {
        m->id_blk[id] = ID_NOBLOCK;
        m->id_bytes[id] = bytes;
        m->st.live_bytes += bytes;
        m->st.allocated_bytes = m->st.reserved_bytes = m->st.live_bytes;
        m->st.n_allocs++;
        bump_peaks(&m->st);
        res.block_bytes = bytes;
        if (out) *out = res;
        return REMAT_OK;
    }
    const remat_caching_config *c = &m->cfg;
    if (bytes > MAX_REQUEST)
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "allocator model: tensor %lld: %lld bytes exceed the %lld bytes one segment can "
                               "hold in the model",
                               (long long)id, (long long)bytes, (long long)MAX_REQUEST);
    int64_t size = round_size(c, bytes);
    int pool = size <= c->small_size ? 0 : 1;
    if ((st = reserve_blocks(m, 3, err)) != REMAT_OK) return st;
    if ((st = reserve_segment(m, err)) != REMAT_OK) return st;

    int64_t reserved_before = m->st.reserved_bytes;
    int32_t x = get_free_block(m, pool, size);
    int grew = 0;
    if (x == NIL) {
        if (c->expandable_segments) {
            /* each map_block may add one block: reserve for the worst case */
            if ((st = reserve_blocks(m, 3 + 2 * (int32_t)(size / page_of(c, pool)) + 8, err)) != REMAT_OK)
                return st;
            x = alloc_expandable(m, pool, size);
        } else {
            x = new_fixed_segment(m, pool, allocation_size(c, size));
        }
        grew = m->st.reserved_bytes != reserved_before || !c->expandable_segments;
    }
    blk *B = m->b;
    take_block(m, x, size, should_split(c, &B[x], size), id, bytes);
    int32_t si = seg_of(&B[x]);
    res.segment = si;
    res.offset = off_of(&B[x]);
    res.block_bytes = B[x].size;
    if (grew) res.new_segment_bytes = m->s[si].expandable ? m->s[si].extent : m->s[si].size;
    if (out) *out = res;
    return REMAT_OK;
}

remat_status remat_alloc_model_release(remat_alloc_model *m, int64_t id, remat_error *err) {
    if (id < 0 || id >= m->cap_ids || m->id_blk[id] == ID_DEAD)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "allocator model: tensor %lld freed while not live",
                               (long long)id);
    int32_t x = m->id_blk[id];
    int64_t bytes = m->id_bytes[id];
    m->id_blk[id] = ID_DEAD;
    m->id_bytes[id] = 0;
    m->st.n_frees++;
    m->st.live_bytes -= bytes;
    if (x == ID_NOBLOCK) {
        if (m->kind == REMAT_ALLOC_EXACT) m->st.allocated_bytes = m->st.reserved_bytes = m->st.live_bytes;
        return REMAT_OK;
    }
    blk *B = m->b;
    m->st.allocated_bytes -= B[x].size;
    B[x].allocated = 0;
    try_merge(m, x, PREV(m, x));
    try_merge(m, x, NEXT(m, x));
    tree_add(m, x);
    return REMAT_OK;
}

int64_t remat_alloc_model_add_segment(remat_alloc_model *m, int pool, int64_t bytes, remat_error *err) {
    if (m->kind != REMAT_ALLOC_CACHING || (pool != 0 && pool != 1) || bytes <= 0 || bytes > MAX_REQUEST) {
        remat_error_set(err, REMAT_ERR_INPUT, "allocator model: a segment of %lld bytes in pool %d: expected a caching "
                                              "model, pool 0 or 1 and 1..%lld bytes",
                        (long long)bytes, pool, (long long)MAX_REQUEST);
        return -1;
    }
    if (reserve_blocks(m, 1, err) != REMAT_OK || reserve_segment(m, err) != REMAT_OK) return -1;
    int32_t x = new_fixed_segment(m, pool, bytes);
    tree_add(m, x);
    bump_peaks(&m->st);
    return seg_of(&m->b[x]);
}

remat_status remat_alloc_model_place(remat_alloc_model *m, int64_t id, int64_t bytes, int64_t segment, int64_t offset,
                                     int64_t block_bytes, remat_error *err) {
    if (m->kind != REMAT_ALLOC_CACHING || segment < 0 || segment >= m->n_s || m->s[segment].released ||
        m->s[segment].expandable || offset < 0 || block_bytes <= 0 || bytes < 0 || bytes > block_bytes)
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "allocator model: placing %lld bytes at offset %lld of segment %lld: no such fixed "
                               "segment, or a bad range",
                               (long long)block_bytes, (long long)offset, (long long)segment);
    remat_status st = grow_ids(m, id, err);
    if (st != REMAT_OK) return st;
    if (m->id_blk[id] != ID_DEAD)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "allocator model: tensor %lld placed while live", (long long)id);
    if ((st = reserve_blocks(m, 2, err)) != REMAT_OK) return st;
    blk *B = m->b;
    int32_t x = m->s[segment].head;
    while (x != NIL && off_of(&B[x]) + B[x].size <= offset) x = NEXT(m, x);
    if (x == NIL || B[x].allocated || !B[x].mapped || off_of(&B[x]) > offset ||
        offset + block_bytes > off_of(&B[x]) + B[x].size)
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "allocator model: placing %lld bytes at offset %lld of segment %lld: the range is not "
                               "inside one free block",
                               (long long)block_bytes, (long long)offset, (long long)segment);
    tree_remove(m, x);
    int32_t si = (int32_t)segment;
    int64_t x0 = off_of(&B[x]);
    if (offset > x0) { /* the free part before stays a free block */
        int32_t l = new_block(m, offset - x0, si, x0, B[x].pool, 1);
        link_before(m, x, l);
        tree_add(m, l);
        B[x].addr = mkaddr(si, offset);
        B[x].size -= offset - x0;
    }
    take_block(m, x, block_bytes, B[x].size > block_bytes, id, bytes); /* B[x].size >= block_bytes */
    return REMAT_OK;
}

int64_t remat_alloc_model_list_free(const remat_alloc_model *m, int pool, int64_t min_size, remat_alloc_block *out,
                                    int64_t max) {
    if (m->kind != REMAT_ALLOC_CACHING || (pool != 0 && pool != 1)) return 0;
    const blk *B = m->b;
    /* in-order walk without a stack: count and collect the blocks of size >= min_size */
    int64_t n = 0;
    int32_t *stack = remat_xmalloc((size_t)(m->n_b + 1) * sizeof(int32_t), NULL);
    if (!stack) return 0;
    int32_t sp = 0, t = m->free_root[pool];
    while (t != NIL || sp > 0) {
        while (t != NIL) {
            stack[sp++] = t;
            t = B[t].size >= min_size ? B[t].l : NIL; /* smaller keys on the left are all too small */
        }
        t = stack[--sp];
        if (B[t].size >= min_size) {
            if (n < max) out[n] = (remat_alloc_block){seg_of(&B[t]), off_of(&B[t]), B[t].size};
            n++;
        }
        t = B[t].r;
    }
    remat_xfree(stack);
    return n;
}

void remat_alloc_model_stats(const remat_alloc_model *m, remat_alloc_stats *out) { *out = m->st; }

void remat_alloc_model_reset_peaks(remat_alloc_model *m) {
    m->st.peak_live_bytes = m->st.live_bytes;
    m->st.peak_allocated_bytes = m->st.allocated_bytes;
    m->st.peak_reserved_bytes = m->st.reserved_bytes;
}

static void release_segment(remat_alloc_model *m, int32_t si, void (*on_release)(void *, int64_t), void *ctx) {
    seg *s = &m->s[si];
    int32_t h = s->head;
    tree_remove(m, h);
    drop_block(m, h);
    s->head = NIL;
    s->released = 1;
    m->st.reserved_bytes -= s->mapped;
    s->mapped = 0;
    m->st.n_segments--;
    if (on_release) on_release(ctx, si);
}

/* In-order walk of a treap into out[]; returns the count. */
static int32_t collect(const blk *B, int32_t t, int32_t *out, int32_t n, int32_t *stack) {
    int32_t sp = 0;
    while (t != NIL || sp > 0) {
        while (t != NIL) {
            stack[sp++] = t;
            t = B[t].l;
        }
        t = stack[--sp];
        out[n++] = t;
        t = B[t].r;
    }
    return n;
}

/* unmap_block: unmaps the whole pages inside free block x. Returns bytes unmapped. */
static int64_t unmap_block(remat_alloc_model *m, int32_t x) {
    blk *B = m->b;
    int64_t page = page_of(&m->cfg, B[x].pool);
    int64_t off = off_of(&B[x]);
    int32_t si = seg_of(&B[x]);
    int64_t lo = round_up(off, page);
    int64_t hi = (off + B[x].size) / page * page;
    if (lo >= hi) return 0;
    tree_remove(m, x);
    int64_t before = lo - off, after = off + B[x].size - hi;
    if (before > 0) {
        int32_t nb = new_block(m, before, si, off, B[x].pool, 1);
        link_before(m, x, nb);
        tree_add(m, nb);
    }
    if (after > 0) {
        int32_t na = new_block(m, after, si, hi, B[x].pool, 1);
        link_after(m, x, na);
        tree_add(m, na);
    }
    B[x].addr = mkaddr(si, lo);
    B[x].size = hi - lo;
    B[x].mapped = 0;
    m->s[si].mapped -= hi - lo;
    m->st.reserved_bytes -= hi - lo;
    try_merge(m, x, PREV(m, x));
    try_merge(m, x, NEXT(m, x));
    tree_add(m, x);
    return hi - lo;
}

int64_t remat_alloc_model_empty_cache(remat_alloc_model *m, void (*on_release)(void *ctx, int64_t segment),
                                      void *ctx) {
    if (m->kind != REMAT_ALLOC_CACHING) return 0;
    int64_t released = 0;
    if (!m->cfg.expandable_segments) {
        for (int32_t si = 0; si < m->n_s; si++) {
            seg *s = &m->s[si];
            if (s->released || s->expandable) continue;
            int32_t h = s->head;
            if (m->b[h].allocated || NEXT(m, h) != NIL) continue;
            released += s->mapped;
            release_segment(m, si, on_release, ctx);
        }
        return released;
    }
    /* expandable: unmap every whole free page (large pool first, as release_cached_blocks) */
    int32_t n_free = m->n_live_b;
    int32_t *list = remat_xmalloc(2 * (size_t)(n_free + 1) * sizeof(int32_t), NULL);
    if (!list) return 0;
    int32_t n = 0;
    n = collect(m->b, m->free_root[1], list, n, list + n_free + 1);
    n = collect(m->b, m->free_root[0], list, n, list + n_free + 1);
    if (reserve_blocks(m, 2 * n + 2, NULL) != REMAT_OK) {
        remat_xfree(list);
        return 0;
    }
    for (int32_t i = 0; i < n; i++) {
        int32_t x = list[i];
        released += unmap_block(m, x);
        if (!m->b[x].mapped && PREV(m, x) == NIL && NEXT(m, x) == NIL)
            release_segment(m, seg_of(&m->b[x]), on_release, ctx);
    }
    remat_xfree(list);
    /* recompute each expandable segment's extent (end of its highest mapped page) */
    for (int32_t si = 0; si < m->n_s; si++) {
        seg *s = &m->s[si];
        if (s->released || !s->expandable) continue;
        int64_t ext = 0;
        for (int32_t x = s->head; x != NIL; x = NEXT(m, x))
            if (m->b[x].mapped) ext = off_of(&m->b[x]) + m->b[x].size;
        s->extent = ext;
    }
    return released;
}

/* ---- invariants (tests) -------------------------------------------------------- */

static remat_status check_tree(const remat_alloc_model *m, int32_t root, int addr, int pool, int where,
                               int64_t *count, remat_error *err) {
    const blk *B = m->b;
    if (root == NIL) return REMAT_OK;
    int32_t n_max = m->n_b + 1;
    int32_t *stack = remat_xmalloc((size_t)n_max * sizeof(int32_t) * 2, err);
    if (!stack) return REMAT_ERR_NOMEM;
    int32_t *order = stack + n_max;
    int32_t n = collect(B, root, order, 0, stack);
    remat_status st = REMAT_OK;
    for (int32_t i = 0; i < n && st == REMAT_OK; i++) {
        int32_t x = order[i];
        if (B[x].where != where || B[x].pool != pool || B[x].allocated)
            st = remat_error_set(err, REMAT_ERR_INTERNAL, "allocator model: block %d in the wrong tree", x);
        else if (i > 0 && !(addr ? lt_addr(B, order[i - 1], x) : lt_size(B, order[i - 1], x)))
            st = remat_error_set(err, REMAT_ERR_INTERNAL, "allocator model: tree out of order at block %d", x);
        else if ((B[x].l != NIL && B[B[x].l].prio > B[x].prio) || (B[x].r != NIL && B[B[x].r].prio > B[x].prio))
            st = remat_error_set(err, REMAT_ERR_INTERNAL, "allocator model: heap order broken at block %d", x);
    }
    *count += n;
    remat_xfree(stack);
    return st;
}

remat_status remat_alloc_model_check(const remat_alloc_model *m, remat_error *err) {
    const blk *B = m->b;
    int64_t live = 0, alloc_sum = 0, reserved = 0, n_allocated = 0, n_free = 0, n_unmapped = 0, n_segs = 0;
    for (int64_t id = 0; id < m->cap_ids; id++) {
        if (m->id_blk[id] == ID_DEAD) continue;
        live += m->id_bytes[id];
        int32_t x = m->id_blk[id];
        if (x == ID_NOBLOCK) continue;
        if (x < 0 || x >= m->n_b || !B[x].allocated)
            return remat_error_set(err, REMAT_ERR_INTERNAL, "allocator model: tensor %lld points to a free block",
                                   (long long)id);
        if (B[x].size < m->id_bytes[id])
            return remat_error_set(err, REMAT_ERR_INTERNAL, "allocator model: tensor %lld: block smaller than request",
                                   (long long)id);
    }
    if (live != m->st.live_bytes)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "allocator model: live_bytes %lld, sum of tensors %lld",
                               (long long)m->st.live_bytes, (long long)live);
    if (m->kind == REMAT_ALLOC_EXACT) {
        if (m->st.reserved_bytes != live || m->st.allocated_bytes != live)
            return remat_error_set(err, REMAT_ERR_INTERNAL, "allocator model: exact model counters disagree");
        return REMAT_OK;
    }
    for (int32_t si = 0; si < m->n_s; si++) {
        const seg *s = &m->s[si];
        if (s->released) continue;
        n_segs++;
        int64_t off = 0, mapped = 0;
        int32_t prev = NIL;
        for (int32_t x = s->head; x != NIL; prev = x, x = NEXT(m, x)) {
            if (seg_of(&B[x]) != si || PREV(m, x) != prev || off_of(&B[x]) != off || B[x].size <= 0 ||
                B[x].pool != s->pool)
                return remat_error_set(err, REMAT_ERR_INTERNAL,
                                       "allocator model: segment %d: block %d breaks the chain at offset %lld", si, x,
                                       (long long)off);
            if (prev != NIL && !B[x].allocated && !B[prev].allocated && B[x].mapped == B[prev].mapped)
                return remat_error_set(err, REMAT_ERR_INTERNAL,
                                       "allocator model: segment %d: free neighbours %d and %d not merged", si, prev, x);
            if (!B[x].mapped) {
                int64_t page = page_of(&m->cfg, s->pool);
                if (!s->expandable || B[x].allocated || off % page != 0 ||
                    (NEXT(m, x) != NIL && B[x].size % page != 0))
                    return remat_error_set(err, REMAT_ERR_INTERNAL,
                                           "allocator model: segment %d: bad unmapped block %d", si, x);
                n_unmapped++;
            } else {
                mapped += B[x].size;
                if (B[x].allocated) {
                    n_allocated++;
                    alloc_sum += B[x].size;
                } else {
                    n_free++;
                }
            }
            if (B[x].allocated ? B[x].where != WHERE_NONE
                               : B[x].where != (B[x].mapped ? WHERE_FREE : WHERE_UNMAPPED))
                return remat_error_set(err, REMAT_ERR_INTERNAL, "allocator model: block %d: wrong tree membership", x);
            off += B[x].size;
        }
        if (off != s->size)
            return remat_error_set(err, REMAT_ERR_INTERNAL, "allocator model: segment %d: blocks cover %lld of %lld",
                                   si, (long long)off, (long long)s->size);
        if (mapped != s->mapped)
            return remat_error_set(err, REMAT_ERR_INTERNAL, "allocator model: segment %d: mapped %lld, counted %lld",
                                   si, (long long)s->mapped, (long long)mapped);
        reserved += mapped;
    }
    if (alloc_sum != m->st.allocated_bytes || reserved != m->st.reserved_bytes || n_segs != m->st.n_segments)
        return remat_error_set(err, REMAT_ERR_INTERNAL,
                               "allocator model: counters (allocated %lld, reserved %lld, segments %lld) != sums "
                               "(%lld, %lld, %lld)",
                               (long long)m->st.allocated_bytes, (long long)m->st.reserved_bytes,
                               (long long)m->st.n_segments, (long long)alloc_sum, (long long)reserved,
                               (long long)n_segs);
    if (m->st.allocated_bytes > m->st.reserved_bytes)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "allocator model: allocated > reserved");
    int64_t in_free = 0, in_unmapped = 0;
    remat_status st;
    for (int p = 0; p < 2; p++) {
        if ((st = check_tree(m, m->free_root[p], 0, p, WHERE_FREE, &in_free, err)) != REMAT_OK) return st;
        if ((st = check_tree(m, m->unmapped_root[p], 1, p, WHERE_UNMAPPED, &in_unmapped, err)) != REMAT_OK)
            return st;
    }
    if (in_free != n_free || in_unmapped != n_unmapped)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "allocator model: trees hold %lld/%lld blocks, segments %lld/%lld",
                               (long long)in_free, (long long)in_unmapped, (long long)n_free, (long long)n_unmapped);
    if (n_free + n_unmapped + n_allocated != m->n_live_b)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "allocator model: %d blocks in use, %lld in segments",
                               m->n_live_b, (long long)(n_free + n_unmapped + n_allocated));
    return REMAT_OK;
}
