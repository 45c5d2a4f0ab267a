/* check_backend.h - a backend that forwards every op to another backend and checks
 * each compression it sees, on the real tensors of a run.
 *
 * For every compress(c, dst, src, n) the checker copies src (the original) and the
 * compressed bytes to the host and decodes those bytes with the host reference
 * decoder (core/codec/compress.h): that proves the backend wrote the documented format
 * losslessly. For every decompress(c, dst, n, src) from a buffer it saw being
 * written, it copies dst to the host and compares it with the original bit for bit:
 * that proves the round trip the executor relies on.
 *
 * A check cannot see what the executor does to a tensor after the backend returned
 * it; remat_verify_plan also compares every gradient, which catches that.
 *
 *   remat_backend chk;
 *   remat_verify_check_backend_init(&chk, &ref, &err);
 *   ... run a session on &chk ...
 *   remat_verify_check_stats st; remat_verify_check_backend_stats(&chk, &st);
 *   remat_backend_free(&chk);    // frees the checker only, never `inner`
 */
#ifndef REMAT_VERIFY_CHECK_BACKEND_H
#define REMAT_VERIFY_CHECK_BACKEND_H

#include <stdint.h>

#include "core/exec/backend.h"
#include "core/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_verify_check_stats {
    int64_t compressions;     /* compress calls that succeeded */
    int64_t format_bad;       /* ... whose bytes the host decoder did not restore bit for bit */
    int64_t decompressions;   /* decompress calls from a buffer a compress wrote */
    int64_t roundtrip_bad;    /* ... whose result differed from the original */
    int64_t unmatched;        /* decompress calls from a buffer no compress wrote (not checked) */
    int64_t bytes_checked;    /* original bytes compared */
    char first_problem[256];  /* "" or one line describing the first failure */
} remat_verify_check_stats;

/* Wraps inner (which must outlive the checker). */
remat_status remat_verify_check_backend_init(remat_backend *out, remat_backend *inner, remat_error *err);
/* Counters so far. b must come from remat_verify_check_backend_init. */
void remat_verify_check_backend_stats(const remat_backend *b, remat_verify_check_stats *out);
/* Forgets every remembered original and zeroes the counters. */
void remat_verify_check_backend_reset(remat_backend *b);

#ifdef __cplusplus
}
#endif
#endif
