/* dump_read.h - reads a gradient dump (dump.h, docs/interfaces.md "Gradient dump") back:
 * every dataset with its path, shape and data, and the root attributes, so that
 * `remat verify` can compare two dumps bit for bit.
 *
 *   remat_dump d;
 *   if (remat_dump_read("a.h5", &d, &err) != REMAT_OK) ...
 *   const remat_dump_entry *g = remat_dump_find(&d, "/grads/fc1/weight");
 *   ... memcmp(g->data, other->data, g->elems * 4) ...
 *   remat_dump_free(&d);
 */
#ifndef REMAT_DUMP_READ_H
#define REMAT_DUMP_READ_H

#include <stdint.h>

#include "core/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_DUMP_MAX_RANK 8

typedef enum remat_dump_dtype { REMAT_DUMP_F32 = 0, REMAT_DUMP_I32 = 1 } remat_dump_dtype;

typedef struct remat_dump_entry {
    char *path;             /* "/grads/fc1/weight", owned */
    remat_dump_dtype dtype; /* float32 everywhere, int32 for /labels */
    int rank;               /* 0 for a scalar (/loss) */
    int64_t dims[REMAT_DUMP_MAX_RANK];
    int64_t elems;          /* product of dims (1 for a scalar) */
    void *data;             /* owned: elems float or int32_t as stored (bit exact); NULL if elems == 0 */
} remat_dump_entry;

typedef struct remat_dump {
    char *model, *plan, *seed, *backend; /* root attributes, owned */
    int n;
    remat_dump_entry *entries;           /* owned, sorted by path (strcmp) */
} remat_dump;

/* Reads every dataset of the file. REMAT_ERR_IO if it cannot be opened; REMAT_ERR_INPUT
 * naming the file and the object when it is not HDF5, truncated, lacks one of the
 * root string attributes model/plan/seed/backend or /loss, /labels, /input,
 * /grads/input, or holds a dataset that is neither float32 nor int32. On failure
 * *out is empty. */
remat_status remat_dump_read(const char *path, remat_dump *out, remat_error *err);
/* The entry with that path ("/loss"), or NULL. O(log n). */
const remat_dump_entry *remat_dump_find(const remat_dump *d, const char *path);
void remat_dump_free(remat_dump *d);

#ifdef __cplusplus
}
#endif
#endif
