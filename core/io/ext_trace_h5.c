/* ext_trace_h5.c - external allocation streams in HDF5 (ext_trace.h; schema in
 * docs/trace-schema.md, "External allocation stream, version 1").
 *
 * Columnar like remat's own traces (trace_h5.c): per device one group with one 1-D
 * dataset per field of events, segments and blocks; the frame labels as one uint8
 * dataset of NUL-terminated strings and their int64 offsets; metadata as root
 * attributes; enum names as comma-separated group attributes. A root attribute
 * content_crc32 covers every dataset in write order and then the string
 * attributes (each followed by a NUL) and the version.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/io/ext_record_h5.h"
#include "core/io/ext_trace.h"
#include "core/io/h5_util.h"

typedef struct field {
    const char *name;
    remat_h5_type type;
    size_t off;
    const char *units;
} field;

#define F(s, n, t, u) {#n, t, offsetof(s, n), u}
static const field event_fields[] = {
    F(remat_ext_event, action, REMAT_H5_U8, NULL),     F(remat_ext_event, addr, REMAT_H5_I64, NULL),
    F(remat_ext_event, size, REMAT_H5_I64, "B"),       F(remat_ext_event, stream, REMAT_H5_I64, NULL),
    F(remat_ext_event, time_us, REMAT_H5_I64, "us"),   F(remat_ext_event, device_free, REMAT_H5_I64, "B"),
    F(remat_ext_event, label, REMAT_H5_I32, NULL),
};
static const field segment_fields[] = {
    F(remat_ext_segment, address, REMAT_H5_I64, NULL),  F(remat_ext_segment, total_size, REMAT_H5_I64, "B"),
    F(remat_ext_segment, stream, REMAT_H5_I64, NULL),   F(remat_ext_segment, pool, REMAT_H5_U8, NULL),
    F(remat_ext_segment, expandable, REMAT_H5_U8, NULL), F(remat_ext_segment, first_block, REMAT_H5_I64, NULL),
    F(remat_ext_segment, n_blocks, REMAT_H5_I64, NULL),
};
static const field block_fields[] = {
    F(remat_ext_block, address, REMAT_H5_I64, NULL),  F(remat_ext_block, size, REMAT_H5_I64, "B"),
    F(remat_ext_block, requested_size, REMAT_H5_I64, "B"), F(remat_ext_block, state, REMAT_H5_U8, NULL),
    F(remat_ext_block, label, REMAT_H5_I32, NULL),
};
#undef F
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef struct table {
    const char *name;
    const field *fields;
    int n_fields;
    size_t stride;
} table;
static const table tables[3] = {
    {"events", event_fields, COUNT(event_fields), sizeof(remat_ext_event)},
    {"segments", segment_fields, COUNT(segment_fields), sizeof(remat_ext_segment)},
    {"blocks", block_fields, COUNT(block_fields), sizeof(remat_ext_block)},
};

static void gather(const void *rec, size_t stride, const field *f, int64_t n, void *buf) {
    remat_h5_gather_column(rec, stride, f->off, remat_h5_type_size(f->type), n, buf);
}

static void scatter(void *rec, size_t stride, const field *f, int64_t n, const void *buf) {
    remat_h5_scatter_column(rec, stride, f->off, remat_h5_type_size(f->type), n, buf);
}

static const char *pool_name(int i) { return i == 0 ? "small" : i == 1 ? "large" : "unknown"; }

static void *dev_records(const remat_ext_device *d, int ti, int64_t *n) {
    if (ti == 0) return *n = d->n_events, (void *)d->events;
    if (ti == 1) return *n = d->n_segments, (void *)d->segments;
    return *n = d->n_blocks, (void *)d->blocks;
}

static uint32_t crc_meta(uint32_t crc, const char *const *s, int n, int64_t version, int64_t n_devices,
                         int64_t recorded) {
    for (int i = 0; i < n; i++) crc = remat_crc32(crc, s[i], strlen(s[i]) + 1);
    int64_t v[3] = {version, n_devices, recorded};
    return remat_crc32(crc, v, sizeof v);
}

#define N_STR_ATTRS 6
static const char *str_attr_names[N_STR_ATTRS] = {"source", "source_file", "allocator_settings", "allocator_config",
                                                 "notes", "format"};

remat_status remat_ext_trace_write_h5(const remat_ext_trace *t, const char *path, remat_error *err) {
    remat_afile af;
    hid_t f = H5I_INVALID_HID;
    remat_status st = remat_h5_begin(path, &f, &af, err);
    if (st != REMAT_OK) return st;
    uint32_t crc = 0;
    char names[512];
    /* labels */
    int64_t nb = t->label_bytes, nl = t->n_labels;
    st = remat_h5_write(f, path, "/labels/text", REMAT_H5_U8, 1, &nb, t->label_text, err);
    if (st == REMAT_OK) st = remat_h5_write(f, path, "/labels/offset", REMAT_H5_I64, 1, &nl, t->label_off, err);
    if (nb) crc = remat_crc32(crc, t->label_text, (size_t)nb);
    if (nl) crc = remat_crc32(crc, t->label_off, (size_t)nl * sizeof(int64_t));
    /* devices */
    int64_t maxn = 0;
    for (int32_t di = 0; di < t->n_devices; di++)
        for (int ti = 0; ti < 3; ti++) {
            int64_t n;
            dev_records(&t->devices[di], ti, &n);
            if (n > maxn) maxn = n;
        }
    void *buf = NULL;
    if (st == REMAT_OK && maxn > 0 && !(buf = remat_xmalloc((size_t)maxn * 8, err))) st = REMAT_ERR_NOMEM;
    for (int32_t di = 0; di < t->n_devices && st == REMAT_OK; di++) {
        const remat_ext_device *d = &t->devices[di];
        for (int ti = 0; ti < 3 && st == REMAT_OK; ti++) {
            const table *tb = &tables[ti];
            int64_t n;
            const void *rec = dev_records(d, ti, &n);
            for (int fi = 0; fi < tb->n_fields && st == REMAT_OK; fi++) {
                const field *fd = &tb->fields[fi];
                char dp[128];
                snprintf(dp, sizeof dp, "/devices/%d/%s/%s", (int)di, tb->name, fd->name);
                if (n > 0) gather(rec, tb->stride, fd, n, buf);
                st = remat_h5_write(f, path, dp, fd->type, 1, &n, buf, err);
                if (st == REMAT_OK && fd->units) st = remat_h5_attr_write_str(f, path, dp, "units", fd->units, err);
                if (n > 0) crc = remat_crc32(crc, buf, (size_t)n * remat_h5_type_size(fd->type));
            }
        }
        char gp[64];
        snprintf(gp, sizeof gp, "/devices/%d", (int)di);
        if (st == REMAT_OK) st = remat_h5_attr_write_i64(f, path, gp, "device", d->device, err);
        crc = remat_crc32(crc, &d->device, sizeof d->device);
        snprintf(gp, sizeof gp, "/devices/%d/events", (int)di);
        remat_h5_join_names(names, sizeof names, REMAT_EXT_ACTION_COUNT, remat_ext_action_name);
        if (st == REMAT_OK) st = remat_h5_attr_write_str(f, path, gp, "action_names", names, err);
        snprintf(gp, sizeof gp, "/devices/%d/blocks", (int)di);
        remat_h5_join_names(names, sizeof names, REMAT_EXT_BLOCK_STATE_COUNT, remat_ext_block_state_name);
        if (st == REMAT_OK) st = remat_h5_attr_write_str(f, path, gp, "state_names", names, err);
        snprintf(gp, sizeof gp, "/devices/%d/segments", (int)di);
        remat_h5_join_names(names, sizeof names, 3, pool_name);
        if (st == REMAT_OK) st = remat_h5_attr_write_str(f, path, gp, "pool_names", names, err);
    }
    remat_xfree(buf);
    const char *sv[N_STR_ATTRS] = {t->source, t->source_file, t->allocator_settings, t->allocator_config, t->notes,
                                   REMAT_EXT_FORMAT};
    for (int i = 0; i < N_STR_ATTRS && st == REMAT_OK; i++)
        st = remat_h5_attr_write_str(f, path, "/", str_attr_names[i], sv[i], err);
    if (st == REMAT_OK) st = remat_h5_attr_write_i64(f, path, "/", "external_schema_version", REMAT_EXT_SCHEMA_VERSION, err);
    if (st == REMAT_OK) st = remat_h5_attr_write_i64(f, path, "/", "n_devices", t->n_devices, err);
    if (st == REMAT_OK) st = remat_h5_attr_write_i64(f, path, "/", "settings_recorded", t->settings_recorded ? 1 : 0, err);
    crc = crc_meta(crc, sv, N_STR_ATTRS, REMAT_EXT_SCHEMA_VERSION, t->n_devices, t->settings_recorded ? 1 : 0);
    if (st == REMAT_OK) st = remat_h5_attr_write_i64(f, path, "/", "content_crc32", (int64_t)crc, err);
    if (st != REMAT_OK) {
        remat_h5_abort(f, &af);
        return st;
    }
    return remat_h5_commit(f, &af, err);
}

