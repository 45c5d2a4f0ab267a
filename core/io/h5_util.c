/* h5_util.c - small HDF5 helpers (h5_util.h). Every failure becomes one line
 * "<file>: <object>: <what>"; HDF5's own stack printing is switched off. */
#include "core/io/h5_util.h"

#include "core/io/file_kind.h"
#include "core/base/grow.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include "core/io/input_file.h"

static const size_t type_sizes[REMAT_H5_TYPE_COUNT] = {1, 1, 4, 8, 4, 8};
static const char *const type_names[REMAT_H5_TYPE_COUNT] = {"int8", "uint8", "int32", "int64", "float32", "float64"};

size_t remat_h5_type_size(remat_h5_type t) { return (unsigned)t < REMAT_H5_TYPE_COUNT ? type_sizes[t] : 0; }
const char *remat_h5_type_name(remat_h5_type t) {
    return (unsigned)t < REMAT_H5_TYPE_COUNT ? type_names[t] : "unsupported type";
}

static hid_t mem_type(remat_h5_type t) {
    switch (t) {
    case REMAT_H5_I8: return H5T_NATIVE_INT8;
    case REMAT_H5_U8: return H5T_NATIVE_UINT8;
    case REMAT_H5_I32: return H5T_NATIVE_INT32;
    case REMAT_H5_I64: return H5T_NATIVE_INT64;
    case REMAT_H5_F32: return H5T_NATIVE_FLOAT;
    case REMAT_H5_F64: return H5T_NATIVE_DOUBLE;
    default: return H5I_INVALID_HID;
    }
}

static hid_t file_type(remat_h5_type t) {
    switch (t) {
    case REMAT_H5_I8: return H5T_STD_I8LE;
    case REMAT_H5_U8: return H5T_STD_U8LE;
    case REMAT_H5_I32: return H5T_STD_I32LE;
    case REMAT_H5_I64: return H5T_STD_I64LE;
    case REMAT_H5_F32: return H5T_IEEE_F32LE;
    case REMAT_H5_F64: return H5T_IEEE_F64LE;
    default: return H5I_INVALID_HID;
    }
}

void remat_h5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

/* Names of in-memory files (outputs being built, inputs read from a pipe): unique
 * among the files this process has open. */
static unsigned long mem_file_counter;

/* The operating system's reason for the failure on the current HDF5 error stack:
 * the file drivers record "... errno = 28, error message = '...'" (read right
 * after the failing call: the next API call clears the stack). */
static herr_t find_errno(unsigned n, const H5E_error2_t *e, void *data) {
    (void)n;
    int *out = data;
    const char *p = e && e->desc ? strstr(e->desc, "errno = ") : NULL;
    if (p && !*out) *out = atoi(p + 8);
    return 0;
}

static const char *h5_reason(void) {
    int e = 0;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, find_errno, &e);
    return e > 0 ? strerror(e) : "HDF5 could not write the file";
}

static hid_t make_fapl(void) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0) return fapl;
    /* 1.8+ object format: checksummed superblock, object headers and indices */
    H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST);
    /* closing the file closes whatever an error path left open */
    H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
    return fapl;
}

remat_status remat_h5_create(const char *path, hid_t *out, remat_error *err) {
    remat_h5_quiet();
    hid_t fapl = make_fapl();
    hid_t f = fapl < 0 ? H5I_INVALID_HID : H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (fapl >= 0) H5Pclose(fapl);
    if (f < 0) {
        FILE *probe = fopen(path, "wb");
        int e = probe ? 0 : errno;
        if (probe) fclose(probe);
        return remat_error_set(err, REMAT_ERR_IO, "%s: cannot create: %s", path,
                               e ? strerror(e) : "HDF5 refused to create the file");
    }
    *out = f;
    return REMAT_OK;
}

remat_status remat_h5_open_image(const void *data, size_t n, const char *origin, hid_t *out, remat_error *err) {
    remat_h5_quiet();
    static const unsigned char h5sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    if (n < 8 || memcmp(data, h5sig, 8) != 0)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: not an HDF5 file (%zu bytes)", origin, n);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    hid_t f = H5I_INVALID_HID;
    if (fapl >= 0 && H5Pset_fapl_core(fapl, (size_t)1 << 20, 0) >= 0 && H5Pset_file_image(fapl, (void *)data, n) >= 0) {
        H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
        char name[64];
        snprintf(name, sizeof name, "remat-input-%lu.h5", __atomic_add_fetch(&mem_file_counter, 1, __ATOMIC_SEQ_CST));
        f = H5Fopen(name, H5F_ACC_RDONLY, fapl);
    }
    if (fapl >= 0) H5Pclose(fapl);
    if (f < 0)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: not a readable HDF5 file (truncated or corrupted)", origin);
    *out = f;
    return REMAT_OK;
}

