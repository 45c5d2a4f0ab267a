/* h5_util.h - small HDF5 helpers shared by traces (trace_h5.c), gradient dumps
 * (dump_h5.c, dump_read.c) and the simulator's outputs.
 *
 * Every helper silences HDF5's own error printing (H5Eset_auto2) and reports one
 * line through remat_error naming the file and the object:
 *   "<file>: <object>: <what was expected>".
 * `file` arguments are only used in those messages.
 *
 *   hid_t f;
 *   if (remat_h5_create(tmp, &f, &err) != REMAT_OK) ...
 *   remat_h5_write(f, path, "/events/bytes", REMAT_H5_I64, 1, &n, bytes, &err);
 *   remat_h5_close(f);
 *
 * Files are written with the HDF5 1.8+ object format (checksummed metadata),
 * contiguous uncompressed datasets and no modification times (the same content
 * gives the same bytes), so h5py and h5dump read them as they are.
 */
#ifndef REMAT_H5_UTIL_H
#define REMAT_H5_UTIL_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "core/base/status.h"
#include "core/io/atomic_file.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum remat_h5_type {
    REMAT_H5_I8 = 0,
    REMAT_H5_U8,
    REMAT_H5_I32,
    REMAT_H5_I64,
    REMAT_H5_F32,
    REMAT_H5_F64,
    REMAT_H5_TYPE_COUNT
} remat_h5_type;

#define REMAT_H5_MAX_RANK 8

/* Bytes per element of t; "int8", "uint8", ... for messages. */
size_t remat_h5_type_size(remat_h5_type t);
const char *remat_h5_type_name(remat_h5_type t);

/* Turns off HDF5's automatic error printing for this thread (idempotent). */
void remat_h5_quiet(void);

/* Creates (truncates) path for writing, in place: for test fixtures only; every
 * output goes through remat_h5_begin. REMAT_ERR_IO on failure. */
remat_status remat_h5_create(const char *path, hid_t *out, remat_error *err);
/* Opens path read-only, through the input reader (core/io/input_file.h: a folder
 * is named, a FIFO without a writer is refused, never a hang); a FIFO or pipe
 * (process substitution) is read whole, at most REMAT_H5_MAX_STREAM_BYTES, and
 * opened from memory. REMAT_ERR_IO if it cannot be read at all, REMAT_ERR_INPUT
 * "<path>: not an HDF5 file (or truncated)" if HDF5 refuses it. */
#define REMAT_H5_MAX_STREAM_BYTES ((size_t)16 << 30)
remat_status remat_h5_open(const char *path, hid_t *out, remat_error *err);
/* Opens the bytes of an HDF5 file in memory read-only (HDF5 copies them); origin
 * names it in messages. REMAT_ERR_INPUT as remat_h5_open. */
remat_status remat_h5_open_image(const void *data, size_t n, const char *origin, hid_t *out, remat_error *err);
void remat_h5_close(hid_t file);
/* Bytes of the file on disk (-1 if unknown): an upper bound for any dataset. */
int64_t remat_h5_file_bytes(hid_t file);

/* Creates the groups on the way to `path` ("/a/b/c" creates /a and /a/b). */
remat_status remat_h5_make_parents(hid_t file, const char *file_name, const char *path, remat_error *err);
/* 1 if the link exists (every group on the way must exist too), else 0. */
int remat_h5_exists(hid_t file, const char *path);

/* Writes a dataset of `rank` dims (rank 0: scalar) with the given element type;
 * creates missing parent groups. */
remat_status remat_h5_write(hid_t file, const char *file_name, const char *path, remat_h5_type type, int rank,
                            const int64_t *dims, const void *data, remat_error *err);

/* Shape and element type of a dataset. REMAT_ERR_INPUT naming file and dataset if
 * it is missing, not a dataset, of rank > REMAT_H5_MAX_RANK, or of a type that is
 * none of remat_h5_type (then *type is REMAT_H5_TYPE_COUNT). */
typedef struct remat_h5_info {
    remat_h5_type type;
    int rank;
    int64_t dims[REMAT_H5_MAX_RANK];
    int64_t elems;
} remat_h5_info;
remat_status remat_h5_info_get(hid_t file, const char *file_name, const char *path, remat_h5_info *out,
                               remat_error *err);

