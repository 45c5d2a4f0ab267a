/* elementwise_bench.c - the element-wise reference kernels (neuron forward / backward,
 * dropout, add) on every SIMD path this CPU has, side by side, in one run.
 *
 *   bazel run //bench:elementwise_bench -- [reps] [--nf N] [--steps T]
 *
 * For each kernel it prints the best of `reps` (default 7) calls per path, timed by the
 * calling thread's CPU time (these kernels are single-threaded, and CPU time is what a
 * shared, loaded machine disturbs least), as ms and GB/s of the bytes the kernel's
 * arrays hold (each read array once, each written array once, read-modify-write twice),
 * then each path's speed-up over the scalar path, and "same" / "DIFF" for whether the
 * path's outputs have the scalar path's bits (NaN-free inputs here).
 * Sizes: nf = N*F elements per time step (default 262144: a 64-channel 64x64 activation
 * at batch 1, or 64 x 4096 features; 1 MiB per step, so the T = 4 steps stream from
 * L3/DRAM as in a real step) and T steps (default 4). The paths run in turn on the same
 * buffers, a path's calls alternate with the others'.
 * Assumptions: x86-64 (other machines have the scalar path only); the neuron options
 * are the shipped models' (LIF tau 2, decay_input, hard reset to 0, sigmoid alpha 4;
 * IF soft reset, atan alpha 2).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base/rng.h"
#include "core/ref/ref_kernels.h"
#include "core/ref/simd.h"

enum { N_KERNELS = 8 };
static const char *const kernel_names[N_KERNELS] = {"lif_fwd",     "lif_bwd",     "if_fwd",  "if_bwd",
                                                    "dropout_fwd", "dropout_bwd", "add_fwd", "add_bwd"};
/* Arrays of T*nf floats each kernel streams (the state v / gv and the mask count
 * 1/T of one). */
static const double kernel_arrays[N_KERNELS] = {3.0 + 2.0 / 4, 4.0 + 2.0 / 4, 3.0 + 2.0 / 4, 4.0 + 2.0 / 4,
                                                2.0,           3.0,           3.0,           3.0};

