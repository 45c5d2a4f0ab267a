/* torch_sim.c - the peak of a recorded PyTorch step under a plan (torch_sim.h).
 *
 * Positions: recorded event i happens at key i. A change made by the plan gets a key
 * between two recorded events: frees at a unit's forward end at fe - 0.3 (fe: the
 * position of its fwd_end mark, the first event after the forward), the compressed
 * input at fs - 0.2 (after the previous unit's frees), frees at the backward's end at
 * be - 0.25, and the replay of a unit's forward inside (bs - 0.2, bs), after whatever
 * ended at bs - 0.25 (the unit after it finishing its backward). The live bytes are
 * then swept in key order, frees before allocations at equal keys.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc/alloc_model.h"
#include "core/io/ext_record.h"
#include "sim/torch_sim.h"

#define BAD(...) remat_error_set(err, REMAT_ERR_INPUT, __VA_ARGS__)

typedef struct point {
    double key;
    int64_t delta;
    int64_t id;   /* the allocation this point allocates or frees (caching_replay); <= -2: the free of
                     the (-2 - id)-th storage older than the recording; -1: none */
    int32_t unit; /* the unit whose recomputation this is, -1 */
} point;

/* Every allocation point gets the next id; a free point added right after it (every
 * caller adds an allocation's free, when it has one, as the next point) frees it. */
typedef struct points {
    point *p;
    int64_t n, cap;
    int32_t unit; /* tag of the points added next */
    int64_t next_id, open; /* ids given so far; the allocation the next free point frees, -1 */
    int64_t n_older;       /* frees of storages older than the recording */
} points;

static int add_point(points *ps, double key, int64_t delta, remat_error *err) {
    if (ps->n == ps->cap) {
        int64_t c = ps->cap ? ps->cap * 2 : 1024;
        point *q = remat_xrealloc(ps->p, (size_t)c * sizeof *q, err);
        if (!q) return 0;
        ps->p = q;
        ps->cap = c;
    }
    ps->p[ps->n].key = key;
    ps->p[ps->n].unit = ps->unit;
    ps->p[ps->n].id = delta > 0 ? ps->next_id : delta < 0 ? ps->open : -1;
    ps->open = delta > 0 ? ps->next_id++ : -1;
    ps->p[ps->n++].delta = delta;
    return 1;
}

/* The free of a storage older than the recording (no allocation point). */
static int add_older_free(points *ps, double key, int64_t bytes, remat_error *err) {
    ps->open = -1;
    if (!add_point(ps, key, -bytes, err)) return 0;
    ps->p[ps->n - 1].id = -2 - ps->n_older++;
    return 1;
}

static int cmp_point(const void *a, const void *b) {
    const point *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    if (x->delta != y->delta) return (x->delta > y->delta) - (x->delta < y->delta); /* frees first */
    return (x->id > y->id) - (x->id < y->id);
}

static const char *exec_names[REMAT_TORCH_EXEC_COUNT] = {"apply_plan", "torch-nonreentrant"};
static const char *exec_labels[REMAT_TORCH_EXEC_COUNT] = {
    "remat_torch.apply_plan", "torch.utils.checkpoint(use_reentrant=False, preserve_rng_state=False)"};

int remat_torch_exec_from_name(const char *s) {
    for (int i = 0; s && i < REMAT_TORCH_EXEC_COUNT; i++)
        if (!strcmp(s, exec_names[i])) return i;
    return -1;
}
const char *remat_torch_exec_name(remat_torch_exec e) { return e < REMAT_TORCH_EXEC_COUNT ? exec_names[e] : "?"; }
const char *remat_torch_exec_label(remat_torch_exec e) { return e < REMAT_TORCH_EXEC_COUNT ? exec_labels[e] : "?"; }

remat_status remat_torch_sim_model(const remat_ext_trace *t, const char *origin, remat_model *out, remat_error *err) {
    memset(out, 0, sizeof *out);
    const remat_ext_record *r = t->record;
    if (!r) return BAD("%s: /record: expected a recorded PyTorch step (remat_torch.record)", origin);
    if (!r->model || !r->model[0])
        return BAD("%s: /record: model: the step was recorded without a model file (record(..., model=...)); a plan "
                   "needs it (without one, remat simulate predicts the recorded step itself, and remat plot draws it)",
                   origin);
    return remat_model_parse(r->model, strlen(r->model), origin, out, err);
}

/* What the recording says about one checkpointed unit. */
typedef struct unit {
    int l0, l1;                 /* its layers */
    remat_compressor comp;
    int64_t mk_fs, mk_fe;       /* mark indices of its forward's begin and end */
    int64_t fs, fe, bs, be;     /* positions */
    int64_t in_sid, out_sid;    /* storages of its input and output (-1: older than the recording / none) */
    int64_t in_numel, in_nnz;
    int64_t pfs, pfe;           /* its forward in the probe (no saved tensors); -1: no probe */
    int64_t gy_sid;             /* storage of the gradient of its output (-1) */
    int64_t bn_bytes;           /* batch-norm statistics of its layers */
    int k;                      /* time chunks; k > 1: read from the chunk probe for k */
    int32_t q0, q1;             /* k > 1: the modules of its first and last layers */
    int64_t mk_cb, mk_ce;       /* k > 1: mark indices of that probe's chunks_begin / chunks_end */
    int64_t cw_lo, cw_mid, cw_hi; /* the compressor probe's compress [lo, mid) and decompress [mid, hi) of its
                                     input (positions), -1: none (then the compressed bytes only) */
    int64_t cw_nnz;             /* the non-zeros of the probe's input (-1) */
} unit;

typedef struct step_marks {
    int64_t mk_begin, mk_end;   /* mark indices of the step */
    int64_t begin, end;         /* positions */
    int64_t loss, bwd_end;      /* positions of the loss phase and of the phase after backward */
    int64_t mk_probe_begin, mk_probe_end; /* the probe forward after the steps; -1: none */
} step_marks;

/* The module of layer l (or of block b when is_block), -1 when the recording has none. */
static int32_t module_of(const remat_ext_record *r, int layer, int block) {
    for (int32_t i = 0; i < r->n_modules; i++) {
        if (block >= 0 && r->modules[i].is_block && r->modules[i].block == block) return i;
        if (block < 0 && r->modules[i].layer == layer) return i;
    }
    return -1;
}

/* The module's forward (first fwd_begin / fwd_end of the step, exactly one call), the
 * arrival of its output's gradient and the completion of its input's. */
static remat_status module_marks(const remat_ext_record *r, const step_marks *sm, int32_t q, const char *what,
                                 const char *origin, int64_t *fb, int64_t *fe, int64_t *bb, int64_t *be,
                                 remat_error *err) {
    *fb = *fe = *bb = *be = -1;
    int calls = 0;
    for (int64_t m = sm->mk_begin; m <= sm->mk_end; m++) {
        const remat_rec_mark *k = &r->marks[m];
        if (k->module != q || k->kind == REMAT_REC_PHASE) continue;
        if (k->kind == REMAT_REC_FWD_BEGIN && calls++ == 0) *fb = m;
        else if (k->kind == REMAT_REC_FWD_END && *fe < 0) *fe = m;
        else if (k->kind == REMAT_REC_BWD_BEGIN && *bb < 0 && *fe >= 0) *bb = m;
        else if (k->kind == REMAT_REC_BWD_END && *be < 0 && *fe >= 0) *be = m;
    }
    if (calls != 1 || *fe < 0)
        return BAD("%s: /record/marks: %s ran %d times in the step, expected once (a module called twice cannot be "
                   "checkpointed as one unit here)",
                   origin, what, calls);
    return REMAT_OK;
}

