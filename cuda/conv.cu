/* conv.cu - conv2d (remat_ref_conv2d_forward / _backward), mirroring core/ref/conv.c.
 *
 * The reference's chains with an explicit column matrix, per sample: im2col into the
 * workspace, then the tiled GEMM (linear.cu), whose per-element chain is the reference
 * GEMM's; so every output element and every gradient element gets the reference's bits
 * (the reference packs the same matrix's panels straight from the input instead):
 *  - forward: out_n = bias (or +0), then gemm_nn(W, col) accumulating;
 *  - input gradient: dcol = gemm_tn(W, dout_n) from +0, then col2im with one thread
 *    per input element adding its contributions in the reference's (ky, kx) order
 *    (for a fixed input element and kernel offset at most one output pixel reads it);
 *  - weight gradient: P_t chained over the step's samples by gemm_nt (accumulating
 *    from the second sample), then dweight += P_t, t descending; the bias partial of
 *    a step is one thread per channel summing (n, p) ascending from +0.
 * Groups: the GEMMs, im2col and col2im run once per group (ascending) on its channel
 * slice (conv_group: c_in / G and c_out / G channels, contiguous in every tensor), as
 * the reference does; K = (c_in / G) kh kw.
 * The workspace is col | dcol | P_t | bias partial, remat_conv2d_im2col_*_ws_elems
 * floats: the backend sets conv_im2col (backend.h), so the executor allocates that.
 * bf16 storage: the same kernels over uint16_t activations (kernel_bodies.h act_ld /
 * act_st) and the typed GEMMs; col and dcol stay float; col2im adds each input
 * element's contributions in a register and stores once, as the reference twin does.
 */
#include <stdint.h>

#include "cuda/cuda_internal.cuh"
#include "cuda/kernel_bodies.h"

using remat_cuda::act_ld;
using remat_cuda::act_st;

/* col[k][p] of one sample (padded positions +0), one thread per (k, p). */
template <typename T>
__global__ void im2col_kernel(float *__restrict__ col, const T *__restrict__ x, remat_conv_geom g) {
    const int64_t P = g.h_out * g.w_out, n = g.c_in * g.kh * g.kw * P;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t k = e / P, p = e % P;
        const int64_t kx = k % g.kw, ky = (k / g.kw) % g.kh, ci = k / (g.kw * g.kh);
        const int64_t oy = p / g.w_out, ox = p % g.w_out;
        const int64_t iy = oy * g.sh - g.ph + ky * (g.dh > 1 ? g.dh : 1), ix = ox * g.sw - g.pw + kx * (g.dw > 1 ? g.dw : 1);
        col[e] = (iy >= 0 && iy < g.h_in && ix >= 0 && ix < g.w_in) ? act_ld(x, (ci * g.h_in + iy) * g.w_in + ix) : 0.0f;
    }
}

/* dx[ci, iy, ix] += dcol contributions, (ky, kx) ascending: the reference's order. */
template <typename T>
__global__ void col2im_add_kernel(T *__restrict__ dx, const float *__restrict__ dcol, remat_conv_geom g) {
    const int64_t P = g.h_out * g.w_out, n = g.c_in * g.h_in * g.w_in;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t ix = e % g.w_in, iy = (e / g.w_in) % g.h_in, ci = e / (g.w_in * g.h_in);
        float v = act_ld(dx, e);
        for (int64_t ky = 0; ky < g.kh; ky++) {
            const int64_t ty = iy + g.ph - ky * (g.dh > 1 ? g.dh : 1);
            if (ty < 0 || ty % g.sh != 0 || ty / g.sh >= g.h_out) continue;
            for (int64_t kx = 0; kx < g.kw; kx++) {
                const int64_t tx = ix + g.pw - kx * (g.dw > 1 ? g.dw : 1);
                if (tx < 0 || tx % g.sw != 0 || tx / g.sw >= g.w_out) continue;
                const int64_t k = (ci * g.kh + ky) * g.kw + kx;
                v = v + dcol[k * P + (ty / g.sh) * g.w_out + tx / g.sw];
            }
        }
        act_st(dx, e, v);
    }
}

/* out[c, p] = bias[c] */
template <typename T>
__global__ void bias_planes_kernel(T *__restrict__ out, const T *__restrict__ bias, int64_t C, int64_t P) {
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < C * P; e += (int64_t)gridDim.x * blockDim.x)
        out[e] = bias[e / P];
}

/* pb[c] = (first ? +0 : pb[c]) + sum over p ascending of dy[c, p] */
template <typename T>
__global__ void bias_partial_kernel(float *__restrict__ pb, const T *__restrict__ dy, int64_t C, int64_t P, int first) {
    for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < C; c += (int64_t)gridDim.x * blockDim.x) {
        float s = first ? 0.0f : pb[c];
        for (int64_t p = 0; p < P; p++) s = s + act_ld(dy, c * P + p);
        pb[c] = s;
    }
}

/* d[e] = d[e] + s[e] */
__global__ void conv_add_into_kernel(float *__restrict__ d, const float *__restrict__ s, int64_t n) {
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x)
        d[e] = d[e] + s[e];
}

/* One group's geometry: c_in / G input and c_out / G output channels, no groups. */
static remat_conv_geom conv_group(const remat_conv_geom *g) {
    remat_conv_geom s = *g;
    s.c_in /= remat_conv_groups(g), s.c_out /= remat_conv_groups(g), s.groups = 1;
    return s;
}

