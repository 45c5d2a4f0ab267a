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

#include "core/alloc_model.h"

#define NIL (-1)
#define ID_DEAD (-1)    /* id_blk: not live */
#define ID_NOBLOCK (-2) /* id_blk: live without a block (0 bytes, or EXACT) */

/* Address space of one expandable segment (rounded down to its page size). */
#define REMAT_EXP_VSPACE ((int64_t)1 << 40)

enum { WHERE_NONE = 0, WHERE_FREE = 1, WHERE_UNMAPPED = 2, WHERE_DEAD = 3 };

typedef struct blk {
    int64_t size, offset;
    int32_t seg, prev, next; /* prev/next: neighbours in the segment, by offset */
    int32_t l, r;            /* treap children (or free-list link in r) */
    uint32_t prio;
    uint8_t allocated, mapped, pool, where;
} blk;

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
    int32_t n_b, cap_b, free_b, n_live_b;
    seg *s;
    int32_t n_s, cap_s;
    int32_t free_root[2], unmapped_root[2];
    uint32_t rng;
    remat_alloc_stats st;
};

/* ---- treaps ------------------------------------------------------------------ */

static inline int lt_size(const blk *B, int32_t a, int32_t b) {
    if (B[a].size != B[b].size) return B[a].size < B[b].size;
    if (B[a].seg != B[b].seg) return B[a].seg < B[b].seg;
    return B[a].offset < B[b].offset;
}
static inline int lt_addr(const blk *B, int32_t a, int32_t b) {
    if (B[a].seg != B[b].seg) return B[a].seg < B[b].seg;
    return B[a].offset < B[b].offset;
}
static inline int lt(const blk *B, int32_t a, int32_t b, int addr) {
    return addr ? lt_addr(B, a, b) : lt_size(B, a, b);
}

