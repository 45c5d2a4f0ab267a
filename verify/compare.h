/* compare.h - bit-for-bit comparison of two tensor sets.
 *
 * Two elements are equal only when their 32-bit patterns are equal: -0.0 differs
 * from +0.0, and two NaNs with different payloads differ (a NaN equals the same
 * NaN). A tensor present in one set only, or with another dtype or shape, is a
 * difference of the whole tensor.
 */
#ifndef REMAT_VERIFY_COMPARE_H
#define REMAT_VERIFY_COMPARE_H

#include <stdint.h>

#include "core/base/status.h"
#include "verify/tensor_set.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum remat_verify_diff_kind {
    REMAT_VERIFY_SAME = 0,      /* every bit pattern equal */
    REMAT_VERIFY_DIFFERENT = 1, /* same shape, n_diff > 0 */
    REMAT_VERIFY_SHAPE = 2,     /* dtype or shape differ (shape/ndim are a's) */
    REMAT_VERIFY_ONLY_A = 3,    /* missing from b */
    REMAT_VERIFY_ONLY_B = 4,    /* missing from a */
} remat_verify_diff_kind;

typedef struct remat_verify_diff {
    char name[REMAT_VERIFY_NAME_LEN];
    remat_verify_diff_kind kind;
    remat_verify_dtype dtype;
    int ndim;
    int64_t shape[REMAT_VERIFY_MAX_DIMS];
    int64_t elems;
    int64_t n_diff;          /* elements whose patterns differ (elems for SHAPE/ONLY_*) */
    double max_abs_diff;     /* max |a - b| over differing elements (0 for -0.0 vs +0.0);
                                NaN when a differing element holds a NaN, 0 when none differ */
    int64_t first_flat;      /* flat index of the first difference, -1 if none */
    int64_t first_index[REMAT_VERIFY_MAX_DIMS]; /* the same as a multi-index (ndim entries) */
    uint32_t first_a, first_b;                  /* the patterns there */
} remat_verify_diff;

typedef struct remat_verify_cmp {
    int n;                   /* a's tensors in a's order, then those only in b */
    remat_verify_diff *d;    /* owned */
    int n_different;         /* entries whose kind != SAME */
} remat_verify_cmp;

/* Compares the bits of a and b (in that orientation). Only fails for lack of memory. */
remat_status remat_verify_compare(const remat_verify_set *a, const remat_verify_set *b, remat_verify_cmp *out,
                                  remat_error *err);
/* Compares two tensors of equal shape, filling n_diff, max_abs_diff, first_*. */
void remat_verify_compare_tensor(const remat_verify_tensor *a, const remat_verify_tensor *b, remat_verify_diff *d);
void remat_verify_cmp_free(remat_verify_cmp *c);

/* Text of the multi-index "(1, 0, 7)" of a diff's first difference, "-" if none. */
const char *remat_verify_index_str(const remat_verify_diff *d, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
