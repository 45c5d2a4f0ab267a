/* ref_kernels.h - the CPU reference backend: every layer's forward and backward in
 * plain C, one file per layer (core/ref/linear.c, conv.c, neuron.c, plif.c, batchnorm.c,
 * pool.c, elementwise.c, loss.c, optim.c, fill.c; the GEMMs in gemm.c). This file IS
 * the specification that cuda/ mirrors, one function each.
 *
 * Conventions (llm.c): arguments are (outputs, inputs, weights, cache, sizes);
 * activations are time-major [t_steps, N, F] float32; "rows" = t_steps * N.
 * Backward functions ACCUMULATE (+=) into every gradient they write (dinp,
 * dweight, dbias), so callers zero gradient buffers once when allocating them.
 *
 * Determinism contract (docs/determinism.md):
 *  - every output element of a GEMM is summed over K in one fixed order that does
 *    not depend on the number of rows or on the element's position in a tile;
 *  - weight/bias gradients are reduced per time step (P_t summed over the N rows
 *    of step t in a fixed order) and the P_t are added into dweight in DESCENDING t:
 *    dweight = ((dweight + P_{t_steps-1}) + P_{t_steps-2}) + ... + P_0. A time chunk
 *    called with its own t_steps therefore continues exactly the full-T sum when
 *    chunks are processed last-first;
 *  - batch-norm statistics are reduced over all rows in one fixed order.
 * Compiled with -ffp-contract=off: no FMA contraction the source does not write.
 *
 * bf16 storage (docs/precision.md): each kernel that reads or writes activations has a
 * twin remat_ref_<name>_bf16 with the same arguments in the same order, in which the
 * activations (layer inputs and outputs, their gradients, and the bf16 copies of linear
 * and conv weights and biases) are uint16_t bfloat16 bit patterns; everything else
 * (parameters of batch norm, parameter gradients, neuron state h and v, statistics,
 * workspaces) stays float. A twin computes exactly what its float kernel computes on
 * the widened inputs and rounds each element it stores once, to nearest even: its
 * result equals the float kernel's followed by a rounding of every output, bit for bit
 * (tests/bf16_storage_test.cc checks each). Where a float kernel scatters several terms
 * into one output element (col2im, pooling backward) the twin gathers them per element,
 * in the same order, and rounds once; so the twins need no more workspace.
 */
#ifndef REMAT_REF_KERNELS_H
#define REMAT_REF_KERNELS_H

#include <stdint.h>

#include "core/model/model.h"
#include "core/base/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Threads the kernels may use (default 1): the GEMMs (and so linear and conv) split
 * their output elements, never K; neurons, batch norm, add and dropout split their
 * independent neurons, channels or elements (parallel.h). Results do not depend on
 * this number. */
void remat_ref_set_threads(int n);
int remat_ref_get_threads(void);

/* The most host memory one GEMM call holds per thread, outside the trace, whatever
 * M, N and K: an A block (MC x KC floats), a B block (KC x NC, or all of K when that
 * fits 3 MiB) and, for a bf16 C, a float C block (MC x NC); 6 MiB covers every
 * kernel's blocking (at most 240 x 192, 256 x 3072 and 240 x 3072 floats). */
#define REMAT_GEMM_SCRATCH_BYTES ((int64_t)6 << 20)

/* C[M,N] (+)= A[M,K] * B[N,K]^T  (accumulate: 0 overwrites C, 1 adds to C). */
void remat_ref_gemm_nt(float *C, const float *A, const float *B, int64_t M, int64_t N, int64_t K, int accumulate);
/* C[M,N] (+)= A[M,K] * B[K,N] */
void remat_ref_gemm_nn(float *C, const float *A, const float *B, int64_t M, int64_t N, int64_t K, int accumulate);
/* C[M,N] (+)= A[K,M]^T * B[K,N] */
void remat_ref_gemm_tn(float *C, const float *A, const float *B, int64_t M, int64_t N, int64_t K, int accumulate);

/* out[rows, out_f] = inp[rows, in] W[out_f, in]^T + bias (bias may be NULL). */
void remat_ref_linear_forward(float *out, const float *inp, const float *weight, const float *bias,
                              int64_t rows, int64_t in, int64_t out_f);
