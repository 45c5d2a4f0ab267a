/* elementwise.cu - dropout, add, bf16 rounding, the optimisers and the seeded fills: one thread per
 * element (grid-stride), the reference's expression per element (no reductions here,
 * so every output is the reference's bits).
 *
 * Dropout draws its mask from core/base/rng.h with the reference's key
 * (seed, REMAT_RNG_DROPOUT, remat_rng_dropout_key(iter, layer), i): the multi-step
 * kernels compute the mask value of element i once and apply it at every t.
 * Adam's bias corrections are scalars: computed on the host with the reference's
 * double-precision expressions, so the kernel sees the very same step_size/bc2_sqrt.
 */
#include <math.h>

#include "core/base/bf16.h"
#include "cuda/cuda_internal.cuh"
#include "cuda/kernel_bodies.h"

#define GRID_STRIDE(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

#define LAUNCH(kernel, n, ...)                                                                  \
    do {                                                                                        \
        REMAT_LAUNCH(remat_cuda_blocks(n), REMAT_CUDA_THREADS, 0, c->stream, kernel)(__VA_ARGS__);        \
        cudaCheckLaunch();                                                                      \
    } while (0)

/* ---- dropout ---- */

__global__ void dropout_mask_kernel(float *__restrict__ mask, uint64_t seed, uint64_t key, float p, float scale,
                                    int64_t nf) {
    GRID_STRIDE(i, nf) mask[i] = remat_cuda::dropout_mask_value(seed, key, p, scale, i);
}

__global__ void dropout_forward_kernel(float *__restrict__ out, const float *__restrict__ inp, uint64_t seed,
                                       uint64_t key, float p, float scale, int64_t t_steps, int64_t nf) {
    GRID_STRIDE(i, nf) {
        const float m = remat_cuda::dropout_mask_value(seed, key, p, scale, i);
        for (int64_t t = 0; t < t_steps; t++) out[t * nf + i] = inp[t * nf + i] * m;
    }
}

__global__ void dropout_backward_kernel(float *__restrict__ dinp, const float *__restrict__ dout, uint64_t seed,
                                        uint64_t key, float p, float scale, int64_t t_steps, int64_t nf) {
    GRID_STRIDE(i, nf) {
        const float m = remat_cuda::dropout_mask_value(seed, key, p, scale, i);
        for (int64_t t = 0; t < t_steps; t++) dinp[t * nf + i] = dinp[t * nf + i] + dout[t * nf + i] * m;
    }
}

void remat_cuda_dropout_mask(remat_cuda_ctx *c, float *mask, uint64_t seed, uint64_t iter, int layer, float p,
                             int64_t nf) {
    if (nf <= 0) return;
    LAUNCH(dropout_mask_kernel, nf, mask, seed, remat_rng_dropout_key(iter, (uint64_t)layer), p, 1.0f / (1.0f - p),
           nf);
}

void remat_cuda_dropout_forward(remat_cuda_ctx *c, float *out, const float *inp, uint64_t seed, uint64_t iter,
                                int layer, float p, int64_t t_steps, int64_t nf) {
    if (nf <= 0 || t_steps <= 0) return;
    LAUNCH(dropout_forward_kernel, nf, out, inp, seed, remat_rng_dropout_key(iter, (uint64_t)layer), p,
           1.0f / (1.0f - p), t_steps, nf);
}

void remat_cuda_dropout_backward(remat_cuda_ctx *c, float *dinp, const float *dout, uint64_t seed, uint64_t iter,
                                 int layer, float p, int64_t t_steps, int64_t nf) {
    if (nf <= 0 || t_steps <= 0) return;
    LAUNCH(dropout_backward_kernel, nf, dinp, dout, seed, remat_rng_dropout_key(iter, (uint64_t)layer), p,
           1.0f / (1.0f - p), t_steps, nf);
}

/* ---- add ---- */

__global__ void add_forward_kernel(float *__restrict__ out, const float *__restrict__ a, const float *__restrict__ b,
                                   int64_t n) {
    GRID_STRIDE(i, n) out[i] = a[i] + b[i];
}

/* da and db may be the same buffer (then it receives dout twice, da's add first, as
 * in the reference): no __restrict__, and one thread does both adds of element i. */
__global__ void add_backward_kernel(float *da, float *db, const float *dout, int64_t n) {
    GRID_STRIDE(i, n) {
        const float d = dout[i];
        if (da) da[i] = da[i] + d;
        if (db) db[i] = db[i] + d;
    }
}

void remat_cuda_add_forward(remat_cuda_ctx *c, float *out, const float *a, const float *b, int64_t n) {
    if (n <= 0) return;
    LAUNCH(add_forward_kernel, n, out, a, b, n);
}

