/* ext_trace.c - external allocation streams in memory (ext_trace.h). */
#include "core/io/ext_trace.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *action_names[REMAT_EXT_ACTION_COUNT] = {
    "alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
    "segment_map", "segment_unmap", "snapshot", "oom", "annotate",
};

const char *remat_ext_action_name(int a) { return a >= 0 && a < REMAT_EXT_ACTION_COUNT ? action_names[a] : NULL; }

int remat_ext_action_parse(const char *s, size_t len) {
    for (int a = 0; a < REMAT_EXT_ACTION_COUNT; a++)
        if (strlen(action_names[a]) == len && memcmp(action_names[a], s, len) == 0) return a;
    return -1;
}

const char *remat_ext_block_state_name(int s) {
    static const char *names[REMAT_EXT_BLOCK_STATE_COUNT] = {"active_allocated", "active_pending_free", "inactive"};
    return s >= 0 && s < REMAT_EXT_BLOCK_STATE_COUNT ? names[s] : NULL;
}

void remat_ext_trace_init(remat_ext_trace *t) {
    memset(t, 0, sizeof *t);
    t->schema_version = REMAT_EXT_SCHEMA_VERSION;
}

void remat_ext_trace_free(remat_ext_trace *t) {
    for (int32_t i = 0; i < t->n_devices; i++) {
        remat_xfree(t->devices[i].events);
        remat_xfree(t->devices[i].segments);
        remat_xfree(t->devices[i].blocks);
    }
    remat_xfree(t->devices);
    remat_xfree(t->label_text);
    remat_xfree(t->label_off);
    remat_ext_trace_init(t);
}

remat_status remat_ext_trace_set_devices(remat_ext_trace *t, int32_t n, remat_error *err) {
    if (n <= t->n_devices) return REMAT_OK;
    remat_ext_device *d = remat_xrealloc(t->devices, (size_t)n * sizeof *d, err);
    if (!d) return REMAT_ERR_NOMEM;
    memset(d + t->n_devices, 0, (size_t)(n - t->n_devices) * sizeof *d);
    for (int32_t i = t->n_devices; i < n; i++) d[i].device = i;
    t->devices = d;
    t->n_devices = n;
    return REMAT_OK;
}

/* Grows an array of elem-byte records to hold one more. */
static int grow(void **arr, int64_t *cap, int64_t n, size_t elem, remat_error *err) {
    if (n < *cap) return 1;
    int64_t c = *cap ? *cap * 2 : 256;
    void *p = remat_xrealloc(*arr, (size_t)c * elem, err);
    if (!p) return 0;
    *arr = p;
    *cap = c;
    return 1;
}

int64_t remat_ext_add_event(remat_ext_device *d, const remat_ext_event *e, remat_error *err) {
    if (!grow((void **)&d->events, &d->cap_events, d->n_events, sizeof *e, err)) return -1;
    d->events[d->n_events] = *e;
    return d->n_events++;
}

int64_t remat_ext_add_segment(remat_ext_device *d, const remat_ext_segment *s, remat_error *err) {
    if (!grow((void **)&d->segments, &d->cap_segments, d->n_segments, sizeof *s, err)) return -1;
    d->segments[d->n_segments] = *s;
    return d->n_segments++;
}

int64_t remat_ext_add_block(remat_ext_device *d, const remat_ext_block *b, remat_error *err) {
    if (!grow((void **)&d->blocks, &d->cap_blocks, d->n_blocks, sizeof *b, err)) return -1;
    d->blocks[d->n_blocks] = *b;
    return d->n_blocks++;
}

int32_t remat_ext_add_label(remat_ext_trace *t, const char *s, size_t len, remat_error *err) {
    if (t->n_labels == INT32_MAX) {
        remat_error_set(err, REMAT_ERR_NOMEM, "external trace: more than 2^31 labels");
        return -1;
    }
    while (t->label_bytes + (int64_t)len + 1 > t->cap_label_bytes) {
        int64_t c = t->cap_label_bytes ? t->cap_label_bytes * 2 : 4096;
        char *p = remat_xrealloc(t->label_text, (size_t)c, err);
        if (!p) return -1;
        t->label_text = p;
        t->cap_label_bytes = c;
    }
    int64_t cap = t->cap_labels;
    if (!grow((void **)&t->label_off, &cap, t->n_labels, sizeof(int64_t), err)) return -1;
    t->cap_labels = (int32_t)(cap > INT32_MAX ? INT32_MAX : cap);
    char *dst = t->label_text + t->label_bytes;
    for (size_t i = 0; i < len; i++) dst[i] = s[i] ? s[i] : '?';
    dst[len] = 0;
    t->label_off[t->n_labels] = t->label_bytes;
    t->label_bytes += (int64_t)len + 1;
    return t->n_labels++;
}

const char *remat_ext_label(const remat_ext_trace *t, int32_t i) {
    if (i < 0 || i >= t->n_labels) return "";
    return t->label_text + t->label_off[i];
}

void remat_ext_note(remat_ext_trace *t, const char *fmt, ...) {
    size_t used = strlen(t->notes), room = sizeof t->notes - used;
    if (room < 8) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (strlen(line) + 2 > room - 4) {
        if (!strstr(t->notes, "...\n")) snprintf(t->notes + used, room, "...\n");
        return;
    }
    snprintf(t->notes + used, room, "%s\n", line);
}
