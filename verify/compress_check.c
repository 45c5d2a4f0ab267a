/* compress_check.c - adversarial round trips, format, size and refusal checks of
 * the compressors (see compress_check.h for the list).
 *
 * The reference encoder here is written from compress.h's format description, not
 * from compress.c: bit puts element i in byte i/8, bit i%8, least significant first;
 * bool and uint8 one byte per element holding the value; sparse the native uint32
 * positions of the ones, ascending. Every decompression writes into a buffer
 * poisoned with 0xFF bytes first, so a decoder that leaves elements untouched fails.
 */
#define _POSIX_C_SOURCE 200809L
#include "verify/compress_check.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/base/bf16.h"
#include "core/base/clock.h"
#include "core/base/rng.h"

/* ---- small helpers ---- */

typedef struct rng { uint64_t s; } rng;
static uint64_t rng_next(rng *r) { return remat_rng_mix(r->s++); }
static double rng_unit(rng *r) { return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

static const remat_compressor k_comps[] = {REMAT_COMP_BOOL, REMAT_COMP_UINT8, REMAT_COMP_BIT, REMAT_COMP_SPARSE};
#define N_COMPS ((int)(sizeof k_comps / sizeof k_comps[0]))

static int is_binary(remat_compressor c) { return c != REMAT_COMP_UINT8; }

int64_t remat_verify_expected_bytes(remat_compressor c, int64_t n, int64_t nnz) {
    switch (c) {
    case REMAT_COMP_BOOL:
    case REMAT_COMP_UINT8: return n;
    case REMAT_COMP_BIT: return n / 8 + (n % 8 != 0);
    case REMAT_COMP_SPARSE: return 4 * nnz;
    default: return -1;
    }
}

static int64_t codec_bytes(remat_compressor c, int64_t n, int64_t nnz) { return remat_compressed_bytes(c, n, nnz); }

remat_verify_codec remat_verify_codec_default(void) {
    remat_verify_codec cd = {codec_bytes, remat_compress, remat_decompress};
    return cd;
}

remat_verify_compress_opts remat_verify_compress_opts_default(void) {
    remat_verify_compress_opts o;
    memset(&o, 0, sizeof o);
    o.seed = 1;
    o.large_elems = REMAT_VERIFY_LARGE_DEFAULT;
    return o;
}

/* ---- the running context ---- */

typedef struct ctx {
    const remat_verify_codec *cd;
    const remat_verify_compress_opts *o;
    remat_verify_compress_report *rep;
    remat_verify_compress_group *g;
    double t0;
    rng r;
    remat_error *err;
    int nomem;
} ctx;

static void group_end(ctx *x) {
    if (!x->g) return;
    x->g->seconds = remat_now_s() - x->t0;
    x->rep->cases += x->g->cases;
    x->rep->failures += x->g->failures;
    x->g = NULL;
}

static void group_begin(ctx *x, remat_compressor c, const char *what) {
    group_end(x);
    if (x->rep->n >= REMAT_VERIFY_MAX_GROUPS) return;
    x->g = &x->rep->g[x->rep->n++];
    memset(x->g, 0, sizeof *x->g);
    snprintf(x->g->compressor, sizeof x->g->compressor, "%s", remat_compressor_name(c));
    snprintf(x->g->what, sizeof x->g->what, "%s", what);
    if (x->o->progress) x->o->progress(x->o->progress_ctx, x->g->compressor, what);
    x->t0 = remat_now_s();
}

static void check_ok(ctx *x) {
    if (x->g) x->g->cases++;
}

static void check_fail(ctx *x, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void check_fail(ctx *x, const char *fmt, ...) {
    if (!x->g) return;
    x->g->cases++;
    if (x->g->failures++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(x->g->first_failure, sizeof x->g->first_failure, fmt, ap);
        va_end(ap);
    }
}

static void *xalloc(ctx *x, size_t bytes) {
    void *p = remat_xmalloc(bytes ? bytes : 1, x->err);
    if (!p) x->nomem = 1;
    return p;
}

/* ---- the documented format ---- */

static int64_t count_ones(const float *src, int64_t n) {
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) k += remat_f32_bits(src[i]) != 0;
    return k;
}

/* Encodes valid input per compress.h's description into out (expected-bytes long). */
static void ref_encode(remat_compressor c, const float *src, int64_t n, unsigned char *out) {
    if (c == REMAT_COMP_BIT) {
        memset(out, 0, (size_t)remat_verify_expected_bytes(c, n, 0));
        for (int64_t i = 0; i < n; i++)
            if (src[i] == 1.0f) out[i / 8] |= (unsigned char)(1u << (i % 8));
    } else if (c == REMAT_COMP_SPARSE) {
        int64_t k = 0;
        for (int64_t i = 0; i < n; i++)
            if (src[i] == 1.0f) {
                uint32_t pos = (uint32_t)i;
                memcpy(out + 4 * k, &pos, 4);
                k++;
            }
    } else {
        for (int64_t i = 0; i < n; i++) out[i] = (unsigned char)src[i];
    }
}

/* Full check of one valid input. */
static void roundtrip(ctx *x, remat_compressor c, const float *src, int64_t n, const char *label) {
    int64_t nnz = count_ones(src, n);
    int64_t exp = remat_verify_expected_bytes(c, n, nnz);
    int64_t said = x->cd->bytes(c, n, nnz);
    if (said != exp) {
        check_fail(x, "%s n=%" PRId64 " nnz=%" PRId64 ": compressed size %" PRId64 ", the format needs %" PRId64,
                   label, n, nnz, said, exp);
        return;
    }
    unsigned char *got = xalloc(x, (size_t)exp);
    unsigned char *want = xalloc(x, (size_t)exp);
    float *back = xalloc(x, (size_t)n * 4);
    if (!got || !want || !back) goto out;
    remat_error e = {0};
    if (x->cd->compress(c, got, exp, src, n, &e) != REMAT_OK) {
        check_fail(x, "%s n=%" PRId64 ": valid input refused: %s", label, n, e.msg);
        goto out;
    }
    ref_encode(c, src, n, want);
    for (int64_t i = 0; i < exp; i++)
        if (got[i] != want[i]) {
            check_fail(x, "%s n=%" PRId64 ": compressed byte %" PRId64 " is 0x%02x, the format says 0x%02x", label, n,
                       i, got[i], want[i]);
            goto out;
        }
    memset(back, 0xFF, (size_t)n * 4);
    if (x->cd->decompress(c, back, n, got, exp, &e) != REMAT_OK) {
        check_fail(x, "%s n=%" PRId64 ": decompress refused its own output: %s", label, n, e.msg);
        goto out;
    }
    for (int64_t i = 0; i < n; i++)
        if (remat_f32_bits(back[i]) != remat_f32_bits(src[i])) {
            check_fail(x, "%s n=%" PRId64 ": element %" PRId64 " was 0x%08x (%g), restored 0x%08x (%g)", label, n, i,
                       remat_f32_bits(src[i]), (double)src[i], remat_f32_bits(back[i]), (double)back[i]);
            goto out;
        }
    check_ok(x);
out:
    remat_xfree(got);
    remat_xfree(want);
    remat_xfree(back);
}

/* Valid values: binary 0/1 with probability density of a one; uint8 0 with
 * probability 1-density, else 1..255. */
static void gen(ctx *x, remat_compressor c, float *dst, int64_t n, double density) {
    for (int64_t i = 0; i < n; i++) {
        int on = rng_unit(&x->r) < density;
        if (is_binary(c))
            dst[i] = on ? 1.0f : 0.0f;
        else
            dst[i] = on ? (float)(1 + rng_next(&x->r) % 255) : 0.0f;
    }
}

static const int64_t k_lengths[] = {1, 2, 7, 8, 9, 15, 17, 63, 64, 65, 999, 1000, 1001, 4096, 4099, 65541};
#define N_LENGTHS ((int)(sizeof k_lengths / sizeof k_lengths[0]))
#define MAX_LEN 65541

/* ---- groups ---- */

/* More elements than REMAT_COMPRESS_MAX_ELEMS: refused before any element is read
 * (buf holds far fewer; an implementation that read them would fault). */
static void refuse_too_many(ctx *x, remat_compressor c, float *buf) {
    const int64_t n = REMAT_COMPRESS_MAX_ELEMS + 1;
    remat_error e = {0};
    unsigned char small[8] = {0};
    remat_status st = x->cd->compress(c, small, remat_verify_expected_bytes(c, n, 0), buf, n, &e);
    if (st != REMAT_ERR_INPUT)
        check_fail(x, "compress of %" PRId64 " elements (one more than the limit): status %d, expected refusal", n,
                   (int)st);
    else
        check_ok(x);
    remat_error e2 = {0};
    st = x->cd->decompress(c, buf, n, small, remat_verify_expected_bytes(c, n, 0), &e2);
    if (st != REMAT_ERR_INPUT)
        check_fail(x, "decompress of %" PRId64 " elements (one more than the limit): status %d, expected refusal", n,
                   (int)st);
    else
        check_ok(x);
}

static void g_sizes(ctx *x, remat_compressor c, float *buf) {
    group_begin(x, c, "size formula at REMAT_COMPRESS_MAX_ELEMS");
    const int64_t M = REMAT_COMPRESS_MAX_ELEMS;
    const int64_t ns[] = {M, M - 1, M - 7, M / 2};
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
        const int64_t nnzs[] = {0, 1, ns[a] / 2, ns[a]};
        for (size_t b = 0; b < sizeof nnzs / sizeof nnzs[0]; b++) {
            int64_t exp = remat_verify_expected_bytes(c, ns[a], nnzs[b]);
            int64_t said = x->cd->bytes(c, ns[a], nnzs[b]);
            int64_t enc = remat_encoding_bytes(remat_compressor_encoding(c), ns[a], nnzs[b]);
            if (said != exp)
                check_fail(x, "n=%" PRId64 " nnz=%" PRId64 ": compressed size %" PRId64 ", the format needs %" PRId64,
                           ns[a], nnzs[b], said, exp);
            else if (enc != exp)
                check_fail(x, "n=%" PRId64 " nnz=%" PRId64 ": its encoding's size %" PRId64 ", the format needs %" PRId64,
                           ns[a], nnzs[b], enc, exp);
            else
                check_ok(x);
        }
    }
    /* small sizes: every n up to 33 with no and all ones */
    for (int64_t n = 0; n <= 33; n++)
        for (int64_t nnz = 0; nnz <= n; nnz += n ? n : 1) {
            int64_t exp = remat_verify_expected_bytes(c, n, nnz), said = x->cd->bytes(c, n, nnz);
            if (said != exp)
                check_fail(x, "n=%" PRId64 " nnz=%" PRId64 ": compressed size %" PRId64 ", the format needs %" PRId64, n,
                           nnz, said, exp);
            else
                check_ok(x);
        }
    refuse_too_many(x, c, buf);
}

