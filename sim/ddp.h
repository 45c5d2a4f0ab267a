/* ddp.h - what PyTorch's DistributedDataParallel adds to each rank's memory, for users
 * who train the network with DDP rather than with remat's own data-parallel step
 * (`remat simulate --ranks R --ddp`, docs/mpi.md "PyTorch DDP"):
 *
 *  - gradient buckets: DDP groups the parameters' gradients, in reverse order of the
 *    parameters, into flat buckets of at most bucket_cap bytes (bucket_cap_mb = 25 by
 *    default), the first one capped at 1 MiB (torch.distributed._DEFAULT_FIRST_BUCKET_BYTES);
 *    a parameter larger than the cap gets a bucket of its own. The buckets are allocated
 *    once, when DDP wraps the model, and live for the whole run. With
 *    gradient_as_bucket_view=False (the default) the gradients are separate tensors
 *    copied into the buckets, so the buckets are a second copy of every gradient; with
 *    True the gradients are views into the buckets and nothing is added;
 *  - NCCL's own buffers, outside PyTorch's allocator (so in no allocator figure): an
 *    estimate of channels x 2 (the ring's send and receive side) x NCCL_BUFFSIZE (4 MiB
 *    by default) per communicator.
 *
 *   remat_ddp_opts o = remat_ddp_opts_default();
 *   remat_ddp_bytes d;
 *   remat_ddp_estimate(&model, &o, &caching_cfg, &d, &err);
 */
#ifndef REMAT_SIM_DDP_H
#define REMAT_SIM_DDP_H

#include <stdint.h>

#include "core/alloc/alloc_model.h"
#include "core/model/model.h"
#include "core/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_DDP_FIRST_BUCKET_BYTES ((int64_t)1 << 20)

typedef struct remat_ddp_opts {
    int64_t bucket_cap_bytes;   /* bucket_cap_mb * 2^20 (default 25 MiB) */
    int64_t first_bucket_bytes; /* 1 MiB */
    int bucket_view;            /* gradient_as_bucket_view=True */
    int nccl_channels;          /* for the NCCL estimate (default 2) */
    int64_t nccl_buffsize;      /* NCCL_BUFFSIZE (default 4 MiB) */
} remat_ddp_opts;

remat_ddp_opts remat_ddp_opts_default(void);

typedef struct remat_ddp_bytes {
    int n_buckets;
    int64_t bucket_bytes;       /* all buckets together (the gradients' bytes) */
    int64_t largest_bucket;
    int64_t extra_live;         /* what the buckets add to live bytes (0 with bucket_view) */
    int64_t extra_reserved;     /* their segments, placed alone by the caching allocator model */
    int64_t nccl_bytes;         /* the NCCL estimate (outside the allocator) */
} remat_ddp_bytes;

/* The buckets of m's trainable parameters (fp32 gradients, as DDP keeps them under
 * autocast too), placed through a fresh caching allocator model with cfg (NULL: the
 * defaults). */
remat_status remat_ddp_estimate(const remat_model *m, const remat_ddp_opts *o, const remat_caching_config *cfg,
                                remat_ddp_bytes *out, remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
