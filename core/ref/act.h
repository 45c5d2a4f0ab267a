/* act.h - element access to activations in either storage type, for the reference
 * kernels (core/ref/). Internal to core/ref.
 *
 * An fp32 model stores activations as float; a bf16 model (docs/precision.md) stores
 * them as bfloat16 bit patterns (uint16_t). Each kernel that touches activations is
 * written once, as an always-inline body taking `const int b16` and void pointers,
 * and compiled twice: remat_ref_<name> (b16 = 0, the float signature) and
 * remat_ref_<name>_bf16 (b16 = 1, uint16_t activations). Loads widen exactly; a store
 * rounds to nearest even (core/base/bf16.h), so every store of a bf16 kernel is a
 * storage point. Arithmetic is in float (or double where the fp32 kernel uses it) in
 * both, so a bf16 kernel computes exactly what the fp32 kernel computes on the widened
 * inputs, rounded once per element when it is stored.
 */
#ifndef REMAT_REF_ACT_H
#define REMAT_REF_ACT_H

#include <stdint.h>

#include "core/base/bf16.h"

#define REMAT_ACT_INLINE static inline __attribute__((always_inline))

/* Bytes per element. */
REMAT_ACT_INLINE int64_t act_size(const int b16) { return b16 ? 2 : 4; }

/* Element i of p, widened to float. */
REMAT_ACT_INLINE float act_ld(const void *p, int64_t i, const int b16) {
    return b16 ? remat_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

/* Stores v as element i of p (rounded to bf16 when b16). */
REMAT_ACT_INLINE void act_st(void *p, int64_t i, float v, const int b16) {
    if (b16) ((uint16_t *)p)[i] = remat_f32_to_bf16(v);
    else ((float *)p)[i] = v;
}

/* p advanced by i elements (NULL stays NULL). */
REMAT_ACT_INLINE void *act_at(void *p, int64_t i, const int b16) { return p ? (char *)p + i * act_size(b16) : NULL; }
REMAT_ACT_INLINE const void *act_cat(const void *p, int64_t i, const int b16) {
    return p ? (const char *)p + i * act_size(b16) : NULL;
}

#endif
