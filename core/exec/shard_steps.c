/* shard_steps.c - the executor's side of data parallelism (session.h, reduce.h;
 * docs/determinism.md "Data parallelism"): a shard's batch, the blocked loss, the
 * per-block weight-gradient accumulators and their combination. The reductions'
 * buffers are workspaces through the allocator models, so the dry backend (the
 * simulator) sees them; data moves only on a backend with data.
 *
 * A backend with the blocked kernels of backend.h (the reference backend) runs them on
 * its own memory, which the combination reads directly. Any other (the CUDA backend)
 * gets the same arithmetic over host copies: the operands copied to the host, the
 * reference kernel run there, the results copied back, and the combination made on
 * host copies of the partial sums; the bits are the reference backend's. */
#include <string.h>

#include "core/base/rng.h"
#include "core/exec/session.h"
#include "core/ref/ref_kernels.h" /* the host draws of the global batch, remat_ref_loss_value */

#define DATA(s) ((s)->ops->has_data)

/* The backend runs the blocked kernels itself, on host-addressable memory. */
static int native(const remat_session *s) {
    const remat_backend_ops *o = s->ops;
    return o->bn_block_sums && o->bn_block_apply && o->bn_block_backward_sums && o->bn_block_backward_apply &&
           o->loss_blocks && o->loss_backward_n && o->dropout_forward_at && o->dropout_backward_at &&
           o->bn_block_sums_bf16 && o->bn_block_apply_bf16 && o->bn_block_backward_sums_bf16 &&
           o->bn_block_backward_apply_bf16 && o->loss_blocks_bf16 && o->loss_backward_n_bf16 &&
           o->dropout_forward_at_bf16 && o->dropout_backward_at_bf16;
}

/* ---- host copies for a backend without the blocked kernels ------------------------- */

typedef struct stage {
    const void *dev; /* device pointer (NULL: none) */
    int64_t bytes;
    int in, out;     /* copied to the host before, back after */
    void *host;
} stage;

static remat_status stage_in(remat_session *s, stage *b, int n) {
    for (int i = 0; i < n; i++) b[i].host = NULL;
    for (int i = 0; i < n; i++) {
        if (!b[i].dev) continue;
        b[i].host = remat_xmalloc((size_t)(b[i].bytes > 0 ? b[i].bytes : 1), s->err);
        if (!b[i].host) return REMAT_ERR_NOMEM;
        if (b[i].in && b[i].bytes > 0) s->ops->to_host(s->be->ctx, b[i].host, b[i].dev, b[i].bytes);
    }
    return REMAT_OK;
}

static void stage_out(remat_session *s, stage *b, int n) {
    for (int i = 0; i < n; i++) {
        if (b[i].host && b[i].out && b[i].bytes > 0) s->ops->from_host(s->be->ctx, (void *)b[i].dev, b[i].host, b[i].bytes);
        remat_xfree(b[i].host);
        b[i].host = NULL;
    }
}

#define H(i) (b[i].host)
#define NB (int)(sizeof b / sizeof b[0])
#define STAGED(call)                        \
    do {                                    \
        remat_status st_ = stage_in(s, b, NB); \
        if (st_ == REMAT_OK) call;          \
        stage_out(s, b, NB);                \
        return st_;                         \
    } while (0)

remat_status remat_ex_k_dropout_at(remat_session *s, int backward, void *dst, const void *src, uint64_t iter, int layer,
                                   float p, int64_t t_steps, int64_t nf, int64_t c0) {
    void *ctx = s->be->ctx;
    uint64_t seed = s->o.seed;
    if (native(s)) {
        if (backward) ACT_KERNEL(s, dropout_backward_at, ctx, dst, src, seed, iter, layer, p, t_steps, nf, c0);
        else ACT_KERNEL(s, dropout_forward_at, ctx, dst, src, seed, iter, layer, p, t_steps, nf, c0);
        return REMAT_OK;
    }
    int64_t bytes = t_steps * nf * act_bytes(s);
    stage b[] = {{dst, bytes, backward, 1, NULL}, {src, bytes, 1, 0, NULL}};
    if (s->bf16 && backward) STAGED(remat_ref_dropout_backward_at_bf16(H(0), H(1), seed, iter, layer, p, t_steps, nf, c0));
    if (s->bf16) STAGED(remat_ref_dropout_forward_at_bf16(H(0), H(1), seed, iter, layer, p, t_steps, nf, c0));
    if (backward) STAGED(remat_ref_dropout_backward_at(H(0), H(1), seed, iter, layer, p, t_steps, nf, c0));
    STAGED(remat_ref_dropout_forward_at(H(0), H(1), seed, iter, layer, p, t_steps, nf, c0));
}

