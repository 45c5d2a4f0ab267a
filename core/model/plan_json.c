/* plan_json.c - reads, validates and writes checkpoint plans (contract in
 * core/model/plan.h, format in docs/model-and-plan-files.md).
 *
 * The rules every plan obeys, whether it comes from a file or from the search:
 * - a block that is not checkpointed has compressor "none", k = 1 and no splits;
 * - k >= 1 divides T; k = 1 on a block with batch norm (its statistics are
 *   reduced over all T*N rows at once);
 * - splits name layers of the block other than its first, each once, and never
 *   cut a branch: the segment after a cut reads only its own layers and its input
 *   (a split inside a SEW block would cut the add from the block input);
 * - span s > 1 (this block and the next s-1 as one checkpointed unit): needs
 *   checkpoint, stays inside the model, and the covered blocks are stored in the
 *   plan (a file must not name them); k > 1 needs no batch norm in any covered block;
 * - the compressor must represent every segment input (the block input, and the
 *   output of the layer before each split): bit/bool/sparse need BINARY values,
 *   uint8 needs BINARY or INTEGER, sparse also needs fewer than 2^32 elements
 *   (its positions are uint32).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io/json_util.h"
#include "core/io/json_write.h"
#include "core/model/layers.h"
#include "core/model/plan.h"

static const char *value_class_words(remat_value_class v) {
    switch (v) {
    case REMAT_VALUES_BINARY: return "spikes (0 or 1)";
    case REMAT_VALUES_INTEGER: return "integer values (sums of spikes or event counts, at most 255)";
    default: return "real values";
    }
}

static const char *layer_name_or_index(const remat_model *m, int idx, char *buf, size_t len) {
    if (idx >= 0 && idx < m->n_layers) snprintf(buf, len, "\"%s\"", m->layers[idx].name);
    else snprintf(buf, len, "layer index %d", idx);
    return buf;
}

/* The fields every block plan has: span, k, the compressor's code, the number of splits;
 * a block that is not checkpointed has the defaults. */
static remat_status check_fields(const json_ctx *c, const remat_model *m, int b, const remat_block_plan *bp,
                                 const char *prefix) {
    const remat_block *blk = &m->blocks[b];
    char field[160];
    int span = bp->span > 1 ? bp->span : 1;
    if (bp->span < 0 || (span > 1 && b + span > m->n_blocks))
        return remat_json_fail(c, remat_json_path(field, sizeof field, prefix, "span"),
                               "expected 1 .. %d (blocks from \"%s\" to the last), got %d", m->n_blocks - b, blk->name,
                               bp->span);
    if (span > 1 && !bp->checkpoint)
        return remat_json_fail(
            c, remat_json_path(field, sizeof field, prefix, "span"),
            "expected 1 on block \"%s\", which is not checkpointed (set \"checkpoint\": true), got %d", blk->name,
            bp->span);
    if (bp->k < 1)
        return remat_json_fail(c, remat_json_path(field, sizeof field, prefix, "k"), "expected an integer >= 1, got %d",
                               bp->k);
    if ((int)bp->compressor < 0 || bp->compressor >= REMAT_COMP_COUNT)
        return remat_json_fail(c, remat_json_path(field, sizeof field, prefix, "compressor"),
                               "expected one of none, bool, uint8, bit, sparse, got code %d", (int)bp->compressor);
    if (bp->n_splits < 0 || bp->n_splits > REMAT_MAX_SPLITS)
        return remat_json_fail(c, remat_json_path(field, sizeof field, prefix, "splits"),
                               "expected at most %d splits, got %d", REMAT_MAX_SPLITS, bp->n_splits);
    if (bp->checkpoint) return REMAT_OK;
    if (bp->compressor != REMAT_COMP_NONE)
        return remat_json_fail(c, remat_json_path(field, sizeof field, prefix, "compressor"),
                               "expected \"none\" on block \"%s\", which is not checkpointed (set \"checkpoint\": "
                               "true), got \"%s\"",
                               blk->name, remat_compressor_name(bp->compressor));
    if (bp->k != 1)
        return remat_json_fail(c, remat_json_path(field, sizeof field, prefix, "k"),
                               "expected 1 on block \"%s\", which is not checkpointed (set \"checkpoint\": true), "
                               "got %d",
                               blk->name, bp->k);
    if (bp->n_splits)
        return remat_json_fail(c, remat_json_path(field, sizeof field, prefix, "splits"),
                               "expected no splits on block \"%s\", which is not checkpointed (set \"checkpoint\": "
                               "true)",
                               blk->name);
    return REMAT_OK;
}

