/* capture.c - copies a session's step results into a tensor set.
 *
 * Names and shapes are the dump's, from one table (core/model/step_tensors.h): each
 * parameter's real shape (remat_layer_param_dump_dims, a conv weight [out, in, kh, kw]);
 * the input and its gradient [T, N, input.shape...]; a dropout mask [N, F].
 */
#include "verify/capture.h"

#include <stdio.h>
#include <string.h>

#include "core/model/layers.h"
#include "core/model/step_tensors.h"

remat_status remat_verify_capture_params(remat_session *s, const remat_model *m, remat_verify_set *out,
                                         remat_error *err) {
    char name[REMAT_VERIFY_NAME_LEN];
    int64_t shape[REMAT_VERIFY_MAX_DIMS];
    for (int li = 0; li < m->n_layers; li++) {
        const remat_layer *l = &m->layers[li];
        for (int pi = 0; pi < remat_layer_n_params(l); pi++) {
            remat_step_param_name(REMAT_STEP_PARAMS, l, pi, name, sizeof name);
            int nd = remat_layer_param_dump_dims(l, pi, shape);
            remat_verify_tensor *t = remat_verify_set_add(out, name, REMAT_VERIFY_F32, nd, shape, NULL, err);
            if (!t) return err->status;
            remat_status st = remat_session_get_param(s, li, pi, (float *)t->bits, err);
            if (st != REMAT_OK) return st;
        }
    }
    return REMAT_OK;
}

remat_status remat_verify_capture_step(remat_session *s, const remat_model *m, const remat_step_result *r,
                                       remat_verify_set *out, remat_error *err) {
    char name[REMAT_VERIFY_NAME_LEN];
    int64_t shape[REMAT_VERIFY_MAX_DIMS] = {0};
    remat_verify_tensor *t;
    remat_status st;

    float loss = (float)r->loss;
    if (!remat_verify_set_add(out, "loss", REMAT_VERIFY_F32, 0, shape, &loss, err)) return err->status;

    int nd = remat_step_input_dims(m, shape, REMAT_VERIFY_MAX_DIMS);
    if (!(t = remat_verify_set_add(out, "input", REMAT_VERIFY_F32, nd, shape, NULL, err))) return err->status;
    if ((st = remat_session_get_input(s, (float *)t->bits, err)) != REMAT_OK) return st;
    int64_t nshape[1] = {m->N};
    if (!(t = remat_verify_set_add(out, "labels", REMAT_VERIFY_I32, 1, nshape, NULL, err))) return err->status;
    if ((st = remat_session_get_labels(s, (int32_t *)t->bits, err)) != REMAT_OK) return st;

    for (int li = 0; li < m->n_layers; li++) {
        const remat_layer *l = &m->layers[li];
        for (int pi = 0; pi < remat_layer_n_params(l); pi++) {
            if (!remat_step_param_in(REMAT_STEP_GRADS, l, pi)) continue;
            remat_step_param_name(REMAT_STEP_GRADS, l, pi, name, sizeof name);
            int pnd = remat_layer_param_dump_dims(l, pi, shape);
            if (!(t = remat_verify_set_add(out, name, REMAT_VERIFY_F32, pnd, shape, NULL, err))) return err->status;
            if ((st = remat_session_get_grad(s, li, pi, (float *)t->bits, err)) != REMAT_OK) return st;
        }
    }

    nd = remat_step_input_dims(m, shape, REMAT_VERIFY_MAX_DIMS);
    if (!(t = remat_verify_set_add(out, "grads/input", REMAT_VERIFY_F32, nd, shape, NULL, err))) return err->status;
    if ((st = remat_session_get_input_grad(s, (float *)t->bits, err)) != REMAT_OK) return st;

    for (int li = 0; li < m->n_layers; li++) {
        const remat_layer *l = &m->layers[li];
        for (int pi = 0; pi < remat_layer_n_params(l); pi++) {
            if (!remat_step_param_in(REMAT_STEP_AFTER, l, pi)) continue; /* state forward updates */
            remat_step_param_name(REMAT_STEP_AFTER, l, pi, name, sizeof name);
            int pnd = remat_layer_param_dump_dims(l, pi, shape);
            if (!(t = remat_verify_set_add(out, name, REMAT_VERIFY_F32, pnd, shape, NULL, err))) return err->status;
            if ((st = remat_session_get_param(s, li, pi, (float *)t->bits, err)) != REMAT_OK) return st;
        }
    }

    for (int li = 0; li < m->n_layers; li++) {
        const remat_layer *l = &m->layers[li];
        if (!remat_layer_has_mask(l)) continue;
        remat_step_mask(m, l, name, sizeof name, shape);
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
