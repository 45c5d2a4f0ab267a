/* reduce.h - shrinking a curve to what a picture can show without losing a peak.
 *
 * M4 reduction: the x range is cut into equal buckets (x must be non-decreasing);
 * each bucket keeps its first point, its last point, its lowest and its highest
 * point (the first of equal ones), in their original order. So:
 *  - every local maximum that is the highest point of its bucket is kept exactly,
 *    and every other one lies under a kept point of the same bucket: the upper
 *    envelope of the curve is unchanged at bucket resolution (at most max_points/4
 *    buckets, about one per pixel column of a 1280-pixel figure at the default);
 *  - the global maximum (its first occurrence) is always kept, and so are the
 *    first and the last point;
 *  - a curve of at most max_points points is kept whole.
 * Cost: one pass, O(n), no allocation.
 */
#ifndef REMAT_PLOTS_REDUCE_H
#define REMAT_PLOTS_REDUCE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_REDUCE_DEFAULT_POINTS 4000

/* Writes the indices of the kept points, ascending, into keep (room for
 * max(n, max_points) entries is always enough; max_points < 8 counts as 8) and returns
 * their number (<= max_points when n > max_points). When all x are equal the
 * buckets are cut by index instead. */
int64_t remat_reduce_m4(const double *x, const int64_t *y, int64_t n, int64_t max_points, int64_t *keep);

#ifdef __cplusplus
}
#endif
#endif