static const char *module_name(const remat_ext_trace *t, int32_t q) {
    return q >= 0 ? remat_ext_label(t, t->record->modules[q].label) : "?";
}

static remat_status find_step(const remat_ext_record *r, const char *origin, step_marks *sm, int *step,
                              remat_error *err) {
    int last = -1;
    for (int64_t m = 0; m < r->n_marks; m++)
        if (r->marks[m].kind == REMAT_REC_STEP_END && r->marks[m].step > last) last = r->marks[m].step;
    if (last < 0) return BAD("%s: /record/marks: no complete training step recorded", origin);
    memset(sm, 0, sizeof *sm);
    sm->mk_begin = sm->mk_end = sm->loss = sm->bwd_end = -1;
    int in_bwd = 0;
    for (int64_t m = 0; m < r->n_marks; m++) {
        const remat_rec_mark *k = &r->marks[m];
        if (k->step != last) continue;
        if (k->kind == REMAT_REC_STEP_BEGIN) sm->mk_begin = m, sm->begin = k->event;
        if (k->kind == REMAT_REC_STEP_END) sm->mk_end = m, sm->end = k->event;
        if (k->kind == REMAT_REC_PHASE) {
            if (k->module == REMAT_REC_LOSS && sm->loss < 0) sm->loss = k->event;
            if (in_bwd && sm->bwd_end < 0) sm->bwd_end = k->event;
            in_bwd = k->module == REMAT_REC_BACKWARD;
        }
    }
    sm->mk_probe_begin = sm->mk_probe_end = -1;
    for (int64_t m = 0; m < r->n_marks; m++) {
        if (r->marks[m].kind == REMAT_REC_PROBE_BEGIN) sm->mk_probe_begin = m;
        if (r->marks[m].kind == REMAT_REC_PROBE_END && sm->mk_probe_begin >= 0) sm->mk_probe_end = m;
    }
    if (sm->mk_probe_end < 0) sm->mk_probe_begin = -1;
    if (sm->mk_begin < 0 || sm->mk_end < sm->mk_begin || sm->loss < 0 || sm->bwd_end < 0)
        return BAD("%s: /record/marks: step %d lacks its step_begin, loss or backward phase marks", origin, last);
    *step = last;
    return REMAT_OK;
}

/* k > 1: the mark indices of the recording's chunk probe for block b's k (chunks_begin /
 * chunks_end), refused when it lacks a completed one. */
static remat_status chunk_probe(const remat_ext_record *r, const remat_block_plan *bp, int b, const char *origin,
                                int64_t *cb, int64_t *ce, remat_error *err) {
    int64_t mk_cb = -1, mk_ce = -1;
    char have[128] = "";
    size_t hl = 0;
    for (int64_t q = 0; q < r->n_marks; q++) {
        if (r->marks[q].kind != REMAT_REC_CHUNKS_BEGIN) continue;
        if (r->marks[q].tstep == bp->k && mk_cb < 0) mk_cb = q;
        int64_t e = q + 1; /* the probes that completed (chunks_end with the same k) */
        while (e < r->n_marks && r->marks[e].kind != REMAT_REC_CHUNKS_END && r->marks[e].kind != REMAT_REC_CHUNKS_BEGIN)
            e++;
        if (e < r->n_marks && r->marks[e].kind == REMAT_REC_CHUNKS_END && r->marks[e].tstep == r->marks[q].tstep &&
            hl + 16 < sizeof have)
            hl += (size_t)snprintf(have + hl, sizeof have - hl, "%s%d", hl ? ", " : "", r->marks[q].tstep);
    }
    for (int64_t q = mk_cb + 1; mk_cb >= 0 && q < r->n_marks && mk_ce == -1; q++) {
        if (r->marks[q].kind == REMAT_REC_CHUNKS_BEGIN) break;
        if (r->marks[q].kind == REMAT_REC_CHUNKS_END) mk_ce = r->marks[q].tstep == bp->k ? q : -2;
    }
    if (mk_ce < -1) mk_cb = mk_ce = -1; /* the probe failed (the recording's notes say why) */
    if (mk_cb < 0) mk_ce = -1;
    if (mk_ce < 0)
        return BAD("%s: blocks[%d].k: time chunks (k = %d) are predicted from the recording's chunk probe for "
                   "k = %d, which it lacks (it has %s%s; record with the model file and chunks including %d)",
                   origin, b, bp->k, bp->k, hl ? "probes for k = " : "none", have, bp->k);
    *cb = mk_cb;
    *ce = mk_ce;
    return REMAT_OK;
}

/* The compressor probe's compress / decompress windows of the unit's input (opened by module qa). */
static void comp_probe(const remat_ext_record *r, int32_t qa, unit *x) {
    x->cw_lo = x->cw_mid = x->cw_hi = x->cw_nnz = -1;
    for (int64_t q = 0; x->comp != REMAT_COMP_NONE && q < r->n_marks; q++) {
        const remat_rec_mark *c = &r->marks[q];
        if (c->kind != REMAT_REC_COMP_BEGIN || c->module != qa || c->tstep != (int)x->comp) continue;
        if (q + 2 < r->n_marks && r->marks[q + 1].kind == REMAT_REC_COMP_MID &&
            r->marks[q + 2].kind == REMAT_REC_COMP_END && r->marks[q + 2].tstep == (int)x->comp) {
            x->cw_lo = c->event;
            x->cw_nnz = c->nnz;
            x->cw_mid = r->marks[q + 1].event;
            x->cw_hi = r->marks[q + 2].event;
        }
        break;
    }
}

/* The unit's forward in the probe forward after the steps (modules qa .. qz), -1 when none. */
static void forward_probe(const remat_ext_record *r, const step_marks *sm, int32_t qa, int32_t qz, const char *origin,
                          unit *x) {
    x->pfs = x->pfe = -1;
    if (sm->mk_probe_begin < 0) return;
    step_marks pm = *sm;
    pm.mk_begin = sm->mk_probe_begin;
    pm.mk_end = sm->mk_probe_end;
    int64_t pb, pe, d1, d2, pb2, pe2;
    remat_error ignore = {REMAT_OK, {0}};
    if (module_marks(r, &pm, qa, "", origin, &pb, &pe, &d1, &d2, &ignore) == REMAT_OK &&
        module_marks(r, &pm, qz, "", origin, &pb2, &pe2, &d1, &d2, &ignore) == REMAT_OK) {
        x->pfs = r->marks[pb].event;
        x->pfe = r->marks[pe2].event;
    }
}

/* Segment sg (layers x->l0 .. x->l1, set) of the ns segments of block b (its span ending at
 * block last_b): its modules, its positions in the step and in the probes. */