static void g_small(ctx *x, remat_compressor c, float *buf) {
    group_begin(x, c, "empty");
    roundtrip(x, c, buf, 0, "empty");

    group_begin(x, c, "one element");
    const float vb[] = {0.0f, 1.0f};
    const float vu[] = {0.0f, 1.0f, 2.0f, 127.0f, 128.0f, 254.0f, 255.0f};
    const float *v = is_binary(c) ? vb : vu;
    int nv = is_binary(c) ? 2 : 7;
    for (int i = 0; i < nv; i++) {
        buf[0] = v[i];
        roundtrip(x, c, buf, 1, "one element");
    }

    group_begin(x, c, "lengths 1..1000, random density");
    for (int64_t n = 1; n <= 1000 && !x->nomem; n++) {
        double d = rng_unit(&x->r);
        gen(x, c, buf, n, d);
        roundtrip(x, c, buf, n, "lengths 1..1000");
    }
}

static void fill_const(float *buf, int64_t n, float v) {
    for (int64_t i = 0; i < n; i++) buf[i] = v;
}

static void g_patterns(ctx *x, remat_compressor c, float *buf) {
    group_begin(x, c, "all zeros");
    for (int i = 0; i < N_LENGTHS && !x->nomem; i++) {
        fill_const(buf, k_lengths[i], 0.0f);
        roundtrip(x, c, buf, k_lengths[i], "all zeros");
    }
    group_begin(x, c, "all ones");
    for (int i = 0; i < N_LENGTHS && !x->nomem; i++) {
        fill_const(buf, k_lengths[i], 1.0f);
        roundtrip(x, c, buf, k_lengths[i], "all ones");
    }
    if (!is_binary(c)) {
        group_begin(x, c, "all 255");
        for (int i = 0; i < N_LENGTHS && !x->nomem; i++) {
            fill_const(buf, k_lengths[i], 255.0f);
            roundtrip(x, c, buf, k_lengths[i], "all 255");
        }
        group_begin(x, c, "every value 0..255, both orders");
        for (int i = 0; i < 256; i++) buf[i] = (float)i;
        roundtrip(x, c, buf, 256, "ascending values");
        for (int i = 0; i < 256; i++) buf[i] = (float)(255 - i);
        roundtrip(x, c, buf, 256, "descending values");
    }
    group_begin(x, c, "alternating");
    float hi = is_binary(c) ? 1.0f : 255.0f;
    for (int phase = 0; phase < 2; phase++)
        for (int i = 0; i < N_LENGTHS && !x->nomem; i++) {
            for (int64_t j = 0; j < k_lengths[i]; j++) buf[j] = ((j + phase) & 1) ? hi : 0.0f;
            roundtrip(x, c, buf, k_lengths[i], phase ? "alternating 1,0" : "alternating 0,1");
        }
}

