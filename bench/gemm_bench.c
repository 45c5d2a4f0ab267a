/* gemm_bench.c - the reference backend's deterministic GEMMs against OpenBLAS
 * (cblas_sgemm) on the same operands, side by side, in one run.
 *
 *   bazel run //bench:gemm_bench -- [reps] [--paths current|all] [--shapes all|linear|conv|convsample|MxNxK]
 *
 * For each shape and layout (nt: C = A B^T, nn: C = A B, tn: C = A^T B) and for 1 and 2
 * threads it prints the best of `reps` (default 5) timed calls in GFLOP/s (2*M*N*K flops
 * per call) for ours and OpenBLAS, and ours/OpenBLAS; the calls of both sides alternate.
 * On one thread cpu_ratio is the same ratio from the best CPU time of the calling thread,
 * which a shared, loaded machine disturbs far less than wall time.
 * Ours runs the current SIMD path (core/ref/simd.h: the widest, or REMAT_SIMD), or with
 * --paths all every vector path this CPU has. The results are compared: max_rel is the
 * largest relative difference from OpenBLAS (a fast but wrong kernel shows up), and
 * `bits` says whether a path gave the first path's bits ("same") or not ("DIFF").
 *
 * Which kernels: the header lines name our SIMD path and OpenBLAS's core (its
 * openblas_get_corename()). OpenBLAS picks its core when it is loaded, and 0.3.21 does
 * not recognise every CPU (it falls back to "Prescott", an SSE3 kernel, on some AVX-512
 * Xeons), so unless OPENBLAS_CORETYPE is already set this benchmark sets it to the
 * widest core the CPU runs (SkylakeX with AVX-512 F/BW/DQ/VL; with AVX2 + FMA: Zen on
 * AMD, Haswell otherwise) and only then loads OpenBLAS (dlopen). Benchmarks only: tests
 * and CI never set it.
 * Fairness of alternating calls: OpenBLAS's worker threads spin for about 2^28 cycles
 * after each call before they sleep (its THREAD_TIMEOUT), so in an alternated run they
 * would still be spinning on the second core while our next 2-thread call runs (ours
 * then measured 0.52-0.6 of OpenBLAS on 8192x512x512 at 2 threads; with the timeout at
 * its minimum, 1.02-1.07). Unless OPENBLAS_THREAD_TIMEOUT is set, this benchmark sets
 * it to 4 (2^4 cycles) before loading OpenBLAS; OpenBLAS's own times do not change.
 * Shapes: "linear" = the benchmark models' linear layers and their gradients plus two
 * generic ones, each in all three layouts; "conv" = the three im2col products of each
 * 3x3 convolution of a Spiking VGG at batch 32, as one GEMM over all 32*H*W positions;
 * "convsample" = the per-sample GEMMs that core/ref/conv.c runs for the same layers (see
 * the table in main); MxNxK: that one shape in all three layouts.
 * Assumptions: OpenBLAS is Debian's pthread build (its thread count is set with
 * openblas_set_num_threads, ours with remat_ref_set_threads); x86-64 for the core choice.
 */
#define _POSIX_C_SOURCE 200809L

#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base/clock.h"
#include "core/base/rng.h"
#include "core/base/status.h"
#include "core/ref/ref_kernels.h"
#include "core/ref/simd.h"

typedef void (*sgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint, blasint, blasint,
                         float, const float *, blasint, const float *, blasint, float, float *, blasint);
static sgemm_fn p_sgemm;
static void (*p_set_threads)(int);
static char *(*p_corename)(void);
static char *(*p_config)(void);

typedef enum { LAYOUT_NT, LAYOUT_NN, LAYOUT_TN } layout;
static const char *const layout_names[] = {"nt", "nn", "tn"};

/* The widest OpenBLAS core this CPU runs (see the top of the file), or NULL. */
static const char *best_openblas_core(void) {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return __builtin_cpu_is("amd") ? "Zen" : "Haswell";
#endif
    return NULL;
}

