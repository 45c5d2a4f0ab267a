/* ext_replay.h - replaying an external allocation stream (an imported PyTorch memory
 * snapshot, core/io/ext_trace.h) through remat's caching-allocator model
 * (alloc_model.h), to check the model against the allocator that recorded it.
 *
 * The replay starts from the state the snapshot implies at the start of its window:
 * the segments that existed then (those at the end that the window did not create,
 * plus those it freed), in address order, and the blocks live then
 * (remat_ext_live_at) placed at their recorded addresses. Then, in order: each
 * `alloc` is allocated by the model and its predicted address compared with the
 * recorded one; each `free_completed` releases the block (a `free_requested` block
 * stays held, as in PyTorch until its stream work completes); a run of `segment_free` /
 * `segment_unmap` events releases every entirely free segment and unmaps every whole
 * free page of an expandable segment (PyTorch's release_cached_blocks, from empty_cache
 * or from a failed cudaMalloc / page mapping before its retry); an `oom` entry (the
 * retry failed) takes nothing and releases the cache the same way. A segment the model creates is matched to the real segment
 * that holds the address PyTorch gave the allocation that created it, so later
 * placements in it compare as addresses.
 *
 * Streams: one model per stream, as PyTorch keeps each stream's free blocks (and so
 * its segments) apart; a block goes back to the stream that allocated it at its
 * free_completed, which is also when a block used by another stream (record_stream)
 * becomes reusable.
 *
 * Not modelled (reported in `notes`): expandable segments' pages mapped before the
 * window (a mapped range the window mapped entirely is not in the start state),
 * garbage collection, roundup_power2_divisions, the address order of segments
 * created in the window relative to older ones (cudaMalloc decides it; the model puts
 * them after), CUDA-graph private pools, the device limit itself (the model never
 * fails; OOM recovery is replayed from the entries PyTorch recorded).
 */
#ifndef REMAT_EXT_REPLAY_H
#define REMAT_EXT_REPLAY_H

#include <stdint.h>

#include "core/alloc/alloc_model.h"
#include "core/base/status.h"
#include "core/io/ext_trace.h"

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_EXT_REPLAY_SHOW_FREE 4

typedef struct remat_ext_replay {
    int32_t device;
    int64_t allocations;                 /* alloc events replayed */
    int64_t placed_at_recorded_address;  /* of them, placed where PyTorch placed them */
    int64_t pool_allocations[2], pool_placed[2]; /* the same per pool: 0 small, 1 large */
    /* the first disagreement (event -1: none) */
    int64_t first_mismatch_event, first_mismatch_size, first_mismatch_predicted, first_mismatch_recorded;
    int64_t first_mismatch_free_count;   /* free blocks of that pool large enough, in all */
    int64_t first_mismatch_free_addr[REMAT_EXT_REPLAY_SHOW_FREE], first_mismatch_free_size[REMAT_EXT_REPLAY_SHOW_FREE];
    /* reserved bytes */
    int64_t reserved_start;              /* the start state's segments */
    int64_t reserved_end_predicted, reserved_end_recorded;
    int64_t peak_reserved_predicted, peak_reserved_recorded;
    int64_t peak_allocated_predicted;    /* block bytes */
    int64_t fragmentation_at_peak;       /* predicted reserved minus allocated (block bytes) when allocated peaks */
    /* segments */
    int64_t segments_created_predicted;  /* segments the model created */
    int64_t segment_allocs_recorded;     /* segment_alloc events */
    int64_t segment_allocs_matched;      /* model created a segment of the same bytes for the alloc that followed */
    int64_t segment_events_recorded;     /* segment_alloc/free/map/unmap events */
    int64_t segment_events_reserved_matched; /* of them, where predicted reserved == recorded reserved after it */
    /* what could not be replayed */
    int64_t unknown_frees;               /* free_completed of an address not live in the replay */
    int64_t start_blocks_unplaced;       /* start blocks outside any start segment, or overlapping */
    int64_t streams;                     /* distinct streams seen (>1: not modelled) */
    char config[512];                    /* the configuration replayed (alloc_model.h text form) */
    char notes[1024];                    /* one line per rule the replay met but does not model */
} remat_ext_replay;

/* Replays device index `device` of t under cfg (NULL: the snapshot's recorded
 * settings, t->allocator_config, or PyTorch's defaults when it recorded none, said in
 * notes). fresh_start: instead of the recorded start state, an allocator with no
 * cached segments in which the blocks live at the start are allocated anew in address
 * order (for what-ifs under other settings, where the recorded layout would carry the
 * old settings' decisions; addresses then mostly differ). REMAT_ERR_INPUT for a bad
 * device or a config the model refuses. */
remat_status remat_ext_replay_run(const remat_ext_trace *t, int32_t device, const remat_caching_config *cfg,
                                  int fresh_start, remat_ext_replay *out, remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
