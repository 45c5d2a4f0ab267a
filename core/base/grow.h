/* grow.h - the one growth rule of remat's dynamic arrays.
 *
 * remat_grow makes the array *arr (elements of elem bytes, *cap of them, allocated through
 * the one allocation wrapper of core/base/status.h) hold at least need elements:
 *   - need <= *cap: nothing changes;
 *   - otherwise the capacity doubles, from first when *cap is 0 and from *cap otherwise,
 *     until need fits, and is clipped to max (a caller's own limit; INT64_MAX for none).
 * The elements past the old *cap are not initialised.
 *
 * Returns REMAT_OK, or REMAT_ERR_NOMEM with err filled when need is above max, when the
 * bytes would overflow size_t, or when the host is out of memory. On failure *arr and
 * *cap are unchanged: the old array stays valid and is still the caller's to free.
 * Requires first >= 1, max >= 1 and *cap <= max.
 *
 *   if (remat_grow((void **)&t->events, &t->cap_events, t->n_events + 1, sizeof *t->events,
 *                  256, INT64_MAX, err) != REMAT_OK)
 *       return -1;
 *   t->events[t->n_events++] = *e;
 */
#ifndef REMAT_BASE_GROW_H
#define REMAT_BASE_GROW_H

#include <stddef.h>
#include <stdint.h>

#include "core/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

remat_status remat_grow(void **arr, int64_t *cap, int64_t need, size_t elem, int64_t first, int64_t max,
                        remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
