/* conv_blocks.c - the conv2d layer's backward on a batch cut into blocks of samples
 * (ref_kernels.h: remat_ref_conv2d_backward_blocks; docs/determinism.md, "Data
 * parallelism").
 *
 * Defined as the one-block kernel (conv.c) called once per (time step t descending,
 * block b) on the block's samples of step t, each block's weight and bias partials into
 * its own accumulator. The input gradient is per sample (each element one chain over
 * the output channels, then the sample's col2im), so it is made by one call over all
 * rows, as the per-block calls make it, without repacking the weight for every block;
 * then the weight and bias gradients per (t, b), without the input gradient. The
 * per-block weight-gradient products (P_{t,b}, written and added into the block's
 * accumulator) are what is left of the blocks' cost: a banded version as for the linear
 * layer (linear_blocks.c) needs conv.c's panel packers.
 */
#include "core/ref/act.h"
#include "core/ref/ref_kernels.h"

REMAT_ACT_INLINE void conv2d_backward_blocks(void *dinp, float *dweight, float *dbias, const void *dout,
                                             const void *inp, const void *weight, float *ws, int64_t t_steps,
                                             int64_t N, int64_t nblk, const remat_conv_geom *g, const int b16) {
    const int64_t in_e = g->c_in * g->h_in * g->w_in, out_e = g->c_out * g->h_out * g->w_out;
    const int64_t wn = g->c_out * g->c_in * g->kh * g->kw; /* the weight's floats */
    if (dinp && b16)
        remat_ref_conv2d_backward_bf16(dinp, NULL, NULL, dout, inp, weight, ws, t_steps, N, g);
    else if (dinp)
        remat_ref_conv2d_backward(dinp, NULL, NULL, dout, inp, weight, ws, t_steps, N, g);
    if ((!dweight && !dbias) || nblk < 1) return;
    const int64_t bs = N / nblk;
    for (int64_t t = t_steps - 1; t >= 0; t--)
        for (int64_t b = 0; b < nblk; b++) {
            const int64_t r0 = t * N + b * bs;
            float *dw = dweight ? dweight + b * wn : NULL, *db = dbias ? dbias + b * g->c_out : NULL;
            if (b16)
                remat_ref_conv2d_backward_bf16(NULL, dw, db, act_cat(dout, r0 * out_e, 1), act_cat(inp, r0 * in_e, 1),
                                               weight, ws, 1, bs, g);
            else
                remat_ref_conv2d_backward(NULL, dw, db, act_cat(dout, r0 * out_e, 0), act_cat(inp, r0 * in_e, 0),
                                          weight, ws, 1, bs, g);
        }
}

void remat_ref_conv2d_backward_blocks(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                                      const float *weight, float *ws, int64_t t_steps, int64_t N, int64_t nblk,
                                      const remat_conv_geom *g) {
    conv2d_backward_blocks(dinp, dweight, dbias, dout, inp, weight, ws, t_steps, N, nblk, g, 0);
}

void remat_ref_conv2d_backward_blocks_bf16(uint16_t *dinp, float *dweight, float *dbias, const uint16_t *dout,
                                           const uint16_t *inp, const uint16_t *weight, float *ws, int64_t t_steps,
                                           int64_t N, int64_t nblk, const remat_conv_geom *g) {
    conv2d_backward_blocks(dinp, dweight, dbias, dout, inp, weight, ws, t_steps, N, nblk, g, 1);
}
