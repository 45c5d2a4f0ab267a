/* plan_notation.c - the short plan notation: printer and parser (grammar and
 * contract in core/model/plan_notation.h). */
#include "core/model/plan_notation.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/base/types.h"
#include "core/io/file_kind.h"

typedef struct out_buf {
    char *buf;
    size_t len, used;
} out_buf;

static void put(out_buf *o, const char *fmt, const char *s, int v) {
    char tmp[160];
    int n = s ? snprintf(tmp, sizeof tmp, fmt, s) : snprintf(tmp, sizeof tmp, fmt, v);
    if (n < 0) return;
    if (o->len && o->used + 1 < o->len) {
        size_t room = o->len - 1 - o->used;
        memcpy(o->buf + o->used, tmp, (size_t)n < room ? (size_t)n : room);
    }
    o->used += (size_t)n;
}

static void entry(out_buf *o, const remat_model *m, int b, const remat_block_plan *bp) {
    put(o, "%s", m->blocks[b].name, 0);
    if (bp->compressor != REMAT_COMP_NONE) put(o, ":%s", remat_compressor_name(bp->compressor), 0);
    if (bp->k > 1) put(o, "/k%d", NULL, bp->k);
    if (bp->span > 1) put(o, "/span%d", NULL, bp->span);
    for (int i = 0; i < bp->n_splits; i++) {
        int s = bp->splits[i];
        put(o, "/split@%s", s >= 0 && s < m->n_layers ? m->layers[s].name : "?", 0);
    }
}

static void finish(out_buf *o) {
    if (!o->len) return;
    if (o->used + 1 > o->len) { /* cut short: end in "..." */
        size_t end = o->len - 1;
        for (size_t i = end >= 3 ? end - 3 : 0; i < end; i++) o->buf[i] = '.';
        o->buf[end] = '\0';
    } else {
        o->buf[o->used] = '\0';
    }
}

size_t remat_plan_notation_block(const remat_model *m, int b, const remat_block_plan *bp, char *buf, size_t len) {
    out_buf o = {buf, buf ? len : 0, 0};
    if (bp->checkpoint) entry(&o, m, b, bp);
    finish(&o);
    return o.used;
}

size_t remat_plan_notation(const remat_plan *p, const remat_model *m, char *buf, size_t len) {
    out_buf o = {buf, buf ? len : 0, 0};
    int any = 0;
    for (int b = 0; p && b < p->n_blocks && b < m->n_blocks; b++) {
        if (!p->blocks[b].checkpoint) continue;
        if (any) put(&o, "%s", ",", 0);
        entry(&o, m, b, &p->blocks[b]);
        any = 1;
    }
    if (!any) put(&o, "%s", REMAT_PLAN_NOTATION_NONE, 0);
    finish(&o);
    return o.used;
}

/* ---- parsing -------------------------------------------------------------- */

#define NOTATION_EXPECTED \
    "BLOCK[:compressor][/kN][/spanN][/split@LAYER]... entries separated by commas, or \"" REMAT_PLAN_NOTATION_NONE "\""

