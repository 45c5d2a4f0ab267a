/* pool.cu - max and average pooling (remat_ref_maxpool2d_* / avgpool2d_*), mirroring
 * core/ref/pool.c: windows scanned in row-major order, the first maximum wins (strict
 * >), the average is the in-bounds sum from +0 divided by kh*kw. Forward: one thread
 * per output element. Backward: one thread per input element, visiting the windows
 * that contain it in (oy, ox) ascending order: the order in which the reference's
 * loop over output elements adds into it. So both give the reference's bits.
 * bf16 storage: the same kernels over uint16_t activations (kernel_bodies.h act_ld /
 * act_st); a backward thread adds in a register and stores once, as the reference
 * twin's gather does.
 */
#include <math.h>
#include <stdint.h>

#include "cuda/cuda_internal.cuh"
#include "cuda/kernel_bodies.h"

using remat_cuda::act_ld;
using remat_cuda::act_st;

/* Index in the plane of the first maximum of window (oy, ox) (pool.c: window_argmax). */
template <typename T>
__device__ __forceinline__ int64_t window_argmax(const T *plane, const remat_conv_geom &g, int64_t oy, int64_t ox) {
    float best = -INFINITY;
    int64_t arg = -1;
    for (int64_t ky = 0; ky < g.kh; ky++) {
        const int64_t iy = oy * g.sh - g.ph + ky;
        if (iy < 0 || iy >= g.h_in) continue;
        for (int64_t kx = 0; kx < g.kw; kx++) {
            const int64_t ix = ox * g.sw - g.pw + kx;
            if (ix < 0 || ix >= g.w_in) continue;
            const float v = act_ld(plane, iy * g.w_in + ix);
            if (arg < 0 || v > best) best = v, arg = iy * g.w_in + ix;
        }
    }
    return arg;
}

template <typename T>
__global__ void pool_forward_kernel(T *__restrict__ out, const T *__restrict__ inp, int64_t planes, remat_conv_geom g,
                                    int max) {
    const int64_t op = g.h_out * g.w_out, n = planes * op;
    const float div = (float)(g.kh * g.kw);
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t q = e / op, oy = (e % op) / g.w_out, ox = e % g.w_out;
        const T *plane = inp + q * g.h_in * g.w_in;
        if (max) {
            act_st(out, e, act_ld(plane, window_argmax(plane, g, oy, ox)));
            continue;
        }
        float s = 0.0f;
        for (int64_t ky = 0; ky < g.kh; ky++) {
            const int64_t iy = oy * g.sh - g.ph + ky;
            if (iy < 0 || iy >= g.h_in) continue;
            for (int64_t kx = 0; kx < g.kw; kx++) {
                const int64_t ix = ox * g.sw - g.pw + kx;
                if (ix >= 0 && ix < g.w_in) s = s + act_ld(plane, iy * g.w_in + ix);
            }
        }
        act_st(out, e, s / div);
    }
}

/* inp == NULL: average pooling. */
template <typename T>
__global__ void pool_backward_kernel(T *__restrict__ dinp, const T *__restrict__ dout, const T *__restrict__ inp,
                                     int64_t planes, remat_conv_geom g) {
    const int64_t ip = g.h_in * g.w_in, n = planes * ip;
    const float div = (float)(g.kh * g.kw);
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t q = e / ip, pos = e % ip, iy = pos / g.w_in, ix = pos % g.w_in;
        const T *dy = dout + q * g.h_out * g.w_out;
        /* windows containing (iy, ix): oy*sh - ph <= iy <= oy*sh - ph + kh - 1 */
        int64_t oy0 = iy + g.ph - g.kh + 1, ox0 = ix + g.pw - g.kw + 1;
        oy0 = oy0 <= 0 ? 0 : (oy0 + g.sh - 1) / g.sh;
        ox0 = ox0 <= 0 ? 0 : (ox0 + g.sw - 1) / g.sw;
        float v = act_ld(dinp, e);
        for (int64_t oy = oy0; oy < g.h_out && oy * g.sh - g.ph <= iy; oy++)
            for (int64_t ox = ox0; ox < g.w_out && ox * g.sw - g.pw <= ix; ox++) {
                if (inp) {
                    if (window_argmax(inp + q * ip, g, oy, ox) == pos) v = v + act_ld(dy, oy * g.w_out + ox);
                } else {
                    v = v + act_ld(dy, oy * g.w_out + ox) / div;
                }
            }
        act_st(dinp, e, v);
    }
}

template <typename T>
static void launch_forward(remat_cuda_ctx *c, T *out, const T *inp, int64_t rows, const remat_conv_geom *g, int max) {
    const int64_t n = rows * g->c_in * g->h_out * g->w_out;
    if (n <= 0) return;
    REMAT_LAUNCH(remat_cuda_blocks(n), REMAT_CUDA_THREADS, 0, c->stream, pool_forward_kernel<T>)(out, inp, rows * g->c_in,
                                                                                       *g, max);
    cudaCheckLaunch();
}

template <typename T>
static void launch_backward(remat_cuda_ctx *c, T *dinp, const T *dout, const T *inp, int64_t rows,
                            const remat_conv_geom *g) {
    const int64_t n = rows * g->c_in * g->h_in * g->w_in;
    if (n <= 0 || !dinp) return;
    REMAT_LAUNCH(remat_cuda_blocks(n), REMAT_CUDA_THREADS, 0, c->stream, pool_backward_kernel<T>)(dinp, dout, inp,
                                                                                        rows * g->c_in, *g);
    cudaCheckLaunch();
}

void remat_cuda_maxpool2d_forward(remat_cuda_ctx *c, float *out, const float *inp, int64_t rows,
                                  const remat_conv_geom *g) {
    launch_forward(c, out, inp, rows, g, 1);
}

void remat_cuda_maxpool2d_backward(remat_cuda_ctx *c, float *dinp, const float *dout, const float *inp, int64_t rows,
                                   const remat_conv_geom *g) {
    launch_backward(c, dinp, dout, inp, rows, g);
}

void remat_cuda_avgpool2d_forward(remat_cuda_ctx *c, float *out, const float *inp, int64_t rows,
                                  const remat_conv_geom *g) {
    launch_forward(c, out, inp, rows, g, 0);
}

void remat_cuda_avgpool2d_backward(remat_cuda_ctx *c, float *dinp, const float *dout, int64_t rows,
                                   const remat_conv_geom *g) {
    launch_backward<float>(c, dinp, dout, NULL, rows, g);
}

void remat_cuda_maxpool2d_forward_bf16(remat_cuda_ctx *c, uint16_t *out, const uint16_t *inp, int64_t rows,
                                       const remat_conv_geom *g) {
    launch_forward(c, out, inp, rows, g, 1);
}

void remat_cuda_maxpool2d_backward_bf16(remat_cuda_ctx *c, uint16_t *dinp, const uint16_t *dout, const uint16_t *inp,
                                        int64_t rows, const remat_conv_geom *g) {
    launch_backward(c, dinp, dout, inp, rows, g);
}

void remat_cuda_avgpool2d_forward_bf16(remat_cuda_ctx *c, uint16_t *out, const uint16_t *inp, int64_t rows,
                                       const remat_conv_geom *g) {
    launch_forward(c, out, inp, rows, g, 0);
}

void remat_cuda_avgpool2d_backward_bf16(remat_cuda_ctx *c, uint16_t *dinp, const uint16_t *dout, int64_t rows,
                                        const remat_conv_geom *g) {
    launch_backward<uint16_t>(c, dinp, dout, NULL, rows, g);
}
