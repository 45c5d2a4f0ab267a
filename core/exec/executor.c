/* executor.c - one training step under a checkpoint plan (see executor.h for the
 * schedule). The same code drives the reference, CUDA and dry backends: the
 * simulator reproduces a plan's event stream by running this file on the dry
 * backend, so the scheduling rules exist once. */
#include "core/exec/executor.h"
#include "core/exec/preflight.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/base/bf16.h"
#include "core/base/rng.h"
#include "core/codec/compress.h"
#include "core/exec/session.h"

/* ---- clock and op records ------------------------------------------------ */

static double clk(remat_session *s) {
    if (s->o.op_cost) return s->vclock;
    return s->ops->now(s->be->ctx) - s->t0;
}

void remat_ex_op_begin(remat_session *s, op_t *op, remat_op_kind kind, int layer, int block, int64_t t_steps,
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

remat_status remat_ex_op_end(remat_session *s, op_t *op) {
    if (s->o.op_cost) s->vclock += s->o.op_cost(s->o.hook_ctx, &op->r);
    op->r.t_end = clk(s);
    s->mem.now_s = op->r.t_end;
    if (s->o.trace && remat_trace_add_op(s->o.trace, &op->r, s->err) < 0) return s->err->status;
    return REMAT_OK;
}

/* ---- tensors ------------------------------------------------------------- */

remat_status remat_ex_alloc(remat_session *s, remat_tensor *t) {
    if (t->bytes > REMAT_ALLOC_MAX_REQUEST) { /* a conv workspace can pass the loader's limits */
        const remat_model *m = s->m;
        char layer[160] = "the network input";
        if (t->layer >= 0 && t->layer < m->n_layers)
            snprintf(layer, sizeof layer, "layers[%d] (\"%s\")", t->layer, m->layers[t->layer].name);
        return remat_error_set(s->err, REMAT_ERR_INPUT, "%s: %s: a %s of %lld B, expected every tensor at most %lld B (512 GiB, "
                               "the most one segment of the allocator model holds)",
                               m->path && m->path[0] ? m->path : "<model>", layer,
                               remat_role_name((remat_role)t->role), (long long)t->bytes,
                               (long long)REMAT_ALLOC_MAX_REQUEST);
    }
    s->mem.now_s = clk(s);
    return remat_mem_alloc(&s->mem, t, s->err);
}

remat_status remat_ex_free(remat_session *s, remat_tensor *t) {
    if (t->id < 0) return REMAT_OK;
    s->mem.now_s = clk(s);
    return remat_mem_release(&s->mem, t, s->err);
}

remat_status remat_ex_zero(remat_session *s, remat_tensor *t) {
    if (t->bytes <= 0) return REMAT_OK;
    op_t op;
    remat_ex_op_begin(s, &op, REMAT_OP_ZERO, t->layer, t->block, 0, t->elems);
    if (t->ptr) s->ops->zero(s->be->ctx, t->ptr, t->bytes);
    return remat_ex_op_end(s, &op);
}

static void describe_act_enc(remat_session *s, remat_tensor *t, remat_encoding enc, remat_role role, int layer,
                             int64_t t_steps, int64_t feats) {
    int64_t dims[3] = {t_steps, s->m->N, feats};
    int block = layer >= 0 ? s->m->layers[layer].block : -1;
    remat_tensor_describe(t, enc, role, layer, block, 3, dims, 0, 1, -1);
}

/* A [t, N, F] fp32 tensor of layer `layer` (gradients, the neuron potential h). */
void remat_ex_describe_act(remat_session *s, remat_tensor *t, remat_role role, int layer, int64_t t_steps,
                         int64_t feats) {
    describe_act_enc(s, t, REMAT_ENC_F32, role, layer, t_steps, feats);
}

/* A [t, N, F] stored activation (a layer output, the input) or its gradient. */
void remat_ex_describe_out(remat_session *s, remat_tensor *t, remat_role role, int layer, int64_t t_steps,
                         int64_t feats) {
    describe_act_enc(s, t, act_enc(s), role, layer, t_steps, feats);
}

/* A per-sample [N, F] state of layer `layer`. */
void remat_ex_describe_state(remat_session *s, remat_tensor *t, remat_role role, int layer, int64_t feats) {
    int64_t dims[2] = {s->m->N, feats};
    remat_tensor_describe(t, REMAT_ENC_F32, role, layer, s->m->layers[layer].block, 2, dims, -1, 0, -1);
}

void remat_ex_describe_vec(remat_session *s, remat_tensor *t, remat_role role, int layer, int64_t n) {
    int64_t dims[1] = {n};
    int block = layer >= 0 ? s->m->layers[layer].block : -1;
    remat_tensor_describe(t, REMAT_ENC_F32, role, layer, block, 1, dims, -1, -1, -1);
}


/* Pointer `elems` activation elements into p (NULL stays NULL: the dry backend has no memory). */
static void *off(const remat_session *s, void *p, int64_t elems) { return p ? (char *)p + elems * act_bytes(s) : NULL; }
static const void *coff(const remat_session *s, const void *p, int64_t elems) {
    return p ? (const char *)p + elems * act_bytes(s) : NULL;
}



/* ---- neuron state -------------------------------------------------------- */

static float v_init(const remat_layer *l) { return l->neuron.soft_reset ? 0.0f : l->neuron.v_reset; }

/* Sets the `elems` floats at dst to x, through a host buffer of FILL_CHUNK floats on
 * the stack (a copy of the whole tensor would be host memory the trace does not see). */
#define FILL_CHUNK 2048
static void fill_const(remat_session *s, void *dst, int64_t elems, float x) {
    float h[FILL_CHUNK];
    for (int i = 0; i < FILL_CHUNK; i++) h[i] = x;
    for (int64_t at = 0; at < elems; at += FILL_CHUNK) {
        int64_t n = elems - at < FILL_CHUNK ? elems - at : FILL_CHUNK;
        s->ops->from_host(s->be->ctx, (char *)dst + at * (int64_t)sizeof(float), h, n * (int64_t)sizeof(float));
    }
}

/* Sets every element of an [N, F] state to the layer's initial potential. */
static remat_status fill_v_init(remat_session *s, remat_tensor *v, const remat_layer *l) {
    float v0 = v_init(l);
    if (v0 == 0.0f && !signbit(v0)) return remat_ex_zero(s, v);
    op_t op;
    remat_ex_op_begin(s, &op, REMAT_OP_FILL, v->layer, v->block, 0, v->elems);
    if (v->ptr) fill_const(s, v->ptr, v->elems, v0);
    return remat_ex_op_end(s, &op);
}

/* ---- one layer over one time chunk ----------------------------------------- */

/* ---- segments ------------------------------------------------------------ */

/* The readers of layer k's output (k = g->first - 1: the segment input) inside
 * segment g: the first and last of them (-1 when none) and whether one of them
 * keeps it for backward (a reader that saves its input). */
typedef struct readers_t {
    int first, last, saved;
} readers_t;

static readers_t readers_of(remat_session *s, const remat_segment *g, int k) {
    readers_t r = {-1, -1, 0};
    for (int j = g->first; j < g->first + g->n; j++) {
        const remat_layer *l = &s->m->layers[j];
        int by_src = l->src == k, by_src2 = l->src2 == k;
        if (!by_src && !by_src2) continue;
        if (r.first < 0) r.first = j;
        r.last = j;
        if (by_src && remat_layer_saves_input(l)) r.saved = 1;
    }
    return r;
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
/* Rows [t0, t0 + tc) of the output of layer k as segment g's chunk sees it: the
 * segment input x for k = g->first - 1, else the layer's chunk output. */
static const void *chunk_rows(remat_session *s, const remat_segment *g, int k, const void *x) {
    return k < g->first ? x : s->ls[k].out_ptr;
}

static remat_status chunk_forward(remat_session *s, int sg, int c, const void *in, void *out, int keep,
                                  int recompute, int free_input) {
    const remat_segment *g = &s->sch.segs[sg];
    int64_t tc = s->m->T / g->k, t0 = (int64_t)c * tc, N = s->m->N;
    const void *x = coff(s, in, t0 * N * s->m->layers[g->first].in_features);
    int last = g->first + g->n - 1;
    int last_use = readers_of(s, g, g->first - 1).last;
    for (int j = g->first; j <= last; j++) {
        const remat_layer *l = &s->m->layers[j];
        layer_state *st = &s->ls[j];
        void *y;
        if (j == last && !recompute) {
            y = off(s, out, t0 * N * l->out_features);
        } else {
            int saved = j < last && keep && readers_of(s, g, j).saved;
            remat_ex_describe_out(s, &st->out, saved ? REMAT_ROLE_SAVED : REMAT_ROLE_TRANSIENT, j, tc, l->out_features);
            TRY(remat_ex_alloc(s, &st->out));
            y = st->out.ptr;
        }
        int own_v = remat_layer_is_neuron(l) && g->k == 1 && !recompute;
        if (own_v) {
            remat_ex_describe_state(s, &st->v, REMAT_ROLE_NEURON_STATE, j, l->out_features);
            TRY(remat_ex_alloc(s, &st->v));
            TRY(fill_v_init(s, &st->v, l));
        }
        const void *in2 = l->src2 == REMAT_SRC_NONE ? NULL : chunk_rows(s, g, l->src2, x);
        remat_fwd_args fa = {j, tc, chunk_rows(s, g, l->src, x), y, in2, keep, recompute};
        st->in_ptr = fa.in; /* backward reads the chunk's input and later layers its output */
        st->out_ptr = y;
        TRY(remat_layer_step_of(l->type)->forward(s, &fa));
        if (own_v) TRY(remat_ex_free(s, &st->v));
        /* outputs whose last reader in forward was layer j, unless kept for backward */
        int srcs[2] = {l->src, l->src2};
        for (int q = 0; q < 2; q++) {
            int k = srcs[q];
            if (k < g->first || (q == 1 && k == l->src)) continue;
            readers_t r = readers_of(s, g, k);
            if (r.last == j && !(keep && r.saved)) TRY(remat_ex_free(s, &s->ls[k].out));
        }
        if (free_input && j == last_use) TRY(remat_ex_free(s, &s->act[sg]));
        /* spike counts of full-T internal outputs (a split point's input in some plan) */
        if (!recompute && g->k == 1 && j < last) TRY(note_nnz(s, &st->out, j, l->out_values));
        if (j == last && recompute) TRY(remat_ex_free(s, &st->out)); /* nobody reads the last output */
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
        remat_ex_op_begin(s, &op, REMAT_OP_COPY, producer, t->block, 0, t->elems);
        *nnz = s->ops->count_nonzero(s->be->ctx, t->ptr, t->enc, t->elems);
        TRY(remat_ex_op_end(s, &op));
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

/* Decompresses a segment's input into dst (n activation elements); the lossy fault
 * flips one element between 0 and 1. */
static remat_status decompress_into(remat_session *s, int sg, void *dst, int64_t n) {
    const remat_segment *g = &s->sch.segs[sg];
    remat_tensor *c = &s->comp[sg];
    op_t op;
    remat_ex_op_begin(s, &op, REMAT_OP_DECOMPRESS, g->first, g->block, s->m->T, n);
    if (s->ops->has_data) {
        TRY(s->ops->decompress(s->be->ctx, g->comp, dst, act_enc(s), n, c->ptr, c->bytes, s->err));
        if (s->o.fault == REMAT_FAULT_LOSSY_COMPRESS && n > 0) {
            uint32_t v = 0; /* the first element's bytes (little-endian host): zero or not */
            s->ops->to_host(s->be->ctx, &v, dst, act_bytes(s));
            v = v == 0 ? (s->bf16 ? remat_f32_to_bf16(1.0f) : remat_f32_bits(1.0f)) : 0;
            s->ops->from_host(s->be->ctx, dst, &v, act_bytes(s));
        }
    }
    return remat_ex_op_end(s, &op);
}

/* Verify's losslessness check: decompress into scratch and compare bit patterns. */
static remat_status check_compression(remat_session *s, int sg) {
    remat_tensor *x = &s->act[sg];
    int64_t n = x->elems, bytes = x->bytes;
    void *scratch = NULL;
    TRY(s->ops->segment_alloc(s->be->ctx, bytes > 0 ? bytes : 4, &scratch, s->err));
    remat_status st = decompress_into(s, sg, scratch, n);
    uint8_t *a = remat_xmalloc((size_t)bytes + 4, s->err), *b = remat_xmalloc((size_t)bytes + 4, s->err);
    if (st == REMAT_OK && a && b) {
        s->ops->to_host(s->be->ctx, a, x->ptr, bytes);
        s->ops->to_host(s->be->ctx, b, scratch, bytes);
        s->res->compressions_checked++;
        if (memcmp(a, b, (size_t)bytes) != 0) s->res->compression_mismatches++;
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
        TRY(remat_ex_alloc(s, &s->comp[sg]));
        op_t op;
        remat_ex_op_begin(s, &op, REMAT_OP_COMPRESS, g->first, g->block, m->T, x->elems);
        if (s->ops->has_data)
            TRY(s->ops->compress(s->be->ctx, g->comp, s->comp[sg].ptr, s->comp[sg].bytes, x->ptr, x->enc, x->elems,
                                 s->err));
        TRY(remat_ex_op_end(s, &op));
        s->res->compressions++;
        if (s->o.check_compression && s->ops->has_data) TRY(check_compression(s, sg));
    }
    remat_ex_describe_out(s, y, segment_output_role(s, sg), last, m->T, m->layers[last].out_features);
    TRY(remat_ex_alloc(s, y));
    if (g->k > 1) { /* neuron states live across chunks; boundaries kept for backward */
        for (int j = g->first; j <= last; j++) {
            if (!remat_layer_is_neuron(&m->layers[j])) continue;
            remat_ex_describe_state(s, &s->ls[j].v, REMAT_ROLE_NEURON_STATE, j, m->layers[j].out_features);
            TRY(remat_ex_alloc(s, &s->ls[j].v));
            TRY(fill_v_init(s, &s->ls[j].v, &m->layers[j]));
        }
    }
    int free_input = sg > 0 && !g->keeps_input_raw;
    for (int c = 0; c < g->k; c++) {
        for (int j = g->first; c > 0 && j <= last; j++) {
            if (!remat_layer_is_neuron(&m->layers[j])) continue;
            remat_tensor *b = &s->bound[j * s->max_k + c];
            remat_ex_describe_state(s, b, REMAT_ROLE_NEURON_STATE, j, m->layers[j].out_features);
            TRY(remat_ex_alloc(s, b));
            op_t op;
            remat_ex_op_begin(s, &op, REMAT_OP_COPY, j, m->layers[j].block, 0, b->elems);
            if (s->ops->has_data) s->ops->copy(s->be->ctx, b->ptr, s->ls[j].v.ptr, b->bytes);
            TRY(remat_ex_op_end(s, &op));
        }
        TRY(chunk_forward(s, sg, c, x->ptr, y->ptr, !g->checkpoint, 0, free_input && g->k == 1));
    }
    for (int j = g->first; g->k > 1 && j <= last; j++) TRY(remat_ex_free(s, &s->ls[j].v));
    if (free_input) TRY(remat_ex_free(s, x));
    return note_nnz(s, y, last, m->layers[last].out_values);
}

/* What segment_backward's phases share: the segment, its input (decompressed into xin
 * when compressed) and the gradients at its two ends. */
typedef struct seg_bwd {
    int sg, last, skip_din, chunked;
    int64_t tc, fin;             /* time steps per chunk, input features */
    remat_tensor *x, *dout, *din; /* the saved input, the gradients of the output and the input */
    remat_tensor xin;            /* the decompressed input (id -1: none) */
    const void *in;              /* the input the recomputation reads */
} seg_bwd;

/* recompute chunk c of the segment from its boundary state */
static remat_status chunk_recompute(remat_session *s, const seg_bwd *b, int c) {
    const remat_segment *g = &s->sch.segs[b->sg];
    const remat_model *m = s->m;
    s->mem.phase = REMAT_PHASE_RECOMPUTE;
    for (int j = g->first; j <= b->last; j++) {
        if (!remat_layer_is_neuron(&m->layers[j])) continue;
        if (c > 0) {
            s->ls[j].v = s->bound[j * s->max_k + c];
            s->bound[j * s->max_k + c].id = -1;
        } else {
            remat_ex_describe_state(s, &s->ls[j].v, REMAT_ROLE_NEURON_STATE, j, m->layers[j].out_features);
            TRY(remat_ex_alloc(s, &s->ls[j].v));
            TRY(fill_v_init(s, &s->ls[j].v, &m->layers[j]));
        }
    }
    TRY(chunk_forward(s, b->sg, c, b->in, NULL, 1, 1, 0));
    s->res->recomputed_layers += g->n;
    for (int j = g->first; j <= b->last; j++) TRY(remat_ex_free(s, &s->ls[j].v));
    s->mem.phase = REMAT_PHASE_BACKWARD;
    return REMAT_OK;
}

/* Layer j's backward over the chunk starting at t0: the gradient of each operand
 * allocated by its first writer, the layer's own output gradient and the outputs whose
 * first reader (the last in backward) it was freed. */
static remat_status layer_backward(remat_session *s, seg_bwd *b, int j, int64_t t0) {
    const remat_segment *g = &s->sch.segs[b->sg];
    const remat_model *m = s->m;
    const remat_layer *l = &m->layers[j];
    const int64_t N = m->N, tc = b->tc;
    remat_tensor *din = b->din;
    const void *dy = j == b->last ? coff(s, b->dout->ptr, t0 * N * l->out_features) : s->ls[j].grad.ptr;
    void *dx[2] = {NULL, NULL};
    int srcs[2] = {l->src, l->src2};
    for (int q = 0; q < 2; q++) { /* the gradient of each operand, allocated by its first writer */
        int k = srcs[q];
        if (k == REMAT_SRC_NONE) continue;
        if (k < g->first) {
            if (b->skip_din) continue;
            if (din->id < 0) {
                TRY(remat_ex_alloc(s, din));
                TRY(remat_ex_zero(s, din));
            }
            dx[q] = off(s, din->ptr, t0 * N * b->fin);
        } else {
            if (s->ls[k].grad.id < 0) {
                remat_ex_describe_out(s, &s->ls[k].grad, REMAT_ROLE_ACT_GRAD, k, tc, m->layers[k].out_features);
                TRY(remat_ex_alloc(s, &s->ls[k].grad));
                TRY(remat_ex_zero(s, &s->ls[k].grad));
            }
            dx[q] = s->ls[k].grad.ptr;
        }
    }
    remat_bwd_args ba = {j, tc, dx[0], dy, dx[1], b->chunked};
    TRY(remat_layer_step_of(l->type)->backward(s, &ba));
    if (j != b->last) TRY(remat_ex_free(s, &s->ls[j].grad));
    else if (!b->chunked) TRY(remat_ex_free(s, b->dout));
    /* outputs whose first reader (the last in backward) was layer j */
    for (int q = 0; q < 2; q++) {
        int k = srcs[q];
        if (k == REMAT_SRC_NONE || (q == 1 && k == l->src)) continue;
        if (readers_of(s, g, k).first != j) continue;
        if (k >= g->first) {
            TRY(remat_ex_free(s, &s->ls[k].out));
        } else if (!b->chunked) {
            TRY(remat_ex_free(s, &b->xin));
            if (b->sg > 0) TRY(remat_ex_free(s, b->x));
        }
    }
    return REMAT_OK;
}

/* The segment's input: decompressed when it was kept compressed. */
static remat_status segment_input(remat_session *s, seg_bwd *b) {
    const remat_segment *g = &s->sch.segs[b->sg];
    remat_tensor_describe(&b->xin, REMAT_ENC_F32, REMAT_ROLE_SAVED, g->first, g->block, 0, NULL, -1, -1, -1);
    b->in = b->x->ptr;
    if (g->checkpoint && g->comp != REMAT_COMP_NONE) {
        s->mem.phase = REMAT_PHASE_RECOMPUTE;
        remat_ex_describe_out(s, &b->xin, REMAT_ROLE_SAVED, g->first, s->m->T, b->fin);
        b->xin.layer = g->first;
        TRY(remat_ex_alloc(s, &b->xin));
        TRY(decompress_into(s, b->sg, b->xin.ptr, b->xin.elems));
        TRY(remat_ex_free(s, &s->comp[b->sg]));
        b->in = b->xin.ptr;
    }
    return REMAT_OK;
}

/* dout: gradient of the segment output (full T); returns the input's gradient in *din. */
static remat_status segment_backward(remat_session *s, int sg, remat_tensor *dout, remat_tensor *din) {
    const remat_segment *g = &s->sch.segs[sg];
    const remat_model *m = s->m;
    seg_bwd b = {.sg = sg, .last = g->first + g->n - 1, .chunked = g->k > 1, .tc = m->T / g->k,
                 .fin = seg_in_features(s, g), .x = &s->act[sg], .dout = dout, .din = din};
    const int last = b.last;
    TRY(segment_input(s, &b));
    s->mem.phase = REMAT_PHASE_BACKWARD;
    /* the network input's gradient is skipped when asked and when its only reader
     * can run without it (traits' input_grad_optional: linear, conv2d) */
    readers_t rin = readers_of(s, g, g->first - 1);
    b.skip_din = sg == 0 && s->o.no_input_grad && rin.first == rin.last &&
                 remat_layer_input_grad_optional(&m->layers[g->first]);
    remat_ex_describe_out(s, din, REMAT_ROLE_ACT_GRAD, g->first, m->T, b.fin);
    din->layer = g->first;
    /* One chunk: the input gradient is allocated when a layer first writes it, the
     * output gradient freed after the last layer's backward, the saved input after
     * the first layer's. Chunks need all three across chunks. */
    if (!b.skip_din && b.chunked) {
        TRY(remat_ex_alloc(s, din));
        TRY(remat_ex_zero(s, din));
    }
    for (int j = g->first; b.chunked && j <= last; j++) {
        if (!remat_layer_is_neuron(&m->layers[j])) continue;
        remat_ex_describe_state(s, &s->ls[j].gv, REMAT_ROLE_NEURON_STATE, j, m->layers[j].out_features);
        TRY(remat_ex_alloc(s, &s->ls[j].gv));
        TRY(remat_ex_zero(s, &s->ls[j].gv));
    }
    TRY(remat_ex_shard_grads_begin(s, g->first, g->n));
    for (int c = g->k - 1; c >= 0; c--) {
        if (g->checkpoint) TRY(chunk_recompute(s, &b, c));
        for (int j = last; j >= g->first; j--) TRY(layer_backward(s, &b, j, (int64_t)c * b.tc));
    }
    for (int j = g->first; b.chunked && j <= last; j++) TRY(remat_ex_free(s, &s->ls[j].gv));
    TRY(remat_ex_shard_grads_end(s, g->first, g->n));
    for (int j = g->first; s->bf16 && j <= last; j++) { /* the step's bf16 weight copies (gemm_weights) */
        TRY(remat_ex_free(s, &s->wcast[j * 2 + 1]));
        TRY(remat_ex_free(s, &s->wcast[j * 2]));
    }
    TRY(remat_ex_free(s, &b.xin));
    if (sg > 0) TRY(remat_ex_free(s, b.x));
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
            int64_t dims[4];
            int nd = remat_layer_param_dims(l, i, dims);
            remat_tensor_describe(p, REMAT_ENC_F32, REMAT_ROLE_PARAMETER, j, l->block, nd, dims, -1, -1, -1);
            TRY(remat_ex_alloc(s, p));
            op_t op;
            remat_ex_op_begin(s, &op, REMAT_OP_FILL, j, l->block, 0, p->elems);
            int64_t fan_in = remat_layer_fan_in(l);
            const float *given = s->o.init_values ? s->o.init_values[j * MAXP + i] : NULL;
            if (s->ops->has_data && given) {
                s->ops->from_host(s->be->ctx, p->ptr, given, p->bytes);
            } else if (s->ops->has_data) {
                if (fan_in > 0) { /* U(-g/sqrt(fan_in), g/sqrt(fan_in)), as PyTorch's default with g = 1 */
                    float bound = m->init_gain / sqrtf((float)fan_in);
                    s->ops->fill_uniform(s->be->ctx, fptr(p), p->elems, -bound, bound, s->o.seed, REMAT_RNG_PARAM,
                                         (uint64_t)(j * 16 + i));
                } else {
                    fill_const(s, p->ptr, p->elems, remat_layer_param_init_value(l, i));
                }
            }
            TRY(remat_ex_op_end(s, &op));
            if (remat_layer_param_trainable(l, i)) {
                remat_tensor *g = &s->grad[j * MAXP + i];
                *g = *p;
                g->id = -1;
                g->event = -1;
                g->role = REMAT_ROLE_GRADIENT;
                TRY(remat_ex_alloc(s, g));
                TRY(remat_ex_zero(s, g));
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
                    TRY(remat_ex_alloc(s, bs[q]));
                    TRY(remat_ex_zero(s, bs[q]));
                }
            }
            op_t op;
            remat_ex_op_begin(s, &op, REMAT_OP_OPTIMIZER, j, l->block, 0, p->elems);
            if (s->ops->has_data) {
                if (o->type == REMAT_OPT_ADAM)
                    s->ops->adam_update(s->be->ctx, fptr(p), fptr(b1), fptr(b2), fptr(g), o->lr, o->beta1, o->beta2,
                                        o->eps, s->opt_steps, p->elems);
                else
                    s->ops->sgd_update(s->be->ctx, fptr(p), need1 ? fptr(b1) : NULL, fptr(g), o->lr, o->momentum,
                                       first, p->elems);
            }
            TRY(remat_ex_op_end(s, &op));
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
    const int64_t eb = act_bytes(s);
    if (s->ops->segment_alloc(s->be->ctx, n * eb, &src, &e) != REMAT_OK) return;
    if (s->ops->segment_alloc(s->be->ctx, n * eb, &dst, &e) != REMAT_OK ||
        s->ops->segment_alloc(s->be->ctx, n * eb, &back, &e) != REMAT_OK) {
        s->ops->segment_free(s->be->ctx, src);
        if (dst) s->ops->segment_free(s->be->ctx, dst);
        return;
    }
    ACT_KERNEL(s, fill_bernoulli, s->be->ctx, src, n, 0.2f, s->o.seed, REMAT_RNG_INPUT, 0xca11b);
    const remat_encoding enc = act_enc(s);
    int64_t nnz = s->ops->count_nonzero(s->be->ctx, src, enc, n);
    for (int c = 1; c < REMAT_COMP_COUNT; c++) {
        int64_t bytes = remat_compressed_bytes((remat_compressor)c, n, nnz);
        double best_c = 1e30, best_d = 1e30;
        for (int rep = 0; rep < 3; rep++) {
            double a = s->ops->now(s->be->ctx);
            s->ops->compress(s->be->ctx, (remat_compressor)c, dst, bytes, src, enc, n, &e);
            double b = s->ops->now(s->be->ctx);
            s->ops->decompress(s->be->ctx, (remat_compressor)c, back, enc, n, dst, bytes, &e);
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

/* The backend has every bf16-storage twin and the weight conversion. */
static int has_bf16_kernels(const remat_backend_ops *ops) {
#define HAS_ENTRY(ret, name, params, args) &&ops->name
    return ops->bf16_from_f32 REMAT_BACKEND_KERNELS_BF16(HAS_ENTRY);
#undef HAS_ENTRY
}

/* Every layer of m has its kernels on the backend (a backend may lack newer layers). */
static remat_status check_kernels(const remat_model *m, const remat_backend_ops *ops, remat_error *err) {
    for (int j = 0; j < m->n_layers; j++) {
        const remat_layer *l = &m->layers[j];
        const remat_layer_step *step = remat_layer_step_of(l->type);
        int ok = step && (!step->has_kernels || step->has_kernels(ops));
        if (!ok)
            return remat_error_set(err, REMAT_ERR_INPUT,
                                   "%s: layers[%d] (\"%s\", %s): not available on the %s backend yet (use --backend ref)",
                                   m->path ? m->path : "<model>", j, l->name, remat_layer_type_name(l->type), ops->name);
    }
    if (m->precision == REMAT_PRECISION_BF16 && !has_bf16_kernels(ops))
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "%s: precision: \"bf16\" is not available on the %s backend yet (use --backend ref)",
                               m->path ? m->path : "<model>", ops->name);
    return REMAT_OK;
}

remat_session *remat_session_init(const remat_model *m, const remat_plan *p, remat_backend *b,
                                  const remat_exec_opts *o, remat_error *err) {
    if (remat_plan_validate(p, m, p->path && p->path[0] ? p->path : "<plan>", err) != REMAT_OK) return NULL;
    if (check_kernels(m, b->ops, err) != REMAT_OK) return NULL;
    if (b->ops->has_data && remat_exec_preflight(m, p, b, o, err) != REMAT_OK) return NULL; /* fits, before allocating */
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
    s->wcast = remat_xcalloc((size_t)m->n_layers * 2, sizeof(remat_tensor), err);
    s->gacc = remat_xcalloc((size_t)m->n_layers * 2, sizeof(remat_tensor), err);
    s->bf16 = m->precision == REMAT_PRECISION_BF16;
    if (!s->param || !s->grad || !s->opt1 || !s->opt2 || !s->act || !s->comp || !s->bound || !s->ls || !s->wcast ||
        !s->gacc)
        goto fail;
    /* every handle starts unallocated */
    remat_tensor none;
    remat_tensor_describe(&none, REMAT_ENC_F32, REMAT_ROLE_TRANSIENT, -1, -1, 0, NULL, -1, -1, -1);
    for (size_t i = 0; i < np; i++) s->param[i] = s->grad[i] = s->opt1[i] = s->opt2[i] = none;
    for (int i = 0; i <= s->sch.n_segs; i++) s->act[i] = none;
    for (int i = 0; i < s->sch.n_segs; i++) s->comp[i] = none;
    for (size_t i = 0; i < (size_t)m->n_layers * (size_t)s->max_k; i++) s->bound[i] = none;
    for (size_t i = 0; i < (size_t)m->n_layers * 2; i++) s->wcast[i] = s->gacc[i] = none;
    for (int j = 0; j < m->n_layers; j++) {
        layer_state *st = &s->ls[j];
        st->out = st->h = st->mean = st->rstd = st->v = st->gv = st->grad = none;
    }
    s->input = s->labels = s->input_grad = none;
    if (remat_ex_shard_init(s, err) != REMAT_OK) goto fail;
    if (remat_mem_init(&s->mem, b, &o->caching, o->trace, err) != REMAT_OK) goto fail;
    s->t0 = s->ops->now(b->ctx);
    if (o->trace) {
        remat_trace *t = o->trace;
        if (remat_trace_set_texts(t, m->text ? m->text : "", p->text ? p->text : "", err) != REMAT_OK) goto fail;
        snprintf(t->backend, sizeof t->backend, "%s", b->ops->name);
        t->seed = o->seed;
        t->no_input_grad = o->no_input_grad ? 1 : 0;
        t->precision = (int32_t)m->precision;
        t->T = m->T;
        t->N = m->N;
        t->ranks = o->shard ? o->shard->ranks : 0;
        t->reduce_blocks = o->shard ? o->shard->blocks : 0;
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
    remat_tensor_describe(&s->input, act_enc(s), REMAT_ROLE_BATCH, -1, -1, 3, dims, 0, 1, -1);
    TRY(remat_ex_alloc(s, &s->input));
    op_t op;
    remat_ex_op_begin(s, &op, REMAT_OP_FILL, -1, -1, m->T, s->input.elems);
    if (s->ops->has_data && s->shard) {
        TRY(remat_ex_shard_input(s));
    } else if (s->ops->has_data) {
        if (m->input_spikes)
            ACT_KERNEL(s, fill_bernoulli, s->be->ctx, s->input.ptr, s->input.elems, m->input_rate, s->o.seed,
                       REMAT_RNG_INPUT, (uint64_t)s->iter);
        else if (m->input_counts_max > 0)
            ACT_KERNEL(s, fill_counts, s->be->ctx, s->input.ptr, s->input.elems, m->input_counts_max, s->o.seed,
                       REMAT_RNG_INPUT, (uint64_t)s->iter);
        else
            ACT_KERNEL(s, fill_uniform, s->be->ctx, s->input.ptr, s->input.elems, 0.0f, 1.0f, s->o.seed,
                       REMAT_RNG_INPUT, (uint64_t)s->iter);
    }
    TRY(remat_ex_op_end(s, &op));
    int64_t ldims[1] = {m->N};
    remat_tensor_describe(&s->labels, REMAT_ENC_I32, REMAT_ROLE_BATCH, -1, -1, 1, ldims, -1, 0, -1);
    TRY(remat_ex_alloc(s, &s->labels));
    remat_ex_op_begin(s, &op, REMAT_OP_FILL, -1, -1, 0, m->N);
    if (s->ops->has_data && s->shard)
        TRY(remat_ex_shard_labels(s));
    else if (s->ops->has_data)
        s->ops->fill_labels(s->be->ctx, (int32_t *)s->labels.ptr, m->N, m->classes, s->o.seed, (uint64_t)s->iter);
    TRY(remat_ex_op_end(s, &op));
    return note_nnz(s, &s->input, -1, remat_model_input_values(m));
}

/* The end of the autocast region (after the loss): the cast cache is cleared, so the
 * bf16 weight copies that no saved graph holds - those of checkpointed segments, whose
 * forward kept nothing - are freed; their recomputation makes new ones (gemm_weights),
 * which live until the segment's backward ends, as the other segments' copies do. */
static remat_status free_unsaved_weight_copies(remat_session *s) {
    for (int sg = 0; s->bf16 && sg < s->sch.n_segs; sg++) {
        const remat_segment *g = &s->sch.segs[sg];
        if (!g->checkpoint) continue;
        for (int j = g->first; j < g->first + g->n; j++) {
            TRY(remat_ex_free(s, &s->wcast[j * 2 + 1]));
            TRY(remat_ex_free(s, &s->wcast[j * 2]));
        }
    }
    return REMAT_OK;
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
    TRY(remat_ex_free(s, &s->input_grad));
    TRY(remat_ex_free(s, &s->labels));
    TRY(remat_ex_free(s, &s->input));
    remat_alloc_model_reset_peaks(s->mem.exact);
    remat_alloc_model_reset_peaks(s->mem.caching);
    for (int j = 0; j < m->n_layers; j++)
        for (int i = 0; i < MAXP; i++)
            if (s->grad[j * MAXP + i].id >= 0) TRY(remat_ex_zero(s, &s->grad[j * MAXP + i]));
    TRY(make_batch(s));
    s->act[0] = s->input;
    for (int sg = 0; sg < n; sg++) TRY(segment_forward(s, sg));

    /* loss */
    s->mem.phase = REMAT_PHASE_LOSS;
    remat_tensor rate, dout;
    int64_t rdims[2] = {m->N, m->classes};
    remat_tensor_describe(&rate, REMAT_ENC_F32, REMAT_ROLE_SAVED, -1, -1, 2, rdims, -1, 0, -1);
    TRY(remat_ex_alloc(s, &rate));
    op_t op;
    remat_ex_op_begin(s, &op, REMAT_OP_LOSS_FWD, -1, -1, m->T, s->act[n].elems);
    float loss = 0.0f;
    remat_tensor loss_bufs[3]; /* the blocked loss's partial sums (shard_steps.c) */
    for (int i = 0; i < 3; i++) loss_bufs[i].id = -1;
    if (s->shard)
        TRY(remat_ex_shard_loss(s, &rate, s->act[n].ptr, &loss, loss_bufs));
    else if (s->ops->has_data)
        loss = ACT_KERNEL(s, loss_forward, s->be->ctx, fptr(&rate), s->act[n].ptr, (const int32_t *)s->labels.ptr,
                          m->loss, m->T, m->N, m->classes);
    TRY(remat_ex_op_end(s, &op));
    TRY(remat_ex_free(s, &s->act[n]));
    remat_alloc_stats ex, ca;
    stats(s, &ex, &ca);
    r->end_of_forward_bytes = ex.live_bytes; /* measured as the simulator does (sim/des.h) */
    r->end_of_forward_reserved = ca.reserved_bytes;
    for (int i = 0; i < 3; i++) TRY(remat_ex_free(s, &loss_bufs[i])); /* after the end of forward is measured */
    TRY(free_unsaved_weight_copies(s));
    for (int sg = 0; sg < n; sg++)
        if (s->comp[sg].id >= 0) r->compressed_bytes += s->comp[sg].bytes;
    int64_t odims[3] = {m->T, m->N, m->classes};
    remat_tensor_describe(&dout, act_enc(s), REMAT_ROLE_ACT_GRAD, m->n_layers - 1, m->layers[m->n_layers - 1].block,
                          3, odims, 0, 1, -1);
    TRY(remat_ex_alloc(s, &dout));
    TRY(remat_ex_zero(s, &dout));
    remat_ex_op_begin(s, &op, REMAT_OP_LOSS_BWD, -1, -1, m->T, dout.elems);
    if (s->ops->has_data && s->shard) /* the mean over the global batch */
        TRY(remat_ex_k_loss_backward_n(s, dout.ptr, fptr(&rate)));
    else if (s->ops->has_data)
        ACT_KERNEL(s, loss_backward, s->be->ctx, dout.ptr, fptr(&rate), (const int32_t *)s->labels.ptr, m->loss, m->T,
                   m->N, m->classes);
    TRY(remat_ex_op_end(s, &op));
    TRY(remat_ex_free(s, &rate));

    /* backward, segments in reverse */
    for (int sg = n - 1; sg >= 0; sg--) {
        remat_tensor din;
        TRY(segment_backward(s, sg, &dout, &din));
        s->mem.phase = REMAT_PHASE_BACKWARD;
        TRY(remat_ex_free(s, &dout));
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
        remat_ex_free(s, &s->input_grad);
        remat_ex_free(s, &s->labels);
        remat_ex_free(s, &s->input);
        size_t np = (size_t)s->m->n_layers * MAXP;
        for (size_t i = 0; s->wcast && i < (size_t)s->m->n_layers * 2; i++) remat_ex_free(s, &s->wcast[i]);
        for (size_t i = 0; s->gacc && i < (size_t)s->m->n_layers * 2; i++) remat_ex_free(s, &s->gacc[i]);
        for (size_t i = 0; i < np; i++) {
            remat_ex_free(s, &s->opt2[i]);
            remat_ex_free(s, &s->opt1[i]);
            remat_ex_free(s, &s->grad[i]);
            remat_ex_free(s, &s->param[i]);
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
    remat_xfree(s->wcast);
    remat_xfree(s->gacc);
    remat_xfree(s);
}

int remat_session_iter(const remat_session *s) { return s->iter; }

/* ---- host copies ----------------------------------------------------------- */

/* Copies t to the host; a bf16 tensor arrives widened to floats (t->elems of them). */
static remat_status copy_out(remat_session *s, const remat_tensor *t, void *dst, const char *what, remat_error *err) {
    if (!s->ops->has_data)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: the %s backend holds no data", what, s->ops->name);
    if (t->id < 0) return remat_error_set(err, REMAT_ERR_INPUT, "%s: not available (run a step first)", what);
    if (t->enc != REMAT_ENC_BF16) {
        s->ops->to_host(s->be->ctx, dst, t->ptr, t->bytes);
        return REMAT_OK;
    }
    uint16_t *h = remat_xmalloc((size_t)t->bytes + 2, err);
    if (!h) return REMAT_ERR_NOMEM;
    s->ops->to_host(s->be->ctx, h, t->ptr, t->bytes);
    float *f = dst;
    for (int64_t i = 0; i < t->elems; i++) f[i] = remat_bf16_to_f32(h[i]);
    remat_xfree(h);
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
    if (layer < 0 || layer >= s->m->n_layers || !remat_layer_has_mask(&s->m->layers[layer]))
        return remat_error_set(err, REMAT_ERR_INPUT, "layer %d has no dropout mask", layer);
    if (!s->ops->has_data)
        return remat_error_set(err, REMAT_ERR_INPUT, "dropout mask: the %s backend holds no data", s->ops->name);
    const remat_layer *l = &s->m->layers[layer];
    int64_t nf = s->n_total * l->out_features; /* the mask is a function of the global sample */
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