template <typename T>
static void conv2d_forward(remat_cuda_ctx *c, T *out, const T *inp, const T *weight, const T *bias, float *ws,
                           int64_t rows, const remat_conv_geom *g) {
    const remat_conv_geom s = conv_group(g);
    const int64_t K = s.c_in * g->kh * g->kw, P = g->h_out * g->w_out, plane = g->h_in * g->w_in;
    const int64_t in_e = g->c_in * plane, out_e = g->c_out * P;
    for (int64_t r = 0; r < rows; r++) {
        T *o = out + r * out_e;
        if (bias) {
            REMAT_LAUNCH(remat_cuda_blocks(out_e), REMAT_CUDA_THREADS, 0, c->stream, bias_planes_kernel<T>)(o, bias,
                                                                                                     g->c_out, P);
            cudaCheckLaunch();
        }
        for (int64_t gi = 0; gi < remat_conv_groups(g); gi++) {
            REMAT_LAUNCH(remat_cuda_blocks(K * P), REMAT_CUDA_THREADS, 0, c->stream, im2col_kernel<T>)(
                ws, inp + r * in_e + gi * s.c_in * plane, s);
            cudaCheckLaunch();
            remat_cuda_gemm_typed(c, REMAT_CUDA_NN, o + gi * s.c_out * P, weight + gi * s.c_out * K,
                                  (const float *)ws, s.c_out, P, K, bias ? 1 : 0);
        }
    }
}

template <typename T>
static void conv2d_backward(remat_cuda_ctx *c, T *dinp, float *dweight, float *dbias, const T *dout, const T *inp,
                            const T *weight, float *ws, int64_t t_steps, int64_t N, const remat_conv_geom *g) {
    const remat_conv_geom s = conv_group(g);
    const int64_t K = s.c_in * g->kh * g->kw, P = g->h_out * g->w_out, plane = g->h_in * g->w_in;
    const int64_t in_e = g->c_in * plane, out_e = g->c_out * P, G = remat_conv_groups(g);
    float *col = ws, *dcol = ws + K * P, *pw = ws + 2 * K * P, *pb = pw + g->c_out * K;
    for (int64_t t = t_steps - 1; t >= 0; t--) {
        for (int64_t n = 0; n < N; n++) {
            const int64_t r = t * N + n;
            const T *dy = dout + r * out_e;
            for (int64_t gi = 0; dweight && gi < G; gi++) {
                REMAT_LAUNCH(remat_cuda_blocks(K * P), REMAT_CUDA_THREADS, 0, c->stream, im2col_kernel<T>)(
                    col, inp + r * in_e + gi * s.c_in * plane, s);
                cudaCheckLaunch();
                remat_cuda_gemm_typed(c, REMAT_CUDA_NT, pw + gi * s.c_out * K, dy + gi * s.c_out * P,
                                      (const float *)col, s.c_out, K, P, n > 0);
            }
            if (dbias) {
                REMAT_LAUNCH(remat_cuda_blocks(g->c_out), REMAT_CUDA_THREADS, 0, c->stream, bias_partial_kernel<T>)(
                    pb, dy, g->c_out, P, n == 0);
                cudaCheckLaunch();
            }
            for (int64_t gi = 0; dinp && gi < G; gi++) {
                remat_cuda_gemm_typed(c, REMAT_CUDA_TN, dcol, weight + gi * s.c_out * K, dy + gi * s.c_out * P, K, P,
                                      s.c_out, 0);
                REMAT_LAUNCH(remat_cuda_blocks(s.c_in * plane), REMAT_CUDA_THREADS, 0, c->stream, col2im_add_kernel<T>)(
                    dinp + r * in_e + gi * s.c_in * plane, dcol, s);
                cudaCheckLaunch();
            }
        }
        if (dweight && N > 0) {
            REMAT_LAUNCH(remat_cuda_blocks(g->c_out * K), REMAT_CUDA_THREADS, 0, c->stream, conv_add_into_kernel)(
                dweight, pw, g->c_out * K);
            cudaCheckLaunch();
        }
        if (dbias && N > 0) {
            REMAT_LAUNCH(remat_cuda_blocks(g->c_out), REMAT_CUDA_THREADS, 0, c->stream, conv_add_into_kernel)(dbias, pb,
                                                                                                       g->c_out);
            cudaCheckLaunch();
        }
    }
}

void remat_cuda_conv2d_forward(remat_cuda_ctx *c, float *out, const float *inp, const float *weight,
                               const float *bias, float *ws, int64_t rows, const remat_conv_geom *g) {
    conv2d_forward(c, out, inp, weight, bias, ws, rows, g);
}
void remat_cuda_conv2d_forward_bf16(remat_cuda_ctx *c, uint16_t *out, const uint16_t *inp, const uint16_t *weight,
                                    const uint16_t *bias, float *ws, int64_t rows, const remat_conv_geom *g) {
    conv2d_forward(c, out, inp, weight, bias, ws, rows, g);
}
void remat_cuda_conv2d_backward(remat_cuda_ctx *c, float *dinp, float *dweight, float *dbias, const float *dout,
                                const float *inp, const float *weight, float *ws, int64_t t_steps, int64_t N,
                                const remat_conv_geom *g) {
    conv2d_backward(c, dinp, dweight, dbias, dout, inp, weight, ws, t_steps, N, g);
}
void remat_cuda_conv2d_backward_bf16(remat_cuda_ctx *c, uint16_t *dinp, float *dweight, float *dbias,
                                     const uint16_t *dout, const uint16_t *inp, const uint16_t *weight, float *ws,
                                     int64_t t_steps, int64_t N, const remat_conv_geom *g) {
    conv2d_backward(c, dinp, dweight, dbias, dout, inp, weight, ws, t_steps, N, g);
}
