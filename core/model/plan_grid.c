/* plan_grid.c - enumerating valid checkpoint plans (contract in core/model/plan_grid.h).
 *
 * Validity is never re-derived here: a candidate option is kept exactly when
 * remat_plan_validate accepts it (on a plan where every other block is stored), so
 * the grid follows the plan rules wherever they change. */
#include "core/model/plan_grid.h"
#include "core/model/plan_notation.h"
#include "core/base/grow.h"
#include "core/base/rng.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

typedef struct opt_list {
    remat_block_plan *v;
    int n, cap;
} opt_list;

static remat_status opt_push(opt_list *l, const remat_block_plan *o, remat_error *err) {
    int64_t cap = l->cap;
    if (remat_grow((void **)&l->v, &cap, l->n + 1, sizeof *l->v, 16, INT_MAX, err)) return REMAT_ERR_NOMEM;
    l->cap = (int)cap;
    l->v[l->n++] = *o;
    return REMAT_OK;
}

/* 1 when option o is valid for block b (all other blocks of scratch stored). */
static int option_valid(const remat_model *m, remat_plan *scratch, int b, const remat_block_plan *o) {
    remat_block_plan keep = scratch->blocks[b];
    scratch->blocks[b] = *o;
    remat_error quiet = {REMAT_OK, {0}};
    int ok = remat_plan_validate(scratch, m, "<grid>", &quiet) == REMAT_OK;
    scratch->blocks[b] = keep;
    return ok;
}

static remat_status block_options(const remat_model *m, int b, remat_plan *scratch, opt_list *out, remat_error *err) {
    remat_block_plan o;
    memset(&o, 0, sizeof o);
    o.k = 1;
    remat_status st = opt_push(out, &o, err); /* stored */
    if (st) return st;
    const remat_block *blk = &m->blocks[b];
    for (int c = 0; c < REMAT_COMP_COUNT; c++)
        for (int64_t k = 1; k <= m->T; k++) {
            if (m->T % k) continue;
            for (int s = -1; s < blk->n_layers; s++) {
                if (s == 0) continue; /* the first layer never starts a new segment */
                memset(&o, 0, sizeof o);
                o.checkpoint = 1;
                o.compressor = (remat_compressor)c;
                o.k = (int)k;
                if (s > 0) {
                    o.n_splits = 1;
                    o.splits[0] = blk->first_layer + s;
                }
                if (option_valid(m, scratch, b, &o) && (st = opt_push(out, &o, err))) return st;
            }
        }
    return REMAT_OK;
}

remat_status remat_plan_grid_block_options(const remat_model *m, int b, remat_block_plan **options, int *n,
                                           remat_error *err) {
    *options = NULL;
    *n = 0;
    if (!m || b < 0 || b >= m->n_blocks)
        return remat_error_set(err, REMAT_ERR_INPUT, "<grid>: block: expected an index in [0, %d), got %d",
                               m ? m->n_blocks : 0, b);
    remat_plan scratch;
    remat_status st = remat_plan_init_empty(m, &scratch, err);
    if (st) return st;
    opt_list l = {NULL, 0, 0};
    st = block_options(m, b, &scratch, &l, err);
    remat_plan_free(&scratch);
    if (st) {
        remat_xfree(l.v);
        return st;
    }
    *options = l.v;
    *n = l.n;
    return REMAT_OK;
}

const char *remat_plan_grid_option_label(const remat_model *m, int b, const remat_block_plan *o, char *buf,
                                         size_t len) {
    if (!buf || len == 0) return buf;
    if (!o->checkpoint) snprintf(buf, len, "%s", REMAT_PLAN_NOTATION_NONE);
    else remat_plan_notation_block(m, b, o, buf, len);
    return buf;
}

/* ---- grids -------------------------------------------------------------- */

/* Plans are deduplicated through an open-addressing hash set of plan indices. */
typedef struct grid_builder {
    const remat_model *m;
    remat_plan_grid *g;
    int cap;
    int *slots;      /* plan index + 1, 0 = empty */
    size_t n_slots;  /* power of two, >= 2 * plans */
    remat_error *err;
} grid_builder;

