/* compress_messages.h - the compressors' refusals, worded exactly as core/codec/compress.c
 * words them (cuda/compress.cu reports through these; tests/cuda_test.cc checks each
 * against the reference on the host, so a change of wording there shows up without a
 * GPU). Host-only C++ (inline functions).
 */
#ifndef REMAT_CUDA_COMPRESS_MESSAGES_H
#define REMAT_CUDA_COMPRESS_MESSAGES_H

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "core/codec/compress.h"
#include "core/base/status.h"
#include "core/base/types.h"

namespace remat_cuda {

/* The value check's "what": the formats' accepted values. */
#define REMAT_CUDA_WHAT_BINARY "+0.0 or 1.0"
#define REMAT_CUDA_WHAT_UINT8 "an integer 0..255 (+0.0 for zero)"

inline remat_status msg_refuse_value(remat_error *err, remat_compressor comp, int64_t i, float v, const char *what) {
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return remat_error_set(err, REMAT_ERR_INPUT, "%s compressor: element %" PRId64 " is %.9g, not %s (bits 0x%08" PRIx32 ")",
                           remat_compressor_name(comp), i, (double)v, what, b);
}

/* Arguments, in the reference's order; field is "dst_bytes" or "src_bytes". */
inline remat_status msg_check_args(remat_compressor comp, int64_t n, int64_t bytes, const void *buf, const char *field,
                                   remat_error *err) {
    if (comp < REMAT_COMP_NONE || comp >= REMAT_COMP_COUNT)
        return remat_error_set(err, REMAT_ERR_INPUT, "compressor: id: expected 0..%d, got %d", REMAT_COMP_COUNT - 1,
                               (int)comp);
    if (n < 0 || n > REMAT_COMPRESS_MAX_ELEMS)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s compressor: n: expected 0..%" PRId64 " elements, got %" PRId64,
                               remat_compressor_name(comp), (int64_t)REMAT_COMPRESS_MAX_ELEMS, n);
    if (bytes < 0 || (bytes > 0 && !buf))
        return remat_error_set(err, REMAT_ERR_INPUT, "%s compressor: %s: expected a buffer of %" PRId64 " bytes",
                               remat_compressor_name(comp), field, bytes);
    return REMAT_OK;
}

inline remat_status msg_null_src(remat_error *err, remat_compressor comp, int64_t n) {
    return remat_error_set(err, REMAT_ERR_INPUT, "%s compressor: src: expected %" PRId64 " elements, got NULL",
                           remat_compressor_name(comp), n);
}

inline remat_status msg_null_dst(remat_error *err, remat_compressor comp, int64_t n) {
    return remat_error_set(err, REMAT_ERR_INPUT, "%s compressor: dst: expected room for %" PRId64 " elements, got NULL",
                           remat_compressor_name(comp), n);
}

inline remat_status msg_wrong_size(remat_error *err, remat_compressor comp, const char *field, int64_t want,
                                   int64_t got) {
    return remat_error_set(err, REMAT_ERR_INPUT, "%s compressor: %s: expected %" PRId64 " bytes, got %" PRId64,
                           remat_compressor_name(comp), field, want, got);
}

inline remat_status msg_bool_byte(remat_error *err, int64_t i, unsigned v) {
    return remat_error_set(err, REMAT_ERR_INPUT, "bool compressor: byte %" PRId64 ": expected 0 or 1, got %u", i, v);
}

inline remat_status msg_bit_padding(remat_error *err, int64_t byte, int bits, unsigned v) {
    return remat_error_set(err, REMAT_ERR_INPUT,
                           "bit compressor: byte %" PRId64 ": expected zero padding above bit %d, got 0x%02x", byte,
                           bits, v);
}

inline remat_status msg_sparse_multiple(remat_error *err, int64_t src_bytes) {
    return remat_error_set(err, REMAT_ERR_INPUT, "sparse compressor: src_bytes: expected a multiple of 4, got %" PRId64,
                           src_bytes);
}

inline remat_status msg_sparse_range(remat_error *err, int64_t w, int64_t n, uint32_t pos) {
    return remat_error_set(err, REMAT_ERR_INPUT,
                           "sparse compressor: position %" PRId64 ": expected < %" PRId64 ", got %" PRIu32, w, n, pos);
}

inline remat_status msg_sparse_order(remat_error *err, int64_t w, int64_t prev, uint32_t pos) {
    return remat_error_set(err, REMAT_ERR_INPUT,
                           "sparse compressor: position %" PRId64 ": expected ascending (> %" PRId64 "), got %" PRIu32,
                           w, prev, pos);
}

} /* namespace remat_cuda */

#endif
