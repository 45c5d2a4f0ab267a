/* precision.c - the reference fp32 -> bf16 conversion (docs/precision.md). */
#include "core/ref/ref_kernels.h"

#include "core/base/bf16.h"

void remat_ref_bf16_from_f32(uint16_t *dst, const float *src, int64_t n) {
    for (int64_t i = 0; i < n; i++) dst[i] = remat_f32_to_bf16(src[i]);
}
