/* compare.c - bit-pattern comparison of tensor sets.
 *
 * The difference of two floats is taken in double, so that it is exact for every
 * pair of finite floats and never overflows; a NaN on either side makes the
 * tensor's max |difference| NaN (the count and first index still say where).
 */
#include "verify/compare.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static double elem_value(remat_verify_dtype dt, uint32_t bits) {
    if (dt == REMAT_VERIFY_I32) {
        int32_t i;
        memcpy(&i, &bits, sizeof i);
        return (double)i;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return (double)f;
}

static void unravel(remat_verify_diff *d, int64_t flat) {
    for (int i = d->ndim - 1; i >= 0; i--) {
        int64_t e = d->shape[i] > 0 ? d->shape[i] : 1;
        d->first_index[i] = flat % e;
        flat /= e;
    }
}

void remat_verify_compare_tensor(const remat_verify_tensor *a, const remat_verify_tensor *b, remat_verify_diff *d) {
    int64_t n = a->elems;
    int64_t n_diff = 0, first = -1;
    double maxd = 0.0;
    int saw_nan = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t x = a->bits[i], y = b->bits[i];
        if (x == y) continue;
        if (first < 0) first = i;
        n_diff++;
        double dv = fabs(elem_value(a->dtype, x) - elem_value(a->dtype, y));
        if (isnan(dv))
            saw_nan = 1;
        else if (dv > maxd)
            maxd = dv;
    }
    d->kind = n_diff ? REMAT_VERIFY_DIFFERENT : REMAT_VERIFY_SAME;
    d->n_diff = n_diff;
    d->max_abs_diff = saw_nan ? NAN : maxd;
    d->first_flat = first;
    memset(d->first_index, 0, sizeof d->first_index);
    d->first_a = d->first_b = 0;
    if (first >= 0) {
        unravel(d, first);
        d->first_a = a->bits[first];
        d->first_b = b->bits[first];
    }
}

static int same_shape(const remat_verify_tensor *a, const remat_verify_tensor *b) {
    if (a->dtype != b->dtype || a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

static void fill_header(remat_verify_diff *d, const remat_verify_tensor *t) {
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", t->name);
    d->dtype = t->dtype;
    d->ndim = t->ndim;
    memcpy(d->shape, t->shape, sizeof d->shape);
    d->elems = t->elems;
    d->first_flat = -1;
}

remat_status remat_verify_compare(const remat_verify_set *a, const remat_verify_set *b, remat_verify_cmp *out,
                                  remat_error *err) {
    memset(out, 0, sizeof *out);
    int cap = a->n + b->n;
    out->d = remat_xcalloc((size_t)(cap ? cap : 1), sizeof *out->d, err);
    if (!out->d) return err ? err->status : REMAT_ERR_NOMEM;
    for (int i = 0; i < a->n; i++) {
        const remat_verify_tensor *ta = &a->t[i];
        const remat_verify_tensor *tb = remat_verify_set_find(b, ta->name);
        remat_verify_diff *d = &out->d[out->n++];
        fill_header(d, ta);
        if (!tb) {
            d->kind = REMAT_VERIFY_ONLY_A;
            d->n_diff = ta->elems;
        } else if (!same_shape(ta, tb)) {
            d->kind = REMAT_VERIFY_SHAPE;
            d->n_diff = ta->elems > tb->elems ? ta->elems : tb->elems;
        } else {
            remat_verify_compare_tensor(ta, tb, d);
        }
        if (d->kind != REMAT_VERIFY_SAME) out->n_different++;
    }
    for (int i = 0; i < b->n; i++) {
        const remat_verify_tensor *tb = &b->t[i];
        if (remat_verify_set_find(a, tb->name)) continue;
        remat_verify_diff *d = &out->d[out->n++];
        fill_header(d, tb);
        d->kind = REMAT_VERIFY_ONLY_B;
        d->n_diff = tb->elems;
        out->n_different++;
    }
    return REMAT_OK;
}

void remat_verify_cmp_free(remat_verify_cmp *c) {
    remat_xfree(c->d);
    memset(c, 0, sizeof *c);
}

const char *remat_verify_index_str(const remat_verify_diff *d, char *buf, size_t len) {
    if (len == 0) return buf;
    if (d->first_flat < 0) {
        snprintf(buf, len, "-");
        return buf;
    }
    size_t at = (size_t)snprintf(buf, len, "(");
    for (int i = 0; i < d->ndim && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%" PRId64, i ? ", " : "", d->first_index[i]);
    if (at < len) snprintf(buf + at, len - at, ")");
    return buf;
}