/* Sets OPENBLAS_CORETYPE if unset, then loads OpenBLAS; prints which core it took. */
static int load_openblas(void) {
    const char *env = getenv("OPENBLAS_CORETYPE"), *how = "OPENBLAS_CORETYPE from the environment";
    if (!env || !*env) {
        const char *best = best_openblas_core();
        if (best) {
            setenv("OPENBLAS_CORETYPE", best, 1);
            how = "OPENBLAS_CORETYPE set by the benchmark: the widest core this CPU runs";
        } else {
            how = "OpenBLAS's own choice";
        }
    }
    if (!getenv("OPENBLAS_THREAD_TIMEOUT")) setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
    static const char *const libs[] = {"/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0",
                                       "libopenblas.so.0"};
    void *h = NULL;
    for (size_t i = 0; !h && i < sizeof libs / sizeof libs[0]; i++) h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "gemm_bench: libopenblas.so.0: cannot load (%s); install libopenblas0-pthread\n", dlerror());
        return -1;
    }
    /* POSIX: a void * from dlsym converts to a function pointer through memcpy. */
    void *s[4] = {dlsym(h, "cblas_sgemm"), dlsym(h, "openblas_set_num_threads"), dlsym(h, "openblas_get_corename"),
                  dlsym(h, "openblas_get_config")};
    if (!s[0] || !s[1] || !s[2] || !s[3]) {
        fprintf(stderr, "gemm_bench: libopenblas.so.0: cblas_sgemm/openblas_* missing: not OpenBLAS?\n");
        return -1;
    }
    memcpy(&p_sgemm, &s[0], sizeof p_sgemm);
    memcpy(&p_set_threads, &s[1], sizeof p_set_threads);
    memcpy(&p_corename, &s[2], sizeof p_corename);
    memcpy(&p_config, &s[3], sizeof p_config);
    printf("# openblas: %s (%s; OPENBLAS_THREAD_TIMEOUT=%s; %s)\n", p_corename(), how,
           getenv("OPENBLAS_THREAD_TIMEOUT"), p_config());
    return 0;
}


static void run_ours(layout l, float *c, const float *a, const float *b, int64_t M, int64_t N, int64_t K) {
    switch (l) {
    case LAYOUT_NT: remat_ref_gemm_nt(c, a, b, M, N, K, 0); break;
    case LAYOUT_NN: remat_ref_gemm_nn(c, a, b, M, N, K, 0); break;
    case LAYOUT_TN: remat_ref_gemm_tn(c, a, b, M, N, K, 0); break;
    }
}

static void run_blas(layout l, float *c, const float *a, const float *b, int64_t M, int64_t N, int64_t K) {
    const int m = (int)M, n = (int)N, k = (int)K;
    switch (l) {
    case LAYOUT_NT: p_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, k, b, k, 0.0f, c, n); break;
    case LAYOUT_NN: p_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n); break;
    case LAYOUT_TN: p_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, n, k, 1.0f, a, m, b, n, 0.0f, c, n); break;
    }
}

/* CPU seconds of the calling thread: with one thread both libraries compute on the
 * caller, so this time leaves out the slices other processes take on a shared machine. */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One call: wall seconds, and the caller's CPU seconds in *cpu. */
static double time_ours(layout l, float *c, const float *a, const float *b, int64_t M, int64_t N, int64_t K,
                        double *cpu) {
    double t0 = remat_now_s(), c0 = cpu_s();
    run_ours(l, c, a, b, M, N, K);
    *cpu = cpu_s() - c0;
    return remat_now_s() - t0;
}

static double time_blas(layout l, float *c, const float *a, const float *b, int64_t M, int64_t N, int64_t K,
                        double *cpu) {
    double t0 = remat_now_s(), c0 = cpu_s();
    run_blas(l, c, a, b, M, N, K);
    *cpu = cpu_s() - c0;
    return remat_now_s() - t0;
}

static double gflops(int64_t M, int64_t N, int64_t K, double seconds) {
    return 2.0 * (double)M * (double)N * (double)K / seconds * 1e-9;
}

static const char *arg_value(int argc, char **argv, const char *name, const char *def) {
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name)) return argv[i + 1];
    return def;
}