/* A FIFO or pipe (process substitution) cannot be read by HDF5, which seeks: its
 * bytes are read to the end and opened as a file image. */
static remat_status open_stream(const char *path, int fd, hid_t *out, remat_error *err) {
    /* the signature first: /dev/zero or a stream of anything else is refused at once,
     * not read to the size limit */
    static const unsigned char h5sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    unsigned char head[8];
    size_t got = 0;
    double limit = remat_fifo_wait_s();
    while (got < sizeof head) {
        ssize_t r = remat_input_read_timed(fd, head + got, sizeof head - got, limit);
        if (r == -2) {
            close(fd);
            return remat_error_set(err, REMAT_ERR_IO,
                                   "%s: file: the writer sent %zu bytes, then nothing for %g s (limit: REMAT_FIFO_WAIT_S)",
                                   path, got, limit);
        }
        if (r <= 0) break;
        got += (size_t)r;
    }
    if (got < sizeof head || memcmp(head, h5sig, sizeof head) != 0) {
        close(fd);
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: not an HDF5 file", path);
    }
    char *rest = NULL;
    size_t n = 0;
    remat_status st = remat_input_read_fd(fd, path, REMAT_H5_MAX_STREAM_BYTES - sizeof head, &rest, &n, err);
    if (st != REMAT_OK) return st;
    unsigned char *img = remat_xmalloc(n + sizeof head, err);
    if (!img) {
        remat_xfree(rest);
        return REMAT_ERR_NOMEM;
    }
    memcpy(img, head, sizeof head);
    memcpy(img + sizeof head, rest, n);
    remat_xfree(rest);
    st = remat_h5_open_image(img, n + sizeof head, path, out, err);
    remat_xfree(img);
    return st;
}

remat_status remat_h5_open(const char *path, hid_t *out, remat_error *err) {
    remat_h5_quiet();
    int fd, regular;
    remat_status st = remat_input_open(path, &fd, &regular, err);
    if (st != REMAT_OK) return st;
    if (!regular) return open_stream(path, fd, out, err);
    close(fd);
    FILE *probe = fopen(path, "rb");
    if (!probe) return remat_error_set(err, REMAT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    unsigned char sig[8] = {0};
    size_t got = fread(sig, 1, sizeof sig, probe);
    fclose(probe);
    static const unsigned char h5sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    /* the signature may also sit at 512, 1024, ... (user block): let HDF5 decide then */
    if (got == sizeof sig && memcmp(sig, h5sig, 8) != 0 && H5Fis_hdf5(path) <= 0) {
        remat_file_kind k = remat_file_kind_of(path);
        if (k != REMAT_FILE_OTHER && k != REMAT_FILE_UNREADABLE)
            return remat_error_set(err, REMAT_ERR_INPUT, "%s: not an HDF5 file (expected a trace or a dump, got %s)",
                                   path, remat_file_kind_words(k));
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: not an HDF5 file", path);
    }
    if (got < sizeof sig) return remat_error_set(err, REMAT_ERR_INPUT, "%s: not an HDF5 file (%zu bytes)", path, got);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl >= 0) H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, fapl >= 0 ? fapl : H5P_DEFAULT);
    if (fapl >= 0) H5Pclose(fapl);
    if (f < 0)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: not a readable HDF5 file (truncated or corrupted)", path);
    *out = f;
    return REMAT_OK;
}

void remat_h5_close(hid_t file) {
    if (file >= 0) H5Fclose(file);
}

int64_t remat_h5_file_bytes(hid_t file) {
    hsize_t n = 0;
    if (H5Fget_filesize(file, &n) < 0) return -1;
    return (int64_t)n;
}

/* Walks "/a/b/c": calls H5Lexists on each prefix. Returns 1 if all exist. */
int remat_h5_exists(hid_t file, const char *path) {
    remat_h5_quiet();
    if (!path || path[0] != '/') return 0;
    if (path[1] == 0) return 1;
    char buf[1024];
    size_t n = strlen(path);
    if (n >= sizeof buf) return 0;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == 0) {
            char c = buf[i];
            buf[i] = 0;
            htri_t e = H5Lexists(file, buf, H5P_DEFAULT);
            buf[i] = c;
            if (e <= 0) return 0;
        }
    }
    return 1;
}

