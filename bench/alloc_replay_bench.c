/* alloc_replay_bench.c - replay throughput of the allocator models alone
 * (core/alloc/alloc_model.h) on a synthetic stream that stresses them.
 *
 *   bazel run //bench:alloc_replay_bench -- [EVENTS] [SEED]
 *
 * (bench/replay_bench.c measures the simulator's replay loops on executor-made
 * traces; this one isolates the allocator models with a harder size mix.)
 *
 * Synthesizes a training-like stream of EVENTS alloc/free events (default 12M):
 * steps that grow the live set (forward: mostly new tensors, a few frees) and
 * shrink it again (backward: mostly frees, LIFO-ish with 30% random order, plus
 * gradient allocations), sizes from 512 B to 64 MiB (small, medium, large and
 * repeated sizes). Tensor ids are dense from 0, as in traces. The stream is built
 * once, then replayed through EXACT and CACHING (default, max_split_size=64MiB,
 * expandable segments); events per second is the stream length over the replay's
 * CPU time (best of 3), and the peaks show that each model did its work.
 *
 * Note on max_split_size=64MiB here: requests just under 64 MiB get segments of
 * exactly 64 MiB (rounded to 2 MiB), which are oversize and can never serve a
 * request under 64 MiB again, so reserved memory grows with every such request.
 * PyTorch would hit cudaMalloc failures and release those cached blocks; the model
 * has no memory limit (docs/allocator-model.md), so the peak shows the growth.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc/alloc_model.h"

typedef struct ev {
    int64_t id;    /* >= 0 alloc of id, < 0 free of ~id */
    int64_t bytes; /* alloc only */
} ev;

static uint64_t rng_state = 88172645463325252ull;
static uint64_t next_u64(void) { /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}
static double unit(void) { return (double)(next_u64() >> 11) / 9007199254740992.0; }

static int64_t log_uniform(double lo, double hi) { return (int64_t)exp(log(lo) + unit() * (log(hi) - log(lo))); }

static int64_t draw_size(void) {
    double r = unit();
    if (r < 0.40) return log_uniform(512, 1 << 20);       /* small pool */
    if (r < 0.75) return log_uniform(1 << 20, 10 << 20);  /* large pool, 20 MiB segments */
    if (r < 0.85) return log_uniform(10 << 20, 64 << 20); /* own segments */
    static const int64_t repeated[] = {4 << 20, 512 << 10, 16 << 20, 2048, 8 << 20};
    return repeated[next_u64() % 5]; /* the same shapes again and again */
}

/* CPU time of this process: on a shared machine, time spent descheduled is not the
 * model's. (Single-threaded, so CPU time is the replay's time.) */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Builds the stream into *out (malloc'd); returns its length. */
static int64_t synthesize(int64_t target, ev **out) {
    ev *e = malloc((size_t)(target + 70000) * sizeof *e);
    int64_t *live = malloc(sizeof(int64_t) * 65536);
    if (!e || !live) {
        fprintf(stderr, "alloc_replay_bench: out of memory\n");
        exit(1);
    }
    int64_t n = 0, n_live = 0, next_id = 0;
    int growing = 1;
    int64_t hi = 3000, lo = 200;
    while (n < target) {
        if (growing && n_live >= hi) growing = 0;
        if (!growing && n_live <= lo) {
            growing = 1;
            hi = 2000 + (int64_t)(next_u64() % 2000); /* steps differ a little */
        }
        double p_alloc = growing ? 0.85 : 0.25;
        if (n_live == 0 || (n_live < 65536 && unit() < p_alloc)) {
            e[n].id = next_id;
            e[n].bytes = draw_size();
            live[n_live++] = next_id++;
        } else {
            int64_t k;
            if (unit() < 0.7) /* LIFO-ish: one of the 4 newest */
                k = n_live - 1 - (int64_t)(next_u64() % (n_live < 4 ? (uint64_t)n_live : 4));
            else /* random */
                k = (int64_t)(next_u64() % (uint64_t)n_live);
            e[n].id = ~live[k];
            e[n].bytes = 0;
            live[k] = live[n_live - 1];
            n_live--;
        }
        n++;
    }
    while (n_live > 0) { /* end of run: free what is left */
        e[n].id = ~live[--n_live];
        e[n].bytes = 0;
        n++;
    }
    free(live);
    *out = e;
    return n;
}

typedef struct {
    const char *name;
    remat_alloc_kind kind;
    const char *cfg;
} model_case;

int main(int argc, char **argv) {
    int64_t target = argc > 1 ? strtoll(argv[1], NULL, 10) : 12000000;
    if (argc > 2) rng_state = strtoull(argv[2], NULL, 10) * 2654435761ull + 1;
    if (target < 1000) target = 1000;
    ev *e = NULL;
    double t0 = now_s();
    int64_t n = synthesize(target, &e);
    int64_t allocs = 0;
    for (int64_t i = 0; i < n; i++) allocs += e[i].id >= 0;
    printf("alloc_replay_bench: %" PRId64 " events (%" PRId64 " allocs, %" PRId64 " frees), synthesized in %.2f s\n",
           n, allocs, n - allocs, now_s() - t0);
    const model_case cases[] = {
        {"exact", REMAT_ALLOC_EXACT, ""},
        {"caching", REMAT_ALLOC_CACHING, ""},
        {"caching max_split_size=64MiB", REMAT_ALLOC_CACHING, "max_split_size=64MiB"},
        {"caching expandable_segments", REMAT_ALLOC_CACHING, "expandable_segments=1"},
    };
    printf("%-30s %9s %12s %16s %16s %9s\n", "model", "seconds", "events/s", "peak live B", "peak reserved B",
           "segments");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        remat_error err = {REMAT_OK, {0}};
        remat_caching_config cfg;
        if (remat_caching_config_parse(cases[c].cfg, &cfg, &err) != REMAT_OK) {
            fprintf(stderr, "alloc_replay_bench: %s\n", err.msg);
            return 1;
        }
        double best = 1e30;
        remat_alloc_stats st;
        memset(&st, 0, sizeof st);
        for (int rep = 0; rep < 3; rep++) {
            remat_alloc_model *m = remat_alloc_model_init(cases[c].kind, &cfg, &err);
            if (!m) {
                fprintf(stderr, "alloc_replay_bench: %s\n", err.msg);
                return 1;
            }
            remat_alloc_result r;
            double a = now_s();
            for (int64_t i = 0; i < n; i++) {
                remat_status s = e[i].id >= 0 ? remat_alloc_model_alloc(m, e[i].id, e[i].bytes, &r, &err)
                                              : remat_alloc_model_release(m, ~e[i].id, &err);
                if (s != REMAT_OK) {
                    fprintf(stderr, "alloc_replay_bench: event %" PRId64 ": %s\n", i, err.msg);
                    return 1;
                }
            }
            double b = now_s();
            if (b - a < best) best = b - a;
            remat_alloc_model_stats(m, &st); /* segments: still cached at the end */
            remat_alloc_model_free(m);
        }
        printf("%-30s %9.3f %12.0f %16" PRId64 " %16" PRId64 " %9" PRId64 "\n", cases[c].name, best,
               (double)n / best, st.peak_live_bytes, st.peak_reserved_bytes, st.n_segments);
    }
    free(e);
    return 0;
}
