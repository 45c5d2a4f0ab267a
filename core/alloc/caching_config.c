/* caching_config.c - the constants of the caching allocator model, their defaults
 * (PyTorch's c10/cuda/CUDACachingAllocator.cpp: kMinBlockSize, kSmallSize,
 * kSmallBuffer, kLargeBuffer, kMinLargeAlloc, kRoundLarge; expandable segments map
 * kSmallBuffer pages in the small pool and kLargeBuffer pages in the large pool),
 * and their text form "name=value,...". docs/allocator-model.md lists them. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc/alloc_model.h"
#include "core/base/size.h"

#define KIB ((int64_t)1024)
#define MIB (KIB * 1024)
#define GIB (MIB * 1024)

remat_caching_config remat_caching_config_default(void) {
    remat_caching_config c;
    memset(&c, 0, sizeof c);
    c.round_bytes = 512;            /* kMinBlockSize */
    c.small_size = 1 * MIB;         /* kSmallSize */
    c.small_segment = 2 * MIB;      /* kSmallBuffer */
    c.large_segment = 20 * MIB;     /* kLargeBuffer */
    c.min_large_alloc = 10 * MIB;   /* kMinLargeAlloc */
    c.round_large = 2 * MIB;        /* kRoundLarge */
    c.small_split_min = 512;        /* should_split: small pool, remaining >= kMinBlockSize */
    c.large_split_min = 1 * MIB;    /* should_split: large pool, remaining > kSmallSize */
    c.max_split_size = INT64_MAX;   /* CUDAAllocatorConfig::max_split_size() default: SIZE_MAX */
    c.expandable_segments = 0;
    c.expandable_page = 2 * MIB;        /* ExpandableSegment page of the small pool: kSmallBuffer */
    c.expandable_large_page = 20 * MIB; /* ... of the large pool: kLargeBuffer */
    return c;
}

typedef enum { F_SIZE, F_FLAG } field_kind;

typedef struct {
    const char *name;
    field_kind kind;
    size_t off;
} field_desc;

#define FIELD(n, k) {#n, k, offsetof(remat_caching_config, n)}
static const field_desc fields[] = {
    FIELD(round_bytes, F_SIZE),     FIELD(small_size, F_SIZE),        FIELD(small_segment, F_SIZE),
    FIELD(large_segment, F_SIZE),   FIELD(min_large_alloc, F_SIZE),   FIELD(round_large, F_SIZE),
    FIELD(small_split_min, F_SIZE), FIELD(large_split_min, F_SIZE),   FIELD(max_split_size, F_SIZE),
    FIELD(expandable_segments, F_FLAG), FIELD(expandable_page, F_SIZE), FIELD(expandable_large_page, F_SIZE),
};
#define N_FIELDS ((int)(sizeof fields / sizeof fields[0]))

static remat_status check_config(const remat_caching_config *c, remat_error *err) {
#define NEED(cond, field, what)                                                                              \
    do {                                                                                                     \
        if (!(cond))                                                                                         \
            return remat_error_set(err, REMAT_ERR_INPUT, "allocator config: %s: expected %s", field, what); \
    } while (0)
    NEED(c->round_bytes >= 1 && (c->round_bytes & (c->round_bytes - 1)) == 0, "round_bytes",
         "a power of two (PyTorch's kMinBlockSize is 512 B)");
    NEED(c->small_size >= c->round_bytes, "small_size", "a size of at least round_bytes");
    NEED(c->small_segment >= c->small_size, "small_segment", "a size of at least small_size");
    NEED(c->large_segment > c->small_size, "large_segment", "a size larger than small_size");
    NEED(c->min_large_alloc <= c->large_segment, "min_large_alloc", "a size of at most large_segment");
    NEED(c->round_large >= 1, "round_large", "a size of at least 1 B");
    NEED(c->small_split_min >= 1, "small_split_min", "a size of at least 1 B");
    NEED(c->large_split_min >= 0, "large_split_min", "a size of at least 0 B");
    /* PyTorch refuses max_split_size_mb at or below kLargeBuffer/MiB (newer versions: below). */
    NEED(c->max_split_size >= c->large_segment, "max_split_size",
         "a size of at least large_segment (PyTorch refuses smaller values)");
    NEED(c->expandable_segments == 0 || c->expandable_segments == 1, "expandable_segments", "0 or 1");
    NEED(c->expandable_page >= c->round_bytes && c->expandable_page % c->round_bytes == 0, "expandable_page",
         "a positive multiple of round_bytes");
    NEED(c->expandable_large_page >= c->round_bytes && c->expandable_large_page % c->round_bytes == 0,
         "expandable_large_page", "a positive multiple of round_bytes");
#undef NEED
    return REMAT_OK;
}