/* dinp[rows,in] += dout W; for t = t_steps-1 .. 0: dweight += dout_t^T inp_t,
 * dbias += sum over the N rows of dout_t. dinp, dbias may be NULL.
 * scratch: at least remat_ref_linear_scratch_elems(in, out_f) floats. */
void remat_ref_linear_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                               const float *weight, float *scratch, int64_t t_steps, int64_t N, int64_t in,
                               int64_t out_f);
int64_t remat_ref_linear_scratch_elems(int64_t in, int64_t out_f);
/* The backward over a batch of N samples cut into nblk blocks of N/nblk (nblk divides
 * N; docs/determinism.md, "Data parallelism"): exactly remat_ref_linear_backward called
 * for t = t_steps-1 .. 0 and, within each t, b = 0 .. nblk-1, on the block's rows of
 * step t (t_steps 1, N/nblk samples), with dweight + b*out_f*in and dbias + b*out_f
 * (one accumulator per block: dweight [nblk][out_f*in], dbias [nblk][out_f]). Faster
 * than those calls, the same bits for every thread count (linear_blocks.c). scratch:
 * remat_ref_linear_scratch_elems(in, out_f) floats. */
void remat_ref_linear_backward_blocks(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                                      const float *weight, float *scratch, int64_t t_steps, int64_t N, int64_t nblk,
                                      int64_t in, int64_t out_f);
void remat_ref_linear_backward_blocks_bf16(uint16_t *dinp, float *dweight, float *dbias, const uint16_t *dout,
                                           const uint16_t *inp, const uint16_t *weight, float *scratch,
                                           int64_t t_steps, int64_t N, int64_t nblk, int64_t in, int64_t out_f);
void remat_ref_linear_forward_bf16(uint16_t *out, const uint16_t *inp, const uint16_t *weight, const uint16_t *bias,
                                   int64_t rows, int64_t in, int64_t out_f);
void remat_ref_linear_backward_bf16(uint16_t *dinp, float *dweight, float *dbias, const uint16_t *dout,
                                    const uint16_t *inp, const uint16_t *weight, float *scratch, int64_t t_steps,
                                    int64_t N, int64_t in, int64_t out_f);

/* IF / LIF over t_steps steps of nf = N*F elements (docs/determinism.md, exact formulas).
 * v [nf]: on entry v_{t0-1} (callers set v_reset, or 0 under soft reset, before the
 * first step), on return the state after the last step.
 * h [t_steps, nf]: the pre-spike potential, saved for backward; may be NULL. */
void remat_ref_neuron_forward(float *spikes, float *h, float *v, const float *x, remat_layer_type type,
                              const remat_neuron_opts *o, int64_t t_steps, int64_t nf);
/* dx += dL/dx. gv [nf]: on entry dL/dv of the step after the last one (0 at T-1),
 * on return dL/dv_{t0-1}, to carry into the previous time chunk. */
void remat_ref_neuron_backward(float *dx, float *gv, const float *dspikes, const float *h, remat_layer_type type,
                               const remat_neuron_opts *o, int64_t t_steps, int64_t nf);
void remat_ref_neuron_forward_bf16(uint16_t *spikes, float *h, float *v, const uint16_t *x, remat_layer_type type,
                                   const remat_neuron_opts *o, int64_t t_steps, int64_t nf);
void remat_ref_neuron_backward_bf16(uint16_t *dx, float *gv, const uint16_t *dspikes, const float *h,
                                    remat_layer_type type, const remat_neuron_opts *o, int64_t t_steps, int64_t nf);

/* PLIF (SpikingJelly's ParametricLIFNode): the contract is core/ref/plif.c's header.
 * k = 1/tau = sigmoid(w[0]); vp [t_steps, nf]: the state each step starts from (NULL:
 * not saved); backward: nf = N * F, dw [nblk] += the gradient of w (per block of
 * samples), rows: t_steps * N doubles of workspace. */
float remat_ref_plif_k(float w);
void remat_ref_plif_forward(float *spikes, float *vp, float *v, const float *x, const float *w,
                            const remat_neuron_opts *o, int64_t t_steps, int64_t nf);
