/* cuda_bench.c - the CUDA backend's numbers: step time and peaks of the shipped models,
 * baseline against their shipped plans; the neuron kernels' bandwidth against the
 * device's peak; the GEMMs' share of a step; the tiled GEMM against cuBLAS.
 *
 *   bazel run --config=cuda //bench:cuda_bench -- [--data DIR] [--iters N] [--models a,b] [--small]
 *
 * Without a device (or in a build without CUDA) it prints "cuda_bench: skipped: <why>"
 * and exits 0, so scripts can run it anywhere.
 *
 * What is measured:
 *  - step time: remat_step_result.step_time_s (the executor's clock around a step;
 *    the CUDA backend's now() waits for the device), best of --iters steps after one
 *    warm-up step, optimiser on;
 *  - peaks: the allocator model's peak live and reserved bytes (the executor places every
 *    tensor on the device through it), and the driver's view: cudaMemGetInfo free at
 *    backend init minus the lowest free seen after a segment allocation;
 *  - GEMM share: device time of linear_forward + linear_backward over the device time of
 *    all backend calls (CUDA events around each call), in one profiled step;
 *  - neuron bandwidth: bytes the multi-step kernels must move (forward: x read, spikes
 *    and h written, v read and written; backward: h, dspikes read, dx read and written,
 *    gv read and written) over the kernel time, against 2 x memory clock x bus width.
 * Assumptions: one device (0); models and plans under --data (default "data").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/exec/backend.h"
#include "core/exec/executor.h"
#include "core/model/model.h"
#include "core/model/plan.h"
#include "core/base/status.h"
#include "cuda/cuda_backend.h"

static double mib(int64_t b) { return (double)b / (1024.0 * 1024.0); }

static int open_backend(remat_backend *be, remat_cuda_gemm mode, remat_error *err) {
    if (remat_backend_cuda_init(be, 0, err) != REMAT_OK) return 0;
    if (remat_backend_cuda_set_gemm(be, mode, err) != REMAT_OK) {
        remat_backend_free(be);
        return 0;
    }
    return 1;
}

typedef struct run_numbers {
    double best_step_s;
    int64_t peak_live, peak_reserved, driver_used;
    double gemm_s, all_s;
    double loss;
} run_numbers;

/* Warm-up step, `iters` timed steps, one profiled step; a fresh backend per run so the
 * driver's view belongs to this run alone. */
static int run_plan(const remat_model *m, const remat_plan *p, int iters, remat_cuda_gemm mode, run_numbers *out,
                    remat_error *err) {
    remat_backend be;
    if (!open_backend(&be, mode, err)) return 0;
    remat_exec_opts o = remat_exec_opts_default();
    o.seed = 1;
    remat_session *s = remat_session_init(m, p, &be, &o, err);
    if (!s) {
        remat_backend_free(&be);
        return 0;
    }
    memset(out, 0, sizeof *out);
    out->best_step_s = 1e30;
    remat_step_result r;
    int ok = remat_session_step(s, 1, &r, err) == REMAT_OK;
    for (int i = 0; ok && i < iters; i++) {
        ok = remat_session_step(s, 1, &r, err) == REMAT_OK;
        if (!ok) break;
        if (r.step_time_s < out->best_step_s) out->best_step_s = r.step_time_s;
        if (r.peak_live_bytes > out->peak_live) out->peak_live = r.peak_live_bytes;
        if (r.peak_reserved_bytes > out->peak_reserved) out->peak_reserved = r.peak_reserved_bytes;
        out->loss = r.loss;
    }
    remat_cuda_profile prof;
    if (ok) ok = remat_backend_cuda_set_profiling(&be, 1, err) == REMAT_OK;
    if (ok) ok = remat_backend_cuda_get_profile(&be, &prof, 1, err) == REMAT_OK; /* reset */
    if (ok) ok = remat_session_step(s, 1, &r, err) == REMAT_OK;
    if (ok) ok = remat_backend_cuda_get_profile(&be, &prof, 0, err) == REMAT_OK;
    if (ok) {
        for (int i = 0; i < prof.n; i++) {
            out->all_s += prof.seconds[i];
            if (!strcmp(prof.name[i], "linear_forward") || !strcmp(prof.name[i], "linear_backward"))
                out->gemm_s += prof.seconds[i];
        }
    }
    remat_cuda_info info;
    if (ok) ok = remat_backend_cuda_get_info(&be, &info, err) == REMAT_OK;
    if (ok) out->driver_used = info.free_at_init - info.free_at_peak;
    remat_session_free(s);
    remat_backend_free(&be);
    return ok;
}

