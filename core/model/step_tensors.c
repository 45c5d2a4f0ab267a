/* step_tensors.c - names and shapes of a step's tensors (contract in step_tensors.h). */
#include "core/model/step_tensors.h"

#include <stdio.h>

#include "core/model/layers.h"

static const char *const set_names[] = {"params", "grads", "after"};

int remat_step_param_in(remat_step_set set, const remat_layer *l, int pi) {
    if (set == REMAT_STEP_PARAMS) return 1;
    int trainable = remat_layer_param_trainable(l, pi);
    return set == REMAT_STEP_GRADS ? trainable : !trainable;
}

void remat_step_param_name(remat_step_set set, const remat_layer *l, int pi, char *buf, size_t len) {
    snprintf(buf, len, "%s/%s/%s", set_names[set], l->name, remat_layer_param_name(l, pi));
}

int remat_step_mask(const remat_model *m, const remat_layer *l, char *buf, size_t len, int64_t dims[2]) {
    snprintf(buf, len, "masks/%s", l->name);
    dims[0] = m->N;
    dims[1] = l->out_features; /* a mask layer (dropout) keeps its features: in = out */
    return 2;
}

int remat_step_input_dims(const remat_model *m, int64_t *dims, int max) {
    dims[0] = m->T;
    dims[1] = m->N;
    int nd = 2;
    if (m->in_ndim <= 0) dims[nd++] = m->in_features;
    else
        for (int i = 0; i < m->in_ndim && nd < max; i++) dims[nd++] = m->in_shape[i];
    return nd;
}
