/* ext_trace.h - an external allocation stream: what another framework's allocator
 * recorded (today: a PyTorch memory snapshot, core/io/torch_snapshot.h), per device:
 * the events of the recorded window in order, the segments and blocks at the end of
 * it, the allocator settings, and the frame labels of the allocations.
 *
 * Held in memory as flat growable arrays; written to and read from HDF5
 * (ext_trace_h5.c) as the "external allocation stream" variant of the trace schema
 * (docs/trace-schema.md, its own version REMAT_EXT_SCHEMA_VERSION). Values that the
 * source did not record are -1 (times, streams, device_free, labels), never guessed.
 */
#ifndef REMAT_EXT_TRACE_H
#define REMAT_EXT_TRACE_H

#include <stdint.h>

#include "core/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_EXT_SCHEMA_VERSION 2 /* 2: an optional /record group (ext_record.h) */
#define REMAT_EXT_FORMAT "remat-external-alloc"

/* Trace entry actions, in PyTorch's names (PyTorch's module torch.cuda.memory, TraceEntry). */
typedef enum remat_ext_action {
    REMAT_EXT_ALLOC = 0,       /* a block handed out: addr, size (requested bytes) */
    REMAT_EXT_FREE_REQUESTED,  /* the program released it (it may still be in use by a stream) */
    REMAT_EXT_FREE_COMPLETED,  /* the allocator took it back */
    REMAT_EXT_SEGMENT_ALLOC,   /* cudaMalloc of a segment: addr, size */
    REMAT_EXT_SEGMENT_FREE,    /* cudaFree of a segment */
    REMAT_EXT_SEGMENT_MAP,     /* expandable segment: pages mapped at addr, size */
    REMAT_EXT_SEGMENT_UNMAP,   /* expandable segment: pages unmapped */
    REMAT_EXT_SNAPSHOT,        /* a snapshot was taken here */
    REMAT_EXT_OOM,             /* out of memory: size requested, device_free bytes free */
    REMAT_EXT_ANNOTATE,        /* user_defined: an annotation (torch.cuda.memory._record_memory_history's
                                  user metadata); addr and size 0 or absent */
    REMAT_EXT_ACTION_COUNT
} remat_ext_action;
/* "alloc", "free_requested", ...; NULL out of range. */
const char *remat_ext_action_name(int a);
/* The action of a PyTorch name (len bytes; "annotate" too, for user_defined), or -1. */
int remat_ext_action_parse(const char *s, size_t len);

typedef enum remat_ext_block_state {
    REMAT_EXT_BLOCK_ACTIVE = 0,   /* active_allocated */
    REMAT_EXT_BLOCK_PENDING_FREE, /* active_pending_free / active_awaiting_free */
    REMAT_EXT_BLOCK_INACTIVE,     /* inactive (free, cached) */
    REMAT_EXT_BLOCK_STATE_COUNT
} remat_ext_block_state;
const char *remat_ext_block_state_name(int s);

typedef enum remat_ext_pool { REMAT_EXT_POOL_SMALL = 0, REMAT_EXT_POOL_LARGE = 1, REMAT_EXT_POOL_UNKNOWN = 2 } remat_ext_pool;

typedef struct remat_ext_event {
    int64_t addr;
    int64_t size;
    int64_t stream;       /* -1: not recorded */
    int64_t time_us;      /* microseconds (PyTorch: since the epoch); -1: not recorded */
    int64_t device_free;  /* oom: bytes free on the device; else -1 */
    int32_t label;        /* index into the labels, -1: no frames */
    uint8_t action;       /* remat_ext_action */
    uint8_t pad[3];
} remat_ext_event;

typedef struct remat_ext_segment {
    int64_t address, total_size;
    int64_t stream;          /* -1: not recorded */
    int64_t first_block, n_blocks; /* its blocks: a slice of the device's blocks, in address order */
    uint8_t pool;            /* remat_ext_pool */
    uint8_t expandable;
    uint8_t pad[6];
} remat_ext_segment;

typedef struct remat_ext_block {
    int64_t address;         /* derived from the segment and the sizes before it where the source lacked it */
    int64_t size;            /* block bytes */
    int64_t requested_size;  /* bytes asked for (-1: not recorded) */
    int32_t label;           /* frames of the allocation, -1: none */
    uint8_t state;           /* remat_ext_block_state */
    uint8_t pad[3];
} remat_ext_block;

typedef struct remat_ext_device {
    int32_t device;
    remat_ext_event *events; int64_t n_events, cap_events;
    remat_ext_segment *segments; int64_t n_segments, cap_segments;
    remat_ext_block *blocks; int64_t n_blocks, cap_blocks;
} remat_ext_device;

typedef struct remat_ext_trace {
    int32_t schema_version;
    char source[64];              /* "pytorch-snapshot" */
    char source_file[256];        /* basename of the imported file */
    int32_t settings_recorded;    /* 1: the source recorded its allocator settings */
    char allocator_settings[1024];/* as recorded, "name=value,..." ("" when not recorded) */
    char allocator_config[512];   /* the same in remat's caching-model form (alloc_model.h); "" unknown */
    char notes[4096];             /* what the source lacked or what was derived, one item per line */
    /* frame labels: NUL-terminated strings packed in label_text, label_off[i] the start of label i */
    char *label_text; int64_t label_bytes, cap_label_bytes;
    int64_t *label_off; int32_t n_labels, cap_labels;
    remat_ext_device *devices; int32_t n_devices;
    struct remat_ext_record *record; /* version 2, a recorded PyTorch step (ext_record.h); NULL: none */
} remat_ext_trace;

