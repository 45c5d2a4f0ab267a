/* bf16.h - bfloat16 conversions, written once for the CPU reference (core/ref/) and the
 * CUDA kernels. C and C++; host and device (REMAT_BF16_FN). Spec: docs/precision.md.
 *
 * bfloat16 is the upper half of an IEEE binary32: sign, the same 8 exponent bits, 7
 * mantissa bits. So widening is exact (the 16 bits shifted up), and every bf16 value
 * is an fp32 value.
 *
 * remat_f32_to_bf16: round to nearest, ties to even, on the bit pattern: add 0x7fff
 * plus the lowest kept bit and truncate. This is exact IEEE rounding for every finite
 * input, subnormals included (bf16 has fp32's exponent range, so a subnormal rounds in
 * its mantissa like any other number), and a finite value at or above the midpoint
 * between the largest finite bf16 (0x7f7f = 3.3895314e38) and 2^128 carries into the
 * exponent and becomes infinity, as IEEE rounding says. Infinities stay infinities.
 * NaN stays NaN: the sign and the top 7 payload bits are kept and the quiet bit
 * (0x0040) is set, so a signalling NaN whose payload lies only in the dropped bits
 * cannot turn into an infinity.
 *
 * remat_bf16_round: the fp32 nearest to x that is a bf16 (f32 -> bf16 -> f32): what a
 * bf16 store and a later load give (the tests' model of a storage point).
 */
#ifndef REMAT_BF16_H
#define REMAT_BF16_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define REMAT_BF16_FN __host__ __device__ __forceinline__
#else
#define REMAT_BF16_FN static inline __attribute__((always_inline))
#endif

REMAT_BF16_FN uint32_t remat_f32_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

REMAT_BF16_FN float remat_f32_from_bits(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

REMAT_BF16_FN uint16_t remat_f32_to_bf16(float x) {
    uint32_t u = remat_f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* NaN: quiet, sign kept */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

REMAT_BF16_FN float remat_bf16_to_f32(uint16_t b) { return remat_f32_from_bits((uint32_t)b << 16); }

REMAT_BF16_FN float remat_bf16_round(float x) { return remat_bf16_to_f32(remat_f32_to_bf16(x)); }

#endif