remat_status remat_h5_make_parents(hid_t file, const char *file_name, const char *path, remat_error *err) {
    char buf[1024];
    size_t n = strlen(path);
    if (n >= sizeof buf || path[0] != '/')
        return remat_error_set(err, REMAT_ERR_INTERNAL, "%s: %s: bad object path", file_name, path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i < n; i++) {
        if (buf[i] != '/') continue;
        buf[i] = 0;
        htri_t e = H5Lexists(file, buf, H5P_DEFAULT);
        if (e == 0) {
            hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
            if (gcpl >= 0) H5Pset_obj_track_times(gcpl, 0); /* no clock in the file: same content, same bytes */
            hid_t g = H5Gcreate2(file, buf, H5P_DEFAULT, gcpl >= 0 ? gcpl : H5P_DEFAULT, H5P_DEFAULT);
            if (gcpl >= 0) H5Pclose(gcpl);
            if (g < 0)
                return remat_error_set(err, REMAT_ERR_IO, "%s: %s: cannot create the group: %s", file_name, buf,
                                       h5_reason());
            H5Gclose(g);
        } else if (e < 0) {
            return remat_error_set(err, REMAT_ERR_IO, "%s: %s: cannot look up the group", file_name, buf);
        }
        buf[i] = '/';
    }
    return REMAT_OK;
}

remat_status remat_h5_write(hid_t file, const char *file_name, const char *path, remat_h5_type type, int rank,
                            const int64_t *dims, const void *data, remat_error *err) {
    remat_h5_quiet();
    if (rank < 0 || rank > REMAT_H5_MAX_RANK || (unsigned)type >= REMAT_H5_TYPE_COUNT)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "%s: %s: bad rank or type", file_name, path);
    remat_status st = remat_h5_make_parents(file, file_name, path, err);
    if (st != REMAT_OK) return st;
    hsize_t hd[REMAT_H5_MAX_RANK];
    int64_t elems = 1;
    for (int i = 0; i < rank; i++) {
        hd[i] = (hsize_t)dims[i];
        elems *= dims[i];
    }
    hid_t space = rank == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(rank, hd, NULL);
    if (space < 0) return remat_error_set(err, REMAT_ERR_IO, "%s: %s: cannot create the dataspace", file_name, path);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (dcpl >= 0) H5Pset_obj_track_times(dcpl, 0);
    hid_t d = H5Dcreate2(file, path, file_type(type), space, H5P_DEFAULT, dcpl >= 0 ? dcpl : H5P_DEFAULT, H5P_DEFAULT);
    if (dcpl >= 0) H5Pclose(dcpl);
    H5Sclose(space);
    if (d < 0)
        return remat_error_set(err, REMAT_ERR_IO, "%s: %s: cannot create the dataset: %s", file_name, path, h5_reason());
    herr_t w = 0;
    if (elems > 0) w = H5Dwrite(d, mem_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    char why[128] = "";
    if (w < 0) snprintf(why, sizeof why, "%s", h5_reason());
    herr_t c = H5Dclose(d);
    if (c < 0 && !why[0]) snprintf(why, sizeof why, "%s", h5_reason());
    if (w < 0 || c < 0)
        return remat_error_set(err, REMAT_ERR_IO, "%s: %s: cannot write the data: %s", file_name, path, why);
    return REMAT_OK;
}

/* Maps an HDF5 datatype onto remat_h5_type; REMAT_H5_TYPE_COUNT when none fits. */
static remat_h5_type classify(hid_t t) {
    H5T_class_t cls = H5Tget_class(t);
    size_t sz = H5Tget_size(t);
    if (cls == H5T_INTEGER) {
        H5T_sign_t sg = H5Tget_sign(t);
        if (sz == 1) return sg == H5T_SGN_NONE ? REMAT_H5_U8 : REMAT_H5_I8;
        if (sz == 4 && sg == H5T_SGN_2) return REMAT_H5_I32;
        if (sz == 8 && sg == H5T_SGN_2) return REMAT_H5_I64;
    } else if (cls == H5T_FLOAT) {
        if (sz == 4) return REMAT_H5_F32;
        if (sz == 8) return REMAT_H5_F64;
    }
    return REMAT_H5_TYPE_COUNT;
}

/* Opens a dataset after checking that the path exists and is one. */
static remat_status open_dataset(hid_t file, const char *file_name, const char *path, hid_t *out, remat_error *err) {
    remat_h5_quiet();
    if (!remat_h5_exists(file, path))
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: missing dataset", file_name, path);
    H5O_info_t oi;
    if (H5Oget_info_by_name2(file, path, &oi, H5O_INFO_BASIC, H5P_DEFAULT) < 0)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: unreadable object (corrupted file)", file_name, path);
    if (oi.type != H5O_TYPE_DATASET)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: expected a dataset, found a group or other object",
                               file_name, path);
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
    if (d < 0) return remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: cannot open the dataset (corrupted file)", file_name, path);
    *out = d;
    return REMAT_OK;
}

