/* layer_steps.c - what each layer type does over one time chunk: the tensors it
 * allocates, the op kinds it records and the backend kernels it calls, forward and
 * backward (contract in session.h). The only file of the executor that knows a
 * layer's type; the schedule (executor.c) calls remat_layer_step_of(type).
 *
 * Conventions: rows = tc * N; an op's `elems` is rows times the features of its main
 * output (forward: the layer's output, backward: the gradient it writes: linear, conv,
 * pooling and flatten their input's, the rest their output's). Kernels run only on a
 * backend with data; the dry backend (the simulator) sees the same allocations and ops.
 */
#include <string.h>

#include "core/base/bf16.h"
#include "core/exec/session.h"
#include "core/ref/ref_kernels.h" /* the conv workspaces: remat_ref_conv2d_*_ws_elems, remat_conv2d_im2col_* */

#define DATA(s) ((s)->ops->has_data)

/* The floats conv layer j's forward (backward) needs as workspace on this backend. */
static int64_t conv_ws_elems(const remat_session *s, const remat_conv_geom *g, int backward) {
    if (s->ops->conv_im2col)
        return backward ? remat_conv2d_im2col_backward_ws_elems(g) : remat_conv2d_im2col_forward_ws_elems(g);
    return backward ? remat_ref_conv2d_backward_ws_elems(g) : remat_ref_conv2d_forward_ws_elems(g);
}

/* A workspace of `elems` floats for one op of layer j (a real allocation: traced). */
static remat_status ws_alloc(remat_session *s, remat_tensor *t, int j, int64_t elems) {
    remat_ex_describe_vec(s, t, REMAT_ROLE_WORKSPACE, j, elems > 0 ? elems : 1);
    return remat_ex_alloc(s, t);
}

/* The weight (and bias, NULL without one) that linear/conv layer j multiplies with:
 * the fp32 masters, or in a bf16 model the step's bf16 copies of them, made at the
 * layer's first forward of the step (allocated, as autocast's cache holds them) and
 * freed after its backward (executor.c's segment_backward). */
static remat_status gemm_weights(remat_session *s, int j, const void **w, const void **b) {
    const remat_layer *l = &s->m->layers[j];
    int np = l->has_bias ? 2 : 1;
    const remat_tensor *prm = &s->param[j * MAXP];
    remat_tensor *wc = &s->wcast[j * 2];
    if (s->bf16 && wc[0].id < 0) {
        for (int i = 0; i < np; i++) {
            remat_tensor_describe(&wc[i], REMAT_ENC_BF16, REMAT_ROLE_PARAMETER, j, l->block, prm[i].ndim, prm[i].dims,
                                  -1, -1, -1);
            TRY(remat_ex_alloc(s, &wc[i]));
            op_t op;
            remat_ex_op_begin(s, &op, REMAT_OP_COPY, j, l->block, 0, wc[i].elems);
            if (DATA(s)) s->ops->bf16_from_f32(s->be->ctx, wc[i].ptr, fptr(&prm[i]), wc[i].elems);
            TRY(remat_ex_op_end(s, &op));
        }
    }
    const remat_tensor *src = s->bf16 ? wc : prm;
    *w = src[0].ptr;
    *b = l->has_bias ? src[1].ptr : NULL;
    return REMAT_OK;
}

/* On a shard (session.h): each block's weight and bias partials into its own
 * accumulator (s->gacc, combined after the segment's backward by
 * remat_ex_shard_grads_end), defined as the kernel once per (step descending, block).
 * The reference backend's linear_ and conv2d_backward_blocks give those bits in one
 * call, faster. Else (the CUDA backend) the loop itself: its GEMMs' bits may depend on
 * the rows of a call (cuBLAS), so even the input gradient, which is per row, is made
 * by the per-block calls, whose rows are the same for every world size. */