/* Reads a whole dataset that must have exactly element type `type` and rank `rank`;
 * *data is allocated with remat_xmalloc (free with remat_xfree; NULL for 0 elements),
 * dims (may be NULL) receives the shape. REMAT_ERR_INPUT naming file and dataset when
 * it is missing, mistyped, of another rank, larger than the file, or unreadable. */
remat_status remat_h5_read(hid_t file, const char *file_name, const char *path, remat_h5_type type, int rank,
                           int64_t *dims, void **data, remat_error *err);
/* Same, converting any integer or float dataset to `type` (verify compares values). */
remat_status remat_h5_read_as(hid_t file, const char *file_name, const char *path, remat_h5_type type,
                              remat_h5_info *info, void **data, remat_error *err);

/* Attributes on the object at obj_path ("/" for the root). Strings are written as
 * fixed-length, NUL-padded UTF-8 (inside the checksummed object header; h5py reads
 * them as bytes: .decode()); reading accepts variable-length strings too. */
remat_status remat_h5_attr_write_str(hid_t file, const char *file_name, const char *obj_path, const char *name,
                                     const char *value, remat_error *err);
remat_status remat_h5_attr_write_i64(hid_t file, const char *file_name, const char *obj_path, const char *name,
                                     int64_t value, remat_error *err);
/* *value allocated with remat_xmalloc. REMAT_ERR_INPUT if missing or not a string. */
remat_status remat_h5_attr_read_str(hid_t file, const char *file_name, const char *obj_path, const char *name,
                                    char **value, remat_error *err);
/* REMAT_ERR_INPUT if missing or not an integer scalar. */
remat_status remat_h5_attr_read_i64(hid_t file, const char *file_name, const char *obj_path, const char *name,
                                    int64_t *value, remat_error *err);
/* 1 if obj_path has attribute `name`. */
int remat_h5_attr_exists(hid_t file, const char *obj_path, const char *name);

/* Names of the attributes on obj_path, in name order (root: "/"); each string and
 * the array allocated with remat_xmalloc; free with remat_h5_free_names. */
remat_status remat_h5_attr_names(hid_t file, const char *file_name, const char *obj_path, char ***names, int *count,
                                 remat_error *err);
/* Paths of every dataset in the file ("/grads/fc1/weight"), sorted by name. */
remat_status remat_h5_list_datasets(hid_t file, const char *file_name, char ***paths, int *count, remat_error *err);
void remat_h5_free_names(char **names, int count);

/* CRC-32 (the zlib/PNG polynomial), for content checksums: start with crc = 0. */
uint32_t remat_crc32(uint32_t crc, const void *data, size_t n);

/* Creates the HDF5 file for path: built in memory (HDF5's core driver, so HDF5
 * itself never sees a failing write), then written whole through the atomic writer
 * (core/io/atomic_file.h) by remat_h5_commit; remat_h5_abort closes and discards it.
 * Memory: the file's size, twice for a moment at commit. Errors are
 * remat_afile_open's and remat_afile_commit's (REMAT_ERR_IO "<path>: cannot write:
 * <errno text>"), REMAT_ERR_NOMEM when the image does not fit in memory. */
remat_status remat_h5_begin(const char *path, hid_t *file, remat_afile *af, remat_error *err);
remat_status remat_h5_commit(hid_t file, remat_afile *af, remat_error *err);
void remat_h5_abort(hid_t file, remat_afile *af);

/* Columns of an array of structs, as the trace writers store them (one dataset per
 * field): gather copies the elem_bytes-wide field at byte offset `off` of n records
 * (stride bytes apart, from rec) into buf, packed; scatter copies it back. */
void remat_h5_gather_column(const void *rec, size_t stride, size_t off, size_t elem_bytes, int64_t n, void *buf);
void remat_h5_scatter_column(void *rec, size_t stride, size_t off, size_t elem_bytes, int64_t n, const void *buf);
/* "a,b,c" from name(0) .. name(n-1) into buf (truncated to len, NUL-terminated): the
 * enum-name attributes of a trace. */
void remat_h5_join_names(char *buf, size_t len, int n, const char *(*name)(int));

#ifdef __cplusplus
}
#endif
#endif
