/* executor.c - one training step under a checkpoint plan (see executor.h for the
 * schedule). The same code drives the reference, CUDA and dry backends: the
 * simulator reproduces a plan's event stream by running this file on the dry
 * backend, so the scheduling rules exist once. */
#include "core/exec/executor.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/codec/compress.h"
#include "core/exec/mem.h"
#include "core/base/rng.h"
#include "core/exec/schedule.h"

#define MAXP 4 /* parameters per layer */

/* Per-layer tensors of the segment chunk being run (forward keeps, backward frees). */
typedef struct layer_state {
    remat_tensor out;     /* internal output (input of the next layer) */
    remat_tensor h;       /* neuron: potential saved for backward */
    remat_tensor mean, rstd;
    remat_tensor v;       /* neuron: membrane state */
    remat_tensor gv;      /* neuron: dL/dv carried between chunks */
    remat_tensor grad;    /* gradient of `out` */
    const float *in_ptr;  /* input rows of the chunk */
    float *out_ptr;       /* output rows of the chunk */
} layer_state;

struct remat_session {
    const remat_model *m;
    const remat_plan *p;
    remat_backend *be;
    const remat_backend_ops *ops;
    remat_exec_opts o;
    remat_schedule sch;
    remat_mem mem;
    remat_tensor *param, *grad, *opt1, *opt2; /* [n_layers * MAXP] */
    int opt_steps;
    remat_tensor input, labels, input_grad;
    remat_tensor *act;       /* [n_segs + 1] segment inputs; act[0] aliases input */
    remat_tensor *comp;      /* [n_segs] compressed inputs */
    remat_tensor *bound;     /* [n_layers * max_k] neuron states at chunk boundaries */
    int max_k;
    layer_state *ls;         /* [n_layers] */
    int iter;
    double t0, vclock;
    remat_step_result *res;
    remat_error *err;
};

/* ---- clock and op records ------------------------------------------------ */

static double clk(remat_session *s) {
    if (s->o.op_cost) return s->vclock;
    return s->ops->now(s->be->ctx) - s->t0;
}

typedef struct {
    remat_op_record r;
} op_t;

static void op_begin(remat_session *s, op_t *op, remat_op_kind kind, int layer, int block, int64_t t_steps,
                     int64_t elems) {
    memset(op, 0, sizeof *op);
    op->r.op = (uint8_t)kind;
    op->r.layer = layer;
    op->r.block = block;
    op->r.iter = s->iter;
    op->r.phase = (uint8_t)s->mem.phase;
    op->r.t_steps = (int32_t)t_steps;
    op->r.elems = elems;
    op->r.t_start = clk(s);
}

static remat_status op_end(remat_session *s, op_t *op) {
    if (s->o.op_cost) s->vclock += s->o.op_cost(s->o.hook_ctx, &op->r);
    op->r.t_end = clk(s);
    s->mem.now_s = op->r.t_end;
    if (s->o.trace && remat_trace_add_op(s->o.trace, &op->r, s->err) < 0) return s->err->status;
    return REMAT_OK;
}

/* ---- tensors ------------------------------------------------------------- */

static remat_status talloc(remat_session *s, remat_tensor *t) {
    s->mem.now_s = clk(s);
    return remat_mem_alloc(&s->mem, t, s->err);
}

static remat_status tfree(remat_session *s, remat_tensor *t) {
    if (t->id < 0) return REMAT_OK;
    s->mem.now_s = clk(s);
    return remat_mem_release(&s->mem, t, s->err);
}

static remat_status tzero(remat_session *s, remat_tensor *t) {
    if (t->bytes <= 0) return REMAT_OK;
    op_t op;
    op_begin(s, &op, REMAT_OP_ZERO, t->layer, t->block, 0, t->elems);
    if (t->ptr) s->ops->zero(s->be->ctx, t->ptr, t->bytes);
    return op_end(s, &op);
}

/* A [t, N, F] float activation of layer `layer`. */
static void describe_act(remat_session *s, remat_tensor *t, remat_role role, int layer, int64_t t_steps,
                         int64_t feats) {
    int64_t dims[3] = {t_steps, s->m->N, feats};
    int block = layer >= 0 ? s->m->layers[layer].block : -1;
    remat_tensor_describe(t, REMAT_ENC_F32, role, layer, block, 3, dims, 0, 1, -1);
}

/* A per-sample [N, F] state of layer `layer`. */
static void describe_state(remat_session *s, remat_tensor *t, remat_role role, int layer, int64_t feats) {
    int64_t dims[2] = {s->m->N, feats};
    remat_tensor_describe(t, REMAT_ENC_F32, role, layer, s->m->layers[layer].block, 2, dims, -1, 0, -1);
}

static void describe_vec(remat_session *s, remat_tensor *t, remat_role role, int layer, int64_t n) {
    int64_t dims[1] = {n};
    int block = layer >= 0 ? s->m->layers[layer].block : -1;
    remat_tensor_describe(t, REMAT_ENC_F32, role, layer, block, 1, dims, -1, -1, -1);
}

static float *fptr(const remat_tensor *t) { return (float *)t->ptr; }

/* Pointer `elems` floats into p (NULL stays NULL: the dry backend has no memory). */
static float *off(float *p, int64_t elems) { return p ? p + elems : NULL; }
static const float *coff(const float *p, int64_t elems) { return p ? p + elems : NULL; }

#define TRY(x)                                  \
    do {                                        \
        remat_status st_ = (x);                 \
        if (st_ != REMAT_OK) return st_;        \
    } while (0)

/* ---- neuron state -------------------------------------------------------- */

static float v_init(const remat_layer *l) { return l->neuron.soft_reset ? 0.0f : l->neuron.v_reset; }

/* Sets every element of an [N, F] state to the layer's initial potential. */
static remat_status fill_v_init(remat_session *s, remat_tensor *v, const remat_layer *l) {
    float v0 = v_init(l);
    if (v0 == 0.0f && !signbit(v0)) return tzero(s, v);
    op_t op;
    op_begin(s, &op, REMAT_OP_FILL, v->layer, v->block, 0, v->elems);
    if (v->ptr) {
        float *h = remat_xmalloc((size_t)v->elems * sizeof(float), s->err);
        if (!h) return REMAT_ERR_NOMEM;
        for (int64_t i = 0; i < v->elems; i++) h[i] = v0;
        s->ops->from_host(s->be->ctx, v->ptr, h, v->bytes);
        remat_xfree(h);
    }
    return op_end(s, &op);
}

/* ---- one layer over one time chunk ----------------------------------------- */