static void gemm_backward_blocked(remat_session *s, const remat_bwd_args *a, const void *w, float *scratch, int conv) {
    const remat_layer *l = &s->m->layers[a->j];
    int64_t N = s->m->N, fin = l->in_features, fout = l->out_features, bs = s->bsz, eb = act_bytes(s);
    int64_t wn = remat_layer_param_elems(l, 0), bn = l->has_bias ? remat_layer_param_elems(l, 1) : 0;
    float *aw = fptr(&s->gacc[a->j * 2]), *ab = l->has_bias ? fptr(&s->gacc[a->j * 2 + 1]) : NULL;
    const void *in = s->ls[a->j].in_ptr;
    remat_conv_geom g = remat_layer_geom(l);
    void *ctx = s->be->ctx;
    const remat_backend_ops *o = s->ops;
    if (conv && (s->bf16 ? o->conv2d_backward_blocks_bf16 != NULL : o->conv2d_backward_blocks != NULL)) {
        ACT_KERNEL(s, conv2d_backward_blocks, ctx, a->dinp, aw, ab, a->dout, in, w, scratch, a->tc, N, s->nbl, &g);
        return;
    }
    if (!conv && (s->bf16 ? o->linear_backward_blocks_bf16 != NULL : o->linear_backward_blocks != NULL)) {
        ACT_KERNEL(s, linear_backward_blocks, ctx, a->dinp, aw, ab, a->dout, in, w, scratch, a->tc, N, s->nbl, fin,
                   fout);
        return;
    }
    for (int64_t t = a->tc - 1; t >= 0; t--)
        for (int b = 0; b < s->nbl; b++) {
            int64_t r0 = t * N + b * bs;
            void *dx = a->dinp ? (char *)a->dinp + r0 * fin * eb : NULL;
            const void *dy = (const char *)a->dout + r0 * fout * eb;
            const void *x = (const char *)in + r0 * fin * eb;
            float *dwb = aw + b * wn, *dbb = ab ? ab + b * bn : NULL;
            if (conv)
                ACT_KERNEL(s, conv2d_backward, ctx, dx, dwb, dbb, dy, x, w, scratch, 1, bs, &g);
            else
                ACT_KERNEL(s, linear_backward, ctx, dx, dwb, dbb, dy, x, w, scratch, 1, bs, fin, fout);
        }
}

/* Backward of linear and conv2d: the weight and bias gradients accumulate across
 * chunks; the REORDER_WGRAD fault adds a chunk's partial sums as one instead. */
static remat_status gemm_backward(remat_session *s, const remat_bwd_args *a, int conv) {
    const remat_layer *l = &s->m->layers[a->j];
    layer_state *st = &s->ls[a->j];
    int64_t N = s->m->N, rows = a->tc * N, fin = l->in_features, fout = l->out_features;
    remat_conv_geom g = remat_layer_geom(l);
    void *ctx = s->be->ctx;
    int j = a->j;
    remat_tensor scratch, tw, tb;
    int64_t wn = remat_layer_param_elems(l, 0);
    TRY(ws_alloc(s, &scratch, j, conv ? conv_ws_elems(s, &g, 1) : fin * fout + fout));
    float *dw = fptr(&s->grad[j * MAXP]);
    float *db = l->has_bias ? fptr(&s->grad[j * MAXP + 1]) : NULL;
    int reorder = a->chunked && s->o.fault == REMAT_FAULT_REORDER_WGRAD;
    if (reorder) { /* deliberate break: the chunk's partial sums are added as one */
        remat_ex_describe_vec(s, &tw, REMAT_ROLE_WORKSPACE, j, wn);
        remat_ex_describe_vec(s, &tb, REMAT_ROLE_WORKSPACE, j, l->out.c);
        TRY(remat_ex_alloc(s, &tw));
        TRY(remat_ex_alloc(s, &tb));
        TRY(remat_ex_zero(s, &tw));
        TRY(remat_ex_zero(s, &tb));
    }
    float *w_to = reorder ? fptr(&tw) : dw, *b_to = reorder ? (db ? fptr(&tb) : NULL) : db;
    op_t op;
    remat_ex_op_begin(s, &op, conv ? REMAT_OP_CONV_BWD : REMAT_OP_LINEAR_BWD, j, l->block, a->tc, rows * fin);
    const void *w = s->bf16 ? s->wcast[j * 2].ptr : s->param[j * MAXP].ptr; /* what forward multiplied with */
    if (DATA(s) && s->shard)
        gemm_backward_blocked(s, a, w, fptr(&scratch), conv);
    else if (DATA(s) && conv)
        ACT_KERNEL(s, conv2d_backward, ctx, a->dinp, w_to, b_to, a->dout, st->in_ptr, w, fptr(&scratch), a->tc, N,
                   &g);
    else if (DATA(s))
        ACT_KERNEL(s, linear_backward, ctx, a->dinp, w_to, b_to, a->dout, st->in_ptr, w, fptr(&scratch), a->tc, N,
                   fin, fout);
    TRY(remat_ex_op_end(s, &op));
    if (reorder) {
        if (DATA(s)) {
            s->ops->add_forward(ctx, dw, dw, fptr(&tw), wn);
            if (db) s->ops->add_forward(ctx, db, db, fptr(&tb), l->out.c);
        }
        TRY(remat_ex_free(s, &tb));
        TRY(remat_ex_free(s, &tw));
    }
    return remat_ex_free(s, &scratch);
}