static uint64_t plan_hash(const remat_block_plan *blocks, int nb) {
    uint64_t h = 0xcbf29ce484222325ull;
#define MIX(x) (h = (h ^ (uint64_t)(uint32_t)(x)) * 0x100000001b3ull)
    for (int b = 0; b < nb; b++) {
        MIX(blocks[b].checkpoint);
        MIX(blocks[b].compressor);
        MIX(blocks[b].k);
        MIX(blocks[b].n_splits);
        MIX(blocks[b].span > 1 ? blocks[b].span : 1);
        for (int i = 0; i < blocks[b].n_splits; i++) MIX(blocks[b].splits[i]);
    }
#undef MIX
    return h ^ (h >> 29);
}

static int plan_same(const remat_plan *p, const remat_block_plan *blocks, int nb) {
    for (int b = 0; b < nb; b++)
        if (!remat_block_plan_equal(&p->blocks[b], &blocks[b])) return 0;
    return 1;
}

/* Slot holding an equal plan, or the empty slot where it would go. */
static size_t slot_of(const grid_builder *gb, const remat_block_plan *blocks) {
    int nb = gb->m->n_blocks;
    size_t mask = gb->n_slots - 1, i = (size_t)plan_hash(blocks, nb) & mask;
    while (gb->slots[i] && !plan_same(&gb->g->plans[gb->slots[i] - 1], blocks, nb)) i = (i + 1) & mask;
    return i;
}

static remat_status grow_slots(grid_builder *gb) {
    size_t n = gb->n_slots ? gb->n_slots * 2 : 64;
    int *s = remat_xcalloc(n, sizeof *s, gb->err);
    if (!s) return REMAT_ERR_NOMEM;
    remat_xfree(gb->slots);
    gb->slots = s;
    gb->n_slots = n;
    for (int i = 0; i < gb->g->n_plans; i++) gb->slots[slot_of(gb, gb->g->plans[i].blocks)] = i + 1;
    return REMAT_OK;
}

/* The plan's label: its notation (core/model/plan_notation.h). */
static char *plan_label(const remat_model *m, const remat_plan *p, remat_error *err) {
    size_t n = remat_plan_notation(p, m, NULL, 0);
    char *s = remat_xmalloc(n + 1, err);
    if (s) remat_plan_notation(p, m, s, n + 1);
    return s;
}

/* Appends the plan with these block options unless the grid holds it already. */
static remat_status grid_push(grid_builder *gb, const remat_block_plan *blocks) {
    const remat_model *m = gb->m;
    remat_plan_grid *g = gb->g;
    if ((size_t)(g->n_plans + 1) * 2 > gb->n_slots) {
        remat_status gs = grow_slots(gb);
        if (gs) return gs;
    }
    size_t slot = slot_of(gb, blocks);
    if (gb->slots[slot]) return REMAT_OK; /* already in the grid */
    int64_t cap = gb->cap;
    if (remat_grow((void **)&g->plans, &cap, g->n_plans + 1, sizeof *g->plans, 16, INT_MAX, gb->err))
        return REMAT_ERR_NOMEM;
    gb->cap = (int)cap;
    remat_plan *p = &g->plans[g->n_plans];
    remat_status st = remat_plan_init_empty(m, p, gb->err);
    if (st) return st;
    memcpy(p->blocks, blocks, (size_t)m->n_blocks * sizeof *blocks);
    remat_xfree(p->path);
    p->path = plan_label(m, p, gb->err);
    char *text = p->path ? remat_plan_to_json(p, m, gb->err) : NULL;
    if (!text) {
        remat_plan_free(p);
        return gb->err && gb->err->status ? gb->err->status : REMAT_ERR_NOMEM;
    }
    remat_xfree(p->text);
    p->text = text;
    g->n_plans++;
    gb->slots[slot] = g->n_plans;
    return REMAT_OK;
}

/* The options of every block; *opts[b] owned, free with free_options. */
static remat_status all_options(const remat_model *m, opt_list **opts, remat_error *err) {
    *opts = remat_xcalloc((size_t)m->n_blocks, sizeof **opts, err);
    if (!*opts) return REMAT_ERR_NOMEM;
    remat_plan scratch;
    remat_status st = remat_plan_init_empty(m, &scratch, err);
    if (st) return st;
    for (int b = 0; b < m->n_blocks && st == REMAT_OK; b++) st = block_options(m, b, &scratch, &(*opts)[b], err);
    remat_plan_free(&scratch);
    return st;
}

static void free_options(const remat_model *m, opt_list *opts) {
    if (!opts) return;
    for (int b = 0; b < m->n_blocks; b++) remat_xfree(opts[b].v);
    remat_xfree(opts);
}

