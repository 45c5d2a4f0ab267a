/* neuron.c - the reference IF / LIF neurons, multi-step (semantics.md, exact formulas).
 *
 * Fixed choices (cuda/neuron.cu mirrors them through the same core/ref/neuron_math.h):
 * sigma(z) = 1 / (1 + e^-z) with the polynomial e^x of neuron_math.h; the backward
 * runs t = t_steps-1 .. 0 carrying gv. Every loop is element-wise with its options
 * hoisted out, so GCC vectorises it (compiled with -ffp-contract=off).
 */
#include "core/ref/ref_kernels.h"
#include "core/ref/neuron_math.h"

#include <math.h>
#include <string.h>

#define ALWAYS_INLINE static inline __attribute__((always_inline))
/* Elements per cache block: the state of one block (v, gv) stays in L1 across all
 * time steps. */
#define ELEM_BLOCK 2048

ALWAYS_INLINE void neuron_fwd(float *restrict spikes, float *restrict h, float *restrict v, const float *restrict x,
                              int lif, int decay_input, int soft, int store_h, float vth, float vr, float tau,
                              int64_t t_steps, int64_t nf) {
    for (int64_t i0 = 0; i0 < nf; i0 += ELEM_BLOCK) {
        const int64_t i1 = nf - i0 < ELEM_BLOCK ? nf : i0 + ELEM_BLOCK;
        for (int64_t t = 0; t < t_steps; t++) {
            /* Block-scope restrict pointers: GCC then needs no run-time alias checks. */
            float *restrict st = spikes + t * nf, *restrict ht = store_h ? h + t * nf : NULL, *restrict vt = v;
            const float *restrict xt = x + t * nf;
#pragma GCC ivdep
            for (int64_t i = i0; i < i1; i++) {
                const float vv = vt[i], xx = xt[i];
                float hh;
                if (!lif) hh = vv + xx;
                else if (decay_input) hh = vv + (xx - (vv - vr)) / tau;
                else hh = vv - (vv - vr) / tau + xx;
                const float s = (hh - vth >= 0.0f) ? 1.0f : 0.0f;
                vt[i] = soft ? hh - s * vth : hh * (1.0f - s) + vr * s;
                st[i] = s;
                if (store_h) ht[i] = hh;
            }
        }
    }
}

void remat_ref_neuron_forward(float *spikes, float *h, float *v, const float *x, remat_layer_type type,
                              const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    const int lif = type == REMAT_LAYER_LIF, soft = o->soft_reset != 0, dec = o->decay_input != 0;
    const float vth = o->v_threshold, vr = soft ? 0.0f : o->v_reset, tau = o->tau;
    /* One call per option combination with constant flags: each inlines to its own
     * branch-free loop. */
#define NF(L, D, S, H) neuron_fwd(spikes, h, v, x, L, D, S, H, vth, vr, tau, t_steps, nf)
    if (h) {
        if (!lif) soft ? NF(0, 0, 1, 1) : NF(0, 0, 0, 1);
        else if (dec) soft ? NF(1, 1, 1, 1) : NF(1, 1, 0, 1);
        else soft ? NF(1, 0, 1, 1) : NF(1, 0, 0, 1);
    } else {
        if (!lif) soft ? NF(0, 0, 1, 0) : NF(0, 0, 0, 0);
        else if (dec) soft ? NF(1, 1, 1, 0) : NF(1, 1, 0, 0);
        else soft ? NF(1, 0, 1, 0) : NF(1, 0, 0, 0);
    }
#undef NF
}

ALWAYS_INLINE void neuron_bwd(float *restrict dx, float *restrict gv, const float *restrict ds,
                              const float *restrict h, int lif, int decay_input, int soft, int detach, int atan_sg,
                              float alpha, float vth, float vr, float tau, int64_t t_steps, int64_t nf) {
    const float decay = 1.0f - 1.0f / tau;
    for (int64_t i0 = 0; i0 < nf; i0 += ELEM_BLOCK) {
        const int64_t i1 = nf - i0 < ELEM_BLOCK ? nf : i0 + ELEM_BLOCK;
        for (int64_t t = t_steps - 1; t >= 0; t--) {
            /* Block-scope restrict pointers: GCC then needs no run-time alias checks. */
            float *restrict dxt = dx + t * nf, *restrict g_v = gv;
            const float *restrict ht = h + t * nf, *restrict dst = ds + t * nf;
#pragma GCC ivdep
            for (int64_t i = i0; i < i1; i++) {
                const float hh = ht[i], gs = dst[i], g = g_v[i];
                const float u = hh - vth;
                const float s = (u >= 0.0f) ? 1.0f : 0.0f;
                const float sg = remat_surrogate_grad(u, atan_sg, alpha);
                float gh;
                if (!soft && !detach) gh = (gs + g * (vr - hh)) * sg + g * (1.0f - s);
                else if (!soft) gh = gs * sg + g * (1.0f - s);
                else if (!detach) gh = (gs - vth * g) * sg + g;
                else gh = gs * sg + g;
                if (!lif) {
                    dxt[i] = dxt[i] + gh;
                    g_v[i] = gh;
                } else {
                    dxt[i] = dxt[i] + (decay_input ? gh / tau : gh);
                    g_v[i] = gh * decay;
                }
            }
        }
    }
}

void remat_ref_neuron_backward(float *dx, float *gv, const float *dspikes, const float *h, remat_layer_type type,
                               const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    const int lif = type == REMAT_LAYER_LIF, soft = o->soft_reset != 0, det = o->detach_reset != 0;
    const int dec = lif && o->decay_input != 0, at = o->surrogate == REMAT_SURROGATE_ATAN;
    const float vth = o->v_threshold, vr = soft ? 0.0f : o->v_reset, tau = o->tau, alpha = o->alpha;
#define NB(L, D, S, X, A) neuron_bwd(dx, gv, dspikes, h, L, D, S, X, A, alpha, vth, vr, tau, t_steps, nf)
#define NB_RESET(L, D, A)                                \
    do {                                                 \
        if (soft) det ? NB(L, D, 1, 1, A) : NB(L, D, 1, 0, A); \
        else det ? NB(L, D, 0, 1, A) : NB(L, D, 0, 0, A);      \
    } while (0)
#define NB_SG(L, D)                  \
    do {                             \
        if (at) NB_RESET(L, D, 1);   \
        else NB_RESET(L, D, 0);      \
    } while (0)
    if (!lif) NB_SG(0, 0);
    else if (dec) NB_SG(1, 1);
    else NB_SG(1, 0);
#undef NB_SG
#undef NB_RESET
#undef NB
}