static int bench_models(const char *data, const char *models, int iters) {
    char list[1024];
    snprintf(list, sizeof list, "%s", models);
    printf("\n%-10s %-7s %-6s %10s %10s %10s %10s %8s %10s\n", "model", "plan", "gemm", "step ms", "live MiB",
           "resv MiB", "drv MiB", "GEMM %", "loss");
    int failures = 0;
    for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
        char mpath[2048], ppath[2048];
        snprintf(mpath, sizeof mpath, "%s/models/%s.json", data, name);
        snprintf(ppath, sizeof ppath, "%s/plans/%s-ckpt.json", data, name);
        remat_model m;
        remat_error err = {0};
        if (remat_model_load(mpath, &m, &err) != REMAT_OK) {
            printf("%-10s error: %s\n", name, err.msg);
            failures++;
            continue;
        }
        for (int which = 0; which < 2; which++) {
            remat_plan p;
            err = (remat_error){0};
            remat_status st = which ? remat_plan_load(ppath, &m, &p, &err) : remat_plan_init_empty(&m, &p, &err);
            if (st != REMAT_OK) {
                printf("%-10s %-7s error: %s\n", name, which ? "ckpt" : "none", err.msg);
                failures++;
                continue;
            }
            for (int mode = 0; mode < 2; mode++) {
                run_numbers r;
                err = (remat_error){0};
                if (!run_plan(&m, &p, iters, (remat_cuda_gemm)mode, &r, &err)) {
                    printf("%-10s %-7s %-6s error: %s\n", name, which ? "ckpt" : "none", mode ? "tiled" : "auto",
                           err.msg);
                    failures++;
                    continue;
                }
                printf("%-10s %-7s %-6s %10.3f %10.2f %10.2f %10.2f %8.1f %10.6f\n", name, which ? "ckpt" : "none",
                       mode ? "tiled" : "auto", 1e3 * r.best_step_s, mib(r.peak_live), mib(r.peak_reserved),
                       mib(r.driver_used), r.all_s > 0 ? 100.0 * r.gemm_s / r.all_s : 0.0, r.loss);
            }
            remat_plan_free(&p);
        }
        remat_model_free(&m);
    }
    return failures;
}

/* Device seconds of `reps` calls of fn, measured with the backend's synchronising clock. */
#define TIME_REPS(be, reps, secs, call)                      \
    do {                                                     \
        (call);                                              \
        double t0_ = (be)->ops->now((be)->ctx);              \
        for (int r_ = 0; r_ < (reps); r_++) (call);          \
        (secs) = ((be)->ops->now((be)->ctx) - t0_) / (reps); \
    } while (0)

/* --small: the kernel benchmarks at 1/16 of their sizes or less (for the CPU emulator,
 * where only the code paths matter, not the numbers). */
static int g_small = 0;