static remat_status info_of(hid_t d, const char *file_name, const char *path, remat_h5_info *out, remat_error *err) {
    memset(out, 0, sizeof *out);
    hid_t t = H5Dget_type(d);
    if (t < 0) return remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: unreadable datatype (corrupted file)", file_name, path);
    out->type = classify(t);
    H5Tclose(t);
    if (out->type == REMAT_H5_TYPE_COUNT)
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "%s: %s: expected a dataset of int8, uint8, int32, int64, float32 or float64",
                               file_name, path);
    hid_t s = H5Dget_space(d);
    if (s < 0) return remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: unreadable dataspace (corrupted file)", file_name, path);
    H5S_class_t sc = H5Sget_simple_extent_type(s);
    int rank = H5Sget_simple_extent_ndims(s);
    hsize_t hd[H5S_MAX_RANK];
    int ok = (sc == H5S_SCALAR || sc == H5S_SIMPLE) && rank >= 0 && rank <= REMAT_H5_MAX_RANK &&
             (rank == 0 || H5Sget_simple_extent_dims(s, hd, NULL) == rank);
    H5Sclose(s);
    if (!ok)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: expected a dataset of rank 0..%d", file_name, path,
                               REMAT_H5_MAX_RANK);
    out->rank = rank;
    out->elems = 1;
    for (int i = 0; i < rank; i++) {
        if (hd[i] > ((hsize_t)1 << 48) || (hd[i] && (uint64_t)out->elems > ((uint64_t)1 << 48) / hd[i]))
            return remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: implausible shape (corrupted file)", file_name, path);
        out->dims[i] = (int64_t)hd[i];
        out->elems *= (int64_t)hd[i];
    }
    return REMAT_OK;
}

remat_status remat_h5_info_get(hid_t file, const char *file_name, const char *path, remat_h5_info *out,
                               remat_error *err) {
    hid_t d;
    remat_status st = open_dataset(file, file_name, path, &d, err);
    if (st != REMAT_OK) return st;
    st = info_of(d, file_name, path, out, err);
    H5Dclose(d);
    return st;
}

static remat_status read_into(hid_t file, hid_t d, const char *file_name, const char *path, const remat_h5_info *in,
                              remat_h5_type to, void **data, remat_error *err) {
    *data = NULL;
    int64_t fb = remat_h5_file_bytes(file);
    if (fb >= 0 && in->elems * (int64_t)remat_h5_type_size(in->type) > fb)
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "%s: %s: the dataset claims %lld elements, more than the file holds (truncated or "
                               "corrupted)",
                               file_name, path, (long long)in->elems);
    if (in->elems == 0) return REMAT_OK;
    void *buf = remat_xmalloc((size_t)in->elems * remat_h5_type_size(to), err);
    if (!buf) return REMAT_ERR_NOMEM;
    if (H5Dread(d, mem_type(to), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        remat_xfree(buf);
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: cannot read the data (truncated or corrupted file)",
                               file_name, path);
    }
    *data = buf;
    return REMAT_OK;
}

static const char *rank_word(int rank) {
    static const char *const w[] = {"scalar", "1-D", "2-D", "3-D", "4-D", "5-D", "6-D", "7-D", "8-D"};
    return rank >= 0 && rank <= 8 ? w[rank] : "?-D";
}

remat_status remat_h5_read(hid_t file, const char *file_name, const char *path, remat_h5_type type, int rank,
                           int64_t *dims, void **data, remat_error *err) {
    *data = NULL;
    hid_t d;
    remat_status st = open_dataset(file, file_name, path, &d, err);
    if (st != REMAT_OK) return st;
    remat_h5_info in;
    st = info_of(d, file_name, path, &in, err);
    if (st == REMAT_OK && (in.type != type || in.rank != rank))
        st = remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: expected a %s %s dataset, found a %s %s one", file_name,
                             path, rank_word(rank), remat_h5_type_name(type), rank_word(in.rank),
                             remat_h5_type_name(in.type));
    if (st == REMAT_OK) st = read_into(file, d, file_name, path, &in, type, data, err);
    H5Dclose(d);
    if (st == REMAT_OK && dims)
        for (int i = 0; i < rank; i++) dims[i] = in.dims[i];
    return st;
}

remat_status remat_h5_read_as(hid_t file, const char *file_name, const char *path, remat_h5_type type,
                              remat_h5_info *info, void **data, remat_error *err) {
    *data = NULL;
    hid_t d;
    remat_status st = open_dataset(file, file_name, path, &d, err);
    if (st != REMAT_OK) return st;
    remat_h5_info in;
    st = info_of(d, file_name, path, &in, err);
    if (st == REMAT_OK) st = read_into(file, d, file_name, path, &in, type, data, err);
    H5Dclose(d);
    if (st == REMAT_OK && info) *info = in;
    return st;
}

