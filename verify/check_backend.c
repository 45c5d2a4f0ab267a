/* check_backend.c - forwarding backend that checks every compression round trip.
 *
 * Assumption: the executor decompresses a compressed buffer while it still holds
 * what the last compress into that same device address wrote (it frees the buffer
 * only after its last decompress). Originals are remembered per compressed-buffer
 * address; a new compress into the same address replaces the memory.
 */
#include "verify/check_backend.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/codec/compress.h"

typedef struct saved {
    const void *dst;      /* compressed buffer (device address) */
    remat_compressor c;
    int64_t n;
    uint32_t *orig;       /* n patterns, host */
} saved;

typedef struct chk_ctx {
    remat_backend *inner;
    remat_backend_ops ops;
    saved *rec;
    int n_rec, cap_rec;
    remat_verify_check_stats st;
} chk_ctx;

#define IN(c) (((chk_ctx *)(c))->inner)
#define ICTX(c) (IN(c)->ctx)
#define IOPS(c) (IN(c)->ops)

static void problem(chk_ctx *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void problem(chk_ctx *c, const char *fmt, ...) {
    if (c->st.first_problem[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->st.first_problem, sizeof c->st.first_problem, fmt, ap);
    va_end(ap);
}

/* ---- forwarded ops ---- */
static remat_status f_segment_alloc(void *c, int64_t bytes, void **out, remat_error *err) {
    return IOPS(c)->segment_alloc(ICTX(c), bytes, out, err);
}
static void f_segment_free(void *c, void *p) { IOPS(c)->segment_free(ICTX(c), p); }
static void f_mem_info(void *c, int64_t *f, int64_t *t) { IOPS(c)->mem_info(ICTX(c), f, t); }
static void f_zero(void *c, void *dst, int64_t bytes) { IOPS(c)->zero(ICTX(c), dst, bytes); }
static void f_copy(void *c, void *dst, const void *src, int64_t bytes) { IOPS(c)->copy(ICTX(c), dst, src, bytes); }
static void f_to_host(void *c, void *dst, const void *src, int64_t bytes) {
    IOPS(c)->to_host(ICTX(c), dst, src, bytes);
}
static void f_from_host(void *c, void *dst, const void *src, int64_t bytes) {
    IOPS(c)->from_host(ICTX(c), dst, src, bytes);
}
static double f_now(void *c) { return IOPS(c)->now(ICTX(c)); }
static void f_linear_forward(void *c, float *out, const float *inp, const float *w, const float *b, int64_t rows,
                             int64_t in, int64_t out_f) {
    IOPS(c)->linear_forward(ICTX(c), out, inp, w, b, rows, in, out_f);
}
static void f_linear_backward(void *c, float *dinp, float *dw, float *db, const float *dout, const float *inp,
                              const float *w, float *scratch, int64_t t, int64_t N, int64_t in, int64_t out_f) {
    IOPS(c)->linear_backward(ICTX(c), dinp, dw, db, dout, inp, w, scratch, t, N, in, out_f);
}
static void f_neuron_forward(void *c, float *s, float *h, float *v, const float *x, remat_layer_type ty,
                             const remat_neuron_opts *o, int64_t t, int64_t nf) {
    IOPS(c)->neuron_forward(ICTX(c), s, h, v, x, ty, o, t, nf);
}
static void f_neuron_backward(void *c, float *dx, float *gv, const float *ds, const float *h, remat_layer_type ty,
                              const remat_neuron_opts *o, int64_t t, int64_t nf) {
    IOPS(c)->neuron_backward(ICTX(c), dx, gv, ds, h, ty, o, t, nf);
}
static void f_bn_forward(void *c, float *out, float *mean, float *rstd, float *rm, float *rv, const float *inp,
                         const float *w, const float *b, int64_t rows, int64_t C) {
    IOPS(c)->batchnorm_forward(ICTX(c), out, mean, rstd, rm, rv, inp, w, b, rows, C);
}
static void f_bn_backward(void *c, float *dinp, float *dw, float *db, const float *dout, const float *inp,
                          const float *w, const float *mean, const float *rstd, int64_t rows, int64_t C) {
    IOPS(c)->batchnorm_backward(ICTX(c), dinp, dw, db, dout, inp, w, mean, rstd, rows, C);
}
static void f_dropout_mask(void *c, float *mask, uint64_t seed, uint64_t iter, int layer, float p, int64_t nf) {
    IOPS(c)->dropout_mask(ICTX(c), mask, seed, iter, layer, p, nf);
}
static void f_dropout_forward(void *c, float *out, const float *inp, uint64_t seed, uint64_t iter, int layer,
                              float p, int64_t t, int64_t nf) {
    IOPS(c)->dropout_forward(ICTX(c), out, inp, seed, iter, layer, p, t, nf);
}
static void f_dropout_backward(void *c, float *dinp, const float *dout, uint64_t seed, uint64_t iter, int layer,
                               float p, int64_t t, int64_t nf) {
    IOPS(c)->dropout_backward(ICTX(c), dinp, dout, seed, iter, layer, p, t, nf);
}
static void f_add_forward(void *c, float *out, const float *a, const float *b, int64_t n) {
    IOPS(c)->add_forward(ICTX(c), out, a, b, n);
}
static void f_add_backward(void *c, float *da, float *db, const float *dout, int64_t n) {
    IOPS(c)->add_backward(ICTX(c), da, db, dout, n);
}
static float f_loss_forward(void *c, float *rate, const float *out, const int32_t *labels, remat_loss_type ty,
                            int64_t T, int64_t N, int64_t K) {
    return IOPS(c)->loss_forward(ICTX(c), rate, out, labels, ty, T, N, K);
}
static void f_loss_backward(void *c, float *dout, const float *rate, const int32_t *labels, remat_loss_type ty,
                            int64_t T, int64_t N, int64_t K) {
    IOPS(c)->loss_backward(ICTX(c), dout, rate, labels, ty, T, N, K);
}
static void f_sgd(void *c, float *param, float *buf, const float *grad, float lr, float mom, int first, int64_t n) {
    IOPS(c)->sgd_update(ICTX(c), param, buf, grad, lr, mom, first, n);
}
static void f_adam(void *c, float *param, float *m, float *v, const float *grad, float lr, float b1, float b2,
                   float eps, int step, int64_t n) {
    IOPS(c)->adam_update(ICTX(c), param, m, v, grad, lr, b1, b2, eps, step, n);
}
static void f_fill_uniform(void *c, float *out, int64_t n, float lo, float hi, uint64_t seed, uint64_t stream,
                           uint64_t key) {
    IOPS(c)->fill_uniform(ICTX(c), out, n, lo, hi, seed, stream, key);
}
static void f_fill_bernoulli(void *c, float *out, int64_t n, float rate, uint64_t seed, uint64_t stream,
                             uint64_t key) {
    IOPS(c)->fill_bernoulli(ICTX(c), out, n, rate, seed, stream, key);
}
static void f_fill_labels(void *c, int32_t *labels, int64_t n, int64_t classes, uint64_t seed, uint64_t key) {
    IOPS(c)->fill_labels(ICTX(c), labels, n, classes, seed, key);
}
static int64_t f_count_nonzero(void *c, const float *x, int64_t n) { return IOPS(c)->count_nonzero(ICTX(c), x, n); }

/* ---- the checks ---- */
static saved *find_rec(chk_ctx *c, const void *dst) {
    for (int i = 0; i < c->n_rec; i++)
        if (c->rec[i].dst == dst) return &c->rec[i];
    return NULL;
}

static int64_t first_mismatch(const uint32_t *a, const uint32_t *b, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (a[i] != b[i]) return i;
    return -1;
}

static float as_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static remat_status f_compress(void *cv, remat_compressor comp, void *dst, int64_t dst_bytes, const float *src,
                               int64_t n, remat_error *err) {
    chk_ctx *c = cv;
    remat_status st = IOPS(c)->compress(ICTX(c), comp, dst, dst_bytes, src, n, err);
    if (st != REMAT_OK) return st;
    c->st.compressions++;
    remat_error lerr = {0};
    uint32_t *orig = remat_xmalloc((size_t)(n ? n : 1) * 4, &lerr);
    uint32_t *dec = remat_xmalloc((size_t)(n ? n : 1) * 4, &lerr);
    unsigned char *bytes = remat_xmalloc((size_t)(dst_bytes ? dst_bytes : 1), &lerr);
    saved *r = find_rec(c, dst);
    if (!r && c->n_rec == c->cap_rec) {
        int cap = c->cap_rec ? 2 * c->cap_rec : 16;
        saved *nr = remat_xrealloc(c->rec, (size_t)cap * sizeof *nr, &lerr);
        if (nr) {
            c->rec = nr;
            c->cap_rec = cap;
        }
    }
    if (!orig || !dec || !bytes || (!r && c->n_rec == c->cap_rec)) {
        remat_xfree(orig);
        remat_xfree(dec);
        remat_xfree(bytes);
        return remat_error_set(err, REMAT_ERR_NOMEM, "verify: compression check: %s", lerr.msg);
    }
    IOPS(c)->to_host(ICTX(c), orig, src, n * 4);
    IOPS(c)->to_host(ICTX(c), bytes, dst, dst_bytes);
    remat_error derr = {0};
    if (remat_decompress(comp, (float *)dec, n, bytes, dst_bytes, &derr) != REMAT_OK) {
        c->st.format_bad++;
        problem(c, "compress #%" PRId64 " (%s, %" PRId64 " elements): host decoder refused its bytes: %s",
                c->st.compressions, remat_compressor_name(comp), n, derr.msg);
    } else {
        int64_t i = first_mismatch(orig, dec, n);
        if (i >= 0) {
            c->st.format_bad++;
            problem(c,
                    "compress #%" PRId64 " (%s, %" PRId64 " elements): element %" PRId64
                    " is 0x%08x (%g), its bytes decode to 0x%08x (%g)",
                    c->st.compressions, remat_compressor_name(comp), n, i, orig[i], (double)as_float(orig[i]),
                    dec[i], (double)as_float(dec[i]));
        }
    }
    remat_xfree(dec);
    remat_xfree(bytes);
    if (!r) {
        r = &c->rec[c->n_rec++];
    } else {
        remat_xfree(r->orig);
    }
    r->dst = dst;
    r->c = comp;
    r->n = n;
    r->orig = orig;
    return REMAT_OK;
}

static remat_status f_decompress(void *cv, remat_compressor comp, float *dst, int64_t n, const void *src,
                                 int64_t src_bytes, remat_error *err) {
    chk_ctx *c = cv;
    remat_status st = IOPS(c)->decompress(ICTX(c), comp, dst, n, src, src_bytes, err);
    if (st != REMAT_OK) return st;
    saved *r = find_rec(c, src);
    if (!r || r->c != comp || r->n != n) {
        c->st.unmatched++;
        return REMAT_OK;
    }
    c->st.decompressions++;
    remat_error lerr = {0};
    uint32_t *got = remat_xmalloc((size_t)(n ? n : 1) * 4, &lerr);
    if (!got) return remat_error_set(err, REMAT_ERR_NOMEM, "verify: compression check: %s", lerr.msg);
    IOPS(c)->to_host(ICTX(c), got, dst, n * 4);
    c->st.bytes_checked += n * 4;
    int64_t i = first_mismatch(r->orig, got, n);
    if (i >= 0) {
        c->st.roundtrip_bad++;
        problem(c,
                "decompress #%" PRId64 " (%s, %" PRId64 " elements): element %" PRId64
                " was 0x%08x (%g), restored 0x%08x (%g)",
                c->st.decompressions, remat_compressor_name(comp), n, i, r->orig[i], (double)as_float(r->orig[i]),
                got[i], (double)as_float(got[i]));
    }
    remat_xfree(got);
    return REMAT_OK;
}

static void clear_records(chk_ctx *c) {
    for (int i = 0; i < c->n_rec; i++) remat_xfree(c->rec[i].orig);
    c->n_rec = 0;
}

static void f_destroy(void *cv) {
    chk_ctx *c = cv;
    clear_records(c);
    remat_xfree(c->rec);
    remat_xfree(c);
}

remat_status remat_verify_check_backend_init(remat_backend *out, remat_backend *inner, remat_error *err) {
    chk_ctx *c = remat_xcalloc(1, sizeof *c, err);
    if (!c) return REMAT_ERR_NOMEM;
    c->inner = inner;
    const remat_backend_ops *io = inner->ops;
    remat_backend_ops *o = &c->ops;
    o->name = io->name;
    o->has_data = io->has_data;
    o->segment_alloc = f_segment_alloc;
    o->segment_free = f_segment_free;
    o->mem_info = f_mem_info;
    o->zero = f_zero;
    o->copy = f_copy;
    o->to_host = f_to_host;
    o->from_host = f_from_host;
    o->now = f_now;
    o->destroy = f_destroy;
    o->linear_forward = f_linear_forward;
    o->linear_backward = f_linear_backward;
    o->neuron_forward = f_neuron_forward;
    o->neuron_backward = f_neuron_backward;
    o->batchnorm_forward = f_bn_forward;
    o->batchnorm_backward = f_bn_backward;
    o->dropout_mask = f_dropout_mask;
    o->dropout_forward = f_dropout_forward;
    o->dropout_backward = f_dropout_backward;
    o->add_forward = f_add_forward;
    o->add_backward = f_add_backward;
    o->loss_forward = f_loss_forward;
    o->loss_backward = f_loss_backward;
    o->sgd_update = f_sgd;
    o->adam_update = f_adam;
    o->fill_uniform = f_fill_uniform;
    o->fill_bernoulli = f_fill_bernoulli;
    o->fill_labels = f_fill_labels;
    o->count_nonzero = f_count_nonzero;
    o->compress = f_compress;
    o->decompress = f_decompress;
    out->ops = &c->ops;
    out->ctx = c;
    return REMAT_OK;
}

void remat_verify_check_backend_stats(const remat_backend *b, remat_verify_check_stats *out) {
    const chk_ctx *c = b->ctx;
    *out = c->st;
}

void remat_verify_check_backend_reset(remat_backend *b) {
    chk_ctx *c = b->ctx;
    clear_records(c);
    memset(&c->st, 0, sizeof c->st);
}
