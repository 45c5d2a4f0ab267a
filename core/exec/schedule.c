/* schedule.c - segments from a model and a validated plan. */
#include "core/exec/schedule.h"

#include <string.h>

#include "core/model/layers.h"

/* 1 when a layer of [first, end) keeps the segment input for its backward. */
static int segment_saves_input(const remat_model *m, int first, int end) {
    for (int j = first; j < end; j++)
        if (m->layers[j].src == first - 1 && remat_layer_saves_input(&m->layers[j])) return 1;
    return 0;
}

remat_status remat_schedule_build(const remat_model *m, const remat_plan *p, remat_schedule *out, remat_error *err) {
    memset(out, 0, sizeof *out);
    if (p->n_blocks != m->n_blocks)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: blocks: plan has %d blocks, model '%s' has %d",
                               p->path && p->path[0] ? p->path : "<plan>", p->n_blocks, m->name, m->n_blocks);
    int cap = m->n_layers;
    out->segs = remat_xcalloc((size_t)cap, sizeof *out->segs, err);
    if (!out->segs) return REMAT_ERR_NOMEM;
    for (int b = 0; b < m->n_blocks; b++) {
        const remat_block *blk = &m->blocks[b];
        const remat_block_plan *bp = &p->blocks[b];
        int span = bp->checkpoint && bp->span > 1 ? bp->span : 1;
        if (b + span > m->n_blocks) span = m->n_blocks - b;
        const remat_block *lastb = &m->blocks[b + span - 1];
        int start = blk->first_layer, end = lastb->first_layer + lastb->n_layers;
        int cuts[REMAT_MAX_SPLITS + 2], nc = 0;
        cuts[nc++] = start;
        if (bp->checkpoint)
            for (int i = 0; i < bp->n_splits; i++) cuts[nc++] = bp->splits[i];
        cuts[nc++] = end;
        for (int i = 0; i + 1 < nc; i++) {
            if (cuts[i + 1] <= cuts[i] || out->n_segs >= cap) {
                remat_schedule_free(out);
                return remat_error_set(err, REMAT_ERR_INPUT, "%s: blocks[%d].splits: expected ascending layers inside block '%s'",
                                       p->path && p->path[0] ? p->path : "<plan>", b, blk->name);
            }
            remat_segment *s = &out->segs[out->n_segs++];
            s->block = m->layers[cuts[i]].block;
            s->first = cuts[i];
            s->n = cuts[i + 1] - cuts[i];
            s->checkpoint = bp->checkpoint;
            s->comp = bp->checkpoint ? bp->compressor : REMAT_COMP_NONE;
            s->k = bp->checkpoint ? (bp->k > 0 ? bp->k : 1) : 1;
            if (s->checkpoint)
                s->keeps_input_raw = s->comp == REMAT_COMP_NONE;
            else
                s->keeps_input_raw = segment_saves_input(m, s->first, s->first + s->n);
        }
        b += span - 1; /* the covered blocks are part of this unit */
    }
    return REMAT_OK;
}

void remat_schedule_free(remat_schedule *s) {
    remat_xfree(s->segs);
    memset(s, 0, sizeof *s);
}
