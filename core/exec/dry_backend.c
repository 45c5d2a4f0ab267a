/* dry_backend.c - the simulator's backend: no memory, no data, no time.
 *
 * The executor runs a whole training step against it to produce the allocation
 * trace alone: segment_alloc succeeds and hands out NULL (the allocator model does the
 * address arithmetic; nothing is ever dereferenced), every kernel and copy returns at
 * once, loss_forward returns 0, count_nonzero returns -1 ("unknown": callers size sparse
 * tensors from their own estimate), compress/decompress succeed without touching
 * anything, now() is always 0 and mem_info reports -1. There is no context (ctx NULL).
 */
#include <stddef.h>

#include "core/exec/backend.h"

static remat_status dry_segment_alloc(void *ctx, int64_t bytes, void **out, remat_error *err) {
    *out = NULL;
    return REMAT_OK;
}
static void dry_segment_free(void *ctx, void *p) {}
static void dry_mem_info(void *ctx, int64_t *free_bytes, int64_t *total_bytes) {
    if (free_bytes) *free_bytes = -1;
    if (total_bytes) *total_bytes = -1;
}
static void dry_zero(void *ctx, void *dst, int64_t bytes) {}
static void dry_copy(void *ctx, void *dst, const void *src, int64_t bytes) {}
static double dry_now(void *ctx) { return 0.0; }
static void dry_destroy(void *ctx) {}

static void dry_linear_forward(void *ctx, float *out, const float *inp, const float *weight, const float *bias,
                               int64_t rows, int64_t in, int64_t out_f) {}
static void dry_linear_backward(void *ctx, float *dinp, float *dweight, float *dbias, const float *dout,
                                const float *inp, const float *weight, float *scratch, int64_t t_steps, int64_t N,
                                int64_t in, int64_t out_f) {}
static void dry_neuron_forward(void *ctx, float *spikes, float *h, float *v, const float *x, remat_layer_type type,
                               const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {}
static void dry_neuron_backward(void *ctx, float *dx, float *gv, const float *dspikes, const float *h,
                                remat_layer_type type, const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {}
static void dry_batchnorm_forward(void *ctx, float *out, float *mean, float *rstd, float *running_mean,
                                  float *running_var, const float *inp, const float *weight, const float *bias,
                                  int64_t rows, int64_t C) {}
static void dry_batchnorm_backward(void *ctx, float *dinp, float *dweight, float *dbias, const float *dout,
                                   const float *inp, const float *weight, const float *mean, const float *rstd,
                                   int64_t rows, int64_t C) {}
static void dry_dropout_mask(void *ctx, float *mask, uint64_t seed, uint64_t iter, int layer, float p, int64_t nf) {}
static void dry_dropout_forward(void *ctx, float *out, const float *inp, uint64_t seed, uint64_t iter, int layer,
                                float p, int64_t t_steps, int64_t nf) {}
static void dry_dropout_backward(void *ctx, float *dinp, const float *dout, uint64_t seed, uint64_t iter, int layer,
                                 float p, int64_t t_steps, int64_t nf) {}
static void dry_add_forward(void *ctx, float *out, const float *a, const float *b, int64_t n) {}
static void dry_add_backward(void *ctx, float *da, float *db, const float *dout, int64_t n) {}
static float dry_loss_forward(void *ctx, float *rate, const float *out, const int32_t *labels, remat_loss_type type,
                              int64_t T, int64_t N, int64_t K) {
    return 0.0f;
}
static void dry_loss_backward(void *ctx, float *dout, const float *rate, const int32_t *labels, remat_loss_type type,
                              int64_t T, int64_t N, int64_t K) {}
static void dry_sgd_update(void *ctx, float *param, float *buf, const float *grad, float lr, float momentum,
                           int first_step, int64_t n) {}
static void dry_adam_update(void *ctx, float *param, float *m, float *v, const float *grad, float lr, float beta1,
                            float beta2, float eps, int step, int64_t n) {}
static void dry_fill_uniform(void *ctx, float *out, int64_t n, float lo, float hi, uint64_t seed, uint64_t stream,
                             uint64_t key) {}
static void dry_fill_bernoulli(void *ctx, float *out, int64_t n, float rate, uint64_t seed, uint64_t stream,
                               uint64_t key) {}
static void dry_fill_labels(void *ctx, int32_t *labels, int64_t n, int64_t classes, uint64_t seed, uint64_t key) {}
static int64_t dry_count_nonzero(void *ctx, const float *x, int64_t n) { return -1; }
static remat_status dry_compress(void *ctx, remat_compressor c, void *dst, int64_t dst_bytes, const float *src,
                                 int64_t n, remat_error *err) {
    return REMAT_OK;
}
static remat_status dry_decompress(void *ctx, remat_compressor c, float *dst, int64_t n, const void *src,
                                   int64_t src_bytes, remat_error *err) {
    return REMAT_OK;
}

static const remat_backend_ops dry_ops = {
    .name = "dry",
    .has_data = 0,
    .segment_alloc = dry_segment_alloc,
    .segment_free = dry_segment_free,
    .mem_info = dry_mem_info,
    .zero = dry_zero,
    .copy = dry_copy,
    .to_host = dry_copy,
    .from_host = dry_copy,
    .now = dry_now,
    .destroy = dry_destroy,
    .linear_forward = dry_linear_forward,
    .linear_backward = dry_linear_backward,
    .neuron_forward = dry_neuron_forward,
    .neuron_backward = dry_neuron_backward,
    .batchnorm_forward = dry_batchnorm_forward,
    .batchnorm_backward = dry_batchnorm_backward,
    .dropout_mask = dry_dropout_mask,
    .dropout_forward = dry_dropout_forward,
    .dropout_backward = dry_dropout_backward,
    .add_forward = dry_add_forward,
    .add_backward = dry_add_backward,
    .loss_forward = dry_loss_forward,
    .loss_backward = dry_loss_backward,
    .sgd_update = dry_sgd_update,
    .adam_update = dry_adam_update,
    .fill_uniform = dry_fill_uniform,
    .fill_bernoulli = dry_fill_bernoulli,
    .fill_labels = dry_fill_labels,
    .count_nonzero = dry_count_nonzero,
    .compress = dry_compress,
    .decompress = dry_decompress,
};

remat_status remat_backend_dry_init(remat_backend *out, remat_error *err) {
    out->ops = &dry_ops;
    out->ctx = NULL;
    return REMAT_OK;
}
