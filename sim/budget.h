/* budget.h - what a memory budget means: the bytes a card has for this process.
 *
 * What runs out on a GPU is the caching allocator's reserved memory (segments it
 * got from cudaMalloc and keeps) plus what the allocator never sees: the CUDA
 * context and the cuBLAS workspace (the "device overhead"). So by default a budget
 * B is compared with the predicted peak of reserved bytes under the caching model
 * (core/alloc/alloc_model.h), after subtracting the device overhead:
 *
 *     fits  <=>  peak reserved (caching model) + device overhead <= B
 *
 * On request (REMAT_BUDGET_ON_LIVE, `--budget-on live`) the peak of live bytes
 * (the exact allocator: bytes of tensors alive at once) is compared instead.
 *
 * REMAT_DEVICE_OVERHEAD_DEFAULT is an estimate, not a measurement: a CUDA 12
 * context on a recent data-centre GPU (with lazy module loading) holds about
 * 300-500 MiB, and remat's CUDA backend allocates a 32 MiB cuBLAS workspace on
 * sm_90 (4 MiB before), 64 KiB of scalars and at least 1 MiB of scratch at init;
 * 512 MiB covers that with room. `remat run --backend cuda` prints the measured
 * figure for the card it runs on ("device overhead" line) and records the driver's
 * view in its trace (remat_trace.device_total_bytes / device_free_at_init); the
 * commands then use that measurement instead of this estimate. docs/simulator.md
 * ("Budgets") says the same.
 */
#ifndef REMAT_SIM_BUDGET_H
#define REMAT_SIM_BUDGET_H

#include <stdint.h>

#include "core/alloc/alloc_model.h"
#include "core/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_DEVICE_OVERHEAD_DEFAULT ((int64_t)512 << 20)

typedef enum remat_budget_on {
    REMAT_BUDGET_ON_RESERVED = 0, /* peak reserved bytes under the caching model (the default) */
    REMAT_BUDGET_ON_LIVE = 1,     /* peak live bytes (exact allocator) */
} remat_budget_on;

typedef struct remat_budget {
    int64_t total;        /* the budget as given (REMAT_SIZE_INF: no limit) */
    int64_t overhead;     /* device bytes outside the allocator (>= 0) */
    remat_budget_on on;
} remat_budget;

/* "reserved" / "live" -> the kind; -1 for anything else. */
int remat_budget_on_from_name(const char *s);
const char *remat_budget_on_name(remat_budget_on on);

/* The simulator allocator whose peak the budget is compared with: caching for
 * reserved, exact for live. */
remat_alloc_kind remat_budget_allocator(remat_budget_on on);

/* The bytes left for the allocator's peak: total - overhead (INF stays INF).
 * REMAT_ERR_INPUT "--budget: ..." when total <= 0, overhead < 0 or infinite, or
 * the overhead leaves nothing (overhead >= total). */
remat_status remat_budget_allocator_bytes(const remat_budget *b, int64_t *out, remat_error *err);

/* Bytes a plan needs on the card: its peak under the budget's allocator plus the
 * overhead (peak_live / peak_reserved as the simulator reports them). */
int64_t remat_budget_needed(const remat_budget *b, int64_t peak_live, int64_t peak_reserved);

#ifdef __cplusplus
}
#endif
#endif
