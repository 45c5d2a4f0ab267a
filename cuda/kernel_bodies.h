/* kernel_bodies.h - the per-element arithmetic of the CUDA kernels, written once for
 * host and device (REMAT_HOSTDEV, core/base/rng.h). The kernels in the cuda/ .cu files call these and
 * add only the thread mapping; tests/cuda_test.cc compiles the same functions on the
 * host and checks them bit for bit against the reference kernels (core/ref/neuron.c, plif.c, batchnorm.c, elementwise.c, loss.c, optim.c), which checks the
 * arithmetic even on a machine without a GPU.
 *
 * Every expression is written in the order of the reference kernels (which follows
 * docs/determinism.md). Both sides compile without contraction (-ffp-contract=off on the
 * host, nvcc --fmad=false on the device), division and sqrt are IEEE-rounded on both
 * (nvcc's defaults -prec-div=true -prec-sqrt=true, no -use_fast_math), and the only
 * transcendental on the neuron path is the reference's own polynomial e^x, shared
 * through core/ref/neuron_math.h: so these bodies give the reference's bits on either side. fmaf is the single
 * rounding fused multiply-add on both.
 *
 * C++ only (templates): included by .cu files and by C++ tests.
 */
#ifndef REMAT_CUDA_KERNEL_BODIES_H
#define REMAT_CUDA_KERNEL_BODIES_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/base/bf16.h"
#include "core/base/rng.h"
#include "core/ref/neuron_math.h"

namespace remat_cuda {

/* ---- activation storage (core/ref/act.h): float, or bf16 patterns (uint16_t) ----
 * The bodies below that touch activations are templates over their element type T;
 * loads widen exactly and stores round to nearest even, as the reference's twins. */
REMAT_HOSTDEV float act_ld(const float *p, int64_t i) { return p[i]; }
REMAT_HOSTDEV float act_ld(const uint16_t *p, int64_t i) { return remat_bf16_to_f32(p[i]); }
REMAT_HOSTDEV void act_st(float *p, int64_t i, float v) { p[i] = v; }
REMAT_HOSTDEV void act_st(uint16_t *p, int64_t i, float v) { p[i] = remat_f32_to_bf16(v); }

/* Bit pattern of a float (no aliasing problem on either side). */
REMAT_HOSTDEV uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
    return (uint32_t)__float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
#endif
}

REMAT_HOSTDEV float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#endif
}

/* ---- neurons (core/ref/neuron_math.h: exp_poly, surrogate; core/ref/neuron.c: neuron_fwd, neuron_bwd) ---- */

/* e^x and the surrogates: core/ref/neuron_math.h, the one copy host and device share. */
REMAT_HOSTDEV float exp_poly(float x) { return remat_exp_poly(x); }
REMAT_HOSTDEV float surrogate(float u, int atan_sg, float alpha) { return remat_surrogate_grad(u, atan_sg, alpha); }

/* The neuron options as the kernels take them (v_reset already 0 under soft reset). */
struct neuron_params {
    float vth, vr, tau, alpha;
    int lif, decay_input, soft, detach, atan_sg;
};

/* One element i over t_steps: x, spikes, h indexed t*nf + i; v is the element's state. */
template <typename T>
REMAT_HOSTDEV void neuron_forward_elem(T *spikes, float *h, float *v, const T *x, const neuron_params &q,
                                       int64_t t_steps, int64_t nf, int64_t i) {
    float vv = v[i];
    for (int64_t t = 0; t < t_steps; t++) {
        const int64_t off = t * nf + i;
        const float xx = act_ld(x, off);
        float hh;
        if (!q.lif) hh = vv + xx;
        else if (q.decay_input) hh = vv + (xx - (vv - q.vr)) / q.tau;
        else hh = vv - (vv - q.vr) / q.tau + xx;
        const float s = (hh - q.vth >= 0.0f) ? 1.0f : 0.0f;
        vv = q.soft ? hh - s * q.vth : hh * (1.0f - s) + q.vr * s;
        act_st(spikes, off, s);
        if (h) h[off] = hh;
    }
    v[i] = vv;
}

