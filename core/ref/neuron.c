/* neuron.c - the reference IF / LIF neurons, multi-step (semantics.md, exact formulas).
 *
 * Fixed choices (cuda/neuron.cu mirrors them through the same core/ref/neuron_math.h):
 * sigma(z) = 1 / (1 + e^-z) with the polynomial e^x of neuron_math.h; the backward
 * runs t = t_steps-1 .. 0 carrying gv. Every loop is element-wise with its options
 * hoisted out, so GCC vectorises it (compiled with -ffp-contract=off).
 * bf16 storage (act.h): x, spikes, dspikes and dx bf16 (b16 = 1), h and v float.
 */
#include "core/ref/ref_kernels.h"
#include "core/ref/neuron_math.h"

#include <math.h>
#include <string.h>

#include "core/base/bf16.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))
/* Elements per cache block: the state of one block (v, gv) stays in L1 across all
 * time steps. */
#define ELEM_BLOCK 2048

ALWAYS_INLINE void neuron_fwd(void *spikes, float *restrict h, float *restrict v, const void *x, int lif,
                              int decay_input, int soft, int store_h, float vth, float vr, float tau, int64_t t_steps,
                              int64_t nf, const int b16) {
    for (int64_t i0 = 0; i0 < nf; i0 += ELEM_BLOCK) {
        const int64_t i1 = nf - i0 < ELEM_BLOCK ? nf : i0 + ELEM_BLOCK;
        for (int64_t t = 0; t < t_steps; t++) {
            /* Block-scope restrict pointers: GCC then needs no run-time alias checks. */
            float *restrict st = b16 ? NULL : (float *)spikes + t * nf;
            uint16_t *restrict sb = b16 ? (uint16_t *)spikes + t * nf : NULL;
            float *restrict ht = store_h ? h + t * nf : NULL, *restrict vt = v;
            const float *restrict xt = b16 ? NULL : (const float *)x + t * nf;
            const uint16_t *restrict xb = b16 ? (const uint16_t *)x + t * nf : NULL;
#pragma GCC ivdep
            for (int64_t i = i0; i < i1; i++) {
                const float vv = vt[i], xx = b16 ? remat_bf16_to_f32(xb[i]) : xt[i];
                float hh;
                if (!lif) hh = vv + xx;
                else if (decay_input) hh = vv + (xx - (vv - vr)) / tau;
                else hh = vv - (vv - vr) / tau + xx;
                const float s = (hh - vth >= 0.0f) ? 1.0f : 0.0f;
                vt[i] = soft ? hh - s * vth : hh * (1.0f - s) + vr * s;
                if (b16) sb[i] = remat_f32_to_bf16(s);
                else st[i] = s;
                if (store_h) ht[i] = hh;
            }
        }
    }
}

ALWAYS_INLINE void neuron_forward(void *spikes, float *h, float *v, const void *x, remat_layer_type type,
                                  const remat_neuron_opts *o, int64_t t_steps, int64_t nf, const int b16) {
    const int lif = type == REMAT_LAYER_LIF, soft = o->soft_reset != 0, dec = o->decay_input != 0;
    const float vth = o->v_threshold, vr = soft ? 0.0f : o->v_reset, tau = o->tau;
    /* One call per option combination with constant flags: each inlines to its own
     * branch-free loop. */
#define NF(L, D, S, H) neuron_fwd(spikes, h, v, x, L, D, S, H, vth, vr, tau, t_steps, nf, b16)
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

ALWAYS_INLINE void neuron_bwd(void *dx, float *restrict gv, const void *ds, const float *restrict h, int lif,
                              int decay_input, int soft, int detach, int atan_sg, float alpha, float vth, float vr,
                              float tau, int64_t t_steps, int64_t nf, const int b16) {
    const float decay = 1.0f - 1.0f / tau;
    for (int64_t i0 = 0; i0 < nf; i0 += ELEM_BLOCK) {
        const int64_t i1 = nf - i0 < ELEM_BLOCK ? nf : i0 + ELEM_BLOCK;
        for (int64_t t = t_steps - 1; t >= 0; t--) {
            /* Block-scope restrict pointers: GCC then needs no run-time alias checks. */
            float *restrict dxt = b16 ? NULL : (float *)dx + t * nf, *restrict g_v = gv;
            uint16_t *restrict dxb = b16 ? (uint16_t *)dx + t * nf : NULL;
            const float *restrict ht = h + t * nf;
            const float *restrict dst = b16 ? NULL : (const float *)ds + t * nf;
            const uint16_t *restrict dsb = b16 ? (const uint16_t *)ds + t * nf : NULL;
#pragma GCC ivdep
            for (int64_t i = i0; i < i1; i++) {
                const float hh = ht[i], gs = b16 ? remat_bf16_to_f32(dsb[i]) : dst[i], g = g_v[i];
                const float u = hh - vth;
                const float s = (u >= 0.0f) ? 1.0f : 0.0f;
                const float sg = remat_surrogate_grad(u, atan_sg, alpha);
                float gh;
                if (!soft && !detach) gh = (gs + g * (vr - hh)) * sg + g * (1.0f - s);
                else if (!soft) gh = gs * sg + g * (1.0f - s);
                else if (!detach) gh = (gs - vth * g) * sg + g;
                else gh = gs * sg + g;
                const float d = !lif ? gh : decay_input ? gh / tau : gh;
                if (b16) dxb[i] = remat_f32_to_bf16(remat_bf16_to_f32(dxb[i]) + d);
                else dxt[i] = dxt[i] + d;
                g_v[i] = !lif ? gh : gh * decay;
            }
        }
    }
}

ALWAYS_INLINE void neuron_backward(void *dx, float *gv, const void *dspikes, const float *h, remat_layer_type type,
                                   const remat_neuron_opts *o, int64_t t_steps, int64_t nf, const int b16) {
    const int lif = type == REMAT_LAYER_LIF, soft = o->soft_reset != 0, det = o->detach_reset != 0;
    const int dec = lif && o->decay_input != 0, at = o->surrogate == REMAT_SURROGATE_ATAN;
    const float vth = o->v_threshold, vr = soft ? 0.0f : o->v_reset, tau = o->tau, alpha = o->alpha;
#define NB(L, D, S, X, A) neuron_bwd(dx, gv, dspikes, h, L, D, S, X, A, alpha, vth, vr, tau, t_steps, nf, b16)
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

void remat_ref_neuron_forward(float *spikes, float *h, float *v, const float *x, remat_layer_type type,
                              const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    neuron_forward(spikes, h, v, x, type, o, t_steps, nf, 0);
}
void remat_ref_neuron_forward_bf16(uint16_t *spikes, float *h, float *v, const uint16_t *x, remat_layer_type type,
                                   const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    neuron_forward(spikes, h, v, x, type, o, t_steps, nf, 1);
}
void remat_ref_neuron_backward(float *dx, float *gv, const float *dspikes, const float *h, remat_layer_type type,
                               const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    neuron_backward(dx, gv, dspikes, h, type, o, t_steps, nf, 0);
}
void remat_ref_neuron_backward_bf16(uint16_t *dx, float *gv, const uint16_t *dspikes, const float *h,
                                    remat_layer_type type, const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    neuron_backward(dx, gv, dspikes, h, type, o, t_steps, nf, 1);
}
