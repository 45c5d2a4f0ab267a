/* json_write.c - the JSON writer (escaping rules in core/io/json_write.h). */
#include "core/io/json_write.h"

#include <math.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (1..4), 0 when p does not start one. */
static int utf8_len(const unsigned char *p) {
    int n;
    unsigned cp;
    if (p[0] < 0x80) return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf) n = 2, cp = p[0] & 0x1fu;
    else if (p[0] >= 0xe0 && p[0] <= 0xef) n = 3, cp = p[0] & 0x0fu;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4) n = 4, cp = p[0] & 0x07u;
    else return 0;
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0; /* also stops at the NUL */
        cp = (cp << 6) | (p[i] & 0x3fu);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
        return 0; /* overlong, out of range, or a surrogate */
    return n;
}

typedef struct sink {
    FILE *f;
    char *buf;
    size_t len, used;
} sink;

static void put(sink *k, const char *s, size_t n) {
    if (k->f) {
        fwrite(s, 1, n, k->f);
    } else if (k->len) {
        size_t room = k->used < k->len - 1 ? k->len - 1 - k->used : 0;
        memcpy(k->buf + (k->used < k->len - 1 ? k->used : k->len - 1), s, n < room ? n : room);
    }
    k->used += n;
}

static void quote(sink *k, const char *s) {
    put(k, "\"", 1);
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        char esc[8];
        const char *e = NULL;
        switch (*p) {
        case '"': e = "\\\""; break;
        case '\\': e = "\\\\"; break;
        case '\b': e = "\\b"; break;
        case '\f': e = "\\f"; break;
        case '\n': e = "\\n"; break;
        case '\r': e = "\\r"; break;
        case '\t': e = "\\t"; break;
        default: break;
        }
        if (e) {
            put(k, e, strlen(e));
            p++;
            continue;
        }
        int n = *p < 0x20 || *p == 0x7f ? 0 : utf8_len(p);
        if (n == 0) {
            static const char hex[] = "0123456789abcdef";
            memcpy(esc, "\\u00", 4);
            esc[4] = hex[*p >> 4];
            esc[5] = hex[*p & 15];
            put(k, esc, 6);
            p++;
        } else {
            put(k, (const char *)p, (size_t)n);
            p += n;
        }
    }
    put(k, "\"", 1);
    if (!k->f && k->len) k->buf[k->used < k->len - 1 ? k->used : k->len - 1] = '\0';
}

void remat_json_string(FILE *f, const char *s) {
    sink k = {f, NULL, 0, 0};
    quote(&k, s);
}

size_t remat_json_quote(char *buf, size_t len, const char *s) {
    sink k = {NULL, buf, buf ? len : 0, 0};
    quote(&k, s);
    return k.used;
}

void remat_json_number(FILE *f, double v) {
    if (isnan(v) || isinf(v)) fputs("null", f);
    else fprintf(f, "%.9g", v);
}

void remat_json_key(FILE *f, int comma, const char *key) {
    if (comma) fputc(',', f);
    remat_json_string(f, key);
    fputc(':', f);
}
