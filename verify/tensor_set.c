/* tensor_set.c - named host tensors held as 32-bit patterns. */
#include "verify/tensor_set.h"

#include "core/base/grow.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

remat_verify_tensor *remat_verify_set_add(remat_verify_set *s, const char *name, remat_verify_dtype dtype, int ndim,
                                          const int64_t *shape, const void *data, remat_error *err) {
    if (strlen(name) >= REMAT_VERIFY_NAME_LEN) {
        remat_error_set(err, REMAT_ERR_INTERNAL, "verify: tensor name: at most %d characters, got '%s'",
                        REMAT_VERIFY_NAME_LEN - 1, name);
        return NULL;
    }
    if (ndim < 0 || ndim > REMAT_VERIFY_MAX_DIMS) {
        remat_error_set(err, REMAT_ERR_INTERNAL, "verify: %s: shape: 0..%d dims, got %d", name,
                        REMAT_VERIFY_MAX_DIMS, ndim);
        return NULL;
    }
    if (remat_verify_set_find(s, name)) {
        remat_error_set(err, REMAT_ERR_INTERNAL, "verify: %s: tensor name: unique, got a repeat", name);
        return NULL;
    }
    int64_t elems = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || (shape[i] > 0 && elems > INT64_MAX / 4 / shape[i])) {
            remat_error_set(err, REMAT_ERR_INTERNAL, "verify: %s: shape[%d]: a size that fits, got %" PRId64, name,
                            i, shape[i]);
            return NULL;
        }
        elems *= shape[i];
    }
    int64_t cap = s->cap;
    if (remat_grow((void **)&s->t, &cap, s->n + 1, sizeof *s->t, 16, INT_MAX, err)) return NULL;
    s->cap = (int)cap;
    uint32_t *bits = remat_xmalloc((size_t)(elems ? elems : 1) * sizeof(uint32_t), err);
    if (!bits) return NULL;
    if (data)
        memcpy(bits, data, (size_t)elems * sizeof(uint32_t));
    else
        memset(bits, 0, (size_t)elems * sizeof(uint32_t));
    remat_verify_tensor *t = &s->t[s->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    t->elems = elems;
    t->bits = bits;
    return t;
}

const remat_verify_tensor *remat_verify_set_find(const remat_verify_set *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->t[i].name, name)) return &s->t[i];
    return NULL;
}

void remat_verify_set_free(remat_verify_set *s) {
    for (int i = 0; i < s->n; i++) remat_xfree(s->t[i].bits);
    remat_xfree(s->t);
    s->t = NULL;
    s->n = s->cap = 0;
}

const char *remat_verify_shape_str(int ndim, const int64_t *shape, char *buf, size_t len) {
    size_t at = 0;
    if (len == 0) return buf;
    buf[0] = '\0';
    at += (size_t)snprintf(buf + at, len - at, "[");
    for (int i = 0; i < ndim && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%" PRId64, i ? ", " : "", shape[i]);
    if (at < len) snprintf(buf + at, len - at, "]");
    return buf;
}
