/* size.c - the size grammar (contract and grammar in core/base/size.h).
 *
 * The number is read digit by digit (no strtod: its locale, exponents, hex and
 * "inf"/"nan" spellings are not part of the grammar). The integer part is exact up
 * to INT64_MAX; a fraction (at most 18 digits are significant) is scaled by the
 * unit and rounded to the nearest byte. */
#include "core/base/size.h"

#include <math.h>
#include <string.h>
#include <strings.h>

typedef struct unit { const char *name; int64_t mult; } unit;

static const unit UNITS[] = {
    {"", 1},
    {"b", 1},
    {"kb", 1000},
    {"mb", 1000000},
    {"gb", 1000000000},
    {"tb", 1000000000000},
    {"kib", (int64_t)1 << 10},
    {"mib", (int64_t)1 << 20},
    {"gib", (int64_t)1 << 30},
    {"tib", (int64_t)1 << 40},
};

int remat_size_parse(const char *s, int64_t *out) {
    if (!s) return -1;
    if (strcmp(s, "inf") == 0) {
        *out = REMAT_SIZE_INF;
        return 0;
    }
    const char *p = s;
    if (*p < '0' || *p > '9') return -1;
    int64_t ipart = 0;
    while (*p >= '0' && *p <= '9') {
        int d = *p - '0';
        if (ipart > (INT64_MAX - d) / 10) return -1;
        ipart = ipart * 10 + d;
        p++;
    }
    long double frac = 0.0L, scale = 0.1L;
    int has_frac = 0;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9') return -1;
        for (; *p >= '0' && *p <= '9'; p++) {
            frac += (*p - '0') * scale;
            scale *= 0.1L;
        }
        has_frac = 1;
    }
    if (*p == ' ') {
        p++;
        if (*p == '\0') return -1; /* "12 " */
    }
    int64_t mult = -1;
    for (size_t i = 0; i < sizeof UNITS / sizeof UNITS[0]; i++)
        if (strcasecmp(p, UNITS[i].name) == 0) {
            mult = UNITS[i].mult;
            break;
        }
    if (mult < 0) return -1;
    if (mult == 1 && has_frac) return -1; /* bytes are whole */
    if (ipart > INT64_MAX / mult) return -1;
    int64_t whole = ipart * mult;
    int64_t extra = (int64_t)llroundl(frac * (long double)mult);
    if (whole > INT64_MAX - extra) return -1;
    *out = whole + extra;
    return 0;
}

int64_t remat_size_parse_or_neg(const char *s) {
    int64_t v;
    return remat_size_parse(s, &v) == 0 ? v : -1;
}
