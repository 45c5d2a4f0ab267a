/* loss.cu - the rate losses (remat_ref_loss_forward / _backward).
 *
 * rate[n,k]: one thread per element, t ascending in float, then / T (the reference's
 * chain). The loss is a double sum in the reference's order: MSE is one chain over
 * (n, k) in row-major order, CE one chain over n of per-sample terms. The terms are
 * computed in parallel (one thread per element or per sample) into a double buffer,
 * then ONE thread adds them in order: fixed order, no atomics. The final division and
 * rounding to float happen on the host with the reference's expression.
 * Device exp/log (double) are within 1 ulp of the host's libm, not always the same
 * bits: CE values can differ from the reference in the last bit of a double, which
 * almost never survives the rounding to float (tests allow 1 float ulp for CE).
 */
#include "cuda/cuda_internal.cuh"
#include "cuda/kernel_bodies.h"

#define GRID_STRIDE(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

template <typename A>
__global__ void rate_kernel(float *__restrict__ rate, const A *__restrict__ out, int64_t T, int64_t NK) {
    GRID_STRIDE(e, NK) rate[e] = remat_cuda::rate_elem(out, T, NK, e);
}

__global__ void mse_terms_kernel(double *__restrict__ terms, const float *__restrict__ rate,
                                 const int32_t *__restrict__ labels, int64_t N, int64_t K) {
    GRID_STRIDE(e, N * K) {
        const int64_t n = e / K, k = e % K;
        const double d = (double)rate[e] - (k == (int64_t)labels[n] ? 1.0 : 0.0);
        terms[e] = d * d;
    }
}

__global__ void ce_terms_kernel(double *__restrict__ terms, const float *__restrict__ rate,
                                const int32_t *__restrict__ labels, int64_t N, int64_t K) {
    GRID_STRIDE(n, N) terms[n] = remat_cuda::ce_term(rate + n * K, labels[n], K);
}

/* total = sum of terms[0..m) in ascending order, from +0 (one thread). */
__global__ void ordered_sum_kernel(double *__restrict__ total, const double *__restrict__ terms, int64_t m) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        double s = 0.0;
        for (int64_t i = 0; i < m; i++) s += terms[i];
        *total = s;
    }
}

template <typename A>
static float loss_forward(remat_cuda_ctx *c, float *rate, const A *out, const int32_t *labels, remat_loss_type type,
                          int64_t T, int64_t N, int64_t K) {
    const int64_t NK = N * K;
    if (NK > 0) {
        /* (T = 0 gives 0 / 0, NaN rates, as in the reference.) */
        REMAT_LAUNCH(remat_cuda_blocks(NK), REMAT_CUDA_THREADS, 0, c->stream, rate_kernel<A>)(rate, out, T, NK);
        cudaCheckLaunch();
    }
    if (N <= 0 || K <= 0) return 0.0f;
    const int mse = type == REMAT_LOSS_RATE_MSE;
    const int64_t m = mse ? NK : N;
    /* terms in the scratch area; the total in the first 8 bytes of `small`. */
    void *tmp = nullptr;
    remat_error err = {};
    if (remat_cuda_scratch(c, m * (int64_t)sizeof(double), &tmp, &err) != REMAT_OK)
        remat_cuda_fatal(__FILE__, __LINE__, "remat_cuda_scratch", "out of memory", err.msg);
    double *terms = (double *)tmp;
    if (mse) REMAT_LAUNCH(remat_cuda_blocks(NK), REMAT_CUDA_THREADS, 0, c->stream, mse_terms_kernel)(terms, rate, labels, N, K);
    else REMAT_LAUNCH(remat_cuda_blocks(N), REMAT_CUDA_THREADS, 0, c->stream, ce_terms_kernel)(terms, rate, labels, N, K);
    cudaCheckLaunch();
    double *total = (double *)((char *)c->small + REMAT_CUDA_SMALL_LOSS);
    REMAT_LAUNCH(1, 1, 0, c->stream, ordered_sum_kernel)(total, terms, m);
    cudaCheckLaunch();
    cudaCheck(cudaMemcpyAsync(c->small_host, total, sizeof(double), cudaMemcpyDeviceToHost, c->stream));
    cudaCheck(cudaStreamSynchronize(c->stream));
    const double t = *(const double *)c->small_host;
    return (float)(mse ? t / ((double)N * (double)K) : t / (double)N);
}