/* Forward of layer j over time steps [t0, t0 + tc). keep: save what backward needs.
 * recompute: phase RECOMPUTE (no running-statistics update). */
static remat_status layer_forward(remat_session *s, int j, int64_t tc, const float *in, float *out,
                                  const float *block_in, int keep, int recompute) {
    const remat_layer *l = &s->m->layers[j];
    layer_state *st = &s->ls[j];
    int64_t N = s->m->N, rows = tc * N, fin = l->in_features, fout = l->out_features;
    op_t op;
    st->in_ptr = in;
    st->out_ptr = out;
    switch (l->type) {
    case REMAT_LAYER_LINEAR: {
        op_begin(s, &op, REMAT_OP_LINEAR_FWD, j, l->block, tc, rows * fout);
        const remat_tensor *w = &s->param[j * MAXP], *b = l->has_bias ? &s->param[j * MAXP + 1] : NULL;
        if (s->ops->has_data)
            s->ops->linear_forward(s->be->ctx, out, in, fptr(w), b ? fptr(b) : NULL, rows, fin, fout);
        return op_end(s, &op);
    }
    case REMAT_LAYER_IF:
    case REMAT_LAYER_LIF: {
        if (keep) {
            describe_act(s, &st->h, REMAT_ROLE_SAVED, j, tc, fout);
            TRY(talloc(s, &st->h));
        }
        op_begin(s, &op, REMAT_OP_NEURON_FWD, j, l->block, tc, rows * fout);
        if (s->ops->has_data)
            s->ops->neuron_forward(s->be->ctx, out, keep ? fptr(&st->h) : NULL, fptr(&st->v), in, l->type,
                                   &l->neuron, tc, N * fout);
        return op_end(s, &op);
    }
    case REMAT_LAYER_BATCHNORM: {
        remat_role role = keep ? REMAT_ROLE_SAVED : REMAT_ROLE_WORKSPACE;
        describe_vec(s, &st->mean, role, j, fout);
        describe_vec(s, &st->rstd, role, j, fout);
        TRY(talloc(s, &st->mean));
        TRY(talloc(s, &st->rstd));
        int update = !recompute || s->o.fault == REMAT_FAULT_BN_DOUBLE_UPDATE;
        op_begin(s, &op, REMAT_OP_BATCHNORM_FWD, j, l->block, tc, rows * fout);
        if (s->ops->has_data)
            s->ops->batchnorm_forward(s->be->ctx, out, fptr(&st->mean), fptr(&st->rstd),
                                      update ? fptr(&s->param[j * MAXP + 2]) : NULL,
                                      update ? fptr(&s->param[j * MAXP + 3]) : NULL, in,
                                      fptr(&s->param[j * MAXP]), fptr(&s->param[j * MAXP + 1]), rows, fout);
        TRY(op_end(s, &op));
        if (!keep) {
            TRY(tfree(s, &st->rstd));
            TRY(tfree(s, &st->mean));
        }
        return REMAT_OK;
    }
    case REMAT_LAYER_ADD:
        op_begin(s, &op, REMAT_OP_ADD_FWD, j, l->block, tc, rows * fout);
        if (s->ops->has_data) s->ops->add_forward(s->be->ctx, out, block_in, in, rows * fout);
        return op_end(s, &op);
    case REMAT_LAYER_DROPOUT: {
        uint64_t it = (uint64_t)s->iter;
        if (recompute && s->o.fault == REMAT_FAULT_REDRAW_DROPOUT) it += 7919;
        op_begin(s, &op, REMAT_OP_DROPOUT_FWD, j, l->block, tc, rows * fout);
        if (s->ops->has_data)
            s->ops->dropout_forward(s->be->ctx, out, in, s->o.seed, it, j, l->p, tc, N * fout);
        return op_end(s, &op);
    }
    default:
        return remat_error_set(s->err, REMAT_ERR_INTERNAL, "layer %s: unknown type %d", l->name, (int)l->type);
    }
}

/* Backward of layer j over a chunk of tc steps; dinp accumulates; d_block_in gets
 * the add layer's contribution. chunked: the segment runs in k > 1 chunks. */
static remat_status layer_backward(remat_session *s, int j, int64_t tc, float *dinp, const float *dout,
                                   float *d_block_in, int chunked) {
    const remat_layer *l = &s->m->layers[j];
    layer_state *st = &s->ls[j];
    int64_t N = s->m->N, rows = tc * N, fin = l->in_features, fout = l->out_features;
    void *ctx = s->be->ctx;
    int data = s->ops->has_data;
    op_t op;
    switch (l->type) {
    case REMAT_LAYER_LINEAR: {
        remat_tensor scratch, tw, tb;
        describe_vec(s, &scratch, REMAT_ROLE_WORKSPACE, j, fin * fout + fout);
        TRY(talloc(s, &scratch));
        float *dw = fptr(&s->grad[j * MAXP]);
        float *db = l->has_bias ? fptr(&s->grad[j * MAXP + 1]) : NULL;
        int reorder = chunked && s->o.fault == REMAT_FAULT_REORDER_WGRAD;
        if (reorder) { /* deliberate break: the chunk's partial sums are added as one */
            describe_vec(s, &tw, REMAT_ROLE_WORKSPACE, j, fin * fout);
            describe_vec(s, &tb, REMAT_ROLE_WORKSPACE, j, fout);
            TRY(talloc(s, &tw));
            TRY(talloc(s, &tb));
            TRY(tzero(s, &tw));
            TRY(tzero(s, &tb));
        }
        op_begin(s, &op, REMAT_OP_LINEAR_BWD, j, l->block, tc, rows * fin);
        if (data)
            s->ops->linear_backward(ctx, dinp, reorder ? fptr(&tw) : dw, reorder ? (db ? fptr(&tb) : NULL) : db, dout,
                                    st->in_ptr, fptr(&s->param[j * MAXP]), fptr(&scratch), tc, N, fin, fout);
        TRY(op_end(s, &op));
        if (reorder) {
            if (data) {
                s->ops->add_forward(ctx, dw, dw, fptr(&tw), fin * fout);
                if (db) s->ops->add_forward(ctx, db, db, fptr(&tb), fout);
            }
            TRY(tfree(s, &tb));
            TRY(tfree(s, &tw));
        }
        return tfree(s, &scratch);
    }
    case REMAT_LAYER_IF:
    case REMAT_LAYER_LIF: {
        if (!chunked) {
            describe_state(s, &st->gv, REMAT_ROLE_NEURON_STATE, j, fout);
            TRY(talloc(s, &st->gv));
            TRY(tzero(s, &st->gv));
        }
        op_begin(s, &op, REMAT_OP_NEURON_BWD, j, l->block, tc, rows * fout);
        if (data) s->ops->neuron_backward(ctx, dinp, fptr(&st->gv), dout, fptr(&st->h), l->type, &l->neuron, tc, N * fout);
        TRY(op_end(s, &op));
        if (!chunked) TRY(tfree(s, &st->gv));
        return tfree(s, &st->h);
    }
    case REMAT_LAYER_BATCHNORM:
        op_begin(s, &op, REMAT_OP_BATCHNORM_BWD, j, l->block, tc, rows * fout);
        if (data)
            s->ops->batchnorm_backward(ctx, dinp, fptr(&s->grad[j * MAXP]), fptr(&s->grad[j * MAXP + 1]), dout,
                                       st->in_ptr, fptr(&s->param[j * MAXP]), fptr(&st->mean), fptr(&st->rstd), rows,
                                       fout);
        TRY(op_end(s, &op));
        TRY(tfree(s, &st->rstd));
        return tfree(s, &st->mean);
    case REMAT_LAYER_ADD:
        op_begin(s, &op, REMAT_OP_ADD_BWD, j, l->block, tc, rows * fout);
        if (data) s->ops->add_backward(ctx, d_block_in, dinp, dout, rows * fout);
        return op_end(s, &op);
    case REMAT_LAYER_DROPOUT:
        op_begin(s, &op, REMAT_OP_DROPOUT_BWD, j, l->block, tc, rows * fout);
        if (data) s->ops->dropout_backward(ctx, dinp, dout, s->o.seed, (uint64_t)s->iter, j, l->p, tc, N * fout);
        return op_end(s, &op);
    default:
        return remat_error_set(s->err, REMAT_ERR_INTERNAL, "layer %s: unknown type %d", l->name, (int)l->type);
    }
}

