/* batchnorm.cu - training-mode batch norm (remat_ref_batchnorm_forward / _backward).
 *
 * Statistics: one thread per channel sums its positions (row, then pixel of a
 * [C, H, W] activation) in ascending order in double, two
 * passes (mean, then squared deviations), exactly the reference's chain, so the
 * statistics are the reference's bits and depend on nothing but the data: no atomics,
 * no block-size-dependent tree. Reads are coalesced (consecutive threads, consecutive
 * channels of the same row). The element-wise normalisation and input gradient then
 * run over all rows x channels.
 * Assumption: C is large enough to keep a few warps busy; for small C the statistics
 * pass is latency-bound (it is a fixed-order serial sum by design).
 */
#include "cuda/cuda_internal.cuh"
#include "cuda/kernel_bodies.h"

template <typename T>
__global__ void bn_stats_kernel(float *__restrict__ mean, float *__restrict__ rstd, float *__restrict__ running_mean,
                                float *__restrict__ running_var, const T *__restrict__ inp, int64_t rows, int64_t C,
                                int64_t hw, float momentum, double eps) {
    for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < C; c += (int64_t)gridDim.x * blockDim.x) {
        const remat_cuda::bn_stats s = remat_cuda::batchnorm_channel_stats(inp, rows, C, hw, c, eps);
        mean[c] = s.mean;
        rstd[c] = s.rstd;
        if (running_mean) running_mean[c] = remat_cuda::batchnorm_running(running_mean[c], s.mean, momentum);
        if (running_var) running_var[c] = remat_cuda::batchnorm_running(running_var[c], (float)s.unbiased, momentum);
    }
}

template <typename T>
__global__ void bn_out_kernel(T *__restrict__ out, const T *__restrict__ inp, const float *__restrict__ mean,
                              const float *__restrict__ rstd, const float *__restrict__ weight,
                              const float *__restrict__ bias, int64_t rows, int64_t C, int64_t hw) {
    const int64_t n = rows * C * hw;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t c = (e / hw) % C;
        remat_cuda::act_st(out, e,
                           remat_cuda::batchnorm_out(remat_cuda::act_ld(inp, e), mean[c], rstd[c],
                                                     weight ? weight[c] : 1.0f, bias ? bias[c] : 0.0f));
    }
}

/* Per channel: dbias += sum dy, dweight += sum dy*xhat (in double, rounded once), and
 * the three per-channel factors of the input gradient into mdy, mdyx, k. */
template <typename T>
__global__ void bn_grad_stats_kernel(float *__restrict__ dweight, float *__restrict__ dbias, float *__restrict__ mdy,
                                     float *__restrict__ mdyx, float *__restrict__ kf, const T *__restrict__ dout,
                                     const T *__restrict__ inp, const float *__restrict__ weight,
                                     const float *__restrict__ mean, const float *__restrict__ rstd, int64_t rows,
                                     int64_t C, int64_t hw) {
    for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < C; c += (int64_t)gridDim.x * blockDim.x) {
        double sdy, sdyx;
        remat_cuda::batchnorm_channel_grads(dout, inp, mean[c], rstd[c], rows, C, hw, c, &sdy, &sdyx);
        if (dbias) dbias[c] = dbias[c] + (float)sdy;
        if (dweight) dweight[c] = dweight[c] + (float)sdyx;
        const int64_t n = rows * hw;
        mdy[c] = n > 0 ? (float)(sdy / (double)n) : 0.0f;
        mdyx[c] = n > 0 ? (float)(sdyx / (double)n) : 0.0f;
        kf[c] = (weight ? weight[c] : 1.0f) * rstd[c];
    }
}

template <typename T>
__global__ void bn_dinp_kernel(T *__restrict__ dinp, const T *__restrict__ dout, const T *__restrict__ inp,
                               const float *__restrict__ mean, const float *__restrict__ rstd,
                               const float *__restrict__ mdy, const float *__restrict__ mdyx,
                               const float *__restrict__ kf, int64_t rows, int64_t C, int64_t hw) {
    const int64_t n = rows * C * hw;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t c = (e / hw) % C;
        remat_cuda::act_st(dinp, e,
                           remat_cuda::batchnorm_dinp(remat_cuda::act_ld(dinp, e), remat_cuda::act_ld(inp, e),
                                                      remat_cuda::act_ld(dout, e), mean[c], rstd[c], mdy[c], mdyx[c],
                                                      kf[c]));
    }
}

/* Channels per statistics block: small blocks spread few channels over more SMs. */
#define BN_STAT_THREADS 64

