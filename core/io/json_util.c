/* json_util.c - strict field access on cJSON trees for the model and plan readers.
 * Contract in core/io/json_util.h. */
#include "core/io/json_util.h"
#include "core/io/input_file.h"
#include "core/io/json_strict.h"

#include "core/io/file_kind.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define JSON_MAX_FILE_BYTES (64u << 20)

static void *hook_malloc(size_t n) { return remat_xmalloc(n ? n : 1, NULL); }
static void hook_free(void *p) { remat_xfree(p); }

/* Installed once (normally by the constructor below, before main and before any
 * thread exists), so concurrent parses never write cJSON's global hooks. */
void remat_json_install_hooks(void) {
    static atomic_int installed;
    if (atomic_exchange(&installed, 1)) return;
    cJSON_Hooks h = {hook_malloc, hook_free};
    cJSON_InitHooks(&h);
}

#if defined(__GNUC__)
__attribute__((constructor)) static void json_hooks_at_start(void) { remat_json_install_hooks(); }
#endif

char *remat_json_strdup(const char *s, remat_error *err) {
    if (!s) s = "";
    size_t n = strlen(s) + 1;
    char *d = remat_xmalloc(n, err);
    if (d) memcpy(d, s, n);
    return d;
}

const char *remat_json_path(char *buf, size_t len, const char *prefix, const char *key) {
    if (prefix && prefix[0]) snprintf(buf, len, "%s.%s", prefix, key);
    else snprintf(buf, len, "%s", key);
    return buf;
}

const char *remat_json_index_path(char *buf, size_t len, const char *prefix, int i) {
    snprintf(buf, len, "%s[%d]", prefix ? prefix : "", i);
    return buf;
}

const char *remat_json_sanitize(const char *s, char *buf, size_t len) {
    if (!buf || len == 0) return buf;
    size_t o = 0, i = 0;
    const size_t max_chars = 40;
    if (!s) s = "";
    for (; s[i] && o + 1 < len && i < max_chars; i++) {
        unsigned char ch = (unsigned char)s[i];
        buf[o++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
    }
    if (s[i] && o + 4 < len) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = '\0';
    return buf;
}

const char *remat_json_describe(const cJSON *v, char *buf, size_t len) {
    char tmp[64];
    if (!v) snprintf(buf, len, "nothing");
    else if (cJSON_IsNull(v)) snprintf(buf, len, "null");
    else if (cJSON_IsTrue(v)) snprintf(buf, len, "true");
    else if (cJSON_IsFalse(v)) snprintf(buf, len, "false");
    else if (cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) && fabs(v->valuedouble) <= 9007199254740992.0)
        snprintf(buf, len, "%.0f", v->valuedouble); /* integers echoed exactly (up to 2^53, exact in a double) */
    else if (cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) && fabs(v->valuedouble) < 1e30)
        snprintf(buf, len, "%.0f (as read: beyond 2^53 a JSON number is rounded)", v->valuedouble);
    else if (cJSON_IsNumber(v)) snprintf(buf, len, "%.9g", v->valuedouble);
    else if (cJSON_IsString(v))
        snprintf(buf, len, "\"%s\"", remat_json_sanitize(v->valuestring, tmp, sizeof tmp));
    else if (cJSON_IsArray(v)) snprintf(buf, len, "an array");
    else if (cJSON_IsObject(v)) snprintf(buf, len, "an object");
    else snprintf(buf, len, "an invalid value");
    return buf;
}