static remat_status segment_unit(const remat_ext_trace *t, const remat_model *m, int b, int last_b, int sg, int ns,
                                 const step_marks *sm, const char *origin, unit *x, remat_error *err) {
    const remat_ext_record *r = t->record;
    x->q0 = module_of(r, x->l0, -1);
    x->q1 = module_of(r, x->l1, -1);
    if (x->k > 1 && (x->q0 < 0 || x->q1 < 0))
        return BAD("%s: blocks[%d].k: time chunks need the first and last layers of each segment to be modules "
                   "(layer '%s' is not: an add or a flatten done by the network's forward)",
                   origin, b, m->layers[x->q0 < 0 ? x->l0 : x->l1].name);
    /* the module whose forward opens / closes the unit: the block's own module when
     * the unit starts / ends with it (a residual block's add runs inside it) */
    int32_t qa = sg == 0 ? module_of(r, -1, b) : -1;
    if (qa < 0) qa = module_of(r, x->l0, -1);
    int32_t qz = sg == ns - 1 ? module_of(r, -1, last_b) : -1;
    if (qz < 0) qz = module_of(r, x->l1, -1);
    if (qa < 0 || qz < 0)
        return BAD("%s: /record/modules: layer '%s' of block '%s' has no module of that name in the recording, "
                   "expected the model's layer names to be the modules' qualified names",
                   origin, m->layers[qa < 0 ? x->l0 : x->l1].name, m->blocks[b].name);
    int64_t fb, fe, bb, be, fb2, fe2, bb2, be2;
    remat_status st = module_marks(r, sm, qa, module_name(t, qa), origin, &fb, &fe, &bb, &be, err);
    if (st == REMAT_OK) st = module_marks(r, sm, qz, module_name(t, qz), origin, &fb2, &fe2, &bb2, &be2, err);
    if (st != REMAT_OK) return st;
    x->mk_fs = fb;
    x->mk_fe = fe2;
    x->fs = r->marks[fb].event;
    x->fe = r->marks[fe2].event;
    x->in_sid = r->marks[fb].storage;
    x->in_numel = r->marks[fb].numel;
    x->in_nnz = r->marks[fb].nnz;
    if (x->comp == REMAT_COMP_SPARSE && x->in_nnz < 0)
        return BAD("%s: blocks[%d].compressor: sparse needs the spike count of the input of '%s', which the "
                   "recording did not count (recorded without the model file?) or does not know (rescaled to another N: "
                   "spike counts are the data's, not sizes); expected none, bool, uint8 or bit",
                   origin, b, module_name(t, qa));
    comp_probe(r, qa, x);
    x->out_sid = r->marks[fe2].storage;
    x->bs = bb2 >= 0 ? r->marks[bb2].event : -1;
    x->gy_sid = bb2 >= 0 ? r->marks[bb2].storage : -1;
    x->bn_bytes = 0;
    for (int32_t q = 0; q < r->n_modules; q++)
        if (r->modules[q].layer >= x->l0 && r->modules[q].layer <= x->l1) x->bn_bytes += r->modules[q].bn_buffer_bytes;
    x->be = be >= 0 ? r->marks[be].event : sm->bwd_end;
    forward_probe(r, sm, qa, qz, origin, x);
    if (x->bs < 0 || x->bs < x->fe || x->be < x->bs)
        return BAD("%s: /record/marks: the gradient of the output of '%s' never arrived in the recorded step "
                   "(is its output used by the loss?)",
                   origin, module_name(t, qz));
    return REMAT_OK;
}

/* The units of plan p: each checkpointed block (with its span), cut at its splits. */
static remat_status plan_units(const remat_ext_trace *t, const remat_model *m, const remat_plan *p,
                               remat_torch_exec how, const step_marks *sm, const char *origin, unit **out, int *n_out,
                               remat_error *err) {
    *out = NULL;
    *n_out = 0;
    if (!p) return REMAT_OK;
    unit *u = remat_xcalloc((size_t)m->n_layers + 1, sizeof *u, err);
    if (!u) return REMAT_ERR_NOMEM;
    int n = 0;
    remat_status st = REMAT_OK;
    for (int b = 0; b < p->n_blocks && st == REMAT_OK; b++) {
        const remat_block_plan *bp = &p->blocks[b];
        if (!bp->checkpoint) continue;
        if (bp->k > 1 && how != REMAT_TORCH_APPLY_PLAN) {
            st = BAD("%s: blocks[%d].k: time chunks (k = %d) are run by remat_torch.apply_plan, not by "
                     "torch.utils.checkpoint; expected k = 1 with --executor torch-nonreentrant",
                     origin, b, bp->k);
            break;
        }
        int64_t mk_cb = -1, mk_ce = -1;
        if (bp->k > 1 && (st = chunk_probe(t->record, bp, b, origin, &mk_cb, &mk_ce, err)) != REMAT_OK) break;
        int span = bp->span > 1 ? bp->span : 1;
        int first = m->blocks[b].first_layer;
        int last_b = b + span - 1;
        int last = m->blocks[last_b].first_layer + m->blocks[last_b].n_layers - 1;
        int starts[REMAT_MAX_SPLITS + 2], ns = 0;
        starts[ns++] = first;
        for (int i = 0; i < bp->n_splits; i++) starts[ns++] = bp->splits[i];
        starts[ns] = last + 1;
        for (int sg = 0; sg < ns && st == REMAT_OK; sg++) {
            unit *x = &u[n++];
            x->l0 = starts[sg];
            x->l1 = starts[sg + 1] - 1;
            x->comp = bp->compressor;
            x->k = bp->k > 1 ? bp->k : 1;
            x->mk_cb = mk_cb;
            x->mk_ce = mk_ce;
            st = segment_unit(t, m, b, last_b, sg, ns, sm, origin, x, err);
        }
    }
    if (st != REMAT_OK) {
        remat_xfree(u);
        return st;
    }
    *out = u;
    *n_out = n;
    return REMAT_OK;
}

/* Where each allocation of the unit's forward ends when autograd keeps nothing, from the
 * probe: gap[j] = g when the storage of the unit's j-th allocation ends after its g-th
 * (1-based) allocation, -1 when it outlives the forward. 0 when the probe's forward does
 * not allocate what the step's did (another path taken): then the probe is not used. */
static int probe_gaps(const remat_ext_trace *t, const unit *u, int64_t *gap, int64_t *n_alloc) {
    const remat_ext_device *d = &t->devices[0];
    const remat_ext_record *r = t->record;
    int64_t na = 0, nb = 0, q0 = -1;
    for (int64_t i = u->fs; i < u->fe; i++) na += d->events[i].action == REMAT_EXT_ALLOC;
    for (int64_t i = u->pfs; i < u->pfe; i++) nb += d->events[i].action == REMAT_EXT_ALLOC;
    *n_alloc = na;
    if (u->pfs < 0 || na != nb) return 0;
    int64_t ia = u->fs, g = 0;
    for (int64_t j = 0; j < na; j++) gap[j] = -1;
    for (int64_t i = u->pfs; i < u->pfe; i++) {
        const remat_ext_event *e = &d->events[i];
        int64_t q = r->events[i].storage;
        if (e->action == REMAT_EXT_ALLOC) {
            while (d->events[ia].action != REMAT_EXT_ALLOC) ia++;
            if (d->events[ia++].size != e->size) return 0;
            if (q0 < 0) q0 = q;
            g++;
        } else if (q0 >= 0 && q >= q0 && q < q0 + na) {
            gap[q - q0] = g;
        }
    }
    return 1;
}

static int64_t compressed_bytes(remat_compressor c, int64_t numel, int64_t nnz) {
    if (c == REMAT_COMP_BIT) return (numel + 7) / 8;
    if (c == REMAT_COMP_BOOL || c == REMAT_COMP_UINT8) return numel;
    if (c == REMAT_COMP_SPARSE) return 4 * nnz; /* int32 positions of the ones */
    return 0;
}

/* The compressor probe's window [lo, hi) replayed between keys klo and khi: its allocations in order, each
 * freed where it was inside the window, or, outliving it (the compressed input; the decompressed one), at
 * `kept`. *kept_bytes: the bytes of those. */