/* Per sample n: softmax statistics (CE only; MSE needs none). */
__global__ void ce_stats_kernel(double *__restrict__ stats, const float *__restrict__ rate, int64_t N, int64_t K) {
    GRID_STRIDE(n, N) remat_cuda::ce_row(rate + n * K, K, &stats[2 * n], &stats[2 * n + 1]);
}

/* Element (n, k): gt = dL/dr / T rounded to float, added to dout at every t. */
template <typename A>
__global__ void loss_backward_kernel(A *__restrict__ dout, const float *__restrict__ rate,
                                     const int32_t *__restrict__ labels, const double *__restrict__ stats, int mse,
                                     int64_t T, int64_t N, int64_t K) {
    GRID_STRIDE(e, N * K) {
        const int64_t n = e / K, k = e % K;
        const double mx = mse ? 0.0 : stats[2 * n], se = mse ? 0.0 : stats[2 * n + 1];
        const float gt = remat_cuda::loss_grad(mse, rate[e], k == (int64_t)labels[n], mx, se, N, K, T);
        for (int64_t t = 0; t < T; t++)
            remat_cuda::act_st(dout, t * N * K + e, remat_cuda::act_ld(dout, t * N * K + e) + gt);
    }
}

template <typename A>
static void loss_backward(remat_cuda_ctx *c, A *dout, const float *rate, const int32_t *labels, remat_loss_type type,
                          int64_t T, int64_t N, int64_t K) {
    if (N <= 0 || K <= 0 || T <= 0) return;
    const int mse = type == REMAT_LOSS_RATE_MSE;
    double *stats = nullptr;
    if (!mse) {
        void *tmp = nullptr;
        remat_error err = {};
        if (remat_cuda_scratch(c, 2 * N * (int64_t)sizeof(double), &tmp, &err) != REMAT_OK)
            remat_cuda_fatal(__FILE__, __LINE__, "remat_cuda_scratch", "out of memory", err.msg);
        stats = (double *)tmp;
        REMAT_LAUNCH(remat_cuda_blocks(N), REMAT_CUDA_THREADS, 0, c->stream, ce_stats_kernel)(stats, rate, N, K);
        cudaCheckLaunch();
    }
    REMAT_LAUNCH(remat_cuda_blocks(N * K), REMAT_CUDA_THREADS, 0, c->stream, loss_backward_kernel<A>)(dout, rate, labels, stats, mse,
                                                                                        T, N, K);
    cudaCheckLaunch();
}

float remat_cuda_loss_forward(remat_cuda_ctx *c, float *rate, const float *out, const int32_t *labels,
                              remat_loss_type type, int64_t T, int64_t N, int64_t K) {
    return loss_forward(c, rate, out, labels, type, T, N, K);
}
float remat_cuda_loss_forward_bf16(remat_cuda_ctx *c, float *rate, const uint16_t *out, const int32_t *labels,
                                   remat_loss_type type, int64_t T, int64_t N, int64_t K) {
    return loss_forward(c, rate, out, labels, type, T, N, K);
}
void remat_cuda_loss_backward(remat_cuda_ctx *c, float *dout, const float *rate, const int32_t *labels,
                              remat_loss_type type, int64_t T, int64_t N, int64_t K) {
    loss_backward(c, dout, rate, labels, type, T, N, K);
}
void remat_cuda_loss_backward_bf16(remat_cuda_ctx *c, uint16_t *dout, const float *rate, const int32_t *labels,
                                   remat_loss_type type, int64_t T, int64_t N, int64_t K) {
    loss_backward(c, dout, rate, labels, type, T, N, K);
}
