/* neuron.c - the reference IF / LIF neurons, multi-step (docs/determinism.md, exact formulas).
 *
 * Fixed choices (cuda/neuron.cu mirrors them through the same core/ref/neuron_math.h):
 * sigma(z) = 1 / (1 + e^-z) with the polynomial e^x of neuron_math.h; the backward
 * runs t = t_steps-1 .. 0 carrying gv. Every loop is element-wise with its options
 * hoisted out, so GCC vectorises it (compiled with -ffp-contract=off).
 *
 * The forward is also PLIF's (core/ref/plif.c): one body for every charge (neuron_fwd.h).
 * Each direction's arithmetic is one always_inline body (neuron_fwd, neuron_bwd);
 * *_opts expands it once per option combination with constant flags (each inlines to
 * its own branch-free loop), and REMAT_ELEM_CLONES (elem_kernel.h) compiles that for
 * every SIMD path of simd.h, all with the same bits. Activations (x, spikes, dx,
 * dspikes) go through act_ld / act_st, so each body also makes the bf16-storage twin
 * (b16 = 1: those four bf16); the potential h and the state v, gv are fp32 in both.
 */
#include "core/ref/ref_kernels.h"
#include "core/ref/elem_kernel.h"
#include "core/ref/neuron_fwd.h"
#include "core/ref/neuron_math.h"
#include "core/ref/parallel.h"

#include <math.h>
#include <string.h>

#define ALWAYS_INLINE REMAT_ELEM_INLINE
/* Elements per cache block: the state of one block (v, gv) stays in L1 across all
 * time steps. */
#define ELEM_BLOCK 2048

/* The spike s = (u >= 0) ? 1.0f : 0.0f (0 for NaN), built from the comparison's bits.
 * The same value as the select, but GCC cannot see that s is 0 or 1: with the select
 * it specialises s * vth into two branches, and under the default -ftrapping-math it
 * may not if-convert those floating-point operations back, so no loop vectorised
 * (except with AVX-512's masked operations). */
ALWAYS_INLINE float heaviside(float u) {
    uint32_t m = 0u - (uint32_t)(u >= 0.0f);
    m &= 0x3f800000u;
    float s;
    memcpy(&s, &m, sizeof s);
    return s;
}

/* neuron_fwd.h's step, for constant charge, dec, vr0, soft and keep (each expansion of
 * neuron_fwd_opts inlines to its own branch-free loop). */
ALWAYS_INLINE void neuron_fwd(void *restrict spikes, float *restrict kept, float *restrict v, const void *restrict x,
                              const int b16, remat_charge charge, int dec, int vr0, int soft, int keep, float vth,
                              float vr, float tau, float k, int64_t t_steps, int64_t nf, int64_t lo, int64_t hi) {
    for (int64_t i0 = lo; i0 < hi; i0 += ELEM_BLOCK) {
        const int64_t i1 = hi - i0 < ELEM_BLOCK ? hi : i0 + ELEM_BLOCK;
        for (int64_t t = 0; t < t_steps; t++) {
            const int64_t o = t * nf;
#pragma GCC ivdep
            for (int64_t i = i0; i < i1; i++) {
                const float vv = v[i], xx = act_ld(x, o + i, b16);
                float hh;
                if (charge == REMAT_CHARGE_PLIF) hh = remat_plif_charge(vv, xx, k, dec, vr0, vr);
                else if (charge == REMAT_CHARGE_IF) hh = vv + xx;
                else if (dec) hh = vv + (xx - (vv - vr)) / tau;
                else hh = vv - (vv - vr) / tau + xx;
                const float s = heaviside(hh - vth);
                v[i] = soft ? hh - s * vth : hh * (1.0f - s) + vr * s;
                act_st(spikes, o + i, s, b16);
                if (keep) kept[o + i] = charge == REMAT_CHARGE_PLIF ? vv : hh;
            }
        }
    }
}

ALWAYS_INLINE void neuron_fwd_opts(void *spikes, float *kept, float *v, const void *x, const int b16,
                                   remat_charge charge, int dec, int vr0, int soft, float vth, float vr, float tau,
                                   float k, int64_t t_steps, int64_t nf, int64_t lo, int64_t hi) {
#define NF(C, D, Z, S, K) neuron_fwd(spikes, kept, v, x, b16, C, D, Z, S, K, vth, vr, tau, k, t_steps, nf, lo, hi)
#define NF_SK(C, D, Z)                                          \
    do {                                                        \
        if (kept) soft ? NF(C, D, Z, 1, 1) : NF(C, D, Z, 0, 1); \
        else soft ? NF(C, D, Z, 1, 0) : NF(C, D, Z, 0, 0);      \
    } while (0)
    if (charge == REMAT_CHARGE_IF) NF_SK(REMAT_CHARGE_IF, 0, 0);
    else if (charge == REMAT_CHARGE_LIF && dec) NF_SK(REMAT_CHARGE_LIF, 1, 0);
    else if (charge == REMAT_CHARGE_LIF) NF_SK(REMAT_CHARGE_LIF, 0, 0);
    else if (dec && vr0) NF_SK(REMAT_CHARGE_PLIF, 1, 1);
    else if (dec) NF_SK(REMAT_CHARGE_PLIF, 1, 0);
    else if (vr0) NF_SK(REMAT_CHARGE_PLIF, 0, 1);
    else NF_SK(REMAT_CHARGE_PLIF, 0, 0);
#undef NF_SK
#undef NF
}