static int comp_window(const remat_ext_trace *t, const unit *u, int64_t lo, int64_t hi, double klo, double khi,
                       double kept, const int64_t *fpos, points *ps, int64_t *kept_bytes, remat_error *err) {
    const remat_ext_device *d = &t->devices[0];
    const remat_ext_record *r = t->record;
    const double step = (khi - klo) / (double)(hi - lo + 2);
    /* sparse: the probe's input is not the step's (the parameters moved since), so its positions (int32, and
     * the int64 ones nonzero() makes) are rescaled from the probe's spike count to the step's */
    const int64_t zp = u->cw_nnz, zs = u->in_nnz;
    const int rescale = u->comp == REMAT_COMP_SPARSE && zp > 0 && zs >= 0 && zp != zs && zp != u->in_numel;
    *kept_bytes = 0;
    for (int64_t i = lo; i < hi; i++) {
        int64_t s = r->events[i].storage, b = d->events[i].size;
        if (d->events[i].action != REMAT_EXT_ALLOC || s < 0) continue;
        if (rescale && (b == 4 * zp || b == 8 * zp)) b = b / zp * zs;
        double f = fpos[s] < hi ? klo + (double)(fpos[s] - lo + 1) * step : kept;
        if (fpos[s] >= hi) *kept_bytes += b;
        if (b && (!add_point(ps, klo + (double)(i - lo + 1) * step, b, err) || !add_point(ps, f, -b, err))) return 0;
    }
    return 1;
}

/* The batch-norm statistics apply_plan clones before a unit's recomputation and puts back
 * after its backward: for each batch-norm module of the unit, in module order, its buffers
 * one allocation each (running_mean and running_var, the same bytes, then the int64
 * num_batches_tracked: (b - 8) / 2, (b - 8) / 2 and 8 of its recorded b bytes; a sum not
 * of that form as one allocation), between keys klo and khi, each freed at kend. */
static int bn_points(const remat_ext_record *r, const unit *u, double klo, double khi, double kend, points *ps,
                     remat_error *err) {
    int64_t sizes[3 * 64], n = 0;
    for (int32_t q = 0; q < r->n_modules; q++) {
        const int64_t b = r->modules[q].bn_buffer_bytes;
        if (r->modules[q].layer < u->l0 || r->modules[q].layer > u->l1 || b <= 0) continue;
        if (n + 3 > (int64_t)(sizeof sizes / sizeof *sizes)) { /* more than 64 batch norms: one allocation each */
            if (!add_point(ps, klo + (khi - klo) * 0.999, b, err) || !add_point(ps, kend, -b, err)) return 0;
            continue;
        }
        if (b > 8 && (b - 8) % 2 == 0) sizes[n++] = (b - 8) / 2, sizes[n++] = (b - 8) / 2, sizes[n++] = 8;
        else sizes[n++] = b;
    }
    for (int64_t i = 0; i < n; i++)
        if (!add_point(ps, klo + (khi - klo) * (double)(i + 1) / (double)(n + 1), sizes[i], err) ||
            !add_point(ps, kend, -sizes[i], err))
            return 0;
    return 1;
}

/* ---- time chunks (k > 1): the unit's allocations read from the chunk probe for k ----
 *
 * The probe (record.py's _chunk_probe) ran the whole network as one apply_plan segment of
 * k chunks, so each layer's allocations on T/k steps, without and with autograd's saved
 * tensors, and in backward, are in it. For a unit of layers l0..l1 the prediction takes:
 * forward, for each chunk c = 0..k-1, the probe's events from l0's fwd_begin to l1's
 * fwd_end of forward chunk c (the unit's own forward window in the step is dropped);
 * backward, for c = k-1..0, those of the recomputation of chunk c (l0's fwd_begin to l1's
 * fwd_end) and of its backward (l1's bwd_begin to l0's bwd_end, or the chunk's end), in
 * place of the step's backward window of the unit. A storage freed elsewhere in the probe
 * ends at the same place relative to the unit's chunks (before a chunk: at its start;
 * between its windows; after it: at its end); then apply_plan's own lifetimes: a chunk's
 * output ends after the concatenation of all of them (the unit's output, which keeps its
 * recorded lifetime), the state a forward chunk leaves is kept by the Function (the
 * boundary states) until the graph is freed, the last chunk's as the step's own final
 * state was, the gradient of each chunk's input until the concatenation at the backward's
 * end (the unit's input gradient, recorded lifetime), each chunk's recomputed output to
 * the chunk's end; one RNG state per forward chunk until the graph is freed. */
typedef struct cspan {
    int64_t begin, end;   /* positions of its chunk_begin / chunk_end marks */
    int64_t alo, ahi;     /* forward window [alo, ahi): l0's fwd_begin .. l1's fwd_end */
    int64_t blo, bhi;     /* backward window (backward spans only; blo = bhi: none) */
    int64_t y_sid, gx_sid;/* l1's output in the window, the gradient of l0's input (-1) */
    int64_t slot0;        /* its first slot */
} cspan;

/* Slots of a span: start, the a window's events, gap, the b window's events, end. */
static int64_t span_slots(const cspan *c) { return 3 + (c->ahi - c->alo) + (c->bhi - c->blo); }

/* The slot of probe position f among spans sp[0..k-1] (in execution order); -1 after the last. */
static int64_t span_slot(const cspan *sp, int k, int64_t f) {
    for (int c = 0; c < k; c++) {
        const cspan *x = &sp[c];
        const int64_t la = x->ahi - x->alo;
        if (f < x->alo) return x->slot0;
        if (f < x->ahi) return x->slot0 + 1 + (f - x->alo);
        if (f < x->blo) return x->slot0 + 1 + la;
        if (f < x->bhi) return x->slot0 + 2 + la + (f - x->blo);
        if (c + 1 < k ? f < sp[c + 1].begin : f < x->end) return x->slot0 + 2 + la + (x->bhi - x->blo);
    }
    return -1;
}

/* The chunk spans of unit u in its probe: fw[0..k-1] forward (chunks 0..k-1), bw[0..k-1]
 * backward (chunks k-1..0). 0 when the probe does not have them. */
static int chunk_spans(const remat_ext_record *r, const unit *u, cspan *fw, cspan *bw) {
    int nf = 0, nb = 0;
    cspan *cur = NULL;
    for (int64_t q = u->mk_cb; q <= u->mk_ce; q++) {
        const remat_rec_mark *k = &r->marks[q];
        if (k->kind == REMAT_REC_CHUNK_BEGIN) {
            if (nb >= u->k) return 0;
            cur = nf < u->k ? &fw[nf++] : &bw[nb++];
            cur->begin = k->event;
            cur->alo = cur->ahi = cur->blo = cur->bhi = -1;
            cur->y_sid = cur->gx_sid = -1;
        } else if (!cur) {
            continue;
        } else if (k->kind == REMAT_REC_CHUNK_END) {
            cur->end = k->event;
            if (cur->alo < 0 || cur->ahi < 0) return 0;
            if (cur >= bw && cur < bw + u->k) {
                if (cur->blo < 0) return 0;
                if (cur->bhi < 0) cur->bhi = k->event;
            } else {
                cur->blo = cur->bhi = cur->ahi;
            }
            cur = NULL;
        } else if (k->kind == REMAT_REC_FWD_BEGIN && k->module == u->q0 && cur->alo < 0) {
            cur->alo = k->event;
        } else if (k->kind == REMAT_REC_FWD_END && k->module == u->q1 && cur->alo >= 0 && cur->ahi < 0) {
            cur->ahi = k->event;
            cur->y_sid = k->storage;
        } else if (k->kind == REMAT_REC_BWD_BEGIN && k->module == u->q1 && cur->ahi >= 0 && cur->blo < 0) {
            cur->blo = k->event;
        } else if (k->kind == REMAT_REC_BWD_END && k->module == u->q0 && cur->blo >= 0 && cur->bhi < 0) {
            cur->bhi = k->event;
            cur->gx_sid = k->storage;
        }
    }
    return nf == u->k && nb == u->k && !cur;
}

