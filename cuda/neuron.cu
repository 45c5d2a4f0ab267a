/* neuron.cu - multi-step IF / LIF forward and backward (remat_ref_neuron_forward /
 * _backward): ONE kernel over all t_steps each, one thread per element of nf, the
 * membrane potential (forward) or its gradient (backward) in a register across the
 * time loop, so x, spikes, h (and dspikes, dx) are each touched once.
 *
 * The neuron options are compile-time template flags (one kernel instance per
 * combination, as the reference inlines one loop per combination), and the
 * arithmetic is cuda/kernel_bodies.h's, which is the reference's bit for bit.
 * Loads and stores at step t are coalesced: consecutive threads, consecutive i.
 */
#include "cuda/cuda_internal.cuh"
#include "cuda/kernel_bodies.h"

using remat_cuda::neuron_params;

template <typename T, int LIF, int DEC, int SOFT, int STORE_H>
__global__ void neuron_forward_kernel(T *__restrict__ spikes, float *__restrict__ h, float *__restrict__ v,
                                      const T *__restrict__ x, neuron_params q, int64_t t_steps, int64_t nf) {
    /* Template flags override the runtime copies so that the branches fold away. */
    q.lif = LIF;
    q.decay_input = DEC;
    q.soft = SOFT;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nf; i += (int64_t)gridDim.x * blockDim.x)
        remat_cuda::neuron_forward_elem(spikes, STORE_H ? h : nullptr, v, x, q, t_steps, nf, i);
}

template <typename T, int LIF, int DEC, int SOFT, int DETACH, int ATAN>
__global__ void neuron_backward_kernel(T *__restrict__ dx, float *__restrict__ gv, const T *__restrict__ ds,
                                       const float *__restrict__ h, neuron_params q, int64_t t_steps, int64_t nf) {
    q.lif = LIF;
    q.decay_input = DEC;
    q.soft = SOFT;
    q.detach = DETACH;
    q.atan_sg = ATAN;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nf; i += (int64_t)gridDim.x * blockDim.x)
        remat_cuda::neuron_backward_elem(dx, gv, ds, h, q, t_steps, nf, i);
}

static neuron_params params_of(remat_layer_type type, const remat_neuron_opts *o) {
    neuron_params q;
    q.lif = type == REMAT_LAYER_LIF;
    q.soft = o->soft_reset != 0;
    q.detach = o->detach_reset != 0;
    q.decay_input = q.lif && o->decay_input != 0;
    q.atan_sg = o->surrogate == REMAT_SURROGATE_ATAN;
    q.vth = o->v_threshold;
    q.vr = q.soft ? 0.0f : o->v_reset;
    q.tau = o->tau;
    q.alpha = o->alpha;
    return q;
}

template <typename T>
static void neuron_forward(remat_cuda_ctx *c, T *spikes, float *h, float *v, const T *x, remat_layer_type type,
                           const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    if (nf <= 0 || t_steps <= 0) return;
    const neuron_params q = params_of(type, o);
    const unsigned grid = remat_cuda_blocks(nf);
    const int H = h != nullptr;
    const int sel = (q.lif ? (q.decay_input ? 2 : 1) : 0) * 4 + q.soft * 2 + H;
#define NF(L, D, S, HH) \
    REMAT_LAUNCH(grid, REMAT_CUDA_THREADS, 0, c->stream, neuron_forward_kernel<T, L, D, S, HH>)(spikes, h, v, x, q, t_steps, nf)
    switch (sel) {
    case 0: NF(0, 0, 0, 0); break;
    case 1: NF(0, 0, 0, 1); break;
    case 2: NF(0, 0, 1, 0); break;
    case 3: NF(0, 0, 1, 1); break;
    case 4: NF(1, 0, 0, 0); break;
    case 5: NF(1, 0, 0, 1); break;
    case 6: NF(1, 0, 1, 0); break;
    case 7: NF(1, 0, 1, 1); break;
    case 8: NF(1, 1, 0, 0); break;
    case 9: NF(1, 1, 0, 1); break;
    case 10: NF(1, 1, 1, 0); break;
    default: NF(1, 1, 1, 1); break;
    }
#undef NF
    cudaCheckLaunch();
}

template <typename T, int LIF, int DEC>
static void launch_backward(remat_cuda_ctx *c, T *dx, float *gv, const T *ds, const float *h, const neuron_params &q,
                            int64_t t_steps, int64_t nf) {
    const unsigned grid = remat_cuda_blocks(nf);
    const int sel = q.soft * 4 + q.detach * 2 + q.atan_sg;
#define NB(S, X, A) \
    REMAT_LAUNCH(grid, REMAT_CUDA_THREADS, 0, c->stream, neuron_backward_kernel<T, LIF, DEC, S, X, A>)(dx, gv, ds, h, q, t_steps, nf)
    switch (sel) {
    case 0: NB(0, 0, 0); break;
    case 1: NB(0, 0, 1); break;
    case 2: NB(0, 1, 0); break;
    case 3: NB(0, 1, 1); break;
    case 4: NB(1, 0, 0); break;
    case 5: NB(1, 0, 1); break;
    case 6: NB(1, 1, 0); break;
    default: NB(1, 1, 1); break;
    }
#undef NB
    cudaCheckLaunch();
}

template <typename T>
static void neuron_backward(remat_cuda_ctx *c, T *dx, float *gv, const T *dspikes, const float *h,
                            remat_layer_type type, const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    if (nf <= 0 || t_steps <= 0) return;
    const neuron_params q = params_of(type, o);
    if (!q.lif) launch_backward<T, 0, 0>(c, dx, gv, dspikes, h, q, t_steps, nf);
    else if (q.decay_input) launch_backward<T, 1, 1>(c, dx, gv, dspikes, h, q, t_steps, nf);
    else launch_backward<T, 1, 0>(c, dx, gv, dspikes, h, q, t_steps, nf);
}

void remat_cuda_neuron_forward(remat_cuda_ctx *c, float *spikes, float *h, float *v, const float *x,
                               remat_layer_type type, const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    neuron_forward(c, spikes, h, v, x, type, o, t_steps, nf);
}
void remat_cuda_neuron_forward_bf16(remat_cuda_ctx *c, uint16_t *spikes, float *h, float *v, const uint16_t *x,
                                    remat_layer_type type, const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    neuron_forward(c, spikes, h, v, x, type, o, t_steps, nf);
}
void remat_cuda_neuron_backward(remat_cuda_ctx *c, float *dx, float *gv, const float *dspikes, const float *h,
                                remat_layer_type type, const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    neuron_backward(c, dx, gv, dspikes, h, type, o, t_steps, nf);
}
void remat_cuda_neuron_backward_bf16(remat_cuda_ctx *c, uint16_t *dx, float *gv, const uint16_t *dspikes,
                                     const float *h, remat_layer_type type, const remat_neuron_opts *o,
                                     int64_t t_steps, int64_t nf) {
    neuron_backward(c, dx, gv, dspikes, h, type, o, t_steps, nf);
}