void remat_ref_plif_backward(float *dx, float *gv, double *rows, float *dw, const float *dspikes, const float *vp,
                             const float *x, const float *w, const remat_neuron_opts *o, int64_t t_steps, int64_t N,
                             int64_t F, int64_t nblk);
void remat_ref_plif_forward_bf16(uint16_t *spikes, float *vp, float *v, const uint16_t *x, const float *w,
                                 const remat_neuron_opts *o, int64_t t_steps, int64_t nf);
void remat_ref_plif_backward_bf16(uint16_t *dx, float *gv, double *rows, float *dw, const uint16_t *dspikes,
                                  const float *vp, const uint16_t *x, const float *w, const remat_neuron_opts *o,
                                  int64_t t_steps, int64_t N, int64_t F, int64_t nblk);

/* Training-mode batch norm of [rows, C, hw] (hw = H*W, 1 for dense activations)
 * over C channels, statistics over the rows*hw positions of each: rstd =
 * 1/sqrt(var + eps) (in double), running = (1 - momentum) * running + momentum *
 * statistic (in float; PyTorch's defaults momentum 0.1, eps 1e-5 are the model file's).
 * mean, rstd [C]: saved for backward. running_mean/var: updated in place unless NULL
 * (a recomputation passes NULL: once per iteration). */
void remat_ref_batchnorm_forward(float *out, float *mean, float *rstd, float *running_mean, float *running_var,
                                 const float *inp, const float *weight, const float *bias, int64_t rows, int64_t C,
                                 int64_t hw, float momentum, double eps);
void remat_ref_batchnorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                                  const float *weight, const float *mean, const float *rstd, int64_t rows,
                                  int64_t C, int64_t hw);
void remat_ref_batchnorm_forward_bf16(uint16_t *out, float *mean, float *rstd, float *running_mean,
                                      float *running_var, const uint16_t *inp, const float *weight, const float *bias,
                                      int64_t rows, int64_t C, int64_t hw, float momentum, double eps);
void remat_ref_batchnorm_backward_bf16(uint16_t *dinp, float *dweight, float *dbias, const uint16_t *dout,
                                       const uint16_t *inp, const float *weight, const float *mean, const float *rstd,
                                       int64_t rows, int64_t C, int64_t hw);

/* conv2d (conv.c): cross-correlation with zero padding, dilation (tap (ky, kx) reads
 * input offset (ky * dh, kx * dw), remat_conv_dil_h/w) and groups (G =
 * remat_conv_groups: output channel o reads input channels [gi * c_in / G, (gi + 1) *
 * c_in / G), gi = o / (c_out / G)), as PyTorch Conv2d.
 * inp [rows, c_in, h_in, w_in], out [rows, c_out, h_out, w_out], weight
 * [c_out, c_in / G, kh, kw], bias [c_out] or NULL. Each output element is one chain:
 * c = bias (or +0); for k = (ci, ky, kx) ascending, ci over the group's c_in / G
 * channels: c = fma(w[o, k], x(gi * c_in / G + ci, ky, kx, pixel), c) (an implicit GEMM
 * per group: the column matrix's panels are packed from inp), whatever rows is.
 * Backward chains as below, each over the element's own group (dinp: over the group's
 * c_out / G output channels).
 * ws: remat_ref_conv2d_forward_ws_elems(g) floats (0: forward needs none). */
int64_t remat_ref_conv2d_forward_ws_elems(const remat_conv_geom *g);
void remat_ref_conv2d_forward(float *out, const float *inp, const float *weight, const float *bias, float *ws,
                              int64_t rows, const remat_conv_geom *g);
/* dinp += dL/dinp (col2im of W^T dout, per sample); for t = t_steps-1 .. 0:
 * dweight += P_t, P_t = sum over the N samples of step t (ascending) of dout_n col_n^T
 * (one fma chain over samples then pixels); dbias += the step's sum of dout over
 * samples and pixels (ascending, from +0). dinp, dbias may be NULL.
 * ws: remat_ref_conv2d_backward_ws_elems(g) floats (a block of W^T dout for a few
 * input channels and samples, P_t, the bias partial). */
int64_t remat_ref_conv2d_backward_ws_elems(const remat_conv_geom *g);
void remat_ref_conv2d_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                               const float *weight, float *ws, int64_t t_steps, int64_t N, const remat_conv_geom *g);
/* The workspaces of an explicit-im2col conv (the CUDA backend's: one sample's column
 * matrix | its dcol | P_t | the bias partial). */
