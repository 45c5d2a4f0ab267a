/* dump_read.c - reads a gradient dump back (dump_read.h). */
#include "core/io/dump_read.h"

#include <stdlib.h>
#include <string.h>

#include "core/io/h5_util.h"

void remat_dump_free(remat_dump *d) {
    if (!d) return;
    remat_xfree(d->model);
    remat_xfree(d->plan);
    remat_xfree(d->seed);
    remat_xfree(d->backend);
    for (int i = 0; i < d->n; i++) {
        remat_xfree(d->entries[i].path);
        remat_xfree(d->entries[i].data);
    }
    remat_xfree(d->entries);
    memset(d, 0, sizeof *d);
}

static int cmp_entry(const void *key, const void *e) {
    return strcmp((const char *)key, ((const remat_dump_entry *)e)->path);
}

const remat_dump_entry *remat_dump_find(const remat_dump *d, const char *path) {
    if (!d->n) return NULL;
    return bsearch(path, d->entries, (size_t)d->n, sizeof *d->entries, cmp_entry);
}

static remat_status read_entry(hid_t f, const char *file, const char *dpath, remat_dump_entry *e, remat_error *err) {
    remat_h5_info info;
    remat_status st = remat_h5_info_get(f, file, dpath, &info, err);
    if (st != REMAT_OK) return st;
    if (info.type != REMAT_H5_F32 && info.type != REMAT_H5_I32)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: expected a float32 (or, for /labels, int32) dataset, "
                               "found %s", file, dpath, remat_h5_type_name(info.type));
    size_t n = strlen(dpath);
    e->path = remat_xmalloc(n + 1, err);
    if (!e->path) return REMAT_ERR_NOMEM;
    memcpy(e->path, dpath, n + 1);
    e->dtype = info.type == REMAT_H5_F32 ? REMAT_DUMP_F32 : REMAT_DUMP_I32;
    e->rank = info.rank;
    for (int i = 0; i < info.rank; i++) e->dims[i] = info.dims[i];
    e->elems = info.elems;
    int64_t dims[REMAT_H5_MAX_RANK];
    return remat_h5_read(f, file, dpath, info.type, info.rank, dims, &e->data, err);
}

remat_status remat_dump_read(const char *path, remat_dump *out, remat_error *err) {
    memset(out, 0, sizeof *out);
    hid_t f;
    remat_status st = remat_h5_open(path, &f, err);
    if (st != REMAT_OK) return st;
    remat_dump d;
    memset(&d, 0, sizeof d);
    char **names = NULL;
    int count = 0;
    static const char *const attrs[4] = {"model", "plan", "seed", "backend"};
    char **dst[4] = {&d.model, &d.plan, &d.seed, &d.backend};
    for (int i = 0; i < 4 && st == REMAT_OK; i++) {
        if (!remat_h5_attr_exists(f, "/", attrs[i]))
            st = remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: missing root attribute (not a gradient dump)", path,
                                 attrs[i]);
        else
            st = remat_h5_attr_read_str(f, path, "/", attrs[i], dst[i], err);
    }
    if (st == REMAT_OK) st = remat_h5_list_datasets(f, path, &names, &count, err);
    if (st == REMAT_OK && count > 0) {
        d.entries = remat_xcalloc((size_t)count, sizeof *d.entries, err);
        if (!d.entries) st = REMAT_ERR_NOMEM;
    }
    for (int i = 0; i < count && st == REMAT_OK; i++) {
        st = read_entry(f, path, names[i], &d.entries[i], err);
        d.n = i + 1; /* so that free releases what this entry got */
    }
    remat_h5_free_names(names, count);
    remat_h5_close(f);
    static const char *const required[] = {"/loss", "/labels", "/input", "/grads/input"};
    for (int i = 0; i < 4 && st == REMAT_OK; i++)
        if (!remat_dump_find(&d, required[i]))
            st = remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: missing dataset (not a gradient dump)", path,
                                 required[i]);
    const remat_dump_entry *lab = st == REMAT_OK ? remat_dump_find(&d, "/labels") : NULL;
    if (st == REMAT_OK && lab->dtype != REMAT_DUMP_I32)
        st = remat_error_set(err, REMAT_ERR_INPUT, "%s: /labels: expected int32", path);
    for (int i = 0; i < d.n && st == REMAT_OK; i++)
        if (d.entries[i].dtype == REMAT_DUMP_I32 && strcmp(d.entries[i].path, "/labels") != 0)
            st = remat_error_set(err, REMAT_ERR_INPUT, "%s: %s: expected float32, found int32", path,
                                 d.entries[i].path);
    if (st != REMAT_OK) {
        remat_dump_free(&d);
        return st;
    }
    *out = d;
    return REMAT_OK;
}
