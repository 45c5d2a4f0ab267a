/* shard_steps.c - the executor's side of data parallelism (session.h, reduce.h;
 * docs/determinism.md "Data parallelism"): a shard's batch, the blocked loss, the
 * per-block weight-gradient accumulators and their combination. The reductions'
 * buffers are workspaces through the allocator models, so the dry backend (the
 * simulator) sees them; data moves only on a backend with data. */
#include <string.h>

#include "core/base/rng.h"
#include "core/exec/session.h"
#include "core/ref/ref_kernels.h" /* the host draws of the global batch, remat_ref_loss_value */

#define DATA(s) ((s)->ops->has_data)

remat_status remat_ex_shard_init(remat_session *s, remat_error *err) {
    const remat_shard *sh = s->o.shard;
    const remat_model *m = s->m;
    s->shard = sh;
    s->n_total = sh ? sh->n_total : m->N;
    s->nbl = sh ? remat_shard_local_blocks(sh) : 1;
    s->sample0 = sh ? remat_shard_first_sample(sh) : 0;
    if (!sh) {
        s->bsz = m->N;
        return REMAT_OK;
    }
    TRY(remat_shard_check(sh, "run", err));
    if (m->N != remat_shard_local_n(sh))
        return remat_error_set(err, REMAT_ERR_INTERNAL, "%s: N = %lld is not the rank's share %lld of %lld",
                               m->path ? m->path : "<model>", (long long)m->N, (long long)remat_shard_local_n(sh),
                               (long long)sh->n_total);
    const remat_backend_ops *o = s->ops;
    if (!o->bn_block_sums || !o->loss_blocks || !o->dropout_forward_at || !o->bn_block_sums_bf16)
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "--reduce-blocks / data-parallel steps: not available on the %s backend yet (use "
                               "--backend ref)",
                               o->name);
    s->bsz = m->N / s->nbl;
    return REMAT_OK;
}

remat_status remat_ex_alloc_f64(remat_session *s, remat_tensor *t, int layer, int64_t n) {
    remat_ex_describe_vec(s, t, REMAT_ROLE_WORKSPACE, layer, 2 * (n > 0 ? n : 1));
    return remat_ex_alloc(s, t);
}

/* The buffer a combination receives another rank's blocks into (none in one process). */
static remat_status recv_alloc(remat_session *s, remat_tensor *t, int layer, int64_t floats) {
    if (s->shard->ranks <= 1) {
        remat_tensor_describe(t, REMAT_ENC_F32, REMAT_ROLE_WORKSPACE, -1, -1, 0, NULL, -1, -1, -1);
        return REMAT_OK;
    }
    remat_ex_describe_vec(s, t, REMAT_ROLE_WORKSPACE, layer, floats);
    return remat_ex_alloc(s, t);
}

remat_status remat_ex_fold_f64(remat_session *s, int layer, const remat_tensor *local, int64_t n,
                               remat_tensor *total) {
    remat_tensor recv;
    TRY(remat_ex_alloc_f64(s, total, layer, n));
    TRY(recv_alloc(s, &recv, layer, 2 * s->nbl * n));
    if (DATA(s)) TRY(remat_reduce_fold_f64(s->shard, dptr(total), dptr(local), dptr(&recv), n, s->err));
    return remat_ex_free(s, &recv);
}

/* The global batch's values drawn on the host as fill.c draws them (element counters
 * of the whole [T, N_total, C]), this rank's rows of each step copied in. */
remat_status remat_ex_shard_input(remat_session *s) {
    const remat_model *m = s->m;
    int64_t eb = act_bytes(s), C = m->in_features, all = m->T * s->n_total * C;
    void *h = remat_xmalloc((size_t)(all * eb), s->err);
    if (!h) return REMAT_ERR_NOMEM;
    uint64_t key = (uint64_t)s->iter;
    if (m->input_spikes && s->bf16)
        remat_ref_fill_bernoulli_bf16(h, all, m->input_rate, s->o.seed, REMAT_RNG_INPUT, key);
    else if (m->input_spikes)
        remat_ref_fill_bernoulli(h, all, m->input_rate, s->o.seed, REMAT_RNG_INPUT, key);
    else if (s->bf16)
        remat_ref_fill_uniform_bf16(h, all, 0.0f, 1.0f, s->o.seed, REMAT_RNG_INPUT, key);
    else
        remat_ref_fill_uniform(h, all, 0.0f, 1.0f, s->o.seed, REMAT_RNG_INPUT, key);
    for (int64_t t = 0; t < m->T; t++)
        s->ops->from_host(s->be->ctx, (char *)s->input.ptr + t * m->N * C * eb,
                          (const char *)h + (t * s->n_total + s->sample0) * C * eb, m->N * C * eb);
    remat_xfree(h);
    return REMAT_OK;
}