static remat_status begin(const remat_model *m, remat_plan_grid *out, grid_builder *gb, remat_block_plan **cur,
                          remat_error *err) {
    memset(out, 0, sizeof *out);
    gb->m = m;
    gb->g = out;
    gb->cap = 0;
    gb->slots = NULL;
    gb->n_slots = 0;
    gb->err = err;
    if (!m || m->n_blocks < 1)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "<grid>: model: expected a loaded model");
    *cur = remat_xcalloc((size_t)m->n_blocks, sizeof **cur, err);
    if (!*cur) return REMAT_ERR_NOMEM;
    for (int b = 0; b < m->n_blocks; b++) (*cur)[b].k = 1;
    return REMAT_OK;
}

static remat_status finish(remat_status st, grid_builder *gb, remat_plan_grid *out, remat_block_plan *cur,
                           const remat_model *m, opt_list *opts) {
    remat_xfree(gb->slots);
    gb->slots = NULL;
    remat_xfree(cur);
    free_options(m, opts);
    if (st) remat_plan_grid_free(out);
    return st;
}

remat_status remat_plan_grid_one_block(const remat_model *m, remat_plan_grid *out, remat_error *err) {
    grid_builder gb;
    remat_block_plan *cur = NULL;
    opt_list *opts = NULL;
    remat_status st = begin(m, out, &gb, &cur, err);
    if (st == REMAT_OK) st = all_options(m, &opts, err);
    if (st == REMAT_OK) st = grid_push(&gb, cur); /* baseline */
    for (int b = 0; st == REMAT_OK && b < m->n_blocks; b++) {
        for (int i = 1; st == REMAT_OK && i < opts[b].n; i++) {
            cur[b] = opts[b].v[i];
            st = grid_push(&gb, cur);
        }
        cur[b] = opts[b].v[0];
    }
    return finish(st, &gb, out, cur, m, opts);
}

remat_status remat_plan_grid_uniform(const remat_model *m, remat_plan_grid *out, remat_error *err) {
    grid_builder gb;
    remat_block_plan *cur = NULL;
    opt_list *opts = NULL;
    remat_status st = begin(m, out, &gb, &cur, err);
    if (st == REMAT_OK) st = all_options(m, &opts, err);
    if (st == REMAT_OK) st = grid_push(&gb, cur); /* baseline: left out below as a repeat */
    int baseline = st == REMAT_OK ? 1 : 0;
    for (int c = 0; st == REMAT_OK && c < REMAT_COMP_COUNT; c++)
        for (int64_t k = 1; st == REMAT_OK && k <= m->T; k++) {
            if (m->T % k) continue;
            remat_block_plan shape;
            memset(&shape, 0, sizeof shape);
            shape.checkpoint = 1;
            shape.compressor = (remat_compressor)c;
            shape.k = (int)k;
            for (int b = 0; b < m->n_blocks; b++) {
                int valid = 0;
                for (int i = 0; i < opts[b].n && !valid; i++) valid = remat_block_plan_equal(&opts[b].v[i], &shape);
                cur[b] = valid ? shape : opts[b].v[0];
            }
            st = grid_push(&gb, cur);
        }
    if (st == REMAT_OK && baseline) {
        /* drop the baseline we pushed only to keep it out */
        remat_plan_free(&out->plans[0]);
        memmove(&out->plans[0], &out->plans[1], (size_t)(out->n_plans - 1) * sizeof out->plans[0]);
        out->n_plans--;
    }
    return finish(st, &gb, out, cur, m, opts);
}

int64_t remat_plan_grid_product_size(const remat_model *m, remat_error *err) {
    opt_list *opts = NULL;
    if (!m || m->n_blocks < 1) return 0;
    if (all_options(m, &opts, err) != REMAT_OK) {
        free_options(m, opts);
        return -1;
    }
    int64_t n = 1;
    for (int b = 0; b < m->n_blocks; b++)
        n = (n > INT64_MAX / opts[b].n) ? INT64_MAX : n * opts[b].n;
    free_options(m, opts);
    return n;
}

