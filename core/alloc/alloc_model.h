/* alloc_model.h - the allocator models: ONE implementation, shared by the
 * executor's accounting (real runs: it also places every tensor in real memory)
 * and by the simulator (replays: addresses only). Two kinds:
 *
 *  EXACT    live bytes = sum of requested bytes; reserved = live.
 *  CACHING  the rules of PyTorch's CUDA caching allocator (constants below, each
 *           with its meaning; docs/allocator-model.md states every rule):
 *           requests rounded up to 512 B; requests <= 1 MiB served from the small
 *           pool, carved from 2 MiB segments; larger ones from the large pool, from
 *           20 MiB segments when under 10 MiB, otherwise from a segment of the
 *           request rounded up to 2 MiB; best fit by (size, segment, offset);
 *           a block is split when the remainder is >= 512 B (small pool) or > 1 MiB
 *           (large pool); blocks above max_split_size are never split; a freed block
 *           merges with free neighbours of the same segment only; segments are
 *           never returned unless remat_alloc_model_empty_cache is called.
 *           expandable_segments: one segment per pool that grows in 20 MiB (large)
 *           or 2 MiB (small) pages instead of new segments.
 *
 * Usage:
 *   remat_alloc_model *m = remat_alloc_model_init(REMAT_ALLOC_CACHING, NULL, &err);
 *   remat_alloc_result r;
 *   remat_alloc_model_alloc(m, id, bytes, &r, &err);   // id: caller's dense tensor id
 *   if (r.new_segment_bytes) { ... provide memory for segment r.segment ... }
 *   ptr = base[r.segment] + r.offset;
 *   remat_alloc_model_release(m, id, &err);
 *   remat_alloc_model_free(m);
 * Cost: O(log n) per call in the number of free blocks; no allocation per call
 * once the id table and block pool have grown (amortised).
 */
#ifndef REMAT_ALLOC_MODEL_H
#define REMAT_ALLOC_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "core/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum remat_alloc_kind { REMAT_ALLOC_EXACT = 0, REMAT_ALLOC_CACHING = 1 } remat_alloc_kind;

/* The largest request the models place (one segment of 512 GiB at most); a larger
 * one is REMAT_ERR_INPUT (the executor refuses it first, naming the layer). */
#define REMAT_ALLOC_MAX_REQUEST ((int64_t)1 << 39)

typedef struct remat_caching_config {
    int64_t round_bytes;          /* 512: every request is rounded up to a multiple */
    int64_t small_size;           /* 1 MiB: requests up to this go to the small pool */
    int64_t small_segment;        /* 2 MiB: segment size of the small pool */
    int64_t large_segment;        /* 20 MiB: segment size for large requests under min_large_alloc */
    int64_t min_large_alloc;      /* 10 MiB: from here a request gets its own segment ... */
    int64_t round_large;          /* 2 MiB: ... rounded up to a multiple of this */
    int64_t small_split_min;      /* 512: small-pool block split when remainder >= this */
    int64_t large_split_min;      /* 1 MiB: large-pool block split when remainder > this */
    int64_t max_split_size;       /* INT64_MAX: blocks larger than this are never split, and a
                                     request under it never takes one */
    int expandable_segments;      /* 0: fixed segments; 1: one growing segment per pool */
    int64_t expandable_page;      /* 2 MiB: growth granularity of the small pool's expandable segment */
    int64_t expandable_large_page;/* 20 MiB: growth granularity of the large pool's expandable segment */
} remat_caching_config;

/* PyTorch's defaults. */
remat_caching_config remat_caching_config_default(void);
/* "name=value,name=value" (names as the fields above, sizes with B/KiB/MiB/GiB),
 * e.g. "max_split_size=64MiB,expandable_segments=1". Fields not named keep PyTorch's
 * defaults (not cfg's previous values); "inf" is INT64_MAX. The result is validated
 * (e.g. max_split_size >= large_segment, as PyTorch requires); on REMAT_ERR_INPUT
 * *cfg is unchanged. */
remat_status remat_caching_config_parse(const char *text, remat_caching_config *cfg, remat_error *err);
/* The same, also reading PyTorch's own syntax as PYTORCH_CUDA_ALLOC_CONF is written
 * ("expandable_segments:True,max_split_size_mb:64,garbage_collection_threshold:0.8,
 * roundup_power2_divisions:4"; both syntaxes may mix): expandable_segments and
 * max_split_size_mb set what the model models; the options it does not model
 * (garbage_collection_threshold, roundup_power2_divisions, max_non_split_rounding_mb,
 * backend other than native, the pinned-memory ones) are accepted and their names
 * written, comma-separated, into notes (may be NULL; "" when none). Unknown names:
 * REMAT_ERR_INPUT. */
remat_status remat_caching_config_parse_notes(const char *text, remat_caching_config *cfg, char *notes,
                                              size_t notes_len, remat_error *err);
