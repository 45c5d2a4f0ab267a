/* conv_bench.c - the reference conv2d (core/ref/conv.c: implicit GEMMs on the
 * deterministic driver) against im2col + OpenBLAS's cblas_sgemm, side by side, in one run.
 *
 *   bazel run //bench:conv_bench -- [reps] [samples] [T] [density] [densities [only]]
 *                                   (bench/exp8_conv_speed.py sets the best
 *                                   OPENBLAS_CORETYPE and OPENBLAS_THREAD_TIMEOUT=4
 *                                   first: see gemm_bench.c on why)
 *
 * densities (e.g. 0.15,0.47p): after the table, the forward pass on spike-like inputs
 * of each density (the fraction of nonzero inputs; plain: 0/1 spikes, as after a
 * spiking neuron; with a p: multiples of 1/9, as after an average pool of spikes),
 * three ways side by side: the dense implicit GEMM, the zero-skipping GEMM
 * (core/ref/sparse_gemm.h, forced both ways with remat_sparse_mode_set) and OpenBLAS
 * (dense). Rates are the dense flops over the time (effective GFLOP/s); the sparse
 * output is checked bit for bit against the dense one (exit 1 on a difference); with
 * `only`, these tables alone. Then the weight gradient alone (no input gradient) on the
 * same inputs, two ways: the dense implicit GEMM and the zero-skipping one
 * (core/ref/conv_sparse_dw.h), bits compared the same way. REMAT_CLOCK=thread-cpu
 * times the one-thread rows of both tables by the calling thread's CPU time (a shared
 * machine's other jobs excluded). With `threads` in place of `only`: the thread table
 * alone (thread_table: each pass's 1 -> 2 thread gain by thread CPU time, which the
 * load of a shared machine does not distort).
 *
 * Shapes: the convolutions of the Spiking VGG (CIFAR10-DVS, 48 x 48) and of
 * SEW-ResNet (ImageNet, 224 x 224). For each, 1 and 2 threads, forward and backward
 * (input gradient + weight gradient), best of `reps` timed calls over `samples` samples
 * (default 4): GFLOP/s with 2*c_out*K*P flops per sample forward and twice that
 * backward (K = c_in*kh*kw, P = h_out*w_out), and ours / OpenBLAS. With T > 1 (default 1)
 * the calls are an executor's over T time steps of `samples` samples each (forward:
 * T*samples rows in one call; backward: t_steps = T, N = samples, one weight-gradient
 * GEMM per step), as a plain training step makes them. The OpenBLAS side
 * writes the column matrix (remat_ref_im2col) and scatters dcol back
 * (remat_ref_col2im_add) per sample; ours packs the GEMM's panels straight from the
 * input, all samples in one GEMM forward. The OpenBLAS side sums each gradient element in whatever order its kernel picks
 * (not deterministic across row counts), ours in the contract's fixed order. The
 * results are also compared (max relative difference), so a wrong kernel shows here. The
 * last column, at one thread, is the ratio by the best thread CPU time of each side.
 * The first line names OpenBLAS's kernel (openblas_get_corename), the second our SIMD path
 * (REMAT_SIMD forces one: bench/exp8_conv_speed.py --isa avx2).
 * With a density d in (0, 1) (default 1: dense), each input value is +0 with probability
 * 1 - d, and a line names d.
 */
#define _POSIX_C_SOURCE 200809L

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base/clock.h"
#include "core/base/rng.h"
#include "core/base/status.h"
#include "core/ref/parallel.h"
#include "core/ref/ref_kernels.h"
#include "core/ref/simd.h"
#include "core/ref/sparse_gemm.h"

void openblas_set_num_threads(int num_threads);
char *openblas_get_corename(void);

typedef struct shape {
    const char *name;
    int64_t c_in, hw, c_out, k, s, p;
} shape;

static const shape shapes[] = {
    {"vgg b1 2->64 48x48", 2, 48, 64, 3, 1, 1},     {"vgg b2 64->128 48x48", 64, 48, 128, 3, 1, 1},
    {"vgg b3 128->256 24x24", 128, 24, 256, 3, 1, 1}, {"vgg b5 256->512 12x12", 256, 12, 512, 3, 1, 1},
    {"vgg b7 512->512 6x6", 512, 6, 512, 3, 1, 1},    {"sew stem 3->64 7x7/2 224", 3, 224, 64, 7, 2, 3},
    {"sew l1 64->64 56x56", 64, 56, 64, 3, 1, 1},     {"sew l3 256->256 14x14", 256, 14, 256, 3, 1, 1},
    {"sew l4 512->512 7x7", 512, 7, 512, 3, 1, 1},
};


