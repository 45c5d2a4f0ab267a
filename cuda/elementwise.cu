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

using remat_cuda::act_ld;
using remat_cuda::act_st;

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

template <typename T>
__global__ void dropout_forward_kernel(T *__restrict__ out, const T *__restrict__ inp, uint64_t seed, uint64_t key,
                                       float p, float scale, int64_t t_steps, int64_t nf) {
    GRID_STRIDE(i, nf) {
        const float m = remat_cuda::dropout_mask_value(seed, key, p, scale, i);
        for (int64_t t = 0; t < t_steps; t++) act_st(out, t * nf + i, act_ld(inp, t * nf + i) * m);
    }
}

template <typename T>
__global__ void dropout_backward_kernel(T *__restrict__ dinp, const T *__restrict__ dout, uint64_t seed, uint64_t key,
                                        float p, float scale, int64_t t_steps, int64_t nf) {
    GRID_STRIDE(i, nf) {
        const float m = remat_cuda::dropout_mask_value(seed, key, p, scale, i);
        for (int64_t t = 0; t < t_steps; t++)
            act_st(dinp, t * nf + i, act_ld(dinp, t * nf + i) + act_ld(dout, t * nf + i) * m);
    }
}

void remat_cuda_dropout_mask(remat_cuda_ctx *c, float *mask, uint64_t seed, uint64_t iter, int layer, float p,
                             int64_t nf) {
    if (nf <= 0) return;
    LAUNCH(dropout_mask_kernel, nf, mask, seed, remat_rng_dropout_key(iter, (uint64_t)layer), p, 1.0f / (1.0f - p),
           nf);
}

template <typename T>
static void dropout_apply(remat_cuda_ctx *c, T *dst, const T *src, uint64_t seed, uint64_t iter, int layer, float p,
                          int64_t t_steps, int64_t nf, int backward) {
    if (nf <= 0 || t_steps <= 0) return;
    const uint64_t key = remat_rng_dropout_key(iter, (uint64_t)layer);
    if (backward) LAUNCH(dropout_backward_kernel<T>, nf, dst, src, seed, key, p, 1.0f / (1.0f - p), t_steps, nf);
    else LAUNCH(dropout_forward_kernel<T>, nf, dst, src, seed, key, p, 1.0f / (1.0f - p), t_steps, nf);
}

void remat_cuda_dropout_forward(remat_cuda_ctx *c, float *out, const float *inp, uint64_t seed, uint64_t iter,
                                int layer, float p, int64_t t_steps, int64_t nf) {
    dropout_apply(c, out, inp, seed, iter, layer, p, t_steps, nf, 0);
}
void remat_cuda_dropout_forward_bf16(remat_cuda_ctx *c, uint16_t *out, const uint16_t *inp, uint64_t seed,
                                     uint64_t iter, int layer, float p, int64_t t_steps, int64_t nf) {
    dropout_apply(c, out, inp, seed, iter, layer, p, t_steps, nf, 0);
}
void remat_cuda_dropout_backward(remat_cuda_ctx *c, float *dinp, const float *dout, uint64_t seed, uint64_t iter,
                                 int layer, float p, int64_t t_steps, int64_t nf) {
    dropout_apply(c, dinp, dout, seed, iter, layer, p, t_steps, nf, 1);
}
void remat_cuda_dropout_backward_bf16(remat_cuda_ctx *c, uint16_t *dinp, const uint16_t *dout, uint64_t seed,
                                      uint64_t iter, int layer, float p, int64_t t_steps, int64_t nf) {
    dropout_apply(c, dinp, dout, seed, iter, layer, p, t_steps, nf, 1);
}

/* ---- add ---- */

template <typename T>
__global__ void add_forward_kernel(T *__restrict__ out, const T *__restrict__ a, const T *__restrict__ b, int64_t n) {
    GRID_STRIDE(i, n) act_st(out, i, act_ld(a, i) + act_ld(b, i));
}

/* da and db may be the same buffer (then it receives dout twice, da's add first, as
 * in the reference, both in float before the one store): no __restrict__, and one
 * thread does both adds of element i. */
template <typename T>
__global__ void add_backward_kernel(T *da, T *db, const T *dout, int64_t n) {
    GRID_STRIDE(i, n) {
        const float d = act_ld(dout, i);
        if (da && da == db) {
            act_st(da, i, (act_ld(da, i) + d) + d);
            continue;
        }
        if (da) act_st(da, i, act_ld(da, i) + d);
        if (db) act_st(db, i, act_ld(db, i) + d);
    }
}