/* ---- segments ------------------------------------------------------------ */

/* Last layer of the segment that reads the segment input in forward. */
static int last_input_use(remat_session *s, const remat_segment *g) {
    int last = g->first;
    for (int j = g->first; j < g->first + g->n; j++)
        if (s->m->layers[j].type == REMAT_LAYER_ADD) last = j;
    return last;
}

/* Role of the full-T output of segment sg (the input of the next one). */
static remat_role segment_output_role(remat_session *s, int sg) {
    if (sg + 1 >= s->sch.n_segs) return REMAT_ROLE_TRANSIENT;
    return s->sch.segs[sg + 1].keeps_input_raw ? REMAT_ROLE_SAVED : REMAT_ROLE_TRANSIENT;
}

static remat_status note_nnz(remat_session *s, remat_tensor *t, int producer, remat_value_class vc);

/* Runs the layers of segment sg over chunk c. in: the segment input's full-T
 * pointer; out: the segment output's full-T pointer (first pass), ignored in a
 * recompute, where the last layer's output goes to a transient chunk. (Pointers
 * are NULL on the dry backend, so the mode is never read from them.) free_input:
 * release the segment input after its last forward use (first pass, k == 1). */
static remat_status chunk_forward(remat_session *s, int sg, int c, const float *in, float *out, int keep,
                                  int recompute, int free_input) {
    const remat_segment *g = &s->sch.segs[sg];
    int64_t tc = s->m->T / g->k, t0 = (int64_t)c * tc, N = s->m->N;
    const float *x = coff(in, t0 * N * s->m->layers[g->first].in_features);
    const float *block_in = x;
    int last = g->first + g->n - 1, last_use = last_input_use(s, g);
    for (int j = g->first; j <= last; j++) {
        const remat_layer *l = &s->m->layers[j];
        layer_state *st = &s->ls[j];
        float *y;
        if (j == last && !recompute) {
            y = off(out, t0 * N * l->out_features);
        } else {
            int next_saves = j < last && keep && remat_layer_saves_input(&s->m->layers[j + 1]);
            describe_act(s, &st->out, next_saves ? REMAT_ROLE_SAVED : REMAT_ROLE_TRANSIENT, j, tc, l->out_features);
            TRY(talloc(s, &st->out));
            y = fptr(&st->out);
        }
        int own_v = remat_layer_is_neuron(l) && g->k == 1 && !recompute;
        if (own_v) {
            describe_state(s, &st->v, REMAT_ROLE_NEURON_STATE, j, l->out_features);
            TRY(talloc(s, &st->v));
            TRY(fill_v_init(s, &st->v, l));
        }
        TRY(layer_forward(s, j, tc, x, y, block_in, keep, recompute));
        if (own_v) TRY(tfree(s, &st->v));
        /* the input of layer j is no longer needed in forward */
        if (j > g->first && !(keep && remat_layer_saves_input(l))) TRY(tfree(s, &s->ls[j - 1].out));
        if (free_input && j == last_use) TRY(tfree(s, &s->act[sg]));
        /* spike counts of full-T internal outputs (a split point's input in some plan) */
        if (!recompute && g->k == 1 && j < last) TRY(note_nnz(s, &st->out, j, l->out_values));
        if (j == last && recompute) TRY(tfree(s, &st->out)); /* nobody reads the last output */
        x = y;
    }
    return REMAT_OK;
}

static int64_t seg_in_features(remat_session *s, const remat_segment *g) {
    return s->m->layers[g->first].in_features;
}

static remat_status count_nnz(remat_session *s, remat_tensor *t, int producer, int64_t *nnz) {
    *nnz = -1;
    if (s->ops->has_data) {
        op_t op;
        op_begin(s, &op, REMAT_OP_COPY, producer, t->block, 0, t->elems);
        *nnz = s->ops->count_nonzero(s->be->ctx, fptr(t), t->elems);
        TRY(op_end(s, &op));
    } else if (s->o.nnz_oracle) {
        *nnz = s->o.nnz_oracle(s->o.hook_ctx, s->iter, producer, t->elems);
    }
    return REMAT_OK;
}

/* Records the non-zeros of a full-T tensor that could be a compressed input. */
static remat_status note_nnz(remat_session *s, remat_tensor *t, int producer, remat_value_class vc) {
    if (!s->o.trace || vc == REMAT_VALUES_REAL || t->id < 0) return REMAT_OK;
    int64_t nnz;
    TRY(count_nnz(s, t, producer, &nnz));
    if (nnz >= 0) remat_mem_set_nnz(&s->mem, t, nnz);
    return REMAT_OK;
}