void remat_cuda_add_backward(remat_cuda_ctx *c, float *da, float *db, const float *dout, int64_t n) {
    if (n <= 0 || (!da && !db)) return;
    LAUNCH(add_backward_kernel, n, da, db, dout, n);
}

/* ---- bf16 storage rounding (core/base/bf16.h, the reference's expression) ---- */

__global__ void bf16_round_kernel(float *__restrict__ x, int64_t n) {
    GRID_STRIDE(i, n) x[i] = remat_bf16_round(x[i]);
}

void remat_cuda_bf16_round(remat_cuda_ctx *c, float *x, int64_t n) {
    if (n <= 0) return;
    LAUNCH(bf16_round_kernel, n, x, n);
}

/* ---- optimisers ---- */

__global__ void sgd_kernel(float *__restrict__ p, float *__restrict__ b, const float *__restrict__ g, float lr,
                           float momentum, int first_step, int64_t n) {
    GRID_STRIDE(i, n) {
        if (!b) {
            p[i] = p[i] - lr * g[i];
        } else {
            const float bi = first_step ? g[i] : momentum * b[i] + g[i];
            b[i] = bi;
            p[i] = p[i] - lr * bi;
        }
    }
}

__global__ void adam_kernel(float *__restrict__ p, float *__restrict__ m, float *__restrict__ v,
                            const float *__restrict__ g, float beta1, float beta2, float om1, float om2,
                            float step_size, float bc2_sqrt, float eps, int64_t n) {
    GRID_STRIDE(i, n) {
        float pi = p[i], mi = m[i], vi = v[i];
        remat_cuda::adam_elem(&pi, &mi, &vi, g[i], beta1, beta2, om1, om2, step_size, bc2_sqrt, eps);
        p[i] = pi;
        m[i] = mi;
        v[i] = vi;
    }
}

void remat_cuda_sgd_update(remat_cuda_ctx *c, float *param, float *buf, const float *grad, float lr,
                           float momentum, int first_step, int64_t n) {
    if (n <= 0) return;
    LAUNCH(sgd_kernel, n, param, buf, grad, lr, momentum, first_step, n);
}

void remat_cuda_adam_update(remat_cuda_ctx *c, float *param, float *m, float *v, const float *grad, float lr,
                            float beta1, float beta2, float eps, int step, int64_t n) {
    if (n <= 0) return;
    /* The reference's scalar prologue, on the host (same libm, same bits). */
    const double bc1 = 1.0 - pow((double)beta1, (double)step), bc2 = 1.0 - pow((double)beta2, (double)step);
    const float step_size = (float)((double)lr / bc1), bc2_sqrt = (float)sqrt(bc2);
    const float om1 = 1.0f - beta1, om2 = 1.0f - beta2;
    LAUNCH(adam_kernel, n, param, m, v, grad, beta1, beta2, om1, om2, step_size, bc2_sqrt, eps, n);
}

/* ---- seeded fills ---- */

__global__ void fill_uniform_kernel(float *__restrict__ out, int64_t n, float lo, float span, uint64_t seed,
                                    uint64_t stream, uint64_t key) {
    GRID_STRIDE(i, n) out[i] = lo + span * remat_rng_uniform(seed, stream, key, (uint64_t)i);
}

__global__ void fill_bernoulli_kernel(float *__restrict__ out, int64_t n, float rate, uint64_t seed, uint64_t stream,
                                      uint64_t key) {
    GRID_STRIDE(i, n) out[i] = remat_rng_uniform(seed, stream, key, (uint64_t)i) < rate ? 1.0f : 0.0f;
}

__global__ void fill_labels_kernel(int32_t *__restrict__ labels, int64_t n, int64_t classes, uint64_t seed,
                                   uint64_t key) {
    GRID_STRIDE(i, n)
    labels[i] = classes > 0 ? (int32_t)(remat_rng_bits(seed, REMAT_RNG_LABEL, key, (uint64_t)i) % (uint64_t)classes)
                            : 0;
}

void remat_cuda_fill_uniform(remat_cuda_ctx *c, float *out, int64_t n, float lo, float hi, uint64_t seed,
                             uint64_t stream, uint64_t key) {
    if (n <= 0) return;
    LAUNCH(fill_uniform_kernel, n, out, n, lo, hi - lo, seed, stream, key);
}

void remat_cuda_fill_bernoulli(remat_cuda_ctx *c, float *out, int64_t n, float rate, uint64_t seed,
                               uint64_t stream, uint64_t key) {
    if (n <= 0) return;
    LAUNCH(fill_bernoulli_kernel, n, out, n, rate, seed, stream, key);
}

void remat_cuda_fill_labels(remat_cuda_ctx *c, int32_t *labels, int64_t n, int64_t classes, uint64_t seed,
                            uint64_t key) {
    if (n <= 0) return;
    LAUNCH(fill_labels_kernel, n, labels, n, classes, seed, key);
}
