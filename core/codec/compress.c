/* compress.c - the lossless spike compressors of compress.h.
 *
 * Values are judged by their bit pattern, never by comparison (0.5 == 0 is false but
 * -0.0 == 0 is true, and NaN compares false with everything): bit, bool and sparse take
 * exactly 0x00000000 (+0.0) and 0x3f800000 (1.0); uint8 takes the patterns of
 * 0.0, 1.0, ..., 255.0. Anything else is refused with the index and value of the first
 * offending element. Decompression refuses any buffer that a compression of n elements
 * could not have produced (wrong size, set padding bits, bool bytes above 1, sparse
 * positions out of range or not strictly ascending).
 * Assumptions: dst/src need no alignment (sparse positions are read and written with
 * memcpy, little-endian as the host stores uint32).
 * bf16 activations (the _as functions with REMAT_ENC_BF16): an element is judged by its
 * widened fp32 pattern (exact: 0x3f80 widens to 0x3f800000), and decompression stores
 * bf16 patterns; every value the formats hold (0..255) is a bf16, so nothing rounds.
 */
#include "core/codec/compress.h"

#include <inttypes.h>
#include <string.h>

#include "core/base/bf16.h"

#define BITS_ZERO 0x00000000u
#define BITS_ONE 0x3f800000u

/* The fp32 pattern of element i of an F32 or BF16 (b16) array. */
static inline uint32_t bits_at(const void *x, int64_t i, int b16) {
    if (b16) {
        uint16_t h;
        memcpy(&h, (const uint8_t *)x + 2 * i, sizeof h);
        return (uint32_t)h << 16;
    }
    uint32_t u;
    memcpy(&u, (const uint8_t *)x + 4 * i, sizeof u);
    return u;
}

static inline float value_at(const void *x, int64_t i, int b16) {
    return remat_f32_from_bits(bits_at(x, i, b16));
}

/* Stores the small integer v (0..255: exact in both types) as element i. */
static inline void store_at(void *x, int64_t i, unsigned v, int b16) {
    const float f = (float)v;
    if (b16) {
        const uint16_t h = (uint16_t)(remat_f32_bits(f) >> 16);
        memcpy((uint8_t *)x + 2 * i, &h, sizeof h);
    } else {
        memcpy((uint8_t *)x + 4 * i, &f, sizeof f);
    }
}

static int is_b16(remat_encoding e) { return e == REMAT_ENC_BF16; }

remat_encoding remat_compressor_encoding(remat_compressor c) {
    switch (c) {
    case REMAT_COMP_BOOL:
    case REMAT_COMP_UINT8: return REMAT_ENC_U8;
    case REMAT_COMP_BIT: return REMAT_ENC_BIT;
    case REMAT_COMP_SPARSE: return REMAT_ENC_SPARSE;
    case REMAT_COMP_NONE:
    default: return REMAT_ENC_F32;
    }
}

int64_t remat_compressed_bytes(remat_compressor c, int64_t n, int64_t nnz) {
    if (c < REMAT_COMP_NONE || c >= REMAT_COMP_COUNT || n < 0 || nnz < 0) return -1;
    return remat_encoding_bytes(remat_compressor_encoding(c), n, nnz);
}

int64_t remat_count_nonzero_as(const void *x, remat_encoding enc, int64_t n) {
    const int b16 = is_b16(enc);
    int64_t nnz = 0;
    for (int64_t i = 0; i < n; i++) nnz += bits_at(x, i, b16) != 0;
    return nnz;
}

int64_t remat_count_nonzero(const float *x, int64_t n) { return remat_count_nonzero_as(x, REMAT_ENC_F32, n); }

/* Index of the first element that is not +0.0 or 1.0, or n. */
static int64_t first_non_binary(const void *src, int64_t n, int b16) {
    const int64_t chunk = 1024;
    for (int64_t i0 = 0; i0 < n; i0 += chunk) {
        const int64_t i1 = n - i0 < chunk ? n : i0 + chunk;
        uint32_t bad = 0;
        for (int64_t i = i0; i < i1; i++) {
            const uint32_t u = bits_at(src, i, b16);
            bad |= (u != BITS_ZERO) & (u != BITS_ONE);
        }
        if (bad)
            for (int64_t i = i0; i < i1; i++) {
                const uint32_t u = bits_at(src, i, b16);
                if (u != BITS_ZERO && u != BITS_ONE) return i;
            }
    }
    return n;
}

/* 1 when f is exactly one of 0.0, 1.0, ..., 255.0 (by bit pattern: +0 only). */
static int is_uint8_value(float f) {
    const uint32_t u = remat_f32_bits(f);
    if (u == BITS_ZERO) return 1;
    if (!(f >= 1.0f && f <= 255.0f)) return 0; /* also false for NaN and -0.0 */
    return (float)(int)f == f;
}

