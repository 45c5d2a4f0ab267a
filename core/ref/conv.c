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
 * bf16 storage (act.h): the same body; col and dcol stay float (im2col widens), and
 * col2im adds into one input row at a time, widened into a float row on the stack:
 * each input-gradient element receives its contributions in (ky, kx) ascending order -
 * the float scatter's order for that element, since one kernel offset reaches it from
 * at most one output pixel (cuda/conv.cu gathers them in that order) - and is stored
 * rounded once.
 */
#include <string.h>

#include "core/ref/act.h"
#include "core/ref/gemm_kernel.h"
#include "core/ref/ref_kernels.h"

static int64_t conv_k(const remat_conv_geom *g) { return g->c_in * g->kh * g->kw; }
static int64_t conv_p(const remat_conv_geom *g) { return g->h_out * g->w_out; }

int64_t remat_ref_conv2d_forward_ws_elems(const remat_conv_geom *g) { return conv_k(g) * conv_p(g); }

int64_t remat_ref_conv2d_backward_ws_elems(const remat_conv_geom *g) {
    return 2 * conv_k(g) * conv_p(g) + g->c_out * conv_k(g) + g->c_out;
}

REMAT_ACT_INLINE void im2col(float *restrict col, const void *x, const remat_conv_geom *g, const int b16) {
    const int64_t P = conv_p(g);
    for (int64_t ci = 0; ci < g->c_in; ci++)
        for (int64_t ky = 0; ky < g->kh; ky++)
            for (int64_t kx = 0; kx < g->kw; kx++) {
                float *restrict row = col + ((ci * g->kh + ky) * g->kw + kx) * P;
                const void *plane = act_cat(x, ci * g->h_in * g->w_in, b16);
                for (int64_t oy = 0; oy < g->h_out; oy++) {
                    const int64_t iy = oy * g->sh - g->ph + ky;
                    float *restrict r = row + oy * g->w_out;
                    if (iy < 0 || iy >= g->h_in) {
                        for (int64_t ox = 0; ox < g->w_out; ox++) r[ox] = 0.0f;
                        continue;
                    }
                    const void *src = act_cat(plane, iy * g->w_in, b16);
                    for (int64_t ox = 0; ox < g->w_out; ox++) {
                        const int64_t ix = ox * g->sw - g->pw + kx;
                        r[ox] = (ix >= 0 && ix < g->w_in) ? act_ld(src, ix, b16) : 0.0f;
                    }
                }
            }
}

/* The k rows of input channel ci (k = (ci*kh + ky)*kw + kx, ascending) added into that
 * channel's float plane dst, in (k, p) order. */
static void col2im_plane(float *restrict dst, const float *restrict dcol, int64_t ci, const remat_conv_geom *g) {
    const int64_t P = conv_p(g);
    for (int64_t ky = 0; ky < g->kh; ky++)
        for (int64_t kx = 0; kx < g->kw; kx++) {
            const float *restrict row = dcol + ((ci * g->kh + ky) * g->kw + kx) * P;
            for (int64_t oy = 0; oy < g->h_out; oy++) {
                const int64_t iy = oy * g->sh - g->ph + ky;
                if (iy < 0 || iy >= g->h_in) continue;
                float *restrict d = dst + iy * g->w_in;
                const float *restrict r = row + oy * g->w_out;
                for (int64_t ox = 0; ox < g->w_out; ox++) {
                    const int64_t ix = ox * g->sw - g->pw + kx;
                    if (ix >= 0 && ix < g->w_in) d[ix] = d[ix] + r[ox];
                }
            }
        }
}

void remat_ref_im2col(float *restrict col, const float *restrict x, const remat_conv_geom *g) { im2col(col, x, g, 0); }

void remat_ref_col2im_add(float *restrict dx, const float *restrict dcol, const remat_conv_geom *g) {
    for (int64_t ci = 0; ci < g->c_in; ci++) col2im_plane(dx + ci * g->h_in * g->w_in, dcol, ci, g);
}

/* col2im into a bf16 dx: one input row at a time (in pieces of at most COL2IM_ROW_MAX
 * columns), widened into a float buffer on the stack, the k rows of its channel added in
 * (k, p) order as the float scatter adds them, stored rounded once. */
