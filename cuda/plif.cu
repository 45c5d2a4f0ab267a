/* plif.cu - the parametric LIF neuron (remat_ref_plif_forward / _backward, contract in
 * core/ref/plif.c): forward one thread per element over all t_steps, as neuron.cu;
 * backward one thread per sample (its F elements in order, so that each row's sum of
 * dL/dk terms is the reference's double chain), then one thread per block of samples
 * for w's partials. k = sigmoid(w) is computed on the device from w (no host copy).
 * The arithmetic is cuda/kernel_bodies.h's, the reference's bit for bit.
 */
#include "cuda/cuda_internal.cuh"
#include "cuda/kernel_bodies.h"

using remat_cuda::neuron_params;

template <typename T>
__global__ void plif_forward_kernel(T *__restrict__ spikes, float *__restrict__ vp, float *__restrict__ v,
                                    const T *__restrict__ x, const float *__restrict__ w, neuron_params q,
                                    int64_t t_steps, int64_t nf) {
    const float k = remat_cuda::plif_k(w[0]);
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nf; i += (int64_t)gridDim.x * blockDim.x)
        remat_cuda::plif_forward_elem(spikes, vp, v, x, k, q, t_steps, nf, i);
}

template <typename T>
__global__ void plif_backward_kernel(T *__restrict__ dx, float *__restrict__ gv, double *__restrict__ rows,
                                     const T *__restrict__ ds, const float *__restrict__ vp, const T *__restrict__ x,
                                     const float *__restrict__ w, neuron_params q, int64_t t_steps, int64_t N,
                                     int64_t F) {
    const float k = remat_cuda::plif_k(w[0]);
    for (int64_t n = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; n < N; n += (int64_t)gridDim.x * blockDim.x)
        remat_cuda::plif_backward_row(dx, gv, rows, ds, vp, x, k, q, t_steps, N, F, n);
}

__global__ void plif_wgrad_kernel(float *__restrict__ dw, const double *__restrict__ rows,
                                  const float *__restrict__ w, int64_t t_steps, int64_t N, int64_t nblk) {
    const float k = remat_cuda::plif_k(w[0]);
    for (int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; b < nblk; b += (int64_t)gridDim.x * blockDim.x)
        remat_cuda::plif_wgrad_block(dw, rows, k, t_steps, N, nblk, b);
}

static neuron_params plif_params(const remat_neuron_opts *o) {
    neuron_params q;
    q.lif = 1;
    q.soft = o->soft_reset != 0;
    q.detach = o->detach_reset != 0;
    q.decay_input = o->decay_input != 0;
    q.atan_sg = o->surrogate == REMAT_SURROGATE_ATAN;
    q.vth = o->v_threshold;
    q.vr = q.soft ? 0.0f : o->v_reset;
    q.tau = 0.0f;
    q.alpha = o->alpha;
    return q;
}

template <typename T>
static void plif_forward(remat_cuda_ctx *c, T *spikes, float *vp, float *v, const T *x, const float *w,
                         const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    if (nf <= 0 || t_steps <= 0) return;
    REMAT_LAUNCH(remat_cuda_blocks(nf), REMAT_CUDA_THREADS, 0, c->stream, plif_forward_kernel<T>)
    (spikes, vp, v, x, w, plif_params(o), t_steps, nf);
    cudaCheckLaunch();
}

template <typename T>
static void plif_backward(remat_cuda_ctx *c, T *dx, float *gv, double *rows, float *dw, const T *ds, const float *vp,
                          const T *x, const float *w, const remat_neuron_opts *o, int64_t t_steps, int64_t N,
                          int64_t F, int64_t nblk) {
    if (N <= 0 || t_steps <= 0 || nblk <= 0) return;
    REMAT_LAUNCH(remat_cuda_blocks(N), REMAT_CUDA_THREADS, 0, c->stream, plif_backward_kernel<T>)
    (dx, gv, rows, ds, vp, x, w, plif_params(o), t_steps, N, F);
    cudaCheckLaunch();
    REMAT_LAUNCH(remat_cuda_blocks(nblk), REMAT_CUDA_THREADS, 0, c->stream, plif_wgrad_kernel)
    (dw, rows, w, t_steps, N, nblk);
    cudaCheckLaunch();
}

void remat_cuda_plif_forward(remat_cuda_ctx *c, float *spikes, float *vp, float *v, const float *x, const float *w,
                             const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    plif_forward(c, spikes, vp, v, x, w, o, t_steps, nf);
}
void remat_cuda_plif_forward_bf16(remat_cuda_ctx *c, uint16_t *spikes, float *vp, float *v, const uint16_t *x,
                                  const float *w, const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    plif_forward(c, spikes, vp, v, x, w, o, t_steps, nf);
}
void remat_cuda_plif_backward(remat_cuda_ctx *c, float *dx, float *gv, double *rows, float *dw, const float *dspikes,
                              const float *vp, const float *x, const float *w, const remat_neuron_opts *o,
                              int64_t t_steps, int64_t N, int64_t F, int64_t nblk) {
    plif_backward(c, dx, gv, rows, dw, dspikes, vp, x, w, o, t_steps, N, F, nblk);
}
void remat_cuda_plif_backward_bf16(remat_cuda_ctx *c, uint16_t *dx, float *gv, double *rows, float *dw,
                                   const uint16_t *dspikes, const float *vp, const uint16_t *x, const float *w,
                                   const remat_neuron_opts *o, int64_t t_steps, int64_t N, int64_t F, int64_t nblk) {
    plif_backward(c, dx, gv, rows, dw, dspikes, vp, x, w, o, t_steps, N, F, nblk);
}
