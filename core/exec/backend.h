/* backend.h - a backend is an opaque context plus a table of function pointers
 * (ggml-backend style). The executor calls nothing else to touch tensor data, so
 * the reference backend (ref_backend.c), the CUDA backend (cuda/) and the
 * simulator's dry backend (no data, no time) are interchangeable.
 *
 * Every kernel entry has the signature and meaning of the ref_kernels.h function
 * of the same name, with the context first; pointers are device pointers.
 */
#ifndef REMAT_BACKEND_H
#define REMAT_BACKEND_H

#include <stdint.h>

#include "core/model/model.h"
#include "core/base/status.h"
#include "core/base/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every kernel entry, once: X(return type, name, (parameters after ctx), (their names)).
 * Entry `name` has the signature and meaning of remat_ref_<name> (core/ref/ref_kernels.h)
 * with the backend's context first. The table's fields, the reference backend's
 * forwarders, the dry backend's no-ops and verify's checking wrappers are all
 * generated from this list.
 *
 * The kernels that touch activations are listed once, in REMAT_ACTIVATION_KERNELS, with
 * their activation element type A and a name suffix S: the fp32 entries are the list
 * with (float, nothing), the bf16-storage twins the same list with (uint16_t, _bf16)
 * (ref_kernels.h: the same arguments, activations bf16 patterns). A backend that leaves
 * the twins NULL cannot run bf16 models (the executor says so). */
