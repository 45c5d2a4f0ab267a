/* file_kind.h - what kind of remat file a path holds, so that a file passed where
 * another kind is expected is named in the error ("expected a model file, got a
 * plan file"). A guess from the first bytes, never a validation:
 *
 *   HDF5 signature at byte 0            -> REMAT_FILE_HDF5 (a trace or a gradient dump)
 *   a JSON object whose text mentions   "layers"       -> REMAT_FILE_MODEL
 *                                       "checkpoint" or "blocks" (no "layers") -> REMAT_FILE_PLAN
 *                                       "points"       -> REMAT_FILE_PARETO
 *                                       "series"       -> REMAT_FILE_SCALING
 *                                       anything else  -> REMAT_FILE_JSON
 *   anything else                       -> REMAT_FILE_OTHER (or REMAT_FILE_UNREADABLE)
 */
#ifndef REMAT_IO_FILE_KIND_H
#define REMAT_IO_FILE_KIND_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum remat_file_kind {
    REMAT_FILE_UNREADABLE = 0,
    REMAT_FILE_HDF5,
    REMAT_FILE_MODEL,
    REMAT_FILE_PLAN,
    REMAT_FILE_PARETO,
    REMAT_FILE_SCALING,
    REMAT_FILE_JSON,
    REMAT_FILE_OTHER,
} remat_file_kind;

/* The kind of the first len bytes of a file's text. */
remat_file_kind remat_file_kind_of_text(const char *text, size_t len);
/* The kind of the file at path (its first 64 KiB). */
remat_file_kind remat_file_kind_of(const char *path);
/* "a plan file (JSON with block plans)", "an HDF5 file (a trace or a gradient dump)", ... */
const char *remat_file_kind_words(remat_file_kind k);

#ifdef __cplusplus
}
#endif
#endif
