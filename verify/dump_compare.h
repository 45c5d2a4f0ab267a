/* dump_compare.h - `remat verify --dump A.h5 --dump B.h5`: two gradient dumps
 * (docs/interfaces.md), compared bit for bit.
 *
 * Every dataset becomes a tensor named by its path without the leading slash
 * ("grads/fc1/weight"), so the comparison and its output are those of a plan
 * verification. Of the root attributes, `model`, `seed` and `backend` must be equal
 * too (docs/interfaces.md: the same seed, model and input give the same file for every
 * valid plan, except for the `plan` attribute); `plan` may differ.
 */
#ifndef REMAT_VERIFY_DUMP_COMPARE_H
#define REMAT_VERIFY_DUMP_COMPARE_H

#include "core/io/dump_read.h"
#include "core/base/status.h"
#include "verify/compare.h"
#include "verify/tensor_set.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Adds every dataset of d to out. */
remat_status remat_verify_set_from_dump(const remat_dump *d, remat_verify_set *out, remat_error *err);

typedef struct remat_verify_dump_result {
    remat_verify_cmp cmp;    /* a against b */
    int model_differs, seed_differs, backend_differs;
    char seed_a[32], seed_b[32], backend_a[16], backend_b[16];
    char plan_a[256], plan_b[256]; /* the plan attributes, cut to fit */
    int identical;           /* 1: every tensor and the three attributes equal */
} remat_verify_dump_result;

/* Reads both dumps and compares them. Errors only when a file cannot be read
 * (REMAT_ERR_IO / REMAT_ERR_INPUT naming it). */
remat_status remat_verify_dumps(const char *path_a, const char *path_b, remat_verify_dump_result *out,
                                remat_error *err);
void remat_verify_dump_result_free(remat_verify_dump_result *r);

#ifdef __cplusplus
}
#endif
#endif