/* Decompresses a segment's input into dst (n floats); the lossy fault flips one element. */
static remat_status decompress_into(remat_session *s, int sg, float *dst, int64_t n) {
    const remat_segment *g = &s->sch.segs[sg];
    remat_tensor *c = &s->comp[sg];
    op_t op;
    op_begin(s, &op, REMAT_OP_DECOMPRESS, g->first, g->block, s->m->T, n);
    if (s->ops->has_data) {
        TRY(s->ops->decompress(s->be->ctx, g->comp, dst, n, c->ptr, c->bytes, s->err));
        if (s->o.fault == REMAT_FAULT_LOSSY_COMPRESS && n > 0) {
            float v;
            s->ops->to_host(s->be->ctx, &v, dst, sizeof v);
            v = v == 0.0f ? 1.0f : 0.0f;
            s->ops->from_host(s->be->ctx, dst, &v, sizeof v);
        }
    }
    return op_end(s, &op);
}

/* Verify's losslessness check: decompress into scratch and compare bit patterns. */
static remat_status check_compression(remat_session *s, int sg) {
    remat_tensor *x = &s->act[sg];
    int64_t n = x->elems;
    void *scratch = NULL;
    TRY(s->ops->segment_alloc(s->be->ctx, n * 4 > 0 ? n * 4 : 4, &scratch, s->err));
    remat_status st = decompress_into(s, sg, scratch, n);
    uint32_t *a = remat_xmalloc((size_t)n * 4 + 4, s->err), *b = remat_xmalloc((size_t)n * 4 + 4, s->err);
    if (st == REMAT_OK && a && b) {
        s->ops->to_host(s->be->ctx, a, x->ptr, n * 4);
        s->ops->to_host(s->be->ctx, b, scratch, n * 4);
        s->res->compressions_checked++;
        if (memcmp(a, b, (size_t)n * 4) != 0) s->res->compression_mismatches++;
    } else if (st == REMAT_OK) {
        st = REMAT_ERR_NOMEM;
    }
    remat_xfree(a);
    remat_xfree(b);
    s->ops->segment_free(s->be->ctx, scratch);
    return st;
}

static remat_status segment_forward(remat_session *s, int sg) {
    const remat_segment *g = &s->sch.segs[sg];
    const remat_model *m = s->m;
    int last = g->first + g->n - 1;
    remat_tensor *x = &s->act[sg], *y = &s->act[sg + 1];
    s->mem.phase = REMAT_PHASE_FORWARD;
    if (g->checkpoint && g->comp != REMAT_COMP_NONE) {
        int64_t nnz = -1;
        if (g->comp == REMAT_COMP_SPARSE) {
            TRY(count_nnz(s, x, g->first - 1, &nnz));
            if (nnz < 0)
                return remat_error_set(s->err, REMAT_ERR_INPUT,
                                       "segment at layer %s: the sparse size needs spike counts the trace lacks",
                                       m->layers[g->first].name);
        }
        int64_t dims[3] = {m->T, m->N, seg_in_features(s, g)};
        remat_tensor_describe(&s->comp[sg], remat_compressor_encoding(g->comp), REMAT_ROLE_COMPRESSED, g->first,
                              g->block, 3, dims, 0, 1, nnz);
        TRY(talloc(s, &s->comp[sg]));
        op_t op;
        op_begin(s, &op, REMAT_OP_COMPRESS, g->first, g->block, m->T, x->elems);
        if (s->ops->has_data)
            TRY(s->ops->compress(s->be->ctx, g->comp, s->comp[sg].ptr, s->comp[sg].bytes, fptr(x), x->elems, s->err));
        TRY(op_end(s, &op));
        s->res->compressions++;
        if (s->o.check_compression && s->ops->has_data) TRY(check_compression(s, sg));
    }
    describe_act(s, y, segment_output_role(s, sg), last, m->T, m->layers[last].out_features);
    TRY(talloc(s, y));
    if (g->k > 1) { /* neuron states live across chunks; boundaries kept for backward */
        for (int j = g->first; j <= last; j++) {
            if (!remat_layer_is_neuron(&m->layers[j])) continue;
            describe_state(s, &s->ls[j].v, REMAT_ROLE_NEURON_STATE, j, m->layers[j].out_features);
            TRY(talloc(s, &s->ls[j].v));
            TRY(fill_v_init(s, &s->ls[j].v, &m->layers[j]));
        }
    }
    int free_input = sg > 0 && !g->keeps_input_raw;
    for (int c = 0; c < g->k; c++) {
        for (int j = g->first; c > 0 && j <= last; j++) {
            if (!remat_layer_is_neuron(&m->layers[j])) continue;
            remat_tensor *b = &s->bound[j * s->max_k + c];
            describe_state(s, b, REMAT_ROLE_NEURON_STATE, j, m->layers[j].out_features);
            TRY(talloc(s, b));
            op_t op;
            op_begin(s, &op, REMAT_OP_COPY, j, m->layers[j].block, 0, b->elems);
            if (s->ops->has_data) s->ops->copy(s->be->ctx, b->ptr, s->ls[j].v.ptr, b->bytes);
            TRY(op_end(s, &op));
        }
        TRY(chunk_forward(s, sg, c, fptr(x), fptr(y), !g->checkpoint, 0, free_input && g->k == 1));
    }
    for (int j = g->first; g->k > 1 && j <= last; j++) TRY(tfree(s, &s->ls[j].v));
    if (free_input) TRY(tfree(s, x));
    return note_nnz(s, y, last, m->layers[last].out_values);
}