static remat_status refuse_value(remat_error *err, remat_compressor c, int64_t i, float v, const char *what) {
    return remat_error_set(err, REMAT_ERR_INPUT, "%s compressor: element %" PRId64 " is %.9g, not %s (bits 0x%08" PRIx32
                           ")", remat_compressor_name(c), i, (double)v, what, remat_f32_bits(v));
}

static remat_status check_args(remat_compressor c, int64_t n, int64_t bytes, const void *buf, const char *field,
                               remat_error *err) {
    if (c < REMAT_COMP_NONE || c >= REMAT_COMP_COUNT)
        return remat_error_set(err, REMAT_ERR_INPUT, "compressor: id: expected 0..%d, got %d", REMAT_COMP_COUNT - 1,
                               (int)c);
    if (n < 0 || n > REMAT_COMPRESS_MAX_ELEMS)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s compressor: n: expected 0..%" PRId64 " elements, got %" PRId64,
                               remat_compressor_name(c), REMAT_COMPRESS_MAX_ELEMS, n);
    if (bytes < 0 || (bytes > 0 && !buf))
        return remat_error_set(err, REMAT_ERR_INPUT, "%s compressor: %s: expected a buffer of %" PRId64 " bytes",
                               remat_compressor_name(c), field, bytes);
    return REMAT_OK;
}

static remat_status wrong_size(remat_error *err, remat_compressor c, const char *field, int64_t want, int64_t got) {
    return remat_error_set(err, REMAT_ERR_INPUT, "%s compressor: %s: expected %" PRId64 " bytes, got %" PRId64,
                           remat_compressor_name(c), field, want, got);
}

remat_status remat_compress_as(remat_compressor c, void *dst, int64_t dst_bytes, const void *src,
                               remat_encoding src_enc, int64_t n, remat_error *err) {
    remat_status st = check_args(c, n, dst_bytes, dst, "dst_bytes", err);
    if (st != REMAT_OK) return st;
    if (n > 0 && !src)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s compressor: src: expected %" PRId64 " elements, got NULL",
                               remat_compressor_name(c), n);
    const int b16 = is_b16(src_enc);
    const int64_t esize = b16 ? 2 : 4;
    uint8_t *out = dst;
    switch (c) {
    case REMAT_COMP_NONE:
        if (dst_bytes != n * esize) return wrong_size(err, c, "dst_bytes", n * esize, dst_bytes);
        if (n) memcpy(out, src, (size_t)(n * esize));
        return REMAT_OK;
    case REMAT_COMP_BOOL:
    case REMAT_COMP_BIT:
    case REMAT_COMP_SPARSE: {
        const int64_t bad = first_non_binary(src, n, b16);
        if (bad < n) return refuse_value(err, c, bad, value_at(src, bad, b16), "+0.0 or 1.0");
        if (c == REMAT_COMP_BOOL) {
            if (dst_bytes != n) return wrong_size(err, c, "dst_bytes", n, dst_bytes);
            for (int64_t i = 0; i < n; i++) out[i] = bits_at(src, i, b16) == BITS_ONE;
        } else if (c == REMAT_COMP_BIT) {
            const int64_t want = (n + 7) / 8;
            if (dst_bytes != want) return wrong_size(err, c, "dst_bytes", want, dst_bytes);
            const int64_t full = n / 8;
            for (int64_t b = 0; b < full; b++) {
                uint32_t byte = 0;
                for (int j = 0; j < 8; j++) byte |= (uint32_t)(bits_at(src, b * 8 + j, b16) == BITS_ONE) << j;
                out[b] = (uint8_t)byte;
            }
            if (full < want) {
                uint32_t byte = 0;
                for (int64_t i = full * 8; i < n; i++)
                    byte |= (uint32_t)(bits_at(src, i, b16) == BITS_ONE) << (i - full * 8);
                out[full] = (uint8_t)byte;
            }
        } else {
            const int64_t nnz = remat_count_nonzero_as(src, src_enc, n);
            if (dst_bytes != nnz * 4) return wrong_size(err, c, "dst_bytes", nnz * 4, dst_bytes);
            int64_t w = 0;
            for (int64_t i = 0; i < n; i++)
                if (bits_at(src, i, b16) == BITS_ONE) {
                    const uint32_t pos = (uint32_t)i;
                    memcpy(out + 4 * w++, &pos, sizeof pos);
                }
        }
        return REMAT_OK;
    }
    case REMAT_COMP_UINT8:
        for (int64_t i = 0; i < n; i++)
            if (!is_uint8_value(value_at(src, i, b16)))
                return refuse_value(err, c, i, value_at(src, i, b16), "an integer 0..255 (+0.0 for zero)");
        if (dst_bytes != n) return wrong_size(err, c, "dst_bytes", n, dst_bytes);
        for (int64_t i = 0; i < n; i++) out[i] = (uint8_t)(int)value_at(src, i, b16);
        return REMAT_OK;
    default: return remat_error_set(err, REMAT_ERR_INTERNAL, "compressor: id %d not handled", (int)c);
    }
}