/* Splits t into *L (keys < key(x)) and *R (keys >= key(x)). */
static void treap_split(blk *B, int32_t t, int32_t x, int addr, int32_t *L, int32_t *R) {
    int32_t *l = L, *r = R;
    while (t != NIL) {
        if (lt(B, t, x, addr)) {
            *l = t;
            l = &B[t].r;
            t = B[t].r;
        } else {
            *r = t;
            r = &B[t].l;
            t = B[t].l;
        }
    }
    *l = NIL;
    *r = NIL;
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

static void treap_insert(blk *B, int32_t *root, int32_t x, int addr) {
    int32_t *link = root;
    while (*link != NIL && B[*link].prio > B[x].prio) link = lt(B, x, *link, addr) ? &B[*link].l : &B[*link].r;
    treap_split(B, *link, x, addr, &B[x].l, &B[x].r);
    *link = x;
}

static void treap_erase(blk *B, int32_t *root, int32_t x, int addr) {
    int32_t *link = root;
    while (*link != x) link = lt(B, x, *link, addr) ? &B[*link].l : &B[*link].r;
    *link = treap_merge(B, B[x].l, B[x].r);
    B[x].l = B[x].r = NIL;
}

/* The smallest free block of at least `size` bytes (ties: lowest address). */
static int32_t lower_bound_size(const blk *B, int32_t t, int64_t size) {
    int32_t best = NIL;
    while (t != NIL) {
        if (B[t].size >= size) {
            best = t;
            t = B[t].l;
        } else {
            t = B[t].r;
        }
    }
    return best;
}

static int32_t successor(const blk *B, int32_t t, int32_t x, int addr) {
    int32_t best = NIL;
    while (t != NIL) {
        if (lt(B, x, t, addr)) {
            best = t;
            t = B[t].l;
        } else {
            t = B[t].r;
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
    if (m->cap_b > INT32_MAX / 2 - k)
        return remat_error_set(err, REMAT_ERR_NOMEM, "allocator model: more than 2^30 blocks");
    int32_t cap = m->cap_b ? m->cap_b * 2 : 1024;
    while (cap - m->n_b < k) cap *= 2;
    blk *nb = remat_xrealloc(m->b, (size_t)cap * sizeof(blk), err);
    if (!nb) return REMAT_ERR_NOMEM;
    m->b = nb;
    m->cap_b = cap;
    return REMAT_OK;
}

/* Callers reserve first: never fails. */
static int32_t new_block(remat_alloc_model *m) {
    int32_t i;
    if (m->free_b != NIL) {
        i = m->free_b;
        m->free_b = m->b[i].r;
    } else {
        i = m->n_b++;
    }
    blk *x = &m->b[i];
    memset(x, 0, sizeof *x);
    x->prev = x->next = x->l = x->r = NIL;
    x->prio = next_prio(m);
    x->where = WHERE_NONE;
    m->n_live_b++;
    return i;
}

static void drop_block(remat_alloc_model *m, int32_t i) {
    m->b[i].where = WHERE_DEAD;
    m->b[i].r = m->free_b;
    m->free_b = i;
    m->n_live_b--;
}

static remat_status reserve_segment(remat_alloc_model *m, remat_error *err) {
    if (m->n_s < m->cap_s) return REMAT_OK;
    if (m->cap_s > INT32_MAX / 4) return remat_error_set(err, REMAT_ERR_NOMEM, "allocator model: too many segments");
    int32_t cap = m->cap_s ? m->cap_s * 2 : 64;
    seg *ns = remat_xrealloc(m->s, (size_t)cap * sizeof(seg), err);
    if (!ns) return REMAT_ERR_NOMEM;
    m->s = ns;
    m->cap_s = cap;
    return REMAT_OK;
}

static void tree_add(remat_alloc_model *m, int32_t x) {
    blk *B = m->b;
    if (B[x].mapped) {
        B[x].where = WHERE_FREE;
        treap_insert(B, &m->free_root[B[x].pool], x, 0);
    } else {
        B[x].where = WHERE_UNMAPPED;
        treap_insert(B, &m->unmapped_root[B[x].pool], x, 1);
    }
}

static void tree_remove(remat_alloc_model *m, int32_t x) {
    blk *B = m->b;
    if (B[x].where == WHERE_FREE) treap_erase(B, &m->free_root[B[x].pool], x, 0);
    else if (B[x].where == WHERE_UNMAPPED) treap_erase(B, &m->unmapped_root[B[x].pool], x, 1);
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
    remat_xfree(m->s);
    remat_xfree(m);
}

static remat_status grow_ids(remat_alloc_model *m, int64_t id, remat_error *err) {
    if (id < m->cap_ids) return REMAT_OK;
    if (id >= ((int64_t)1 << 40))
        return remat_error_set(err, REMAT_ERR_NOMEM, "allocator model: tensor id %lld is too large for the id table",
                               (long long)id);
    int64_t cap = m->cap_ids ? m->cap_ids : 1024;
    while (cap <= id) cap *= 2;
    int32_t *nb = remat_xrealloc(m->id_blk, (size_t)cap * sizeof(int32_t), err);
    if (!nb) return REMAT_ERR_NOMEM;
    m->id_blk = nb;
    int64_t *ny = remat_xrealloc(m->id_bytes, (size_t)cap * sizeof(int64_t), err);
    if (!ny) return REMAT_ERR_NOMEM;
    m->id_bytes = ny;
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

static inline int64_t expandable_size(const blk *B, int32_t x) {
    int32_t n = B[x].next;
    return B[x].size + (n != NIL && !B[n].mapped ? B[n].size : 0);
}

/* get_free_block: removes and returns the chosen free block, or NIL. */
static int32_t get_free_block(remat_alloc_model *m, int pool, int64_t size) {
    blk *B = m->b;
    const remat_caching_config *c = &m->cfg;
    int32_t root = m->free_root[pool];
    int32_t it = lower_bound_size(B, root, size);
    if (it == NIL) return NIL;
    if (c->expandable_segments) {
        /* best fit counts a block followed by unmapped space at the size it can grow to */
        int32_t nx = successor(B, root, it, 0);
        while (nx != NIL && expandable_size(B, nx) < expandable_size(B, it)) {
            it = nx;
            nx = successor(B, root, it, 0);
        }
    }
    /* a request under max_split_size never takes an oversize block */
    if (size < c->max_split_size && B[it].size >= c->max_split_size) return NIL;
    /* an oversize request takes a block only if less than large_segment too big */
    if (size >= c->max_split_size && B[it].size >= size + c->large_segment) return NIL;
    tree_remove(m, it);
    return it;
}

/* try_merge_blocks(dst, src): src (prev or next of dst) is absorbed when it is free
 * and in the same mapped state. Returns 1 when merged. */
static int try_merge(remat_alloc_model *m, int32_t dst, int32_t src) {
    blk *B = m->b;
    if (src == NIL || B[src].allocated || B[src].mapped != B[dst].mapped) return 0;
    tree_remove(m, src);
    if (B[dst].prev == src) {
        B[dst].offset = B[src].offset;
        B[dst].prev = B[src].prev;
        if (B[dst].prev != NIL) B[B[dst].prev].next = dst;
        else m->s[B[dst].seg].head = dst;
    } else {
        B[dst].next = B[src].next;
        if (B[dst].next != NIL) B[B[dst].next].prev = dst;
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
    int32_t x = new_block(m);
    blk *b = &m->b[x];
    b->size = bytes;
    b->offset = 0;
    b->seg = si;
    b->mapped = 1;
    b->pool = (uint8_t)pool;
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
    if (mapped < B[t].size) {
        int32_t r = new_block(m);
        B = m->b;
        B[r].size = B[t].size - mapped;
        B[r].offset = B[t].offset + mapped;
        B[r].seg = B[t].seg;
        B[r].pool = B[t].pool;
        B[r].mapped = 0;
        B[r].prev = t;
        B[r].next = B[t].next;
        if (B[r].next != NIL) B[B[r].next].prev = r;
        B[t].next = r;
        B[t].size = mapped;
        tree_add(m, r);
    }
    seg *s = &m->s[B[t].seg];
    int64_t end = B[t].offset + mapped;
    if (end > s->extent) s->extent = end;
    s->mapped += mapped;
    m->st.reserved_bytes += mapped;
    try_merge(m, t, B[t].prev);
    try_merge(m, t, m->b[t].next);
    tree_add(m, t);
}

static int allocatable(const blk *B, int32_t x) { return x != NIL && !B[x].allocated; }

static int has_space(const blk *B, int32_t x, int64_t size) {
    int64_t bytes = 0;
    while (bytes < size && allocatable(B, x)) {
        bytes += B[x].size;
        x = B[x].next;
    }
    return bytes >= size;
}

/* find_expandable_block: the lowest address where free and unmapped space adds up to
 * size, or a new expandable segment. */
static int32_t find_expandable_block(remat_alloc_model *m, int pool, int64_t size) {
    blk *B = m->b;
    int32_t root = m->unmapped_root[pool];
    for (int32_t it = leftmost(B, root); it != NIL; it = successor(B, root, it, 1)) {
        int32_t c = it;
        if (allocatable(B, B[c].prev)) c = B[c].prev;
        if (has_space(B, c, size)) return c;
    }
    int64_t page = page_of(&m->cfg, pool);
    int32_t si = m->n_s++;
    seg *s = &m->s[si];
    memset(s, 0, sizeof *s);
    s->size = REMAT_EXP_VSPACE / page * page;
    s->pool = (uint8_t)pool;
    s->expandable = 1;
    int32_t x = new_block(m);
    B = m->b;
    B[x].size = s->size;
    B[x].seg = si;
    B[x].pool = (uint8_t)pool;
    B[x].mapped = 0;
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
        int32_t nx = m->b[c].next;
        int64_t want = size - m->b[c].size;
        map_block(m, nx, want < m->b[nx].size ? want : m->b[nx].size);
        c = nx;
    }
    tree_remove(m, c);
    return c;
}

/* ---- public calls ----------------------------------------------------------------- */

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
    if (bytes > INT64_MAX / 4)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "allocator model: tensor %lld: size %lld too large",
                               (long long)id, (long long)bytes);
    int64_t size = round_size(c, bytes);
    int pool = size <= c->small_size ? 0 : 1;
    if (c->expandable_segments && size > REMAT_EXP_VSPACE / 2)
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "allocator model: tensor %lld: %lld bytes exceed the address space modelled for an "
                               "expandable segment (%lld bytes)",
                               (long long)id, (long long)bytes, (long long)(REMAT_EXP_VSPACE / 2));
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
    if (should_split(c, &B[x], size)) {
        int32_t r = new_block(m);
        B = m->b;
        B[r].size = B[x].size - size;
        B[r].offset = B[x].offset + size;
        B[r].seg = B[x].seg;
        B[r].pool = B[x].pool;
        B[r].mapped = 1;
        B[r].prev = x;
        B[r].next = B[x].next;
        if (B[r].next != NIL) B[B[r].next].prev = r;
        B[x].next = r;
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
    res.segment = B[x].seg;
    res.offset = B[x].offset;
    res.block_bytes = B[x].size;
    if (grew) res.new_segment_bytes = m->s[B[x].seg].expandable ? m->s[B[x].seg].extent : m->s[B[x].seg].size;
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
    try_merge(m, x, B[x].prev);
    try_merge(m, x, m->b[x].next);
    tree_add(m, x);
    return REMAT_OK;
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
    int64_t lo = round_up(B[x].offset, page);
    int64_t hi = (B[x].offset + B[x].size) / page * page;
    if (lo >= hi) return 0;
    tree_remove(m, x);
    int64_t before = lo - B[x].offset, after = B[x].offset + B[x].size - hi;
    if (before > 0) {
        int32_t nb = new_block(m);
        B = m->b;
        B[nb].size = before;
        B[nb].offset = B[x].offset;
        B[nb].seg = B[x].seg;
        B[nb].pool = B[x].pool;
        B[nb].mapped = 1;
        B[nb].prev = B[x].prev;
        B[nb].next = x;
        if (B[nb].prev != NIL) B[B[nb].prev].next = nb;
        else m->s[B[x].seg].head = nb;
        B[x].prev = nb;
        tree_add(m, nb);
    }
    if (after > 0) {
        int32_t na = new_block(m);
        B = m->b;
        B[na].size = after;
        B[na].offset = hi;
        B[na].seg = B[x].seg;
        B[na].pool = B[x].pool;
        B[na].mapped = 1;
        B[na].prev = x;
        B[na].next = B[x].next;
        if (B[na].next != NIL) B[B[na].next].prev = na;
        B[x].next = na;
        tree_add(m, na);
    }
    B[x].offset = lo;
    B[x].size = hi - lo;
    B[x].mapped = 0;
    seg *s = &m->s[B[x].seg];
    s->mapped -= hi - lo;
    m->st.reserved_bytes -= hi - lo;
    try_merge(m, x, B[x].prev);
    try_merge(m, x, m->b[x].next);
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
            blk *h = &m->b[s->head];
            if (h->allocated || h->next != NIL) continue;
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
        blk *B = m->b;
        if (!B[x].mapped && B[x].prev == NIL && B[x].next == NIL) {
            int32_t si = B[x].seg;
            release_segment(m, si, on_release, ctx);
        }
    }
    remat_xfree(list);
    /* recompute each expandable segment's extent (end of its highest mapped page) */
    for (int32_t si = 0; si < m->n_s; si++) {
        seg *s = &m->s[si];
        if (s->released || !s->expandable) continue;
        int64_t ext = 0;
        for (int32_t x = s->head; x != NIL; x = m->b[x].next)
            if (m->b[x].mapped) ext = m->b[x].offset + m->b[x].size;
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
        else if (i > 0 && !lt(B, order[i - 1], x, addr))
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
        for (int32_t x = s->head; x != NIL; prev = x, x = B[x].next) {
            if (B[x].seg != si || B[x].prev != prev || B[x].offset != off || B[x].size <= 0 || B[x].pool != s->pool)
                return remat_error_set(err, REMAT_ERR_INTERNAL,
                                       "allocator model: segment %d: block %d breaks the chain at offset %lld", si, x,
                                       (long long)off);
            if (prev != NIL && !B[x].allocated && !B[prev].allocated && B[x].mapped == B[prev].mapped)
                return remat_error_set(err, REMAT_ERR_INTERNAL,
                                       "allocator model: segment %d: free neighbours %d and %d not merged", si, prev, x);
            if (!B[x].mapped) {
                int64_t page = page_of(&m->cfg, s->pool);
                if (!s->expandable || B[x].allocated || B[x].offset % page != 0 ||
                    (B[x].next != NIL && B[x].size % page != 0))
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