/* dout: gradient of the segment output (full T); returns the input's gradient in *din. */
static remat_status segment_backward(remat_session *s, int sg, remat_tensor *dout, remat_tensor *din) {
    const remat_segment *g = &s->sch.segs[sg];
    const remat_model *m = s->m;
    int last = g->first + g->n - 1;
    int64_t T = m->T, N = m->N, fin = seg_in_features(s, g);
    remat_tensor *x = &s->act[sg], xin;
    remat_tensor_describe(&xin, REMAT_ENC_F32, REMAT_ROLE_SAVED, g->first, g->block, 0, NULL, -1, -1, -1);
    const float *in = fptr(x);
    if (g->checkpoint && g->comp != REMAT_COMP_NONE) {
        s->mem.phase = REMAT_PHASE_RECOMPUTE;
        describe_act(s, &xin, REMAT_ROLE_SAVED, g->first, T, fin);
        xin.layer = g->first;
        TRY(talloc(s, &xin));
        TRY(decompress_into(s, sg, fptr(&xin), xin.elems));
        TRY(tfree(s, &s->comp[sg]));
        in = fptr(&xin);
    }
    s->mem.phase = REMAT_PHASE_BACKWARD;
    /* the network input's gradient is skipped when asked and when the first layer
     * (a linear one, in a unit without add) can run without it */
    int skip_din = sg == 0 && s->o.no_input_grad && m->layers[g->first].type == REMAT_LAYER_LINEAR &&
                   last_input_use(s, g) == g->first;
    describe_act(s, din, REMAT_ROLE_ACT_GRAD, g->first, T, fin);
    din->layer = g->first;
    int chunked = g->k > 1;
    /* One chunk: the input gradient is allocated when a layer first writes it, the
     * output gradient freed after the last layer's backward, the saved input after
     * the first layer's. Chunks need all three across chunks. */
    if (!skip_din && chunked) {
        TRY(talloc(s, din));
        TRY(tzero(s, din));
    }
    for (int j = g->first; chunked && j <= last; j++) {
        if (!remat_layer_is_neuron(&m->layers[j])) continue;
        describe_state(s, &s->ls[j].gv, REMAT_ROLE_NEURON_STATE, j, m->layers[j].out_features);
        TRY(talloc(s, &s->ls[j].gv));
        TRY(tzero(s, &s->ls[j].gv));
    }
    int64_t tc = T / g->k;
    for (int c = g->k - 1; c >= 0; c--) {
        if (g->checkpoint) { /* recompute the chunk from its boundary state */
            s->mem.phase = REMAT_PHASE_RECOMPUTE;
            for (int j = g->first; j <= last; j++) {
                if (!remat_layer_is_neuron(&m->layers[j])) continue;
                if (c > 0) {
                    s->ls[j].v = s->bound[j * s->max_k + c];
                    s->bound[j * s->max_k + c].id = -1;
                } else {
                    describe_state(s, &s->ls[j].v, REMAT_ROLE_NEURON_STATE, j, m->layers[j].out_features);
                    TRY(talloc(s, &s->ls[j].v));
                    TRY(fill_v_init(s, &s->ls[j].v, &m->layers[j]));
                }
            }
            TRY(chunk_forward(s, sg, c, in, NULL, 1, 1, 0));
            s->res->recomputed_layers += g->n;
            for (int j = g->first; j <= last; j++) TRY(tfree(s, &s->ls[j].v));
            s->mem.phase = REMAT_PHASE_BACKWARD;
        }
        int64_t t0 = (int64_t)c * tc;
        for (int j = last; j >= g->first; j--) {
            const remat_layer *l = &m->layers[j];
            const float *dy = j == last ? coff(fptr(dout), t0 * N * l->out_features) : fptr(&s->ls[j].grad);
            float *dx;
            if (!skip_din && din->id < 0 && (j == g->first || l->type == REMAT_LAYER_ADD)) {
                TRY(talloc(s, din));
                TRY(tzero(s, din));
            }
            if (j == g->first) {
                dx = skip_din ? NULL : off(fptr(din), t0 * N * fin);
            } else {
                describe_act(s, &s->ls[j - 1].grad, REMAT_ROLE_ACT_GRAD, j - 1, tc, l->in_features);
                TRY(talloc(s, &s->ls[j - 1].grad));
                TRY(tzero(s, &s->ls[j - 1].grad));
                dx = fptr(&s->ls[j - 1].grad);
            }
            TRY(layer_backward(s, j, tc, dx, dy, off(fptr(din), t0 * N * fin), chunked));
            if (j != last) TRY(tfree(s, &s->ls[j].grad));
            else if (!chunked) TRY(tfree(s, dout));
            if (j > g->first) TRY(tfree(s, &s->ls[j - 1].out));
            if (j == g->first && !chunked) {
                TRY(tfree(s, &xin));
                if (sg > 0) TRY(tfree(s, x));
            }
        }
    }
    for (int j = g->first; chunked && j <= last; j++) TRY(tfree(s, &s->ls[j].gv));
    TRY(tfree(s, &xin));
    if (sg > 0) TRY(tfree(s, x));
    return REMAT_OK;
}

/* ---- parameters and optimiser --------------------------------------------- */

static remat_status init_params(remat_session *s) {
    const remat_model *m = s->m;
    s->mem.phase = REMAT_PHASE_INIT;
    for (int j = 0; j < m->n_layers; j++) {
        const remat_layer *l = &m->layers[j];
        for (int i = 0; i < remat_layer_n_params(l); i++) {
            remat_tensor *p = &s->param[j * MAXP + i];
            describe_vec(s, p, REMAT_ROLE_PARAMETER, j, remat_layer_param_elems(l, i));
            if (l->type == REMAT_LAYER_LINEAR && i == 0) {
                int64_t dims[2] = {l->out_features, l->in_features};
                remat_tensor_describe(p, REMAT_ENC_F32, REMAT_ROLE_PARAMETER, j, l->block, 2, dims, -1, -1, -1);
            }
            TRY(talloc(s, p));
            op_t op;
            op_begin(s, &op, REMAT_OP_FILL, j, l->block, 0, p->elems);
            if (s->ops->has_data) {
                if (l->type == REMAT_LAYER_LINEAR) {
                    float bound = m->init_gain / sqrtf((float)l->in_features);
                    s->ops->fill_uniform(s->be->ctx, fptr(p), p->elems, -bound, bound, s->o.seed, REMAT_RNG_PARAM,
                                         (uint64_t)(j * 16 + i));
                } else { /* batch norm: weight 1, bias 0, running mean 0, running var 1 */
                    float v = (i == 0 || i == 3) ? 1.0f : 0.0f;
                    float *h = remat_xmalloc((size_t)p->elems * sizeof(float), s->err);
                    if (!h) return REMAT_ERR_NOMEM;
                    for (int64_t e = 0; e < p->elems; e++) h[e] = v;
                    s->ops->from_host(s->be->ctx, p->ptr, h, p->bytes);
                    remat_xfree(h);
                }
            }
            TRY(op_end(s, &op));
            if (remat_layer_param_trainable(l, i)) {
                remat_tensor *g = &s->grad[j * MAXP + i];
                *g = *p;
                g->id = -1;
                g->event = -1;
                g->role = REMAT_ROLE_GRADIENT;
                TRY(talloc(s, g));
                TRY(tzero(s, g));
            }
        }
    }
    return REMAT_OK;
}