static double slot_key(double lo, double hi, int64_t slot, int64_t nslots) {
    return lo + (hi - lo) * (double)(slot + 1) / (double)(nslots + 1);
}

/* The points of a unit with k > 1 (its step windows are suppressed by the caller). */
static int chunk_points(const remat_ext_trace *t, const unit *u, cspan *fw, cspan *bw, const int64_t *apos,
                        const int64_t *fpos, const double *fkey, double graph_end, points *ps, remat_torch_pred *out,
                        remat_error *err) {
    const remat_ext_device *d = &t->devices[0];
    const remat_ext_record *r = t->record;
    const int64_t n = d->n_events;
    const int k = u->k;
    /* forward */
    int64_t ns = 0;
    for (int c = 0; c < k; c++) fw[c].slot0 = ns, ns += span_slots(&fw[c]);
    const int64_t fcat = ns, fend = ns + 1, fn = ns + 2;
    const double flo = u->fs - 0.14, fhi = u->fs - 0.01;
    /* the step's own final state (allocated in the unit's forward, outliving its backward): the last chunk's
     * state takes its lifetime, in order */
    int64_t next_survivor = u->fs;
    for (int c = 0; c < k; c++) {
        if (!add_point(ps, slot_key(flo, fhi, fw[c].slot0, fn), r->rng_state_bytes, err) ||
            !add_point(ps, graph_end, -r->rng_state_bytes, err))
            return 0;
        for (int64_t i = fw[c].alo; i < fw[c].ahi; i++) {
            int64_t s = r->events[i].storage;
            if (d->events[i].action != REMAT_EXT_ALLOC || s < 0) continue;
            double fk;
            int64_t sl = fpos[s] < n ? span_slot(fw, k, fpos[s]) : -1;
            if (s == fw[c].y_sid) fk = slot_key(flo, fhi, fend, fn);
            else if (sl >= 0) fk = slot_key(flo, fhi, sl, fn);
            else if (c < k - 1) fk = graph_end; /* a boundary state, kept by the Function */
            else {
                fk = graph_end;
                for (; next_survivor < u->fe; next_survivor++) {
                    int64_t q = r->events[next_survivor].storage;
                    if (d->events[next_survivor].action != REMAT_EXT_ALLOC || q < 0 || q == u->out_sid ||
                        fpos[q] < u->be)
                        continue;
                    if (d->events[next_survivor].size == d->events[i].size) fk = fkey[q];
                    else out->probe_mismatches++;
                    next_survivor++;
                    break;
                }
            }
            if (!add_point(ps, slot_key(flo, fhi, fw[c].slot0 + 1 + (i - fw[c].alo), fn), d->events[i].size, err) ||
                (isfinite(fk) && !add_point(ps, fk, -d->events[i].size, err)))
                return 0;
        }
    }
    if (u->out_sid >= 0 && apos[u->out_sid] >= u->fs && apos[u->out_sid] < u->fe) { /* torch.cat of the chunks */
        int64_t b = d->events[apos[u->out_sid]].size;
        if (!add_point(ps, slot_key(flo, fhi, fcat, fn), b, err) ||
            (isfinite(fkey[u->out_sid]) && !add_point(ps, fkey[u->out_sid], -b, err)))
            return 0;
    }
    /* backward: the decompressed input, the RNG state around it, then each chunk recomputed and backpropagated */
    if (u->comp != REMAT_COMP_NONE && u->cw_lo >= 0) {
        int64_t b;
        if (!comp_window(t, u, u->cw_mid, u->cw_hi, u->bs - 0.195, u->bs - 0.19, u->be - 0.25, fpos, ps, &b, err))
            return 0;
    } else if (u->comp != REMAT_COMP_NONE) {
        int64_t b = u->in_sid >= 0 ? d->events[apos[u->in_sid]].size : 4 * u->in_numel;
        if (!add_point(ps, u->bs - 0.19, b, err) || !add_point(ps, u->be - 0.25, -b, err)) return 0;
    }
    if ((u->bn_bytes && !bn_points(r, u, u->bs - 0.1875, u->bs - 0.1825, u->be - 0.25, ps, err)) ||
        !add_point(ps, u->bs - 0.18, r->rng_state_bytes, err) || !add_point(ps, u->be - 0.25, -r->rng_state_bytes, err))
        return 0;
    ns = 0;
    for (int c = 0; c < k; c++) bw[c].slot0 = ns, ns += span_slots(&bw[c]);
    const int64_t bcat = ns, bend = ns + 1, bn = ns + 2;
    const double blo = u->bs - 0.17, bhi = u->bs - 0.005;
    for (int c = 0; c < k; c++) {
        for (int w = 0; w < 2; w++) {
            const int64_t lo = w ? bw[c].blo : bw[c].alo, hi = w ? bw[c].bhi : bw[c].ahi;
            const int64_t at0 = bw[c].slot0 + 1 + (w ? 1 + (bw[c].ahi - bw[c].alo) : 0);
            for (int64_t i = lo; i < hi; i++) {
                int64_t s = r->events[i].storage;
                if (d->events[i].action != REMAT_EXT_ALLOC || s < 0) continue;
                int64_t sl = fpos[s] < n ? span_slot(bw, k, fpos[s]) : -1;
                if (s == bw[c].gx_sid || sl < 0) sl = bend; /* the input's gradient: until the concatenation */
                else if (s == bw[c].y_sid) sl = bw[c].slot0 + span_slots(&bw[c]) - 1; /* to the chunk's end */
                if (!add_point(ps, slot_key(blo, bhi, at0 + (i - lo), bn), d->events[i].size, err) ||
                    !add_point(ps, slot_key(blo, bhi, sl, bn), -d->events[i].size, err))
                    return 0;
                if (!w) out->replayed_allocations++, out->replayed_bytes += d->events[i].size;
            }
        }
    }
    for (int64_t i = u->bs; i < u->be; i++) { /* what the unit's backward leaves (its input's gradient): torch.cat */
        int64_t s = r->events[i].storage;
        if (d->events[i].action != REMAT_EXT_ALLOC || s < 0 || fpos[s] < u->be) continue;
        if (!add_point(ps, slot_key(blo, bhi, bcat, bn), d->events[i].size, err) ||
            (isfinite(fkey[s]) && !add_point(ps, fkey[s], -d->events[i].size, err)))
            return 0;
    }
    return 1;
}

/* What remat_torch_sim_run's phases share: the recording, the units, the storages'
 * recorded and changed lifetimes and the points laid so far. */
typedef struct sim_run {
    const remat_ext_trace *t;
    const remat_ext_record *r;
    const remat_ext_device *d;
    const unit *units;
    int nu, apply, kmax;
    int64_t n, ns;
    int64_t *apos, *fpos, *pack_lo, *pack_hi; /* per storage */
    double *fkey, *fkey_rec;                  /* per storage: its (changed) free key, its recorded one */
    int64_t *gap, *pa;                        /* per allocation of the longest unit's forward */
    unsigned char *suppress;                  /* storages a time-chunked unit replaces */
    cspan *spans;
    double graph_end;
    points ps;
} sim_run;

