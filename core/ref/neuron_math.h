/* neuron_math.h - the neuron arithmetic that is not a plain formula of docs/determinism.md,
 * written once for the CPU reference (core/ref/neuron.c) and the CUDA kernels
 * (cuda/kernel_bodies.h, cuda/neuron.cu): the polynomial e^x and the surrogate
 * gradients. C and C++; host and device (REMAT_NEURON_FN).
 *
 * remat_exp_poly: e^x by Cody-Waite reduction x = k ln2 + r, a degree-7 polynomial for
 * e^r (Cephes expf coefficients; max relative error 8.2e-8 over [-87, 88] against
 * double exp), and the 2^k scale built in the exponent bits. The argument is clamped
 * to [-87, 88] (which also maps NaN to -87). It vectorises on the host and gives the
 * same bits in every lane and on the device, as both sides compile without
 * contraction (-ffp-contract=off, nvcc --fmad=false).
 *
 * remat_surrogate_grad: sg(u) of docs/determinism.md, sigmoid (alpha * s * (1 - s) with
 * s = 1 / (1 + e^-(alpha u))) or atan ((alpha / 2) / (1 + (pi/2 alpha u)^2)).
 *
 * remat_neuron_grad_h: dL/dh from dL/ds, the carried dL/dv and the surrogate, with the
 * reset's term (the plif kernels, host and device).
 *
 * remat_plif_charge: the plif neuron's charge h from the state v and the input x with
 * k = sigmoid(w), its four forms (core/ref/plif.c's contract); the reference forward
 * (core/ref/neuron.c) and backward's recomputation (core/ref/plif.c) both call it.
 */
#ifndef REMAT_NEURON_MATH_H
#define REMAT_NEURON_MATH_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define REMAT_NEURON_FN __host__ __device__ __forceinline__
#else
#define REMAT_NEURON_FN static inline __attribute__((always_inline))
#endif

/* c ? a : b. On the host it is built from the bits: the same value, but GCC cannot
 * specialise the code after it for a constant arm (with the plain select it folds the
 * whole polynomial for x = -87 into a second branch, and under the default
 * -ftrapping-math it may not if-convert that back, so the loop would not vectorise). */
REMAT_NEURON_FN float remat_neuron_select(int c, float a, float b) {
#if defined(__CUDA_ARCH__)
    return c ? a : b;
#else
    uint32_t ua, ub;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    const uint32_t m = 0u - (uint32_t)(c != 0);
    const uint32_t r = (ua & m) | (ub & ~m);
    float f;
    memcpy(&f, &r, sizeof f);
    return f;
#endif
}

REMAT_NEURON_FN float remat_exp_poly(float x) {
    x = remat_neuron_select(x > -87.0f, x, -87.0f);
    x = remat_neuron_select(x < 88.0f, x, 88.0f);
    /* k = round(x / ln2), ties to even: adding and removing 1.5 * 2^23 rounds to the
     * nearest integer (floorf would not vectorise under the default -ftrapping-math). */
    const float kf = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = x - kf * 0.693359375f;
    r = r - kf * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
#if defined(__CUDA_ARCH__)
    return p * __int_as_float(((int32_t)kf + 127) << 23);
#else
    union { int32_t i; float f; } scale;
    scale.i = ((int32_t)kf + 127) << 23;
    return p * scale.f;
#endif
}

REMAT_NEURON_FN float remat_surrogate_grad(float u, int atan_sg, float alpha) {
    if (atan_sg) {
        const float w = (1.57079632679489662f * alpha) * u;
        return (alpha / 2.0f) / (1.0f + w * w);
    }
    const float sig = 1.0f / (1.0f + remat_exp_poly(-(alpha * u)));
    return alpha * sig * (1.0f - sig);
}

/* dL/dh of one neuron at one step (docs/determinism.md): gs = dL/ds, g = dL/dv carried from
 * the next step, sg the surrogate at u = h - vth, s the spike; the reset's gradient kept
 * unless detach. Every neuron backward calls this: if/lif and plif on the host
 * (core/ref/neuron.c, plif.c) and on the device (cuda/kernel_bodies.h); with constant soft
 * and detach it inlines to one branch-free expression. */
REMAT_NEURON_FN float remat_neuron_grad_h(float gs, float g, float hh, float s, float sg, float vth, float vr, int soft,
                                          int detach) {
    if (!soft && !detach) return (gs + g * (vr - hh)) * sg + g * (1.0f - s);
    if (!soft) return gs * sg + g * (1.0f - s);
    if (!detach) return (gs - vth * g) * sg + g;
    return gs * sg + g;
}

REMAT_NEURON_FN float remat_plif_charge(float vv, float xx, float k, int dec, int vr0, float vr) {
    if (dec) return vr0 ? vv + (xx - vv) * k : vv + (xx - (vv - vr)) * k;
    return vr0 ? vv * (1.0f - k) + xx : vv - (vv - vr) * k + xx;
}

#endif
