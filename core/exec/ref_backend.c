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
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base/clock.h"
#include "core/exec/backend.h"
#include "core/codec/compress.h"
#include "core/ref/ref_kernels.h"

#define SEGMENT_ALIGN 64

typedef struct ref_ctx {
    int threads;
    int cpu_clock; /* REMAT_CLOCK=thread-cpu with one thread: now() is the thread's CPU time */
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

static void ref_zero(void *ctx, void *dst, int64_t bytes) { remat_ref_zero(dst, bytes); }
static void ref_copy(void *ctx, void *dst, const void *src, int64_t bytes) {
    if (bytes > 0 && dst != src) memmove(dst, src, (size_t)bytes);
}

static double ref_now(void *ctx) { return ((ref_ctx *)ctx)->cpu_clock ? remat_thread_cpu_s() : remat_now_s(); }

static void ref_destroy(void *ctx) { remat_xfree(ctx); }

/* The kernels: one forwarder per entry of REMAT_BACKEND_KERNELS, to remat_ref_<name>. */
#define REF_FORWARD(ret, name, params, args) \
    static ret ref_##name(void *ctx, REMAT_UNPAREN params) { return (ret)remat_ref_##name args; }
REMAT_BACKEND_KERNELS(REF_FORWARD)
#undef REF_FORWARD

static int64_t ref_count_nonzero(void *ctx, const void *x, remat_encoding enc, int64_t n) {
    return remat_count_nonzero_as(x, enc, n);
}
static remat_status ref_compress(void *ctx, remat_compressor c, void *dst, int64_t dst_bytes, const void *src,
                                 remat_encoding src_enc, int64_t n, remat_error *err) {
    return remat_compress_as(c, dst, dst_bytes, src, src_enc, n, err);
}
static remat_status ref_decompress(void *ctx, remat_compressor c, void *dst, remat_encoding dst_enc, int64_t n,
                                   const void *src, int64_t src_bytes, remat_error *err) {
    return remat_decompress_as(c, dst, dst_enc, n, src, src_bytes, err);
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
#define REF_ENTRY(ret, name, params, args) .name = ref_##name,
    REMAT_BACKEND_KERNELS(REF_ENTRY)
#undef REF_ENTRY
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
    const char *clk = getenv("REMAT_CLOCK");
    if (clk && strcmp(clk, "wall") && strcmp(clk, "thread-cpu")) {
        remat_xfree(c);
        return remat_error_set(err, REMAT_ERR_INPUT, "REMAT_CLOCK: expected \"wall\" or \"thread-cpu\", found \"%.40s\"",
                               clk);
    }
    c->cpu_clock = clk && !strcmp(clk, "thread-cpu") && c->threads == 1;
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
