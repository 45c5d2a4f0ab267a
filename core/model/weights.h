/* weights.h - initial parameters from a file (`remat run --init W.h5`, `remat verify
 * --init W.h5`): a user's weights and batch-norm statistics instead of the seeded
 * initialisation.
 *
 * The file is HDF5 with one float32 dataset per parameter, `/params/<layer>/<name>`, in
 * the parameter's shape (docs/trace-schema.md, "Initial weights"): what `remat_torch.
 * save_weights` writes, and the `/params` group of a gradient dump, so a dump is a valid
 * --init file too. Every parameter of the model must be there with its exact shape;
 * datasets of layers the model does not have are refused too (a model imported from
 * another network).
 *
 *   remat_weights w;
 *   if (remat_weights_load("w.h5", &model, &w, &err) != REMAT_OK) {
 *       fputs(w.problems ? w.problems : err.msg, stderr);  // one line per mismatch
 *       ...
 *   }
 *   opts.init_values = (const float *const *)w.values;
 *   ...
 *   remat_weights_free(&w);
 */
#ifndef REMAT_IO_WEIGHTS_H
#define REMAT_IO_WEIGHTS_H

#include "core/base/status.h"
#include "core/model/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_weights {
    int n_layers;
    /* n_layers * REMAT_MAX_LAYER_PARAMS entries: values[layer * REMAT_MAX_LAYER_PARAMS + param],
     * remat_layer_param_elems floats each (NULL where the layer has no such parameter). */
    float **values;
    /* On REMAT_ERR_INPUT from the checks: every problem, one line each ending in '\n'
     * ("w.h5: /params/conv1/weight: expected shape [4, 3, 7, 7] (layer "conv1", conv2d), got [588]");
     * err holds the first. NULL otherwise. */
    char *problems;
    int n_problems;
} remat_weights;

/* Reads every parameter of m from path. REMAT_ERR_IO when the file cannot be opened,
 * REMAT_ERR_INPUT (with problems) when it is not HDF5 or a dataset is missing, of another
 * shape or type, holds a non-finite value, or names no parameter of m. On failure *out
 * holds only problems (free it all the same). */
remat_status remat_weights_load(const char *path, const remat_model *m, remat_weights *out, remat_error *err);
void remat_weights_free(remat_weights *w);

#ifdef __cplusplus
}
#endif
#endif