/* ---- linear ------------------------------------------------------------------------ */

static remat_status linear_fwd(remat_session *s, const remat_fwd_args *a) {
    const remat_layer *l = &s->m->layers[a->j];
    const void *w, *b;
    TRY(gemm_weights(s, a->j, &w, &b));
    op_t op;
    int64_t rows = a->tc * s->m->N;
    remat_ex_op_begin(s, &op, REMAT_OP_LINEAR_FWD, a->j, l->block, a->tc, rows * l->out_features);
    if (DATA(s))
        ACT_KERNEL(s, linear_forward, s->be->ctx, a->out, a->in, w, b, rows, l->in_features, l->out_features);
    return remat_ex_op_end(s, &op);
}

static remat_status linear_bwd(remat_session *s, const remat_bwd_args *a) { return gemm_backward(s, a, 0); }

static int has_linear(const remat_backend_ops *o) { return o->linear_forward && o->linear_backward; }

/* ---- conv2d ------------------------------------------------------------------------ */

static remat_status conv2d_fwd(remat_session *s, const remat_fwd_args *a) {
    const remat_layer *l = &s->m->layers[a->j];
    remat_conv_geom g = remat_layer_geom(l);
    const void *w, *b;
    TRY(gemm_weights(s, a->j, &w, &b));
    remat_tensor ws;
    TRY(ws_alloc(s, &ws, a->j, conv_ws_elems(s, &g, 0)));
    op_t op;
    int64_t rows = a->tc * s->m->N;
    remat_ex_op_begin(s, &op, REMAT_OP_CONV_FWD, a->j, l->block, a->tc, rows * l->out_features);
    if (DATA(s)) ACT_KERNEL(s, conv2d_forward, s->be->ctx, a->out, a->in, w, b, fptr(&ws), rows, &g);
    TRY(remat_ex_op_end(s, &op));
    return remat_ex_free(s, &ws);
}

static remat_status conv2d_bwd(remat_session *s, const remat_bwd_args *a) { return gemm_backward(s, a, 1); }

static int has_conv2d(const remat_backend_ops *o) { return o->conv2d_forward && o->conv2d_backward; }

/* ---- pooling ----------------------------------------------------------------------- */

/* One pooling op (max: 1, average: 0) forward or backward; the kernels take the
 * geometry, max pooling's backward also the saved input. */