int64_t remat_conv2d_im2col_forward_ws_elems(const remat_conv_geom *g);
int64_t remat_conv2d_im2col_backward_ws_elems(const remat_conv_geom *g);
/* The bf16 twins; the workspaces are the float ones (the packers widen into float). */
void remat_ref_conv2d_forward_bf16(uint16_t *out, const uint16_t *inp, const uint16_t *weight, const uint16_t *bias,
                                   float *ws, int64_t rows, const remat_conv_geom *g);
void remat_ref_conv2d_backward_bf16(uint16_t *dinp, float *dweight, float *dbias, const uint16_t *dout,
                                    const uint16_t *inp, const uint16_t *weight, float *ws, int64_t t_steps, int64_t N,
                                    const remat_conv_geom *g);
/* The backward over a batch of N samples cut into nblk blocks (nblk divides N), one
 * weight and bias accumulator per block (dweight [nblk][weight elems], dbias
 * [nblk][c_out]): exactly remat_ref_conv2d_backward called for t = t_steps-1 .. 0 and,
 * within each t, b = 0 .. nblk-1, on the block's samples of step t (conv_blocks.c).
 * ws: remat_ref_conv2d_backward_ws_elems(g) floats. */
void remat_ref_conv2d_backward_blocks(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                                      const float *weight, float *ws, int64_t t_steps, int64_t N, int64_t nblk,
                                      const remat_conv_geom *g);
void remat_ref_conv2d_backward_blocks_bf16(uint16_t *dinp, float *dweight, float *dbias, const uint16_t *dout,
                                           const uint16_t *inp, const uint16_t *weight, float *ws, int64_t t_steps,
                                           int64_t N, int64_t nblk, const remat_conv_geom *g);

/* The column matrix of one sample x[c_in, h_in, w_in]: col[k][p], k = (ci*kh + ky)*kw + kx,
 * p = oy*w_out + ox, padded positions +0 (K*P floats). col2im_add: dx += the
 * columns scattered back, in (k, p) order. (conv.c; exposed for the benchmark; g
 * without groups.) */
void remat_ref_im2col(float *col, const float *x, const remat_conv_geom *g);
void remat_ref_col2im_add(float *dx, const float *dcol, const remat_conv_geom *g);

/* Pooling (pool.c), per sample and channel, windows in row-major order, padded
 * positions outside the input. Max: the first maximum of the window (row-major) is
 * the output and gets the gradient. Average: the window's in-bounds sum (row-major,
 * from +0) divided by kh*kw (padded zeros count); backward adds dout / (kh*kw) to
 * every in-bounds position. Backward functions accumulate into dinp, output
 * elements in order. */
void remat_ref_maxpool2d_forward(float *out, const float *inp, int64_t rows, const remat_conv_geom *g);
void remat_ref_maxpool2d_backward(float *dinp, const float *dout, const float *inp, int64_t rows,
                                  const remat_conv_geom *g);
void remat_ref_avgpool2d_forward(float *out, const float *inp, int64_t rows, const remat_conv_geom *g);
void remat_ref_avgpool2d_backward(float *dinp, const float *dout, int64_t rows, const remat_conv_geom *g);
/* The bf16 twins. */
void remat_ref_maxpool2d_forward_bf16(uint16_t *out, const uint16_t *inp, int64_t rows, const remat_conv_geom *g);
void remat_ref_maxpool2d_backward_bf16(uint16_t *dinp, const uint16_t *dout, const uint16_t *inp, int64_t rows,
                                       const remat_conv_geom *g);
void remat_ref_avgpool2d_forward_bf16(uint16_t *out, const uint16_t *inp, int64_t rows, const remat_conv_geom *g);
void remat_ref_avgpool2d_backward_bf16(uint16_t *dinp, const uint16_t *dout, int64_t rows, const remat_conv_geom *g);

/* Inverted dropout, one mask [nf] shared by all t_steps steps, drawn from
 * remat_rng_uniform(seed, REMAT_RNG_DROPOUT, remat_rng_dropout_key(iter, layer), i):
 * kept when u >= p, scaled by 1.0f / (1.0f - p). */