typedef struct {
    float *x, *s, *h, *v, *dx, *gv, *ds, *y;
    int64_t t, nf;
} bufs;

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fill(float *p, int64_t n, uint64_t key, float lo, float hi) {
    for (int64_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * remat_rng_uniform(5, 6, key, (uint64_t)i);
}

/* Resets the inputs a kernel overwrites or accumulates into (not timed). */
static void reset(bufs *b) {
    const int64_t n = b->t * b->nf;
    memset(b->v, 0, (size_t)b->nf * sizeof(float));
    memset(b->gv, 0, (size_t)b->nf * sizeof(float));
    memset(b->dx, 0, (size_t)n * sizeof(float));
}

static void run_kernel(int k, bufs *b) {
    remat_neuron_opts lif = {1.0f, 0.0f, 0, 0, REMAT_SURROGATE_SIGMOID, 4.0f, 2.0f, 1};
    remat_neuron_opts ifn = {1.0f, 0.0f, 1, 0, REMAT_SURROGATE_ATAN, 2.0f, 2.0f, 0};
    const int64_t t = b->t, nf = b->nf;
    switch (k) {
    case 0: remat_ref_neuron_forward(b->s, b->h, b->v, b->x, REMAT_LAYER_LIF, &lif, t, nf); break;
    case 1: remat_ref_neuron_backward(b->dx, b->gv, b->ds, b->h, REMAT_LAYER_LIF, &lif, t, nf); break;
    case 2: remat_ref_neuron_forward(b->s, b->h, b->v, b->x, REMAT_LAYER_IF, &ifn, t, nf); break;
    case 3: remat_ref_neuron_backward(b->dx, b->gv, b->ds, b->h, REMAT_LAYER_IF, &ifn, t, nf); break;
    case 4: remat_ref_dropout_forward(b->y, b->x, 7, 1, 2, 0.2f, t, nf); break;
    case 5: remat_ref_dropout_backward(b->dx, b->ds, 7, 1, 2, 0.2f, t, nf); break;
    case 6: remat_ref_add_forward(b->y, b->x, b->ds, t * nf); break;
    default: remat_ref_add_backward(b->dx, b->dx, b->ds, t * nf); break;
    }
}

/* The output a kernel wrote (for the bits comparison). */
static const float *output_of(int k, const bufs *b) {
    switch (k) {
    case 0: case 2: return b->h;
    case 4: case 6: return b->y;
    default: return b->dx;
    }
}

int main(int argc, char **argv) {
    int reps = 7;
    int64_t nf = 262144, t = 4;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nf") && i + 1 < argc) nf = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) t = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--help")) {
            printf("usage: elementwise_bench [reps] [--nf N] [--steps T]\n");
            return 0;
        } else if (atoi(argv[i]) > 0) reps = atoi(argv[i]);
        else {
            fprintf(stderr, "elementwise_bench: %s: expected reps, --nf N, --steps T or --help\n", argv[i]);
            return 2;
        }
    }
    if (nf < 1 || t < 1) {
        fprintf(stderr, "elementwise_bench: --nf/--steps: expected positive sizes\n");
        return 2;
    }
    remat_simd paths[REMAT_SIMD_COUNT];
    int np = 0;
    for (int p = 0; p < REMAT_SIMD_COUNT; p++)
        if (remat_ref_simd_supported((remat_simd)p)) paths[np++] = (remat_simd)p;
    const int64_t n = t * nf;
    bufs b = {0};
    b.t = t;
    b.nf = nf;
    float **arr[] = {&b.x, &b.s, &b.h, &b.dx, &b.ds, &b.y};
    for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++) *arr[i] = malloc((size_t)n * sizeof(float));
    b.v = malloc((size_t)nf * sizeof(float));
    b.gv = malloc((size_t)nf * sizeof(float));
    float *ref = malloc((size_t)n * sizeof(float));
    fill(b.x, n, 1, -0.5f, 1.5f);
    fill(b.ds, n, 2, -1.0f, 1.0f);
    fill(b.h, n, 3, -1.0f, 3.0f);
    printf("elementwise kernels, T=%lld nf=%lld (%.1f MiB per array), best of %d by thread CPU time\n",
           (long long)t, (long long)nf, (double)n * 4 / 1048576.0, reps);
    printf("paths on this CPU:");
    for (int p = 0; p < np; p++) printf(" %s", remat_ref_simd_name(paths[p]));
    printf("\n%-12s", "kernel");
    for (int p = 0; p < np; p++) printf(" %9s_ms %8s_GB/s", remat_ref_simd_name(paths[p]), remat_ref_simd_name(paths[p]));
    for (int p = 1; p < np; p++) printf(" %7s/scalar bits", remat_ref_simd_name(paths[p]));
    printf("\n");
    for (int k = 0; k < N_KERNELS; k++) {
        double best[REMAT_SIMD_COUNT];
        int same[REMAT_SIMD_COUNT];
        for (int p = 0; p < np; p++) {
            best[p] = 1e30;
            same[p] = 1;
        }
        for (int r = 0; r < reps; r++)
            for (int p = 0; p < np; p++) {
                remat_ref_simd_set(paths[p]);
                if (k == 0 || k == 2) fill(b.h, n, 3, -1.0f, 3.0f); /* the forward overwrites h */
                reset(&b);
                const double c0 = cpu_s();
                run_kernel(k, &b);
                const double dt = cpu_s() - c0;
                if (dt < best[p]) best[p] = dt;
                if (r == 0) {
                    if (p == 0) memcpy(ref, output_of(k, &b), (size_t)n * sizeof(float));
                    else same[p] = !memcmp(ref, output_of(k, &b), (size_t)n * sizeof(float));
                }
            }
        fill(b.h, n, 3, -1.0f, 3.0f);
        printf("%-12s", kernel_names[k]);
        const double bytes = kernel_arrays[k] * (double)n * 4;
        for (int p = 0; p < np; p++) printf(" %12.3f %13.2f", best[p] * 1e3, bytes / best[p] / 1e9);
        for (int p = 1; p < np; p++) printf(" %14.2f %4s", best[0] / best[p], same[p] ? "same" : "DIFF");
        printf("\n");
    }
    for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++) free(*arr[i]);
    free(b.v);
    free(b.gv);
    free(ref);
    return 0;
}