remat_status remat_ex_k_bn_block_sums(remat_session *s, double *sum, const void *inp, const double *mu_total,
                                      int64_t n, int64_t T, int64_t N, int64_t C, int64_t hw) {
    if (native(s)) {
        ACT_KERNEL(s, bn_block_sums, s->be->ctx, sum, inp, mu_total, n, T, N, s->nbl, C, hw);
        return REMAT_OK;
    }
    stage b[] = {{sum, s->nbl * C * 8, 0, 1, NULL}, {inp, T * N * C * hw * act_bytes(s), 1, 0, NULL},
                 {mu_total, C * 8, 1, 0, NULL}};
    if (s->bf16) STAGED(remat_ref_bn_block_sums_bf16(H(0), H(1), H(2), n, T, N, s->nbl, C, hw));
    STAGED(remat_ref_bn_block_sums(H(0), H(1), H(2), n, T, N, s->nbl, C, hw));
}

remat_status remat_ex_k_bn_block_apply(remat_session *s, void *out, float *mean, float *rstd, float *rm, float *rv,
                                       const void *inp, const float *w, const float *bias, const double *sum,
                                       const double *sq, int64_t n, int64_t rows, int64_t C, int64_t hw, float momentum,
                                       double eps) {
    if (native(s)) {
        ACT_KERNEL(s, bn_block_apply, s->be->ctx, out, mean, rstd, rm, rv, inp, w, bias, sum, sq, n, rows, C, hw,
                   momentum, eps);
        return REMAT_OK;
    }
    int64_t ab = rows * C * hw * act_bytes(s);
    stage b[] = {{out, ab, 0, 1, NULL},   {mean, C * 4, 0, 1, NULL}, {rstd, C * 4, 0, 1, NULL},
                 {rm, C * 4, 1, 1, NULL}, {rv, C * 4, 1, 1, NULL},   {inp, ab, 1, 0, NULL},
                 {w, C * 4, 1, 0, NULL},  {bias, C * 4, 1, 0, NULL}, {sum, C * 8, 1, 0, NULL},
                 {sq, C * 8, 1, 0, NULL}};
    if (s->bf16)
        STAGED(remat_ref_bn_block_apply_bf16(H(0), H(1), H(2), H(3), H(4), H(5), H(6), H(7), H(8), H(9), n, rows, C, hw,
                                             momentum, eps));
    STAGED(remat_ref_bn_block_apply(H(0), H(1), H(2), H(3), H(4), H(5), H(6), H(7), H(8), H(9), n, rows, C, hw,
                                    momentum, eps));
}

remat_status remat_ex_k_bn_block_backward_sums(remat_session *s, double *sdy, double *sdyx, const void *dout,
                                               const void *inp, const float *mean, const float *rstd, int64_t T,
                                               int64_t N, int64_t C, int64_t hw) {
    if (native(s)) {
        ACT_KERNEL(s, bn_block_backward_sums, s->be->ctx, sdy, sdyx, dout, inp, mean, rstd, T, N, s->nbl, C, hw);
        return REMAT_OK;
    }
    int64_t ab = T * N * C * hw * act_bytes(s);
    stage b[] = {{sdy, s->nbl * C * 8, 0, 1, NULL}, {sdyx, s->nbl * C * 8, 0, 1, NULL}, {dout, ab, 1, 0, NULL},
                 {inp, ab, 1, 0, NULL},             {mean, C * 4, 1, 0, NULL},           {rstd, C * 4, 1, 0, NULL}};
    if (s->bf16) STAGED(remat_ref_bn_block_backward_sums_bf16(H(0), H(1), H(2), H(3), H(4), H(5), T, N, s->nbl, C, hw));
    STAGED(remat_ref_bn_block_backward_sums(H(0), H(1), H(2), H(3), H(4), H(5), T, N, s->nbl, C, hw));
}

remat_status remat_ex_k_bn_block_backward_apply(remat_session *s, void *dinp, float *dw, float *db, const void *dout,
                                                const void *inp, const float *w, const float *mean, const float *rstd,
                                                const double *sdy, const double *sdyx, int64_t n, int64_t rows,
                                                int64_t C, int64_t hw) {
    if (native(s)) {
        ACT_KERNEL(s, bn_block_backward_apply, s->be->ctx, dinp, dw, db, dout, inp, w, mean, rstd, sdy, sdyx, n, rows,
                   C, hw);
        return REMAT_OK;
    }
    int64_t ab = rows * C * hw * act_bytes(s);
    stage b[] = {{dinp, ab, 1, 1, NULL},   {dw, C * 4, 1, 1, NULL},   {db, C * 4, 1, 1, NULL},
                 {dout, ab, 1, 0, NULL},   {inp, ab, 1, 0, NULL},     {w, C * 4, 1, 0, NULL},
                 {mean, C * 4, 1, 0, NULL}, {rstd, C * 4, 1, 0, NULL}, {sdy, C * 8, 1, 0, NULL},
                 {sdyx, C * 8, 1, 0, NULL}};
    if (s->bf16)
        STAGED(remat_ref_bn_block_backward_apply_bf16(H(0), H(1), H(2), H(3), H(4), H(5), H(6), H(7), H(8), H(9), n, rows,
                                                      C, hw));
    STAGED(remat_ref_bn_block_backward_apply(H(0), H(1), H(2), H(3), H(4), H(5), H(6), H(7), H(8), H(9), n, rows, C,
                                             hw));
}