static void g_density(ctx *x, remat_compressor c, float *buf) {
    group_begin(x, c, "random density 0..1");
    const double ds[] = {0.0, 1e-4, 1e-3, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0};
    const int64_t ns[] = {10007, MAX_LEN};
    char label[64];
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t b = 0; b < sizeof ds / sizeof ds[0] && !x->nomem; b++) {
            gen(x, c, buf, ns[a], ds[b]);
            snprintf(label, sizeof label, "density %g", ds[b]);
            roundtrip(x, c, buf, ns[a], label);
        }
}

/* ---- refusals ---- */

static void refuse_one(ctx *x, remat_compressor c, float *buf, int64_t n, int64_t pos, uint32_t bad) {
    gen(x, c, buf, n, 0.5);
    buf[pos] = remat_f32_from_bits(bad);
    int64_t nnz = 0;
    for (int64_t i = 0; i < n; i++) nnz += remat_f32_bits(buf[i]) != 0; /* as remat_count_nonzero counts */
    int64_t bytes = remat_verify_expected_bytes(c, n, nnz);
    unsigned char *dst = xalloc(x, (size_t)bytes);
    if (!dst) return;
    remat_error e = {0};
    remat_status st = x->cd->compress(c, dst, bytes, buf, n, &e);
    char want[48];
    snprintf(want, sizeof want, "element %" PRId64 " is", pos);
    if (st == REMAT_OK)
        check_fail(x, "0x%08x (%g) at element %" PRId64 " of %" PRId64 " was accepted", bad, (double)remat_f32_from_bits(bad), pos,
                   n);
    else if (st != REMAT_ERR_INPUT)
        check_fail(x, "0x%08x at element %" PRId64 " of %" PRId64 ": status %d, expected REMAT_ERR_INPUT", bad, pos, n,
                   (int)st);
    else if (!strstr(e.msg, want))
        check_fail(x, "0x%08x at element %" PRId64 " of %" PRId64 ": message '%s' does not say '%s'", bad, pos, n,
                   e.msg, want);
    else
        check_ok(x);
    remat_xfree(dst);
}

