/* linear.c - the reference linear layer: y = x W^T + b per row (semantics.md).
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

void remat_ref_linear_forward(float *out, const float *inp, const float *weight, const float *bias, int64_t rows,
                              int64_t in, int64_t out_f) {
    if (bias) {
        for (int64_t r = 0; r < rows; r++) memcpy(out + r * out_f, bias, (size_t)out_f * sizeof(float));
        remat_ref_gemm_nt(out, inp, weight, rows, out_f, in, 1);
    } else {
        remat_ref_gemm_nt(out, inp, weight, rows, out_f, in, 0);
    }
}

int64_t remat_ref_linear_scratch_elems(int64_t in, int64_t out_f) { return out_f * in + out_f; }

void remat_ref_linear_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                               const float *weight, float *scratch, int64_t t_steps, int64_t N, int64_t in,
                               int64_t out_f) {
    if (dinp) remat_ref_gemm_nn(dinp, dout, weight, t_steps * N, in, out_f, 1);
    float *restrict pw = scratch;
    float *restrict pb = scratch + out_f * in;
    for (int64_t t = t_steps - 1; t >= 0; t--) {
        const float *dt = dout + t * N * out_f;
        if (dweight) {
            /* P_t = dout_t^T inp_t, then dweight += P_t (descending t). */
            remat_ref_gemm_tn(pw, dt, inp + t * N * in, out_f, in, N, 0);
            float *restrict dw = dweight;
            for (int64_t e = 0; e < out_f * in; e++) dw[e] = dw[e] + pw[e];
        }
        if (dbias) {
            for (int64_t o = 0; o < out_f; o++) pb[o] = 0.0f;
            for (int64_t n = 0; n < N; n++) {
                const float *restrict row = dt + n * out_f;
                for (int64_t o = 0; o < out_f; o++) pb[o] = pb[o] + row[o];
            }
            float *restrict db = dbias;
            for (int64_t o = 0; o < out_f; o++) db[o] = db[o] + pb[o];
        }
    }
}