remat_status remat_ex_k_loss_backward_n(remat_session *s, void *dout, const float *rate) {
    const remat_model *m = s->m;
    const int32_t *labels = (const int32_t *)s->labels.ptr;
    if (native(s)) {
        ACT_KERNEL(s, loss_backward_n, s->be->ctx, dout, rate, labels, m->loss, m->T, m->N, m->classes, s->n_total);
        return REMAT_OK;
    }
    stage b[] = {{dout, m->T * m->N * m->classes * act_bytes(s), 1, 1, NULL},
                 {rate, m->N * m->classes * 4, 1, 0, NULL},
                 {labels, m->N * 4, 1, 0, NULL}};
    if (s->bf16) STAGED(remat_ref_loss_backward_n_bf16(H(0), H(1), H(2), m->loss, m->T, m->N, m->classes, s->n_total));
    STAGED(remat_ref_loss_backward_n(H(0), H(1), H(2), m->loss, m->T, m->N, m->classes, s->n_total));
}

static remat_status k_loss_blocks(remat_session *s, double *part, float *rate, const void *out) {
    const remat_model *m = s->m;
    const int32_t *labels = (const int32_t *)s->labels.ptr;
    if (native(s)) {
        ACT_KERNEL(s, loss_blocks, s->be->ctx, part, rate, out, labels, m->loss, m->T, m->N, m->classes, s->nbl);
        return REMAT_OK;
    }
    stage b[] = {{part, s->nbl * 8, 0, 1, NULL},
                 {rate, m->N * m->classes * 4, 0, 1, NULL},
                 {out, m->T * m->N * m->classes * act_bytes(s), 1, 0, NULL},
                 {labels, m->N * 4, 1, 0, NULL}};
    if (s->bf16) STAGED(remat_ref_loss_blocks_bf16(H(0), H(1), H(2), H(3), m->loss, m->T, m->N, m->classes, s->nbl));
    STAGED(remat_ref_loss_blocks(H(0), H(1), H(2), H(3), m->loss, m->T, m->N, m->classes, s->nbl));
}

/* out[0..n) = the combination of local [nbl][n] (elem-byte elements); recv the
 * transport's buffer. On a backend without host memory the three are device tensors,
 * combined through host copies. */
static remat_status fold(remat_session *s, void *out, const void *local, void *recv, int64_t n, int f64) {
    int64_t eb = f64 ? 8 : 4;
    if (native(s)) {
        if (f64) return remat_reduce_fold_f64(s->shard, out, local, recv, n, s->err);
        return remat_reduce_fold_f32(s->shard, out, local, recv, n, s->err);
    }
    int world = s->shard->comm ? s->shard->ranks : 1;
    stage b[] = {{out, n * eb, 0, 1, NULL}, {local, s->nbl * n * eb, 1, 0, NULL},
                 {world > 1 ? local : NULL, s->nbl * n * eb, 0, 0, NULL}};
    if (f64) STAGED(st_ = remat_reduce_fold_f64(s->shard, H(0), H(1), H(2), n, s->err));
    STAGED(st_ = remat_reduce_fold_f32(s->shard, H(0), H(1), H(2), n, s->err));
}

#undef STAGED
#undef NB
#undef H

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
    if (DATA(s)) TRY(fold(s, total->ptr, local->ptr, recv.ptr, n, 1));
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
    else if (m->input_counts_max > 0 && s->bf16)
        remat_ref_fill_counts_bf16(h, all, m->input_counts_max, s->o.seed, REMAT_RNG_INPUT, key);
    else if (m->input_counts_max > 0)
        remat_ref_fill_counts(h, all, m->input_counts_max, s->o.seed, REMAT_RNG_INPUT, key);
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
        TRY(k_loss_blocks(s, dptr(part), fptr(rate), out));
        TRY(fold(s, total->ptr, part->ptr, recv->ptr, 1, 1));
        double t = 0.0;
        s->ops->to_host(s->be->ctx, &t, total->ptr, 8);
        *loss = remat_ref_loss_value(t, m->loss, s->n_total, m->classes);
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
                TRY(fold(s, s->grad[j * MAXP + i].ptr, a->ptr, recv.ptr, elems, 0));
            TRY(remat_ex_op_end(s, &op));
            TRY(remat_ex_free(s, &recv));
            TRY(remat_ex_free(s, a));
        }
    }
    return REMAT_OK;
}