/* A count as written in the notation: 1 to 9 digits, no leading zero (k02 is not k2). */
static int parse_count(const char *s, size_t n, int *out) {
    if (n == 0 || n > 9 || (s[0] == '0' && n > 1)) return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

static int find_name(const remat_model *m, int layers, const char *s, size_t n) {
    int count = layers ? m->n_layers : m->n_blocks;
    for (int i = 0; i < count; i++) {
        const char *name = layers ? m->layers[i].name : m->blocks[i].name;
        if (strlen(name) == n && strncmp(name, s, n) == 0) return i;
    }
    return -1;
}

/* "<origin>: '<entry>': expected <what>", the entry cut at 120 characters and
 * anything unprintable in it shown as '?' (the message stays one printable line). */
static remat_status bad(remat_error *err, const char *origin, const char *e, size_t n, const char *what) {
    char shown[124];
    size_t k = n > 120 ? 120 : n;
    for (size_t i = 0; i < k; i++) shown[i] = (unsigned char)e[i] >= 0x20 && (unsigned char)e[i] < 0x7f ? e[i] : '?';
    shown[k] = '\0';
    return remat_error_set(err, REMAT_ERR_INPUT, "%s: '%s': expected %s", origin, shown, what);
}

/* One entry [e, e+n) into out->blocks. */
static remat_status parse_entry(const char *e, size_t n, const char *origin, const remat_model *m, int *seen,
                                remat_plan *out, remat_error *err) {
    size_t i = 0;
    while (i < n && e[i] != ':' && e[i] != '/') i++;
    int b = find_name(m, 0, e, i);
    if (b < 0) {
        char names[256];
        remat_model_block_list(m, names, sizeof names);
        char what[640];
        snprintf(what, sizeof what, "a block of model \"%s\" (%s) first, in " NOTATION_EXPECTED, m->name, names);
        return bad(err, origin, e, n, what);
    }
    if (seen[b]) return bad(err, origin, e, n, "each block once");
    seen[b] = 1;
    remat_block_plan *bp = &out->blocks[b];
    bp->checkpoint = 1;
    int have_k = 0, have_span = 0, have_comp = 0;
    if (i < n && e[i] == ':') {
        size_t j = ++i;
        while (i < n && e[i] != '/') i++;
        char name[32];
        if (i - j == 0 || i - j >= sizeof name) return bad(err, origin, e, n, "a compressor after ':' (none, bool, uint8, bit, sparse)");
        memcpy(name, e + j, i - j);
        name[i - j] = '\0';
        int c = remat_compressor_from_name(name);
        if (c < 0) return bad(err, origin, e, n, "a compressor after ':' (none, bool, uint8, bit, sparse)");
        bp->compressor = (remat_compressor)c;
        have_comp = 1;
    }
    (void)have_comp;
    while (i < n) { /* e[i] == '/' */
        size_t j = ++i;
        while (i < n && e[i] != '/') i++;
        const char *o = e + j;
        size_t on = i - j;
        int v;
        if (on > 6 && strncmp(o, "split@", 6) == 0) {
            int l = find_name(m, 1, o + 6, on - 6);
            if (l < 0) return bad(err, origin, e, n, "a layer of the model after /split@");
            if (bp->n_splits >= REMAT_MAX_SPLITS) return bad(err, origin, e, n, "at most 16 splits per block");
            for (int q = 0; q < bp->n_splits; q++)
                if (bp->splits[q] == l) return bad(err, origin, e, n, "each split layer once");
            int q = bp->n_splits++;
            while (q > 0 && bp->splits[q - 1] > l) { /* ascending, as plans require */
                bp->splits[q] = bp->splits[q - 1];
                q--;
            }
            bp->splits[q] = l;
        } else if (on > 4 && strncmp(o, "span", 4) == 0 && parse_count(o + 4, on - 4, &v) == 0 && !have_span) {
            if (v < 2) return bad(err, origin, e, n, "/spanN with N >= 2 (the blocks one unit covers; no /span: one block)");
            bp->span = v;
            have_span = 1;
        } else if (on > 1 && o[0] == 'k' && parse_count(o + 1, on - 1, &v) == 0 && !have_k) {
            if (v < 1) return bad(err, origin, e, n, "/kN with N >= 1 (time chunks)");
            bp->k = v;
            have_k = 1;
        } else {
            return bad(err, origin, e, n, "options /kN, /spanN (each once) or /split@LAYER after the block, in " NOTATION_EXPECTED);
        }
    }
    return REMAT_OK;
}

remat_status remat_plan_parse_notation(const char *text, const char *origin, const remat_model *m, remat_plan *out,
                                       remat_error *err) {
    if (!origin) origin = "--plan";
    remat_status st = remat_plan_init_empty(m, out, err);
    if (st != REMAT_OK) return st;
    if (!text) text = "";
    if (strcmp(text, REMAT_PLAN_NOTATION_NONE) != 0) {
        int *seen = remat_xcalloc((size_t)(m->n_blocks > 0 ? m->n_blocks : 1), sizeof *seen, err);
        if (!seen) st = REMAT_ERR_NOMEM;
        if (st == REMAT_OK && !text[0]) st = bad(err, origin, text, 0, NOTATION_EXPECTED);
        for (const char *p = text; st == REMAT_OK && *p;) {
            const char *comma = strchr(p, ',');
            size_t n = comma ? (size_t)(comma - p) : strlen(p);
            if (n == 0) st = bad(err, origin, text, strlen(text), "no empty entry (" NOTATION_EXPECTED ")");
            else st = parse_entry(p, n, origin, m, seen, out, err);
            p += n;
            if (*p == ',') {
                p++;
                if (!*p && st == REMAT_OK) st = bad(err, origin, text, strlen(text), "an entry after the last ','");
            }
        }
        remat_xfree(seen);
        if (st == REMAT_OK) st = remat_plan_validate(out, m, origin, err);
    }
    char *label = NULL, *json = NULL;
    if (st == REMAT_OK) {
        size_t n = remat_plan_notation(out, m, NULL, 0);
        label = remat_xmalloc(n + 1, err);
        if (!label) st = REMAT_ERR_NOMEM;
        else remat_plan_notation(out, m, label, n + 1);
    }
    if (st == REMAT_OK && !remat_plan_is_empty(out) && !(json = remat_plan_to_json(out, m, err))) st = err->status;
    if (st != REMAT_OK) {
        remat_xfree(label);
        remat_plan_free(out);
        return st;
    }
    remat_xfree(out->path);
    out->path = label;
    if (json) {
        remat_xfree(out->text);
        out->text = json;
    }
    return REMAT_OK;
}

remat_status remat_plan_load_arg(const char *arg, const remat_model *m, remat_plan *out, remat_error *err) {
    size_t n = arg ? strlen(arg) : 0;
    struct stat sb;
    int is_file = (n > 5 && strcmp(arg + n - 5, ".json") == 0) || (arg && stat(arg, &sb) == 0);
    if (is_file) {
        remat_status st = remat_plan_load(arg, m, out, err);
        remat_file_kind k = st == REMAT_ERR_INPUT ? remat_file_kind_of(arg) : REMAT_FILE_PLAN;
        if (k == REMAT_FILE_PLAN || k == REMAT_FILE_JSON || k == REMAT_FILE_OTHER || k == REMAT_FILE_UNREADABLE) return st;
        err->msg[0] = '\0';
        err->status = REMAT_OK;
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: (file): expected a plan file, got %s%s", arg,
                               remat_file_kind_words(k), k == REMAT_FILE_MODEL ? " (pass it as --model)" : "");
    }
    char origin[160];
    snprintf(origin, sizeof origin, "--plan (no such file; read as a plan in notation)");
    return remat_plan_parse_notation(arg, origin, m, out, err);
}