void remat_ref_dropout_mask(float *mask, uint64_t seed, uint64_t iter, int layer, float p, int64_t nf);
void remat_ref_dropout_forward(float *out, const float *inp, uint64_t seed, uint64_t iter, int layer, float p,
                               int64_t t_steps, int64_t nf);
void remat_ref_dropout_backward(float *dinp, const float *dout, uint64_t seed, uint64_t iter, int layer, float p,
                                int64_t t_steps, int64_t nf);
void remat_ref_dropout_forward_bf16(uint16_t *out, const uint16_t *inp, uint64_t seed, uint64_t iter, int layer,
                                    float p, int64_t t_steps, int64_t nf);
void remat_ref_dropout_backward_bf16(uint16_t *dinp, const uint16_t *dout, uint64_t seed, uint64_t iter, int layer,
                                     float p, int64_t t_steps, int64_t nf);

/* out = a + b ; backward: da += dout, db += dout. */
void remat_ref_add_forward(float *out, const float *a, const float *b, int64_t n);
void remat_ref_add_backward(float *da, float *db, const float *dout, int64_t n);
/* The bf16 twins. add_backward_bf16 with da == db (both operands the same tensor) adds
 * dout twice in float before rounding, as the float kernel followed by one rounding. */
void remat_ref_add_forward_bf16(uint16_t *out, const uint16_t *a, const uint16_t *b, int64_t n);
void remat_ref_add_backward_bf16(uint16_t *da, uint16_t *db, const uint16_t *dout, int64_t n);

/* Rate losses (docs/determinism.md). out [T,N,K]; rate [N,K] = mean over t (summed in
 * ascending t, then divided by T); returns L. */
float remat_ref_loss_forward(float *rate, const float *out, const int32_t *labels, remat_loss_type type, int64_t T,
                             int64_t N, int64_t K);
/* dout[T,N,K] += dL/dout (the same value for every t). */
void remat_ref_loss_backward(float *dout, const float *rate, const int32_t *labels, remat_loss_type type, int64_t T,
                             int64_t N, int64_t K);
float remat_ref_loss_forward_bf16(float *rate, const uint16_t *out, const int32_t *labels, remat_loss_type type,
                                  int64_t T, int64_t N, int64_t K);
void remat_ref_loss_backward_bf16(uint16_t *dout, const float *rate, const int32_t *labels, remat_loss_type type,
                                  int64_t T, int64_t N, int64_t K);

/* The data-parallel pieces (docs/determinism.md, "Data parallelism"; the executor
 * uses them for --reduce-blocks and world sizes above 1):
 *  - dropout_*_at: dropout on a shard whose mask element i has the counter c0 + i;
 *  - loss_blocks: the rate as loss_forward, part[b] = the loss terms of block b (samples
 *    b*N/nblk ..) summed in double; remat_ref_loss_value turns the combined total into
 *    the loss of a batch of N samples (what loss_forward returns);
 *  - loss_backward_n: loss_backward with the mean taken over n_total samples;
 *  - bn_block_sums / _apply, bn_block_backward_sums / _apply: batch norm in two halves
 *    around the combination of per-block sums (batchnorm.c). */
void remat_ref_dropout_forward_at(float *out, const float *inp, uint64_t seed, uint64_t iter, int layer, float p,
                                  int64_t t_steps, int64_t nf, int64_t c0);
void remat_ref_dropout_backward_at(float *dinp, const float *dout, uint64_t seed, uint64_t iter, int layer, float p,
                                   int64_t t_steps, int64_t nf, int64_t c0);
void remat_ref_dropout_forward_at_bf16(uint16_t *out, const uint16_t *inp, uint64_t seed, uint64_t iter, int layer,
                                       float p, int64_t t_steps, int64_t nf, int64_t c0);
void remat_ref_dropout_backward_at_bf16(uint16_t *dinp, const uint16_t *dout, uint64_t seed, uint64_t iter,
                                        int layer, float p, int64_t t_steps, int64_t nf, int64_t c0);
float remat_ref_loss_value(double total, remat_loss_type type, int64_t N, int64_t K);
void remat_ref_loss_blocks(double *part, float *rate, const float *out, const int32_t *labels, remat_loss_type type,
                           int64_t T, int64_t N, int64_t K, int64_t nblk);
