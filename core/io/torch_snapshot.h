/* torch_snapshot.h - importing a PyTorch memory snapshot (the pickle written by
 * torch.cuda.memory._dump_snapshot(); format of PyTorch's torch/csrc/cuda/memory_snapshot.cpp,
 * documented in PyTorch's module torch.cuda.memory) into an external allocation stream
 * (core/io/ext_trace.h).
 *
 * Kept: top-level `segments` (per segment `device`, `address`, `total_size`, `stream`,
 * `segment_type`, `is_expandable`, `blocks` with `address`, `size`, `requested_size`,
 * `state`, `frames` or the 2023 layout's `history`), `device_traces` (one list per
 * device; per entry `action`, `addr`, `size`, `stream`, `time_us`, `frames`,
 * `device_free`), `allocator_settings`, and the count of `external_annotations`.
 * Each allocation's label is its top REMAT_TORCH_LABEL_FRAMES frames,
 * "name (file:line) < caller (file:line) < ...", file names without folders.
 *
 * Refused (REMAT_ERR_INPUT, one line "<origin>: <field>: <expected>"): anything the
 * pickle reader refuses (pickle.h: globals, code, truncation, hostile lengths), a
 * top level that is not a dict with `segments`, a required field that is missing or
 * of the wrong type (segments: device, address, total_size, blocks; blocks: size,
 * state; trace entries: action, and addr and size except for `user_defined`, and for
 * `oom`, which carries device_free in place of addr), an unknown action or block
 * state, and a snapshot that would take more memory than its size allows: the
 * parsed document and the imported records together at most
 * REMAT_TORCH_BYTES_PER_INPUT_BYTE bytes per input byte (at least
 * REMAT_TORCH_MIN_BUDGET), however often the pickle's memo shares a list (one trace
 * list named by 4,096 devices is refused, naming the entry where it ran out). Optional fields that are missing (time_us, stream,
 * requested_size, block addresses, device_free, allocator_settings,
 * is_expandable, segment_type) are stored as -1 / unknown, or derived where the
 * format defines them (a block's address: its segment's address plus the sizes of
 * the blocks before it), and each kind is reported once in t->notes, as are the
 * settings and features the caching model lacks (roundup_power2_divisions,
 * garbage_collection_threshold, max_non_split_rounding_mb or cudaMallocAsync in
 * PYTORCH_CUDA_ALLOC_CONF, segments in private pools).
 */
#ifndef REMAT_TORCH_SNAPSHOT_H
#define REMAT_TORCH_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "core/base/status.h"
#include "core/io/ext_trace.h"

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_TORCH_LABEL_FRAMES 3
/* Memory bound of an import (records counted without the slack of growing arrays). */
#define REMAT_TORCH_BYTES_PER_INPUT_BYTE 64
#define REMAT_TORCH_MIN_BUDGET ((int64_t)1 << 20)
/* A snapshot read from a FIFO or pipe (into memory) is at most this big. */
#define REMAT_TORCH_MAX_STREAM_BYTES ((size_t)2 << 30)

/* Imports the snapshot in data[0..size); origin names it in messages and becomes
 * t->source_file (its basename). On failure *out is empty. */
remat_status remat_torch_snapshot_import(const uint8_t *data, size_t size, const char *origin, remat_ext_trace *out,
                                         remat_error *err);

/* Maps the file at path read-only and imports it; a FIFO, pipe or device is opened
 * and read as every input is (core/io/input_file.h: never a hang, REMAT_FIFO_WAIT_S)
 * into memory. REMAT_ERR_IO when it cannot be read. *bytes (may be NULL) receives
 * the file size. */
remat_status remat_torch_snapshot_load(const char *path, remat_ext_trace *out, int64_t *bytes, remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