void remat_cuda_add_forward(remat_cuda_ctx *c, float *out, const float *a, const float *b, int64_t n) {
    if (n <= 0) return;
    LAUNCH(add_forward_kernel<float>, n, out, a, b, n);
}
void remat_cuda_add_forward_bf16(remat_cuda_ctx *c, uint16_t *out, const uint16_t *a, const uint16_t *b, int64_t n) {
    if (n <= 0) return;
    LAUNCH(add_forward_kernel<uint16_t>, n, out, a, b, n);
}
void remat_cuda_add_backward(remat_cuda_ctx *c, float *da, float *db, const float *dout, int64_t n) {
    if (n <= 0 || (!da && !db)) return;
    LAUNCH(add_backward_kernel<float>, n, da, db, dout, n);
}
void remat_cuda_add_backward_bf16(remat_cuda_ctx *c, uint16_t *da, uint16_t *db, const uint16_t *dout, int64_t n) {
    if (n <= 0 || (!da && !db)) return;
    LAUNCH(add_backward_kernel<uint16_t>, n, da, db, dout, n);
}

/* ---- the bf16 copies of weights (core/base/bf16.h, the reference's expression) ---- */

__global__ void bf16_from_f32_kernel(uint16_t *__restrict__ dst, const float *__restrict__ src, int64_t n) {
    GRID_STRIDE(i, n) dst[i] = remat_f32_to_bf16(src[i]);
}

void remat_cuda_bf16_from_f32(remat_cuda_ctx *c, uint16_t *dst, const float *src, int64_t n) {
    if (n <= 0) return;
    LAUNCH(bf16_from_f32_kernel, n, dst, src, n);
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

template <typename T>
__global__ void fill_uniform_kernel(T *__restrict__ out, int64_t n, float lo, float span, uint64_t seed,
                                    uint64_t stream, uint64_t key) {
    GRID_STRIDE(i, n) act_st(out, i, lo + span * remat_rng_uniform(seed, stream, key, (uint64_t)i));
}

template <typename T>
__global__ void fill_bernoulli_kernel(T *__restrict__ out, int64_t n, float rate, uint64_t seed, uint64_t stream,
                                      uint64_t key) {
    GRID_STRIDE(i, n) act_st(out, i, remat_rng_uniform(seed, stream, key, (uint64_t)i) < rate ? 1.0f : 0.0f);
}

template <typename T>
__global__ void fill_counts_kernel(T *__restrict__ out, int64_t n, int32_t max, uint64_t seed, uint64_t stream,
                                   uint64_t key) {
    GRID_STRIDE(i, n) act_st(out, i, remat_count_of_uniform(remat_rng_uniform(seed, stream, key, (uint64_t)i), max));
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
    LAUNCH(fill_uniform_kernel<float>, n, out, n, lo, hi - lo, seed, stream, key);
}
void remat_cuda_fill_uniform_bf16(remat_cuda_ctx *c, uint16_t *out, int64_t n, float lo, float hi, uint64_t seed,
                                  uint64_t stream, uint64_t key) {
    if (n <= 0) return;
    LAUNCH(fill_uniform_kernel<uint16_t>, n, out, n, lo, hi - lo, seed, stream, key);
}
void remat_cuda_fill_bernoulli(remat_cuda_ctx *c, float *out, int64_t n, float rate, uint64_t seed,
                               uint64_t stream, uint64_t key) {
    if (n <= 0) return;
    LAUNCH(fill_bernoulli_kernel<float>, n, out, n, rate, seed, stream, key);
}
void remat_cuda_fill_bernoulli_bf16(remat_cuda_ctx *c, uint16_t *out, int64_t n, float rate, uint64_t seed,
                                    uint64_t stream, uint64_t key) {
    if (n <= 0) return;
    LAUNCH(fill_bernoulli_kernel<uint16_t>, n, out, n, rate, seed, stream, key);
}
void remat_cuda_fill_counts(remat_cuda_ctx *c, float *out, int64_t n, int32_t max, uint64_t seed, uint64_t stream,
                            uint64_t key) {
    LAUNCH(fill_counts_kernel<float>, n, out, n, max, seed, stream, key);
}
void remat_cuda_fill_counts_bf16(remat_cuda_ctx *c, uint16_t *out, int64_t n, int32_t max, uint64_t seed,
                                 uint64_t stream, uint64_t key) {
    LAUNCH(fill_counts_kernel<uint16_t>, n, out, n, max, seed, stream, key);
}

void remat_cuda_fill_labels(remat_cuda_ctx *c, int32_t *labels, int64_t n, int64_t classes, uint64_t seed,
                            uint64_t key) {
    if (n <= 0) return;
    LAUNCH(fill_labels_kernel, n, labels, n, classes, seed, key);
}
