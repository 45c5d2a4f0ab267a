/* gemm_bench.c - the reference backend's deterministic GEMMs against OpenBLAS
 * (cblas_sgemm) on the same operands, side by side, in one run.
 *
 *   bazel run //bench:gemm_bench            (or: gemm_bench [reps])
 *
 * For each shape and layout (nt: C = A B^T, nn: C = A B, tn: C = A^T B) and for 1 and 2
 * threads it prints the best of `reps` (default 5) timed calls in GFLOP/s (2*M*N*K flops
 * per call) and ours/OpenBLAS. The two results are also compared (max relative
 * difference), so a fast but wrong kernel shows up here too.
 * Assumptions: OpenBLAS is the pthread build; its thread count is set with
 * openblas_set_num_threads, ours with remat_ref_set_threads.
 */
#define _POSIX_C_SOURCE 200809L

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/ref/ref_kernels.h"
#include "core/base/rng.h"
#include "core/base/status.h"

void openblas_set_num_threads(int num_threads);

typedef enum { LAYOUT_NT, LAYOUT_NN, LAYOUT_TN } layout;
static const char *const layout_names[] = {"nt", "nn", "tn"};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void run_ours(layout l, float *c, const float *a, const float *b, int64_t M, int64_t N, int64_t K) {
    switch (l) {
    case LAYOUT_NT: remat_ref_gemm_nt(c, a, b, M, N, K, 0); break;
    case LAYOUT_NN: remat_ref_gemm_nn(c, a, b, M, N, K, 0); break;
    case LAYOUT_TN: remat_ref_gemm_tn(c, a, b, M, N, K, 0); break;
    }
}

static void run_blas(layout l, float *c, const float *a, const float *b, int64_t M, int64_t N, int64_t K) {
    switch (l) {
    case LAYOUT_NT:
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)N, (int)K, 1.0f, a, (int)K, b, (int)K,
                    0.0f, c, (int)N);
        break;
    case LAYOUT_NN:
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, a, (int)K, b, (int)N,
                    0.0f, c, (int)N);
        break;
    case LAYOUT_TN:
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, a, (int)M, b, (int)N,
                    0.0f, c, (int)N);
        break;
    }
}

typedef void (*gemm_fn)(layout, float *, const float *, const float *, int64_t, int64_t, int64_t);

static double best_gflops(gemm_fn f, layout l, float *c, const float *a, const float *b, int64_t M, int64_t N,
                          int64_t K, int reps) {
    f(l, c, a, b, M, N, K); /* warm-up: page faults, thread start */
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        f(l, c, a, b, M, N, K);
        double dt = now_s() - t0;
        if (dt < best) best = dt;
    }
    return 2.0 * (double)M * (double)N * (double)K / best * 1e-9;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    if (reps < 1) reps = 1;
    static const int64_t shapes[][3] = {
        {8192, 512, 512},  /* linear layer of the 3-block model: rows x out x in */
        {8192, 10, 512},   /* the classifier layer */
        {512, 512, 8192},  /* weight gradient over all rows at once */
        {512, 512, 512},   /* weight gradient per time step (N = 512) */
        {1000, 1000, 1000},
        {127, 333, 259},   /* odd sizes: edge tiles everywhere */
    };
    printf("%-5s %-4s %6s %6s %6s %3s %10s %10s %7s %9s\n", "op", "thr", "M", "N", "K", "", "ours", "openblas",
           "ratio", "max_rel");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        remat_error err = {0};
        float *a = remat_xmalloc((size_t)(M * K) * sizeof(float), &err);
        float *b = remat_xmalloc((size_t)(K * N) * sizeof(float), &err);
        float *c1 = remat_xmalloc((size_t)(M * N) * sizeof(float), &err);
        float *c2 = remat_xmalloc((size_t)(M * N) * sizeof(float), &err);
        if (!a || !b || !c1 || !c2) {
            fprintf(stderr, "gemm_bench: %s\n", err.msg);
            return 1;
        }
        for (int64_t i = 0; i < M * K; i++) a[i] = remat_rng_uniform(1, 100, 1, (uint64_t)i) - 0.5f;
        for (int64_t i = 0; i < K * N; i++) b[i] = remat_rng_uniform(1, 100, 2, (uint64_t)i) - 0.5f;
        for (int l = LAYOUT_NT; l <= LAYOUT_TN; l++) {
            for (int threads = 1; threads <= 2; threads++) {
                remat_ref_set_threads(threads);
                openblas_set_num_threads(threads);
                double ours = best_gflops(run_ours, (layout)l, c1, a, b, M, N, K, reps);
                double blas = best_gflops(run_blas, (layout)l, c2, a, b, M, N, K, reps);
                double maxrel = 0.0;
                for (int64_t i = 0; i < M * N; i++) {
                    double d = fabs((double)c1[i] - (double)c2[i]) / (fabs((double)c2[i]) + 1e-3);
                    if (d > maxrel) maxrel = d;
                }
                printf("%-5s %-4d %6lld %6lld %6lld %3s %10.1f %10.1f %7.2f %9.2e\n", layout_names[l], threads,
                       (long long)M, (long long)N, (long long)K, "", ours, blas, ours / blas, maxrel);
                fflush(stdout);
            }
        }
        remat_xfree(a);
        remat_xfree(b);
        remat_xfree(c1);
        remat_xfree(c2);
    }
    return 0;
}