void remat_ref_loss_blocks_bf16(double *part, float *rate, const uint16_t *out, const int32_t *labels,
                                remat_loss_type type, int64_t T, int64_t N, int64_t K, int64_t nblk);
void remat_ref_loss_backward_n(float *dout, const float *rate, const int32_t *labels, remat_loss_type type, int64_t T,
                               int64_t N, int64_t K, int64_t n_total);
void remat_ref_loss_backward_n_bf16(uint16_t *dout, const float *rate, const int32_t *labels, remat_loss_type type,
                                    int64_t T, int64_t N, int64_t K, int64_t n_total);
#define REMAT_REF_BN_BLOCK_DECLS(S, A)                                                                               \
    void remat_ref_bn_block_sums##S(double *sum, const A *inp, const double *mu_total, int64_t n, int64_t T,       \
                                    int64_t N, int64_t nblk, int64_t C, int64_t hw);                               \
    void remat_ref_bn_block_apply##S(A *out, float *mean, float *rstd, float *running_mean, float *running_var,    \
                                     const A *inp, const float *weight, const float *bias, const double *sum,       \
                                     const double *sq, int64_t n, int64_t rows, int64_t C, int64_t hw,              \
                                     float momentum, double eps);            \
    void remat_ref_bn_block_backward_sums##S(double *sdy, double *sdyx, const A *dout, const A *inp,               \
                                             const float *mean, const float *rstd, int64_t T, int64_t N,           \
                                             int64_t nblk, int64_t C, int64_t hw);                                 \
    void remat_ref_bn_block_backward_apply##S(A *dinp, float *dweight, float *dbias, const A *dout, const A *inp,  \
                                              const float *weight, const float *mean, const float *rstd,           \
                                              const double *sdy, const double *sdyx, int64_t n, int64_t rows,      \
                                              int64_t C, int64_t hw);
REMAT_REF_BN_BLOCK_DECLS(, float)
REMAT_REF_BN_BLOCK_DECLS(_bf16, uint16_t)

/* SGD with momentum (PyTorch semantics: buf = momentum*buf + g, first step buf = g;
 * p -= lr*buf) and Adam (bias-corrected, step counted from 1). */
void remat_ref_sgd_update(float *param, float *buf, const float *grad, float lr, float momentum, int first_step,
                          int64_t n);
void remat_ref_adam_update(float *param, float *m, float *v, const float *grad, float lr, float beta1, float beta2,
                           float eps, int step, int64_t n);
/* bytes bytes at dst set to 0 (memset, split over the threads). */
void remat_ref_zero(void *dst, int64_t bytes);

/* Seeded initial values and data. */
void remat_ref_fill_uniform(float *out, int64_t n, float lo, float hi, uint64_t seed, uint64_t stream, uint64_t key);
void remat_ref_fill_bernoulli(float *out, int64_t n, float rate, uint64_t seed, uint64_t stream, uint64_t key);
void remat_ref_fill_labels(int32_t *labels, int64_t n, int64_t classes, uint64_t seed, uint64_t key);
void remat_ref_fill_uniform_bf16(uint16_t *out, int64_t n, float lo, float hi, uint64_t seed, uint64_t stream,
                                 uint64_t key);
void remat_ref_fill_bernoulli_bf16(uint16_t *out, int64_t n, float rate, uint64_t seed, uint64_t stream,
                                   uint64_t key);
/* Event counts (input.kind "counts"): out[i] = remat_count_of_uniform(u_i, max) (core/base/rng.h),
 * u_i the uniform draw fill_uniform takes for element i. */
void remat_ref_fill_counts(float *out, int64_t n, int32_t max, uint64_t seed, uint64_t stream, uint64_t key);
void remat_ref_fill_counts_bf16(uint16_t *out, int64_t n, int32_t max, uint64_t seed, uint64_t stream, uint64_t key);

/* dst[i] = src[i] rounded to bf16 (remat_f32_to_bf16, core/base/bf16.h: round to nearest
 * even, NaN kept quiet): the step's bf16 copies of linear/conv weights and biases in a
 * bf16 model (docs/precision.md). precision.c. */
void remat_ref_bf16_from_f32(uint16_t *dst, const float *src, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
