/* schedule.h - the plan turned into segments (private to core/).
 *
 * A stored block is one segment. A checkpointed block (with the blocks its span
 * covers) is one segment per run of layers between its split points, each
 * checkpointed with the block's compressor and k. Segment s reads act[s] (full T) and writes act[s+1]; act[0] is the
 * network input, act[n_segs] the network output.
 */
#ifndef REMAT_SCHEDULE_H
#define REMAT_SCHEDULE_H

#include "core/model/layers.h"
#include "core/model/model.h"
#include "core/model/plan.h"
#include "core/base/status.h"

typedef struct remat_segment {
    int block;               /* block of the segment's first layer */
    int first, n;            /* layers [first, first + n) */
    int checkpoint;
    remat_compressor comp;
    int k;                   /* time chunks (1 for stored segments) */
    int keeps_input_raw;     /* the uncompressed input stays alive until backward */
} remat_segment;

typedef struct remat_schedule {
    int n_segs;
    remat_segment *segs;     /* owned */
} remat_schedule;

remat_status remat_schedule_build(const remat_model *m, const remat_plan *p, remat_schedule *out, remat_error *err);
void remat_schedule_free(remat_schedule *s);

#endif
