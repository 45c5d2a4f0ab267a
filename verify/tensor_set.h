/* tensor_set.h - a named collection of host tensors, the unit `remat verify` compares.
 *
 * Names follow the gradient dump of docs/interfaces.md without the leading slash:
 * "loss", "input", "labels", "params/<layer>/<name>", "grads/<layer>/<name>",
 * "grads/input", "after/<layer>/running_mean", "after/<layer>/running_var",
 * "masks/<layer>". Elements are stored as their 32-bit patterns (float32 or
 * int32), because the comparison is on bits, never on values.
 */
#ifndef REMAT_VERIFY_TENSOR_SET_H
#define REMAT_VERIFY_TENSOR_SET_H

#include <stdint.h>

#include "core/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_VERIFY_NAME_LEN 160
#define REMAT_VERIFY_MAX_DIMS 8

typedef enum remat_verify_dtype {
    REMAT_VERIFY_F32 = 0,
    REMAT_VERIFY_I32 = 1,
} remat_verify_dtype;

typedef struct remat_verify_tensor {
    char name[REMAT_VERIFY_NAME_LEN];
    remat_verify_dtype dtype;
    int ndim;                               /* 0 for a scalar */
    int64_t shape[REMAT_VERIFY_MAX_DIMS];
    int64_t elems;                          /* product of shape (1 for a scalar) */
    uint32_t *bits;                         /* owned, elems patterns */
} remat_verify_tensor;

typedef struct remat_verify_set {
    int n, cap;
    remat_verify_tensor *t; /* owned, in insertion order */
} remat_verify_set;

/* Adds a tensor, copying elems = prod(shape) 32-bit patterns from data (may be NULL:
 * zero-filled; fill through the returned pointer). Returns the new tensor, or NULL
 * with err set (name too long or repeated, too many dims, negative extent, no memory).
 * The returned pointer is valid until the next add. */
remat_verify_tensor *remat_verify_set_add(remat_verify_set *s, const char *name, remat_verify_dtype dtype, int ndim,
                                          const int64_t *shape, const void *data, remat_error *err);
/* The tensor of that name, or NULL. */
const remat_verify_tensor *remat_verify_set_find(const remat_verify_set *s, const char *name);
/* Frees every tensor; *s becomes empty (reusable). */
void remat_verify_set_free(remat_verify_set *s);

/* "[64, 32]" (or "[]" for a scalar) into buf; returns buf. */
const char *remat_verify_shape_str(int ndim, const int64_t *shape, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