/* As remat_caching_config_parse, starting from base instead of the defaults: the
 * settings text names change base's values (each setting once within text). */
remat_status remat_caching_config_parse_over(const char *text, const remat_caching_config *base,
                                             remat_caching_config *cfg, remat_error *err);
/* The text form of cfg that remat_caching_config_parse reads back (every field,
 * sizes in bytes), e.g. for a trace's allocator_config attribute. Writes at most n
 * bytes including the NUL; returns the length it needed (snprintf style). */
int remat_caching_config_format(const remat_caching_config *cfg, char *buf, size_t n);

typedef struct remat_alloc_result {
    int64_t segment;            /* index of the segment that holds the block */
    int64_t offset;             /* byte offset of the block in the segment */
    int64_t block_bytes;        /* size of the block handed out (rounded) */
    int64_t new_segment_bytes;  /* > 0: segment `segment` was created (or, expandable,
                                   grew) and now spans this many bytes */
} remat_alloc_result;

typedef struct remat_alloc_stats {
    int64_t live_bytes;         /* requested bytes of live tensors */
    int64_t allocated_bytes;    /* block bytes of live tensors (after rounding) */
    int64_t reserved_bytes;     /* bytes of all segments */
    int64_t peak_live_bytes;
    int64_t peak_allocated_bytes;
    int64_t peak_reserved_bytes;
    int64_t n_segments;
    int64_t n_allocs, n_frees;
} remat_alloc_stats;

typedef struct remat_alloc_model remat_alloc_model;

/* cfg may be NULL (defaults); ignored for EXACT. Returns NULL and sets err on failure. */
remat_alloc_model *remat_alloc_model_init(remat_alloc_kind kind, const remat_caching_config *cfg, remat_error *err);
void remat_alloc_model_free(remat_alloc_model *m);
/* Allocates `bytes` (>= 0; 0 takes no block) for tensor id (>= 0, not live).
 * REMAT_ERR_INTERNAL if id is already live; REMAT_ERR_NOMEM if the table cannot grow. */
remat_status remat_alloc_model_alloc(remat_alloc_model *m, int64_t id, int64_t bytes, remat_alloc_result *out,
                                     remat_error *err);
/* Frees tensor id. REMAT_ERR_INTERNAL if id is not live. */
remat_status remat_alloc_model_release(remat_alloc_model *m, int64_t id, remat_error *err);
void remat_alloc_model_stats(const remat_alloc_model *m, remat_alloc_stats *out);
/* Starts a new peak measurement at the current values. */
void remat_alloc_model_reset_peaks(remat_alloc_model *m);
/* Releases every segment that is entirely free (PyTorch's empty_cache). Calls
 * on_release(ctx, segment) for each, so the owner can free the memory. Returns the
 * number of bytes released. Segment indices are never reused. */
int64_t remat_alloc_model_empty_cache(remat_alloc_model *m, void (*on_release)(void *ctx, int64_t segment),
                                      void *ctx);
/* ---- starting from a recorded state (replaying another allocator's trace) -------
 * remat_alloc_model_add_segment creates a fixed segment of `bytes` in pool 0 (small)
 * or 1 (large), entirely free, as a request would have; returns its index (segments
 * are numbered in creation order, which is the model's address order) or -1 with err
 * set. remat_alloc_model_place makes tensor id live as the block [offset,
 * offset+block_bytes) of segment `segment`, carved out of the free block that holds
 * that range (the parts before and after stay free blocks); `bytes` (<= block_bytes)
 * counts as live. REMAT_ERR_INPUT when the range is not inside one free block of a
 * live fixed segment, REMAT_ERR_INTERNAL when id is live. CACHING only. */
int64_t remat_alloc_model_add_segment(remat_alloc_model *m, int pool, int64_t bytes, remat_error *err);
remat_status remat_alloc_model_place(remat_alloc_model *m, int64_t id, int64_t bytes, int64_t segment, int64_t offset,
                                     int64_t block_bytes, remat_error *err);

/* A free block as the model sees it. */
typedef struct remat_alloc_block {
    int64_t segment, offset, size;
} remat_alloc_block;
/* The free mapped blocks of `pool` of at least min_size bytes, in the order a request
 * would try them (size, then address): up to max into out; returns how many there are
 * in all. O(free blocks). */
int64_t remat_alloc_model_list_free(const remat_alloc_model *m, int pool, int64_t min_size, remat_alloc_block *out,
                                    int64_t max);

/* Walks every internal structure (blocks of each segment contiguous, free neighbours
 * merged, free sets ordered, byte counters equal to sums). REMAT_ERR_INTERNAL naming
 * the first broken invariant. O(n); for tests. */
remat_status remat_alloc_model_check(const remat_alloc_model *m, remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