static remat_status pool_op(remat_session *s, int j, int64_t tc, int max, int backward, void *y, const void *x,
                            const void *dout) {
    const remat_layer *l = &s->m->layers[j];
    remat_conv_geom g = remat_layer_geom(l);
    int64_t rows = tc * s->m->N;
    op_t op;
    remat_ex_op_begin(s, &op, backward ? REMAT_OP_POOL_BWD : REMAT_OP_POOL_FWD, j, l->block, tc,
                      rows * (backward ? l->in_features : l->out_features));
    if (DATA(s) && !backward && max) ACT_KERNEL(s, maxpool2d_forward, s->be->ctx, y, x, rows, &g);
    if (DATA(s) && !backward && !max) ACT_KERNEL(s, avgpool2d_forward, s->be->ctx, y, x, rows, &g);
    if (DATA(s) && backward && max) ACT_KERNEL(s, maxpool2d_backward, s->be->ctx, y, dout, x, rows, &g);
    if (DATA(s) && backward && !max) ACT_KERNEL(s, avgpool2d_backward, s->be->ctx, y, dout, rows, &g);
    return remat_ex_op_end(s, &op);
}

static remat_status maxpool2d_fwd(remat_session *s, const remat_fwd_args *a) {
    return pool_op(s, a->j, a->tc, 1, 0, a->out, a->in, NULL);
}
static remat_status maxpool2d_bwd(remat_session *s, const remat_bwd_args *a) {
    return pool_op(s, a->j, a->tc, 1, 1, a->dinp, s->ls[a->j].in_ptr, a->dout);
}
static int has_maxpool2d(const remat_backend_ops *o) { return o->maxpool2d_forward && o->maxpool2d_backward; }

static remat_status avgpool2d_fwd(remat_session *s, const remat_fwd_args *a) {
    return pool_op(s, a->j, a->tc, 0, 0, a->out, a->in, NULL);
}
static remat_status avgpool2d_bwd(remat_session *s, const remat_bwd_args *a) {
    return pool_op(s, a->j, a->tc, 0, 1, a->dinp, NULL, a->dout);
}
static int has_avgpool2d(const remat_backend_ops *o) { return o->avgpool2d_forward && o->avgpool2d_backward; }

/* ---- flatten: a copy forward, an accumulation backward ------------------------------- */

static remat_status flatten_fwd(remat_session *s, const remat_fwd_args *a) {
    const remat_layer *l = &s->m->layers[a->j];
    int64_t n = a->tc * s->m->N * l->out_features;
    op_t op;
    remat_ex_op_begin(s, &op, REMAT_OP_FLATTEN_FWD, a->j, l->block, a->tc, n);
    if (DATA(s)) s->ops->copy(s->be->ctx, a->out, a->in, n * act_bytes(s));
    return remat_ex_op_end(s, &op);
}

static remat_status flatten_bwd(remat_session *s, const remat_bwd_args *a) {
    const remat_layer *l = &s->m->layers[a->j];
    int64_t n = a->tc * s->m->N * l->in_features;
    op_t op;
    remat_ex_op_begin(s, &op, REMAT_OP_FLATTEN_BWD, a->j, l->block, a->tc, n);
    if (DATA(s)) ACT_KERNEL(s, add_forward, s->be->ctx, a->dinp, a->dinp, a->dout, n);
    return remat_ex_op_end(s, &op);
}

/* ---- if / lif: the potential h saved, dL/dv carried across chunks -------------------- */

/* Shared by if/lif and plif: dL/dv allocated and zeroed when the steps are not chunked
 * (chunks carry it); at the end the op closed, the workspace rows (plif; NULL for if/lif),
 * dL/dv unless chunked, and h freed, in that order. */
static remat_status neuron_gv_begin(remat_session *s, const remat_bwd_args *a, layer_state *st, int64_t fout) {
    if (a->chunked) return REMAT_OK;
    remat_ex_describe_state(s, &st->gv, REMAT_ROLE_NEURON_STATE, a->j, fout);
    TRY(remat_ex_alloc(s, &st->gv));
    return remat_ex_zero(s, &st->gv);
}

static remat_status neuron_bwd_end(remat_session *s, const remat_bwd_args *a, layer_state *st, op_t *op,
                                   remat_tensor *rows) {
    TRY(remat_ex_op_end(s, op));
    if (rows) TRY(remat_ex_free(s, rows));
    if (!a->chunked) TRY(remat_ex_free(s, &st->gv));
    return remat_ex_free(s, &st->h);
}

/* if/lif and plif: h (plif: the state each step starts from) saved when the step's input
 * is kept. */