static int sim_run_alloc(sim_run *s, remat_error *err) {
    const size_t ns = (size_t)(s->ns + 1);
    s->apos = remat_xmalloc(ns * sizeof(int64_t), err);
    s->fpos = remat_xmalloc(ns * sizeof(int64_t), err);
    s->fkey = remat_xmalloc(ns * sizeof(double), err);
    s->pack_lo = remat_xmalloc(ns * sizeof(int64_t), err);
    s->pack_hi = remat_xmalloc(ns * sizeof(int64_t), err);
    s->fkey_rec = remat_xmalloc(ns * sizeof(double), err);
    int64_t longest = 1;
    for (int ui = 0; ui < s->nu; ui++)
        if (s->units[ui].fe - s->units[ui].fs + 1 > longest) longest = s->units[ui].fe - s->units[ui].fs + 1;
    s->gap = remat_xmalloc((size_t)longest * sizeof(int64_t), err);
    s->pa = remat_xmalloc((size_t)longest * sizeof(int64_t), err);
    s->kmax = 1;
    for (int ui = 0; ui < s->nu; ui++)
        if (s->units[ui].k > s->kmax) s->kmax = s->units[ui].k;
    s->suppress = remat_xcalloc(ns, 1, err);
    s->spans = remat_xcalloc((size_t)s->nu * 2 * (size_t)s->kmax + 1, sizeof *s->spans, err);
    s->ps.unit = -1;
    s->ps.open = -1;
    return s->apos && s->fpos && s->fkey && s->pack_lo && s->pack_hi && s->fkey_rec && s->gap && s->pa &&
           s->suppress && s->spans;
}

static void sim_run_free(sim_run *s) {
    remat_xfree(s->ps.p);
    remat_xfree(s->apos);
    remat_xfree(s->fpos);
    remat_xfree(s->fkey);
    remat_xfree(s->pack_lo);
    remat_xfree(s->pack_hi);
    remat_xfree(s->fkey_rec);
    remat_xfree(s->gap);
    remat_xfree(s->pa);
    remat_xfree(s->suppress);
    remat_xfree(s->spans);
}

/* storages: alloc and free positions (n: not freed in the window), packs */
static void storage_lifetimes(sim_run *s) {
    const remat_ext_record *r = s->r;
    const int64_t n = s->n, ns = s->ns;
    for (int64_t q = 0; q < ns; q++) s->apos[q] = s->fpos[q] = n, s->pack_lo[q] = INT64_MAX, s->pack_hi[q] = -1;
    for (int64_t i = 0; i < n; i++) {
        int64_t q = r->events[i].storage;
        if (q < 0) continue;
        if (s->d->events[i].action == REMAT_EXT_ALLOC) s->apos[q] = i;
        else s->fpos[q] = i;
    }
    for (int64_t k = 0; k < r->n_marks; k++) {
        const remat_rec_mark *mk = &r->marks[k];
        if (mk->kind != REMAT_REC_PACK || mk->storage < 0) continue;
        if (k < s->pack_lo[mk->storage]) s->pack_lo[mk->storage] = k;
        if (k > s->pack_hi[mk->storage]) s->pack_hi[mk->storage] = k;
    }
    for (int64_t q = 0; q < ns; q++) s->fkey[q] = s->fkey_rec[q] = s->fpos[q] < n ? (double)s->fpos[q] : INFINITY;
}

/* time chunks: the unit's forward and backward windows come from the probe */
static remat_status chunk_windows(sim_run *s, const char *origin, remat_error *err) {
    const remat_ext_record *r = s->r;
    for (int ui = 0; ui < s->nu; ui++) {
        const unit *u = &s->units[ui];
        if (u->k < 2) continue;
        cspan *sp = s->spans + (size_t)ui * 2 * s->kmax;
        if (!chunk_spans(r, u, sp, sp + u->k))
            return BAD("%s: /record/marks: the chunk probe for k = %d does not run '%s' .. '%s' once per chunk "
                       "(expected the forward of each chunk, then its recomputation and backward, last to first)",
                       origin, u->k, module_name(s->t, u->q0), module_name(s->t, u->q1));
        for (int64_t i = u->fs; i < u->be; i++) {
            int64_t q = r->events[i].storage;
            if (q >= 0 && s->d->events[i].action == REMAT_EXT_ALLOC && (i < u->fe || i >= u->bs)) s->suppress[q] = 1;
        }
    }
    return REMAT_OK;
}

/* 1 and 2: the lifetimes unit u changes in the forward, its compressed input and (apply_plan) RNG state */
static int unit_forward(sim_run *s, const unit *u, remat_torch_pred *out, remat_error *err) {
    const remat_ext_device *d = s->d;
    const remat_ext_record *r = s->r;
    int64_t *fpos = s->fpos, *pack_lo = s->pack_lo, *pack_hi = s->pack_hi, *gap = s->gap, *pa = s->pa;
    double *fkey = s->fkey;
    const int apply = s->apply;
    int64_t na = 0, j = -1;
    int probed = probe_gaps(s->t, u, gap, &na);
    for (int64_t i = u->fs, a = 0; i < u->fe; i++)
        if (d->events[i].action == REMAT_EXT_ALLOC) pa[a++] = i;
    if (!probed && u->pfs >= 0) out->probe_mismatches++;
    for (int64_t i = u->fs; i < u->fe && u->k < 2; i++) {
        int64_t q = r->events[i].storage;
        if (d->events[i].action == REMAT_EXT_ALLOC) j++;
        if (q < 0 || d->events[i].action != REMAT_EXT_ALLOC || fpos[q] < u->fe || q == u->out_sid) continue;
        if (pack_hi[q] >= 0 && pack_lo[q] > u->mk_fs && pack_hi[q] < u->mk_fe)
            fkey[q] = probed && gap[j] > 0 ? (double)pa[gap[j] - 1] + 0.5 : u->fe - 0.3;
        else if (!apply && pack_hi[q] < 0 && fpos[q] > u->bs) /* module state: reset for the recomputation */
            fkey[q] = u->bs - 0.2 + 0.25 * 0.2 / (double)(u->fe - u->fs + 3);
    }
    const double comp_end = apply ? s->graph_end : u->be - 0.25;
    if (u->comp != REMAT_COMP_NONE && u->cw_lo >= 0) { /* the compressor's own allocations, as probed */
        int64_t cb = 0;
        if (!comp_window(s->t, u, u->cw_lo, u->cw_mid, u->fs - 0.2, u->fs - 0.16, comp_end, fpos, &s->ps, &cb, err))
            return 0;
        out->compressed_bytes += cb;
    } else if (u->comp != REMAT_COMP_NONE) {
        int64_t cb = compressed_bytes(u->comp, u->in_numel, u->in_nnz);
        if (!add_point(&s->ps, u->fs - 0.2, cb, err) || !add_point(&s->ps, comp_end, -cb, err)) return 0;
        out->compressed_bytes += cb;
    }
    if (apply) { /* the Function keeps the RNG state of the forward, and its gradient input to the end */
        if ((u->k < 2 && !add_point(&s->ps, u->fs - 0.15, r->rng_state_bytes, err)) ||
            (u->k < 2 && !add_point(&s->ps, s->graph_end, -r->rng_state_bytes, err)))
            return 0;
        if (u->gy_sid >= 0 && fpos[u->gy_sid] >= u->bs && fpos[u->gy_sid] < u->be) fkey[u->gy_sid] = u->be - 0.25;
    }
    if (u->in_sid >= 0) { /* an input older than the recording (the batch) is the caller's */
        int64_t q = u->in_sid;
        int only_unit = pack_hi[q] >= 0 && pack_lo[q] > u->mk_fs && pack_hi[q] < u->mk_fe;
        if (u->comp != REMAT_COMP_NONE) {
            if (only_unit && fpos[q] >= u->bs && fpos[q] <= u->be) fkey[q] = u->fe - 0.3;
        } else if (fkey[q] < u->be - 0.25) {
            fkey[q] = u->be - 0.25;
        }
    }
    return 1;
}