/* The splits of a checkpointed unit (layers first..end-1 of blocks b..b+span-1): inside
 * it after its first layer, each once, in order when require_sorted, and none cutting a
 * branch (each segment reads only its own layers and its input). */
static remat_status check_splits(const json_ctx *c, const remat_model *m, int b, const remat_block_plan *bp,
                                 const char *prefix, int require_sorted, int first, int end) {
    const remat_block *blk = &m->blocks[b];
    int span = bp->span > 1 ? bp->span : 1;
    char buf[96];
    for (int j = 0; j < bp->n_splits; j++) {
        int s = bp->splits[j];
        char sf[192];
        snprintf(sf, sizeof sf, "%s.splits[%d]", prefix, j);
        if (s <= first || s >= end)
            return remat_json_fail(c, sf, "expected a layer of block \"%s\"%s after its first layer \"%s\", got %s",
                                   blk->name, span > 1 ? " or its span" : "", m->layers[first].name,
                                   layer_name_or_index(m, s, buf, sizeof buf));
        for (int q = 0; q < j; q++)
            if (bp->splits[q] == s)
                return remat_json_fail(c, sf, "expected each split once, got %s again (also splits[%d])",
                                       layer_name_or_index(m, s, buf, sizeof buf), q);
        if (require_sorted && j > 0 && bp->splits[j - 1] > s)
            return remat_json_fail(c, sf, "expected splits in layer order, got %s after %s",
                                   layer_name_or_index(m, s, buf, sizeof buf), m->layers[bp->splits[j - 1]].name);
    }
    for (int j = 0; j < bp->n_splits; j++) {
        int a = bp->splits[j], reader, source;
        if (remat_segment_reads_outside(m, a, end, &reader, &source)) {
            char sf[192];
            snprintf(sf, sizeof sf, "%s.splits[%d]", prefix, j);
            return remat_json_fail(c, sf,
                                   "expected no split at \"%s\" in block \"%s\": it would cut \"%s\" (%s) from \"%s\", "
                                   "which it reads (a segment reads only its own layers and its input)",
                                   m->layers[a].name, blk->name, m->layers[reader].name,
                                   remat_layer_type_name(m->layers[reader].type),
                                   source == REMAT_SRC_INPUT ? "input" : m->layers[source].name);
        }
    }
    return REMAT_OK;
}

/* Every segment input must be representable by the compressor. */
static remat_status check_segment_inputs(const json_ctx *c, const remat_model *m, int b, const remat_block_plan *bp,
                                         const char *prefix) {
    const remat_block *blk = &m->blocks[b];
    char field[160];
    for (int j = -1; j < bp->n_splits; j++) {
        int sfirst = j < 0 ? blk->first_layer : bp->splits[j];
        remat_value_class v = j < 0 ? blk->in_values : m->layers[sfirst - 1].out_values;
        const char *seg = m->layers[sfirst].name;
        remat_json_path(field, sizeof field, prefix, "compressor");
        remat_compressor comp = bp->compressor;
        if ((comp == REMAT_COMP_BIT || comp == REMAT_COMP_BOOL || comp == REMAT_COMP_SPARSE) &&
            v != REMAT_VALUES_BINARY)
            return remat_json_fail(c, field,
                                   "expected %s: the input of the segment starting at \"%s\" holds %s, \"%s\" stores "
                                   "spikes only",
                                   v == REMAT_VALUES_INTEGER ? "\"none\" or \"uint8\"" : "\"none\"", seg,
                                   value_class_words(v), remat_compressor_name(comp));
        if (comp == REMAT_COMP_UINT8 && v == REMAT_VALUES_REAL)
            return remat_json_fail(c, field,
                                   "expected \"none\": the input of the segment starting at \"%s\" holds real values, "
                                   "\"uint8\" stores small integers only",
                                   seg);
        if (comp == REMAT_COMP_SPARSE) {
            int64_t elems = m->T * m->N * m->layers[sfirst].in_features;
            if (elems > (int64_t)UINT32_MAX)
                return remat_json_fail(
                    c, field,
                    "expected at most 2^32 - 1 elements for \"sparse\" (uint32 positions), the input "
                    "of \"%s\" has %lld",
                    seg, (long long)elems);
        }
    }
    return REMAT_OK;
}

