/* dump_h5.c - the gradient dump of docs/interfaces.md ("Gradient dump"):
 *
 *   /input [T, N, input.shape...]   /labels [N] int32   /loss scalar
 *   /params/<layer>/<name>          values before the step (incl. running stats)
 *   /grads/<layer>/<name>           trainable parameters only
 *   /grads/input [T, N, ...]
 *   /after/<layer>/<name>           non-trainable parameters (batch norm's running
 *                                   statistics), after the step
 *   /masks/<layer> [N, F]           layers with a mask (dropout)
 *   root string attributes: model, plan, seed (decimal), backend
 *
 * The names and shapes are core/model/step_tensors.h's (verify's capture uses the same).
 * All float32 except /labels. Shapes: remat_layer_param_dump_dims, the parameters' real
 * shapes (a conv weight [out, in, kh, kw], a linear weight [out, in], vectors [C]). One step (forward, loss, backward; no optimiser update) from
 * the seeded initial state, through the session API of executor.h. The file is
 * written through the atomic writer (core/io/atomic_file.h: a unique temporary,
 * fsynced and renamed); no modification times are stored, so equal content gives
 * equal bytes.
 *
 * A data-parallel step (opts->shard, docs/mpi.md): every rank runs the step on its
 * share; the shares of /input, /grads/input and /labels are gathered (each rank's
 * samples in rank order are the global batch's); parameters, gradients, running
 * statistics and the loss are the reduction's, the same on every rank; the masks are
 * drawn for the global batch. Rank 0 alone writes, after every collective, so the
 * file is the one-process dump of the same --reduce-blocks byte for byte.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/exec/dump.h"
#include "core/exec/reduce.h"
#include "core/io/h5_util.h"
#include "core/model/layers.h"
#include "core/model/step_tensors.h"

static int64_t prod(int nd, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    return n;
}

typedef struct dumper {
    hid_t f;
    const char *path;
    void *buf;
    int64_t cap; /* bytes */
    remat_error *err;
} dumper;

static remat_status room(dumper *d, int64_t bytes) {
    if (bytes <= d->cap) return REMAT_OK;
    void *p = remat_xrealloc(d->buf, (size_t)bytes, d->err);
    if (!p) return REMAT_ERR_NOMEM;
    d->buf = p;
    d->cap = bytes;
    return REMAT_OK;
}

static remat_status put(dumper *d, const char *name, remat_h5_type type, int nd, const int64_t *shape) {
    return remat_h5_write(d->f, d->path, name, type, nd, shape, d->buf, d->err);
}

/* The parameters of a set (core/model/step_tensors.h): /params/<layer>/<name> before the
 * step, /grads/<layer>/<name> (the gradients) or /after/<layer>/<running stat> after it. */
static remat_status dump_params(dumper *d, remat_session *s, const remat_model *m, remat_step_set set) {
    char name[REMAT_STEP_NAME_LEN + 1] = "/";
    int64_t shape[4];
    for (int li = 0; li < m->n_layers; li++) {
        const remat_layer *l = &m->layers[li];
        for (int pi = 0; pi < remat_layer_n_params(l); pi++) {
            if (!remat_step_param_in(set, l, pi)) continue;
            remat_step_param_name(set, l, pi, name + 1, sizeof name - 1);
            int nd = remat_layer_param_dump_dims(l, pi, shape);
            remat_status st = room(d, prod(nd, shape) * 4);
            if (st == REMAT_OK && set == REMAT_STEP_GRADS) st = remat_session_get_grad(s, li, pi, d->buf, d->err);
            else if (st == REMAT_OK) st = remat_session_get_param(s, li, pi, d->buf, d->err);
            if (st == REMAT_OK) st = put(d, name, REMAT_H5_F32, nd, shape);
            if (st != REMAT_OK) return st;
        }
    }
    return REMAT_OK;
}

/* The batch tensors of the global batch, gathered before rank 0 writes anything (a
 * rank that failed to write must not leave the others waiting in a broadcast). */
typedef struct batch_bufs {
    float *input, *input_grad; /* [T, N_global, ...] */
    int32_t *labels;           /* [N_global] */
} batch_bufs;