static void g_refusals(ctx *x, remat_compressor c, float *buf) {
    /* binary formats: everything but +0.0 and 1.0 */
    static const uint32_t bad_bin[] = {
        0x3f000000u, /* 0.5 */
        0x80000000u, /* -0.0 */
        0x7fc00000u, /* NaN */
        0x7f800001u, /* signalling NaN */
        0xffc00001u, /* negative NaN with a payload */
        0x40000000u, /* 2.0 */
        0xbf800000u, /* -1.0 */
        0x7f800000u, /* inf */
        0x3f800001u, /* 1 + ulp */
        0x3f7fffffu, /* 1 - ulp/2 */
        0x00000001u, /* smallest denormal */
        0x437f0000u, /* 255.0 */
    };
    /* uint8: everything but 0.0, 1.0, ..., 255.0 */
    static const uint32_t bad_u8[] = {
        0x3fc00000u, /* 1.5 */
        0x43800000u, /* 256.0 */
        0xbf800000u, /* -1.0 */
        0x80000000u, /* -0.0 */
        0x7fc00000u, /* NaN */
        0xffc00001u, /* negative NaN with a payload */
        0x3f000000u, /* 0.5 */
        0x437f8000u, /* 255.5 */
        0x437effffu, /* just below 255 */
        0x7f800000u, /* inf */
        0xff800000u, /* -inf */
        0x00000001u, /* smallest denormal */
        0x4e6e6b28u, /* 1e9 */
    };
    const uint32_t *bad = is_binary(c) ? bad_bin : bad_u8;
    int nbad = is_binary(c) ? (int)(sizeof bad_bin / sizeof bad_bin[0]) : (int)(sizeof bad_u8 / sizeof bad_u8[0]);
    const int64_t ns[] = {1, 9, 1000, 4099};
    for (int b = 0; b < nbad && !x->nomem; b++) {
        char what[64];
        snprintf(what, sizeof what, "refuse %.9g (0x%08x)", (double)remat_f32_from_bits(bad[b]), bad[b]);
        group_begin(x, c, what);
        for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
            int64_t n = ns[a];
            const int64_t pos[] = {0, n / 2, n - 1};
            for (int p = 0; p < 3; p++) {
                if (p && pos[p] == pos[p - 1]) continue;
                refuse_one(x, c, buf, n, pos[p], bad[b]);
            }
        }
    }
}