template <typename T>
REMAT_HOSTDEV void neuron_backward_elem(T *dx, float *gv, const T *ds, const float *h, const neuron_params &q,
                                        int64_t t_steps, int64_t nf, int64_t i) {
    const float decay = 1.0f - 1.0f / q.tau;
    float g = gv[i];
    for (int64_t t = t_steps - 1; t >= 0; t--) {
        const int64_t off = t * nf + i;
        const float hh = h[off], gs = act_ld(ds, off);
        const float u = hh - q.vth;
        const float s = (u >= 0.0f) ? 1.0f : 0.0f;
        const float sg = surrogate(u, q.atan_sg, q.alpha);
        const float gh = remat_neuron_grad_h(gs, g, hh, s, sg, q.vth, q.vr, q.soft, q.detach);
        if (!q.lif) {
            act_st(dx, off, act_ld(dx, off) + gh);
            g = gh;
        } else {
            act_st(dx, off, act_ld(dx, off) + (q.decay_input ? gh / q.tau : gh));
            g = gh * decay;
        }
    }
    gv[i] = g;
}

/* ---- plif (core/ref/plif.c: the contract; neuron_math.h: the charge; plif_bwd_part) ---- */

/* k = sigmoid(w), the charge's four forms; q.tau is unused (k comes from w). */
REMAT_HOSTDEV float plif_k(float w) { return 1.0f / (1.0f + exp_poly(-w)); }

REMAT_HOSTDEV float plif_charge(float vv, float xx, float k, const neuron_params &q) {
    return remat_plif_charge(vv, xx, k, q.decay_input, q.vr == 0.0f, q.vr);
}

/* One element i over t_steps: vp (the state each step starts from; may be NULL). */
template <typename T>
REMAT_HOSTDEV void plif_forward_elem(T *spikes, float *vp, float *v, const T *x, float k, const neuron_params &q,
                                     int64_t t_steps, int64_t nf, int64_t i) {
    float vv = v[i];
    for (int64_t t = 0; t < t_steps; t++) {
        const int64_t off = t * nf + i;
        const float hh = plif_charge(vv, act_ld(x, off), k, q);
        const float s = (hh - q.vth >= 0.0f) ? 1.0f : 0.0f;
        if (vp) vp[off] = vv;
        vv = q.soft ? hh - s * q.vth : hh * (1.0f - s) + q.vr * s;
        act_st(spikes, off, s);
    }
    v[i] = vv;
}

/* Sample n's F elements over t descending: dx, gv, and rows[t * N + n] (the row's sum
 * of gh * dh/dk over f ascending, in double). */
template <typename T>
REMAT_HOSTDEV void plif_backward_row(T *dx, float *gv, double *rows, const T *ds, const float *vp, const T *x, float k,
                                     const neuron_params &q, int64_t t_steps, int64_t N, int64_t F, int64_t n) {
    const int64_t nf = N * F;
    const int vr0 = q.vr == 0.0f;
    for (int64_t t = t_steps - 1; t >= 0; t--) {
        double r = 0.0;
        for (int64_t f = 0; f < F; f++) {
            const int64_t i = n * F + f, off = t * nf + i;
            const float vv = vp[off], xx = act_ld(x, off), gs = act_ld(ds, off), g = gv[i];
            const float hh = plif_charge(vv, xx, k, q);
            const float u = hh - q.vth;
            const float s = (u >= 0.0f) ? 1.0f : 0.0f;
            const float sg = surrogate(u, q.atan_sg, q.alpha);
            const float gh = remat_neuron_grad_h(gs, g, hh, s, sg, q.vth, q.vr, q.soft, q.detach);
            act_st(dx, off, act_ld(dx, off) + (q.decay_input ? gh * k : gh));
            gv[i] = gh * (1.0f - k);
            const float rel = vr0 ? vv : vv - q.vr;
            const float dhdk = q.decay_input ? xx - rel : -rel;
            r += (double)(gh * dhdk);
        }
        rows[t * N + n] = r;
    }
}