static remat_conv_geom geom(const shape *s) {
    remat_conv_geom g;
    memset(&g, 0, sizeof g);
    g.c_in = s->c_in, g.h_in = g.w_in = s->hw, g.c_out = s->c_out;
    g.kh = g.kw = s->k, g.sh = g.sw = s->s, g.ph = g.pw = s->p;
    g.h_out = g.w_out = (s->hw + 2 * s->p - s->k) / s->s + 1;
    return g;
}

/* The OpenBLAS side: the reference's algorithm with cblas_sgemm in place of ours. */
static void blas_forward(float *out, const float *x, const float *w, float *col, int64_t rows,
                         const remat_conv_geom *g) {
    const int64_t K = g->c_in * g->kh * g->kw, P = g->h_out * g->w_out;
    for (int64_t r = 0; r < rows; r++) {
        remat_ref_im2col(col, x + r * g->c_in * g->h_in * g->w_in, g);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)g->c_out, (int)P, (int)K, 1.0f, w, (int)K, col,
                    (int)P, 0.0f, out + r * g->c_out * P, (int)P);
    }
}

static void blas_backward(float *dx, float *dw, const float *dy, const float *x, const float *w, float *col,
                          float *dcol, int64_t rows, const remat_conv_geom *g) {
    const int64_t K = g->c_in * g->kh * g->kw, P = g->h_out * g->w_out, in_e = g->c_in * g->h_in * g->w_in;
    for (int64_t r = 0; r < rows; r++) {
        const float *d = dy + r * g->c_out * P;
        remat_ref_im2col(col, x + r * in_e, g);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)g->c_out, (int)K, (int)P, 1.0f, d, (int)P, col,
                    (int)P, 1.0f, dw, (int)K);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, (int)P, (int)g->c_out, 1.0f, w, (int)K, d,
                    (int)P, 0.0f, dcol, (int)P);
        remat_ref_col2im_add(dx + r * in_e, dcol, g);
    }
}

static float *fill(int64_t n, uint64_t key) {
    float *v = malloc((size_t)n * sizeof(float));
    if (!v) {
        fprintf(stderr, "conv_bench: out of memory (%lld floats)\n", (long long)n);
        exit(1);
    }
    for (int64_t i = 0; i < n; i++) v[i] = remat_rng_uniform(7, 1, key, (uint64_t)i) - 0.5f;
    return v;
}

/* v[i] = +0 with probability 1 - density (its own random stream). */
static void sparsify(float *v, int64_t n, double density, uint64_t key) {
    if (density >= 1.0) return;
    for (int64_t i = 0; i < n; i++)
        if (remat_rng_uniform(7, 2, key, (uint64_t)i) >= density) v[i] = 0.0f;
}

static double max_rel(const float *a, const float *b, int64_t n) {
    double m = 0, scale = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(b[i]));
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]) / (scale > 0 ? scale : 1));
    return m;
}

/* x: each element 1 (or, pooled, k/9 for k = 1 .. 9) with probability density, else 0. */
static void spikes(float *x, int64_t n, double density, int pooled, uint64_t key) {
    for (int64_t i = 0; i < n; i++) {
        const double u = remat_rng_uniform(7, 2, key, (uint64_t)i);
        const int k = 1 + (int)(9 * remat_rng_uniform(7, 3, key, (uint64_t)i));
        x[i] = u < density ? (pooled ? (float)(k > 9 ? 9 : k) / 9.0f : 1.0f) : 0.0f;
    }
}

/* REMAT_CLOCK=thread-cpu: the one-thread cells of the density tables timed by each side's
 * thread CPU time (what other jobs of a shared machine take is not counted). */
static int cpu_clock_asked(void) {
    const char *clk = getenv("REMAT_CLOCK");
    return clk && !strcmp(clk, "thread-cpu");
}

