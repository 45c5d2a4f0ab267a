/* parallel.c - remat_ref_parallel_for (parallel.h): one pthread per part but the first,
 * joined before returning; the GEMM (gemm.c) and the other kernels split their work
 * through it. */
#include "core/ref/parallel.h"

#include <pthread.h>

#include "core/ref/ref_kernels.h"

#define PAR_MAX_THREADS 64

typedef struct par_part {
    remat_ref_range_fn fn;
    void *ctx;
    int64_t lo, hi;
} par_part;

static void *par_run(void *arg) {
    const par_part *p = arg;
    p->fn(p->ctx, p->lo, p->hi);
    return NULL;
}

void remat_ref_parallel_for(int64_t n, int64_t align, int64_t min_items, remat_ref_range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (align < 1) align = 1;
    if (min_items < 1) min_items = 1;
    int64_t units = (n + align - 1) / align, threads = remat_ref_get_threads();
    if (threads > PAR_MAX_THREADS) threads = PAR_MAX_THREADS;
    if (threads > n / min_items) threads = n / min_items;
    if (threads > units) threads = units;
    if (threads <= 1) {
        fn(ctx, 0, n);
        return;
    }
    par_part parts[PAR_MAX_THREADS];
    pthread_t tids[PAR_MAX_THREADS];
    int started[PAR_MAX_THREADS];
    for (int64_t t = 0; t < threads; t++) {
        int64_t lo = units * t / threads * align, hi = units * (t + 1) / threads * align;
        parts[t] = (par_part){fn, ctx, lo, hi < n ? hi : n};
    }
    for (int64_t t = 1; t < threads; t++) started[t] = pthread_create(&tids[t], NULL, par_run, &parts[t]) == 0;
    par_run(&parts[0]);
    for (int64_t t = 1; t < threads; t++) {
        if (started[t]) pthread_join(tids[t], NULL);
        else par_run(&parts[t]);
    }
}
