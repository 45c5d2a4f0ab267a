/* check_backend.c - forwarding backend that checks every compression round trip.
 *
 * Assumption: the executor decompresses a compressed buffer while it still holds
 * what the last compress into that same device address wrote (it frees the buffer
 * only after its last decompress). Originals are remembered per compressed-buffer
 * address; a new compress into the same address replaces the memory.
 */
#include "verify/check_backend.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/base/bf16.h"
#include "core/base/grow.h"
#include "core/codec/compress.h"

typedef struct saved {
    const void *dst;      /* compressed buffer (device address) */
    remat_compressor c;
    remat_encoding enc;   /* how the activation was stored (F32 or BF16) */
    int64_t n;
    void *orig;           /* n elements as stored, host */
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
/* The kernels pass straight through: one forwarder per REMAT_BACKEND_KERNELS entry. */
#define CHK_FORWARD(ret, name, params, args) \
    static ret f_##name(void *c, REMAT_UNPAREN params) { return (ret)IOPS(c)->name(ICTX(c), REMAT_UNPAREN args); }
REMAT_BACKEND_KERNELS(CHK_FORWARD)
#undef CHK_FORWARD
static int64_t f_count_nonzero(void *c, const void *x, remat_encoding enc, int64_t n) {
    return IOPS(c)->count_nonzero(ICTX(c), x, enc, n);
}

/* Bytes per element of an activation stored as enc, and element i's fp32 pattern
 * (bf16 widened: exact). */
static int64_t elem_bytes(remat_encoding enc) { return enc == REMAT_ENC_BF16 ? 2 : 4; }
static uint32_t pattern(const void *buf, remat_encoding enc, int64_t i) {
    if (enc == REMAT_ENC_BF16) {
        uint16_t h;
        memcpy(&h, (const unsigned char *)buf + 2 * i, sizeof h);
        return (uint32_t)h << 16;
    }
    uint32_t u;
    memcpy(&u, (const unsigned char *)buf + 4 * i, sizeof u);
    return u;
}

/* ---- the checks ---- */
static saved *find_rec(chk_ctx *c, const void *dst) {
    for (int i = 0; i < c->n_rec; i++)
        if (c->rec[i].dst == dst) return &c->rec[i];
    return NULL;
}

static int64_t first_mismatch(const void *a, const void *b, remat_encoding enc, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (pattern(a, enc, i) != pattern(b, enc, i)) return i;
    return -1;
}

static remat_status f_compress(void *cv, remat_compressor comp, void *dst, int64_t dst_bytes, const void *src,
                               remat_encoding enc, int64_t n, remat_error *err) {
    chk_ctx *c = cv;
    remat_status st = IOPS(c)->compress(ICTX(c), comp, dst, dst_bytes, src, enc, n, err);
    if (st != REMAT_OK) return st;
    c->st.compressions++;
    remat_error lerr = {0};
    const int64_t eb = elem_bytes(enc);
    void *orig = remat_xmalloc((size_t)((n ? n : 1) * eb), &lerr);
    void *dec = remat_xmalloc((size_t)((n ? n : 1) * eb), &lerr);
    unsigned char *bytes = remat_xmalloc((size_t)(dst_bytes ? dst_bytes : 1), &lerr);
    saved *r = find_rec(c, dst);
    if (!r) {
        int64_t cap = c->cap_rec;
        if (remat_grow((void **)&c->rec, &cap, c->n_rec + 1, sizeof *c->rec, 16, INT_MAX, &lerr) == REMAT_OK)
            c->cap_rec = (int)cap;
    }
    if (!orig || !dec || !bytes || (!r && c->n_rec == c->cap_rec)) {
        remat_xfree(orig);
        remat_xfree(dec);
        remat_xfree(bytes);
        return remat_error_set(err, REMAT_ERR_NOMEM, "verify: compression check: %s", lerr.msg);
    }
    IOPS(c)->to_host(ICTX(c), orig, src, n * eb);
    IOPS(c)->to_host(ICTX(c), bytes, dst, dst_bytes);
    remat_error derr = {0};
    if (remat_decompress_as(comp, dec, enc, n, bytes, dst_bytes, &derr) != REMAT_OK) {
        c->st.format_bad++;
        problem(c, "compress #%" PRId64 " (%s, %" PRId64 " elements): host decoder refused its bytes: %s",
                c->st.compressions, remat_compressor_name(comp), n, derr.msg);
    } else {
        int64_t i = first_mismatch(orig, dec, enc, n);
        if (i >= 0) {
            const uint32_t o = pattern(orig, enc, i), d = pattern(dec, enc, i);
            c->st.format_bad++;
            problem(c,
                    "compress #%" PRId64 " (%s, %" PRId64 " elements): element %" PRId64
                    " is 0x%08x (%g), its bytes decode to 0x%08x (%g)",
                    c->st.compressions, remat_compressor_name(comp), n, i, o, (double)remat_f32_from_bits(o), d,
                    (double)remat_f32_from_bits(d));
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
    r->enc = enc;
    r->n = n;
    r->orig = orig;
    return REMAT_OK;
}

static remat_status f_decompress(void *cv, remat_compressor comp, void *dst, remat_encoding enc, int64_t n,
                                 const void *src, int64_t src_bytes, remat_error *err) {
    chk_ctx *c = cv;
    remat_status st = IOPS(c)->decompress(ICTX(c), comp, dst, enc, n, src, src_bytes, err);
    if (st != REMAT_OK) return st;
    saved *r = find_rec(c, src);
    if (!r || r->c != comp || r->n != n || r->enc != enc) {
        c->st.unmatched++;
        return REMAT_OK;
    }
    c->st.decompressions++;
    remat_error lerr = {0};
    const int64_t eb = elem_bytes(enc);
    void *got = remat_xmalloc((size_t)((n ? n : 1) * eb), &lerr);
    if (!got) return remat_error_set(err, REMAT_ERR_NOMEM, "verify: compression check: %s", lerr.msg);
    IOPS(c)->to_host(ICTX(c), got, dst, n * eb);
    c->st.bytes_checked += n * eb;
    int64_t i = first_mismatch(r->orig, got, enc, n);
    if (i >= 0) {
        const uint32_t o = pattern(r->orig, enc, i), g = pattern(got, enc, i);
        c->st.roundtrip_bad++;
        problem(c,
                "decompress #%" PRId64 " (%s, %" PRId64 " elements): element %" PRId64
                " was 0x%08x (%g), restored 0x%08x (%g)",
                c->st.decompressions, remat_compressor_name(comp), n, i, o, (double)remat_f32_from_bits(o), g,
                (double)remat_f32_from_bits(g));
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
    o->conv_im2col = io->conv_im2col;
    o->segment_alloc = f_segment_alloc;
    o->segment_free = f_segment_free;
    o->mem_info = f_mem_info;
    o->zero = f_zero;
    o->copy = f_copy;
    o->to_host = f_to_host;
    o->from_host = f_from_host;
    o->now = f_now;
    o->destroy = f_destroy;
#define CHK_ENTRY(ret, name, params, args) o->name = io->name ? f_##name : NULL;
    REMAT_BACKEND_KERNELS(CHK_ENTRY)
#undef CHK_ENTRY
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
