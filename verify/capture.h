/* capture.h - the tensors of one training step, taken from a live session.
 *
 * The same content as the gradient dump (docs/interfaces.md), held in memory, so that
 * `remat verify` needs no files: the loss, the input and labels, every parameter
 * before the step, every parameter gradient, the input gradient, the batch-norm
 * running statistics after the step and every dropout mask.
 */
#ifndef REMAT_VERIFY_CAPTURE_H
#define REMAT_VERIFY_CAPTURE_H

#include "core/exec/executor.h"
#include "core/model/model.h"
#include "core/base/status.h"
#include "verify/tensor_set.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Adds "params/<layer>/<name>" for every parameter of every layer (call right
 * after remat_session_init, before the step, for the values before the step). */
remat_status remat_verify_capture_params(remat_session *s, const remat_model *m, remat_verify_set *out,
                                         remat_error *err);
/* Adds what one step produced: "loss" (float32 scalar: the step's loss as the
 * executor reports it, rounded to float), "input", "labels", "grads/<layer>/<name>"
 * (trainable parameters), "grads/input", "after/<layer>/running_mean|running_var",
 * "masks/<layer>" ([N, F] per dropout layer). Call after remat_session_step. */
remat_status remat_verify_capture_step(remat_session *s, const remat_model *m, const remat_step_result *r,
                                       remat_verify_set *out, remat_error *err);

/* Convenience: init a session, capture params, one step without the optimiser,
 * capture the step, free. res (may be NULL) gets the step result. */
remat_status remat_verify_capture_run(const remat_model *m, const remat_plan *p, remat_backend *b,
                                      const remat_exec_opts *o, remat_verify_set *out, remat_step_result *res,
                                      remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