/* The clock of a cell at threads threads. */
static double (*cell_clock(int cpu_clock, int threads))(void) {
    return threads == 1 && cpu_clock ? remat_thread_cpu_s : remat_now_s;
}

/* The entry of a densities list ("0.15,0.47p": p marks pooled values) at *d: its density
 * and whether it is pooled; *d moves past it and its comma. 0 at the list's end or at an
 * entry that is no number. */
static int next_density(const char **d, double *dens, int *pooled) {
    char *end;
    *dens = strtod(*d, &end);
    if (end == *d) return 0;
    *pooled = *end == 'p';
    end += *pooled;
    *d = *end == ',' ? end + 1 : end;
    return 1;
}

/* The forward table on spike-like inputs: dense GEMM, zero-skipping GEMM, OpenBLAS. */
static int sparse_table(const char *spec, int reps, int64_t rows) {
    const int cpu_clock = cpu_clock_asked();
    printf("\nforward on spike-like inputs (%lld samples; effective GFLOP/s = dense flops / time; clock: %s)\n",
           (long long)rows, cpu_clock ? "thread CPU time at 1 thread, wall at 2" : "wall");
    printf("%-26s %3s %6s %9s %9s %9s %7s %7s %5s\n", "shape", "thr", "dens", "dense", "sparse", "openblas",
           "sp/dn", "sp/ob", "bits");
    int bad = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const remat_conv_geom g = geom(&shapes[si]);
        const int64_t K = g.c_in * g.kh * g.kw, P = g.h_out * g.w_out, in_e = g.c_in * g.h_in * g.w_in;
        const int64_t out_e = g.c_out * P, wn = g.c_out * K;
        float *x = fill(rows * in_e, 1), *w = fill(wn, 2), *o1 = fill(rows * out_e, 4), *o2 = fill(rows * out_e, 5);
        float *o3 = fill(rows * out_e, 6), *col = fill(K * P, 12), *b = fill(g.c_out, 14);
        const double f_flops = 2.0 * (double)(g.c_out * K * P) * (double)rows;
        double dens;
        int pooled;
        for (const char *d = spec; next_density(&d, &dens, &pooled);) {
            spikes(x, rows * in_e, dens, pooled, 20);
            for (int threads = 1; threads <= 2; threads++) {
                remat_ref_set_threads(threads);
                openblas_set_num_threads(threads);
                double (*now)(void) = cell_clock(cpu_clock, threads);
                double best[3] = {1e30, 1e30, 1e30};
                for (int r = 0; r < reps; r++) {
                    remat_sparse_mode prev = remat_sparse_mode_set(REMAT_SPARSE_DENSE);
                    double t0 = now();
                    remat_ref_conv2d_forward(o1, x, w, b, NULL, rows, &g);
                    double t1 = now();
                    remat_sparse_mode_set(REMAT_SPARSE_FORCE);
                    remat_ref_conv2d_forward(o2, x, w, b, NULL, rows, &g);
                    double t2 = now();
                    remat_sparse_mode_set(prev);
                    blas_forward(o3, x, w, col, rows, &g);
                    double t3 = now();
                    best[0] = fmin(best[0], t1 - t0), best[1] = fmin(best[1], t2 - t1), best[2] = fmin(best[2], t3 - t2);
                }
                const int same = memcmp(o1, o2, (size_t)(rows * out_e) * sizeof(float)) == 0;
                bad += !same;
                printf("%-26s %3d %5.2f%c %9.1f %9.1f %9.1f %7.2f %7.2f %5s\n", shapes[si].name, threads, dens,
                       pooled ? 'p' : ' ', f_flops / best[0] / 1e9, f_flops / best[1] / 1e9, f_flops / best[2] / 1e9,
                       best[0] / best[1], best[2] / best[1], same ? "same" : "DIFF");
                fflush(stdout);
            }
        }
        free(x), free(w), free(o1), free(o2), free(o3), free(col), free(b);
    }
    return bad ? 1 : 0;
}

/* The weight gradient on spike-like inputs (t_steps steps of n_per_t samples, no input
 * gradient): the dense implicit GEMM and the zero-skipping one (core/ref/conv_sparse_dw.h,
 * forced both ways with remat_sparse_mode_set), bits compared. */