static int bench_kernels(void) {
    remat_backend be;
    remat_error err = {0};
    if (!open_backend(&be, REMAT_CUDA_GEMM_AUTO, &err)) {
        printf("error: %s\n", err.msg);
        return 1;
    }
    remat_cuda_info info;
    remat_backend_cuda_get_info(&be, &info, &err);
    const remat_backend_ops *o = be.ops;
    /* Neurons: T = 64 steps of 128 x 512 elements (mlp-lif's layer), and a wider one. */
    const int64_t T = g_small ? 8 : 64;
    const int64_t nfs[] = {g_small ? 128 * 32 : 128 * 512, g_small ? 128 * 64 : 128 * 8192};
    int failures = 0;
    printf("\n%-28s %10s %10s %10s\n", "kernel", "us", "GB/s", "% peak");
    for (int k = 0; k < 2; k++) {
        const int64_t nf = nfs[k], n = T * nf;
        void *x = NULL, *s = NULL, *h = NULL, *v = NULL, *ds = NULL, *dx = NULL;
        int ok = o->segment_alloc(be.ctx, n * 4, &x, &err) == REMAT_OK &&
                 o->segment_alloc(be.ctx, n * 4, &s, &err) == REMAT_OK &&
                 o->segment_alloc(be.ctx, n * 4, &h, &err) == REMAT_OK &&
                 o->segment_alloc(be.ctx, nf * 4, &v, &err) == REMAT_OK &&
                 o->segment_alloc(be.ctx, n * 4, &ds, &err) == REMAT_OK &&
                 o->segment_alloc(be.ctx, n * 4, &dx, &err) == REMAT_OK;
        void *bufs[] = {x, s, h, v, ds, dx};
        if (!ok) {
            printf("error: %s\n", err.msg);
            for (int i = 0; i < 6; i++)
                if (bufs[i]) o->segment_free(be.ctx, bufs[i]);
            failures++;
            break;
        }
        o->fill_uniform(be.ctx, x, n, -0.5f, 1.5f, 1, 2, 3);
        o->fill_uniform(be.ctx, ds, n, -1.0f, 1.0f, 1, 2, 4);
        o->zero(be.ctx, dx, n * 4);
        remat_neuron_opts no = {1.0f, 0.0f, 0, 0, REMAT_SURROGATE_SIGMOID, 4.0f, 2.0f, 1};
        double tf, tb;
        TIME_REPS(&be, 10, tf, o->neuron_forward(be.ctx, s, h, v, x, REMAT_LAYER_LIF, &no, T, nf));
        TIME_REPS(&be, 10, tb, o->neuron_backward(be.ctx, dx, v, ds, h, REMAT_LAYER_LIF, &no, T, nf));
        const double bf = (double)n * 12.0 + (double)nf * 8.0, bb = (double)n * 16.0 + (double)nf * 8.0;
        char label[64];
        snprintf(label, sizeof label, "lif forward  T=%lld nf=%lld", (long long)T, (long long)nf);
        printf("%-28s %10.1f %10.1f %10.1f\n", label, 1e6 * tf, bf / tf / 1e9,
               info.peak_bandwidth > 0 ? 100.0 * bf / tf / info.peak_bandwidth : 0.0);
        snprintf(label, sizeof label, "lif backward T=%lld nf=%lld", (long long)T, (long long)nf);
        printf("%-28s %10.1f %10.1f %10.1f\n", label, 1e6 * tb, bb / tb / 1e9,
               info.peak_bandwidth > 0 ? 100.0 * bb / tb / info.peak_bandwidth : 0.0);
        for (int i = 0; i < 6; i++) o->segment_free(be.ctx, bufs[i]);
    }
    /* GEMMs of mlp-lif's fc2 (rows 64 x 128, 512 -> 512): forward (tiled), backward in
     * both modes. */
    {
        const int64_t Tn = g_small ? 2 : 64, N = 128, in = g_small ? 128 : 512, out = in, rows = Tn * N;
        void *xx = NULL, *w = NULL, *y = NULL, *gy = NULL, *gx = NULL, *gw = NULL, *sc = NULL;
        int ok = o->segment_alloc(be.ctx, rows * in * 4, &xx, &err) == REMAT_OK &&
                 o->segment_alloc(be.ctx, out * in * 4, &w, &err) == REMAT_OK &&
                 o->segment_alloc(be.ctx, rows * out * 4, &y, &err) == REMAT_OK &&
                 o->segment_alloc(be.ctx, rows * out * 4, &gy, &err) == REMAT_OK &&
                 o->segment_alloc(be.ctx, rows * in * 4, &gx, &err) == REMAT_OK &&
                 o->segment_alloc(be.ctx, out * in * 4, &gw, &err) == REMAT_OK &&
                 o->segment_alloc(be.ctx, (out * in + out) * 4, &sc, &err) == REMAT_OK;
        if (!ok) {
            printf("error: %s\n", err.msg);
            failures++;
        } else {
            o->fill_uniform(be.ctx, xx, rows * in, -1, 1, 1, 2, 5);
            o->fill_uniform(be.ctx, w, out * in, -1, 1, 1, 2, 6);
            o->fill_uniform(be.ctx, gy, rows * out, -1, 1, 1, 2, 7);
            const double flops = 2.0 * (double)rows * (double)in * (double)out;
            double t;
            char title[64];
            snprintf(title, sizeof title, "GEMM (rows %lld, %lld -> %lld)", (long long)rows, (long long)in,
                     (long long)out);
            printf("\n%-40s %10s %10s\n", title, "us", "TFLOP/s");
            TIME_REPS(&be, 10, t, o->linear_forward(be.ctx, y, xx, w, NULL, rows, in, out));
            printf("%-40s %10.1f %10.2f\n", "forward, tiled kernel", 1e6 * t, flops / t / 1e12);
            for (int mode = 0; mode < 2; mode++) {
                remat_backend_cuda_set_gemm(&be, (remat_cuda_gemm)mode, &err);
                TIME_REPS(&be, 10, t,
                          o->linear_backward(be.ctx, gx, gw, NULL, gy, xx, w, sc, Tn, N, in, out));
                printf("%-40s %10.1f %10.2f\n",
                       mode ? "backward dinp+dweight, tiled" : "backward dinp+dweight, cuBLAS/step", 1e6 * t,
                       2.0 * flops / t / 1e12);
            }
        }
        void *bufs[] = {xx, w, y, gy, gx, gw, sc};
        for (int i = 0; i < 7; i++)
            if (bufs[i]) o->segment_free(be.ctx, bufs[i]);
    }
    remat_backend_free(&be);
    return failures;
}