/* ---- reading ------------------------------------------------------------------- */

#define BAD(...) remat_error_set(err, REMAT_ERR_INPUT, __VA_ARGS__)

int remat_ext_trace_is_ext_h5(const char *path) {
    /* Only a regular file is probed: opening a pipe (process substitution) here would
     * consume what the real reader needs. An imported stream given through a pipe is
     * named as such by remat_trace_read_h5. */
    struct stat sb;
    if (!path || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return 0;
    hid_t f;
    remat_error e = {REMAT_OK, {0}};
    if (remat_h5_open(path, &f, &e) != REMAT_OK) return 0;
    int yes = 0;
    char *fmt = NULL;
    if (remat_h5_attr_exists(f, "/", "format") && remat_h5_attr_read_str(f, path, "/", "format", &fmt, &e) == REMAT_OK)
        yes = strcmp(fmt, REMAT_EXT_FORMAT) == 0;
    remat_xfree(fmt);
    remat_h5_close(f);
    return yes;
}

static remat_status read_str_into(hid_t f, const char *path, const char *name, char *dst, size_t cap, remat_error *err) {
    char *s = NULL;
    remat_status st = remat_h5_attr_read_str(f, path, "/", name, &s, err);
    if (st == REMAT_OK && strlen(s) >= cap)
        st = BAD("%s: %s: expected at most %zu characters", path, name, cap - 1);
    if (st == REMAT_OK) snprintf(dst, cap, "%s", s);
    remat_xfree(s);
    return st;
}

static remat_status read_device(hid_t f, const char *path, int32_t di, remat_ext_device *d, uint32_t *crc,
                                remat_error *err) {
    for (int ti = 0; ti < 3; ti++) {
        const table *tb = &tables[ti];
        int64_t n = -1;
        void *rec = NULL;
        for (int fi = 0; fi < tb->n_fields; fi++) {
            const field *fd = &tb->fields[fi];
            char dp[128];
            snprintf(dp, sizeof dp, "/devices/%d/%s/%s", (int)di, tb->name, fd->name);
            int64_t dims[1] = {0};
            void *col = NULL;
            remat_status st = remat_h5_read(f, path, dp, fd->type, 1, dims, &col, err);
            if (st != REMAT_OK) {
                remat_xfree(rec);
                return st;
            }
            if (n < 0) {
                n = dims[0];
                if (n > 0 && !(rec = remat_xcalloc((size_t)n, tb->stride, err))) {
                    remat_xfree(col);
                    return REMAT_ERR_NOMEM;
                }
            } else if (dims[0] != n) {
                remat_xfree(col);
                remat_xfree(rec);
                return BAD("%s: %s: %lld rows, expected %lld like the other datasets of /devices/%d/%s", path, dp,
                           (long long)dims[0], (long long)n, (int)di, tb->name);
            }
            if (n > 0) {
                scatter(rec, tb->stride, fd, n, col);
                *crc = remat_crc32(*crc, col, (size_t)n * remat_h5_type_size(fd->type));
            }
            remat_xfree(col);
        }
        if (ti == 0) d->events = rec, d->n_events = d->cap_events = n;
        if (ti == 1) d->segments = rec, d->n_segments = d->cap_segments = n;
        if (ti == 2) d->blocks = rec, d->n_blocks = d->cap_blocks = n;
    }
    char gp[64];
    snprintf(gp, sizeof gp, "/devices/%d", (int)di);
    int64_t dev = 0;
    remat_status st = remat_h5_attr_read_i64(f, path, gp, "device", &dev, err);
    if (st != REMAT_OK) return st;
    if (dev < 0 || dev > INT32_MAX) return BAD("%s: %s: device: expected 0..%d", path, gp, INT32_MAX);
    d->device = (int32_t)dev;
    *crc = remat_crc32(*crc, &d->device, sizeof d->device);
    return REMAT_OK;
}

static remat_status check_device(const char *path, const remat_ext_trace *t, int32_t di, remat_error *err) {
    const remat_ext_device *d = &t->devices[di];
    for (int64_t i = 0; i < d->n_events; i++) {
        const remat_ext_event *e = &d->events[i];
        if (e->action >= REMAT_EXT_ACTION_COUNT)
            return BAD("%s: /devices/%d/events/action: event %lld has action %d, expected 0..%d", path, (int)di,
                       (long long)i, e->action, REMAT_EXT_ACTION_COUNT - 1);
        if (e->label < -1 || e->label >= t->n_labels)
            return BAD("%s: /devices/%d/events/label: event %lld names label %d, expected -1..%d", path, (int)di,
                       (long long)i, e->label, t->n_labels - 1);
        if (e->size < 0)
            return BAD("%s: /devices/%d/events/size: event %lld has %lld bytes, expected >= 0", path, (int)di,
                       (long long)i, (long long)e->size);
    }
    int64_t next_block = 0;
    for (int64_t s = 0; s < d->n_segments; s++) {
        const remat_ext_segment *g = &d->segments[s];
        if (g->pool > REMAT_EXT_POOL_UNKNOWN || g->expandable > 1)
            return BAD("%s: /devices/%d/segments: segment %lld has pool %d / expandable %d, expected 0..2 / 0..1", path,
                       (int)di, (long long)s, g->pool, g->expandable);
        if (g->total_size < 0 || g->address < 0 || g->total_size > INT64_MAX - g->address)
            return BAD("%s: /devices/%d/segments/total_size: segment %lld spans a negative or overflowing range", path,
                       (int)di, (long long)s);
        if (g->first_block != next_block || g->n_blocks < 0 || g->n_blocks > d->n_blocks - g->first_block)
            return BAD("%s: /devices/%d/segments/first_block: segment %lld holds blocks %lld..+%lld, expected to "
                       "start at %lld within %lld blocks",
                       path, (int)di, (long long)s, (long long)g->first_block, (long long)g->n_blocks,
                       (long long)next_block, (long long)d->n_blocks);
        next_block += g->n_blocks;
        int64_t at = g->address;
        for (int64_t b = g->first_block; b < g->first_block + g->n_blocks; b++) {
            const remat_ext_block *k = &d->blocks[b];
            if (k->state >= REMAT_EXT_BLOCK_STATE_COUNT || k->label < -1 || k->label >= t->n_labels)
                return BAD("%s: /devices/%d/blocks: block %lld has state %d, label %d (expected 0..%d, -1..%d)", path,
                           (int)di, (long long)b, k->state, k->label, REMAT_EXT_BLOCK_STATE_COUNT - 1,
                           t->n_labels - 1);
            if (k->address < at || k->size < 0 || k->size > g->address + g->total_size - k->address)
                return BAD("%s: /devices/%d/blocks/address: block %lld lies outside its segment %lld or overlaps the "
                           "block before it",
                           path, (int)di, (long long)b, (long long)s);
            at = k->address + k->size;
        }
    }
    if (next_block != d->n_blocks)
        return BAD("%s: /devices/%d/blocks: %lld blocks, but the segments hold %lld", path, (int)di,
                   (long long)d->n_blocks, (long long)next_block);
    char where[300];
    snprintf(where, sizeof where, "%s: /devices/%d", path, (int)di);
    return remat_ext_check_sizes(d, where, err);
}

static remat_status read_open(hid_t f, const char *path, remat_ext_trace *out, remat_error *err);

remat_status remat_ext_trace_read_h5(const char *path, remat_ext_trace *out, remat_error *err) {
    remat_ext_trace_init(out);
    hid_t f;
    remat_status st = remat_h5_open(path, &f, err);
    return st == REMAT_OK ? read_open(f, path, out, err) : st;
}

remat_status remat_ext_trace_read_h5_image(const void *data, size_t n, const char *origin, remat_ext_trace *out,
                                           remat_error *err) {
    remat_ext_trace_init(out);
    hid_t f;
    remat_status st = remat_h5_open_image(data, n, origin, &f, err);
    return st == REMAT_OK ? read_open(f, origin, out, err) : st;
}

/* Reads the open file f (closed on return). */
static remat_status read_open(hid_t f, const char *path, remat_ext_trace *out, remat_error *err) {
    remat_status st = REMAT_OK;
    remat_ext_trace t;
    remat_ext_trace_init(&t);
    uint32_t crc = 0;
    int64_t version = 0, n_dev = 0, recorded = 0;
    char fmt[64] = "";
    if (!remat_h5_attr_exists(f, "/", "format"))
        st = BAD("%s: format: missing root attribute (not an external allocation stream; `remat import-torch` writes them)",
                 path);
    else
        st = read_str_into(f, path, "format", fmt, sizeof fmt, err);
    if (st == REMAT_OK && strcmp(fmt, REMAT_EXT_FORMAT) != 0)
        st = BAD("%s: format: expected '%s', found '%s'", path, REMAT_EXT_FORMAT, fmt);
    if (st == REMAT_OK) st = remat_h5_attr_read_i64(f, path, "/", "external_schema_version", &version, err);
    if (st == REMAT_OK && (version < 1 || version > REMAT_EXT_SCHEMA_VERSION))
        st = BAD("%s: external_schema_version: file is version %lld, this remat reads 1..%d", path, (long long)version,
                 REMAT_EXT_SCHEMA_VERSION);
    /* labels */
    void *text = NULL, *offs = NULL;
    int64_t nb = 0, nl = 0;
    if (st == REMAT_OK) st = remat_h5_read(f, path, "/labels/text", REMAT_H5_U8, 1, &nb, &text, err);
    if (st == REMAT_OK) st = remat_h5_read(f, path, "/labels/offset", REMAT_H5_I64, 1, &nl, &offs, err);
    if (st == REMAT_OK && nl > INT32_MAX) st = BAD("%s: /labels/offset: expected at most %d labels", path, INT32_MAX);
    if (st == REMAT_OK && nl > 0 && (nb == 0 || ((char *)text)[nb - 1] != 0))
        st = BAD("%s: /labels/text: expected NUL-terminated strings", path);
    for (int64_t i = 0; i < nl && st == REMAT_OK; i++) {
        int64_t o = ((int64_t *)offs)[i];
        if (o < 0 || o >= nb || (i > 0 && o <= ((int64_t *)offs)[i - 1]))
            st = BAD("%s: /labels/offset: label %lld starts at %lld, expected ascending offsets in 0..%lld", path,
                     (long long)i, (long long)o, (long long)(nb - 1));
    }
    if (st == REMAT_OK) {
        if (nb) crc = remat_crc32(crc, text, (size_t)nb);
        if (nl) crc = remat_crc32(crc, offs, (size_t)nl * sizeof(int64_t));
        t.label_text = text;
        t.label_bytes = t.cap_label_bytes = nb;
        t.label_off = offs;
        t.n_labels = t.cap_labels = (int32_t)nl;
        text = offs = NULL;
    }
    remat_xfree(text);
    remat_xfree(offs);
    if (st == REMAT_OK) st = remat_h5_attr_read_i64(f, path, "/", "n_devices", &n_dev, err);
    if (st == REMAT_OK && (n_dev < 0 || n_dev > 4096)) st = BAD("%s: n_devices: expected 0..4096", path);
    if (st == REMAT_OK) st = remat_ext_trace_set_devices(&t, (int32_t)n_dev, err);
    for (int32_t di = 0; di < t.n_devices && st == REMAT_OK; di++) st = read_device(f, path, di, &t.devices[di], &crc, err);
    for (int32_t di = 0; di < t.n_devices && st == REMAT_OK; di++) st = check_device(path, &t, di, err);
    /* version 2: a recorded PyTorch step (ext_record.h), its datasets after the devices' in the checksum */
    if (st == REMAT_OK && version >= 2 && remat_h5_exists(f, "/record"))
        st = remat_ext_record_read_h5(f, path, &t, &t.record, &crc, err);
    if (st == REMAT_OK) st = remat_h5_attr_read_i64(f, path, "/", "settings_recorded", &recorded, err);
    if (st == REMAT_OK && recorded != 0 && recorded != 1) st = BAD("%s: settings_recorded: expected 0 or 1", path);
    char *dsts[N_STR_ATTRS] = {t.source, t.source_file, t.allocator_settings, t.allocator_config, t.notes, fmt};
    size_t caps[N_STR_ATTRS] = {sizeof t.source, sizeof t.source_file, sizeof t.allocator_settings,
                                sizeof t.allocator_config, sizeof t.notes, sizeof fmt};
    for (int i = 0; i < N_STR_ATTRS - 1 && st == REMAT_OK; i++)
        st = read_str_into(f, path, str_attr_names[i], dsts[i], caps[i], err);
    if (st == REMAT_OK && remat_h5_attr_exists(f, "/", "content_crc32")) {
        int64_t want = 0;
        st = remat_h5_attr_read_i64(f, path, "/", "content_crc32", &want, err);
        const char *sv[N_STR_ATTRS] = {t.source, t.source_file, t.allocator_settings, t.allocator_config, t.notes, fmt};
        crc = crc_meta(crc, sv, N_STR_ATTRS, version, n_dev, recorded);
        if (st == REMAT_OK && (int64_t)crc != want)
            st = BAD("%s: content_crc32: the content does not match its checksum (corrupted file)", path);
    }
    remat_h5_close(f);
    if (st != REMAT_OK) {
        remat_ext_trace_free(&t);
        return st;
    }
    t.schema_version = (int32_t)version;
    t.settings_recorded = (int32_t)recorded;
    *out = t;
    return REMAT_OK;
}