static int sparse_dw_table(const char *spec, int reps, int64_t t_steps, int64_t n_per_t) {
    const int cpu_clock = cpu_clock_asked();
    const int64_t rows = t_steps * n_per_t;
    printf("\nweight gradient on spike-like inputs (T = %lld, %lld samples; effective GFLOP/s = dense flops / time; "
           "clock: %s)\n",
           (long long)t_steps, (long long)n_per_t, cpu_clock ? "thread CPU time at 1 thread, wall at 2" : "wall");
    printf("%-26s %3s %6s %9s %9s %7s %5s\n", "shape", "thr", "dens", "dense", "sparse", "sp/dn", "bits");
    int bad = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const remat_conv_geom g = geom(&shapes[si]);
        const int64_t K = g.c_in * g.kh * g.kw, P = g.h_out * g.w_out, in_e = g.c_in * g.h_in * g.w_in;
        const int64_t out_e = g.c_out * P, wn = g.c_out * K;
        float *x = fill(rows * in_e, 1), *dy = fill(rows * out_e, 3), *dw1 = fill(wn, 8), *dw2 = fill(wn, 9);
        float *ws = fill(remat_ref_conv2d_backward_ws_elems(&g), 11);
        const double f_flops = 2.0 * (double)(g.c_out * K * P) * (double)rows;
        double dens;
        int pooled;
        for (const char *d = spec; next_density(&d, &dens, &pooled);) {
            spikes(x, rows * in_e, dens, pooled, 20);
            for (int threads = 1; threads <= 2; threads++) {
                remat_ref_set_threads(threads);
                double (*now)(void) = cell_clock(cpu_clock, threads);
                double best[2] = {1e30, 1e30};
                for (int r = 0; r < reps; r++) {
                    memset(dw1, 0, (size_t)wn * 4), memset(dw2, 0, (size_t)wn * 4);
                    remat_sparse_mode prev = remat_sparse_mode_set(REMAT_SPARSE_DENSE);
                    double t0 = now();
                    remat_ref_conv2d_backward(NULL, dw1, NULL, dy, x, NULL, ws, t_steps, n_per_t, &g);
                    double t1 = now();
                    remat_sparse_mode_set(REMAT_SPARSE_FORCE);
                    remat_ref_conv2d_backward(NULL, dw2, NULL, dy, x, NULL, ws, t_steps, n_per_t, &g);
                    double t2 = now();
                    remat_sparse_mode_set(prev);
                    best[0] = fmin(best[0], t1 - t0), best[1] = fmin(best[1], t2 - t1);
                }
                const int same = memcmp(dw1, dw2, (size_t)wn * sizeof(float)) == 0;
                bad += !same;
                printf("%-26s %3d %5.2f%c %9.1f %9.1f %7.2f %5s\n", shapes[si].name, threads, dens, pooled ? 'p' : ' ',
                       f_flops / best[0] / 1e9, f_flops / best[1] / 1e9, best[0] / best[1], same ? "same" : "DIFF");
                fflush(stdout);
            }
        }
        free(x), free(dy), free(dw1), free(dw2), free(ws);
    }
    return bad ? 1 : 0;
}

/* The thread table: per shape, density and phase (forward; weight gradient alone; input
 * gradient alone), the call at 1 thread and at 2, timed by thread CPU time through the
 * parallel loop's accounting (core/ref/parallel.h): at 1 thread the caller's CPU time
 * (cpu1); at 2 threads the serial part (the caller's CPU time outside the parallel
 * parts), the parts' CPU time summed (busy) and the critical path on 2 free cores,
 * serial + each call's longest part (crit). gain = cpu1 / crit, the 2nd thread's gain
 * that the machine's load does not distort (wall: the same by the wall clock, noisy on
 * a shared machine); work = (serial + busy) / cpu1, the extra work threads cost
 * (duplicated packing, thread starts); idle = crit - (serial + busy) / 2, the time one
 * of the two cores waits. Each number is the best of reps calls; the 2-thread results
 * are compared with the 1-thread ones bit for bit (exit 1 on a difference). */
typedef struct phase_cost {
    double cpu, wall, serial, busy, crit;
} phase_cost;