/* The rules of the file comment for block b of m. prefix names the entry in
 * messages ("blocks[2]"). require_sorted: splits must be ascending (in-memory plans). */
static remat_status check_block_plan(const json_ctx *c, const remat_model *m, int b, const remat_block_plan *bp,
                                     const char *prefix, int require_sorted) {
    remat_status st = check_fields(c, m, b, bp, prefix);
    if (st != REMAT_OK || !bp->checkpoint) return st;
    const remat_block *blk = &m->blocks[b];
    char field[160];
    int span = bp->span > 1 ? bp->span : 1;
    /* The unit: layers of blocks b .. b+span-1. */
    int first = blk->first_layer, end = m->blocks[b + span - 1].first_layer + m->blocks[b + span - 1].n_layers;
    int has_bn = 0;
    for (int q = b; q < b + span; q++) has_bn |= m->blocks[q].has_batchnorm;
    if (bp->k > m->T || m->T % bp->k != 0)
        return remat_json_fail(c, remat_json_path(field, sizeof field, prefix, "k"),
                               "expected a divisor of T = %lld, got %d", (long long)m->T, bp->k);
    if (bp->k > 1 && has_bn)
        return remat_json_fail(c, remat_json_path(field, sizeof field, prefix, "k"),
                               "expected 1 because block \"%s\"%s has batch norm (time chunks would change batch-norm "
                               "statistics), got %d",
                               blk->name, span > 1 ? " or a block of its span" : "", bp->k);
    if ((st = check_splits(c, m, b, bp, prefix, require_sorted, first, end)) != REMAT_OK) return st;
    return check_segment_inputs(c, m, b, bp, prefix);
}

int remat_block_plan_equal(const remat_block_plan *a, const remat_block_plan *b) {
    if (a->checkpoint != b->checkpoint || a->compressor != b->compressor || a->k != b->k || a->n_splits != b->n_splits ||
        (a->span > 1 ? a->span : 1) != (b->span > 1 ? b->span : 1))
        return 0;
    for (int i = 0; i < a->n_splits; i++)
        if (a->splits[i] != b->splits[i]) return 0;
    return 1;
}

int remat_plan_equal(const remat_plan *a, const remat_plan *b) {
    if (a->n_blocks != b->n_blocks) return 0;
    for (int i = 0; i < a->n_blocks; i++)
        if (!remat_block_plan_equal(&a->blocks[i], &b->blocks[i])) return 0;
    return 1;
}

int remat_segment_reads_outside(const remat_model *m, int first, int end, int *reader, int *source) {
    for (int j = first; j < end; j++) {
        const remat_layer *l = &m->layers[j];
        int srcs[2] = {l->src, l->src2};
        for (int q = 0; q < 2; q++) {
            if (q == 1 && l->src2 == REMAT_SRC_NONE) continue;
            if (srcs[q] < first - 1) {
                *reader = j;
                *source = srcs[q];
                return 1;
            }
        }
    }
    return 0;
}

static remat_status alloc_blocks(const remat_model *m, remat_plan *out, remat_error *err) {
    out->n_blocks = m->n_blocks;
    out->blocks = remat_xcalloc((size_t)(m->n_blocks > 0 ? m->n_blocks : 1), sizeof *out->blocks, err);
    if (!out->blocks) return REMAT_ERR_NOMEM;
    for (int b = 0; b < m->n_blocks; b++) {
        out->blocks[b].k = 1;
        out->blocks[b].compressor = REMAT_COMP_NONE;
    }
    return REMAT_OK;
}

