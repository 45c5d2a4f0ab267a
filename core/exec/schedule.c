/* schedule.c - segments from a model and a validated plan. */
#include "core/exec/schedule.h"

#include <string.h>

int remat_layer_saves_input(const remat_layer *l) {
    return l->type == REMAT_LAYER_LINEAR || l->type == REMAT_LAYER_BATCHNORM;
}

int remat_layer_is_neuron(const remat_layer *l) { return l->type == REMAT_LAYER_IF || l->type == REMAT_LAYER_LIF; }

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
                s->keeps_input_raw = remat_layer_saves_input(&m->layers[s->first]);
        }
        b += span - 1; /* the covered blocks are part of this unit */
    }
    return REMAT_OK;
}

void remat_schedule_free(remat_schedule *s) {
    remat_xfree(s->segs);
    memset(s, 0, sizeof *s);
}