REMAT_ELEM_CLONES(neuron_fwd_f32,
                  (float *spikes, float *kept, float *v, const float *x, remat_charge charge, int dec, int vr0,
                   int soft, float vth, float vr, float tau, float k, int64_t t_steps, int64_t nf, int64_t lo,
                   int64_t hi),
                  (spikes, kept, v, x, charge, dec, vr0, soft, vth, vr, tau, k, t_steps, nf, lo, hi),
                  neuron_fwd_opts(spikes, kept, v, x, 0, charge, dec, vr0, soft, vth, vr, tau, k, t_steps, nf, lo,
                                  hi))
REMAT_ELEM_CLONES(neuron_fwd_bf16,
                  (uint16_t *spikes, float *kept, float *v, const uint16_t *x, remat_charge charge, int dec, int vr0,
                   int soft, float vth, float vr, float tau, float k, int64_t t_steps, int64_t nf, int64_t lo,
                   int64_t hi),
                  (spikes, kept, v, x, charge, dec, vr0, soft, vth, vr, tau, k, t_steps, nf, lo, hi),
                  neuron_fwd_opts(spikes, kept, v, x, 1, charge, dec, vr0, soft, vth, vr, tau, k, t_steps, nf, lo,
                                  hi))

/* Neurons per part at least: a part's work is t_steps times this. */
#define NEURON_MIN_PER_THREAD 16384

static void neuron_fwd_part(void *ctx, int64_t lo, int64_t hi) {
    const remat_neuron_fwd_args *a = ctx;
    if (a->b16)
        neuron_fwd_bf16(a->spikes, a->kept, a->v, a->x, a->charge, a->dec, a->vr0, a->soft, a->vth, a->vr, a->tau,
                        a->k, a->t_steps, a->nf, lo, hi);
    else
        neuron_fwd_f32(a->spikes, a->kept, a->v, a->x, a->charge, a->dec, a->vr0, a->soft, a->vth, a->vr, a->tau,
                       a->k, a->t_steps, a->nf, lo, hi);
}

void remat_ref_neuron_fwd_run(const remat_neuron_fwd_args *a) {
    remat_ref_parallel_for(a->nf, 64, NEURON_MIN_PER_THREAD, neuron_fwd_part, (void *)a);
}

static void neuron_forward(void *spikes, float *h, float *v, const void *x, remat_layer_type type,
                           const remat_neuron_opts *o, int64_t t_steps, int64_t nf, int b16) {
    remat_neuron_fwd_args a = {0};
    a.spikes = spikes, a.kept = h, a.v = v, a.x = x, a.b16 = b16;
    a.charge = type == REMAT_LAYER_LIF ? REMAT_CHARGE_LIF : REMAT_CHARGE_IF;
    a.soft = o->soft_reset != 0, a.dec = o->decay_input != 0;
    a.vth = o->v_threshold, a.vr = a.soft ? 0.0f : o->v_reset, a.tau = o->tau;
    a.t_steps = t_steps, a.nf = nf;
    remat_ref_neuron_fwd_run(&a);
}

void remat_ref_neuron_forward(float *spikes, float *h, float *v, const float *x, remat_layer_type type,
                              const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    neuron_forward(spikes, h, v, x, type, o, t_steps, nf, 0);
}

void remat_ref_neuron_forward_bf16(uint16_t *spikes, float *h, float *v, const uint16_t *x, remat_layer_type type,
                                   const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    neuron_forward(spikes, h, v, x, type, o, t_steps, nf, 1);
}

/* The arguments of one backward call, for its parts on the threads (parallel.h): neurons
 * are independent, so the parts split nf. */
typedef struct neuron_call {
    void *dx;
    float *gv;
    const void *in;
    const float *hs;
    int lif, dec, soft, det, at, b16;
    float alpha, vth, vr, tau;
    int64_t t_steps, nf;
} neuron_call;

ALWAYS_INLINE void neuron_bwd(void *restrict dx, float *restrict gv, const void *restrict ds, const float *restrict h,
                              const int b16, int lif, int decay_input, int soft, int detach, int atan_sg,
                              float alpha, float vth, float vr, float tau, int64_t t_steps, int64_t nf, int64_t lo,
                              int64_t hi) {
    const float decay = 1.0f - 1.0f / tau;
    for (int64_t i0 = lo; i0 < hi; i0 += ELEM_BLOCK) {
        const int64_t i1 = hi - i0 < ELEM_BLOCK ? hi : i0 + ELEM_BLOCK;
        for (int64_t t = t_steps - 1; t >= 0; t--) {
            const int64_t o = t * nf;
#pragma GCC ivdep
            for (int64_t i = i0; i < i1; i++) {
                const float hh = h[o + i], gs = act_ld(ds, o + i, b16), g = gv[i];
                const float u = hh - vth;
                const float s = heaviside(u);
                const float sg = remat_surrogate_grad(u, atan_sg, alpha);
                const float gh = remat_neuron_grad_h(gs, g, hh, s, sg, vth, vr, soft, detach);
                const float d = act_ld(dx, o + i, b16);
                if (!lif) {
                    act_st(dx, o + i, d + gh, b16);
                    gv[i] = gh;
                } else {
                    act_st(dx, o + i, d + (decay_input ? gh / tau : gh), b16);
                    gv[i] = gh * decay;
                }
            }
        }
    }
}