remat_status remat_plan_init_empty(const remat_model *m, remat_plan *out, remat_error *err) {
    if (!m || !out) return remat_error_set(err, REMAT_ERR_INTERNAL, "remat_plan_init_empty: null argument");
    memset(out, 0, sizeof *out);
    remat_status st = alloc_blocks(m, out, err);
    if (st == REMAT_OK) {
        out->text = remat_json_strdup("", err);
        out->path = remat_json_strdup("", err);
        if (!out->text || !out->path) st = REMAT_ERR_NOMEM;
    }
    if (st) remat_plan_free(out);
    return st;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static remat_status parse_entry(const json_ctx *c, const remat_model *m, const cJSON *j, int i, int *seen,
                                remat_plan *out) {
    static const char *const allowed[] = {"name", "checkpoint", "compressor", "k", "splits", "span", NULL};
    static const char *const comp_names[] = {"none", "bool", "uint8", "bit", "sparse"};
    char p[32], field[160];
    remat_json_index_path(p, sizeof p, "blocks", i);
    remat_status st = remat_json_check_object(c, j, p, allowed);
    if (st) return st;
    char name[REMAT_NAME_LEN];
    if ((st = remat_json_get_name(c, j, p, "name", name, sizeof name))) return st;
    remat_json_path(field, sizeof field, p, "name");
    int b = remat_model_find_block(m, name);
    if (b < 0) {
        char list[256];
        remat_model_block_list(m, list, sizeof list);
        return remat_json_fail(c, field, "expected a block of model \"%s\" (one of: %s), got \"%s\"", m->name, list,
                               name);
    }
    if (seen[b] >= 0)
        return remat_json_fail(c, field, "expected each block once, got \"%s\" again (also blocks[%d])", name, seen[b]);
    seen[b] = i;
    remat_block_plan *bp = &out->blocks[b];
    if ((st = remat_json_get_bool(c, j, p, "checkpoint", 0, 0, &bp->checkpoint))) return st;
    int comp = REMAT_COMP_NONE;
    if ((st = remat_json_get_enum(c, j, p, "compressor", 0, comp_names, REMAT_COMP_COUNT, REMAT_COMP_NONE, &comp)))
        return st;
    bp->compressor = (remat_compressor)comp;
    int64_t k;
    if ((st = remat_json_get_int(c, j, p, "k", 0, 1, 1, INT64_MAX, &k))) return st;
    if (k > m->T)
        return remat_json_fail(c, remat_json_path(field, sizeof field, p, "k"),
                               "expected a divisor of T = %lld, got %lld", (long long)m->T, (long long)k);
    bp->k = (int)k;
    int64_t span;
    if ((st = remat_json_get_int(c, j, p, "span", 0, 1, 1, m->n_blocks, &span))) return st;
    bp->span = (int)span;
    const cJSON *sp = remat_json_member(j, "splits");
    if (sp) {
        remat_json_path(field, sizeof field, p, "splits");
        if (!cJSON_IsArray(sp)) return remat_json_fail_value(c, field, sp, "an array of layer names");
        int n = cJSON_GetArraySize(sp);
        if (n > REMAT_MAX_SPLITS)
            return remat_json_fail(c, field, "expected at most %d splits, got %d", REMAT_MAX_SPLITS, n);
        int q = 0;
        for (const cJSON *e = sp->child; e; e = e->next, q++) {
            char ef[192], lname[REMAT_NAME_LEN];
            snprintf(ef, sizeof ef, "%s[%d]", field, q);
            if ((st = remat_json_check_name(c, e, ef, lname, sizeof lname))) return st;
            int idx = remat_model_find_layer(m, lname);
            if (idx < 0)
                return remat_json_fail(c, ef,
                                       "expected a layer of block \"%s\"%s after its first layer \"%s\", got \"%s\"",
                                       m->blocks[b].name, bp->span > 1 ? " or its span" : "",
                                       m->layers[m->blocks[b].first_layer].name, lname);
            bp->splits[q] = idx;
        }
        bp->n_splits = n;
    }
    if ((st = check_block_plan(c, m, b, bp, p, 0))) return st;
    qsort(bp->splits, (size_t)bp->n_splits, sizeof bp->splits[0], cmp_int);
    return REMAT_OK;
}

static remat_status parse_plan(const json_ctx *c, const cJSON *root, const remat_model *m, remat_plan *out,
                               remat_error *err) {
    static const char *const allowed[] = {"model", "description", "chosen_for", "blocks", NULL};
    static const char *const question[] = {"by", "T", "N", "budget_bytes", "budget_on", "device_overhead_bytes", NULL};
    remat_status st = remat_json_check_object(c, root, "", allowed);
    if (st) return st;
    const cJSON *cf =
        remat_json_member(root, "chosen_for"); /* what search/tune chose the plan for (checked by tools) */
    if (cf && !cJSON_IsObject(cf))
        return remat_json_fail_value(c, "chosen_for", cf, "an object (by, T, N, budget_bytes, ...)");
    if (cf && (st = remat_json_check_object(c, cf, "chosen_for", question))) return st;
    for (const cJSON *f = cf ? cf->child : NULL; f; f = f->next) {
        char field[64];
        int text = !strcmp(f->string, "by") || !strcmp(f->string, "budget_on");
        if (text ? !cJSON_IsString(f) : !(cJSON_IsNumber(f) || (cJSON_IsNull(f) && !strcmp(f->string, "budget_bytes"))))
            return remat_json_fail_value(c, remat_json_path(field, sizeof field, "chosen_for", f->string), f,
                                         text ? "a string" : "a number");
    }
    const cJSON *mn = remat_json_member(root, "model");
    if (mn && (!cJSON_IsString(mn) || strcmp(mn->valuestring, m->name) != 0)) {
        char expected[128];
        snprintf(expected, sizeof expected, "\"%s\" (the name of the model the plan is used with)", m->name);
        return remat_json_fail_value(c, "model", mn, expected);
    }
    const cJSON *d = remat_json_member(root, "description");
    if (d && !cJSON_IsString(d)) return remat_json_fail_value(c, "description", d, "a string");
    const cJSON *arr = remat_json_member(root, "blocks");
    if (!arr) return remat_json_fail(c, "blocks", "missing (expected an array of block plans, [] for none)");
    if (!cJSON_IsArray(arr)) return remat_json_fail_value(c, "blocks", arr, "an array of block plans");
    if ((st = alloc_blocks(m, out, err))) return st;
    int *seen = remat_xmalloc((size_t)(m->n_blocks > 0 ? m->n_blocks : 1) * sizeof *seen, err);
    if (!seen) return REMAT_ERR_NOMEM;
    for (int b = 0; b < m->n_blocks; b++) seen[b] = -1;
    int i = 0;
    for (const cJSON *j = arr->child; j && st == REMAT_OK; j = j->next, i++) st = parse_entry(c, m, j, i, seen, out);
    for (int b = 0; b < m->n_blocks && st == REMAT_OK; b++) {
        for (int q = b + 1; q < b + out->blocks[b].span && q < m->n_blocks; q++) {
            if (seen[q] < 0) continue;
            char entry[32], field[64];
            remat_json_index_path(entry, sizeof entry, "blocks", seen[q]);
            st = remat_json_fail(c, remat_json_path(field, sizeof field, entry, "name"),
                                 "expected a block outside the span of \"%s\" (span %d covers \"%s\"), got \"%s\"",
                                 m->blocks[b].name, out->blocks[b].span, m->blocks[q].name, m->blocks[q].name);
            break;
        }
    }
    remat_xfree(seen);
    return st;
}

remat_status remat_plan_parse(const char *text, size_t len, const char *origin, const remat_model *m,
                              remat_plan *out, remat_error *err) {
    if (!out || !m || m->n_blocks < 1 || !m->blocks || !m->layers)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "remat_plan_parse: no model or no output plan");
    memset(out, 0, sizeof *out);
    if (!origin) origin = "<plan>";
    json_ctx c = {origin, err};
    cJSON *root = NULL;
    char *copy = NULL;
    remat_status st = remat_json_parse_root(text, len, origin, &root, &copy, err);
    if (st) return st;
    st = parse_plan(&c, root, m, out, err);
    st = remat_json_keep_source(st, root, copy, origin, &out->text, &out->path, err);
    if (st) remat_plan_free(out);
    return st;
}

