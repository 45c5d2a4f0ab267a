/* ddp.c - DDP's per-rank memory (ddp.h). */
#include "sim/ddp.h"

#include <string.h>

#include "core/model/layers.h"

remat_ddp_opts remat_ddp_opts_default(void) {
    remat_ddp_opts o = {25 * ((int64_t)1 << 20), REMAT_DDP_FIRST_BUCKET_BYTES, 0, 2, 4 * ((int64_t)1 << 20)};
    return o;
}

remat_status remat_ddp_estimate(const remat_model *m, const remat_ddp_opts *o, const remat_caching_config *cfg,
                                remat_ddp_bytes *out, remat_error *err) {
    memset(out, 0, sizeof *out);
    remat_alloc_model *cm = remat_alloc_model_init(REMAT_ALLOC_CACHING, cfg, err);
    if (!cm) return err->status;
    int64_t cur = 0, cap = o->first_bucket_bytes;
    remat_status st = REMAT_OK;
    /* the parameters in reverse order (the order DDP expects their gradients in) */
    for (int j = m->n_layers - 1; j >= 0 && st == REMAT_OK; j--) {
        const remat_layer *l = &m->layers[j];
        for (int i = remat_layer_n_params(l) - 1; i >= 0 && st == REMAT_OK; i--) {
            if (!remat_layer_param_trainable(l, i)) continue;
            cur += remat_layer_param_elems(l, i) * 4;
            if (cur >= cap) { /* the bucket is full: it closes with this parameter */
                remat_alloc_result r;
                st = remat_alloc_model_alloc(cm, out->n_buckets, cur, &r, err);
                out->n_buckets++;
                out->bucket_bytes += cur;
                if (cur > out->largest_bucket) out->largest_bucket = cur;
                cur = 0;
                cap = o->bucket_cap_bytes;
            }
        }
    }
    if (st == REMAT_OK && cur > 0) {
        remat_alloc_result r;
        st = remat_alloc_model_alloc(cm, out->n_buckets, cur, &r, err);
        out->n_buckets++;
        out->bucket_bytes += cur;
        if (cur > out->largest_bucket) out->largest_bucket = cur;
    }
    remat_alloc_stats s;
    remat_alloc_model_stats(cm, &s);
    remat_alloc_model_free(cm);
    if (!o->bucket_view) {
        out->extra_live = out->bucket_bytes;
        out->extra_reserved = s.reserved_bytes;
    }
    out->nccl_bytes = (int64_t)o->nccl_channels * 2 * o->nccl_buffsize;
    return st;
}