/* Decompression of a buffer that is not a valid compressed form must be refused. */
static void expect_refused(ctx *x, remat_compressor c, int64_t n, const void *src, int64_t src_bytes,
                           const char *what) {
    float *dst = xalloc(x, (size_t)(n + 1) * 4);
    if (!dst) return;
    remat_error e = {0};
    remat_status st = x->cd->decompress(c, dst, n, src, src_bytes, &e);
    if (st == REMAT_OK)
        check_fail(x, "%s (n=%" PRId64 ", %" PRId64 " bytes) was accepted", what, n, src_bytes);
    else if (st != REMAT_ERR_INPUT)
        check_fail(x, "%s: status %d, expected REMAT_ERR_INPUT", what, (int)st);
    else
        check_ok(x);
    remat_xfree(dst);
}

static void g_malformed(ctx *x, remat_compressor c, float *buf) {
    group_begin(x, c, "malformed compressed buffers refused");
    const int64_t n = 1001;
    gen(x, c, buf, n, 0.3);
    int64_t nnz = count_ones(buf, n);
    int64_t bytes = remat_verify_expected_bytes(c, n, nnz);
    unsigned char *enc = xalloc(x, (size_t)bytes + 8);
    if (!enc) return;
    memset(enc, 0, (size_t)bytes + 8);
    ref_encode(c, buf, n, enc);
    if (c != REMAT_COMP_SPARSE || bytes > 0) {
        expect_refused(x, c, n, enc, bytes + 1, "one byte too many");
        if (bytes > 0) expect_refused(x, c, n, enc, bytes - 1, "one byte too few");
    }
    if (c == REMAT_COMP_SPARSE) {
        expect_refused(x, c, n, enc, bytes + 4, "one position too many (past the end)");
        if (nnz >= 2) {
            uint32_t p;
            unsigned char *bad = xalloc(x, (size_t)bytes);
            if (!bad) goto out;
            memcpy(bad, enc, (size_t)bytes);
            p = (uint32_t)n;
            memcpy(bad + bytes - 4, &p, 4);
            expect_refused(x, c, n, bad, bytes, "a position equal to n");
            p = 0xFFFFFFFFu;
            memcpy(bad + bytes - 4, &p, 4);
            expect_refused(x, c, n, bad, bytes, "position 2^32-1");
            memcpy(bad, enc, (size_t)bytes);
            memcpy(bad + 4, bad, 4); /* second position repeats the first */
            expect_refused(x, c, n, bad, bytes, "a repeated position");
            memcpy(bad, enc, (size_t)bytes);
            memcpy(bad, enc + 4, 4); /* swap the first two */
            memcpy(bad + 4, enc, 4);
            expect_refused(x, c, n, bad, bytes, "descending positions");
            remat_xfree(bad);
        }
    }
    if (c == REMAT_COMP_BOOL) {
        const unsigned char flags[] = {2, 0x80, 0xFF};
        for (size_t i = 0; i < sizeof flags; i++) {
            unsigned char keep = enc[n / 2];
            enc[n / 2] = flags[i];
            char what[48];
            snprintf(what, sizeof what, "a bool byte 0x%02x", flags[i]);
            expect_refused(x, c, n, enc, bytes, what);
            enc[n / 2] = keep;
        }
    }
out:
    remat_xfree(enc);
}

