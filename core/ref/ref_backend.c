/* ref_backend.c - the CPU reference backend: host memory, the ref_kernels.h kernels and
 * the compress.h compressors behind the backend.h table; also remat_backend_free.
 *
 * "Device" memory is host memory: segments are 64-byte aligned blocks taken through
 * remat_xmalloc (a block over-allocates 64 + sizeof(void *) bytes and keeps the pointer
 * remat_xmalloc returned just below the aligned address, for segment_free). Every
 * kernel runs synchronously, so now() needs no synchronisation. The driver view of
 * memory is unknown here: mem_info reports -1 for both numbers.
 * Threads: as remat_ref_set_threads (values below 1 mean 1); the setting is
 * process-wide, as that function's is.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <string.h>
#include <time.h>

#include "core/exec/backend.h"
#include "core/codec/compress.h"
#include "core/ref/ref_kernels.h"

#define SEGMENT_ALIGN 64

typedef struct ref_ctx {
    int threads;
} ref_ctx;

static remat_status ref_segment_alloc(void *ctx, int64_t bytes, void **out, remat_error *err) {
    (void)ctx;
    *out = NULL;
    if (bytes < 0)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "ref backend: segment bytes: expected >= 0, got %lld",
                               (long long)bytes);
    if ((uint64_t)bytes > SIZE_MAX - SEGMENT_ALIGN - sizeof(void *))
        return remat_error_set(err, REMAT_ERR_NOMEM, "ref backend: segment of %lld bytes: too large",
                               (long long)bytes);
    char *raw = remat_xmalloc((size_t)bytes + SEGMENT_ALIGN + sizeof(void *), err);
    if (!raw) return REMAT_ERR_NOMEM;
    uintptr_t p = ((uintptr_t)raw + sizeof(void *) + SEGMENT_ALIGN - 1) / SEGMENT_ALIGN * SEGMENT_ALIGN;
    memcpy((char *)p - sizeof(void *), &raw, sizeof raw);
    *out = (void *)p;
    return REMAT_OK;
}

static void ref_segment_free(void *ctx, void *p) {
    (void)ctx;
    if (!p) return;
    void *raw;
    memcpy(&raw, (char *)p - sizeof(void *), sizeof raw);
    remat_xfree(raw);
}

static void ref_mem_info(void *ctx, int64_t *free_bytes, int64_t *total_bytes) {
    (void)ctx;
    if (free_bytes) *free_bytes = -1;
    if (total_bytes) *total_bytes = -1;
}

static void ref_zero(void *ctx, void *dst, int64_t bytes) {
    if (bytes > 0) memset(dst, 0, (size_t)bytes);
}
static void ref_copy(void *ctx, void *dst, const void *src, int64_t bytes) {
    if (bytes > 0 && dst != src) memmove(dst, src, (size_t)bytes);
}

static double ref_now(void *ctx) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void ref_destroy(void *ctx) { remat_xfree(ctx); }

static void ref_linear_forward(void *ctx, float *out, const float *inp, const float *weight, const float *bias,
                               int64_t rows, int64_t in, int64_t out_f) {
    remat_ref_linear_forward(out, inp, weight, bias, rows, in, out_f);
}
static void ref_linear_backward(void *ctx, float *dinp, float *dweight, float *dbias, const float *dout,
                                const float *inp, const float *weight, float *scratch, int64_t t_steps, int64_t N,
                                int64_t in, int64_t out_f) {
    remat_ref_linear_backward(dinp, dweight, dbias, dout, inp, weight, scratch, t_steps, N, in, out_f);
}
static void ref_neuron_forward(void *ctx, float *spikes, float *h, float *v, const float *x, remat_layer_type type,
                               const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    remat_ref_neuron_forward(spikes, h, v, x, type, o, t_steps, nf);
}
static void ref_neuron_backward(void *ctx, float *dx, float *gv, const float *dspikes, const float *h,
                                remat_layer_type type, const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    remat_ref_neuron_backward(dx, gv, dspikes, h, type, o, t_steps, nf);
}
static void ref_batchnorm_forward(void *ctx, float *out, float *mean, float *rstd, float *running_mean,
                                  float *running_var, const float *inp, const float *weight, const float *bias,
                                  int64_t rows, int64_t C) {
    remat_ref_batchnorm_forward(out, mean, rstd, running_mean, running_var, inp, weight, bias, rows, C);
}
static void ref_batchnorm_backward(void *ctx, float *dinp, float *dweight, float *dbias, const float *dout,
                                   const float *inp, const float *weight, const float *mean, const float *rstd,
                                   int64_t rows, int64_t C) {
    remat_ref_batchnorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, rows, C);
}
static void ref_dropout_mask(void *ctx, float *mask, uint64_t seed, uint64_t iter, int layer, float p, int64_t nf) {
    remat_ref_dropout_mask(mask, seed, iter, layer, p, nf);
}
static void ref_dropout_forward(void *ctx, float *out, const float *inp, uint64_t seed, uint64_t iter, int layer,
                                float p, int64_t t_steps, int64_t nf) {
    remat_ref_dropout_forward(out, inp, seed, iter, layer, p, t_steps, nf);
}
static void ref_dropout_backward(void *ctx, float *dinp, const float *dout, uint64_t seed, uint64_t iter, int layer,
                                 float p, int64_t t_steps, int64_t nf) {
    remat_ref_dropout_backward(dinp, dout, seed, iter, layer, p, t_steps, nf);
}
static void ref_add_forward(void *ctx, float *out, const float *a, const float *b, int64_t n) {
    remat_ref_add_forward(out, a, b, n);
}
static void ref_add_backward(void *ctx, float *da, float *db, const float *dout, int64_t n) {
    remat_ref_add_backward(da, db, dout, n);
}
static float ref_loss_forward(void *ctx, float *rate, const float *out, const int32_t *labels, remat_loss_type type,
                              int64_t T, int64_t N, int64_t K) {
    return remat_ref_loss_forward(rate, out, labels, type, T, N, K);
}
static void ref_loss_backward(void *ctx, float *dout, const float *rate, const int32_t *labels, remat_loss_type type,
                              int64_t T, int64_t N, int64_t K) {
    remat_ref_loss_backward(dout, rate, labels, type, T, N, K);
}
static void ref_sgd_update(void *ctx, float *param, float *buf, const float *grad, float lr, float momentum,
                           int first_step, int64_t n) {
    remat_ref_sgd_update(param, buf, grad, lr, momentum, first_step, n);
}
static void ref_adam_update(void *ctx, float *param, float *m, float *v, const float *grad, float lr, float beta1,
                            float beta2, float eps, int step, int64_t n) {
    remat_ref_adam_update(param, m, v, grad, lr, beta1, beta2, eps, step, n);
}
static void ref_fill_uniform(void *ctx, float *out, int64_t n, float lo, float hi, uint64_t seed, uint64_t stream,
                             uint64_t key) {
    remat_ref_fill_uniform(out, n, lo, hi, seed, stream, key);
}
static void ref_fill_bernoulli(void *ctx, float *out, int64_t n, float rate, uint64_t seed, uint64_t stream,
                               uint64_t key) {
    remat_ref_fill_bernoulli(out, n, rate, seed, stream, key);
}
static void ref_fill_labels(void *ctx, int32_t *labels, int64_t n, int64_t classes, uint64_t seed, uint64_t key) {
    remat_ref_fill_labels(labels, n, classes, seed, key);
}
static int64_t ref_count_nonzero(void *ctx, const float *x, int64_t n) { return remat_count_nonzero(x, n); }
static remat_status ref_compress(void *ctx, remat_compressor c, void *dst, int64_t dst_bytes, const float *src,
                                 int64_t n, remat_error *err) {
    return remat_compress(c, dst, dst_bytes, src, n, err);
}
static remat_status ref_decompress(void *ctx, remat_compressor c, float *dst, int64_t n, const void *src,
                                   int64_t src_bytes, remat_error *err) {
    return remat_decompress(c, dst, n, src, src_bytes, err);
}

static const remat_backend_ops ref_ops = {
    .name = "ref",
    .has_data = 1,
    .segment_alloc = ref_segment_alloc,
    .segment_free = ref_segment_free,
    .mem_info = ref_mem_info,
    .zero = ref_zero,
    .copy = ref_copy,
    .to_host = ref_copy,
    .from_host = ref_copy,
    .now = ref_now,
    .destroy = ref_destroy,
    .linear_forward = ref_linear_forward,
    .linear_backward = ref_linear_backward,
    .neuron_forward = ref_neuron_forward,
    .neuron_backward = ref_neuron_backward,
    .batchnorm_forward = ref_batchnorm_forward,
    .batchnorm_backward = ref_batchnorm_backward,
    .dropout_mask = ref_dropout_mask,
    .dropout_forward = ref_dropout_forward,
    .dropout_backward = ref_dropout_backward,
    .add_forward = ref_add_forward,
    .add_backward = ref_add_backward,
    .loss_forward = ref_loss_forward,
    .loss_backward = ref_loss_backward,
    .sgd_update = ref_sgd_update,
    .adam_update = ref_adam_update,
    .fill_uniform = ref_fill_uniform,
    .fill_bernoulli = ref_fill_bernoulli,
    .fill_labels = ref_fill_labels,
    .count_nonzero = ref_count_nonzero,
    .compress = ref_compress,
    .decompress = ref_decompress,
};

remat_status remat_backend_ref_init(remat_backend *out, int threads, remat_error *err) {
    out->ops = NULL;
    out->ctx = NULL;
    ref_ctx *c = remat_xmalloc(sizeof *c, err);
    if (!c) return REMAT_ERR_NOMEM;
    remat_ref_set_threads(threads);
    c->threads = remat_ref_get_threads();
    out->ops = &ref_ops;
    out->ctx = c;
    return REMAT_OK;
}

void remat_backend_free(remat_backend *b) {
    if (!b) return;
    if (b->ops && b->ops->destroy) b->ops->destroy(b->ctx);
    b->ops = NULL;
    b->ctx = NULL;
}
