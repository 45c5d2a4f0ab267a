/* compress_check.h - `remat verify --compressors`: the compressors alone, over
 * adversarial inputs.
 *
 * For each compressor (bool, uint8, bit, sparse) every case compresses a buffer,
 * checks the compressed size against the formula of compress.h computed here
 * independently, checks the compressed bytes against an encoder written here from
 * the documented format, decompresses and compares every bit pattern. Inputs:
 * empty, one element, every length 1..1000, all zeros, all ones (and all 255 for
 * uint8), alternating, random densities 0..1 (seeded; the seed is reported), the
 * size formulas at REMAT_COMPRESS_MAX_ELEMS (nothing allocated), and one large
 * round trip for bit. Refusals: a value the format cannot hold (0.5, -0.0, NaN,
 * 2.0, inf, ... for bit/bool/sparse; 1.5, 256.0, -1.0, -0.0, NaN, ... for uint8)
 * placed first, in the middle, last, must return REMAT_ERR_INPUT naming the
 * element; malformed compressed buffers must be refused by decompression.
 */
#ifndef REMAT_VERIFY_COMPRESS_CHECK_H
#define REMAT_VERIFY_COMPRESS_CHECK_H

#include <stdint.h>

#include "core/codec/compress.h"
#include "core/base/status.h"
#include "core/base/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The functions under test (compress.h's by default); tests substitute broken ones
 * to prove the checks fail. */
typedef struct remat_verify_codec {
    int64_t (*bytes)(remat_compressor c, int64_t n, int64_t nnz);
    remat_status (*compress)(remat_compressor c, void *dst, int64_t dst_bytes, const float *src, int64_t n,
                             remat_error *err);
    remat_status (*decompress)(remat_compressor c, float *dst, int64_t n, const void *src, int64_t src_bytes,
                               remat_error *err);
} remat_verify_codec;

/* compress.h's functions. */
remat_verify_codec remat_verify_codec_default(void);

/* large_elems for "as large as fits": the most elements (at most
 * REMAT_COMPRESS_MAX_ELEMS, at least REMAT_VERIFY_LARGE_DEFAULT) whose 4 bytes + 1 bit
 * each fit in this machine's available memory with 1 GiB to spare. The full
 * REMAT_COMPRESS_MAX_ELEMS round trip takes 16.5 GiB and minutes. */
#define REMAT_VERIFY_LARGE_AUTO (-1)
/* The default: 2^28 + 3 elements (1 GiB of floats; not a multiple of 8). */
#define REMAT_VERIFY_LARGE_DEFAULT (((int64_t)1 << 28) + 3)

typedef struct remat_verify_compress_opts {
    uint64_t seed;          /* random densities and patterns */
    int64_t large_elems;    /* the large bit round trip: elements (default REMAT_VERIFY_LARGE_DEFAULT),
                               0 to skip, or REMAT_VERIFY_LARGE_AUTO */
    const remat_verify_codec *codec; /* NULL: remat_verify_codec_default() */
    /* Called before each group (may be NULL): for a progress line. */
    void (*progress)(void *ctx, const char *compressor, const char *group);
    void *progress_ctx;
} remat_verify_compress_opts;

remat_verify_compress_opts remat_verify_compress_opts_default(void);

#define REMAT_VERIFY_MAX_GROUPS 128

typedef struct remat_verify_compress_group {
    char compressor[16];     /* "bit", ... */
    char what[64];           /* "lengths 1..1000", "refuse 0.5", ... */
    int64_t cases;           /* checks made */
    int64_t failures;        /* checks that failed */
    char first_failure[256]; /* "" or the first failure, one line */
    double seconds;
} remat_verify_compress_group;

typedef struct remat_verify_compress_report {
    uint64_t seed;
    int64_t large_elems;     /* what the large round trip used (0: skipped) */
    int n;
    remat_verify_compress_group g[REMAT_VERIFY_MAX_GROUPS];
    int64_t cases, failures; /* totals */
} remat_verify_compress_report;

/* Runs every group. Returns REMAT_OK when the checks ran (read out->failures);
 * REMAT_ERR_NOMEM when a buffer could not be allocated. */
remat_status remat_verify_compressors_run(const remat_verify_compress_opts *o, remat_verify_compress_report *out,
                                          remat_error *err);

/* The size formula of compress.h, written independently: bool/uint8 n, bit
 * ceil(n/8), sparse 4*nnz; -1 for NONE or an unknown compressor. */
int64_t remat_verify_expected_bytes(remat_compressor c, int64_t n, int64_t nnz);

#ifdef __cplusplus
}
#endif
#endif