static void thread_phase(int phase, float *o, float *dx, float *dw, const float *x, const float *w, const float *dy,
                         float *ws, int64_t t_steps, int64_t n_per_t, const remat_conv_geom *g) {
    const int64_t rows = t_steps * n_per_t;
    if (phase == 0) remat_ref_conv2d_forward(o, x, w, NULL, NULL, rows, g);
    else if (phase == 1) remat_ref_conv2d_backward(NULL, dw, NULL, dy, x, NULL, ws, t_steps, n_per_t, g);
    else remat_ref_conv2d_backward(dx, NULL, NULL, dy, x, w, ws, t_steps, n_per_t, g);
}

static int thread_table(const char *spec, int reps, int64_t t_steps, int64_t n_per_t, const char *only_shape,
                        const char *only_pass) {
    static const char *phase_name[3] = {"fwd", "dW", "dinp"};
    const int64_t rows = t_steps * n_per_t;
    printf("\nthreads: 1 -> 2 threads by thread CPU time (T = %lld, %lld samples; ms, best of %d; "
           "gain = cpu1 / crit, wall = the wall-clock gain)\n",
           (long long)t_steps, (long long)n_per_t, reps);
    printf("%-26s %6s %4s %8s %8s %8s %8s %8s %6s %6s %5s %5s\n", "shape", "dens", "pass", "cpu1", "serial", "busy",
           "crit", "idle", "gain", "wall", "work", "bits");
    int bad = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        if (only_shape && !strstr(shapes[si].name, only_shape)) continue;
        const remat_conv_geom g = geom(&shapes[si]);
        const int64_t K = g.c_in * g.kh * g.kw, P = g.h_out * g.w_out, in_e = g.c_in * g.h_in * g.w_in;
        const int64_t out_e = g.c_out * P, wn = g.c_out * K;
        float *w = fill(wn, 2), *dy = fill(rows * out_e, 3);
        float *o[2] = {fill(rows * out_e, 4), fill(rows * out_e, 4)}, *dx[2] = {fill(rows * in_e, 6), fill(rows * in_e, 6)};
        float *dw[2] = {fill(wn, 8), fill(wn, 8)}, *ws = fill(remat_ref_conv2d_backward_ws_elems(&g), 11);
        double dens;
        int pooled;
        for (const char *d = spec; next_density(&d, &dens, &pooled);) {
            float *xs = fill(rows * in_e, 1);
            if (dens < 1.0) spikes(xs, rows * in_e, dens, pooled, 20);
            for (int phase = 0; phase < 3; phase++) {
                if (only_pass && strcmp(only_pass, phase_name[phase])) continue;
                phase_cost best[2];
                for (int ti = 0; ti < 2; ti++) {
                    best[ti] = (phase_cost){1e30, 1e30, 1e30, 1e30, 1e30};
                    remat_ref_set_threads(ti + 1);
                    for (int r = 0; r < reps; r++) {
                        memset(dx[ti], 0, (size_t)(rows * in_e) * 4), memset(dw[ti], 0, (size_t)wn * 4);
                        remat_ref_parallel_stats_on(1);
                        const double w0 = remat_now_s(), c0 = remat_thread_cpu_s();
                        thread_phase(phase, o[ti], dx[ti], dw[ti], xs, w, dy, ws, t_steps, n_per_t, &g);
                        const double c = remat_thread_cpu_s() - c0, wall = remat_now_s() - w0;
                        const remat_par_stats st = remat_ref_parallel_stats();
                        remat_ref_parallel_stats_on(0);
                        const double serial = c - st.first_s;
                        const phase_cost pc = {c, wall, serial, st.busy_s, serial + st.max_s};
                        best[ti].cpu = fmin(best[ti].cpu, pc.cpu), best[ti].wall = fmin(best[ti].wall, pc.wall);
                        best[ti].serial = fmin(best[ti].serial, pc.serial), best[ti].busy = fmin(best[ti].busy, pc.busy);
                        best[ti].crit = fmin(best[ti].crit, pc.crit);
                    }
                }
                const int same = phase == 0   ? !memcmp(o[0], o[1], (size_t)(rows * out_e) * 4)
                                 : phase == 1 ? !memcmp(dw[0], dw[1], (size_t)wn * 4)
                                              : !memcmp(dx[0], dx[1], (size_t)(rows * in_e) * 4);
                bad += !same;
                const phase_cost *b = &best[1];
                printf("%-26s %5.2f%c %4s %8.2f %8.2f %8.2f %8.2f %8.2f %6.2f %6.2f %5.2f %5s\n", shapes[si].name, dens,
                       pooled ? 'p' : ' ', phase_name[phase], 1e3 * best[0].cpu, 1e3 * b->serial, 1e3 * b->busy,
                       1e3 * b->crit, 1e3 * (b->crit - (b->serial + b->busy) / 2), best[0].cpu / b->crit,
                       best[0].wall / b->wall, (b->serial + b->busy) / best[0].cpu, same ? "same" : "DIFF");
                fflush(stdout);
            }
            free(xs);
        }
        free(w), free(dy), free(o[0]), free(o[1]), free(dx[0]), free(dx[1]), free(dw[0]), free(dw[1]), free(ws);
    }
    remat_ref_set_threads(1);
    return bad ? 1 : 0;
}

