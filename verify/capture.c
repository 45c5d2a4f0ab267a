/* capture.c - copies a session's step results into a tensor set.
 *
 * Shapes follow the dump: remat_layer_param_dump_dims (each parameter's real shape, a conv
 * weight [out, in, kh, kw]); the input and its gradient [T, N, input.shape...]; a dropout mask [N, F].
 */
#include "verify/capture.h"

#include <stdio.h>
#include <string.h>

#include "core/model/layers.h"

remat_status remat_verify_capture_params(remat_session *s, const remat_model *m, remat_verify_set *out,
                                         remat_error *err) {
    char name[REMAT_VERIFY_NAME_LEN];
    int64_t shape[REMAT_VERIFY_MAX_DIMS];
    for (int li = 0; li < m->n_layers; li++) {
        const remat_layer *l = &m->layers[li];
        for (int pi = 0; pi < remat_layer_n_params(l); pi++) {
            snprintf(name, sizeof name, "params/%s/%s", l->name, remat_layer_param_name(l, pi));
            int nd = remat_layer_param_dump_dims(l, pi, shape);
            remat_verify_tensor *t = remat_verify_set_add(out, name, REMAT_VERIFY_F32, nd, shape, NULL, err);
            if (!t) return err->status;
            remat_status st = remat_session_get_param(s, li, pi, (float *)t->bits, err);
            if (st != REMAT_OK) return st;
        }
    }
    return REMAT_OK;
}

static int input_shape(const remat_model *m, int64_t *shape) {
    shape[0] = m->T;
    shape[1] = m->N;
    int nd = 2;
    if (m->in_ndim <= 0) {
        shape[nd++] = m->in_features;
    } else {
        for (int i = 0; i < m->in_ndim && nd < REMAT_VERIFY_MAX_DIMS; i++) shape[nd++] = m->in_shape[i];
    }
    return nd;
}

remat_status remat_verify_capture_step(remat_session *s, const remat_model *m, const remat_step_result *r,
                                       remat_verify_set *out, remat_error *err) {
    char name[REMAT_VERIFY_NAME_LEN];
    int64_t shape[REMAT_VERIFY_MAX_DIMS] = {0};
    remat_verify_tensor *t;
    remat_status st;

    float loss = (float)r->loss;
    if (!remat_verify_set_add(out, "loss", REMAT_VERIFY_F32, 0, shape, &loss, err)) return err->status;

    int nd = input_shape(m, shape);
    if (!(t = remat_verify_set_add(out, "input", REMAT_VERIFY_F32, nd, shape, NULL, err))) return err->status;
    if ((st = remat_session_get_input(s, (float *)t->bits, err)) != REMAT_OK) return st;
    int64_t nshape[1] = {m->N};
    if (!(t = remat_verify_set_add(out, "labels", REMAT_VERIFY_I32, 1, nshape, NULL, err))) return err->status;
    if ((st = remat_session_get_labels(s, (int32_t *)t->bits, err)) != REMAT_OK) return st;

    for (int li = 0; li < m->n_layers; li++) {
        const remat_layer *l = &m->layers[li];
        for (int pi = 0; pi < remat_layer_n_params(l); pi++) {
            if (!remat_layer_param_trainable(l, pi)) continue;
            snprintf(name, sizeof name, "grads/%s/%s", l->name, remat_layer_param_name(l, pi));
            int pnd = remat_layer_param_dump_dims(l, pi, shape);
            if (!(t = remat_verify_set_add(out, name, REMAT_VERIFY_F32, pnd, shape, NULL, err))) return err->status;
            if ((st = remat_session_get_grad(s, li, pi, (float *)t->bits, err)) != REMAT_OK) return st;
        }
    }

    nd = input_shape(m, shape);
    if (!(t = remat_verify_set_add(out, "grads/input", REMAT_VERIFY_F32, nd, shape, NULL, err))) return err->status;
    if ((st = remat_session_get_input_grad(s, (float *)t->bits, err)) != REMAT_OK) return st;

    for (int li = 0; li < m->n_layers; li++) {
        const remat_layer *l = &m->layers[li];
        for (int pi = 0; pi < remat_layer_n_params(l); pi++) {
            if (remat_layer_param_trainable(l, pi)) continue; /* state forward updates */
            snprintf(name, sizeof name, "after/%s/%s", l->name, remat_layer_param_name(l, pi));
            int pnd = remat_layer_param_dump_dims(l, pi, shape);
            if (!(t = remat_verify_set_add(out, name, REMAT_VERIFY_F32, pnd, shape, NULL, err))) return err->status;
            if ((st = remat_session_get_param(s, li, pi, (float *)t->bits, err)) != REMAT_OK) return st;
        }
    }

    for (int li = 0; li < m->n_layers; li++) {
        const remat_layer *l = &m->layers[li];
        if (!remat_layer_has_mask(l)) continue;
        snprintf(name, sizeof name, "masks/%s", l->name);
        shape[0] = m->N;
        shape[1] = l->in_features;
        if (!(t = remat_verify_set_add(out, name, REMAT_VERIFY_F32, 2, shape, NULL, err))) return err->status;
        if ((st = remat_session_get_dropout_mask(s, li, (float *)t->bits, err)) != REMAT_OK) return st;
    }
    return REMAT_OK;
}

remat_status remat_verify_capture_run(const remat_model *m, const remat_plan *p, remat_backend *b,
                                      const remat_exec_opts *o, remat_verify_set *out, remat_step_result *res,
                                      remat_error *err) {
    remat_session *s = remat_session_init(m, p, b, o, err);
    if (!s) return err->status ? err->status : REMAT_ERR_INTERNAL;
    remat_step_result r;
    memset(&r, 0, sizeof r);
    remat_status st = remat_verify_capture_params(s, m, out, err);
    if (st == REMAT_OK) st = remat_session_step(s, 0, &r, err);
    if (st == REMAT_OK) st = remat_verify_capture_step(s, m, &r, out, err);
    remat_session_free(s);
    if (st == REMAT_OK && res) *res = r;
    return st;
}
