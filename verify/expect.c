/* expect.c - recomputation a plan implies, from the plan and the model. */
#include "verify/expect.h"

#include <string.h>

remat_verify_expect remat_verify_expect_plan(const remat_model *m, const remat_plan *p) {
    remat_verify_expect e;
    memset(&e, 0, sizeof e);
    for (int bi = 0; bi < m->n_blocks && bi < p->n_blocks; bi++) {
        const remat_block *blk = &m->blocks[bi];
        const remat_block_plan *bp = &p->blocks[bi];
        if (!bp->checkpoint) continue;
        int k = bp->k > 0 ? bp->k : 1;
        /* the unit: this block and the blocks its span covers */
        int span = bp->span > 1 ? bp->span : 1;
        if (bi + span > m->n_blocks) span = m->n_blocks - bi;
        const remat_block *lastb = &m->blocks[bi + span - 1];
        /* segment boundaries: the unit's first layer and every split inside it */
        int start = blk->first_layer, end = lastb->first_layer + lastb->n_layers;
        int seg_start = start;
        for (int si = 0; si <= bp->n_splits; si++) {
            int seg_end = end;
            if (si < bp->n_splits) {
                int s = bp->splits[si];
                if (s <= seg_start || s >= end) continue; /* not a cut inside the block */
                seg_end = s;
            }
            int layers = seg_end - seg_start;
            e.segments++;
            if (bp->compressor != REMAT_COMP_NONE) e.compressed_segments++;
            e.recomputed_layers += layers * k;
            e.recomputed_layer_set += layers;
            seg_start = seg_end;
        }
        bi += span - 1;
    }
    return e;
}