remat_status remat_plan_grid_random(const remat_model *m, uint64_t seed, int count, remat_plan_grid *out,
                                    remat_error *err) {
    grid_builder gb;
    remat_block_plan *cur = NULL;
    opt_list *opts = NULL;
    remat_status st = begin(m, out, &gb, &cur, err);
    if (st == REMAT_OK) st = all_options(m, &opts, err);
    if (st == REMAT_OK && count < 0)
        st = remat_error_set(err, REMAT_ERR_INPUT, "<grid>: count: expected a number >= 0, got %d", count);
    if (st == REMAT_OK) {
        int64_t product = 1;
        for (int b = 0; b < m->n_blocks; b++)
            product = (product > INT64_MAX / opts[b].n) ? INT64_MAX : product * opts[b].n;
        if (product <= count) {
            /* The whole product fits: enumerate it (mixed radix, block 0 fastest). */
            int *digit = remat_xcalloc((size_t)m->n_blocks, sizeof *digit, err);
            if (!digit) st = REMAT_ERR_NOMEM;
            for (int64_t i = 0; st == REMAT_OK && i < product; i++) {
                for (int b = 0; b < m->n_blocks; b++) cur[b] = opts[b].v[digit[b]];
                st = grid_push(&gb, cur);
                for (int b = 0; b < m->n_blocks && ++digit[b] == opts[b].n; b++) digit[b] = 0;
            }
            remat_xfree(digit);
        } else {
            /* Duplicates are skipped; give up after many repeats (cannot happen
             * often: the product is larger than count). */
            uint64_t state = seed;
            int64_t attempts = (int64_t)count * 64 + 64;
            while (st == REMAT_OK && out->n_plans < count && attempts-- > 0) {
                for (int b = 0; b < m->n_blocks; b++) cur[b] = opts[b].v[remat_rng_next(&state) % (uint64_t)opts[b].n];
                st = grid_push(&gb, cur);
            }
        }
    }
    return finish(st, &gb, out, cur, m, opts);
}

void remat_plan_grid_free(remat_plan_grid *g) {
    if (!g) return;
    for (int i = 0; i < g->n_plans; i++) remat_plan_free(&g->plans[i]);
    remat_xfree(g->plans);
    memset(g, 0, sizeof *g);
}

int64_t remat_plan_grid_span_candidates(const remat_model *m) {
    int64_t divisors = 0;
    for (int64_t k = 1; k <= m->T; k++) divisors += m->T % k == 0;
    int64_t n = m->n_blocks, spans = n >= 2 ? (n - 1) * n / 2 : 0; /* (b, s >= 2) with b + s <= n */
    return spans * REMAT_COMP_COUNT * divisors;
}

remat_status remat_plan_grid_spans(const remat_model *m, remat_plan_grid *out, remat_error *err) {
    return remat_plan_grid_spans_sampled(m, 0, out, err);
}

remat_status remat_plan_grid_spans_sampled(const remat_model *m, int64_t max_plans, remat_plan_grid *out,
                                           remat_error *err) {
    grid_builder gb;
    remat_block_plan *cur = NULL;
    remat_status st = begin(m, out, &gb, &cur, err);
    remat_plan scratch;
    memset(&scratch, 0, sizeof scratch);
    if (st == REMAT_OK) st = remat_plan_init_empty(m, &scratch, err);
    const int64_t total = remat_plan_grid_span_candidates(m);
    const int sample = max_plans > 0 && total > max_plans;
    int64_t at = 0, owed = 0; /* candidate index, in the order below; picks still to make */
    for (int b = 0; st == REMAT_OK && b < m->n_blocks; b++)
        for (int span = 2; st == REMAT_OK && b + span <= m->n_blocks; span++)
            for (int c = 0; st == REMAT_OK && c < REMAT_COMP_COUNT; c++)
                for (int64_t k = 1; st == REMAT_OK && k <= m->T; k++) {
                    if (m->T % k) continue;
                    const int64_t i = at++;
                    /* evenly spaced: a pick is due when i * max / total steps; an invalid
                     * candidate passes its pick to the next valid one */
                    if (sample) {
                        owed += ((i + 1) * max_plans) / total - (i * max_plans) / total;
                        if (owed == 0) continue;
                    }
                    remat_block_plan o;
                    memset(&o, 0, sizeof o);
                    o.checkpoint = 1;
                    o.compressor = (remat_compressor)c;
                    o.k = (int)k;
                    o.span = span;
                    if (!option_valid(m, &scratch, b, &o)) continue;
                    cur[b] = o;
                    st = grid_push(&gb, cur);
                    if (sample) owed--;
                    memset(&cur[b], 0, sizeof cur[b]);
                    cur[b].k = 1;
                }
    remat_plan_free(&scratch);
    return finish(st, &gb, out, cur, m, NULL);
}