static remat_status neuron_fwd(remat_session *s, const remat_fwd_args *a) {
    const remat_layer *l = &s->m->layers[a->j];
    layer_state *st = &s->ls[a->j];
    int64_t N = s->m->N, fout = l->out_features;
    if (a->keep) {
        remat_ex_describe_act(s, &st->h, REMAT_ROLE_SAVED, a->j, a->tc, fout);
        TRY(remat_ex_alloc(s, &st->h));
    }
    op_t op;
    remat_ex_op_begin(s, &op, REMAT_OP_NEURON_FWD, a->j, l->block, a->tc, a->tc * N * fout);
    float *h = a->keep ? fptr(&st->h) : NULL;
    if (DATA(s) && l->type == REMAT_LAYER_PLIF)
        ACT_KERNEL(s, plif_forward, s->be->ctx, a->out, h, fptr(&st->v), a->in, fptr(&s->param[a->j * MAXP]),
                   &l->neuron, a->tc, N * fout);
    else if (DATA(s))
        ACT_KERNEL(s, neuron_forward, s->be->ctx, a->out, h, fptr(&st->v), a->in, l->type, &l->neuron, a->tc,
                   N * fout);
    return remat_ex_op_end(s, &op);
}

static remat_status neuron_bwd(remat_session *s, const remat_bwd_args *a) {
    const remat_layer *l = &s->m->layers[a->j];
    layer_state *st = &s->ls[a->j];
    int64_t N = s->m->N, fout = l->out_features;
    TRY(neuron_gv_begin(s, a, st, fout));
    op_t op;
    remat_ex_op_begin(s, &op, REMAT_OP_NEURON_BWD, a->j, l->block, a->tc, a->tc * N * fout);
    if (DATA(s))
        ACT_KERNEL(s, neuron_backward, s->be->ctx, a->dinp, fptr(&st->gv), a->dout, fptr(&st->h), l->type,
                   &l->neuron, a->tc, N * fout);
    return neuron_bwd_end(s, a, st, &op, NULL);
}

/* ---- plif: the state each step starts from saved (in h) with the input; w's gradient
 * one partial per step (per block of samples on a shard), added in descending t ---- */

static remat_status plif_bwd(remat_session *s, const remat_bwd_args *a) {
    const remat_layer *l = &s->m->layers[a->j];
    layer_state *st = &s->ls[a->j];
    int64_t N = s->m->N, fout = l->out_features;
    TRY(neuron_gv_begin(s, a, st, fout));
    remat_tensor rows;
    TRY(remat_ex_alloc_f64(s, &rows, a->j, a->tc * N));
    /* on a shard, the per-block accumulators (combined by remat_ex_shard_grads_end) */
    float *dw = s->shard ? fptr(&s->gacc[a->j * 2]) : fptr(&s->grad[a->j * MAXP]);
    op_t op;
    remat_ex_op_begin(s, &op, REMAT_OP_NEURON_BWD, a->j, l->block, a->tc, a->tc * N * fout);
    if (DATA(s))
        ACT_KERNEL(s, plif_backward, s->be->ctx, a->dinp, fptr(&st->gv), dptr(&rows), dw, a->dout, fptr(&st->h),
                   st->in_ptr, fptr(&s->param[a->j * MAXP]), &l->neuron, a->tc, N, fout, s->shard ? s->nbl : 1);
    return neuron_bwd_end(s, a, st, &op, &rows);
}

static int has_plif(const remat_backend_ops *o) { return o->plif_forward && o->plif_backward; }

/* ---- batchnorm: mean and rstd saved (a workspace when not kept) ---------------------- */

/* On a shard: per-block sums, combined; the squared deviations from the global mean,
 * combined; then the normalisation (batchnorm.c's block pieces). */