/* dst[t][q*n + i][..] = rank q's local[t][i][..]: the ranks' shares back in sample order. */
static remat_status gather_tn(const remat_shard *sh, const float *local, float *dst, int64_t T, int64_t n,
                              int64_t row, float *all, remat_error *err) {
    int64_t per = T * n * row;
    remat_status st = remat_comm_allgather(sh->comm, local, all, per * 4, err);
    if (st != REMAT_OK) return st;
    for (int q = 0; q < sh->ranks; q++)
        for (int64_t t = 0; t < T; t++)
            memcpy(dst + (t * sh->ranks * n + q * n) * row, all + q * per + t * n * row, (size_t)(n * row) * 4);
    return REMAT_OK;
}

static remat_status get_batch(remat_session *s, const remat_model *ml, const remat_shard *sh, batch_bufs *bb,
                              remat_error *err) {
    int R = sh && sh->comm ? sh->ranks : 1;
    int64_t row = ml->in_features, n = ml->N, elems = ml->T * n * row * R;
    float *local = NULL, *all = NULL;
    remat_status st = REMAT_ERR_NOMEM;
    bb->input = remat_xmalloc((size_t)elems * 4, err);
    bb->input_grad = remat_xmalloc((size_t)elems * 4, err);
    bb->labels = remat_xmalloc((size_t)(n * R) * 4, err);
    if (!bb->input || !bb->input_grad || !bb->labels) return st;
    if (R == 1) {
        if ((st = remat_session_get_input(s, bb->input, err)) != REMAT_OK) return st;
        if ((st = remat_session_get_input_grad(s, bb->input_grad, err)) != REMAT_OK) return st;
        return remat_session_get_labels(s, bb->labels, err);
    }
    local = remat_xmalloc((size_t)(ml->T * n * row) * 4, err);
    all = remat_xmalloc((size_t)elems * 4, err);
    if (local && all) st = remat_session_get_input(s, local, err);
    if (st == REMAT_OK) st = gather_tn(sh, local, bb->input, ml->T, n, row, all, err);
    if (st == REMAT_OK) st = remat_session_get_input_grad(s, local, err);
    if (st == REMAT_OK) st = gather_tn(sh, local, bb->input_grad, ml->T, n, row, all, err);
    if (st == REMAT_OK) st = remat_session_get_labels(s, (int32_t *)local, err);
    if (st == REMAT_OK) st = remat_comm_allgather(sh->comm, local, bb->labels, n * 4, err);
    remat_xfree(local);
    remat_xfree(all);
    return st;
}

static void batch_free(batch_bufs *bb) {
    remat_xfree(bb->input);
    remat_xfree(bb->input_grad);
    remat_xfree(bb->labels);
}

static remat_status dump_step(dumper *d, remat_session *s, const remat_model *m, const remat_step_result *r,
                              const batch_bufs *bb) {
    char name[REMAT_STEP_NAME_LEN + 1] = "/";
    int64_t shape[REMAT_H5_MAX_RANK];
    remat_status st;

    float loss = (float)r->loss;
    if ((st = remat_h5_write(d->f, d->path, "/loss", REMAT_H5_F32, 0, shape, &loss, d->err)) != REMAT_OK) return st;

    int nd = remat_step_input_dims(m, shape, REMAT_H5_MAX_RANK);
    if ((st = remat_h5_write(d->f, d->path, "/input", REMAT_H5_F32, nd, shape, bb->input, d->err)) != REMAT_OK)
        return st;
    if ((st = remat_h5_write(d->f, d->path, "/grads/input", REMAT_H5_F32, nd, shape, bb->input_grad, d->err)) !=
        REMAT_OK)
        return st;

    shape[0] = m->N;
    if ((st = remat_h5_write(d->f, d->path, "/labels", REMAT_H5_I32, 1, shape, bb->labels, d->err)) != REMAT_OK)
        return st;

    if ((st = dump_params(d, s, m, REMAT_STEP_GRADS)) != REMAT_OK) return st;
    if ((st = dump_params(d, s, m, REMAT_STEP_AFTER)) != REMAT_OK) return st;
    for (int li = 0; li < m->n_layers; li++) {
        const remat_layer *l = &m->layers[li];
        if (!remat_layer_has_mask(l)) continue;
        remat_step_mask(m, l, name + 1, sizeof name - 1, shape);
        if ((st = room(d, shape[0] * shape[1] * 4)) != REMAT_OK) return st;
        if ((st = remat_session_get_dropout_mask(s, li, d->buf, d->err)) != REMAT_OK) return st;
        if ((st = put(d, name, REMAT_H5_F32, 2, shape)) != REMAT_OK) return st;
    }
    return REMAT_OK;
}

