/* json_strict.c - a recursive-descent scan of JSON text for the faults of
 * json_strict.h. It follows the grammar only as far as it must to know where
 * strings and numbers are; on any other syntax error it stops and reports nothing
 * (cJSON then names the line and column of the syntax error). Recursion depth is
 * bounded by JSON_STRICT_MAX_DEPTH. */
#include "core/io/json_strict.h"

#include <stdio.h>
#include <string.h>

typedef struct scan {
    const unsigned char *s;
    size_t n, i;
    int fault;        /* 1: a strict fault found (why/at set); 0 */
    int stop;         /* 1: stop scanning (fault or a syntax error) */
    size_t at;
    char *why;
    size_t why_len;
} scan;

static void fault(scan *c, size_t at, const char *why) {
    if (c->stop) return;
    c->fault = 1;
    c->stop = 1;
    c->at = at;
    snprintf(c->why, c->why_len, "%s", why);
}

static void syntax(scan *c) { c->stop = 1; }

static void ws(scan *c) {
    while (c->i < c->n && (c->s[c->i] == ' ' || c->s[c->i] == '\t' || c->s[c->i] == '\n' || c->s[c->i] == '\r'))
        c->i++;
}

static int hex4(scan *c, size_t at, unsigned *out) {
    if (at + 4 > c->n) return 0;
    unsigned v = 0;
    for (size_t k = 0; k < 4; k++) {
        unsigned char h = c->s[at + k];
        v <<= 4;
        if (h >= '0' && h <= '9') v |= (unsigned)(h - '0');
        else if (h >= 'a' && h <= 'f') v |= (unsigned)(h - 'a' + 10);
        else if (h >= 'A' && h <= 'F') v |= (unsigned)(h - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

/* One UTF-8 sequence at c->i (its first byte >= 0x80); advances past it. */
static void utf8(scan *c) {
    size_t at = c->i;
    unsigned char b = c->s[at];
    int more;
    unsigned lo = 0x80, hi = 0xBF; /* the allowed range of the second byte */
    if (b >= 0xC2 && b <= 0xDF) more = 1;
    else if (b == 0xE0) { more = 2; lo = 0xA0; }         /* below: overlong */
    else if (b == 0xED) { more = 2; hi = 0x9F; }         /* above: a surrogate */
    else if (b >= 0xE1 && b <= 0xEF) more = 2;
    else if (b == 0xF0) { more = 3; lo = 0x90; }         /* below: overlong */
    else if (b >= 0xF1 && b <= 0xF3) more = 3;
    else if (b == 0xF4) { more = 3; hi = 0x8F; }         /* above: past U+10FFFF */
    else {
        char w[64];
        snprintf(w, sizeof w, "invalid UTF-8 (byte 0x%02X)", b);
        fault(c, at, w);
        return;
    }
    for (int k = 1; k <= more; k++) {
        unsigned char x = at + (size_t)k < c->n ? c->s[at + (size_t)k] : 0;
        unsigned l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
        if (x < l || x > h) {
            char w[128];
            if (k == 1 && x >= 0x80 && x <= 0xBF)
                snprintf(w, sizeof w, "invalid UTF-8 (0x%02X 0x%02X: %s)", b, x,
                         b == 0xED ? "an encoded surrogate" : b == 0xF4 ? "past U+10FFFF" : "an overlong form");
            else
                snprintf(w, sizeof w, "invalid UTF-8 (a truncated sequence after byte 0x%02X)", b);
            fault(c, at, w);
            return;
        }
    }
    c->i = at + (size_t)more + 1;
}

static void string(scan *c) {
    c->i++; /* the opening quote */
    while (!c->stop) {
        if (c->i >= c->n) return syntax(c);
        unsigned char ch = c->s[c->i];
        if (ch == '"') {
            c->i++;
            return;
        }
        if (ch < 0x20) {
            char w[96];
            snprintf(w, sizeof w, "a raw control character (0x%02X) in a string (expected it escaped)", ch);
            return fault(c, c->i, w);
        }
        if (ch >= 0x80) {
            utf8(c);
            continue;
        }
        if (ch != '\\') {
            c->i++;
            continue;
        }
        if (c->i + 1 >= c->n) return syntax(c);
        unsigned char e = c->s[c->i + 1];
        if (e != 'u') {
            if (!strchr("\"\\/bfnrt", e) || e == 0) return syntax(c);
            c->i += 2;
            continue;
        }
        size_t at = c->i;
        unsigned v;
        if (!hex4(c, at + 2, &v)) return syntax(c);
        if (v == 0) return fault(c, at, "\\u0000 in a string (expected no NUL character)");
        if (v >= 0xDC00 && v <= 0xDFFF) return fault(c, at, "an unpaired low surrogate escape");
        c->i = at + 6;
        if (v >= 0xD800 && v <= 0xDBFF) {
            unsigned w2;
            if (c->i + 6 > c->n || c->s[c->i] != '\\' || c->s[c->i + 1] != 'u' || !hex4(c, c->i + 2, &w2) ||
                w2 < 0xDC00 || w2 > 0xDFFF)
                return fault(c, at, "an unpaired high surrogate escape");
            c->i += 6;
        }
    }
}

static int digit(scan *c) { return c->i < c->n && c->s[c->i] >= '0' && c->s[c->i] <= '9'; }

static void number(scan *c) {
    if (c->s[c->i] == '-') c->i++;
    if (!digit(c)) return syntax(c);
    size_t start = c->i;
    if (c->s[c->i] == '0') {
        c->i++;
        if (digit(c)) return fault(c, start, "a number with a leading zero");
    } else {
        while (digit(c)) c->i++;
    }
    if (c->i < c->n && c->s[c->i] == '.') {
        c->i++;
        if (!digit(c)) return syntax(c);
        while (digit(c)) c->i++;
    }
    if (c->i < c->n && (c->s[c->i] == 'e' || c->s[c->i] == 'E')) {
        c->i++;
        if (c->i < c->n && (c->s[c->i] == '+' || c->s[c->i] == '-')) c->i++;
        if (!digit(c)) return syntax(c);
        while (digit(c)) c->i++;
    }
}

static void literal(scan *c, const char *word) {
    size_t k = strlen(word);
    if (c->i + k > c->n || memcmp(c->s + c->i, word, k) != 0) return syntax(c);
    c->i += k;
}

static void value(scan *c, int depth);

static void container(scan *c, int depth, unsigned char close) {
    if (depth >= JSON_STRICT_MAX_DEPTH) {
        char w[64];
        snprintf(w, sizeof w, "nesting deeper than %d levels", JSON_STRICT_MAX_DEPTH);
        return fault(c, c->i, w);
    }
    c->i++;
    ws(c);
    if (c->i < c->n && c->s[c->i] == close) {
        c->i++;
        return;
    }
    while (!c->stop) {
        if (close == '}') {
            ws(c);
            if (c->i >= c->n || c->s[c->i] != '"') return syntax(c);
            string(c);
            if (c->stop) return;
            ws(c);
            if (c->i >= c->n || c->s[c->i] != ':') return syntax(c);
            c->i++;
        }
        value(c, depth + 1);
        if (c->stop) return;
        ws(c);
        if (c->i < c->n && c->s[c->i] == ',') {
            c->i++;
            continue;
        }
        if (c->i < c->n && c->s[c->i] == close) {
            c->i++;
            return;
        }
        return syntax(c);
    }
}

static void value(scan *c, int depth) {
    ws(c);
    if (c->i >= c->n) return syntax(c);
    unsigned char ch = c->s[c->i];
    if (ch == '{') container(c, depth, '}');
    else if (ch == '[') container(c, depth, ']');
    else if (ch == '"') string(c);
    else if (ch == '-' || (ch >= '0' && ch <= '9')) number(c);
    else if (ch == 't') literal(c, "true");
    else if (ch == 'f') literal(c, "false");
    else if (ch == 'n') literal(c, "null");
    else syntax(c);
}

int remat_json_strict_fault(const char *text, size_t len, size_t *at, char *why, size_t why_len) {
    scan c = {(const unsigned char *)text, len, 0, 0, 0, 0, why, why_len};
    if (why_len) why[0] = 0;
    value(&c, 0);
    if (!c.fault) return 0;
    *at = c.at;
    return 1;
}