static remat_status optimizer_step(remat_session *s) {
    const remat_model *m = s->m;
    const remat_optimizer *o = &m->optimizer;
    s->mem.phase = REMAT_PHASE_OPTIMIZER;
    int first = s->opt_steps == 0;
    s->opt_steps++;
    for (int j = 0; j < m->n_layers; j++) {
        const remat_layer *l = &m->layers[j];
        for (int i = 0; i < remat_layer_n_params(l); i++) {
            if (!remat_layer_param_trainable(l, i)) continue;
            remat_tensor *p = &s->param[j * MAXP + i], *g = &s->grad[j * MAXP + i];
            remat_tensor *b1 = &s->opt1[j * MAXP + i], *b2 = &s->opt2[j * MAXP + i];
            int need1 = o->type == REMAT_OPT_ADAM || o->momentum != 0.0f, need2 = o->type == REMAT_OPT_ADAM;
            if (first) {
                remat_tensor *bs[2] = {b1, b2};
                int need[2] = {need1, need2};
                for (int q = 0; q < 2; q++) {
                    if (!need[q]) continue;
                    *bs[q] = *p;
                    bs[q]->id = -1;
                    bs[q]->event = -1;
                    bs[q]->role = REMAT_ROLE_OPTIMIZER;
                    TRY(talloc(s, bs[q]));
                    TRY(tzero(s, bs[q]));
                }
            }
            op_t op;
            op_begin(s, &op, REMAT_OP_OPTIMIZER, j, l->block, 0, p->elems);
            if (s->ops->has_data) {
                if (o->type == REMAT_OPT_ADAM)
                    s->ops->adam_update(s->be->ctx, fptr(p), fptr(b1), fptr(b2), fptr(g), o->lr, o->beta1, o->beta2,
                                        o->eps, s->opt_steps, p->elems);
                else
                    s->ops->sgd_update(s->be->ctx, fptr(p), need1 ? fptr(b1) : NULL, fptr(g), o->lr, o->momentum,
                                       first, p->elems);
            }
            TRY(op_end(s, &op));
        }
    }
    return REMAT_OK;
}

/* ---- session ------------------------------------------------------------- */

remat_exec_opts remat_exec_opts_default(void) {
    remat_exec_opts o;
    memset(&o, 0, sizeof o);
    o.seed = 1;
    o.caching = remat_caching_config_default();
    return o;
}

static void calibrate_compressors(remat_session *s) {
    remat_trace *t = s->o.trace;
    const int64_t n = 1 << 20;
    void *src = NULL, *dst = NULL, *back = NULL;
    remat_error e = {0};
    if (s->ops->segment_alloc(s->be->ctx, n * 4, &src, &e) != REMAT_OK) return;
    if (s->ops->segment_alloc(s->be->ctx, n * 4, &dst, &e) != REMAT_OK ||
        s->ops->segment_alloc(s->be->ctx, n * 4, &back, &e) != REMAT_OK) {
        s->ops->segment_free(s->be->ctx, src);
        if (dst) s->ops->segment_free(s->be->ctx, dst);
        return;
    }
    s->ops->fill_bernoulli(s->be->ctx, src, n, 0.2f, s->o.seed, REMAT_RNG_INPUT, 0xca11b);
    int64_t nnz = s->ops->count_nonzero(s->be->ctx, src, n);
    for (int c = 1; c < REMAT_COMP_COUNT; c++) {
        int64_t bytes = remat_compressed_bytes((remat_compressor)c, n, nnz);
        double best_c = 1e30, best_d = 1e30;
        for (int rep = 0; rep < 3; rep++) {
            double a = s->ops->now(s->be->ctx);
            s->ops->compress(s->be->ctx, (remat_compressor)c, dst, bytes, src, n, &e);
            double b = s->ops->now(s->be->ctx);
            s->ops->decompress(s->be->ctx, (remat_compressor)c, back, n, dst, bytes, &e);
            double d = s->ops->now(s->be->ctx);
            if (b - a < best_c) best_c = b - a;
            if (d - b < best_d) best_d = d - b;
        }
        t->compress_s_per_elem[c] = best_c / (double)n;
        t->decompress_s_per_elem[c] = best_d / (double)n;
    }
    s->ops->segment_free(s->be->ctx, src);
    s->ops->segment_free(s->be->ctx, dst);
    s->ops->segment_free(s->be->ctx, back);
}

remat_session *remat_session_init(const remat_model *m, const remat_plan *p, remat_backend *b,
                                  const remat_exec_opts *o, remat_error *err) {
    if (remat_plan_validate(p, m, p->path && p->path[0] ? p->path : "<plan>", err) != REMAT_OK) return NULL;
    remat_session *s = remat_xcalloc(1, sizeof *s, err);
    if (!s) return NULL;
    s->m = m;
    s->p = p;
    s->be = b;
    s->ops = b->ops;
    s->o = *o;
    s->err = err;
    s->res = NULL;
    if (remat_schedule_build(m, p, &s->sch, err) != REMAT_OK) {
        remat_xfree(s);
        return NULL;
    }
    s->max_k = 1;
    for (int i = 0; i < s->sch.n_segs; i++)
        if (s->sch.segs[i].k > s->max_k) s->max_k = s->sch.segs[i].k;
    size_t np = (size_t)m->n_layers * MAXP;
    s->param = remat_xcalloc(np, sizeof(remat_tensor), err);
    s->grad = remat_xcalloc(np, sizeof(remat_tensor), err);
    s->opt1 = remat_xcalloc(np, sizeof(remat_tensor), err);
    s->opt2 = remat_xcalloc(np, sizeof(remat_tensor), err);
    s->act = remat_xcalloc((size_t)s->sch.n_segs + 1, sizeof(remat_tensor), err);
    s->comp = remat_xcalloc((size_t)s->sch.n_segs, sizeof(remat_tensor), err);
    s->bound = remat_xcalloc((size_t)m->n_layers * (size_t)s->max_k, sizeof(remat_tensor), err);
    s->ls = remat_xcalloc((size_t)m->n_layers, sizeof(layer_state), err);
    if (!s->param || !s->grad || !s->opt1 || !s->opt2 || !s->act || !s->comp || !s->bound || !s->ls) goto fail;
    /* every handle starts unallocated */
    remat_tensor none;
    remat_tensor_describe(&none, REMAT_ENC_F32, REMAT_ROLE_TRANSIENT, -1, -1, 0, NULL, -1, -1, -1);
    for (size_t i = 0; i < np; i++) s->param[i] = s->grad[i] = s->opt1[i] = s->opt2[i] = none;
    for (int i = 0; i <= s->sch.n_segs; i++) s->act[i] = none;
    for (int i = 0; i < s->sch.n_segs; i++) s->comp[i] = none;
    for (size_t i = 0; i < (size_t)m->n_layers * (size_t)s->max_k; i++) s->bound[i] = none;
    for (int j = 0; j < m->n_layers; j++) {
        layer_state *st = &s->ls[j];
        st->out = st->h = st->mean = st->rstd = st->v = st->gv = st->grad = none;
    }
    s->input = s->labels = s->input_grad = none;
    if (remat_mem_init(&s->mem, b, &o->caching, o->trace, err) != REMAT_OK) goto fail;
    s->t0 = s->ops->now(b->ctx);
    if (o->trace) {
        remat_trace *t = o->trace;
        if (remat_trace_set_texts(t, m->text ? m->text : "", p->text ? p->text : "", err) != REMAT_OK) goto fail;
        snprintf(t->backend, sizeof t->backend, "%s", b->ops->name);
        t->seed = o->seed;
        t->no_input_grad = o->no_input_grad ? 1 : 0;
        t->T = m->T;
        t->N = m->N;
        if (b->ops->has_data) calibrate_compressors(s);
    }
    if (init_params(s) != REMAT_OK) goto fail;
    return s;
fail:
    if (err && err->status == REMAT_OK) remat_error_set(err, REMAT_ERR_NOMEM, "out of memory creating a session");
    remat_session_free(s);
    return NULL;
}

