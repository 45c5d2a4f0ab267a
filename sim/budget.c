/* budget.c - what a budget means (contract and the overhead estimate in sim/budget.h). */
#include "sim/budget.h"

#include <string.h>

#include "core/base/size.h"

int remat_budget_on_from_name(const char *s) {
    if (!s) return -1;
    if (!strcmp(s, "reserved")) return REMAT_BUDGET_ON_RESERVED;
    if (!strcmp(s, "live")) return REMAT_BUDGET_ON_LIVE;
    return -1;
}

const char *remat_budget_on_name(remat_budget_on on) { return on == REMAT_BUDGET_ON_LIVE ? "live" : "reserved"; }

remat_alloc_kind remat_budget_allocator(remat_budget_on on) {
    return on == REMAT_BUDGET_ON_LIVE ? REMAT_ALLOC_EXACT : REMAT_ALLOC_CACHING;
}

remat_status remat_budget_allocator_bytes(const remat_budget *b, int64_t *out, remat_error *err) {
    if (b->total <= 0)
        return remat_error_set(err, REMAT_ERR_INPUT, "--budget: expected a positive size, got %lld B",
                               (long long)b->total);
    if (b->overhead < 0 || b->overhead == REMAT_SIZE_INF)
        return remat_error_set(err, REMAT_ERR_INPUT, "--device-overhead: expected a finite size of at least 0 B");
    if (b->total == REMAT_SIZE_INF) {
        *out = REMAT_SIZE_INF;
        return REMAT_OK;
    }
    if (b->overhead >= b->total)
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "--budget: %lld B leaves nothing once the device overhead of %lld B is taken "
                               "(expected a budget above --device-overhead, or a smaller --device-overhead)",
                               (long long)b->total, (long long)b->overhead);
    *out = b->total - b->overhead;
    return REMAT_OK;
}

int64_t remat_budget_needed(const remat_budget *b, int64_t peak_live, int64_t peak_reserved) {
    return (b->on == REMAT_BUDGET_ON_LIVE ? peak_live : peak_reserved) + b->overhead;
}