template <typename T>
static void batchnorm_forward(remat_cuda_ctx *c, T *out, float *mean, float *rstd, float *running_mean,
                              float *running_var, const T *inp, const float *weight, const float *bias, int64_t rows,
                              int64_t C, int64_t hw, float momentum, double eps) {
    if (C <= 0) return;
    const unsigned sb = (unsigned)((C + BN_STAT_THREADS - 1) / BN_STAT_THREADS < 65535
                                       ? (C + BN_STAT_THREADS - 1) / BN_STAT_THREADS
                                       : 65535);
    REMAT_LAUNCH(sb, BN_STAT_THREADS, 0, c->stream, bn_stats_kernel<T>)(mean, rstd, running_mean, running_var, inp, rows, C, hw,
                                                                              momentum, eps);
    cudaCheckLaunch();
    if (rows <= 0) return;
    REMAT_LAUNCH(remat_cuda_blocks(rows * C * hw), REMAT_CUDA_THREADS, 0, c->stream, bn_out_kernel<T>)(out, inp, mean, rstd,
                                                                                          weight, bias, rows, C, hw);
    cudaCheckLaunch();
}

template <typename T>
static void batchnorm_backward(remat_cuda_ctx *c, T *dinp, float *dweight, float *dbias, const T *dout, const T *inp,
                               const float *weight, const float *mean, const float *rstd, int64_t rows, int64_t C,
                               int64_t hw) {
    if (C <= 0) return;
    /* Three per-channel float vectors in the scratch area (3*C floats). */
    void *tmp = nullptr;
    remat_error err = {};
    if (remat_cuda_scratch(c, 3 * C * (int64_t)sizeof(float), &tmp, &err) != REMAT_OK)
        remat_cuda_fatal(__FILE__, __LINE__, "remat_cuda_scratch", "out of memory", err.msg);
    float *mdy = (float *)tmp, *mdyx = mdy + C, *kf = mdyx + C;
    const unsigned sb = (unsigned)((C + BN_STAT_THREADS - 1) / BN_STAT_THREADS < 65535
                                       ? (C + BN_STAT_THREADS - 1) / BN_STAT_THREADS
                                       : 65535);
    REMAT_LAUNCH(sb, BN_STAT_THREADS, 0, c->stream, bn_grad_stats_kernel<T>)(dweight, dbias, mdy, mdyx, kf, dout, inp, weight,
                                                                 mean, rstd, rows, C, hw);
    cudaCheckLaunch();
    if (!dinp || rows <= 0) return;
    REMAT_LAUNCH(remat_cuda_blocks(rows * C * hw), REMAT_CUDA_THREADS, 0, c->stream, bn_dinp_kernel<T>)(dinp, dout, inp, mean,
                                                                                           rstd, mdy, mdyx, kf, rows, C,
                                                                                           hw);
    cudaCheckLaunch();
}

void remat_cuda_batchnorm_forward(remat_cuda_ctx *c, float *out, float *mean, float *rstd, float *running_mean,
                                  float *running_var, const float *inp, const float *weight, const float *bias,
                                  int64_t rows, int64_t C, int64_t hw, float momentum, double eps) {
    batchnorm_forward(c, out, mean, rstd, running_mean, running_var, inp, weight, bias, rows, C, hw, momentum, eps);
}
void remat_cuda_batchnorm_forward_bf16(remat_cuda_ctx *c, uint16_t *out, float *mean, float *rstd,
                                       float *running_mean, float *running_var, const uint16_t *inp,
                                       const float *weight, const float *bias, int64_t rows, int64_t C, int64_t hw,
                                       float momentum, double eps) {
    batchnorm_forward(c, out, mean, rstd, running_mean, running_var, inp, weight, bias, rows, C, hw, momentum, eps);
}
void remat_cuda_batchnorm_backward(remat_cuda_ctx *c, float *dinp, float *dweight, float *dbias, const float *dout,
                                   const float *inp, const float *weight, const float *mean, const float *rstd,
                                   int64_t rows, int64_t C, int64_t hw) {
    batchnorm_backward(c, dinp, dweight, dbias, dout, inp, weight, mean, rstd, rows, C, hw);
}
void remat_cuda_batchnorm_backward_bf16(remat_cuda_ctx *c, uint16_t *dinp, float *dweight, float *dbias,
                                        const uint16_t *dout, const uint16_t *inp, const float *weight,
                                        const float *mean, const float *rstd, int64_t rows, int64_t C, int64_t hw) {
    batchnorm_backward(c, dinp, dweight, dbias, dout, inp, weight, mean, rstd, rows, C, hw);
}