remat_status remat_json_fail(const json_ctx *c, const char *field, const char *fmt, ...) {
    char what[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return remat_error_set(c->err, REMAT_ERR_INPUT, "%s: %s: %s", c->origin, field && field[0] ? field : "(root)",
                           what);
}

remat_status remat_json_fail_value(const json_ctx *c, const char *field, const cJSON *v, const char *expected) {
    char got[96];
    return remat_json_fail(c, field, "expected %s, got %s", expected,
                           v ? remat_json_describe(v, got, sizeof got) : "nothing");
}

static void line_col(const char *text, const char *at, int *line, int *col) {
    *line = 1;
    *col = 1;
    for (const char *p = text; p < at && *p; p++) {
        if (*p == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

remat_status remat_json_keep_source(remat_status st, cJSON *root, char *copy, const char *origin, char **text,
                                    char **path, remat_error *err) {
    cJSON_Delete(root);
    if (st == REMAT_OK) {
        *text = copy;
        copy = NULL;
        *path = remat_json_strdup(origin, err);
        if (!*path) st = REMAT_ERR_NOMEM;
    }
    remat_xfree(copy);
    return st;
}

remat_status remat_json_parse_root(const char *text, size_t len, const char *origin, cJSON **root, char **copy,
                                   remat_error *err) {
    json_ctx c = {origin ? origin : "<text>", err};
    *root = NULL;
    if (copy) *copy = NULL;
    if (!text) len = 0;
    if (len > JSON_MAX_FILE_BYTES)
        return remat_json_fail(&c, "(file)", "expected at most %u bytes of JSON, got %zu", JSON_MAX_FILE_BYTES, len);
    if (remat_file_kind_of_text(text, len) == REMAT_FILE_HDF5)
        return remat_json_fail(&c, "(file)", "expected JSON text, got %s", remat_file_kind_words(REMAT_FILE_HDF5));
    if (len && memchr(text, '\0', len))
        return remat_json_fail(&c, "(file)", "expected JSON text, got a NUL byte at offset %zu",
                               (size_t)((const char *)memchr(text, '\0', len) - text));
    char *buf = remat_xmalloc(len + 1, err);
    if (!buf) return REMAT_ERR_NOMEM;
    if (len) memcpy(buf, text, len);
    buf[len] = '\0';
    size_t bad_at = 0;
    char why[128];
    if (remat_json_strict_fault(buf, len, &bad_at, why, sizeof why)) {
        int line, col;
        line_col(buf, buf + bad_at, &line, &col);
        remat_status st =
            remat_json_fail(&c, "(file)", "expected valid JSON, got %s at line %d, column %d", why, line, col);
        remat_xfree(buf);
        return st;
    }
    remat_json_install_hooks();
    const char *end = NULL;
    cJSON *r = cJSON_ParseWithLengthOpts(buf, len + 1, &end, 1);
    if (!r) {
        int line, col;
        line_col(buf, end ? end : buf, &line, &col);
        remat_status st =
            remat_json_fail(&c, "(file)", "expected valid JSON, got a syntax error at line %d, column %d", line, col);
        remat_xfree(buf);
        return st;
    }
    if (!cJSON_IsObject(r)) {
        char got[96];
        remat_status st =
            remat_json_fail(&c, "(root)", "expected an object {...}, got %s", remat_json_describe(r, got, sizeof got));
        cJSON_Delete(r);
        remat_xfree(buf);
        return st;
    }
    *root = r;
    if (copy) *copy = buf;
    else remat_xfree(buf);
    return REMAT_OK;
}

remat_status remat_json_read_file(const char *path, char **text, size_t *len, remat_error *err) {
    return remat_input_read_all(path, JSON_MAX_FILE_BYTES, text, len, err);
}

const cJSON *remat_json_member(const cJSON *obj, const char *key) { return cJSON_GetObjectItemCaseSensitive(obj, key); }

remat_status remat_json_check_object(const json_ctx *c, const cJSON *obj, const char *what,
                                     const char *const *allowed) {
    if (!cJSON_IsObject(obj)) return remat_json_fail_value(c, what, obj, "an object {...}");
    for (const cJSON *it = obj->child; it; it = it->next) {
        const char *k = it->string ? it->string : "";
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            if (!strcmp(*a, k)) { ok = 1; break; }
        char field[160], key[64];
        remat_json_path(field, sizeof field, what, remat_json_sanitize(k, key, sizeof key));
        if (!ok) {
            char list[256];
            size_t o = 0;
            list[0] = '\0';
            for (const char *const *a = allowed; *a && o < sizeof list; a++)
                o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", a == allowed ? "" : ", ", *a);
            return remat_json_fail(c, field, "unknown field (expected one of: %s)", list);
        }
        for (const cJSON *prev = obj->child; prev != it; prev = prev->next)
            if (prev->string && !strcmp(prev->string, k))
                return remat_json_fail(c, field, "expected once, got a duplicate field");
    }
    return REMAT_OK;
}

static remat_status absent(const json_ctx *c, const char *field, const char *expected) {
    return remat_json_fail(c, field, "missing (expected %s)", expected);
}

remat_status remat_json_get_int(const json_ctx *c, const cJSON *obj, const char *prefix, const char *key, int required,
                                int64_t def, int64_t min, int64_t max, int64_t *out) {
    char field[160], expected[96];
    remat_json_path(field, sizeof field, prefix, key);
    if (max == INT64_MAX) snprintf(expected, sizeof expected, "an integer >= %lld", (long long)min);
    else snprintf(expected, sizeof expected, "an integer in [%lld, %lld]", (long long)min, (long long)max);
    const cJSON *v = remat_json_member(obj, key);
    if (!v) {
        if (required) return absent(c, field, expected);
        *out = def;
        return REMAT_OK;
    }
    if (!cJSON_IsNumber(v)) return remat_json_fail_value(c, field, v, expected);
    double d = v->valuedouble;
    /* 2^62 bounds the cast; min/max are far below it in practice. */
    if (!isfinite(d) || d != floor(d) || d < -4.6e18 || d > 4.6e18 || (int64_t)d < min || (int64_t)d > max)
        return remat_json_fail_value(c, field, v, expected);
    *out = (int64_t)d;
    return REMAT_OK;
}

remat_status remat_json_get_number(const json_ctx *c, const cJSON *obj, const char *prefix, const char *key,
                                   int required, double def, double *out) {
    char field[160];
    remat_json_path(field, sizeof field, prefix, key);
    const cJSON *v = remat_json_member(obj, key);
    if (!v) {
        if (required) return absent(c, field, "a number");
        *out = def;
        return REMAT_OK;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return remat_json_fail_value(c, field, v, "a finite number");
    *out = v->valuedouble;
    return REMAT_OK;
}

remat_status remat_json_get_bool(const json_ctx *c, const cJSON *obj, const char *prefix, const char *key, int required,
                                 int def, int *out) {
    char field[160];
    remat_json_path(field, sizeof field, prefix, key);
    const cJSON *v = remat_json_member(obj, key);
    if (!v) {
        if (required) return absent(c, field, "true or false");
        *out = def;
        return REMAT_OK;
    }
    if (!cJSON_IsBool(v)) return remat_json_fail_value(c, field, v, "true or false");
    *out = cJSON_IsTrue(v) ? 1 : 0;
    return REMAT_OK;
}

remat_status remat_json_get_enum(const json_ctx *c, const cJSON *obj, const char *prefix, const char *key, int required,
                                 const char *const *names, int n, int def, int *out) {
    char field[160], expected[256];
    remat_json_path(field, sizeof field, prefix, key);
    size_t o = (size_t)snprintf(expected, sizeof expected, "one of");
    for (int i = 0; i < n && o < sizeof expected; i++)
        o += (size_t)snprintf(expected + o, sizeof expected - o, "%s \"%s\"", i ? "," : "", names[i]);
    const cJSON *v = remat_json_member(obj, key);
    if (!v) {
        if (required) return absent(c, field, expected);
        *out = def;
        return REMAT_OK;
    }
    if (cJSON_IsString(v))
        for (int i = 0; i < n; i++)
            if (!strcmp(v->valuestring, names[i])) {
                *out = i;
                return REMAT_OK;
            }
    return remat_json_fail_value(c, field, v, expected);
}

remat_status remat_json_check_name(const json_ctx *c, const cJSON *v, const char *field, char *out, size_t out_len) {
    static const char expected[] =
        "a name of 1 to 63 characters from A-Z a-z 0-9 _ . - (not starting with . or -)";
    if (!cJSON_IsString(v)) return remat_json_fail_value(c, field, v, expected);
    const char *s = v->valuestring;
    size_t n = strlen(s);
    if (n == 0 || n >= out_len || n > 63 || s[0] == '.' || s[0] == '-')
        return remat_json_fail_value(c, field, v, expected);
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                 ch == '.' || ch == '-';
        if (!ok) return remat_json_fail_value(c, field, v, expected);
    }
    memcpy(out, s, n + 1);
    return REMAT_OK;
}

remat_status remat_json_get_name(const json_ctx *c, const cJSON *obj, const char *prefix, const char *key, char *out,
                                 size_t out_len) {
    char field[160];
    remat_json_path(field, sizeof field, prefix, key);
    const cJSON *v = remat_json_member(obj, key);
    if (!v) return absent(c, field, "a name");
    return remat_json_check_name(c, v, field, out, out_len);
}

remat_status remat_json_fail_range(const json_ctx *c, const cJSON *obj, const char *prefix, const char *key,
                                   const char *expected) {
    char field[160];
    return remat_json_fail_value(c, remat_json_path(field, sizeof field, prefix, key), remat_json_member(obj, key),
                                 expected);
}

remat_status remat_json_get_float(const json_ctx *c, const cJSON *obj, const char *prefix, const char *key, double def,
                                  float *out) {
    double d;
    remat_status st = remat_json_get_number(c, obj, prefix, key, 0, def, &d);
    if (st) return st;
    if (!(fabs(d) <= FLT_MAX)) return remat_json_fail_range(c, obj, prefix, key, "a number within float range");
    *out = (float)d;
    return REMAT_OK;
}