static remat_status batchnorm_fwd_blocked(remat_session *s, const remat_fwd_args *a, int update) {
    const remat_layer *l = &s->m->layers[a->j];
    layer_state *st = &s->ls[a->j];
    const remat_tensor *prm = &s->param[a->j * MAXP];
    int64_t C = l->in.c, hw = l->in.h * l->in.w, N = s->m->N, n = a->tc * s->n_total * hw;
    remat_tensor loc, sum, sq;
    TRY(remat_ex_alloc_f64(s, &loc, a->j, s->nbl * C));
    op_t op;
    remat_ex_op_begin(s, &op, REMAT_OP_BATCHNORM_FWD, a->j, l->block, a->tc, a->tc * N * l->out_features);
    if (DATA(s)) TRY(remat_ex_k_bn_block_sums(s, dptr(&loc), a->in, NULL, 0, a->tc, N, C, hw));
    TRY(remat_ex_fold_f64(s, a->j, &loc, C, &sum));
    if (DATA(s)) TRY(remat_ex_k_bn_block_sums(s, dptr(&loc), a->in, dptr(&sum), n, a->tc, N, C, hw));
    TRY(remat_ex_fold_f64(s, a->j, &loc, C, &sq));
    if (DATA(s))
        TRY(remat_ex_k_bn_block_apply(s, a->out, fptr(&st->mean), fptr(&st->rstd), update ? fptr(&prm[2]) : NULL,
                                      update ? fptr(&prm[3]) : NULL, a->in, fptr(&prm[0]), fptr(&prm[1]), dptr(&sum),
                                      dptr(&sq), n, a->tc * N, C, hw, l->bn.momentum, l->bn.eps));
    TRY(remat_ex_op_end(s, &op));
    TRY(remat_ex_free(s, &sq));
    TRY(remat_ex_free(s, &sum));
    return remat_ex_free(s, &loc);
}

/* On a shard: the per-block sums of dy and dy * x_hat, combined, give the weight and
 * bias gradients (global on every rank: not combined again) and the input gradient. */
static remat_status batchnorm_bwd_blocked(remat_session *s, const remat_bwd_args *a) {
    const remat_layer *l = &s->m->layers[a->j];
    layer_state *st = &s->ls[a->j];
    const remat_tensor *prm = &s->param[a->j * MAXP];
    int64_t C = l->in.c, hw = l->in.h * l->in.w, N = s->m->N, n = a->tc * s->n_total * hw;
    remat_tensor l1, l2, sdy, sdyx;
    TRY(remat_ex_alloc_f64(s, &l1, a->j, s->nbl * C));
    TRY(remat_ex_alloc_f64(s, &l2, a->j, s->nbl * C));
    op_t op;
    remat_ex_op_begin(s, &op, REMAT_OP_BATCHNORM_BWD, a->j, l->block, a->tc, a->tc * N * l->out_features);
    if (DATA(s))
        TRY(remat_ex_k_bn_block_backward_sums(s, dptr(&l1), dptr(&l2), a->dout, st->in_ptr, fptr(&st->mean),
                                              fptr(&st->rstd), a->tc, N, C, hw));
    TRY(remat_ex_fold_f64(s, a->j, &l1, C, &sdy));
    TRY(remat_ex_fold_f64(s, a->j, &l2, C, &sdyx));
    if (DATA(s))
        TRY(remat_ex_k_bn_block_backward_apply(s, a->dinp, fptr(&s->grad[a->j * MAXP]),
                                               fptr(&s->grad[a->j * MAXP + 1]), a->dout, st->in_ptr, fptr(&prm[0]),
                                               fptr(&st->mean), fptr(&st->rstd), dptr(&sdy), dptr(&sdyx), n,
                                               a->tc * N, C, hw));
    TRY(remat_ex_op_end(s, &op));
    TRY(remat_ex_free(s, &sdyx));
    TRY(remat_ex_free(s, &sdy));
    TRY(remat_ex_free(s, &l2));
    TRY(remat_ex_free(s, &l1));
    TRY(remat_ex_free(s, &st->rstd));
    return remat_ex_free(s, &st->mean);
}