static remat_status make_batch(remat_session *s) {
    const remat_model *m = s->m;
    int64_t dims[3] = {m->T, m->N, m->in_features};
    remat_tensor_describe(&s->input, REMAT_ENC_F32, REMAT_ROLE_BATCH, -1, -1, 3, dims, 0, 1, -1);
    TRY(talloc(s, &s->input));
    op_t op;
    op_begin(s, &op, REMAT_OP_FILL, -1, -1, m->T, s->input.elems);
    if (s->ops->has_data) {
        if (m->input_spikes)
            s->ops->fill_bernoulli(s->be->ctx, fptr(&s->input), s->input.elems, m->input_rate, s->o.seed,
                                   REMAT_RNG_INPUT, (uint64_t)s->iter);
        else
            s->ops->fill_uniform(s->be->ctx, fptr(&s->input), s->input.elems, 0.0f, 1.0f, s->o.seed, REMAT_RNG_INPUT,
                                 (uint64_t)s->iter);
    }
    TRY(op_end(s, &op));
    int64_t ldims[1] = {m->N};
    remat_tensor_describe(&s->labels, REMAT_ENC_I32, REMAT_ROLE_BATCH, -1, -1, 1, ldims, -1, 0, -1);
    TRY(talloc(s, &s->labels));
    op_begin(s, &op, REMAT_OP_FILL, -1, -1, 0, m->N);
    if (s->ops->has_data)
        s->ops->fill_labels(s->be->ctx, (int32_t *)s->labels.ptr, m->N, m->classes, s->o.seed, (uint64_t)s->iter);
    TRY(op_end(s, &op));
    return note_nnz(s, &s->input, -1, m->input_spikes ? REMAT_VALUES_BINARY : REMAT_VALUES_REAL);
}

static void stats(remat_session *s, remat_alloc_stats *ex, remat_alloc_stats *ca) {
    remat_alloc_model_stats(s->mem.exact, ex);
    remat_alloc_model_stats(s->mem.caching, ca);
}

static remat_status step(remat_session *s, int apply_optimizer, remat_step_result *r) {
    const remat_model *m = s->m;
    int n = s->sch.n_segs;
    s->mem.iter = s->iter;
    s->mem.phase = REMAT_PHASE_FORWARD;
    double t_begin = clk(s);
    int64_t ev0 = s->mem.events, tev0 = s->o.trace ? s->o.trace->n_events : 0;
    TRY(tfree(s, &s->input_grad));
    TRY(tfree(s, &s->labels));
    TRY(tfree(s, &s->input));
    remat_alloc_model_reset_peaks(s->mem.exact);
    remat_alloc_model_reset_peaks(s->mem.caching);
    for (int j = 0; j < m->n_layers; j++)
        for (int i = 0; i < MAXP; i++)
            if (s->grad[j * MAXP + i].id >= 0) TRY(tzero(s, &s->grad[j * MAXP + i]));
    TRY(make_batch(s));
    s->act[0] = s->input;
    for (int sg = 0; sg < n; sg++) TRY(segment_forward(s, sg));

    /* loss */
    s->mem.phase = REMAT_PHASE_LOSS;
    remat_tensor rate, dout;
    int64_t rdims[2] = {m->N, m->classes};
    remat_tensor_describe(&rate, REMAT_ENC_F32, REMAT_ROLE_SAVED, -1, -1, 2, rdims, -1, 0, -1);
    TRY(talloc(s, &rate));
    op_t op;
    op_begin(s, &op, REMAT_OP_LOSS_FWD, -1, -1, m->T, s->act[n].elems);
    float loss = 0.0f;
    if (s->ops->has_data)
        loss = s->ops->loss_forward(s->be->ctx, fptr(&rate), fptr(&s->act[n]), (const int32_t *)s->labels.ptr, m->loss,
                                    m->T, m->N, m->classes);
    TRY(op_end(s, &op));
    TRY(tfree(s, &s->act[n]));
    remat_alloc_stats ex, ca;
    stats(s, &ex, &ca);
    r->end_of_forward_bytes = ex.live_bytes;
    r->end_of_forward_reserved = ca.reserved_bytes;
    for (int sg = 0; sg < n; sg++)
        if (s->comp[sg].id >= 0) r->compressed_bytes += s->comp[sg].bytes;
    int64_t odims[3] = {m->T, m->N, m->classes};
    remat_tensor_describe(&dout, REMAT_ENC_F32, REMAT_ROLE_ACT_GRAD, m->n_layers - 1, m->layers[m->n_layers - 1].block,
                          3, odims, 0, 1, -1);
    TRY(talloc(s, &dout));
    TRY(tzero(s, &dout));
    op_begin(s, &op, REMAT_OP_LOSS_BWD, -1, -1, m->T, dout.elems);
    if (s->ops->has_data)
        s->ops->loss_backward(s->be->ctx, fptr(&dout), fptr(&rate), (const int32_t *)s->labels.ptr, m->loss, m->T,
                              m->N, m->classes);
    TRY(op_end(s, &op));
    TRY(tfree(s, &rate));

    /* backward, segments in reverse */
    for (int sg = n - 1; sg >= 0; sg--) {
        remat_tensor din;
        TRY(segment_backward(s, sg, &dout, &din));
        s->mem.phase = REMAT_PHASE_BACKWARD;
        TRY(tfree(s, &dout));
        dout = din;
    }
    s->input_grad = dout;
    s->act[0].id = -1; /* the batch is freed through s->input */

    if (apply_optimizer) TRY(optimizer_step(s));
    stats(s, &ex, &ca);
    r->loss = loss;
    r->peak_live_bytes = ex.peak_live_bytes;
    r->peak_reserved_bytes = ca.peak_reserved_bytes;
    r->peak_allocated_bytes = ca.peak_allocated_bytes;
    r->step_time_s = clk(s) - t_begin;
    r->events = s->mem.events - ev0;
    int seen = 0;
    for (int sg = 0; sg < n; sg++)
        if (s->sch.segs[sg].checkpoint) seen += s->sch.segs[sg].n;
    r->recomputed_layer_set = seen;
    if (s->o.trace) {
        remat_iter_summary is;
        memset(&is, 0, sizeof is);
        is.peak_live_bytes = r->peak_live_bytes;
        is.peak_reserved_bytes = r->peak_reserved_bytes;
        is.end_of_forward_bytes = r->end_of_forward_bytes;
        is.end_of_forward_reserved = r->end_of_forward_reserved;
        is.step_time_s = r->step_time_s;
        is.loss = r->loss;
        is.first_event = tev0;
        is.n_events = s->o.trace->n_events - tev0;
        if (remat_trace_add_iter(s->o.trace, &is, s->err) < 0) return s->err->status;
    }
    s->iter++;
    return REMAT_OK;
}