static const char usage[] =
    "usage: conv_bench [reps >= 1] [samples >= 1] [T >= 1] [density in (0, 1]] [densities, e.g. 0.15,0.47p [only | threads [shape [pass]]]]\n"
    "  the conv shapes of vgg-dvs and sew-resnet18, ours against im2col + OpenBLAS, forward and backward, 1 and 2 threads;\n"
    "  densities: then the forward and the weight gradient on spike-like inputs of each density (only: these tables alone);\n"
    "  threads: instead, per shape, density (1: dense random) and pass (fwd, dW, dinp) the 1 -> 2 thread gain by thread\n"
    "    CPU time (serial part, busy parts, critical path, idle core time), bits of 2 threads against 1 compared;\n"
    "    shape: only the shapes whose name contains it (e.g. \"sew l4\"), pass: only fwd, dW or dinp;\n"
    "    e.g. conv_bench 5 2 10 1 1,0.15 threads (vgg-dvs: T = 10, N = 2), conv_bench 5 1 4 1 1,0.15 threads (sew)\n";

int main(int argc, char **argv) {
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(usage, stdout);
        return 0;
    }
    int reps = argc > 1 ? atoi(argv[1]) : 3;
    int64_t n_per_t = argc > 2 ? atoll(argv[2]) : 4, t_steps = argc > 3 ? atoll(argv[3]) : 1;
    const double density = argc > 4 ? atof(argv[4]) : 1.0;
    if (reps < 1 || n_per_t < 1 || t_steps < 1 || !(density > 0.0 && density <= 1.0)) {
        fputs(usage, stderr);
        return 2;
    }
    const int64_t rows = n_per_t * t_steps;
    if (argc > 5 && (strtod(argv[5], NULL) < 0 || strtod(argv[5], NULL) > 1)) {
        fprintf(stderr, "conv_bench: densities: '%s': expected fractions in [0, 1], e.g. 0.15,0.47p\n", argv[5]);
        return 2;
    }
    if (argc > 6 && !strcmp(argv[6], "threads")) return thread_table(argv[5], reps, t_steps, n_per_t, argc > 7 ? argv[7] : NULL, argc > 8 ? argv[8] : NULL);
    if (argc > 6 && !strcmp(argv[6], "only")) {
        const int bad = sparse_table(argv[5], reps, rows);
        return sparse_dw_table(argv[5], reps, t_steps, n_per_t) | bad;
    }
    printf("openblas kernel: %s (OPENBLAS_CORETYPE=%s, OPENBLAS_THREAD_TIMEOUT=%s); %lld samples per call (T = %lld), best of %d\n",
           openblas_get_corename(), getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "(unset)",
           getenv("OPENBLAS_THREAD_TIMEOUT") ? getenv("OPENBLAS_THREAD_TIMEOUT") : "(unset)", (long long)n_per_t,
           (long long)t_steps, reps);
    printf("ours simd: %s (REMAT_SIMD=%s)\n", remat_ref_simd_name(remat_ref_simd_get()),
           getenv("REMAT_SIMD") ? getenv("REMAT_SIMD") : "(unset)");
    if (density < 1.0) printf("input density %.3f\n", density);
    printf("%-26s %3s %4s %9s %9s %6s %9s %6s\n", "shape", "thr", "pass", "ours", "openblas", "ratio", "max rel", "cpu");
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const remat_conv_geom g = geom(&shapes[si]);
        const int64_t K = g.c_in * g.kh * g.kw, P = g.h_out * g.w_out, in_e = g.c_in * g.h_in * g.w_in;
        const int64_t out_e = g.c_out * P, wn = g.c_out * K;
        float *x = fill(rows * in_e, 1), *w = fill(wn, 2), *dy = fill(rows * out_e, 3);
        sparsify(x, rows * in_e, density, 1);
        float *o1 = fill(rows * out_e, 4), *o2 = fill(rows * out_e, 5), *dx1 = fill(rows * in_e, 6);
        float *dx2 = fill(rows * in_e, 7), *dw1 = fill(wn, 8), *dw2 = fill(wn, 9);
        float *fws = fill(remat_ref_conv2d_forward_ws_elems(&g), 10), *bws = fill(remat_ref_conv2d_backward_ws_elems(&g), 11);
        float *col = fill(K * P, 12), *dcol = fill(K * P, 13);
        const double f_flops = 2.0 * (double)(g.c_out * K * P) * (double)rows;
        for (int threads = 1; threads <= 2; threads++) {
            remat_ref_set_threads(threads);
            openblas_set_num_threads(threads);
            double best[4] = {1e30, 1e30, 1e30, 1e30}, cpu[4] = {1e30, 1e30, 1e30, 1e30};
            for (int r = 0; r < reps; r++) {
                double c0 = remat_thread_cpu_s(), t0 = remat_now_s();
                remat_ref_conv2d_forward(o1, x, w, NULL, fws, rows, &g);
                double t1 = remat_now_s(), c1 = remat_thread_cpu_s();
                blas_forward(o2, x, w, col, rows, &g);
                double t2 = remat_now_s(), c2 = remat_thread_cpu_s();
                memset(dx1, 0, (size_t)(rows * in_e) * 4), memset(dw1, 0, (size_t)wn * 4);
                memset(dx2, 0, (size_t)(rows * in_e) * 4), memset(dw2, 0, (size_t)wn * 4);
                double c3 = remat_thread_cpu_s(), t3 = remat_now_s();
                remat_ref_conv2d_backward(dx1, dw1, NULL, dy, x, w, bws, t_steps, n_per_t, &g);
                double t4 = remat_now_s(), c4 = remat_thread_cpu_s();
                blas_backward(dx2, dw2, dy, x, w, col, dcol, rows, &g);
                double t5 = remat_now_s(), c5 = remat_thread_cpu_s();
                const double c[4] = {c1 - c0, c2 - c1, c4 - c3, c5 - c4};
                for (int q = 0; q < 4; q++) cpu[q] = fmin(cpu[q], c[q]);
                double t[4] = {t1 - t0, t2 - t1, t4 - t3, t5 - t4};
                for (int q = 0; q < 4; q++) best[q] = fmin(best[q], t[q]);
            }
            /* one thread: the same ratio by the calling thread's best CPU time (what other jobs
             * of a shared machine take from a call does not enter it); "-" at two */
            char cr[2][16] = {"-", "-"};
            if (threads == 1)
                snprintf(cr[0], sizeof cr[0], "%.2f", cpu[1] / cpu[0]), snprintf(cr[1], sizeof cr[1], "%.2f", cpu[3] / cpu[2]);
            printf("%-26s %3d %4s %9.1f %9.1f %6.2f %9.1e %6s\n", shapes[si].name, threads, "fwd", f_flops / best[0] / 1e9,
                   f_flops / best[1] / 1e9, best[1] / best[0], max_rel(o1, o2, rows * out_e), cr[0]);
            printf("%-26s %3d %4s %9.1f %9.1f %6.2f %9.1e %6s\n", shapes[si].name, threads, "bwd",
                   2 * f_flops / best[2] / 1e9, 2 * f_flops / best[3] / 1e9, best[3] / best[2],
                   fmax(max_rel(dx1, dx2, rows * in_e), max_rel(dw1, dw2, wn)), cr[1]);
            fflush(stdout);
        }
        free(x), free(w), free(dy), free(o1), free(o2), free(dx1), free(dx2), free(dw1), free(dw2);
        free(fws), free(bws), free(col), free(dcol);
    }
    if (argc <= 5) return 0;
    const int bad = sparse_table(argv[5], reps, rows);
    return sparse_dw_table(argv[5], reps, t_steps, n_per_t) | bad;
}