/* Block b's partial of dw: for t descending, the block's rows summed ascending. */
REMAT_HOSTDEV void plif_wgrad_block(float *dw, const double *rows, float k, int64_t t_steps, int64_t N, int64_t nblk,
                                    int64_t b) {
    const double kk = (double)(k * (1.0f - k));
    const int64_t bs = N / nblk;
    for (int64_t t = t_steps - 1; t >= 0; t--) {
        double p = 0.0;
        for (int64_t n = b * bs; n < (b + 1) * bs; n++) p += rows[t * N + n];
        dw[b] = dw[b] + (float)(p * kk);
    }
}

/* ---- GEMM: the reference's per-element chain (gemm.c) ---- */

/* c = (accumulate ? c0 : +0) then c = fmaf(A(i,k), B(k,j), c) for k ascending. */
REMAT_HOSTDEV float gemm_chain(const float *a, int64_t a_cs, const float *b, int64_t b_rs, int64_t K, float c) {
    for (int64_t k = 0; k < K; k++) c = fmaf(a[k * a_cs], b[k * b_rs], c);
    return c;
}

/* ---- dropout ---- */

REMAT_HOSTDEV float dropout_mask_value(uint64_t seed, uint64_t key, float p, float scale, int64_t i) {
    const float u = remat_rng_uniform(seed, REMAT_RNG_DROPOUT, key, (uint64_t)i);
    return u >= p ? scale : 0.0f;
}

/* ---- batch norm: one channel c, rows ascending, in double (core/ref/batchnorm.c) ---- */

struct bn_stats {
    float mean, rstd;
    double unbiased, var;
};

/* Statistics of channel c of [rows, C, hw]: positions (r, p) ascending, in double;
 * rstd = 1/sqrt(var + eps). */
template <typename T>
REMAT_HOSTDEV bn_stats batchnorm_channel_stats(const T *inp, int64_t rows, int64_t C, int64_t hw, int64_t c,
                                               double eps) {
    double sum = 0.0, sq = 0.0;
    const int64_t n = rows * hw;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t p = 0; p < hw; p++) sum += (double)act_ld(inp, (r * C + c) * hw + p);
    const double mu = n > 0 ? sum / (double)n : 0.0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t p = 0; p < hw; p++) {
            const double d = (double)act_ld(inp, (r * C + c) * hw + p) - mu;
            sq += d * d;
        }
    bn_stats s;
    s.var = n > 0 ? sq / (double)n : 0.0;
    s.mean = (float)mu;
    s.rstd = (float)(1.0 / sqrt(s.var + eps));
    s.unbiased = n > 1 ? sq / (double)(n - 1) : s.var;
    return s;
}

REMAT_HOSTDEV float batchnorm_out(float x, float m, float rs, float w, float b) { return (x - m) * rs * w + b; }

/* A running statistic after one step: (1 - momentum) * running + momentum * value. */
REMAT_HOSTDEV float batchnorm_running(float running, float value, float momentum) {
    return (1.0f - momentum) * running + momentum * value;
}

/* sdy, sdyx of one channel (positions (r, p) ascending, double). */
template <typename T>
REMAT_HOSTDEV void batchnorm_channel_grads(const T *dout, const T *inp, float m, float rs, int64_t rows, int64_t C,
                                           int64_t hw, int64_t c, double *sdy_out, double *sdyx_out) {
    double sdy = 0.0, sdyx = 0.0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t p = 0; p < hw; p++) {
            const int64_t e = (r * C + c) * hw + p;
            const float x = act_ld(inp, e), dy = act_ld(dout, e);
            const float xhat = (x - m) * rs;
            sdy += (double)dy;
            sdyx += (double)dy * (double)xhat;
        }
    *sdy_out = sdy;
    *sdyx_out = sdyx;
}