/* recorded storages, with their (changed) lifetimes; frees of older storages */
static int recorded_points(sim_run *s, remat_error *err) {
    for (int64_t i = 0; i < s->n; i++) {
        const remat_ext_event *e = &s->d->events[i];
        int64_t q = s->r->events[i].storage;
        int ok = 1;
        if (e->action == REMAT_EXT_ALLOC) {
            if (s->suppress[q]) continue;
            ok = add_point(&s->ps, (double)i, e->size, err);
            if (ok && isfinite(s->fkey[q])) ok = add_point(&s->ps, s->fkey[q], -e->size, err);
        } else if (q < 0) {
            ok = add_older_free(&s->ps, (double)i, e->size, err);
        }
        if (!ok) return 0;
    }
    return 1;
}

/* 3: the replay of unit ui's forward before its backward (time chunks: from the probe) */
static int unit_replay(sim_run *s, int ui, remat_torch_pred *out, remat_error *err) {
    const remat_ext_device *d = s->d;
    const remat_ext_record *r = s->r;
    const unit *u = &s->units[ui];
    const int64_t *fpos = s->fpos, *pack_lo = s->pack_lo, *pack_hi = s->pack_hi, *gap = s->gap, *pa = s->pa;
    points *ps = &s->ps;
    const int apply = s->apply;
    const int64_t len = u->fe - u->fs;
    const double base = u->bs - 0.2, step = 0.2 / (double)(len + 3);
    ps->unit = ui;
    if (u->k > 1) {
        cspan *sp = s->spans + (size_t)ui * 2 * s->kmax;
        return chunk_points(s->t, u, sp, sp + u->k, s->apos, s->fpos, s->fkey, s->graph_end, ps, out, err);
    }
    int64_t na = 0, j = -1, fe_run = u->fe;
    int probed = probe_gaps(s->t, u, s->gap, &na);
    for (int64_t i = u->fs, a = 0; i < u->fe; i++)
        if (d->events[i].action == REMAT_EXT_ALLOC) s->pa[a++] = i;
    while (fe_run < s->n && d->events[fe_run].action != REMAT_EXT_ALLOC) fe_run++; /* the frees as it returned */
    if (u->comp != REMAT_COMP_NONE && u->cw_lo >= 0) { /* decompressing, as probed */
        int64_t b;
        if (!comp_window(s->t, u, u->cw_mid, u->cw_hi, base + 0.05 * step, base + 0.5 * step, u->be - 0.25, s->fpos,
                         ps, &b, err))
            return 0;
    } else if (u->comp != REMAT_COMP_NONE) { /* the decompressed input (float32 when older than the recording) */
        int64_t b = u->in_sid >= 0 ? d->events[s->apos[u->in_sid]].size : 4 * u->in_numel;
        if (!add_point(ps, base + 0.5 * step, b, err) || !add_point(ps, u->be - 0.25, -b, err)) return 0;
    }
    if (apply) { /* the batch-norm statistics put back after, the RNG state around the recomputation */
        if ((u->bn_bytes && !bn_points(r, u, base + 0.55 * step, base + 0.65 * step, u->be - 0.25, ps, err)) ||
            !add_point(ps, base + 0.7 * step, r->rng_state_bytes, err) ||
            !add_point(ps, u->be - 0.25, -r->rng_state_bytes, err))
            return 0;
    }
    for (int64_t i = u->fs; i < u->fe; i++) {
        int64_t q = r->events[i].storage;
        if (d->events[i].action == REMAT_EXT_ALLOC) j++;
        if (q < 0 || d->events[i].action != REMAT_EXT_ALLOC) continue;
        double a = base + (double)(i - u->fs + 1) * step, f;
        int saved = pack_hi[q] >= 0 && pack_lo[q] > u->mk_fs && pack_hi[q] < u->mk_fe;
        if (fpos[q] < u->fe) {
            f = base + (double)(fpos[q] - u->fs + 1) * step;
        } else if (saved && fpos[q] >= u->bs && fpos[q] <= u->be) {
            f = (double)fpos[q]; /* the same saved-tensor release in the unit's backward */
        } else if (apply && fpos[q] < fe_run) { /* dropped as the forward returned: with the replay's end */
            f = base + (double)(len + 1) * step;
        } else if (apply && fpos[q] >= u->fe) {
            /* apply_plan: the recomputed graph, state and output live until its backward returns */
            f = u->be - 0.25;
        } else if (saved) {
            /* saved only for a part of the graph no gradient reaches (a neuron's final state): the
             * recomputation keeps no copy, so it ends where the probe's unsaved forward ended it (or,
             * without a probe, after the op that saved it) */
            int64_t at = probed && gap[j] > 0 ? pa[gap[j] - 1] : r->marks[pack_hi[q]].event;
            f = base + (double)((at < u->fe ? at : u->fe - 1) - u->fs + 1) * step + 0.5 * step;
        } else if (q != u->out_sid && fpos[q] > u->bs) {
            f = s->fkey_rec[q]; /* module state (a neuron's potential): the replay's copy is the one kept */
        } else {
            f = base + (double)(len + 1) * step;
        }
        if (!add_point(ps, a, d->events[i].size, err) || !add_point(ps, f, -d->events[i].size, err)) return 0;
        out->replayed_allocations++;
        out->replayed_bytes += d->events[i].size;
    }
    return 1;
}

/* the sweep over the step (points sorted), then the recorded (plain) peak of the same step */
static void sweep(const sim_run *s, const step_marks *sm, remat_torch_pred *out) {
    const remat_ext_record *r = s->r;
    const points *ps = &s->ps;
    int64_t live = r->live_before_bytes, peak = -1, events = 0, peak_key_i = sm->begin;
    const double lo = sm->begin - 0.4, hi = (double)sm->end, eof = sm->loss - 0.05;
    int have_eof = 0;
    for (int64_t i = 0; i < ps->n; i++) {
        if (ps->p[i].key >= lo && peak < 0) peak = live, out->live_at_start = live;
        if (!have_eof && ps->p[i].key >= eof) out->end_of_forward_bytes = live, have_eof = 1;
        if (ps->p[i].key >= hi) break;
        live += ps->p[i].delta;
        if (ps->p[i].key >= lo) {
            events++;
            if (live > peak) {
                peak = live, peak_key_i = (int64_t)floor(ps->p[i].key);
                out->peak_unit_layer = ps->p[i].unit >= 0 ? s->units[ps->p[i].unit].l0 : -1;
            }
        }
    }
    if (peak < 0) peak = live, out->live_at_start = live;
    if (!have_eof) out->end_of_forward_bytes = live;
    out->peak_live_bytes = peak;
    out->peak_event = peak_key_i;
    out->events = events;
    out->units = s->nu;
    int64_t rl = r->live_before_bytes, rp = -1;
    for (int64_t i = 0; i < sm->end; i++) {
        if (i == sm->begin) rp = rl;
        const remat_ext_event *e = &s->d->events[i];
        rl += e->action == REMAT_EXT_ALLOC ? e->size : -e->size;
        if (i >= sm->begin && rl > rp) rp = rl;
    }
    out->recorded_peak_live_bytes = rp < 0 ? rl : rp;
}

/* The predicted step (the points in key order from the step's start to its end) through the
 * caching allocator model, from a fresh cache: the storages live when the step starts are
 * allocated first, in the order they were allocated (those older than the recording first:
 * one block per storage the recording frees, in the order it frees them, then the rest of
 * live_before_bytes as one block); then each allocation and free as the sweep meets them. The
 * earlier steps are not replayed: the recording has them run plainly, not under the plan. A
 * free met before its allocation (equal keys) cancels it, as it does in the sweep. */
static int cmp_by_key(const void *a, const void *b) {
    const double x = ((const double *)a)[0], y = ((const double *)b)[0];
    return (x > y) - (x < y);
}

