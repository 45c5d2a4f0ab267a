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
#include <string.h>

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

/* The kernels: one no-op per entry of REMAT_BACKEND_KERNELS (loss_forward returns 0). */
#define DRY_KERNEL(ret, name, params, args) \
    static ret dry_##name(void *ctx, REMAT_UNPAREN params) { return (ret)0; }
REMAT_BACKEND_KERNELS(DRY_KERNEL)
#undef DRY_KERNEL

static int64_t dry_count_nonzero(void *ctx, const void *x, remat_encoding enc, int64_t n) { return -1; }
static remat_status dry_compress(void *ctx, remat_compressor c, void *dst, int64_t dst_bytes, const void *src,
                                 remat_encoding src_enc, int64_t n, remat_error *err) {
    return REMAT_OK;
}
static remat_status dry_decompress(void *ctx, remat_compressor c, void *dst, remat_encoding dst_enc, int64_t n,
                                   const void *src, int64_t src_bytes, remat_error *err) {
    return REMAT_OK;
}

/* The table, for either conv workspace convention (backend.h: conv_im2col). */
#define DRY_ENTRY(ret, name, params, args) .name = dry_##name,
#define DRY_OPS(im2col)                                                                                                \
    {                                                                                                                  \
        .name = "dry", .has_data = 0, .conv_im2col = (im2col), .segment_alloc = dry_segment_alloc,                     \
        .segment_free = dry_segment_free, .mem_info = dry_mem_info, .zero = dry_zero, .copy = dry_copy,                \
        .to_host = dry_copy, .from_host = dry_copy, .now = dry_now, .destroy = dry_destroy,                            \
        REMAT_BACKEND_KERNELS(DRY_ENTRY).count_nonzero = dry_count_nonzero, .compress = dry_compress,                  \
        .decompress = dry_decompress,                                                                                  \
    }
static const remat_backend_ops dry_ops = DRY_OPS(0), dry_ops_im2col = DRY_OPS(1);
#undef DRY_OPS
#undef DRY_ENTRY

remat_status remat_backend_dry_init(remat_backend *out, remat_error *err) {
    out->ops = &dry_ops;
    out->ctx = NULL;
    return REMAT_OK;
}

remat_status remat_backend_dry_init_like(remat_backend *out, const char *like, remat_error *err) {
    out->ops = like && strcmp(like, "cuda") == 0 ? &dry_ops_im2col : &dry_ops;
    out->ctx = NULL;
    return REMAT_OK;
}
