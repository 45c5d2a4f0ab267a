/* layers.h - the layer registry: one traits entry per layer type, the only place
 * that knows a type's metadata (its JSON name and fields, how its output shape
 * follows from its input, its parameters and their shapes, what its backward needs
 * saved, what values its output can hold, whether it may be chunked along time).
 *
 *   const remat_layer_traits *tr = remat_layer_traits_of(l->type);
 *   if (tr->saves_input) ...;               // backward reads the layer's input
 *   for (int i = 0; i < remat_layer_n_params(l); i++)
 *       printf("%s %lld\n", remat_layer_param_name(l, i), (long long)remat_layer_param_elems(l, i));
 *
 * Adding a layer type: a value in remat_layer_type (core/base/types.h), one traits
 * entry in layers.c (the _Static_assert there fails until it exists), its reference
 * kernels (core/ref/<layer>.c), its backend entries (core/exec/backend.h's list),
 * its executor step (core/exec/layer_exec.c) and its CUDA twin (cuda/<layer>.cu).
 */
#ifndef REMAT_LAYERS_H
#define REMAT_LAYERS_H

#include <stdint.h>

#include "core/base/status.h"
#include "core/base/types.h"
#include "core/model/model.h"

#ifdef __cplusplus
extern "C" {
#endif

struct json_ctx;
struct cJSON;

#define REMAT_MAX_LAYER_PARAMS 4

typedef struct remat_layer_traits {
    const char *name;              /* the JSON "type" */
    const char *const *fields;     /* JSON fields it accepts besides name, type, input */
    /* Reads the type's own fields from the layer object `j` (field prefix `p`, e.g.
     * "layers[3]") into l; l->in is already set. Fills l->out and the options.
     * Returns REMAT_ERR_INPUT with a one-line message on a bad field or shape. */
    remat_status (*parse)(const struct json_ctx *c, const struct cJSON *j, const char *p, remat_layer *l);
    const char *const *param_names; /* in order: the trainable ones first */
    const float *param_init;       /* constant initial values (NULL: uniform, see remat_layer_fan_in) */
    int max_params;                /* entries in param_names */
    int n_trainable;               /* the first n_trainable parameters get a gradient */
    int saves_input;               /* backward reads the layer's input (linear, conv, batchnorm, maxpool) */
    int neuron;                    /* if / lif: state carried across time steps */
    int time_chunkable;            /* 0: the layer's reduction spans all T (batch norm) */
    int two_inputs;                /* add: sums its input and `from` */
    int has_mask;                  /* dropout: a mask that dumps and verify record */
} remat_layer_traits;

/* The traits of a type; NULL for a value outside the enum. */
const remat_layer_traits *remat_layer_traits_of(remat_layer_type t);

/* Shape of parameter i of layer l: fills dims (at most 4) and returns the number
 * of dimensions, 0 when l has no parameter i. linear weight [out, in], conv weight
 * [out, in, kh, kw], biases and batch-norm vectors [C]. */
int remat_layer_param_dims(const remat_layer *l, int i, int64_t dims[4]);

/* Fan-in of a linear or conv2d layer (in, or in*kh*kw): its parameters start
 * U(-g/sqrt(fan_in), g/sqrt(fan_in)) with the model's init_gain g, as PyTorch's
 * default with g = 1. 0 for other types, whose parameters start at
 * remat_layer_param_init_value (batch norm: weight 1, bias 0, mean 0, var 1). */
int64_t remat_layer_fan_in(const remat_layer *l);
float remat_layer_param_init_value(const remat_layer *l, int i);

/* The value class of layer l's output given the classes of its input(s) (in2: the
 * second operand of add, ignored otherwise). */
remat_value_class remat_layer_out_values(const remat_layer *l, remat_value_class in, remat_value_class in2);

/* The kernel geometry of a conv2d or pooling layer (zeros for other types). */
remat_conv_geom remat_layer_geom(const remat_layer *l);

/* 1 when layer l's backward needs its input; 1 for if / lif. */
int remat_layer_saves_input(const remat_layer *l);
int remat_layer_is_neuron(const remat_layer *l);

#ifdef __cplusplus
}
#endif
#endif
