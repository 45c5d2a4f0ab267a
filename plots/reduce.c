/* reduce.c - M4 reduction (first, min, max, last per x bucket); see reduce.h. */
#include "plots/reduce.h"

#include <stddef.h>

static int64_t bucket_of(const double *x, int64_t i, int64_t n, double x0, double span, int64_t buckets) {
    if (span <= 0.0) return (i * buckets) / n;
    double f = (x[i] - x0) / span;
    int64_t b = (int64_t)(f * (double)buckets);
    if (b < 0) b = 0;
    if (b >= buckets) b = buckets - 1;
    return b;
}

/* Emits the (up to four) kept indices of one bucket in ascending order, no repeats. */
static int64_t emit(int64_t *keep, int64_t k, int64_t first, int64_t lo, int64_t hi, int64_t last) {
    int64_t v[4] = {first, lo, hi, last};
    /* sort 4 values */
    for (int a = 1; a < 4; a++)
        for (int b = a; b > 0 && v[b - 1] > v[b]; b--) {
            int64_t t = v[b];
            v[b] = v[b - 1];
            v[b - 1] = t;
        }
    for (int a = 0; a < 4; a++)
        if (a == 0 || v[a] != v[a - 1]) keep[k++] = v[a];
    return k;
}

int64_t remat_reduce_m4(const double *x, const int64_t *y, int64_t n, int64_t max_points, int64_t *keep) {
    if (n <= 0) return 0;
    if (max_points < 8) max_points = 8;
    if (n <= max_points) {
        for (int64_t i = 0; i < n; i++) keep[i] = i;
        return n;
    }
    int64_t buckets = max_points / 4;
    double x0 = x[0], span = x[n - 1] - x[0];
    int64_t k = 0;
    int64_t cur = bucket_of(x, 0, n, x0, span, buckets);
    int64_t first = 0, lo = 0, hi = 0, last = 0;
    for (int64_t i = 1; i < n; i++) {
        int64_t b = bucket_of(x, i, n, x0, span, buckets);
        if (b != cur) {
            k = emit(keep, k, first, lo, hi, last);
            cur = b;
            first = lo = hi = last = i;
            continue;
        }
        if (y[i] < y[lo]) lo = i;
        if (y[i] > y[hi]) hi = i;
        last = i;
    }
    return emit(keep, k, first, lo, hi, last);
}
