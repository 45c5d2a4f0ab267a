/* compress.h - lossless compressors for checkpointed segment inputs.
 *
 * bit:    8 spikes per byte; element i in byte i/8, bit i%8, least significant first.
 * bool:   one byte per element, 0 or 1.
 * uint8:  one byte per element holding an integer value 0..255.
 * sparse: the uint32 positions of the ones, ascending (4 bytes per one).
 * A value the format cannot represent bit for bit is refused, never rounded:
 * bit/bool/sparse accept only the float bit patterns of +0.0 and 1.0; uint8 only
 * those of 0.0, 1.0, ..., 255.0 (so -0.0 and NaN are refused everywhere).
 */
#ifndef REMAT_COMPRESS_H
#define REMAT_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "core/base/status.h"
#include "core/base/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest element count a compressor accepts (sparse positions are uint32). */
#define REMAT_COMPRESS_MAX_ELEMS ((int64_t)UINT32_MAX)

/* The encoding a compressor produces. */
remat_encoding remat_compressor_encoding(remat_compressor c);
/* Bytes the compressed form of n elements with nnz non-zeros takes. */
int64_t remat_compressed_bytes(remat_compressor c, int64_t n, int64_t nnz);
/* Number of elements whose bit pattern is not +0.0. */
int64_t remat_count_nonzero(const float *x, int64_t n);

/* Compresses n floats of src into dst (dst_bytes must equal remat_compressed_bytes).
 * Returns REMAT_ERR_INPUT with "element <i> is <value>, not <what>" for a value the
 * compressor cannot represent; dst is then unspecified but nothing else is touched. */
remat_status remat_compress(remat_compressor c, void *dst, int64_t dst_bytes, const float *src, int64_t n,
                            remat_error *err);
/* Restores n floats. Returns REMAT_ERR_INPUT on a malformed compressed buffer
 * (wrong size, sparse position out of range or not ascending, uint8 flag > 1 for bool). */
remat_status remat_decompress(remat_compressor c, float *dst, int64_t n, const void *src, int64_t src_bytes,
                              remat_error *err);

/* The same three for activations stored as enc: REMAT_ENC_F32 (the functions above) or
 * REMAT_ENC_BF16 (uint16_t bfloat16 patterns of a bf16 model). A bf16 element is judged
 * by its exactly widened fp32 pattern, so the same values are accepted and refused;
 * decompression stores bf16 patterns; "none" copies n elements of the type. */
int64_t remat_count_nonzero_as(const void *x, remat_encoding enc, int64_t n);
remat_status remat_compress_as(remat_compressor c, void *dst, int64_t dst_bytes, const void *src,
                               remat_encoding src_enc, int64_t n, remat_error *err);
remat_status remat_decompress_as(remat_compressor c, void *dst, remat_encoding dst_enc, int64_t n, const void *src,
                                 int64_t src_bytes, remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