remat_status remat_plan_load(const char *path, const remat_model *m, remat_plan *out, remat_error *err) {
    if (out) memset(out, 0, sizeof *out);
    char *text = NULL;
    size_t len = 0;
    remat_status st = remat_json_read_file(path, &text, &len, err);
    if (st) return st;
    st = remat_plan_parse(text, len, path, m, out, err);
    remat_xfree(text);
    return st;
}

remat_status remat_plan_validate(const remat_plan *p, const remat_model *m, const char *origin, remat_error *err) {
    json_ctx c = {origin && origin[0] ? origin : "<plan>", err};
    if (!p || !m) return remat_error_set(err, REMAT_ERR_INTERNAL, "remat_plan_validate: null plan or model");
    if (p->n_blocks != m->n_blocks || (p->n_blocks > 0 && !p->blocks))
        return remat_json_fail(&c, "blocks", "expected %d block plans (one per block of model \"%s\"), got %d",
                               m->n_blocks, m->name, p->blocks ? p->n_blocks : 0);
    for (int b = 0; b < m->n_blocks; b++) {
        char prefix[32];
        remat_json_index_path(prefix, sizeof prefix, "blocks", b);
        remat_status st = check_block_plan(&c, m, b, &p->blocks[b], prefix, 1);
        if (st) return st;
        for (int q = b + 1; q < b + p->blocks[b].span && q < m->n_blocks; q++) {
            const remat_block_plan *cq = &p->blocks[q];
            if (cq->checkpoint || cq->span > 1) {
                remat_json_index_path(prefix, sizeof prefix, "blocks", q);
                return remat_json_fail(&c, prefix, "expected block \"%s\" stored: it is covered by the span of \"%s\"",
                                       m->blocks[q].name, m->blocks[b].name);
            }
        }
    }
    return REMAT_OK;
}

