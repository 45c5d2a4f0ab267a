/* status.c - error messages and the host allocation wrapper. */
#include "core/base/status.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

remat_status remat_error_set(remat_error *err, remat_status status, const char *fmt, ...) {
    if (err && err->status == REMAT_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

int remat_status_exit_code(remat_status status) {
    switch (status) {
    case REMAT_OK: return 0;
    case REMAT_ERR_INPUT:
    case REMAT_ERR_IO: return 2;
    default: return 1;
    }
}

/* Each block carries its size in a 16-byte header so that free can account. */
typedef struct { size_t bytes; size_t pad; } xhdr;
static atomic_size_t g_live, g_peak;

static void account(ptrdiff_t delta) {
    size_t live = atomic_fetch_add(&g_live, (size_t)delta) + (size_t)delta;
    size_t peak = atomic_load(&g_peak);
    while (live > peak && !atomic_compare_exchange_weak(&g_peak, &peak, live)) {}
}

void *remat_xmalloc(size_t bytes, remat_error *err) {
    if (bytes > (size_t)-1 - sizeof(xhdr)) {
        remat_error_set(err, REMAT_ERR_NOMEM, "cannot allocate %zu bytes: size overflows", bytes);
        return NULL;
    }
    xhdr *h = malloc(sizeof(xhdr) + bytes);
    if (!h) {
        remat_error_set(err, REMAT_ERR_NOMEM, "out of host memory allocating %zu bytes", bytes);
        return NULL;
    }
    h->bytes = bytes;
    account((ptrdiff_t)bytes);
    return h + 1;
}

void *remat_xcalloc(size_t count, size_t size, remat_error *err) {
    if (size && count > (size_t)-1 / size) {
        remat_error_set(err, REMAT_ERR_NOMEM, "cannot allocate %zu x %zu bytes: size overflows", count, size);
        return NULL;
    }
    void *p = remat_xmalloc(count * size, err);
    if (p) memset(p, 0, count * size);
    return p;
}

void *remat_xrealloc(void *p, size_t bytes, remat_error *err) {
    if (!p) return remat_xmalloc(bytes, err);
    xhdr *h = (xhdr *)p - 1;
    size_t old = h->bytes;
    if (bytes > (size_t)-1 - sizeof(xhdr)) {
        remat_error_set(err, REMAT_ERR_NOMEM, "cannot allocate %zu bytes: size overflows", bytes);
        return NULL;
    }
    xhdr *n = realloc(h, sizeof(xhdr) + bytes);
    if (!n) {
        remat_error_set(err, REMAT_ERR_NOMEM, "out of host memory growing to %zu bytes", bytes);
        return NULL;
    }
    n->bytes = bytes;
    account((ptrdiff_t)bytes - (ptrdiff_t)old);
    return n + 1;
}

void remat_xfree(void *p) {
    if (!p) return;
    xhdr *h = (xhdr *)p - 1;
    account(-(ptrdiff_t)h->bytes);
    free(h);
}

size_t remat_xmem_live(void) { return atomic_load(&g_live); }
size_t remat_xmem_peak(void) { return atomic_load(&g_peak); }
