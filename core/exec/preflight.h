/* preflight.h - what a training step will hold, known before anything is allocated.
 *
 * remat_session_init calls remat_exec_preflight on every backend that holds data:
 * it runs two steps of the same model, plan and allocator settings on the dry
 * backend (the schedule and the allocator models without memory or kernels, as the
 * simulator does), and refuses (REMAT_ERR_INPUT, exit 2, one line naming the model
 * file, the layer of the largest tensor and the bytes) a step whose peak reserved
 * bytes exceed the memory the backend has (the executor itself refuses any one
 * tensor above REMAT_ALLOC_MAX_REQUEST, a conv workspace the loader cannot see).
 * A sparse-compressed input is counted at its worst (every element non-zero).
 *
 * The memory: a CUDA device's total (mem_info), else the host's: the least of the
 * physical memory, RLIMIT_AS, RLIMIT_DATA and the cgroup's memory.max, or the
 * environment variable REMAT_HOST_MEMORY (a size, e.g. "4GiB") when set.
 */
#ifndef REMAT_EXEC_PREFLIGHT_H
#define REMAT_EXEC_PREFLIGHT_H

#include <stdint.h>

#include "core/base/status.h"
#include "core/exec/executor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The host memory limit described above, in bytes (INT64_MAX when unknown); a
 * REMAT_HOST_MEMORY that is not a size is REMAT_ERR_INPUT naming the variable. */
remat_status remat_host_memory_limit(int64_t *limit, remat_error *err);

/* The check described above for model m, plan p and options o on backend b. */
remat_status remat_exec_preflight(const remat_model *m, const remat_plan *p, const remat_backend *b,
                                  const remat_exec_opts *o, remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