/* ---- the large bit round trip ---- */

static int64_t mem_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        long long kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) {
                fclose(f);
                return (int64_t)kb * 1024;
            }
        fclose(f);
    }
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return (pages > 0 && page > 0) ? (int64_t)pages * page : 0;
}

static int64_t auto_large(void) {
    int64_t spare = mem_available() - ((int64_t)1 << 30);
    int64_t n = spare > 0 ? spare / 33 * 8 : 0; /* 4 bytes + 1 bit = 33/8 bytes per element */
    if (n > REMAT_COMPRESS_MAX_ELEMS) n = REMAT_COMPRESS_MAX_ELEMS;
    if (n < REMAT_VERIFY_LARGE_DEFAULT) n = REMAT_VERIFY_LARGE_DEFAULT;
    return n;
}

/* Byte j of the large pattern (element i is bit i%8 of byte i/8). */
static unsigned char large_byte(uint64_t seed, int64_t j) { return (unsigned char)(remat_rng_mix(seed ^ (uint64_t)j) >> 56); }

/* The 8 floats (0.0 / 1.0) that byte value v decodes to, LSB first. */
static void byte_table(float tab[256][8]) {
    for (int v = 0; v < 256; v++)
        for (int b = 0; b < 8; b++) tab[v][b] = ((v >> b) & 1) ? 1.0f : 0.0f;
}