ALWAYS_INLINE void neuron_bwd_opts(void *dx, float *gv, const void *ds, const float *h, const int b16, int lif,
                                   int dec, int soft, int det, int at, float alpha, float vth, float vr, float tau,
                                   int64_t t_steps, int64_t nf, int64_t lo, int64_t hi) {
#define NB(L, D, S, X, A) neuron_bwd(dx, gv, ds, h, b16, L, D, S, X, A, alpha, vth, vr, tau, t_steps, nf, lo, hi)
#define NB_RESET(L, D, A)                                      \
    do {                                                       \
        if (soft) det ? NB(L, D, 1, 1, A) : NB(L, D, 1, 0, A); \
        else det ? NB(L, D, 0, 1, A) : NB(L, D, 0, 0, A);      \
    } while (0)
#define NB_SG(L, D)                \
    do {                           \
        if (at) NB_RESET(L, D, 1); \
        else NB_RESET(L, D, 0);    \
    } while (0)
    if (!lif) NB_SG(0, 0);
    else if (dec) NB_SG(1, 1);
    else NB_SG(1, 0);
#undef NB_SG
#undef NB_RESET
#undef NB
}

REMAT_ELEM_CLONES(neuron_bwd_f32,
                  (float *dx, float *gv, const float *ds, const float *h, int lif, int dec, int soft, int det, int at,
                   float alpha, float vth, float vr, float tau, int64_t t_steps, int64_t nf, int64_t lo, int64_t hi),
                  (dx, gv, ds, h, lif, dec, soft, det, at, alpha, vth, vr, tau, t_steps, nf, lo, hi),
                  neuron_bwd_opts(dx, gv, ds, h, 0, lif, dec, soft, det, at, alpha, vth, vr, tau, t_steps, nf, lo, hi))
REMAT_ELEM_CLONES(neuron_bwd_bf16,
                  (uint16_t *dx, float *gv, const uint16_t *ds, const float *h, int lif, int dec, int soft, int det,
                   int at, float alpha, float vth, float vr, float tau, int64_t t_steps, int64_t nf, int64_t lo,
                   int64_t hi),
                  (dx, gv, ds, h, lif, dec, soft, det, at, alpha, vth, vr, tau, t_steps, nf, lo, hi),
                  neuron_bwd_opts(dx, gv, ds, h, 1, lif, dec, soft, det, at, alpha, vth, vr, tau, t_steps, nf, lo, hi))

static void neuron_bwd_part(void *ctx, int64_t lo, int64_t hi) {
    const neuron_call *c = ctx;
    if (c->b16)
        neuron_bwd_bf16(c->dx, c->gv, c->in, c->hs, c->lif, c->dec, c->soft, c->det, c->at, c->alpha, c->vth, c->vr,
                        c->tau, c->t_steps, c->nf, lo, hi);
    else
        neuron_bwd_f32(c->dx, c->gv, c->in, c->hs, c->lif, c->dec, c->soft, c->det, c->at, c->alpha, c->vth, c->vr,
                       c->tau, c->t_steps, c->nf, lo, hi);
}

static void neuron_backward(void *dx, float *gv, const void *dspikes, const float *h, remat_layer_type type,
                            const remat_neuron_opts *o, int64_t t_steps, int64_t nf, int b16) {
    neuron_call c = {0};
    c.dx = dx, c.gv = gv, c.in = dspikes, c.hs = h, c.b16 = b16;
    c.lif = type == REMAT_LAYER_LIF, c.soft = o->soft_reset != 0, c.det = o->detach_reset != 0;
    c.dec = c.lif && o->decay_input != 0, c.at = o->surrogate == REMAT_SURROGATE_ATAN;
    c.vth = o->v_threshold, c.vr = c.soft ? 0.0f : o->v_reset, c.tau = o->tau, c.alpha = o->alpha;
    c.t_steps = t_steps, c.nf = nf;
    remat_ref_parallel_for(nf, 64, NEURON_MIN_PER_THREAD, neuron_bwd_part, &c);
}

void remat_ref_neuron_backward(float *dx, float *gv, const float *dspikes, const float *h, remat_layer_type type,
                               const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    neuron_backward(dx, gv, dspikes, h, type, o, t_steps, nf, 0);
}

void remat_ref_neuron_backward_bf16(uint16_t *dx, float *gv, const uint16_t *dspikes, const float *h,
                                    remat_layer_type type, const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    neuron_backward(dx, gv, dspikes, h, type, o, t_steps, nf, 1);
}