/* ---- writing ------------------------------------------------------------ */

typedef struct strbuf {
    char *s;
    size_t len, cap;
    remat_error *err;
    int failed;
} strbuf;

static void sb_printf(strbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void sb_printf(strbuf *b, const char *fmt, ...) {
    if (b->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = 1;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = (b->cap + (size_t)n + 1) * 2;
        char *ns = remat_xrealloc(b->s, cap, b->err);
        if (!ns) {
            b->failed = 1;
            return;
        }
        b->s = ns;
        b->cap = cap;
    }
}

/* A JSON string literal of s (core/io/json_write.h). */
static void sb_string(strbuf *b, const char *s) {
    size_t n = remat_json_quote(NULL, 0, s);
    char small[256];
    char *q = n < sizeof small ? small : remat_xmalloc(n + 1, b->err);
    if (!q) {
        b->failed = 1;
        return;
    }
    remat_json_quote(q, n + 1, s);
    sb_printf(b, "%s", q);
    if (q != small) remat_xfree(q);
}

char *remat_plan_to_json(const remat_plan *p, const remat_model *m, remat_error *err) {
    return remat_plan_to_json_for(p, m, NULL, err);
}

char *remat_plan_to_json_for(const remat_plan *p, const remat_model *m, const char *chosen_for, remat_error *err) {
    if (remat_plan_validate(p, m, p && p->path && p->path[0] ? p->path : "<plan>", err) != REMAT_OK) return NULL;
    strbuf b = {NULL, 0, 0, err, 0};
    b.s = remat_xmalloc(256, err);
    if (!b.s) return NULL;
    b.cap = 256;
    b.s[0] = '\0';
    sb_printf(&b, "{\n  \"model\": ");
    sb_string(&b, m->name);
    if (chosen_for && chosen_for[0]) sb_printf(&b, ",\n  \"chosen_for\": %s", chosen_for);
    sb_printf(&b, ",\n  \"blocks\": [");
    int any = 0;
    for (int i = 0; i < m->n_blocks; i++) {
        const remat_block_plan *bp = &p->blocks[i];
        if (!bp->checkpoint) continue; /* validated: nothing else can differ from the default */
        sb_printf(&b, "%s\n    {\"name\": ", any ? "," : "");
        sb_string(&b, m->blocks[i].name);
        sb_printf(&b, ", \"checkpoint\": true");
        if (bp->compressor != REMAT_COMP_NONE)
            sb_printf(&b, ", \"compressor\": \"%s\"", remat_compressor_name(bp->compressor));
        if (bp->k != 1) sb_printf(&b, ", \"k\": %d", bp->k);
        if (bp->span > 1) sb_printf(&b, ", \"span\": %d", bp->span);
        if (bp->n_splits) {
            sb_printf(&b, ", \"splits\": [");
            for (int j = 0; j < bp->n_splits; j++) {
                if (j) sb_printf(&b, ", ");
                sb_string(&b, m->layers[bp->splits[j]].name);
            }
            sb_printf(&b, "]");
        }
        sb_printf(&b, "}");
        any = 1;
    }
    sb_printf(&b, "%s]\n}\n", any ? "\n  " : "");
    if (b.failed) {
        remat_xfree(b.s);
        remat_error_set(err, REMAT_ERR_NOMEM, "out of memory writing a plan");
        return NULL;
    }
    return b.s;
}

void remat_plan_free(remat_plan *p) {
    if (!p) return;
    remat_xfree(p->blocks);
    remat_xfree(p->text);
    remat_xfree(p->path);
    memset(p, 0, sizeof *p);
}

int remat_plan_is_empty(const remat_plan *p) {
    if (!p) return 1;
    for (int b = 0; b < p->n_blocks; b++)
        if (p->blocks[b].checkpoint) return 0;
    return 1;
}
