/* step_tensors.h - the names and shapes of one training step's tensors: one copy for the
 * gradient dump (core/exec/dump.h, HDF5 datasets "/<name>"), verify's capture
 * (verify/capture.h) and the --init reader (core/model/weights.h), which name them alike.
 *
 *   loss                        scalar
 *   input       [T, N, input.shape...]      labels [N]      grads/input (as input)
 *   params/<layer>/<param>      every parameter, before the step
 *   grads/<layer>/<param>       the trainable parameters' gradients
 *   after/<layer>/<param>       the state the forward pass updates (batch-norm running
 *                               statistics: the parameters that are not trainable), after it
 *   masks/<layer>   [N, F]      a layer with a mask (dropout), F its features
 *
 * Which parameters a layer has, their names and shapes are the registry's
 * (core/model/layers.h: remat_layer_param_name, remat_layer_param_dump_dims).
 *
 *     char name[REMAT_STEP_NAME_LEN];
 *     if (remat_step_param_in(REMAT_STEP_GRADS, l, pi))
 *         remat_step_param_name(REMAT_STEP_GRADS, l, pi, name, sizeof name);  // "grads/fc1/weight"
 */
#ifndef REMAT_MODEL_STEP_TENSORS_H
#define REMAT_MODEL_STEP_TENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "core/model/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A name's room: the set, a layer name, a parameter name and the separators. */
#define REMAT_STEP_NAME_LEN 256

typedef enum remat_step_set {
    REMAT_STEP_PARAMS = 0, /* "params": every parameter, before the step */
    REMAT_STEP_GRADS,      /* "grads": trainable parameters' gradients */
    REMAT_STEP_AFTER,      /* "after": non-trainable parameters after the step */
} remat_step_set;

/* 1 when parameter pi of l is in the set. */
int remat_step_param_in(remat_step_set set, const remat_layer *l, int pi);
/* "<set>/<layer>/<param>" into buf (cut at len). */
void remat_step_param_name(remat_step_set set, const remat_layer *l, int pi, char *buf, size_t len);
/* "masks/<layer>" into buf; the mask's dims [N, F] into dims; returns 2. */
int remat_step_mask(const remat_model *m, const remat_layer *l, char *buf, size_t len, int64_t dims[2]);
/* The dims of input and grads/input, [T, N, input.shape...] (at most max): their count. */
int remat_step_input_dims(const remat_model *m, int64_t *dims, int max);

#ifdef __cplusplus
}
#endif
#endif
