/* parallel.c - remat_ref_parallel_for (parallel.h): part 0 on the calling thread, the
 * others on a pool of worker threads started on first use and kept (a step makes
 * about a thousand calls: starting a thread for each cost its start, a cold stack and
 * a fresh malloc arena every time), all finished before returning; the GEMM (gemm.c)
 * and the other kernels split their work through it. One call uses the pool at a time:
 * a call made while another holds it (from another thread, or from inside a part)
 * starts threads of its own, as does a part whose worker cannot start. */
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

/* ---- the pool ----------------------------------------------------------------
 * Worker w (1 ..) runs part w of each round it is given: the caller publishes the
 * parts and a new round number under g_pool_mu, broadcasts, runs part 0, then waits
 * until every worker with a part has reported. Workers sleep on a condition variable
 * between rounds (no spinning: the machine may be shared). */
static pthread_mutex_t g_pool_call = PTHREAD_MUTEX_INITIALIZER; /* held by the call using the pool */
static pthread_mutex_t g_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_pool_go = PTHREAD_COND_INITIALIZER, g_pool_done = PTHREAD_COND_INITIALIZER;
static par_part *g_pool_parts;   /* this round's parts */
static int64_t g_pool_nparts;    /* parts in this round */
static uint64_t g_pool_round;    /* rounds published */
static int64_t g_pool_left;      /* parts of this round not yet finished by a worker */
static int64_t g_pool_workers;   /* workers started: ids 1 .. g_pool_workers */
static uint64_t g_pool_born[PAR_MAX_THREADS]; /* the last round published before worker w started */

static void *pool_worker(void *arg) {
    const int64_t w = (int64_t)(intptr_t)arg;
    pthread_mutex_lock(&g_pool_mu);
    uint64_t seen = g_pool_born[w];
    for (;;) {
        while (g_pool_round == seen) pthread_cond_wait(&g_pool_go, &g_pool_mu);
        seen = g_pool_round;
        if (w >= g_pool_nparts) continue;
        par_part *p = &g_pool_parts[w];
        pthread_mutex_unlock(&g_pool_mu);
        par_run(p);
        pthread_mutex_lock(&g_pool_mu);
        if (--g_pool_left == 0) pthread_cond_signal(&g_pool_done);
    }
    return NULL;
}

/* A child of fork() has none of the workers: it starts its own. */
static void pool_after_fork(void) {
    pthread_mutex_init(&g_pool_call, NULL), pthread_mutex_init(&g_pool_mu, NULL);
    pthread_cond_init(&g_pool_go, NULL), pthread_cond_init(&g_pool_done, NULL);
    g_pool_workers = 0;
}
static pthread_once_t g_pool_once = PTHREAD_ONCE_INIT;
static void pool_init(void) { pthread_atfork(NULL, NULL, pool_after_fork); }

/* Starts workers up to want - 1 (called with g_pool_call held); returns how many run. */
static int64_t pool_grow(int64_t want) {
    pthread_once(&g_pool_once, pool_init);
    while (g_pool_workers < want - 1) {
        pthread_t tid;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        /* a worker seeing a round published before it existed would take it as its own */
        pthread_mutex_lock(&g_pool_mu);
        g_pool_born[g_pool_workers + 1] = g_pool_round;
        const int ok = pthread_create(&tid, &attr, pool_worker, (void *)(intptr_t)(g_pool_workers + 1)) == 0;
        pthread_mutex_unlock(&g_pool_mu);
        pthread_attr_destroy(&attr);
        if (!ok) break;
        g_pool_workers++;
    }
    return g_pool_workers;
}

/* Parts [0, threads) on the pool; 0 when the pool is taken (the caller starts threads). */
static int pool_run(par_part *parts, int64_t threads) {
    if (pthread_mutex_trylock(&g_pool_call) != 0) return 0;
    const int64_t workers = pool_grow(threads), pooled = workers + 1 < threads ? workers + 1 : threads;
    pthread_mutex_lock(&g_pool_mu);
    g_pool_parts = parts, g_pool_nparts = pooled, g_pool_left = pooled - 1;
    g_pool_round++;
    pthread_cond_broadcast(&g_pool_go);
    pthread_mutex_unlock(&g_pool_mu);
    par_run(&parts[0]);
    for (int64_t t = pooled; t < threads; t++) par_run(&parts[t]); /* workers that could not start */
    pthread_mutex_lock(&g_pool_mu);
    while (g_pool_left > 0) pthread_cond_wait(&g_pool_done, &g_pool_mu);
    pthread_mutex_unlock(&g_pool_mu);
    pthread_mutex_unlock(&g_pool_call);
    return 1;
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
    if (t_depth == 0 && pool_run(parts, threads)) {
        if (timed) stats_add(parts, threads);
        return;
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