static remat_status batchnorm_fwd(remat_session *s, const remat_fwd_args *a) {
    const remat_layer *l = &s->m->layers[a->j];
    layer_state *st = &s->ls[a->j];
    const remat_tensor *prm = &s->param[a->j * MAXP];
    int64_t rows = a->tc * s->m->N;
    remat_role role = a->keep ? REMAT_ROLE_SAVED : REMAT_ROLE_WORKSPACE;
    remat_ex_describe_vec(s, &st->mean, role, a->j, l->in.c);
    remat_ex_describe_vec(s, &st->rstd, role, a->j, l->in.c);
    TRY(remat_ex_alloc(s, &st->mean));
    TRY(remat_ex_alloc(s, &st->rstd));
    int update = !a->recompute || s->o.fault == REMAT_FAULT_BN_DOUBLE_UPDATE;
    if (s->shard) {
        TRY(batchnorm_fwd_blocked(s, a, update));
    } else {
    op_t op;
    remat_ex_op_begin(s, &op, REMAT_OP_BATCHNORM_FWD, a->j, l->block, a->tc, rows * l->out_features);
    if (DATA(s))
        ACT_KERNEL(s, batchnorm_forward, s->be->ctx, a->out, fptr(&st->mean), fptr(&st->rstd),
                   update ? fptr(&prm[2]) : NULL, update ? fptr(&prm[3]) : NULL, a->in, fptr(&prm[0]), fptr(&prm[1]),
                   rows, l->in.c, l->in.h * l->in.w, l->bn.momentum,
                   l->bn.eps);
    TRY(remat_ex_op_end(s, &op));
    }
    if (!a->keep) {
        TRY(remat_ex_free(s, &st->rstd));
        TRY(remat_ex_free(s, &st->mean));
    }
    return REMAT_OK;
}

static remat_status batchnorm_bwd(remat_session *s, const remat_bwd_args *a) {
    const remat_layer *l = &s->m->layers[a->j];
    layer_state *st = &s->ls[a->j];
    const remat_tensor *prm = &s->param[a->j * MAXP];
    int64_t rows = a->tc * s->m->N;
    if (s->shard) return batchnorm_bwd_blocked(s, a);
    op_t op;
    remat_ex_op_begin(s, &op, REMAT_OP_BATCHNORM_BWD, a->j, l->block, a->tc, rows * l->out_features);
    if (DATA(s))
        ACT_KERNEL(s, batchnorm_backward, s->be->ctx, a->dinp, fptr(&s->grad[a->j * MAXP]),
                   fptr(&s->grad[a->j * MAXP + 1]), a->dout, st->in_ptr, fptr(&prm[0]), fptr(&st->mean),
                   fptr(&st->rstd), rows, l->in.c, l->in.h * l->in.w);
    TRY(remat_ex_op_end(s, &op));
    TRY(remat_ex_free(s, &st->rstd));
    return remat_ex_free(s, &st->mean);
}

/* ---- add ----------------------------------------------------------------------------- */

static remat_status add_fwd(remat_session *s, const remat_fwd_args *a) {
    const remat_layer *l = &s->m->layers[a->j];
    int64_t n = a->tc * s->m->N * l->out_features;
    op_t op;
    remat_ex_op_begin(s, &op, REMAT_OP_ADD_FWD, a->j, l->block, a->tc, n);
    if (DATA(s)) ACT_KERNEL(s, add_forward, s->be->ctx, a->out, a->in2, a->in, n);
    return remat_ex_op_end(s, &op);
}

static remat_status add_bwd(remat_session *s, const remat_bwd_args *a) {
    const remat_layer *l = &s->m->layers[a->j];
    int64_t n = a->tc * s->m->N * l->out_features;
    op_t op;
    remat_ex_op_begin(s, &op, REMAT_OP_ADD_BWD, a->j, l->block, a->tc, n);
    if (DATA(s)) ACT_KERNEL(s, add_backward, s->be->ctx, a->dinp2, a->dinp, a->dout, n);
    return remat_ex_op_end(s, &op);
}

/* ---- dropout: the mask redrawn from (seed, iter, layer), never stored ------------------ */