int main(int argc, char **argv) {
    int reps = 5;
    if (argc > 1 && argv[1][0] != '-') reps = atoi(argv[1]);
    if (reps < 1) reps = 1;
    const char *paths_arg = arg_value(argc, argv, "--paths", "current");
    const char *shapes_arg = arg_value(argc, argv, "--shapes", "all");
    if (strcmp(paths_arg, "current") && strcmp(paths_arg, "all")) {
        fprintf(stderr, "gemm_bench: --paths: '%s': expected current or all\n", paths_arg);
        return 2;
    }
    long long one[3] = {0, 0, 0};
    char tail = 0;
    if (strcmp(shapes_arg, "all") && strcmp(shapes_arg, "linear") && strcmp(shapes_arg, "conv") &&
        strcmp(shapes_arg, "convsample") &&
        (sscanf(shapes_arg, "%lldx%lldx%lld%c", &one[0], &one[1], &one[2], &tail) != 3 || one[0] < 1 || one[1] < 1 ||
         one[2] < 1)) {
        fprintf(stderr, "gemm_bench: --shapes: '%s': expected all, linear, conv, convsample or MxNxK (positive)\n", shapes_arg);
        return 2;
    }
    remat_error err = {0};
    if (remat_ref_simd_from_env(&err) != REMAT_OK) {
        fprintf(stderr, "gemm_bench: %s\n", err.msg);
        return 2;
    }
    if (load_openblas() != 0) return 1;
    remat_simd paths[REMAT_SIMD_COUNT];
    int npaths = 0;
    if (!strcmp(paths_arg, "all")) {
        /* The vector paths (scalar only where there is none: it is the slow fallback). */
        for (int p = REMAT_SIMD_AVX2; p < REMAT_SIMD_COUNT; p++)
            if (remat_ref_simd_supported((remat_simd)p)) paths[npaths++] = (remat_simd)p;
        if (!npaths) paths[npaths++] = REMAT_SIMD_SCALAR;
    } else {
        paths[npaths++] = remat_ref_simd_get();
    }
    printf("# ours: %s", remat_ref_simd_name(paths[0]));
    for (int p = 1; p < npaths; p++) printf(", %s", remat_ref_simd_name(paths[p]));
    printf(" (widest on this CPU: %s)\n", remat_ref_simd_name(remat_ref_simd_best()));

    /* layout -1: all three. conv: one 3x3 layer of a Spiking VGG at batch 32 per time
     * step (rows = 32*H*W, K = 9*C_in) as the im2col GEMMs run it: forward nt
     * (rows x C_out x 9C_in), input gradient nn (rows x 9C_in x C_out), weight gradient
     * tn (C_out x 9C_in x rows). */
    static const struct {
        const char *set;
        int layout;
        int64_t M, N, K;
    } shapes[] = {
        {"linear", -1, 8192, 512, 512},  /* linear layer of the 3-block model: rows x out x in */
        {"linear", -1, 8192, 10, 512},   /* the classifier layer */
        {"linear", -1, 512, 512, 8192},  /* weight gradient over all rows at once */
        {"linear", -1, 512, 512, 512},   /* weight gradient per time step (N = 512) */
        {"linear", -1, 1000, 1000, 1000},
        {"linear", -1, 127, 333, 259},   /* odd sizes: edge tiles everywhere */
        {"conv", LAYOUT_NT, 32 * 48 * 48, 64, 576}, /* 64 -> 64 channels at 48x48 */
        {"conv", LAYOUT_NN, 32 * 48 * 48, 576, 64},
        {"conv", LAYOUT_TN, 64, 576, 32 * 48 * 48},
        {"conv", LAYOUT_NT, 32 * 24 * 24, 128, 1152}, /* 128 -> 128 at 24x24 */
        {"conv", LAYOUT_NN, 32 * 24 * 24, 1152, 128},
        {"conv", LAYOUT_TN, 128, 1152, 32 * 24 * 24},
        {"conv", LAYOUT_NT, 32 * 12 * 12, 256, 2304}, /* 256 -> 256 at 12x12 */
        {"conv", LAYOUT_NN, 32 * 12 * 12, 2304, 256},
        {"conv", LAYOUT_TN, 256, 2304, 32 * 12 * 12},
        {"conv", LAYOUT_NT, 32 * 6 * 6, 512, 4608}, /* 512 -> 512 at 6x6 */
        {"conv", LAYOUT_NN, 32 * 6 * 6, 4608, 512},
        {"conv", LAYOUT_TN, 512, 4608, 32 * 6 * 6},
        /* convsample: the per-sample GEMMs core/ref/conv.c issues for the same layers
         * (P = H*W): forward nn W[C_out, 9C_in] col[9C_in, P], weight gradient nt
         * dout[C_out, P] col^T, input gradient tn W^T dout. */
        {"convsample", LAYOUT_NN, 64, 48 * 48, 576},
        {"convsample", LAYOUT_NT, 64, 576, 48 * 48},
        {"convsample", LAYOUT_TN, 576, 48 * 48, 64},
        {"convsample", LAYOUT_NN, 128, 24 * 24, 1152},
        {"convsample", LAYOUT_NT, 128, 1152, 24 * 24},
        {"convsample", LAYOUT_TN, 1152, 24 * 24, 128},
        {"convsample", LAYOUT_NN, 256, 12 * 12, 2304},
        {"convsample", LAYOUT_NT, 256, 2304, 12 * 12},
        {"convsample", LAYOUT_TN, 2304, 12 * 12, 256},
        {"convsample", LAYOUT_NN, 512, 6 * 6, 4608},
        {"convsample", LAYOUT_NT, 512, 4608, 6 * 6},
        {"convsample", LAYOUT_TN, 4608, 6 * 6, 512},
        {"one", -1, 0, 0, 0}, /* --shapes MxNxK */
    };
    printf("%-5s %-4s %6s %6s %6s %-7s %10s %10s %7s %9s %9s %5s %s\n", "op", "thr", "M", "N", "K", "path", "ours",
           "openblas", "ratio", "cpu_ratio", "max_rel", "bits", "set");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int pick = one[0] ? !strcmp(shapes[s].set, "one")
                                : strcmp(shapes[s].set, "one") && (!strcmp(shapes_arg, "all") || !strcmp(shapes_arg, shapes[s].set));
        if (!pick) continue;
        const int64_t M = one[0] ? one[0] : shapes[s].M, N = one[0] ? one[1] : shapes[s].N, K = one[0] ? one[2] : shapes[s].K;
        float *a = remat_xmalloc((size_t)(M * K) * sizeof(float), &err);
        float *b = remat_xmalloc((size_t)(K * N) * sizeof(float), &err);
        float *c1 = remat_xmalloc((size_t)(M * N) * sizeof(float), &err);
        float *c2 = remat_xmalloc((size_t)(M * N) * sizeof(float), &err);
        float *c0 = remat_xmalloc((size_t)(M * N) * sizeof(float), &err);
        if (!a || !b || !c1 || !c2 || !c0) {
            fprintf(stderr, "gemm_bench: %s\n", err.msg);
            return 1;
        }
        for (int64_t i = 0; i < M * K; i++) a[i] = remat_rng_uniform(1, 100, 1, (uint64_t)i) - 0.5f;
        for (int64_t i = 0; i < K * N; i++) b[i] = remat_rng_uniform(1, 100, 2, (uint64_t)i) - 0.5f;
        for (int l = LAYOUT_NT; l <= LAYOUT_TN; l++) {
            if (shapes[s].layout >= 0 && shapes[s].layout != l) continue;
            for (int threads = 1; threads <= 2; threads++) {
                remat_ref_set_threads(threads);
                p_set_threads(threads);
                /* One warm-up call each (page faults, thread start), then `reps` rounds that
                 * time OpenBLAS and every path in turn, so that a burst of load elsewhere on
                 * the machine hits both sides alike; the best call of each is kept. */
                double t_blas = 1e30, t_ours[REMAT_SIMD_COUNT], u_blas = 1e30, u_ours[REMAT_SIMD_COUNT], u;
                run_blas((layout)l, c2, a, b, M, N, K);
                for (int p = 0; p < npaths; p++) {
                    remat_ref_simd_set(paths[p]);
                    run_ours((layout)l, c1, a, b, M, N, K);
                    t_ours[p] = u_ours[p] = 1e30;
                }
                for (int r = 0; r < reps; r++) {
                    double t = time_blas((layout)l, c2, a, b, M, N, K, &u);
                    if (t < t_blas) t_blas = t;
                    if (u < u_blas) u_blas = u;
                    for (int p = 0; p < npaths; p++) {
                        remat_ref_simd_set(paths[p]);
                        t = time_ours((layout)l, c1, a, b, M, N, K, &u);
                        if (t < t_ours[p]) t_ours[p] = t;
                        if (u < u_ours[p]) u_ours[p] = u;
                    }
                }
                const double blas = gflops(M, N, K, t_blas);
                for (int p = 0; p < npaths; p++) {
                    /* The result of this path (recomputed: c1 holds the last path's). */
                    remat_ref_simd_set(paths[p]);
                    run_ours((layout)l, c1, a, b, M, N, K);
                    const double ours = gflops(M, N, K, t_ours[p]);
                    double maxrel = 0.0;
                    for (int64_t i = 0; i < M * N; i++) {
                        double d = fabs((double)c1[i] - (double)c2[i]) / (fabs((double)c2[i]) + 1e-3);
                        if (d > maxrel) maxrel = d;
                    }
                    const char *bits = "-";
                    if (p == 0) memcpy(c0, c1, (size_t)(M * N) * sizeof(float));
                    else bits = memcmp(c0, c1, (size_t)(M * N) * sizeof(float)) ? "DIFF" : "same";
                    /* 1 thread: the same ratio from CPU time (2 threads: "-", OpenBLAS's
                     * waiting threads spin, so its CPU time is no measure of its work). */
                    char cpu_ratio[16] = "-";
                    if (threads == 1) snprintf(cpu_ratio, sizeof cpu_ratio, "%.2f", u_blas / u_ours[p]);
                    printf("%-5s %-4d %6lld %6lld %6lld %-7s %10.1f %10.1f %7.2f %9s %9.2e %5s %s\n", layout_names[l],
                           threads, (long long)M, (long long)N, (long long)K, remat_ref_simd_name(paths[p]), ours,
                           blas, ours / blas, cpu_ratio, maxrel, bits, shapes[s].set);
                    fflush(stdout);
                }
            }
        }
        remat_xfree(a);
        remat_xfree(b);
        remat_xfree(c1);
        remat_xfree(c2);
        remat_xfree(c0);
    }
    return 0;
}