/* PyTorch's PYTORCH_CUDA_ALLOC_CONF options (c10/cuda/CUDAAllocatorConfig.cpp) that the
 * caching model does not model; a value other than the default is named in the notes. */
static const char *const torch_unmodelled[] = {
    "garbage_collection_threshold", "roundup_power2_divisions", "max_non_split_rounding_mb", "backend",
    "release_lock_on_cudamalloc", "pinned_use_cuda_host_register", "pinned_num_register_threads",
    "pinned_use_background_threads", "pinned_reserve_segment_size_mb", NULL};

static void note_add(char *notes, size_t len, const char *name) {
    if (!notes || !len) return;
    size_t u = strlen(notes);
    if (strstr(notes, name)) return;
    snprintf(notes + u, len - u, "%s%s", u ? ", " : "", name);
}

static int ieq(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
    return *a == *b;
}

/* One PYTORCH_CUDA_ALLOC_CONF item "name:value" (value may hold ':' and ',' inside []). */
static remat_status torch_item(char *name, char *value, remat_caching_config *c, char *notes, size_t notes_len,
                               remat_error *err) {
    if (!strcmp(name, "expandable_segments")) {
        if (ieq(value, "true") || !strcmp(value, "1")) c->expandable_segments = 1;
        else if (ieq(value, "false") || !strcmp(value, "0")) c->expandable_segments = 0;
        else
            return remat_error_set(err, REMAT_ERR_INPUT, "allocator config: expandable_segments: expected True or False, got '%s'",
                                   value);
        return REMAT_OK;
    }
    if (!strcmp(name, "max_split_size_mb")) {
        char *end;
        errno = 0;
        long long v = strtoll(value, &end, 10);
        if (errno || end == value || *end || v < 0 || v > INT64_MAX / MIB)
            return remat_error_set(err, REMAT_ERR_INPUT, "allocator config: max_split_size_mb: expected a count of MiB, got '%s'",
                                   value);
        c->max_split_size = (int64_t)v * MIB;
        return REMAT_OK;
    }
    for (int i = 0; torch_unmodelled[i]; i++)
        if (!strcmp(name, torch_unmodelled[i])) {
            if (!(!strcmp(name, "backend") && !strcmp(value, "native"))) note_add(notes, notes_len, name);
            return REMAT_OK;
        }
    return remat_error_set(err, REMAT_ERR_INPUT,
                           "allocator config: %s: expected a PYTORCH_CUDA_ALLOC_CONF option (expandable_segments, "
                           "max_split_size_mb, garbage_collection_threshold, roundup_power2_divisions, ...) or one of "
                           "remat's name=value settings",
                           name);
}

remat_status remat_caching_config_parse(const char *text, remat_caching_config *cfg, remat_error *err) {
    return remat_caching_config_parse_notes(text, cfg, NULL, 0, err);
}

static remat_status parse_over(const char *text, const remat_caching_config *base, remat_caching_config *cfg,
                               char *notes, size_t notes_len, remat_error *err);

remat_status remat_caching_config_parse_notes(const char *text, remat_caching_config *cfg, char *notes,
                                              size_t notes_len, remat_error *err) {
    remat_caching_config d = remat_caching_config_default();
    return parse_over(text, &d, cfg, notes, notes_len, err);
}

remat_status remat_caching_config_parse_over(const char *text, const remat_caching_config *base,
                                             remat_caching_config *cfg, remat_error *err) {
    return parse_over(text, base, cfg, NULL, 0, err);
}