REMAT_HOSTDEV float batchnorm_dinp(float dx, float x, float dy, float m, float rs, float mdy, float mdyx, float k) {
    const float xhat = (x - m) * rs;
    return dx + (dy - mdy - xhat * mdyx) * k;
}

/* ---- losses ---- */

/* rate[e] = (sum over t ascending of out[t*NK + e]) / T, in float. */
template <typename A>
REMAT_HOSTDEV float rate_elem(const A *out, int64_t T, int64_t NK, int64_t e) {
    float r = 0.0f;
    for (int64_t t = 0; t < T; t++) r = r + act_ld(out, t * NK + e);
    return r / (float)T;
}

/* Row statistics of softmax(rate_n): the maximum and sum of e^(r - max), k ascending. */
REMAT_HOSTDEV void ce_row(const float *r, int64_t K, double *mx_out, double *se_out) {
    double mx = -INFINITY, se = 0.0;
    for (int64_t k = 0; k < K; k++)
        if ((double)r[k] > mx) mx = (double)r[k];
    for (int64_t k = 0; k < K; k++) se += exp((double)r[k] - mx);
    *mx_out = mx;
    *se_out = se;
}

/* The cross-entropy term of sample n (before the sum over n). */
REMAT_HOSTDEV double ce_term(const float *r, int32_t y, int64_t K) {
    double mx, se;
    ce_row(r, K, &mx, &se);
    const int ok = y >= 0 && (int64_t)y < K;
    return mx + log(se) - (ok ? (double)r[y] : 0.0);
}

/* dL/dout of element (n, k) divided by T, as the reference rounds it. */
REMAT_HOSTDEV float loss_grad(int mse, float r, int onehot_hit, double mx, double se, int64_t N, int64_t K,
                              int64_t T) {
    const double onehot = onehot_hit ? 1.0 : 0.0;
    double g;
    if (mse) g = 2.0 * ((double)r - onehot) / ((double)N * (double)K);
    else g = (exp((double)r - mx) / se - onehot) / (double)N;
    return (float)(g / (double)T);
}

/* ---- optimisers ---- */

REMAT_HOSTDEV void adam_elem(float *p, float *m, float *v, float g, float beta1, float beta2, float om1, float om2,
                             float step_size, float bc2_sqrt, float eps) {
    *m = *m * beta1 + om1 * g;
    *v = *v * beta2 + om2 * (g * g);
    const float denom = sqrtf(*v) / bc2_sqrt + eps;
    *p = *p - step_size * (*m / denom);
}

/* ---- compressors (compress.c) ---- */

#define REMAT_CUDA_BITS_ZERO 0x00000000u
#define REMAT_CUDA_BITS_ONE 0x3f800000u

REMAT_HOSTDEV int is_binary(float f) {
    const uint32_t u = float_bits(f);
    return u == REMAT_CUDA_BITS_ZERO || u == REMAT_CUDA_BITS_ONE;
}

REMAT_HOSTDEV int is_one(float f) { return float_bits(f) == REMAT_CUDA_BITS_ONE; }

REMAT_HOSTDEV int is_uint8_value(float f) {
    if (float_bits(f) == REMAT_CUDA_BITS_ZERO) return 1;
    if (!(f >= 1.0f && f <= 255.0f)) return 0;
    return (float)(int)f == f;
}

/* Byte b of the bit encoding of src[0..n). */
template <typename T>
REMAT_HOSTDEV uint8_t bit_pack_byte(const T *src, int64_t n, int64_t b) {
    uint32_t byte = 0;
    for (int j = 0; j < 8 && b * 8 + j < n; j++) byte |= (uint32_t)is_one(act_ld(src, b * 8 + j)) << j;
    return (uint8_t)byte;
}

} /* namespace remat_cuda */

#endif