void remat_ext_trace_init(remat_ext_trace *t);
void remat_ext_trace_free(remat_ext_trace *t);
/* Devices 0..n-1 (grows only). */
remat_status remat_ext_trace_set_devices(remat_ext_trace *t, int32_t n, remat_error *err);
/* Appends; return the new index or -1 on NOMEM (err set). */
int64_t remat_ext_add_event(remat_ext_device *d, const remat_ext_event *e, remat_error *err);
int64_t remat_ext_add_segment(remat_ext_device *d, const remat_ext_segment *s, remat_error *err);
int64_t remat_ext_add_block(remat_ext_device *d, const remat_ext_block *b, remat_error *err);
/* Appends a label (len bytes, NULs replaced by '?'); returns its index or -1. No
 * deduplication here (the importer deduplicates). */
int32_t remat_ext_add_label(remat_ext_trace *t, const char *s, size_t len, remat_error *err);
/* Label i, or "" for -1 / out of range. */
const char *remat_ext_label(const remat_ext_trace *t, int32_t i);
/* Appends one line to notes (dropped, with a final "..." line, when full). */
void remat_ext_note(remat_ext_trace *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The most bytes one device's sizes (event sizes, segment and block sizes) may add up
 * to: every running sum of a replay (allocated, reserved, live) stays below it, so no
 * sum of sizes from a file overflows. 2^62 B is 4 EiB, past any device. */
#define REMAT_EXT_MAX_TOTAL_BYTES ((int64_t)1 << 62)

/* REMAT_ERR_INPUT, naming `where` (e.g. "s.h5: /devices/1") and the first size that
 * takes the total of device d past REMAT_EXT_MAX_TOTAL_BYTES (or is negative). */
remat_status remat_ext_check_sizes(const remat_ext_device *d, const char *where, remat_error *err);

/* ---- the live blocks at a point of the window --------------------------------
 * A block is live from its `alloc` to its `free_completed` (a `free_requested` block
 * is still held: the allocator cannot reuse it yet). Blocks live before the window are
 * reconstructed from the end state and the window: those freed in the window without
 * being allocated in it (their block bytes unknown: -1; labels unknown), and the blocks
 * active at the end that the window did not allocate (exact, from the segments). A
 * free of an address already freed in the window (and not allocated again), or an end
 * block that the window freed last, contradicts the stream: counted, not guessed at. */
typedef struct remat_ext_live {
    int64_t addr;
    int64_t bytes;          /* requested bytes */
    int64_t block_bytes;    /* the block's bytes when known (end state), else -1 */
    int32_t label;          /* -1: unknown */
    int32_t before_window;  /* 1: allocated before the recorded window */
} remat_ext_live;

/* The blocks live on device d after its first k events (0 <= k <= n_events; 0: at the
 * start of the window), in no particular order; *out allocated with remat_xmalloc
 * (NULL when none). *inconsistent (may be NULL) is increased by the number of events
 * the stream contradicts itself on (an alloc at an address already live). O(n) time. */
remat_status remat_ext_live_at(const remat_ext_device *d, int64_t k, remat_ext_live **out, int64_t *n,
                               int64_t *inconsistent, remat_error *err);

/* allocated[0..n_events]: the requested bytes of live blocks at the start and after
 * each event, from the start set of remat_ext_live_at; a free of an address that is
 * not live changes nothing, a second alloc at a live address replaces it (both count
 * in *inconsistent, which may be NULL). O(n_events) with one hash. */
remat_status remat_ext_allocated_after(const remat_ext_device *d, int64_t *allocated, int64_t *inconsistent,
                                       remat_error *err);

/* HDF5 (schema: docs/trace-schema.md, "External allocation stream"). Writing goes
 * through the atomic writer (remat_h5_begin/commit, core/io/h5_util.h): never a half
 * file under the final name. Reading checks the format and version attributes, every
 * dataset's presence, type and length, enum ranges, label indices, that each
 * segment's block slice is in range with its blocks ascending, disjoint and inside the segment, and the content
 * checksum; every failure is one REMAT_ERR_INPUT line naming the file and dataset. */
remat_status remat_ext_trace_write_h5(const remat_ext_trace *t, const char *path, remat_error *err);
remat_status remat_ext_trace_read_h5(const char *path, remat_ext_trace *out, remat_error *err);
/* The same from the bytes of an HDF5 file in memory (origin names it in messages): the
 * fuzzer's way in (fuzz/fuzz_record.c), no file system. */
remat_status remat_ext_trace_read_h5_image(const void *data, size_t n, const char *origin, remat_ext_trace *out,
                                           remat_error *err);
/* 1 when the HDF5 file at path is an external allocation stream (root attribute
 * format = REMAT_EXT_FORMAT), 0 otherwise (including unreadable files, and anything
 * that is not a regular file: a pipe is never opened here, so that its data stays for
 * the reader). */
int remat_ext_trace_is_ext_h5(const char *path);

#ifdef __cplusplus
}
#endif
#endif