static remat_status dropout_fwd(remat_session *s, const remat_fwd_args *a) {
    const remat_layer *l = &s->m->layers[a->j];
    int64_t N = s->m->N, fout = l->out_features;
    uint64_t it = (uint64_t)s->iter;
    if (a->recompute && s->o.fault == REMAT_FAULT_REDRAW_DROPOUT) it += 7919;
    op_t op;
    remat_ex_op_begin(s, &op, REMAT_OP_DROPOUT_FWD, a->j, l->block, a->tc, a->tc * N * fout);
    if (DATA(s) && s->shard) /* the mask counters of this rank's samples in the global batch */
        TRY(remat_ex_k_dropout_at(s, 0, a->out, a->in, it, a->j, l->p, a->tc, N * fout, s->sample0 * fout));
    else if (DATA(s))
        ACT_KERNEL(s, dropout_forward, s->be->ctx, a->out, a->in, s->o.seed, it, a->j, l->p, a->tc, N * fout);
    return remat_ex_op_end(s, &op);
}

static remat_status dropout_bwd(remat_session *s, const remat_bwd_args *a) {
    const remat_layer *l = &s->m->layers[a->j];
    int64_t N = s->m->N, fout = l->out_features;
    op_t op;
    remat_ex_op_begin(s, &op, REMAT_OP_DROPOUT_BWD, a->j, l->block, a->tc, a->tc * N * fout);
    if (DATA(s) && s->shard)
        TRY(remat_ex_k_dropout_at(s, 1, a->dinp, a->dout, (uint64_t)s->iter, a->j, l->p, a->tc, N * fout,
                                  s->sample0 * fout));
    else if (DATA(s))
        ACT_KERNEL(s, dropout_backward, s->be->ctx, a->dinp, a->dout, s->o.seed, (uint64_t)s->iter, a->j, l->p, a->tc,
                   N * fout);
    return remat_ex_op_end(s, &op);
}

/* ---- the table ----------------------------------------------------------------------- */

static const remat_layer_step steps[] = {
    [REMAT_LAYER_LINEAR] = {linear_fwd, linear_bwd, has_linear, 1},
    [REMAT_LAYER_IF] = {neuron_fwd, neuron_bwd, NULL},
    [REMAT_LAYER_LIF] = {neuron_fwd, neuron_bwd, NULL},
    [REMAT_LAYER_BATCHNORM] = {batchnorm_fwd, batchnorm_bwd, NULL},
    [REMAT_LAYER_ADD] = {add_fwd, add_bwd, NULL},
    [REMAT_LAYER_DROPOUT] = {dropout_fwd, dropout_bwd, NULL},
    [REMAT_LAYER_CONV2D] = {conv2d_fwd, conv2d_bwd, has_conv2d, 1},
    [REMAT_LAYER_MAXPOOL2D] = {maxpool2d_fwd, maxpool2d_bwd, has_maxpool2d},
    [REMAT_LAYER_AVGPOOL2D] = {avgpool2d_fwd, avgpool2d_bwd, has_avgpool2d},
    [REMAT_LAYER_FLATTEN] = {flatten_fwd, flatten_bwd, NULL},
    [REMAT_LAYER_ADAPTIVEAVGPOOL2D] = {avgpool2d_fwd, avgpool2d_bwd, has_avgpool2d}, /* an exact average pool */
    /* [C, L] layers: the 2-D steps and kernels over [C, 1, L] */
    [REMAT_LAYER_CONV1D] = {conv2d_fwd, conv2d_bwd, has_conv2d},
    [REMAT_LAYER_MAXPOOL1D] = {maxpool2d_fwd, maxpool2d_bwd, has_maxpool2d},
    [REMAT_LAYER_AVGPOOL1D] = {avgpool2d_fwd, avgpool2d_bwd, has_avgpool2d},
    [REMAT_LAYER_PLIF] = {neuron_fwd, plif_bwd, has_plif, 1},
};
_Static_assert(sizeof steps / sizeof steps[0] == REMAT_LAYER_COUNT, "an executor step for every layer type");

const remat_layer_step *remat_layer_step_of(remat_layer_type t) {
    return (unsigned)t < REMAT_LAYER_COUNT && steps[t].forward ? &steps[t] : NULL;
}