remat_status remat_dump_run(const remat_model *m, const remat_plan *p, remat_backend *b, const remat_exec_opts *opts,
                            const char *path, remat_step_result *res, remat_error *err) {
    /* /grads/input is a dataset: a layer named "input" with gradients would need it as a group */
    for (int li = 0; li < m->n_layers; li++)
        if (strcmp(m->layers[li].name, "input") == 0 && remat_layer_n_params(&m->layers[li]) > 0)
            return remat_error_set(err, REMAT_ERR_INPUT,
                                   "%s: layers: a layer with parameters named \"input\" cannot be dumped (its "
                                   "gradients would collide with /grads/input); rename it",
                                   m->path ? m->path : m->name);
    if (!b->ops->has_data)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: a gradient dump needs a backend with data, not %s", path,
                               b->ops->name);
    const remat_shard *sh = opts->shard;
    if (sh && sh->n_total != m->N)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "dump: the shard's batch %lld is not the model's %lld",
                               (long long)sh->n_total, (long long)m->N);
    const int lead = !sh || sh->rank == 0; /* rank 0 alone writes */
    remat_model ml; /* the rank's share of the batch */
    memset(&ml, 0, sizeof ml);
    remat_status st = sh ? remat_model_rescale(m, 0, remat_shard_local_n(sh), &ml, err) : REMAT_OK;
    if (st != REMAT_OK) return st;
    remat_afile af;
    hid_t f = H5I_INVALID_HID;
    if (lead && (st = remat_h5_begin(path, &f, &af, err)) != REMAT_OK && !(sh && sh->comm && sh->ranks > 1)) {
        if (sh) remat_model_free(&ml);
        return st;
    }
    remat_status open_st = st; /* with other ranks: run the step anyway (they would wait in its broadcasts) */
    remat_error spare = {0};
    if (open_st != REMAT_OK) err = &spare;
    const int write = lead && open_st == REMAT_OK;
    st = REMAT_OK;
    dumper d = {f, path, NULL, 0, err};
    batch_bufs bb = {NULL, NULL, NULL};
    remat_session *s = remat_session_init(sh ? &ml : m, p, b, opts, err);
    if (!s) st = err && err->status != REMAT_OK ? err->status : REMAT_ERR_INTERNAL;
    remat_step_result r;
    memset(&r, 0, sizeof r);
    if (st == REMAT_OK && write) st = dump_params(&d, s, m, REMAT_STEP_PARAMS); /* before the step */
    if (st == REMAT_OK) st = remat_session_step(s, 0, &r, err);
    if (st == REMAT_OK) st = get_batch(s, sh ? &ml : m, sh, &bb, err); /* collective: every rank */
    if (st == REMAT_OK && write) st = dump_step(&d, s, m, &r, &bb);
    remat_session_free(s);
    batch_free(&bb);
    remat_xfree(d.buf);
    if (sh) remat_model_free(&ml);
    if (open_st != REMAT_OK) return open_st;
    if (!lead) {
        if (st == REMAT_OK && res) *res = r;
        return st;
    }

    char seed[32];
    snprintf(seed, sizeof seed, "%" PRIu64, opts->seed);
    if (st == REMAT_OK) st = remat_h5_attr_write_str(f, path, "/", "model", m->text ? m->text : "", err);
    if (st == REMAT_OK) st = remat_h5_attr_write_str(f, path, "/", "plan", p && p->text ? p->text : "", err);
    if (st == REMAT_OK) st = remat_h5_attr_write_str(f, path, "/", "seed", seed, err);
    if (st == REMAT_OK) st = remat_h5_attr_write_str(f, path, "/", "backend", b->ops->name, err);
    if (st != REMAT_OK) {
        remat_h5_abort(f, &af);
        return st;
    }
    st = remat_h5_commit(f, &af, err);
    if (st == REMAT_OK && res) *res = r;
    return st;
}