remat_status remat_session_step(remat_session *s, int apply_optimizer, remat_step_result *out, remat_error *err) {
    remat_step_result r;
    memset(&r, 0, sizeof r);
    s->err = err;
    s->res = &r;
    remat_status st = step(s, apply_optimizer, &r);
    s->res = NULL;
    if (st == REMAT_OK && out) *out = r;
    if (st != REMAT_OK && err && err->status == REMAT_OK)
        remat_error_set(err, st, "training step %d failed", s->iter);
    return st;
}

void remat_session_free(remat_session *s) {
    if (!s) return;
    remat_error e = {0};
    s->err = &e;
    if (s->mem.exact) {
        s->mem.phase = REMAT_PHASE_INIT;
        tfree(s, &s->input_grad);
        tfree(s, &s->labels);
        tfree(s, &s->input);
        size_t np = (size_t)s->m->n_layers * MAXP;
        for (size_t i = 0; i < np; i++) {
            tfree(s, &s->opt2[i]);
            tfree(s, &s->opt1[i]);
            tfree(s, &s->grad[i]);
            tfree(s, &s->param[i]);
        }
        remat_mem_free(&s->mem);
    }
    remat_schedule_free(&s->sch);
    remat_xfree(s->param);
    remat_xfree(s->grad);
    remat_xfree(s->opt1);
    remat_xfree(s->opt2);
    remat_xfree(s->act);
    remat_xfree(s->comp);
    remat_xfree(s->bound);
    remat_xfree(s->ls);
    remat_xfree(s);
}

int remat_session_iter(const remat_session *s) { return s->iter; }

/* ---- host copies ----------------------------------------------------------- */

static remat_status copy_out(remat_session *s, const remat_tensor *t, void *dst, const char *what, remat_error *err) {
    if (!s->ops->has_data)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: the %s backend holds no data", what, s->ops->name);
    if (t->id < 0) return remat_error_set(err, REMAT_ERR_INPUT, "%s: not available (run a step first)", what);
    s->ops->to_host(s->be->ctx, dst, t->ptr, t->bytes);
    return REMAT_OK;
}

static remat_status param_slot(remat_session *s, int layer, int param, remat_error *err) {
    if (layer < 0 || layer >= s->m->n_layers || param < 0 || param >= remat_layer_n_params(&s->m->layers[layer]))
        return remat_error_set(err, REMAT_ERR_INPUT, "layer %d has no parameter %d", layer, param);
    return REMAT_OK;
}

remat_status remat_session_get_param(remat_session *s, int layer, int param, float *dst, remat_error *err) {
    TRY(param_slot(s, layer, param, err));
    return copy_out(s, &s->param[layer * MAXP + param], dst, "parameter", err);
}

remat_status remat_session_get_grad(remat_session *s, int layer, int param, float *dst, remat_error *err) {
    TRY(param_slot(s, layer, param, err));
    return copy_out(s, &s->grad[layer * MAXP + param], dst, "gradient", err);
}

remat_status remat_session_get_input(remat_session *s, float *dst, remat_error *err) {
    return copy_out(s, &s->input, dst, "input", err);
}

remat_status remat_session_get_labels(remat_session *s, int32_t *dst, remat_error *err) {
    return copy_out(s, &s->labels, dst, "labels", err);
}

remat_status remat_session_get_input_grad(remat_session *s, float *dst, remat_error *err) {
    return copy_out(s, &s->input_grad, dst, "input gradient", err);
}

remat_status remat_session_get_dropout_mask(remat_session *s, int layer, float *dst, remat_error *err) {
    if (layer < 0 || layer >= s->m->n_layers || s->m->layers[layer].type != REMAT_LAYER_DROPOUT)
        return remat_error_set(err, REMAT_ERR_INPUT, "layer %d is not a dropout layer", layer);
    if (!s->ops->has_data)
        return remat_error_set(err, REMAT_ERR_INPUT, "dropout mask: the %s backend holds no data", s->ops->name);
    const remat_layer *l = &s->m->layers[layer];
    int64_t nf = s->m->N * l->out_features;
    void *tmp = NULL;
    TRY(s->ops->segment_alloc(s->be->ctx, nf * 4, &tmp, err));
    uint64_t it = (uint64_t)(s->iter > 0 ? s->iter - 1 : 0);
    s->ops->dropout_mask(s->be->ctx, tmp, s->o.seed, it, layer, l->p, nf);
    s->ops->to_host(s->be->ctx, dst, tmp, nf * 4);
    s->ops->segment_free(s->be->ctx, tmp);
    return REMAT_OK;
}

remat_status remat_exec_run(const remat_model *m, const remat_plan *p, remat_backend *b, const remat_exec_opts *o,
                            int iters, remat_step_result *results, remat_error *err) {
    remat_session *s = remat_session_init(m, p, b, o, err);
    if (!s) return err && err->status != REMAT_OK ? err->status : REMAT_ERR_INTERNAL;
    remat_status st = REMAT_OK;
    for (int i = 0; i < iters && st == REMAT_OK; i++) st = remat_session_step(s, 1, results ? &results[i] : NULL, err);
    remat_session_free(s);
    return st;
}