/* ---- attributes ------------------------------------------------------------ */

static remat_status open_obj(hid_t file, const char *file_name, const char *obj_path, hid_t *out, remat_error *err) {
    remat_h5_quiet();
    hid_t o = remat_h5_exists(file, obj_path) ? H5Oopen(file, obj_path, H5P_DEFAULT) : H5I_INVALID_HID;
    if (o < 0) return remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: missing object", file_name, obj_path);
    *out = o;
    return REMAT_OK;
}

static remat_status write_attr(hid_t file, const char *file_name, const char *obj_path, const char *name, hid_t type,
                               const void *buf, remat_error *err) {
    hid_t o;
    remat_status st = open_obj(file, file_name, obj_path, &o, err);
    if (st != REMAT_OK) return st;
    if (H5Aexists(o, name) > 0) H5Adelete(o, name);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = sp < 0 ? H5I_INVALID_HID : H5Acreate2(o, name, type, sp, H5P_DEFAULT, H5P_DEFAULT);
    herr_t w = a < 0 ? -1 : H5Awrite(a, type, buf);
    char why[128] = "";
    if (w < 0) snprintf(why, sizeof why, "%s", h5_reason());
    if (a >= 0) H5Aclose(a);
    if (sp >= 0) H5Sclose(sp);
    H5Oclose(o);
    if (w < 0)
        return remat_error_set(err, REMAT_ERR_IO, "%s: %s: cannot write attribute %s: %s", file_name, obj_path, name,
                               why);
    return REMAT_OK;
}

remat_status remat_h5_attr_write_str(hid_t file, const char *file_name, const char *obj_path, const char *name,
                                     const char *value, remat_error *err) {
    /* Fixed-length, stored inside the (checksummed) object header: variable-length
     * strings live in the global heap, which HDF5 neither checksums nor validates. */
    const char *v = value ? value : "";
    size_t n = strlen(v);
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0) return remat_error_set(err, REMAT_ERR_IO, "%s: cannot create a string type", file_name);
    H5Tset_size(t, n ? n : 1);
    H5Tset_strpad(t, H5T_STR_NULLPAD);
    H5Tset_cset(t, H5T_CSET_UTF8);
    remat_status st = write_attr(file, file_name, obj_path, name, t, n ? v : "", err);
    H5Tclose(t);
    return st;
}

remat_status remat_h5_attr_write_i64(hid_t file, const char *file_name, const char *obj_path, const char *name,
                                     int64_t value, remat_error *err) {
    hid_t t = H5Tcopy(H5T_STD_I64LE);
    remat_status st = write_attr(file, file_name, obj_path, name, t, &value, err);
    H5Tclose(t);
    return st;
}

int remat_h5_attr_exists(hid_t file, const char *obj_path, const char *name) {
    remat_h5_quiet();
    if (!remat_h5_exists(file, obj_path)) return 0;
    hid_t o = H5Oopen(file, obj_path, H5P_DEFAULT);
    if (o < 0) return 0;
    htri_t e = H5Aexists(o, name);
    H5Oclose(o);
    return e > 0;
}

/* Opens attribute `name`, checking it exists and holds exactly one element. */
static remat_status open_attr(hid_t file, const char *file_name, const char *obj_path, const char *name, hid_t *obj,
                              hid_t *attr, remat_error *err) {
    remat_status st = open_obj(file, file_name, obj_path, obj, err);
    if (st != REMAT_OK) return st;
    htri_t e = H5Aexists(*obj, name);
    if (e <= 0) {
        H5Oclose(*obj);
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: missing attribute %s", file_name, obj_path, name);
    }
    hid_t a = H5Aopen(*obj, name, H5P_DEFAULT);
    hid_t sp = a < 0 ? H5I_INVALID_HID : H5Aget_space(a);
    hssize_t n = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
    if (sp >= 0) H5Sclose(sp);
    if (a < 0 || n != 1) {
        if (a >= 0) H5Aclose(a);
        H5Oclose(*obj);
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: attribute %s: expected a single value", file_name,
                               obj_path, name);
    }
    *attr = a;
    return REMAT_OK;
}