#define REMAT_ACTIVATION_KERNELS(X, A, S)                                                                            \
    X(void, linear_forward##S,                                                                                       \
      (A *out, const A *inp, const A *weight, const A *bias, int64_t rows, int64_t in, int64_t out_f),              \
      (out, inp, weight, bias, rows, in, out_f))                                                                    \
    X(void, linear_backward##S,                                                                                      \
      (A *dinp, float *dweight, float *dbias, const A *dout, const A *inp, const A *weight, float *scratch,         \
       int64_t t_steps, int64_t N, int64_t in, int64_t out_f),                                                      \
      (dinp, dweight, dbias, dout, inp, weight, scratch, t_steps, N, in, out_f))                                    \
    X(void, conv2d_forward##S,                                                                                       \
      (A *out, const A *inp, const A *weight, const A *bias, float *ws, int64_t rows, const remat_conv_geom *g),    \
      (out, inp, weight, bias, ws, rows, g))                                                                        \
    X(void, conv2d_backward##S,                                                                                      \
      (A *dinp, float *dweight, float *dbias, const A *dout, const A *inp, const A *weight, float *ws,              \
       int64_t t_steps, int64_t N, const remat_conv_geom *g),                                                       \
      (dinp, dweight, dbias, dout, inp, weight, ws, t_steps, N, g))                                                 \
    X(void, neuron_forward##S,                                                                                       \
      (A *spikes, float *h, float *v, const A *x, remat_layer_type type, const remat_neuron_opts *o,                \
       int64_t t_steps, int64_t nf),                                                                                 \
      (spikes, h, v, x, type, o, t_steps, nf))                                                                      \
    X(void, neuron_backward##S,                                                                                      \
      (A *dx, float *gv, const A *dspikes, const float *h, remat_layer_type type, const remat_neuron_opts *o,       \
       int64_t t_steps, int64_t nf),                                                                                 \
      (dx, gv, dspikes, h, type, o, t_steps, nf))                                                                   \
    X(void, plif_forward##S,                                                                                         \
      (A *spikes, float *vp, float *v, const A *x, const float *w, const remat_neuron_opts *o, int64_t t_steps,     \
       int64_t nf),                                                                                                  \
      (spikes, vp, v, x, w, o, t_steps, nf))                                                                        \
    X(void, plif_backward##S,                                                                                        \
      (A *dx, float *gv, double *rows, float *dw, const A *dspikes, const float *vp, const A *x, const float *w,    \
       const remat_neuron_opts *o, int64_t t_steps, int64_t N, int64_t F, int64_t nblk),                            \
      (dx, gv, rows, dw, dspikes, vp, x, w, o, t_steps, N, F, nblk))                                                \
    X(void, batchnorm_forward##S,                                                                                    \
      (A *out, float *mean, float *rstd, float *running_mean, float *running_var, const A *inp,                     \
       const float *weight, const float *bias, int64_t rows, int64_t C, int64_t hw, float momentum, double eps),    \
      (out, mean, rstd, running_mean, running_var, inp, weight, bias, rows, C, hw, momentum, eps))                  \
    X(void, batchnorm_backward##S,                                                                                   \
      (A *dinp, float *dweight, float *dbias, const A *dout, const A *inp, const float *weight, const float *mean,  \
       const float *rstd, int64_t rows, int64_t C, int64_t hw),                                                     \
      (dinp, dweight, dbias, dout, inp, weight, mean, rstd, rows, C, hw))                                           \
    X(void, maxpool2d_forward##S, (A *out, const A *inp, int64_t rows, const remat_conv_geom *g),                   \
      (out, inp, rows, g))                                                                                          \
    X(void, maxpool2d_backward##S,                                                                                   \
      (A *dinp, const A *dout, const A *inp, int64_t rows, const remat_conv_geom *g), (dinp, dout, inp, rows, g))  \
    X(void, avgpool2d_forward##S, (A *out, const A *inp, int64_t rows, const remat_conv_geom *g),                   \
      (out, inp, rows, g))                                                                                          \
    X(void, avgpool2d_backward##S, (A *dinp, const A *dout, int64_t rows, const remat_conv_geom *g),                \
      (dinp, dout, rows, g))                                                                                        \
    X(void, dropout_forward##S,                                                                                      \
      (A *out, const A *inp, uint64_t seed, uint64_t iter, int layer, float p, int64_t t_steps, int64_t nf),        \
      (out, inp, seed, iter, layer, p, t_steps, nf))                                                                \
    X(void, dropout_backward##S,                                                                                     \
      (A *dinp, const A *dout, uint64_t seed, uint64_t iter, int layer, float p, int64_t t_steps, int64_t nf),      \
      (dinp, dout, seed, iter, layer, p, t_steps, nf))                                                              \
    X(void, add_forward##S, (A *out, const A *a, const A *b, int64_t n), (out, a, b, n))                            \
    X(void, add_backward##S, (A *da, A *db, const A *dout, int64_t n), (da, db, dout, n))                           \
    X(float, loss_forward##S,                                                                                        \
      (float *rate, const A *out, const int32_t *labels, remat_loss_type type, int64_t T, int64_t N, int64_t K),    \
      (rate, out, labels, type, T, N, K))                                                                           \
    X(void, loss_backward##S,                                                                                        \
      (A *dout, const float *rate, const int32_t *labels, remat_loss_type type, int64_t T, int64_t N, int64_t K),   \
      (dout, rate, labels, type, T, N, K))                                                                          \
    X(void, fill_uniform##S, (A *out, int64_t n, float lo, float hi, uint64_t seed, uint64_t stream, uint64_t key), \
      (out, n, lo, hi, seed, stream, key))                                                                          \
    X(void, fill_bernoulli##S, (A *out, int64_t n, float rate, uint64_t seed, uint64_t stream, uint64_t key),       \
      (out, n, rate, seed, stream, key))                                                                            \
    X(void, fill_counts##S, (A *out, int64_t n, int32_t max, uint64_t seed, uint64_t stream, uint64_t key),        \
      (out, n, max, seed, stream, key))

/* The data-parallel pieces (docs/determinism.md, "Data parallelism"): the linear
 * and conv2d layers' backward with one weight-gradient accumulator per block, the blocked
 * reductions of batch norm and the loss, and dropout on a shard of the batch. Only the
 * reference backend has them; the CUDA backend leaves them NULL, and the executor runs
 * the reference kernels over host copies there (shard_steps.c), and the layers'
 * backward as linear_ / conv2d_backward once per (time step, block). */
#define REMAT_SHARD_KERNELS(X, A, S)                                                                                 \
    X(void, linear_backward_blocks##S,                                                                               \
      (A *dinp, float *dweight, float *dbias, const A *dout, const A *inp, const A *weight, float *scratch,         \
       int64_t t_steps, int64_t N, int64_t nblk, int64_t in, int64_t out_f),                                         \
      (dinp, dweight, dbias, dout, inp, weight, scratch, t_steps, N, nblk, in, out_f))                              \
    X(void, conv2d_backward_blocks##S,                                                                               \
      (A *dinp, float *dweight, float *dbias, const A *dout, const A *inp, const A *weight, float *ws,              \
       int64_t t_steps, int64_t N, int64_t nblk, const remat_conv_geom *g),                                          \
      (dinp, dweight, dbias, dout, inp, weight, ws, t_steps, N, nblk, g))                                            \
    X(void, dropout_forward_at##S,                                                                                   \
      (A *out, const A *inp, uint64_t seed, uint64_t iter, int layer, float p, int64_t t_steps, int64_t nf,         \
       int64_t c0),                                                                                                  \
      (out, inp, seed, iter, layer, p, t_steps, nf, c0))                                                            \
    X(void, dropout_backward_at##S,                                                                                  \
      (A *dinp, const A *dout, uint64_t seed, uint64_t iter, int layer, float p, int64_t t_steps, int64_t nf,       \
       int64_t c0),                                                                                                  \
      (dinp, dout, seed, iter, layer, p, t_steps, nf, c0))                                                          \
    X(void, loss_blocks##S,                                                                                          \
      (double *part, float *rate, const A *out, const int32_t *labels, remat_loss_type type, int64_t T, int64_t N, \
       int64_t K, int64_t nblk),                                                                                     \
      (part, rate, out, labels, type, T, N, K, nblk))                                                               \
    X(void, loss_backward_n##S,                                                                                      \
      (A *dout, const float *rate, const int32_t *labels, remat_loss_type type, int64_t T, int64_t N, int64_t K,    \
       int64_t n_total),                                                                                             \
      (dout, rate, labels, type, T, N, K, n_total))                                                                 \
    X(void, bn_block_sums##S,                                                                                        \
      (double *sum, const A *inp, const double *mu_total, int64_t n, int64_t T, int64_t N, int64_t nblk, int64_t C, \
       int64_t hw),                                                                                                  \
      (sum, inp, mu_total, n, T, N, nblk, C, hw))                                                                   \
    X(void, bn_block_apply##S,                                                                                       \
      (A *out, float *mean, float *rstd, float *running_mean, float *running_var, const A *inp,                     \
       const float *weight, const float *bias, const double *sum, const double *sq, int64_t n, int64_t rows,        \
       int64_t C, int64_t hw, float momentum, double eps),                                                           \
      (out, mean, rstd, running_mean, running_var, inp, weight, bias, sum, sq, n, rows, C, hw, momentum, eps))      \
    X(void, bn_block_backward_sums##S,                                                                               \
      (double *sdy, double *sdyx, const A *dout, const A *inp, const float *mean, const float *rstd, int64_t T,    \
       int64_t N, int64_t nblk, int64_t C, int64_t hw),                                                              \
      (sdy, sdyx, dout, inp, mean, rstd, T, N, nblk, C, hw))                                                        \
    X(void, bn_block_backward_apply##S,                                                                              \
      (A *dinp, float *dweight, float *dbias, const A *dout, const A *inp, const float *weight, const float *mean,  \
       const float *rstd, const double *sdy, const double *sdyx, int64_t n, int64_t rows, int64_t C, int64_t hw),   \
      (dinp, dweight, dbias, dout, inp, weight, mean, rstd, sdy, sdyx, n, rows, C, hw))

/* Every backend with data has these (the CUDA backend's table is generated from this
 * list); REMAT_BACKEND_KERNELS adds the data-parallel pieces, which may be NULL. */
#define REMAT_BACKEND_BASE_KERNELS(X)                                                                                \
    REMAT_ACTIVATION_KERNELS(X, float, )                                                                             \
    X(void, dropout_mask, (float *mask, uint64_t seed, uint64_t iter, int layer, float p, int64_t nf),              \
      (mask, seed, iter, layer, p, nf))                                                                             \
    X(void, sgd_update,                                                                                              \
      (float *param, float *buf, const float *grad, float lr, float momentum, int first_step, int64_t n),           \
      (param, buf, grad, lr, momentum, first_step, n))                                                              \
    X(void, adam_update,                                                                                             \
      (float *param, float *m, float *v, const float *grad, float lr, float beta1, float beta2, float eps, int step, \
       int64_t n),                                                                                                   \
      (param, m, v, grad, lr, beta1, beta2, eps, step, n))                                                          \
    X(void, fill_labels, (int32_t *labels, int64_t n, int64_t classes, uint64_t seed, uint64_t key),                \
      (labels, n, classes, seed, key))                                                                              \
    X(void, bf16_from_f32, (uint16_t *dst, const float *src, int64_t n), (dst, src, n))                            \
    REMAT_BACKEND_KERNELS_BF16(X)

#define REMAT_BACKEND_KERNELS(X)                                                                                     \
    REMAT_BACKEND_BASE_KERNELS(X)                                                                                    \
    REMAT_SHARD_KERNELS(X, float, )                                                                                  \
    REMAT_SHARD_KERNELS(X, uint16_t, _bf16)

#define REMAT_BACKEND_KERNELS_BF16(X) REMAT_ACTIVATION_KERNELS(X, uint16_t, _bf16)

/* Expands a parenthesised parameter or argument list of REMAT_BACKEND_KERNELS. */
#define REMAT_UNPAREN(...) __VA_ARGS__
#define REMAT_BACKEND_FIELD(ret, name, params, args) ret (*name)(void *ctx, REMAT_UNPAREN params);

typedef struct remat_backend_ops {
    const char *name;          /* "ref", "cuda", "dry" */
    int has_data;              /* 0 for the dry backend: no memory, kernels do nothing */
    /* 1: conv2d's workspaces are remat_conv2d_im2col_*_ws_elems floats (an explicit
     * column matrix: CUDA); 0: remat_ref_conv2d_*_ws_elems (the reference's implicit
     * GEMM). The executor allocates what the backend's conv needs. */
    int conv_im2col;

    /* Device memory in whole segments; the allocator model carves tensors out. */
    remat_status (*segment_alloc)(void *ctx, int64_t bytes, void **out, remat_error *err);
    void (*segment_free)(void *ctx, void *p);
    /* Memory the device reports (driver view); -1 when unknown. */
    void (*mem_info)(void *ctx, int64_t *free_bytes, int64_t *total_bytes);

    void (*zero)(void *ctx, void *dst, int64_t bytes);
    void (*copy)(void *ctx, void *dst, const void *src, int64_t bytes);          /* device to device */
    void (*to_host)(void *ctx, void *host_dst, const void *src, int64_t bytes);
    void (*from_host)(void *ctx, void *dst, const void *host_src, int64_t bytes);
    /* Seconds on a monotonic clock, after the device finished all queued work. */
    double (*now)(void *ctx);
    void (*destroy)(void *ctx);

    REMAT_BACKEND_KERNELS(REMAT_BACKEND_FIELD)
    /* As compress.h's _as functions: activations stored as enc (REMAT_ENC_F32 or BF16). */
    int64_t (*count_nonzero)(void *ctx, const void *x, remat_encoding enc, int64_t n);
    remat_status (*compress)(void *ctx, remat_compressor c, void *dst, int64_t dst_bytes, const void *src,
                             remat_encoding src_enc, int64_t n, remat_error *err);
    remat_status (*decompress)(void *ctx, remat_compressor c, void *dst, remat_encoding dst_enc, int64_t n,
                               const void *src, int64_t src_bytes, remat_error *err);
} remat_backend_ops;

typedef struct remat_backend {
    const remat_backend_ops *ops;
    void *ctx;
} remat_backend;

/* The CPU reference backend; threads as remat_ref_set_threads. */
remat_status remat_backend_ref_init(remat_backend *out, int threads, remat_error *err);
/* The dry backend: no memory, no data, kernels return at once (the simulator's). */
remat_status remat_backend_dry_init(remat_backend *out, remat_error *err);
/* The same, allocating the conv workspaces of the backend named `like` ("cuda": the
 * im2col ones; any other name: the reference's), so that a simulation of a recording
 * allocates what that recording's backend allocated. */
remat_status remat_backend_dry_init_like(remat_backend *out, const char *like, remat_error *err);
/* The CUDA backend (cuda/); REMAT_ERR_DEVICE "no CUDA device: <reason>" where there is
 * none, and "built without CUDA" in a CPU-only build. */
remat_status remat_backend_cuda_init(remat_backend *out, int device, remat_error *err);
void remat_backend_free(remat_backend *b);

#ifdef __cplusplus
}
#endif
#endif
