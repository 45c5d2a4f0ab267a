/* linear.c - the reference linear layer: y = x W^T + b per row (docs/determinism.md).
 *
 * Fixed choices (cuda/linear.cu mirrors them): the output chain of each element
 * starts from the bias (or +0 without one) and continues over `in` in ascending
 * order (remat_ref_gemm_nt, accumulate = 1); the weight gradient of one time step
 * P_t = dout_t^T inp_t is added into dweight in descending t; the bias gradient of
 * one time step is summed over its N rows in ascending order from +0, in float.
 */
#include "core/ref/ref_kernels.h"

#include <math.h>
#include <string.h>

#include "core/ref/act.h"
#include "core/ref/gemm_kernel.h"

/* The body of both storage types (act.h): activations, weight and bias stored as
 * float or bf16; dweight, dbias and scratch float. */
REMAT_ACT_INLINE void linear_forward(void *out, const void *inp, const void *weight, const void *bias, int64_t rows,
                                     int64_t in, int64_t out_f, const int b16) {
    if (bias)
        for (int64_t r = 0; r < rows; r++)
            memcpy(act_at(out, r * out_f, b16), bias, (size_t)(out_f * act_size(b16)));
    remat_gemm_typed(REMAT_GEMM_NT, out, b16, inp, b16, weight, b16, rows, out_f, in, bias ? 1 : 0);
}

REMAT_ACT_INLINE void linear_backward(void *dinp, float *dweight, float *dbias, const void *dout, const void *inp,
                                      const void *weight, float *scratch, int64_t t_steps, int64_t N, int64_t in,
                                      int64_t out_f, const int b16) {
    if (dinp) remat_gemm_typed(REMAT_GEMM_NN, dinp, b16, dout, b16, weight, b16, t_steps * N, in, out_f, 1);
    float *restrict pw = scratch;
    float *restrict pb = scratch + out_f * in;
    for (int64_t t = t_steps - 1; t >= 0; t--) {
        const void *dt = act_cat(dout, t * N * out_f, b16);
        if (dweight) {
            /* P_t = dout_t^T inp_t, then dweight += P_t (descending t). */
            remat_gemm_typed(REMAT_GEMM_TN, pw, 0, dt, b16, act_cat(inp, t * N * in, b16), b16, out_f, in, N, 0);
            float *restrict dw = dweight;
            for (int64_t e = 0; e < out_f * in; e++) dw[e] = dw[e] + pw[e];
        }
        if (dbias) {
            for (int64_t o = 0; o < out_f; o++) pb[o] = 0.0f;
            for (int64_t n = 0; n < N; n++)
                for (int64_t o = 0; o < out_f; o++) pb[o] = pb[o] + act_ld(dt, n * out_f + o, b16);
            float *restrict db = dbias;
            for (int64_t o = 0; o < out_f; o++) db[o] = db[o] + pb[o];
        }
    }
}

int64_t remat_ref_linear_scratch_elems(int64_t in, int64_t out_f) { return out_f * in + out_f; }

void remat_ref_linear_forward(float *out, const float *inp, const float *weight, const float *bias, int64_t rows,
                              int64_t in, int64_t out_f) {
    linear_forward(out, inp, weight, bias, rows, in, out_f, 0);
}

void remat_ref_linear_forward_bf16(uint16_t *out, const uint16_t *inp, const uint16_t *weight, const uint16_t *bias,
                                   int64_t rows, int64_t in, int64_t out_f) {
    linear_forward(out, inp, weight, bias, rows, in, out_f, 1);
}

void remat_ref_linear_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                               const float *weight, float *scratch, int64_t t_steps, int64_t N, int64_t in,
                               int64_t out_f) {
    linear_backward(dinp, dweight, dbias, dout, inp, weight, scratch, t_steps, N, in, out_f, 0);
}

void remat_ref_linear_backward_bf16(uint16_t *dinp, float *dweight, float *dbias, const uint16_t *dout,
                                    const uint16_t *inp, const uint16_t *weight, float *scratch, int64_t t_steps,
                                    int64_t N, int64_t in, int64_t out_f) {
    linear_backward(dinp, dweight, dbias, dout, inp, weight, scratch, t_steps, N, in, out_f, 1);
}