remat_status remat_h5_attr_read_str(hid_t file, const char *file_name, const char *obj_path, const char *name,
                                    char **value, remat_error *err) {
    *value = NULL;
    hid_t o, a;
    remat_status st = open_attr(file, file_name, obj_path, name, &o, &a, err);
    if (st != REMAT_OK) return st;
    hid_t ft = H5Aget_type(a);
    st = REMAT_OK;
    if (ft < 0 || H5Tget_class(ft) != H5T_STRING) {
        st = remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: attribute %s: expected a string", file_name, obj_path, name);
    } else if (H5Tis_variable_str(ft) > 0) {
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5Tget_cset(ft));
        char *s = NULL;
        if (H5Aread(a, mt, &s) < 0 || !s) {
            st = remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: attribute %s: unreadable (corrupted file)", file_name,
                                 obj_path, name);
        } else {
            size_t n = strlen(s);
            char *copy = remat_xmalloc(n + 1, err);
            if (!copy) st = REMAT_ERR_NOMEM;
            else memcpy(copy, s, n + 1);
            *value = copy;
        }
        if (s) H5free_memory(s);
        H5Tclose(mt);
    } else {
        size_t n = H5Tget_size(ft);
        char *buf = n < ((size_t)1 << 30) ? remat_xmalloc(n + 1, err) : NULL;
        if (!buf) {
            st = remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: attribute %s: implausible size", file_name, obj_path,
                                 name);
        } else {
            hid_t mt = H5Tcopy(H5T_C_S1);
            H5Tset_size(mt, n);
            H5Tset_strpad(mt, H5T_STR_NULLPAD);
            H5Tset_cset(mt, H5Tget_cset(ft));
            if (H5Aread(a, mt, buf) < 0) {
                remat_xfree(buf);
                buf = NULL;
                st = remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: attribute %s: unreadable (corrupted file)",
                                     file_name, obj_path, name);
            } else {
                buf[n] = 0;
            }
            H5Tclose(mt);
            *value = buf;
        }
    }
    if (ft >= 0) H5Tclose(ft);
    H5Aclose(a);
    H5Oclose(o);
    return st;
}

remat_status remat_h5_attr_read_i64(hid_t file, const char *file_name, const char *obj_path, const char *name,
                                    int64_t *value, remat_error *err) {
    hid_t o, a;
    remat_status st = open_attr(file, file_name, obj_path, name, &o, &a, err);
    if (st != REMAT_OK) return st;
    hid_t ft = H5Aget_type(a);
    int64_t v = 0;
    if (ft < 0 || H5Tget_class(ft) != H5T_INTEGER)
        st = remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: attribute %s: expected an integer", file_name, obj_path,
                             name);
    else if (H5Aread(a, H5T_NATIVE_INT64, &v) < 0)
        st = remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: attribute %s: unreadable (corrupted file)", file_name,
                             obj_path, name);
    if (ft >= 0) H5Tclose(ft);
    H5Aclose(a);
    H5Oclose(o);
    if (st == REMAT_OK) *value = v;
    return st;
}

/* ---- listings ------------------------------------------------------------------ */

typedef struct {
    char **names;
    int n, cap;
    int failed;
    const char *prefix;
} name_list;

static int name_push(name_list *l, const char *prefix, const char *name) {
    int64_t cap = l->cap;
    if (remat_grow((void **)&l->names, &cap, l->n + 1, sizeof(char *), 16, INT_MAX, NULL)) return -1;
    l->cap = (int)cap;
    size_t a = strlen(prefix), b = strlen(name);
    char *s = remat_xmalloc(a + b + 1, NULL);
    if (!s) return -1;
    memcpy(s, prefix, a);
    memcpy(s + a, name, b + 1);
    l->names[l->n++] = s;
    return 0;
}

static herr_t attr_cb(hid_t loc, const char *name, const H5A_info_t *info, void *data) {
    (void)loc;
    (void)info;
    name_list *l = data;
    if (name_push(l, "", name) < 0) {
        l->failed = 1;
        return -1;
    }
    return 0;
}

void remat_h5_free_names(char **names, int count) {
    if (!names) return;
    for (int i = 0; i < count; i++) remat_xfree(names[i]);
    remat_xfree(names);
}

remat_status remat_h5_attr_names(hid_t file, const char *file_name, const char *obj_path, char ***names, int *count,
                                 remat_error *err) {
    *names = NULL;
    *count = 0;
    hid_t o;
    remat_status st = open_obj(file, file_name, obj_path, &o, err);
    if (st != REMAT_OK) return st;
    name_list l = {0};
    hsize_t idx = 0;
    herr_t r = H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_INC, &idx, attr_cb, &l);
    H5Oclose(o);
    if (r < 0 || l.failed) {
        remat_h5_free_names(l.names, l.n);
        if (l.failed) return remat_error_set(err, REMAT_ERR_NOMEM, "%s: out of memory listing attributes", file_name);
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: cannot list attributes (corrupted file)", file_name,
                               obj_path);
    }
    *names = l.names;
    *count = l.n;
    return REMAT_OK;
}