static remat_status parse_over(const char *text, const remat_caching_config *base, remat_caching_config *cfg,
                               char *notes, size_t notes_len, remat_error *err) {
    remat_caching_config c = *base;
    if (notes && notes_len) notes[0] = '\0';
    if (!text) text = "";
    const char *p = text;
    char item[128];
    char seen[32][48]; /* the names given so far: each setting once */
    int n_seen = 0;
    while (*p) {
        /* items end at a ',' outside brackets (roundup_power2_divisions:[256:1,512:2]) */
        const char *comma = NULL;
        int depth = 0;
        for (const char *q = p; *q; q++) {
            if (*q == '[') depth++;
            else if (*q == ']' && depth > 0) depth--;
            else if (*q == ',' && depth == 0) {
                comma = q;
                break;
            }
        }
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        /* trim */
        const char *a = p, *b = p + len;
        while (a < b && isspace((unsigned char)*a)) a++;
        while (b > a && isspace((unsigned char)b[-1])) b--;
        p = comma ? comma + 1 : p + len;
        if (a == b) continue;
        if ((size_t)(b - a) >= sizeof item)
            return remat_error_set(err, REMAT_ERR_INPUT, "allocator config: '%.40s...': expected name=value", a);
        memcpy(item, a, (size_t)(b - a));
        item[b - a] = 0;
        char *eq = strchr(item, '=');
        char *colon = strchr(item, ':');
        { /* the name, as written before '=' or ':' */
            char *end = colon && (!eq || colon < eq) ? colon : eq;
            size_t nl = end ? (size_t)(end - item) : strlen(item);
            while (nl && isspace((unsigned char)item[nl - 1])) nl--;
            if (nl >= sizeof seen[0]) nl = sizeof seen[0] - 1;
            for (int i = 0; i < n_seen; i++)
                if (strlen(seen[i]) == nl && !strncmp(seen[i], item, nl))
                    return remat_error_set(err, REMAT_ERR_INPUT,
                                           "allocator config: %s: given more than once (expected each setting once)",
                                           seen[i]);
            if (n_seen < 32) {
                memcpy(seen[n_seen], item, nl);
                seen[n_seen++][nl] = 0;
            }
        }
        if (colon && (!eq || colon < eq)) { /* PyTorch's syntax, as PYTORCH_CUDA_ALLOC_CONF is written */
            *colon = 0;
            char *name = item, *value = colon + 1;
            size_t nl = strlen(name);
            while (nl && isspace((unsigned char)name[nl - 1])) name[--nl] = 0;
            while (isspace((unsigned char)*value)) value++;
            remat_status st = torch_item(name, value, &c, notes, notes_len, err);
            if (st != REMAT_OK) return st;
            continue;
        }
        if (!eq)
            return remat_error_set(err, REMAT_ERR_INPUT,
                                   "allocator config: '%s': expected name=value (or PyTorch's name:value)", item);
        *eq = 0;
        char *name = item, *value = eq + 1;
        size_t nl = strlen(name);
        while (nl && isspace((unsigned char)name[nl - 1])) name[--nl] = 0;
        while (isspace((unsigned char)*value)) value++;
        int f = -1;
        for (int i = 0; i < N_FIELDS; i++)
            if (strcmp(fields[i].name, name) == 0) f = i;
        if (f < 0)
            return remat_error_set(err, REMAT_ERR_INPUT,
                                   "allocator config: %s: expected one of round_bytes, small_size, small_segment, "
                                   "large_segment, min_large_alloc, round_large, small_split_min, large_split_min, "
                                   "max_split_size, expandable_segments, expandable_page, expandable_large_page",
                                   name);
        char *dst = (char *)&c + fields[f].off;
        if (fields[f].kind == F_FLAG) {
            int v;
            if (strcmp(value, "1") == 0 || ieq(value, "true")) v = 1;
            else if (strcmp(value, "0") == 0 || ieq(value, "false")) v = 0;
            else
                return remat_error_set(err, REMAT_ERR_INPUT, "allocator config: %s: expected 0, 1, true or false, got '%s'",
                                       name, value);
            memcpy(dst, &v, sizeof v);
        } else {
            int64_t v;
            if (remat_size_parse(value, &v) != 0)
                return remat_error_set(err, REMAT_ERR_INPUT, "allocator config: %s: expected %s, got '%s'", name,
                                       REMAT_SIZE_GRAMMAR, value);
            memcpy(dst, &v, sizeof v);
        }
    }
    remat_status st = check_config(&c, err);
    if (st != REMAT_OK) return st;
    *cfg = c;
    return REMAT_OK;
}

int remat_caching_config_format(const remat_caching_config *cfg, char *buf, size_t n) {
    size_t used = 0;
    int total = 0;
    for (int i = 0; i < N_FIELDS; i++) {
        const char *src = (const char *)cfg + fields[i].off;
        char tmp[96];
        int k;
        if (fields[i].kind == F_FLAG) {
            int v;
            memcpy(&v, src, sizeof v);
            k = snprintf(tmp, sizeof tmp, "%s%s=%d", i ? "," : "", fields[i].name, v);
        } else {
            int64_t v;
            memcpy(&v, src, sizeof v);
            if (v == INT64_MAX) k = snprintf(tmp, sizeof tmp, "%s%s=inf", i ? "," : "", fields[i].name);
            else k = snprintf(tmp, sizeof tmp, "%s%s=%" PRId64, i ? "," : "", fields[i].name, v);
        }
        if (n > 0 && used < n - 1) {
            size_t room = n - 1 - used;
            size_t c = (size_t)k < room ? (size_t)k : room;
            memcpy(buf + used, tmp, c);
            used += c;
        }
        total += k;
    }
    if (n > 0) buf[used] = 0;
    return total;
}