int main(int argc, char **argv) {
    const char *data = "data", *models = "mlp-lif,3block-if,resnet-bn";
    int iters = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--data") && i + 1 < argc) data = argv[++i];
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--models") && i + 1 < argc) models = argv[++i];
        else if (!strcmp(argv[i], "--small")) g_small = 1;
        else {
            fprintf(stderr, "usage: cuda_bench [--data DIR] [--iters N] [--models a,b,...] [--small]\n");
            return 2;
        }
    }
    if (iters < 1) iters = 1;
    remat_backend be;
    remat_error err = {0};
    if (remat_backend_cuda_init(&be, 0, &err) != REMAT_OK) {
        printf("cuda_bench: skipped: %s\n", err.msg);
        return 0;
    }
    remat_cuda_info info;
    remat_backend_cuda_get_info(&be, &info, &err);
    printf("device %d: %s (sm_%d%d, %d SMs), %.1f GiB, peak bandwidth %.0f GB/s (2 x memory clock x bus width)\n",
           info.device, info.device_name, info.cc_major, info.cc_minor, info.sm_count,
           (double)info.total_bytes / (1024.0 * 1024.0 * 1024.0), info.peak_bandwidth / 1e9);
    printf("driver: %.1f MiB used before remat allocates anything (context, cuBLAS handle and workspace %.1f MiB, "
           "scratch)\n",
           mib(info.total_bytes - info.free_at_init), mib(info.internal_bytes));
    remat_backend_free(&be);
    int failures = bench_kernels();
    failures += bench_models(data, models, iters);
    return failures ? 1 : 0;
}