static herr_t visit_cb(hid_t obj, const char *name, const H5O_info_t *info, void *data) {
    (void)obj;
    name_list *l = data;
    if (info->type != H5O_TYPE_DATASET) return 0;
    if (name_push(l, "/", name) < 0) {
        l->failed = 1;
        return -1;
    }
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

remat_status remat_h5_list_datasets(hid_t file, const char *file_name, char ***paths, int *count, remat_error *err) {
    remat_h5_quiet();
    *paths = NULL;
    *count = 0;
    name_list l = {0};
    herr_t r = H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_INC, visit_cb, &l, H5O_INFO_BASIC);
    if (r < 0 || l.failed) {
        remat_h5_free_names(l.names, l.n);
        if (l.failed) return remat_error_set(err, REMAT_ERR_NOMEM, "%s: out of memory listing datasets", file_name);
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: cannot list the datasets (corrupted file)", file_name);
    }
    if (l.n > 1) qsort(l.names, (size_t)l.n, sizeof(char *), cmp_str);
    *paths = l.names;
    *count = l.n;
    return REMAT_OK;
}

/* ---- checksums and atomic writes --------------------------------------------- */

/* CRC-32, reflected polynomial 0xEDB88320 (zlib's crc32), slicing by 8. */
static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_tab[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++) crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

uint32_t remat_crc32(uint32_t crc, const void *data, size_t n) {
    pthread_once(&crc_once, crc_init);
    const unsigned char *p = data;
    uint32_t c = ~crc;
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        c = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^ crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
            crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^ crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) c = crc_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return ~c;
}

/* Outputs are built in memory (the core driver, no backing store) and written as
 * one image through the atomic writer: HDF5 never sees a failing write(2) (1.10.8
 * crashes at exit after a failed flush), the reason of a write error is errno's, and
 * a device or FIFO gets the bytes in order. */

/* Bob Jenkins' lookup3 hashlittle, the checksum of HDF5 metadata (H5checksum.c). */
#define ROT(x, k) (((x) << (k)) | ((x) >> (32 - (k))))
static uint32_t lookup3(const unsigned char *k, size_t length, uint32_t initval) {
    uint32_t a, b, c;
    a = b = c = 0xdeadbeef + (uint32_t)length + initval;
    while (length > 12) {
        a += k[0] + ((uint32_t)k[1] << 8) + ((uint32_t)k[2] << 16) + ((uint32_t)k[3] << 24);
        b += k[4] + ((uint32_t)k[5] << 8) + ((uint32_t)k[6] << 16) + ((uint32_t)k[7] << 24);
        c += k[8] + ((uint32_t)k[9] << 8) + ((uint32_t)k[10] << 16) + ((uint32_t)k[11] << 24);
        a -= c; a ^= ROT(c, 4); c += b;
        b -= a; b ^= ROT(a, 6); a += c;
        c -= b; c ^= ROT(b, 8); b += a;
        a -= c; a ^= ROT(c, 16); c += b;
        b -= a; b ^= ROT(a, 19); a += c;
        c -= b; c ^= ROT(b, 4); b += a;
        length -= 12;
        k += 12;
    }
    switch (length) {
    case 12: c += (uint32_t)k[11] << 24; /* fall through */
    case 11: c += (uint32_t)k[10] << 16; /* fall through */
    case 10: c += (uint32_t)k[9] << 8; /* fall through */
    case 9: c += k[8]; /* fall through */
    case 8: b += (uint32_t)k[7] << 24; /* fall through */
    case 7: b += (uint32_t)k[6] << 16; /* fall through */
    case 6: b += (uint32_t)k[5] << 8; /* fall through */
    case 5: b += k[4]; /* fall through */
    case 4: a += (uint32_t)k[3] << 24; /* fall through */
    case 3: a += (uint32_t)k[2] << 16; /* fall through */
    case 2: a += (uint32_t)k[1] << 8; /* fall through */
    case 1: a += k[0]; break;
    case 0: return c;
    }
    c ^= b; c -= ROT(b, 14);
    a ^= c; a -= ROT(c, 11);
    b ^= a; b -= ROT(a, 25);
    c ^= b; c -= ROT(b, 16);
    a ^= c; a -= ROT(c, 4);
    b ^= a; b -= ROT(a, 14);
    c ^= b; c -= ROT(b, 24);
    return c;
}
#undef ROT

/* HDF5 1.10's H5Fget_file_image writes the image's end-of-file address into a
 * version 2/3 superblock without updating its checksum (the file then fails to
 * open): recompute it. Layout: signature 8, version, offset size, length size,
 * flags, four addresses, checksum of the bytes before it. */
static void fix_superblock_checksum(unsigned char *img, size_t n) {
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    if (n < 12 || memcmp(img, sig, 8) != 0 || (img[8] != 2 && img[8] != 3)) return;
    size_t body = 12 + 4 * (size_t)img[9];
    if (body + 4 > n) return;
    uint32_t c = lookup3(img, body, 0);
    for (int i = 0; i < 4; i++) img[body + (size_t)i] = (unsigned char)(c >> (8 * i));
}