static void g_large(ctx *x, int64_t n) {
    const remat_compressor c = REMAT_COMP_BIT;
    char what[64];
    snprintf(what, sizeof what, "large round trip, %" PRId64 " elements", n);
    group_begin(x, c, what);
    uint64_t seed = x->o->seed * 0x9e3779b97f4a7c15ull + 17;
    int64_t exp = remat_verify_expected_bytes(c, n, 0);
    int64_t said = x->cd->bytes(c, n, 0);
    if (said != exp) {
        check_fail(x, "n=%" PRId64 ": compressed size %" PRId64 ", the format needs %" PRId64, n, said, exp);
        return;
    }
    static float tab[256][8];
    byte_table(tab);
    float *v = xalloc(x, (size_t)n * 4);
    unsigned char *enc = v ? xalloc(x, (size_t)exp) : NULL;
    if (!v || !enc) {
        remat_xfree(v);
        return;
    }
    const int64_t full = n / 8;
    const int last_bits = (int)(n % 8);
    for (int64_t j = 0; j < full; j++) memcpy(v + 8 * j, tab[large_byte(seed, j)], sizeof tab[0]);
    if (last_bits) memcpy(v + 8 * full, tab[large_byte(seed, full)], (size_t)last_bits * 4);
    remat_error e = {0};
    if (x->cd->compress(c, enc, exp, v, n, &e) != REMAT_OK) {
        check_fail(x, "n=%" PRId64 ": valid input refused: %s", n, e.msg);
        goto out;
    }
    check_ok(x);
    for (int64_t j = 0; j < exp; j++) {
        unsigned char want = large_byte(seed, j);
        if (j == full) want &= (unsigned char)((1u << last_bits) - 1);
        if (enc[j] != want) {
            check_fail(x, "n=%" PRId64 ": compressed byte %" PRId64 " is 0x%02x, the format says 0x%02x", n, j, enc[j],
                       want);
            goto out;
        }
    }
    check_ok(x);
    memset(v, 0xFF, (size_t)n * 4);
    if (x->cd->decompress(c, v, n, enc, exp, &e) != REMAT_OK) {
        check_fail(x, "n=%" PRId64 ": decompress refused its own output: %s", n, e.msg);
        goto out;
    }
    for (int64_t j = 0; j < exp; j++) {
        const float *want = tab[large_byte(seed, j)];
        int lim = j == full ? last_bits : 8;
        if (!memcmp(v + 8 * j, want, (size_t)lim * 4)) continue;
        for (int b = 0; b < lim; b++)
            if (remat_f32_bits(v[8 * j + b]) != remat_f32_bits(want[b])) {
                check_fail(x, "n=%" PRId64 ": element %" PRId64 " was %g, restored 0x%08x", n, 8 * j + b,
                           (double)want[b], remat_f32_bits(v[8 * j + b]));
                goto out;
            }
    }
    check_ok(x);
out:
    remat_xfree(v);
    remat_xfree(enc);
}

remat_status remat_verify_compressors_run(const remat_verify_compress_opts *o, remat_verify_compress_report *out,
                                          remat_error *err) {
    memset(out, 0, sizeof *out);
    remat_verify_codec def = remat_verify_codec_default();
    ctx x;
    memset(&x, 0, sizeof x);
    x.cd = o->codec ? o->codec : &def;
    x.o = o;
    x.rep = out;
    x.err = err;
    x.r.s = remat_rng_mix(o->seed);
    out->seed = o->seed;
    float *buf = xalloc(&x, (size_t)MAX_LEN * 4);
    if (!buf) return REMAT_ERR_NOMEM;
    for (int ci = 0; ci < N_COMPS && !x.nomem; ci++) {
        remat_compressor c = k_comps[ci];
        g_sizes(&x, c, buf);
        g_small(&x, c, buf);
        g_patterns(&x, c, buf);
        g_density(&x, c, buf);
        g_refusals(&x, c, buf);
        g_malformed(&x, c, buf);
    }
    remat_xfree(buf);
    int64_t large = o->large_elems == REMAT_VERIFY_LARGE_AUTO ? auto_large() : o->large_elems;
    if (large > REMAT_COMPRESS_MAX_ELEMS) large = REMAT_COMPRESS_MAX_ELEMS;
    if (large > 0 && !x.nomem) g_large(&x, large);
    out->large_elems = large > 0 ? large : 0;
    group_end(&x);
    if (x.nomem) return err ? err->status : REMAT_ERR_NOMEM;
    return REMAT_OK;
}
