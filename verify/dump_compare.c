/* dump_compare.c - two gradient dumps as tensor sets, compared bit for bit. */
#include "verify/dump_compare.h"

#include <stdio.h>
#include <string.h>

remat_status remat_verify_set_from_dump(const remat_dump *d, remat_verify_set *out, remat_error *err) {
    for (int i = 0; i < d->n; i++) {
        const remat_dump_entry *e = &d->entries[i];
        const char *name = e->path[0] == '/' ? e->path + 1 : e->path;
        if (e->rank > REMAT_VERIFY_MAX_DIMS)
            return remat_error_set(err, REMAT_ERR_INPUT, "%s: rank %d: at most %d dims", e->path, e->rank,
                                   REMAT_VERIFY_MAX_DIMS);
        if (!remat_verify_set_add(out, name, e->dtype == REMAT_DUMP_I32 ? REMAT_VERIFY_I32 : REMAT_VERIFY_F32,
                                  e->rank, e->dims, e->data, err))
            return err->status;
    }
    return REMAT_OK;
}

static void copy_attr(char *dst, size_t len, const char *s) { snprintf(dst, len, "%s", s ? s : ""); }

static int differs(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") != 0; }

remat_status remat_verify_dumps(const char *path_a, const char *path_b, remat_verify_dump_result *out,
                                remat_error *err) {
    memset(out, 0, sizeof *out);
    remat_dump a, b;
    memset(&b, 0, sizeof b);
    remat_status st = remat_dump_read(path_a, &a, err);
    if (st != REMAT_OK) return st;
    st = remat_dump_read(path_b, &b, err);
    remat_verify_set sa = {0}, sb = {0};
    if (st == REMAT_OK) st = remat_verify_set_from_dump(&a, &sa, err);
    if (st == REMAT_OK) st = remat_verify_set_from_dump(&b, &sb, err);
    if (st == REMAT_OK) st = remat_verify_compare(&sa, &sb, &out->cmp, err);
    if (st == REMAT_OK) {
        out->model_differs = differs(a.model, b.model);
        out->seed_differs = differs(a.seed, b.seed);
        out->backend_differs = differs(a.backend, b.backend);
        copy_attr(out->seed_a, sizeof out->seed_a, a.seed);
        copy_attr(out->seed_b, sizeof out->seed_b, b.seed);
        copy_attr(out->backend_a, sizeof out->backend_a, a.backend);
        copy_attr(out->backend_b, sizeof out->backend_b, b.backend);
        copy_attr(out->plan_a, sizeof out->plan_a, a.plan);
        copy_attr(out->plan_b, sizeof out->plan_b, b.plan);
        out->identical =
            !out->cmp.n_different && !out->model_differs && !out->seed_differs && !out->backend_differs;
    }
    remat_verify_set_free(&sa);
    remat_verify_set_free(&sb);
    remat_dump_free(&a);
    remat_dump_free(&b);
    if (st != REMAT_OK) remat_verify_dump_result_free(out);
    return st;
}

void remat_verify_dump_result_free(remat_verify_dump_result *r) {
    remat_verify_cmp_free(&r->cmp);
    memset(r, 0, sizeof *r);
}
