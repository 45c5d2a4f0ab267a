/* conv.c - the reference conv2d: cross-correlation with zero padding, as PyTorch
 * Conv2d (no dilation, no groups), by im2col and the deterministic GEMMs (gemm.c).
 *
 * Fixed choices (cuda/conv.cu mirrors them; ref_kernels.h states the contract):
 *  - the column matrix of one sample is col[k][p] with k = (ci * kh + ky) * kw + kx
 *    and p = oy * w_out + ox; padded positions are +0;
 *  - forward: out_n[c_out, P] starts from the bias (or +0) and continues with
 *    remat_ref_gemm_nn(W[c_out, K], col[K, P]): one fma chain over k ascending, so a
 *    time chunk gives the rows the full call gives;
 *  - input gradient: dcol = W^T dout_n (remat_ref_gemm_tn, chain over c_out from +0),
 *    then col2im adds dcol into dinp in (k, p) order;
 *  - weight gradient: P_t = sum over the step's samples n = 0 .. N-1 of
 *    dout_n col_n^T, one chain over (n, p) (remat_ref_gemm_nt, accumulating from the
 *    second sample), then dweight += P_t in descending t; the bias gradient of a step
 *    is summed over (n, p) ascending from +0, then added in descending t.
 * Memory: the workspace (one sample's col, dcol, P_t, the bias partial) is the
 * caller's, so the executor counts it as an allocation of the step.
 */
#include <string.h>

#include "core/ref/ref_kernels.h"

static int64_t conv_k(const remat_conv_geom *g) { return g->c_in * g->kh * g->kw; }
static int64_t conv_p(const remat_conv_geom *g) { return g->h_out * g->w_out; }

int64_t remat_ref_conv2d_forward_ws_elems(const remat_conv_geom *g) { return conv_k(g) * conv_p(g); }

int64_t remat_ref_conv2d_backward_ws_elems(const remat_conv_geom *g) {
    return 2 * conv_k(g) * conv_p(g) + g->c_out * conv_k(g) + g->c_out;
}

void remat_ref_im2col(float *restrict col, const float *restrict x, const remat_conv_geom *g) {
    const int64_t P = conv_p(g);
    for (int64_t ci = 0; ci < g->c_in; ci++)
        for (int64_t ky = 0; ky < g->kh; ky++)
            for (int64_t kx = 0; kx < g->kw; kx++) {
                float *restrict row = col + ((ci * g->kh + ky) * g->kw + kx) * P;
                const float *restrict plane = x + ci * g->h_in * g->w_in;
                for (int64_t oy = 0; oy < g->h_out; oy++) {
                    const int64_t iy = oy * g->sh - g->ph + ky;
                    float *restrict r = row + oy * g->w_out;
                    if (iy < 0 || iy >= g->h_in) {
                        for (int64_t ox = 0; ox < g->w_out; ox++) r[ox] = 0.0f;
                        continue;
                    }
                    const float *restrict src = plane + iy * g->w_in;
                    for (int64_t ox = 0; ox < g->w_out; ox++) {
                        const int64_t ix = ox * g->sw - g->pw + kx;
                        r[ox] = (ix >= 0 && ix < g->w_in) ? src[ix] : 0.0f;
                    }
                }
            }
}

void remat_ref_col2im_add(float *restrict dx, const float *restrict dcol, const remat_conv_geom *g) {
    const int64_t P = conv_p(g);
    for (int64_t ci = 0; ci < g->c_in; ci++)
        for (int64_t ky = 0; ky < g->kh; ky++)
            for (int64_t kx = 0; kx < g->kw; kx++) {
                const float *restrict row = dcol + ((ci * g->kh + ky) * g->kw + kx) * P;
                float *restrict plane = dx + ci * g->h_in * g->w_in;
                for (int64_t oy = 0; oy < g->h_out; oy++) {
                    const int64_t iy = oy * g->sh - g->ph + ky;
                    if (iy < 0 || iy >= g->h_in) continue;
                    float *restrict dst = plane + iy * g->w_in;
                    const float *restrict r = row + oy * g->w_out;
                    for (int64_t ox = 0; ox < g->w_out; ox++) {
                        const int64_t ix = ox * g->sw - g->pw + kx;
                        if (ix >= 0 && ix < g->w_in) dst[ix] = dst[ix] + r[ox];
                    }
                }
            }
}

void remat_ref_conv2d_forward(float *out, const float *inp, const float *weight, const float *bias, float *ws,
                              int64_t rows, const remat_conv_geom *g) {
    const int64_t K = conv_k(g), P = conv_p(g);
    const int64_t in_elems = g->c_in * g->h_in * g->w_in, out_elems = g->c_out * P;
    for (int64_t r = 0; r < rows; r++) {
        float *o = out + r * out_elems;
        if (bias)
            for (int64_t c = 0; c < g->c_out; c++)
                for (int64_t p = 0; p < P; p++) o[c * P + p] = bias[c];
        remat_ref_im2col(ws, inp + r * in_elems, g);
        remat_ref_gemm_nn(o, weight, ws, g->c_out, P, K, bias ? 1 : 0);
    }
}

void remat_ref_conv2d_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                               const float *weight, float *ws, int64_t t_steps, int64_t N, const remat_conv_geom *g) {
    const int64_t K = conv_k(g), P = conv_p(g);
    const int64_t in_elems = g->c_in * g->h_in * g->w_in, out_elems = g->c_out * P;
    float *col = ws, *dcol = ws + K * P, *pw = ws + 2 * K * P, *pb = pw + g->c_out * K;
    for (int64_t t = t_steps - 1; t >= 0; t--) {
        if (dbias)
            for (int64_t c = 0; c < g->c_out; c++) pb[c] = 0.0f;
        for (int64_t n = 0; n < N; n++) {
            const int64_t r = t * N + n;
            const float *dy = dout + r * out_elems;
            if (dweight) {
                remat_ref_im2col(col, inp + r * in_elems, g);
                remat_ref_gemm_nt(pw, dy, col, g->c_out, K, P, n > 0);
            }
            if (dbias)
                for (int64_t c = 0; c < g->c_out; c++) {
                    float s = pb[c];
                    for (int64_t p = 0; p < P; p++) s = s + dy[c * P + p];
                    pb[c] = s;
                }
            if (dinp) {
                remat_ref_gemm_tn(dcol, weight, dy, K, P, g->c_out, 0);
                remat_ref_col2im_add(dinp + r * in_elems, dcol, g);
            }
        }
        if (dweight && N > 0)
            for (int64_t e = 0; e < g->c_out * K; e++) dweight[e] = dweight[e] + pw[e];
        if (dbias)
            for (int64_t c = 0; c < g->c_out; c++) dbias[c] = dbias[c] + pb[c];
    }
}
