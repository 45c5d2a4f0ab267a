/* grow.c - the one growth rule of remat's dynamic arrays (contract in grow.h). */
#include "core/base/grow.h"

remat_status remat_grow(void **arr, int64_t *cap, int64_t need, size_t elem, int64_t first, int64_t max,
                        remat_error *err) {
    if (need <= *cap) return REMAT_OK;
    if (need > max)
        return remat_error_set(err, REMAT_ERR_NOMEM, "cannot hold %lld elements: at most %lld", (long long)need,
                               (long long)max);
    int64_t c = *cap ? *cap : first;
    if (*cap) c = c > max / 2 ? max : c * 2;
    while (c < need) c = c > max / 2 ? max : c * 2;
    if (c > max) c = max;
    if (elem && (uint64_t)c > SIZE_MAX / elem)
        return remat_error_set(err, REMAT_ERR_NOMEM, "cannot allocate %lld x %zu bytes: size overflows", (long long)c,
                               elem);
    void *p = remat_xrealloc(*arr, (size_t)c * elem, err);
    if (!p) return REMAT_ERR_NOMEM;
    *arr = p;
    *cap = c;
    return REMAT_OK;
}