#define COL2IM_ROW_MAX 4096
static void col2im_add_bf16(uint16_t *dx, const float *dcol, const remat_conv_geom *g) {
    const int64_t P = conv_p(g);
    float row[COL2IM_ROW_MAX];
    for (int64_t ci = 0; ci < g->c_in; ci++)
        for (int64_t iy = 0; iy < g->h_in; iy++)
            for (int64_t x0 = 0; x0 < g->w_in; x0 += COL2IM_ROW_MAX) {
                uint16_t *d = dx + (ci * g->h_in + iy) * g->w_in + x0;
                const int64_t nx = g->w_in - x0 < COL2IM_ROW_MAX ? g->w_in - x0 : COL2IM_ROW_MAX;
                for (int64_t ix = 0; ix < nx; ix++) row[ix] = remat_bf16_to_f32(d[ix]);
                for (int64_t ky = 0; ky < g->kh; ky++) {
                    const int64_t ty = iy + g->ph - ky;
                    if (ty < 0 || ty % g->sh != 0 || ty / g->sh >= g->h_out) continue;
                    for (int64_t kx = 0; kx < g->kw; kx++) {
                        const float *r = dcol + ((ci * g->kh + ky) * g->kw + kx) * P + (ty / g->sh) * g->w_out;
                        for (int64_t ox = 0; ox < g->w_out; ox++) {
                            const int64_t ix = ox * g->sw - g->pw + kx - x0;
                            if (ix >= 0 && ix < nx) row[ix] = row[ix] + r[ox];
                        }
                    }
                }
                for (int64_t ix = 0; ix < nx; ix++) d[ix] = remat_f32_to_bf16(row[ix]);
            }
}

REMAT_ACT_INLINE void conv2d_forward(void *out, const void *inp, const void *weight, const void *bias, float *ws,
                                     int64_t rows, const remat_conv_geom *g, const int b16) {
    const int64_t K = conv_k(g), P = conv_p(g);
    const int64_t in_elems = g->c_in * g->h_in * g->w_in, out_elems = g->c_out * P;
    for (int64_t r = 0; r < rows; r++) {
        void *o = act_at(out, r * out_elems, b16);
        if (bias)
            for (int64_t c = 0; c < g->c_out; c++)
                for (int64_t p = 0; p < P; p++) act_st(o, c * P + p, act_ld(bias, c, b16), b16);
        im2col(ws, act_cat(inp, r * in_elems, b16), g, b16);
        remat_gemm_typed(REMAT_GEMM_NN, o, b16, weight, b16, ws, 0, g->c_out, P, K, bias ? 1 : 0);
    }
}

REMAT_ACT_INLINE void conv2d_backward(void *dinp, float *dweight, float *dbias, const void *dout, const void *inp,
                                      const void *weight, float *ws, int64_t t_steps, int64_t N,
                                      const remat_conv_geom *g, const int b16) {
    const int64_t K = conv_k(g), P = conv_p(g);
    const int64_t in_elems = g->c_in * g->h_in * g->w_in, out_elems = g->c_out * P;
    float *col = ws, *dcol = ws + K * P, *pw = ws + 2 * K * P, *pb = pw + g->c_out * K;
    for (int64_t t = t_steps - 1; t >= 0; t--) {
        if (dbias)
            for (int64_t c = 0; c < g->c_out; c++) pb[c] = 0.0f;
        for (int64_t n = 0; n < N; n++) {
            const int64_t r = t * N + n;
            const void *dy = act_cat(dout, r * out_elems, b16);
            if (dweight) {
                im2col(col, act_cat(inp, r * in_elems, b16), g, b16);
                remat_gemm_typed(REMAT_GEMM_NT, pw, 0, dy, b16, col, 0, g->c_out, K, P, n > 0);
            }
            if (dbias)
                for (int64_t c = 0; c < g->c_out; c++) {
                    float s = pb[c];
                    for (int64_t p = 0; p < P; p++) s = s + act_ld(dy, c * P + p, b16);
                    pb[c] = s;
                }
            if (dinp) {
                remat_gemm_typed(REMAT_GEMM_TN, dcol, 0, weight, b16, dy, b16, K, P, g->c_out, 0);
                if (b16) col2im_add_bf16((uint16_t *)dinp + r * in_elems, dcol, g);
                else remat_ref_col2im_add((float *)dinp + r * in_elems, dcol, g);
            }
        }
        if (dweight && N > 0)
            for (int64_t e = 0; e < g->c_out * K; e++) dweight[e] = dweight[e] + pw[e];
        if (dbias)
            for (int64_t c = 0; c < g->c_out; c++) dbias[c] = dbias[c] + pb[c];
    }
}

void remat_ref_conv2d_forward(float *out, const float *inp, const float *weight, const float *bias, float *ws,
                              int64_t rows, const remat_conv_geom *g) {
    conv2d_forward(out, inp, weight, bias, ws, rows, g, 0);
}

void remat_ref_conv2d_forward_bf16(uint16_t *out, const uint16_t *inp, const uint16_t *weight, const uint16_t *bias,
                                   float *ws, int64_t rows, const remat_conv_geom *g) {
    conv2d_forward(out, inp, weight, bias, ws, rows, g, 1);
}

void remat_ref_conv2d_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                               const float *weight, float *ws, int64_t t_steps, int64_t N, const remat_conv_geom *g) {
    conv2d_backward(dinp, dweight, dbias, dout, inp, weight, ws, t_steps, N, g, 0);
}

void remat_ref_conv2d_backward_bf16(uint16_t *dinp, float *dweight, float *dbias, const uint16_t *dout,
                                    const uint16_t *inp, const uint16_t *weight, float *ws, int64_t t_steps, int64_t N,
                                    const remat_conv_geom *g) {
    conv2d_backward(dinp, dweight, dbias, dout, inp, weight, ws, t_steps, N, g, 1);
}