remat_status remat_compress(remat_compressor c, void *dst, int64_t dst_bytes, const float *src, int64_t n,
                            remat_error *err) {
    return remat_compress_as(c, dst, dst_bytes, src, REMAT_ENC_F32, n, err);
}

remat_status remat_decompress_as(remat_compressor c, void *dst, remat_encoding dst_enc, int64_t n, const void *src,
                                 int64_t src_bytes, remat_error *err) {
    remat_status st = check_args(c, n, src_bytes, src, "src_bytes", err);
    if (st != REMAT_OK) return st;
    if (n > 0 && !dst)
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "%s compressor: dst: expected room for %" PRId64 " elements, got NULL",
                               remat_compressor_name(c), n);
    const int b16 = is_b16(dst_enc);
    const int64_t esize = b16 ? 2 : 4;
    const uint8_t *in = src;
    switch (c) {
    case REMAT_COMP_NONE:
        if (src_bytes != n * esize) return wrong_size(err, c, "src_bytes", n * esize, src_bytes);
        if (n) memcpy(dst, in, (size_t)(n * esize));
        return REMAT_OK;
    case REMAT_COMP_BOOL:
        if (src_bytes != n) return wrong_size(err, c, "src_bytes", n, src_bytes);
        for (int64_t i = 0; i < n; i++)
            if (in[i] > 1)
                return remat_error_set(err, REMAT_ERR_INPUT, "bool compressor: byte %" PRId64 ": expected 0 or 1, got %u",
                                       i, (unsigned)in[i]);
        for (int64_t i = 0; i < n; i++) store_at(dst, i, in[i], b16);
        return REMAT_OK;
    case REMAT_COMP_UINT8:
        if (src_bytes != n) return wrong_size(err, c, "src_bytes", n, src_bytes);
        for (int64_t i = 0; i < n; i++) store_at(dst, i, in[i], b16);
        return REMAT_OK;
    case REMAT_COMP_BIT: {
        const int64_t want = (n + 7) / 8;
        if (src_bytes != want) return wrong_size(err, c, "src_bytes", want, src_bytes);
        if (n % 8 && (in[want - 1] >> (n % 8)) != 0)
            return remat_error_set(err, REMAT_ERR_INPUT,
                                   "bit compressor: byte %" PRId64 ": expected zero padding above bit %d, got 0x%02x",
                                   want - 1, (int)(n % 8), (unsigned)in[want - 1]);
        for (int64_t i = 0; i < n; i++) store_at(dst, i, (in[i >> 3] >> (i & 7)) & 1u, b16);
        return REMAT_OK;
    }
    case REMAT_COMP_SPARSE: {
        if (src_bytes % 4 != 0)
            return remat_error_set(err, REMAT_ERR_INPUT,
                                   "sparse compressor: src_bytes: expected a multiple of 4, got %" PRId64, src_bytes);
        const int64_t nnz = src_bytes / 4;
        if (nnz > n) return wrong_size(err, c, "src_bytes", n * 4, src_bytes); /* at most n ones */
        int64_t prev = -1;
        for (int64_t w = 0; w < nnz; w++) {
            uint32_t pos;
            memcpy(&pos, in + 4 * w, sizeof pos);
            if ((int64_t)pos >= n)
                return remat_error_set(err, REMAT_ERR_INPUT,
                                       "sparse compressor: position %" PRId64 ": expected < %" PRId64 ", got %" PRIu32,
                                       w, n, pos);
            if ((int64_t)pos <= prev)
                return remat_error_set(err, REMAT_ERR_INPUT,
                                       "sparse compressor: position %" PRId64 ": expected ascending (> %" PRId64
                                       "), got %" PRIu32, w, prev, pos);
            prev = pos;
        }
        if (n) memset(dst, 0, (size_t)(n * esize));
        for (int64_t w = 0; w < nnz; w++) {
            uint32_t pos;
            memcpy(&pos, in + 4 * w, sizeof pos);
            store_at(dst, pos, 1u, b16);
        }
        return REMAT_OK;
    }
    default: return remat_error_set(err, REMAT_ERR_INTERNAL, "compressor: id %d not handled", (int)c);
    }
}

remat_status remat_decompress(remat_compressor c, float *dst, int64_t n, const void *src, int64_t src_bytes,
                              remat_error *err) {
    return remat_decompress_as(c, dst, REMAT_ENC_F32, n, src, src_bytes, err);
}
