/* options.c - the per-block options the searches choose from (see sim/search.h):
 * core/model/plan_grid.c's options of each block (every valid stored / checkpointed x
 * compressor x k x single-split option, the grid the acceptance tests prove exact),
 * plus, for each checkpointed (compressor, k) with two or more valid single split
 * points, the option that splits at all of them (a block recomputed as several
 * segments, the spatial split of greedy level 2). */
#include <string.h>

#include "core/model/plan_grid.h"
#include "sim/search.h"

void remat_search_options_free(remat_block_options *o, int n_blocks) {
    if (!o) return;
    for (int b = 0; b < n_blocks; b++) remat_xfree(o[b].v);
    remat_xfree(o);
}

static int valid(remat_plan *p, const remat_model *m, int b, const remat_block_plan *bp) {
    remat_error e = {0};
    remat_block_plan keep = p->blocks[b];
    p->blocks[b] = *bp;
    int ok = remat_plan_validate(p, m, "<search>", &e) == REMAT_OK;
    p->blocks[b] = keep;
    return ok;
}

/* Appends the all-splits option of every (compressor, k) that has >= 2 single splits. */
static remat_status add_multi_splits(const remat_model *m, int b, remat_plan *p, remat_block_options *o,
                                     remat_error *err) {
    int n0 = o->n;
    for (int i = 0; i < n0; i++) {
        const remat_block_plan *x = &o->v[i];
        if (!x->checkpoint || x->n_splits != 0) continue;
        remat_block_plan all = *x;
        for (int j = 0; j < n0; j++) {
            const remat_block_plan *y = &o->v[j];
            if (y->checkpoint && y->n_splits == 1 && y->compressor == x->compressor && y->k == x->k &&
                all.n_splits < REMAT_MAX_SPLITS)
                all.splits[all.n_splits++] = y->splits[0];
        }
        if (all.n_splits < 2) continue;
        for (int a = 1; a < all.n_splits; a++) /* ascending, as plans require */
            for (int c = a; c > 0 && all.splits[c - 1] > all.splits[c]; c--) {
                int t = all.splits[c];
                all.splits[c] = all.splits[c - 1];
                all.splits[c - 1] = t;
            }
        if (!valid(p, m, b, &all)) continue;
        remat_block_plan *v = remat_xrealloc(o->v, (size_t)(o->n + 1) * sizeof *v, err);
        if (!v) return REMAT_ERR_NOMEM;
        o->v = v;
        o->v[o->n++] = all;
    }
    return REMAT_OK;
}

remat_status remat_search_block_options(const remat_model *m, remat_block_options **out, remat_error *err) {
    *out = NULL;
    remat_plan p;
    remat_status st = remat_plan_init_empty(m, &p, err);
    if (st != REMAT_OK) return st;
    remat_block_options *o = remat_xcalloc((size_t)(m->n_blocks ? m->n_blocks : 1), sizeof *o, err);
    if (!o) st = REMAT_ERR_NOMEM;
    for (int b = 0; b < m->n_blocks && st == REMAT_OK; b++) {
        st = remat_plan_grid_block_options(m, b, &o[b].v, &o[b].n, err);
        if (st == REMAT_OK) st = add_multi_splits(m, b, &p, &o[b], err);
    }
    remat_plan_free(&p);
    if (st != REMAT_OK) {
        remat_search_options_free(o, m->n_blocks);
        return st;
    }
    *out = o;
    return REMAT_OK;
}