remat_status remat_ex_shard_labels(remat_session *s) {
    int32_t *h = remat_xmalloc((size_t)s->n_total * sizeof(int32_t), s->err);
    if (!h) return REMAT_ERR_NOMEM;
    remat_ref_fill_labels(h, s->n_total, s->m->classes, s->o.seed, (uint64_t)s->iter);
    s->ops->from_host(s->be->ctx, s->labels.ptr, h + s->sample0, s->m->N * (int64_t)sizeof(int32_t));
    remat_xfree(h);
    return REMAT_OK;
}

remat_status remat_ex_shard_loss(remat_session *s, remat_tensor *rate, const void *out, float *loss,
                                 remat_tensor bufs[3]) {
    const remat_model *m = s->m;
    remat_tensor *part = &bufs[0], *total = &bufs[1], *recv = &bufs[2];
    TRY(remat_ex_alloc_f64(s, part, -1, s->nbl));
    TRY(remat_ex_alloc_f64(s, total, -1, 1));
    TRY(recv_alloc(s, recv, -1, 2 * s->nbl));
    if (DATA(s)) {
        ACT_KERNEL(s, loss_blocks, s->be->ctx, dptr(part), fptr(rate), out, (const int32_t *)s->labels.ptr, m->loss,
                   m->T, m->N, m->classes, s->nbl);
        TRY(remat_reduce_fold_f64(s->shard, dptr(total), dptr(part), dptr(recv), 1, s->err));
        *loss = remat_ref_loss_value(dptr(total)[0], m->loss, s->n_total, m->classes);
    }
    return REMAT_OK;
}

static int sample_sum_grads(const remat_session *s, int j) {
    const remat_layer_step *st = remat_layer_step_of(s->m->layers[j].type);
    return st && st->sample_sum_grads;
}

static int n_grads(const remat_layer *l) { return l->has_bias ? 2 : 1; }

remat_status remat_ex_shard_grads_begin(remat_session *s, int first, int n) {
    for (int j = first; s->shard && j < first + n; j++) {
        if (!sample_sum_grads(s, j)) continue;
        const remat_layer *l = &s->m->layers[j];
        for (int i = 0; i < n_grads(l); i++) {
            remat_tensor *a = &s->gacc[j * 2 + i];
            remat_ex_describe_vec(s, a, REMAT_ROLE_WORKSPACE, j, s->nbl * remat_layer_param_elems(l, i));
            TRY(remat_ex_alloc(s, a));
            TRY(remat_ex_zero(s, a));
        }
    }
    return REMAT_OK;
}

remat_status remat_ex_shard_grads_end(remat_session *s, int first, int n) {
    for (int j = first; s->shard && j < first + n; j++) {
        if (!sample_sum_grads(s, j)) continue;
        const remat_layer *l = &s->m->layers[j];
        for (int i = 0; i < n_grads(l); i++) {
            remat_tensor *a = &s->gacc[j * 2 + i], recv;
            int64_t elems = remat_layer_param_elems(l, i);
            TRY(recv_alloc(s, &recv, j, s->nbl * elems));
            op_t op;
            remat_ex_op_begin(s, &op, REMAT_OP_COPY, j, l->block, 0, s->nbl * elems);
            if (DATA(s))
                TRY(remat_reduce_fold_f32(s->shard, fptr(&s->grad[j * MAXP + i]), fptr(a), fptr(&recv), elems,
                                          s->err));
            TRY(remat_ex_op_end(s, &op));
            TRY(remat_ex_free(s, &recv));
            TRY(remat_ex_free(s, a));
        }
    }
    return REMAT_OK;
}
