/* parallel.c - remat_ref_parallel_for (parallel.h): one pthread per part but the first,
 * joined before returning; the GEMM (gemm.c) and the other kernels split their work
 * through it. */
#include "core/ref/parallel.h"

#include <pthread.h>
#include <string.h>

#include "core/base/clock.h"
#include "core/ref/ref_kernels.h"
#include "core/ref/sparse_chain.h"

#define PAR_MAX_THREADS 64

typedef struct par_part {
    remat_ref_range_fn fn;
    void *ctx;
    int64_t lo, hi;
    int timed;    /* stats on: cpu_s gets the part's thread CPU time */
    double cpu_s;
} par_part;

static int g_stats_on = 0;
static remat_par_stats g_stats;
static __thread int t_depth = 0; /* remat_ref_parallel_for calls open on this thread */

void remat_ref_parallel_stats_on(int on) {
    memset(&g_stats, 0, sizeof g_stats);
    __atomic_store_n(&g_stats_on, on ? 1 : 0, __ATOMIC_RELAXED);
}

remat_par_stats remat_ref_parallel_stats(void) { return g_stats; }

static void *par_run(void *arg) {
    par_part *p = arg;
    const double c0 = p->timed ? remat_thread_cpu_s() : 0.0;
    t_depth++;
    p->fn(p->ctx, p->lo, p->hi);
    t_depth--;
    if (p->timed) p->cpu_s = remat_thread_cpu_s() - c0;
    return NULL;
}

static void stats_add(const par_part *parts, int64_t n) {
    double mx = 0.0;
    g_stats.calls++;
    g_stats.split += n > 1;
    g_stats.parts += n;
    g_stats.first_s += parts[0].cpu_s;
    for (int64_t t = 0; t < n; t++) {
        g_stats.busy_s += parts[t].cpu_s;
        if (parts[t].cpu_s > mx) mx = parts[t].cpu_s;
    }
    g_stats.max_s += mx;
}

void remat_ref_parallel_for(int64_t n, int64_t align, int64_t min_items, remat_ref_range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (align < 1) align = 1;
    if (min_items < 1) min_items = 1;
    int64_t units = (n + align - 1) / align, threads = remat_ref_get_threads();
    if (threads > PAR_MAX_THREADS) threads = PAR_MAX_THREADS;
    if (threads > n / min_items) threads = n / min_items;
    if (threads > units) threads = units;
    const int timed = t_depth == 0 && __atomic_load_n(&g_stats_on, __ATOMIC_RELAXED);
    if (threads <= 1) {
        par_part one = {fn, ctx, 0, n, timed, 0.0};
        par_run(&one);
        if (timed) stats_add(&one, 1);
        return;
    }
    par_part parts[PAR_MAX_THREADS];
    pthread_t tids[PAR_MAX_THREADS];
    int started[PAR_MAX_THREADS];
    for (int64_t t = 0; t < threads; t++) {
        int64_t lo = units * t / threads * align, hi = units * (t + 1) / threads * align;
        parts[t] = (par_part){fn, ctx, lo, hi < n ? hi : n, timed, 0.0};
    }
    for (int64_t t = 1; t < threads; t++) started[t] = pthread_create(&tids[t], NULL, par_run, &parts[t]) == 0;
    par_run(&parts[0]);
    for (int64_t t = 1; t < threads; t++) {
        if (started[t]) pthread_join(tids[t], NULL);
        else par_run(&parts[t]);
    }
    if (timed) stats_add(parts, threads);
}

/* ---- the operand checks over the threads ------------------------------------------- */

typedef struct scan_job {
    const float *x;
    int64_t len, stride;
    int finite;    /* 1: all finite (bad set on a non-finite), 0: count nonzeros */
    int64_t count; /* nonzeros, or 1 where a part met a non-finite value (atomic adds) */
} scan_job;

static void scan_part(void *ctx, int64_t lo, int64_t hi) {
    scan_job *j = ctx;
    int64_t m = 0;
    for (int64_t i = lo, n; i < hi; i += n) {
        const int64_t r = i / j->len, off = i % j->len;
        n = j->len - off < hi - i ? j->len - off : hi - i;
        const float *x = j->x + r * j->stride + off;
        if (j->finite) m |= !remat_floats_all_finite(x, n, 1);
        else m += remat_floats_nonzero(x, n);
    }
    if (m) __atomic_fetch_add(&j->count, m, __ATOMIC_RELAXED);
}

static int64_t scan_runs(const float *x, int64_t runs, int64_t len, int64_t stride, int finite) {
    scan_job j = {x, len, stride, finite, 0};
    if (runs <= 0 || len <= 0) return 0;
    remat_ref_parallel_for(runs * len, 16, REMAT_REF_SCAN_MIN_PER_THREAD, scan_part, &j);
    return __atomic_load_n(&j.count, __ATOMIC_RELAXED);
}

int64_t remat_ref_floats_nonzero_runs(const float *x, int64_t runs, int64_t len, int64_t stride) {
    return scan_runs(x, runs, len, stride, 0);
}

int remat_ref_floats_all_finite_runs(const float *x, int64_t runs, int64_t len, int64_t stride) {
    return scan_runs(x, runs, len, stride, 1) == 0;
}