remat_status remat_h5_begin(const char *path, hid_t *file, remat_afile *af, remat_error *err) {
    *file = H5I_INVALID_HID;
    remat_status st = remat_afile_open(af, path, err);
    if (st != REMAT_OK) return st;
    remat_h5_quiet();
    char name[64]; /* unique among the files this process has open */
    snprintf(name, sizeof name, "remat-output-%lu.h5", __atomic_add_fetch(&mem_file_counter, 1, __ATOMIC_SEQ_CST));
    hid_t fapl = make_fapl();
    if (fapl >= 0 && H5Pset_fapl_core(fapl, (size_t)1 << 20, 0) < 0) {
        H5Pclose(fapl);
        fapl = H5I_INVALID_HID;
    }
    /* the root group without times too (a file-creation list is a group-creation one) */
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    if (fcpl >= 0) H5Pset_obj_track_times(fcpl, 0);
    hid_t f = fapl < 0 ? H5I_INVALID_HID : H5Fcreate(name, H5F_ACC_TRUNC, fcpl >= 0 ? fcpl : H5P_DEFAULT, fapl);
    if (fapl >= 0) H5Pclose(fapl);
    if (fcpl >= 0) H5Pclose(fcpl);
    if (f < 0) {
        remat_afile_abort(af);
        return remat_error_set(err, REMAT_ERR_NOMEM, "%s: cannot write: HDF5 could not create the file in memory", path);
    }
    *file = f;
    return REMAT_OK;
}

remat_status remat_h5_commit(hid_t file, remat_afile *af, remat_error *err) {
    ssize_t n = H5Fflush(file, H5F_SCOPE_GLOBAL) < 0 ? -1 : H5Fget_file_image(file, NULL, 0);
    void *img = n > 0 ? remat_xmalloc((size_t)n, err) : NULL;
    ssize_t got = img ? H5Fget_file_image(file, img, (size_t)n) : -1;
    herr_t c = H5Fclose(file);
    if (!img || got != n || c < 0) {
        remat_xfree(img);
        remat_afile_abort(af);
        if (n > 0 && !img) return REMAT_ERR_NOMEM;
        return remat_error_set(err, REMAT_ERR_INTERNAL, "%s: cannot write: HDF5 could not finish the file image", af->path);
    }
    fix_superblock_checksum(img, (size_t)n);
    if (fwrite(img, 1, (size_t)n, af->fp) != (size_t)n && !af->err_no) af->err_no = EIO;
    remat_xfree(img);
    return remat_afile_commit(af, err);
}

void remat_h5_abort(hid_t file, remat_afile *af) {
    if (file >= 0) H5Fclose(file);
    remat_afile_abort(af);
}

void remat_h5_gather_column(const void *rec, size_t stride, size_t off, size_t sz, int64_t n, void *buf) {
    const char *src = (const char *)rec + off;
    char *dst = buf;
    switch (sz) { /* the common widths as constants, so the copies compile to moves */
    case 1:
        for (int64_t i = 0; i < n; i++) dst[i] = src[(size_t)i * stride];
        break;
    case 4:
        for (int64_t i = 0; i < n; i++) memcpy(dst + 4 * i, src + (size_t)i * stride, 4);
        break;
    case 8:
        for (int64_t i = 0; i < n; i++) memcpy(dst + 8 * i, src + (size_t)i * stride, 8);
        break;
    default:
        for (int64_t i = 0; i < n; i++) memcpy(dst + (size_t)i * sz, src + (size_t)i * stride, sz);
    }
}

void remat_h5_scatter_column(void *rec, size_t stride, size_t off, size_t sz, int64_t n, const void *buf) {
    char *dst = (char *)rec + off;
    const char *src = buf;
    switch (sz) {
    case 1:
        for (int64_t i = 0; i < n; i++) dst[(size_t)i * stride] = src[i];
        break;
    case 4:
        for (int64_t i = 0; i < n; i++) memcpy(dst + (size_t)i * stride, src + 4 * i, 4);
        break;
    case 8:
        for (int64_t i = 0; i < n; i++) memcpy(dst + (size_t)i * stride, src + 8 * i, 8);
        break;
    default:
        for (int64_t i = 0; i < n; i++) memcpy(dst + (size_t)i * stride, src + (size_t)i * sz, sz);
    }
}

void remat_h5_join_names(char *buf, size_t len, int n, const char *(*name)(int)) {
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < n; i++) {
        int k = snprintf(buf + used, len - used, "%s%s", i ? "," : "", name(i));
        if (k < 0 || (size_t)k >= len - used) break;
        used += (size_t)k;
    }
}