static remat_status caching_replay(const sim_run *s, const step_marks *sm, const remat_caching_config *cfg,
                                   remat_torch_reserved *res, remat_error *err) {
    const points *ps = &s->ps;
    const int64_t nid = ps->next_id, nold = ps->n_older;
    const double lo = sm->begin - 0.4, hi = (double)sm->end, eof = sm->loss - 0.05;
    remat_alloc_model *am = remat_alloc_model_init(REMAT_ALLOC_CACHING, cfg, err);
    if (!am) return err->status ? err->status : REMAT_ERR_NOMEM;
    unsigned char *state = remat_xcalloc((size_t)nid + 1, 1, err); /* 1 live, 2 freed before allocated */
    int64_t *old = remat_xcalloc((size_t)nold + 1, sizeof *old, err);
    unsigned char *old_freed = remat_xcalloc((size_t)nold + 1, 1, err);
    double *live = remat_xcalloc((size_t)nid + 1, 3 * sizeof *live, err); /* key, id, bytes */
    remat_status st = state && old && old_freed && live ? REMAT_OK : REMAT_ERR_NOMEM;
    remat_alloc_result ar;
    int64_t i = 0, older_sum = 0, nlive = 0;
    for (int64_t j = 0; j < ps->n && st == REMAT_OK; j++)
        if (ps->p[j].id <= -2) old[-2 - ps->p[j].id] = -ps->p[j].delta;
    for (; i < ps->n && st == REMAT_OK && ps->p[i].key < lo; i++) { /* before the step: who is live */
        const point *q = &ps->p[i];
        if (q->id <= -2) old_freed[-2 - q->id] = 1;
        else if (q->id >= 0 && q->delta > 0 && state[q->id] != 2) state[q->id] = 1;
        else if (q->id >= 0 && q->delta < 0) state[q->id] = state[q->id] == 1 ? 0 : 2;
    }
    for (int64_t j = 0; j < ps->n && st == REMAT_OK && ps->p[j].key < lo; j++) {
        const point *q = &ps->p[j];
        if (q->id >= 0 && q->delta > 0 && state[q->id] == 1)
            live[3 * nlive] = q->key, live[3 * nlive + 1] = (double)q->id, live[3 * nlive++ + 2] = (double)q->delta;
    }
    qsort(live, (size_t)nlive, 3 * sizeof *live, cmp_by_key);
    for (int64_t k = 0; k < nold && st == REMAT_OK; k++) {
        older_sum += old[k];
        if (!old_freed[k]) st = remat_alloc_model_alloc(am, nid + k, old[k], &ar, err);
    }
    const int64_t rest = s->r->live_before_bytes - older_sum;
    if (st == REMAT_OK && rest > 0) st = remat_alloc_model_alloc(am, nid + nold, rest, &ar, err);
    for (int64_t k = 0; k < nlive && st == REMAT_OK; k++)
        st = remat_alloc_model_alloc(am, (int64_t)live[3 * k + 1], (int64_t)live[3 * k + 2], &ar, err);
    remat_alloc_stats as;
    remat_alloc_model_reset_peaks(am);
    remat_alloc_model_stats(am, &as);
    res->reserved_at_start = as.reserved_bytes;
    int have_eof = 0;
    for (; i < ps->n && st == REMAT_OK; i++) {
        const point *q = &ps->p[i];
        if (q->key >= eof && !have_eof) {
            remat_alloc_model_stats(am, &as);
            res->end_of_forward_reserved = as.reserved_bytes, have_eof = 1;
        }
        if (q->key >= hi) break;
        if (q->id <= -2) {
            st = remat_alloc_model_release(am, nid + (-2 - q->id), err);
        } else if (q->id >= 0 && q->delta > 0) {
            if (state[q->id] == 2) continue;
            st = remat_alloc_model_alloc(am, q->id, q->delta, &ar, err);
            state[q->id] = 1;
        } else if (q->id >= 0 && q->delta < 0) {
            if (state[q->id] == 1) st = remat_alloc_model_release(am, q->id, err);
            state[q->id] = state[q->id] == 1 ? 0 : 2;
        }
    }
    remat_alloc_model_stats(am, &as);
    if (!have_eof) res->end_of_forward_reserved = as.reserved_bytes;
    res->peak_reserved_bytes = as.peak_reserved_bytes;
    res->peak_allocated_bytes = as.peak_allocated_bytes;
    res->segments = as.n_segments;
    remat_caching_config_format(cfg, res->config, sizeof res->config);
    remat_xfree(state);
    remat_xfree(old);
    remat_xfree(old_freed);
    remat_xfree(live);
    remat_alloc_model_free(am);
    return st;
}

static remat_status sim_run_impl(const remat_ext_trace *t, const remat_model *m, const remat_plan *p,
                                 remat_torch_exec how, const remat_caching_config *cfg, const char *origin,
                                 remat_torch_pred *out, remat_torch_reserved *res, remat_error *err) {
    memset(out, 0, sizeof *out);
    const remat_ext_record *r = t->record;
    if (!r || t->n_devices < 1) return BAD("%s: /record: expected a recorded PyTorch step", origin);
    step_marks sm;
    out->peak_unit_layer = -1;
    remat_status st = find_step(r, origin, &sm, &out->step, err);
    if (st != REMAT_OK) return st;
    unit *units = NULL;
    int nu = 0;
    st = plan_units(t, m, p, how, &sm, origin, &units, &nu, err);
    if (st != REMAT_OK) return st;
    sim_run s = {.t = t, .r = r, .d = &t->devices[0], .units = units, .nu = nu,
                 .apply = how == REMAT_TORCH_APPLY_PLAN, .n = t->devices[0].n_events, .ns = r->n_storages,
                 /* apply_plan keeps the compressed input and the RNG state as attributes of the Function's
                  * context: they end with the autograd graph, when the step drops its output and loss (just
                  * before the step ends) */
                 .graph_end = sm.end - 0.5};
    if (!sim_run_alloc(&s, err)) {
        st = REMAT_ERR_NOMEM;
        goto done;
    }
    storage_lifetimes(&s);
    st = chunk_windows(&s, origin, err);
    for (int ui = 0; ui < nu && st == REMAT_OK; ui++)
        if (!unit_forward(&s, &units[ui], out, err)) st = REMAT_ERR_NOMEM;
    if (st == REMAT_OK && !recorded_points(&s, err)) st = REMAT_ERR_NOMEM;
    for (int ui = 0; ui < nu && st == REMAT_OK; ui++)
        if (!unit_replay(&s, ui, out, err)) st = REMAT_ERR_NOMEM;
    if (st != REMAT_OK) goto done;
    s.ps.unit = -1;
    qsort(s.ps.p, (size_t)s.ps.n, sizeof *s.ps.p, cmp_point);
    sweep(&s, &sm, out);
    if (res) st = caching_replay(&s, &sm, cfg, res, err);
done:
    sim_run_free(&s);
    remat_xfree(units);
    return st;
}

remat_status remat_torch_sim_run(const remat_ext_trace *t, const remat_model *m, const remat_plan *p,
                                 remat_torch_exec how, const char *origin, remat_torch_pred *out, remat_error *err) {
    return sim_run_impl(t, m, p, how, NULL, origin, out, NULL, err);
}

remat_status remat_torch_sim_run_caching(const remat_ext_trace *t, const remat_model *m, const remat_plan *p,
                                         remat_torch_exec how, const remat_caching_config *cfg, const char *origin,
                                         remat_torch_pred *out, remat_torch_reserved *res, remat_error *err) {
    remat_caching_config def = remat_caching_config_default();
    memset(res, 0, sizeof *res);
    return sim_run_impl(t, m, p, how, cfg ? cfg : &def, origin, out, res, err);
}
