/* options.c - the per-block options the searches choose from (see sim/search.h).
 * Each candidate is validated by core/plan_json.c's remat_plan_validate, so the
 * options are exactly the valid ones of the enumerated family. */
#include <string.h>

#include "sim/search.h"

void remat_search_options_free(remat_block_options *o, int n_blocks) {
    if (!o) return;
    for (int b = 0; b < n_blocks; b++) remat_xfree(o[b].v);
    remat_xfree(o);
}

static remat_status push(remat_block_options *o, int *cap, const remat_block_plan *bp, remat_error *err) {
    if (o->n == *cap) {
        int c = *cap ? *cap * 2 : 16;
        remat_block_plan *v = remat_xrealloc(o->v, (size_t)c * sizeof *v, err);
        if (!v) return REMAT_ERR_NOMEM;
        o->v = v;
        *cap = c;
    }
    o->v[o->n++] = *bp;
    return REMAT_OK;
}

static int valid(remat_plan *p, const remat_model *m, int b, const remat_block_plan *bp) {
    remat_error e = {0};
    p->blocks[b] = *bp;
    return remat_plan_validate(p, m, "<search>", &e) == REMAT_OK;
}

remat_status remat_search_block_options(const remat_model *m, remat_block_options **out, remat_error *err) {
    *out = NULL;
    remat_plan p;
    remat_status st = remat_plan_init_empty(m, &p, err);
    if (st != REMAT_OK) return st;
    remat_block_options *o = remat_xcalloc((size_t)(m->n_blocks ? m->n_blocks : 1), sizeof *o, err);
    if (!o) {
        remat_plan_free(&p);
        return REMAT_ERR_NOMEM;
    }
    for (int b = 0; b < m->n_blocks && st == REMAT_OK; b++) {
        const remat_block *blk = &m->blocks[b];
        remat_block_plan stored = p.blocks[b], bp;
        int cap = 0;
        st = push(&o[b], &cap, &stored, err);
        /* split sets: none, each valid single point, all valid points */
        int singles[REMAT_MAX_SPLITS], ns = 0;
        for (int l = blk->first_layer + 1; l < blk->first_layer + blk->n_layers && ns < REMAT_MAX_SPLITS; l++) {
            memset(&bp, 0, sizeof bp);
            bp.checkpoint = 1;
            bp.compressor = REMAT_COMP_NONE;
            bp.k = 1;
            bp.n_splits = 1;
            bp.splits[0] = l;
            if (valid(&p, m, b, &bp)) singles[ns++] = l;
        }
        int n_sets = 1 + ns + (ns >= 2 ? 1 : 0);
        for (int set = 0; set < n_sets && st == REMAT_OK; set++) {
            for (int c = 0; c < REMAT_COMP_COUNT && st == REMAT_OK; c++)
                for (int64_t k = 1; k <= m->T && st == REMAT_OK; k++) {
                    if (m->T % k) continue;
                    memset(&bp, 0, sizeof bp);
                    bp.checkpoint = 1;
                    bp.compressor = (remat_compressor)c;
                    bp.k = (int)k;
                    if (set >= 1 && set <= ns) {
                        bp.n_splits = 1;
                        bp.splits[0] = singles[set - 1];
                    } else if (set == ns + 1) {
                        bp.n_splits = ns;
                        memcpy(bp.splits, singles, (size_t)ns * sizeof *singles);
                    }
                    if (valid(&p, m, b, &bp)) st = push(&o[b], &cap, &bp, err);
                }
        }
        p.blocks[b] = stored;
    }
    remat_plan_free(&p);
    if (st != REMAT_OK) {
        remat_search_options_free(o, m->n_blocks);
        return st;
    }
    *out = o;
    return REMAT_OK;
}
