/* precision.c - the reference bf16 storage rounding (docs/precision.md). */
#include "core/ref/ref_kernels.h"

#include "core/base/bf16.h"

void remat_ref_bf16_round(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = remat_bf16_round(x[i]);
}
