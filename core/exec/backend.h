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

typedef struct remat_backend_ops {
    const char *name;          /* "ref", "cuda", "dry" */
    int has_data;              /* 0 for the dry backend: no memory, kernels do nothing */

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

    void (*linear_forward)(void *ctx, float *out, const float *inp, const float *weight, const float *bias,
                           int64_t rows, int64_t in, int64_t out_f);
    void (*linear_backward)(void *ctx, float *dinp, float *dweight, float *dbias, const float *dout,
                            const float *inp, const float *weight, float *scratch, int64_t t_steps, int64_t N,
                            int64_t in, int64_t out_f);
    void (*neuron_forward)(void *ctx, float *spikes, float *h, float *v, const float *x, remat_layer_type type,
                           const remat_neuron_opts *o, int64_t t_steps, int64_t nf);
    void (*neuron_backward)(void *ctx, float *dx, float *gv, const float *dspikes, const float *h,
                            remat_layer_type type, const remat_neuron_opts *o, int64_t t_steps, int64_t nf);
    void (*batchnorm_forward)(void *ctx, float *out, float *mean, float *rstd, float *running_mean,
                              float *running_var, const float *inp, const float *weight, const float *bias,
                              int64_t rows, int64_t C);
    void (*batchnorm_backward)(void *ctx, float *dinp, float *dweight, float *dbias, const float *dout,
                               const float *inp, const float *weight, const float *mean, const float *rstd,
                               int64_t rows, int64_t C);
    void (*dropout_mask)(void *ctx, float *mask, uint64_t seed, uint64_t iter, int layer, float p, int64_t nf);
    void (*dropout_forward)(void *ctx, float *out, const float *inp, uint64_t seed, uint64_t iter, int layer,
                            float p, int64_t t_steps, int64_t nf);
    void (*dropout_backward)(void *ctx, float *dinp, const float *dout, uint64_t seed, uint64_t iter, int layer,
                             float p, int64_t t_steps, int64_t nf);
    void (*add_forward)(void *ctx, float *out, const float *a, const float *b, int64_t n);
    void (*add_backward)(void *ctx, float *da, float *db, const float *dout, int64_t n);
    float (*loss_forward)(void *ctx, float *rate, const float *out, const int32_t *labels, remat_loss_type type,
                          int64_t T, int64_t N, int64_t K);
    void (*loss_backward)(void *ctx, float *dout, const float *rate, const int32_t *labels, remat_loss_type type,
                          int64_t T, int64_t N, int64_t K);
    void (*sgd_update)(void *ctx, float *param, float *buf, const float *grad, float lr, float momentum,
                       int first_step, int64_t n);
    void (*adam_update)(void *ctx, float *param, float *m, float *v, const float *grad, float lr, float beta1,
                        float beta2, float eps, int step, int64_t n);
    void (*fill_uniform)(void *ctx, float *out, int64_t n, float lo, float hi, uint64_t seed, uint64_t stream,
                         uint64_t key);
    void (*fill_bernoulli)(void *ctx, float *out, int64_t n, float rate, uint64_t seed, uint64_t stream,
                           uint64_t key);
    void (*fill_labels)(void *ctx, int32_t *labels, int64_t n, int64_t classes, uint64_t seed, uint64_t key);
    int64_t (*count_nonzero)(void *ctx, const float *x, int64_t n);
    remat_status (*compress)(void *ctx, remat_compressor c, void *dst, int64_t dst_bytes, const float *src,
                             int64_t n, remat_error *err);
    remat_status (*decompress)(void *ctx, remat_compressor c, float *dst, int64_t n, const void *src,
                               int64_t src_bytes, remat_error *err);
} remat_backend_ops;

typedef struct remat_backend {
    const remat_backend_ops *ops;
    void *ctx;
} remat_backend;

/* The CPU reference backend; threads as remat_ref_set_threads. */
remat_status remat_backend_ref_init(remat_backend *out, int threads, remat_error *err);
/* The dry backend: no memory, no data, kernels return at once (the simulator's). */
remat_status remat_backend_dry_init(remat_backend *out, remat_error *err);
/* The CUDA backend (cuda/); REMAT_ERR_DEVICE "no CUDA device: <reason>" where there is
 * none, and "built without CUDA" in a CPU-only build. */
remat_status remat_backend_cuda_init(remat_backend *out, int device, remat_error *err);
void remat_backend_free(remat_backend *b);

#ifdef __cplusplus
}
#endif
#endif
